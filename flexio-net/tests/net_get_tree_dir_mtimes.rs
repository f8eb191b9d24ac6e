//! A tree `get` gives each directory the mtime the server lists for it,
//! as `rsync -a` does, set once everything inside is written so that it
//! sticks: from `flexio serve`'s manifest (to the nanosecond; a directory
//! fetched by one tar stream and one fetched file by file) and from
//! nginx's JSON listing (seconds), where this machine has nginx.

use crate::common;

use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::serve;
use flexio_net::client::{get_tree, GetOptions};

/// The directories below `root`, deepest last.
const DIRECTORIES: [&str; 4] = ["few", "few/inner", "small", "small/deeper"];

/// A tree whose directories have old mtimes, each `2020-01-0N` plus some
/// nanoseconds: `small` (two small files, fetched as one tar stream) and
/// `few` (one large file and a symlink, fetched file by file).
fn old_tree(root: &Path) {
    for dir in DIRECTORIES {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(root.join("small/a"), b"a").unwrap();
    std::fs::write(root.join("small/deeper/b"), b"b").unwrap();
    std::fs::write(root.join("few/big"), vec![7u8; 2 << 20]).unwrap();
    std::fs::write(root.join("few/inner/c"), b"c").unwrap();
    std::os::unix::fs::symlink("big", root.join("few/link")).unwrap();
    // Deepest first, so no later change moves one already set.
    for (i, dir) in DIRECTORIES.iter().enumerate().rev() {
        let when = UNIX_EPOCH + Duration::new(1_577_836_800 + 86_400 * i as u64, 123_456_789);
        std::fs::File::open(root.join(dir))
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
}

/// Each directory's mtime, seconds and nanoseconds.
fn mtimes(root: &Path) -> Vec<(String, i64, i64)> {
    DIRECTORIES
        .iter()
        .map(|dir| {
            let meta = std::fs::metadata(root.join(dir)).unwrap();
            (dir.to_string(), meta.mtime(), meta.mtime_nsec())
        })
        .collect()
}

fn options() -> GetOptions {
    GetOptions {
        streams: 2,
        timeout: Duration::from_secs(10),
        ..GetOptions::default()
    }
}

#[test]
fn a_tree_get_from_flexio_serve_restores_directory_mtimes() {
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    old_tree(&served);
    let address = serve(&served);
    let dest = work.path().join("out");
    let report = get_tree(&format!("http://{address}/"), &dest, &options()).unwrap();
    assert_eq!(report.tar_streams, 1, "{report:?}");
    assert_eq!(mtimes(&dest), mtimes(&served));
    // Again into the same tree (every file unchanged): still so.
    get_tree(&format!("http://{address}/"), &dest, &options()).unwrap();
    assert_eq!(mtimes(&dest), mtimes(&served));
}

#[test]
fn a_tree_get_from_nginx_json_restores_directory_mtimes_to_the_second() {
    if !common::optional_tool("nginx") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    old_tree(&served);
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let temp = work.path().join("nginx-temp");
    std::fs::create_dir_all(&temp).unwrap();
    let config = format!(
        "daemon off; master_process off; pid {work}/nginx.pid; error_log stderr;
events {{}}
http {{
  access_log off;
  client_body_temp_path {temp}; proxy_temp_path {temp}; fastcgi_temp_path {temp};
  uwsgi_temp_path {temp}; scgi_temp_path {temp};
  server {{
    listen 127.0.0.1:{port};
    location / {{ root {root}; autoindex on; autoindex_format json; }}
  }}
}}
",
        work = work.path().display(),
        temp = temp.display(),
        root = served.display(),
    );
    let path = work.path().join("nginx.conf");
    std::fs::write(&path, config).unwrap();
    let mut nginx = Command::new("nginx")
        .args([
            "-c",
            &path.to_string_lossy(),
            "-p",
            &work.path().to_string_lossy(),
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nginx never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    let dest = work.path().join("out");
    let got = get_tree(&format!("http://127.0.0.1:{port}/"), &dest, &options());
    let _ = nginx.kill();
    let _ = nginx.wait();
    got.unwrap();
    let seconds = |root: &Path| -> Vec<(String, i64)> {
        mtimes(root).into_iter().map(|(d, s, _)| (d, s)).collect()
    };
    assert_eq!(seconds(&dest), seconds(&served));
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!(seconds(&dest).iter().all(|(_, s)| *s < now - 86_400));
}
