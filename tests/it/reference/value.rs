//! The reference's values and types: Zeek's types, a value of each, and the orders the
//! language defines on them (numbers across count, int, real and port, compared exactly;
//! addresses as VAST stores them, an IPv4 address as its IPv4-mapped IPv6 form).

use std::cmp::Ordering;
use std::net::IpAddr;

/// A Zeek type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    Bool,
    Count,
    Int,
    Double,
    Time,
    Interval,
    String,
    Addr,
    Subnet,
    Port,
    Enum,
    Pattern,
    File,
    Set(Box<Ty>),
    Vector(Box<Ty>),
}

impl Ty {
    /// The scalar types (the elements of containers too).
    pub const SCALARS: [Ty; 11] = [
        Ty::Bool,
        Ty::Count,
        Ty::Int,
        Ty::Double,
        Ty::Time,
        Ty::Interval,
        Ty::String,
        Ty::Addr,
        Ty::Subnet,
        Ty::Port,
        Ty::Enum,
    ];

    /// The type as a Zeek `#types` line spells it (`table[T]` reads as a set).
    pub fn zeek(&self) -> String {
        match self {
            Ty::Bool => "bool".into(),
            Ty::Count => "count".into(),
            Ty::Int => "int".into(),
            Ty::Double => "double".into(),
            Ty::Time => "time".into(),
            Ty::Interval => "interval".into(),
            Ty::String => "string".into(),
            Ty::Addr => "addr".into(),
            Ty::Subnet => "subnet".into(),
            Ty::Port => "port".into(),
            Ty::Enum => "enum".into(),
            Ty::Pattern => "pattern".into(),
            Ty::File => "file".into(),
            Ty::Set(e) => format!("set[{}]", e.zeek()),
            Ty::Vector(e) => format!("vector[{}]", e.zeek()),
        }
    }

    /// The type of a `#types` entry.
    pub fn parse(s: &str) -> Option<Ty> {
        if let Some(inner) = s
            .strip_prefix("set[")
            .or_else(|| s.strip_prefix("table["))
            .and_then(|r| r.strip_suffix(']'))
        {
            return Some(Ty::Set(Box::new(Ty::parse(inner)?)));
        }
        if let Some(inner) = s.strip_prefix("vector[").and_then(|r| r.strip_suffix(']')) {
            return Some(Ty::Vector(Box::new(Ty::parse(inner)?)));
        }
        Some(match s {
            "bool" => Ty::Bool,
            "count" => Ty::Count,
            "int" => Ty::Int,
            "double" => Ty::Double,
            "time" => Ty::Time,
            "interval" => Ty::Interval,
            "string" => Ty::String,
            "addr" => Ty::Addr,
            "subnet" => Ty::Subnet,
            "port" => Ty::Port,
            "enum" => Ty::Enum,
            "pattern" => Ty::Pattern,
            "file" => Ty::File,
            _ => return None,
        })
    }

    /// The element type of a container.
    pub fn element(&self) -> Option<&Ty> {
        match self {
            Ty::Set(e) | Ty::Vector(e) => Some(e),
            _ => None,
        }
    }

    /// Compares with strings (the language's "string-like" types).
    pub fn is_stringy(&self) -> bool {
        matches!(self, Ty::String | Ty::Enum | Ty::Pattern | Ty::File)
    }

    /// Compares as a number.
    pub fn is_number(&self) -> bool {
        matches!(self, Ty::Count | Ty::Int | Ty::Double | Ty::Port)
    }
}

/// A set value (unset is `None` around it). Strings, enums, patterns and files are `Str`;
/// times and intervals are nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Bool(bool),
    Count(u64),
    Int(i64),
    Double(f64),
    Time(i64),
    Interval(i64),
    Str(Vec<u8>),
    Addr(IpAddr),
    Subnet(IpAddr, u8),
    Port(u64),
    List(Vec<Option<Val>>),
}

/// A number of any numeric type.
#[derive(Clone, Copy, Debug)]
pub enum Num {
    I(i128),
    F(f64),
}

impl Num {
    /// The exact order of two numbers (`None` with a NaN).
    pub fn cmp(self, other: Num) -> Option<Ordering> {
        match (self, other) {
            (Num::I(a), Num::I(b)) => Some(a.cmp(&b)),
            (Num::F(a), Num::F(b)) => a.partial_cmp(&b),
            (Num::I(a), Num::F(b)) => int_float(a, b),
            (Num::F(a), Num::I(b)) => int_float(b, a).map(Ordering::reverse),
        }
    }
}

/// The exact order of an integer and a float.
fn int_float(i: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    // 2^100 is far beyond every u64 and i64.
    const BIG: f64 = 1_267_650_600_228_229_401_496_703_205_376.0;
    if f >= BIG {
        return Some(Ordering::Less);
    }
    if f <= -BIG {
        return Some(Ordering::Greater);
    }
    let floor = f.floor();
    let fi = floor as i128;
    Some(match i.cmp(&fi) {
        Ordering::Equal if f > floor => Ordering::Less,
        o => o,
    })
}

impl Val {
    /// The value as a number, for the numeric types.
    pub fn num(&self) -> Option<Num> {
        match *self {
            Val::Count(x) | Val::Port(x) => Some(Num::I(i128::from(x))),
            Val::Int(x) => Some(Num::I(i128::from(x))),
            Val::Double(x) => Some(Num::F(x)),
            _ => None,
        }
    }
}

/// An address as VAST stores it: IPv4 as its IPv4-mapped IPv6 form.
pub fn addr_bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// A subnet as VAST stores it: the IPv6 prefix length and the masked bits.
pub fn net_bits(a: IpAddr, prefix: u8) -> (u128, u8) {
    let p = match a {
        IpAddr::V4(_) => prefix + 96,
        IpAddr::V6(_) => prefix,
    };
    (mask(addr_bits(a), p), p)
}

fn mask(bits: u128, p: u8) -> u128 {
    if p == 0 {
        0
    } else {
        bits & (u128::MAX << (128 - u32::from(p)))
    }
}

/// Whether address `a` lies in `net/prefix`.
pub fn in_subnet(a: IpAddr, net: IpAddr, prefix: u8) -> bool {
    let (n, p) = net_bits(net, prefix);
    mask(addr_bits(a), p) == n
}

/// Whether subnet `a/q` lies in `net/prefix`.
pub fn subnet_in(a: IpAddr, q: u8, net: IpAddr, prefix: u8) -> bool {
    let (n, p) = net_bits(net, prefix);
    let (x, q) = net_bits(a, q);
    q >= p && mask(x, p) == n
}
