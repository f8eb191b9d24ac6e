//! placeholder until written
use super::{Mechanism, Stop, Transfer};
use crate::endpoint::EndpointKind;
pub(crate) struct Direct;
impl Mechanism for Direct {
    fn supports(&self, source: EndpointKind, sink: EndpointKind) -> bool {
        source != EndpointKind::Memory && sink != EndpointKind::Memory
    }
    fn run(&self, t: &mut Transfer<'_>) -> Result<(), Stop> {
        super::io::copy_through_buffer(t, t.params.chunk)
    }
}
