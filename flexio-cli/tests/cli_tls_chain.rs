//! `flexio serve --tls CHAIN,KEY` with a real certificate chain (a leaf
//! issued by an intermediate CA issued by a root), and `flexio get
//! https://…` with no flag trusting the root from the system's store (the
//! file `SSL_CERT_FILE` names, as for curl): the chain arrives whole, so
//! the get succeeds; served without the intermediate, it fails. Needs the
//! openssl command to make the certificates.

use std::path::Path;

use crate::common;

use common::{flexio, stderr, Serving};

/// Makes, in `dir`, `root.pem` (a root CA), an intermediate CA it issued,
/// and `leaf.key` with `leaf.pem` (the leaf for 127.0.0.1, issued by the
/// intermediate) and `chain.pem` (leaf then intermediate). `false`
/// (printing why) without openssl.
fn make_chain(dir: &Path) -> bool {
    let script = r#"set -e
cd "$1"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key root.key
openssl req -x509 -key root.key -out root.pem -days 2 -subj /CN=flexio-test-root \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
key mid.key
openssl req -new -key mid.key -out mid.csr -subj /CN=flexio-test-intermediate 2>/dev/null
printf 'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign\n' > mid.ext
openssl x509 -req -in mid.csr -CA root.pem -CAkey root.key -CAcreateserial -out mid.pem -days 2 -extfile mid.ext 2>/dev/null
key leaf.key
openssl req -new -key leaf.key -out leaf.csr -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n' > leaf.ext
openssl x509 -req -in leaf.csr -CA mid.pem -CAkey mid.key -CAcreateserial -out leaf.pem -days 2 -extfile leaf.ext 2>/dev/null
cat leaf.pem mid.pem > chain.pem
"#;
    common::script_in(dir, script, "openssl cannot make the test certificates")
}

/// Serves `served` over TLS with `certificate` and `leaf.key`; its base
/// URL.
fn serve(dir: &Path, served: &Path, certificate: &str) -> (Serving, String) {
    let files = format!(
        "{},{}",
        dir.join(certificate).display(),
        dir.join("leaf.key").display()
    );
    common::serve(served, &["--tls", &files])
}

/// `flexio get URL/file DIR/to` with no flag, trusting what `root.pem`
/// holds as the system's store.
fn get_trusting_root(dir: &Path, url: &str, to: &str) -> std::process::Output {
    flexio()
        .arg("get")
        .arg(format!("{url}/file"))
        .arg(dir.join(to))
        .env_remove("SSL_CERT_DIR")
        .env("SSL_CERT_FILE", dir.join("root.pem"))
        .output()
        .unwrap()
}

#[test]
fn a_served_chain_lets_a_client_trusting_only_the_root_fetch_with_no_flag() {
    let dir = tempfile::tempdir().unwrap();
    if !make_chain(dir.path()) {
        return;
    }
    let served = dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let bytes: Vec<u8> = (0..1_000_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(served.join("file"), &bytes).unwrap();

    let (_chained, url) = serve(dir.path(), &served, "chain.pem");
    let output = get_trusting_root(dir.path(), &url, "fetched");
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(std::fs::read(dir.path().join("fetched")).unwrap() == bytes);

    // The leaf alone does not lead to the root: the intermediate was what
    // the chain carried.
    let (_leaf_only, url) = serve(dir.path(), &served, "leaf.pem");
    let output = get_trusting_root(dir.path(), &url, "refused");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("UnknownIssuer"),
        "{}",
        stderr(&output)
    );
    assert!(!dir.path().join("refused").exists());
}
