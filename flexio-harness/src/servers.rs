//! The two servers of the `server` scenario, each a process on a loopback
//! port: `flexio serve` and nginx (`sendfile on`, a worker per CPU, a
//! generated configuration in a scratch directory), and the CPU they use
//! (the server and its children: nginx's workers), in nanoseconds
//! ([`crate::process_cpu`]).

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

use crate::process_cpu::process_cpu_ns;

/// How long a server may take to listen.
const START_DEADLINE: Duration = Duration::from_secs(10);

/// Which server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerKind {
    /// `flexio serve`.
    Flexio,
    /// nginx with `sendfile on`.
    Nginx,
}

impl ServerKind {
    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Flexio => "flexio serve",
            ServerKind::Nginx => "nginx",
        }
    }
}

/// The nginx binary, where one is installed.
pub fn nginx_binary() -> Option<PathBuf> {
    crate::peers::find_daemon("nginx")
}

/// A certificate and its private key, two PEM files both servers are
/// given for the TLS cells.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The certificate (self-signed, for 127.0.0.1 and localhost).
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
}

/// A running server: stopped (its children too) when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    /// Which server.
    pub kind: ServerKind,
    /// Where it listens.
    pub address: SocketAddr,
    /// Whether it speaks HTTPS.
    pub tls: bool,
    child: Child,
}

impl ServerProcess {
    /// Starts `flexio serve ROOT` on a free loopback port with `extra`
    /// flags (a rate limit, say), over HTTPS with `tls`.
    ///
    /// # Errors
    /// When it cannot start or does not listen within 10 s.
    pub fn flexio(
        flexio: &Path,
        root: &Path,
        extra: &[String],
        tls: Option<&TlsFiles>,
    ) -> io::Result<Self> {
        let tls_args: Vec<String> = match tls {
            Some(tls) => vec![
                "--tls".into(),
                format!("{},{}", tls.cert.display(), tls.key.display()),
            ],
            None => Vec::new(),
        };
        on_a_free_port(|port| {
            let address = SocketAddr::from(([127, 0, 0, 1], port));
            let mut command = Command::new(flexio);
            // Gone with the bench, even one killed with `kill -9`.
            let child = flexio_sys::process::terminate_with_parent(&mut command)
                .arg("serve")
                .arg(root)
                .arg("--listen")
                .arg(address.to_string())
                // As many connections as nginx's worker_connections below.
                .args(["--max-connections", "4096"])
                .args(extra)
                .args(&tls_args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            ServerProcess {
                kind: ServerKind::Flexio,
                address,
                tls: tls.is_some(),
                child,
            }
            .listening()
        })
    }

    /// Starts nginx serving `root` on a free loopback port, its
    /// configuration, pid file and logs in `scratch`; `limit_rate` bytes
    /// per second per connection when given; over HTTPS with `tls`.
    ///
    /// # Errors
    /// When it cannot start or does not listen within 10 s (the error
    /// carries nginx's error log).
    pub fn nginx(
        binary: &Path,
        root: &Path,
        scratch: &Path,
        limit_rate: Option<u64>,
        tls: Option<&TlsFiles>,
    ) -> io::Result<Self> {
        std::fs::create_dir_all(scratch)?;
        on_a_free_port(|port| {
            let config = nginx_config(
                &NginxSite {
                    root,
                    port,
                    limit_rate,
                    tls,
                },
                scratch,
                rustix::process::geteuid().is_root(),
            );
            let conf = scratch.join("nginx.conf");
            std::fs::write(&conf, config)?;
            let mut command = Command::new(binary);
            let child = flexio_sys::process::terminate_with_parent(&mut command)
                .arg("-p")
                .arg(scratch)
                .arg("-e")
                .arg(scratch.join("error.log"))
                .arg("-c")
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            ServerProcess {
                kind: ServerKind::Nginx,
                address: SocketAddr::from(([127, 0, 0, 1], port)),
                tls: tls.is_some(),
                child,
            }
            .listening()
            .map_err(|e| {
                let log = std::fs::read_to_string(scratch.join("error.log")).unwrap_or_default();
                io::Error::new(e.kind(), format!("nginx: {e}; its log: {}", log.trim()))
            })
        })
    }

    /// Waits until the server holds a socket listening on its port (by
    /// `/proc`: a connection would also reach another process that took
    /// the port first).
    fn listening(mut self) -> io::Result<Self> {
        let started = Instant::now();
        while started.elapsed() < START_DEADLINE {
            if let Some(status) = self.child.try_wait()? {
                return Err(io::Error::other(format!(
                    "{} exited at start: {status}",
                    self.kind.name()
                )));
            }
            if flexio_sys::process::listens_on(self.pid(), self.address.port()) {
                return Ok(self);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("{} did not listen on {}", self.kind.name(), self.address),
        ))
    }

    /// The URL of `path` (`/name`) on this server.
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}{path}", self.address)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU seconds (user + system) the server and its children have used
    /// so far, in nanoseconds' resolution ([`crate::process_cpu`]).
    ///
    /// # Errors
    /// When the server's own times cannot be read.
    pub fn cpu_seconds(&self) -> io::Result<f64> {
        let mut total = process_cpu_ns(self.pid()).ok_or_else(|| {
            io::Error::other(format!("/proc/{}: CPU times unreadable", self.pid()))
        })?;
        for child in children_of(self.pid()) {
            total += process_cpu_ns(child).unwrap_or(0);
        }
        Ok(total as f64 / 1e9)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // nginx's master stops its workers on SIGTERM; a master killed
        // outright would leave them running. Whatever is left after 3 s is
        // killed, children first.
        let children = children_of(self.pid());
        if let Some(pid) = Pid::from_raw(self.pid() as i32) {
            let _ = kill_process(pid, Signal::TERM);
        }
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(3) {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        for child in children {
            if let Some(pid) = Pid::from_raw(child as i32) {
                let _ = kill_process(pid, Signal::KILL);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How many ports a server is tried on before its start is called failed.
const PORT_TRIES: usize = 5;

/// `start` on a port that was free a moment ago; again on another when it
/// failed and something else now listens on that one (a port found free
/// can be taken before the server binds it, by another bench or test).
fn on_a_free_port<T>(mut start: impl FnMut(u16) -> io::Result<T>) -> io::Result<T> {
    let mut tries = 0;
    loop {
        tries += 1;
        let port = crate::peers::free_port()?;
        match start(port) {
            Err(_) if tries < PORT_TRIES && port_taken(port) => continue,
            done => return done,
        }
    }
}

/// Whether `127.0.0.1:port` cannot be bound now.
fn port_taken(port: u16) -> bool {
    std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))
        .is_err_and(|e| e.kind() == io::ErrorKind::AddrInUse)
}

/// What one nginx serves, and how.
struct NginxSite<'a> {
    root: &'a Path,
    port: u16,
    limit_rate: Option<u64>,
    tls: Option<&'a TlsFiles>,
}

/// The nginx configuration of the bench: what a static-file deployment
/// would use (sendfile, tcp_nopush, no access log, a worker per CPU), and
/// `limit_rate` per connection when given. Over TLS, 1.2 and 1.3 are
/// offered as rustls offers them (nginx before 1.23.4 offers no 1.3 by
/// default), with the certificate `flexio serve` is given.
fn nginx_config(site: &NginxSite<'_>, scratch: &Path, root_user: bool) -> String {
    let s = scratch.display();
    let port = site.port;
    // As root nginx would switch its workers to `nobody`, who may not be
    // allowed into the bench's directory.
    let user = if root_user { "user root;\n" } else { "" };
    let limit = site
        .limit_rate
        .map_or(String::new(), |rate| format!("    limit_rate {rate};\n"));
    let (ssl, certificate) = match site.tls {
        Some(tls) => (
            " ssl",
            format!(
                "    ssl_protocols TLSv1.2 TLSv1.3;\n    ssl_certificate {};\n    ssl_certificate_key {};\n",
                tls.cert.display(),
                tls.key.display()
            ),
        ),
        None => ("", String::new()),
    };
    format!(
        "daemon off;\n{user}worker_processes auto;\npid {s}/nginx.pid;\nerror_log {s}/error.log;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n  keepalive_requests 1000000;\n  \
         client_body_temp_path {s}/body;\n  proxy_temp_path {s}/proxy;\n  fastcgi_temp_path {s}/fastcgi;\n  \
         uwsgi_temp_path {s}/uwsgi;\n  scgi_temp_path {s}/scgi;\n  \
         server {{\n    listen 127.0.0.1:{port}{ssl};\n    root {root};\n{limit}{certificate}  }}\n}}\n",
        root = site.root.display(),
    )
}

/// The processes whose parent is `pid` (a scan of `/proc`).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|candidate| {
            std::fs::read_to_string(format!("/proc/{candidate}/stat"))
                .ok()
                .and_then(|stat| {
                    let after = &stat[stat.rfind(')')? + 1..];
                    after.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_that_lost_its_port_is_tried_on_another() {
        let mut taken = Vec::new();
        let port = on_a_free_port(|port| {
            if taken.is_empty() {
                // Another process takes the port before the server binds it.
                taken.push(std::net::TcpListener::bind(("127.0.0.1", port)).unwrap());
                return Err(io::Error::from(io::ErrorKind::AddrInUse));
            }
            Ok(port)
        })
        .unwrap();
        assert_eq!(taken.len(), 1);
        assert_ne!(Some(port), taken[0].local_addr().ok().map(|a| a.port()));
    }

    #[test]
    fn a_start_that_failed_with_its_port_still_free_is_not_tried_again() {
        let mut tries = 0;
        let failed = on_a_free_port(|_| -> io::Result<()> {
            tries += 1;
            Err(io::Error::other("bad flag"))
        });
        assert_eq!(failed.unwrap_err().to_string(), "bad flag");
        assert_eq!(tries, 1);
    }

    #[test]
    fn nginx_config_limits_the_rate_only_when_asked() {
        let site = NginxSite {
            root: Path::new("/srv"),
            port: 8080,
            limit_rate: None,
            tls: None,
        };
        let plain = nginx_config(&site, Path::new("/tmp/s"), false);
        assert!(plain.contains("sendfile on;") && !plain.contains("limit_rate"));
        assert!(!plain.contains("ssl"));
        let limited = NginxSite {
            limit_rate: Some(1000),
            ..site
        };
        let limited = nginx_config(&limited, Path::new("/tmp/s"), true);
        assert!(limited.contains("limit_rate 1000;") && limited.contains("user root;"));
    }

    #[test]
    fn nginx_over_tls_listens_with_ssl_and_the_given_certificate() {
        let tls = TlsFiles {
            cert: PathBuf::from("/tmp/s/cert.pem"),
            key: PathBuf::from("/tmp/s/key.pem"),
        };
        let site = NginxSite {
            root: Path::new("/srv"),
            port: 8443,
            limit_rate: None,
            tls: Some(&tls),
        };
        let config = nginx_config(&site, Path::new("/tmp/s"), false);
        assert!(config.contains("listen 127.0.0.1:8443 ssl;"));
        assert!(config.contains("ssl_certificate /tmp/s/cert.pem;"));
        assert!(config.contains("ssl_certificate_key /tmp/s/key.pem;"));
        assert!(config.contains("TLSv1.3"));
    }
}
