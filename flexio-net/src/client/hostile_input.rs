//! The client's parsers driven with what a hostile server (or a hand
//! edited journal) may send: numbers at and past every bound — chunk
//! sizes of `ffffffffffffffff`, Content-Lengths of twenty digits, ranges
//! past the total, manifest sizes and counts at `u64::MAX`, journal
//! offsets anywhere — and plain noise. Each property asks only that the
//! parser answers (a value within its caps, or an error naming the peer)
//! and never panics: a panic here would be `get` dying with exit 101 on a
//! peer's word. `FLEXIO_FUZZ_CASES=1000000 cargo test --release -p
//! flexio-net --lib hostile_input` for a long run.

use std::io::Cursor;

use proptest::prelude::*;

use super::connection::{parse_head, read_chunked_from};
use super::listing;
use super::resume::journaled;
use super::single::{first_shape, Shape};
use super::tree::plan_manifest;
use crate::manifest::Manifest;
use crate::ranges::parse_content_range;

const PEER: &str = "http://127.0.0.1:9/hostile";

/// A number as a hostile peer writes it: small, at a bound, past one, or
/// not quite a number.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..5000).prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        Just(u64::MAX.to_string()),
        Just("18446744073709551616".to_string()),
        Just("99999999999999999999999999".to_string()),
        Just("-1".to_string()),
        Just("+5".to_string()),
        Just(" 7".to_string()),
        Just(String::new()),
        "[0-9a-fx+ -]{0,24}",
    ]
}

/// A chunk-size line: hex at and past every bound, with extensions.
fn chunk_size() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..0x2000).prop_map(|n| format!("{n:x}")),
        any::<u64>().prop_map(|n| format!("{n:x}")),
        Just("ffffffffffffffff".to_string()),
        Just("fffffffffffffff0".to_string()),
        Just("10000000000000000".to_string()),
        Just("0000000000000000000001".to_string()),
        Just("-1".to_string()),
        "[0-9a-fA-F;= xz-]{0,20}",
    ]
}

/// A chunked body: chunks whose announced size may lie about the bytes
/// that follow, maybe a last chunk and trailers, maybe cut anywhere.
fn chunked_body() -> impl Strategy<Value = Vec<u8>> {
    // Half the chunks honest (their size their bytes'), so that a hostile
    // size comes after a body has begun, as well as first.
    let chunk = (
        prop::option::of(chunk_size()),
        prop::collection::vec(any::<u8>(), 1..64),
        prop::bool::weighted(0.9),
    );
    (
        prop::collection::vec(chunk, 0..6),
        any::<bool>(),
        prop::collection::vec("[ -~]{0,30}", 0..80),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(chunks, last, trailers, cut, cutting)| {
            let mut raw = Vec::new();
            for (size, data, crlf) in chunks {
                let size = size.unwrap_or_else(|| format!("{:x}", data.len()));
                raw.extend_from_slice(size.as_bytes());
                raw.extend_from_slice(b"\r\n");
                raw.extend_from_slice(&data);
                if crlf {
                    raw.extend_from_slice(b"\r\n");
                }
            }
            if last {
                raw.extend_from_slice(b"0\r\n");
                for trailer in trailers {
                    raw.extend_from_slice(trailer.as_bytes());
                    raw.extend_from_slice(b"\r\n");
                }
                raw.extend_from_slice(b"\r\n");
            }
            if cutting && !raw.is_empty() {
                raw.truncate(cut.index(raw.len()));
            }
            raw
        })
}

/// A response head with hostile numbers in its framing headers.
fn response_head() -> impl Strategy<Value = Vec<u8>> {
    let header = prop_oneof![
        number().prop_map(|n| format!("Content-Length: {n}")),
        (number(), number(), number())
            .prop_map(|(a, b, t)| format!("Content-Range: bytes {a}-{b}/{t}")),
        number().prop_map(|t| format!("Content-Range: bytes */{t}")),
        Just("Transfer-Encoding: chunked".to_string()),
        Just("Connection: close".to_string()),
        Just("Connection: keep-alive".to_string()),
        Just("Server: flexio".to_string()),
        "ETag: \"[ -~]{0,20}\"",
        "[ -~]{0,40}",
    ];
    (
        prop::sample::select(vec!["200", "206", "416", "0", "999", "65535", "-1", "2000"]),
        prop::sample::select(vec!["HTTP/1.1", "HTTP/1.0", "HTTP/2", "ICY"]),
        prop::collection::vec(header, 0..8),
    )
        .prop_map(|(status, version, headers)| {
            let mut raw = format!("{version} {status} Reason\r\n").into_bytes();
            for header in headers {
                raw.extend_from_slice(header.as_bytes());
                raw.extend_from_slice(b"\r\n");
            }
            raw.extend_from_slice(b"\r\n");
            raw
        })
}

/// A JSON number a manifest field may hold: in range, at its bound, past
/// it, negative, fractional.
fn json_number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..3_000_000).prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        Just(u64::MAX.to_string()),
        Just("18446744073709551616".to_string()),
        Just("1e300".to_string()),
        Just("-0.5".to_string()),
    ]
}

/// A manifest entry's path or link target: plain, climbing, absolute,
/// empty, percent-encoded, with control characters.
fn manifest_path() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-c]{1,3}(/[a-c]{1,3}){0,3}",
        Just("..".to_string()),
        Just("a/../..".to_string()),
        Just("/etc/passwd".to_string()),
        Just(String::new()),
        Just("a//b".to_string()),
        Just("%ff%fe".to_string()),
        Just("%zz".to_string()),
        "[\\x00-\\x1f./a%]{0,12}",
    ]
}

/// A manifest with hostile numbers, kinds, names and hash lists, as JSON
/// text (so numbers out of a field's type reach the parser too).
fn manifest_json() -> impl Strategy<Value = String> {
    let entry = (
        manifest_path(),
        any::<bool>(),
        prop::sample::select(vec!["file", "directory", "symlink", "other", ""]),
        json_number(),
        json_number(),
        json_number(),
        json_number(),
        prop::option::of(manifest_path()),
        prop::collection::vec("[0-9a-f]{0,64}", 0..4),
    )
        .prop_map(
            |(path, encoded, kind, size, mode, mtime, nsec, target, hashes)| {
                let target = target
                    .map(|t| format!(", \"link_target\": {}", serde_json::json!(t)))
                    .unwrap_or_default();
                format!(
                    "{{\"path\": {}, \"path_percent_encoded\": {encoded}, \"type\": \"{kind}\", \"size\": {size}, \"mode\": {mode}, \"mtime\": {mtime}, \"mtime_nsec\": {nsec}{target}, \"blake3\": {}}}",
                    serde_json::json!(path),
                    serde_json::json!(hashes)
                )
            },
        );
    (
        json_number(),
        json_number(),
        prop::collection::vec(entry, 0..12),
    )
        .prop_map(|(version, chunk, entries)| {
            format!(
                "{{\"schema_version\": {version}, \"chunk_size\": {chunk}, \"entries\": [{}]}}",
                entries.join(", ")
            )
        })
}

/// A listing body: nginx JSON with hostile fields, or HTML with hostile
/// hrefs and character references, or noise.
fn listing_body() -> impl Strategy<Value = (Vec<u8>, String)> {
    let json = prop::collection::vec(
        (
            manifest_path(),
            prop::sample::select(vec!["file", "directory", "other"]),
            json_number(),
            "[ -~]{0,32}",
        ),
        0..8,
    )
    .prop_map(|entries| {
        let items: Vec<String> = entries
            .into_iter()
            .map(|(name, kind, size, mtime)| {
                format!(
                    "{{\"name\": {}, \"type\": \"{kind}\", \"size\": {size}, \"mtime\": {}}}",
                    serde_json::json!(name),
                    serde_json::json!(mtime)
                )
            })
            .collect();
        (
            format!("[{}]", items.join(",")).into_bytes(),
            "application/json".to_string(),
        )
    });
    let html = prop::collection::vec(
        prop_oneof![
            manifest_path().prop_map(|p| format!("<a href=\"{p}\">x</a>")),
            "&#x[0-9a-fA-F]{0,12};",
            "&#[0-9]{0,24};",
            "<a href='[ -~]{0,20}'>",
            "<a href=[^ >]{0,20}>",
            "href\\s*=\\s*\"?",
            "[ -~]{0,20}",
        ],
        0..12,
    )
    .prop_map(|parts| (parts.concat().into_bytes(), "text/html".to_string()));
    let noise = (
        prop::collection::vec(any::<u8>(), 0..200),
        prop::sample::select(vec!["", "text/html", "application/json", "text/plain"]),
    )
        .prop_map(|(bytes, kind)| (bytes, kind.to_string()));
    prop_oneof![json, html, noise]
}

/// A journal: its header or another, lines with numbers anywhere and
/// hashes of any shape, maybe cut.
fn journal() -> impl Strategy<Value = (Vec<u8>, u64, u64)> {
    let line = prop_oneof![
        (number(), number(), "[0-9a-fA-F]{64}").prop_map(|(o, l, h)| format!("{o}\t{l}\t{h}")),
        (0u64..64, 0u64..4, "[0-9a-f]{64}").prop_map(|(o, l, h)| format!(
            "{}\t{}\t{h}",
            o << 20,
            l << 20
        )),
        "[ -~\t]{0,80}",
    ];
    (
        any::<bool>(),
        prop::collection::vec(line, 0..40),
        any::<bool>(),
        prop_oneof![any::<u64>(), 0u64..(64 << 20)],
        prop_oneof![Just(0u64), Just(1u64 << 20), any::<u64>()],
    )
        .prop_map(|(same, lines, cut, total, piece)| {
            let header = if same { "flexio-resume-2\tH" } else { "other" };
            let mut raw = format!("{header}\n{}", lines.join("\n")).into_bytes();
            if !cut {
                raw.push(b'\n');
            }
            (raw, total, piece)
        })
}

proptest! {
    #![proptest_config(crate::fuzz_config(2000))]

    /// The chunked decoder: a body within its cap, or an error naming the
    /// peer; never a panic, never memory a chunk size asked for.
    #[test]
    fn hostile_chunked_bodies_are_decoded_within_the_cap_or_refused(raw in chunked_body()) {
        let cap = 4096;
        match read_chunked_from(&mut Cursor::new(&raw), cap, PEER, "a listing") {
            Ok(body) => prop_assert!(body.len() as u64 <= cap),
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }

    /// The head parser and what reads its framing: Content-Length,
    /// Content-Range, the first answer's shape; a number a peer writes
    /// past any bound is an error, never a panic or an overflow.
    #[test]
    fn hostile_response_heads_parse_or_are_refused(
        raw in response_head(),
        piece in prop_oneof![Just(64u64 << 10), Just(1u64 << 20), (64u64 << 10)..u64::MAX],
    ) {
        if let Ok(response) = parse_head(&raw, PEER) {
            let _ = response.content_length(PEER);
            let _ = response.closes();
            if let Some(range) = response.header("content-range") {
                let _ = parse_content_range(range);
            }
            match first_shape(&response, PEER, piece) {
                Ok(Shape::Range { total, first }) => prop_assert!(first <= total),
                Ok(Shape::Whole(_)) | Err(_) => {}
            }
        }
    }

    /// The manifest parser and its checks: every entry it plans has safe
    /// components and a file's hashes cover its size; never a panic.
    #[test]
    fn hostile_manifests_are_planned_or_refused(text in manifest_json()) {
        if let Ok(manifest) = serde_json::from_str::<Manifest>(&text)
            && let Ok((planned, _)) = plan_manifest(manifest, PEER) {
                for entry in &planned {
                    prop_assert!(entry.parts.iter().all(|p| crate::names::is_safe_component(p)));
                }
            }
    }

    /// Noise where a manifest should be: an error from serde, never a
    /// panic.
    #[test]
    fn noise_is_no_manifest(raw in prop::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(manifest) = serde_json::from_slice::<Manifest>(&raw) {
            let _ = plan_manifest(manifest, PEER);
        }
    }

    /// The listing parsers (HTML and nginx JSON): safe names only, each
    /// once; never a panic.
    #[test]
    fn hostile_listings_give_safe_names_or_an_error((body, kind) in listing_body()) {
        if let Ok(page) = listing::parse(&body, &kind, b"/t/") {
            let mut seen = std::collections::HashSet::new();
            for child in &page.children {
                prop_assert!(crate::names::is_safe_component(&child.name));
                prop_assert!(seen.insert(child.name.clone()));
            }
        }
    }

    /// The journal reader: only pieces on the grid, within the file, with
    /// the length a piece there has, each once; never a panic.
    #[test]
    fn hostile_journals_claim_only_pieces_on_the_grid((raw, total, piece) in journal()) {
        let claimed = journaled(&raw, "flexio-resume-2\tH", total, piece);
        let mut seen = std::collections::HashSet::new();
        for p in &claimed {
            prop_assert!(p.offset < total && p.offset % piece == 0);
            prop_assert_eq!(p.length, (total - p.offset).min(piece));
            prop_assert!(seen.insert(p.offset));
        }
    }
}
