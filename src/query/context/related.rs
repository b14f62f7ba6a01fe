//! The second search of `explore` and `pivot`: over the events a pre-filter query lets
//! through (in ID order, pruned like any search), a [`Selector`] decides row by row which are
//! output; they come out as [`Related`] batch slices, at most a given number in all.

use crate::segment::RowIter;
use crate::store::{Archive, BatchRef};
use crate::types::SchemaRef;
use crate::value::DecodeError;

use super::super::{Query, QueryError, Search, SearchStats};

/// Output events of `explore` or `pivot`: some rows of one batch slice, in ID order.
#[derive(Debug, Clone)]
pub struct Related {
    batch: BatchRef,
    /// Row indices within the slice, ascending, not empty.
    rows: Vec<usize>,
}

impl Related {
    /// The schema of the events.
    pub fn schema(&self) -> &SchemaRef {
        self.batch.schema()
    }

    /// The number of events.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are none (never for a yielded `Related`).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The IDs of the events, ascending.
    pub fn ids(&self) -> Vec<u64> {
        let first = self.batch.first_id();
        self.rows.iter().map(|&i| first + i as u64).collect()
    }

    /// The encoded rows of the events (see [`crate::value`]).
    pub fn rows(&self) -> RelatedRows<'_> {
        RelatedRows {
            rows: self.batch.rows(),
            selected: &self.rows,
            index: 0,
            next: 0,
        }
    }
}

/// The rows of a [`Related`].
#[derive(Debug)]
pub struct RelatedRows<'a> {
    rows: RowIter<'a>,
    selected: &'a [usize],
    index: usize,
    next: usize,
}

impl<'a> Iterator for RelatedRows<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let want = *self.selected.get(self.next)?;
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

/// Decides which events of the second search are output.
pub(crate) trait Selector {
    /// Called before the rows of a batch of `schema`.
    fn prepare(&mut self, schema: &SchemaRef);
    /// Whether `row` (of the schema last prepared) is output; called in ID order.
    fn select(&mut self, row: &[u8]) -> Result<bool, DecodeError>;
    /// Whether no later event can be selected (the search stops).
    fn exhausted(&self) -> bool;
}

/// The second search: the pre-filter's matches, narrowed by a [`Selector`], at most `left`.
#[derive(Debug)]
pub(crate) struct RelatedSearch<'a, S> {
    search: Search<'a>,
    selector: S,
    left: u64,
}

impl<'a, S: Selector> RelatedSearch<'a, S> {
    pub(crate) fn new(
        archive: &'a Archive,
        prefilter: &'a Query,
        selector: S,
        limit: u64,
    ) -> Result<RelatedSearch<'a, S>, QueryError> {
        Ok(RelatedSearch {
            search: prefilter.search(archive)?,
            selector,
            left: limit,
        })
    }

    /// What the search has touched so far.
    pub(crate) fn stats(&self) -> &SearchStats {
        self.search.stats()
    }
}

impl<S: Selector> Iterator for RelatedSearch<'_, S> {
    type Item = Result<Related, QueryError>;
    fn next(&mut self) -> Option<Result<Related, QueryError>> {
        loop {
            if self.left == 0 || self.selector.exhausted() {
                return None;
            }
            let hits = match self.search.next()? {
                Ok(h) => h,
                Err(e) => return Some(Err(e)),
            };
            let batch = hits.batch().clone();
            let first = batch.first_id();
            self.selector.prepare(batch.schema());
            let mut rows = Vec::new();
            for (row, id) in hits.rows().zip(hits.ids()) {
                match self.selector.select(row) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => return Some(Err(e.into())),
                }
                rows.push((id - first) as usize);
                if rows.len() as u64 == self.left || self.selector.exhausted() {
                    break;
                }
            }
            if rows.is_empty() {
                continue;
            }
            self.left -= rows.len() as u64;
            return Some(Ok(Related { batch, rows }));
        }
    }
}
