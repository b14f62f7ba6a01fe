//! Duration strings: `250ms`, `1s`, `2m`, `1h30m`, as used by `--batch-timeout` and the
//! `timeout` key of pipeline files.
//!
//! # Grammar
//!
//! ```text
//! duration := number unit (number unit)*  |  number
//! number   := digits ["." digits]
//! unit     := "ns" | "us" | "µs" | "ms" | "s" | "m" | "h" | "d"
//! ```
//!
//! - Units are case-sensitive (`m` is minutes, `ms` milliseconds); spaces between a number and
//!   its unit or between parts are allowed (`1 s`, `1m 30s`).
//! - Several parts add up: `1m30s` is 90 seconds. A fraction is allowed in every part
//!   (`1.5s` = 1500 ms); it is computed exactly in integer nanoseconds, and digits below one
//!   nanosecond are refused rather than silently rounded.
//! - A plain number without a unit is a number of **seconds** (`"2"` = 2 s, like `sleep 2`) for
//!   [`parse_duration`]. [`parse_period`], for settings where a wrong guess destroys data
//!   (retention, `weir erase --older-than`), refuses it instead: `--retain 90` meant 90 seconds
//!   and erased a whole archive, where days were meant.
//! - Overflow (more than `u64::MAX` nanoseconds, about 584 years), an empty string, a missing
//!   number, and an unknown unit are errors that quote the offending text.

use std::time::Duration;

/// A duration string that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {text:?}: {reason}")]
pub struct DurationError {
    /// The text as given.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Units and their length in nanoseconds, longest spelling first so that `ms` wins over `m`.
const UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("d", 86_400_000_000_000),
];

const EXPECTED: &str =
    "expected a number and a unit (ns, us, ms, s, m, h, d), e.g. \"250ms\", \"1s\" or \"1m30s\"";

/// What [`parse_period`] says of a number without a unit.
const PERIOD_NEEDS_UNIT: &str =
    "a number without a unit is refused here (seconds or days?); write the unit (s, m, h, d), e.g. \"90d\", \"12h\" or \"30m\"";

/// What a number without a unit means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plain {
    /// Seconds ([`parse_duration`]).
    Seconds,
    /// Nothing: it is refused ([`parse_period`]).
    Refused,
}

/// Parses a duration string (see the [module docs](self) for the grammar).
///
/// ```
/// use std::time::Duration;
/// use weir::unstable::duration::parse_duration;
/// assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
/// assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
/// assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
/// assert!(parse_duration("1 fortnight").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    parse(text, Plain::Seconds)
}

/// Parses a duration that must have a unit: a retention period (`--retain 90d`,
/// `retain = "90d"`) or an age (`weir erase --older-than 7d`). A plain number, which
/// [`parse_duration`] reads as seconds, is refused with the units there are.
///
/// ```
/// use std::time::Duration;
/// use weir::unstable::duration::parse_period;
/// assert_eq!(parse_period("90d").unwrap(), Duration::from_secs(90 * 86400));
/// assert!(parse_period("90").unwrap_err().to_string().contains("(s, m, h, d)"));
/// ```
pub fn parse_period(text: &str) -> Result<Duration, DurationError> {
    parse(text, Plain::Refused)
}

fn parse(text: &str, plain: Plain) -> Result<Duration, DurationError> {
    let err = |reason: &str| DurationError {
        text: text.to_string(),
        reason: reason.to_string(),
    };
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(err(&format!("empty; {EXPECTED}")));
    }
    let mut total: u64 = 0;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..digits];
        if number.is_empty() {
            return Err(err(&format!("missing number before {rest:?}; {EXPECTED}")));
        }
        rest = rest[digits..].trim_start();
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.' || c.is_whitespace())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        let scale = if unit.is_empty() {
            if parts > 0 || !rest.is_empty() {
                return Err(err(&format!("missing unit after {number:?}; {EXPECTED}")));
            }
            if plain == Plain::Refused {
                return Err(err(PERIOD_NEEDS_UNIT));
            }
            1_000_000_000 // a plain number is seconds
        } else {
            match UNITS.iter().find(|(name, _)| *name == unit) {
                Some((_, scale)) => *scale,
                None => return Err(err(&format!("unknown unit {unit:?}; {EXPECTED}"))),
            }
        };
        rest = rest[unit_len..].trim_start();
        let nanos = scaled(number, scale).map_err(|reason| err(&reason))?;
        total = total
            .checked_add(nanos)
            .ok_or_else(|| err("too large (at most about 584 years)"))?;
        parts += 1;
    }
    Ok(Duration::from_nanos(total))
}

/// Formats a duration in its largest exact unit, which [`parse_duration`] reads back: `90d`,
/// `90m`, `250ms`, `0s`.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(weir::unstable::duration::format_duration(Duration::from_secs(90 * 86_400)), "90d");
/// assert_eq!(weir::unstable::duration::format_duration(Duration::from_millis(1500)), "1500ms");
/// ```
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    // Longest unit first: the table is in increasing order.
    match UNITS
        .iter()
        .rev()
        .find(|(name, scale)| *name != "µs" && ns != 0 && ns.is_multiple_of(u128::from(*scale)))
    {
        Some((name, scale)) => format!("{}{name}", ns / u128::from(*scale)),
        None => "0s".to_string(),
    }
}

/// `number * scale` exactly, for a decimal `number` (`12`, `1.5`).
fn scaled(number: &str, scale: u64) -> Result<u64, String> {
    let (int, frac) = match number.split_once('.') {
        Some((int, frac)) => (int, frac),
        None => (number, ""),
    };
    if frac.contains('.') || (int.is_empty() && frac.is_empty()) {
        return Err(format!("{number:?} is not a number; {EXPECTED}"));
    }
    let too_large = || "too large (at most about 584 years)".to_string();
    let int: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| too_large())?
    };
    let mut nanos = int.checked_mul(scale).ok_or_else(too_large)?;
    // The fraction: digits beyond the unit's nanosecond resolution must be zero.
    let mut place = scale;
    for digit in frac.bytes() {
        let d = u64::from(digit - b'0');
        if place < 10 {
            if d != 0 {
                return Err(format!("{number:?} is finer than one nanosecond"));
            }
            continue;
        }
        place /= 10;
        nanos = nanos.checked_add(d * place).ok_or_else(too_large)?;
    }
    Ok(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        let d = |s| parse_duration(s).unwrap();
        assert_eq!(d("500ns"), Duration::from_nanos(500));
        assert_eq!(d("500us"), Duration::from_micros(500));
        assert_eq!(d("500µs"), Duration::from_micros(500));
        assert_eq!(d("250ms"), Duration::from_millis(250));
        assert_eq!(d("1s"), Duration::from_secs(1));
        assert_eq!(d("2m"), Duration::from_secs(120));
        assert_eq!(d("1h"), Duration::from_secs(3600));
        assert_eq!(d("1d"), Duration::from_secs(86400));
        assert_eq!(d("0s"), Duration::ZERO);
    }

    #[test]
    fn compound_fractions_and_plain_numbers() {
        let d = |s| parse_duration(s).unwrap();
        assert_eq!(d("1m30s"), Duration::from_secs(90));
        assert_eq!(d(" 1m 30s "), Duration::from_secs(90));
        assert_eq!(d("1 s"), Duration::from_secs(1));
        assert_eq!(d("1.5s"), Duration::from_millis(1500));
        assert_eq!(d(".25s"), Duration::from_millis(250));
        assert_eq!(d("0.000000001s"), Duration::from_nanos(1));
        assert_eq!(d("2"), Duration::from_secs(2));
        assert_eq!(d("0.5"), Duration::from_millis(500));
    }

    #[test]
    fn errors_quote_the_text() {
        for bad in [
            "",
            "s",
            "1x",
            "1 fortnight",
            "1.2.3s",
            "1m30",
            "30 1m",
            "-1s",
            ".s",
            "1.5ns",
            "99999999999999999999s",
            "600000d",
        ] {
            let e = parse_duration(bad).unwrap_err();
            assert_eq!(e.text, bad);
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!("invalid duration {bad:?}: ")),
                "{msg}"
            );
        }
        let e = parse_duration("1fortnight").unwrap_err();
        assert!(e.reason.contains("unknown unit \"fortnight\""), "{e}");
    }

    #[test]
    fn periods_need_a_unit() {
        assert_eq!(
            parse_period("90d").unwrap(),
            Duration::from_secs(90 * 86_400)
        );
        assert_eq!(parse_period("1h30m").unwrap(), Duration::from_secs(5400));
        for bad in ["90", " 90 ", "1.5", "0"] {
            let e = parse_period(bad).unwrap_err();
            assert_eq!(e.text, bad);
            assert!(e.reason.contains("without a unit"), "{e}");
            assert!(e.reason.contains("(s, m, h, d)"), "{e}");
        }
        // Other mistakes are reported as by parse_duration.
        assert_eq!(
            parse_period("1 fortnight").unwrap_err(),
            parse_duration("1 fortnight").unwrap_err()
        );
    }

    proptest::proptest! {
        #[test]
        fn parts_add_up(h in 0u64..1000, m in 0u64..1000, sec in 0u64..1000, ms in 0u64..1000, us in 0u64..1000) {
            let text = format!("{h}h{m}m {sec}s{ms}ms {us}us");
            let expected = Duration::from_secs(h * 3600 + m * 60 + sec)
                + Duration::from_millis(ms)
                + Duration::from_micros(us);
            proptest::prop_assert_eq!(parse_duration(&text).unwrap(), expected);
        }

        #[test]
        fn nanoseconds_round_trip(n in 0u64..u64::MAX) {
            proptest::prop_assert_eq!(parse_duration(&format!("{n}ns")).unwrap(), Duration::from_nanos(n));
        }

        #[test]
        fn never_panics(text in "[0-9.a-zµ ]{0,12}") {
            if let Err(e) = parse_duration(&text) {
                proptest::prop_assert_eq!(e.text, text);
            }
        }
    }
}
