//! `flexio serve DIR`: serve a directory read-only over HTTP/1.1 (see
//! `flexio_net::server`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use flexio::{Error, MechanismName};
use flexio_net::server::{ServeConfig, Server};

/// Arguments of `flexio serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// The directory to serve; nothing outside it is reachable.
    dir: PathBuf,
    /// Address and port to listen on (port 0 picks a free one). Loopback
    /// unless --public.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Serve read-only: PUT is answered 405 even with --token-file.
    #[arg(long)]
    read_only: bool,
    /// Take PUT uploads bearing this file's token (first line, at least 16
    /// characters) as `Authorization: Bearer`; on loopback or with TLS only.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Allow a non-loopback address (no authentication: read-only only).
    #[arg(long)]
    public: bool,
    /// Worker threads answering requests.
    #[arg(long, default_value_t = 8)]
    workers: usize,
    /// Connections held at once; more get 503.
    #[arg(long, default_value_t = 1024)]
    max_connections: usize,
    /// Time a request head may take to arrive (slow clients are cut off).
    #[arg(long, value_parser = duration, default_value = "10s")]
    head_timeout: Duration,
    /// Time a kept-alive connection may sit idle.
    #[arg(long, value_parser = duration, default_value = "15s")]
    idle_timeout: Duration,
    /// The file→socket mechanism for bodies.
    #[arg(long, default_value = "auto")]
    via: MechanismName,
    /// Bytes per read/write or per mapped window of that mechanism (the
    /// OS project's buffer and map size) [default: the mechanism's own].
    #[arg(long, value_parser = chunk)]
    chunk: Option<usize>,
    /// Serve HTTPS with this certificate chain and private key (two PEM
    /// files). Bodies then go through rustls: one user-space copy.
    #[arg(
        long,
        value_name = "CERT,KEY",
        value_delimiter = ',',
        num_args = 1,
        conflicts_with = "tls_self_signed"
    )]
    tls: Vec<PathBuf>,
    /// Serve HTTPS with a new self-signed certificate; its SHA-256
    /// fingerprint is printed once, for `flexio get --pin`.
    #[arg(long)]
    tls_self_signed: bool,
}

fn chunk(text: &str) -> Result<usize, String> {
    let size = flexio::parse_size(text).map_err(|e| e.to_string())?;
    if !(4096..=(64 << 20)).contains(&size) {
        return Err("--chunk must be between 4KiB and 64MiB".into());
    }
    Ok(size as usize)
}

fn duration(text: &str) -> Result<Duration, String> {
    flexio::parse_duration(text).map_err(|e| e.to_string())
}

/// Runs `flexio serve` until the process is stopped.
pub fn run(args: ServeArgs) -> Result<(), Error> {
    let mut config = ServeConfig::new(args.dir.clone());
    config.listen = args.listen;
    config.public = args.public;
    config.workers = args.workers.max(1);
    config.max_connections = args.max_connections.max(1);
    config.head_timeout = args.head_timeout;
    config.idle_timeout = args.idle_timeout;
    config.mechanism = args.via;
    config.chunk = args.chunk;
    if !matches!(args.tls.len(), 0 | 2) {
        return Err(Error::Usage("--tls takes two PEM files: CERT,KEY".into()));
    }
    if let [cert, key] = args.tls.as_slice() {
        config.tls = Some(
            flexio_net::tls::TlsIdentity::from_pem_files(cert, key)
                .unwrap_or_else(|e| crate::get_cmd::fail(e)),
        );
    } else if args.tls_self_signed {
        let names = vec![args.listen.ip().to_string(), "localhost".to_string()];
        config.tls = Some(
            flexio_net::tls::TlsIdentity::self_signed(&names)
                .unwrap_or_else(|e| crate::get_cmd::fail(e)),
        );
    }
    let tls_note = config.tls.as_ref().map(|identity| {
        format!(
            "TLS certificate SHA-256 {} (flexio get --pin {}); over TLS bodies go through rustls, one user-space copy, not sendfile\n",
            identity.fingerprint, identity.fingerprint
        )
    });
    if let (Some(path), false) = (&args.token_file, args.read_only) {
        config.token = Some(crate::put_cmd::read_token(path)?);
    }
    let mode = match config.token {
        Some(_) => "uploads with the token",
        None => "read-only",
    };
    let server = Server::bind(config).unwrap_or_else(|e| crate::get_cmd::fail(e));
    crate::print_stdout(&format!(
        "serving {} on {}://{}/ ({mode})\n{}",
        args.dir.display(),
        if tls_note.is_some() { "https" } else { "http" },
        server.local_addr(),
        tls_note.unwrap_or_default()
    ));
    server.run().unwrap_or_else(|e| crate::get_cmd::fail(e));
    Ok(())
}
