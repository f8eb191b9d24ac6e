//! A strict decoder of chunked request bodies (RFC 9112 §7.1), fed
//! whatever the socket gave: sizes of at most 16 hex digits (no
//! overflow), each line ended by CRLF (a bare LF is refused, as a reader
//! taking it differently is how requests are smuggled), extensions and
//! trailers bounded and dropped, and the body's total bounded by a cap.
//!
//! [`Chunked::room`] says how many bytes the rest of the body holds at
//! least, so the reader never takes a byte past its end — the next
//! request's, on a kept-alive connection.

/// The longest chunk-size line (digits, extensions, CRLF).
const MAX_SIZE_LINE: usize = 1024;

/// The most bytes of trailer fields, over all their lines.
pub(crate) const MAX_TRAILERS: usize = 8 << 10;

/// The most hex digits of a chunk size: 16 fill a `u64`.
const MAX_DIGITS: u8 = 16;

/// The smallest rest of a body after a chunk's data: `0\r\n\r\n`.
const LAST_CHUNK: u64 = 5;

/// Why a body is refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ChunkError {
    /// Not chunked as RFC 9112 has it: 400.
    Malformed(String),
    /// The body grows past the cap: 413.
    TooLarge(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// A chunk-size line: its value so far, its digits, its length, and
    /// whether its CR came (`in_ext`: past the digits).
    Size {
        value: u64,
        digits: u8,
        length: usize,
        in_ext: bool,
        cr: bool,
    },
    /// `left` bytes of a chunk's data.
    Data {
        left: u64,
    },
    /// The CRLF after a chunk's data.
    DataEnd {
        cr: bool,
    },
    /// Trailer lines: bytes in the current one, whether its CR came.
    Trailer {
        line: usize,
        cr: bool,
    },
    Done,
}

/// A chunked body being decoded.
#[derive(Debug)]
pub(crate) struct Chunked {
    state: State,
    /// Data bytes so far.
    pub received: u64,
    /// The most data bytes taken.
    cap: u64,
    trailers: usize,
}

const FIRST_LINE: State = State::Size {
    value: 0,
    digits: 0,
    length: 0,
    in_ext: false,
    cr: false,
};

impl Chunked {
    /// A body of at most `cap` data bytes.
    pub fn new(cap: u64) -> Chunked {
        Chunked {
            state: FIRST_LINE,
            received: 0,
            cap,
            trailers: 0,
        }
    }

    /// Whether the body has ended (its trailers too).
    pub fn done(&self) -> bool {
        self.state == State::Done
    }

    /// Bytes the rest of the body holds at least (never more): what may
    /// be read without taking any of the next request's.
    pub fn room(&self) -> u64 {
        let after_data = |size: u64| {
            if size == 0 {
                2
            } else {
                size.saturating_add(2 + LAST_CHUNK)
            }
        };
        match self.state {
            State::Size { digits: 0, .. } => LAST_CHUNK,
            State::Size {
                value, cr: false, ..
            } => after_data(value).saturating_add(2),
            State::Size {
                value, cr: true, ..
            } => after_data(value).saturating_add(1),
            State::Data { left } => left.saturating_add(2 + LAST_CHUNK),
            State::DataEnd { cr } => LAST_CHUNK + if cr { 1 } else { 2 },
            State::Trailer { line: 0, cr: false } => 2,
            State::Trailer { line: 0, cr: true } => 1,
            State::Trailer { cr: false, .. } => 4,
            State::Trailer { cr: true, .. } => 3,
            State::Done => 0,
        }
    }

    /// Decodes `input` (at most [`Self::room`] bytes), handing each run
    /// of data bytes to `data`; stops at the first error of either.
    pub fn feed<E: From<ChunkError>>(
        &mut self,
        input: &[u8],
        mut data: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut at = 0;
        while at < input.len() {
            if let State::Data { left } = self.state {
                let run = (input.len() - at).min(usize::try_from(left).unwrap_or(usize::MAX));
                data(&input[at..at + run])?;
                at += run;
                self.state = match left - run as u64 {
                    0 => State::DataEnd { cr: false },
                    left => State::Data { left },
                };
                continue;
            }
            self.byte(input[at])?;
            at += 1;
        }
        Ok(())
    }

    /// Takes one byte outside a chunk's data.
    fn byte(&mut self, byte: u8) -> Result<(), ChunkError> {
        let bad = |why: &str| Err(ChunkError::Malformed(why.to_string()));
        self.state = match self.state {
            State::Size {
                value,
                digits,
                length,
                in_ext,
                cr,
            } => {
                if length >= MAX_SIZE_LINE {
                    return bad("a chunk-size line over 1024 bytes");
                }
                let length = length + 1;
                match (cr, byte) {
                    (true, b'\n') if digits == 0 => return bad("a chunk-size line without a size"),
                    (true, b'\n') => self.chunk(value)?,
                    (true, _) => return bad("a CR without LF after a chunk size"),
                    (false, b'\r') => State::Size {
                        value,
                        digits,
                        length,
                        in_ext,
                        cr: true,
                    },
                    (false, b'\n') => return bad("a chunk-size line ended by a bare LF"),
                    (false, _) if !in_ext && byte.is_ascii_hexdigit() => {
                        if digits >= MAX_DIGITS {
                            return bad("a chunk size over 16 hex digits");
                        }
                        let digit = (byte as char).to_digit(16).unwrap_or(0) as u64;
                        State::Size {
                            value: value << 4 | digit,
                            digits: digits + 1,
                            length,
                            in_ext,
                            cr,
                        }
                    }
                    (false, b';' | b' ' | b'\t') if digits > 0 => State::Size {
                        value,
                        digits,
                        length,
                        in_ext: true,
                        cr,
                    },
                    (false, _) if in_ext && (byte == b'\t' || !byte.is_ascii_control()) => {
                        State::Size {
                            value,
                            digits,
                            length,
                            in_ext,
                            cr,
                        }
                    }
                    (false, _) => return bad("a chunk size that is not hex digits"),
                }
            }
            State::DataEnd { cr: false } if byte == b'\r' => State::DataEnd { cr: true },
            State::DataEnd { cr: true } if byte == b'\n' => FIRST_LINE,
            State::DataEnd { .. } => return bad("a chunk's data not followed by CRLF"),
            State::Trailer { line, cr } => {
                self.trailers += 1;
                if self.trailers > MAX_TRAILERS {
                    return bad("trailer fields over 8 KiB");
                }
                match (cr, byte) {
                    (true, b'\n') if line == 0 => State::Done,
                    (true, b'\n') => State::Trailer { line: 0, cr: false },
                    (true, _) => return bad("a CR without LF in the trailer fields"),
                    (false, b'\r') => State::Trailer { line, cr: true },
                    (false, b'\n') => return bad("a trailer line ended by a bare LF"),
                    (false, _) if byte == b'\t' || !byte.is_ascii_control() => {
                        State::Trailer { line: line + 1, cr }
                    }
                    (false, _) => return bad("a control byte in the trailer fields"),
                }
            }
            State::Data { .. } => unreachable!("data runs are taken whole in feed"),
            State::Done => return bad("bytes after the end of the chunked body"),
        };
        Ok(())
    }

    /// A chunk of `size` bytes announced: its data, or the trailers
    /// after the last one.
    fn chunk(&mut self, size: u64) -> Result<State, ChunkError> {
        if size == 0 {
            return Ok(State::Trailer { line: 0, cr: false });
        }
        let total = self.received.saturating_add(size);
        if total > self.cap {
            return Err(ChunkError::TooLarge(self.cap));
        }
        self.received = total;
        Ok(State::Data { left: size })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `body` fed in pieces of `step` bytes, each no more than
    /// the room; the data, or the error.
    fn decode(body: &[u8], cap: u64, step: usize) -> Result<Vec<u8>, ChunkError> {
        let mut chunked = Chunked::new(cap);
        let mut out = Vec::new();
        let mut at = 0;
        while !chunked.done() {
            assert!(at < body.len(), "the decoder wants more than the body");
            let room = usize::try_from(chunked.room()).unwrap_or(usize::MAX);
            assert!(room >= 1);
            let take = step.min(room).min(body.len() - at);
            chunked.feed(&body[at..at + take], |run: &[u8]| {
                out.extend_from_slice(run);
                Ok::<(), ChunkError>(())
            })?;
            at += take;
        }
        assert_eq!(at, body.len(), "the body ends where the decoder does");
        Ok(out)
    }

    #[test]
    fn odd_chunks_extensions_and_trailers_decode_exactly_and_never_read_past_the_end() {
        let body = b"3;name=value\r\nabc\r\n1\r\nd\r\n00a \t;x\r\n0123456789\r\n0\r\nX-Sum: 1\r\nY: 2\r\n\r\n";
        for step in [1, 2, 3, 7, 1000] {
            assert_eq!(
                decode(body, 100, step).unwrap(),
                b"abcd0123456789",
                "step {step}"
            );
        }
        assert_eq!(decode(b"0\r\n\r\n", 0, 1000).unwrap(), b"");
    }

    #[test]
    fn malformed_bodies_are_refused() {
        for body in [
            &b"x\r\n"[..],
            b"\r\n",
            b"3\nabc\r\n0\r\n\r\n",
            b"3\r\nabcX\r\n",
            b"3\rx",
            b"11111111111111111\r\n",
            b";ext\r\n",
            b"0\r\nTrailer\n",
            b"-1\r\n",
            b"+1\r\n",
        ] {
            let result = decode(body, u64::MAX, 1000);
            assert!(
                matches!(result, Err(ChunkError::Malformed(_))),
                "{:?}: {result:?}",
                String::from_utf8_lossy(body)
            );
        }
        let long_line = [b"1;".as_slice(), &[b'a'; 1100]].concat();
        assert!(matches!(
            decode(&long_line, 10, 1000),
            Err(ChunkError::Malformed(_))
        ));
        let mut trailers = b"0\r\n".to_vec();
        trailers.extend(std::iter::repeat_n(b"X: y\r\n".as_slice(), 2000).flatten());
        assert!(matches!(
            decode(&trailers, 10, 1000),
            Err(ChunkError::Malformed(_))
        ));
    }

    #[test]
    fn sizes_past_the_cap_are_refused_before_their_data() {
        assert_eq!(
            decode(b"ffffffffffffffff\r\n", 10, 1000),
            Err(ChunkError::TooLarge(10))
        );
        assert_eq!(
            decode(b"5\r\nabcde\r\n6\r\n", 10, 1000),
            Err(ChunkError::TooLarge(10))
        );
        assert_eq!(
            decode(b"5\r\nabcde\r\n5\r\nfghij\r\n0\r\n\r\n", 10, 3).unwrap(),
            b"abcdefghij"
        );
    }
}
