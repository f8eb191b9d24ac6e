//! The write path and write-back: writes dirty frames in memory; dirty
//! frames go to the device in runs of adjacent blocks through one io_uring
//! batch per shard, from the background flusher, `flush`, and drop
//! (eviction writes its one victim itself, in `read.rs`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{lock, Inner};
use crate::error::{Error, Result};
use crate::sys::aligned::AlignedBuffer;
use crate::sys::uring::Request;

/// The most blocks in one write-back request (1 MiB of 4 KiB blocks).
const MAX_WRITE_BYTES: usize = 1 << 20;

#[derive(Default)]
pub(crate) struct FlusherState {
    stop: bool,
}

impl Inner {
    pub(super) fn write_at(&self, data: &[u8], offset: u64) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let end = offset + data.len() as u64;
        let old_len = {
            let _size = lock(&self.size_lock);
            let old = self.len();
            if end > old {
                if self.own_device().is_block_device {
                    return Err(Error::Usage(format!(
                        "write of {} bytes at {offset} ends past the end of block device {} ({old} bytes)",
                        data.len(),
                        self.own_device().path
                    )));
                }
                self.len.store(end, Ordering::Release);
            }
            old
        };
        let bs = self.block_size as u64;
        for block in offset / bs..=(end - 1) / bs {
            let start = block * bs;
            let mut shard = self.shard_of(block).lock();
            shard.write_epoch += 1;
            let frame = match shard.access(block) {
                Some(frame) => frame,
                None => {
                    shard.misses += 1;
                    let whole = offset <= start && end >= start + bs;
                    if whole || start >= old_len {
                        // Nothing of the old block survives (or there was
                        // none): no need to read it.
                        let frame = self.admit(&mut shard, block);
                        shard.zero(frame);
                        frame
                    } else {
                        let old = self.read_block_from_device(block)?;
                        let frame = self.admit(&mut shard, block);
                        shard.store(frame, 0, old.as_slice());
                        frame
                    }
                }
            };
            let from = offset.max(start);
            let to = end.min(start + bs);
            shard.store(
                frame,
                (from - start) as usize,
                &data[(from - offset) as usize..(to - offset) as usize],
            );
            shard.mark_dirty(frame);
        }
        Ok(())
    }

    pub(super) fn flush(&self) -> Result<()> {
        self.write_back()?;
        self.own_device().sync()?;
        match lock(&self.deferred_error).take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Writes every dirty block back, shard by shard, each shard's blocks
    /// coalesced into runs of adjacent blocks and sent as one batch; the
    /// shard stays locked meanwhile, so no write slips between the copy
    /// and the clean mark.
    fn write_back(&self) -> Result<()> {
        let bs = self.block_size;
        let max_run = (MAX_WRITE_BYTES / bs).max(1);
        for shard in &self.shards {
            let mut shard = shard.0.lock();
            let dirty = shard.dirty_blocks();
            if dirty.is_empty() {
                continue;
            }
            let mut staging = AlignedBuffer::new(dirty.len() * bs, super::shard::FRAME_ALIGN);
            let mut runs: Vec<(usize, usize)> = Vec::new();
            for (index, &(key, frame)) in dirty.iter().enumerate() {
                staging.as_mut_slice()[index * bs..(index + 1) * bs]
                    .copy_from_slice(shard.frame(frame));
                match runs.last_mut() {
                    Some((start, count))
                        if *count < max_run && dirty[*start].0 + *count as u64 == key =>
                    {
                        *count += 1
                    }
                    _ => runs.push((index, 1)),
                }
            }
            let mut requests = Vec::with_capacity(runs.len());
            let mut rest = staging.as_slice();
            for &(start, count) in &runs {
                let (head, tail) = rest.split_at(count * bs);
                rest = tail;
                requests.push(Request::Write {
                    offset: dirty[start].0 * bs as u64,
                    buf: head,
                });
            }
            self.own_device()
                .run_batch(&mut requests, self.queue_depth.max(4))?;
            for &(_, frame) in &dirty {
                shard.mark_clean(frame);
            }
            shard.forget_dirty_list();
            let end = (dirty[dirty.len() - 1].0 + 1) * bs as u64;
            self.trim_after_write(end)?;
        }
        Ok(())
    }

    /// Write-back writes whole blocks; when one ended past the logical end,
    /// cut the file back to it.
    pub(super) fn trim_after_write(&self, written_end: u64) -> Result<()> {
        if written_end <= self.len() {
            return Ok(());
        }
        let _size = lock(&self.size_lock);
        self.own_device().truncate(self.len())
    }
}

/// Starts the thread that writes dirty blocks back every `interval`.
pub(super) fn spawn_flusher(inner: Arc<Inner>, interval: Duration) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("flexio-cache-flusher".into())
        .spawn(move || {
            let mut next = Instant::now() + interval;
            let mut state = lock(&inner.flusher);
            loop {
                let now = Instant::now();
                if state.stop {
                    return;
                }
                if now < next {
                    state = inner
                        .flusher_wake
                        .wait_timeout(state, next - now)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0;
                    continue;
                }
                drop(state);
                if let Err(error) = inner.write_back().and_then(|()| inner.own_device().sync()) {
                    lock(&inner.deferred_error).get_or_insert(error);
                }
                next = Instant::now() + interval;
                state = lock(&inner.flusher);
            }
        })
        .expect("spawning the flusher thread")
}

/// Tells the flusher to stop; the caller joins it.
pub(super) fn stop_flusher(inner: &Inner) {
    lock(&inner.flusher).stop = true;
    inner.flusher_wake.notify_all();
}
