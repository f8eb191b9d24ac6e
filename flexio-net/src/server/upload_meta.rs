//! What a PUT asks of its file besides the bytes, as `rsync -a` keeps it:
//! `Flexio-Mode` (permission bits, octal, at most `777`) and
//! `Flexio-Mtime` (`SECONDS.NANOSECONDS` since the epoch). They are given
//! to the new file before it takes its name, so the file appears with
//! them whole; a ranged upload takes them from the piece that completes
//! it. Set-id and sticky bits are never taken from a peer. Neither header
//! is covered by a request's signature, as the body is not: both ride on
//! the same trust as the bytes (TLS for integrity on an open link).

use std::os::fd::BorrowedFd;

use super::request::Request;

/// The mode and mtime a PUT asks for, each when it does.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Kept {
    pub mode: Option<u32>,
    pub mtime: Option<(i64, u32)>,
}

impl Kept {
    /// The request's `Flexio-Mode` and `Flexio-Mtime`.
    ///
    /// # Errors
    /// Why a value is malformed (the PUT is answered `400`).
    pub fn of(request: &Request) -> Result<Kept, String> {
        let mode = request
            .header("flexio-mode")
            .map(|value| {
                let value = value.trim();
                (!value.is_empty() && value.len() <= 4)
                    .then(|| u32::from_str_radix(value, 8).ok())
                    .flatten()
                    .filter(|mode| *mode <= 0o777)
                    .ok_or_else(|| {
                        format!("Flexio-Mode {value:?}: permission bits in octal, 0 to 777")
                    })
            })
            .transpose()?;
        let mtime = request
            .header("flexio-mtime")
            .map(|value| {
                parse_mtime(value.trim()).ok_or_else(|| {
                    format!(
                        "Flexio-Mtime {value:?}: SECONDS.NANOSECONDS since the epoch (nanoseconds 9 digits)"
                    )
                })
            })
            .transpose()?;
        Ok(Kept { mode, mtime })
    }

    /// Gives `file` the mode and mtime asked for (the mtime as atime
    /// too).
    ///
    /// # Errors
    /// Those of `fchmod` and `futimens`.
    pub fn apply(&self, file: BorrowedFd<'_>) -> std::io::Result<()> {
        if let Some(mode) = self.mode {
            rustix::fs::fchmod(file, rustix::fs::Mode::from_raw_mode(mode))?;
        }
        if let Some((seconds, nanoseconds)) = self.mtime {
            let time = rustix::fs::Timespec {
                tv_sec: seconds,
                tv_nsec: i64::from(nanoseconds),
            };
            rustix::fs::futimens(
                file,
                &rustix::fs::Timestamps {
                    last_access: time,
                    last_modification: time,
                },
            )?;
        }
        Ok(())
    }
}

/// `SECONDS.NANOSECONDS` (seconds perhaps negative, nanoseconds nine
/// digits) or `SECONDS`.
fn parse_mtime(value: &str) -> Option<(i64, u32)> {
    let (seconds, nanoseconds) = value.split_once('.').unwrap_or((value, "000000000"));
    let digits = seconds.strip_prefix('-').unwrap_or(seconds);
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || nanoseconds.len() != 9
        || !nanoseconds.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    Some((seconds.parse().ok()?, nanoseconds.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(headers: &[(&str, &str)]) -> Request {
        Request {
            method: "PUT".into(),
            target: "/a".into(),
            minor: 1,
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn modes_and_mtimes_parse_or_are_refused_with_why() {
        let kept = Kept::of(&request(&[
            ("flexio-mode", "640"),
            ("flexio-mtime", "1577836800.000000123"),
        ]))
        .unwrap();
        assert_eq!(kept.mode, Some(0o640));
        assert_eq!(kept.mtime, Some((1_577_836_800, 123)));
        assert_eq!(Kept::of(&request(&[])).unwrap(), Kept::default());
        assert_eq!(
            Kept::of(&request(&[("flexio-mtime", "-5")])).unwrap().mtime,
            Some((-5, 0))
        );
        for bad in ["4755", "800", "", "rwx", "-1"] {
            assert!(
                Kept::of(&request(&[("flexio-mode", bad)])).is_err(),
                "{bad}"
            );
        }
        for bad in [
            "",
            "1.5",
            "1.0000000001",
            "x",
            "1e9",
            "--1",
            "99999999999999999999",
        ] {
            assert!(
                Kept::of(&request(&[("flexio-mtime", bad)])).is_err(),
                "{bad}"
            );
        }
    }
}
