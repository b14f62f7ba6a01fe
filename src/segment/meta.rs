//! The metadata checksum of format versions 2 to 4: CRC-32 (IEEE, crc32fast) over a canonical
//! encoding of every field of a segment that carries meaning besides the rows (see the
//! module docs of [`crate::segment`] for the exact byte order). The writer and the reader
//! both encode through this module, so they cannot disagree.

/// The segment format version that [`crate::segment::SegmentBuilder`] writes.
pub const FORMAT_VERSION: u32 = 12;

/// Fields of `SegmentV1`: a `SegmentV1` table whose vtable has more is a damaged version 2
/// table (or not a weir segment).
pub(crate) const V1_FIELDS: usize = 5;

/// A sketch as the metadata checksum encodes it: probes, Bloom filter, and the ranges as
/// (field, kind, lo, hi).
pub(crate) type SketchMeta<'a> = (
    u8,
    &'a [u8],
    &'a mut dyn ExactSizeIterator<Item = (u32, u8, u64, u64)>,
);

/// Feeds the canonical encoding of a segment's metadata to a CRC-32.
#[derive(Clone, Default)]
pub(crate) struct MetaHasher(crc32fast::Hasher);

impl MetaHasher {
    pub(crate) fn new() -> MetaHasher {
        MetaHasher::default()
    }

    fn u32(&mut self, v: u32) {
        self.0.update(&v.to_le_bytes());
    }

    fn u64(&mut self, v: u64) {
        self.0.update(&v.to_le_bytes());
    }

    fn len(&mut self, n: usize) {
        // Every count and length in a segment fits in u32 (a FlatBuffer is below 2 GiB).
        self.u32(n as u32);
    }

    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.0.update(s.as_bytes());
    }

    /// The head: version, uuid, event count and the ID intervals.
    pub(crate) fn head(
        &mut self,
        version: u32,
        uuid: &[u8; 16],
        events: u64,
        intervals: impl ExactSizeIterator<Item = (u64, u64)>,
    ) {
        self.u32(version);
        self.0.update(uuid);
        self.u64(events);
        self.len(intervals.len());
        for (begin, end) in intervals {
            self.u64(begin);
            self.u64(end);
        }
    }

    /// The number of schemas (before the schemas).
    pub(crate) fn schema_count(&mut self, n: usize) {
        self.len(n);
    }

    /// One schema: its name and its fields' names and type strings, in order.
    pub(crate) fn schema<'s>(
        &mut self,
        name: &str,
        fields: impl ExactSizeIterator<Item = (&'s str, &'s str)>,
    ) {
        self.str(name);
        self.len(fields.len());
        for (name, ty) in fields {
            self.str(name);
            self.str(ty);
        }
    }

    /// The number of batches (after the schemas, before the batches).
    pub(crate) fn batch_count(&mut self, n: usize) {
        self.len(n);
    }

    /// One batch's header: schema index, first ID, rows, `ts` range and checksum.
    pub(crate) fn batch(
        &mut self,
        schema: u32,
        first_id: u64,
        rows: u32,
        ts: Option<(i64, i64)>,
        checksum: u32,
    ) {
        // One update of at most 37 bytes per batch.
        let mut buf = [0u8; 37];
        buf[..4].copy_from_slice(&schema.to_le_bytes());
        buf[4..12].copy_from_slice(&first_id.to_le_bytes());
        buf[12..16].copy_from_slice(&rows.to_le_bytes());
        let end = match ts {
            None => 17,
            Some((min, max)) => {
                buf[16] = 1;
                buf[17..25].copy_from_slice(&min.to_le_bytes());
                buf[25..33].copy_from_slice(&max.to_le_bytes());
                33
            }
        };
        buf[end..end + 4].copy_from_slice(&checksum.to_le_bytes());
        self.0.update(&buf[..end + 4]);
    }

    /// Formats 3 and 4: what follows a batch's header: `codec` as u8, `raw_size` as u32, then the
    /// sketch as one byte 0 (absent) or 1 followed by `bloom_hashes` as u8, the bloom as a
    /// byte string (u32 length and bytes), the number of ranges as u32 and per range `field`
    /// as u32, `kind` as u8, `lo` and `hi` as u64.
    pub(crate) fn batch_v3(&mut self, codec: u8, raw_size: u32, sketch: Option<SketchMeta<'_>>) {
        self.0.update(&[codec]);
        self.u32(raw_size);
        let Some((hashes, bloom, ranges)) = sketch else {
            self.0.update(&[0]);
            return;
        };
        self.0.update(&[1, hashes]);
        self.len(bloom.len());
        self.0.update(bloom);
        self.len(ranges.len());
        for (field, kind, lo, hi) in ranges {
            let mut buf = [0u8; 21];
            buf[..4].copy_from_slice(&field.to_le_bytes());
            buf[4] = kind;
            buf[5..13].copy_from_slice(&lo.to_le_bytes());
            buf[13..21].copy_from_slice(&hi.to_le_bytes());
            self.0.update(&buf);
        }
    }

    /// A format 4 sketch's `present` counts (after its [`MetaHasher::batch_v3`]): their number,
    /// then each as a little-endian u32.
    pub(crate) fn present(&mut self, present: &[u32]) {
        self.len(present.len());
        for n in present {
            self.u32(*n);
        }
    }

    /// A format 5 sketch's time histogram (after its `present` counts): one byte 0 (absent)
    /// or 1 followed by `field` as u32, `width` and `first` as i64, the number of counts as
    /// u32 and each count as u32.
    pub(crate) fn times(&mut self, times: Option<(u32, i64, i64, &[u32])>) {
        let Some((field, width, first, counts)) = times else {
            self.0.update(&[0]);
            return;
        };
        self.0.update(&[1]);
        self.u32(field);
        self.0.update(&width.to_le_bytes());
        self.0.update(&first.to_le_bytes());
        self.len(counts.len());
        for n in counts {
            self.u32(*n);
        }
    }

    /// Format 8: the encoded checkpoints (after the batches): one byte 0 (absent) or 1
    /// followed by them as a byte string (their length as u32, then the bytes).
    pub(crate) fn checkpoints(&mut self, b: Option<&[u8]>) {
        match b {
            None => self.0.update(&[0]),
            Some(b) => {
                self.0.update(&[1]);
                self.len(b.len());
                self.0.update(b);
            }
        }
    }

    /// Appends what `next` hashed (CRC-32 combination: as if its bytes had been fed here).
    pub(crate) fn append(&mut self, next: &MetaHasher) {
        self.0.combine(&next.0);
    }

    pub(crate) fn finish(self) -> u32 {
        self.0.finalize()
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use flatbuffers::VOffsetT;

    use super::super::generated as fbs;
    use super::super::{Segment, SegmentBuilder, SegmentError};
    use crate::batch::BatchBuilder;
    use crate::types::{Field, Schema, SchemaRef, Type};

    fn schema(name: &str, field: &str) -> SchemaRef {
        Schema::new(
            name,
            vec![
                Field::new("ts", Type::Time),
                Field::new(field, Type::String),
            ],
        )
        .into_shared()
    }

    /// A format 3 segment of three batches of two schemas (the second batch of the second),
    /// compressed (zstd) and with sketches.
    fn segment() -> Vec<u8> {
        let (a, b) = (schema("zeek.a", "orig_bytes"), schema("zeek.b", "query"));
        let mut builder = SegmentBuilder::new(1 << 20).unwrap();
        let mut id = 0;
        for (k, s) in [&a, &b, &a].into_iter().enumerate() {
            let mut bb = BatchBuilder::new(s.clone());
            for i in 0..3 + k {
                let mut e = bb.begin_row();
                e.int(1_000 * i as i64);
                e.bytes(format!("row {id} {i} {}", "x".repeat(60)).as_bytes());
                bb.finish_row(Some(1_000 * i as i64));
            }
            let mut batch = bb.finish();
            batch.set_id(id);
            id += batch.len() as u64;
            builder.add(&batch).unwrap();
        }
        let uuid = uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        builder.finish(uuid).unwrap().1.to_vec()
    }

    /// Position of `inner` (borrowed from `outer`) in `outer`.
    fn at(outer: &[u8], inner: &[u8]) -> usize {
        inner.as_ptr() as usize - outer.as_ptr() as usize
    }

    /// Position of the scalar field at vtable offset `vt` of `table` (`None` when it holds
    /// the default, which FlatBuffers does not store).
    fn scalar(table: &flatbuffers::Table<'_>, vt: VOffsetT) -> Option<usize> {
        let o = table.vtable().get(vt);
        (o != 0).then(|| table.loc() + o as usize)
    }

    /// Every byte that carries meaning outside the rows, by name: (what, position).
    fn fields(buf: &[u8]) -> Vec<(String, usize)> {
        let root = fbs::size_prefixed_root_as_segment(buf).unwrap();
        let seg = root.segment_as_segment_v12().unwrap();
        let mut out = vec![("uuid".to_string(), at(buf, &seg.uuid().0) + 7)];
        let mut extra = Vec::new();
        let mut push = |what: &str, table: &flatbuffers::Table<'_>, vt, plus| {
            if let Some(i) = scalar(table, vt) {
                out.push((what.to_string(), i + plus));
            }
        };
        push("segment type", &root._tab, fbs::Segment::VT_SEGMENT_TYPE, 0);
        push("events", &seg._tab, fbs::SegmentV8::VT_EVENTS, 0);
        push(
            "meta_checksum",
            &seg._tab,
            fbs::SegmentV8::VT_META_CHECKSUM,
            2,
        );
        for (i, b) in seg.batches().iter().enumerate() {
            let t = &b._tab;
            push(&format!("batch {i} schema"), t, fbs::Batch::VT_SCHEMA, 0);
            push(
                &format!("batch {i} first_id"),
                t,
                fbs::Batch::VT_FIRST_ID,
                0,
            );
            push(&format!("batch {i} rows"), t, fbs::Batch::VT_ROWS, 0);
            push(
                &format!("batch {i} checksum"),
                t,
                fbs::Batch::VT_CHECKSUM,
                0,
            );
            push(&format!("batch {i} codec"), t, fbs::Batch::VT_CODEC, 0);
            push(
                &format!("batch {i} raw_size"),
                t,
                fbs::Batch::VT_RAW_SIZE,
                0,
            );
            let sk = b.sketch().unwrap();
            push(
                &format!("batch {i} bloom_hashes"),
                &sk._tab,
                fbs::Sketch::VT_BLOOM_HASHES,
                0,
            );
            extra.push((format!("batch {i} bloom"), at(buf, sk.bloom().bytes()) + 3));
            let ranges = sk.ranges();
            assert_eq!(ranges.len(), 1);
            extra.push((format!("batch {i} range lo"), at(buf, ranges.bytes()) + 8));
            if let Some(t) = sk.times() {
                push(
                    &format!("batch {i} times field"),
                    &t._tab,
                    fbs::TimeHistogram::VT_FIELD,
                    0,
                );
                push(
                    &format!("batch {i} times width"),
                    &t._tab,
                    fbs::TimeHistogram::VT_WIDTH,
                    1,
                );
                push(
                    &format!("batch {i} times first"),
                    &t._tab,
                    fbs::TimeHistogram::VT_FIRST,
                    0,
                );
                extra.push((
                    format!("batch {i} times count"),
                    at(buf, t.counts().bytes()),
                ));
            }
        }
        out.extend(extra);
        let intervals = seg.intervals().bytes();
        out.push(("interval begin".into(), at(buf, intervals)));
        out.push(("interval end".into(), at(buf, intervals) + 8));
        for (i, s) in seg.schemas().iter().enumerate() {
            out.push((format!("schema {i} name"), at(buf, s.name().as_bytes()) + 5));
            for (j, f) in s.fields().iter().enumerate() {
                out.push((
                    format!("schema {i} field {j} name"),
                    at(buf, f.name().as_bytes()),
                ));
                out.push((
                    format!("schema {i} field {j} type"),
                    at(buf, f.type_().as_bytes()),
                ));
            }
        }
        for (i, b) in seg.batches().iter().enumerate() {
            let ts = b.ts().unwrap() as *const fbs::TimeRange as usize - buf.as_ptr() as usize;
            out.push((format!("batch {i} ts min"), ts + 1));
            out.push((format!("batch {i} ts max"), ts + 9));
        }
        out
    }

    /// Opens `bytes` (with byte `i` xor `mask`) from a file in `dir` and reads every batch.
    fn open_damaged(dir: &Path, bytes: &[u8], i: usize, mask: u8) -> (PathBuf, SegmentError) {
        let mut bytes = bytes.to_vec();
        bytes[i] ^= mask;
        let path = dir.join("damaged.seg");
        std::fs::write(&path, &bytes).unwrap();
        let err = Segment::open(&path)
            .and_then(|s| s.verify_all())
            .expect_err("damage is detected");
        (path, err)
    }

    /// Each field that carries meaning, damaged by one bit: an error naming the file. Those
    /// that no structural check can notice name the metadata checksum.
    #[test]
    fn every_covered_field_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = segment();
        let fields = fields(&bytes);
        assert!(fields.len() > 30, "{fields:?}");
        let checksum_only = [
            "uuid",
            "meta_checksum",
            "schema 0 name",
            "schema 0 field 1 name",
            "schema 1 field 1 name",
            "batch 1 schema", // 1 -> 0: a valid index, the wrong schema
            "batch 0 ts min",
            "batch 2 ts max",
            "batch 1 checksum", // without it, found only when the batch is read
            "batch 0 raw_size",
            "batch 0 bloom_hashes",
            "batch 1 bloom",
            "batch 2 range lo",
        ];
        for (what, i) in &fields {
            let (path, err) = open_damaged(dir.path(), &bytes, *i, 0x01);
            let msg = err.to_string();
            assert!(err.is_corruption(), "{what}: {msg}");
            assert!(msg.contains(&path.display().to_string()), "{what}: {msg}");
            if checksum_only.contains(&what.as_str()) {
                assert!(msg.contains("metadata checksum mismatch"), "{what}: {msg}");
            }
        }
        for what in checksum_only {
            assert!(fields.iter().any(|(w, _)| w == what), "{what}");
        }
        // Without the checksum field (its vtable entry zeroed), the stored value reads as 0.
        let root = fbs::size_prefixed_root_as_segment(&bytes).unwrap();
        let seg = root.segment_as_segment_v12().unwrap();
        let vt = seg._tab.vtable();
        let slot = at(&bytes, vt.as_bytes()) + fbs::SegmentV8::VT_META_CHECKSUM as usize;
        let mut damaged = bytes.clone();
        damaged[slot] = 0;
        let (_, err) = open_damaged(dir.path(), &damaged, 0, 0);
        assert!(
            err.to_string().contains("metadata checksum mismatch"),
            "{err}"
        );
    }

    /// A format 3 segment whose type byte is damaged into 1 or 2 is not read as such (which
    /// would skip the metadata checksum or the batches' new fields).
    #[test]
    fn damaged_version_is_not_read_as_version_1() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = segment();
        let (_, i) = fields(&bytes)
            .into_iter()
            .find(|(w, _)| w == "segment type")
            .unwrap();
        assert_eq!(bytes[i], 12);
        let (path, err) = open_damaged(dir.path(), &bytes, i, 12 ^ 1);
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("says version 1"), "{msg}");
        // Read as version 2 to 11, the checksum (which encodes the version) fails, or the
        // table's extra field does not verify.
        for v in [2, 3, 4, 5, 6, 7, 8, 9, 10, 11] {
            let (_, err) = open_damaged(dir.path(), &bytes, i, 12 ^ v);
            assert!(err.is_corruption(), "{err}");
        }
        let (_, err) = open_damaged(dir.path(), &bytes, i, 12 ^ 13);
        assert!(
            err.to_string().contains("unsupported segment version 13"),
            "{err}"
        );
    }

    /// Writer and reader agree, and the checksum is the documented encoding.
    #[test]
    fn checksum_is_the_documented_encoding() {
        let bytes = segment();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("good.seg");
        std::fs::write(&path, &bytes).unwrap();
        let seg = Segment::open(&path).unwrap();
        assert_eq!(seg.version(), super::FORMAT_VERSION);
        // By hand, from the documentation in `crate::segment`.
        let mut e = Vec::new();
        e.extend(12u32.to_le_bytes());
        e.extend(seg.uuid().as_bytes());
        e.extend(seg.events().to_le_bytes());
        e.extend(1u32.to_le_bytes());
        e.extend(0u64.to_le_bytes());
        e.extend(seg.events().to_le_bytes());
        e.extend(2u32.to_le_bytes());
        for s in seg.schemas() {
            e.extend((s.name.len() as u32).to_le_bytes());
            e.extend(s.name.as_bytes());
            e.extend((s.fields.len() as u32).to_le_bytes());
            for f in &s.fields {
                let ty = f.ty.to_string();
                for x in [f.name.as_str(), ty.as_str()] {
                    e.extend((x.len() as u32).to_le_bytes());
                    e.extend(x.as_bytes());
                }
            }
        }
        e.extend(3u32.to_le_bytes());
        let root = fbs::size_prefixed_root_as_segment(&bytes).unwrap();
        let v2 = root.segment_as_segment_v12().unwrap();
        for b in v2.batches().iter() {
            e.extend(b.schema().to_le_bytes());
            e.extend(b.first_id().to_le_bytes());
            e.extend(b.rows().to_le_bytes());
            let ts = b.ts().unwrap();
            e.push(1);
            e.extend(ts.min().to_le_bytes());
            e.extend(ts.max().to_le_bytes());
            e.extend(b.checksum().to_le_bytes());
            e.push(b.codec().0);
            e.extend(b.raw_size().to_le_bytes());
            let sk = b.sketch().unwrap();
            e.extend([1, sk.bloom_hashes()]);
            e.extend((sk.bloom().len() as u32).to_le_bytes());
            e.extend(sk.bloom().bytes());
            e.extend((sk.ranges().len() as u32).to_le_bytes());
            for r in sk.ranges().iter() {
                e.extend(r.field().to_le_bytes());
                e.push(r.kind());
                e.extend(r.lo().to_le_bytes());
                e.extend(r.hi().to_le_bytes());
            }
            let present = sk.present().unwrap();
            assert_eq!(present.len(), sk.ranges().len());
            e.extend((present.len() as u32).to_le_bytes());
            for n in present.iter() {
                e.extend(n.to_le_bytes());
            }
            // Format 5: the time histogram.
            match sk.times() {
                None => e.push(0),
                Some(t) => {
                    e.push(1);
                    e.extend(t.field().to_le_bytes());
                    e.extend(t.width().to_le_bytes());
                    e.extend(t.first().to_le_bytes());
                    e.extend((t.counts().len() as u32).to_le_bytes());
                    for n in t.counts().iter() {
                        e.extend(n.to_le_bytes());
                    }
                }
            }
        }
        // Format 8: the checkpoints (none here: a count of 0) as a byte string.
        let cp = v2.checkpoints().unwrap().bytes();
        assert_eq!(cp, 0u32.to_le_bytes());
        e.push(1);
        e.extend((cp.len() as u32).to_le_bytes());
        e.extend(cp);
        assert!(
            v2.batches()
                .iter()
                .any(|b| b.sketch().unwrap().times().is_some()),
            "the test segment has a time histogram"
        );
        assert_eq!(v2.meta_checksum(), crc32fast::hash(&e));
    }
}
