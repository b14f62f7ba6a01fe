//! Marked columns (format 10): a column of integers stored as its msgpack markers, one byte
//! per row, then the bytes that follow each marker, so that a reader knows every value's
//! width before it reads any value.
//!
//! As msgpack values back to back, a column of counts can only be decoded one value after
//! the other: where a value starts depends on the marker of the one before, a load that the
//! next load waits for. That chain was a third of every scan of a number column (W1000
//! `orig_bytes > 1k`: 46% of the samples in the loop that decodes and compares). With the
//! markers apart, each value's width is a lookup of a byte whose place is known, and only
//! an addition of widths is left in the chain. The bytes are the same, rearranged: once
//! compressed, W1000's count columns take 0-8% less room (`docs/dev/performance-log.md`).
//!
//! # Format
//!
//! The *encoded bytes* of a column of `rows` values, each a msgpack nil or integer (any of
//! its forms):
//!
//! 1. `rows` markers: the first byte of each value, in row order;
//! 2. the *payloads*: the bytes that follow each marker (none for nil and fixints, 1, 2, 4 or
//!    8 for `uint 8` to `int 64`, big-endian), in row order, back to back.
//!
//! Nothing else follows, so the encoded bytes are exactly as many as the msgpack values
//! (the column header still records their length, which a reader checks). The column's
//! msgpack is rebuilt by writing, row by row, the marker and then its payload.
//!
//! # Invariants
//!
//! - The writer marks a column only of a type [`plan`] allows and only when every value is
//!   nil or an integer ([`KINDS`]) and the column holds exactly its rows: rebuilding gives
//!   back its msgpack byte for byte, whatever form each integer had.
//! - A reader checks every marker and that the payloads take exactly the bytes after the
//!   markers ([`check`]) before it reads a value: a damaged column (which the column's CRC
//!   has caught before, in a segment) is an error, never a panic or a read past the end.

use crate::types::Type;

/// Whether the writer tries to store a column of type `ty` marked: counts, ports and
/// integers. (Times and durations are integer planes, `planes.rs`, which are smaller.)
pub(crate) fn plan(ty: &Type) -> bool {
    matches!(ty, Type::Count | Type::Port | Type::Int)
}

/// What a marker byte starts: the kind of value (one of the consts below) in the high
/// nibble, the bytes that follow the marker in the low one. Every reader of integer markers
/// takes it from here (`crate::query::ints` too).
pub(crate) const KINDS: [u8; 256] = {
    let mut t = [BAD << 4; 256];
    let mut m = 0;
    while m < 256 {
        t[m] = match m {
            0x00..=0x7f => POS << 4,
            0xe0..=0xff => NEG << 4,
            0xc0 => UNSET << 4,
            0xcc => UNSIGNED << 4 | 1,
            0xcd => UNSIGNED << 4 | 2,
            0xce => UNSIGNED << 4 | 4,
            0xcf => UNSIGNED << 4 | 8,
            0xd0 => SIGNED << 4 | 1,
            0xd1 => SIGNED << 4 | 2,
            0xd2 => SIGNED << 4 | 4,
            0xd3 => SIGNED << 4 | 8,
            _ => BAD << 4,
        };
        m += 1;
    }
    t
};
/// A positive fixint: the marker is the value.
pub(crate) const POS: u8 = 0;
/// A negative fixint: the marker is the value, as an `i8`.
pub(crate) const NEG: u8 = 1;
/// `uint 8` to `uint 64`: big-endian bytes follow.
pub(crate) const UNSIGNED: u8 = 2;
/// `int 8` to `int 64`: big-endian two's complement bytes follow.
pub(crate) const SIGNED: u8 = 3;
/// `nil`: unset.
pub(crate) const UNSET: u8 = 4;
/// Anything else: no integer.
pub(crate) const BAD: u8 = 5;

/// The bytes after marker `m` of nil or an integer (as [`KINDS`] says; 0 for any other),
/// computed rather than looked up: a walk over msgpack values waits for each value's width
/// before it can read the next, and arithmetic on the marker is quicker than a second load.
/// `uint 8` to `int 64` are 0xcc to 0xd3, with 1, 2, 4 and 8 bytes.
#[inline(always)]
fn payload_len(m: u8) -> usize {
    usize::from(width(m))
}

/// [`payload_len`] as a byte, from compares and adds alone (no shift by a variable, which
/// vector units lack for bytes): for `k` the low two bits, `1 + (k ≥ 1) + 2 (k ≥ 2) +
/// 4 (k = 3)` is 1, 2, 4 or 8.
#[inline(always)]
fn width(m: u8) -> u8 {
    let u = m.wrapping_sub(0xcc);
    let k = u & 3;
    let w = 1 + u8::from(k >= 1) + 2 * u8::from(k >= 2) + 4 * u8::from(k == 3);
    w * u8::from(u < 8)
}

/// Encodes the msgpack column `col` of `rows` values into `out` (cleared). Returns `false`,
/// leaving `out` in any state, when a value is not nil or an integer or the column does not
/// hold exactly `rows` values.
pub(crate) fn encode(col: &[u8], rows: usize, out: &mut Vec<u8>) -> bool {
    out.clear();
    out.resize(col.len(), 0);
    let (markers, payload) = out.split_at_mut(rows.min(col.len()));
    if markers.len() != rows {
        return false;
    }
    let (mut pos, mut w, mut r) = (0usize, 0usize, 0usize);
    let mut bad = false;
    // While 9 bytes can be read and 8 written, each payload is copied as 8 bytes (one load
    // and one store, the bytes past it overwritten by the next); the last few one by one.
    while r < rows && pos + 9 <= col.len() && w + 8 <= payload.len() {
        let m = col[pos];
        bad |= KINDS[usize::from(m)] >> 4 == BAD;
        markers[r] = m;
        payload[w..w + 8].copy_from_slice(&col[pos + 1..pos + 9]);
        let n = payload_len(m);
        pos += 1 + n;
        w += n;
        r += 1;
    }
    while r < rows {
        let Some(&m) = col.get(pos) else {
            return false;
        };
        bad |= KINDS[usize::from(m)] >> 4 == BAD;
        let n = payload_len(m);
        let (Some(src), Some(dst)) = (col.get(pos + 1..pos + 1 + n), payload.get_mut(w..w + n))
        else {
            return false;
        };
        dst.copy_from_slice(src);
        markers[r] = m;
        pos += 1 + n;
        w += n;
        r += 1;
    }
    !bad && pos == col.len() && w == payload.len()
}

/// A checked marked column: its markers (one per row) and payloads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Marked<'a> {
    pub markers: &'a [u8],
    pub payload: &'a [u8],
}

/// Checks the encoded bytes `enc` of a column of `rows` values (see the invariants).
pub(crate) fn check(enc: &[u8], rows: usize) -> Result<Marked<'_>, String> {
    if enc.len() < rows {
        return Err(format!(
            "a marked column of {} bytes for {rows} rows",
            enc.len()
        ));
    }
    let (markers, payload) = enc.split_at(rows);
    // One pass of arithmetic on bytes, which the compiler vectorizes (a table lookup per
    // marker would not be): `uint 8` to `int 64` are 0xcc to 0xd3, with 1, 2, 4, 8 bytes.
    let mut total = 0usize;
    let mut bad = false;
    // (At most 8 bytes each: 4,096 markers' sum fits a u16.)
    for chunk in markers.chunks(1 << 12) {
        let mut sum = 0u16;
        let mut odd = 0u8;
        for &m in chunk {
            let int = m.wrapping_sub(0xcc) < 8;
            sum += u16::from(width(m));
            odd |= u8::from(!(int | !(0x80..0xe0).contains(&m) | (m == 0xc0)));
        }
        total += usize::from(sum);
        bad |= odd != 0;
    }
    if bad {
        let m = markers.iter().find(|&&m| KINDS[usize::from(m)] >> 4 == BAD);
        return Err(format!(
            "a marked column holds the marker {:#04x}",
            m.copied().unwrap_or_default()
        ));
    }
    if total != payload.len() {
        return Err(format!(
            "the markers of a column give {total} bytes of payload, {} follow them",
            payload.len()
        ));
    }
    Ok(Marked { markers, payload })
}

/// Rebuilds the msgpack of the checked column `c` into `out`, which must be exactly its
/// length (the markers and payloads together).
pub(crate) fn decode(enc: &[u8], rows: usize, out: &mut [u8]) -> Result<(), String> {
    let c = check(enc, rows)?;
    if out.len() != enc.len() {
        return Err(format!(
            "a marked column of {} bytes rebuilds into {}",
            enc.len(),
            out.len()
        ));
    }
    let (mut p, mut w) = (0usize, 0usize);
    for &m in c.markers {
        let n = payload_len(m);
        // Both in bounds: the payloads' total is checked above, and `out` is their sum
        // with the markers.
        out[w] = m;
        out[w + 1..w + 1 + n].copy_from_slice(&c.payload[p..p + n]);
        w += 1 + n;
        p += n;
    }
    Ok(())
}

/// How each marker's value is read, without a branch on the marker: a value is
/// `fix | ((x >> shift) & mask)`, `x` the 8 bytes at its payload as a big-endian `i64`
/// (shifted arithmetically, so that signed forms are sign-extended and unsigned ones
/// masked), then the payload is `len` bytes long.
struct Reading {
    fix: [u64; 256],
    mask: [u64; 256],
    shift: [u8; 256],
    len: [u8; 256],
}

const READING: Reading = {
    let mut t = Reading {
        fix: [0; 256],
        mask: [0; 256],
        shift: [0; 256],
        len: [0; 256],
    };
    let mut m = 0;
    while m < 256 {
        let (kind, len) = (KINDS[m] >> 4, KINDS[m] & 15);
        t.len[m] = len;
        if len > 0 {
            t.shift[m] = 64 - 8 * len;
            t.mask[m] = if kind == SIGNED || len == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * len)) - 1
            };
        }
        t.fix[m] = match kind {
            POS => m as u64,
            NEG => m as u8 as i8 as i64 as u64,
            _ => 0,
        };
        m += 1;
    }
    t
};

impl Marked<'_> {
    /// The bytes of the payloads of `rows` (markers past the end count for none). A sum
    /// the compiler vectorizes.
    pub(crate) fn payload_len(&self, rows: std::ops::Range<usize>) -> usize {
        let markers = self.markers.get(rows).unwrap_or_default();
        // Summed in 16-bit lanes (a width is at most 8, so 8,191 of them fit), four times as
        // many to a vector as sums of `usize`: a printed row's payload is found by summing
        // the widths of every row before it.
        markers
            .chunks(8_191)
            .map(|c| usize::from(c.iter().map(|&m| u16::from(width(m))).sum::<u16>()))
            .sum()
    }

    /// Whether some value has a negative form (a negative fixint or `int 8` to `int 64`:
    /// none is a count or a port) and whether some is a `uint 64` (which may exceed an
    /// `i64`). One pass the compiler vectorizes.
    pub(crate) fn forms(&self) -> (bool, bool) {
        let (mut negative, mut u64s) = (false, false);
        for &m in self.markers {
            negative |= (m >= 0xe0) | ((0xd0..=0xd3).contains(&m));
            u64s |= m == 0xcf;
        }
        (negative, u64s)
    }

    /// The numbers of rows `from..from + out.len()` into `out` (the bits of an `i64` for a
    /// signed form, of a `u64` for an unsigned one; 0 when unset), their payloads starting
    /// at `*pos` (advanced past them); returns a bit per row that has one, the first row in
    /// the lowest bit (at most 64 rows).
    #[inline]
    pub(crate) fn numbers(&self, from: usize, pos: &mut usize, out: &mut [u64]) -> u64 {
        let markers = &self.markers[from..from + out.len()];
        for (slot, &m) in out.iter_mut().zip(markers) {
            let i = usize::from(m);
            let x = match self.payload.get(*pos..*pos + 8) {
                Some(b) => i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
                None => self.padded(*pos),
            };
            *slot = READING.fix[i] | ((x >> READING.shift[i]) as u64 & READING.mask[i]);
            *pos += usize::from(READING.len[i]);
        }
        // The rows with a value, apart: in the loop above, a bit shifted in per row waited
        // on the one before.
        let mut set = [0u8; 64];
        for (s, &m) in set.iter_mut().zip(markers) {
            *s = u8::from(m != 0xc0);
        }
        bits_of(&set)
    }

    /// The 8 bytes at `pos` of the payloads as a big-endian `i64`, zeros past their end.
    #[cold]
    fn padded(&self, pos: usize) -> i64 {
        let mut b = [0u8; 8];
        let rest = self.payload.get(pos..).unwrap_or_default();
        let n = rest.len().min(8);
        b[..n].copy_from_slice(&rest[..n]);
        i64::from_be_bytes(b)
    }
}

/// 64 bytes, each 0 or 1, as the bits of a word (byte `k` in bit `k`): eight bytes at a
/// time, by one multiplication that gathers the low bit of every byte into the top byte,
/// where no two of its partial products meet. (A bit shifted in per byte, in a loop, is a
/// chain of dependent instructions the compiler does not vectorize.)
#[inline(always)]
pub(crate) fn bits_of(flags: &[u8; 64]) -> u64 {
    let mut bits = 0u64;
    for (k, eight) in flags.chunks_exact(8).enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(eight);
        bits |= (u64::from_le_bytes(b).wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * k);
    }
    bits
}

/// Row `r`'s value of the checked column `c` whose payload starts at `*pos` (advanced past
/// it): its number (as [`Marked::numbers`] gives it) and its kind ([`KINDS`]' high nibble).
pub(crate) fn value(c: &Marked<'_>, r: usize, pos: &mut usize) -> (u64, u8) {
    let mut v = [0u64];
    c.numbers(r, pos, &mut v);
    (v[0], KINDS[usize::from(c.markers[r])] >> 4)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::value::{column_of as column, Value};

    /// Every row's number and kind, read with [`value`].
    fn numbers(enc: &[u8], rows: usize) -> Result<Vec<(u64, u8)>, String> {
        let c = check(enc, rows)?;
        let mut pos = 0;
        let out = (0..rows).map(|r| value(&c, r, &mut pos)).collect();
        assert_eq!(pos, c.payload.len());
        Ok(out)
    }

    /// Every byte of flags lands in its bit, whatever the others (each pattern of eight, in
    /// each of the eight places of a word).
    #[test]
    fn flags_pack_into_the_bits_of_a_word() {
        for k in 0..8 {
            for byte in 0..=255u8 {
                let mut flags = [0u8; 64];
                for (j, f) in flags.iter_mut().enumerate() {
                    // The other bytes set in a pattern of their own.
                    *f = if j / 8 == k {
                        byte >> (j % 8) & 1
                    } else {
                        u8::from(j % 3 == 0)
                    };
                }
                let want = flags
                    .iter()
                    .enumerate()
                    .fold(0u64, |w, (j, &f)| w | u64::from(f) << j);
                assert_eq!(bits_of(&flags), want, "byte {byte:#x} in place {k}");
            }
        }
    }

    fn edges() -> Vec<Value> {
        let mut v: Vec<Value> = crate::value::INT_EDGES.map(Value::Int).to_vec();
        v.extend([0, 1, 200, 70_000, u64::MAX].map(Value::Count));
        for k in 0..6 {
            v.insert(k * 5, Value::Null);
        }
        v
    }

    #[test]
    fn every_width_and_sign_rebuilds_byte_for_byte_and_reads_as_its_number_and_kind() {
        // More than a word of rows, the last one short.
        let vals: Vec<Value> = edges().into_iter().cycle().take(150).collect();
        let col = column(&vals);
        let mut enc = Vec::new();
        assert!(encode(&col, vals.len(), &mut enc));
        assert_eq!(enc.len(), col.len());
        let mut back = vec![0u8; col.len()];
        decode(&enc, vals.len(), &mut back).unwrap();
        assert_eq!(back, col);
        let got = numbers(&enc, vals.len()).unwrap();
        for (r, (v, &(n, kind))) in vals.iter().zip(&got).enumerate() {
            match v {
                Value::Int(x) if *x < 0 => {
                    assert_eq!(n, *x as u64, "{r}");
                    assert!(kind == NEG || kind == SIGNED, "{r}");
                }
                Value::Int(x) => {
                    assert_eq!(n, *x as u64, "{r}");
                    assert!(kind == POS || kind == UNSIGNED, "{r}");
                }
                Value::Count(x) => assert_eq!((n, kind == POS || kind == UNSIGNED), (*x, true)),
                _ => assert_eq!((n, kind), (0, UNSET), "{r}"),
            }
        }
    }

    #[test]
    fn the_computed_payload_lengths_are_those_of_the_table() {
        for m in 0..=255u8 {
            let info = KINDS[usize::from(m)];
            let want = if info >> 4 == BAD { 0 } else { info & 15 };
            assert_eq!(payload_len(m), usize::from(want), "{m:#04x}");
        }
    }

    #[test]
    fn a_column_of_other_values_or_the_wrong_length_is_not_marked() {
        let col = column(&[Value::Count(1), Value::Count(300)]);
        let mut enc = Vec::new();
        assert!(!encode(&col, 1, &mut enc));
        assert!(!encode(&col, 3, &mut enc));
        assert!(!encode(&col[..col.len() - 1], 2, &mut enc));
        assert!(encode(&col, 2, &mut enc));
        let strings = column(&[Value::String(b"a".to_vec())]);
        assert!(!encode(&strings, 1, &mut enc));
        let doubles = column(&[Value::Double(1.5)]);
        assert!(!encode(&doubles, 1, &mut enc));
    }

    #[test]
    fn damaged_markers_or_payloads_are_errors() {
        let col = column(&[Value::Count(1), Value::Count(300), Value::Null]);
        let mut enc = Vec::new();
        assert!(encode(&col, 3, &mut enc));
        let mut out = vec![0u8; col.len()];
        // A marker that starts no integer.
        let mut bad = enc.clone();
        bad[0] = 0xa1;
        assert!(check(&bad, 3).unwrap_err().contains("0xa1"));
        // A payload one byte short, or one too long.
        assert!(decode(&enc[..enc.len() - 1], 3, &mut out[..col.len() - 1]).is_err());
        let mut long = enc.clone();
        long.push(0);
        assert!(check(&long, 3).is_err());
        // Fewer bytes than rows, and a buffer of the wrong length.
        assert!(check(&enc[..2], 3).is_err());
        assert!(decode(&enc, 3, &mut vec![0u8; col.len() + 1]).is_err());
        assert!(numbers(&bad, 3).is_err());
    }
}
