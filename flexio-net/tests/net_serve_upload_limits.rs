//! What an upload may cost the server's disk: a disk that fills during a
//! PUT answers 507 as the check before it does; a ranged upload's declared
//! total is checked against the free space; and the unfinished ranged
//! uploads a client may leave in a directory are bounded.

use crate::common;

use common::*;
use flexio_net::server::MAX_PARTIAL_UPLOADS;

const TOKEN: &str = "limits-token-0123456789";

fn put_piece(
    address: std::net::SocketAddr,
    target: &str,
    body: &[u8],
    range: &str,
    upload: &str,
) -> Response {
    let mut client = RawClient::connect(address);
    client.send(
        format!(
            "PUT {target} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nFlexio-Upload: {upload}\r\nContent-Range: {range}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    client.send(body);
    client.read_response(false)
}

#[test]
fn out_of_space_during_a_put_answers_507() {
    if !require_root("mounting a 4 MiB tmpfs to fill mid-upload") {
        return;
    }
    let mount = SmallTmpfs::mount("4m");
    let address = serve_with(mount.path(), |config| config.token = Some(TOKEN.into()));
    let body = pattern(3 << 20, 5);
    let response = put_onto_a_disk_that_fills(
        address,
        "/f",
        &format!("Bearer {TOKEN}"),
        &body,
        mount.path(),
    )
    .expect("an answer before the close");
    assert_eq!(response.status, 507, "{}", response.text());
    assert!(
        response.text().contains("Insufficient Storage"),
        "{}",
        response.text()
    );
    assert_eq!(names_in(mount.path()), vec!["filler".to_string()]);
}

#[test]
fn a_ranged_put_announcing_more_than_the_disk_gets_507_and_leaves_nothing() {
    let root = tempfile::tempdir().unwrap();
    let address = serve_with(root.path(), |config| config.token = Some(TOKEN.into()));
    let response = put_piece(
        address,
        "/huge",
        b"hello",
        &format!("bytes 0-4/{}", u64::MAX),
        "abc",
    );
    assert_eq!(response.status, 507, "{}", response.text());
    assert_eq!(names_in(root.path()), Vec::<String>::new());
}

#[test]
fn unfinished_ranged_uploads_per_directory_are_bounded() {
    let root = tempfile::tempdir().unwrap();
    let address = serve_with(root.path(), |config| config.token = Some(TOKEN.into()));
    for i in 0..MAX_PARTIAL_UPLOADS {
        let response = put_piece(address, &format!("/f{i}"), b"a", "bytes 0-0/2", "u");
        assert_eq!(response.status, 202, "{i}: {}", response.text());
    }
    let response = put_piece(address, "/one-more", b"a", "bytes 0-0/2", "u");
    assert_eq!(response.status, 507, "{}", response.text());
    assert!(
        response.text().contains("unfinished uploads"),
        "{}",
        response.text()
    );
    // An upload already begun may still finish.
    let response = put_piece(address, "/f0", b"b", "bytes 1-1/2", "u");
    assert_eq!(response.status, 201, "{}", response.text());
    assert_eq!(std::fs::read(root.path().join("f0")).unwrap(), b"ab");
}
