//! A slow disk for the findings that rest on one: ext4 (or ext2,
//! [`FileSystem`]) on a loop device over a file in tmpfs, the device throttled by cgroup v1's blkio
//! controller (`blkio.throttle.read_bps_device` and `write_bps_device`
//! of the root group, so that every process's reads and the kernel's
//! writeback to it are held to the rate). This machine's own disk runs at
//! memory speed; the documents' ran at a few to a few tens of MB/s.
//!
//! The kernel accounts the throttle in slices of a tenth of a second: it
//! lets an idle group run a slice ahead, and rounds a busy group's
//! allowance up to a whole slice. [`Throttle::prime`] spends the credit
//! before a timed run, but a run of less than a slice's worth can still
//! come in at full speed or wait out most of a slice, by where in its
//! slice it starts (a 1 MiB `O_DIRECT` read at 16 MiB/s, primed, took 8
//! to 102 ms here). So a timed round of a small transfer is
//! [`SlowDevice::passes`] of it back to back, a second of the device's
//! time, and its figures their mean ([`SlowDevice::averaged`]).
//!
//! Root only. Everything made is undone when the [`SlowDevice`] drops, on
//! every way out but `kill -9`: the file system unmounted, the throttle
//! cleared, the loop device detached, the file and the mount point
//! removed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use flexio_sys::aligned::AlignedBuffer;
use flexio_sys::loop_device::LoopDevice;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::error::{Error, Result};

/// The rate the slow device is held to: 64 MiB/s each way, about a
/// twentieth of this machine's disk and a few times a 2000-era SCSI
/// disk's (the quick seeds run still ends in minutes).
pub const SLOW_RATE: u64 = 64 << 20;

/// Where cgroup v1's blkio controller keeps its root group.
const BLKIO: &str = "/sys/fs/cgroup/blkio";

/// Where the device's backing file goes: tmpfs, so that the rate is the
/// throttle's and not that of the disk under it.
const BACKING_DIR: &str = "/dev/shm";

/// The file system a [`SlowDevice`] is formatted with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileSystem {
    /// ext4, with its journal and extents (this machine's own).
    Ext4,
    /// ext2, no journal, block maps: the file system FlexIO's thesis ran
    /// on ("FlexIO presently supports ... Ext2 filesystem files").
    Ext2,
}

impl FileSystem {
    /// Its name, as `mkfs.NAME` and `mount -t` take it.
    pub fn name(self) -> &'static str {
        match self {
            FileSystem::Ext4 => "ext4",
            FileSystem::Ext2 => "ext2",
        }
    }
}

/// A throttled file system on a loop device, unmade when dropped.
#[derive(Debug)]
pub struct SlowDevice {
    fs: FileSystem,
    image: PathBuf,
    mount: PathBuf,
    device: Option<LoopDevice>,
    throttle: Option<Throttle>,
    mounted: bool,
    rate: u64,
}

/// The device's rate as `dd` with `O_DIRECT` measured it, in MiB/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// `dd oflag=direct conv=fsync` of the probe file.
    pub write_mib_s: f64,
    /// `dd iflag=direct` of the same file.
    pub read_mib_s: f64,
}

impl SlowDevice {
    /// Makes a `size`-byte ext4 file system named `name` held to `rate`
    /// bytes per second each way, mounted under `/tmp`.
    ///
    /// # Errors
    /// Not root ("needs root for the throttled device"), no blkio
    /// controller, or a step failing (`losetup`, `mkfs.ext4`, `mount`):
    /// what was made by then is undone.
    ///
    /// # Examples
    /// ```no_run
    /// use flexio_seeds::slow_device::{SlowDevice, SLOW_RATE};
    /// let device = SlowDevice::new("example", 256 << 20, SLOW_RATE)?;
    /// println!("{}", device.mount().display());
    /// # Ok::<(), flexio_seeds::Error>(())
    /// ```
    pub fn new(name: &str, size: u64, rate: u64) -> Result<SlowDevice> {
        SlowDevice::with_file_system(name, size, rate, FileSystem::Ext4)
    }

    /// The same ext4 on a loop device over tmpfs, not throttled: files
    /// whose cold reads cost what the kernel's block layer costs, the same
    /// from one round to the next (this machine's virtual disk is served
    /// from its host's memory, at a speed that varies with the host).
    ///
    /// # Errors
    /// As [`SlowDevice::new`], less the blkio controller.
    ///
    /// # Examples
    /// ```no_run
    /// use flexio_seeds::slow_device::SlowDevice;
    /// let device = SlowDevice::unthrottled("example", 256 << 20)?;
    /// assert!(device.describe().contains("not throttled"));
    /// # Ok::<(), flexio_seeds::Error>(())
    /// ```
    pub fn unthrottled(name: &str, size: u64) -> Result<SlowDevice> {
        SlowDevice::with_file_system(name, size, 0, FileSystem::Ext4)
    }

    /// [`SlowDevice::new`] formatted with `fs`.
    ///
    /// # Errors
    /// As [`SlowDevice::new`] (`mkfs.ext2` for ext2).
    ///
    /// # Examples
    /// ```no_run
    /// use flexio_seeds::slow_device::{FileSystem, SlowDevice, SLOW_RATE};
    /// let device = SlowDevice::with_file_system("example", 256 << 20, SLOW_RATE, FileSystem::Ext2)?;
    /// assert!(device.describe().starts_with("ext2 on "));
    /// # Ok::<(), flexio_seeds::Error>(())
    /// ```
    pub fn with_file_system(
        name: &str,
        size: u64,
        rate: u64,
        fs: FileSystem,
    ) -> Result<SlowDevice> {
        if !rustix::process::geteuid().is_root() {
            return Err(Error::Unavailable(
                "needs root for the throttled device".into(),
            ));
        }
        if rate > 0
            && !Path::new(BLKIO)
                .join("blkio.throttle.read_bps_device")
                .exists()
        {
            return Err(Error::Unavailable(format!(
                "no cgroup v1 blkio controller at {BLKIO}: the device cannot be throttled"
            )));
        }
        let stem = format!("flexio-slow-{}-{name}", std::process::id());
        let image = Path::new(BACKING_DIR).join(format!("{stem}.img"));
        let mut slow = SlowDevice {
            fs,
            mount: std::env::temp_dir().join(&stem),
            image,
            device: None,
            throttle: None,
            mounted: false,
            rate,
        };
        // On an early return `slow` drops and undoes what was made.
        slow.make(size)?;
        Ok(slow)
    }

    fn make(&mut self, size: u64) -> Result<()> {
        // A tmpfs too small for the image would fail a run halfway, not here.
        let room = rustix::fs::statvfs(BACKING_DIR)
            .map(|fs| fs.f_bavail.saturating_mul(fs.f_frsize))
            .map_err(|e| Error::io("statvfs", Path::new(BACKING_DIR), e.into()))?;
        if room < size {
            return Err(Error::Unavailable(format!(
                "{BACKING_DIR} has {} MiB free, the device needs {} MiB",
                room >> 20,
                size >> 20
            )));
        }
        let image =
            std::fs::File::create(&self.image).map_err(|e| Error::io("create", &self.image, e))?;
        image
            .set_len(size)
            .map_err(|e| Error::io_at("truncate", &self.image, size, e))?;
        drop(image);
        let device = LoopDevice::attach(&self.image, false).map_err(Error::LoopDevice)?;
        let node = device.path().to_path_buf();
        self.device = Some(device);
        if self.rate > 0 {
            self.throttle = Some(Throttle::new(&node, self.rate)?);
        }
        let mkfs = format!("mkfs.{}", self.fs.name());
        run(Command::new(mkfs).args(["-q", "-F"]).arg(&node))?;
        std::fs::create_dir_all(&self.mount).map_err(|e| Error::io("create", &self.mount, e))?;
        run(Command::new("mount")
            .args(["-t", self.fs.name()])
            .arg(&node)
            .arg(&self.mount))?;
        self.mounted = true;
        // What `prime` reads: a quarter-second's worth, at least 1 MiB.
        let primer = self.primer_path();
        std::fs::write(&primer, vec![0x5a; (self.rate / 4).max(1 << 20) as usize])
            .and_then(|()| std::fs::File::open(&primer)?.sync_all())
            .map_err(|e| Error::io("write", &primer, e))?;
        Ok(())
    }

    fn primer_path(&self) -> PathBuf {
        self.mount.join("flexio-throttle-primer")
    }

    /// Spends the throttle's credit just before a timed read or copy
    /// ([`Throttle::prime`]), so that a small one is held to the rate too.
    ///
    /// # Errors
    /// Reading the primer file refused, with its path.
    pub fn prime(&self) -> Result<()> {
        match &self.throttle {
            Some(throttle) => throttle.prime(&self.primer_path()),
            None => Ok(()),
        }
    }

    /// [`prime`](Self::prime) as a closure that owns what it needs, for a
    /// runner that primes before each of its runs (at the rate set now).
    pub fn priming(&self) -> impl Fn() -> Result<()> + Send + Sync + 'static {
        let path = self.primer_path();
        let bytes = self.throttle.as_ref().map(Throttle::priming_bytes);
        move || match bytes {
            Some(bytes) => spend_credit(&path, bytes),
            None => Ok(()),
        }
    }

    /// How many passes over `bytes`, back to back, one timed round takes
    /// so that it spans a second of the device's time at its rate (1 for a
    /// second's worth or more, at most 64): the rule the bench's runner
    /// applies to its synced cold copies
    /// ([`storage_passes`](flexio_bench::runner::storage_passes)).
    ///
    /// # Examples
    /// ```no_run
    /// use flexio_seeds::slow_device::SlowDevice;
    /// let device = SlowDevice::new("example", 64 << 20, 16 << 20)?;
    /// assert_eq!(device.passes(1 << 20), 16);
    /// assert_eq!(device.passes(24 << 20), 1);
    /// # Ok::<(), flexio_seeds::Error>(())
    /// ```
    pub fn passes(&self, bytes: u64) -> usize {
        flexio_bench::runner::storage_passes(self.rate, bytes) as usize
    }

    /// Spends the throttle's credit, then runs `pass` (one timed transfer
    /// of `bytes`, its figures in seconds) [`passes`](Self::passes) times
    /// back to back: the mean of each figure.
    ///
    /// # Errors
    /// Priming refused, or the first error of `pass`.
    ///
    /// # Examples
    /// ```no_run
    /// use flexio_seeds::slow_device::SlowDevice;
    /// let device = SlowDevice::new("example", 64 << 20, 16 << 20)?;
    /// let [seconds] = device.averaged(1 << 20, || Ok([0.0625]))?;
    /// assert_eq!(seconds, 0.0625);
    /// # Ok::<(), flexio_seeds::Error>(())
    /// ```
    pub fn averaged<const N: usize>(
        &self,
        bytes: u64,
        pass: impl FnMut() -> Result<[f64; N]>,
    ) -> Result<[f64; N]> {
        self.prime()?;
        mean_of(self.passes(bytes), pass)
    }

    /// Where the file system is mounted: put the experiment's files here.
    pub fn mount(&self) -> &Path {
        &self.mount
    }

    /// The loop device's node, e.g. `/dev/loop3`.
    pub fn node(&self) -> &Path {
        self.device.as_ref().map_or(Path::new(""), |d| d.path())
    }

    /// The rate the device is held to, in bytes per second.
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// Measures the device with `dd` and `O_DIRECT`: writes a probe file
    /// of `bytes` (synced), reads it back, removes it.
    ///
    /// # Errors
    /// `dd` missing or failing, with its words.
    pub fn measure(&self, bytes: u64) -> Result<Measured> {
        let probe = self.mount.join("flexio-rate-probe");
        self.prime()?;
        let count = (bytes >> 20).max(1);
        let write_s = timed_dd(&[
            "if=/dev/zero".into(),
            format!("of={}", probe.display()),
            "bs=1M".into(),
            format!("count={count}"),
            "oflag=direct".into(),
            "conv=fsync".into(),
        ])?;
        let read_s = self.prime().and_then(|()| {
            timed_dd(&[
                format!("if={}", probe.display()),
                "of=/dev/null".into(),
                "bs=1M".into(),
                "iflag=direct".into(),
            ])
        });
        let _ = std::fs::remove_file(&probe);
        let mib = count as f64;
        Ok(Measured {
            write_mib_s: mib / write_s,
            read_mib_s: mib / read_s?,
        })
    }

    /// Holds the device to `rate` bytes per second each way from now on
    /// (made at a faster rate, a slow device is formatted and filled
    /// quickly, then slowed for the timed runs).
    ///
    /// # Errors
    /// The blkio limit refused, with its file.
    ///
    /// # Examples
    /// ```no_run
    /// use flexio_seeds::slow_device::{SlowDevice, SLOW_RATE};
    /// let mut device = SlowDevice::new("example", 64 << 20, SLOW_RATE)?;
    /// device.set_rate(256 << 10)?;
    /// assert_eq!(device.rate(), 256 << 10);
    /// # Ok::<(), flexio_seeds::Error>(())
    /// ```
    pub fn set_rate(&mut self, rate: u64) -> Result<()> {
        if let Some(throttle) = &mut self.throttle {
            throttle.set(rate)?;
            throttle.rate = rate;
        }
        self.rate = rate;
        Ok(())
    }

    /// How much [`describe`](Self::describe) has `dd` move: two seconds'
    /// worth at the rate, from 1 MiB to 32 MiB.
    fn probe_bytes(&self) -> u64 {
        match self.throttle {
            Some(_) => (self.rate * 2).clamp(1 << 20, 32 << 20),
            None => 32 << 20,
        }
    }

    /// The device in a sentence for a setup line: where it is, its
    /// throttle, and the rate `dd` measured (or why it could not).
    pub fn describe(&self) -> String {
        let measured = match self.measure(self.probe_bytes()) {
            Ok(m) => format!(
                "dd O_DIRECT measured {} writing, {} reading",
                per_second(m.write_mib_s * 1048576.0),
                per_second(m.read_mib_s * 1048576.0)
            ),
            Err(why) => format!("its rate not measured ({why})"),
        };
        let held = match self.throttle {
            Some(_) => format!(
                "throttled by blkio to {} each way",
                per_second(self.rate as f64)
            ),
            None => "not throttled".to_string(),
        };
        format!(
            "{} on {} (a loop device over a file in tmpfs) {held}: {measured}",
            self.fs.name(),
            self.node().display(),
        )
    }
}

impl Drop for SlowDevice {
    fn drop(&mut self) {
        if self.mounted {
            // Busy for a moment while another thread's child, forked but
            // not yet exec'd, still holds a copy of a file's descriptor.
            let unmounted = (0..10).any(|_| {
                let done = Command::new("umount")
                    .arg(&self.mount)
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if !done {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                done
            });
            if !unmounted {
                // A busy mount still goes once its last user does.
                let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
            }
        }
        drop(self.throttle.take());
        // Detached (by its own drop) before its file is removed.
        drop(self.device.take());
        let _ = std::fs::remove_dir(&self.mount);
        let _ = std::fs::remove_file(&self.image);
    }
}

/// Reads `bytes` of `path` (round again from its start at its end) by
/// `O_DIRECT`, spending a throttle's credit ([`Throttle::prime`]).
///
/// # Errors
/// Opening or reading `path` refused, with the path and the offset.
fn spend_credit(path: &Path, bytes: u64) -> Result<()> {
    const REQUEST: usize = 1 << 20;
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::DIRECT, Mode::empty())
        .map_err(|e| Error::io("open with O_DIRECT", path, e.into()))?;
    let mut buffer = AlignedBuffer::new(REQUEST, 4096);
    let mut left = bytes;
    let mut offset = 0u64;
    while left > 0 {
        match rustix::io::pread(&fd, buffer.as_mut_slice(), offset) {
            // The end: round again from the start.
            Ok(0) if offset == 0 => {
                return Err(Error::Short {
                    what: format!("prime the throttle: read {}", path.display()),
                    moved: 0,
                    expected: left,
                })
            }
            Ok(0) => offset = 0,
            Ok(n) => {
                offset += n as u64;
                left = left.saturating_sub(n as u64);
            }
            Err(Errno::INTR) => {}
            Err(errno) => {
                return Err(Error::io_at(
                    "prime the throttle: pread(O_DIRECT)",
                    path,
                    offset,
                    errno.into(),
                ))
            }
        }
    }
    Ok(())
}

/// Drops `path`'s pages from the page cache (a file or a block device):
/// the next buffered read comes from the device.
///
/// # Errors
/// Opening or `posix_fadvise` refused, with the path.
pub(crate) fn make_cold(path: &Path) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|e| Error::io("fadvise(DONTNEED)", path, e.into()))
}

/// Runs `pass` `passes` times: the mean of each of its figures.
///
/// # Errors
/// The first error of `pass`.
pub(crate) fn mean_of<const N: usize>(
    passes: usize,
    mut pass: impl FnMut() -> Result<[f64; N]>,
) -> Result<[f64; N]> {
    let mut sum = [0.0; N];
    for _ in 0..passes {
        for (total, figure) in sum.iter_mut().zip(pass()?) {
            *total += figure;
        }
    }
    Ok(sum.map(|total| total / passes as f64))
}

/// A block device's reads and writes held to a rate by the root blkio
/// group (so the kernel's writeback is held too); the limit is cleared
/// when dropped.
#[derive(Debug)]
pub struct Throttle {
    numbers: String,
    rate: u64,
}

impl Throttle {
    /// Holds the block device `node` to `rate` bytes per second each way.
    ///
    /// # Errors
    /// Not root ("needs root for the throttled device"), `node` not a
    /// block device, or no cgroup v1 blkio controller.
    ///
    /// # Examples
    /// ```no_run
    /// let held = flexio_seeds::slow_device::Throttle::new("/dev/loop3".as_ref(), 64 << 20)?;
    /// # Ok::<(), flexio_seeds::Error>(())
    /// ```
    pub fn new(node: &Path, rate: u64) -> Result<Throttle> {
        if !rustix::process::geteuid().is_root() {
            return Err(Error::Unavailable(
                "needs root for the throttled device".into(),
            ));
        }
        let stat = rustix::fs::stat(node).map_err(|e| Error::io("stat", node, e.into()))?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::BlockDevice {
            return Err(Error::Unavailable(format!(
                "{} is not a block device",
                node.display()
            )));
        }
        let throttle = Throttle {
            numbers: format!(
                "{}:{}",
                rustix::fs::major(stat.st_rdev),
                rustix::fs::minor(stat.st_rdev)
            ),
            rate,
        };
        throttle.set(rate)?;
        Ok(throttle)
    }

    /// Spends the throttle's credit: the kernel lets a group that was idle
    /// (or under its rate) send about a slice's worth (a tenth of a
    /// second's) at full speed before it holds it, which would let a small
    /// read run unthrottled. Reading a quarter-second's worth of `path` (a
    /// file on the device, or the device itself) by `O_DIRECT` just before
    /// a timed read leaves the throttle at its steady rate.
    ///
    /// # Errors
    /// Opening or reading `path` refused, with the path and the offset.
    ///
    /// # Examples
    /// ```no_run
    /// let held = flexio_seeds::slow_device::Throttle::new("/dev/loop3".as_ref(), 16 << 20)?;
    /// held.prime("/dev/loop3".as_ref())?;
    /// # Ok::<(), flexio_seeds::Error>(())
    /// ```
    pub fn prime(&self, path: &Path) -> Result<()> {
        spend_credit(path, self.priming_bytes())
    }

    /// What [`prime`](Self::prime) reads: a quarter-second's worth.
    fn priming_bytes(&self) -> u64 {
        self.rate / 4
    }

    /// Writes `rate` (0: no limit) to both of the root group's limits.
    fn set(&self, rate: u64) -> Result<()> {
        for file in [
            "blkio.throttle.read_bps_device",
            "blkio.throttle.write_bps_device",
        ] {
            let path = Path::new(BLKIO).join(file);
            std::fs::write(&path, format!("{} {rate}", self.numbers))
                .map_err(|e| Error::io("write the blkio limit to", path, e))?;
        }
        Ok(())
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        if let Err(why) = self.set(0) {
            eprintln!("flexio: clearing the throttle: {why}");
        }
    }
}

/// `rate` bytes per second in words: whole MiB/s, or KiB/s below 4 MiB/s.
fn per_second(rate: f64) -> String {
    if rate >= (4 << 20) as f64 {
        format!("{:.0} MiB/s", rate / 1048576.0)
    } else {
        format!("{:.0} KiB/s", rate / 1024.0)
    }
}

/// Runs `command`, its output kept for the error.
fn run(command: &mut Command) -> Result<()> {
    let shown = format!("{command:?}");
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|source| Error::Spawn {
            operation: "start",
            program: shown.clone(),
            source,
        })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(Error::program(
            shown,
            format!("failed: {}", String::from_utf8_lossy(&output.stderr).trim()),
        ))
    }
}

/// Seconds `dd ARGS` took.
fn timed_dd(args: &[String]) -> Result<f64> {
    let start = Instant::now();
    run(Command::new("dd").args(args))?;
    Ok(start.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_of_passes_is_taken_figure_by_figure_and_stops_at_an_error() {
        let mut n = 0.0;
        let mean = mean_of(4, || {
            n += 1.0;
            Ok([n, 10.0 * n])
        })
        .unwrap();
        assert_eq!(mean, [2.5, 25.0]);
        let mut runs = 0;
        let failed = mean_of(4, || {
            runs += 1;
            if runs == 2 {
                Err(Error::Unavailable("the second pass".into()))
            } else {
                Ok([1.0])
            }
        });
        assert!(failed.is_err());
        assert_eq!(runs, 2);
    }

    fn privileged(test: &str) -> bool {
        let root = rustix::process::geteuid().is_root();
        if !root && std::env::var("FLEXIO_TEST_PRIVILEGED").as_deref() != Ok("1") {
            println!("skipped: {test}: needs root for the throttled device");
            return false;
        }
        true
    }

    fn attached(image: &Path) -> bool {
        let listed = Command::new("losetup").arg("-a").output();
        listed.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(&*image.to_string_lossy()))
    }

    #[test]
    fn the_device_is_held_to_its_rate_and_unmade_when_dropped() {
        if !privileged("the_device_is_held_to_its_rate_and_unmade_when_dropped") {
            return;
        }
        let rate = 32 << 20;
        let device = SlowDevice::new("test-rate", 128 << 20, rate).unwrap();
        let measured = device.measure(32 << 20).unwrap();
        // The throttle, not tmpfs (gigabytes a second), sets the pace.
        let limit = 1.5 * (rate >> 20) as f64;
        assert!(measured.write_mib_s < limit, "{measured:?}");
        assert!(measured.read_mib_s < limit, "{measured:?}");
        assert!(device.describe().contains("dd O_DIRECT measured"));
        let (image, mount) = (device.image.clone(), device.mount().to_path_buf());
        let numbers = device.throttle.as_ref().unwrap().numbers.clone();
        assert!(attached(&image));
        drop(device);
        assert!(!attached(&image), "{} still attached", image.display());
        assert!(!image.exists() && !mount.exists());
        let limits =
            std::fs::read_to_string(Path::new(BLKIO).join("blkio.throttle.read_bps_device"));
        assert!(!limits
            .unwrap()
            .lines()
            .any(|l| l.starts_with(&format!("{numbers} "))));
    }

    #[test]
    fn a_device_larger_than_its_tmpfs_has_room_for_is_refused_leaving_nothing() {
        if !privileged("a_device_larger_than_its_tmpfs_has_room_for_is_refused_leaving_nothing") {
            return;
        }
        let why = SlowDevice::new("test-huge", 1 << 50, SLOW_RATE).unwrap_err();
        assert!(why.to_string().contains("the device needs"), "{why}");
        let stem = format!("flexio-slow-{}-test-huge", std::process::id());
        assert!(!Path::new(BACKING_DIR).join(format!("{stem}.img")).exists());
    }

    #[test]
    fn an_unthrottled_device_runs_at_memory_speed_and_is_unmade_when_dropped() {
        if !privileged("an_unthrottled_device_runs_at_memory_speed_and_is_unmade_when_dropped") {
            return;
        }
        let device = SlowDevice::unthrottled("test-ram", 128 << 20).unwrap();
        assert!(device.throttle.is_none());
        let measured = device.measure(32 << 20).unwrap();
        // Far above any throttle the seeds set (64 MiB/s at most).
        assert!(measured.read_mib_s > 256.0, "{measured:?}");
        assert!(device.describe().contains("not throttled"));
        let (image, mount) = (device.image.clone(), device.mount().to_path_buf());
        drop(device);
        assert!(!attached(&image), "{} still attached", image.display());
        assert!(!image.exists() && !mount.exists());
    }

    #[test]
    fn a_small_read_averaged_over_its_passes_is_held_to_the_rate() {
        if !privileged("a_small_read_averaged_over_its_passes_is_held_to_the_rate") {
            return;
        }
        let rate = 16 << 20;
        let device = SlowDevice::new("test-prime", 64 << 20, rate).unwrap();
        let small = device.mount().join("small");
        std::fs::write(&small, vec![7u8; 1 << 20]).unwrap();
        std::fs::File::open(&small).unwrap().sync_all().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let dd = || {
            timed_dd(&[
                format!("if={}", small.display()),
                "of=/dev/null".into(),
                "bs=8k".into(),
                "iflag=direct".into(),
            ])
            .map(|seconds| [seconds])
        };
        assert_eq!(device.passes(1 << 20), 16);
        // 1 MiB at 16 MiB/s is 62.5 ms. Rounds of one read each, primed,
        // took 8 to 102 ms here (unthrottled, or waiting out a slice); the
        // mean of a second's worth stays within a quarter of the rate.
        let rounds: Vec<f64> = (0..5)
            .map(|_| device.averaged(1 << 20, dd).unwrap()[0])
            .collect();
        assert!(
            rounds.iter().all(|s| (0.047..0.078).contains(s)),
            "{rounds:?} s"
        );
    }

    /// The file system type `/proc/mounts` gives `mount`.
    fn mounted_as(mount: &Path) -> Option<String> {
        let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
        mounts.lines().find_map(|line| {
            let mut fields = line.split(' ');
            let (_, at, fs) = (fields.next()?, fields.next()?, fields.next()?);
            (Path::new(at) == mount).then(|| fs.to_string())
        })
    }

    #[test]
    fn an_ext2_device_is_mounted_as_ext2_and_unmade_when_dropped() {
        if !privileged("an_ext2_device_is_mounted_as_ext2_and_unmade_when_dropped") {
            return;
        }
        let device =
            SlowDevice::with_file_system("test-ext2", 64 << 20, SLOW_RATE, FileSystem::Ext2)
                .unwrap();
        let mount = device.mount().to_path_buf();
        assert_eq!(mounted_as(&mount).as_deref(), Some("ext2"));
        assert!(device.describe().starts_with("ext2 on /dev/loop"));
        let image = device.image.clone();
        drop(device);
        assert_eq!(mounted_as(&mount), None);
        assert!(!attached(&image) && !image.exists() && !mount.exists());
    }

    #[test]
    fn a_failed_step_undoes_what_was_made() {
        if !privileged("a_failed_step_undoes_what_was_made") {
            return;
        }
        // Too small for ext4: mkfs fails after the device is attached.
        let made = SlowDevice::new("test-fail", 4096, SLOW_RATE);
        assert!(made.is_err());
        let stem = format!("flexio-slow-{}-test-fail", std::process::id());
        let image = Path::new(BACKING_DIR).join(format!("{stem}.img"));
        assert!(!attached(&image) && !image.exists());
    }
}
