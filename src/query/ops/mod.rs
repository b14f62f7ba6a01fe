//! Operators after the expression: `EXPR | OP | OP ...`, in Tenzir's TQL1 spelling.
//!
//! ```
//! use weir::unstable::query::Chain;
//! let c = Chain::parse("id.resp_p == 53 | summarize count() by id.orig_h | sort count() desc | head 5").unwrap();
//! assert_eq!(c.scan().text(), "id.resp_p == 53");
//! assert!(Chain::parse("top id.resp_p 5").is_ok());
//! ```
//!
//! A chain is cut at each `|` (not `||`, nor one in a string or a pattern). Its first part is
//! an expression of the query language (`where` implied) or an operator; the search of the
//! archive runs that expression (pruned, on all cores, in ID order), and the operators take
//! its events in order.
//!
//! | operator | what it does | emits | memory |
//! | --- | --- | --- | --- |
//! | `where EXPR` | keeps the events that match `EXPR` | as they come | none |
//! | `select F, ...` | keeps the named fields, in the order named | as they come | none |
//! | `drop F, ...` | removes the named fields | as they come | none |
//! | `head [N]` | the first N events (default 10), then stops the search | as they come | none |
//! | `tail [N]` | the last N events (default 10) | at the end | N events |
//! | `sort F [asc\|desc], ...` | all events by their keys, stable; events without a key last | at the end | every event; with `\| head N` after it, N events; either way within the query's memory budget ([`crate::query::memory`]) |
//! | `summarize AGG, ... [by F, ...] [resolution D]` | one event per group | at the end | one entry per group, within the query's memory budget ([`crate::query::memory`]) |
//! | `top F [N]`, `rare F [N]` | the N most (least) common values of F with their count | at the end | one entry per distinct value |
//!
//! Field names are extractors as in expressions: the full name (`id.orig_h`), a suffix at a
//! dot (`orig_h`), a schema-qualified name (`zeek.conn.id.orig_h`), or an aggregation's field
//! of a `summarize` before, as written there (`sort count() desc`); a name that matches
//! several fields of a schema means all of them for `select`/`drop` and the first for the
//! others. Operators work across schemas: `sort ts` is the timeline across logs, and
//! `summarize ... by F` groups every schema's events by their field `F`.
//!
//! The aggregations are in the table of `aggregate.rs`: `count()`, `count(F)`,
//! `count_distinct(F)`, `distinct(F)`, `sum(F)`, `min(F)`, `max(F)`, `mean(F)`. Aggregating operators emit events of a
//! schema of their own: `weir.summarize` (the `by` fields, then one field per aggregation,
//! named as written: `count()`, `sum(orig_bytes)`, or `NAME=` as given: `n=count()`),
//! `weir.top` and `weir.rare` (the field and `count`), written by every output format.
//!
//! # Modules
//!
//! | file | owns |
//! | --- | --- |
//! | `syntax.rs` | cutting a chain at its bars, the operators' arguments (`OpSpec`) |
//! | `slice.rs` | [`Slice`], field names resolved in a schema |
//! | `order.rs` | the order of values across types |
//! | `aggregate.rs` | aggregation functions and accumulators |
//! | `per_group.rs` | one item per group, in chunks: a column of a table of groups |
//! | `group_values.rs` | a `by` field's values of a table's groups, compact |
//! | `group_accs.rs` | an aggregation's accumulators of a table's groups, compact |
//! | `groups.rs` | the groups of an aggregation, flat: values, accumulators, the two indexes |
//! | `partitions.rs` | a `summarize`'s groups in tables by hash, merged by any thread, in order |
//! | `partial.rs` | a `summarize` aggregated by the search's workers on a batch's columns |
//! | `exec/` | the operators and the stages that run them |
//! | `physical/` | the physical plan: the scan spec, the operator nodes, the pushdown rules |
//! | `explain.rs` | [`Explain`]: a chain's plan and its pruning, without running it |
//! | `plan.rs` | [`Chain`]: parsing, running its plan over an archive |
//! | `transform.rs` | the pipeline's `query` transform ([`QueryConfig`]) |

mod aggregate;
mod exec;
mod explain;
mod group_accs;
mod group_values;
mod groups;
pub(crate) mod order;
pub(crate) mod partial;
mod partitions;
mod per_group;
pub(crate) mod physical;
mod plan;
pub(crate) mod slice;
mod syntax;
mod transform;

pub use exec::{Flow, MAX_GROUPS};
pub use explain::Explain;
pub use plan::{Chain, ChainStats};
pub use slice::Slice;
pub use syntax::{is_chain, DEFAULT_LIMIT};
pub use transform::{QueryConfig, QueryTransform};
