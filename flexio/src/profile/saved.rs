//! The profile: the machine's fingerprint, per flow kind an ordered list
//! of size ranges (mechanism, parameters, measured throughput and spread)
//! and the raw curves they were chosen from; the lookup `auto` makes in it
//! and the words that name a range. Reading and writing it: `file.rs`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::fingerprint::{CpuSeen, MountSeen};
use super::{Fingerprint, FlowKind};
use crate::mechanism::{CopyKernel, MechanismName};
use crate::params::Params;

/// The profile format this build reads and writes.
pub const PROFILE_FORMAT_VERSION: u32 = 1;

/// One size range of one flow kind: `[min_bytes, max_bytes)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeEntry {
    /// Smallest size of the range.
    pub min_bytes: u64,
    /// First size past the range; absent for the last range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// The mechanism `auto` uses in this range (editable).
    pub mechanism: MechanismName,
    /// `--chunk`.
    pub chunk: usize,
    /// `--queue-depth`.
    pub queue_depth: u32,
    /// `--pipe-size`.
    pub pipe_size: usize,
    /// `--direct`.
    pub direct: bool,
    /// The copy kernel of a memory-to-memory range (absent in profiles
    /// older than it: `memcpy`).
    #[serde(default, skip_serializing_if = "is_memcpy")]
    pub copy_kernel: CopyKernel,
    /// The weakest measured median throughput in the range.
    pub throughput_bytes_per_s: u64,
    /// (max − min) / median of the runs at that point.
    pub spread: f64,
    /// The sizes that were measured inside this range.
    #[serde(default)]
    pub measured_at: Vec<u64>,
}

fn is_memcpy(kernel: &CopyKernel) -> bool {
    *kernel == CopyKernel::Memcpy
}

impl RangeEntry {
    /// The parameters of this range.
    pub fn params(&self) -> Params {
        Params {
            chunk: self.chunk,
            queue_depth: self.queue_depth,
            pipe_size: self.pipe_size,
            direct: self.direct,
            copy_kernel: self.copy_kernel,
        }
    }

    /// Whether `size` falls in this range.
    pub fn contains(&self, size: u64) -> bool {
        size >= self.min_bytes && self.max_bytes.is_none_or(|max| size < max)
    }
}

/// One point of a measured curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Bytes per flow.
    pub size: u64,
    /// Median throughput.
    pub median_bytes_per_s: u64,
    /// Slowest run.
    pub min_bytes_per_s: u64,
    /// Fastest run.
    pub max_bytes_per_s: u64,
    /// CPU per byte the flow cost (the larger of its thread's CPU and
    /// the host's busy CPU while it ran), ns.
    pub cpu_ns_per_byte: f64,
}

/// Throughput against size of one candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// The mechanism.
    pub mechanism: MechanismName,
    /// `--chunk`.
    pub chunk: usize,
    /// `--queue-depth`.
    pub queue_depth: u32,
    /// `--pipe-size`.
    pub pipe_size: usize,
    /// `--direct`.
    pub direct: bool,
    /// The copy kernel of a memory-to-memory curve (absent: `memcpy`).
    #[serde(default, skip_serializing_if = "is_memcpy")]
    pub copy_kernel: CopyKernel,
    /// The measured points, by size.
    pub points: Vec<CurvePoint>,
}

/// Everything the profile knows about one flow kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlowProfile {
    /// The flow kind.
    pub kind: FlowKind,
    /// Size ranges, ordered, contiguous from 0, the last unbounded.
    #[serde(rename = "range")]
    pub ranges: Vec<RangeEntry>,
    /// The raw measurements the ranges were chosen from.
    #[serde(default, rename = "curve")]
    pub curves: Vec<Curve>,
}

/// A machine's measured decisions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// [`PROFILE_FORMAT_VERSION`].
    pub format_version: u32,
    /// When it was made, seconds since the Unix epoch.
    pub created_unix: u64,
    /// The flexio version that made it.
    pub flexio_version: String,
    /// The directory whose file system was tuned.
    pub tuned_dir: String,
    /// The machine.
    pub fingerprint: Fingerprint,
    /// What the tuner could not measure and why (a flow kind left to the
    /// built-in table, a candidate the kernel refused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Per flow kind.
    #[serde(default, rename = "flow")]
    pub flows: Vec<FlowProfile>,
    /// Tree-copy settings, per file system type.
    #[serde(default, rename = "tree", skip_serializing_if = "Vec::is_empty")]
    pub trees: Vec<super::TreeProfile>,
    /// Where it was loaded from (not stored in the file).
    #[serde(skip)]
    pub path: Option<PathBuf>,
    /// Range labels already written, for [`Profile::describe_range`].
    #[serde(skip)]
    labels: LabelCache,
    /// What the compact form it was read from saw when it was written: the
    /// tuned directory's mount and the CPU's brand (not stored in the file).
    #[serde(skip)]
    pub(crate) seen: SeenHint,
}

/// What [`Profile::machine_differences`] may take instead of reading
/// mountinfo and asking the CPU. A hint: it never makes two profiles
/// unequal.
#[derive(Clone, Debug, Default)]
pub(crate) struct SeenHint {
    pub(crate) mount: Option<MountSeen>,
    pub(crate) cpu: Option<CpuSeen>,
}

impl PartialEq for SeenHint {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The most labels kept; a tuned profile has a few dozen ranges.
const MAX_LABELS: usize = 256;

/// The labels [`Profile::describe_range`] has written, each with what it
/// was written from, so that an edited range or path is described afresh.
/// A clone starts empty; it never makes two profiles unequal.
#[derive(Debug, Default)]
struct LabelCache(Mutex<Vec<Label>>);

#[derive(Debug)]
struct Label {
    kind: FlowKind,
    min_bytes: u64,
    max_bytes: Option<u64>,
    path: Option<PathBuf>,
    text: String,
}

impl Clone for LabelCache {
    fn clone(&self) -> Self {
        LabelCache::default()
    }
}

impl PartialEq for LabelCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Profile {
    /// An empty profile for this machine.
    pub fn new(fingerprint: Fingerprint, tuned_dir: &Path) -> Self {
        Profile {
            format_version: PROFILE_FORMAT_VERSION,
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            flexio_version: env!("CARGO_PKG_VERSION").to_string(),
            tuned_dir: tuned_dir.display().to_string(),
            fingerprint,
            notes: Vec::new(),
            flows: Vec::new(),
            trees: Vec::new(),
            path: None,
            labels: LabelCache::default(),
            seen: SeenHint::default(),
        }
    }

    /// How this machine differs from the one the profile was measured on
    /// (empty when it is the same machine).
    pub fn machine_differences(&self) -> Vec<String> {
        let here = Fingerprint::of_this_machine_knowing(
            Path::new(&self.tuned_dir),
            self.seen.mount.as_ref(),
            self.seen.cpu.as_ref(),
        );
        self.fingerprint.differences(&here)
    }

    /// `profile PATH: KIND [MIN, MAX)` for reports and plans.
    ///
    /// Every `auto` flow with a profile asks for this, and a 64-byte copy
    /// takes about 2 µs, so a label is written once and kept (a lookup and
    /// a copy of the string afterwards).
    pub fn describe_range(&self, kind: FlowKind, range: &RangeEntry) -> String {
        let same = |label: &Label| {
            label.kind == kind
                && label.min_bytes == range.min_bytes
                && label.max_bytes == range.max_bytes
                && label.path == self.path
        };
        let Ok(mut labels) = self.labels.0.lock() else {
            return self.write_label(kind, range);
        };
        if let Some(label) = labels.iter().find(|label| same(label)) {
            return label.text.clone();
        }
        let text = self.write_label(kind, range);
        if labels.len() >= MAX_LABELS {
            // Ranges edited over and over: start again rather than grow.
            labels.clear();
        }
        labels.push(Label {
            kind,
            min_bytes: range.min_bytes,
            max_bytes: range.max_bytes,
            path: self.path.clone(),
            text: text.clone(),
        });
        text
    }

    fn write_label(&self, kind: FlowKind, range: &RangeEntry) -> String {
        let path = self
            .path
            .as_deref()
            .map_or_else(|| "(unsaved)".to_string(), |p| p.display().to_string());
        let max = range
            .max_bytes
            .map_or_else(|| "∞".to_string(), crate::format_bytes);
        format!(
            "profile {path}: {kind} [{}, {max})",
            crate::format_bytes(range.min_bytes)
        )
    }

    /// The range deciding a flow of `kind` and `size` bytes.
    pub fn lookup(&self, kind: FlowKind, size: u64) -> Option<&RangeEntry> {
        self.flows
            .iter()
            .find(|f| f.kind == kind)?
            .ranges
            .iter()
            .find(|r| r.contains(size))
    }

    /// The candidates measured at the size nearest `size` (on a log
    /// scale) among the flow kind's measured sizes, each with its point
    /// there, best median first: like compared with like, as the
    /// selection did. A candidate without a point at that size (the quick
    /// sweep measures only the leaders at 1 GiB) is left out.
    pub fn nearest_points(&self, kind: FlowKind, size: u64) -> Vec<(&Curve, &CurvePoint)> {
        let Some(flow) = self.flows.iter().find(|f| f.kind == kind) else {
            return Vec::new();
        };
        let distance = |at: u64| ((at.max(1) as f64).ln() - (size.max(1) as f64).ln()).abs();
        let Some(nearest) = flow
            .curves
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.size))
            .min_by(|&a, &b| distance(a).total_cmp(&distance(b)))
        else {
            return Vec::new();
        };
        let mut points: Vec<_> = flow
            .curves
            .iter()
            .filter_map(|c| c.points.iter().find(|p| p.size == nearest).map(|p| (c, p)))
            .collect();
        points.sort_by_key(|(_, point)| std::cmp::Reverse(point.median_bytes_per_s));
        points
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Read-write below 2 MiB, copy-file-range from there: what selection
    /// makes of read-write leading at 4 KiB and copy-file-range at 1 GiB.
    pub(crate) fn sample_profile() -> Profile {
        let entry = |min_bytes, max_bytes, mechanism, measured_at| RangeEntry {
            copy_kernel: Default::default(),
            min_bytes,
            max_bytes,
            mechanism,
            chunk: Params::default().chunk,
            queue_depth: Params::default().queue_depth,
            pipe_size: Params::default().pipe_size,
            direct: false,
            throughput_bytes_per_s: 2_000_000_000,
            spread: 0.0,
            measured_at: vec![measured_at],
        };
        let mut profile =
            Profile::new(Fingerprint::of_this_machine(Path::new(".")), Path::new("."));
        profile.flows.push(FlowProfile {
            kind: FlowKind::FileToFile,
            ranges: vec![
                entry(0, Some(2 << 20), MechanismName::ReadWrite, 4096),
                entry(2 << 20, None, MechanismName::CopyFileRange, 1 << 30),
            ],
            curves: Vec::new(),
        });
        profile
    }

    #[test]
    fn the_points_behind_a_decision_are_all_at_one_size() {
        let curve = |mechanism, points: &[(u64, u64)]| Curve {
            copy_kernel: Default::default(),
            mechanism,
            chunk: 256 << 10,
            queue_depth: 32,
            pipe_size: 1 << 20,
            direct: false,
            points: points
                .iter()
                .map(|&(size, bps)| CurvePoint {
                    size,
                    median_bytes_per_s: bps,
                    min_bytes_per_s: bps,
                    max_bytes_per_s: bps,
                    cpu_ns_per_byte: 0.5,
                })
                .collect(),
        };
        let mut profile = sample_profile();
        profile.flows[0].curves = vec![
            curve(
                MechanismName::Splice,
                &[(64 << 20, 4_000), (1 << 30, 1_000)],
            ),
            curve(MechanismName::Sendfile, &[(64 << 20, 3_000)]),
            curve(
                MechanismName::CopyFileRange,
                &[(64 << 20, 2_000), (1 << 30, 2_000)],
            ),
        ];
        let at = |size| {
            profile
                .nearest_points(FlowKind::FileToFile, size)
                .iter()
                .map(|(c, p)| (c.mechanism, p.size))
                .collect::<Vec<_>>()
        };
        // 1 GiB was measured for two candidates only: those two, the
        // faster there first, though splice led at 64 MiB.
        assert_eq!(
            at(1 << 30),
            [
                (MechanismName::CopyFileRange, 1 << 30),
                (MechanismName::Splice, 1 << 30)
            ]
        );
        assert_eq!(at(2 << 30), at(1 << 30));
        assert_eq!(
            at(32 << 20),
            [
                (MechanismName::Splice, 64 << 20),
                (MechanismName::Sendfile, 64 << 20),
                (MechanismName::CopyFileRange, 64 << 20)
            ]
        );
        assert!(profile
            .nearest_points(FlowKind::FileToSocket, 1 << 20)
            .is_empty());
    }

    #[test]
    fn range_labels_follow_edits_of_the_range_and_the_path() {
        let mut profile = sample_profile();
        profile.path = Some(PathBuf::from("/a/profile.toml"));
        let range = profile.flows[0].ranges[0].clone();
        let first = profile.describe_range(FlowKind::FileToFile, &range);
        assert!(
            first.starts_with("profile /a/profile.toml: file-to-file [0 B, "),
            "{first}"
        );
        assert_eq!(profile.describe_range(FlowKind::FileToFile, &range), first);
        let mut widened = range.clone();
        widened.max_bytes = Some(3 << 30);
        let label = profile.describe_range(FlowKind::FileToFile, &widened);
        assert!(label.ends_with("[0 B, 3.00 GiB)"), "{label}");
        profile.path = Some(PathBuf::from("/b/profile.toml"));
        let moved = profile.describe_range(FlowKind::FileToFile, &range);
        assert!(moved.starts_with("profile /b/profile.toml: "), "{moved}");
        // The labels kept never make a profile differ from its copy.
        assert_eq!(profile.clone(), profile);
    }
}
