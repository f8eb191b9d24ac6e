//! HTTP's preconditions (RFC 9110 §13) over loopback: each one that does
//! not hold answers 412 on GET and on PUT and leaves the file as it was;
//! `If-None-Match: *` creates only; a condition that holds lets the
//! request through; an upload whose target changed while its body
//! arrived is not linked in.

use crate::common;

use std::time::Duration;

use common::*;

const TOKEN: &str = "preconditions-token-0123456789";
const LONG_AGO: &str = "Sat, 01 Jan 2000 00:00:00 GMT";

fn put(address: std::net::SocketAddr, target: &str, extra: &str, body: &[u8]) -> Response {
    let mut client = RawClient::connect(address);
    client.send(
        format!(
            "PUT {target} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    client.send(body);
    client.read_response(false)
}

fn setup() -> (tempfile::TempDir, std::net::SocketAddr, String) {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f"), b"original").unwrap();
    let address = serve_with(root.path(), |config| config.token = Some(TOKEN.into()));
    let etag = RawClient::connect(address)
        .get("/f", "")
        .header("ETag")
        .unwrap()
        .to_string();
    (root, address, etag)
}

#[test]
fn a_precondition_that_does_not_hold_answers_412_on_get() {
    let (_root, address, etag) = setup();
    let mut client = RawClient::connect(address);
    for extra in [
        "If-Match: \"not-the-tag\"\r\n".to_string(),
        format!("If-Match: W/{etag}\r\n"),
        format!("If-Unmodified-Since: {LONG_AGO}\r\n"),
        "If-Match: \"x\"\r\nRange: bytes=0-1\r\n".to_string(),
    ] {
        let response = client.get("/f", &extra);
        assert_eq!(response.status, 412, "{extra}: {}", response.text());
        assert!(response.text().contains("Precondition Failed"), "{extra}");
    }
    // On the same connection, conditions that hold.
    let response = client.get("/f", &format!("If-Match: {etag}\r\n"));
    assert_eq!(
        (response.status, response.body.as_slice()),
        (200, &b"original"[..])
    );
    let response = client.get(
        "/f",
        &format!("If-Match: *\r\nIf-Unmodified-Since: {LONG_AGO}\r\n"),
    );
    assert_eq!(
        response.status, 200,
        "If-Unmodified-Since is ignored beside If-Match"
    );
    for extra in [
        "If-None-Match: *\r\n".to_string(),
        format!("If-None-Match: W/{etag}\r\n"),
    ] {
        assert_eq!(client.get("/f", &extra).status, 304, "{extra}");
    }
    // A missing file is a 404 whatever the conditions.
    assert_eq!(client.get("/missing", "If-Match: *\r\n").status, 404);
}

#[test]
fn a_precondition_that_does_not_hold_answers_412_on_put_and_leaves_the_file() {
    let (root, address, etag) = setup();
    for extra in [
        "If-Match: \"not-the-tag\"\r\n".to_string(),
        format!("If-Unmodified-Since: {LONG_AGO}\r\n"),
        "If-None-Match: *\r\n".to_string(),
        format!("If-None-Match: {etag}\r\n"),
        format!("If-None-Match: \"other\", W/{etag}\r\n"),
    ] {
        let response = put(address, "/f", &extra, b"replaced");
        assert_eq!(response.status, 412, "{extra}: {}", response.text());
        assert_eq!(
            std::fs::read(root.path().join("f")).unwrap(),
            b"original",
            "{extra}"
        );
    }
    assert_eq!(names_in(root.path()), vec!["f".to_string()]);
    let response = put(address, "/g", "If-Match: *\r\n", b"new");
    assert_eq!(response.status, 412, "If-Match: * needs something there");
    assert_eq!(names_in(root.path()), vec!["f".to_string()]);
}

#[test]
fn if_none_match_star_creates_a_new_name_and_if_match_replaces_the_current_file() {
    let (root, address, etag) = setup();
    let response = put(address, "/new", "If-None-Match: *\r\n", b"fresh");
    assert_eq!(response.status, 201, "{}", response.text());
    assert_eq!(std::fs::read(root.path().join("new")).unwrap(), b"fresh");
    let response = put(address, "/f", &format!("If-Match: {etag}\r\n"), b"replaced");
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(std::fs::read(root.path().join("f")).unwrap(), b"replaced");
    // The tag changed with the file: the old one no longer holds.
    let response = put(address, "/f", &format!("If-Match: {etag}\r\n"), b"again");
    assert_eq!(response.status, 412, "{}", response.text());
    assert_eq!(std::fs::read(root.path().join("f")).unwrap(), b"replaced");
}

#[test]
fn an_upload_whose_target_appeared_while_its_body_arrived_is_not_linked_in() {
    let root = tempfile::tempdir().unwrap();
    let address = serve_with(root.path(), |config| config.token = Some(TOKEN.into()));
    let body = pattern(64 << 10, 3);
    let mut client = RawClient::connect(address);
    client.send(
        format!(
            "PUT /late HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nIf-None-Match: *\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    client.send(&body[..1000]);
    // The upload has begun: the server holds its new file open.
    assert!(flexio_testkit::wait_until(
        || flexio_testkit::files_open_in(root.path()) >= 1,
        Duration::from_secs(20)
    ));
    std::fs::write(root.path().join("late"), b"the other writer's").unwrap();
    client.send(&body[1000..]);
    let response = client.read_response(false);
    assert_eq!(response.status, 412, "{}", response.text());
    assert_eq!(
        std::fs::read(root.path().join("late")).unwrap(),
        b"the other writer's"
    );
    assert_eq!(names_in(root.path()), vec!["late".to_string()]);
}

#[test]
fn mkcol_honours_preconditions() {
    let root = tempfile::tempdir().unwrap();
    let address = serve_with(root.path(), |config| config.token = Some(TOKEN.into()));
    let mut client = RawClient::connect(address);
    let response = client.try_read_response_to(
        format!(
            "MKCOL /d HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nIf-Match: *\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(response.map(|r| r.status), Some(412));
    assert!(names_in(root.path()).is_empty());
}
