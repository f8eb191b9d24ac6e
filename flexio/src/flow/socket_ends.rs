//! `Flow::socket_buffer` on the opened ends: each TCP end of the flow
//! gets the fixed buffers; other kinds are left alone.

use std::os::fd::AsFd;

use super::Flow;
use crate::endpoint::{set_socket_buffers, OpenSink, OpenSource, SinkIo, SocketBuffers, SourceIo};
use crate::error::{Error, Result};
use crate::EndpointKind;

/// The smallest and the largest `--socket-buffer`: below a page TCP
/// stalls, above 1 GiB the kernel's int arithmetic overflows (it doubles).
const BOUNDS: (usize, usize) = (4 << 10, 1 << 30);

impl Flow<'_> {
    /// A usage error for a socket buffer outside [`BOUNDS`], before any
    /// endpoint is opened.
    pub(super) fn check_socket_buffer(&self) -> Result<()> {
        match self.socket_buffer {
            Some(bytes) if !(BOUNDS.0..=BOUNDS.1).contains(&bytes) => Err(Error::usage(format!(
                "--socket-buffer {bytes}: between {} and {}",
                crate::format_bytes(BOUNDS.0 as u64),
                crate::format_bytes(BOUNDS.1 as u64)
            ))),
            _ => Ok(()),
        }
    }

    /// Sets the buffers on every TCP end; what the last end read back (a
    /// relay's two ends get the same request).
    pub(super) fn fix_socket_buffers(
        &self,
        source: &OpenSource<'_>,
        sink: &OpenSink<'_>,
    ) -> Result<Option<SocketBuffers>> {
        let Some(bytes) = self.socket_buffer else {
            return Ok(None);
        };
        let mut fixed = None;
        if let (EndpointKind::Tcp, SourceIo::Fd(fd)) = (source.kind, &source.io) {
            fixed = Some(set_socket_buffers(fd.as_fd(), bytes, &source.label)?);
        }
        if let (EndpointKind::Tcp, SinkIo::Fd(fd)) = (sink.kind, &sink.io) {
            fixed = Some(set_socket_buffers(fd.as_fd(), bytes, &sink.label)?);
        }
        if fixed.is_none() {
            return Err(Error::usage(
                "--socket-buffer: neither end of the flow is a TCP socket",
            ));
        }
        Ok(fixed)
    }
}
