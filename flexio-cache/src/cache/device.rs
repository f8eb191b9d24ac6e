//! The file or block device under the cache, opened with `O_DIRECT`: every
//! request goes to the device, none through the page cache, so the cache
//! does not hold each block twice nor fight the kernel over memory.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use crate::error::{Error, Result};
use crate::sys::uring::{self, Request};

/// The smallest alignment direct I/O accepts for offsets and lengths (a
/// logical sector); a short read that ends off it ended at the end of the
/// file.
const DIRECT_ALIGN: usize = 512;

/// What was sent to the devices of one cache (a [`super::FileCache`]
/// opens one per file; they all count here).
#[derive(Default)]
pub(crate) struct IoCounters {
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    pub read_requests: AtomicU64,
    pub write_requests: AtomicU64,
    /// Why io_uring could not be used, once a thread found out.
    pub uring_refused: OnceLock<String>,
}

/// The opened device.
pub(crate) struct Device {
    file: File,
    pub path: String,
    pub is_block_device: bool,
    counters: Arc<IoCounters>,
}

impl Device {
    /// Opens `path` read-write with `O_DIRECT` (or without it when `direct`
    /// is false, for file systems such as tmpfs that refuse it) and returns
    /// it with its current length in bytes.
    pub fn open(path: &Path, direct: bool, counters: Arc<IoCounters>) -> Result<(Device, u64)> {
        let name = path.display().to_string();
        let io = |op, source| Error::Io {
            op,
            path: name.clone(),
            offset: None,
            source,
        };
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        if direct {
            options.custom_flags(libc::O_DIRECT);
        }
        let op = if direct { "open O_DIRECT" } else { "open" };
        let mut file = options.open(path).map_err(|e| io(op, e))?;
        let kind = file.metadata().map_err(|e| io("fstat", e))?.file_type();
        // A block device's st_size is 0: ask lseek for its end instead.
        let len = file.seek(SeekFrom::End(0)).map_err(|e| io("lseek", e))?;
        let device = Device {
            file,
            path: name,
            is_block_device: kind.is_block_device(),
            counters,
        };
        Ok((device, len))
    }

    /// Opens the file `fd` is open on again, read-only with `O_DIRECT`:
    /// a description of its own, so the flag does not change how the
    /// caller's descriptor reads (the engine's direct I/O does the same).
    /// `label` names it in errors.
    pub fn reopen_read_only(
        fd: BorrowedFd<'_>,
        label: &str,
        counters: Arc<IoCounters>,
    ) -> Result<Device> {
        let proc_path = format!("/proc/self/fd/{}", fd.as_raw_fd());
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&proc_path)
            .map_err(|source| Error::Io {
                op: "reopen O_DIRECT",
                path: label.to_string(),
                offset: None,
                source,
            })?;
        Ok(Device {
            file,
            path: label.to_string(),
            is_block_device: false,
            counters,
        })
    }

    fn error(&self, op: &'static str, offset: u64, source: io::Error) -> Error {
        Error::Io {
            op,
            path: self.path.clone(),
            offset: Some(offset),
            source,
        }
    }

    /// Reads into `buf` at `offset` with one `pread` (repeated only if the
    /// kernel stops early before the end of the file); returns the bytes
    /// read, fewer than `buf.len()` only at the end of the file.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            self.counters.read_requests.fetch_add(1, Relaxed);
            let n = rustix::io::pread(&self.file, &mut buf[done..], offset + done as u64)
                .map_err(|e| self.error("pread", offset + done as u64, e.into()))?;
            done += n;
            // A short direct read ends at the end of the file; and the rest
            // could not be asked for anyway, unaligned.
            if n == 0 || done % DIRECT_ALIGN != 0 {
                break;
            }
        }
        self.counters.bytes_read.fetch_add(done as u64, Relaxed);
        Ok(done)
    }

    /// Writes all of `buf` at `offset`.
    pub fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        let mut done = 0;
        while done < buf.len() {
            self.counters.write_requests.fetch_add(1, Relaxed);
            let n = rustix::io::pwrite(&self.file, &buf[done..], offset + done as u64)
                .map_err(|e| self.error("pwrite", offset + done as u64, e.into()))?;
            if n == 0 {
                let zero = io::Error::new(io::ErrorKind::WriteZero, "pwrite wrote nothing");
                return Err(self.error("pwrite", offset + done as u64, zero));
            }
            done += n;
        }
        self.counters.bytes_written.fetch_add(done as u64, Relaxed);
        Ok(())
    }

    /// Runs a batch with up to `depth` requests in flight through this
    /// thread's io_uring (one request at a time with `pread`/`pwrite` when
    /// the kernel refuses io_uring; [`IoCounters::uring_refused`] says why).
    /// Reads return the bytes read (short only at the end of the file);
    /// writes are completed in full.
    pub fn run_batch(&self, requests: &mut [Request<'_>], depth: usize) -> Result<Vec<usize>> {
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        let results = if depth > 1 && self.counters.uring_refused.get().is_none() {
            match uring::run(self.file.as_fd(), requests, depth) {
                Ok(results) => Some(results),
                Err(why) => {
                    let _ = self.counters.uring_refused.set(why);
                    None
                }
            }
        } else {
            None
        };
        let Some(results) = results else {
            return requests
                .iter_mut()
                .map(|request| match request {
                    Request::Read { offset, buf } => self.read_at(buf, *offset),
                    Request::Write { offset, buf } => {
                        self.write_at(buf, *offset).map(|()| buf.len())
                    }
                })
                .collect();
        };
        let mut done = Vec::with_capacity(results.len());
        for (request, result) in requests.iter_mut().zip(results) {
            match request {
                Request::Read { offset, buf } => {
                    self.counters.read_requests.fetch_add(1, Relaxed);
                    let n = result.map_err(|e| self.error("io_uring read", *offset, e))?;
                    self.counters.bytes_read.fetch_add(n as u64, Relaxed);
                    // A short read before the end of the file: finish it.
                    let rest = if n < buf.len() && n > 0 && n % DIRECT_ALIGN == 0 {
                        self.read_at(&mut buf[n..], *offset + n as u64)?
                    } else {
                        0
                    };
                    done.push(n + rest);
                }
                Request::Write { offset, buf } => {
                    self.counters.write_requests.fetch_add(1, Relaxed);
                    let n = result.map_err(|e| self.error("io_uring write", *offset, e))?;
                    self.counters.bytes_written.fetch_add(n as u64, Relaxed);
                    if n < buf.len() {
                        self.write_at(&buf[n..], *offset + n as u64)?;
                    }
                    done.push(buf.len());
                }
            }
        }
        Ok(done)
    }

    /// `fdatasync(2)`: what was written reaches stable storage.
    pub fn sync(&self) -> Result<()> {
        rustix::fs::fdatasync(&self.file).map_err(|e| self.error("fdatasync", 0, e.into()))
    }

    /// Cuts a regular file to `len` (write-back writes whole blocks, so the
    /// last one may have made the file longer than the cache says it is).
    pub fn truncate(&self, len: u64) -> Result<()> {
        if self.is_block_device {
            return Ok(());
        }
        self.file
            .set_len(len)
            .map_err(|e| self.error("ftruncate", len, e))
    }
}
