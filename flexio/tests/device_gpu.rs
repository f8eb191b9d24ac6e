//! A GPU as an endpoint: every injection mode carries a file into device
//! memory and back byte for byte, at offsets and sizes around a piece's
//! edges; bad ranges are refused with the device named. On a machine
//! without a GPU these skip, saying why, except the test that checks that
//! why (and they fail instead under `FLEXIO_TEST_DEVICE=1`).

use flexio::device::{self, load_file, store_file, DeviceAddress, DeviceMode, Gpu, GpuError};

/// The first GPU, or `None` after a printed skip.
fn first_gpu() -> Option<Gpu> {
    let opened = Gpu::open(0).map_err(|e| e.to_string());
    let probe = opened.as_ref().map(|_| ()).map_err(Clone::clone);
    flexio_testkit::require_device(probe).then(|| opened.expect("probed"))
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u64).wrapping_mul(2_654_435_761).to_le_bytes()[1] ^ seed)
        .collect()
}

fn at(text: &str) -> DeviceAddress {
    DeviceAddress::parse(text).unwrap().unwrap()
}

#[test]
fn without_a_driver_a_gpu_endpoint_says_what_is_missing() {
    if device::driver_present() {
        flexio_testkit::skipped("this machine has NVIDIA's driver");
        return;
    }
    assert_eq!(Gpu::open(0).unwrap_err(), GpuError::NoDriver);
    let message = Gpu::open(0).unwrap_err().to_string();
    assert!(message.contains("libcuda.so.1"), "{message}");
}

#[test]
fn every_mode_carries_a_file_to_the_gpu_and_back_byte_for_byte() {
    let Some(gpu) = first_gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let piece = 64 << 10;
    for len in [0, 1, 4095, 4096, 4097, piece - 1, piece, 3 * piece + 5] {
        let bytes = data(len, len as u8);
        let source = dir.path().join("in");
        std::fs::write(&source, &bytes).unwrap();
        for offset in [0, 4096, 12345] {
            for mode in DeviceMode::ALL {
                let address = at(&format!("gpu:0@{offset}"));
                let (memory, report) = load_file(&source, &gpu, address, mode, piece).unwrap();
                assert_eq!(report.bytes, len as u64);
                assert_eq!(memory.len(), offset + len);
                let back = dir.path().join("out");
                let stored = store_file(
                    &gpu,
                    &memory,
                    at(&format!("gpu:0@{offset}+{len}")),
                    &back,
                    piece,
                )
                .unwrap();
                assert_eq!(stored.bytes, len as u64);
                let got = std::fs::read(&back).unwrap();
                assert!(got == bytes, "{mode:?}, {len} bytes at {offset}: differ");
                // What lies before the offset is the zeroes it was given.
                if offset > 0 {
                    let head = dir.path().join("head");
                    store_file(
                        &gpu,
                        &memory,
                        at(&format!("gpu:0@0+{offset}")),
                        &head,
                        piece,
                    )
                    .unwrap();
                    assert!(std::fs::read(&head).unwrap().iter().all(|&b| b == 0));
                }
            }
        }
    }
}

#[test]
fn a_range_outside_device_memory_and_a_short_file_are_refused_with_the_place() {
    let Some(gpu) = first_gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("in");
    std::fs::write(&source, data(10_000, 1)).unwrap();
    // Asked for more than the file holds: the file's end, named.
    let error = load_file(&source, &gpu, at("gpu:0@0+20000"), DeviceMode::Staged, 4096)
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(error, flexio::Error::SourceEnded { offset: 10_000, .. }),
        "{error}"
    );
    let (memory, _) = load_file(&source, &gpu, at("gpu:0"), DeviceMode::Pinned, 4096).unwrap();
    let out = dir.path().join("out");
    let error = store_file(&gpu, &memory, at("gpu:0@8192+4096"), &out, 4096).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("gpu:0@8192+4096"), "{message}");
    assert!(message.contains("outside the device buffer"), "{message}");
    // Nothing is left at the name after a failed store.
    assert!(!out.exists());
}

#[test]
fn a_second_load_after_a_failed_one_carries_only_its_own_bytes() {
    let Some(gpu) = first_gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short");
    std::fs::write(&short, data(5000, 3)).unwrap();
    for mode in DeviceMode::ALL {
        assert!(load_file(&short, &gpu, at("gpu:0@0+9000"), mode, 4096).is_err());
        let whole = dir.path().join("whole");
        let bytes = data(70_000, 9);
        std::fs::write(&whole, &bytes).unwrap();
        let (memory, _) = load_file(&whole, &gpu, at("gpu:0"), mode, 4096).unwrap();
        let back = dir.path().join("back");
        store_file(&gpu, &memory, at("gpu:0"), &back, 4096).unwrap();
        assert!(std::fs::read(&back).unwrap() == bytes, "{mode:?}");
    }
}
