//! Erasing by expression: a [`Query`] as the store's [`EventSelector`] (`weir erase EXPR`,
//! `--before`, `--older-than`), deciding from the catalog entry, then batch metadata, then the
//! rows, exactly as a search would select them.

use std::ops::Range;

use super::bind::Program;
use super::prune::{self, Tri};
use super::Query;
use crate::store::{CatalogEntry, EventSelector};
use crate::types::SchemaRef;
use crate::value::DecodeError;

/// Selects the events a query matches.
#[derive(Debug)]
pub struct QuerySelector<'a> {
    query: &'a Query,
    programs: Vec<Program>,
}

impl<'a> QuerySelector<'a> {
    /// The events `query` matches.
    pub fn new(query: &'a Query) -> QuerySelector<'a> {
        QuerySelector {
            query,
            programs: Vec::new(),
        }
    }

    fn program(&mut self, schema: &SchemaRef) -> &Program {
        let i =
            match self.programs.iter().position(|p| {
                std::sync::Arc::ptr_eq(p.schema(), schema) || **p.schema() == **schema
            }) {
                Some(i) => i,
                None => {
                    self.programs.push(self.query.bind(schema));
                    self.programs.len() - 1
                }
            };
        &self.programs[i]
    }
}

impl EventSelector for QuerySelector<'_> {
    fn segment(&mut self, entry: &CatalogEntry) -> Option<bool> {
        let mut all = Tri::True;
        let mut none = true;
        for name in entry.schemas.keys() {
            match prune::by_entry(self.query.expr(), name, entry) {
                Tri::True => none = false,
                Tri::False => all = Tri::False,
                Tri::Maybe => {
                    none = false;
                    all = Tri::Maybe;
                }
            }
        }
        if none {
            Some(false)
        } else if all == Tri::True {
            Some(true)
        } else {
            None
        }
    }

    fn batch(
        &mut self,
        schema: &SchemaRef,
        ids: Range<u64>,
        ts: Option<(i64, i64)>,
    ) -> Option<bool> {
        let p = self.program(schema);
        let decided = p.for_ids(&ids);
        let p = decided.as_ref().unwrap_or(p);
        match p.constant() {
            Some(answer) => Some(answer),
            None if !p.may_match(ts) => Some(false),
            None => None,
        }
    }

    fn row(&mut self, schema: &SchemaRef, id: u64, row: &[u8]) -> Result<bool, DecodeError> {
        self.program(schema).matches_id(row, id)
    }
}
