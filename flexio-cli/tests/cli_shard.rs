//! `flexio get URL/dir/ DEST --shard K/N` run as N processes at once, as a
//! job array runs them: together they fetch the tree exactly once, each
//! part balanced by bytes, into one shared destination (large files split
//! between shards) or into destinations of their own (`--whole-files`);
//! `--shard auto` reads Slurm's and Kubernetes' variables.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use common::{flexio, json_report, serve, stderr, tree_contents as contents};

/// The variables `--shard auto` reads, removed so that a test run inside
/// a job array reads only what the test sets.
const SCHEDULER_VARS: [&str; 5] = [
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_STEP",
    "JOB_COMPLETION_INDEX",
];

fn get() -> Command {
    let mut command = flexio();
    for var in SCHEDULER_VARS {
        command.env_remove(var);
    }
    command
}

/// Bytes that differ from file to file and place to place.
fn bytes(seed: u64, length: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..length)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// A tree of small files (up to 64 KiB) and large ones (a few MiB, not
/// chunk multiples), an empty file, a symlink and a read-only directory.
fn tree(root: &Path) -> u64 {
    std::fs::create_dir_all(root.join("small/deeper")).unwrap();
    std::fs::create_dir_all(root.join("big")).unwrap();
    std::fs::create_dir_all(root.join("empty")).unwrap();
    let mut total = 0;
    for i in 0..120u64 {
        let length = 100 + (i * 7919 % 64) as usize * 1024;
        let place = if i % 3 == 0 { "small/deeper" } else { "small" };
        std::fs::write(root.join(format!("{place}/f{i:03}")), bytes(i, length)).unwrap();
        total += length as u64;
    }
    for (name, length) in [
        ("a", (11 << 20) + 4321),
        ("b", (6 << 20) + 7),
        ("c", 3 << 20),
    ] {
        std::fs::write(root.join("big").join(name), bytes(length, length as usize)).unwrap();
        total += length;
    }
    std::fs::write(root.join("zero"), b"").unwrap();
    std::os::unix::fs::symlink("big/a", root.join("link")).unwrap();
    std::fs::set_permissions(root.join("big"), std::fs::Permissions::from_mode(0o555)).unwrap();
    total
}

/// Runs shards `0..count` of `url` at once, shard `k` into `dest(k)`.
fn run_shards(url: &str, count: u32, extra: &[&str], dest: impl Fn(u32) -> String) -> Vec<Output> {
    let children: Vec<_> = (0..count)
        .map(|k| {
            get()
                .args(["get", "--json", "--streams", "2"])
                .arg(url)
                .arg(dest(k))
                .arg("--shard")
                .arg(format!("{k}/{count}"))
                .args(extra)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|child| child.wait_with_output().unwrap())
        .collect()
}

/// Each shard's parts, checked to cover every file of `source` exactly
/// once; the bytes of each shard.
fn check_parts(source: &Path, reports: &[serde_json::Value]) -> Vec<u64> {
    let mut parts: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    let mut per_shard = Vec::new();
    for report in reports {
        let shard = &report["shard"];
        let mut bytes = 0;
        for part in shard["parts"].as_array().unwrap() {
            let (start, end) = (
                part["start"].as_u64().unwrap(),
                part["end"].as_u64().unwrap(),
            );
            bytes += end - start;
            parts
                .entry(part["path"].as_str().unwrap().to_string())
                .or_default()
                .push((start, end));
        }
        assert_eq!(shard["bytes"].as_u64().unwrap(), bytes);
        per_shard.push(bytes);
    }
    let files: Vec<(String, u64)> = contents(source)
        .keys()
        .filter(|name| {
            std::fs::symlink_metadata(source.join(name))
                .unwrap()
                .is_file()
        })
        .map(|name| {
            (
                name.clone(),
                std::fs::metadata(source.join(name)).unwrap().len(),
            )
        })
        .collect();
    assert_eq!(parts.len(), files.len(), "every file in some shard, once");
    for (name, size) in files {
        let mut ranges = parts
            .remove(&name)
            .unwrap_or_else(|| panic!("{name} in no shard"));
        ranges.sort();
        let mut at = 0;
        for (start, end) in ranges {
            assert_eq!(start, at, "{name}: a gap or an overlap at {at}");
            at = end;
        }
        assert_eq!(at, size, "{name} not covered");
    }
    per_shard
}

fn hidden_names(root: &Path) -> Vec<String> {
    let mut hidden: Vec<String> = contents(root)
        .into_keys()
        .filter(|name| name.rsplit('/').next().unwrap().starts_with('.'))
        .collect();
    hidden.sort();
    hidden
}

#[test]
fn four_shards_into_one_destination_fetch_the_tree_once_balanced_by_bytes() {
    let served = tempfile::tempdir().unwrap();
    let total = tree(&served.path().join("t"));
    let (_server, url) = serve(served.path(), &[]);
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("shared");
    let outputs = run_shards(&format!("{url}/t/"), 4, &[], |_| dest.display().to_string());
    let reports: Vec<_> = outputs.iter().map(json_report).collect();
    let bytes = check_parts(&served.path().join("t"), &reports);
    assert_eq!(bytes.iter().sum::<u64>(), total);
    let mean = total as f64 / 4.0;
    for b in &bytes {
        assert!(
            (*b as f64 - mean).abs() <= 0.10 * mean,
            "shards' bytes {bytes:?} not within 10% of {mean}"
        );
    }
    let split: u64 = reports
        .iter()
        .map(|r| r["shard"]["ranges"].as_u64().unwrap())
        .sum();
    assert!(split >= 2, "the large files are split between shards");
    let finishers = reports
        .iter()
        .filter(|r| r["shard"]["finished_tree"] == true)
        .count();
    assert_eq!(finishers, 1, "exactly one shard finishes the tree");
    assert_eq!(contents(&served.path().join("t")), contents(&dest));
    assert_eq!(hidden_names(&dest), Vec::<String>::new());
    // Run again: everything is there, nothing is fetched.
    let outputs = run_shards(&format!("{url}/t/"), 4, &[], |_| dest.display().to_string());
    for output in &outputs {
        assert_eq!(json_report(output)["files"], 0, "{}", stderr(output));
    }
    assert_eq!(hidden_names(&dest), Vec::<String>::new());
}

#[test]
fn whole_files_shards_fill_destinations_of_their_own_with_each_file_once() {
    let served = tempfile::tempdir().unwrap();
    tree(&served.path().join("t"));
    let (_server, url) = serve(served.path(), &[]);
    let out = tempfile::tempdir().unwrap();
    let dest = |k: u32| out.path().join(format!("host{k}")).display().to_string();
    let outputs = run_shards(&format!("{url}/t/"), 4, &["--whole-files"], dest);
    let reports: Vec<_> = outputs.iter().map(json_report).collect();
    check_parts(&served.path().join("t"), &reports);
    for report in &reports {
        assert_eq!(report["shard"]["ranges"], 0);
        assert_eq!(report["shard"]["finished_tree"], true);
    }
    let source = contents(&served.path().join("t"));
    let mut seen: BTreeMap<String, u32> = BTreeMap::new();
    for k in 0..4 {
        for (name, what) in contents(Path::new(&dest(k))) {
            let meta = std::fs::symlink_metadata(Path::new(&dest(k)).join(&name)).unwrap();
            // Directories and symlinks are in every destination.
            assert_eq!(source.get(&name), Some(&what), "{name} in host{k}");
            if meta.is_file() {
                *seen.entry(name).or_default() += 1;
            }
        }
    }
    let files = source
        .keys()
        .filter(|n| {
            std::fs::symlink_metadata(served.path().join("t").join(n))
                .unwrap()
                .is_file()
        })
        .count();
    assert_eq!(seen.len(), files, "every file in some destination");
    assert!(seen.values().all(|&n| n == 1), "no file twice: {seen:?}");
}

#[test]
fn shard_auto_reads_slurm_and_kubernetes_variables_or_says_what_is_missing() {
    let served = tempfile::tempdir().unwrap();
    tree(&served.path().join("t"));
    let (_server, url) = serve(served.path(), &[]);
    let out = tempfile::tempdir().unwrap();
    let shard_of = |spec: &str, vars: &[(&str, &str)], dest: &str| -> Output {
        get()
            .args(["get", "--json", "--whole-files", "--shard", spec])
            .arg(format!("{url}/t/"))
            .arg(out.path().join(dest))
            .envs(vars.iter().copied())
            .output()
            .unwrap()
    };
    // Slurm, an array numbered from 1 (`--array=1-4`).
    let slurm = [
        ("SLURM_ARRAY_TASK_ID", "3"),
        ("SLURM_ARRAY_TASK_COUNT", "4"),
        ("SLURM_ARRAY_TASK_MIN", "1"),
    ];
    let report = json_report(&shard_of("auto", &slurm, "slurm"));
    assert_eq!(
        (
            report["shard"]["index"].as_u64(),
            report["shard"]["count"].as_u64()
        ),
        (Some(2), Some(4))
    );
    // A Kubernetes Indexed Job: the index from the pod, the count given.
    let k8s = [("JOB_COMPLETION_INDEX", "1")];
    let report = json_report(&shard_of("auto/3", &k8s, "k8s"));
    assert_eq!(
        (
            report["shard"]["index"].as_u64(),
            report["shard"]["count"].as_u64()
        ),
        (Some(1), Some(3))
    );
    let output = shard_of("auto", &k8s, "k8s-no-count");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("auto/N"), "{}", stderr(&output));
    // Neither: a usage error naming both, and nothing made.
    let output = shard_of("auto", &[], "neither");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains("SLURM_ARRAY_TASK_ID") && text.contains("JOB_COMPLETION_INDEX"),
        "{text}"
    );
    assert!(!out.path().join("neither").exists());
}

#[test]
fn four_put_shards_upload_the_tree_once_with_split_files_completed_by_the_server() {
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("t");
    let total = tree(&source);
    let token = work.path().join("token");
    std::fs::write(&token, "shard-token-0123456789abcdef\n").unwrap();
    let served = tempfile::tempdir().unwrap();
    let (_server, url) = serve(served.path(), &["--token-file", token.to_str().unwrap()]);
    let children: Vec<_> = (0..4)
        .map(|k| {
            get()
                .args(["put", "--json", "--streams", "2", "--piece-size", "1M"])
                .arg(&source)
                .arg(format!("{url}/up/"))
                .arg("--token-file")
                .arg(&token)
                .arg("--shard")
                .arg(format!("{k}/4"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let reports: Vec<_> = children
        .into_iter()
        .map(|child| json_report(&child.wait_with_output().unwrap()))
        .collect();
    let bytes = check_parts(&source, &reports);
    assert_eq!(bytes.iter().sum::<u64>(), total);
    let mean = total as f64 / 4.0;
    assert!(
        bytes
            .iter()
            .all(|b| (*b as f64 - mean).abs() <= 0.10 * mean),
        "{bytes:?}"
    );
    assert!(reports
        .iter()
        .any(|r| r["shard"]["ranges"].as_u64() > Some(0)));
    // Every file, whole, under its name; nothing else (PUT carries no
    // symlink), no partial upload left.
    let files = |root: &Path| -> BTreeMap<String, Vec<u8>> {
        contents(root)
            .into_iter()
            .filter(|(name, _)| {
                std::fs::symlink_metadata(root.join(name))
                    .unwrap()
                    .is_file()
            })
            .collect()
    };
    assert_eq!(files(&source), files(&served.path().join("up")));
}

#[test]
fn a_shard_killed_mid_range_leaves_no_file_at_its_name_and_its_rerun_completes_the_tree() {
    let served = tempfile::tempdir().unwrap();
    let root = served.path().join("t");
    std::fs::create_dir_all(root.join("d")).unwrap();
    let big = bytes(7, (8 << 20) + 99);
    std::fs::write(root.join("d/big"), &big).unwrap();
    std::fs::write(root.join("small"), b"small").unwrap();
    let (server, url) = serve(served.path(), &["--rate-per-connection", "2M"]);
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("shared");
    let shard = |k: u32| {
        let mut command = get();
        command
            .args(["get", "--json"])
            .arg(format!("{url}/t/"))
            .arg(&dest)
            .args(["--shard", &format!("{k}/2")]);
        command
    };
    // Shard 1 (the second half of `d/big`, at 2 MB/s) killed midway.
    let mut killed = shard(1)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = server.0.id();
    assert!(
        flexio_testkit::wait_until(
            || flexio_testkit::bytes_written_by(pid) >= 1 << 20,
            std::time::Duration::from_secs(60)
        ),
        "the server never sent shard 1 a MiB"
    );
    killed.kill().unwrap();
    assert!(!killed.wait().unwrap().success());
    // Shard 0 finishes its range: the file is not whole, so not at its name.
    let report = json_report(&shard(0).output().unwrap());
    assert_eq!(report["shard"]["ranges"], 1);
    assert_eq!(report["shard"]["finished_tree"], false);
    assert!(
        !dest.join("d/big").exists(),
        "a file with a range missing took its name"
    );
    assert!(
        !hidden_names(&dest).is_empty(),
        "its partial file and the notes stay"
    );
    // Shard 1 again: the file is committed whole and the tree finished.
    let report = json_report(&shard(1).output().unwrap());
    assert_eq!(report["shard"]["finished_tree"], true);
    assert_eq!(std::fs::read(dest.join("d/big")).unwrap(), big);
    assert_eq!(contents(&root), contents(&dest));
    assert_eq!(hidden_names(&dest), Vec::<String>::new());
}

#[test]
fn a_shard_of_another_count_into_the_same_destination_is_refused_and_makes_nothing() {
    let served = tempfile::tempdir().unwrap();
    tree(&served.path().join("t"));
    let (_server, url) = serve(served.path(), &[]);
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("shared");
    let shard = |spec: &str| {
        get()
            .args(["get", "--json"])
            .arg(format!("{url}/t/"))
            .arg(&dest)
            .args(["--shard", spec])
            .output()
            .unwrap()
    };
    let first = json_report(&shard("0/2"));
    assert_eq!(first["shard"]["finished_tree"], false);
    let before = contents(&dest);
    let refused = shard("1/3");
    let said = stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(
        said.contains("in 2 shards") && said.contains("shard 1/3"),
        "{said}"
    );
    assert_eq!(contents(&dest), before, "the refused shard made nothing");
    // The shard the first one waits for still finishes the tree.
    let last = json_report(&shard("1/2"));
    assert_eq!(last["shard"]["finished_tree"], true);
    assert_eq!(contents(&served.path().join("t")), contents(&dest));
    assert_eq!(hidden_names(&dest), Vec::<String>::new());
}

#[test]
fn a_shard_run_after_the_tree_is_whole_fetches_nothing_and_leaves_nothing() {
    let served = tempfile::tempdir().unwrap();
    tree(&served.path().join("t"));
    let (_server, url) = serve(served.path(), &[]);
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("shared");
    for output in run_shards(&format!("{url}/t/"), 4, &[], |_| dest.display().to_string()) {
        json_report(&output);
    }
    assert_eq!(contents(&served.path().join("t")), contents(&dest));
    // Shard 2 alone, again (a requeued task, or one run late): the tree is
    // whole and its coordination directory gone.
    let late = get()
        .args(["get", "--json"])
        .arg(format!("{url}/t/"))
        .arg(&dest)
        .args(["--shard", "2/4"])
        .output()
        .unwrap();
    let report = json_report(&late);
    assert_eq!(report["files"], 0, "{}", stderr(&late));
    assert_eq!(report["shard"]["finished_tree"], false);
    assert_eq!(
        hidden_names(&dest),
        Vec::<String>::new(),
        "a late shard left a coordination directory"
    );
    assert_eq!(contents(&served.path().join("t")), contents(&dest));
    // A tree not whole (a file gone) is fetched again as usual: the shard
    // that owns it fetches it, and waits for the others.
    let gone = "small/f001";
    std::fs::remove_file(dest.join(gone)).unwrap();
    let outputs = run_shards(&format!("{url}/t/"), 4, &[], |_| dest.display().to_string());
    let fetched: u64 = outputs
        .iter()
        .map(|o| json_report(o)["files"].as_u64().unwrap())
        .sum();
    assert_eq!(fetched, 1);
    assert_eq!(contents(&served.path().join("t")), contents(&dest));
    assert_eq!(hidden_names(&dest), Vec::<String>::new());
}
