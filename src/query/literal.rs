//! Literals of the expression language: their values, their types (for messages and type
//! checks) and the parsers of the unquoted forms (numbers, addresses, subnets, ports,
//! durations, times). Quoted strings and `/patterns/` are cut by the lexer
//! ([`super::lexer`]); lists are assembled by the parser.
//!
//! Scalars that Zeek also writes (addresses, subnets, plain decimal seconds) are parsed by
//! [`crate::codec::zeek::scalar`]; this module adds the forms only a query has: unit suffixes
//! (`1k`, `1Mi`), signed ints (`+5`), ports with a protocol (`80/tcp`), durations with a unit
//! (`1.5ms`, `2min`) and calendar times (`2009-11-18T08:00:21Z`, `2009-11-18+08:00`).

use std::fmt;
use std::net::IpAddr;

use regex::bytes::Regex;

use crate::codec::zeek::scalar;

/// Nanoseconds per second.
const NS: i128 = 1_000_000_000;

/// A constant of a predicate.
#[derive(Debug, Clone)]
pub enum Literal {
    /// `T`, `F`, `true`, `false`.
    Bool(bool),
    /// `53`, `1k` (1000), `1Ki` (1024).
    Count(u64),
    /// `+5`, `-5`, `-1k`.
    Int(i64),
    /// `1.5`, `-0.25`.
    Real(f64),
    /// `"text"` (bytes, after escapes).
    String(Vec<u8>),
    /// `/regex/`.
    Pattern(Pattern),
    /// `10.0.0.1`, `2001:db8::1`.
    Addr(IpAddr),
    /// `10.0.0.0/8`: the network (host bits cleared) and the prefix length.
    Subnet(IpAddr, u8),
    /// `80/tcp`: the number and the protocol (`None` for `/?`).
    Port(u64, Option<String>),
    /// `10s`, `1.5ms`: nanoseconds.
    Duration(i64),
    /// `2009-11-18T08:00:21Z`, `now - 1d`: nanoseconds since the epoch.
    Time(i64),
    /// `[a, b, c]`.
    List(Vec<Literal>),
}

impl Literal {
    /// The literal's type, as messages name it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Literal::Bool(_) => "bool",
            Literal::Count(_) => "count",
            Literal::Int(_) => "int",
            Literal::Real(_) => "real",
            Literal::String(_) => "string",
            Literal::Pattern(_) => "pattern",
            Literal::Addr(_) => "addr",
            Literal::Subnet(..) => "subnet",
            Literal::Port(..) => "port",
            Literal::Duration(_) => "duration",
            Literal::Time(_) => "time",
            Literal::List(_) => "list",
        }
    }

    /// A numeric literal as a number.
    pub(crate) fn number(&self) -> Option<Number> {
        match *self {
            Literal::Count(v) => Some(Number::U(v)),
            Literal::Int(v) => Some(Number::I(v)),
            Literal::Real(v) => Some(Number::F(v)),
            _ => None,
        }
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Bool(b) => f.write_str(if *b { "T" } else { "F" }),
            Literal::Count(v) => write!(f, "{v}"),
            Literal::Int(v) => write!(f, "{v:+}"),
            Literal::Real(v) => write!(f, "{v:?}"),
            Literal::String(s) => write!(f, "{:?}", String::from_utf8_lossy(s)),
            Literal::Pattern(p) => write!(f, "/{}/", p.source),
            Literal::Addr(a) => write!(f, "{a}"),
            Literal::Subnet(a, p) => write!(f, "{a}/{p}"),
            Literal::Port(n, proto) => write!(f, "{n}/{}", proto.as_deref().unwrap_or("?")),
            Literal::Duration(ns) => write!(f, "{ns}ns"),
            Literal::Time(ns) => {
                let mut out = Vec::new();
                scalar::push_rfc3339(&mut out, *ns);
                f.write_str(&String::from_utf8_lossy(&out))
            }
            Literal::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// A number of any of the three numeric types, compared across them by value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Number {
    U(u64),
    I(i64),
    F(f64),
}

impl Number {
    /// The order of two numbers; `None` when one is NaN.
    pub(crate) fn cmp(self, other: Number) -> Option<std::cmp::Ordering> {
        use Number::*;
        match (self, other) {
            (U(a), U(b)) => Some(a.cmp(&b)),
            (I(a), I(b)) => Some(a.cmp(&b)),
            (U(a), I(b)) => Some((a as i128).cmp(&(b as i128))),
            (I(a), U(b)) => Some((a as i128).cmp(&(b as i128))),
            (a, b) => a.as_f64().partial_cmp(&b.as_f64()),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Number::U(v) => v as f64,
            Number::I(v) => v as f64,
            Number::F(v) => v,
        }
    }
}

/// A `/regex/` literal: its text and two compiled forms, one anchored at both ends (`~`,
/// `==`: the whole value must match, as VAST's `match`) and one that searches (`in`).
#[derive(Debug, Clone)]
pub struct Pattern {
    /// The text between the slashes.
    pub source: String,
    /// Matches the whole value.
    pub(crate) full: Regex,
    /// Matches anywhere in the value.
    pub(crate) search: Regex,
}

impl Pattern {
    /// Compiles a pattern; the error is the regex crate's message.
    pub fn new(source: &str) -> Result<Pattern, String> {
        let search = Regex::new(source).map_err(|e| e.to_string())?;
        let full = Regex::new(&format!("^(?:{source})$")).map_err(|e| e.to_string())?;
        Ok(Pattern {
            source: source.to_string(),
            full,
            search,
        })
    }
}

/// Parses an unquoted word as a literal: `None` when it is no literal (then it may be a field
/// name). `now` (without arithmetic) is the time `now`.
pub fn parse_word(word: &str, now: i64) -> Option<Literal> {
    let b = word.as_bytes();
    match word {
        "T" | "true" => return Some(Literal::Bool(true)),
        "F" | "false" => return Some(Literal::Bool(false)),
        "now" => return Some(Literal::Time(now)),
        _ => {}
    }
    if let Some(rest) = word.strip_prefix("now") {
        // `now-1d`, `now+1h` written without spaces.
        let (sign, dur) = match rest.as_bytes().first() {
            Some(b'-') => (-1, &rest[1..]),
            Some(b'+') => (1, &rest[1..]),
            _ => return None,
        };
        let d = parse_duration(dur)?;
        return now.checked_add(d.checked_mul(sign)?).map(Literal::Time);
    }
    if let Some(epoch) = word.strip_prefix('@') {
        return scalar::parse_ns(epoch.as_bytes()).map(Literal::Time);
    }
    if let Some(n) = parse_number(word) {
        return Some(n);
    }
    if let Some(a) = scalar::parse_addr(b) {
        return Some(Literal::Addr(a));
    }
    if let Some((a, p)) = scalar::parse_subnet(b) {
        return Some(Literal::Subnet(mask(a, p), p));
    }
    if let Some(p) = parse_port(word) {
        return Some(p);
    }
    if let Some(d) = parse_duration(word) {
        return Some(Literal::Duration(d));
    }
    parse_time(word).map(Literal::Time)
}

/// The network of `a/prefix`: host bits cleared.
pub(crate) fn mask(a: IpAddr, prefix: u8) -> IpAddr {
    match a {
        IpAddr::V4(v) => {
            let bits = u32::from(v);
            let m = u32::MAX.checked_shl(32 - prefix as u32).unwrap_or(0);
            IpAddr::V4((bits & m).into())
        }
        IpAddr::V6(v) => {
            let bits = u128::from(v);
            let m = u128::MAX.checked_shl(128 - prefix as u32).unwrap_or(0);
            IpAddr::V6((bits & m).into())
        }
    }
}

/// Whether `a` lies in `net/prefix` (IPv4 in IPv4, IPv6 in IPv6; an IPv4-mapped IPv6 address
/// counts as its IPv4 address).
pub(crate) fn in_subnet(a: IpAddr, net: IpAddr, prefix: u8) -> bool {
    let a = match a {
        IpAddr::V6(v) => v.to_ipv4_mapped().map_or(a, IpAddr::V4),
        v4 => v4,
    };
    match (a, net) {
        (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
            mask(a, prefix) == mask(net, prefix)
        }
        _ => false,
    }
}

/// `53`, `+5`, `-5`, `1.5`, `1k`, `2Mi`, `-1G`.
fn parse_number(word: &str) -> Option<Literal> {
    let (sign, body) = match word.as_bytes().first()? {
        b'+' => (Some(1i128), &word[1..]),
        b'-' => (Some(-1i128), &word[1..]),
        _ => (None, word),
    };
    let digits_end = body
        .bytes()
        .position(|c| !(c.is_ascii_digit() || c == b'.'))
        .unwrap_or(body.len());
    let (num, suffix) = body.split_at(digits_end);
    if num.is_empty() || !num.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    let factor: i128 = match suffix {
        "" => 1,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        _ => return None,
    };
    if num.contains('.') {
        if num.bytes().filter(|&c| c == b'.').count() > 1 || num.ends_with('.') {
            return None;
        }
        let v: f64 = num.parse().ok()?;
        return Some(Literal::Real(v * factor as f64 * sign.unwrap_or(1) as f64));
    }
    let v = scalar::parse_u64(num.as_bytes())? as i128 * factor;
    match sign {
        None => u64::try_from(v).ok().map(Literal::Count),
        Some(s) => i64::try_from(v * s).ok().map(Literal::Int),
    }
}

/// `80/tcp`, `53/udp`, `8/icmp`, `0/?`.
fn parse_port(word: &str) -> Option<Literal> {
    let (num, proto) = word.split_once('/')?;
    let n = scalar::parse_u64(num.as_bytes()).filter(|&n| n <= 65_535)?;
    let proto = match proto {
        "?" | "unknown" => None,
        "tcp" | "udp" | "icmp" | "icmp6" | "sctp" => Some(proto.to_string()),
        _ => return None,
    };
    Some(Literal::Port(n, proto))
}

/// A duration with its unit, `[+-]digits[.digits]unit`, in nanoseconds (exact: the digits go
/// through [`scalar::parse_ns`]): `10s`, `1.5ms`, `2min`, `-1h`, `1d`, `1w`, `1y` (365 days).
pub fn parse_duration(word: &str) -> Option<i64> {
    let end = word
        .bytes()
        .position(|c| !(c.is_ascii_digit() || matches!(c, b'.' | b'+' | b'-')))?;
    let (num, unit) = word.split_at(end);
    let unit_ns: i128 = match unit {
        "ns" | "nsec" | "nsecs" | "nanosecond" | "nanoseconds" => 1,
        "us" | "usec" | "usecs" | "microsecond" | "microseconds" => 1_000,
        "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => 1_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => NS,
        "m" | "min" | "mins" | "minute" | "minutes" => 60 * NS,
        "h" | "hour" | "hours" => 3_600 * NS,
        "d" | "day" | "days" => 86_400 * NS,
        "w" | "week" | "weeks" => 7 * 86_400 * NS,
        "y" | "year" | "years" => 365 * 86_400 * NS,
        _ => return None,
    };
    // parse_ns reads decimal seconds: the value in units, times 1e9.
    let scaled = scalar::parse_ns(num.as_bytes())? as i128;
    i64::try_from(scaled * unit_ns / NS).ok()
}

/// A calendar time, UTC unless an offset is given:
/// `YYYY-MM-DD[(T|+)HH[:MM[:SS[.frac]]]][Z|(+|-)HH[:MM]]`.
pub fn parse_time(word: &str) -> Option<i64> {
    let b = word.as_bytes();
    let num = |s: &[u8]| -> Option<u32> {
        (!s.is_empty() && s.iter().all(u8::is_ascii_digit))
            .then(|| s.iter().fold(0u32, |v, &c| v * 10 + (c - b'0') as u32))
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d) = (num(&b[0..4])?, num(&b[5..7])?, num(&b[8..10])?);
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y as i64, m) {
        return None;
    }
    let mut ns = scalar::days_from_civil(y as i64, m, d) as i128 * 86_400 * NS;
    let mut rest = &word[10..];
    if let Some(r) = rest.strip_prefix(['T', '+']) {
        // The clock: HH[:MM[:SS[.frac]]], then an optional zone.
        let zone_at = r
            .char_indices()
            .find(|&(_, c)| c == 'Z' || c == '+' || c == '-')
            .map_or(r.len(), |(i, _)| i);
        let (clock, zone) = r.split_at(zone_at);
        let mut parts = clock.splitn(3, ':');
        let h = num(parts.next()?.as_bytes()).filter(|&h| h < 24)?;
        let mi = match parts.next() {
            Some(p) => num(p.as_bytes()).filter(|&m| m < 60)?,
            None => 0,
        };
        let s = match parts.next() {
            Some(p) => {
                let v = scalar::parse_ns(p.as_bytes())?;
                if !(0..60 * NS as i64).contains(&v) || p.starts_with(['+', '-']) {
                    return None;
                }
                v as i128
            }
            None => 0,
        };
        ns += (h as i128 * 3_600 + mi as i128 * 60) * NS + s;
        rest = zone;
    }
    match rest {
        "" | "Z" => {}
        zone => {
            let sign: i128 = if zone.starts_with('+') { -1 } else { 1 };
            let z = zone.strip_prefix(['+', '-'])?;
            let (zh, zm) = match z.split_once(':') {
                Some((h, m)) => (num(h.as_bytes())?, num(m.as_bytes())?),
                None if z.len() == 4 => (num(&z.as_bytes()[..2])?, num(&z.as_bytes()[2..])?),
                None => (num(z.as_bytes())?, 0),
            };
            if zh > 23 || zm > 59 {
                return None;
            }
            // `+01:00` is ahead of UTC: subtract it.
            ns += sign * (zh as i128 * 3_600 + zm as i128 * 60) * NS;
        }
    }
    i64::try_from(ns).ok()
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(w: &str) -> String {
        parse_word(w, 0).map_or("none".into(), |l| format!("{}:{l}", l.type_name()))
    }

    #[test]
    fn numbers_and_units() {
        assert_eq!(lit("53"), "count:53");
        assert_eq!(lit("+5"), "int:+5");
        assert_eq!(lit("-5"), "int:-5");
        assert_eq!(lit("1k"), "count:1000");
        assert_eq!(lit("1Ki"), "count:1024");
        assert_eq!(lit("2Mi"), "count:2097152");
        assert_eq!(lit("-1G"), "int:-1000000000");
        assert_eq!(lit("1.5"), "real:1.5");
        assert_eq!(lit("1.5k"), "real:1500.0");
        assert_eq!(lit("1x"), "none");
        assert_eq!(lit("1.2.3"), "none");
    }

    #[test]
    fn addresses_subnets_ports() {
        assert_eq!(lit("10.0.0.1"), "addr:10.0.0.1");
        assert_eq!(lit("::1"), "addr:::1");
        assert_eq!(lit("10.1.2.3/8"), "subnet:10.0.0.0/8");
        assert_eq!(lit("2001:db8::/32"), "subnet:2001:db8::/32");
        assert_eq!(lit("80/tcp"), "port:80/tcp");
        assert_eq!(lit("53/?"), "port:53/?");
        assert_eq!(lit("80/xyz"), "none");
        assert!(in_subnet(
            "10.1.2.3".parse().unwrap(),
            "10.0.0.0".parse().unwrap(),
            8
        ));
        assert!(!in_subnet(
            "11.1.2.3".parse().unwrap(),
            "10.0.0.0".parse().unwrap(),
            8
        ));
    }

    #[test]
    fn durations() {
        let d = |w| parse_duration(w);
        assert_eq!(d("10s"), Some(10_000_000_000));
        assert_eq!(d("10.0s"), Some(10_000_000_000));
        assert_eq!(d("1.5ms"), Some(1_500_000));
        assert_eq!(d("2min"), Some(120_000_000_000));
        assert_eq!(d("2h"), Some(7_200_000_000_000));
        assert_eq!(d("1d"), Some(86_400_000_000_000));
        assert_eq!(d("-1us"), Some(-1_000));
        assert_eq!(d("1"), None);
        assert_eq!(d("1parsec"), None);
    }

    #[test]
    fn times() {
        let t = |w| parse_time(w);
        let base = 1_258_502_400_000_000_000; // 2009-11-18
        assert_eq!(t("2009-11-18"), Some(base));
        assert_eq!(t("2009-11-18T08:00:21Z"), Some(1_258_531_221_000_000_000));
        assert_eq!(t("2009-11-18+08:00:21.5"), Some(1_258_531_221_500_000_000));
        assert_eq!(t("2009-11-18T08"), Some(base + 8 * 3_600 * 1_000_000_000));
        assert_eq!(
            t("2009-11-18T09:00:21+01:00"),
            Some(1_258_531_221_000_000_000)
        );
        assert_eq!(
            t("2009-11-18T07:00:21-01:00"),
            Some(1_258_531_221_000_000_000)
        );
        assert_eq!(t("2009-02-29"), None);
        assert_eq!(t("2009-11-18T24:00"), None);
        assert_eq!(lit("now-1d"), "time:1969-12-31T00:00:00.000000Z");
        assert_eq!(lit("@1.5"), "time:1970-01-01T00:00:01.500000Z");
    }
}
