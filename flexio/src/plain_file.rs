//! The files flexio itself reads and writes besides the endpoints of a
//! copy: the profile, the bench's results, report and charts. They are
//! regular files or nothing: a path naming a device, a FIFO, a socket or a
//! directory is a mistake (`FLEXIO_PROFILE=/dev/zero`, `profile export
//! /dev/full`), and flexio says so instead of replacing the node with a
//! regular file, reading an endless stream into memory, or waiting for a
//! FIFO's writer.

use std::fs::{self, Metadata, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What kind of node a path is, in words, for refusals.
fn kind_of(metadata: &Metadata) -> &'static str {
    let file_type = metadata.file_type();
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

fn refusal(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what)
}

/// The regular file `path` names, following symbolic links (a profile kept
/// in a dotfiles repository is often a link), or where a new one goes when
/// `path` does not exist; an error for anything else.
fn regular_or_absent(path: &Path) -> io::Result<(PathBuf, Option<Metadata>)> {
    let link = match fs::symlink_metadata(path) {
        Ok(link) => link,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Ok((path.to_path_buf(), None))
        }
        Err(error) => return Err(error),
    };
    if link.file_type().is_file() {
        return Ok((path.to_path_buf(), Some(link)));
    }
    if !link.file_type().is_symlink() {
        return Err(refusal(format!(
            "is {}, not a regular file; flexio replaces only regular files",
            kind_of(&link)
        )));
    }
    match fs::metadata(path) {
        Ok(target) if target.file_type().is_file() => Ok((fs::canonicalize(path)?, Some(target))),
        Ok(target) => Err(refusal(format!(
            "is a symbolic link to {}, not to a regular file; flexio replaces only regular files",
            kind_of(&target)
        ))),
        // As `cp` does: no writing through a dangling link, which would
        // create a file wherever the link points.
        Err(error) if error.kind() == io::ErrorKind::NotFound => Err(refusal(
            "is a dangling symbolic link; flexio does not write through it".to_string(),
        )),
        Err(error) => Err(error),
    }
}

/// Whether [`write_file_replacing_regular`] would write `path`: it is a
/// regular file, a symbolic link to one, or absent. For checking before a
/// long run (`flexio tune` measures for a minute before it writes the
/// profile).
///
/// # Errors
/// As [`write_file_replacing_regular`] refuses: [`io::ErrorKind::InvalidInput`]
/// saying what `path` is; `lstat`/`stat` errors other than `NotFound`.
///
/// # Examples
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// assert!(flexio::check_file_replaceable(&dir.path().join("new.toml")).is_ok());
/// assert!(flexio::check_file_replaceable(dir.path()).is_err());
/// ```
pub fn check_file_replaceable(path: &Path) -> io::Result<()> {
    regular_or_absent(path).map(|_| ())
}

/// Writes `bytes` as the whole content of `path`, atomically: a temporary
/// file beside it, fsynced, then renamed over it. `path` must be a regular
/// file, a symbolic link to one (the target is replaced, the link kept), or
/// absent; anything else (a device, a FIFO, a socket, a directory, a
/// dangling link) is refused and left as it is. A replaced file keeps its
/// permission bits and, where the caller may give it away (root), its
/// owner and group; a new one gets 0666 less the umask, as `fs::write`
/// gives. The directory must exist.
///
/// Between the check and the rename another process with write access to
/// the directory could put a device in the file's place; the rename would
/// then replace that entry (never write into the device). Such a process
/// could as well remove the device itself.
///
/// # Errors
/// [`io::ErrorKind::InvalidInput`] when `path` is not a regular file or
/// absent (the message says what it is); the errors of creating, writing,
/// syncing or renaming the temporary file. Messages do not repeat `path`:
/// callers name it.
///
/// # Examples
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("report.md");
/// flexio::write_file_replacing_regular(&path, b"# one\n").unwrap();
/// flexio::write_file_replacing_regular(&path, b"# two\n").unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"# two\n");
/// let error = flexio::write_file_replacing_regular(dir.path(), b"x").unwrap_err();
/// assert!(error.to_string().contains("is a directory"));
/// ```
pub fn write_file_replacing_regular(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (target, existing) = regular_or_absent(path)?;
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map_or_else(|| "flexio".into(), |n| n.to_string_lossy().into_owned());
    // 0666 through open(2), so the umask applies as it does to a new file.
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    if let Some(existing) = &existing {
        // `sudo flexio tune` must not leave a user's profile owned by
        // root. Only root may give a file away; others keep their own.
        let owner = (Some(existing.uid()), Some(existing.gid()));
        match std::os::unix::fs::fchown(temp.as_file(), owner.0, owner.1) {
            Err(error) if error.kind() != io::ErrorKind::PermissionDenied => return Err(error),
            _ => {}
        }
        let mode = existing.permissions().mode() & 0o777;
        temp.as_file()
            .set_permissions(Permissions::from_mode(mode))?;
    }
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

/// Reads the whole of a small regular file, at most `max_bytes`, without
/// ever blocking on or streaming from anything else: the path is checked
/// with `stat` first (a device is never opened), then opened non-blocking
/// (a FIFO put in its place meanwhile does not wait for a writer) and
/// checked again with `fstat` on what was opened. Symbolic links to regular
/// files are followed.
///
/// # Errors
/// [`io::ErrorKind::InvalidInput`] when `path` is not a regular file,
/// [`io::ErrorKind::FileTooLarge`] when it holds more than `max_bytes`; the
/// errors of `stat`, `open` and `read` (`NotFound` for a missing file).
/// Messages do not repeat `path`: callers name it.
///
/// # Examples
/// ```
/// use std::path::Path;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("profile.toml");
/// std::fs::write(&path, "format_version = 1\n").unwrap();
/// assert_eq!(flexio::read_regular_file_capped(&path, 1 << 20).unwrap().len(), 19);
/// assert!(flexio::read_regular_file_capped(&path, 8).is_err());
/// assert!(flexio::read_regular_file_capped(Path::new("/dev/zero"), 1 << 20).is_err());
/// ```
pub fn read_regular_file_capped(path: &Path, max_bytes: u64) -> io::Result<Vec<u8>> {
    let check = |metadata: &Metadata| {
        if metadata.file_type().is_file() {
            Ok(())
        } else {
            Err(refusal(format!(
                "is {}, not a regular file",
                kind_of(metadata)
            )))
        }
    };
    check(&fs::metadata(path)?)?;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let metadata = file.metadata()?;
    check(&metadata)?;
    let too_large = || {
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "holds more than {}, more than such a file ever should",
                crate::format_bytes(max_bytes)
            ),
        )
    };
    if metadata.len() > max_bytes {
        return Err(too_large());
    }
    // One byte past the cap tells a file that grew since `fstat`.
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_file_keeps_its_mode_and_a_link_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.toml");
        fs::write(&target, "old").unwrap();
        fs::set_permissions(&target, Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_file_replacing_regular(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&target).unwrap(), b"new");
        assert_eq!(
            fs::metadata(&target).unwrap().permissions().mode() & 0o777,
            0o640
        );
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 2, "no temporary file is left");
    }

    #[test]
    fn a_file_replaced_by_root_keeps_its_owner() {
        if !rustix::process::geteuid().is_root() {
            let reason = "skipped: giving a file to another user needs root";
            assert!(
                std::env::var("FLEXIO_TEST_PRIVILEGED").as_deref() != Ok("1"),
                "{reason}, and FLEXIO_TEST_PRIVILEGED=1 forbids skipping"
            );
            eprintln!("{reason}");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile.toml");
        fs::write(&path, "old").unwrap();
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        write_file_replacing_regular(&path, b"new").unwrap();
        let metadata = fs::metadata(&path).unwrap();
        assert_eq!((metadata.uid(), metadata.gid()), (65534, 65534));
        assert_eq!(fs::read(&path).unwrap(), b"new");
    }

    #[test]
    fn directories_fifos_and_dangling_links_are_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        for (path, says) in [
            (dir.path().to_path_buf(), "a directory"),
            (fifo.clone(), "a FIFO"),
            (dangling.clone(), "dangling"),
        ] {
            let error = write_file_replacing_regular(&path, b"x").unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
            assert!(error.to_string().contains(says), "{error}");
        }
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(!dir.path().join("nowhere").exists());
        let error = read_regular_file_capped(&fifo, 1024).unwrap_err();
        assert!(error.to_string().contains("a FIFO"), "{error}");
    }

    #[test]
    fn reading_stops_at_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        fs::write(&path, vec![b'#'; 4097]).unwrap();
        assert_eq!(read_regular_file_capped(&path, 4097).unwrap().len(), 4097);
        let error = read_regular_file_capped(&path, 4096).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::FileTooLarge);
    }
}
