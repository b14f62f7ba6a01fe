//! The error type of the store: its own failures, and those of the layers below it (file
//! system, segments, write-ahead log), wrapped with their message and source chain intact.

use std::io;
use std::path::PathBuf;

use crate::fs::FsError;
use crate::segment::SegmentError;
use crate::wal::WalError;

/// An error of the storage engine. Every variant names the file (and offset) or the value
/// concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// An I/O operation of the store itself (lock, catalog, directories) failed.
    #[error(transparent)]
    Io(#[from] FsError),
    /// A segment could not be read, verified, built or written (including an unsupported
    /// maximum segment size).
    #[error(transparent)]
    Segment(#[from] SegmentError),
    /// The write-ahead log could not be read or written, is damaged, or does not follow the
    /// catalog.
    #[error(transparent)]
    Wal(#[from] WalError),
    /// The catalog could not be parsed or is inconsistent.
    #[error("corrupt catalog {}: {reason}", path.display())]
    CorruptCatalog {
        /// The catalog file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The catalog is not valid JSON (or could not be serialized).
    #[error("corrupt catalog {}: {context}: {source}", path.display())]
    CatalogJson {
        /// The catalog file.
        path: PathBuf,
        /// What failed: `invalid JSON` or `cannot serialize`.
        context: &'static str,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A segment file that the catalog does not list holds events that writing would
    /// overwrite in the ID space; the file is kept untouched.
    #[error("segment {} is not in the catalog: {reason}", path.display())]
    Unlisted {
        /// The segment file.
        path: PathBuf,
        /// What it holds and what to do.
        reason: String,
    },
    /// The write-ahead log is missing or its header is unreadable, but the file of an active
    /// segment holds rows that were written for it: acknowledged events that no log names.
    /// The writer refuses to open (it would assign their IDs again and remove the file);
    /// the file is kept untouched.
    #[error("active segment file {} holds rows of acknowledged events but {reason}; the file is kept: run `weir verify --repair`", path.display())]
    OrphanedActiveSegment {
        /// The active segment's file (`segments/.<uuid>.seg.tmp`).
        path: PathBuf,
        /// What is wrong with the log.
        reason: String,
    },
    /// Event IDs are u64: a batch that would take IDs past `u64::MAX` is refused before
    /// anything is written (the archive stays as it was).
    #[error("event ID space exhausted: a batch of {events} events cannot start at ID {next_id} (IDs end at {})", u64::MAX)]
    IdOverflow {
        /// The ID the batch would start at.
        next_id: u64,
        /// The events of the batch.
        events: u64,
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
    /// The checkpoints of the followed files that every segment records (format 8) leave no
    /// room in a segment for one more event.
    #[error(
        "the checkpoints of {files} files read (how far each is imported) take {bytes} bytes of every segment, which leaves no room for event {id} ({event} bytes) in a segment of at most {max} bytes; raise --max-segment-size"
    )]
    NoRoomBesideCheckpoints {
        /// The followed files.
        files: usize,
        /// Their checkpoints' encoded size.
        bytes: usize,
        /// The event's ID.
        id: u64,
        /// The encoded size of the event.
        event: usize,
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
    /// The writer's directory exists and holds files, but none of a weir archive (no
    /// `catalog.json`, `wal`, `segments/` or `LOCK`): it is refused before anything in it is
    /// touched (the writer removes `.*.tmp` files of an archive).
    #[error("{} is not a weir archive: it holds {found} but no catalog.json, wal or segments/; choose a new or empty directory", dir.display())]
    NotAnArchive {
        /// The directory.
        dir: PathBuf,
        /// Some of the entries found, e.g. `"notes.txt", ".x.tmp"`.
        found: String,
    },
    /// A reader was pointed at a directory that holds none of a weir archive's files
    /// (`catalog.json`, `wal`, `segments/`, `LOCK`).
    #[error("{} is not a weir archive (no catalog.json, wal or segments/)", dir.display())]
    NoArchive {
        /// The directory.
        dir: PathBuf,
    },
    /// An earlier operation of this writer failed (e.g. the disk filled up while sealing); the
    /// writer refuses further work. Reopening the database recovers from the WAL. Holds the
    /// message of that earlier error: the error itself went to the call that met it.
    #[error("the archive writer failed earlier and must be reopened: {0}")]
    Poisoned(String),
    /// The checkpoints of followed files do not fit in the segment being sealed (room is kept
    /// for them as batches arrive, so this means a bug; nothing was written).
    #[error("the checkpoints of {files} followed files ({bytes} bytes) do not fit in segment of at most {max} bytes")]
    CheckpointsTooLarge {
        /// Number of followed files.
        files: usize,
        /// Their encoded size.
        bytes: usize,
        /// The maximum segment size.
        max: u64,
    },
    /// A followed import would start from the archive's checkpoints, but they are lost (see
    /// [`crate::store::catalog`]'s `checkpoints_lost`).
    #[error("the checkpoints of followed files in {} are lost (`weir verify --repair` could not rebuild them), so following would import again what the archive holds: choose --from-start (read every matching file from byte 0) or --from-end (skip what the files hold now, follow new lines only); in a pipeline, set `from = \"start\"` or `from = \"end\"` in the file source", dir.display())]
    CheckpointsLost {
        /// The database directory.
        dir: PathBuf,
    },
    /// The background writer of an [`crate::store::ArchiveSink`] stopped unexpectedly.
    #[error("the archive writer stopped: {0}")]
    WriterGone(String),
    /// The commit hook of an [`crate::store::ArchiveSink`] (live matching) failed on a batch;
    /// nothing of the batch's group was committed.
    #[error("live matching failed before a commit: {0}")]
    Hook(String),
    /// The background writer thread of an [`crate::store::ArchiveSink`] could not be started.
    #[error("the archive writer stopped: cannot start the writer thread: {0}")]
    WriterSpawn(#[source] io::Error),
}

impl StoreError {
    /// An I/O error while doing `action` on `path`.
    pub fn io(action: impl Into<String>, path: impl Into<PathBuf>, source: io::Error) -> Self {
        StoreError::Io(FsError::new(action, path, source))
    }

    /// Whether this error is about damaged data (as opposed to I/O, locking or settings).
    pub fn is_corruption(&self) -> bool {
        match self {
            StoreError::Segment(e) => e.is_corruption(),
            StoreError::Wal(e) => e.is_corruption(),
            StoreError::CorruptCatalog { .. }
            | StoreError::CatalogJson { .. }
            | StoreError::Unlisted { .. }
            | StoreError::OrphanedActiveSegment { .. } => true,
            _ => false,
        }
    }
}

/// Shorthand for results of the storage engine.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
