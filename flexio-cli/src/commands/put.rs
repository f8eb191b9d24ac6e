//! `flexio put SRC URL`: upload one file to `flexio serve --token-file`
//! (see `flexio_net::client::put`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::error::{Error, Result};
use crate::output::document;
use crate::token::read_token;
use crate::values;

/// Arguments of `flexio put`.
#[derive(Args)]
pub struct PutArgs {
    /// The file to send, or a directory: its tree goes into the URL's
    /// directory (made with MKCOL, files with PUT; symlinks are skipped).
    source: PathBuf,
    /// The URL to write it to (`http://`, or `https://` with --pin or
    /// --ca); a directory's ends in `/`.
    url: String,
    /// A file holding the server's token.
    #[arg(long)]
    token_file: PathBuf,
    /// Deadline to connect, for the answer, and for any stretch without
    /// progress.
    #[arg(long, value_parser = values::duration, default_value = "30s")]
    timeout: Duration,
    /// The most bytes per second (10M, 1G, 100Mbit/s).
    #[arg(long, value_name = "RATE", value_parser = values::rate)]
    rate: Option<flexio::pace::Rate>,
    /// Connections sending pieces of the file at once. One by default
    /// (unlike get's 4): a file up to --piece-size then goes as one plain
    /// PUT, which any WebDAV server takes; pieces over several
    /// connections need `flexio serve`. A tree is put over this many
    /// connections, a file on each.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = values::count(values::MAX_STREAMS))]
    streams: usize,
    /// A file larger than this (or sent over several streams) goes in
    /// pieces of this size; run again after an interruption, the pieces the
    /// server has are not sent again. (`--piece` is its old name.)
    #[arg(long = "piece-size", alias = "piece", default_value = "64M", value_name = "SIZE", value_parser = values::piece_size)]
    piece_size: u64,
    #[command(flatten)]
    output: crate::transfer_output::OutputArgs,
    #[command(flatten)]
    tls: crate::tls_args::TlsArgs,
    #[command(flatten)]
    shard: crate::shard_args::ShardArgs,
}

/// The URL a file goes to: a URL ending in `/` names a directory, and
/// the file keeps its name in it, as with `curl -T FILE URL/`.
fn put_target(url: &str, source: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let path = url.split(['?', '#']).next().unwrap_or_default();
    match source.file_name() {
        Some(name) if path.ends_with('/') && !source.is_dir() => {
            let name = flexio_net::names::percent_encode(name.as_bytes());
            format!("{path}{name}{}", &url[path.len()..])
        }
        _ => url.to_string(),
    }
}

/// Runs `flexio put`.
pub fn run(args: PutArgs) -> Result<()> {
    let token = read_token(&args.token_file)?;
    let pacing = flexio::pace::Pacing {
        rate: args.rate,
        ..Default::default()
    };
    let target = put_target(&args.url, &args.source);
    let url = target.clone();
    let watch = args.output.watch();
    let options = flexio_net::client::PutOptions {
        timeout: args.timeout,
        pacing,
        streams: args.streams,
        piece: args.piece_size,
        tls: args.tls.client(std::iter::once(target.as_str()))?,
        progress: watch.counters.clone(),
    };
    let shard = args.shard.resolve()?;
    if shard.is_some() && !args.source.is_dir() {
        return Err(Error::Usage(format!(
            "{}: --shard shares a tree: give a directory",
            args.source.display()
        )));
    }
    let bar = watch.start();
    if args.source.is_dir() {
        return put_tree(&args, &url, &token, &options, shard, bar);
    }
    let mut report = flexio_net::client::put_with(&args.source, &url, &token, &options)?;
    drop(bar);
    report.url = target;
    args.output.tell(
        || file_summary(&args.source, &report),
        || document("put", &report),
    );
    Ok(())
}

/// The summary line of a one-file put.
fn file_summary(source: &std::path::Path, report: &flexio_net::client::PutReport) -> String {
    let pieces = if report.pieces > 1 || report.resumed_bytes > 0 {
        format!(
            "; {} sent in {} pieces over {} streams, {} already there",
            flexio::format_bytes(report.sent_bytes),
            report.pieces,
            report.streams,
            flexio::format_bytes(report.resumed_bytes)
        )
    } else {
        String::new()
    };
    format!(
        "{} -> {}: {} ({}) in {:.3} s, {}{pieces}\n",
        source.display(),
        report.url,
        flexio::format_bytes(report.bytes),
        if report.status == 201 {
            "created"
        } else {
            "replaced"
        },
        report.wall_ns as f64 / 1e9,
        report.mechanism.as_deref().unwrap_or("no body"),
    )
}

/// `flexio put DIR URL/`: exit status 1 when any entry failed, each listed.
fn put_tree(
    args: &PutArgs,
    url: &str,
    token: &str,
    options: &flexio_net::client::PutOptions,
    shard: Option<(flexio_net::shard::Shard, flexio_net::shard::Split)>,
    bar: crate::progress::ProgressBarThread,
) -> Result<()> {
    let url = if url.ends_with('/') {
        url.to_string()
    } else {
        format!("{url}/")
    };
    let sent = match shard {
        Some((shard, split)) => {
            flexio_net::client::put_tree_sharded(&args.source, &url, token, options, shard, split)
        }
        None => flexio_net::client::put_tree(&args.source, &url, token, options),
    };
    let mut report = sent?;
    drop(bar);
    report.url = args.url.clone();
    for failure in &report.failures {
        eprintln!("flexio: {failure}");
    }
    args.output.tell(
        || tree_summary(&args.source, &report),
        || document("put-tree", &report),
    );
    if report.failures.is_empty() {
        Ok(())
    } else {
        Err(Error::Io {
            op: "put",
            endpoint: format!("{} entries", report.failures.len()),
            offset: None,
            source: std::io::Error::other("failed (each is listed above)"),
        })
    }
}

/// The summary of a tree put: a line, and the shard's.
fn tree_summary(source: &std::path::Path, report: &flexio_net::client::PutTreeReport) -> String {
    let mut text = format!(
        "{} -> {}: {} files ({}), {} unchanged ({}, not sent), {} directories made, {} skipped, {} failed, in {:.3} s over {} streams\n",
        source.display(),
        report.url,
        report.files,
        flexio::format_bytes(report.bytes),
        report.unchanged,
        flexio::format_bytes(report.unchanged_bytes),
        report.directories_made,
        report.skipped.len(),
        report.failures.len(),
        report.wall_ns as f64 / 1e9,
        report.streams
    );
    if let Some(shard) = &report.shard {
        text += &crate::shard_args::summary(shard);
    }
    text
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn a_file_put_to_a_directory_url_keeps_its_name() {
        let to = |url| super::put_target(url, Path::new("/tmp/a b.txt"));
        assert_eq!(to("http://h:1/up/"), "http://h:1/up/a%20b.txt");
        assert_eq!(to("http://h:1/up/x.txt"), "http://h:1/up/x.txt");
    }
}
