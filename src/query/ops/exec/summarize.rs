//! `summarize AGG, ... [by F, ...] [resolution D]`: one event per distinct combination of
//! the `by` values (grouping across schemas by field name; an event without a `by` field
//! has it unset in its group), with the aggregations of `aggregate.rs`. Time
//! values of `by` fields are rounded down to a multiple of the resolution. Groups come out
//! in the order they were first seen, as events of the schema `weir.summarize` (`top` and
//! `rare` name theirs `weir.top` and `weir.rare`): the `by` fields (named as written, typed
//! as in the first schema that has them), then the aggregations (named as written, or
//! `NAME=` as given).
//!
//! The groups are held in the tables of `partitions.rs`, which the search's workers merge
//! each batch's groups into when this is the first operator (`partial.rs`); slices that come
//! as rows are grouped here and merged the same way.
//!
//! Memory: per group its `by` values, one accumulator per aggregation (40 bytes, plus the
//! distinct values of `distinct` and `count_distinct`), its first position and an index
//! entry, all charged to the query's memory budget by the tables (`partitions.rs`): more
//! is an error that names the `summarize` (and at most [`MAX_GROUPS`] groups, the most the
//! tables can number); the output is made
//! [`EMIT_GROUPS`] events at a time, each slice taken by the next operator before the next.
//! Followed by `sort ... | head N` (and in `top`, `rare`), it emits only the `N` groups that
//! `sort` keeps ([`first_groups`]): the others are never made events.

use std::sync::Arc;

use super::super::aggregate::{bucket, coerce, result_type, unify, Acc, KeyHasher};
use super::super::groups::GroupTable;
use super::super::partial::{AggPlan, Partial};
use super::super::partitions::{Ordered, Partitions};
use super::super::slice::{Slice, Source};
use super::super::syntax::AggSpec;
use super::held::cut_at;
use super::sort::Sort;
use super::{Flow, Operator};
use crate::query::memory::Reservation;
use crate::query::QueryError;
use crate::types::{Field, Schema, SchemaRef, Type};
use crate::value::{RowEncoder, Value, ValueRef};

/// The most groups a `summarize` holds: the most its tables can number (each numbers its
/// groups with a `u32`). What they take is bounded by the query's memory budget well before.
pub const MAX_GROUPS: usize = u32::MAX as usize;

/// The most groups in one slice of a `summarize`'s output: the next operator takes each
/// before the next is made, so that the output is never all in memory beside the groups.
const EMIT_GROUPS: usize = 1 << 16;

/// The groups being emitted, and what their events are.
struct Emitting {
    groups: Ordered,
    schema: SchemaRef,
    by_types: Vec<Type>,
    agg_types: Vec<Type>,
}

/// How one input schema feeds the aggregation.
struct Binding {
    schema: SchemaRef,
    /// Per `by` field: where it is in the schema.
    by: Vec<Option<Source>>,
    /// Per aggregation: where its field is in the schema.
    aggs: Vec<Option<Source>>,
}

/// `summarize` (also `top` and `rare`, see `plan.rs`).
pub(crate) struct Summarize {
    name: String,
    by: Vec<String>,
    resolution: Option<i64>,
    aggs: Vec<AggSpec>,
    /// Events whose `by` values are all unset are left out (`top`, `rare`).
    skip_unset: bool,
    bindings: Vec<Binding>,
    /// The groups, which the search's workers merge batches into too (`partitions.rs`).
    groups: Arc<Partitions>,
    /// Events come from the search, in ID order, and their IDs place the groups' first
    /// events (see `partitions.rs`); otherwise they are placed in the order they come.
    by_ids: bool,
    /// Where the next events are placed when not by ID.
    next_position: u64,
    by_types: Vec<Option<Type>>,
    agg_types: Vec<Option<Type>>,
    scratch: Vec<u8>,
    /// Once the input ended, the groups being emitted.
    emitting: Option<Emitting>,
    /// The next stage keeps only its first events by these keys (name, descending), this
    /// many ([`Summarize::feeds_first`]).
    top: Option<(Vec<(String, bool)>, usize)>,
}

impl Summarize {
    pub fn new(
        name: &str,
        aggs: Vec<AggSpec>,
        by: Vec<String>,
        resolution: Option<i64>,
        skip_unset: bool,
        memory: Reservation,
    ) -> Summarize {
        let funcs = aggs.iter().map(|a| a.func).collect();
        Summarize {
            groups: Arc::new(Partitions::new(
                by.len(),
                funcs,
                KeyHasher::new(),
                MAX_GROUPS,
                memory,
            )),
            by_ids: false,
            next_position: 0,
            name: name.to_string(),
            by_types: vec![None; by.len()],
            agg_types: vec![None; aggs.len()],
            by,
            resolution,
            aggs,
            skip_unset,
            bindings: Vec::new(),
            scratch: Vec::new(),
            emitting: None,
            top: None,
        }
    }

    fn binding(&mut self, schema: &SchemaRef) -> usize {
        if let Some(i) = self
            .bindings
            .iter()
            .position(|b| Arc::ptr_eq(&b.schema, schema) || *b.schema == **schema)
        {
            return i;
        }
        let field = |name: &str| Source::resolve(schema, name);
        let by: Vec<_> = self.by.iter().map(|n| field(n)).collect();
        let aggs: Vec<_> = self
            .aggs
            .iter()
            .map(|a| a.field.as_deref().and_then(field))
            .collect();
        for (t, f) in self.by_types.iter_mut().zip(&by) {
            if let Some(src) = f {
                let ty = src.ty();
                *t = Some(t.as_ref().map_or(ty.clone(), |t| unify(t, &ty)));
            }
        }
        for (t, f) in self.agg_types.iter_mut().zip(&aggs) {
            if let Some(src) = f {
                let ty = src.ty();
                *t = Some(t.as_ref().map_or(ty.clone(), |t| unify(t, &ty)));
            }
        }
        self.bindings.push(Binding {
            schema: schema.clone(),
            by,
            aggs,
        });
        self.bindings.len() - 1
    }
}

impl Summarize {
    /// Takes word of one batch of `schema` whose groups a worker merged (`partial.rs`) by
    /// the plan of this operator ([`Summarize::agg_plan`]).
    pub(crate) fn merge_partial(
        &mut self,
        schema: &SchemaRef,
        _partial: Partial,
    ) -> Result<(), QueryError> {
        self.binding(schema);
        self.check_full()
    }

    /// The next stage keeps only its first `n` events by `keys` (`sort K, ... | head n`, ties
    /// by arrival): it emits only the groups that can be among them ([`first_groups`]).
    pub(crate) fn feeds_first(&mut self, keys: Vec<(String, bool)>, n: usize) {
        self.top = Some((keys, n));
    }

    /// What the search's workers aggregate for this operator on their own (`partial.rs`):
    /// its input then comes from the search, in ID order.
    pub(crate) fn agg_plan(&mut self) -> AggPlan {
        self.by_ids = true;
        AggPlan {
            by: self.by.clone(),
            resolution: self.resolution,
            aggs: self.aggs.clone(),
            skip_unset: self.skip_unset,
            groups: self.groups.clone(),
        }
    }

    fn check_full(&self) -> Result<(), QueryError> {
        self.groups.check()?;
        if self.groups.full() {
            return Err(too_many_groups());
        }
        Ok(())
    }
}

/// The groups (table, group) of `tables` that are among the first `n` events by `keys` of
/// the next stage (a `sort ... | head n`, ties in the order of arrival), in the order of
/// their first events, as they would have come to it among all the others: that stage then
/// keeps the same events, in the same order, and no other group is made an event. The keys
/// are the groups' values as in their events (`schema`, of `by` fields of types `by_types`
/// and aggregations of types `agg_types`), unset ones last, as `sort` has them.
///
/// The tables are shared out over the cores, each thread keeping its own first `n`; a group's
/// key is made in one buffer and kept (cloned) only when it sorts before the thread's cutoff.
/// (With millions of groups, one thread allocating a key per group was a fifth of a
/// `summarize ... by id.orig_h | sort ... | head 10`, after all cores had merged.)
fn first_groups(
    tables: &[GroupTable],
    schema: &SchemaRef,
    by_types: &[Type],
    agg_types: &[Type],
    keys: &[(String, bool)],
    n: usize,
) -> Vec<(u32, u32)> {
    let desc: Vec<bool> = keys.iter().map(|k| k.1).collect();
    let sources: Vec<Option<Source>> = keys
        .iter()
        .map(|(name, _)| Source::resolve(schema, name))
        .collect();
    let top = FirstGroups {
        schema,
        by_types,
        agg_types,
        sources: &sources,
        desc: &desc,
        n,
    };
    let groups: usize = tables.iter().map(GroupTable::len).sum();
    let threads = match groups {
        0..PARALLEL_GROUPS => 1,
        _ => std::thread::available_parallelism().map_or(1, |t| t.get()),
    };
    let per_thread = tables.len().div_ceil(threads).max(1);
    let chunks = tables.chunks(per_thread).enumerate();
    let mut kept: Vec<Candidate> =
        crate::pool::map_scoped(chunks, |(c, chunk)| top.keep(chunk, c * per_thread))
            .into_iter()
            .flatten()
            .collect();
    kept.sort_by(|a, b| top.order(a, b));
    kept.truncate(n);
    let mut firsts: Vec<(u64, u32, u32)> = kept.into_iter().map(|(_, f, p, g)| (f, p, g)).collect();
    firsts.sort_unstable();
    firsts.into_iter().map(|(_, p, g)| (p, g)).collect()
}

/// Fewer groups than this are weighed by [`first_groups`] on one thread (a thread's start
/// costs more than they do).
const PARALLEL_GROUPS: usize = 1 << 16;

/// A group as [`first_groups`] weighs it: its sort key, first position, table and index.
type Candidate = (Vec<Option<Value>>, u64, u32, u32);

/// What [`first_groups`] sorts the groups by, and how many it keeps.
struct FirstGroups<'a> {
    schema: &'a SchemaRef,
    by_types: &'a [Type],
    agg_types: &'a [Type],
    sources: &'a [Option<Source>],
    desc: &'a [bool],
    n: usize,
}

impl FirstGroups<'_> {
    fn order(&self, a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
        Sort::order_keys(self.desc, (&a.0, a.1), (&b.0, b.1))
    }

    /// Group `g` of `t`'s sort key, into `key`.
    fn key_of(&self, t: &GroupTable, g: usize, key: &mut Vec<Option<Value>>) {
        key.clear();
        key.extend(self.sources.iter().map(|s| {
            let v = match s {
                None => return None,
                Some(Source::SchemaName) => Value::String(self.schema.name.clone().into()),
                Some(Source::Field(i, _)) => match self.by_types.get(*i) {
                    Some(ty) => coerce(t.value(g, *i), ty),
                    None => {
                        let a = *i - self.by_types.len();
                        t.finish(g, a, self.agg_types.get(a)?)
                    }
                },
            };
            (!matches!(v, Value::Null)).then_some(v)
        }));
    }

    /// The first `n` groups of `tables` (the first of which is table `offset`), in no order.
    fn keep(&self, tables: &[GroupTable], offset: usize) -> Vec<Candidate> {
        let mut kept: Vec<Candidate> = Vec::new();
        // Once `n` are kept: the last of them; a group that sorts after it is not.
        let mut cutoff: Option<Candidate> = None;
        let mut key = Vec::new();
        for (p, t) in tables.iter().enumerate() {
            for g in 0..t.len() {
                self.key_of(t, g, &mut key);
                let first = t.first(g);
                if cutoff.as_ref().is_some_and(|c| {
                    Sort::order_keys(self.desc, (&key, first), (&c.0, c.1))
                        == std::cmp::Ordering::Greater
                }) {
                    continue;
                }
                kept.push((key.clone(), first, (offset + p) as u32, g as u32));
                if kept.len() >= cut_at(self.n) {
                    kept.sort_by(|a, b| self.order(a, b));
                    kept.truncate(self.n);
                    cutoff = kept.last().cloned();
                }
            }
        }
        kept
    }
}

fn too_many_groups() -> QueryError {
    QueryError::Limit(format!(
        "`summarize` holds at most {MAX_GROUPS} groups; group by fewer or coarser fields (a `resolution`), or narrow the query"
    ))
}

impl Operator for Summarize {
    fn merge_partial(&mut self, schema: &SchemaRef, partial: Partial) -> Result<(), QueryError> {
        Summarize::merge_partial(self, schema, partial)
    }

    fn push(&mut self, slice: Slice, _out: &mut Vec<Slice>) -> Result<Flow, QueryError> {
        let b = self.binding(slice.schema());
        let schema = slice.schema();
        let binding = &self.bindings[b];
        let ids = slice.ids();
        let base = match ids.first() {
            Some(&id) if self.by_ids && ids.len() == slice.len() => id,
            _ => self.next_position,
        };
        self.next_position = self
            .next_position
            .max(base.saturating_add(slice.len() as u64));
        let mut groups = self.groups.table();
        let mut values: Vec<ValueRef<'_>> = Vec::with_capacity(self.by.len());
        for row in slice.rows() {
            values.clear();
            let mut any = false;
            for f in &binding.by {
                let v = match f {
                    None => ValueRef::Null,
                    Some(src) => bucket(src.read(schema, row)?, self.resolution),
                };
                any |= !matches!(v, ValueRef::Null);
                values.push(v);
            }
            if self.skip_unset && !any {
                continue;
            }
            let g = groups
                .group(&values, MAX_GROUPS)
                .ok_or_else(too_many_groups)?;
            for (k, (spec, f)) in self.aggs.iter().zip(&binding.aggs).enumerate() {
                match (f, &spec.field) {
                    (_, None) => groups.update(g, k, Acc::add_event),
                    (None, Some(_)) => {}
                    (Some(src), Some(_)) => {
                        let v = src.read(schema, row)?;
                        let scratch = &mut self.scratch;
                        groups.update(g, k, |a| a.add(&v, scratch));
                    }
                }
            }
        }
        self.groups.merge(groups, base);
        self.check_full()?;
        Ok(Flow::More)
    }

    fn finish(&mut self, out: &mut Vec<Slice>) -> Result<bool, QueryError> {
        let emit = match &mut self.emitting {
            Some(e) => e,
            None => {
                let e = self.start_emitting()?;
                self.emitting.insert(e)
            }
        };
        let width = emit.schema.fields.len() as u32;
        let mut slice = Slice::new(emit.schema.clone());
        // In the order of the groups' first events: `by` values, then accumulators.
        while slice.len() < EMIT_GROUPS {
            let Some((table, g)) = emit.groups.next_group() else {
                break;
            };
            slice.push_with(None, |buf| {
                let mut e = RowEncoder::new(buf);
                e.array(width);
                for (i, t) in emit.by_types.iter().enumerate() {
                    e.value(&coerce(table.take_value(g, i), t));
                }
                for (k, t) in emit.agg_types.iter().enumerate() {
                    e.value(&table.finish(g, k, t));
                }
            });
        }
        let more = slice.len() == EMIT_GROUPS;
        if !slice.is_empty() {
            out.push(slice);
        }
        if !more {
            // The groups' memory goes now, not with the chain.
            self.emitting = None;
            self.groups.taken_dropped();
        }
        Ok(more)
    }
}

impl Summarize {
    /// The groups in order, and the schema of the events made of them.
    fn start_emitting(&mut self) -> Result<Emitting, QueryError> {
        self.check_full()?;
        let mut tables = self.groups.take_tables();
        // No `by` and no input: one event of the empty aggregation (`count()` is 0).
        if self.by.is_empty() && tables.iter().all(|t| t.len() == 0) {
            let mut empty = self.groups.table();
            empty.group(&[], MAX_GROUPS);
            self.groups.merge(empty, 0);
            tables = self.groups.take_tables();
        }
        let by_types: Vec<Type> = self
            .by_types
            .iter()
            .map(|t| t.clone().unwrap_or(Type::String))
            .collect();
        let agg_types: Vec<Type> = self
            .aggs
            .iter()
            .zip(&self.agg_types)
            .map(|(a, t)| result_type(a.func, t.as_ref()))
            .collect();
        let mut fields: Vec<Field> = self
            .by
            .iter()
            .zip(&by_types)
            .map(|(n, t)| Field::new(n.clone(), t.clone()))
            .collect();
        fields.extend(
            self.aggs
                .iter()
                .zip(&agg_types)
                .map(|(a, t)| Field::new(a.name.clone(), t.clone())),
        );
        let schema = Arc::new(Schema::new(self.name.clone(), fields));
        let groups = match &self.top {
            Some((keys, n)) => {
                let list = first_groups(&tables, &schema, &by_types, &agg_types, keys, *n);
                Ordered::listed(tables, list)
            }
            None => Ordered::new(tables),
        };
        Ok(Emitting {
            groups,
            schema,
            by_types,
            agg_types,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::query::memory::test_memory;
    use crate::query::ops::syntax::AggFunc;

    /// More groups than [`PARALLEL_GROUPS`], spread over every table, weighed on all cores:
    /// the groups kept are those of one sort of all of them (by count, descending; ties by
    /// first event), listed in the order of their first events, whatever thread weighed them.
    #[test]
    fn the_first_groups_weighed_on_all_cores_are_those_of_one_sort() {
        let parts = Partitions::new(
            1,
            vec![AggFunc::Count],
            KeyHasher::new(),
            usize::MAX,
            test_memory(),
        );
        let values = 2 * PARALLEL_GROUPS as u64;
        // Batches of 1,000 values; value x counted x % 13 + 1 times: ties everywhere.
        for base in (0..values).step_by(1000) {
            let mut t = parts.table();
            for x in base..(base + 1000).min(values) {
                let g = t.group(&[ValueRef::Count(x)], usize::MAX).unwrap();
                t.update(g, 0, |a| a.add_events(x % 13 + 1));
            }
            parts.merge(t, base);
        }
        let tables = parts.take_tables();
        assert!(tables.iter().all(|t| t.len() > 0), "groups in every table");
        let schema = Arc::new(Schema::new(
            "weir.summarize",
            vec![Field::new("x", Type::Count), Field::new("n", Type::Count)],
        ));
        let keys = [("n".to_string(), true)];
        for n in [1, 10, 3000] {
            let got: Vec<Value> =
                first_groups(&tables, &schema, &[Type::Count], &[Type::Count], &keys, n)
                    .into_iter()
                    .map(|(p, g)| tables[p as usize].value(g as usize, 0))
                    .collect();
            // By count descending, then by first event (here the value itself); then back in
            // the order of first events.
            let mut want: Vec<u64> = (0..values).collect();
            want.sort_by_key(|&x| (std::cmp::Reverse(x % 13), x));
            want.truncate(n);
            want.sort_unstable();
            assert_eq!(
                got,
                want.into_iter().map(Value::Count).collect::<Vec<_>>(),
                "{n}"
            );
        }
    }
}
