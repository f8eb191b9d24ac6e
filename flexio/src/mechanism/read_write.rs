//! `read-write`: `read(2)` into one user buffer of `--chunk` bytes and
//! `write(2)` out of it — two copies and two crossings per chunk, and the
//! baseline every other mechanism is measured against. Serves every pair;
//! when an end is the caller's memory, that memory is the buffer (one copy;
//! memory to memory is a plain memcpy).

use super::io::copy_through_buffer;
use super::{Mechanism, Stop, Transfer};
use crate::endpoint::EndpointKind;

pub(crate) struct ReadWrite;

impl Mechanism for ReadWrite {
    fn supports(&self, _source: EndpointKind, _sink: EndpointKind) -> bool {
        true
    }

    fn run(&self, t: &mut Transfer<'_>) -> Result<(), Stop> {
        copy_through_buffer(t, t.params.chunk)
    }
}
