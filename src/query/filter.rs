//! The pipeline's `filter` transform: keeps the events of each batch that match an
//! expression, drops batches left empty.
//!
//! ```toml
//! [transforms.quiet]
//! type = "filter"
//! inputs = ["logs"]
//! where = "#type != \"zeek.dns\" || rcode_name != \"NOERROR\""
//! ```
//!
//! Batches arrive with any schema, so a field comparison that is ill-typed for a schema is
//! simply false for it (there is no archive to check against); type and meta extractors
//! with impossible literals are refused by [`FilterConfig::validate`], and so is `#id` (the
//! events of a pipeline have no IDs yet).

use serde::Deserialize;

use super::search::Programs;
use super::{ExprError, Extractor, Meta, Query};
use crate::batch::Batch;
use crate::setting::{InvalidSetting, Problem};
use crate::value::DecodeError;

/// `[transforms.NAME] type = "filter"`: the expression events must match.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FilterConfig {
    /// The expression (required), e.g. `"id.resp_p == 53 && rcode_name != \"NOERROR\""`.
    #[serde(rename = "where")]
    pub expr: String,
}

impl FilterConfig {
    /// The key of [`FilterConfig::expr`] in a pipeline file.
    pub const KEY: &'static str = "where";

    /// A filter on `expr`.
    pub fn new(expr: impl Into<String>) -> FilterConfig {
        FilterConfig { expr: expr.into() }
    }

    /// Refuses an empty or malformed expression (the message shows it with a caret).
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        self.query().map(|_| ())
    }

    fn query(&self) -> Result<Query, InvalidSetting> {
        if self.expr.trim().is_empty() {
            return Err(InvalidSetting {
                key: Self::KEY,
                problem: Problem::Missing {
                    hint: "the expression events must match, e.g. where = \"id.resp_p == 53\""
                        .into(),
                },
            });
        }
        let q = Query::parse(&self.expr).map_err(|e: ExprError| InvalidSetting {
            key: Self::KEY,
            problem: Problem::Expression(e.to_string()),
        })?;
        // A pipeline's events have no IDs yet: the archive gives them.
        let id = q.expr().and_then(|e| {
            e.predicates()
                .into_iter()
                .find(|p| p.extractor == Extractor::Meta(Meta::Id))
                .map(|p| p.extractor_span.start)
        });
        if let Some(pos) = id {
            let e = ExprError::new(
                &self.expr,
                pos,
                "#id is an event's ID in an archive; the events of a pipeline have none yet",
            );
            return Err(InvalidSetting {
                key: Self::KEY,
                problem: Problem::Expression(e.to_string()),
            });
        }
        Ok(q)
    }

    /// The transform.
    pub fn build(&self) -> Result<Filter, InvalidSetting> {
        Ok(Filter {
            query: self.query()?,
            programs: Programs::default(),
        })
    }
}

/// Keeps the matching events of batches (see [`FilterConfig`]).
#[derive(Debug)]
pub struct Filter {
    query: Query,
    programs: Programs,
}

impl Filter {
    /// A filter for a parsed query.
    pub fn new(query: Query) -> Filter {
        Filter {
            query,
            programs: Programs::default(),
        }
    }

    /// The matching events of `batch` as a batch (`None` when none match); its `ts` range is
    /// that of the events kept.
    pub fn apply(&mut self, batch: Batch) -> Result<Option<Batch>, DecodeError> {
        if batch.is_empty() {
            // Checkpoints only (see `crate::checkpoint`): passed on.
            return Ok((!batch.marks().is_empty()).then_some(batch));
        }
        let p = self.programs.get(&self.query, batch.schema());
        match p.constant() {
            Some(true) => return Ok((!batch.is_empty()).then_some(batch)),
            Some(false) => return Ok(checkpoints_of(&batch)),
            None => {}
        }
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        let mut ts: Option<(i64, i64)> = None;
        let mut all = true;
        for row in batch.rows() {
            if !p.matches(row)? {
                all = false;
                continue;
            }
            if let Some(t) = p.row_ts(row)? {
                ts = Some(ts.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
            }
            offsets.push(data.len());
            data.extend_from_slice(row);
        }
        if all {
            return Ok((!batch.is_empty()).then_some(batch));
        }
        if offsets.is_empty() {
            return Ok(checkpoints_of(&batch));
        }
        let out = Batch::from_parts(batch.schema().clone(), data, offsets, ts);
        // Checkpoints of followed files hold after the batch's last row whatever was dropped.
        Ok(out.map(|mut out| {
            let n = out.len();
            let marks = crate::checkpoint::Mark::last_per_file(batch.marks())
                .into_iter()
                .map(|end| crate::checkpoint::Mark::after_rows(n, end))
                .collect();
            out.set_marks(marks);
            out
        }))
    }
}

/// A batch none of whose rows is kept: the checkpoints it carries, in a batch without rows
/// (they hold after whatever was dropped), or nothing.
fn checkpoints_of(batch: &Batch) -> Option<Batch> {
    let marks = crate::checkpoint::Mark::last_per_file(batch.marks());
    (!marks.is_empty()).then(|| crate::checkpoint::carrier(marks))
}
