//! `flexio serve` as crawlers and mirrors see it: a name with a tab is
//! linked percent-encoded, served and fetched back byte-exact; a symlink a
//! GET would refuse is shown, not linked; a directory's `index.html` is
//! served unless `?list` asks for the listing; and `wget -r`, `lftp
//! mirror`, `rclone copy` and `aria2c` take the tree without an error
//! (wget, lftp and rclone are installed by `.ci/run` and required under
//! FLEXIO_TEST_PRIVILEGED=1; aria2c, which `.ci/without-peers` hides, is
//! skipped with a reason where missing).

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{optional_tool, require_tool, serve_with, RawClient};
use flexio_net::client::{get_tree, GetOptions};

const TAB_NAME: &str = "a\tb";

/// `root` with a file named with a tab, one with a newline in a
/// subdirectory, a plain file, a symlink to it, a symlink to a directory,
/// and a symlink out of the root to `secret`.
fn tree(top: &Path) -> std::path::PathBuf {
    let root = top.join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(top.join("secret"), b"secret").unwrap();
    std::fs::write(root.join(TAB_NAME), b"tab bytes\n").unwrap();
    std::fs::write(root.join("sub/c\nd"), b"newline bytes\n").unwrap();
    std::fs::write(root.join("plain"), b"plain bytes\n").unwrap();
    std::os::unix::fs::symlink("plain", root.join("inside")).unwrap();
    std::os::unix::fs::symlink("sub", root.join("dir-inside")).unwrap();
    std::os::unix::fs::symlink("../secret", root.join("out")).unwrap();
    root
}

fn options() -> GetOptions {
    GetOptions {
        streams: 2,
        timeout: Duration::from_secs(10),
        ..GetOptions::default()
    }
}

#[test]
fn a_name_with_a_tab_is_linked_percent_encoded_served_and_fetched_back() {
    let top = tempfile::tempdir().unwrap();
    let root = tree(top.path());
    let address = serve_with(&root, |_| {});
    let mut client = RawClient::connect(address);
    let listing = client.get("/", "").text();
    assert!(listing.contains("href=\"./a%09b\""), "{listing}");
    let served = client.get("/a%09b", "");
    assert_eq!(
        (served.status, served.body.as_slice()),
        (200, &b"tab bytes\n"[..])
    );
    assert_eq!(client.get("/sub/c%0Ad", "").status, 200);
    assert_eq!(client.get("/a%00b", "").status, 400);
    let manifest = client.get("/?manifest", "").text();
    assert!(
        manifest.contains("\"path\":\"a%09b\",\"path_percent_encoded\":true"),
        "{manifest}"
    );

    let dest = top.path().join("out");
    let report = get_tree(&format!("http://{address}/"), &dest, &options()).unwrap();
    assert_eq!(std::fs::read(dest.join(TAB_NAME)).unwrap(), b"tab bytes\n");
    assert_eq!(
        std::fs::read(dest.join("sub/c\nd")).unwrap(),
        b"newline bytes\n"
    );
    assert_eq!(report.files, 3, "{report:?}");
}

#[test]
fn symlinks_are_listed_as_a_get_of_them_answers() {
    let top = tempfile::tempdir().unwrap();
    let root = tree(top.path());
    let refusing = serve_with(&root, |_| {});
    let mut client = RawClient::connect(refusing);
    let listing = client.get("/", "").text();
    for name in ["inside", "dir-inside", "out"] {
        assert!(!listing.contains(&format!("href=\"./{name}")), "{listing}");
        assert!(
            listing.contains(&format!("<li>{name} — symlink, not served")),
            "{listing}"
        );
        assert_eq!(client.get(&format!("/{name}"), "").status, 403, "{name}");
    }
    // The manifest still names each link, so that a flexio get makes it.
    let dest = top.path().join("links");
    let report = get_tree(&format!("http://{refusing}/"), &dest, &options()).unwrap();
    assert_eq!(
        std::fs::read_link(dest.join("inside")).unwrap(),
        Path::new("plain")
    );
    assert_eq!(report.escaping_links, ["out"], "{report:?}");

    let following = serve_with(&root, |config| config.follow_symlinks = true);
    let mut client = RawClient::connect(following);
    let listing = client.get("/", "").text();
    assert!(listing.contains("href=\"./inside\""), "{listing}");
    assert!(listing.contains("href=\"./dir-inside/\""), "{listing}");
    assert!(!listing.contains("href=\"./out"), "{listing}");
    assert_eq!(client.get("/inside", "").status, 200);
    assert_eq!(client.get("/dir-inside/", "").status, 200);
    assert_eq!(client.get("/out", "").status, 403);
}

#[test]
fn a_directory_with_index_html_serves_it_unless_the_listing_is_asked() {
    let top = tempfile::tempdir().unwrap();
    let root = top.path().join("root");
    std::fs::create_dir_all(root.join("site")).unwrap();
    let page = b"<html><body><a href=\"other\">other</a></body></html>\n";
    std::fs::write(root.join("site/index.html"), page).unwrap();
    std::fs::write(root.join("site/other"), b"other\n").unwrap();
    std::fs::write(root.join("index.html"), b"top page\n").unwrap();
    let address = serve_with(&root, |_| {});
    let mut client = RawClient::connect(address);

    let served = client.get("/site/", "");
    assert_eq!((served.status, served.body.as_slice()), (200, &page[..]));
    assert_eq!(
        served.header("Content-Type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(client.get("/", "").body, b"top page\n");
    for target in ["/site/?list", "/site/?list="] {
        let listing = client.get(target, "").text();
        assert!(listing.contains("href=\"./index.html\""), "{listing}");
        assert!(listing.contains("href=\"./other\""), "{listing}");
    }
    for (target, location) in [("/site", "/site/"), ("/site?list", "/site/?list")] {
        let moved = client.get(target, "");
        assert_eq!(moved.status, 301, "{target}");
        assert_eq!(moved.header("Location"), Some(location), "{target}");
    }
    client.send(b"HEAD /site/ HTTP/1.1\r\nHost: x\r\n\r\n");
    let head = client.read_response(true);
    let length = page.len().to_string();
    assert_eq!(head.header("Content-Length"), Some(length.as_str()));

    // A flexio get of the tree asks for the manifest, not the page.
    let dest = top.path().join("out");
    let report = get_tree(&format!("http://{address}/site/"), &dest, &options()).unwrap();
    assert_eq!(report.files, 2, "{report:?}");
    assert_eq!(std::fs::read(dest.join("other")).unwrap(), b"other\n");
}

/// Runs a peer with its output kept for the failure message.
fn run(command: &mut Command) -> std::process::Output {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?} exited {:?}\n{}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// What every peer that mirrors the tree must have fetched: the files
/// GET serves, the tab kept in the name; never the links GET refuses.
fn assert_mirrored(out: &Path) {
    assert_eq!(std::fs::read(out.join(TAB_NAME)).unwrap(), b"tab bytes\n");
    assert_eq!(std::fs::read(out.join("plain")).unwrap(), b"plain bytes\n");
    assert_eq!(
        std::fs::read(out.join("sub/c\nd")).unwrap(),
        b"newline bytes\n"
    );
    for refused in ["inside", "dir-inside", "out"] {
        assert!(
            !out.join(refused).exists(),
            "{refused} in {}",
            out.display()
        );
    }
}

#[test]
fn wget_recursive_takes_the_tree_and_exits_0() {
    if !require_tool("wget") {
        return;
    }
    let top = tempfile::tempdir().unwrap();
    let address = serve_with(&tree(top.path()), |_| {});
    let out = top.path().join("out");
    run(Command::new("wget")
        .args([
            "-r",
            "-np",
            "-nH",
            "-q",
            "--restrict-file-names=nocontrol",
            "-P",
        ])
        .arg(&out)
        .arg(format!("http://{address}/")));
    assert_mirrored(&out);
}

#[test]
fn lftp_mirror_takes_the_tree_and_exits_0() {
    if !require_tool("lftp") {
        return;
    }
    let top = tempfile::tempdir().unwrap();
    let address = serve_with(&tree(top.path()), |_| {});
    let out = top.path().join("out");
    let script = format!(
        "set net:max-retries 1; set net:timeout 10; mirror http://{address}/ {}",
        out.display()
    );
    run(Command::new("lftp").arg("-c").arg(script));
    assert_mirrored(&out);
}

#[test]
fn rclone_copy_takes_the_tree() {
    if !require_tool("rclone") {
        return;
    }
    let top = tempfile::tempdir().unwrap();
    let address = serve_with(&tree(top.path()), |_| {});
    let out = top.path().join("out");
    run(Command::new("rclone")
        .args(["copy", "--config", "/dev/null", "--http-url"])
        .arg(format!("http://{address}/"))
        .arg(":http:")
        .arg(&out));
    assert_mirrored(&out);
}

#[test]
fn aria2c_fetches_a_file_named_with_a_tab() {
    if !optional_tool("aria2c") {
        return;
    }
    let top = tempfile::tempdir().unwrap();
    let address = serve_with(&tree(top.path()), |_| {});
    let out = top.path().join("out");
    run(Command::new("aria2c")
        .args(["-q", "--allow-overwrite=true", "-d"])
        .arg(&out)
        .args(["-o", "fetched"])
        .arg(format!("http://{address}/a%09b")));
    assert_eq!(std::fs::read(out.join("fetched")).unwrap(), b"tab bytes\n");
}

/// A tree put carries the tab and newline names too: PUT and MKCOL take
/// them percent-encoded, a file of several pieces included.
#[test]
fn a_tree_put_carries_names_with_control_characters() {
    const TOKEN: &str = "interop-token-of-enough-length";
    let top = tempfile::tempdir().unwrap();
    let served = top.path().join("served");
    std::fs::create_dir(&served).unwrap();
    let address = serve_with(&served, |config| config.token = Some(TOKEN.into()));
    let source = top.path().join("source");
    std::fs::create_dir_all(source.join("d\tir")).unwrap();
    std::fs::write(source.join(TAB_NAME), b"tab bytes\n").unwrap();
    let big = common::pattern(250_000, 3);
    std::fs::write(source.join("d\tir/big\nname"), &big).unwrap();
    let options = flexio_net::client::PutOptions {
        streams: 2,
        piece: 100_000,
        ..Default::default()
    };
    let url = format!("http://{address}/up/");
    let report = flexio_net::client::put_tree(&source, &url, TOKEN, &options).unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(report.files, 2);
    assert_eq!(
        std::fs::read(served.join("up").join(TAB_NAME)).unwrap(),
        b"tab bytes\n"
    );
    assert!(std::fs::read(served.join("up/d\tir/big\nname")).unwrap() == big);
}
