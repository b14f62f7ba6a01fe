//! The physical plan of a chain: a scan spec ([`ScanSpec`]: the predicate, the columns
//! read, late materialization, a pushed-down top-N with its shared cut-off, partial
//! aggregation) and the operator nodes after it ([`Node`]), built once from the parsed
//! chain by one analysis (`analysis.rs`) and printable (`weir export --explain`).
//!
//! The analysis makes the plan as written (the scan reads every event whole; each operator
//! a node, `top`/`rare` as `summarize | sort | head`), then applies the pushdown rules of
//! `rules.rs`, each a function from plan to plan, in order (the first two, between operators,
//! also for a pipeline's `query` transform, whose input is no archive search):
//!
//! | rule | what it pushes |
//! | --- | --- |
//! | `limit_into_sort` | a `head N` into the `sort` before it (it keeps `N` events) |
//! | `topn_into_aggregate` | a `sort ... \| head N` into the `summarize` before it (it emits only the groups that can be kept) |
//! | `filter_into_scan` | the leading `where`s into the scan's predicate (pruned, on all cores) |
//! | `topn_into_scan` | a first `sort F \| head N` or `tail N` into the scan: batches best first, at most `N` per batch, none past the operator's cut-off ([`Cutoff`], which the operator publishes as it fills) |
//! | `partial_aggregation` | a first `summarize` into the scan's workers, batch by batch; the operator merges (final aggregation) |
//! | `projection` | the fields the operators read into the scan; for a bounded output of whole events, those read again by ID (late materialization) |
//!
//! `build.rs` makes the operators of a plan; `display.rs` writes it as text and JSON.
//!
//! | file | owns |
//! | --- | --- |
//! | `scan.rs` | [`ScanSpec`], [`TopN`], [`Cutoff`] |
//! | `node.rs` | [`Node`] |
//! | `rules.rs` | the pushdown rules |
//! | `analysis.rs` | the plan of a parsed chain |
//! | `build.rs` | the operators of a plan |
//! | `display.rs` | the plan as text and JSON |

mod analysis;
mod build;
mod display;
mod node;
mod rules;
mod scan;

pub(crate) use analysis::{optimized, written};
pub(crate) use node::Node;
pub(crate) use scan::{Cutoff, ScanSpec, TopN};

/// A physical plan: the scan, then the operators.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub scan: ScanSpec,
    pub nodes: Vec<Node>,
}
