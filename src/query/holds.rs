//! What a comparison means on one value: whether `value op literal` holds ([`holds`]) and
//! how a value and a literal order ([`compare`]). Binding folds constant comparisons with it,
//! the evaluator tests rows with it, pruning tests metadata with it: all three agree because
//! they share this file.

use std::cmp::Ordering;

use super::literal::{addr_bits, in_subnet, net_bits, subnet_in, Literal, Number};
use super::op::Op;
use crate::value::ValueRef;

/// Whether `v op lit` holds for a scalar value (`false` for an unset one and for types that
/// do not compare). A negative operator is the negation of its positive on a set value.
pub(crate) fn holds(v: &ValueRef<'_>, op: Op, lit: &Literal) -> bool {
    if let Literal::Nil = lit {
        // `== nil` holds for an unset value, `!= nil` for a set one; nothing else compares.
        let unset = matches!(v, ValueRef::Null);
        return match op {
            Op::Eq => unset,
            Op::Ne => !unset,
            _ => false,
        };
    }
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
