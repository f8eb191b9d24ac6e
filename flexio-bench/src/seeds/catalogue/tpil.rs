//! TPIL (Georgia Tech, ~2002): host -> device injection by PIO (CPU
//! stores, MMX/SSE) and three DMA modes, by injection size. The host half
//! maps onto memory -> memory copies; the device half needs a device.

use flexio::MechanismName::ReadWrite;

use super::super::measure::{self, mb_per_s, series, shape};
use super::super::{Axes, Exhibit, Point, Status};
use crate::limits::Probe;
use crate::model::CacheState::NotApplicable;
use crate::model::Scenario;
use crate::plan::{Cell, Entrant};
use crate::stats::Summary;

const BY_INJECTION: Axes = Axes {
    x: "injection size (bytes)",
    y: "throughput (MB/s)",
    log_x: true,
    log_y: true,
};

pub(super) fn exhibits() -> Vec<Exhibit> {
    vec![pio_host(), device()]
}

fn pio_host() -> Exhibit {
    Exhibit {
        id: "tpil-fig-2-3",
        title: "TPIL, Figures 2-3: PIO and DMA injection by size, Pentium III 550 MHz",
        cite: "TPIL paper, section 4, Figures 2 (Myrinet LANai 4) and 3 (RC-1000)",
        setup: "MMX and SSE stores (PIO) against one-copy, double-buffered one-copy and \
                zero-copy DMA, each size measured 32 times.",
        provenance: "Plots; the text states PIO wins up to 16 KB on the LANai 4 (SSE slightly \
                     ahead above 2 KB) and that RC-1000 PIO falls to a steady 30 MB/s above \
                     2 KB: drawn as one point at 2 KB.",
        original: || {
            vec![Point::new(
                "RC-1000 PIO, steady above 2 KB (text)",
                2048.0,
                30.0,
            )]
        },
        axes: BY_INJECTION,
        status: Status::Partial,
        gap: "The host half only, with the C library's memcpy and flexio's read-write memory \
              flow: no copy kernels (rep movsb, non-temporal AVX stores, threads) to stand for \
              MMX/SSE; the DMA half needs a device (a GPU: pageable against pinned copies).",
        cells: memory_cells,
        ours: memory_ours,
        compare: compare_memory,
    }
}

fn device() -> Exhibit {
    Exhibit {
        id: "tpil-fig-4-5",
        title: "TPIL, Figures 4-5: Myrinet LANai 9 injection on three hosts",
        cite: "TPIL paper, section 4, Figures 4 and 5",
        setup: "Pentium Pro 200 MHz, Pentium III 550 MHz and Pentium IV Xeon (Intel 860, \
                32- and 64-bit PCI), PIO against DMA by size.",
        provenance: "The text states: the P4 was limited to 140 MB/s before a chipset patch; \
                     32-bit PCI DMA peaked at 90 MB/s (so SSE won at every size); 64-bit PIO \
                     plateaued at 53 MB/s above 512 bytes.",
        original: || {
            vec![Point::new(
                "P4 64-bit PCI, MMX/SSE plateau above 512 B (text)",
                512.0,
                53.0,
            )]
        },
        axes: BY_INJECTION,
        status: Status::None,
        gap: "A device exhibit: it would run on a machine with a GPU (host -> device copies by \
              size, pageable against pinned memory, one and two staging buffers); flexio has \
              no device endpoint.",
        cells: super::no_cells,
        ours: super::nothing,
        compare: |_, _| "Nothing of ours to compare: no device endpoint.".to_string(),
    }
}

fn memory_cells(quick: bool) -> Vec<Cell> {
    let mut sizes: Vec<u64> = vec![64, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 1 << 20, 16 << 20];
    if !quick {
        sizes.extend([256 << 20, 1 << 30]);
    }
    sizes
        .into_iter()
        .map(|size| {
            let entrants = vec![
                Entrant::flexio(ReadWrite, 256 << 10),
                Entrant::Limit(Probe::Memcpy),
            ];
            Cell::new(Scenario::Memory, size, NotApplicable, entrants)
        })
        .collect()
}

const MEMCPY: &str = "memcpy (ours)";

fn memory_ours(summaries: &[Summary]) -> Vec<Point> {
    let mut points = series(
        summaries,
        MEMCPY,
        Scenario::Memory,
        |_| true,
        |s| measure::is_named(s, "memcpy"),
        |s| s.cell.size as f64,
        mb_per_s,
    );
    points.extend(series(
        summaries,
        "flexio read-write memory flow (ours)",
        Scenario::Memory,
        |_| true,
        |s| measure::is_engine(s, ReadWrite, Some(256 << 10)),
        |s| s.cell.size as f64,
        mb_per_s,
    ));
    points
}

fn compare_memory(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let flow = "flexio read-write memory flow (ours)";
    // The smallest size from which the flow, one call per chunk, gets
    // within half of memcpy: below it the per-call cost dominates, as the
    // DMA set-up did below TPIL's 16 KB crossover.
    let crossover = ours
        .iter()
        .filter(|p| p.series == flow)
        .find(|p| measure::ratio_at(ours, flow, MEMCPY, p.x).is_some_and(|r| r >= 0.5))
        .map(|p| p.x);
    match crossover {
        Some(size) => format!(
            "Ours: flexio's flow, which pays a call per transfer, reaches half of memcpy's rate \
             from {} on and loses below; TPIL's DMA, which pays a set-up per transfer, beat PIO \
             only above 16 KB: {} — both a fixed cost per transfer against a cheaper copy, at a \
             size set by today's caches instead of a PCI bus (whose 30 MB/s host memory does not \
             have).",
            crate::table::short_size(size as u64),
            shape(size > 1024.0)
        ),
        None => "Ours: flexio's flow never got within half of memcpy: no crossover, unlike \
                 TPIL's at 16 KB."
            .to_string(),
    }
}
