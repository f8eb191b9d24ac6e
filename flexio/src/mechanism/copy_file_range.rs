//! `copy-file-range`: file to file inside the kernel with
//! copy_file_range(2) — no user buffer, and a reflink or server-side copy
//! where the file system offers one. Across file systems the kernel may
//! refuse with `EXDEV`; the engine then falls back.

use rustix::io::Errno;

use super::transfer::Side;
use super::{Mechanism, Stop, Transfer};
use crate::endpoint::EndpointKind;

pub(crate) struct CopyFileRange;

/// Bytes asked of one call: well under the kernel's ~2 GiB cap.
const MAX_PER_CALL: usize = 1 << 30;

impl Mechanism for CopyFileRange {
    fn supports(&self, source: EndpointKind, sink: EndpointKind) -> bool {
        source == EndpointKind::File && sink == EndpointKind::File
    }

    fn run(&self, t: &mut Transfer<'_>) -> Result<(), Stop> {
        while !t.finished() {
            let want = t.next_call_len(MAX_PER_CALL);
            let mut source_offset = t.source_pos;
            let mut sink_offset = t.sink_pos;
            t.counters.syscalls += 1;
            let result = rustix::fs::copy_file_range(
                t.source_fd(),
                Some(&mut source_offset),
                t.sink_fd(),
                Some(&mut sink_offset),
                want,
            );
            match result {
                Ok(0) => return t.source_ended(),
                Ok(n) => t.advance(n as u64),
                Err(Errno::INTR) => {}
                // The kernel's way of refusing a sink opened with O_APPEND
                // (`flexio copy a - >> log`); the fallbacks append fine.
                Err(Errno::BADF) if t.sink_appends => {
                    return Err(Stop::Refused {
                        op: "copy_file_range",
                        errno: Errno::BADF,
                    })
                }
                Err(errno) => {
                    return Err(t.refused_or_failed("copy_file_range", Side::Sink, errno))
                }
            }
        }
        Ok(())
    }
}
