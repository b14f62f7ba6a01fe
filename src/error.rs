//! Errors shared by the readers: where bad input is, and what to do about it.

use std::fmt;

use crate::setting::{Choice, ChoiceName};

/// What a reader does with a row it cannot parse (`--on-error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// Stop with the error (the default).
    #[default]
    Fail,
    /// Drop the row, count it, and keep the first few errors for a report at the end.
    Skip,
}

impl Choice for OnError {
    const WHAT: &'static str = "--on-error";
    const CHOICES: &'static [ChoiceName<OnError>] = &[
        ChoiceName::new("fail", OnError::Fail, "stop at the first bad row (exit 1)"),
        ChoiceName::new(
            "skip",
            OnError::Skip,
            "drop bad rows; report their count and the first few at the end",
        ),
    ];
}

crate::choice!(OnError);

/// How many characters of offending input an error message quotes.
pub const QUOTE_LIMIT: usize = 80;

/// Quotes offending input for an error message: lossy UTF-8, escaped, truncated.
pub fn quote(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out: String = text
        .chars()
        .take(QUOTE_LIMIT)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().count() > QUOTE_LIMIT {
        out.push('…');
    }
    format!("\"{out}\"")
}

/// Bad input: which source, which line, which field, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// The source's name: a file path, or `<stdin>`.
    pub source_name: String,
    /// 1-based line number in the (decompressed) source.
    pub line: u64,
    /// The field being parsed, when the error is about one value.
    pub field: Option<String>,
    /// What was wrong, including the offending text (quoted with [`quote`]).
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.source_name, self.line)?;
        if let Some(field) = &self.field {
            write!(f, "field {field}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// An error while reading a source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Bad input.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The source could not be read.
    #[error("cannot read {source_name}: {error}")]
    Io {
        /// The source's name.
        source_name: String,
        /// The I/O error.
        #[source]
        error: std::io::Error,
    },
}

impl From<std::io::Error> for ReadError {
    /// An I/O error from a codec adapter, which does not know the source name.
    fn from(error: std::io::Error) -> ReadError {
        ReadError::Io {
            source_name: "input".into(),
            error,
        }
    }
}

/// Rows a reader dropped under [`OnError::Skip`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkipReport {
    /// How many rows were dropped.
    pub skipped: u64,
    /// The first few errors (at most [`SkipReport::KEEP`]).
    pub first: Vec<ParseError>,
}

impl SkipReport {
    /// How many errors a report keeps.
    pub const KEEP: usize = 5;

    /// Counts a dropped row.
    pub fn record(&mut self, e: ParseError) {
        self.skipped += 1;
        if self.first.len() < Self::KEEP {
            self.first.push(e);
        }
    }

    /// Adds another report's counts.
    pub fn merge(&mut self, other: &SkipReport) {
        self.skipped += other.skipped;
        for e in &other.first {
            if self.first.len() < Self::KEEP {
                self.first.push(e.clone());
            }
        }
    }
}
