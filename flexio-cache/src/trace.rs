//! Block traces: a sequence of block keys, one per reference.
//!
//! Two sources:
//! - the ARC traces' `.lis` text format, plain or zstd-compressed
//!   (`OLTP.lis.zst`, `P3.lis.zst` from Megiddo and Modha, "ARC: A
//!   Self-Tuning, Low Overhead Replacement Cache", USENIX FAST 2003 —
//!   cite that paper wherever those traces are used). Each line is
//!   `START COUNT X Y`: a request for the `COUNT` 512-byte blocks from
//!   `START` on, each block one reference in order, as the paper counts
//!   them; the last two fields are not used;
//! - generated traces with a fixed seed, named by a spec such as
//!   `zipf:blocks=100000,alpha=0.9,len=1000000` (see [`Generator`]).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::{Error, Result};

/// The ARC paper's Table VIII row for the OLTP trace: cache size in
/// 512-byte pages, LRU hit ratio (%) and ARC hit ratio (%).
///
/// Megiddo and Modha, "ARC: A Self-Tuning, Low Overhead Replacement
/// Cache", USENIX FAST 2003, Table VIII.
pub const ARC_PAPER_OLTP: [(usize, f64, f64); 5] = [
    (1000, 32.83, 38.93),
    (2000, 42.47, 46.08),
    (5000, 53.65, 55.25),
    (10000, 60.70, 61.87),
    (15000, 64.63, 65.40),
];

/// A block trace: its name and its references.
#[derive(Clone, Debug)]
pub struct Trace {
    /// A file name or a generator spec.
    pub name: String,
    /// One block key per reference, in order.
    pub keys: Vec<u64>,
}

impl Trace {
    /// A trace from a path (a `.lis` file, zstd-compressed when its name
    /// ends in `.zst`) or from a generator spec (`zipf:…`, `scan:…`,
    /// `loop:…`, `zipf+scan:…`).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read or decompressed,
    /// [`Error::Trace`] for a malformed line or spec.
    ///
    /// # Examples
    /// ```
    /// use flexio_cache::trace::Trace;
    /// let trace = Trace::open("loop:blocks=3,len=7").unwrap();
    /// assert_eq!(trace.keys, [0, 1, 2, 0, 1, 2, 0]);
    /// ```
    pub fn open(spec: &str) -> Result<Trace> {
        if let Some(generator) = Generator::parse(spec)? {
            return Ok(Trace {
                name: spec.to_string(),
                keys: generator.generate(),
            });
        }
        Trace::read_lis(Path::new(spec))
    }

    /// Reads a `.lis` trace, decompressing it on the fly when its name ends
    /// in `.zst`.
    ///
    /// # Errors
    /// As [`Trace::open`].
    pub fn read_lis(path: &Path) -> Result<Trace> {
        let io = |op, source| Error::Io {
            op,
            path: path.display().to_string(),
            offset: None,
            source,
        };
        let file = File::open(path).map_err(|e| io("open", e))?;
        let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "zst") {
            Box::new(zstd::Decoder::new(file).map_err(|e| io("zstd decode", e))?)
        } else {
            Box::new(file)
        };
        let mut keys = Vec::new();
        for (number, line) in BufReader::with_capacity(1 << 20, reader)
            .lines()
            .enumerate()
        {
            let line = line.map_err(|e| io("read", e))?;
            let (start, count) = parse_lis_line(&line).ok_or_else(|| {
                Error::Trace(format!(
                    "{} line {}: expected `START COUNT X Y`, found {line:?}",
                    path.display(),
                    number + 1
                ))
            })?;
            keys.extend(start..start + count);
        }
        Ok(Trace {
            name: path.display().to_string(),
            keys,
        })
    }
}

fn parse_lis_line(line: &str) -> Option<(u64, u64)> {
    let mut fields = line.split_ascii_whitespace();
    let start = fields.next()?.parse().ok()?;
    let count: u64 = fields.next()?.parse().ok()?;
    (count < 1 << 32).then_some((start, count))
}

/// A generated trace, reproducible from its parameters (the seed is part of
/// them, 1 by default).
///
/// | spec | references |
/// | --- | --- |
/// | `zipf:blocks=B,alpha=A,len=L` | `L` draws from blocks `0..B`, block `k` with weight `1/(k+1)^A` |
/// | `scan:blocks=B,len=L` | `0, 1, …, L-1` (blocks is ignored; every reference is new) |
/// | `loop:blocks=B,len=L` | `0..B` over and over, `L` references |
/// | `zipf+scan:blocks=B,alpha=A,len=L,scan=F` | a zipf trace over `0..B` with a fraction `F` of its references replaced by a sequential scan of blocks from `B` on, never repeated |
/// | `shift:blocks=B,phase=P,len=L` | a working set of `B` blocks read uniformly, moving on by `B/2` blocks every `P` references: each block is read a few times, then never again |
/// | `zipf-shift:blocks=B,alpha=A,to=A2,len=L` | zipf over `0..B` with skew `A` for the first half, then skew `A2` over a reshuffled ranking for the second |
///
/// Shapes that break a fixed policy: `loop` with `B` a little over the
/// cache (LRU and ARC hit nothing), `zipf+scan` (a scan through a hot
/// set flushes LRU), `shift` (blocks that come back only once or twice
/// after a while: LRU's case, S3-FIFO's worst), `zipf-shift` (what was
/// popular stops being so midway).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Generator {
    /// Zipf-distributed references.
    Zipf {
        /// Distinct blocks.
        blocks: u64,
        /// The skew.
        alpha: f64,
        /// References.
        len: usize,
        /// The random seed.
        seed: u64,
    },
    /// A scan that never repeats.
    Scan {
        /// References.
        len: usize,
    },
    /// A loop over `blocks` blocks.
    Loop {
        /// Blocks in the loop.
        blocks: u64,
        /// References.
        len: usize,
    },
    /// A working set that moves on.
    Shift {
        /// Blocks in the working set.
        blocks: u64,
        /// References before it moves on by half its size.
        phase: usize,
        /// References.
        len: usize,
        /// The random seed.
        seed: u64,
    },
    /// A zipf whose skew and ranking change midway.
    ZipfShift {
        /// Distinct blocks.
        blocks: u64,
        /// The skew of the first half.
        alpha: f64,
        /// The skew of the second half.
        to: f64,
        /// References.
        len: usize,
        /// The random seed.
        seed: u64,
    },
    /// A zipf hot set interleaved with a one-pass scan.
    ZipfScan {
        /// Distinct blocks of the hot set.
        blocks: u64,
        /// The skew.
        alpha: f64,
        /// References.
        len: usize,
        /// The fraction of references that belong to the scan.
        scan: f64,
        /// The random seed.
        seed: u64,
    },
}

impl Generator {
    /// Parses a spec; `Ok(None)` when `spec` names no generator (a path).
    ///
    /// # Errors
    /// [`Error::Trace`] for an unknown or malformed parameter.
    pub fn parse(spec: &str) -> Result<Option<Generator>> {
        let Some((kind, params)) = spec.split_once(':') else {
            return Ok(None);
        };
        if !matches!(
            kind,
            "zipf" | "scan" | "loop" | "zipf+scan" | "shift" | "zipf-shift"
        ) {
            return Ok(None);
        }
        let bad = |what: String| Error::Trace(format!("trace spec {spec:?}: {what}"));
        let (mut blocks, mut alpha, mut len, mut scan, mut seed) =
            (100_000u64, 0.9, 1_000_000usize, 0.5, 1u64);
        let (mut phase, mut to) = (None, 0.5);
        for pair in params.split(',').filter(|p| !p.is_empty()) {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| bad(format!("{pair:?} is not name=value")))?;
            let number = || bad(format!("{name}={value:?} is not a number"));
            match name {
                "blocks" => blocks = value.parse().map_err(|_| number())?,
                "alpha" => alpha = value.parse().map_err(|_| number())?,
                "len" => len = value.parse().map_err(|_| number())?,
                "scan" => scan = value.parse().map_err(|_| number())?,
                "seed" => seed = value.parse().map_err(|_| number())?,
                "phase" => phase = Some(value.parse().map_err(|_| number())?),
                "to" => to = value.parse().map_err(|_| number())?,
                _ => return Err(bad(format!("unknown parameter {name:?}"))),
            }
        }
        if blocks == 0 || !(0.0..=1.0).contains(&scan) || alpha < 0.0 || to < 0.0 {
            return Err(bad(
                "blocks > 0, alpha >= 0, to >= 0 and 0 <= scan <= 1, please".into(),
            ));
        }
        // Zipf's table holds a float per block: keep it within memory.
        if blocks > 1 << 28 {
            return Err(bad(format!("blocks={blocks}: at most 2^28, please")));
        }
        let phase = phase.unwrap_or(2 * blocks as usize);
        if phase == 0 {
            return Err(bad("phase > 0, please".into()));
        }
        Ok(Some(match kind {
            "zipf" => Generator::Zipf {
                blocks,
                alpha,
                len,
                seed,
            },
            "scan" => Generator::Scan { len },
            "loop" => Generator::Loop { blocks, len },
            "shift" => Generator::Shift {
                blocks,
                phase,
                len,
                seed,
            },
            "zipf-shift" => Generator::ZipfShift {
                blocks,
                alpha,
                to,
                len,
                seed,
            },
            _ => Generator::ZipfScan {
                blocks,
                alpha,
                len,
                scan,
                seed,
            },
        }))
    }

    /// The references.
    pub fn generate(&self) -> Vec<u64> {
        match *self {
            Generator::Zipf {
                blocks,
                alpha,
                len,
                seed,
            } => {
                let zipf = Zipf::new(blocks, alpha);
                let mut random = SplitMix64(seed);
                (0..len).map(|_| zipf.sample(&mut random)).collect()
            }
            Generator::Scan { len } => (0..len as u64).collect(),
            Generator::Loop { blocks, len } => (0..len as u64).map(|i| i % blocks).collect(),
            Generator::Shift {
                blocks,
                phase,
                len,
                seed,
            } => {
                let mut random = SplitMix64(seed);
                (0..len)
                    .map(|i| (i / phase) as u64 * (blocks / 2).max(1) + random.below(blocks))
                    .collect()
            }
            Generator::ZipfShift {
                blocks,
                alpha,
                to,
                len,
                seed,
            } => {
                let mut random = SplitMix64(seed);
                let first = Zipf::new(blocks, alpha);
                let second = Zipf::new(blocks, to);
                // The second half's rank r is block (r * stride + B/3) mod
                // B, a stride coprime with B: every block, in another order.
                let stride = coprime_stride(blocks);
                (0..len)
                    .map(|i| {
                        if i < len / 2 {
                            first.sample(&mut random)
                        } else {
                            let rank = second.sample(&mut random);
                            ((u128::from(rank) * u128::from(stride) + u128::from(blocks / 3))
                                % u128::from(blocks)) as u64
                        }
                    })
                    .collect()
            }
            Generator::ZipfScan {
                blocks,
                alpha,
                len,
                scan,
                seed,
            } => {
                let zipf = Zipf::new(blocks, alpha);
                let mut random = SplitMix64(seed);
                let mut next_scan = blocks;
                (0..len)
                    .map(|_| {
                        if random.unit() < scan {
                            next_scan += 1;
                            next_scan - 1
                        } else {
                            zipf.sample(&mut random)
                        }
                    })
                    .collect()
            }
        }
    }
}

/// A zipf distribution over `0..n` by inverse transform on its
/// cumulative weights (n floats; binary search per draw).
pub(crate) struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    pub fn new(blocks: u64, alpha: f64) -> Self {
        let mut total = 0.0;
        let cumulative = (0..blocks)
            .map(|k| {
                total += 1.0 / ((k + 1) as f64).powf(alpha);
                total
            })
            .collect();
        Zipf { cumulative }
    }

    pub fn sample(&self, random: &mut SplitMix64) -> u64 {
        let target = random.unit() * self.cumulative.last().copied().unwrap_or(0.0);
        let index = self.cumulative.partition_point(|&c| c < target);
        index.min(self.cumulative.len() - 1) as u64
    }
}

/// An odd stride near `blocks` times the golden ratio's fraction that
/// shares no factor with `blocks`, so `r -> r * stride mod blocks` is a
/// permutation that scatters neighbouring ranks.
fn coprime_stride(blocks: u64) -> u64 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let mut stride = ((blocks as f64 * 0.618_033_988_7) as u64) | 1;
    while gcd(stride, blocks) != 1 {
        stride += 2;
    }
    stride
}

/// SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): tiny, fast and
/// reproducible, which is all a trace generator needs.
pub(crate) struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (`n > 0`), by the multiply-high
    /// method (Lemire, 2019) without its rejection step: the bias is
    /// below `n / 2^64`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::{Generator, Trace};

    #[test]
    fn generators_are_reproducible_and_shaped() {
        let zipf = Trace::open("zipf:blocks=1000,alpha=1.0,len=20000,seed=3").unwrap();
        assert_eq!(
            zipf.keys,
            Trace::open("zipf:blocks=1000,alpha=1.0,len=20000,seed=3")
                .unwrap()
                .keys
        );
        let zeros = zipf.keys.iter().filter(|&&k| k == 0).count();
        let tens = zipf.keys.iter().filter(|&&k| k == 9).count();
        assert!(
            zeros > 5 * tens,
            "block 0 is ten times as likely as block 9"
        );
        assert!(zipf.keys.iter().all(|&k| k < 1000));
        assert_eq!(Trace::open("scan:len=4").unwrap().keys, [0, 1, 2, 3]);
        let mix = Trace::open("zipf+scan:blocks=10,len=1000,scan=0.5").unwrap();
        let scanned: Vec<u64> = mix.keys.iter().copied().filter(|&k| k >= 10).collect();
        assert!((400..600).contains(&scanned.len()));
        assert!(
            scanned.windows(2).all(|w| w[1] == w[0] + 1),
            "the scan is sequential"
        );
        let shift = Trace::open("shift:blocks=100,phase=200,len=1000").unwrap();
        assert!(shift.keys[..200].iter().all(|&k| k < 100));
        assert!(shift.keys[800..].iter().all(|&k| (200..300).contains(&k)));
        let zipf_shift = Trace::open("zipf-shift:blocks=1000,alpha=1.2,to=1.2,len=20000").unwrap();
        let count = |keys: &[u64], key| keys.iter().filter(|&&k| k == key).count();
        let (first, second) = zipf_shift.keys.split_at(10_000);
        assert!(
            count(first, 0) > 10 * count(second, 0),
            "block 0 stops being the most popular"
        );
        assert!(Generator::parse("shift:blocks=10,phase=0").is_err());
        assert!(Generator::parse("zipf:blocks=0").is_err());
        assert!(Generator::parse("zipf:color=red").is_err());
        assert_eq!(Generator::parse("some/file.lis").unwrap(), None);
    }

    #[test]
    fn lis_lines_expand_to_one_reference_per_block() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.lis");
        std::fs::write(&path, "5 3 0 0\n100 1 7 7\n").unwrap();
        assert_eq!(Trace::read_lis(&path).unwrap().keys, [5, 6, 7, 100]);
        std::fs::write(&path, "5 x 0 0\n").unwrap();
        let error = Trace::read_lis(&path).unwrap_err().to_string();
        assert!(error.contains("line 1"), "{error}");
    }
}
