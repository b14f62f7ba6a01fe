//! A column of integers decoded at once, for the loops that compare or count them.
//!
//! A batch's `count`, `port`, `int`, `time` and `interval` column is a run of msgpack values
//! (`crate::value`: nil or an integer in its shortest form), each of its own width, so a value
//! can only be found after the one before it. [`decode`] walks the column once, in a loop
//! that knows nothing but the integer markers, 64 rows at a time into an array of numbers on
//! the stack and a bitmap of the rows that have one; a comparison or a count then runs over
//! the array, a loop the compiler unrolls and vectorizes, instead of decoding value by value
//! through the general reader (`docs/dev/performance-log.md`).
//!
//! Only what the writer writes is taken here; any other byte (a value of another type, an
//! integer out of the type's range, a column shorter or longer than its rows) gives `None`,
//! and the caller reads the column with the general reader, which reports the error with its
//! offset exactly as before: the two paths accept the same columns and answer alike.

use crate::segment::marked::Marked;
use crate::segment::marked::{BAD, KINDS as MARKERS, NEG, POS, SIGNED, UNSET, UNSIGNED};
use crate::segment::Ints;
use crate::types::Type;

/// Where a column's numbers come from: its msgpack values, or a column of integer planes
/// already decoded to its numbers (`crate::segment::Columns::ints`), which are copied a word
/// at a time.
#[derive(Clone, Copy)]
pub(crate) enum Numbers<'a> {
    Msgpack(&'a [u8]),
    Decoded(&'a Ints),
    /// A marked column (`crate::segment::Columns::marked`): each value's width is known
    /// from its marker, so no value waits for the one before it.
    Marked(Marked<'a>),
}

/// Rows decoded at a time: one word of a selection's bitmap.
pub(crate) const WORD: usize = 64;

/// One word of a decoded column: `values[r]` is row `r`'s number of the word (its bits: an
/// `i64` for signed types, 0 when unset), bit `r` of `set` says whether row `r` has one;
/// only the first `len` rows are the column's (the last word may be short).
pub(crate) struct Word {
    pub values: [u64; WORD],
    pub set: u64,
    pub len: usize,
}

/// Whether values of `ty` are read as signed (`int`, `time`, `interval`), unsigned (`count`,
/// `port`), or not integers at all (`None`).
pub(crate) fn signedness(ty: &Type) -> Option<bool> {
    match ty {
        Type::Count | Type::Port => Some(false),
        Type::Int | Type::Time | Type::Interval => Some(true),
        _ => None,
    }
}

/// Decodes the `rows` values of `column` as numbers of a signed (`signed`) or unsigned type,
/// a [`Word`] of 64 rows at a time handed to `each` (in a buffer on the stack, so nothing is
/// allocated), or returns `None` when the column holds anything else (see the module docs;
/// `each` may have seen some words by then).
///
/// The widths of the values vary from row to row, so a `match` on the marker would mispredict
/// a branch on most values: each value is decoded without a branch instead, from a table of
/// what each marker starts and the 8 bytes after it (read as one number), the bad ones noted
/// and refused once at the end. The last values, fewer than 9 bytes from the end, are read
/// from a copy padded with zeros.
pub(crate) fn decode(
    column: Numbers<'_>,
    rows: usize,
    signed: bool,
    mut each: impl FnMut(&Word),
) -> Option<()> {
    let mut word = Word {
        values: [0; WORD],
        set: 0,
        len: 0,
    };
    let column = match column {
        Numbers::Msgpack(column) => column,
        Numbers::Decoded(ints) => {
            // Numbers out of the type's range, or a column of any other length (not this
            // batch's), are left to the reader.
            if !ints.fit(signed)
                || ints.values.len() != rows
                || ints.set.len() != rows.div_ceil(WORD)
            {
                return None;
            }
            for (values, &set) in ints.values.chunks(WORD).zip(&ints.set) {
                word.values[..values.len()].copy_from_slice(values);
                word.set = set;
                word.len = values.len();
                each(&word);
            }
            return Some(());
        }
        Numbers::Marked(c) => {
            // Checked when it was inflated: a marker per row, the payloads' total. Types
            // are checked once per column by the markers' forms, and a `uint 64` in a signed
            // column by its value.
            let (negative, u64s) = c.forms();
            if c.markers.len() != rows || (!signed && negative) {
                return None;
            }
            let mut pos = 0usize;
            let mut base = 0;
            while base < rows {
                let n = WORD.min(rows - base);
                word.set = c.numbers(base, &mut pos, &mut word.values[..n]);
                word.len = n;
                if signed && u64s {
                    let ms = &c.markers[base..base + n];
                    if (0..n).any(|r| ms[r] == 0xcf && word.values[r] > i64::MAX as u64) {
                        return None;
                    }
                }
                each(&word);
                base += n;
            }
            return Some(());
        }
    };
    let mut pos = 0usize;
    let mut bad = false;
    let mut base = 0;
    while base < rows {
        let n = WORD.min(rows - base);
        let mut bits = 0u64;
        for (bit, slot) in word.values[..n].iter_mut().enumerate() {
            // The marker and the 8 bytes after it (one load).
            let (m, next) = match column.get(pos..pos + 9) {
                Some(b) => (b[0], u64::from_be_bytes(b[1..].try_into().ok()?)),
                None => {
                    let rest = column.get(pos..).filter(|r| !r.is_empty())?;
                    let mut padded = [0u8; 9];
                    padded[..rest.len()].copy_from_slice(rest);
                    (padded[0], u64::from_be_bytes(padded[1..].try_into().ok()?))
                }
            };
            let info = MARKERS[usize::from(m)];
            let (kind, len) = (info >> 4, u32::from(info & 15));
            // The `len` bytes after the marker, as unsigned and as signed (0 when there are none).
            // (A shift by 64 is no shift: masked to 0 instead of a branch.)
            let shift = (64 - 8 * len) & 63;
            let some = 0u64.wrapping_sub(u64::from(len != 0));
            let unsigned = (next >> shift) & some;
            let sign_extended = ((next as i64) >> shift) as u64 & some;
            // Chosen by masks, not by a branch or an index (a store and a load).
            let when = |k: u8| 0u64.wrapping_sub(u64::from(kind == k));
            let v = (u64::from(m) & when(POS))
                | (m as i8 as i64 as u64 & when(NEG))
                | (unsigned & when(UNSIGNED))
                | (sign_extended & when(SIGNED));
            // (`|` and `&`, not `||` and `&&`: no branch.)
            bad |= (kind == BAD)
                | (!signed & ((kind == NEG) | (kind == SIGNED)))
                | (signed & (kind == UNSIGNED) & (unsigned > i64::MAX as u64));
            *slot = v;
            bits |= u64::from(kind != UNSET) << bit;
            pos += 1 + len as usize;
        }
        if bad {
            return None;
        }
        word.set = bits;
        word.len = n;
        each(&word);
        base += n;
    }
    (pos == column.len()).then_some(())
}

/// Every row's number of `column` (see [`decode`]) in one array, and the words of the
/// bitmap of the rows that have one; `None` as for [`decode`].
pub(crate) fn decode_all(
    column: Numbers<'_>,
    rows: usize,
    signed: bool,
) -> Option<(Vec<u64>, Vec<u64>)> {
    let mut values = Vec::with_capacity(rows);
    let mut set = Vec::with_capacity(rows.div_ceil(WORD));
    decode(column, rows, signed, |w| {
        values.extend_from_slice(&w.values[..w.len]);
        set.push(w.set);
    })?;
    Some((values, set))
}

/// The rows of `column` (see [`decode`]) whose number lies in `lo..=hi` (as `T`: `u64`, or
/// `i64` for signed types), or outside it when `negate`, as bitmap words; an unset row never
/// matches. The comparisons of a word have no branch.
pub(crate) fn select<T: Copy + PartialOrd>(
    column: Numbers<'_>,
    rows: usize,
    signed: bool,
    (lo, hi, negate): (T, T, bool),
    as_t: impl Fn(u64) -> T,
) -> Option<Vec<u64>> {
    let mut words = Vec::with_capacity(rows.div_ceil(WORD));
    decode(column, rows, signed, |w| {
        // A byte per row first (a loop the compiler vectorizes), then into bits
        // (`bits_of`): a bit per row shifted in place took a third of the loop's time.
        let mut hit = [0u8; WORD];
        for (h, &v) in hit.iter_mut().zip(&w.values) {
            let v = as_t(v);
            // (`&`, not `&&`: no branch, which random values mispredict.)
            *h = u8::from(((lo <= v) & (v <= hi)) != negate);
        }
        words.push(crate::segment::marked::bits_of(&hit) & w.set);
    })?;
    Some(words)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::value::{column_of as column, Value};

    /// Every row's number (`None`: unset), or `None` for a column left to the reader.
    fn all(column: &[u8], rows: usize, signed: bool) -> Option<Vec<Option<u64>>> {
        let mut out = Vec::new();
        decode(Numbers::Msgpack(column), rows, signed, |w| {
            for r in 0..w.len {
                out.push((w.set >> r & 1 == 1).then_some(w.values[r]));
            }
        })?;
        Some(out)
    }

    #[test]
    fn every_width_and_sign_decodes() {
        let edges = crate::value::INT_EDGES;
        // More than a word, unset values among them.
        let mut vals: Vec<Value> = Vec::new();
        for k in 0..5 {
            vals.extend(edges.iter().map(|&v| Value::Int(v)));
            vals.insert(k * 7, Value::Null);
        }
        let got = all(&column(&vals), vals.len(), true).unwrap();
        assert_eq!(got.len(), vals.len());
        for (g, v) in got.iter().zip(&vals) {
            match v {
                Value::Int(x) => assert_eq!(*g, Some(*x as u64), "{x}"),
                _ => assert_eq!(*g, None),
            }
        }
        // Negative numbers are no counts.
        assert!(all(&column(&vals), vals.len(), false).is_none());
        let counts: Vec<Value> = [0, 127, 128, u64::MAX].map(Value::Count).to_vec();
        let got = all(&column(&counts), 4, false).unwrap();
        assert_eq!(got, vec![Some(0), Some(127), Some(128), Some(u64::MAX)]);
        // u64::MAX is no int.
        assert!(all(&column(&counts), 4, true).is_none());
    }

    #[test]
    fn a_column_of_the_wrong_length_or_type_is_left_to_the_reader() {
        let col = column(&[Value::Count(1), Value::Count(300)]);
        assert!(all(&col, 1, false).is_none());
        assert!(all(&col, 3, false).is_none());
        assert!(all(&col[..col.len() - 1], 2, false).is_none());
        let strings = column(&[Value::String(b"a".to_vec())]);
        assert!(all(&strings, 1, false).is_none());
    }

    #[test]
    fn select_compares_a_word_at_a_time() {
        let vals: Vec<Value> = (0..150)
            .map(|i| {
                if i % 7 == 0 {
                    Value::Null
                } else {
                    Value::Count(i)
                }
            })
            .collect();
        let col = column(&vals);
        let sel = select(
            Numbers::Msgpack(&col),
            150,
            false,
            (10u64, 99, false),
            |v| v,
        )
        .unwrap();
        let sel_neg = select(Numbers::Msgpack(&col), 150, false, (10u64, 99, true), |v| v).unwrap();
        assert_eq!(sel.len(), 3);
        for i in 0..150usize {
            let bit = |s: &[u64]| s[i / 64] >> (i % 64) & 1 == 1;
            let set = i % 7 != 0;
            assert_eq!(bit(&sel), set && (10..=99).contains(&i), "{i}");
            assert_eq!(bit(&sel_neg), set && !(10..=99).contains(&i), "{i}");
        }
    }
}
