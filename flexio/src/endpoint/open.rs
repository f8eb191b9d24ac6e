//! Opening endpoints and classifying them by `fstat`.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, SeekFrom};
use rustix::net::AddressFamily;

use super::{Address, EndpointKind, FileSink, NewMode, Sink, Source};
use crate::error::{Error, Result};

/// Called with the bound address when a `*-listen://` endpoint is ready to
/// accept, so that a caller can tell its peer where to connect.
pub(crate) type ListenHook<'h> = &'h mut dyn FnMut(&str);

/// An opened source.
pub(crate) struct OpenSource<'a> {
    pub io: SourceIo<'a>,
    pub kind: EndpointKind,
    pub label: String,
    /// The path to open again for `--verify`, when there is one.
    pub path: Option<PathBuf>,
    /// Size in bytes for files, block devices and memory.
    pub size: Option<u64>,
    /// Where a seekable descriptor source starts (stdin redirected from a
    /// file starts at its current position).
    pub base: u64,
    /// Device and inode, for refusing to copy a file onto itself.
    pub identity: Option<Identity>,
    /// Permission bits of a regular-file source.
    pub mode: Option<u32>,
    /// A regular file with fewer blocks than its size — the only kind that
    /// can have holes worth finding with `SEEK_DATA` (cp's test, too).
    pub maybe_sparse: bool,
}

/// An opened sink.
pub(crate) struct OpenSink<'a> {
    pub io: SinkIo<'a>,
    pub kind: EndpointKind,
    pub label: String,
    /// The path to open again for `--verify`, when there is one.
    pub path: Option<PathBuf>,
    /// The most bytes a block device or memory sink can take.
    pub capacity: Option<u64>,
    /// Where writing starts on a seekable sink before `--seek`: the end of
    /// a file opened with `O_APPEND`, where every write lands.
    pub base: u64,
    /// The sink is a file opened with `O_APPEND` (`flexio copy f - >> log`):
    /// every write lands at its end, whatever the offset asked.
    pub appends: bool,
    /// Device and inode of a file or block-device sink already open, to
    /// refuse moving a file onto itself through descriptors.
    pub identity: Option<Identity>,
}

/// The bytes behind an opened source.
pub(crate) enum SourceIo<'a> {
    Fd(OwnedFd),
    Memory(&'a [u8]),
}

/// The bytes behind an opened sink.
pub(crate) enum SinkIo<'a> {
    Fd(OwnedFd),
    /// A new regular file, written beside its destination and renamed over
    /// it at the end.
    Fresh(FileSink),
    Memory(&'a mut [u8]),
    /// A new file after it was renamed into place (or a sink already
    /// finished); read back by path.
    Closed,
}

/// What identifies a file or device: the same identity on both ends means
/// copying something onto itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Identity {
    Inode { dev: u64, ino: u64 },
    Device { rdev: u64 },
}

impl Identity {
    fn of(meta: &std::fs::Metadata) -> Self {
        if meta.file_type().is_block_device() {
            Identity::Device { rdev: meta.rdev() }
        } else {
            Identity::Inode {
                dev: meta.dev(),
                ino: meta.ino(),
            }
        }
    }
}

/// Opens and classifies a source.
pub(crate) fn open_source<'a>(
    source: Source<'a>,
    on_listen: ListenHook<'_>,
) -> Result<OpenSource<'a>> {
    match source {
        Source::Memory(bytes) => Ok(OpenSource {
            io: SourceIo::Memory(bytes),
            kind: EndpointKind::Memory,
            label: "memory".into(),
            path: None,
            size: Some(bytes.len() as u64),
            base: 0,
            identity: None,
            mode: None,
            maybe_sparse: false,
        }),
        Source::Fd(fd, label) => from_fd(fd, label, None),
        Source::Address(Address::Path(path)) => {
            // Opened first and classified by fstat: one stat fewer than
            // asking the path first. Opening a socket's path fails (ENXIO),
            // a directory's succeeds; both are then named for what they are.
            let label = path.display().to_string();
            let file = File::open(&path).map_err(|e| {
                match std::fs::metadata(&path).map(|meta| meta.file_type()) {
                    Ok(kind) if kind.is_socket() => Error::usage(format!(
                        "{label}: is a socket; use unix://{label} to connect to it"
                    )),
                    // cp's words.
                    _ if e.kind() == ErrorKind::NotFound => {
                        Error::io("cannot stat", format!("'{label}'"), None, e)
                    }
                    _ => Error::io("cannot open", format!("'{label}' for reading"), None, e),
                }
            })?;
            from_fd(file.into(), label, Some(path))
        }
        Source::Address(Address::Stdio) => {
            refuse_closed_at_start(0, "stdin")?;
            let fd = rustix::io::fcntl_dupfd_cloexec(rustix::stdio::stdin(), 3)
                .map_err(|e| Error::io("dup", "stdin", None, e))?;
            from_fd(fd, "stdin".into(), None)
        }
        Source::Address(address) => {
            let fd = open_socket(&address, on_listen)?;
            from_fd(fd, address.to_string(), None)
        }
    }
}

/// A standard descriptor closed when the process started (`>&-`) is an
/// error, not the `/dev/null` Rust's runtime put in its place.
fn refuse_closed_at_start(fd: u8, label: &str) -> Result<()> {
    if crate::sys::stdio::closed_at_start(fd) {
        return Err(Error::io(
            "use",
            format!("{label} (closed when flexio started)"),
            None,
            std::io::Error::from_raw_os_error(libc::EBADF),
        ));
    }
    Ok(())
}

/// How to open a sink.
pub(crate) struct SinkOptions {
    /// Write into an existing file instead of replacing it.
    pub in_place: bool,
    /// The source, to refuse writing a file onto itself.
    pub source_identity: Option<Identity>,
    /// The source's name, for that refusal.
    pub source_label: String,
    /// Permission bits for a new regular file.
    pub mode: Option<u32>,
}

/// Opens and classifies a sink.
pub(crate) fn open_sink<'a>(
    sink: Sink<'a>,
    options: &SinkOptions,
    on_listen: ListenHook<'_>,
) -> Result<OpenSink<'a>> {
    match sink {
        Sink::Memory(bytes) => Ok(OpenSink {
            capacity: Some(bytes.len() as u64),
            io: SinkIo::Memory(bytes),
            kind: EndpointKind::Memory,
            label: "memory".into(),
            path: None,
            base: 0,
            appends: false,
            identity: None,
        }),
        Sink::Fd(fd, label) => sink_from_fd(fd, label),
        Sink::Address(Address::Stdio) => {
            refuse_closed_at_start(1, "stdout")?;
            let fd = rustix::io::fcntl_dupfd_cloexec(rustix::stdio::stdout(), 3)
                .map_err(|e| Error::io("dup", "stdout", None, e))?;
            sink_from_fd(fd, "stdout".into())
        }
        Sink::Address(Address::Path(path)) => open_sink_path(path, options),
        Sink::Address(address) => {
            let fd = open_socket(&address, on_listen)?;
            sink_from_fd(fd, address.to_string())
        }
    }
}

/// What stands at a destination name, with a symlink followed as `cp`
/// follows it: the metadata of what it names, and the path to replace
/// (the link's target, so the link itself stays).
pub(crate) struct ExistingDestination {
    /// Of the file (or directory, or device) the name leads to.
    pub meta: std::fs::Metadata,
    /// The name itself, or where its symlink leads.
    pub replace: PathBuf,
    /// Whether the name is a symlink.
    pub through_link: bool,
}

/// Looks at `path` before writing it: `None` when nothing is there; a
/// dangling symlink is an error, as `cp` refuses to write through one
/// ("not writing through dangling symlink"): replacing the link with a
/// file would lose where it pointed.
///
/// # Errors
/// [`Error::Io`] for a dangling symlink or a failed `stat`.
pub(crate) fn existing_destination(path: &Path) -> Result<Option<ExistingDestination>> {
    let label = path.display().to_string();
    // The name itself first: for a new file (the common case) one stat
    // tells that nothing is there; only a symlink is followed after.
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => match std::fs::metadata(path) {
            Ok(meta) => {
                let replace = match meta.is_file() {
                    true => std::fs::canonicalize(path)
                        .map_err(|e| Error::io("resolve", &label, None, e))?,
                    false => path.to_path_buf(),
                };
                Ok(Some(ExistingDestination {
                    meta,
                    replace,
                    through_link: true,
                }))
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Err(Error::io(
                "open",
                format!("{label} (a dangling symlink; not writing through it)"),
                None,
                e,
            )),
            Err(e) => Err(Error::io("stat", &label, None, e)),
        },
        Ok(meta) => Ok(Some(ExistingDestination {
            meta,
            replace: path.to_path_buf(),
            through_link: false,
        })),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("stat", &label, None, e)),
    }
}

fn open_sink_path<'a>(path: PathBuf, options: &SinkOptions) -> Result<OpenSink<'a>> {
    let label = path.display().to_string();
    let existing = existing_destination(&path)?;
    let meta = existing.as_ref().map(|e| e.meta.clone());
    let Some(meta) = meta else {
        if options.in_place {
            return Err(Error::usage(format!(
                "{label}: writing in place needs an existing file"
            )));
        }
        // As open(2) makes a file, and as cp does: the kernel takes the
        // umask off.
        let mode = NewMode::LessUmask(options.mode.map_or(0o666, new_file_mode));
        let file = FileSink::create(&path, mode)?;
        return Ok(fresh(file, label, path));
    };
    if meta.is_dir() {
        return Err(Error::usage(format!(
            "{label}: is a directory (name the destination file)"
        )));
    }
    if !options.in_place && options.source_identity == Some(Identity::of(&meta)) {
        return Err(Error::usage(format!(
            "'{}' and '{label}' are the same file",
            options.source_label
        )));
    }
    let file_type = meta.file_type();
    if meta.is_file() && !options.in_place {
        // Replace the file a symlink points at, as cp does, not the link;
        // and only a file we may write, as cp does: renaming over a
        // read-only file would replace what its owner protected.
        let target = existing.map_or_else(|| path.clone(), |e| e.replace);
        rustix::fs::access(&target, rustix::fs::Access::WRITE_OK)
            .map_err(|e| Error::io("cannot create regular file", format!("'{label}'"), None, e))?;
        // The replacement keeps the destination's own mode (as cp, which
        // writes an existing file in place).
        let file = FileSink::create(&target, NewMode::Exact(meta.mode()))?.replacing();
        keep_owner(&file, &meta);
        return Ok(fresh(file, label, path));
    }
    if file_type.is_socket() {
        return Err(Error::usage(format!(
            "{label}: is a socket; use unix://{label} to connect to it"
        )));
    }
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| Error::io("open", &label, None, e))?;
    let mut opened = sink_from_fd(file.into(), label)?;
    opened.path = Some(path);
    opened.base = 0;
    Ok(opened)
}

/// Gives the replacement the destination's owner and group, as cp's
/// writing in place keeps them: root replacing a user's file must not
/// leave a root-owned file the user can no longer write. Where the kernel
/// does not let us (an unprivileged user, someone else's file), the new
/// file is ours, as any file we create.
fn keep_owner(file: &FileSink, meta: &std::fs::Metadata) {
    use rustix::fs::{Gid, Uid};
    let _ = rustix::fs::fchown(
        file.fd(),
        Some(Uid::from_raw(meta.uid())),
        Some(Gid::from_raw(meta.gid())),
    );
}

/// The mode of a new file copied from a source with `source_mode`, before
/// the umask: cp's rule when ownership is not kept — the permission bits,
/// without set-user-ID, set-group-ID and sticky, which belong to the
/// source's owner (a root copy of a `nobody` setuid file must not be a
/// root setuid file).
fn new_file_mode(source_mode: u32) -> u32 {
    source_mode & 0o777
}

fn fresh<'a>(file: FileSink, label: String, path: PathBuf) -> OpenSink<'a> {
    OpenSink {
        io: SinkIo::Fresh(file),
        kind: EndpointKind::File,
        label,
        path: Some(path),
        capacity: None,
        base: 0,
        appends: false,
        identity: None,
    }
}

fn sink_from_fd<'a>(fd: OwnedFd, label: String) -> Result<OpenSink<'a>> {
    let opened = from_fd(fd, label, None)?;
    let capacity = match opened.kind {
        EndpointKind::BlockDevice => opened.size,
        _ => None,
    };
    let SourceIo::Fd(fd) = opened.io else {
        unreachable!("from_fd returns a descriptor")
    };
    let appends = opened.kind == EndpointKind::File
        && rustix::fs::fcntl_getfl(&fd)
            .map_err(|e| Error::io("fcntl(F_GETFL)", &opened.label, None, e))?
            .contains(rustix::fs::OFlags::APPEND);
    let base = match (appends, opened.size) {
        (true, Some(end)) => end,
        _ => opened.base,
    };
    Ok(OpenSink {
        io: SinkIo::Fd(fd),
        kind: opened.kind,
        label: opened.label,
        path: opened.path,
        capacity,
        base,
        appends,
        identity: opened.identity,
    })
}

/// What an open descriptor is, by `fstat` (and `getsockname` for sockets).
pub(crate) fn classify_fd(fd: BorrowedFd<'_>, label: &str) -> Result<EndpointKind> {
    let stat = rustix::fs::fstat(fd).map_err(|e| Error::io("fstat", label, None, e))?;
    kind_of(fd, &stat, label)
}

fn kind_of(fd: BorrowedFd<'_>, stat: &rustix::fs::Stat, label: &str) -> Result<EndpointKind> {
    let file_type = FileType::from_raw_mode(stat.st_mode);
    Ok(match file_type {
        FileType::RegularFile => EndpointKind::File,
        FileType::BlockDevice => EndpointKind::BlockDevice,
        FileType::Fifo => EndpointKind::Pipe,
        FileType::CharacterDevice => EndpointKind::CharDevice,
        FileType::Socket => {
            let address = rustix::net::getsockname(fd)
                .map_err(|e| Error::io("getsockname", label, None, e))?;
            match address.address_family() {
                AddressFamily::UNIX => EndpointKind::Unix,
                AddressFamily::INET | AddressFamily::INET6 => EndpointKind::Tcp,
                other => {
                    return Err(Error::usage(format!(
                        "{label}: unsupported socket family {other:?}"
                    )))
                }
            }
        }
        FileType::Directory => {
            return Err(Error::usage(format!(
                "{label}: is a directory (flexio copy moves one file; name a file)"
            )));
        }
        _ => return Err(Error::usage(format!("{label}: unsupported file type"))),
    })
}

/// Classifies an open descriptor by `fstat` (and `getsockname` for sockets).
fn from_fd<'a>(fd: OwnedFd, label: String, path: Option<PathBuf>) -> Result<OpenSource<'a>> {
    let stat = rustix::fs::fstat(&fd).map_err(|e| Error::io("fstat", &label, None, e))?;
    let kind = kind_of(fd.as_fd(), &stat, &label)?;
    let (size, base) = match kind {
        EndpointKind::File => {
            // A file this flow opened by its path starts at 0; a descriptor
            // handed in (stdin redirected from a file) where it stands.
            let position = match path {
                Some(_) => 0,
                None => rustix::fs::seek(&fd, SeekFrom::Current(0)).unwrap_or(0),
            };
            let size = size_is_trusted(&fd, stat.st_size).then_some(stat.st_size as u64);
            (size, position)
        }
        EndpointKind::BlockDevice => {
            let size = rustix::fs::seek(&fd, SeekFrom::End(0))
                .map_err(|e| Error::io("seek", &label, None, e))?;
            (Some(size), 0)
        }
        _ => (None, 0),
    };
    let identity = match kind {
        EndpointKind::File => Some(Identity::Inode {
            dev: stat.st_dev,
            ino: stat.st_ino,
        }),
        EndpointKind::BlockDevice => Some(Identity::Device { rdev: stat.st_rdev }),
        _ => None,
    };
    let mode = (kind == EndpointKind::File).then_some(stat.st_mode & 0o7777);
    let maybe_sparse = kind == EndpointKind::File && (stat.st_blocks as i64) * 512 < stat.st_size;
    Ok(OpenSource {
        io: SourceIo::Fd(fd),
        kind,
        label,
        path,
        size,
        base,
        identity,
        mode,
        maybe_sparse,
    })
}

/// Whether a regular file's `st_size` says how many bytes reading it
/// gives. Not on the pseudo file systems whose files are made as they are
/// read (`/proc/cpuinfo` says 0 bytes, a sysfs attribute 4096), nor when
/// it is 0 (a generated file elsewhere): such a file is read to its end,
/// as a stream.
fn size_is_trusted(fd: &OwnedFd, st_size: i64) -> bool {
    /// `f_type` of procfs, sysfs, debugfs, tracefs, securityfs, configfs,
    /// cgroup v1 and v2, pstore, efivarfs, bpf (linux/magic.h).
    const GENERATED: [i64; 11] = [
        0x9fa0,
        0x6265_6572,
        0x6462_6720,
        0x7472_6163,
        0x7363_6673,
        0x6265_6570,
        0x0027_e0eb,
        0x6367_7270,
        0x6165_676c,
        0xde5e_81e4,
        0xcafe_4a11,
    ];
    if st_size == 0 {
        return false;
    }
    match rustix::fs::fstatfs(fd) {
        Ok(fs) => !GENERATED.contains(&{ fs.f_type }),
        Err(_) => true,
    }
}

/// The process umask, read from `/proc/self/status` once (changing it to
/// read it would race with other threads creating files; flexio never
/// changes it).
pub(crate) fn process_umask() -> u32 {
    static UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *UMASK.get_or_init(read_umask)
}

/// The umask from `/proc/self/status` (setting it to read it back would
/// race with other threads creating files). Its second line, so one short
/// read finds it: three system calls, not a whole file read as it grows.
fn read_umask() -> u32 {
    use std::io::Read;
    let mut head = [0u8; 512];
    let length = File::open("/proc/self/status")
        .and_then(|mut status| status.read(&mut head))
        .unwrap_or(0);
    String::from_utf8_lossy(&head[..length])
        .lines()
        .find_map(|line| line.strip_prefix("Umask:"))
        .and_then(|value| u32::from_str_radix(value.trim(), 8).ok())
        .unwrap_or(0o022)
}

/// Connects, or binds and accepts exactly one connection.
fn open_socket(address: &Address, on_listen: ListenHook<'_>) -> Result<OwnedFd> {
    let label = address.to_string();
    match address {
        Address::TcpConnect(target) => {
            let stream =
                TcpStream::connect(target).map_err(|e| Error::io("connect", &label, None, e))?;
            Ok(stream.into())
        }
        Address::TcpListen(bind) => {
            let listener =
                TcpListener::bind(bind).map_err(|e| Error::io("bind", &label, None, e))?;
            let local = listener
                .local_addr()
                .map_err(|e| Error::io("getsockname", &label, None, e))?;
            on_listen(&format!("tcp://{local}"));
            let (stream, _) = listener
                .accept()
                .map_err(|e| Error::io("accept", &label, None, e))?;
            Ok(stream.into())
        }
        Address::UnixConnect(path) => {
            let stream =
                UnixStream::connect(path).map_err(|e| Error::io("connect", &label, None, e))?;
            Ok(stream.into())
        }
        Address::UnixListen(path) => {
            // Registered, so that a signal while waiting removes it too.
            let (listener, socket_file) =
                crate::cleanup::create(path, |path| UnixListener::bind(path))
                    .map_err(|e| Error::io("bind", &label, None, e))?;
            on_listen(&format!("unix://{}", path.display()));
            let accepted = listener.accept();
            // The path only served the rendezvous; do not leave it behind.
            drop(socket_file);
            let (stream, _) = accepted.map_err(|e| Error::io("accept", &label, None, e))?;
            Ok(stream.into())
        }
        Address::Path(_) | Address::Stdio => unreachable!("not a socket address"),
    }
}
