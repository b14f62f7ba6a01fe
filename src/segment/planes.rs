//! Integer planes (format 6): how a column of `time` or `interval` values is stored instead of
//! as its msgpack values, so that the compressor sees the few bytes that vary.
//!
//! A Zeek time is nanoseconds since the epoch written with microseconds, so every value is a
//! multiple of 1,000, and consecutive `ts` values are close: as msgpack (9 bytes each, the low
//! ones looking random), W1000's `ts` column took 18% of the archive and 20% of zstd's time.
//! Divided by their common power of ten, as differences from the previous value, and with
//! the bytes of each significance together, the same values take 40% less space once
//! compressed, in less time (`docs/dev/performance-log.md`).
//!
//! # Format
//!
//! The *encoded bytes* of a column of `rows` values (each a msgpack nil or integer):
//!
//! 1. `flags` (u8): bit 0 *delta*: values are stored as differences from the previous set
//!    value (the first from `base`, below); bit 1 *bitmap*: some values are unset (nil) and a
//!    bitmap follows. Other bits are 0.
//! 2. `scale` (u8, at most 18): every set value is a multiple of `10^scale` and is stored
//!    divided by it.
//! 3. `planes` (u8, at most 8): how many low bytes of each stored number are kept (the others
//!    are 0).
//! 4. With *delta*: `base`, an i64 (8 bytes, little-endian).
//! 5. With *bitmap*: `ceil(rows / 8)` bytes, bit `r % 8` of byte `r / 8` set when row `r` has a
//!    value; the bits past `rows` are 0. Without it every row has a value.
//! 6. `planes` planes of `k` bytes, `k` the rows with a value: plane `j` holds byte `j` (least
//!    significant first) of each stored number, in row order. A stored number is the zigzag
//!    encoding (`(x << 1) ^ (x >> 63)`) of `x`, which is `q` or, with *delta*, `q` minus the
//!    previous set value's `q` (the first one's minus `base`; wrapping), where
//!    `q = value / 10^scale`. The writer takes the first `q` as `base`.
//!
//! Nothing else follows. The column's msgpack is rebuilt by writing, row by row, nil for an
//! unset value and each value `q * 10^scale` in the shortest msgpack integer form (positive
//! values as unsigned; [`crate::value::RowEncoder::int`]).
//!
//! # Invariants
//!
//! - The writer encodes a column only when rebuilding it gives back its msgpack byte for byte
//!   (every value nil or an integer in the shortest form: [`Encoder::encode`] checks each) and the
//!   encoded bytes are fewer than the msgpack's, so a column never takes more room than its
//!   values and a reader's memory stays bounded by the batch's `raw_size`.
//! - [`decode`] checks every length and writes exactly the column's raw length or fails: it
//!   never panics on damaged bytes (which the batch's CRC has caught before, in a segment).

use crate::types::Type;
use crate::value::RowCursor;

/// How the writer stores a column of type `ty` when its values allow (see the invariants):
/// `Some(delta)` as integer planes, of differences from the previous value when `delta` (times,
/// which logs write in order; durations are planes of their values, as their order says
/// nothing); `None` as its msgpack values: counts (measured: as planes they were larger and
/// slower to compress than their msgpack, most being one or two bytes) and everything else.
pub(crate) fn plan(ty: &Type) -> Option<bool> {
    match ty {
        Type::Time => Some(true),
        Type::Interval => Some(false),
        _ => None,
    }
}

/// Flag: stored numbers are differences from the previous row's.
const DELTA: u8 = 1;
/// Flag: a bitmap of the rows with a value follows the header.
const BITMAP: u8 = 2;
/// The largest scale: 10^18 is the largest power of ten in an i64.
const MAX_SCALE: u8 = 18;

/// 10^e for e ≤ 18.
fn pow10(e: u8) -> i64 {
    10i64.pow(u32::from(e))
}

/// The shortest msgpack encoding of `v` (as [`crate::value::RowEncoder::int`] writes it) into
/// `out`; returns its length. A fixed-size copy of that encoder's logic, for writing in place;
/// a test compares the two at every width edge.
#[inline(always)]
fn put_int(v: i64, out: &mut [u8; 9]) -> usize {
    if v >= 0 {
        let u = v as u64;
        if u < 128 {
            out[0] = u as u8;
            1
        } else if u <= u8::MAX as u64 {
            out[..2].copy_from_slice(&[0xcc, u as u8]);
            2
        } else if u <= u16::MAX as u64 {
            out[0] = 0xcd;
            out[1..3].copy_from_slice(&(u as u16).to_be_bytes());
            3
        } else if u <= u32::MAX as u64 {
            out[0] = 0xce;
            out[1..5].copy_from_slice(&(u as u32).to_be_bytes());
            5
        } else {
            out[0] = 0xcf;
            out[1..9].copy_from_slice(&u.to_be_bytes());
            9
        }
    } else if v >= -32 {
        out[0] = v as i8 as u8;
        1
    } else if v >= i8::MIN as i64 {
        out[..2].copy_from_slice(&[0xd0, v as i8 as u8]);
        2
    } else if v >= i16::MIN as i64 {
        out[0] = 0xd1;
        out[1..3].copy_from_slice(&(v as i16).to_be_bytes());
        3
    } else if v >= i32::MIN as i64 {
        out[0] = 0xd2;
        out[1..5].copy_from_slice(&(v as i32).to_be_bytes());
        5
    } else {
        out[0] = 0xd3;
        out[1..9].copy_from_slice(&v.to_be_bytes());
        9
    }
}

/// The marker of `v`'s shortest msgpack encoding: [`put_int`]'s first byte (inlined, the
/// stores of the other bytes are dropped).
#[inline(always)]
fn marker_of(v: i64) -> u8 {
    let mut buf = [0u8; 9];
    put_int(v, &mut buf);
    buf[0]
}

/// Turns `values` into their stored numbers (zigzag of `value / P`, or of its difference from
/// the previous one's when `DELTA`, the first from its own: the base); returns the base and
/// the OR of the stored numbers.
#[inline(always)]
fn to_stored<const P: i64, const DELTA: bool>(values: &mut [i64]) -> (i64, u64) {
    let base = values.first().map_or(0, |&v| v / P);
    let mut prev = base;
    let mut any = 0u64;
    for v in values.iter_mut() {
        let q = *v / P;
        let x = if DELTA { q.wrapping_sub(prev) } else { q };
        prev = q;
        let z = zigzag(x);
        any |= z;
        *v = z as i64;
    }
    (base, any)
}

fn zigzag(x: i64) -> u64 {
    ((x << 1) ^ (x >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Reusable buffers of [`encode`].
#[derive(Debug, Default)]
pub(crate) struct Encoder {
    values: Vec<i64>,
    bitmap: Vec<u8>,
}

impl Encoder {
    /// Encodes the msgpack column `col` of `rows` values (differences from the previous value
    /// when `delta`) into `out` (cleared). Returns `false`, leaving `out` in any state, when
    /// the column is not all nils and shortest-form integers, does not hold `rows` values, or
    /// would not get smaller.
    pub(crate) fn encode(
        &mut self,
        col: &[u8],
        rows: usize,
        delta: bool,
        out: &mut Vec<u8>,
    ) -> bool {
        let values = &mut self.values;
        values.clear();
        self.bitmap.clear();
        let mut unset = 0usize;
        let mut c = RowCursor::new(col);
        for r in 0..rows {
            let Ok(m) = c.marker() else { return false };
            let v = match m {
                0xc0 => {
                    if unset == 0 {
                        // The rows before this one all had a value.
                        self.bitmap.resize(rows.div_ceil(8), 0);
                        for k in 0..r {
                            self.bitmap[k / 8] |= 1 << (k % 8);
                        }
                    }
                    unset += 1;
                    continue;
                }
                0x00..=0x7f => i64::from(m),
                0xe0..=0xff => i64::from(m as i8),
                // Only the shortest form is rebuilt as it was: the same marker and value
                // make the same bytes.
                0xcc..=0xd3 => match c.int(m, &Type::Int) {
                    Ok(v) if marker_of(v) == m => v,
                    _ => return false,
                },
                _ => return false,
            };
            if unset > 0 {
                self.bitmap[r / 8] |= 1 << (r % 8);
            }
            values.push(v);
        }
        if c.position() != col.len() {
            return false;
        }
        // The largest power of ten (of 10^9, 10^6, 10^3) dividing every value; the divisions
        // by a constant (a multiplication each), not by a variable.
        let scale = if !values.iter().all(|&v| v % 1_000 == 0) {
            0
        } else if !values.iter().all(|&v| v % 1_000_000 == 0) {
            3
        } else if !values.iter().all(|&v| v % 1_000_000_000 == 0) {
            6
        } else {
            9
        };
        let (base, any) = match (scale, delta) {
            (0, false) => to_stored::<1, false>(values),
            (0, true) => to_stored::<1, true>(values),
            (3, false) => to_stored::<1_000, false>(values),
            (3, true) => to_stored::<1_000, true>(values),
            (6, false) => to_stored::<1_000_000, false>(values),
            (6, true) => to_stored::<1_000_000, true>(values),
            (_, false) => to_stored::<1_000_000_000, false>(values),
            (_, true) => to_stored::<1_000_000_000, true>(values),
        };
        let planes = 8 - (any.leading_zeros() / 8) as usize;
        let k = values.len();
        let len = 3 + if delta { 8 } else { 0 } + self.bitmap.len() + planes * k;
        if len >= col.len() {
            return false;
        }
        out.clear();
        out.reserve(len);
        let flags = if delta { DELTA } else { 0 } | if unset > 0 { BITMAP } else { 0 };
        out.extend_from_slice(&[flags, scale, planes as u8]);
        if delta {
            out.extend_from_slice(&base.to_le_bytes());
        }
        out.extend_from_slice(&self.bitmap);
        // A plane at a time: sequential writes the compiler vectorizes.
        for j in 0..planes {
            out.extend(values.iter().map(|&z| (z as u64 >> (8 * j)) as u8));
        }
        debug_assert_eq!(out.len(), len);
        true
    }
}

/// The checked header of a column's encoded bytes and where its parts are.
struct Parsed<'a> {
    delta: bool,
    base: i64,
    /// `10^scale`.
    p: i64,
    bitmap: &'a [u8],
    body: &'a [u8],
    /// The values stored (rows with a value).
    k: usize,
}

impl<'a> Parsed<'a> {
    /// Each plane's bytes (none when no row has a value).
    fn planes(&self) -> impl Iterator<Item = &'a [u8]> {
        // (With no value there are no bytes, so no plane.)
        self.body.chunks_exact(self.k.max(1))
    }
}

/// Checks the header, bitmap and lengths of the encoded bytes `enc` of a column of `rows`
/// values.
fn parse(enc: &[u8], rows: usize) -> Result<Parsed<'_>, String> {
    let [flags, scale, planes, ref rest @ ..] = *enc else {
        return Err("integer planes shorter than their header".into());
    };
    if flags & !(DELTA | BITMAP) != 0 || scale > MAX_SCALE || planes > 8 {
        return Err(format!(
            "integer planes with flags {flags:#x}, scale {scale}, {planes} planes"
        ));
    }
    let delta = flags & DELTA != 0;
    let (base, rest) = match (delta, rest) {
        (false, _) => (0, rest),
        (true, [b0, b1, b2, b3, b4, b5, b6, b7, rest @ ..]) => (
            i64::from_le_bytes([*b0, *b1, *b2, *b3, *b4, *b5, *b6, *b7]),
            rest,
        ),
        (true, _) => return Err("integer planes shorter than their base".into()),
    };
    let (bitmap, body) = if flags & BITMAP != 0 {
        let n = rows.div_ceil(8);
        if rest.len() < n {
            return Err("integer planes shorter than their bitmap".into());
        }
        rest.split_at(n)
    } else {
        (&[][..], rest)
    };
    let k = if bitmap.is_empty() {
        rows
    } else {
        if !rows.is_multiple_of(8) && bitmap[rows / 8] >> (rows % 8) != 0 {
            return Err("integer planes mark rows past the column's end".into());
        }
        bitmap.iter().map(|b| b.count_ones() as usize).sum()
    };
    let planes = usize::from(planes);
    if body.len() != planes * k {
        return Err(format!(
            "{} bytes of integer planes, {planes} planes of {k} values expected",
            body.len()
        ));
    }
    Ok(Parsed {
        delta,
        base,
        p: pow10(scale),
        bitmap,
        body,
        k,
    })
}

/// The `k` values of a checked column into `values`, a plane at a time (sequential reads the
/// compiler vectorizes), then undone: zigzag, differences, scale.
fn numbers(c: &Parsed<'_>, values: &mut Vec<u64>) {
    numbers_of(c, c.planes(), values);
}

/// [`numbers`] of the first `c.k` values, from the planes `planes` (each at least that long:
/// a column's planes, or their first values).
///
/// Eight rows at a time are put together from eight bytes of every plane by transposing
/// those bytes in registers ([`transpose`]), then undone: a plane at a time loaded and
/// stored every value once per plane, which was a quarter of W1000's `summarize count() by
/// ts resolution 1h`.
fn numbers_of<'a>(c: &Parsed<'_>, planes: impl Iterator<Item = &'a [u8]>, values: &mut Vec<u64>) {
    let mut p: [&[u8]; 8] = [&[]; 8];
    for (slot, plane) in p.iter_mut().zip(planes) {
        *slot = plane;
    }
    values.clear();
    values.resize(c.k, 0);
    let mut chunks = values.chunks_exact_mut(8);
    for (i, out) in (&mut chunks).enumerate() {
        let rows = i * 8..i * 8 + 8;
        let mut m = p.map(|plane| {
            plane
                .get(rows.clone())
                .and_then(|b| b.first_chunk::<8>())
                .map_or(0, |b| u64::from_le_bytes(*b))
        });
        transpose(&mut m);
        out.copy_from_slice(&m);
    }
    let done = c.k - chunks.into_remainder().len();
    for (r, o) in values.iter_mut().enumerate().skip(done) {
        *o = p.iter().enumerate().fold(0, |z, (j, plane)| {
            z | u64::from(plane.get(r).copied().unwrap_or(0)) << (8 * j)
        });
    }
    let mut prev = c.base;
    for z in values.iter_mut() {
        let x = unzigzag(*z);
        let q = if c.delta { prev.wrapping_add(x) } else { x };
        prev = q;
        *z = q.wrapping_mul(c.p) as u64;
    }
}

/// Transposes the 8 x 8 bytes of `m` (byte `r` of `m[j]` becomes byte `j` of `m[r]`) by
/// swapping blocks of 4, then 2, then 1 bytes (written out: a loop over the swaps was not
/// unrolled).
#[inline(always)]
fn transpose(m: &mut [u64; 8]) {
    #[inline(always)]
    fn swap(m: &mut [u64; 8], j: usize, s: usize, keep: u64) {
        let t = ((m[j] >> (8 * s)) ^ m[j + s]) & keep;
        m[j] ^= t << (8 * s);
        m[j + s] ^= t;
    }
    const FOUR: u64 = 0x0000_0000_ffff_ffff;
    const TWO: u64 = 0x0000_ffff_0000_ffff;
    const ONE: u64 = 0x00ff_00ff_00ff_00ff;
    swap(m, 0, 4, FOUR);
    swap(m, 1, 4, FOUR);
    swap(m, 2, 4, FOUR);
    swap(m, 3, 4, FOUR);
    swap(m, 0, 2, TWO);
    swap(m, 1, 2, TWO);
    swap(m, 4, 2, TWO);
    swap(m, 5, 2, TWO);
    swap(m, 0, 1, ONE);
    swap(m, 2, 1, ONE);
    swap(m, 4, 1, ONE);
    swap(m, 6, 1, ONE);
}

/// Rebuilds the msgpack column of `rows` values from its encoded bytes `enc` into `out`, which
/// must be filled exactly (its length is the column's raw length). `Err` says what is wrong.
pub(crate) fn decode(enc: &[u8], rows: usize, out: &mut [u8]) -> Result<(), String> {
    let c = parse(enc, rows)?;
    VALUES.with(|v| {
        let mut values = v.borrow_mut();
        numbers(&c, &mut values);
        rebuild(&values, c.bitmap, rows, out)
    })
}

/// The numbers of a column of `rows` values from its encoded bytes `enc`, without its msgpack:
/// row `r`'s number (the bits of an `i64`; 0 when unset) is `values[r]`, and bit `r % 64` of
/// `set[r / 64]` says whether it has one (the bits past `rows` are 0). For the loops that
/// compare or count numbers (`crate::query::ints`), which would otherwise decode the msgpack
/// this rebuilds.
pub(crate) fn ints(enc: &[u8], rows: usize) -> Result<Ints, String> {
    let c = parse(enc, rows)?;
    let mut stored = Vec::new();
    numbers(&c, &mut stored);
    let mut set = vec![0u64; rows.div_ceil(64)];
    if c.bitmap.is_empty() {
        // Every row has a number: whole words of ones, the last cut at the rows' end.
        set.fill(u64::MAX);
        if let Some(last) = set.last_mut().filter(|_| !rows.is_multiple_of(64)) {
            *last = (1 << (rows % 64)) - 1;
        }
        let negative = stored.iter().any(|&v| (v as i64) < 0);
        return Ok(Ints {
            values: stored,
            set,
            negative,
        });
    }
    let mut values = vec![0u64; rows];
    let mut next = stored.into_iter();
    for (r, v) in values.iter_mut().enumerate() {
        if c.bitmap[r / 8] >> (r % 8) & 1 == 1 {
            // As many values as bits set (counted by `parse`).
            *v = next.next().unwrap_or(0);
            set[r / 64] |= 1 << (r % 64);
        }
    }
    // Unset rows hold 0.
    let negative = values.iter().any(|&v| (v as i64) < 0);
    Ok(Ints {
        values,
        set,
        negative,
    })
}

/// The msgpack of rows `select` (ascending, each below `rows`) of a column of `rows` values,
/// from its encoded bytes `enc`, appended to `out`, as [`decode`] would have written them;
/// returns where each one ends in `out`. Only the values up to the last selected row are
/// decoded, and none is rebuilt but those: for the few rows of a batch that a search
/// prints, where rebuilding the column cost a tenth of a W1000 uid export.
pub(crate) fn selected(
    enc: &[u8],
    rows: usize,
    select: &[usize],
    out: &mut Vec<u8>,
) -> Result<Vec<usize>, String> {
    let c = parse(enc, rows)?;
    let Some(&last) = select.last() else {
        return Ok(Vec::new());
    };
    if last >= rows {
        return Err(format!("row {last} selected of {rows}"));
    }
    let is_set = |r: usize| c.bitmap.is_empty() || c.bitmap[r / 8] >> (r % 8) & 1 == 1;
    // The values stored up to the last selected row (those of the rows the bitmap marks).
    let upto = (0..=last).filter(|&r| is_set(r)).count();
    let head = Parsed { k: upto, ..c };
    VALUES.with(|v| {
        let mut values = v.borrow_mut();
        numbers_of(&head, c.planes(), &mut values);
        let mut ends = Vec::with_capacity(select.len());
        let mut buf = [0u8; 9];
        // `rank`: the values stored for the rows before `at`.
        let (mut rank, mut at) = (0, 0);
        for &r in select {
            rank += (at..r).filter(|&x| is_set(x)).count();
            at = r;
            if is_set(r) {
                let v = values.get(rank).copied().unwrap_or(0);
                let n = put_int(v as i64, &mut buf);
                out.extend_from_slice(&buf[..n]);
            } else {
                out.push(0xc0);
            }
            ends.push(out.len());
        }
        Ok(ends)
    })
}

thread_local! {
    /// The stored numbers of the column being rebuilt (reused: a fresh buffer per column
    /// faulted in its pages every time).
    static VALUES: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The second half of [`decode`]: the msgpack of `values` (those of the rows the bitmap
/// marks; every row has one without it) into `out`, which must be filled exactly.
fn rebuild(values: &[u64], bitmap: &[u8], rows: usize, out: &mut [u8]) -> Result<(), String> {
    let raw = out.len();
    let overrun = || format!("integer planes rebuild more than the column's {raw} bytes");
    let mut w = 0usize;
    let mut buf = [0u8; 9];
    let mut next = values.iter();
    for r in 0..rows {
        if !bitmap.is_empty() && bitmap[r / 8] & (1 << (r % 8)) == 0 {
            *out.get_mut(w).ok_or_else(overrun)? = 0xc0;
            w += 1;
            continue;
        }
        // As many values as rows marked (counted above).
        let Some(&v) = next.next() else {
            return Err("integer planes hold fewer values than rows marked".into());
        };
        // Straight into the column while 9 bytes fit (bytes past the value are overwritten
        // by the next ones: the check below makes sure every byte was written).
        if let Some(dst) = out
            .get_mut(w..w + 9)
            .and_then(|d| <&mut [u8; 9]>::try_from(d).ok())
        {
            w += put_int(v as i64, dst);
        } else {
            let n = put_int(v as i64, &mut buf);
            out.get_mut(w..w + n)
                .ok_or_else(overrun)?
                .copy_from_slice(&buf[..n]);
            w += n;
        }
    }
    if w != raw {
        return Err(format!(
            "integer planes rebuild {w} bytes, the column has {raw}"
        ));
    }
    Ok(())
}

/// A column of integer planes as its numbers (`columns::read_columns`'s `as_ints`): row `r`'s number
/// (the bits of an `i64`; 0 when unset) is `values[r]`, and bit `r % 64` of `set[r / 64]`
/// says whether it has one (the bits past the rows are 0). `negative`: some number is below
/// 0 (which no count or port holds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ints {
    pub values: Vec<u64>,
    pub set: Vec<u64>,
    pub negative: bool,
}

impl Ints {
    /// Whether every number fits a signed (`int`, `time`, `interval`) or unsigned (`count`,
    /// `port`) type.
    pub(crate) fn fit(&self, signed: bool) -> bool {
        signed || !self.negative
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::RowEncoder;

    /// The msgpack column of `values` (`None`: nil), as the reader writes them.
    fn column(values: &[Option<i64>]) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut enc = RowEncoder::new(&mut buf);
        for v in values {
            match v {
                Some(v) => enc.int(*v),
                None => enc.null(),
            }
        }
        buf
    }

    fn round_trip(values: &[Option<i64>], delta: bool) -> Option<Vec<u8>> {
        let col = column(values);
        let mut enc = Encoder::default();
        let mut out = Vec::new();
        if !enc.encode(&col, values.len(), delta, &mut out) {
            return None;
        }
        assert!(out.len() < col.len());
        let mut back = vec![0u8; col.len()];
        decode(&out, values.len(), &mut back).unwrap();
        assert_eq!(back, col, "{values:?} delta {delta}");
        // The numbers without their msgpack: the same values, the same rows unset.
        let ints = ints(&out, values.len()).unwrap();
        assert_eq!(ints.values.len(), values.len());
        assert_eq!(ints.set.len(), values.len().div_ceil(64));
        for (r, v) in values.iter().enumerate() {
            let set = ints.set[r / 64] >> (r % 64) & 1 == 1;
            assert_eq!(set, v.is_some(), "row {r}");
            assert_eq!(ints.values[r], v.unwrap_or(0) as u64, "row {r}");
        }
        let bits: u32 = ints.set.iter().map(|w| w.count_ones()).sum();
        assert_eq!(
            bits as usize,
            values.iter().flatten().count(),
            "no bit past the rows"
        );
        // Rows picked alone, every third, none: their msgpack as the column has it.
        let n = values.len();
        let thirds: Vec<usize> = (0..n).filter(|r| r % 3 == 1).collect();
        let singles = (0..n).step_by(n / 50 + 1).map(|r| vec![r]);
        for select in singles.chain([thirds, vec![]]) {
            let mut got = vec![0xaa];
            let ends = selected(&out, n, &select, &mut got).unwrap();
            assert_eq!(ends.len(), select.len());
            let want: Vec<Option<i64>> = select.iter().map(|&r| values[r]).collect();
            assert_eq!(got[1..], column(&want)[..], "rows {select:?}");
            assert_eq!(ends.last().copied().unwrap_or(1), got.len());
        }
        assert!(selected(&out, n, &[n], &mut Vec::new()).is_err());
        Some(out)
    }

    #[test]
    fn times_round_trip_scaled_and_as_deltas() {
        // Zeek times: microseconds in nanoseconds, increasing with jitter.
        let ts: Vec<Option<i64>> = (0..1000)
            .map(|i| Some(1_258_531_221_486_539_000 + i * 1_234_000 - (i % 7) * 3_000_000))
            .collect();
        let out = round_trip(&ts, true).unwrap();
        assert_eq!(out[0], DELTA);
        assert_eq!(out[1], 3, "scale");
        // Differences of a few milliseconds in microseconds: 2 bytes each.
        assert_eq!(out[2], 2, "planes");
        assert_eq!(out.len(), 3 + 8 + 2 * 1000);
        // Durations with unset values; whole seconds scale by 10^9.
        let mut d: Vec<Option<i64>> = (0..77).map(|i| Some(i * 1_000_000_000)).collect();
        d[0] = None;
        d[40] = None;
        let out = round_trip(&d, false).unwrap();
        assert_eq!(out[..3], [BITMAP, 9, 1]);
        // Negative values, extremes, and no common power of ten.
        let odd = [
            Some(i64::MIN),
            Some(-1),
            Some(i64::MAX),
            Some(-33),
            Some(200),
            None,
        ];
        let odd: Vec<Option<i64>> = odd.iter().copied().cycle().take(600).collect();
        assert!(round_trip(&odd, true).is_none() || round_trip(&odd, false).is_some());
        for delta in [false, true] {
            let wide: Vec<Option<i64>> = (0..500)
                .map(|i| Some((i * 7_919_000_013i64).wrapping_mul(if i % 2 == 0 { 1 } else { -1 })))
                .collect();
            let _ = round_trip(&wide, delta);
            // A column of 1-byte values does not get smaller: left as it is.
            let small: Vec<Option<i64>> = (0..500).map(|i| Some(i % 100)).collect();
            assert!(round_trip(&small, delta).is_none());
        }
        // Every value unset: nothing but the bitmap.
        let none = vec![None; 100];
        let out = round_trip(&none, true).unwrap();
        assert_eq!(out.len(), 3 + 8 + 13, "{out:?}");
        assert_eq!(out[2], 0, "planes");
    }

    /// Every count of planes, with rows that fill the eight-row chunks `numbers_of` puts
    /// together and rows left over, unset ones among them.
    #[test]
    fn every_count_of_planes_round_trips_in_whole_and_partial_chunks() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut seen = [false; 9];
        for planes in 1..=8u32 {
            // The largest value whose zigzag fits `planes` bytes.
            let top = (u64::MAX >> (64 - 8 * planes) >> 1) as i64;
            for n in [1usize, 7, 8, 9, 16, 63, 100, 1000] {
                let vals: Vec<Option<i64>> = (0..n)
                    .map(|i| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        // Odd values (no common power of ten), the top one in the middle.
                        let v = if i == n / 2 {
                            top
                        } else {
                            (x as i64 % top.max(1)) | 1
                        };
                        (i % 11 != 5).then_some(if i % 3 == 0 { -v } else { v })
                    })
                    .collect();
                if let Some(out) = round_trip(&vals, false) {
                    seen[usize::from(out[2])] = true;
                }
            }
        }
        // Every width where planes are smaller than msgpack's integers was tried.
        assert!(seen[2..=8].iter().all(|&s| s), "{seen:?}");
    }

    /// `put_int` (and so `marker_of`) writes what the row encoder writes, at every width edge.
    #[test]
    fn put_int_writes_what_the_row_encoder_writes() {
        let edges = [
            0,
            1,
            127,
            128,
            255,
            256,
            65_535,
            65_536,
            4_294_967_295,
            4_294_967_296,
        ];
        for v in edges.into_iter().chain(edges.map(|v| -v)).chain([
            -32,
            -33,
            -128,
            -129,
            -32_768,
            -32_769,
            -2_147_483_648,
            -2_147_483_649,
            i64::MAX,
            i64::MIN,
        ]) {
            let mut want = Vec::new();
            RowEncoder::new(&mut want).int(v);
            let mut buf = [0u8; 9];
            let n = put_int(v, &mut buf);
            assert_eq!(&buf[..n], &want[..], "{v}");
            assert_eq!(marker_of(v), want[0], "{v}");
        }
    }

    #[test]
    fn columns_not_in_shortest_form_or_not_integers_are_left_as_they_are() {
        let mut enc = Encoder::default();
        let mut out = Vec::new();
        let mut col = column(&vec![Some(1_000_000); 100]);
        assert!(enc.encode(&col, 100, false, &mut out));
        // 5 as a uint8 instead of a fixint: rebuilding would change the bytes.
        col.extend_from_slice(&[0xcc, 5]);
        assert!(!enc.encode(&col, 101, false, &mut out));
        // A string among the values; too few or too many values.
        let mut col = column(&vec![Some(1_000_000); 100]);
        col.extend_from_slice(&[0xc4, 1, b'x']);
        assert!(!enc.encode(&col, 101, false, &mut out));
        let col = column(&vec![Some(1_000_000); 100]);
        assert!(!enc.encode(&col, 101, false, &mut out));
        assert!(!enc.encode(&col, 99, false, &mut out));
        // u64 above i64::MAX (0xcf): not an i64 in shortest form.
        let mut big = Vec::new();
        for _ in 0..50 {
            big.push(0xcf);
            big.extend_from_slice(&u64::MAX.to_be_bytes());
        }
        assert!(!enc.encode(&big, 50, false, &mut out));
    }

    /// Every byte damaged in turn, and cut short: an error or exactly the column's length,
    /// never a panic.
    #[test]
    fn damaged_planes_are_errors_not_panics() {
        let mut values: Vec<Option<i64>> = (0..203)
            .map(|i| Some(1_258_531_221_000_000_000 + i * 977_000))
            .collect();
        values[5] = None;
        values[202] = None;
        let col = column(&values);
        let mut enc = Encoder::default();
        let mut good = Vec::new();
        assert!(enc.encode(&col, values.len(), true, &mut good));
        let mut errors = 0;
        for i in 0..good.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= mask;
                let mut out = vec![0u8; col.len()];
                if decode(&bad, values.len(), &mut out).is_err() {
                    errors += 1;
                }
                // Whatever the damage, the numbers alone are an error or a column of
                // the batch's rows, never a panic.
                if let Ok(n) = ints(&bad, values.len()) {
                    assert_eq!(n.values.len(), values.len());
                }
            }
        }
        assert!(errors > 0);
        for cut in [0, 1, 2, 3, 10, 13, good.len() - 1] {
            let mut out = vec![0u8; col.len()];
            assert!(decode(&good[..cut], values.len(), &mut out).is_err());
            assert!(ints(&good[..cut], values.len()).is_err());
        }
        assert!(ints(&good, values.len() + 8).is_err());
        let mut out = vec![0u8; col.len() + 1];
        assert!(decode(&good, values.len(), &mut out).is_err());
        let mut out = vec![0u8; col.len()];
        assert!(decode(&good, values.len() + 8, &mut out).is_err());
    }
}
