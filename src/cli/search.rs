//! The search commands: `weir export [EXPR]`, `weir count [EXPR]`, `weir get ID...`
//! (the language is [`weir::unstable::query`]'s).

use std::io::{IsTerminal, Write};

use clap::Args;

use weir::unstable::codec::writer::{
    writer_with, EventWriter, JsonTimestamps, OutputFormat, WriteError,
};
use weir::unstable::codec::StdoutSinkConfig;
use weir::unstable::query::{Chain, Flow, Query, QueryError, Search};
use weir::unstable::store::Archive;

use super::archive::{warn_unlisted, warn_wal, write_out};
use super::args::{choice, DbArg, MemoryArg};
use super::lake::LakeArgs;
use super::UsageError;

/// Output is written in pieces of about this size.
pub(super) const CHUNK: usize = 256 << 10;

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    db: DbArg,
    #[arg(long, value_parser = choice::<OutputFormat>(), value_name = "FORMAT",
          help = to_help())]
    to: Option<OutputFormat>,
    /// How `--to json` writes times: `epoch` seconds (Zeek's default), `iso8601` strings or
    /// `millis`.
    #[arg(long = "json-timestamps", value_parser = choice::<JsonTimestamps>(), value_name = "FORMAT",
          default_value_t = StdoutSinkConfig::default().json_timestamps)]
    json_timestamps: JsonTimestamps,
    /// Stop after N events (reading no further).
    #[arg(short = 'n', long = "limit", value_name = "N")]
    limit: Option<u64>,
    /// With `--to parquet` (required there): the lake's directory, created when missing;
    /// files go to DIR/schema=zeek.conn/day=2009-11-18/part-00000.parquet. With `--to csv`:
    /// one file per schema, DIR/zeek.conn.csv, each with its header line; the directory is
    /// created when missing, and an existing file is never overwritten.
    #[arg(long, value_name = "DIR")]
    output: Option<std::path::PathBuf>,
    #[command(flatten)]
    lake: LakeArgs,
    /// Print the plan (the scan spec and the operators, with what is pushed into the scan)
    /// and the segments and batches that the catalog and the sketches keep, without running
    /// the query.
    #[arg(long)]
    explain: bool,
    #[command(flatten)]
    memory: MemoryArg,
    /// The expression events must match, e.g. 'id.resp_p == 53 && :timestamp > 2009-11-18'
    /// (see README, "Searching"), optionally followed by operators ('... | top id.resp_p',
    /// see above); none: every event.
    #[arg(value_name = "EXPR")]
    expr: Option<String>,
}

#[derive(Debug, Args)]
pub struct CountArgs {
    #[command(flatten)]
    db: DbArg,
    /// Print the plan (the scan spec and the operators, with what is pushed into the scan)
    /// and the segments and batches that the catalog and the sketches keep, without running
    /// the query.
    #[arg(long)]
    explain: bool,
    #[command(flatten)]
    memory: MemoryArg,
    /// The expression events must match; none: every event.
    #[arg(value_name = "EXPR")]
    expr: Option<String>,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    #[command(flatten)]
    db: DbArg,
    #[arg(long, value_parser = choice::<OutputFormat>(), value_name = "FORMAT",
          help = to_help())]
    to: Option<OutputFormat>,
    /// How `--to json` writes times: `epoch` seconds (Zeek's default), `iso8601` strings or
    /// `millis`.
    #[arg(long = "json-timestamps", value_parser = choice::<JsonTimestamps>(), value_name = "FORMAT",
          default_value_t = StdoutSinkConfig::default().json_timestamps)]
    json_timestamps: JsonTimestamps,
    /// Event IDs (as `weir info` shows their ranges), printed in the order given.
    #[arg(value_name = "ID", required = true)]
    ids: Vec<u64>,
}

/// The help of `--to` in `weir export` and `weir get`, naming the default of each case.
fn to_help() -> String {
    format!(
        "Output format [default: {} when stdout is a terminal, else {}]",
        OutputFormat::Table,
        StdoutSinkConfig::default().format
    )
}

/// The format of `--to`, or when not given, the table on a terminal and otherwise
/// [`StdoutSinkConfig`]'s default (so that pipes and files get what they always got).
fn stdout_format(to: Option<OutputFormat>) -> OutputFormat {
    to.unwrap_or_else(|| {
        if std::io::stdout().is_terminal() {
            OutputFormat::Table
        } else {
            StdoutSinkConfig::default().format
        }
    })
}

/// The query of an optional EXPR argument; a malformed one is a usage error (exit 2).
fn query(expr: Option<&str>) -> anyhow::Result<Query> {
    match expr {
        None => Ok(Query::all()),
        Some(text) => {
            Query::parse(text).map_err(|e| UsageError(format!("invalid expression: {e}")).into())
        }
    }
}

/// Prints the warnings of a search's check of its expression (comparisons ill-typed in some
/// schemas: see `Search::warnings`).
pub(super) fn warn(search: &Search<'_>) {
    for w in search.warnings() {
        say!("weir: warning: {w}");
    }
}

/// A query error: an ill-typed expression is the user's (exit 2), the rest a runtime error.
pub(super) fn query_error(e: QueryError) -> anyhow::Error {
    match e {
        QueryError::Expr(e) => UsageError(format!("invalid expression: {e}")).into(),
        other => other.into(),
    }
}

/// The search's statistics at `-v` (info level): what was considered, pruned and read.
/// `chain`: the events that came out of the operators, the batches decoded to read them
/// whole, and the most memory the operators held (as charged to the query's budget).
fn log_stats(
    stats: &weir::unstable::query::SearchStats,
    chain: Option<&weir::unstable::query::ChainStats>,
    started: std::time::Instant,
) {
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

/// Writes the output buffer, then flushes; a closed stdout ends quietly.
pub(super) fn finish(
    out: &mut impl Write,
    writer: &mut dyn EventWriter,
    buf: &mut Vec<u8>,
) -> anyhow::Result<()> {
    writer.finish(buf);
    write_out(out, buf)?;
    match out.flush() {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(WriteError::Closed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to stdout")),
    }
}

/// `weir export`: the matching events in ID order, stopping after `-n` events (touching no
/// more segments).
pub fn export(args: ExportArgs) -> anyhow::Result<()> {
    if args.explain {
        return explain(&args.db, args.expr.as_deref());
    }
    if let Some(text) = args
        .expr
        .as_deref()
        .filter(|t| weir::unstable::query::is_chain(t))
    {
        let chain = Chain::parse(text)
            .map_err(|e| UsageError(format!("invalid expression: {e}")))?
            .with_memory(args.memory.limit());
        return export_chain(&args, &chain);
    }
    let query = query(args.expr.as_deref())?;
    let to = stdout_format(args.to);
    let mut lake = None;
    let mut csv_dir = None;
    match (to, args.output.clone()) {
        (OutputFormat::Parquet, Some(dir)) => lake = Some(args.lake.config(dir)?),
        (OutputFormat::Parquet, None) => {
            return Err(UsageError("--to parquet writes a lake: give --output DIR".into()).into())
        }
        (OutputFormat::Csv, Some(dir)) => csv_dir = Some(dir),
        (_, Some(_)) => {
            return Err(UsageError(format!(
                "--output DIR is for --to parquet and --to csv, not --to {to}"
            ))
            .into());
        }
        (_, None) => {}
    };
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    if let Some(config) = lake {
        return super::lake::export(&archive, &query, args.limit, &config);
    }
    if let Some(dir) = csv_dir {
        return super::csv_dir::export(&archive, &query, args.limit, &dir);
    }
    let mut writer = writer_with(to, args.json_timestamps);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut buf = Vec::with_capacity(CHUNK * 2);
    let mut left = args.limit.unwrap_or(u64::MAX);
    let mut damaged = None;
    let started = std::time::Instant::now();
    // Made also for `-n 0`: the expression is checked against the archive.
    let mut search = query.search(&archive).map_err(query_error)?;
    warn(&search);
    if left > 0 {
        while let Some(hits) = search.next() {
            let hits = match hits {
                Ok(h) => h,
                Err(e) => {
                    // A damaged segment is reported; the rest of the archive is still searched.
                    say!("weir: error: {e}");
                    damaged = Some(search.stats().clone());
                    continue;
                }
            };
            let take = (hits.len() as u64).min(left) as usize;
            let mut rows = hits.rows().take(take);
            writer.write_rows(hits.schema(), &mut rows, &mut buf)?;
            left -= take as u64;
            if buf.len() >= CHUNK {
                write_out(&mut out, &mut buf)?;
            }
            if left == 0 {
                break;
            }
        }
        log_stats(search.stats(), None, started);
    }
    finish(&mut out, writer.as_mut(), &mut buf)?;
    warn_wal(&archive);
    if let Some(stats) = damaged {
        let batches = stats.batches_damaged;
        anyhow::bail!(
            "skipped {} damaged {} ({}) (see above)",
            batches,
            if batches == 1 { "batch" } else { "batches" },
            super::plural(stats.events_damaged, "event")
        );
    }
    Ok(())
}

/// The lake configuration of `--to parquet --output DIR`; a usage error without `--output`
/// (or with it for another format).
fn lake_config(
    args: &ExportArgs,
) -> anyhow::Result<Option<weir::unstable::codec::ParquetSinkConfig>> {
    match (stdout_format(args.to), args.output.clone()) {
        (OutputFormat::Parquet, Some(dir)) => Ok(Some(args.lake.config(dir)?)),
        (OutputFormat::Parquet, None) => {
            Err(UsageError("--to parquet writes a lake: give --output DIR".into()).into())
        }
        (OutputFormat::Csv, Some(_)) => Ok(None),
        (to, Some(_)) => Err(UsageError(format!(
            "--output DIR is for --to parquet and --to csv, not --to {to}"
        ))
        .into()),
        (_, None) => Ok(None),
    }
}

/// `weir export 'EXPR | OP | ...'`: the events that come out of the operators, written as
/// they come, stopping after `-n` events.
fn export_chain(args: &ExportArgs, chain: &Chain) -> anyhow::Result<()> {
    let lake = lake_config(args)?;
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    if let (OutputFormat::Csv, Some(dir)) = (stdout_format(args.to), args.output.as_deref()) {
        return super::csv_dir::export_chain(&archive, chain, args.limit, dir);
    }
    let damaged = if let Some(config) = lake {
        let mut lake = weir::unstable::codec::arrow::ParallelLakeWriter::new(config.writer()?, 0);
        let damaged = run_chain(&archive, chain, args.limit, |slice, take| {
            Ok(lake.write(SliceRows(slice), take)?)
        })?;
        let summary = lake.close()?;
        say!(
            "weir: wrote {} in {} ({}) to {}",
            super::plural(summary.events, "event"),
            super::plural(summary.files, "file"),
            weir::unstable::size::Size(summary.bytes),
            config.dir.display()
        );
        damaged
    } else {
        let mut writer = writer_with(stdout_format(args.to), args.json_timestamps);
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        let mut buf = Vec::with_capacity(CHUNK * 2);
        let damaged = run_chain(&archive, chain, args.limit, |slice, take| {
            writer.write_rows(slice.schema(), &mut slice.rows().take(take), &mut buf)?;
            if buf.len() >= CHUNK {
                write_out(&mut out, &mut buf)?;
            }
            Ok(())
        })?;
        finish(&mut out, writer.as_mut(), &mut buf)?;
        damaged
    };
    warn_wal(&archive);
    damaged_error(damaged)
}

/// Runs `chain` over `archive`, handing `write` each slice that comes out with how many of
/// its events to write (at most `limit` in all), and stops at the limit or at the first
/// write error (returned). Damaged batches are reported as they come and counted; the
/// statistics go to `-v` and the expression's warnings to stderr.
pub(super) fn run_chain(
    archive: &Archive,
    chain: &Chain,
    limit: Option<u64>,
    mut write: impl FnMut(weir::unstable::query::Slice, usize) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let mut damaged = 0u64;
    if limit == Some(0) {
        return Ok(0);
    }
    let started = std::time::Instant::now();
    let (stats, failed) = chain
        .run_limited(
            archive,
            limit,
            |slice, take| write(slice, take).map(|()| Flow::More),
            &mut |e| {
                say!("weir: error: {e}");
                damaged += 1;
            },
        )
        .map_err(query_error)?;
    log_stats(&stats.search, Some(&stats), started);
    for w in &stats.warnings {
        say!("weir: warning: {w}");
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(damaged),
    }
}

/// The error after the output of a run that skipped `damaged` batches.
pub(super) fn damaged_error(damaged: u64) -> anyhow::Result<()> {
    if damaged > 0 {
        anyhow::bail!(
            "skipped {} damaged {} (see above); the results leave them out",
            damaged,
            if damaged == 1 { "batch" } else { "batches" },
        );
    }
    Ok(())
}

/// A slice of a chain's output as rows for the lake writer.
struct SliceRows(weir::unstable::query::Slice);

impl weir::unstable::codec::arrow::SchemaRows for SliceRows {
    fn schema(&self) -> &weir::unstable::types::SchemaRef {
        self.0.schema()
    }
    fn rows(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.0.rows()
    }
}

/// `weir count`: one number, from the catalog and batch metadata where the expression
/// allows.
pub fn count(args: CountArgs) -> anyhow::Result<()> {
    if args.explain {
        return explain(&args.db, args.expr.as_deref());
    }
    if let Some(text) = args
        .expr
        .as_deref()
        .filter(|t| weir::unstable::query::is_chain(t))
    {
        // The events that come out of the operators.
        let chain = Chain::parse(text)
            .map_err(|e| UsageError(format!("invalid expression: {e}")))?
            .with_memory(args.memory.limit());
        let archive = Archive::open(&args.db.path)?;
        warn_unlisted(&archive)?;
        let mut failed: Option<QueryError> = None;
        let started = std::time::Instant::now();
        let stats = chain
            .run(&archive, &mut |_| Ok(Flow::More), &mut |e| {
                failed.get_or_insert(e);
            })
            .map_err(query_error)?;
        log_stats(&stats.search, Some(&stats), started);
        for w in &stats.warnings {
            say!("weir: warning: {w}");
        }
        warn_wal(&archive);
        if let Some(e) = failed {
            return Err(e.into());
        }
        let mut buf = format!("{}\n", stats.emitted).into_bytes();
        write_out(&mut std::io::stdout().lock(), &mut buf)?;
        return Ok(());
    }
    let query = query(args.expr.as_deref())?;
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    let started = std::time::Instant::now();
    let search = query.search(&archive).map_err(query_error)?;
    warn(&search);
    let (n, stats) = search.count().map_err(query_error)?;
    log_stats(&stats, None, started);
    warn_wal(&archive);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut buf = format!("{n}\n").into_bytes();
    write_out(&mut out, &mut buf)?;
    Ok(())
}

/// `--explain`: the plan of EXPR (an expression, operators or both; none: every event) and
/// the pruning it will do over the archive, as text.
fn explain(db: &DbArg, expr: Option<&str>) -> anyhow::Result<()> {
    let chain = match expr {
        None => Chain::all(),
        Some(text) => {
            Chain::parse(text).map_err(|e| UsageError(format!("invalid expression: {e}")))?
        }
    };
    let archive = Archive::open(&db.path)?;
    warn_unlisted(&archive)?;
    let explained = chain.explain(&archive).map_err(query_error)?;
    let mut buf = explained.to_string().into_bytes();
    write_out(&mut std::io::stdout().lock(), &mut buf)?;
    Ok(())
}

/// `weir get`: the events with the given IDs, in the order given.
pub fn get(args: GetArgs) -> anyhow::Result<()> {
    let to = stdout_format(args.to);
    if to == OutputFormat::Parquet {
        return Err(UsageError(
            "--to parquet writes a lake into a directory: use `weir export --to parquet --output DIR`"
                .into(),
        )
        .into());
    }
    let archive = Archive::open(&args.db.path)?;
    let mut writer = writer_with(to, args.json_timestamps);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut buf = Vec::new();
    let mut missing = Vec::new();
    for (id, found) in args.ids.iter().zip(archive.get_many(&args.ids)?) {
        match found {
            Some((schema, row)) => {
                writer.write_rows(&schema, &mut std::iter::once(row.as_slice()), &mut buf)?
            }
            None => missing.push(id.to_string()),
        }
        if buf.len() >= CHUNK {
            write_out(&mut out, &mut buf)?;
        }
    }
    finish(&mut out, writer.as_mut(), &mut buf)?;
    warn_wal(&archive);
    if !missing.is_empty() {
        anyhow::bail!("no event with ID {}", missing.join(", "));
    }
    Ok(())
}
