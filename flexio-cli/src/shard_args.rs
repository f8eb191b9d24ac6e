//! `--shard K/N|auto|auto/N` and `--whole-files`, shared by `get` and
//! `put` (see `flexio_net::shard`).

use clap::Args;
use flexio_net::shard::{Shard, Split};

use crate::error::{Error, Result};

/// Arguments choosing this process's part of a tree.
#[derive(Args, Clone, Default)]
pub struct ShardArgs {
    /// Move only part K of N of the tree (0 ≤ K < N), balanced by bytes,
    /// so that N processes together move it exactly once; `auto` reads K
    /// and N from a Slurm job array (SLURM_ARRAY_TASK_ID, _COUNT), `auto/N`
    /// reads K from a Kubernetes Indexed Job (JOB_COMPLETION_INDEX) or
    /// Slurm.
    #[arg(long, value_name = "K/N|auto|auto/N")]
    shard: Option<String>,
    /// With --shard: every file whole to one shard, for shards that each
    /// have a destination of their own (without it, the shards share one
    /// destination and large files are split into ranges between them).
    #[arg(long, requires = "shard")]
    whole_files: bool,
}

impl ShardArgs {
    /// The shard and how files are split; `None` without `--shard`.
    ///
    /// # Errors
    /// [`Error::Usage`] for a spec that cannot be read, or `auto` outside
    /// a job array.
    pub fn resolve(&self) -> Result<Option<(Shard, Split)>> {
        let Some(spec) = &self.shard else {
            return Ok(None);
        };
        let shard = Shard::parse(spec, |name| std::env::var(name).ok())
            .map_err(|e| Error::Usage(e.to_string()))?;
        let split = if self.whole_files {
            Split::WholeFiles
        } else {
            Split::Ranges
        };
        Ok(Some((shard, split)))
    }
}

/// The line saying what a shard took on.
pub fn summary(shard: &flexio_net::client::ShardReport) -> String {
    format!(
        "shard {} of {}: {} of the tree's bytes, {} whole files and {} ranges of split files{}\n",
        shard.index,
        shard.count,
        flexio::format_bytes(shard.bytes),
        shard.whole_files,
        shard.ranges,
        if shard.finished_tree && shard.split_files {
            "; the last shard to finish: symlinks and directory modes set"
        } else {
            ""
        },
    )
}
