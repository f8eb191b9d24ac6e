//! The `Range` request header (RFC 9110 §14.1.2) resolved against a file's
//! size, and the `Content-Range` response header parsed back by the client.

/// The most ranges one request may ask for; past it the header is ignored
/// and the whole file sent (RFC 9110 §14.2 lets a server ignore `Range`),
/// as nginx's `max_ranges`. 16: flexio's client asks one range a request
/// and readers of PDFs or archives a handful; each part costs a part head
/// (about 150 bytes) and a pass through the body's segments, so the cap
/// bounds a request's work however its ranges are spelled.
pub const MAX_RANGES: usize = 16;

/// What a `Range` header asks of a file of a given size.
#[derive(Debug, PartialEq, Eq)]
pub enum RangeAnswer {
    /// Send the whole file (no header, a unit other than bytes, a
    /// malformed header, or too many ranges).
    Whole,
    /// Send these `(first, length)` ranges: those that overlap or touch
    /// merged into one (RFC 9110 §14.2), so no byte is sent twice; each in
    /// the place its first range was asked.
    Parts(Vec<(u64, u64)>),
    /// No range overlaps the file: 416.
    Unsatisfiable,
}

/// Resolves `header` (e.g. `bytes=0-99,-10`) against `size`.
///
/// # Examples
/// ```
/// use flexio_net::ranges::{resolve, RangeAnswer};
/// assert_eq!(resolve("bytes=0-99", 1000), RangeAnswer::Parts(vec![(0, 100)]));
/// assert_eq!(resolve("bytes=-10", 1000), RangeAnswer::Parts(vec![(990, 10)]));
/// assert_eq!(resolve("bytes=990-", 1000), RangeAnswer::Parts(vec![(990, 10)]));
/// assert_eq!(resolve("bytes=1000-", 1000), RangeAnswer::Unsatisfiable);
/// assert_eq!(resolve("lines=1-2", 1000), RangeAnswer::Whole);
/// assert_eq!(resolve("bytes=0-,0-", 1000), RangeAnswer::Parts(vec![(0, 1000)]));
/// assert_eq!(
///     resolve("bytes=500-599,0-9,550-700", 1000),
///     RangeAnswer::Parts(vec![(500, 201), (0, 10)])
/// );
/// ```
pub fn resolve(header: &str, size: u64) -> RangeAnswer {
    let Some(specs) = header.trim().strip_prefix("bytes=") else {
        return RangeAnswer::Whole;
    };
    let mut parts = Vec::new();
    let mut count = 0;
    for spec in specs.split(',') {
        let spec = spec.trim();
        if spec.is_empty() {
            continue;
        }
        count += 1;
        if count > MAX_RANGES {
            return RangeAnswer::Whole;
        }
        let Some((first, last)) = spec.split_once('-') else {
            return RangeAnswer::Whole;
        };
        let range = match (first.trim(), last.trim()) {
            ("", "") => return RangeAnswer::Whole,
            ("", suffix) => {
                let Some(suffix) = parse_digits(suffix) else {
                    return RangeAnswer::Whole;
                };
                let length = suffix.min(size);
                (length > 0).then(|| (size - length, length))
            }
            (first, last) => {
                let Some(first) = parse_digits(first) else {
                    return RangeAnswer::Whole;
                };
                let last = match last {
                    "" => u64::MAX,
                    last => match parse_digits(last) {
                        Some(last) if last >= first => last,
                        _ => return RangeAnswer::Whole,
                    },
                };
                (first < size).then(|| (first, last.min(size - 1) - first + 1))
            }
        };
        parts.extend(range);
    }
    if count == 0 {
        return RangeAnswer::Whole;
    }
    if parts.is_empty() {
        return RangeAnswer::Unsatisfiable;
    }
    RangeAnswer::Parts(merge(parts))
}

/// Merges the `(first, length)` ranges that overlap or touch; each merged
/// range takes the place of the first of its ranges that was asked.
fn merge(parts: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    // (first, end, place asked), by first.
    let mut spans: Vec<(u64, u64, usize)> = parts
        .into_iter()
        .enumerate()
        .map(|(place, (first, length))| (first, first + length, place))
        .collect();
    spans.sort_unstable();
    let mut merged: Vec<(u64, u64, usize)> = Vec::with_capacity(spans.len());
    for (first, end, place) in spans {
        match merged.last_mut() {
            Some(last) if first <= last.1 => {
                last.1 = last.1.max(end);
                last.2 = last.2.min(place);
            }
            _ => merged.push((first, end, place)),
        }
    }
    merged.sort_unstable_by_key(|&(_, _, place)| place);
    merged
        .into_iter()
        .map(|(first, end, _)| (first, end - first))
        .collect()
}

/// Digits only (no sign, no spaces), at most what fits a u64.
fn parse_digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A `Content-Range`: the inclusive range (`None` for `*`) and the total
/// length (`None` for `*`).
pub type ContentRange = (Option<(u64, u64)>, Option<u64>);

/// A parsed `Content-Range: bytes FIRST-LAST/TOTAL` (or `bytes */TOTAL`,
/// given as `None` for the range).
///
/// # Examples
/// ```
/// use flexio_net::ranges::parse_content_range;
/// assert_eq!(parse_content_range("bytes 0-9/100"), Some((Some((0, 9)), Some(100))));
/// assert_eq!(parse_content_range("bytes */0"), Some((None, Some(0))));
/// assert_eq!(parse_content_range("bytes 9-0/100"), None);
/// ```
pub fn parse_content_range(value: &str) -> Option<ContentRange> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (range, total) = rest.split_once('/')?;
    let total = match total {
        "*" => None,
        digits => Some(parse_digits(digits)?),
    };
    let range = match range {
        "*" => None,
        range => {
            let (first, last) = range.split_once('-')?;
            let (first, last) = (parse_digits(first)?, parse_digits(last)?);
            if last < first || total.is_some_and(|total| last >= total) {
                return None;
            }
            Some((first, last))
        }
    };
    Some((range, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_clamped_and_checked() {
        assert_eq!(resolve("bytes=0-", 0), RangeAnswer::Unsatisfiable);
        assert_eq!(resolve("bytes=-5", 0), RangeAnswer::Unsatisfiable);
        assert_eq!(resolve("bytes=5-2", 10), RangeAnswer::Whole);
        assert_eq!(
            resolve("bytes=0-99999", 10),
            RangeAnswer::Parts(vec![(0, 10)])
        );
        assert_eq!(resolve("bytes=-99", 10), RangeAnswer::Parts(vec![(0, 10)]));
        assert_eq!(
            resolve("bytes=0-0, 20-, 5-6", 10),
            RangeAnswer::Parts(vec![(0, 1), (5, 2)])
        );
        assert_eq!(resolve("bytes=+1-2", 10), RangeAnswer::Whole);
        assert_eq!(
            resolve("bytes=99999999999999999999999-", 10),
            RangeAnswer::Whole
        );
        let many = format!("bytes={}", vec!["0-0"; MAX_RANGES + 1].join(","));
        assert_eq!(resolve(&many, 10), RangeAnswer::Whole);
    }

    #[test]
    fn overlapping_and_touching_ranges_are_merged_in_the_order_asked() {
        let whole = format!("bytes={}", vec!["0-"; MAX_RANGES].join(","));
        assert_eq!(
            resolve(&whole, 1 << 20),
            RangeAnswer::Parts(vec![(0, 1 << 20)])
        );
        assert_eq!(
            resolve("bytes=10-19,0-9,20-20", 100),
            RangeAnswer::Parts(vec![(0, 21)])
        );
        assert_eq!(
            resolve("bytes=50-59,0-4,55-70,-10,6-8", 100),
            RangeAnswer::Parts(vec![(50, 21), (0, 5), (90, 10), (6, 3)])
        );
        // Every byte asked is in exactly one part, and no part is empty.
        let odd = "bytes=3-40,-7,90-,0-0,41-41,12-13,95-96";
        let RangeAnswer::Parts(parts) = resolve(odd, 100) else {
            panic!("{odd}")
        };
        let mut seen = [0u8; 100];
        for (first, length) in parts {
            assert!(length > 0);
            for byte in first..first + length {
                seen[byte as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n <= 1));
        assert_eq!(seen.iter().filter(|&&n| n == 1).count(), 1 + 39 + 10);
    }
}
