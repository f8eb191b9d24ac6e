//! A memory cgroup with a limit: processes put in it have their page
//! cache and their own memory held to the limit. The cache bench compares
//! the block cache with the page cache under one budget in it; the seeds'
//! FlexIO exhibits copy in it to stand for the original's 128 MB machine.
//!
//! Both hierarchies are served: cgroup v1 (`/sys/fs/cgroup/memory`,
//! `memory.limit_in_bytes`) and v2 (`/sys/fs/cgroup` with the memory
//! controller, `memory.max`); which one is probed. A group is removed on
//! drop (its processes must have exited by then: the bench waits for
//! them), and one left by a bench that died before its drop (SIGKILL, a
//! second Ctrl-C) is removed by the next group made: names end with the
//! pid of their bench.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

const V1_ROOT: &str = "/sys/fs/cgroup/memory";
const V2_ROOT: &str = "/sys/fs/cgroup";

/// Every group this module makes starts with this.
pub(crate) const PREFIX: &str = "flexio-";

/// A memory group of this process's making.
#[derive(Debug)]
pub(crate) struct MemoryGroup {
    path: PathBuf,
}

/// The hierarchy with a memory controller, and the file its limit is
/// written to; `Err` says why there is none.
fn hierarchy() -> Result<(&'static Path, &'static str), String> {
    let v1 = Path::new(V1_ROOT);
    if v1.join("memory.limit_in_bytes").exists() {
        return Ok((v1, "memory.limit_in_bytes"));
    }
    let v2 = Path::new(V2_ROOT);
    let controllers =
        std::fs::read_to_string(v2.join("cgroup.subtree_control")).unwrap_or_default();
    if controllers.split_whitespace().any(|c| c == "memory") {
        return Ok((v2, "memory.max"));
    }
    Err(format!(
        "no memory controller: neither cgroup v1 at {V1_ROOT} nor cgroup v2 at {V2_ROOT} with \
         memory in cgroup.subtree_control"
    ))
}

impl MemoryGroup {
    /// Makes `flexio-<name>-<pid>` limited to `limit_bytes`; `Err` says why
    /// not (not root, no memory controller, a write refused; what was
    /// made is removed).
    pub(crate) fn new(name: &str, limit_bytes: u64) -> Result<MemoryGroup, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("skipped: a memory cgroup needs root".into());
        }
        let (root, limit_file) = hierarchy().map_err(|why| format!("skipped: {why}"))?;
        remove_stale(root);
        let path = root.join(format!("{PREFIX}{name}-{}", std::process::id()));
        std::fs::create_dir(&path).map_err(|e| format!("mkdir {}: {e}", path.display()))?;
        // From here on, drop removes it whatever fails.
        let group = MemoryGroup { path };
        let limit = group.path.join(limit_file);
        std::fs::write(&limit, limit_bytes.to_string())
            .map_err(|e| format!("{}: {e}", limit.display()))?;
        Ok(group)
    }

    /// Where the group is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Moves process `pid` into the group.
    pub(crate) fn add(&self, pid: u32) -> Result<(), String> {
        std::fs::write(self.path.join("cgroup.procs"), pid.to_string())
            .map_err(|e| format!("cgroup.procs: {e}"))
    }

    /// `cgroup.procs` open for writing, for a child to join the group
    /// before it execs (see `flexio_sys::process::join_cgroup_before_exec`).
    pub(crate) fn procs(&self) -> Result<File, String> {
        let path = self.path.join("cgroup.procs");
        OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| format!("open {}: {e}", path.display()))
    }
}

impl Drop for MemoryGroup {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir(&self.path) {
            eprintln!("flexio: could not remove {}: {e}", self.path.display());
        }
    }
}

/// Removes the groups of benches no longer running (`flexio-…-PID` with
/// no process `PID`). A group still holding a process stays (rmdir fails).
fn remove_stale(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let alive = rest
            .rsplit('-')
            .next()
            .and_then(|pid| pid.parse::<u32>().ok())
            .is_none_or(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if !alive {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// The memory groups the bench with process id `pid` made and did not
/// remove: none once it has ended, whatever ended it (tests check this).
///
/// # Examples
/// ```
/// assert!(flexio_bench::memory_groups_left(std::process::id()).is_empty());
/// ```
pub fn memory_groups_left(pid: u32) -> Vec<PathBuf> {
    let suffix = format!("-{pid}");
    let Ok((root, _)) = hierarchy() else {
        return Vec::new();
    };
    std::fs::read_dir(root)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.starts_with(PREFIX) && name.ends_with(&suffix)
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Root and a memory controller, else why not (a failure under
    /// FLEXIO_TEST_PRIVILEGED=1, which forbids skipping).
    fn can_make_groups() -> bool {
        let why = if !rustix::process::geteuid().is_root() {
            "needs root".to_string()
        } else if let Err(why) = hierarchy() {
            why
        } else {
            return true;
        };
        assert!(
            std::env::var("FLEXIO_TEST_PRIVILEGED").as_deref() != Ok("1"),
            "a memory cgroup {why}, and FLEXIO_TEST_PRIVILEGED=1 forbids skipping"
        );
        eprintln!("skipped: a memory cgroup {why}");
        false
    }

    #[test]
    fn a_child_runs_inside_the_group_from_its_first_instruction_and_the_group_goes_on_drop() {
        if !can_make_groups() {
            return;
        }
        let group = MemoryGroup::new("test-join", 64 << 20).unwrap();
        let path = group.path().to_path_buf();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut command = Command::new("cat");
        command.arg("/proc/self/cgroup");
        flexio_sys::process::join_cgroup_before_exec(&mut command, group.procs().unwrap());
        let output = command.output().unwrap();
        assert!(output.status.success());
        let cgroups = String::from_utf8_lossy(&output.stdout);
        assert!(
            cgroups
                .lines()
                .any(|l| l.contains("memory") || l.starts_with("0::"))
                && cgroups.contains(&format!("/{name}")),
            "{cgroups}"
        );
        // This process's groups: the other test here may hold one of its
        // own meanwhile, so only this test's is looked for.
        let ours = || -> Vec<std::path::PathBuf> {
            memory_groups_left(std::process::id())
                .into_iter()
                .filter(|left| left == &path)
                .collect()
        };
        assert_eq!(ours(), vec![path.clone()]);
        drop(group);
        assert!(!path.exists());
        assert!(ours().is_empty());
    }

    #[test]
    fn a_group_left_by_a_dead_bench_is_removed_by_the_next_one() {
        if !can_make_groups() {
            return;
        }
        // A pid no process has: above the kernel's largest.
        let (root, _) = hierarchy().unwrap();
        let stale = root.join(format!("{PREFIX}test-stale-4194305"));
        std::fs::create_dir(&stale).unwrap();
        let group = MemoryGroup::new("test-sweep", 64 << 20).unwrap();
        assert!(!stale.exists());
        drop(group);
    }
}
