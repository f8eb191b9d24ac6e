//! `--access-log`: the lines for a GET, a Range GET, a PUT and a 404,
//! parsed field by field (nginx's combined format, then the body's
//! mechanism and the bytes it sent); nothing for a connection that sent
//! no request.

use crate::common;

use std::net::TcpStream;

use common::*;
use flexio_net::server::{ServeConfig, Server};

const TOKEN: &str = "access-log-token-0123456789";

/// A combined-format line's fields: quoted and bracketed ones whole,
/// without their quotes or brackets.
fn fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut rest = line.trim_end();
    while !rest.is_empty() {
        let (field, after) = match rest.as_bytes()[0] {
            b'"' => {
                let end = rest[1..].find('"').expect("a closing quote") + 1;
                (&rest[1..end], &rest[end + 1..])
            }
            b'[' => {
                let end = rest.find(']').expect("a closing bracket");
                (&rest[1..end], &rest[end + 1..])
            }
            _ => {
                let end = rest.find(' ').unwrap_or(rest.len());
                (&rest[..end], &rest[end..])
            }
        };
        fields.push(field.to_string());
        rest = after.trim_start();
    }
    fields
}

#[test]
fn the_access_log_has_a_combined_line_per_response_with_the_mechanism_and_its_bytes() {
    let root = tempfile::tempdir().unwrap();
    let data = pattern(100_000, 9);
    std::fs::write(root.path().join("f.bin"), &data).unwrap();
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("access.log");
    let mut config = ServeConfig::new(root.path().into());
    config.token = Some(TOKEN.into());
    config.access_log = Some(log.clone());
    let handle = Server::bind(config).unwrap().spawn().unwrap();
    let address = handle.local_addr();

    // A connection that sends nothing is not logged.
    drop(TcpStream::connect(address).unwrap());
    let mut client = RawClient::connect(address);
    let whole = client.get(
        "/f.bin",
        "User-Agent: test-agent/1.0\r\nReferer: http://example.test/page\r\n",
    );
    assert_eq!((whole.status, whole.body.len()), (200, data.len()));
    let range = client.get("/f.bin", "Range: bytes=10-19\r\n");
    assert_eq!((range.status, range.body.len()), (206, 10));
    client.send(
        format!(
            "PUT /up.bin HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 5\r\n\r\nhello"
        )
        .as_bytes(),
    );
    let put = client.read_response(false);
    assert_eq!(put.status, 201, "{}", put.text());
    let missing = client.get("/missing\"quoted\"", "");
    assert_eq!(missing.status, 404);
    drop(client);
    handle.shutdown();
    handle.wait();

    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Vec<String>> = text.lines().map(fields).collect();
    assert_eq!(lines.len(), 4, "{text}");
    for line in &lines {
        assert_eq!(line.len(), 11, "{line:?}");
        assert_eq!(&line[..3], ["127.0.0.1", "-", "-"], "{line:?}");
        let time = &line[3];
        assert!(time.ends_with(" +0000") && time.len() == 26, "{time}");
        assert_eq!(&time[2..3], "/", "{time}");
        assert!(line[6].parse::<u64>().is_ok() && line[10].parse::<u64>().is_ok());
    }
    let expect = |line: &[String], request: &str, status: &str, bytes: u64| {
        assert_eq!(line[4], request, "{line:?}");
        assert_eq!(line[5], status, "{line:?}");
        assert_eq!(line[6], bytes.to_string(), "{line:?}");
    };
    expect(&lines[0], "GET /f.bin HTTP/1.1", "200", data.len() as u64);
    assert_eq!(lines[0][7], "http://example.test/page");
    assert_eq!(lines[0][8], "test-agent/1.0");
    assert_eq!(lines[0][9], "sendfile");
    assert_eq!(lines[0][10], data.len().to_string());

    expect(&lines[1], "GET /f.bin HTTP/1.1", "206", 10);
    assert_eq!(&lines[1][7..], ["-", "-", "sendfile", "10"]);

    expect(
        &lines[2],
        "PUT /up.bin HTTP/1.1",
        "201",
        put.body.len() as u64,
    );
    assert_eq!(
        &lines[2][9..],
        ["-", "0"],
        "a body made in memory has no mechanism"
    );

    // The quotes of the target are escaped as nginx does.
    expect(
        &lines[3],
        "GET /missing\\x22quoted\\x22 HTTP/1.1",
        "404",
        missing.body.len() as u64,
    );
    assert_eq!(&lines[3][9..], ["-", "0"]);
}
