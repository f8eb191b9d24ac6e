//! `flexio get URL [DEST]`: fetch one file over HTTP/1.1 (see
//! `flexio_net::client`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use flexio::MechanismName;
use flexio_net::client::{get, GetOptions};

use crate::error::{Error, Result};
use crate::output::{count, document, print_stdout, size};
use crate::progress::ProgressBarThread;
use crate::values;

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
    /// answer ranges). Four by default: a GET in ranges works against any
    /// server that answers them (put's default is one, see put --help).
    #[arg(long, default_value_t = 4, value_parser = values::count(values::MAX_STREAMS))]
    streams: usize,
    /// Bytes one ranged request asks for.
    #[arg(long, value_parser = values::size, default_value = "16MiB")]
    piece_size: u64,
    /// Deadline to connect, for a response head, and for any stretch of
    /// the body without progress.
    #[arg(long, value_parser = values::duration, default_value = "30s")]
    timeout: Duration,
    /// Do not check the bytes against the server's manifest.
    #[arg(long)]
    no_verify: bool,
    /// The socket→file mechanism: auto, read-write, mmap, splice,
    /// io-uring or direct (sendfile, copy-file-range and send-zc cannot
    /// write a socket's bytes to a file).
    #[arg(long, default_value = "auto", value_parser = values::socket_to_file)]
    via: MechanismName,
    /// fsync the file before it takes its name.
    #[arg(long)]
    fsync: bool,
    /// Do not resume: by default what arrives is kept in
    /// `.NAME.flexio-partial` with a journal beside DEST, so the same get
    /// run again after Ctrl-C or a dropped link fetches only what is
    /// missing, and a DEST already whole (the server's size and
    /// Last-Modified) is not fetched again.
    #[arg(long)]
    no_resume: bool,
    /// The default (kept so that scripts written for it still run).
    #[arg(long, conflicts_with = "no_resume")]
    resume: bool,
    /// The most bytes per second, over all streams together (10M, 1G,
    /// 100Mbit/s).
    #[arg(long, value_name = "RATE", value_parser = values::rate)]
    rate: Option<flexio::pace::Rate>,
    #[command(flatten)]
    output: crate::transfer_output::OutputArgs,
    #[command(flatten)]
    tls: crate::tls_args::TlsArgs,
    #[command(flatten)]
    shard: crate::shard_args::ShardArgs,
    /// Another server holding the same file (repeat for more): pieces are
    /// fetched from every server at once, each checked against the first
    /// URL's manifest; a server that fails or sends other bytes is
    /// dropped and the rest finish.
    #[arg(long, value_name = "URL")]
    mirror: Vec<String>,
    /// Serve the file onward at this address while it arrives (a link of
    /// a chain): a downstream get of bytes not yet here waits for them.
    #[arg(long, value_name = "ADDR")]
    serve: Option<std::net::SocketAddr>,
    /// With --serve: a non-loopback address is meant.
    #[arg(long, requires = "serve")]
    public: bool,
    /// With --serve: where to resume from when the URL's host drops out
    /// (its upstream, then that one's...), in order.
    #[arg(long, value_name = "URL", requires = "serve")]
    upstream: Vec<String>,
    /// With --serve: once the file is whole, serve on until no downstream
    /// connection has been open for this long.
    #[arg(long, value_parser = values::duration, default_value = "10s", requires = "serve")]
    linger: Duration,
    /// With --serve: serve onward over HTTPS with this certificate chain
    /// and private key (two PEM files), as `serve --tls`.
    #[arg(
        long,
        value_name = "CERT,KEY",
        value_delimiter = ',',
        num_args = 1,
        requires = "serve",
        conflicts_with = "serve_tls_self_signed"
    )]
    serve_tls: Vec<PathBuf>,
    /// With --serve: serve onward over HTTPS with a new self-signed
    /// certificate; its SHA-256 fingerprint is printed with the URL, for
    /// the downstream's `get --pin`.
    #[arg(long, requires = "serve")]
    serve_tls_self_signed: bool,
}

/// Runs `flexio get`.
pub fn run(mut args: GetArgs) -> Result<()> {
    crate::signals::remove_temporaries_on_signals("get");
    for _ in 0..MAX_REDIRECTS {
        let fetched = fetch(&args);
        match redirected(&args, &fetched) {
            Some(location) => args.url = location,
            None => return fetched,
        }
    }
    fetch(&args)
}

/// Redirects followed, as curl's `--max-redirs` bounds them.
const MAX_REDIRECTS: usize = 5;

/// Where a plain get was sent on the same origin (`URL/dir` to
/// `URL/dir/`, which is then fetched as a tree); mirrors and relays name
/// their URLs exactly.
fn redirected(args: &GetArgs, fetched: &Result<()>) -> Option<String> {
    match fetched {
        Err(Error::Net(error)) if args.mirror.is_empty() && args.serve.is_none() => {
            match error.cause() {
                flexio_net::Error::Redirect { location, .. } => Some(location.clone()),
                _ => None,
            }
        }
        _ => None,
    }
}

/// One try of `flexio get` at `args.url`.
fn fetch(args: &GetArgs) -> Result<()> {
    let watch = args.output.watch();
    let options = GetOptions {
        streams: args.streams.max(1),
        piece_size: args.piece_size,
        timeout: args.timeout,
        verify: !args.no_verify,
        mechanism: args.via,
        fsync: args.fsync,
        resume: !args.no_resume,
        rate: args.rate,
        rate_bucket: None,
        tls: args.tls.client(
            std::iter::once(args.url.as_str())
                .chain(args.mirror.iter().chain(&args.upstream).map(String::as_str)),
        )?,
        progress: watch.counters.clone(),
    };
    let url = args.url.clone();
    let path = args.url.split('?').next().unwrap_or_default();
    let shard = args.shard.resolve()?;
    if args.serve.is_some() && (path.ends_with('/') || shard.is_some() || !args.mirror.is_empty()) {
        return Err(Error::Usage(
            "--serve relays one file (not a tree, not with --shard or --mirror) in this version"
                .into(),
        ));
    }
    if !args.mirror.is_empty() && shard.is_some() {
        return Err(Error::Usage(
            "--mirror and --shard do not go together in this version".into(),
        ));
    }
    let urls: Vec<String> = std::iter::once(&url)
        .chain(args.mirror.iter().chain(&args.upstream))
        .cloned()
        .collect();
    if shard.is_some() && !path.ends_with('/') {
        return Err(Error::Usage(format!(
            "{}: --shard shares a tree: give a directory URL, ending in /",
            args.url
        )));
    }
    // Dropped (the bar cleared) by each way before it prints its summary.
    let bar = watch.start();
    if let Some(address) = args.serve {
        return run_relay(args, address, &urls, &options, bar);
    }
    if path.ends_with('/') {
        return run_tree(args, &urls, &options, shard, bar);
    }
    if !args.mirror.is_empty() {
        return run_mirrored(args, &urls, &options, bar);
    }
    let mut report = get(&url, args.dest.as_deref(), &options)?;
    drop(bar);
    report.url = args.url.clone();
    args.output.tell(
        || file_summary(&report, args.no_verify),
        || document("get", &report),
    );
    Ok(())
}

/// The summary line of a one-file get.
fn file_summary(report: &flexio_net::client::GetReport, no_verify: bool) -> String {
    if report.requests == 0 {
        return format!(
            "{} -> {}: {}; {}\n",
            report.url,
            report.destination.display(),
            flexio::format_bytes(report.bytes),
            report.note.as_deref().unwrap_or_default()
        );
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
    } else if no_verify {
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
    line + "\n"
}

/// `flexio get URL --mirror URL2 ... [DEST]`: one file from every server
/// at once.
fn run_mirrored(
    args: &GetArgs,
    urls: &[String],
    options: &GetOptions,
    bar: ProgressBarThread,
) -> Result<()> {
    let report = flexio_net::client::get_mirrored(urls, args.dest.as_deref(), options)?;
    drop(bar);
    print_mirrored(args, report, "every piece BLAKE3-verified");
    Ok(())
}

/// `flexio get URL --serve ADDR [--upstream URL0]... [DEST]`: a link of a
/// chain; the first line printed names the URL it serves the file at.
fn run_relay(
    args: &GetArgs,
    address: std::net::SocketAddr,
    urls: &[String],
    options: &GetOptions,
    bar: ProgressBarThread,
) -> Result<()> {
    let mut relay = flexio_net::client::Relay::bind(address, args.public)?;
    let bound = relay.local_addr()?;
    let path = args.url.split('?').next().unwrap_or_default();
    let name = path.rsplit('/').next().unwrap_or_default();
    let identity = match args.serve_tls.as_slice() {
        [] if args.serve_tls_self_signed => {
            let names = vec![bound.ip().to_string(), "localhost".to_string()];
            Some(flexio_net::tls::TlsIdentity::self_signed(&names)?)
        }
        [] => None,
        [cert, key] => Some(flexio_net::tls::TlsIdentity::from_pem_files(cert, key)?),
        _ => {
            return Err(Error::Usage(
                "--serve-tls takes two PEM files: CERT,KEY".into(),
            ))
        }
    };
    let line = match identity {
        Some(identity) => {
            let line = format!(
                "serving onward at https://{bound}/{name} (TLS certificate SHA-256 {}; flexio get --pin {})\n",
                identity.fingerprint, identity.fingerprint
            );
            relay = relay.with_tls(identity);
            line
        }
        None => format!("serving onward at http://{bound}/{name}\n"),
    };
    print_stdout(&line);
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let report = relay.fetch_and_serve(urls, args.dest.as_deref(), options, args.linger)?;
    drop(bar);
    print_mirrored(
        args,
        report,
        "every piece BLAKE3-verified, served onward as it arrived",
    );
    Ok(())
}

/// Prints a mirrored or relayed get's report.
fn print_mirrored(args: &GetArgs, mut report: flexio_net::client::MirroredReport, how: &str) {
    report.url = args.url.clone();
    as_given(args, &mut report.servers);
    args.output.tell(
        || mirrored_summary(&report, how),
        || document("get-mirrored", &report),
    );
}

/// The summary of a mirrored or relayed get: a line, and one per server.
fn mirrored_summary(report: &flexio_net::client::MirroredReport, how: &str) -> String {
    let seconds = report.wall_ns as f64 / 1e9;
    let mut text = format!(
        "{} -> {}: {} in {seconds:.3} s ({}) from {} servers, {how}\n",
        report.url,
        report.destination.display(),
        flexio::format_bytes(report.bytes),
        flexio::format_rate(report.bytes as f64 / seconds.max(1e-9)),
        report.servers.len(),
    );
    text += &servers_lines(&report.servers);
    text
}

/// The servers' URLs as typed (the reports hold them parsed and normalised).
fn as_given(args: &GetArgs, servers: &mut [flexio_net::client::MirrorReport]) {
    let given = std::iter::once(&args.url)
        .chain(&args.mirror)
        .chain(&args.upstream);
    for (server, url) in servers.iter_mut().zip(given) {
        server.url = url.clone();
    }
}

/// A line per server of a mirrored get.
fn servers_lines(servers: &[flexio_net::client::MirrorReport]) -> String {
    let mut text = String::new();
    for server in servers {
        text += &format!(
            "  {}: {} in {} pieces at {}{}\n",
            server.url,
            flexio::format_bytes(server.bytes),
            server.pieces,
            flexio::format_rate(server.bytes_per_second),
            server
                .dropped
                .as_ref()
                .map(|why| format!(", dropped: {why}"))
                .unwrap_or_default(),
        );
    }
    text
}

/// `flexio get URL/dir/ [DEST]`: the tree, into DEST or the directory's
/// name here.
fn run_tree(
    args: &GetArgs,
    urls: &[String],
    options: &GetOptions,
    shard: Option<(flexio_net::shard::Shard, flexio_net::shard::Split)>,
    bar: ProgressBarThread,
) -> Result<()> {
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
    let url = &urls[0];
    let fetched = match shard {
        Some((shard, split)) => {
            flexio_net::client::get_tree_sharded(url, &destination, options, shard, split)
        }
        None if urls.len() > 1 => {
            flexio_net::client::get_tree_mirrored(urls, &destination, options)
        }
        None => flexio_net::client::get_tree(url, &destination, options),
    };
    let mut report = fetched?;
    drop(bar);
    as_given(args, &mut report.servers);
    report.url = args.url.clone();
    print_tree(args, &report);
    Ok(())
}

/// What a tree get left out, for its summary: special files, symlinks
/// that would lead out of the destination, and what a listing named but
/// could not be fetched or made here.
fn left_out(report: &flexio_net::client::TreeReport) -> String {
    let mut out = String::new();
    let not_fetched = report.listing.as_ref().map_or(0, |l| l.not_fetched.len());
    if not_fetched > 0 {
        out += &format!("; {not_fetched} listed but left out (warned above)");
    }
    if report.skipped > 0 {
        out += &format!("; {} special files left out", report.skipped);
    }
    if !report.escaping_links.is_empty() {
        out += &format!(
            "; {} left out (pointing out of the destination)",
            count(report.escaping_links.len() as u64, "symlink", "symlinks")
        );
    }
    out
}

/// A tree get's warnings on stderr (unless `--quiet`), then its JSON or
/// summary as the flags and stdout choose.
fn print_tree(args: &GetArgs, report: &flexio_net::client::TreeReport) {
    let destination = report.destination.display();
    let listing = report.listing.as_ref();
    if !args.output.quiet {
        for link in &report.escaping_links {
            eprintln!("flexio: warning: {link}: a symlink whose target leads, or through the tree's other links could lead, out of {destination}; left out (as rsync --safe-links)");
        }
        for why in listing.iter().flat_map(|l| &l.not_fetched) {
            eprintln!("flexio: warning: {why}: listed but not sent; left out");
        }
        if listing.is_some() {
            eprintln!("flexio: {}: not a flexio server (no manifest): the tree was read from its listings and each file checked against its Content-Length only, not verified by hash", report.url);
        }
    }
    args.output.tell(
        || tree_summary(report, args.no_verify),
        || document("get-tree", report),
    );
}

/// The summary of a tree get: a line, the shard's, and one per server.
fn tree_summary(report: &flexio_net::client::TreeReport, no_verify: bool) -> String {
    let verified = match (report.listing.as_ref(), no_verify) {
        (Some(_), _) => "not verified (no manifest)",
        (None, true) => "not verified (--no-verify)",
        (None, false) => "every file fetched BLAKE3-verified",
    };
    let seconds = report.wall_ns as f64 / 1e9;
    let mut text = format!(
        "{} -> {}: {} fetched, {} in the tree, {} unchanged, {}, {} in {seconds:.3} s over {}{}, {verified}{}\n",
        report.url,
        report.destination.display(),
        count(report.files, "file", "files"),
        size(report.bytes),
        report.unchanged,
        count(report.directories, "directory", "directories"),
        count(report.symlinks, "symlink", "symlinks"),
        count(report.streams as u64, "stream", "streams"),
        if report.tar_streams > 0 { format!(" ({} directories of small files as one tar stream each)", report.tar_streams) } else { String::new() },
        left_out(report),
    );
    if let Some(shard) = &report.shard {
        text += &crate::shard_args::summary(shard);
    }
    text + &servers_lines(&report.servers)
}

use std::os::unix::ffi::OsStrExt;
