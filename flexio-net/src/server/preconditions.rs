//! HTTP's preconditions (RFC 9110 §13), evaluated in the order of
//! §13.2.2 against what is at the target now: `If-Match` (strong
//! comparison, `*` for "something is there"), else `If-Unmodified-Since`;
//! then `If-None-Match` (weak comparison; 304 for GET and HEAD, 412 for
//! any other method), else `If-Modified-Since` for GET and HEAD.
//! `If-Range` is the range's business (the file's answer, not this).
//!
//! A handler asks only where its answer without the conditions would be a
//! 2xx (§13.2.1: a missing file stays a 404), and for a write before
//! anything is linked in — a PUT before its body is read and once more
//! before the file takes its name, so that an upload racing another
//! cannot replace what its conditions did not allow.

use std::os::fd::AsFd;

use rustix::fs::AtFlags;

use super::request::Request;
use super::validators::{system_time, Validators};

/// What is at the target now.
pub(crate) enum Current<'a> {
    /// Nothing.
    Missing,
    /// Something without a validator of ours (a directory).
    Untagged,
    /// A file and its validators.
    Tagged(&'a Validators),
}

/// What the conditions say.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Go on as if there were none.
    Proceed,
    /// The client's copy is current: 304 (GET and HEAD only).
    NotModified,
    /// 412, with the condition that failed.
    Failed(&'static str),
}

/// Evaluates `request`'s preconditions against `current`.
pub(crate) fn evaluate(request: &Request, current: &Current<'_>) -> Verdict {
    let reads = request.method == "GET" || request.method == "HEAD";
    if let Some(tags) = list(request, "if-match") {
        let held = match current {
            Current::Missing => false,
            Current::Untagged => tags.contains(&"*"),
            Current::Tagged(validators) => tags
                .iter()
                .any(|&tag| tag == "*" || (!tag.starts_with("W/") && tag == validators.etag)),
        };
        if !held {
            return Verdict::Failed("If-Match");
        }
    } else if let (Some(since), Current::Tagged(validators)) =
        (date(request, "if-unmodified-since"), current)
        && system_time(validators.mtime) > since
    {
        return Verdict::Failed("If-Unmodified-Since");
    }
    if let Some(tags) = list(request, "if-none-match") {
        let matched = match current {
            Current::Missing => false,
            Current::Untagged => tags.contains(&"*"),
            Current::Tagged(validators) => tags
                .iter()
                .any(|&tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == validators.etag),
        };
        return match (matched, reads) {
            (false, _) => Verdict::Proceed,
            (true, true) => Verdict::NotModified,
            (true, false) => Verdict::Failed("If-None-Match"),
        };
    }
    if let (true, Some(since), Current::Tagged(validators)) =
        (reads, date(request, "if-modified-since"), current)
        && system_time(validators.mtime) <= since
    {
        return Verdict::NotModified;
    }
    Verdict::Proceed
}

/// Evaluates `request`'s preconditions against what is named `name` in
/// `parent` now (not following a last symbolic link: that is what a PUT
/// replaces).
pub(crate) fn evaluate_at(request: &Request, parent: impl AsFd, name: &[u8]) -> Verdict {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::OsStr::from_bytes(name);
    match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => evaluate(request, &Current::Tagged(&Validators::of(&stat))),
        Err(_) => evaluate(request, &Current::Missing),
    }
}

/// The entity tags of every `name` header, in order; `None` without one.
fn list<'r>(request: &'r Request, name: &str) -> Option<Vec<&'r str>> {
    let mut found = false;
    let mut tags = Vec::new();
    for (_, value) in request.headers.iter().filter(|(n, _)| n == name) {
        found = true;
        tags.extend(
            value
                .split(',')
                .map(str::trim)
                .filter(|tag| !tag.is_empty()),
        );
    }
    found.then_some(tags)
}

/// A date header; one that is not an HTTP date is ignored (§13.1.3).
fn date(request: &Request, name: &str) -> Option<std::time::SystemTime> {
    httpdate::parse_http_date(request.header(name)?.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, headers: &[(&str, &str)]) -> Request {
        Request {
            method: method.into(),
            target: "/f".into(),
            minor: 1,
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn validators() -> Validators {
        Validators {
            etag: "\"1-2-3.4\"".into(),
            last_modified: String::new(),
            mtime: 1_000_000_000,
        }
    }

    const BEFORE: &str = "Sat, 08 Sep 2001 00:00:00 GMT";
    const AFTER: &str = "Mon, 10 Sep 2001 00:00:00 GMT";

    #[test]
    fn if_match_compares_strongly_and_star_needs_something_there() {
        let v = validators();
        let tagged = Current::Tagged(&v);
        let verdict = |value, current: &Current<'_>| {
            evaluate(&request("PUT", &[("if-match", value)]), current)
        };
        assert_eq!(verdict("\"1-2-3.4\"", &tagged), Verdict::Proceed);
        assert_eq!(verdict("\"x\", \"1-2-3.4\"", &tagged), Verdict::Proceed);
        assert_eq!(
            verdict("W/\"1-2-3.4\"", &tagged),
            Verdict::Failed("If-Match")
        );
        assert_eq!(verdict("*", &tagged), Verdict::Proceed);
        assert_eq!(verdict("*", &Current::Missing), Verdict::Failed("If-Match"));
        assert_eq!(verdict("*", &Current::Untagged), Verdict::Proceed);
    }

    #[test]
    fn if_unmodified_since_is_ignored_beside_if_match() {
        let v = validators();
        let tagged = Current::Tagged(&v);
        let alone = request("GET", &[("if-unmodified-since", BEFORE)]);
        assert_eq!(
            evaluate(&alone, &tagged),
            Verdict::Failed("If-Unmodified-Since")
        );
        let later = request("GET", &[("if-unmodified-since", AFTER)]);
        assert_eq!(evaluate(&later, &tagged), Verdict::Proceed);
        let both = request(
            "GET",
            &[("if-match", "\"1-2-3.4\""), ("if-unmodified-since", BEFORE)],
        );
        assert_eq!(evaluate(&both, &tagged), Verdict::Proceed);
        let garbled = request("GET", &[("if-unmodified-since", "yesterday")]);
        assert_eq!(evaluate(&garbled, &tagged), Verdict::Proceed);
    }

    #[test]
    fn if_none_match_is_304_for_reads_and_412_for_writes() {
        let v = validators();
        let tagged = Current::Tagged(&v);
        for (method, expected) in [
            ("GET", Verdict::NotModified),
            ("HEAD", Verdict::NotModified),
            ("PUT", Verdict::Failed("If-None-Match")),
        ] {
            for value in ["*", "W/\"1-2-3.4\"", "\"1-2-3.4\""] {
                let asked = request(method, &[("if-none-match", value)]);
                assert_eq!(evaluate(&asked, &tagged), expected, "{method} {value}");
            }
        }
        let new_name = request("PUT", &[("if-none-match", "*")]);
        assert_eq!(evaluate(&new_name, &Current::Missing), Verdict::Proceed);
        let other = request("GET", &[("if-none-match", "\"other\"")]);
        assert_eq!(evaluate(&other, &tagged), Verdict::Proceed);
    }

    #[test]
    fn if_modified_since_counts_for_reads_only_and_not_beside_if_none_match() {
        let v = validators();
        let tagged = Current::Tagged(&v);
        let read = request("GET", &[("if-modified-since", AFTER)]);
        assert_eq!(evaluate(&read, &tagged), Verdict::NotModified);
        let write = request("PUT", &[("if-modified-since", AFTER)]);
        assert_eq!(evaluate(&write, &tagged), Verdict::Proceed);
        let both = request(
            "GET",
            &[("if-none-match", "\"other\""), ("if-modified-since", AFTER)],
        );
        assert_eq!(evaluate(&both, &tagged), Verdict::Proceed);
    }
}
