//! S.M.A.C.K. (Leiden BSc thesis, 2014), section 5: reading files of
//! 1-24 MB from an SD card on a BeagleBoard, with and without DMA and its
//! 16 MB buffer cache, in CPU cycles (one counted per 64 at 720 MHz: a
//! cycle is 64 / 720e6 s); the values here are its tables', in seconds.

use super::super::measure::{self, shape};
use super::super::setup::Setup;
use super::super::{Axes, Exhibit, Numbers, Point};
use super::{no_cells, nothing};
use crate::smack_bench::{cached_series as cached, raw, uncached_series as uncached};

/// Seconds per counted cycle, times the tables' 10^5.
const SECONDS_PER_1E5_CYCLES: f64 = 1e5 * 64.0 / 720e6;
const SIZES: [f64; 4] = [1.0, 8.0, 16.0, 24.0];

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

/// The setups outside the matrix exhibit `id` measures.
pub(super) fn setups(id: &str) -> &'static [Setup] {
    match id {
        "smack-table-3" => &[Setup::SmackUncached],
        "smack-table-4" => &[Setup::SmackCached],
        "smack-table-6" => &[Setup::SmackRaw],
        _ => &[],
    }
}

const NORMAL_3: &str = "normal (Table 3)";
const DMA_3: &str = "DMA (Table 3)";
const BLOCKED_3: &str = "DMA, blocked (Table 3)";

fn table_3() -> Exhibit {
    Exhibit {
        id: "smack-table-3",
        title: "S.M.A.C.K., Table 3: uncached reads, CPU copies against DMA (busy and blocked)",
        cite: "S.M.A.C.K. thesis, section 5.2, Table 3",
        setup: "Files of 1, 8, 16 and 24 MB read whole into memory, 512-byte single-block \
                reads by the CPU against multi-block DMA (8 KB, the file system's cluster), no \
                buffer cache, five runs averaged.",
        provenance: "Quoted from Table 3 (cycles x 10^5), converted to seconds.",
        original: || {
            let mut points = table(NORMAL_3, [128.0, 1029.0, 2022.0, 3030.0]);
            points.extend(table(DMA_3, [148.0, 1178.0, 2356.0, 3534.0]));
            points.extend(table(BLOCKED_3, [146.0, 1167.0, 2333.0, 3499.0]));
            points.extend(table("DMA, system (Table 3)", [1.0, 11.0, 23.0, 35.0]));
            points
        },
        axes: SECONDS,
        numbers: Numbers::Given(&[]),
        ours_setup: "The SD card is stood in for by ext4 on a loop device throttled to 16 MiB/s \
              (root; the rate dd measured is in the setup line): normal is one 512-byte \
              O_DIRECT request per sector into a bounce buffer and a CPU copy out of it (no \
              read-ahead, no page cache), DMA is 8 KiB O_DIRECT requests into memory (the \
              device writes user memory); busy is the process's CPU time, blocked the wall \
              time less it, copy the memcpy alone. The page cache's buffered 512 B reads are \
              drawn beside them.",
        gaps: &[],
        cells: no_cells,
        ours: nothing,
        view: super::as_measured,
        compare: compare_uncached,
    }
}

fn table_4() -> Exhibit {
    Exhibit {
        id: "smack-table-4",
        title: "S.M.A.C.K., Tables 4-5: cold against warm cache reads",
        cite: "S.M.A.C.K. thesis, section 5.2, Tables 4 and 5",
        setup: "The same files through a 16 MB LRU buffer cache of 4 KB blocks, first with the \
                cache empty, then again; single-block reads without DMA (\"normal\") and \
                multi-block DMA: \"the read size is always 4 KB\", each cache block eight \
                512-byte commands copied by the CPU, or one multi-block DMA read with the \
                process blocked (section 5.2).",
        provenance: "Quoted from Tables 4 and 5, \"normal\", \"DMA\" and \"blocked\" columns \
                     (cycles x 10^5), in seconds.",
        original: || {
            let mut points = table("cold, normal (Table 4)", [502.0, 4779.0, 10526.0, 18665.0]);
            points.extend(table(
                "warm, normal (Table 5)",
                [46.0, 372.0, 18722.0, 28444.0],
            ));
            points.extend(table(
                "cold, DMA (Table 4)",
                [788.0, 6899.0, 15063.0, 25352.0],
            ));
            points.extend(table(
                "warm, DMA (Table 5)",
                [47.0, 377.0, 22797.0, 34507.0],
            ));
            points.extend(table(
                "cold, DMA, blocked (Table 4)",
                [412.0, 3282.0, 6561.0, 9842.0],
            ));
            points
        },
        axes: SECONDS,
        numbers: Numbers::Given(&[]),
        ours_setup:
            "The original's buffer cache is stood in for by flexio-cache's BlockCache (16 MiB \
              of 4 KiB blocks, LRU) over O_DIRECT: \"normal\" reads each missing block as \
              eight 512-byte requests into a bounce buffer the CPU copies from (its \
              `ReadMode::Sectors`, the card's single-sector commands), DMA as one 4 KiB \
              request per cache block with the reader blocked while it waits, no coalescing \
              or read-ahead (`ReadMode::SingleBlock`); the cache-off row is 4 KiB O_DIRECT \
              reads into memory. The files are on ext4 on a loop device throttled to 16 MiB/s \
              (root; the rate dd measured is in the setup line).",
        gaps: &[],
        cells: no_cells,
        ours: nothing,
        view: super::as_measured,
        compare: compare_cached,
    }
}

fn table_6() -> Exhibit {
    Exhibit {
        id: "smack-table-6",
        title: "S.M.A.C.K., Table 6: one 16 MB raw read beside dd bs=16M",
        cite: "S.M.A.C.K. thesis, section 5.2, Table 6 and the dd comparison after it",
        setup: "16 MB read raw (no file system) in one request: CPU copies 18.23 s, DMA 5.64 s \
                (blocked all but 80 us); dd bs=16M count=1 on a MacBook's USB reader 4.07 s.",
        provenance: "Quoted from Table 6 and the text after it, in seconds.",
        original: || {
            vec![
                Point::new("S.M.A.C.K. (Table 6)", 0.0, 18.23413),
                Point::new("S.M.A.C.K. (Table 6)", 1.0, 5.64467),
                Point::new("S.M.A.C.K. (Table 6)", 2.0, 4.06631),
                Point::new("S.M.A.C.K., blocked (Table 6)", 1.0, 5.64459),
                Point::new("S.M.A.C.K., copy (Table 6)", 0.0, 5.73318),
                Point::new("S.M.A.C.K., system (Table 6)", 1.0, 7.95556e-5),
            ]
        },
        axes: Axes {
            x: "0: normal (512 B sectors + CPU copy), 1: DMA (one 16 MiB O_DIRECT request), 2: dd bs=16M",
            y: "seconds for 16 MB",
            log_x: false,
            log_y: true,
        },
        numbers: Numbers::Given(&[]),
        ours_setup: "The SD card is stood in for by a loop block device over a file on this \
              machine's disk (its pages cached) throttled by blkio to 16 MiB/s, read raw into \
              memory (root): normal by one 512-byte O_DIRECT request per sector into a bounce \
              buffer and a CPU copy, its copy timed alone (the copy column; the other rows copy \
              nothing); DMA by one 16 MiB O_DIRECT request; dd as a process with iflag=direct, \
              of=/dev/null. Busy (the original's system) and blocked in every row.",
        gaps: &[],
        cells: no_cells,
        ours: nothing,
        view: super::as_measured,
        compare: compare_raw,
    }
}

fn compare_uncached(original: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let at = |points: &[Point], series: &str| measure::at(points, series, 24.0).unwrap_or(f64::NAN);
    let (normal, dma) = (at(ours, uncached::NORMAL), at(ours, uncached::DIRECT_MULTI));
    let blocked = at(ours, uncached::DIRECT_MULTI_BLOCKED) / dma;
    let busy = at(ours, uncached::NORMAL_BUSY) / normal;
    let copy = at(ours, uncached::NORMAL_COPY) / normal;
    let buffered = at(ours, uncached::BUFFERED_512);
    let theirs = at(original, DMA_3) / at(original, NORMAL_3);
    let their_blocked = at(original, BLOCKED_3) / at(original, DMA_3);
    format!(
        "At 24 MB, ours: DMA (8 KiB O_DIRECT) takes {:.2}x the time of normal (512 B sectors \
         with a CPU copy) and is blocked {:.0}% of it; normal keeps the CPU busy {:.0}% of its \
         time, {:.1}% of it copying. The original's DMA took {theirs:.2}x normal's time, \
         blocked {:.0}%: {} in that a request the device serves leaves the CPU free while it \
         waits{}. The page cache's 512 B reads, whose read-ahead turns them into large \
         requests, take {:.2}x normal's time.",
        dma / normal,
        blocked * 100.0,
        busy * 100.0,
        copy * 100.0,
        their_blocked * 100.0,
        shape(blocked > 0.5),
        if dma < normal {
            "; unlike the SD card's DMA it is also the faster of the two here (fewer, larger \
             requests to a device that serves each at a cost)"
        } else {
            ", and, as there, the direct read is not the faster"
        },
        buffered / normal,
    )
}

fn compare_cached(original: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let ratio = |points: &[Point], warm: &str, cold: &str, x: f64| {
        measure::ratio_at(points, warm, cold, x).unwrap_or(f64::NAN)
    };
    let ours_at = |x| ratio(ours, cached::WARM_NORMAL, cached::COLD_NORMAL, x);
    let theirs_at = |x| {
        ratio(
            original,
            "warm, normal (Table 5)",
            "cold, normal (Table 4)",
            x,
        )
    };
    let (small, exact, large) = (ours_at(1.0), ours_at(16.0), ours_at(24.0));
    format!(
        "Warm over cold, normal, ours: {small:.3}x at 1 MB, {exact:.3}x at 16 MB, \
         {large:.2}x at 24 MB; the original's: {:.2}x, {:.2}x, {:.2}x: {} at 1 and 24 MB — a \
         file that fits the 16 MiB cache is read again from memory, one that outgrows it \
         misses on every block of a sequential re-read (LRU evicts the file's head before the \
         pass comes back to it), here as there. {} The cache off (4 KiB O_DIRECT into memory) \
         takes {:.2}x the cold normal pass at 24 MB (the original's uncached reads: \
         {:.2}x its cold cached ones, which also paid for allocating every block). {}",
        theirs_at(1.0),
        theirs_at(16.0),
        theirs_at(24.0),
        shape(small < 0.5 && large > 0.5),
        if exact < 0.5 {
            "At 16 MB ours hits where the original missed: the file is exactly the cache's \
             4096 blocks and nothing else shares the cache here, while the original's was a \
             block-device cache that likely also held the file system's own blocks (its FAT \
             and directory), so 16 MB of data no longer fitted."
        } else {
            "At 16 MB ours misses too, as the original's did."
        },
        ratio(ours, cached::CACHE_OFF, cached::COLD_NORMAL, 24.0),
        3030.0 / 18665.0,
        dma_against_normal(original, ours),
    )
}

/// Table 4's DMA against normal, cold, at the largest file: its time and
/// the share of it blocked.
fn dma_against_normal(original: &[Point], ours: &[Point]) -> String {
    let at = |points: &[Point], series: &str| measure::at(points, series, 24.0);
    let (Some(dma), Some(normal), Some(blocked)) = (
        at(ours, cached::COLD_DMA),
        at(ours, cached::COLD_NORMAL),
        at(ours, cached::COLD_DMA_BLOCKED),
    ) else {
        return "DMA or normal did not run.".into();
    };
    let theirs = |series| at(original, series).unwrap_or(f64::NAN);
    let their_dma = theirs("cold, DMA (Table 4)");
    let their_normal = theirs("cold, normal (Table 4)");
    let their_blocked = theirs("cold, DMA, blocked (Table 4)");
    format!(
        "Cold at 24 MB, DMA (one request per block) takes {:.2}x normal's time (512 B sectors \
         copied), blocked {:.0}% of it; the original's DMA took {:.2}x, blocked {:.0}%: {} in \
         that DMA leaves the CPU free for most of its wait{}.",
        dma / normal,
        100.0 * blocked / dma,
        their_dma / their_normal,
        100.0 * their_blocked / their_dma,
        shape(blocked > 0.5 * dma),
        if dma < normal {
            "; unlike the card's, ours is also the faster (eight requests per block cost more \
             than one here, where the card's DMA setup per block cost more than its sectors)"
        } else {
            ", and, as there, not the faster"
        },
    )
}

fn compare_raw(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let at = |series: &str, x: f64| measure::at(ours, series, x).unwrap_or(f64::NAN);
    let (copies, dma, dd) = (at(raw::WALL, 0.0), at(raw::WALL, 1.0), at(raw::WALL, 2.0));
    let copy = at(raw::COPY, 0.0);
    format!(
        "Ours for 16 MiB: normal {copies:.4} s (copying {copy:.4} s of it), one O_DIRECT \
         request {dma:.4} s (blocked {:.0}% of it), dd {dd:.4} s; the original: 18.23 s \
         normal (copying 5.73 s), 5.64 s by DMA (blocked 99.998%), 4.07 s by dd on another \
         machine: {} (one large direct request beats the sector-by-sector copies, {:.1}x here \
         against 3.2x there, and dd, one request too, is near it{}). The original's copy was \
         as long as its DMA; ours is {:.2}x the DMA: today's memcpy outruns the device by far \
         more than the 2014 board's did.",
        100.0 * at(raw::BLOCKED, 1.0) / dma,
        shape(dma < copies && dd < 3.0 * dma),
        copies / dma,
        if dd > dma {
            ", slower by its start as a process"
        } else {
            ""
        },
        copy / dma
    )
}
