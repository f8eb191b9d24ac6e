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

/// What one listing page names.
#[derive(Debug)]
pub(super) struct Page {
    /// How the server wrote it.
    pub format: ListingFormat,
    /// The children to fetch, in page order, each once.
    pub children: Vec<Listed>,
    /// Children whose names no file here can take (NUL, a `/`, over
    /// [`crate::names::NAME_MAX`] bytes), shown printable with why: left
    /// out, and said so.
    pub refused: Vec<String>,
}

/// The children a listing names. `content_type` and the body's first byte
/// tell the format; `directory` is the listed directory's decoded path
/// (ending in `/`), against which absolute links are resolved.
///
/// # Errors
/// A text naming why the body is no listing this reads.
pub(super) fn parse(body: &[u8], content_type: &str, directory: &[u8]) -> Result<Page, String> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace()).copied();
    let (format, named) = if first == Some(b'[') {
        (ListingFormat::NginxJson, nginx_json(body)?)
    } else if content_type.is_empty() || content_type.starts_with("text/html") {
        (ListingFormat::Html, html(body, directory))
    } else {
        return Err(format!(
            "answered {content_type:?}: neither a flexio manifest nor an HTML or nginx JSON listing"
        ));
    };
    let mut page = Page {
        format,
        children: Vec::new(),
        refused: Vec::new(),
    };
    let mut seen = HashSet::new();
    for listed in named {
        if !seen.insert(listed.name.clone()) {
            continue;
        }
        if is_safe_component(&listed.name) {
            page.children.push(listed);
        } else {
            page.refused.push(format!(
                "{}: a name no file here can take (NUL, `/` or over 255 bytes)",
                crate::names::printable(&listed.name)
            ));
        }
    }
    Ok(page)
}

/// nginx's JSON listing: `[{"name", "type", "mtime", "size"}, …]`; types
/// other than file and directory, and `.` and `..`, are left out.
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
    Ok(entries
        .into_iter()
        .filter(|e| e.kind == "file" || e.kind == "directory")
        .filter(|e| !is_parent_or_self(e.name.as_bytes()))
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

/// The children an HTML page links to, in page order.
fn html(body: &[u8], directory: &[u8]) -> Vec<Listed> {
    hrefs(body)
        .into_iter()
        .filter_map(|href| child_of(&unescape_html(&href), directory))
        .collect()
}

/// An empty name, `.` or `..`: a link to the page itself or its parent,
/// not a child.
fn is_parent_or_self(name: &[u8]) -> bool {
    matches!(name, b"" | b"." | b"..")
}

/// The `href` of every `<a>` element, as written. The page is read as a
/// browser tokenizes it, far enough to know what is an `<a>` tag: comments
/// and the raw text of `<script>` and `<style>` are skipped (rclone's
/// listing holds `href` strings in its script), and an attribute's quoted
/// value is never taken for a tag.
fn hrefs(body: &[u8]) -> Vec<Vec<u8>> {
    let lower = body.to_ascii_lowercase();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = body[at..].iter().position(|&b| b == b'<') {
        let start = at + offset;
        if lower[start..].starts_with(b"<!--") {
            match find(&lower[start + 4..], b"-->") {
                Some(end) => at = start + 4 + end + 3,
                None => break,
            }
            continue;
        }
        let name_end = lower[start + 1..]
            .iter()
            .position(|b| !b.is_ascii_alphanumeric())
            .map_or(lower.len(), |len| start + 1 + len);
        let tag = &lower[start + 1..name_end];
        if tag.is_empty() && !matches!(lower.get(start + 1), Some(b'/' | b'!' | b'?')) {
            at = start + 1; // a `<` in text
            continue;
        }
        let (attributes, end) = tag_attributes(body, name_end);
        at = end;
        match tag {
            b"a" => found.extend(
                attributes
                    .into_iter()
                    .find(|(name, _)| name == b"href")
                    .map(|(_, value)| value),
            ),
            b"script" | b"style" => {
                let closing = [b"</", tag].concat();
                match find(&lower[at..], &closing) {
                    Some(end) => at += end,
                    None => break,
                }
            }
            _ => {}
        }
    }
    found
}

/// An attribute of a tag: its name in lower case, its value as written
/// (unquoted).
type Attribute = (Vec<u8>, Vec<u8>);

/// A tag's attributes from `at` (just past its name), and where the tag
/// ends (past its `>`, or the body's end).
fn tag_attributes(body: &[u8], mut at: usize) -> (Vec<Attribute>, usize) {
    let mut attributes = Vec::new();
    let skip_space = |mut i: usize| {
        while body
            .get(i)
            .is_some_and(|b| b.is_ascii_whitespace() || *b == b'/')
        {
            i += 1;
        }
        i
    };
    loop {
        at = skip_space(at);
        match body.get(at) {
            None => return (attributes, body.len()),
            Some(b'>') => return (attributes, at + 1),
            Some(_) => {}
        }
        let name_len = body[at..]
            .iter()
            .position(|&b| b.is_ascii_whitespace() || matches!(b, b'=' | b'>' | b'/'))
            .unwrap_or(body.len() - at)
            .max(1);
        let name = body[at..at + name_len].to_ascii_lowercase();
        at += name_len;
        while body.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        if body.get(at) != Some(&b'=') {
            attributes.push((name, Vec::new()));
            continue;
        }
        at += 1;
        while body.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        let value = match body.get(at) {
            Some(&quote @ (b'"' | b'\'')) => {
                let len = body[at + 1..]
                    .iter()
                    .position(|&b| b == quote)
                    .unwrap_or(body.len() - at - 1);
                let value = body[at + 1..at + 1 + len].to_vec();
                at = (at + 2 + len).min(body.len());
                value
            }
            _ => {
                let len = body[at..]
                    .iter()
                    .position(|&b| b.is_ascii_whitespace() || b == b'>')
                    .unwrap_or(body.len() - at);
                let value = body[at..at + len].to_vec();
                at += len;
                value
            }
        };
        attributes.push((name, value));
    }
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
/// deep, no query or fragment, on this host. Its decoded name may still be
/// one no file can take (`a%2Fb`): [`parse`] tells those apart.
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
    if name.contains(&b'/') {
        return None; // deeper: read from its own directory's listing
    }
    let name = percent_decode(name).ok()?;
    (!is_parent_or_self(&name)).then_some(Listed {
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
        let page = parse(page, "text/html", b"/t/").unwrap();
        assert_eq!(page.format, ListingFormat::Html);
        assert_eq!(
            names(&page.children),
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
        let page = parse(page, "text/html;charset=UTF-8", b"/files/t/").unwrap();
        assert!(page.refused.is_empty(), "{:?}", page.refused);
        assert_eq!(
            names(&page.children),
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
<li><a href="%2E%2E/">up</a></li><li><a href="a%2Fb">slash</a></li><li><a href=".hidden">.hidden</a></li>
<li><a href="nul%00x">nul</a></li><li><a href="tab%09x">tab</a></li></ul>"#;
        let page = parse(page, "text/html; charset=utf-8", b"/").unwrap();
        assert_eq!(
            names(&page.children),
            [
                ("café.txt".into(), false),
                (".hidden".into(), false),
                ("tab\tx".into(), false)
            ]
        );
        // Named in the report, never dropped unsaid.
        assert_eq!(page.refused.len(), 2, "{:?}", page.refused);
        assert!(page.refused[0].starts_with("a/b: "), "{:?}", page.refused);
        assert!(
            page.refused[1].starts_with("nul\\u{0}x: "),
            "{:?}",
            page.refused
        );
    }

    #[test]
    fn hrefs_come_from_a_elements_only() {
        // rclone's listing sorts in a script that names hrefs; a comment,
        // a style, another element's attribute and quoted text name more.
        let page = br#"<!DOCTYPE html><html><head><style>a[href="styled"] { color: red }</style>
<script type="text/javascript">
  var x = '<a href="scripted">'; document.write("<a href='/t/absolute-scripted'>");
  if (a < b) { location.href = "assigned"; }
</script>
<!-- <a href="commented">old</a> -->
</head><body><img alt='<a href="alt">' src="pic.png"><link href="linked.css" rel="stylesheet">
<a title="x > y" href="kept">kept</a> a < b <A HREF=Upper>Upper</A>
<a data-href="data" href='second'>second</a><SCRIPT>"href=\"late\""</SCRIPT >
<a href="last">last</a></body></html>"#;
        let page = parse(page, "text/html", b"/t/").unwrap();
        assert_eq!(
            names(&page.children),
            [
                ("kept".into(), false),
                ("Upper".into(), false),
                ("second".into(), false),
                ("last".into(), false)
            ]
        );
    }

    #[test]
    fn nginx_json_gives_types_and_mtimes() {
        let body =
            br#"[{ "name":"sub", "type":"directory", "mtime":"Wed, 25 Nov 2026 10:00:00 GMT" },
{ "name":"f", "type":"file", "mtime":"Wed, 25 Nov 2026 10:00:01 GMT", "size":6 },
{ "name":"..", "type":"file", "mtime":"Wed, 25 Nov 2026 10:00:01 GMT", "size":6 },
{ "name":"dev", "type":"other", "mtime":"Wed, 25 Nov 2026 10:00:01 GMT" }]"#;
        let page = parse(body, "application/json", b"/").unwrap();
        assert_eq!(page.format, ListingFormat::NginxJson);
        assert_eq!(
            names(&page.children),
            [("sub".into(), true), ("f".into(), false)]
        );
        assert_eq!(page.children[1].mtime, Some(1_795_600_801));
    }

    #[test]
    fn a_body_of_another_type_is_no_listing() {
        assert!(parse(b"%PDF-1.4", "application/pdf", b"/").is_err());
    }
}
