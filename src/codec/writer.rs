//! Writers: turning events back into text.
//!
//! An [`EventWriter`] formats events of one schema at a time into a caller-owned `Vec<u8>`:
//! an Arrow record batch ([`EventWriter::write_record_batch`]), or raw msgpack rows (see
//! [`crate::value`]) rather than a [`Batch`], so that rows read straight out of a
//! memory-mapped segment are not copied into a batch first; the rows are converted to record
//! batches (of [`crate::codec::arrow::schema::exact_arrow_schema`] for text, which holds
//! every value as it is) and written as such, so that each format has one rendering, from
//! Arrow arrays (`codec::text_format`). Writers keep state between calls (the Zeek TSV writer
//! remembers the schema of its open header block) and write a trailer on
//! [`EventWriter::finish`].
//!
//! The formats ([`OutputFormat`]):
//! - `zeek-tsv`: the layout of Zeek's ASCII writer ([`crate::codec::zeek::tsv_writer`]);
//! - `json`: JSON lines as Zeek writes them with `LogAscii::use_json=T`
//!   ([`crate::codec::json_writer`]);
//! - `arrow`: Arrow IPC streams ([`crate::codec::arrow::ipc`]);
//! - `table`: aligned columns for people, cut to the terminal's width
//!   ([`crate::codec::table_writer`]);
//! - `csv`: RFC 4180 CSV with a header line at each change of columns (per schema with `--by-schema`) ([`crate::codec::csv_writer`]);
//! - `parquet`: not a stream but a directory ([`crate::codec::arrow::lake`]), written by the
//!   Parquet sink; [`writer_for`] gives a writer that refuses rows.
//!
//! [`WriterSink`] is the asynchronous end of a pipeline: a [`futures::Sink`] of batches that
//! formats them with an [`EventWriter`] and writes the text to any [`AsyncWrite`] in large
//! chunks.
//!
//! # Broken pipes
//! When the output is closed early (`weir convert ... | head`), the write fails with
//! [`std::io::ErrorKind::BrokenPipe`]. [`WriterSink`] reports this as [`WriteError::Closed`], a
//! variant of its own, so that a pipeline stops reading input and the command exits with status 0
//! (see [`WriteError::is_closed`]); every other I/O error is [`WriteError::Io`].

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use futures::Sink;
use tokio::io::AsyncWrite;

use crate::batch::Batch;
pub use crate::codec::event_writer::{is_output_closed, EventWriter, WriteError};
pub use crate::codec::json_writer::JsonTimestamps;
use crate::setting::{Choice, ChoiceName};
use crate::types::SchemaRef;

/// An output format of `weir convert --to` and the exporters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OutputFormat {
    /// Zeek TSV (`zeek-tsv`): the layout of Zeek's ASCII writer.
    ZeekTsv,
    /// JSON lines (`json`) following Zeek's JSON logs.
    Json,
    /// Arrow IPC streams (`arrow`), see [`crate::codec::arrow::ipc`].
    Arrow,
    /// Aligned columns for people (`table`), cut to the terminal's width, see
    /// [`crate::codec::table_writer`].
    Table,
    /// CSV (`csv`, RFC 4180) with a header line at each change of columns, see [`crate::codec::csv_writer`].
    Csv,
    /// A Parquet lake (`parquet`): a directory, not a stream; only where an output directory
    /// is given (`--output DIR`, the `parquet` sink), see [`crate::codec::arrow::lake`].
    Parquet,
}

impl OutputFormat {
    /// Whether the format is written into a directory rather than a byte stream.
    pub fn is_directory_only(self) -> bool {
        self == OutputFormat::Parquet
    }
}

impl Choice for OutputFormat {
    const WHAT: &'static str = "output format";
    const CHOICES: &'static [ChoiceName<OutputFormat>] = &[
        ChoiceName::new(
            "zeek-tsv",
            OutputFormat::ZeekTsv,
            "Zeek TSV, as Zeek writes it",
        ),
        ChoiceName::new(
            "json",
            OutputFormat::Json,
            "JSON lines, as Zeek writes them",
        ),
        ChoiceName::new(
            "arrow",
            OutputFormat::Arrow,
            "Arrow IPC streams, one per run of one schema",
        ),
        ChoiceName::new(
            "table",
            OutputFormat::Table,
            "aligned columns cut to the terminal's width, for people",
        ),
        ChoiceName::new(
            "csv",
            OutputFormat::Csv,
            "CSV (RFC 4180), a header line at each change of columns",
        ),
        ChoiceName::new(
            "parquet",
            OutputFormat::Parquet,
            "a Hive-partitioned Parquet lake in --output DIR",
        ),
        ChoiceName::alias("tsv", OutputFormat::ZeekTsv),
    ];
}

crate::choice!(OutputFormat);

/// A writer for the given format with default settings.
pub fn writer_for(format: OutputFormat) -> Box<dyn EventWriter> {
    writer_with(format, JsonTimestamps::default())
}

/// A writer for the given format; JSON spells times as `json_timestamps` says, and a table is
/// as wide as [`crate::codec::table_writer::terminal_width`] says.
pub fn writer_with(format: OutputFormat, json_timestamps: JsonTimestamps) -> Box<dyn EventWriter> {
    writer_by_schema(format, json_timestamps, false)
}

/// [`writer_with`]; with `by_schema`, the table and CSV start a block (a header) at each change
/// of schema, also between schemas with the same column names (`weir export --by-schema`).
pub fn writer_by_schema(
    format: OutputFormat,
    json_timestamps: JsonTimestamps,
    by_schema: bool,
) -> Box<dyn EventWriter> {
    match format {
        OutputFormat::ZeekTsv => Box::new(crate::codec::zeek::tsv_writer::ZeekTsvWriter::new()),
        OutputFormat::Json => Box::new(crate::codec::json_writer::JsonWriter::with_timestamps(
            json_timestamps,
        )),
        OutputFormat::Arrow => Box::new(crate::codec::arrow::ArrowIpcWriter::new()),
        OutputFormat::Table => {
            Box::new(crate::codec::table_writer::TableWriter::new().by_schema(by_schema))
        }
        OutputFormat::Csv => {
            Box::new(crate::codec::csv_writer::CsvWriter::new().by_schema(by_schema))
        }
        OutputFormat::Parquet => Box::new(DirectoryOnly),
    }
}

/// The writer of a format that needs a directory ([`OutputFormat::is_directory_only`]) where
/// a stream was asked for: every write is an error (configurations refuse this beforehand).
#[derive(Debug)]
struct DirectoryOnly;

impl EventWriter for DirectoryOnly {
    fn write_record_batch(
        &mut self,
        _schema: &SchemaRef,
        _batch: &arrow_array::RecordBatch,
        _out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        Err(Self::refused())
    }

    fn write_rows(
        &mut self,
        _schema: &SchemaRef,
        _rows: &mut dyn Iterator<Item = &[u8]>,
        _out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        Err(Self::refused())
    }

    fn finish(&mut self, _out: &mut Vec<u8>) {}
}

impl DirectoryOnly {
    fn refused() -> WriteError {
        WriteError::Io(io::Error::other(
            "parquet is written into a directory (--output DIR, or a parquet sink)",
        ))
    }
}

/// A [`Sink`] of batches that formats them with an [`EventWriter`] and writes the text to an
/// [`AsyncWrite`] (stdout, a file).
///
/// Text is collected in memory and written once at least
/// [`WriterSink::DEFAULT_CHUNK`] bytes are pending (backpressure: `poll_ready` is pending while
/// such a chunk is being written). `poll_flush` writes everything; `poll_close` writes the
/// writer's trailer ([`EventWriter::finish`]), flushes and shuts the output down. A broken pipe is
/// reported as [`WriteError::Closed`].
pub struct WriterSink<W> {
    writer: Box<dyn EventWriter>,
    io: W,
    buf: Vec<u8>,
    pos: usize,
    chunk: usize,
    finished: bool,
}

impl<W> fmt::Debug for WriterSink<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriterSink")
            .field("pending", &(self.buf.len() - self.pos))
            .field("chunk", &self.chunk)
            .field("finished", &self.finished)
            .finish()
    }
}

impl<W: AsyncWrite + Unpin> WriterSink<W> {
    /// Pending bytes at which the sink writes: 256 KiB.
    pub const DEFAULT_CHUNK: usize = 256 << 10;

    /// A sink formatting with `writer` into `io`.
    pub fn new(writer: Box<dyn EventWriter>, io: W) -> WriterSink<W> {
        WriterSink::with_chunk(writer, io, Self::DEFAULT_CHUNK)
    }

    /// A sink that writes whenever `chunk` bytes (at least 1) are pending.
    pub fn with_chunk(writer: Box<dyn EventWriter>, io: W, chunk: usize) -> WriterSink<W> {
        WriterSink {
            writer,
            io,
            buf: Vec::with_capacity(chunk.clamp(1, Self::DEFAULT_CHUNK * 2)),
            pos: 0,
            chunk: chunk.max(1),
            finished: false,
        }
    }

    /// The output, e.g. to inspect a `Vec<u8>` after closing.
    pub fn into_inner(self) -> W {
        self.io
    }

    /// Writes all pending text.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), WriteError>> {
        while self.pos < self.buf.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.buf[self.pos..]))
                .map_err(WriteError::from_io)?;
            if n == 0 {
                return Poll::Ready(Err(WriteError::Io(io::ErrorKind::WriteZero.into())));
            }
            self.pos += n;
        }
        self.buf.clear();
        self.pos = 0;
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> Sink<Batch> for WriterSink<W> {
    type Error = WriteError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), WriteError>> {
        let this = self.get_mut();
        if this.buf.len() - this.pos >= this.chunk {
            ready!(this.poll_drain(cx))?;
        }
        Poll::Ready(Ok(()))
    }

    fn start_send(self: Pin<&mut Self>, batch: Batch) -> Result<(), WriteError> {
        let this = self.get_mut();
        if batch.is_empty() {
            // Only checkpoints of followed files (see `crate::checkpoint`): nothing to write.
            return Ok(());
        }
        this.finished = false;
        this.writer.write_batch(&batch, &mut this.buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), WriteError>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.io)
            .poll_flush(cx)
            .map_err(WriteError::from_io)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), WriteError>> {
        let this = self.get_mut();
        if !this.finished {
            this.finished = true;
            this.writer.finish(&mut this.buf);
        }
        ready!(this.poll_drain(cx))?;
        ready!(Pin::new(&mut this.io).poll_flush(cx)).map_err(WriteError::from_io)?;
        Pin::new(&mut this.io)
            .poll_shutdown(cx)
            .map_err(WriteError::from_io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_or_mistyped_rows_are_errors_in_both_writers() {
        use crate::types::{Field, Schema, Type};
        use crate::value::{encode_row, Value};
        let types = [
            "bool",
            "count",
            "int",
            "double",
            "time",
            "string",
            "addr",
            "subnet",
            "port",
            "set[addr]",
            "vector[double]",
        ];
        let schema = Schema::new(
            "zeek.t",
            types
                .iter()
                .enumerate()
                .map(|(i, t)| Field::new(format!("f{i}"), Type::parse(t).unwrap()))
                .collect(),
        )
        .into_shared();
        let a: std::net::IpAddr = "2001:db8::1".parse().unwrap();
        let row = [
            Value::Bool(true),
            Value::Count(1 << 40),
            Value::Int(-300),
            Value::Double(0.5),
            Value::Time(-1),
            Value::String(b"s".to_vec()),
            Value::Addr(a),
            Value::Subnet(a, 64),
            Value::Port(80),
            Value::List(vec![Value::Addr(a), Value::Null]),
            Value::List(vec![Value::Double(1.0)]),
        ];
        let mut buf = Vec::new();
        encode_row(&row, &mut buf);
        for format in [
            OutputFormat::ZeekTsv,
            OutputFormat::Json,
            OutputFormat::Csv,
            OutputFormat::Table,
        ] {
            let mut out = Vec::new();
            writer_for(format)
                .write_rows(&schema, &mut std::iter::once(&buf[..]), &mut out)
                .unwrap();
            for cut in 0..buf.len() {
                let r = writer_for(format).write_rows(
                    &schema,
                    &mut std::iter::once(&buf[..cut]),
                    &mut out,
                );
                assert!(matches!(r, Err(WriteError::Decode { row: 0, .. })), "{cut}");
            }
            // A row of another schema.
            let other = Schema::new("zeek.o", vec![Field::new("n", Type::Count); 11]).into_shared();
            let r = writer_for(format).write_rows(&other, &mut std::iter::once(&buf[..]), &mut out);
            assert!(matches!(r, Err(WriteError::Decode { .. })));
        }
    }

    #[test]
    fn output_format_parses_and_prints() {
        for f in [
            OutputFormat::ZeekTsv,
            OutputFormat::Json,
            OutputFormat::Arrow,
            OutputFormat::Table,
            OutputFormat::Csv,
            OutputFormat::Parquet,
        ] {
            assert_eq!(f.to_string().parse::<OutputFormat>().unwrap(), f);
        }
        assert!("xlsx".parse::<OutputFormat>().is_err());
    }
}
