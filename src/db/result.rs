//! [`QueryResult`]: one query of a [`crate::Db`], on the catalog that was current when it
//! was made, ready to be read as batches, counted or written.

use std::io::Write;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use super::batches::Batches;
use super::error::{Error, Result};
use super::producer::{Producer, BATCHES_IN_FLIGHT};
use super::stream::BatchStream;
use crate::codec::writer::{writer_with, JsonTimestamps, OutputFormat, WriteError};
use crate::query::export::{export, Source, TextSink};
use crate::query::{is_chain, Chain, Explain, Query, QueryError};
use crate::store::Archive;

/// A query of a [`crate::Db`] (made by [`crate::Db::query`]): nothing runs until it is read
/// ([`QueryResult::batches`], a `for` loop, [`QueryResult::stream`]), counted
/// ([`QueryResult::count`]) or written ([`QueryResult::write`]).
///
/// It reads the sealed segments of the catalog that was current when it was made (and
/// keeps them on disk while it lives, even if an erase drops them), and the write-ahead
/// log's events as they are when it runs: so at least every event committed before it was
/// made.
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
/// let mut tsv = Vec::new();
/// let n = db.query("id.orig_h == 192.168.1.102")?.write(weir::OutputFormat::ZeekTsv, &mut tsv)?;
/// assert_eq!(n, 1);
/// assert!(String::from_utf8(tsv)?.contains("\tPii6cUUq1v4\t"));
/// assert_eq!(db.query("")?.count()?, 2);
/// assert_eq!(db.query("")?.limit(1).count()?, 1);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct QueryResult {
    archive: Archive,
    chain: Chain,
    limit: Option<u64>,
    threads: Arc<AtomicUsize>,
}

/// The chain of a query's text: an empty one is every event.
pub(crate) fn parse(text: &str) -> Result<Chain, QueryError> {
    if text.trim().is_empty() {
        return Ok(Chain::all());
    }
    Ok(Chain::parse(text)?)
}

/// The number of events of `text` over `archive`, as `weir count` counts them: from the
/// catalog and batch metadata for an expression, the events that come out of the operators
/// for a chain (a damaged batch fails the count).
pub(crate) fn count(
    archive: &Archive,
    text: &str,
    memory: crate::query::memory::MemoryLimit,
) -> Result<u64, QueryError> {
    let (query, chain);
    let source = if is_chain(text) {
        chain = parse(text)?.with_memory(memory);
        Source::Chain(&chain)
    } else {
        query = if text.trim().is_empty() {
            Query::all()
        } else {
            Query::parse(text)?
        };
        Source::Search(&query, Default::default())
    };
    let counted = crate::query::export::count(archive, source, &mut |_| {})?;
    match counted.failed {
        Some(e) => Err(e),
        None => Ok(counted.n),
    }
}

impl QueryResult {
    pub(crate) fn new(archive: Archive, chain: Chain, threads: Arc<AtomicUsize>) -> QueryResult {
        QueryResult {
            archive,
            chain,
            limit: None,
            threads,
        }
    }

    /// At most `n` events (the search stops there, as `weir export -n N` does).
    pub fn limit(mut self, n: u64) -> QueryResult {
        self.limit = Some(n);
        self
    }

    /// The query's text.
    pub fn text(&self) -> &str {
        self.chain.text()
    }

    /// What the query will do, without running it: its physical plan (the scan, with its
    /// predicate, columns and pushed-down work, then the operators) and the pruning the
    /// catalog and the batches' metadata do for it, as `weir export --explain` prints them
    /// ([`Explain`]'s `Display`) and as the API's `"explain": true` answers (its
    /// `to_json`). The [`QueryResult::limit`] is not part of the plan.
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
    /// let explained = db.query("id.orig_h == 10.1.1.1 | sort ts desc | head 3")?.explain()?;
    /// let text = explained.to_string();
    /// assert!(text.contains("pruning"), "{text}");
    /// // No event has the address: the segment's catalog entry or its batch's sketch says so.
    /// let pruning = explained.pruning();
    /// assert_eq!(pruning.segments, 1);
    /// assert_eq!(pruning.events_kept, 0);
    /// assert!(explained.to_json()["plan"]["operators"].is_array());
    /// # Ok(())
    /// # }
    /// ```
    pub fn explain(&self) -> Result<Explain> {
        Ok(self.chain.explain(&self.archive)?)
    }

    /// The events as record batches, read as the search produces them (see [`Batches`]).
    /// When the query's thread cannot be started, the iterator's one item is that error.
    pub fn batches(self) -> Batches {
        let (tx, rx) = std::sync::mpsc::sync_channel(BATCHES_IN_FLIGHT);
        let failed = tx.clone();
        let producer = self.spawn(Box::new(move |item| tx.send(item).is_ok()));
        let producer = producer.unwrap_or_else(|e| {
            let _ = failed.send(Err(e));
            Producer::finished()
        });
        Batches::new(rx, producer)
    }

    /// The events as a [`Stream`](futures::Stream) of record batches (see [`BatchStream`]). When
    /// the query's thread cannot be started, the stream's one item is that error.
    pub fn stream(self) -> BatchStream {
        let (tx, rx) = tokio::sync::mpsc::channel(BATCHES_IN_FLIGHT);
        let failed = tx.clone();
        let producer = self.spawn(Box::new(move |item| tx.blocking_send(item).is_ok()));
        let producer = producer.unwrap_or_else(|e| {
            let _ = failed.try_send(Err(e));
            Producer::finished()
        });
        BatchStream::new(rx, producer)
    }

    fn spawn(self, send: super::producer::Send) -> Result<Producer> {
        Producer::spawn(self.archive, self.chain, self.limit, self.threads, send)
    }

    /// The number of events, as `weir count` counts them: for an expression without
    /// operators from the catalog and the batches' metadata where it can (reading no
    /// events), else the events that come out of the operators.
    pub fn count(self) -> Result<u64> {
        let n = count(&self.archive, self.chain.text(), Default::default())?;
        Ok(self.limit.map_or(n, |limit| n.min(limit)))
    }

    /// Writes the events to `out` in `format` (what `weir export --to FORMAT` writes; JSON
    /// with epoch timestamps), and returns how many were written. Parquet, a directory, is
    /// [`Error::NotAStream`].
    ///
    /// A damaged batch is skipped (and logged): the events of the others are all written,
    /// then the call ends with [`Error::Damaged`].
    pub fn write(self, format: OutputFormat, out: impl Write) -> Result<u64> {
        if format.is_directory_only() {
            return Err(Error::NotAStream(format));
        }
        let text = self.chain.text().to_string();
        let mut sink = TextSink::new(
            writer_with(format, JsonTimestamps::default()),
            out,
            move |e| tracing::warn!("query {text:?}: {e}"),
        );
        let (done, failed) = export(
            &self.archive,
            Source::Chain(&self.chain),
            self.limit,
            &mut sink,
        )?;
        if let Some(e) = failed {
            return Err(write_error(e));
        }
        sink.finish().map_err(write_error)?;
        if sink.damaged > 0 {
            return Err(Error::Damaged {
                batches: sink.damaged,
            });
        }
        Ok(done.written)
    }
}

/// An error of the writer given is its own ([`Error::Io`]); the rest is the format's.
fn write_error(e: WriteError) -> Error {
    match e {
        WriteError::Io(e) => Error::Io(e),
        other => Error::Write(other),
    }
}

impl IntoIterator for QueryResult {
    type Item = Result<arrow_array::RecordBatch>;
    type IntoIter = Batches;

    /// [`QueryResult::batches`].
    fn into_iter(self) -> Batches {
        self.batches()
    }
}
