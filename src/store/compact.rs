//! Compaction: merging small sealed segments (left by many short imports or live restarts)
//! into full-size ones, keeping every event's ID and the order (`weir compact`, and
//! `compact = true` on an archive sink when its input pauses).
//!
//! # Rules
//!
//! - A segment is *small* when its file is below [`COMPACT_SMALL_PERCENT`] of the maximum
//!   segment size. Runs of at least two small segments that are adjacent in ID order (no
//!   full-size segment between them) are merged, in order, into segments of at most the
//!   maximum size; a lone small segment is left alone.
//! - Adjacent batches of one schema whose IDs follow each other are coalesced into batches of
//!   up to [`crate::batch::DEFAULT_BATCH_EVENTS`] events; batches are never reordered or split
//!   other than at the maximum segment size, and IDs are kept.
//! - Each step (one run, at most [`COMPACT_STEP_SEGMENTS`] segments and about one maximum
//!   segment of bytes, with an eighth left for the writer's worst-case accounting) is one change of [`super::rewrite`]: crash-safe, the merged segments
//!   replace the small ones atomically. `weir compact` runs steps until no run is left; a
//!   crash between steps leaves a correct, partly compacted archive. The sink's background
//!   compaction runs one step per pause of its input, so it holds the writer up for at most
//!   one segment's worth of copying.

use super::{Result, Store};
use crate::batch::{Batch, DEFAULT_BATCH_EVENTS};
use crate::segment::Segment;

/// A segment below this percentage of the maximum segment size is small.
pub const COMPACT_SMALL_PERCENT: u64 = 50;

/// At most this many segments are merged in one step.
pub const COMPACT_STEP_SEGMENTS: usize = 4096;

/// What a compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CompactReport {
    /// Small segments merged.
    pub segments_merged: u64,
    /// Segments written for them.
    pub segments_written: u64,
    /// Events moved.
    pub events: u64,
    /// Bytes of the merged segments.
    pub bytes_before: u64,
    /// Bytes of the segments written.
    pub bytes_after: u64,
}

impl Store {
    /// The next run of small segments to merge (catalog indices), if any.
    fn compaction_run(&self) -> Option<Vec<usize>> {
        let max = self.opts.max_segment_size;
        let small = |b: u64| b.saturating_mul(100) < max.saturating_mul(COMPACT_SMALL_PERCENT);
        let segs = &self.catalog.segments;
        let mut i = 0;
        while i < segs.len() {
            if !small(segs[i].bytes) {
                i += 1;
                continue;
            }
            let mut run = vec![i];
            let mut bytes = segs[i].bytes;
            let mut j = i + 1;
            while j < segs.len()
                && small(segs[j].bytes)
                && run.len() < COMPACT_STEP_SEGMENTS
                && bytes + segs[j].bytes <= max - max / 8
            {
                bytes += segs[j].bytes;
                run.push(j);
                j += 1;
            }
            if run.len() >= 2 {
                return Some(run);
            }
            i = j;
        }
        None
    }

    /// Merges one run of small segments; `None` when there is none.
    pub fn compact_step(&mut self) -> Result<Option<CompactReport>> {
        self.check_failed()?;
        let Some(run) = self.compaction_run() else {
            return Ok(None);
        };
        let r = self.merge(&run);
        self.poison_on_error(r).map(Some)
    }

    /// Seals the active segment and merges small segments until none are left to merge.
    pub fn compact(&mut self) -> Result<CompactReport> {
        self.check_failed()?;
        let r = self.seal(true);
        self.poison_on_error(r)?;
        let mut total = CompactReport::default();
        while let Some(r) = self.compact_step()? {
            let progress = r.segments_written < r.segments_merged;
            total.segments_merged += r.segments_merged;
            total.segments_written += r.segments_written;
            total.events += r.events;
            total.bytes_before += r.bytes_before;
            total.bytes_after += r.bytes_after;
            if !progress {
                // The merged events needed as many segments: nothing more to gain.
                break;
            }
        }
        Ok(total)
    }

    /// One step of background compaction, when enabled (an idle flush).
    pub(crate) fn idle_compaction(&mut self) -> Result<()> {
        if !self.maintenance.compact {
            return Ok(());
        }
        if let Some(r) = self.compact_step()? {
            tracing::info!(
                dir = %self.dir.display(),
                merged = r.segments_merged,
                written = r.segments_written,
                events = r.events,
                "compacted segments"
            );
        }
        Ok(())
    }

    fn merge(&mut self, run: &[usize]) -> Result<CompactReport> {
        let mut report = CompactReport::default();
        let mut staged = self.staging()?;
        let mut pending: Option<Batch> = None;
        for &i in run {
            let entry = &self.catalog.segments[i];
            report.segments_merged += 1;
            report.events += entry.events;
            report.bytes_before += entry.bytes;
            let seg = Segment::open(self.dir.join(&entry.file))?;
            // Each output records the checkpoints of the newest source it holds events of
            // (`rewrite.rs`).
            staged.set_checkpoints(seg.checkpoints()?)?;
            for b in seg.batches() {
                let b = b?.to_batch();
                pending = match pending.take() {
                    Some(mut p) => {
                        let joins = p.id_range().end == b.id()
                            && p.len() + b.len() <= DEFAULT_BATCH_EVENTS
                            && p.append(&b);
                        if joins {
                            Some(p)
                        } else {
                            staged.add(p)?;
                            Some(b)
                        }
                    }
                    None => Some(b),
                };
            }
        }
        if let Some(p) = pending {
            staged.add(p)?;
        }
        let added = staged.finish()?;
        report.segments_written = added.len() as u64;
        report.bytes_after = added.iter().map(|e| e.bytes).sum();
        self.commit_change(run, added)?;
        Ok(report)
    }
}
