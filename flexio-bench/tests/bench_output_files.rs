//! The bench's output files are replaced only when they are regular files
//! (issue 12, A2): a `results.json` or `report.md` that is a FIFO or a link
//! to a device is an error naming it, and the node is left as it was.

use std::os::unix::fs::FileTypeExt;
use std::process::Command;

use flexio_bench::model::{Results, SCHEMA_VERSION};
use flexio_bench::output::{self, REPORT_MD, RESULTS_JSON};

fn empty_results() -> Results {
    Results {
        schema_version: SCHEMA_VERSION,
        ..Results::default()
    }
}

#[test]
fn bench_output_refuses_a_fifo_as_results_json() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join(RESULTS_JSON);
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let error = output::write_all(dir.path(), &empty_results()).unwrap_err();
    let message = error.to_string();
    assert!(message.contains(RESULTS_JSON), "{message}");
    assert!(
        message.contains("is a FIFO, not a regular file"),
        "{message}"
    );
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo());
}

#[test]
fn bench_output_refuses_a_link_to_a_device_as_report_md() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join(REPORT_MD);
    std::os::unix::fs::symlink("/dev/null", &report).unwrap();
    let error = output::write_all(dir.path(), &empty_results()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("is a symbolic link to a character device"),
        "{error}"
    );
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    assert!(std::fs::symlink_metadata(&report)
        .unwrap()
        .file_type()
        .is_symlink());
    // Replacing regular files works, again and again.
    std::fs::remove_file(&report).unwrap();
    for _ in 0..2 {
        output::write_all(dir.path(), &empty_results()).unwrap();
    }
    let report = std::fs::read_to_string(dir.path().join(REPORT_MD)).unwrap();
    assert!(!report.is_empty());
}
