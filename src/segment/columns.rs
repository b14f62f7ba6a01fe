//! Columnar batches (format 4): a batch's rows split into one column per field, each column
//! compressed on its own, so that a reader can inflate any one column alone.
//!
//! # Layout
//!
//! A batch stored in columns (codec `Lz4Columns` or `ZstdColumns` in the segment, see
//! [`super::codec::Layout`]) has rows that are all msgpack arrays of exactly the schema's
//! field count *n*, each starting with the shortest array header (`0x90 | n` for n < 16, else
//! `0xdc` and n as big-endian u16). Column *c* is the msgpack encoding of field *c* of every
//! row, back to back in row order (a value's length follows from its encoding, see
//! [`crate::value::RowCursor::skip`]). The stored bytes (`data`) are:
//!
//! 1. *n* as an unsigned LEB128 varint (as in `codec.rs`);
//! 2. per column its raw length, then its stored length (varints);
//! 3. the columns' stored bytes back to back, in field order. A column whose stored length
//!    equals its raw length is stored as it is; any other is one zstd frame
//!    (`ZSTD_compress`) or one raw lz4 block (`lz4_flex::block`, no size prefix) that must
//!    inflate to exactly its raw length. The writer compresses a column only when it is at
//!    least [`MIN_COMPRESS`] bytes and compressing makes it strictly smaller.
//!
//! Format 6 writes a *typed* header instead, which gives each column an encoding: a 0 varint
//! (never a column count: readers of format 4 and 5 refuse it), then *n*, then per column its
//! raw length, its encoding ([`VALUES`] 0: the msgpack values as above; [`PLANES`] 1: integer
//! planes, `planes.rs`; [`DICT`] 2, format 7: a dictionary, `dict.rs`), for [`PLANES`] and
//! [`DICT`] the length of the encoded bytes (at most the raw length), and its stored length. The *plain* bytes of a column are its values or its
//! encoded bytes; they are stored as they are when the stored length equals their length,
//! else compressed as above, inflating to exactly that length. A reader rebuilds a
//! [`PLANES`] or [`DICT`] column's values (exactly its raw length, or an error) right after
//! inflating it, so everything past [`inflate_columns`] sees msgpack values whatever the
//! encoding. The writer stores a column as planes where `planes::plan` allows and its values
//! are integers in the shortest form that get smaller that way, and as a dictionary where
//! `dict::plan` allows and its values repeat enough to get smaller that way. A format 6
//! reader refuses encoding 2 (a column of unknown encoding), so the segment version says
//! whether it may occur.
//!
//! Format 9 writes the *checksummed* header: a 0 varint, a second 0 (never a column count:
//! readers of format 6 to 8 refuse it, and the segment version says it may occur), then what
//! the typed header holds, each column's stored length followed by the CRC-32 (IEEE) of its
//! stored bytes as a little-endian u32. The batch's `checksum` is then the CRC-32 of the
//! header alone (the bytes before the first column's stored bytes), and a column's own CRC
//! is checked whenever it is inflated, before it is decompressed: a reader of one column
//! reads (and faults in the pages of) the header and that column alone.
//!
//! Format 10 adds encoding [`MARKED`] 3 (`marked.rs`): the values' markers, then their
//! payloads. Its encoded length is written like that of [`PLANES`] and [`DICT`] and always
//! equals the raw length (a reader refuses any other). A reader that wants a marked
//! column's numbers keeps it so ([`Columns::marked`]); any other rebuilds its values.
//!
//! Format 11 adds encoding [`BLOCKS`] 4 (`blocks.rs`): the values cut into blocks of rows,
//! each block compressed on its own (the column as a whole is not: its encoded length equals
//! its stored length, and the header must be checksummed), behind a directory whose bytes
//! alone the column's CRC covers; every block has its own. A reader that inflates the column
//! gets its values as written; one that needs some rows only ([`read_rows_of_columns`], and
//! [`assemble`] for selected rows) inflates only their blocks and gets nil for the rows of
//! the others.
//!
//! The batch's `raw_size` is the length of its rows back to back (so `raw_size` = rows ×
//! header length + the sum of the columns' raw lengths, which a reader checks before it
//! inflates anything), its `offsets` vector is empty and its `checksum` is the CRC-32 of the
//! stored bytes (format 9: of the header). Rows that do not have this shape are stored in the
//! row layout of `codec.rs`.
//!
//! # Reading
//!
//! [`read_columns`] inflates every column into one buffer of `raw_size` bytes at most and
//! hands them out as they are ([`Columns`]: the Arrow export converts them column by column).
//! [`assemble`] inflates the wanted columns the same way and
//! rebuilds the rows (header, then one value from each column): all of them byte for byte as
//! they were written, or, for a projection, rows of the wanted fields alone (in schema order,
//! with a header for that many fields). Every length is checked against the stored bytes and `raw_size` before it is
//! used, and a column that does not hold exactly one value per row is an error (a string
//! saying what is wrong), never a panic.

use super::compress::{inflate_into, Codec, RowBuf};
use super::planes::Ints;
use crate::batch::{header_len, push_header};
use crate::value::RowCursor;

/// Columns of fewer raw bytes are stored as they are (a frame's header would eat the gain).
pub(crate) const MIN_COMPRESS: usize = 64;

/// Values up to this long (most: numbers, addresses, states, Zeek's 18-character uids with
/// their marker) are copied as this many bytes at once, a constant length: no call per value.
const SHORT: usize = 32;

/// Splits the rows `data` (starting at `offsets`) into `fields` columns (cleared and refilled;
/// their allocations are reused). Returns `false`, leaving the columns in any state, when a
/// row is not an array of exactly `fields` values with the shortest header, or `fields` is 0
/// or above 65535: such a batch is stored in the row layout.
pub(crate) fn split(data: &[u8], offsets: &[u32], fields: usize, cols: &mut Vec<Vec<u8>>) -> bool {
    if fields == 0 || fields > u16::MAX as usize {
        return false;
    }
    cols.resize_with(fields, Vec::new);
    cols.truncate(fields);
    for c in cols.iter_mut() {
        c.clear();
    }
    let mut header = Vec::with_capacity(3);
    push_header(fields, &mut header);
    let hl = header.len();
    // Rows two at a time: a row's values are found one after the other (each value's length
    // is in its encoding), so walking two rows side by side gives the processor two
    // independent chains to overlap.
    let row_at = |i: usize| -> Option<(usize, &[u8])> {
        let start = *offsets.get(i)? as usize;
        let end = offsets.get(i + 1).map_or(data.len(), |&e| e as usize);
        let row = data.get(start..end)?;
        row.starts_with(&header).then_some((start, row))
    };
    let mut i = 0;
    while i + 1 < offsets.len() {
        let (Some((base_a, row_a)), Some((base_b, row_b))) = (row_at(i), row_at(i + 1)) else {
            return false;
        };
        let (mut a, mut b) = (RowCursor::at(row_a, hl), RowCursor::at(row_b, hl));
        for col in cols.iter_mut() {
            let (from_a, from_b) = (a.position(), b.position());
            if a.skip().is_err() || b.skip().is_err() {
                return false;
            }
            push_value(data, col, base_a, row_a, from_a, a.position());
            push_value(data, col, base_b, row_b, from_b, b.position());
        }
        if a.position() != row_a.len() || b.position() != row_b.len() {
            return false;
        }
        i += 2;
    }
    if i < offsets.len() {
        let Some((base, row)) = row_at(i) else {
            return false;
        };
        let mut cur = RowCursor::at(row, hl);
        for col in cols.iter_mut() {
            let from = cur.position();
            if cur.skip().is_err() {
                return false;
            }
            push_value(data, col, base, row, from, cur.position());
        }
        if cur.position() != row.len() {
            return false;
        }
    }
    true
}

/// Appends the value at `from..to` of `row` (which starts at `base` in `data`) to `col`.
#[inline(always)]
fn push_value(data: &[u8], col: &mut Vec<u8>, base: usize, row: &[u8], from: usize, to: usize) {
    let len = to - from;
    // Most values are short: copy `SHORT` bytes (a constant length, so no call) when the
    // batch has them, then cut back to the value's length.
    match data.get(base + from..base + from + SHORT) {
        Some(chunk) if len <= SHORT => {
            let mut fixed = [0u8; SHORT];
            fixed.copy_from_slice(chunk);
            col.extend_from_slice(&fixed);
            col.truncate(col.len() - SHORT + len);
        }
        _ => col.extend_from_slice(&row[from..to]),
    }
}

/// One column as the header of the stored bytes describes it.
#[derive(Debug, Clone, Copy)]
struct Column {
    raw: usize,
    /// Its encoding: [`VALUES`], [`PLANES`] or [`DICT`].
    encoding: usize,
    /// The length of its encoded bytes before compression (`raw` for [`VALUES`]).
    plain: usize,
    stored: usize,
    /// Start of its stored bytes.
    at: usize,
    /// The CRC-32 of its stored bytes (the checksummed header of format 9).
    crc: Option<u32>,
}

/// The header of a columnar batch, read and checked: its columns, and its length (where the
/// first column's stored bytes start).
pub(crate) struct Header {
    cols: Vec<Column>,
    pub(crate) len: usize,
    /// Whether each column has its own checksum (format 9).
    pub(crate) checksummed: bool,
}

/// Column encoding (format 6): the msgpack values themselves.
pub(crate) const VALUES: usize = 0;
/// Column encoding (format 6): integer planes (`planes.rs`).
pub(crate) const PLANES: usize = 1;
/// Column encoding (format 7): a dictionary of its distinct values and a code per row
/// (`dict.rs`).
pub(crate) const DICT: usize = 2;
/// Column encoding (format 10): the values' markers, then their payloads (`marked.rs`).
pub(crate) const MARKED: usize = 3;
/// Column encoding (format 11): the values in blocks of rows, each compressed on its own
/// behind a Bloom filter (`blocks.rs`).
pub(crate) const BLOCKS: usize = 4;

impl Header {
    /// Where each column's stored bytes are, in column order.
    pub(crate) fn spans(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        self.cols.iter().map(|c| c.at..c.at + c.stored)
    }

    /// The number of columns.
    pub(crate) fn columns(&self) -> usize {
        self.cols.len()
    }

    /// Whether column `c` is blocked (`blocks.rs`).
    pub(crate) fn is_blocked(&self, c: usize) -> bool {
        self.cols.get(c).is_some_and(|col| col.encoding == BLOCKS)
    }

    /// Where column `c`'s stored bytes are (`c` below [`Header::columns`]).
    pub(crate) fn span(&self, c: usize) -> std::ops::Range<usize> {
        let col = &self.cols[c];
        col.at..col.at + col.stored
    }

    /// Column `c`'s checksum (format 9; `c` below [`Header::columns`]).
    pub(crate) fn crc(&self, c: usize) -> Option<u32> {
        self.cols[c].crc
    }

    /// Column `c`'s raw length (`c` below [`Header::columns`]).
    pub(crate) fn raw(&self, c: usize) -> usize {
        self.cols[c].raw
    }

    /// The length of column `c`'s stored bytes (0 past the last column).
    #[cfg(test)]
    pub(crate) fn stored_len(&self, c: usize) -> usize {
        self.cols.get(c).map_or(0, |col| col.stored)
    }
}

/// Reads and checks the header of a columnar batch of `rows` rows and `raw_size` bytes of rows.
pub(crate) fn header(stored: &[u8], raw_size: usize, rows: usize) -> Result<Header, String> {
    let mut pos = 0;
    let mut n = super::varint::read_varint(stored, &mut pos)?;
    // Format 6: a 0 (never a column count) and the count, then each column's encoding.
    let typed = n == 0;
    if typed {
        n = super::varint::read_varint(stored, &mut pos)?;
    }
    // Format 9: a second 0, then the count, and each column's checksum.
    let checksummed = typed && n == 0;
    if checksummed {
        n = super::varint::read_varint(stored, &mut pos)?;
    }
    // Every column takes at least two bytes of the header.
    if n == 0 || n > u16::MAX as usize || 2 * n > stored.len() {
        return Err(format!("{n} columns in {} stored bytes", stored.len()));
    }
    let mut cols = Vec::with_capacity(n);
    let mut raw_total = rows.checked_mul(header_len(n)).ok_or("too many rows")?;
    let mut stored_total = 0usize;
    for _ in 0..n {
        let raw = super::varint::read_varint(stored, &mut pos)?;
        let encoding = if typed {
            super::varint::read_varint(stored, &mut pos)?
        } else {
            VALUES
        };
        let plain = match encoding {
            VALUES => raw,
            PLANES | DICT | MARKED | BLOCKS => super::varint::read_varint(stored, &mut pos)?,
            e => return Err(format!("a column of unknown encoding {e}")),
        };
        if encoding == MARKED && plain != raw {
            return Err(format!(
                "a marked column of {raw} raw bytes encoded in {plain}"
            ));
        }
        let len = super::varint::read_varint(stored, &mut pos)?;
        let crc = if checksummed {
            let b = stored
                .get(pos..pos + 4)
                .ok_or("the header ends within a column's checksum")?;
            pos += 4;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        } else {
            None
        };
        if encoding == BLOCKS && (plain != len || !checksummed) {
            return Err(format!(
                "a blocked column of {plain} encoded bytes stored in {len}"
            ));
        }
        if encoding != BLOCKS && (plain > raw || len > plain) {
            return Err(format!(
                "a column of {raw} raw bytes encoded in {plain} and stored in {len}"
            ));
        }
        raw_total = raw_total
            .checked_add(raw)
            .ok_or("column lengths overflow")?;
        cols.push(Column {
            raw,
            encoding,
            plain,
            stored: len,
            at: stored_total,
            crc,
        });
        stored_total = stored_total
            .checked_add(len)
            .ok_or("column lengths overflow")?;
    }
    if raw_total != raw_size {
        return Err(format!(
            "the columns make {raw_total} bytes of rows, {raw_size} expected"
        ));
    }
    if stored_total != stored.len() - pos {
        return Err(format!(
            "the columns take {stored_total} stored bytes, {} follow the header",
            stored.len() - pos
        ));
    }
    for c in &mut cols {
        c.at += pos;
    }
    Ok(Header {
        cols,
        len: pos,
        checksummed,
    })
}

/// The columns of encoding `encoding` ([`PLANES`], [`DICT`], ...) of a batch stored in
/// columns, from the header of its stored bytes.
pub(crate) fn encoded(
    stored: &[u8],
    raw_size: usize,
    rows: usize,
    encoding: usize,
) -> Result<Vec<usize>, String> {
    Ok(header(stored, raw_size, rows)?
        .cols
        .iter()
        .enumerate()
        .filter(|(_, c)| c.encoding == encoding)
        .map(|(i, _)| i)
        .collect())
}

/// The inflated columns of a batch stored in columns (see the module docs): column *c* is
/// the msgpack encoding of field *c* of every row, back to back, as the writer split them.
/// Nothing is checked beyond the lengths: a consumer that decodes the values checks that each
/// column holds exactly [`Columns::rows`] values (the Arrow builder does).
#[derive(Debug)]
pub struct Columns {
    buf: RowBuf,
    /// Where each column is in `buf` (empty for a column not inflated).
    spans: Vec<std::ops::Range<usize>>,
    /// The columns kept as dictionaries (their span holds the encoded bytes, checked), by
    /// column; empty when none is.
    dicts: Vec<Option<super::dict::Checked>>,
    /// The columns of integer planes kept as their numbers (no bytes in `buf`), by column;
    /// empty when none is.
    ints: Vec<Option<Ints>>,
    /// The marked columns kept so (their span holds the encoded bytes, checked), by column;
    /// empty when none is.
    marked: Vec<bool>,
    /// The columns of integer planes kept encoded for [`assemble_selected`] (their span
    /// holds the encoded bytes), by column; empty when none is.
    planes: Vec<bool>,
    /// Per blocked column (`blocks.rs`), each block's first row and where its values start
    /// in the column's span (ascending); empty for the others, or when none is.
    block_starts: Vec<Vec<(usize, usize)>>,
    rows: usize,
    raw_size: usize,
}

impl Columns {
    /// Number of columns (the schema's fields).
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there is no column (never for a stored batch).
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Number of rows: values in each column.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The bytes of the batch's rows as written (what the columns make as rows).
    pub fn raw_size(&self) -> usize {
        self.raw_size
    }

    /// The inflated columns' bytes, back to back (a search looks for the bytes a match
    /// needs in them before it evaluates anything). After a blocked column read for some
    /// rows lie bytes of no column (its room past its nils, left as the buffer's last user
    /// left them): a search that finds a needle there only evaluates the batch for nothing.
    pub(crate) fn inflated(&self) -> &[u8] {
        &self.buf[..self.spans.iter().map(|r| r.end).max().unwrap_or(0)]
    }

    /// The columns of rows `data` (starting at `offsets`) of `fields` fields each, as a
    /// reader would inflate them (`None` when the rows do not split into columns), those
    /// `as_dicts` marks kept as dictionaries where the writer would store them so. For tests
    /// and for the benchmark of the columnar evaluator (`Program::split_columns`).
    pub(crate) fn split_rows(
        data: &[u8],
        offsets: &[u32],
        fields: usize,
        as_dicts: &[bool],
    ) -> Option<Columns> {
        let mut cols = Vec::new();
        if !split(data, offsets, fields, &mut cols) {
            return None;
        }
        let mut buf = RowBuf::take(0);
        let mut spans = Vec::new();
        let mut dicts = vec![None; fields];
        for (k, c) in cols.iter().enumerate() {
            let at = buf.len();
            let mut enc = Vec::new();
            let rows = offsets.len();
            if as_dicts.get(k) == Some(&true)
                && super::dict::Encoder::default().encode(c, rows, &mut enc)
            {
                dicts[k] = Some(super::dict::Checked::of(&enc, rows).ok()?);
                buf.vec_mut().extend_from_slice(&enc);
            } else {
                buf.vec_mut().extend_from_slice(c);
            }
            spans.push(at..buf.len());
        }
        Some(Columns {
            buf,
            spans,
            dicts,
            ints: Vec::new(),
            marked: Vec::new(),
            planes: Vec::new(),
            block_starts: Vec::new(),
            rows: offsets.len(),
            raw_size: data.len(),
        })
    }

    /// These columns, claiming `rows` rows (for tests of columns that hold more or fewer).
    #[cfg(test)]
    pub(crate) fn claiming_rows(mut self, rows: usize) -> Columns {
        self.rows = rows;
        self
    }

    /// The encoded values of column `c` (empty past the end, and for a column kept as a
    /// dictionary: which only a search asks for).
    pub fn column(&self, c: usize) -> &[u8] {
        if self.dict(c).is_some() || self.ints(c).is_some() || self.marked(c).is_some() {
            return &[];
        }
        self.spans.get(c).map_or(&[][..], |r| &self.buf[r.clone()])
    }

    /// Column `c` when it was kept as a dictionary ([`read_columns`]'s `as_dicts`): its
    /// entries and codes, checked, and the bytes they are in.
    pub(crate) fn dict(&self, c: usize) -> Option<(&super::dict::Checked, &[u8])> {
        let d = self.dicts.get(c)?.as_ref()?;
        Some((d, &self.buf[self.spans.get(c)?.clone()]))
    }

    /// Column `c` when it was kept as its numbers ([`read_columns`]'s `as_ints`, a column
    /// of integer planes).
    pub(crate) fn ints(&self, c: usize) -> Option<&Ints> {
        self.ints.get(c)?.as_ref()
    }

    /// Column `c` when it was kept marked ([`read_columns`]'s `as_ints`, a marked column):
    /// its markers and payloads, checked.
    pub(crate) fn marked(&self, c: usize) -> Option<super::marked::Marked<'_>> {
        if self.marked.get(c) != Some(&true) {
            return None;
        }
        let (markers, payload) = self.buf[self.spans.get(c)?.clone()].split_at(self.rows);
        Some(super::marked::Marked { markers, payload })
    }
}

/// Which columns [`inflate_columns`] keeps in their stored form instead of rebuilding their
/// msgpack: dictionaries (checked, [`Columns::dict`]), integer planes (as their numbers,
/// [`Columns::ints`]) and marked columns (checked, [`Columns::marked`]).
#[derive(Clone, Copy)]
enum Keep<'a> {
    /// Those marked (one flag per column; `None`: none).
    Marked {
        dicts: Option<&'a [bool]>,
        ints: Option<&'a [bool]>,
    },
    /// Every dictionary (rows picked by their codes: [`assemble_selected`]), marked column
    /// (rows' values found by the markers before them) and column of planes (the values
    /// up to the last row picked decoded, only theirs rebuilt).
    All,
}

impl Keep<'_> {
    fn dict(&self, c: usize) -> bool {
        match self {
            Keep::All => true,
            Keep::Marked { dicts, .. } => dicts.is_some_and(|d| d.get(c) == Some(&true)),
        }
    }

    fn marked(&self, c: usize) -> bool {
        match self {
            // A selected row's value is found by the markers before it.
            Keep::All => true,
            Keep::Marked { .. } => self.ints(c),
        }
    }

    fn planes(&self) -> bool {
        matches!(self, Keep::All)
    }

    fn ints(&self, c: usize) -> bool {
        match self {
            // Measured: decoding the planes of a batch to arrays of numbers, to write the
            // msgpack of one row, cost more (the arrays' allocations) than rebuilding the
            // column's msgpack in the thread's reused buffer (W1000 uid export: 432 -> 565 ms
            // of CPU).
            Keep::All => false,
            Keep::Marked { ints, .. } => ints.is_some_and(|d| d.get(c) == Some(&true)),
        }
    }
}

/// Inflates the columns of a batch of `rows` rows and `raw_size` bytes of rows from its
/// stored bytes: all of them, or those `want` marks (one flag per column; the others are
/// left empty); of those, those `keep` says stay in their stored form. `slack` more bytes are kept zeroed after the last column. Every length is
/// checked before it is used.
fn inflate_columns(
    codec: Codec,
    stored: &[u8],
    (raw_size, rows): (usize, usize),
    want: Option<&[bool]>,
    keep: Keep<'_>,
    slack: usize,
    needed: Option<&[u64]>,
) -> Result<Columns, String> {
    let cols = header(stored, raw_size, rows)?.cols;
    let n = cols.len();
    if let Some(w) = want {
        if w.len() != n {
            return Err(format!(
                "{} fields wanted of a batch of {n} columns",
                w.len()
            ));
        }
    }
    let wanted = |c: usize| want.is_none_or(|w| w[c]);
    // The bytes a wanted column takes in the buffer: its encoded bytes where it stays
    // encoded, none where it becomes numbers, else its values (the branches below, in
    // order). (Room for every column's values was zeroed, and its pages faulted in, for
    // columns that never used it: a third of a `sort ts | head` batch's.)
    let room = |c: usize, col: &Column| match col.encoding {
        DICT if keep.dict(c) => col.plain,
        MARKED if keep.marked(c) => col.raw,
        PLANES if keep.planes() => col.plain,
        PLANES if keep.ints(c) => 0,
        _ => col.raw,
    };
    // One buffer for the wanted columns (at most `raw_size` bytes, checked above).
    let inflated: usize = (0..n)
        .filter(|&c| wanted(c))
        .map(|c| room(c, &cols[c]))
        .sum();
    // Every byte of a column's room is written below before it is read (a blocked column's
    // blocks left out are a nil per row): the buffer is not zeroed first, but its slack is.
    let mut buf = RowBuf::take_len(inflated + slack);
    let v = buf.vec_mut();
    v[inflated..].fill(0);
    let mut spans = Vec::with_capacity(n);
    let mut dicts = Vec::new();
    let mut ints = Vec::new();
    let mut marked = Vec::new();
    let mut planes = Vec::new();
    let mut block_starts = Vec::new();
    let mut at = 0;
    for (c, col) in cols.iter().enumerate() {
        if !wanted(c) {
            spans.push(at..at);
            continue;
        }
        let src = &stored[col.at..col.at + col.stored];
        // A blocked column's checksum covers its directory; each block has its own.
        let dir = if col.encoding == BLOCKS {
            Some(
                checked_directory(src, col.crc, rows, col.raw)
                    .map_err(|e| format!("column {c}: {e}"))?,
            )
        } else {
            if let Some(want) = col.crc {
                check_crc(src, want).map_err(|e| format!("column {c}: {e}"))?;
            }
            None
        };
        let len = room(c, col);
        let dst = &mut v[at..at + len];
        if let Some(dir) = dir {
            let any = |r: std::ops::Range<usize>| needed.is_none_or(|w| any_set(w, r));
            block_starts.resize_with(n, Vec::new);
            let dst = (dst, &mut block_starts[c]);
            let n = super::blocks::decode(src, &dir, rows, dst, Some(&any), |s, d| {
                inflate_into(codec, s, d)
            })
            .map_err(|e| format!("column {c}: {e}"))?;
            spans.push(at..at + n);
            at += len;
            continue;
        }
        if col.encoding == DICT && keep.dict(c) {
            // The encoded bytes (at most the raw length, checked by `columns`), as they are.
            if col.stored == col.plain {
                dst.copy_from_slice(src);
            } else {
                inflate_into(codec, src, dst).map_err(|e| format!("column {c}: {e}"))?;
            }
            let checked =
                super::dict::Checked::of(dst, rows).map_err(|e| format!("column {c}: {e}"))?;
            dicts.resize(n, None);
            dicts[c] = Some(checked);
            spans.push(at..at + col.plain);
            at += len;
            continue;
        }
        if col.encoding == MARKED && keep.marked(c) {
            // The encoded bytes (exactly the raw length, checked by `header`), as they are.
            if col.stored == col.plain {
                dst.copy_from_slice(src);
            } else {
                inflate_into(codec, src, dst).map_err(|e| format!("column {c}: {e}"))?;
            }
            super::marked::check(dst, rows).map_err(|e| format!("column {c}: {e}"))?;
            marked.resize(n, false);
            marked[c] = true;
            spans.push(at..at + col.raw);
            at += len;
            continue;
        }
        if col.encoding == PLANES && keep.planes() {
            // The encoded bytes (at most the raw length, checked by `header`), as they are;
            // checked when rows are picked from them.
            if col.stored == col.plain {
                dst.copy_from_slice(src);
            } else {
                inflate_into(codec, src, dst).map_err(|e| format!("column {c}: {e}"))?;
            }
            planes.resize(n, false);
            planes[c] = true;
            spans.push(at..at + col.plain);
            at += len;
            continue;
        }
        if col.encoding == PLANES && keep.ints(c) {
            let numbers = with_plain(codec, src, col.plain, |p| super::planes::ints(p, rows))
                .map_err(|e| format!("column {c}: {e}"))?;
            ints.resize(n, None);
            ints[c] = Some(numbers);
            spans.push(at..at);
            at += len;
            continue;
        }
        if col.encoding != VALUES {
            with_plain(codec, src, col.plain, |p| match col.encoding {
                PLANES => super::planes::decode(p, rows, dst),
                MARKED => super::marked::decode(p, rows, dst),
                _ => super::dict::decode(p, rows, dst),
            })
            .map_err(|e| format!("column {c}: {e}"))?;
        } else if col.stored == col.raw {
            dst.copy_from_slice(src);
        } else {
            inflate_into(codec, src, dst).map_err(|e| format!("column {c}: {e}"))?;
        }
        spans.push(at..at + col.raw);
        at += len;
    }
    Ok(Columns {
        buf,
        spans,
        dicts,
        ints,
        marked,
        planes,
        block_starts,
        rows,
        raw_size,
    })
}

/// The rows `select` of a batch of `rows` rows as a bitmap (bit `r % 64` of word `r / 64`
/// for row `r`; a row past the batch is left out, and reported by whoever reads it).
pub(crate) fn rows_bitmap(select: &[usize], rows: usize) -> Vec<u64> {
    let mut words = vec![0u64; rows.div_ceil(64)];
    for &r in select {
        if let Some(w) = words.get_mut(r / 64) {
            *w |= 1 << (r % 64);
        }
    }
    words
}

/// Checks `bytes` against the CRC-32 `want`.
fn check_crc(bytes: &[u8], want: u32) -> Result<(), String> {
    let sum = crc32fast::hash(bytes);
    if sum != want {
        return Err(format!(
            "checksum mismatch: stored {want:08x}, computed {sum:08x}"
        ));
    }
    Ok(())
}

/// The directory of the blocked column whose stored bytes are `src` (of `rows` rows and `raw`
/// raw bytes), checked against the column's checksum `crc` before it is parsed, so that
/// damage there is named as a checksum mismatch.
pub(crate) fn checked_directory(
    src: &[u8],
    crc: Option<u32>,
    rows: usize,
    raw: usize,
) -> Result<super::blocks::Directory<'_>, String> {
    let len = super::blocks::directory_len(src)
        .filter(|&l| l <= src.len())
        .ok_or("a directory runs past the column")?;
    if let Some(want) = crc {
        check_crc(&src[..len], want)?;
    }
    super::blocks::Directory::read(src, rows, raw)
}

/// Whether any of the rows `r` is set in the bitmap `words` (bit `i % 64` of word `i / 64`
/// for row `i`; rows past its end are not set).
pub(crate) fn any_set(words: &[u64], r: std::ops::Range<usize>) -> bool {
    if r.is_empty() {
        return false;
    }
    let (first, last) = (r.start / 64, (r.end - 1) / 64);
    (first..=last).any(|k| {
        let lo = if k == first { r.start % 64 } else { 0 };
        let hi = if k == last { (r.end - 1) % 64 } else { 63 };
        let mask = (u64::MAX << lo) & (u64::MAX >> (63 - hi));
        words.get(k).is_some_and(|w| w & mask != 0)
    })
}

thread_local! {
    /// The plain bytes of the column being decoded (reused: a fresh buffer per column
    /// faulted in its pages every time).
    static PLAIN: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `f` of the plain bytes (`plain` of them) of a column of an encoding other than [`VALUES`],
/// from its stored bytes `src`: as they are when they were stored so, else inflated into a
/// buffer of the thread's.
fn with_plain<T>(
    codec: Codec,
    src: &[u8],
    plain: usize,
    f: impl FnOnce(&[u8]) -> Result<T, String>,
) -> Result<T, String> {
    if src.len() == plain {
        return f(src);
    }
    PLAIN.with(|buf| {
        // Taken out while in use, so that a nested call (there is none) would allocate
        // rather than fail.
        let mut p = std::mem::take(&mut *buf.borrow_mut());
        p.clear();
        p.resize(plain, 0);
        let out = inflate_into(codec, src, &mut p).and_then(|()| f(&p));
        *buf.borrow_mut() = p;
        out
    })
}

/// The columns of a columnar batch (see the module docs): every one inflated, or those
/// `want` marks (one flag per column; the others are empty). Of those, the columns stored as
/// dictionaries that `as_dicts` marks are kept so ([`Columns::dict`]), checked but not
/// rebuilt, and the columns of integer planes that `as_ints` marks are kept as their numbers
/// ([`Columns::ints`]), their msgpack not rebuilt.
#[cfg(test)]
pub(crate) fn read_columns(
    codec: Codec,
    stored: &[u8],
    raw_size: usize,
    rows: usize,
    want: Option<&[bool]>,
    keeping: (Option<&[bool]>, Option<&[bool]>),
) -> Result<Columns, String> {
    read_rows_of_columns(codec, stored, raw_size, rows, want, keeping, None)
}

/// [`read_columns`] for the rows `needed` marks alone (bit `r % 64` of word `r / 64` for row
/// `r`): a blocked column (`blocks.rs`) inflates only the blocks that hold one of them and
/// gives the other rows nil, which its consumer must not read. Every other column is whole.
pub(crate) fn read_rows_of_columns(
    codec: Codec,
    stored: &[u8],
    raw_size: usize,
    rows: usize,
    want: Option<&[bool]>,
    (as_dicts, as_ints): (Option<&[bool]>, Option<&[bool]>),
    needed: Option<&[u64]>,
) -> Result<Columns, String> {
    inflate_columns(
        codec,
        stored,
        (raw_size, rows),
        want,
        Keep::Marked {
            dicts: as_dicts,
            ints: as_ints,
        },
        0,
        needed,
    )
}

/// Rebuilds the rows of a columnar batch (see the module docs) from its stored bytes: all
/// fields (`want` is `None`; the rows are then exactly the `raw_size` bytes written), or rows
/// of only the fields `want` marks (narrow rows: a header for that many fields, then their
/// values in schema order). Returns the rows followed by their offsets as
/// little-endian u32, and the length of the rows.
///
/// With `select` (row indices, ascending), only those rows are rebuilt: every other row is
/// [`UNSELECTED_ROW`], an empty msgpack array, so that row indices (and the event IDs they
/// stand for) stay those of the batch, and a reader that strays onto one gets a row with no
/// fields, never another row's values. The columns are still inflated and walked whole (a
/// value's place is known only by skipping those before it), but nothing is copied for the
/// rows left out: an export of one match per batch rebuilds one row per batch.
pub(crate) fn assemble(
    codec: Codec,
    stored: &[u8],
    raw_size: usize,
    rows: usize,
    want: Option<&[bool]>,
    select: Option<&[usize]>,
) -> Result<(RowBuf, usize), String> {
    // Values of up to `SLACK` bytes (most) are copied as `SLACK` bytes at once, into and out
    // of buffers with that much room after their end: no call per value.
    const SLACK: usize = SHORT;
    // For selected rows, dictionary columns stay dictionaries: a row's value is found by
    // its code, without rebuilding or walking the column.
    let keep = match select {
        Some(_) => Keep::All,
        None => Keep::Marked {
            dicts: None,
            ints: None,
        },
    };
    // For selected rows, a blocked column inflates only the blocks that hold one.
    let needed = select.map(|select| rows_bitmap(select, rows));
    let columns = inflate_columns(
        codec,
        stored,
        (raw_size, rows),
        want,
        keep,
        SLACK,
        needed.as_deref(),
    )?;
    let n = columns.len();
    let wanted = |c: usize| want.is_none_or(|w| w[c]);
    let starts: Vec<usize> = columns.spans.iter().map(|r| r.start).collect();
    let inflated: usize = columns.spans.iter().map(|r| r.len()).sum();
    let v = &columns.buf[..];
    let skipped = (0..n).filter(|&c| !wanted(c)).count();
    // Fields per assembled row.
    let width = n - skipped;
    let full_len = match want {
        None => raw_size,
        Some(_) => rows * header_len(width) + inflated,
    };
    if let Some(select) = select {
        let cols: Vec<usize> = (0..n).filter(|&c| wanted(c)).collect();
        return assemble_selected(&columns, &cols, rows, select);
    }
    // Where each value ends, a column at a time (one type per column: the skips predict
    // well), then the rows, copying each value by its known length.
    let mut ends: Vec<u32> = Vec::with_capacity(rows * (n - skipped));
    for c in (0..n).filter(|&c| wanted(c)) {
        let col = &v[columns.spans[c].clone()];
        let mut cur = RowCursor::new(col);
        for _ in 0..rows {
            cur.skip()
                .map_err(|e| format!("column {c} holds fewer than {rows} values: {e}"))?;
            ends.push((starts[c] + cur.position()) as u32);
        }
        if cur.position() != col.len() {
            return Err(format!("column {c} holds more than {rows} values"));
        }
    }
    let data_len = full_len;
    let mut out = RowBuf::take(data_len + SLACK + 4 * rows);
    let o = out.vec_mut();
    o.resize(data_len + SLACK, 0);
    let mut header = [0u8; 3];
    let hl = header_len(width);
    if hl == 1 {
        header[0] = 0x90 | width as u8;
    } else {
        header[0] = 0xdc;
        header[1..].copy_from_slice(&(width as u16).to_be_bytes());
    }
    let overrun = || "the rows run past their recorded size".to_string();
    let mut offsets = Vec::with_capacity(rows);
    // Where the next value of each assembled column starts.
    let mut pos: Vec<usize> = (0..n).filter(|&c| wanted(c)).map(|c| starts[c]).collect();
    let mut w = 0usize;
    for r in 0..rows {
        offsets.push(w as u32);
        o.get_mut(w..w + 3)
            .ok_or_else(overrun)?
            .copy_from_slice(&header);
        w += hl;
        for (k, p) in pos.iter_mut().enumerate() {
            let end = ends[k * rows + r] as usize;
            let len = end - *p;
            if len <= SLACK {
                let src = v.get(*p..*p + SLACK).ok_or_else(overrun)?;
                o.get_mut(w..w + SLACK)
                    .ok_or_else(overrun)?
                    .copy_from_slice(src);
            } else {
                let src = v.get(*p..end).ok_or_else(overrun)?;
                o.get_mut(w..w + len)
                    .ok_or_else(overrun)?
                    .copy_from_slice(src);
            }
            w += len;
            *p = end;
        }
    }
    if w != data_len {
        return Err(format!("the rows take {w} bytes, {data_len} expected"));
    }
    o.truncate(data_len);
    for off in offsets {
        o.extend_from_slice(&off.to_le_bytes());
    }
    Ok((out, data_len))
}

/// The row that stands for a row left out by [`assemble`]'s `select`: an empty msgpack array.
pub(crate) const UNSELECTED_ROW: u8 = 0x90;

/// [`assemble`]'s rows for `select` only, from the inflated `columns` (those of indices
/// `cols` assembled); the other rows are [`UNSELECTED_ROW`]. A dictionary column gives each
/// selected row's value by its code; any other column is walked only up
/// to the last selected row (its values past it are neither read nor counted: the batch's
/// checksum vouches for them, and a whole read checks them).
fn assemble_selected(
    columns: &Columns,
    cols: &[usize],
    rows: usize,
    select: &[usize],
) -> Result<(RowBuf, usize), String> {
    if let Some(r) = select.iter().find(|&&r| r >= rows) {
        return Err(format!("row {r} selected of {rows}"));
    }
    if select.windows(2).any(|w| w[0] >= w[1]) {
        return Err(format!("rows {select:?} are not in ascending order"));
    }
    let v = &columns.buf[..];
    let width = cols.len();
    let picked = select.len();
    // The bytes of selected value `j` of assembled column `k`: `spans[k * picked + j]`, in
    // `v`, or past its end in `side` (a marked column's values, rebuilt).
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(width * picked);
    let mut side: Vec<u8> = Vec::new();
    for &c in cols {
        let base = columns.spans[c].start;
        if let Some(m) = columns.marked(c) {
            // A selected row's payload starts after those of the rows before it.
            let (mut r, mut pos) = (0, 0);
            for &s in select {
                pos += m.payload_len(r..s);
                let n = m.payload_len(s..s + 1);
                let payload = m
                    .payload
                    .get(pos..pos + n)
                    .ok_or_else(|| format!("column {c} holds fewer than {rows} values"))?;
                let at = v.len() + side.len();
                side.push(m.markers[s]);
                side.extend_from_slice(payload);
                spans.push((at, v.len() + side.len()));
                (r, pos) = (s + 1, pos + n);
            }
            continue;
        }
        if columns.planes.get(c) == Some(&true) {
            let at = v.len() + side.len();
            let ends =
                super::planes::selected(&v[columns.spans[c].clone()], rows, select, &mut side)
                    .map_err(|e| format!("column {c}: {e}"))?;
            let mut start = at;
            for end in ends {
                spans.push((start, v.len() + end));
                start = v.len() + end;
            }
            continue;
        }
        if let Some((dict, enc)) = columns.dict(c) {
            for &r in select {
                let e = dict
                    .entry_of(enc, r)
                    .ok_or_else(|| format!("column {c} has no code for row {r}"))?;
                spans.push((base + e.start, base + e.end));
            }
            continue;
        }
        let col = &v[columns.spans[c].clone()];
        if col.len() == rows {
            // Every value is one byte (flags, unset sets): row `r`'s is byte `r`.
            spans.extend(select.iter().map(|&r| (base + r, base + r + 1)));
            continue;
        }
        // A blocked column is walked from the start of each selected row's block.
        let starts = columns.block_starts.get(c).map_or(&[][..], |s| &s[..]);
        let mut cur = RowCursor::new(col);
        let mut r = 0;
        for &s in select {
            let jump = starts.partition_point(|&(first, _)| first <= s);
            if let Some(&(first, at)) = jump.checked_sub(1).and_then(|k| starts.get(k)) {
                if first > r {
                    (cur, r) = (RowCursor::at(col, at), first);
                }
            }
            cur.skip_many(s - r)
                .map_err(|e| format!("column {c} holds fewer than {rows} values: {e}"))?;
            let at = cur.position();
            cur.skip()
                .map_err(|e| format!("column {c} holds fewer than {rows} values: {e}"))?;
            spans.push((base + at, base + cur.position()));
            r = s + 1;
        }
    }
    let mut data_len = rows - picked + picked * header_len(width);
    for &(a, b) in &spans {
        data_len += b - a;
    }
    let mut out = RowBuf::take(data_len + 4 * rows);
    let o = out.vec_mut();
    // The offsets as little-endian u32, written after the rows.
    let mut offsets: Vec<u8> = Vec::with_capacity(4 * rows);
    // `n` rows not selected: an empty array each, written in one go (a row at a time, the
    // 8,191 of a batch that a W1000 uid export leaves out cost 9% of its CPU).
    let unselected = |o: &mut Vec<u8>, offsets: &mut Vec<u8>, n: usize| {
        let at = o.len();
        offsets.extend((at..at + n).flat_map(|off| (off as u32).to_le_bytes()));
        o.resize(at + n, UNSELECTED_ROW);
    };
    let mut r = 0;
    for (j, &s) in select.iter().enumerate() {
        unselected(o, &mut offsets, s - r);
        offsets.extend_from_slice(&(o.len() as u32).to_le_bytes());
        push_header(width, o);
        for k in 0..width {
            let (a, b) = spans[k * picked + j];
            match a.checked_sub(v.len()) {
                Some(a) => o.extend_from_slice(&side[a..b - v.len()]),
                None => o.extend_from_slice(&v[a..b]),
            }
        }
        r = s + 1;
    }
    unselected(o, &mut offsets, rows - r);
    if o.len() != data_len {
        return Err(format!(
            "the rows take {} bytes, {data_len} expected",
            o.len()
        ));
    }
    o.extend_from_slice(&offsets);
    Ok((out, data_len))
}

#[cfg(test)]
mod tests {
    use super::super::codec::{unpack, Packer};
    use super::super::compress::{Compression, Layout};
    use super::*;
    use crate::value::{encode_row, Value};

    /// Rows of `fields` values: counts, strings (some empty), nil, addresses, subnets,
    /// containers (some empty), doubles, negative ints.
    fn rows(n: usize, fields: usize) -> (Vec<u8>, Vec<u32>) {
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for r in 0..n {
            offsets.push(data.len() as u32);
            let row: Vec<Value> = (0..fields)
                .map(|f| match (f + r) % 9 {
                    0 => Value::Count((r * 1000 + f) as u64),
                    // 13 to 57 bytes: values copied as one constant-length block, and longer.
                    1 => Value::String(
                        format!("host{}.example{}", r % 7, "x".repeat(r % 45)).into_bytes(),
                    ),
                    2 => Value::Null,
                    3 => Value::String(Vec::new()),
                    4 => Value::Addr([10, 0, (r % 3) as u8, f as u8].into()),
                    5 => Value::Subnet([192, 168, 0, 0].into(), 16),
                    6 => Value::List(
                        (0..r % 3)
                            .map(|i| Value::String(vec![b'a' + i as u8; i + 1]))
                            .collect(),
                    ),
                    7 => Value::Double(r as f64 / 3.0),
                    _ => Value::Int(-(r as i64) * 1_000_000_007),
                })
                .collect();
            encode_row(&row, &mut data);
        }
        (data, offsets)
    }

    fn with_offsets(data: &[u8], offsets: &[u32]) -> Vec<u8> {
        let mut v = data.to_vec();
        v.extend(offsets.iter().flat_map(|o| o.to_le_bytes()));
        v
    }

    #[test]
    fn columns_round_trip_for_every_codec_and_shape() {
        for (n, fields) in [(1, 1), (1, 20), (7, 3), (300, 9), (500, 17), (1000, 24)] {
            let (data, offsets) = rows(n, fields);
            for c in [Compression::new(Codec::Zstd), Compression::new(Codec::Lz4)] {
                let mut p = Packer::new(c);
                let Some((layout, stored, raw)) = p.pack(&data, &offsets, fields) else {
                    // Tiny batches may not shrink: stored as rows then, which is fine.
                    assert!(n < 10, "{n}x{fields} {c:?} not compressed");
                    continue;
                };
                // One row: the column headers may cost more than they save.
                assert!(layout == Layout::Columns || n == 1, "{n}x{fields} {c:?}");
                if layout == Layout::Rows {
                    continue;
                }
                assert_eq!(raw, data.len());
                assert!(stored.len() < data.len() + 4 * n);
                let (got, len) = unpack(c.codec, layout, stored, raw, n).unwrap();
                assert_eq!(len, data.len());
                assert_eq!(&got[..], &with_offsets(&data, &offsets)[..], "{n}x{fields}");
                // Projection: rows of the wanted fields alone, as written.
                let want: Vec<bool> = (0..fields).map(|f| f % 3 == 1).collect();
                let (proj, plen) = assemble(c.codec, stored, raw, n, Some(&want), None).unwrap();
                let mut expect = Vec::new();
                let mut eoff = Vec::new();
                for (i, &o) in offsets.iter().enumerate() {
                    let end = offsets.get(i + 1).map_or(data.len(), |&e| e as usize);
                    let row = &data[o as usize..end];
                    let mut cur = RowCursor::new(row);
                    cur.row_header(fields).unwrap();
                    eoff.push(expect.len() as u32);
                    push_header(want.iter().filter(|w| **w).count(), &mut expect);
                    for w in &want {
                        let from = cur.position();
                        cur.skip().unwrap();
                        if *w {
                            expect.extend_from_slice(&row[from..cur.position()]);
                        }
                    }
                }
                assert_eq!(plen, expect.len());
                assert_eq!(&proj[..], &with_offsets(&expect, &eoff)[..]);
                // Selected rows alone, whole or projected: the others an empty array each.
                let row = |rows: &[u8], offs: &[u32], i: usize| {
                    let end = offs.get(i + 1).map_or(rows.len(), |&e| e as usize);
                    rows[offs[i] as usize..end].to_vec()
                };
                for select in [vec![], vec![n - 1], (0..n).filter(|r| r % 5 == 2).collect()] {
                    for (want, full, full_offs) in
                        [(None, &data, &offsets), (Some(&want[..]), &expect, &eoff)]
                    {
                        let (sel, slen) =
                            assemble(c.codec, stored, raw, n, want, Some(&select)).unwrap();
                        let mut e = Vec::new();
                        let mut eo = Vec::new();
                        for r in 0..n {
                            eo.push(e.len() as u32);
                            if select.contains(&r) {
                                e.extend(row(full, full_offs, r));
                            } else {
                                e.push(UNSELECTED_ROW);
                            }
                        }
                        assert_eq!(slen, e.len(), "{n}x{fields} {select:?}");
                        assert_eq!(&sel[..], &with_offsets(&e, &eo)[..], "{n}x{fields}");
                    }
                }
                assert!(assemble(c.codec, stored, raw, n, None, Some(&[n])).is_err());
            }
        }
    }

    /// Packs the rows in columns with the encodings `plans` and `dicts` allow, checks that
    /// that is smaller than without them, and returns the layout, the stored bytes, the raw
    /// length and each column's encoding.
    fn pack_smaller(
        p: &mut Packer,
        data: &[u8],
        offsets: &[u32],
        fields: usize,
        plans: &[Option<bool>],
        dicts: &[bool],
    ) -> (Layout, Vec<u8>, usize, Vec<usize>) {
        let plain_len = p.pack(data, offsets, fields).unwrap().1.len();
        let (layout, stored, raw) = p
            .pack_encoded(data, offsets, fields, plans, dicts, &[])
            .unwrap();
        assert_eq!(layout, Layout::Columns);
        assert!(stored.len() < plain_len, "{} >= {plain_len}", stored.len());
        let stored = stored.to_vec();
        let encodings = encodings_of(&stored, raw, offsets.len());
        (layout, stored, raw, encodings)
    }

    /// The encoding of each column of a batch's stored bytes (`raw` bytes of `rows` rows).
    fn encodings_of(stored: &[u8], raw: usize, rows: usize) -> Vec<usize> {
        let cols = header(stored, raw, rows).unwrap().cols;
        cols.iter().map(|c| c.encoding).collect()
    }

    /// A packed batch's stored bytes (`raw` bytes of `rows` rows), which must be in columns,
    /// and the encoding of each column.
    fn in_columns(layout: Layout, stored: &[u8], raw: usize, rows: usize) -> (Vec<u8>, Vec<usize>) {
        assert_eq!(layout, Layout::Columns);
        (stored.to_vec(), encodings_of(stored, raw, rows))
    }

    /// Row `r` of rows `buf` of a batch of `n` rows: `len` bytes of rows, then their offsets
    /// as little-endian u32 (what `assemble` and `unpack` return).
    fn row_of(buf: &[u8], len: usize, n: usize, r: usize) -> Vec<u8> {
        let off = |i: usize| {
            let at = len + 4 * i;
            u32::from_le_bytes(buf[at..at + 4].try_into().unwrap()) as usize
        };
        let end = if r + 1 < n { off(r + 1) } else { len };
        buf[off(r)..end].to_vec()
    }

    /// The room of a batch's columns is taken as its last user left it (`RowBuf::take_len`,
    /// not zeroed): a batch of every encoding (planes, a dictionary, marked counts, a
    /// blocked string column, plain values) inflated after a buffer full of other bytes went
    /// back to the pool reads back exactly, whole, in projection, as selected rows and for
    /// the rows of one block; a branch that left a byte of its room unwritten would show it.
    #[test]
    fn columns_inflated_into_a_used_buffer_read_back_exactly() {
        use super::super::blocks::BLOCK_ROWS;
        use super::super::sketch::TAG_STRING;
        let n = 2 * BLOCK_ROWS + 77;
        let (mut data, mut offsets) = (Vec::new(), Vec::new());
        for r in 0..n {
            offsets.push(data.len() as u32);
            let row = [
                Value::Time(1_258_531_221_486_539_000 + r as i64 * 2_345_000),
                Value::String([&b"tcp"[..], b"udp", b"icmp"][r % 3].to_vec()),
                if r % 13 == 2 {
                    Value::Null
                } else {
                    Value::Count((r as u64 * 7_919) % 70_000)
                },
                Value::String(format!("C{:017x}", r * 104_729).into_bytes()),
                Value::Bool(r % 2 == 0),
            ];
            encode_row(&row, &mut data);
        }
        // Dirty buffers larger than the batch's room, back in the pool.
        let dirty = || {
            for _ in 0..4 {
                let mut b = RowBuf::take_len(1 << 20);
                b.vec_mut().fill(0xab);
            }
        };
        let mut cols = Vec::new();
        assert!(split(&data, &offsets, 5, &mut cols));
        let whole = with_offsets(&data, &offsets);
        for codec in [Codec::Zstd, Codec::Lz4] {
            let mut p = Packer::new(Compression::new(codec));
            let mut encoded = Vec::new();
            super::super::dict::Encoder::default().encode_all(&cols, n, |c| c == 1, &mut encoded);
            let split = super::super::codec::SplitRows {
                cols: &cols,
                planes: &[Some(true)],
                marked: &[false, false, true],
                dicts: &encoded,
                blocked: &[None, None, None, Some(TAG_STRING)],
            };
            let (layout, stored, raw) = p
                .pack_split(data.len(), || &data, &offsets, Some(split))
                .unwrap();
            let (stored, encodings) = in_columns(layout, stored, raw, n);
            assert_eq!(
                encodings,
                [PLANES, DICT, MARKED, BLOCKS, VALUES],
                "{codec:?}"
            );
            dirty();
            let (all, len) = assemble(codec, &stored, raw, n, None, None).unwrap();
            assert_eq!(&all[..], &whole[..], "{codec:?}");
            assert_eq!(len, data.len());
            dirty();
            let got = read_columns(codec, &stored, raw, n, None, (None, None)).unwrap();
            for (c, col) in cols.iter().enumerate() {
                assert_eq!(got.column(c), &col[..], "{codec:?} column {c}");
            }
            dirty();
            let want = [false, true, true, true, false];
            let (proj, _) = assemble(codec, &stored, raw, n, Some(&want), None).unwrap();
            let mut cur = RowCursor::new(&proj);
            let mut expected = Vec::new();
            for r in 0..n {
                let at = cur.position();
                cur.row_header(3).unwrap();
                for _ in 0..3 {
                    cur.skip().unwrap();
                }
                expected.clear();
                push_header(3, &mut expected);
                let row = &data
                    [offsets[r] as usize..offsets.get(r + 1).map_or(data.len(), |&o| o as usize)];
                let mut rc = RowCursor::at(row, 1);
                for &wanted in &want {
                    let from = rc.position();
                    rc.skip().unwrap();
                    if wanted {
                        expected.extend_from_slice(&row[from..rc.position()]);
                    }
                }
                assert_eq!(
                    &proj[at..cur.position()],
                    &expected[..],
                    "{codec:?} row {r}"
                );
            }
            dirty();
            let picked = [0, 1_500, n - 1];
            let (sel, sel_len) = assemble(codec, &stored, raw, n, None, Some(&picked)).unwrap();
            let row = |buf: &[u8], len: usize, r: usize| row_of(buf, len, n, r);
            for r in 0..n {
                let want = if picked.contains(&r) {
                    row(&whole, data.len(), r)
                } else {
                    vec![UNSELECTED_ROW]
                };
                assert_eq!(row(&sel, sel_len, r), want, "{codec:?} row {r}");
            }
            dirty();
            let mut needed = vec![0u64; n.div_ceil(64)];
            needed[BLOCK_ROWS / 64] = 1;
            let some =
                read_rows_of_columns(codec, &stored, raw, n, None, (None, None), Some(&needed))
                    .unwrap();
            for c in [0, 1, 2, 4] {
                assert_eq!(some.column(c), &cols[c][..], "{codec:?} column {c}");
            }
            // The blocked column: the rows of its second block, nil for the others.
            let mut expected = Vec::new();
            let mut cur = RowCursor::new(&cols[3]);
            for r in 0..n {
                let at = cur.position();
                cur.skip().unwrap();
                if (BLOCK_ROWS..2 * BLOCK_ROWS).contains(&r) {
                    expected.extend_from_slice(&cols[3][at..cur.position()]);
                } else {
                    expected.push(0xc0);
                }
            }
            assert_eq!(some.column(3), &expected[..], "{codec:?}");
        }
    }

    /// A batch whose uid-like and address columns are large: stored in blocks of rows
    /// (format 11), read back whole, in projection, as selected rows (only their blocks
    /// inflated) and for the rows some blocks hold (the others nil); damage to a block is
    /// named.
    #[test]
    fn large_string_columns_are_stored_in_blocks_and_read_back_as_written() {
        use super::super::blocks::BLOCK_ROWS;
        use super::super::sketch::{TAG_ADDR, TAG_STRING};
        let n = 2 * BLOCK_ROWS + 300;
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for r in 0..n {
            offsets.push(data.len() as u32);
            let row = [
                if r % 97 == 5 {
                    Value::Null
                } else {
                    Value::String(format!("C{:017x}", r * 7_919).into_bytes())
                },
                Value::Count(r as u64),
                Value::Addr(std::net::IpAddr::from([
                    0x2001, 0xdb8, 0, 0, 0, 0, 1, r as u16,
                ])),
                Value::String(b"S".to_vec()),
            ];
            encode_row(&row, &mut data);
        }
        let tags = [Some(TAG_STRING), None, Some(TAG_ADDR), Some(TAG_STRING)];
        let mut split_cols = Vec::new();
        assert!(split(&data, &offsets, 4, &mut split_cols));
        for codec in [Codec::Zstd, Codec::Lz4] {
            let mut p = Packer::new(Compression::new(codec));
            let (layout, stored, raw) = p.pack_blocked(&data, &offsets, 4, &tags).unwrap();
            let (stored, encodings) = in_columns(layout, stored, raw, n);
            let h = header(&stored, raw, n).unwrap();
            // The small string column stays whole.
            assert_eq!(encodings, [BLOCKS, VALUES, BLOCKS, VALUES], "{codec:?}");
            let (got, _) = unpack(codec, layout, &stored, raw, n).unwrap();
            assert_eq!(&got[..], &with_offsets(&data, &offsets)[..], "{codec:?}");
            let all = read_columns(codec, &stored, raw, n, None, (None, None)).unwrap();
            for (c, col) in split_cols.iter().enumerate() {
                assert_eq!(all.column(c), &col[..], "column {c}");
            }
            let want = [true, false, true, false];
            let (proj, _) = assemble(codec, &stored, raw, n, Some(&want), None).unwrap();
            let picked = [3, 1_023, 1_024, 1_030, 2_000, n - 1];
            let (sel, _) = assemble(codec, &stored, raw, n, None, Some(&picked)).unwrap();
            let whole = unpack(codec, layout, &stored, raw, n).unwrap().0;
            let row = |buf: &[u8], len: usize, r: usize| row_of(buf, len, n, r);
            let whole_len = data.len();
            let sel_len = sel.len() - 4 * n;
            for r in picked {
                assert_eq!(row(&sel, sel_len, r), row(&whole, whole_len, r), "row {r}");
            }
            assert_eq!(row(&sel, sel_len, 4), vec![UNSELECTED_ROW]);
            assert!(!proj.is_empty());
            // Rows of the second block alone: its values, nil for the others.
            let mut needed = vec![0u64; n.div_ceil(64)];
            needed[BLOCK_ROWS / 64] = 1;
            let some =
                read_rows_of_columns(codec, &stored, raw, n, None, (None, None), Some(&needed))
                    .unwrap();
            let mut cur = RowCursor::new(some.column(0));
            let mut exp = RowCursor::new(&split_cols[0]);
            for r in 0..n {
                let (a, b) = (cur.position(), exp.position());
                cur.skip().unwrap();
                exp.skip().unwrap();
                let got = &some.column(0)[a..cur.position()];
                if (BLOCK_ROWS..2 * BLOCK_ROWS).contains(&r) {
                    assert_eq!(got, &split_cols[0][b..exp.position()], "row {r}");
                } else {
                    assert_eq!(got, &[0xc0], "row {r}");
                }
            }
            assert_eq!(some.column(1), &split_cols[1][..]);
            // A damaged byte of the last block: named when that block is read, not before.
            let mut bad = stored.clone();
            let end = h.spans().next().unwrap().end;
            bad[end - 1] ^= 0x40;
            let err = read_columns(codec, &bad, raw, n, None, (None, None)).unwrap_err();
            assert!(err.contains("column 0: block 2"), "{err}");
            assert!(
                read_rows_of_columns(codec, &bad, raw, n, None, (None, None), Some(&needed))
                    .is_ok()
            );
            // Every byte of a blocked column is covered: its directory (and filters) by the
            // column's checksum, each block by its own.
            let span = h.spans().next().unwrap();
            let dir =
                super::super::blocks::Directory::read(&stored[span.clone()], n, h.cols[0].raw)
                    .unwrap()
                    .len;
            for at in (span.start..span.start + dir).chain((span.start + dir..span.end).step_by(61))
            {
                let mut bad = stored.clone();
                bad[at] ^= 0x10;
                assert!(
                    read_columns(codec, &bad, raw, n, None, (None, None)).is_err(),
                    "{codec:?}: byte {at} of the column"
                );
            }
        }
    }

    /// Rows of a count (every width, some unset), a port, an int (negative too), a string
    /// and a count column with a string among its values: what the writer stores marked (the
    /// first three), read back whole, in projection, as selected rows and kept marked.
    #[test]
    fn count_columns_are_stored_marked_and_read_back_as_written() {
        use crate::types::Type;
        use crate::value::ValueRef;
        let n = 300;
        let count = |r: u64| match r % 6 {
            0 => Value::Null,
            1 => Value::Count(r),
            2 => Value::Count(r * 1_000),
            3 => Value::Count(r << 20),
            4 => Value::Count(u64::MAX - r),
            _ => Value::Count(r % 128),
        };
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for r in 0..n as u64 {
            offsets.push(data.len() as u32);
            let row = [
                count(r),
                Value::Port(r * 211 % 65_536),
                Value::Int(if r % 3 == 0 {
                    -(r as i64) * 70_001
                } else {
                    r as i64
                }),
                Value::String(format!("C{r:017}").into_bytes()),
                if r == 200 {
                    Value::String(b"x".to_vec())
                } else {
                    Value::Count(r)
                },
            ];
            encode_row(&row, &mut data);
        }
        let marks = [true; 5];
        for codec in [Codec::Zstd, Codec::Lz4] {
            let mut p = Packer::new(Compression::new(codec));
            let (layout, stored, raw) = p
                .pack_encoded(&data, &offsets, 5, &[], &[], &marks)
                .unwrap();
            let (stored, encodings) = in_columns(layout, stored, raw, n);
            assert_eq!(
                encodings,
                [MARKED, MARKED, MARKED, VALUES, VALUES],
                "{codec:?}"
            );
            let (got, len) = unpack(codec, layout, &stored, raw, n).unwrap();
            assert_eq!(len, data.len());
            assert_eq!(&got[..], &with_offsets(&data, &offsets)[..], "{codec:?}");
            let mut split_cols = Vec::new();
            assert!(split(&data, &offsets, 5, &mut split_cols));
            let all = read_columns(codec, &stored, raw, n, None, (None, None)).unwrap();
            for (c, col) in split_cols.iter().enumerate() {
                assert_eq!(all.column(c), &col[..], "column {c}");
                assert!(all.marked(c).is_none());
            }
            // Kept marked: each row's marker and payload as written.
            let kept = read_columns(codec, &stored, raw, n, None, (None, Some(&marks))).unwrap();
            let types = [Type::Count, Type::Port, Type::Int];
            for (c, ty) in types.iter().enumerate() {
                let m = kept.marked(c).unwrap();
                assert!(kept.column(c).is_empty());
                let mut cur = RowCursor::new(&split_cols[c]);
                let mut pos = 0;
                for r in 0..n {
                    let (v, kind) = super::super::marked::value(&m, r, &mut pos);
                    match cur.read(ty).unwrap() {
                        ValueRef::Null => assert_eq!(kind, super::super::marked::UNSET),
                        ValueRef::Count(x) | ValueRef::Port(x) => assert_eq!(v, x, "{c} {r}"),
                        ValueRef::Int(x) => assert_eq!(v, x as u64, "{c} {r}"),
                        v => panic!("{v:?}"),
                    }
                }
                assert_eq!(pos, m.payload.len());
            }
            assert!(kept.marked(3).is_none() && kept.marked(4).is_none());
            assert_eq!(kept.column(4), &split_cols[4][..]);
            // Projection and selected rows rebuild the marked columns' values.
            let want = [false, true, true, false, false];
            let (proj, _) = assemble(codec, &stored, raw, n, Some(&want), None).unwrap();
            let mut cur = RowCursor::new(&proj);
            for r in 0..n as u64 {
                cur.row_header(2).unwrap();
                assert_eq!(
                    cur.read(&Type::Port).unwrap(),
                    ValueRef::Port(r * 211 % 65_536)
                );
                cur.skip().unwrap();
            }
            let select = [0usize, 4, 199, 200, n - 1];
            let (sel, len) = assemble(codec, &stored, raw, n, None, Some(&select)).unwrap();
            let offs: Vec<usize> = sel[len..]
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                .collect();
            for &r in &select {
                let end = offs.get(r + 1).copied().unwrap_or(len);
                let want_end = offsets.get(r + 1).map_or(data.len(), |&o| o as usize);
                assert_eq!(
                    &sel[offs[r]..end],
                    &data[offsets[r] as usize..want_end],
                    "row {r}"
                );
            }
            // Every stored byte damaged: an error or the promised size, never a panic.
            for i in 0..stored.len() {
                let mut bad = stored.clone();
                bad[i] ^= 0x41;
                if let Ok((buf, len)) = unpack(codec, layout, &bad, raw, n) {
                    assert_eq!((buf.len(), len), (raw + 4 * n, raw));
                }
                if let Ok(cols) = read_columns(codec, &bad, raw, n, None, (None, Some(&marks))) {
                    assert!(cols.marked(0).is_none_or(|m| m.markers.len() == n));
                }
            }
        }
    }

    /// Rows of a time (increasing, microseconds), an interval (some unset), a string and a
    /// time column whose values fit no plane (one is a string): what the writer stores as
    /// integer planes, read back whole, in projection and as columns.
    #[test]
    fn time_columns_are_stored_as_planes_and_read_back_as_written() {
        let n = 700;
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for r in 0..n as i64 {
            offsets.push(data.len() as u32);
            let row = [
                Value::Time(1_258_531_221_486_539_000 + r * 2_345_000 - (r % 5) * 1_000_000),
                if r % 11 == 3 {
                    Value::Null
                } else {
                    Value::Interval((r % 97) * 1_250_000_000)
                },
                Value::String(format!("C{r:017}").into_bytes()),
                if r == 400 {
                    Value::String(b"x".to_vec())
                } else {
                    Value::Time(r * 1_000)
                },
            ];
            encode_row(&row, &mut data);
        }
        let plans = [Some(true), Some(false), None, Some(true)];
        for codec in [Codec::Zstd, Codec::Lz4] {
            let mut p = Packer::new(Compression::new(codec));
            let (layout, stored, raw, encodings) =
                pack_smaller(&mut p, &data, &offsets, 4, &plans, &[]);
            assert_eq!(encodings, [PLANES, PLANES, VALUES, VALUES], "{codec:?}");
            let (got, len) = unpack(codec, layout, &stored, raw, n).unwrap();
            assert_eq!(len, data.len());
            assert_eq!(&got[..], &with_offsets(&data, &offsets)[..], "{codec:?}");
            let want = [true, false, false, true];
            let (proj, _) = assemble(codec, &stored, raw, n, Some(&want), None).unwrap();
            let mut cur = RowCursor::new(&proj);
            for r in 0..n as i64 {
                cur.row_header(2).unwrap();
                let m = cur.marker().unwrap();
                let ts = cur.int(m, &crate::types::Type::Time).unwrap();
                assert_eq!(
                    ts,
                    1_258_531_221_486_539_000 + r * 2_345_000 - (r % 5) * 1_000_000
                );
                cur.skip().unwrap();
            }
            let all = read_columns(codec, &stored, raw, n, None, (None, None)).unwrap();
            let mut split_cols = Vec::new();
            assert!(split(&data, &offsets, 4, &mut split_cols));
            for (c, col) in split_cols.iter().enumerate() {
                assert_eq!(all.column(c), &col[..], "column {c}");
            }
            // Kept as numbers: each row's number, and a bit for each row that has one.
            let marks = [true, true, true, true];
            let kept = read_columns(codec, &stored, raw, n, None, (None, Some(&marks))).unwrap();
            for c in 0..2 {
                let ints = kept.ints(c).unwrap();
                assert!(kept.column(c).is_empty());
                let mut cur = RowCursor::new(&split_cols[c]);
                for r in 0..n {
                    let ty = [crate::types::Type::Time, crate::types::Type::Interval][c].clone();
                    let set = ints.set[r / 64] >> (r % 64) & 1 == 1;
                    match cur.read(&ty).unwrap() {
                        crate::value::ValueRef::Null => assert!(!set, "column {c} row {r}"),
                        crate::value::ValueRef::Time(x) | crate::value::ValueRef::Interval(x) => {
                            assert!(set);
                            assert_eq!(ints.values[r], x as u64, "column {c} row {r}");
                        }
                        v => panic!("{v:?}"),
                    }
                }
            }
            assert!(
                kept.ints(2).is_none() && kept.ints(3).is_none(),
                "not planes"
            );
            // Selected rows of planes columns: the rows as written, and only them.
            let select = [0usize, 3, 14, 399, 400, n - 1];
            let (sel, slen) = assemble(codec, &stored, raw, n, None, Some(&select)).unwrap();
            let mut e = Vec::new();
            let mut eo = Vec::new();
            for r in 0..n {
                eo.push(e.len() as u32);
                if select.contains(&r) {
                    let end = offsets.get(r + 1).map_or(data.len(), |&o| o as usize);
                    e.extend_from_slice(&data[offsets[r] as usize..end]);
                } else {
                    e.push(UNSELECTED_ROW);
                }
            }
            assert_eq!(slen, e.len());
            assert_eq!(&sel[..], &with_offsets(&e, &eo)[..], "{codec:?}");
        }
    }

    /// Rows of a string column of few values (some unset), an address column of a few
    /// hundred (two code bytes), a column of unique strings and a short column whose values
    /// all differ: what the writer stores as dictionaries, read back whole, in projection and
    /// as columns.
    #[test]
    fn string_columns_are_stored_as_dictionaries_and_read_back_as_written() {
        let n = 3000;
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        let addr = |r: usize| -> std::net::IpAddr {
            if r.is_multiple_of(7) {
                std::net::Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, (r % 300) as u16).into()
            } else {
                std::net::Ipv4Addr::new(10, 0, (r % 3) as u8, (r * 13 % 300 % 256) as u8).into()
            }
        };
        for r in 0..n {
            offsets.push(data.len() as u32);
            let row = [
                if r % 9 == 4 {
                    Value::Null
                } else {
                    Value::String([&b"tcp"[..], b"udp", b"icmp", b"ShADadFf"][r % 4].to_vec())
                },
                Value::Addr(addr(r)),
                Value::String(format!("C{r:017}").into_bytes()),
            ];
            encode_row(&row, &mut data);
        }
        let few = 10;
        let (few_data, few_offsets) = (&data[..offsets[few] as usize], &offsets[..few]);
        for codec in [Codec::Zstd, Codec::Lz4] {
            let mut p = Packer::new(Compression::new(codec));
            let (layout, stored, raw, encodings) =
                pack_smaller(&mut p, &data, &offsets, 3, &[], &[true, true, true]);
            assert_eq!(encodings, [DICT, DICT, VALUES], "{codec:?}");
            assert_eq!(encoded(&stored, raw, n, DICT).unwrap(), [0, 1]);
            let (got, len) = unpack(codec, layout, &stored, raw, n).unwrap();
            assert_eq!(len, data.len());
            assert_eq!(&got[..], &with_offsets(&data, &offsets)[..], "{codec:?}");
            let (proj, _) =
                assemble(codec, &stored, raw, n, Some(&[false, true, false]), None).unwrap();
            let mut cur = RowCursor::new(&proj);
            for r in 0..n {
                cur.row_header(1).unwrap();
                let m = cur.marker().unwrap();
                let v = cur.scalar(m, &crate::types::Type::Addr).unwrap();
                assert_eq!(v, crate::value::ValueRef::Addr(addr(r)), "row {r}");
            }
            let all = read_columns(codec, &stored, raw, n, None, (None, None)).unwrap();
            let mut split_cols = Vec::new();
            assert!(split(&data, &offsets, 3, &mut split_cols));
            for (c, col) in split_cols.iter().enumerate() {
                assert_eq!(all.column(c), &col[..], "column {c}");
            }
            // Ten rows: the dictionary of the first column would not be smaller.
            let (_, stored, raw) = p
                .pack_encoded(few_data, few_offsets, 3, &[], &[true, true, true], &[])
                .unwrap();
            let stored = stored.to_vec();
            assert!(encoded(&stored, raw, few, DICT).unwrap().len() < 3);
            let (got, _) = unpack(codec, Layout::Columns, &stored, raw, few).unwrap();
            assert_eq!(&got[..], &with_offsets(few_data, few_offsets)[..]);
        }
    }

    #[test]
    fn rows_that_do_not_fit_fall_back_to_the_row_layout() {
        let (data, offsets) = rows(300, 5);
        let mut p = Packer::new(Compression::new(Codec::Zstd));
        // The schema says 6 fields: every row has 5.
        let (layout, stored, raw) = p.pack(&data, &offsets, 6).unwrap();
        assert_eq!(layout, Layout::Rows);
        let (got, _) = unpack(Codec::Zstd, layout, stored, raw, 300).unwrap();
        assert_eq!(&got[..], &with_offsets(&data, &offsets)[..]);
        // A long header where a short one would do.
        let mut cols = Vec::new();
        assert!(!split(&[0xdc, 0, 1, 1], &[0], 1, &mut cols));
        assert!(split(&[0x91, 1], &[0], 1, &mut cols));
        // Trailing bytes after the last field.
        assert!(!split(&[0x91, 1, 2], &[0], 1, &mut cols));
        assert!(!split(&[0x90], &[0], 0, &mut cols));
        // Rows are split two at a time, then the odd last one alone: a bad row is caught in
        // either place, in either half of a pair.
        assert!(split(
            &[0x91, 1, 0x91, 2, 0x91, 3],
            &[0, 2, 4],
            1,
            &mut cols
        ));
        assert_eq!(cols, vec![vec![1, 2, 3]]);
        assert!(!split(&[0x91, 1, 0x91, 2, 9], &[0, 2], 1, &mut cols));
        assert!(!split(&[0x92, 1, 0x91, 2], &[0, 2], 1, &mut cols));
        assert!(!split(
            &[0x91, 1, 0x91, 2, 0x92, 3, 3],
            &[0, 2, 4],
            1,
            &mut cols
        ));
        assert!(!split(&[0x91, 1, 0x91, 2, 0x91], &[0, 2, 4], 1, &mut cols));
    }

    /// Every stored byte damaged in turn, and the stored bytes cut short: an error or rows
    /// that still have the promised size, never a panic (the CRC catches damage in a segment
    /// before this; this is the last line).
    #[test]
    fn damaged_stored_bytes_are_errors_not_panics() {
        let (mut data, mut offsets) = rows(60, 12);
        // And a column stored as integer planes (the last).
        let (mut with_times, mut times_at) = (Vec::new(), Vec::new());
        for (r, &o) in offsets.iter().enumerate() {
            let end = offsets.get(r + 1).map_or(data.len(), |&e| e as usize);
            times_at.push(with_times.len() as u32);
            let mut cur = RowCursor::new(&data[o as usize..end]);
            cur.row_header(12).unwrap();
            with_times.push(0x9d);
            with_times.extend_from_slice(&data[o as usize + cur.position()..end]);
            crate::value::RowEncoder::new(&mut with_times).int(r as i64 * 7_000 + 1_000_000);
        }
        (data, offsets) = (with_times, times_at);
        // And a column stored as a dictionary (the very last).
        let (mut with_states, mut states_at) = (Vec::new(), Vec::new());
        for (r, &o) in offsets.iter().enumerate() {
            let end = offsets.get(r + 1).map_or(data.len(), |&e| e as usize);
            states_at.push(with_states.len() as u32);
            with_states.push(0x9e);
            with_states.extend_from_slice(&data[o as usize + 1..end]);
            let state: &[u8] = [&b"SF"[..], b"S0", b"REJ", b"OTH"][r % 4];
            crate::value::RowEncoder::new(&mut with_states).bytes(state);
        }
        (data, offsets) = (with_states, states_at);
        let mut plans = vec![None; 12];
        plans.extend([Some(true), None]);
        let mut dicts = vec![false; 13];
        dicts.push(true);
        for codec in [Codec::Zstd, Codec::Lz4] {
            let mut p = Packer::new(Compression::new(codec));
            let (layout, stored, raw) = p
                .pack_encoded(&data, &offsets, 14, &plans, &dicts, &[])
                .unwrap();
            assert_eq!(header(stored, raw, 60).unwrap().cols[12].encoding, PLANES);
            assert_eq!(header(stored, raw, 60).unwrap().cols[13].encoding, DICT);
            assert_eq!(layout, Layout::Columns);
            let stored = stored.to_vec();
            // Selected rows (the dictionary column's values found by their codes) are those
            // rows as written; the others an empty array each.
            let rows_of = |buf: &[u8], len: usize| -> Vec<Vec<u8>> {
                let offs: Vec<usize> = buf[len..]
                    .chunks_exact(4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                    .collect();
                (0..offs.len())
                    .map(|i| buf[offs[i]..offs.get(i + 1).copied().unwrap_or(len)].to_vec())
                    .collect()
            };
            let (full, len) = unpack(codec, layout, &stored, raw, 60).unwrap();
            let full = rows_of(&full, len);
            for select in [vec![0usize, 7, 31, 59], vec![58], (0..60).collect()] {
                let (sel, len) = assemble(codec, &stored, raw, 60, None, Some(&select)).unwrap();
                for (r, row) in rows_of(&sel, len).iter().enumerate() {
                    if select.contains(&r) {
                        assert_eq!(row, &full[r], "{codec:?} row {r}");
                    } else {
                        assert_eq!(row, &[UNSELECTED_ROW], "{codec:?} row {r}");
                    }
                }
            }
            let mut errors = 0;
            for i in 0..stored.len() {
                for mask in [0x01u8, 0xff] {
                    let mut bad = stored.clone();
                    bad[i] ^= mask;
                    match unpack(codec, layout, &bad, raw, 60) {
                        Ok((buf, len)) => assert_eq!((buf.len(), len), (raw + 240, raw)),
                        Err(_) => errors += 1,
                    }
                    let want = vec![true; 14];
                    let _ = assemble(codec, &bad, raw, 60, Some(&want), None);
                }
            }
            assert!(errors > stored.len() / 2, "{codec:?}: {errors} errors");
            for cut in [0, 1, 5, stored.len() / 2, stored.len() - 1] {
                assert!(unpack(codec, layout, &stored[..cut], raw, 60).is_err());
            }
            assert!(unpack(codec, layout, &stored, raw + 1, 60).is_err());
            assert!(unpack(codec, layout, &stored, raw, 61).is_err());
            assert!(assemble(codec, &stored, raw, 60, Some(&[true; 13]), None).is_err());
        }
    }
}
