//! Evaluating a bound expression on a batch's columns, a column at a time.
//!
//! A batch stored in columns (`crate::segment::Columns`: column *c* holds the msgpack values
//! of field *c* of every row, back to back) is evaluated without rebuilding its rows: each
//! comparison walks the column of its field once, value after value, into a [`Selection`]
//! (one bit per row), and `&&` / `||` / the `#id` ranges combine selections a 64-row word at a
//! time. `&&` evaluates its operands in order and stops once no row is left, `||` once every
//! row is. Only the columns the expression reads are inflated (the caller asks for
//! [`Program::fields`]), and nothing is allocated per row. A column stored as a dictionary
//! (segment format 7) is not rebuilt: the comparison is evaluated once per distinct value,
//! then looked up by each row's code.
//!
//! A comparison reads each value with the row evaluator's own code
//! ([`super::eval::test_value`], which leaves its cursor past the value it read), so the two
//! evaluators give the same answer on every event; the tests compare them on every kind of
//! comparison. A column that holds fewer values than the batch has rows is a
//! [`DecodeError::Truncated`], one with more a [`DecodeError::Trailing`] (offsets within the
//! column), never a panic.

use super::bind::Fast;
use super::bind::{Bound, Program, Test};
use super::eval::test_value;
use super::ints::{select, signedness, Numbers};
use crate::segment::Columns;
use crate::value::{DecodeError, RowCursor};

/// The rows of a batch that satisfy an expression: one bit per row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Selection {
    words: Vec<u64>,
    rows: usize,
}

impl Selection {
    /// No row of `rows`.
    pub(crate) fn none(rows: usize) -> Selection {
        Selection {
            words: vec![0; rows.div_ceil(64)],
            rows,
        }
    }

    /// Every row of `rows` (the bits past the last row stay clear).
    pub(crate) fn all(rows: usize) -> Selection {
        let mut s = Selection {
            words: vec![u64::MAX; rows.div_ceil(64)],
            rows,
        };
        if let (Some(last), r @ 1..) = (s.words.last_mut(), rows % 64) {
            *last = (1u64 << r) - 1;
        }
        s
    }

    /// The rows selected here and in `words` (bit `r % 64` of word `r / 64` for row `r`).
    pub(crate) fn and_words(mut self, words: &[u64]) -> Selection {
        for (i, w) in self.words.iter_mut().enumerate() {
            *w &= words.get(i).copied().unwrap_or(0);
        }
        self
    }

    /// Number of selected rows.
    pub(crate) fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether no row is selected.
    pub(crate) fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Whether every row is selected.
    pub(crate) fn is_all(&self) -> bool {
        self.count() == self.rows
    }

    /// The selected rows, ascending.
    pub(crate) fn indices(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.count());
        for (k, &w) in self.words.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                out.push(k * 64 + w.trailing_zeros() as usize);
                w &= w - 1;
            }
        }
        out
    }

    /// The rows of `rows` for which `f` (called once per row, in order) says yes.
    fn from_fn(
        rows: usize,
        mut f: impl FnMut(usize) -> Result<bool, DecodeError>,
    ) -> Result<Selection, DecodeError> {
        let mut s = Selection::none(rows);
        for (i, w) in s.words.iter_mut().enumerate() {
            let mut word = 0u64;
            for bit in 0..64.min(rows - i * 64) {
                word |= u64::from(f(i * 64 + bit)?) << bit;
            }
            *w = word;
        }
        Ok(s)
    }

    /// The rows whose dictionary code (low bytes `lo`, high bytes `hi` or none) names an
    /// entry that `hit` marks, a word at a time from a table of the codes (no branch, no
    /// call per row); a code past `hit` does not match.
    fn of_codes(rows: usize, hit: &[bool], lo: &[u8], hi: &[u8]) -> Selection {
        let mut s = Selection::none(rows);
        let lo = &lo[..rows.min(lo.len())];
        if hi.is_empty() {
            let mut table = [0u64; 256];
            for (t, &h) in table.iter_mut().zip(hit) {
                *t = u64::from(h);
            }
            for (w, codes) in s.words.iter_mut().zip(lo.chunks(64)) {
                let mut word = 0u64;
                for (bit, &l) in codes.iter().enumerate() {
                    word |= table[usize::from(l)] << bit;
                }
                *w = word;
            }
        } else {
            let mut table = vec![0u8; 1 << 16];
            for (t, &h) in table.iter_mut().zip(hit) {
                *t = u8::from(h);
            }
            for ((w, l), h) in s.words.iter_mut().zip(lo.chunks(64)).zip(hi.chunks(64)) {
                let mut word = 0u64;
                for (bit, (&l, &h)) in l.iter().zip(h).enumerate() {
                    word |= u64::from(table[usize::from(l) | usize::from(h) << 8]) << bit;
                }
                *w = word;
            }
        }
        s
    }

    fn and_with(&mut self, other: &Selection) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= b;
        }
    }

    fn or_with(&mut self, other: &Selection) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }
}

impl Program {
    /// The fields that may be read as dictionaries (one flag per field of the schema): those
    /// the comparisons read, except a port comparison with a protocol's port and `proto`
    /// (read value by value side by side).
    pub(crate) fn dictionary_fields(&self) -> Vec<bool> {
        let mut out = vec![false; self.types.len()];
        for &f in &self.fields {
            if let Some(o) = out.get_mut(f) {
                *o = true;
            }
        }
        fn protos(b: &Bound, out: &mut [bool]) {
            match b {
                Bound::And(v) | Bound::Or(v) => v.iter().for_each(|b| protos(b, out)),
                Bound::Test(t) if t.proto.is_some() => {
                    for f in [t.proto, Some(t.field)].into_iter().flatten() {
                        if let Some(o) = out.get_mut(f) {
                            *o = false;
                        }
                    }
                }
                Bound::Test(_) => {}
                Bound::Const(_) | Bound::Id(_) => {}
            }
        }
        protos(&self.bound, &mut out);
        out
    }

    /// The fields that may be read as their numbers (`crate::segment::Columns::ints`; one
    /// flag per field of the schema): those every comparison of which is a range of numbers
    /// without a protocol ([`numbers`]), which needs no msgpack value.
    pub(crate) fn number_fields(&self) -> Vec<bool> {
        // Per field: 1 some comparison reads it as numbers, 2 some reads it otherwise.
        let mut seen = vec![0u8; self.types.len()];
        fn walk(b: &Bound, seen: &mut [u8]) {
            match b {
                Bound::And(v) | Bound::Or(v) => v.iter().for_each(|b| walk(b, seen)),
                Bound::Test(t) => {
                    let how = if as_numbers(t) { 1 } else { 2 };
                    for f in [t.proto, Some(t.field)].into_iter().flatten() {
                        if let Some(s) = seen.get_mut(f) {
                            *s |= how;
                        }
                    }
                }
                Bound::Const(_) | Bound::Id(_) => {}
            }
        }
        walk(&self.bound, &mut seen);
        seen.iter().map(|&s| s == 1).collect()
    }

    /// The rows of a batch that match, evaluated on its columns `cols` (at least those of
    /// [`Program::fields`] inflated, dictionaries among them only of
    /// [`Program::dictionary_fields`]); the first row is the event with ID `first_id`.
    pub(crate) fn select_columns(
        &self,
        cols: &Columns,
        first_id: u64,
    ) -> Result<Selection, DecodeError> {
        eval(self, &self.bound, cols, first_id)
    }
}

/// The columnar evaluator from outside the crate, for the benchmark that compares it with
/// the Arrow one (`benches/kernel.rs`); not for use elsewhere.
impl Program {
    /// The rows of `batch` (of this program's schema) as a segment stores them in columns,
    /// dictionaries where the program reads them as such (as a search inflates them, without
    /// the decoded numbers); `None` when its rows do not split into columns.
    #[doc(hidden)]
    pub fn split_columns(&self, batch: &crate::batch::Batch) -> Option<Columns> {
        let base = batch.offsets().first().copied().unwrap_or(0);
        let offsets: Vec<u32> = batch
            .offsets()
            .iter()
            .map(|&o| u32::try_from(o - base).ok())
            .collect::<Option<_>>()?;
        let data = batch.data().get(base..)?;
        Columns::split_rows(data, &offsets, self.types.len(), &self.dictionary_fields())
    }

    /// The number of rows of `cols` that match, by the columnar evaluator.
    #[doc(hidden)]
    pub fn count_columns(&self, cols: &Columns, first_id: u64) -> Result<usize, DecodeError> {
        Ok(self.select_columns(cols, first_id)?.count())
    }
}

fn eval(p: &Program, b: &Bound, cols: &Columns, first_id: u64) -> Result<Selection, DecodeError> {
    let rows = cols.rows();
    Ok(match b {
        Bound::Const(true) => Selection::all(rows),
        Bound::Const(false) => Selection::none(rows),
        Bound::And(v) => {
            let mut acc = Selection::all(rows);
            for b in v {
                if acc.is_empty() {
                    break;
                }
                acc.and_with(&eval(p, b, cols, first_id)?);
            }
            acc
        }
        Bound::Or(v) => {
            let mut acc = Selection::none(rows);
            for b in v {
                if acc.is_all() {
                    break;
                }
                acc.or_with(&eval(p, b, cols, first_id)?);
            }
            acc
        }
        Bound::Test(t) => column(p, t, cols)?,
        Bound::Id(r) => Selection::from_fn(rows, |i| Ok(r.holds(first_id.wrapping_add(i as u64))))?,
    })
}

/// One comparison on its field's column.
fn column(p: &Program, t: &Test, cols: &Columns) -> Result<Selection, DecodeError> {
    let rows = cols.rows();
    if let Some((dict, enc)) = cols.dict(t.field).filter(|_| t.proto.is_none()) {
        // Once per distinct value, then a lookup per row.
        let mut hit = Vec::new();
        for entry in dict.entries(enc) {
            let mut c = RowCursor::new(entry);
            hit.push(test_value(p, t, &mut c, None)?);
        }
        let (lo, hi) = dict.code_bytes(enc);
        return Ok(Selection::of_codes(rows, &hit, lo, hi));
    }
    let kept = match (cols.ints(t.field), cols.marked(t.field)) {
        (Some(ints), _) => Some(Numbers::Decoded(ints)),
        (None, Some(m)) => Some(Numbers::Marked(m)),
        (None, None) => None,
    };
    if let Some(kept) = kept {
        // Kept so only for such comparisons (`number_fields`); numbers out of the type's
        // range are an error, as the reader reports them (msgpack's unused marker).
        return numbers(t, kept, rows).ok_or_else(|| DecodeError::Unexpected {
            marker: 0xc1,
            ty: t.ty.to_string(),
            at: 0,
        });
    }
    let values = cols.column(t.field);
    if let Some(s) = numbers(t, Numbers::Msgpack(values), rows) {
        return Ok(s);
    }
    if let Some(s) = bytes_equal(t, values, rows) {
        return Ok(s);
    }
    if let Some(s) = addresses(t, values, rows) {
        return Ok(s);
    }
    let mut c = RowCursor::new(values);
    // A port with a protocol also reads the event's `proto`, from its own column.
    let mut proto = t.proto.map(|f| RowCursor::new(cols.column(f)));
    let s = Selection::from_fn(rows, |_| {
        let hit = test_value(p, t, &mut c, proto.clone())?;
        if let Some(proto) = proto.as_mut() {
            proto.skip()?;
        }
        Ok(hit)
    })?;
    if c.position() != values.len() {
        return Err(DecodeError::Trailing {
            at: c.position(),
            len: values.len(),
        });
    }
    Ok(s)
}

/// `==` or `!=` of a string literal on a column of byte strings without a dictionary, in one
/// loop that knows only the markers weir writes for them (nil and `bin 8` to `bin 32`) and
/// tests a value's length and first 8 bytes before it compares the rest (a call per row to
/// compare two slices was half the time of a needle's count); `None` for any other
/// comparison or byte, which the general reader then reads (and reports).
fn bytes_equal(t: &Test, values: &[u8], rows: usize) -> Option<Selection> {
    let (Fast::Bytes { negate }, super::literal::Literal::String(lit), None) =
        (t.fast, &t.lit, t.proto)
    else {
        return None;
    };
    // The first 8 bytes (zeros past the end) as a number.
    let head = |b: &[u8]| {
        let mut x = [0u8; 8];
        let n = b.len().min(8);
        x[..n].copy_from_slice(&b[..n]);
        u64::from_le_bytes(x)
    };
    let want = head(lit);
    let mut words = vec![0u64; rows.div_ceil(64)];
    let mut pos = 0usize;
    for r in 0..rows {
        let (start, len) = match *values.get(pos)? {
            0xc0 => {
                pos += 1;
                continue;
            }
            0xc4 => (pos + 2, usize::from(*values.get(pos + 1)?)),
            0xc5 => {
                let b = values.get(pos + 1..pos + 3)?;
                (pos + 3, usize::from(u16::from_be_bytes([b[0], b[1]])))
            }
            0xc6 => {
                let b = values.get(pos + 1..pos + 5)?;
                (
                    pos + 5,
                    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize,
                )
            }
            _ => return None,
        };
        let v = values.get(start..start + len)?;
        pos = start + len;
        let equal = len == lit.len()
            && match v.get(..8) {
                Some(first) => {
                    u64::from_le_bytes(first.try_into().ok()?) == want && v[8..] == lit[8..]
                }
                None => head(v) == want,
            };
        words[r / 64] |= u64::from(equal != negate) << (r % 64);
    }
    (pos == values.len()).then_some(Selection { words, rows })
}

/// An address comparison ([`Fast::Addr`], [`Fast::Subnet`], [`Fast::AddrList`]) on a column
/// of addresses without a dictionary, in one loop that knows only the bytes weir writes for
/// them (nil, and `bin 8` of 4 or 16 bytes) and tests each as 128 bits, as the row
/// evaluator's fast forms do; `None` for any other comparison or byte, which the general
/// reader then reads (and reports). A retro match of an indicator set's addresses spent more
/// than half its time reading and probing addresses one call per value.
fn addresses(t: &Test, values: &[u8], rows: usize) -> Option<Selection> {
    if t.proto.is_some() {
        return None;
    }
    let mut words = vec![0u64; rows.div_ceil(64)];
    let mut mark = |r: usize, hit: bool| words[r / 64] |= u64::from(hit) << (r % 64);
    match t.fast {
        Fast::Addr { bits: want, negate } => {
            each_address(values, rows, |r, b| mark(r, (b == want) != negate))?;
        }
        Fast::Subnet { net, mask } => each_address(values, rows, |r, b| mark(r, b & mask == net))?,
        Fast::AddrList => {
            let super::literal::Literal::List(items) = &t.lit else {
                return None;
            };
            let set = &items.index()?.addrs;
            // The set's filter first, for every address: a loop of independent loads that
            // the processor overlaps. Probing the hash table too, per address, waited for
            // memory on nearly every one; only the few the filter lets through probe it.
            let mut maybe = Vec::new();
            each_address(values, rows, |r, b| {
                if set.may_contain(b) {
                    maybe.push((r, b));
                }
            })?;
            for (r, b) in maybe {
                mark(r, set.contains(b));
            }
        }
        _ => return None,
    }
    Some(Selection { words, rows })
}

/// Calls `f` with the row and the 128 bits of each set address of a column of `rows`
/// addresses (see [`addresses`]); `None` when a value is anything but nil or a bin of 4 or
/// 16 bytes, or the column holds more or fewer than `rows` values.
#[inline]
fn each_address(values: &[u8], rows: usize, mut f: impl FnMut(usize, u128)) -> Option<()> {
    let mut pos = 0usize;
    for r in 0..rows {
        match *values.get(pos)? {
            0xc0 => {
                pos += 1;
                continue;
            }
            0xc4 => {}
            _ => return None,
        }
        let bits = match *values.get(pos + 1)? {
            4 => {
                let b: [u8; 4] = values.get(pos + 2..pos + 6)?.try_into().ok()?;
                pos += 6;
                (0xffff_u128 << 32) | u128::from(u32::from_be_bytes(b))
            }
            16 => {
                let b: [u8; 16] = values.get(pos + 2..pos + 18)?.try_into().ok()?;
                pos += 18;
                u128::from_be_bytes(b)
            }
            _ => return None,
        };
        f(r, bits);
    }
    (pos == values.len()).then_some(())
}

/// Whether [`numbers`] evaluates the comparison `t`: a range of numbers without a protocol.
fn as_numbers(t: &Test) -> bool {
    t.proto.is_none()
        && matches!(
            (t.fast, signedness(&t.ty)),
            (Fast::Unsigned { .. }, Some(false)) | (Fast::Signed { .. }, Some(true))
        )
}

/// A range comparison of a number column without a protocol, on the column decoded at once
/// ([`super::ints`]); `None` for any other comparison, or a column that module leaves to
/// the general reader.
fn numbers(t: &Test, values: Numbers<'_>, rows: usize) -> Option<Selection> {
    if !as_numbers(t) {
        return None;
    }
    let words = match (t.fast, signedness(&t.ty)?) {
        (Fast::Unsigned { lo, hi, negate }, false) => {
            select(values, rows, false, (lo, hi, negate), |v| v)?
        }
        (Fast::Signed { lo, hi, negate }, true) => {
            select(values, rows, true, (lo, hi, negate), |v| v as i64)?
        }
        _ => return None,
    };
    Some(Selection { words, rows })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use super::*;
    use crate::query::Query;
    use crate::types::{Field, Schema, Type};
    use crate::value::{encode_row, Value};

    #[test]
    fn rows_are_selected_by_their_codes_of_one_and_two_bytes() {
        // 200 rows: codes of one byte, and of two (a dictionary of 300 entries).
        let rows = 200;
        let hit: Vec<bool> = (0..300).map(|c| c % 3 == 0).collect();
        let lo: Vec<u8> = (0..rows).map(|r| (r * 7 % 256) as u8).collect();
        let hi: Vec<u8> = (0..rows).map(|r| (r % 2) as u8).collect();
        for two in [false, true] {
            let s = Selection::of_codes(rows, &hit, &lo, if two { &hi } else { &[] });
            for r in 0..rows {
                let code = usize::from(lo[r]) | if two { usize::from(hi[r]) << 8 } else { 0 };
                let want = hit.get(code).copied().unwrap_or(false);
                assert_eq!(
                    s.words[r / 64] >> (r % 64) & 1 == 1,
                    want,
                    "row {r} code {code}"
                );
            }
            assert_eq!(s.words[rows / 64] >> (rows % 64), 0, "no bit past the rows");
        }
        // Codes past the entries never match.
        let s = Selection::of_codes(3, &[true], &[0, 1, 255], &[]);
        assert_eq!(s.words, [0b001]);
    }

    fn schema() -> Arc<Schema> {
        Arc::new(Schema::new(
            "zeek.conn",
            vec![
                Field::new("ts", Type::Time),
                Field::new("uid", Type::String),
                Field::new("id.orig_h", Type::Addr),
                Field::new("id.resp_p", Type::Port),
                Field::new("proto", Type::String),
                Field::new("duration", Type::Interval),
                Field::new("orig_bytes", Type::Count),
                Field::new("history", Type::String),
                Field::new("tunnel_parents", Type::Set(Box::new(Type::String))),
                Field::new("score", Type::Double),
                Field::new("delta", Type::Int),
            ],
        ))
    }

    /// Rows of every kind of value, unset ones among them, the same for every seed.
    fn rows(n: usize) -> (Vec<u8>, Vec<u32>) {
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        let mut next = crate::value::xorshift();
        for r in 0..n {
            offsets.push(data.len() as u32);
            let unset = |k: u64| k == 0;
            let row = vec![
                Value::Time(1_258_531_200_000_000_000 + r as i64 * 1_000_000_000),
                Value::String(format!("C{}", next(50)).into_bytes()),
                if unset(next(9)) {
                    Value::Null
                } else if next(2) == 0 {
                    Value::Addr([192, 168, 1, next(4) as u8].into())
                } else {
                    Value::Addr(std::net::Ipv6Addr::from(0xfe80 << 112 | next(3) as u128).into())
                },
                Value::Count(*[53, 80, 443, 8080].get(next(4) as usize).unwrap()),
                Value::String(["tcp", "udp", "icmp"][next(3) as usize].as_bytes().to_vec()),
                if unset(next(5)) {
                    Value::Null
                } else {
                    Value::Interval(next(20) as i64 * 100_000_000)
                },
                if unset(next(7)) {
                    Value::Null
                } else {
                    Value::Count(next(3000))
                },
                Value::String(
                    ["ShADadFf", "Dd", "S", "", "ShADadFfRr", "ShADadFfRx"][next(6) as usize]
                        .as_bytes()
                        .to_vec(),
                ),
                Value::List(
                    (0..next(3))
                        .map(|k| Value::String(format!("t{k}{}", next(2)).into_bytes()))
                        .collect(),
                ),
                Value::Double(next(100) as f64 / 4.0),
                Value::Int(next(200) as i64 - 100),
            ];
            encode_row(&row, &mut data);
        }
        (data, offsets)
    }

    /// The columnar evaluator selects exactly the rows the row evaluator matches, for every
    /// kind of comparison and combination, and `#id`.
    #[test]
    fn columns_and_rows_agree() {
        let schema = schema();
        let n = 1000;
        let (data, offsets) = rows(n);
        let fields = schema.fields.len();
        let plain = Columns::split_rows(&data, &offsets, fields, &[]).unwrap();
        // The string and address columns as dictionaries where they get smaller so.
        let all = Columns::split_rows(&data, &offsets, fields, &[true; 11]).unwrap();
        assert!((0..fields).filter(|&c| all.dict(c).is_some()).count() >= 3);
        let mut kept = 0;
        let row = |i: usize| {
            let end = offsets.get(i + 1).map_or(data.len(), |&e| e as usize);
            &data[offsets[i] as usize..end]
        };
        let first = 4000;
        for expr in [
            "orig_bytes > 1000",
            "orig_bytes <= 5 || orig_bytes == 2999",
            "orig_bytes != 7",
            "duration > 1s && duration < 1.5s",
            "duration == 0s",
            "id.resp_p == 53/udp",
            "id.resp_p == 443/tcp || id.resp_p == 8080",
            "id.orig_h == 192.168.1.2",
            "id.orig_h in 192.168.1.0/31",
            "id.orig_h != fe80::1",
            ":addr == 192.168.1.3",
            "id.orig_h in [192.168.1.1, fe80::2, ::ffff:192.168.1.2, 10.0.0.1, 10.0.0.2, \
             10.0.0.3, 10.0.0.4, 2001:db8::1]",
            "! (id.orig_h in [192.168.1.0, fe80::, 10.0.0.1, 10.0.0.2, 10.0.0.3, 10.0.0.4, \
             10.0.0.5, 10.0.0.6]) && orig_bytes > 100",
            "id.orig_h in [192.168.1.1, fe80::1]",
            "id.orig_h in [192.168.1.1, fe80::2, 10.0.0.1, 10.0.0.2, 10.0.0.3, 10.0.0.4, \
             10.0.0.5, nil]",
            "id.orig_h in fe80::/127 || id.orig_h in 192.168.1.2/31",
            "uid == \"C7\"",
            "uid != \"C7\" && proto == \"udp\"",
            "history == \"ShADadFf\"",
            "history == \"ShADadFfRr\" || history == \"\"",
            "history != \"ShADadFfRx\"",
            "history == \"ShADadFfR\"",
            "\"Fa\" in history",
            "history == /S.*/",
            "history ni /A/",
            "\"t11\" in tunnel_parents",
            "tunnel_parents == []",
            "score >= 12.5",
            "delta < -50 || delta > 90",
            "! (proto == \"tcp\") && orig_bytes > 10",
            "#id >= 4500 && #id < 4700 || #id == 4999",
            "ts > 2009-11-18T08:05:00 && ts < 2009-11-18T08:10:00",
            "proto == \"tcp\" && (\"S\" in history || duration > 1s) && orig_bytes < 100",
            "orig_bytes > 1000000",
        ] {
            let p = Query::parse(expr).unwrap().bind(&schema);
            let by_rows: Vec<usize> = (0..n)
                .filter(|&i| p.matches_id(row(i), first + i as u64).unwrap())
                .collect();
            let sel = p.select_columns(&plain, first).unwrap();
            assert_eq!(sel.indices(), by_rows, "{expr}");
            // As a search reads them: dictionaries where the program allows.
            let dicts =
                Columns::split_rows(&data, &offsets, fields, &p.dictionary_fields()).unwrap();
            kept += (0..fields).filter(|&c| dicts.dict(c).is_some()).count();
            let with_dicts = p.select_columns(&dicts, first).unwrap();
            assert_eq!(with_dicts, sel, "{expr} on dictionaries");
            assert_eq!(sel.count(), by_rows.len(), "{expr}");
            assert_eq!(sel.is_all(), by_rows.len() == n, "{expr}");
        }
        assert!(kept >= 10, "{kept} dictionaries evaluated");
    }

    /// A column with fewer or more values than the batch has rows is an error.
    #[test]
    fn a_column_of_the_wrong_length_is_an_error() {
        let schema = schema();
        let (data, offsets) = rows(10);
        let p = Query::parse("orig_bytes > 5").unwrap().bind(&schema);
        let cols = || Columns::split_rows(&data, &offsets, schema.fields.len(), &[]).unwrap();
        assert!(matches!(
            p.select_columns(&cols().claiming_rows(9), 0),
            Err(DecodeError::Trailing { .. })
        ));
        assert!(matches!(
            p.select_columns(&cols().claiming_rows(11), 0),
            Err(DecodeError::Truncated(_))
        ));
    }

    #[test]
    fn selections_count_and_list_their_rows() {
        for rows in [0, 1, 63, 64, 65, 130] {
            let all = Selection::all(rows);
            assert_eq!(all.count(), rows);
            assert!(all.is_all());
            assert_eq!(all.indices(), (0..rows).collect::<Vec<_>>());
            let none = Selection::none(rows);
            assert!(none.is_empty());
            assert_eq!(none.is_all(), rows == 0);
        }
    }
}
