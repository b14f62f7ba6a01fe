//! Blocked columns (segment format 11): a large column of strings or addresses cut into
//! blocks of rows, each block compressed on its own behind a Bloom filter of its values, so
//! that a needle inflates only the blocks that may hold it and a printed row only the block
//! it is in.
//!
//! A batch of 8,192 rows whose every row holds a distinct uid stored that column as one frame
//! of about 100 KiB: a query for one uid, found by the batch's sketch in most batches of an
//! archive whose day repeats, inflated all of it, and printing the one matching row inflated
//! it again (`docs/dev/performance-log.md`, "blocks of rows"). Only the large columns of values
//! are cut (encoding [`super::columns::BLOCKS`] 4 of the column header): small columns, and
//! those stored as dictionaries, planes or marked, stay whole, so scans pay nothing.
//!
//! # Layout
//!
//! A blocked column's stored bytes (its *encoded* length in the column header equals its
//! stored length: the column is never compressed as a whole), all integers little-endian:
//!
//! 1. the *directory*: `rows_per_block` u32 (at least 1), the block count u32 (exactly the
//!    batch's rows divided by `rows_per_block`, rounded up; the last block holds the rest),
//!    the filter probes u8 (`k`; 0: no filters) and the filter length u32 (bytes per block; 0
//!    when `k` is 0, else a positive multiple of 8), then per block its raw length u32, its
//!    stored length u32 and the CRC-32 (IEEE) of its stored bytes u32, then the blocks'
//!    filters back to back (block *j*'s at *j* × filter length);
//! 2. the blocks' stored bytes back to back, in row order. A block's raw bytes are the
//!    msgpack values of its rows (the column's bytes from its first row to the next block's);
//!    a block whose stored length equals its raw length is stored as it is, any other is one
//!    frame of the batch's codec that inflates to exactly its raw length.
//!
//! The column's CRC in the batch's header (format 9) covers the directory alone, so that a
//! reader of one block checks the directory and that block only. A block's filter holds
//! [`super::sketch::value_hash`] of every set value of its rows, hashed as the batch's sketch
//! hashes them (strings with `TAG_STRING`, addresses as stored, 4 or 16 bytes, with
//! `TAG_ADDR`), probed as the sketch's filter is ([`super::sketch::bloom_may_contain`]).
//!
//! # Invariants
//!
//! - The raw lengths add up to the column's raw length and the directory plus the stored
//!   lengths to its stored length; every block holds exactly its rows' values (checked when
//!   it is inflated: a reader that walks the column finds too few or too many values).
//! - A filter never misses a value of its block (false positives only), so a block whose
//!   filter does not hold a value has no row with that value.
//! - A block a reader leaves out ([`decode`]'s `needed`) is given one nil per row instead of
//!   its values: a consumer of such a column must not read those rows (the query masks them
//!   out of its selection, see `crate::query::search`).

use std::ops::Range;

use super::bloom::{bloom_insert, bloom_may_contain, value_hash, TAG_ADDR, TAG_STRING};
use crate::types::Type;
use crate::value::RowCursor;

/// Rows per block.
pub(crate) const BLOCK_ROWS: usize = 1024;
/// Columns of fewer raw bytes stay whole (a block of a small column is not worth its frame).
pub(crate) const MIN_BLOCKED_RAW: usize = 32 * 1024;
/// Filter bits per value, and probes: about 5.6% false positives, which a block filter
/// checked only after the batch's sketch (10 bits, 0.9%) said "maybe" can afford.
const FILTER_BITS_PER_VALUE: usize = 6;
const FILTER_HASHES: u8 = 4;

/// Bytes of the directory before its per-block entries.
pub(crate) const FIXED: usize = 13;
/// Bytes of one block's entry in the directory.
const ENTRY: usize = 12;
/// The value of a row of a block left out.
const NIL: u8 = 0xc0;

/// The hash tag of the values of a column of type `ty` if the writer cuts it into blocks (a
/// scalar string, enum, pattern or file column), else `None`. The format allows address
/// columns too (hashed with `TAG_ADDR`), but the writer leaves them whole: the batch's sketch
/// already finds a rare address, and their filters made a generated archive 3% larger.
pub(crate) fn plan(ty: &Type) -> Option<u8> {
    match ty {
        Type::String | Type::Enum | Type::Pattern | Type::File => Some(TAG_STRING),
        _ => None,
    }
}

/// Whether a column of `raw` bytes and `rows` rows is cut into blocks.
pub(crate) fn wanted(raw: usize, rows: usize) -> bool {
    raw >= MIN_BLOCKED_RAW && rows > BLOCK_ROWS
}

/// The blocks of a column being written: where each starts in the column's values, and its
/// filter.
#[derive(Debug, Default)]
pub(crate) struct Cutter {
    /// Where each block's values start, then the column's end.
    pub(crate) bounds: Vec<usize>,
    /// The filters, [`Cutter::filter_len`] bytes each.
    pub(crate) filters: Vec<u8>,
    pub(crate) filter_len: usize,
    hashes: Vec<u64>,
}

impl Cutter {
    /// Cuts `col` (the msgpack values of `rows` rows of a type hashed with `tag`, see
    /// [`plan`]) into blocks of [`BLOCK_ROWS`] rows and builds their filters; `false` when a
    /// value is not a string or address (the column then stays whole).
    pub(crate) fn cut(&mut self, col: &[u8], rows: usize, tag: u8) -> bool {
        let ty = &if tag == TAG_ADDR {
            Type::Addr
        } else {
            Type::String
        };
        self.bounds.clear();
        self.filters.clear();
        let blocks = rows.div_ceil(BLOCK_ROWS);
        // The filter of the fullest block sizes them all (a block may repeat values: a few
        // bits too many, never too few).
        self.filter_len = (BLOCK_ROWS.min(rows) * FILTER_BITS_PER_VALUE).div_ceil(64) * 8;
        self.filters.resize(blocks * self.filter_len, 0);
        let mut c = RowCursor::new(col);
        for b in 0..blocks {
            self.bounds.push(c.position());
            self.hashes.clear();
            let n = BLOCK_ROWS.min(rows - b * BLOCK_ROWS);
            for _ in 0..n {
                let Ok(m) = c.marker() else { return false };
                if m == NIL {
                    continue;
                }
                let Ok(bytes) = c.bin(m, ty) else {
                    return false;
                };
                if tag == TAG_ADDR && bytes.len() != 4 && bytes.len() != 16 {
                    return false;
                }
                self.hashes.push(value_hash(tag, bytes));
            }
            let filter = &mut self.filters[b * self.filter_len..(b + 1) * self.filter_len];
            for &h in &self.hashes {
                bloom_insert(filter, FILTER_HASHES, h);
            }
        }
        self.bounds.push(c.position());
        c.position() == col.len()
    }

    /// Appends the directory of the blocks whose stored bytes are `stored` (their lengths
    /// and checksums, in order) to `out`.
    pub(crate) fn push_directory(&self, stored: &[(usize, u32)], out: &mut Vec<u8>) {
        let blocks = stored.len();
        let rows_per_block = BLOCK_ROWS as u32;
        out.extend_from_slice(&rows_per_block.to_le_bytes());
        out.extend_from_slice(&(blocks as u32).to_le_bytes());
        out.push(FILTER_HASHES);
        out.extend_from_slice(&(self.filter_len as u32).to_le_bytes());
        for (b, &(len, crc)) in stored.iter().enumerate() {
            let raw = self.bounds[b + 1] - self.bounds[b];
            out.extend_from_slice(&(raw as u32).to_le_bytes());
            out.extend_from_slice(&(len as u32).to_le_bytes());
            out.extend_from_slice(&crc.to_le_bytes());
        }
        out.extend_from_slice(&self.filters);
    }
}

/// One block of a blocked column, as its directory describes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Block {
    /// Its raw length (its values).
    pub(crate) raw: usize,
    /// Where its stored bytes are in the column's, and how many.
    pub(crate) at: usize,
    pub(crate) stored: usize,
    crc: u32,
}

/// A blocked column's directory, read and checked.
#[derive(Debug, Clone)]
pub(crate) struct Directory<'a> {
    pub(crate) rows_per_block: usize,
    pub(crate) blocks: Vec<Block>,
    hashes: u8,
    filter_len: usize,
    filters: &'a [u8],
    /// Its length: where the first block's stored bytes start.
    pub(crate) len: usize,
}

fn u32_at(b: &[u8], at: usize) -> Result<usize, String> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize)
        .ok_or_else(|| "a blocked column's directory runs past its bytes".to_string())
}

/// The length of a directory from its first [`FIXED`] bytes (`None` when they are fewer).
pub(crate) fn directory_len(fixed: &[u8]) -> Option<usize> {
    let count = u32_at(fixed, 4).ok()?;
    let filter_len = u32_at(fixed, 9).ok()?;
    count
        .checked_mul(ENTRY + filter_len)
        .and_then(|n| n.checked_add(FIXED))
}

impl<'a> Directory<'a> {
    /// Reads and checks the directory of the blocked column `col` (its stored bytes) of
    /// `rows` rows and `raw` raw bytes.
    pub(crate) fn read(col: &'a [u8], rows: usize, raw: usize) -> Result<Directory<'a>, String> {
        let rows_per_block = u32_at(col, 0)?;
        let count = u32_at(col, 4)?;
        let hashes = *col
            .get(8)
            .ok_or("a blocked column's directory is cut short")?;
        let filter_len = u32_at(col, 9)?;
        if rows_per_block == 0 || count != rows.div_ceil(rows_per_block) {
            return Err(format!(
                "{count} blocks of {rows_per_block} rows for a batch of {rows} rows"
            ));
        }
        if (hashes == 0) != (filter_len == 0) || filter_len % 8 != 0 {
            return Err(format!(
                "block filters of {filter_len} bytes and {hashes} probes"
            ));
        }
        let entries = FIXED + count * ENTRY;
        let len = count
            .checked_mul(filter_len)
            .and_then(|f| f.checked_add(entries))
            .filter(|&l| l <= col.len())
            .ok_or("a blocked column's directory runs past its bytes")?;
        let mut blocks = Vec::with_capacity(count);
        let (mut at, mut raw_total) = (len, 0usize);
        for b in 0..count {
            let e = FIXED + b * ENTRY;
            let (r, s) = (u32_at(col, e)?, u32_at(col, e + 4)?);
            let crc = u32_at(col, e + 8)? as u32;
            if s > r {
                return Err(format!("block {b}: {r} raw bytes stored in {s}"));
            }
            blocks.push(Block {
                raw: r,
                at,
                stored: s,
                crc,
            });
            at += s;
            raw_total += r;
        }
        if raw_total != raw || at != col.len() {
            return Err(format!(
                "blocks of {raw_total} raw bytes in {at} stored bytes, {raw} and {} expected",
                col.len()
            ));
        }
        Ok(Directory {
            rows_per_block,
            blocks,
            hashes,
            filter_len,
            filters: &col[entries..len],
            len,
        })
    }

    /// The rows of block `b` of a batch of `rows` rows.
    pub(crate) fn rows_of(&self, b: usize, rows: usize) -> Range<usize> {
        let start = b * self.rows_per_block;
        start.min(rows)..(start + self.rows_per_block).min(rows)
    }

    /// Whether block `b` may hold a value hashed to `h` (`true` without filters).
    pub(crate) fn may_contain(&self, b: usize, h: u64) -> bool {
        if self.hashes == 0 {
            return true;
        }
        let f = &self.filters[b * self.filter_len..(b + 1) * self.filter_len];
        bloom_may_contain(f, self.hashes, h)
    }

    /// Whether the column has filters.
    pub(crate) fn filtered(&self) -> bool {
        self.hashes != 0
    }
}

/// Inflates the blocked column `col` (its stored bytes, its directory `dir`) of `rows` rows
/// into `dst` (room for its raw length): every block, or those `needed` says yes to (by their
/// rows), the others one nil per row. `inflate` decompresses one frame into exactly its
/// output. Each block inflated is checked against its CRC first. Returns the bytes written;
/// `starts` is given each block's first row and where its values start in `dst`.
pub(crate) fn decode(
    col: &[u8],
    dir: &Directory<'_>,
    rows: usize,
    (dst, starts): (&mut [u8], &mut Vec<(usize, usize)>),
    needed: Option<&dyn Fn(Range<usize>) -> bool>,
    inflate: impl Fn(&[u8], &mut [u8]) -> Result<(), String>,
) -> Result<usize, String> {
    let mut w = 0;
    starts.clear();
    for (b, block) in dir.blocks.iter().enumerate() {
        let range = dir.rows_of(b, rows);
        starts.push((range.start, w));
        if needed.is_some_and(|n| !n(range.clone())) {
            let n = range.len();
            dst.get_mut(w..w + n)
                .ok_or("a block left out has more rows than room")?
                .fill(NIL);
            w += n;
            continue;
        }
        let src = &col[block.at..block.at + block.stored];
        let sum = crc32fast::hash(src);
        if sum != block.crc {
            return Err(format!(
                "block {b}: checksum mismatch: stored {:08x}, computed {sum:08x}",
                block.crc
            ));
        }
        let out = dst
            .get_mut(w..w + block.raw)
            .ok_or("the blocks run past the column's raw length")?;
        if block.stored == block.raw {
            out.copy_from_slice(src);
        } else {
            inflate(src, out).map_err(|e| format!("block {b}: {e}"))?;
        }
        w += block.raw;
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{encode_row, Value};

    /// The values of `rows` rows of a string column (every seventh unset) back to back.
    fn column(rows: usize) -> Vec<u8> {
        let mut col = Vec::new();
        for r in 0..rows {
            let v = if r % 7 == 3 {
                Value::Null
            } else {
                Value::String(format!("C{r:017}").into_bytes())
            };
            let mut row = Vec::new();
            encode_row(&[v], &mut row);
            col.extend_from_slice(&row[1..]);
        }
        col
    }

    fn write(col: &[u8], rows: usize) -> Vec<u8> {
        let mut cut = Cutter::default();
        assert!(cut.cut(col, rows, TAG_STRING));
        let stored: Vec<(usize, u32)> = cut
            .bounds
            .windows(2)
            .map(|w| (w[1] - w[0], crc32fast::hash(&col[w[0]..w[1]])))
            .collect();
        let mut out = Vec::new();
        cut.push_directory(&stored, &mut out);
        out.extend_from_slice(col);
        out
    }

    #[test]
    fn blocks_read_back_whole_or_in_part_and_filters_find_their_values() {
        let rows = 3 * BLOCK_ROWS + 5;
        let col = column(rows);
        let stored = write(&col, rows);
        let dir = Directory::read(&stored, rows, col.len()).unwrap();
        assert_eq!(dir.blocks.len(), 4);
        let no_inflate = |_: &[u8], _: &mut [u8]| -> Result<(), String> { unreachable!() };
        let mut dst = vec![0; col.len()];
        let mut starts = Vec::new();
        let n = decode(
            &stored,
            &dir,
            rows,
            (&mut dst, &mut starts),
            None,
            no_inflate,
        )
        .unwrap();
        assert_eq!(&dst[..n], &col[..]);
        // Where row `k`'s value starts in the column.
        let at = |k: usize| {
            let mut c = RowCursor::new(&col);
            c.skip_many(k).unwrap();
            c.position()
        };
        assert_eq!(starts[2], (2 * BLOCK_ROWS, at(2 * BLOCK_ROWS)));
        // Only the block of row 2,000: the others are nils, one per row.
        let only = |r: Range<usize>| r.contains(&2000);
        let n = decode(
            &stored,
            &dir,
            rows,
            (&mut dst, &mut starts),
            Some(&only),
            no_inflate,
        )
        .unwrap();
        // Block 0 left out (a nil per row), block 1 whole.
        let second = at(2 * BLOCK_ROWS) - at(BLOCK_ROWS);
        assert_eq!(starts[2], (2 * BLOCK_ROWS, BLOCK_ROWS + second));
        let mut c = RowCursor::new(&dst[..n]);
        for r in 0..rows {
            let at = c.position();
            c.skip().unwrap();
            if (BLOCK_ROWS..2 * BLOCK_ROWS).contains(&r) {
                continue;
            }
            assert_eq!(&dst[at..c.position()], &[NIL], "row {r}");
        }
        assert_eq!(c.position(), n);
        // Every value is in its block's filter; most are not in the others.
        let h = |r: usize| value_hash(TAG_STRING, format!("C{r:017}").as_bytes());
        for r in (0..rows).filter(|r| r % 7 != 3) {
            assert!(dir.may_contain(r / BLOCK_ROWS, h(r)), "row {r}");
        }
        let elsewhere = (0..rows)
            .filter(|r| r % 7 != 3 && dir.may_contain((r / BLOCK_ROWS + 1) % 4, h(*r)))
            .count();
        assert!(
            elsewhere < rows / 8,
            "{elsewhere} false positives of {rows}"
        );
    }

    #[test]
    fn damaged_directories_and_blocks_are_errors() {
        let rows = 2 * BLOCK_ROWS;
        let col = column(rows);
        let stored = write(&col, rows);
        assert!(Directory::read(&stored, rows + BLOCK_ROWS, col.len()).is_err());
        assert!(Directory::read(&stored, rows, col.len() + 1).is_err());
        assert!(Directory::read(&stored[..20], rows, col.len()).is_err());
        let dir = Directory::read(&stored, rows, col.len()).unwrap();
        let mut damaged = stored.clone();
        *damaged.last_mut().unwrap() ^= 1;
        let mut dst = vec![0; col.len()];
        let err = decode(
            &damaged,
            &dir,
            rows,
            (&mut dst, &mut Vec::new()),
            None,
            |_, _| Ok(()),
        )
        .unwrap_err();
        assert!(err.contains("block 1: checksum mismatch"), "{err}");
    }
}
