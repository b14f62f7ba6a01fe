//! Building the lake's record batches on a pool of threads.
//!
//! [`LakeWriter::write_rows`] decodes msgpack rows into Arrow columns on the caller's thread,
//! which for an export is the one thread that also feeds every Parquet encoder: with the
//! search and the encoders on other threads, that thread was the bottleneck. A
//! [`ParallelLakeWriter`] sends each batch of rows (a search's hits, a [`Batch`]) to a pool
//! of threads that turn it into [`LakeRows`] — one record batch per day among its rows — and
//! hands them to the [`LakeWriter`] in the order the batches were given. The lake is the same
//! whatever the number of threads, byte for byte: the record batches depend only on the batches
//! given, and each goes whole to its partition's file, in order
//! ([`LakeWriter::write_converted`]).
//!
//! A batch that comes as columns ([`SchemaRows::columns`]: `weir export` of a batch stored in
//! columns and taken whole) is converted column by column, each column appended to the
//! builders of its rows' days in runs; the rows are never rebuilt (exporting W1000 from its
//! default archive: 3.1-3.4 s before, 2.4-2.5 s with this). The record batches are the same
//! as from its rows, so the lake is too.
//!
//! Memory: at most four batches per thread are being converted or wait for their turn.

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::Schema as ArrowSchema;

use super::builder::ArrowBuilder;
use super::lake::{day_of, row_day, LakeSummary, LakeWriter};
use super::schema::arrow_schema;
use super::ArrowCodecError;
use crate::batch::Batch;
use crate::pool::{OrderedPool, WorkerLost};
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

/// Rows of one schema that a thread of a [`ParallelLakeWriter`] can convert.
pub trait SchemaRows: Send + 'static {
    /// The schema of the rows.
    fn schema(&self) -> &SchemaRef;
    /// The msgpack rows (see [`crate::value`]).
    fn rows(&self) -> impl Iterator<Item = &[u8]> + '_;
    /// The same rows as columns, when they come as such (a batch stored in columns, all its
    /// rows): converted column by column, without the rows being rebuilt. `None` (the
    /// default): convert [`SchemaRows::rows`].
    fn columns(&self) -> Option<Result<Columns, Box<dyn std::error::Error + Send + Sync>>> {
        None
    }
}

impl SchemaRows for Batch {
    fn schema(&self) -> &SchemaRef {
        Batch::schema(self)
    }
    fn rows(&self) -> impl Iterator<Item = &[u8]> + '_ {
        Batch::rows(self)
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
struct Spare(Mutex<Vec<ArrowBuilder>>);

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
    fn build<'a>(
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
    fn build_columns(
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

/// A conversion job: the rows, how many of them, the Arrow schema.
type Job<J> = (J, usize, Arc<ArrowSchema>);

/// Outstanding batches per thread at most.
const WINDOW_PER_THREAD: usize = 4;

/// A [`LakeWriter`] whose record batches are built on a pool of threads: each batch of rows
/// given to [`ParallelLakeWriter::write`] becomes, on one of the threads, one record batch per
/// day among its rows, and these go to the lake in the order the batches were given. The lake
/// is the same, byte for byte, whatever the number of threads; it holds the same rows in the
/// same files and row groups as [`LakeWriter::write_rows`] of the same rows would write. At
/// most four batches per thread are being converted or wait for their turn.
pub struct ParallelLakeWriter<J: SchemaRows> {
    writer: LakeWriter,
    pool: OrderedPool<Job<J>, Result<LakeRows, ArrowCodecError>>,
    /// The Arrow schema of each schema met.
    arrows: Vec<(SchemaRef, Arc<ArrowSchema>)>,
}

impl<J: SchemaRows> std::fmt::Debug for ParallelLakeWriter<J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParallelLakeWriter")
            .field("writer", &self.writer)
            .field("pool", &self.pool)
            .finish()
    }
}

impl<J: SchemaRows> ParallelLakeWriter<J> {
    /// Writes into `writer` with `threads` converting threads: 0 is one per core; with 1 the
    /// rows are converted on the caller's thread.
    pub fn new(writer: LakeWriter, threads: usize) -> ParallelLakeWriter<J> {
        let threads = match threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let spare = Spare::default();
        let pool = OrderedPool::new(threads, threads * WINDOW_PER_THREAD, move |job: Job<J>| {
            let (rows, take, arrow) = job;
            let schema = rows.schema();
            match rows.columns() {
                Some(Err(source)) => {
                    return Err(ArrowCodecError::Read {
                        schema: schema.name.clone(),
                        source,
                    })
                }
                Some(Ok(cols)) if take >= cols.rows() => {
                    let built = LakeRows::build_columns(schema, &arrow, &cols, &spare);
                    if let Some(done) = built.transpose() {
                        return done;
                    }
                }
                _ => {}
            }
            LakeRows::build(schema, &arrow, rows.rows().take(take), &spare)
        });
        ParallelLakeWriter {
            writer,
            pool,
            arrows: Vec::new(),
        }
    }

    /// Queues the first `take` rows of `rows`; writes converted ones while the queue is full.
    /// An error leaves the lake with the files completed so far; the writer must not be used
    /// further.
    pub fn write(&mut self, rows: J, take: usize) -> Result<(), ArrowCodecError> {
        while !self.pool.has_room() {
            self.write_next()?;
        }
        let schema = rows.schema();
        let arrow = match self
            .arrows
            .iter()
            .find(|(s, _)| Arc::ptr_eq(s, schema) || **s == **schema)
        {
            Some((_, a)) => a.clone(),
            None => {
                let a = Arc::new(arrow_schema(schema));
                self.arrows.push((schema.clone(), a.clone()));
                a
            }
        };
        self.pool.submit((rows, take, arrow));
        Ok(())
    }

    /// Writes the next converted batch, waiting for it; `false` when none is outstanding.
    fn write_next(&mut self) -> Result<bool, ArrowCodecError> {
        match self.pool.next() {
            None => Ok(false),
            Some(Err(WorkerLost)) => Err(ArrowCodecError::Worker),
            Some(Ok(rows)) => {
                self.writer.write_converted(rows?)?;
                Ok(true)
            }
        }
    }

    /// What was written so far (files: completed ones).
    pub fn summary(&self) -> &LakeSummary {
        self.writer.summary()
    }

    /// Writes every queued batch, completes every file and returns what was written.
    pub fn close(mut self) -> Result<LakeSummary, ArrowCodecError> {
        while self.write_next()? {}
        let ParallelLakeWriter { writer, .. } = self;
        writer.close()
    }
}
