//! `serve --follow-symlinks`: a link that resolves beneath the root is
//! followed; one that leads out of it — absolute, or climbing with `..`,
//! directly or through another link — is refused, as every link is
//! without the flag.

use crate::common;

use common::{serve_with, RawClient};

/// `top/root` with a file, links inside it and links out of it to
/// `top/outside/secret`.
fn tree() -> (tempfile::TempDir, std::path::PathBuf) {
    let top = tempfile::tempdir().unwrap();
    let root = top.path().join("root");
    let outside = top.path().join("outside");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret"), b"secret").unwrap();
    std::fs::write(root.join("sub/real"), b"inside").unwrap();
    let link =
        |target: &str, name: &str| std::os::unix::fs::symlink(target, root.join(name)).unwrap();
    link("sub/real", "inside");
    link("sub", "dir-inside");
    link("inside", "chain");
    link("../outside/secret", "climbs");
    link(outside.join("secret").to_str().unwrap(), "absolute");
    link("../outside", "dir-out");
    link("climbs", "chain-out");
    (top, root)
}

fn get(address: std::net::SocketAddr, target: &str) -> (u16, Vec<u8>) {
    let response = RawClient::connect(address).get(target, "");
    (response.status, response.body)
}

#[test]
fn with_the_flag_links_beneath_the_root_are_followed_and_links_out_refused() {
    let (_top, root) = tree();
    let address = serve_with(&root, |config| config.follow_symlinks = true);
    for target in ["/inside", "/dir-inside/real", "/chain"] {
        assert_eq!(get(address, target), (200, b"inside".to_vec()), "{target}");
    }
    for target in ["/climbs", "/absolute", "/dir-out/secret", "/chain-out"] {
        let (status, body) = get(address, target);
        assert_eq!(status, 403, "{target}");
        assert!(!body.windows(6).any(|w| w == b"secret"), "{target}");
    }
}

#[test]
fn without_the_flag_no_link_is_followed() {
    let (_top, root) = tree();
    let address = serve_with(&root, |_| {});
    assert_eq!(get(address, "/sub/real").0, 200);
    for target in [
        "/inside",
        "/dir-inside/real",
        "/chain",
        "/climbs",
        "/absolute",
    ] {
        assert_eq!(get(address, target).0, 403, "{target}");
    }
}
