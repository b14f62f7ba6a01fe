//! Building segments: one pre-sized FlatBuffers builder per active segment, filled batch by
//! batch, with exact worst-case size accounting so that no segment exceeds its maximum.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

use flatbuffers::{FlatBufferBuilder, WIPOffset};

use super::generated as fbs;
use crate::batch::Batch;
use crate::store::{Result, StoreError};
use crate::types::SchemaRef;

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

/// The active segment: a FlatBuffers builder allocated once at the maximum segment size.
///
/// Each batch's rows are copied into the builder as it is added ([`SegmentBuilder::add`]); only
/// small offsets and metadata are kept beside it, so memory stays at about one segment.
/// [`SegmentBuilder::fits`] tells whether a batch can be added without exceeding the maximum.
pub struct SegmentBuilder {
    fbb: FlatBufferBuilder<'static>,
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
    /// [`check_max_segment_size`]).
    pub fn new(max_segment_size: u64) -> Result<SegmentBuilder> {
        let max = check_max_segment_size(max_segment_size)?;
        Ok(SegmentBuilder {
            // Zeroed allocation: pages are only touched as the builder fills them (back to
            // front), so a small segment does not cost `max` bytes of memory.
            fbb: FlatBufferBuilder::with_capacity(max),
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
                .map(|f| 64 + f.name.len() + f.ty.to_string().len())
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
        let root = fbs::Segment::create(
            &mut self.fbb,
            &fbs::SegmentArgs {
                segment_type: fbs::SegmentVersion::SegmentV1,
                segment: Some(v1.as_union_value()),
            },
        );
        self.fbb
            .finish_size_prefixed(root, Some(fbs::SEGMENT_IDENTIFIER));
        let bytes = self.fbb.finished_data();
        if bytes.len() > self.max {
            return Err(StoreError::InvalidMaxSegmentSize {
                size: self.max as u64,
                reason: format!(
                    "internal: sealed segment of {} bytes exceeds the maximum",
                    bytes.len()
                ),
            });
        }
        let sealed = SealedSegment {
            uuid,
            bytes: bytes.len() as u64,
            events: self.events,
            batches: self.batches.len() as u64,
            intervals: self.intervals.clone(),
            schemas: self.schema_events.clone(),
            ts: self.ts,
        };
        Ok((sealed, bytes))
    }

    /// Empties the builder for the next segment (keeps its allocation).
    pub fn clear(&mut self) {
        self.fbb.reset();
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
        let uuid = uuid::Uuid::new_v4();
        let (sealed, bytes) = self.finish(uuid)?;
        write_atomic(dir, &super::file_name(&uuid), bytes, sync)?;
        self.clear();
        Ok(sealed)
    }
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
}
