//! Retention: erasing the oldest sealed segments when the archive passes its disk budget, and
//! segments whose newest event is older than the retention period (like Tenzir's
//! `disk-budget-high`/`-low` and its age rotation).
//!
//! # Rules
//!
//! - **Budget** (`max_archive_size`, `weir import --max-archive-size`): the archive's size is
//!   the bytes of its sealed segments and their index files plus one maximum-size segment for
//!   the active one, which may fill up before the next check (and gains its metadata when
//!   sealed, and its index right after: counted from then on, the next check being at once). When it passes
//!   the budget, sealed segments are erased oldest first (lowest IDs: import order) until it is
//!   at most [`LOW_MARK_PERCENT`] of the budget (the low mark), so that erasing happens in
//!   steps, not at every seal. So the segment files on disk never pass the budget. It must
//!   hold at least [`MIN_BUDGET_SEGMENTS`] segments (the active segment is never erased);
//!   with ten or more, little of it goes unused.
//!   The write-ahead log (records point at rows, a few dozen bytes each), the catalog and
//!   files a running reader still holds after they were erased are not counted.
//! - **Age** (`retain`, `--retain`): a sealed segment whose newest event (`ts` of its catalog
//!   entry) is older than now minus the period is erased. A segment without any `ts` is never
//!   erased by age.
//! - **When**: when the writer opens (after the write-ahead log is replayed), after every
//!   seal, and for age also at most every [`AGE_CHECK_INTERVAL`] otherwise (checked at
//!   appends and idle flushes). So the budget holds across restarts and during a live import
//!   that runs for days.
//! - **What is never erased**: the active segment, and anything the write-ahead log points
//!   into (those files are not in the catalog until sealed). IDs are never reused, and erased
//!   segments go through [`super::rewrite`]'s change: crash-safe, and deleted only once no
//!   reader of an older catalog runs.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{Result, Store};

/// The low mark: after passing the budget, segments are erased until the archive is at most
/// this percentage of it.
pub const LOW_MARK_PERCENT: u64 = 90;

/// A budget must be at least this many maximum-size segments.
pub const MIN_BUDGET_SEGMENTS: u64 = 2;

/// Retention by age is checked at most this often, besides after every seal.
pub const AGE_CHECK_INTERVAL: Duration = Duration::from_secs(60);

/// What a writer does besides appending: retention and background compaction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Maintenance {
    /// The disk budget in bytes (see the module docs); `None`: unbounded.
    pub max_archive_size: Option<u64>,
    /// Erase segments whose newest event is older than this; `None`: keep forever.
    pub retain: Option<Duration>,
    /// Merge small sealed segments when the input pauses (see [`Store::compact`]).
    pub compact: bool,
}

/// Nanoseconds since the epoch, now.
fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The retention cut-off for `retain` now (nanoseconds since the epoch): segments whose newest
/// event is before it are erased.
pub(crate) fn retention_cutoff(retain: Duration) -> i64 {
    let keep = i64::try_from(retain.as_nanos()).unwrap_or(i64::MAX);
    now_ns().saturating_sub(keep)
}

impl Store {
    /// Sets retention and compaction, and applies retention at once (the check at startup).
    pub fn set_maintenance(&mut self, maintenance: Maintenance) -> Result<()> {
        self.check_failed()?;
        self.maintenance = maintenance;
        let r = self.retention(true);
        self.poison_on_error(r)
    }

    /// The maintenance in effect.
    pub fn maintenance(&self) -> Maintenance {
        self.maintenance
    }

    /// Bytes of the archive: sealed segments and the active segment's bytes so far.
    pub fn archive_size(&self) -> u64 {
        self.sealed_bytes + self.builder.used() as u64
    }

    /// Bytes the budget counts: sealed segments and a full active segment.
    fn budgeted_size(&self) -> u64 {
        self.sealed_bytes + self.opts.max_segment_size
    }

    /// Applies retention (see the module docs); `check_age`: check the age now, whenever it
    /// was last checked.
    pub(crate) fn retention(&mut self, check_age: bool) -> Result<()> {
        let m = self.maintenance;
        let mut drop: Vec<usize> = Vec::new();
        if let Some(retain) = m.retain {
            let due = check_age
                || self
                    .age_checked
                    .is_none_or(|t| t.elapsed() >= AGE_CHECK_INTERVAL);
            if due {
                self.age_checked = Some(Instant::now());
                let cutoff = retention_cutoff(retain);
                for (i, e) in self.catalog.segments.iter().enumerate() {
                    if e.ts.is_some_and(|[_, newest]| newest < cutoff) {
                        drop.push(i);
                    }
                }
            }
        }
        if let Some(budget) = m.max_archive_size {
            let mut size = self.budgeted_size();
            size -= drop
                .iter()
                .map(|&i| self.catalog.segments[i].disk_bytes())
                .sum::<u64>()
                .min(size);
            if size > budget {
                let low = budget / 100 * LOW_MARK_PERCENT + budget % 100 * LOW_MARK_PERCENT / 100;
                for (i, e) in self.catalog.segments.iter().enumerate() {
                    if size <= low {
                        break;
                    }
                    if !drop.contains(&i) {
                        drop.push(i);
                        size = size.saturating_sub(e.disk_bytes());
                    }
                }
            }
        }
        if drop.is_empty() {
            return Ok(());
        }
        let segments = drop.len() as u64;
        let bytes: u64 = drop
            .iter()
            .map(|&i| self.catalog.segments[i].disk_bytes())
            .sum();
        let events = self.commit_change(&drop, Vec::new())?;
        self.summary.erased_segments += segments;
        self.summary.erased_events += events;
        tracing::info!(
            dir = %self.dir.display(),
            segments,
            events,
            bytes,
            archive_size = self.archive_size(),
            "retention erased segments"
        );
        Ok(())
    }
}
