//! Segment index files: `<uuid>.idx` next to `<uuid>.seg`, a copy of what opening the segment
//! computes (its header, schemas and the metadata of every batch), so that a reader can open a
//! segment without running the FlatBuffers verifier over it.
//!
//! Verifying a segment touches every batch's table, sketch and vector headers, which lie
//! spread over the whole file (each batch is a chunk of its own, see the writer): on W1000's
//! 257 MiB segment that is about 3,000 page faults and their unmapping, 18 ms of a 25 ms time
//! range count, for metadata of 3 MB. With the index, opening reads one small file and maps
//! the segment without touching it; a batch's pages are faulted in only when it is read. It is
//! what VAST's partition synopses are to its partitions.
//!
//! # Format (version 1)
//!
//! All integers little-endian; a *string* is its byte length as u32 followed by its UTF-8
//! bytes; a *flag* is one byte, 0 (absent) or 1 (present, followed by the value).
//!
//! 1. the magic `WIDX`, the index format version as u32 (1), the segment file's length in
//!    bytes as u64, the segment's format version as u32, its 16 uuid bytes, its event count
//!    as u64;
//! 2. the number of ID intervals as u32, then each one's `begin` and `end` as u64;
//! 3. the number of schemas as u32, then per schema its name (string), its number of fields
//!    as u32 and per field its name and its type (strings);
//! 4. the number of batches as u32, then per batch: `schema` as u32, `first_id` as u64, `rows`
//!    as u32, a flag with the `ts` range (`min`, `max` as i64), where its stored bytes (`data`)
//!    and its row offsets are in the segment file (each as offset u64 and length u32), its
//!    `checksum` as u32, its codec as the segment's stored byte (u8, see `codec.rs`) and
//!    `raw_size` as u32; then a flag with its sketch: where the Bloom filter is in the file
//!    (offset u64, length u32), the number of probes (u8), the number of ranges as u32 and per
//!    range its `field` as u32, `lo` and `hi` as the segment stores them (u64) and a flag with
//!    its `present` count (u32); then a flag with the time histogram: `field` as u32, `width`
//!    and `first` as i64, the number of buckets as u32 and each count as u32;
//! 5. the CRC-32 (IEEE, `crc32fast`) of every byte before it, as u32.
//!
//! # Invariants
//!
//! - An index holds exactly what verifying its segment gives ([`Segment::open_verified`]).
//!   The writer encodes it at seal from what it laid into the segment (re-reading the segment
//!   would cost a read of the whole file, whose pages the seal's collapse drops from the page
//!   cache), with the one encoder that also encodes an opened segment's index, and writes it
//!   after the segment file is in place, atomically (temporary file, fsync, rename;
//!   `crate::fs`). The tests compare the two for every codec and layout, and `weir verify`
//!   compares each index with its segment.
//!   Segments are never modified, and uuids never reused, so an index stays true as long as
//!   its segment exists.
//! - An index is never needed: [`Segment::open`] uses it only when it exists, its checksum
//!   and every check below hold and it names the segment's exact file length; otherwise (an
//!   archive written before index files, an index lost in a crash between the segment's
//!   commit and its own, damage) the segment is opened with the verifier, as before.
//! - Every position an index gives is checked to lie inside the segment file before the
//!   segment is used, and each batch's stored bytes are still checked against their checksum on
//!   the batch's first access, so a wrong index can make a read fail, never read outside the
//!   map or return unchecked rows. `weir verify` compares each index with its segment.
//! - An open segment keeps its index mapped, and its batches' field ranges and time
//!   histograms are read from the records there when they are asked for (`sketch::Ranges`,
//!   `sketch::TimesRef`; a range record is read by `sketch::read_range_record`), checked here
//!   when it is opened: decoded, they were most of the memory a fresh process faulted in to
//!   open a segment.
//! - An index is also the second copy of its segment's metadata: `weir verify --repair`
//!   reads the batches of a segment whose metadata is damaged with its index, as
//!   [`Segment::open`] does, and rewrites them (`crate::store`'s `repair.rs`).
//! - Index files go with their segment: written after it, deleted before it (so a crash in
//!   between leaves a segment without an index, never an index for a later segment), and a
//!   writer removes an index whose segment is gone (`crate::store`).

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU8;
use std::sync::Arc;

use super::compress::{from_stored_byte, Codec};
use super::parts::{check_times, BatchMeta, Parts, StoredRanges, StoredTimes, UNCHECKED};
use super::sketch::{read_range_record, RangeKind, RangeOf, RangeRecord, TimeHistogram, TimesRef};
use crate::types::{Field, Schema, Type};

/// The first bytes of an index file.
const MAGIC: &[u8; 4] = b"WIDX";

/// The index format version written and read.
pub const INDEX_VERSION: u32 = 1;

/// The file name extension of index files.
pub const INDEX_EXTENSION: &str = "idx";

/// The index file of the segment at `segment` (`<uuid>.seg` → `<uuid>.idx`).
pub fn index_path(segment: &Path) -> PathBuf {
    segment.with_extension(INDEX_EXTENSION)
}

/// One batch's record in an index, with each position given as the distance of its first
/// byte from the end of the segment file and its length (how the writer, which lays batches
/// from the end, knows them).
#[derive(Debug, Clone)]
pub(crate) struct BatchRecord {
    pub(crate) schema: u32,
    pub(crate) first_id: u64,
    pub(crate) rows: u32,
    pub(crate) ts: Option<(i64, i64)>,
    pub(crate) data: (u64, u32),
    pub(crate) offsets: (u64, u32),
    pub(crate) checksum: u32,
    /// The codec and layout as the segment stores them (`codec.rs`).
    pub(crate) stored: u8,
    pub(crate) raw_size: u32,
    pub(crate) sketch: Option<SketchRecord>,
}

/// A batch's sketch in an index record: the Bloom filter's position (as in [`BatchRecord`])
/// and probes, the ranges (`field`, `lo` and `hi` bits, `present`) and the time histogram.
#[derive(Debug, Clone)]
pub(crate) struct SketchRecord {
    pub(crate) bloom: (u64, u32),
    pub(crate) hashes: u8,
    pub(crate) ranges: Vec<RangeRecord>,
    pub(crate) times: Option<TimeHistogram>,
}

/// A segment's header, as an index records it.
pub(crate) struct Header<'a> {
    pub(crate) file_len: usize,
    pub(crate) version: u32,
    pub(crate) uuid: uuid::Uuid,
    pub(crate) events: u64,
    pub(crate) intervals: &'a [Range<u64>],
    pub(crate) schemas: &'a [crate::types::SchemaRef],
}

/// The encoding of an index (see the module docs): the one encoder, for the writer and for
/// an opened segment alike.
pub(crate) fn encode_records(h: &Header<'_>, batches: &[BatchRecord]) -> Vec<u8> {
    let mut w = Vec::with_capacity(64 + batches.len() * 256);
    w.extend_from_slice(MAGIC);
    put32(&mut w, INDEX_VERSION);
    put64(&mut w, h.file_len as u64);
    put32(&mut w, h.version);
    w.extend_from_slice(h.uuid.as_bytes());
    put64(&mut w, h.events);
    put32(&mut w, h.intervals.len() as u32);
    for r in h.intervals {
        put64(&mut w, r.start);
        put64(&mut w, r.end);
    }
    put32(&mut w, h.schemas.len() as u32);
    for s in h.schemas {
        put_str(&mut w, &s.name);
        put32(&mut w, s.fields.len() as u32);
        for f in &s.fields {
            put_str(&mut w, &f.name);
            put_str(&mut w, &f.ty.to_string());
        }
    }
    let file_len = h.file_len as u64;
    let put_pos = |w: &mut Vec<u8>, (from_end, len): (u64, u32)| {
        put64(w, file_len.saturating_sub(from_end));
        put32(w, len);
    };
    put32(&mut w, batches.len() as u32);
    for b in batches {
        put32(&mut w, b.schema);
        put64(&mut w, b.first_id);
        put32(&mut w, b.rows);
        match b.ts {
            None => w.push(0),
            Some((lo, hi)) => {
                w.push(1);
                put64(&mut w, lo as u64);
                put64(&mut w, hi as u64);
            }
        }
        put_pos(&mut w, b.data);
        put_pos(&mut w, b.offsets);
        put32(&mut w, b.checksum);
        w.push(b.stored);
        put32(&mut w, b.raw_size);
        let Some(sk) = &b.sketch else {
            w.push(0);
            continue;
        };
        w.push(1);
        put_pos(&mut w, sk.bloom);
        w.push(sk.hashes);
        put32(&mut w, sk.ranges.len() as u32);
        for &(field, lo, hi, present) in &sk.ranges {
            put32(&mut w, field);
            put64(&mut w, lo);
            put64(&mut w, hi);
            match present {
                None => w.push(0),
                Some(n) => {
                    w.push(1);
                    put32(&mut w, n);
                }
            }
        }
        match &sk.times {
            None => w.push(0),
            Some(t) => {
                w.push(1);
                put32(&mut w, t.field);
                put64(&mut w, t.width as u64);
                put64(&mut w, t.first as u64);
                put32(&mut w, t.counts.len() as u32);
                for &c in &t.counts {
                    put32(&mut w, c);
                }
            }
        }
    }
    let crc = crc32fast::hash(&w);
    put32(&mut w, crc);
    w
}

/// Decodes an index for a segment file of `file_len` bytes. `Err`: why it cannot be used.
pub(crate) fn decode(bytes: &[u8], file_len: usize) -> Result<Parts, String> {
    let Some(body_len) = bytes.len().checked_sub(4) else {
        return Err(format!("truncated: {} bytes", bytes.len()));
    };
    let (body, crc) = bytes.split_at(body_len);
    let stored = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    let computed = crc32fast::hash(body);
    if stored != computed {
        return Err(format!(
            "checksum mismatch: stored {stored:08x}, computed {computed:08x}"
        ));
    }
    let mut r = Reader { buf: body, pos: 0 };
    if r.take(4)? != MAGIC {
        return Err("not a weir segment index (magic WIDX missing)".into());
    }
    let version = r.u32()?;
    if version != INDEX_VERSION {
        return Err(format!("unsupported index version {version}"));
    }
    let len = r.u64()?;
    if len != file_len as u64 {
        return Err(format!(
            "it describes a segment file of {len} bytes, the file has {file_len}"
        ));
    }
    let seg_version = r.u32()?;
    if !(1..=super::FORMAT_VERSION).contains(&seg_version) {
        return Err(format!("unsupported segment version {seg_version}"));
    }
    let uuid = uuid::Uuid::from_slice(r.take(16)?).map_err(|e| e.to_string())?;
    let events = r.u64()?;
    let n = r.count(16)?;
    let mut intervals = Vec::with_capacity(n);
    for _ in 0..n {
        intervals.push(r.u64()?..r.u64()?);
    }
    let n = r.count(8)?;
    let mut schemas = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.string()?;
        let nf = r.count(8)?;
        let mut fields = Vec::with_capacity(nf);
        for _ in 0..nf {
            let fname = r.string()?;
            let ty = r.string()?;
            let ty = Type::parse(&ty).ok_or_else(|| format!("unknown type {ty:?}"))?;
            fields.push(Field::new(&fname, ty));
        }
        schemas.push(Arc::new(Schema::new(&name, fields)));
    }
    // Per schema, per field: whether a range of it may be recorded (looked up once per
    // schema, not once per record: every batch has a range per number, time and address).
    let ranged: Vec<Vec<bool>> = schemas
        .iter()
        .map(|s| {
            s.fields
                .iter()
                .map(|f| RangeKind::of(&f.ty).is_some())
                .collect()
        })
        .collect();
    let n = r.count(40)?;
    let mut batches = Vec::with_capacity(n);
    let mut total = 0u64;
    let mut merged: Vec<Range<u64>> = Vec::new();
    // One batch's range records at a time, for its checks.
    let mut ranges: Vec<RangeRecord> = Vec::new();
    for i in 0..n {
        let bad = |what: &str| format!("batch {i}: {what}");
        let schema = r.u32()?;
        let fields = &schemas
            .get(schema as usize)
            .ok_or_else(|| bad("schema index out of range"))?
            .fields;
        let first_id = r.u64()?;
        let rows = r.u32()?;
        total += u64::from(rows);
        let ts = match r.flag()? {
            false => None,
            true => Some((r.u64()? as i64, r.u64()? as i64)),
        };
        let data = r.range(file_len)?;
        let offsets = r.range(file_len)?;
        let checksum = r.u32()?;
        let (codec, layout) = from_stored_byte(r.u8()?).ok_or_else(|| bad("unknown codec"))?;
        let raw_size = r.u32()? as usize;
        // What the verifier checks of a batch's shape, which readers rely on.
        let shape_ok = if codec == Codec::None {
            rows > 0 && offsets.len() == 4 * rows as usize && raw_size == 0
        } else {
            rows > 0 && offsets.is_empty() && raw_size >= 2 * rows as usize
        };
        if !shape_ok {
            return Err(bad("rows, row offsets and raw size do not fit"));
        }
        let end = first_id
            .checked_add(u64::from(rows))
            .ok_or_else(|| bad("event IDs overflow"))?;
        match merged.last_mut() {
            Some(last) if last.end > first_id => return Err(bad("event IDs out of order")),
            Some(last) if last.end == first_id => last.end = end,
            _ => merged.push(first_id..end),
        }
        let sketch = match r.flag()? {
            false => None,
            true => {
                let bloom = r.range(file_len)?;
                let hashes = r.u8()?;
                let nr = r.count(21)?;
                // The records stay in the index (the segment keeps it mapped), checked here;
                // the time field's alone is made a range, for the time histogram's check.
                let at = r.pos;
                ranges.clear();
                let ranged = &ranged[schema as usize];
                for _ in 0..nr {
                    let (record, next) =
                        read_range_record(r.buf, r.pos).ok_or_else(|| bad("sketch range"))?;
                    r.pos = next;
                    if ranged.get(record.0 as usize) != Some(&true) {
                        return Err(bad("sketch range of a field without one"));
                    }
                    ranges.push(record);
                }
                let times = match r.flag()? {
                    false => None,
                    true => {
                        let field = r.u32()?;
                        let width = r.u64()? as i64;
                        let first = r.u64()? as i64;
                        let nc = r.count(4)?;
                        // The counts stay in the index too.
                        let at = r.pos;
                        let counts = r.take(4 * nc)?;
                        let t = TimesRef::of_record(field, width, first, counts);
                        // The histogram is checked against its field's range alone.
                        let range = ranges.iter().find(|rec| rec.0 == field).and_then(
                            |&(f, lo, hi, present)| {
                                let ty = &fields.get(f as usize)?.ty;
                                Some(RangeOf::new(f, ty, lo, hi, present))
                            },
                        );
                        check_times(t, &schemas[schema as usize], range.as_slice())
                            .map_err(|e| bad(&e))?;
                        let counts = at..at + 4 * nc;
                        Some(StoredTimes::Record {
                            field,
                            width,
                            first,
                            counts,
                        })
                    }
                };
                let stored = StoredRanges::Records { at, count: nr };
                Some((bloom, hashes, stored, times))
            }
        };
        batches.push(BatchMeta {
            schema,
            first_id,
            rows,
            ts,
            data,
            offsets,
            checksum,
            codec,
            layout,
            raw_size,
            sketch,
            state: AtomicU8::new(UNCHECKED),
        });
    }
    if r.pos != body.len() {
        return Err(format!("{} bytes after the last batch", body.len() - r.pos));
    }
    if total != events || merged != intervals {
        return Err(format!(
            "{events} events in {intervals:?}, but the batches hold {total} in {merged:?}"
        ));
    }
    Ok(Parts {
        version: seg_version,
        uuid,
        intervals,
        events,
        schemas,
        batches,
    })
}

/// Writes the index `bytes` of the segment at `segment` next to it, atomically; returns its
/// path and size.
pub(crate) fn write_index_bytes(
    segment: &Path,
    bytes: &[u8],
    sync: bool,
) -> Result<(PathBuf, u64), crate::fs::FsError> {
    let path = index_path(segment);
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let written = crate::fs::write_atomic(dir, &name, bytes, sync)?;
    Ok((written, bytes.len() as u64))
}

/// Removes the index file of the segment at `segment`, if there is one (before the segment
/// itself is removed or moved aside: see the module docs).
pub fn remove_index(segment: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(index_path(segment)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn put32(w: &mut Vec<u8>, v: u32) {
    w.extend_from_slice(&v.to_le_bytes());
}

fn put64(w: &mut Vec<u8>, v: u64) {
    w.extend_from_slice(&v.to_le_bytes());
}

fn put_str(w: &mut Vec<u8>, s: &str) {
    put32(w, s.len() as u32);
    w.extend_from_slice(s.as_bytes());
}

/// A bounds-checked cursor over an index's bytes.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(format!("truncated at byte {}", self.pos));
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn flag(&mut self) -> Result<bool, String> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(format!("flag byte {b} at byte {}", self.pos - 1)),
        }
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A count of items of at least `min_len` bytes each, checked against the bytes left (so
    /// a damaged count cannot make a huge allocation).
    fn count(&mut self, min_len: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_len) > self.buf.len() - self.pos {
            return Err(format!(
                "count {n} at byte {} exceeds the file",
                self.pos - 4
            ));
        }
        Ok(n)
    }

    fn string(&mut self) -> Result<String, String> {
        let n = self.u32()? as usize;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| format!("invalid UTF-8 before byte {}", self.pos))
    }

    /// A range of the segment file (offset u64, length u32), checked to lie inside its
    /// `file_len` bytes.
    fn range(&mut self, file_len: usize) -> Result<Range<usize>, String> {
        let start = self.u64()?;
        let len = u64::from(self.u32()?);
        match start.checked_add(len) {
            Some(end) if end <= file_len as u64 => Ok(start as usize..end as usize),
            _ => Err(format!(
                "range {start}+{len} before byte {} lies outside the segment's {file_len} bytes",
                self.pos
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::compress::stored_byte;
    use crate::types::{Field, Schema, Type};

    /// An index of two batches (3 and 2 rows), the second's offsets `extra` bytes too long.
    fn index(schemas: &[crate::types::SchemaRef], intervals: &[Range<u64>], extra: u32) -> Vec<u8> {
        let h = Header {
            file_len: 4096,
            version: super::super::FORMAT_VERSION,
            uuid: uuid::Uuid::nil(),
            events: intervals.iter().map(|r| r.end - r.start).sum(),
            intervals,
            schemas,
        };
        let batch = |first_id: u64, rows: u32| BatchRecord {
            schema: 0,
            first_id,
            rows,
            ts: None,
            data: (1000, 100),
            offsets: (900, 4 * rows + if first_id > 0 { extra } else { 0 }),
            checksum: 7,
            stored: stored_byte(Codec::None, super::super::Layout::Rows),
            raw_size: 0,
            sketch: None,
        };
        encode_records(&h, &[batch(0, 3), batch(3, 2)])
    }

    /// Beyond its checksum, an index is checked for what readers rely on: a well-formed one
    /// decodes, one whose intervals or events disagree with its batches does not.
    #[test]
    #[allow(clippy::single_range_in_vec_init)]
    fn structure_is_checked_beyond_the_checksum() {
        let schema = Schema::new("zeek.t", vec![Field::new("n", Type::Count)]).into_shared();
        let schemas = [schema];
        let good = index(&schemas, &[0..5], 0);
        let parts = decode(&good, 4096).unwrap();
        assert_eq!(parts.batches.len(), 2);
        assert_eq!(parts.batches[1].data, 3096..3196);
        assert!(decode(&good, 4095)
            .unwrap_err()
            .contains("the file has 4095"));
        let gap = index(&schemas, &[0..4], 0);
        assert!(decode(&gap, 4096).unwrap_err().contains("batches hold"));
        let offsets = index(&schemas, &[0..5], 4);
        assert!(decode(&offsets, 4096).unwrap_err().contains("do not fit"));
        let mut damaged = good.clone();
        damaged[10] ^= 1;
        assert!(decode(&damaged, 4096).unwrap_err().contains("checksum"));
    }

    /// A batch's sketch in an index: a range of a field that has none, or past the schema's
    /// fields, is refused; the time histogram is checked against its field's range (and
    /// refused without one).
    #[test]
    #[allow(clippy::single_range_in_vec_init)]
    fn sketch_ranges_and_the_time_histogram_are_checked() {
        let schema = Schema::new(
            "zeek.t",
            vec![
                Field::new("ts", Type::Time),
                Field::new("s", Type::String),
                Field::new("n", Type::Count),
            ],
        )
        .into_shared();
        let schemas = [schema];
        let hour = 3_600_000_000_000i64;
        let (lo, hi) = (10 * hour + 5, 11 * hour + 7);
        let encoded = |ranges: Vec<RangeRecord>, times: bool| {
            let h = Header {
                file_len: 4096,
                version: super::super::FORMAT_VERSION,
                uuid: uuid::Uuid::nil(),
                events: 4,
                intervals: &[0..4],
                schemas: &schemas,
            };
            let times = times.then(|| TimeHistogram {
                field: 0,
                width: hour,
                first: 10,
                counts: vec![3, 1],
            });
            let batch = BatchRecord {
                schema: 0,
                first_id: 0,
                rows: 4,
                ts: Some((lo, hi)),
                data: (1000, 100),
                offsets: (900, 16),
                checksum: 7,
                stored: stored_byte(Codec::None, super::super::Layout::Rows),
                raw_size: 0,
                sketch: Some(SketchRecord {
                    bloom: (500, 64),
                    hashes: 3,
                    ranges,
                    times,
                }),
            };
            encode_records(&h, &[batch])
        };
        let ts = (0, lo as u64, hi as u64, Some(4));
        let n = (2, 1, 9, Some(2));
        let parts = decode(&encoded(vec![ts, n], true), 4096).unwrap();
        assert!(parts.batches[0].sketch.is_some());
        assert!(decode(&encoded(vec![n, ts], false), 4096).is_ok());
        for bad in [(1, 0, 0, Some(1)), (3, 0, 0, Some(1))] {
            let e = decode(&encoded(vec![ts, bad], true), 4096).unwrap_err();
            assert!(e.contains("sketch range of a field without one"), "{e}");
        }
        // No range of `ts`, a range that ends in another bucket, a count that disagrees.
        for ranges in [
            vec![n],
            vec![(0, lo as u64, (hi + hour) as u64, Some(4)), n],
            vec![(0, lo as u64, hi as u64, Some(5)), n],
        ] {
            let e = decode(&encoded(ranges, true), 4096).unwrap_err();
            assert!(e.contains("time histogram"), "{e}");
        }
    }
}
