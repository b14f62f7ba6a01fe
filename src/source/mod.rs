//! Sources: where events come from, up to the batches they decode into.
//!
//! A *source* is one [`Input`] — a file (a path, or the matches of a glob pattern), stdin,
//! bytes in memory, or any [`AsyncRead`](tokio::io::AsyncRead) — read as bytes, decompressed,
//! and parsed by a decoder into batches:
//!
//! ```text
//! args/patterns ──expand──> Input ──open──> reader thread (1 MiB blocking reads) ──chunks──>
//!   counted bytes ──auto/gzip/zstd/none──> decompressed bytes ──detect {/#──> Format
//!   ──decoder (Zeek TSV / JSON)──> batches, one decode thread per input, in input order
//! ```
//!
//! | step | file |
//! |---|---|
//! | what is read: [`Input`], its name and size | `input.rs` |
//! | patterns and arguments to inputs: [`expand_pattern`], [`expand_inputs`] | `expand.rs` |
//! | reader threads, chunked reads, shutdown | `reader.rs` |
//! | opening an input: [`open_raw`], [`open`] | `open.rs` |
//! | [`Compression`]: magic bytes, [`decompress`] (gzip, zstd) | `compression.rs` |
//! | parallel gzip of whole members | [`inflate`] |
//! | output passed on only once its gzip CRC / zstd checksum verified | [`verify`] |
//! | [`Format`]: first byte, [`detect_format`] | `format.rs` |
//! | byte counts for progress: [`SourceCounters`] | `counters.rs` |
//! | the source stage: decoding inputs into batches, [`SourceConfig`] | [`decode`] |
//! | [`SourceError`] | `error.rs` |
//! | the configuration of a file or stdin source: [`FileSourceConfig`] | `config.rs` |
//! | following files like `tail -F`, exactly once across restarts | [`follow`] |
//! | a file's identity (a fingerprint of its decompressed first lines) | [`identity`] |
//! | batch imports resumed from the archive's checkpoints | [`resume`] |
//!
//! Files and stdin are read by a dedicated OS thread each, with blocking reads of
//! [`CHUNK_SIZE`] bytes handed over a small bounded channel, so blocking file I/O never runs on
//! an async runtime worker and reading overlaps with decompression and parsing. The thread
//! stops when the reader side is dropped (stdin's thread may stay blocked in `read` until
//! more input arrives or the process exits; it holds nothing else).
//!
//! Decompression `auto` peeks the first four bytes without losing them: `1f 8b` is gzip,
//! `28 b5 2f fd` is zstd, anything else is read as is. Gzip input may hold several
//! concatenated members and zstd input several frames; both are read as one stream. A gzip
//! *file* is decompressed on its reader thread by [`ParallelGunzip`](inflate::ParallelGunzip)
//! (several members at once); gzip on stdin and zstd are decompressed by [`verify`]. Either way
//! the output of a gzip member or zstd frame reaches the parser only once its checksum passed
//! (for members and frames up to [`verify::MAX_UNVERIFIED`] of output; see [`verify`]).
//!
//! Shutdown: once the `stop` token given to [`open`] is cancelled, a source reads no more
//! from its file or pipe, still delivers the chunks it already read, then ends; nothing read
//! is lost.
//!
//! Format `auto` peeks at the first byte that is not whitespace: `{` means Zeek JSON lines,
//! anything else (normally `#separator`) Zeek TSV.
//!
//! [`SourceCounters`] counts the bytes read from the underlying source (compressed) and,
//! where the size is known (regular files), the total, for progress display.

mod compression;
mod config;
mod counters;
pub mod decode;
mod error;
mod expand;
pub mod follow;
mod format;
pub mod identity;
pub mod inflate;
mod input;
pub(crate) mod open;
mod reader;
pub mod resume;
mod textsum;
pub mod verify;

pub use compression::{decompress, Compression};
pub use config::FileSourceConfig;
pub use counters::SourceCounters;
pub use decode::SourceConfig;
pub use error::SourceError;
pub use expand::{expand_inputs, expand_pattern};
pub use format::{detect_format, Format};
pub use input::{total_size, BoxReader, Input, STDIN_NAME};
pub use open::{open, open_raw, RawSource};
pub use reader::CHUNK_SIZE;
