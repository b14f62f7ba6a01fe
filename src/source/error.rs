//! The errors of the source side: opening and reading inputs, expanding glob patterns, and
//! parsing the names of compressions and formats.

use std::io;

/// An error opening a source or expanding a glob pattern into files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// A glob pattern is malformed.
    #[error("bad glob pattern {pattern:?}: {message}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// Where in the pattern (character index) the problem is.
        position: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A glob pattern matched no file.
    #[error("no file matches {pattern:?}")]
    NoMatch {
        /// The pattern.
        pattern: String,
    },
    /// An object storage URL is bad, matched no object, or could not be listed or read.
    #[error(transparent)]
    Object(#[from] crate::object::ObjectError),
    /// A file could not be opened or read (also a directory that a glob walked into).
    #[error("cannot read {name}: {error}")]
    Io {
        /// The source's name: its path, or `<stdin>`, or the name it was given.
        name: String,
        /// The I/O error.
        #[source]
        error: io::Error,
    },
}
