//! The machine a bench ran on: CPU, memory, kernel, and the file system and
//! device under the bench directory — so that two results files can be told
//! apart before their numbers are compared.

use std::path::Path;

use crate::model::Fingerprint;

/// Reads the fingerprint of this machine for a bench in `dir`; a field that
/// cannot be read is left empty (or 0) rather than failing the bench.
///
/// # Examples
/// ```
/// let fingerprint = flexio_bench::fingerprint::read(std::path::Path::new("."));
/// assert!(fingerprint.cpus >= 1);
/// assert!(!fingerprint.kernel.is_empty());
/// ```
pub fn read(dir: &Path) -> Fingerprint {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let (filesystem, device) = mount_of(&mountinfo, &dir).unwrap_or_default();
    Fingerprint {
        cpu_model: cpu_model(&cpuinfo),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        memory_bytes: memory_bytes(&meminfo),
        kernel: rustix::system::uname()
            .release()
            .to_string_lossy()
            .into_owned(),
        filesystem,
        device,
    }
}

/// Whether the file system under `dir` keeps files in memory (tmpfs,
/// ramfs), where "cold" means nothing.
pub fn is_memory_filesystem(dir: &Path) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    // `f_type` is i64 here but narrower on some architectures.
    #[allow(clippy::unnecessary_cast)]
    let is_memory = |f_type| matches!(f_type as i64, TMPFS_MAGIC | RAMFS_MAGIC);
    rustix::fs::statfs(dir)
        .map(|s| is_memory(s.f_type))
        .unwrap_or(false)
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

fn memory_bytes(meminfo: &str) -> u64 {
    meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// `(file system type, mount source)` of the longest mount point that
/// contains `path`, from `/proc/self/mountinfo`.
fn mount_of(mountinfo: &str, path: &Path) -> Option<(String, String)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mount_point = unescape(left.split_whitespace().nth(4)?);
            let mut right = right.split_whitespace();
            let fs_type = right.next()?.to_string();
            let source = unescape(right.next().unwrap_or(""));
            path.starts_with(&mount_point)
                .then_some((mount_point.len(), fs_type, source))
        })
        .max_by_key(|(len, _, _)| *len)
        .map(|(_, fs_type, source)| (fs_type, source))
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() {
            if let Ok(value) = u8::from_str_radix(&field[i + 1..i + 4], 8) {
                out.push(value);
                i += 4;
                continue;
            }
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
    fn longest_mount_point_wins() {
        let mountinfo = "\
22 1 252:0 / / rw,relatime - ext4 /dev/vda rw
30 22 0:25 / /tmp rw - tmpfs tmpfs rw
31 22 0:26 / /mnt/my\\040disk rw - xfs /dev/sdb1 rw
";
        let find = |p: &str| mount_of(mountinfo, Path::new(p)).unwrap();
        assert_eq!(find("/work/x"), ("ext4".into(), "/dev/vda".into()));
        assert_eq!(find("/tmp/a"), ("tmpfs".into(), "tmpfs".into()));
        assert_eq!(find("/mnt/my disk/f"), ("xfs".into(), "/dev/sdb1".into()));
    }

    #[test]
    fn cpu_and_memory_fields() {
        assert_eq!(
            cpu_model("processor: 0\nmodel name\t: Foo CPU @ 2GHz\n"),
            "Foo CPU @ 2GHz"
        );
        assert_eq!(memory_bytes("MemTotal:       1024 kB\n"), 1 << 20);
    }
}
