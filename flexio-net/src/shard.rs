//! Shards: which part of a tree one of N processes moves, so that N
//! processes started by anything (a Slurm job array, a Kubernetes Indexed
//! Job, a loop over `ssh`) move the whole tree exactly once between them,
//! balanced by bytes, without talking to each other.
//!
//! Every shard computes the same [`plan`] from the same list of files (the
//! server's manifest for `get`, the walked source for `put`): the files
//! in byte order of their paths are laid end to end on one line of
//! `total` bytes, and shard `k` takes the bytes from `k·total/N` to
//! `(k+1)·total/N`. A boundary that falls inside a file is moved:
//!
//! - to the nearest multiple of [`SPLIT_ALIGN`] in that file (a page:
//!   two writers on two hosts never share one) when the file may be split
//!   (more than one manifest chunk, [`CHUNK_SIZE`], and not
//!   [`Split::WholeFiles`]): the file is then fetched in ranges by
//!   several shards;
//! - otherwise to the file's start or end, whichever is nearer, so the
//!   file goes whole to the shard holding most of it.
//!
//! So at most N−1 files are split, a shard's part is one run of the
//! path-ordered tree, and with splitting each shard is within half a
//! chunk of `total/N` at each of its two boundaries (half a page where the
//! boundary falls in a large file).

use crate::error::{Error, Result};
use crate::manifest::CHUNK_SIZE;

/// Shard `index` of `count` (0-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which shard this process is, `0..count`.
    pub index: u32,
    /// How many shards share the tree.
    pub count: u32,
}

/// Where a split file may be cut: a multiple of this many bytes.
pub const SPLIT_ALIGN: u64 = 4096;

/// The most shards one tree is split into.
pub const MAX_SHARDS: u32 = 1 << 16;

impl Shard {
    /// Reads `K/N`, `auto` or `auto/N`. `auto` takes the index (and the
    /// count) from the job array that started this process, read through
    /// `env`:
    ///
    /// - Slurm: `SLURM_ARRAY_TASK_ID`, `SLURM_ARRAY_TASK_COUNT`, and
    ///   `SLURM_ARRAY_TASK_MIN` / `_STEP` when the array does not start at
    ///   0 or has a step (`--array=1-8:2`);
    /// - Kubernetes Indexed Jobs: `JOB_COMPLETION_INDEX`, with the count
    ///   given as `auto/N` (the Job's `completions`), since the pod is not
    ///   told it.
    ///
    /// # Errors
    /// [`Error::Usage`] for anything else, an index not below the count,
    /// `auto` with neither scheduler's variables, or an array whose task
    /// ids are not one evenly spaced run.
    ///
    /// # Examples
    /// ```
    /// use flexio_net::shard::Shard;
    /// let none = |_: &str| None;
    /// assert_eq!(Shard::parse("2/4", none).unwrap(), Shard { index: 2, count: 4 });
    /// let k8s = |name: &str| (name == "JOB_COMPLETION_INDEX").then(|| "3".to_string());
    /// assert_eq!(Shard::parse("auto/8", k8s).unwrap(), Shard { index: 3, count: 8 });
    /// assert!(Shard::parse("auto", none).is_err());
    /// ```
    pub fn parse(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Shard> {
        let usage = |why: String| Error::Usage(format!("--shard {text}: {why}"));
        let number = |what: &str, value: &str| -> Result<u32> {
            value
                .trim()
                .parse::<u32>()
                .map_err(|_| usage(format!("{what} {value:?} is not a whole number")))
        };
        let (index, count) = match text.split_once('/') {
            Some(("auto", count)) => (None, Some(number("the count", count)?)),
            Some((index, count)) => (
                Some(number("the index", index)?),
                Some(number("the count", count)?),
            ),
            None if text == "auto" => (None, None),
            None => return Err(usage("give K/N (0 ≤ K < N), auto or auto/N".into())),
        };
        let (index, count) = match index {
            Some(index) => (index, count.expect("K/N has a count")),
            None => from_scheduler(&env, count).map_err(usage)?,
        };
        if count == 0 || count > MAX_SHARDS {
            return Err(usage(format!("the count must be 1 to {MAX_SHARDS}")));
        }
        if index >= count {
            return Err(usage(format!(
                "shard {index} of {count}: the index counts from 0 and stays below the count"
            )));
        }
        Ok(Shard { index, count })
    }
}

/// The index and count from Slurm's or Kubernetes' variables; `given` is
/// the count written as `auto/N`.
fn from_scheduler(
    env: &impl Fn(&str) -> Option<String>,
    given: Option<u32>,
) -> std::result::Result<(u32, u32), String> {
    let read = |name: &str| -> std::result::Result<Option<u64>, String> {
        match env(name) {
            None => Ok(None),
            Some(value) => value
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("{name}={value:?} is not a whole number")),
        }
    };
    if let Some(id) = read("SLURM_ARRAY_TASK_ID")? {
        let count = read("SLURM_ARRAY_TASK_COUNT")?
            .ok_or("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not")?;
        let min = read("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        let step = read("SLURM_ARRAY_TASK_STEP")?.unwrap_or(1).max(1);
        let from_min = id
            .checked_sub(min)
            .filter(|d| d % step == 0)
            .ok_or_else(|| {
                format!(
                    "SLURM_ARRAY_TASK_ID={id} is not SLURM_ARRAY_TASK_MIN={min} plus a multiple of the step {step}: give --shard K/N for an array of listed ids"
                )
            })?;
        let index = from_min / step;
        if index >= count {
            return Err(format!(
                "task {id} is number {index} of an array of {count} (min {min}, step {step}): give --shard K/N for an array of listed ids"
            ));
        }
        if let Some(given) = given.filter(|&g| u64::from(g) != count) {
            return Err(format!(
                "the count {given} differs from SLURM_ARRAY_TASK_COUNT={count}"
            ));
        }
        let narrow = |v: u64| u32::try_from(v).map_err(|_| format!("{v} shards is too many"));
        return Ok((narrow(index)?, narrow(count)?));
    }
    if let Some(index) = read("JOB_COMPLETION_INDEX")? {
        let count = given.ok_or(
            "a Kubernetes Indexed Job tells the index (JOB_COMPLETION_INDEX) but not the count: give --shard auto/N with the Job's completions",
        )?;
        let index = u32::try_from(index).map_err(|_| format!("index {index} is too large"))?;
        return Ok((index, count));
    }
    Err(
        "neither SLURM_ARRAY_TASK_ID (a Slurm job array) nor JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is set: give --shard K/N"
            .into(),
    )
}

/// Whether a file may be split into ranges across shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// Files of more than one chunk may be split at chunk boundaries:
    /// for a destination every shard writes into.
    Ranges,
    /// Every file goes whole to one shard: for shards with destinations
    /// of their own.
    WholeFiles,
}

/// One shard's part of one file: bytes `start..end`, all of it when
/// `start == 0 && end == size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// Which file, as an index into the list given to [`plan`].
    pub file: usize,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// The shard that moves it.
    pub shard: u32,
}

/// Every shard's parts of `files` (given by path and size, in any order):
/// parts ordered by file path and offset, each naming its shard. Every
/// byte of every file is in exactly one part; an empty file is one empty
/// part.
///
/// # Examples
/// ```
/// use flexio_net::shard::{plan, Split};
/// let files = [(b"a".to_vec(), 3 << 20), (b"b".to_vec(), 1 << 20)];
/// let parts = plan(&files, 2, Split::Ranges);
/// // `a` is cut at 2 MiB (the middle of the 4 MiB line), `b` goes whole.
/// assert_eq!(parts.len(), 3);
/// assert_eq!((parts[0].end, parts[0].shard), (2 << 20, 0));
/// assert_eq!((parts[1].start, parts[1].shard), (2 << 20, 1));
/// assert_eq!((parts[2].file, parts[2].shard), (1, 1));
/// ```
pub fn plan(files: &[(Vec<u8>, u64)], count: u32, split: Split) -> Vec<Part> {
    let count = count.max(1);
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by(|&a, &b| files[a].0.cmp(&files[b].0).then(a.cmp(&b)));
    let mut starts = Vec::with_capacity(order.len());
    let mut total: u64 = 0;
    for &i in &order {
        starts.push(total);
        total += files[i].1;
    }
    // The boundaries between shards on the line, each moved to a chunk
    // boundary of the file it falls in, or to the file's nearer end.
    let boundaries: Vec<u64> = (0..=count)
        .map(|k| {
            let ideal = (u128::from(total) * u128::from(k) / u128::from(count)) as u64;
            let at = starts.partition_point(|&s| s <= ideal).saturating_sub(1);
            let (Some(&start), Some(&i)) = (starts.get(at), order.get(at)) else {
                return ideal;
            };
            let size = files[i].1;
            let into = ideal - start;
            if into == 0 || into >= size {
                ideal
            } else if split == Split::Ranges && size > CHUNK_SIZE {
                let cut = (into + SPLIT_ALIGN / 2) / SPLIT_ALIGN * SPLIT_ALIGN;
                start + cut.min(size)
            } else if into * 2 <= size {
                start
            } else {
                start + size
            }
        })
        .collect();
    // The shard owning the byte at line offset `at`: the last boundary at
    // or before it (boundaries may coincide: that shard is empty).
    let owner = |at: u64| -> u32 {
        let k = boundaries[..count as usize].partition_point(|&b| b <= at);
        k.saturating_sub(1) as u32
    };
    let mut parts = Vec::new();
    for (&i, &start) in order.iter().zip(&starts) {
        let size = files[i].1;
        if size == 0 {
            parts.push(Part {
                file: i,
                start: 0,
                end: 0,
                shard: owner(start),
            });
            continue;
        }
        let mut offset = 0;
        while offset < size {
            let shard = owner(start + offset);
            let next = boundaries[shard as usize + 1..]
                .iter()
                .find(|&&b| b > start + offset)
                .map_or(size, |&b| (b - start).min(size));
            parts.push(Part {
                file: i,
                start: offset,
                end: next,
                shard,
            });
            offset = next;
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn slurm_arrays_from_zero_one_or_with_a_step_give_a_dense_index() {
        let slurm = env(&[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]);
        assert_eq!(
            Shard::parse("auto", slurm).unwrap(),
            Shard { index: 2, count: 4 }
        );
        let from_one = env(&[
            ("SLURM_ARRAY_TASK_ID", "4"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
        ]);
        assert_eq!(
            Shard::parse("auto", from_one).unwrap(),
            Shard { index: 3, count: 4 }
        );
        let stepped = env(&[
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_STEP", "2"),
        ]);
        assert_eq!(
            Shard::parse("auto", stepped).unwrap(),
            Shard { index: 2, count: 4 }
        );
        let listed = env(&[
            ("SLURM_ARRAY_TASK_ID", "9"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
        ]);
        let error = Shard::parse("auto", listed).unwrap_err().to_string();
        assert!(error.contains("listed ids"), "{error}");
        let differs = env(&[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]);
        assert!(Shard::parse("auto/3", differs).is_err());
    }

    #[test]
    fn kubernetes_needs_the_count_and_nothing_set_is_a_clear_error() {
        let k8s = env(&[("JOB_COMPLETION_INDEX", "1")]);
        let error = Shard::parse("auto", &k8s).unwrap_err().to_string();
        assert!(error.contains("auto/N"), "{error}");
        assert_eq!(
            Shard::parse("auto/2", &k8s).unwrap(),
            Shard { index: 1, count: 2 }
        );
        assert!(Shard::parse("auto/1", &k8s).is_err(), "index 1 of 1");
        let error = Shard::parse("auto", env(&[])).unwrap_err().to_string();
        assert!(error.contains("SLURM_ARRAY_TASK_ID"), "{error}");
        for bad in ["4/4", "1/0", "x/2", "1", "-1/2", "1/2/3"] {
            assert!(Shard::parse(bad, env(&[])).is_err(), "{bad}");
        }
    }

    /// Bytes per shard, and a check that the parts cover every file
    /// exactly once, in order.
    fn bytes_per_shard(files: &[(Vec<u8>, u64)], parts: &[Part], count: u32) -> Vec<u64> {
        let mut bytes = vec![0u64; count as usize];
        let mut covered = vec![0u64; files.len()];
        for part in parts {
            assert_eq!(part.start, covered[part.file], "a gap or overlap");
            assert!(part.end >= part.start && part.end <= files[part.file].1);
            covered[part.file] = part.end;
            bytes[part.shard as usize] += part.end - part.start;
        }
        for (file, (_, size)) in files.iter().enumerate() {
            assert_eq!(covered[file], *size, "file {file} not covered");
        }
        bytes
    }

    #[test]
    fn small_and_large_files_split_four_ways_within_two_pages_of_a_quarter() {
        let mut files: Vec<(Vec<u8>, u64)> = (0..200)
            .map(|i| (format!("small/{i:03}").into_bytes(), 1000 + i * 30))
            .collect();
        files.push((b"big/a".to_vec(), 37 << 20));
        files.push((b"big/b".to_vec(), (5 << 20) + 3));
        let parts = plan(&files, 4, Split::Ranges);
        let bytes = bytes_per_shard(&files, &parts, 4);
        let mean = bytes.iter().sum::<u64>() / 4;
        // Small files of at most 8 KiB move a boundary 4 KiB at most.
        for b in &bytes {
            assert!(b.abs_diff(mean) <= 2 * SPLIT_ALIGN, "{bytes:?}");
        }
        for part in parts.iter().filter(|p| p.start > 0) {
            assert_eq!(part.start % SPLIT_ALIGN, 0);
        }
        let whole = plan(&files, 4, Split::WholeFiles);
        assert!(whole
            .iter()
            .all(|p| p.start == 0 && p.end == files[p.file].1));
    }

    proptest! {
        #[test]
        fn every_byte_is_in_exactly_one_part_and_every_shard_agrees(
            sizes in proptest::collection::vec(0u64..(8 << 20), 0..40),
            count in 1u32..9,
            whole in any::<bool>(),
        ) {
            let files: Vec<(Vec<u8>, u64)> = sizes
                .iter()
                .enumerate()
                .map(|(i, &s)| (format!("f{}", (i * 7919) % 101).into_bytes(), s))
                .collect();
            let split = if whole { Split::WholeFiles } else { Split::Ranges };
            let parts = plan(&files, count, split);
            let bytes = bytes_per_shard(&files, &parts, count);
            let total: u64 = sizes.iter().sum();
            prop_assert_eq!(bytes.iter().sum::<u64>(), total);
            // With ranges, a shard is off by at most half a chunk at each
            // of its two boundaries (a file of one chunk moved whole).
            if !whole {
                let share = total / u64::from(count);
                for b in &bytes {
                    prop_assert!(b.abs_diff(share) <= CHUNK_SIZE + 1, "{:?}", bytes);
                }
            }
            // The same list in another order gives the same parts.
            let mut reversed = files.clone();
            reversed.reverse();
            let again = plan(&reversed, count, split);
            let n = files.len();
            let mapped: Vec<Part> = again
                .iter()
                .map(|p| Part { file: n - 1 - p.file, ..*p })
                .collect();
            prop_assert_eq!(mapped.len(), parts.len());
            let mut a = parts.clone();
            let mut b = mapped;
            a.sort_by_key(|p| (p.file, p.start));
            b.sort_by_key(|p| (p.file, p.start));
            prop_assert_eq!(a, b);
        }
    }
}
