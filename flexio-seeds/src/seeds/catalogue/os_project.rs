//! The OS course project (NTU, 2020), section 3: master -> slave over a
//! socket with file I/O or mmap on each side. Ours is the socket pair: a
//! flexio sender flow and a flexio receiver flow, each by its own
//! mechanism, moving the input's files one after the other over one
//! loopback connection, or (Figure 5, as the original's slave did) a new
//! one for each file (`runner/pair.rs`). The figures are bar charts the
//! seed does not hold; the values are the ratios its text states,
//! expressed as transmission time relative to file I/O on both sides.

use flexio::MechanismName::{self, *};

use super::super::{Axes, Exhibit, Numbers, Point};
use flexio_bench::model::CacheState::{Cold, NotApplicable};
use flexio_bench::model::Scenario;
use flexio_bench::plan::{Cell, Entrant};

mod pairs;

use pairs::{
    async_ours, compare_async, compare_files, compare_samples, compare_sweep, files_ours,
    samples_ours, sweep_ours,
};

const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;
/// Section 3.1 sets buffer and map size to one page.
const PAGE: u64 = 4 * KIB;
/// Sample input 1: ten files of about 23.6 KB in all.
const SAMPLE_1: (u64, u32) = (24_160, 10);
/// Sample input 2: one 11 MB file.
const SAMPLE_2: (u64, u32) = (11 * MIB, 1);
/// Figure 5's file counts for its 1000 MB.
const FILE_COUNTS: [u32; 3] = [1, 5, 10];
/// Figure 6's buffer and map sizes.
const SWEEP: [u64; 4] = [PAGE, 64 * KIB, MIB, 8 * MIB];
/// The file of Figures 6 and 7 (the original does not say its size).
const SWEEP_SIZE: u64 = 64 * MIB;

/// Each side's method, as the original names it.
const METHODS: [(MechanismName, &str); 2] = [(ReadWrite, "file I/O"), (Mmap, "mmap")];

pub(super) fn exhibits() -> Vec<Exhibit> {
    vec![fig_4(), fig_5(), fig_6(), fig_7()]
}

fn fig_4() -> Exhibit {
    Exhibit {
        id: "os-fig-4",
        title: "OS project, Figure 4: sample inputs, file I/O against mmap",
        cite: "OS project report, section 3.1 (\"Sample Input\"), Figure 4",
        setup: "Master and slave each by file I/O or mmap (4 combinations), buffer = map = \
                4096 bytes; sample input 1 is ten files of 23.6 KB in all, sample input 2 one \
                11 MB file; kernel 4.14.25 on a notebook.",
        provenance: "The text states file I/O was faster, for sample input 2 \"even more than \
                     twice\" as fast as mmap: drawn as mmap's time at 2x file I/O's at 11 MB.",
        original: || {
            vec![
                Point::new("file I/O (text)", 11.0, 1.0),
                Point::new("mmap (text: > 2x slower)", 11.0, 2.0),
            ]
        },
        axes: Axes {
            x: "input (MB in all: sample 1 = 0.023, sample 2 = 11)",
            y: "transmission time / file I/O -> file I/O's",
            log_x: true,
            log_y: false,
        },
        numbers: Numbers::Given(&[]),
        ours_setup:
            "A flexio sender (read-write or mmap, 4 KiB) and a flexio receiver (read-write or \
              mmap, 4 KiB) over one loopback connection, the files one after the other, each \
              with its length; sample input 1 as ten files of 2416 bytes (the original's \
              sizes are not given, only their sum).",
        gaps: &[],
        cells: |_| combination_cells(&[SAMPLE_1, SAMPLE_2]),
        ours: samples_ours,
        view: super::as_measured,
        compare: compare_samples,
    }
}

/// Figure 5's total: 1000 MB, or 250 MiB in the quick run.
fn generated_total(quick: bool) -> u64 {
    if quick {
        250 * MIB
    } else {
        1000 * MIB
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
                Point::new("file I/O -> file I/O (text)", 1.0, 1.0),
                Point::new("file I/O -> mmap (text: ~20% faster)", 1.0, 1.0 / 1.2),
            ]
        },
        axes: Axes {
            x: "files (the same total in each)",
            y: "transmission time / file I/O -> file I/O's with 1 file",
            log_x: false,
            log_y: false,
        },
        numbers: Numbers::Given(&[]),
        ours_setup: "The 4 combinations, a new loopback connection for each file as the \
              original's slave connected once per file, the sources cold (their pages \
              dropped before each run: fsync, posix_fadvise DONTNEED, drop_caches as root); \
              the full run moves 1000 MiB, the quick run 250 MiB.",
        gaps: &[],
        cells: |quick| {
            let total = generated_total(quick);
            combination_cells(&FILE_COUNTS.map(|files| (total, files)))
                .into_iter()
                .map(cold_per_file)
                .collect()
        },
        ours: files_ours,
        view: super::as_measured,
        compare: compare_files,
    }
}

fn fig_6() -> Exhibit {
    Exhibit {
        id: "os-fig-6",
        title: "OS project, Figure 6: buffer size against map size",
        cite: "OS project report, sections 3.2 and 3.4, Figure 6",
        setup: "The same transfer with growing buffer sizes (file I/O) and map sizes (mmap), \
                on both master and slave.",
        provenance: "A bar chart not in the seed's text, so no points; the text states a \
                     larger map is clearly faster (up to three times) and a larger buffer \
                     faster by less.",
        original: pairs::sweep_original,
        axes: Axes {
            x: "buffer or map size (KiB)",
            y: "transmission time / its own at 4 KiB",
            log_x: true,
            log_y: false,
        },
        numbers: Numbers::Given(&[pairs::THREE_TIMES]),
        ours_setup:
            "One 64 MiB file (the original does not give its input), both sides read-write \
              by buffer size or both mmap by map size, 4 KiB to 8 MiB.",
        gaps: &[],
        cells: |_| sweep_cells(),
        ours: sweep_ours,
        view: super::as_measured,
        compare: compare_sweep,
    }
}

fn fig_7() -> Exhibit {
    Exhibit {
        id: "os-fig-7",
        title: "OS project, Figure 7: synchronous against asynchronous sockets",
        cite: "OS project report, section 3.3, Figure 7",
        setup: "Kernel sockets with O_SYNC against FASYNC, with file I/O and with mmap on \
                the master and on the slave.",
        provenance: "A bar chart not in the seed's text, so no points; the text states \
                     asynchronous was faster in every case, by less when the master used mmap.",
        original: super::no_points,
        axes: Axes {
            x: "0: file I/O both sides, 1: mmap master, 2: mmap slave",
            y: "time / synchronous (blocking read-write)'s",
            log_x: false,
            log_y: false,
        },
        numbers: Numbers::NotGiven,
        ours_setup: "Asynchronous is io_uring (the original's FASYNC kernel socket has no \
              user-space equivalent): file I/O is read-write against io_uring on both sides; \
              with mmap on one side the other side's socket is blocking read-write or \
              io_uring (flexio's mmap reads or writes its socket blocking). One 64 MiB file, \
              4 KiB buffers and maps.",
        gaps: &[],
        cells: |_| async_cells(),
        ours: async_ours,
        view: super::as_measured,
        compare: compare_async,
    }
}

/// A socket-pair cell of `total` bytes in `files` files.
fn pair_cell(total: u64, files: u32, entrants: Vec<Entrant>) -> Cell {
    Cell::new(Scenario::SocketPair, total, NotApplicable, entrants)
        .flows(files)
        .path("loopback")
}

/// `cell` as Figure 5 ran it: a connection per file, the sources cold.
fn cold_per_file(mut cell: Cell) -> Cell {
    cell.key.cache = Cold;
    cell.connection_per_file()
}

/// The 4 combinations master x slave at one page, for each input.
fn combination_cells(inputs: &[(u64, u32)]) -> Vec<Cell> {
    let entrants: Vec<Entrant> = METHODS
        .iter()
        .flat_map(|&(master, _)| {
            METHODS
                .iter()
                .map(move |&(slave, _)| Entrant::pair(master, slave, PAGE as usize))
        })
        .collect();
    inputs
        .iter()
        .map(|&(total, files)| pair_cell(total, files, entrants.clone()))
        .collect()
}

fn sweep_cells() -> Vec<Cell> {
    SWEEP
        .iter()
        .map(|&chunk| {
            let entrants = METHODS
                .iter()
                .map(|&(m, _)| Entrant::pair(m, m, chunk as usize))
                .collect();
            pair_cell(SWEEP_SIZE, 1, entrants).chunk(chunk)
        })
        .collect()
}

/// Figure 7's groups: (master, slave) synchronous, then asynchronous.
const ASYNC_GROUPS: [[(MechanismName, MechanismName); 2]; 3] = [
    [(ReadWrite, ReadWrite), (IoUring, IoUring)],
    [(Mmap, ReadWrite), (Mmap, IoUring)],
    [(ReadWrite, Mmap), (IoUring, Mmap)],
];

fn async_cells() -> Vec<Cell> {
    let entrants = ASYNC_GROUPS
        .iter()
        .flatten()
        .map(|&(master, slave)| Entrant::pair(master, slave, PAGE as usize))
        .collect();
    vec![pair_cell(SWEEP_SIZE, 1, entrants)]
}
