//! The machine a profile (or a bench result) was measured on.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// What makes measurements from one machine not apply to another.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// The CPUs the process may run on (its affinity).
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
    /// This machine, with the file system and device holding `dir`. A
    /// field that cannot be read is left empty (or 0) rather than failing.
    ///
    /// # Examples
    /// ```
    /// let here = flexio::profile::Fingerprint::of_this_machine(std::path::Path::new("."));
    /// assert!(here.cpus >= 1);
    /// assert!(!here.kernel.is_empty());
    /// ```
    pub fn of_this_machine(dir: &Path) -> Fingerprint {
        Self::of_this_machine_knowing(dir, None, None)
    }

    /// As [`Fingerprint::of_this_machine`], but the file system and device
    /// are taken from `mount` while `dir` is still on the mount it
    /// describes, instead of from `/proc/self/mountinfo`; and the CPU's
    /// brand from `cpu` during the boot it was seen in.
    pub(crate) fn of_this_machine_knowing(
        dir: &Path,
        mount: Option<&MountSeen>,
        cpu: Option<&CpuSeen>,
    ) -> Fingerprint {
        let system = rustix::system::sysinfo();
        let cpu_model = match cpu.filter(|cpu| cpu.still_holds(&system)) {
            Some(cpu) => cpu.brand.clone(),
            None => this_cpu_model(),
        };
        let (filesystem, device) = match mount.filter(|mount| mount.still_holds(dir)) {
            Some(seen) => (seen.fs_type.clone(), seen.source.clone()),
            None => {
                let mount = Mount::containing(dir).unwrap_or_default();
                (mount.fs_type, mount.source)
            }
        };
        Fingerprint {
            cpu_model,
            cpus: cpus(),
            memory_bytes: whole_gib(total_memory(&system)),
            kernel: rustix::system::uname()
                .release()
                .to_string_lossy()
                .into_owned(),
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

/// The CPU's brand: from an instruction rather than from /proc/cpuinfo,
/// whose text the kernel writes on each read, asking every CPU its clock.
fn this_cpu_model() -> String {
    cpu_brand()
        .unwrap_or_else(|| cpu_model(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default()))
}

fn cpu_model(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .find_map(|line| {
            let (key, value) = line.split_once(':')?;
            matches!(key.trim(), "model name" | "Model" | "cpu model").then(|| value.trim())
        })
        .unwrap_or("")
        .to_string()
}

/// The CPU's brand string from `cpuid` (leaves 0x80000002–4), trimmed as
/// the kernel trims it for /proc/cpuinfo's `model name`; `None` where the
/// CPU has none (the kernel then names it otherwise: read /proc/cpuinfo).
#[cfg(target_arch = "x86_64")]
fn cpu_brand() -> Option<String> {
    use std::arch::x86_64::__cpuid;
    if __cpuid(0x8000_0000).eax < 0x8000_0004 {
        return None;
    }
    let mut bytes = Vec::with_capacity(48);
    for leaf in 0x8000_0002..=0x8000_0004u32 {
        let words = __cpuid(leaf);
        for word in [words.eax, words.ebx, words.ecx, words.edx] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
    }
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let brand = String::from_utf8_lossy(&bytes[..end]).trim().to_string();
    (!brand.is_empty()).then_some(brand)
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_brand() -> Option<String> {
    None
}

/// The CPUs this process may run on: one `sched_getaffinity(2)` (the
/// standard library's `available_parallelism` also reads the cgroup's CPU
/// quota, a dozen more system calls on every consultation, for a limit
/// that is not the machine's).
fn cpus() -> u32 {
    rustix::thread::sched_getaffinity(None).map_or(1, |set| set.count().max(1))
}

/// Memory in bytes as `sysinfo(2)` counts it: the same total as
/// /proc/meminfo's MemTotal.
fn total_memory(system: &rustix::system::Sysinfo) -> u64 {
    system
        .totalram
        .saturating_mul(u64::from(system.mem_unit.max(1)))
}

/// Rounded down to whole GiB, so that a few MiB reserved differently at
/// boot do not make another machine of it.
fn whole_gib(bytes: u64) -> u64 {
    const GIB: u64 = 1 << 30;
    bytes / GIB * GIB
}

/// MemTotal of /proc/meminfo's text, in bytes.
#[cfg(test)]
fn mem_total(meminfo: &str) -> u64 {
    meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// The mount holding a path, as `/proc/self/mountinfo` describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mount {
    /// Where it is mounted.
    pub mount_point: std::path::PathBuf,
    /// File system type (`ext4`, `tmpfs`, …).
    pub fs_type: String,
    /// Mount source, usually the backing device.
    pub source: String,
    /// The file system's own options (`discard`, `data=ordered`, …).
    pub super_options: Vec<String>,
}

impl Mount {
    /// The longest mount point containing `path` (made absolute first);
    /// `None` when `/proc/self/mountinfo` cannot be read or names none.
    ///
    /// # Examples
    /// ```
    /// let root = flexio::profile::Mount::containing(std::path::Path::new("/")).unwrap();
    /// assert_eq!(root.mount_point, std::path::Path::new("/"));
    /// assert!(!root.fs_type.is_empty());
    /// ```
    pub fn containing(path: &Path) -> Option<Mount> {
        // /proc files report no size: room up front, so that the text
        // comes in one or two reads rather than a run of small ones.
        let mut mountinfo = String::with_capacity(16 << 10);
        std::io::Read::read_to_string(
            &mut std::fs::File::open("/proc/self/mountinfo").ok()?,
            &mut mountinfo,
        )
        .ok()?;
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        mount_of(&mountinfo, &path)
    }

    /// Whether the file system discards freed blocks as it frees them
    /// (mounted with `discard`, "online discard"): deleting or truncating
    /// a file then sends discards to the device, which a following write
    /// may wait behind.
    pub fn discards_online(&self) -> bool {
        self.super_options.iter().any(|option| option == "discard")
    }
}

/// The CPU's brand as the boot that saw it gave it. Every `auto` copy with
/// a profile compares the brand, and asking the CPU takes four CPUID
/// instructions, each a trap to the hypervisor in a virtual machine (7 µs
/// each on the VM of `docs/tuning.md`); within one boot the answer is the
/// same, so a compact form written during this boot stands for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CpuSeen {
    /// When the boot began, in seconds of the wall clock.
    boot_unix: i64,
    brand: String,
}

impl CpuSeen {
    /// The brand, and this boot.
    pub(crate) fn now() -> CpuSeen {
        CpuSeen {
            boot_unix: boot_unix(&rustix::system::sysinfo()),
            brand: this_cpu_model(),
        }
    }

    /// Whether this is still the boot the brand was seen in. Another
    /// machine booting the same disk, or this one rebooted, began its boot
    /// at another second.
    pub(crate) fn still_holds(&self, system: &rustix::system::Sysinfo) -> bool {
        boot_unix(system).abs_diff(self.boot_unix) <= BOOT_TOLERANCE_S
    }
}

/// Both the wall clock and `sysinfo`'s uptime are whole seconds, so one
/// boot's start reads a second either way.
const BOOT_TOLERANCE_S: u64 = 2;

/// When this boot began, in whole seconds of the wall clock: now less the
/// uptime `sysinfo(2)` gives (suspended time included), which the
/// fingerprint reads anyway for the memory. A wall clock stepped since
/// moves it, which only costs asking the CPU again.
fn boot_unix(system: &rustix::system::Sysinfo) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() as i64);
    now - system.uptime
}

/// What mountinfo said of the mount holding a directory, with that
/// mount's identity then: statx's mount id and the file system's device.
/// While the directory is on a mount with the same identity, the rest
/// still holds. `auto` consults a profile's fingerprint on every copy, and
/// mountinfo is a text the kernel writes out for every mount on each read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MountSeen {
    mount_id: u64,
    device: u64,
    fs_type: String,
    source: String,
}

impl MountSeen {
    /// The mount holding `dir` now; `None` when its identity or mountinfo
    /// cannot be read, or it changed while mountinfo was read.
    pub(crate) fn of(dir: &Path) -> Option<MountSeen> {
        let before = mount_identity(dir)?;
        let mount = Mount::containing(dir)?;
        (mount_identity(dir)? == before).then_some(MountSeen {
            mount_id: before.0,
            device: before.1,
            fs_type: mount.fs_type,
            source: mount.source,
        })
    }

    /// Whether `dir` is still on the mount this describes.
    fn still_holds(&self, dir: &Path) -> bool {
        mount_identity(dir) == Some((self.mount_id, self.device))
    }
}

/// The id of the mount holding `path` and its file system's device, from
/// `statx(2)` of `path` or, where it is gone (a tuned directory removed
/// since), of its nearest ancestor that is not; `None` where none can be
/// read or the kernel gives no mount id (before Linux 5.8).
fn mount_identity(path: &Path) -> Option<(u64, u64)> {
    use rustix::fs::{makedev, statx, AtFlags, StatxFlags, CWD};
    let stat = path
        .ancestors()
        .filter(|dir| !dir.as_os_str().is_empty())
        .find_map(|dir| statx(CWD, dir, AtFlags::empty(), StatxFlags::MNT_ID).ok())?;
    (stat.stx_mask & StatxFlags::MNT_ID.bits() != 0).then(|| {
        (
            stat.stx_mnt_id,
            makedev(stat.stx_dev_major, stat.stx_dev_minor),
        )
    })
}

/// The longest mount point that contains `path`, from the text of
/// `/proc/self/mountinfo`.
fn mount_of(mountinfo: &str, path: &Path) -> Option<Mount> {
    // Only the winning line is parsed whole, and the mount points are
    // compared as bytes: every copy with a profile reads this.
    let path_bytes = path.as_os_str().as_encoded_bytes();
    let (right, mount_point) = mountinfo
        .lines()
        .filter_map(|line| {
            let raw = line.split(' ').nth(4)?;
            let mount_point = match raw.contains('\\') {
                true => unescape(raw),
                false => raw.to_string(),
            };
            if !holds(mount_point.as_bytes(), path_bytes) {
                return None;
            }
            let (_, right) = line.split_once(" - ")?;
            Some((right, mount_point))
        })
        .max_by_key(|(_, mount_point)| mount_point.len())?;
    let mount_point = std::path::PathBuf::from(mount_point);
    let mut right = right.split_whitespace();
    let fs_type = right.next()?.to_string();
    let source = unescape(right.next().unwrap_or(""));
    let super_options = right
        .next()
        .unwrap_or("")
        .split(',')
        .filter(|option| !option.is_empty())
        .map(str::to_string)
        .collect();
    Some(Mount {
        mount_point,
        fs_type,
        source,
        super_options,
    })
}

/// Whether the mount point `mount` holds `path` (both absolute): equal, or
/// `mount` followed by a `/` in `path`, as `Path::starts_with` compares.
fn holds(mount: &[u8], path: &[u8]) -> bool {
    let mount = match mount {
        [rest @ .., b'/'] if !rest.is_empty() => rest,
        whole => whole,
    };
    mount == b"/" || (path.starts_with(mount) && matches!(path.get(mount.len()), None | Some(b'/')))
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && let Ok(value) = u8::from_str_radix(&field[i + 1..i + 4], 8)
        {
            out.push(value);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
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

    #[test]
    fn a_cpu_seen_is_taken_only_during_the_boot_it_was_seen_in() {
        let dir = Path::new(".");
        let seen = CpuSeen::now();
        assert_eq!(seen.brand, this_cpu_model());
        let remembered = CpuSeen {
            brand: "remembered".into(),
            ..seen.clone()
        };
        let here = Fingerprint::of_this_machine_knowing(dir, None, Some(&remembered));
        assert_eq!(here.cpu_model, "remembered", "not asked again");
        // Another boot (another machine booting the same disk, or this
        // one rebooted) is asked.
        // Outside the tolerance either way.
        for boot_unix in [seen.boot_unix - 5, seen.boot_unix + 5] {
            let other_boot = CpuSeen {
                boot_unix,
                ..remembered.clone()
            };
            let here = Fingerprint::of_this_machine_knowing(dir, None, Some(&other_boot));
            assert_eq!(here.cpu_model, seen.brand);
        }
    }

    #[test]
    fn a_mount_seen_is_taken_only_while_the_directory_is_on_it() {
        let dir = tempfile::tempdir().unwrap();
        let Some(seen) = MountSeen::of(dir.path()) else {
            eprintln!("skipped: this kernel gives no mount id (statx STATX_MNT_ID, Linux 5.8)");
            return;
        };
        let read_afresh = Fingerprint::of_this_machine(dir.path());
        assert_eq!(
            Fingerprint::of_this_machine_knowing(dir.path(), Some(&seen), None),
            read_afresh
        );
        // What was seen is what is used, not mountinfo again...
        let remembered = MountSeen {
            fs_type: "remembered".into(),
            ..seen.clone()
        };
        let here = Fingerprint::of_this_machine_knowing(dir.path(), Some(&remembered), None);
        assert_eq!(here.filesystem, "remembered");
        // ...but not once the directory is on another mount.
        for elsewhere in [
            MountSeen {
                mount_id: seen.mount_id + 1,
                ..remembered.clone()
            },
            MountSeen {
                device: seen.device + 1,
                ..remembered.clone()
            },
        ] {
            let here = Fingerprint::of_this_machine_knowing(dir.path(), Some(&elsewhere), None);
            assert_eq!(here.filesystem, read_afresh.filesystem);
        }
        // A directory removed since is on its parent's mount.
        let gone = dir.path().join("gone/too");
        assert_eq!(MountSeen::of(&gone).as_ref(), Some(&seen));
        let here = Fingerprint::of_this_machine_knowing(&gone, Some(&remembered), None);
        assert_eq!(here.filesystem, "remembered");
    }

    #[test]
    fn longest_mount_point_wins() {
        let mountinfo = "\
22 1 252:0 / / rw,relatime - ext4 /dev/vda rw,discard,data=ordered
30 22 0:25 / /tmp rw - tmpfs tmpfs rw
31 22 0:26 / /mnt/my\\040disk rw - xfs /dev/sdb1 rw
";
        let find = |p: &str| {
            let mount = mount_of(mountinfo, Path::new(p)).unwrap();
            (
                mount.fs_type.clone(),
                mount.source.clone(),
                mount.discards_online(),
            )
        };
        assert_eq!(find("/work/x"), ("ext4".into(), "/dev/vda".into(), true));
        assert_eq!(find("/tmp/a"), ("tmpfs".into(), "tmpfs".into(), false));
        assert_eq!(find("/tmp"), ("tmpfs".into(), "tmpfs".into(), false));
        // A name that only begins like a mount point is not under it.
        assert_eq!(find("/tmpfoo"), ("ext4".into(), "/dev/vda".into(), true));
        assert_eq!(
            find("/mnt/my disk/f"),
            ("xfs".into(), "/dev/sdb1".into(), false)
        );
        let root = mount_of(mountinfo, Path::new("/")).unwrap();
        assert_eq!(root.super_options, ["rw", "discard", "data=ordered"]);
    }

    #[test]
    fn cpu_and_memory_fields() {
        assert_eq!(
            cpu_model("processor: 0\nmodel name\t: Foo CPU @ 2GHz\n"),
            "Foo CPU @ 2GHz"
        );
        assert_eq!(
            whole_gib(mem_total("MemTotal:       25165824 kB\n")),
            24 << 30
        );
        assert_eq!(whole_gib((24 << 30) + (1 << 29)), 24 << 30);
        assert_eq!(mem_total(""), 0);
    }

    /// Profiles already written hold the /proc text's values: the cheap
    /// sources must give the same ones.
    #[test]
    fn the_cheap_sources_agree_with_proc() {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
        if let Some(brand) = cpu_brand() {
            assert_eq!(brand, cpu_model(&cpuinfo));
        }
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
        assert_eq!(
            total_memory(&rustix::system::sysinfo()),
            mem_total(&meminfo)
        );
    }
}
