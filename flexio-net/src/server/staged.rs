//! File bytes in hand on their way to the socket: read into a buffer
//! (read-write, the block cache), read with `O_DIRECT` into an aligned
//! buffer (`--via direct`) or mapped (`--via mmap`). Whatever holds them,
//! the body sends them with a non-blocking `send` until the socket is
//! full, and reads or maps the next window only once they are all out — so
//! these mechanisms wait for `EPOLLOUT` like sendfile, never in the worker.

use std::os::fd::OwnedFd;

use flexio_sys::mapping::Mapping;
use flexio_sys::AlignedBuffer;
use rustix::fs::OFlags;
use rustix::io::Errno;

/// The alignment of `O_DIRECT` reads: a page covers every logical block
/// size Linux file systems use.
const DIRECT_ALIGN: usize = 4096;

/// Bytes per read or mapped window of `direct` and `mmap` without
/// `--chunk`: the engine's default chunk.
pub(crate) const DEFAULT_WINDOW: usize = 256 << 10;

/// What holds the bytes.
enum Store {
    Buffer(Vec<u8>),
    Aligned(AlignedBuffer),
    Mapped(Mapping),
}

/// Bytes `at..end` of the store are still to send.
pub(crate) struct Staged {
    store: Store,
    at: usize,
    end: usize,
}

impl Default for Staged {
    fn default() -> Self {
        Staged {
            store: Store::Buffer(Vec::new()),
            at: 0,
            end: 0,
        }
    }
}

impl Staged {
    /// The bytes still to send.
    pub fn pending(&self) -> &[u8] {
        let all = match &self.store {
            Store::Buffer(bytes) => bytes.as_slice(),
            Store::Aligned(buffer) => buffer.as_slice(),
            // The kernel copies these pages in `send`; a page past a
            // file that shrank fails there with EFAULT, never SIGBUS,
            // since nothing here touches them.
            Store::Mapped(mapping) => mapping.as_slice(),
        };
        &all[self.at..self.end]
    }

    /// How many bytes are still to send.
    pub fn len(&self) -> usize {
        self.end - self.at
    }

    /// `sent` of them went.
    pub fn advance(&mut self, sent: usize) {
        self.at += sent;
        if self.at == self.end {
            // A window is unmapped as soon as it is sent: a connection
            // holds one mapping at most.
            if matches!(self.store, Store::Mapped(_)) {
                self.store = Store::Buffer(Vec::new());
            }
        }
    }

    /// A plain buffer of `len` bytes to read into; [`Self::filled`] says
    /// how many arrived.
    pub fn buffer(&mut self, len: usize) -> &mut [u8] {
        if !matches!(self.store, Store::Buffer(_)) {
            self.store = Store::Buffer(Vec::new());
        }
        let Store::Buffer(bytes) = &mut self.store else {
            unreachable!("made a buffer above")
        };
        bytes.resize(len, 0);
        self.at = 0;
        self.end = 0;
        bytes
    }

    /// Bytes `at..end` of what was just read are to send.
    pub fn filled(&mut self, at: usize, end: usize) {
        self.at = at;
        self.end = end;
    }

    /// Reads at most `length` bytes of `file` from `first` with `O_DIRECT`
    /// (aligned reads of `window` bytes, into an aligned buffer kept for
    /// the next); returns how many of the wanted bytes are now staged, 0
    /// at the end of the file. A file system that refuses `O_DIRECT`
    /// (tmpfs before Linux 6.6) is read through the page cache instead.
    ///
    /// # Errors
    /// The errno of `fcntl` or `pread`.
    pub fn read_direct(
        &mut self,
        file: &OwnedFd,
        first: u64,
        length: u64,
        window: usize,
    ) -> Result<usize, Errno> {
        let flags = rustix::fs::fcntl_getfl(file)?;
        if !flags.contains(OFlags::DIRECT) {
            match rustix::fs::fcntl_setfl(file, flags | OFlags::DIRECT) {
                Ok(()) | Err(Errno::INVAL | Errno::OPNOTSUPP) => {}
                Err(errno) => return Err(errno),
            }
        }
        let head = (first % DIRECT_ALIGN as u64) as usize;
        let want = (length as usize).min(window.max(1));
        let span = (head + want).next_multiple_of(DIRECT_ALIGN);
        if !matches!(&self.store, Store::Aligned(buffer) if buffer.len() >= span) {
            self.store = Store::Aligned(AlignedBuffer::new(span, DIRECT_ALIGN));
        }
        let Store::Aligned(buffer) = &mut self.store else {
            unreachable!("made an aligned buffer above")
        };
        let read = loop {
            match rustix::io::pread(
                file,
                &mut buffer.as_mut_slice()[..span],
                first - head as u64,
            ) {
                Err(Errno::INTR) => {}
                read => break read?,
            }
        };
        let got = read.saturating_sub(head).min(want);
        self.at = head;
        self.end = head + got;
        Ok(got)
    }

    /// Maps at most `length` bytes of `file` from `first` (a window of at
    /// most `window` bytes, from the page `first` is in) to send out of
    /// the mapping; returns how many of the wanted bytes are staged, 0
    /// when the file now ends at or before `first`.
    ///
    /// # Errors
    /// The errno of `fstat` or `mmap`.
    pub fn map(
        &mut self,
        file: &OwnedFd,
        first: u64,
        length: u64,
        window: usize,
    ) -> Result<usize, Errno> {
        let page = rustix::param::page_size();
        let head = (first % page as u64) as usize;
        // Only what the file holds now is mapped: a page wholly past its
        // end would fail the send with EFAULT rather than end it cleanly.
        let size = rustix::fs::fstat(file)?.st_size as u64;
        let want = length
            .min(size.saturating_sub(first))
            .min(window.max(page) as u64) as usize;
        if want == 0 {
            return Ok(0);
        }
        self.store = Store::Buffer(Vec::new());
        let mapping = Mapping::map(file, first - head as u64, head + want, false)
            .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
        // Read ahead harder; a kernel that ignores the hint sends the
        // same bytes.
        let _ = mapping.advise(rustix::mm::Advice::Sequential);
        self.store = Store::Mapped(mapping);
        self.at = head;
        self.end = head + want;
        Ok(want)
    }
}
