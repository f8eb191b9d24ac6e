//! A server worker's kept state (its upload buffer; a body's pipe and buffers)
//! carries nothing from a request that failed into the next one: after an
//! upload that ran out of space, or downloads whose readers reset the
//! connection, the next client gets exactly its own bytes, and does not
//! wait. One worker, so that every request meets the same mover.

use crate::common;

use std::io::Read;
use std::net::SocketAddr;
use std::time::Duration;

use common::*;

const TOKEN: &str = "reuse-token-0123456789";

/// A PUT of `body` to `target` over a fresh connection; the status.
fn put(address: SocketAddr, target: &str, body: &[u8], extra: &str) -> Response {
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

#[test]
fn put_after_a_failed_put_holds_only_its_own_bytes() {
    if !require_root("mounting a 4 MiB tmpfs to fill mid-upload") {
        return;
    }
    let mount = SmallTmpfs::mount("4m");
    let address = serve_with(mount.path(), |config| {
        config.token = Some(TOKEN.into());
        config.workers = 1;
    });

    // 3 MiB announced passes the free-space check; the disk fills while
    // the body is on its way, so the upload fails part-way at the sink.
    let first = pattern(3 << 20, 11);
    let failed = put_onto_a_disk_that_fills(
        address,
        "/first",
        &format!("Bearer {TOKEN}"),
        &first,
        mount.path(),
    );
    assert!(
        failed.as_ref().is_none_or(|r| r.status >= 500),
        "the upload onto a full disk should fail, got {:?}",
        failed.map(|r| r.status)
    );
    let filler = mount.path().join("filler");
    std::fs::remove_file(&filler).unwrap();

    // Two pieces of one upload, then a whole file: each holds only its
    // own bytes.
    let upload = "Flexio-Upload: 0123456789abcdef0123456789abcdef\r\n";
    let piece = put(
        address,
        "/pieces",
        b"hello",
        &format!("{upload}Content-Range: bytes 0-4/10\r\n"),
    );
    assert!(piece.status < 300, "{} {}", piece.status, piece.text());
    let piece = put(
        address,
        "/pieces",
        b"world",
        &format!("{upload}Content-Range: bytes 5-9/10\r\n"),
    );
    assert_eq!(piece.status, 201, "{}", piece.text());
    assert_eq!(
        std::fs::read(mount.path().join("pieces")).unwrap(),
        b"helloworld"
    );
    let whole = pattern(1 << 20, 12);
    let answer = put(address, "/whole", &whole, "");
    assert_eq!(answer.status, 201, "{}", answer.text());
    assert!(std::fs::read(mount.path().join("whole")).unwrap() == whole);
}

/// The server-worker half of the reuse tester: for every mechanism a
/// server may send bodies with, downloads reset mid-body, then downloads
/// that must arrive whole and exact from the same worker.
#[test]
fn get_after_reset_downloads_gets_its_own_bytes_without_stalling() {
    let root = tempfile::tempdir().unwrap();
    let content = pattern(4 << 20, 21);
    std::fs::write(root.path().join("file"), &content).unwrap();
    let mut table = Vec::new();
    for mechanism in flexio_net::server::BODY_MECHANISMS {
        let address = serve_with(root.path(), |config| {
            config.workers = 1;
            config.mechanism = mechanism;
        });
        let verdict = resets_then_whole_gets(address, &content);
        table.push(format!("{:<16} {verdict:?}", mechanism.to_string()));
        assert!(
            verdict.is_ok(),
            "{mechanism}: {verdict:?}\n{}",
            table.join("\n")
        );
    }
    println!("{}", table.join("\n"));
}

/// Four rounds of two GETs reset after 64 KiB of body, then two whole
/// GETs that must be exact.
fn resets_then_whole_gets(address: SocketAddr, content: &[u8]) -> Result<(), String> {
    for round in 0..4 {
        for _ in 0..2 {
            // Take the head and a little of the body, then reset: the
            // server's send fails with bytes still in its pipe.
            let mut client = RawClient::connect(address);
            client.send(b"GET /file HTTP/1.1\r\nHost: t\r\n\r\n");
            let mut some = vec![0u8; 64 << 10];
            let _ = client.stream.read(&mut some);
            rustix::net::sockopt::set_socket_linger(&client.stream, Some(Duration::ZERO)).unwrap();
            drop(client);
        }
        std::thread::sleep(Duration::from_millis(50));
        for attempt in 0..2 {
            let mut client = RawClient::connect(address);
            let response = client
                .try_read_response_to(b"GET /file HTTP/1.1\r\nHost: t\r\n\r\n")
                .ok_or(format!("round {round}, GET {attempt}: stalled or closed"))?;
            if response.status != 200 || response.body != content {
                return Err(format!(
                    "round {round}, GET {attempt}: {} with {} bytes, first difference at {:?}",
                    response.status,
                    response.body.len(),
                    response.body.iter().zip(content).position(|(a, b)| a != b)
                ));
            }
        }
    }
    Ok(())
}

/// The connection is kept state too: a request whose body the server does
/// not read (a GET with a body, a refused PUT) ends its connection, so
/// the body's bytes are never parsed as the next request.
#[test]
fn an_unread_request_body_is_never_taken_for_the_next_request() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("dir")).unwrap();
    std::fs::write(root.path().join("secret"), b"smuggled out").unwrap();
    let address = serve_with(root.path(), |config| {
        config.token = Some(TOKEN.into());
        config.workers = 1;
    });
    let smuggled = b"GET /secret HTTP/1.1\r\nHost: t\r\n\r\n";
    let heads = [
        "GET /dir/ HTTP/1.1\r\nHost: t\r\n".to_string(),
        "PUT /f HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer wrong-token\r\n".to_string(),
        format!("PUT /dir HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\n"),
        "DELETE /secret HTTP/1.1\r\nHost: t\r\n".to_string(),
    ];
    for head in heads {
        let mut client = RawClient::connect(address);
        client
            .stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        client.send(format!("{head}Content-Length: {}\r\n\r\n", smuggled.len()).as_bytes());
        client.send(smuggled);
        let refused = client.read_response(false);
        assert!(refused.status >= 400, "{head}: {}", refused.status);
        // The next thing on the connection is its end: not an answer to
        // the body's bytes, and not silence either.
        let mut rest = Vec::new();
        match client.stream.read_to_end(&mut rest) {
            Ok(_) => assert!(
                rest.is_empty(),
                "{head}: answered the body: {:?}",
                String::from_utf8_lossy(&rest)
            ),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => {
                panic!("{head}: the connection stayed open ({e}) after a body it did not read")
            }
        }
    }
}
