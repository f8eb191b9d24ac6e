//! A tree `put` to `flexio serve` keeps each file's mode and mtime (to
//! the nanosecond; a file sent whole and one sent in pieces), and run
//! again sends only what changed: the files the server holds with the
//! source's size and mtime are counted unchanged and left as they are
//! (the same inode on the server: not written again).

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use common::{pattern, serve_with};
use flexio_net::client::{put_tree, PutOptions};

const TOKEN: &str = "test-token-0123456789abcdef";

/// Name, size, mode.
const FILES: [(&str, usize, u32); 4] = [
    ("top", 10, 0o600),
    ("sub/script", 5000, 0o755),
    ("sub/deeper/big", 300_000, 0o640),
    ("sub/deeper/zero", 0, 0o444),
];

/// Mode, mtime seconds and nanoseconds, and inode of each file.
fn described(root: &Path) -> Vec<(String, u32, i64, i64, u64)> {
    FILES
        .iter()
        .map(|(name, ..)| {
            let meta = std::fs::metadata(root.join(name)).unwrap();
            (
                name.to_string(),
                meta.mode() & 0o777,
                meta.mtime(),
                meta.mtime_nsec(),
                meta.ino(),
            )
        })
        .collect()
}

/// [`described`] without the inode, to compare a source with its copy.
fn kept(root: &Path) -> Vec<(String, u32, i64, i64)> {
    described(root)
        .into_iter()
        .map(|(name, mode, seconds, nanoseconds, _)| (name, mode, seconds, nanoseconds))
        .collect()
}

#[test]
fn a_tree_put_keeps_modes_and_mtimes_and_again_sends_only_what_changed() {
    let served = tempfile::tempdir().unwrap();
    let address = serve_with(served.path(), |config| config.token = Some(TOKEN.into()));
    let sources = tempfile::tempdir().unwrap();
    let tree = sources.path().join("tree");
    std::fs::create_dir_all(tree.join("sub/deeper")).unwrap();
    for (i, (name, size, mode)) in FILES.iter().enumerate() {
        let path = tree.join(name);
        std::fs::write(&path, pattern(*size, i as u64)).unwrap();
        let when = UNIX_EPOCH + Duration::new(1_577_836_800 + i as u64, 100_000_007 * i as u32);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(when)
            .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).unwrap();
    }
    let options = PutOptions {
        streams: 2,
        // The 300 000-byte file goes in pieces.
        piece: 100_000,
        ..Default::default()
    };
    let url = format!("http://{address}/up/");
    let up = served.path().join("up");

    let first = put_tree(&tree, &url, TOKEN, &options).unwrap();
    assert!(first.failures.is_empty(), "{:?}", first.failures);
    assert_eq!((first.files, first.unchanged), (4, 0), "{first:?}");
    assert_eq!(kept(&up), kept(&tree));
    let stored = described(&up);

    let again = put_tree(&tree, &url, TOKEN, &options).unwrap();
    assert!(again.failures.is_empty(), "{:?}", again.failures);
    assert_eq!(
        (
            again.files,
            again.bytes,
            again.unchanged,
            again.unchanged_bytes
        ),
        (0, 0, 4, 305_010),
        "{again:?}"
    );
    assert_eq!(described(&up), stored, "a file was written again");

    // One changed (same size, another mtime): that one only is sent.
    let script = tree.join("sub/script");
    std::fs::write(&script, pattern(5000, 99)).unwrap();
    let changed = put_tree(&tree, &url, TOKEN, &options).unwrap();
    assert!(changed.failures.is_empty(), "{:?}", changed.failures);
    assert_eq!(
        (changed.files, changed.bytes, changed.unchanged),
        (1, 5000, 3),
        "{changed:?}"
    );
    assert_eq!(
        std::fs::read(up.join("sub/script")).unwrap(),
        pattern(5000, 99)
    );
    assert_eq!(kept(&up), kept(&tree));
    let now = described(&up);
    for (before, after) in stored.iter().zip(&now) {
        assert_eq!(
            before.0 == "sub/script",
            before.4 != after.4,
            "{before:?} {after:?}"
        );
    }
}
