//! Named fields of a schema, read from encoded rows: the fields a field extractor names (the
//! language's rule, [`super::super::bind::names_field`]: the full dotted name, a suffix at a
//! dot, or schema-qualified) and the event's `ts`, stepped to in one pass over the row.

use std::ops::ControlFlow;

use crate::query::{Hits, Query, QueryError};
use crate::store::Archive;
use crate::types::{Schema, SchemaRef, Type};
use crate::value::{DecodeError, RowCursor, ValueRef};

use super::super::bind::names_field;
use super::ContextError;

/// The fields of `schema` that the field extractor `name` names, in schema order (a
/// concept's, [`crate::query::concepts`], in the order of its entries).
pub(crate) fn named(schema: &Schema, name: &str) -> Vec<usize> {
    if let Some(fields) = crate::query::concepts::active().fields_in(name, schema) {
        return fields;
    }
    schema
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| names_field(schema, &f.name, name))
        .map(|(i, _)| i)
        .collect()
}

/// Reads some fields of the rows of one schema.
#[derive(Debug, Clone)]
pub(crate) struct RowFields {
    /// The number of fields of a row.
    width: usize,
    /// The fields read, ascending, with their types.
    wanted: Vec<(usize, Type)>,
}

impl RowFields {
    /// A reader of the fields `wanted` (indices into `schema.fields`; duplicates are read once).
    pub(crate) fn new(schema: &Schema, wanted: &[usize]) -> RowFields {
        let mut idx: Vec<usize> = wanted
            .iter()
            .copied()
            .filter(|&i| i < schema.fields.len())
            .collect();
        idx.sort_unstable();
        idx.dedup();
        RowFields {
            width: schema.fields.len(),
            wanted: idx
                .into_iter()
                .map(|i| (i, schema.fields[i].ty.clone()))
                .collect(),
        }
    }

    /// The position of field `field` in what [`RowFields::read`] gives (`None`: not read).
    pub(crate) fn slot(&self, field: usize) -> Option<usize> {
        self.wanted.iter().position(|(i, _)| *i == field)
    }

    /// The values of the wanted fields of `row`, in ascending field order, into `out`
    /// (cleared first).
    pub(crate) fn read<'a>(
        &self,
        row: &'a [u8],
        out: &mut Vec<ValueRef<'a>>,
    ) -> Result<(), DecodeError> {
        out.clear();
        if self.wanted.is_empty() {
            return Ok(());
        }
        let mut c = RowCursor::new(row);
        c.row_header(self.width)?;
        let mut next = 0;
        for (field, ty) in &self.wanted {
            c.skip_many(field - next)?;
            out.push(c.read(ty)?);
            next = field + 1;
        }
        Ok(())
    }
}

/// An emptied buffer of values, without the borrow of the row it held, for the next row (its
/// allocation is kept: an empty iterator collected into a vector of the same layout reuses
/// it).
pub(crate) fn recycle(mut v: Vec<ValueRef<'_>>) -> Vec<ValueRef<'static>> {
    v.clear();
    v.into_iter().map(|_| ValueRef::Null).collect()
}

/// Runs `query` over `archive` and calls `each` with every batch of its results and what
/// `fields` made of the batch's schema (once per distinct schema). A damaged segment or batch
/// goes to `errors` and the search goes on; `each` ends it early with [`ControlFlow::Break`].
pub(crate) fn search_batches<T>(
    archive: &Archive,
    query: &Query,
    errors: &mut Vec<QueryError>,
    mut fields: impl FnMut(&SchemaRef) -> T,
    mut each: impl FnMut(&Hits, &T) -> Result<ControlFlow<()>, ContextError>,
) -> Result<(), ContextError> {
    let mut cache: Vec<(SchemaRef, T)> = Vec::new();
    for hits in query.search(archive)? {
        let hits = match hits {
            Ok(h) => h,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let schema = hits.schema();
        let i = match cache.iter().position(|(s, _)| **s == **schema) {
            Some(i) => i,
            None => {
                cache.push((schema.clone(), fields(schema)));
                cache.len() - 1
            }
        };
        if each(&hits, &cache[i].1)?.is_break() {
            break;
        }
    }
    Ok(())
}
