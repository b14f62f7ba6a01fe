//! Batches (table slices): events of one schema, encoded as msgpack rows in one buffer.
//!
//! A [`Batch`] is shaped like rust-csv's `ByteRecord`: one contiguous byte buffer holding every
//! row (see [`crate::value`] for the row encoding) plus a table of row start offsets, so that row
//! N is reachable without decoding the rows before it. A batch also carries the minimum and
//! maximum of its `ts` field and, once the archive has accepted it, the ID of its first event
//! (IDs are dense and monotonic over the whole archive; a batch covers `[id, id + rows)`).
//!
//! [`BatchBuilder`] appends rows in place with a [`RowEncoder`]; producers (the readers) decide
//! when to cut a batch. A producer that has each integer and time value in hand as it encodes it
//! (the Zeek TSV reader) also records their ranges ([`ColumnStats`]), so that the segment writer's
//! sketch need not decode those columns again.
//!
//! A producer that writes every row's values field by field (the Zeek TSV reader, when its
//! consumer compresses batches in columns: [`crate::codec::ReaderOptions::columns`]) builds a
//! *columnar* batch instead (`BatchBuilder::columnar`): one buffer per field holding that
//! field's value of every row, back to back in row order, exactly the columns the segment writer
//! would otherwise split the rows into (`segment/columns.rs`). Its row offsets are those of the
//! rows the columns make (each row: the shortest array header of the field count, then one
//! value from each column), which are assembled, once, only when something asks for them
//! ([`Batch::data`], [`Batch::row`], ...). Invariant: each column of a columnar batch holds
//! exactly [`Batch::len`] values; only the crate's own producers write columns.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use crate::checkpoint::Mark;
use crate::types::{SchemaRef, Type};
use crate::value::{decode_row, DecodeError, RowCursor, RowEncoder, Value};

/// Default events per batch, for the readers that cut batches and for the batcher
/// (`--batch-size`): large enough that handing batches between threads costs little (VAST used
/// 1024; at that size the hand-overs cost 10-15% of a W1000 import's time here), small enough
/// that a batch stays well below a megabyte.
pub const DEFAULT_BATCH_EVENTS: usize = 8192;

/// Events of one schema as msgpack rows (or, columnar, as their values by field: see the
/// module docs).
#[derive(Debug, Clone)]
pub struct Batch {
    schema: SchemaRef,
    data: Vec<u8>,
    offsets: Vec<usize>,
    ts: Option<(i64, i64)>,
    id: u64,
    /// Positions of followed files after some of the rows (see [`crate::checkpoint`]).
    marks: Vec<Mark>,
    /// The ranges of its integer and time columns, when its producer recorded them for every
    /// row (derived from the rows: not part of a batch's identity).
    stats: Option<Arc<ColumnStats>>,
    /// Its values by field, when it is columnar (see the module docs): `data` is then empty
    /// and the rows are `joined`.
    cols: Option<Box<[Vec<u8>]>>,
    /// The rows of a columnar batch, assembled from `cols` on first use.
    joined: OnceLock<Vec<u8>>,
    /// The next batch of the stream belongs to the same commit (see [`Batch::group_next`]).
    group_next: bool,
}

impl PartialEq for Batch {
    fn eq(&self, other: &Batch) -> bool {
        self.schema == other.schema
            && self.data() == other.data()
            && self.offsets == other.offsets
            && self.ts == other.ts
            && self.id == other.id
            && self.marks == other.marks
    }
}

/// The smallest and largest value and the number of set values of each integer (`count`,
/// `port`, `int`) and time (`time`, `interval`) field of a batch, and its `ts` values in row
/// order, as recorded by the producer while encoding the rows (what a sketch would otherwise
/// decode the columns for). Fields of other types are not recorded (`kinds[i] == None`).
///
/// Invariant: a batch carries stats only if every one of its rows was recorded, every set
/// value of its recorded fields (unset values are not recorded: they are the rows less the
/// set ones; a row encoded another way, or a row discarded after some of its values were
/// recorded, drops the stats), so they are exactly what decoding the columns gives. Sketches
/// trust them, so only weir's own reader records them (the recording methods are
/// crate-private).
#[derive(Debug, Clone, Default)]
pub struct ColumnStats {
    /// Per field: how its values are compared (`None`: not recorded).
    pub(crate) kinds: Vec<Option<StatKind>>,
    /// Per field: smallest and largest value (u64, or i64 bits for signed fields).
    ranges: Vec<[u64; 2]>,
    /// Per field: rows whose value is set (recorded with the value: an unset value costs the
    /// producer nothing), except for the `ts` field, whose set values are `ts`.
    set: Vec<u32>,
    /// The `ts` field's values, in row order (unset ones left out).
    pub(crate) ts: Vec<i64>,
    /// The schema's `ts` field ([`crate::types::Schema::ts_index`]): its values are recorded
    /// in `ts` alone, not in `ranges`.
    ts_field: Option<usize>,
    /// Rows recorded.
    pub(crate) rows: usize,
    /// A row was discarded after some of its values were recorded.
    broken: bool,
}

/// How a field's values are compared in [`ColumnStats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatKind {
    /// `count`, `port`: u64.
    Unsigned,
    /// `int`, `time`, `interval`: i64.
    Signed,
}

impl ColumnStats {
    /// Empty stats for `schema`: its integer and time scalar fields recorded.
    fn new(schema: &crate::types::Schema, rows: usize) -> ColumnStats {
        let kinds: Vec<Option<StatKind>> = schema
            .fields
            .iter()
            .map(|f| match f.ty {
                Type::Count | Type::Port => Some(StatKind::Unsigned),
                Type::Int | Type::Time | Type::Interval => Some(StatKind::Signed),
                _ => None,
            })
            .collect();
        let ranges = kinds
            .iter()
            .map(|k| match k {
                Some(StatKind::Signed) => [i64::MAX as u64, i64::MIN as u64],
                _ => [u64::MAX, 0],
            })
            .collect();
        ColumnStats {
            set: vec![0; kinds.len()],
            kinds,
            ranges,
            ts: Vec::with_capacity(if schema.ts_index().is_some() { rows } else { 0 }),
            ts_field: schema.ts_index(),
            rows: 0,
            broken: false,
        }
    }

    /// Records `v` as a value of unsigned field `field`.
    #[inline(always)]
    pub(crate) fn unsigned(&mut self, field: usize, v: u64) {
        if let (Some(r), Some(n)) = (self.ranges.get_mut(field), self.set.get_mut(field)) {
            r[0] = r[0].min(v);
            r[1] = r[1].max(v);
            *n += 1;
        }
    }

    /// Records `v` as a value of signed field `field`.
    #[inline(always)]
    pub(crate) fn signed(&mut self, field: usize, v: i64) {
        if let (Some(r), Some(n)) = (self.ranges.get_mut(field), self.set.get_mut(field)) {
            r[0] = (r[0] as i64).min(v) as u64;
            r[1] = (r[1] as i64).max(v) as u64;
            *n += 1;
        }
    }

    /// Records `v` as the row's `ts` value: the `ts` field's only record of a set value (its
    /// range is the values' range, see [`ColumnStats::range`]).
    #[inline(always)]
    pub(crate) fn ts(&mut self, v: i64) {
        self.ts.push(v);
    }

    /// Field `i`'s kind, range (`lo` and `hi` as u64 or i64 bits) and number of set values,
    /// if recorded and set in some row (the `ts` field's range is that of its recorded values).
    pub(crate) fn range(&self, i: usize) -> Option<(StatKind, u64, u64, u32)> {
        let kind = (*self.kinds.get(i)?)?;
        let set = if self.ts_field == Some(i) {
            u32::try_from(self.ts.len()).ok()?
        } else {
            *self.set.get(i)?
        };
        let [lo, hi] = if self.ts_field == Some(i) {
            // Two independent folds the compiler vectorizes.
            let lo = self.ts.iter().copied().fold(i64::MAX, i64::min);
            let hi = self.ts.iter().copied().fold(i64::MIN, i64::max);
            [lo as u64, hi as u64]
        } else {
            *self.ranges.get(i)?
        };
        (set > 0).then_some((kind, lo, hi, set))
    }

    /// Adds a last field whose values are not recorded (a field appended to every row).
    fn push_unrecorded(&mut self) {
        self.kinds.push(None);
        self.ranges.push([u64::MAX, 0]);
        self.set.push(0);
    }

    /// The stats of two consecutive runs of rows of one schema.
    fn merge(&self, other: &ColumnStats) -> Option<ColumnStats> {
        if self.kinds != other.kinds {
            return None;
        }
        let mut m = self.clone();
        for (i, k) in self.kinds.iter().enumerate() {
            let (a, b) = (self.ranges[i], other.ranges[i]);
            m.ranges[i] = match k {
                Some(StatKind::Signed) => [
                    (a[0] as i64).min(b[0] as i64) as u64,
                    (a[1] as i64).max(b[1] as i64) as u64,
                ],
                _ => [a[0].min(b[0]), a[1].max(b[1])],
            };
            m.set[i] += other.set[i];
        }
        m.ts.extend_from_slice(&other.ts);
        m.rows += other.rows;
        Some(m)
    }
}

impl Batch {
    /// Assembles a batch from its parts: `offsets[i]` is the start of row `i` in `data`; row `i`
    /// ends where row `i + 1` starts (the last one at the end of `data`). Returns `None` when the
    /// offsets are not increasing or point outside `data`.
    pub fn from_parts(
        schema: SchemaRef,
        data: Vec<u8>,
        offsets: Vec<usize>,
        ts: Option<(i64, i64)>,
    ) -> Option<Batch> {
        let ok = offsets.first().is_none_or(|&o| o == 0)
            && offsets.windows(2).all(|w| w[0] < w[1])
            && offsets.last().is_none_or(|&o| o < data.len());
        (ok && (offsets.is_empty() == data.is_empty())).then_some(Batch {
            schema,
            data,
            offsets,
            ts,
            id: 0,
            marks: Vec::new(),
            stats: None,
            cols: None,
            joined: OnceLock::new(),
            group_next: false,
        })
    }

    /// The ranges of its integer and time columns, if its producer recorded them for every
    /// row (see [`ColumnStats`]).
    pub fn column_stats(&self) -> Option<&ColumnStats> {
        self.stats.as_deref()
    }

    /// The schema shared by all rows.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Whether the batch holds no event.
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// Size of the encoded rows in bytes.
    pub fn byte_size(&self) -> usize {
        match &self.cols {
            Some(cols) => columns_size(cols, self.offsets.len()),
            None => self.data.len(),
        }
    }

    /// The encoded rows, back to back (of a columnar batch: assembled from its columns on the
    /// first call).
    pub fn data(&self) -> &[u8] {
        match &self.cols {
            Some(cols) => self
                .joined
                .get_or_init(|| join(cols, self.offsets.len(), self.byte_size())),
            None => &self.data,
        }
    }

    /// Its values by field, when it is columnar (see the module docs): column *c* is the
    /// msgpack encoding of field *c* of every row, back to back in row order.
    pub fn columns(&self) -> Option<&[Vec<u8>]> {
        self.cols.as_deref()
    }

    /// Makes a columnar batch one of rows (for the changes below, which work on rows).
    fn make_rows(&mut self) {
        if self.cols.is_some() {
            self.data = match self.joined.take() {
                Some(rows) => rows,
                None => self.data().to_vec(),
            };
            self.cols = None;
        }
    }

    /// Start offset of every row in [`Batch::data`].
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// Byte range of row `i` in [`Batch::data`].
    pub fn row_range(&self, i: usize) -> Range<usize> {
        let start = self.offsets[i];
        let end = self.offsets.get(i + 1).copied().unwrap_or(self.byte_size());
        start..end
    }

    /// The encoded row `i`. Panics if `i >= len()`.
    pub fn row(&self, i: usize) -> &[u8] {
        &self.data()[self.row_range(i)]
    }

    /// The encoded rows in order.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        (0..self.len()).map(move |i| self.row(i))
    }

    /// Minimum and maximum of the `ts` field over the rows where it is set.
    pub fn ts_range(&self) -> Option<(i64, i64)> {
        self.ts
    }

    /// ID of the first event (0 until the archive assigns one).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Sets the ID of the first event.
    pub fn set_id(&mut self, id: u64) {
        self.id = id;
    }

    /// The checkpoints of followed files this batch carries, by row (see
    /// [`crate::checkpoint`]).
    pub fn marks(&self) -> &[Mark] {
        &self.marks
    }

    /// Adds a checkpoint (its `row_end` at most [`Batch::len`], after those already added).
    pub fn push_mark(&mut self, mark: Mark) {
        self.marks.push(mark);
    }

    /// Replaces the checkpoints.
    pub fn set_marks(&mut self, marks: Vec<Mark>) {
        self.marks = marks;
    }

    /// Whether the next batch of the stream belongs to the same *group*: batches that the
    /// archive commits together or not at all (one write-ahead log record, never a segment
    /// seal between them; see [`crate::store::Store::append_group`]). The [`crate::batcher`]
    /// regroups the events of a window of input by schema and makes each window such a group,
    /// whose last batch carries the window's checkpoints; stages between it and the archive
    /// keep groups together (a filter that drops a group's last batch passes on an empty one
    /// in its place). Not part of a batch's identity (equality ignores it), and never stored.
    pub fn group_next(&self) -> bool {
        self.group_next
    }

    /// Sets [`Batch::group_next`].
    pub fn set_group_next(&mut self, next: bool) {
        self.group_next = next;
    }

    /// The event IDs this batch covers.
    pub fn id_range(&self) -> Range<u64> {
        // Saturating: the store never assigns IDs past u64::MAX (it refuses such a batch).
        self.id..self.id.saturating_add(self.len() as u64)
    }

    /// Appends the rows of `other`, which must have an equal schema (checked by the caller:
    /// returns `false` and changes nothing otherwise).
    pub fn append(&mut self, other: &Batch) -> bool {
        if self.schema != other.schema {
            return false;
        }
        let base = self.byte_size();
        let rows = self.len();
        self.marks.extend(other.marks.iter().map(|m| Mark {
            row_start: m.row_start + rows,
            row_end: m.row_end + rows,
            ..m.clone()
        }));
        self.stats = match (&self.stats, &other.stats) {
            _ if rows == 0 => other.stats.clone(),
            (Some(a), Some(b)) => a.merge(b).map(Arc::new),
            _ => None,
        };
        match (&mut self.cols, &other.cols) {
            // Columnar on both sides: column by column (the rows, if assembled, are stale).
            (Some(mine), Some(theirs)) if mine.len() == theirs.len() => {
                for (m, t) in mine.iter_mut().zip(theirs.iter()) {
                    m.extend_from_slice(t);
                }
                self.joined = OnceLock::new();
            }
            _ => {
                self.make_rows();
                self.data.extend_from_slice(other.data());
            }
        }
        self.offsets.extend(other.offsets.iter().map(|o| o + base));
        self.ts = merge_ts(self.ts, other.ts);
        true
    }

    /// Splits off rows `[at, len)` into a new batch; `self` keeps `[0, at)`. The ts ranges of
    /// both halves are recomputed from their rows. IDs follow: the tail starts at `id + at`.
    pub fn split_off(&mut self, at: usize) -> Batch {
        self.make_rows();
        let at = at.min(self.len());
        let len = self.len();
        let tail_marks = Mark::slice(&self.marks, at, len);
        self.marks = Mark::slice(&self.marks, 0, at);
        let cut = self.offsets.get(at).copied().unwrap_or(self.data.len());
        let data = self.data.split_off(cut);
        let offsets: Vec<usize> = self.offsets.split_off(at).iter().map(|o| o - cut).collect();
        let mut tail = Batch {
            schema: self.schema.clone(),
            data,
            offsets,
            ts: None,
            id: self.id + at as u64,
            marks: tail_marks,
            stats: None,
            cols: None,
            joined: OnceLock::new(),
            group_next: self.group_next,
        };
        self.stats = None;
        self.ts = self.compute_ts();
        tail.ts = tail.compute_ts();
        tail
    }

    /// Gives back the room its buffers have beyond its rows.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.data.shrink_to_fit();
        self.offsets.shrink_to_fit();
        for c in self.cols.iter_mut().flat_map(|c| c.iter_mut()) {
            c.shrink_to_fit();
        }
    }

    fn compute_ts(&self) -> Option<(i64, i64)> {
        let idx = self.schema.ts_index()?;
        let mut ts = None;
        for row in self.rows() {
            let mut c = crate::value::RowCursor::new(row);
            if c.row_header(self.schema.fields.len()).is_err() {
                continue;
            }
            for (i, f) in self.schema.fields.iter().enumerate() {
                match c.read(&f.ty) {
                    Ok(crate::value::ValueRef::Time(t)) if i == idx => {
                        ts = merge_ts(ts, Some((t, t)));
                        break;
                    }
                    Ok(_) if i < idx => continue,
                    _ => break,
                }
            }
        }
        ts
    }

    /// Appends a field to every row: `schema` is this batch's schema with one more field at
    /// the end, `values` holds that field's msgpack value of every row back to back, and
    /// `ends[i]` is where row `i`'s value ends in `values`. A columnar batch gets `values` as
    /// its last column; rows are rewritten with the longer array header. Returns `false` and
    /// changes nothing when `schema` does not extend the batch's by one field, `ends` does not
    /// cut `values` into one value per row, or a row does not hold the batch's field count.
    pub fn push_field(&mut self, schema: SchemaRef, values: Vec<u8>, ends: &[usize]) -> bool {
        let n = self.schema.fields.len();
        let fits = schema.fields.len() == n + 1
            && n < u16::MAX as usize
            && schema.fields[..n] == self.schema.fields[..]
            && schema.name == self.schema.name
            && ends.len() == self.len()
            && ends.windows(2).all(|w| w[0] <= w[1])
            && ends
                .last()
                .map_or(values.is_empty(), |&e| e == values.len());
        if !fits {
            return false;
        }
        let grow = header_len(n + 1) - header_len(n);
        let starts = std::iter::once(0).chain(ends.iter().copied());
        if let Some(cols) = &mut self.cols {
            let offsets = self
                .offsets
                .iter()
                .zip(starts)
                .enumerate()
                .map(|(i, (&o, start))| o + i * grow + start)
                .collect();
            let mut all = std::mem::take(cols).into_vec();
            all.push(values);
            self.cols = Some(all.into_boxed_slice());
            self.offsets = offsets;
            self.joined = OnceLock::new();
        } else {
            let mut data = Vec::with_capacity(self.data.len() + values.len() + grow * self.len());
            let mut offsets = Vec::with_capacity(self.len());
            for (i, start) in (0..self.len()).zip(starts) {
                let row = self.row(i);
                let mut c = RowCursor::new(row);
                if c.array_len().ok() != Some(n) {
                    return false;
                }
                offsets.push(data.len());
                push_header(n + 1, &mut data);
                data.extend_from_slice(&row[c.position()..]);
                data.extend_from_slice(&values[start..ends[i]]);
            }
            self.data = data;
            self.offsets = offsets;
        }
        if let Some(stats) = &mut self.stats {
            Arc::make_mut(stats).push_unrecorded();
        }
        self.schema = schema;
        true
    }

    /// Decodes every row into owned values (for tests and small exports).
    pub fn to_values(&self) -> Result<Vec<Vec<Value>>, DecodeError> {
        let types: Vec<Type> = self.schema.fields.iter().map(|f| f.ty.clone()).collect();
        self.rows().map(|r| decode_row(r, &types)).collect()
    }
}

/// The bytes of the rows that `cols` (one per field, `rows` values each) make: a header per
/// row and every value.
fn columns_size(cols: &[Vec<u8>], rows: usize) -> usize {
    header_len(cols.len()) * rows + cols.iter().map(Vec::len).sum::<usize>()
}

/// The length of the shortest msgpack array header of `n` elements (`n` ≤ 65535): what starts
/// each row the column layouts (here and `segment/columns.rs`) make.
pub(crate) fn header_len(n: usize) -> usize {
    if n < 16 {
        1
    } else {
        3
    }
}

/// Appends the shortest msgpack array header of `n` elements (`n` ≤ 65535).
pub(crate) fn push_header(n: usize, out: &mut Vec<u8>) {
    if n < 16 {
        out.push(0x90 | n as u8);
    } else {
        out.push(0xdc);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    }
}

/// The rows (`size` bytes) that `cols` make, `rows` values in each: per row the shortest array
/// header of the column count, then the next value of each column. Columns that break the
/// invariant (a value that does not step over) end the rows early instead of panicking.
fn join(cols: &[Vec<u8>], rows: usize, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size);
    let mut header = Vec::with_capacity(3);
    push_header(cols.len(), &mut header);
    let mut cursors: Vec<RowCursor<'_>> = cols.iter().map(|c| RowCursor::new(c)).collect();
    for _ in 0..rows {
        out.extend_from_slice(&header);
        for (cur, col) in cursors.iter_mut().zip(cols) {
            let from = cur.position();
            if cur.skip().is_err() {
                debug_assert!(false, "a column of a columnar batch holds too few values");
                return out;
            }
            out.extend_from_slice(&col[from..cur.position()]);
        }
    }
    debug_assert_eq!(out.len(), size);
    out
}

fn merge_ts(a: Option<(i64, i64)>, b: Option<(i64, i64)>) -> Option<(i64, i64)> {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
        (x, None) | (None, x) => x,
    }
}

/// Builds a [`Batch`] row by row, encoding in place.
///
/// ```
/// use weir::unstable::batch::BatchBuilder;
/// use weir::unstable::types::{Field, Schema, Type};
///
/// let schema = Schema::new("zeek.x", vec![Field::new("n", Type::Count)]).into_shared();
/// let mut b = BatchBuilder::new(schema);
/// b.begin_row().uint(7);
/// b.finish_row(None);
/// let batch = b.finish();
/// assert_eq!(batch.len(), 1);
/// ```
#[derive(Debug)]
pub struct BatchBuilder {
    schema: SchemaRef,
    /// The rows; in column mode only the open row, when it is written as a row.
    data: Vec<u8>,
    offsets: Vec<usize>,
    ts: Option<(i64, i64)>,
    open: bool,
    /// Column stats, once a row was begun with [`BatchBuilder::begin_fields`] recording them.
    stats: Option<ColumnStats>,
    /// Whether the open row records stats.
    stats_row: bool,
    /// Column mode ([`BatchBuilder::columnar`]): the completed rows' values by field.
    cols: Option<ColumnRows>,
}

/// The columns of a builder in column mode.
#[derive(Debug)]
struct ColumnRows {
    cols: Vec<Vec<u8>>,
    /// Each column's length when the open row began (to discard it, or to undo a row that
    /// does not cut into the columns).
    starts: Vec<usize>,
    /// Whether the open row is being written as a row into `data` (by
    /// [`BatchBuilder::begin_row`]), to be cut into the columns when it is finished.
    row_in_data: bool,
}

/// The fields of the open row, written one after the other in schema order (see
/// [`BatchBuilder::begin_fields`]): each field's value goes to its column in column mode, and
/// to the row otherwise.
pub(crate) struct Fields<'a> {
    bufs: &'a mut [Vec<u8>],
    /// The last index of `bufs`: 0 for a row, the last field for columns.
    last: usize,
}

impl Fields<'_> {
    /// The encoder for field `c`'s value (exactly one value).
    #[inline(always)]
    pub(crate) fn field(&mut self, c: usize) -> RowEncoder<'_> {
        RowEncoder::new(&mut self.bufs[c.min(self.last)])
    }
}

impl BatchBuilder {
    /// An empty builder for `schema`.
    pub fn new(schema: SchemaRef) -> BatchBuilder {
        BatchBuilder {
            schema,
            data: Vec::new(),
            offsets: Vec::new(),
            ts: None,
            open: false,
            stats: None,
            stats_row: false,
            cols: None,
        }
    }

    /// An empty builder for `schema` with room for `rows` rows of `bytes` bytes in all (it
    /// grows past them as needed).
    pub fn with_capacity(schema: SchemaRef, bytes: usize, rows: usize) -> BatchBuilder {
        BatchBuilder {
            data: Vec::with_capacity(bytes),
            offsets: Vec::with_capacity(rows),
            ..BatchBuilder::new(schema)
        }
    }

    /// This builder in column mode: its batches are columnar (see the module docs), for a
    /// schema of 1 to 65535 fields (of any other, and if a row written with
    /// [`BatchBuilder::begin_row`] does not hold exactly one value per field, it builds rows).
    /// Room reserved for rows goes to the columns, an equal share each.
    pub(crate) fn columnar(mut self) -> BatchBuilder {
        let n = self.schema.fields.len();
        if self.is_empty() && (1..=u16::MAX as usize).contains(&n) {
            let share = self.data.capacity() / n;
            self.data = Vec::new();
            self.cols = Some(ColumnRows {
                cols: (0..n).map(|_| Vec::with_capacity(share)).collect(),
                starts: vec![0; n],
                row_in_data: false,
            });
        }
        self
    }

    /// The schema of the rows being built.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Starts a row: writes its array header and returns the encoder for its fields, which the
    /// caller must write in schema order. A row left open is discarded by the next
    /// `begin_row`, [`BatchBuilder::discard_row`] or [`BatchBuilder::finish`].
    pub fn begin_row(&mut self) -> RowEncoder<'_> {
        self.discard_row();
        match &mut self.cols {
            Some(c) => {
                // Written as a row, cut into the columns by `finish_row`.
                self.offsets.push(c.begin(self.offsets.len()));
                c.row_in_data = true;
                self.data.clear();
            }
            None => self.offsets.push(self.data.len()),
        }
        self.open = true;
        self.stats_row = false;
        let n = self.schema.fields.len() as u32;
        let mut enc = RowEncoder::new(&mut self.data);
        enc.array(n);
        enc
    }

    /// Starts a row whose fields the caller writes one by one, in schema order, each with the
    /// encoder [`Fields::field`] gives for it: exactly one value per field (a container is
    /// one value). With `stats`, the producer records the row's integer and time values, set
    /// and unset, in the returned [`ColumnStats`] as it encodes them (every one of them: see
    /// its invariant); the batch carries the stats if every row was begun so. Finished and
    /// discarded like a row of [`BatchBuilder::begin_row`].
    pub(crate) fn begin_fields(&mut self, stats: bool) -> (Fields<'_>, Option<&mut ColumnStats>) {
        self.discard_row();
        self.open = true;
        self.stats_row = stats;
        let stats = match stats {
            true => Some(
                self.stats
                    .get_or_insert_with(|| ColumnStats::new(&self.schema, self.offsets.capacity())),
            ),
            false => None,
        };
        let fields = match &mut self.cols {
            Some(c) => {
                self.offsets.push(c.begin(self.offsets.len()));
                c.row_in_data = false;
                Fields {
                    last: c.cols.len() - 1,
                    bufs: &mut c.cols,
                }
            }
            None => {
                self.offsets.push(self.data.len());
                RowEncoder::new(&mut self.data).array(self.schema.fields.len() as u32);
                Fields {
                    bufs: std::slice::from_mut(&mut self.data),
                    last: 0,
                }
            }
        };
        (fields, stats)
    }

    /// The encoder of the open row (to continue writing after [`BatchBuilder::begin_row`]).
    pub fn encoder(&mut self) -> RowEncoder<'_> {
        RowEncoder::new(&mut self.data)
    }

    /// Completes the open row; `ts` is its `ts` value, if any, for the batch's time range.
    pub fn finish_row(&mut self, ts: Option<i64>) {
        if self.open {
            self.open = false;
            if let Some(c) = &mut self.cols {
                if c.row_in_data && !c.cut_row(&self.data) {
                    // Not one value per field: this builder builds rows from here on.
                    self.leave_column_mode();
                }
            }
            if let Some(t) = ts {
                self.ts = merge_ts(self.ts, Some((t, t)));
            }
            if self.stats_row {
                if let Some(s) = &mut self.stats {
                    s.rows += 1;
                }
            }
        }
    }

    /// Leaves column mode as a row written into `data` is finished: the rows before it are
    /// assembled from the columns, and it follows them (its offset is already where they end).
    fn leave_column_mode(&mut self) {
        if let Some(c) = self.cols.take() {
            let rows = self.offsets.len().saturating_sub(1);
            let mut data = join(&c.cols, rows, columns_size(&c.cols, rows));
            data.extend_from_slice(&self.data);
            self.data = data;
        }
    }

    /// Drops the open row, if any (a row that failed to parse).
    pub fn discard_row(&mut self) {
        if self.open {
            self.open = false;
            if let Some(start) = self.offsets.pop() {
                match &mut self.cols {
                    Some(c) if c.row_in_data => self.data.clear(),
                    Some(c) => {
                        for (col, &s) in c.cols.iter_mut().zip(&c.starts) {
                            col.truncate(s);
                        }
                    }
                    None => self.data.truncate(start),
                }
            }
            if self.stats_row {
                if let Some(s) = &mut self.stats {
                    s.broken = true;
                }
            }
        }
    }

    /// Completed rows.
    pub fn len(&self) -> usize {
        self.offsets.len() - self.open as usize
    }

    /// Whether no row is complete.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes encoded so far.
    pub fn byte_size(&self) -> usize {
        match &self.cols {
            Some(c) => columns_size(&c.cols, self.offsets.len()),
            None => self.data.len(),
        }
    }

    /// Takes the completed rows as a batch and leaves the builder empty for the same schema
    /// (and mode).
    pub fn finish(&mut self) -> Batch {
        self.discard_row();
        // The next batch gets room for as much as this one (a decoder's batches are alike).
        let rows_cap = self.offsets.capacity();
        let rows = self.offsets.len();
        let stats = self
            .stats
            .take()
            .filter(|s| !s.broken && s.rows == rows && rows > 0)
            .map(Arc::new);
        let (data, cols) = match &mut self.cols {
            Some(c) => {
                let cols = c
                    .cols
                    .iter_mut()
                    .map(|v| std::mem::replace(v, Vec::with_capacity(v.capacity())))
                    .collect();
                (Vec::new(), Some(cols))
            }
            None => {
                let cap = self.data.capacity();
                (
                    std::mem::replace(&mut self.data, Vec::with_capacity(cap)),
                    None,
                )
            }
        };
        Batch {
            schema: self.schema.clone(),
            data,
            offsets: std::mem::replace(&mut self.offsets, Vec::with_capacity(rows_cap)),
            ts: self.ts.take(),
            id: 0,
            marks: Vec::new(),
            stats,
            cols,
            joined: OnceLock::new(),
            group_next: false,
        }
    }
}

impl ColumnRows {
    /// Begins a row after `rows` completed ones: records each column's length (to discard
    /// the row) and returns the row's offset.
    #[inline(always)]
    fn begin(&mut self, rows: usize) -> usize {
        let mut size = header_len(self.cols.len()) * rows;
        for (s, col) in self.starts.iter_mut().zip(&self.cols) {
            *s = col.len();
            size += col.len();
        }
        size
    }

    /// Cuts the row `row` (the shortest array header of the field count, then their values)
    /// into the columns, one value each; `false`, changing nothing, when it is not such a row.
    fn cut_row(&mut self, row: &[u8]) -> bool {
        let n = self.cols.len();
        let hl = header_len(n);
        let header_ok = match row {
            [m, ..] if n < 16 => *m == 0x90 | n as u8,
            [0xdc, hi, lo, ..] => u16::from_be_bytes([*hi, *lo]) as usize == n,
            _ => false,
        };
        if !header_ok {
            return false;
        }
        let mut cur = RowCursor::at(row, hl);
        let mut whole = true;
        for col in self.cols.iter_mut() {
            let from = cur.position();
            if cur.skip().is_err() {
                whole = false;
                break;
            }
            col.extend_from_slice(&row[from..cur.position()]);
        }
        if whole && cur.position() == row.len() {
            return true;
        }
        // Not one value per field: back to where the row began (`begin`).
        for (col, &s) in self.cols.iter_mut().zip(&self.starts) {
            col.truncate(s);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Field, Schema};

    fn schema() -> SchemaRef {
        Schema::new(
            "zeek.t",
            vec![Field::new("ts", Type::Time), Field::new("s", Type::String)],
        )
        .into_shared()
    }

    fn batch(ts: &[i64]) -> Batch {
        let mut b = BatchBuilder::new(schema());
        for &t in ts {
            let mut e = b.begin_row();
            e.int(t);
            e.bytes(format!("row{t}").as_bytes());
            b.finish_row(Some(t));
        }
        b.finish()
    }

    #[test]
    fn builder_tracks_rows_offsets_and_ts() {
        let b = batch(&[5, 3, 9]);
        assert_eq!(b.len(), 3);
        assert_eq!(b.ts_range(), Some((3, 9)));
        let vals = b.to_values().unwrap();
        assert_eq!(vals[1][1], Value::String(b"row3".to_vec()));
    }

    #[test]
    fn discarded_row_leaves_no_trace() {
        let mut b = BatchBuilder::new(schema());
        b.begin_row().int(1);
        b.discard_row();
        let mut e = b.begin_row();
        e.int(2);
        e.bytes(b"x");
        b.finish_row(Some(2));
        b.begin_row().int(3); // left open: dropped by finish
        let out = b.finish();
        assert_eq!(out.len(), 1);
        assert_eq!(out.ts_range(), Some((2, 2)));
        assert_eq!(out.to_values().unwrap()[0][0], Value::Time(2));
    }

    #[test]
    fn append_and_split_preserve_rows() {
        let mut a = batch(&[1, 2, 3]);
        assert!(a.append(&batch(&[10, 20])));
        assert_eq!(a.len(), 5);
        assert_eq!(a.ts_range(), Some((1, 20)));
        a.set_id(100);
        let tail = a.split_off(2);
        assert_eq!(a.len(), 2);
        assert_eq!(tail.len(), 3);
        assert_eq!(tail.id(), 102);
        assert_eq!(a.ts_range(), Some((1, 2)));
        assert_eq!(tail.ts_range(), Some((3, 20)));
        assert_eq!(tail.to_values().unwrap()[2][0], Value::Time(20));
    }

    /// `batch`'s schema with `extra` more string fields named `e0`, `e1`, ...
    fn wider(base: &Schema, extra: usize) -> SchemaRef {
        let mut s = base.clone();
        for i in 0..extra {
            s.fields.push(Field::new(format!("e{i}"), Type::String));
        }
        s.into_shared()
    }

    /// One string value per row (unset for every third), as `push_field` takes them.
    fn column_of(rows: usize) -> (Vec<u8>, Vec<usize>, Vec<Value>) {
        let (mut values, mut ends, mut want) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..rows {
            let v = match i % 3 {
                0 => Value::Null,
                _ => Value::String(format!("v{i}").into_bytes()),
            };
            RowEncoder::new(&mut values).value(&v);
            ends.push(values.len());
            want.push(v);
        }
        (values, ends, want)
    }

    #[test]
    fn push_field_appends_a_value_to_rows_and_columns_alike() {
        let ts: Vec<i64> = (1..40).collect();
        let (values, ends, want) = column_of(ts.len());
        let mut twins = [fields_batch(&ts, false), fields_batch(&ts, true)];
        let before = twins[0].to_values().unwrap();
        let to = wider(&twins[0].schema().clone(), 1);
        for b in &mut twins {
            b.set_id(7);
            assert!(b.push_field(to.clone(), values.clone(), &ends));
            assert_eq!(b.schema(), &to);
            assert_eq!(b.id(), 7);
            assert_eq!(b.ts_range(), Some((1, 39)));
            let got = b.to_values().unwrap();
            for (i, row) in got.iter().enumerate() {
                assert_eq!(row[..2], before[i][..], "row {i}");
                assert_eq!(row[2], want[i], "row {i}");
            }
            let kinds = &b.column_stats().map(|s| s.kinds.len());
            assert!(kinds.is_none_or(|k| k == 3), "{kinds:?}");
        }
        assert_eq!(twins[0].data(), twins[1].data());
        assert_eq!(twins[0].offsets(), twins[1].offsets());
        assert!(twins[1].columns().is_some_and(|c| c.len() == 3));
    }

    #[test]
    fn push_field_grows_the_row_header_past_fifteen_fields() {
        let ts: Vec<i64> = (1..10).collect();
        let base = wider(&schema(), 13);
        let mut b = BatchBuilder::new(base.clone());
        for &t in &ts {
            let mut row = vec![Value::Time(t), Value::String(b"s".to_vec())];
            row.extend((0..13).map(|i| Value::String(format!("{i}").into_bytes())));
            let mut e = b.begin_row();
            for v in &row {
                e.value(v);
            }
            b.finish_row(Some(t));
        }
        let mut b = b.finish();
        let (values, ends, want) = column_of(ts.len());
        assert!(b.push_field(wider(&base, 1), values, &ends));
        let got = b.to_values().unwrap();
        assert_eq!(got.len(), ts.len());
        for (row, w) in got.iter().zip(&want) {
            assert_eq!(row.len(), 16);
            assert_eq!(&row[15], w);
        }
    }

    #[test]
    fn push_field_refuses_what_does_not_fit() {
        let mut b = batch(&[1, 2, 3]);
        let (values, ends, _) = column_of(3);
        let before = b.clone();
        // Two fields more, a renamed schema, one value short.
        assert!(!b.push_field(wider(&schema(), 2), values.clone(), &ends));
        let mut renamed = (*wider(&schema(), 1)).clone();
        renamed.name = "zeek.other".into();
        assert!(!b.push_field(renamed.into_shared(), values.clone(), &ends));
        assert!(!b.push_field(wider(&schema(), 1), values.clone(), &ends[..2]));
        assert_eq!(b, before);
    }

    /// Rows `ts` written field by field into a builder in column mode (`columnar`) or not,
    /// with a discarded row between each two and every third row written as a row.
    fn fields_batch(ts: &[i64], columnar: bool) -> Batch {
        let mut b = BatchBuilder::new(schema());
        if columnar {
            b = b.columnar();
        }
        for &t in ts {
            let (mut f, _) = b.begin_fields(false);
            f.field(0).int(-1);
            b.discard_row();
            if t % 3 == 0 {
                let mut e = b.begin_row();
                e.int(t);
                e.bytes(format!("row{t}").as_bytes());
            } else {
                let (mut f, _) = b.begin_fields(false);
                f.field(0).int(t);
                f.field(1)
                    .bytes(format!("row{t}").repeat(t as usize % 5).as_bytes());
            }
            b.finish_row(Some(t));
        }
        b.finish()
    }

    #[test]
    fn columnar_batch_makes_the_rows_of_its_row_twin() {
        let ts: Vec<i64> = (1..40).collect();
        let rows = fields_batch(&ts, false);
        let cols = fields_batch(&ts, true);
        assert!(rows.columns().is_none());
        let c = cols.columns().expect("columnar");
        assert_eq!(c.len(), 2);
        assert_eq!(cols.byte_size(), rows.byte_size());
        assert_eq!(cols.offsets(), rows.offsets());
        assert_eq!(cols.data(), rows.data());
        assert_eq!(cols.row(7), rows.row(7));
        assert_eq!(cols.ts_range(), rows.ts_range());
        assert_eq!(cols, rows);
        // Column 0 is the ts values alone, as the segment writer would split them.
        let mut split = Vec::new();
        let offsets: Vec<u32> = rows.offsets().iter().map(|&o| o as u32).collect();
        assert!(crate::segment::columns::split(
            rows.data(),
            &offsets,
            2,
            &mut split
        ));
        assert_eq!(&split[..], c);
    }

    #[test]
    fn columnar_batches_append_and_split_like_rows() {
        let (a, b) = (
            (1..10).collect::<Vec<i64>>(),
            (10..30).collect::<Vec<i64>>(),
        );
        let mut want = fields_batch(&a, false);
        assert!(want.append(&fields_batch(&b, false)));
        for (first, second) in [(true, true), (true, false), (false, true)] {
            let mut got = fields_batch(&a, first);
            // Rows asked for before the append must not go stale.
            assert_eq!(got.len(), 9);
            let _ = got.data();
            assert!(got.append(&fields_batch(&b, second)));
            assert_eq!(got.columns().is_some(), first && second);
            assert_eq!(got.byte_size(), want.byte_size());
            assert_eq!(got, want);
            let (mut w, mut g) = (want.clone(), got.clone());
            let (wt, gt) = (w.split_off(12), g.split_off(12));
            assert_eq!((g, gt), (w, wt));
        }
    }

    /// Writes the row (`t`, `s`) field by field and finishes it.
    fn put_fields(b: &mut BatchBuilder, t: i64, s: &[u8]) {
        let (mut f, _) = b.begin_fields(false);
        f.field(0).int(t);
        f.field(1).bytes(s);
        b.finish_row(Some(t));
    }

    #[test]
    fn a_row_of_too_few_values_ends_column_mode_keeping_every_row() {
        let mut b = BatchBuilder::new(schema()).columnar();
        for t in 0..3 {
            put_fields(&mut b, t, b"x");
        }
        // A header for two fields, one value.
        b.begin_row().int(9);
        b.finish_row(Some(9));
        put_fields(&mut b, 10, b"y");
        let out = b.finish();
        assert!(out.columns().is_none());
        assert_eq!(out.len(), 5);
        assert_eq!(out.ts_range(), Some((0, 10)));
        assert_eq!(out.row(3), &[0x92, 9][..]);
        let mut c = RowCursor::new(out.row(4));
        assert!(c.row_header(2).is_ok());
        assert_eq!(out.row(4), &[0x92, 10, 0xc4, 1, b'y'][..]);
        let t: Vec<Value> = [0, 1, 2]
            .iter()
            .map(|&r| decode_row(out.row(r), &[Type::Time, Type::String]).unwrap()[0].clone())
            .collect();
        assert_eq!(t, vec![Value::Time(0), Value::Time(1), Value::Time(2)]);
    }

    #[test]
    fn a_columnar_builder_keeps_column_mode_across_batches() {
        let mut b = BatchBuilder::new(schema()).columnar();
        for round in 0..2 {
            put_fields(&mut b, round, b"z");
            let out = b.finish();
            assert_eq!(out.columns().map(<[_]>::len), Some(2));
            assert_eq!(out.to_values().unwrap()[0][0], Value::Time(round));
        }
        let empty = b.finish();
        assert!(empty.is_empty());
        assert_eq!(empty.byte_size(), 0);
    }

    #[test]
    fn from_parts_validates_offsets() {
        let b = batch(&[1, 2]);
        let (d, o) = (b.data().to_vec(), b.offsets().to_vec());
        assert!(Batch::from_parts(schema(), d.clone(), o.clone(), None).is_some());
        assert!(Batch::from_parts(schema(), d.clone(), vec![0, 0], None).is_none());
        assert!(Batch::from_parts(schema(), d.clone(), vec![0, d.len()], None).is_none());
        assert!(Batch::from_parts(schema(), d, vec![1], None).is_none());
    }

    #[test]
    fn append_refuses_other_schema() {
        let mut a = batch(&[1]);
        let other = Schema::new("zeek.u", vec![]).into_shared();
        let b = BatchBuilder::new(other).finish();
        assert!(!a.append(&b));
    }

    /// Checkpoints follow their rows through `append` and `split_off`: a cut between two
    /// rows of one read gives the part before it the read's start plus its rows.
    #[test]
    fn marks_follow_rows_through_append_and_split() {
        use crate::checkpoint::{FileCheckpoint, FileId, Mark, Position};
        let mark = |ino: u64, rows: usize, from: u64, to: u64| Mark {
            row_start: 0,
            row_end: rows,
            start: Some(Position {
                offset: from,
                skip: 0,
            }),
            end: FileCheckpoint {
                id: FileId {
                    dev: 1,
                    ino,
                    fp_len: 1,
                    fp_crc: 1,
                },
                path: format!("f{ino}"),
                pos: Position {
                    offset: to,
                    skip: 0,
                },
                done: false,
                raw: 0,
                header: String::new(),
                sum: None,
            },
        };
        let mut a = batch(&[1, 2]);
        a.push_mark(mark(1, 2, 0, 20));
        let mut b = batch(&[3, 4, 5]);
        b.push_mark(mark(2, 3, 100, 130));
        assert!(a.append(&b));
        assert_eq!(a.marks()[1].row_start, 2);
        assert_eq!(a.marks()[1].row_end, 5);
        let tail = a.split_off(3);
        assert_eq!(a.marks().len(), 2);
        assert_eq!(
            a.marks()[1].end.pos,
            Position {
                offset: 100,
                skip: 1
            }
        );
        assert_eq!(tail.marks().len(), 1);
        assert_eq!((tail.marks()[0].row_start, tail.marks()[0].row_end), (0, 2));
        assert_eq!(tail.marks()[0].end.pos.offset, 130);
    }
}
