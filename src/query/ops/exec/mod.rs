//! The operators: each takes [`Slice`]s and emits slices ([`Operator`]); a [`Stages`] runs a
//! linear chain of them, pushing each slice through, and stops its input as soon as a stage
//! wants no more (`head` has its events: nothing before it matters any more).

mod filter;
mod held;
mod limit;
mod project;
mod sort;
mod summarize;

pub(crate) use filter::Where;
pub(crate) use limit::{Head, Tail};
pub(crate) use project::Project;
pub(crate) use sort::Sort;
pub(crate) use summarize::Summarize;
pub use summarize::MAX_GROUPS;

use super::partial::Partial;
use super::slice::Slice;
use crate::query::QueryError;
use crate::types::SchemaRef;

/// Whether an operator (or the output) wants more input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Send more.
    More,
    /// Done: nothing more changes the result.
    Done,
}

/// One operator of a chain.
pub(crate) trait Operator: Send {
    /// Takes one slice; appends what it emits now to `out`.
    fn push(&mut self, slice: Slice, out: &mut Vec<Slice>) -> Result<Flow, QueryError>;
    /// The input ended: appends what is left to emit, or a part of it: returns `true` when
    /// more is left (it is called again once `out` has been passed on).
    fn finish(&mut self, out: &mut Vec<Slice>) -> Result<bool, QueryError>;
    /// Takes the groups of one batch of `schema`, which the scan's workers aggregated into
    /// this operator's groups (the plan's partial aggregation: `physical/rules.rs`).
    fn merge_partial(&mut self, _schema: &SchemaRef, _partial: Partial) -> Result<(), QueryError> {
        Err(QueryError::Limit(
            "internal: batch groups given to an operator that aggregates nothing".into(),
        ))
    }
}

/// A linear chain of operators and the output at its end.
pub(crate) struct Stages {
    ops: Vec<Box<dyn Operator>>,
    /// The last stage that is done (its input is no longer needed), if any.
    done: Option<usize>,
    /// The output wants no more.
    closed: bool,
}

impl Stages {
    pub fn new(ops: Vec<Box<dyn Operator>>) -> Stages {
        Stages {
            ops,
            done: None,
            closed: false,
        }
    }

    /// Whether more input can change the output.
    pub fn wants_input(&self) -> bool {
        !self.closed && self.done.is_none()
    }

    /// Pushes `slice` into stage `from` (the output past the last stage).
    fn push_from(
        &mut self,
        from: usize,
        slice: Slice,
        output: &mut dyn FnMut(Slice) -> Result<Flow, QueryError>,
    ) -> Result<(), QueryError> {
        if self.closed || self.done.is_some_and(|d| from <= d) {
            return Ok(());
        }
        let Some(op) = self.ops.get_mut(from) else {
            if output(slice)? == Flow::Done {
                self.closed = true;
            }
            return Ok(());
        };
        let mut out = Vec::new();
        let flow = op.push(slice, &mut out)?;
        if flow == Flow::Done {
            self.done = Some(self.done.map_or(from, |d| d.max(from)));
        }
        for s in out {
            self.push_from(from + 1, s, output)?;
        }
        Ok(())
    }

    /// Gives the first stage the groups of one batch, aggregated by the scan's workers (in
    /// ID order among the slices).
    pub fn merge_partial(
        &mut self,
        schema: &SchemaRef,
        partial: Partial,
    ) -> Result<(), QueryError> {
        if !self.wants_input() {
            return Ok(());
        }
        match self.ops.first_mut() {
            Some(op) => op.merge_partial(schema, partial),
            None => Ok(()),
        }
    }

    /// Pushes one slice of input.
    pub fn push(
        &mut self,
        slice: Slice,
        output: &mut dyn FnMut(Slice) -> Result<Flow, QueryError>,
    ) -> Result<(), QueryError> {
        if slice.is_empty() {
            return Ok(());
        }
        self.push_from(0, slice, output)
    }

    /// Ends the input: each stage from the last done one on emits what it holds (what
    /// reaches a stage that is done by then is dropped).
    pub fn finish(
        &mut self,
        output: &mut dyn FnMut(Slice) -> Result<Flow, QueryError>,
    ) -> Result<(), QueryError> {
        let start = self.done.unwrap_or(0);
        for k in start..self.ops.len() {
            if self.closed {
                break;
            }
            loop {
                let mut out = Vec::new();
                let more = self.ops[k].finish(&mut out)?;
                for s in out {
                    self.push_from(k + 1, s, output)?;
                }
                // (A later stage that is done takes nothing more.)
                if !more || self.closed || self.done.is_some_and(|d| d > k) {
                    break;
                }
            }
        }
        Ok(())
    }
}
