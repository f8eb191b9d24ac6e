//! What each contender of the `host-to-host` scenario runs: its server
//! (started here, stopped when the contenders are dropped) and its client
//! command.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use flexio::MechanismName;

use super::link::{free_port, Link};
use super::servers::Server;
use super::{HostBenchOptions, HostContender, Workload};
use crate::{Error, Result};

/// A client command: for the workload, into the copies directory.
type Client = Box<dyn Fn(&Link, &Workload, &Path) -> Command>;

/// A per-run sender command: for the workload's path.
type Sender = Box<dyn Fn(&Link, &str) -> Command>;

/// Reads a run's seconds from the client's standard output.
type OwnTimer = fn(&[u8]) -> Result<f64>;

/// The sending side of a contender.
pub(super) enum ServerSide {
    /// A server that keeps running across runs.
    Running(Rc<Server>),
    /// A sender started for each run (`tar | nc -l`), on this port, for
    /// the workload's path.
    PerRun {
        name: &'static str,
        port: u16,
        command: Sender,
    },
}

/// One contender.
pub(super) struct Contender {
    pub name: String,
    /// Who it is, for the report's comparisons.
    pub kind: HostContender,
    pub server: ServerSide,
    pub client: Client,
    /// Whether it moves trees (else single files only).
    pub trees: bool,
    /// Whether it writes a copy to check (iperf3 does not).
    pub writes: bool,
    /// Reads the transfer's seconds from the client's output instead of
    /// timing the process (iperf3's own timer).
    pub own_timer: Option<OwnTimer>,
}

impl Contender {
    /// The server side's name in tables.
    pub fn server_name(&self) -> String {
        match &self.server {
            ServerSide::Running(server) => server.name.clone(),
            ServerSide::PerRun { name, .. } => name.to_string(),
        }
    }
}

/// Whether `program` can be started.
pub(super) fn available(program: &str, probe: &str) -> bool {
    Command::new(program)
        .arg(probe)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok()
}

/// The URL of a workload on a flexio or nginx server (trees end in `/`).
fn url(link: &Link, port: u16, workload: &Workload) -> String {
    format!(
        "http://{}/{}{}",
        link.authority(port),
        workload.path,
        if workload.tree { "/" } else { "" }
    )
}

/// `flexio serve` on the servers' side with these extra arguments.
fn flexio_serve(
    link: &Link,
    options: &HostBenchOptions,
    served: &Path,
    logs: &Path,
    name: &str,
    extra: &[&str],
) -> Result<Rc<Server>> {
    let port = free_port()?;
    let mut command = link.server_command(&options.flexio.display().to_string());
    command
        .arg("serve")
        .arg(served)
        .arg("--listen")
        .arg(link.authority(port))
        .args(["--public", "--read-only"])
        .args(extra);
    let log = logs.join(format!("{}.log", name.replace([' ', '/'], "-")));
    Server::start(name, command, port, &log).map(Rc::new)
}

/// A `flexio get` client with these extra arguments.
fn flexio_get(flexio: &Path, port: u16, extra: Vec<String>) -> Client {
    let flexio = flexio.display().to_string();
    Box::new(move |link, workload, copies| {
        let mut command = link.client_command(&flexio);
        command
            .args(["get", "--timeout", "60s"])
            .args(&extra)
            .arg(url(link, port, workload))
            .arg(copies.join(&workload.path));
        command
    })
}

/// The contenders of the main part, with their servers started.
pub(super) fn main_part(
    link: &Link,
    options: &HostBenchOptions,
    served: &Path,
    logs: &Path,
    skipped: &mut Vec<(String, String)>,
) -> Result<Vec<Contender>> {
    let flexio = flexio_serve(link, options, served, logs, "flexio serve", &[])?;
    let mut contenders = flexio_gets(options, &flexio);
    // The same client against flexio serve as against nginx: on one host
    // the receiver's kernel work is partly charged to the sender (a
    // splicing flexio get makes nginx spend 3× the CPU curl does), so the
    // servers' CPU is compared under one client.
    if available("curl", "--version") {
        contenders.push(curl(
            "curl (flexio serve)",
            HostContender::CurlFlexioServe,
            &flexio,
        ));
    }
    match start_nginx(link, served, logs) {
        Ok(nginx) => nginx_clients(&mut contenders, &nginx, options.streams, skipped),
        Err(why) => {
            skipped.push(("curl, aria2c (nginx)".into(), why.to_string()));
        }
    }
    match start_rsync_daemon(link, served, logs) {
        Ok(rsync) => contenders.push(rsync_client(rsync)),
        Err(why) => skipped.push(("rsync daemon".into(), why.to_string())),
    }
    if available("nc", "-h") && available("tar", "--version") {
        contenders.push(tar_nc(served)?);
    } else {
        skipped.push(("tar | nc".into(), "nc or tar is not installed".into()));
    }
    match start_iperf3(link, logs) {
        Ok(iperf3) => {
            contenders.push(iperf3_client(&iperf3, false));
            contenders.push(iperf3_client(&iperf3, true));
        }
        Err(why) => skipped.push(("iperf3".into(), why.to_string())),
    }
    match start_sshd(link, logs) {
        Ok((sshd, key)) => contenders.push(scp_client(sshd, key, served)),
        Err(why) => skipped.push(("scp".into(), why.to_string())),
    }
    Ok(contenders)
}

/// `flexio get` against `flexio serve`, verifying and not.
fn flexio_gets(options: &HostBenchOptions, flexio: &Rc<Server>) -> Vec<Contender> {
    let mut contenders = Vec::new();
    let streams = options.streams.to_string();
    for (name, kind, verify) in [
        ("flexio get", HostContender::FlexioGet, true),
        (
            "flexio get --no-verify",
            HostContender::FlexioGetNoVerify,
            false,
        ),
    ] {
        let mut extra = vec!["--streams".to_string(), streams.clone()];
        if !verify {
            extra.push("--no-verify".into());
        }
        contenders.push(Contender {
            name: name.into(),
            kind,
            server: ServerSide::Running(flexio.clone()),
            client: flexio_get(&options.flexio, flexio.port, extra),
            trees: true,
            writes: true,
            own_timer: None,
        });
    }
    contenders
}

/// `curl` fetching from `server`, one file at a time.
fn curl(name: &str, kind: HostContender, server: &Rc<Server>) -> Contender {
    let port = server.port;
    Contender {
        name: name.into(),
        kind,
        server: ServerSide::Running(server.clone()),
        client: Box::new(move |link, workload, copies| {
            let mut command = link.client_command("curl");
            command
                .args(["-sS", "--fail", "-o"])
                .arg(copies.join(&workload.path))
                .arg(url(link, port, workload));
            command
        }),
        trees: false,
        writes: true,
        own_timer: None,
    }
}

/// `rsync -a` from the rsync daemon's `data` module.
fn rsync_client(rsync: Rc<Server>) -> Contender {
    Contender {
        name: "rsync daemon".into(),
        kind: HostContender::RsyncDaemon,
        server: ServerSide::Running(rsync.clone()),
        client: Box::new(move |link, workload, copies| {
            let slash = if workload.tree { "/" } else { "" };
            let mut command = link.client_command("rsync");
            command
                .arg("-a")
                .arg(format!(
                    "rsync://{}/data/{}{slash}",
                    link.authority(rsync.port),
                    workload.path
                ))
                .arg(format!("{}{slash}", copies.join(&workload.path).display()));
            command
        }),
        trees: true,
        writes: true,
        own_timer: None,
    }
}

/// `scp` (`-r` for a tree) from the sshd started for the bench, with its
/// throwaway key.
fn scp_client(sshd: Rc<Server>, key: PathBuf, served: &Path) -> Contender {
    let served: PathBuf = served.to_path_buf();
    Contender {
        name: "scp".into(),
        kind: HostContender::Scp,
        server: ServerSide::Running(sshd.clone()),
        client: Box::new(move |link, workload, copies| {
            let mut command = link.client_command("scp");
            command
                .args(["-q", "-B", "-i"])
                .arg(&key)
                .args([
                    "-o",
                    "StrictHostKeyChecking=no",
                    "-o",
                    "UserKnownHostsFile=/dev/null",
                    "-o",
                    "LogLevel=ERROR",
                    "-P",
                ])
                .arg(sshd.port.to_string());
            if workload.tree {
                command.arg("-r");
            }
            command
                .arg(format!(
                    "root@{}:{}",
                    link.server_addr,
                    served.join(&workload.path).display()
                ))
                .arg(copies.join(&workload.path));
            command
        }),
        trees: true,
        writes: true,
        own_timer: None,
    }
}

fn nginx_clients(
    contenders: &mut Vec<Contender>,
    nginx: &Rc<Server>,
    streams: usize,
    skipped: &mut Vec<(String, String)>,
) {
    let port = nginx.port;
    if available("curl", "--version") {
        contenders.push(curl("curl (nginx)", HostContender::CurlNginx, nginx));
    } else {
        skipped.push(("curl".into(), "curl is not installed".into()));
    }
    if available("aria2c", "--version") {
        contenders.push(Contender {
            name: format!("aria2c -x {streams} (nginx)"),
            kind: HostContender::Aria2c,
            server: ServerSide::Running(nginx.clone()),
            client: Box::new(move |link, workload, copies| {
                let mut command = link.client_command("aria2c");
                command
                    .arg(format!("-x{streams}"))
                    .arg(format!("-s{streams}"))
                    .args([
                        "-q",
                        "--allow-overwrite=true",
                        "--auto-file-renaming=false",
                        "--file-allocation=none",
                        "--summary-interval=0",
                    ])
                    .arg("-d")
                    .arg(copies)
                    .arg("-o")
                    .arg(&workload.path)
                    .arg(url(link, port, workload));
                command
            }),
            trees: false,
            writes: true,
            own_timer: None,
        });
    } else {
        skipped.push((
            "aria2c".into(),
            "aria2c is not installed (apt-get install -y aria2 failed or was not allowed)".into(),
        ));
    }
}

fn start_nginx(link: &Link, served: &Path, logs: &Path) -> Result<Rc<Server>> {
    if !available("nginx", "-v") {
        return Err(Error::peer("nginx", "not installed"));
    }
    let port = free_port()?;
    let prefix = logs.join("nginx");
    std::fs::create_dir_all(&prefix).map_err(|e| Error::io("mkdir", &prefix, e))?;
    let user = if rustix::process::geteuid().is_root() {
        "user root;"
    } else {
        ""
    };
    let p = prefix.display();
    let conf = format!(
        "{user}\nworker_processes auto;\ndaemon off;\npid {p}/nginx.pid;\nerror_log {p}/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n  keepalive_timeout 65;\n\
           client_body_temp_path {p}/body;\n  proxy_temp_path {p}/proxy;\n  fastcgi_temp_path {p}/fastcgi;\n\
           uwsgi_temp_path {p}/uwsgi;\n  scgi_temp_path {p}/scgi;\n  types {{ }}\n  default_type application/octet-stream;\n\
           server {{\n    listen {};\n    root {};\n  }}\n}}\n",
        link.authority(port),
        served.display()
    );
    let path = prefix.join("nginx.conf");
    std::fs::write(&path, conf).map_err(|e| Error::io("write", &path, e))?;
    let mut command = link.server_command("nginx");
    command
        .arg("-e")
        .arg(prefix.join("error.log"))
        .arg("-p")
        .arg(&prefix)
        .arg("-c")
        .arg(&path);
    Server::start("nginx", command, port, &logs.join("nginx.log")).map(Rc::new)
}

fn start_rsync_daemon(link: &Link, served: &Path, logs: &Path) -> Result<Rc<Server>> {
    if !available("rsync", "--version") {
        return Err(Error::peer("rsync", "not installed"));
    }
    let port = free_port()?;
    let ids = if rustix::process::geteuid().is_root() {
        "  uid = root\n  gid = root\n"
    } else {
        ""
    };
    let conf = format!(
        "use chroot = no\n[data]\n  path = {}\n  read only = yes\n{ids}",
        served.display()
    );
    let path = logs.join("rsyncd.conf");
    std::fs::write(&path, conf).map_err(|e| Error::io("write", &path, e))?;
    let mut command = link.server_command("rsync");
    command
        .args(["--daemon", "--no-detach"])
        .arg(format!("--config={}", path.display()))
        .arg(format!("--address={}", link.server_addr))
        .arg(format!("--port={port}"))
        .arg(format!("--log-file={}", logs.join("rsyncd.log").display()));
    Server::start("rsync daemon", command, port, &logs.join("rsync.log")).map(Rc::new)
}

/// iperf3 memory to memory: the link's ceiling.
pub(super) const IPERF3: &str = "iperf3 (ceiling)";

/// iperf3 writing what it receives into a file (`-F`): the link's ceiling
/// with the receiver's cost of a 1 GiB file in the page cache, which
/// every contender but plain iperf3 pays.
pub(super) const IPERF3_INTO_FILE: &str = "iperf3 -F (into a file)";

/// An iperf3 client receiving the workload's bytes from `server` (`-R`),
/// into a file of the copies directory when `into_file`; timed by
/// iperf3's own clock.
fn iperf3_client(server: &Rc<Server>, into_file: bool) -> Contender {
    let port = server.port;
    let (name, kind) = if into_file {
        (IPERF3_INTO_FILE, HostContender::Iperf3IntoFile)
    } else {
        (IPERF3, HostContender::Iperf3)
    };
    Contender {
        name: name.into(),
        kind,
        server: ServerSide::Running(server.clone()),
        client: Box::new(move |link, workload, copies| {
            let mut command = link.client_command("iperf3");
            command
                .arg("-c")
                .arg(link.server_addr.to_string())
                .arg("-p")
                .arg(port.to_string())
                .args(["-R", "-J", "-n"])
                .arg(workload.bytes.to_string());
            if into_file {
                command.arg("-F").arg(copies.join("iperf3-received"));
            }
            command
        }),
        trees: false,
        // What it writes is iperf3's own data, not a copy to check.
        writes: false,
        own_timer: Some(iperf3_seconds),
    }
}

/// An sshd on the servers' side with throw-away keys made in `logs`
/// (host key, and a client key it takes for root), for `scp`; the key's
/// path for the client. Root only: sshd logs a user in as itself.
fn start_sshd(link: &Link, logs: &Path) -> Result<(Rc<Server>, PathBuf)> {
    let sshd = crate::peers::find_daemon("sshd").ok_or_else(|| {
        Error::peer(
            "sshd",
            "not on this machine (openssh-server is not installed)",
        )
    })?;
    if !available("scp", "-V") || !available("ssh-keygen", "-?") {
        return Err(Error::peer("scp", "scp or ssh-keygen is not installed"));
    }
    if !rustix::process::geteuid().is_root() {
        return Err(Error::peer(
            "sshd",
            "not root: an sshd started here could not log anyone in",
        ));
    }
    let key = |name: &str| -> Result<PathBuf> {
        let path = logs.join(name);
        let _ = std::fs::remove_file(&path);
        let status = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(&path)
            .status()
            .map_err(|e| Error::spawn("start", "ssh-keygen", e))?;
        if status.success() {
            Ok(path)
        } else {
            Err(Error::program("ssh-keygen", format!("failed: {status}")))
        }
    };
    let host_key = key("ssh_host_key")?;
    let client_key = key("ssh_client_key")?;
    let authorized = logs.join("authorized_keys");
    std::fs::copy(client_key.with_extension("pub"), &authorized)
        .map_err(|e| Error::io("copy the client key to", &authorized, e))?;
    // sshd refuses to start without its privilege separation directory,
    // which an installed but never started sshd may not have made.
    std::fs::create_dir_all("/run/sshd").map_err(|e| Error::io("mkdir", "/run/sshd", e))?;
    let port = free_port()?;
    let conf = format!(
        "Port {port}\nListenAddress {}\nHostKey {}\nPidFile none\nAuthorizedKeysFile {}\n\
         PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
         KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
         Subsystem sftp internal-sftp\n",
        link.server_addr,
        host_key.display(),
        authorized.display()
    );
    let path = logs.join("sshd_config");
    std::fs::write(&path, conf).map_err(|e| Error::io("write", &path, e))?;
    let mut command = link.server_command(&sshd.display().to_string());
    command.args(["-D", "-e", "-f"]).arg(&path);
    let server = Server::start("sshd", command, port, &logs.join("sshd.log"))?;
    Ok((Rc::new(server), client_key))
}

fn start_iperf3(link: &Link, logs: &Path) -> Result<Rc<Server>> {
    if !available("iperf3", "--version") {
        return Err(Error::peer("iperf3", "not installed"));
    }
    let port = free_port()?;
    let mut command = link.server_command("iperf3");
    command
        .args(["-s", "-B"])
        .arg(link.server_addr.to_string())
        .arg("-p")
        .arg(port.to_string());
    Server::start("iperf3 -s", command, port, &logs.join("iperf3.log")).map(Rc::new)
}

/// `tar -cf - PATH | nc -N -l` on the servers' side for each run, and
/// `nc -d | tar -xf -` on the clients'.
fn tar_nc(served: &Path) -> Result<Contender> {
    let port = free_port()?;
    let served: PathBuf = served.to_path_buf();
    Ok(Contender {
        name: "tar | nc".into(),
        kind: HostContender::TarNc,
        server: ServerSide::PerRun {
            name: "tar | nc -l",
            port,
            command: Box::new(move |link, path| {
                let mut command = link.server_command("sh");
                command
                    .arg("-c")
                    .arg("tar -C \"$1\" -cf - \"$2\" | nc -N -l \"$3\" \"$4\"")
                    .arg("sh")
                    .arg(&served)
                    .arg(path)
                    .arg(link.server_addr.to_string())
                    .arg(port.to_string());
                command
            }),
        },
        client: Box::new(move |link, _, copies| {
            let mut command = link.client_command("sh");
            command
                .arg("-c")
                .arg("nc -d \"$1\" \"$2\" | tar -C \"$3\" -xf -")
                .arg("sh")
                .arg(link.server_addr.to_string())
                .arg(port.to_string())
                .arg(copies);
            command
        }),
        trees: true,
        writes: true,
        own_timer: None,
    })
}

/// iperf3's own transfer time, from its JSON (`end.sum_received.seconds`).
fn iperf3_seconds(stdout: &[u8]) -> Result<f64> {
    let value: serde_json::Value =
        serde_json::from_slice(stdout).map_err(|source| Error::Json {
            what: "iperf3's JSON",
            source,
        })?;
    value["end"]["sum_received"]["seconds"]
        .as_f64()
        .ok_or_else(|| Error::program("iperf3", "its JSON has no end.sum_received.seconds"))
}

/// Fig 5's contenders: a `flexio serve` per sender mechanism, a client per
/// receiver mechanism, one stream each (one socket, as the OS project's).
pub(super) fn fig5(
    link: &Link,
    options: &HostBenchOptions,
    served: &Path,
    logs: &Path,
) -> Result<Vec<Contender>> {
    let mut contenders = Vec::new();
    for send in [
        MechanismName::ReadWrite,
        MechanismName::Mmap,
        MechanismName::Sendfile,
    ] {
        let name = format!("flexio serve --via {send}");
        let server = flexio_serve(
            link,
            options,
            served,
            logs,
            &name,
            &["--via", send.as_str(), "--workers", "2"],
        )?;
        for receive in [MechanismName::ReadWrite, MechanismName::Splice] {
            let extra = ["--streams", "1", "--no-verify", "--via", receive.as_str()]
                .map(String::from)
                .to_vec();
            contenders.push(Contender {
                name: format!("send {send} / receive {receive}"),
                kind: HostContender::Fig5 { send, receive },
                server: ServerSide::Running(server.clone()),
                client: flexio_get(&options.flexio, server.port, extra),
                trees: true,
                writes: true,
                own_timer: None,
            });
        }
    }
    Ok(contenders)
}

/// The sizes Fig 6 sweeps.
pub(super) const FIG6_SIZES: [usize; 6] =
    [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20];

/// Fig 6's contenders: the sender's read-write buffer size and mmap map
/// size, each a `flexio serve --chunk`; the receiver is the default
/// (splice), one stream.
pub(super) fn fig6(
    link: &Link,
    options: &HostBenchOptions,
    served: &Path,
    logs: &Path,
) -> Result<Vec<Contender>> {
    let mut contenders = Vec::new();
    for (send, what) in [
        (MechanismName::ReadWrite, "buffer"),
        (MechanismName::Mmap, "map"),
    ] {
        for size in FIG6_SIZES {
            let name = format!("{send} {what} {}", flexio::format_bytes(size as u64));
            let chunk = size.to_string();
            let server = flexio_serve(
                link,
                options,
                served,
                logs,
                &name,
                &["--via", send.as_str(), "--chunk", &chunk, "--workers", "2"],
            )?;
            let extra = ["--streams", "1", "--no-verify"].map(String::from).to_vec();
            contenders.push(Contender {
                name,
                kind: HostContender::Fig6 {
                    send,
                    chunk: size as u64,
                },
                server: ServerSide::Running(server.clone()),
                client: flexio_get(&options.flexio, server.port, extra),
                trees: false,
                writes: true,
                own_timer: None,
            });
        }
    }
    Ok(contenders)
}
