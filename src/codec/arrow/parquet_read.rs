//! Reading Parquet input: the files of a weir lake (or any Parquet file of the types in
//! [`crate::codec::arrow`]) back into batches.
//!
//! Parquet keeps its metadata in a footer at the end of the file, so an input is held in
//! memory whole before its first row can be read: at most [`MAX_PARQUET_INPUT`] bytes (weir's
//! own files are closed at the lake's `max_file_size`). Row groups are then decoded one
//! record batch at a time.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};
use std::sync::Arc;

use arrow_schema::{DataType, Field as ArrowField, Schema as ArrowSchema};
use parquet::arrow::arrow_reader::{
    ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder,
};
use tokio_util::codec::Decoder;

use super::read::record_batch_to_batches;
use super::schema::claimed_zeek_schema;
use super::ArrowCodecError;
use crate::batch::Batch;
use crate::codec::zeek::schema::ZeekSchemas;
use crate::codec::ReaderOptions;
use crate::error::{ParseError, ReadError};
use crate::types::SchemaRef;

/// `t` with every large or view string type (in lists too) as `utf8`.
fn plain_string_type(t: &DataType) -> DataType {
    match t {
        DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
        DataType::List(f) | DataType::LargeList(f) => DataType::List(Arc::new(
            f.as_ref()
                .clone()
                .with_data_type(plain_string_type(f.data_type())),
        )),
        other => other.clone(),
    }
}

/// `schema` with its strings as `utf8` ([`plain_string_type`]), metadata kept.
fn plain_strings(schema: &ArrowSchema) -> ArrowSchema {
    let fields: Vec<ArrowField> = schema
        .fields()
        .iter()
        .map(|f| {
            f.as_ref()
                .clone()
                .with_data_type(plain_string_type(f.data_type()))
        })
        .collect();
    ArrowSchema::new(fields).with_metadata(schema.metadata().clone())
}

/// The magic bytes at the start (and end) of a Parquet file.
pub const PARQUET_MAGIC: &[u8] = b"PAR1";

/// The largest Parquet input read (it is held in memory whole): 4 GiB.
pub const MAX_PARQUET_INPUT: usize = 4 << 30;

/// Reads one Parquet file into batches: a tokio-util [`Decoder`] that collects the input and
/// decodes it at its end.
pub struct ParquetDecoder {
    options: ReaderOptions,
    input: BytesMut,
    reader: Option<(ParquetRecordBatchReader, SchemaRef)>,
    pending: VecDeque<Batch>,
    rows: u64,
}

impl std::fmt::Debug for ParquetDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetDecoder")
            .field("source", &self.options.source_name)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl ParquetDecoder {
    /// A decoder; `options` as for [`super::ArrowIpcDecoder::new`].
    pub fn new(options: ReaderOptions) -> ParquetDecoder {
        ParquetDecoder {
            options,
            input: BytesMut::new(),
            reader: None,
            pending: VecDeque::new(),
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

    /// Opens the collected input.
    fn open(&mut self) -> Result<(), ReadError> {
        let bytes: Bytes = std::mem::take(&mut self.input).freeze();
        let rows = self.options.batch_rows.max(1);
        let opened = super::guarded(|| {
            let builder = ParquetRecordBatchReaderBuilder::try_new(bytes.clone())?;
            // Strings as `utf8`, whatever offsets or views the writer's Arrow schema asked for
            // (Polars writes views).
            let wanted = plain_strings(builder.schema());
            let builder = if wanted == **builder.schema() {
                builder
            } else {
                let options = ArrowReaderOptions::new().with_schema(Arc::new(wanted));
                ParquetRecordBatchReaderBuilder::try_new_with_options(bytes, options)?
            };
            let arrow = builder.schema().clone();
            Ok::<_, parquet::errors::ParquetError>((arrow, builder.with_batch_size(rows).build()?))
        })
        .map_err(|why| self.error(None, format!("invalid Parquet file: {why}")))?;
        let (arrow, reader) =
            opened.map_err(|e| self.error(None, format!("invalid Parquet file: {e}")))?;
        let builtin;
        let known = match &self.options.zeek_schemas {
            Some(k) => Some(&**k),
            None => {
                builtin = ZeekSchemas::builtin().ok();
                builtin.as_deref()
            }
        };
        // A schema named on the command line (`--schema zeek.conn`) names a file without
        // weir's metadata, as it names JSON lines without `_path`.
        let default = self
            .options
            .json_schema
            .as_deref()
            .unwrap_or(&self.options.json_default_schema);
        let arrow = super::widen::widen_schema(&arrow);
        let schema = claimed_zeek_schema(&arrow, default, known)
            .map_err(|e| self.codec_error(e))?
            .into_shared();
        self.reader = Some((reader, schema));
        Ok(())
    }
}

impl Decoder for ParquetDecoder {
    type Item = Batch;
    type Error = ReadError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        if self.input.len().saturating_add(src.len()) > MAX_PARQUET_INPUT {
            return Err(self.error(
                None,
                format!(
                    "Parquet input larger than {} bytes (it is read into memory whole)",
                    MAX_PARQUET_INPUT
                ),
            ));
        }
        self.input.unsplit(src.split());
        Ok(None)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        if let Some(b) = self.pending.pop_front() {
            return Ok(Some(b));
        }
        if self.reader.is_none() {
            self.decode(src)?;
            if self.input.is_empty() {
                return Ok(None);
            }
            self.open()?;
        }
        loop {
            let Some((reader, schema)) = self.reader.as_mut() else {
                return Ok(None);
            };
            let schema = schema.clone();
            let next = match super::guarded(|| reader.next()) {
                Ok(n) => n,
                Err(why) => {
                    self.reader = None;
                    return Err(self.error(None, format!("invalid Parquet data: {why}")));
                }
            };
            let rb = match next {
                None => return Ok(None),
                Some(Err(e)) => return Err(self.error(None, format!("invalid Parquet data: {e}"))),
                Some(Ok(rb)) => rb,
            };
            let rows = self.options.batch_rows;
            let rb = super::widen::widen_batch(rb).map_err(|e| self.codec_error(e))?;
            let batches = super::guarded(|| record_batch_to_batches(&rb, &schema, rows))
                .map_err(|why| self.error(None, why))?
                .map_err(|e| self.codec_error(e))?;
            self.rows += rb.num_rows() as u64;
            self.pending.extend(batches);
            if let Some(b) = self.pending.pop_front() {
                return Ok(Some(b));
            }
        }
    }
}
