//! The metadata checksum of format version 2: CRC-32 (IEEE, crc32fast) over a canonical
//! encoding of every field of a segment that carries meaning besides the rows (see the
//! module docs of [`crate::segment`] for the exact byte order). The writer and the reader
//! both encode through this module, so they cannot disagree.

/// The segment format version that [`crate::segment::SegmentBuilder`] writes.
pub const FORMAT_VERSION: u32 = 2;

/// Fields of `SegmentV1`: a `SegmentV1` table whose vtable has more is a damaged version 2
/// table (or not a weir segment).
pub(crate) const V1_FIELDS: usize = 5;

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
        self.u32(schema);
        self.u64(first_id);
        self.u32(rows);
        match ts {
            None => self.0.update(&[0]),
            Some((min, max)) => {
                self.0.update(&[1]);
                self.0.update(&min.to_le_bytes());
                self.0.update(&max.to_le_bytes());
            }
        }
        self.u32(checksum);
    }

    /// Appends what `next` hashed (CRC-32 combination: as if its bytes had been fed here).
    pub(crate) fn append(&mut self, next: &MetaHasher) {
        self.0.combine(&next.0);
    }

    pub(crate) fn finish(self) -> u32 {
        self.0.finalize()
    }
}
