//! What every stream writer is: [`EventWriter`], which formats Arrow record batches (and
//! msgpack rows, through record batches) of one schema at a time, and [`WriteError`], why it
//! could not.
//!
//! The writers of each format (`json_writer`, `csv_writer`, `table_writer`, the Zeek TSV and
//! Arrow IPC writers) implement [`EventWriter`]; `writer` picks one for an
//! output format and drives it. This file depends on none of
//! them, so that they and `writer` depend on it one way.

use std::io;

use arrow_array::RecordBatch;

use crate::batch::Batch;
use crate::codec::arrow::ArrowForm;
use crate::types::SchemaRef;
use crate::value::DecodeError;

/// Why rows could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// A row did not decode as its schema says (a corrupt segment or a schema mismatch).
    #[error("cannot format row {row} of schema {schema}: {source}")]
    Decode {
        /// The schema's name, e.g. `zeek.conn`.
        schema: String,
        /// 0-based index of the row among the rows given to the call (the row index in its batch).
        row: usize,
        /// What was wrong with the row.
        #[source]
        source: DecodeError,
    },
    /// A column of a record batch does not hold its field's type (a batch of another schema).
    #[error("cannot format a batch of schema {schema}: {problem}")]
    Column {
        /// The schema's name, e.g. `zeek.conn`.
        schema: String,
        /// The field's name (empty when the batch's columns do not match the fields at all).
        field: String,
        /// What is wrong, naming the field.
        problem: String,
    },
    /// The output could not be written.
    #[error("cannot write output: {0}")]
    Io(#[source] io::Error),
    /// The reader of the output went away (broken pipe): a clean end, not a failure.
    #[error("output closed by its reader")]
    Closed,
}

/// Whether an error is, or is caused by, the reader of our output going away (a broken pipe,
/// as with `| head`), after which a command exits with status 0.
pub fn is_output_closed(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err
            .downcast_ref::<WriteError>()
            .is_some_and(WriteError::is_closed)
            || err
                .downcast_ref::<io::Error>()
                .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
        {
            return true;
        }
        cur = err.source();
    }
    false
}

impl WriteError {
    /// Whether this is the clean end of an output closed early ([`WriteError::Closed`]), after
    /// which a command exits with status 0.
    pub fn is_closed(&self) -> bool {
        matches!(self, WriteError::Closed)
    }

    /// Classifies an I/O error: a broken pipe is [`WriteError::Closed`].
    pub fn from_io(e: io::Error) -> WriteError {
        if e.kind() == io::ErrorKind::BrokenPipe {
            WriteError::Closed
        } else {
            WriteError::Io(e)
        }
    }
}

/// Formats events as text (or an Arrow IPC stream).
pub trait EventWriter: Send {
    /// Appends the rows of an Arrow record batch of `schema` to `out`. The batch's columns are
    /// those of [`crate::codec::arrow::arrow_schema`] of `schema` (as the lake, Arrow IPC and
    /// the API hold events), or, for the text formats, of
    /// [`crate::codec::arrow::schema::exact_arrow_schema`] (strings as bytes, intervals as
    /// nanoseconds; what [`EventWriter::write_rows`] builds): the text writers' accepted
    /// columns are in `codec::text_format`. Arrow IPC writes the batch as it is.
    ///
    /// A column that does not hold its field's type is [`WriteError::Column`], before
    /// anything of the batch is written.
    fn write_record_batch(
        &mut self,
        schema: &SchemaRef,
        batch: &RecordBatch,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError>;

    /// Appends the rows (msgpack rows of `schema`, see [`crate::value`]) to `out`: converted
    /// to record batches, written by [`EventWriter::write_record_batch`].
    ///
    /// On error, `out` keeps the rows written before the bad one, and nothing of the bad one.
    fn write_rows(
        &mut self,
        schema: &SchemaRef,
        rows: &mut dyn Iterator<Item = &[u8]>,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError>;

    /// Appends the rows of a batch to `out`.
    fn write_batch(&mut self, batch: &Batch, out: &mut Vec<u8>) -> Result<(), WriteError> {
        let mut rows = batch.rows();
        self.write_rows(batch.schema(), &mut rows, out)
    }

    /// Appends the trailer, if the format has one (`#close` for Zeek TSV), and resets the writer
    /// so that the next rows start a new document.
    fn finish(&mut self, out: &mut Vec<u8>);

    /// [`EventWriter::finish`] for a writer that holds its events until the end (a Parquet
    /// download, whose footer comes last) and can fail there; the others cannot.
    fn try_finish(&mut self, out: &mut Vec<u8>) -> Result<(), WriteError> {
        self.finish(out);
        Ok(())
    }

    /// Bytes of events held for [`EventWriter::try_finish`] rather than written to `out`
    /// (0 for the stream writers): what a cap on the output must count besides `out`.
    fn buffered_bytes(&self) -> usize {
        0
    }

    /// The Arrow form of the record batches a search's events stored in columns are decoded
    /// into for this writer (`crate::query::to_arrow`, never rebuilt as rows):
    /// [`ArrowForm::Exact`] (the default) for the text writers, whose output needs the bytes
    /// of strings and the nanoseconds of intervals; [`ArrowForm::Interchange`] for Arrow IPC,
    /// which writes the batches as they are.
    fn record_batch_form(&self) -> ArrowForm {
        ArrowForm::Exact
    }
}
