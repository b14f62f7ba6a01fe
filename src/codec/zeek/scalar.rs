//! Zeek scalars as text: the one place that parses and formats `bool`, `count`, `port`, `int`,
//! `double`, `time`, `interval`, `addr` and `subnet` values. The TSV reader
//! ([`crate::codec::zeek::tsv`]), the JSON reader ([`crate::codec::zeek::json`]) and both
//! writers ([`crate::codec::zeek::tsv_writer`], [`crate::codec::json_writer`]) call these
//! functions; none of them has a scalar parser or formatter of its own.
//!
//! Parsers take the raw bytes of one value (already unescaped, without separators) and return
//! `None` for anything but the accepted forms below; callers turn `None` into their own error
//! naming the line, field and text. Nothing allocates (except the canonical-form checks of the
//! JSON reader, which format into a caller's scratch buffer).
//!
//! # Accepted text forms (Zeek TSV, and values inside JSON strings)
//!
//! | type | accepted | value |
//! |---|---|---|
//! | `bool` | `T`, `F` exactly | true, false |
//! | `count`, `port` | one or more ASCII digits, no sign ([`parse_u64`]) | the number; more than `u64::MAX` is rejected |
//! | `int` | `-`, `+` or no sign, then one or more digits ([`parse_i64`]) | the number, `i64::MIN..=i64::MAX` |
//! | `double` | `inf`, `+inf`, `-inf`, `nan`, `+nan`, `-nan`, or text of only digits, `.`, `+`, `-`, `e`, `E` that Rust's `f64` parser accepts ([`parse_f64`]) | the nearest `f64` (words like `infinity` are rejected) |
//! | `time`, `interval` | `-`, `+` or no sign, digits, optionally `.` and digits, at least one digit in all (`5.`, `.5` are fine), optionally an exponent after an integral digit (`4.294967296e+09`, `-2.5e+10`, `1e-07`: how Zeek writes magnitudes at or above 2^31-1 and below 1e-6) ([`parse_ns`]) | exact integer nanoseconds (seconds since the epoch for `time`, negative before 1970); digits beyond the ninth decimal round half to even, the same with or without exponent; outside the `i64` range is rejected |
//! | `addr` | a dotted quad of 1-3 digit octets `0..=255` without leading zeros, or any IPv6 text Rust's parser accepts ([`parse_addr`]) | the address |
//! | `subnet` | `addr/prefix`, the prefix digits only and at most 32 (IPv4) or 128 (IPv6) ([`parse_subnet`]) | address and prefix length (host bits are kept) |
//!
//! The TSV reader's fast path uses prefix parsers (`parse_u64_prefix`, `parse_ns_prefix`,
//! `parse_v4_prefix`) that read a value while finding its end. They accept a subset of the
//! forms above (no `+`, at most 19 digits for counts, at most 10 integral and 9 fractional
//! digits for times) and give the same value; anything else they leave to the full parsers.
//!
//! # JSON forms
//!
//! - A number in a `ts`-like field is a `time` from its JSON number text, exponent included
//!   (`1.5e3`), again exact with round half to even ([`parse_json_ns`]).
//! - A string is a `time` if it is RFC 3339, `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)` (`t`, `z`
//!   accepted; any number of fraction digits, rounded half to even) ([`parse_rfc3339`]), an
//!   `addr` or `subnet` only in the canonical form [`push_addr`]/[`push_subnet`] write
//!   ([`parse_canonical_addr`], [`parse_canonical_subnet`]), so that it is written back as read.
//!
//! # Text written
//!
//! - `time`, `interval` in TSV and `interval` in JSON: exact decimal seconds with at least 6
//!   fraction digits ([`push_decimal_ns`]); `time` in JSON: RFC 3339 UTC with at least 6
//!   fraction digits ([`push_rfc3339`]);
//! - `double`: the shortest text that re-reads to the identical `f64`, `.0` after integral
//!   values, `inf`, `-inf`, `nan` ([`push_double`]);
//! - `addr`: dotted quad, IPv6 in RFC 5952 form ([`push_addr`]); `subnet`: `addr/prefix`;
//! - `count`, `int`, `port`: decimal ([`push_u64`], [`push_i64`]).
//!
//! Every parser accepts what the matching formatter writes and gives back the identical value.

use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const HI7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

// ---------------------------------------------------------------------------------------------
// Parsing.

/// `bool`: `T` or `F`.
#[inline]
pub fn parse_bool(s: &[u8]) -> Option<bool> {
    match s {
        b"T" => Some(true),
        b"F" => Some(false),
        _ => None,
    }
}

/// `count`, `port`: one or more decimal digits, nothing else, at most `u64::MAX`.
#[inline]
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    if s.len() <= 19 {
        // At most 19 digits cannot overflow.
        let mut v: u64 = 0;
        for &c in s {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v = v * 10 + d as u64;
        }
        return Some(v);
    }
    let mut v: u64 = 0;
    for &c in s {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// `int`: an optional `-` or `+`, then one or more decimal digits.
#[inline]
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    match s {
        [b'-', rest @ ..] => {
            let v = parse_u64(rest)?;
            if v <= i64::MAX as u64 + 1 {
                Some((v as i64).wrapping_neg())
            } else {
                None
            }
        }
        [b'+', rest @ ..] => i64::try_from(parse_u64(rest)?).ok(),
        _ => i64::try_from(parse_u64(s)?).ok(),
    }
}

const POW10: [u64; 10] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// `time`, `interval`: decimal seconds to exact integer nanoseconds (`[+-]digits[.digits]`, at
/// least one digit); digits beyond the ninth decimal round half to even; `None` outside the
/// `i64` range.
#[inline]
pub fn parse_ns(s: &[u8]) -> Option<i64> {
    let (neg, s) = match s {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, s),
    };
    let mut i = 0;
    let mut int: u64 = 0;
    while let Some(&c) = s.get(i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        int = int.checked_mul(10)?.checked_add(d as u64)?;
        i += 1;
    }
    let int_digits = i;
    let mut frac: u64 = 0;
    let mut round_up = false;
    let mut frac_digits = 0;
    if s.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while let Some(&c) = s.get(i) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            if i - start < 9 {
                frac = frac * 10 + d as u64;
            }
            i += 1;
        }
        frac_digits = i - start;
        if frac_digits > 9 {
            let dropped = s[start + 9..i].iter().map(|c| c.wrapping_sub(b'0'));
            round_up = rounds_up(frac % 2 == 1, dropped);
        }
    }
    if i != s.len() || int_digits + frac_digits == 0 {
        // Zeek writes magnitudes at or above 2^31-1 (and below 1e-6) in exponent form,
        // `4.294967296e+09`: the JSON-number path reads it exactly.
        return match s.get(i) {
            Some(b'e' | b'E') if int_digits > 0 => {
                let v = parse_json_ns(s)?;
                if neg {
                    v.checked_neg()
                } else {
                    Some(v)
                }
            }
            _ => None,
        };
    }
    let frac = frac * POW10[9 - frac_digits.min(9)];
    let ns = int
        .checked_mul(1_000_000_000)?
        .checked_add(frac)?
        .checked_add(round_up as u64)?;
    if neg {
        (ns <= i64::MAX as u64 + 1).then(|| (ns as i64).wrapping_neg())
    } else {
        i64::try_from(ns).ok()
    }
}

/// `double` as Zeek prints it, including `inf`, `-inf` and `nan`.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    match s {
        b"inf" | b"+inf" => return Some(f64::INFINITY),
        b"-inf" => return Some(f64::NEG_INFINITY),
        b"nan" | b"-nan" | b"+nan" => return Some(f64::NAN),
        _ => {}
    }
    // Only plain decimal forms (Rust would also accept words like "infinity").
    if !s
        .iter()
        .all(|c| matches!(c, b'0'..=b'9' | b'.' | b'-' | b'+' | b'e' | b'E'))
    {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// `addr` (IPv4): a dotted quad of 1-3 digit octets up to 255 without leading zeros.
#[inline]
pub fn parse_v4(s: &[u8]) -> Option<Ipv4Addr> {
    match parse_v4_prefix(s) {
        Some((o, n)) if n == s.len() => Some(Ipv4Addr::from(o)),
        _ => None,
    }
}

/// `addr`: IPv4 as [`parse_v4`], else IPv6 in any form Rust's parser accepts.
#[inline]
pub fn parse_addr(s: &[u8]) -> Option<IpAddr> {
    if let Some(a) = parse_v4(s) {
        return Some(IpAddr::V4(a));
    }
    let t = std::str::from_utf8(s).ok()?;
    t.parse::<Ipv6Addr>().ok().map(IpAddr::V6)
}

/// `subnet`: `addr/prefix`, the prefix at most 32 (IPv4) or 128 (IPv6).
pub fn parse_subnet(s: &[u8]) -> Option<(IpAddr, u8)> {
    let slash = memchr::memrchr(b'/', s)?;
    let a = parse_addr(&s[..slash])?;
    let p = u8::try_from(parse_u64(&s[slash + 1..])?).ok()?;
    let max = if a.is_ipv4() { 32 } else { 128 };
    (p <= max).then_some((a, p))
}

/// Leading decimal digits (at most 19, so no overflow) and how many there were.
#[inline(always)]
pub(crate) fn parse_u64_prefix(s: &[u8]) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    let mut n = 0;
    for &c in s.iter().take(20) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(d as u64);
        n += 1;
    }
    (n > 0 && n < 20).then_some((v, n))
}

/// How many of the 8 bytes of `w` (loaded little-endian) are ASCII digits before the first
/// other byte (0..=8).
#[inline(always)]
pub(crate) fn digit_count(w: u64) -> u32 {
    // A byte is a digit when its high nibble is 3 and its low nibble is at most 9.
    let high = (w & 0xf0f0_f0f0_f0f0_f0f0) ^ 0x3030_3030_3030_3030;
    let low = ((w & 0x0f0f_0f0f_0f0f_0f0f) + 0x0606_0606_0606_0606) & 0xf0f0_f0f0_f0f0_f0f0;
    let bad = high | low;
    let nonzero = ((bad & HI7).wrapping_add(HI7) | bad) & !HI7;
    nonzero.trailing_zeros() / 8
}

/// The value of the first `n` (1..=8) digits of `w` (loaded little-endian), without loops.
#[inline(always)]
pub(crate) fn digits_value(w: u64, n: u32) -> u64 {
    let shift = 8 * (8 - n);
    // Move the digits to the top and fill the bottom with leading '0's.
    let w = (w << shift)
        | 0x3030_3030_3030_3030u64
            .checked_shr(64 - shift)
            .unwrap_or(0);
    let v = w.wrapping_sub(0x3030_3030_3030_3030);
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    let v = (v & 0x0000_00ff_0000_00ff)
        .wrapping_mul(0x000f_4240_0000_0064)
        .wrapping_add(((v >> 16) & 0x0000_00ff_0000_00ff).wrapping_mul(0x0000_2710_0000_0001));
    (v >> 32) & 0xffff_ffff
}

/// The digit in `c`, if it is one.
#[inline(always)]
pub(crate) fn digit_at(c: Option<&u8>) -> Option<u64> {
    let d = c?.wrapping_sub(b'0');
    (d <= 9).then_some(d as u64)
}

/// A leading `digits[.digits]` time (at most 10 integral and 9 fractional digits, optional
/// minus) in nanoseconds, and how many bytes it took; `None` for anything else (the general
/// path then decides).
#[inline(always)]
pub(crate) fn parse_ns_prefix(s: &[u8]) -> Option<(i64, usize)> {
    let (neg, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let (mut int, mut i) = match body.first_chunk::<8>() {
        Some(w) => {
            let w = u64::from_le_bytes(*w);
            let n = digit_count(w);
            if n == 0 {
                return None;
            }
            (digits_value(w, n), n as usize)
        }
        None => (0, 0),
    };
    if i == 0 || i == 8 {
        while let Some(d) = digit_at(body.get(i)) {
            int = int.wrapping_mul(10).wrapping_add(d);
            i += 1;
            if i > 10 {
                return None;
            }
        }
    }
    // Up to 9_223_372_035 s the nanoseconds fit an i64; the general path handles the rest.
    if i == 0 || int > 9_223_372_035 {
        return None;
    }
    let mut frac: u64 = 0;
    let mut fd = 0;
    if body.get(i) == Some(&b'.') {
        i += 1;
        if let Some(w) = body.get(i..).and_then(|r| r.first_chunk::<8>()) {
            let w = u64::from_le_bytes(*w);
            let n = digit_count(w);
            if n > 0 {
                frac = digits_value(w, n);
                fd = n as usize;
                i += fd;
            }
        }
        if fd == 0 || fd == 8 {
            while let Some(d) = digit_at(body.get(i)) {
                frac = frac * 10 + d;
                fd += 1;
                i += 1;
                if fd > 9 {
                    return None;
                }
            }
        }
    }
    let ns = (int * 1_000_000_000 + frac * POW10[9 - fd]) as i64;
    Some((if neg { -ns } else { ns }, i + neg as usize))
}

/// A leading dotted-quad IPv4 address (no leading zeros) and how many bytes it took.
#[inline(always)]
pub(crate) fn parse_v4_prefix(s: &[u8]) -> Option<([u8; 4], usize)> {
    #[inline(always)]
    fn digit(c: Option<&u8>) -> Option<u32> {
        let d = c?.wrapping_sub(b'0');
        (d <= 9).then_some(d as u32)
    }
    let mut out = [0u8; 4];
    let mut i = 0;
    for (k, o) in out.iter_mut().enumerate() {
        if k > 0 {
            if s.get(i) != Some(&b'.') {
                return None;
            }
            i += 1;
        }
        let mut v = digit(s.get(i))?;
        i += 1;
        if let Some(d) = digit(s.get(i)) {
            if v == 0 {
                return None;
            }
            v = v * 10 + d;
            i += 1;
            if let Some(d) = digit(s.get(i)) {
                v = v * 10 + d;
                i += 1;
                if v > 255 {
                    return None;
                }
            }
        }
        *o = v as u8;
    }
    Some((out, i))
}

/// Whether a value cut after its last kept digit rounds up, half to even: `dropped` are the
/// values (0-9) of the digits cut off, `kept_odd` the parity of the value kept.
#[inline]
fn rounds_up(kept_odd: bool, mut dropped: impl Iterator<Item = u8>) -> bool {
    match dropped.next() {
        Some(first) => first > 5 || (first == 5 && (kept_odd || dropped.any(|d| d != 0))),
        None => false,
    }
}

/// Exact nanoseconds of decimal seconds in JSON number syntax (`-12.5e3`), rounding half to even
/// below the nanosecond; `None` when outside the i64 range or not a number.
pub fn parse_json_ns(text: &[u8]) -> Option<i64> {
    let (neg, t) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let (mant, exp) = match t.iter().position(|&b| b == b'e' || b == b'E') {
        Some(k) => {
            let e = &t[k + 1..];
            let (eneg, ed) = match e.split_first() {
                Some((b'-', r)) => (true, r),
                Some((b'+', r)) => (false, r),
                _ => (false, e),
            };
            // Beyond this every non-zero value is out of range or below a nanosecond.
            let ev = parse_u64(ed).filter(|&v| v <= 10_000)? as i64;
            (&t[..k], if eneg { -ev } else { ev })
        }
        None => (t, 0),
    };
    let (int, frac) = match mant.iter().position(|&b| b == b'.') {
        Some(k) => (&mant[..k], &mant[k + 1..]),
        None => (mant, &mant[..0]),
    };
    if !int.iter().chain(frac).all(u8::is_ascii_digit) {
        return None;
    }
    let ndig = int.len() + frac.len();
    let scale = exp + 9 - frac.len() as i64;
    let digit = |k: usize| -> u8 {
        if k < int.len() {
            int[k] - b'0'
        } else {
            frac[k - int.len()] - b'0'
        }
    };
    const LIMIT: i128 = 1 << 63;
    let mut acc: i128 = 0;
    let keep = if scale >= 0 {
        ndig
    } else {
        (ndig as i64 + scale).max(0) as usize
    };
    for k in 0..keep {
        acc = acc * 10 + digit(k) as i128;
        if acc > LIMIT {
            return None;
        }
    }
    if scale > 0 {
        for _ in 0..scale {
            if acc == 0 {
                break;
            }
            acc *= 10;
            if acc > LIMIT {
                return None;
            }
        }
    } else if (ndig as i64 + scale) >= 0 && rounds_up(acc % 2 == 1, (keep..ndig).map(digit)) {
        acc += 1;
    }
    let v = if neg { -acc } else { acc };
    i64::try_from(v).ok()
}

/// Nanoseconds of the fraction digits after a decimal point, rounded half to even.
fn fraction_ns(d: &[u8]) -> i64 {
    let mut v: i64 = 0;
    for k in 0..9 {
        v = v * 10 + d.get(k).map_or(0, |c| c.wrapping_sub(b'0') as i64);
    }
    let dropped = d.get(9..).unwrap_or_default();
    v + rounds_up(v % 2 == 1, dropped.iter().map(|c| c.wrapping_sub(b'0'))) as i64
}

/// The two-digit number at `s[at..at + 2]`.
fn two(s: &[u8], at: usize) -> Option<u32> {
    let a = s.get(at)?.wrapping_sub(b'0');
    let b = s.get(at + 1)?.wrapping_sub(b'0');
    (a < 10 && b < 10).then_some(a as u32 * 10 + b as u32)
}

/// Nanoseconds since the epoch of an RFC 3339 timestamp
/// (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`), or `None`.
pub fn parse_rfc3339(s: &[u8]) -> Option<i64> {
    parse_datetime(s, false)
}

/// Nanoseconds since the epoch of a timestamp as RFC 3339 or as Suricata's EVE writes it:
/// [`parse_rfc3339`]'s forms, and also an offset without colon (`+0200`, EVE's `timestamp`,
/// `flow.start`) or none at all (UTC: EVE's TLS validity dates,
/// `2016-01-01T00:00:00`). The offset is applied exactly: `2011-08-12T14:52:57.716360+0200`
/// is 12:52:57.716360 UTC. What a typed `time` field of a JSON line takes.
pub fn parse_time_text(s: &[u8]) -> Option<i64> {
    parse_datetime(s, true)
}

/// [`parse_rfc3339`], or with `lenient` [`parse_time_text`].
fn parse_datetime(s: &[u8], lenient: bool) -> Option<i64> {
    if s.len() < if lenient { 19 } else { 20 }
        || s[4] != b'-'
        || s[7] != b'-'
        || !matches!(s[10], b'T' | b't')
        || s[13] != b':'
        || s[16] != b':'
    {
        return None;
    }
    let year = two(s, 0)? as i64 * 100 + two(s, 2)? as i64;
    let (month, day) = (two(s, 5)?, two(s, 8)?);
    let (h, m, sec) = (two(s, 11)?, two(s, 14)?, two(s, 17)?);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let mdays = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if day == 0 || day > mdays || h > 23 || m > 59 || sec > 59 {
        return None;
    }
    let mut i = 19;
    let mut frac_ns: i64 = 0;
    if s.get(i) == Some(&b'.') {
        i += 1;
        let from = i;
        while s.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == from {
            return None;
        }
        frac_ns = fraction_ns(&s[from..i]);
    }
    let offset: i64 = match s.get(i..)? {
        b"Z" | b"z" => 0,
        b"" if lenient => 0,
        [sign @ (b'+' | b'-'), rest @ ..]
            if (rest.len() == 5 && rest[2] == b':') || (lenient && rest.len() == 4) =>
        {
            let (oh, om) = (two(rest, 0)?, two(rest, rest.len() - 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = (oh * 3600 + om * 60) as i64;
            if *sign == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + (h * 3600 + m * 60 + sec) as i64 - offset;
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// The address in `s` if it is one in the canonical form [`push_addr`] writes; `tmp` is scratch.
pub fn parse_canonical_addr(s: &[u8], tmp: &mut Vec<u8>) -> Option<IpAddr> {
    if s.len() < 2
        || s.len() > 45
        || !s
            .iter()
            .all(|&b| b.is_ascii_hexdigit() || b == b'.' || b == b':')
    {
        return None;
    }
    let a = parse_addr(s)?;
    if a.is_ipv4() && !s.contains(&b':') {
        // [`parse_v4`] accepts only canonical dotted quads (no leading zeros).
        return Some(a);
    }
    tmp.clear();
    push_addr(tmp, a);
    (tmp.as_slice() == s).then_some(a)
}

/// The subnet in `s` if it is one in the canonical form [`push_subnet`] writes; `tmp` is
/// scratch.
pub fn parse_canonical_subnet(s: &[u8], tmp: &mut Vec<u8>) -> Option<(IpAddr, u8)> {
    let slash = s.iter().rposition(|&b| b == b'/')?;
    let a = parse_canonical_addr(&s[..slash], tmp)?;
    let p = &s[slash + 1..];
    if p.is_empty() || p.len() > 3 || !p.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let p = parse_u64(p)?;
    let max = if a.is_ipv4() { 32 } else { 128 };
    if p > max {
        return None;
    }
    tmp.clear();
    push_subnet(tmp, a, p as u8);
    (tmp.as_slice() == s).then_some((a, p as u8))
}

// ---------------------------------------------------------------------------------------------
// Formatting. Everything appends to a `Vec<u8>` without allocating.

const NS_PER_SEC: u64 = 1_000_000_000;

/// Appends an integer.
#[inline]
pub fn push_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends a signed integer.
#[inline]
pub fn push_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends the 9 digits of a nanosecond fraction, dropping trailing zeros below 6 digits
/// (microseconds, as Zeek prints): `486539000` -> `486539`, `486539120` -> `48653912`.
#[inline]
fn push_fraction(out: &mut Vec<u8>, frac: u32) {
    let mut digits = [b'0'; 9];
    let mut f = frac;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (f % 10) as u8;
        f /= 10;
    }
    let mut len = 9;
    while len > 6 && digits[len - 1] == b'0' {
        len -= 1;
    }
    out.extend_from_slice(&digits[..len]);
}

/// Appends nanoseconds as exact decimal seconds with at least 6 fraction digits, as Zeek
/// prints `time` and `interval`: `1258531221486539000` -> `1258531221.486539`,
/// `-1500000000` -> `-1.500000`, `1` -> `0.000000001`.
#[inline]
pub fn push_decimal_ns(out: &mut Vec<u8>, ns: i64) {
    if ns < 0 {
        out.push(b'-');
    }
    let abs = ns.unsigned_abs();
    push_u64(out, abs / NS_PER_SEC);
    out.push(b'.');
    push_fraction(out, (abs % NS_PER_SEC) as u32);
}

/// Appends a double so that it re-reads to the identical `f64`: the shortest round-trip digits
/// without exponent, `.0` after integral values (as Zeek), `inf`, `-inf` and `nan`.
/// Returns `false` (and writes nothing) for non-finite values when `finite_only` is set.
#[inline]
pub fn push_double(out: &mut Vec<u8>, v: f64, finite_only: bool) -> bool {
    if !v.is_finite() {
        if finite_only {
            return false;
        }
        out.extend_from_slice(if v.is_nan() {
            b"nan"
        } else if v > 0.0 {
            b"inf"
        } else {
            b"-inf"
        });
        return true;
    }
    let start = out.len();
    // Display of f64 is the shortest text that parses back to the same value, never exponential.
    let _ = write!(out, "{v}");
    if !out[start..].contains(&b'.') {
        out.extend_from_slice(b".0");
    }
    true
}

/// Appends an IPv4 address in dotted-quad form.
#[inline]
fn push_ipv4(out: &mut Vec<u8>, a: Ipv4Addr) {
    let mut b = itoa::Buffer::new();
    for (i, o) in a.octets().iter().enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        out.extend_from_slice(b.format(*o).as_bytes());
    }
}

/// Appends an address as Zeek prints it (IPv6 in RFC 5952 compressed form).
#[inline]
pub fn push_addr(out: &mut Vec<u8>, a: IpAddr) {
    match a {
        IpAddr::V4(a) => push_ipv4(out, a),
        IpAddr::V6(a) => {
            let _ = write!(out, "{a}");
        }
    }
}

/// Appends a subnet as `addr/prefix`.
#[inline]
pub fn push_subnet(out: &mut Vec<u8>, a: IpAddr, prefix: u8) {
    push_addr(out, a);
    out.push(b'/');
    push_u64(out, prefix as u64);
}

/// The civil date (year, month 1-12, day 1-31) of a day number (days since 1970-01-01), by
/// Howard Hinnant's `civil_from_days`.
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// The day number (days since 1970-01-01) of a civil date, by Howard Hinnant's
/// `days_from_civil`. The date must be valid.
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400); // [0, 399]
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

fn push_2(out: &mut Vec<u8>, v: u32) {
    out.push(b'0' + (v / 10 % 10) as u8);
    out.push(b'0' + (v % 10) as u8);
}

/// Splits nanoseconds since the epoch into (date, seconds of the day, nanosecond fraction).
fn split_time(ns: i64) -> ((i64, u32, u32), u32, u32) {
    let secs = ns.div_euclid(NS_PER_SEC as i64);
    let frac = ns.rem_euclid(NS_PER_SEC as i64) as u32;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400) as u32;
    (civil_from_days(days), sod, frac)
}

fn push_date(out: &mut Vec<u8>, (y, m, d): (i64, u32, u32)) {
    if (0..10_000).contains(&y) {
        let y = y as u32;
        push_2(out, y / 100);
        push_2(out, y % 100);
    } else {
        // Outside RFC 3339's range; i64 nanoseconds never get here (years 1677 to 2262).
        push_i64(out, y);
    }
    out.push(b'-');
    push_2(out, m);
    out.push(b'-');
    push_2(out, d);
}

/// Appends a time as RFC 3339 UTC with at least 6 fraction digits:
/// `2009-11-18T08:00:21.486539Z`.
pub fn push_rfc3339(out: &mut Vec<u8>, ns: i64) {
    let (date, sod, frac) = split_time(ns);
    push_date(out, date);
    out.push(b'T');
    push_2(out, sod / 3600);
    out.push(b':');
    push_2(out, sod / 60 % 60);
    out.push(b':');
    push_2(out, sod % 60);
    out.push(b'.');
    push_fraction(out, frac);
    out.push(b'Z');
}

/// Appends a time as Zeek's `#open`/`#close` stamp, `YYYY-MM-DD-HH-MM-SS` (UTC).
pub fn push_zeek_stamp(out: &mut Vec<u8>, ns: i64) {
    let (date, sod, _) = split_time(ns);
    push_date(out, date);
    for v in [sod / 3600, sod / 60 % 60, sod % 60] {
        out.push(b'-');
        push_2(out, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut v = Vec::new();
        f(&mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn times_in_zeeks_exponent_form_are_exact() {
        // modp_dtoa2 with %.16e: 2^32 seconds, 17 significant digits, negative, tiny.
        assert_eq!(
            parse_ns(b"4.294967296e+09"),
            Some(4_294_967_296_000_000_000)
        );
        assert_eq!(
            parse_ns(b"2.1474836471234567e+09"),
            Some(2_147_483_647_123_456_700)
        );
        assert_eq!(parse_ns(b"-2.5e+09"), Some(-2_500_000_000_000_000_000));
        assert_eq!(parse_ns(b"-2.5e+10"), None); // before 1677: outside i64 nanoseconds
        assert_eq!(parse_ns(b"1e-07"), Some(100));
        assert_eq!(parse_ns(b"1E-07"), Some(100));
        assert_eq!(parse_ns(b"+1e-07"), Some(100));
        // Rounded half to even below the nanosecond, as the decimal form.
        assert_eq!(parse_ns(b"1.0000000005e+00"), parse_ns(b"1.0000000005"));
        assert_eq!(parse_ns(b"1.5e-09"), Some(2));
        assert_eq!(parse_ns(b"-1.5e-09"), Some(-2));
        assert_eq!(
            parse_ns(b"-1.418429426887384e+09"),
            parse_ns(b"-1418429426.887384")
        );
        assert_eq!(parse_ns(b"1e+10000"), None);
    }

    #[test]
    fn times_are_exact() {
        assert_eq!(
            parse_ns(b"1258531221.486539"),
            Some(1_258_531_221_486_539_000)
        );
        assert_eq!(parse_ns(b"-0.000001"), Some(-1_000));
        assert_eq!(parse_ns(b"-5"), Some(-5_000_000_000));
        assert_eq!(parse_ns(b".5"), Some(500_000_000));
        assert_eq!(parse_ns(b"1.0000000005"), Some(1_000_000_000));
        assert_eq!(parse_ns(b"1.0000000015"), Some(1_000_000_002));
        assert_eq!(parse_ns(b"1.00000000051"), Some(1_000_000_001));
        assert_eq!(parse_ns(b"9223372036.854775807"), Some(i64::MAX));
        assert_eq!(parse_ns(b"-9223372036.854775808"), Some(i64::MIN));
        assert_eq!(parse_ns(b"9223372036.854775808"), None);
        for bad in [
            &b""[..],
            b".",
            b"-",
            b"1.2.3",
            b"1 ",
            b"x",
            b"e9",
            b".5e1",
            b"1e",
            b"1e+",
        ] {
            assert_eq!(parse_ns(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn integers_and_addresses() {
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"-"), None);
        assert_eq!(
            parse_v4(b"192.168.1.255"),
            Some(Ipv4Addr::new(192, 168, 1, 255))
        );
        for bad in [
            &b"1.2.3"[..],
            b"1.2.3.4.",
            b"256.1.1.1",
            b"01.1.1.1",
            b"1..2.3",
            b"1234.1.1.1",
        ] {
            assert_eq!(parse_v4(bad), None);
        }
        assert_eq!(
            parse_subnet(b"2001:db8::/32"),
            Some(("2001:db8::".parse().unwrap(), 32))
        );
        assert_eq!(parse_subnet(b"10.0.0.0/33"), None);
    }

    #[test]
    fn swar_digits_match_scalar() {
        for text in [
            &b"12345678"[..],
            b"1234567x",
            b"0",
            b"x",
            b"00000001",
            b"99999999",
            b"1.5\t....",
            b"4865390\t",
            b"7\x3a",
            b"7/",
            b"12\xff",
        ] {
            let mut word = [b'#'; 8];
            word[..text.len()].copy_from_slice(text);
            let w = u64::from_le_bytes(word);
            let n = text.iter().take_while(|c| c.is_ascii_digit()).count();
            assert_eq!(digit_count(w) as usize, n, "{text:?}");
            if n > 0 {
                let want: u64 = std::str::from_utf8(&text[..n]).unwrap().parse().unwrap();
                assert_eq!(digits_value(w, n as u32), want, "{text:?}");
            }
        }
        for t in [
            &b"1258531221.486539\t"[..],
            b"0.163820\tx",
            b"3.780125",
            b"1.5",
            b"12345678.123456789",
            b"123456789.12345678",
            b"1234567890.5",
            b"-0.000001\t",
            b"5.\t",
            b"42",
        ] {
            let end = t.iter().position(|&c| c == b'\t').unwrap_or(t.len());
            assert_eq!(
                parse_ns_prefix(t).map(|(v, n)| (Some(v), n)),
                Some((parse_ns(&t[..end]), end)),
                "{:?}",
                String::from_utf8_lossy(t)
            );
        }
        assert_eq!(parse_ns_prefix(b"12345678901.5"), None);
        assert_eq!(parse_ns_prefix(b"1.1234567891"), None);
    }

    #[test]
    fn decimal_text_to_exact_ns() {
        let cases: &[(&str, Option<i64>)] = &[
            ("1258531221.486539", Some(1_258_531_221_486_539_000)),
            ("1258531221", Some(1_258_531_221_000_000_000)),
            ("-1.5", Some(-1_500_000_000)),
            ("0.0000000005", Some(0)),
            ("0.0000000015", Some(2)),
            ("0.00000000150001", Some(2)),
            ("0.0000000025", Some(2)),
            ("0.00000000249", Some(2)),
            ("1.5e3", Some(1_500_000_000_000)),
            ("15e-10", Some(2)),
            ("1e-30", Some(0)),
            ("0e400", Some(0)),
            ("9223372036.854775807", Some(i64::MAX)),
            ("-9223372036.854775808", Some(i64::MIN)),
            ("9223372036.854775808", None),
            ("1e20", None),
        ];
        for &(t, want) in cases {
            assert_eq!(parse_json_ns(t.as_bytes()), want, "{t}");
        }
    }

    #[test]
    fn eve_times_parse_exactly() {
        // 2011-08-12T12:52:57.716360Z.
        let utc = 1_313_153_577_716_360_000;
        for t in [
            "2011-08-12T14:52:57.716360+0200",
            "2011-08-12T14:52:57.716360+02:00",
            "2011-08-12T10:22:57.716360-0230",
            "2011-08-12T12:52:57.716360Z",
            "2011-08-12T12:52:57.716360",
            "2011-08-12T12:52:57.716360+0000",
        ] {
            assert_eq!(parse_time_text(t.as_bytes()), Some(utc), "{t}");
        }
        assert_eq!(
            parse_time_text(b"2016-01-01T00:00:00"),
            Some(1_451_606_400_000_000_000)
        );
        // RFC 3339 stays strict: inference does not take EVE's forms.
        assert_eq!(parse_rfc3339(b"2011-08-12T14:52:57.716360+0200"), None);
        for bad in [
            "2011-08-12T14:52:57.716360+020",
            "2011-08-12T14:52:57.716360+2400",
            "2011-08-12T14:52:57.716360 +0200",
            "2011-08-12T14:52:5",
            "2011-08-12T14:52:57.",
        ] {
            assert_eq!(parse_time_text(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn rfc3339_parses_exactly() {
        let ok: &[(&str, i64)] = &[
            ("2009-11-18T08:00:21.486539Z", 1_258_531_221_486_539_000),
            ("2009-11-18T08:00:21Z", 1_258_531_221_000_000_000),
            ("2009-11-18T09:00:21.5+01:00", 1_258_531_221_500_000_000),
            ("1969-12-31T23:59:59.999999999Z", -1),
            ("2000-02-29T00:00:00Z", 951_782_400_000_000_000),
            ("1970-01-01T00:00:00.0000000015Z", 2),
            ("1970-01-01T00:00:00.9999999999Z", 1_000_000_000),
        ];
        for &(t, want) in ok {
            assert_eq!(parse_rfc3339(t.as_bytes()), Some(want), "{t}");
        }
        for bad in [
            "2001-02-29T00:00:00Z",
            "2009-11-18T24:00:00Z",
            "2009-11-18 08:00:21Z",
            "2009-11-18T08:00:21",
            "2009-11-18T08:00:21.Z",
            "2009-13-18T08:00:21Z",
            "2009-11-18T08:00:60Z",
            "x009-11-18T08:00:21Z",
        ] {
            assert_eq!(parse_rfc3339(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn addresses_must_be_canonical() {
        let mut tmp = Vec::new();
        assert!(parse_canonical_addr(b"10.0.0.1", &mut tmp).is_some());
        assert!(parse_canonical_addr(b"2001:db8::1", &mut tmp).is_some());
        assert!(parse_canonical_addr(b"2001:0db8::1", &mut tmp).is_none());
        assert!(parse_canonical_addr(b"e8:e7:32:df:62:26", &mut tmp).is_none());
        assert!(parse_canonical_addr(b"1194.62", &mut tmp).is_none());
        assert!(parse_canonical_addr(b"10.0.0.01", &mut tmp).is_none());
        assert!(parse_canonical_addr(b"010.0.0.1", &mut tmp).is_none());
        assert!(parse_canonical_addr(b"::ffff:1.2.3.4", &mut tmp).is_some());
        assert_eq!(
            parse_canonical_subnet(b"10.0.0.0/8", &mut tmp),
            Some(("10.0.0.0".parse().unwrap(), 8))
        );
        assert!(parse_canonical_subnet(b"10.0.0.0/33", &mut tmp).is_none());
        assert!(parse_canonical_subnet(b"10.0.0.0/08", &mut tmp).is_none());
    }
    #[test]
    fn decimal_ns_is_exact_with_six_digits_minimum() {
        let cases: &[(i64, &str)] = &[
            (1_258_531_221_486_539_000, "1258531221.486539"),
            (1_258_531_221_486_539_123, "1258531221.486539123"),
            (1_258_531_221_486_539_120, "1258531221.48653912"),
            (0, "0.000000"),
            (1, "0.000000001"),
            (-1, "-0.000000001"),
            (-1_500_000_000, "-1.500000"),
            (i64::MIN, "-9223372036.854775808"),
            (i64::MAX, "9223372036.854775807"),
        ];
        for &(ns, want) in cases {
            assert_eq!(s(|o| push_decimal_ns(o, ns)), want, "{ns}");
        }
    }

    #[test]
    fn doubles_round_trip_and_look_like_zeek() {
        for (v, want) in [
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (1e21, "1000000000000000000000.0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (5e-324, &format!("{}", 5e-324)),
        ] {
            let text = s(|o| {
                push_double(o, v, false);
            });
            assert_eq!(text, want);
            let back: f64 = text.parse().unwrap();
            assert!(back.to_bits() == v.to_bits() || (v.is_nan() && back.is_nan()));
        }
        let mut o = Vec::new();
        assert!(!push_double(&mut o, f64::NAN, true));
        assert!(o.is_empty());
    }

    #[test]
    fn civil_conversion_round_trips_over_the_i64_range() {
        for days in (-106_752..=106_752).step_by(7) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn rfc3339_and_stamps() {
        assert_eq!(
            s(|o| push_rfc3339(o, 1_258_531_221_486_539_000)),
            "2009-11-18T08:00:21.486539Z"
        );
        assert_eq!(s(|o| push_rfc3339(o, -1)), "1969-12-31T23:59:59.999999999Z");
        assert_eq!(
            s(|o| push_rfc3339(o, i64::MIN)),
            "1677-09-21T00:12:43.145224192Z"
        );
        assert_eq!(
            s(|o| push_zeek_stamp(o, 1_400_868_124_000_000_000)),
            "2014-05-23-18-02-04"
        );
    }

    #[test]
    fn addresses() {
        assert_eq!(
            s(|o| push_addr(o, "192.168.1.102".parse().unwrap())),
            "192.168.1.102"
        );
        assert_eq!(
            s(|o| push_subnet(o, "2001:db8::".parse().unwrap(), 32)),
            "2001:db8::/32"
        );
    }
}
