//! Evaluating a bound expression on encoded rows, in place, allocating nothing.
//!
//! One [`RowCursor`] pass over the row finds where each field the comparisons need starts
//! ([`RowCursor::skip`] steps over the others by their msgpack length alone, without looking
//! at their types); the comparisons then decode only their own field, and only when the
//! `&&`/`||` tree gets to them. Comparisons of integer fields (`count`, `port`, `int`, `time`,
//! `interval`) with an integer, time or duration literal are precompiled into an inclusive
//! range ([`Fast`]) and tested on the integer as it is read (the ranges of one field in a
//! conjunction are merged into one: `ts >= a && ts < b` reads `ts` once); `==` and `!=` of
//! strings and addresses compare the value as read; the others go through [`holds`] on a
//! borrowed [`ValueRef`]. Unset values never match, whatever the
//! operator.
//!
//! Before the rows, a whole batch is checked for the bytes every match needs ([`Needles`]:
//! the literal of an equality with a string or an address); a batch without them is skipped
//! after one `memmem` pass over its bytes.

use std::cmp::Ordering;

use super::bind::{Bound, Program, Test};
use super::literal::{addr_bits, in_subnet, net_bits, subnet_in, v4_of, Literal, Number};
use super::op::Op;
use crate::types::Type;
use crate::value::{DecodeError, RowCursor, ValueRef, NIL};

/// Byte strings that a batch's encoded rows must contain for one of its rows to match: what
/// an equality with a string or an address needs (a matching row holds the literal's bytes,
/// however its length is encoded). A batch without them is skipped after one `memmem` pass
/// over its bytes instead of an evaluation of each row.
#[derive(Debug, Clone)]
pub(crate) enum Needles {
    /// Each of them.
    All(Vec<Needles>),
    /// One of them.
    Any(Vec<Needles>),
    /// These bytes.
    Bytes(Box<memchr::memmem::Finder<'static>>),
}

impl Needles {
    /// The needles of a bound expression (`None`: it needs no particular bytes).
    pub(crate) fn of(b: &Bound) -> Option<Needles> {
        match b {
            Bound::Const(_) | Bound::Id(_) => None,
            Bound::And(v) => {
                let all: Vec<Needles> = v.iter().filter_map(Needles::of).collect();
                (!all.is_empty()).then_some(Needles::All(all))
            }
            // Every alternative needs its bytes, or the batch can match without any.
            Bound::Or(v) => v
                .iter()
                .map(Needles::of)
                .collect::<Option<_>>()
                .map(Needles::Any),
            Bound::Test(t) => {
                let scalar = t.ty.element().unwrap_or(&t.ty);
                // `==` on a scalar, `==` and `ni` on a container's elements, `ni` (substring)
                // on a string: a match holds the literal's bytes.
                let bytes = match (&t.lit, t.op) {
                    (Literal::String(s), Op::Eq | Op::Ni) if scalar.is_stringy() => s.clone(),
                    // An IPv4 address is stored in 4 bytes or, IPv4-mapped, in 16 that end
                    // with them: the 4 bytes are in either form.
                    (Literal::Addr(a), Op::Eq | Op::Ni) if *scalar == Type::Addr => {
                        match v4_of(*a) {
                            Some(v4) => v4.octets().to_vec(),
                            None => addr_bits(*a).to_be_bytes().to_vec(),
                        }
                    }
                    _ => return None,
                };
                (!bytes.is_empty()).then(|| {
                    Needles::Bytes(Box::new(memchr::memmem::Finder::new(&bytes).into_owned()))
                })
            }
        }
    }

    /// Whether `data` holds the needles.
    pub(crate) fn found_in(&self, data: &[u8]) -> bool {
        match self {
            Needles::All(v) => v.iter().all(|n| n.found_in(data)),
            Needles::Any(v) => v.iter().any(|n| n.found_in(data)),
            Needles::Bytes(f) => f.find(data).is_some(),
        }
    }
}

/// Field offsets for up to this many needed fields live on the stack.
const INLINE_FIELDS: usize = 16;

/// A comparison precompiled for the evaluator: "the value lies in `lo..=hi`" (an empty range
/// when `lo > hi`), negated for `!=`. Equivalent to [`holds`] on a set value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fast {
    /// No fast form: decode the value and use [`holds`].
    None,
    /// An unsigned field (`count`, `port`).
    Unsigned { lo: u64, hi: u64, negate: bool },
    /// A signed field (`int`, `time`, `interval`).
    Signed { lo: i64, hi: i64, negate: bool },
    /// `==` (or `!=`, negated) of a string-like field with a string: the bytes compare.
    Bytes { negate: bool },
    /// `==` (or `!=`, negated) of an address field with an address, as VAST compares them
    /// (an IPv4 address equals its IPv4-mapped IPv6 form): stored bytes of an IPv6 address
    /// (16) compare with `octets`, the literal's IPv4-mapped IPv6 form; stored bytes of an
    /// IPv4 address (4) with its last 4 when `v4` (the literal is IPv4 or IPv4-mapped), else
    /// never equal. No `IpAddr` is built.
    Addr {
        octets: [u8; 16],
        v4: bool,
        negate: bool,
    },
}

impl Fast {
    /// The one range both ranges describe (`None` unless both are ranges of the same kind,
    /// not negated).
    pub(crate) fn intersect(self, other: Fast) -> Option<Fast> {
        match (self, other) {
            (
                Fast::Unsigned {
                    lo: a,
                    hi: b,
                    negate: false,
                },
                Fast::Unsigned {
                    lo: c,
                    hi: d,
                    negate: false,
                },
            ) => Some(Fast::Unsigned {
                lo: a.max(c),
                hi: b.min(d),
                negate: false,
            }),
            (
                Fast::Signed {
                    lo: a,
                    hi: b,
                    negate: false,
                },
                Fast::Signed {
                    lo: c,
                    hi: d,
                    negate: false,
                },
            ) => Some(Fast::Signed {
                lo: a.max(c),
                hi: b.min(d),
                negate: false,
            }),
            _ => None,
        }
    }

    /// The fast form of a test, if it has one.
    pub(crate) fn of(t: &Test) -> Fast {
        let eq = matches!(t.op, Op::Eq | Op::Ne);
        match (&t.ty, &t.lit) {
            (ty, Literal::String(_)) if eq && ty.is_stringy() => {
                return Fast::Bytes {
                    negate: t.op == Op::Ne,
                }
            }
            (Type::Addr, Literal::Addr(a)) if eq => {
                return Fast::Addr {
                    octets: addr_bits(*a).to_be_bytes(),
                    v4: v4_of(*a).is_some(),
                    negate: t.op == Op::Ne,
                };
            }
            _ => {}
        }
        let x: i128 = match (&t.ty, &t.lit) {
            (Type::Count | Type::Port, Literal::Count(x)) => *x as i128,
            (Type::Count | Type::Port, Literal::Int(x)) => *x as i128,
            // A port with a protocol also checks `proto` when the schema has one.
            (Type::Count | Type::Port, Literal::Port(x, proto))
                if proto.is_none() || t.proto.is_none() =>
            {
                *x as i128
            }
            (Type::Int, Literal::Count(x)) => *x as i128,
            (Type::Int, Literal::Int(x))
            | (Type::Time, Literal::Time(x))
            | (Type::Interval, Literal::Duration(x)) => *x as i128,
            _ => return Fast::None,
        };
        let (negate, op) = match t.op {
            Op::Ne => (true, Op::Eq),
            op => (false, op),
        };
        let (lo, hi) = match op {
            Op::Eq => (x, x),
            Op::Lt => (i128::MIN, x - 1),
            Op::Le => (i128::MIN, x),
            Op::Gt => (x + 1, i128::MAX),
            Op::Ge => (x, i128::MAX),
            _ => return Fast::None,
        };
        let clamp = |v: i128, min: i128, max: i128| v.clamp(min, max);
        if matches!(t.ty, Type::Count | Type::Port) {
            let (lo, hi) = (
                clamp(lo, 0, u64::MAX as i128 + 1),
                clamp(hi, -1, u64::MAX as i128),
            );
            if lo > hi {
                return Fast::Unsigned {
                    lo: 1,
                    hi: 0,
                    negate,
                };
            }
            Fast::Unsigned {
                lo: lo as u64,
                hi: hi as u64,
                negate,
            }
        } else {
            let (min, max) = (i64::MIN as i128, i64::MAX as i128);
            let (lo, hi) = (clamp(lo, min, max + 1), clamp(hi, min - 1, max));
            if lo > hi {
                return Fast::Signed {
                    lo: 1,
                    hi: 0,
                    negate,
                };
            }
            Fast::Signed {
                lo: lo as i64,
                hi: hi as i64,
                negate,
            }
        }
    }
}

impl Program {
    /// Whether the encoded row (of this program's schema) matches; its event ID is not known,
    /// so an `#id` comparison is false (see [`Program::matches_id`]).
    #[inline]
    pub fn matches(&self, row: &[u8]) -> Result<bool, DecodeError> {
        self.matches_at(row, None)
    }

    /// Whether the encoded row of the event with ID `id` matches.
    #[inline]
    pub fn matches_id(&self, row: &[u8], id: u64) -> Result<bool, DecodeError> {
        self.matches_at(row, Some(id))
    }

    #[inline]
    fn matches_at(&self, row: &[u8], id: Option<u64>) -> Result<bool, DecodeError> {
        if let Bound::Const(b) = self.bound {
            return Ok(b);
        }
        let n = self.fields.len();
        let mut inline = [0usize; INLINE_FIELDS];
        let mut heap = Vec::new();
        let offsets = if n <= INLINE_FIELDS {
            &mut inline[..n]
        } else {
            heap.resize(n, 0);
            &mut heap[..]
        };
        self.locate(row, offsets)?;
        match &self.bound {
            Bound::Test(t) => test(self, t, row, offsets),
            b => eval(self, b, row, offsets, id),
        }
    }

    /// Whether a batch whose rows are encoded in `data` (back to back) can hold a match, by
    /// the bytes a match needs ([`Needles`]); `true` when it needs none.
    pub(crate) fn may_hold(&self, data: &[u8]) -> bool {
        self.needles.as_ref().is_none_or(|n| n.found_in(data))
    }

    /// The number of rows that match, the first of them the event with ID `first_id`.
    pub(crate) fn count_matches<'a>(
        &self,
        rows: impl Iterator<Item = &'a [u8]>,
        first_id: u64,
    ) -> Result<usize, DecodeError> {
        let mut n = 0;
        for (i, row) in rows.enumerate() {
            n += usize::from(self.matches_id(row, first_id.wrapping_add(i as u64))?);
        }
        Ok(n)
    }

    /// The indices of the rows that match, ascending, the first of them the event with ID
    /// `first_id`.
    pub(crate) fn select<'a>(
        &self,
        rows: impl Iterator<Item = &'a [u8]>,
        first_id: u64,
    ) -> Result<Vec<usize>, DecodeError> {
        let mut sel = Vec::new();
        for (i, row) in rows.enumerate() {
            if self.matches_id(row, first_id.wrapping_add(i as u64))? {
                sel.push(i);
            }
        }
        Ok(sel)
    }

    /// Stores where each needed field starts in `row` (one pass, up to the last one).
    #[inline]
    fn locate(&self, row: &[u8], offsets: &mut [usize]) -> Result<(), DecodeError> {
        let mut c = RowCursor::new(row);
        c.row_header(self.types.len())?;
        let mut next = 0;
        for (slot, &field) in offsets.iter_mut().zip(&self.fields) {
            c.skip_many(field - next)?;
            *slot = c.position();
            next = field;
        }
        Ok(())
    }

    /// The `ts` value of a row (for the time range of a filtered batch).
    pub(crate) fn row_ts(&self, row: &[u8]) -> Result<Option<i64>, DecodeError> {
        let Some(ts) = self.ts_index else {
            return Ok(None);
        };
        let mut c = RowCursor::new(row);
        c.row_header(self.types.len())?;
        c.skip_many(ts)?;
        Ok(match c.read(&self.types[ts])? {
            ValueRef::Time(t) => Some(t),
            _ => None,
        })
    }
}

/// Whether the row (of the event with ID `id`, when known) satisfies `b`.
fn eval(
    p: &Program,
    b: &Bound,
    row: &[u8],
    offsets: &[usize],
    id: Option<u64>,
) -> Result<bool, DecodeError> {
    Ok(match b {
        Bound::Const(b) => *b,
        Bound::And(v) => {
            for b in v {
                if !eval(p, b, row, offsets, id)? {
                    return Ok(false);
                }
            }
            true
        }
        Bound::Or(v) => {
            for b in v {
                if eval(p, b, row, offsets, id)? {
                    return Ok(true);
                }
            }
            false
        }
        Bound::Test(t) => test(p, t, row, offsets)?,
        // An unknown ID is as an unset value: no match.
        Bound::Id(r) => id.is_some_and(|id| r.holds(id)),
    })
}

/// A cursor at the start of the field in `slot`.
#[inline(always)]
fn at<'a>(row: &'a [u8], offsets: &[usize], slot: usize) -> RowCursor<'a> {
    RowCursor::at(row, offsets.get(slot).copied().unwrap_or(usize::MAX))
}

#[inline(always)]
fn test(p: &Program, t: &Test, row: &[u8], offsets: &[usize]) -> Result<bool, DecodeError> {
    let proto = t.proto_slot.map(|slot| at(row, offsets, slot));
    test_value(p, t, &mut at(row, offsets, t.slot), proto)
}

/// Whether the value at `c` satisfies `t`; `proto`, for a port with a protocol, is at the
/// same event's `proto` value. On success `c` is past the value, whatever the outcome (the
/// columnar evaluator, `columnar.rs`, reads a column's values one after the other so).
#[inline(always)]
pub(crate) fn test_value(
    p: &Program,
    t: &Test,
    c: &mut RowCursor<'_>,
    proto: Option<RowCursor<'_>>,
) -> Result<bool, DecodeError> {
    match t.fast {
        Fast::Unsigned { lo, hi, negate } => {
            let m = c.marker()?;
            if m == NIL {
                return Ok(false);
            }
            let v = c.uint(m, &t.ty)?;
            return Ok((lo <= v && v <= hi) != negate);
        }
        Fast::Signed { lo, hi, negate } => {
            let m = c.marker()?;
            if m == NIL {
                return Ok(false);
            }
            let v = c.int(m, &t.ty)?;
            return Ok((lo <= v && v <= hi) != negate);
        }
        Fast::Bytes { negate } => {
            let m = c.marker()?;
            if m == NIL {
                return Ok(false);
            }
            return Ok(match (c.scalar(m, &t.ty)?, &t.lit) {
                (ValueRef::String(s), Literal::String(l)) => (s == l.as_slice()) != negate,
                _ => false,
            });
        }
        Fast::Addr { octets, v4, negate } => {
            let m = c.marker()?;
            if m == NIL {
                return Ok(false);
            }
            // An address is a bin of 4 or 16 bytes, read here as bytes.
            let ValueRef::String(got) = c.scalar(m, &Type::String)? else {
                return Ok(false);
            };
            // Fixed-size arrays compare as integers (a slice compare calls memcmp).
            let equal = match got.len() {
                4 => {
                    v4 && <[u8; 4]>::try_from(got)
                        .is_ok_and(|g| g == [octets[12], octets[13], octets[14], octets[15]])
                }
                16 => <[u8; 16]>::try_from(got).is_ok_and(|g| g == octets),
                _ => return Err(c.unexpected(m, &t.ty)),
            };
            return Ok(equal != negate);
        }
        Fast::None => {}
    }
    let v = c.read(&t.ty)?;
    if matches!(v, ValueRef::Null) {
        return Ok(false);
    }
    if let (Some(mut proto), Some(field), Literal::Port(_, Some(want))) = (proto, t.proto, &t.lit) {
        // A port with a protocol: the event's `proto` must agree when it is set.
        let ty = p.types.get(field).unwrap_or(&Type::String);
        if let ValueRef::String(got) = proto.read(ty)? {
            if got != want.as_bytes() {
                return Ok(t.op.is_negative());
            }
        }
    }
    Ok(match v {
        ValueRef::List(items) if t.ty.is_container() => container(&items, t.op, &t.lit),
        v => holds(&v, t.op, &t.lit),
    })
}

/// A container field: the operator holds for some element (`field == [..]` compares the whole
/// list); a negative operator is the negation of its positive.
fn container(items: &[ValueRef<'_>], op: Op, lit: &Literal) -> bool {
    if op.is_negative() {
        return !container(items, op.negate(), lit);
    }
    match (op, lit) {
        (Op::Eq, Literal::List(want)) => {
            items.len() == want.len() && items.iter().zip(want).all(|(v, w)| holds(v, Op::Eq, w))
        }
        (Op::Ni, x) => items.iter().any(|v| holds(v, Op::Eq, x)),
        (op, x) => items.iter().any(|v| holds(v, op, x)),
    }
}

/// Whether `v op lit` holds for a scalar value (`false` for an unset one and for types that
/// do not compare). A negative operator is the negation of its positive on a set value.
pub(crate) fn holds(v: &ValueRef<'_>, op: Op, lit: &Literal) -> bool {
    if matches!(v, ValueRef::Null) {
        return false;
    }
    if op.is_negative() {
        return !holds(v, op.negate(), lit);
    }
    match (op, lit) {
        (Op::Eq | Op::Match, Literal::Pattern(p)) => match v {
            ValueRef::String(s) => p.full.is_match(s),
            _ => false,
        },
        (Op::Match, _) => false,
        (Op::In, Literal::List(items)) => items.iter().any(|x| holds(v, Op::Eq, x)),
        (Op::In, Literal::Subnet(net, p)) => match *v {
            ValueRef::Addr(a) => in_subnet(a, *net, *p),
            ValueRef::Subnet(a, q) => subnet_in(a, q, *net, *p),
            _ => false,
        },
        (Op::In, Literal::String(l)) => match v {
            ValueRef::String(s) => contains(l, s),
            _ => false,
        },
        (Op::In, _) => false,
        (Op::Ni, Literal::String(l)) => match v {
            ValueRef::String(s) => contains(s, l),
            _ => false,
        },
        (Op::Ni, Literal::Pattern(p)) => match v {
            ValueRef::String(s) => p.search.is_match(s),
            _ => false,
        },
        (Op::Ni, Literal::Addr(x)) => match *v {
            ValueRef::Subnet(a, q) => in_subnet(*x, a, q),
            _ => false,
        },
        (Op::Ni, Literal::Subnet(n, p)) => match *v {
            ValueRef::Subnet(a, q) => subnet_in(*n, *p, a, q),
            _ => false,
        },
        (Op::Ni, _) => false,
        (op, lit) => compare(v, lit).is_some_and(|o| match op {
            Op::Eq => o == Ordering::Equal,
            Op::Lt => o == Ordering::Less,
            Op::Le => o != Ordering::Greater,
            Op::Gt => o == Ordering::Greater,
            Op::Ge => o != Ordering::Less,
            _ => false,
        }),
    }
}

/// Whether `needle` occurs in `hay`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || memchr::memmem::find(hay, needle).is_some()
}

/// The order of a value and a literal of comparable types.
pub(crate) fn compare(v: &ValueRef<'_>, lit: &Literal) -> Option<Ordering> {
    use ValueRef as V;
    let num = match *v {
        V::Count(x) | V::Port(x) => Some(Number::U(x)),
        V::Int(x) => Some(Number::I(x)),
        V::Double(x) => Some(Number::F(x)),
        _ => None,
    };
    if let (Some(a), Some(b)) = (num, lit.number()) {
        return a.cmp(b);
    }
    match (v, lit) {
        (V::Bool(a), Literal::Bool(b)) => Some(a.cmp(b)),
        (V::String(s), Literal::String(l)) => Some((*s).cmp(l.as_slice())),
        // As VAST: an IPv4 address is its IPv4-mapped IPv6 form.
        (V::Addr(a), Literal::Addr(b)) => Some(addr_bits(*a).cmp(&addr_bits(*b))),
        (V::Subnet(a, p), Literal::Subnet(b, q)) => {
            (net_bits(*a, *p) == net_bits(*b, *q)).then_some(Ordering::Equal)
        }
        (V::Port(a) | V::Count(a), Literal::Port(b, _)) => Some(a.cmp(b)),
        (V::Time(a), Literal::Time(b)) | (V::Interval(a), Literal::Duration(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_of(ty: Type, op: Op, lit: Literal) -> Test {
        Test {
            field: 0,
            ty,
            op,
            lit,
            proto: None,
            slot: 0,
            proto_slot: None,
            fast: Fast::None,
        }
    }

    /// The fast form gives what [`holds`] gives, at the edges of every integer width.
    #[test]
    fn fast_ranges_agree_with_holds() {
        let ops = [Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge];
        let unsigned = [
            0u64,
            1,
            5,
            999,
            1000,
            1001,
            i64::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ];
        let signed = [
            i64::MIN,
            i64::MIN + 1,
            -1000,
            -1,
            0,
            1,
            1000,
            i64::MAX - 1,
            i64::MAX,
        ];
        let mut lits = vec![Literal::Port(5, None), Literal::Port(5, Some("tcp".into()))];
        for &x in &unsigned {
            lits.push(Literal::Count(x));
        }
        for &x in &signed {
            lits.extend([Literal::Int(x), Literal::Time(x), Literal::Duration(x)]);
        }
        let mut checked = 0;
        for ty in [
            Type::Count,
            Type::Port,
            Type::Int,
            Type::Time,
            Type::Interval,
        ] {
            for op in ops {
                for lit in &lits {
                    let t = test_of(ty.clone(), op, lit.clone());
                    let fast = Fast::of(&t);
                    let values: Vec<ValueRef<'_>> = match ty {
                        Type::Count => unsigned.iter().map(|&v| ValueRef::Count(v)).collect(),
                        Type::Port => unsigned.iter().map(|&v| ValueRef::Port(v)).collect(),
                        Type::Int => signed.iter().map(|&v| ValueRef::Int(v)).collect(),
                        Type::Time => signed.iter().map(|&v| ValueRef::Time(v)).collect(),
                        _ => signed.iter().map(|&v| ValueRef::Interval(v)).collect(),
                    };
                    for v in &values {
                        let want = holds(v, op, lit);
                        let got = match (fast, v) {
                            (Fast::None, _) => continue,
                            (
                                Fast::Unsigned { lo, hi, negate },
                                ValueRef::Count(x) | ValueRef::Port(x),
                            ) => (lo <= *x && *x <= hi) != negate,
                            (
                                Fast::Signed { lo, hi, negate },
                                ValueRef::Int(x) | ValueRef::Time(x) | ValueRef::Interval(x),
                            ) => (lo <= *x && *x <= hi) != negate,
                            other => panic!("{other:?} for {ty} {op:?} {lit}"),
                        };
                        assert_eq!(got, want, "{v:?} {} {lit} as {ty}", op.as_str());
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 2000, "{checked}");
    }

    /// String and address equality: the fast form gives what [`holds`] gives.
    #[test]
    fn fast_equality_agrees_with_holds() {
        let v4: std::net::IpAddr = "10.0.0.1".parse().unwrap();
        let v6: std::net::IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        let strings: [&[u8]; 4] = [b"", b"a", b"ab", b"\xff"];
        for op in [Op::Eq, Op::Ne] {
            for ty in [Type::String, Type::Enum, Type::File] {
                for lit in strings {
                    let t = test_of(ty.clone(), op, Literal::String(lit.to_vec()));
                    assert_eq!(
                        Fast::of(&t),
                        Fast::Bytes {
                            negate: op == Op::Ne
                        }
                    );
                    for v in strings {
                        let want = holds(&ValueRef::String(v), op, &t.lit);
                        assert_eq!((v == lit) != (op == Op::Ne), want, "{v:?} {lit:?}");
                    }
                }
            }
            let other: std::net::IpAddr = "10.0.0.2".parse().unwrap();
            let plain6: std::net::IpAddr = "2001:db8::1".parse().unwrap();
            let compat: std::net::IpAddr = "::10.0.0.1".parse().unwrap();
            let all = [v4, v6, other, plain6, compat];
            for lit in all {
                let t = test_of(Type::Addr, op, Literal::Addr(lit));
                let Fast::Addr { octets, v4, negate } = Fast::of(&t) else {
                    panic!("{lit}: no fast form");
                };
                assert_eq!(negate, op == Op::Ne);
                for v in all {
                    let want = holds(&ValueRef::Addr(v), op, &t.lit);
                    // The stored form: 4 bytes for IPv4, 16 for IPv6.
                    let got = match v {
                        std::net::IpAddr::V4(a) => v4 && a.octets() == octets[12..],
                        std::net::IpAddr::V6(a) => a.octets() == octets,
                    } != negate;
                    assert_eq!(got, want, "{v} {lit}");
                    // VAST's rule, independently: equal when the IPv4-mapped forms are.
                    let mapped = |a: std::net::IpAddr| match a {
                        std::net::IpAddr::V4(a) => a.to_ipv6_mapped(),
                        std::net::IpAddr::V6(a) => a,
                    };
                    assert_eq!(want, (mapped(v) == mapped(lit)) != negate, "{v} {lit}");
                }
            }
        }
    }
}
