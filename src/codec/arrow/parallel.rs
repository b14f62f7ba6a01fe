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
//! columns, taken whole or its selected rows) is decoded from its columns by the one stored-batch decoder
//! ([`super::decode`]: dictionaries, integer planes and marked columns straight from their
//! encodings), then split by day; the rows are never rebuilt (exporting W1000 from its
//! default archive: 3.1-3.4 s with rows, 2.4-2.5 s from columns). The record batches are the
//! same as from its rows, so the lake is too.
//!
//! Memory: at most four batches per thread are being converted or wait for their turn.

use std::sync::Arc;

use arrow_schema::Schema as ArrowSchema;

use super::lake::{LakeSummary, LakeWriter};
use super::lake_rows::{LakeRows, Spare};
use super::schema::arrow_schema;
use super::ArrowCodecError;
use crate::batch::Batch;
use crate::pool::{OrderedPool, WorkerLost};
use crate::segment::Columns;
use crate::types::SchemaRef;

/// Rows of one schema that a thread of a [`ParallelLakeWriter`] can convert.
pub trait SchemaRows: Send + 'static {
    /// The schema of the rows.
    fn schema(&self) -> &SchemaRef;
    /// The msgpack rows (see [`crate::value`]).
    fn rows(&self) -> impl Iterator<Item = &[u8]> + '_;
    /// The columns of the batch stored in columns that the rows are of (all its rows, or
    /// those [`SchemaRows::selected`] names), its dictionaries, integer planes and marked columns best kept so (as
    /// [`crate::store::BatchRef::encoded_columns`] reads them): decoded from them, without the
    /// rows being rebuilt. `None` (the default): convert [`SchemaRows::rows`].
    fn columns(&self) -> Option<Result<Columns, Box<dyn std::error::Error + Send + Sync>>> {
        None
    }
    /// With [`SchemaRows::columns`]: which of the batch's rows the rows are (indices,
    /// ascending; `None`, the default: all of them).
    fn selected(&self) -> Option<&[usize]> {
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
                    return Err(match source.downcast::<ArrowCodecError>() {
                        Ok(e) => *e,
                        Err(source) => ArrowCodecError::Read {
                            schema: schema.name.clone(),
                            source,
                        },
                    })
                }
                Some(Ok(cols)) => {
                    // The first `take` of the rows given, as indices among the batch's.
                    let first: Vec<usize>;
                    let select = match rows.selected() {
                        Some(s) => Some(&s[..take.min(s.len())]),
                        None if take < cols.rows() => {
                            first = (0..take).collect();
                            Some(&first[..])
                        }
                        None => None,
                    };
                    let built = LakeRows::build_columns(schema, &arrow, &cols, select);
                    if let Some(done) = built.transpose() {
                        return done;
                    }
                }
                None => {}
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
