//! Per-batch sketches (format 3): what a query may learn about a batch without reading its rows.
//!
//! # Format
//!
//! A batch's `sketch` (`schemas/segment.fbs`) holds:
//!
//! - **`bloom`**, a Bloom filter over the distinct string-like (`string`, `enum`, `pattern`,
//!   `file`) and address values of the batch, of top-level fields and container elements
//!   alike, whichever field they are in. A value's hash is [`value_hash`] of a tag (`s` for a
//!   string, `a` for an address) and the value's bytes (a string's raw bytes; an address's 4 or
//!   16 bytes in network order, as the row stores it): starting from
//!   `h = 0x9e3779b97f4a7c15 ^ tag ^ (len << 8)`, for each 8 bytes of the value (the last ones
//!   padded with zeros) read as a little-endian u64 `w`,
//!   `h = rotate_left((h ^ w) * 0xff51afd7ed558ccd, 29)` (wrapping), then the MurmurHash3
//!   64-bit finalizer (fmix64). With `h1` the low and `h2` the high 32 bits of the hash
//!   (`h2` with its lowest bit set), probe `i` in `0..bloom_hashes` sets bit
//!   `((h1 + i * h2 mod 2^32) * m) >> 32` of the `m = 8 * bloom.len()` bits, where bit `j` is
//!   bit `j % 8` of byte `j / 8`. The writer sizes the filter for the batch's distinct values
//!   (estimated by linear counting) at [`BITS_PER_VALUE`] bits each with [`HASHES`] probes:
//!   about 1% false positives, duplicates costing nothing.
//! - **`ranges`**: per scalar numeric or time field (`count`, `port`, `int`, `double`, `time`,
//!   `interval`) with a value in the batch, the minimum and maximum value (NaN ignored), as
//!   the bits of an i64 (kind 0: `int`, `time`, `interval`), a u64 (kind 1: `count`, `port`)
//!   or an f64 (kind 2: `double`).
//! - **`present`** (format 4): per entry of `ranges`, the number of rows whose value of that
//!   field is set (a NaN counts as set). When it equals the batch's rows, every row has a value
//!   in the range, so a comparison the whole range satisfies holds for every row and a count
//!   can take the batch's row count without reading it.
//!
//! - **`times`** (format 5): for a batch whose schema has a `ts` field of type `time` with a
//!   value in the batch, a histogram of those values ([`TimeHistogram`]): the width of its
//!   buckets is the smallest of [`TIME_WIDTHS`] (1 s, 10 s, 1 min, 10 min, 1 h, 1 day) that
//!   covers the batch's `ts` range in at most [`MAX_TIME_BUCKETS`] buckets aligned to
//!   multiples of the width since the epoch (none when a day does not), and each bucket holds
//!   the number of rows whose `ts` falls in it. A count of a time range whose ends fall on
//!   bucket edges (whole hours, minutes, ...) or outside the batch's range is the sum of
//!   buckets, without reading the batch.
//!
//! # Invariants
//!
//! - Every string-like or address value of a batch is in its filter, and every numeric value
//!   lies in its field's range: a sketch can say "no row has this value" but never hides one.
//! - A time histogram's buckets add up to the rows with a `ts`, and each row is counted in
//!   the bucket its `ts` falls in.
//! - A sketch is covered by the segment's metadata checksum, so a query can trust it without
//!   verifying the batch's rows.

use super::bloom::{bloom_insert, le_short, le_u64};
pub use super::bloom::{bloom_may_contain, value_hash, TAG_ADDR, TAG_STRING};
use crate::batch::{ColumnStats, StatKind};
use crate::types::{SchemaRef, Type};
use crate::value::{DecodeError, RowCursor, ValueRef};

/// Bloom filter bits per distinct value.
pub const BITS_PER_VALUE: usize = 10;
/// Bloom filter probes per value (with [`BITS_PER_VALUE`]: about 0.9% false positives; 7 would
/// give 0.8% for 40% more work at import).
pub const HASHES: u8 = 5;

/// The widths a time histogram's buckets may have, in nanoseconds, narrowest first: each
/// divides the next, so an edge of a wider bucket is an edge of every narrower one.
pub const TIME_WIDTHS: [i64; 6] = [
    1_000_000_000,
    10_000_000_000,
    60_000_000_000,
    600_000_000_000,
    3_600_000_000_000,
    86_400_000_000_000,
];

/// Buckets of a time histogram at most.
pub const MAX_TIME_BUCKETS: usize = 256;

/// A batch's time histogram (format 5; see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimeHistogram {
    /// The `ts` field's index in the schema.
    pub field: u32,
    /// Bucket width in nanoseconds (one of [`TIME_WIDTHS`]).
    pub width: i64,
    /// The first bucket's index: bucket k covers `[(first + k) * width, (first + k + 1) *
    /// width)`.
    pub first: i64,
    /// Rows per bucket.
    pub counts: Vec<u32>,
}

impl TimeHistogram {
    /// The histogram of the times `ts` (nanoseconds since the epoch), whose smallest and largest
    /// are `lo` and `hi`, of field `field`: `None` when a day's buckets cannot cover them.
    fn of(field: u32, lo: i64, hi: i64, ts: &[i64]) -> Option<TimeHistogram> {
        let width = TIME_WIDTHS.into_iter().find(|&w| {
            let buckets = hi.div_euclid(w) as i128 - lo.div_euclid(w) as i128 + 1;
            buckets <= MAX_TIME_BUCKETS as i128
        })?;
        let first = lo.div_euclid(width);
        let n = (hi.div_euclid(width) - first + 1) as usize;
        let mut counts = vec![0u32; n];
        // The bucket of the previous time, `[start, end]`: logs are written in time order, so
        // most times fall in it and cost two comparisons instead of a division.
        let (mut start, mut end, mut k) = (1i64, 0i64, 0usize);
        for &t in ts {
            if t < start || t > end {
                let b = t.div_euclid(width);
                start = b * width;
                end = start.saturating_add(width - 1);
                k = (b - first) as usize;
            }
            if let Some(c) = counts.get_mut(k) {
                *c += 1;
            }
        }
        Some(TimeHistogram {
            field,
            width,
            first,
            counts,
        })
    }

    /// This histogram as a sketch gives it.
    pub fn as_ref(&self) -> TimesRef<'_> {
        TimesRef {
            field: self.field,
            width: self.width,
            first: self.first,
            counts: Counts::Decoded(&self.counts),
        }
    }
}

/// A batch's time histogram as its sketch gives it ([`SketchRef::times`]): its counts
/// decoded, or, for a segment opened from its index file, the index's record of them
/// (`index.rs`), read when asked for, so that an open segment keeps no copy of them.
#[derive(Debug, Clone, Copy)]
pub struct TimesRef<'a> {
    /// The `ts` field's index in the schema.
    pub field: u32,
    /// Bucket width in nanoseconds (one of [`TIME_WIDTHS`]).
    pub width: i64,
    /// The first bucket's index: bucket k covers `[(first + k) * width, (first + k + 1) *
    /// width)`.
    pub first: i64,
    counts: Counts<'a>,
}

/// [`TimesRef`]'s counts.
#[derive(Debug, Clone, Copy)]
enum Counts<'a> {
    Decoded(&'a [u32]),
    /// Little-endian u32s (checked when the index was opened).
    Records(&'a [u8]),
}

impl<'a> TimesRef<'a> {
    /// The histogram of an index record: `counts` holds the buckets' counts as
    /// little-endian u32s.
    pub(crate) fn of_record(field: u32, width: i64, first: i64, counts: &'a [u8]) -> Self {
        TimesRef {
            field,
            width,
            first,
            counts: Counts::Records(counts),
        }
    }

    /// How many buckets there are.
    pub fn len(&self) -> usize {
        match self.counts {
            Counts::Decoded(c) => c.len(),
            Counts::Records(b) => b.len() / 4,
        }
    }

    /// Whether there is no bucket (never in a stored histogram).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Rows per bucket.
    pub fn counts(&self) -> impl Iterator<Item = u32> + 'a {
        let (decoded, records) = match self.counts {
            Counts::Decoded(c) => (c, &[][..]),
            Counts::Records(b) => (&[][..], b),
        };
        let records = records
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        decoded.iter().copied().chain(records)
    }

    /// An owned copy.
    pub fn to_owned(&self) -> TimeHistogram {
        TimeHistogram {
            field: self.field,
            width: self.width,
            first: self.first,
            counts: self.counts().collect(),
        }
    }

    /// The rows whose `ts` lies in `lo..=hi`, when the histogram tells exactly: each bucket
    /// that holds rows, narrowed to the batch's `ts` range (`min..=max`), lies wholly inside
    /// or wholly outside `lo..=hi`. `None`: some bucket is cut by an end of the range.
    pub fn count_in(&self, lo: i128, hi: i128, min: i128, max: i128) -> Option<u64> {
        let mut n = 0u64;
        let width = self.width as i128;
        for (k, c) in self.counts().enumerate() {
            if c == 0 {
                continue;
            }
            let start = ((self.first as i128 + k as i128) * width).max(min);
            let end = ((self.first as i128 + k as i128 + 1) * width - 1).min(max);
            if end < lo || start > hi {
                continue;
            }
            if start < lo || end > hi {
                return None;
            }
            n += u64::from(c);
        }
        Some(n)
    }
}

impl PartialEq for TimesRef<'_> {
    fn eq(&self, other: &TimesRef<'_>) -> bool {
        (self.field, self.width, self.first) == (other.field, other.width, other.first)
            && self.counts().eq(other.counts())
    }
}

/// How a range's `lo` and `hi` are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeKind {
    /// i64: `int`, `time`, `interval`.
    Signed = 0,
    /// u64: `count`, `port`.
    Unsigned = 1,
    /// f64 bits: `double`.
    Real = 2,
}

impl RangeKind {
    /// The kind of a scalar field's range (`None`: the type has none).
    pub fn of(ty: &Type) -> Option<RangeKind> {
        match ty {
            Type::Int | Type::Time | Type::Interval => Some(RangeKind::Signed),
            Type::Count | Type::Port => Some(RangeKind::Unsigned),
            Type::Double => Some(RangeKind::Real),
            _ => None,
        }
    }
}

/// The range of one field: field index, kind, `lo` and `hi` bits.
pub type FieldRange = (u32, RangeKind, u64, u64);

/// A batch's sketch, as built by the writer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sketch {
    /// The Bloom filter's bytes.
    pub bloom: Vec<u8>,
    /// Probes per value.
    pub hashes: u8,
    /// The numeric fields' ranges, ascending by field.
    pub ranges: Vec<FieldRange>,
    /// Per range, the rows whose value of its field is set.
    pub present: Vec<u32>,
    /// The `ts` field's time histogram (format 5), if the batch has one.
    pub times: Option<TimeHistogram>,
}

/// Where a [`SketchRef`]'s Bloom filter is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Bloom<'a> {
    /// Its bytes (a sketch being built, in the tests).
    #[cfg(test)]
    Bytes(&'a [u8]),
    /// Bytes `range` of `file` (a segment's), read at each probe: a filter probed through
    /// the segment's map faulted in the pages around each probe, about three faults and 48
    /// pages mapped per batch, for a few bits (W1000 `uid == "nope"`: 22 ms, most of it
    /// faults); a read of its 10 KiB costs a small part of that. A filter that cannot be
    /// read may hold anything: the batch is then read, and its read reports the error.
    File {
        /// The segment's uuid: with `range`, which filter this is (segments are never
        /// modified and uuids never reused).
        segment: u128,
        file: &'a std::fs::File,
        range: &'a std::ops::Range<usize>,
    },
}

/// The last Bloom filter a thread read: its segment, where it starts, and its bytes. A
/// query probes a batch's filter once per value and form (an address in two fields: four
/// probes) before it moves on: read once, probed from here.
type LastBloom = Option<(u128, usize, Vec<u8>)>;

thread_local! {
    static BLOOM: std::cell::RefCell<LastBloom> = const { std::cell::RefCell::new(None) };
}

impl Bloom<'_> {
    fn may_contain(&self, k: u8, h: u64) -> bool {
        match *self {
            #[cfg(test)]
            Bloom::Bytes(b) => bloom_may_contain(b, k, h),
            Bloom::File {
                segment,
                file,
                range,
            } => BLOOM.with(|cell| {
                let mut last = cell.borrow_mut();
                let hit = matches!(&*last, Some((s, at, b))
                    if *s == segment && *at == range.start && b.len() == range.len());
                if !hit {
                    let mut buf = last.take().map(|(_, _, b)| b).unwrap_or_default();
                    buf.resize(range.len(), 0);
                    if crate::fs::read_exact_at(file, &mut buf, range.start as u64).is_err() {
                        return true;
                    }
                    *last = Some((segment, range.start, buf));
                }
                last.as_ref()
                    .is_none_or(|(_, _, b)| bloom_may_contain(b, k, h))
            }),
        }
    }

    /// Its bytes (`None`: they cannot be read).
    fn to_vec(self) -> Option<Vec<u8>> {
        match self {
            #[cfg(test)]
            Bloom::Bytes(b) => Some(b.to_vec()),
            Bloom::File { file, range, .. } => {
                let mut buf = vec![0; range.len()];
                crate::fs::read_exact_at(file, &mut buf, range.start as u64).ok()?;
                Some(buf)
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            #[cfg(test)]
            Bloom::Bytes(b) => b.len(),
            Bloom::File { range, .. } => range.len(),
        }
    }
}

/// A sketch borrowed from a segment.
#[derive(Debug, Clone, Copy)]
pub struct SketchRef<'a> {
    pub(crate) bloom: Bloom<'a>,
    pub(crate) hashes: u8,
    pub(crate) ranges: Ranges<'a>,
    pub(crate) times: Option<TimesRef<'a>>,
}

/// The field ranges of a batch's sketch: decoded (a segment opened by the verifier), or the
/// records of its segment's index file (`index.rs`), decoded one at a time when asked for,
/// so that a segment opened from its index keeps no copy of them (see [`RangeOf`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ranges<'a> {
    Decoded(&'a [RangeOf]),
    /// `count` records from the start of `bytes` (checked when the index was opened), of
    /// fields of `fields`.
    Records {
        bytes: &'a [u8],
        count: usize,
        fields: &'a [crate::types::Field],
    },
}

impl<'a> Ranges<'a> {
    /// Every range, in field order as stored.
    pub(crate) fn iter(self) -> impl Iterator<Item = RangeOf> + 'a {
        let (mut at, mut left) = (0, self.len());
        std::iter::from_fn(move || {
            left = left.checked_sub(1)?;
            match self {
                Ranges::Decoded(r) => {
                    at += 1;
                    r.get(at - 1).copied()
                }
                Ranges::Records { bytes, fields, .. } => {
                    let ((field, lo, hi, present), next) = read_range_record(bytes, at)?;
                    at = next;
                    let ty = &fields.get(field as usize)?.ty;
                    Some(RangeOf::new(field, ty, lo, hi, present))
                }
            }
        })
    }

    fn len(self) -> usize {
        match self {
            Ranges::Decoded(r) => r.len(),
            Ranges::Records { count, .. } => count,
        }
    }
}

/// A field range as an index file (`index.rs`) records it: the field, `lo` and `hi` as
/// stored, and the rows with a value (`None`: not recorded, format 3).
pub(crate) type RangeRecord = (u32, u64, u64, Option<u32>);

/// A field range of an index file (`index.rs`) read at `pos` of `bytes`: its field (u32),
/// `lo` and `hi` as stored (u64), and a flag with its `present` count (u32), all
/// little-endian; and the position after it. `None` when it runs past the end or its flag is
/// neither 0 nor 1.
#[inline]
pub(crate) fn read_range_record(bytes: &[u8], pos: usize) -> Option<(RangeRecord, usize)> {
    let u32_at = |at: usize| Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
    let (field, lo, hi) = (u32_at(pos)?, u64_at(pos + 4)?, u64_at(pos + 12)?);
    match bytes.get(pos + 20)? {
        0 => Some(((field, lo, hi, None), pos + 21)),
        1 => Some(((field, lo, hi, Some(u32_at(pos + 21)?)), pos + 25)),
        _ => None,
    }
}

/// One decoded range of a [`SketchRef`]: a field index and its minimum and maximum. Kept as
/// their stored bits and the type of value they are, in 32 bytes (as [`ValueRef`]s, 80): a
/// segment opened by the verifier holds one per ranged field of every batch (W1000: 21,769)
/// in fresh memory, each page of which a fresh process faults in. (One opened from its index
/// holds none: `Ranges::Records`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeOf {
    field: u32,
    /// The value type, [`range_value`]'s: `u8::MAX` for none.
    kind: u8,
    present: Option<u32>,
    lo: u64,
    hi: u64,
}

/// The value types of ranges, by [`RangeOf::kind`].
const RANGE_TYPES: [Type; 6] = [
    Type::Count,
    Type::Port,
    Type::Int,
    Type::Time,
    Type::Interval,
    Type::Double,
];

impl RangeOf {
    /// The range of field `field` (of type `ty`) from the stored bits of its minimum and
    /// maximum, and the rows that have a value (`None`: not recorded, format 3).
    pub(crate) fn new(field: u32, ty: &Type, lo: u64, hi: u64, present: Option<u32>) -> RangeOf {
        let kind = RANGE_TYPES
            .iter()
            .position(|t| t == ty)
            .map_or(u8::MAX, |k| k as u8);
        RangeOf {
            field,
            kind,
            present,
            lo,
            hi,
        }
    }

    /// The field index in the batch's schema.
    pub fn field(&self) -> u32 {
        self.field
    }

    /// The smallest value.
    pub fn lo(&self) -> ValueRef<'static> {
        self.value(self.lo)
    }

    /// The largest value.
    pub fn hi(&self) -> ValueRef<'static> {
        self.value(self.hi)
    }

    /// Rows whose value of the field is set (`None`: not recorded, format 3).
    pub fn present(&self) -> Option<u32> {
        self.present
    }

    /// The stored bits of the smallest and largest values.
    pub(crate) fn bits(&self) -> (u64, u64) {
        (self.lo, self.hi)
    }

    fn value(&self, bits: u64) -> ValueRef<'static> {
        RANGE_TYPES
            .get(usize::from(self.kind))
            .map_or(ValueRef::Null, |ty| range_value(ty, bits))
    }
}

impl PartialEq for SketchRef<'_> {
    /// The same probes, ranges and histogram, and filters of the same bytes.
    fn eq(&self, other: &SketchRef<'_>) -> bool {
        self.hashes == other.hashes
            && self.ranges.iter().eq(other.ranges.iter())
            && self.times == other.times
            && self.bloom.to_vec() == other.bloom.to_vec()
    }
}

impl<'a> SketchRef<'a> {
    /// Whether some row may hold the string-like or address value hashed by
    /// [`value_hash`] (false positives possible, false negatives not).
    pub fn may_contain(&self, h: u64) -> bool {
        self.bloom.may_contain(self.hashes, h)
    }

    /// The range of field `field`, or `None` when no row has a value there (or the field has
    /// no range).
    pub fn range(&self, field: usize) -> Option<RangeOf> {
        self.ranges.iter().find(|r| r.field as usize == field)
    }

    /// Bytes of the Bloom filter.
    pub fn bloom_bytes(&self) -> usize {
        self.bloom.len()
    }

    /// Number of fields with a range.
    pub fn range_count(&self) -> usize {
        self.ranges.len()
    }

    /// The batch's time histogram (format 5), if it has one.
    pub fn times(&self) -> Option<TimesRef<'a>> {
        self.times
    }
}

/// A range's value of type `ty` from its stored bits.
fn range_value(ty: &Type, bits: u64) -> ValueRef<'static> {
    match ty {
        Type::Count => ValueRef::Count(bits),
        Type::Port => ValueRef::Port(bits),
        Type::Int => ValueRef::Int(bits as i64),
        Type::Time => ValueRef::Time(bits as i64),
        Type::Interval => ValueRef::Interval(bits as i64),
        Type::Double => ValueRef::Double(f64::from_bits(bits)),
        _ => ValueRef::Null,
    }
}

/// Builds sketches; keeps its buffers between batches.
#[derive(Debug, Default)]
pub(crate) struct SketchBuilder {
    hashes: Vec<u64>,
    counting: Vec<u64>,
    /// Per field: its range kind and current (lo, hi), as comparable values.
    ranges: Vec<Option<(RangeKind, Acc)>>,
    /// Per field: the rows with a value of it seen so far (kept for ranged fields).
    set: Vec<u32>,
    /// Per field: the tag of the values it hashes, and whether it is a container.
    kinds: Vec<(Option<u8>, bool)>,
    /// Hashes pushed lately, by their low bits: a value hashed again (a field's few distinct
    /// values recurring, row after row) is pushed once, so the filter's sizing and probes
    /// see each distinct value about once. Cleared per batch.
    seen: Vec<u64>,
    /// Short values (under 8 bytes: addresses, enums, states) met lately, per tag, keyed by
    /// their bytes: a recurring one is neither hashed nor pushed again. Cleared per batch.
    short: [Vec<u64>; 2],
    /// The schema's `ts` field (of type time), whose values go to the time histogram.
    ts_field: Option<usize>,
    /// Its values met in the batch.
    ts: Vec<i64>,
}

/// Slots of [`SketchBuilder::seen`] (a power of two).
const SEEN_SLOTS: usize = 1024;

/// The type to read a container element as: a bin for hashed elements (addresses too).
fn bin_type(tag: Option<u8>, inner: &Type) -> &Type {
    match tag {
        Some(_) => &Type::String,
        None => inner,
    }
}

/// A running minimum and maximum.
#[derive(Debug, Clone, Copy)]
enum Acc {
    None,
    I(i64, i64),
    U(u64, u64),
    F(f64, f64),
}

impl SketchBuilder {
    /// [`SketchBuilder::build`] from the batch's columns (`columns.rs`: column `i` holds field
    /// `i` of every row, back to back): the same sketch, one field at a time, as the column
    /// layout has the values of one type together. The ranges, counts and `ts` values that
    /// `stats` (the batch's [`ColumnStats`], recorded by its producer for every row) holds are
    /// taken from it instead of decoding those columns, and the values of a string or address
    /// column that `dicts` holds as a dictionary (`dict.rs`: its distinct values; empty or
    /// missing: none) from its entries instead of its rows.
    pub(crate) fn build_columns(
        &mut self,
        schema: &SchemaRef,
        columns: &[Vec<u8>],
        dicts: &[Vec<u8>],
        max_bloom: usize,
        stats: Option<&ColumnStats>,
    ) -> Result<Sketch, DecodeError> {
        if columns.len() != schema.fields.len() {
            return Err(DecodeError::FieldCount {
                got: columns.len(),
                want: schema.fields.len(),
            });
        }
        self.start(schema);
        let stats = stats.filter(|s| s.kinds.len() == columns.len());
        // The `ts` values, when taken from the stats (not copied).
        let mut stats_ts = None;
        for (i, (f, col)) in schema.fields.iter().zip(columns).enumerate() {
            if let Some(st) = stats.filter(|st| self.take_stats(i, st)) {
                if self.ts_field == Some(i) {
                    stats_ts = Some(&st.ts[..]);
                }
                continue;
            }
            // A dictionary's entries: each distinct value of the column once.
            if let (Some(dict), (Some(tag), false)) =
                (dicts.get(i).filter(|d| !d.is_empty()), self.kinds[i])
            {
                for entry in super::dict::entries(dict) {
                    let mut c = RowCursor::new(entry);
                    let m = c.marker()?;
                    if m != 0xc0 {
                        let b = hashed_bytes(&mut c, m, &f.ty, tag)?;
                        push_new(&mut self.hashes, &mut self.seen, value_hash(tag, b));
                    }
                }
                continue;
            }
            let mut c = RowCursor::new(col);
            // Values counted by the loops below (the general one counts its own).
            let mut set = 0u32;
            match (self.kinds[i], &mut self.ranges[i]) {
                // The common columns get a loop of their own: no per-value dispatch on type.
                ((Some(tag), false), _) => {
                    let mut last: &[u8] = &[];
                    let mut any = false;
                    let short = &mut self.short[usize::from(tag == TAG_ADDR)];
                    while c.position() < col.len() {
                        let m = c.marker()?;
                        if m == 0xc0 {
                            continue;
                        }
                        let b = hashed_bytes(&mut c, m, &f.ty, tag)?;
                        // The value's start in the column, for an 8-byte load of it.
                        let at = c.position() - b.len();
                        if let Some(key) = short_key(b, col.get(at..at + 8)) {
                            let slot = &mut short[short_slot(key)];
                            if *slot != key {
                                *slot = key;
                                push_new(&mut self.hashes, &mut self.seen, value_hash(tag, b));
                            }
                        } else if !(any && same(last, b)) {
                            push_new(&mut self.hashes, &mut self.seen, value_hash(tag, b));
                            last = b;
                            any = true;
                        }
                    }
                }
                ((None, false), Some((RangeKind::Unsigned, acc))) => {
                    let (mut lo, mut hi, mut any) = (u64::MAX, 0u64, false);
                    while c.position() < col.len() {
                        let m = c.marker()?;
                        if m == 0xc0 {
                            continue;
                        }
                        // Small counts (fixints) are most of them: no decoding call.
                        let v = if m < 0x80 {
                            m as u64
                        } else {
                            c.uint(m, &f.ty)?
                        };
                        (lo, hi, any) = (lo.min(v), hi.max(v), true);
                        set += 1;
                    }
                    if any {
                        *acc = Acc::U(lo, hi);
                    }
                }
                ((None, false), Some((RangeKind::Signed, acc))) => {
                    let (mut lo, mut hi, mut any) = (i64::MAX, i64::MIN, false);
                    let is_ts = self.ts_field == Some(i);
                    while c.position() < col.len() {
                        let m = c.marker()?;
                        if m == 0xc0 {
                            continue;
                        }
                        let v = c.int(m, &f.ty)?;
                        (lo, hi, any) = (lo.min(v), hi.max(v), true);
                        set += 1;
                        if is_ts {
                            self.ts.push(v);
                        }
                    }
                    if any {
                        *acc = Acc::I(lo, hi);
                    }
                }
                // Nothing to record (`bool`, `subnet`): the values are checked, not decoded.
                ((None, false), None) if matches!(f.ty, Type::Bool) => {
                    while c.position() < col.len() {
                        let m = c.marker()?;
                        if !matches!(m, 0xc0 | 0xc2 | 0xc3) {
                            return Err(c.unexpected(m, &f.ty));
                        }
                    }
                }
                // Containers of hashed elements (`set[string]`, mostly empty or unset), with
                // the element type looked up once.
                ((Some(tag), true), _) => {
                    let inner = bin_type(Some(tag), f.ty.element().unwrap_or(&f.ty));
                    while c.position() < col.len() {
                        let m = c.marker()?;
                        if m == 0xc0 {
                            continue;
                        }
                        self.elements(Some(tag), inner, &mut c, m)?;
                    }
                }
                _ => {
                    let mut last = None;
                    while c.position() < col.len() {
                        self.value(i, &f.ty, &mut c, &mut last)?;
                    }
                }
            }
            self.set[i] += set;
        }
        Ok(self.finish(max_bloom, stats_ts))
    }

    /// Takes field `i`'s range and count from `st`, when it recorded them as the kind the
    /// sketch records for the field (the `ts` field's values are then read from `st` by
    /// [`SketchBuilder::finish`]); `false`: the column is to be decoded.
    fn take_stats(&mut self, i: usize, st: &ColumnStats) -> bool {
        let Some((kind, acc)) = &mut self.ranges[i] else {
            return false;
        };
        let want = match kind {
            RangeKind::Unsigned => StatKind::Unsigned,
            RangeKind::Signed => StatKind::Signed,
            RangeKind::Real => return false,
        };
        if st.kinds.get(i).copied().flatten() != Some(want) {
            return false;
        }
        let range = st.range(i);
        if let Some((_, lo, hi, set)) = range {
            *acc = match want {
                StatKind::Unsigned => Acc::U(lo, hi),
                StatKind::Signed => Acc::I(lo as i64, hi as i64),
            };
            self.set[i] += set;
        }
        true
    }

    /// Resets the builder for a batch of `schema`.
    fn start(&mut self, schema: &SchemaRef) {
        self.ts_field = schema.ts_index();
        self.ts.clear();
        self.hashes.clear();
        self.set.clear();
        self.set.resize(schema.fields.len(), 0);
        self.seen.clear();
        self.seen.resize(SEEN_SLOTS, 0);
        for t in &mut self.short {
            t.clear();
            t.resize(SEEN_SLOTS, 0);
        }
        self.ranges.clear();
        self.ranges.extend(
            schema
                .fields
                .iter()
                .map(|f| RangeKind::of(&f.ty).map(|k| (k, Acc::None))),
        );
        // What each field hashes: its tag, and for containers the element type.
        self.kinds.clear();
        self.kinds.extend(schema.fields.iter().map(|f| {
            let elem = f.ty.element().unwrap_or(&f.ty);
            let tag = match elem {
                Type::String | Type::Enum | Type::Pattern | Type::File => Some(TAG_STRING),
                Type::Addr => Some(TAG_ADDR),
                _ => None,
            };
            (tag, f.ty.is_container())
        }));
    }

    /// Adds the value of field `i` (of type `ty`) at `c` and steps over it; `last` is the
    /// field's previous scalar value hashed (a repeat adds nothing).
    #[inline(always)]
    fn value<'r>(
        &mut self,
        i: usize,
        ty: &Type,
        c: &mut RowCursor<'r>,
        last: &mut Option<&'r [u8]>,
    ) -> Result<(), DecodeError> {
        let m = c.marker()?;
        if m == 0xc0 {
            return Ok(());
        }
        let (tag, container) = self.kinds[i];
        if container {
            return self.elements(tag, bin_type(tag, ty.element().unwrap_or(ty)), c, m);
        }
        if let Some(tag) = tag {
            // Strings and addresses alike are bins: hash their bytes as stored.
            let ValueRef::String(b) = c.scalar(m, &Type::String)? else {
                return Ok(());
            };
            if tag == TAG_ADDR && b.len() != 4 && b.len() != 16 {
                return Err(c.unexpected(m, ty));
            }
            if *last != Some(b) {
                push_new(&mut self.hashes, &mut self.seen, value_hash(tag, b));
                *last = Some(b);
            }
            return Ok(());
        }
        if self.ranges[i].is_some() {
            self.set[i] += 1;
        }
        match &mut self.ranges[i] {
            Some((RangeKind::Unsigned, acc)) => {
                let v = c.uint(m, ty)?;
                *acc = match *acc {
                    Acc::U(a, b) => Acc::U(a.min(v), b.max(v)),
                    _ => Acc::U(v, v),
                };
            }
            Some((RangeKind::Signed, acc)) => {
                let v = c.int(m, ty)?;
                if self.ts_field == Some(i) {
                    self.ts.push(v);
                }
                *acc = match *acc {
                    Acc::I(a, b) => Acc::I(a.min(v), b.max(v)),
                    _ => Acc::I(v, v),
                };
            }
            Some((RangeKind::Real, acc)) => {
                let v = c.scalar(m, ty)?;
                widen(acc, &v);
            }
            None => {
                c.scalar(m, ty)?;
            }
        }
        Ok(())
    }

    /// Adds the elements of the container whose marker `m` was just read at `c` (elements
    /// read as `elem`, hashed with `tag` when there is one) and steps over them.
    #[inline(always)]
    fn elements(
        &mut self,
        tag: Option<u8>,
        elem: &Type,
        c: &mut RowCursor<'_>,
        m: u8,
    ) -> Result<(), DecodeError> {
        for _ in 0..c.list_len(m)? {
            let m = c.marker()?;
            if m == 0xc0 {
                continue;
            }
            if let (Some(tag), ValueRef::String(b)) = (tag, c.scalar(m, elem)?) {
                push_new(&mut self.hashes, &mut self.seen, value_hash(tag, b));
            }
        }
        Ok(())
    }

    /// The sketch of the values added since [`SketchBuilder::start`].
    /// `ts`: the `ts` values, when not in `self.ts` (taken from the batch's column stats).
    fn finish(&mut self, max_bloom: usize, ts: Option<&[i64]>) -> Sketch {
        let mut sketch = Sketch {
            hashes: HASHES,
            ..Sketch::default()
        };
        for (i, r) in self.ranges.iter().enumerate() {
            let Some((kind, acc)) = r else { continue };
            let (lo, hi) = match *acc {
                Acc::None => continue,
                Acc::I(a, b) => (a as u64, b as u64),
                Acc::U(a, b) => (a, b),
                Acc::F(a, b) => (a.to_bits(), b.to_bits()),
            };
            sketch.ranges.push((i as u32, *kind, lo, hi));
            sketch.present.push(self.set[i]);
            if self.ts_field == Some(i) {
                if let Acc::I(a, b) = *acc {
                    sketch.times = TimeHistogram::of(i as u32, a, b, ts.unwrap_or(&self.ts));
                }
            }
        }
        let distinct = self.estimate_distinct();
        if distinct > 0 {
            let bits = (distinct * BITS_PER_VALUE).min(8 * max_bloom).div_ceil(64) * 64;
            sketch.bloom = vec![0u8; bits / 8];
            for &h in &self.hashes {
                bloom_insert(&mut sketch.bloom, HASHES, h);
            }
        }
        sketch
    }

    /// The number of distinct hashes, estimated by linear counting over a bitmap at least as
    /// large as their count (within a few percent; never 0 for a non-empty set).
    fn estimate_distinct(&mut self) -> usize {
        let n = self.hashes.len();
        if n == 0 {
            return 0;
        }
        let bits = (2 * n).next_power_of_two().max(64);
        self.counting.clear();
        self.counting.resize(bits / 64, 0);
        let shift = 64 - bits.trailing_zeros();
        for &h in &self.hashes {
            let j = (h >> shift) as usize;
            self.counting[j / 64] |= 1 << (j % 64);
        }
        let zeros: usize = self.counting.iter().map(|w| w.count_zeros() as usize).sum();
        let est = if zeros == 0 {
            n as f64
        } else {
            bits as f64 * (bits as f64 / zeros as f64).ln()
        };
        (est.ceil() as usize).clamp(1, n)
    }
}

/// The bytes to hash of the string or address value (of type `ty`, hashed with `tag`) whose
/// marker `m` was just read at `c`: strings and addresses alike are bins, hashed as stored.
#[inline(always)]
fn hashed_bytes<'r>(
    c: &mut RowCursor<'r>,
    m: u8,
    ty: &Type,
    tag: u8,
) -> Result<&'r [u8], DecodeError> {
    let b = c.bin(m, ty)?;
    if tag == TAG_ADDR && b.len() != 4 && b.len() != 16 {
        return Err(c.unexpected(m, ty));
    }
    Ok(b)
}

/// Pushes hash `h` unless `seen` shows it was pushed already (a hash of 0, the empty slot, is
/// always pushed: duplicates cost time, never correctness).
#[inline(always)]
fn push_new(hashes: &mut Vec<u64>, seen: &mut [u64], h: u64) {
    let slot = &mut seen[(h as usize) & (SEEN_SLOTS - 1)];
    if *slot != h || h == 0 {
        *slot = h;
        hashes.push(h);
    }
}

/// The bytes of a value under 8 bytes long and its length, as one nonzero u64 (`None`: a
/// longer value). `window`: 8 bytes starting with the value, when there are that many.
#[inline(always)]
fn short_key(b: &[u8], window: Option<&[u8]>) -> Option<u64> {
    if b.len() >= 8 {
        return None;
    }
    let bytes = match window {
        // One load, the bytes after the value masked off.
        Some(_) if b.is_empty() => 0,
        Some(w) => le_u64(w) & (u64::MAX >> (8 * (8 - b.len()))),
        None => le_short(b),
    };
    Some(bytes | ((b.len() as u64 + 1) << 56))
}

/// Whether two values (of 8 bytes or more: the new one) are equal, rejecting most differing
/// ones by their length and first 8 bytes without a call.
#[inline(always)]
fn same(last: &[u8], b: &[u8]) -> bool {
    last.len() == b.len() && last.get(..8).map(le_u64) == b.get(..8).map(le_u64) && last == b
}

/// The slot of a short value's key in [`SketchBuilder::short`].
#[inline(always)]
fn short_slot(key: u64) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SEEN_SLOTS.trailing_zeros())) as usize
}

fn widen(acc: &mut Acc, v: &ValueRef<'_>) {
    *acc = match (*acc, v) {
        (Acc::None, ValueRef::Count(x) | ValueRef::Port(x)) => Acc::U(*x, *x),
        (Acc::U(a, b), ValueRef::Count(x) | ValueRef::Port(x)) => Acc::U(a.min(*x), b.max(*x)),
        (Acc::None, ValueRef::Int(x) | ValueRef::Time(x) | ValueRef::Interval(x)) => Acc::I(*x, *x),
        (Acc::I(a, b), ValueRef::Int(x) | ValueRef::Time(x) | ValueRef::Interval(x)) => {
            Acc::I(a.min(*x), b.max(*x))
        }
        (_, ValueRef::Double(x)) if x.is_nan() => *acc,
        (Acc::None, ValueRef::Double(x)) => Acc::F(*x, *x),
        (Acc::F(a, b), ValueRef::Double(x)) => Acc::F(a.min(*x), b.max(*x)),
        (acc, _) => acc,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A histogram read from an index record gives what the decoded one gives: its counts,
    /// their number, the rows in a time range, and an owned copy.
    #[test]
    fn a_histogram_from_its_record_is_the_decoded_one() {
        let h = TimeHistogram {
            field: 0,
            width: 600,
            first: 10,
            counts: vec![3, 0, 7, 1],
        };
        let bytes: Vec<u8> = h.counts.iter().flat_map(|c| c.to_le_bytes()).collect();
        let r = TimesRef::of_record(0, 600, 10, &bytes);
        assert_eq!(r, h.as_ref());
        assert_eq!(
            (r.len(), r.counts().collect::<Vec<_>>()),
            (4, h.counts.clone())
        );
        assert_eq!(r.to_owned(), h);
        let (lo, hi) = (6_000, 8_399);
        for (a, b) in [
            (6_000, 6_599),
            (6_000, 7_799),
            (7_200, 8_399),
            (6_100, 8_399),
        ] {
            assert_eq!(r.count_in(a, b, lo, hi), h.as_ref().count_in(a, b, lo, hi));
        }
        assert_eq!(r.count_in(6_000, 7_799, lo, hi), Some(10));
        let other = TimesRef::of_record(0, 600, 10, &bytes[..12]);
        assert_ne!(other, h.as_ref());
    }

    /// A range keeps the bits of its values and gives them back as values of its field's
    /// type; a type without ranges gives unset values. In 32 bytes.
    #[test]
    fn a_range_gives_back_values_of_its_type() {
        assert_eq!(std::mem::size_of::<RangeOf>(), 32);
        let cases = [
            (Type::Count, ValueRef::Count(3), ValueRef::Count(u64::MAX)),
            (Type::Port, ValueRef::Port(3), ValueRef::Port(u64::MAX)),
            (Type::Int, ValueRef::Int(3), ValueRef::Int(-1)),
            (Type::Time, ValueRef::Time(3), ValueRef::Time(-1)),
            (
                Type::Interval,
                ValueRef::Interval(3),
                ValueRef::Interval(-1),
            ),
            (
                Type::Double,
                ValueRef::Double(f64::from_bits(3)),
                ValueRef::Double(f64::from_bits(u64::MAX)),
            ),
            (Type::String, ValueRef::Null, ValueRef::Null),
        ];
        for (ty, lo, hi) in cases {
            let r = RangeOf::new(7, &ty, 3, u64::MAX, Some(5));
            assert_eq!(
                (r.field(), r.present(), r.bits()),
                (7, Some(5), (3, u64::MAX))
            );
            match (ty, r.lo(), r.hi()) {
                (Type::Double, ValueRef::Double(a), ValueRef::Double(b)) => {
                    assert_eq!((a.to_bits(), b.to_bits()), (3, u64::MAX));
                }
                (ty, a, b) => assert_eq!((a, b), (lo, hi), "{ty:?}"),
            }
        }
    }
    use crate::batch::{Batch, BatchBuilder};
    use crate::types::{Field, Schema};

    /// A sketch's ranges: per field with one, its lowest and highest value and the rows
    /// holding a value.
    fn ranges_of(schema: &Schema, sk: &Sketch) -> Vec<(u32, String, String, Option<u32>)> {
        sk.ranges
            .iter()
            .zip(
                sk.present
                    .iter()
                    .map(|&p| Some(p))
                    .chain(std::iter::repeat(None)),
            )
            .map(|(&(field, _, lo, hi), present)| {
                let ty = &schema.fields[field as usize].ty;
                let of = RangeOf::new(field, ty, lo, hi, present);
                (
                    field,
                    format!("{:?}", of.lo()),
                    format!("{:?}", of.hi()),
                    present,
                )
            })
            .collect()
    }

    /// The ranges [`ranges_of`] a sketch should have, from the batch's rows decoded one
    /// value at a time (the reference: no column loop involved).
    fn ranges_from_rows(schema: &Schema, batch: &Batch) -> Vec<(u32, String, String, Option<u32>)> {
        let types: Vec<Type> = schema.fields.iter().map(|f| f.ty.clone()).collect();
        let rows: Vec<Vec<crate::value::Value>> = batch
            .rows()
            .map(|r| crate::value::decode_row(r, &types).unwrap())
            .collect();
        let mut out = Vec::new();
        for (i, ty) in types.iter().enumerate() {
            use crate::value::ValueOf;
            let key = |v: &crate::value::Value| -> Option<i128> {
                match v {
                    ValueOf::Count(n) | ValueOf::Port(n) => Some(i128::from(*n)),
                    ValueOf::Int(n) | ValueOf::Time(n) | ValueOf::Interval(n) => {
                        Some(i128::from(*n))
                    }
                    _ => None,
                }
            };
            if !matches!(
                ty,
                Type::Count | Type::Port | Type::Int | Type::Time | Type::Interval
            ) {
                continue;
            }
            let set: Vec<&crate::value::Value> = rows
                .iter()
                .map(|r| &r[i])
                .filter(|v| key(v).is_some())
                .collect();
            let (Some(lo), Some(hi)) = (
                set.iter().min_by_key(|v| key(v)),
                set.iter().max_by_key(|v| key(v)),
            ) else {
                continue;
            };
            let present = u32::try_from(set.len()).ok();
            out.push((i as u32, format!("{lo:?}"), format!("{hi:?}"), present));
        }
        out
    }

    /// The batch's rows split into columns, as format 4's writer does.
    fn columns_of(batch: &Batch) -> Vec<Vec<u8>> {
        let offsets: Vec<u32> = batch.offsets().iter().map(|&o| o as u32).collect();
        let mut cols = Vec::new();
        let fields = batch.schema().fields.len();
        assert!(super::super::columns::split(
            batch.data(),
            &offsets,
            fields,
            &mut cols
        ));
        cols
    }

    /// The columns of `batch` that the writer stores as dictionaries, encoded (`dict.rs`).
    fn dicts_of(batch: &Batch, cols: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let fields = &batch.schema().fields;
        let wanted = |c: usize| super::super::dict::plan(&fields[c].ty);
        let mut out = Vec::new();
        super::super::dict::Encoder::default().encode_all(cols, batch.len(), wanted, &mut out);
        out
    }

    /// The hash exactly as the module docs define it (the last bytes copied into a zeroed
    /// word): the format, which sketches already written depend on.
    fn documented_hash(tag: u8, bytes: &[u8]) -> u64 {
        const M: u64 = 0xff51_afd7_ed55_8ccd;
        let mut h = 0x9e37_79b9_7f4a_7c15 ^ tag as u64 ^ ((bytes.len() as u64) << 8);
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            h = (h ^ u64::from_le_bytes(w)).wrapping_mul(M).rotate_left(29);
        }
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }

    #[test]
    fn value_hash_is_the_documented_hash_and_short_keys_agree() {
        let mut x = 0x1234_5678_9abc_def0u64;
        for len in 0..48usize {
            for _ in 0..20 {
                let bytes: Vec<u8> = (0..len + 8)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                let v = &bytes[..len];
                assert_eq!(value_hash(b's', v), documented_hash(b's', v), "{v:?}");
                assert_eq!(value_hash(b'a', v), documented_hash(b'a', v), "{v:?}");
                // A short value's key is its bytes, whether read with its neighbours or alone.
                assert_eq!(short_key(v, Some(&bytes[..8])), short_key(v, None), "{v:?}");
                assert_eq!(short_key(v, None).is_some(), len < 8);
                if len > 0 && len < 8 {
                    let mut other = v.to_vec();
                    other[len - 1] ^= 1;
                    assert_ne!(short_key(v, None), short_key(&other, None));
                }
            }
        }
        assert_ne!(short_key(b"", None), short_key(b"\0", None));
        assert!(same(b"abcdefghij", b"abcdefghij"));
        assert!(!same(b"abcdefghij", b"abcdefghik"));
        assert!(!same(b"abcdefghij", b"xbcdefghij"));
    }

    #[test]
    fn recurring_short_values_are_all_in_the_filter() {
        // Short strings and addresses recur out of order and outnumber the dedup tables'
        // slots (so they evict each other); empty strings and nils are among them. Every
        // value must still be in the filter, from rows and from columns alike.
        let schema = Schema::new(
            "zeek.t",
            vec![
                Field::new("s", Type::String),
                Field::new("h", Type::Addr),
                Field::new("e", Type::Enum),
            ],
        )
        .into_shared();
        let mut bb = BatchBuilder::new(schema.clone());
        let value = |i: u64| match i % 5 {
            0 => String::new(),
            _ => format!("{}", (i * 7919) % 3000),
        };
        for i in 0..20_000u64 {
            let mut e = bb.begin_row();
            e.bytes(value(i).as_bytes());
            if i % 11 == 0 {
                e.null();
            } else if i % 3 == 0 {
                e.addr(std::net::IpAddr::from([
                    0xfe80,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    (i % 2000) as u16,
                ]));
            } else {
                e.addr(std::net::IpAddr::from([
                    10,
                    1,
                    (i % 9) as u8,
                    (i % 251) as u8,
                ]));
            }
            e.bytes(if i % 2 == 0 { b"tcp" } else { b"udp" });
            bb.finish_row(None);
        }
        let batch = bb.finish();
        let cols = columns_of(&batch);
        // The columns that take a dictionary, as the writer makes them.
        let dicts = dicts_of(&batch, &cols);
        assert!(!dicts[2].is_empty(), "the enum column takes a dictionary");
        let mut b = SketchBuilder::default();
        for sk in [
            b.build_columns(&schema, &cols, &[], usize::MAX / 16, None)
                .unwrap(),
            b.build_columns(&schema, &cols, &dicts, usize::MAX / 16, None)
                .unwrap(),
        ] {
            let r = SketchRef {
                bloom: Bloom::Bytes(&sk.bloom),
                hashes: sk.hashes,
                ranges: Ranges::Decoded(&[]),
                times: None,
            };
            for i in 0..20_000u64 {
                assert!(
                    r.may_contain(value_hash(TAG_STRING, value(i).as_bytes())),
                    "{i}"
                );
                let v6 = std::net::Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, (i % 2000) as u16);
                let v4 = [10, 1, (i % 9) as u8, (i % 251) as u8];
                if i % 11 != 0 && i % 3 == 0 {
                    assert!(r.may_contain(value_hash(TAG_ADDR, &v6.octets())), "{i}");
                } else if i % 11 != 0 {
                    assert!(r.may_contain(value_hash(TAG_ADDR, &v4)), "{i}");
                }
            }
            assert!(r.may_contain(value_hash(TAG_STRING, b"tcp")));
            assert!(r.may_contain(value_hash(TAG_STRING, b"udp")));
            // Sized for the distinct values (about 3,000 strings + 2,000 + 2,300 addresses),
            // not for the 60,000 values.
            assert!(sk.bloom.len() < 12_000, "{}", sk.bloom.len());
        }
    }

    #[test]
    fn ranges_from_columns_are_those_from_rows_for_every_integer_width() {
        // Counts, ints, times and intervals of every msgpack width (fixints, negative fixints,
        // 8 to 64 bits, signed and not, the extremes), nils among them, in batches of 1 to 40
        // rows: the column loops must give the row reader's ranges and counts.
        let schema = Schema::new(
            "zeek.t",
            vec![
                Field::new("c", Type::Count),
                Field::new("i", Type::Int),
                Field::new("t", Type::Time),
                Field::new("d", Type::Interval),
                Field::new("p", Type::Port),
                Field::new("b", Type::Bool),
            ],
        )
        .into_shared();
        let counts = [
            0u64,
            1,
            127,
            128,
            255,
            256,
            65_535,
            65_536,
            1 << 32,
            u64::MAX,
        ];
        let ints = [
            0i64,
            -1,
            -32,
            -33,
            -128,
            -129,
            -32_768,
            -32_769,
            i32::MIN as i64 - 1,
            i64::MIN,
            i64::MAX,
            127,
            300,
        ];
        for rows in [1usize, 2, 7, 40] {
            for shift in 0..ints.len() {
                let mut bb = BatchBuilder::new(schema.clone());
                for r in 0..rows {
                    let k = r + shift;
                    let mut e = bb.begin_row();
                    if k % 9 == 4 {
                        e.null();
                    } else {
                        e.uint(counts[k % counts.len()]);
                    }
                    e.int(ints[k % ints.len()]);
                    e.int(ints[(k + 3) % ints.len()]);
                    if k % 5 == 0 {
                        e.null();
                    } else {
                        e.int(ints[(k + 7) % ints.len()] / 3);
                    }
                    e.uint((k * 997 % 65_536) as u64);
                    e.bool(k % 2 == 0);
                    bb.finish_row(None);
                }
                let batch = bb.finish();
                let cols = columns_of(&batch);
                let mut b = SketchBuilder::default();
                let sk = b.build_columns(&schema, &cols, &[], 1 << 20, None).unwrap();
                let got = ranges_of(&schema, &sk);
                let want = ranges_from_rows(&schema, &batch);
                assert_eq!(got, want, "{rows} rows, shift {shift}");
                assert!(got.len() >= 4, "a range per field with a value");
            }
        }
        // A value that is not an integer where one is expected is an error either way.
        let mut cols = vec![vec![0x05, 0xa1, b'x'], vec![1, 2], vec![1, 2], vec![1, 2]];
        cols.extend([vec![1, 2], vec![0xc2, 0xc3]]);
        assert!(SketchBuilder::default()
            .build_columns(&schema, &cols, &[], 1 << 20, None)
            .is_err());
        cols[0] = vec![0x05, 0x06];
        cols[5] = vec![0xc2, 0x01];
        assert!(SketchBuilder::default()
            .build_columns(&schema, &cols, &[], 1 << 20, None)
            .is_err());
        cols[5] = vec![0xc2, 0xc0];
        cols[1] = vec![0xcf, 0xff, 0, 0, 0, 0, 0, 0, 0, 0x01];
        assert!(
            SketchBuilder::default()
                .build_columns(&schema, &cols, &[], 1 << 20, None)
                .is_err(),
            "an int beyond i64"
        );
    }

    #[test]
    fn time_histogram_counts_are_those_of_dividing_every_time() {
        // Times in and out of order, negative ones, runs in one bucket and jumps across many.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for span in [
            1_000i64,
            1_000_000_000,
            7_200_000_000_000,
            80_000_000_000_000,
        ] {
            let base = -(span / 3);
            let mut ts: Vec<i64> = (0..5000)
                .map(|_| base + (next() % span as u64) as i64)
                .collect();
            ts[100..600].sort_unstable();
            let (lo, hi) = (*ts.iter().min().unwrap(), *ts.iter().max().unwrap());
            let Some(h) = TimeHistogram::of(0, lo, hi, &ts) else {
                continue;
            };
            let mut want = vec![0u32; h.counts.len()];
            for &t in &ts {
                want[(t.div_euclid(h.width) - h.first) as usize] += 1;
            }
            assert_eq!(h.counts, want, "span {span}");
        }
    }

    #[test]
    fn time_histograms_take_the_narrowest_width_and_count_only_whole_buckets() {
        const S: i64 = 1_000_000_000;
        // 100 s: 1-second buckets; their edges count exactly, a cut inside one does not.
        let ts: Vec<i64> = (0..100).map(|i| 1_000 * S + i * S + i).collect();
        let h = TimeHistogram::of(2, ts[0], ts[99], &ts).unwrap();
        assert_eq!(
            (h.field, h.width, h.first, h.counts.len()),
            (2, S, 1_000, 100)
        );
        assert!(h.counts.iter().all(|&c| c == 1));
        let (lo, hi) = (ts[0] as i128, ts[99] as i128);
        let count = |a: i64, b: i64| h.as_ref().count_in(a as i128, b as i128, lo, hi);
        assert_eq!(count(1_010 * S, 1_020 * S - 1), Some(10));
        assert_eq!(count(i64::MIN, i64::MAX), Some(100));
        assert_eq!(count(0, 1_010 * S - 1), Some(10), "from before the batch");
        assert_eq!(count(1_010 * S + 1, 1_020 * S - 1), None, "a bucket cut");
        assert_eq!(count(2_000 * S, 3_000 * S), Some(0));
        // The batch's own ends narrow its first and last bucket: a range ending between the
        // last time and the end of its bucket still counts.
        assert_eq!(count(1_050 * S, ts[99]), Some(50));
        // From before the epoch to 23 hours later: 1,380 minutes are too many buckets, 140 of
        // 10 minutes are not (the first starting 19 buckets before the epoch).
        let neg = [-3 * 3_600 * S - 1, 20 * 3_600 * S];
        let h = TimeHistogram::of(0, neg[0], neg[1], &neg).unwrap();
        assert_eq!((h.width, h.first, h.counts.len()), (600 * S, -19, 140));
        assert_eq!((h.counts[0], h.counts[139]), (1, 1));
        // A single time: one bucket of a second.
        let one = TimeHistogram::of(0, 7, 7, &[7, 7]).unwrap();
        assert_eq!((one.width, one.first, one.counts.clone()), (S, 0, vec![2]));
        // 300 days: no width has few enough buckets.
        assert!(TimeHistogram::of(0, 0, 300 * 86_400 * S, &[0, 300 * 86_400 * S]).is_none());
        // Built with a sketch: the `ts` field (of type time), from rows and columns alike.
        let schema = Schema::new(
            "zeek.t",
            vec![Field::new("n", Type::Count), Field::new("ts", Type::Time)],
        )
        .into_shared();
        let mut bb = BatchBuilder::new(schema.clone());
        for i in 0..500i64 {
            let mut e = bb.begin_row();
            e.uint(i as u64);
            if i % 7 == 3 {
                e.null();
            } else {
                e.int(i * 61 * S);
            }
            bb.finish_row(None);
        }
        let batch = bb.finish();
        let cols = columns_of(&batch);
        let mut b = SketchBuilder::default();
        let sk = b.build_columns(&schema, &cols, &[], 1 << 20, None).unwrap();
        assert_eq!(ranges_of(&schema, &sk), ranges_from_rows(&schema, &batch));
        let times = sk.times.unwrap();
        assert_eq!((times.field, times.width), (1, 600 * S));
        let set = (0..500).filter(|i| i % 7 != 3).count() as u64;
        assert_eq!(times.counts.iter().map(|&c| u64::from(c)).sum::<u64>(), set);
    }

    #[test]
    fn bloom_holds_every_value_and_few_others() {
        let schema = Schema::new(
            "zeek.t",
            vec![
                Field::new("uid", Type::String),
                Field::new("h", Type::Addr),
                Field::new("n", Type::Count),
                Field::new("d", Type::Double),
                Field::new("v", Type::Vector(Box::new(Type::String))),
            ],
        )
        .into_shared();
        let mut bb = BatchBuilder::new(schema.clone());
        for i in 0..5000u64 {
            let mut e = bb.begin_row();
            e.bytes(format!("C{i:x}").as_bytes());
            e.addr(std::net::IpAddr::from([10, 0, (i % 7) as u8, 1]));
            if i % 3 == 0 {
                e.null();
            } else {
                e.uint(100 + i);
            }
            e.double(if i == 7 { f64::NAN } else { i as f64 / 2.0 });
            e.array(2);
            e.bytes(b"same");
            e.bytes(format!("e{}", i % 50).as_bytes());
            bb.finish_row(None);
        }
        let batch = bb.finish();
        // Built from the batch's columns (as the writer does), and with a capped filter: the
        // same ranges, a filter within its cap.
        let cols = columns_of(&batch);
        let mut b = SketchBuilder::default();
        let sk = b
            .build_columns(&schema, &cols, &[], usize::MAX / 16, None)
            .unwrap();
        let capped = b.build_columns(&schema, &cols, &[], 1000, None).unwrap();
        assert!(capped.bloom.len() <= 1000, "{}", capped.bloom.len());
        assert_eq!((&capped.ranges, &capped.present), (&sk.ranges, &sk.present));
        assert!(b
            .build_columns(&schema, &cols[..4], &[], 1000, None)
            .is_err());
        let r = SketchRef {
            bloom: Bloom::Bytes(&sk.bloom),
            hashes: sk.hashes,
            ranges: Ranges::Decoded(&[]),
            times: None,
        };
        // About 5000 + 7 + 51 distinct values at 10 bits each.
        let bytes = sk.bloom.len();
        assert!((5900..7300).contains(&bytes), "{bytes}");
        for i in 0..5000u64 {
            assert!(r.may_contain(value_hash(TAG_STRING, format!("C{i:x}").as_bytes())));
        }
        assert!(r.may_contain(value_hash(TAG_ADDR, &[10, 0, 3, 1])));
        assert!(r.may_contain(value_hash(TAG_STRING, b"e49")));
        let fp = (0..10_000u64)
            .filter(|i| r.may_contain(value_hash(TAG_STRING, format!("X{i}").as_bytes())))
            .count();
        assert!(fp < 250, "{fp} false positives in 10000");
        assert_eq!(
            sk.ranges,
            vec![
                (2, RangeKind::Unsigned, 101, 5099),
                (3, RangeKind::Real, 0f64.to_bits(), 2499.5f64.to_bits()),
            ]
        );
    }

    /// The hash is part of the format: it is the documented one, computed here again from
    /// the module docs' description.
    #[test]
    fn value_hash_is_the_documented_one() {
        fn fnv(tagged: &[u8]) -> u64 {
            let (tag, bytes) = (tagged[0], &tagged[1..]);
            let mut h = 0x9e37_79b9_7f4a_7c15u64 ^ tag as u64 ^ ((bytes.len() as u64) << 8);
            let mut padded = bytes.to_vec();
            while padded.len() % 8 != 0 {
                padded.push(0);
            }
            for w in padded.chunks(8) {
                let w = u64::from_le_bytes(w.try_into().unwrap());
                h = (h ^ w).wrapping_mul(0xff51_afd7_ed55_8ccd).rotate_left(29);
            }
            h
        }
        fn fmix(mut k: u64) -> u64 {
            k ^= k >> 33;
            k = k.wrapping_mul(0xff51afd7ed558ccd);
            k ^= k >> 33;
            k = k.wrapping_mul(0xc4ceb9fe1a85ec53);
            k ^ (k >> 33)
        }
        assert_eq!(value_hash(TAG_STRING, b""), fmix(fnv(b"s")));
        assert_eq!(
            value_hash(TAG_STRING, b"CUM0KZ3MLUfNB0cl11"),
            fmix(fnv(b"sCUM0KZ3MLUfNB0cl11"))
        );
        assert_eq!(
            value_hash(TAG_ADDR, &[10, 0, 0, 1]),
            fmix(fnv(&[b'a', 10, 0, 0, 1]))
        );
    }
}

#[cfg(test)]
mod bloom_tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Write;

    use super::*;
    use crate::segment::bloom::probes;

    /// A filter read from its file answers as its bytes do; one that cannot be read (a file
    /// cut short) may hold anything, so its batch is read rather than skipped.
    #[test]
    fn a_filter_in_a_file_answers_as_its_bytes_and_an_unreadable_one_as_full() {
        let mut bloom = vec![0u8; 512];
        for v in 0..40u64 {
            let h = value_hash(TAG_STRING, &v.to_le_bytes());
            for j in probes(h, 5, 8 * bloom.len() as u64) {
                bloom[(j / 8) as usize] |= 1 << (j % 8);
            }
        }
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[7; 100]).unwrap();
        file.write_all(&bloom).unwrap();
        let range = 100..100 + bloom.len();
        let read = Bloom::File {
            segment: 1,
            file: &file,
            range: &range,
        };
        let (mut hits, mut misses) = (0, 0);
        for v in 0..1000u64 {
            let h = value_hash(TAG_STRING, &v.to_le_bytes());
            let want = Bloom::Bytes(&bloom).may_contain(5, h);
            assert_eq!(read.may_contain(5, h), want, "{v}");
            assert!(want || v >= 40, "no false negative");
            if want {
                hits += 1
            } else {
                misses += 1
            }
        }
        assert!(misses > 500 && hits >= 40, "{hits} {misses}");
        file.set_len(300).unwrap();
        // (A filter of another segment past the end: unreadable, and the one read before is
        // no longer kept, so the next probe reads again.)
        let other = Bloom::File {
            segment: 2,
            file: &file,
            range: &(400..410),
        };
        assert!(other.may_contain(5, 1));
        let absent = (40..1000u64)
            .map(|v| value_hash(TAG_STRING, &v.to_le_bytes()))
            .find(|&h| !Bloom::Bytes(&bloom).may_contain(5, h))
            .unwrap();
        assert!(read.may_contain(5, absent), "unreadable: may hold anything");
        assert_eq!(read.to_vec(), None);
    }
}
