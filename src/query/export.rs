//! The one export loop: a plain expression ([`Source::Search`]) or a chain with operators
//! ([`Source::Chain`]) run over an archive, its events handed to an [`ExportSink`] until
//! `limit` events are written, the sink says [`Flow::Done`] or it fails.
//!
//! Every output implements [`ExportSink`]: the text formats and Arrow ([`TextSink`], through
//! an [`EventWriter`]), the CLI's Parquet lake and CSV directory, the HTTP API's chunked
//! stream and [`crate::Db`]'s batch channel. Each decides what a damaged batch means for it
//! ([`ExportSink::damaged`]: the search goes on after it) and what happens after the loop
//! (a trailer, a summary, the error that ends an answer).
//!
//! A plain expression hands out each batch's [`Hits`] as they are (a batch taken whole can be
//! converted from its columns, see [`SearchOptions::defer_columns`]); a chain hands out what
//! its operators emit, read whole by late materialization when the plan says so
//! ([`Chain::run`]).

use std::cell::RefCell;
use std::io::Write;

use super::search::{Hits, SearchOptions, SearchStats};
use super::{Chain, ChainStats, Flow, Query, QueryError, Slice};
use crate::codec::writer::{EventWriter, WriteError};
use crate::store::Archive;
use crate::types::SchemaRef;

/// Output is handed on in pieces of about this size (text written to a file, stdout or a
/// writer).
pub const CHUNK: usize = 256 << 10;

/// What the loop runs.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// A plain expression, its matching events in ID order. The search is made (and the
    /// expression checked against the archive) even for a limit of 0.
    Search(&'a Query, SearchOptions),
    /// An expression with operators: what comes out of them (nothing runs for a limit of 0).
    Chain(&'a Chain),
}

/// Events handed to a sink: one batch's matching events, or a slice that came out of a
/// chain's operators.
#[derive(Debug)]
pub enum Part {
    /// Matching events of one batch (a plain expression).
    Hits(Hits),
    /// Events that came out of the operators (a chain).
    Slice(Slice),
}

impl Part {
    /// The schema of the events.
    pub fn schema(&self) -> &SchemaRef {
        match self {
            Part::Hits(h) => h.schema(),
            Part::Slice(s) => s.schema(),
        }
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        match self {
            Part::Hits(h) => h.len(),
            Part::Slice(s) => s.len(),
        }
    }

    /// Whether there is no event.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The encoded rows of the events (see [`crate::value`]).
    pub fn rows(&self) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        match self {
            Part::Hits(h) => Box::new(h.rows()),
            Part::Slice(s) => Box::new(s.rows()),
        }
    }
}

impl crate::codec::arrow::SchemaRows for Part {
    fn schema(&self) -> &SchemaRef {
        Part::schema(self)
    }
    fn rows(&self) -> impl Iterator<Item = &[u8]> + '_ {
        Part::rows(self)
    }
    fn columns(
        &self,
    ) -> Option<Result<crate::segment::Columns, Box<dyn std::error::Error + Send + Sync>>> {
        match self {
            Part::Hits(h) => {
                Some(super::to_arrow::encoded_columns(h.batch(), None)?.map_err(Into::into))
            }
            Part::Slice(_) => None,
        }
    }
    fn selected(&self) -> Option<&[usize]> {
        match self {
            Part::Hits(h) => h.selected(),
            Part::Slice(_) => None,
        }
    }
}

/// An output of the export loop.
pub trait ExportSink {
    /// Why the sink stopped the loop.
    type Error;

    /// Writes the first `take` events of `part` (`take` ≥ 1 for a plain expression; a chain
    /// may hand an empty slice). [`Flow::Done`] stops the loop; an error stops it and is
    /// returned by [`export`].
    fn write(&mut self, part: Part, take: usize) -> Result<Flow, Self::Error>;

    /// A damaged batch (or a cancelled search: [`QueryError::Cancelled`]); the search goes
    /// on with the next one.
    fn damaged(&mut self, error: QueryError);

    /// The warnings of a plain expression's check against the archive (comparisons
    /// ill-typed in some schemas), before any event; a chain's are in its statistics
    /// ([`ChainStats::warnings`]).
    fn warnings(&mut self, _warnings: &[String]) {}
}

/// What a run of [`export`] did.
#[derive(Debug, Default, Clone)]
pub struct Exported {
    /// Whether the search ran (not for a limit of 0).
    pub ran: bool,
    /// Events handed to the sink (the sum of the `take`s that it accepted).
    pub written: u64,
    /// The search's statistics.
    pub search: SearchStats,
    /// A chain's statistics (`None` for a plain expression).
    pub chain: Option<ChainStats>,
}

/// Runs `source` over `archive`, handing `sink` at most `limit` events (`None`: all). An
/// error of the query itself (an ill-typed expression, an unreadable catalog, an operator
/// over its memory budget) is the `Err`; the sink's error that stopped the loop comes beside
/// what was done.
pub fn export<S: ExportSink>(
    archive: &Archive,
    source: Source<'_>,
    limit: Option<u64>,
    sink: &mut S,
) -> Result<(Exported, Option<S::Error>), QueryError> {
    match source {
        Source::Search(query, options) => export_search(archive, query, options, limit, sink),
        Source::Chain(chain) => export_chain(archive, chain, limit, sink),
    }
}

fn export_search<S: ExportSink>(
    archive: &Archive,
    query: &Query,
    options: SearchOptions,
    limit: Option<u64>,
    sink: &mut S,
) -> Result<(Exported, Option<S::Error>), QueryError> {
    let mut search = query.search_with(archive, options)?;
    sink.warnings(search.warnings());
    let mut left = limit.unwrap_or(u64::MAX);
    let mut done = Exported {
        ran: left > 0,
        ..Exported::default()
    };
    let mut failed = None;
    if left > 0 {
        for hits in search.by_ref() {
            let hits = match hits {
                Ok(h) => h,
                Err(e) => {
                    sink.damaged(e);
                    continue;
                }
            };
            let take = (hits.len() as u64).min(left) as usize;
            let flow = match sink.write(Part::Hits(hits), take) {
                Ok(flow) => flow,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            left -= take as u64;
            done.written += take as u64;
            if left == 0 || flow == Flow::Done {
                break;
            }
        }
    }
    done.search = search.stats().clone();
    Ok((done, failed))
}

fn export_chain<S: ExportSink>(
    archive: &Archive,
    chain: &Chain,
    limit: Option<u64>,
    sink: &mut S,
) -> Result<(Exported, Option<S::Error>), QueryError> {
    // The operators' output and the damaged batches come at separate points of the run,
    // never at once.
    let sink = RefCell::new(sink);
    let mut written = 0u64;
    let (stats, failed) = chain.run_limited(
        archive,
        limit,
        |slice, take| {
            let flow = sink.borrow_mut().write(Part::Slice(slice), take)?;
            written += take as u64;
            Ok(flow)
        },
        &mut |e| sink.borrow_mut().damaged(e),
    )?;
    let done = Exported {
        ran: limit != Some(0),
        written,
        search: stats.search.clone(),
        chain: Some(stats),
    };
    Ok((done, failed))
}

/// What [`count`] found.
#[derive(Debug)]
pub struct Counted {
    /// The number of events.
    pub n: u64,
    /// What the run did (statistics; a chain's warnings).
    pub done: Exported,
    /// A chain's first damaged batch: the count leaves its events out, so it is wrong.
    pub failed: Option<QueryError>,
}

/// The number of events of `source` over `archive`, as `weir count` counts them: for a
/// plain expression from the catalog and batch metadata where it can (reading no events;
/// `warnings` gets the expression's warnings before), for a chain the events that come out
/// of its operators, through [`export`].
pub fn count(
    archive: &Archive,
    source: Source<'_>,
    warnings: &mut dyn FnMut(&[String]),
) -> Result<Counted, QueryError> {
    match source {
        Source::Search(query, options) => {
            let search = query.search_with(archive, options)?;
            warnings(search.warnings());
            let (n, search) = search.count()?;
            let done = Exported {
                ran: true,
                search,
                ..Exported::default()
            };
            Ok(Counted {
                n,
                done,
                failed: None,
            })
        }
        Source::Chain(_) => {
            let mut counter = Counter { failed: None };
            let (done, _) = export(archive, source, None, &mut counter)?;
            // What the operators emitted (late materialization may find fewer events).
            let n = done.chain.as_ref().map_or(done.written, |c| c.emitted);
            Ok(Counted {
                n,
                done,
                failed: counter.failed,
            })
        }
    }
}

/// The sink of [`count`]: nothing written, the first damaged batch kept.
struct Counter {
    failed: Option<QueryError>,
}

impl ExportSink for Counter {
    type Error = std::convert::Infallible;
    fn write(&mut self, _part: Part, _take: usize) -> Result<Flow, Self::Error> {
        Ok(Flow::More)
    }
    fn damaged(&mut self, error: QueryError) {
        self.failed.get_or_insert(error);
    }
}

/// A sink of text (or an Arrow IPC stream): events formatted by an [`EventWriter`] into a
/// buffer, handed to `out` in pieces of about [`CHUNK`] bytes; [`TextSink::finish`] writes
/// the trailer and the rest. An error of `out` is [`WriteError::Io`] (a broken pipe too:
/// the caller decides whether that is a clean end). Damaged batches are counted.
pub struct TextSink<W: Write> {
    writer: Box<dyn EventWriter>,
    out: W,
    buf: Vec<u8>,
    /// Damaged batches seen (other than a cancelled search).
    pub damaged: u64,
    on_damaged: Box<dyn FnMut(&QueryError)>,
}

impl<W: Write> TextSink<W> {
    /// Writes with `writer` into `out`; `on_damaged` is told of each damaged batch.
    pub fn new(
        writer: Box<dyn EventWriter>,
        out: W,
        on_damaged: impl FnMut(&QueryError) + 'static,
    ) -> TextSink<W> {
        TextSink {
            writer,
            out,
            buf: Vec::with_capacity(CHUNK * 2),
            damaged: 0,
            on_damaged: Box::new(on_damaged),
        }
    }

    /// Writes `rows` of `schema` (for events that do not come from [`export`]).
    pub fn write_rows(
        &mut self,
        schema: &SchemaRef,
        rows: &mut dyn Iterator<Item = &[u8]>,
    ) -> Result<(), WriteError> {
        self.writer.write_rows(schema, rows, &mut self.buf)?;
        if self.buf.len() >= CHUNK {
            self.write_pending()?;
        }
        Ok(())
    }

    /// Writes the trailer (`#close` for Zeek TSV) and what is pending, then flushes.
    pub fn finish(&mut self) -> Result<(), WriteError> {
        self.writer.finish(&mut self.buf);
        self.write_pending()?;
        self.out.flush().map_err(WriteError::Io)
    }

    fn write_pending(&mut self) -> Result<(), WriteError> {
        self.out.write_all(&self.buf).map_err(WriteError::Io)?;
        self.buf.clear();
        Ok(())
    }
}

impl<W: Write> std::fmt::Debug for TextSink<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextSink")
            .field("pending", &self.buf.len())
            .field("damaged", &self.damaged)
            .finish_non_exhaustive()
    }
}

impl<W: Write> ExportSink for TextSink<W> {
    type Error = WriteError;

    fn write(&mut self, part: Part, take: usize) -> Result<Flow, WriteError> {
        match &part {
            // A batch's events are decoded from its columns in the form the writer takes.
            Part::Hits(hits) => {
                let batches = hits
                    .record_batches(self.writer.record_batch_form(), None, take)
                    .map_err(|e| WriteError::Io(std::io::Error::other(format!("arrow: {e}"))))?;
                for b in &batches {
                    self.writer
                        .write_record_batch(part.schema(), b, &mut self.buf)?;
                }
                if self.buf.len() >= CHUNK {
                    self.write_pending()?;
                }
            }
            _ => self.write_rows(part.schema(), &mut part.rows().take(take))?,
        }
        Ok(Flow::More)
    }

    fn damaged(&mut self, error: QueryError) {
        if matches!(error, QueryError::Cancelled) {
            return;
        }
        (self.on_damaged)(&error);
        self.damaged += 1;
    }
}
