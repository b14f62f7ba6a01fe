//! Running a query over an archive: prune, then evaluate rows in place on all cores, in ID
//! order.
//!
//! 1. Before anything is read, the expression is checked against the archive's schemas
//!    ([`Query::check`]): a field no schema has, a comparison no field makes well-typed, a
//!    `#type` naming no schema and no Zeek log are errors; a comparison ill-typed in some
//!    schemas only is a warning ([`Search::warnings`]). The definitions are read in steps
//!    until the check passes: one segment per schema name the search can reach (chosen among
//!    those that pruning keeps), the WAL's schemas, one segment per other name, every
//!    segment.
//! 2. Segments whose catalog entry cannot match ([`prune::by_entry`]: `#type`,
//!    `#timestamp`/`:timestamp` against the segment's `ts` range, `#id` against its IDs) are
//!    not opened.
//! 3. In an opened segment, batches that cannot match by their metadata are skipped without
//!    verifying or reading their rows: one call, [`prune::segment_batch`] (the schema's
//!    constant answer, the `ts` range, and the batch's sketch in format 3:
//!    [`Program::sketch_may_match`]).
//! 4. The other batches are jobs for a pool of worker threads ([`SearchOptions::threads`],
//!    one per core by default; `crate::pool`): a worker checks the batch (its checksum, on first
//!    access) and evaluates it: a batch stored in columns on the columns the expression reads
//!    alone, a comparison a column at a time, a dictionary column once per distinct value
//!    (`columnar.rs`), its rows rebuilt only when some match and are wanted (whole, or only the
//!    fields of [`ScanSpec::columns`]); a batch of rows (the write-ahead log's, older formats)
//!    row by row in place ([`Program::matches`]). A batch whose schema matches as a whole is
//!    taken without evaluating anything. The results come back in ID order
//!    through a bounded reorder window (a few batches per thread), so memory stays bounded
//!    and a consumer that stops early (`export -n`) has made the search read only a few
//!    batches ahead. Segments are opened (mapped) on the calling thread as the window reaches
//!    them.
//! 5. `count` sends the same jobs, counting matches without collecting them, and counts from
//!    metadata what the catalog (segments), the schema or the sketch (batches: every row in a
//!    range, format 4, or a time histogram, format 5: [`Program::sketch_count`]) decides.
//!
//! The active segment (the WAL) comes last, pruned by batch. [`SearchStats`] counts what was
//! opened, skipped and read, in ID order as results are taken (a search that is dropped early
//! has opened the segments its window reached): the tests check pruning with it.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashSet, VecDeque};
use std::sync::Arc;

use super::bind::Program;
use super::columnar::Selection;
use super::ints::Numbers;
use super::ops::order::compare;
use super::ops::partial::{AggPlan, Partial};
use super::ops::physical::{Cutoff, ScanSpec};
use super::prune::{self, Tri};
use super::{Query, QueryError};
use crate::pool::{OrderedPool, WorkerLost};
use crate::segment::sketch::RangeKind;
use crate::segment::{Columns, Layout, RowIter, Segment};
use crate::store::{Archive, BatchRef, CatalogEntry, Scan, StoreError};
use crate::types::SchemaRef;
use crate::value::Value;

/// How a search runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchOptions {
    /// Skip segments and batches by their metadata (default). Off, every row is evaluated:
    /// the same results, slower (the tests compare both).
    pub prune: bool,
    /// Threads that evaluate rows: 0 (default) is one per core; 1 evaluates on the calling
    /// thread. The results are the same, in the same order, whatever the number.
    pub threads: usize,
    /// A sealed batch stored in columns whose every row matches (its schema matches as a
    /// whole) is checked but not read, and one whose rows were evaluated from its columns is
    /// not rebuilt as rows: its [`Hits`] give the columns ([`BatchRef::columns`],
    /// [`Hits::record_batches`]) and rebuild the rows (all of them) only if they are asked
    /// for. For a consumer that wants columns (the Arrow outputs); off by default.
    pub defer_columns: bool,
}

impl Default for SearchOptions {
    fn default() -> SearchOptions {
        SearchOptions {
            prune: true,
            threads: 0,
            defer_columns: false,
        }
    }
}

/// What a search touched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchStats {
    /// Sealed segments in the catalog.
    pub segments: u64,
    /// Segments opened (mapped), each counted once.
    pub segments_opened: u64,
    /// Segments skipped by their catalog entry.
    pub segments_pruned: u64,
    /// Segments counted from their catalog entry alone (`weir count`).
    pub segments_counted: u64,
    /// Batches whose rows were read or taken whole.
    pub batches_read: u64,
    /// Batches skipped by their metadata (schema, `ts` range, sketch), or counted 0 from it.
    pub batches_pruned: u64,
    /// Rows evaluated one by one.
    pub rows_evaluated: u64,
    /// Events that matched.
    pub matched: u64,
    /// Batches not read because they (or their segment) are damaged: each yielded an error.
    pub batches_damaged: u64,
    /// Events of those batches, as far as the catalog knows them (a damaged batch of the
    /// write-ahead log counts none).
    pub events_damaged: u64,
}

/// What the catalog and the batches' metadata keep of an archive for a search's
/// expression, found without evaluating a row ([`Search::pruning`], for `--explain`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Pruning {
    /// Sealed segments in the catalog.
    pub segments: u64,
    /// Segments that their catalog entry rules out (not opened).
    pub segments_pruned: u64,
    /// Segments that could not be opened (the search reports each).
    pub segments_damaged: u64,
    /// Batches of the segments opened.
    pub batches: u64,
    /// Of those, batches that their metadata (schema, `ts` range, sketch) rules out.
    pub batches_pruned: u64,
    /// Batches the search reads.
    pub batches_kept: u64,
    /// Events of those batches.
    pub events_kept: u64,
    /// Batches of the write-ahead log.
    pub wal_batches: u64,
    /// Of those, batches that its pruning (schema, IDs) rules out.
    pub wal_batches_pruned: u64,
}

/// The matching events of one batch slice.
#[derive(Debug, Clone)]
pub struct Hits {
    batch: BatchRef,
    /// Row indices within the slice, ascending; `None`: all of them.
    rows: Option<Vec<usize>>,
    /// The groups of the matching events, when the search aggregates them
    /// (`Search::planned`) and this batch was aggregated where it is (its rows are then
    /// not read).
    partial: Option<Partial>,
}

impl Hits {
    /// The batch slice the events are in.
    pub fn batch(&self) -> &BatchRef {
        &self.batch
    }

    /// The schema of the events.
    pub fn schema(&self) -> &SchemaRef {
        self.batch.schema()
    }

    /// Number of matching events.
    pub fn len(&self) -> usize {
        self.rows.as_ref().map_or(self.batch.len(), Vec::len)
    }

    /// Whether none matched (never for a yielded `Hits`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The IDs of the matching events, ascending.
    pub fn ids(&self) -> Vec<u64> {
        let first = self.batch.first_id();
        match &self.rows {
            None => self.batch.id_range().collect(),
            Some(r) => r.iter().map(|&i| first + i as u64).collect(),
        }
    }

    /// The groups of the matching events, aggregated by the search's worker
    /// (`Search::planned`); `None` when the batch's rows are to be read.
    pub(crate) fn take_partial(&mut self) -> Option<Partial> {
        self.partial.take()
    }

    /// The matching events as columns, when they are all of a batch stored in columns
    /// (`None` otherwise): see [`BatchRef::columns`] and [`SearchOptions::defer_columns`].
    pub fn columns(&self) -> Option<Result<crate::segment::Columns, StoreError>> {
        if self.rows.is_some() {
            return None;
        }
        self.batch.columns()
    }

    /// The indices of the matching events among the batch slice's rows (ascending);
    /// `None`: all of them.
    pub fn selected(&self) -> Option<&[usize]> {
        self.rows.as_deref()
    }

    /// The encoded rows of the matching events.
    pub fn rows(&self) -> HitRows<'_> {
        HitRows {
            rows: self.batch.rows(),
            selected: self.rows.as_deref(),
            index: 0,
            next: 0,
        }
    }
}

/// The rows of a [`Hits`].
#[derive(Debug)]
pub struct HitRows<'a> {
    rows: RowIter<'a>,
    selected: Option<&'a [usize]>,
    index: usize,
    next: usize,
}

impl<'a> Iterator for HitRows<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let Some(sel) = self.selected else {
            return self.rows.next();
        };
        let want = *sel.get(self.next)?;
        loop {
            let row = self.rows.next()?;
            let i = self.index;
            self.index += 1;
            if i == want {
                self.next += 1;
                return Some(row);
            }
        }
    }
}

/// The programs of the schemas met so far, one per distinct schema.
#[derive(Debug, Default)]
pub(crate) struct Programs {
    list: Vec<Arc<Program>>,
}

impl Programs {
    pub(crate) fn get(&mut self, query: &Query, schema: &SchemaRef) -> &Arc<Program> {
        let i = match self
            .list
            .iter()
            .position(|p| Arc::ptr_eq(&p.schema, schema))
            .or_else(|| self.list.iter().position(|p| *p.schema == **schema))
        {
            Some(i) => i,
            None => {
                self.list.push(Arc::new(query.bind(schema)));
                self.list.len() - 1
            }
        };
        &self.list[i]
    }
}

/// The fields a consumer reads of one schema (see [`ScanSpec::columns`]): their indices
/// (ascending) and the schema of those fields alone.
#[derive(Debug)]
struct Keep {
    indices: Vec<usize>,
    schema: SchemaRef,
}

/// One batch for a worker: evaluate its rows (or count them).
struct Job {
    program: Arc<Program>,
    /// Read only these fields of a batch stored in columns (a projection).
    keep: Option<Arc<Keep>>,
    batch: JobBatch,
    count_only: bool,
    /// [`SearchOptions::defer_columns`].
    defer_columns: bool,
    /// [`Search::planned`]'s partial aggregation.
    aggregate: Option<Arc<AggPlan>>,
    /// `TopN::per_batch`.
    first: Option<Arc<KeepFirst>>,
}

/// `TopN::per_batch`: the consumer keeps only the first `n` events by one field.
#[derive(Debug)]
struct KeepFirst {
    name: String,
    desc: bool,
    n: usize,
    /// The consumer's cut-off, shared with it and the workers: no event that cannot beat it
    /// is handed out (so its row is never rebuilt).
    cutoff: Arc<Cutoff>,
}

enum JobBatch {
    /// Batch `.1` of a sealed segment, still to be checked (on the worker).
    Sealed(Arc<Segment>, usize),
    /// A batch of the write-ahead log.
    Wal(BatchRef),
}

/// What became of one batch, in ID order.
#[derive(Debug)]
struct Done {
    outcome: Result<Outcome, QueryError>,
    /// The batch was read (its rows evaluated or taken whole).
    read: bool,
    rows_evaluated: u64,
    /// Damaged batches and their events (the error is in `outcome`).
    damaged: (u64, u64),
}

#[derive(Debug)]
enum Outcome {
    Hits(Option<Hits>),
    Count(u64),
}

impl Done {
    /// A batch past the end (a segment changed under the search): nothing.
    fn nothing() -> Done {
        Done {
            outcome: Ok(Outcome::Count(0)),
            read: false,
            rows_evaluated: 0,
            damaged: (0, 0),
        }
    }

    fn damaged(e: impl Into<QueryError>, batches: u64, events: u64) -> Done {
        Done {
            outcome: Err(e.into()),
            read: false,
            rows_evaluated: 0,
            damaged: (batches, events),
        }
    }
}

/// A worker's part: check the batch, then evaluate its rows. A batch stored in columns is
/// evaluated on the columns the program reads ([`run_columns`]).
fn run(job: Job) -> Done {
    let (seg, i) = match &job.batch {
        JobBatch::Wal(b) => return evaluate(&job.program, b.clone(), job.count_only),
        JobBatch::Sealed(seg, i) => (seg.clone(), *i),
    };
    let events = seg.batch_ids(i).map_or(0, |r| r.end - r.start);
    let columns = seg.batch_layout(i) == Some(Layout::Columns);
    let counting = job.aggregate.is_some() && !job.count_only;
    let first = job.first.is_some() && !job.count_only && job.program.constant() == Some(true);
    if columns && (counting || first || job.program.constant().is_none()) {
        return run_columns(&job, &seg, i, events);
    }
    if job.defer_columns && !job.count_only && job.program.constant() == Some(true) {
        match seg.check(i) {
            None => return Done::nothing(),
            Some(Err(e)) => return Done::damaged(StoreError::from(e), 1, events),
            Some(Ok(())) => {}
        }
        if let Some(batch) = BatchRef::deferred(seg.clone(), i) {
            return Done {
                outcome: Ok(Outcome::Hits(Some(Hits {
                    batch,
                    rows: None,
                    partial: None,
                }))),
                read: true,
                rows_evaluated: 0,
                damaged: (0, 0),
            };
        }
    }
    // A schema that matches as a whole or not at all: the rows are read only to be output,
    // narrowed to the fields the consumer reads when it says which.
    let keep = job.keep.as_ref().filter(|_| !job.count_only && columns);
    let b = match keep {
        Some(keep) => output_batch(&seg, i, Some(keep), None),
        None => BatchRef::of_segment(seg.clone(), i),
    };
    match b {
        Some(Ok(b)) => evaluate(&job.program, b, job.count_only),
        Some(Err(e)) => Done::damaged(e, 1, events),
        None => Done::nothing(),
    }
}

/// Batch `i` of `seg` as rows for output: whole, or (stored in columns) only the fields
/// `keep` names, labelled with the schema of those fields; with `select`, only those rows
/// are rebuilt (the others are rows without fields, never output: see
/// [`BatchRef::of_segment_selected`]).
fn output_batch(
    seg: &Arc<Segment>,
    i: usize,
    keep: Option<&Arc<Keep>>,
    select: Option<&[usize]>,
) -> Option<Result<BatchRef, StoreError>> {
    let Some(keep) = keep else {
        return BatchRef::of_segment_selected(seg.clone(), i, None, select);
    };
    let fields = seg.batch_meta(i).map_or(0, |(s, _, _)| s.fields.len());
    let mut want = vec![false; fields];
    for &f in &keep.indices {
        if let Some(w) = want.get_mut(f) {
            *w = true;
        }
    }
    Some(
        BatchRef::of_segment_selected(seg.clone(), i, Some(&want), select)?
            .map(|b| b.with_schema(keep.schema.clone())),
    )
}

/// A batch stored in columns: only the columns the program reads are inflated, and it is
/// evaluated a column at a time (`columnar.rs`); its rows are rebuilt only when some match
/// and the consumer wants them (not for a count), whole or narrowed to what it keeps.
fn run_columns(job: &Job, seg: &Arc<Segment>, i: usize, events: u64) -> Done {
    let p = &job.program;
    let mut want = vec![false; p.types.len()];
    for &f in &p.fields {
        if let Some(w) = want.get_mut(f) {
            *w = true;
        }
    }
    let mut as_dicts = p.dictionary_fields();
    // Fields compared only as ranges of numbers stay numbers (integer planes and marked
    // columns are not rebuilt as msgpack).
    let mut as_ints = p.number_fields();
    as_ints.resize(want.len(), false);
    let read = want.clone();
    // The field the consumer keeps the first events by: read too, as numbers unless the
    // program reads it otherwise.
    let keep_first = job
        .first
        .as_ref()
        .filter(|_| !job.count_only && job.aggregate.is_none())
        .and_then(|k| {
            let f = super::ops::slice::Fields::resolve(&p.schema, &k.name).first()?;
            let signed = super::ints::signedness(&p.schema.fields.get(f)?.ty)?;
            Some((k, f, signed))
        });
    if let Some((_, f, _)) = keep_first {
        if let (Some(w), Some(n)) = (want.get_mut(f), as_ints.get_mut(f)) {
            *n = *n || !*w;
            *w = true;
        }
    }
    let plan = job.aggregate.as_ref().filter(|_| !job.count_only);
    for f in plan.map(|c| c.fields(&p.schema)).unwrap_or_default() {
        // An aggregated field may stay a dictionary, or integer planes may stay numbers,
        // unless the program reads it otherwise.
        if let (Some(w), Some(d), Some(n)) =
            (want.get_mut(f), as_dicts.get_mut(f), as_ints.get_mut(f))
        {
            *d = !read[f] || *d;
            *n = !read[f] || *n;
            *w = true;
        }
    }
    let none = if job.count_only {
        Outcome::Count(0)
    } else {
        Outcome::Hits(None)
    };
    let mut done = Done {
        outcome: Ok(none),
        read: true,
        rows_evaluated: 0,
        damaged: (0, 0),
    };
    // Blocked columns (segment format 11) inflate only the blocks whose filters may hold a
    // match; the rows of the others are out of the selection.
    let keeping = (Some(&as_dicts[..]), Some(&as_ints[..]));
    let rows = seg.batch_ids(i).map_or(0, |r| (r.end - r.start) as usize);
    let (cols, needed) =
        match seg.batch_columns_chosen(i, &want, keeping, |dirs| blocks_needed(p, dirs, rows)) {
            Some(Ok(Some(c))) => c,
            Some(Ok(None)) => return done,
            Some(Err(e)) => return Done::damaged(StoreError::from(e), 1, events),
            None => return Done::nothing(),
        };
    // The bytes every match needs are not in the columns it reads.
    if !p.may_hold(cols.inflated()) {
        return done;
    }
    let first = seg.batch_ids(i).map_or(0, |r| r.start);
    let sel = match p.constant() {
        Some(b) if b => Selection::all(cols.rows()),
        Some(_) => Selection::none(cols.rows()),
        None => {
            done.rows_evaluated = cols.rows() as u64;
            match p.select_columns(&cols, first) {
                Ok(sel) => sel,
                Err(e) => {
                    done.outcome = Err(e.into());
                    return done;
                }
            }
        }
    };
    let sel = match needed {
        Some(words) => sel.and_words(&words),
        None => sel,
    };
    if job.count_only {
        done.outcome = Ok(Outcome::Count(sel.count() as u64));
        return done;
    }
    if sel.is_empty() {
        return done;
    }
    let mut rows = (!sel.is_all()).then(|| sel.indices());
    if let Some((k, f, signed)) = keep_first {
        let ty = &p.schema.fields[f].ty;
        if let Some(kept) = first_rows(&cols, (f, ty, signed), k, rows.as_deref(), first) {
            if kept.is_empty() {
                return done;
            }
            rows = Some(kept);
        }
    }
    if let Some(plan) = plan {
        // Aggregated here: the rows are never read.
        let partial = match plan.aggregate(&p.schema, &cols, rows.as_deref(), first) {
            Ok(c) => c,
            Err(e) => {
                done.outcome = Err(e.into());
                return done;
            }
        };
        let Some(batch) = BatchRef::deferred(seg.clone(), i) else {
            return Done::nothing();
        };
        done.outcome = Ok(Outcome::Hits(Some(Hits {
            batch,
            rows,
            partial: Some(partial),
        })));
        return done;
    }
    drop(cols);
    // A consumer that decodes the columns (Arrow: `to_arrow.rs`) takes the batch as stored,
    // with the matching rows' indices: no row is rebuilt.
    if job.defer_columns && job.keep.is_none() {
        if let Some(batch) = BatchRef::deferred(seg.clone(), i) {
            done.outcome = Ok(Outcome::Hits(Some(Hits {
                batch,
                rows,
                partial: None,
            })));
            return done;
        }
    }
    // Only the matching rows are rebuilt.
    let batch = match output_batch(seg, i, job.keep.as_ref(), rows.as_deref()) {
        Some(Ok(b)) => b,
        Some(Err(e)) => return Done::damaged(e, 1, events),
        None => return Done::nothing(),
    };
    done.outcome = Ok(Outcome::Hits(Some(Hits {
        batch,
        rows,
        partial: None,
    })));
    done
}

/// The rows of a batch of `rows` rows that may match `p` (one bit per row), by the filters
/// of its blocked columns `dirs` (by field): those of the blocks that may hold a match;
/// `None` when that is every row, or when the columns' blocks are not of one size.
fn blocks_needed(
    p: &Program,
    dirs: &[Option<crate::segment::blocks::Directory<'_>>],
    rows: usize,
) -> Option<Vec<u64>> {
    if p.constant().is_some() {
        return None;
    }
    let mut filtered = dirs.iter().flatten().filter(|d| d.filtered());
    let first = filtered.next()?;
    if filtered.any(|d| d.rows_per_block != first.rows_per_block) {
        return None;
    }
    let mut words = vec![0u64; rows.div_ceil(64)];
    let mut all = true;
    for b in 0..first.blocks.len() {
        let probe = |field: usize, h: u64| {
            let d = dirs.get(field)?.as_ref().filter(|d| d.filtered())?;
            Some(d.may_contain(b, h))
        };
        if !p.block_may_match(&probe) {
            all = false;
            continue;
        }
        for r in first.rows_of(b, rows) {
            words[r / 64] |= 1 << (r % 64);
        }
    }
    (!all).then_some(words)
}

/// Of the rows `rows` (all: `None`) of a batch's columns whose first event ID is `first`, the
/// first `k.n` by the integer column `f` (of type `ty`, signed or not), as
/// `TopN::per_batch` orders them, ascending, and of those only the ones that beat the
/// consumer's cutoff (`k.cutoff`); `None` when the column does not decode as numbers (every
/// row is then kept).
fn first_rows(
    cols: &Columns,
    (f, ty, signed): (usize, &crate::types::Type, bool),
    k: &KeepFirst,
    rows: Option<&[usize]>,
    first: u64,
) -> Option<Vec<usize>> {
    let source = match (cols.ints(f), cols.marked(f)) {
        (Some(ints), _) => Numbers::Decoded(ints),
        (None, Some(m)) => Numbers::Marked(m),
        (None, None) => Numbers::Msgpack(cols.column(f)),
    };
    let n = cols.rows();
    let cutoff = k.cutoff.get().and_then(|(v, id)| match v {
        None => Some((None, id)),
        Some(v) => Some((Some(number_of(&v, ty)?), id)),
    });
    if k.n == 0 || (cutoff.is_none() && rows.map_or(n, <[usize]>::len) <= k.n) {
        return None;
    }
    let (values, set) = super::ints::decode_all(source, n, signed)?;
    let has = |r: usize| set[r / super::ints::WORD] >> (r % super::ints::WORD) & 1 == 1;
    // The set values by order (as `i64` for signed columns), ties by row; then unset rows.
    let number = |r: usize| -> i128 {
        if signed {
            i128::from(values[r] as i64)
        } else {
            i128::from(values[r])
        }
    };
    let key = |v: i128| if k.desc { -v } else { v };
    // Only what beats the consumer's last kept event (ties by event ID): a set value beats
    // an unset one; an unset value beats nothing set.
    let before = |r: usize, cut_id: u64| first + (r as u64) < cut_id;
    let beats = |r: usize, v: i128| match cutoff {
        None | Some((None, _)) => true,
        Some((Some(c), cut_id)) => {
            let c = key(c);
            v < c || (v == c && before(r, cut_id))
        }
    };
    // The best `k.n` set rows so far, by (key, row), the worst on top: a row that does not
    // beat it costs a compare, and nothing of the batch's size is allocated.
    let mut best: BinaryHeap<(i128, usize)> = BinaryHeap::with_capacity(k.n.min(n) + 1);
    let mut consider = |r: usize| {
        if !has(r) {
            return;
        }
        let v = key(number(r));
        if !beats(r, v) {
            return;
        }
        if best.len() < k.n {
            best.push((v, r));
        } else if best.peek().is_some_and(|&worst| (v, r) < worst) {
            best.pop();
            best.push((v, r));
        }
    };
    match rows {
        Some(rows) => rows.iter().for_each(|&r| consider(r)),
        None => (0..n).for_each(consider),
    }
    let mut with: Vec<usize> = best.into_iter().map(|(_, r)| r).collect();
    // Then unset rows, in row order, where fewer than `k.n` set ones beat the cutoff.
    let more = k.n - with.len();
    if more > 0 {
        let unset = |r: &usize| {
            !has(*r)
                && match cutoff {
                    None => true,
                    Some((Some(_), _)) => false,
                    Some((None, cut_id)) => before(*r, cut_id),
                }
        };
        match rows {
            Some(rows) => with.extend(rows.iter().copied().filter(unset).take(more)),
            None => with.extend((0..n).filter(unset).take(more)),
        }
    }
    with.sort_unstable();
    Some(with)
}

/// The number `v` holds when it is a value of the integer type `ty` (`None` for any other:
/// a cutoff of another type rules nothing out).
fn number_of(v: &Value, ty: &crate::types::Type) -> Option<i128> {
    use crate::types::Type;
    match (v, ty) {
        (Value::Count(x), Type::Count) | (Value::Port(x), Type::Port) => Some(i128::from(*x)),
        (Value::Int(x), Type::Int)
        | (Value::Time(x), Type::Time)
        | (Value::Interval(x), Type::Interval) => Some(i128::from(*x)),
        _ => None,
    }
}

/// The matching rows of a batch slice (or their number).
fn evaluate(p: &Program, b: BatchRef, count_only: bool) -> Done {
    let mut done = Done {
        outcome: Ok(Outcome::Count(0)),
        read: true,
        rows_evaluated: 0,
        damaged: (0, 0),
    };
    let rows = match p.constant() {
        Some(true) => None,
        Some(false) if count_only => return done,
        Some(false) => {
            done.outcome = Ok(Outcome::Hits(None));
            return done;
        }
        None if !p.may_hold(b.batch_data()) => {
            // The bytes every match needs are not in the batch.
            done.outcome = Ok(if count_only {
                Outcome::Count(0)
            } else {
                Outcome::Hits(None)
            });
            return done;
        }
        None => {
            done.rows_evaluated = b.len() as u64;
            if count_only {
                done.outcome = p
                    .count_matches(b.rows(), b.first_id())
                    .map(|n| Outcome::Count(n as u64))
                    .map_err(QueryError::from);
                return done;
            }
            match p.select(b.rows(), b.first_id()) {
                Ok(sel) => Some(sel),
                Err(e) => {
                    done.outcome = Err(e.into());
                    return done;
                }
            }
        }
    };
    let hits = Hits {
        batch: b,
        rows,
        partial: None,
    };
    done.outcome = Ok(if count_only {
        Outcome::Count(hits.len() as u64)
    } else if hits.is_empty() {
        Outcome::Hits(None)
    } else {
        Outcome::Hits(Some(hits))
    });
    done
}

/// A step of [`Search::check_types`]: which schema definitions it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// One segment per schema name the search can reach.
    Reachable,
    /// The write-ahead log's batches.
    Wal,
    /// One segment per schema name not seen yet.
    OtherNames,
    /// Every segment not looked at yet.
    Every,
}

/// The schema definitions [`Search::check_types`] has read so far.
#[derive(Debug, Default)]
struct Found {
    schemas: Vec<SchemaRef>,
    names: HashSet<String>,
    /// Catalog indices of the segments looked at.
    looked: HashSet<usize>,
}

impl Found {
    fn add(&mut self, s: &SchemaRef) {
        self.names.insert(s.name.clone());
        if !self.schemas.iter().any(|x| **x == **s) {
            self.schemas.push(s.clone());
        }
    }
}

/// Outstanding batches per worker thread, at most: the reorder window is this times the
/// number of threads.
const WINDOW_PER_THREAD: usize = 4;

/// An iterator over the matching events of an archive, batch by batch, in ID order; see
/// [`Query::search`]. A damaged segment or batch yields one error and the search goes on.
///
/// The batches that need their rows evaluated go to a pool of worker threads (one per core by
/// default, [`SearchOptions::threads`]); the results come back in ID order through a bounded
/// reorder window, so memory stays bounded and a consumer that stops early has made the
/// search read only a few batches ahead.
#[derive(Debug)]
pub struct Search<'a> {
    archive: &'a Archive,
    query: &'a Query,
    prune: bool,
    /// Counting: batches whose schema matches as a whole are counted from their metadata, and
    /// segments from their catalog entry where it decides.
    count_only: bool,
    /// [`SearchOptions::defer_columns`].
    defer_columns: bool,
    /// Catalog indices in ID order.
    order: Vec<usize>,
    next_segment: usize,
    /// The segment being read and its next batch.
    current: Option<(Arc<Segment>, usize)>,
    wal: Option<Scan<'a>>,
    /// Nothing more to submit.
    exhausted: bool,
    programs: Programs,
    /// [`ScanSpec::columns`]: the field names read, and per schema met what they keep.
    projection: Option<Vec<String>>,
    keeps: Vec<(SchemaRef, Option<Arc<Keep>>)>,
    /// [`Search::planned`]'s partial aggregation.
    aggregate: Option<Arc<AggPlan>>,
    /// `TopN::per_batch`.
    first: Option<Arc<KeepFirst>>,
    opened: HashSet<usize>,
    stats: SearchStats,
    /// Events counted from metadata alone (`count`).
    counted: u64,
    pool: OrderedPool<Job, Done>,
    /// [`Search::warnings`].
    warnings: Vec<String>,
    /// [`ScanSpec::top`]: the batches best first.
    ordered: Option<Ordered>,
}

/// The batches of [`Search::order_by`], best first, and what the consumer keeps.
#[derive(Debug)]
struct Ordered {
    queue: VecDeque<Planned>,
    desc: bool,
    /// The consumer's cut-off (`TopN::cutoff`).
    cutoff: Arc<Cutoff>,
    /// The write-ahead log's batches were all submitted.
    wal_done: bool,
}

impl Ordered {
    /// Whether no event of a batch whose best value is `best` and whose first event ID is
    /// `first` can come before the consumer's cutoff: its best is worse, or equal and its
    /// IDs all larger (ties go by ID).
    fn beaten(&self, best: &Best, first: u64) -> bool {
        let Some((Some(cut), cut_id)) = self.cutoff.get() else {
            return false;
        };
        let o = match best {
            Best::Unknown => return false,
            Best::Unset => return true,
            Best::Value(v) if self.desc => compare(&cut, v),
            Best::Value(v) => compare(v, &cut),
        };
        o == Ordering::Greater || (o == Ordering::Equal && first > cut_id)
    }
}

#[derive(Debug)]
enum Planned {
    Batch {
        seg: Arc<Segment>,
        i: usize,
        best: Best,
    },
    /// A segment that could not be opened: its error, reported first.
    Damaged(Done),
}

/// The best value of a field that a batch can hold, from its metadata.
#[derive(Debug)]
enum Best {
    /// No metadata says (no sketch, a field without ranges): the batch must be read.
    Unknown,
    /// The largest (descending) or smallest value.
    Value(Value),
    /// No event of the batch has a value there.
    Unset,
}

impl Best {
    fn of(seg: &Segment, i: usize, name: &str, desc: bool) -> Best {
        let Some((schema, ids, ts)) = seg.batch_meta(i) else {
            return Best::Unknown;
        };
        if name == "#id" {
            let id = if desc {
                ids.end.saturating_sub(1)
            } else {
                ids.start
            };
            return Best::Value(Value::Count(id));
        }
        let Some(f) = super::ops::slice::Fields::resolve(schema, name).first() else {
            return Best::Unset;
        };
        // Integer ranges only: a double's range says nothing of NaN.
        if !matches!(
            RangeKind::of(&schema.fields[f].ty),
            Some(RangeKind::Signed | RangeKind::Unsigned)
        ) {
            return Best::Unknown;
        }
        if let (Some((lo, hi)), true) = (ts, schema.ts_index() == Some(f)) {
            return Best::Value(Value::Time(if desc { hi } else { lo }));
        }
        let Some(sketch) = seg.sketch(i) else {
            return Best::Unknown;
        };
        match sketch.range(f) {
            Some(r) if r.present() != Some(0) => {
                Best::Value(if desc { r.hi() } else { r.lo() }.to_owned())
            }
            _ => Best::Unset,
        }
    }

    /// Best first: unknown, then by value, then unset.
    fn order(&self, other: &Best, desc: bool) -> Ordering {
        let rank = |b: &Best| match b {
            Best::Unknown => 0,
            Best::Value(_) => 1,
            Best::Unset => 2,
        };
        match (self, other) {
            (Best::Value(a), Best::Value(b)) if desc => compare(b, a),
            (Best::Value(a), Best::Value(b)) => compare(a, b),
            _ => rank(self).cmp(&rank(other)),
        }
    }
}

impl<'a> Search<'a> {
    pub(crate) fn new(
        archive: &'a Archive,
        query: &'a Query,
        options: SearchOptions,
    ) -> Result<Search<'a>, QueryError> {
        let catalog = archive.catalog();
        let mut order: Vec<usize> = (0..catalog.segments.len()).collect();
        order.sort_by_key(|&i| catalog.segments[i].intervals.first().map_or(0, |r| r[0]));
        let threads = match options.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let mut s = Search {
            archive,
            query,
            prune: options.prune,
            count_only: false,
            defer_columns: options.defer_columns,
            order,
            next_segment: 0,
            current: None,
            wal: None,
            exhausted: false,
            programs: Programs::default(),
            projection: None,
            keeps: Vec::new(),
            aggregate: None,
            first: None,
            opened: HashSet::new(),
            stats: SearchStats {
                segments: catalog.segments.len() as u64,
                ..SearchStats::default()
            },
            counted: 0,
            pool: OrderedPool::new(threads, threads * WINDOW_PER_THREAD, run),
            warnings: Vec::new(),
            ordered: None,
        };
        s.check_types()?;
        Ok(s)
    }

    /// A search configured by a plan's scan spec (`ops/physical/`): its predicate, the
    /// columns it reads, its top-N and its partial aggregation into `aggregate`'s groups.
    ///
    /// Columns: only the fields `spec.columns` name (as the operators resolve names: full,
    /// suffix, qualified, or a record's fields) of batches stored in columns are read,
    /// besides those the expression reads: their hits have narrow rows, of a schema of those
    /// fields alone (same name). Other batches (the write-ahead log's, rows) come whole.
    ///
    /// Partial aggregation: the workers aggregate the matching events of each batch stored
    /// in columns into `aggregate`'s groups (`partial.rs`), on the batch's columns: its
    /// [`Hits`] then carry the marker ([`Hits::take_partial`]) instead of rows. Other
    /// batches come as rows.
    ///
    /// Top-N: see [`Search::order_by`]; with `TopN::per_batch` `n`, the workers hand out,
    /// of each batch stored in columns, only the `n` matches that come first by the integer
    /// field (unset last; ties by event ID), the only ones of the batch that can be among
    /// the consumer's `n` (each of the others has `n` before it in its own batch), and
    /// rebuild only their rows. A field of another type leaves every match.
    pub(crate) fn planned(
        archive: &'a Archive,
        spec: &'a ScanSpec,
        aggregate: Option<AggPlan>,
    ) -> Result<Search<'a>, QueryError> {
        let mut s = Search::new(archive, &spec.predicate, SearchOptions::default())?;
        s.projection = spec.columns.clone();
        s.aggregate = aggregate.map(Arc::new);
        if let Some(top) = &spec.top {
            s.order_by(&top.field, top.desc, top.cutoff.clone());
            s.first = top.per_batch.map(|n| {
                Arc::new(KeepFirst {
                    name: top.field.clone(),
                    desc: top.desc,
                    n,
                    cutoff: top.cutoff.clone(),
                })
            });
        }
        Ok(s)
    }

    /// What [`ScanSpec::columns`] keeps of `schema` for `program` (`None`: every field).
    fn keep(&mut self, schema: &SchemaRef, program: &Program) -> Option<Arc<Keep>> {
        let names = self.projection.as_ref()?;
        if let Some((_, k)) = self
            .keeps
            .iter()
            .find(|(s, _)| Arc::ptr_eq(s, schema) || **s == **schema)
        {
            return k.clone();
        }
        let mut indices = program.fields.clone();
        for n in names {
            indices.extend(super::ops::slice::Fields::resolve_record(schema, n).indices);
        }
        indices.sort_unstable();
        indices.dedup();
        let keep = (indices.len() < schema.fields.len() && !indices.is_empty()).then(|| {
            let narrow = crate::types::Schema::new(
                schema.name.clone(),
                indices.iter().map(|&i| schema.fields[i].clone()).collect(),
            );
            Arc::new(Keep {
                schema: Arc::new(narrow),
                indices,
            })
        });
        self.keeps.push((schema.clone(), keep.clone()));
        keep
    }

    /// What the catalog and the batches' metadata keep for the expression, as the search
    /// would prune (segments by their catalog entry, then batches by theirs; the
    /// write-ahead log's batches by their rows' schema and IDs), without evaluating a row.
    /// Opens (maps) the segments that are kept; call instead of searching.
    pub fn pruning(&mut self) -> Pruning {
        let mut p = Pruning::default();
        for k in 0..self.order.len() {
            let idx = self.order[k];
            let entry = self.entry(idx);
            p.segments += 1;
            if !entry.schemas.is_empty()
                && entry
                    .schemas
                    .keys()
                    .all(|n| self.name_tri(entry, n) == Tri::False)
            {
                p.segments_pruned += 1;
                continue;
            }
            let Ok(seg) = self.open(idx) else {
                p.segments_damaged += 1;
                continue;
            };
            for i in 0..seg.len() {
                p.batches += 1;
                let Some((schema, ids, _)) = seg.batch_meta(i) else {
                    continue;
                };
                let mut program = self.programs.get(self.query, schema).clone();
                if let (true, Some(narrow)) = (self.prune, program.for_ids(&ids)) {
                    program = Arc::new(narrow);
                }
                if self.prune && !prune::segment_batch(&program, &seg, i) {
                    p.batches_pruned += 1;
                } else {
                    p.batches_kept += 1;
                    p.events_kept += ids.end - ids.start;
                }
            }
        }
        let next = self.archive.catalog().next_id;
        for b in self.archive.scan_range(next..u64::MAX).flatten() {
            p.wal_batches += 1;
            let mut program = self.programs.get(self.query, b.schema()).clone();
            if let (true, Some(narrow)) = (self.prune, program.for_ids(&b.id_range())) {
                program = Arc::new(narrow);
            }
            if self.prune && !prune::wal_batch(&program, &b) {
                p.wal_batches_pruned += 1;
            }
        }
        p
    }

    /// What the search has touched so far.
    pub fn stats(&self) -> &SearchStats {
        &self.stats
    }

    fn entry(&self, idx: usize) -> &'a CatalogEntry {
        &self.archive.catalog().segments[idx]
    }

    fn open(&mut self, idx: usize) -> Result<Arc<Segment>, QueryError> {
        let seg = self.archive.segment(self.entry(idx))?;
        if self.opened.insert(idx) {
            self.stats.segments_opened += 1;
        }
        Ok(seg)
    }

    /// The answer for a segment's schema name from its catalog entry.
    fn name_tri(&self, entry: &CatalogEntry, name: &str) -> Tri {
        if !self.prune {
            return Tri::Maybe;
        }
        prune::by_entry(self.query.expr(), name, entry)
    }

    /// Checks the expression against the archive's schemas ([`Query::check`]) before anything
    /// is searched, keeping its warnings ([`Search::warnings`]).
    ///
    /// `#type` names are checked against the catalog's schema names (and the WAL's when one
    /// is not there). Field names and comparisons are checked against schema definitions, read
    /// in steps until every field predicate resolves and is well-typed somewhere: one segment
    /// per schema name the search can reach (among those pruning keeps); then the WAL's
    /// schemas; then one segment per other name; then every segment not yet looked at (a
    /// name's fields may differ between segments). The segments opened count in the stats.
    fn check_types(&mut self) -> Result<(), QueryError> {
        if self.query.has_type_names() {
            self.check_type_names()?;
        }
        if !self.query.has_field_predicates() {
            return Ok(());
        }
        let mut found = Found::default();
        self.add_segments(&mut found, Step::Reachable);
        let mut verdict = self.query.check_fields(&found.schemas);
        for step in [Step::Wal, Step::OtherNames, Step::Every] {
            if verdict.is_ok() && !found.schemas.is_empty() {
                break;
            }
            if step == Step::Wal {
                self.add_wal(&mut found);
            } else {
                self.add_segments(&mut found, step);
            }
            verdict = self.query.check_fields(&found.schemas);
        }
        self.warnings = verdict?;
        Ok(())
    }

    /// [`Query::check_type_names`] against the catalog's schema names, then the WAL's too.
    fn check_type_names(&self) -> Result<(), QueryError> {
        let catalog = self.archive.catalog();
        let mut names: Vec<String> = catalog
            .segments
            .iter()
            .flat_map(|e| e.schemas.keys().cloned())
            .collect();
        names.sort();
        names.dedup();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        if self.query.check_type_names(&refs).is_ok() {
            return Ok(());
        }
        let next = catalog.next_id;
        for b in self.archive.scan_range(next..u64::MAX).flatten() {
            names.push(b.schema().name.clone());
        }
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        Ok(self.query.check_type_names(&refs)?)
    }

    /// Adds the schemas of the segments `step` takes (see [`Search::check_types`]).
    fn add_segments(&mut self, found: &mut Found, step: Step) {
        for k in 0..self.order.len() {
            let idx = self.order[k];
            if found.looked.contains(&idx) {
                continue;
            }
            let entry = self.entry(idx);
            let wanted = step == Step::Every
                || entry.schemas.keys().any(|n| {
                    !found.names.contains(n)
                        && (step != Step::Reachable || self.name_tri(entry, n) != Tri::False)
                });
            if !wanted {
                continue;
            }
            found.looked.insert(idx);
            // A damaged segment is reported when the scan reaches it.
            let Ok(seg) = self.open(idx) else { continue };
            for s in seg.schemas() {
                found.add(s);
            }
        }
    }

    /// Adds the schemas of the write-ahead log's batches.
    fn add_wal(&self, found: &mut Found) {
        let next = self.archive.catalog().next_id;
        for b in self.archive.scan_range(next..u64::MAX).flatten() {
            found.add(b.schema());
        }
    }

    /// The warnings of the expression against the archive's schemas: comparisons ill-typed
    /// for the field in some schemas but not all (see [`Query::check`]); the search's results
    /// are as without them.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Makes segment `idx` the current one, unless its catalog entry rules it out (or, when
    /// counting, decides it: its events are counted without opening it); a segment that
    /// cannot be opened gives its result at once.
    fn enter_segment(&mut self, idx: usize) -> Option<Done> {
        let entry = self.entry(idx);
        let mut from_meta = 0u64;
        let mut undecided = entry.schemas.is_empty();
        for (name, n) in &entry.schemas {
            match self.name_tri(entry, name) {
                Tri::True if self.count_only => from_meta += n,
                Tri::False => {}
                _ => undecided = true,
            }
        }
        if !undecided {
            if from_meta == 0 {
                self.stats.segments_pruned += 1;
            } else {
                self.stats.segments_counted += 1;
                self.stats.matched += from_meta;
                self.counted += from_meta;
            }
            return None;
        }
        match self.open(idx) {
            Ok(seg) => {
                self.current = Some((seg, 0));
                None
            }
            Err(e) => Some(Done::damaged(e, entry.batches, entry.events)),
        }
    }

    /// The job for batch `i` of the current segment `seg`, unless its metadata rules it out
    /// (or, when counting, decides it); `None`: nothing to evaluate.
    fn segment_job(&mut self, seg: &Arc<Segment>, i: usize) -> Option<Job> {
        let (schema, ids, _) = seg.batch_meta(i)?;
        let mut program = self.programs.get(self.query, schema).clone();
        if self.prune {
            // `#id` comparisons the batch's IDs decide.
            if let Some(p) = program.for_ids(&ids) {
                program = Arc::new(p);
            }
            if !prune::segment_batch(&program, seg, i) {
                self.stats.batches_pruned += 1;
                return None;
            }
            let rows = (ids.end - ids.start) as u32;
            let from_meta = match program.constant() {
                _ if !self.count_only => None,
                Some(true) => Some(u64::from(rows)),
                _ => seg.sketch(i).and_then(|sk| program.sketch_count(&sk, rows)),
            };
            if let Some(n) = from_meta {
                // Counted from the batch's metadata: no row is read (none matches: as good
                // as pruned).
                if n == 0 {
                    self.stats.batches_pruned += 1;
                } else {
                    self.stats.batches_read += 1;
                }
                self.stats.matched += n;
                self.counted += n;
                return None;
            }
        }
        let keep = self.keep(schema, &program);
        Some(Job {
            program,
            keep,
            batch: JobBatch::Sealed(seg.clone(), i),
            count_only: self.count_only,
            defer_columns: self.defer_columns,
            aggregate: self.aggregate.clone(),
            first: self.first.clone(),
        })
    }

    /// The next batch of the write-ahead log to evaluate, or its damage; `None` at its end.
    fn next_wal(&mut self) -> Option<Result<Job, Done>> {
        loop {
            let archive = self.archive;
            let next = archive.catalog().next_id;
            let wal = self
                .wal
                .get_or_insert_with(|| archive.scan_range(next..u64::MAX));
            let b = match wal.next()? {
                Err(e) => return Some(Err(Done::damaged(e, 1, 0))),
                Ok(b) => b,
            };
            let mut program = self.programs.get(self.query, b.schema()).clone();
            if let (true, Some(p)) = (self.prune, program.for_ids(&b.id_range())) {
                program = Arc::new(p);
            }
            if self.prune && !prune::wal_batch(&program, &b) {
                self.stats.batches_pruned += 1;
                continue;
            }
            return Some(Ok(Job {
                program,
                keep: None,
                batch: JobBatch::Wal(b),
                count_only: self.count_only,
                defer_columns: false,
                aggregate: None,
                first: None,
            }));
        }
    }

    /// The next batch to evaluate, or a result known already; `None` at the end.
    fn next_work(&mut self) -> Option<Result<Job, Done>> {
        if self.ordered.is_some() {
            return self.next_ordered();
        }
        loop {
            if let Some((seg, i)) = self.current.take() {
                if i >= seg.len() {
                    continue;
                }
                self.current = Some((seg.clone(), i + 1));
                if let Some(job) = self.segment_job(&seg, i) {
                    return Some(Ok(job));
                }
                continue;
            }
            if self.next_segment < self.order.len() {
                let idx = self.order[self.next_segment];
                self.next_segment += 1;
                if let Some(done) = self.enter_segment(idx) {
                    return Some(Err(done));
                }
                continue;
            }
            return self.next_wal();
        }
    }

    /// Visits the batches best first by one field (or `#id`, the event ID) instead of in ID
    /// order, for a consumer that keeps the first events by that field (`sort F | head N`,
    /// `tail N`: the largest IDs): the write-ahead log's
    /// batches first (they have no sketch), then the sealed batches by the best value of
    /// `name` their metadata allows (the largest with `desc`, else the smallest; batches
    /// whose bound is unknown first, batches without a value last), and, once
    /// `cutoff` says what the consumer keeps no longer changes, none of the batches that
    /// cannot beat it. Results then come in that order, not in ID order. Called before the
    /// first result; the segments are opened (mapped) now.
    fn order_by(&mut self, name: &str, desc: bool, cutoff: Arc<Cutoff>) {
        let mut damaged = Vec::new();
        let mut planned: Vec<(Best, usize, usize, Arc<Segment>)> = Vec::new();
        for k in 0..self.order.len() {
            let idx = self.order[k];
            let entry = self.entry(idx);
            if !entry.schemas.is_empty()
                && entry
                    .schemas
                    .keys()
                    .all(|n| self.name_tri(entry, n) == Tri::False)
            {
                self.stats.segments_pruned += 1;
                continue;
            }
            match self.open(idx) {
                Ok(seg) => {
                    for i in 0..seg.len() {
                        planned.push((Best::of(&seg, i, name, desc), k, i, seg.clone()));
                    }
                }
                Err(e) => damaged.push(Planned::Damaged(Done::damaged(
                    e,
                    entry.batches,
                    entry.events,
                ))),
            }
        }
        planned.sort_by(|a, b| a.0.order(&b.0, desc).then((a.1, a.2).cmp(&(b.1, b.2))));
        self.next_segment = self.order.len();
        let queue = damaged
            .into_iter()
            .chain(
                planned
                    .into_iter()
                    .map(|(best, _, i, seg)| Planned::Batch { seg, i, best }),
            )
            .collect();
        self.ordered = Some(Ordered {
            queue,
            desc,
            cutoff,
            wal_done: false,
        });
    }

    /// [`Search::next_work`] in the order of [`Search::order_by`].
    fn next_ordered(&mut self) -> Option<Result<Job, Done>> {
        if self.ordered.as_ref().is_some_and(|o| !o.wal_done) {
            if let Some(w) = self.next_wal() {
                return Some(w);
            }
            self.ordered.as_mut()?.wal_done = true;
        }
        loop {
            let ordered = self.ordered.as_mut()?;
            match ordered.queue.pop_front()? {
                Planned::Damaged(done) => return Some(Err(done)),
                Planned::Batch { seg, i, best } => {
                    let first = seg.batch_ids(i).map_or(0, |r| r.start);
                    if ordered.beaten(&best, first) {
                        // The rest are no better: none is read.
                        self.stats.batches_pruned += 1 + ordered.queue.len() as u64;
                        ordered.queue.clear();
                        return None;
                    }
                    if let Some(job) = self.segment_job(&seg, i) {
                        return Some(Ok(job));
                    }
                }
            }
        }
    }

    /// The next batch's result in ID order, after filling the window (`None` at the end).
    fn next_done(&mut self) -> Option<Done> {
        if !self.exhausted && self.archive.is_cancelled() {
            // Told to stop (Archive::cancel_on): no further batch; those in flight come
            // first, then the error.
            self.exhausted = true;
            self.pool.push_ready(Done {
                outcome: Err(QueryError::Cancelled),
                read: false,
                rows_evaluated: 0,
                damaged: (0, 0),
            });
        }
        while !self.exhausted && self.pool.has_room() {
            match self.next_work() {
                None => self.exhausted = true,
                Some(Ok(job)) => self.pool.submit(job),
                Some(Err(done)) => self.pool.push_ready(done),
            }
        }
        let done = match self.pool.next()? {
            Ok(done) => done,
            Err(WorkerLost) => Done {
                outcome: Err(QueryError::Worker),
                read: false,
                rows_evaluated: 0,
                damaged: (0, 0),
            },
        };
        self.stats.batches_read += u64::from(done.read);
        self.stats.rows_evaluated += done.rows_evaluated;
        self.stats.batches_damaged += done.damaged.0;
        self.stats.events_damaged += done.damaged.1;
        match &done.outcome {
            Ok(Outcome::Hits(Some(h))) => self.stats.matched += h.len() as u64,
            Ok(Outcome::Count(n)) => self.stats.matched += n,
            _ => {}
        }
        Some(done)
    }

    fn step(&mut self) -> Option<Result<Hits, QueryError>> {
        loop {
            match self.next_done()?.outcome {
                Ok(Outcome::Hits(Some(h))) => return Some(Ok(h)),
                Ok(_) => continue,
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// The number of matching events (not yet yielded), from the catalog where the expression
    /// allows (a segment whose schema names all answer [`Tri::True`] or [`Tri::False`] is not
    /// opened), else from batch metadata, else from the rows (evaluated on all cores, without
    /// collecting the matches). A damaged segment or batch is an error.
    pub fn count(mut self) -> Result<(u64, SearchStats), QueryError> {
        self.count_only = true;
        let mut total = 0u64;
        while let Some(done) = self.next_done() {
            match done.outcome? {
                Outcome::Count(n) => total += n,
                Outcome::Hits(h) => total += h.map_or(0, |h| h.len() as u64),
            }
        }
        Ok((total + self.counted, self.stats))
    }
}

impl Iterator for Search<'_> {
    type Item = Result<Hits, QueryError>;
    fn next(&mut self) -> Option<Result<Hits, QueryError>> {
        self.step()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::types::Type;

    /// Columns of one `time` field (`None`: unset) per row.
    fn times(values: &[Option<i64>]) -> Columns {
        let (mut data, mut offsets) = (Vec::new(), Vec::new());
        for v in values {
            offsets.push(data.len() as u32);
            let v = v.map_or(Value::Null, Value::Time);
            crate::value::encode_row(&[v], &mut data);
        }
        Columns::split_rows(&data, &offsets, 1, &[]).unwrap()
    }

    fn keep(desc: bool, n: usize, cutoff: Option<(Option<Value>, u64)>) -> KeepFirst {
        KeepFirst {
            name: "ts".into(),
            desc,
            n,
            cutoff: Arc::new(Cutoff::at(cutoff)),
        }
    }

    /// Of a batch, the workers hand out its first `n` rows by the field, and of those only
    /// the ones that beat the consumer's cutoff (a larger value, or an equal one of a smaller
    /// ID, with `desc`; unset last): the others could never be among the consumer's `n`.
    #[test]
    fn a_batch_hands_out_only_rows_that_beat_the_cutoff() {
        let cols = times(&[Some(5), Some(9), None, Some(7), Some(9), Some(1), None]);
        let f = (0, &Type::Time, true);
        let first = 100;
        let rows = |k: &KeepFirst, sel: Option<&[usize]>| first_rows(&cols, f, k, sel, first);
        // No cutoff yet: the first three by value (ties by row).
        assert_eq!(rows(&keep(true, 3, None), None), Some(vec![1, 3, 4]));
        assert_eq!(rows(&keep(false, 2, None), None), Some(vec![0, 5]));
        // Fewer matches than kept: all of them, unset ones too.
        assert_eq!(rows(&keep(true, 3, None), Some(&[2, 5])), None);
        // A cutoff of 9 at ID 101 (row 1 itself): no row beats it.
        let nine = |id| Some((Some(Value::Time(9)), id));
        assert_eq!(rows(&keep(true, 3, nine(101)), None), Some(vec![]));
        // At ID 104 (row 4): row 1 (9 at ID 101) beats it.
        assert_eq!(rows(&keep(true, 3, nine(104)), None), Some(vec![1]));
        // A cutoff of 7 at ID 50: 9 beats it, 7 of a larger ID does not.
        let seven = Some((Some(Value::Time(7)), 50));
        assert_eq!(rows(&keep(true, 3, seven.clone()), None), Some(vec![1, 4]));
        // Ascending: below 7 beats it; unset never does.
        assert_eq!(rows(&keep(false, 9, seven), None), Some(vec![0, 5]));
        // The cutoff is unset: every set value beats it, and an unset one of a smaller ID.
        let unset = Some((None, 103));
        assert_eq!(
            rows(&keep(true, 9, unset.clone()), None),
            Some(vec![0, 1, 2, 3, 4, 5])
        );
        // With a selection: only selected rows.
        assert_eq!(
            rows(&keep(true, 9, unset), Some(&[2, 5, 6])),
            Some(vec![2, 5])
        );
        // A cutoff of another type rules nothing out.
        let other = Some((Some(Value::Count(7)), 0));
        assert_eq!(rows(&keep(true, 2, other), None), Some(vec![1, 4]));
    }
}
