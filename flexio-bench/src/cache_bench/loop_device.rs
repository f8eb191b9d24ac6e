//! A loop block device over a data file, for the S.M.A.C.K. table's raw
//! source: attached with `losetup --find --show --direct-io=on` (so the
//! backing file's page cache does not hold the blocks a second time) and
//! detached on drop, which runs on every way out of the bench but
//! `kill -9` (then `losetup -D` or `losetup -d` cleans up).

use std::path::{Path, PathBuf};
use std::process::Command;

/// An attached loop device.
pub(crate) struct LoopDevice {
    path: PathBuf,
}

impl LoopDevice {
    /// Attaches a free loop device to `backing`; `Err` says why not (not
    /// root, no `losetup`, no free device), in words for the report.
    pub(crate) fn attach(backing: &Path) -> Result<LoopDevice, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("skipped: attaching a loop device needs root".into());
        }
        let output = Command::new("losetup")
            .args(["--find", "--show", "--direct-io=on"])
            .arg(backing)
            .output()
            .map_err(|e| format!("skipped: losetup: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "skipped: losetup --find --show failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        Ok(LoopDevice { path })
    }

    /// The device node, e.g. `/dev/loop3`.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let detached = Command::new("losetup")
            .arg("-d")
            .arg(&self.path)
            .status()
            .is_ok_and(|status| status.success());
        if !detached {
            eprintln!(
                "flexio bench: losetup -d {} failed; detach it by hand",
                self.path.display()
            );
        }
    }
}
