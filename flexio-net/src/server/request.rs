//! A parsed request head, and the response heads the server writes.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::SystemTime;

use crate::head::MAX_HEADERS;

/// A request head, parsed by `httparse` and copied out of the buffer.
#[derive(Debug)]
pub(crate) struct Request {
    pub method: String,
    pub target: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// Parses a whole head (as [`crate::head::step`] left it).
    pub fn parse(head: &[u8]) -> Result<Request, String> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(head) {
            Ok(httparse::Status::Complete(_)) => {}
            Ok(httparse::Status::Partial) => return Err("incomplete request head".into()),
            Err(error) => return Err(error.to_string()),
        }
        let request = Request {
            method: request.method.unwrap_or_default().to_string(),
            target: origin_form(request.path.unwrap_or_default()),
            minor: request.version.unwrap_or(1),
            headers: crate::head::owned_headers(request.headers),
        };
        request.check_framing()?;
        Ok(request)
    }

    /// Refuses a head whose framing two readers could take differently —
    /// the shapes of request smuggling (RFC 9112 §3.2, §6.1, §6.3): an
    /// HTTP/1.1 request without `Host`, any request with two, a `Host`
    /// that is not an authority, more than one `Content-Length` or one
    /// that is not a number, `Content-Length` beside `Transfer-Encoding`,
    /// and `Transfer-Encoding` in HTTP/1.0. The caller answers 400 and
    /// closes, so nothing after the head is read as a request.
    fn check_framing(&self) -> Result<(), String> {
        let count = |name: &str| self.headers.iter().filter(|(n, _)| n == name).count();
        match count("host") {
            0 if self.minor == 1 => return Err("an HTTP/1.1 request needs a Host header".into()),
            0 | 1 => {}
            _ => return Err("more than one Host header".into()),
        }
        if let Some(host) = self.header("host")
            && !is_authority(host.trim())
        {
            return Err(format!("Host {host:?} is not a host[:port]"));
        }
        let lengths = count("content-length");
        if lengths > 1 {
            return Err("more than one Content-Length header".into());
        }
        if let Some(length) = self.header("content-length") {
            let length = length.trim();
            if length.is_empty()
                || !length.bytes().all(|b| b.is_ascii_digit())
                || length.parse::<u64>().is_err()
            {
                return Err(format!(
                    "Content-Length {length:?} is not a number of bytes"
                ));
            }
        }
        if count("transfer-encoding") > 0 {
            if lengths > 0 {
                return Err("both Content-Length and Transfer-Encoding".into());
            }
            if self.minor == 0 {
                return Err("Transfer-Encoding in an HTTP/1.0 request".into());
            }
        }
        Ok(())
    }

    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the body is chunked: `Transfer-Encoding` (over all its
    /// lines) is `chunked` alone. `Err` holds the status and why for any
    /// other: 400 when `chunked` is not the last coding (the body's end
    /// cannot be found; RFC 9112 §6.3), 501 for a coding this server does
    /// not decode.
    pub fn chunked(&self) -> Result<bool, (u16, String)> {
        let codings: Vec<String> = self
            .headers
            .iter()
            .filter(|(n, _)| n == "transfer-encoding")
            .flat_map(|(_, v)| v.split(','))
            .map(|coding| coding.trim().to_ascii_lowercase())
            .collect();
        match codings.as_slice() {
            [] => Ok(false),
            [only] if only == "chunked" => Ok(true),
            [.., last] if last != "chunked" => Err((
                400,
                format!("Transfer-Encoding {codings:?} does not end with chunked"),
            )),
            _ => Err((
                501,
                format!("Transfer-Encoding {codings:?}: only chunked is decoded"),
            )),
        }
    }

    /// Whether the connection may carry another request after this one:
    /// HTTP/1.1 unless `Connection: close`; HTTP/1.0 never.
    pub fn keeps_alive(&self) -> bool {
        let close = self.headers.iter().any(|(n, v)| {
            n == "connection" && v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close"))
        });
        self.minor == 1 && !close
    }

    /// Whether a body follows the head (which this server does not read).
    pub fn has_body(&self) -> bool {
        self.headers
            .iter()
            .any(|(n, v)| (n == "content-length" && v.trim() != "0") || n == "transfer-encoding")
    }
}

/// The origin form (`/path?query`) of a request target: a target in
/// absolute form (`http://host/path`), which RFC 9112 §3.2.2 says a server
/// must accept, loses its scheme and authority; other forms are kept as
/// they came (and refused later if they are not paths).
fn origin_form(target: &str) -> String {
    let scheme_end = ["http://", "https://"]
        .iter()
        .find(|scheme| {
            target
                .get(..scheme.len())
                .is_some_and(|start| start.eq_ignore_ascii_case(scheme))
        })
        .map(|scheme| scheme.len());
    let Some(scheme_end) = scheme_end else {
        return target.to_string();
    };
    let rest = &target[scheme_end..];
    match rest.find(['/', '?']) {
        Some(at) if rest[at..].starts_with('/') => rest[at..].to_string(),
        Some(at) => format!("/{}", &rest[at..]),
        None => "/".to_string(),
    }
}

/// Whether `host` may be a `Host` value: `uri-host [ ":" port ]` of RFC
/// 3986 (a name, an IPv4 address, a bracketed IPv6 one) — no spaces,
/// slashes, `@` or controls. Empty is allowed (RFC 9112 §3.2).
fn is_authority(host: &str) -> bool {
    host.bytes().all(|b| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'%'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'['
                    | b']'
            )
    })
}

/// A response head being built.
pub(crate) struct ResponseHead {
    status: u16,
    /// Values that are constants (`Accept-Ranges: bytes`, a content type)
    /// are borrowed: a 4 KiB GET's head is built with few allocations.
    headers: Vec<(&'static str, Cow<'static, str>)>,
}

impl ResponseHead {
    pub fn new(status: u16) -> Self {
        ResponseHead {
            status,
            headers: Vec::with_capacity(8),
        }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<Cow<'static, str>>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The head's bytes, with `Date`, `Server` and `Connection`.
    pub fn bytes(&self, keep_alive: bool) -> Vec<u8> {
        let mut out = String::with_capacity(HEAD_ROOM);
        // Writing into a String cannot fail.
        let _ = write!(out, "HTTP/1.1 {} {}", self.status, reason(self.status));
        out.push_str("\r\nServer: flexio\r\nDate: ");
        push_date_now(&mut out);
        out.push_str("\r\n");
        for (name, value) in &self.headers {
            out.push_str(name);
            out.push_str(": ");
            out.push_str(value);
            out.push_str("\r\n");
        }
        out.push_str(if keep_alive {
            "Connection: keep-alive\r\n\r\n"
        } else {
            "Connection: close\r\n\r\n"
        });
        out.into_bytes()
    }
}

/// Room for a usual response head, so that building one grows it once
/// at most.
const HEAD_ROOM: usize = 320;

/// Appends the current time as an HTTP date. It changes once a second,
/// so each thread formats it once a second, not once a response.
fn push_date_now(out: &mut String) {
    use std::cell::RefCell;
    thread_local! {
        static FORMATTED: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let now = SystemTime::now();
    let second = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    FORMATTED.with_borrow_mut(|(at, date)| {
        if *at != second {
            *date = httpdate::fmt_http_date(now);
            *at = second;
        }
        out.push_str(date);
    });
}

/// A short response whose body says what went wrong, in words.
pub(crate) fn text_response(status: u16, message: &str) -> (ResponseHead, Vec<u8>) {
    let body = format!("{} {}: {}\n", status, reason(status), message).into_bytes();
    let head = ResponseHead::new(status)
        .header("Content-Type", "text/plain; charset=utf-8")
        .header("Content-Length", body.len().to_string());
    (head, body)
}

/// The reason phrase of the statuses this server sends; the class's name
/// for any other (not sent: a test keeps it so), never a phrase that says
/// nothing.
pub(crate) fn reason(status: u16) -> &'static str {
    phrase(status).unwrap_or(match status / 100 {
        1 => "Informational",
        2 => "Success",
        3 => "Redirection",
        4 => "Client Error",
        _ => "Server Error",
    })
}

fn phrase(status: u16) -> Option<&'static str> {
    Some(match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        206 => "Partial Content",
        301 => "Moved Permanently",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        507 => "Insufficient Storage",
        _ => return None,
    })
}

/// A whole short response as bytes (for the event loop, which sends it
/// without waiting and closes).
pub(crate) fn closing_response(status: u16, message: &str) -> Vec<u8> {
    let (head, body) = text_response(status, message);
    let mut bytes = head.bytes(false);
    bytes.extend_from_slice(&body);
    bytes
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_heads_date_is_now_though_formatted_once_a_second() {
        use std::time::{Duration, SystemTime};
        for _ in 0..2 {
            let head = String::from_utf8(super::ResponseHead::new(200).bytes(true)).unwrap();
            let date = head
                .lines()
                .find_map(|line| line.strip_prefix("Date: "))
                .expect("a Date header");
            let said = httpdate::parse_http_date(date).expect("an HTTP date");
            let now = SystemTime::now();
            let behind = now.duration_since(said).unwrap_or_default();
            assert!(
                behind <= Duration::from_secs(1),
                "Date {date} is {behind:?} behind"
            );
            assert!(said <= now + Duration::from_secs(1), "Date {date} is ahead");
        }
    }

    /// Every status the server's code sends, read from its source where a
    /// response is made: `text(S`, `ResponseHead::new(S`,
    /// `closing_response(S`, and statuses chosen in a `match` or an `if`.
    fn statuses_sent() -> Vec<u16> {
        let sources = [
            include_str!("body.rs"),
            include_str!("cached_body.rs"),
            include_str!("connection.rs"),
            include_str!("directory.rs"),
            include_str!("exchange.rs"),
            include_str!("files.rs"),
            include_str!("intake.rs"),
            include_str!("preconditions.rs"),
            include_str!("mod.rs"),
            include_str!("request.rs"),
            include_str!("respond.rs"),
            include_str!("upload.rs"),
            include_str!("upload_ranges.rs"),
            include_str!("worker.rs"),
        ];
        let before = [
            "text(",
            "new(",
            "closing_response(",
            "=> (",
            "=> ",
            "{ ",
            "status = ",
        ];
        let mut found = Vec::new();
        for source in sources {
            for prefix in before {
                for (at, _) in source.match_indices(prefix) {
                    let rest = source[at + prefix.len()..].trim_start();
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    let follows = rest[digits.len()..].chars().next();
                    if digits.len() == 3 && matches!(follows, Some(',' | ')' | ' ' | '\n')) {
                        let status: u16 = digits.parse().unwrap();
                        if (100..600).contains(&status) {
                            found.push(status);
                        }
                    }
                }
            }
        }
        found.sort_unstable();
        found.dedup();
        found
    }

    #[test]
    fn absolute_form_targets_are_taken_as_their_path() {
        use super::origin_form;
        assert_eq!(origin_form("http://host:8080/a/b?tar"), "/a/b?tar");
        assert_eq!(origin_form("HTTP://host"), "/");
        assert_eq!(origin_form("https://host?manifest"), "/?manifest");
        assert_eq!(origin_form("/plain"), "/plain");
        assert_eq!(origin_form("*"), "*");
    }

    #[test]
    fn every_status_the_server_sends_has_its_reason_phrase() {
        let sent = statuses_sent();
        for status in [201, 202, 401, 409, 411, 412, 507] {
            assert!(sent.contains(&status), "{status} not found in {sent:?}");
        }
        let generic = [
            "Informational",
            "Success",
            "Redirection",
            "Client Error",
            "Server Error",
        ];
        for status in sent {
            assert!(
                !generic.contains(&super::reason(status)),
                "{status} has no reason phrase of its own"
            );
        }
    }
}
