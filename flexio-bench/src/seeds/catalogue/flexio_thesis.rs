//! FlexIO (Univ. of Kansas MS thesis, 2000), chapter 4: disk→disk by file
//! size and buffer size, disk→network, network→network, the WildForce
//! board. Its figures are plots; the seed holds the text only, so the
//! values here are those the text states.

use flexio::MechanismName::{self, *};

use super::super::measure::{self, mb_per_s, ratios_at_ends, series, shape, size_mb};
use super::super::{Axes, Exhibit, Point, Status};
use super::{no_cells, no_points, nothing};
use crate::model::CacheState::{Cold, Warm};
use crate::model::Scenario;
use crate::plan::{Cell, Entrant};
use crate::stats::Summary;

const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

const BY_SIZE: Axes = Axes {
    x: "file size (MB)",
    y: "throughput (MB/s)",
    log_x: true,
    log_y: true,
};

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
        original: no_points,
        axes: BY_SIZE,
        status: Status::Partial,
        gap: "No low-memory setting (the original's 128 MB made the cache fill at 50-200 MB; \
              ours never fills at these sizes), one disk only, and no values to draw from the \
              original's plots.",
        cells: disk_cells,
        ours: by_size_ours,
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
        original: no_points,
        axes: BY_SIZE,
        status: Status::Partial,
        gap: "No low-memory setting and one disk only; the original's values are plots the seed \
              does not hold.",
        cells: disk_cells,
        ours: by_size_ours,
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
        original: no_points,
        axes: Axes {
            x: "buffer size (KB)",
            y: "throughput (MB/s)",
            log_x: true,
            log_y: false,
        },
        status: Status::Partial,
        gap: "Synced and cold from 1 KiB, but no low-memory setting (a 128 MB machine); the \
              quick run copies 64 MiB, the full run 100 MiB.",
        cells: buffer_cells,
        ours: buffer_ours,
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
        status: Status::Partial,
        gap: "No socket-buffer sweep (ours runs TCP with the kernel's buffer sizing) and \
              loopback instead of a 1999 Ethernet.",
        cells: network_cells,
        ours: network_ours,
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
        status: Status::None,
        gap: "Would run as a net -> net relay across three network namespaces (veth pairs, the \
              middle forwarding by splice); the bench has no such scenario yet.",
        cells: no_cells,
        ours: nothing,
        compare: |_, _| "Nothing of ours to compare: no relay scenario.".to_string(),
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
        status: Status::None,
        gap: "A device exhibit: it would run on a machine with a GPU as the board (file -> \
              device memory and back, pageable against pinned buffers); flexio has no device \
              endpoint.",
        cells: no_cells,
        ours: nothing,
        compare: |_, _| "Nothing of ours to compare: no device endpoint.".to_string(),
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
            let entrants = [ReadWrite, Mmap, CopyFileRange]
                .into_iter()
                .map(|m| Entrant::flexio(m, MIB as usize))
                .collect();
            Cell::new(Scenario::FileToFileDurable, size, Cold, entrants)
        })
        .collect()
}

const USER: &str = "read-write, 1 MiB buffer (ours)";
const MAPPED: &str = "mmap (ours)";
const KERNEL: &str = "copy_file_range, in the kernel (ours)";

fn by_size_ours(summaries: &[Summary]) -> Vec<Point> {
    let one = |name: &str, mechanism: MechanismName| {
        series(
            summaries,
            name,
            Scenario::FileToFileDurable,
            |c| c.chunk == 0,
            |s| measure::is_engine(s, mechanism, Some(MIB)),
            size_mb,
            mb_per_s,
        )
    };
    let mut points = one(USER, ReadWrite);
    points.extend(one(MAPPED, Mmap));
    points.extend(one(KERNEL, CopyFileRange));
    points
}

fn compare_mmap(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let Some((low, small, high, large)) = ratios_at_ends(ours, MAPPED, USER) else {
        return "mmap or read-write did not run: no ratio to compare.".into();
    };
    let same = small > 1.0 && large <= small;
    format!(
        "Ours, cold and synced: mmap at {small:.2}x read-write at {low:.0} MB and {large:.2}x at \
         {high:.0} MB; the original had mmap ahead up to 50 MB and behind above 200 MB on a \
         128 MB machine whose cache filled: {} — the original blamed its small cache; ours has \
         memory to spare, so a decline here comes from elsewhere (mmap's page faults and \
         write-back of dirty mappings against a synced disk), and this run cannot test theirs \
         without a low-memory setting.",
        shape(same)
    )
}

fn compare_in_kernel(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let Some((low, small, high, large)) = ratios_at_ends(ours, KERNEL, USER) else {
        return "copy_file_range or read-write did not run: no ratio to compare.".into();
    };
    let same = (0.85..=1.15).contains(&small) && (0.85..=1.15).contains(&large);
    format!(
        "Ours: in the kernel at {small:.2}x the user buffer at {low:.0} MB and {large:.2}x at \
         {high:.0} MB; the original found the two almost identical: {} (within 15% counts as \
         identical) — a synced cold copy waits on the disk whichever way the bytes go.",
        shape(same)
    )
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
            Cell::new(Scenario::FileToFileDurable, size, Cold, entrants).chunk(chunk)
        })
        .collect()
}

fn buffer_ours(summaries: &[Summary]) -> Vec<Point> {
    let one = |name: &str, mechanism: MechanismName| {
        series(
            summaries,
            name,
            Scenario::FileToFileDurable,
            |c| c.chunk != 0,
            |s| measure::is_engine(s, mechanism, Some(s.cell.chunk)),
            |s| s.cell.chunk as f64 / 1024.0,
            mb_per_s,
        )
    };
    let mut points = one("read-write by buffer (ours)", ReadWrite);
    points.extend(one("copy_file_range by length (ours)", CopyFileRange));
    points
}

fn compare_buffer(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let name = "read-write by buffer (ours)";
    let (Some(small), Some(large)) = (
        measure::at(ours, name, 1.0),
        measure::at(ours, name, 1024.0),
    ) else {
        return "read-write at 1 KiB or 1 MiB did not run: no difference to compare.".into();
    };
    let share = (large - small) / large;
    format!(
        "Ours: read-write at 1 MiB buffers {:.1} MB/s faster than at 1 KiB ({:.0}% of its \
         throughput); the original's 1 KB to 1 MB difference was about 0.1 MB/s, small against its \
         throughput: {} — {}",
        large - small,
        share * 100.0,
        shape(share.abs() < 0.25),
        "a system call per KiB costs more today relative to a disk that is a hundred times faster."
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
            Cell::new(Scenario::FileToSocket, size * MIB, Warm, entrants).path("loopback")
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
            Scenario::FileToSocket,
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
         connection against the bytes it carries.{zero_copy}",
        last / 1.55,
        shape((last / first - 1.0).abs() < 0.5)
    )
}

fn relay_original() -> Vec<Point> {
    let name = "FlexIO relay, sustained at 400 MB (text)";
    vec![Point::new(name, 400.0, 2.3)]
}
