//! `head N` (the first N events; done as soon as it has them) and `tail N` (the last N,
//! emitted at the end; it holds N events at most, their rows and queue charged to the
//! query's memory budget (`query/memory.rs`): more is an error that names the `tail`).

use std::collections::VecDeque;
use std::sync::Arc;

use super::super::physical::Cutoff;
use super::super::slice::Slice;
use super::held::{cut_at, emit_runs};
use super::{Flow, Operator};
use crate::query::memory::{alloc_bytes, Reservation};
use crate::query::QueryError;
use crate::types::SchemaRef;
use crate::value::Value;

/// The first `n` events.
pub(crate) struct Head {
    left: u64,
}

impl Head {
    pub fn new(n: u64) -> Head {
        Head { left: n }
    }
}

impl Operator for Head {
    fn push(&mut self, mut slice: Slice, out: &mut Vec<Slice>) -> Result<Flow, QueryError> {
        if self.left == 0 {
            return Ok(Flow::Done);
        }
        let take = (slice.len() as u64).min(self.left);
        slice.truncate(take as usize);
        self.left -= take;
        out.push(slice);
        Ok(if self.left == 0 {
            Flow::Done
        } else {
            Flow::More
        })
    }

    fn finish(&mut self, _out: &mut Vec<Slice>) -> Result<bool, QueryError> {
        Ok(false)
    }
}

/// The last `n` events.
pub(crate) struct Tail {
    n: usize,
    last: VecDeque<(SchemaRef, Vec<u8>, Option<u64>)>,
    /// The input comes in any order of batches ([`Tail::publish_to`]): the events with the
    /// largest IDs are kept, not the last to arrive.
    by_id: bool,
    /// Where it publishes its cut-off for the scan.
    publish: Option<Arc<Cutoff>>,
    /// Heap bytes of the rows in `last`.
    bytes: usize,
    /// What it holds, charged to the query's budget.
    memory: Reservation,
}

impl Tail {
    /// The last `n` events, charging what it holds to `memory`.
    pub fn new(n: u64, memory: Reservation) -> Tail {
        Tail {
            n: usize::try_from(n).unwrap_or(usize::MAX),
            last: VecDeque::new(),
            by_id: false,
            publish: None,
            bytes: 0,
            memory,
        }
    }

    /// Fed by the scan's top-N by `#id` (`physical/rules.rs`): batches come largest IDs
    /// first, and once it holds `n` events it publishes the smallest ID it keeps to
    /// `cutoff`, so that the scan reads no batch of smaller IDs.
    pub fn publish_to(&mut self, cutoff: Arc<Cutoff>) {
        self.by_id = true;
        self.publish = Some(cutoff);
    }

    /// The smallest ID kept, once it holds `n` events taken by ID.
    fn cutoff(&mut self) -> Option<(Option<Value>, u64)> {
        if !self.by_id || self.last.len() < self.n {
            return None;
        }
        self.cut();
        let id = self.last.front()?.2?;
        Some((Some(Value::Count(id)), id))
    }

    /// Charges the rows and the queue.
    fn charge(&self) -> Result<(), QueryError> {
        let queue = self.last.capacity() * std::mem::size_of::<(SchemaRef, Vec<u8>, Option<u64>)>();
        self.memory.resize(queue + self.bytes)
    }
}

impl Operator for Tail {
    fn push(&mut self, slice: Slice, _out: &mut Vec<Slice>) -> Result<Flow, QueryError> {
        if self.n == 0 {
            return Ok(Flow::Done);
        }
        if self.by_id {
            let flow = self.push_by_id(&slice)?;
            if let Some(publish) = self.publish.clone() {
                publish.set(self.cutoff());
            }
            return Ok(flow);
        }
        let skip = slice.len().saturating_sub(self.n);
        for i in skip..slice.len() {
            if self.last.len() == self.n {
                if let Some((_, row, _)) = self.last.pop_front() {
                    self.bytes -= alloc_bytes(row.capacity());
                }
            }
            let row = slice.row(i).to_vec();
            self.bytes += alloc_bytes(row.capacity());
            self.last
                .push_back((slice.schema().clone(), row, slice.id(i)));
            self.charge()?;
        }
        Ok(Flow::More)
    }

    fn finish(&mut self, out: &mut Vec<Slice>) -> Result<bool, QueryError> {
        if self.by_id {
            self.cut();
        }
        emit_runs(self.last.drain(..), out);
        self.last = VecDeque::new();
        self.bytes = 0;
        self.charge()?;
        Ok(false)
    }
}

impl Tail {
    /// [`Tail::push`] when batches come in any order: every event is taken, and the
    /// `n` with the largest IDs kept once `cut_at(n)` are held.
    fn push_by_id(&mut self, slice: &Slice) -> Result<Flow, QueryError> {
        for i in 0..slice.len() {
            let row = slice.row(i).to_vec();
            self.bytes += alloc_bytes(row.capacity());
            self.last
                .push_back((slice.schema().clone(), row, slice.id(i)));
            if self.last.len() >= cut_at(self.n) {
                self.cut();
            }
            self.charge()?;
        }
        Ok(Flow::More)
    }

    /// Keeps the `n` events with the largest IDs, in ID order.
    fn cut(&mut self) {
        let v = self.last.make_contiguous();
        v.sort_by_key(|e| e.2);
        let drop = self.last.len().saturating_sub(self.n);
        for (_, row, _) in self.last.drain(..drop) {
            self.bytes -= alloc_bytes(row.capacity());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Field, Schema, Type};
    use crate::value::{RowEncoder, Value};

    #[test]
    fn a_tail_larger_than_the_budget_is_an_error_not_a_buffer() {
        let schema = std::sync::Arc::new(Schema::new(
            "t".to_string(),
            vec![Field::new("x".to_string(), Type::String)],
        ));
        let mut s = Slice::new(schema);
        for i in 0..1000u64 {
            s.push_with(Some(i), |buf| {
                let mut e = RowEncoder::new(buf);
                e.array(1);
                e.value(&Value::String(vec![b'x'; 100]));
            });
        }
        let mut out = Vec::new();
        let budget = |b| crate::query::memory::test_reservation(b, "tail");
        let mut small = Tail::new(10, budget(64 << 10));
        small.push(s.clone(), &mut out).unwrap();
        small.push(s.clone(), &mut out).unwrap();
        small.finish(&mut out).unwrap();
        let ids: Vec<u64> = out.iter().flat_map(|s| s.ids().to_vec()).collect();
        assert_eq!(ids, (990..1000).collect::<Vec<u64>>());
        let mut huge = Tail::new(1 << 40, budget(64 << 10));
        let e = huge.push(s, &mut out).unwrap_err();
        assert!(e.to_string().contains("`tail` needs more than"), "{e}");
    }
}
