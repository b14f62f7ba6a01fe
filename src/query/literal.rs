//! Literals of the expression language: their values, their types (for messages and type
//! checks) and the parsers of the unquoted forms (numbers, addresses, subnets, ports,
//! durations, times). Quoted strings and `/patterns/` are cut by the lexer
//! ([`super::lexer`]); lists are assembled by the parser.
//!
//! Scalars that Zeek also writes (addresses, subnets, plain decimal seconds) are parsed by
//! [`crate::codec::zeek::scalar`]; this module adds the forms only a query has: unit suffixes
//! (`1k`, `1Mi`), signed ints (`+5`), ports with a protocol (`80/tcp`), durations with a unit
//! (`1.5ms`, `2min`) and calendar times (`2009-11-18T08:00:21Z`, `2009-11-18+08:00`).

use std::collections::HashSet;
use std::fmt;
use std::net::IpAddr;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use regex::bytes::Regex;

use super::addr_filter::AddrFilter;

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
    List(ListItems),
    /// `nil`: no value. `field == nil` holds where the field is unset, `field != nil` where
    /// it is set (VAST's `nil`; Sigma's `null` and its negations need it).
    Nil,
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
            Literal::Nil => "nil",
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
            Literal::Nil => f.write_str("nil"),
        }
    }
}

/// The items of a list literal (`[a, b, c]`), with an index of its strings and addresses
/// that a list of at least [`ListItems::INDEXED_FROM`] items builds on its first use, so that
/// `field in [...]` with thousands of values (an indicator set's, a Sigma rule's) costs one
/// hash lookup per value instead of one comparison per item. What the index means is
/// `holds.rs`'s to say (`in` on a list there); this file only builds it. Clones share the
/// items and the index: an expression over several fields (`:addr in [...]` of an indicator
/// set) copies its list into each field's comparison.
#[derive(Clone, Default)]
pub struct ListItems {
    inner: Arc<ListInner>,
}

/// What the clones of one [`ListItems`] share.
#[derive(Default)]
struct ListInner {
    items: Vec<Literal>,
    index: OnceLock<ListIndex>,
}

/// The strings and addresses of a list, hashed, and where its patterns are.
#[derive(Debug, Default)]
pub(crate) struct ListIndex {
    /// The bytes of each `Literal::String` item.
    pub strings: HashSet<Vec<u8>, ahash::RandomState>,
    /// [`addr_bits`] of each `Literal::Addr` item (an IPv4 address as its IPv4-mapped form).
    pub addrs: AddrSet,
    /// The positions of the `Literal::Pattern` items.
    pub patterns: Vec<usize>,
}

impl ListItems {
    /// Lists this long or longer are indexed; below, comparing item by item is as fast.
    pub const INDEXED_FROM: usize = 8;

    /// The items.
    pub fn items(&self) -> &[Literal] {
        &self.inner.items
    }

    /// The list's index (built on the first call), or `None` for a short list.
    pub(crate) fn index(&self) -> Option<&ListIndex> {
        let inner = &*self.inner;
        if inner.items.len() < Self::INDEXED_FROM {
            return None;
        }
        let index = inner.index.get_or_init(|| {
            let mut ix = ListIndex::default();
            for (i, item) in inner.items.iter().enumerate() {
                match item {
                    Literal::String(s) => {
                        ix.strings.insert(s.clone());
                    }
                    Literal::Addr(a) => {
                        ix.addrs.set.insert(addr_bits(*a));
                    }
                    Literal::Pattern(_) => ix.patterns.push(i),
                    _ => {}
                }
            }
            ix.addrs.fill_filter();
            ix
        });
        Some(index)
    }
}

/// A set of addresses ([`addr_bits`]) with an [`AddrFilter`] in front of its hash table.
#[derive(Debug, Default)]
pub(crate) struct AddrSet {
    /// The members. (ahash, not SipHash: SipHash was a fifth of a retro match's samples.)
    set: HashSet<u128, ahash::RandomState>,
    filter: AddrFilter,
}

impl AddrSet {
    /// Builds the filter for the members now in the set.
    fn fill_filter(&mut self) {
        self.filter = AddrFilter::new(self.set.len(), self.set.iter().copied());
    }

    /// Whether `x` ([`addr_bits`] of an address) may be a member
    /// ([`AddrFilter::may_contain`]): reads the filter alone.
    #[inline]
    pub(crate) fn may_contain(&self, x: u128) -> bool {
        self.filter.may_contain(x)
    }

    /// Whether `x` ([`addr_bits`] of an address) is a member.
    #[inline]
    pub(crate) fn contains(&self, x: u128) -> bool {
        self.filter.may_contain(x) && self.set.contains(&x)
    }
}

impl From<Vec<Literal>> for ListItems {
    fn from(items: Vec<Literal>) -> ListItems {
        ListItems {
            inner: Arc::new(ListInner {
                items,
                index: OnceLock::new(),
            }),
        }
    }
}

impl Deref for ListItems {
    type Target = [Literal];

    fn deref(&self) -> &[Literal] {
        &self.inner.items
    }
}

impl fmt::Debug for ListItems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.inner.items).finish()
    }
}

/// `s` as a string literal of the expression language: `"..."` with `\"`, `\\` and `\xHH`
/// for the control characters; every other character as it is.
pub(crate) fn quote(s: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\x7f' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
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
        "nil" => return Some(Literal::Nil),
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

/// An address as VAST compares it: 128 bits, an IPv4 address as its IPv4-mapped IPv6 form
/// (`10.0.0.1` is `::ffff:10.0.0.1`).
pub(crate) fn addr_bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v) => u128::from(v.to_ipv6_mapped()),
        IpAddr::V6(v) => u128::from(v),
    }
}

/// A subnet as VAST compares it: its network in 128 bits ([`addr_bits`], host bits cleared)
/// and its prefix length among 128 bits (an IPv4 prefix plus 96: `10.0.0.0/8` is
/// `::ffff:10.0.0.0/104`).
pub(crate) fn net_bits(net: IpAddr, prefix: u8) -> (u128, u8) {
    let p = match net {
        IpAddr::V4(_) => prefix.saturating_add(96),
        IpAddr::V6(_) => prefix,
    }
    .min(128);
    let m = u128::MAX.checked_shl(128 - u32::from(p)).unwrap_or(0);
    (addr_bits(net) & m, p)
}

/// The IPv4 address of an IPv4 address or of an IPv4-mapped IPv6 one.
pub(crate) fn v4_of(a: IpAddr) -> Option<std::net::Ipv4Addr> {
    match a {
        IpAddr::V4(v) => Some(v),
        IpAddr::V6(v) => v.to_ipv4_mapped(),
    }
}

/// Whether `a` lies in `net/prefix`, compared as VAST does ([`net_bits`]): an IPv4 address
/// and its IPv4-mapped IPv6 form are one address, so `10.0.0.1` is in `::ffff:10.0.0.0/104`
/// and in `::/0`, and `::ffff:10.0.0.1` in `10.0.0.0/8`.
pub(crate) fn in_subnet(a: IpAddr, net: IpAddr, prefix: u8) -> bool {
    let (n, p) = net_bits(net, prefix);
    let m = u128::MAX.checked_shl(128 - u32::from(p)).unwrap_or(0);
    addr_bits(a) & m == n
}

/// Whether subnet `a/p` lies in subnet `b/q` (compared as [`in_subnet`]).
pub(crate) fn subnet_in(a: IpAddr, p: u8, b: IpAddr, q: u8) -> bool {
    let (a, p) = net_bits(a, p);
    let (b, q) = net_bits(b, q);
    let m = u128::MAX.checked_shl(128 - u32::from(q)).unwrap_or(0);
    p >= q && a & m == b
}

/// A number literal before its range is checked: the value of a count or an int, exactly
/// (saturating far beyond the ranges), or a real.
enum Wide {
    Count(i128),
    Int(i128),
    Real(f64),
}

/// `53`, `+5`, `-5`, `1.5`, `1k`, `2Mi`, `-1G`, `2.5e2`.
fn parse_number(word: &str) -> Option<Literal> {
    match number_wide(word)? {
        Wide::Count(v) => u64::try_from(v).ok().map(Literal::Count),
        Wide::Int(v) => i64::try_from(v).ok().map(Literal::Int),
        Wide::Real(v) => v.is_finite().then_some(Literal::Real(v)),
    }
}

/// Whether `s` is `digits[.digits]`.
fn is_decimal(s: &str) -> bool {
    let (int, frac) = s.split_once('.').unwrap_or((s, "0"));
    !int.is_empty()
        && !frac.is_empty()
        && int.bytes().all(|c| c.is_ascii_digit())
        && frac.bytes().all(|c| c.is_ascii_digit())
}

/// The number a word spells (see [`parse_number`]), whatever its range.
fn number_wide(word: &str) -> Option<Wide> {
    let (sign, body) = match word.as_bytes().first()? {
        b'+' => (Some(1i128), &word[1..]),
        b'-' => (Some(-1i128), &word[1..]),
        _ => (None, word),
    };
    // A real with an exponent: `2.5e2`, `1E-3` (no unit suffix).
    if let Some((mantissa, exp)) = body.split_once(['e', 'E']) {
        let exp_digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
        if !is_decimal(mantissa)
            || exp_digits.is_empty()
            || !exp_digits.bytes().all(|c| c.is_ascii_digit())
        {
            return None;
        }
        let v: f64 = body.parse().ok()?;
        return Some(Wide::Real(v * sign.unwrap_or(1) as f64));
    }
    let digits_end = body
        .bytes()
        .position(|c| !(c.is_ascii_digit() || c == b'.'))
        .unwrap_or(body.len());
    let (num, suffix) = body.split_at(digits_end);
    if !is_decimal(num) {
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
        let v: f64 = num.parse().ok()?;
        return Some(Wide::Real(v * factor as f64 * sign.unwrap_or(1) as f64));
    }
    let v = num
        .bytes()
        .fold(0i128, |v, c| {
            v.saturating_mul(10).saturating_add(i128::from(c - b'0'))
        })
        .saturating_mul(factor);
    Some(match sign {
        None => Wide::Count(v),
        Some(s) => Wide::Int(v.saturating_mul(s)),
    })
}

/// Why a word is no literal although it has the form of one: its value is out of range
/// (`None`: it has no literal's form, or it is in range). Call it for a word
/// [`parse_word`] refused.
pub(crate) fn out_of_range(word: &str) -> Option<String> {
    let what =
        |kind: &str, range: &str| Some(format!("`{word}` is out of range for {kind} ({range})"));
    if let Some(n) = number_wide(word) {
        return match n {
            Wide::Count(_) => what("a count", "at most 18446744073709551615"),
            Wide::Int(_) => what("an int", "-9223372036854775808 to +9223372036854775807"),
            Wide::Real(_) => what("a real", "at most about 1.8e308 either way"),
        };
    }
    const TIMES: &str = "1677-09-21T00:12:43Z to 2262-04-11T23:47:16Z";
    const DURATIONS: &str = "at most 106751 days (about 292 years) either way";
    if let Some((num, proto)) = word.split_once('/') {
        let is_proto = matches!(
            proto,
            "?" | "unknown" | "tcp" | "udp" | "icmp" | "icmp6" | "sctp"
        );
        if is_proto && !num.is_empty() && num.bytes().all(|c| c.is_ascii_digit()) {
            return what("a port", "0 to 65535");
        }
    }
    if let Some((net, prefix)) = word.rsplit_once('/') {
        if let Some(a) = scalar::parse_addr(net.as_bytes()) {
            if !prefix.is_empty() && prefix.bytes().all(|c| c.is_ascii_digit()) {
                let max = if a.is_ipv4() { 32 } else { 128 };
                return what("a subnet prefix", &format!("at most {max}"));
            }
        }
    }
    let duration_form = |w: &str| {
        let w = w.strip_prefix(['+', '-']).unwrap_or(w);
        let end = w
            .bytes()
            .position(|c| !(c.is_ascii_digit() || c == b'.'))
            .unwrap_or(w.len());
        is_decimal(&w[..end]) && unit_ns(&w[end..]).is_some()
    };
    if duration_form(word) {
        return what("a duration", DURATIONS);
    }
    if let Some(rest) = word.strip_prefix("now") {
        if rest.starts_with(['+', '-']) && duration_form(rest) {
            return what("a time", TIMES);
        }
    }
    if let Some(epoch) = word.strip_prefix('@') {
        if is_decimal(epoch.strip_prefix(['+', '-']).unwrap_or(epoch)) {
            return what("a time", TIMES);
        }
    }
    if time_wide(word).is_some() {
        return what("a time", TIMES);
    }
    None
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
    let unit_ns = unit_ns(unit)?;
    // parse_ns reads decimal seconds: the value in units, times 1e9.
    let scaled = scalar::parse_ns(num.as_bytes())? as i128;
    i64::try_from(scaled * unit_ns / NS).ok()
}

/// Nanoseconds per unit of a duration (`ns us ms s m/min h d w y` and their long forms).
fn unit_ns(unit: &str) -> Option<i128> {
    Some(match unit {
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
    })
}

/// A calendar time, UTC unless an offset is given:
/// `YYYY-MM-DD[(T|+)HH[:MM[:SS[.frac]]]][Z|(+|-)HH[:MM]]`.
pub fn parse_time(word: &str) -> Option<i64> {
    i64::try_from(time_wide(word)?).ok()
}

/// [`parse_time`] in nanoseconds since the epoch as an `i128`, whatever its range.
fn time_wide(word: &str) -> Option<i128> {
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
    Some(ns)
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

    #[test]
    fn quoted_strings_parse_back_to_the_same_text() {
        let text = "a\"b\\c\td\u{7f}é/\u{1}";
        let q = crate::query::Query::parse(&format!("uid == {}", quote(text))).unwrap();
        let p = &q.expr().unwrap().predicates()[0];
        assert!(matches!(&p.value, Literal::String(s) if s == text.as_bytes()));
    }

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
        assert_eq!(lit("2.5e2"), "real:250.0");
        assert_eq!(lit("1e3"), "real:1000.0");
        assert_eq!(lit("-2.5E-1"), "real:-0.25");
        assert_eq!(lit("+1e0"), "real:1.0");
        assert_eq!(lit("1e"), "none");
        assert_eq!(lit("1e3k"), "none");
        assert_eq!(lit("e3"), "none");
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
        // As VAST: an IPv4 address is its IPv4-mapped IPv6 form.
        let a = |s: &str| -> IpAddr { s.parse().unwrap() };
        for (addr, net, p, want) in [
            ("10.1.2.3", "::", 0, true),
            ("2001:db8::1", "::", 0, true),
            ("10.1.2.3", "::ffff:0:0", 96, true),
            ("2001:db8::1", "::ffff:0:0", 96, false),
            ("::ffff:10.1.2.3", "10.0.0.0", 8, true),
            ("10.1.2.3", "::ffff:10.0.0.0", 104, true),
            ("10.200.2.3", "::ffff:10.0.0.0", 105, false),
            ("10.1.2.3", "::ffff:10.0.0.0", 105, true),
            ("2001:db8::1", "0.0.0.0", 0, false),
            ("::10.1.2.3", "10.0.0.0", 8, false),
        ] {
            assert_eq!(in_subnet(a(addr), a(net), p), want, "{addr} in {net}/{p}");
        }
        assert!(subnet_in(a("10.1.0.0"), 16, a("::ffff:10.0.0.0"), 104));
        assert!(subnet_in(a("::ffff:10.1.0.0"), 112, a("10.0.0.0"), 8));
        assert!(!subnet_in(a("10.0.0.0"), 8, a("10.1.0.0"), 16));
        assert_eq!(
            net_bits(a("10.0.0.0"), 8),
            net_bits(a("::ffff:10.0.0.0"), 104)
        );
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
