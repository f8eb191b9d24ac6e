//! The command line's value parsers, each defined once and named in the
//! commands' `value_parser = values::NAME`, and the bounds they keep.
//! Every duration flag goes through [`duration`] and every count has a
//! range, so no number typed reaches a deadline's arithmetic (`Instant +
//! Duration` panics past the clock's range), a thread spawn or an
//! allocation unchecked: past its bound clap names the flag and the bound,
//! and the exit status is 2, as for any other usage error.
//! (`flexio-cli/tests/cli_fan.rs` fails when a parser is written outside
//! this file.)

use std::net::SocketAddr;
use std::time::Duration;

use flexio::pace::{Rate, Schedule};
use flexio::MechanismName;

/// The longest wait any duration flag takes: a week. Longer than any
/// timeout, grace or linger that means something, far inside what the
/// clock holds.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);

/// Connections one get or put opens at once (each a thread and a socket).
pub(crate) const MAX_STREAMS: u64 = 256;

/// Worker threads of `serve`.
pub(crate) const MAX_WORKERS: u64 = 1024;

/// Connections `serve` holds at once (each at least a descriptor).
pub(crate) const MAX_CONNECTIONS: u64 = 1 << 20;

/// Counted rounds of a bench.
pub(crate) const MAX_RUNS: u64 = 10_000;

/// A duration flag's value (`500ms`, `30s`, `2m`, `1h`), at most
/// [`MAX_WAIT`].
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    let duration = flexio::parse_duration(text).map_err(|e| e.to_string())?;
    if duration > MAX_WAIT {
        return Err(format!(
            "{text:?} is longer than the longest wait a flag takes, {}h (7 days)",
            MAX_WAIT.as_secs() / 3600
        ));
    }
    Ok(duration)
}

/// A count flag's parser: from 1 to `max`.
pub(crate) fn count(max: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..=max)
}

/// A size: bytes, or binary units (`4096`, `64K`, `16MiB`, `1G`).
pub(crate) fn size(text: &str) -> Result<u64, String> {
    flexio::parse_size(text).map_err(|e| e.to_string())
}

/// A size of at least one byte (the bench's sizes and link rates).
pub(crate) fn nonzero_size(text: &str) -> Result<u64, String> {
    at_least_a_byte(text, "a size must be at least 1 byte")
}

/// `put --piece-size`: at least one byte.
pub(crate) fn piece_size(text: &str) -> Result<u64, String> {
    at_least_a_byte(text, "a piece must be at least one byte")
}

/// A size, refused with `refusal` when it is zero.
fn at_least_a_byte(text: &str, refusal: &str) -> Result<u64, String> {
    match size(text)? {
        0 => Err(refusal.into()),
        bytes => Ok(bytes),
    }
}

/// `serve --max-chunk`: the bytes of one connection's turn, a byte to 1G.
pub(crate) fn max_chunk(text: &str) -> Result<u64, String> {
    match size(text)? {
        0 => Err("a turn must move at least a byte".into()),
        bytes if bytes > 1 << 30 => Err("at most 1G per turn".into()),
        bytes => Ok(bytes),
    }
}

/// `serve --chunk`: a mechanism's buffer or map window, 4 KiB to 64 MiB.
pub(crate) fn chunk(text: &str) -> Result<usize, String> {
    let size = size(text)?;
    if !(4096..=(64 << 20)).contains(&size) {
        return Err("--chunk must be between 4KiB and 64MiB".into());
    }
    Ok(size as usize)
}

/// A rate: bytes per second in binary units (`10M`, `512K/s`, `1G`) or
/// bits spelled out (`100Mbit/s`).
pub(crate) fn rate(text: &str) -> Result<Rate, String> {
    text.parse::<Rate>().map_err(|e| e.to_string())
}

/// Cue's schedule `K,T`: K chunks, then a pause of T ms (`4,16`, `8,2.5ms`).
pub(crate) fn schedule(text: &str) -> Result<Schedule, String> {
    text.parse::<Schedule>().map_err(|e| e.to_string())
}

/// Seconds, more than 0 and at most an hour (`bench --pace-seconds`).
pub(crate) fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if value > 0.0 && value <= 3600.0 => Ok(value),
        _ => Err(format!("{text:?}: seconds between 0 and 3600")),
    }
}

/// `copy --jobs`: a count of workers within [`flexio::tree::MAX_JOBS`].
pub(crate) fn jobs(text: &str) -> Result<usize, String> {
    let most = flexio::tree::MAX_JOBS;
    let jobs: usize = text
        .parse()
        .map_err(|_| format!("{text:?} is not a whole number of workers (1 to {most})"))?;
    if !(1..=most).contains(&jobs) {
        return Err(format!(
            "{jobs} is outside 1..={most}: each is a thread, and past a few per CPU more only wait on each other"
        ));
    }
    Ok(jobs)
}

/// `--listen`: `ADDR:PORT`, or a port alone for 127.0.0.1 (a server
/// reachable from elsewhere is asked for by address, and --public).
pub(crate) fn listen_address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().map_err(|_| {
        format!("{text:?} is neither a port (8080) nor an address and port (127.0.0.1:8080, [::1]:8080)")
    })
}

/// `get --via`: `auto` or a mechanism that moves socket → file.
pub(crate) fn socket_to_file(text: &str) -> Result<MechanismName, String> {
    use flexio::EndpointKind::{File, Tcp};
    let serving = MechanismName::serving(Tcp, File);
    match text.parse::<MechanismName>() {
        Ok(name) if name == MechanismName::Auto || serving.contains(&name) => Ok(name),
        _ => {
            let names: Vec<_> = serving.iter().map(|m| m.as_str()).collect();
            Err(format!(
                "{text:?} cannot move a socket's bytes to a file; use auto, {}",
                names.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_past_a_week_are_refused_with_the_bound() {
        assert_eq!(duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(duration("168h").unwrap(), MAX_WAIT);
        for text in ["10000000000000000000s", "169h", "604801"] {
            let error = duration(text).unwrap_err();
            assert!(error.contains("168h (7 days)"), "{text}: {error}");
        }
        // Past what a Duration holds: refused by the parser itself.
        let error = duration("99999999999999999999999999s").unwrap_err();
        assert!(error.contains("out of range"), "{error}");
        assert!(duration("0s").is_err());
    }

    #[test]
    fn a_port_alone_listens_on_loopback() {
        assert_eq!(
            listen_address("8080").unwrap().to_string(),
            "127.0.0.1:8080"
        );
        assert_eq!(listen_address("[::1]:80").unwrap().to_string(), "[::1]:80");
        assert_eq!(
            listen_address("0.0.0.0:80").unwrap().to_string(),
            "0.0.0.0:80"
        );
        assert!(listen_address("localhost").is_err());
    }

    #[test]
    fn zero_sizes_are_refused_in_the_flag_s_words() {
        assert_eq!(size("0"), Ok(0));
        assert_eq!(
            nonzero_size("0").unwrap_err(),
            "a size must be at least 1 byte"
        );
        assert_eq!(
            piece_size("0").unwrap_err(),
            "a piece must be at least one byte"
        );
        assert_eq!(piece_size("64M"), Ok(64 << 20));
        assert_eq!(
            max_chunk("0").unwrap_err(),
            "a turn must move at least a byte"
        );
        assert!(chunk("1K").is_err() && chunk("4K") == Ok(4096));
        assert!(size("12 bananas").is_err() && nonzero_size("x").is_err());
    }
}
