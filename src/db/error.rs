//! The one error type of the embedding API ([`crate::Db`]).

use crate::codec::arrow::ArrowCodecError;
use crate::codec::writer::{OutputFormat, WriteError};
use crate::query::QueryError;
use crate::store::StoreError;

/// Why a [`crate::Db`] call failed.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let tmp = tempfile::tempdir()?;
/// # let dir = tmp.path().join("db");
/// # let log = "#separator \\x09\n#path\tconn\n#fields\tts\tuid\tid.orig_h\n#types\ttime\tstring\taddr\n1258531221.486539\tPii6cUUq1v4\t192.168.1.102\n1258531680.237254\tnkCxlvNN8pi\tfe80::1\n";
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// #     let mut pipeline = weir::Pipeline::default();
/// #     let config = weir::SourceConfig::zeek(weir::ReaderOptions::default(), 1 << 20);
/// #     let source = pipeline.add_source("logs", vec![weir::Input::bytes("memory", log)], config)?;
/// #     let batches = pipeline.add_batcher("batch", &[source], Default::default())?;
/// #     let (sink, _) = weir::ArchiveSink::open(&dir, Default::default())?;
/// #     pipeline.add_sink("archive", &[batches], sink)?;
/// #     pipeline.run().await?;
/// #     Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// let db = weir::Db::open(&dir)?;
/// let err = db.query("id.orig_h ==").unwrap_err();
/// assert!(matches!(err, weir::Error::Query(_)));
/// assert!(err.to_string().starts_with("invalid expression"));
/// # Ok(())
/// # }
/// ```
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
