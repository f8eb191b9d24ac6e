//! Endpoint addresses as typed on the command line.

use std::fmt;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// An endpoint address: a path, standard input/output, or a socket to
/// connect to or to accept one connection on.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Address {
    /// A regular file or a block device (or a FIFO / character device).
    Path(PathBuf),
    /// `-`: standard input as a source, standard output as a sink.
    Stdio,
    /// `tcp://HOST:PORT`: connect.
    TcpConnect(String),
    /// `tcp-listen://ADDR:PORT`: bind, accept one connection.
    TcpListen(String),
    /// `unix://PATH`: connect.
    UnixConnect(PathBuf),
    /// `unix-listen://PATH`: bind, accept one connection, remove the path.
    UnixListen(PathBuf),
}

impl Address {
    /// Parses an address; anything without a known scheme is a path.
    ///
    /// # Errors
    /// [`Error::Usage`] for an empty address, an unknown `scheme://`, or a
    /// TCP address without a port.
    ///
    /// # Examples
    /// ```
    /// use flexio::Address;
    /// assert_eq!(Address::parse("-").unwrap(), Address::Stdio);
    /// assert_eq!(
    ///     Address::parse("tcp://127.0.0.1:9000").unwrap(),
    ///     Address::TcpConnect("127.0.0.1:9000".into())
    /// );
    /// assert!(Address::parse("ftp://x").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self> {
        if text.is_empty() {
            return Err(Error::usage("empty endpoint address"));
        }
        if text == "-" {
            return Ok(Address::Stdio);
        }
        let Some((scheme, rest)) = text.split_once("://") else {
            return Ok(Address::Path(PathBuf::from(text)));
        };
        if rest.is_empty() {
            return Err(Error::usage(format!(
                "{text:?}: missing address after {scheme}://"
            )));
        }
        let tcp_address = |rest: &str| -> Result<String> {
            match rest.rsplit_once(':') {
                Some((_, port)) if port.parse::<u16>().is_ok() => Ok(rest.to_string()),
                _ => Err(Error::usage(format!(
                    "{text:?}: expected HOST:PORT with a port from 0 to 65535"
                ))),
            }
        };
        match scheme {
            "tcp" => Ok(Address::TcpConnect(tcp_address(rest)?)),
            "tcp-listen" => Ok(Address::TcpListen(tcp_address(rest)?)),
            "unix" => Ok(Address::UnixConnect(PathBuf::from(rest))),
            "unix-listen" => Ok(Address::UnixListen(PathBuf::from(rest))),
            "file" => Ok(Address::Path(PathBuf::from(rest))),
            _ => Err(Error::usage(format!(
                "{text:?}: unknown scheme {scheme:?} (use a path, -, tcp://, tcp-listen://, unix:// or unix-listen://)"
            ))),
        }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Path(path) => write!(f, "{}", path.display()),
            Address::Stdio => f.write_str("-"),
            Address::TcpConnect(a) => write!(f, "tcp://{a}"),
            Address::TcpListen(a) => write!(f, "tcp-listen://{a}"),
            Address::UnixConnect(p) => write!(f, "unix://{}", p.display()),
            Address::UnixListen(p) => write!(f, "unix-listen://{}", p.display()),
        }
    }
}

impl Address {
    /// The kind this address will have once opened, found without opening
    /// it (no connection is made, nothing is bound): for error messages and
    /// plans. A path that does not exist yet is a file (as a sink would be).
    ///
    /// # Examples
    /// ```
    /// use flexio::{Address, EndpointKind};
    /// let kind = Address::parse("tcp://127.0.0.1:9").unwrap().probe_kind(false);
    /// assert_eq!(kind, Some(EndpointKind::Tcp));
    /// ```
    pub fn probe_kind(&self, as_sink: bool) -> Option<super::EndpointKind> {
        use super::EndpointKind;
        use std::os::unix::fs::FileTypeExt;
        let from_type = |file_type: std::fs::FileType| {
            if file_type.is_file() {
                Some(EndpointKind::File)
            } else if file_type.is_block_device() {
                Some(EndpointKind::BlockDevice)
            } else if file_type.is_fifo() {
                Some(EndpointKind::Pipe)
            } else if file_type.is_char_device() {
                Some(EndpointKind::CharDevice)
            } else {
                None
            }
        };
        match self {
            Address::Path(path) => match std::fs::metadata(path) {
                Ok(meta) => from_type(meta.file_type()),
                Err(_) if as_sink => Some(EndpointKind::File),
                Err(_) => None,
            },
            Address::Stdio => {
                let fd = if as_sink {
                    "/proc/self/fd/1"
                } else {
                    "/proc/self/fd/0"
                };
                match std::fs::metadata(fd) {
                    Ok(meta) if meta.file_type().is_socket() => None,
                    Ok(meta) => from_type(meta.file_type()),
                    Err(_) => None,
                }
            }
            Address::TcpConnect(_) | Address::TcpListen(_) => Some(EndpointKind::Tcp),
            Address::UnixConnect(_) | Address::UnixListen(_) => Some(EndpointKind::Unix),
        }
    }
}
