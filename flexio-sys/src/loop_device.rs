//! A loop block device over a file, attached with `losetup --find --show`
//! and detached when dropped — on every way out but `kill -9` (then
//! `losetup -d DEVICE` cleans up). A drop waits until the kernel has let
//! the device go (`losetup -d` on a device still held, e.g. by a udev
//! probe, only marks it to be cleared later), asking again if need be. The bench's raw-device reads and the
//! tests' small file systems both use it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// An attached loop device.
#[derive(Debug)]
pub struct LoopDevice {
    path: PathBuf,
    backing: PathBuf,
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
        let backing = std::fs::canonicalize(backing).unwrap_or_else(|_| backing.to_path_buf());
        Ok(LoopDevice { path, backing })
    }

    /// The device node, e.g. `/dev/loop3`.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl LoopDevice {
    /// Whether the device is still attached to this backing file (sysfs
    /// names it while it is; another file there is another attachment).
    fn attached(&self) -> bool {
        let Some(name) = self.path.file_name() else {
            return false;
        };
        let sysfs = Path::new("/sys/block").join(name).join("loop/backing_file");
        std::fs::read_to_string(sysfs).is_ok_and(|file| {
            let file = file.trim().trim_end_matches(" (deleted)");
            Path::new(file) == self.backing
        })
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        const TRIES: usize = 5;
        const POLLS: usize = 50;
        let mut detached = false;
        'tries: for _ in 0..TRIES {
            let _ = Command::new("losetup").arg("-d").arg(&self.path).status();
            for _ in 0..POLLS {
                if !self.attached() {
                    detached = true;
                    break 'tries;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        if !detached {
            eprintln!(
                "flexio: losetup -d {} failed; detach it by hand",
                self.path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dropped_device_is_detached_even_with_others_attaching_at_once() {
        let name = "every_dropped_device_is_detached_even_with_others_attaching_at_once";
        if !rustix::process::geteuid().is_root() {
            println!("skipped: {name}: a loop device needs root");
            return;
        }
        let workers: Vec<_> = (0..4)
            .map(|worker| {
                std::thread::spawn(move || {
                    let file = std::env::temp_dir()
                        .join(format!("flexio-loop-test-{}-{worker}", std::process::id()));
                    std::fs::write(&file, vec![0u8; 1 << 20]).unwrap();
                    let mut left = Vec::new();
                    for _ in 0..5 {
                        let device = LoopDevice::attach(&file, false).unwrap();
                        let (path, backing) = (device.path.clone(), device.backing.clone());
                        drop(device);
                        let after = LoopDevice { path, backing };
                        if after.attached() {
                            left.push(after.path.clone());
                        }
                        // Not detached again by this copy's drop.
                        std::mem::forget(after);
                    }
                    std::fs::remove_file(&file).unwrap();
                    left
                })
            })
            .collect();
        for worker in workers {
            let left = worker.join().unwrap();
            assert!(left.is_empty(), "still attached after drop: {left:?}");
        }
    }
}
