//! Threat intelligence: indicator sets stored in the archive directory, the readers of the
//! formats feeds publish them in, the match table, and retro matching.
//!
//! - [`indicator`]: one indicator (value, [`IndicatorType`], metadata, expiry), canonical.
//! - [`set`]: a named, versioned [`IndicatorSet`] and its file.
//! - [`read`], [`stix`]: Zeek Intel files, CSV, plain lists, STIX 2.1 bundles; [`input`]:
//!   their options, report and errors.
//! - [`matcher`]: the match table ([`matcher::target`]) and the [`Matcher`], which tests
//!   the rows of a batch exactly against a set's hash tables (also what live matching will
//!   call on each batch before it commits).
//! - [`retro`]: a set against the archive in one pruned search ([`retro::retro_match`]).
//!
//! # The set file (format 2)
//!
//! Set `NAME` of the archive `DIR` is the file `DIR/intel/NAME.json`: JSON lines, each line
//! one compact JSON object ended by `\n`:
//!
//! ```text
//! {"format":2,"name":"feed","version":3,"count":2}
//! {"value":"10.0.0.1","type":"addr","meta":{"source":"acme","description":"C2","confidence":80},"valid_until":1767225600000000000}
//! {"value":"evil.example","type":"domain"}
//! {"checksum":"1c291ca3"}
//! ```
//!
//! - The header comes first and begins `{"format":2,` exactly (the format is told by those
//!   bytes). `name` equals the file's name (letters, digits, `_ - .`, starting with a letter
//!   or digit, at most 100). `count` is the number of indicator lines that follow.
//! - `version` counts the changes: the first store writes 1, each later one the previous
//!   plus one (`weir intel add` that changes nothing writes nothing).
//! - One indicator a line, sorted by type then value, each (type, value) once, values in
//!   their canonical form ([`IndicatorType::normalize`]); `meta` and its members and
//!   `valid_until` (nanoseconds since the epoch; the indicator no longer matches from then
//!   on) are optional.
//! - The last line is the checksum: the CRC-32 (IEEE, 8 hex digits) of every byte before it
//!   (the header and indicator lines with their newlines). A file whose bytes do not give
//!   it, that ends before it (torn) or that has anything after it is refused as damaged,
//!   naming the file and line: a torn or edited file is never read as a smaller set.
//! - Read a line at a time (each indicator parsed from its own line, the checksum over the
//!   bytes as read) and written in one pass the same way: neither side holds the text whole.
//! - The file is replaced atomically (`crate::fs::write_atomic`: a temporary file in the same
//!   directory, fsynced, renamed over the old one, the directory fsynced), so a reader, also
//!   after a crash or a failed write, sees the previous version or the new one whole. Two
//!   writers of the same set at once are not serialized: the last rename wins.
//!
//! **Format 1** (written before 2026-12-07; still read, never written; the oldest format
//! read is [`set::OLDEST_SET_FORMAT`], and `tests/fixtures/intel-set-v1` keeps such a file):
//! one JSON object on one line, `{"format":1,"name":…,"version":…,"checksum":…,
//! "indicators":[…]}`, the checksum the CRC-32 of the compact JSON of `indicators` as weir
//! serializes them. It was parsed through one streaming JSON reader and re-serialized for
//! its checksum: a million indicators took 1.5 s to load; format 2 takes a third of that
//! (docs/dev/performance-log.md). A set stored again is written in format 2.

pub mod indicator;
pub mod input;
pub mod matcher;
pub mod read;
pub mod retro;
pub mod set;
pub mod stix;

use std::path::PathBuf;

pub use indicator::{Indicator, IndicatorRef, IndicatorType, Meta, MetaRef};
pub use input::{IntelFormat, ReadOptions, ReadReport};
pub use matcher::Matcher;
pub use read::{read_indicators, read_indicators_from};
pub use retro::{retro_match, RetroStats, Sighting};
pub use set::{AddReport, Adder, IndicatorSet};

/// What went wrong with an indicator set or an indicator file.
#[derive(Debug, thiserror::Error)]
pub enum IntelError {
    /// A bad line or value of an indicator file.
    #[error("{file}:{line}: {value:?}: {message}")]
    Input {
        /// The file.
        file: String,
        /// The line (from 1).
        line: usize,
        /// The value (or the line) at fault.
        value: String,
        /// What is wrong.
        message: String,
    },
    /// A plain list read without a type.
    #[error("{file}: a list of values needs --type (addr, subnet, domain, url, file_hash, cert_hash, software, user_name, email)")]
    NoType {
        /// The file.
        file: String,
    },
    /// A set name that cannot name a file.
    #[error("{name:?} is not a set name: 1 to 100 letters, digits, `_`, `-` or `.`, starting with a letter or digit")]
    SetName {
        /// The name.
        name: String,
    },
    /// A set file that cannot be read as one.
    #[error("{}: damaged indicator set: {message}", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A set that cannot be serialized.
    #[error("cannot serialize indicator set {name}: {message}")]
    Encode {
        /// The set.
        name: String,
        /// Why.
        message: String,
    },
    /// A file operation failed.
    #[error(transparent)]
    Fs(#[from] crate::fs::FsError),
}
