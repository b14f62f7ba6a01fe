//! Running a query over an archive: prune, then evaluate rows in place, in ID order.
//!
//! 1. Before anything is read, the expression is type-checked against the schemas it can
//!    reach (one segment per schema name, chosen among those that pruning keeps; the WAL's
//!    schemas too when a comparison is ill-typed in all of those).
//! 2. Segments whose catalog entry cannot match ([`prune::by_name`]: `#type`, and
//!    `#timestamp`/`:timestamp` against the segment's `ts` range) are not opened.
//! 3. In an opened segment, batches whose schema cannot match, whose `ts` range cannot
//!    satisfy the `ts` comparisons, or whose sketch (format 3) proves that no row matches are
//!    skipped without verifying or reading their rows ([`Program::may_match`],
//!    [`Program::sketch_may_match`]).
//! 4. The rows of the other batches are evaluated in place ([`Program::matches`]); a batch
//!    whose schema matches as a whole is taken without reading a row.
//!
//! The active segment (the WAL) comes last, pruned by batch. [`SearchStats`] counts what was
//! opened, skipped and read: the tests check pruning with it.

use std::collections::{HashSet, VecDeque};
use std::ops::Range;
use std::sync::Arc;

use super::bind::Program;
use super::prune::{self, Tri};
use super::{Query, QueryError};
use crate::segment::{RowIter, Segment};
use crate::store::{Archive, BatchRef, CatalogEntry, Scan};
use crate::types::SchemaRef;

/// How a search runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchOptions {
    /// Skip segments and batches by their metadata (default). Off, every row is evaluated:
    /// the same results, slower (the tests compare both).
    pub prune: bool,
}

impl Default for SearchOptions {
    fn default() -> SearchOptions {
        SearchOptions { prune: true }
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
    /// Batches skipped by their schema or `ts` range.
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

/// The matching events of one batch slice.
#[derive(Debug, Clone)]
pub struct Hits {
    batch: BatchRef,
    /// Row indices within the slice, ascending; `None`: all of them.
    rows: Option<Vec<usize>>,
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
    list: Vec<Program>,
}

impl Programs {
    pub(crate) fn get(&mut self, query: &Query, schema: &SchemaRef) -> &Program {
        let i = match self
            .list
            .iter()
            .position(|p| Arc::ptr_eq(&p.schema, schema))
            .or_else(|| self.list.iter().position(|p| *p.schema == **schema))
        {
            Some(i) => i,
            None => {
                self.list.push(query.bind(schema));
                self.list.len() - 1
            }
        };
        &self.list[i]
    }
}

/// An iterator over the matching events of an archive, batch by batch, in ID order; see
/// [`Query::search`]. A damaged segment or batch yields one error and the search goes on.
#[derive(Debug)]
pub struct Search<'a> {
    archive: &'a Archive,
    query: &'a Query,
    prune: bool,
    /// Catalog indices in ID order.
    order: Vec<usize>,
    next_segment: usize,
    /// ID ranges of the batches of the current segment still to read.
    pending: VecDeque<Range<u64>>,
    wal: Option<Scan<'a>>,
    done: bool,
    programs: Programs,
    opened: HashSet<usize>,
    stats: SearchStats,
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
        let mut s = Search {
            archive,
            query,
            prune: options.prune,
            order,
            next_segment: 0,
            pending: VecDeque::new(),
            wal: None,
            done: false,
            programs: Programs::default(),
            opened: HashSet::new(),
            stats: SearchStats {
                segments: catalog.segments.len() as u64,
                ..SearchStats::default()
            },
        };
        s.check_types()?;
        Ok(s)
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
        prune::by_name(self.query.expr(), name, entry.ts.map(|[a, b]| (a, b)))
    }

    /// Type-checks field comparisons against a definition of every schema name the search
    /// can reach; the WAL's schemas are added only when that finds a comparison ill-typed.
    fn check_types(&mut self) -> Result<(), QueryError> {
        if !self.query.has_field_predicates() {
            return Ok(());
        }
        let mut schemas: Vec<SchemaRef> = Vec::new();
        let mut known: HashSet<String> = HashSet::new();
        for k in 0..self.order.len() {
            let idx = self.order[k];
            let entry = self.entry(idx);
            let wanted = entry
                .schemas
                .keys()
                .any(|n| !known.contains(n) && self.name_tri(entry, n) != Tri::False);
            if !wanted {
                continue;
            }
            // A damaged segment is reported when the scan reaches it.
            let Ok(seg) = self.open(idx) else { continue };
            for s in seg.schemas() {
                known.insert(s.name.clone());
                if !schemas.iter().any(|x| **x == **s) {
                    schemas.push(s.clone());
                }
            }
        }
        if self.query.check_types(&schemas).is_ok() {
            return Ok(());
        }
        let next = self.archive.catalog().next_id;
        for b in self.archive.scan_range(next..u64::MAX).flatten() {
            if !schemas.iter().any(|x| **x == **b.schema()) {
                schemas.push(b.schema().clone());
            }
        }
        Ok(self.query.check_types(&schemas)?)
    }

    /// Queues the batches of segment `idx` that may match; `false` when the segment was
    /// skipped by its catalog entry.
    fn enter_segment(&mut self, idx: usize) -> Result<bool, QueryError> {
        let entry = self.entry(idx);
        if entry
            .schemas
            .keys()
            .all(|n| self.name_tri(entry, n) == Tri::False)
            && !entry.schemas.is_empty()
        {
            self.stats.segments_pruned += 1;
            return Ok(false);
        }
        let seg = match self.open(idx) {
            Ok(seg) => seg,
            Err(e) => {
                self.stats.batches_damaged += entry.batches;
                self.stats.events_damaged += entry.events;
                return Err(e);
            }
        };
        for i in 0..seg.len() {
            let Some((schema, ids, ts)) = seg.batch_meta(i) else {
                continue;
            };
            if self.prune {
                let p = self.programs.get(self.query, schema);
                if p.constant() == Some(false)
                    || !p.may_match(ts)
                    || seg.sketch(i).is_some_and(|sk| !p.sketch_may_match(&sk))
                {
                    self.stats.batches_pruned += 1;
                    continue;
                }
            }
            self.pending.push_back(ids);
        }
        Ok(true)
    }

    /// Whether a batch of the WAL is skipped by its schema or `ts` range.
    fn skip_batch(&mut self, b: &BatchRef) -> bool {
        if !self.prune {
            return false;
        }
        let p = self.programs.get(self.query, b.schema());
        let skip = p.constant() == Some(false) || !p.may_match(b.ts_range());
        if skip {
            self.stats.batches_pruned += 1;
        }
        skip
    }

    /// The matching rows of a batch slice.
    fn evaluate(&mut self, b: BatchRef) -> Result<Option<Hits>, QueryError> {
        self.stats.batches_read += 1;
        let p = self.programs.get(self.query, b.schema());
        let rows = match p.constant() {
            Some(true) => None,
            Some(false) => return Ok(None),
            None => {
                let mut sel = Vec::new();
                for (i, row) in b.rows().enumerate() {
                    self.stats.rows_evaluated += 1;
                    if p.matches(row)? {
                        sel.push(i);
                    }
                }
                Some(sel)
            }
        };
        let hits = Hits { batch: b, rows };
        if hits.is_empty() {
            return Ok(None);
        }
        self.stats.matched += hits.len() as u64;
        Ok(Some(hits))
    }

    fn step(&mut self) -> Option<Result<Hits, QueryError>> {
        loop {
            if let Some(ids) = self.pending.pop_front() {
                let b = match self.archive.scan_range(ids.clone()).next() {
                    None => continue,
                    Some(Err(e)) => {
                        self.stats.batches_damaged += 1;
                        self.stats.events_damaged += ids.end - ids.start;
                        return Some(Err(e.into()));
                    }
                    Some(Ok(b)) => b,
                };
                match self.evaluate(b) {
                    Ok(None) => continue,
                    Ok(Some(h)) => return Some(Ok(h)),
                    Err(e) => return Some(Err(e)),
                }
            }
            if self.next_segment < self.order.len() {
                let idx = self.order[self.next_segment];
                self.next_segment += 1;
                if let Err(e) = self.enter_segment(idx) {
                    return Some(Err(e));
                }
                continue;
            }
            if self.done {
                return None;
            }
            let archive = self.archive;
            let next = archive.catalog().next_id;
            let wal = self
                .wal
                .get_or_insert_with(|| archive.scan_range(next..u64::MAX));
            let b = match wal.next() {
                None => {
                    self.done = true;
                    return None;
                }
                Some(Err(e)) => {
                    self.stats.batches_damaged += 1;
                    return Some(Err(e.into()));
                }
                Some(Ok(b)) => b,
            };
            if self.skip_batch(&b) {
                continue;
            }
            match self.evaluate(b) {
                Ok(None) => continue,
                Ok(Some(h)) => return Some(Ok(h)),
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// The number of matching events, from the catalog where the expression allows (a
    /// segment whose schema names all answer [`Tri::True`] or [`Tri::False`] is not opened),
    /// else from batch metadata, else from the rows. A damaged segment is an error.
    pub fn count(mut self) -> Result<(u64, SearchStats), QueryError> {
        let mut total = 0u64;
        if !self.prune {
            while let Some(h) = self.step() {
                total += h?.len() as u64;
            }
            return Ok((total, self.stats));
        }
        for k in 0..self.order.len() {
            let idx = self.order[k];
            let entry = self.entry(idx);
            let mut from_meta = 0u64;
            let mut undecided = false;
            for (name, n) in &entry.schemas {
                match self.name_tri(entry, name) {
                    Tri::True => from_meta += n,
                    Tri::False => {}
                    Tri::Maybe => undecided = true,
                }
            }
            if !undecided {
                total += from_meta;
                if from_meta == 0 {
                    self.stats.segments_pruned += 1;
                } else {
                    self.stats.segments_counted += 1;
                }
                self.stats.matched += from_meta;
                continue;
            }
            let seg = self.open(idx)?;
            for i in 0..seg.len() {
                let Some((schema, ids, ts)) = seg.batch_meta(i) else {
                    continue;
                };
                let p = self.programs.get(self.query, schema);
                match p.constant() {
                    Some(false) => self.stats.batches_pruned += 1,
                    Some(true) => {
                        self.stats.batches_read += 1;
                        self.stats.matched += ids.end - ids.start;
                        total += ids.end - ids.start;
                    }
                    None if !p.may_match(ts)
                        || seg.sketch(i).is_some_and(|sk| !p.sketch_may_match(&sk)) =>
                    {
                        self.stats.batches_pruned += 1
                    }
                    None => {
                        if let Some(b) = self.archive.scan_range(ids).next() {
                            if let Some(h) = self.evaluate(b?)? {
                                total += h.len() as u64;
                            }
                        }
                    }
                }
            }
        }
        self.next_segment = self.order.len();
        while let Some(h) = self.step() {
            total += h?.len() as u64;
        }
        Ok((total, self.stats))
    }
}

impl Iterator for Search<'_> {
    type Item = Result<Hits, QueryError>;
    fn next(&mut self) -> Option<Result<Hits, QueryError>> {
        self.step()
    }
}
