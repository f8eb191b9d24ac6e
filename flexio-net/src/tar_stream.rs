//! `?tar`: a subtree as a POSIX ustar stream. Headers are built here (PAX
//! extended headers for names, link targets or sizes that ustar cannot
//! hold); file bodies are not read here at all: the server sends each
//! with sendfile between a header and its padding.

use crate::walk::{Entry, EntryKind};

/// A tar block.
pub const BLOCK: u64 = 512;

/// One piece of the stream.
#[derive(Debug)]
pub(crate) enum Piece {
    /// Bytes written as they are: headers, padding, the end blocks.
    Bytes(Vec<u8>),
    /// `size` bytes of the file at `path` (relative to the walked directory).
    Body { path: Vec<u8>, size: u64 },
}

/// The stream for `entries`, as pieces, and its total length. Entries that
/// are neither files, directories nor symlinks are left out (a server does
/// not hand out devices or FIFOs).
pub(crate) fn plan(entries: &[Entry]) -> (Vec<Piece>, u64) {
    let mut pieces = Vec::new();
    let mut pending = Vec::new();
    for entry in entries {
        if entry.kind == EntryKind::Other {
            continue;
        }
        pending.extend_from_slice(&headers(entry));
        if entry.kind == EntryKind::File && entry.size > 0 {
            pieces.push(Piece::Bytes(std::mem::take(&mut pending)));
            pieces.push(Piece::Body {
                path: entry.path.clone(),
                size: entry.size,
            });
            let padding = entry.size.next_multiple_of(BLOCK) - entry.size;
            pending.resize(padding as usize, 0);
        }
    }
    pending.resize(pending.len() + 2 * BLOCK as usize, 0);
    pieces.push(Piece::Bytes(pending));
    let total = pieces
        .iter()
        .map(|piece| match piece {
            Piece::Bytes(bytes) => bytes.len() as u64,
            Piece::Body { size, .. } => *size,
        })
        .sum();
    (pieces, total)
}

/// The header block(s) of one entry: a PAX extended header first when a
/// field does not fit ustar.
pub(crate) fn headers(entry: &Entry) -> Vec<u8> {
    let mut name = entry.path.clone();
    if entry.kind == EntryKind::Directory {
        name.push(b'/');
    }
    let link = entry.link_target.clone().unwrap_or_default();
    let size = if entry.kind == EntryKind::File {
        entry.size
    } else {
        0
    };
    let mut pax = Vec::new();
    let split = split_name(&name);
    if split.is_none() {
        pax_record(&mut pax, "path", &name);
    }
    if link.len() > 100 {
        pax_record(&mut pax, "linkpath", &link);
    }
    if size > MAX_OCTAL_11 {
        pax_record(&mut pax, "size", size.to_string().as_bytes());
    }
    let mut out = Vec::new();
    if !pax.is_empty() {
        // Readers take the name from the record; this one is only a label.
        out.extend_from_slice(&block(
            b"",
            b"PaxHeader",
            0o644,
            0,
            0,
            pax.len() as u64,
            0,
            b'x',
            b"",
        ));
        out.extend_from_slice(&pax);
        out.resize(out.len().next_multiple_of(BLOCK as usize), 0);
    }
    let (prefix, short) =
        split.unwrap_or_else(|| (Vec::new(), name[..name.len().min(100)].to_vec()));
    let kind = match entry.kind {
        EntryKind::Directory => b'5',
        EntryKind::Symlink => b'2',
        _ => b'0',
    };
    out.extend_from_slice(&block(
        &prefix,
        &short,
        entry.mode,
        entry.uid,
        entry.gid,
        size.min(MAX_OCTAL_11),
        entry.mtime.max(0) as u64,
        kind,
        &link[..link.len().min(100)],
    ));
    out
}

/// The largest value 11 octal digits hold.
const MAX_OCTAL_11: u64 = 0o77777777777;

/// Splits `name` into ustar's prefix (≤ 155 bytes) and name (≤ 100), at a
/// `/`; `None` when it cannot be.
fn split_name(name: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    if name.len() <= 100 {
        return Some((Vec::new(), name.to_vec()));
    }
    // The name part may keep a directory's trailing slash.
    let search = &name[..name.len() - 1];
    search
        .iter()
        .enumerate()
        .rev()
        .filter(|&(_, &b)| b == b'/')
        .map(|(at, _)| at)
        .find(|&at| at <= 155 && name.len() - at - 1 <= 100 && at > 0)
        .map(|at| (name[..at].to_vec(), name[at + 1..].to_vec()))
}

/// Appends a PAX record `LEN key=value\n`, LEN counting itself.
fn pax_record(out: &mut Vec<u8>, key: &str, value: &[u8]) {
    let body = key.len() + value.len() + 3; // space, '=', newline
    let mut length = body + 1;
    while length != body + length.to_string().len() {
        length = body + length.to_string().len();
    }
    out.extend_from_slice(format!("{length} {key}=").as_bytes());
    out.extend_from_slice(value);
    out.push(b'\n');
}

/// One ustar header block.
#[allow(clippy::too_many_arguments)]
fn block(
    prefix: &[u8],
    name: &[u8],
    mode: u32,
    uid: u32,
    gid: u32,
    size: u64,
    mtime: u64,
    kind: u8,
    link: &[u8],
) -> [u8; BLOCK as usize] {
    let mut header = [0u8; BLOCK as usize];
    header[..name.len()].copy_from_slice(name);
    octal(&mut header[100..108], u64::from(mode));
    octal(
        &mut header[108..116],
        if uid <= 0o7777777 { uid.into() } else { 0 },
    );
    octal(
        &mut header[116..124],
        if gid <= 0o7777777 { gid.into() } else { 0 },
    );
    octal(&mut header[124..136], size);
    octal(&mut header[136..148], mtime.min(MAX_OCTAL_11));
    header[156] = kind;
    header[157..157 + link.len()].copy_from_slice(link);
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[345..345 + prefix.len()].copy_from_slice(prefix);
    header[148..156].fill(b' ');
    let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
    header[148..154].copy_from_slice(format!("{sum:06o}").as_bytes());
    header[154] = 0;
    header[155] = b' ';
    header
}

/// Writes `value` as zero-padded octal filling `field` but its last byte
/// (a NUL).
fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    field[..digits].copy_from_slice(&text.as_bytes()[text.len() - digits..]);
    field[digits] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_record_length_counts_itself() {
        let mut out = Vec::new();
        pax_record(&mut out, "path", &[b'a'; 93]);
        let text = String::from_utf8(out).unwrap();
        let (length, _) = text.split_once(' ').unwrap();
        assert_eq!(length.parse::<usize>().unwrap(), text.len());
    }

    #[test]
    fn long_names_split_at_a_slash() {
        let name = format!("{}/{}", "d".repeat(120), "f".repeat(90));
        let (prefix, short) = split_name(name.as_bytes()).unwrap();
        assert_eq!(prefix.len(), 120);
        assert_eq!(short.len(), 90);
        assert!(split_name("x".repeat(101).as_bytes()).is_none());
    }
}
