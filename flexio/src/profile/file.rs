//! The profile as a file: TOML at `$XDG_CONFIG_HOME/flexio/profile.toml`,
//! versioned, read only when it is a regular file of sane size, validated
//! (ranges that start at 0, touch, end unbounded, and name mechanisms that
//! serve their flow kind) and replaced atomically. A person may edit a
//! range's mechanism by hand; `auto` obeys it.

use std::path::{Path, PathBuf};

use super::saved::{Profile, PROFILE_FORMAT_VERSION};
use crate::mechanism::{CopyKernel, MechanismName};

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

/// Reads a profile's text: a regular file of at most
/// [`MAX_PROFILE_BYTES`], UTF-8.
fn read_text(path: &Path) -> Result<String, ProfileError> {
    let bytes = crate::read_regular_file_capped(path, MAX_PROFILE_BYTES).map_err(|source| {
        ProfileError::Io {
            path: path.to_path_buf(),
            source,
        }
    })?;
    String::from_utf8(bytes).map_err(|_| ProfileError::Corrupt {
        path: path.to_path_buf(),
        message: "not UTF-8 text".into(),
    })
}

/// `text` less its `[[flow.curve]]` and `[[flow.curve.points]]` tables,
/// each running from its header to the next table header; `None` when it
/// has none. A table header is a line whose first non-blank is `[` (a
/// curve holds no multi-line value that could start a line so, and no `[`
/// at all otherwise, so a curve is skipped in a few jumps). A curve header
/// written otherwise (`[[ flow.curve ]]`) is kept, and parsed.
fn without_curves(text: &str) -> Option<String> {
    let is_curve = |header: &str| {
        let name = header.split('#').next().unwrap_or_default().trim();
        name == "[[flow.curve]]" || name == "[[flow.curve.points]]"
    };
    let mut kept = String::with_capacity(text.len() / 8);
    let (mut section, mut in_curve, mut dropped) = (0, false, false);
    let mut from = 0;
    loop {
        let header = next_header(text, from);
        if !in_curve {
            kept.push_str(&text[section..header.unwrap_or(text.len())]);
        }
        let Some(start) = header else {
            return dropped.then_some(kept);
        };
        let end = text[start..]
            .find('\n')
            .map_or(text.len(), |n| start + n + 1);
        in_curve = is_curve(&text[start..end]);
        dropped |= in_curve;
        (section, from) = (start, end);
    }
}

/// Where the next table header at or after `from` (a line start) begins.
fn next_header(text: &str, mut from: usize) -> Option<usize> {
    loop {
        let bracket = from + text[from..].find('[')?;
        let line = text[..bracket].rfind('\n').map_or(0, |n| n + 1);
        if text[line..bracket].trim().is_empty() {
            return Some(line);
        }
        from = bracket + 1;
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
        Self::parse(&read_text(path)?, path)
    }

    /// [`Profile::load`] without the measured curves: what `auto` needs
    /// (the ranges, the tree settings, the fingerprint; the notes too when
    /// read from the TOML). From the compact
    /// form [`Profile::save_for_auto`] wrote beside it while the file is
    /// still the one saved then; else from the TOML without its curves,
    /// which are most of a tuned profile's text (parsing TOML is most of
    /// the cost of consulting it, and every `auto` copy does). Where the
    /// text without its curves does not parse or validate, the whole text
    /// is parsed, so errors read as `load`'s.
    ///
    /// # Errors
    /// As [`Profile::load`].
    ///
    /// # Examples
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("profile.toml");
    /// std::fs::write(&path, "format_version = 99\n").unwrap();
    /// let error = flexio::profile::Profile::load_decisions(&path).unwrap_err();
    /// assert!(error.to_string().contains("newer"));
    /// ```
    pub fn load_decisions(path: &Path) -> Result<Profile, ProfileError> {
        if let Some(profile) = super::compact::read(path, MAX_PROFILE_BYTES)
            && let Ok(profile) = Self::checked(profile, path)
        {
            return Ok(profile);
        }
        let before = super::compact::identity(path);
        let text = read_text(path)?;
        let profile = match without_curves(&text).map(|short| Self::parse(&short, path)) {
            Some(Ok(profile)) => profile,
            _ => Self::parse(&text, path)?,
        };
        // The compact form was missing, stale or unreadable (a hand edit, a
        // restored file, a flexio that writes another compact format):
        // written again from what was just read, so that the next copy
        // need not parse the TOML.
        super::compact::rewrite_if_unchanged(&profile, path, before);
        Ok(profile)
    }

    /// Parses profile text; `path` names it in errors.
    ///
    /// # Errors
    /// As [`Profile::load`], but for the text given.
    pub fn parse(text: &str, path: &Path) -> Result<Profile, ProfileError> {
        // A profile this build reads goes straight into the types: one
        // pass, where the generic table first and the types from it took
        // two. Anything else takes the generic path, for its errors.
        if let Ok(profile) = toml::from_str::<Profile>(text)
            && profile.format_version <= PROFILE_FORMAT_VERSION
        {
            return Self::checked(profile, path);
        }
        let corrupt = |message: String| ProfileError::Corrupt {
            path: path.to_path_buf(),
            message,
        };
        let value: toml::Table =
            toml::from_str(text).map_err(|e| corrupt(e.message().to_string()))?;
        // Checked before the typed read, so that a newer format says so
        // rather than failing on a field it added.
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
        let profile: Profile = value
            .try_into()
            .map_err(|e: toml::de::Error| corrupt(e.message().to_string()))?;
        Self::checked(profile, path)
    }

    /// `profile` as read from `path`, validated.
    fn checked(mut profile: Profile, path: &Path) -> Result<Profile, ProfileError> {
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
        for tree in &self.trees {
            tree.validate()?;
        }
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
                if kind != super::FlowKind::MemoryToMemory
                    && range.copy_kernel != CopyKernel::Memcpy
                {
                    return Err(format!(
                        "{kind} range {i}: copy_kernel {} applies to memory-to-memory only",
                        range.copy_kernel
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

    /// [`Profile::save`], then its decisions in a compact form beside it
    /// (`PATH.decisions`), which [`Profile::load_decisions`] reads
    /// instead of the TOML for as long as the TOML file is the one saved
    /// here: for the profile `auto` consults, so that consulting it costs
    /// a small copy little. Writing the compact form is best effort.
    ///
    /// # Errors
    /// As [`Profile::save`].
    ///
    /// # Examples
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("profile.toml");
    /// let profile = flexio::profile::Profile::new(
    ///     flexio::profile::Fingerprint::of_this_machine(dir.path()),
    ///     dir.path(),
    /// );
    /// profile.save_for_auto(&path).unwrap();
    /// assert!(dir.path().join("profile.toml.decisions").is_file());
    /// let loaded = flexio::profile::Profile::load_decisions(&path).unwrap();
    /// assert_eq!(loaded.fingerprint, profile.fingerprint);
    /// ```
    pub fn save_for_auto(&self, path: &Path) -> Result<(), ProfileError> {
        self.save(path)?;
        super::compact::write(self, path);
        Ok(())
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::saved::tests::sample_profile;
    use crate::profile::{Curve, CurvePoint, FlowKind, FlowProfile};

    fn curve(mechanism: MechanismName) -> Curve {
        Curve {
            copy_kernel: Default::default(),
            mechanism,
            chunk: 1 << 20,
            queue_depth: 32,
            pipe_size: 1 << 20,
            direct: false,
            points: (12..30)
                .map(|shift| CurvePoint {
                    size: 1 << shift,
                    median_bytes_per_s: 1 << 30,
                    min_bytes_per_s: 1 << 29,
                    max_bytes_per_s: 1 << 31,
                    cpu_ns_per_byte: 0.25,
                })
                .collect(),
        }
    }

    #[test]
    fn the_decisions_are_the_profile_less_its_curves() {
        let mut profile = sample_profile();
        profile.flows[0].curves = vec![curve(MechanismName::ReadWrite)];
        // A second kind whose range comes after its curve in the text.
        profile.flows.push(FlowProfile {
            kind: FlowKind::FileToFileDurable,
            ranges: profile.flows[0].ranges.clone(),
            curves: vec![curve(MechanismName::CopyFileRange)],
        });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile.toml");
        let text = profile.to_toml();
        let (curves_first, ranges) = text.rsplit_once("[[flow.range]]").unwrap();
        // Indented, as TOML allows: still a header that ends a curve.
        let reordered = format!("{curves_first}\n  [[flow.range]]{ranges}");
        std::fs::write(&path, &reordered).unwrap();
        let mut full = Profile::load(&path).unwrap();
        let decisions = Profile::load_decisions(&path).unwrap();
        assert_eq!(full.flows[1].curves.len(), 1);
        assert!(decisions.flows.iter().all(|flow| flow.curves.is_empty()));
        for flow in &mut full.flows {
            flow.curves.clear();
        }
        assert_eq!(decisions, full);
        assert!(without_curves(&text).unwrap().len() * 4 < text.len());
    }

    #[test]
    fn a_profile_the_filter_would_break_is_read_whole() {
        let mut profile = sample_profile();
        profile.flows[0].curves = vec![curve(MechanismName::ReadWrite)];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile.toml");
        // A value that opens a line with `[` inside a curve: the filter
        // would cut the curve's table at it and leave a broken text.
        let text = profile.to_toml().replacen(
            "[[flow.curve]]\n",
            "[[flow.curve]]\nnote = [\n[1], [2]]\n",
            1,
        );
        std::fs::write(&path, text).unwrap();
        assert_eq!(
            format!("{:?}", Profile::load_decisions(&path)),
            format!("{:?}", Profile::load(&path))
        );
        std::fs::write(&path, "format_version = 1\n[[flow.curve]]\n[oops").unwrap();
        assert!(matches!(
            Profile::load_decisions(&path),
            Err(ProfileError::Corrupt { .. })
        ));
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

    /// Memory to memory by `rep movsb` below 4 KiB and by `kernel` from
    /// there, beside the sample's file-to-file ranges.
    fn memory_profile(kernel: CopyKernel) -> Profile {
        use crate::profile::RangeEntry;
        let mut profile = sample_profile();
        let entry = |min_bytes, max_bytes, copy_kernel| RangeEntry {
            min_bytes,
            max_bytes,
            mechanism: MechanismName::ReadWrite,
            chunk: 256 << 10,
            queue_depth: 32,
            pipe_size: 1 << 20,
            direct: false,
            copy_kernel,
            throughput_bytes_per_s: 1,
            spread: 0.0,
            measured_at: Vec::new(),
        };
        profile.flows.push(FlowProfile {
            kind: FlowKind::MemoryToMemory,
            ranges: vec![
                entry(0, Some(4096), CopyKernel::RepMovsb),
                entry(4096, None, kernel),
            ],
            curves: Vec::new(),
        });
        profile
    }

    #[test]
    fn copy_kernels_round_trip_and_one_this_cpu_lacks_or_on_another_kind_is_refused() {
        let path = Path::new("p.toml");
        let text = memory_profile(CopyKernel::Threads).to_toml();
        assert!(text.contains("copy_kernel = \"threads\""), "{text}");
        let back = Profile::parse(&text, path).unwrap();
        let range = back.lookup(FlowKind::MemoryToMemory, 100).unwrap();
        assert_eq!(range.copy_kernel, CopyKernel::RepMovsb);
        if let Some(lacking) = CopyKernel::ALL.into_iter().find(|k| !k.is_available()) {
            let text = memory_profile(lacking).to_toml();
            let error = Profile::parse(&text, path).unwrap_err().to_string();
            assert!(error.contains(lacking.missing().unwrap()), "{error}");
        }
        // The first range of the text is the sample's file-to-file one.
        let text = memory_profile(CopyKernel::Threads).to_toml().replacen(
            "direct = false\n",
            "direct = false\ncopy_kernel = \"threads\"\n",
            1,
        );
        let error = Profile::parse(&text, path).unwrap_err().to_string();
        assert!(
            error.contains("applies to memory-to-memory only"),
            "{error}"
        );
    }
}
