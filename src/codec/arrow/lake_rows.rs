//! Rows of one schema turned into the lake's record batches, one per partition day
//! ([`LakeRows`]), on whichever thread calls it: the threads of a
//! [`ParallelLakeWriter`](super::ParallelLakeWriter) build them, the
//! [`LakeWriter`](super::LakeWriter) writes them ([`super::lake`]). A batch stored in columns
//! is converted column by column ([`LakeRows::build_columns`]), to the same record batches as
//! from its rows.

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::Schema as ArrowSchema;

use super::builder::ArrowBuilder;
use super::partition_day::{day_of, row_day};
use super::ArrowCodecError;
use crate::segment::Columns;
use crate::types::{SchemaRef, Type};
use crate::value::{DecodeError, RowCursor, NIL};

/// Finishes `builder` (of the rows of `day`) into `batches` unless it is empty, and keeps it
/// for another batch.
fn finish_into(
    batches: &mut Vec<(Option<i64>, RecordBatch)>,
    day: Option<i64>,
    mut builder: ArrowBuilder,
    spare: &Spare,
) -> Result<(), ArrowCodecError> {
    if !builder.is_empty() {
        batches.push((day, builder.finish()?));
    }
    spare.give(builder);
    Ok(())
}

/// The error for column `c` of a batch of `schema` that does not decode.
fn column_error(schema: &SchemaRef, c: usize, source: DecodeError) -> ArrowCodecError {
    ArrowCodecError::DecodeColumn {
        schema: schema.name.clone(),
        field: schema
            .fields
            .get(c)
            .map_or_else(String::new, |f| f.name.clone()),
        source,
    }
}

/// Rows of one schema as record batches, one per partition day (in the order of each day's
/// first row; a day with more than [`ArrowBuilder::MAX_BYTES`] of rows has several).
#[derive(Debug)]
pub(super) struct LakeRows {
    schema: SchemaRef,
    batches: Vec<(Option<i64>, RecordBatch)>,
}

/// Builders not in use, kept with their buffers' capacity: a builder made for every batch would
/// grow its buffers from nothing each time.
#[derive(Debug, Default)]
pub(super) struct Spare(Mutex<Vec<ArrowBuilder>>);

impl Spare {
    /// Spare builders kept at most.
    const MAX: usize = 16;

    /// A builder for `schema`, whose Arrow schema is `arrow`.
    fn take(&self, schema: &SchemaRef, arrow: &Arc<ArrowSchema>) -> ArrowBuilder {
        let mut spare = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match spare
            .iter()
            .position(|b| Arc::ptr_eq(b.arrow_schema(), arrow))
        {
            Some(i) => spare.swap_remove(i),
            None => ArrowBuilder::with_arrow_schema(schema.clone(), arrow.clone()),
        }
    }

    /// Keeps `b` (empty) for another batch.
    fn give(&self, b: ArrowBuilder) {
        let mut spare = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if b.is_empty() && spare.len() < Self::MAX {
            spare.push(b);
        }
    }
}

impl LakeRows {
    /// Converts `rows` of `schema`; `arrow` is its Arrow schema ([`super::arrow_schema`]).
    /// A row that is not of the schema is an error naming its index among `rows`.
    pub(super) fn build<'a>(
        schema: &SchemaRef,
        arrow: &Arc<ArrowSchema>,
        rows: impl Iterator<Item = &'a [u8]>,
        spare: &Spare,
    ) -> Result<LakeRows, ArrowCodecError> {
        let ts_index = schema.ts_index();
        let mut batches = Vec::new();
        // The builders of the days met so far, in order, and the one of the last row.
        let mut days: Vec<(Option<i64>, ArrowBuilder)> = Vec::new();
        let mut current = 0;
        for (i, row) in rows.enumerate() {
            let day = row_day(row, schema, ts_index);
            if days.get(current).is_none_or(|(d, _)| *d != day) {
                current = match days.iter().position(|(d, _)| *d == day) {
                    Some(k) => k,
                    None => {
                        days.push((day, spare.take(schema, arrow)));
                        days.len() - 1
                    }
                };
            }
            let (_, builder) = &mut days[current];
            // On an error the builders are dropped: a failed row leaves its columns uneven.
            builder
                .append(row)
                .map_err(|source| ArrowCodecError::Decode {
                    schema: schema.name.clone(),
                    row: i,
                    source,
                })?;
            if builder.is_full() {
                batches.push((day, builder.finish()?));
            }
        }
        for (day, builder) in days {
            finish_into(&mut batches, day, builder, spare)?;
        }
        Ok(LakeRows {
            schema: schema.clone(),
            batches,
        })
    }

    /// Converts a batch stored in columns, `cols` of `schema`, as [`LakeRows::build`] converts
    /// its rows (the same record batches): the rows' days are read from the `ts` column, and
    /// each column is appended to the builders of those days in runs of consecutive rows of
    /// one day. `None` when the batch is too large for one record batch
    /// ([`ArrowBuilder::MAX_BYTES`]): convert its rows.
    pub(super) fn build_columns(
        schema: &SchemaRef,
        arrow: &Arc<ArrowSchema>,
        cols: &Columns,
        spare: &Spare,
    ) -> Result<Option<LakeRows>, ArrowCodecError> {
        if cols.raw_size() >= ArrowBuilder::MAX_BYTES {
            return Ok(None);
        }
        // The days met, in order, and runs of rows of one day: (index among `days`, rows).
        let mut days: Vec<Option<i64>> = Vec::new();
        let mut runs: Vec<(usize, usize)> = Vec::new();
        match schema.ts_index() {
            None => runs.push((0, cols.rows())),
            Some(t) => {
                let mut r = RowCursor::new(cols.column(t));
                let bad = |source| column_error(schema, t, source);
                for _ in 0..cols.rows() {
                    let day = match r.marker().map_err(bad)? {
                        NIL => None,
                        m => Some(day_of(r.int(m, &Type::Time).map_err(bad)?)),
                    };
                    let k = days.iter().position(|d| *d == day).unwrap_or_else(|| {
                        days.push(day);
                        days.len() - 1
                    });
                    match runs.last_mut() {
                        Some((last, n)) if *last == k => *n += 1,
                        _ => runs.push((k, 1)),
                    }
                }
            }
        }
        if days.is_empty() {
            days.push(None);
        }
        let mut builders: Vec<ArrowBuilder> =
            days.iter().map(|_| spare.take(schema, arrow)).collect();
        // On an error the builders are dropped: a failed column leaves them uneven.
        ArrowBuilder::append_column_runs(&mut builders, cols, &runs).map_err(
            |(field, source)| ArrowCodecError::DecodeColumn {
                schema: schema.name.clone(),
                field,
                source,
            },
        )?;
        let mut batches = Vec::with_capacity(days.len());
        for (day, builder) in days.into_iter().zip(builders) {
            finish_into(&mut batches, day, builder, spare)?;
        }
        Ok(Some(LakeRows {
            schema: schema.clone(),
            batches,
        }))
    }

    /// The schema and the record batches with their days.
    pub(super) fn into_parts(self) -> (SchemaRef, Vec<(Option<i64>, RecordBatch)>) {
        (self.schema, self.batches)
    }
}
