//! What a flow's mechanism is: the named one, or what `auto` takes from
//! the tuned profile, the built-in table, or `--direct`.

use super::Flow;
use crate::builtin_choice;
use crate::endpoint::EndpointKind;
use crate::error::{Error, Result};
use crate::mechanism::MechanismName;
use crate::profile::{Decision, FlowKind};

impl Flow<'_> {
    /// What `auto` (or the named mechanism) means for this flow, and why.
    pub(super) fn decide(
        &self,
        source: EndpointKind,
        sink: EndpointKind,
        total: Option<u64>,
    ) -> Result<Decision> {
        let flow_kind = FlowKind::classify(source, sink, self.fsync);
        let mut decision = Decision {
            flow_kind,
            size: total,
            mechanism: self.resolve(source, sink)?,
            params: self.params.clone(),
            decided_by: if self.via == MechanismName::Auto {
                "built-in table".to_string()
            } else {
                "requested".to_string()
            },
        };
        if self.via != MechanismName::Auto {
            if self.params.direct && !self.via.writes_direct(&self.params) {
                return Err(Error::usage(format!(
                    "direct I/O applies to io-uring and direct, not {}",
                    self.via
                )));
            }
            return Ok(decision);
        }
        let wants_direct = self.params_explicit && self.params.direct;
        let range = match (self.profile, total) {
            (Some(profile), Some(size)) => profile
                .lookup(flow_kind, size)
                .map(|range| (profile.describe_range(flow_kind, range), range)),
            _ => None,
        };
        if wants_direct {
            return direct_decision(decision, range, source, sink);
        }
        let Some((place, range)) = range else {
            return Ok(decision);
        };
        if range.mechanism.supports(source, sink) {
            decision.mechanism = range.mechanism;
            decision.params = range.params();
            decision.decided_by = place;
        } else {
            decision.decided_by = format!(
                "built-in table ({place} names {}, which cannot move {source} -> {sink})",
                range.mechanism
            );
        }
        Ok(decision)
    }

    pub(super) fn resolve(
        &self,
        source: EndpointKind,
        sink: EndpointKind,
    ) -> Result<MechanismName> {
        let chosen = match self.via {
            MechanismName::Auto => builtin_choice(source, sink),
            named => named,
        };
        if !chosen.supports(source, sink) {
            return Err(Error::UnsupportedPair {
                mechanism: chosen,
                source_kind: source,
                sink_kind: sink,
                alternatives: MechanismName::serving(source, sink),
            });
        }
        Ok(chosen)
    }
}

/// `auto` with `--direct`: a mechanism that writes past the page cache —
/// the profile's own choice when it is one, else io-uring with `O_DIRECT`
/// (several requests in flight), else `direct`.
fn direct_decision(
    mut decision: Decision,
    range: Option<(String, &crate::profile::RangeEntry)>,
    source: EndpointKind,
    sink: EndpointKind,
) -> Result<Decision> {
    if let Some((place, range)) = range {
        let mut params = range.params();
        params.direct = true;
        if range.mechanism.supports(source, sink) && range.mechanism.writes_direct(&params) {
            decision.mechanism = range.mechanism;
            decision.params = params;
            decision.decided_by = format!("{place}, with direct I/O");
            return Ok(decision);
        }
    }
    let chosen = [MechanismName::IoUring, MechanismName::Direct]
        .into_iter()
        .find(|m| m.supports(source, sink))
        .ok_or_else(|| {
            Error::usage(format!(
                "direct I/O needs a file or block device on one side; {source} -> {sink} has none"
            ))
        })?;
    decision.mechanism = chosen;
    decision.params.direct = true;
    decision.decided_by =
        format!("direct I/O: {chosen}, the first of io-uring and direct (the mechanisms that use O_DIRECT) that serves {source} -> {sink}");
    Ok(decision)
}
