//! The certificate everyone makes first, `openssl req -x509 …`, served
//! with `serve --tls` and given to `get --ca`, is trusted as `curl
//! --cacert` trusts it (rustls alone refused it: `CaUsedAsEndEntity`).

use crate::common;

use common::{flexio, stderr};

/// `openssl req -x509` certificates in `dir`: `cert.pem`/`key.pem` for
/// localhost and 127.0.0.1, and `other.pem` for the same names; `false`
/// (printing why) without openssl.
fn make_certificates(dir: &std::path::Path) -> bool {
    let script = r#"set -e
cd "$1"
for name in cert other; do
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $name.key -out $name.pem \
    -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -days 2 2>/dev/null
done
"#;
    common::script_in(
        dir,
        script,
        "cli_tls_self_signed: openssl cannot make the test certificates",
    )
}

#[test]
fn get_with_ca_trusts_a_plain_openssl_self_signed_certificate_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    if !make_certificates(dir.path()) {
        return;
    }
    let served = dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let bytes: Vec<u8> = (0..(1 << 20) + 7)
        .map(|i: usize| (i * 17 % 251) as u8)
        .collect();
    std::fs::write(served.join("file"), &bytes).unwrap();
    let files = format!(
        "{},{}",
        dir.path().join("cert.pem").display(),
        dir.path().join("cert.key").display()
    );
    let (_server, url) = common::serve(&served, &["--tls", &files]);
    assert!(url.starts_with("https://"), "{url}");
    let port = url.rsplit(':').next().unwrap().to_string();
    for host in ["127.0.0.1", "localhost"] {
        let copy = dir.path().join(format!("copy-{host}"));
        let output = flexio()
            .args(["get", "--ca"])
            .arg(dir.path().join("cert.pem"))
            .arg(format!("https://{host}:{port}/file"))
            .arg(&copy)
            .output()
            .unwrap();
        assert!(output.status.success(), "{host}: {}", stderr(&output));
        assert!(
            std::fs::read(&copy).unwrap() == bytes,
            "{host}: other bytes"
        );
    }
    let refused = dir.path().join("refused");
    let output = flexio()
        .args(["get", "--ca"])
        .arg(dir.path().join("other.pem"))
        .arg(format!("{url}/file"))
        .arg(&refused)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("TLS handshake"),
        "{}",
        stderr(&output)
    );
    assert!(!refused.exists());
}
