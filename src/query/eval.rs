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
//! Before the rows, a whole batch is checked for the bytes every match needs
//! ([`Needles`](super::bind::Needles): the literal of an equality with a string or an
//! address); a batch without them is skipped after one `memmem` pass over its bytes.
//!
//! The range forms and the needles are built when the expression is bound ([`super::bind`]);
//! what a comparison means on one value is [`super::holds`].

use super::bind::{Bound, Fast, Program, Test};
use super::holds::holds;
use super::literal::Literal;
use super::op::Op;
use crate::types::Type;
use crate::value::{DecodeError, RowCursor, ValueRef, NIL};

/// Field offsets for up to this many needed fields live on the stack.
const INLINE_FIELDS: usize = 16;

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
        Fast::Addr { bits, negate } => {
            return Ok(stored_addr(c, t)?.is_some_and(|b| (b == bits) != negate));
        }
        Fast::Subnet { net, mask } => {
            return Ok(stored_addr(c, t)?.is_some_and(|b| b & mask == net));
        }
        Fast::AddrList => {
            let bits = stored_addr(c, t)?;
            return Ok(match (&t.lit, bits) {
                (Literal::List(items), Some(b)) => {
                    items.index().is_some_and(|ix| ix.addrs.contains(b))
                }
                _ => false,
            });
        }
        Fast::None => {}
    }
    let v = c.read(&t.ty)?;
    if matches!(v, ValueRef::Null) || matches!(t.lit, Literal::Nil) {
        // An unset value matches nothing but `== nil`; a set one (a container too) `!= nil`.
        return Ok(holds(&v, t.op, &t.lit));
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

/// The next value of an address column as 128 bits ([`addr_bits`]: an IPv4 address in its
/// IPv4-mapped form), read as the bin of 4 or 16 bytes it is stored as; `None` for nil.
///
/// [`addr_bits`]: super::literal::addr_bits
fn stored_addr(c: &mut RowCursor<'_>, t: &Test) -> Result<Option<u128>, DecodeError> {
    let m = c.marker()?;
    if m == NIL {
        return Ok(None);
    }
    let ValueRef::String(got) = c.scalar(m, &Type::String)? else {
        return Ok(None);
    };
    match got.len() {
        4 => Ok(<[u8; 4]>::try_from(got)
            .ok()
            .map(|g| (0xffff_u128 << 32) | u128::from(u32::from_be_bytes(g)))),
        16 => Ok(<[u8; 16]>::try_from(got).ok().map(u128::from_be_bytes)),
        _ => Err(c.unexpected(m, &t.ty)),
    }
}

/// A container field: the operator holds for some element (`field == [..]` compares the whole
/// list); a negative operator is the negation of its positive.
pub(crate) fn container(items: &[ValueRef<'_>], op: Op, lit: &Literal) -> bool {
    if op.is_negative() {
        return !container(items, op.negate(), lit);
    }
    match (op, lit) {
        (Op::Eq, Literal::List(want)) => {
            items.len() == want.len()
                && items
                    .iter()
                    .zip(want.iter())
                    .all(|(v, w)| holds(v, Op::Eq, w))
        }
        (Op::Ni, x) => items.iter().any(|v| holds(v, Op::Eq, x)),
        (op, x) => items.iter().any(|v| holds(v, op, x)),
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

    /// An address in a subnet: the fast form gives what [`holds`] gives, for IPv4 and IPv6
    /// addresses stored in either form and subnets of either family, every prefix length.
    #[test]
    fn fast_subnet_agrees_with_holds() {
        let addrs: Vec<std::net::IpAddr> = [
            "10.0.0.1",
            "10.0.0.200",
            "10.1.0.1",
            "11.0.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::ffff:10.0.0.1",
            "::10.0.0.1",
            "2001:db8::1",
            "2001:db8:ffff::1",
            "::",
        ]
        .iter()
        .map(|a| a.parse().unwrap())
        .collect();
        let nets: Vec<std::net::IpAddr> = ["10.0.0.0", "::ffff:10.0.0.0", "2001:db8::", "::"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        let mut checked = 0;
        for net in &nets {
            let max = if net.is_ipv4() { 32 } else { 128 };
            for prefix in 0..=max {
                let t = test_of(Type::Addr, Op::In, Literal::Subnet(*net, prefix));
                let Fast::Subnet { net: n, mask } = Fast::of(&t) else {
                    panic!("{net}/{prefix}: no fast form");
                };
                for a in &addrs {
                    let want = holds(&ValueRef::Addr(*a), Op::In, &t.lit);
                    // The stored form: 4 bytes for IPv4, 16 for IPv6.
                    let bits = match a {
                        std::net::IpAddr::V4(v) => (0xffff_u128 << 32) | u128::from(u32::from(*v)),
                        std::net::IpAddr::V6(v) => u128::from(*v),
                    };
                    assert_eq!(bits & mask == n, want, "{a} in {net}/{prefix}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 3000, "{checked}");
    }

    /// `in` of an address with a list long enough to be indexed: the fast form, reading the
    /// stored bytes, gives what [`holds`] gives on the decoded address, for IPv4, IPv6,
    /// IPv4-mapped and IPv4-compatible addresses, members or not, and nil.
    #[test]
    fn fast_address_list_agrees_with_holds() {
        let parse = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        let members = [
            "10.0.0.1",
            "::ffff:10.0.0.2",
            "2001:db8::1",
            "::10.0.0.3",
            "192.168.1.1",
            "fe80::1",
            "0.0.0.0",
            "255.255.255.255",
        ];
        let list: Vec<Literal> = members.iter().map(|a| Literal::Addr(parse(a))).collect();
        let t = test_of(Type::Addr, Op::In, Literal::List(list.into()));
        assert_eq!(Fast::of(&t), Fast::AddrList);
        let general = Test {
            fast: Fast::None,
            ..t.clone()
        };
        let schema = std::sync::Arc::new(crate::types::Schema::new(
            "t",
            vec![crate::types::Field::new("a", Type::Addr)],
        ));
        let p = crate::query::Query::parse("a == 10.0.0.1")
            .unwrap()
            .bind(&schema);
        let values = [
            "10.0.0.1",
            "::ffff:10.0.0.1",
            "10.0.0.2",
            "::ffff:10.0.0.2",
            "10.0.0.3",
            "::10.0.0.3",
            "2001:db8::1",
            "2001:db8::2",
            "192.168.1.2",
            "0.0.0.0",
            "::",
            "255.255.255.255",
            "fe80::1",
        ];
        let mut hits = 0;
        for v in values {
            let a = parse(v);
            let mut buf = Vec::new();
            crate::value::RowEncoder::new(&mut buf).addr(a);
            let fast = test_value(&p, &t, &mut RowCursor::new(&buf), None).unwrap();
            let slow = test_value(&p, &general, &mut RowCursor::new(&buf), None).unwrap();
            assert_eq!(fast, holds(&ValueRef::Addr(a), Op::In, &t.lit), "{v}");
            assert_eq!(fast, slow, "{v}");
            hits += usize::from(fast);
        }
        assert_eq!(hits, 9, "members and their other forms");
        let nil = [NIL];
        assert!(!test_value(&p, &t, &mut RowCursor::new(&nil), None).unwrap());
        // A `nil` item matches no unset value either (`in` holds for set values only).
        let mut with_nil: Vec<Literal> = members.iter().map(|a| Literal::Addr(parse(a))).collect();
        with_nil.push(Literal::Nil);
        let t = test_of(Type::Addr, Op::In, Literal::List(with_nil.into()));
        assert_eq!(Fast::of(&t), Fast::AddrList);
        let unset = holds(&ValueRef::Null, Op::In, &t.lit);
        assert!(!unset);
        assert_eq!(
            test_value(&p, &t, &mut RowCursor::new(&nil), None).unwrap(),
            unset
        );
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
                let Fast::Addr { bits, negate } = Fast::of(&t) else {
                    panic!("{lit}: no fast form");
                };
                assert_eq!(negate, op == Op::Ne);
                for v in all {
                    let want = holds(&ValueRef::Addr(v), op, &t.lit);
                    // The stored form (4 bytes for IPv4, 16 for IPv6) as the fast form reads it.
                    let mut buf = Vec::new();
                    crate::value::RowEncoder::new(&mut buf).addr(v);
                    let stored = stored_addr(&mut RowCursor::new(&buf), &t).unwrap();
                    let got = stored.is_some_and(|b| (b == bits) != negate);
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
