//! TPIL (Georgia Tech, ~2002): host -> device injection by PIO (CPU
//! stores, MMX/SSE) and three DMA modes, by injection size. The host half
//! maps onto memory -> memory copies, each copy kernel (TPIL's CPU
//! stores' heirs) against the C library's memcpy; the device half needs a
//! device.

use flexio::profile::FlowKind;
use flexio::CopyKernel;
use flexio::MechanismName::ReadWrite;

use super::super::measure::{self, mb_per_s, series, shape};
use super::super::{Axes, Exhibit, Numbers, Point};
use flexio_bench::limits::Probe;
use flexio_bench::model::CacheState::NotApplicable;
use flexio_bench::model::Contender;
use flexio_bench::model::Scenario;
use flexio_bench::plan::{copy_kernel_entrants, Cell, Entrant};
use flexio_bench::stats::Summary;

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
        numbers: Numbers::Given(&[]),
        ours_setup: "Full for the host half: flexio's memory flow with each copy kernel this CPU has \
              (memcpy, rep movsb, AVX2/AVX-512 non-temporal stores standing for MMX/SSE, \
              several threads) against the C library's memcpy, 64 B to 1 GiB. The DMA half \
              (one-copy, double-buffered and zero-copy pinned DMA) waits for a machine with a \
              GPU: host -> device copies by size from pageable against pinned memory, with one \
              and two staging buffers, would run it.",
        gaps: &["the DMA half (one-copy, double-buffered and zero-copy pinned DMA) waits for a machine with a GPU"],
        cells: memory_cells,
        ours: memory_ours,
        view: super::as_measured,
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
        numbers: Numbers::Given(&[]),
        ours_setup: "",
        gaps: &[
            "A device exhibit: it would run on a machine with a GPU (host -> device copies by \
              size, pageable against pinned memory, one and two staging buffers). flexio's GPU endpoint \
              (`flexio copy FILE gpu:N --via MODE`) has not run on a GPU yet, and this \
              exhibit's cells are not built.",
        ],
        cells: super::no_cells,
        ours: super::nothing,
        view: super::as_measured,
        compare: |_, _| "Nothing of ours to compare: no GPU run.".to_string(),
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
            let mut entrants = vec![Entrant::flexio(ReadWrite, 256 << 10)];
            entrants.extend(copy_kernel_entrants());
            entrants.push(Entrant::Limit(Probe::Memcpy));
            Cell::new(
                Scenario::Flow(FlowKind::MemoryToMemory),
                size,
                NotApplicable,
                entrants,
            )
        })
        .collect()
}

const MEMCPY: &str = "memcpy (ours)";

/// The series of flexio's memory flow with `kernel`.
fn flow_series(kernel: CopyKernel) -> String {
    format!("flexio memory flow, {kernel} (ours)")
}

/// Whether `summary` is the engine's read-write memory flow with `kernel`.
fn is_flow_with(summary: &Summary, kernel: CopyKernel) -> bool {
    matches!(
        &summary.contender,
        Contender::Flexio { mechanism: ReadWrite, builtin_table: false, copy_kernel, .. }
            if *copy_kernel == kernel
    )
}

fn memory_ours(summaries: &[Summary]) -> Vec<Point> {
    let mut points = series(
        summaries,
        MEMCPY,
        Scenario::Flow(FlowKind::MemoryToMemory),
        |_| true,
        |s| measure::is_named(s, "memcpy"),
        |s| s.cell.size as f64,
        mb_per_s,
    );
    for kernel in CopyKernel::ALL {
        points.extend(series(
            summaries,
            &flow_series(kernel),
            Scenario::Flow(FlowKind::MemoryToMemory),
            |_| true,
            |s| is_flow_with(s, kernel),
            |s| s.cell.size as f64,
            mb_per_s,
        ));
    }
    points
}

fn compare_memory(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let flow = flow_series(CopyKernel::Memcpy);
    // The smallest size from which the flow, one call per chunk, gets
    // within half of memcpy: below it the per-call cost dominates, as the
    // DMA set-up did below TPIL's 16 KB crossover.
    let crossover = ours
        .iter()
        .filter(|p| p.series == flow)
        .find(|p| measure::ratio_at(ours, &flow, MEMCPY, p.x).is_some_and(|r| r >= 0.5))
        .map(|p| p.x);
    let calls = match crossover {
        Some(size) => format!(
            "Ours: flexio's flow, which pays a call per transfer, reaches half of memcpy's rate \
             from {} on and loses below; TPIL's DMA, which pays a set-up per transfer, beat PIO \
             only above 16 KB: {} — both a fixed cost per transfer against a cheaper copy, at a \
             size set by today's caches instead of a PCI bus (whose 30 MB/s host memory does not \
             have).",
            flexio_bench::table::short_size(size as u64),
            shape(size > 1024.0)
        ),
        None => "Ours: flexio's flow never got within half of memcpy: no crossover, unlike \
                 TPIL's at 16 KB."
            .to_string(),
    };
    format!("{calls} {}", kernel_winners(ours))
}

/// Which copy kernel led the memory flow at each size, against the same
/// flow with memcpy (like with like: both pay the flow's set-up).
fn kernel_winners(ours: &[Point]) -> String {
    let base = flow_series(CopyKernel::Memcpy);
    let mut sizes: Vec<f64> = ours
        .iter()
        .filter(|p| p.series == base)
        .map(|p| p.x)
        .collect();
    sizes.dedup();
    let mut wins = Vec::new();
    for size in sizes {
        let best = CopyKernel::ALL
            .into_iter()
            .filter_map(|k| Some((k, measure::ratio_at(ours, &flow_series(k), &base, size)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        // Within 5% is the run-to-run noise of this machine, not a lead.
        if let Some((kernel, ratio)) = best.filter(|(k, r)| *k != CopyKernel::Memcpy && *r > 1.05) {
            wins.push((
                size,
                format!(
                    "{} at {} ({ratio:.2}x)",
                    kernel,
                    flexio_bench::table::short_size(size as u64)
                ),
            ));
        }
    }
    if wins.is_empty() {
        "Copy kernels: none beat memcpy in the same flow by more than 5% at any size \
         (rep movsb, non-temporal stores, threads), so tune has nothing to gain over memcpy; \
         TPIL's SSE stores did beat its MMX stores above 2 KB."
            .to_string()
    } else {
        let large_only = wins.iter().all(|(size, _)| *size >= (1u64 << 20) as f64);
        let text: Vec<&str> = wins.iter().map(|(_, text)| text.as_str()).collect();
        format!(
            "Copy kernels more than 5% ahead of memcpy in the same flow: {}; memcpy (or a \
             kernel within 5% of it) led at the other sizes. {}",
            text.join(", "),
            if large_only {
                "They lead only from 1 MiB up, where the copy outgrows the caches: the \
                 opposite end from TPIL's CPU stores, which won small injections."
            } else {
                "Unlike TPIL's CPU stores, whose lead was below 16 KB, ours is not confined \
                 to one end of the sizes."
            }
        )
    }
}
