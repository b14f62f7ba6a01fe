//! Arrow and Parquet: events out to the engines that scale (DuckDB, DataFusion, Spark,
//! pandas) and back in.
//!
//! - `--to arrow`: Arrow IPC streams on stdout ([`ArrowIpcWriter`], an
//!   [`EventWriter`](crate::codec::event_writer::EventWriter));
//! - `--to parquet --output DIR` and `[sinks.NAME] type = "parquet"`: a Hive-partitioned
//!   Parquet lake ([`LakeWriter`], layout in [`lake`]; [`ParquetSinkConfig`], [`ParquetSink`];
//!   [`ParallelLakeWriter`] builds the record batches on a thread per core, for `export`);
//! - `POST /api/v1/query` with `"format": "parquet"` (the page's download): one Parquet file
//!   of any schemas ([`parquet_download::ParquetDownload`]);
//! - reading: [`ArrowIpcDecoder`] and [`ParquetDecoder`] turn what weir wrote back into
//!   batches, with the Zeek types restored from the field metadata; the source detects both
//!   by their magic bytes.
//!
//! # Types
//!
//! The one mapping of Zeek types to Arrow types ([`schema::arrow_type`]):
//!
//! | Zeek | Arrow | Parquet (as arrow-rs writes it) |
//! | --- | --- | --- |
//! | `time` | `timestamp[ns, tz=UTC]` | INT64, TIMESTAMP(NANOS, UTC) |
//! | `interval` | `float64`: seconds ([`schema::interval_seconds`]) | DOUBLE |
//! | `count` | `uint64` | INT64, UINT_64 |
//! | `int` | `int64` | INT64 |
//! | `double` | `float64` | DOUBLE |
//! | `bool` | `bool` | BOOLEAN |
//! | `port` | `uint16` | INT32, UINT_16 |
//! | `addr` | `utf8`: canonical text (`192.168.1.1`, `2001:db8::1`, RFC 5952) | BYTE_ARRAY, UTF8 |
//! | `subnet` | `utf8`: `addr/prefix` (`10.0.0.0/8`) | BYTE_ARRAY, UTF8 |
//! | `string`, `enum`, `pattern`, `file` | `utf8` (invalid UTF-8 escaped, below) | BYTE_ARRAY, UTF8 |
//! | `set[T]`, `vector[T]`, `table[T]` | `list<item: T>` | LIST |
//! | unset (`-`), of any type | null | null |
//!
//! Every field is nullable and keeps its Zeek name (dots included: `id.orig_h`), and its
//! field metadata holds the Zeek type name under `zeek.type` (`"count"`, `"set[addr]"`); the
//! schema metadata holds the weir schema name under `zeek.schema` (`"zeek.conn"`). Reading
//! back uses them, so `enum`, `addr`, `set` and `interval` come back as such and a file
//! round-trips to Zeek TSV (`weir convert --to zeek-tsv lake/.../part-00000.parquet`).
//! A file without this metadata (written by another tool) is read by its Arrow types (the
//! inverse of the table on exactly those types, timestamps of any unit as `time`, strings as
//! `string`, lists as `vector`) under the schema name of the source's `json_schema`; one whose
//! schema name is that of a shipped Zeek log takes that log's types where its columns hold
//! them and is refused, naming the column, where they cannot
//! ([`schema::claimed_zeek_schema`]). Parquet compressed with zstd, snappy, gzip or lz4
//! reads (other tools' defaults are snappy).
//!
//! **Strings.** Zeek strings are bytes. Valid UTF-8 is kept as it is (lossless); each byte of
//! an invalid sequence becomes the four characters `\xHH` (lowercase hex), the same text the
//! JSON writer produces ([`crate::codec::json_writer`], and Zeek's JSON logs), and like there
//! it is read back as text, not as the byte.
//!
//! **Ports** are at most 65535 (the readers refuse more), so `uint16` holds every one.
//!
//! **Intervals** are seconds as `float64` in the lake and in Arrow IPC alike, so that
//! `duration > 600` means ten minutes in every engine (DuckDB, Polars, DataFusion, Spark
//! read a Parquet `duration[ns]` as a bare integer of nanoseconds). The `zeek.type`
//! metadata (`interval`) makes weir read them back as intervals, exactly for every interval
//! Zeek writes (microseconds, below 31 years: [`schema::interval_seconds`]). A column of
//! `duration[ns]` with `zeek.type` `interval` (lakes of earlier weir versions) still reads.
//!
//! **Exact batches.** [`schema::exact_arrow_schema`] is the table above with `binary` (the
//! bytes as they are) for the string-like types and `duration[ns]` for `interval`: the
//! batches the text writers build from msgpack rows ([`ArrowBuilder::exact`]), so that Zeek
//! TSV keeps invalid UTF-8 apart from a string holding the text `\xHH`, and every interval
//! its nanoseconds. Never written to the lake or Arrow IPC.

mod builder;
mod decode;
pub mod ipc;
pub mod lake;
mod lake_files;
mod lake_rows;
mod parallel;
pub mod parquet_download;
mod parquet_file;
mod parquet_read;
mod partition_day;
mod read;
pub mod schema;
mod sink;
pub mod union;
mod widen;

pub use builder::{push_escaped_utf8, ArrowBuilder};
pub use decode::decode_columns;
pub use ipc::{ArrowIpcDecoder, ArrowIpcWriter};
pub use lake::{LakeOptions, LakeSummary, LakeWriter};
pub use parallel::{ParallelLakeWriter, SchemaRows};
pub use parquet_read::{ParquetDecoder, MAX_PARQUET_INPUT, PARQUET_MAGIC};
pub use read::record_batch_to_batches;
pub use schema::{arrow_schema, zeek_schema, ArrowForm};
pub use sink::{ParquetSink, ParquetSinkConfig};

use crate::value::DecodeError;

/// Runs `f`, turning a panic into an error message. arrow-rs and parquet can panic on damaged
/// input (an offset past a buffer, an impossible footer length) where they should return an
/// error; the readers call them through this, so that a damaged file is an error naming the
/// input, never a crash.
pub(crate) fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let why = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".into());
        format!("the reader failed on damaged data ({why})")
    })
}

/// Why events could not be converted to or from Arrow, or written to Parquet.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArrowCodecError {
    /// A field whose Arrow type or metadata does not fit (reading).
    #[error("field {field}: {problem}")]
    Schema {
        /// The field's name.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// A row did not decode as its schema says.
    #[error("cannot convert row {row} of schema {schema}: {source}")]
    Decode {
        /// The schema's name.
        schema: String,
        /// 0-based index of the row among the rows given.
        row: usize,
        /// What was wrong with the row.
        #[source]
        source: DecodeError,
    },
    /// A column of a batch stored in columns did not decode as its field says.
    #[error("cannot convert field {field} of a batch of schema {schema}: {source}")]
    DecodeColumn {
        /// The schema's name.
        schema: String,
        /// The field's name.
        field: String,
        /// What was wrong with the column.
        #[source]
        source: DecodeError,
    },
    /// The rows (or columns) to convert could not be read.
    #[error("cannot read a batch of schema {schema}: {source}")]
    Read {
        /// The schema's name.
        schema: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A column of a batch stored in columns could not be read (inflated, or checked
    /// against its checksum).
    #[error("cannot read field {field} of a batch of schema {schema}: {source}")]
    ReadColumn {
        /// The schema's name.
        schema: String,
        /// The field's name.
        field: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Arrow refused the data.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// The Parquet writer or reader failed.
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// A thread converting rows to Arrow stopped on a bug (a panic): its rows are lost.
    #[error("a thread converting rows to arrow failed; its rows are lost")]
    Worker,
    /// A lake partition cannot take the events given (its files have another schema).
    #[error("cannot write to the lake partition {}: {problem}", dir.display())]
    Partition {
        /// The partition's directory.
        dir: std::path::PathBuf,
        /// Why, and what to do.
        problem: String,
    },
    /// A file or directory of the lake could not be written.
    #[error(transparent)]
    Fs(#[from] crate::fs::FsError),
    /// An object of a lake in object storage could not be listed, read or written.
    #[error(transparent)]
    Object(#[from] crate::object::ObjectError),
}
