//! The embedding API: [`Db`], an archive opened once by a program (or by `weir serve`) and
//! queried many times.
//!
//! | file | what |
//! | --- | --- |
//! | `mod.rs` | [`Db`]: open, query, reload, stats |
//! | `reader.rs` | the resident reader every query of a `Db` shares, and its refresh by catalog generation |
//! | `result.rs` | [`QueryResult`]: one query, read as batches, counted, written or explained |
//! | `batches.rs`, `stream.rs` | [`Batches`] (an iterator) and [`BatchStream`] (a `Stream`) of record batches |
//! | `producer.rs` | the thread of a query read as batches, and its bounded channel |
//! | `arrow.rs` | the one conversion of the engine's output rows to Arrow record batches |
//! | `error.rs` | [`Error`] |
//!
//! Files depend one way: `mod.rs` on `reader.rs` and `result.rs`; `result.rs` on
//! `batches.rs` and `stream.rs`, which read what `producer.rs` sends; `producer.rs` on
//! `arrow.rs`; all on `error.rs`.
//!
//! # Freshness
//!
//! A `Db` reads through one long-lived reader with a warm segment cache (the segments
//! queries mapped stay mapped). Each [`Db::query`] first compares the catalog file with the
//! one the reader loaded (one `stat`), and on a change moves the reader to the new catalog
//! generation, as tantivy's `IndexReader` reloads on commit: a query sees every segment
//! committed before it started, by this process or another ([`Db::reload`] does the same
//! on demand). Events not sealed yet (the write-ahead log's tail) are read by every query.

mod arrow;
mod batches;
mod error;
mod producer;
mod reader;
mod result;
mod stream;

use std::path::Path;
use std::sync::Arc;

pub use batches::Batches;
pub use error::Error;
pub(crate) use error::Result;
pub use producer::BATCHES_IN_FLIGHT;
pub use reader::DbStats;
pub use result::QueryResult;
pub use stream::BatchStream;

pub(crate) use result::count;

use crate::store::{Archive, StoreError};
use reader::Resident;

/// An archive opened for queries: cheap to clone (clones share the reader and its segment
/// cache), safe to share between threads.
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
/// assert_eq!(db.query("id.orig_h == 192.168.1.102")?.count()?, 1);
/// let mut rows = 0;
/// for batch in db.query("uid == \"Pii6cUUq1v4\"")? {
///     rows += batch?.num_rows();
/// }
/// assert_eq!(rows, 1);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Db {
    reader: Arc<Resident>,
}

impl Db {
    /// Opens the archive in `dir` (an error when it is none).
    pub fn open(dir: impl AsRef<Path>) -> Result<Db> {
        let db = Db::lazy(dir.as_ref().to_path_buf());
        db.handle()?;
        Ok(db)
    }

    /// A `Db` of `dir` that opens the archive at its first query (`weir serve`, which may
    /// start before its pipelines create the archive).
    pub(crate) fn lazy(dir: std::path::PathBuf) -> Db {
        Db {
            reader: Arc::new(Resident::new(dir)),
        }
    }

    /// The archive's directory.
    pub fn dir(&self) -> &Path {
        self.reader.dir()
    }

    /// A query: an expression, optionally followed by operators (`'proto == "tcp" | top
    /// id.resp_p'`; see the guide, docs/book/src/searching/index.md), or nothing for every
    /// event. It reads the catalog committed when it is made; nothing runs until it is read,
    /// counted or written (see [`QueryResult`]).
    ///
    /// An expression that does not parse is [`Error::Query`], here; one that does not
    /// type-check against the archive's schemas is the error of the query's first read.
    pub fn query(&self, text: &str) -> Result<QueryResult> {
        let chain = result::parse(text)?;
        let archive = self.handle()?;
        Ok(QueryResult::new(
            archive,
            chain,
            self.reader.threads.clone(),
        ))
    }

    /// Moves the reader to the current catalog now, if it changed since the reader loaded
    /// it (each [`Db::query`] does this itself): `true` when it moved (segments committed,
    /// or dropped, since).
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
    /// assert!(!db.reload()?); // nothing committed since
    /// # Ok(())
    /// # }
    /// ```
    pub fn reload(&self) -> Result<bool> {
        let before = self.stats();
        self.handle()?;
        let after = self.stats();
        Ok((after.opens, after.refreshes) != (before.opens, before.refreshes))
    }

    /// The reader's counters: catalog loads, segments mapped, query threads running.
    pub fn stats(&self) -> DbStats {
        self.reader.stats()
    }

    /// A handle of the reader of the current catalog, for one query (with its own
    /// cancellation token to set).
    pub(crate) fn handle(&self) -> Result<Archive, StoreError> {
        self.reader.handle()
    }

    /// Moves the reader to a changed catalog every `REFRESH_INTERVAL` (`reader.rs`) while this `Db`
    /// lives, on the current tokio runtime (`weir serve`: erased segments are not kept on
    /// disk while no query runs).
    pub(crate) fn refresh_in_background(&self) {
        Resident::refresh_in_background(&self.reader);
    }
}
