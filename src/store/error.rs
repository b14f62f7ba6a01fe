//! The error type of the storage engine (segments, WAL, catalog, store).

use std::io;
use std::path::PathBuf;

use crate::size::Size;

/// An error of the storage engine. Every variant names the file (and offset) concerned.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An I/O operation failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`open`, `write`, `rename to ...`).
        action: String,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A segment file failed verification.
    #[error("corrupt segment {}: {reason}", path.display())]
    CorruptSegment {
        /// The segment file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A WAL record in the middle of the log (not a torn last record) is damaged.
    #[error("corrupt write-ahead log {} at offset {offset}: {reason}", path.display())]
    CorruptWal {
        /// The WAL file.
        path: PathBuf,
        /// Byte offset of the damaged record.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The catalog could not be parsed or is inconsistent.
    #[error("corrupt catalog {}: {reason}", path.display())]
    CorruptCatalog {
        /// The catalog file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The maximum segment size is out of range.
    #[error(
        "max segment size {} ({size} bytes) is not supported: {reason}",
        Size(*size)
    )]
    InvalidMaxSegmentSize {
        /// The size requested, in bytes.
        size: u64,
        /// Why it is refused.
        reason: String,
    },
    /// One event is larger than a whole segment may be.
    #[error(
        "event {id} of schema {schema} is {bytes} bytes and cannot fit in a segment of at most {max} bytes; raise --max-segment-size"
    )]
    EventTooLarge {
        /// The event's ID.
        id: u64,
        /// The event's schema name.
        schema: String,
        /// The encoded size of the event.
        bytes: usize,
        /// The maximum segment size.
        max: u64,
    },
    /// Another writer holds the database lock.
    #[error("database {} is locked by another weir import{}", dir.display(), pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Locked {
        /// The database directory.
        dir: PathBuf,
        /// The process holding the lock, when known.
        pid: Option<u32>,
    },
    /// The database directory does not exist.
    #[error("no weir database at {}", dir.display())]
    NoDatabase {
        /// The directory.
        dir: PathBuf,
    },
    /// An earlier operation of this writer failed (e.g. the disk filled up while sealing); the
    /// writer refuses further work. Reopening the database recovers from the WAL.
    #[error("the archive writer failed earlier and must be reopened: {0}")]
    Poisoned(String),
    /// The background writer of an [`crate::store::ArchiveSink`] stopped unexpectedly.
    #[error("the archive writer stopped: {0}")]
    WriterGone(String),
}

impl StoreError {
    /// An I/O error while doing `action` on `path`.
    pub fn io(action: impl Into<String>, path: impl Into<PathBuf>, source: io::Error) -> Self {
        StoreError::Io {
            action: action.into(),
            path: path.into(),
            source,
        }
    }

    /// Whether this error is about damaged data (as opposed to I/O, locking or settings).
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            StoreError::CorruptSegment { .. }
                | StoreError::CorruptWal { .. }
                | StoreError::CorruptCatalog { .. }
        )
    }
}

/// Shorthand for results of the storage engine.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
