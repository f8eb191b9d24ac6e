//! `--access-log`: one line per response in nginx's combined format,
//! plus the mechanism that sent the body and the bytes it sent:
//!
//! ```text
//! 127.0.0.1 - - [10/Oct/2025:13:55:36 +0000] "GET /f HTTP/1.1" 200 4096 "-" "curl/8.5" "sendfile" 4096
//! ```
//!
//! Each worker appends its lines to a buffer of its own and hands the
//! buffer, once per loop turn, to one writer thread through a bounded
//! channel, never waiting: a slow disk or a stalled `stdout` pipe holds
//! the writer thread, not a worker (a per-worker `write` per turn would
//! block the event loop whenever the page cache throttles or the pipe is
//! full). A worker whose buffer the writer cannot take keeps it, up to
//! [`MAX_PENDING`] bytes; past that, lines are dropped and counted, and
//! the count is said when the server ends. Times are UTC.

use std::io::Write;
use std::net::IpAddr;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use super::request::Request;

/// Batches waiting for the writer, over all workers.
const QUEUED_BATCHES: usize = 64;

/// The most bytes of lines one worker keeps while the writer is behind.
pub(crate) const MAX_PENDING: usize = 1 << 20;

/// Where lines go, opened when the server is bound.
pub(crate) struct LogFile(Box<dyn Write + Send>);

impl LogFile {
    /// `-` for standard output, else a file appended to (made 0644).
    pub fn open(path: &Path) -> std::io::Result<LogFile> {
        if path.as_os_str() == "-" {
            return Ok(LogFile(Box::new(std::io::stdout())));
        }
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)?;
        Ok(LogFile(Box::new(file)))
    }

    /// Starts the writer thread; it ends once every sender is dropped.
    pub fn start(self) -> std::io::Result<(SyncSender<Vec<u8>>, JoinHandle<()>)> {
        let (sender, receiver) = sync_channel(QUEUED_BATCHES);
        let thread = std::thread::Builder::new()
            .name("serve-access-log".into())
            .spawn(move || write_batches(self.0, &receiver))?;
        Ok((sender, thread))
    }
}

fn write_batches(mut out: Box<dyn Write + Send>, batches: &Receiver<Vec<u8>>) {
    let mut failed = false;
    for batch in batches {
        if let Err(error) = out.write_all(&batch).and_then(|()| out.flush()) {
            if !failed {
                eprintln!("flexio serve: writing the access log: {error} (logged once)");
            }
            failed = true;
        }
    }
}

/// A worker's lines on their way to the writer.
pub(crate) struct WorkerLog {
    pub lines: Vec<u8>,
    sender: SyncSender<Vec<u8>>,
    dropped: u64,
}

impl WorkerLog {
    pub fn new(sender: SyncSender<Vec<u8>>) -> WorkerLog {
        WorkerLog {
            lines: Vec::new(),
            sender,
            dropped: 0,
        }
    }

    /// Hands the lines to the writer without waiting.
    pub fn flush(&mut self) {
        if self.lines.is_empty() {
            return;
        }
        match self.sender.try_send(std::mem::take(&mut self.lines)) {
            Ok(()) => {}
            Err(TrySendError::Full(lines)) if lines.len() <= MAX_PENDING => self.lines = lines,
            Err(TrySendError::Full(lines)) | Err(TrySendError::Disconnected(lines)) => {
                self.dropped += lines.iter().filter(|&&b| b == b'\n').count() as u64;
            }
        }
    }

    /// Hands the last lines over, waiting if need be (the worker is done).
    pub fn close(mut self) {
        let lines = std::mem::take(&mut self.lines);
        if !lines.is_empty() && self.sender.send(lines).is_err() {
            self.dropped += 1;
        }
        if self.dropped > 0 {
            eprintln!(
                "flexio serve: {} access log lines dropped: the log could not keep up",
                self.dropped
            );
        }
    }
}

/// What one response's line says, filled in as it is sent.
#[derive(Debug)]
pub(crate) struct Entry {
    remote: IpAddr,
    /// The request line, escaped; `-` when none could be read.
    request: String,
    referer: String,
    user_agent: String,
    /// 0 until a response is decided (a client gone first logs 499, as
    /// nginx does).
    pub status: u16,
    /// Where the body starts in the bytes sent before it (the head's end).
    pub head_length: usize,
    /// Body bytes sent, from those bytes and from the body after them.
    pub body_bytes: u64,
    /// The mechanism of the body after the head, if one.
    pub mechanism: Option<&'static str>,
    /// Bytes it sent.
    pub mechanism_bytes: u64,
}

impl Entry {
    /// An entry for `request` from `remote`.
    pub fn new(remote: IpAddr, request: &Request) -> Entry {
        let version = if request.minor == 0 { "1.0" } else { "1.1" };
        let line = format!("{} {} HTTP/{version}", request.method, request.target);
        let header = |name| request.header(name).map_or("-".to_string(), escape);
        Entry {
            remote,
            request: escape(&line),
            referer: header("referer"),
            user_agent: header("user-agent"),
            status: 0,
            head_length: 0,
            body_bytes: 0,
            mechanism: None,
            mechanism_bytes: 0,
        }
    }

    /// An entry for a head that could not be parsed: its first line as
    /// it came (at most 1 KiB of it).
    pub fn unparsed(remote: IpAddr, head: &[u8]) -> Entry {
        let first = head
            .split(|&b| b == b'\r' || b == b'\n')
            .next()
            .unwrap_or_default();
        let first = &first[..first.len().min(1024)];
        let mut entry = Entry::new(
            remote,
            &Request {
                method: String::new(),
                target: String::new(),
                minor: 1,
                headers: Vec::new(),
            },
        );
        entry.request = if first.is_empty() {
            "-".into()
        } else {
            escape(&String::from_utf8_lossy(first))
        };
        entry
    }

    /// Takes the bytes sent before the body: the status and where the
    /// head ends.
    pub fn response(&mut self, out: &[u8]) {
        self.status = out
            .get(9..12)
            .and_then(|code| std::str::from_utf8(code).ok())
            .and_then(|code| code.parse().ok())
            .unwrap_or(0);
        self.head_length = out
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(out.len(), |at| at + 4);
    }

    /// Counts `from..to` of the bytes before the body as sent.
    pub fn sent_out(&mut self, from: usize, to: usize) {
        self.body_bytes += to.saturating_sub(from.max(self.head_length)) as u64;
    }

    /// Counts `bytes` of the body after the head as sent.
    pub fn sent_body(&mut self, bytes: u64) {
        self.body_bytes += bytes;
        self.mechanism_bytes += bytes;
    }

    /// Appends its line to `lines`, at `now`.
    pub fn write(&self, lines: &mut Vec<u8>, now: SystemTime) {
        let status = if self.status == 0 { 499 } else { self.status };
        let _ = writeln!(
            lines,
            "{} - - [{}] \"{}\" {status} {} \"{}\" \"{}\" \"{}\" {}",
            self.remote,
            time_local(now),
            self.request,
            self.body_bytes,
            self.referer,
            self.user_agent,
            self.mechanism.unwrap_or("-"),
            self.mechanism_bytes
        );
    }
}

/// As nginx escapes a logged string: `"`, `\` and bytes outside printable
/// ASCII as `\xHH`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte == b'"' || byte == b'\\' || !(0x20..0x7f).contains(&byte) {
            out.push_str(&format!("\\x{byte:02X}"));
        } else {
            out.push(byte as char);
        }
    }
    out
}

/// `10/Oct/2000:13:55:36 +0000` (nginx's `$time_local`, in UTC).
fn time_local(now: SystemTime) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let seconds = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, second) = ((seconds / 86_400) as i64, seconds % 86_400);
    // Days to a civil date (Howard Hinnant's `civil_from_days`).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{day:02}/{}/{year}:{:02}:{:02}:{:02} +0000",
        MONTHS[(month - 1) as usize],
        second / 3600,
        second / 60 % 60,
        second % 60
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn times_are_nginx_shaped_in_utc() {
        let at = |s| time_local(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "01/Jan/1970:00:00:00 +0000");
        assert_eq!(at(971_186_136), "10/Oct/2000:13:55:36 +0000");
        assert_eq!(at(951_782_400), "29/Feb/2000:00:00:00 +0000");
        assert_eq!(at(4_133_980_799), "31/Dec/2100:23:59:59 +0000");
    }

    #[test]
    fn quotes_backslashes_and_controls_are_escaped() {
        assert_eq!(escape("a\"b\\c\x01d é"), "a\\x22b\\x5Cc\\x01d \\xC3\\xA9");
    }
}
