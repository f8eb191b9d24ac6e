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

/// The most `PaceBy::Auto` hands to the kernel. Measured with `flexio
/// bench --scenario pace` (kernel and bucket rows) on a 2-core VM over loopback: TCP's
/// own pacing met 10 MiB/s within 0.4%, missed 100 MiB/s by 2–32% from
/// run to run and 400 MiB/s–1 GiB/s by 16–80% (it never catches up on time
/// lost, and paces loopback's 64 KiB segments with a timer each), where
/// the token bucket stayed within 2% at all three.
pub(crate) const KERNEL_AUTO_MAX_RATE: u64 = 32 << 20;

/// The socket's options as they were, restored by [`KernelPacing::release`].
#[derive(Debug)]
pub(crate) struct KernelPacing {
    previous_rate: u64,
    previous_lowat: u32,
}

impl KernelPacing {
    /// Hands `rate` to the kernel for a TCP sink, when it is within what
    /// the kernel paces and the kernel takes it; `None` leaves the rate to
    /// flexio's token bucket.
    pub(crate) fn engage(
        fd: BorrowedFd<'_>,
        kind: EndpointKind,
        pacing: &Pacing,
    ) -> Option<KernelPacing> {
        let rate = pacing.rate?;
        let burst = pacing.burst_bytes().unwrap_or(rate.default_burst());
        let most = match pacing.by {
            PaceBy::TokenBucket => return None,
            PaceBy::Kernel => KERNEL_MAX_RATE,
            PaceBy::Auto => KERNEL_AUTO_MAX_RATE,
        };
        if kind != EndpointKind::Tcp || rate.bytes_per_second() > most {
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
