//! Deciding from metadata, before any row is read, whether a segment or batch can hold a match.
//!
//! - A **segment** is known by its catalog entry: the names of its schemas (with event counts),
//!   the range of its `ts` values and its event IDs. `#type` predicates are decided by the
//!   name; `#timestamp` and `:timestamp` comparisons with a time are false when the range
//!   cannot satisfy them (and when no event has a `ts`); `#id` comparisons are decided when
//!   the span of its IDs lies wholly inside or outside. Everything else is "maybe". A schema name
//!   whose answer is [`Tri::False`] needs none of its batches; one that is [`Tri::True`] is
//!   counted from the catalog without opening the segment.
//! - A **batch** is known by its full schema ([`Program`]: a constant answer, e.g. a missing
//!   field or another `#type`), its IDs (`#id` comparisons that hold for all of them or none
//!   are decided first: [`Program::for_ids`]) and its `ts` range, which prunes every
//!   comparison of the schema's `ts` field with a time, whichever extractor named it.
//! - A batch of a format 3 segment also has a **sketch** ([`crate::segment::sketch`]): a Bloom
//!   filter of its string-like and address values and the range of each numeric and time
//!   field. [`Program::sketch_may_match`] is false when it proves that no row can match: an
//!   `==` (or `in [list]`, or `ni`/element `==` on a container) with a string or address that
//!   the filter does not hold (an IPv4 address, or an IPv4-mapped IPv6 one, is looked up in
//!   both its stored forms, 4 and 16 bytes), or a comparison (`==`, `<`, `<=`, `>`, `>=`) of a numeric or
//!   time field that its range cannot satisfy (or that has no value in the batch). An address
//!   `in` a subnet of at most [`SUBNET_PROBE_ADDRS`] addresses (`in 10.1.2.0/28`: a Sigma
//!   rule's `cidr`, an indicator set's subnet) is looked up as each of its addresses; a list of
//!   more than [`LIST_PROBE_MAX`] items is "maybe". Negated
//!   operators, substrings, patterns, larger subnets and everything else are "maybe".
//!
//! - A batch of a format 4 segment also records, per range, how many rows have a value, so
//!   that [`Program::sketch_count`] can count the matches without reading rows when a range
//!   comparison of a count, port, int, time or interval holds for the whole range (e.g.
//!   `#timestamp >= 2009-11-18` over a batch of that day and later, or `orig_bytes > 1k` over a
//!   batch whose smallest `orig_bytes` is 5000: the rows with a value) or for none of it (0).
//!   Unset values never match.
//! - A batch of a format 5 segment may also have a **time histogram** of its `ts` field: a
//!   comparison of `ts` (whichever extractor named it) with a range whose ends fall on bucket
//!   edges, or outside the batch's `ts` range, counts the buckets inside (e.g.
//!   `:timestamp >= 2009-11-18T10:00 && :timestamp < 2009-11-18T11:00` over batches of
//!   10-minute or hourly buckets). Conjunctions count when every part but one holds for every
//!   row, disjunctions when one part does (or none holds for any).
//!
//! All are conservative: "maybe" reads the rows.

use std::cmp::Ordering;

use super::bind::Fast;
use super::bind::{id_bound, Bound, Program, Test};
use super::holds::compare;
use super::literal::{addr_bits, net_bits, v4_of, Literal};
use super::op::Op;
use super::parser::{Expr, Extractor, Meta, TypeName};
use crate::segment::sketch::{value_hash, SketchRef, TAG_ADDR, TAG_STRING};
use crate::segment::Segment;
use crate::store::{BatchRef, CatalogEntry};
use crate::types::Type;

/// A three-valued answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tri {
    /// No event matches.
    False,
    /// Every event matches.
    True,
    /// Rows must be read.
    Maybe,
}

impl Tri {
    fn and(self, other: Tri) -> Tri {
        match (self, other) {
            (Tri::False, _) | (_, Tri::False) => Tri::False,
            (Tri::True, Tri::True) => Tri::True,
            _ => Tri::Maybe,
        }
    }

    fn or(self, other: Tri) -> Tri {
        match (self, other) {
            (Tri::True, _) | (_, Tri::True) => Tri::True,
            (Tri::False, Tri::False) => Tri::False,
            _ => Tri::Maybe,
        }
    }
}

/// Whether a `ts` range `[lo, hi]` (`None`: no event has a `ts`) can satisfy `ts op t`.
fn ts_may(range: Option<(i64, i64)>, op: Op, t: i64) -> bool {
    let Some((lo, hi)) = range else {
        return false;
    };
    match op {
        Op::Eq => lo <= t && t <= hi,
        Op::Lt => lo < t,
        Op::Le => lo <= t,
        Op::Gt => hi > t,
        Op::Ge => hi >= t,
        _ => true,
    }
}

/// The answer for the events of schema `name` in the segment of a catalog entry, from a
/// normalized expression (`None`: everything): `#type` by the name, time comparisons by the
/// entry's `ts` range, `#id` comparisons by the span of its event IDs.
pub fn by_entry(expr: Option<&Expr>, name: &str, entry: &CatalogEntry) -> Tri {
    let range = entry.ts.map(|[a, b]| (a, b));
    let ids = match (entry.intervals.first(), entry.intervals.last()) {
        (Some(first), Some(last)) => Some(first[0]..last[1]),
        _ => None,
    };
    match expr {
        None => Tri::True,
        Some(e) => name_tri(e, name, range, ids.as_ref()),
    }
}

fn name_tri(
    e: &Expr,
    name: &str,
    range: Option<(i64, i64)>,
    ids: Option<&std::ops::Range<u64>>,
) -> Tri {
    match e {
        Expr::And(v) => v
            .iter()
            .fold(Tri::True, |acc, e| acc.and(name_tri(e, name, range, ids))),
        Expr::Or(v) => v
            .iter()
            .fold(Tri::False, |acc, e| acc.or(name_tri(e, name, range, ids))),
        Expr::Not(_) => Tri::Maybe,
        Expr::Pred(p) if p.extractor == Extractor::Meta(Meta::Id) => match ids {
            Some(ids) => ids_tri(&id_bound(p.op, &p.value), ids),
            None => Tri::Maybe,
        },
        Expr::Pred(p) => match (&p.extractor, &p.value) {
            (Extractor::Meta(Meta::Type), lit) => {
                let v = crate::value::ValueRef::String(name.as_bytes());
                if super::holds::holds(&v, p.op, lit) {
                    Tri::True
                } else {
                    Tri::False
                }
            }
            (
                Extractor::Meta(Meta::Timestamp) | Extractor::Type(TypeName::Timestamp),
                Literal::Time(t),
            ) if !ts_may(range, p.op, *t) => Tri::False,
            _ => Tri::Maybe,
        },
    }
}

/// The answer of a bound `#id` comparison ([`id_bound`]) for the events with IDs in `ids`.
fn ids_tri(b: &Bound, ids: &std::ops::Range<u64>) -> Tri {
    match b {
        Bound::Const(true) => Tri::True,
        Bound::Const(false) => Tri::False,
        Bound::Id(r) => match r.decide(ids) {
            Some(true) => Tri::True,
            Some(false) => Tri::False,
            None => Tri::Maybe,
        },
        Bound::And(v) => v.iter().fold(Tri::True, |acc, b| acc.and(ids_tri(b, ids))),
        Bound::Or(v) => v.iter().fold(Tri::False, |acc, b| acc.or(ids_tri(b, ids))),
        Bound::Test(_) => Tri::Maybe,
    }
}

impl Program {
    /// Whether a batch of this schema whose `ts` values span `range` can hold a match.
    pub fn may_match(&self, range: Option<(i64, i64)>) -> bool {
        bound_may(&self.bound, self.ts_index, range)
    }
}

fn bound_may(b: &Bound, ts: Option<usize>, range: Option<(i64, i64)>) -> bool {
    match b {
        Bound::Const(b) => *b,
        // Decided by the batch's IDs beforehand where they can: `Program::for_ids`.
        Bound::Id(_) => true,
        Bound::And(v) => v.iter().all(|b| bound_may(b, ts, range)),
        Bound::Or(v) => v.iter().any(|b| bound_may(b, ts, range)),
        Bound::Test(t) if Some(t.field) != ts => true,
        // A range (one comparison, or several of `ts` merged): it must meet the batch's.
        Bound::Test(Test {
            fast:
                Fast::Signed {
                    lo,
                    hi,
                    negate: false,
                },
            ..
        }) => range.is_some_and(|(a, b)| a <= *hi && *lo <= b),
        Bound::Test(t) => match &t.lit {
            Literal::Time(x) => ts_may(range, t.op, *x),
            _ => true,
        },
    }
}

impl Program {
    /// Whether a batch of this schema with this sketch can hold a match (see the module docs;
    /// `true` when unsure).
    pub fn sketch_may_match(&self, sketch: &SketchRef<'_>) -> bool {
        sketch_may(&self.bound, sketch)
    }
}

fn sketch_may(b: &Bound, sk: &SketchRef<'_>) -> bool {
    match b {
        Bound::Const(b) => *b,
        Bound::Id(_) => true,
        Bound::And(v) => v.iter().all(|b| sketch_may(b, sk)),
        Bound::Or(v) => v.iter().any(|b| sketch_may(b, sk)),
        Bound::Test(t) => test_may(t, sk),
    }
}

/// Subnets of at most this many addresses are looked up in a batch's filter address by
/// address. The bound is the filter's false positives, not the lookups' cost: each IPv4
/// address is two lookups (both stored forms) at about 0.9% each, so a batch without the
/// subnet is still read with a chance of 1 - 0.991^(2N): 7% for a /30, 25% for a /28 (16),
/// and 99% for a /24, measured on 2 M generated events: `:addr in 240.0.0.0/24` pruned 5 of
/// 245 batches. Past it, "maybe".
pub const SUBNET_PROBE_ADDRS: u32 = 16;

/// An `in [list]` of more items than this lets every batch through without a lookup. For
/// the same reason as [`SUBNET_PROBE_ADDRS`]: at about 1.8% false positives per IPv4 item
/// (two lookups), a batch that holds none of 128 items is still read with a chance of 90%,
/// while the lookups cost one per item per batch (a retro match of 100,000 indicators made
/// 100,000 lookups for each of the batches it then read anyway).
pub const LIST_PROBE_MAX: usize = 128;

/// The addresses of `net/prefix` when there are at most [`SUBNET_PROBE_ADDRS`] of them (as
/// IPv6, IPv4 ones in their mapped form, which [`eq_may`] looks up in both stored forms).
fn subnet_addrs(net: std::net::IpAddr, prefix: u8) -> Option<impl Iterator<Item = Literal>> {
    let (bits, p) = net_bits(net, prefix);
    let host = 128u32.checked_sub(u32::from(p))?;
    (host <= SUBNET_PROBE_ADDRS.ilog2()).then(move || {
        (0..1u128 << host).map(move |i| Literal::Addr(std::net::Ipv6Addr::from(bits | i).into()))
    })
}

/// Whether some row of the batch may satisfy the test `t`.
fn test_may(t: &Test, sk: &SketchRef<'_>) -> bool {
    if let Literal::Nil = t.lit {
        // The sketch does not record unset values.
        return true;
    }
    let container = t.ty.is_container();
    // A range (one comparison, or several of one field merged into it, of which `op` and
    // `lit` tell only the first): it must meet the field's.
    if let Some((want, got)) = fast_range(t, sk) {
        return match got {
            None => !has_range(&t.ty),
            Some((a, b, _)) => a <= want.1 && want.0 <= b,
        };
    }
    match (t.op, &t.lit) {
        // Element membership of a list literal: some item equals the value (or an element).
        // (A list too long to probe item by item lets the batch through: the rows' hash
        // lookups cost less than that many probes.)
        (Op::In, Literal::List(items)) => {
            items.len() > LIST_PROBE_MAX || items.iter().any(|x| eq_may(t, x, sk))
        }
        // A container compared with a list compares the whole list.
        (Op::Eq, Literal::List(_)) => true,
        (Op::Eq, lit) => eq_may(t, lit, sk),
        (Op::Ni, lit) if container => eq_may(t, lit, sk),
        // A scalar address in a small subnet: some address of the subnet is in the filter.
        (Op::In, Literal::Subnet(net, prefix)) if t.ty == Type::Addr => {
            subnet_addrs(*net, *prefix).is_none_or(|mut addrs| addrs.any(|a| eq_may(t, &a, sk)))
        }
        (Op::Lt | Op::Le | Op::Gt | Op::Ge, lit) if !container => match sk.range(t.field) {
            None => !has_range(&t.ty),
            Some(r) => {
                let (lo, hi) = (compare(&r.lo(), lit), compare(&r.hi(), lit));
                match t.op {
                    Op::Lt => lo.is_none_or(|o| o == Ordering::Less),
                    Op::Le => lo.is_none_or(|o| o != Ordering::Greater),
                    Op::Gt => hi.is_none_or(|o| o == Ordering::Greater),
                    _ => hi.is_none_or(|o| o != Ordering::Less),
                }
            }
        },
        _ => true,
    }
}

impl Program {
    /// Whether a block of rows of a batch's blocked columns (segment format 11) can hold a
    /// match, from the blocks' filters: `probe(field, hash)` says whether the block of
    /// `field` may hold a value of that [`value_hash`] (`None`: the field has no filter).
    /// Only `==` and `in [list]` with a string or address decide; `true` when unsure.
    pub(crate) fn block_may_match(&self, probe: &dyn Fn(usize, u64) -> Option<bool>) -> bool {
        block_may(&self.bound, probe)
    }
}

fn block_may(b: &Bound, probe: &dyn Fn(usize, u64) -> Option<bool>) -> bool {
    match b {
        Bound::Const(b) => *b,
        Bound::Id(_) => true,
        Bound::And(v) => v.iter().all(|b| block_may(b, probe)),
        Bound::Or(v) => v.iter().any(|b| block_may(b, probe)),
        Bound::Test(t) if t.ty.is_container() => true,
        Bound::Test(t) => match (t.op, &t.lit) {
            (Op::In, Literal::List(items)) => {
                items.len() > LIST_PROBE_MAX || items.iter().any(|x| block_eq_may(t, x, probe))
            }
            (Op::Eq, Literal::List(_)) => true,
            (Op::Eq, lit) => block_eq_may(t, lit, probe),
            (Op::In, Literal::Subnet(net, prefix)) if t.ty == Type::Addr => {
                subnet_addrs(*net, *prefix)
                    .is_none_or(|mut addrs| addrs.any(|a| block_eq_may(t, &a, probe)))
            }
            _ => true,
        },
    }
}

/// Whether the block of the (scalar) field of `t` may hold `lit`, as [`eq_may`] asks a sketch.
fn block_eq_may(t: &Test, lit: &Literal, probe: &dyn Fn(usize, u64) -> Option<bool>) -> bool {
    let may = |tag, bytes: &[u8]| probe(t.field, value_hash(tag, bytes)).unwrap_or(true);
    match (&t.ty, lit) {
        (Type::String | Type::Enum | Type::Pattern | Type::File, Literal::String(s)) => {
            may(TAG_STRING, s)
        }
        (Type::Addr, Literal::Addr(a)) => {
            may(TAG_ADDR, &addr_bits(*a).to_be_bytes())
                || v4_of(*a).is_some_and(|v4| may(TAG_ADDR, &v4.octets()))
        }
        _ => true,
    }
}

impl Program {
    /// The number of rows of a batch of `rows` rows with this sketch that match, when the
    /// sketch tells it exactly (see the module docs); `None` when unsure.
    pub fn sketch_count(&self, sketch: &SketchRef<'_>, rows: u32) -> Option<u64> {
        sketch_count(&self.bound, sketch, u64::from(rows))
    }
}

fn sketch_count(b: &Bound, sk: &SketchRef<'_>, rows: u64) -> Option<u64> {
    match b {
        Bound::Const(true) => Some(rows),
        Bound::Const(false) => Some(0),
        Bound::Test(t) => test_count(t, sk, rows),
        // Not decided for the whole batch by `Program::for_ids`.
        Bound::Id(_) => None,
        // Every row matches all but (at most) one part: the rows of that part.
        Bound::And(v) => {
            let mut part = None;
            for b in v {
                match sketch_count(b, sk, rows)? {
                    0 => return Some(0),
                    n if n == rows => {}
                    n if part.is_none() => part = Some(n),
                    _ => return None,
                }
            }
            Some(part.unwrap_or(rows))
        }
        // One part takes every row, or none takes any.
        Bound::Or(v) => {
            let mut all_none = true;
            for b in v {
                match sketch_count(b, sk, rows) {
                    Some(n) if n == rows => return Some(rows),
                    Some(0) => {}
                    _ => all_none = false,
                }
            }
            all_none.then_some(0)
        }
    }
}

/// The rows that satisfy the test `t`, from the sketch: a range test (its `fast` form, which
/// also holds merged comparisons of one field) of a field whose values in the batch all lie
/// inside the tested range (the rows that have one: format 4's `present`) or all outside it
/// (none), or, for the `ts` field, whose time histogram's buckets each lie inside or outside
/// (format 5: the sum of those inside). Unset values never match.
fn test_count(t: &Test, sk: &SketchRef<'_>, rows: u64) -> Option<u64> {
    let (want, got) = fast_range(t, sk)?;
    let Some((a, b, present)) = got else {
        // No row has a value of the field.
        return Some(0);
    };
    if want.1 < a || b < want.0 || want.0 > want.1 {
        return Some(0);
    }
    let present = u64::from(present?);
    if want.0 <= a && b <= want.1 {
        return Some(present.min(rows));
    }
    let times = sk.times().filter(|h| h.field as usize == t.field)?;
    times.count_in(want.0, want.1, a, b)
}

/// For a range test of a scalar field (its `fast` form: one comparison, or several of the
/// field merged, of which `op` and `lit` tell only the first; not negated, no protocol): the
/// range it accepts and the field's range in the batch with its count of set values (`None`:
/// the sketch has no range for the field), as i128 so that both kinds compare. `None`: not
/// such a test, or the sketch's range is of another kind.
#[allow(clippy::type_complexity)]
fn fast_range(
    t: &Test,
    sk: &SketchRef<'_>,
) -> Option<((i128, i128), Option<(i128, i128, Option<u32>)>)> {
    use crate::value::ValueRef as V;
    if t.ty.is_container() || t.proto.is_some() {
        return None;
    }
    let (want, signed) = match t.fast {
        Fast::Unsigned {
            lo,
            hi,
            negate: false,
        } => ((lo as i128, hi as i128), false),
        Fast::Signed {
            lo,
            hi,
            negate: false,
        } => ((lo as i128, hi as i128), true),
        _ => return None,
    };
    let Some(r) = sk.range(t.field) else {
        return Some((want, None));
    };
    let got = match (signed, r.lo(), r.hi()) {
        (false, V::Count(a) | V::Port(a), V::Count(b) | V::Port(b)) => (a as i128, b as i128),
        (
            true,
            V::Int(a) | V::Time(a) | V::Interval(a),
            V::Int(b) | V::Time(b) | V::Interval(b),
        ) => (a as i128, b as i128),
        _ => return None,
    };
    Some((want, Some((got.0, got.1, r.present()))))
}

/// Whether the field of `t` (an element of it, for a container) may equal `lit`.
fn eq_may(t: &Test, lit: &Literal, sk: &SketchRef<'_>) -> bool {
    let ty = t.ty.element().unwrap_or(&t.ty);
    match (ty, lit) {
        (Type::String | Type::Enum | Type::Pattern | Type::File, Literal::String(s)) => {
            sk.may_contain(value_hash(TAG_STRING, s))
        }
        // The filter holds addresses as stored (4 or 16 bytes); an IPv4 address equals its
        // IPv4-mapped IPv6 form, which may be stored in either.
        (Type::Addr, Literal::Addr(a)) => {
            sk.may_contain(value_hash(TAG_ADDR, &addr_bits(*a).to_be_bytes()))
                || v4_of(*a).is_some_and(|v4| sk.may_contain(value_hash(TAG_ADDR, &v4.octets())))
        }
        _ if t.ty.is_container() => true,
        _ => match sk.range(t.field) {
            None => !has_range(&t.ty),
            Some(r) => {
                compare(&r.lo(), lit).is_none_or(|o| o != Ordering::Greater)
                    && compare(&r.hi(), lit).is_none_or(|o| o != Ordering::Less)
            }
        },
    }
}

/// Whether a sketch has a range for every field of this type that has a value in the batch.
fn has_range(ty: &Type) -> bool {
    crate::segment::sketch::RangeKind::of(ty).is_some()
}

/// Whether batch `i` of `seg` can hold a match of `p`, from the batch's metadata alone (its
/// schema's constant answer, its `ts` range and its sketch): the one batch-level check of a search, made
/// before the batch's rows are verified or read.
pub(crate) fn segment_batch(p: &Program, seg: &Segment, i: usize) -> bool {
    let Some((_, _, ts)) = seg.batch_meta(i) else {
        return true;
    };
    p.constant() != Some(false)
        && p.may_match(ts)
        && seg.sketch(i).is_none_or(|sk| p.sketch_may_match(&sk))
}

/// [`segment_batch`] for a batch of the write-ahead log.
pub(crate) fn wal_batch(p: &Program, b: &BatchRef) -> bool {
    p.constant() != Some(false) && p.may_match(b.ts_range())
}
