//! Byte sizes as given on the command line: `--max-segment-size 512MiB`.
//!
//! A size is an unsigned integer followed by an optional unit (case-insensitive, optional space):
//!
//! | unit | factor |
//! |---|---|
//! | none | MiB (2^20), as VAST's `--max-segment-size` |
//! | `B` | 1 |
//! | `K`, `KiB` | 2^10 |
//! | `M`, `MiB` | 2^20 |
//! | `G`, `GiB` | 2^30 |
//! | `T`, `TiB` | 2^40 |
//! | `KB`, `MB`, `GB`, `TB` | 10^3, 10^6, 10^9, 10^12 (SI) |
//!
//! Fractions are not accepted (write `1536MiB`, not `1.5GiB`); overflow is an error.
//!
//! [`parse_size_with_unit`], for the disk budget of retention (`--max-archive-size`,
//! `max_archive_size`), refuses a number without a unit: there a wrong guess erases data.

use std::fmt;

/// A size string that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid size {input:?}: {reason}")]
pub struct SizeError {
    /// The text given.
    pub input: String,
    /// What is wrong with it, and what is expected.
    pub reason: String,
}

/// The units, for messages.
const UNITS: &str = "B, K or KiB, M or MiB, G or GiB, T or TiB, KB, MB, GB, TB";

/// What a number without a unit means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plain {
    /// MiB ([`parse_size`]).
    Mib,
    /// Nothing: it is refused ([`parse_size_with_unit`]).
    Refused,
}

/// Parses a size such as `512MiB`, `1GiB`, `4096KiB`, `100` (= 100 MiB) into bytes.
///
/// ```
/// assert_eq!(weir::unstable::size::parse_size("1GiB").unwrap(), 1 << 30);
/// assert_eq!(weir::unstable::size::parse_size("128").unwrap(), 128 << 20);
/// ```
pub fn parse_size(input: &str) -> Result<u64, SizeError> {
    parse(input, Plain::Mib)
}

/// Parses a size that must have a unit (`500GiB`): the disk budget of retention. A plain
/// number, which [`parse_size`] reads as MiB, is refused with the units there are.
///
/// ```
/// assert_eq!(weir::unstable::size::parse_size_with_unit("2GiB").unwrap(), 2 << 30);
/// assert!(weir::unstable::size::parse_size_with_unit("500").is_err());
/// ```
pub fn parse_size_with_unit(input: &str) -> Result<u64, SizeError> {
    parse(input, Plain::Refused)
}

fn parse(input: &str, plain: Plain) -> Result<u64, SizeError> {
    let expected = match plain {
        Plain::Mib => "expected e.g. 512MiB, 1GiB, 4096KiB; a plain number means MiB",
        Plain::Refused => "expected e.g. 500GiB, 512MiB or 100GB",
    };
    let err = |reason: &str| SizeError {
        input: input.to_string(),
        reason: format!("{reason} ({expected}; units: {UNITS})"),
    };
    let s = input.trim();
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(err("no number"));
    }
    let number: u64 = s[..digits].parse().map_err(|_| err("number too large"))?;
    let unit = s[digits..].trim_start();
    let factor: u64 = match unit.to_ascii_lowercase().as_str() {
        "" if plain == Plain::Refused => {
            return Err(err("a number without a unit is refused here"))
        }
        "" | "m" | "mib" => 1 << 20,
        "b" => 1,
        "k" | "kib" => 1 << 10,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ if unit.starts_with('.') => return Err(err("fractions are not supported")),
        _ => return Err(err(&format!("unknown unit {unit:?}"))),
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| err("size overflows 64 bits"))
}

/// Formats a byte count with a binary unit for messages: `1.0 GiB`, `512.0 KiB`, `17 B`.
pub fn format_size(bytes: u64) -> String {
    Size(bytes).to_string()
}

/// A byte count that displays with a binary unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Size(pub u64);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
        if self.0 < 1024 {
            return write!(f, "{} B", self.0);
        }
        let mut v = self.0 as f64 / 1024.0;
        let mut unit = 0;
        while v >= 1024.0 && unit + 1 < UNITS.len() {
            v /= 1024.0;
            unit += 1;
        }
        write!(f, "{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_size("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("4096KiB").unwrap(), 4 << 20);
        assert_eq!(parse_size("1024").unwrap(), 1 << 30);
        assert_eq!(parse_size("2 gib").unwrap(), 2 << 30);
        assert_eq!(parse_size("100B").unwrap(), 100);
        assert_eq!(parse_size("3MB").unwrap(), 3_000_000);
        assert_eq!(parse_size("1k").unwrap(), 1024);
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            "MiB",
            "1.5GiB",
            "12XB",
            "-1",
            "99999999999999999999",
            "20000000TiB",
        ] {
            let e = parse_size(bad).unwrap_err();
            assert!(e.to_string().contains("invalid size"), "{bad}: {e}");
        }
    }

    #[test]
    fn budgets_need_a_unit() {
        assert_eq!(parse_size_with_unit("500GiB").unwrap(), 500 << 30);
        assert_eq!(parse_size_with_unit("1 tb").unwrap(), 1_000_000_000_000);
        for bad in ["500", " 7 ", "0"] {
            let e = parse_size_with_unit(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("invalid size {bad:?}: ")), "{e}");
            assert!(e.contains("without a unit"), "{e}");
            assert!(e.contains(UNITS), "{e}");
        }
        // The plain parser still reads MiB, and names the units when refusing.
        assert_eq!(parse_size("500").unwrap(), 500 << 20);
        assert!(parse_size("1x").unwrap_err().to_string().contains(UNITS));
    }

    #[test]
    fn formats() {
        assert_eq!(format_size(17), "17 B");
        assert_eq!(format_size(1 << 30), "1.0 GiB");
        assert_eq!(format_size(1536 << 10), "1.5 MiB");
    }
}
