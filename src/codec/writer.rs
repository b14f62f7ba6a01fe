//! Writers: turning msgpack rows back into text.
//!
//! An [`EventWriter`] formats rows of one schema at a time into a caller-owned `Vec<u8>`. It
//! takes rows as raw msgpack byte slices (see [`crate::value`]) rather than a [`Batch`], so that
//! rows read straight out of a memory-mapped segment are formatted without being copied into a
//! batch first. Writers keep state between calls (the Zeek TSV writer remembers the schema of its
//! open header block) and write a trailer on [`EventWriter::finish`].
//!
//! The formats ([`OutputFormat`]):
//! - `zeek-tsv`: the layout of Zeek's ASCII writer ([`crate::codec::zeek::tsv_writer`]);
//! - `json`: JSON lines as Zeek writes them with `LogAscii::use_json=T`
//!   ([`crate::codec::json_writer`]);
//! - `arrow`: Arrow IPC streams ([`crate::codec::arrow::ipc`]);
//! - `table`: aligned columns for people, cut to the terminal's width
//!   ([`crate::codec::table_writer`]);
//! - `csv`: RFC 4180 CSV with a header line per schema ([`crate::codec::csv_writer`]);
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
pub use crate::codec::json_writer::JsonTimestamps;
use crate::codec::zeek::scalar::{push_decimal_ns, push_i64, push_u64};
use crate::setting::{Choice, ChoiceName};
use crate::types::{Schema, SchemaRef, Type};
use crate::value::{DecodeError, RowCursor, ValueRef, NIL};

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
    /// CSV (`csv`, RFC 4180) with a header line per schema, see [`crate::codec::csv_writer`].
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
            "CSV (RFC 4180) with a header line per schema",
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

/// Formats rows of events as text.
pub trait EventWriter: Send {
    /// Appends the rows (msgpack rows of `schema`, see [`crate::value`]) to `out`.
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
}

/// Writes each row with `write`, keeping the output all-or-nothing per row: on a bad row the
/// output holds the rows before it and nothing of the bad one, and the error names the schema
/// and the row index. The shared loop of every [`EventWriter::write_rows`].
pub(crate) fn write_each<'a>(
    schema: &SchemaRef,
    rows: impl Iterator<Item = &'a [u8]>,
    out: &mut Vec<u8>,
    mut write: impl FnMut(&'a [u8], &mut Vec<u8>) -> Result<(), DecodeError>,
) -> Result<(), WriteError> {
    for (i, row) in rows.enumerate() {
        let start = out.len();
        if let Err(source) = write(row, out) {
            out.truncate(start);
            return Err(WriteError::Decode {
                schema: schema.name.clone(),
                row: i,
                source,
            });
        }
    }
    Ok(())
}

/// A writer for the given format with default settings.
pub fn writer_for(format: OutputFormat) -> Box<dyn EventWriter> {
    writer_with(format, JsonTimestamps::default())
}

/// A writer for the given format; JSON spells times as `json_timestamps` says, and a table is
/// as wide as [`crate::codec::table_writer::terminal_width`] says.
pub fn writer_with(format: OutputFormat, json_timestamps: JsonTimestamps) -> Box<dyn EventWriter> {
    match format {
        OutputFormat::ZeekTsv => Box::new(crate::codec::zeek::tsv_writer::ZeekTsvWriter::new()),
        OutputFormat::Json => Box::new(crate::codec::json_writer::JsonWriter::with_timestamps(
            json_timestamps,
        )),
        OutputFormat::Arrow => Box::new(crate::codec::arrow::ArrowIpcWriter::new()),
        OutputFormat::Table => Box::new(crate::codec::table_writer::TableWriter::new()),
        OutputFormat::Csv => Box::new(crate::codec::csv_writer::CsvWriter::new()),
        OutputFormat::Parquet => Box::new(DirectoryOnly),
    }
}

/// The writer of a format that needs a directory ([`OutputFormat::is_directory_only`]) where
/// a stream was asked for: every write is an error (configurations refuse this beforehand).
#[derive(Debug)]
struct DirectoryOnly;

impl EventWriter for DirectoryOnly {
    fn write_rows(
        &mut self,
        _schema: &SchemaRef,
        _rows: &mut dyn Iterator<Item = &[u8]>,
        _out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        Err(WriteError::Io(io::Error::other(
            "parquet is written into a directory (--output DIR, or a parquet sink)",
        )))
    }

    fn finish(&mut self, _out: &mut Vec<u8>) {}
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

/// Now, in nanoseconds since the epoch (0 if the clock is before 1970).
pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// How a text format writes containers.
pub(crate) struct ListText {
    /// Before the first element.
    pub open: &'static [u8],
    /// After the last element.
    pub close: &'static [u8],
    /// An empty container.
    pub empty: &'static [u8],
    /// An unset element.
    pub unset: &'static [u8],
}

/// What sets one text format apart from another. [`write_row`] walks a row with a
/// [`RowCursor`] and calls these for the punctuation and for the scalars that the formats write
/// differently; `count`, `int`, `port` (decimal) and `interval` (exact decimal seconds) are the
/// same in every format and written by [`write_row`] itself, and so is the `,` between the
/// elements of a container.
pub(crate) trait TextFormat {
    /// How containers are written.
    const LIST: ListText;
    /// After the last field.
    const ROW_END: &'static [u8];
    /// Before the first field.
    fn begin_row(&self, out: &mut Vec<u8>);
    /// Before the value of field `i` (0-based) when `set`, or in place of the field when not.
    fn field(&self, i: usize, set: bool, out: &mut Vec<u8>);
    /// A set `bool`, `double`, `time`, string-like, `addr` or `subnet` value; `in_list` when it
    /// is a container's element.
    fn scalar(&self, v: ValueRef<'_>, in_list: bool, out: &mut Vec<u8>);
}

/// Formats one msgpack row of `schema` (see [`crate::value`]) in format `f`.
#[inline]
pub(crate) fn write_row<F: TextFormat>(
    f: &F,
    schema: &Schema,
    row: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    let mut r = RowCursor::new(row);
    r.row_header(schema.fields.len())?;
    f.begin_row(out);
    for (i, field) in schema.fields.iter().enumerate() {
        let m = r.marker()?;
        f.field(i, m != NIL, out);
        if m == NIL {
            continue;
        }
        let Some(inner) = field.ty.element() else {
            write_scalar(f, &mut r, m, &field.ty, false, out)?;
            continue;
        };
        let n = r.list_len(m)?;
        if n == 0 {
            out.extend_from_slice(F::LIST.empty);
            continue;
        }
        out.extend_from_slice(F::LIST.open);
        for j in 0..n {
            if j > 0 {
                out.push(b',');
            }
            let m = r.marker()?;
            if m == NIL {
                out.extend_from_slice(F::LIST.unset);
            } else {
                write_scalar(f, &mut r, m, inner, true, out)?;
            }
        }
        out.extend_from_slice(F::LIST.close);
    }
    out.extend_from_slice(F::ROW_END);
    Ok(())
}

/// Formats the set scalar of type `ty` whose marker `m` was just read.
#[inline(always)]
fn write_scalar<F: TextFormat>(
    f: &F,
    r: &mut RowCursor<'_>,
    m: u8,
    ty: &Type,
    in_list: bool,
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    match ty {
        Type::Count | Type::Port => push_u64(out, r.uint(m, ty)?),
        Type::Int => push_i64(out, r.int(m, ty)?),
        Type::Interval => push_decimal_ns(out, r.int(m, ty)?),
        _ => f.scalar(r.scalar(m, ty)?, in_list, out),
    }
    Ok(())
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
