//! weir ingests network-security telemetry — Zeek logs — through an asynchronous,
//! backpressured stream pipeline into an archive of memory-mapped FlatBuffers segments, and
//! reads them back, filters and exports them fast.
//!
//! ```text
//! bytes source (file, glob, stdin) -> decompress (gzip, multi-member) -> Zeek parser
//!   -> msgpack batcher (size + timeout) -> segment-writer Sink (backpressured)
//!   -> archive: FlatBuffers segment files, rotated before the 2 GiB builder limit, read via mmap
//! ```
//!
//! Every stage is a plain `futures` [`Stream`](futures::Stream) or [`Sink`](futures::Sink),
//! and every stage has one configuration type that deserializes its table of a pipeline file,
//! owns its defaults and limits, and builds it:
//!
//! | stage | module | configuration |
//! |---|---|---|
//! | sources: files, globs, stdin, in-memory bytes; gzip (multi-member, parallel), zstd; the decode stage | [`source`] | [`FileSourceConfig`] |
//! | Zeek TSV and JSON readers (push decoders), TSV and JSON writers | [`codec`] | [`ReaderOptions`], [`FileSinkConfig`], [`StdoutSinkConfig`] |
//! | events: schemas, values, msgpack rows, batches | [`types`], [`value`], [`batch`] | |
//! | batcher (size, bytes, timeout) | [`batcher`] | [`BatchConfig`] |
//! | the graph, byte-bounded edges, pipeline files | [`pipeline`] | [`PipelineOptions`], [`PipelineSpec`] |
//! | segments, write-ahead log, the store and its readers | [`segment`], [`wal`], [`store`] | [`ArchiveSinkConfig`] |
//!
//! The storage layers depend one way: a small file-system layer (atomic writes, positioned
//! I/O, the one `mmap`) below [`segment`], segments below [`wal`], the WAL below [`store`].
//! The types most programs need are re-exported here; `docs/architecture.md` maps the modules
//! and follows one event from bytes to segment and back.
//!
//! # Example
//!
//! Import Zeek TSV text into an archive with the same pipeline `weir import` runs, then read
//! the events back from the memory-mapped segments:
//!
//! ```
//! use weir::{decode_row, Archive, ArchiveSink, Input, Pipeline, ReaderOptions, SourceConfig, Value};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let log = "#separator \\x09\n#path\tconn\n#fields\tts\tid.orig_h\n#types\ttime\taddr\n\
//!            1258531221.486539\t192.168.1.102\n1258531680.237254\tfe80::1\n";
//! let db = tempfile::tempdir()?;
//!
//! let mut pipeline = Pipeline::default();
//! let config = SourceConfig::zeek(ReaderOptions::default(), 1 << 20);
//! let source = pipeline.add_source("logs", vec![Input::bytes("memory", log)], config)?;
//! let batches = pipeline.add_batcher("batch", &[source], Default::default())?;
//! let (archive_sink, _) = ArchiveSink::open(db.path(), Default::default())?;
//! pipeline.add_sink("archive", &[batches], archive_sink)?;
//! pipeline.run().await?;
//!
//! let archive = Archive::open(db.path())?;
//! let mut events = Vec::new();
//! for batch in archive.scan() {
//!     let batch = batch?;
//!     let types: Vec<_> = batch.schema().fields.iter().map(|f| f.ty.clone()).collect();
//!     for row in batch.rows() {
//!         events.push((batch.schema().name.clone(), decode_row(row, &types)?));
//!     }
//! }
//! assert_eq!(events.len(), 2);
//! assert_eq!(events[0].0, "zeek.conn");
//! assert_eq!(events[0].1[0], Value::Time(1_258_531_221_486_539_000));
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod batch;
pub mod batcher;
#[doc(hidden)]
pub mod channel;
pub mod checkpoint;
pub mod codec;
mod db;
pub mod duration;
pub mod error;
mod fs;
pub mod http_server;
pub mod metrics;
pub mod metrics_http;
pub mod object;
pub mod pipeline;
mod pool;
pub mod query;
pub mod segment;
pub mod serve;
pub mod setting;
pub mod size;
pub mod source;
pub mod store;
pub mod types;
pub mod value;
#[doc(hidden)]
pub mod wal;

pub use batch::{Batch, BatchBuilder, ColumnStats};
pub use batcher::{BatchConfig, Batcher};
pub use codec::writer::{writer_for, EventWriter, OutputFormat, WriteError, WriterSink};
pub use codec::{FileSinkConfig, ReaderOptions, StdoutSinkConfig};
pub use db::{BatchStream, Batches, Db, DbStats, Error, QueryResult, BATCHES_IN_FLIGHT};
pub use error::{OnError, ParseError, ReadError, SkipReport};
pub use pipeline::build::{build, BuildError};
pub use pipeline::config::{ConfigError, ImportConfig, LoadOptions, PipelineSpec};
pub use pipeline::{Pipeline, PipelineError, PipelineOptions, RunSummary};
pub use source::{Compression, FileSourceConfig, Format, Input, SourceConfig, SourceError};
pub use store::{Archive, ArchiveSink, ArchiveSinkConfig, StoreError, StoreOptions};
pub use types::{Field, Schema, SchemaRef, Type};
pub use value::{decode_row, encode_row, Value};
pub use wal::SyncPolicy;
