//! The search commands: `weir export [EXPR]`, `weir count [EXPR]`, `weir get ID...`
//! (the language is [`weir::unstable::query`]'s).

use std::io::IsTerminal;

use clap::Args;

use weir::unstable::codec::writer::{writer_by_schema, writer_with, JsonTimestamps, OutputFormat};
use weir::unstable::codec::StdoutSinkConfig;
use weir::unstable::query::export::{count as count_events, ExportSink, Part, Source, TextSink};
use weir::unstable::query::{sigma, whole_match_hints, Chain, Flow, Query, SearchOptions};
use weir::unstable::store::Archive;

use super::archive::{warn_unlisted, warn_wal, write_out};
use super::args::{choice, DbArg, MemoryArg};
use super::csv_dir::CsvDir;
use super::export::{log_stats, query_error, run, warn, Output, Stdout};
use super::lake::{Lake, LakeArgs};
use super::UsageError;

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
    /// With `--to table` or `--to csv`: a block with its header per schema, also where the
    /// events of several schemas have the same columns (by default they are one list, a
    /// timeline in the chain's order).
    #[arg(long = "by-schema")]
    by_schema: bool,
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
    /// Sigma rules instead of EXPR (repeatable; a directory: its *.yml files): the matches of
    /// each rule, in turn; with `--to json` each event carries `sigma.id` and `sigma.title`
    /// (see the guide, docs/book/src/suricata-sigma/sigma.md).
    #[arg(long, value_name = "RULE", conflicts_with_all = ["expr", "explain"])]
    sigma: Vec<std::path::PathBuf>,
    /// The expression events must match, e.g. 'id.resp_p == 53 && :timestamp > 2009-11-18'
    /// (see the guide, docs/book/src/searching/index.md), optionally followed by operators
    /// ('... | top id.resp_p', see above); none: every event.
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
    /// Sigma rules instead of EXPR (repeatable; a directory: its *.yml files): one line per
    /// rule, `COUNT<TAB>ID<TAB>TITLE` (see the guide, docs/book/src/suricata-sigma/sigma.md).
    #[arg(long, value_name = "RULE", conflicts_with_all = ["expr", "explain"])]
    sigma: Vec<std::path::PathBuf>,
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

/// `weir export`: the matching events in ID order, stopping after `-n` events (touching no
/// more segments); with operators, the events that come out of them, written as they come.
pub fn export(args: ExportArgs) -> anyhow::Result<()> {
    if !args.sigma.is_empty() {
        return export_sigma(&args);
    }
    if args.explain {
        return explain(&args.db, args.expr.as_deref());
    }
    let chain = match args
        .expr
        .as_deref()
        .filter(|t| weir::unstable::query::is_chain(t))
    {
        Some(text) => Some(
            Chain::parse(text)
                .map_err(|e| UsageError(format!("invalid expression: {e}")))?
                .with_memory(args.memory.limit()),
        ),
        None => None,
    };
    // (Every event, unused, when there are operators.)
    let query = match chain {
        Some(_) => Query::all(),
        None => query(args.expr.as_deref())?,
    };
    let to = stdout_format(args.to);
    let lake = match (to, args.output.clone()) {
        (OutputFormat::Parquet, Some(dir)) => Some(args.lake.config(dir)?),
        (OutputFormat::Parquet, None) => {
            return Err(UsageError("--to parquet writes a lake: give --output DIR".into()).into())
        }
        (OutputFormat::Csv, Some(_)) => None,
        (_, Some(_)) => {
            return Err(UsageError(format!(
                "--output DIR is for --to parquet and --to csv, not --to {to}"
            ))
            .into());
        }
        (_, None) => None,
    };
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    let (source, plain) = match &chain {
        Some(chain) => (Source::Chain(chain), None),
        None => {
            // A lake and Arrow decode batches stored in columns from their columns, not
            // rebuilt as rows.
            let options = SearchOptions {
                defer_columns: lake.is_some() || to == OutputFormat::Arrow,
                ..SearchOptions::default()
            };
            (Source::Search(&query, options), Some(&archive))
        }
    };
    if let Some(config) = lake {
        return run(&archive, source, args.limit, Lake::open(&config, plain)?);
    }
    if let (OutputFormat::Csv, Some(dir)) = (to, args.output.as_deref()) {
        return run(&archive, source, args.limit, CsvDir::new(dir)?);
    }
    let writer = writer_by_schema(to, args.json_timestamps, args.by_schema);
    run(&archive, source, args.limit, Stdout::new(writer))
}

/// `weir count`: one number, from the catalog and batch metadata where the expression
/// allows.
pub fn count(args: CountArgs) -> anyhow::Result<()> {
    if !args.sigma.is_empty() {
        return count_sigma(&args);
    }
    if args.explain {
        return explain(&args.db, args.expr.as_deref());
    }
    let (query, chain);
    let is_chain = args
        .expr
        .as_deref()
        .filter(|t| weir::unstable::query::is_chain(t));
    let source = match is_chain {
        // The events that come out of the operators.
        Some(text) => {
            chain = Chain::parse(text)
                .map_err(|e| UsageError(format!("invalid expression: {e}")))?
                .with_memory(args.memory.limit());
            Source::Chain(&chain)
        }
        None => {
            query = self::query(args.expr.as_deref())?;
            Source::Search(&query, SearchOptions::default())
        }
    };
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    let started = std::time::Instant::now();
    let plain = match &source {
        Source::Search(query, _) => Some(*query),
        Source::Chain(_) => None,
    };
    let counted = count_events(&archive, source, &mut |w| warn(w)).map_err(query_error)?;
    let done = &counted.done;
    log_stats(&done.search, done.chain.as_ref(), started);
    if let Some(chain) = &done.chain {
        warn(&chain.warnings);
    }
    if let (Some(query), 0) = (plain, counted.n) {
        warn(&whole_match_hints(query, &archive));
    }
    warn_wal(&archive);
    if let Some(e) = counted.failed {
        return Err(e.into());
    }
    let mut buf = format!("{}\n", counted.n).into_bytes();
    write_out(&mut std::io::stdout().lock(), &mut buf)?;
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
    let mut out = Stdout::new(writer_with(to, args.json_timestamps));
    let mut missing = Vec::new();
    for (id, found) in args.ids.iter().zip(archive.get_many(&args.ids)?) {
        match found {
            Some((schema, row)) => out.write_rows(&schema, &mut std::iter::once(row.as_slice()))?,
            None => missing.push(id.to_string()),
        }
    }
    out.close()?;
    warn_wal(&archive);
    if !missing.is_empty() {
        anyhow::bail!("no event with ID {}", missing.join(", "));
    }
    Ok(())
}

/// The Sigma rules of `paths` compiled against `archive`'s schemas, each with its query
/// (`None`: the archive holds none of the rule's schemas, so nothing can match). A rule that
/// cannot be a query is a usage error (exit 2) naming its file, line and feature.
pub(super) fn sigma_queries(
    archive: &Archive,
    paths: &[std::path::PathBuf],
) -> anyhow::Result<Vec<(sigma::SigmaRule, Option<Query>)>> {
    let usage = |e: sigma::SigmaError| UsageError(e.to_string());
    let mut out = Vec::new();
    for file in sigma::rule_files(paths).map_err(usage)? {
        let shown = file.display().to_string();
        let yaml = sigma::read_rule(&file).map_err(usage)?;
        let names = sigma::rule_schemas(&shown, &yaml).map_err(usage)?;
        let schemas = sigma::archive_schemas(archive, &names)?;
        let rule = sigma::compile(&shown, &yaml, &schemas).map_err(usage)?;
        warn(&rule.warnings);
        if schemas.is_empty() {
            tracing::info!(rule = %shown, schemas = ?names, "no such events in the archive");
            out.push((rule, None));
            continue;
        }
        tracing::info!(rule = %shown, expression = %rule.expression, "sigma rule");
        let q = Query::parse(&rule.expression).map_err(|e| {
            UsageError(format!(
                "{shown}: the rule's expression does not parse: {e}"
            ))
        })?;
        out.push((rule, Some(q)));
    }
    Ok(out)
}

/// [`sigma_queries`] for a command that writes the rules' matches one after the other: past
/// one rule, only JSON can say which rule each match is of (its `sigma.*` tag), so other
/// formats are a usage error.
pub(super) fn tagged_sigma_queries(
    archive: &Archive,
    paths: &[std::path::PathBuf],
    json: bool,
) -> anyhow::Result<Vec<(sigma::SigmaRule, Option<Query>)>> {
    let rules = sigma_queries(archive, paths)?;
    if !json && rules.len() > 1 {
        return Err(UsageError(format!(
            "{} sigma rules: their matches are tagged in --to json only (or give one rule)",
            rules.len()
        ))
        .into());
    }
    Ok(rules)
}

/// `weir count --sigma`: per rule, its number of matches, its id and its title.
fn count_sigma(args: &CountArgs) -> anyhow::Result<()> {
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    let rules = sigma_queries(&archive, &args.sigma)?;
    let mut buf = Vec::new();
    for (rule, q) in &rules {
        let n = match q {
            None => 0,
            Some(q) => {
                let started = std::time::Instant::now();
                let counted = count_events(
                    &archive,
                    Source::Search(q, SearchOptions::default()),
                    &mut |w| warn(w),
                )
                .map_err(query_error)?;
                log_stats(&counted.done.search, None, started);
                if let Some(e) = counted.failed {
                    return Err(e.into());
                }
                counted.n
            }
        };
        buf.extend_from_slice(
            format!("{n}\t{}\t{}\n", one_line(&rule.id), one_line(&rule.title)).as_bytes(),
        );
    }
    warn_wal(&archive);
    write_out(&mut std::io::stdout().lock(), &mut buf)?;
    Ok(())
}

/// A rule's id or title on one line (a tab or newline in it would break the columns).
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `weir export --sigma`: each rule's matches in turn; as JSON, each event tagged with the
/// rule's `sigma.id` and `sigma.title`. Other formats take one rule (untagged).
fn export_sigma(args: &ExportArgs) -> anyhow::Result<()> {
    let to = stdout_format(args.to);
    if args.output.is_some() {
        return Err(UsageError("--sigma writes to stdout: --output is not for it".into()).into());
    }
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    let json = to == OutputFormat::Json;
    let rules = tagged_sigma_queries(&archive, &args.sigma, json)?;
    for (rule, q) in &rules {
        let Some(q) = q else { continue };
        let writer = writer_with(to, args.json_timestamps);
        let tag = json.then(|| sigma_tag(rule));
        let out = TagLines::new(std::io::stdout().lock(), tag);
        let sink = Tagged(TextSink::new(writer, out, |_| {}));
        run(
            &archive,
            Source::Search(q, SearchOptions::default()),
            args.limit,
            sink,
        )?;
    }
    Ok(())
}

/// The members a rule's matches carry in JSON: `"sigma.id":...,"sigma.title":...`.
pub(super) fn sigma_tag(rule: &sigma::SigmaRule) -> Vec<u8> {
    format!(
        "\"sigma.id\":{},\"sigma.title\":{}",
        serde_json::Value::String(rule.id.clone()),
        serde_json::Value::String(rule.title.clone())
    )
    .into_bytes()
}

/// A writer that adds `tag` as the first members of each JSON object that starts a line.
pub(super) struct TagLines<W> {
    inner: W,
    tag: Option<Vec<u8>>,
    start: bool,
    comma: bool,
}

impl<W> TagLines<W> {
    /// Tags the JSON lines written to `inner` (`None`: passes them through).
    pub(super) fn new(inner: W, tag: Option<Vec<u8>>) -> TagLines<W> {
        TagLines {
            inner,
            tag,
            start: true,
            comma: false,
        }
    }
}

impl<W: std::io::Write> std::io::Write for TagLines<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let Some(tag) = &self.tag else {
            return self.inner.write(buf);
        };
        let mut out = Vec::with_capacity(buf.len() + 64);
        for &b in buf {
            if self.comma {
                self.comma = false;
                if b != b'}' {
                    out.push(b',');
                }
            }
            out.push(b);
            if self.start && b == b'{' {
                out.extend_from_slice(tag);
                self.comma = true;
            }
            self.start = b == b'\n';
        }
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// [`TextSink`] into [`TagLines`] as an export's output.
struct Tagged<W: std::io::Write>(TextSink<W>);

impl<W: std::io::Write> ExportSink for Tagged<W> {
    type Error = anyhow::Error;
    fn write(&mut self, part: Part, take: usize) -> anyhow::Result<Flow> {
        Ok(self.0.write(part, take)?)
    }
    fn damaged(&mut self, error: weir::unstable::query::QueryError) {
        self.0.damaged(error);
    }
}

impl<W: std::io::Write> Output for Tagged<W> {
    fn close(mut self) -> anyhow::Result<()> {
        Ok(self.0.finish()?)
    }
}
