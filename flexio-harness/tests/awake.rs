//! Holding the CPUs awake for real (as root): the kernel's CPU latency
//! request reads 0 while held and what it was once dropped.

use std::path::Path;

use flexio_harness::awake::CpusAwake;

/// The kernel's CPU latency request.
const REQUEST: &str = "/dev/cpu_dma_latency";

/// The request in force, in microseconds: the device reads back the
/// smallest of all open requests (2 000 000 000 where none is open).
fn request_in_force() -> i32 {
    let mut bytes = [0u8; 4];
    let mut file = std::fs::File::open(REQUEST).unwrap();
    std::io::Read::read_exact(&mut file, &mut bytes).unwrap();
    i32::from_ne_bytes(bytes)
}

#[test]
fn the_request_is_zero_while_held_and_withdrawn_when_dropped() {
    if !flexio_testkit::is_root() {
        let why = CpusAwake::hold().unwrap_err().to_string();
        assert!(
            why.starts_with("skipped: ") && why.contains("needs root"),
            "{why}"
        );
    }
    let present = Path::new(REQUEST)
        .exists()
        .then_some(())
        .ok_or_else(|| format!("no {REQUEST}"));
    if !flexio_testkit::require_root("the CPU latency request")
        || !flexio_testkit::require_feature("the CPU latency request", present)
    {
        return;
    }
    let before = request_in_force();
    let awake = CpusAwake::hold().unwrap();
    assert_eq!(request_in_force(), 0);
    drop(awake);
    assert_eq!(request_in_force(), before);
}
