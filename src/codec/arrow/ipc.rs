//! Arrow IPC: the stream writer of `--to arrow` and the reader of Arrow IPC input.
//!
//! # What is written
//! One Arrow IPC *stream* (schema message, record batches, end-of-stream marker) per run of
//! events of one schema: when the schema changes, the stream is ended and a new one begins,
//! so the output is a sequence of complete streams, one after the other. With one schema (for
//! example `weir export --to arrow '#type == "zeek.conn"'`) it is a single stream, as
//! `pyarrow.ipc.open_stream` and DuckDB expect; for several, open one stream after the other
//! on the same input (`open_stream` until the input is exhausted). No events, no output.
//! Each call of [`EventWriter::write_rows`] (one batch of the archive or the pipeline)
//! becomes one record batch (of [`super::arrow_schema`]); a batch given to
//! [`EventWriter::write_record_batch`] (a search's events decoded from their columns: the same
//! arrays) is written as it is.
//!
//! # What is read
//! A sequence of Arrow IPC streams as above (each starting with the continuation marker
//! `ff ff ff ff`), or an Arrow IPC *file* (`ARROW1` magic; its footer is ignored, the batches
//! are read in order). Types come from the fields' metadata ([`super::schema`]).

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_ipc::reader::StreamDecoder;
use arrow_ipc::writer::StreamEncoder;
use arrow_schema::Schema as ArrowSchema;
use bytes::BytesMut;
use tokio_util::codec::Decoder;

use super::read::record_batch_to_batches;
use super::ArrowCodecError;
use crate::batch::Batch;
use crate::codec::arrow::ArrowForm;
use crate::codec::event_writer::{EventWriter, WriteError};
use crate::codec::row_batches::{write_rows, RowBatches};
use crate::codec::ReaderOptions;
use crate::error::{ParseError, ReadError};
use crate::types::SchemaRef;

/// The magic bytes that start an Arrow IPC file (the stream follows after two bytes of
/// padding).
pub const ARROW_FILE_MAGIC: &[u8] = b"ARROW1";

/// The continuation marker that starts every message of an Arrow IPC stream.
pub const IPC_CONTINUATION: &[u8] = &[0xff, 0xff, 0xff, 0xff];

/// The open stream of an [`ArrowIpcWriter`].
struct OpenStream {
    /// The weir schema of its events.
    schema: SchemaRef,
    /// The Arrow schema of its batches.
    arrow: Arc<ArrowSchema>,
    encoder: StreamEncoder,
}

/// Writes events as Arrow IPC streams (see the module docs).
pub struct ArrowIpcWriter {
    open: Option<OpenStream>,
    rows: RowBatches,
}

impl Default for ArrowIpcWriter {
    fn default() -> Self {
        ArrowIpcWriter {
            open: None,
            rows: RowBatches::new(ArrowForm::Interchange),
        }
    }
}

impl std::fmt::Debug for ArrowIpcWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrowIpcWriter")
            .field("schema", &self.open.as_ref().map(|o| &o.schema.name))
            .finish()
    }
}

fn arrow_write_error(e: impl std::error::Error + Send + Sync + 'static) -> WriteError {
    WriteError::Io(io::Error::other(format!("arrow: {e}")))
}

fn append_buffers(out: &mut Vec<u8>, buffers: Vec<Buffer>) {
    for b in buffers {
        out.extend_from_slice(b.as_slice());
    }
}

impl ArrowIpcWriter {
    /// A writer with no stream open.
    pub fn new() -> ArrowIpcWriter {
        ArrowIpcWriter::default()
    }

    /// Ends the open stream, if any.
    fn end_stream(&mut self, out: &mut Vec<u8>) -> Result<(), WriteError> {
        if let Some(open) = self.open.take() {
            append_buffers(out, open.encoder.finish().map_err(arrow_write_error)?);
        }
        Ok(())
    }

    /// The open stream for batches of `arrow` of `schema`, ending another one first.
    fn stream_for(
        &mut self,
        schema: &SchemaRef,
        arrow: &Arc<ArrowSchema>,
        out: &mut Vec<u8>,
    ) -> Result<&mut OpenStream, WriteError> {
        let same = self.open.as_ref().is_some_and(|o| {
            (Arc::ptr_eq(&o.schema, schema) || *o.schema == **schema)
                && (Arc::ptr_eq(&o.arrow, arrow) || *o.arrow == **arrow)
        });
        if !same {
            self.end_stream(out)?;
            let encoder = StreamEncoder::try_new(arrow).map_err(arrow_write_error)?;
            self.open = Some(OpenStream {
                schema: schema.clone(),
                arrow: arrow.clone(),
                encoder,
            });
        }
        match self.open.as_mut() {
            Some(o) => Ok(o),
            None => Err(WriteError::Io(io::Error::other("no open arrow stream"))),
        }
    }
}

impl EventWriter for ArrowIpcWriter {
    /// Writes the batch as it is: a stream is one weir schema and one Arrow schema, and a
    /// batch of another starts a new stream.
    fn write_record_batch(
        &mut self,
        schema: &SchemaRef,
        batch: &RecordBatch,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        let open = self.stream_for(schema, batch.schema_ref(), out)?;
        let buffers = open.encoder.encode(batch).map_err(arrow_write_error)?;
        append_buffers(out, buffers);
        Ok(())
    }

    fn write_rows(
        &mut self,
        schema: &SchemaRef,
        rows: &mut dyn Iterator<Item = &[u8]>,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        write_rows(self, |w| &mut w.rows, schema, rows, out)
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        // Encoding errors were reported when the rows were written; here only the end marker
        // can be left to write.
        let _ = self.end_stream(out);
    }

    fn record_batch_form(&self) -> ArrowForm {
        ArrowForm::Interchange
    }
}

/// Reads Arrow IPC streams (or an Arrow IPC file) into batches: a tokio-util [`Decoder`].
pub struct ArrowIpcDecoder {
    options: ReaderOptions,
    decoder: StreamDecoder,
    schema: Option<SchemaRef>,
    pending: VecDeque<Batch>,
    /// `None` until the first bytes tell stream from file; `Some(true)` for a file.
    file: Option<bool>,
    /// A file's stream has ended: the rest (the footer) is skipped.
    done: bool,
    rows: u64,
}

impl std::fmt::Debug for ArrowIpcDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrowIpcDecoder")
            .field("source", &self.options.source_name)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl ArrowIpcDecoder {
    /// A decoder; `options.source_name` names the input in errors, `options.batch_rows` caps
    /// the batches, and `options.json_default_schema` names a schema without weir's metadata.
    pub fn new(options: ReaderOptions) -> ArrowIpcDecoder {
        ArrowIpcDecoder {
            options,
            decoder: StreamDecoder::new(),
            schema: None,
            pending: VecDeque::new(),
            file: None,
            done: false,
            rows: 0,
        }
    }

    fn error(&self, field: Option<String>, message: String) -> ReadError {
        ReadError::Parse(ParseError {
            source_name: self.options.source_name.clone(),
            line: self.rows,
            field,
            message,
        })
    }

    fn codec_error(&self, e: ArrowCodecError) -> ReadError {
        match e {
            ArrowCodecError::Schema { field, problem } => self.error(Some(field), problem),
            other => self.error(None, other.to_string()),
        }
    }

    /// Feeds `buf` to the stream decoder, converting every record batch it completes.
    fn feed(&mut self, mut buf: Buffer) -> Result<(), ReadError> {
        while !buf.is_empty() && !self.done {
            let decoded = match super::guarded(|| self.decoder.decode(&mut buf)) {
                Ok(d) => d,
                Err(why) => {
                    self.done = true;
                    return Err(self.error(None, format!("invalid Arrow IPC data: {why}")));
                }
            };
            match decoded {
                Ok(Some(rb)) => {
                    let rb = super::widen::widen_batch(rb).map_err(|e| self.codec_error(e))?;
                    let schema = match &self.schema {
                        Some(s) => s.clone(),
                        None => {
                            // As a Parquet file: `--schema` names a stream without weir's
                            // metadata, and a Zeek log's name types its columns.
                            let default = self
                                .options
                                .json_schema
                                .as_deref()
                                .unwrap_or(&self.options.json_default_schema);
                            let builtin;
                            let known = match &self.options.zeek_schemas {
                                Some(k) => Some(&**k),
                                None => {
                                    builtin =
                                        crate::codec::zeek::schema::ZeekSchemas::builtin().ok();
                                    builtin.as_deref()
                                }
                            };
                            let s =
                                super::schema::claimed_zeek_schema(&rb.schema(), default, known)
                                    .map_err(|e| self.codec_error(e))?
                                    .into_shared();
                            self.schema = Some(s.clone());
                            s
                        }
                    };
                    let batches = record_batch_to_batches(&rb, &schema, self.options.batch_rows)
                        .map_err(|e| self.codec_error(e))?;
                    self.rows += rb.num_rows() as u64;
                    self.pending.extend(batches);
                }
                Ok(None) => {}
                // The stream ended and more bytes follow (arrow-rs reports them as an
                // "Unexpected EOS" and leaves them in `buf`).
                Err(e) if self.decoder.finish().is_ok() && e.to_string().contains("EOS") => {
                    if self.file == Some(true) {
                        self.done = true;
                    } else {
                        self.decoder = StreamDecoder::new();
                        self.schema = None;
                    }
                }
                Err(e) => return Err(self.error(None, format!("invalid Arrow IPC data: {e}"))),
            }
        }
        Ok(())
    }
}

impl Decoder for ArrowIpcDecoder {
    type Item = Batch;
    type Error = ReadError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        if let Some(b) = self.pending.pop_front() {
            return Ok(Some(b));
        }
        if self.file.is_none() {
            if src.len() < 8 {
                return Ok(None);
            }
            let file = src.starts_with(ARROW_FILE_MAGIC);
            if file {
                let _ = src.split_to(8);
            }
            self.file = Some(file);
        }
        if src.is_empty() {
            return Ok(None);
        }
        if self.done {
            src.clear();
            return Ok(None);
        }
        let chunk = src.split().freeze();
        self.feed(Buffer::from(chunk))?;
        Ok(self.pending.pop_front())
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        if let Some(b) = self.decode(src)? {
            return Ok(Some(b));
        }
        if self.file.is_none() && !src.is_empty() {
            // Shorter than any Arrow input.
            return Err(self.error(None, format!("not Arrow IPC data ({} bytes)", src.len())));
        }
        if let Some(b) = self.pending.pop_front() {
            return Ok(Some(b));
        }
        if !self.done {
            self.decoder
                .finish()
                .map_err(|e| self.error(None, format!("truncated Arrow IPC stream: {e}")))?;
        }
        Ok(None)
    }
}
