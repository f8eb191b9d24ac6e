//! The setups some exhibits measure outside the matrix, named: the
//! catalogue says which an exhibit needs, `own` runs them.

/// A setup outside the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setup {
    /// Disk -> disk by file size in the 128 MiB cgroup.
    LowMemoryBySize,
    /// Disk -> disk by file size in the 128 MiB cgroup, read-write with
    /// 1 KiB and 64 KiB buffers.
    LowMemoryBySizeSmallBuffers,
    /// Disk -> disk by buffer size from 1 KiB in the 128 MiB cgroup.
    LowMemoryByBuffer,
    /// Disk -> disk by file size with memory to spare: the matrix's cold,
    /// synced cells on ext4 on the throttled device.
    DiskBoundBySize,
    /// The same on ext2, the thesis's file system: a second file system
    /// as the original's IDE and SCSI partitions were.
    DiskBoundBySizeExt2,
    /// Disk -> disk by buffer size with memory to spare, on ext4 on the
    /// throttled device.
    DiskBoundByBuffer,
    /// File -> TCP with fixed socket buffers, against autotuning.
    SocketBuffers,
    /// File -> UDP -> file with 1-50 KB socket buffers, loss counted.
    UdpBuffers,
    /// A -> B -> C, B relaying, against A -> B.
    Relay,
    /// S.M.A.C.K.'s Table 3: files into memory, buffered against O_DIRECT.
    SmackUncached,
    /// S.M.A.C.K.'s Tables 4-5: through a 16 MiB cache, cold then warm.
    SmackCached,
    /// S.M.A.C.K.'s Table 6: a raw loop device beside dd (root).
    SmackRaw,
    /// Cue's Tables 1-7: the schedules and the user-driven loop, cold, on
    /// a throttled device (root).
    CueDiskBound,
    /// Cue's Table 8: `flexio serve` to 1-4 clients sharing one
    /// `--rate-total` bucket.
    CueSharedLink,
}
