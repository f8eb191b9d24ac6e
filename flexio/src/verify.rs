//! `--verify`: hash the source range and the sink with BLAKE3 after the
//! flow, outside its timed window, and fail on a difference.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsFd;
use std::time::Instant;

use crate::endpoint::{OpenSink, OpenSource, SinkIo, SourceIo};
use crate::error::{Error, Result};
use crate::report::Verification;

/// Hashes both sides and compares.
pub(crate) fn verify(
    source: &OpenSource<'_>,
    source_start: u64,
    sink_start: u64,
    length: u64,
    sink: &OpenSink<'_>,
) -> Result<Verification> {
    let started = Instant::now();
    let source_hash = match &source.io {
        SourceIo::Memory(bytes) => hash_slice(bytes, source_start, length),
        SourceIo::Fd(fd) => hash_file(
            &reopen(fd, source.path.as_deref(), &source.label)?,
            source_start,
            length,
            &source.label,
        )?,
    };
    let sink_hash = match &sink.io {
        SinkIo::Memory(bytes) => hash_slice(bytes, sink_start, length),
        SinkIo::Fd(fd) => hash_file(
            &reopen(fd, sink.path.as_deref(), &sink.label)?,
            sink_start,
            length,
            &sink.label,
        )?,
        SinkIo::Fresh(_) | SinkIo::Closed => {
            let path = sink
                .path
                .as_deref()
                .expect("a new or finished file sink has a path");
            let file = File::open(path).map_err(|e| Error::io("open", &sink.label, None, e))?;
            hash_file(&file, sink_start, length, &sink.label)?
        }
    };
    if source_hash != sink_hash {
        return Err(Error::VerifyMismatch {
            source_hash: source_hash.to_hex().to_string(),
            sink_hash: sink_hash.to_hex().to_string(),
        });
    }
    Ok(Verification {
        blake3: source_hash.to_hex().to_string(),
        verify_ns: started.elapsed().as_nanos() as u64,
    })
}

fn hash_slice(bytes: &[u8], start: u64, length: u64) -> blake3::Hash {
    let start = start as usize;
    blake3::hash(&bytes[start..start + length as usize])
}

/// Opens the endpoint again for reading: by path when it has one, else
/// through `/proc/self/fd` (a sink opened write-only, stdout redirected to a
/// file).
fn reopen<Fd: AsFd>(fd: Fd, path: Option<&std::path::Path>, label: &str) -> Result<File> {
    use std::os::fd::AsRawFd;
    let proc_path = format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd());
    let path = path
        .map(|p| p.to_path_buf())
        .unwrap_or_else(|| proc_path.into());
    File::open(&path).map_err(|e| Error::io("open for verify", label, None, e))
}

pub(crate) fn hash_file(file: &File, start: u64, length: u64, label: &str) -> Result<blake3::Hash> {
    let mut reader = file;
    reader
        .seek(SeekFrom::Start(start))
        .map_err(|e| Error::io("seek", label, Some(start), e))?;
    let mut hasher = blake3::Hasher::new();
    let mut limited = reader.take(length);
    let copied = std::io::copy(&mut limited, &mut hasher)
        .map_err(|e| Error::io("read for verify", label, Some(start), e))?;
    if copied != length {
        return Err(Error::SourceEnded {
            endpoint: label.to_string(),
            offset: start + copied,
            end: start + length,
        });
    }
    Ok(hasher.finalize())
}
