//! Byte sizes as people type them (`4096`, `64K`, `1MiB`, `1G`) and as
//! people read them.

use crate::error::{Error, Result};

/// Parses a byte size: a plain integer, or an integer followed by a binary
/// unit `K`, `M`, `G`, `T` (also `KiB`, `MiB`, `KB`, … — all binary).
///
/// # Errors
/// [`Error::Usage`] for an empty string, an unknown unit or an overflow.
///
/// # Examples
/// ```
/// assert_eq!(flexio::parse_size("64K").unwrap(), 65536);
/// assert_eq!(flexio::parse_size("1MiB").unwrap(), 1 << 20);
/// assert!(flexio::parse_size("12Q").is_err());
/// ```
pub fn parse_size(text: &str) -> Result<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() {
        return Err(Error::usage(format!(
            "invalid size {text:?}: expected a number such as 4096, 64K, 1MiB or 1G"
        )));
    }
    let number: u64 = digits
        .parse()
        .map_err(|_| Error::usage(format!("invalid size {text:?}: number too large")))?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => {
            return Err(Error::usage(format!(
                "invalid size {text:?}: unknown unit {unit:?} (use K, M, G or T)"
            )))
        }
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| Error::usage(format!("invalid size {text:?}: too large")))
}

/// Formats a byte count with a binary unit, e.g. `1.50 GiB`.
///
/// # Examples
/// ```
/// assert_eq!(flexio::format_bytes(1536), "1.50 KiB");
/// assert_eq!(flexio::format_bytes(17), "17 B");
/// ```
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
}

/// Formats a rate in bytes per second, e.g. `2.31 GiB/s`.
pub fn format_rate(bytes_per_second: f64) -> String {
    format!("{}/s", format_bytes(bytes_per_second.max(0.0) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_binary() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1k").unwrap(), 1024);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("2TiB").unwrap(), 2 << 40);
        assert_eq!(parse_size("3MB").unwrap(), 3 << 20);
    }

    #[test]
    fn bad_sizes_are_usage_errors() {
        for bad in ["", "K", "-1", "1.5G", "1X", "99999999999999999999"] {
            let err = parse_size(bad).unwrap_err();
            assert!(err.is_usage(), "{bad}");
        }
        assert!(parse_size("16777216T").is_err());
    }

    #[test]
    fn formats_round_down_to_two_places() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1 << 30), "1.00 GiB");
        assert_eq!(format_rate(2.0 * (1u64 << 20) as f64), "2.00 MiB/s");
        // Two places always, and the largest unit is PiB.
        assert_eq!(format_bytes(512 << 10), "512.00 KiB");
        assert_eq!(format_bytes(1536), "1.50 KiB");
        assert_eq!(format_bytes((1 << 20) - 1), "1024.00 KiB");
        assert_eq!(format_bytes(5 << 50), "5.00 PiB");
        assert_eq!(format_bytes(3 << 60), "3072.00 PiB");
    }
}
