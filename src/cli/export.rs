//! How the CLI runs the library's export loop ([`weir::unstable::query::export`]) and
//! reports it: damaged batches and the expression's warnings on stderr as they come, the
//! statistics at `-v`, the output closed ([`Output::close`]), then the error of a run that
//! skipped damaged batches. Each output (stdout here, the lake in `lake.rs`, the CSV
//! directory in `csv_dir.rs`) is an [`Output`].

use std::time::Instant;

use weir::unstable::codec::writer::{EventWriter, WriteError};
use weir::unstable::query::export::{export, ExportSink, Exported, Part, Source, TextSink};
use weir::unstable::query::{whole_match_hints, ChainStats, Flow, QueryError, SearchStats};
use weir::unstable::store::Archive;

use super::archive::warn_wal;
use super::UsageError;

/// An output of `weir export`: a sink whose errors are the command's, closed after the loop.
pub(super) trait Output: ExportSink<Error = anyhow::Error> {
    /// Ends the output after the loop (a trailer, a summary on stderr).
    fn close(self) -> anyhow::Result<()>;
}

/// A query error: an ill-typed expression is the user's (exit 2), the rest a runtime error.
pub(super) fn query_error(e: QueryError) -> anyhow::Error {
    match e {
        QueryError::Expr(e) => UsageError(format!("invalid expression: {e}")).into(),
        other => other.into(),
    }
}

/// Prints the warnings of a search's check of its expression (comparisons ill-typed in some
/// schemas: see `Search::warnings`).
pub(super) fn warn(warnings: &[String]) {
    for w in warnings {
        say!("weir: warning: {w}");
    }
}

/// An error writing to stdout: a broken pipe is a clean end ([`WriteError::Closed`]).
pub(super) fn stdout_error(e: WriteError) -> anyhow::Error {
    match e {
        WriteError::Io(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            WriteError::Closed.into()
        }
        WriteError::Io(e) => anyhow::Error::new(e).context("cannot write to stdout"),
        other => other.into(),
    }
}

/// The search's statistics at `-v` (info level): what was considered, pruned and read.
/// `chain`: the events that came out of the operators, the batches decoded to read them
/// whole, and the most memory the operators held (as charged to the query's budget).
pub(super) fn log_stats(stats: &SearchStats, chain: Option<&ChainStats>, started: Instant) {
    let emitted = chain.map(|c| c.emitted);
    let batches_materialized = chain.map(|c| c.batches_materialized);
    let memory_peak = chain.map(|c| c.memory_peak);
    tracing::info!(
        segments = stats.segments,
        segments_pruned = stats.segments_pruned,
        segments_counted = stats.segments_counted,
        segments_opened = stats.segments_opened,
        batches_read = stats.batches_read,
        batches_pruned = stats.batches_pruned,
        rows_evaluated = stats.rows_evaluated,
        matched = stats.matched,
        emitted,
        batches_materialized,
        memory_peak,
        ms = started.elapsed().as_millis() as u64,
        "query statistics"
    );
}

/// The events on stdout in a text format (or an Arrow IPC stream).
pub(super) struct Stdout(TextSink<std::io::StdoutLock<'static>>);

impl Stdout {
    pub(super) fn new(writer: Box<dyn EventWriter>) -> Stdout {
        Stdout(TextSink::new(writer, std::io::stdout().lock(), |_| {}))
    }

    /// Writes `rows` of `schema` (events that do not come from the export loop: `weir get`,
    /// `weir explore`); a closed stdout is [`WriteError::Closed`].
    pub(super) fn write_rows(
        &mut self,
        schema: &weir::unstable::types::SchemaRef,
        rows: &mut dyn Iterator<Item = &[u8]>,
    ) -> anyhow::Result<()> {
        self.0.write_rows(schema, rows).map_err(stdout_error)
    }
}

impl ExportSink for Stdout {
    type Error = anyhow::Error;
    fn write(&mut self, part: Part, take: usize) -> anyhow::Result<Flow> {
        self.0.write(part, take).map_err(stdout_error)
    }
    fn damaged(&mut self, error: QueryError) {
        self.0.damaged(error);
    }
}

impl Output for Stdout {
    fn close(mut self) -> anyhow::Result<()> {
        self.0.finish().map_err(stdout_error)
    }
}

/// An output with its damaged batches reported on stderr as they come, and counted.
struct Said<O> {
    output: O,
    damaged: u64,
}

impl<O: Output> ExportSink for Said<O> {
    type Error = anyhow::Error;
    fn write(&mut self, part: Part, take: usize) -> anyhow::Result<Flow> {
        self.output.write(part, take)
    }
    fn damaged(&mut self, error: QueryError) {
        // A damaged segment is reported; the rest of the archive is still searched.
        say!("weir: error: {error}");
        self.damaged += 1;
    }
    fn warnings(&mut self, warnings: &[String]) {
        warn(warnings);
    }
}

/// `weir export`: runs `source` over `archive` into `output`, at most `limit` events (see
/// the module docs).
pub(super) fn run(
    archive: &Archive,
    source: Source<'_>,
    limit: Option<u64>,
    output: impl Output,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let plain = match &source {
        Source::Search(query, _) => Some(*query),
        Source::Chain(_) => None,
    };
    let mut said = Said { output, damaged: 0 };
    let (done, failed) = export(archive, source, limit, &mut said).map_err(query_error)?;
    if let Some(e) = failed {
        return Err(e);
    }
    if done.ran {
        log_stats(&done.search, done.chain.as_ref(), started);
    }
    if let Some(chain) = &done.chain {
        warn(&chain.warnings);
    }
    said.output.close()?;
    if let (Some(query), true, 0) = (plain, done.ran, done.search.matched) {
        warn(&whole_match_hints(query, archive));
    }
    warn_wal(archive);
    damaged_error(&done, said.damaged)
}

/// The error after the output of a run that skipped `damaged` batches: with the events they
/// held for a plain expression (the search counts them), else their number.
fn damaged_error(done: &Exported, damaged: u64) -> anyhow::Result<()> {
    if damaged == 0 {
        return Ok(());
    }
    let batches = if done.chain.is_some() {
        damaged
    } else {
        done.search.batches_damaged
    };
    let noun = if batches == 1 { "batch" } else { "batches" };
    match done.chain {
        Some(_) => anyhow::bail!(
            "skipped {batches} damaged {noun} (see above); the results leave them out"
        ),
        None => anyhow::bail!(
            "skipped {batches} damaged {noun} ({}) (see above)",
            super::plural(done.search.events_damaged, "event")
        ),
    }
}
