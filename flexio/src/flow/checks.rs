//! The checks a flow makes before anything moves: what can be told wrong
//! before opening (a pair no mechanism serves, a range that overflows, an
//! offset on a stream), a flow onto its own source, the length of the
//! range, and what the sink can take.

use super::Flow;
use crate::endpoint::{EndpointKind, OpenSink, OpenSource, Sink, SinkIo, Source};
use crate::error::{Error, Result};
use crate::mechanism::MechanismName;

impl Flow<'_> {
    /// Refuses what can be told wrong before anything is opened — an
    /// unsupported pair, a range that overflows, `--offset` on a stream
    /// source, `--seek` on a sink that cannot take it — so that nothing is
    /// bound, accepted or connected (and no peer's data is taken) for a
    /// flow that cannot run.
    pub(super) fn check_before_opening(&self) -> Result<()> {
        if let Some(length) = self.length {
            self.offset.checked_add(length).ok_or_else(|| {
                Error::usage(format!(
                    "offset {} plus length {length} is past the largest byte offset",
                    self.offset
                ))
            })?;
            self.seek.checked_add(length).ok_or_else(|| {
                Error::usage(format!(
                    "seek {} plus length {length} is past the largest byte offset",
                    self.seek
                ))
            })?;
        }
        // `auto` serves every pair, and with no offset, seek or verify
        // there is nothing left that the kinds could refuse: spare the
        // two stats (a small copy's whole budget counts them).
        let kinds_can_refuse =
            self.via != MechanismName::Auto || self.offset > 0 || self.seek > 0 || self.verify;
        if !kinds_can_refuse {
            return Ok(());
        }
        let source = self.source_kind_unopened();
        let sink = self.sink_kind_unopened();
        if let Some(source) = source
            && self.offset > 0
            && !source.is_seekable()
        {
            return Err(Error::usage(format!(
                "offset needs a seekable source (a file, block device or memory), not a {source}"
            )));
        }
        if let Some(sink) = sink
            && self.seek > 0
            && !sink.is_seekable()
        {
            return Err(Error::usage(format!(
                    "seek needs a seekable sink (a block device, memory, or a file written in place), not a {sink}"
                )));
        }
        if self.seek > 0
            && !self.in_place
            && let Sink::Address(crate::Address::Path(path)) = &self.sink
            && std::fs::metadata(path).map_or(true, |meta| meta.is_file())
        {
            return Err(Error::usage(format!(
                "{}: seek on a regular file needs in-place writing",
                path.display()
            )));
        }
        if self.verify {
            for kind in [source, sink].into_iter().flatten() {
                if !kind.is_seekable() {
                    return Err(verify_needs_seekable(source, sink));
                }
            }
        }
        if let (Some(source), Some(sink)) = (source, sink) {
            self.resolve(source, sink)?;
        }
        Ok(())
    }

    /// The source's kind when it can be told without opening it.
    pub(super) fn source_kind_unopened(&self) -> Option<EndpointKind> {
        match &self.source {
            Source::Address(address) => address.probe_kind(false),
            Source::Memory(_) => Some(EndpointKind::Memory),
            _ => None,
        }
    }

    /// The sink's kind when it can be told without opening it.
    pub(super) fn sink_kind_unopened(&self) -> Option<EndpointKind> {
        match &self.sink {
            Sink::Address(address) => address.probe_kind(true),
            Sink::Memory(_) => Some(EndpointKind::Memory),
            _ => None,
        }
    }

    /// Refuses to move a file (or block device) onto itself — through
    /// paths, `--in-place`, or descriptors (`flexio copy f - >> f`) — as
    /// `cat` does, unless both ranges are fixed and provably apart. A sink
    /// that appends grows the very range a reader would be reading.
    pub(super) fn check_not_onto_itself(
        &self,
        source: &OpenSource<'_>,
        sink: &OpenSink<'_>,
        total: Option<u64>,
    ) -> Result<()> {
        let (Some(from), Some(to)) = (source.identity, sink.identity) else {
            return Ok(());
        };
        if from != to {
            return Ok(());
        }
        let apart = match total {
            Some(total) if !sink.appends => {
                let read_start = source.base + self.offset;
                let write_start = sink.base + self.seek;
                read_start + total <= write_start || write_start + total <= read_start
            }
            _ => false,
        };
        if apart {
            return Ok(());
        }
        Err(Error::usage(format!(
            "{} -> {}: input file is output file (the ranges overlap{})",
            source.label,
            sink.label,
            if sink.appends {
                ": the sink appends to the source"
            } else {
                ""
            }
        )))
    }

    pub(super) fn checked_length(&self, source: &OpenSource<'_>) -> Result<Option<u64>> {
        let Some(size) = source.size else {
            if self.offset > 0 {
                return Err(Error::usage(format!(
                    "{}: offset needs a seekable source (a file, block device or memory)",
                    source.label
                )));
            }
            return Ok(self.length);
        };
        let start = source.base.checked_add(self.offset).ok_or_else(|| {
            Error::usage(format!(
                "{}: offset {} is past the largest byte offset",
                source.label, self.offset
            ))
        })?;
        if start > size {
            return Err(Error::usage(format!(
                "{}: offset {start} is past the end of the source ({size} bytes)",
                source.label
            )));
        }
        match self.length {
            Some(length) if length > size - start => Err(Error::usage(format!(
                "{}: range {start}..{} runs past the end of the source ({size} bytes)",
                source.label,
                start as u128 + length as u128
            ))),
            Some(length) => Ok(Some(length)),
            None => Ok(Some(size - start)),
        }
    }

    pub(super) fn check_sink(&self, sink: &OpenSink<'_>, total: Option<u64>) -> Result<()> {
        if self.seek > 0 {
            if matches!(sink.io, SinkIo::Fresh(_)) {
                return Err(Error::usage(format!(
                    "{}: seek on a regular file needs in-place writing",
                    sink.label
                )));
            }
            if !sink.kind.is_seekable() {
                return Err(Error::usage(format!(
                    "{}: seek needs a seekable sink, not a {}",
                    sink.label, sink.kind
                )));
            }
        }
        if sink.appends && self.seek > 0 {
            return Err(Error::usage(format!(
                "{}: seek cannot place writes in a file opened for appending (>>); every write lands at its end",
                sink.label
            )));
        }
        let end = sink
            .base
            .checked_add(self.seek)
            .and_then(|start| start.checked_add(total.unwrap_or(0)));
        if end.is_none() {
            return Err(Error::usage(format!(
                "{}: seek {} plus the flow's length is past the largest byte offset",
                sink.label, self.seek
            )));
        }
        if let (Some(capacity), Some(total)) = (sink.capacity, total) {
            let end = sink.base + self.seek + total;
            if end > capacity {
                return Err(Error::usage(format!(
                    "{}: {total} bytes at {} do not fit in its {capacity} bytes",
                    sink.label,
                    sink.base + self.seek
                )));
            }
        }
        Ok(())
    }
}

/// `--verify` on a flow with a stream side.
pub(super) fn verify_needs_seekable(
    source: Option<EndpointKind>,
    sink: Option<EndpointKind>,
) -> Error {
    let name = |kind: Option<EndpointKind>| kind.map_or("?", EndpointKind::as_str);
    Error::usage(format!(
        "verify reads both sides again after the flow: it needs a file, block device or memory on each side, not {} -> {}",
        name(source),
        name(sink)
    ))
}
