//! Values as join keys: a hashable form of a field value in which two values are the same
//! key exactly when the expression language's `==` holds between them, for the types that
//! relate events (strings, addresses, numbers, times, durations, bools, subnets, lists).
//!
//! - Numbers compare across `count`, `int`, `port` and integral `real`s (`53` equals `53/tcp`
//!   and `53.0`); a `real` with a fraction is its own key; NaN is no key (it equals nothing).
//! - An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) is the IPv4 address (VAST stores IPv4
//!   mapped and compares them so).
//! - String-like types (`string`, `enum`, `pattern`, `file`) are their bytes.
//! - A container value is a list key (`field == [a, b]` compares the whole list); as the
//!   *offered* keys of an event ([`offered`]) it also gives each element, since
//!   `container == x` holds when some element equals `x`.
//! - An unset value is no key: it never matches.

use std::net::IpAddr;

use crate::value::ValueRef;

/// A value in its comparable form (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Key {
    Bool(bool),
    /// `count`, `int`, `port`, and `real`s without a fraction.
    Number(i128),
    /// A `real` with a fraction: its bits.
    Real(u64),
    String(Vec<u8>),
    Addr(IpAddr),
    Subnet(IpAddr, u8),
    Time(i64),
    Interval(i64),
    List(Vec<Key>),
    /// An unset element of a list (an unset value itself is no key).
    Unset,
}

/// The largest magnitude of an `f64` taken as an integer key (2^63).
const INTEGRAL_REAL: f64 = 9_223_372_036_854_775_808.0;

impl Key {
    /// The key of a value; `None` for an unset one (and NaN), which equals nothing.
    pub(crate) fn of(v: &ValueRef<'_>) -> Option<Key> {
        Some(match v {
            ValueRef::Null => return None,
            ValueRef::Bool(b) => Key::Bool(*b),
            ValueRef::Count(x) | ValueRef::Port(x) => Key::Number(i128::from(*x)),
            ValueRef::Int(x) => Key::Number(i128::from(*x)),
            ValueRef::Double(x) if x.is_nan() => return None,
            ValueRef::Double(x) if x.fract() == 0.0 && x.abs() < INTEGRAL_REAL => {
                // Exact: the value is an integer below 2^63 in magnitude.
                #[allow(clippy::cast_possible_truncation)]
                Key::Number(*x as i128)
            }
            ValueRef::Double(x) => Key::Real(x.to_bits()),
            ValueRef::String(s) => Key::String(s.to_vec()),
            ValueRef::Addr(a) => Key::Addr(canonical(*a)),
            ValueRef::Subnet(a, p) => Key::Subnet(canonical(*a), *p),
            ValueRef::Time(t) => Key::Time(*t),
            ValueRef::Interval(t) => Key::Interval(*t),
            ValueRef::List(items) => Key::List(
                items
                    .iter()
                    .map(|x| Key::of(x).unwrap_or(Key::Unset))
                    .collect(),
            ),
        })
    }

    /// The key as literals of the expression language that equal it, for a pre-filter of
    /// the search: strings (quoted, escaped) and addresses (both the IPv4 and its mapped
    /// IPv6 form). `None` for the other kinds.
    pub(crate) fn literals(&self) -> Option<Vec<String>> {
        match self {
            Key::String(s) => Some(vec![quote(s)]),
            Key::Addr(IpAddr::V4(a)) => Some(vec![a.to_string(), a.to_ipv6_mapped().to_string()]),
            Key::Addr(a) => Some(vec![a.to_string()]),
            _ => None,
        }
    }
}

/// The keys an event's field value offers to `field == key`: its own key and, for a
/// container, each element's.
pub(crate) fn offered(v: &ValueRef<'_>, out: &mut Vec<Key>) {
    if let ValueRef::List(items) = v {
        out.extend(items.iter().filter_map(Key::of));
    }
    out.extend(Key::of(v));
}

/// An IPv4-mapped IPv6 address as the IPv4 address; others as they are.
fn canonical(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(a, IpAddr::V4),
        v4 => v4,
    }
}

/// Bytes as a string literal of the expression language: `"..."` with `\"`, `\\` and `\xHH`
/// for every byte outside printable ASCII, so that any bytes round-trip.
pub(crate) fn quote(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for &b in s {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::Query;

    #[test]
    fn numbers_compare_across_types_and_mapped_addresses_are_ipv4() {
        let n = |v: ValueRef<'_>| Key::of(&v);
        assert_eq!(n(ValueRef::Count(53)), n(ValueRef::Port(53)));
        assert_eq!(n(ValueRef::Int(53)), n(ValueRef::Double(53.0)));
        assert_ne!(n(ValueRef::Double(53.5)), n(ValueRef::Count(53)));
        assert_eq!(n(ValueRef::Double(f64::NAN)), None);
        assert_eq!(n(ValueRef::Null), None);
        let v4: IpAddr = "10.0.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(n(ValueRef::Addr(v4)), n(ValueRef::Addr(mapped)));
        let mut keys = Vec::new();
        offered(
            &ValueRef::List(vec![ValueRef::String(b"a"), ValueRef::Null]),
            &mut keys,
        );
        assert_eq!(
            keys,
            vec![
                Key::String(b"a".to_vec()),
                Key::List(vec![Key::String(b"a".to_vec()), Key::Unset])
            ]
        );
    }

    #[test]
    fn quoted_bytes_parse_back_to_the_same_bytes() {
        let all: Vec<u8> = (0..=255).collect();
        let text = format!("uid == {}", quote(&all));
        let q = Query::parse(&text).unwrap();
        let p = &q.expr().unwrap().predicates()[0];
        assert!(matches!(&p.value, crate::query::Literal::String(s) if *s == all));
    }
}
