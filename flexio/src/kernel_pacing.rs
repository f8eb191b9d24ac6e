//! Handing a TCP sink's rate to the kernel: `SO_MAX_PACING_RATE` (TCP
//! paces itself since Linux 4.13, without the fq qdisc) and a low
//! `TCP_NOTSENT_LOWAT`, so that the sender waits for the wire instead of
//! filling a send buffer of megabytes at once, and its clock — the
//! report's — stays within a burst of what the peer received.

use std::os::fd::BorrowedFd;

use crate::endpoint::EndpointKind;
use crate::pace::{PaceBy, Pacing};
use crate::sys::pacing;

/// The most the kernel is asked to pace: older kernels read the option as
/// 32 bits, and `u32::MAX` means "no cap" to them.
pub(crate) const KERNEL_MAX_RATE: u64 = u32::MAX as u64 - 1;

/// The socket's options as they were, restored by [`KernelPacing::release`].
#[derive(Debug)]
pub(crate) struct KernelPacing {
    previous_rate: u64,
    previous_lowat: u32,
}

impl KernelPacing {
    /// Hands the rate to the kernel for a TCP sink when `pacing` asks for
    /// the kernel, the rate is within what it takes and it takes it;
    /// `None` leaves the rate to flexio's token bucket.
    pub(crate) fn engage(
        fd: BorrowedFd<'_>,
        kind: EndpointKind,
        pacing: &Pacing,
    ) -> Option<KernelPacing> {
        let rate = pacing.rate?;
        let burst = pacing.burst_bytes().unwrap_or(rate.default_burst());
        if pacing.by != PaceBy::Kernel
            || kind != EndpointKind::Tcp
            || rate.bytes_per_second() > KERNEL_MAX_RATE
        {
            return None;
        }
        let previous_rate = pacing::max_pacing_rate(fd).ok()?;
        let previous_lowat = pacing::notsent_lowat(fd).ok()?;
        pacing::set_max_pacing_rate(fd, rate.bytes_per_second()).ok()?;
        let lowat = u32::try_from(burst).unwrap_or(u32::MAX);
        if pacing::set_notsent_lowat(fd, lowat).is_err() {
            let _ = pacing::set_max_pacing_rate(fd, previous_rate);
            return None;
        }
        Some(KernelPacing {
            previous_rate,
            previous_lowat,
        })
    }

    /// Gives the socket its options back (the caller may keep using it).
    pub(crate) fn release(self, fd: BorrowedFd<'_>) {
        let _ = pacing::set_max_pacing_rate(fd, self.previous_rate);
        let _ = pacing::set_notsent_lowat(fd, self.previous_lowat);
    }
}
