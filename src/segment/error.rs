//! The error type of segments: reading, verifying, building and writing them.

use std::path::{Path, PathBuf};

use crate::fs::FsError;
use crate::size::Size;

/// An error of a segment. Every variant names the file or the value concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SegmentError {
    /// An I/O operation on a segment file failed.
    #[error(transparent)]
    Io(#[from] FsError),
    /// A segment file failed verification.
    #[error("corrupt segment {}: {reason}", path.display())]
    Corrupt {
        /// The segment file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A segment file is not a valid FlatBuffer of the segment schema.
    #[error("corrupt segment {}: flatbuffer verification failed: {source}", path.display())]
    Verification {
        /// The segment file.
        path: PathBuf,
        /// What the FlatBuffers verifier found.
        #[source]
        source: flatbuffers::InvalidFlatbuffer,
    },
    /// The maximum segment size is out of range (or, with a reason starting `internal:`, the
    /// builder's accounting failed, which should not happen).
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
}

impl SegmentError {
    /// An I/O error while doing `action` on `path`.
    pub fn io(action: impl Into<String>, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        SegmentError::Io(FsError::new(action, path, source))
    }

    /// Damage found in the segment file at `path`.
    pub(crate) fn corrupt(path: &Path, reason: impl Into<String>) -> Self {
        SegmentError::Corrupt {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }

    /// Whether this error is about damaged data (as opposed to I/O or settings).
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            SegmentError::Corrupt { .. } | SegmentError::Verification { .. }
        )
    }

    /// For damage, what is wrong, without the file name (which the message starts with).
    pub fn corruption_reason(&self) -> Option<String> {
        match self {
            SegmentError::Corrupt { reason, .. } => Some(reason.clone()),
            SegmentError::Verification { source, .. } => {
                Some(format!("flatbuffer verification failed: {source}"))
            }
            _ => None,
        }
    }
}

/// Shorthand for results of segments.
pub type Result<T, E = SegmentError> = std::result::Result<T, E>;
