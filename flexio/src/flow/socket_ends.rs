//! `Flow::socket_buffer` on the opened ends: each TCP end of the flow
//! gets the fixed buffers; other kinds are left alone.

use std::os::fd::AsFd;

use super::Flow;
use crate::endpoint::{
    set_socket_buffers, Address, OpenSink, OpenSource, Sink, SinkIo, SocketBuffers, Source,
    SourceIo,
};
use crate::error::{Error, Result};
use crate::EndpointKind;

/// The smallest and the largest `--socket-buffer`: below a page TCP
/// stalls, above 1 GiB the kernel's int arithmetic overflows (it doubles).
const BOUNDS: (usize, usize) = (4 << 10, 1 << 30);

impl Flow<'_> {
    /// A usage error for a socket buffer outside [`BOUNDS`], or on a flow
    /// neither end of which can be TCP, before any endpoint is opened (so
    /// that no peer's connection is taken for a flow that cannot run).
    pub(super) fn check_socket_buffer(&self) -> Result<()> {
        let Some(bytes) = self.socket_buffer else {
            return Ok(());
        };
        if !(BOUNDS.0..=BOUNDS.1).contains(&bytes) {
            return Err(Error::usage(format!(
                "--socket-buffer {bytes}: between {} and {}",
                crate::format_bytes(BOUNDS.0 as u64),
                crate::format_bytes(BOUNDS.1 as u64)
            )));
        }
        let source = match &self.source {
            Source::Address(address) => may_be_tcp(address),
            Source::Fd(..) => true,
            _ => false,
        };
        let sink = match &self.sink {
            Sink::Address(address) => may_be_tcp(address),
            Sink::Fd(..) => true,
            _ => false,
        };
        if !source && !sink {
            return Err(neither_end());
        }
        Ok(())
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
            return Err(neither_end());
        }
        Ok(fixed)
    }
}

/// Whether an address may turn out to be a TCP socket once open (stdin
/// and stdout may be one).
fn may_be_tcp(address: &Address) -> bool {
    matches!(
        address,
        Address::TcpConnect(_) | Address::TcpListen(_) | Address::Stdio
    )
}

fn neither_end() -> Error {
    Error::usage("--socket-buffer: neither end of the flow is a TCP socket")
}
