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

use std::fmt;

/// A size string that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid size {input:?}: {reason} (expected e.g. 512MiB, 1GiB, 4096KiB; a plain number means MiB)")]
pub struct SizeError {
    /// The text given.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Parses a size such as `512MiB`, `1GiB`, `4096KiB`, `100` (= 100 MiB) into bytes.
///
/// ```
/// assert_eq!(weir::size::parse_size("1GiB").unwrap(), 1 << 30);
/// assert_eq!(weir::size::parse_size("128").unwrap(), 128 << 20);
/// ```
pub fn parse_size(input: &str) -> Result<u64, SizeError> {
    let err = |reason: &str| SizeError {
        input: input.to_string(),
        reason: reason.to_string(),
    };
    let s = input.trim();
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(err("no number"));
    }
    let number: u64 = s[..digits].parse().map_err(|_| err("number too large"))?;
    let unit = s[digits..].trim_start();
    let factor: u64 = match unit.to_ascii_lowercase().as_str() {
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
    fn formats() {
        assert_eq!(format_size(17), "17 B");
        assert_eq!(format_size(1 << 30), "1.0 GiB");
        assert_eq!(format_size(1536 << 10), "1.5 MiB");
    }
}
