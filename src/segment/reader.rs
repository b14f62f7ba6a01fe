//! Reading segments: memory-mapped, the index verified at open (or read from the segment's
//! index file, `index.rs`), each batch's rows verified on its first access, then zero-copy.
//! The columns of a batch stored in columns (format 9 on) are read with positioned reads
//! instead, header and wanted columns alone (`stored.rs` says why).

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use memmap2::Mmap;

use super::checksum::batch_checksum;
use super::codec::unpack;
use super::compress::{from_stored_byte, stored_byte, Codec, Layout, RowBuf};
use super::generated as fbs;
use super::meta::{MetaHasher, V1_FIELDS};
use super::parts::{check_times, BatchMeta, Parts, StoredRanges, StoredTimes, GOOD, UNCHECKED};
use super::sketch::{RangeKind, RangeOf, SketchRef, TimeHistogram, TimesRef};
use super::{Result, SegmentError};
use crate::batch::Batch;
use crate::checkpoint::FileCheckpoint;
use crate::types::{Field, Schema, SchemaRef, Type};

/// An open segment: a read-only memory map plus an index of its batches, found by verifying
/// the segment or read from its index file.
#[derive(Debug)]
pub struct Segment {
    path: PathBuf,
    /// The file, for positioned reads of batches in columns (`stored.rs`).
    file: File,
    map: Mmap,
    parts: Parts,
    /// Whether the parts come from the segment's index file rather than the verifier.
    from_index: bool,
    /// The index file, mapped, when the parts come from it: the batches' field ranges and
    /// time histograms are read from it ([`StoredRanges::Records`], [`StoredTimes::Record`]).
    index: Option<Mmap>,
    /// Where the checkpoints of format 8 are in the map (verified with the metadata checksum;
    /// `None` before format 8, or when opened from the index file).
    checkpoints: Option<Range<usize>>,
}

/// The version table of a segment, whichever version it is (they share their fields).
struct Root<'a> {
    version: u32,
    uuid: [u8; 16],
    intervals: flatbuffers::Vector<'a, fbs::Interval>,
    events: u64,
    schemas: flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<fbs::Schema<'a>>>,
    batches: flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<fbs::Batch<'a>>>,
    /// The stored metadata checksum (version 2 on).
    meta_checksum: Option<u32>,
    /// The encoded checkpoints (version 8 on).
    checkpoints: Option<&'a [u8]>,
}

fn corrupt(path: &Path, reason: impl Into<String>) -> SegmentError {
    SegmentError::corrupt(path, reason)
}

fn unreachable_batch<'a>(path: &Path) -> Result<SegmentBatch<'a>> {
    Err(corrupt(path, "batch index out of range"))
}

/// Position of `inner` within `outer` (both slices of the same map).
fn range_in(outer: &[u8], inner: &[u8]) -> Range<usize> {
    let start = inner.as_ptr() as usize - outer.as_ptr() as usize;
    start..start + inner.len()
}

/// The [`Root`] of a segment table of version 2 or later (they share these fields).
macro_rules! checksummed_root {
    ($t:expr, $version:expr) => {
        Root {
            version: $version,
            uuid: $t.uuid().0,
            intervals: $t.intervals(),
            events: $t.events(),
            schemas: $t.schemas(),
            batches: $t.batches(),
            meta_checksum: Some($t.meta_checksum()),
            checkpoints: None,
        }
    };
}

/// The [`Root`] of a segment of version 2 to 7, which share the table `SegmentV2` (the
/// schema names it for each: what changed between them is inside the batches).
fn v2_root<'a>(t: Option<fbs::SegmentV2<'a>>, version: u32, path: &Path) -> Result<Root<'a>> {
    let t = t.ok_or_else(|| corrupt(path, format!("segment version {version} table missing")))?;
    Ok(checksummed_root!(t, version))
}

/// The [`Root`] of a segment of version 8 to 12, which share the table `SegmentV8` (what
/// changed between them is inside the batches or the checkpoints' encoding).
fn v8_root<'a>(t: Option<fbs::SegmentV8<'a>>, version: u32, path: &Path) -> Result<Root<'a>> {
    let t = t.ok_or_else(|| corrupt(path, format!("segment version {version} table missing")))?;
    Ok(Root {
        checkpoints: t.checkpoints().map(|c| c.bytes()),
        ..checksummed_root!(t, version)
    })
}

impl Segment {
    /// Opens a segment: maps it and reads its index file (`<uuid>.idx`, see `index.rs`),
    /// or, when it has no usable one, checks the size prefix, runs the FlatBuffers verifier
    /// with limits, parses the schemas, checks the batches' ID order against the header's
    /// intervals and event count, and (format version 2) the metadata checksum. Each batch's
    /// row offsets and checksum are checked once, on its first access ([`Segment::batch`]);
    /// [`Segment::verify_all`] checks all of them. Any damage is a [`SegmentError::Corrupt`]
    /// (or [`SegmentError::Verification`]) naming the file.
    pub fn open(path: impl AsRef<Path>) -> Result<Segment> {
        Self::open_with(path.as_ref(), true)
    }

    /// [`Segment::open`] without the index file: the segment itself is verified (what
    /// `weir verify` and `--repair` use, and what an index is checked against).
    pub fn open_verified(path: impl AsRef<Path>) -> Result<Segment> {
        Self::open_with(path.as_ref(), false)
    }

    fn open_with(path: &Path, use_index: bool) -> Result<Segment> {
        let (file, len) = crate::fs::open_with_len(path)?;
        if len < 16 {
            return Err(corrupt(path, format!("truncated: only {len} bytes")));
        }
        if len > 1 << 31 {
            return Err(corrupt(
                path,
                format!("{len} bytes exceeds the 2 GiB limit"),
            ));
        }
        let map = crate::fs::map_readonly(&file, path, false)?;
        if use_index {
            if let Some((parts, index)) = Self::indexed(path, map.len()) {
                return Ok(Segment {
                    path: path.to_path_buf(),
                    file,
                    map,
                    parts,
                    from_index: true,
                    index: Some(index),
                    checkpoints: None,
                });
            }
        }
        let (parts, checkpoints) = Self::index(&map, path)?;
        Ok(Segment {
            path: path.to_path_buf(),
            file,
            map,
            parts,
            from_index: false,
            index: None,
            checkpoints,
        })
    }

    /// The parts from the segment's index file, if it has a usable one (see `index.rs`): a
    /// missing one is normal (older archives), a damaged one is logged and passed over.
    fn indexed(path: &Path, file_len: usize) -> Option<(Parts, Mmap)> {
        let idx = super::index::index_path(path);
        // Mapped, not read: a read copied the file into fresh memory, every page of it a
        // fault (W1000's index is 1.6 MB, 400 pages); the map's pages come in 16 at a time.
        let unreadable = |e: &dyn std::fmt::Display| -> Option<(Parts, Mmap)> {
            tracing::warn!(index = %idx.display(), error = %e, "cannot read segment index; verifying the segment instead");
            None
        };
        let bytes = match File::open(&idx) {
            Ok(f) => match crate::fs::map_readonly(&f, &idx, true) {
                Ok(b) => b,
                Err(e) => return unreadable(&e),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => return unreadable(&e),
        };
        match super::index::decode(&bytes, file_len) {
            Ok(parts) => Some((parts, bytes)),
            Err(reason) => {
                tracing::warn!(index = %idx.display(), %reason, "segment index unusable; verifying the segment instead");
                None
            }
        }
    }

    /// What opening found (for `index.rs`).
    pub(super) fn parts(&self) -> &Parts {
        &self.parts
    }

    /// Whether this segment was opened from its index file (see `index.rs`) rather than by
    /// verifying its metadata.
    pub fn opened_from_index(&self) -> bool {
        self.from_index
    }

    /// The checkpoints of followed files as of this segment's last event (format 8 on; see
    /// [`crate::checkpoint`]), `None` for an older segment, which does not record them (or a
    /// rewrite of one). Read
    /// from the segment itself, verified (a segment opened from its index file is verified
    /// here).
    pub fn checkpoints(&self) -> Result<Option<Vec<FileCheckpoint>>> {
        if self.parts.version < 8 {
            return Ok(None);
        }
        if self.from_index {
            return Segment::open_verified(&self.path)?.checkpoints();
        }
        let Some(range) = self.checkpoints.clone() else {
            return Ok(None);
        };
        crate::wal::decode_checkpoints(&self.map[range])
            .map(Some)
            .map_err(|reason| corrupt(&self.path, format!("checkpoints: {reason}")))
    }

    fn index(buf: &[u8], path: &Path) -> Result<(Parts, Option<Range<usize>>)> {
        if !fbs::segment_size_prefixed_buffer_has_identifier(buf) {
            return Err(corrupt(
                path,
                "not a weir segment (file identifier WSEG missing)",
            ));
        }
        let size = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        if size != buf.len() - 4 {
            return Err(corrupt(
                path,
                format!(
                    "truncated or extended: the size prefix says {} bytes, the file has {}",
                    size + 4,
                    buf.len()
                ),
            ));
        }
        let opts = super::verifier_options(buf.len());
        let root = fbs::size_prefixed_root_as_segment_with_opts(&opts, buf).map_err(|source| {
            SegmentError::Verification {
                path: path.to_path_buf(),
                source,
            }
        })?;
        let seg = match root.segment_type() {
            fbs::SegmentVersion::SegmentV1 => {
                let v1 = root
                    .segment_as_segment_v1()
                    .ok_or_else(|| corrupt(path, "segment version 1 table missing"))?;
                // A version 2 table has one more field: read as version 1 (after damage to
                // the type byte), its metadata checksum would go unchecked.
                let fields = v1._tab.vtable().num_fields();
                if fields > V1_FIELDS {
                    return Err(corrupt(
                        path,
                        format!(
                            "the segment type says version 1, but its table has {fields} \
                             fields where version 1 has {V1_FIELDS} (damaged segment type?)"
                        ),
                    ));
                }
                Root {
                    version: 1,
                    uuid: v1.uuid().0,
                    intervals: v1.intervals(),
                    events: v1.events(),
                    schemas: v1.schemas(),
                    batches: v1.batches(),
                    meta_checksum: None,
                    checkpoints: None,
                }
            }
            fbs::SegmentVersion::SegmentV2 => v2_root(root.segment_as_segment_v2(), 2, path)?,
            fbs::SegmentVersion::SegmentV3 => v2_root(root.segment_as_segment_v3(), 3, path)?,
            fbs::SegmentVersion::SegmentV4 => v2_root(root.segment_as_segment_v4(), 4, path)?,
            fbs::SegmentVersion::SegmentV5 => v2_root(root.segment_as_segment_v5(), 5, path)?,
            fbs::SegmentVersion::SegmentV6 => v2_root(root.segment_as_segment_v6(), 6, path)?,
            fbs::SegmentVersion::SegmentV7 => v2_root(root.segment_as_segment_v7(), 7, path)?,
            fbs::SegmentVersion::SegmentV8 => v8_root(root.segment_as_segment_v8(), 8, path)?,
            fbs::SegmentVersion::SegmentV9 => v8_root(root.segment_as_segment_v9(), 9, path)?,
            fbs::SegmentVersion::SegmentV10 => v8_root(root.segment_as_segment_v10(), 10, path)?,
            fbs::SegmentVersion::SegmentV11 => v8_root(root.segment_as_segment_v11(), 11, path)?,
            fbs::SegmentVersion::SegmentV12 => v8_root(root.segment_as_segment_v12(), 12, path)?,
            other => {
                return Err(corrupt(
                    path,
                    format!(
                        "unsupported segment version {} (written by a newer weir?)",
                        other.0
                    ),
                ))
            }
        };
        let mut meta = MetaHasher::new();
        meta.head(
            seg.version,
            &seg.uuid,
            seg.events,
            seg.intervals.iter().map(|i| (i.begin(), i.end())),
        );
        meta.schema_count(seg.schemas.len());
        let uuid = uuid::Uuid::from_bytes(seg.uuid);
        let mut schemas = Vec::with_capacity(seg.schemas.len());
        for (i, s) in seg.schemas.iter().enumerate() {
            meta.schema(s.name(), s.fields().iter().map(|f| (f.name(), f.type_())));
            let mut fields = Vec::with_capacity(s.fields().len());
            for f in s.fields().iter() {
                let ty = Type::parse(f.type_()).ok_or_else(|| {
                    corrupt(
                        path,
                        format!(
                            "schema {i} ({}): field {} has unknown type {:?}",
                            s.name(),
                            f.name(),
                            f.type_()
                        ),
                    )
                })?;
                fields.push(Field::new(f.name(), ty));
            }
            schemas.push(Arc::new(Schema::new(s.name(), fields)));
        }
        meta.batch_count(seg.batches.len());
        let mut batches = Vec::with_capacity(seg.batches.len());
        let mut events = 0u64;
        let mut intervals: Vec<Range<u64>> = Vec::new();
        for (i, b) in seg.batches.iter().enumerate() {
            let bad = |reason: String| corrupt(path, format!("batch {i}: {reason}"));
            if b.schema() as usize >= schemas.len() {
                return Err(bad(format!(
                    "schema index {} out of range ({} schemas)",
                    b.schema(),
                    schemas.len()
                )));
            }
            let data = b.data();
            let offsets = b.offsets();
            let rows = b.rows();
            let (codec, layout) = from_stored_byte(b.codec().0)
                .ok_or_else(|| bad(format!("unknown codec {}", b.codec().0)))?;
            if seg.version < 4 && layout == Layout::Columns {
                return Err(bad(format!(
                    "format {} has no batches in columns",
                    seg.version
                )));
            }
            if seg.version < 3
                && (codec != Codec::None || b.raw_size() != 0 || b.sketch().is_some())
            {
                return Err(bad(format!(
                    "format {} has no compressed batches or sketches",
                    seg.version
                )));
            }
            let raw_size = b.raw_size() as usize;
            if codec == Codec::None {
                if rows == 0 || offsets.len() != rows as usize || raw_size != 0 {
                    return Err(bad(format!(
                        "{rows} rows but {} row offsets",
                        offsets.len()
                    )));
                }
            } else if rows == 0
                || !offsets.is_empty()
                || raw_size < 2 * rows as usize
                || raw_size > super::MAX_SEGMENT_SIZE_LIMIT as usize
            {
                return Err(bad(format!(
                    "compressed batch of {rows} rows with {} row offsets stored and {raw_size} \
                     raw bytes",
                    offsets.len()
                )));
            }
            let first = b.first_id();
            let end = first
                .checked_add(rows as u64)
                .ok_or_else(|| bad("event IDs overflow".into()))?;
            match intervals.last_mut() {
                Some(last) if last.end > first => {
                    return Err(bad(format!(
                        "event IDs {first}.. overlap or precede the previous batch"
                    )))
                }
                Some(last) if last.end == first => last.end = end,
                _ => intervals.push(first..end),
            }
            events += rows as u64;
            let ts = b.ts().map(|t| (t.min(), t.max()));
            meta.batch(b.schema(), first, rows, ts, b.checksum());
            let sketch = match b.sketch() {
                None => None,
                Some(sk) => {
                    let fields = &schemas[b.schema() as usize].fields;
                    let mut ranges = Vec::with_capacity(sk.ranges().len());
                    // Format 4: rows with a value, per range (at least one, at most all).
                    let present: Option<Vec<u32>> = sk.present().map(|p| p.iter().collect());
                    if let Some(p) = &present {
                        if seg.version < 4
                            || p.len() != sk.ranges().len()
                            || p.iter().any(|&n| n == 0 || n > rows)
                        {
                            return Err(bad(format!(
                                "sketch counts {p:?} do not fit {} ranges of {rows} rows",
                                sk.ranges().len()
                            )));
                        }
                    }
                    for (j, r) in sk.ranges().iter().enumerate() {
                        let ty = fields
                            .get(r.field() as usize)
                            .map(|f| &f.ty)
                            .filter(|ty| RangeKind::of(ty).is_some_and(|k| k as u8 == r.kind()))
                            .ok_or_else(|| {
                                bad(format!(
                                    "sketch range of field {} (kind {}) does not fit the schema",
                                    r.field(),
                                    r.kind()
                                ))
                            })?;
                        let present = present.as_ref().and_then(|p| p.get(j).copied());
                        ranges.push(RangeOf::new(r.field(), ty, r.lo(), r.hi(), present));
                    }
                    let times = match sk.times() {
                        None => None,
                        Some(_) if seg.version < 5 => {
                            return Err(bad(format!(
                                "format {} has no time histograms",
                                seg.version
                            )))
                        }
                        Some(t) => {
                            let t = TimeHistogram {
                                field: t.field(),
                                width: t.width(),
                                first: t.first(),
                                counts: t.counts().iter().collect(),
                            };
                            check_times(t.as_ref(), &schemas[b.schema() as usize], &ranges)
                                .map_err(bad)?;
                            Some(StoredTimes::Decoded(t))
                        }
                    };
                    Some((
                        range_in(buf, sk.bloom().bytes()),
                        sk.bloom_hashes(),
                        StoredRanges::Decoded(ranges),
                        times,
                    ))
                }
            };
            if seg.version >= 3 {
                match b.sketch() {
                    None => meta.batch_v3(stored_byte(codec, layout), b.raw_size(), None),
                    Some(sk) => {
                        let mut ranges = sk
                            .ranges()
                            .iter()
                            .map(|r| (r.field(), r.kind(), r.lo(), r.hi()));
                        meta.batch_v3(
                            stored_byte(codec, layout),
                            b.raw_size(),
                            Some((sk.bloom_hashes(), sk.bloom().bytes(), &mut ranges)),
                        );
                        if let Some(p) = sk.present() {
                            meta.present(&p.iter().collect::<Vec<u32>>());
                        }
                        if seg.version >= 5 {
                            let counts: Option<Vec<u32>> =
                                sk.times().map(|t| t.counts().iter().collect());
                            meta.times(
                                sk.times()
                                    .zip(counts.as_deref())
                                    .map(|(t, c)| (t.field(), t.width(), t.first(), c)),
                            );
                        }
                    }
                }
            }
            batches.push(BatchMeta {
                schema: b.schema(),
                first_id: first,
                rows,
                ts,
                data: range_in(buf, data.bytes()),
                offsets: range_in(buf, offsets.bytes()),
                checksum: b.checksum(),
                codec,
                layout,
                raw_size,
                sketch,
                state: AtomicU8::new(UNCHECKED),
            });
        }
        if events != seg.events {
            return Err(corrupt(
                path,
                format!("header says {} events, batches hold {events}", seg.events),
            ));
        }
        let stored: Vec<Range<u64>> = seg.intervals.iter().map(|i| i.begin()..i.end()).collect();
        if stored != intervals {
            return Err(corrupt(
                path,
                format!("header ID intervals {stored:?} differ from the batches' {intervals:?}"),
            ));
        }
        if seg.version >= 8 {
            meta.checkpoints(seg.checkpoints);
        }
        if let Some(stored) = seg.meta_checksum {
            let computed = meta.finish();
            if computed != stored {
                return Err(corrupt(
                    path,
                    format!(
                        "metadata checksum mismatch: stored {stored:08x}, computed \
                         {computed:08x} (the uuid, ID intervals, event count, schemas or a \
                         batch's schema index, first ID, rows, ts range, checksum, codec, raw \
                         size or sketch are damaged)"
                    ),
                ));
            }
        }
        Ok((
            Parts {
                version: seg.version,
                uuid,
                intervals,
                events,
                schemas,
                batches,
            },
            seg.checkpoints.map(|cp| range_in(buf, cp)),
        ))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The segment's format version: 1 (no metadata checksum), 2, or 3 (compressed batches and
    /// sketches).
    pub fn version(&self) -> u32 {
        self.parts.version
    }

    /// The segment's UUID.
    pub fn uuid(&self) -> uuid::Uuid {
        self.parts.uuid
    }

    /// The event IDs held, ascending.
    pub fn intervals(&self) -> &[Range<u64>] {
        &self.parts.intervals
    }

    /// Number of events.
    pub fn events(&self) -> u64 {
        self.parts.events
    }

    /// File size in bytes.
    pub fn byte_size(&self) -> usize {
        self.map.len()
    }

    /// The distinct schemas, each built once per segment and shared by its batches.
    pub fn schemas(&self) -> &[SchemaRef] {
        &self.parts.schemas
    }

    /// Number of batches.
    pub fn len(&self) -> usize {
        self.parts.batches.len()
    }

    /// Whether the segment holds no batch.
    pub fn is_empty(&self) -> bool {
        self.parts.batches.is_empty()
    }

    /// Batch `i` (`None` past the end). Its row offsets and checksum are verified on the
    /// first access (so opening a large segment to read its first events stays fast); a
    /// damaged batch is a [`SegmentError::Corrupt`] naming the file and batch. A compressed
    /// batch is decompressed here, into memory the returned batch owns (one batch at a time);
    /// an uncompressed one is borrowed from the map.
    pub fn batch(&self, i: usize) -> Option<Result<SegmentBatch<'_>>> {
        let m = match self.checked(i)? {
            Ok(m) => m,
            Err(e) => return Some(Err(e)),
        };
        let bad = |reason: String| corrupt(&self.path, format!("batch {i}: {reason}"));
        Some(self.make_batch(m).map_err(bad))
    }

    /// Batch `i` with only the fields `want` marks (one flag per field of its schema) read,
    /// when it is stored in columns: only those columns are inflated, and its rows are narrow,
    /// holding those fields alone, in schema order (its schema still names them all). Checked on first access as [`Segment::batch`]; any other batch (or a `want`
    /// that is not one flag per field) is read whole, as by [`Segment::batch`]. For evaluating
    /// a predicate that reads only those fields; output needs the whole rows.
    pub fn batch_projected(&self, i: usize, want: &[bool]) -> Option<Result<SegmentBatch<'_>>> {
        self.batch_assembled(i, Some(want), None)
    }

    /// Batch `i` with only the rows `select` names (indices, ascending) rebuilt, whole or
    /// (with `want`) narrowed as by [`Segment::batch_projected`], when it is stored in
    /// columns: every other row is an empty array (no fields; see `columns::assemble`), so
    /// row indices stay those of the batch. A batch stored otherwise is read whole, as by
    /// [`Segment::batch`]. For output of the matching rows of a batch: read only those.
    pub fn batch_selected(
        &self,
        i: usize,
        want: Option<&[bool]>,
        select: &[usize],
    ) -> Option<Result<SegmentBatch<'_>>> {
        self.batch_assembled(i, want, Some(select))
    }

    fn batch_assembled(
        &self,
        i: usize,
        want: Option<&[bool]>,
        select: Option<&[usize]>,
    ) -> Option<Result<SegmentBatch<'_>>> {
        let m = self.parts.batches.get(i)?;
        let fields = self
            .parts
            .schemas
            .get(m.schema as usize)
            .map_or(0, |s| s.fields.len());
        if m.layout != Layout::Columns || want.is_some_and(|w| w.len() != fields) {
            return self.batch(i);
        }
        // Selected rows: a blocked column's blocks that hold none are not read.
        let rows = m.rows as usize;
        let mut pick = |_: &[Option<super::blocks::Directory<'_>>]| {
            Some(super::columns::rows_bitmap(select?, rows))
        };
        let choose = select.map(|_| &mut pick as super::stored::Choose<'_>);
        let made = self.read_stored(i, want, choose, |stored, _| {
            super::columns::assemble(m.codec, stored, m.raw_size, rows, want, select)
        })?;
        let bad = |reason: String| corrupt(&self.path, format!("batch {i}: {reason}"));
        Some(made.and_then(|(buf, data_len)| self.unpacked_batch(m, buf, data_len).map_err(bad)))
    }

    /// The inflated columns of batch `i` when it is stored in columns (`None` past the end or
    /// for a batch stored otherwise): for consumers that want columns (the Arrow export)
    /// without the rows being rebuilt. Checked on first access as [`Segment::batch`].
    pub fn batch_columns(&self, i: usize) -> Option<Result<super::Columns>> {
        self.batch_columns_of(i, None, None)
    }

    /// [`Segment::batch_columns`] with only the columns `want` marks inflated (one flag per
    /// field of the batch's schema; the others are empty), and of those the dictionary
    /// columns `as_dicts` marks kept as dictionaries (`Columns::dict`): what the columnar
    /// evaluator of a search reads. A `want` that is not one flag per field is an error
    /// naming the batch.
    pub fn batch_columns_of(
        &self,
        i: usize,
        want: Option<&[bool]>,
        as_dicts: Option<&[bool]>,
    ) -> Option<Result<super::Columns>> {
        self.batch_columns_keeping(i, want, as_dicts, None)
    }

    /// [`Segment::batch_columns_of`], with the columns of integer planes that `as_ints` marks
    /// kept as their numbers ([`super::Columns::ints`]).
    pub(crate) fn batch_columns_keeping(
        &self,
        i: usize,
        want: Option<&[bool]>,
        as_dicts: Option<&[bool]>,
        as_ints: Option<&[bool]>,
    ) -> Option<Result<super::Columns>> {
        let m = self.parts.batches.get(i)?;
        if m.layout != Layout::Columns {
            return None;
        }
        self.read_stored(i, want, None, |stored, _| {
            super::columns::read_rows_of_columns(
                m.codec,
                stored,
                m.raw_size,
                m.rows as usize,
                want,
                (as_dicts, as_ints),
                None,
            )
        })
    }

    /// [`Segment::batch_columns_keeping`] for the rows chosen by `choose` from the
    /// directories of the wanted blocked columns (format 11, `blocks.rs`; by column, `None`
    /// for a column not blocked or not wanted), read and checked first: a blocked column
    /// reads and inflates only the blocks that hold one of them, and its other rows read as
    /// nil (see `columns::read_rows_of_columns`). `choose` returns the rows needed (`None`:
    /// all), which are returned with the columns; an empty set of rows reads no column
    /// (`Ok(None)`).
    #[allow(clippy::type_complexity)]
    pub(crate) fn batch_columns_chosen(
        &self,
        i: usize,
        want: &[bool],
        keeping: (Option<&[bool]>, Option<&[bool]>),
        choose: impl FnOnce(&[Option<super::blocks::Directory<'_>>]) -> Option<Vec<u64>>,
    ) -> Option<Result<Option<(super::Columns, Option<Vec<u64>>)>>> {
        let m = self.parts.batches.get(i)?;
        if m.layout != Layout::Columns {
            return None;
        }
        let rows = m.rows as usize;
        let mut choose = Some(choose);
        let mut pick = |dirs: &[Option<super::blocks::Directory<'_>>]| choose.take()?(dirs);
        self.read_stored(i, Some(want), Some(&mut pick), |stored, needed| {
            if needed.is_some_and(|w| w.iter().all(|&w| w == 0)) {
                return Ok(None);
            }
            let cols = super::columns::read_rows_of_columns(
                m.codec,
                stored,
                m.raw_size,
                rows,
                Some(want),
                keeping,
                needed,
            )?;
            Ok(Some((cols, needed.map(<[u64]>::to_vec))))
        })
    }

    /// `f` of the stored bytes of batch `i`, stored in columns, of which those of the
    /// columns `want` marks (all without it) are read, the batch checked on its first
    /// access as by [`Segment::check`]: read with positioned reads in format 9 and later
    /// (`stored.rs`), else through the map. `None` past the end; an error names the batch.
    /// With `choose`, a wanted blocked column is read as the blocks that hold the rows it
    /// chooses (`stored::with_stored`), which `f` is given.
    fn read_stored<T>(
        &self,
        i: usize,
        want: Option<&[bool]>,
        choose: Option<super::stored::Choose<'_>>,
        f: impl FnOnce(&[u8], Option<&[u64]>) -> std::result::Result<T, String>,
    ) -> Option<Result<T>> {
        let m = self.parts.batches.get(i)?;
        let bad = |reason: String| corrupt(&self.path, format!("batch {i}: {reason}"));
        if self.parts.version < 9 {
            if let Err(e) = self.checked(i)? {
                return Some(Err(e));
            }
            return Some(f(&self.map[m.data.clone()], None).map_err(bad));
        }
        let check = |bytes: &[u8], header: &super::columns::Header| {
            if m.state.load(Ordering::Acquire) != GOOD {
                check_header(m, bytes, header)?;
                m.state.store(GOOD, Ordering::Release);
            }
            Ok(())
        };
        let size = (m.raw_size, m.rows as usize);
        Some(
            super::stored::with_stored(&self.file, m.data.clone(), size, want, check, choose, f)
                .map_err(bad),
        )
    }

    /// Checks batch `i` without reading its rows, as [`Segment::batch`] does first (once).
    /// `None` past the end.
    pub fn check(&self, i: usize) -> Option<Result<()>> {
        Some(self.checked(i)?.map(|_| ()))
    }

    /// The metadata of batch `i` once the batch is checked (its offsets and checksum, on the
    /// first access only; a damaged batch is a [`SegmentError::Corrupt`] naming the file and
    /// batch). `None` past the end.
    fn checked(&self, i: usize) -> Option<Result<&BatchMeta>> {
        let m = self.parts.batches.get(i)?;
        if m.state.load(Ordering::Acquire) != GOOD {
            if let Err(reason) = self.check_batch(m) {
                return Some(Err(corrupt(&self.path, format!("batch {i}: {reason}"))));
            }
            m.state.store(GOOD, Ordering::Release);
        }
        Some(Ok(m))
    }

    /// The event IDs of batch `i` (known without verifying its rows).
    pub fn batch_ids(&self, i: usize) -> Option<Range<u64>> {
        let m = self.parts.batches.get(i)?;
        Some(m.first_id..m.first_id + m.rows as u64)
    }

    /// The schema, event IDs and `ts` range of batch `i`, known without verifying its rows
    /// (what a query prunes by, see `weir::unstable::query`).
    #[allow(clippy::type_complexity)]
    pub fn batch_meta(&self, i: usize) -> Option<(&SchemaRef, Range<u64>, Option<(i64, i64)>)> {
        let m = self.parts.batches.get(i)?;
        let schema = self.parts.schemas.get(m.schema as usize)?;
        Some((schema, m.first_id..m.first_id + m.rows as u64, m.ts))
    }

    /// The sketch of batch `i` (format 3; `None` for older segments), covered by the metadata
    /// checksum checked at open: usable without verifying the batch's rows.
    pub fn sketch(&self, i: usize) -> Option<SketchRef<'_>> {
        let m = self.parts.batches.get(i)?;
        let (bloom, hashes, ranges, times) = m.sketch.as_ref()?;
        let ranges = match (ranges, &self.index) {
            (StoredRanges::Decoded(r), _) => super::sketch::Ranges::Decoded(r),
            (&StoredRanges::Records { at, count }, Some(index)) => super::sketch::Ranges::Records {
                bytes: index.get(at..).unwrap_or_default(),
                count,
                fields: &self.parts.schemas.get(m.schema as usize)?.fields,
            },
            (StoredRanges::Records { .. }, None) => super::sketch::Ranges::Decoded(&[]),
        };
        let times = times.as_ref().and_then(|t| match t {
            StoredTimes::Decoded(t) => Some(t.as_ref()),
            StoredTimes::Record {
                field,
                width,
                first,
                counts,
            } => {
                let counts = self.index.as_ref()?.get(counts.clone())?;
                Some(TimesRef::of_record(*field, *width, *first, counts))
            }
        });
        Some(SketchRef {
            bloom: super::sketch::Bloom::File {
                segment: self.parts.uuid.as_u128(),
                file: &self.file,
                range: bloom,
            },
            hashes: *hashes,
            ranges,
            times,
        })
    }

    /// How batch `i` is stored: its codec, the bytes stored in the segment (rows and offsets,
    /// compressed or not) and the raw bytes of its rows (as msgpack, without offsets).
    pub fn batch_storage(&self, i: usize) -> Option<(Codec, usize, usize)> {
        let m = self.parts.batches.get(i)?;
        let stored = m.data.len() + m.offsets.len();
        let raw = match (m.codec, m.layout) {
            (Codec::None, _) => m.data.len(),
            (_, Layout::Columns) => m.raw_size,
            // Every row's length takes at least one byte of the raw bytes.
            (_, Layout::Rows) => m.raw_size.saturating_sub(m.rows as usize),
        };
        Some((m.codec, stored, raw))
    }

    /// How batch `i`'s compressed bytes are arranged (rows for uncompressed batches).
    pub fn batch_layout(&self, i: usize) -> Option<Layout> {
        Some(self.parts.batches.get(i)?.layout)
    }

    /// The fields of batch `i` stored as integer planes (format 6, `planes.rs`), from its
    /// column header; empty for a batch not stored in columns. `None`: no such batch, or a
    /// header that does not read (damage, which reading the batch reports).
    pub fn batch_planes(&self, i: usize) -> Option<Vec<usize>> {
        self.batch_encoded(i, super::columns::PLANES)
    }

    /// The fields of batch `i` stored as dictionaries (format 7, `dict.rs`), as
    /// [`Segment::batch_planes`] gives those stored as planes.
    pub fn batch_dicts(&self, i: usize) -> Option<Vec<usize>> {
        self.batch_encoded(i, super::columns::DICT)
    }

    /// The fields of batch `i` stored marked (format 10, `marked.rs`), as
    /// [`Segment::batch_planes`] gives those stored as planes.
    pub fn batch_marked(&self, i: usize) -> Option<Vec<usize>> {
        self.batch_encoded(i, super::columns::MARKED)
    }

    /// The fields of batch `i` stored in blocks of rows (format 11, `blocks.rs`), as
    /// [`Segment::batch_planes`] gives those stored as planes.
    pub fn batch_blocked(&self, i: usize) -> Option<Vec<usize>> {
        self.batch_encoded(i, super::columns::BLOCKS)
    }

    /// The columns of batch `i` of encoding `encoding`, from its column header.
    fn batch_encoded(&self, i: usize, encoding: usize) -> Option<Vec<usize>> {
        let m = self.parts.batches.get(i)?;
        if m.layout != Layout::Columns {
            return Some(Vec::new());
        }
        let stored = &self.map[m.data.clone()];
        super::columns::encoded(stored, m.raw_size, m.rows as usize, encoding).ok()
    }

    /// The rows and offsets of batch `i`, borrowed from the map, if it is stored uncompressed
    /// and was already returned by [`Segment::batch`] (so verified).
    pub(crate) fn mapped_rows(&self, i: usize) -> Option<(&[u8], OffsetsRef<'_>)> {
        let m = self.parts.batches.get(i)?;
        if m.codec != Codec::None || m.state.load(Ordering::Acquire) != GOOD {
            return None;
        }
        Some((
            &self.map[m.data.clone()],
            OffsetsRef::U32Le(&self.map[m.offsets.clone()]),
        ))
    }

    /// Checks the stored bytes' checksum and, for an uncompressed batch, its row offsets (a
    /// compressed batch's offsets are checked as it is decompressed).
    fn check_batch(&self, m: &BatchMeta) -> std::result::Result<(), String> {
        let data = &self.map[m.data.clone()];
        if self.parts.version >= 9 && m.layout == Layout::Columns {
            // The checksum covers the header, which holds each column's checksum: a column
            // is checked when it is inflated, and the pages of the others are not read.
            let header = super::columns::header(data, m.raw_size, m.rows as usize)?;
            return check_header(m, &data[..header.len], &header);
        }
        let offsets: Vec<u32> = self.map[m.offsets.clone()]
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if m.codec == Codec::None {
            check_offsets(&OffsetsRef::U32Le(&self.map[m.offsets.clone()]), data.len())?;
        }
        let sum = batch_checksum(data, &offsets);
        if sum != m.checksum {
            return Err(format!(
                "checksum mismatch: stored {:08x}, computed {sum:08x}",
                m.checksum
            ));
        }
        Ok(())
    }

    /// Verifies every batch's offsets and checksum now (what [`Segment::batch`] does lazily),
    /// decompressing each compressed batch.
    pub fn verify_all(&self) -> Result<()> {
        for i in 0..self.parts.batches.len() {
            if let Some(Err(e)) = self.batch(i) {
                return Err(e);
            }
        }
        Ok(())
    }

    fn make_batch<'a>(&'a self, m: &BatchMeta) -> std::result::Result<SegmentBatch<'a>, String> {
        match m.codec {
            Codec::None => Ok(self.batch_of(
                m,
                Bytes::Mapped {
                    data: &self.map[m.data.clone()],
                    offsets: &self.map[m.offsets.clone()],
                },
            )),
            codec => {
                let (buf, data_len) = unpack(
                    codec,
                    m.layout,
                    &self.map[m.data.clone()],
                    m.raw_size,
                    m.rows as usize,
                )?;
                self.unpacked_batch(m, buf, data_len)
            }
        }
    }

    /// The batch of `m` from its decompressed (or assembled) rows and their u32 offsets, the
    /// offsets checked first.
    fn unpacked_batch<'a>(
        &'a self,
        m: &BatchMeta,
        buf: RowBuf,
        data_len: usize,
    ) -> std::result::Result<SegmentBatch<'a>, String> {
        check_offsets(&OffsetsRef::U32Le(&buf[data_len..]), data_len)
            .map_err(|e| format!("{e} (after decompression)"))?;
        Ok(self.batch_of(
            m,
            Bytes::Unpacked {
                buf: Arc::new(buf),
                data_len,
            },
        ))
    }

    fn batch_of<'a>(&'a self, m: &BatchMeta, bytes: Bytes<'a>) -> SegmentBatch<'a> {
        SegmentBatch {
            schema: &self.parts.schemas[m.schema as usize],
            first_id: m.first_id,
            ts: m.ts,
            rows: m.rows as usize,
            codec: m.codec,
            bytes,
        }
    }

    /// The batches in ID order, each verified on first access (see [`Segment::batch`]).
    pub fn batches(&self) -> impl ExactSizeIterator<Item = Result<SegmentBatch<'_>>> + '_ {
        (0..self.parts.batches.len()).map(move |i| {
            self.batch(i)
                .unwrap_or_else(|| unreachable_batch(&self.path))
        })
    }

    /// The index of the batch holding event `id`, and the row within it.
    pub fn find(&self, id: u64) -> Option<(usize, usize)> {
        let i = self.parts.batches.partition_point(|b| b.first_id <= id);
        let b = self.parts.batches.get(i.checked_sub(1)?)?;
        let row = id - b.first_id;
        (row < b.rows as u64).then_some((i - 1, row as usize))
    }

    /// The index of the first batch that holds an ID at or after `id`.
    pub fn first_batch_from(&self, id: u64) -> usize {
        self.parts
            .batches
            .partition_point(|b| b.first_id + b.rows as u64 <= id)
    }
}

/// Row offsets, either little-endian u32 in a segment or native in an owned [`Batch`].
#[derive(Debug, Clone, Copy)]
pub enum OffsetsRef<'a> {
    /// Little-endian u32 values, as stored in a segment.
    U32Le(&'a [u8]),
    /// Offsets of an in-memory batch.
    Native(&'a [usize]),
}

impl OffsetsRef<'_> {
    /// Number of offsets.
    pub fn len(&self) -> usize {
        match self {
            OffsetsRef::U32Le(b) => b.len() / 4,
            OffsetsRef::Native(o) => o.len(),
        }
    }

    /// Whether there is no offset.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Offset `i` (0 past the end, which callers never ask for).
    pub fn get(&self, i: usize) -> usize {
        match self {
            OffsetsRef::U32Le(b) => b
                .get(4 * i..4 * i + 4)
                .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize)
                .unwrap_or(0),
            OffsetsRef::Native(o) => o.get(i).copied().unwrap_or(0),
        }
    }
}

/// Checks batch `m`, stored in columns in format 9 or later, by its header (`bytes`, read as
/// `header`): it has column checksums, and its own checksum is the batch's. (Each column is
/// checked against its checksum when it is read.)
fn check_header(
    m: &BatchMeta,
    bytes: &[u8],
    header: &super::columns::Header,
) -> std::result::Result<(), String> {
    if !header.checksummed {
        return Err("a batch in columns without column checksums in format 9".into());
    }
    let sum = crc32fast::hash(bytes);
    if sum != m.checksum {
        return Err(format!(
            "header checksum mismatch: stored {:08x}, computed {sum:08x}",
            m.checksum
        ));
    }
    Ok(())
}

/// Row offsets must start at 0 and increase strictly within `data_len` bytes.
fn check_offsets(offsets: &OffsetsRef<'_>, data_len: usize) -> std::result::Result<(), String> {
    let n = offsets.len();
    let ok = n > 0
        && offsets.get(0) == 0
        && (1..n).all(|i| offsets.get(i - 1) < offsets.get(i))
        && offsets.get(n - 1) < data_len;
    if ok {
        Ok(())
    } else {
        Err(format!(
            "row offsets are not increasing within {data_len} data bytes"
        ))
    }
}

/// The rows of a [`SegmentBatch`]: borrowed from the map, or decompressed.
#[derive(Debug, Clone)]
enum Bytes<'a> {
    Mapped { data: &'a [u8], offsets: &'a [u8] },
    Unpacked { buf: Arc<RowBuf>, data_len: usize },
}

/// A batch of a mapped segment: schema, first ID and its rows, zero-copy from the map when
/// the batch is stored uncompressed, else decompressed into memory it owns.
#[derive(Debug, Clone)]
pub struct SegmentBatch<'a> {
    schema: &'a SchemaRef,
    first_id: u64,
    ts: Option<(i64, i64)>,
    rows: usize,
    codec: Codec,
    bytes: Bytes<'a>,
}

impl<'a> SegmentBatch<'a> {
    /// The schema shared by the rows (one `Arc` per segment and schema).
    pub fn schema(&self) -> &'a SchemaRef {
        self.schema
    }

    /// ID of the first event.
    pub fn first_id(&self) -> u64 {
        self.first_id
    }

    /// The event IDs covered.
    pub fn id_range(&self) -> Range<u64> {
        self.first_id..self.first_id + self.rows as u64
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether the batch is empty (never, for a verified segment).
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Range of the `ts` field.
    pub fn ts_range(&self) -> Option<(i64, i64)> {
        self.ts
    }

    /// How the batch is stored in the segment.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// The encoded rows, back to back.
    pub fn data(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped { data, .. } => data,
            Bytes::Unpacked { buf, data_len } => &buf[..*data_len],
        }
    }

    /// The row offsets.
    pub fn offsets(&self) -> OffsetsRef<'_> {
        match &self.bytes {
            Bytes::Mapped { offsets, .. } => OffsetsRef::U32Le(offsets),
            Bytes::Unpacked { buf, data_len } => OffsetsRef::U32Le(&buf[*data_len..]),
        }
    }

    /// The decompressed rows and offsets of a compressed batch, and the length of the rows
    /// (for a reader that keeps them beyond this borrow).
    pub(crate) fn unpacked(&self) -> Option<(Arc<RowBuf>, usize)> {
        match &self.bytes {
            Bytes::Mapped { .. } => None,
            Bytes::Unpacked { buf, data_len } => Some((buf.clone(), *data_len)),
        }
    }

    /// The encoded rows, each one msgpack array (borrowed from the map when uncompressed).
    pub fn rows(&self) -> RowIter<'_> {
        RowIter::new(self.data(), self.offsets(), 0..self.rows)
    }

    /// Row `i`, if it exists.
    pub fn row(&self, i: usize) -> Option<&[u8]> {
        (i < self.rows).then(|| self.rows().nth(i)).flatten()
    }

    /// Copies the batch into an owned [`Batch`] (with its ID set).
    pub fn to_batch(&self) -> Batch {
        let offsets = (0..self.rows).map(|i| self.offsets().get(i)).collect();
        // Verified: offsets are increasing and inside data.
        let mut b = Batch::from_parts(self.schema.clone(), self.data().to_vec(), offsets, self.ts)
            .unwrap_or_else(|| crate::batch::BatchBuilder::new(self.schema.clone()).finish());
        b.set_id(self.first_id);
        b
    }
}

/// Iterator over encoded rows (`&[u8]`, one msgpack array each), zero-copy.
#[derive(Debug, Clone)]
pub struct RowIter<'a> {
    data: &'a [u8],
    offsets: OffsetsRef<'a>,
    next: usize,
    end: usize,
}

impl<'a> RowIter<'a> {
    /// Rows `rows` of `data` split at `offsets`.
    pub fn new(data: &'a [u8], offsets: OffsetsRef<'a>, rows: Range<usize>) -> RowIter<'a> {
        let end = rows.end.min(offsets.len());
        RowIter {
            data,
            offsets,
            next: rows.start.min(end),
            end,
        }
    }

    fn bounds(&self, i: usize) -> Range<usize> {
        let start = self.offsets.get(i);
        let end = if i + 1 < self.offsets.len() {
            self.offsets.get(i + 1)
        } else {
            self.data.len()
        };
        start.min(self.data.len())..end.min(self.data.len()).max(start.min(self.data.len()))
    }
}

impl<'a> Iterator for RowIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.next >= self.end {
            return None;
        }
        let r = self.bounds(self.next);
        self.next += 1;
        Some(&self.data[r])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }

    fn nth(&mut self, n: usize) -> Option<&'a [u8]> {
        self.next = self.next.saturating_add(n).min(self.end);
        self.next()
    }
}

impl ExactSizeIterator for RowIter<'_> {}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::batch::BatchBuilder;
    use crate::segment::SegmentBuilder;

    /// A format 9 segment of one batch in columns: a time, a string and a count per row.
    fn segment(dir: &Path) -> PathBuf {
        let schema = Schema::new(
            "zeek.t",
            vec![
                Field::new("ts", Type::Time),
                Field::new("s", Type::String),
                Field::new("n", Type::Count),
            ],
        )
        .into_shared();
        let mut bb = BatchBuilder::new(schema);
        for i in 0..500u64 {
            let mut e = bb.begin_row();
            e.int(1_000_000 * i as i64);
            e.bytes(format!("value {} {}", i * 7919 % 1000, "x".repeat(i as usize % 9)).as_bytes());
            e.uint(i * i % 4099);
            bb.finish_row(Some(1_000_000 * i as i64));
        }
        let batch = bb.finish();
        let mut builder = SegmentBuilder::new(1 << 20).unwrap();
        builder.add(&batch).unwrap();
        let (_, bytes) = builder.finish(uuid::Uuid::nil()).unwrap();
        let path = dir.join("one.seg");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// Where column `c`'s stored bytes and the header are in the file.
    fn places(path: &Path) -> (Range<usize>, Vec<Range<usize>>) {
        let seg = Segment::open(path).unwrap();
        let m = &seg.parts.batches[0];
        assert_eq!(
            (seg.version(), m.layout),
            (crate::segment::FORMAT_VERSION, Layout::Columns)
        );
        let data = &seg.map[m.data.clone()];
        let header = super::super::columns::header(data, m.raw_size, m.rows as usize).unwrap();
        assert!(header.checksummed);
        let mut cols = Vec::new();
        let mut at = m.data.start + header.len;
        for c in 0..3 {
            let len = header.stored_len(c);
            cols.push(at..at + len);
            at += len;
        }
        assert_eq!(at, m.data.end);
        (m.data.start..m.data.start + header.len, cols)
    }

    /// Format 9: damage to a column is found when that column is read (and by
    /// `verify_all`, which reads them all), naming the file, batch and column; a reader of
    /// another column reads it as written. Damage to the header is found at the first access.
    #[test]
    fn each_column_is_checked_when_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = segment(dir.path());
        let want_all = Segment::open(&path)
            .unwrap()
            .batch_columns(0)
            .unwrap()
            .unwrap();
        let (header, cols) = places(&path);
        let clean = std::fs::read(&path).unwrap();
        for (damaged, r) in cols.iter().enumerate() {
            let mut bytes = clean.clone();
            bytes[r.start + r.len() / 2] ^= 0x10;
            std::fs::write(&path, &bytes).unwrap();
            let seg = Segment::open(&path).unwrap();
            for read in 0..3 {
                let want: Vec<bool> = (0..3).map(|c| c == read).collect();
                let got = seg.batch_columns_of(0, Some(&want), None).unwrap();
                if read == damaged {
                    let msg = got.unwrap_err().to_string();
                    assert!(msg.contains(&path.display().to_string()), "{msg}");
                    assert!(
                        msg.contains(&format!("batch 0: column {read}: checksum mismatch")),
                        "{msg}"
                    );
                } else {
                    assert_eq!(got.unwrap().column(read), want_all.column(read));
                }
            }
            assert!(seg.verify_all().unwrap_err().is_corruption());
        }
        // The header: any byte of it.
        for i in header {
            let mut bytes = clean.clone();
            bytes[i] ^= 0x01;
            std::fs::write(&path, &bytes).unwrap();
            let seg = Segment::open(&path).unwrap();
            let err = seg.batch_columns_of(0, Some(&[true, false, false]), None);
            assert!(err.unwrap().is_err(), "header byte {i}");
        }
    }
}
