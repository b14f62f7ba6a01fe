//! Erasing events: `weir erase` (by ID range, time or expression) on a writer.
//!
//! A segment whose events are all selected is dropped whole; one with some selected is
//! rewritten without them into a new segment (or several, at the maximum segment size), and
//! the old one dropped; the others stay untouched. All of it is one change of
//! [`super::rewrite`]: a crash leaves the archive before or after the erase, never between.
//!
//! # IDs
//!
//! Surviving events keep their IDs. A batch stores its first ID and its row count and covers
//! the IDs in between, so a batch with erased rows in the middle is written as several
//! batches, one per run of surviving rows, each with the first ID of its run; a segment's
//! intervals then have holes. The erased IDs are recorded in the catalog's `erased` ranges and
//! never assigned again (`next_id` does not move back), so `weir get` finds every survivor
//! under its old ID and none of the erased ones.

use std::ops::Range;

use crate::batch::Batch;
use crate::segment::Segment;
use crate::types::SchemaRef;
use crate::value::DecodeError;

use super::catalog::CatalogEntry;
use super::{Result, Store, StoreError};

/// Which events an erase removes: asked first per segment (its catalog entry), then per batch
/// (schema, IDs, `ts` range), and only when both are undecided per row.
pub trait EventSelector {
    /// `Some(true)`: every event of the segment is selected; `Some(false)`: none; `None`: ask
    /// per batch.
    fn segment(&mut self, entry: &CatalogEntry) -> Option<bool>;
    /// The same for one batch.
    fn batch(
        &mut self,
        schema: &SchemaRef,
        ids: Range<u64>,
        ts: Option<(i64, i64)>,
    ) -> Option<bool>;
    /// Whether the event `id` with the encoded `row` (of `schema`) is selected.
    fn row(&mut self, schema: &SchemaRef, id: u64, row: &[u8]) -> Result<bool, DecodeError>;
}

/// Selects the events whose IDs lie in a range (`weir erase --ids A-B`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdSelector(pub Range<u64>);

impl IdSelector {
    fn covers(&self, r: &Range<u64>) -> Option<bool> {
        if r.end <= self.0.start || r.start >= self.0.end {
            Some(false)
        } else if self.0.start <= r.start && r.end <= self.0.end {
            Some(true)
        } else {
            None
        }
    }
}

impl EventSelector for IdSelector {
    fn segment(&mut self, entry: &CatalogEntry) -> Option<bool> {
        let mut answer: Option<Option<bool>> = None;
        for r in entry.ranges() {
            let c = self.covers(&r);
            answer = Some(match answer {
                None => c,
                Some(a) if a == c => a,
                Some(_) => None,
            });
        }
        answer.unwrap_or(Some(false))
    }

    fn batch(&mut self, _: &SchemaRef, ids: Range<u64>, _: Option<(i64, i64)>) -> Option<bool> {
        self.covers(&ids)
    }

    fn row(&mut self, _: &SchemaRef, id: u64, _: &[u8]) -> Result<bool, DecodeError> {
        Ok(self.0.contains(&id))
    }
}

/// What an erase did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct EraseReport {
    /// Events erased.
    pub events: u64,
    /// Segments dropped whole.
    pub segments_dropped: u64,
    /// Segments rewritten without some of their events.
    pub segments_rewritten: u64,
    /// New segments written for those.
    pub segments_written: u64,
}

/// What stays of one batch of a partially erased segment.
struct BatchPlan {
    /// The batch's index in its segment.
    index: usize,
    /// The runs of rows that stay (ascending row indices).
    keep: Vec<Range<usize>>,
}

/// Adds row `i` to the runs, extending the last one when adjacent.
fn push_run(runs: &mut Vec<Range<usize>>, i: usize) {
    match runs.last_mut() {
        Some(last) if last.end == i => last.end = i + 1,
        _ => runs.push(i..i + 1),
    }
}

/// The batches of `batch` (IDs set) holding the rows of `runs` (ascending), each keeping its
/// rows' IDs.
fn extract_runs(mut batch: Batch, runs: &[Range<usize>]) -> Vec<Batch> {
    let mut out = Vec::with_capacity(runs.len());
    for run in runs.iter().rev() {
        if run.end < batch.len() {
            batch.split_off(run.end);
        }
        out.push(batch.split_off(run.start));
    }
    out.reverse();
    out
}

impl Store {
    /// Erases the events `selector` selects (see the module docs). The active segment is
    /// sealed first, so that every event is in a sealed segment. A damaged segment that must
    /// be read is an error, before anything changed.
    pub fn erase(&mut self, selector: &mut dyn EventSelector) -> Result<EraseReport> {
        self.check_failed()?;
        let r = self.seal(true).and_then(|()| self.erase_sealed(selector));
        self.poison_on_error(r)
    }

    fn erase_sealed(&mut self, selector: &mut dyn EventSelector) -> Result<EraseReport> {
        let mut report = EraseReport::default();
        let mut drop = Vec::new();
        let mut staged = self.staging()?;
        for i in 0..self.catalog.segments.len() {
            let entry = &self.catalog.segments[i];
            match selector.segment(entry) {
                Some(false) => continue,
                Some(true) => {
                    drop.push(i);
                    report.segments_dropped += 1;
                    continue;
                }
                None => {}
            }
            let path = self.dir.join(&entry.file);
            let seg = Segment::open(&path)?;
            let mut plans = Vec::new();
            let (mut kept, mut erased) = (0u64, 0u64);
            for b in 0..seg.len() {
                let Some((schema, ids, ts)) = seg.batch_meta(b) else {
                    continue;
                };
                let rows = (ids.end - ids.start) as usize;
                let keep = match selector.batch(schema, ids.clone(), ts) {
                    Some(true) => Vec::new(),
                    Some(false) => std::iter::once(0..rows).collect(),
                    None => {
                        let batch = match seg.batch(b) {
                            Some(r) => r?,
                            None => continue,
                        };
                        let mut keep = Vec::new();
                        for (k, row) in batch.rows().enumerate() {
                            let selected = selector
                                .row(schema, ids.start + k as u64, row)
                                .map_err(|e| {
                                    StoreError::Segment(crate::segment::SegmentError::Corrupt {
                                        path: path.clone(),
                                        reason: format!("batch {b}: row {k} does not decode: {e}"),
                                    })
                                })?;
                            if !selected {
                                push_run(&mut keep, k);
                            }
                        }
                        keep
                    }
                };
                let n: usize = keep.iter().map(|r| r.len()).sum();
                kept += n as u64;
                erased += (rows - n) as u64;
                plans.push(BatchPlan { index: b, keep });
            }
            if erased == 0 {
                continue;
            }
            drop.push(i);
            if kept == 0 {
                report.segments_dropped += 1;
                continue;
            }
            report.segments_rewritten += 1;
            staged.set_checkpoints(seg.checkpoints()?)?;
            for plan in plans {
                if plan.keep.is_empty() {
                    continue;
                }
                let batch = match seg.batch(plan.index) {
                    Some(r) => r?.to_batch(),
                    None => continue,
                };
                for part in extract_runs(batch, &plan.keep) {
                    staged.add(part)?;
                }
            }
            // Each rewritten segment gets its own new segments (merging is compaction's job).
            staged.seal()?;
        }
        let added = staged.finish()?;
        report.segments_written = added.len() as u64;
        report.events = self.commit_change(&drop, added)?;
        tracing::info!(
            dir = %self.dir.display(),
            events = report.events,
            dropped = report.segments_dropped,
            rewritten = report.segments_rewritten,
            "erased events"
        );
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::IdSelector;

    #[test]
    fn id_ranges_cover() {
        let s = IdSelector(10..20);
        assert_eq!(s.covers(&(0..10)), Some(false));
        assert_eq!(s.covers(&(20..30)), Some(false));
        assert_eq!(s.covers(&(10..20)), Some(true));
        assert_eq!(s.covers(&(12..15)), Some(true));
        assert_eq!(s.covers(&(5..15)), None);
        assert_eq!(s.covers(&(15..25)), None);
    }
}
