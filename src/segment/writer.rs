//! Building segments: batch by batch, with exact worst-case size accounting so that no segment
//! exceeds its maximum.
//!
//! # Layout and writing while building
//!
//! FlatBuffers offsets are relative, so each batch is encoded on its own as a *chunk* (its
//! rows, row offsets, table and vtable, padded to 8 bytes) and chunks are laid back to back
//! from the end of the segment towards its start, first batch last. The *front* (size prefix,
//! root offset, identifier, root tables, schemas, ID intervals and the vector of offsets to the
//! batch tables) is built at seal and put just before the last chunk. A builder therefore holds
//! one batch and some metadata, never a whole segment. The metadata checksum of format 2 is
//! computed at seal too, from the batch headers hashed as they were added (CRC-32 combination),
//! so sealing reads no chunk back.
//!
//! Formats 3 and 4: as a batch is added, its sketch is built (`sketch.rs`) and its rows
//! compressed (`codec.rs`: in columns, `columns.rs`, when the rows fit the schema, else in
//! rows; the builder's [`Compression`], zstd level 1 by default), both by a
//! [`Preparer`] (`prepare.rs`): the builder's own, or one on another thread that handed the
//! result over with [`SegmentBuilder::add_prepared`]. The chunk then holds
//! the stored (compressed) bytes, no offsets vector, and the sketch. A compressed batch, in
//! either layout, is never larger than its rows and u32 offsets (the packer stores it
//! uncompressed otherwise), so the worst-case accounting of format 2 still holds,
//! plus a sketch's worst case (see `max_bloom_bytes`).
//!
//! A store's builder ([`SegmentBuilder::in_dir`]) puts each chunk straight into a sparse
//! temporary file `.<uuid>.seg.tmp` as long as the maximum segment size (rounded up to 64 KiB),
//! at its final distance from the end, as the import runs; a background `fdatasync` every
//! 32 MiB lets the disk take the bytes early. Sealing a large segment then means writing only
//! its front: the front is padded (between the root offset and the root table, where bytes are
//! never read) so that the segment starts on a block boundary, and the unused start of the file
//! is cut off with `fallocate(FALLOC_FL_COLLAPSE_RANGE)` (ext4, XFS), which moves extents, not
//! bytes. Where that is not supported, the segment is copied to a new file instead. Either way
//! the result is a standard segment file, fsynced and renamed into place.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::ops::Range;
use std::path::{Path, PathBuf};

use flatbuffers::{FlatBufferBuilder, WIPOffset};

use super::checksum::checksum_with_data_crc;
use super::compress::{stored_byte, Codec, Compression, Layout};
use super::generated as fbs;
use super::index::{BatchRecord, SketchRecord};
use super::meta::{MetaHasher, FORMAT_VERSION};
use super::prepare::{max_bloom_bytes, PreparedBatch, Preparer};
use super::sketch::MAX_TIME_BUCKETS;
use super::{Result, SegmentError};
use crate::batch::Batch;
use crate::checkpoint::FileCheckpoint;
use crate::fs::{self, Writeback};
use crate::types::SchemaRef;

/// The default maximum segment size: 1 GiB (as VAST).
pub const DEFAULT_MAX_SEGMENT_SIZE: u64 = 1 << 30;

/// The largest accepted maximum segment size: 2 GiB minus 64 KiB.
///
/// A FlatBuffer cannot exceed 2 GiB (2^31 bytes: offsets are signed 32-bit), and the
/// FlatBuffers builder aborts the process when it would grow past that; VAST crashed exactly so
/// with `--max-segment-size=2048`. weir accounts for the worst case of every byte before adding
/// a batch and rotates before the maximum, and keeps 64 KiB of headroom below the hard limit.
pub const MAX_SEGMENT_SIZE_LIMIT: u64 = (1 << 31) - (1 << 16);

/// The smallest accepted maximum segment size: 4 KiB.
pub const MIN_SEGMENT_SIZE: u64 = 4096;

/// Worst case of what sealing adds besides the per-batch and per-schema entries: the root
/// tables, their vtables, vector length prefixes, alignment, file identifier and root offset.
const SEAL_OVERHEAD: usize = 256;

/// Worst case per batch besides its data and offsets: two vector length prefixes and their
/// alignment (2 × 7), the NUL after the data (1), the batch table with its vtable and the
/// chunk's padding to 8 bytes (128), and at seal its entry in the batches vector (4) and
/// possibly its own ID interval (16).
const BATCH_OVERHEAD: usize = 14 + 1 + 128 + BATCH_SEAL_COST;

/// What sealing adds per batch: its entry in the batches vector (4) and possibly its own ID
/// interval (16).
const BATCH_SEAL_COST: usize = 4 + 16;

/// What sealing adds per schema: its entry in the schemas vector.
const SCHEMA_SEAL_COST: usize = 4;

/// Worst case of a sketch besides its Bloom filter and ranges: its table and vtable, three
/// vector length prefixes (bloom, ranges, present) and their alignment, the batch table's
/// extra fields, and the time histogram (its table, vtable and counts).
const SKETCH_OVERHEAD: usize = 112 + 64 + 4 * MAX_TIME_BUCKETS;

/// Bytes per field range in a sketch (`FieldRange`: u32, u8, padding, two u64; and its
/// `present` count, a u32).
const RANGE_COST: usize = 28;

/// Checks a maximum segment size and returns it as `usize`.
///
/// Sizes above [`MAX_SEGMENT_SIZE_LIMIT`] (so 2 GiB and more) are refused with an
/// explanation of the FlatBuffers 2 GiB limit; sizes below [`MIN_SEGMENT_SIZE`] too.
pub fn check_max_segment_size(size: u64) -> Result<usize> {
    if size > MAX_SEGMENT_SIZE_LIMIT {
        return Err(SegmentError::InvalidMaxSegmentSize {
            size,
            reason: format!(
                "a segment is one FlatBuffer, and a FlatBuffer cannot reach 2 GiB \
                 (its offsets are signed 32-bit; VAST crashed with 2 GiB segments); \
                 use at most 2 GiB minus 64 KiB ({MAX_SEGMENT_SIZE_LIMIT} bytes), e.g. 1GiB"
            ),
        });
    }
    if size < MIN_SEGMENT_SIZE {
        return Err(SegmentError::InvalidMaxSegmentSize {
            size,
            reason: format!("use at least {MIN_SEGMENT_SIZE} bytes"),
        });
    }
    usize::try_from(size).map_err(|_| SegmentError::InvalidMaxSegmentSize {
        size,
        reason: "does not fit in this platform's address space".into(),
    })
}

/// What a sealed segment holds: the catalog's entry for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedSegment {
    /// The segment's identity (and file name).
    pub uuid: uuid::Uuid,
    /// File size in bytes.
    pub bytes: u64,
    /// Size of its index file (`<uuid>.idx`) in bytes; 0 if it could not be written.
    pub index_bytes: u64,
    /// Number of events.
    pub events: u64,
    /// Number of batches.
    pub batches: u64,
    /// Event IDs held, ascending, merged where adjacent.
    pub intervals: Vec<Range<u64>>,
    /// Events per schema name.
    pub schemas: BTreeMap<String, u64>,
    /// Range of the `ts` field over all events, if any has one.
    pub ts: Option<(i64, i64)>,
}

/// Where a batch's rows are in the file of the segment being built (see
/// [`SegmentBuilder::add_located`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataLocation {
    /// The segment: its file is `.<uuid>.seg.tmp` while it is built, `<uuid>.seg` once sealed.
    pub segment: uuid::Uuid,
    /// Distance of the first stored byte from the end of the file.
    pub from_end: u64,
    /// For a compressed batch: how its rows are stored there (`None`: the rows as they are).
    pub packed: Option<Packed>,
}

/// How the rows of a compressed batch are stored (see [`DataLocation`]): the stored bytes
/// inflate to `raw_size` bytes, the rows' lengths and the rows (see the codecs' module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packed {
    /// The codec.
    pub codec: Codec,
    /// How the bytes are arranged (rows, or columns in format 4).
    pub layout: Layout,
    /// Length of the stored (compressed) bytes.
    pub stored_len: u32,
    /// Length of the raw bytes they inflate to.
    pub raw_size: u32,
    /// CRC-32 of the stored bytes.
    pub crc: u32,
}

/// The segment being built: where its bytes go.
enum Target {
    /// In memory: a buffer of the maximum size, filled from its end.
    Memory(Vec<u8>),
    /// A sparse temporary file of the maximum size (rounded up to a block), filled from its end.
    File(ActiveFile),
}

/// The temporary file of the active segment (see the module docs).
struct ActiveFile {
    uuid: uuid::Uuid,
    path: PathBuf,
    file: File,
    /// File system block size: the unit of `FALLOC_FL_COLLAPSE_RANGE`.
    block: usize,
    /// Background write-back of the bytes written so far.
    writeback: Writeback,
}

impl Target {
    /// Length of the buffer or file: the batch region ends here.
    fn len(&self, max: usize) -> usize {
        match self {
            Target::Memory(_) => max,
            Target::File(_) => file_len(max),
        }
    }

    /// Puts `bytes` at offset `at`.
    fn put(&mut self, bytes: &[u8], at: usize) -> Result<()> {
        match self {
            Target::Memory(buf) => {
                buf[at..at + bytes.len()].copy_from_slice(bytes);
                Ok(())
            }
            Target::File(f) => {
                fs::write_all_at(&f.file, bytes, at as u64)
                    .map_err(|e| SegmentError::io("write", &f.path, e))?;
                f.writeback.appended(bytes.len() as u64, &f.file);
                Ok(())
            }
        }
    }
}

/// The active segment.
///
/// Each batch is encoded on its own (its table, vtable, rows and row offsets: a *chunk*, built
/// in a small reused FlatBuffers builder; FlatBuffers offsets are relative, so a chunk can go
/// anywhere at 8-byte alignment) and put right away in front of the previous one, at the end of
/// the segment's buffer or file, growing towards its start. At seal the front (root tables,
/// schemas, ID intervals and the vector of batch offsets) is built and put before the first
/// chunk. So a builder holds one batch and some metadata, never a whole segment: with
/// [`SegmentBuilder::in_dir`] the rows go from the batch to the file without another copy.
/// [`SegmentBuilder::fits`] tells whether a batch can be added without exceeding the maximum.
pub struct SegmentBuilder {
    max: usize,
    /// Where segments are written as they are built ([`SegmentBuilder::in_dir`]).
    dir: Option<PathBuf>,
    target: Option<Target>,
    /// Builds one chunk at a time.
    chunk: FlatBufferBuilder<'static>,
    /// Bytes of chunks so far (a multiple of 8), at the end of the target.
    region: usize,
    /// Per batch: the distance of its table from the end of the target.
    tables: Vec<usize>,
    schemas: Vec<SchemaRef>,
    intervals: Vec<Range<u64>>,
    events: u64,
    schema_events: BTreeMap<String, u64>,
    ts: Option<(i64, i64)>,
    scratch: Vec<u32>,
    /// The batches' part of the metadata checksum (their headers, in order), so that sealing
    /// needs no per-batch state besides `tables`.
    batch_meta: MetaHasher,
    /// Compresses each batch and builds its sketch (format 3), for batches added unprepared.
    preparer: Preparer,
    /// Per batch: its record in the segment's index file (`index.rs`).
    index: Vec<BatchRecord>,
    /// What sealing will add for the batches and schemas added so far (schemas, vector
    /// entries and intervals): the front, apart from [`SEAL_OVERHEAD`].
    reserved: usize,
    /// The checkpoints of followed files to store (format 8), encoded as the write-ahead log
    /// does (`None`: not known, stored as absent); kept from segment to segment until set
    /// again.
    checkpoints: Option<Vec<u8>>,
    /// Bytes of encoded checkpoints room is kept for in this segment (at least those of
    /// `checkpoints`): see [`SegmentBuilder::reserve_checkpoints`].
    checkpoint_reserve: usize,
}

impl std::fmt::Debug for SegmentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentBuilder")
            .field("max", &self.max)
            .field("used", &self.used())
            .field("batches", &self.tables.len())
            .field("events", &self.events)
            .finish()
    }
}

impl SegmentBuilder {
    /// A builder for segments of at most `max_segment_size` bytes (checked with
    /// [`check_max_segment_size`]), built in memory.
    pub fn new(max_segment_size: u64) -> Result<SegmentBuilder> {
        let max = check_max_segment_size(max_segment_size)?;
        Ok(Self::with_dir(max, None))
    }

    /// A builder for segments of at most `max_segment_size` bytes that writes each segment to
    /// its own temporary file in `dir` while it is built (created at the first batch) and seals
    /// it there ([`SegmentBuilder::write_to`] must be given the same `dir`). See the module docs.
    pub fn in_dir(max_segment_size: u64, dir: impl Into<PathBuf>) -> Result<SegmentBuilder> {
        let max = check_max_segment_size(max_segment_size)?;
        Ok(Self::with_dir(max, Some(dir.into())))
    }

    fn with_dir(max: usize, dir: Option<PathBuf>) -> SegmentBuilder {
        SegmentBuilder {
            max,
            dir,
            target: None,
            chunk: FlatBufferBuilder::new(),
            region: 0,
            tables: Vec::new(),
            schemas: Vec::new(),
            intervals: Vec::new(),
            events: 0,
            schema_events: BTreeMap::new(),
            ts: None,
            scratch: Vec::new(),
            batch_meta: MetaHasher::new(),
            preparer: Preparer::default(),
            index: Vec::new(),
            reserved: 0,
            checkpoints: Some(crate::wal::encode_checkpoints(&[])),
            checkpoint_reserve: 0,
        }
    }

    /// Sets the checkpoints of followed files that the segment records (format 8): the full
    /// set as of its last event (see [`crate::checkpoint`]). Kept for the following segments
    /// until set again. Returns `false`, changing nothing, if they do not fit in the room left
    /// (a caller that reserved room for them first with [`SegmentBuilder::reserve_checkpoints`]
    /// never sees that).
    /// `None` records them as not known (a rewrite of a segment of an older format).
    pub fn set_checkpoints(&mut self, list: Option<&[FileCheckpoint]>) -> bool {
        let bytes = list.map(crate::wal::encode_checkpoints);
        let now = Self::checkpoint_cost(self.checkpoints_len().max(self.checkpoint_reserve));
        let len = bytes.as_ref().map_or(0, Vec::len);
        if Self::checkpoint_cost(len) > now + self.room() {
            return false;
        }
        self.checkpoints = bytes;
        true
    }

    fn checkpoints_len(&self) -> usize {
        self.checkpoints.as_ref().map_or(0, Vec::len)
    }

    /// Whether checkpoints of `bytes` encoded bytes fit in the room left (an empty builder:
    /// whether they fit in a segment at all).
    pub fn checkpoints_fit(&self, bytes: usize) -> bool {
        let now = Self::checkpoint_cost(self.checkpoints_len().max(self.checkpoint_reserve));
        Self::checkpoint_cost(bytes) <= now + self.room()
    }

    /// Keeps room for checkpoints of up to `bytes` encoded bytes in this segment, so that a
    /// later [`SegmentBuilder::set_checkpoints`] fits: the store reserves, before each batch,
    /// for its current set plus the batch's marks. Room is only ever added until the segment
    /// is sealed.
    pub fn reserve_checkpoints(&mut self, bytes: usize) {
        self.checkpoint_reserve = self.checkpoint_reserve.max(bytes);
    }

    /// The room the checkpoints' vector takes in the front for `bytes` encoded bytes: the
    /// bytes, the length prefix, alignment, the table's field offset and vtable entry.
    fn checkpoint_cost(bytes: usize) -> usize {
        bytes + 4 + 8 + 4 + 4
    }

    /// Sets how the following batches are compressed (default: [`Compression::default`]).
    pub fn set_compression(&mut self, compression: Compression) {
        self.preparer = Preparer::new(compression, self.preparer.sketches());
    }

    /// How batches are compressed.
    pub fn compression(&self) -> Compression {
        self.preparer.compression()
    }

    /// Whether the following batches get sketches (default: yes).
    pub fn set_sketches(&mut self, on: bool) {
        self.preparer = Preparer::new(self.preparer.compression(), on);
    }

    /// The maximum segment size in bytes.
    pub fn max_size(&self) -> usize {
        self.max
    }

    /// Bytes of batches added so far (what sealing adds is accounted separately).
    pub fn used(&self) -> usize {
        self.region
    }

    /// Number of events added.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Number of batches added.
    pub fn batches(&self) -> usize {
        self.tables.len()
    }

    /// Whether no batch was added since the last seal.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// The ID one past the last event added, if any.
    pub fn end_id(&self) -> Option<u64> {
        self.intervals.last().map(|r| r.end)
    }

    fn schema_cost(schema: &SchemaRef) -> usize {
        // name string (len + NUL + 3 pad + 4 prefix), fields vector (4n + 7), schema table and
        // vtable (32), schemas vector entry (4); per field: two strings and a table (64).
        64 + schema.name.len()
            + schema
                .fields
                .iter()
                .map(|f| 64 + f.name.len() + display_len(&f.ty))
                .sum::<usize>()
    }

    fn has_schema(&self, schema: &SchemaRef) -> Option<usize> {
        self.schemas
            .iter()
            .position(|s| std::sync::Arc::ptr_eq(s, schema) || s == schema)
    }

    /// Worst-case bytes that adding `rows` rows of `data_len` bytes of `schema` would take,
    /// including what sealing will add for them.
    fn cost(&self, schema: &SchemaRef, data_len: usize, rows: usize) -> usize {
        let schema_fields = schema.fields.len();
        let schema = match self.has_schema(schema) {
            Some(_) => 0,
            None => Self::schema_cost(schema) + SCHEMA_SEAL_COST,
        };
        let sketch = match self.preparer.sketches() {
            true => SKETCH_OVERHEAD + max_bloom_bytes(data_len) + RANGE_COST * schema_fields,
            false => 0,
        };
        data_len + 4 * rows + BATCH_OVERHEAD + schema + sketch
    }

    /// Bytes still guaranteed to be free after reserving what sealing needs.
    fn room(&self) -> usize {
        let checkpoints =
            Self::checkpoint_cost(self.checkpoints_len().max(self.checkpoint_reserve));
        let reserved = self.used() + SEAL_OVERHEAD + self.reserved + checkpoints;
        self.max.saturating_sub(reserved)
    }

    /// Whether one event of `row_len` bytes of `schema` fits in an empty segment.
    pub fn row_fits_empty_segment(&self, schema: &SchemaRef, row_len: usize) -> bool {
        let sketch = match self.preparer.sketches() {
            true => SKETCH_OVERHEAD + max_bloom_bytes(row_len) + RANGE_COST * schema.fields.len(),
            false => 0,
        };
        Self::schema_cost(schema)
            + SCHEMA_SEAL_COST
            + row_len
            + 4
            + BATCH_OVERHEAD
            + SEAL_OVERHEAD
            + Self::checkpoint_cost(self.checkpoints_len())
            + sketch
            <= self.max
    }

    /// Whether the whole batch can be added without the sealed segment exceeding the maximum.
    pub fn fits(&self, batch: &Batch) -> bool {
        self.cost(batch.schema(), batch.byte_size(), batch.len()) <= self.room()
    }

    /// Whether all of `batches` can be added, one after the other, without the sealed segment
    /// exceeding the maximum (a schema new to the segment is counted once).
    pub fn fits_all(&self, batches: &[&Batch]) -> bool {
        let mut new: Vec<&SchemaRef> = Vec::new();
        let mut total = 0usize;
        for b in batches {
            let mut cost = self.cost(b.schema(), b.byte_size(), b.len());
            if self.has_schema(b.schema()).is_none() {
                if new.iter().any(|s| *s == b.schema()) {
                    cost -= Self::schema_cost(b.schema()) + SCHEMA_SEAL_COST;
                } else {
                    new.push(b.schema());
                }
            }
            total = total.saturating_add(cost);
        }
        total <= self.room()
    }

    /// The largest number of leading rows of `batch` that fit (0 if not even one).
    pub fn rows_that_fit(&self, batch: &Batch) -> usize {
        let room = self.room();
        let fits = |k: usize| {
            let data_len = batch.offsets().get(k).copied().unwrap_or(batch.byte_size());
            self.cost(batch.schema(), data_len, k) <= room
        };
        if fits(batch.len()) {
            return batch.len();
        }
        // Largest k with fits(k): fits is monotone in k.
        let (mut lo, mut hi) = (0usize, batch.len());
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        if lo == 0 || !fits(lo) {
            0
        } else {
            lo
        }
    }

    /// Adds a non-empty batch whose ID is set. The caller checks [`SegmentBuilder::fits`]
    /// first; a batch that does not fit is refused with an error (never a builder overflow).
    /// Batches must come in ascending ID order.
    pub fn add(&mut self, batch: &Batch) -> Result<()> {
        self.add_with_crc(batch, crc32fast::hash(batch.data()))
    }

    /// [`SegmentBuilder::add`] with the CRC-32 of `batch.data()` already computed (used only
    /// if the batch is stored as its rows, see [`SegmentBuilder::add_prepared`]).
    pub fn add_with_crc(&mut self, batch: &Batch, data_crc: u32) -> Result<()> {
        self.add_located(batch, data_crc).map(|_| ())
    }

    /// [`SegmentBuilder::add_with_crc`] that also tells where the batch's rows now are: in file
    /// mode, the segment's UUID and the distance of the first row byte from the end of the
    /// segment's file. That distance stays valid when the file is sealed (collapsing or copying
    /// keeps the end), so the write-ahead log can point at the rows instead of holding a copy.
    pub fn add_located(&mut self, batch: &Batch, data_crc: u32) -> Result<Option<DataLocation>> {
        self.add_prepared(batch, None, &mut Some(data_crc))
    }

    /// [`SegmentBuilder::add_located`] with the batch already prepared (compressed and
    /// sketched, see [`Preparer`]), perhaps on another thread. A `prepared` that is `None`, was
    /// prepared from another batch, or disagrees with this builder's sketch setting is
    /// prepared again here.
    ///
    /// `rows_crc` is the CRC-32 of `batch.data()`, which only a batch stored as its rows needs
    /// (its checksum covers them; a compressed batch's covers its stored bytes): if it is
    /// `None` and the batch is stored so, it is computed and left there, for the caller's
    /// write-ahead log record; otherwise the rows are not read for it.
    pub fn add_prepared(
        &mut self,
        batch: &Batch,
        prepared: Option<PreparedBatch>,
        rows_crc: &mut Option<u32>,
    ) -> Result<Option<DataLocation>> {
        if batch.is_empty() {
            return Ok(None);
        }
        if !self.fits(batch) {
            return Err(SegmentError::InvalidMaxSegmentSize {
                size: self.max as u64,
                reason: format!(
                    "internal: a batch of {} bytes was added beyond the segment's room of {} bytes",
                    batch.byte_size(),
                    self.room()
                ),
            });
        }
        self.ensure_target()?;
        let schema_index = match self.has_schema(batch.schema()) {
            Some(i) => i,
            None => {
                self.reserved += Self::schema_cost(batch.schema()) + SCHEMA_SEAL_COST;
                self.schemas.push(batch.schema().clone());
                self.schemas.len() - 1
            }
        };
        // The worst-case accounting of `fits` assumed this builder's sketch setting.
        let prepared = match prepared {
            Some(p) if p.is_for(batch) && p.sketched == self.preparer.sketches() => p,
            _ => self.preparer.prepare(batch),
        };
        self.scratch.clear();
        self.scratch
            .extend(batch.offsets().iter().map(|&o| o as u32));
        let PreparedBatch { packed, sketch, .. } = prepared;
        // The CRC-32 of the stored bytes, for a write-ahead log record pointing at them.
        let mut stored_crc = None;
        let (stored, offsets, codec, layout, raw_size, checksum) = match &packed {
            Some((codec, layout, stored, raw_size)) => {
                (&stored[..], &[][..], *codec, *layout, *raw_size as u32, {
                    let whole = crc32fast::hash(stored);
                    stored_crc = Some(whole);
                    // Format 9: a batch in columns is checked by its header, which holds
                    // each column's checksum (`columns.rs`).
                    match layout {
                        Layout::Columns => {
                            match super::columns::header(stored, *raw_size, batch.len()) {
                                Ok(h) => crc32fast::hash(&stored[..h.len]),
                                Err(e) => {
                                    return Err(internal(
                                        self.max,
                                        &format!("a batch packed in columns: {e}"),
                                    ))
                                }
                            }
                        }
                        Layout::Rows => whole,
                    }
                })
            }
            None => (
                batch.data(),
                &self.scratch[..],
                Codec::None,
                Layout::Rows,
                0,
                checksum_with_data_crc(
                    *rows_crc.get_or_insert_with(|| crc32fast::hash(batch.data())),
                    batch.byte_size(),
                    &self.scratch,
                ),
            ),
        };
        // The chunk: rows, offsets, table (and its vtable), padded to a multiple of 8 so that
        // chunks laid back to back from the (8-aligned) end stay aligned.
        let fbb = &mut self.chunk;
        fbb.reset();
        // A `[ubyte]` vector has the layout of a byte string (u32 length, bytes); the byte
        // string path copies with one memcpy (plus a NUL that readers ignore), where
        // `create_vector` copies byte by byte.
        let data = fbb.create_byte_string(stored);
        // The stored bytes follow the vector's u32 length.
        let data_from_end = data.value() as u64 - 4;
        let data: WIPOffset<flatbuffers::Vector<'static, u8>> = WIPOffset::new(data.value());
        let offsets_len = 4 * offsets.len() as u32;
        let offsets = fbb.create_vector(offsets);
        // Positions of vectors' first bytes from the end of the segment (for its index): the
        // chunk ends `region` bytes before it, and a vector's elements follow its u32 length.
        let region = self.region as u64;
        let from_end = |value: u32| region + u64::from(value) - 4;
        let mut record = BatchRecord {
            schema: schema_index as u32,
            first_id: batch.id(),
            rows: batch.len() as u32,
            ts: batch.ts_range(),
            data: (region + data_from_end, stored.len() as u32),
            offsets: (from_end(offsets.value()), offsets_len),
            checksum,
            stored: stored_byte(codec, layout),
            raw_size,
            sketch: None,
        };
        self.batch_meta.batch(
            schema_index as u32,
            batch.id(),
            batch.len() as u32,
            batch.ts_range(),
            checksum,
        );
        let sketch = sketch.map(|sk| {
            let mut ranges = sk.ranges.iter().map(|&(f, k, lo, hi)| (f, k as u8, lo, hi));
            self.batch_meta.batch_v3(
                stored_byte(codec, layout),
                raw_size,
                Some((sk.hashes, &sk.bloom, &mut ranges)),
            );
            let bloom = fbb.create_byte_string(&sk.bloom);
            record.sketch = Some(SketchRecord {
                bloom: (from_end(bloom.value()), sk.bloom.len() as u32),
                hashes: sk.hashes,
                ranges: sk
                    .ranges
                    .iter()
                    .enumerate()
                    .map(|(j, &(f, _, lo, hi))| (f, lo, hi, sk.present.get(j).copied()))
                    .collect(),
                times: sk.times.clone(),
            });
            let bloom: WIPOffset<flatbuffers::Vector<'static, u8>> = WIPOffset::new(bloom.value());
            let ranges: Vec<fbs::FieldRange> = sk
                .ranges
                .iter()
                .map(|&(f, k, lo, hi)| fbs::FieldRange::new(f, k as u8, lo, hi))
                .collect();
            let ranges = fbb.create_vector(&ranges);
            self.batch_meta.present(&sk.present);
            let present = fbb.create_vector(&sk.present);
            self.batch_meta.times(
                sk.times
                    .as_ref()
                    .map(|t| (t.field, t.width, t.first, &t.counts[..])),
            );
            let times = sk.times.as_ref().map(|t| {
                let counts = fbb.create_vector(&t.counts);
                fbs::TimeHistogram::create(
                    fbb,
                    &fbs::TimeHistogramArgs {
                        field: t.field,
                        width: t.width,
                        first: t.first,
                        counts: Some(counts),
                    },
                )
            });
            fbs::Sketch::create(
                fbb,
                &fbs::SketchArgs {
                    bloom: Some(bloom),
                    bloom_hashes: sk.hashes,
                    ranges: Some(ranges),
                    present: Some(present),
                    times,
                },
            )
        });
        if sketch.is_none() {
            self.batch_meta
                .batch_v3(stored_byte(codec, layout), raw_size, None);
        }
        let ts = batch
            .ts_range()
            .map(|(min, max)| fbs::TimeRange::new(min, max));
        let table = fbs::Batch::create(
            fbb,
            &fbs::BatchArgs {
                schema: schema_index as u32,
                first_id: batch.id(),
                rows: batch.len() as u32,
                ts: ts.as_ref(),
                data: Some(data),
                offsets: Some(offsets),
                checksum,
                codec: fbs::Codec(stored_byte(codec, layout)),
                raw_size,
                sketch,
            },
        );
        let stored_len = stored.len() as u32;
        while !fbb.unfinished_data().len().is_multiple_of(8) {
            fbb.push(0u8);
        }
        let bytes = fbb.unfinished_data();
        let (target, max) = (self.target.as_mut(), self.max);
        let Some(target) = target else {
            return Err(internal(max, "no segment target"));
        };
        let at = target.len(max) - self.region - bytes.len();
        target.put(bytes, at)?;
        let location = match target {
            Target::File(f) => Some(DataLocation {
                segment: f.uuid,
                from_end: self.region as u64 + data_from_end,
                packed: (codec != Codec::None).then_some(Packed {
                    codec,
                    layout,
                    stored_len,
                    raw_size,
                    crc: stored_crc.unwrap_or(checksum),
                }),
            }),
            Target::Memory(_) => None,
        };
        self.tables.push(self.region + table.value() as usize);
        self.index.push(record);
        self.region += bytes.len();
        self.reserved += BATCH_SEAL_COST;
        let range = batch.id_range();
        match self.intervals.last_mut() {
            Some(last) if last.end == range.start => last.end = range.end,
            _ => self.intervals.push(range),
        }
        self.events += batch.len() as u64;
        *self
            .schema_events
            .entry(batch.schema().name.clone())
            .or_default() += batch.len() as u64;
        if let Some((lo, hi)) = batch.ts_range() {
            self.ts = Some(match self.ts {
                Some((a, b)) => (a.min(lo), b.max(hi)),
                None => (lo, hi),
            });
        }
        Ok(location)
    }

    /// In file mode, the name of the active segment's temporary file, once it exists.
    pub fn active_file_name(&self) -> Option<String> {
        match &self.target {
            Some(Target::File(f)) => Some(format!(".{}.tmp", super::file_name(&f.uuid))),
            _ => None,
        }
    }

    /// In file mode, makes the bytes written to the active segment's file so far durable
    /// (`fdatasync`), and reports a failed background write-back.
    pub fn sync_data(&mut self) -> Result<()> {
        if let Some(Target::File(f)) = &mut self.target {
            f.writeback
                .finish()
                .map_err(|e| SegmentError::io("write back", &f.path, e))?;
            fs::fault::hit(fs::fault::Op::Sync)
                .and_then(|()| f.file.sync_data())
                .map_err(|e| SegmentError::io("fsync", &f.path, e))?;
        }
        Ok(())
    }

    /// Creates the active segment's buffer or temporary file, if not done yet.
    fn ensure_target(&mut self) -> Result<()> {
        if self.target.is_some() {
            return Ok(());
        }
        let Some(dir) = &self.dir else {
            // Zeroed allocation: pages are only touched as they are filled (from the end), so
            // a small segment does not cost `max` bytes of memory.
            self.target = Some(Target::Memory(vec![0; self.max]));
            return Ok(());
        };
        let uuid = uuid::Uuid::new_v4();
        let path = dir.join(format!(".{}.tmp", super::file_name(&uuid)));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| SegmentError::io("create", &path, e))?;
        let active = ActiveFile {
            uuid,
            block: fs::block_size(&file),
            path,
            file,
            writeback: Writeback::default(),
        };
        let target = Target::File(active);
        // Sparse: blocks are allocated only as chunks are written, from the end.
        let len = target.len(self.max) as u64;
        if let Target::File(f) = &target {
            let resized =
                fs::fault::hit(fs::fault::Op::Allocate).and_then(|()| f.file.set_len(len));
            if let Err(e) = resized {
                let _ = std::fs::remove_file(&f.path);
                return Err(SegmentError::io("resize", &f.path, e));
            }
        }
        self.target = Some(target);
        Ok(())
    }

    /// Builds the front of the segment (everything but the chunks) for a chunk region of
    /// `self.region` bytes, padded so that the whole segment is a multiple of `block` bytes
    /// when that stays within the maximum. Returns the finished front.
    fn build_front(&self, uuid: uuid::Uuid, block: usize) -> Result<Vec<u8>> {
        let mut fbb = FlatBufferBuilder::with_capacity(
            SEAL_OVERHEAD + self.reserved + Self::checkpoint_cost(self.checkpoints_len()),
        );
        let schemas: Vec<_> = self
            .schemas
            .iter()
            .map(|s| create_schema(&mut fbb, s))
            .collect();
        let schemas = fbb.create_vector(&schemas);
        let intervals: Vec<fbs::Interval> = self
            .intervals
            .iter()
            .map(|r| fbs::Interval::new(r.start, r.end))
            .collect();
        let intervals = fbb.create_vector(&intervals);
        // The batch offsets are patched in below, once the front's length is known.
        let batches = fbb.create_vector(&vec![0u32; self.tables.len()]);
        let batches_at = batches.value() as usize;
        let batches = WIPOffset::new(batches.value());
        let checkpoints = self.checkpoints.as_ref().map(|c| fbb.create_vector(&c[..]));
        // Formats 8 to 12 share one table (union aliases in the schema); the union type says
        // which format the batches and the checkpoints' encoding are in.
        let table = fbs::SegmentV8::create(
            &mut fbb,
            &fbs::SegmentV8Args {
                uuid: Some(&fbs::Uuid::new(uuid.as_bytes())),
                intervals: Some(intervals),
                events: self.events,
                schemas: Some(schemas),
                batches: Some(batches),
                meta_checksum: self.meta_checksum(uuid),
                checkpoints,
            },
        );
        let root = fbs::Segment::create(
            &mut fbb,
            &fbs::SegmentArgs {
                segment_type: fbs::SegmentVersion::SegmentV12,
                segment: Some(table.as_union_value()),
            },
        );
        // Finishing adds the root offset, identifier and size prefix: 12 bytes, after which
        // the front is 8-aligned. Pad in front of the root table (bytes never read) so that the
        // whole segment is a multiple of the block, if that stays within the maximum.
        let used = fbb.unfinished_data().len() + self.region;
        let pad = (block - (used + 12) % block) % block;
        if used + 12 + pad <= self.max {
            for _ in 0..pad {
                fbb.push(0u8);
            }
        }
        fbb.finish_size_prefixed(root, Some(fbs::SEGMENT_IDENTIFIER));
        let (mut buf, head) = fbb.collapse();
        buf.drain(..head);
        let front_len = buf.len();
        // Element i of the batches vector is at `e` in the front; its table is `tables[i]`
        // from the end of the segment, which is `front_len + region` long.
        let total = front_len + self.region;
        let first = front_len - batches_at + 4;
        for (i, &d) in self.tables.iter().enumerate() {
            let e = first + 4 * i;
            let off = u32::try_from(total - d - e).map_err(|_| internal(self.max, "offset"))?;
            buf[e..e + 4].copy_from_slice(&off.to_le_bytes());
        }
        // The size prefix covers the chunks too.
        let size = u32::try_from(total - 4).map_err(|_| internal(self.max, "size"))?;
        buf[..4].copy_from_slice(&size.to_le_bytes());
        if total > self.max {
            return Err(internal(
                self.max,
                &format!("sealed segment of {total} bytes exceeds the maximum"),
            ));
        }
        Ok(buf)
    }

    /// The metadata checksum of the segment (format version 4, see the module docs of
    /// [`crate::segment`]).
    fn meta_checksum(&self, uuid: uuid::Uuid) -> u32 {
        let mut h = MetaHasher::new();
        h.head(
            FORMAT_VERSION,
            uuid.as_bytes(),
            self.events,
            self.intervals.iter().map(|r| (r.start, r.end)),
        );
        h.schema_count(self.schemas.len());
        for s in &self.schemas {
            let types: Vec<String> = s.fields.iter().map(|f| f.ty.to_string()).collect();
            h.schema(
                &s.name,
                s.fields.iter().zip(&types).map(|(f, t)| (&*f.name, &**t)),
            );
        }
        h.batch_count(self.tables.len());
        h.append(&self.batch_meta);
        h.checkpoints(self.checkpoints.as_deref());
        h.finish()
    }

    /// The index file of the segment being sealed (`index.rs`), `file_len` bytes long. Written
    /// after the segment: a failure then is an error like that of any write (the disk is full
    /// or failing), and leaves what a crash between the two does, a segment without its index,
    /// which readers verify instead.
    fn index_bytes(&self, uuid: uuid::Uuid, file_len: usize) -> Vec<u8> {
        let header = super::index::Header {
            file_len,
            version: FORMAT_VERSION,
            uuid,
            events: self.events,
            intervals: &self.intervals,
            schemas: &self.schemas,
        };
        super::index::encode_records(&header, &self.index)
    }

    /// What the segment holds, for the catalog.
    fn sealed(&self, uuid: uuid::Uuid, bytes: usize) -> SealedSegment {
        SealedSegment {
            uuid,
            bytes: bytes as u64,
            index_bytes: 0,
            events: self.events,
            batches: self.tables.len() as u64,
            intervals: self.intervals.clone(),
            schemas: self.schema_events.clone(),
            ts: self.ts,
        }
    }

    /// Finishes the segment in memory and returns its description and bytes. Call
    /// [`SegmentBuilder::clear`] afterwards to start the next segment. (In file mode the
    /// segment is read back from its file; use [`SegmentBuilder::write_to`] there.)
    pub fn finish(&mut self, uuid: uuid::Uuid) -> Result<(SealedSegment, &[u8])> {
        if let Some(Target::File(_)) = &self.target {
            return Err(internal(self.max, "finish() on a file-backed builder"));
        }
        if self.target.is_none() {
            self.target = Some(Target::Memory(vec![0; self.max]));
        }
        let front = self.build_front(uuid, 8)?;
        let sealed = self.sealed(uuid, front.len() + self.region);
        let region = self.region;
        let Some(Target::Memory(buf)) = &mut self.target else {
            return Err(internal(self.max, "no segment buffer"));
        };
        let head = buf.len() - region - front.len();
        buf[head..head + front.len()].copy_from_slice(&front);
        Ok((sealed, &buf[head..]))
    }

    /// Empties the builder for the next segment (keeps its memory buffer; in file mode,
    /// removes an unsealed segment's temporary file).
    pub fn clear(&mut self) {
        match self.target.take() {
            Some(Target::File(f)) => {
                let _ = std::fs::remove_file(&f.path);
            }
            // Every byte the next segment uses is written again, so no zeroing is needed.
            Some(Target::Memory(buf)) => self.target = Some(Target::Memory(buf)),
            None => {}
        }
        self.region = 0;
        self.tables.clear();
        self.index.clear();
        self.schemas.clear();
        self.intervals.clear();
        self.events = 0;
        self.schema_events.clear();
        self.ts = None;
        self.batch_meta = MetaHasher::new();
        self.reserved = 0;
        self.checkpoint_reserve = 0;
    }

    /// Finishes the segment, writes it atomically to `dir/<uuid>.seg` (fsynced when `sync`)
    /// and clears the builder. Returns what the segment holds.
    ///
    /// In file mode, a failure leaves the active segment's temporary file `.<uuid>.seg.tmp` in
    /// place (its rows are intact: sealing writes only the unused front, and collapsing or
    /// copying keeps the end), because write-ahead log records point into it; the builder is
    /// cleared all the same and the next segment gets a new file.
    pub fn write_to(&mut self, dir: &Path, sync: bool) -> Result<SealedSegment> {
        if self.dir.is_none() {
            let uuid = uuid::Uuid::new_v4();
            let (mut sealed, bytes) = self.finish(uuid)?;
            let path = fs::write_atomic(dir, &super::file_name(&uuid), bytes, sync)?;
            let index = self.index_bytes(uuid, sealed.bytes as usize);
            self.clear();
            sealed.index_bytes = super::index::write_index_bytes(&path, &index, sync)?.1;
            return Ok(sealed);
        }
        self.ensure_target()?;
        let Some(Target::File(mut active)) = self.target.take() else {
            return Err(internal(self.max, "no segment file to seal"));
        };
        // On failure the temporary file stays: the write-ahead log's records point at the rows
        // in it (they are acknowledged), and the next writer replays them from it. Deleting it
        // here (as this once did, e.g. when the disk filled up while sealing) lost them.
        let sealed = self.seal_file(&mut active, dir, sync);
        let index = sealed
            .as_ref()
            .ok()
            .map(|s| self.index_bytes(active.uuid, s.bytes as usize));
        self.clear();
        let mut sealed = sealed?;
        if let Some(index) = index {
            let path = dir.join(super::file_name(&active.uuid));
            sealed.index_bytes = super::index::write_index_bytes(&path, &index, sync)?.1;
        }
        Ok(sealed)
    }

    /// [`SegmentBuilder::write_to`] in file mode: put the front before the chunks, cut the
    /// unused start off the file (or copy the segment out where that is not supported), rename
    /// into place.
    fn seal_file(&self, active: &mut ActiveFile, dir: &Path, sync: bool) -> Result<SealedSegment> {
        // Small segments are copied (cheap), so that they carry no block padding.
        let block = if self.region >= COLLAPSE_MIN {
            active.block
        } else {
            8
        };
        let front = self.build_front(active.uuid, block)?;
        let len = file_len(self.max);
        let total = front.len() + self.region;
        let head = len - total;
        fs::write_all_at(&active.file, &front, head as u64)
            .map_err(|e| SegmentError::io("write", &active.path, e))?;
        active
            .writeback
            .finish()
            .map_err(|e| SegmentError::io("write back", &active.path, e))?;
        let name = super::file_name(&active.uuid);
        if head == 0
            || (head.is_multiple_of(active.block) && fs::collapse_front(&active.file, head))
        {
            fs::commit_file(&active.file, &active.path, dir, &name, sync)?;
        } else {
            let range = head as u64..len as u64;
            fs::copy_range_atomic(&active.file, &active.path, range, dir, &name, sync)?;
            let _ = std::fs::remove_file(&active.path);
        }
        Ok(self.sealed(active.uuid, total))
    }
}

/// Segments with fewer bytes of batches than this are copied out of their temporary file at
/// seal instead of being padded to a block and collapsed.
const COLLAPSE_MIN: usize = 1 << 20;

/// Length of a segment's temporary file: the maximum rounded up to 64 KiB (a multiple of any
/// block size [`fs::block_size`] returns; at most 2 GiB, as the maximum is 64 KiB below that).
fn file_len(max: usize) -> usize {
    max.div_ceil(1 << 16) << 16
}

/// An accounting or state error that should not happen.
fn internal(max: usize, what: &str) -> SegmentError {
    SegmentError::InvalidMaxSegmentSize {
        size: max as u64,
        reason: format!("internal: {what}"),
    }
}

fn create_schema(
    fbb: &mut FlatBufferBuilder<'static>,
    schema: &SchemaRef,
) -> WIPOffset<fbs::Schema<'static>> {
    let fields: Vec<_> = schema
        .fields
        .iter()
        .map(|f| {
            let name = fbb.create_string(&f.name);
            let ty = fbb.create_string(&f.ty.to_string());
            fbs::Field::create(
                fbb,
                &fbs::FieldArgs {
                    name: Some(name),
                    type_: Some(ty),
                },
            )
        })
        .collect();
    let fields = fbb.create_vector(&fields);
    let name = fbb.create_string(&schema.name);
    fbs::Schema::create(
        fbb,
        &fbs::SchemaArgs {
            name: Some(name),
            fields: Some(fields),
        },
    )
}

/// Length of a value's `Display` form, without allocating.
fn display_len(v: &impl std::fmt::Display) -> usize {
    struct Count(usize);
    impl std::fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = std::fmt::write(&mut c, format_args!("{v}"));
    c.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::BatchBuilder;
    use crate::types::{Field, Schema, Type};

    /// A schema of a time and a string.
    fn ts_and_string() -> SchemaRef {
        Schema::new(
            "zeek.t",
            vec![Field::new("ts", Type::Time), Field::new("s", Type::String)],
        )
        .into_shared()
    }

    #[test]
    fn accounting_is_an_upper_bound() {
        let schema = ts_and_string();
        let mut b = SegmentBuilder::new(1 << 20).unwrap();
        let mut id = 0;
        for n in 1..50usize {
            let mut bb = BatchBuilder::new(schema.clone());
            for i in 0..n {
                let mut e = bb.begin_row();
                e.int(i as i64);
                e.bytes(&vec![b'x'; i % 7]);
                bb.finish_row(Some(i as i64));
            }
            let mut batch = bb.finish();
            batch.set_id(id);
            id += n as u64;
            let before = b.used();
            let cost = b.cost(batch.schema(), batch.byte_size(), batch.len());
            b.add(&batch).unwrap();
            let actual = b.used() - before;
            assert!(
                actual + BATCH_SEAL_COST <= cost,
                "batch {n}: actual {actual} + 20 > cost {cost}"
            );
            assert_eq!(
                b.reserved,
                n * BATCH_SEAL_COST + SegmentBuilder::schema_cost(&schema) + SCHEMA_SEAL_COST
            );
        }
        let used = b.used();
        let reserved = b.reserved;
        let (sealed, bytes) = b.finish(uuid::Uuid::nil()).unwrap();
        let seal = bytes.len() - used;
        let checkpoints = SegmentBuilder::checkpoint_cost(4);
        assert!(
            seal <= SEAL_OVERHEAD + reserved + checkpoints,
            "seal added {seal}"
        );
        assert_eq!(sealed.events, id);
    }

    fn batch_of(schema: &SchemaRef, id: u64, rows: usize, width: usize) -> Batch {
        let mut bb = BatchBuilder::new(schema.clone());
        for i in 0..rows {
            let mut e = bb.begin_row();
            e.int((id + i as u64) as i64);
            // Bytes that do not compress (so that large segments are large when stored).
            let mut x = (id + i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let text: Vec<u8> = (0..width)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    b'a' + (x % 26) as u8
                })
                .collect();
            e.bytes(&text);
            bb.finish_row(Some(i as i64));
        }
        let mut batch = bb.finish();
        batch.set_id(id);
        batch
    }

    /// Every row of every batch of the segment at `path`, in order.
    fn rows_of(path: &Path) -> Vec<Vec<u8>> {
        let seg = crate::segment::Segment::open(path).unwrap();
        let mut rows = Vec::new();
        for b in seg.batches() {
            let b = b.unwrap();
            rows.extend(b.rows().map(|r| r.to_vec()));
        }
        rows
    }

    /// Sealing in file mode at every fill level (small segments and full ones, where the
    /// block padding no longer fits, are copied out; large ones collapsed) gives a segment
    /// that verifies, holds exactly the rows added, matches the in-memory builder row for row,
    /// stays within the maximum and leaves no temporary file behind.
    #[test]
    fn file_mode_seals_at_every_fill_level() {
        let schema = ts_and_string();
        let dir = tempfile::tempdir().unwrap();
        let small = [1usize, 13, 200, 700];
        let large = [20_000, 70_000];
        for (max, widths, rounds) in [
            (4096u64, &small[..], 60),
            (3 * 4096 + 1000, &small[..], 60),
            (1 << 16, &small[..], 60),
            (3 * COLLAPSE_MIN as u64 + 1000, &large[..], 20),
        ] {
            let mut file = SegmentBuilder::in_dir(max, dir.path()).unwrap();
            let mut heap = SegmentBuilder::new(max).unwrap();
            let heap_dir = dir.path().join("heap");
            std::fs::create_dir_all(&heap_dir).unwrap();
            let mut id = 0;
            let (mut aligned, mut unaligned) = (0, 0);
            // Round k adds up to k batches, so the segments range from one batch to full.
            for (round, &width) in (1..rounds).flat_map(|k| widths.iter().map(move |w| (k, w))) {
                for _ in 0..round {
                    let batch = batch_of(&schema, id, 1 + (id % 5) as usize, width);
                    if !file.fits(&batch) {
                        break;
                    }
                    file.add(&batch).unwrap();
                    heap.add(&batch).unwrap();
                    id += batch.len() as u64;
                }
                let sealed = file.write_to(dir.path(), false).unwrap();
                let heap_sealed = heap.write_to(&heap_dir, false).unwrap();
                let path = dir.path().join(crate::segment::file_name(&sealed.uuid));
                let len = std::fs::metadata(&path).unwrap().len();
                assert_eq!(len, sealed.bytes, "max {max} width {width}");
                assert!(len <= max, "{len} > {max}");
                let heap_path = heap_dir.join(crate::segment::file_name(&heap_sealed.uuid));
                assert_eq!(rows_of(&path), rows_of(&heap_path));
                assert_eq!(sealed.events, heap_sealed.events);
                assert_eq!(sealed.intervals, heap_sealed.intervals);
                let leftovers: Vec<_> = std::fs::read_dir(dir.path())
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".tmp"))
                    .collect();
                assert!(leftovers.is_empty(), "{leftovers:?}");
                // Collapsed segments are padded to whole blocks; copied ones need not be.
                if len.is_multiple_of(4096) {
                    aligned += 1;
                } else {
                    unaligned += 1;
                }
            }
            assert!(unaligned > 0, "max {max}: never copied");
            if max > COLLAPSE_MIN as u64 {
                assert!(aligned > 0, "max {max}: never collapsed");
            }
        }
    }

    /// On a file system without FALLOC_FL_COLLAPSE_RANGE (tmpfs), segments are copied out.
    #[test]
    fn seals_by_copying_where_collapse_is_unsupported() {
        let shm = Path::new("/dev/shm");
        let Ok(dir) = tempfile::tempdir_in(shm) else {
            eprintln!("note: no writable /dev/shm; skipping");
            return;
        };
        let schema = Schema::new("zeek.t", vec![Field::new("s", Type::String)]).into_shared();
        let mut b = SegmentBuilder::in_dir(1 << 20, dir.path()).unwrap();
        let mut expect = Vec::new();
        let mut id = 0;
        for n in 1..40 {
            let batch = batch_of(&schema, id, n, 100);
            expect.extend(batch.rows().map(|r| r.to_vec()));
            b.add(&batch).unwrap();
            id += n as u64;
        }
        let sealed = b.write_to(dir.path(), true).unwrap();
        let path = dir.path().join(crate::segment::file_name(&sealed.uuid));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), sealed.bytes);
        assert_eq!(rows_of(&path), expect);
        // The segment and its index, nothing else.
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let idx = crate::segment::index_path(&path);
        let want = [&idx, &path].map(|p| p.file_name().unwrap().to_string_lossy().into_owned());
        assert_eq!(names, want);
    }
}
