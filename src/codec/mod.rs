//! Readers and writers of event formats.
//!
//! Readers are synchronous push decoders in the shape of tokio-util's
//! [`Decoder`](tokio_util::codec::Decoder): they accept input in arbitrary chunks and produce
//! the same batches whatever the chunking, so that `FramedRead` drives them from any
//! `AsyncRead`. Writers turn batches back into text, Arrow IPC or a Parquet lake
//! ([`arrow`]).

pub mod arrow;
mod drive;
pub mod json_writer;
mod sink_config;
pub mod writer;
pub mod zeek;

pub use arrow::ParquetSinkConfig;
pub use drive::{collect_batches, decode_chunks};
pub use sink_config::{DirSink, DirSinkConfig, FileSinkConfig, StdoutSinkConfig};

use crate::error::OnError;

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
    /// Schema name for Zeek JSON lines without `_path`.
    pub json_default_schema: String,
}

impl ReaderOptions {
    /// Default longest line: 64 MiB.
    pub const DEFAULT_MAX_LINE_LEN: usize = 64 << 20;
    /// Default batch size in events.
    pub const DEFAULT_BATCH_ROWS: usize = crate::batch::DEFAULT_BATCH_EVENTS;

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
            on_error: OnError::Fail,
            json_default_schema: "zeek.json".into(),
        }
    }
}
