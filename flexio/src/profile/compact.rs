//! A profile's decisions in a compact form beside it, for `auto`.
//!
//! Every `auto` copy with a tuned profile consults it, and parsing the
//! TOML of its ranges cost more than a small copy itself. So when a
//! profile is saved, its decisions (everything but the measured curves)
//! are also written beside it in postcard's binary form
//! (`profile.toml.decisions`), stamped with the identity of the TOML file
//! they came from: device,
//! inode, size, modification and change times. `auto` uses them only while
//! the TOML file still has that identity; a profile edited by hand,
//! replaced, or restored from elsewhere has another, and is read as TOML.
//! What is read is validated either way, and the TOML stays the truth:
//! a missing, stale, unreadable or invalid compact form only costs time.
//!
//! Binary rather than JSON: reading JSON's numbers and names was three
//! quarters of what consulting the profile cost in instructions, and its
//! reader's code was paged in for it alone (`docs/tuning.md`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::fingerprint::{CpuSeen, MountSeen};
use super::saved::{FlowProfile, Profile, RangeEntry, SeenHint, PROFILE_FORMAT_VERSION};
use super::{Fingerprint, FlowKind, TreeProfile};
use crate::{CopyKernel, MechanismName};

/// Which file the decisions came from: what changes when it is edited,
/// replaced or copied (the change time cannot be set by hand).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Identity {
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Identity {
    /// The identity of the file `path` names (symbolic links followed, as
    /// reading it follows them); `None` when it cannot be read.
    fn of(path: &Path) -> Option<Identity> {
        let stat = rustix::fs::stat(path).ok()?;
        Some(Identity {
            device: stat.st_dev,
            inode: stat.st_ino,
            size: stat.st_size as u64,
            modified: (stat.st_mtime, stat.st_mtime_nsec as i64),
            changed: (stat.st_ctime, stat.st_ctime_nsec as i64),
        })
    }
}

/// The file beside the profile: the decisions, each range and tree
/// setting a tuple, without the curves.
#[derive(Serialize, Deserialize)]
struct Compact {
    /// [`LAYOUT`], first, read before the rest: postcard's form does not
    /// describe itself, so a form of another layout is not decoded at all
    /// (it is written again).
    layout: u32,
    /// The TOML file's identity when these decisions were written.
    source: Identity,
    format_version: u32,
    created_unix: u64,
    flexio_version: String,
    tuned_dir: String,
    fingerprint: Fingerprint,
    /// The mount the tuned directory was on when this was written.
    tuned_mount: Option<MountSeen>,
    /// The CPU's brand in the boot this was written in.
    cpu: CpuSeen,
    flows: Vec<CompactFlow>,
    trees: Vec<CompactTree>,
}

/// This build's layout of the compact form. Raised when anything in it
/// changes, so that a form written by another flexio is read from the
/// TOML once and replaced.
const LAYOUT: u32 = 4;

/// A flow kind's ranges.
#[derive(Serialize, Deserialize)]
struct CompactFlow(FlowKind, Vec<CompactRange>);

/// A [`RangeEntry`] in its fields' order, without the sizes measured in
/// it (one allocation per range, for what only `profile show` prints).
#[derive(Serialize, Deserialize)]
struct CompactRange(
    u64,
    Option<u64>,
    MechanismName,
    usize,
    u32,
    usize,
    bool,
    u64,
    f64,
    CopyKernel,
);

/// A [`TreeProfile`] without its measured points, which `auto` does not
/// read (as a flow's curves).
#[derive(Serialize, Deserialize)]
struct CompactTree(String, usize, usize, usize, u64);

impl Compact {
    fn from_profile(profile: &Profile, source: Identity) -> Compact {
        let range = |r: &RangeEntry| {
            CompactRange(
                r.min_bytes,
                r.max_bytes,
                r.mechanism,
                r.chunk,
                r.queue_depth,
                r.pipe_size,
                r.direct,
                r.throughput_bytes_per_s,
                r.spread,
                r.copy_kernel,
            )
        };
        Compact {
            layout: LAYOUT,
            source,
            format_version: profile.format_version,
            created_unix: profile.created_unix,
            flexio_version: profile.flexio_version.clone(),
            tuned_dir: profile.tuned_dir.clone(),
            fingerprint: profile.fingerprint.clone(),
            tuned_mount: MountSeen::of(Path::new(&profile.tuned_dir)),
            cpu: CpuSeen::now(),
            flows: profile
                .flows
                .iter()
                .map(|flow| CompactFlow(flow.kind, flow.ranges.iter().map(range).collect()))
                .collect(),
            trees: profile
                .trees
                .iter()
                .map(|t| CompactTree(t.filesystem.clone(), t.jobs, t.batch, t.files, t.file_bytes))
                .collect(),
        }
    }

    fn into_profile(self) -> Profile {
        let range = |r: CompactRange| RangeEntry {
            min_bytes: r.0,
            max_bytes: r.1,
            mechanism: r.2,
            chunk: r.3,
            queue_depth: r.4,
            pipe_size: r.5,
            direct: r.6,
            throughput_bytes_per_s: r.7,
            spread: r.8,
            copy_kernel: r.9,
            measured_at: Vec::new(),
        };
        let mut profile = Profile::new(self.fingerprint, Path::new(""));
        profile.tuned_dir = self.tuned_dir;
        profile.format_version = self.format_version;
        profile.created_unix = self.created_unix;
        profile.flexio_version = self.flexio_version;
        profile.seen = SeenHint {
            mount: self.tuned_mount,
            cpu: Some(self.cpu),
        };
        profile.flows = self
            .flows
            .into_iter()
            .map(|CompactFlow(kind, ranges)| FlowProfile {
                kind,
                ranges: ranges.into_iter().map(range).collect(),
                curves: Vec::new(),
            })
            .collect();
        profile.trees = self
            .trees
            .into_iter()
            .map(
                |CompactTree(filesystem, jobs, batch, files, file_bytes)| TreeProfile {
                    filesystem,
                    jobs,
                    batch,
                    files,
                    file_bytes,
                    points: Vec::new(),
                },
            )
            .collect();
        profile
    }
}

/// Where the compact form of the profile at `path` lives.
pub(crate) fn compact_path(path: &Path) -> PathBuf {
    beside(path, ".decisions")
}

/// Where flexio before layout 4 wrote it, as JSON: removed when the
/// binary form is written, so that no stale copy stays beside the profile.
fn json_path(path: &Path) -> PathBuf {
    beside(path, ".decisions.json")
}

fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// Writes the compact form of `profile`, just saved at `path`: what `auto`
/// reads, without the curves, the tree points, the sizes measured in each
/// range or the tuner's notes. Best
/// effort: a directory that refuses it only makes `auto` read the TOML.
pub(crate) fn write(profile: &Profile, path: &Path) {
    let Some(source) = Identity::of(path) else {
        return;
    };
    if let Ok(bytes) = postcard::to_allocvec(&Compact::from_profile(profile, source))
        && crate::write_file_replacing_regular(&compact_path(path), &bytes).is_ok()
    {
        let _ = std::fs::remove_file(json_path(path));
    }
}

/// The identity of the profile file at `path`, to be given back to
/// [`rewrite_if_unchanged`] after reading it.
pub(crate) fn identity(path: &Path) -> Option<Identity> {
    Identity::of(path)
}

/// Writes the compact form of `profile`, just read as TOML from `path`,
/// when the file still has the identity `before` it had when the read
/// began: decisions are never stamped with the identity of a file edited
/// meanwhile. Best effort, as [`write`].
pub(crate) fn rewrite_if_unchanged(profile: &Profile, path: &Path, before: Option<Identity>) {
    if before.is_some() && Identity::of(path) == before {
        write(profile, path);
    }
}

/// The decisions of the profile at `path` from its compact form, when that
/// was written from the file as it is now; `None` otherwise (read the
/// TOML). Not yet validated; a file larger than `max_bytes` is not read.
pub(crate) fn read(path: &Path, max_bytes: u64) -> Option<Profile> {
    let bytes = crate::read_regular_file_capped(&compact_path(path), max_bytes).ok()?;
    let (layout, _) = postcard::take_from_bytes::<u32>(&bytes).ok()?;
    if layout != LAYOUT {
        return None;
    }
    let (compact, rest) = postcard::take_from_bytes::<Compact>(&bytes).ok()?;
    let current = Identity::of(path)?;
    (rest.is_empty()
        && compact.source == current
        && compact.format_version <= PROFILE_FORMAT_VERSION)
        .then(|| compact.into_profile())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::saved::tests::sample_profile;
    use crate::profile::FlowKind;
    use crate::MechanismName;

    fn small_mechanism(profile: &Profile) -> MechanismName {
        profile
            .lookup(FlowKind::FileToFile, 4096)
            .unwrap()
            .mechanism
    }

    #[test]
    fn auto_reads_the_compact_form_while_the_profile_is_the_one_saved() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile.toml");
        let profile = sample_profile();
        profile.save_for_auto(&path).unwrap();
        assert!(
            read(&path, 1 << 20).is_some(),
            "written beside it, and current"
        );
        let mut expected = Profile::load(&path).unwrap();
        expected.notes.clear();
        for flow in &mut expected.flows {
            flow.curves.clear();
            for range in &mut flow.ranges {
                range.measured_at.clear();
            }
        }
        for tree in &mut expected.trees {
            tree.points.clear();
        }
        assert_eq!(Profile::load_decisions(&path).unwrap(), expected);

        // Proof that the compact form is what is read: one that says
        // otherwise, stamped with the file's identity, wins.
        let mut other = profile.clone();
        other.flows[0].ranges[0].mechanism = MechanismName::Sendfile;
        write(&other, &path);
        let read_back = Profile::load_decisions(&path).unwrap();
        assert_eq!(small_mechanism(&read_back), MechanismName::Sendfile);
        assert_eq!(read_back.path.as_deref(), Some(path.as_path()));
    }

    #[test]
    fn an_edited_or_replaced_profile_is_read_as_toml() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile.toml");
        sample_profile().save_for_auto(&path).unwrap();
        // A hand edit of the same length, in place: the times change.
        let text = std::fs::read_to_string(&path).unwrap().replacen(
            "mechanism = \"read-write\"",
            "mechanism = \"sendfile\"  ",
            1,
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(&path, &text).unwrap();
        assert!(read(&path, 1 << 20).is_none(), "stale");
        let edited = Profile::load_decisions(&path).unwrap();
        assert_eq!(small_mechanism(&edited), MechanismName::Sendfile);

        // Saved without the compact form (an export, say) over a profile
        // that had one: the old one no longer matches.
        sample_profile().save_for_auto(&path).unwrap();
        let mut plain = sample_profile();
        plain.flows[0].ranges[0].mechanism = MechanismName::Mmap;
        plain.save(&path).unwrap();
        let read_back = Profile::load_decisions(&path).unwrap();
        assert_eq!(small_mechanism(&read_back), MechanismName::Mmap);
    }

    #[test]
    fn a_stale_or_unreadable_compact_form_is_written_again_from_the_toml() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile.toml");
        sample_profile().save_for_auto(&path).unwrap();
        // What a flexio with another compact format left behind.
        std::fs::write(compact_path(&path), b"[\"another format\"]").unwrap();
        assert!(read(&path, 1 << 20).is_none());
        let from_toml = Profile::load_decisions(&path).unwrap();
        let healed = read(&path, 1 << 20).expect("written again beside the TOML");
        assert_eq!(small_mechanism(&healed), small_mechanism(&from_toml));
        // A file changed while it was read is not stamped.
        let before = identity(&path);
        std::thread::sleep(std::time::Duration::from_millis(10));
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text).unwrap();
        std::fs::remove_file(compact_path(&path)).unwrap();
        rewrite_if_unchanged(&from_toml, &path, before);
        assert!(!compact_path(&path).exists());
    }

    #[test]
    fn a_compact_form_of_another_layout_is_written_again_with_what_was_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile.toml");
        let mut profile = sample_profile();
        profile.tuned_dir = dir.path().display().to_string();
        profile.save_for_auto(&path).unwrap();
        let mut bytes = std::fs::read(compact_path(&path)).unwrap();
        assert_eq!(bytes[0], LAYOUT as u8, "the layout comes first");
        bytes[0] = (LAYOUT - 1) as u8;
        std::fs::write(compact_path(&path), &bytes).unwrap();
        assert!(read(&path, 1 << 20).is_none(), "another layout is stale");
        // What flexio wrote before layout 4, as JSON: not read, and
        // removed once the binary form is written again.
        std::fs::remove_file(compact_path(&path)).unwrap();
        std::fs::write(json_path(&path), br#"{"layout":3}"#).unwrap();

        Profile::load_decisions(&path).unwrap();
        let healed = read(&path, 1 << 20).expect("written again in this layout");
        assert!(!json_path(&path).exists());
        assert_eq!(
            healed.seen.mount,
            MountSeen::of(dir.path()),
            "with the mount the tuned directory is on"
        );
        let cpu = healed.seen.cpu.expect("and the CPU's brand");
        assert!(cpu.still_holds(&rustix::system::sysinfo()), "in this boot");
    }

    #[test]
    fn a_compact_form_that_does_not_validate_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile.toml");
        let profile = sample_profile();
        profile.save_for_auto(&path).unwrap();
        let mut broken = profile.clone();
        broken.flows[0].ranges[0].min_bytes = 7;
        write(&broken, &path);
        assert!(read(&path, 1 << 20).is_some());
        let loaded = Profile::load_decisions(&path).unwrap();
        assert_eq!(loaded.flows[0].ranges[0].min_bytes, 0, "the TOML's");
        std::fs::write(compact_path(&path), b"\x04 not a compact form").unwrap();
        assert_eq!(
            small_mechanism(&Profile::load_decisions(&path).unwrap()),
            MechanismName::ReadWrite
        );
    }
}
