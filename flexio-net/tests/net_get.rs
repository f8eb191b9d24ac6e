//! `flexio get` over loopback: from `flexio serve` (one stream and many,
//! verified against the manifest), from `python3 -m http.server` (no
//! ranges: one stream) and from nginx (ranges, sendfile on).

use crate::common;

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{names_in, pattern, serve};
use flexio_net::client::{get, GetOptions};

const SIZES: [usize; 5] = [0, 1, 4095, (1 << 20) + 1, 8 << 20];

fn options(streams: usize) -> GetOptions {
    GetOptions {
        streams,
        piece_size: 1 << 20,
        timeout: Duration::from_secs(20),
        ..GetOptions::default()
    }
}

#[test]
fn get_from_flexio_serve_is_byte_exact_and_verified_with_one_and_many_streams() {
    let served = tempfile::tempdir().unwrap();
    for (i, size) in SIZES.iter().enumerate() {
        std::fs::write(
            served.path().join(format!("f{size}")),
            pattern(*size, i as u64),
        )
        .unwrap();
    }
    let address = serve(served.path());
    let out = tempfile::tempdir().unwrap();
    for streams in [1, 4] {
        for (i, size) in SIZES.iter().enumerate() {
            let dest = out.path().join(format!("f{size}-{streams}"));
            let report = get(
                &format!("http://{address}/f{size}"),
                Some(&dest),
                &options(streams),
            )
            .unwrap_or_else(|e| panic!("f{size} over {streams}: {e}"));
            assert!(
                std::fs::read(&dest).unwrap() == pattern(*size, i as u64),
                "f{size} over {streams}"
            );
            assert_eq!(report.bytes, *size as u64);
            assert!(report.verified, "f{size}: the manifest was not checked");
            if streams == 4 && *size == 8 << 20 {
                assert!(report.ranged);
                assert_eq!(report.streams, 4);
                assert_eq!(report.requests, 8);
                assert_eq!(report.mechanisms, vec!["splice".to_string()]);
            }
        }
    }
    // The destination may be a directory: the URL's name goes inside it.
    let into = tempfile::tempdir().unwrap();
    get(
        &format!("http://{address}/f1"),
        Some(into.path()),
        &options(2),
    )
    .unwrap();
    assert_eq!(names_in(into.path()), vec!["f1"]);
}

#[test]
fn get_of_a_url_with_no_file_name_asks_for_a_destination() {
    let served = tempfile::tempdir().unwrap();
    let address = serve(served.path());
    let error = get(&format!("http://{address}/"), None, &options(1)).unwrap_err();
    assert!(error.to_string().contains("give DEST"), "{error}");
    assert!(error.is_usage());
}

#[test]
fn get_from_python_http_server_falls_back_to_one_stream() {
    let served = tempfile::tempdir().unwrap();
    let data = pattern((3 << 20) + 17, 5);
    std::fs::write(served.path().join("file.bin"), &data).unwrap();
    if !common::optional_tool("python3") {
        return;
    }
    let (_server, port) = common::python_http_server(served.path());
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("file.bin");
    let report = get(
        &format!("http://{address}/file.bin"),
        Some(&dest),
        &options(4),
    )
    .unwrap();
    assert!(std::fs::read(&dest).unwrap() == data);
    assert!(!report.ranged);
    assert_eq!(report.streams, 1);
    assert!(
        report.note.as_deref().unwrap().contains("one stream"),
        "{:?}",
        report.note
    );
    assert!(!report.verified);

    // A tree from it: its listing is no manifest, so the tree is read
    // from the listing (it was "malformed manifest: expected value at line
    // 1 column 1", then a refusal); net_listing.rs holds the full cases.
    let tree = out.path().join("tree");
    let report =
        flexio_net::client::get_tree(&format!("http://{address}/"), &tree, &options(2)).unwrap();
    assert!(report.listing.is_some(), "{report:?}");
    assert_eq!(std::fs::read(tree.join("file.bin")).unwrap(), data);
}

/// The nginx program on the PATH or in an sbin directory, if an executable
/// one is installed (a non-executable file mounted over it, as
/// `.ci/without-peers` does, hides it).
fn nginx() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join("nginx"))
        .find(|path| {
            std::fs::metadata(path)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

fn start_nginx(binary: &Path, served: &Path, scratch: &Path, port: u16) -> Child {
    let config = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {s}/nginx.pid;\nerror_log {s}/error.log;\n\
         events {{ worker_connections 64; }}\n\
         http {{\n  access_log off;\n  sendfile on;\n  client_body_temp_path {s}/body;\n  proxy_temp_path {s}/proxy;\n  \
         fastcgi_temp_path {s}/fastcgi;\n  uwsgi_temp_path {s}/uwsgi;\n  scgi_temp_path {s}/scgi;\n  \
         server {{ listen 127.0.0.1:{port}; root {root}; }}\n}}\n",
        s = scratch.display(),
        root = served.display(),
    );
    std::fs::write(scratch.join("nginx.conf"), config).unwrap();
    Command::new(binary)
        .arg("-p")
        .arg(scratch)
        .arg("-e")
        .arg(scratch.join("error.log"))
        .arg("-c")
        .arg(scratch.join("nginx.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx starts")
}

#[test]
fn get_from_nginx_fetches_ranges_in_parallel() {
    let Some(binary) = nginx() else {
        common::skipped("nginx is not installed (apt-get install nginx-light)");
        return;
    };
    let served = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    // nginx's worker may drop privileges: let it read what it serves.
    for dir in [served.path(), scratch.path()] {
        std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let data = pattern((9 << 20) + 1, 8);
    std::fs::write(served.path().join("big"), &data).unwrap();
    let (_server, port) =
        common::start_peer(|port| start_nginx(&binary, served.path(), scratch.path(), port));
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let out = tempfile::tempdir().unwrap();
    for streams in [1, 3] {
        let dest = out.path().join(format!("big{streams}"));
        let report = get(
            &format!("http://{address}/big"),
            Some(&dest),
            &options(streams),
        )
        .unwrap();
        assert!(std::fs::read(&dest).unwrap() == data, "over {streams}");
        assert_eq!(report.ranged, streams > 1);
        assert_eq!(report.streams, streams);
        assert!(!report.verified);
    }
    let missing = get(
        &format!("http://{address}/nope"),
        Some(&out.path().join("nope")),
        &options(2),
    )
    .unwrap_err();
    assert!(missing.to_string().contains("404"), "{missing}");
    assert!(!out.path().join("nope").exists());
}

#[test]
fn every_socket_to_file_mechanism_fetches_the_same_bytes() {
    let served = tempfile::tempdir().unwrap();
    let data = pattern((2 << 20) + 333, 12);
    std::fs::write(served.path().join("f"), &data).unwrap();
    let address = serve(served.path());
    let out = tempfile::tempdir().unwrap();
    let mechanisms =
        flexio::MechanismName::serving(flexio::EndpointKind::Tcp, flexio::EndpointKind::File);
    assert!(mechanisms.contains(&flexio::MechanismName::Splice));
    for mechanism in mechanisms {
        for streams in [1, 3] {
            let dest = out.path().join(format!("{mechanism}-{streams}"));
            let options = GetOptions {
                mechanism,
                ..options(streams)
            };
            let report = get(&format!("http://{address}/f"), Some(&dest), &options)
                .unwrap_or_else(|e| panic!("{mechanism} over {streams}: {e}"));
            assert!(
                std::fs::read(&dest).unwrap() == data,
                "{mechanism} over {streams}"
            );
            assert!(report.verified);
            // Each stream's O_DIRECT is its own (a description opened
            // again through /proc): direct runs on several streams too.
            if mechanism == flexio::MechanismName::Direct && streams > 1 {
                assert_eq!(report.streams, streams, "{report:?}");
                assert!(report.note.is_none(), "{report:?}");
            }
        }
    }
}

#[test]
fn a_tree_comes_whole_byte_exact_with_links_modes_and_times() {
    use std::os::unix::fs::PermissionsExt;
    let served = tempfile::tempdir().unwrap();
    let top = served.path().join("tree");
    std::fs::create_dir_all(top.join("a/b/c")).unwrap();
    std::fs::create_dir_all(top.join("empty")).unwrap();
    for (i, size) in SIZES.iter().enumerate() {
        std::fs::write(top.join(format!("a/f{size}")), pattern(*size, i as u64)).unwrap();
    }
    for i in 0..50 {
        std::fs::write(top.join(format!("a/b/c/small{i}")), format!("small {i}")).unwrap();
    }
    std::fs::set_permissions(top.join("a/f1"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink("../f1", top.join("a/b/up")).unwrap();
    std::os::unix::fs::symlink("c/small3", top.join("a/b/down")).unwrap();
    let address = serve(served.path());
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("copy");
    let report =
        flexio_net::client::get_tree(&format!("http://{address}/tree/"), &dest, &options(3))
            .unwrap();
    assert_eq!(report.files, 5 + 50);
    assert_eq!(report.symlinks, 2);
    assert_eq!(report.directories, 4);
    for (i, size) in SIZES.iter().enumerate() {
        assert!(
            std::fs::read(dest.join(format!("a/f{size}"))).unwrap() == pattern(*size, i as u64)
        );
    }
    assert_eq!(
        std::fs::read(dest.join("a/b/c/small49")).unwrap(),
        b"small 49"
    );
    assert_eq!(
        std::fs::read_link(dest.join("a/b/up")).unwrap(),
        Path::new("../f1")
    );
    assert_eq!(std::fs::read(dest.join("a/b/down")).unwrap(), b"small 3");
    assert!(dest.join("empty").is_dir());
    let mode = std::fs::metadata(dest.join("a/f1"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let mtime = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    assert_eq!(mtime(&dest.join("a/f4095")), mtime(&top.join("a/f4095")));
    // Again into the same place: unchanged files (size and mtime) are not
    // fetched again; a changed one is.
    std::fs::write(dest.join("a/f1"), b"X").unwrap();
    let again =
        flexio_net::client::get_tree(&format!("http://{address}/tree/"), &dest, &options(2))
            .unwrap();
    assert_eq!((again.files, again.unchanged), (1, 54));
    assert!(std::fs::read(dest.join("a/f1")).unwrap() == pattern(1, 1));
    assert_eq!(names_in(&dest.join("a")), names_in(&top.join("a")));
}

/// A ranged server of `data` with a strong ETag that records the first
/// byte of every range asked for, and cuts every body at or past
/// `cut_from` halfway (a dropped link) while `cutting` is set.
struct Flaky {
    address: SocketAddr,
    asked: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
    cutting: std::sync::Arc<std::sync::atomic::AtomicBool>,
    version: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

fn flaky_server(versions: Vec<Vec<u8>>, cut_from: usize) -> Flaky {
    use std::io::{Read, Write};
    use std::sync::atomic::Ordering;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let flaky = Flaky {
        address: listener.local_addr().unwrap(),
        asked: Default::default(),
        cutting: std::sync::Arc::new(true.into()),
        version: Default::default(),
    };
    let (asked, cutting, version) = (
        flaky.asked.clone(),
        flaky.cutting.clone(),
        flaky.version.clone(),
    );
    let versions = std::sync::Arc::new(versions);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(200) {
            let Ok(mut stream) = stream else { return };
            let (asked, cutting, version, versions) = (
                asked.clone(),
                cutting.clone(),
                version.clone(),
                versions.clone(),
            );
            std::thread::spawn(move || loop {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let current = version.load(Ordering::SeqCst);
                let data = &versions[current];
                let etag = format!("\"v{current}\"");
                let (first, last) = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Range: bytes="))
                    .and_then(|r| r.split_once('-'))
                    .map(|(a, b)| {
                        (
                            a.parse::<usize>().unwrap(),
                            b.parse::<usize>().unwrap().min(data.len() - 1),
                        )
                    })
                    .unwrap();
                asked.lock().unwrap().push(first);
                let stale = head
                    .lines()
                    .any(|l| l.starts_with("If-Range:") && !l.ends_with(&etag));
                let (status, range, body) = if stale {
                    ("200 OK", String::new(), &data[..])
                } else {
                    (
                        "206 Partial Content",
                        format!("Content-Range: bytes {first}-{last}/{}\r\n", data.len()),
                        &data[first..=last],
                    )
                };
                let reply = format!(
                    "HTTP/1.1 {status}\r\nETag: {etag}\r\n{range}Content-Length: {}\r\n\r\n",
                    body.len()
                );
                let cut = cutting.load(Ordering::SeqCst) && first >= cut_from;
                let sent = if cut { &body[..body.len() / 2] } else { body };
                if stream.write_all(reply.as_bytes()).is_err()
                    || stream.write_all(sent).is_err()
                    || cut
                {
                    return;
                }
            });
        }
    });
    flaky
}

#[test]
fn resume_fetches_only_the_missing_pieces_and_starts_afresh_for_a_new_version() {
    use std::sync::atomic::Ordering;
    let piece = 1usize << 20;
    let (old, new) = (pattern(4 * piece + 5, 21), pattern(4 * piece + 5, 22));
    let flaky = flaky_server(vec![old.clone(), new.clone()], 2 * piece);
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("file");
    let url = format!("http://{}/file", flaky.address);
    let resume = GetOptions {
        resume: true,
        ..options(1)
    };

    // A link that drops in the third piece: the first two are kept.
    let error = get(&url, Some(&dest), &resume).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("the same get run again fetches only the rest"),
        "{error}"
    );
    assert!(!dest.exists());
    assert_eq!(
        names_in(out.path()),
        vec![".file.flexio-journal", ".file.flexio-partial"]
    );

    // Run again: only the first piece (the probe) and the missing ones.
    flaky.cutting.store(false, Ordering::SeqCst);
    flaky.asked.lock().unwrap().clear();
    let report = get(
        &url,
        Some(&dest),
        &GetOptions {
            resume: true,
            ..options(2)
        },
    )
    .unwrap();
    assert!(std::fs::read(&dest).unwrap() == old);
    assert_eq!(report.resumed_bytes, piece as u64);
    let mut asked = flaky.asked.lock().unwrap().clone();
    asked.sort();
    assert_eq!(asked, vec![0, 2 * piece, 3 * piece, 4 * piece]);
    assert_eq!(names_in(out.path()), vec!["file"]);

    // A partial from the old version, then the file changes: all afresh.
    flaky.cutting.store(true, Ordering::SeqCst);
    std::fs::remove_file(&dest).unwrap();
    get(&url, Some(&dest), &resume).unwrap_err();
    flaky.version.store(1, Ordering::SeqCst);
    flaky.cutting.store(false, Ordering::SeqCst);
    let report = get(&url, Some(&dest), &resume).unwrap();
    assert_eq!(report.resumed_bytes, 0);
    assert!(std::fs::read(&dest).unwrap() == new);
    assert_eq!(names_in(out.path()), vec!["file"]);
}

/// A first `--resume` get of `old` (4 MiB + 5 bytes) from `flaky` that
/// drops in the third piece: the first two pieces kept. The journal's
/// path.
fn stopped_after_two_pieces(flaky: &Flaky, dest: &Path) -> PathBuf {
    use std::sync::atomic::Ordering;
    flaky.cutting.store(true, Ordering::SeqCst);
    let url = format!("http://{}/file", flaky.address);
    let resume = GetOptions {
        resume: true,
        ..options(1)
    };
    get(&url, Some(dest), &resume).unwrap_err();
    flaky.cutting.store(false, Ordering::SeqCst);
    flaky.asked.lock().unwrap().clear();
    dest.with_file_name(".file.flexio-journal")
}

/// Issue 39: a journal edited to claim pieces that never arrived failed
/// every rerun ("unexpected end of file"), and a journaled piece whose
/// bytes a power cut lost (zeros) was kept and failed on its BLAKE3 run
/// after run. Each journaled piece is now read back and hashed on resume:
/// one that does not hold what was journaled is fetched again, and one
/// rerun is whole.
#[test]
fn resume_fetches_again_the_journaled_pieces_whose_bytes_are_not_there() {
    let piece = 1usize << 20;
    let old = pattern(4 * piece + 5, 31);
    let flaky = flaky_server(vec![old.clone()], 2 * piece);
    let url = format!("http://{}/file", flaky.address);
    let resume = GetOptions {
        resume: true,
        ..options(2)
    };
    let hash = |bytes: &[u8]| blake3::hash(bytes).to_hex().to_string();
    let zeros = vec![0u8; piece];

    // Pieces that never arrived, claimed: the journal's last line (the
    // second piece's) copied for the third and fourth, and lines with the
    // hash of the bytes the third should hold (the file ends before it)
    // and of zeros.
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("file");
    let journal = stopped_after_two_pieces(&flaky, &dest);
    let mut edited = std::fs::read_to_string(&journal).unwrap();
    let second = edited.lines().last().unwrap().to_string();
    let rest = second.strip_prefix(&piece.to_string()).unwrap();
    for k in [2, 3] {
        edited += &format!("{}{rest}\n", k * piece);
    }
    edited += &format!(
        "{}\t{piece}\t{}\n",
        2 * piece,
        hash(&old[2 * piece..3 * piece])
    );
    edited += &format!("{}\t{piece}\t{}\n", 3 * piece, hash(&zeros));
    std::fs::write(&journal, edited).unwrap();
    let report = get(&url, Some(&dest), &resume).unwrap();
    assert!(std::fs::read(&dest).unwrap() == old);
    assert_eq!(report.resumed_bytes, piece as u64);
    let mut asked = flaky.asked.lock().unwrap().clone();
    asked.sort();
    assert_eq!(asked, vec![0, 2 * piece, 3 * piece, 4 * piece]);
    assert_eq!(names_in(out.path()), vec!["file"]);

    // A journaled piece whose bytes became zeros (written, journaled,
    // lost in a power cut): fetched again in the one rerun.
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("file");
    stopped_after_two_pieces(&flaky, &dest);
    let partial = out.path().join(".file.flexio-partial");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&partial)
        .unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, &zeros, piece as u64).unwrap();
    drop(file);
    let report = get(&url, Some(&dest), &resume).unwrap();
    assert!(std::fs::read(&dest).unwrap() == old);
    assert_eq!(report.resumed_bytes, 0);
    assert!(
        report
            .note
            .as_deref()
            .is_some_and(|n| n.contains("1 journaled pieces")),
        "{:?}",
        report.note
    );
    let mut asked = flaky.asked.lock().unwrap().clone();
    asked.sort();
    assert_eq!(asked, vec![0, piece, 2 * piece, 3 * piece, 4 * piece]);
}

/// Issue 39: a journal that is a FIFO hung `get --resume` (opening it for
/// writing waits for a reader). It is refused at once, named.
#[test]
fn a_resume_journal_that_is_a_fifo_is_refused_without_waiting() {
    let piece = 1usize << 20;
    let flaky = flaky_server(vec![pattern(2 * piece, 41)], usize::MAX);
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("file");
    let journal = out.path().join(".file.flexio-journal");
    let made = std::process::Command::new("mkfifo")
        .arg(&journal)
        .status()
        .unwrap();
    assert!(made.success());
    let url = format!("http://{}/file", flaky.address);
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let resume = GetOptions {
            resume: true,
            ..options(1)
        };
        let _ = sender.send(get(&url, Some(&dest), &resume).map(|_| ()));
    });
    let error = receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("get --resume hung on a FIFO journal")
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains(".file.flexio-journal: not a regular file"),
        "{error}"
    );
}

/// A tree of small files in subdirectories comes as one `?tar` per
/// top-level directory, byte-exact with modes and mtimes; a large file and
/// the files at the top still come alone; a second get into the same place
/// fetches the changed file alone.
#[test]
fn small_files_of_a_tree_come_as_one_tar_stream_per_directory() {
    use std::os::unix::fs::PermissionsExt;
    let top = tempfile::tempdir().unwrap();
    let tree = top.path().join("tree");
    for d in 0..5u64 {
        let dir = tree.join(format!("d{d}/deeper"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..30u64 {
            std::fs::write(
                tree.join(format!("d{d}/f{f}")),
                pattern((f * 97) as usize, d * 100 + f),
            )
            .unwrap();
        }
        std::fs::write(dir.join("g"), pattern(4096, d)).unwrap();
    }
    std::fs::write(tree.join("d0/mode600"), b"private").unwrap();
    std::fs::set_permissions(
        tree.join("d0/mode600"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::os::unix::fs::symlink("f1", tree.join("d1/link")).unwrap();
    std::fs::create_dir_all(tree.join("big")).unwrap();
    std::fs::write(tree.join("big/large"), pattern(3 << 20, 7)).unwrap();
    std::fs::write(tree.join("big/small"), b"s").unwrap();
    std::fs::write(tree.join("top"), b"at the top").unwrap();
    let address = serve(top.path());
    let dest = top.path().join("copy");
    let report =
        flexio_net::client::get_tree(&format!("http://{address}/tree/"), &dest, &options(3))
            .unwrap();
    assert_eq!(report.tar_streams, 5, "{report:?}");
    assert_eq!(report.files, 5 * 31 + 1 + 2 + 1);
    let same = std::process::Command::new("diff")
        .arg("-r")
        .arg("--no-dereference")
        .arg(&tree)
        .arg(&dest)
        .status()
        .unwrap();
    assert!(same.success());
    let mode = std::fs::metadata(dest.join("d0/mode600"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let mtime = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    assert_eq!(mtime(&dest.join("d3/f7")), mtime(&tree.join("d3/f7")));
    std::fs::write(dest.join("d2/f3"), b"changed").unwrap();
    let again =
        flexio_net::client::get_tree(&format!("http://{address}/tree/"), &dest, &options(3))
            .unwrap();
    assert_eq!((again.files, again.tar_streams), (1, 0));
    assert!(std::fs::read(dest.join("d2/f3")).unwrap() == pattern(3 * 97, 203));
    // The staged directories left nothing hidden beside them; with
    // --fsync (each staged file and directory synced) the tree is the same.
    let hidden = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with('.')
            })
            .count()
    };
    assert_eq!(hidden(&dest), 0);
    let durable = top.path().join("durable");
    let synced = GetOptions {
        fsync: true,
        ..options(3)
    };
    flexio_net::client::get_tree(&format!("http://{address}/tree/"), &durable, &synced).unwrap();
    let same = std::process::Command::new("diff")
        .arg("-r")
        .arg("--no-dereference")
        .arg(&tree)
        .arg(&durable)
        .status()
        .unwrap();
    assert!(same.success());
    assert_eq!(hidden(&durable), 0);
}

/// Issue 39: a symlink target that is not UTF-8 arrived as U+FFFD (the
/// manifest carried it as lossy text). It is percent-encoded and flagged
/// in the manifest, and arrives byte for byte; a UTF-8 one as before.
#[test]
fn a_symlink_target_that_is_not_utf8_arrives_byte_for_byte() {
    use std::os::unix::ffi::OsStrExt;
    let served = tempfile::tempdir().unwrap();
    let top = served.path().join("tree");
    std::fs::create_dir(&top).unwrap();
    let latin1 = std::ffi::OsStr::from_bytes(b"caf\xe9 %41\xff");
    std::fs::write(top.join("plain"), b"x").unwrap();
    std::os::unix::fs::symlink(latin1, top.join("latin1")).unwrap();
    std::os::unix::fs::symlink("caf\u{e9}", top.join("utf8")).unwrap();
    let address = serve(served.path());
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("copy");
    let report =
        flexio_net::client::get_tree(&format!("http://{address}/tree/"), &dest, &options(1))
            .unwrap();
    assert_eq!(report.symlinks, 2);
    assert_eq!(
        std::fs::read_link(dest.join("latin1")).unwrap().as_os_str(),
        latin1
    );
    assert_eq!(
        std::fs::read_link(dest.join("utf8")).unwrap(),
        Path::new("caf\u{e9}")
    );
}
