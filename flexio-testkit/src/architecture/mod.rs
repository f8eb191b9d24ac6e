//! The workspace's architecture check, one for every crate: the crates
//! point down only (their order read from the manifests, so a new crate
//! needs no edit here), and inside each crate's `src/` no module's
//! children import each other in a circle, at any depth. Paths are read
//! from the source with `super::` resolved from the module it is written
//! in, so `super::super::x` and `crate::a::b` count as what they name.
//! Doc comments count (an intra-doc link is an edge rustdoc follows);
//! plain comments and string literals do not. There are no exemptions.

mod crates;
mod modules;
mod source;

use std::path::{Path, PathBuf};

pub use crates::{layers, members, upward, Member};
pub use modules::circles;
pub use source::{read as paths_named, Named};

/// Why the check could not read the workspace.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A file or folder could not be read.
    Io {
        /// What was done (`read`, `read_dir`).
        operation: &'static str,
        /// On what.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// A manifest is not TOML, or lacks what the check needs.
    Manifest(PathBuf, String),
}

impl Error {
    fn io(operation: &'static str, path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            operation,
            path: path.to_path_buf(),
            source,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io {
                operation,
                path,
                source,
            } => write!(f, "{operation} {}: {source}", path.display()),
            Error::Manifest(path, why) => write!(f, "{}: {why}", path.display()),
        }
    }
}

impl std::error::Error for Error {}

/// Everything in the workspace at `root` that breaks the architecture:
/// crates whose dependencies go round, arrows that point up, circles
/// among sibling modules. Empty when the house is in order.
///
/// # Errors
///
/// When a manifest or a source file cannot be read or parsed.
///
/// # Examples
///
/// ```
/// let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
/// for problem in flexio_testkit::architecture::check(&root).unwrap() {
///     eprintln!("{problem}");
/// }
/// ```
pub fn check(root: &Path) -> Result<Vec<String>, Error> {
    let members = members(root)?;
    let mut problems = match layers(&members) {
        Ok(_) => Vec::new(),
        Err(circle) => circle,
    };
    problems.extend(upward(&members)?);
    for member in &members {
        let src = member.dir.join("src");
        if src.is_dir() {
            problems.extend(
                circles(&src)?
                    .into_iter()
                    .map(|circle| format!("{}: {circle}", member.name)),
            );
        }
    }
    Ok(problems)
}
