//! What a client connection carries bytes over: the socket itself
//! (`http://`, where bodies are spliced in the kernel), or a rustls session
//! on it (`https://`, where every body byte passes through user space to be
//! encrypted or decrypted). Both read and write as `std::io` streams; only
//! the plain one lends its descriptor to the [`flexio::range::Mover`].

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};

use crate::head::{response_complete, MAX_HEAD};

/// A connection's byte stream.
pub(crate) enum Stream {
    /// The socket: bodies move by splice.
    Plain(TcpStream),
    /// A TLS session on the socket, with plaintext read past a response
    /// head kept for the body that follows.
    Tls {
        session: Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>,
        ahead: Vec<u8>,
    },
}

/// How a response head ended.
pub(crate) enum HeadEnd {
    /// Whole: the head's bytes.
    Complete(Vec<u8>),
    /// The server closed after these bytes.
    Closed(usize),
    /// Over [`MAX_HEAD`] bytes, or more header lines than allowed.
    TooLarge,
    /// Not HTTP.
    Malformed(String),
}

impl Stream {
    /// The socket under the stream.
    pub(crate) fn socket(&self) -> &TcpStream {
        match self {
            Stream::Plain(socket) => socket,
            Stream::Tls { session, .. } => &session.sock,
        }
    }

    /// The descriptor bodies can be spliced to or from: only a plain
    /// socket's, since a TLS session's bytes on the wire are ciphertext.
    pub(crate) fn plain_fd(&self) -> Option<BorrowedFd<'_>> {
        match self {
            Stream::Plain(socket) => Some(socket.as_fd()),
            Stream::Tls { .. } => None,
        }
    }

    /// Reads a response head from a TLS session: plaintext in pieces,
    /// what follows the head kept for the body. The socket's read timeout
    /// bounds each wait.
    pub(crate) fn read_tls_head(&mut self) -> std::io::Result<HeadEnd> {
        let mut head = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            let n = self.read(&mut buffer)?;
            if n == 0 {
                return Ok(HeadEnd::Closed(head.len()));
            }
            head.extend_from_slice(&buffer[..n]);
            match response_complete(&head) {
                Ok(Some(length)) => {
                    let rest = head.split_off(length);
                    if let Stream::Tls { ahead, .. } = self {
                        ahead.splice(0..0, rest);
                    }
                    return Ok(HeadEnd::Complete(head));
                }
                Ok(None) if head.len() >= MAX_HEAD => return Ok(HeadEnd::TooLarge),
                Ok(None) => {}
                Err(httparse::Error::TooManyHeaders) => return Ok(HeadEnd::TooLarge),
                Err(error) => return Ok(HeadEnd::Malformed(error.to_string())),
            }
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(socket) => socket.read(buffer),
            Stream::Tls { session, ahead } => {
                if ahead.is_empty() {
                    return match session.read(buffer) {
                        // A server that closes without close_notify after
                        // a whole answer has ended the stream all the same;
                        // lengths, not the close, say whether a body was
                        // whole.
                        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(0),
                        read => read,
                    };
                }
                let n = buffer.len().min(ahead.len());
                buffer[..n].copy_from_slice(&ahead[..n]);
                ahead.drain(..n);
                Ok(n)
            }
        }
    }
}

impl Write for Stream {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(socket) => socket.write(bytes),
            Stream::Tls { session, .. } => session.write(bytes),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(socket) => socket.flush(),
            Stream::Tls { session, .. } => session.flush(),
        }
    }
}
