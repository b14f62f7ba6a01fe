//! The one error type of the embedding API ([`crate::Db`]).

use crate::codec::arrow::ArrowCodecError;
use crate::codec::writer::{OutputFormat, WriteError};
use crate::query::QueryError;
use crate::store::StoreError;

/// Why a [`crate::Db`] call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The archive could not be opened, or its catalog read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The query text does not parse or type-check, or the archive could not be searched.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// Events could not be converted to Arrow.
    #[error(transparent)]
    Arrow(#[from] ArrowCodecError),
    /// Events could not be written in the format asked for.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The writer given refused the output.
    #[error("cannot write the output: {0}")]
    Io(#[from] std::io::Error),
    /// The format is not a byte stream (Parquet is a lake: a directory).
    #[error(
        "--to {0} writes a directory, not a stream; `weir export --to {0} --output DIR` writes it"
    )]
    NotAStream(OutputFormat),
    /// The search skipped damaged batches: the results leave out their events (each batch's
    /// error came before, as an item of the iterator, or was logged).
    #[error("skipped {batches} damaged {}; the results leave them out", if *.batches == 1 { "batch" } else { "batches" })]
    Damaged {
        /// How many batches.
        batches: u64,
    },
    /// The query's thread stopped on a bug (a panic): its results are incomplete.
    #[error("the query's thread failed: its results are incomplete")]
    Thread,
}

/// The result of a [`crate::Db`] call.
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;
