//! `flexio get URL [DEST]`: fetch one file over HTTP/1.1 (see
//! `flexio_net::client`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use flexio::{Error, MechanismName};
use flexio_net::client::{get, GetOptions};

/// Arguments of `flexio get`.
#[derive(Args)]
pub struct GetArgs {
    /// The `http://` or `https://` URL of a file, or of a directory
    /// (ending in `/`) to fetch as a tree.
    url: String,
    /// Where to save it (a directory gets the URL's name inside it);
    /// default: the URL's name here.
    dest: Option<PathBuf>,
    /// Connections fetching ranges at once (one when the server does not
    /// answer ranges).
    #[arg(long, default_value_t = 4)]
    streams: usize,
    /// Bytes one ranged request asks for.
    #[arg(long, value_parser = size, default_value = "16MiB")]
    piece_size: u64,
    /// Deadline to connect, for a response head, and for any stretch of
    /// the body without progress.
    #[arg(long, value_parser = duration, default_value = "30s")]
    timeout: Duration,
    /// Do not check the bytes against the server's manifest.
    #[arg(long)]
    no_verify: bool,
    /// The socket→file mechanism.
    #[arg(long, default_value = "auto")]
    via: MechanismName,
    /// fsync the file before it takes its name.
    #[arg(long)]
    fsync: bool,
    /// Keep what arrives in `.NAME.flexio-partial` and a journal beside
    /// DEST; run again with --resume to fetch only what is missing.
    #[arg(long)]
    resume: bool,
    /// The most bytes per second, over all streams together (10M, 1G,
    /// 100Mbit/s).
    #[arg(long, value_name = "RATE", value_parser = rate)]
    rate: Option<flexio::pace::Rate>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Print nothing but errors.
    #[arg(long, short, conflicts_with = "json")]
    quiet: bool,
    #[command(flatten)]
    tls: crate::tls_args::TlsArgs,
}

pub(crate) fn rate(text: &str) -> Result<flexio::pace::Rate, String> {
    text.parse().map_err(|e: Error| e.to_string())
}

fn duration(text: &str) -> Result<Duration, String> {
    flexio::parse_duration(text).map_err(|e| e.to_string())
}

fn size(text: &str) -> Result<u64, String> {
    flexio::parse_size(text).map_err(|e| e.to_string())
}

/// Prints a network error and exits with its status (2 for usage, 1
/// otherwise), as `main` does for the library's errors.
pub fn fail(error: flexio_net::Error) -> ! {
    eprintln!("flexio: {error}");
    std::process::exit(crate::exit_status(error.is_usage()));
}

/// Runs `flexio get`.
pub fn run(args: GetArgs) -> Result<(), Error> {
    if let Err(error) = flexio::cleanup::remove_temporaries_on_signals() {
        eprintln!("flexio: warning: cannot catch signals ({error}); an interrupted get may leave its temporary file");
    }
    let options = GetOptions {
        streams: args.streams.max(1),
        piece_size: args.piece_size,
        timeout: args.timeout,
        verify: !args.no_verify,
        mechanism: args.via,
        fsync: args.fsync,
        resume: args.resume,
        rate: args.rate,
        rate_bucket: None,
    };
    let (_relay, url) = args.tls.reachable(&args.url, args.timeout)?;
    let path = args.url.split('?').next().unwrap_or_default();
    if path.ends_with('/') {
        return run_tree(&args, &url, &options);
    }
    let mut report = get(&url, args.dest.as_deref(), &options).unwrap_or_else(|e| fail(e));
    report.url = args.url.clone();
    if args.quiet {
        return Ok(());
    }
    if args.json {
        crate::print_stdout(&crate::json_document::document("get", &report));
        return Ok(());
    }
    let seconds = report.transfer_ns as f64 / 1e9;
    let mut line = format!(
        "{} -> {}: {} in {seconds:.3} s ({}), {} stream{}, {} request{}, {}",
        report.url,
        report.destination.display(),
        flexio::format_bytes(report.bytes),
        flexio::format_rate(report.bytes as f64 / seconds.max(1e-9)),
        report.streams,
        if report.streams == 1 { "" } else { "s" },
        report.requests,
        if report.requests == 1 { "" } else { "s" },
        if report.mechanisms.is_empty() {
            "no body".to_string()
        } else {
            report.mechanisms.join("+")
        },
    );
    if report.verified {
        line += &format!(
            ", BLAKE3 verified in {:.3} s",
            report.verify_ns as f64 / 1e9
        );
    } else if args.no_verify {
        line += ", not verified (--no-verify)";
    } else {
        line += ", not verified (the server offers no manifest)";
    }
    if report.resumed_bytes > 0 {
        line += &format!(
            ", {} kept from an earlier run",
            flexio::format_bytes(report.resumed_bytes)
        );
    }
    if let Some(note) = &report.note {
        line += &format!("; {note}");
    }
    crate::print_stdout(&(line + "\n"));
    Ok(())
}

/// `flexio get URL/dir/ [DEST]`: the tree, into DEST or the directory's
/// name here.
fn run_tree(args: &GetArgs, url: &str, options: &GetOptions) -> Result<(), Error> {
    let destination = match &args.dest {
        Some(dest) => dest.clone(),
        None => {
            let path = args.url.split('?').next().unwrap_or_default();
            let last = path
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or_default();
            let name = flexio_net::names::percent_decode(last.as_bytes()).unwrap_or_default();
            if !flexio_net::names::is_safe_component(&name) || path.matches('/').count() < 4 {
                return Err(Error::Usage(format!(
                    "{}: give DEST for this tree",
                    args.url
                )));
            }
            PathBuf::from(std::ffi::OsStr::from_bytes(&name))
        }
    };
    let mut report =
        flexio_net::client::get_tree(url, &destination, options).unwrap_or_else(|e| fail(e));
    report.url = args.url.clone();
    if args.quiet {
        return Ok(());
    }
    if args.json {
        crate::print_stdout(&crate::json_document::document("get-tree", &report));
        return Ok(());
    }
    let seconds = report.wall_ns as f64 / 1e9;
    crate::print_stdout(&format!(
        "{} -> {}: {} files fetched, {} in the tree, {} unchanged, {} directories, {} symlinks in {seconds:.3} s over {} streams{}, {}{}\n",
        report.url,
        report.destination.display(),
        report.files,
        flexio::format_bytes(report.bytes),
        report.unchanged,
        report.directories,
        report.symlinks,
        report.streams,
        if report.tar_streams > 0 { format!(" ({} directories of small files as one tar stream each)", report.tar_streams) } else { String::new() },
        if args.no_verify { "not verified (--no-verify)" } else { "every file fetched BLAKE3-verified" },
        if report.skipped > 0 { format!("; {} special files left out", report.skipped) } else { String::new() },
    ));
    Ok(())
}

use std::os::unix::ffi::OsStrExt;
