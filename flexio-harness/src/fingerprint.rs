//! What the bench needs to know about the machine beyond
//! [`flexio::profile::Fingerprint`]: whether its directory can be cold at all,
//! and what on this machine makes timings vary from run to run, so that a
//! report says so beside its figures.

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

/// What about this machine a reader of the bench's figures should know:
/// a directory in memory, a file system that discards as it frees, a
/// virtual machine that hands freed memory back to its host.
pub fn machine_notes(dir: &Path) -> Vec<String> {
    let mut notes = Vec::new();
    if is_memory_filesystem(dir) {
        notes.push(format!(
            "{} is in memory (tmpfs): cold cells are warm here",
            dir.display()
        ));
    }
    if let Some(mount) = flexio::profile::Mount::containing(dir)
        && mount.discards_online()
    {
        notes.push(format!(
            "{} ({} on {}) is mounted with `discard`: deleting a file sends \
                 discards to the device, which the next writes may wait behind",
            mount.mount_point.display(),
            mount.fs_type,
            mount.source
        ));
    }
    if let Some(block) = free_page_reporting() {
        notes.push(format!(
            "this virtual machine hands free memory back to its host \
             (virtio-balloon free page reporting, blocks of {}): memory \
             freed a few seconds before costs a host fault when first \
             touched again, so flows that fill the page cache or socket \
             buffers vary from run to run (for steadier figures, as root: \
             `echo 11 > {PAGE_REPORTING_ORDER}` holds reporting off until \
             you write the old order back, or until reboot)",
            flexio::format_bytes(block)
        ));
    }
    notes
}

/// Where the kernel keeps the order (log2 of 4 KiB pages) of the free
/// blocks it reports to the hypervisor.
const PAGE_REPORTING_ORDER: &str = "/sys/module/page_reporting/parameters/page_reporting_order";

/// The block size the guest reports free to its hypervisor, when a
/// virtio-balloon device offers free page reporting and the reporting
/// order is one the buddy allocator has; `None` on bare metal, on virtual
/// machines without it, and where a person set the order past the
/// largest (which stops reporting).
///
/// On this Firecracker guest, eight warm 1 GiB splice copies in a row ran
/// at 0.41 to 4.28 GiB/s (five of them under 0.75) with reporting on, and
/// at 2.80 to 4.87 (one of 0.69, the first) with the order set to 11.
pub fn free_page_reporting() -> Option<u64> {
    let devices = std::fs::read_dir("/sys/bus/virtio/drivers/virtio_balloon").ok()?;
    let reporting = devices.flatten().any(|entry| {
        std::fs::read_to_string(entry.path().join("features"))
            .is_ok_and(|features| offers_free_page_reporting(&features))
    });
    if !reporting {
        return None;
    }
    reported_block(
        std::fs::read_to_string(PAGE_REPORTING_ORDER)
            .ok()
            .as_deref(),
    )
}

/// The reported block size for the reporting order's text (the kernel's
/// default, 2 MiB, when it cannot be read); `None` past the largest order
/// the buddy allocator has (10 on x86-64 and arm64 with 4 KiB pages).
fn reported_block(order_text: Option<&str>) -> Option<u64> {
    const LARGEST_ORDER: u32 = 10;
    let order = order_text
        .and_then(|text| text.trim().parse::<u32>().ok())
        .unwrap_or(9);
    (order <= LARGEST_ORDER).then(|| 4096u64 << order)
}

/// Whether a virtio device's `features` (one `0` or `1` per feature bit,
/// bit 0 first) include `VIRTIO_BALLOON_F_REPORTING` (bit 5).
fn offers_free_page_reporting(features: &str) -> bool {
    const VIRTIO_BALLOON_F_REPORTING: usize = 5;
    features.trim().as_bytes().get(VIRTIO_BALLOON_F_REPORTING) == Some(&b'1')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_page_reporting_is_bit_five_of_the_balloons_features() {
        // Read off a Firecracker guest: stats, deflate on OOM, reporting.
        assert!(offers_free_page_reporting(
            "0110010100000000000000000000000010000000\n"
        ));
        assert!(!offers_free_page_reporting("0110000100000000"));
        assert!(!offers_free_page_reporting("0110"));
        assert!(!offers_free_page_reporting(""));
    }

    #[test]
    fn an_order_past_the_largest_means_no_reporting() {
        assert_eq!(reported_block(Some("9\n")), Some(2 << 20));
        assert_eq!(reported_block(Some("10")), Some(4 << 20));
        assert_eq!(reported_block(Some("11\n")), None);
        assert_eq!(reported_block(None), Some(2 << 20));
        assert_eq!(reported_block(Some("garbage")), Some(2 << 20));
    }

    #[test]
    fn a_directory_in_memory_is_noted() {
        let tmpfs = Path::new("/dev/shm");
        if !is_memory_filesystem(tmpfs) {
            eprintln!("skipped: /dev/shm is not tmpfs here");
            return;
        }
        let notes = machine_notes(tmpfs);
        assert!(
            notes.iter().any(|n| n.contains("in memory (tmpfs)")),
            "{notes:?}"
        );
        assert!(!notes.iter().any(|n| n.contains("`discard`")), "{notes:?}");
    }
}
