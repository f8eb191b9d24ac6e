//! The machine a profile (or a bench result) was measured on.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// What makes measurements from one machine not apply to another.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus: u32,
    /// Memory in bytes (`/proc/meminfo`, rounded down to whole GiB so that
    /// small reservations do not count as a different machine).
    pub memory_bytes: u64,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// File system type of the measured directory.
    pub filesystem: String,
    /// Backing device of the measured directory.
    pub device: String,
}

impl Fingerprint {
    /// This machine, with the file system and device holding `dir`.
    pub fn of_this_machine(dir: &Path) -> Fingerprint {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_kib: u64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0);
        let gib = 1u64 << 30;
        let memory_bytes = memory_kib * 1024 / gib * gib;
        let kernel = rustix::system::uname()
            .release()
            .to_string_lossy()
            .into_owned();
        let (filesystem, device) = mount_of(dir);
        Fingerprint {
            cpu_model,
            cpus,
            memory_bytes,
            kernel,
            filesystem,
            device,
        }
    }

    /// The fields that differ from `other`, as `name: ours != theirs`.
    pub fn differences(&self, other: &Fingerprint) -> Vec<String> {
        let mut out = Vec::new();
        let mut check = |name: &str, a: String, b: String| {
            if a != b {
                out.push(format!("{name}: {a:?} != {b:?}"));
            }
        };
        check("cpu_model", self.cpu_model.clone(), other.cpu_model.clone());
        check("cpus", self.cpus.to_string(), other.cpus.to_string());
        check(
            "memory_bytes",
            self.memory_bytes.to_string(),
            other.memory_bytes.to_string(),
        );
        check("kernel", self.kernel.clone(), other.kernel.clone());
        check(
            "filesystem",
            self.filesystem.clone(),
            other.filesystem.clone(),
        );
        check("device", self.device.clone(), other.device.clone());
        out
    }
}

/// File system type and device of the mount holding `dir`: the longest
/// mount point in `/proc/self/mounts` that prefixes its canonical path.
fn mount_of(dir: &Path) -> (String, String) {
    let path = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mut best: Option<(usize, String, String)> = None;
    for line in mounts.lines() {
        let mut fields = line.split_whitespace();
        let (Some(device), Some(point), Some(fstype)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let point = point.replace("\\040", " ");
        if path.starts_with(&point) && best.as_ref().is_none_or(|(len, _, _)| point.len() >= *len) {
            best = Some((point.len(), fstype.to_string(), device.to_string()));
        }
    }
    best.map(|(_, fstype, device)| (fstype, device))
        .unwrap_or_else(|| ("unknown".into(), "unknown".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_is_itself_and_differences_are_named() {
        let here = Fingerprint::of_this_machine(Path::new("."));
        assert!(here.cpus >= 1);
        assert!(here.differences(&here).is_empty());
        let mut other = here.clone();
        other.kernel = "2.6.32".into();
        other.cpus += 1;
        let diff = here.differences(&other);
        assert_eq!(diff.len(), 2);
        assert!(
            diff[0].starts_with("cpus") && diff[1].starts_with("kernel"),
            "{diff:?}"
        );
    }
}
