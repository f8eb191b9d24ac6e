//! `flexio tune --quick` with `stress` spinning on half the CPUs: it warns that the machine
//! was busy, and the profile it writes is not worse than none — every
//! range that leaves the built-in choice rests on a lead beyond both
//! candidates' noise in the profile's own curves, and the tree copy keeps
//! its default workers. Skips with a printed reason without `stress`
//! (Debian's `stress`; `.ci/run` installs it), fails then under
//! `FLEXIO_TEST_PRIVILEGED=1`.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{flexio, stderr, wait_at_most};
use flexio::profile::{FlowKind, Profile};
use flexio_tune::select::{separation, Candidate, Measurement};
use flexio_tune::sweep::{builtin_candidate, TIE_TOLERANCE};

/// `stress` and how many spinning workers it starts, killed and reaped
/// when dropped.
struct Stress(std::process::Child, usize);

impl Drop for Stress {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_stress() -> Option<Stress> {
    if !common::require_tool("stress") {
        return None;
    }
    // Half the CPUs: others' share (a half) is twice the tune's threshold
    // for a busy machine, and the tune keeps the other half to finish in.
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let spinners = (cpus / 2).max(1);
    let child = Command::new("stress")
        .args(["--cpu", &spinners.to_string(), "--timeout", "900"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start stress");
    Some(Stress(child, spinners))
}

/// The curve point of `candidate` at `size`, as a measurement.
fn point(profile: &Profile, kind: FlowKind, candidate: &Candidate, size: u64) -> Measurement {
    let flow = profile.flows.iter().find(|f| f.kind == kind).unwrap();
    let curve = flow
        .curves
        .iter()
        .find(|c| {
            c.mechanism == candidate.mechanism
                && c.chunk == candidate.params.chunk
                && c.queue_depth == candidate.params.queue_depth
                && c.pipe_size == candidate.params.pipe_size
                && c.direct == candidate.params.direct
                && c.copy_kernel == candidate.params.copy_kernel
        })
        .unwrap_or_else(|| panic!("{kind}: no curve of {candidate:?}"));
    let p = curve
        .points
        .iter()
        .find(|p| p.size == size)
        .unwrap_or_else(|| panic!("{kind}: {candidate:?} not measured at {size}"));
    Measurement {
        kind,
        size,
        candidate: candidate.clone(),
        median_bps: p.median_bytes_per_s as f64,
        min_bps: p.min_bytes_per_s as f64,
        max_bps: p.max_bytes_per_s as f64,
        cpu_ns_per_byte: p.cpu_ns_per_byte,
    }
}

#[test]
fn a_tune_on_a_busy_machine_warns_and_writes_no_choice_worse_than_none() {
    let Some(stress) = start_stress() else {
        return;
    };
    // The machine is busy once stress has forked its spinning workers.
    let pid = stress.0.id();
    let children = format!("/proc/{pid}/task/{pid}/children");
    let workers = || {
        std::fs::read_to_string(&children)
            .map(|list| list.split_whitespace().count())
            .unwrap_or(0)
    };
    assert!(
        flexio_testkit::wait_until(|| workers() >= stress.1, Duration::from_secs(10)),
        "stress did not start its workers"
    );
    let memory = std::path::Path::new("/dev/shm");
    let dir = match memory.is_dir() {
        true => tempfile::tempdir_in(memory).unwrap(),
        false => tempfile::tempdir().unwrap(),
    };
    let path = dir.path().join("profile.toml");
    let started = Instant::now();
    let child = flexio()
        .args(["tune", "--quick", "--quiet", "--dir"])
        .arg(dir.path())
        .arg("--profile")
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = wait_at_most(child, Duration::from_secs(1500)).expect("the tune ended");
    let seconds = started.elapsed().as_secs_f64();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(&output)
    );
    assert!(output.status.success(), "{text}");
    eprintln!(
        "tune --quick beside stress --cpu {}: {seconds:.1} s",
        stress.1
    );
    assert!(
        text.contains("warning: the machine was busy"),
        "no busy warning:\n{text}"
    );

    let profile = Profile::load(&path).unwrap();
    assert!(profile
        .notes
        .iter()
        .any(|n| n.starts_with("warning: the machine was busy")));
    let mut left = 0;
    for flow in &profile.flows {
        let builtin = builtin_candidate(flow.kind);
        for range in &flow.ranges {
            let chosen = Candidate {
                mechanism: range.mechanism,
                params: range.params(),
            };
            if chosen == builtin {
                continue;
            }
            left += 1;
            for &size in &range.measured_at {
                let best = point(&profile, flow.kind, &chosen, size);
                let plain = point(&profile, flow.kind, &builtin, size);
                let (gap, noise) = separation(&best, &plain, TIE_TOLERANCE);
                assert!(
                    gap > noise,
                    "{} at {size}: {chosen:?} chosen {:.1}% ahead of the built-in inside the noise ({:.1}%)",
                    flow.kind,
                    gap * 100.0,
                    noise * 100.0
                );
            }
        }
    }
    eprintln!("{left} ranges left the built-in choice, each by a lead beyond the noise");
    for tree in &profile.trees {
        assert_eq!(tree.jobs, flexio::tree::default_jobs(), "{tree:?}");
    }
}
