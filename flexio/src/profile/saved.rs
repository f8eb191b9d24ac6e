//! The profile: TOML at `$XDG_CONFIG_HOME/flexio/profile.toml`, versioned,
//! with the machine's fingerprint, per flow kind an ordered list of size
//! ranges (mechanism, parameters, measured throughput and spread) and the
//! raw curves they were chosen from. A person may edit a range's mechanism
//! by hand; `auto` obeys it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{Fingerprint, FlowKind};
use crate::mechanism::MechanismName;
use crate::params::Params;

/// The profile format this build reads and writes.
pub const PROFILE_FORMAT_VERSION: u32 = 1;

/// The largest profile read. A quick sweep's profile is tens of KiB and a
/// full sweep's curves a few hundred; anything past this is not a profile,
/// and reading it whole would only cost memory.
pub const MAX_PROFILE_BYTES: u64 = 16 << 20;

/// Why a profile could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The profile's path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or not a profile.
    #[error("{path}: not a valid profile: {message}")]
    Corrupt {
        /// The profile's path.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// The file was written by a newer flexio.
    #[error("{path}: format_version {found} is newer than this flexio understands ({supported}); re-run `flexio tune` or upgrade")]
    FutureVersion {
        /// The profile's path.
        path: PathBuf,
        /// The version in the file.
        found: u64,
        /// The version this build reads.
        supported: u32,
    },
    /// The file parses but its ranges are wrong (gaps, overlaps, a
    /// mechanism that cannot serve the flow kind).
    #[error("{path}: {message}")]
    Invalid {
        /// The profile's path.
        path: PathBuf,
        /// What is wrong, naming the flow kind and range.
        message: String,
    },
}

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
    /// The weakest measured median throughput in the range.
    pub throughput_bytes_per_s: u64,
    /// (max − min) / median of the runs at that point.
    pub spread: f64,
    /// The sizes that were measured inside this range.
    #[serde(default)]
    pub measured_at: Vec<u64>,
}

impl RangeEntry {
    /// The parameters of this range.
    pub fn params(&self) -> Params {
        Params {
            chunk: self.chunk,
            queue_depth: self.queue_depth,
            pipe_size: self.pipe_size,
            direct: self.direct,
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
    /// Where it was loaded from (not stored in the file).
    #[serde(skip)]
    pub path: Option<PathBuf>,
    /// Range labels already written, for [`Profile::describe_range`].
    #[serde(skip)]
    labels: LabelCache,
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

/// Where the profile lives: `$FLEXIO_PROFILE`, else
/// `$XDG_CONFIG_HOME/flexio/profile.toml`, else
/// `~/.config/flexio/profile.toml`.
pub fn default_profile_path() -> PathBuf {
    if let Some(path) = std::env::var_os("FLEXIO_PROFILE").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))
        .unwrap_or_else(|| PathBuf::from(".config"));
    config.join("flexio").join("profile.toml")
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
            path: None,
            labels: LabelCache::default(),
        }
    }

    /// Reads, version-checks and validates a profile.
    ///
    /// Only a regular file of at most [`MAX_PROFILE_BYTES`] is read: a
    /// device, a FIFO or a socket named as the profile is refused without
    /// blocking or reading it (`FLEXIO_PROFILE=/dev/zero` once grew a copy
    /// to 2.8 GB of memory).
    ///
    /// # Errors
    /// [`ProfileError::Io`] when unreadable, not a regular file or too
    /// large, [`ProfileError::Corrupt`] when
    /// not a profile, [`ProfileError::FutureVersion`] when written by a
    /// newer flexio, [`ProfileError::Invalid`] when its ranges are wrong.
    ///
    /// # Examples
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("profile.toml");
    /// std::fs::write(&path, "format_version = 99\n").unwrap();
    /// let error = flexio::profile::Profile::load(&path).unwrap_err();
    /// assert!(error.to_string().contains("newer"));
    /// ```
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let io = |source| ProfileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let bytes = crate::read_regular_file_capped(path, MAX_PROFILE_BYTES).map_err(io)?;
        let text = String::from_utf8(bytes).map_err(|_| ProfileError::Corrupt {
            path: path.to_path_buf(),
            message: "not UTF-8 text".into(),
        })?;
        Self::parse(&text, path)
    }

    /// Parses profile text; `path` names it in errors.
    ///
    /// # Errors
    /// As [`Profile::load`], but for the text given.
    pub fn parse(text: &str, path: &Path) -> Result<Profile, ProfileError> {
        let corrupt = |message: String| ProfileError::Corrupt {
            path: path.to_path_buf(),
            message,
        };
        let value: toml::Table =
            toml::from_str(text).map_err(|e| corrupt(e.message().to_string()))?;
        let version = value
            .get("format_version")
            .and_then(toml::Value::as_integer)
            .ok_or_else(|| corrupt("missing integer format_version".into()))?;
        if version > PROFILE_FORMAT_VERSION as i64 {
            return Err(ProfileError::FutureVersion {
                path: path.to_path_buf(),
                found: version as u64,
                supported: PROFILE_FORMAT_VERSION,
            });
        }
        let mut profile: Profile =
            toml::from_str(text).map_err(|e| corrupt(e.message().to_string()))?;
        profile.path = Some(path.to_path_buf());
        profile
            .validate()
            .map_err(|message| ProfileError::Invalid {
                path: path.to_path_buf(),
                message,
            })?;
        Ok(profile)
    }

    /// Checks that each flow kind's ranges start at 0, touch, end unbounded,
    /// and name mechanisms that serve the kind.
    ///
    /// # Errors
    /// A message naming the flow kind and the range at fault.
    pub fn validate(&self) -> Result<(), String> {
        for flow in &self.flows {
            let kind = flow.kind;
            let Some(first) = flow.ranges.first() else {
                return Err(format!("{kind}: no ranges"));
            };
            if first.min_bytes != 0 {
                return Err(format!(
                    "{kind}: the first range starts at {} instead of 0",
                    first.min_bytes
                ));
            }
            for (i, range) in flow.ranges.iter().enumerate() {
                if range.mechanism == MechanismName::Auto {
                    return Err(format!(
                        "{kind} range {i}: mechanism must be concrete, not auto"
                    ));
                }
                let (source, sink) = kind.representative_pair();
                if !range.mechanism.supports(source, sink) {
                    return Err(format!(
                        "{kind} range {i}: {} cannot move {source} -> {sink}",
                        range.mechanism
                    ));
                }
                // The same bounds as the command-line flags: a range that
                // passes here must not abort an `auto` copy later.
                range
                    .params()
                    .validate()
                    .map_err(|error| format!("{kind} range {i}: {error}"))?;
                match (range.max_bytes, flow.ranges.get(i + 1)) {
                    (Some(max), Some(next)) if max != next.min_bytes => {
                        return Err(format!(
                            "{kind} range {i}: ends at {max} but the next starts at {}",
                            next.min_bytes
                        ))
                    }
                    (Some(max), _) if max <= range.min_bytes => {
                        return Err(format!(
                            "{kind} range {i}: empty ({}..{max})",
                            range.min_bytes
                        ))
                    }
                    (Some(_), None) => {
                        return Err(format!("{kind}: the last range must have no max_bytes"))
                    }
                    (None, Some(_)) => {
                        return Err(format!("{kind} range {i}: unbounded but not last"))
                    }
                    _ => {}
                }
            }
        }
        let mut kinds: Vec<_> = self.flows.iter().map(|f| f.kind).collect();
        kinds.sort();
        if kinds.windows(2).any(|w| w[0] == w[1]) {
            return Err("a flow kind appears twice".into());
        }
        Ok(())
    }

    /// Writes the profile atomically (temp file + rename), creating the
    /// directory. Only a regular file (or a link to one) is replaced
    /// ([`crate::write_file_replacing_regular`]): `profile export
    /// /dev/full` once turned the device into a regular file.
    ///
    /// # Errors
    /// [`ProfileError::Io`], also when `path` is a device, FIFO, socket,
    /// directory or dangling link.
    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        let io = |source| ProfileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
        crate::write_file_replacing_regular(path, self.to_toml().as_bytes()).map_err(io)
    }

    /// The TOML text, with a header comment saying how to edit it.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string(self).expect("a profile serializes to TOML");
        format!(
            "# flexio profile: measured by `flexio tune` on this machine.\n\
             # Each [[flow.range]] says which mechanism `auto` uses for sizes in\n\
             # [min_bytes, max_bytes). You may change `mechanism` (and its parameters)\n\
             # by hand; `flexio profile validate` checks the result.\n\n{body}"
        )
    }

    /// How this machine differs from the one the profile was measured on
    /// (empty when it is the same machine).
    pub fn machine_differences(&self) -> Vec<String> {
        let here = Fingerprint::of_this_machine(Path::new(&self.tuned_dir));
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
mod tests {
    use super::*;

    /// Read-write below 2 MiB, copy-file-range from there: what selection
    /// makes of read-write leading at 4 KiB and copy-file-range at 1 GiB.
    fn sample_profile() -> Profile {
        let entry = |min_bytes, max_bytes, mechanism, measured_at| RangeEntry {
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
    fn toml_round_trips_and_lookup_follows_ranges() {
        let profile = sample_profile();
        let text = profile.to_toml();
        let mut back = Profile::parse(&text, Path::new("p.toml")).unwrap();
        assert_eq!(back.path.take().unwrap(), Path::new("p.toml"));
        assert_eq!(back, profile);
        assert_eq!(
            back.lookup(FlowKind::FileToFile, 1).unwrap().mechanism,
            MechanismName::ReadWrite
        );
        assert_eq!(
            back.lookup(FlowKind::FileToFile, 1 << 40)
                .unwrap()
                .mechanism,
            MechanismName::CopyFileRange
        );
        assert!(back.lookup(FlowKind::FileToSocket, 1).is_none());
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

    #[test]
    fn hand_edits_are_obeyed() {
        let text = sample_profile().to_toml().replacen(
            "mechanism = \"read-write\"",
            "mechanism = \"sendfile\"",
            1,
        );
        let edited = Profile::parse(&text, Path::new("p.toml")).unwrap();
        assert_eq!(
            edited.lookup(FlowKind::FileToFile, 4096).unwrap().mechanism,
            MechanismName::Sendfile
        );
    }

    #[test]
    fn corrupt_future_and_invalid_profiles_are_refused_with_the_path() {
        let path = Path::new("/etc/flexio-test.toml");
        let corrupt = Profile::parse("format_version = [", path).unwrap_err();
        assert!(matches!(corrupt, ProfileError::Corrupt { .. }));
        assert!(corrupt
            .to_string()
            .starts_with("/etc/flexio-test.toml: not a valid profile"));
        let future = Profile::parse("format_version = 2\nwhatever = 1\n", path).unwrap_err();
        assert!(matches!(
            future,
            ProfileError::FutureVersion { found: 2, .. }
        ));
        let wrong_mechanism = sample_profile().to_toml().replacen(
            "mechanism = \"read-write\"",
            "mechanism = \"teleport\"",
            1,
        );
        assert!(matches!(
            Profile::parse(&wrong_mechanism, path),
            Err(ProfileError::Corrupt { .. })
        ));
        let unserving = sample_profile()
            .to_toml()
            .replace("kind = \"file-to-file\"", "kind = \"file-to-socket\"");
        let error = Profile::parse(&unserving, path).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("copy-file-range cannot move file -> tcp"),
            "{error}"
        );
        let gap = sample_profile()
            .to_toml()
            .replacen("min_bytes = 0", "min_bytes = 5", 1);
        assert!(Profile::parse(&gap, path)
            .unwrap_err()
            .to_string()
            .contains("starts at 5"));
    }

    #[test]
    fn profile_path_prefers_the_environment() {
        // Only reads the environment; the variables are not changed here to
        // keep parallel tests independent.
        let path = default_profile_path();
        assert!(path.ends_with("profile.toml") || std::env::var_os("FLEXIO_PROFILE").is_some());
    }
}
