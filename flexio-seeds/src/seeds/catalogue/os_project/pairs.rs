//! Ours for the OS project's figures, read from the socket-pair cells,
//! and the sentences comparing them with the original's text.

use flexio::MechanismName::{self, *};

use super::super::super::measure::{self, series, shape, wall_s};
use super::super::super::Point;
use super::{ASYNC_GROUPS, FILE_COUNTS, METHODS, PAGE, SAMPLE_1, SAMPLE_2, SWEEP_SIZE};
use flexio_bench::model::CacheState::Cold;
use flexio_bench::model::{CellKey, Contender, Scenario};
use flexio_bench::stats::Summary;

/// The original's name of a side's method.
fn method(mechanism: MechanismName) -> &'static str {
    METHODS
        .iter()
        .find(|(m, _)| *m == mechanism)
        .map_or(mechanism.as_str(), |(_, name)| name)
}

/// The series of master `sender` -> slave `receiver`.
fn combination(sender: MechanismName, receiver: MechanismName) -> String {
    format!("{} -> {} (ours)", method(sender), method(receiver))
}

/// Whether `summary` is the pair `sender` -> `receiver` at `chunk`.
fn is_pair(summary: &Summary, sender: MechanismName, receiver: MechanismName, chunk: u64) -> bool {
    matches!(
        &summary.contender,
        Contender::Pair { sender: s, receiver: r, chunk: c }
            if *s == sender && *r == receiver && *c == chunk
    )
}

/// The pair's wall time in the cells passing `cell`, at `x(cell)`.
fn times(
    summaries: &[Summary],
    name: &str,
    (sender, receiver, chunk): (MechanismName, MechanismName, u64),
    cell: impl Fn(&CellKey) -> bool,
    x: impl Fn(&CellKey) -> f64,
) -> Vec<Point> {
    series(
        summaries,
        name,
        Scenario::SocketPair,
        cell,
        |s| is_pair(s, sender, receiver, chunk),
        |s| x(&s.cell),
        wall_s,
    )
}

/// The 4 combinations' times relative to file I/O -> file I/O's at the
/// same x (or at `base_x` when given).
fn combinations(
    summaries: &[Summary],
    cell: impl Fn(&CellKey) -> bool + Copy,
    x: impl Fn(&CellKey) -> f64 + Copy,
    base_x: Option<f64>,
) -> Vec<Point> {
    let base = times(summaries, "base", (ReadWrite, ReadWrite, PAGE), cell, x);
    let mut points = Vec::new();
    for (master, _) in METHODS {
        for (slave, _) in METHODS {
            let name = combination(master, slave);
            for p in times(summaries, &name, (master, slave, PAGE), cell, x) {
                if let Some(base) = measure::at(&base, "base", base_x.unwrap_or(p.x)) {
                    points.push(p.over(base));
                }
            }
        }
    }
    points
}

pub(super) fn samples_ours(summaries: &[Summary]) -> Vec<Point> {
    let sample = |c: &CellKey| c.chunk == 0 && [SAMPLE_1, SAMPLE_2].contains(&(c.size, c.flows));
    combinations(summaries, sample, |c| c.size as f64 / measure::MB, None)
}

pub(super) fn compare_samples(original: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let at = |master, slave, input: (u64, u32)| {
        measure::at(
            ours,
            &combination(master, slave),
            input.0 as f64 / measure::MB,
        )
        .unwrap_or(f64::NAN)
    };
    let theirs = original.iter().map(|p| p.y).fold(f64::NAN, f64::max);
    let (both, slave, master) = (
        at(Mmap, Mmap, SAMPLE_2),
        at(ReadWrite, Mmap, SAMPLE_2),
        at(Mmap, ReadWrite, SAMPLE_2),
    );
    format!(
        "Ours at sample input 2 (11 MiB): mmap on both sides takes {both:.2}x file I/O's time, \
         an mmap slave alone {slave:.2}x, an mmap master alone {master:.2}x; at sample input 1 \
         (ten small files) mmap on both sides takes {:.2}x. The original's mmap took {theirs:.1}x \
         at 11 MB: {} — at one page per map, mmap pays a map, a page fault and an unmap for \
         every 4 KiB where file I/O pays one system call and a copy; the original's did so in \
         a kernel module on a 2020 notebook, ours in user space on this machine.",
        at(Mmap, Mmap, SAMPLE_1),
        shape(both > 1.0)
    )
}

pub(super) fn files_ours(summaries: &[Summary]) -> Vec<Point> {
    let total = summaries
        .iter()
        .filter(|s| {
            s.cell.scenario == Scenario::SocketPair
                && s.cell.size > SWEEP_SIZE
                && s.cell.connection_per_file
        })
        .map(|s| s.cell.size)
        .max();
    let Some(total) = total else {
        return Vec::new();
    };
    // Figure 5's cells: a connection per file, the sources cold.
    let generated = move |c: &CellKey| {
        c.chunk == 0
            && c.size == total
            && FILE_COUNTS.contains(&c.flows)
            && c.connection_per_file
            && c.cache == Cold
    };
    combinations(summaries, generated, |c| f64::from(c.flows), Some(1.0))
}

pub(super) fn compare_files(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let ratio = |master, slave, files: f64| {
        measure::at(ours, &combination(master, slave), files).unwrap_or(f64::NAN)
    };
    let slave = ratio(ReadWrite, Mmap, 1.0) / ratio(ReadWrite, ReadWrite, 1.0);
    let ten: Vec<f64> = METHODS
        .iter()
        .flat_map(|&(m, _)| METHODS.iter().map(move |&(s, _)| (m, s)))
        .map(|(m, s)| ratio(m, s, 10.0))
        .collect();
    let spread =
        ten.iter().copied().fold(f64::NAN, f64::max) / ten.iter().copied().fold(f64::NAN, f64::min);
    let point = |files: f64| {
        let name = combination(ReadWrite, ReadWrite);
        ours.iter().find(|p| p.series == name && p.x == files)
    };
    // Ten files against one: "no difference" where the rounds overlap.
    let ten_files = match (point(1.0), point(10.0)) {
        (Some(one), Some(ten)) if !measure::differs(one, ten) => format!(
            "takes no different a time from one file ({:.2}x, within the rounds' spread)",
            ten.y / one.y
        ),
        _ => format!(
            "takes {:.2}x its one-file time",
            ratio(ReadWrite, ReadWrite, 10.0)
        ),
    };
    format!(
        "Ours with one file: an mmap slave takes {slave:.2}x a file I/O slave's time (both \
         masters file I/O); the original's took about 0.83x (20% faster): {}. With ten files \
         file I/O -> file I/O {ten_files}, and the four combinations lie \
         within {spread:.2}x of each other (the original's were \"very close\" at ten files). \
         Each file has its own connection, as the original's had, and its source is read \
         cold; at one page per map, a map, a page fault and an unmap \
         per 4 KiB set mmap's pace on either side, against file I/O's one call and copy.",
        shape(slave < 1.0),
    )
}

const BUFFER: &str = "file I/O by buffer size (ours)";
const MAP: &str = "mmap by map size (ours)";

pub(super) fn sweep_ours(summaries: &[Summary]) -> Vec<Point> {
    let one = |mechanism: MechanismName, name: &str| {
        series(
            summaries,
            name,
            Scenario::SocketPair,
            |c| c.chunk != 0 && c.size == SWEEP_SIZE,
            |s| is_pair(s, mechanism, mechanism, s.cell.chunk),
            |s| s.cell.chunk as f64 / 1024.0,
            wall_s,
        )
    };
    // Each series over its own time at 4 KiB: the original's "a larger map
    // up to three times faster" is mmap against mmap.
    let mut points = Vec::new();
    for (mechanism, name) in [(ReadWrite, BUFFER), (Mmap, MAP)] {
        let line = one(mechanism, name);
        let Some(base) = measure::at(&line, name, PAGE as f64 / 1024.0) else {
            continue;
        };
        points.extend(line.into_iter().map(|p| p.over(base)));
    }
    points
}

/// What the OS project's text states of Figure 6 (sections 3.2, 3.4); its
/// map sizes are not given, so the two ends are drawn at our sweep's.
pub(crate) const THREE_TIMES: &str = "original (text): a larger map up to 3x faster";

/// The stated value on Figure 6's axis: mmap's time at the largest map a
/// third of that at the smallest.
pub(super) fn sweep_original() -> Vec<Point> {
    vec![
        Point::new(THREE_TIMES, PAGE as f64 / 1024.0, 1.0),
        Point::new(THREE_TIMES, 8192.0, 1.0 / 3.0),
    ]
}

pub(super) fn compare_sweep(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let gain = |name: &str| {
        let (low, high) = measure::x_extent(ours, name)?;
        Some(measure::at(ours, name, low)? / measure::at(ours, name, high)?)
    };
    let (Some(map), Some(buffer)) = (gain(MAP), gain(BUFFER)) else {
        return "file I/O or mmap did not run at both ends of the sweep.".into();
    };
    format!(
        "Ours: from 4 KiB to 8 MiB on both sides, mmap gets {map:.2}x faster and file I/O \
         {buffer:.2}x; the original found larger maps up to three times faster and larger \
         buffers faster by less: {} — fewer map calls and faults per byte for mmap, fewer \
         system calls for read-write, whose copy per byte stays.",
        shape(map > 1.0 && map > buffer)
    )
}

const GROUPS: [&str; 3] = ["file I/O both sides", "mmap master", "mmap slave"];

pub(super) fn async_ours(summaries: &[Summary]) -> Vec<Point> {
    let mut points = Vec::new();
    for (x, [sync, not_sync]) in ASYNC_GROUPS.iter().enumerate() {
        let time = |(sender, receiver): (MechanismName, MechanismName)| {
            times(
                summaries,
                "",
                (sender, receiver, PAGE),
                |c| c.chunk == 0 && c.size == SWEEP_SIZE && c.flows == 1,
                |_| x as f64,
            )
            .first()
            .cloned()
        };
        if let (Some(sync), Some(uring)) = (time(*sync), time(*not_sync)) {
            // Each over the synchronous median: its rounds' spread stays.
            let mut synchronous = sync.over(sync.y);
            synchronous.series = "synchronous: read-write (ours)".into();
            let mut asynchronous = uring.over(sync.y);
            asynchronous.series = "asynchronous: io_uring (ours)".into();
            points.push(synchronous);
            points.push(asynchronous);
        }
    }
    points
}

pub(super) fn compare_async(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let ratios: Vec<f64> = (0..GROUPS.len())
        .map(|x| measure::at(ours, "asynchronous: io_uring (ours)", x as f64).unwrap_or(f64::NAN))
        .collect();
    let said: Vec<String> = GROUPS
        .iter()
        .zip(&ratios)
        .map(|(group, r)| format!("{r:.2}x with {group}"))
        .collect();
    let faster = ratios.iter().all(|r| *r < 1.0);
    let why = if faster {
        "io_uring keeps several 4 KiB requests in flight where a blocking call waits for each, \
         which is what the original gained from not waiting on a full buffer"
    } else {
        "over loopback both copy the same bytes and a blocking loop already keeps the socket \
         full, so there is little waiting to save, and each 4 KiB request costs io_uring a \
         submission and a completion"
    };
    format!(
        "Ours: io_uring takes {} of blocking read-write's time; the original found \
         asynchronous faster in every case, by less with an mmap master: {} — {why}.",
        said.join(", "),
        shape(faster)
    )
}
