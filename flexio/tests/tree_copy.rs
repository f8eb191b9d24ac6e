//! Tree copies: the bench's trees A–D scaled down, copied with every
//! mechanism and checked byte for byte and attribute for attribute; cp's
//! grammar; failures of single entries; hard links, sparse files, reflinks.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use common::{require_root, scratch_dir};

use flexio::tree::{copy_tree, targets, Preserve, Symlinks, TreeOptions, TreeProgress};
use flexio::MechanismName;

/// What the checker compares of one entry.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    Directory {
        mode: u32,
    },
    File {
        mode: u32,
        hash: String,
        mtime: (i64, i64),
        blocks_sparse: bool,
    },
    Symlink {
        to: PathBuf,
    },
    Fifo,
}

/// Every entry below `root`, by relative path.
fn snapshot(root: &Path, with_times: bool) -> BTreeMap<PathBuf, Entry> {
    let mut entries = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            let relative = path.strip_prefix(root).unwrap().to_path_buf();
            let kind = if meta.is_dir() {
                stack.push(path.clone());
                Entry::Directory {
                    mode: meta.mode() & 0o7777,
                }
            } else if meta.is_symlink() {
                Entry::Symlink {
                    to: fs::read_link(&path).unwrap(),
                }
            } else if meta.is_file() {
                Entry::File {
                    mode: meta.mode() & 0o7777,
                    hash: blake3::hash(&fs::read(&path).unwrap()).to_hex().to_string(),
                    mtime: if with_times {
                        (meta.mtime(), meta.mtime_nsec())
                    } else {
                        (0, 0)
                    },
                    blocks_sparse: meta.blocks() * 512 < meta.size() / 2,
                }
            } else {
                Entry::Fifo
            };
            entries.insert(relative, kind);
        }
    }
    entries
}

fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Tree A scaled: `dirs` directories of `per_dir` 4 KiB files.
fn tree_a(root: &Path, dirs: usize, per_dir: usize) {
    for d in 0..dirs {
        let dir = root.join(format!("d{d:03}"));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..per_dir {
            fs::write(
                dir.join(format!("f{f:03}")),
                bytes(4096, (d * 1000 + f) as u64),
            )
            .unwrap();
        }
    }
}

/// Tree B scaled: files of 1 MiB.
fn tree_b(root: &Path, files: usize) {
    fs::create_dir_all(root).unwrap();
    for f in 0..files {
        fs::write(root.join(format!("m{f:03}")), bytes(1 << 20, f as u64 + 7)).unwrap();
    }
}

/// Tree C scaled: a few large files beside many small ones.
fn tree_c(root: &Path) {
    fs::create_dir_all(root.join("small")).unwrap();
    for f in 0..2 {
        fs::write(root.join(format!("big{f}")), bytes(8 << 20, f + 100)).unwrap();
    }
    for f in 0..100 {
        fs::write(
            root.join("small").join(format!("s{f:03}")),
            bytes(16 << 10, f + 200),
        )
        .unwrap();
    }
}

/// Tree D scaled: tree A with symlinks, hard links, sparse files, odd
/// modes, a FIFO and an empty file.
fn tree_d(root: &Path) {
    tree_a(root, 4, 10);
    for d in 0..4 {
        let dir = root.join(format!("d{d:03}"));
        std::os::unix::fs::symlink("f000", dir.join("link-rel")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/target", dir.join("link-dangling")).unwrap();
        fs::hard_link(dir.join("f001"), dir.join("hard")).unwrap();
        fs::set_permissions(dir.join("f002"), fs::Permissions::from_mode(0o600)).unwrap();
    }
    fs::hard_link(root.join("d000/f003"), root.join("d001/hard-across")).unwrap();
    for (name, hole) in [("sparse-a", 8u64 << 20), ("sparse-b", 3u64 << 20)] {
        let file = fs::File::create(root.join(name)).unwrap();
        use std::os::unix::fs::FileExt;
        file.write_all_at(&bytes(4096, hole), 0).unwrap();
        file.write_all_at(&bytes(8192, hole + 1), hole).unwrap();
        file.set_len(hole * 2).unwrap();
    }
    fs::write(root.join("empty"), b"").unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o640),
        0,
    )
    .unwrap();
    fs::set_permissions(root.join("d003"), fs::Permissions::from_mode(0o750)).unwrap();
}

fn archive(mechanism: MechanismName) -> TreeOptions {
    TreeOptions {
        recursive: true,
        preserve: Preserve::ALL,
        symlinks: Symlinks::Keep,
        mechanism,
        jobs: 3,
        ..TreeOptions::default()
    }
}

fn copy(source: &Path, target: &Path, options: &TreeOptions) -> flexio::tree::TreeReport {
    let report = copy_tree(
        &[source.to_path_buf()],
        target,
        options,
        &TreeProgress::default(),
    )
    .unwrap();
    assert!(report.succeeded(), "{:?}", report.failures);
    report
}

#[test]
fn every_mechanism_copies_trees_a_to_d_byte_for_byte_with_their_attributes() {
    let dir = scratch_dir();
    type MakeTree = fn(&Path);
    let trees: [(&str, MakeTree); 4] = [
        ("A", |root| tree_a(root, 8, 25)),
        ("B", |root| tree_b(root, 6)),
        ("C", tree_c),
        ("D", tree_d),
    ];
    for (name, make) in trees {
        let source = dir.path().join(format!("tree-{name}"));
        make(&source);
        let expected = snapshot(&source, true);
        for mechanism in [MechanismName::Auto]
            .into_iter()
            .chain(MechanismName::serving(
                flexio::EndpointKind::File,
                flexio::EndpointKind::File,
            ))
        {
            let target = dir.path().join(format!("copy-{name}-{mechanism}"));
            let report = copy(&source, &target, &archive(mechanism));
            assert_eq!(
                snapshot(&target, true),
                expected,
                "tree {name} with {mechanism}"
            );
            // Every file's way of copying is counted, and the staging
            // directory the new tree was built in is gone.
            assert_eq!(
                report.files_by_mechanism.values().sum::<u64>(),
                report.files,
                "{:?}",
                report.files_by_mechanism
            );
            assert!(
                !fs::read_dir(dir.path()).unwrap().any(|e| e
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".flexio-")),
                "a staging directory was left beside {}",
                target.display()
            );
            let links = fs::metadata(target.join("d000/f001"))
                .map(|m| m.nlink())
                .unwrap_or(1);
            if name == "D" {
                assert_eq!(links, 2, "hard links kept with {mechanism}");
                assert_eq!(
                    fs::metadata(target.join("d000/f003")).unwrap().ino(),
                    fs::metadata(target.join("d001/hard-across")).unwrap().ino()
                );
                assert_eq!(report.hard_links, 5);
                assert_eq!(report.symlinks, 8);
                assert_eq!(report.special_files, 1);
            }
            fs::remove_dir_all(&target).unwrap();
        }
        fs::remove_dir_all(&source).unwrap();
    }
}

#[test]
fn without_preserve_modes_lose_the_umask_and_times_are_new() {
    let dir = scratch_dir();
    let source = dir.path().join("src");
    fs::create_dir(&source).unwrap();
    fs::write(source.join("f"), b"x").unwrap();
    fs::set_permissions(source.join("f"), fs::Permissions::from_mode(0o4777)).unwrap();
    set_mtime(&source.join("f"), 1_000_000, 5);
    let options = TreeOptions {
        recursive: true,
        ..TreeOptions::default()
    };
    copy(&source, &dir.path().join("dst"), &options);
    let meta = fs::metadata(dir.path().join("dst/f")).unwrap();
    let umask = umask();
    assert_eq!(
        meta.mode() & 0o7777,
        0o777 & !umask,
        "no setuid, umask applied"
    );
    assert_ne!(meta.mtime(), 1_000_000);
}

#[test]
fn cp_grammar_into_a_directory_several_sources_and_onto_an_existing_directory() {
    let dir = scratch_dir();
    let root = dir.path();
    fs::write(root.join("a"), b"a").unwrap();
    fs::write(root.join("b"), b"b").unwrap();
    fs::create_dir(root.join("tree")).unwrap();
    fs::write(root.join("tree/t"), b"t").unwrap();
    fs::create_dir(root.join("into")).unwrap();
    let r = TreeOptions {
        recursive: true,
        ..TreeOptions::default()
    };
    let progress = TreeProgress::default();

    // Several sources into a directory.
    let sources = [root.join("a"), root.join("b"), root.join("tree")];
    let report = copy_tree(&sources, &root.join("into"), &r, &progress).unwrap();
    assert!(report.succeeded());
    assert_eq!(fs::read(root.join("into/a")).unwrap(), b"a");
    assert_eq!(fs::read(root.join("into/tree/t")).unwrap(), b"t");

    // -r onto a new name creates it; onto an existing directory goes inside.
    copy(&root.join("tree"), &root.join("new"), &r);
    assert_eq!(fs::read(root.join("new/t")).unwrap(), b"t");
    copy(&root.join("tree"), &root.join("new"), &r);
    assert_eq!(fs::read(root.join("new/tree/t")).unwrap(), b"t");

    // Trailing slashes change nothing for cp.
    let slashed = PathBuf::from(format!("{}/", root.join("tree").display()));
    let pairs = targets(
        &[slashed],
        &PathBuf::from(format!("{}/", root.join("into").display())),
    )
    .unwrap();
    assert_eq!(pairs[0].1.file_name().unwrap(), "tree");

    // Several sources and a destination that is not a directory: in cp's
    // words, a target that does not exist, or one that is a file.
    let error = copy_tree(&sources, &root.join("nodir"), &r, &progress).unwrap_err();
    assert!(error.is_usage());
    assert!(
        error.to_string().contains("target '")
            && error.to_string().contains("No such file or directory"),
        "{error}"
    );
    fs::write(root.join("afile"), b"f").unwrap();
    let error = copy_tree(&sources, &root.join("afile"), &r, &progress).unwrap_err();
    assert!(error.is_usage());
    assert!(error.to_string().contains("Not a directory"), "{error}");

    // A directory without -r is skipped with an error; the files still go.
    let report = copy_tree(
        &[root.join("a"), root.join("tree")],
        &root.join("into"),
        &TreeOptions::default(),
        &progress,
    )
    .unwrap();
    assert_eq!(report.files, 1);
    assert_eq!(report.failures.len(), 1);
    assert!(
        report.failures[0].error.contains("-r"),
        "{:?}",
        report.failures
    );

    // A directory into itself.
    let error = copy_tree(&[root.join("tree")], &root.join("tree/sub"), &r, &progress).unwrap_err();
    assert!(error.to_string().contains("into itself"), "{error}");
}

#[test]
fn no_clobber_update_exclude_and_dry_run() {
    let dir = scratch_dir();
    let root = dir.path();
    fs::create_dir(root.join("src")).unwrap();
    fs::write(root.join("src/keep"), b"new").unwrap();
    fs::write(root.join("src/skip.tmp"), b"tmp").unwrap();
    fs::create_dir(root.join("src/cache")).unwrap();
    fs::write(root.join("src/cache/x"), b"x").unwrap();
    fs::create_dir(root.join("dst")).unwrap();
    fs::write(root.join("dst/keep"), b"old").unwrap();
    let base = TreeOptions {
        recursive: true,
        exclude: vec!["*.tmp".into(), "cache".into()],
        ..TreeOptions::default()
    };
    let plan = copy_tree(
        &[root.join("src/.")],
        &root.join("dst"),
        &TreeOptions {
            dry_run: true,
            ..base.clone()
        },
        &TreeProgress::default(),
    )
    .unwrap();
    assert!(
        plan.planned.iter().any(|line| line.contains("keep")),
        "{:?}",
        plan.planned
    );
    assert_eq!(
        fs::read(root.join("dst/keep")).unwrap(),
        b"old",
        "dry run changes nothing"
    );

    let report = copy_tree(
        &[root.join("src/.")],
        &root.join("dst"),
        &TreeOptions {
            no_clobber: true,
            ..base.clone()
        },
        &TreeProgress::default(),
    )
    .unwrap();
    assert_eq!(fs::read(root.join("dst/keep")).unwrap(), b"old", "-n");
    assert!(report.skipped >= 3, "{report:?}");
    assert!(!root.join("dst/skip.tmp").exists() && !root.join("dst/cache").exists());

    // -u: the destination is older than the source only after a touch.
    set_mtime(&root.join("dst/keep"), 1, 0);
    copy(
        &root.join("src/."),
        &root.join("dst"),
        &TreeOptions {
            update: true,
            ..base
        },
    );
    assert_eq!(
        fs::read(root.join("dst/keep")).unwrap(),
        b"new",
        "-u copies a newer source"
    );
}

#[test]
fn a_file_that_vanished_before_its_copy_is_reported_and_the_rest_copied() {
    let dir = scratch_dir();
    let root = dir.path();
    tree_a(&root.join("src"), 2, 5);
    // A symlink whose target vanished stands for a file that vanished
    // between the walk and its copy; it is followed with -L.
    std::os::unix::fs::symlink("/nonexistent/gone", root.join("src/d000/gone")).unwrap();
    let options = TreeOptions {
        recursive: true,
        symlinks: Symlinks::FollowAll,
        ..TreeOptions::default()
    };
    let report = copy_tree(
        &[root.join("src")],
        &root.join("dst"),
        &options,
        &TreeProgress::default(),
    )
    .unwrap();
    assert_eq!(report.files, 10);
    assert_eq!(report.failures.len(), 1, "{:?}", report.failures);
    assert!(report.failures[0].path.ends_with("gone"));
    assert!(report.failures[0].error.contains("No such file"));
}

#[test]
fn sparse_files_stay_sparse() {
    let dir = scratch_dir();
    let root = dir.path().join("src");
    fs::create_dir(&root).unwrap();
    let file = fs::File::create(root.join("sparse")).unwrap();
    use std::os::unix::fs::FileExt;
    file.write_all_at(b"head", 0).unwrap();
    file.write_all_at(b"tail", 64 << 20).unwrap();
    copy(
        &root,
        &dir.path().join("dst"),
        &archive(MechanismName::Auto),
    );
    let meta = fs::metadata(dir.path().join("dst/sparse")).unwrap();
    assert_eq!(meta.size(), (64 << 20) + 4);
    assert!(meta.blocks() * 512 < 1 << 20, "{} blocks", meta.blocks());
}

#[test]
fn reflink_on_xfs_shares_a_quarter_gibibyte_where_read_write_copies_it() {
    if !require_root("mount a loop xfs") {
        return;
    }
    if !common::require_tool("mkfs.xfs") {
        return;
    }
    let dir = scratch_dir();
    let image = dir.path().join("xfs.img");
    fs::File::create(&image).unwrap().set_len(1 << 30).unwrap();
    let mkfs = std::process::Command::new("mkfs.xfs")
        .args(["-q", "-m", "reflink=1"])
        .arg(&image)
        .status()
        .unwrap();
    assert!(mkfs.success());
    let mount = dir.path().join("mnt");
    fs::create_dir(&mount).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-o", "loop"])
        .arg(&image)
        .arg(&mount)
        .status()
        .unwrap();
    assert!(mounted.success());
    let result = std::panic::catch_unwind(|| {
        let source = mount.join("src");
        fs::create_dir(&source).unwrap();
        let file = fs::File::create(source.join("big")).unwrap();
        use std::os::unix::fs::FileExt;
        for chunk in 0..4u64 {
            file.write_all_at(&bytes(64 << 20, chunk), chunk << 26)
                .unwrap();
        }
        file.sync_all().unwrap();
        drop(file);
        // Shared extents are told by the space a copy takes, not by its
        // time (a timing would fail on a busy machine): a reflink of
        // 256 MiB takes next to none, a copy through read-write all of it.
        let used = || {
            rustix::fs::sync();
            let stat = rustix::fs::statvfs(&mount).unwrap();
            (stat.f_blocks - stat.f_bfree) * stat.f_frsize
        };
        let before = used();
        let reflink = copy(
            &source,
            &mount.join("reflinked"),
            &archive(MechanismName::Auto),
        );
        let after_reflink = used();
        assert_eq!(
            reflink.files_by_mechanism.get("reflink"),
            Some(&1),
            "{reflink:?}"
        );
        // copy-file-range on xfs also shares extents; read-write is the
        // kernel-independent yardstick of a real copy.
        copy(
            &source,
            &mount.join("copied"),
            &archive(MechanismName::ReadWrite),
        );
        let after_copy = used();
        assert!(
            (after_reflink - before) * 100 < 1 << 28,
            "the reflink took {} bytes of space",
            after_reflink - before
        );
        assert!(
            after_copy - after_reflink >= 1 << 28,
            "the read-write copy took only {} bytes of space",
            after_copy - after_reflink
        );
        assert_eq!(
            fs::read(mount.join("reflinked/big")).unwrap(),
            fs::read(source.join("big")).unwrap()
        );
    });
    let _ = std::process::Command::new("umount").arg(&mount).status();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// Sets a path's access and modification times to `seconds.nanoseconds`.
fn set_mtime(path: &Path, seconds: i64, nanoseconds: i64) {
    let at = rustix::fs::Timespec {
        tv_sec: seconds,
        tv_nsec: nanoseconds as _,
    };
    let times = rustix::fs::Timestamps {
        last_access: at,
        last_modification: at,
    };
    rustix::fs::utimensat(rustix::fs::CWD, path, &times, rustix::fs::AtFlags::empty()).unwrap();
}

fn umask() -> u32 {
    fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("Umask:"))
        .map(|value| u32::from_str_radix(value.trim(), 8).unwrap())
        .unwrap()
}

#[test]
fn a_second_archive_copy_onto_the_first_replaces_files_links_and_fifos() {
    let dir = scratch_dir();
    let source = dir.path().join("src");
    tree_d(&source);
    let target = dir.path().join("dst");
    copy(&source, &target, &archive(MechanismName::Auto));
    // Change the source, then copy onto the existing copy, as `cp -a` over
    // an earlier backup (`src/.` names the contents).
    fs::write(source.join("d000/f000"), b"changed").unwrap();
    fs::remove_file(source.join("d001/link-rel")).unwrap();
    std::os::unix::fs::symlink("f009", source.join("d001/link-rel")).unwrap();
    let report = copy(&source.join("."), &target, &archive(MechanismName::Auto));
    assert_eq!(report.failures.len(), 0);
    assert_eq!(snapshot(&target, true), snapshot(&source, true));
    let leftovers: Vec<_> = fs::read_dir(target.join("d001"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".flexio-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn an_existing_destination_directory_keeps_its_mode_unless_modes_are_kept() {
    let dir = scratch_dir();
    let source = dir.path().join("src");
    fs::create_dir(&source).unwrap();
    fs::write(source.join("f"), b"x").unwrap();
    fs::set_permissions(&source, fs::Permissions::from_mode(0o755)).unwrap();
    let target = dir.path().join("dst");
    fs::create_dir(&target).unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o750)).unwrap();
    let recursive = TreeOptions {
        recursive: true,
        ..TreeOptions::default()
    };
    copy(&source.join("."), &target, &recursive);
    assert_eq!(
        fs::metadata(&target).unwrap().mode() & 0o7777,
        0o750,
        "cp -r"
    );
    copy(&source.join("."), &target, &archive(MechanismName::Auto));
    assert_eq!(
        fs::metadata(&target).unwrap().mode() & 0o7777,
        0o755,
        "cp -a"
    );
}

#[test]
fn fsync_copies_a_new_tree_and_into_an_existing_one_leaving_nothing_beside_them() {
    let dir = scratch_dir();
    let source = dir.path().join("src");
    tree_a(&source, 3, 4);
    let expected = snapshot(&source, false);
    let options = TreeOptions {
        recursive: true,
        fsync: true,
        ..TreeOptions::default()
    };
    // A new tree: staged, synced, renamed in, its parent synced.
    let report = copy(&source, &dir.path().join("new"), &options);
    assert_eq!(report.files, 12);
    assert_eq!(snapshot(&dir.path().join("new"), false), expected);
    // The contents into an existing directory (`src/.`, as cp): file by
    // file through temporaries.
    fs::create_dir(dir.path().join("existing")).unwrap();
    let report = copy(&source.join("."), &dir.path().join("existing"), &options);
    assert_eq!(report.files, 12);
    assert_eq!(snapshot(&dir.path().join("existing"), false), expected);
    let mut names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["existing", "new", "src"]);
}
