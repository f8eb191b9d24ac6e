//! The OS course project (NTU, 2020), section 3: master -> slave over a
//! socket with file I/O or mmap on each side. Its figures are bar charts
//! the seed does not hold; the values are the ratios its text states,
//! expressed as transmission time relative to file I/O (read-write).

use flexio::MechanismName::{self, *};

use super::super::measure::{self, series, shape, wall_s};
use super::super::{Axes, Exhibit, Point, Status};
use crate::model::CacheState::{NotApplicable, Warm};
use crate::model::Scenario;
use crate::plan::{Cell, Entrant};
use crate::stats::Summary;

const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;
/// Section 3.1 sets buffer and map size to one page.
const PAGE: u64 = 4 * KIB;

const RELATIVE: Axes = Axes {
    x: "file size (MB)",
    y: "transmission time / read-write's",
    log_x: false,
    log_y: false,
};

pub(super) fn exhibits() -> Vec<Exhibit> {
    vec![fig_4(), fig_5(), fig_6(), fig_7()]
}

fn fig_4() -> Exhibit {
    Exhibit {
        id: "os-fig-4",
        title: "OS project, Figure 4: sample inputs, file I/O against mmap",
        cite: "OS project report, section 3.1 (\"Sample Input\"), Figure 4",
        setup: "Master and slave each by file I/O or mmap, buffer = map = 4096 bytes; sample \
                input 1 is ten files of 23.6 KB in all, sample input 2 one 11 MB file; kernel \
                4.14.25 on a notebook.",
        provenance: "The text states file I/O was faster, for sample input 2 \"even more than \
                     twice\" as fast as mmap: drawn as mmap's time at 2x file I/O's at 11 MB.",
        original: || {
            vec![
                Point::new("file I/O (text)", 11.0, 1.0),
                Point::new("mmap slave (text: > 2x slower)", 11.0, 2.0),
            ]
        },
        axes: RELATIVE,
        status: Status::Partial,
        gap: "Sample input 2 only (one 11 MiB file, received by read-write, flexio's mmap \
              receiver and splice, 4 KiB each); not sample input 1's ten small files, and the \
              sending side is not varied.",
        cells: |_| receive_cells(&[11 * MIB], Some(PAGE)),
        ours: |summaries| relative_ours(summaries, |size| size == 11 * MIB),
        compare: compare_receivers,
    }
}

fn fig_5() -> Exhibit {
    Exhibit {
        id: "os-fig-5",
        title: "OS project, Figure 5: generated input, 1000 MB",
        cite: "OS project report, section 3.1 (\"Generated Input\"), Figure 5",
        setup: "1000 MB in 1, 5 or 10 files, master x slave in file I/O or mmap (4 \
                combinations), buffer = map = 4096 bytes.",
        provenance: "The text states a slave using mmap is about 20% faster than file I/O for \
                     the single 1000 MB file: drawn as mmap's time at 1/1.2 of file I/O's.",
        original: || {
            vec![
                Point::new("file I/O (text)", 1000.0, 1.0),
                Point::new("mmap slave (text: ~20% faster)", 1000.0, 1.0 / 1.2),
            ]
        },
        axes: RELATIVE,
        status: Status::Partial,
        gap: "One file only (not 5 or 10 files of the same total), the receiving side only; \
              the quick run moves 256 MiB, the full run 1000 MiB.",
        cells: |quick| receive_cells(&[if quick { 256 * MIB } else { 1000 * MIB }], Some(PAGE)),
        ours: |summaries| relative_ours(summaries, |size| size >= 256 * MIB),
        compare: compare_receivers,
    }
}

fn fig_6() -> Exhibit {
    Exhibit {
        id: "os-fig-6",
        title: "OS project, Figure 6: buffer size against map size",
        cite: "OS project report, sections 3.2 and 3.4, Figure 6",
        setup: "The same transfer with growing buffer and map sizes.",
        provenance: "A bar chart not in the seed's text; the text states fewer map/unmap calls \
                     (a larger map) are clearly faster.",
        original: super::no_points,
        axes: Axes {
            x: "buffer or map size (KiB)",
            y: "transmission time / read-write's at 4 KiB",
            log_x: true,
            log_y: false,
        },
        status: Status::Partial,
        gap: "No values to draw from the original's bars; the receiving side only.",
        cells: |_| sweep_cells(),
        ours: sweep_ours,
        compare: compare_sweep,
    }
}

fn fig_7() -> Exhibit {
    Exhibit {
        id: "os-fig-7",
        title: "OS project, Figure 7: synchronous against asynchronous sockets",
        cite: "OS project report, section 3.3, Figure 7",
        setup: "Kernel sockets with O_SYNC against FASYNC, with file I/O and with mmap.",
        provenance: "A bar chart not in the seed's text; the text states asynchronous was \
                     faster in every case, by less when the master used mmap.",
        original: super::no_points,
        axes: Axes {
            x: "0: file -> socket (master), 1: socket -> file (slave)",
            y: "time / blocking read-write's",
            log_x: false,
            log_y: false,
        },
        status: Status::Partial,
        gap: "Asynchronous is io_uring here (the original's FASYNC kernel socket has no \
              user-space equivalent); no values to draw from the original's bars.",
        cells: |_| async_cells(),
        ours: async_ours,
        compare: compare_async,
    }
}

const RECEIVERS: [(MechanismName, &str); 3] = [
    (ReadWrite, "read-write receiver (ours)"),
    (Mmap, "mmap receiver (ours)"),
    (Splice, "splice receiver (ours)"),
];

/// Socket -> file over loopback at each size, by each receiver.
fn receive_cells(sizes: &[u64], chunk: Option<u64>) -> Vec<Cell> {
    let chunk = chunk.unwrap_or(256 * KIB) as usize;
    sizes
        .iter()
        .map(|&size| {
            let entrants = RECEIVERS
                .iter()
                .map(|(m, _)| Entrant::flexio(*m, chunk))
                .collect();
            Cell::new(Scenario::SocketToFile, size, NotApplicable, entrants).path("loopback")
        })
        .collect()
}

/// Each receiver's time relative to read-write's in the same cell, in the
/// cells whose size passes `size`.
fn relative_ours(summaries: &[Summary], size: fn(u64) -> bool) -> Vec<Point> {
    let times = |mechanism: MechanismName, name: &str| {
        series(
            summaries,
            name,
            Scenario::SocketToFile,
            |c| c.chunk == 0 && c.path == "loopback" && size(c.size),
            |s| measure::is_engine(s, mechanism, Some(PAGE)),
            measure::size_mb,
            wall_s,
        )
    };
    let base = times(ReadWrite, "base");
    RECEIVERS
        .iter()
        .flat_map(|(m, name)| times(*m, name))
        .filter_map(|p| {
            let base = measure::at(&base, "base", p.x)?;
            Some(Point::new(&p.series, p.x, p.y / base))
        })
        .collect()
}

fn compare_receivers(original: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let Some((_, x)) = measure::x_extent(ours, RECEIVERS[1].1) else {
        return "the mmap receiver did not run: no ratio to compare.".into();
    };
    let mmap = measure::at(ours, RECEIVERS[1].1, x).unwrap_or(f64::NAN);
    let theirs = original.iter().map(|p| p.y).fold(f64::NAN, f64::max);
    let theirs = if theirs > 1.0 {
        theirs
    } else {
        original.iter().map(|p| p.y).fold(f64::NAN, f64::min)
    };
    format!(
        "Ours: the mmap receiver takes {mmap:.2}x read-write's time at {x:.0} MiB, both 4 KiB at \
         a time; the original's took {theirs:.2}x: {} — the original's slave mapped map-size \
         pieces of the file in a kernel module; ours maps the file sized up front and reads the \
         socket into it, paying a page fault per new page against read-write's copy into the \
         page cache (splice is beside them).",
        shape((mmap > 1.0) == (theirs > 1.0))
    )
}

const SWEEP: [u64; 4] = [PAGE, 64 * KIB, MIB, 8 * MIB];

fn sweep_cells() -> Vec<Cell> {
    SWEEP
        .iter()
        .map(|&chunk| {
            let entrants = [ReadWrite, Mmap]
                .into_iter()
                .map(|m| Entrant::flexio(m, chunk as usize))
                .collect();
            Cell::new(Scenario::SocketToFile, 64 * MIB, NotApplicable, entrants)
                .chunk(chunk)
                .path("loopback")
        })
        .collect()
}

fn sweep_ours(summaries: &[Summary]) -> Vec<Point> {
    let one = |mechanism: MechanismName, name: &str| {
        series(
            summaries,
            name,
            Scenario::SocketToFile,
            |c| c.chunk != 0,
            |s| measure::is_engine(s, mechanism, Some(s.cell.chunk)),
            |s| s.cell.chunk as f64 / 1024.0,
            wall_s,
        )
    };
    let read_write = one(ReadWrite, "read-write by buffer (ours)");
    let Some(base) = read_write.first().map(|p| p.y) else {
        return Vec::new();
    };
    read_write
        .into_iter()
        .chain(one(Mmap, "mmap by map size (ours)"))
        .map(|p| Point::new(&p.series, p.x, p.y / base))
        .collect()
}

fn compare_sweep(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let name = "mmap by map size (ours)";
    let (Some(small), Some(large)) = (
        measure::at(ours, name, 4.0),
        measure::at(ours, name, 8192.0),
    ) else {
        return "mmap at 4 KiB or 8 MiB did not run.".into();
    };
    format!(
        "Ours: the mmap receiver with an 8 MiB map takes {:.2}x its time with a 4 KiB map; the \
         original found larger maps clearly faster: {} — fewer map calls and faults per byte.",
        large / small,
        shape(large < small)
    )
}

fn async_cells() -> Vec<Cell> {
    let entrants = || {
        [ReadWrite, IoUring]
            .into_iter()
            .map(|m| Entrant::flexio(m, 256 << 10))
            .collect()
    };
    vec![
        Cell::new(Scenario::FileToSocket, 64 * MIB, Warm, entrants()).path("loopback"),
        Cell::new(Scenario::SocketToFile, 64 * MIB, NotApplicable, entrants()).path("loopback"),
    ]
}

fn async_ours(summaries: &[Summary]) -> Vec<Point> {
    let mut points = Vec::new();
    for (x, scenario) in [(0.0, Scenario::FileToSocket), (1.0, Scenario::SocketToFile)] {
        let time = |mechanism: MechanismName| {
            series(
                summaries,
                "",
                scenario,
                |c| c.chunk == 0 && c.path == "loopback" && c.size == 64 * MIB,
                |s| measure::is_engine(s, mechanism, Some(256 << 10)),
                |_| x,
                wall_s,
            )
            .first()
            .map(|p| p.y)
        };
        if let (Some(sync), Some(uring)) = (time(ReadWrite), time(IoUring)) {
            points.push(Point::new("blocking read-write (ours)", x, 1.0));
            points.push(Point::new("io_uring (ours)", x, uring / sync));
        }
    }
    points
}

fn compare_async(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let send = measure::at(ours, "io_uring (ours)", 0.0).unwrap_or(f64::NAN);
    let receive = measure::at(ours, "io_uring (ours)", 1.0).unwrap_or(f64::NAN);
    format!(
        "Ours: io_uring takes {send:.2}x blocking read-write's time sending a file and \
         {receive:.2}x receiving one; the original found asynchronous faster in every case: {} — \
         over loopback both copy the same bytes and a blocking loop already keeps the socket \
         full, so what the original gained from not waiting on a full buffer is small here.",
        shape(send < 1.0 && receive < 1.0)
    )
}
