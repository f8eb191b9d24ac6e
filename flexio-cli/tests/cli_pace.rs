//! `--rate`, `--burst`, `--schedule` on the command line, and the bench's
//! pace scenario.

use crate::common;

use common::flexio;

#[test]
fn a_serve_schedule_with_a_bad_value_is_refused_with_its_reason() {
    let cases = [
        ("0,16", "K must be at least 1"),
        ("4", "no comma"),
        ("x,16", "K is not a whole number"),
        ("4,soon", "T is not a time"),
        ("4,61s", "T is over a minute"),
    ];
    for (schedule, why) in cases {
        let output = flexio()
            .args(["serve", ".", "--schedule", schedule])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{schedule}: {stderr}");
        assert!(
            stderr.contains("--schedule") && stderr.contains(why),
            "{schedule}: {stderr}"
        );
        assert!(
            !stderr.contains("serving"),
            "{schedule}: it served: {stderr}"
        );
    }
}

#[test]
fn bad_pacing_values_are_usage_errors_that_name_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    std::fs::write(&source, b"data").unwrap();
    let sink = dir.path().join("sink");
    let cases: [(&[&str], &str); 8] = [
        (&["--rate", "0"], "--rate"),
        (&["--rate", "fast"], "--rate"),
        (&["--rate", "10Xbit/s"], "--rate"),
        (&["--burst", "0"], "--burst"),
        (&["--burst", "4G"], "--burst"),
        (&["--schedule", "3"], "--schedule"),
        (&["--schedule", "0,5"], "--schedule"),
        (&["--rate", "1M", "--pace-by", "nic"], "--pace-by"),
    ];
    for (flags, named) in cases {
        let output = flexio()
            .arg("copy")
            .args(flags)
            .arg(&source)
            .arg(&sink)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(named), "{flags:?}: {stderr}");
        assert!(!sink.exists(), "{flags:?} wrote the sink");
    }
    for args in [
        &["serve", ".", "--rate-total", "0"][..],
        &["serve", ".", "--rate-per-client", "x"],
        &["serve", ".", "--max-chunk", "0"],
        &["get", "--rate", "0", "http://127.0.0.1:1/f"],
        &[
            "put",
            "--rate",
            "nope",
            "--token-file",
            "t",
            "f",
            "http://127.0.0.1:1/f",
        ],
    ] {
        let output = flexio().args(args).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // A tree copy paces its files with one rate shared by its workers
    // (read-write: a reflink would move no bytes to pace).
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    for i in 0..4 {
        std::fs::write(tree.join(format!("f{i}")), vec![i as u8; 256 << 10]).unwrap();
    }
    let started = std::time::Instant::now();
    let output = flexio()
        .args([
            "copy",
            "-r",
            "--jobs",
            "4",
            "--via",
            "read-write",
            "--rate",
            "2M",
            "--burst",
            "64K",
        ])
        .arg(&tree)
        .arg(dir.path().join("copy"))
        .output()
        .unwrap();
    let elapsed = started.elapsed().as_secs_f64();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // 1 MiB at 2 MiB/s: all but the bucket's burst and one call per
    // worker take their time at the rate.
    let least = ((1 << 20) - 5 * (64 << 10)) as f64 / (2 << 20) as f64;
    assert!(elapsed >= least, "1 MiB in {elapsed:.3} s at 2 MiB/s");
    assert_eq!(
        std::fs::read(dir.path().join("copy/f3")).unwrap(),
        vec![3u8; 256 << 10]
    );
    let output = flexio()
        .args(["copy", "-r", "--schedule", "0,1"])
        .arg(&tree)
        .arg(dir.path().join("copy2"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn the_pace_scenario_reports_target_and_the_receivers_rate_with_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let seconds = 0.5;
    let output = flexio()
        .args([
            "bench",
            "--scenario",
            "pace",
            "--pace-seconds",
            "0.5",
            "--pace-rates",
            "8M",
        ])
        .arg("--dir")
        .arg(dir.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("pace.json")).unwrap()).unwrap();
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "{json}");
    let target = 8u64 << 20;
    let bytes = (target as f64 * seconds) as u64;
    for (result, (sink, paced_by)) in results.iter().zip([
        ("tcp", "kernel"),
        ("tcp", "token-bucket"),
        ("unix", "token-bucket"),
    ]) {
        assert_eq!(result["sink"], sink);
        assert_eq!(result["paced_by"], paced_by, "{result}");
        assert_eq!(result["target_bytes_per_s"], target);
        assert_eq!(result["bytes"], bytes, "every byte arrived");
        // The figures agree with each other: the rate is the bytes over
        // the receiver's clock, and the error that rate against the target.
        let seconds = result["receiver_ns"].as_u64().unwrap() as f64 / 1e9;
        let rate = result["receiver_bytes_per_s"].as_u64().unwrap() as f64;
        // (Bytes of the first read arrived before the receiver's clock
        // started: the rate leaves them out.)
        let counted = bytes - result["first_read_bytes"].as_u64().unwrap();
        assert!(
            (rate * seconds - counted as f64).abs() <= bytes as f64 * 1e-3,
            "{result}"
        );
        let error = result["error_percent"].as_f64().unwrap();
        assert!(
            (error - (rate / target as f64 - 1.0) * 100.0).abs() < 0.01,
            "{result}"
        );
        // A paced flow may run late on a loaded machine, never much early:
        // at most what may be queued ahead of the receiver (a 64 KiB
        // burst, the kernel's low-water mark, TCP's initial window).
        let ahead = 1.0 * (1 << 20) as f64;
        assert!(
            counted as f64 <= target as f64 * seconds + ahead,
            "{result}"
        );
    }
    assert!(std::fs::read_to_string(out.join("pace.md"))
        .unwrap()
        .contains("token-bucket"));
    let chart = std::fs::read_to_string(out.join("pace.svg")).unwrap();
    assert!(chart.contains("<svg") && chart.contains("the rate asked for"));
}

#[test]
fn rate_per_client_is_a_hidden_alias_that_says_it_limits_each_connection() {
    let help = flexio().args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--rate-per-connection"), "{help}");
    assert!(!help.contains("--rate-per-client"), "{help}");
    let dir = tempfile::tempdir().unwrap();
    let mut serve = flexio()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--rate-per-client",
            "1M",
        ])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(serve.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
    let _ = serve.kill();
    let _ = serve.wait();
    assert!(
        line.contains("deprecated") && line.contains("each connection"),
        "{line}"
    );
    let both = flexio()
        .args([
            "serve",
            ".",
            "--rate-per-client",
            "1M",
            "--rate-per-connection",
            "1M",
        ])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
}
