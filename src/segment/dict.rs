//! Dictionary columns (format 7): how a column of strings or addresses with few distinct values
//! is stored instead of as its msgpack values: each distinct value once, and a code per row.
//!
//! Most of a Zeek log's string and address columns repeat a handful of values (`proto`,
//! `service`, `conn_state`, `history`, the sensor's own addresses). zstd finds the repeats
//! too, but it pays for every byte it reads: with the values replaced by one-byte codes, the
//! compressor reads a fifth of the bytes and writes smaller frames. The writer also hands the
//! distinct values to the batch's sketch (`sketch.rs`), which then hashes each of them once
//! instead of walking the column again to find them (`docs/dev/performance-log.md`).
//!
//! # Format
//!
//! The *encoded bytes* of a column of `rows` values:
//!
//! 1. `d`, the number of entries, as an unsigned LEB128 varint: 1 ≤ `d` ≤ [`MAX_ENTRIES`];
//! 2. the entries: `d` msgpack values back to back (each exactly one value, as
//!    [`crate::value::RowCursor::skip`] reads it);
//! 3. the codes: the code of a row is the index of its value among the entries; with
//!    `w = 1` code byte when `d` ≤ 256, else `w = 2`, they take `w × rows` bytes: the low byte
//!    of every row's code in row order, then (`w = 2`) the high bytes in row order.
//!
//! Nothing else follows. The column's msgpack is rebuilt by writing, row by row, the entry
//! its code names.
//!
//! # Invariants
//!
//! - The writer encodes a column only when the encoded bytes are fewer than its values, so a
//!   column never takes more room than its values and a reader's memory stays bounded by the
//!   batch's `raw_size`. Its entries are distinct, in the order of their first row, and every
//!   entry is some row's value, so they are exactly the column's distinct values (what the
//!   sketch takes them for; a reader relies on none of this).
//! - [`decode`] checks every length and code and writes exactly the column's raw length or
//!   fails: it never panics on damaged bytes (which the batch's CRC has caught before, in a
//!   segment).

use crate::types::Type;
use crate::value::RowCursor;

/// Entries of a dictionary at most (codes of two bytes).
pub(crate) const MAX_ENTRIES: usize = 1 << 16;

/// Whether the writer tries to store a column of type `ty` as a dictionary: the scalar
/// string-like and address columns, whose values the sketch hashes. Counts and times have
/// their own encoding (`planes.rs`) or compress well as they are.
pub(crate) fn plan(ty: &Type) -> bool {
    matches!(
        ty,
        Type::String | Type::Enum | Type::Pattern | Type::File | Type::Addr
    )
}

/// Whether a column of `seen` values with `entries` distinct ones so far is still worth a
/// dictionary: at most a quarter of the values distinct, past a first few hundred (a column of
/// unique values, such as Zeek's `uid`, is given up after about 340 values).
#[inline(always)]
fn worth(entries: usize, seen: usize) -> bool {
    entries <= 256 + seen / 4 && entries <= MAX_ENTRIES
}

/// An empty slot of [`Encoder`]'s table.
const EMPTY: u32 = u32::MAX;

/// Reusable state of [`Encoder::encode`]: an open-addressing table from a value's key to its
/// entry, the entries' bytes and bounds, and the codes.
#[derive(Debug, Default)]
pub(crate) struct Encoder {
    /// Per slot: the key of the value there.
    keys: Vec<u64>,
    /// Per slot: its entry, or [`EMPTY`].
    slots: Vec<u32>,
    /// The slots in use (to clear them for the next column).
    used: Vec<u32>,
    /// The entries, back to back, and where each starts (plus the end).
    entries: Vec<u8>,
    starts: Vec<u32>,
    codes: Vec<u16>,
}

/// The key of a value of up to 7 bytes: its bytes and length in one u64 (the length byte is
/// never 0, and never has the top bit a long value's key has).
#[inline(always)]
fn short_key(v: &[u8], window: Option<&[u8]>) -> u64 {
    let bytes = match window {
        Some(w) => {
            u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])
                & (u64::MAX >> (8 * (8 - v.len())))
        }
        None => v
            .iter()
            .enumerate()
            .fold(0u64, |k, (i, &x)| k | u64::from(x) << (8 * i)),
    };
    bytes | (v.len() as u64) << 56
}

/// The first 8 bytes of `b` (at least 8) as a little-endian u64.
#[inline(always)]
fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// The key of a longer value: a hash of its bytes with the top bit set (a short key never has
/// it); equal keys are then compared byte by byte. Values of up to 16 bytes (IPv6 addresses,
/// most strings) are hashed from their first and last 8 bytes, two loads.
#[inline(always)]
fn long_key(v: &[u8]) -> u64 {
    let h = if v.len() <= 16 {
        let (a, b) = (le_u64(v), le_u64(&v[v.len() - 8..]));
        let h = (a ^ (v.len() as u64) << 59).wrapping_mul(0xff51_afd7_ed55_8ccd) ^ b;
        h.wrapping_mul(0xc4ce_b9fe_1a85_ec53).rotate_left(29)
    } else {
        super::bloom::value_hash(0, v)
    };
    h | 1 << 63
}

/// Whether two values of at least 8 bytes are equal: by two loads each up to 16 bytes.
#[inline(always)]
fn same_long(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.len() <= 16 {
        le_u64(a) == le_u64(b) && le_u64(&a[a.len() - 8..]) == le_u64(&b[b.len() - 8..])
    } else {
        a == b
    }
}

/// The length of the msgpack value at the start of `rest` for the markers string and address
/// columns hold (nil and bins), else through the general reader; `None`: not one whole value.
#[inline(always)]
fn value_len(rest: &[u8]) -> Option<usize> {
    let n = match *rest.first()? {
        0xc0 => 1,
        0xc4 => 2 + usize::from(*rest.get(1)?),
        _ => {
            let mut c = RowCursor::new(rest);
            c.skip().ok()?;
            c.position()
        }
    };
    (n <= rest.len()).then_some(n)
}

impl Encoder {
    /// Encodes the msgpack column `col` of `rows` values into `out` (cleared). Returns `false`,
    /// leaving `out` in any state, when the column does not hold `rows` values, has too many
    /// distinct ones (see [`worth`]) or would not get smaller.
    pub(crate) fn encode(&mut self, col: &[u8], rows: usize, out: &mut Vec<u8>) -> bool {
        let ok = self.fill(col, rows);
        // Leave the table empty for the next column, whatever happened.
        for &s in &self.used {
            self.slots[s as usize] = EMPTY;
        }
        self.used.clear();
        if !ok {
            return false;
        }
        let d = self.starts.len() - 1;
        let wide = d > 256;
        let len = varint_len(d) + self.entries.len() + rows * if wide { 2 } else { 1 };
        if len >= col.len() {
            return false;
        }
        out.clear();
        out.reserve(len);
        super::varint::push_varint(out, d);
        out.extend_from_slice(&self.entries);
        out.extend(self.codes.iter().map(|&c| c as u8));
        if wide {
            out.extend(self.codes.iter().map(|&c| (c >> 8) as u8));
        }
        debug_assert_eq!(out.len(), len);
        true
    }

    /// Encodes each of `cols` (columns of `rows` values) that `wanted` marks into `out[c]`
    /// (resized to the columns; its buffers reused), leaving `out[c]` empty where the column is
    /// not wanted or not encoded: the writer's dictionaries, as the packer and the sketch take
    /// them ([`super::codec::SplitRows::dicts`]).
    pub(crate) fn encode_all(
        &mut self,
        cols: &[Vec<u8>],
        rows: usize,
        wanted: impl Fn(usize) -> bool,
        out: &mut Vec<Vec<u8>>,
    ) {
        out.resize_with(cols.len(), Vec::new);
        for (c, (col, enc)) in cols.iter().zip(out.iter_mut()).enumerate() {
            if !(wanted(c) && self.encode(col, rows, enc)) {
                enc.clear();
            }
        }
    }

    /// Finds the entries and codes of `col`; `false` as for [`Encoder::encode`].
    fn fill(&mut self, col: &[u8], rows: usize) -> bool {
        self.entries.clear();
        self.starts.clear();
        self.starts.push(0);
        if self.slots.is_empty() {
            self.grow(1024);
        }
        // The codes in a local of their final length: the loop keeps it in registers.
        let mut codes = std::mem::take(&mut self.codes);
        codes.clear();
        codes.resize(rows, 0);
        let mut pos = 0;
        let mut r = 0;
        // The previous value's key and code: a run of one value costs one comparison a row.
        let (mut last_key, mut last_code) = (0u64, 0u16);
        let ok = loop {
            if pos >= col.len() {
                break r == rows;
            }
            let Some(n) = value_len(&col[pos..]) else {
                break false;
            };
            let v = &col[pos..pos + n];
            let key = if n < 8 {
                short_key(v, col.get(pos..pos + 8))
            } else {
                long_key(v)
            };
            let code = if key == last_key
                && (key >> 63 == 0 || same_long(self.entry(last_code.into()), v))
            {
                last_code
            } else {
                match self.find(key, v) {
                    Ok(code) => code,
                    Err(slot) => match self.insert(slot, key, v, r + 1) {
                        Some(code) => code,
                        None => break false,
                    },
                }
            };
            let Some(c) = codes.get_mut(r) else {
                break false;
            };
            *c = code;
            (last_key, last_code) = (key, code);
            r += 1;
            pos += n;
        };
        self.codes = codes;
        ok
    }

    /// Adds `v` (key `key`, to go to slot `slot`) as a new entry, met at value `seen`; `None`
    /// when the column is not worth a dictionary (see [`worth`]).
    #[inline(never)]
    fn insert(&mut self, slot: usize, key: u64, v: &[u8], seen: usize) -> Option<u16> {
        let code = self.starts.len() - 1;
        if !worth(code + 1, seen) {
            return None;
        }
        self.entries.extend_from_slice(v);
        self.starts.push(self.entries.len() as u32);
        self.keys[slot] = key;
        self.slots[slot] = code as u32;
        self.used.push(slot as u32);
        if 2 * self.used.len() > self.slots.len() {
            let size = 2 * self.slots.len();
            self.grow(size);
        }
        Some(code as u16)
    }

    /// The entry of the value `v` whose key is `key`, or the empty slot where it goes.
    #[inline(always)]
    fn find(&self, key: u64, v: &[u8]) -> Result<u16, usize> {
        let mask = self.slots.len() - 1;
        let mut s = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize & mask;
        loop {
            let e = self.slots[s];
            if e == EMPTY {
                return Err(s);
            }
            if self.keys[s] == key && (key >> 63 == 0 || same_long(self.entry(e as usize), v)) {
                return Ok(e as u16);
            }
            s = (s + 1) & mask;
        }
    }

    /// Entry `e`'s bytes.
    fn entry(&self, e: usize) -> &[u8] {
        &self.entries[self.starts[e] as usize..self.starts[e + 1] as usize]
    }

    /// Resizes the table to `size` slots (a power of two), moving the slots in use.
    fn grow(&mut self, size: usize) {
        let old: Vec<(u64, u32)> = self
            .used
            .iter()
            .map(|&s| (self.keys[s as usize], self.slots[s as usize]))
            .collect();
        self.keys = vec![0; size];
        self.slots = vec![EMPTY; size];
        self.used.clear();
        for (key, e) in old {
            let mask = size - 1;
            let mut s = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize & mask;
            while self.slots[s] != EMPTY {
                s = (s + 1) & mask;
            }
            self.keys[s] = key;
            self.slots[s] = e;
            self.used.push(s as u32);
        }
    }
}

/// The length of `v` as a LEB128 varint.
fn varint_len(mut v: usize) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// The entries of encoded bytes `enc` that [`Encoder::encode`] wrote, each a msgpack value
/// (nothing, past the first that does not read).
pub(crate) fn entries(enc: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut pos = 0;
    let d = super::varint::read_varint(enc, &mut pos).unwrap_or(0);
    (0..d).map_while(move |_| {
        let n = value_len(enc.get(pos..)?)?;
        let v = &enc[pos..pos + n];
        pos += n;
        Some(v)
    })
}

/// Where each entry of encoded bytes `enc` starts (and the last one ends), and its codes,
/// their lengths checked against `rows`.
fn layout(enc: &[u8], rows: usize) -> Result<(Vec<usize>, &[u8]), String> {
    let mut pos = 0;
    let d = super::varint::read_varint(enc, &mut pos)?;
    if d == 0 || d > MAX_ENTRIES {
        return Err(format!("a dictionary of {d} entries"));
    }
    // Each entry takes at least a byte: the count is checked against the bytes before the
    // bounds are allocated.
    if d > enc.len() - pos {
        return Err(format!(
            "a dictionary of {d} entries in {} bytes",
            enc.len() - pos
        ));
    }
    let mut starts = Vec::with_capacity(d + 1);
    starts.push(pos);
    for _ in 0..d {
        let n = value_len(&enc[pos..])
            .ok_or_else(|| format!("dictionary entry {} is not a value", starts.len() - 1))?;
        pos += n;
        starts.push(pos);
    }
    let w = if d > 256 { 2 } else { 1 };
    let codes = &enc[pos..];
    if codes.len() != w * rows {
        return Err(format!(
            "{} bytes of dictionary codes, {rows} codes of {w} bytes expected",
            codes.len()
        ));
    }
    Ok((starts, codes))
}

/// Rebuilds the msgpack column of `rows` values from its encoded bytes `enc` into `out`, which
/// must be filled exactly (its length is the column's raw length). `Err` says what is wrong.
pub(crate) fn decode(enc: &[u8], rows: usize, out: &mut [u8]) -> Result<(), String> {
    let (starts, codes) = layout(enc, rows)?;
    SLOTS.with(|slots| rebuild(enc, &starts, codes, rows, &mut slots.borrow_mut(), out))
}

/// A dictionary column kept as it is stored, for evaluating a comparison once per entry
/// instead of once per row (`crate::query`'s columnar evaluator): where its entries are and
/// where its codes are, in the bytes it was checked in by [`Checked::of`].
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    /// Where each entry starts, and the last one ends.
    starts: Vec<usize>,
    /// Where the codes start.
    codes: usize,
    rows: usize,
}

impl Checked {
    /// Checks encoded bytes `enc` of `rows` rows: lengths as [`decode`] does, and every
    /// code names an entry.
    pub(crate) fn of(enc: &[u8], rows: usize) -> Result<Checked, String> {
        let (starts, codes) = layout(enc, rows)?;
        let d = starts.len() - 1;
        let (lo, hi) = codes.split_at(rows);
        let max = if hi.is_empty() {
            lo.iter().copied().max().map(usize::from)
        } else {
            lo.iter()
                .zip(hi)
                .map(|(&l, &h)| usize::from(l) | usize::from(h) << 8)
                .max()
        };
        if let Some(code) = max.filter(|&c| c >= d) {
            return Err(format!("a code {code} of a dictionary of {d}"));
        }
        Ok(Checked {
            codes: enc.len() - codes.len(),
            starts,
            rows,
        })
    }

    /// The entries' msgpack values, in code order, of the bytes `enc` it checked.
    pub(crate) fn entries<'a>(&'a self, enc: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.starts.windows(2).map(move |w| &enc[w[0]..w[1]])
    }

    /// Where the entry of row `r` is in the bytes `enc` it checked (`None` past the last row).
    pub(crate) fn entry_of(&self, enc: &[u8], r: usize) -> Option<std::ops::Range<usize>> {
        if r >= self.rows {
            return None;
        }
        let codes = enc.get(self.codes..)?;
        let lo = usize::from(*codes.get(r)?);
        let hi = codes.get(self.rows + r).map_or(0, |&h| usize::from(h) << 8);
        let code = lo | hi;
        Some(*self.starts.get(code)?..*self.starts.get(code + 1)?)
    }

    /// Each row's code as bytes, of the bytes `enc` it checked: the low bytes (one per row),
    /// and the high bytes (one per row; empty for a dictionary of at most 256 entries).
    pub(crate) fn code_bytes<'a>(&self, enc: &'a [u8]) -> (&'a [u8], &'a [u8]) {
        enc[self.codes..].split_at(self.rows)
    }
}

/// Bytes of an entry's slot in [`rebuild`]'s table: most entries fit, and a copy of this
/// constant length is a few moves instead of a call.
const SLOT: usize = 32;

thread_local! {
    /// The entries of the dictionary being rebuilt, each in a slot of [`SLOT`] bytes (reused
    /// between columns).
    static SLOTS: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The second half of [`decode`], once the entries (`starts`: where each starts in `enc`, and
/// the end) and the codes' length are checked: writes every row's entry into `out`.
fn rebuild(
    enc: &[u8],
    starts: &[usize],
    codes: &[u8],
    rows: usize,
    slots: &mut Vec<u8>,
    out: &mut [u8],
) -> Result<(), String> {
    let d = starts.len() - 1;
    slots.clear();
    slots.resize(d * SLOT, 0);
    for (e, slot) in slots.chunks_exact_mut(SLOT).enumerate() {
        let v = &enc[starts[e]..starts[e + 1]];
        let n = v.len().min(SLOT);
        slot[..n].copy_from_slice(&v[..n]);
    }
    let (lo, hi) = codes.split_at(rows);
    let mut at = 0;
    for (r, &l) in lo.iter().enumerate() {
        let code = usize::from(l) | hi.get(r).map_or(0, |&h| usize::from(h) << 8);
        if code >= d {
            return Err(format!("row {r} has code {code} of a dictionary of {d}"));
        }
        let len = starts[code + 1] - starts[code];
        match out.get_mut(at..at + SLOT) {
            // The whole slot, of which the bytes past the entry are overwritten by the next
            // rows (or checked to be the column's end below).
            Some(dst) if len <= SLOT => dst.copy_from_slice(&slots[code * SLOT..][..SLOT]),
            _ => out
                .get_mut(at..at + len)
                .ok_or("a dictionary column longer than its raw length")?
                .copy_from_slice(&enc[starts[code]..starts[code + 1]]),
        }
        at += len;
    }
    if at != out.len() {
        return Err(format!(
            "a dictionary column of {at} bytes, {} expected",
            out.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::RowEncoder;

    /// A column of `values` (None: nil) as msgpack bins.
    fn column(values: &[Option<&[u8]>]) -> Vec<u8> {
        let mut col = Vec::new();
        let mut enc = RowEncoder::new(&mut col);
        for v in values {
            match v {
                Some(b) => enc.bytes(b),
                None => enc.null(),
            }
        }
        col
    }

    fn round_trip(col: &[u8], rows: usize) -> Vec<u8> {
        let mut e = Encoder::default();
        let mut enc = Vec::new();
        assert!(e.encode(col, rows, &mut enc), "{rows} rows not encoded");
        assert!(enc.len() < col.len());
        let mut out = vec![0u8; col.len()];
        decode(&enc, rows, &mut out).unwrap();
        assert_eq!(out, col);
        enc
    }

    #[test]
    fn recurring_values_round_trip_with_their_distinct_entries() {
        // Short and long values, nils, an IPv6 address, an empty string, repeats.
        let pool: [Option<&[u8]>; 7] = [
            Some(b"tcp"),
            Some(b"udp"),
            None,
            Some(b""),
            Some(b"ShADadFf"),
            Some(&[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
            Some(&[10, 0, 0, 1]),
        ];
        let values: Vec<_> = (0..1000).map(|i| pool[(i * i + 3 * i) % 7]).collect();
        let col = column(&values);
        let enc = round_trip(&col, values.len());
        let got: Vec<&[u8]> = entries(&enc).collect();
        let mut want: Vec<Vec<u8>> = Vec::new();
        for v in &values {
            let one = column(&[*v]);
            if !want.contains(&one) {
                want.push(one);
            }
        }
        assert_eq!(got, want.iter().map(|v| &v[..]).collect::<Vec<_>>());
        // One byte per code.
        assert_eq!(
            enc.len(),
            1 + want.iter().map(Vec::len).sum::<usize>() + 1000
        );
    }

    #[test]
    fn more_than_256_entries_take_two_code_bytes() {
        let values: Vec<Vec<u8>> = (0..4000u32)
            .map(|i| (i % 300).to_be_bytes().to_vec())
            .collect();
        let refs: Vec<Option<&[u8]>> = values.iter().map(|v| Some(&v[..])).collect();
        let col = column(&refs);
        let enc = round_trip(&col, refs.len());
        assert_eq!(entries(&enc).count(), 300);
        assert_eq!(enc.len(), 2 + 300 * 6 + 2 * 4000);
    }

    #[test]
    fn unique_values_and_wrong_counts_stay_as_they_are() {
        let mut e = Encoder::default();
        let mut out = Vec::new();
        let uids: Vec<String> = (0..2000).map(|i| format!("C{i:017}")).collect();
        let refs: Vec<Option<&[u8]>> = uids.iter().map(|u| Some(u.as_bytes())).collect();
        let col = column(&refs);
        assert!(!e.encode(&col, refs.len(), &mut out));
        // The encoder is left clean: a column it takes still round-trips.
        let col = column(&vec![Some(&b"x"[..]); 500]);
        assert!(!e.encode(&col, 499, &mut out));
        assert!(!e.encode(&col, 501, &mut out));
        round_trip(&col, 500);
        assert!(e.encode(&col, 500, &mut out));
        // A value cut short.
        assert!(!e.encode(&col[..col.len() - 1], 500, &mut out));
        // Too few values to gain.
        let col = column(&[Some(&b"abc"[..])]);
        assert!(!e.encode(&col, 1, &mut out));
    }

    proptest::proptest! {
        /// Columns drawn from pools of values of every length (nils among them): an encoded
        /// column decodes to itself, its entries are its distinct values in order of first
        /// appearance, and a column left as it is had too many of them or would not shrink.
        #[test]
        fn any_column_round_trips_or_stays_as_it_is(
            pool in proptest::collection::vec(
                proptest::option::weighted(0.9, proptest::collection::vec(0u8..=255, 0..40)),
                1..400,
            ),
            picks in proptest::collection::vec(0usize..10_000, 1..3000),
        ) {
            let values: Vec<Option<&[u8]>> =
                picks.iter().map(|&i| pool[i % pool.len()].as_deref()).collect();
            let col = column(&values);
            // The distinct values, and whether the encoder gives up on the way (a new value
            // past the quarter the rule allows).
            let mut distinct: Vec<Vec<u8>> = Vec::new();
            let mut given_up = false;
            for (r, v) in values.iter().enumerate() {
                let one = column(&[*v]);
                if !distinct.contains(&one) {
                    distinct.push(one);
                    given_up |= !worth(distinct.len(), r + 1);
                }
            }
            let mut e = Encoder::default();
            let mut enc = Vec::new();
            if e.encode(&col, values.len(), &mut enc) {
                proptest::prop_assert!(!given_up && enc.len() < col.len());
                let mut out = vec![0u8; col.len()];
                decode(&enc, values.len(), &mut out).unwrap();
                proptest::prop_assert_eq!(&out, &col);
                let got: Vec<&[u8]> = entries(&enc).collect();
                let want: Vec<&[u8]> = distinct.iter().map(|v| &v[..]).collect();
                proptest::prop_assert_eq!(got, want);
            } else {
                let d = distinct.len();
                let wide = if d > 256 { 2 } else { 1 };
                let size = varint_len(d) + distinct.iter().map(Vec::len).sum::<usize>()
                    + wide * values.len();
                proptest::prop_assert!(given_up || size >= col.len());
            }
        }
    }

    #[test]
    fn every_damage_is_an_error_never_a_panic() {
        let values: Vec<Option<&[u8]>> = (0..400)
            .map(|i| [Some(&b"SF"[..]), None, Some(&b"S0"[..]), Some(&b"REJ"[..])][i % 4])
            .collect();
        let col = column(&values);
        let enc = round_trip(&col, values.len());
        let mut out = vec![0u8; col.len()];
        for cut in 0..enc.len() {
            assert!(
                decode(&enc[..cut], values.len(), &mut out).is_err(),
                "cut at {cut}"
            );
        }
        for i in 0..enc.len() {
            for x in [0x01, 0x80, 0xff] {
                let mut bad = enc.clone();
                bad[i] ^= x;
                let mut out = vec![0u8; col.len()];
                // Either an error or some column of exactly the raw length.
                let _ = decode(&bad, values.len(), &mut out);
            }
        }
        // A code past the entries.
        let mut bad = enc.clone();
        let last = bad.len() - 1;
        bad[last] = 200;
        assert!(decode(&bad, values.len(), &mut out)
            .unwrap_err()
            .contains("code 200"));
        // A raw length that disagrees.
        let mut short = vec![0u8; col.len() - 1];
        assert!(decode(&enc, values.len(), &mut short).is_err());
        let mut long = vec![0u8; col.len() + 1];
        assert!(decode(&enc, values.len(), &mut long).is_err());
    }
}
