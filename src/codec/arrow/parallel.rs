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
//! Memory: at most four batches per thread are being converted or wait for their turn.

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::Schema as ArrowSchema;

use super::builder::ArrowBuilder;
use super::lake::{row_day, LakeSummary, LakeWriter};
use super::schema::arrow_schema;
use super::ArrowCodecError;
use crate::batch::Batch;
use crate::pool::{OrderedPool, WorkerLost};
use crate::types::SchemaRef;

/// Rows of one schema that a thread of a [`ParallelLakeWriter`] can convert.
pub trait SchemaRows: Send + 'static {
    /// The schema of the rows.
    fn schema(&self) -> &SchemaRef;
    /// The msgpack rows (see [`crate::value`]).
    fn rows(&self) -> impl Iterator<Item = &[u8]> + '_;
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
        for (day, mut builder) in days {
            if !builder.is_empty() {
                batches.push((day, builder.finish()?));
            }
            spare.give(builder);
        }
        Ok(LakeRows {
            schema: schema.clone(),
            batches,
        })
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
            LakeRows::build(rows.schema(), &arrow, rows.rows().take(take), &spare)
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
