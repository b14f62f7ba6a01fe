//! The partition day of an event: days since 1970-01-01 UTC of its `ts`, which names the
//! `day=` directory of its lake partition ([`super::lake`]). Both the lake writer and the
//! threads that build its record batches ([`super::lake_rows`]) split rows by it.

use crate::types::{Schema, Type};
use crate::value::{RowCursor, NIL};

/// Nanoseconds per day.
const DAY_NS: i64 = 86_400_000_000_000;

/// The partition day of a time: days since 1970-01-01 UTC.
pub(super) fn day_of(ns: i64) -> i64 {
    ns.div_euclid(DAY_NS)
}

/// The `ts` of a row (field `ts_index`, of type `time`), `None` when unset or unreadable.
fn row_ts(row: &[u8], schema: &Schema, ts_index: usize) -> Option<i64> {
    let mut r = RowCursor::new(row);
    r.row_header(schema.fields.len()).ok()?;
    for f in &schema.fields[..ts_index] {
        r.read(&f.ty).ok()?;
    }
    let m = r.marker().ok()?;
    if m == NIL {
        return None;
    }
    r.int(m, &Type::Time).ok()
}

/// The partition day of a row (days since 1970-01-01 UTC of its `ts`, field `ts_index`),
/// `None` without one.
pub(super) fn row_day(row: &[u8], schema: &Schema, ts_index: Option<usize>) -> Option<i64> {
    ts_index.and_then(|t| row_ts(row, schema, t)).map(day_of)
}
