//! Reading a file or a block device whole into memory, timed: through
//! the page cache by flexio's `read-write` into a memory sink (the CPU
//! copies every byte out of the cache), or by `O_DIRECT` requests into
//! an aligned buffer (the device's DMA writes user memory, no cache).

use std::path::Path;
use std::time::Instant;

use flexio::{Flow, MechanismName, Params, Sink, Source};
use flexio_sys::aligned::AlignedBuffer;
use flexio_sys::rusage::rusage_self;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::error::{Error, Result};

/// What one read cost: wall seconds and the process's CPU seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Timed {
    /// Seconds from the first request to the last byte.
    pub wall_s: f64,
    /// CPU seconds (user + system) of the whole process meanwhile.
    pub busy_s: f64,
}

impl Timed {
    /// Seconds the process waited, not on a CPU: wall less busy, at least 0.
    pub fn blocked_s(&self) -> f64 {
        (self.wall_s - self.busy_s).max(0.0)
    }
}

/// Times `read`, which returns the bytes it read; `len` were wanted.
pub(crate) fn timed(what: &str, len: usize, read: impl FnOnce() -> Result<usize>) -> Result<Timed> {
    let cpu = rusage_self();
    let start = Instant::now();
    let got = read()?;
    let wall_s = start.elapsed().as_secs_f64();
    let busy_s = rusage_self().since(&cpu).cpu_ns as f64 / 1e9;
    if got != len {
        return Err(Error::Short {
            what: what.to_string(),
            moved: got as u64,
            expected: len as u64,
        });
    }
    Ok(Timed { wall_s, busy_s })
}

/// Reads `path` (its first `out.len()` bytes) into `out` through the page
/// cache with flexio's `read-write` in `request`-byte reads.
///
/// # Errors
/// The flow's error, which names the operation, the path and the offset.
pub(crate) fn buffered(path: &Path, request: usize, out: &mut [u8]) -> Result<Timed> {
    let len = out.len();
    let params = Params {
        chunk: request,
        ..Params::default()
    };
    timed(&format!("read {}", path.display()), len, || {
        Flow::new(Source::path(path), Sink::Memory(out))
            .length(len as u64)
            .via(MechanismName::ReadWrite)
            .params(params)
            .run()
            .map(|report| report.measured.bytes as usize)
            .map_err(Error::Flow)
    })
}

/// Reads the first `len` bytes of `path` with `O_DIRECT` in `request`-byte
/// requests into `out` (aligned, at least `len` rounded up to `request`).
///
/// # Errors
/// Opening or reading refused (`EINVAL`: the file system takes no
/// `O_DIRECT`, or `request` is below the device's logical block), with
/// the path and the offset.
pub(crate) fn direct(
    path: &Path,
    request: usize,
    len: usize,
    out: &mut AlignedBuffer,
) -> Result<Timed> {
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::DIRECT, Mode::empty())
        .map_err(|e| Error::io("open with O_DIRECT", path, e.into()))?;
    let area = &mut out.as_mut_slice()[..len.next_multiple_of(request)];
    timed(&format!("read {} (O_DIRECT)", path.display()), len, || {
        let mut done = 0;
        while done < len {
            let piece = &mut area[done..done + request];
            match rustix::io::pread(&fd, piece, done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(Errno::INTR) => continue,
                Err(errno) => {
                    return Err(Error::io_at(
                        "pread(O_DIRECT)",
                        path,
                        done as u64,
                        errno.into(),
                    ))
                }
            }
        }
        Ok(done.min(len))
    })
}

/// What a read with a CPU copy cost: its time, and the seconds of it the
/// CPU spent copying alone (the original's "copy" column).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Copied {
    /// The whole read.
    pub timed: Timed,
    /// The copies out of the bounce buffer, summed.
    pub copy_s: f64,
}

/// The original's "normal" read: one 512-byte sector per request, each
/// by `O_DIRECT` into a sector-sized bounce buffer (no read-ahead, no
/// page cache: the device is asked for exactly one sector) and then
/// copied by the CPU into `out`, `out.len()` bytes from offset 0.
///
/// # Errors
/// Opening or reading refused (the file system takes no `O_DIRECT`),
/// with the path and the offset.
pub(crate) fn single_sector(path: &Path, out: &mut [u8]) -> Result<Copied> {
    const SECTOR: usize = 512;
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::DIRECT, Mode::empty())
        .map_err(|e| Error::io("open with O_DIRECT", path, e.into()))?;
    let mut bounce = AlignedBuffer::new(4096, 4096);
    let len = out.len();
    let mut copy_s = 0.0;
    let what = format!("read {} by 512-byte sectors (O_DIRECT)", path.display());
    let timed = timed(&what, len, || {
        let mut done = 0;
        while done < len {
            let sector = &mut bounce.as_mut_slice()[..SECTOR];
            let n = match rustix::io::pread(&fd, sector, done as u64) {
                Ok(0) => break,
                Ok(n) => n.min(len - done),
                Err(Errno::INTR) => continue,
                Err(errno) => {
                    return Err(Error::io_at(
                        "pread(O_DIRECT) of a sector",
                        path,
                        done as u64,
                        errno.into(),
                    ))
                }
            };
            let start = Instant::now();
            out[done..done + n].copy_from_slice(&bounce.as_mut_slice()[..n]);
            copy_s += start.elapsed().as_secs_f64();
            done += n;
        }
        Ok(done)
    })?;
    Ok(Copied { timed, copy_s })
}

/// A buffer for `len` bytes read in `request`s, aligned for `O_DIRECT`,
/// every page touched so that no fault lands inside a timed read.
pub(crate) fn memory(len: usize, request: usize) -> AlignedBuffer {
    let mut buffer = AlignedBuffer::new(len.next_multiple_of(request.max(4096)), 4096);
    buffer.as_mut_slice().fill(0xa5);
    buffer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slow_device::make_cold;

    /// Where `a` and `b` first differ (lengths included), if they do.
    fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
        (a != b).then(|| a.iter().zip(b).take_while(|(x, y)| x == y).count())
    }

    fn file(len: usize) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
        // A tmpfs /tmp may refuse O_DIRECT: the direct test skips then.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        let bytes: Vec<u8> = (0..len).map(|i| (i * 131 % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        (dir, path, bytes)
    }

    #[test]
    fn the_memory_sink_receives_the_file_exactly_at_every_request_size() {
        // 3 MiB and 1000 bytes: a tail shorter than every request.
        let (_dir, path, bytes) = file((3 << 20) + 1000);
        for request in [512, 8 << 10, 1 << 20] {
            let mut out = memory(bytes.len(), request);
            make_cold(&path).unwrap();
            let len = bytes.len();
            let timed = buffered(&path, request, &mut out.as_mut_slice()[..len]).unwrap();
            let got = &out.as_slice()[..len];
            assert_eq!(first_difference(got, &bytes), None, "read-write {request}");
            assert!(timed.wall_s > 0.0 && timed.busy_s >= 0.0);
            assert!(out.as_slice()[len..].iter().all(|&b| b == 0xa5));
        }
    }

    #[test]
    fn direct_reads_land_the_file_exactly_in_the_aligned_buffer() {
        let (_dir, path, bytes) = file(3 << 20);
        for request in [512, 8 << 10, 16 << 20] {
            let mut out = memory(bytes.len(), request);
            match direct(&path, request, bytes.len(), &mut out) {
                Ok(timed) => assert!(timed.wall_s > 0.0),
                Err(Error::IoAt { ref source, .. } | Error::Io { ref source, .. })
                    if source.raw_os_error() == Some(22) =>
                {
                    eprintln!("skipped at {request}: {source}");
                    continue;
                }
                Err(why) => panic!("{why}"),
            }
            let got = &out.as_slice()[..bytes.len()];
            assert_eq!(first_difference(got, &bytes), None, "O_DIRECT {request}");
        }
    }

    #[test]
    fn a_short_file_is_an_error_not_a_short_figure() {
        let (_dir, path, bytes) = file(1 << 20);
        let mut out = memory(2 << 20, 4096);
        let why = buffered(&path, 4096, &mut out.as_mut_slice()[..2 << 20]);
        assert!(why.is_err(), "{why:?}");
        let why = direct(&path, 4096, bytes.len() * 2, &mut out);
        let why = why.unwrap_err();
        assert!(
            matches!(
                why,
                Error::Short {
                    moved: 1048576,
                    expected: 2097152,
                    ..
                }
            ),
            "{why}"
        );
    }

    /// Reads completed by block device `node` so far (/sys/block/NAME/stat).
    fn reads_completed(node: &Path) -> u64 {
        let name = node.file_name().unwrap();
        let stat = std::fs::read_to_string(Path::new("/sys/block").join(name).join("stat"));
        let stat = stat.unwrap();
        stat.split_whitespace().next().unwrap().parse().unwrap()
    }

    #[test]
    fn normal_reads_ask_the_device_for_one_sector_at_a_time_and_copy_it() {
        let name = "normal_reads_ask_the_device_for_one_sector_at_a_time_and_copy_it";
        use crate::slow_device::SlowDevice;
        let device = match SlowDevice::new("test-sectors", 64 << 20, 256 << 20) {
            Ok(device) => device,
            Err(why) => {
                println!("skipped: {name}: {why}");
                return;
            }
        };
        let path = device.mount().join("data");
        let bytes: Vec<u8> = (0..64 << 10).map(|i| (i * 131 % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        std::fs::File::open(&path).unwrap().sync_all().unwrap();
        make_cold(&path).unwrap();
        let mut out = vec![0u8; bytes.len()];
        let before = reads_completed(device.node());
        let read = single_sector(&path, &mut out).unwrap();
        let requests = reads_completed(device.node()) - before;
        assert_eq!(first_difference(&out, &bytes), None);
        // 128 sectors, each its own request: no read-ahead, no merging.
        assert!((128..=132).contains(&requests), "{requests} requests");
        assert!(
            read.copy_s > 0.0 && read.copy_s < read.timed.wall_s,
            "{read:?}"
        );
    }
}
