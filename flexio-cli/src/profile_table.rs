//! A tuned profile's decisions as a table, as `flexio profile show` prints
//! it and `flexio tune` after writing one.

use flexio::profile::Profile;
use flexio::{format_bytes, format_rate};

/// The decisions of a profile, one line per range.
pub fn render(profile: &Profile) -> String {
    let mut text = format!(
        "profile {} (format {}, flexio {}, tuned on {} in {})\n",
        profile
            .path
            .as_deref()
            .map_or_else(|| "-".into(), |p| p.display().to_string()),
        profile.format_version,
        profile.flexio_version,
        profile.fingerprint.filesystem,
        profile.tuned_dir
    );
    text += &format!(
        "machine: {} × {}, {} memory, kernel {}\n",
        profile.fingerprint.cpus,
        profile.fingerprint.cpu_model,
        format_bytes(profile.fingerprint.memory_bytes),
        profile.fingerprint.kernel
    );
    text += &format!(
        "{:<22} {:>12} {:>12}  {:<16} {:>8} {:>4} {:>8} {:>6} {:>12} {:>7}\n",
        "flow kind",
        "from",
        "to",
        "mechanism",
        "chunk",
        "qd",
        "pipe",
        "direct",
        "throughput",
        "spread"
    );
    for flow in &profile.flows {
        for range in &flow.ranges {
            text += &format!(
                "{:<22} {:>12} {:>12}  {:<16} {:>8} {:>4} {:>8} {:>6} {:>12} {:>6.1}%\n",
                flow.kind.as_str(),
                format_bytes(range.min_bytes),
                range.max_bytes.map_or_else(|| "∞".into(), format_bytes),
                mechanism_label(range),
                format_bytes(range.chunk as u64),
                range.queue_depth,
                format_bytes(range.pipe_size as u64),
                if range.direct { "yes" } else { "no" },
                format_rate(range.throughput_bytes_per_s as f64),
                range.spread * 100.0
            );
        }
    }
    for tree in &profile.trees {
        let rate = |jobs: usize, batch: usize| {
            tree.points
                .iter()
                .find(|p| p.jobs == jobs && p.batch == batch)
                .map_or_else(
                    || "-".into(),
                    |p| format!("{:.0} files/s", p.files_per_second),
                )
        };
        text += &format!(
            "tree copy onto {}: {} jobs, batches of {} ({}; measured on {} files of {})\n",
            tree.filesystem,
            tree.jobs,
            tree.batch,
            rate(tree.jobs, tree.batch),
            tree.files,
            format_bytes(tree.file_bytes)
        );
    }
    text
}

/// The range's mechanism, with its copy kernel where that is not `memcpy`
/// (`read-write nt-avx2`).
fn mechanism_label(range: &flexio::profile::RangeEntry) -> String {
    if range.copy_kernel == flexio::CopyKernel::Memcpy {
        range.mechanism.to_string()
    } else {
        format!("{} {}", range.mechanism, range.copy_kernel)
    }
}
