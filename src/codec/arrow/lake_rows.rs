//! Rows of one schema turned into the lake's record batches, one per partition day
//! ([`LakeRows`]), on whichever thread calls it: the threads of a
//! [`ParallelLakeWriter`](super::ParallelLakeWriter) build them, the
//! [`LakeWriter`](super::LakeWriter) writes them ([`super::lake`]). A batch stored in columns
//! is decoded from its columns ([`LakeRows::build_columns`], [`super::decode`]), to the same
//! record batches as from its rows.

use std::sync::{Arc, Mutex};

use arrow_array::{Array, RecordBatch, TimestampNanosecondArray, UInt32Array};
use arrow_schema::Schema as ArrowSchema;
use arrow_select::take::take_record_batch;

use super::builder::ArrowBuilder;
use super::decode::decode_columns;
use super::partition_day::{day_of, row_day};
use super::ArrowCodecError;
use crate::segment::Columns;
use crate::types::SchemaRef;

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

    /// Converts a batch stored in columns, `cols` of `schema` (its rows `select`, ascending;
    /// `None`: all), as [`LakeRows::build`] converts those rows (the same record batches):
    /// decoded once ([`decode_columns`]), then, when its
    /// rows fall on several days (read from the `ts` array), taken apart by day. `None` when
    /// the batch is too large for one record batch ([`ArrowBuilder::MAX_BYTES`]): convert its
    /// rows.
    pub(super) fn build_columns(
        schema: &SchemaRef,
        arrow: &Arc<ArrowSchema>,
        cols: &Columns,
        select: Option<&[usize]>,
    ) -> Result<Option<LakeRows>, ArrowCodecError> {
        if cols.raw_size() >= ArrowBuilder::MAX_BYTES {
            return Ok(None);
        }
        let batch = decode_columns(schema, arrow, cols, None, select)?;
        // The days met, in order of their first row, and each row's among them.
        let mut days: Vec<Option<i64>> = Vec::new();
        let mut of_row: Vec<usize> = Vec::new();
        let ts = schema.ts_index().and_then(|t| {
            batch
                .column(t)
                .as_any()
                .downcast_ref::<TimestampNanosecondArray>()
        });
        if let Some(ts) = ts {
            of_row.reserve(ts.len());
            for r in 0..ts.len() {
                let day = ts.is_valid(r).then(|| day_of(ts.value(r)));
                let k = match days.last() {
                    Some(d) if *d == day => days.len() - 1,
                    _ => days.iter().position(|d| *d == day).unwrap_or_else(|| {
                        days.push(day);
                        days.len() - 1
                    }),
                };
                of_row.push(k);
            }
        }
        let mut batches = Vec::with_capacity(days.len().max(1));
        match days.len() {
            0 if batch.num_rows() == 0 => {}
            0 => batches.push((None, batch)),
            1 => batches.push((days[0], batch)),
            _ => {
                for (k, day) in days.iter().enumerate() {
                    let rows: UInt32Array = (0..of_row.len())
                        .filter(|&r| of_row[r] == k)
                        .map(|r| r as u32)
                        .collect();
                    batches.push((*day, take_record_batch(&batch, &rows)?));
                }
            }
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
