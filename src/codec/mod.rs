//! Readers and writers of event formats.
//!
//! Readers are synchronous push decoders in the shape of tokio-util's
//! [`Decoder`](tokio_util::codec::Decoder): they accept input in arbitrary chunks and produce
//! the same batches whatever the chunking, so that `FramedRead` drives them from any
//! `AsyncRead`. Writers turn batches back into text, Arrow IPC or a Parquet lake
//! ([`arrow`]).

pub mod arrow;
pub mod cells;
pub mod community_id;
pub mod csv_writer;
mod drive;
pub mod event_writer;
pub mod json_nest;
pub mod json_writer;
mod row_batches;
mod sink_config;
pub mod suricata;
pub mod table_writer;
mod text_format;
pub mod writer;
pub mod zeek;

pub use arrow::ParquetSinkConfig;
pub use drive::{collect_batches, decode_chunks};
pub use sink_config::{DirSink, DirSinkConfig, FileSinkConfig, StdoutSinkConfig};

use std::sync::Arc;

use crate::error::OnError;
use zeek::schema::ZeekSchemas;

/// Settings shared by the readers.
#[derive(Debug, Clone)]
pub struct ReaderOptions {
    /// Name of the source for error messages: a path, or `<stdin>`.
    pub source_name: String,
    /// Longest accepted line in bytes; a longer one is an error, never unbounded memory.
    pub max_line_len: usize,
    /// Most events in one batch the reader emits.
    pub batch_rows: usize,
    /// What to do with a row that does not parse.
    pub on_error: OnError,
    /// Schema name for Zeek JSON lines without `_path` that no Zeek log schema types.
    pub json_default_schema: String,
    /// The Zeek log schemas that type JSON lines (by `_path`, else [`Self::json_schema`],
    /// else the input's file name; see [`zeek::schema`]); `None`: type inference only.
    /// Default: the shipped schemas.
    pub zeek_schemas: Option<Arc<ZeekSchemas>>,
    /// The schema of JSON lines without `_path` (`zeek.conn`), instead of the one named by
    /// the input's file name. A name [`Self::zeek_schemas`] does not know is ignored here
    /// (a source's `validate()` refuses it).
    pub json_schema: Option<String>,
    /// Record the range of each integer and time column as rows are encoded
    /// ([`crate::unstable::ColumnStats`], which the segment writer's sketches take instead of decoding
    /// those columns). On by default; off when nothing downstream builds sketches
    /// (`weir import --no-sketches`), where it would only cost time.
    pub column_stats: bool,
    /// Write batches in columns ([`crate::batch`]'s columnar batches), where the reader can:
    /// the Zeek TSV reader does. For a consumer that stores batches in columns (an archive
    /// that compresses, which then need not split rows into columns): the pipeline builder
    /// sets it for a source that feeds only such archives
    /// ([`crate::PipelineSpec::stores_columns`]: `weir import` unless `--compression none`).
    /// Off by default, since any other consumer makes the rows from the columns (once per
    /// batch), which costs about what it saves.
    pub columns: bool,
    /// Read JSON lines as Suricata EVE when their first line is an EVE event
    /// ([`suricata::is_eve_line`]), else as Zeek JSON: what a source whose format is `auto`
    /// asks of the JSON reader, which sees whole lines (the format detection decides JSON by
    /// the first byte). Off by default.
    pub detect_eve: bool,
}

impl ReaderOptions {
    /// Default longest line: 64 MiB.
    pub const DEFAULT_MAX_LINE_LEN: usize = 64 << 20;
    /// Default batch size in events.
    pub const DEFAULT_BATCH_ROWS: usize = crate::batch::DEFAULT_BATCH_EVENTS;
    /// Default handling of a row that does not parse: fail.
    pub const DEFAULT_ON_ERROR: OnError = OnError::Fail;
    /// Default schema name of Zeek JSON lines that no Zeek log schema types.
    pub const DEFAULT_JSON_SCHEMA: &str = "zeek.json";
    /// Column statistics are recorded by default.
    pub const DEFAULT_COLUMN_STATS: bool = true;

    /// Defaults, naming the source.
    pub fn new(source_name: impl Into<String>) -> ReaderOptions {
        ReaderOptions {
            source_name: source_name.into(),
            ..ReaderOptions::default()
        }
    }
}

impl Default for ReaderOptions {
    fn default() -> ReaderOptions {
        ReaderOptions {
            source_name: "<input>".into(),
            max_line_len: Self::DEFAULT_MAX_LINE_LEN,
            batch_rows: Self::DEFAULT_BATCH_ROWS,
            on_error: Self::DEFAULT_ON_ERROR,
            json_default_schema: Self::DEFAULT_JSON_SCHEMA.into(),
            // The shipped files are checked by a unit test; were one broken, JSON would
            // still be read, by inference.
            zeek_schemas: ZeekSchemas::builtin().ok(),
            json_schema: None,
            column_stats: Self::DEFAULT_COLUMN_STATS,
            columns: false,
            detect_eve: false,
        }
    }
}
