//! Everything of weir beyond the stable API at the crate root: the modules of the engine,
//! the storage and the pipeline, public for tools, tests and benchmarks, and **not stable**:
//! their items change as the engine does (issue 56 makes it Arrow-native, with an explicit
//! plan), without a deprecation period. Programs that embed weir use the crate root
//! ([`crate::Db`] and the pipeline builder); reach in here only for what it does not offer
//! yet, and expect to follow changes.
//!
//! The storage layers depend one way: a small file-system layer (atomic writes, positioned
//! I/O, the one `mmap`) below [`segment`], segments below [`wal`], the WAL below [`store`].
//! `docs/dev/architecture.md` maps the modules and follows one event from bytes to segment and
//! back.
//!
//! | stage | module | configuration |
//! |---|---|---|
//! | sources: files, globs, stdin, in-memory bytes; gzip (multi-member, parallel), zstd; the decode stage | [`source`] | [`FileSourceConfig`] |
//! | Zeek TSV and JSON readers (push decoders), TSV and JSON writers | [`codec`] | [`ReaderOptions`], [`FileSinkConfig`], [`StdoutSinkConfig`] |
//! | events: schemas, values, msgpack rows, batches | [`types`], [`value`], [`batch`] | |
//! | batcher (size, bytes, timeout) | [`batcher`] | [`BatchConfig`] |
//! | the graph, byte-bounded edges, pipeline files | [`pipeline`] | [`PipelineOptions`], [`PipelineSpec`] |
//! | segments, write-ahead log, the store and its readers | [`segment`], [`wal`], [`store`] | [`ArchiveSinkConfig`] |
//! | the query language and its engine | [`query`] | |
//! | indicator sets, live matching and sightings | [`intel`], [`detect`] | |
//! | `weir serve` | [`serve`], [`http_server`] | |
//!
//! The types the crate root exported before the stable API are re-exported here too, at
//! the same names (`weir::Archive` is `weir::unstable::Archive`).

#[path = "batch.rs"]
pub mod batch;
#[path = "batcher.rs"]
pub mod batcher;
#[path = "channel.rs"]
pub mod channel;
#[path = "checkpoint.rs"]
pub mod checkpoint;
#[path = "codec/mod.rs"]
pub mod codec;
#[path = "detect/mod.rs"]
pub mod detect;
#[path = "duration.rs"]
pub mod duration;
#[path = "error.rs"]
pub mod error;
#[path = "http_server.rs"]
pub mod http_server;
#[path = "intel/mod.rs"]
pub mod intel;
#[path = "metrics.rs"]
pub mod metrics;
#[path = "metrics_http.rs"]
pub mod metrics_http;
#[path = "object.rs"]
pub mod object;
#[path = "pipeline/mod.rs"]
pub mod pipeline;
#[path = "query/mod.rs"]
pub mod query;
#[path = "segment/mod.rs"]
pub mod segment;
#[path = "serve/mod.rs"]
pub mod serve;
#[path = "setting.rs"]
pub mod setting;
#[path = "size.rs"]
pub mod size;
#[path = "source/mod.rs"]
pub mod source;
#[path = "store/mod.rs"]
pub mod store;
#[path = "types.rs"]
pub mod types;
#[path = "value.rs"]
pub mod value;
#[path = "wal.rs"]
pub mod wal;

pub use batch::{Batch, BatchBuilder, ColumnStats};
pub use batcher::{BatchConfig, Batcher};
pub use codec::writer::{writer_for, EventWriter, OutputFormat, WriteError, WriterSink};
pub use codec::{FileSinkConfig, ReaderOptions, StdoutSinkConfig};
pub use error::{OnError, ParseError, ReadError, SkipReport};
pub use pipeline::build::{build, BuildError};
pub use pipeline::config::{ConfigError, ImportConfig, LoadOptions, PipelineSpec};
pub use pipeline::{Pipeline, PipelineError, PipelineOptions, RunSummary};
pub use source::{Compression, FileSourceConfig, Format, Input, SourceConfig, SourceError};
pub use store::{Archive, ArchiveSink, ArchiveSinkConfig, StoreError, StoreOptions};
pub use types::{Field, Schema, SchemaRef, Type};
pub use value::{decode_row, encode_row, Value};
pub use wal::SyncPolicy;
