//! The scan spec: what the archive search of a plan reads and does for the operators after
//! it, decided once by the plan's rules (`rules.rs`) and handed whole to
//! [`crate::query::Search`] when the plan runs.

use std::sync::{Arc, Mutex};

use crate::query::Query;
use crate::value::Value;

/// What the search of a plan does.
#[derive(Debug, Clone)]
pub(crate) struct ScanSpec {
    /// The predicate program's expression: pruned by the catalog and the sketches, then
    /// evaluated on every core (everything: `Query::all()`).
    pub predicate: Query,
    /// Reads only these fields (as the operators resolve names) of batches stored in
    /// columns, besides those the predicate reads (`None`: whole events).
    pub columns: Option<Vec<String>>,
    /// The events that come out of the operators are read whole again by their IDs (late
    /// materialization): `columns` are only what the operators need to pick them.
    pub late: bool,
    /// The first operator keeps only the first events by one field: the batches are
    /// visited best first, and none that cannot beat its cut-off is read.
    pub top: Option<TopN>,
    /// The first operator is a `summarize` whose groups the workers aggregate batch by
    /// batch on the columns (partial aggregation; the operator is the final one).
    pub partial: bool,
}

impl ScanSpec {
    /// A scan of the events `predicate` matches, whole, in ID order.
    pub fn new(predicate: Query) -> ScanSpec {
        ScanSpec {
            predicate,
            columns: None,
            late: false,
            top: None,
            partial: false,
        }
    }
}

/// A top-N pushed into the scan (`sort F | head N`, `tail N`).
#[derive(Debug, Clone)]
pub(crate) struct TopN {
    /// The field whose best values are wanted (`#id`: the event ID).
    pub field: String,
    pub desc: bool,
    /// Of each batch stored in columns, only this many matches, the first by `field`, can
    /// be kept (`None`: the operator orders by more keys, or keeps all ties' IDs).
    pub per_batch: Option<usize>,
    /// The operator's cut-off, which it publishes as it fills and the search reads.
    pub cutoff: Arc<Cutoff>,
}

/// The value of the top-N field of the last event the operator keeps, once it holds all it
/// keeps (`None` inside: that event has no value there), and its ID: an event that cannot
/// come before it cannot change the output. Written by the operator, read by the search and
/// its workers while the query runs (a dynamic filter).
#[derive(Debug, Default)]
pub(crate) struct Cutoff(Mutex<Option<(Option<Value>, u64)>>);

impl Cutoff {
    /// A cut-off already at `value` (for tests).
    #[cfg(test)]
    pub fn at(value: Option<(Option<Value>, u64)>) -> Cutoff {
        Cutoff(Mutex::new(value))
    }

    /// The last cut-off published (`None`: none yet).
    pub fn get(&self) -> Option<(Option<Value>, u64)> {
        self.0.lock().map_or(None, |c| c.clone())
    }

    /// Publishes the operator's cut-off.
    pub fn set(&self, value: Option<(Option<Value>, u64)>) {
        if let Ok(mut c) = self.0.lock() {
            *c = value;
        }
    }
}
