//! Building segments: one pre-sized FlatBuffers builder per active segment, filled batch by
//! batch, with exact worst-case size accounting so that no segment exceeds its maximum.
//!
//! # Writing while building
//!
//! A FlatBuffers builder writes back to front: what it has written is final relative to the
//! *end* of its buffer. A store's builder ([`SegmentBuilder::in_dir`]) therefore mirrors its
//! buffer into a sparse temporary file `.<uuid>.seg.tmp` of the same length (the maximum
//! segment size rounded up to the file system block), at the same offsets: every 8 MiB of
//! finished batches are written out with `pwrite` as the import runs, and a background
//! `fdatasync` every 32 MiB lets the disk take them early. Sealing a large segment then no
//! longer means writing and syncing all of it at the end. At seal the builder pads the front of
//! the buffer to a block boundary (inside the FlatBuffer, between the root offset and the root
//! table, where bytes are never read), writes the rest, and cuts the unused blocks off the front
//! of the file with `fallocate(FALLOC_FL_COLLAPSE_RANGE)` (ext4, XFS), which moves extents, not
//! bytes. Where that is not supported, the segment is copied to a new file instead. Either way
//! the result is the same standard segment file, fsynced and renamed into place.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

use flatbuffers::{FlatBufferBuilder, WIPOffset};

use super::generated as fbs;
use crate::batch::Batch;
use crate::store::{Result, StoreError};
use crate::types::SchemaRef;
use crate::wal::Writeback;

/// The default maximum segment size: 1 GiB (as VAST).
pub const DEFAULT_MAX_SEGMENT_SIZE: u64 = 1 << 30;

/// The largest accepted maximum segment size: 2 GiB minus 64 KiB.
///
/// A FlatBuffer cannot exceed 2 GiB (2^31 bytes: offsets are signed 32-bit), and the builder
/// aborts the process when it would grow past that; VAST crashed exactly so with
/// `--max-segment-size=2048`. weir sizes its builder once to the maximum segment size and never
/// lets it grow, and keeps 64 KiB of headroom below the hard limit.
pub const MAX_SEGMENT_SIZE_LIMIT: u64 = (1 << 31) - (1 << 16);

/// The smallest accepted maximum segment size: 4 KiB.
pub const MIN_SEGMENT_SIZE: u64 = 4096;

/// Worst case of what sealing adds besides the per-batch and per-schema entries: the root
/// tables, their vtables, vector length prefixes, alignment, file identifier and root offset.
const SEAL_OVERHEAD: usize = 256;

/// Worst case per batch besides its data and offsets: two vector length prefixes and their
/// alignment (2 × 7), the NUL after the data (1), the batch table with its vtable (128), and at
/// seal its entry in the batches vector (4) and possibly its own ID interval (16).
const BATCH_OVERHEAD: usize = 14 + 1 + 128 + BATCH_SEAL_COST;

/// What sealing adds per batch: its entry in the batches vector (4) and possibly its own ID
/// interval (16).
const BATCH_SEAL_COST: usize = 4 + 16;

/// What sealing adds per schema: its entry in the schemas vector.
const SCHEMA_SEAL_COST: usize = 4;

/// Checks a maximum segment size and returns it as `usize`.
///
/// Sizes at or above [`MAX_SEGMENT_SIZE_LIMIT`] (so 2 GiB and more) are refused with an
/// explanation of the FlatBuffers 2 GiB limit; sizes below [`MIN_SEGMENT_SIZE`] too.
pub fn check_max_segment_size(size: u64) -> Result<usize> {
    if size > MAX_SEGMENT_SIZE_LIMIT {
        return Err(StoreError::InvalidMaxSegmentSize {
            size,
            reason: format!(
                "a segment is one FlatBuffer, and a FlatBuffer cannot reach 2 GiB \
                 (its offsets are signed 32-bit; VAST crashed with 2 GiB segments); \
                 use at most 2 GiB minus 64 KiB ({MAX_SEGMENT_SIZE_LIMIT} bytes), e.g. 1GiB"
            ),
        });
    }
    if size < MIN_SEGMENT_SIZE {
        return Err(StoreError::InvalidMaxSegmentSize {
            size,
            reason: format!("use at least {MIN_SEGMENT_SIZE} bytes"),
        });
    }
    usize::try_from(size).map_err(|_| StoreError::InvalidMaxSegmentSize {
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

/// Finished bytes are written to the segment's file in runs of at least this many.
const WRITE_CHUNK: usize = 8 << 20;

/// The temporary file the active segment is mirrored to (see the module docs).
struct ActiveFile {
    uuid: uuid::Uuid,
    path: PathBuf,
    file: File,
    /// File system block size: the unit of `FALLOC_FL_COLLAPSE_RANGE`.
    block: usize,
    /// Buffer (and file) offset from which on the builder's bytes are in the file.
    written: usize,
    /// Background write-back of the bytes written so far.
    writeback: Writeback,
}

/// The active segment: a FlatBuffers builder allocated once at the maximum segment size.
///
/// Each batch's rows are copied into the builder as it is added ([`SegmentBuilder::add`]); only
/// small offsets and metadata are kept beside it, so memory stays at about one segment.
/// [`SegmentBuilder::fits`] tells whether a batch can be added without exceeding the maximum.
/// A builder made with [`SegmentBuilder::in_dir`] builds in the segment's file itself.
pub struct SegmentBuilder {
    fbb: FlatBufferBuilder<'static>,
    /// Length of the builder's buffer (and of the active file).
    buf_len: usize,
    /// Where segments are written as they are built ([`SegmentBuilder::in_dir`]).
    dir: Option<PathBuf>,
    active: Option<ActiveFile>,
    /// In file mode, the buffer of the last sealed segment and its head, until reused.
    spare: Option<(Vec<u8>, usize)>,
    max: usize,
    schemas: Vec<SchemaRef>,
    schema_offsets: Vec<WIPOffset<fbs::Schema<'static>>>,
    batches: Vec<WIPOffset<fbs::Batch<'static>>>,
    intervals: Vec<Range<u64>>,
    events: u64,
    schema_events: BTreeMap<String, u64>,
    ts: Option<(i64, i64)>,
    scratch: Vec<u32>,
    /// What sealing will add for the batches and schemas added so far (vector entries and
    /// intervals), not yet in the builder.
    reserved: usize,
}

impl std::fmt::Debug for SegmentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentBuilder")
            .field("max", &self.max)
            .field("used", &self.used())
            .field("batches", &self.batches.len())
            .field("events", &self.events)
            .finish()
    }
}

impl SegmentBuilder {
    /// A builder for segments of at most `max_segment_size` bytes (checked with
    /// [`check_max_segment_size`]), built in memory.
    pub fn new(max_segment_size: u64) -> Result<SegmentBuilder> {
        let max = check_max_segment_size(max_segment_size)?;
        Self::with_dir(max, None)
    }

    /// A builder for segments of at most `max_segment_size` bytes that writes each segment to
    /// its own temporary file in `dir` while it is built (created at the first batch) and seals
    /// it there ([`SegmentBuilder::write_to`] must be given the same `dir`). See the module docs.
    pub fn in_dir(max_segment_size: u64, dir: impl Into<PathBuf>) -> Result<SegmentBuilder> {
        let max = check_max_segment_size(max_segment_size)?;
        Self::with_dir(max, Some(dir.into()))
    }

    fn with_dir(max: usize, dir: Option<PathBuf>) -> Result<SegmentBuilder> {
        // The file, if any, has the buffer's length: the maximum rounded up to a block (at most
        // 64 KiB, so still below the 2 GiB limit). Zeroed allocation: pages are only touched as
        // the builder fills them (back to front), so a small segment does not cost `max` bytes.
        let len = if dir.is_some() {
            max.div_ceil(1 << 16) << 16
        } else {
            max
        };
        Ok(SegmentBuilder {
            fbb: FlatBufferBuilder::from_vec(vec![0; len]),
            buf_len: len,
            dir,
            active: None,
            spare: None,
            max,
            schemas: Vec::new(),
            schema_offsets: Vec::new(),
            batches: Vec::new(),
            intervals: Vec::new(),
            events: 0,
            schema_events: BTreeMap::new(),
            ts: None,
            scratch: Vec::new(),
            reserved: 0,
        })
    }

    /// The maximum segment size in bytes.
    pub fn max_size(&self) -> usize {
        self.max
    }

    /// Bytes written into the builder so far.
    pub fn used(&self) -> usize {
        self.fbb.unfinished_data().len()
    }

    /// Number of events added.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Number of batches added.
    pub fn batches(&self) -> usize {
        self.batches.len()
    }

    /// Whether no batch was added since the last seal.
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
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
        let schema = match self.has_schema(schema) {
            Some(_) => 0,
            None => Self::schema_cost(schema),
        };
        data_len + 4 * rows + BATCH_OVERHEAD + schema
    }

    /// Bytes still guaranteed to be free after reserving what sealing needs.
    fn room(&self) -> usize {
        let reserved = self.used() + SEAL_OVERHEAD + self.reserved;
        self.max.saturating_sub(reserved)
    }

    /// Whether one event of `row_len` bytes of `schema` fits in an empty segment.
    pub fn row_fits_empty_segment(&self, schema: &SchemaRef, row_len: usize) -> bool {
        Self::schema_cost(schema) + row_len + 4 + BATCH_OVERHEAD + SEAL_OVERHEAD <= self.max
    }

    /// Whether the whole batch can be added without the sealed segment exceeding the maximum.
    pub fn fits(&self, batch: &Batch) -> bool {
        self.cost(batch.schema(), batch.byte_size(), batch.len()) <= self.room()
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

    /// [`SegmentBuilder::add`] with the CRC-32 of `batch.data()` already computed (the store
    /// computes it once for the WAL record and the segment).
    pub fn add_with_crc(&mut self, batch: &Batch, data_crc: u32) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        if !self.fits(batch) {
            return Err(StoreError::InvalidMaxSegmentSize {
                size: self.max as u64,
                reason: format!(
                    "internal: a batch of {} bytes was added beyond the segment's room of {} bytes",
                    batch.byte_size(),
                    self.room()
                ),
            });
        }
        self.ensure_file()?;
        let schema_index = match self.has_schema(batch.schema()) {
            Some(i) => i,
            None => {
                let off = self.create_schema(batch.schema());
                self.schemas.push(batch.schema().clone());
                self.schema_offsets.push(off);
                self.reserved += SCHEMA_SEAL_COST;
                self.schemas.len() - 1
            }
        };
        self.scratch.clear();
        self.scratch
            .extend(batch.offsets().iter().map(|&o| o as u32));
        let checksum = checksum_with_data_crc(data_crc, batch.byte_size(), &self.scratch);
        // A `[ubyte]` vector has the layout of a byte string (u32 length, bytes); the byte
        // string path copies with one memcpy (plus a NUL that readers ignore), where
        // `create_vector` copies byte by byte.
        let data = self.fbb.create_byte_string(batch.data());
        let data: WIPOffset<flatbuffers::Vector<'static, u8>> = WIPOffset::new(data.value());
        let offsets = self.fbb.create_vector(&self.scratch);
        let ts = batch
            .ts_range()
            .map(|(min, max)| fbs::TimeRange::new(min, max));
        let b = fbs::Batch::create(
            &mut self.fbb,
            &fbs::BatchArgs {
                schema: schema_index as u32,
                first_id: batch.id(),
                rows: batch.len() as u32,
                ts: ts.as_ref(),
                data: Some(data),
                offsets: Some(offsets),
                checksum,
            },
        );
        self.batches.push(b);
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
        self.write_out(WRITE_CHUNK)
    }

    /// In file mode, writes the builder's finished bytes not yet in the file, if there are at
    /// least `min` of them.
    fn write_out(&mut self, min: usize) -> Result<()> {
        let Some(active) = &mut self.active else {
            return Ok(());
        };
        // The builder's bytes are `data`, at buffer offset `head`; the same offsets in the file.
        let data = self.fbb.unfinished_data();
        let head = self.buf_len - data.len();
        let n = active.written - head;
        if n == 0 || n < min {
            return Ok(());
        }
        write_at(&active.file, &data[..n], head as u64)
            .map_err(|e| StoreError::io("write", &active.path, e))?;
        active.written = head;
        active.writeback.appended(n as u64, &active.file);
        Ok(())
    }

    /// In file mode, creates the active segment's temporary file, if not done yet.
    fn ensure_file(&mut self) -> Result<()> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        if self.active.is_some() {
            return Ok(());
        }
        if let Some((mut buf, head)) = self.spare.take() {
            // The builder relies on zeroed memory for its padding.
            buf[head..].fill(0);
            self.fbb = FlatBufferBuilder::from_vec(buf);
        }
        let uuid = uuid::Uuid::new_v4();
        let path = dir.join(format!(".{}.tmp", super::file_name(&uuid)));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| StoreError::io("create", &path, e))?;
        // Sparse: blocks are allocated only as bytes are written, back to front.
        file.set_len(self.buf_len as u64)
            .map_err(|e| StoreError::io("resize", &path, e))?;
        self.active = Some(ActiveFile {
            uuid,
            block: block_size(&file),
            path,
            file,
            written: self.buf_len,
            writeback: Writeback::default(),
        });
        Ok(())
    }

    fn create_schema(&mut self, schema: &SchemaRef) -> WIPOffset<fbs::Schema<'static>> {
        let fields: Vec<_> = schema
            .fields
            .iter()
            .map(|f| {
                let name = self.fbb.create_string(&f.name);
                let ty = self.fbb.create_string(&f.ty.to_string());
                fbs::Field::create(
                    &mut self.fbb,
                    &fbs::FieldArgs {
                        name: Some(name),
                        type_: Some(ty),
                    },
                )
            })
            .collect();
        let fields = self.fbb.create_vector(&fields);
        let name = self.fbb.create_string(&schema.name);
        fbs::Schema::create(
            &mut self.fbb,
            &fbs::SchemaArgs {
                name: Some(name),
                fields: Some(fields),
            },
        )
    }

    /// Finishes the segment and returns its description and bytes. Call
    /// [`SegmentBuilder::clear`] after writing the bytes to start the next segment.
    pub fn finish(&mut self, uuid: uuid::Uuid) -> Result<(SealedSegment, &[u8])> {
        self.ensure_file()?;
        let root = self.build_root(uuid);
        self.fbb
            .finish_size_prefixed(root, Some(fbs::SEGMENT_IDENTIFIER));
        let sealed = self.sealed(uuid)?;
        Ok((sealed, self.fbb.finished_data()))
    }

    /// Adds the root tables (everything but the batches themselves) and returns the root.
    fn build_root(&mut self, uuid: uuid::Uuid) -> WIPOffset<fbs::Segment<'static>> {
        let intervals: Vec<fbs::Interval> = self
            .intervals
            .iter()
            .map(|r| fbs::Interval::new(r.start, r.end))
            .collect();
        let intervals = self.fbb.create_vector(&intervals);
        let schemas = self.fbb.create_vector(&self.schema_offsets);
        let batches = self.fbb.create_vector(&self.batches);
        let v1 = fbs::SegmentV1::create(
            &mut self.fbb,
            &fbs::SegmentV1Args {
                uuid: Some(&fbs::Uuid::new(uuid.as_bytes())),
                intervals: Some(intervals),
                events: self.events,
                schemas: Some(schemas),
                batches: Some(batches),
            },
        );
        fbs::Segment::create(
            &mut self.fbb,
            &fbs::SegmentArgs {
                segment_type: fbs::SegmentVersion::SegmentV1,
                segment: Some(v1.as_union_value()),
            },
        )
    }

    /// The description of the finished segment, after checking its size.
    fn sealed(&self, uuid: uuid::Uuid) -> Result<SealedSegment> {
        let len = self.fbb.finished_data().len();
        if len > self.max {
            return Err(StoreError::InvalidMaxSegmentSize {
                size: self.max as u64,
                reason: format!("internal: sealed segment of {len} bytes exceeds the maximum"),
            });
        }
        Ok(SealedSegment {
            uuid,
            bytes: len as u64,
            events: self.events,
            batches: self.batches.len() as u64,
            intervals: self.intervals.clone(),
            schemas: self.schema_events.clone(),
            ts: self.ts,
        })
    }

    /// Empties the builder for the next segment (keeps its allocation; in file mode, removes
    /// an unsealed segment's temporary file).
    pub fn clear(&mut self) {
        if let Some(active) = self.active.take() {
            let _ = std::fs::remove_file(&active.path);
        }
        if self.dir.is_some() {
            // Zeroed lazily, when (and if) the next segment starts.
            if self.spare.is_none() {
                let fbb = std::mem::take(&mut self.fbb);
                self.spare = Some(fbb.collapse());
            }
        } else {
            self.fbb.reset();
        }
        self.schemas.clear();
        self.schema_offsets.clear();
        self.batches.clear();
        self.intervals.clear();
        self.events = 0;
        self.schema_events.clear();
        self.ts = None;
        self.reserved = 0;
    }

    /// Finishes the segment, writes it atomically to `dir/<uuid>.seg` (fsynced when `sync`)
    /// and clears the builder. Returns what the segment holds.
    pub fn write_to(&mut self, dir: &Path, sync: bool) -> Result<SealedSegment> {
        if self.dir.is_some() {
            return self.seal_file(dir, sync);
        }
        let uuid = uuid::Uuid::new_v4();
        let (sealed, bytes) = self.finish(uuid)?;
        write_atomic(dir, &super::file_name(&uuid), bytes, sync)?;
        self.clear();
        Ok(sealed)
    }

    /// [`SegmentBuilder::write_to`] in file mode: finish in place, cut the unused front off the
    /// file (or copy the segment out where that is not supported), rename into place.
    fn seal_file(&mut self, dir: &Path, sync: bool) -> Result<SealedSegment> {
        self.ensure_file()?;
        let Some(mut active) = self.active.take() else {
            return Err(StoreError::InvalidMaxSegmentSize {
                size: self.max as u64,
                reason: "internal: no segment file to seal".into(),
            });
        };
        let root = self.build_root(active.uuid);
        // Pad so that the finished buffer (root offset, identifier and size prefix: 12 bytes
        // more, already 8-aligned then) starts on a block boundary, if that stays within the
        // maximum. The padding lies between the root offset and the root table: never read.
        let block = active.block;
        let pad = (block - (self.used() + 12) % block) % block;
        if self.used() + 12 + pad <= self.max {
            for _ in 0..pad {
                self.fbb.push(0u8);
            }
        }
        self.fbb
            .finish_size_prefixed(root, Some(fbs::SEGMENT_IDENTIFIER));
        let sealed = self.sealed(active.uuid);
        let head = self.buf_len - self.fbb.finished_data().len();
        let name = super::file_name(&active.uuid);
        let result = sealed.and_then(|sealed| {
            let rest = &self.fbb.finished_data()[..active.written - head];
            write_at(&active.file, rest, head as u64)
                .map_err(|e| StoreError::io("write", &active.path, e))?;
            active
                .writeback
                .finish()
                .map_err(|e| StoreError::io("write back", &active.path, e))?;
            if head == 0 || (head.is_multiple_of(block) && collapse_front(&active.file, head)) {
                if sync {
                    active
                        .file
                        .sync_all()
                        .map_err(|e| StoreError::io("fsync", &active.path, e))?;
                }
                let path = dir.join(&name);
                std::fs::rename(&active.path, &path).map_err(|e| {
                    StoreError::io(format!("rename to {}", path.display()), &active.path, e)
                })?;
                if sync {
                    sync_dir(dir)?;
                }
            } else {
                copy_out(
                    &active.file,
                    &active.path,
                    head,
                    self.buf_len,
                    dir,
                    &name,
                    sync,
                )?;
                let _ = std::fs::remove_file(&active.path);
            }
            Ok(sealed)
        });
        if result.is_err() {
            let _ = std::fs::remove_file(&active.path);
        }
        self.clear();
        result
    }
}

/// Writes all of `bytes` at `offset`.
fn write_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.write_all_at(bytes, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Seek, SeekFrom};
        let mut f = file;
        f.seek(SeekFrom::Start(offset))?;
        f.write_all(bytes)
    }
}

/// The block size of the file system holding `file` (4096 when unknown or implausible).
fn block_size(file: &File) -> usize {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Ok(m) = file.metadata() {
            let b = m.blksize() as usize;
            if b.is_power_of_two() && (512..=1 << 16).contains(&b) {
                return b;
            }
        }
    }
    let _ = file;
    4096
}

/// Removes the first `len` bytes of `file` (a multiple of its block size) by moving extents.
/// Returns false where the file system does not support that.
fn collapse_front(file: &File, len: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{fallocate, FallocateFlags};
        fallocate(file, FallocateFlags::COLLAPSE_RANGE, 0, len as u64).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, len);
        false
    }
}

/// Copies bytes `from..to` of the temporary `file` to a new segment `dir/name`, atomically.
fn copy_out(
    file: &File,
    path: &Path,
    from: usize,
    to: usize,
    dir: &Path,
    name: &str,
    sync: bool,
) -> Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let tmp = dir.join(format!(".{name}.copy.tmp"));
    let mut out = File::create(&tmp).map_err(|e| StoreError::io("create", &tmp, e))?;
    let mut src = file;
    src.seek(SeekFrom::Start(from as u64))
        .map_err(|e| StoreError::io("seek", path, e))?;
    let copied = std::io::copy(&mut src.take((to - from) as u64), &mut out)
        .map_err(|e| StoreError::io("copy to", &tmp, e))?;
    if copied != (to - from) as u64 {
        return Err(StoreError::io(
            "copy",
            path,
            std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "segment file is short"),
        ));
    }
    if sync {
        out.sync_all()
            .map_err(|e| StoreError::io("fsync", &tmp, e))?;
    }
    drop(out);
    let final_path = dir.join(name);
    std::fs::rename(&tmp, &final_path)
        .map_err(|e| StoreError::io(format!("rename to {}", final_path.display()), &tmp, e))?;
    if sync {
        sync_dir(dir)?;
    }
    Ok(())
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

/// CRC-32 of a batch: over `data`, then the offsets as little-endian u32.
pub(crate) fn batch_checksum(data: &[u8], offsets: &[u32]) -> u32 {
    checksum_with_data_crc(crc32fast::hash(data), data.len(), offsets)
}

/// [`batch_checksum`] continuing from the CRC of the data.
fn checksum_with_data_crc(data_crc: u32, data_len: usize, offsets: &[u32]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial_len(data_crc, data_len as u64);
    let mut buf = [0u8; 4096];
    for chunk in offsets.chunks(1024) {
        for (o, out) in chunk.iter().zip(buf.chunks_exact_mut(4)) {
            out.copy_from_slice(&o.to_le_bytes());
        }
        h.update(&buf[..chunk.len() * 4]);
    }
    h.finalize()
}

/// Writes `bytes` to `dir/name` atomically: a temporary file `.name.tmp` is written, fsynced,
/// renamed over `name`, and the directory is fsynced (fsyncs only when `sync`).
pub(crate) fn write_atomic(dir: &Path, name: &str, bytes: &[u8], sync: bool) -> Result<PathBuf> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    let mut f = File::create(&tmp).map_err(|e| StoreError::io("create", &tmp, e))?;
    f.write_all(bytes)
        .map_err(|e| StoreError::io("write", &tmp, e))?;
    if sync {
        f.sync_all().map_err(|e| StoreError::io("fsync", &tmp, e))?;
    }
    drop(f);
    std::fs::rename(&tmp, &path)
        .map_err(|e| StoreError::io(format!("rename to {}", path.display()), &tmp, e))?;
    if sync {
        sync_dir(dir)?;
    }
    Ok(path)
}

/// Fsyncs a directory so that renames and creations in it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io("fsync directory", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::BatchBuilder;
    use crate::types::{Field, Schema, Type};

    #[test]
    fn accounting_is_an_upper_bound() {
        let schema = Schema::new(
            "zeek.t",
            vec![Field::new("ts", Type::Time), Field::new("s", Type::String)],
        )
        .into_shared();
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
            assert_eq!(b.reserved, n * BATCH_SEAL_COST + SCHEMA_SEAL_COST);
        }
        let used = b.used();
        let nb = b.batches();
        let (sealed, bytes) = b.finish(uuid::Uuid::nil()).unwrap();
        let seal = bytes.len() - used;
        assert!(seal <= SEAL_OVERHEAD + 20 * nb, "seal added {seal}");
        assert_eq!(sealed.events, id);
    }

    fn batch_of(schema: &SchemaRef, id: u64, rows: usize, width: usize) -> Batch {
        let mut bb = BatchBuilder::new(schema.clone());
        for i in 0..rows {
            let mut e = bb.begin_row();
            e.int((id + i as u64) as i64);
            e.bytes(&vec![b'a' + (i % 26) as u8; width]);
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

    /// Sealing in file mode at every fill level (small to full, where the block padding no
    /// longer fits and the segment is copied out instead of collapsed) gives a segment that
    /// verifies, holds exactly the rows added, matches the in-memory builder row for row, stays
    /// within the maximum and leaves no temporary file behind.
    #[test]
    fn file_mode_seals_at_every_fill_level() {
        let schema = Schema::new(
            "zeek.t",
            vec![Field::new("ts", Type::Time), Field::new("s", Type::String)],
        )
        .into_shared();
        let dir = tempfile::tempdir().unwrap();
        for max in [4096u64, 3 * 4096 + 1000, 1 << 16] {
            let mut file = SegmentBuilder::in_dir(max, dir.path()).unwrap();
            let mut heap = SegmentBuilder::new(max).unwrap();
            let heap_dir = dir.path().join("heap");
            std::fs::create_dir_all(&heap_dir).unwrap();
            let mut id = 0;
            let (mut aligned, mut unaligned) = (0, 0);
            // Round k adds up to k batches, so the segments range from one batch to full.
            for (round, width) in (1..60usize).flat_map(|k| [1usize, 13, 200, 700].map(|w| (k, w)))
            {
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
                if len % 4096 == 0 {
                    aligned += 1;
                } else {
                    unaligned += 1;
                }
            }
            assert!(aligned > 0, "max {max}: no block-padded segment");
            if max == 3 * 4096 + 1000 {
                assert!(unaligned > 0, "max {max}: padding never skipped near full");
            }
        }
    }

    #[test]
    fn collapse_front_moves_whole_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let block = block_size(&f);
        let mut bytes = vec![0u8; 3 * block];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i / 97) as u8;
        }
        write_at(&f, &bytes, 0).unwrap();
        if !collapse_front(&f, block) {
            eprintln!("note: this file system cannot collapse ranges; the copy path is used");
            return;
        }
        assert_eq!(std::fs::read(&path).unwrap(), &bytes[block..]);
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
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
