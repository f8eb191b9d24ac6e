//! The command line's one error type: every library's error converts into
//! it, the command line's own failures (a bad flag value, a file of its
//! own that cannot be written) are its variants, and `main` alone prints
//! it and turns it into the exit status.

use std::process::ExitCode;

/// What a command can fail with: the command line's own failures, or the
/// error of whichever library it called.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The work was described wrongly: a flag's value, flags that do not
    /// go together, an operand of the wrong kind.
    #[error("{0}")]
    Usage(String),
    /// An operation of the command line's own (its report files, a token
    /// file, a man page) failed on `endpoint`, at `offset` when known.
    #[error("{op} {endpoint}{}: {source}", offset.map(|o| format!(" at byte {o}")).unwrap_or_default())]
    Io {
        /// What was done: `read`, `write`, `mkdir`...
        op: &'static str,
        /// On what: a path, or what stands for one.
        endpoint: String,
        /// The byte where it failed, when it matters.
        offset: Option<u64>,
        /// The system's error.
        source: std::io::Error,
    },
    /// Moving bytes, planning, profiles, the bench (the engine's errors).
    #[error(transparent)]
    Flexio(#[from] flexio::Error),
    /// Serving, fetching and uploading over HTTP.
    #[error(transparent)]
    Net(#[from] flexio_net::Error),
    /// The block cache, its traces and its simulator.
    #[error(transparent)]
    Cache(#[from] flexio_cache::Error),
    /// A scenario of `flexio bench` failed, or was stopped by a signal.
    #[error("bench --scenario {scenario}: {source}")]
    Bench {
        /// The scenario, as `--scenario` names it.
        scenario: &'static str,
        /// What the bench said.
        source: flexio_bench::Error,
    },
    /// Work that failed in part, already said in full (which entries of
    /// a tree copy failed, and why).
    #[error("{0}")]
    Failed(String),
}

/// A mechanism's name that is none (`--via`), as the engine words it.
impl From<flexio::UnknownMechanism> for Error {
    fn from(error: flexio::UnknownMechanism) -> Self {
        Error::Flexio(error.into())
    }
}

/// `Result` with the command line's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An [`Error::Io`] on the file or directory `path`, at no byte.
    pub fn io(op: &'static str, path: &std::path::Path, source: std::io::Error) -> Error {
        Error::Io {
            op,
            endpoint: path.display().to_string(),
            offset: None,
            source,
        }
    }

    /// Whether the work was described wrongly (bad arguments, an
    /// unsupported pair, a file onto itself) rather than failing as it ran.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Usage(_) => true,
            Error::Io { .. } => false,
            Error::Flexio(error) => error.is_usage(),
            Error::Net(error) => error.is_usage(),
            Error::Cache(error) => !matches!(error, flexio_cache::Error::Io { .. }),
            Error::Bench { source, .. } => matches!(source, flexio_bench::Error::Usage(_)),
            Error::Failed(_) => false,
        }
    }

    /// The exit status: 2 for a usage error, 1 for a failure at run time,
    /// as cp and dd.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(if self.is_usage() { 2 } else { 1 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io() -> std::io::Error {
        std::io::Error::from(std::io::ErrorKind::NotFound)
    }

    #[test]
    fn usage_errors_of_every_library_exit_2_and_the_rest_1() {
        let usage: [Error; 6] = [
            Error::Usage("bad".into()),
            Error::Bench {
                scenario: "hosts",
                source: flexio_bench::Error::Usage("9 hosts".into()),
            },
            flexio::Error::Usage("bad".into()).into(),
            flexio_net::Error::Usage("bad".into()).into(),
            flexio_net::Error::Move(flexio::Error::Usage("bad".into())).into(),
            flexio_cache::Error::Usage("bad".into()).into(),
        ];
        for error in &usage {
            assert!(error.is_usage(), "{error}");
            assert_eq!(error.exit_code(), ExitCode::from(2), "{error}");
        }
        let run_time: [Error; 5] = [
            Error::io("write", std::path::Path::new("out/report.md"), io()),
            Error::Bench {
                scenario: "hosts",
                source: flexio_bench::Error::Stopped("stopped by a signal"),
            },
            flexio::Error::Io {
                op: "open",
                endpoint: "a".into(),
                offset: None,
                source: io(),
            }
            .into(),
            flexio_net::Error::Protocol {
                peer: "p".into(),
                message: "m".into(),
            }
            .into(),
            flexio_cache::Error::Io {
                op: "read",
                path: "b".into(),
                offset: Some(4096),
                source: io(),
            }
            .into(),
        ];
        for error in &run_time {
            assert!(!error.is_usage(), "{error}");
            assert_eq!(error.exit_code(), ExitCode::from(1), "{error}");
        }
    }

    #[test]
    fn the_message_is_the_library_s_own() {
        let error: Error = flexio_cache::Error::Io {
            op: "read",
            path: "dev".into(),
            offset: Some(8),
            source: io(),
        }
        .into();
        assert_eq!(error.to_string(), "read dev at byte 8: entity not found");
    }

    #[test]
    fn the_command_line_s_own_errors_read_as_the_engine_s() {
        let ours = Error::Io {
            op: "read",
            endpoint: "token".into(),
            offset: Some(8),
            source: io(),
        };
        let engine = flexio::Error::Io {
            op: "read",
            endpoint: "token".into(),
            offset: Some(8),
            source: io(),
        };
        assert_eq!(ours.to_string(), engine.to_string());
        let path = std::path::Path::new("out");
        assert_eq!(
            Error::io("mkdir", path, io()).to_string(),
            "mkdir out: entity not found"
        );
        assert_eq!(
            Error::Usage("--chunk 0".into()).to_string(),
            flexio::Error::Usage("--chunk 0".into()).to_string()
        );
    }
}
