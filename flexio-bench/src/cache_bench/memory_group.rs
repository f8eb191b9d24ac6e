//! A cgroup-v1 memory group with a limit, for comparing the block cache
//! with the page cache under the same memory budget: processes moved into
//! it have their page cache and their own memory held to the limit. The
//! group is removed on drop (its processes must have exited by then).

use std::path::{Path, PathBuf};

const MEMORY_CGROUP: &str = "/sys/fs/cgroup/memory";

/// A memory group of this process's making.
pub(crate) struct MemoryGroup {
    path: PathBuf,
}

impl MemoryGroup {
    /// Makes `flexio-<name>-<pid>` limited to `limit_bytes`; `Err` says why
    /// not (not root, no cgroup-v1 memory controller, a write refused).
    pub(crate) fn new(name: &str, limit_bytes: u64) -> Result<MemoryGroup, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("skipped: a memory cgroup needs root".into());
        }
        let root = Path::new(MEMORY_CGROUP);
        if !root.join("memory.limit_in_bytes").exists() {
            return Err(format!(
                "skipped: no cgroup-v1 memory controller at {MEMORY_CGROUP}"
            ));
        }
        let path = root.join(format!("flexio-{name}-{}", std::process::id()));
        std::fs::create_dir(&path).map_err(|e| format!("mkdir {}: {e}", path.display()))?;
        let group = MemoryGroup { path };
        std::fs::write(
            group.path.join("memory.limit_in_bytes"),
            limit_bytes.to_string(),
        )
        .map_err(|e| format!("memory.limit_in_bytes: {e}"))?;
        Ok(group)
    }

    /// Moves process `pid` into the group.
    pub(crate) fn add(&self, pid: u32) -> Result<(), String> {
        std::fs::write(self.path.join("cgroup.procs"), pid.to_string())
            .map_err(|e| format!("cgroup.procs: {e}"))
    }
}

impl Drop for MemoryGroup {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir(&self.path) {
            eprintln!("flexio: could not remove {}: {e}", self.path.display());
        }
    }
}
