//! The order of values across schemas (for `sort`, `min`, `max` and the order of `distinct`):
//! numbers (`count`, `int`, `double`, `port`) compare by value with each other; times,
//! intervals, strings (by bytes), addresses (an IPv4 address as its IPv4-mapped IPv6 form),
//! subnets, bools and lists (element by element) each among themselves; values of different
//! kinds order by kind in that sequence. NaN sorts after every other number.

use std::cmp::Ordering;
use std::net::IpAddr;

use crate::value::ValueOf;

fn kind<S>(v: &ValueOf<S>) -> u8 {
    match v {
        ValueOf::Count(_) | ValueOf::Int(_) | ValueOf::Double(_) | ValueOf::Port(_) => 0,
        ValueOf::Time(_) => 1,
        ValueOf::Interval(_) => 2,
        ValueOf::String(_) => 3,
        ValueOf::Addr(_) => 4,
        ValueOf::Subnet(..) => 5,
        ValueOf::Bool(_) => 6,
        ValueOf::List(_) => 7,
        ValueOf::Null => 8,
    }
}

fn v6(a: &IpAddr) -> std::net::Ipv6Addr {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => *a,
    }
}

fn numbers(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

/// The order of two values of any types (see the module docs).
pub fn compare<S: AsRef<[u8]>, T: AsRef<[u8]>>(a: &ValueOf<S>, b: &ValueOf<T>) -> Ordering {
    use ValueOf as V;
    match (a, b) {
        (V::Count(x) | V::Port(x), V::Count(y) | V::Port(y)) => x.cmp(y),
        (V::Int(x), V::Int(y)) => x.cmp(y),
        (V::Count(x) | V::Port(x), V::Int(y)) => (*x as i128).cmp(&(*y as i128)),
        (V::Int(x), V::Count(y) | V::Port(y)) => (*x as i128).cmp(&(*y as i128)),
        (V::Double(x), V::Double(y)) => numbers(*x, *y),
        (V::Double(x), V::Count(y) | V::Port(y)) => numbers(*x, *y as f64),
        (V::Double(x), V::Int(y)) => numbers(*x, *y as f64),
        (V::Count(x) | V::Port(x), V::Double(y)) => numbers(*x as f64, *y),
        (V::Int(x), V::Double(y)) => numbers(*x as f64, *y),
        (V::Time(x), V::Time(y)) | (V::Interval(x), V::Interval(y)) => x.cmp(y),
        (V::String(x), V::String(y)) => x.as_ref().cmp(y.as_ref()),
        (V::Addr(x), V::Addr(y)) => v6(x).cmp(&v6(y)),
        (V::Subnet(x, p), V::Subnet(y, q)) => (v6(x), p).cmp(&(v6(y), q)),
        (V::Bool(x), V::Bool(y)) => x.cmp(y),
        (V::List(x), V::List(y)) => {
            for (p, q) in x.iter().zip(y) {
                match compare(p, q) {
                    Ordering::Equal => {}
                    o => return o,
                }
            }
            x.len().cmp(&y.len())
        }
        _ => kind(a).cmp(&kind(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    #[test]
    fn numbers_compare_across_types_and_kinds_by_kind() {
        let c = |a: Value, b: Value| compare(&a, &b);
        assert_eq!(c(Value::Count(3), Value::Int(-1)), Ordering::Greater);
        assert_eq!(c(Value::Port(80), Value::Count(80)), Ordering::Equal);
        assert_eq!(c(Value::Double(2.5), Value::Count(3)), Ordering::Less);
        assert_eq!(
            c(Value::Double(f64::NAN), Value::Double(1.0)),
            Ordering::Greater
        );
        assert_eq!(c(Value::Count(1), Value::Time(0)), Ordering::Less);
        assert_eq!(
            c(
                Value::Addr("10.0.0.1".parse().unwrap()),
                Value::Addr("::ffff:10.0.0.1".parse().unwrap())
            ),
            Ordering::Equal
        );
        assert_eq!(
            c(Value::String(b"a".to_vec()), Value::String(b"b".to_vec())),
            Ordering::Less
        );
    }
}
