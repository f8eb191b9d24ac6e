//! Files into GPU memory and back, by each of TPIL's injection modes.
//!
//! TPIL (the tunable injection library) moved data from host memory into
//! a card by several mechanisms and picked one per size by measuring. On a
//! GPU the same choice is between a pageable copy the driver stages, a
//! page-locked buffer the card reads by DMA, two of them so the disk and
//! the bus work at once, and the caller's own pages locked in place and
//! filled by `O_DIRECT`, so no CPU touches the bytes at all.

use std::fs::File;
use std::os::fd::AsFd;
use std::path::Path;
use std::time::Instant;

use crate::sys::aligned::AlignedBuffer;
use crate::sys::gpu::{DeviceMemory, Gpu, GpuError};

use super::address::DeviceAddress;
use crate::error::{Error, Result};

/// How bytes reach the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceMode {
    /// Read into ordinary memory; the driver copies it into a staging
    /// buffer of its own, then DMAs (two CPU copies).
    Pageable,
    /// Read into one page-locked buffer the card DMAs from (one CPU copy).
    Pinned,
    /// Two page-locked buffers: the next piece is read while the last one
    /// crosses the bus.
    Staged,
    /// The caller's aligned pages locked in place and filled by `O_DIRECT`
    /// where the file system allows: the disk and the card DMA, the CPU
    /// copies nothing.
    Registered,
}

impl DeviceMode {
    /// Every mode, in the order tables print them.
    pub const ALL: [DeviceMode; 4] = [
        DeviceMode::Pageable,
        DeviceMode::Pinned,
        DeviceMode::Staged,
        DeviceMode::Registered,
    ];

    /// Its name on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceMode::Pageable => "pageable",
            DeviceMode::Pinned => "pinned",
            DeviceMode::Staged => "staged",
            DeviceMode::Registered => "registered",
        }
    }

    /// The mode for a transfer of `bytes` until a profile says otherwise:
    /// below 64 KiB the driver's own staging is as fast as any and sets
    /// nothing up (TPIL's finding, and the H100's: 0.63 GB/s pageable
    /// against 0.52 pinned at 4 KiB); above, two pinned buffers.
    pub fn builtin_choice(bytes: u64) -> DeviceMode {
        if bytes < 64 << 10 {
            DeviceMode::Pageable
        } else {
            DeviceMode::Staged
        }
    }
}

impl std::str::FromStr for DeviceMode {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        DeviceMode::ALL
            .into_iter()
            .find(|mode| mode.as_str().eq_ignore_ascii_case(text))
            .ok_or_else(|| {
                Error::usage(format!(
                    "unknown device mode {text:?}; known: {}",
                    DeviceMode::ALL.map(DeviceMode::as_str).join(", ")
                ))
            })
    }
}

/// What one transfer did.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceReport {
    /// Bytes moved.
    pub bytes: u64,
    /// Wall time from the first read to the last byte on the far side.
    pub seconds: f64,
    /// The mode that ran.
    pub mode: DeviceMode,
    /// Whether the file was read with `O_DIRECT` (registered mode, where
    /// the file system allows it).
    pub direct: bool,
}

/// The piece each read and each copy moves, unless told otherwise.
pub const DEFAULT_PIECE: usize = 4 << 20;

/// Reads `path` (its first `address.len` bytes, or all of it) into new
/// device memory of `address.offset + len` bytes on `gpu`, at
/// `address.offset`, `piece` bytes at a time, by `mode`.
///
/// # Errors
/// [`Error::Io`] for the file (with its offset), [`Error::Device`] for the
/// GPU, [`Error::SourceEnded`] when the file is shorter than asked.
///
/// # Examples
/// ```no_run
/// use flexio::device::{load_file, DeviceAddress, DeviceMode, DEFAULT_PIECE};
/// let gpu = flexio::device::Gpu::open(0)?;
/// let at = DeviceAddress::parse("gpu:0")?.expect("a device name");
/// let (memory, report) =
///     load_file("model.safetensors".as_ref(), &gpu, at, DeviceMode::Staged, DEFAULT_PIECE)?;
/// println!("{} bytes in {:.3} s", report.bytes, report.seconds);
/// # drop(memory);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load_file(
    path: &Path,
    gpu: &Gpu,
    address: DeviceAddress,
    mode: DeviceMode,
    piece: usize,
) -> Result<(DeviceMemory, DeviceReport)> {
    let shown = path.display().to_string();
    let file = File::open(path).map_err(|e| Error::io("open", &shown, None, e))?;
    let size = file
        .metadata()
        .map_err(|e| Error::io("stat", &shown, None, e))?
        .len();
    let len = address.len.unwrap_or(size);
    let device_error = |offset: Option<u64>| {
        move |source: GpuError| Error::Device {
            endpoint: address.to_string(),
            offset,
            source,
        }
    };
    let total = address
        .offset
        .checked_add(len)
        .and_then(|end| usize::try_from(end).ok())
        .ok_or_else(|| Error::usage(format!("{address}: too large for this machine")))?;
    let mut memory = gpu.alloc(total).map_err(device_error(None))?;
    let piece = piece.clamp(4096, 1 << 30) & !4095;
    let mut sides = Sides {
        file: &file,
        path: &shown,
        gpu,
        memory: &mut memory,
        address,
        len,
        piece,
    };
    let started = Instant::now();
    let direct = match mode {
        DeviceMode::Pageable => sides.pageable().map(|()| false),
        DeviceMode::Pinned => sides.pinned(1).map(|()| false),
        DeviceMode::Staged => sides.pinned(2).map(|()| false),
        DeviceMode::Registered => sides.registered(path),
    }?;
    gpu.synchronize().map_err(device_error(None))?;
    let report = DeviceReport {
        bytes: len,
        seconds: started.elapsed().as_secs_f64(),
        mode,
        direct,
    };
    Ok((memory, report))
}

/// Writes `len` bytes of `memory` from `offset` to a new file at `path`,
/// `piece` bytes at a time: into a temporary file beside it, renamed over
/// `path` only when every byte is written, so a failure leaves no part.
///
/// # Errors
/// [`Error::Device`] for the GPU (a range outside `memory` among them),
/// [`Error::Io`] for the file.
pub fn store_file(
    gpu: &Gpu,
    memory: &DeviceMemory,
    address: DeviceAddress,
    path: &Path,
    piece: usize,
) -> Result<DeviceReport> {
    use std::io::Write;
    let shown = path.display().to_string();
    let len = address
        .len
        .unwrap_or((memory.len() as u64).saturating_sub(address.offset));
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut temporary = tempfile::NamedTempFile::new_in(parent)
        .map_err(|e| Error::io("create", &shown, None, e))?;
    let mut buffer = vec![0u8; piece.clamp(4096, 1 << 30)];
    let started = Instant::now();
    let mut done = 0u64;
    while done < len {
        let n = buffer.len().min((len - done) as usize);
        let at = address.offset + done;
        gpu.copy_out(memory, at as usize, &mut buffer[..n])
            .map_err(|source| Error::Device {
                endpoint: address.to_string(),
                offset: Some(done),
                source,
            })?;
        temporary
            .write_all(&buffer[..n])
            .map_err(|e| Error::io("write", &shown, Some(done), e))?;
        done += n as u64;
    }
    temporary
        .persist(path)
        .map_err(|e| Error::io("rename", &shown, None, e.error))?;
    Ok(DeviceReport {
        bytes: len,
        seconds: started.elapsed().as_secs_f64(),
        mode: DeviceMode::Pageable,
        direct: false,
    })
}

/// Reads `bytes` bytes of `memory` from `address.offset` back from the
/// device and compares their BLAKE3 with that of `path`'s first `bytes`
/// bytes: what `copy --verify` does after a load.
///
/// # Errors
/// [`Error::VerifyMismatch`] when they differ; [`Error::Io`] for the file
/// and [`Error::Device`] for the GPU.
pub fn verify_load(
    path: &Path,
    gpu: &Gpu,
    memory: &DeviceMemory,
    address: DeviceAddress,
    bytes: u64,
    piece: usize,
) -> Result<()> {
    use std::io::Read;
    let shown = path.display().to_string();
    let file = File::open(path).map_err(|e| Error::io("open", &shown, None, e))?;
    let mut buffer = vec![0u8; piece.clamp(4096, 64 << 20)];
    let mut file_hash = blake3::Hasher::new();
    let mut reader = file.take(bytes);
    let mut read = 0u64;
    loop {
        let n = reader
            .read(&mut buffer)
            .map_err(|e| Error::io("read", &shown, Some(read), e))?;
        if n == 0 {
            break;
        }
        file_hash.update(&buffer[..n]);
        read += n as u64;
    }
    let mut device_hash = blake3::Hasher::new();
    let mut done = 0u64;
    while done < bytes {
        let n = buffer.len().min((bytes - done) as usize);
        gpu.copy_out(memory, (address.offset + done) as usize, &mut buffer[..n])
            .map_err(|source| Error::Device {
                endpoint: address.to_string(),
                offset: Some(done),
                source,
            })?;
        device_hash.update(&buffer[..n]);
        done += n as u64;
    }
    let (source_hash, sink_hash) = (file_hash.finalize(), device_hash.finalize());
    if source_hash != sink_hash {
        return Err(Error::VerifyMismatch {
            source_hash: source_hash.to_hex().to_string(),
            sink_hash: sink_hash.to_hex().to_string(),
        });
    }
    Ok(())
}

/// One load's two ends.
struct Sides<'a> {
    file: &'a File,
    path: &'a str,
    gpu: &'a Gpu,
    memory: &'a mut DeviceMemory,
    address: DeviceAddress,
    len: u64,
    piece: usize,
}

impl Sides<'_> {
    /// The pieces: (file offset, length).
    fn pieces(&self) -> impl Iterator<Item = (u64, usize)> {
        let (len, piece) = (self.len, self.piece as u64);
        (0..len.div_ceil(piece)).map(move |i| {
            let at = i * piece;
            (at, (len - at).min(piece) as usize)
        })
    }

    fn device_error(&self, offset: u64) -> impl FnOnce(GpuError) -> Error + use<> {
        let endpoint = self.address.to_string();
        move |source| Error::Device {
            endpoint,
            offset: Some(offset),
            source,
        }
    }

    /// Fills `buffer` from the file at `at`, all of it.
    fn read_exactly(&self, file: &impl AsFd, buffer: &mut [u8], at: u64) -> Result<()> {
        let n = buffer.len();
        self.read_at_least(file, buffer, n, at, "read")
    }

    /// Reads into `buffer` at `at` until at least `n` bytes came (a read
    /// may bring more, up to the buffer's end, as an `O_DIRECT` read of
    /// whole blocks does).
    fn read_at_least(
        &self,
        file: &impl AsFd,
        buffer: &mut [u8],
        n: usize,
        at: u64,
        op: &'static str,
    ) -> Result<()> {
        let mut done = 0;
        while done < n {
            let offset = at + done as u64;
            match rustix::io::pread(file, &mut buffer[done..], offset) {
                Ok(0) => {
                    return Err(Error::SourceEnded {
                        endpoint: self.path.to_string(),
                        offset,
                        end: self.len,
                    })
                }
                Ok(got) => done += got,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(Error::io(op, self.path, Some(offset), e)),
            }
        }
        Ok(())
    }

    fn pageable(&mut self) -> Result<()> {
        let mut buffer = vec![0u8; self.piece];
        for (at, n) in self.pieces().collect::<Vec<_>>() {
            self.read_exactly(self.file, &mut buffer[..n], at)?;
            let place = (self.address.offset + at) as usize;
            let error = self.device_error(at);
            self.gpu
                .copy_in(&buffer[..n], self.memory, place)
                .map_err(error)?;
        }
        Ok(())
    }

    /// `count` page-locked buffers taken in turn: with two, a piece is
    /// read while the one before it crosses the bus.
    fn pinned(&mut self, count: usize) -> Result<()> {
        let mut buffers = (0..count)
            .map(|_| self.gpu.pinned(self.piece).map_err(self.device_error(0)))
            .collect::<Result<Vec<_>>>()?;
        for (index, (at, n)) in self.pieces().enumerate().collect::<Vec<_>>() {
            let buffer = &mut buffers[index % count];
            let bytes = buffer.as_mut_slice().map_err(self.device_error(at))?;
            self.read_exactly(self.file, &mut bytes[..n], at)?;
            let place = (self.address.offset + at) as usize;
            let error = self.device_error(at);
            self.gpu
                .copy_in_pinned(buffer, n, self.memory, place)
                .map_err(error)?;
        }
        Ok(())
    }

    /// An aligned buffer locked in place, filled by `O_DIRECT` where the
    /// file system takes it (buffered reads otherwise); returns which.
    fn registered(&mut self, path: &Path) -> Result<bool> {
        let direct = open_direct(path);
        let buffer = AlignedBuffer::new(self.piece, 4096);
        let mut locked = self.gpu.register(buffer).map_err(self.device_error(0))?;
        for (at, n) in self.pieces().collect::<Vec<_>>() {
            let bytes = locked.as_mut_slice().map_err(self.device_error(at))?;
            match &direct {
                // O_DIRECT reads whole aligned blocks; the last may come
                // back short at the end of the file, which is all we need.
                Some(file) => self.read_direct(file, bytes, n, at)?,
                None => self.read_exactly(self.file, &mut bytes[..n], at)?,
            }
            let place = (self.address.offset + at) as usize;
            let error = self.device_error(at);
            self.gpu
                .copy_in_registered(&locked, n, self.memory, place)
                .map_err(error)?;
        }
        Ok(direct.is_some())
    }

    /// Reads at least `n` bytes at `at` into `buffer` by whole aligned
    /// blocks.
    fn read_direct(&self, file: &File, buffer: &mut [u8], n: usize, at: u64) -> Result<()> {
        let whole = n.next_multiple_of(4096).min(buffer.len());
        self.read_at_least(file, &mut buffer[..whole], n, at, "read (O_DIRECT)")
    }
}

/// `path` opened again with `O_DIRECT`, where its file system allows.
fn open_direct(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .ok()
}
