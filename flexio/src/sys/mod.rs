//! The system layer the engine uses, all of it from `flexio-sys` (the
//! workspace's one audited layer below the safe code): getrusage, mincore,
//! cachestat, memory maps with SIGBUS recovery, io_uring, aligned buffers,
//! the GPU driver.
//! Everything takes `AsFd` and slices and returns `io::Result`.

pub(crate) use flexio_sys::{
    aligned, cachestat, gpu, mapping, pacing, rusage, sigbus, stdio, uring, writeback,
};
