//! The pipeline's `query` transform: a chain of operators over the batches of its inputs.
//!
//! ```toml
//! [transforms.dns_only]
//! type = "query"
//! inputs = ["logs"]
//! query = "where #type == \"zeek.dns\" | select ts, uid, query, answers"
//! ```
//!
//! Streaming operators (`where`, `select`, `drop`, `head`) emit each batch's results as the
//! batch passes; blocking ones (`sort`, `tail`, `summarize`, `top`, `rare`) emit at the end of
//! the input, so a pipeline whose source never ends (`follow = true`) refuses them (see
//! `PipelineSpec::validate`). Checkpoints of followed or resumed files (see
//! [`crate::checkpoint`]) hold after what was read whatever the operators keep: a streaming
//! chain passes each batch's checkpoints on with its results; a blocking one holds them
//! until it emits, so that a restart never skips lines whose results were not written.

use serde::Deserialize;

use super::exec::Stages;
use super::plan::Chain;
use super::slice::Slice;
use super::Flow;
use crate::batch::Batch;
use crate::checkpoint::{FileCheckpoint, Mark};
use crate::query::QueryError;
use crate::setting::{InvalidSetting, Problem};

/// `[transforms.NAME] type = "query"`: the chain of operators (`query`, required).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueryConfig {
    /// The chain, e.g. `"where id.resp_p == 53 | select ts, query"`.
    pub query: String,
}

impl QueryConfig {
    /// The key of [`QueryConfig::query`] in a pipeline file.
    pub const KEY: &'static str = "query";

    /// A transform of `query`.
    pub fn new(query: impl Into<String>) -> QueryConfig {
        QueryConfig {
            query: query.into(),
        }
    }

    /// The parsed chain; an empty or malformed one is refused (shown with a caret).
    pub fn chain(&self) -> Result<Chain, InvalidSetting> {
        if self.query.trim().is_empty() {
            return Err(InvalidSetting {
                key: Self::KEY,
                problem: Problem::Missing {
                    hint: "the operators, e.g. query = \"where id.resp_p == 53 | select ts, uid\""
                        .into(),
                },
            });
        }
        Chain::parse(&self.query).map_err(|e| InvalidSetting {
            key: Self::KEY,
            problem: Problem::Expression(e.to_string()),
        })
    }

    /// Refuses an empty or malformed chain.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        self.chain().map(|_| ())
    }

    /// The transform.
    pub fn build(&self) -> Result<QueryTransform, InvalidSetting> {
        let chain = self.chain()?;
        let blocking = chain.blocking_operator().is_some();
        // The leading expression runs as a `where` here: there is no archive search.
        let stages = chain.stages_with_scan().map_err(|e| InvalidSetting {
            key: Self::KEY,
            problem: Problem::Expression(e.to_string()),
        })?;
        Ok(QueryTransform {
            stages,
            blocking,
            held: Vec::new(),
        })
    }
}

/// Runs a chain over batches (see [`QueryConfig`]).
pub struct QueryTransform {
    stages: Stages,
    blocking: bool,
    /// Checkpoints held until a blocking chain emits (the last one per file).
    held: Vec<FileCheckpoint>,
}

impl std::fmt::Debug for QueryTransform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryTransform")
            .field("blocking", &self.blocking)
            .finish_non_exhaustive()
    }
}

/// A slice as a batch (without checkpoints), its `ts` range from its `ts` field.
fn to_batch(slice: &Slice) -> Option<Batch> {
    let schema = slice.schema().clone();
    let ts_index = schema.ts_index();
    let mut data = Vec::new();
    let mut offsets = Vec::with_capacity(slice.len());
    let mut ts: Option<(i64, i64)> = None;
    for row in slice.rows() {
        if let Some(i) = ts_index {
            if let Ok(crate::value::ValueRef::Time(t)) =
                super::slice::read_field(row, schema.fields.len(), i, &crate::types::Type::Time)
            {
                ts = Some(ts.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
            }
        }
        offsets.push(data.len());
        data.extend_from_slice(row);
    }
    Batch::from_parts(schema, data, offsets, ts)
}

impl QueryTransform {
    /// The batches that come out of one batch of input.
    pub fn apply(&mut self, batch: Batch) -> Result<Vec<Batch>, QueryError> {
        let marks = Mark::last_per_file(batch.marks());
        let mut out = Vec::new();
        if !batch.is_empty() && self.stages.wants_input() {
            let mut slice = Slice::new(batch.schema().clone());
            for row in batch.rows() {
                slice.push(row, None);
            }
            self.stages.push(slice, &mut |s| {
                out.extend(to_batch(&s));
                Ok(Flow::More)
            })?;
        }
        Ok(self.with_marks(out, marks, false))
    }

    /// The batches that come out at the end of the input.
    pub fn finish(&mut self) -> Result<Vec<Batch>, QueryError> {
        let mut out = Vec::new();
        self.stages.finish(&mut |s| {
            out.extend(to_batch(&s));
            Ok(Flow::More)
        })?;
        Ok(self.with_marks(out, Vec::new(), true))
    }

    /// Attaches checkpoints to the last batch of `out` (or a batch of their own): a
    /// streaming chain's at once, a blocking chain's at its end.
    fn with_marks(
        &mut self,
        mut out: Vec<Batch>,
        marks: Vec<FileCheckpoint>,
        end: bool,
    ) -> Vec<Batch> {
        for m in marks {
            match self.held.iter_mut().find(|c| c.id == m.id) {
                Some(c) => *c = m,
                None => self.held.push(m),
            }
        }
        if self.blocking && !end {
            return out;
        }
        let marks = std::mem::take(&mut self.held);
        if marks.is_empty() {
            return out;
        }
        match out.last_mut() {
            Some(last) => {
                let n = last.len();
                last.set_marks(
                    marks
                        .into_iter()
                        .map(|end| Mark::after_rows(n, end))
                        .collect(),
                );
            }
            None => out.push(crate::checkpoint::carrier(marks)),
        }
        out
    }
}
