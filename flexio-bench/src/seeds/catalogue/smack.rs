//! S.M.A.C.K. (Leiden BSc thesis, 2014), section 5: reading files of
//! 1-24 MB from an SD card on a BeagleBoard, with and without DMA and its
//! 16 MB buffer cache, in CPU cycles (one counted per 64 at 720 MHz: a
//! cycle is 64 / 720e6 s); the values here are its tables', in seconds.

use flexio::MechanismName::{self, *};

use super::super::measure::{self, blocked_s, series, shape, wall_s};
use super::super::{Axes, Exhibit, Point, Status};
use crate::limits::Probe;
use crate::model::CacheState::{self, Cold, Warm};
use crate::model::Scenario;
use crate::peers::PeerSpec;
use crate::plan::{Cell, Entrant};
use crate::stats::Summary;

const MIB: u64 = 1 << 20;
/// Seconds per counted cycle, times the tables' 10^5.
const SECONDS_PER_1E5_CYCLES: f64 = 1e5 * 64.0 / 720e6;
const SIZES: [f64; 4] = [1.0, 8.0, 16.0, 24.0];
/// A read of the cache's block (4 KB) or the file system's cluster.
const SMALL: usize = 4 << 10;

const SECONDS: Axes = Axes {
    x: "file size (MB)",
    y: "seconds to read the file",
    log_x: false,
    log_y: true,
};

fn table(name: &str, cycles: [f64; 4]) -> Vec<Point> {
    SIZES
        .iter()
        .zip(cycles)
        .map(|(&x, c)| Point::new(name, x, c * SECONDS_PER_1E5_CYCLES))
        .collect()
}

pub(super) fn exhibits() -> Vec<Exhibit> {
    vec![table_3(), table_4(), table_6()]
}

fn table_3() -> Exhibit {
    Exhibit {
        id: "smack-table-3",
        title: "S.M.A.C.K., Table 3: uncached reads, CPU copies against DMA (busy and blocked)",
        cite: "S.M.A.C.K. thesis, section 5.2, Table 3",
        setup: "Files of 1, 8, 16 and 24 MB read whole into memory, 512-byte single-block \
                reads by the CPU against multi-block DMA, no buffer cache, five runs averaged.",
        provenance: "Quoted from Table 3 (cycles x 10^5), converted to seconds.",
        original: || {
            let mut points = table("normal (Table 3)", [128.0, 1029.0, 2022.0, 3030.0]);
            points.extend(table("DMA (Table 3)", [148.0, 1178.0, 2356.0, 3534.0]));
            points.extend(table(
                "DMA, blocked (Table 3)",
                [146.0, 1167.0, 2333.0, 3499.0],
            ));
            points
        },
        axes: SECONDS,
        status: Status::Partial,
        gap: "Ours copies the cold file to another file (not into memory): O_DIRECT stands for \
              DMA with the cache off, blocked is wall less the process's CPU.",
        cells: |_| read_cells(&[Cold], &[(ReadWrite, SMALL), (Direct, 1 << 20)]),
        ours: uncached_ours,
        compare: compare_uncached,
    }
}

fn table_4() -> Exhibit {
    Exhibit {
        id: "smack-table-4",
        title: "S.M.A.C.K., Tables 4-5: cold against warm cache reads",
        cite: "S.M.A.C.K. thesis, section 5.2, Tables 4 and 5",
        setup: "The same files through a 16 MB LRU buffer cache of 4 KB blocks, first with the \
                cache empty, then again.",
        provenance: "Quoted from Tables 4 and 5, \"normal\" column (cycles x 10^5), in seconds.",
        original: || {
            let mut points = table("cold, normal (Table 4)", [502.0, 4779.0, 10526.0, 18665.0]);
            points.extend(table(
                "warm, normal (Table 5)",
                [46.0, 372.0, 18722.0, 28444.0],
            ));
            points
        },
        axes: SECONDS,
        status: Status::Partial,
        gap: "Through the page cache, which holds every file here: nothing makes the 16 and \
              24 MB files miss as the original's 16 MB cache did (`--scenario cache` does, \
              with flexio's own 16 MiB cache).",
        cells: |_| read_cells(&[Cold, Warm], &[(ReadWrite, SMALL)]),
        ours: cached_ours,
        compare: compare_cached,
    }
}

fn table_6() -> Exhibit {
    Exhibit {
        id: "smack-table-6",
        title: "S.M.A.C.K., Table 6: one 16 MB raw read beside dd bs=16M",
        cite: "S.M.A.C.K. thesis, section 5.2, Table 6 and the dd comparison after it",
        setup: "16 MB read raw in one request: CPU copies 18.23 s, DMA 5.64 s (blocked all but \
                80 us); dd bs=16M on a MacBook's USB reader 4.07 s.",
        provenance: "Quoted from Table 6 and the text after it, in seconds.",
        original: || {
            vec![
                Point::new("S.M.A.C.K. (Table 6)", 0.0, 18.23413),
                Point::new("S.M.A.C.K. (Table 6)", 1.0, 5.64467),
                Point::new("S.M.A.C.K. (Table 6)", 2.0, 4.06631),
            ]
        },
        axes: Axes {
            x: "0: CPU copies / read-write, 1: DMA / O_DIRECT, 2: dd bs=16M",
            y: "seconds for 16 MB",
            log_x: false,
            log_y: true,
        },
        status: Status::Partial,
        gap: "A cold 16 MiB file copied to a file by one 16 MiB request (not a raw device read \
              into memory); dd copies with iflag=direct oflag=direct.",
        cells: |_| raw_cells(),
        ours: raw_ours,
        compare: compare_raw,
    }
}

fn read_cells(caches: &[CacheState], entrants: &[(MechanismName, usize)]) -> Vec<Cell> {
    let mut cells = Vec::new();
    for &cache in caches {
        for size in SIZES {
            let entrants = entrants
                .iter()
                .map(|&(m, chunk)| Entrant::flexio(m, chunk))
                .collect();
            cells.push(Cell::new(
                Scenario::FileToFile,
                size as u64 * MIB,
                cache,
                entrants,
            ));
        }
    }
    cells
}

fn one(
    summaries: &[Summary],
    name: &str,
    cache: CacheState,
    mechanism: MechanismName,
    chunk: usize,
    y: fn(&Summary) -> Option<f64>,
) -> Vec<Point> {
    series(
        summaries,
        name,
        Scenario::FileToFile,
        |c| c.cache == cache && c.chunk == 0 && SIZES.contains(&(c.size as f64 / MIB as f64)),
        |s| measure::is_engine(s, mechanism, Some(chunk as u64)),
        measure::size_mb,
        y,
    )
}

fn uncached_ours(summaries: &[Summary]) -> Vec<Point> {
    let mut points = one(
        summaries,
        "read-write 4 KiB, cold (ours)",
        Cold,
        ReadWrite,
        SMALL,
        wall_s,
    );
    points.extend(one(
        summaries,
        "O_DIRECT 1 MiB (ours)",
        Cold,
        Direct,
        1 << 20,
        wall_s,
    ));
    points.extend(one(
        summaries,
        "O_DIRECT, blocked (ours)",
        Cold,
        Direct,
        1 << 20,
        blocked_s,
    ));
    points
}

fn compare_uncached(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let Some(blocked) = measure::ratio_at(
        ours,
        "O_DIRECT, blocked (ours)",
        "O_DIRECT 1 MiB (ours)",
        24.0,
    ) else {
        return "O_DIRECT at 24 MiB did not run.".into();
    };
    let direct = measure::ratio_at(
        ours,
        "O_DIRECT 1 MiB (ours)",
        "read-write 4 KiB, cold (ours)",
        24.0,
    )
    .unwrap_or(f64::NAN);
    format!(
        "Ours at 24 MiB: O_DIRECT takes {direct:.2}x the cold read-write's time and is blocked \
         {:.0}% of it; the original's DMA took 1.17x the CPU copies' time, blocked 99%: {} in \
         that a request the device serves leaves the CPU free while it waits{}.",
        blocked * 100.0,
        shape(blocked > 0.5),
        if direct < 1.0 {
            "; unlike the SD card's DMA, it is also the faster of the two here"
        } else {
            ", and, as there, the direct request is not faster than the cached read"
        }
    )
}

fn cached_ours(summaries: &[Summary]) -> Vec<Point> {
    let mut points = one(summaries, "cold (ours)", Cold, ReadWrite, SMALL, wall_s);
    points.extend(one(
        summaries,
        "warm (ours)",
        Warm,
        ReadWrite,
        SMALL,
        wall_s,
    ));
    points
}

fn compare_cached(original: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let ratio = |points: &[Point], warm: &str, cold: &str, x: f64| {
        measure::ratio_at(points, warm, cold, x).unwrap_or(f64::NAN)
    };
    let (w, c) = ("warm, normal (Table 5)", "cold, normal (Table 4)");
    format!(
        "Warm over cold, ours: {:.2}x at 1 MB, {:.2}x at 24 MB; the original's: {:.2}x at 1 MB, \
         {:.2}x at 24 MB: {} — below the original's 16 MB cache both gain; above it its LRU \
         cache thrashed on a sequential re-read, while the page cache here holds the whole \
         file, so a warm read slower than a cold one here is not eviction but the noise of the \
         machine (see the spread in results.json).",
        ratio(ours, "warm (ours)", "cold (ours)", 1.0),
        ratio(ours, "warm (ours)", "cold (ours)", 24.0),
        ratio(original, w, c, 1.0),
        ratio(original, w, c, 24.0),
        shape(ratio(ours, "warm (ours)", "cold (ours)", 24.0) > 1.0)
    )
}

const DD: &str = "dd bs=16M iflag=direct oflag=direct";

fn raw_cells() -> Vec<Cell> {
    let request = 16 << 20;
    let dd = PeerSpec::command(
        DD,
        &[
            "dd",
            "if={src}",
            "of={dst}",
            "bs=16M",
            "iflag=direct",
            "oflag=direct",
            "status=none",
        ],
    );
    let entrants = vec![
        Entrant::flexio(ReadWrite, request),
        Entrant::flexio(Direct, request),
        Entrant::Peer(dd),
        Entrant::Limit(Probe::DiskRead),
    ];
    vec![Cell::new(Scenario::FileToFile, 16 * MIB, Cold, entrants)]
}

/// Which summary stands at one x of Table 6.
type Pick = dyn Fn(&Summary) -> bool;

fn raw_ours(summaries: &[Summary]) -> Vec<Point> {
    let cell = |c: &crate::model::CellKey| c.size == 16 * MIB && c.cache == Cold && c.chunk == 0;
    let mut points = Vec::new();
    let picks: [(f64, &Pick); 3] = [
        (0.0, &|s| measure::is_engine(s, ReadWrite, Some(16 << 20))),
        (1.0, &|s| measure::is_engine(s, Direct, Some(16 << 20))),
        (2.0, &|s| measure::is_named(s, DD)),
    ];
    for (x, who) in picks {
        points.extend(series(
            summaries,
            "ours",
            Scenario::FileToFile,
            cell,
            who,
            |_| x,
            wall_s,
        ));
    }
    points
}

fn compare_raw(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let at = |x: f64| measure::at(ours, "ours", x).unwrap_or(f64::NAN);
    format!(
        "Ours: read-write {:.3} s, O_DIRECT {:.3} s, dd {:.3} s for 16 MiB; the original: 18.23 s \
         by CPU copies, 5.64 s by DMA, 4.07 s by dd on another machine: {} (there one large \
         direct request was fastest, 3.2x the CPU copies); the card's ~1 MB/s is now a disk's \
         hundreds of MB/s, and a page-cache read of 16 MiB is no longer the slow path.",
        at(0.0),
        at(1.0),
        at(2.0),
        shape(at(1.0) <= at(0.0).min(at(2.0)))
    )
}
