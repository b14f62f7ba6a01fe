//! Preparing a batch for a segment: compressing its rows (`codec.rs`) and building its sketch
//! (`sketch.rs`), the costly part of adding a batch, done apart from the [`SegmentBuilder`] so
//! that it can run on any thread while the builder lays out earlier batches.
//!
//! The rows are split into columns once (`columns.rs`; a columnar batch, see [`Batch`], comes
//! with them), and the string and address columns
//! whose values repeat are encoded as dictionaries once (`dict.rs`): the packer stores those
//! encodings and the sketch reads each dictionary's distinct values, so neither walks such a
//! column twice.
//!
//! A [`PreparedBatch`] belongs to the batch it was prepared from: [`SegmentBuilder::add_prepared`]
//! checks that its row count and byte size match the batch it is added with, and prepares the
//! batch again when they do not (a batch split at a segment's end) or when its sketch does not
//! agree with the builder's setting, so a mismatch costs time, never a wrong segment.
//!
//! [`SegmentBuilder`]: super::SegmentBuilder
//! [`SegmentBuilder::add_prepared`]: super::SegmentBuilder::add_prepared

use super::codec::{Packer, SplitRows};
use super::compress::{Codec, Compression, Layout};
use super::sketch::{Sketch, SketchBuilder};
use crate::batch::Batch;

/// Batches of at least this many bytes of rows are sketched on a second thread while they are
/// compressed (when the preparer is allowed to, see [`Preparer::set_split`]).
const PARALLEL_SKETCH_MIN: usize = 64 << 10;

/// The largest Bloom filter of a batch of `data_len` bytes of rows: 2 bits per byte of rows
/// (every value takes at least 2 bytes, so this caps the filter only for batches of tiny
/// distinct strings, where it is less precise), plus one 64-bit word.
pub(crate) fn max_bloom_bytes(data_len: usize) -> usize {
    data_len / 4 + 8
}

/// A batch ready to be laid into a segment: its stored bytes (when compressed) and its sketch.
#[derive(Debug, Clone)]
pub struct PreparedBatch {
    /// The stored bytes and the raw length they inflate to, with their codec; `None`: the batch
    /// is stored as its rows and u32 offsets.
    pub(crate) packed: Option<(Codec, Layout, Vec<u8>, usize)>,
    /// The sketch (`None`: sketches off, or a row did not decode).
    pub(crate) sketch: Option<Sketch>,
    /// Whether sketches were on when it was prepared.
    pub(crate) sketched: bool,
    /// Rows and bytes of the batch it was prepared from.
    pub(crate) rows: usize,
    pub(crate) bytes: usize,
}

impl PreparedBatch {
    /// Whether this was prepared from `batch` (same row count and byte size).
    pub(crate) fn is_for(&self, batch: &Batch) -> bool {
        self.rows == batch.len() && self.bytes == batch.byte_size()
    }

    /// The batch's sketch (`None`: sketches off, or a row did not decode).
    pub fn sketch(&self) -> Option<&Sketch> {
        self.sketch.as_ref()
    }

    /// Bytes the stored rows take (compressed, or the rows themselves).
    pub fn stored_len(&self) -> usize {
        self.packed
            .as_ref()
            .map_or(self.bytes, |(_, _, s, _)| s.len())
    }
}

/// Prepares batches (see the module docs); keeps its compression context and buffers between
/// batches. One per thread.
#[derive(Debug)]
pub struct Preparer {
    packer: Packer,
    sketcher: Option<SketchBuilder>,
    scratch: Vec<u32>,
    /// The columns of the batch being prepared (`columns.rs`).
    cols: Vec<Vec<u8>>,
    /// How each of its columns may be stored (`planes::plan`).
    plans: Vec<Option<bool>>,
    /// Which of its columns may be marked (`marked::plan`).
    marked: Vec<bool>,
    /// Which of its columns may be cut into blocks (`blocks::plan`).
    blocked: Vec<Option<u8>>,
    /// Its columns encoded as dictionaries (`dict.rs`; empty: not one), and their encoder.
    dicts: Vec<Vec<u8>>,
    dict: super::dict::Encoder,
    split: bool,
}

impl Default for Preparer {
    fn default() -> Preparer {
        Preparer::new(Compression::default(), true)
    }
}

impl Preparer {
    /// A preparer compressing with `compression`, building sketches when `sketches`.
    pub fn new(compression: Compression, sketches: bool) -> Preparer {
        Preparer {
            packer: Packer::new(compression),
            sketcher: sketches.then(SketchBuilder::default),
            scratch: Vec::new(),
            cols: Vec::new(),
            plans: Vec::new(),
            marked: Vec::new(),
            blocked: Vec::new(),
            dicts: Vec::new(),
            dict: super::dict::Encoder::default(),
            split: true,
        }
    }

    /// How batches are compressed.
    pub fn compression(&self) -> Compression {
        self.packer.compression()
    }

    /// Whether batches get sketches.
    pub fn sketches(&self) -> bool {
        self.sketcher.is_some()
    }

    /// Whether a large batch's sketch may be built on a second thread while the batch is
    /// compressed (default: yes). Turn it off where preparers already run on every core.
    pub fn set_split(&mut self, split: bool) {
        self.split = split;
    }

    /// Compresses `batch`'s rows and builds its sketch.
    pub fn prepare(&mut self, batch: &Batch) -> PreparedBatch {
        self.scratch.clear();
        self.scratch
            .extend(batch.offsets().iter().map(|&o| o as u32));
        // A batch whose rows do not decode gets no sketch (queries then read it); the store
        // never writes one, and `weir verify` names it.
        let codec = self.packer.compression().codec;
        let max_bloom = max_bloom_bytes(batch.byte_size());
        let split = self.split;
        // One walk splits the rows into columns (when they fit the column layout, and are to be
        // compressed or sketched); the sketch is then built from the columns, a field at a
        // time (the one way sketches are built). A columnar batch comes with its columns (the
        // reader wrote them), the others are split. Rows that do not split get no sketch.
        let fields = batch.schema().fields.len();
        let cols = match batch.columns() {
            Some(cols) if cols.len() == fields => Some(cols),
            _ if codec == Codec::None && self.sketcher.is_none() => None,
            _ => super::columns::split(batch.data(), &self.scratch, fields, &mut self.cols)
                .then_some(&self.cols[..]),
        };
        // Stored in columns: only when compressed (`Codec::None` keeps the row layout).
        let columnar = codec != Codec::None && cols.is_some();
        self.plans.clear();
        self.plans.extend(
            batch
                .schema()
                .fields
                .iter()
                .map(|f| super::planes::plan(&f.ty)),
        );
        let plans = &self.plans[..];
        self.marked.clear();
        self.marked.extend(
            batch
                .schema()
                .fields
                .iter()
                .map(|f| super::marked::plan(&f.ty)),
        );
        let marked = &self.marked[..];
        self.blocked.clear();
        self.blocked.extend(
            batch
                .schema()
                .fields
                .iter()
                .map(|f| super::blocks::plan(&f.ty)),
        );
        let blocked = &self.blocked[..];
        // The string and address columns with few distinct values, as dictionaries: made once
        // here, stored by the packer and read by the sketch (which then hashes each distinct
        // value once instead of walking the column).
        if columnar {
            let schema = batch.schema();
            let wanted = |c: usize| super::dict::plan(&schema.fields[c].ty);
            self.dict
                .encode_all(cols.unwrap_or(&[]), batch.len(), wanted, &mut self.dicts);
        }
        let dicts = if columnar { &self.dicts[..] } else { &[] };
        let (sketcher, packer, scratch) = (&mut self.sketcher, &mut self.packer, &self.scratch);
        let build = |sk: &mut SketchBuilder| {
            let stats = batch.column_stats().filter(|s| s.rows == batch.len());
            sk.build_columns(batch.schema(), cols?, dicts, max_bloom, stats)
                .ok()
        };
        let pack = |packer: &mut Packer| {
            let split = cols.filter(|_| columnar).map(|cols| SplitRows {
                cols,
                planes: plans,
                marked,
                dicts,
                blocked,
            });
            let (layout, raw) = packer
                .pack_split(batch.byte_size(), || batch.data(), scratch, split)
                .map(|(layout, _, raw)| (layout, raw))?;
            Some((codec, layout, packer.take_packed(), raw))
        };
        let (sketch, packed) = match sketcher {
            Some(sk)
                if split && codec != Codec::None && batch.byte_size() >= PARALLEL_SKETCH_MIN =>
            {
                std::thread::scope(|scope| {
                    let sketch = scope.spawn(|| build(sk));
                    let packed = pack(packer);
                    (sketch.join().ok().flatten(), packed)
                })
            }
            Some(sk) => (build(sk), pack(packer)),
            None => (None, pack(packer)),
        };
        PreparedBatch {
            packed,
            sketch,
            sketched: self.sketcher.is_some(),
            rows: batch.len(),
            bytes: batch.byte_size(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::batch::BatchBuilder;
    use crate::types::{Field, Schema, Type};

    /// A batch gets the same sketch (built from its columns, the one way sketches are built)
    /// whether it is stored compressed in columns or as its rows (`Codec::None`), and none
    /// with sketches off.
    #[test]
    fn every_codec_gets_the_sketch_of_the_columns() {
        let schema = Schema::new(
            "zeek.t",
            vec![
                Field::new("n", Type::Count),
                Field::new("s", Type::String),
                Field::new("ts", Type::Time),
            ],
        )
        .into_shared();
        let mut bb = BatchBuilder::new(schema);
        for i in 0..300u64 {
            let mut e = bb.begin_row();
            e.uint(i * 7);
            e.bytes(format!("v{}", i % 40).as_bytes());
            e.int(i as i64 * 1_000_000_000);
            bb.finish_row(None);
        }
        let batch = bb.finish();
        let compressed = Preparer::new(Compression::default(), true).prepare(&batch);
        let rows = Preparer::new(Compression::NONE, true).prepare(&batch);
        assert!(compressed.packed.is_some() && rows.packed.is_none());
        let (a, b) = (compressed.sketch().unwrap(), rows.sketch().unwrap());
        assert_eq!((&a.ranges, &a.present), (&b.ranges, &b.present));
        assert_eq!(a.ranges.len(), 2, "n and ts");
        assert!(a.times.is_some() && b.times.is_some());
        assert!(Preparer::new(Compression::NONE, false)
            .prepare(&batch)
            .sketch()
            .is_none());
    }
}
