//! The pump of one `io-uring` run: each slot's piece of the flow from
//! its read to its write, the requests kept in flight, and the transfer
//! advanced over the written prefix (see the parent module for the rules).

use rustix::event::PollFlags;
use rustix::io::Errno;

use crate::error::Error;
use crate::mechanism::direct_setup::{align_down, align_up, DirectSides};
use crate::mechanism::io::write_sink;
use crate::mechanism::transfer::Side;
use crate::mechanism::{Stop, Transfer};
use crate::sys::uring::{Op, Ring};

/// Where a slot is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Carries nothing.
    Free,
    /// Being filled from the source.
    Reading,
    /// Read; (the rest) waiting to be written.
    Read,
    /// A write is in flight.
    Writing,
    /// Only an unaligned tail is left, for when the ring is idle.
    Tail,
    /// Every byte written; waiting for the prefix to reach it.
    Written,
}

/// One slot's piece of the flow.
#[derive(Clone, Copy, Debug)]
pub(super) struct Slot {
    stage: Stage,
    /// Offset in the run of the piece's first byte.
    off: u64,
    /// Bytes of the piece (for a stream read still filling: so far).
    len: usize,
    /// Bytes in the buffer before the piece (a direct read starts at the
    /// block boundary below the piece).
    head: usize,
    /// Source offset of the buffer's first byte (seekable sources).
    file_start: u64,
    /// Bytes of the buffer filled by reads (head included).
    got: usize,
    /// Bytes of the buffer the reads aim to fill.
    want: usize,
    /// Bytes of the piece written.
    written: usize,
    /// Bytes of the piece the transfer has been advanced over.
    advanced: usize,
}

impl Slot {
    pub(super) const FREE: Slot = Slot {
        stage: Stage::Free,
        off: 0,
        len: 0,
        head: 0,
        file_start: 0,
        got: 0,
        want: 0,
        written: 0,
        advanced: 0,
    };
}

/// The state of one run.
pub(super) struct Pump<'fd, 'm> {
    /// The descriptors, and where to read and write them now.
    pub(super) sides: DirectSides<'fd, 'm>,
    /// Several reads at once, at offsets (a seekable source of known length).
    pub(super) source_seekable: bool,
    /// Writes at offsets, several at once.
    pub(super) sink_seekable: bool,
    pub(super) source_direct: bool,
    pub(super) block: usize,
    pub(super) base_source: u64,
    pub(super) base_sink: u64,
    pub(super) total: Option<u64>,
    /// Run offset of the next piece to read.
    pub(super) next_read: u64,
    /// Run offset of the first piece not yet wholly advanced over.
    pub(super) cursor: u64,
    /// The source has ended: no new reads.
    pub(super) eof: bool,
    /// A tail waits for the ring to go idle.
    pub(super) tail_waiting: bool,
    /// Why the run stops, once it must: nothing new is submitted after.
    pub(super) stop: Option<Stop>,
}

impl Pump<'_, '_> {
    /// Sets why the run stops, unless it already has a reason.
    fn stop(&mut self, stop: Stop) {
        self.stop.get_or_insert(stop);
    }

    pub(super) fn run(
        &mut self,
        t: &mut Transfer<'_>,
        ring: &mut Ring,
        slots: &mut [Slot],
    ) -> Result<(), Stop> {
        loop {
            if self.stop.is_none() {
                t.pace();
                if let Err(stop) = self.submit_work(t, ring, slots) {
                    self.stop(stop);
                }
            }
            if ring.in_flight() == 0 {
                break;
            }
            t.counters.syscalls += 1;
            let waited = match t.idle {
                None => ring.submit_and_wait(1).map(|_| true),
                Some(idle) => ring.submit_and_wait_for(idle.remaining()),
            };
            match waited {
                Ok(true) => {}
                Ok(false) if t.idle.is_some_and(|idle| idle.remaining().is_zero()) => {
                    // Nothing completed for the idle timeout: a write in
                    // flight waits for the sink, else reads for the source.
                    let side = match slots.iter().any(|s| s.stage == Stage::Writing) {
                        true => Side::Sink,
                        false => Side::Source,
                    };
                    self.stop(t.idle_stop(side));
                    ring.cancel_all()
                        .and_then(|()| ring.drain())
                        .map_err(|e| Error::io("io_uring_enter", t.source_label, None, e))?;
                    break;
                }
                Ok(false) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let errno = Errno::from_io_error(&e).unwrap_or(Errno::IO);
                    self.stop(t.failed("io_uring_enter", Side::Source, errno));
                    // Requests may still be in flight; the ring waits for
                    // them when it is dropped, and the flow ends here.
                    ring.drain()
                        .map_err(|e| Error::io("io_uring_enter", t.source_label, None, e))?;
                    break;
                }
            }
            while let Some((slot, result)) = ring.next_completion() {
                self.complete(t, &mut slots[slot], result);
            }
            self.advance(t, slots);
        }
        match self.stop.take() {
            Some(refusal @ Stop::Refused { .. }) => {
                self.save_stream_bytes(t, ring, slots)?;
                Err(refusal)
            }
            Some(failure) => Err(failure),
            None if t.finished() => Ok(()),
            // Fine for a stream read to its end, an error naming the
            // offset when bytes were owed.
            None if self.eof => t.source_ended(),
            None => Err(Stop::Failed(Error::io(
                "io_uring",
                t.source_label,
                Some(t.source_pos),
                std::io::Error::other("io-uring stalled with bytes still owed"),
            ))),
        }
    }

    /// Pushes every request that can go now.
    fn submit_work(
        &mut self,
        t: &mut Transfer<'_>,
        ring: &mut Ring,
        slots: &mut [Slot],
    ) -> Result<(), Stop> {
        self.push_requests(t, ring, slots)?;
        if self.tail_waiting && ring.in_flight() == 0 {
            // The tail was found with nothing else in flight: write it now.
            self.push_requests(t, ring, slots)?;
        }
        Ok(())
    }

    fn push_requests(
        &mut self,
        t: &mut Transfer<'_>,
        ring: &mut Ring,
        slots: &mut [Slot],
    ) -> Result<(), Stop> {
        if self.tail_waiting {
            if ring.in_flight() > 0 {
                return Ok(());
            }
            // Idle: clear O_DIRECT; from here on the sink is buffered and
            // the tails are plain writes.
            if let Some(mode) = self.sides.sink_mode.as_mut() {
                t.counters.syscalls += 1;
                mode.restore()
                    .map_err(|e| t.failed("fcntl(F_SETFL)", Side::Sink, e))?;
            }
            for slot in slots.iter_mut().filter(|s| s.stage == Stage::Tail) {
                slot.stage = Stage::Read;
            }
            self.tail_waiting = false;
        }
        // Reads to resume (short reads, EAGAIN, a stream slot filling up).
        for (index, slot) in slots.iter().enumerate() {
            if slot.stage == Stage::Reading && !ring.is_busy(index) {
                self.push_read(t, ring, index, slot)?;
            }
        }
        self.start_reads(t, ring, slots)?;
        self.start_writes(t, ring, slots)?;
        Ok(())
    }

    /// Gives free slots new pieces to read.
    fn start_reads(
        &mut self,
        t: &mut Transfer<'_>,
        ring: &mut Ring,
        slots: &mut [Slot],
    ) -> Result<(), Stop> {
        let slot_len = ring.slot_len();
        loop {
            if self.eof || self.total.is_some_and(|total| self.next_read >= total) {
                return Ok(());
            }
            // A stream has one read going at a time.
            if !self.source_seekable && slots.iter().any(|s| s.stage == Stage::Reading) {
                return Ok(());
            }
            let Some(index) = slots.iter().position(|s| s.stage == Stage::Free) else {
                return Ok(());
            };
            let owed = self.total.map_or(u64::MAX, |total| total - self.next_read);
            let mut slot = Slot {
                stage: Stage::Reading,
                off: self.next_read,
                ..Slot::FREE
            };
            if self.source_seekable {
                let position = self.base_source + self.next_read;
                if self.source_direct {
                    slot.file_start = align_down(position, self.block);
                    slot.head = (position - slot.file_start) as usize;
                } else {
                    slot.file_start = position;
                }
                slot.len = ((slot_len - slot.head) as u64).min(owed) as usize;
                slot.want = match self.source_direct {
                    true => align_up(slot.head + slot.len, self.block).min(slot_len),
                    false => slot.len,
                };
                self.next_read += slot.len as u64;
            } else {
                // The piece's length is what arrives; `next_read` moves
                // when the read completes.
                slot.file_start = self.base_source + self.next_read;
                slot.want = owed.min(slot_len as u64) as usize;
            }
            slots[index] = slot;
            self.push_read(t, ring, index, &slot)?;
        }
    }

    /// Writes what was read: any piece at its offset on a seekable sink,
    /// only the next piece in order (one write at a time) on a stream.
    fn start_writes(
        &mut self,
        t: &mut Transfer<'_>,
        ring: &mut Ring,
        slots: &mut [Slot],
    ) -> Result<(), Stop> {
        for index in 0..slots.len() {
            if slots[index].stage != Stage::Read || ring.is_busy(index) {
                continue;
            }
            if !self.sink_seekable {
                let in_order = slots[index].off == self.cursor;
                let writing = slots.iter().any(|s| s.stage == Stage::Writing);
                if !in_order || writing {
                    continue;
                }
            }
            let slot = &mut slots[index];
            let mut len = slot.len - slot.written;
            if self.sides.sink_direct() {
                len = align_down(len as u64, self.block) as usize;
                if len == 0 || !slot.written.is_multiple_of(self.block) {
                    slot.stage = Stage::Tail;
                    self.tail_waiting = true;
                    continue;
                }
            }
            let offset = self
                .sink_seekable
                .then_some(self.base_sink + slot.off + slot.written as u64);
            t.counters.ring_entries += 1;
            ring.push(
                Op::Write,
                self.sides.sink_write_fd(),
                index,
                slot.head + slot.written,
                len,
                offset,
            )
            .map_err(|e| Error::io("io_uring(WRITE_FIXED)", t.sink_label, offset, e))?;
            slot.stage = Stage::Writing;
        }
        Ok(())
    }

    fn push_read(
        &self,
        t: &mut Transfer<'_>,
        ring: &mut Ring,
        index: usize,
        slot: &Slot,
    ) -> Result<(), Stop> {
        let offset = t
            .source_kind
            .is_seekable()
            .then_some(slot.file_start + slot.got as u64);
        t.counters.ring_entries += 1;
        ring.push(
            Op::Read,
            self.sides.source_read_fd(),
            index,
            slot.got,
            slot.want - slot.got,
            offset,
        )
        .map_err(|e| Stop::Failed(Error::io("io_uring(READ_FIXED)", t.source_label, offset, e)))
    }

    /// Takes one completion for `slot`.
    fn complete(&mut self, t: &mut Transfer<'_>, slot: &mut Slot, result: i32) {
        match slot.stage {
            Stage::Reading => self.read_done(t, slot, result),
            Stage::Writing => self.write_done(t, slot, result),
            stage => unreachable!("a completion for a slot in stage {stage:?}"),
        }
    }

    fn read_done(&mut self, t: &mut Transfer<'_>, slot: &mut Slot, result: i32) {
        if result < 0 {
            let errno = Errno::from_raw_os_error(-result);
            match errno {
                // Resubmitted by the next `submit_work`.
                Errno::INTR => {}
                Errno::AGAIN => {
                    if let Err(stop) =
                        t.wait_ready(self.sides.source_fd, PollFlags::IN, Side::Source)
                    {
                        self.stop(stop);
                    }
                }
                _ => {
                    let stop = t.refused_or_failed("io_uring(READ_FIXED)", Side::Source, errno);
                    self.stop(stop);
                }
            }
            return;
        }
        let n = result as usize;
        if n > 0 {
            t.progressed();
        }
        if n == 0 {
            // The source ended: no new reads, but what was read is still
            // written, so that an early end is reported at the offset the
            // sink really reached (`run` decides whether it is an error).
            self.eof = true;
            if self.source_seekable {
                // The file ended inside this piece: keep what came.
                let came = slot.got.saturating_sub(slot.head).min(slot.len);
                if came > 0 {
                    slot.len = came;
                    slot.stage = Stage::Read;
                } else {
                    *slot = Slot::FREE;
                }
            } else if slot.got > 0 {
                self.stream_piece_read(slot);
            } else {
                *slot = Slot::FREE;
            }
            return;
        }
        slot.got += n;
        if self.source_seekable {
            if slot.got >= slot.head + slot.len {
                slot.stage = Stage::Read;
            }
            return;
        }
        slot.len = slot.got;
        // A direct sink takes whole slots; anything else takes what came.
        if !self.sides.sink_direct() || slot.got == slot.want {
            self.stream_piece_read(slot);
        }
    }

    /// A stream piece is complete: it may be written, and the next read
    /// starts after it.
    fn stream_piece_read(&mut self, slot: &mut Slot) {
        slot.len = slot.got;
        slot.stage = Stage::Read;
        self.next_read += slot.len as u64;
    }

    fn write_done(&mut self, t: &mut Transfer<'_>, slot: &mut Slot, result: i32) {
        slot.stage = Stage::Read;
        if result < 0 {
            let errno = Errno::from_raw_os_error(-result);
            match errno {
                Errno::INTR => {}
                Errno::AGAIN => {
                    if let Err(stop) = t.wait_ready(self.sides.sink_fd, PollFlags::OUT, Side::Sink)
                    {
                        self.stop(stop);
                    }
                }
                _ => {
                    let stop = t.refused_or_failed("io_uring(WRITE_FIXED)", Side::Sink, errno);
                    self.stop(stop);
                }
            }
            return;
        }
        if result == 0 {
            self.stop(t.failed("io_uring(WRITE_FIXED)", Side::Sink, Errno::NOSPC));
            return;
        }
        slot.written += result as usize;
        if slot.written == slot.len {
            slot.stage = Stage::Written;
        }
    }

    /// Advances the transfer over the written prefix of the flow.
    fn advance(&mut self, t: &mut Transfer<'_>, slots: &mut [Slot]) {
        while let Some(slot) = slots
            .iter_mut()
            .find(|s| s.stage != Stage::Free && s.off == self.cursor && s.len > 0)
        {
            let fresh = slot.written - slot.advanced;
            if fresh > 0 {
                t.advance(fresh as u64);
                slot.advanced = slot.written;
            }
            if slot.stage != Stage::Written {
                return;
            }
            self.cursor += slot.len as u64;
            *slot = Slot::FREE;
        }
    }

    /// After a refusal, with the ring idle: bytes taken from a stream
    /// source are gone from it, so write them (buffered, in order) before
    /// handing the flow to another mechanism. A seekable source is simply
    /// read again by the next one.
    fn save_stream_bytes(
        &mut self,
        t: &mut Transfer<'_>,
        ring: &mut Ring,
        slots: &mut [Slot],
    ) -> Result<(), Stop> {
        if t.source_kind.is_seekable() {
            return Ok(());
        }
        if let Some(mode) = self.sides.sink_mode.as_mut() {
            t.counters.syscalls += 1;
            mode.restore()
                .map_err(|e| t.failed("fcntl(F_SETFL)", Side::Sink, e))?;
        }
        loop {
            let Some(index) = slots
                .iter()
                .position(|s| s.stage != Stage::Free && s.off == self.cursor && s.got > 0)
            else {
                return Ok(());
            };
            let slot = slots[index];
            // A stream piece starts at the buffer's start and is `got` long.
            let piece = &ring.slot_bytes(index)[..slot.got];
            write_sink(t, &piece[slot.advanced..])?;
            self.cursor += piece.len() as u64;
            slots[index] = Slot::FREE;
        }
    }
}
