//! Names that cross the wire: percent-decoding a request target into a
//! path that stays beneath the served directory, percent-encoding names
//! into links, escaping them into HTML. Every name from a peer is
//! untrusted: NUL, `..` and over-long names are refused here, before any
//! system call sees them. Other control characters (a tab, a newline) are
//! legal in a Linux name: they cross the wire percent-encoded, and are
//! escaped by [`printable`] wherever a name is shown.

/// Why a request target names nothing that may be served.
#[derive(Debug, PartialEq, Eq)]
pub enum BadTarget {
    /// Not an absolute path, a bad `%` escape, or NUL.
    Malformed(&'static str),
    /// A `..` component: an attempt to climb out.
    Climbs,
}

/// The longest name of one component (Linux's `NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// Splits a request target into its decoded path components (empty for
/// the root) and its query (still encoded). `.` and empty components are
/// dropped; `..` and NUL are refused. A control character other than NUL
/// (`%09`, a tab) is kept: Linux allows it in a name, and a listing links
/// it so.
///
/// # Errors
/// [`BadTarget`] as above.
///
/// # Examples
/// ```
/// use flexio_net::names::{split_target, BadTarget};
/// let (parts, query) = split_target("/a%20b/./c?tar").unwrap();
/// assert_eq!(parts, vec![b"a b".to_vec(), b"c".to_vec()]);
/// assert_eq!(query, Some("tar"));
/// assert_eq!(split_target("/a%09b").unwrap().0, vec![b"a\tb".to_vec()]);
/// assert_eq!(split_target("/%2e%2e/etc/passwd"), Err(BadTarget::Climbs));
/// ```
pub fn split_target(target: &str) -> Result<(Vec<Vec<u8>>, Option<&str>), BadTarget> {
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (target, None),
    };
    if !path.starts_with('/') {
        return Err(BadTarget::Malformed("the target is not an absolute path"));
    }
    let decoded = percent_decode(path.as_bytes())?;
    let mut parts = Vec::new();
    for part in decoded.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => return Err(BadTarget::Climbs),
            name => {
                if name.contains(&0) {
                    return Err(BadTarget::Malformed("the path holds NUL"));
                }
                if name.len() > NAME_MAX {
                    return Err(BadTarget::Malformed("a path component is over NAME_MAX"));
                }
                parts.push(name.to_vec());
            }
        }
    }
    Ok((parts, query))
}

/// Decodes `%XX` escapes.
///
/// # Errors
/// [`BadTarget::Malformed`] for a `%` not followed by two hex digits.
pub fn percent_decode(bytes: &[u8]) -> Result<Vec<u8>, BadTarget> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or(BadTarget::Malformed("a % escape is not two hex digits"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// Encodes every byte that is not unreserved in a URL path segment.
///
/// # Examples
/// ```
/// assert_eq!(flexio_net::names::percent_encode(b"a b/%.txt"), "a%20b%2F%25.txt");
/// ```
pub fn percent_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Escapes text for HTML content and attribute values.
///
/// # Examples
/// ```
/// assert_eq!(flexio_net::names::html_escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
/// ```
pub fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Whether `name`, one component from a peer, may be created or opened
/// here: not empty, not `.` or `..`, no `/` or NUL, at most [`NAME_MAX`]
/// bytes — any name Linux can hold, control characters included.
///
/// # Examples
/// ```
/// use flexio_net::names::is_safe_component;
/// assert!(is_safe_component(b"report.pdf"));
/// assert!(!is_safe_component(b".."));
/// assert!(!is_safe_component(b"a/b"));
/// assert!(is_safe_component(b"a\tb"));
/// assert!(!is_safe_component(b"a\0b"));
/// ```
pub fn is_safe_component(name: &[u8]) -> bool {
    !name.is_empty()
        && name != b"."
        && name != b".."
        && name.len() <= NAME_MAX
        && !name.iter().any(|&b| b == b'/' || b == 0)
}

/// `name` as text to print: invalid UTF-8 replaced, and each control
/// character escaped (`\t`, `\u{1b}`) so that no name can move a terminal's
/// cursor or forge a line of output.
///
/// # Examples
/// ```
/// assert_eq!(flexio_net::names::printable(b"a\tb\x1b[2J"), "a\\tb\\u{1b}[2J");
/// ```
pub fn printable(name: &[u8]) -> String {
    let text = String::from_utf8_lossy(name);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn climbing_is_refused_however_spelled() {
        for target in ["/..", "/a/../..", "/%2e%2e/x", "/%2E%2E", "/a/%2e%2E/b"] {
            assert_eq!(split_target(target), Err(BadTarget::Climbs), "{target}");
        }
    }

    #[test]
    fn malformed_targets_are_refused() {
        for target in ["a", "/%zz", "/%4", "/a%00b", "/%00", "*"] {
            assert!(
                matches!(split_target(target), Err(BadTarget::Malformed(_))),
                "{target}"
            );
        }
    }

    #[test]
    fn control_characters_other_than_nul_are_names() {
        let (parts, _) = split_target("/d/a%09b/c%0Ad%1B").unwrap();
        assert_eq!(parts, [&b"d"[..], b"a\tb", b"c\nd\x1b"]);
        assert!(is_safe_component(b"\x7f"));
    }

    #[test]
    fn an_encoded_slash_splits_like_a_slash_and_is_checked() {
        assert_eq!(split_target("/a%2F..%2Fb"), Err(BadTarget::Climbs));
    }
}
