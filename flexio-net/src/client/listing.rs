//! Directory listings of servers that offer no manifest — nginx's
//! `autoindex` (HTML, or `autoindex_format json`), Apache's, `python3 -m
//! http.server`'s — read as `wget -r -np` reads them: each link to a child
//! of the listed directory, once; no parent, no query (sort links, a
//! `?tar`), nothing on another host or deeper than one level (a deeper
//! directory is read from its own listing).

use std::collections::HashSet;

use crate::names::{is_safe_component, percent_decode, percent_encode};

/// How a server wrote its listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ListingFormat {
    /// Links in an HTML page (nginx, Apache, `python3 -m http.server`).
    Html,
    /// nginx's `autoindex_format json`: name, type, mtime, size.
    NginxJson,
}

/// One child of a listed directory.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Listed {
    /// Its name, decoded and checked safe as one path component.
    pub name: Vec<u8>,
    /// Whether it is a directory (a link ending in `/`).
    pub directory: bool,
    /// Its mtime in seconds, where the listing gives one exactly.
    pub mtime: Option<i64>,
}

/// The children a listing names. `content_type` and the body's first byte
/// tell the format; `directory` is the listed directory's decoded path
/// (ending in `/`), against which absolute links are resolved.
///
/// # Errors
/// A text naming why the body is no listing this reads.
pub(super) fn parse(
    body: &[u8],
    content_type: &str,
    directory: &[u8],
) -> Result<(ListingFormat, Vec<Listed>), String> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first == Some(b'[') {
        return nginx_json(body).map(|listed| (ListingFormat::NginxJson, listed));
    }
    if content_type.is_empty() || content_type.starts_with("text/html") {
        return Ok((ListingFormat::Html, html(body, directory)));
    }
    Err(format!(
        "answered {content_type:?}: neither a flexio manifest nor an HTML or nginx JSON listing"
    ))
}

/// nginx's JSON listing: `[{"name", "type", "mtime", "size"}, …]`; types
/// other than file and directory are left out.
fn nginx_json(body: &[u8]) -> Result<Vec<Listed>, String> {
    #[derive(serde::Deserialize)]
    struct Entry {
        name: String,
        #[serde(rename = "type")]
        kind: String,
        mtime: Option<String>,
    }
    let entries: Vec<Entry> =
        serde_json::from_slice(body).map_err(|e| format!("a malformed JSON listing: {e}"))?;
    let mut seen = HashSet::new();
    Ok(entries
        .into_iter()
        .filter(|e| e.kind == "file" || e.kind == "directory")
        .filter(|e| is_safe_component(e.name.as_bytes()) && seen.insert(e.name.clone()))
        .map(|e| Listed {
            name: e.name.into_bytes(),
            directory: e.kind == "directory",
            mtime: e.mtime.as_deref().and_then(unix_seconds),
        })
        .collect())
}

/// An HTTP date (`Wed, 25 Nov 2026 10:00:00 GMT`) in Unix seconds.
pub(super) fn unix_seconds(date: &str) -> Option<i64> {
    let time = httpdate::parse_http_date(date.trim()).ok()?;
    let seconds = time.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    i64::try_from(seconds).ok()
}

/// The children an HTML page links to, in page order, each once.
fn html(body: &[u8], directory: &[u8]) -> Vec<Listed> {
    let mut seen = HashSet::new();
    hrefs(body)
        .into_iter()
        .filter_map(|href| child_of(&unescape_html(&href), directory))
        .filter(|listed| seen.insert(listed.name.clone()))
        .collect()
}

/// Every `href` attribute's value, as written.
fn hrefs(body: &[u8]) -> Vec<Vec<u8>> {
    let lower = body.to_ascii_lowercase();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = find(&lower[at..], b"href") {
        let mut i = at + offset + 4;
        at = i;
        while lower.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        if lower.get(i) != Some(&b'=') {
            continue;
        }
        i += 1;
        while lower.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        let (start, end) = match body.get(i) {
            Some(&quote @ (b'"' | b'\'')) => {
                let Some(len) = body[i + 1..].iter().position(|&b| b == quote) else {
                    break;
                };
                (i + 1, i + 1 + len)
            }
            Some(_) => {
                let len = body[i..]
                    .iter()
                    .position(|&b| b.is_ascii_whitespace() || b == b'>')
                    .unwrap_or(body.len() - i);
                (i, i + len)
            }
            None => break,
        };
        found.push(body[start..end].to_vec());
        at = end;
    }
    found
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The character references a listing's hrefs hold (`&amp;` for `&`, and
/// numeric ones).
fn unescape_html(href: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(href);
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_ref();
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest.find(';').filter(|&end| end <= 10);
        let decoded = end.and_then(|end| match &rest[1..end] {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            number => number
                .strip_prefix("#x")
                .or_else(|| number.strip_prefix("#X"))
                .map(|hex| u32::from_str_radix(hex, 16))
                .or_else(|| number.strip_prefix('#').map(str::parse))
                .and_then(Result::ok)
                .and_then(char::from_u32),
        });
        match (decoded, end) {
            (Some(c), Some(end)) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            _ => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out.into_bytes()
}

/// The child of `directory` that `href` names, if it names one: a name
/// relative to the page or an absolute path inside `directory`, one level
/// deep, no query or fragment, on this host.
fn child_of(href: &[u8], directory: &[u8]) -> Option<Listed> {
    if href.iter().any(|&b| b == b'?' || b == b'#') || find(href, b"//").is_some() {
        return None;
    }
    let href = href.strip_prefix(b"./").unwrap_or(href);
    let relative = match href.strip_prefix(b"/") {
        Some(_) => {
            let decoded = percent_decode(href).ok()?;
            let inside = decoded.strip_prefix(directory)?;
            percent_encode_path(inside)
        }
        None => href.to_vec(),
    };
    let (name, is_directory) = match relative.strip_suffix(b"/") {
        Some(name) => (name, true),
        None => (relative.as_slice(), false),
    };
    let name = percent_decode(name).ok()?;
    (is_safe_component(&name) && !name.contains(&b'/')).then_some(Listed {
        name,
        directory: is_directory,
        mtime: None,
    })
}

/// `inside` (decoded) with its components encoded again, so that
/// `child_of` decodes every form of link once.
fn percent_encode_path(inside: &[u8]) -> Vec<u8> {
    inside
        .split(|&b| b == b'/')
        .map(percent_encode)
        .collect::<Vec<_>>()
        .join("/")
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(listed: &[Listed]) -> Vec<(String, bool)> {
        listed
            .iter()
            .map(|l| (String::from_utf8_lossy(&l.name).into_owned(), l.directory))
            .collect()
    }

    #[test]
    fn nginx_html_keeps_children_and_drops_the_parent() {
        let page = br#"<html><head><title>Index of /t/</title></head><body><h1>Index of /t/</h1><hr><pre><a href="../">../</a>
<a href="sub/">sub/</a>                                               25-Nov-2026 10:00       -
<a href="a%20b.txt">a b.txt</a>                                          25-Nov-2026 10:00       6
<a href="x&amp;y">x&amp;y</a>                                          25-Nov-2026 10:00       6
</pre><hr></body></html>"#;
        let (format, listed) = parse(page, "text/html", b"/t/").unwrap();
        assert_eq!(format, ListingFormat::Html);
        assert_eq!(
            names(&listed),
            [
                ("sub".into(), true),
                ("a b.txt".into(), false),
                ("x&y".into(), false)
            ]
        );
    }

    #[test]
    fn apache_sort_links_parent_and_other_hosts_are_left_out() {
        let page = br#"<table><tr><th><a href="?C=N;O=D">Name</a></th><th><a href="?C=M;O=A">Last modified</a></th></tr>
<tr><td><a href="/files/">Parent Directory</a></td></tr>
<tr><td><a href="/files/t/data.bin">data.bin</a></td></tr>
<tr><td><a href='deep/'>deep/</a></td></tr>
<tr><td><a href="http://elsewhere.example/x">x</a></td><td><a href="//cdn.example/y">y</a></td></tr>
<tr><td><a href="a/b">a/b</a></td><td><a href=plain>plain</a></td><td><a href="data.bin">again</a></td></tr>"#;
        let (_, listed) = parse(page, "text/html;charset=UTF-8", b"/files/t/").unwrap();
        assert_eq!(
            names(&listed),
            [
                ("data.bin".into(), false),
                ("deep".into(), true),
                ("plain".into(), false)
            ]
        );
    }

    #[test]
    fn python_escapes_and_dot_names_are_decoded_or_refused() {
        let page = br#"<ul><li><a href="caf%C3%A9.txt">caf&#233;.txt</a></li><li><a href="..">..</a></li>
<li><a href="%2E%2E/">up</a></li><li><a href="a%2Fb">slash</a></li><li><a href=".hidden">.hidden</a></li></ul>"#;
        let (_, listed) = parse(page, "text/html; charset=utf-8", b"/").unwrap();
        assert_eq!(
            names(&listed),
            [("café.txt".into(), false), (".hidden".into(), false)]
        );
    }

    #[test]
    fn nginx_json_gives_types_and_mtimes() {
        let body =
            br#"[{ "name":"sub", "type":"directory", "mtime":"Wed, 25 Nov 2026 10:00:00 GMT" },
{ "name":"f", "type":"file", "mtime":"Wed, 25 Nov 2026 10:00:01 GMT", "size":6 },
{ "name":"..", "type":"file", "mtime":"Wed, 25 Nov 2026 10:00:01 GMT", "size":6 },
{ "name":"dev", "type":"other", "mtime":"Wed, 25 Nov 2026 10:00:01 GMT" }]"#;
        let (format, listed) = parse(body, "application/json", b"/").unwrap();
        assert_eq!(format, ListingFormat::NginxJson);
        assert_eq!(names(&listed), [("sub".into(), true), ("f".into(), false)]);
        assert_eq!(listed[1].mtime, Some(1_795_600_801));
    }

    #[test]
    fn a_body_of_another_type_is_no_listing() {
        assert!(parse(b"%PDF-1.4", "application/pdf", b"/").is_err());
    }
}
