//! Context around query results: VAST's (2021) `explore` and `pivot` commands.
//!
//! Both run in two searches: the query's, whose results are reduced to what relates other
//! events to them, then ONE second search over a pre-filter (the union of everything that can
//! relate, as the expression language states it, so that segments and batches outside it are
//! pruned by their metadata) whose events are tested exactly, row by row. The output comes
//! from the second search alone: each event once, in ID order, as [`Related`] batch slices.
//!
//! # `explore` ([`Explore`])
//!
//! The context of a result is the events `e` with
//!
//! - `ts - before <= e.ts <= ts + after` (both ends included), where `ts` is the result's
//!   event time (`:timestamp`, the `ts` field) and `before`/`after` are durations (`--context
//!   D` sets both; with only one given, the other is 0; with neither, no time bound);
//! - with `--by FIELD`: a field that `FIELD` names (the language's rule: full name, suffix
//!   at a dot, or schema-qualified) whose value equals the result's value of the first field
//!   `FIELD` names in its schema, as `FIELD == value` would (a container field when an element
//!   equals it; numbers across count/int/port; an IPv4 address and its mapped IPv6 form);
//! - with `--for TYPE,...`: a schema named one of them.
//!
//! A result without a `ts` value, or (with `--by`) without a value of that field, has no
//! context, as in VAST; an event without `ts` is in no time-bound context. As in VAST the
//! results are not printed as such: a result is output because it lies in its own context
//! (unless `--for` leaves its type out, or its context was full before it). VAST's checks
//! are kept: one of `before`, `after`, `by` is required, and without `by` the window must not
//! be zero on both sides.
//!
//! Limits, with VAST's defaults: the first `max_events_query` results (100) in ID order;
//! per result, the first `max_events_context` (100) events of its context in ID order (an
//! event counts towards the context of every result it lies in that still has room, and is
//! output when one had); `max_events` in all (no limit by default), so at most
//! `min(max_events, max_events_query × max_events_context)` events. (VAST capped each
//! context query in its own arrival order and removed duplicates by content; ID order makes
//! the answer deterministic.)
//!
//! **Memory**: proportional to the results taken: per result its `ts`, its `--by` value and
//! a counter (a few dozen bytes), plus the search's bounded reorder window; no output event
//! is kept (the second search streams in ID order, so no set of seen IDs is needed).
//! **Time**: one pass over the events the pre-filter keeps (the time range from the earliest
//! window start to the latest window end, the types, and up to [`PREFILTER_KEYS`] string or
//! address `--by` values); per event, a hash lookup of its `--by` value and a binary search
//! by time in the results with that value. The search stops as soon as every context is full
//! or `max_events` are out.
//!
//! # `pivot` ([`Pivot`])
//!
//! The events of the target type (a schema name, `zeek.http`) related to a result, VAST's
//! rule extended to Zeek logs without community IDs:
//!
//! - between **two Zeek types** (`zeek.*`) that both have a uid field, by **Zeek's uid**: the
//!   result's `uid` and the elements of its `conn_uids` (the `files.log` of Zeek before 5;
//!   Zeek 5 writes `uid`), against the target events' `uid` and `conn_uids` elements: one
//!   equal value relates them;
//! - else by **community ID** when the result's `community_id` is set: target events with
//!   the same value when the target type has that field (a Suricata alert to `zeek.conn`,
//!   whose `community_id` weir computes at import, and back); when it has none but a uid
//!   (`zeek.http`, `zeek.dns`, `zeek.files`), in **two hops**: the `zeek.conn` events with
//!   that community ID (one search, which names up to [`PREFILTER_KEYS`] of them), then the
//!   target events with their uids;
//! - else by uid as above.
//!
//! (VAST knew neither `conn_uids` nor the two hops.) Every related target event is output
//! once, in ID order; the results themselves only when they are of the target type and
//! related to a result (always, for their own uid). `max_events` caps the output.
//!
//! **Memory**: the distinct relation values of all results, in two hash sets (about 100
//! bytes a value), at most `max_keys` ([`DEFAULT_MAX_PIVOT_KEYS`], an error past it).
//! **Time**: two searches whatever the number of results (three with the hop through conn):
//! the query's, and one over the target type, which, for up to [`PREFILTER_KEYS`] values,
//! also states them (`uid in [...]`), so that a batch whose sketch (Bloom filter) has none
//! of them is not read.
//!
//! # Modules
//!
//! | file | owns |
//! | --- | --- |
//! | `key.rs` | values as hashable join keys, and as literals of the language |
//! | `fields.rs` | reading named fields of encoded rows |
//! | `schemas.rs` | the schema definitions an archive holds |
//! | `related.rs` | the second search and its output, [`Related`] |
//! | `explore.rs` | [`Explore`] |
//! | `pivot.rs` | [`Pivot`] |

mod explore;
mod fields;
mod key;
mod pivot;
mod related;
mod schemas;

pub use explore::{
    Explore, ExploreOptions, ExploreSearch, DEFAULT_MAX_EVENTS_CONTEXT, DEFAULT_MAX_EVENTS_QUERY,
};
pub use pivot::{Pivot, PivotOptions, PivotSearch, DEFAULT_MAX_PIVOT_KEYS};
pub use related::{Related, RelatedRows};
pub use schemas::archive_schemas;

use super::QueryError;

/// Relation values (`--by` values, uids, community IDs) a pre-filter names at most; past it,
/// the second search reads every batch its other conditions keep and tests the values on
/// rows alone (a long list would cost more per row than it saves).
pub const PREFILTER_KEYS: usize = 256;

/// Why `explore` or `pivot` failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// The query failed (or the pre-filter derived from it did).
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The options do not make a context (the user's to fix).
    #[error("{0}")]
    Options(String),
    /// The results of a pivot carry more distinct relation values than allowed.
    #[error(
        "the results relate by more than {limit} distinct uid and community_id values; narrow the expression or raise the limit (--max-keys)"
    )]
    TooManyKeys {
        /// The limit.
        limit: usize,
    },
}

/// A duration of the expression language (`10s`, `1.5ms`, `5min`, `2h`, `1d`) in
/// nanoseconds, for `--before`, `--after` and `--context`; `None` when it is not one.
pub fn parse_span(text: &str) -> Option<i64> {
    super::literal::parse_duration(text.trim())
}
