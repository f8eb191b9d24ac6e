//! `flexio copy FILE gpu:N`: a file into GPU memory, by each mode, checked
//! by reading it back; and what a machine without a GPU, or a wrong
//! device name, gets told.

use crate::common;

use common::{flexio, stderr};

fn gpu_present() -> bool {
    let probe = flexio::device::Gpu::open(0)
        .map(|_| ())
        .map_err(|e| e.to_string());
    flexio_testkit::require_device(probe)
}

#[test]
fn without_a_driver_copy_to_a_gpu_fails_naming_the_device_and_the_driver() {
    if flexio::device::driver_present() {
        flexio_testkit::skipped("this machine has NVIDIA's driver");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.bin");
    std::fs::write(&file, vec![7u8; 100_000]).unwrap();
    // Run in the temporary directory: were `gpu:0` taken for a file name,
    // the copy would land there, not in the source tree.
    let output = flexio()
        .current_dir(dir.path())
        .arg("copy")
        .arg(&file)
        .arg("gpu:0")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let said = stderr(&output);
    assert!(
        said.contains("gpu:0") && said.contains("libcuda.so.1"),
        "{said}"
    );
}

#[test]
fn a_wrong_gpu_name_a_gpu_source_and_a_flow_flag_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, b"bytes").unwrap();
    let out = dir.path().join("out");
    for (args, says) in [
        (vec![file.to_str().unwrap(), "gpu:zero"], "gpu:N@OFFSET+LEN"),
        (vec!["gpu:0", out.to_str().unwrap()], "copy into gpu:N"),
        (
            vec!["--rate", "1M", file.to_str().unwrap(), "gpu:0"],
            "--rate does not apply",
        ),
        (
            vec!["--via", "splice", file.to_str().unwrap(), "gpu:0"],
            "known: pageable, pinned, staged, registered",
        ),
    ] {
        let output = flexio()
            .current_dir(dir.path())
            .arg("copy")
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(says),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    assert!(!out.exists());
}

#[test]
fn a_file_named_like_a_gpu_is_copied_to_when_written_as_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, b"bytes").unwrap();
    let output = flexio()
        .current_dir(dir.path())
        .args(["copy", "f", "./gpu:0"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read(dir.path().join("gpu:0")).unwrap(), b"bytes");
}

#[test]
fn every_mode_loads_a_file_into_the_gpu_and_verifies_it() {
    if !gpu_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.bin");
    let bytes: Vec<u8> = (0..5_000_000u32).map(|i| ((i * 31) >> 3) as u8).collect();
    std::fs::write(&file, &bytes).unwrap();
    for via in ["auto", "pageable", "pinned", "staged", "registered"] {
        let output = flexio()
            .args(["copy", "--verify", "--json", "--via", via])
            .arg(&file)
            .arg("gpu:0@4096")
            .output()
            .unwrap();
        assert!(output.status.success(), "{via}: {}", stderr(&output));
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(report["bytes"], 5_000_000, "{report}");
        assert_eq!(report["verified"], true, "{report}");
    }
}
