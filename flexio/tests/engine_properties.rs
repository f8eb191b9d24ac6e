//! Random sizes, ranges, chunk and pipe sizes, file -> file and file -> pipe,
//! through every mechanism that serves the pair; every byte checked.

use crate::common;

use std::fs::{self, File};

use common::*;
use flexio::{EndpointKind, Flow, MechanismName, Params, Sink, Source};
use proptest::prelude::*;

/// One generated flow.
#[derive(Clone, Debug)]
struct Shape {
    size: usize,
    offset: usize,
    /// `None`: to the end of the source.
    length: Option<usize>,
    chunk: usize,
    pipe_size: usize,
    salt: usize,
}

fn shapes() -> impl Strategy<Value = Shape> {
    // Mostly realistic chunks over sizes up to 4 MiB; a few tiny chunks,
    // over small sizes only (a 1-byte chunk is a system call per byte).
    let sizes_and_chunks = prop_oneof![
        9 => (0..4 * MIB, 512..=MIB),
        1 => (0..16 * KIB, 1..512usize),
    ];
    (
        sizes_and_chunks,
        any::<prop::sample::Index>(),
        prop::option::of(any::<prop::sample::Index>()),
        4096..=MIB,
        any::<usize>(),
    )
        .prop_map(|((size, chunk), offset, length, pipe_size, salt)| {
            let offset = offset.index(size + 1);
            let length = length.map(|l| l.index(size - offset + 1));
            Shape {
                size,
                offset,
                length,
                chunk,
                pipe_size,
                salt,
            }
        })
}

fn check(shape: &Shape) -> Result<(), String> {
    let dir = scratch_dir();
    let content = data(shape.size, shape.salt);
    let source = dir.path().join("source");
    write_file(&source, content);
    let end = shape.length.map_or(shape.size, |l| shape.offset + l);
    let expected = &content[shape.offset..end];
    let params = Params {
        chunk: shape.chunk,
        pipe_size: shape.pipe_size,
        ..Params::default()
    };
    let flow = |sink: Sink<'static>, mechanism: MechanismName| {
        let flow = Flow::new(Source::path(&source), sink)
            .offset(shape.offset as u64)
            .via(mechanism)
            .params(params.clone());
        match shape.length {
            Some(length) => flow.length(length as u64),
            None => flow,
        }
    };
    let mut failures = Vec::new();

    let copy = dir.path().join("copy");
    for mechanism in MechanismName::serving(EndpointKind::File, EndpointKind::File) {
        let _ = fs::remove_file(&copy);
        let outcome = flow(Sink::path(&copy), mechanism)
            .run()
            .map_err(|e| format!("flow failed: {e}"))
            .and_then(|report| {
                check_report(&report, mechanism, expected.len() as u64)?;
                check_bytes("the copy", &fs::read(&copy).unwrap(), expected)
            });
        if let Err(why) = outcome {
            failures.push(format!("file -> file via {mechanism}: {why}"));
        }
    }

    for mechanism in MechanismName::serving(EndpointKind::File, EndpointKind::Pipe) {
        let (read, write) = pipe();
        let (result, received) = std::thread::scope(|scope| {
            let reader = scope.spawn(move || drain_and_hash(File::from(read)));
            let result = flow(Sink::Fd(write, "pipe".into()), mechanism).run();
            (result, reader.join().expect("reader thread"))
        });
        let outcome = result
            .map_err(|e| format!("flow failed: {e}"))
            .and_then(|report| {
                check_report(&report, mechanism, expected.len() as u64)?;
                let (count, actual) = received.map_err(|e| format!("read the pipe: {e}"))?;
                if (count, actual) != (expected.len() as u64, hash(expected)) {
                    return Err(format!(
                        "the pipe carried {count} bytes, not the {} expected",
                        expected.len()
                    ));
                }
                Ok(())
            });
        if let Err(why) = outcome {
            failures.push(format!("file -> pipe via {mechanism}: {why}"));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_mechanism_moves_every_byte_of_any_range(shape in shapes()) {
        if let Err(why) = check(&shape) {
            return Err(TestCaseError::fail(why));
        }
    }
}

/// `auto` on a memory flow takes the copy kernel of the profile's range
/// for its size, and the bytes arrive whole.
#[test]
fn auto_takes_the_copy_kernel_of_the_profile_range() {
    use flexio::profile::{Fingerprint, FlowKind, FlowProfile, Profile, RangeEntry};
    use flexio::CopyKernel;
    let dir = scratch_dir();
    let large = *CopyKernel::available()
        .last()
        .expect("threads runs everywhere");
    let entry = |min_bytes, max_bytes, copy_kernel| RangeEntry {
        min_bytes,
        max_bytes,
        mechanism: MechanismName::ReadWrite,
        chunk: 256 << 10,
        queue_depth: 32,
        pipe_size: 1 << 20,
        direct: false,
        copy_kernel,
        throughput_bytes_per_s: 1,
        spread: 0.0,
        measured_at: Vec::new(),
    };
    let mut profile = Profile::new(Fingerprint::of_this_machine(dir.path()), dir.path());
    profile.flows.push(FlowProfile {
        kind: FlowKind::MemoryToMemory,
        ranges: vec![
            entry(0, Some(4096), CopyKernel::RepMovsb),
            entry(4096, None, large),
        ],
        curves: Vec::new(),
    });
    let profile = Profile::parse(&profile.to_toml(), &dir.path().join("p.toml")).unwrap();
    for (len, expected) in [(100, CopyKernel::RepMovsb), (3 * MIB, large)] {
        let bytes = data(len, len);
        let mut sink = vec![0u8; len];
        let report = Flow::new(Source::Memory(bytes), Sink::Memory(&mut sink))
            .profile(Some(&profile))
            .run()
            .unwrap();
        assert_eq!(report.params.copy_kernel, expected, "{len} bytes");
        assert!(
            report.decided_by.contains("memory-to-memory"),
            "{}",
            report.decided_by
        );
        assert!(sink == bytes, "{len} bytes via {expected}");
    }
}
