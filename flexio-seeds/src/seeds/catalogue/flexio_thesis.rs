//! FlexIO (Univ. of Kansas MS thesis, 2000), chapter 4: disk→disk by file
//! size and buffer size, disk→network, network→network, the WildForce
//! board. Its figures are plots; the seed holds the text only, so the
//! values here are those the text states.
//!
//! Beside the matrix's cells, the setups of `thesis_bench` (see `Setup`):
//! the disk -> disk cells with memory to spare, cold and synced through
//! the matrix's runner on a throttled ext4 and (4.7) ext2 device; the
//! 128 MiB memory cgroup by size (4.7-4.14) and by buffer (4.15) on the
//! same throttle, as `flexio copy` processes; the UDP socket-buffer sweep
//! (4.18) and the relay across three network namespaces (4.21-4.22).

use flexio::profile::FlowKind;
use flexio::MechanismName::{self, *};

use super::super::measure::{self, mb_per_s, series, shape, size_mb};
use super::super::setup::Setup;
use super::super::{Axes, Exhibit, Numbers, Point};
use super::{no_cells, no_points, nothing};
use crate::slow_device::FileSystem;
use crate::thesis_bench::SMALL_BUFFERS_KIB;
use flexio_bench::model::CacheState::{Cold, Warm};
use flexio_bench::model::Scenario;
use flexio_bench::plan::{Cell, Entrant};
use flexio_bench::stats::Summary;

const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

const BY_SIZE: Axes = Axes {
    x: "file size (MB)",
    y: "throughput (MB/s)",
    log_x: true,
    log_y: true,
};

/// Ours over a reference, by file size (the original's text states
/// ratios, not throughputs).
const RATIO_BY_SIZE: Axes = Axes {
    x: "file size (MB)",
    y: "throughput over read-write's (x)",
    log_x: true,
    log_y: false,
};

/// What FlexIO's text states of Figures 4.7-4.10 (section 4.1.2), drawn
/// on the ratio axis: mmap above read-write to ~50 MB, level at ~200 MB.
const AHEAD: &str = "original (text): mmap ahead (ratio above 1) up to ~50 MB";
const EVEN: &str = "original (text): mmap level at ~200 MB, behind beyond";
/// Section 4.1.4: user buffer and buffer cache "almost identical".
const IDENTICAL: &str = "original (text): almost identical (ratio ~1)";
/// Section 4.1.4: 1 KB to 1 MB buffers about 100 KB/s apart.
const APART: &str = "original (text): 1 KB ~0.1 MB/s below 1 MB";

fn mmap_original() -> Vec<Point> {
    vec![
        Point::new(AHEAD, 1.0, 1.0),
        Point::new(AHEAD, 50.0, 1.0),
        Point::new(EVEN, 200.0, 1.0),
    ]
}

const MMAP_RATIO: &str = "mmap / read-write (ours)";
const MMAP_RATIO_EXT2: &str = "mmap / read-write, ext2 (ours)";
const MMAP_RATIO_SMALL: &str = "mmap / read-write, 128 MiB cgroup (ours)";
const SPLICE_RATIO: &str = "kernel buffer (splice) / read-write (ours)";
const SPLICE_RATIO_EXT2: &str = "kernel buffer (splice) / read-write, ext2 (ours)";
const SPLICE_RATIO_SMALL: &str = "kernel buffer (splice) / read-write, 128 MiB cgroup (ours)";
const KERNEL_RATIO: &str = "copy_file_range / read-write (ours)";
const KERNEL_RATIO_SMALL: &str = "copy_file_range / read-write, 128 MiB cgroup (ours)";

/// Figures 4.7-4.10 drawn as the text states them: mmap over read-write,
/// and FlexIO's kernel buffer (splice through a pipe) over read-write, on
/// ext4, on ext2 and in the 128 MiB cgroup.
fn mmap_view(points: Vec<Point>) -> Vec<Point> {
    let ratios = [
        (MAPPED, USER, MMAP_RATIO),
        (MAPPED_EXT2, USER_EXT2, MMAP_RATIO_EXT2),
        (MAPPED_SMALL, USER_SMALL, MMAP_RATIO_SMALL),
        (KERNEL_BUFFER, USER, SPLICE_RATIO),
        (SPLICED_EXT2, USER_EXT2, SPLICE_RATIO_EXT2),
        (SPLICED_SMALL, USER_SMALL, SPLICE_RATIO_SMALL),
    ];
    ratios
        .into_iter()
        .flat_map(|(a, b, name)| measure::ratio_series(&points, a, b, name))
        .collect()
}

/// Figures 4.11-4.14 as the text states them: the kernel over the user
/// buffer of each size (not the throughputs 4.7 draws again).
fn kernel_view(points: Vec<Point>) -> Vec<Point> {
    let mut view = measure::ratio_series(&points, KERNEL, USER, KERNEL_RATIO);
    view.extend(measure::ratio_series(
        &points,
        KERNEL_SMALL,
        USER_SMALL,
        KERNEL_RATIO_SMALL,
    ));
    for kib in SMALL_BUFFERS_KIB {
        view.extend(measure::ratio_series(
            &points,
            KERNEL,
            &user_buffer(kib),
            &kernel_over_buffer(kib),
        ));
        view.extend(measure::ratio_series(
            &points,
            KERNEL_SMALL,
            &user_buffer_small(kib),
            &kernel_over_buffer_small(kib),
        ));
    }
    view
}

/// Our read-write with a `kib` KiB buffer, with memory to spare.
fn user_buffer(kib: u64) -> String {
    format!("read-write, {kib} KiB buffer (ours)")
}

/// The same in the 128 MiB cgroup (`LowMemoryBySizeSmallBuffers`).
fn user_buffer_small(kib: u64) -> String {
    format!("read-write, {kib} KiB buffer, 128 MiB cgroup (ours)")
}

fn kernel_over_buffer(kib: u64) -> String {
    format!("copy_file_range / read-write {kib} KiB (ours)")
}

fn kernel_over_buffer_small(kib: u64) -> String {
    format!("copy_file_range / read-write {kib} KiB, 128 MiB cgroup (ours)")
}

const BUFFER_USER: &str = "read-write by buffer (ours)";
const BUFFER_KERNEL: &str = "copy_file_range by length (ours)";

/// Figure 4.15 as the text states it: each series less its own value at
/// 1 MiB buffers (MB/s), the spread the widest the two rounds allow.
fn buffer_view(points: Vec<Point>) -> Vec<Point> {
    let mut view = Vec::new();
    for name in [BUFFER_USER, USER_SMALL, BUFFER_KERNEL] {
        let Some(base) = points
            .iter()
            .find(|p| p.series == name && p.x == 1024.0)
            .cloned()
        else {
            continue;
        };
        let (base_low, base_high) = base.spread.unwrap_or((base.y, base.y));
        for point in points.iter().filter(|p| p.series == name) {
            let mut less = Point::new(name, point.x, point.y - base.y);
            if let (Some((low, high)), Some(rounds)) = (point.spread, point.rounds) {
                less = less.with_spread(low - base_high, high - base_low, rounds);
            }
            view.push(less);
        }
    }
    view
}

/// A ratio's value, or "no difference" when its rounds' spread reaches 1.
fn against_one(points: &[Point], name: &str, x: f64) -> Option<(f64, String)> {
    let point = points
        .iter()
        .find(|p| p.series == name && (p.x - x).abs() <= 1e-9 * x.max(1.0))?;
    let words = match point.spread {
        Some((low, high)) if low <= 1.0 && 1.0 <= high => format!(
            "no difference ({:.2}x, its rounds {low:.2}-{high:.2}x) at {x:.0} MB",
            point.y
        ),
        _ => format!("{:.2}x at {x:.0} MB", point.y),
    };
    Some((point.y, words))
}

/// The ratio `name` at both ends of its sizes: (small, large, in words).
fn ratio_ends(points: &[Point], name: &str) -> Option<(f64, f64, String)> {
    let (low, high) = measure::x_extent(points, name)?;
    let (small, a) = against_one(points, name, low)?;
    let (large, b) = against_one(points, name, high)?;
    Some((small, large, format!("{a} and {b}")))
}

pub(super) fn exhibits() -> Vec<Exhibit> {
    vec![
        disk_by_size(),
        user_against_kernel(),
        buffer_size(),
        disk_to_network(),
        relay(),
        wildforce(),
    ]
}

/// The setups outside the matrix exhibit `id` measures.
pub(super) fn setups(id: &str) -> &'static [Setup] {
    match id {
        "flexio-4-7" => &[
            Setup::DiskBoundBySize,
            Setup::DiskBoundBySizeExt2,
            Setup::LowMemoryBySize,
        ],
        "flexio-4-11" => &[
            Setup::DiskBoundBySize,
            Setup::LowMemoryBySize,
            Setup::LowMemoryBySizeSmallBuffers,
        ],
        "flexio-4-15" => &[Setup::DiskBoundByBuffer, Setup::LowMemoryByBuffer],
        "flexio-4-18" => &[Setup::UdpBuffers],
        "flexio-4-21" => &[Setup::Relay],
        _ => &[],
    }
}

/// A disk-bound setup's plan: the file system its throttled device is
/// formatted with, its cold cells, and ours read from their summaries.
pub(in super::super) struct DiskBound {
    /// The device's file system.
    pub fs: FileSystem,
    /// The cells run on it.
    pub cells: Vec<Cell>,
    /// Ours, from the cells' summaries.
    pub ours: fn(&[Summary]) -> Vec<Point>,
}

/// The plan of a disk-bound `setup`, or `None` for any other.
pub(super) fn disk_bound(setup: Setup, quick: bool) -> Option<DiskBound> {
    let plan = |fs, cells, ours| DiskBound { fs, cells, ours };
    match setup {
        Setup::DiskBoundBySize => Some(plan(
            FileSystem::Ext4,
            size_buffer_cells(quick),
            buffers_ours,
        )),
        Setup::DiskBoundBySizeExt2 => Some(plan(FileSystem::Ext2, disk_cells(quick), ext2_ours)),
        Setup::DiskBoundByBuffer => Some(plan(FileSystem::Ext4, buffer_cells(quick), buffer_ours)),
        _ => None,
    }
}

fn disk_by_size() -> Exhibit {
    Exhibit {
        id: "flexio-4-7",
        title: "FlexIO, Figures 4.7-4.10: disk -> disk throughput by file size",
        cite: "FlexIO thesis, section 4.1.2, Figures 4.7-4.10 (same/different IDE and SCSI partitions)",
        setup: "A 1 MB user buffer (read/write), mmap of both files, and FlexIO in the kernel \
                (kernel buffer, buffer cache, mmap), files of 1-200 MB, Pentium II 400 MHz and \
                Pentium Pro 200 MHz, 128 MB RAM, IDE and SCSI disks.",
        provenance: "The figures are plots not in the seed's text; the text states: mmap is \
                     faster for files up to 50 MB, level at 200 MB, slower above (more so on SCSI).",
        original: mmap_original,
        axes: RATIO_BY_SIZE,
        numbers: Numbers::Given(&[AHEAD, EVEN]),
        ours_setup: "Both settings run cold and synced on loop devices throttled to 64 MiB/s each \
              way (the rate dd measured is in the setup lines) standing for the original's slow \
              disks: memory to spare (the matrix's cells in the engine) on ext4 and on ext2, the \
              thesis's own file system, as the original's IDE and SCSI partitions were two; and \
              the original's setting, a 128 MiB memory cgroup (flexio copy processes) on ext4 \
              whose cache fills at 50-200 MB as the original's did. Read-write with a 1 MiB \
              buffer, mmap, FlexIO's kernel buffer as splice through a 1 MiB pipe (read 1 MB \
              into a buffer in the kernel, written out from it: the bytes never enter user \
              space, as FILE_KERNEL_READ_WRITE's; the pipe holds the page cache's pages where \
              FlexIO copied them) and copy_file_range (the buffer-cache level, no buffer). \
              Drawn: mmap's and the kernel buffer's throughput over read-write's, ours \
              against what the original's text states.",
        gaps: &[],
        cells: no_cells,
        ours: nothing,
        view: mmap_view,
        compare: compare_mmap,
    }
}

fn user_against_kernel() -> Exhibit {
    Exhibit {
        id: "flexio-4-11",
        title: "FlexIO, Figures 4.11-4.14: user buffer against the buffer cache in the kernel",
        cite: "FlexIO thesis, section 4.1.3, Figures 4.11-4.14",
        setup: "A user process with an intermediate buffer against FlexIO at the buffer-cache \
                level (no intermediate buffer), files of 1-200 MB, the same four disks.",
        provenance:
            "Plots not in the seed's text; the text states the two have \"almost identical \
                     behaviour\" (section 4.1.4).",
        original: || {
            vec![
                Point::new(IDENTICAL, 1.0, 1.0),
                Point::new(IDENTICAL, 200.0, 1.0),
            ]
        },
        axes: RATIO_BY_SIZE,
        numbers: Numbers::Given(&[IDENTICAL]),
        ours_setup: "A user buffer (read-write) against the kernel's copy (copy_file_range, no \
              intermediate buffer), with memory to spare and in a 128 MiB memory cgroup, both \
              on ext4 on a loop device throttled to 64 MiB/s (the original's slow disks), \
              cold and synced, the user buffer 1 KiB, 64 KiB and 1 MiB (the \
              original's \"from 1KB till 1MB\") in both settings. Drawn: the kernel's \
              throughput over each user buffer's, ours against the original's \"almost \
              identical\".",
        gaps: &[],
        cells: no_cells,
        ours: nothing,
        view: kernel_view,
        compare: compare_in_kernel,
    }
}

fn buffer_size() -> Exhibit {
    Exhibit {
        id: "flexio-4-15",
        title: "FlexIO, Figure 4.15: throughput by I/O buffer size, 100 MB file",
        cite: "FlexIO thesis, sections 4.1.3-4.1.4, Figure 4.15",
        setup: "A user process copying a 100 MB file with buffers of 1 KB to 1 MB, beside FlexIO \
                at the buffer-cache level.",
        provenance: "The text states: 1 KB to 1 MB differ by about 100 KB/s, small against the \
                     throughput (section 4.1.4).",
        original: || vec![Point::new(APART, 1.0, -0.1), Point::new(APART, 1024.0, 0.0)],
        axes: Axes {
            x: "buffer size (KB)",
            y: "throughput less that at 1 MB buffers (MB/s)",
            log_x: true,
            log_y: false,
        },
        numbers: Numbers::Given(&[APART]),
        ours_setup: "Synced and cold from 1 KiB to 1 MiB, with memory to spare and in a 128 MiB \
              memory cgroup (the original's 128 MB machine), both with the files on ext4 on a \
              loop device throttled to 64 MiB/s (its slow disk); the quick run copies 64 MiB, \
              the full run 100 MiB. The verdict is the cgroup's series'.",
        gaps: &[],
        cells: no_cells,
        ours: nothing,
        view: buffer_view,
        compare: compare_buffer,
    }
}

fn disk_to_network() -> Exhibit {
    Exhibit {
        id: "flexio-4-18",
        title: "FlexIO, Figure 4.18: disk -> network by file size",
        cite: "FlexIO thesis, section 4.2.3, Figure 4.18",
        setup: "FlexIO reading the buffer cache and sending over its Ethernet protocol, against a \
                user process over UDP with socket buffers of 1-50 KB, files up to 200 MB.",
        provenance: "The text states FlexIO's constant ~1.55 MB/s up to 200 MB; UDP with 50 KB \
                     and 25 KB buffers is faster but only reaches 25 MB and 50 MB (packets lost).",
        original: disk_network_original,
        axes: BY_SIZE,
        numbers: Numbers::Given(&[]),
        ours_setup: "A user process over UDP as the original's: the file (warm) sent in 1 KiB \
              sequenced datagrams over loopback with SO_SNDBUF and SO_RCVBUF of 1, 10, 25 and \
              50 KB at both ends, a receiver on another CPU writing each datagram at its place \
              in a file; ours is what arrived over the time to its last datagram (a file under \
              64 MiB sent that many times over in a round, summed), the datagrams lost in the \
              setup line. The matrix's sendfile, zero-copy send and read-write over \
              loopback TCP beside it (the original's FlexIO used its own Ethernet protocol).",
        gaps: &[],
        cells: network_cells,
        ours: network_ours,
        view: super::as_measured,
        compare: compare_network,
    }
}

fn relay() -> Exhibit {
    Exhibit {
        id: "flexio-4-21",
        title: "FlexIO, Figures 4.21-4.22: network -> network over two and three hosts",
        cite: "FlexIO thesis, section 4.3, Figures 4.21-4.22",
        setup: "Dummy sequenced packets from host to host, and through a middle host that only \
                forwards, up to 400 MB.",
        provenance: "The text states a sustained ~2.3 MB/s for 400 MB, higher for smaller sets.",
        original: relay_original,
        axes: BY_SIZE,
        numbers: Numbers::Given(&[]),
        ours_setup: "A -> B direct and A -> B -> C with B relaying by splice (flexio copy \
              tcp-listen:// tcp://) or by read-write (a user-space copy), across three network \
              namespaces joined by two veth pairs (root), each transfer three flexio processes \
              timed from A's start to the last exit (a file under 64 MiB sent that many times \
              over in a round, summed); TCP where the original sent sequenced packets over its \
              own Ethernet protocol.",
        gaps: &[],
        cells: no_cells,
        ours: nothing,
        view: super::as_measured,
        compare: compare_relay,
    }
}

fn wildforce() -> Exhibit {
    Exhibit {
        id: "flexio-4-25",
        title: "FlexIO, Figure 4.25: file I/O with the WildForce FPGA board",
        cite: "FlexIO thesis, section 4.4.2, Figure 4.25",
        setup: "FlexIO against the WildForce APIs moving files to and from the FPGA board.",
        provenance: "A plot; the text states mmap helps up to 200 MB, most at 50 MB.",
        original: no_points,
        axes: BY_SIZE,
        numbers: Numbers::NotGiven,
        ours_setup: "",
        gaps: &[
            "A device exhibit: it would run on a machine with a GPU as the board (file -> \
              device memory and back, pageable against pinned buffers). flexio's GPU endpoint \
              (`flexio copy FILE gpu:N --via MODE`) has not run on a GPU yet, and this \
              exhibit's cells are not built.",
        ],
        cells: no_cells,
        ours: nothing,
        view: super::as_measured,
        compare: |_, _| "Nothing of ours to compare: no GPU run.".to_string(),
    }
}

fn disk_sizes(quick: bool) -> Vec<u64> {
    let sizes: &[u64] = if quick {
        &[1, 16, 64]
    } else {
        &[1, 10, 50, 100, 200]
    };
    sizes.iter().map(|s| s * MIB).collect()
}

/// Cold copies synced to the disk, as the original's disk -> disk runs.
fn disk_cells(quick: bool) -> Vec<Cell> {
    disk_sizes(quick)
        .into_iter()
        .map(|size| {
            let entrants = [ReadWrite, Mmap, Splice, CopyFileRange]
                .into_iter()
                .map(|m| Entrant::flexio(m, MIB as usize))
                .collect();
            Cell::new(
                Scenario::Flow(FlowKind::FileToFileDurable),
                size,
                Cold,
                entrants,
            )
        })
        .collect()
}

const USER: &str = "read-write, 1 MiB buffer (ours)";
const MAPPED: &str = "mmap (ours)";
const KERNEL_BUFFER: &str = "splice through a 1 MiB pipe, kernel buffer (ours)";
const KERNEL: &str = "copy_file_range, in the kernel (ours)";
const USER_EXT2: &str = "read-write, 1 MiB buffer, ext2 (ours)";
const MAPPED_EXT2: &str = "mmap, ext2 (ours)";
const SPLICED_EXT2: &str = "splice through a 1 MiB pipe, ext2 (ours)";
const KERNEL_EXT2: &str = "copy_file_range, ext2 (ours)";

/// [`disk_cells`] with the user buffer also at each of
/// [`SMALL_BUFFERS_KIB`] (Figures 4.11-4.14).
fn size_buffer_cells(quick: bool) -> Vec<Cell> {
    let mut cells = disk_cells(quick);
    for cell in &mut cells {
        for kib in SMALL_BUFFERS_KIB {
            let entrant = Entrant::flexio(ReadWrite, (kib << 10) as usize);
            cell.entrants.insert(0, entrant);
        }
    }
    cells
}

fn by_size_ours(summaries: &[Summary]) -> Vec<Point> {
    by_size_named(summaries, [USER, MAPPED, KERNEL_BUFFER, KERNEL])
}

/// [`by_size_ours`] on the second file system.
fn ext2_ours(summaries: &[Summary]) -> Vec<Point> {
    by_size_named(
        summaries,
        [USER_EXT2, MAPPED_EXT2, SPLICED_EXT2, KERNEL_EXT2],
    )
}

/// Read-write (1 MiB), mmap, splice and copy_file_range by file size,
/// named `names` in that order.
fn by_size_named(summaries: &[Summary], names: [&str; 4]) -> Vec<Point> {
    let one = |name: &str, mechanism: MechanismName| {
        series(
            summaries,
            name,
            Scenario::Flow(FlowKind::FileToFileDurable),
            |c| c.chunk == 0,
            |s| measure::is_engine(s, mechanism, Some(MIB)),
            size_mb,
            mb_per_s,
        )
    };
    [ReadWrite, Mmap, Splice, CopyFileRange]
        .into_iter()
        .zip(names)
        .flat_map(|(mechanism, name)| one(name, mechanism))
        .collect()
}

/// [`by_size_ours`] and the user buffer at each of [`SMALL_BUFFERS_KIB`].
fn buffers_ours(summaries: &[Summary]) -> Vec<Point> {
    let mut points = by_size_ours(summaries);
    for kib in SMALL_BUFFERS_KIB {
        points.extend(series(
            summaries,
            &user_buffer(kib),
            Scenario::Flow(FlowKind::FileToFileDurable),
            |c| c.chunk == 0,
            |s| measure::is_engine(s, ReadWrite, Some(kib << 10)),
            size_mb,
            mb_per_s,
        ));
    }
    points
}

const USER_SMALL: &str = "read-write, 128 MiB cgroup (ours)";
const MAPPED_SMALL: &str = "mmap, 128 MiB cgroup (ours)";
const SPLICED_SMALL: &str = "splice, 128 MiB cgroup (ours)";
const KERNEL_SMALL: &str = "copy-file-range, 128 MiB cgroup (ours)";

fn compare_mmap(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let unlimited = ratio_ends(ours, MMAP_RATIO);
    let spare = unlimited
        .as_ref()
        .map_or("not measured".to_string(), |(_, _, words)| words.clone());
    let Some((small, large, words)) = ratio_ends(ours, MMAP_RATIO_SMALL) else {
        return format!(
            "Ours with memory to spare: mmap over read-write {spare}; the 128 MiB cgroup did \
             not run, so the original's small-cache decline cannot be compared."
        );
    };
    // The original: mmap ahead up to 50 MB, behind above 200 MB; a ratio
    // whose rounds reach 1 is neither.
    let clear = |x_of: fn((f64, f64)) -> f64, ahead: bool| {
        measure::x_extent(ours, MMAP_RATIO_SMALL)
            .and_then(|ends| {
                ours.iter()
                    .find(|p| p.series == MMAP_RATIO_SMALL && p.x == x_of(ends))
            })
            .is_some_and(|p| {
                let (low, high) = p.spread.unwrap_or((p.y, p.y));
                if ahead {
                    low > 1.0
                } else {
                    high < 1.0
                }
            })
    };
    let same = clear(|(low, _)| low, true) && clear(|(_, high)| high, false);
    // Whether the full cache is what pulls mmap down: its fall from the
    // smallest to the largest file, in the cgroup against without it.
    let fall = large / small;
    let weighs = match unlimited {
        Some((u_small, u_large, _)) if fall < 0.9 * (u_large / u_small) => format!(
            "mmap loses more against read-write as the files grow in the cgroup (to {fall:.2} of \
             its smallest-file ratio) than with memory to spare (to {:.2}): the full cache does \
             weigh on mmap, as the original said",
            u_large / u_small
        ),
        Some((u_small, u_large, _)) => format!(
            "mmap's ratio moves alike in the cgroup (to {fall:.2} of its smallest-file ratio) and \
             with memory to spare (to {:.2}): here the full cache is not what holds mmap back",
            u_large / u_small
        ),
        None => "the run with memory to spare is missing, so the cache's part is not told".into(),
    };
    format!(
        "Ours, cold and synced on the throttled disk: mmap over read-write {spare} with memory \
         to spare on ext4, and {words} in a 128 MiB cgroup; the original had mmap ahead up to \
         50 MB and behind above 200 MB on a 128 MB machine whose cache filled: {} — {weighs}. \
         {}",
        shape(same),
        second_fs_and_kernel_buffer(ours)
    )
}

/// Ext2's mmap ratio and the kernel buffer's in each setting, in words:
/// the original found its partitions alike and every in-kernel path but
/// mmap level with the user buffer.
fn second_fs_and_kernel_buffer(ours: &[Point]) -> String {
    let words = |name: &str| ratio_ends(ours, name);
    let ext2 = match words(MMAP_RATIO_EXT2) {
        Some((_, _, text)) => {
            format!("On ext2, the thesis's file system, mmap over read-write {text}.")
        }
        None => "Ext2 did not run.".to_string(),
    };
    let settings = [
        (SPLICE_RATIO, "on ext4"),
        (SPLICE_RATIO_EXT2, "on ext2"),
        (SPLICE_RATIO_SMALL, "in the cgroup"),
    ];
    let mut level = true;
    let mut kernel = Vec::new();
    for (name, setting) in settings {
        match words(name) {
            Some((small, large, text)) => {
                level &= (0.85..=1.15).contains(&small) && (0.85..=1.15).contains(&large);
                kernel.push(format!("{text} {setting}"));
            }
            None => kernel.push(format!("not measured {setting}")),
        }
    }
    format!(
        "{ext2} FlexIO's kernel buffer (splice through a 1 MiB pipe) over read-write {}; the \
         original's kernel buffer kept the user process's copies and ran level with it: {} \
         (within 15% counts as level).",
        kernel.join(", "),
        shape(level)
    )
}

fn compare_in_kernel(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let Some((small, large, words)) = ratio_ends(ours, KERNEL_RATIO) else {
        return "copy_file_range or read-write did not run: no ratio to compare.".into();
    };
    let same = (0.85..=1.15).contains(&small) && (0.85..=1.15).contains(&large);
    let cgroup = ratio_ends(ours, KERNEL_RATIO_SMALL)
        .map_or("not measured".to_string(), |(_, _, words)| words);
    format!(
        "Ours: the kernel over the 1 MiB user buffer {words} with memory to spare, and {cgroup} \
         in the 128 MiB cgroup; the original found the two almost identical: {} with memory \
         to spare (within 15% counts as identical) — a synced cold copy waits on the disk \
         whichever way the bytes go. By the user buffer's size (the original's 1 KB to 1 MB): \
         {}.",
        shape(same),
        by_buffer_words(ours)
    )
}

/// The kernel over each smaller user buffer at both ends of the sizes,
/// in the cgroup and with memory to spare.
fn by_buffer_words(ours: &[Point]) -> String {
    let mut words = Vec::new();
    for kib in SMALL_BUFFERS_KIB {
        for (name, setting) in [
            (kernel_over_buffer_small(kib), "in the cgroup"),
            (kernel_over_buffer(kib), "with memory to spare"),
        ] {
            let text =
                ratio_ends(ours, &name).map_or("not measured".to_string(), |(_, _, text)| text);
            words.push(format!("{kib} KiB {setting} {text}"));
        }
    }
    words.join("; ")
}

fn buffer_cells(quick: bool) -> Vec<Cell> {
    let size = if quick { 64 * MIB } else { 100 * MIB };
    [KIB, 4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB]
        .into_iter()
        .map(|chunk| {
            let entrants = [ReadWrite, CopyFileRange]
                .into_iter()
                .map(|m| Entrant::flexio(m, chunk as usize))
                .collect();
            Cell::new(
                Scenario::Flow(FlowKind::FileToFileDurable),
                size,
                Cold,
                entrants,
            )
            .chunk(chunk)
        })
        .collect()
}

fn buffer_ours(summaries: &[Summary]) -> Vec<Point> {
    let one = |name: &str, mechanism: MechanismName| {
        series(
            summaries,
            name,
            Scenario::Flow(FlowKind::FileToFileDurable),
            |c| c.chunk != 0,
            |s| measure::is_engine(s, mechanism, Some(s.cell.chunk)),
            |s| s.cell.chunk as f64 / 1024.0,
            mb_per_s,
        )
    };
    let mut points = one(BUFFER_USER, ReadWrite);
    points.extend(one(BUFFER_KERNEL, CopyFileRange));
    points
}

fn compare_udp(ours: &[Point]) -> String {
    let (small, large) = (
        crate::thesis_bench::udp::series(1),
        crate::thesis_bench::udp::series(50),
    );
    let Some((_, high)) = measure::x_extent(ours, &large) else {
        return "The UDP sweep did not run.".into();
    };
    let (Some(s), Some(l)) = (
        measure::at(ours, &small, high),
        measure::at(ours, &large, high),
    ) else {
        return "The UDP sweep is missing a point at its largest size.".into();
    };
    format!(
        "Over UDP at {high:.0} MB what arrived came at {s:.0} MB/s with 1 KB socket buffers \
         and {l:.0} MB/s with 50 KB; the original's larger UDP buffers were faster (50 KB over \
         25 KB over smaller): {} — the datagrams lost, which the original saw past 25-50 MB, \
         are in the setup line: a receiver that falls behind its buffer loses what does not \
         fit.",
        shape(l >= s)
    )
}

fn compare_buffer(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    // Each series is drawn less its own value at 1 MiB: the 1 KiB point
    // is the difference, its spread the rounds' widest.
    let at_one_kib = |name: &str| {
        ours.iter()
            .find(|p| p.series == name && p.x == 1.0)
            .map(|p| {
                let none = p
                    .spread
                    .is_some_and(|(low, high)| low <= 0.0 && 0.0 <= high);
                let words = if none {
                    format!(
                        "no different ({:.1} MB/s, within its rounds' spread) from",
                        -p.y
                    )
                } else if p.y < 0.0 {
                    format!("{:.1} MB/s below", -p.y)
                } else {
                    format!("{:.1} MB/s above", p.y)
                };
                (p.y, none, words)
            })
    };
    let Some((user, user_none, user_words)) = at_one_kib(BUFFER_USER) else {
        return "read-write at 1 KiB or 1 MiB did not run: no difference to compare.".into();
    };
    // The verdict is the original's setting's: the 128 MiB cgroup on the
    // throttled device, where it ran; memory to spare otherwise.
    let (cgroup, verdict) = match at_one_kib(USER_SMALL) {
        Some((y, none, words)) => (
            format!("on the throttled device in the 128 MiB cgroup {words}"),
            none || y.abs() < 1.0,
        ),
        None => (
            "the 128 MiB cgroup on the throttled device did not run".into(),
            user_none || user.abs() < 1.0,
        ),
    };
    format!(
        "Ours: read-write at 1 KiB buffers {user_words} those at 1 MiB with memory to spare, \
         {cgroup}; the original's 1 KB buffers were about 0.1 MB/s below its 1 MB ones: {}.",
        if verdict {
            format!(
                "{} — where the disk sets the pace, a system call per KiB hides behind it",
                shape(true)
            )
        } else {
            format!(
                "{} — the buffer size moves ours by more than a MB/s",
                shape(false)
            )
        }
    )
}

fn network_cells(quick: bool) -> Vec<Cell> {
    let sizes: &[u64] = if quick {
        &[1, 16, 64]
    } else {
        &[1, 25, 50, 100, 200]
    };
    sizes
        .iter()
        .map(|&size| {
            let entrants = vec![
                Entrant::flexio(Sendfile, 256 << 10),
                Entrant::flexio(SendZc, 256 << 10),
                Entrant::flexio(ReadWrite, 64 << 10),
            ];
            Cell::new(
                Scenario::Flow(FlowKind::FileToSocket),
                size * MIB,
                Warm,
                entrants,
            )
            .path("loopback")
        })
        .collect()
}

fn disk_network_original() -> Vec<Point> {
    let flexio = "FlexIO, ~1.55 MB/s constant to 200 MB (text)";
    vec![
        Point::new(flexio, 1.0, 1.55),
        Point::new(flexio, 200.0, 1.55),
    ]
}

fn network_ours(summaries: &[Summary]) -> Vec<Point> {
    let one = |name: &str, mechanism: MechanismName, chunk: u64| {
        series(
            summaries,
            name,
            Scenario::Flow(FlowKind::FileToSocket),
            |c| c.path == "loopback",
            |s| measure::is_engine(s, mechanism, Some(chunk)),
            size_mb,
            mb_per_s,
        )
    };
    let mut points = one("sendfile, in the kernel (ours)", Sendfile, 256 << 10);
    points.extend(one("send-zc, zero-copy send (ours)", SendZc, 256 << 10));
    points.extend(one("read-write, 64 KiB (ours)", ReadWrite, 64 << 10));
    points
}

fn compare_network(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let name = "sendfile, in the kernel (ours)";
    let Some((low, high)) = measure::x_extent(ours, name) else {
        return "sendfile did not run.".into();
    };
    let (Some(first), Some(last)) = (measure::at(ours, name, low), measure::at(ours, name, high))
    else {
        return "sendfile did not run.".into();
    };
    let zero_copy = match measure::at(ours, "send-zc, zero-copy send (ours)", high) {
        Some(zc) => format!(
            " Zero-copy send (io_uring SEND_ZC) {zc:.0} MB/s at {high:.0} MB, {:.2}x sendfile: \
             over loopback the kernel copies the pages on receive anyway (its notifications \
             say so), so it pays for pinning and notifying and saves no copy; it can only \
             win where the bytes leave through a real NIC.",
            zc / last
        ),
        None => String::new(),
    };
    format!(
        "Ours: sendfile over loopback {first:.0} MB/s at {low:.0} MB and {last:.0} MB/s at \
         {high:.0} MB, {:.0}x the original's 1.55 MB/s; the original's in-kernel rate was flat \
         with size: {} — TCP over loopback has neither the original's wire nor its lost \
         packets; what moves ours between sizes is the machine's load and the cost of a \
         connection against the bytes it carries.{zero_copy} {}",
        last / 1.55,
        shape((last / first - 1.0).abs() < 0.5),
        compare_udp(ours)
    )
}

const DIRECT: &str = "two hosts, A -> B (ours)";
const SPLICED: &str = "three hosts, B relays by splice (ours)";
const COPIED: &str = "three hosts, B relays by read-write, user space (ours)";

fn compare_relay(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let Some((low, high)) = measure::x_extent(ours, SPLICED) else {
        return "The relay did not run.".into();
    };
    let (Some(first), Some(last)) = (
        measure::at(ours, SPLICED, low),
        measure::at(ours, SPLICED, high),
    ) else {
        return "The relay did not run.".into();
    };
    format!(
        "Ours: relayed by splice {first:.0} MB/s at {low:.0} MB and {last:.0} MB/s at {high:.0} \
         MB ({:.0}x the original's 2.3 MB/s); against two hosts direct {}, against a user-space \
         copy in B {}. The original was faster for smaller sets, its Ethernet driver short of \
         buffers for large ones: {} — TCP loses nothing when B falls behind, and ours is timed \
         from process start, which weighs most on the small sets.",
        last / 2.3,
        ends_phrase(ours, SPLICED, DIRECT),
        ends_phrase(ours, SPLICED, COPIED),
        shape(first > last)
    )
}

/// `a / b` at both ends of `a`, as a phrase ("no difference" where the
/// two points' rounds overlap), or "not measured".
fn ends_phrase(ours: &[Point], a: &str, b: &str) -> String {
    let Some((low, high)) = measure::x_extent(ours, a) else {
        return "not measured".into();
    };
    let at = |x: f64| {
        let find = |name: &str| {
            ours.iter()
                .find(|p| p.series == name && (p.x - x).abs() <= 1e-9 * x.max(1.0))
        };
        let (pa, pb) = (find(a)?, find(b)?);
        Some(if measure::differs(pa, pb) {
            format!("{:.2}x at {x:.0} MB", pa.y / pb.y)
        } else {
            format!(
                "no difference at {x:.0} MB ({:.2}x, within the rounds' spread)",
                pa.y / pb.y
            )
        })
    };
    match (at(low), at(high)) {
        (Some(first), Some(last)) => format!("{first} and {last}"),
        _ => "not measured".into(),
    }
}

fn relay_original() -> Vec<Point> {
    let name = "FlexIO relay, sustained at 400 MB (text)";
    vec![Point::new(name, 400.0, 2.3)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured() -> Vec<Point> {
        [(USER, 100.0), (MAPPED, 80.0), (KERNEL, 120.0)]
            .into_iter()
            .flat_map(|(name, y)| {
                [1.0, 64.0].map(|x| Point::new(name, x, y).with_spread(y * 0.9, y * 1.1, 3))
            })
            .collect()
    }

    #[test]
    fn figures_4_7_and_4_11_draw_different_data_each_with_the_texts_values() {
        let mmap = mmap_view(measured());
        let kernel = kernel_view(measured());
        assert!(!mmap.is_empty() && !kernel.is_empty());
        assert!(mmap
            .iter()
            .all(|p| kernel.iter().all(|k| k.series != p.series)));
        let at_one = |points: &[Point]| points.iter().find(|p| p.x == 1.0).map(|p| p.y);
        assert_eq!(at_one(&mmap), Some(0.8));
        assert_eq!(at_one(&kernel), Some(1.2));
        // The ratio's spread is the widest the two rounds allow.
        let spread = mmap[0].spread.unwrap();
        assert!((spread.0 - 72.0 / 110.0).abs() < 1e-9 && (spread.1 - 88.0 / 90.0).abs() < 1e-9);
        let stated = |exhibit: Exhibit| {
            let Numbers::Given(names) = exhibit.numbers else {
                panic!("{}: the text states values", exhibit.id)
            };
            let original = (exhibit.original)();
            assert!(!names.is_empty(), "{}", exhibit.id);
            for name in names {
                assert!(original.iter().any(|p| p.series == *name), "{name}");
            }
        };
        stated(disk_by_size());
        stated(user_against_kernel());
        stated(buffer_size());
    }

    #[test]
    fn figure_4_7_runs_the_kernel_buffer_everywhere_and_ext2_as_a_second_file_system() {
        let ext2 = disk_bound(Setup::DiskBoundBySizeExt2, true).unwrap();
        assert_eq!(ext2.fs, FileSystem::Ext2);
        let ext4 = disk_bound(Setup::DiskBoundBySize, true).unwrap();
        assert_eq!(ext4.fs, FileSystem::Ext4);
        for plan in [&ext2, &ext4] {
            for cell in &plan.cells {
                assert!(
                    cell.entrants
                        .contains(&Entrant::flexio(Splice, MIB as usize)),
                    "{}",
                    cell.label()
                );
                assert_eq!(cell.key.cache, Cold);
                assert_eq!(
                    cell.key.scenario,
                    Scenario::Flow(FlowKind::FileToFileDurable)
                );
            }
        }
        assert!(disk_bound(Setup::LowMemoryBySize, true).is_none());
        // No FlexIO disk exhibit runs a cell on this machine's own disk,
        // and none lists a gap.
        for exhibit in [disk_by_size(), user_against_kernel(), buffer_size()] {
            assert!((exhibit.cells)(true).is_empty(), "{}", exhibit.id);
            assert!(exhibit.gaps.is_empty(), "{}", exhibit.id);
        }
    }

    #[test]
    fn figure_4_15_draws_each_series_less_its_value_at_1_mib() {
        let points = [(1.0, 90.0), (1024.0, 100.0)]
            .map(|(x, y)| Point::new(BUFFER_USER, x, y).with_spread(y - 1.0, y + 1.0, 3));
        let view = buffer_view(points.to_vec());
        assert_eq!(view.len(), 2);
        assert_eq!((view[0].x, view[0].y), (1.0, -10.0));
        assert_eq!(view[0].spread, Some((-12.0, -8.0)));
        assert_eq!(view[1].y, 0.0);
        // Without its 1 MiB point a series is not drawn at all.
        assert!(buffer_view(vec![points[0].clone()]).is_empty());
    }
}
