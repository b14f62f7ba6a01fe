//! The search commands: `weir export [EXPR]`, `weir count [EXPR]`, `weir get ID...`
//! (the language is [`weir::query`]'s).

use std::io::Write;

use clap::Args;

use weir::codec::writer::{writer_with, EventWriter, JsonTimestamps, OutputFormat, WriteError};
use weir::codec::StdoutSinkConfig;
use weir::query::{Query, QueryError, Search};
use weir::store::Archive;

use super::archive::{warn_unlisted, write_out};
use super::args::{choice, DbArg};
use super::lake::LakeArgs;
use super::UsageError;

/// Output is written in pieces of about this size.
const CHUNK: usize = 256 << 10;

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    db: DbArg,
    /// Output format.
    #[arg(long, value_parser = choice::<OutputFormat>(), value_name = "FORMAT",
          default_value_t = StdoutSinkConfig::default().format)]
    to: OutputFormat,
    /// How `--to json` writes times: `epoch` seconds (Zeek's default), `iso8601` strings or
    /// `millis`.
    #[arg(long = "json-timestamps", value_parser = choice::<JsonTimestamps>(), value_name = "FORMAT",
          default_value_t = StdoutSinkConfig::default().json_timestamps)]
    json_timestamps: JsonTimestamps,
    /// Stop after N events (reading no further).
    #[arg(short = 'n', long = "limit", value_name = "N")]
    limit: Option<u64>,
    /// With `--to parquet` (required there): the lake's directory, created when missing;
    /// files go to DIR/schema=zeek.conn/date=2009-11-18/part-00000.parquet.
    #[arg(long, value_name = "DIR")]
    output: Option<std::path::PathBuf>,
    #[command(flatten)]
    lake: LakeArgs,
    /// The expression events must match, e.g. 'id.resp_p == 53 && :timestamp > 2009-11-18'
    /// (see README, "Searching"); none: every event.
    #[arg(value_name = "EXPR")]
    expr: Option<String>,
}

#[derive(Debug, Args)]
pub struct CountArgs {
    #[command(flatten)]
    db: DbArg,
    /// The expression events must match; none: every event.
    #[arg(value_name = "EXPR")]
    expr: Option<String>,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    #[command(flatten)]
    db: DbArg,
    /// Output format.
    #[arg(long, value_parser = choice::<OutputFormat>(), value_name = "FORMAT",
          default_value_t = StdoutSinkConfig::default().format)]
    to: OutputFormat,
    /// How `--to json` writes times: `epoch` seconds (Zeek's default), `iso8601` strings or
    /// `millis`.
    #[arg(long = "json-timestamps", value_parser = choice::<JsonTimestamps>(), value_name = "FORMAT",
          default_value_t = StdoutSinkConfig::default().json_timestamps)]
    json_timestamps: JsonTimestamps,
    /// Event IDs (as `weir info` shows their ranges), printed in the order given.
    #[arg(value_name = "ID", required = true)]
    ids: Vec<u64>,
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

/// Writes the output buffer, then flushes; a closed stdout ends quietly.
fn finish(
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
    let query = query(args.expr.as_deref())?;
    let lake = match (args.to, args.output.clone()) {
        (OutputFormat::Parquet, Some(dir)) => Some(args.lake.config(dir)?),
        (OutputFormat::Parquet, None) => {
            return Err(UsageError("--to parquet writes a lake: give --output DIR".into()).into())
        }
        (_, Some(_)) => {
            return Err(UsageError("--output DIR is for --to parquet".into()).into());
        }
        (_, None) => None,
    };
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    if let Some(config) = lake {
        return super::lake::export(&archive, &query, args.limit, &config);
    }
    let mut writer = writer_with(args.to, args.json_timestamps);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut buf = Vec::with_capacity(CHUNK * 2);
    let mut left = args.limit.unwrap_or(u64::MAX);
    let mut damaged = None;
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
    }
    finish(&mut out, writer.as_mut(), &mut buf)?;
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

/// `weir count`: one number, from the catalog and batch metadata where the expression
/// allows.
pub fn count(args: CountArgs) -> anyhow::Result<()> {
    let query = query(args.expr.as_deref())?;
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    let search = query.search(&archive).map_err(query_error)?;
    warn(&search);
    let (n, _) = search.count().map_err(query_error)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut buf = format!("{n}\n").into_bytes();
    write_out(&mut out, &mut buf)?;
    Ok(())
}

/// `weir get`: the events with the given IDs, in the order given.
pub fn get(args: GetArgs) -> anyhow::Result<()> {
    if args.to == OutputFormat::Parquet {
        return Err(UsageError(
            "--to parquet writes a lake into a directory: use `weir export --to parquet --output DIR`"
                .into(),
        )
        .into());
    }
    let archive = Archive::open(&args.db.path)?;
    let mut writer = writer_with(args.to, args.json_timestamps);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut buf = Vec::new();
    let mut missing = Vec::new();
    for &id in &args.ids {
        match archive.get(id)? {
            Some(b) => writer.write_rows(b.schema(), &mut b.rows(), &mut buf)?,
            None => missing.push(id.to_string()),
        }
        if buf.len() >= CHUNK {
            write_out(&mut out, &mut buf)?;
        }
    }
    finish(&mut out, writer.as_mut(), &mut buf)?;
    if !missing.is_empty() {
        anyhow::bail!("no event with ID {}", missing.join(", "));
    }
    Ok(())
}
