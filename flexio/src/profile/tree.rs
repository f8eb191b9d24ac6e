//! What the profile keeps for tree copies: the workers (`--jobs`) and the
//! small-file batch that copied a tree of small files fastest, per file
//! system type, with the measurements they were chosen from.

use serde::{Deserialize, Serialize};

use super::Profile;

/// The most workers a profile may ask for.
pub const MAX_TREE_JOBS: usize = 256;

/// The largest small-file batch a profile may ask for.
pub const MAX_TREE_BATCH: usize = 4096;

/// One measured tree-copy setting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TreePoint {
    /// Workers.
    pub jobs: usize,
    /// Files a worker takes from the queue at once.
    pub batch: usize,
    /// Median files per second over the rounds.
    pub files_per_second: f64,
}

/// The tree-copy settings measured on one file system type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TreeProfile {
    /// The file system type, as `/proc/self/mountinfo` names it (`ext4`).
    pub filesystem: String,
    /// Workers for a tree copy onto it.
    pub jobs: usize,
    /// Files a worker takes from the queue at once.
    pub batch: usize,
    /// What the tree copied: files and bytes each.
    pub files: usize,
    /// Bytes per file.
    pub file_bytes: u64,
    /// The measurements the settings were chosen from.
    #[serde(default, rename = "point")]
    pub points: Vec<TreePoint>,
}

impl TreeProfile {
    /// Whether the settings are within the bounds a tree copy accepts.
    ///
    /// # Errors
    /// A message naming the file system and the setting out of bounds.
    ///
    /// # Example
    /// ```
    /// use flexio::profile::TreeProfile;
    /// let tree = TreeProfile {
    ///     filesystem: "ext4".into(), jobs: 0, batch: 16,
    ///     files: 2000, file_bytes: 4096, points: vec![],
    /// };
    /// assert!(tree.validate().unwrap_err().contains("jobs"));
    /// ```
    pub fn validate(&self) -> Result<(), String> {
        if self.filesystem.is_empty() {
            return Err("tree: no file system named".into());
        }
        if !(1..=MAX_TREE_JOBS).contains(&self.jobs) {
            return Err(format!(
                "tree {}: jobs {} is outside 1..={MAX_TREE_JOBS}",
                self.filesystem, self.jobs
            ));
        }
        if !(1..=MAX_TREE_BATCH).contains(&self.batch) {
            return Err(format!(
                "tree {}: batch {} is outside 1..={MAX_TREE_BATCH}",
                self.filesystem, self.batch
            ));
        }
        Ok(())
    }
}

impl Profile {
    /// The tree-copy settings measured on file systems of this type, if
    /// `flexio tune` measured one.
    ///
    /// # Example
    /// ```
    /// use flexio::profile::{Fingerprint, Profile};
    /// let dir = std::env::temp_dir();
    /// let profile = Profile::new(Fingerprint::of_this_machine(&dir), &dir);
    /// assert!(profile.tree_settings("ext4").is_none());
    /// ```
    pub fn tree_settings(&self, filesystem: &str) -> Option<&TreeProfile> {
        self.trees.iter().find(|tree| tree.filesystem == filesystem)
    }

    /// Keeps `tree` as the settings for its file system type, replacing
    /// what was measured there before.
    pub fn set_tree_settings(&mut self, tree: TreeProfile) {
        self.trees.retain(|old| old.filesystem != tree.filesystem);
        self.trees.push(tree);
    }
}
