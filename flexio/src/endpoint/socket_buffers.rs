//! `--socket-buffer`: a fixed SO_SNDBUF and SO_RCVBUF on a flow's TCP
//! ends instead of the kernel's autotuning (FlexIO's Figure 4.18 swept
//! them). Set once the connection is made (connected or accepted): the
//! window scale was offered from the system's largest buffer, so a
//! buffer set after the handshake still reaches its size.
//!
//! The kernel doubles what is asked (the other half is its bookkeeping)
//! and caps it at `net.core.wmem_max`/`rmem_max`; a request the cap
//! would cut is retried with the `…FORCE` option (CAP_NET_ADMIN), and a
//! buffer still short of the request is an error, not a silent smaller
//! buffer.

use std::os::fd::BorrowedFd;

use rustix::net::sockopt;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The sizes a TCP end had after `--socket-buffer`, as the kernel reports
/// them (twice the request: it counts its bookkeeping in).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SocketBuffers {
    /// What was asked for each direction, bytes.
    pub requested: u64,
    /// SO_SNDBUF read back, bytes.
    pub send: u64,
    /// SO_RCVBUF read back, bytes.
    pub receive: u64,
}

/// Sets both buffers of the socket `fd` (named `label` in errors) to
/// `bytes` and reads them back.
pub(crate) fn set(fd: BorrowedFd<'_>, bytes: usize, label: &str) -> Result<SocketBuffers> {
    let io = |op: &'static str, e: rustix::io::Errno| Error::io(op, label, None, e);
    sockopt::set_socket_send_buffer_size(fd, bytes).map_err(|e| io("setsockopt SO_SNDBUF", e))?;
    sockopt::set_socket_recv_buffer_size(fd, bytes).map_err(|e| io("setsockopt SO_RCVBUF", e))?;
    let mut send = sockopt::socket_send_buffer_size(fd).map_err(|e| io("getsockopt", e))?;
    let mut receive = sockopt::socket_recv_buffer_size(fd).map_err(|e| io("getsockopt", e))?;
    // Past the system's cap: the FORCE options ignore it (CAP_NET_ADMIN);
    // without the capability the shortfall is reported below.
    if send < bytes {
        let _ = sockopt::set_socket_send_buffer_size_force(fd, bytes);
        send = sockopt::socket_send_buffer_size(fd).map_err(|e| io("getsockopt", e))?;
    }
    if receive < bytes {
        let _ = sockopt::set_socket_recv_buffer_size_force(fd, bytes);
        receive = sockopt::socket_recv_buffer_size(fd).map_err(|e| io("getsockopt", e))?;
    }
    if send < bytes || receive < bytes {
        return Err(Error::io(
            "setsockopt SO_SNDBUF/SO_RCVBUF",
            label,
            None,
            std::io::Error::other(format!(
                "--socket-buffer {bytes}: the kernel gave {send} B to send and {receive} B to \
                 receive (capped by net.core.wmem_max/rmem_max; raise them, or run with \
                 CAP_NET_ADMIN)"
            )),
        ));
    }
    Ok(SocketBuffers {
        requested: bytes as u64,
        send: send as u64,
        receive: receive as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_buffer_is_set_fixed_and_read_back_doubled() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let set = set(stream.as_fd(), 32 << 10, "tcp://test").unwrap();
        assert_eq!(set.requested, 32 << 10);
        // The kernel doubles what is asked; autotuning would not have
        // given exactly this.
        assert_eq!(set.send, 64 << 10);
        assert_eq!(set.receive, 64 << 10);
    }
}
