//! Random schemas and events for the property test: every field drawn from small pools of
//! values (so that comparisons find equal values, ties and substrings), unset values (`-`),
//! empty strings and empty containers included. [`Pools`] are also where the expression
//! generator takes its literals from.

use std::net::IpAddr;

use super::tsv::{Event, Log, Schema};
use super::value::{Ty, Val};
use crate::common::rng::Rng;

/// Helpers on the tests' random numbers.
pub trait Pick {
    fn chance(&mut self, percent: u64) -> bool;
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T;
    fn range(&mut self, lo: i64, hi: i64) -> i64;
}

impl Pick for Rng {
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
}

/// The first event's second: 2009-11-18T08:00:21Z, the day of the shared Zeek logs.
pub const BASE_SECS: i64 = 1_258_531_221;

pub const ADDRS: &[&str] = &[
    "10.0.0.1",
    "10.0.0.2",
    "10.1.2.3",
    "192.168.1.1",
    "0.0.0.0",
    "::1",
    "fe80::1",
    "2001:db8::5",
    "::ffff:10.0.0.1",
];
pub const SUBNETS: &[(&str, u8)] = &[
    ("10.0.0.0", 8),
    ("10.0.0.0", 24),
    ("192.168.0.0", 16),
    ("2001:db8::", 32),
    ("::ffff:10.0.0.0", 104),
    ("0.0.0.0", 0),
    ("::", 0),
];
pub const PORTS: &[u64] = &[0, 22, 53, 80, 443, 8080, 65535];
pub const ENUMS: &[&str] = &["tcp", "udp", "icmp", "foo"];
pub const STRINGS: &[&str] = &["", "a", "b", "ab", "ba", "abc", "x.y", "zz", "a.b.c"];
pub const ELEMENTS: &[&str] = &["a", "b", "ab", "c"];

/// The field pool: names (some suffixes of others at a dot: `x` names `a.x` and `b.x`) with
/// the type each usually has.
const FIELDS: &[(&str, &str)] = &[
    ("id.orig_h", "addr"),
    ("id.resp_h", "addr"),
    ("id.resp_p", "port"),
    ("proto", "enum"),
    ("n", "count"),
    ("delta", "int"),
    ("score", "double"),
    ("dur", "interval"),
    ("seen", "time"),
    ("name", "string"),
    ("a.x", "string"),
    ("b.x", "count"),
    ("flag", "bool"),
    ("net", "subnet"),
    ("tags", "set[string]"),
    ("sizes", "vector[count]"),
];

/// `count` random schemas `zeek.t0`, ...: `ts` and a unique `uid` first, then a random
/// subset of the field pool, each field of its usual type or, one time in five, another.
pub fn schemas(rng: &mut Rng, count: usize) -> Vec<Schema> {
    (0..count)
        .map(|i| {
            let mut fields = vec![
                ("ts".to_string(), Ty::Time),
                ("uid".to_string(), Ty::String),
            ];
            for (name, ty) in FIELDS {
                if rng.chance(55) {
                    let ty = if *name == "proto" {
                        rng.pick(&[Ty::Enum, Ty::String]).clone()
                    } else if rng.chance(20) {
                        random_type(rng)
                    } else {
                        Ty::parse(ty).expect("a type of the pool")
                    };
                    fields.push((name.to_string(), ty));
                }
            }
            Schema {
                name: format!("zeek.t{i}"),
                fields,
            }
        })
        .collect()
}

fn random_type(rng: &mut Rng) -> Ty {
    match rng.below(10) {
        0 => Ty::Set(Box::new(Ty::String)),
        1 => Ty::Vector(Box::new(Ty::Count)),
        2 => Ty::Set(Box::new(Ty::Addr)),
        3 => Ty::Vector(Box::new(Ty::String)),
        _ => rng.pick(&Ty::SCALARS).clone(),
    }
}

/// `n` events of random schemas, the `uid` of event `i` being `u{first + i}`; `ts` grows
/// (with ties) from [`BASE_SECS`] + `first`.
pub fn events(rng: &mut Rng, log: &Log, first: usize, n: usize) -> Vec<Event> {
    (first..first + n)
        .map(|i| {
            let s = rng.below(log.schemas.len() as u64) as usize;
            let values = log.schemas[s]
                .fields
                .iter()
                .map(|(name, ty)| match name.as_str() {
                    "ts" => Some(Val::Time(
                        (BASE_SECS + i as i64 / 2) * 1_000_000_000 + rng.range(0, 3) * 250_000_000,
                    )),
                    "uid" => Some(Val::Str(format!("u{i}").into_bytes())),
                    _ if rng.chance(15) => None,
                    _ => Some(value(rng, ty)),
                })
                .collect();
            Event { schema: s, values }
        })
        .collect()
}

/// A random value of `ty` from the pools.
pub fn value(rng: &mut Rng, ty: &Ty) -> Val {
    match ty {
        Ty::Bool => Val::Bool(rng.chance(50)),
        Ty::Count => Val::Count(if rng.chance(5) {
            u64::MAX
        } else {
            rng.below(12)
        }),
        Ty::Int => Val::Int(if rng.chance(5) {
            i64::MIN
        } else {
            rng.range(-6, 6)
        }),
        Ty::Double => Val::Double(rng.range(-12, 12) as f64 / 4.0),
        Ty::Time => Val::Time(time_ns(rng)),
        Ty::Interval => Val::Interval(rng.range(-4, 12) * 250_000_000),
        Ty::String | Ty::Pattern | Ty::File => Val::Str(rng.pick(STRINGS).as_bytes().to_vec()),
        Ty::Enum => Val::Str(rng.pick(ENUMS).as_bytes().to_vec()),
        Ty::Addr => Val::Addr(addr(rng)),
        Ty::Subnet => {
            let (a, p) = rng.pick(SUBNETS);
            Val::Subnet(a.parse().expect("a subnet of the pool"), *p)
        }
        Ty::Port => Val::Port(*rng.pick(PORTS)),
        Ty::Set(e) => {
            let mut items: Vec<Option<Val>> = Vec::new();
            for _ in 0..rng.below(4) {
                let v = Some(element(rng, e));
                if !items.contains(&v) {
                    items.push(v);
                }
            }
            Val::List(items)
        }
        Ty::Vector(e) => {
            let n = rng.below(4);
            // An unset element only among others (`-` alone is an unset field).
            let items = (0..n)
                .map(|_| (n < 2 || !rng.chance(10)).then(|| element(rng, e)))
                .collect();
            Val::List(items)
        }
    }
}

/// An element of a container: no empty string (Zeek writes none).
fn element(rng: &mut Rng, ty: &Ty) -> Val {
    match ty {
        Ty::String => Val::Str(rng.pick(ELEMENTS).as_bytes().to_vec()),
        Ty::Count => Val::Count(rng.below(6)),
        other => value(rng, other),
    }
}

/// A time near [`BASE_SECS`], in whole quarter seconds.
pub fn time_ns(rng: &mut Rng) -> i64 {
    (BASE_SECS + rng.range(0, 40)) * 1_000_000_000 + rng.range(0, 3) * 250_000_000
}

/// An address of the pool.
pub fn addr(rng: &mut Rng) -> IpAddr {
    rng.pick(ADDRS).parse().expect("an address of the pool")
}
