//! Surviving SIGBUS on file mappings.
//!
//! Touching a page of a shared file mapping that lies wholly past the end of
//! the file — because the file was truncated after it was mapped — or a page
//! the file system cannot allocate (out of space) raises SIGBUS, whose
//! default action kills the process. A [`Guard`] owns a [`Mapping`] and
//! registers its address range in a fixed, lock-free table; a process-wide
//! handler (installed once) looks the faulting address up:
//!
//! - inside a guarded range, it maps anonymous zero pages over the rest of
//!   the range from the faulting page on (`MAP_FIXED`), so that the faulting
//!   instruction completes and reads zeros (or writes into memory that is
//!   thrown away), and records the first fault in the table. The owner asks
//!   [`Guard::fault_offset`] after touching the bytes and turns a fault into
//!   an error;
//! - anywhere else, it hands the signal to the handler that was installed
//!   before ours (Rust's standard library installs one to report stack
//!   overflows), or restores the default action so that the fault recurs
//!   and kills the process as it would have without us.
//!
//! The handler uses only atomics and raw system calls (`mmap`,
//! `sigaction`, `raise`), which are async-signal-safe, and keeps `errno`.
//!
//! Reference: <https://man7.org/linux/man-pages/man2/sigaction.2.html>,
//! <https://man7.org/linux/man-pages/man2/mmap.2.html> (SIGBUS under
//! ERRORS).

use std::ffi::{c_int, c_void};
use std::io;
use std::sync::atomic::{fence, AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::Once;

use crate::mapping::Mapping;

/// How many ranges can be guarded at once across the process (a flow
/// guards at most two at a time).
const SLOTS: usize = 256;

/// One guarded range. `seq` is odd while the range is live; every
/// registration and unregistration bumps it, so that the handler can tell a
/// consistent `start`/`end` pair from one torn by a concurrent reuse of the
/// slot (a sequence lock whose writers never block the handler).
struct Slot {
    claimed: AtomicBool,
    seq: AtomicUsize,
    start: AtomicUsize,
    end: AtomicUsize,
    /// The first faulting address, 0 for none (no mapping starts at 0).
    fault: AtomicUsize,
}

impl Slot {
    const fn new() -> Self {
        Slot {
            claimed: AtomicBool::new(false),
            seq: AtomicUsize::new(0),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            fault: AtomicUsize::new(0),
        }
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

static INSTALL: Once = Once::new();
/// The errno of a failed installation, 0 when the handler is in place.
static INSTALL_ERRNO: AtomicI32 = AtomicI32::new(0);
/// The page size, read once outside the handler (`sysconf` is not
/// async-signal-safe).
static PAGE_SIZE: AtomicUsize = AtomicUsize::new(0);
/// The SIGBUS disposition before ours: handler address and `sa_flags`.
static PREVIOUS_HANDLER: AtomicUsize = AtomicUsize::new(libc::SIG_DFL);
static PREVIOUS_FLAGS: AtomicUsize = AtomicUsize::new(0);

/// A file mapping whose SIGBUS faults are caught and recorded instead of
/// killing the process. Unregisters its range before unmapping it.
pub struct Guard {
    slot: usize,
    mapping: Mapping,
}

impl Guard {
    /// Guards `mapping` until the guard is dropped (which unmaps it).
    ///
    /// # Errors
    /// `EBUSY` when every slot of the process-wide table is taken; the
    /// errno of `sigaction(2)` if the handler could not be installed.
    pub fn new(mapping: Mapping) -> io::Result<Self> {
        install()?;
        let page = PAGE_SIZE.load(Ordering::Relaxed);
        let start = mapping.addr();
        let end = start + mapping.len().div_ceil(page) * page;
        for (index, slot) in TABLE.iter().enumerate() {
            if slot
                .claimed
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            slot.start.store(start, Ordering::Relaxed);
            slot.end.store(end, Ordering::Relaxed);
            slot.fault.store(0, Ordering::Relaxed);
            // Publishes the range: a handler that sees the odd sequence
            // number sees the stores above.
            slot.seq.fetch_add(1, Ordering::Release);
            return Ok(Guard {
                slot: index,
                mapping,
            });
        }
        Err(io::Error::from_raw_os_error(libc::EBUSY))
    }

    /// The guarded mapping.
    pub fn mapping(&self) -> &Mapping {
        &self.mapping
    }

    /// The guarded mapping, writable.
    pub fn mapping_mut(&mut self) -> &mut Mapping {
        &mut self.mapping
    }

    /// The offset within the mapping of the first access that faulted, if
    /// any did. From that page on, the mapping holds anonymous zero pages
    /// instead of the file.
    pub fn fault_offset(&self) -> Option<usize> {
        match TABLE[self.slot].fault.load(Ordering::Acquire) {
            0 => None,
            address => Some(address - self.mapping.addr()),
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let slot = &TABLE[self.slot];
        slot.seq.fetch_add(1, Ordering::Release);
        slot.claimed.store(false, Ordering::Release);
        // `self.mapping` is unmapped after this, when the field drops.
    }
}

/// Installs the handler once per process.
fn install() -> io::Result<()> {
    INSTALL.call_once(|| {
        PAGE_SIZE.store(rustix::param::page_size(), Ordering::Relaxed);
        if let Err(errno) = install_handler() {
            INSTALL_ERRNO.store(errno, Ordering::Relaxed);
        }
    });
    match INSTALL_ERRNO.load(Ordering::Relaxed) {
        0 => Ok(()),
        errno => Err(io::Error::from_raw_os_error(errno)),
    }
}

fn install_handler() -> Result<(), c_int> {
    // SAFETY: an all-zero `sigaction` is a valid value (SIG_DFL, empty
    // mask, no flags) for the kernel to fill in.
    let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current disposition into
    // `previous`, which is valid for writes.
    if unsafe { libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut previous) } != 0 {
        return Err(io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    PREVIOUS_HANDLER.store(previous.sa_sigaction, Ordering::Relaxed);
    PREVIOUS_FLAGS.store(previous.sa_flags as usize, Ordering::Relaxed);
    // SAFETY: as above, zero is a valid starting value.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_sigbus as *const () as usize;
    // On the alternate stack where one is set up (Rust's runtime sets one
    // per thread), so that a fault with little stack left is still handled.
    action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    // SAFETY: `action.sa_mask` is a valid `sigset_t` to clear.
    unsafe { libc::sigemptyset(&mut action.sa_mask) };
    // SAFETY: `action` is fully initialised and `on_sigbus` has the
    // three-argument signature SA_SIGINFO calls for.
    if unsafe { libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    Ok(())
}

/// The SIGBUS handler. Async-signal-safe: atomics and raw system calls only.
extern "C" fn on_sigbus(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: `__errno_location` returns this thread's errno slot.
    let errno = unsafe { *libc::__errno_location() };
    // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo; for SIGBUS
    // `si_addr` is the faulting address.
    let address = unsafe { (*info).si_addr() } as usize;
    if !cover(address) {
        forward(signal, info, context);
    }
    // SAFETY: as above; the interrupted code must not see our errno.
    unsafe { *libc::__errno_location() = errno };
}

/// If `address` lies in a guarded range, replaces the range from its page
/// on with zero pages, records the fault and returns true.
fn cover(address: usize) -> bool {
    let page = PAGE_SIZE.load(Ordering::Relaxed);
    if page == 0 || address == 0 {
        return false;
    }
    for slot in &TABLE {
        let seq = slot.seq.load(Ordering::Acquire);
        if seq & 1 == 0 {
            continue;
        }
        let start = slot.start.load(Ordering::Relaxed);
        let end = slot.end.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if slot.seq.load(Ordering::Relaxed) != seq || address < start || address >= end {
            continue;
        }
        let from = address & !(page - 1);
        // SAFETY: `from..end` lies inside a live mapping owned by a `Guard`
        // (the faulting access borrows it, so the guard cannot be dropped
        // meanwhile). Replacing its pages is what the guard exists for: the
        // owner learns of it through `fault_offset` and stops trusting the
        // bytes. No Rust object other than that mapping lives there.
        let mapped = unsafe {
            libc::mmap(
                from as *mut c_void,
                end - from,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if mapped == libc::MAP_FAILED {
            return false;
        }
        let _ = slot
            .fault
            .compare_exchange(0, address, Ordering::AcqRel, Ordering::Relaxed);
        return true;
    }
    false
}

/// A SIGBUS outside every guarded range: what would have happened without
/// us.
fn forward(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let previous = PREVIOUS_HANDLER.load(Ordering::Relaxed);
    let flags = PREVIOUS_FLAGS.load(Ordering::Relaxed) as c_int;
    if previous != libc::SIG_DFL && previous != libc::SIG_IGN {
        if flags & libc::SA_SIGINFO != 0 {
            // SAFETY: the previous handler was installed with SA_SIGINFO,
            // so it has the three-argument signature.
            let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                unsafe { std::mem::transmute(previous) };
            handler(signal, info, context);
        } else {
            // SAFETY: without SA_SIGINFO a handler takes the signal number.
            let handler: extern "C" fn(c_int) = unsafe { std::mem::transmute(previous) };
            handler(signal);
        }
        return;
    }
    // SAFETY: zero is a valid `sigaction`: SIG_DFL, empty mask, no flags.
    let default: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: `default` is initialised; sigaction is async-signal-safe.
    unsafe { libc::sigaction(libc::SIGBUS, &default, std::ptr::null_mut()) };
    // SAFETY: `info` is valid as in `on_sigbus`.
    if unsafe { (*info).si_code } <= 0 {
        // Sent by kill(2) or sigqueue(3), not by a fault: it will not recur
        // by itself. Blocked until this handler returns, then default.
        // SAFETY: raise is async-signal-safe.
        unsafe { libc::raise(libc::SIGBUS) };
    }
}

#[cfg(test)]
mod tests {
    use std::hint::black_box;
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    fn two_page_file() -> (tempfile::NamedTempFile, Mapping, usize) {
        let page = rustix::param::page_size();
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), vec![7u8; 2 * page]).unwrap();
        let mapping = Mapping::map(file.as_file(), 0, 2 * page, false).unwrap();
        (file, mapping, page)
    }

    fn sum(bytes: &[u8]) -> u64 {
        bytes.iter().map(|&b| u64::from(black_box(b))).sum()
    }

    #[test]
    fn a_truncated_guarded_mapping_reads_zeros_and_records_the_fault() {
        let (file, mapping, page) = two_page_file();
        let guard = Guard::new(mapping).unwrap();
        assert_eq!(sum(guard.mapping().as_slice()), 7 * 2 * page as u64);
        assert_eq!(guard.fault_offset(), None);

        file.as_file().set_len(0).unwrap();
        assert_eq!(sum(black_box(guard.mapping().as_slice())), 0);
        assert_eq!(guard.fault_offset(), Some(0));
    }

    #[test]
    fn a_fault_in_the_second_page_is_recorded_at_its_offset() {
        let (file, mapping, page) = two_page_file();
        let guard = Guard::new(mapping).unwrap();
        file.as_file().set_len(page as u64).unwrap();
        let bytes = guard.mapping().as_slice();
        assert_eq!(sum(&bytes[..page]), 7 * page as u64);
        assert_eq!(guard.fault_offset(), None);
        assert_eq!(sum(&bytes[page..]), 0);
        assert_eq!(guard.fault_offset(), Some(page));
    }

    #[test]
    fn slots_are_released_on_drop() {
        let page = rustix::param::page_size();
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), vec![1u8; page]).unwrap();
        for _ in 0..2 * SLOTS {
            let mapping = Mapping::map(file.as_file(), 0, page, false).unwrap();
            let guard = Guard::new(mapping).unwrap();
            assert_eq!(sum(guard.mapping().as_slice()), page as u64);
        }
    }

    const CHILD: &str = "FLEXIO_SIGBUS_UNGUARDED_CHILD";

    /// A SIGBUS outside every guarded range still kills the process: run in
    /// a child process (this test binary again), which must die by SIGBUS.
    #[test]
    fn an_unguarded_fault_still_kills_the_process() {
        if std::env::var_os(CHILD).is_some() {
            let (file, mapping, page) = two_page_file();
            // Install the handler and keep a guard on something else.
            let (_other_file, other, _) = two_page_file();
            let _guard = Guard::new(other).unwrap();
            file.as_file().set_len(0).unwrap();
            let total = sum(black_box(mapping.as_slice()));
            // Not reached: the read above kills the process.
            println!("survived with {total} over {page}");
            std::process::exit(0);
        }
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "sigbus::tests::an_unguarded_fault_still_kills_the_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        assert_eq!(
            status.status.signal(),
            Some(libc::SIGBUS),
            "child: {status:?}"
        );
    }
}
