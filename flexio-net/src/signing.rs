//! Signed requests: how a write is authorised over a plain link without
//! the token crossing it in a form anyone could use again.
//!
//! A bearer token (`Authorization: Bearer …`) is taken only on loopback
//! or over TLS, where no one between the two ends reads it. Across a plain
//! link, `flexio put` instead signs each request:
//!
//! ```text
//! Authorization: FlexioSig t=1795000000, n=<32 hex digits>, s=<64 hex digits>
//! ```
//!
//! `s` is BLAKE3 in keyed mode (a MAC) over the method, the authority it
//! was sent to (the `Host` value, lower-cased), the request target, the
//! body's length, its `Content-Range` and `Flexio-Upload` values (empty
//! when absent), the time `t` and the random nonce `n`, under a key derived
//! from the token. The server recomputes it, takes a time within
//! [`MAX_CLOCK_SKEW`] of its own clock and not before it started, and
//! takes each nonce once ([`SeenNonces`]), so a request seen on the wire
//! can be neither replayed (to this server, to another server sharing the
//! token under another name, or to this one after a restart) nor turned
//! into another: another host, target, length or time breaks the
//! signature. Servers that share a token and one name (behind one address)
//! share a replay window: give each its own token. What it does not protect is the body's
//! bytes: someone who can change packets on a plain link can change them
//! (same length); `--tls` protects those too.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The `Authorization` scheme of a signed request.
pub const SCHEME: &str = "FlexioSig";

/// How far a signed request's time may be from the server's clock.
pub const MAX_CLOCK_SKEW: Duration = Duration::from_secs(120);

/// The most nonces remembered at once: signed requests within twice the
/// skew window beyond this are refused (503) rather than remembered
/// without bound.
pub const MAX_REMEMBERED_NONCES: usize = 100_000;

/// The context of the key derivation: a key made from a token for this
/// purpose is no good for any other.
const KEY_CONTEXT: &str = "flexio 2026-11 signed HTTP request key";

/// What a signature covers of a request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SignedRequest<'a> {
    /// `PUT`.
    pub method: &'a str,
    /// The authority the request is sent to, as its `Host` header says
    /// (`host:port`; compared without regard to case).
    pub authority: &'a str,
    /// The request target as sent (`/dir/name`).
    pub target: &'a str,
    /// Content-Length.
    pub length: u64,
    /// The `Content-Range` value, empty when there is none.
    pub content_range: &'a str,
    /// The `Flexio-Upload` value (which upload a range belongs to), empty
    /// when there is none.
    pub upload: &'a str,
}

/// What is signed, in this order, each on its own line.
fn message(request: &SignedRequest<'_>, time: u64, nonce: &str) -> String {
    let SignedRequest {
        method,
        authority,
        target,
        length,
        content_range,
        upload,
    } = request;
    let authority = authority.to_ascii_lowercase();
    format!("{method}\n{authority}\n{target}\n{length}\n{content_range}\n{upload}\n{time}\n{nonce}")
}

fn mac(token: &str, message: &str) -> blake3::Hash {
    let key = blake3::derive_key(KEY_CONTEXT, token.as_bytes());
    blake3::keyed_hash(&key, message.as_bytes())
}

/// Seconds since the Unix epoch.
fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The `Authorization` value signing `request`, made now with a fresh
/// random nonce.
///
/// # Errors
/// The kernel gave no random bytes for the nonce.
///
/// # Example
/// ```
/// use flexio_net::signing::{sign, SignedRequest};
/// let request = SignedRequest { method: "PUT", target: "/a", length: 5, ..Default::default() };
/// let value = sign("0123456789abcdef", &request).unwrap();
/// assert!(value.starts_with("FlexioSig t="));
/// ```
pub fn sign(token: &str, request: &SignedRequest<'_>) -> std::io::Result<String> {
    let mut nonce = [0u8; 16];
    let mut filled = 0;
    while filled < nonce.len() {
        filled +=
            rustix::rand::getrandom(&mut nonce[filled..], rustix::rand::GetRandomFlags::empty())?;
    }
    let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    Ok(sign_with(token, request, now_unix(), &nonce))
}

/// [`sign`] with the time and nonce given.
pub fn sign_with(token: &str, request: &SignedRequest<'_>, time: u64, nonce: &str) -> String {
    let signature = mac(token, &message(request, time, nonce));
    format!("{SCHEME} t={time}, n={nonce}, s={}", signature.to_hex())
}

/// Why a signed request was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not a well-formed `FlexioSig` value (401).
    Malformed(&'static str),
    /// The signature does not match this request under the token (401).
    BadSignature,
    /// Its time is too far from the server's clock (401), by this many
    /// seconds (positive: from the future).
    Stale(i64),
    /// Its nonce was used before (401): a replay.
    Replayed,
    /// Signed before this server started (401): its nonce may have been
    /// taken by the server this one replaced.
    BeforeStart,
    /// Too many signed requests in the window to remember (503).
    Busy,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Malformed(why) => write!(f, "a malformed {SCHEME} authorization: {why}"),
            Refusal::BadSignature => {
                write!(f, "the signature does not match this request under the server's token")
            }
            Refusal::Stale(seconds) => write!(
                f,
                "the request was signed {} s {} the server's clock (at most {} s apart are taken: set the clocks)",
                seconds.unsigned_abs(),
                if *seconds > 0 { "ahead of" } else { "behind" },
                MAX_CLOCK_SKEW.as_secs()
            ),
            Refusal::Replayed => write!(f, "this signed request was used before (a replay)"),
            Refusal::BeforeStart => write!(
                f,
                "the request was signed before this server started (a replay across a restart, or a clock behind the server's): sign it again"
            ),
            Refusal::Busy => write!(f, "too many signed requests at once; try again"),
        }
    }
}

/// The parts of a `FlexioSig` value.
struct Parts<'a> {
    time: u64,
    nonce: &'a str,
    signature: &'a str,
}

fn parse(value: &str) -> Result<Parts<'_>, Refusal> {
    let fields = value
        .strip_prefix(SCHEME)
        .and_then(|rest| rest.strip_prefix(' '))
        .ok_or(Refusal::Malformed("not the FlexioSig scheme"))?;
    let (mut time, mut nonce, mut signature) = (None, None, None);
    for field in fields.split(',') {
        let (name, value) = field
            .trim()
            .split_once('=')
            .ok_or(Refusal::Malformed("a field without '='"))?;
        let slot = match name {
            "t" => &mut time,
            "n" => &mut nonce,
            "s" => &mut signature,
            _ => return Err(Refusal::Malformed("an unknown field")),
        };
        if slot.replace(value).is_some() {
            return Err(Refusal::Malformed("a field given twice"));
        }
    }
    let hex =
        |text: &str, len: usize| text.len() == len && text.bytes().all(|b| b.is_ascii_hexdigit());
    let time = time
        .filter(|t| !t.is_empty() && t.len() <= 20 && t.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|t| t.parse().ok())
        .ok_or(Refusal::Malformed("t is not a time in seconds"))?;
    let nonce = nonce
        .filter(|n| hex(n, 32))
        .ok_or(Refusal::Malformed("n is not 32 hex digits"))?;
    let signature = signature
        .filter(|s| hex(s, 64))
        .ok_or(Refusal::Malformed("s is not 64 hex digits"))?;
    Ok(Parts {
        time,
        nonce,
        signature,
    })
}

/// The nonces of signed requests taken within the window, each with its
/// time; older ones are forgotten as new ones come (a request that old is
/// refused as stale anyway).
#[derive(Debug)]
pub struct SeenNonces {
    seen: Mutex<HashMap<u128, u64>>,
    /// When this memory began (seconds since the epoch): nonces of
    /// requests signed earlier are not in it, so those are refused.
    since: u64,
}

impl Default for SeenNonces {
    /// An empty memory that begins now.
    fn default() -> Self {
        SeenNonces::since(now_unix())
    }
}

impl SeenNonces {
    /// An empty memory that began at `since` (seconds since the epoch).
    pub fn since(since: u64) -> Self {
        SeenNonces {
            seen: Mutex::new(HashMap::new()),
            since,
        }
    }

    /// Records `nonce` (32 hex digits) signed at `time`; `Err` when it
    /// was taken before or there is no room.
    fn take(&self, nonce: &str, time: u64, now: u64) -> Result<(), Refusal> {
        let key = u128::from_str_radix(nonce, 16).map_err(|_| Refusal::Malformed("n"))?;
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.contains_key(&key) {
            return Err(Refusal::Replayed);
        }
        if seen.len() >= MAX_REMEMBERED_NONCES {
            let horizon = now.saturating_sub(2 * MAX_CLOCK_SKEW.as_secs());
            seen.retain(|_, signed| *signed >= horizon);
            if seen.len() >= MAX_REMEMBERED_NONCES {
                return Err(Refusal::Busy);
            }
        }
        seen.insert(key, time);
        Ok(())
    }
}

/// Checks a signed request's `Authorization` value against the token,
/// the request and the server's clock, and takes its nonce.
///
/// # Errors
/// The [`Refusal`] saying why the request is not authorised.
///
/// # Example
/// ```
/// use flexio_net::signing::{sign, verify, SeenNonces, SignedRequest, Refusal};
/// let token = "0123456789abcdef";
/// let seen = SeenNonces::default();
/// let a = SignedRequest { method: "PUT", target: "/a", length: 5, ..Default::default() };
/// let value = sign(token, &a).unwrap();
/// assert_eq!(verify(token, &value, &a, &seen), Ok(()));
/// assert_eq!(verify(token, &value, &a, &seen), Err(Refusal::Replayed));
/// let value = sign(token, &a).unwrap();
/// let b = SignedRequest { target: "/b", ..a };
/// assert_eq!(verify(token, &value, &b, &seen), Err(Refusal::BadSignature));
/// ```
pub fn verify(
    token: &str,
    value: &str,
    request: &SignedRequest<'_>,
    seen: &SeenNonces,
) -> Result<(), Refusal> {
    verify_at(token, value, request, seen, now_unix())
}

fn verify_at(
    token: &str,
    value: &str,
    request: &SignedRequest<'_>,
    seen: &SeenNonces,
    now: u64,
) -> Result<(), Refusal> {
    let parts = parse(value.trim())?;
    let expected = mac(token, &message(request, parts.time, parts.nonce));
    let given = blake3::Hash::from_hex(parts.signature).map_err(|_| Refusal::Malformed("s"))?;
    // blake3::Hash compares in constant time.
    if given != expected {
        return Err(Refusal::BadSignature);
    }
    let skew = parts.time as i128 - now as i128;
    if skew.unsigned_abs() > u128::from(MAX_CLOCK_SKEW.as_secs()) {
        return Err(Refusal::Stale(
            skew.clamp(i64::MIN.into(), i64::MAX.into()) as i64
        ));
    }
    if parts.time < seen.since {
        return Err(Refusal::BeforeStart);
    }
    seen.take(parts.nonce, parts.time, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123";
    const NONCE: &str = "00112233445566778899aabbccddeeff";

    fn put(target: &str, length: u64) -> SignedRequest<'_> {
        SignedRequest {
            method: "PUT",
            target,
            length,
            ..Default::default()
        }
    }

    #[test]
    fn a_signature_holds_only_for_its_request_token_and_time() {
        let seen = SeenNonces::since(0);
        let signed = SignedRequest {
            content_range: "bytes 0-9/20",
            upload: "ab",
            ..put("/dir/a", 10)
        };
        let value = sign_with(TOKEN, &signed, 1000, NONCE);
        for (token, request) in [
            ("another-token-of-16", signed),
            (
                TOKEN,
                SignedRequest {
                    method: "DELETE",
                    ..signed
                },
            ),
            (
                TOKEN,
                SignedRequest {
                    target: "/dir/b",
                    ..signed
                },
            ),
            (
                TOKEN,
                SignedRequest {
                    length: 11,
                    ..signed
                },
            ),
            (
                TOKEN,
                SignedRequest {
                    content_range: "bytes 10-19/20",
                    ..signed
                },
            ),
            (
                TOKEN,
                SignedRequest {
                    upload: "cd",
                    ..signed
                },
            ),
        ] {
            assert_eq!(
                verify_at(token, &value, &request, &seen, 1000),
                Err(Refusal::BadSignature),
                "{token} {request:?}"
            );
        }
        // Another time in the header breaks it too.
        let moved = value.replace("t=1000", "t=1001");
        assert_eq!(
            verify_at(TOKEN, &moved, &signed, &seen, 1000),
            Err(Refusal::BadSignature)
        );
        assert_eq!(verify_at(TOKEN, &value, &signed, &seen, 1000), Ok(()));
    }

    /// Issue 24: a signed upload did not bind the `Host` it was sent to,
    /// and the nonce memory was lost on restart: a captured request
    /// replayed once on another server sharing the token, or after a
    /// restart.
    #[test]
    fn a_signed_upload_binds_its_host_and_does_not_outlive_a_restart() {
        let seen = SeenNonces::since(0);
        let to_a = SignedRequest {
            authority: "a.example:8080",
            ..put("/f", 3)
        };
        let value = sign_with(TOKEN, &to_a, 1000, NONCE);
        let to_b = SignedRequest {
            authority: "b.example:8080",
            ..to_a
        };
        assert_eq!(
            verify_at(TOKEN, &value, &to_b, &seen, 1000),
            Err(Refusal::BadSignature)
        );
        let same_host_other_case = SignedRequest {
            authority: "A.Example:8080",
            ..to_a
        };
        assert_eq!(
            verify_at(TOKEN, &value, &same_host_other_case, &seen, 1000),
            Ok(())
        );
        // The server restarts at 1010: its memory is empty, and a request
        // signed before it started is refused, not taken as new.
        let restarted = SeenNonces::since(1010);
        assert_eq!(
            verify_at(TOKEN, &value, &to_a, &restarted, 1020),
            Err(Refusal::BeforeStart)
        );
        let fresh = sign_with(TOKEN, &to_a, 1015, "ffeeddccbbaa99887766554433221100");
        assert_eq!(verify_at(TOKEN, &fresh, &to_a, &restarted, 1020), Ok(()));
    }

    #[test]
    fn a_nonce_is_taken_once() {
        let seen = SeenNonces::since(0);
        let value = sign_with(TOKEN, &put("/a", 1), 1000, NONCE);
        assert_eq!(verify_at(TOKEN, &value, &put("/a", 1), &seen, 1000), Ok(()));
        assert_eq!(
            verify_at(TOKEN, &value, &put("/a", 1), &seen, 1001),
            Err(Refusal::Replayed)
        );
    }

    #[test]
    fn a_request_signed_too_far_from_the_servers_clock_is_stale() {
        let seen = SeenNonces::since(0);
        let value = sign_with(TOKEN, &put("/a", 1), 1000, NONCE);
        let late = 1000 + MAX_CLOCK_SKEW.as_secs() + 1;
        assert_eq!(
            verify_at(TOKEN, &value, &put("/a", 1), &seen, late),
            Err(Refusal::Stale(-(MAX_CLOCK_SKEW.as_secs() as i64) - 1))
        );
        assert!(Refusal::Stale(-121).to_string().contains("121 s behind"));
        // Within the skew, either way: taken.
        assert_eq!(verify_at(TOKEN, &value, &put("/a", 1), &seen, 1100), Ok(()));
    }

    #[test]
    fn malformed_values_are_refused_before_any_hashing() {
        let seen = SeenNonces::since(0);
        let good = sign_with(TOKEN, &put("/a", 1), 1000, NONCE);
        for bad in [
            "Bearer abc".to_string(),
            "FlexioSig".to_string(),
            "FlexioSig t=1000".to_string(),
            good.replace("t=1000", "t=-5"),
            good.replace("t=1000", "t=99999999999999999999999"),
            good.replace(NONCE, "0011"),
            good.replace(NONCE, &"g".repeat(32)),
            good.replace(", s=", ", x=1, s="),
            format!("{good}, t=1000"),
            good[..good.len() - 2].to_string(),
        ] {
            assert!(
                matches!(
                    verify_at(TOKEN, &bad, &put("/a", 1), &seen, 1000),
                    Err(Refusal::Malformed(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn remembered_nonces_are_bounded() {
        let seen = SeenNonces::since(0);
        {
            let mut map = seen.seen.lock().unwrap();
            for i in 0..MAX_REMEMBERED_NONCES as u128 {
                map.insert(i + 1, 1000);
            }
        }
        // All within the window: no room.
        assert_eq!(seen.take(NONCE, 1000, 1000), Err(Refusal::Busy));
        // Later, the old ones are forgotten and there is room again.
        assert_eq!(seen.take(NONCE, 2000, 2000), Ok(()));
        assert_eq!(seen.seen.lock().unwrap().len(), 1);
    }

    #[test]
    fn fresh_signatures_use_fresh_nonces() {
        let a = sign(TOKEN, &put("/a", 1)).unwrap();
        let b = sign(TOKEN, &put("/a", 1)).unwrap();
        assert_ne!(a, b);
        let seen = SeenNonces::since(0);
        assert_eq!(verify(TOKEN, &a, &put("/a", 1), &seen), Ok(()));
        assert_eq!(verify(TOKEN, &b, &put("/a", 1), &seen), Ok(()));
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(crate::fuzz_config(4000))]

        /// Any Authorization value is refused without the token's
        /// signature, and nothing panics.
        #[test]
        fn fuzz_authorization_values_are_refused(value in "(FlexioSig )?\\PC{0,160}") {
            let seen = SeenNonces::since(0);
            prop_assert!(verify_at(TOKEN, &value, &put("/a", 1), &seen, 1000).is_err());
        }

        /// A real signature with one character changed is refused.
        #[test]
        fn fuzz_altered_signatures_are_refused(at in 0usize..200, to in any::<char>()) {
            let seen = SeenNonces::since(0);
            let value = sign_with(TOKEN, &put("/a", 1), 1000, NONCE);
            let mut chars: Vec<char> = value.chars().collect();
            let at = at % chars.len();
            prop_assume!(chars[at] != to);
            // Whitespace for whitespace between fields reads the same.
            prop_assume!(!(chars[at].is_whitespace() && to.is_whitespace()));
            chars[at] = to;
            let altered: String = chars.into_iter().collect();
            // Changing a hex digit's case keeps the same bytes.
            prop_assume!(!altered.eq_ignore_ascii_case(&value));
            prop_assert!(verify_at(TOKEN, &altered, &put("/a", 1), &seen, 1000).is_err());
        }
    }
}
