//! Counting groups where the batches are: `top F`, `rare F` and `summarize count() by F
//! [resolution D]` (one `by` field or none, `count()` alone) as the first operator after the
//! search are counted by the search's workers, on all cores, batch by batch, on the batch's
//! stored columns: a value column is read value after value, a dictionary column is
//! counted by code and each distinct value read once ([`CountPlan::count`]). No row is
//! rebuilt and nothing is copied to the consumer but the batch's groups.
//!
//! A batch's [`Counts`] list its groups in the order of their first event, so the
//! `summarize` that merges them in ID order (`exec/summarize.rs`) sees every group first
//! where a row-by-row `summarize` would: the output is the same, group order included. Keys
//! are [`push_key`]'s encoding, as there; an event without the field (or whose schema lacks
//! it) has an unset key, skipped when the plan says so (`top`, `rare`).

use super::aggregate::{bucket, push_key, Map};
use super::slice::Source;
use crate::segment::Columns;
use crate::types::SchemaRef;
use crate::value::{DecodeError, RowCursor, Value, ValueRef};

/// What the workers count.
#[derive(Debug, Clone)]
pub(crate) struct CountPlan {
    /// The `by` field as written (`None`: no `by`, one group).
    pub by: Option<String>,
    /// Time values of `by` are rounded down to a multiple of this many nanoseconds.
    pub resolution: Option<i64>,
    /// Events with an unset `by` value are left out.
    pub skip_unset: bool,
}

/// One batch's groups, in the order of their first event: key, value, events.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    pub(crate) groups: Vec<(Vec<u8>, Value, u64)>,
}

impl CountPlan {
    /// The field of `schema` the plan reads (`None`: none; every event has the same key).
    pub(crate) fn field(&self, schema: &SchemaRef) -> Option<usize> {
        match Source::resolve(schema, self.by.as_deref()?)? {
            Source::Field(i, _) => Some(i),
            Source::SchemaName => None,
        }
    }

    /// The groups of the rows `rows` (ascending; `None`: all) of a batch of `schema` whose
    /// columns are `cols` (the plan's field inflated, as values or as a dictionary).
    pub(crate) fn count(
        &self,
        schema: &SchemaRef,
        cols: &Columns,
        rows: Option<&[usize]>,
    ) -> Result<Counts, DecodeError> {
        let n = cols.rows();
        let selected = rows.map_or(n, <[usize]>::len) as u64;
        let constant = |v: ValueRef<'_>| {
            let mut key = Vec::new();
            push_key(&mut key, &v);
            let unset = matches!(v, ValueRef::Null);
            let groups = if (unset && self.skip_unset) || selected == 0 {
                Vec::new()
            } else {
                vec![(key, v.to_owned(), selected)]
            };
            Counts { groups }
        };
        let Some(by) = self.by.as_deref() else {
            // No `by`: one group, of an empty key, as `summarize` makes it.
            let groups = if selected > 0 {
                vec![(Vec::new(), Value::Null, selected)]
            } else {
                Vec::new()
            };
            return Ok(Counts { groups });
        };
        let (index, ty) = match Source::resolve(schema, by) {
            None => return Ok(constant(ValueRef::Null)),
            Some(Source::SchemaName) => {
                return Ok(constant(ValueRef::String(schema.name.as_bytes())))
            }
            Some(Source::Field(i, ty)) => (i, ty),
        };
        let mut acc = Acc::new(self);
        if let Some((dict, enc)) = cols.dict(index) {
            // Events per code, in the order of each code's first event; each entry read once.
            let entries: Vec<&[u8]> = dict.entries(enc).collect();
            let mut per_code = vec![0u64; entries.len()];
            let mut order = Vec::new();
            let mut codes = dict.codes(enc);
            let mut take = |code: usize| {
                if let Some(c) = per_code.get_mut(code) {
                    if *c == 0 {
                        order.push(code);
                    }
                    *c += 1;
                }
            };
            match rows {
                None => codes.for_each(&mut take),
                Some(rows) => {
                    let mut at = 0;
                    for &r in rows {
                        if let Some(code) = codes.nth(r - at) {
                            take(code);
                        }
                        at = r + 1;
                    }
                }
            }
            for code in order {
                let v = RowCursor::new(entries[code]).read(&ty)?;
                acc.add(v, per_code[code]);
            }
            return Ok(acc.finish());
        }
        let column = cols.column(index);
        let mut c = RowCursor::new(column);
        let mut next = rows.map(|r| r.iter().peekable());
        for i in 0..n {
            let v = c.read(&ty)?;
            let wanted = match next.as_mut() {
                None => true,
                Some(it) => {
                    if it.peek() == Some(&&i) {
                        it.next();
                        true
                    } else {
                        false
                    }
                }
            };
            if wanted {
                acc.add(v, 1);
            }
        }
        if c.position() != column.len() {
            return Err(DecodeError::Trailing {
                at: c.position(),
                len: column.len(),
            });
        }
        Ok(acc.finish())
    }
}

/// The groups of one batch as they are counted.
struct Acc<'p> {
    plan: &'p CountPlan,
    index: Map<Vec<u8>, usize>,
    groups: Vec<(Vec<u8>, Value, u64)>,
    key: Vec<u8>,
}

impl<'p> Acc<'p> {
    fn new(plan: &'p CountPlan) -> Acc<'p> {
        Acc {
            plan,
            index: Map::default(),
            groups: Vec::new(),
            key: Vec::new(),
        }
    }

    fn add(&mut self, v: ValueRef<'_>, n: u64) {
        let v = bucket(v, self.plan.resolution);
        if self.plan.skip_unset && matches!(v, ValueRef::Null) {
            return;
        }
        self.key.clear();
        push_key(&mut self.key, &v);
        match self.index.get(self.key.as_slice()) {
            Some(&g) => self.groups[g].2 += n,
            None => {
                self.index.insert(self.key.clone(), self.groups.len());
                self.groups.push((self.key.clone(), v.to_owned(), n));
            }
        }
    }

    fn finish(self) -> Counts {
        Counts {
            groups: self.groups,
        }
    }
}
