//! ext4 in a RAM-backed loop image: a tmpfs holds the image, a loop device
//! serves it, ext4 is made and mounted on it; all undone on drop, also
//! when the bench fails.
//!
//! The mounts are made in a mount namespace of the bench's own (private
//! propagation), so that a bench stopped by Ctrl-C or `kill -9`, which
//! runs no drop, leaves no mount behind: the namespace, its mounts and the
//! loop device go with the last process in it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Error, Result};

/// A mounted RAM-backed ext4.
pub struct RamDisk {
    mount: PathBuf,
    backing: PathBuf,
}

fn run(program: &str, args: &[&std::ffi::OsStr]) -> Result<()> {
    let status = Command::new(program)
        .args(args)
        .status()
        .map_err(|e| Error::spawn("start", program, e))?;
    status
        .success()
        .then_some(())
        .ok_or_else(|| Error::program(program, format!("{args:?}: {status}")))
}

impl RamDisk {
    /// Makes a `size`-byte ext4 in memory and mounts it at `at` (created).
    /// Needs root.
    ///
    /// # Errors
    /// Not root, or a step that fails (its command and status).
    pub fn mount(at: &Path, size: u64) -> Result<Self> {
        if !rustix::process::geteuid().is_root() {
            return Err(Error::NeedsRoot("a RAM-backed ext4"));
        }
        private_mount_namespace()?;
        let backing = at.with_extension("tmpfs");
        std::fs::create_dir_all(&backing).map_err(|e| Error::io("mkdir", &backing, e))?;
        std::fs::create_dir_all(at).map_err(|e| Error::io("mkdir", at, e))?;
        let size_option = format!("size={}", size + (64 << 20));
        run(
            "mount",
            &[
                "-t".as_ref(),
                "tmpfs".as_ref(),
                "-o".as_ref(),
                size_option.as_ref(),
                "tmpfs".as_ref(),
                backing.as_os_str(),
            ],
        )?;
        let disk = RamDisk {
            mount: at.to_path_buf(),
            backing: backing.clone(),
        };
        let image = backing.join("ext4.img");
        std::fs::File::create(&image)
            .and_then(|f| f.set_len(size))
            .map_err(|e| Error::io("create the image", &image, e))?;
        run(
            "mkfs.ext4",
            &["-q".as_ref(), "-F".as_ref(), image.as_os_str()],
        )?;
        run(
            "mount",
            &[
                "-o".as_ref(),
                "loop".as_ref(),
                image.as_os_str(),
                at.as_os_str(),
            ],
        )?;
        Ok(disk)
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.mount
    }
}

/// Moves this process (single-threaded here: before the bench starts any
/// thread) into a new mount namespace whose mounts do not propagate back.
fn private_mount_namespace() -> Result<()> {
    // `unshare` is deprecated in rustix for CLONE_FILES, which can break
    // descriptor ownership in a threaded process; CLONE_NEWNS cannot.
    #[allow(deprecated)]
    rustix::thread::unshare(rustix::thread::UnshareFlags::NEWNS).map_err(|e| Error::System {
        operation: "unshare(CLONE_NEWNS)",
        source: e.into(),
    })?;
    run("mount", &["--make-rprivate".as_ref(), "/".as_ref()])
}

impl Drop for RamDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
        let _ = Command::new("umount").arg(&self.backing).status();
        let _ = std::fs::remove_dir(&self.mount);
        let _ = std::fs::remove_dir(&self.backing);
    }
}
