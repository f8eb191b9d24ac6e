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

use crate::error::{Error, Result};

const V1_ROOT: &str = "/sys/fs/cgroup/memory";
const V2_ROOT: &str = "/sys/fs/cgroup";

/// Every group this module makes starts with this.
pub(crate) const PREFIX: &str = "flexio-";

/// A memory group of this process's making.
#[derive(Debug)]
pub struct MemoryGroup {
    path: PathBuf,
}

/// The hierarchy with a memory controller, and the file its limit is
/// written to; `Err` says why there is none.
fn hierarchy() -> Result<(&'static Path, &'static str)> {
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
    Err(Error::Unavailable {
        why: format!(
            "no memory controller: neither cgroup v1 at {V1_ROOT} nor cgroup v2 at {V2_ROOT} \
             with memory in cgroup.subtree_control"
        ),
    })
}

impl MemoryGroup {
    /// Makes `flexio-<name>-<pid>` limited to `limit_bytes`; `Err` says why
    /// not (not root, no memory controller, a write refused; what was
    /// made is removed).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when not root or there is no memory
    /// controller (its message starts `skipped:`); [`Error::Io`] when a
    /// cgroup file refused.
    ///
    /// # Examples
    /// ```no_run
    /// use flexio_harness::memory_group::MemoryGroup;
    /// let group = MemoryGroup::new("doc", 128 << 20).unwrap();
    /// group.add(std::process::id()).unwrap();
    /// ```
    pub fn new(name: &str, limit_bytes: u64) -> Result<MemoryGroup> {
        if !rustix::process::geteuid().is_root() {
            return Err(Error::Unavailable {
                why: "a memory cgroup needs root".into(),
            });
        }
        let (root, limit_file) = hierarchy()?;
        remove_stale(root);
        let path = root.join(format!("{PREFIX}{name}-{}", std::process::id()));
        std::fs::create_dir(&path).map_err(|e| Error::io("mkdir", &path, e))?;
        // From here on, drop removes it whatever fails.
        let group = MemoryGroup { path };
        let limit = group.path.join(limit_file);
        std::fs::write(&limit, limit_bytes.to_string())
            .map_err(|e| Error::io("write", &limit, e))?;
        Ok(group)
    }

    /// Where the group is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves process `pid` into the group.
    ///
    /// # Errors
    /// `cgroup.procs` refused the write.
    pub fn add(&self, pid: u32) -> Result<()> {
        let procs = self.path.join("cgroup.procs");
        std::fs::write(&procs, pid.to_string()).map_err(|e| Error::io("write", procs, e))
    }

    /// `cgroup.procs` open for writing, for a child to join the group
    /// before it execs (see `flexio_sys::process::join_cgroup_before_exec`).
    ///
    /// # Errors
    /// `cgroup.procs` cannot be opened.
    pub fn procs(&self) -> Result<File> {
        let path = self.path.join("cgroup.procs");
        OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| Error::io("open", path, e))
    }
}

/// What the kernel says about a group's memory: the processes the OOM
/// killer ended in it and the times it hit its limit (`None` where the
/// kernel keeps no such count).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryEvents {
    /// v2 `memory.events` `oom_kill`; v1 `memory.oom_control` `oom_kill`.
    pub oom_kills: Option<u64>,
    /// v2 `memory.events` `max`; v1 `memory.failcnt`.
    pub limit_hits: Option<u64>,
}

impl MemoryGroup {
    /// The group's OOM kills and limit hits so far.
    pub fn events(&self) -> MemoryEvents {
        let read = |name: &str| std::fs::read_to_string(self.path.join(name)).ok();
        if let Some(events) = read("memory.events") {
            return MemoryEvents {
                oom_kills: keyed(&events, "oom_kill"),
                limit_hits: keyed(&events, "max"),
            };
        }
        MemoryEvents {
            oom_kills: read("memory.oom_control").and_then(|text| keyed(&text, "oom_kill")),
            limit_hits: read("memory.failcnt").and_then(|text| text.trim().parse().ok()),
        }
    }

    /// Where the group's OOM kills are counted, for messages.
    pub(crate) fn events_file(&self) -> &'static str {
        if self.path.join("memory.events").exists() {
            "memory.events"
        } else {
            "memory.oom_control"
        }
    }

    /// Why a process run in the group failed with `why`, given the
    /// group's events `before` it ran: "ran out of memory in the group"
    /// when the OOM killer ended a process there meanwhile (or, where the
    /// kernel counts no OOM kills, a SIGKILL while the group hit its
    /// limit); else `why` as it was.
    pub fn explain(&self, why: String, before: MemoryEvents, limit: u64) -> String {
        let after = self.events();
        let group = format!("the {} MiB memory cgroup", limit >> 20);
        match (before.oom_kills, after.oom_kills) {
            (Some(was), Some(now)) if now > was => format!(
                "it ran out of memory in {group}: the OOM killer ended it ({} oom_kill {was} -> \
                 {now}; {why})",
                self.events_file()
            ),
            (None, _) | (_, None)
                if why.contains("SIGKILL")
                    && after.limit_hits.unwrap_or(0) > before.limit_hits.unwrap_or(0) =>
            {
                format!(
                    "it was killed while {group} was at its limit, most likely out of memory \
                     ({why})"
                )
            }
            _ => why,
        }
    }
}

/// The number after `key` on its line of a `key value` file
/// (`memory.events`, `memory.oom_control`).
fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok())?
    })
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
/// assert!(flexio_harness::memory_groups_left(std::process::id()).is_empty());
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
        } else if let Err(error) = hierarchy() {
            match error {
                Error::Unavailable { why } => why,
                other => other.to_string(),
            }
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
    fn the_kernels_counts_are_read_from_either_hierarchys_files() {
        let v2 = "low 0\nhigh 0\nmax 17\noom 2\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(keyed(v2, "oom_kill"), Some(1));
        assert_eq!(keyed(v2, "max"), Some(17));
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(keyed(v1, "oom_kill"), Some(3));
        assert_eq!(keyed(v1, "oom"), None);
    }

    #[test]
    fn a_process_the_oom_killer_ends_in_the_group_is_said_to_have_run_out_of_memory() {
        if !can_make_groups() {
            return;
        }
        let group = MemoryGroup::new("test-oom", 16 << 20).unwrap();
        let before = group.events();
        assert_eq!(before.oom_kills, Some(0), "{before:?}");
        // dd fills a 256 MiB buffer from /dev/zero: far over 16 MiB (this
        // machine has no swap to push it to; with swap, the group's
        // memory.swap.max / memsw would have to be set too).
        let mut command = Command::new("dd");
        command.args(["if=/dev/zero", "of=/dev/null", "bs=256M", "count=1"]);
        command.stderr(std::process::Stdio::null());
        flexio_sys::process::join_cgroup_before_exec(&mut command, group.procs().unwrap());
        let status = command.status().unwrap();
        assert!(!status.success(), "dd of 256 MiB fit in 16 MiB: {status}");
        let why = group.explain(format!("dd exited with {status}"), before, 16 << 20);
        assert!(
            why.starts_with("it ran out of memory in the 16 MiB memory cgroup: the OOM killer"),
            "{why}"
        );
        assert!(why.contains("oom_kill 0 -> 1"), "{why}");
        // A failure of another kind is left as it was.
        let other = group.explain("it failed: EIO".into(), group.events(), 16 << 20);
        assert_eq!(other, "it failed: EIO");
        drop(group);
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
