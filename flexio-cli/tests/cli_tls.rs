//! `flexio serve --tls-self-signed` and `flexio get/put https://… --pin`:
//! a byte-exact round trip with the printed fingerprint, a wrong pin
//! refused before any request, curl -k against the server, and a bearer
//! token taken over TLS but never over a plain non-loopback link.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::common;

use common::{flexio, stderr, Serving};

/// Starts `flexio serve DIR --tls-self-signed` on loopback; returns its
/// base URL and the fingerprint it printed.
fn serve_tls(dir: &std::path::Path, extra: &[&str]) -> (Serving, String, String) {
    let mut child = flexio()
        .arg("serve")
        .arg(dir)
        .arg("--tls-self-signed")
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let (mut first, mut second) = (String::new(), String::new());
    out.read_line(&mut first).unwrap();
    out.read_line(&mut second).unwrap();
    let url = first
        .split_whitespace()
        .find(|word| word.starts_with("https://"))
        .unwrap_or_else(|| panic!("no https URL in {first:?}"))
        .trim_end_matches('/')
        .to_string();
    assert!(second.contains("one user-space copy"), "{second}");
    let fingerprint = second
        .split_whitespace()
        .nth(3)
        .unwrap_or_else(|| panic!("no fingerprint in {second:?}"))
        .to_string();
    assert_eq!(fingerprint.len(), 95, "{fingerprint}");
    (Serving(child), url, fingerprint)
}

fn random_bytes(len: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

#[test]
fn a_file_and_a_tree_round_trip_over_tls_with_the_pin() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    std::fs::create_dir_all(served.join("tree/sub")).unwrap();
    let bytes = random_bytes(5 << 20);
    std::fs::write(served.join("file"), &bytes).unwrap();
    std::fs::write(served.join("tree/a"), b"alpha").unwrap();
    std::fs::write(served.join("tree/sub/b"), random_bytes(300_000)).unwrap();
    let (_server, url, pin) = serve_tls(&served, &[]);

    let copy = dir.path().join("copy");
    let output = flexio()
        .args([
            "get",
            "-v",
            "--streams",
            "3",
            "--piece-size",
            "1M",
            "--pin",
            &pin,
        ])
        .arg(format!("{url}/file"))
        .arg(&copy)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(std::fs::read(&copy).unwrap() == bytes, "the copy differs");
    let said = stderr(&output);
    assert!(said.starts_with(&format!("{url}/file -> ")), "{said}");
    assert!(said.contains("BLAKE3 verified"), "{said}");

    // The pin without colons, lower case, is the same pin.
    let bare = pin.replace(':', "").to_lowercase();
    let tree = dir.path().join("tree-copy");
    let output = flexio()
        .args(["get", "--pin", &bare])
        .arg(format!("{url}/tree/"))
        .arg(&tree)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let same = std::process::Command::new("diff")
        .arg("-r")
        .arg(served.join("tree"))
        .arg(&tree)
        .status()
        .unwrap();
    assert!(same.success());
}

#[test]
fn a_wrong_pin_is_refused_before_any_request_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    std::fs::write(served.join("file"), b"secret").unwrap();
    let (_server, url, pin) = serve_tls(&served, &[]);
    // The same fingerprint with its first byte changed.
    let wrong = format!(
        "{}{}",
        if pin.starts_with("00") { "11" } else { "00" },
        &pin[2..]
    );
    let copy = dir.path().join("copy");
    let output = flexio()
        .args(["get", "--pin", &wrong])
        .arg(format!("{url}/file"))
        .arg(&copy)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("not the pinned one"),
        "{}",
        stderr(&output)
    );
    assert!(!copy.exists());
    assert_eq!(common::names(dir.path()), vec!["served".to_string()]);

    // Without --pin or --ca the system's trust store decides, and a
    // self-signed certificate is not in it: refused, nothing written. A
    // pin on an http URL is a usage error.
    let output = flexio()
        .arg("get")
        .arg(format!("{url}/file"))
        .arg(&copy)
        .output()
        .unwrap();
    // 1 (unknown issuer), or 2 on a machine with no trust store at all.
    assert!(!output.status.success(), "{}", stderr(&output));
    assert!(!copy.exists());
    let output = flexio()
        .args(["get", "--pin", &pin, "http://127.0.0.1:9/file"])
        .arg(&copy)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

#[test]
fn curl_k_fetches_a_file_and_a_range_from_a_tls_serve() {
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        common::skipped("curl is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let bytes = random_bytes(3 << 20);
    std::fs::write(served.join("file"), &bytes).unwrap();
    let (_server, url, _) = serve_tls(&served, &[]);
    let whole = std::process::Command::new("curl")
        .args(["-sSk", "--fail"])
        .arg(format!("{url}/file"))
        .output()
        .unwrap();
    assert!(whole.status.success(), "{}", stderr(&whole));
    assert!(whole.stdout == bytes, "curl -k got other bytes");
    let range = std::process::Command::new("curl")
        .args(["-sSk", "--fail", "-r", "1000-1999"])
        .arg(format!("{url}/file"))
        .output()
        .unwrap();
    assert!(range.status.success(), "{}", stderr(&range));
    assert_eq!(range.stdout, &bytes[1000..2000]);
    // Without -k, curl refuses the self-signed certificate.
    let strict = std::process::Command::new("curl")
        .args(["-sS", "--fail"])
        .arg(format!("{url}/file"))
        .output()
        .unwrap();
    assert!(!strict.status.success());
}

#[test]
fn a_bearer_token_is_taken_over_tls_and_a_plain_public_address_takes_signed_uploads_only() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "0123456789abcdef0123456789abcdef\n").unwrap();

    // Plain, on an address other than loopback: it serves, and says that
    // uploads must be signed there (cli_net::put_over_a_plain_link_is_signed_and_a_bearer_token_refused
    // sends both across a veth pair).
    let mut plain = flexio()
        .arg("serve")
        .arg(&served)
        .args(["--listen", "0.0.0.0:0", "--public", "--token-file"])
        .arg(&token)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(plain.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = plain.kill();
    let _ = plain.wait();
    assert!(
        line.contains("uploads signed with the token")
            && line.contains("bearer token only from loopback"),
        "{line}"
    );

    // Over TLS: the upload lands.
    let (_server, url, pin) = serve_tls(&served, &["--token-file", token.to_str().unwrap()]);
    let source = dir.path().join("upload");
    let bytes = random_bytes(2 << 20);
    std::fs::write(&source, &bytes).unwrap();
    let output = flexio()
        .arg("put")
        .arg(&source)
        .arg(format!("{url}/uploaded"))
        .arg("--token-file")
        .arg(&token)
        .args(["--pin", &pin])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(std::fs::read(served.join("uploaded")).unwrap() == bytes);
}

/// Makes a CA and a server certificate for 127.0.0.1 signed by it (with
/// openssl) in `dir`: `ca.pem`, `server.pem`, `server.key`; and an
/// unrelated CA, `other-ca.pem`. `false` (printing why) without openssl.
fn make_certificates(dir: &std::path::Path) -> bool {
    let script = r#"set -e
cd "$1"
for ca in ca other-ca; do
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $ca.key -out $ca.pem -days 2 \
    -subj /CN=$ca -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
done
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n' > ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext 2>/dev/null
"#;
    common::script_in(dir, script, "openssl cannot make the test certificates")
}

#[test]
fn a_certificate_from_files_is_trusted_through_its_ca_and_not_another() {
    let dir = tempfile::tempdir().unwrap();
    if !make_certificates(dir.path()) {
        return;
    }
    let served = dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let bytes = random_bytes(1 << 20);
    std::fs::write(served.join("file"), &bytes).unwrap();
    let files = format!(
        "{},{}",
        dir.path().join("server.pem").display(),
        dir.path().join("server.key").display()
    );
    let (_server, url) = common::serve(&served, &["--tls", &files]);
    assert!(url.starts_with("https://"), "{url}");
    let copy = dir.path().join("copy");
    let output = flexio()
        .arg("get")
        .arg("--ca")
        .arg(dir.path().join("ca.pem"))
        .arg(format!("{url}/file"))
        .arg(&copy)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(std::fs::read(&copy).unwrap() == bytes);
    let refused = dir.path().join("refused");
    let output = flexio()
        .arg("get")
        .arg("--ca")
        .arg(dir.path().join("other-ca.pem"))
        .arg(format!("{url}/file"))
        .arg(&refused)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(!refused.exists());

    // Neither --pin nor --ca: the system's trust store decides, as for
    // curl. Here the store is the file SSL_CERT_FILE names: the CA that
    // issued the certificate is trusted, another is not, and the store
    // the machine has (which never holds this test's CA) is not either.
    let fetch = |store: Option<&str>, to: &str| {
        let mut get = flexio();
        get.arg("get")
            .arg(format!("{url}/file"))
            .arg(dir.path().join(to));
        get.env_remove("SSL_CERT_FILE").env_remove("SSL_CERT_DIR");
        if let Some(store) = store {
            get.env("SSL_CERT_FILE", dir.path().join(store));
        }
        get.output().unwrap()
    };
    let output = fetch(Some("ca.pem"), "system");
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(std::fs::read(dir.path().join("system")).unwrap() == bytes);
    let output = fetch(Some("other-ca.pem"), "other");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("UnknownIssuer"),
        "{}",
        stderr(&output)
    );
    assert!(!dir.path().join("other").exists());
    // 1 (unknown issuer), or 2 on a machine with no trust store at all.
    let output = fetch(None, "machine");
    assert!(!output.status.success(), "{}", stderr(&output));
    assert!(!dir.path().join("machine").exists());
}
