//! Aggregating where the batches are: a `summarize` (and `top`, `rare`) that is the first
//! operator after the search is aggregated by the search's workers, on all cores, batch by
//! batch, on the batch's stored columns ([`AggPlan::aggregate`]): only the columns of its `by`
//! fields and of its aggregations are inflated, a value column is read value after value, a
//! dictionary column is read by code with each distinct value decoded once. Two common shapes
//! skip the row loop: `count()` by one number column, and aggregations of number columns by
//! one dictionary column (a group per code); their number columns are decoded 64 rows at a
//! time (`crate::query::ints`). No row is rebuilt: the worker merges the batch's groups into
//! the `summarize`'s tables itself (`partitions.rs`), and the consumer gets only word of it
//! ([`Partial`]).
//!
//! A batch's groups are listed in the order of their first event, so the `summarize` that
//! merges them in ID order (`exec/summarize.rs`) sees every group first where a row-by-row
//! `summarize` would: the output is the same, group order included. The groups are held as
//! `summarize` holds its own (`groups.rs`); events whose `by` values are all
//! unset are skipped when the plan says so (`top`, `rare`).

use std::sync::Arc;

use super::aggregate::{bucket, Acc, Map};
use super::groups::GroupTable;
use super::partitions::Partitions;
use super::slice::Source;
use super::syntax::{AggFunc, AggSpec};
use crate::query::ints::{self, Numbers};
use crate::segment::marked::{self, Marked};
use crate::segment::{Columns, Ints};
use crate::types::{SchemaRef, Type};
use crate::value::{DecodeError, RowCursor, ValueRef};

/// What the workers aggregate: a `summarize`'s `by` fields and aggregations.
#[derive(Debug, Clone)]
pub(crate) struct AggPlan {
    /// The `by` fields as written (none: one group).
    pub by: Vec<String>,
    /// Time values of `by` fields are rounded down to a multiple of this many nanoseconds.
    pub resolution: Option<i64>,
    pub aggs: Vec<AggSpec>,
    /// Events whose `by` values are all unset are left out.
    pub skip_unset: bool,
    /// The `summarize`'s groups, which each batch's are merged into.
    pub groups: Arc<Partitions>,
}

/// A batch aggregated where it was read: its groups are in the plan's [`Partitions`].
#[derive(Debug, Clone)]
pub struct Partial {
    _merged: (),
}

/// Where one column's values of a batch come from, row after row.
enum Reader<'c> {
    /// `#type`, or a field the schema lacks (unset): the same for every row.
    Constant(ValueRef<'c>),
    /// A column of values.
    Values {
        cursor: RowCursor<'c>,
        column: &'c [u8],
        ty: Type,
    },
    /// A column of integer planes kept as its numbers: row after row.
    Ints {
        ints: &'c Ints,
        ty: Type,
        row: usize,
    },
    /// A marked column: row after row, its payloads from `pos`.
    Marked {
        marked: Marked<'c>,
        ty: Type,
        row: usize,
        pos: usize,
    },
    /// A dictionary column: each entry decoded once, then a code per row (the next at
    /// `row`).
    Dict {
        entries: Vec<ValueRef<'c>>,
        codes: Codes<'c>,
        row: usize,
    },
}

/// A dictionary column's codes, as it stores them (`crate::segment::dict`): the low byte of
/// every row's, then the high bytes (none for a dictionary of at most 256 entries). Read by
/// row, not through an iterator behind a pointer: a call per row was a third of the time of
/// `sum(orig_bytes) by id.orig_h` on W1000.
#[derive(Clone, Copy)]
struct Codes<'c> {
    lo: &'c [u8],
    hi: &'c [u8],
}

impl Codes<'_> {
    /// How many rows have a code.
    fn len(&self) -> usize {
        self.lo.len()
    }

    /// Row `r`'s code (`None` past the last row).
    #[inline]
    fn get(&self, r: usize) -> Option<usize> {
        let lo = usize::from(*self.lo.get(r)?);
        Some(lo | self.hi.get(r).map_or(0, |&h| usize::from(h) << 8))
    }

    /// The slot of each of the rows `rows` (`None`: the first `n`) of a dictionary of
    /// `entries` entries: its code, or `entries` for a code past them (which reads as unset,
    /// as the row reader has it). Every row, in a loop with no call and no check.
    fn slots(
        &self,
        rows: Option<&[usize]>,
        n: usize,
        entries: usize,
    ) -> Result<Vec<u32>, DecodeError> {
        // (At most 65,536 entries: codes of two bytes.)
        let last = u32::try_from(entries).unwrap_or(u32::MAX);
        let mut slots: Vec<u32> = Vec::with_capacity(rows.map_or(n, <[usize]>::len));
        match (rows, self.lo.get(..n), self.hi.get(..n)) {
            (None, Some(lo), Some(hi)) => slots.extend(
                lo.iter()
                    .zip(hi)
                    .map(|(&l, &h)| (u32::from(l) | u32::from(h) << 8).min(last)),
            ),
            (None, Some(lo), None) if self.hi.is_empty() => {
                slots.extend(lo.iter().map(|&l| u32::from(l).min(last)));
            }
            (rows, ..) => {
                let mut push = |r: usize| -> Result<(), DecodeError> {
                    let code = self.get(r).ok_or(DecodeError::Truncated(r))?;
                    slots.push(code.min(entries) as u32);
                    Ok(())
                };
                match rows {
                    Some(rows) => rows.iter().try_for_each(|&r| push(r))?,
                    None => (0..n).try_for_each(push)?,
                }
            }
        }
        Ok(slots)
    }
}

/// The `by` value of a slot of a dictionary of `entries` ([`Codes::slots`]): its entry,
/// rounded down to `resolution`, or unset past the entries.
fn slot_value<'c>(entries: &[ValueRef<'c>], slot: usize, resolution: Option<i64>) -> ValueRef<'c> {
    match entries.get(slot) {
        Some(v) => bucket(v.clone(), resolution),
        None => ValueRef::Null,
    }
}

/// The slots of `slots` (each below `len`) in the order of their first row. (A flag written
/// once per slot, not a count written per row: rows of one slot in a row waited on each
/// other's store.)
fn first_seen(slots: &[u32], len: usize) -> Vec<usize> {
    let mut seen = vec![false; len];
    let mut order = Vec::new();
    for &s in slots {
        let s = s as usize;
        if !seen[s] {
            seen[s] = true;
            order.push(s);
        }
    }
    order
}

/// How many rows each slot (below `len`) has. Four counts per slot, rows taken in turn, so
/// that rows of one slot in a row (most rows, where a few values dominate) do not wait on
/// each other's store.
fn count_slots(slots: &[u32], len: usize) -> Vec<u64> {
    let mut counts = vec![[0u32; 4]; len];
    let mut fours = slots.chunks_exact(4);
    for f in &mut fours {
        counts[f[0] as usize][0] += 1;
        counts[f[1] as usize][1] += 1;
        counts[f[2] as usize][2] += 1;
        counts[f[3] as usize][3] += 1;
    }
    for &s in fours.remainder() {
        counts[s as usize][0] += 1;
    }
    counts
        .iter()
        .map(|c| c.iter().map(|&k| u64::from(k)).sum())
        .collect()
}

impl<'c> Reader<'c> {
    fn new(
        schema: &'c SchemaRef,
        cols: &'c Columns,
        src: Option<Source>,
    ) -> Result<Self, DecodeError> {
        let (index, ty) = match src {
            None => return Ok(Reader::Constant(ValueRef::Null)),
            Some(Source::SchemaName) => {
                return Ok(Reader::Constant(ValueRef::String(schema.name.as_bytes())))
            }
            Some(Source::Field(i, ty)) => (i, ty),
        };
        if let Some((dict, enc)) = cols.dict(index) {
            let entries = dict
                .entries(enc)
                .map(|e| RowCursor::new(e).read(&ty))
                .collect::<Result<Vec<_>, _>>()?;
            let (lo, hi) = dict.code_bytes(enc);
            return Ok(Reader::Dict {
                entries,
                codes: Codes { lo, hi },
                row: 0,
            });
        }
        if let Some(ints) = cols.ints(index) {
            // Numbers out of the type's range, reported as the reader would (msgpack's
            // unused marker: no such number has a marker of its type).
            if !ints::signedness(&ty).is_some_and(|signed| ints.fit(signed)) {
                return Err(DecodeError::Unexpected {
                    marker: 0xc1,
                    ty: ty.to_string(),
                    at: 0,
                });
            }
            return Ok(Reader::Ints { ints, ty, row: 0 });
        }
        if let Some(marked) = cols.marked(index) {
            return Ok(Reader::Marked {
                marked,
                ty,
                row: 0,
                pos: 0,
            });
        }
        let column = cols.column(index);
        Ok(Reader::Values {
            cursor: RowCursor::new(column),
            column,
            ty,
        })
    }

    /// The next row's value (every row is read, selected or not: values have no fixed
    /// width).
    fn next(&mut self) -> Result<ValueRef<'c>, DecodeError> {
        match self {
            Reader::Constant(v) => Ok(v.clone()),
            Reader::Values { cursor, ty, .. } => cursor.read(ty),
            Reader::Ints { ints, ty, row } => {
                let r = *row;
                *row += 1;
                let set = ints
                    .set
                    .get(r / ints::WORD)
                    .is_some_and(|w| w >> (r % ints::WORD) & 1 == 1);
                match ints.values.get(r) {
                    Some(&v) if set => Ok(number(ty, v)),
                    Some(_) => Ok(ValueRef::Null),
                    None => Err(DecodeError::Truncated(r)),
                }
            }
            Reader::Marked {
                marked,
                ty,
                row,
                pos,
            } => {
                let r = *row;
                if r >= marked.markers.len() {
                    return Err(DecodeError::Truncated(r));
                }
                *row += 1;
                let (v, kind) = marked::value(marked, r, pos);
                let signed = ints::signedness(ty).unwrap_or(false);
                let fits = match kind {
                    marked::UNSET => return Ok(ValueRef::Null),
                    marked::NEG | marked::SIGNED => signed,
                    _ => !signed || v <= i64::MAX as u64,
                };
                if !fits || ints::signedness(ty).is_none() {
                    // As the reader reports a number of another type.
                    return Err(DecodeError::Unexpected {
                        marker: marked.markers[r],
                        ty: ty.to_string(),
                        at: r,
                    });
                }
                Ok(number(ty, v))
            }
            Reader::Dict {
                entries,
                codes,
                row,
            } => {
                let code = codes.get(*row);
                *row += 1;
                Ok(code
                    .and_then(|c| entries.get(c))
                    .cloned()
                    .unwrap_or(ValueRef::Null))
            }
        }
    }

    /// A column of values must end where its last value does.
    fn finish(&self) -> Result<(), DecodeError> {
        match self {
            Reader::Values { cursor, column, .. } if cursor.position() != column.len() => {
                Err(DecodeError::Trailing {
                    at: cursor.position(),
                    len: column.len(),
                })
            }
            _ => Ok(()),
        }
    }
}

impl AggPlan {
    /// The fields of `schema` the plan reads (they may stay dictionaries).
    pub(crate) fn fields(&self, schema: &SchemaRef) -> Vec<usize> {
        let names = self
            .by
            .iter()
            .chain(self.aggs.iter().filter_map(|a| a.field.as_ref()));
        let mut out: Vec<usize> = names
            .filter_map(|n| match Source::resolve(schema, n)? {
                Source::Field(i, _) => Some(i),
                Source::SchemaName => None,
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Aggregates the rows `rows` (ascending; `None`: all) of a batch of `schema` whose
    /// columns are `cols` (at least the plan's [`AggPlan::fields`] inflated, as values or as
    /// dictionaries) and whose first event ID is `first`, into the plan's groups.
    pub(crate) fn aggregate(
        &self,
        schema: &SchemaRef,
        cols: &Columns,
        rows: Option<&[usize]>,
        first: u64,
    ) -> Result<Partial, DecodeError> {
        if self.groups.check().is_err() {
            // Past the query's memory budget: the query fails (`summarize` says so at this
            // batch's word), and no more groups are made meanwhile.
            return Ok(Partial { _merged: () });
        }
        let listed = self.groups.listing();
        let groups = self.batch_groups(schema, cols, rows, listed)?;
        let made = groups.len();
        let repeats = self.groups.merge(groups, first);
        let rows = rows.map_or(cols.rows(), <[usize]>::len);
        self.groups.learn(rows, made, listed, repeats);
        Ok(Partial { _merged: () })
    }

    /// The groups of the rows `rows` of a batch, in the order of their first events (with
    /// `listed`, in a table that lists them, [`GroupTable::listing`]).
    fn batch_groups(
        &self,
        schema: &SchemaRef,
        cols: &Columns,
        rows: Option<&[usize]>,
        listed: bool,
    ) -> Result<GroupTable, DecodeError> {
        let n = cols.rows();
        let resolve = |name: &str| Source::resolve(schema, name);
        let mut by = self
            .by
            .iter()
            .map(|f| Reader::new(schema, cols, resolve(f)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut aggs = self
            .aggs
            .iter()
            .map(|a| match &a.field {
                None => Ok(None),
                Some(f) => Reader::new(schema, cols, resolve(f)).map(Some),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut acc = Groups::new(self, listed);
        let counts_only = self.aggs.iter().all(|a| a.field.is_none());
        let dicts = by
            .iter()
            .filter(|r| matches!(r, Reader::Dict { .. }))
            .count();
        let constants = by
            .iter()
            .filter(|r| matches!(r, Reader::Constant(_)))
            .count();
        if counts_only && constants + dicts == by.len() && dicts <= 1 {
            // `count()` by constants and at most one dictionary: events counted per code
            // (one code when there is no dictionary), in the order of each code's first event.
            let mut values: Vec<ValueRef<'_>> = Vec::with_capacity(by.len());
            let mut codes_of = None;
            for r in &mut by {
                match r {
                    Reader::Constant(v) => values.push(v.clone()),
                    Reader::Dict { entries, codes, .. } => {
                        codes_of = Some((values.len(), &*entries, *codes));
                        values.push(ValueRef::Null);
                    }
                    Reader::Values { .. } | Reader::Ints { .. } | Reader::Marked { .. } => {}
                }
            }
            let Some((at, entries, codes)) = codes_of else {
                let selected = rows.map_or(n, <[usize]>::len) as u64;
                if selected > 0 {
                    if let Some(g) = acc.group(&values) {
                        acc.add_events(g, selected);
                    }
                }
                return Ok(acc.finish());
            };
            let slots = codes.slots(rows, codes.len().min(n), entries.len())?;
            let events = count_slots(&slots, entries.len() + 1);
            for slot in first_seen(&slots, entries.len() + 1) {
                values[at] = slot_value(entries, slot, self.resolution);
                if let Some(g) = acc.group(&values) {
                    acc.add_events(g, events[slot]);
                }
            }
            return Ok(acc.finish());
        }
        if counts_only && constants + 1 == by.len() {
            // `count()` by one number column and constants (`#type`: the page's histogram is
            // `count() by #type, ts resolution R`): the column's values counted as below, the
            // constants the same in every group of the batch.
            let mut key: Vec<ValueRef<'_>> = by
                .iter()
                .map(|r| match r {
                    Reader::Constant(v) => v.clone(),
                    _ => ValueRef::Null,
                })
                .collect();
            let at = by
                .iter()
                .position(|r| !matches!(r, Reader::Constant(_)))
                .unwrap_or(0);
            let counted = match &mut by[at] {
                Reader::Values { cursor, column, ty } if ints::signedness(ty).is_some() => {
                    let src = Numbers::Msgpack(column);
                    Some((
                        self.count_numbers(src, Some(cursor), ty, n, rows)?,
                        ty.clone(),
                    ))
                }
                Reader::Ints { ints, ty, .. } => {
                    let src = Numbers::Decoded(ints);
                    Some((self.count_numbers(src, None, ty, n, rows)?, ty.clone()))
                }
                Reader::Marked { marked, ty, .. } => {
                    let src = Numbers::Marked(*marked);
                    Some((self.count_numbers(src, None, ty, n, rows)?, ty.clone()))
                }
                _ => None,
            };
            if let Some((counts, ty)) = counted {
                for (value, count) in counts {
                    key[at] = value.map_or(ValueRef::Null, |x| number(&ty, x));
                    if let Some(g) = acc.group(&key) {
                        acc.add_events(g, count);
                    }
                }
                return Ok(acc.finish());
            }
        }
        if constants + dicts == by.len()
            && dicts == 1
            && self.by_codes(&mut by, &aggs, n, rows, &mut acc)?
        {
            return Ok(acc.finish());
        }
        let mut values: Vec<ValueRef<'_>> = Vec::with_capacity(by.len());
        let mut read: Vec<Option<ValueRef<'_>>> = Vec::with_capacity(aggs.len());
        let mut scratch = Vec::new();
        let mut next = rows.map(|r| r.iter().copied().peekable());
        for i in 0..n {
            let wanted = match next.as_mut() {
                None => true,
                Some(it) => it.next_if_eq(&i).is_some(),
            };
            values.clear();
            for r in &mut by {
                values.push(bucket(r.next()?, self.resolution));
            }
            // Every column is read at every row (values have no fixed width).
            read.clear();
            for r in &mut aggs {
                read.push(match r {
                    Some(r) => Some(r.next()?),
                    None => None,
                });
            }
            if !wanted {
                continue;
            }
            let Some(g) = acc.group(&values) else {
                continue;
            };
            for (k, v) in read.iter().enumerate() {
                acc.table.update(g, k, |a| match v {
                    None => a.add_event(),
                    Some(v) => a.add(v, &mut scratch),
                });
            }
            // A batch's own groups count too (sets of `distinct` grow with its rows): once
            // they would pass the budget, the query fails, and the rest is not aggregated.
            if i % BUDGET_ROWS == BUDGET_ROWS - 1 && !self.groups.fits(acc.table.heap()) {
                return Ok(acc.finish());
            }
        }
        for r in by.iter().chain(aggs.iter().flatten()) {
            r.finish()?;
        }
        Ok(acc.finish())
    }
}

impl AggPlan {
    /// Aggregations of number columns (and `count()`) by constants and one dictionary
    /// column (`sum(orig_bytes) by id.orig_h` where the batch stores the addresses as a
    /// dictionary): each code's group is made once, in the order of its first row, and each
    /// number column is decoded 64 rows at a time ([`ints::decode`]); `count()`, `count`,
    /// `sum` and `mean` total each code's values in an array indexed by code and add each
    /// code's totals to its group once, the others add each row's value to its code's
    /// group. No row is read value by value and no key is built per row.
    /// Returns `false`, having read nothing, when an aggregation reads anything else or a
    /// column that decoder leaves (the caller then reads row by row).
    fn by_codes<'c>(
        &self,
        by: &mut [Reader<'c>],
        aggs: &[Option<Reader<'c>>],
        n: usize,
        rows: Option<&[usize]>,
        acc: &mut Groups<'_>,
    ) -> Result<bool, DecodeError> {
        // Every number column decoded first: a column left to the general reader leaves
        // everything as it was.
        let mut columns: Vec<Option<Decoded<'_>>> = Vec::with_capacity(aggs.len());
        for a in aggs {
            columns.push(match a {
                None => None,
                Some(r @ (Reader::Values { .. } | Reader::Ints { .. } | Reader::Marked { .. })) => {
                    let (column, ty) = match r {
                        Reader::Values { column, ty, .. } => (Numbers::Msgpack(column), ty),
                        Reader::Ints { ints, ty, .. } => (Numbers::Decoded(ints), ty),
                        Reader::Marked { marked, ty, .. } => (Numbers::Marked(*marked), ty),
                        _ => return Ok(false),
                    };
                    let Some(signed) = ints::signedness(ty) else {
                        return Ok(false);
                    };
                    let Some((values, set)) = ints::decode_all(column, n, signed) else {
                        return Ok(false);
                    };
                    Some((values, set, ty))
                }
                Some(_) => return Ok(false),
            });
        }
        let mut values: Vec<ValueRef<'_>> = Vec::with_capacity(by.len());
        let mut dict = None;
        for r in by.iter_mut() {
            match r {
                Reader::Constant(v) => values.push(v.clone()),
                Reader::Dict { entries, codes, .. } => {
                    dict = Some((values.len(), &*entries, *codes));
                    values.push(ValueRef::Null);
                }
                Reader::Values { .. } | Reader::Ints { .. } | Reader::Marked { .. } => {
                    return Ok(false)
                }
            }
        }
        let Some((at, entries, codes)) = dict else {
            return Ok(false);
        };
        if codes.len() < n {
            return Err(DecodeError::Truncated(codes.len()));
        }
        let unset = entries.len();
        let slots = codes.slots(rows, n, unset)?;
        // The row of the `i`-th slot.
        let row = |i: usize| rows.map_or(i, |r| r[i]);
        // Each slot's group is made once, in the order of their first rows, as the row
        // reader would make them.
        let order = first_seen(&slots, unset + 1);
        // The events of each slot, for `count()`.
        let events = if columns.iter().any(Option::is_none) {
            count_slots(&slots, unset + 1)
        } else {
            Vec::new()
        };
        let summed = columns.iter().zip(&self.aggs).all(|(c, a)| {
            c.is_none() || matches!(a.func, AggFunc::Count | AggFunc::Sum | AggFunc::Mean)
        });
        if summed {
            // Each slot's total and count of set values per number column, added to its
            // group's accumulator once ([`Acc::add_integers`]), not value by value.
            let mut totals: Vec<Vec<(i128, u64)>> = Vec::with_capacity(columns.len());
            for column in &columns {
                let Some((values, set, ty)) = column else {
                    totals.push(Vec::new());
                    continue;
                };
                let signed = ints::signedness(ty) == Some(true);
                let mut t = vec![(0i128, 0u64); unset + 1];
                for (i, &s) in slots.iter().enumerate() {
                    let r = row(i);
                    if set[r / ints::WORD] >> (r % ints::WORD) & 1 == 1 {
                        let v = values[r];
                        let slot = &mut t[s as usize];
                        slot.0 += if signed {
                            i128::from(v as i64)
                        } else {
                            i128::from(v)
                        };
                        slot.1 += 1;
                    }
                }
                totals.push(t);
            }
            for slot in order {
                values[at] = slot_value(entries, slot, self.resolution);
                let Some(g) = acc.group(&values) else {
                    continue;
                };
                for (k, column) in columns.iter().enumerate() {
                    match column {
                        None => acc.table.update(g, k, |a| a.add_events(events[slot])),
                        Some((_, _, ty)) => {
                            let (total, count) = totals[k][slot];
                            if count > 0 {
                                acc.table.update(g, k, |a| a.add_integers(ty, total, count));
                            }
                        }
                    }
                }
            }
            return Ok(true);
        }
        // Other aggregations (`min`, `max`, ...): value by value, to each row's group.
        const SKIP: usize = usize::MAX;
        let mut group_of = vec![SKIP; unset + 1];
        for slot in order {
            values[at] = slot_value(entries, slot, self.resolution);
            group_of[slot] = acc.group(&values).unwrap_or(SKIP);
        }
        let mut scratch = Vec::new();
        for (k, column) in columns.iter().enumerate() {
            for (i, &s) in slots.iter().enumerate() {
                let r = row(i);
                let g = group_of[s as usize];
                if g == SKIP {
                    continue;
                }
                match column {
                    None => acc.table.update(g, k, Acc::add_event),
                    Some((values, set, ty)) => {
                        if set[r / ints::WORD] >> (r % ints::WORD) & 1 == 1 {
                            let v = number(ty, values[r]);
                            acc.table.update(g, k, |a| a.add(&v, &mut scratch));
                        }
                    }
                }
            }
        }
        Ok(true)
    }

    /// `count()` by one column of numbers or times (`top id.resp_p`, events per hour): the
    /// rows counted per value (its bits, rounded down to the resolution; `None`: unset), in
    /// the order of each value's first row (the caller makes a group of each). The column is decoded 64 rows
    /// at a time ([`ints::decode`]); a value equal to the row before's counts without a
    /// lookup (times in order, per hour), one below [`DENSE`] in an array indexed by it
    /// (ports), any other in a hash map. A column that decoder leaves is read value by value.
    fn count_numbers(
        &self,
        column: Numbers<'_>,
        cursor: Option<&mut RowCursor<'_>>,
        ty: &Type,
        n: usize,
        rows: Option<&[usize]>,
    ) -> Result<Vec<(Option<u64>, u64)>, DecodeError> {
        let mut counter = Counter::new();
        let decoded = ints::signedness(ty).and_then(|signed| {
            let wanted = rows.map(|rows| {
                let mut words = vec![0u64; n.div_ceil(ints::WORD)];
                for &r in rows {
                    if let Some(w) = words.get_mut(r / ints::WORD) {
                        *w |= 1 << (r % ints::WORD);
                    }
                }
                words
            });
            let resolution = self.resolution.filter(|_| matches!(ty, Type::Time));
            let mut bucket = 0..0;
            let mut k = 0;
            ints::decode(column, n, signed, |w| {
                let want = wanted.as_ref().map_or(u64::MAX, |v| v[k]);
                k += 1;
                let all = u64::MAX >> (ints::WORD - w.len.max(1));
                if want & all == all && w.set & all == all {
                    let values = &w.values[..w.len];
                    match resolution {
                        // Every row wanted and set (most words of ports): no test per row
                        // but the one for the array.
                        None => {
                            counter.add_all(values);
                            return;
                        }
                        // Every row in the bucket of the row before (times in order): one
                        // count for the word, after a compare per row the compiler
                        // vectorizes.
                        Some(_)
                            if values.iter().fold(true, |inside, &v| {
                                inside & (bucket.start <= v as i64) & ((v as i64) < bucket.end)
                            }) =>
                        {
                            counter.add_many(bucket.start as u64, w.len as u64);
                            return;
                        }
                        Some(_) => {}
                    }
                }
                for (bit, &v) in w.values[..w.len].iter().enumerate() {
                    if want >> bit & 1 == 0 {
                        continue;
                    }
                    if w.set >> bit & 1 == 0 {
                        counter.add_value(None);
                        continue;
                    }
                    match resolution {
                        // Times in order fall in the bucket of the row before: no division.
                        Some(r) => {
                            let t = v as i64;
                            if !bucket.contains(&t) {
                                let lo = t.div_euclid(r) * r;
                                bucket = lo..lo.saturating_add(r);
                            }
                            counter.add(bucket.start as u64);
                        }
                        None => counter.add(v),
                    }
                }
            })
        });
        if decoded.is_none() {
            // Decoded numbers are refused only when they are not this batch's (a bug),
            // reported as msgpack's never-used marker.
            let (Some(cursor), Numbers::Msgpack(column)) = (cursor, column) else {
                return Err(DecodeError::Unexpected {
                    marker: 0xc1,
                    ty: ty.to_string(),
                    at: 0,
                });
            };
            counter = Counter::new();
            let mut next = rows.map(|r| r.iter().copied().peekable());
            for i in 0..n {
                // Every value is read, wanted or not (values have no fixed width).
                let v = bucket(cursor.read(ty)?, self.resolution);
                if let Some(it) = next.as_mut() {
                    if it.next_if_eq(&i).is_none() {
                        continue;
                    }
                }
                counter.add_value(match v {
                    ValueRef::Null => None,
                    ValueRef::Count(x) | ValueRef::Port(x) => Some(x),
                    ValueRef::Int(x) | ValueRef::Time(x) | ValueRef::Interval(x) => Some(x as u64),
                    // `read` gives these types only these values: a sign of a decoder bug,
                    // reported as msgpack's never-used marker.
                    _ => {
                        return Err(DecodeError::Unexpected {
                            marker: 0xc1,
                            ty: ty.to_string(),
                            at: cursor.position(),
                        })
                    }
                });
            }
            if cursor.position() != column.len() {
                return Err(DecodeError::Trailing {
                    at: cursor.position(),
                    len: column.len(),
                });
            }
        }
        Ok(counter.finish())
    }
}

/// A number column decoded whole ([`AggPlan::by_codes`]): each row's bits, the bitmap words
/// of the rows with a value, and the column's type.
type Decoded<'t> = (Vec<u64>, Vec<u64>, &'t Type);

/// The value of a column of type `ty` (a number type) whose bits [`ints::decode`] gave.
fn number(ty: &Type, x: u64) -> ValueRef<'static> {
    match ty {
        Type::Port => ValueRef::Port(x),
        Type::Int => ValueRef::Int(x as i64),
        Type::Time => ValueRef::Time(x as i64),
        Type::Interval => ValueRef::Interval(x as i64),
        _ => ValueRef::Count(x),
    }
}

/// Values below this are counted in an array indexed by the value (every port).
const DENSE: u64 = 1 << 16;

std::thread_local! {
    /// Each thread's array of [`Counter::dense`], all zeros between batches: taken by a
    /// counter and given back by [`Counter::finish`] with the entries it set zeroed again,
    /// rather than a new array allocated, zeroed and faulted in for every batch (W1000's
    /// ports reach 64 Ki: 512 KiB a batch).
    static DENSE_COUNTS: std::cell::Cell<Vec<u64>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Rows counted per value (`None`: unset) for [`AggPlan::count_numbers`].
#[derive(Default)]
struct Counter {
    /// Each set value, in the order of its first row.
    seen: Vec<u64>,
    /// The rows of each value below [`DENSE`], indexed by it (grown as needed; all zeros
    /// when taken, see [`DENSE_COUNTS`]).
    dense: Vec<u64>,
    /// The rows of every other value (but the current run's).
    sparse: Map<u64, u64>,
    /// The value of the current run of rows above [`DENSE`], and its rows.
    last: u64,
    run: u64,
    /// Unset rows, and how many values were seen before the first one.
    unset: u64,
    unset_first: Option<usize>,
}

impl Counter {
    /// A counter with this thread's array of dense counts.
    fn new() -> Counter {
        Counter {
            dense: DENSE_COUNTS.take(),
            ..Counter::default()
        }
    }

    /// Counts a row of value `v`.
    #[inline(always)]
    fn add(&mut self, v: u64) {
        if v < DENSE {
            let v = v as usize;
            if v >= self.dense.len() {
                self.dense.resize((v + 1).next_power_of_two(), 0);
            }
            self.add_dense(v);
        } else {
            self.add_sparse(v);
        }
    }

    /// Counts a row of value `v`, below the length of [`Counter::dense`].
    #[inline(always)]
    fn add_dense(&mut self, v: usize) {
        let c = &mut self.dense[v];
        if *c == 0 {
            self.seen.push(v as u64);
        }
        *c += 1;
    }

    /// Counts `n` rows of value `v`.
    fn add_many(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        // The first as any row (a new value is listed), the others added to its count.
        self.add(v);
        match self.dense.get_mut(v as usize).filter(|_| v < DENSE) {
            Some(c) => *c += n - 1,
            None => self.run += n - 1,
        }
    }

    /// Counts a row of each value of `values`.
    #[inline(always)]
    fn add_all(&mut self, values: &[u64]) {
        let max = values.iter().copied().fold(0, u64::max);
        if max >= DENSE {
            values.iter().for_each(|&v| self.add(v));
            return;
        }
        if max as usize >= self.dense.len() {
            self.dense.resize((max as usize + 1).next_power_of_two(), 0);
        }
        for &v in values {
            self.add_dense(v as usize);
        }
    }

    /// A value of [`Counter::sparse`]: a run of one value (times in order, per hour) is
    /// counted in `run` and added to the map once, when another value comes.
    #[inline(always)]
    fn add_sparse(&mut self, v: u64) {
        if self.run > 0 && self.last == v {
            self.run += 1;
            return;
        }
        self.flush_run();
        if let std::collections::hash_map::Entry::Vacant(e) = self.sparse.entry(v) {
            e.insert(0);
            self.seen.push(v);
        }
        self.last = v;
        self.run = 1;
    }

    fn flush_run(&mut self) {
        if self.run > 0 {
            if let Some(c) = self.sparse.get_mut(&self.last) {
                *c += self.run;
            }
            self.run = 0;
        }
    }

    /// Counts a row of value `v` (`None`: unset).
    fn add_value(&mut self, v: Option<u64>) {
        match v {
            Some(v) => self.add(v),
            None => {
                if self.unset_first.is_none() {
                    self.unset_first = Some(self.seen.len());
                }
                self.unset += 1;
            }
        }
    }

    /// Each value (`None`: unset) with its rows, in the order of its first row.
    fn finish(mut self) -> Vec<(Option<u64>, u64)> {
        self.flush_run();
        let mut out: Vec<(Option<u64>, u64)> = Vec::with_capacity(self.seen.len() + 1);
        for (i, v) in self.seen.into_iter().enumerate() {
            if self.unset_first == Some(i) {
                out.push((None, self.unset));
            }
            let rows = match self.dense.get(v as usize) {
                Some(&c) if v < DENSE => c,
                _ => self.sparse.get(&v).copied().unwrap_or(0),
            };
            out.push((Some(v), rows));
        }
        if self.unset_first.is_some_and(|at| at >= out.len()) {
            out.push((None, self.unset));
        }
        // Every entry set was that of a value seen: zeroed, the array is ready for the
        // thread's next batch.
        for &(v, _) in &out {
            if let Some(c) = v.and_then(|v| self.dense.get_mut(usize::try_from(v).ok()?)) {
                *c = 0;
            }
        }
        DENSE_COUNTS.set(self.dense);
        out
    }
}

/// How many rows of a batch are aggregated between two looks at the query's memory budget
/// (what the batch's groups hold is measured then).
const BUDGET_ROWS: usize = 1024;

/// The groups of one batch as they are aggregated.
struct Groups<'p> {
    plan: &'p AggPlan,
    table: GroupTable,
}

impl<'p> Groups<'p> {
    fn new(plan: &'p AggPlan, listed: bool) -> Groups<'p> {
        let table = plan.groups.table();
        Groups {
            plan,
            table: if listed { table.listing() } else { table },
        }
    }

    /// The group of `by` values `values` (made on first sight); `None` when they are all
    /// unset and the plan skips such events.
    fn group(&mut self, values: &[ValueRef<'_>]) -> Option<usize> {
        if self.plan.skip_unset && values.iter().all(|v| matches!(v, ValueRef::Null)) {
            return None;
        }
        // A batch has fewer groups than rows: no limit here (`summarize` has one).
        self.table.group(values, usize::MAX)
    }

    /// Adds `n` events to group `g` (`count()` alone).
    fn add_events(&mut self, g: usize, n: u64) {
        self.table.update_all(g, |a| a.add_events(n));
    }

    fn finish(self) -> GroupTable {
        self.table
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::query::memory::test_memory;
    use crate::query::ops::aggregate::KeyHasher;
    use crate::query::ops::partitions::Ordered;
    use crate::types::{Field, Schema};
    use crate::value::{encode_row, Value};

    /// Rows of a host (a string of 400 values, a few much more common, some unset), a count
    /// (some unset) and a port, the same for every run.
    fn hosts(n: usize) -> (SchemaRef, Vec<u8>, Vec<u32>) {
        let schema = Arc::new(Schema::new(
            "t",
            vec![
                Field::new("host", Type::String),
                Field::new("bytes", Type::Count),
                Field::new("port", Type::Port),
            ],
        ));
        let (mut data, mut offsets) = (Vec::new(), Vec::new());
        let mut next = crate::value::xorshift();
        for _ in 0..n {
            offsets.push(data.len() as u32);
            let host = match next(10) {
                0 => Value::Null,
                1..=5 => Value::String(format!("h{}", next(3)).into_bytes()),
                _ => Value::String(format!("h{}", next(400)).into_bytes()),
            };
            let bytes = match next(7) {
                0 => Value::Null,
                k => Value::Count(next(10u64.pow(k as u32))),
            };
            encode_row(&[host, bytes, Value::Port(next(1000))], &mut data);
        }
        (schema, data, offsets)
    }

    /// Every group of `plan` in order: its `by` values, then its results (as counts).
    fn groups_of(plan: &AggPlan) -> Vec<Vec<Value>> {
        let mut o = Ordered::new(plan.groups.take_tables());
        let mut out = Vec::new();
        while let Some((t, g)) = o.next_group() {
            let mut row: Vec<Value> = (0..plan.by.len()).map(|i| t.value(g, i)).collect();
            row.extend((0..plan.aggs.len()).map(|k| t.finish(g, k, &Type::Count)));
            out.push(row);
        }
        out
    }

    /// Aggregations by a dictionary column (a group per code, its numbers added per code
    /// or value by value) give the groups, in the order, and the results that reading the
    /// same rows value by value gives: every row or some, codes of two bytes, unset hosts
    /// and counts, and a `by` constant beside the dictionary.
    #[test]
    fn aggregations_by_dictionary_codes_equal_those_of_values() {
        let n = 3001;
        let (schema, data, offsets) = hosts(n);
        let dicts = Columns::split_rows(&data, &offsets, 3, &[true, false, false]).unwrap();
        let (dict, enc) = dicts.dict(0).expect("the hosts as a dictionary");
        assert!(dict.entries(enc).count() > 256, "codes of two bytes");
        let values = Columns::split_rows(&data, &offsets, 3, &[]).unwrap();
        let spec = |func, field: Option<&str>| AggSpec {
            name: String::new(),
            func,
            field: field.map(str::to_string),
            field_pos: 0,
            pos: 0,
        };
        let plans: [(&[&str], Vec<AggSpec>); 3] = [
            // Added per code.
            (
                &["host"],
                vec![
                    spec(AggFunc::Sum, Some("bytes")),
                    spec(AggFunc::Count, None),
                    spec(AggFunc::Count, Some("bytes")),
                    spec(AggFunc::Mean, Some("port")),
                ],
            ),
            // Value by value (`min`, `max`).
            (
                &["#type", "host"],
                vec![
                    spec(AggFunc::Min, Some("bytes")),
                    spec(AggFunc::Sum, Some("bytes")),
                    spec(AggFunc::Max, Some("port")),
                    spec(AggFunc::Count, None),
                ],
            ),
            (&["host"], vec![spec(AggFunc::Count, None)]),
        ];
        let some: Vec<usize> = (0..n)
            .filter(|r| r % 3 == 1 || (700..900).contains(r))
            .collect();
        for (by, aggs) in &plans {
            for rows in [None, Some(&some[..])] {
                let plan = |listed: bool| {
                    let funcs = aggs.iter().map(|a| a.func).collect();
                    let groups = Partitions::new(
                        by.len(),
                        funcs,
                        KeyHasher::new(),
                        usize::MAX,
                        test_memory(),
                    );
                    if listed {
                        groups.learn(100, 90, false, 0);
                    }
                    AggPlan {
                        by: by.iter().map(|b| b.to_string()).collect(),
                        resolution: None,
                        aggs: aggs.clone(),
                        skip_unset: false,
                        groups: Arc::new(groups),
                    }
                };
                let (by_codes, by_values) = (plan(false), plan(true));
                // Two batches, the second first: each group's first event decides its place.
                for (p, cols) in [(&by_codes, &dicts), (&by_values, &values)] {
                    p.aggregate(&schema, cols, rows, 10_000).unwrap();
                    p.aggregate(&schema, cols, rows, 0).unwrap();
                }
                let (got, want) = (groups_of(&by_codes), groups_of(&by_values));
                assert!(want.len() > 250, "{} groups", want.len());
                assert_eq!(
                    got,
                    want,
                    "{by:?} {aggs:?} rows {:?}",
                    rows.map(<[usize]>::len)
                );
            }
        }
    }

    /// `count()` by a number column and `#type` (the page's histogram: `count() by #type, ts
    /// resolution R`) counts as by the column alone, the schema's name beside each value, in
    /// either order of the two, for every row or some, set and unset values.
    #[test]
    fn counts_by_a_number_and_the_type_are_those_by_the_number() {
        let n = 2500;
        let (schema, data, offsets) = hosts(n);
        let cols = Columns::split_rows(&data, &offsets, 3, &[]).unwrap();
        let some: Vec<usize> = (0..n).filter(|r| r % 5 != 2).collect();
        let count = AggSpec {
            name: String::new(),
            func: AggFunc::Count,
            field: None,
            field_pos: 0,
            pos: 0,
        };
        let plan = |by: &[&str]| AggPlan {
            by: by.iter().map(|b| b.to_string()).collect(),
            resolution: None,
            aggs: vec![count.clone()],
            skip_unset: false,
            groups: Arc::new(Partitions::new(
                by.len(),
                vec![AggFunc::Count],
                KeyHasher::new(),
                usize::MAX,
                test_memory(),
            )),
        };
        let name = Value::String(schema.name.as_bytes().to_vec());
        for field in ["bytes", "port"] {
            for rows in [None, Some(&some[..])] {
                let (alone, first, last) = (
                    plan(&[field]),
                    plan(&["#type", field]),
                    plan(&[field, "#type"]),
                );
                for p in [&alone, &first, &last] {
                    p.aggregate(&schema, &cols, rows, 0).unwrap();
                }
                let want = groups_of(&alone);
                assert!(want.len() > 1, "{field}: {want:?}");
                let with_type: Vec<Vec<Value>> = want
                    .iter()
                    .map(|g| [vec![name.clone()], g.clone()].concat())
                    .collect();
                assert_eq!(
                    groups_of(&first),
                    with_type,
                    "{field} {:?}",
                    rows.map(<[usize]>::len)
                );
                let type_last: Vec<Vec<Value>> = want
                    .iter()
                    .map(|g| vec![g[0].clone(), name.clone(), g[1].clone()])
                    .collect();
                assert_eq!(groups_of(&last), type_last, "{field}");
            }
        }
    }

    /// A thread's counters one after the other count only their own rows (the array of
    /// dense counts they share is zeroed between them), a value at a time or a word at a
    /// time, dense, sparse and unset, in the order of first rows.
    #[test]
    fn counters_on_one_thread_count_only_their_own_rows() {
        let mut a = Counter::new();
        a.add_all(&[80, 443, 80, 53]);
        a.add_all(&[70_000, 80]);
        a.add_value(None);
        a.add(443);
        assert_eq!(
            a.finish(),
            [
                (Some(80), 3),
                (Some(443), 2),
                (Some(53), 1),
                (Some(70_000), 1),
                (None, 1)
            ]
        );
        let mut b = Counter::new();
        assert!(
            b.dense.iter().all(|&c| c == 0),
            "the array is given back zeroed"
        );
        b.add(53);
        b.add_all(&[8080, 53]);
        assert_eq!(b.finish(), [(Some(53), 2), (Some(8080), 1)]);
    }
}
