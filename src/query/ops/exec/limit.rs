//! `head N` (the first N events; done as soon as it has them) and `tail N` (the last N,
//! emitted at the end; it holds N events at most).

use std::collections::VecDeque;

use super::super::slice::Slice;
use super::{Flow, Operator};
use crate::query::QueryError;
use crate::types::SchemaRef;

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

    fn finish(&mut self, _out: &mut Vec<Slice>) -> Result<(), QueryError> {
        Ok(())
    }
}

/// The last `n` events.
pub(crate) struct Tail {
    n: usize,
    last: VecDeque<(SchemaRef, Vec<u8>, Option<u64>)>,
}

impl Tail {
    pub fn new(n: u64) -> Tail {
        Tail {
            n: usize::try_from(n).unwrap_or(usize::MAX),
            last: VecDeque::new(),
        }
    }
}

impl Operator for Tail {
    fn push(&mut self, slice: Slice, _out: &mut Vec<Slice>) -> Result<Flow, QueryError> {
        if self.n == 0 {
            return Ok(Flow::Done);
        }
        let skip = slice.len().saturating_sub(self.n);
        for i in skip..slice.len() {
            if self.last.len() == self.n {
                self.last.pop_front();
            }
            self.last
                .push_back((slice.schema().clone(), slice.row(i).to_vec(), slice.id(i)));
        }
        Ok(Flow::More)
    }

    fn finish(&mut self, out: &mut Vec<Slice>) -> Result<(), QueryError> {
        emit_runs(self.last.drain(..), out);
        Ok(())
    }
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
