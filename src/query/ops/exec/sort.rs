//! `sort F [asc|desc], ...`: events of all schemas in the order of their keys. An event whose
//! schema lacks a key field (or whose value is unset) comes after those that have one, in
//! both directions; ties keep the input order (the sort is stable). Values compare across
//! schemas as `order.rs` says.
//!
//! Memory: with a limit (`sort ... | head N`), the `N` first events are kept, never more than
//! `2 N` (at least 1,024) at a time; without, every event is held. Either way what it holds
//! (each entry: its row, its keys and their heap, its place in the vector of entries) is
//! charged to the query's memory budget (`query/memory.rs`), and more than the budget is an
//! error that names the sort. Once sorted, the entries are emitted [`EMIT_ROWS`] at a time,
//! each slice taken by the next operator before the next is made (all at once, a chain of
//! sorts held every event twice).

use std::cmp::Ordering;
use std::sync::Arc;

use super::super::order::compare;
use super::super::physical::Cutoff;
use super::super::slice::{Slice, Source};
use super::held::{cut_at, emit_runs};
use super::{Flow, Operator};
use crate::query::memory::{alloc_bytes, value_heap, Reservation};
use crate::query::QueryError;
use crate::types::SchemaRef;
use crate::value::Value;

/// The most events in one slice of a sort's output.
const EMIT_ROWS: usize = 1 << 16;

struct Entry {
    keys: Vec<Option<Value>>,
    seq: u64,
    schema: SchemaRef,
    row: Vec<u8>,
    id: Option<u64>,
}

impl Entry {
    /// The heap bytes the entry owns: its row and its keys.
    fn heap(&self) -> usize {
        alloc_bytes(self.row.capacity())
            + alloc_bytes(self.keys.capacity() * std::mem::size_of::<Option<Value>>())
            + self.keys.iter().flatten().map(value_heap).sum::<usize>()
    }
}

/// `sort`, optionally keeping only the first `limit` events.
pub(crate) struct Sort {
    keys: Vec<(String, bool)>,
    limit: Option<usize>,
    /// What it holds, charged to the query's budget.
    memory: Reservation,
    entries: Vec<Entry>,
    /// The heap bytes of the entries ([`Entry::heap`]).
    heap: usize,
    /// Once the input ended: the sorted entries left to emit.
    emitting: Option<std::vec::IntoIter<Entry>>,
    seq: u64,
    /// Per schema: the field (index, type) of each key.
    cache: Vec<(SchemaRef, Vec<Option<Source>>)>,
    /// With a limit, once it was reached: the keys (and place) of the last event kept.
    cutoff: Option<(Vec<Option<Value>>, u64)>,
    /// The keys' directions.
    desc: Vec<bool>,
    /// Ties go by event ID, not by arrival: the scan's top-N feeds it ([`Sort::publish_to`]).
    by_id: bool,
    /// Where it publishes its cut-off for the scan.
    publish: Option<Arc<Cutoff>>,
}

impl Sort {
    /// Sorts by `keys` (name, descending), keeping the first `limit` events if given, and
    /// charging what it holds to `memory`.
    pub fn new(keys: Vec<(String, bool)>, limit: Option<u64>, memory: Reservation) -> Sort {
        Sort {
            limit: limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            memory,
            entries: Vec::new(),
            heap: 0,
            emitting: None,
            seq: 0,
            cache: Vec::new(),
            cutoff: None,
            desc: keys.iter().map(|k| k.1).collect(),
            by_id: false,
            publish: None,
            keys,
        }
    }

    /// Fed by the scan's top-N (`physical/rules.rs`): its input comes in any order of
    /// batches, best first by its first key, so ties go by event ID; after each slice, once
    /// it holds all it keeps, it publishes to `cutoff` the first key and ID of the last
    /// event kept, so that the scan reads no batch that cannot beat it.
    pub fn publish_to(&mut self, cutoff: Arc<Cutoff>) {
        self.by_id = true;
        self.publish = Some(cutoff);
    }

    /// The first key and ID of the last event kept, once it holds all it keeps.
    fn cutoff(&mut self) -> Option<(Option<Value>, u64)> {
        let limit = self.limit?;
        if limit == 0 || self.entries.len() < limit {
            return None;
        }
        if self.entries.len() > limit || self.cutoff.is_none() {
            self.cut(limit);
        }
        let (keys, seq) = self.cutoff.as_ref()?;
        Some((keys.first()?.clone(), *seq))
    }

    fn fields(&mut self, schema: &SchemaRef) -> usize {
        if let Some(i) = self
            .cache
            .iter()
            .position(|(s, _)| Arc::ptr_eq(s, schema) || **s == **schema)
        {
            return i;
        }
        let f = self
            .keys
            .iter()
            .map(|(name, _)| Source::resolve(schema, name))
            .collect();
        self.cache.push((schema.clone(), f));
        self.cache.len() - 1
    }

    fn order(desc: &[bool], a: &Entry, b: &Entry) -> Ordering {
        Sort::order_keys(desc, (&a.keys, a.seq), (&b.keys, b.seq))
    }

    /// How two events compare by their keys (`None`: the field is missing or unset), then
    /// by their places.
    pub(super) fn order_keys(
        desc: &[bool],
        (a, a_seq): (&[Option<Value>], u64),
        (b, b_seq): (&[Option<Value>], u64),
    ) -> Ordering {
        for ((x, y), &d) in a.iter().zip(b).zip(desc) {
            let o = match (x, y) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(x), Some(y)) if d => compare(y, x),
                (Some(x), Some(y)) => compare(x, y),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        a_seq.cmp(&b_seq)
    }

    /// Charges what the entries take now: their heap and the vector's.
    fn charge(&self) -> Result<(), QueryError> {
        let vector = self.entries.capacity() * std::mem::size_of::<Entry>();
        self.memory.resize(vector + self.heap)
    }

    fn sort_entries(&mut self) {
        let desc = &self.desc;
        self.entries.sort_by(|a, b| Sort::order(desc, a, b));
    }

    /// Keeps the first `limit` entries, and remembers the last of them: an event that sorts
    /// after it can never be among the first `limit`, and is dropped on arrival.
    fn cut(&mut self, limit: usize) {
        self.sort_entries();
        self.entries.truncate(limit);
        self.heap = self.entries.iter().map(Entry::heap).sum();
        self.cutoff = self.entries.last().map(|e| (e.keys.clone(), e.seq));
    }
}

impl Operator for Sort {
    fn push(&mut self, slice: Slice, _out: &mut Vec<Slice>) -> Result<Flow, QueryError> {
        if self.limit == Some(0) {
            return Ok(Flow::Done);
        }
        let c = self.fields(slice.schema());
        for (i, row) in slice.rows().enumerate() {
            let mut keys = Vec::with_capacity(self.keys.len());
            for f in &self.cache[c].1 {
                keys.push(match f {
                    None => None,
                    Some(src) => match src.read(slice.schema(), row)? {
                        crate::value::ValueRef::Null => None,
                        v => Some(v.to_owned()),
                    },
                });
            }
            let seq = match slice.id(i) {
                Some(id) if self.by_id => id,
                _ => self.seq,
            };
            self.seq += 1;
            if let Some((cut_keys, cut_seq)) = &self.cutoff {
                let o = Sort::order_keys(&self.desc, (&keys, seq), (cut_keys, *cut_seq));
                if o == Ordering::Greater {
                    continue;
                }
            }
            let entry = Entry {
                keys,
                seq,
                schema: slice.schema().clone(),
                row: row.to_vec(),
                id: slice.id(i),
            };
            self.heap += entry.heap();
            self.entries.push(entry);
            if let Some(limit) = self.limit {
                if self.entries.len() >= cut_at(limit) {
                    self.cut(limit);
                }
            }
            // With a limit too: `| head 100000000` would otherwise hold every event.
            self.charge()?;
        }
        if let Some(publish) = self.publish.clone() {
            publish.set(self.cutoff());
        }
        Ok(Flow::More)
    }

    fn finish(&mut self, out: &mut Vec<Slice>) -> Result<bool, QueryError> {
        let emitting = match &mut self.emitting {
            Some(e) => e,
            None => {
                self.sort_entries();
                if let Some(limit) = self.limit {
                    self.entries.truncate(limit);
                }
                // (The vector stays allocated, and charged, until all is emitted.)
                self.emitting
                    .insert(std::mem::take(&mut self.entries).into_iter())
            }
        };
        let chunk: Vec<Entry> = emitting.by_ref().take(EMIT_ROWS).collect();
        let more = emitting.len() > 0;
        self.heap -= chunk.iter().map(Entry::heap).sum::<usize>();
        emit_runs(chunk.into_iter().map(|e| (e.schema, e.row, e.id)), out);
        if !more {
            self.emitting = None;
            self.memory.resize(0)?;
        }
        Ok(more)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Field, Schema, Type};
    use crate::value::{RowEncoder, Value};

    fn slice(n: u64) -> Slice {
        let schema = Arc::new(Schema::new(
            "t".to_string(),
            vec![Field::new("x".to_string(), Type::Count)],
        ));
        let mut s = Slice::new(schema);
        for i in 0..n {
            s.push_with(Some(i), |buf| {
                let mut e = RowEncoder::new(buf);
                e.array(1);
                e.value(&Value::Count(n - i));
            });
        }
        s
    }

    fn budget(bytes: u64) -> Reservation {
        crate::query::memory::test_reservation(bytes, "sort x")
    }

    #[test]
    fn a_limit_larger_than_the_budget_is_an_error_not_a_buffer() {
        let mut out = Vec::new();
        let key = || vec![("x".to_string(), false)];
        let mut bounded = Sort::new(key(), Some(10), budget(256 << 10));
        bounded.push(slice(5000), &mut out).unwrap();
        let mut huge = Sort::new(key(), Some(1 << 40), budget(256 << 10));
        let e = huge
            .push(slice(5000), &mut out)
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("`sort x` needs more than")));
        let mut unlimited = Sort::new(key(), None, budget(256 << 10));
        assert!(unlimited.push(slice(5000), &mut out).is_err());
        bounded.finish(&mut out).unwrap();
        let ids: Vec<u64> = out.iter().flat_map(|s| s.ids().to_vec()).collect();
        assert_eq!(ids, (4990..5000).rev().collect::<Vec<u64>>());
        assert_eq!(bounded.memory.size(), 0, "given back once emitted");
    }
}
