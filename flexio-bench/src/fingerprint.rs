//! What the bench needs to know about the machine beyond
//! [`flexio::tune::Fingerprint`]: whether its directory can be cold at all.

use std::path::Path;

/// Whether the file system under `dir` keeps files in memory (tmpfs,
/// ramfs), where "cold" means nothing.
pub fn is_memory_filesystem(dir: &Path) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    // `f_type` is i64 here but narrower on some architectures.
    #[allow(clippy::unnecessary_cast)]
    let is_memory = |f_type| matches!(f_type as i64, TMPFS_MAGIC | RAMFS_MAGIC);
    rustix::fs::statfs(dir)
        .map(|s| is_memory(s.f_type))
        .unwrap_or(false)
}
