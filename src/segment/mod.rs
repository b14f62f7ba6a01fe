//! Segments: immutable FlatBuffers files holding batches of msgpack rows.
//!
//! # Format
//!
//! A segment file is exactly one size-prefixed FlatBuffer: a little-endian u32 holding the
//! size of the rest of the file (so truncation is always detected), then the buffer with file
//! identifier `WSEG` at file bytes 8..12, built from `schemas/segment.fbs` (the source of truth; the Rust code in
//! `generated` is generated from it by `schemas/regen.sh`). The root table `Segment` holds a
//! union `SegmentVersion` whose type is the format version. weir writes version 12
//! ([`FORMAT_VERSION`]) and reads versions 1 to 12. Versions share tables where their fields
//! are the same (the schema's union names a table again, e.g. `SegmentV12: SegmentV8`): the
//! table `SegmentV1` is version 1's, `SegmentV2` that of versions 2 to 7, `SegmentV8` that of
//! versions 8 to 12; what changed between versions that share a table is inside the batches
//! or the checkpoints' encoding, and the union type says which. All have:
//!
//! - `uuid`: 16 bytes; the file is named `<uuid>.seg` (hyphenated lowercase);
//! - `intervals`: the event IDs held, as ascending half-open `[begin, end)` ranges;
//! - `events`: the number of events;
//! - `schemas`: each distinct schema once (name + fields with Zeek name and type string);
//! - `batches`: per batch the schema index, first ID, row count, optional `ts` min/max, the
//!   msgpack rows back to back (`data`, see [`crate::value`] for the row encoding), the start
//!   of every row relative to `data` (`offsets`, u32) and a CRC-32 over `data` followed by
//!   `offsets` as little-endian u32.
//!
//! Version 2 adds `meta_checksum`, so that every field that carries meaning is covered by a
//! checksum (in version 1 only the rows and row offsets were: a damaged field name read back
//! as another name). It is the CRC-32 (IEEE, as computed by `crc32fast`) of this encoding,
//! all integers little-endian, a *string* being its byte length as u32 followed by its bytes:
//!
//! 1. the format version as u32 (2 or 3), the 16 `uuid` bytes, `events` as u64;
//! 2. the number of `intervals` as u32, then each interval's `begin` and `end` as u64;
//! 3. the number of `schemas` as u32, then per schema its name (string), its number of fields
//!    as u32 and per field its name and its type (strings);
//! 4. the number of `batches` as u32, then per batch `schema` as u32, `first_id` as u64,
//!    `rows` as u32, `ts` as one byte 0 (absent) or 1 followed by `min` and `max` as i64, and
//!    `checksum` as u32 (which covers the batch's rows and row offsets).
//!
//! Version 3 has the fields of version 2 and adds three to each batch (absent, and refused if
//! present, in versions 1 and 2):
//!
//! - `codec` (`none`, `lz4`, `zstd`; [`Codec`]) and `raw_size`: with a codec, `data` holds the
//!   compressed *raw bytes* of the batch (every row's length as a LEB128 varint, then the rows)
//!   and `offsets` is empty; `raw_size` is the length of the raw bytes; the batch `checksum` is
//!   then the CRC-32 of the stored (compressed) `data`, so damage is found before anything is
//!   decompressed. The exact layout is in `codec.rs`. A batch that compression does not make
//!   smaller is stored uncompressed, so codecs may differ from batch to batch;
//! - `sketch` (optional): a Bloom filter of the batch's string and address values and the
//!   range of each numeric and time field, which queries use to skip batches without reading
//!   them ([`sketch`] documents the hash, the filter and the ranges).
//!
//! Version 4 has the fields of version 3 and two more values of `codec`: `lz4-columns` (3)
//! and `zstd-columns` (4), refused in versions 1 to 3. Such a batch's `data` holds its rows
//! split into one column per field, each column compressed on its own behind a header of
//! varint lengths, so that a reader can inflate one column alone (`columns.rs` documents the
//! bytes); its `raw_size` is the length of the rows, `offsets` is empty, and `checksum` is the
//! CRC-32 of the stored bytes. Batches whose rows do not fit the schema's shape are stored in
//! the row layout of version 3. A version 4 sketch also has `present`: per range, the number of
//! rows whose value of that field is set (between 1 and the batch's rows; refused in version
//! 3), which lets a count take a batch whose every row lies in a range without reading it. The
//! metadata checksum of version 4 is that of version 3 with 4 as the version and, after a
//! sketch's ranges, when it has `present`, their number as u32 and each as u32.
//!
//! Version 5 has the fields of version 4, and a sketch may have a time histogram (`times`,
//! refused before version 5): for the schema's `ts` field, the number of rows whose `ts`
//! falls in each of consecutive buckets of one of a few fixed widths, aligned to multiples of
//! the width since the epoch ([`sketch`] documents the widths and the bounds; the reader
//! checks that the buckets span exactly the `ts` range and add up to its `present` count). The
//! metadata checksum of version 5 is that of version 4 with 5 as the version and, after each
//! sketch's `present` counts, one byte 0 (no histogram) or 1 followed by `field` as u32,
//! `width` and `first` as i64, the number of buckets as u32 and each count as u32.
//!
//! Version 6 has the fields of version 5; a batch stored in columns (codecs 3 and 4) has the
//! *typed* column header (`columns.rs`), which gives each column an encoding: its msgpack
//! values as before, or *integer planes* (`planes.rs`: a column of times or durations divided
//! by their common power of ten, times as differences from the previous one, the bytes of each
//! significance together), which the writer uses for `time` and `interval` columns where they
//! are smaller (W1000's archive: 11% smaller). The metadata checksum of version 6 is that of
//! version 5 with 6 as the version. Its bytes are inside the batch's stored bytes, so the
//! batch's CRC covers them; a WAL record pointing at such a batch (`crate::wal`) reads it
//! through the same code.
//!
//! Version 7 has the fields of version 6; a column may also be a *dictionary* (`dict.rs`,
//! encoding 2 of the typed header: the column's distinct values once, then a one- or two-byte
//! code per row), which the writer uses for string and address columns whose values repeat
//! (at most 256 plus a quarter of them distinct) where it is smaller: W1000's archive 3.4% smaller,
//! and the batch's sketch hashes each distinct value once instead of walking the column. The
//! metadata checksum of version 7 is that of version 5 with 7 as the version. Readers of
//! version 6 refuse the new encoding, hence the new version.
//!
//! Version 8 has the fields of version 7 and `checkpoints` (optional): the full set of
//! checkpoints of followed files as of the segment's last event ([`crate::checkpoint`]; every
//! file the archive follows, not only those among the segment's rows, since retention and
//! erase drop old segments), encoded as a write-ahead log record encodes its checkpoints
//! ([`crate::wal`], flag bit 3: a u32 count, then per file dev u64, inode u64, fingerprint
//! length and CRC-32 u32, offset and skip u64, done u8, path as u32 length + UTF-8). The
//! writer always stores them (a count of 0 when nothing is followed); they are absent only in
//! the rewrite (erase, compaction, repair's salvage) of a segment of version 7 or older,
//! which recorded none: absent means not known. `weir verify --repair` rebuilds a lost
//! catalog's checkpoints from the newest segment (`crate::store`'s `repair.rs`). The metadata
//! checksum of version 8 is that of version 7 with 8 as the version, followed by one byte 0
//! (absent) or 1 and the checkpoints' bytes as a string (u32 length, bytes). Room for them is
//! kept as batches arrive ([`SegmentBuilder::reserve_checkpoints`]), so that sealing never
//! exceeds the maximum size. Readers of version 7 refuse version 8 (an unknown union type).
//!
//! Version 9 has the fields of version 8; a batch stored in columns has the *checksummed*
//! column header (`columns.rs`: two 0 varints, the column count, and after each column's
//! stored length the CRC-32 of its stored bytes as u32), and its `checksum` is the CRC-32 of
//! that header alone (the bytes before the first column's). So reading one column checks the
//! header and that column only, and the pages of the other columns are never touched: a
//! query on one field of a whole archive had spent 11% of its time in the CRC of every
//! column and 39% in the kernel faulting their pages in (`docs/dev/performance-log.md`). Every
//! byte stays covered: the header by the batch checksum (itself in the metadata checksum),
//! each column by its own, checked whenever it is inflated (`weir verify` inflates them
//! all). A batch stored otherwise keeps the checksum of its stored bytes. A write-ahead log
//! record pointing at a batch (`crate::wal`) still holds the CRC-32 of all its stored bytes.
//! The metadata checksum of version 9 is that of version 8 with 9 as the version. Readers
//! of version 8 refuse version 9 (an unknown union type).
//!
//! Version 10 has the fields of version 9; a column of a batch stored in columns may also be
//! *marked* (`marked.rs`, encoding 3 of the column header: the values' msgpack markers, one
//! byte per row, then the bytes that follow each marker), which the writer uses for `count`,
//! `port` and `int` columns whose values are all nil or integers. The bytes are the column's
//! own, rearranged, so that a reader knows each value's width before it reads any value: a
//! scan of a count column had spent most of its time finding where each value starts
//! (`docs/dev/performance-log.md`). The metadata checksum of version 10 is that of version 9
//! with 10 as the version. Readers of version 9 refuse version 10 (an unknown union type),
//! which would otherwise meet a column of an unknown encoding.
//!
//! Version 11 has the fields of version 10; a column of a batch stored in columns may also be
//! *blocked* (`blocks.rs`, encoding 4 of the column header: a directory, then the values cut
//! into blocks of rows, each compressed on its own, with a Bloom filter of each block's
//! values), which the writer uses for string columns stored as their values (not
//! dictionaries) of at least 32 KiB and more than one block of rows: a needle inflates
//! only the blocks whose filters may hold it, and a printed row only its block. The column's
//! checksum covers its directory and each block has its own. The metadata checksum of
//! version 11 is that of version 10 with 11 as the version. Readers of version 10 refuse
//! version 11 (an unknown union type), which would otherwise meet a column of an unknown
//! encoding.
//!
//! Version 12 has the table of version 11 (`SegmentV8`); only the encoding of `checkpoints`
//! is newer, that of write-ahead log version 3
//! ([`crate::wal`]): bit 31 of the checkpoint count says each checkpoint ends with the header
//! block of its file (u32 length + UTF-8), bit 30 that each then has its sum (u8 0 or 1, then
//! the CRC-32 of the file's bytes before its position as u32). A reader of version 11 that
//! predates those bits called such checkpoints damaged; one meeting version 12 says
//! "unsupported segment version 12 (written by a newer weir?)" instead. Segments of version 11
//! read with either encoding, since weir wrote the new bits under version 11 for a while
//! (from the merge d1481d1 on); the fixture `archive-v11` has the old one. The metadata
//! checksum of version 12 is that of version 11 with 12 as the version.
//!
//! The metadata checksum of version 3 is computed as for version 2 (with 3 as the version),
//! and after each batch's `checksum` it also encodes `codec` as u8, `raw_size` as u32, then
//! the sketch: one byte 0 (absent) or 1 followed by `bloom_hashes` as u8, the Bloom filter as a
//! string, the number of ranges as u32 and per range `field` as u32, `kind` as u8, `lo` and
//! `hi` as u64. So the sketch can be trusted without verifying the batch's rows.
//!
//! The values encoded are the stored ones, so the checksum does not depend on the physical
//! layout. Version 1 segments (written by weir before version 2) have no metadata checksum and
//! are checked as before; a `SegmentV1` table must have no field beyond version 1's five, so a
//! version 2 or 3 segment whose type byte is damaged into 1 is refused rather than read unchecked.
//!
//! Physically, the writer puts the front (size prefix, root offset, identifier, root tables,
//! schemas, intervals, the vector of batch offsets) first, then each batch as a self-contained
//! *chunk* (its table, vtable, offsets and rows, 8-aligned), last batch first. Bytes between
//! them (alignment, and for large segments padding up to a file system block before the root
//! table) are never referenced. Readers rely on none of this: any valid FlatBuffer of the
//! schema is a valid segment.
//!
//! # Old formats
//!
//! Every format weir has written is read natively, in one archive beside the current one: no
//! upgrade step, no command refuses an old segment (fixtures `tests/fixtures/archive-v1` to
//! `archive-v11`, `tests/it/segment_format.rs`; compaction rewrites the small segments it
//! merges in the current format). Decided (issue 56 item 7) for the formats older than the
//! current minus two (1 to 9) against an upgrade by a crash-safe rewrite (`weir upgrade`),
//! on these measurements (2026-12-07, format 12 current):
//!
//! - An upgrade must read an old segment to rewrite it, so it keeps every decoder a native
//!   reader has; and the decoders are not old code: the writer still stores rows (batches
//!   that do not fit the columns), msgpack values, planes, dictionaries and marked columns
//!   wherever they are smaller. What only old formats use is the code telling them apart,
//!   counted by hand in `reader.rs` and `columns.rs` (the union arm and the checks of what a
//!   format may not hold): format 1: 30 lines (its arm refuses a table with more than
//!   version 1's fields, `V1_FIELDS` in `meta.rs`); 2: 9 (no codecs, no sketches); 3: 8
//!   (no columns, no `present`); 4: 10 (no time histograms, the untyped column header); 5:
//!   4; 6 and 7: 1 each; 8: 11 (the batch checksum over every column, the column header
//!   without checksums); 9: 1. About 75 lines for nine formats, which an upgrade would
//!   keep and add a command, its crash-safe rewrite and its tests to.
//! - The versioned tables were the bulk: 8 of the 11 were the table before them field for
//!   field. They are union aliases now (`SegmentV2` for versions 2 to 7, `SegmentV8` for 8
//!   to 12), which removed 1,602 of the 4,288 generated lines and 146 of the schema's 398,
//!   the bytes on disk unchanged (union types and field slots are the same), and the
//!   reader's arm for each version is one line (`v2_root`, `v8_root` in `reader.rs`). A
//!   new format that changes no table field costs one alias and one arm, not a table.
//! - Read speed: the fixtures of every format, `weir export` and `weir verify` of their 324
//!   events (dev profile, CPU time per process, medians of 31, interleaved): export 7.2-7.7
//!   ms for formats 1 to 3, 8.8-9.9 ms for 4 to 12 (format 12: 9.3), verify 4.5-7.5 ms;
//!   an old format reads no slower than the current one.
//!
//! The rule: a format stays read natively while its decoders are the current writer's or
//! are small checks like the above. Were a future format to drop an encoding that needs a
//! decoder of its own, the segments holding it would be rewritten once (the crash-safe
//! replacement of `crate::store`'s `rewrite.rs`, as compaction does), on compaction or by an
//! upgrade command, with a message naming the command wherever else they are met; that
//! decoder could then go after a release that upgraded them.
//!
//! # Index files
//!
//! Next to each segment the writer puts its *index*, `<uuid>.idx`: a checksummed copy of what
//! opening the segment with the verifier finds (header, schemas, every batch's metadata and
//! sketch, where its bytes are), so that [`Segment::open`] reads one small file instead of
//! faulting in a page or two of every batch across the whole file. It is never needed: a
//! segment without a usable index is verified at open as before. `index.rs` documents the
//! format and its invariants.
//!
//! # Invariants
//!
//! - A segment is never larger than the `max_segment_size` it was written with, which is below
//!   the 2 GiB FlatBuffers limit ([`MAX_SEGMENT_SIZE_LIMIT`]). The writer
//!   ([`SegmentBuilder`]) accounts for the exact worst case of every byte it adds (data,
//!   offsets, alignment padding, tables, vtables, schemas and what sealing will add) before
//!   adding a batch.
//! - Batches are in ascending, non-overlapping ID order; every batch has at least one row;
//!   `events` is the sum of the rows; `intervals` is the merged union of the batch ranges.
//! - Files are written under a temporary name (as the segment fills, see the writer's module
//!   docs), then committed like every atomic write of `crate::fs` (fsync, rename into place,
//!   fsync the directory); a segment is never modified afterwards, which is what makes mapping
//!   it sound (`crate::fs::map_readonly`).
//! - In versions 2 to 4, `meta_checksum` is the CRC-32 of the encoding above; with the
//!   batches' checksums it covers every byte that carries meaning (only padding and alignment are
//!   not covered, and damage to FlatBuffers offsets or vtables is caught by the verifier or
//!   changes a covered value).
//! - A reader ([`Segment::open_verified`], and [`Segment::open`] for a segment without a
//!   usable index file) memory-maps the file, runs the FlatBuffers verifier with
//!   explicit limits ([`verifier_options`]) and checks every invariant above (the metadata
//!   checksum last, so that damage a structural check names is reported as such) except the
//!   batches' row offsets and checksums; those are checked lazily, once per batch, on its
//!   first access ([`Segment::batch`]; [`Segment::verify_all`] checks all of them). From then
//!   on uncompressed rows are read zero-copy from the map; a compressed batch is decompressed
//!   by each [`Segment::batch`] call into memory its [`SegmentBatch`] owns: one batch at a
//!   time, at most `raw_size` bytes (a frame that inflates to anything else is damage). Damage
//!   is reported as [`SegmentError::Corrupt`] (or [`SegmentError::Verification`]) naming the
//!   file and the batch, never as a panic.
//! - A batch's stored bytes are never larger than its rows and u32 offsets would be
//!   uncompressed, so the writer's worst-case accounting holds for every codec; a sketch's
//!   Bloom filter is at most a quarter of the batch's row bytes plus 8 bytes.

// The generated code is the one exception to the crate's `unsafe_code = "deny"` besides
// `crate::fs::map_readonly`: flatc's accessors are unsafe internally, behind the verifier.
#[allow(
    unsafe_code,
    missing_docs,
    clippy::all,
    clippy::pedantic,
    clippy::unwrap_used,
    clippy::expect_used,
    unused_imports,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    mismatched_lifetime_syntaxes
)]
#[rustfmt::skip]
#[path = "generated/segment_generated.rs"]
mod segment_generated;

/// The code generated by flatc from `schemas/segment.fbs`.
pub(crate) mod generated {
    pub use super::segment_generated::weir::fbs::*;
}

pub(crate) mod blocks;
mod bloom;
mod checksum;
mod codec;
pub(crate) mod columns;
mod compress;
mod dict;
mod error;
mod index;
mod index_of;
mod inspect;
pub(crate) mod marked;
mod meta;
mod parts;
mod planes;
mod prepare;
mod reader;
pub mod sketch;
mod stored;
mod varint;
mod writer;

pub(crate) use codec::unpack;
pub use columns::Columns;
pub(crate) use compress::{from_stored_byte, stored_byte};
pub use compress::{Codec, Compression, Layout, RowBuf};
pub use error::{Result, SegmentError};
pub use index::{index_path, remove_index, INDEX_EXTENSION, INDEX_VERSION};
pub use index_of::{check_index, write_index};
pub use inspect::{inspect, BatchInfo, SegmentInfo};
pub use meta::FORMAT_VERSION;
pub(crate) use planes::Ints;
pub use prepare::{PreparedBatch, Preparer};
pub use reader::{OffsetsRef, RowIter, Segment, SegmentBatch};
pub use writer::{
    check_max_segment_size, DataLocation, Packed, SealedSegment, SegmentBuilder,
    DEFAULT_MAX_SEGMENT_SIZE, MAX_SEGMENT_SIZE_LIMIT, MIN_SEGMENT_SIZE,
};

/// The FlatBuffers verifier limits used for segments: the apparent size may reach the 2 GiB
/// buffer limit (schemas are stored once, so apparent and real size are equal), the table count
/// is bounded by what fits in the buffer (every table takes at least 4 bytes), and the nesting is
/// at most 8 deep (Segment, SegmentV1 or SegmentV2, Schema, Field).
pub fn verifier_options(buffer_len: usize) -> flatbuffers::VerifierOptions {
    flatbuffers::VerifierOptions {
        max_depth: 16,
        max_tables: buffer_len / 4 + 16,
        max_apparent_size: 1 << 31,
        ignore_missing_null_terminator: false,
    }
}

/// Name of the directory holding the segment files inside a database directory (next to the
/// write-ahead log, whose records point into them).
pub const SEGMENTS_DIR: &str = "segments";

/// The file name extension of segment files.
pub const SEGMENT_EXTENSION: &str = generated::SEGMENT_EXTENSION;

/// The file name of a segment: `<uuid>.seg`.
pub fn file_name(uuid: &uuid::Uuid) -> String {
    format!("{}.{}", uuid.hyphenated(), generated::SEGMENT_EXTENSION)
}
