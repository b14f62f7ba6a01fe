//! One Parquet file being written, its columns encoded on several threads.
//!
//! The caller's thread builds record batches and appends the finished column chunks to the
//! file; [`ParquetFile::ENCODE_THREADS`] worker threads (at most, one per core) each own a
//! fixed set of the columns (balanced by an estimate of their cost: strings and lists weigh
//! more) and encode and compress them, so building, encoding and compression overlap. The
//! bytes are the same as with a single thread: each column is encoded by one writer, in row
//! order, and row groups are cut at exactly `row_group_size` rows.

use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, FieldRef, Schema as ArrowSchema};
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;

use super::lake_files::{Buffered, FileSink};
use super::ArrowCodecError;

/// What a worker is asked to do.
enum Job {
    /// The writers of its columns for a new row group (column index, writer).
    Start(Vec<(usize, ArrowColumnWriter)>),
    /// Its columns of one record batch, in the order of its writers.
    Write(Vec<(FieldRef, ArrayRef)>),
    /// Close the writers and reply with the chunks.
    End,
}

type Chunks = Result<Vec<(usize, ArrowColumnChunk)>, ParquetError>;

struct Worker {
    jobs: SyncSender<Job>,
    chunks: Receiver<Chunks>,
    thread: Option<JoinHandle<()>>,
}

fn worker_loop(jobs: Receiver<Job>, reply: SyncSender<Chunks>) {
    let mut writers: Vec<(usize, ArrowColumnWriter)> = Vec::new();
    let mut failed: Option<ParquetError> = None;
    for job in jobs {
        match job {
            Job::Start(w) => writers = w,
            Job::Write(columns) => {
                if failed.is_some() {
                    continue;
                }
                // Every field of weir's schemas is one leaf (lists hold scalars).
                let leaves = columns.iter().map(|(f, c)| compute_leaves(f, c));
                for ((_, w), leaf) in writers.iter_mut().zip(leaves) {
                    if let Err(e) = leaf.and_then(|l| l.iter().try_for_each(|l| w.write(l))) {
                        failed = Some(e);
                        break;
                    }
                }
            }
            Job::End => {
                let result = match failed.take() {
                    Some(e) => Err(e),
                    None => writers
                        .drain(..)
                        .map(|(i, w)| w.close().map(|c| (i, c)))
                        .collect(),
                };
                writers.clear();
                if reply.send(result).is_err() {
                    return;
                }
            }
        }
    }
}

/// An open Parquet file (see the module docs).
pub(super) struct ParquetFile {
    writer: SerializedFileWriter<Buffered>,
    factory: ArrowRowGroupWriterFactory,
    arrow: Arc<ArrowSchema>,
    workers: Vec<Worker>,
    /// The worker of each column.
    owner: Vec<usize>,
    row_group: usize,
    rows_in_group: usize,
    max_rows: usize,
    started: bool,
    /// The temporary path (an object's final one) and the final name.
    pub tmp: PathBuf,
    pub name: String,
}

fn gone() -> ParquetError {
    ParquetError::General("a parquet encoder thread stopped".into())
}

impl ParquetFile {
    /// Most encoder threads per file.
    pub const ENCODE_THREADS: usize = 4;

    /// Starts the file `tmp` (final name `name`) for batches of `arrow`, with `props` (whose
    /// row-group size is the exact number of rows per group).
    pub fn create(
        file: FileSink,
        tmp: PathBuf,
        name: String,
        arrow: Arc<ArrowSchema>,
        props: &WriterProperties,
    ) -> Result<ParquetFile, ArrowCodecError> {
        let mut props = props.clone();
        add_encoded_arrow_schema_to_metadata(&arrow, &mut props);
        let max_rows = props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
        let parquet_schema = ArrowSchemaConverter::new()
            .with_coerce_types(props.coerce_types())
            .convert(&arrow)?;
        let writer = SerializedFileWriter::new(
            BufWriter::with_capacity(1 << 20, file),
            parquet_schema.root_schema_ptr(),
            Arc::new(props),
        )?;
        let factory = ArrowRowGroupWriterFactory::new(&writer, arrow.clone());
        // Columns to workers, greedily by estimated cost.
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, Self::ENCODE_THREADS)
            .min(arrow.fields().len().max(1));
        let mut load = vec![0usize; threads];
        let owner = arrow
            .fields()
            .iter()
            .map(|f| {
                let cost = match f.data_type() {
                    DataType::Utf8 | DataType::List(_) => 4,
                    _ => 1,
                };
                let w = (0..threads).min_by_key(|&w| load[w]).unwrap_or(0);
                load[w] += cost;
                w
            })
            .collect();
        let mut workers = Vec::with_capacity(threads);
        for i in 0..threads {
            let (jobs, jobs_rx) = sync_channel(2);
            let (reply, chunks) = sync_channel(1);
            let thread = std::thread::Builder::new()
                .name(format!("weir-parquet-encode-{i}"))
                .spawn(move || worker_loop(jobs_rx, reply))
                .map_err(|e| crate::fs::FsError::new("start an encoder thread for", &tmp, e))?;
            workers.push(Worker {
                jobs,
                chunks,
                thread: Some(thread),
            });
        }
        Ok(ParquetFile {
            writer,
            factory,
            arrow,
            workers,
            owner,
            row_group: 0,
            rows_in_group: 0,
            max_rows,
            started: false,
            tmp,
            name,
        })
    }

    /// Bytes written to the file so far (complete row groups).
    pub fn bytes_written(&self) -> usize {
        self.writer.bytes_written()
    }

    /// Rows that the current row group still takes (the row-group size when none is begun).
    pub fn rows_to_group_end(&self) -> usize {
        self.max_rows - self.rows_in_group
    }

    /// Appends a record batch of the file's schema, cutting row groups at exactly the
    /// row-group size.
    pub fn write(&mut self, rb: &RecordBatch) -> Result<(), ArrowCodecError> {
        let mut offset = 0;
        while offset < rb.num_rows() {
            let n = (rb.num_rows() - offset).min(self.max_rows - self.rows_in_group);
            self.write_part(&rb.slice(offset, n))?;
            offset += n;
            if self.rows_in_group >= self.max_rows {
                self.end_row_group()?;
            }
        }
        Ok(())
    }

    fn write_part(&mut self, rb: &RecordBatch) -> Result<(), ArrowCodecError> {
        if !self.started {
            let mut per_worker: Vec<Vec<(usize, ArrowColumnWriter)>> =
                (0..self.workers.len()).map(|_| Vec::new()).collect();
            for (i, w) in self
                .factory
                .create_column_writers(self.row_group)?
                .into_iter()
                .enumerate()
            {
                per_worker[self.owner[i]].push((i, w));
            }
            for (worker, writers) in self.workers.iter().zip(per_worker) {
                worker.jobs.send(Job::Start(writers)).map_err(|_| gone())?;
            }
            self.started = true;
        }
        let mut per_worker: Vec<Vec<(FieldRef, ArrayRef)>> =
            (0..self.workers.len()).map(|_| Vec::new()).collect();
        for (i, (field, column)) in self.arrow.fields().iter().zip(rb.columns()).enumerate() {
            per_worker[self.owner[i]].push((field.clone(), column.clone()));
        }
        for (worker, leaves) in self.workers.iter().zip(per_worker) {
            worker.jobs.send(Job::Write(leaves)).map_err(|_| gone())?;
        }
        self.rows_in_group += rb.num_rows();
        Ok(())
    }

    /// Collects the column chunks of the row group and writes them.
    fn end_row_group(&mut self) -> Result<(), ArrowCodecError> {
        if !self.started {
            return Ok(());
        }
        for w in &self.workers {
            w.jobs.send(Job::End).map_err(|_| gone())?;
        }
        let mut chunks = Vec::with_capacity(self.arrow.fields().len());
        for w in &self.workers {
            chunks.extend(w.chunks.recv().map_err(|_| gone())??);
        }
        chunks.sort_by_key(|(i, _)| *i);
        let mut rg = self.writer.next_row_group()?;
        for (_, chunk) in chunks {
            chunk.append_to_row_group(&mut rg)?;
        }
        rg.close()?;
        self.row_group += 1;
        self.rows_in_group = 0;
        self.started = false;
        Ok(())
    }

    /// Writes the last row group and the footer; returns the file (not yet synced or
    /// committed).
    pub fn finish(mut self) -> Result<FileSink, ArrowCodecError> {
        self.end_row_group()?;
        for w in &mut self.workers {
            // Closing the job channel ends the worker.
            let (dead, _) = sync_channel(0);
            drop(std::mem::replace(&mut w.jobs, dead));
            if let Some(t) = w.thread.take() {
                let _ = t.join();
            }
        }
        let buffered = self.writer.into_inner()?;
        let tmp = self.tmp.clone();
        buffered
            .into_inner()
            .map_err(|e| crate::fs::FsError::new("write", &tmp, e.into_error()).into())
    }
}
