//! A parsed chain ([`Chain`]) and its plan: the leading `where` (or expression) becomes the
//! archive search, so that it is pruned and evaluated on all cores; `sort ... | head N` keeps
//! only `N` events; `top F N` is `summarize count() by F | sort count desc, F | head N` over
//! the events where `F` is set (`rare` sorts ascending).

use super::exec::{Flow, Stages};
use super::explain::Explain;
use super::physical::{self, Plan};
use super::slice::Slice;
use super::syntax::{self, parse_where, OpSpec};
use crate::query::memory::{MemoryBudget, MemoryLimit};
use crate::query::{ExprError, Query, QueryError, Search, SearchStats};
use crate::store::Archive;

/// An expression followed by operators (`EXPR | OP | OP`), or operators alone.
#[derive(Debug, Clone)]
pub struct Chain {
    text: String,
    /// The search that feeds the operators.
    scan: Query,
    ops: Vec<OpSpec>,
    /// The memory budget of each run (`query/memory.rs`).
    memory: MemoryLimit,
}

/// What a run of a chain touched.
#[derive(Debug, Clone, Default)]
pub struct ChainStats {
    /// The search's statistics.
    pub search: SearchStats,
    /// Events that came out of the chain.
    pub emitted: u64,
    /// The expression's warnings (see [`crate::query::Search::warnings`]).
    pub warnings: Vec<String>,
    /// Stored batches decoded to read whole the events that came out of a chain that reads
    /// only some fields (late materialization): at most one per batch and group of
    /// 4,096 events (`MATERIALIZE_ROWS`).
    pub batches_materialized: u64,
    /// The most bytes the operators held at once, as charged to the memory budget
    /// (`query/memory.rs`).
    pub memory_peak: u64,
}

impl Chain {
    /// Parses `EXPR | OP ARGS | ...` (see [`super`] for the operators).
    pub fn parse(text: &str) -> Result<Chain, ExprError> {
        let parts = syntax::split(text)?;
        let mut ops = Vec::new();
        for (k, (part, at)) in parts.iter().enumerate() {
            if part.trim().is_empty() {
                let what = if k == 0 {
                    "an expression or an operator before `|`"
                } else {
                    "an operator after `|`"
                };
                return Err(ExprError::new(text, *at, format!("expected {what}")));
            }
            if k == 0 && !syntax::starts_with_operator(part) {
                ops.push(OpSpec::Where {
                    text: part.to_string(),
                    pos: *at,
                });
            } else {
                ops.push(syntax::parse_op(text, part, *at)?);
            }
        }
        // The leading `where`s (and the expression) become one search: pruned and
        // evaluated on all cores, and an aggregation after them is aggregated where the
        // batches are.
        let mut leading: Vec<String> = Vec::new();
        while let Some(OpSpec::Where { text: w, pos }) = ops.first() {
            parse_where(text, w, *pos)?;
            leading.push(w.trim().to_string());
            ops.remove(0);
        }
        let scan = match leading.as_slice() {
            [] => Query::all(),
            [one] => parse_where(text, one, 0)?,
            many => {
                let both = many
                    .iter()
                    .map(|w| format!("({w})"))
                    .collect::<Vec<_>>()
                    .join(" && ");
                parse_where(text, &both, 0)?
            }
        };
        // The other `where`s parse now, so that their errors come before any work.
        for op in &ops {
            if let OpSpec::Where { text: w, pos } = op {
                parse_where(text, w, *pos)?;
            }
        }
        Ok(Chain {
            text: text.to_string(),
            scan,
            ops,
            memory: MemoryLimit::default(),
        })
    }

    /// The chain of every event: no expression, no operator (what an empty query means).
    pub fn all() -> Chain {
        Chain {
            text: String::new(),
            scan: Query::all(),
            ops: Vec::new(),
            memory: MemoryLimit::default(),
        }
    }

    /// The chain with each run's operators holding at most `limit` together (by default
    /// [`crate::query::memory::default_query_memory`], see [`crate::query::memory`]).
    pub fn with_memory(mut self, limit: MemoryLimit) -> Chain {
        self.memory = limit;
        self
    }

    /// The chain as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The search that feeds the operators.
    pub fn scan(&self) -> &Query {
        &self.scan
    }

    /// Whether there are operators after the search.
    pub fn has_operators(&self) -> bool {
        !self.ops.is_empty()
    }

    /// Whether some operator emits only at the end of its input (`sort`, `tail`,
    /// `summarize`, `top`, `rare`): such a chain never emits on an input that never ends.
    pub fn blocking_operator(&self) -> Option<&'static str> {
        self.ops.iter().find_map(|op| match op {
            OpSpec::Sort(_) => Some("sort"),
            OpSpec::Tail(_) => Some("tail"),
            OpSpec::Summarize { .. } => Some("summarize"),
            OpSpec::Top {
                descending: true, ..
            } => Some("top"),
            OpSpec::Top { .. } => Some("rare"),
            _ => None,
        })
    }

    /// The field names that operators read of the searched events (up to the first that
    /// makes events of its own), with their positions.
    fn names_read(&self) -> Vec<(&str, usize)> {
        let mut out = Vec::new();
        for op in &self.ops {
            match op {
                OpSpec::Select(f) | OpSpec::Drop(f) => {
                    out.extend(f.iter().map(|f| (f.name.as_str(), f.pos)));
                    if matches!(op, OpSpec::Select(_)) {
                        break;
                    }
                }
                OpSpec::Sort(keys) => {
                    out.extend(keys.iter().map(|(f, _)| (f.name.as_str(), f.pos)))
                }
                OpSpec::Summarize { aggs, by, .. } => {
                    out.extend(by.iter().map(|f| (f.name.as_str(), f.pos)));
                    out.extend(
                        aggs.iter()
                            .filter_map(|a| Some((a.field.as_deref()?, a.field_pos))),
                    );
                    break;
                }
                OpSpec::Top { field, .. } => {
                    out.push((field.name.as_str(), field.pos));
                    break;
                }
                OpSpec::Where { .. } | OpSpec::Head(_) | OpSpec::Tail(_) => {}
            }
        }
        out.retain(|(n, _)| *n != "#type" && *n != "#id");
        out
    }

    /// The problems of the chain's names against `schemas` (those a pipeline's sources can
    /// produce): each expression's (see [`crate::query::lint`]), and operator fields no
    /// schema has, with the nearest names. For `weir run --check`.
    pub fn lint(&self, schemas: &[crate::types::SchemaRef]) -> Vec<String> {
        let mut out = Vec::new();
        if !self.scan.text().is_empty() {
            out.extend(crate::query::lint(self.scan.text(), schemas));
        }
        for op in &self.ops {
            if let OpSpec::Where { text, .. } = op {
                out.extend(crate::query::lint(text.trim(), schemas));
            }
        }
        if schemas.is_empty() {
            return out;
        }
        for (name, pos) in self.names_read() {
            let known = schemas.iter().any(|s| {
                !super::slice::Fields::resolve_record(s, name)
                    .indices
                    .is_empty()
            });
            if !known {
                if let Some(e) = crate::query::names::unknown_field_in(
                    &self.text,
                    pos,
                    name,
                    schemas,
                    crate::query::names::Scope::Sources,
                ) {
                    out.push(e.to_string());
                }
            }
        }
        out
    }

    /// Refuses a field name that no schema of the archive has (a typo would give a silent
    /// empty answer), with the nearest names; an empty archive refuses nothing. Returns a
    /// warning for a field of the archive that no schema the expression keeps has.
    fn check_names(&self, archive: &Archive) -> Result<Vec<String>, QueryError> {
        self.check_names_after_aggregation()?;
        let names = self.names_read();
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let mut schemas: Vec<crate::types::SchemaRef> = Vec::new();
        for entry in &archive.catalog().segments {
            // A damaged segment is reported when the search reaches it.
            let Ok(seg) = archive.segment(entry) else {
                continue;
            };
            for s in seg.schemas() {
                if !schemas.iter().any(|x| **x == **s) {
                    schemas.push(s.clone());
                }
            }
        }
        let next = archive.catalog().next_id;
        for b in archive.scan_range(next..u64::MAX).flatten() {
            if !schemas.iter().any(|x| **x == **b.schema()) {
                schemas.push(b.schema().clone());
            }
        }
        if schemas.is_empty() {
            return Ok(Vec::new());
        }
        for (name, pos) in names {
            let known = schemas.iter().any(|s| {
                !super::slice::Fields::resolve_record(s, name)
                    .indices
                    .is_empty()
            });
            if known {
                continue;
            }
            if let Some(e) = crate::query::unknown_field(&self.text, pos, name, &schemas) {
                return Err(e.into());
            }
        }
        // A field of the archive that no schema the expression keeps has: the operator
        // reads nothing (`#type == "zeek.dns" | top orig_bytes`, a field of conn). A
        // warning, not an error: the empty answer is the language's (as for a field
        // compared in a schema without it).
        let kept: Vec<&crate::types::SchemaRef> = schemas
            .iter()
            .filter(|s| self.scan.bind(s).constant() != Some(false))
            .collect();
        let mut warnings = Vec::new();
        if kept.is_empty() || kept.len() == schemas.len() {
            return Ok(warnings);
        }
        for (name, pos) in self.names_read() {
            if kept.iter().any(|s| {
                !super::slice::Fields::resolve_record(s, name)
                    .indices
                    .is_empty()
            }) {
                continue;
            }
            let owners: Vec<&str> = schemas
                .iter()
                .filter(|s| {
                    !super::slice::Fields::resolve_record(s, name)
                        .indices
                        .is_empty()
                })
                .map(|s| s.name.as_str())
                .take(crate::query::MAX_SUGGESTIONS)
                .collect();
            let names: Vec<&str> = kept.iter().map(|s| s.name.as_str()).collect();
            let column = self.text.get(..pos).map_or(0, |s| s.chars().count()) + 1;
            warnings.push(format!(
                "`{name}` at column {column} reads nothing: no field `{name}` in {}, the schemas `{}` keeps; it is a field of {}",
                names.join(", "),
                self.scan.text(),
                owners.join(", ")
            ));
        }
        Ok(warnings)
    }

    /// Refuses a field name read after the first operator that makes events of its own
    /// (`summarize`, `top`) that those events lack: `summarize count() by proto | sort
    /// count` would sort by nothing (the field is `count()`). Needs no archive: the fields
    /// of those events follow from the operators alone.
    fn check_names_after_aggregation(&self) -> Result<(), ExprError> {
        // The fields of the events at this point, and the operator that made them.
        let mut made: Option<(Vec<String>, String)> = None;
        for op in &self.ops {
            let read: Vec<(&str, usize)> = match op {
                OpSpec::Select(f) | OpSpec::Drop(f) => {
                    f.iter().map(|f| (f.name.as_str(), f.pos)).collect()
                }
                OpSpec::Sort(keys) => keys.iter().map(|(f, _)| (f.name.as_str(), f.pos)).collect(),
                OpSpec::Summarize { aggs, by, .. } => by
                    .iter()
                    .map(|f| (f.name.as_str(), f.pos))
                    .chain(
                        aggs.iter()
                            .filter_map(|a| Some((a.field.as_deref()?, a.field_pos))),
                    )
                    .collect(),
                OpSpec::Top { field, .. } => vec![(field.name.as_str(), field.pos)],
                OpSpec::Where { .. } | OpSpec::Head(_) | OpSpec::Tail(_) => Vec::new(),
            };
            if let Some((fields, after)) = &made {
                let schema = crate::types::Schema::new(
                    "weir.made",
                    fields
                        .iter()
                        .map(|f| crate::types::Field::new(f.clone(), crate::types::Type::String))
                        .collect(),
                )
                .into_shared();
                for (name, pos) in read {
                    if name.starts_with('#')
                        || !super::slice::Fields::resolve_record(&schema, name)
                            .indices
                            .is_empty()
                    {
                        continue;
                    }
                    return Err(crate::query::names::unknown_output_field(
                        &self.text, pos, name, fields, after,
                    ));
                }
            }
            let names = |f: &[syntax::FieldSpec]| f.iter().map(|f| f.name.clone()).collect();
            match op {
                OpSpec::Summarize { aggs, by, .. } => {
                    let mut fields: Vec<String> = names(by);
                    fields.extend(aggs.iter().map(|a| a.name.clone()));
                    made = Some((fields, op.describe()));
                }
                OpSpec::Top { field, .. } => {
                    made = Some((vec![field.name.clone(), "count".into()], op.describe()));
                }
                OpSpec::Select(f) => {
                    if let Some((fields, _)) = &mut made {
                        *fields = names(f);
                    }
                }
                OpSpec::Drop(f) => {
                    if let Some((fields, _)) = &mut made {
                        fields.retain(|x| !f.iter().any(|d| &d.name == x));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The operators, with the leading expression as a `where` (for input that is no
    /// archive search: a pipeline's batches): the plan as written.
    pub(crate) fn stages_with_scan(&self) -> Result<Stages, ExprError> {
        let plan = physical::written(&self.text, &self.scan, &self.ops)?;
        Ok(plan.operators(&MemoryBudget::new(self.memory)).0)
    }

    /// The physical plan of the chain over an archive: the scan spec and the operators,
    /// with the pushdown rules applied (`physical/`).
    pub(crate) fn plan(&self) -> Result<Plan, ExprError> {
        physical::optimized(&self.text, &self.scan, &self.ops)
    }

    /// What the chain will do over `archive`, without running it: its plan and what the
    /// catalog and the sketches keep of the archive for its predicate.
    pub fn explain(&self, archive: &Archive) -> Result<Explain, QueryError> {
        let plan = self.plan()?;
        let mut search = plan.scan.predicate.search(archive)?;
        let mut warnings = search.warnings().to_vec();
        warnings.extend(self.check_names(archive)?);
        let pruning = search.pruning();
        Ok(Explain {
            plan,
            pruning,
            warnings,
        })
    }

    /// Runs the chain over `archive`: `output` gets each slice that comes out (and says
    /// whether it wants more); `damaged` gets each damaged batch's error (the search goes
    /// on). Stops reading as soon as the rest cannot change the output.
    pub fn run(
        &self,
        archive: &Archive,
        output: &mut dyn FnMut(Slice) -> Result<Flow, QueryError>,
        damaged: &mut dyn FnMut(QueryError),
    ) -> Result<ChainStats, QueryError> {
        let budget = MemoryBudget::new(self.memory);
        let plan = self.plan()?;
        let (mut stages, aggregate) = plan.operators(&budget);
        let mut emitted = 0u64;
        let late = plan.scan.late;
        // Late materialization: the few events that come out, read whole by ID, gathered
        // into groups so that each stored batch is decoded once per group, not once per
        // event.
        let mut pending: Vec<Slice> = Vec::new();
        let mut pending_rows = 0usize;
        let materialized = std::cell::Cell::new(0u64);
        let flush = |pending: &mut Vec<Slice>,
                     output: &mut dyn FnMut(Slice) -> Result<Flow, QueryError>|
         -> Result<Flow, QueryError> {
            let (slices, batches) = materialize(archive, &std::mem::take(pending))?;
            materialized.set(materialized.get() + batches);
            for s in slices {
                if output(s)? == Flow::Done {
                    return Ok(Flow::Done);
                }
            }
            Ok(Flow::More)
        };
        let mut finished = false;
        let mut out = |s: Slice| {
            emitted += s.len() as u64;
            if !late {
                return output(s);
            }
            if finished {
                return Ok(Flow::Done);
            }
            pending_rows += s.len();
            pending.push(s);
            if pending_rows < MATERIALIZE_ROWS {
                return Ok(Flow::More);
            }
            pending_rows = 0;
            let flow = flush(&mut pending, output)?;
            finished = flow == Flow::Done;
            Ok(flow)
        };
        let mut search = Search::planned(archive, &plan.scan, aggregate)?;
        let mut warnings = search.warnings().to_vec();
        warnings.extend(self.check_names(archive)?);
        while stages.wants_input() {
            let Some(hits) = search.next() else { break };
            let mut hits = match hits {
                Ok(h) => h,
                Err(e) => {
                    damaged(e);
                    continue;
                }
            };
            if let Some(partial) = hits.take_partial() {
                stages.merge_partial(hits.schema(), partial)?;
                continue;
            }
            let mut slice = Slice::new(hits.schema().clone());
            for (row, id) in hits.rows().zip(hits.ids()) {
                slice.push(row, Some(id));
            }
            stages.push(slice, &mut out)?;
        }
        stages.finish(&mut out)?;
        if !finished && !pending.is_empty() {
            flush(&mut pending, output)?;
        }
        Ok(ChainStats {
            search: search.stats().clone(),
            emitted,
            warnings,
            batches_materialized: materialized.get(),
            memory_peak: budget.peak(),
        })
    }
}

impl Chain {
    /// [`Chain::run`] with a limit and a writer: `write` gets each slice that comes out with
    /// how many of its events to take (at most `limit` in all; `None`: no limit), and the run
    /// stops at the limit, when `write` says [`Flow::Done`], or at its first error, which is
    /// returned beside the statistics (the run itself succeeded). `damaged` gets each damaged
    /// batch's error (the search goes on).
    pub fn run_limited<E>(
        &self,
        archive: &Archive,
        limit: Option<u64>,
        mut write: impl FnMut(Slice, usize) -> Result<Flow, E>,
        damaged: &mut dyn FnMut(QueryError),
    ) -> Result<(ChainStats, Option<E>), QueryError> {
        let mut left = limit.unwrap_or(u64::MAX);
        if left == 0 {
            return Ok((ChainStats::default(), None));
        }
        let mut failed: Option<E> = None;
        let stats = self.run(
            archive,
            &mut |slice| {
                let take = (slice.len() as u64).min(left) as usize;
                left -= take as u64;
                match write(slice, take) {
                    Err(e) => {
                        failed = Some(e);
                        Ok(Flow::Done)
                    }
                    Ok(Flow::Done) => Ok(Flow::Done),
                    Ok(Flow::More) => Ok(if left == 0 { Flow::Done } else { Flow::More }),
                }
            },
            damaged,
        )?;
        Ok((stats, failed))
    }
}

/// How many events late materialization gathers before it reads them: each stored batch
/// they come from is decoded once per group.
const MATERIALIZE_ROWS: usize = 4096;

/// The events of `slices` read whole from `archive` by their IDs, in the same order, one
/// slice per run of one schema (a slice without IDs is returned as it is). Also returns how
/// many batches were decoded.
///
/// The IDs, ascending, are cut into runs, at most one per core, where they lie at least a
/// full batch apart ([`runs_of`]): this thread reads the first ([`read_rows`]), a thread of
/// its own each of the others. The rows of `sort ts desc | head 10` on W1000 come from ten
/// batches, and decoding them one after the other was 40% of that query's CPU; IDs close
/// together (G's ten latest events, in one batch) stay one run, read here. (A batch larger
/// than the default could still hold IDs of two runs: both decode it.)
fn materialize(archive: &Archive, slices: &[Slice]) -> Result<(Vec<Slice>, u64), QueryError> {
    let with_ids = |s: &Slice| s.ids().len() == s.len();
    let mut ids: Vec<u64> = slices
        .iter()
        .filter(|s| with_ids(s))
        .flat_map(|s| s.ids().iter().copied())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cuts = runs_of(&ids, threads);
    let runs = crate::pool::map_scoped(cuts.windows(2).map(|w| &ids[w[0]..w[1]]), |run| {
        read_rows(archive, run)
    })
    .into_iter()
    .collect::<Result<Vec<Rows>, QueryError>>()?;
    let decoded = runs.iter().map(|r| r.decoded).sum();
    // The row of `id`, if it was found (the runs are in ID order, and so are their rows).
    let row_of = |id: u64| -> Option<(&crate::types::SchemaRef, &[u8])> {
        let run = runs
            .iter()
            .rev()
            .find(|r| r.rows.first().is_some_and(|f| f.0 <= id))?;
        let at = run.rows.binary_search_by_key(&id, |r| r.0).ok()?;
        let (_, schema, bytes) = &run.rows[at];
        Some((&run.schemas[*schema], &run.data[bytes.clone()]))
    };
    let mut out: Vec<Slice> = Vec::new();
    for s in slices {
        if !with_ids(s) {
            out.push(s.clone());
            continue;
        }
        for &id in s.ids() {
            // (An ID erased since the search saw it is not found.)
            let Some((schema, row)) = row_of(id) else {
                continue;
            };
            match out.last_mut() {
                Some(s)
                    if s.ids().len() == s.len()
                        && (std::sync::Arc::ptr_eq(s.schema(), schema)
                            || **s.schema() == **schema) =>
                {
                    s.push(row, Some(id))
                }
                _ => {
                    let mut s = Slice::new(schema.clone());
                    s.push(row, Some(id));
                    out.push(s);
                }
            }
        }
    }
    Ok((out, decoded))
}

/// Where the IDs `ids` (ascending) are cut into at most `threads` runs: the positions `0 =
/// c0 < c1 < ... = ids.len()`. IDs at least [`DEFAULT_BATCH_EVENTS`] apart are in different
/// batches (of the default size), so the runs are cut there alone, each holding about as
/// many such groups of IDs; IDs with no such gap stay one run, so that each batch is decoded
/// once (`tests/it/query_pruning.rs`).
///
/// [`DEFAULT_BATCH_EVENTS`]: crate::batch::DEFAULT_BATCH_EVENTS
fn runs_of(ids: &[u64], threads: usize) -> Vec<usize> {
    let threads = threads.max(1);
    let far: Vec<usize> = (1..ids.len())
        .filter(|&i| ids[i] - ids[i - 1] >= crate::batch::DEFAULT_BATCH_EVENTS as u64)
        .collect();
    let mut cuts = vec![0];
    for k in 1..threads {
        // Group `g` of IDs starts at `far[g - 1]`.
        let group = (far.len() + 1) * k / threads;
        let cut = group.checked_sub(1).and_then(|g| far.get(g).copied());
        if let Some(c) = cut.filter(|&c| c > cuts.last().copied().unwrap_or(0)) {
            cuts.push(c);
        }
    }
    cuts.push(ids.len());
    cuts
}

/// The whole rows of some events, read by [`read_rows`].
struct Rows {
    schemas: Vec<crate::types::SchemaRef>,
    /// The rows back to back.
    data: Vec<u8>,
    /// Per event found, ascending by ID: its ID, schema (an index) and bytes.
    rows: Vec<(u64, usize, std::ops::Range<usize>)>,
    /// Batches decoded.
    decoded: u64,
}

/// The whole rows of the events `ids` (ascending, distinct): one pass over the batches that
/// hold them, in ID order, each batch's rows copied out before the next is read, so that at
/// most one batch is held.
fn read_rows(archive: &Archive, ids: &[u64]) -> Result<Rows, QueryError> {
    let mut out = Rows {
        schemas: Vec::new(),
        data: Vec::new(),
        rows: Vec::with_capacity(ids.len()),
        decoded: 0,
    };
    let mut next = ids.iter().copied().peekable();
    for b in archive.scan_ids(ids) {
        let b = b?;
        out.decoded += 1;
        let range = b.id_range();
        let schema = match out
            .schemas
            .iter()
            .position(|s| std::sync::Arc::ptr_eq(s, b.schema()) || **s == **b.schema())
        {
            Some(i) => i,
            None => {
                out.schemas.push(b.schema().clone());
                out.schemas.len() - 1
            }
        };
        // Wanted IDs before this batch were erased since the search saw them.
        while next.next_if(|&id| id < range.start).is_some() {}
        while let Some(id) = next.next_if(|&id| id < range.end) {
            let Some(row) = b.rows().nth((id - range.start) as usize) else {
                continue;
            };
            let start = out.data.len();
            out.data.extend_from_slice(row);
            out.rows.push((id, schema, start..out.data.len()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leading_expression_is_the_search() {
        let c = Chain::parse("id.resp_p == 53 | head 3").unwrap();
        assert_eq!(c.scan().text(), "id.resp_p == 53");
        assert_eq!(c.ops, vec![OpSpec::Head(3)]);
        let c = Chain::parse("top id.resp_p").unwrap();
        assert_eq!(c.scan().text(), "");
        assert_eq!(c.blocking_operator(), Some("top"));
        let c = Chain::parse("where x == 1 | where y == 2 | head | where z == 3").unwrap();
        assert_eq!(c.scan().text(), "(x == 1) && (y == 2)");
        assert_eq!(c.ops.len(), 2);
    }

    #[test]
    fn late_materialization_cuts_runs_only_between_distant_ids() {
        let far = crate::batch::DEFAULT_BATCH_EVENTS as u64;
        // Ten IDs a batch apart: two runs of five on two cores, one on one core.
        let spread: Vec<u64> = (0..10).map(|k| 7 + k * (far + 270)).collect();
        assert_eq!(runs_of(&spread, 2), vec![0, 5, 10]);
        assert_eq!(runs_of(&spread, 1), vec![0, 10]);
        assert_eq!(runs_of(&spread, 4), vec![0, 2, 5, 7, 10]);
        // Close together (one batch): one run, however many cores.
        let close: Vec<u64> = (100..110).collect();
        assert_eq!(runs_of(&close, 8), vec![0, 10]);
        // One distant ID at the end: the only cut there is.
        let mut tail = close.clone();
        tail.push(200 + far);
        assert_eq!(runs_of(&tail, 2), vec![0, 10, 11]);
        assert_eq!(runs_of(&[], 2), vec![0, 0]);
        assert_eq!(runs_of(&[5], 2), vec![0, 1]);
        // Many close together (batches of another size may hold them): one run.
        let dense: Vec<u64> = (0..1000).map(|k| k * 3).collect();
        assert_eq!(runs_of(&dense, 2), vec![0, 1000]);
    }

    #[test]
    fn errors_in_later_expressions_point_into_the_chain() {
        let t = "x == 1 | where y == && z";
        let e = Chain::parse(t).unwrap_err();
        assert_eq!(&t[e.pos..], "&& z");
        let t = "x == 1 |  | head";
        let e = Chain::parse(t).unwrap_err();
        assert_eq!(e.pos, 8);
    }
}
