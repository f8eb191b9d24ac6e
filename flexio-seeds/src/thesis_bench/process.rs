//! The copies as processes: a source file made once, a `flexio copy
//! --json` started under a watchdog, its report's byte count checked
//! against what was sent, and a listener waited for before its peer
//! starts.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use flexio_bench::host_bench::link::listening;
use flexio_bench::peers::Supervised;

use crate::error::{Error, Result};

/// The longest one copy may take before its watchdog kills it.
const DEADLINE: Duration = Duration::from_secs(300);

/// A file of `size` pseudo-random bytes in `dir`, made once and synced
/// (so that a cold run can drop it from the page cache).
pub(super) fn source(dir: &Path, size: u64) -> Result<PathBuf> {
    let path = dir.join(format!("thesis-source-{size}"));
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == size) {
        return Ok(path);
    }
    let mut file = std::fs::File::create(&path).map_err(|e| Error::io("create", &path, e))?;
    let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ size;
    let mut block = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        for word in block.chunks_exact_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            word.copy_from_slice(&state.to_le_bytes());
        }
        let n = left.min(block.len() as u64) as usize;
        file.write_all(&block[..n])
            .map_err(|e| Error::io_at("write", &path, size - left, e))?;
        left -= n as u64;
    }
    file.sync_all().map_err(|e| Error::io("fsync", &path, e))?;
    Ok(path)
}

/// Reads `path` whole, so that it is in the page cache.
pub(super) fn make_warm(path: &Path) -> Result<()> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
    std::io::copy(&mut file, &mut std::io::sink())
        .map(drop)
        .map_err(|e| Error::io("read", path, e))
}

/// A `flexio copy --json` started under a watchdog.
pub(super) struct Started {
    name: String,
    child: Supervised,
}

/// Starts `command` (a `flexio copy … --json`, perhaps behind `ip netns
/// exec`), named `name` in errors.
pub(super) fn start(name: &str, command: &mut Command) -> Result<Started> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = Supervised::spawn(command, DEADLINE).map_err(|source| Error::Spawn {
        operation: "start",
        program: name.to_string(),
        source,
    })?;
    Ok(Started {
        name: name.to_string(),
        child,
    })
}

impl Started {
    /// Waits until the process listens on `port` (in its namespace),
    /// at most ten seconds.
    pub(super) fn wait_listening(&mut self, port: u16) -> Result<()> {
        let pid = self.child.child_mut().id();
        let until = Instant::now() + Duration::from_secs(10);
        while !listening(pid, port) {
            if Instant::now() > until {
                return Err(Error::program(
                    &self.name,
                    format!("not listening on {port} after 10 s"),
                ));
            }
            if let Ok(Some(status)) = self.child.child_mut().try_wait() {
                return Err(Error::program(
                    &self.name,
                    format!("exited with {status} before listening"),
                ));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    }

    /// Waits for the exit; the bytes its report says it moved.
    pub(super) fn finish(self) -> Result<u64> {
        let name = self.name.clone();
        let report = self.finish_report()?;
        report["bytes"]
            .as_u64()
            .ok_or_else(|| Error::program(name, "no byte count in its report"))
    }

    /// Waits for the exit; its JSON report.
    pub(super) fn finish_report(mut self) -> Result<serde_json::Value> {
        let child = self.child.child_mut();
        let mut stdout = String::new();
        let mut stderr = String::new();
        if let Some(mut out) = child.stdout.take() {
            let _ = out.read_to_string(&mut stdout);
        }
        if let Some(mut err) = child.stderr.take() {
            let _ = err.read_to_string(&mut stderr);
        }
        let status = self.child.wait().map_err(|source| Error::Spawn {
            operation: "wait for",
            program: self.name.clone(),
            source,
        })?;
        if !status.success() {
            // A process killed by a signal may have said nothing.
            let said = match stderr.trim() {
                "" => String::new(),
                text => format!(": {text}"),
            };
            return Err(Error::program(
                &self.name,
                format!("exited with {status}{said}"),
            ));
        }
        serde_json::from_str(&stdout).map_err(|e| {
            Error::program(
                &self.name,
                format!("its --json report does not parse ({e})"),
            )
        })
    }
}

/// Fails unless `moved` is `expected`.
pub(super) fn check_bytes(name: &str, moved: u64, expected: u64) -> Result<()> {
    if moved == expected {
        Ok(())
    } else {
        Err(Error::Short {
            what: name.to_string(),
            moved,
            expected,
        })
    }
}

/// Seconds from start to exit of one `flexio copy` of `size` bytes.
pub(super) fn timed(name: &str, command: &mut Command, size: u64) -> Result<f64> {
    let started = Instant::now();
    let moved = start(name, command)?.finish()?;
    let seconds = started.elapsed().as_secs_f64();
    check_bytes(name, moved, size)?;
    Ok(seconds)
}
