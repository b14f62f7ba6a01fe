//! `weir explore` and `weir pivot`: VAST's context commands (the semantics are
//! [`weir::unstable::query::context`]'s), printed with `weir export`'s output options.

use clap::Args;

use weir::unstable::codec::writer::{writer_with, JsonTimestamps, OutputFormat};
use weir::unstable::codec::StdoutSinkConfig;
use weir::unstable::query::context::{
    ContextError, Explore, ExploreOptions, Pivot, PivotOptions, Related,
    DEFAULT_MAX_EVENTS_CONTEXT, DEFAULT_MAX_EVENTS_QUERY, DEFAULT_MAX_PIVOT_KEYS,
};
use weir::unstable::query::export::TextSink;
use weir::unstable::query::{Query, QueryError};
use weir::unstable::store::Archive;

use super::archive::warn_unlisted;
use super::args::{choice, DbArg, MemoryArg};
use super::export::{query_error, stdout_error};
use super::search::{sigma_tag, tagged_sigma_queries, TagLines};
use super::UsageError;

/// How the events are printed: `weir export`'s options.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_parser = choice::<OutputFormat>(), value_name = "FORMAT",
          default_value_t = StdoutSinkConfig::default().format)]
    to: OutputFormat,
    /// How `--to json` writes times: `epoch` seconds (Zeek's default), `iso8601` strings or
    /// `millis`.
    #[arg(long = "json-timestamps", value_parser = choice::<JsonTimestamps>(), value_name = "FORMAT",
          default_value_t = StdoutSinkConfig::default().json_timestamps)]
    json_timestamps: JsonTimestamps,
    /// Print at most N events in all (VAST's `--max-events`).
    #[arg(
        short = 'n',
        long = "max-events",
        visible_alias = "limit",
        value_name = "N"
    )]
    max_events: Option<u64>,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  # every event up to 5 minutes after each connection to 192.168.1.10
  weir explore --after 5min 'zeek.conn.id.resp_h == 192.168.1.10'
  # the DNS requests up to 60 s after it
  weir explore -A 60s --for zeek.dns 'zeek.conn.id.resp_h == 192.168.1.10'
  # the same originator's events within a minute either side
  weir explore --context 1min --by id.orig_h --to json 'zeek.http.method == \"POST\"'
  # everything with the same uid, whenever it happened
  weir explore --by uid 'zeek.dns.query == \"www.example.com\"'")]
pub struct ExploreArgs {
    #[command(flatten)]
    db: DbArg,
    /// Include the events up to this long before each result's time (`ts`), e.g. 30s, 5min.
    #[arg(short = 'B', long, value_parser = span, value_name = "DURATION")]
    before: Option<i64>,
    /// Include the events up to this long after each result's time (`ts`).
    #[arg(short = 'A', long, value_parser = span, value_name = "DURATION")]
    after: Option<i64>,
    /// `--before` and `--after` at once (each of them overrides its side).
    #[arg(short = 'C', long, value_parser = span, value_name = "DURATION")]
    context: Option<i64>,
    /// Only events with a field FIELD (a field extractor: `id.orig_h`, `orig_h`) equal to the
    /// result's (an equi-join); without a time option, at any time.
    #[arg(long, value_name = "FIELD")]
    by: Option<String>,
    /// Only context events of these types (repeat it or separate with commas), e.g.
    /// `--for zeek.dns,zeek.http`.
    #[arg(long = "for", value_name = "TYPE", value_delimiter = ',')]
    types: Vec<String>,
    /// Take the first N results of the query (in ID order).
    #[arg(long = "max-events-query", value_name = "N", default_value_t = DEFAULT_MAX_EVENTS_QUERY)]
    max_events_query: u64,
    /// Print at most N events of each result's context (the first in ID order).
    #[arg(long = "max-events-context", value_name = "N", default_value_t = DEFAULT_MAX_EVENTS_CONTEXT)]
    max_events_context: u64,
    #[command(flatten)]
    output: OutputArgs,
    /// Sigma rules whose matches are explored, instead of EXPR (repeatable; a directory: its
    /// *.yml files), one after the other; with `--to json` each event printed carries the
    /// rule's `sigma.id` and `sigma.title` (see the guide, docs/book/src/suricata-sigma/sigma.md).
    #[arg(long, value_name = "RULE", conflicts_with = "expr")]
    sigma: Vec<std::path::PathBuf>,
    /// The expression whose results are explored (see the guide, docs/book/src/searching/index.md).
    #[arg(value_name = "EXPR", required_unless_present = "sigma")]
    expr: Option<String>,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  # the HTTP requests of the connections to port 8080
  weir pivot zeek.http 'zeek.conn.id.resp_p == 8080'
  # the connections of the requests of a user agent
  weir pivot zeek.conn 'zeek.http.user_agent == /.*curl.*/'
  # the files transferred over a host's connections
  weir pivot --to json zeek.files 'zeek.conn.id.orig_h == 192.168.1.102'")]
pub struct PivotArgs {
    #[command(flatten)]
    db: DbArg,
    /// Refuse results that carry more than N distinct uid and community_id values (each
    /// takes about 100 bytes of memory).
    #[arg(long = "max-keys", value_name = "N", default_value_t = DEFAULT_MAX_PIVOT_KEYS)]
    max_keys: usize,
    #[command(flatten)]
    memory: MemoryArg,
    #[command(flatten)]
    output: OutputArgs,
    /// The type of the events to print, a schema name such as `zeek.http`, `zeek.conn`,
    /// `zeek.files`.
    #[arg(value_name = "TYPE")]
    target: String,
    /// The expression whose results are pivoted from (see the guide,
    /// docs/book/src/searching/index.md).
    #[arg(value_name = "EXPR")]
    expr: String,
}

/// A duration of the expression language (`30s`, `5min`, `1.5h`).
fn span(text: &str) -> Result<i64, String> {
    match weir::unstable::query::context::parse_span(text) {
        Some(ns) if ns >= 0 => Ok(ns),
        Some(_) => Err("a duration of 0 or more is needed".into()),
        None => Err("expected a duration with a unit, such as 30s, 5min, 2h or 1d".into()),
    }
}

/// The expression; a malformed one is a usage error (exit 2).
fn parse(text: &str) -> anyhow::Result<Query> {
    Query::parse(text).map_err(|e| UsageError(format!("invalid expression: {e}")).into())
}

/// A context error: bad options and ill-typed expressions are the user's (exit 2).
fn context_error(e: ContextError) -> anyhow::Error {
    match e {
        ContextError::Query(q) => query_error(q),
        ContextError::Options(m) => UsageError(m).into(),
        other => other.into(),
    }
}

/// Refuses `--to parquet`, which writes a directory.
fn check_format(format: OutputFormat) -> anyhow::Result<()> {
    if format == OutputFormat::Parquet {
        return Err(UsageError(
            "--to parquet writes a lake into a directory: use `weir export --to parquet --output DIR`"
                .into(),
        )
        .into());
    }
    Ok(())
}

/// Prints the events of a second search; a damaged segment or batch is reported and skipped
/// (exit 1 at the end), as `weir export` does.
fn print(
    output: &OutputArgs,
    earlier: &[QueryError],
    events: impl Iterator<Item = Result<Related, QueryError>>,
) -> anyhow::Result<()> {
    print_tagged(output, earlier, events, None)
}

/// [`print`], each JSON event tagged with `tag` (a Sigma rule's members).
fn print_tagged(
    output: &OutputArgs,
    earlier: &[QueryError],
    events: impl Iterator<Item = Result<Related, QueryError>>,
    tag: Option<Vec<u8>>,
) -> anyhow::Result<()> {
    let mut out = TextSink::new(
        writer_with(output.to, output.json_timestamps),
        TagLines::new(std::io::stdout().lock(), tag),
        |_| {},
    );
    let mut damaged = earlier.len();
    for e in earlier {
        say!("weir: error: {e}");
    }
    for related in events {
        let related = match related {
            Ok(r) => r,
            Err(e) => {
                say!("weir: error: {e}");
                damaged += 1;
                continue;
            }
        };
        out.write_rows(related.schema(), &mut related.rows())
            .map_err(stdout_error)?;
    }
    out.finish().map_err(stdout_error)?;
    if damaged > 0 {
        anyhow::bail!("skipped {damaged} damaged segments or batches (see above)");
    }
    Ok(())
}

/// `weir explore`.
pub fn explore(args: ExploreArgs) -> anyhow::Result<()> {
    check_format(args.output.to)?;
    if !args.sigma.is_empty() {
        return explore_sigma(args);
    }
    let query = parse(args.expr.as_deref().unwrap_or(""))?;
    let options = explore_options(&args);
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    explore_one(&archive, &args, &query, options, None)
}

/// `weir explore --sigma`: each rule's matches explored in turn.
fn explore_sigma(args: ExploreArgs) -> anyhow::Result<()> {
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    let json = args.output.to == OutputFormat::Json;
    let rules = tagged_sigma_queries(&archive, &args.sigma, json)?;
    for (rule, query) in &rules {
        let Some(query) = query else { continue };
        let tag = json.then(|| sigma_tag(rule));
        explore_one(&archive, &args, query, explore_options(&args), tag)?;
    }
    Ok(())
}

fn explore_options(args: &ExploreArgs) -> ExploreOptions {
    ExploreOptions {
        before: args.before.or(args.context),
        after: args.after.or(args.context),
        by: args.by.clone(),
        types: args
            .types
            .iter()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect(),
        max_events: args.output.max_events.unwrap_or(u64::MAX),
        max_events_query: args.max_events_query,
        max_events_context: args.max_events_context,
    }
}

/// Explores the results of `query` (see [`explore`]), tagging JSON events with `tag`.
fn explore_one(
    archive: &Archive,
    args: &ExploreArgs,
    query: &Query,
    options: ExploreOptions,
    tag: Option<Vec<u8>>,
) -> anyhow::Result<()> {
    let taken = options.max_events_query;
    let plan = Explore::plan(archive, query, options).map_err(context_error)?;
    if taken > 0 && plan.results() == taken {
        // Say it without -v: the contexts of the other results are not shown.
        let (total, _) = query.count(archive).map_err(query_error)?;
        if total > taken {
            say!("weir: warning: explored the first {taken} of {total} results (in ID order); --max-events-query raises it");
        }
    }
    for t in plan.missing_types() {
        say!("weir: warning: the archive has no events of type {t:?} (--for takes schema names such as \"zeek.dns\")");
    }
    tracing::info!(
        results = plan.results(),
        with_context = plan.origins(),
        prefilter = plan.prefilter().text(),
        "explore: the query's results"
    );
    let search = plan.search(archive).map_err(query_error)?;
    print_tagged(&args.output, plan.errors(), search, tag)
}

/// `weir pivot`.
pub fn pivot(args: PivotArgs) -> anyhow::Result<()> {
    check_format(args.output.to)?;
    let query = parse(&args.expr)?;
    let options = PivotOptions {
        max_events: args.output.max_events.unwrap_or(u64::MAX),
        max_keys: args.max_keys,
        memory: args.memory.limit(),
    };
    let archive = Archive::open(&args.db.path)?;
    warn_unlisted(&archive)?;
    let plan = Pivot::plan(&archive, &args.target, &query, options).map_err(context_error)?;
    if !plan.target_known() {
        say!(
            "weir: warning: the archive has no events of type {:?} (types are schema names such as \"zeek.http\")",
            args.target
        );
    }
    tracing::info!(
        results = plan.results(),
        keys = plan.keys(),
        prefilter = plan.prefilter().text(),
        "pivot: the query's results"
    );
    let search = plan.search(&archive).map_err(query_error)?;
    print(&args.output, plan.errors(), search)
}
