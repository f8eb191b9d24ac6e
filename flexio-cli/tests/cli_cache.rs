//! `flexio cache sim` and `flexio cache bench` end to end: a generated
//! trace, a table, JSON and a chart; a bad policy is a usage error; the
//! bench scenario on tiny sizes.

use std::process::Command;

fn flexio() -> Command {
    Command::new(env!("CARGO_BIN_EXE_flexio"))
}

#[test]
fn cache_sim_prints_a_table_json_and_a_chart() {
    let dir = tempfile::tempdir().unwrap();
    let chart = dir.path().join("hits.svg");
    let output = flexio()
        .args(["cache", "sim", "--trace", "loop:blocks=10,len=1000"])
        .args(["--policy", "lru,clock", "--size", "5,10", "--chart"])
        .arg(&chart)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    // A loop twice the cache defeats LRU and CLOCK entirely; a cache as
    // large as the loop misses only the first lap.
    let five = text
        .lines()
        .find(|l| l.trim_start().starts_with("5 "))
        .unwrap();
    assert_eq!(
        five.split_whitespace().collect::<Vec<_>>(),
        ["5", "0.00", "0.00"]
    );
    let ten = text
        .lines()
        .find(|l| l.trim_start().starts_with("10 "))
        .unwrap();
    assert_eq!(
        ten.split_whitespace().collect::<Vec<_>>(),
        ["10", "99.00", "99.00"]
    );
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert!(svg.contains("<svg") && svg.contains("cache size (blocks, log2 scale)"));

    let output = flexio()
        .args([
            "cache",
            "sim",
            "--trace",
            "scan:len=100",
            "--size",
            "8",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["schema_version"], 2);
    // Every policy of the cache, and MIN.
    assert_eq!(
        json["results"].as_array().unwrap().len(),
        flexio_cache::policy::PolicyName::ALL.len() + 1
    );
    assert!(json["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["hits"] == 0));
}

/// MIN beside the policies, and each policy's place between LRU and MIN.
#[test]
fn cache_sim_puts_each_policy_on_the_way_from_lru_to_min() {
    let output = flexio()
        .args(["cache", "sim", "--trace", "loop:blocks=12,len=1200"])
        .args(["--policy", "lru,s3-fifo,min", "--size", "10"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("10 "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    // LRU hits nothing on a loop over the cache; MIN keeps nine of the
    // twelve blocks after the first lap: (1200 - 12) / 12 * 9 / 11 ...
    assert_eq!(rows.len(), 2, "{text}");
    assert_eq!(rows[0][1], "0.00", "{text}");
    let min: f64 = rows[0][3].parse().unwrap();
    assert!(min > 75.0, "{text}");
    // ... and the second table says where S3-FIFO lies between them.
    assert!(
        text.contains("the way from LRU (0 %) to MIN (100 %)"),
        "{text}"
    );
    let s3: f64 = rows[0][2].parse().unwrap();
    let way: f64 = rows[1][1].trim_end_matches('%').parse().unwrap();
    assert!((way - 100.0 * s3 / min).abs() < 1.0, "{text}");
}

#[test]
fn cache_sim_refuses_an_unknown_policy() {
    let output = flexio()
        .args([
            "cache",
            "sim",
            "--trace",
            "scan:len=10",
            "--size",
            "4",
            "--policy",
            "mru",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown policy"));
}

#[test]
fn cache_sim_takes_a_size_of_billions_of_blocks_as_the_whole_trace() {
    // Past the trace's distinct blocks nothing is evicted, so it is
    // replayed at that many: no allocation of billions of frames.
    let output = flexio()
        .args([
            "cache",
            "sim",
            "--trace",
            "loop:blocks=3,len=7",
            "--size",
            "2,5000000000",
            "--policy",
            "lru,clock,sieve,s3-fifo,arc,adaptive,lirs,w-tinylfu,min,min-per-block",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let results = json["results"].as_array().unwrap();
    let large: Vec<_> = results
        .iter()
        .filter(|r| r["size_blocks"] == 5_000_000_000u64)
        .collect();
    assert_eq!(large.len(), 10);
    assert!(large.iter().all(|r| r["hits"] == 4), "{large:?}");
}

#[test]
fn cache_bench_measures_every_part_on_tiny_sizes() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let output = flexio()
        .args([
            "cache",
            "bench",
            "--runs",
            "1",
            "--files-mib",
            "1,2",
            "--cache-size",
            "1MiB",
        ])
        .args([
            "--hot-reads",
            "300",
            "--serve-window",
            "300ms",
            "--json",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let rows = json["files"].as_array().unwrap();
    let files: Vec<_> = rows.iter().filter(|r| r["source"] == "file").collect();
    assert_eq!(files.len(), 2);
    assert_loop_device_rows_or_a_reason(&json, dir.path());
    // 2 MiB read in a loop through a 1 MiB cache thrashes: the second pass
    // reads every block from the device again.
    assert_eq!(files[1]["warm_from_cache_percent"], 0.0);
    assert!(
        files[0]["cold_multi_block_mib_s"]["median"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(
        json["hits"]["reference_lookups_per_s"]["median"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    // Every policy, then the page cache in a memory cgroup when root.
    let rows = json["hot_set"].as_array().unwrap();
    let policies = flexio_cache::policy::PolicyName::ALL.len();
    let privileged = std::env::var_os("FLEXIO_TEST_PRIVILEGED").is_some_and(|v| v == "1");
    if rows.len() == policies {
        eprintln!("page cache row skipped: {}", json["page_cache_note"]);
        assert!(
            !privileged,
            "FLEXIO_TEST_PRIVILEGED=1 wants the page-cache row"
        );
    } else {
        assert_eq!(rows.len(), policies + 1);
        assert_eq!(rows[policies]["policy"], "page-cache");
        assert!(rows[policies]["hit_percent_alone"].as_f64().unwrap() > 0.0);
    }
    // serve and serve --cache each served the hot set alone and during
    // the scan, and the scan moved.
    let serve = &json["serve"]["rows"];
    assert_eq!(serve.as_array().unwrap().len(), 2, "{}", json["serve_note"]);
    for row in serve.as_array().unwrap() {
        for key in [
            "hot_alone_requests_per_s",
            "hot_with_scan_requests_per_s",
            "scan_mib_s",
        ] {
            assert!(row[key]["median"].as_f64().unwrap() > 0.0, "{row}");
        }
    }
    let setup = json["serve"]["setup"].as_str().unwrap();
    assert_eq!(
        setup.contains("no memory limit"),
        !rustix::process::geteuid().is_root(),
        "{setup}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "data files removed"
    );
}

/// As root, the table has the loop device's rows (one per file size) and
/// the device is detached afterwards; otherwise the report says why not.
fn assert_loop_device_rows_or_a_reason(json: &serde_json::Value, dir: &std::path::Path) {
    let rows = json["files"].as_array().unwrap();
    let loop_rows: Vec<_> = rows
        .iter()
        .filter(|r| r["source"].as_str().unwrap().starts_with("loop /dev/"))
        .collect();
    let privileged = std::env::var_os("FLEXIO_TEST_PRIVILEGED").is_some_and(|v| v == "1");
    if rustix::process::geteuid().is_root() {
        assert_eq!(loop_rows.len(), 2, "{json}");
        assert!(
            loop_rows[0]["cold_multi_block_mib_s"]["median"]
                .as_f64()
                .unwrap()
                > 0.0
        );
        let attached = Command::new("losetup").arg("-a").output().unwrap();
        let attached = String::from_utf8_lossy(&attached.stdout);
        assert!(
            !attached.contains(dir.to_str().unwrap()),
            "the loop device is detached: {attached}"
        );
    } else {
        assert!(!privileged, "FLEXIO_TEST_PRIVILEGED=1 wants the loop rows");
        assert!(loop_rows.is_empty());
        let note = json["loop_device_note"].as_str().unwrap();
        assert!(note.contains("needs root"), "{note}");
        eprintln!("loop device rows skipped: {note}");
    }
}

#[test]
fn bench_scenario_cache_prints_the_tables_and_writes_cache_json_and_md() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = dir.path().join("report");
    let output = flexio()
        .args([
            "bench",
            "--scenario",
            "cache",
            "--runs",
            "1",
            "--sizes",
            "1M",
        ])
        .args(["--cache-size", "1MiB", "--dir"])
        .arg(dir.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("S.M.A.C.K.'s table"), "{text}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("cache.json")).unwrap()).unwrap();
    assert_eq!(json["cache_bytes"], 1 << 20);
    assert_eq!(json["files"][0]["file_mib"], 1);
    assert!(std::fs::read_to_string(out.join("cache.md"))
        .unwrap()
        .contains("S.M.A.C.K."));
    // Only the report is left: the work directory and the data are gone.
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only the report directory is left"
    );
}

#[test]
fn serve_with_cache_says_so_and_serves_the_files_bytes() {
    use std::io::BufRead;
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let data: Vec<u8> = (0..(3 << 20) + 5)
        .map(|i: usize| (i * 131 % 251) as u8)
        .collect();
    std::fs::write(dir.path().join("data.bin"), &data).unwrap();
    let mut child = flexio()
        .arg("serve")
        .arg(dir.path())
        .args(["--cache", "1MiB", "--cache-policy", "sieve"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .map(|url| url.trim_end_matches('/').to_string());
    let out = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let fetched = url.as_ref().map(|url| {
        flexio()
            .args(["get", "--streams", "2", "--piece-size", "1MiB"])
            .arg(format!("{url}/data.bin"))
            .arg(out.path())
            .output()
            .unwrap()
    });
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        line.contains("1024 KiB sieve block cache over O_DIRECT")
            && line.contains("instead of sendfile"),
        "{line}"
    );
    let fetched = fetched.unwrap();
    assert!(fetched.status.success(), "{fetched:?}");
    assert!(std::fs::read(out.path().join("data.bin")).unwrap() == data);
}

#[test]
fn cache_bench_parts_runs_only_the_parts_asked_for() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let output = flexio()
        .args(["cache", "bench", "--runs", "1", "--cache-size", "1MiB"])
        .args(["--parts", "hits", "--json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(json["files"].as_array().unwrap().is_empty());
    assert!(json["hot_set"].as_array().unwrap().is_empty());
    assert!(json["serve"].is_null());
    assert!(
        json["hits"]["copy_out_over_memcpy"]["median"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let output = flexio()
        .args(["cache", "bench", "--parts", "hits,warp"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
}

/// Issue 24: `serve --cache 30G` on a machine with less memory panicked
/// mapping the frames (exit 134); it is a usage error naming the memory
/// available, as `--cache 0` is.
#[test]
fn serve_cache_larger_than_memory_is_a_usage_error_naming_the_memory() {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let total_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    let too_much = (total_kib << 10) + (1 << 30);
    let dir = tempfile::tempdir().unwrap();
    let output = flexio()
        .args(["serve", "--listen", "127.0.0.1:0", "--cache"])
        .arg(too_much.to_string())
        .arg(dir.path())
        .output()
        .unwrap();
    let message = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains("memory available"), "{message}");
    assert!(!message.contains("panicked"), "{message}");
}
