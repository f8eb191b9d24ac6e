//! `SO_MAX_PACING_RATE` and `TCP_NOTSENT_LOWAT`, which rustix does not
//! wrap: the kernel's own pacing of a TCP sender.
//!
//! References: socket(7) (`SO_MAX_PACING_RATE`), tcp(7)
//! (`TCP_NOTSENT_LOWAT`).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `SO_MAX_PACING_RATE` from asm-generic/socket.h (libc does not export
/// it for every architecture; the architectures flexio builds for share
/// the generic value).
#[cfg(not(any(target_arch = "mips", target_arch = "mips64", target_arch = "sparc64")))]
const SO_MAX_PACING_RATE: libc::c_int = 47;

fn set_option<T: Copy>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: T,
) -> io::Result<()> {
    // SAFETY: `value` is a plain integer that lives across the call, and
    // its size is passed with it; the descriptor is borrowed and open.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&raw const value).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn get_option<T: Copy + Default>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
) -> io::Result<T> {
    let mut value = T::default();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `value`, which is
    // that large and lives across the call; the descriptor is borrowed.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&raw mut value).cast(),
            &raw mut len,
        )
    };
    if rc == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Caps the socket's sending rate at `bytes_per_second` (`u64::MAX`: no
/// cap). The 64-bit form is read by kernels since 4.20; older ones read
/// the low 32 bits, which is the whole value below 4 GiB/s.
pub fn set_max_pacing_rate(fd: BorrowedFd<'_>, bytes_per_second: u64) -> io::Result<()> {
    set_option(fd, libc::SOL_SOCKET, SO_MAX_PACING_RATE, bytes_per_second)
}

/// The socket's current cap (`u64::MAX` or `u32::MAX`: none).
pub fn max_pacing_rate(fd: BorrowedFd<'_>) -> io::Result<u64> {
    get_option(fd, libc::SOL_SOCKET, SO_MAX_PACING_RATE)
}

/// Makes a sender wait until fewer than `bytes` are queued and not yet
/// sent, so that a paced sender's clock stays near its bytes on the wire.
pub fn set_notsent_lowat(fd: BorrowedFd<'_>, bytes: u32) -> io::Result<()> {
    set_option(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, bytes)
}

/// The socket's current `TCP_NOTSENT_LOWAT`.
pub fn notsent_lowat(fd: BorrowedFd<'_>) -> io::Result<u32> {
    get_option(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_tcp_sockets_pacing_rate_is_set_and_read_back() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        set_max_pacing_rate(stream.as_fd(), 10 << 20).unwrap();
        assert_eq!(max_pacing_rate(stream.as_fd()).unwrap(), 10 << 20);
        set_notsent_lowat(stream.as_fd(), 65536).unwrap();
        assert_eq!(notsent_lowat(stream.as_fd()).unwrap(), 65536);
    }
}
