//! The operator nodes of a plan: what runs after the scan, in order, with what the rules
//! pushed into each.

use super::super::syntax::AggSpec;
use crate::query::Query;

/// One operator of a plan.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    /// `where EXPR` after the scan, evaluated on each event.
    Where(Query),
    /// `select F, ...` (`keep`) or `drop F, ...`.
    Project { fields: Vec<String>, keep: bool },
    /// `sort K, ...` (name, descending).
    Sort {
        keys: Vec<(String, bool)>,
        /// Only the first events are kept (a `head` after it).
        limit: Option<u64>,
        /// Fed by the scan's top-N: batches come best first, ties go by event ID, and the
        /// operator publishes its cut-off.
        top: bool,
        /// The operator as written, naming it in a memory-budget error (`OpSpec::describe`).
        label: String,
    },
    /// `head N`.
    Head(u64),
    /// `tail N`.
    Tail {
        n: u64,
        /// Fed by the scan's top-N by `#id` (batches come largest IDs first).
        top: bool,
        /// The operator as written, naming it in a memory-budget error (`OpSpec::describe`).
        label: String,
    },
    /// `summarize` (and the aggregation of `top` and `rare`).
    Summarize {
        /// The schema of its events: `weir.summarize`, `weir.top`, `weir.rare`.
        name: String,
        aggs: Vec<AggSpec>,
        by: Vec<String>,
        resolution: Option<i64>,
        /// Events whose `by` values are all unset are left out.
        skip_unset: bool,
        /// The final aggregation of the scan's partial one.
        partial: bool,
        /// The next operator keeps only its first `N` events by these keys: only the groups
        /// that can be among them are made events.
        feeds_top: Option<(Vec<(String, bool)>, usize)>,
        /// The operator as written, naming it in a memory-budget error (`OpSpec::describe`).
        label: String,
    },
}

impl Node {
    /// The operator's name as a chain spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Node::Where(_) => "where",
            Node::Project { keep: true, .. } => "select",
            Node::Project { keep: false, .. } => "drop",
            Node::Sort { .. } => "sort",
            Node::Head(_) => "head",
            Node::Tail { .. } => "tail",
            Node::Summarize { .. } => "summarize",
        }
    }
}
