//! A loop block device over a file, attached with `losetup --find --show`
//! and detached when dropped — on every way out but `kill -9` (then
//! `losetup -d DEVICE` cleans up). The bench's raw-device reads and the
//! tests' small file systems both use it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// An attached loop device.
#[derive(Debug)]
pub struct LoopDevice {
    path: PathBuf,
}

impl LoopDevice {
    /// Attaches a free loop device to the file `backing`; with `direct_io`
    /// (`--direct-io=on`) the backing file's page cache does not hold the
    /// device's blocks a second time.
    ///
    /// # Errors
    /// Why not, in words: `losetup` missing, or refusing (not root, no free
    /// device, no such file).
    ///
    /// # Examples
    /// ```no_run
    /// let device = flexio_sys::loop_device::LoopDevice::attach("disk.img".as_ref(), false)?;
    /// println!("attached {}", device.path().display());
    /// # Ok::<(), String>(())
    /// ```
    pub fn attach(backing: &Path, direct_io: bool) -> Result<LoopDevice, String> {
        let mut command = Command::new("losetup");
        command.args(["--find", "--show"]);
        if direct_io {
            command.arg("--direct-io=on");
        }
        let output = command
            .arg(backing)
            .output()
            .map_err(|e| format!("losetup: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "losetup --find --show {} failed: {}",
                backing.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        Ok(LoopDevice { path })
    }

    /// The device node, e.g. `/dev/loop3`.
    pub fn path(&self) -> &Path {
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
                "flexio: losetup -d {} failed; detach it by hand",
                self.path.display()
            );
        }
    }
}
