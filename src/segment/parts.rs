//! What opening a segment finds in it, by verifying it (`reader.rs`) or from its index file
//! (`index.rs`): its [`Parts`] and each batch's [`BatchMeta`], and the check of a stored time
//! histogram that both openings make. Below both the reader and the index.

use std::ops::Range;
use std::sync::atomic::AtomicU8;

use super::compress::{Codec, Layout};
use super::sketch::{RangeOf, TimeHistogram, TimesRef, MAX_TIME_BUCKETS, TIME_WIDTHS};
use crate::types::SchemaRef;

pub(super) const UNCHECKED: u8 = 0;
pub(super) const GOOD: u8 = 1;

#[derive(Debug)]
pub(super) struct BatchMeta {
    pub(super) schema: u32,
    pub(super) first_id: u64,
    pub(super) rows: u32,
    pub(super) ts: Option<(i64, i64)>,
    pub(super) data: Range<usize>,
    pub(super) offsets: Range<usize>,
    pub(super) checksum: u32,
    /// How `data` is stored (format 3; [`Codec::None`] before).
    pub(super) codec: Codec,
    /// How compressed bytes are arranged (format 4: columns).
    pub(super) layout: Layout,
    /// With a codec: the length of the raw bytes `data` inflates to (see `codec.rs`).
    pub(super) raw_size: usize,
    /// Format 3: the Bloom filter (in the map), its probes, and the decoded field ranges;
    /// format 5: the time histogram.
    pub(super) sketch: Option<StoredSketch>,
    /// [`UNCHECKED`] until the row offsets and checksum were verified on first access.
    pub(super) state: AtomicU8,
}

/// A batch's sketch as read at open: the Bloom filter (where it is in the map), its probes,
/// the field ranges and the time histogram.
type StoredSketch = (Range<usize>, u8, StoredRanges, Option<StoredTimes>);

/// A batch's time histogram as read at open: decoded by the verifier, or where its counts
/// are in the segment's index file (as [`StoredRanges`]).
#[derive(Debug)]
pub(super) enum StoredTimes {
    Decoded(TimeHistogram),
    Record {
        field: u32,
        width: i64,
        first: i64,
        counts: Range<usize>,
    },
}

/// A batch's field ranges as read at open: decoded by the verifier, or where their records
/// are in the segment's index file (`index.rs`; checked when it was opened), which the
/// segment keeps mapped ([`super::sketch::Ranges`]).
#[derive(Debug)]
pub(super) enum StoredRanges {
    Decoded(Vec<RangeOf>),
    Records { at: usize, count: usize },
}

/// What opening a segment finds in it (by verifying it, or from its index file, `index.rs`).
#[derive(Debug)]
pub(super) struct Parts {
    pub(super) version: u32,
    pub(super) uuid: uuid::Uuid,
    pub(super) intervals: Vec<Range<u64>>,
    pub(super) events: u64,
    pub(super) schemas: Vec<SchemaRef>,
    pub(super) batches: Vec<BatchMeta>,
}

/// Checks a stored time histogram against its batch: the field is the schema's `ts` (of type
/// time) and has a range whose `present` count the buckets add up to; the width is one of
/// [`TIME_WIDTHS`]; there are 1 to [`MAX_TIME_BUCKETS`] buckets, and the first and the last
/// hold the range's ends.
pub(super) fn check_times(
    t: TimesRef<'_>,
    schema: &crate::types::Schema,
    ranges: &[RangeOf],
) -> std::result::Result<(), String> {
    use crate::value::ValueRef;
    let bad = || {
        format!(
            "time histogram of field {} ({} buckets of {} ns from {}) does not fit the batch",
            t.field,
            t.len(),
            t.width,
            t.first
        )
    };
    let range = ranges
        .iter()
        .find(|r| r.field() == t.field)
        .ok_or_else(bad)?;
    let (ValueRef::Time(lo), ValueRef::Time(hi), Some(present)) =
        (range.lo(), range.hi(), range.present())
    else {
        return Err(bad());
    };
    let width = t.width;
    let n = t.len();
    let total: u64 = t.counts().map(u64::from).sum();
    if schema.ts_index() != Some(t.field as usize)
        || !TIME_WIDTHS.contains(&width)
        || n == 0
        || n > MAX_TIME_BUCKETS
        || t.counts().next() == Some(0)
        || t.counts().last() == Some(0)
        || lo.div_euclid(width) != t.first
        || hi.div_euclid(width) != t.first + n as i64 - 1
        || total != u64::from(present)
    {
        return Err(bad());
    }
    Ok(())
}
