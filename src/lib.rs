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
//! # The stable API
//!
//! The crate root is the API programs embed, kept stable:
//!
//! - **querying**: [`Db`] opens an archive once (one resident reader, its segment cache
//!   warm, refreshed on each commit); [`Db::query`] takes the language of `weir export`
//!   and gives a [`QueryResult`], read as Arrow record batches ([`Batches`], an iterator;
//!   [`BatchStream`], a `Stream`), counted ([`QueryResult::count`]), written in an
//!   [`OutputFormat`] ([`QueryResult::write`]) or explained without running
//!   ([`QueryResult::explain`]: an [`Explain`], the plan and its pruning); errors are [`Error`];
//! - **ingesting**: the pipeline builder, [`Pipeline`] with its sources ([`Input`],
//!   [`SourceConfig`], [`ReaderOptions`]), batcher ([`BatchConfig`]) and sinks
//!   ([`ArchiveSink`], [`WriterSink`], any `Sink` of [`Batch`]); [`build`] makes one from a
//!   pipeline file ([`PipelineSpec`], [`ImportConfig`] for what `weir import` runs).
//!
//! Everything else is in [`unstable`]: public, documented, and changing with the engine.
//!
//! # Example
//!
//! Import Zeek TSV text into an archive with the same pipeline `weir import` runs, then
//! query it:
//!
//! ```
//! use weir::{ArchiveSink, Db, Input, OutputFormat, Pipeline, ReaderOptions, SourceConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let log = "#separator \\x09\n#path\tconn\n#fields\tts\tid.orig_h\n#types\ttime\taddr\n\
//!            1258531221.486539\t192.168.1.102\n1258531680.237254\tfe80::1\n";
//! let dir = tempfile::tempdir()?;
//!
//! let mut pipeline = Pipeline::default();
//! let config = SourceConfig::zeek(ReaderOptions::default(), 1 << 20);
//! let source = pipeline.add_source("logs", vec![Input::bytes("memory", log)], config)?;
//! let batches = pipeline.add_batcher("batch", &[source], Default::default())?;
//! let (archive_sink, _) = ArchiveSink::open(dir.path(), Default::default())?;
//! pipeline.add_sink("archive", &[batches], archive_sink)?;
//! pipeline.run().await?;
//!
//! let db = Db::open(dir.path())?;
//! let mut rows = 0;
//! for batch in db.query("")? {
//!     rows += batch?.num_rows(); // an arrow_array::RecordBatch
//! }
//! assert_eq!(rows, 2);
//! assert_eq!(db.query("id.orig_h == fe80::1")?.count()?, 1);
//! let mut json = Vec::new();
//! db.query("id.orig_h == fe80::1")?.write(OutputFormat::Json, &mut json)?;
//! assert!(String::from_utf8(json)?.contains(r#""id.orig_h":"fe80::1""#));
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod db;
mod fs;
mod pool;
pub mod unstable;

/// The Rust examples of the user guide's page "The Rust API"
/// (`docs/book/src/reference/rust.md`), compiled (and run where they can be) as doc tests, so
/// that the guide cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../docs/book/src/reference/rust.md")]
pub struct GuideRustApi;

// The modules, at their old paths inside the crate (`crate::query::...`); outside it they are
// `weir::unstable::...`.
pub(crate) use unstable::{
    batch, batcher, channel, checkpoint, codec, detect, duration, error, http_server, intel,
    metrics, metrics_http, object, pipeline, query, segment, serve, setting, size, source, store,
    types, value, wal,
};

pub use db::{BatchStream, Batches, Db, DbStats, Error, QueryResult, BATCHES_IN_FLIGHT};
pub use query::Explain;

pub use batch::Batch;
pub use batcher::BatchConfig;
pub use codec::writer::{writer_for, OutputFormat, WriterSink};
pub use codec::ReaderOptions;
pub use pipeline::build::{build, BuildError};
pub use pipeline::config::{ImportConfig, PipelineSpec};
pub use pipeline::{Pipeline, PipelineError, PipelineOptions, RunSummary};
pub use source::{FileSourceConfig, Input, SourceConfig};
pub use store::{ArchiveSink, ArchiveSinkConfig};
