//! What the readers of indicator files ([`super::read`], [`super::stix`]) take and give:
//! the format, the options, the report, and their positioned errors.

use crate::error::OnError;

use super::indicator::{Indicator, IndicatorType};
use super::IntelError;

/// The format of an indicator file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntelFormat {
    /// Zeek's Intel framework: tab-separated, a `#fields` line naming `indicator`,
    /// `indicator_type` and optional `meta.source`, `meta.desc`, ... columns.
    Zeek,
    /// CSV with a header `indicator,type[,source,description,confidence,valid_until]`.
    Csv,
    /// One value per line (`#` comments and blank lines ignored); the type from `--type`.
    List,
    /// A STIX 2.1 bundle (JSON).
    Stix,
}

impl IntelFormat {
    /// The format of a name: `zeek`, `csv`, `list`, `stix`.
    pub fn from_name(name: &str) -> Option<IntelFormat> {
        match name {
            "zeek" => Some(IntelFormat::Zeek),
            "csv" => Some(IntelFormat::Csv),
            "list" => Some(IntelFormat::List),
            "stix" => Some(IntelFormat::Stix),
            _ => None,
        }
    }

    /// Guesses the format of a file's text: `{` first is STIX, `#` Zeek, a first line starting
    /// `indicator,` CSV, anything else a list.
    pub fn detect(text: &str) -> IntelFormat {
        let first = text.lines().map(str::trim).find(|l| !l.is_empty());
        match first {
            Some(l) if l.starts_with('{') => IntelFormat::Stix,
            Some(l) if l.starts_with("#fields") || l.starts_with("#separator") => IntelFormat::Zeek,
            Some(l) if l.to_ascii_lowercase().starts_with("indicator,") => IntelFormat::Csv,
            _ => IntelFormat::List,
        }
    }
}

/// How indicator files are read.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// The format; `None`: [`IntelFormat::detect`].
    pub format: Option<IntelFormat>,
    /// The type of a list's values (required for a list), and of CSV rows without one.
    pub kind: Option<IndicatorType>,
    /// Fail at the first bad line, or skip it.
    pub on_error: OnError,
    /// The expiry of indicators that have none of their own (ns since the epoch).
    pub valid_until: Option<i64>,
}

/// What a file held.
#[derive(Debug, Default)]
pub struct ReadReport {
    /// The indicators read.
    pub indicators: Vec<Indicator>,
    /// The bad lines skipped (`--on-error skip`).
    pub skipped: Vec<IntelError>,
    /// STIX indicators whose pattern weir does not match (each with its id and why).
    pub unsupported: Vec<String>,
}

impl ReadReport {
    /// Handles a bad line as `on_error` says.
    pub(crate) fn bad(&mut self, on_error: OnError, e: IntelError) -> Result<(), IntelError> {
        match on_error {
            OnError::Fail => Err(e),
            OnError::Skip => {
                self.skipped.push(e);
                Ok(())
            }
        }
    }

    /// Adds an indicator, with the default expiry if it has none.
    pub(crate) fn push(&mut self, mut i: Indicator, options: &ReadOptions) {
        if i.valid_until.is_none() {
            i.valid_until = options.valid_until;
        }
        self.indicators.push(i);
    }
}

/// A positioned error of an indicator file.
pub(crate) fn input_error(
    file: &str,
    line: usize,
    value: &str,
    message: impl Into<String>,
) -> IntelError {
    IntelError::Input {
        file: file.to_string(),
        line,
        value: value.to_string(),
        message: message.into(),
    }
}

/// A time in RFC 3339 (`2026-01-01T00:00:00Z`), a date, or epoch seconds.
pub(crate) fn parse_until(text: &str) -> Option<i64> {
    if let Some(t) = crate::codec::zeek::scalar::parse_time_text(text.as_bytes()) {
        return Some(t);
    }
    if let Some(t) = crate::query::literal::parse_time(text) {
        return Some(t);
    }
    let secs: f64 = text.parse().ok()?;
    let ns = secs * 1e9;
    (ns.is_finite() && ns.abs() < 9.2e18).then_some(ns as i64)
}
