//! What a comparison means on one value: whether `value op literal` holds ([`holds`]) and
//! how a value and a literal order ([`compare`]). Binding folds constant comparisons with it,
//! the evaluator tests rows with it, pruning tests metadata with it: all three agree because
//! they share this file.

use std::cmp::Ordering;

use super::literal::{addr_bits, in_subnet, net_bits, subnet_in, ListItems, Literal, Number};
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
        (Op::In, Literal::List(items)) => list_has(v, items),
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

/// Whether `v == x` holds for an item `x` of the list: what `v in [...]` means. A long list's
/// index answers for strings and addresses: a string equals a string item with its bytes or
/// matches a pattern item, and nothing else (numbers, `nil`, lists never equal a string); an
/// address equals an address item, as [`compare`] orders them, and nothing else. Other
/// values try each item.
fn list_has(v: &ValueRef<'_>, items: &ListItems) -> bool {
    match (items.index(), v) {
        (Some(ix), ValueRef::String(s)) => {
            ix.strings.contains(*s) || ix.patterns.iter().any(|&i| holds(v, Op::Eq, &items[i]))
        }
        (Some(ix), ValueRef::Addr(a)) => ix.addrs.contains(addr_bits(*a)),
        _ => items.iter().any(|x| holds(v, Op::Eq, x)),
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
    #![allow(clippy::unwrap_used)]

    use std::net::IpAddr;

    use proptest::prelude::*;

    use super::*;
    use crate::query::literal::Pattern;

    /// Items of every kind a list can hold, with strings and addresses from small pools so
    /// that values hit them often (IPv4 addresses also in their IPv4-mapped IPv6 form).
    fn item() -> impl Strategy<Value = Literal> {
        prop_oneof![
            (0u8..6).prop_map(|i| Literal::String(format!("s{i}").into_bytes())),
            (0u8..6).prop_map(|i| Literal::Addr(IpAddr::from([10, 0, 0, i]))),
            (0u8..6).prop_map(|i| Literal::Addr(
                std::net::Ipv4Addr::new(10, 0, 0, i).to_ipv6_mapped().into()
            )),
            (0u8..3).prop_map(|i| Literal::Pattern(Pattern::new(&format!("x{i}.*")).unwrap())),
            (0u64..6).prop_map(Literal::Count),
            (-3i64..3).prop_map(Literal::Int),
            Just(Literal::Nil),
            Just(Literal::Real(1.0)),
            Just(Literal::Subnet(IpAddr::from([10, 0, 0, 0]), 24)),
        ]
    }

    fn value() -> impl Strategy<Value = (u8, u8)> {
        (0u8..5, 0u8..8)
    }

    proptest! {
        /// A list's index answers `in` as comparing item by item does, for every kind of
        /// value and list, short (no index) and long (indexed).
        #[test]
        fn indexed_list_agrees_with_each_item(
            items in prop::collection::vec(item(), 0..24),
            values in prop::collection::vec(value(), 1..16),
        ) {
            let list: ListItems = items.clone().into();
            let texts: Vec<Vec<u8>> = (0..8).map(|i| format!("s{i}").into_bytes()).collect();
            let patterned: Vec<Vec<u8>> = (0..8).map(|i| format!("x{i}yz").into_bytes()).collect();
            for (kind, i) in values {
                let v = match kind {
                    0 => ValueRef::String(&texts[i as usize]),
                    1 => ValueRef::String(&patterned[i as usize]),
                    2 => ValueRef::Addr(IpAddr::from([10, 0, 0, i])),
                    3 => ValueRef::Count(u64::from(i)),
                    _ => ValueRef::Null,
                };
                let each = items.iter().any(|x| holds(&v, Op::Eq, x));
                prop_assert_eq!(list_has(&v, &list), each, "{:?} in {:?}", v, items);
                let lit = Literal::List(list.clone());
                prop_assert_eq!(holds(&v, Op::In, &lit), !matches!(v, ValueRef::Null) && each);
                prop_assert_eq!(holds(&v, Op::NotIn, &lit), !matches!(v, ValueRef::Null) && !each);
            }
        }
    }

    /// A long list of strings is indexed, a short one is not.
    #[test]
    fn long_lists_are_indexed() {
        let long: ListItems = (0..ListItems::INDEXED_FROM)
            .map(|i| Literal::String(vec![b'a' + i as u8]))
            .collect::<Vec<_>>()
            .into();
        assert_eq!(long.index().unwrap().strings.len(), ListItems::INDEXED_FROM);
        let short: ListItems = long.items()[1..].to_vec().into();
        assert!(short.index().is_none());
    }
}
