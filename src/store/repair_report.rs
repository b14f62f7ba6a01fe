//! What a repair did ([`RepairReport`]): filled by the repair of the segments and catalog
//! (`repair.rs`) and of the WAL (`wal_repair.rs`), printed by `weir repair`.

use std::ops::Range;

/// What [`repair`](super::repair()) did: one line per action, in order (empty: nothing needed
/// doing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// The actions taken.
    pub actions: Vec<String>,
    /// The event IDs this repair found lost (damaged batches and segments moved aside,
    /// entries of missing files, gaps in no segment), ascending and merged; recorded in the
    /// catalog's `lost` (and `erased`) IDs.
    pub lost: Vec<Range<u64>>,
}

impl RepairReport {
    /// The number of events of [`RepairReport::lost`].
    pub fn lost_events(&self) -> u64 {
        self.lost.iter().map(|r| r.end - r.start).sum()
    }
}
