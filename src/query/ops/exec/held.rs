//! Events an operator holds until its input ends (`sort`, `head` after a sort, `tail`,
//! `summarize`'s kept rows): when it cuts them back ([`cut_at`]) and how it gives them back
//! as slices ([`emit_runs`]).

use super::super::slice::Slice;
use crate::types::SchemaRef;

/// How many events an operator that keeps `limit` of them (`sort ... | head`, `tail` taking
/// batches in any order) holds before it cuts back to `limit`: twice as many, at least 1,024.
pub(super) fn cut_at(limit: usize) -> usize {
    limit.saturating_mul(2).max(1024)
}

/// Groups events into slices, one per run of one schema.
pub(super) fn emit_runs(
    events: impl Iterator<Item = (SchemaRef, Vec<u8>, Option<u64>)>,
    out: &mut Vec<Slice>,
) {
    let mut cur: Option<Slice> = None;
    for (schema, row, id) in events {
        match &mut cur {
            Some(s) if std::sync::Arc::ptr_eq(s.schema(), &schema) => s.push(&row, id),
            _ => {
                if let Some(s) = cur.take() {
                    out.push(s);
                }
                let mut s = Slice::new(schema);
                s.push(&row, id);
                cur = Some(s);
            }
        }
    }
    out.extend(cur);
}
