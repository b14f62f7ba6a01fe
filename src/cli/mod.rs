//! The command-line interface (clap derive). This module belongs to the binary: it is the
//! only code that uses `anyhow`; everything it calls returns the library's typed errors.
//!
//! Exit status: 0 on success (also when the reader of our output went away early, as with
//! `| head`, and after a graceful shutdown on SIGINT/SIGTERM), 1 on a data or runtime error,
//! 2 on a usage error (clap's own code for bad arguments, and ours for values it cannot
//! check, such as a segment size over the FlatBuffers limit).

// `eprintln!` panics on a closed stderr: the CLI writes through `say!` instead.
#![deny(clippy::print_stderr)]

/// `eprintln!` that cannot panic: writes one line to stderr and ignores a failure (a closed
/// pipe, a full disk), so that the exit status is what it would be if stderr were fine.
/// `eprintln!` panics when stderr is a pipe whose reader has gone (exit 101). Every message of
/// the CLI goes through this; it is defined before the modules so that they can use it.
/// The progress line, if one is drawn, is cleared first and redrawn after
/// ([`progress::suspend`]), so that every message starts at column 0.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        $crate::cli::progress::suspend(|| {
            let _ = writeln!(std::io::stderr().lock(), $($arg)*);
        });
    }};
}

mod archive;
mod args;
mod convert;
mod csv_dir;
mod deferred;
mod docs;
mod explore;
mod export;
mod import;
mod intel;
mod lake;
mod maintain;
mod progress;
mod search;
mod serve;
mod signals;

use anyhow::Context as _;
use std::fmt;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use deferred::Deferred;

use weir::unstable::pipeline::build::BuildError;
use weir::unstable::pipeline::config::{ConfigError, ConfigErrorKind};
use weir::unstable::store::StoreError;

/// weir: ingest Zeek logs through a backpressured pipeline into a segment archive.
#[derive(Debug, Parser)]
#[command(name = "weir", version, about, max_term_width = 100)]
struct Cli {
    /// Log what weir does on stderr: -v files opened, segments sealed, write-ahead log
    /// replays; -vv also archives and segments opened; -vvv everything. WEIR_LOG (e.g.
    /// `weir=debug`, tracing's filter syntax) overrides it.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// How log lines are written: `text` for people, `json` (one object per line) for
    /// services and log collectors.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true, value_name = "FORMAT")]
    log_format: LogFormat,
    /// The umask (octal) of the files and directories weir creates: `027` shares an
    /// archive with the group (directories 0750, files 0640). Without it, an archive's files
    /// take its directory's permissions, and a new archive is its owner's alone (0700 and
    /// 0600: `weir::unstable::store::DEFAULT_UMASK`). See the guide,
    /// docs/book/src/serving/security.md.
    #[arg(long, global = true, value_name = "OCTAL", value_parser = parse_umask)]
    umask: Option<u32>,
    /// A concepts file (TOML, format 1: the guide, docs/book/src/searching/concepts.md) that
    /// extends the shipped concepts and models (`net.src.ip`, `net.connection`, ...) for this
    /// command's queries.
    #[arg(long, global = true, env = "WEIR_CONCEPTS", value_name = "FILE")]
    concepts: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Command,
}

/// Parses `--umask`: octal digits (`027`, `0027`, `0o027`), at most `777`.
fn parse_umask(text: &str) -> Result<u32, String> {
    let digits = text.strip_prefix("0o").unwrap_or(text);
    match u32::from_str_radix(digits, 8) {
        Ok(m) if m <= 0o777 => Ok(m),
        _ => Err(format!(
            "{text:?} is not a umask: octal digits up to 777, e.g. 027"
        )),
    }
}

/// `--log-format` (a setting of the command line only, so clap's own table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Sets up `tracing` on stderr from `-v` and `WEIR_LOG`; without either, logs nothing.
fn init_logging(verbose: u8, format: LogFormat) {
    let filter = match std::env::var("WEIR_LOG") {
        Ok(spec) if !spec.trim().is_empty() => {
            match tracing_subscriber::EnvFilter::try_new(spec.trim()) {
                Ok(f) => f,
                Err(e) => {
                    say!("weir: warning: WEIR_LOG={spec:?} is not a log filter ({e}); ignoring it");
                    return init_logging_level(verbose, format);
                }
            }
        }
        _ => return init_logging_level(verbose, format),
    };
    install_logger(filter, format);
}

/// `-v`, `-vv`, `-vvv`: info, debug, trace for weir's own events.
fn init_logging_level(verbose: u8, format: LogFormat) {
    let level = match verbose {
        0 => return,
        1 => "weir=info",
        2 => "weir=debug",
        _ => "weir=trace",
    };
    install_logger(tracing_subscriber::EnvFilter::new(level), format);
}

fn install_logger(filter: tracing_subscriber::EnvFilter, format: LogFormat) {
    // The fmt layer ignores write errors, so a closed stderr cannot end the program.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Convert Zeek logs (TSV or JSON, plain, gzip or zstd) to Zeek TSV (or as `--to` says) on stdout.
    Convert(Deferred<convert::ConvertArgs>),
    /// Import Zeek logs into an archive (the pipeline of pipelines/zeek-to-archive.toml).
    Import(Deferred<import::ImportArgs>),
    /// Run a pipeline definition file (see pipelines/).
    Run(Deferred<import::RunArgs>),
    /// Export the archive's events matching an expression (all without one) in ID order
    /// (import order): a table on a terminal, else Zeek TSV, or as `--to` says.
    ///
    /// Operators after the expression (Tenzir's TQL1): `weir export 'EXPR | OP | OP'`, or
    /// operators alone (`weir export 'top id.resp_p'`):
    ///
    ///   where EXPR                       keep the events that match
    ///   select F, ...  /  drop F, ...    keep / remove fields
    ///   head [N]  /  tail [N]            the first / last N events (10)
    ///   sort F [asc|desc], ...           by the keys, stable, events without a key last
    ///                                    (with `| head N`: N events held)
    ///   summarize AGG, ... [by F, ...] [resolution DURATION]
    ///                                    one event per group (schema weir.summarize);
    ///                                    AGG: count() count(F) count_distinct(F) distinct(F)
    ///                                    sum(F) min(F) max(F) mean(F), or NAME=AGG
    ///   top F [N]  /  rare F [N]         the most / least common values (10) with a count
    ///
    /// What sort, tail, summarize, top and rare hold together is at most --memory (the
    /// query's budget); past it the query fails with an error naming the operator.
    ///
    /// Examples:
    ///   weir export 'id.resp_p == 53 | summarize count() by query | sort count() desc | head'
    ///   weir export 'summarize count() by ts resolution 1h'
    ///   weir export 'id.orig_h == 10.0.0.1 | sort ts | select ts, uid, id.resp_h'
    ///
    /// See the guide, docs/book/src/searching/investigating.md, for more recipes.
    #[command(verbatim_doc_comment)]
    Export(Deferred<search::ExportArgs>),
    /// Count the archive's events matching an expression (all without one).
    Count(Deferred<search::CountArgs>),
    /// Print the events with the given IDs.
    Get(Deferred<search::GetArgs>),
    /// Print the events around each result of an expression (VAST's `explore`): within a
    /// time window (--before, --after, --context), with an equal field (--by), of some types
    /// (--for); each event once, in ID order.
    Explore(Deferred<explore::ExploreArgs>),
    /// Print the events of TYPE related to the results of an expression (VAST's `pivot`): by
    /// community_id, else by Zeek's uid (also files.log's conn_uids); each once, in ID order.
    Pivot(Deferred<explore::PivotArgs>),
    /// Run pipelines and serve the archive over HTTP: a JSON API under /api/v1/, Prometheus
    /// metrics, and a web page at / (see the guide, docs/book/src/serving/index.md).
    Serve(Deferred<serve::ServeArgs>),
    /// Indicator sets of the archive (add, remove, list, show) and matching them against
    /// it (`weir intel match`): see the guide, docs/book/src/detection.md.
    Intel(Deferred<intel::IntelArgs>),
    /// Summarize an archive: segments, events, bytes, ID ranges, events per schema.
    Info(Deferred<archive::InfoArgs>),
    /// Describe segment files: uuid, ID intervals, events, batches.
    Inspect(Deferred<archive::InspectArgs>),
    /// Check every segment and the write-ahead log; exit 1 with a line per problem.
    Verify(Deferred<archive::VerifyArgs>),
    /// Erase events by time, age, ID range or expression (whole segments where possible,
    /// others rewritten without them; surviving events keep their IDs).
    Erase(Deferred<maintain::EraseArgs>),
    /// Merge small segments (of short imports, restarts) into full-size ones, keeping IDs.
    Compact(Deferred<maintain::CompactArgs>),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(Deferred<docs::CompletionsArgs>),
    /// Print the man page (roff) of weir or of one command: `weir man import | man -l -`.
    Man(Deferred<docs::ManArgs>),
}

/// A usage error found after argument parsing: exit status 2.
#[derive(Debug)]
struct UsageError(String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Whether an error is the user's to fix in the command line or the pipeline definition
/// (exit status 2): a usage error, a setting that its stage refuses, or an output that would
/// overwrite an input (`ConfigErrorKind::OverwritesInput`, from `weir run --check` and when
/// the pipeline is built, before anything is written). A pipeline file that cannot be read,
/// or inputs that cannot be found, are runtime errors (exit status 1).
fn is_usage_error(e: &anyhow::Error) -> bool {
    if e.downcast_ref::<UsageError>().is_some() {
        return true;
    }
    // `BuildError::Config` is transparent: its `source()` skips the `ConfigError` itself.
    e.chain()
        .find_map(|c| {
            c.downcast_ref::<ConfigError>()
                .or_else(|| match c.downcast_ref::<BuildError>() {
                    Some(BuildError::Config(c)) => Some(c),
                    _ => None,
                })
        })
        .is_some_and(|c| {
            !matches!(
                *c.kind,
                ConfigErrorKind::Io(_)
                    | ConfigErrorKind::NoMatch { .. }
                    | ConfigErrorKind::Unreadable { .. }
            )
        })
}

/// Whether a cause speaks for itself: a store error that names the database and says what
/// is wrong with it in the user's words (a lock held by another import, a directory that is
/// not an archive), which needs no `sink archive:` in front.
fn speaks_for_itself(cause: &(dyn std::error::Error + 'static)) -> bool {
    matches!(
        cause.downcast_ref::<StoreError>(),
        Some(
            StoreError::Locked { .. }
                | StoreError::NotAnArchive { .. }
                | StoreError::NoArchive { .. }
                | StoreError::NoDatabase { .. }
        )
    )
}

/// The error and its causes, each cause only when its text adds something; from the last
/// cause that speaks for itself ([`speaks_for_itself`]), when there is one.
fn render(e: &anyhow::Error) -> String {
    let mut out = String::new();
    let skip = e.chain().position(speaks_for_itself).unwrap_or(0);
    for cause in e.chain().skip(skip) {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// A multi-threaded runtime with at least two workers.
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let n = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(n)
        .thread_name("weir-worker")
        .enable_all()
        .build()
}

/// Runs `work` to its end on a new [`runtime`], then stops the runtime (blocked stdin reads
/// must not keep the process alive).
fn on_runtime(work: impl std::future::Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    let rt = runtime().context("cannot start the async runtime")?;
    let result = rt.block_on(work);
    rt.shutdown_timeout(Duration::from_millis(100));
    result
}

/// Runs the command line; returns the exit status.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage(&e),
    };
    init_logging(cli.verbose, cli.log_format);
    // Before anything is created: every file of this process gets it (a writer otherwise
    // takes its archive directory's, see `weir::unstable::store`'s writers).
    weir::unstable::store::manage_umask(cli.umask);
    if let Some(path) = &cli.concepts {
        use weir::unstable::query::concepts;
        match concepts::Concepts::load(path) {
            Ok(c) => concepts::install(c),
            Err(e) => {
                say!("weir: error: --concepts {e}");
                return ExitCode::from(2);
            }
        }
    }
    // The commands that read an archive run on this thread and their own pools: no runtime
    // (its threads cost a query started from a shell about a millisecond).
    let result = match cli.command {
        Command::Export(Deferred(args)) => search::export(args),
        Command::Count(Deferred(args)) => search::count(args),
        Command::Get(Deferred(args)) => search::get(args),
        Command::Explore(Deferred(args)) => explore::explore(args),
        Command::Pivot(Deferred(args)) => explore::pivot(args),
        Command::Intel(Deferred(args)) => intel::intel(args),
        Command::Info(Deferred(args)) => archive::info(args),
        Command::Inspect(Deferred(args)) => archive::inspect(args),
        Command::Verify(Deferred(args)) => archive::verify(args),
        Command::Erase(Deferred(args)) => maintain::erase(args),
        Command::Compact(Deferred(args)) => maintain::compact(args),
        Command::Completions(Deferred(args)) => docs::completions(args),
        Command::Man(Deferred(args)) => docs::man(args),
        Command::Convert(Deferred(args)) => on_runtime(convert::run(args)),
        Command::Import(Deferred(args)) => on_runtime(import::import(args)),
        Command::Run(Deferred(args)) => on_runtime(import::run(args)),
        Command::Serve(Deferred(args)) => on_runtime(serve::serve(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if weir::unstable::codec::writer::is_output_closed(e.as_ref()) => ExitCode::SUCCESS,
        Err(e) => {
            say!("weir: error: {}", render(&e));
            if is_usage_error(&e) {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// Prints clap's error in weir's style (`weir: error: …`, then clap's usage line and hint),
/// or the help and version texts that clap reports as errors, as clap would; returns the
/// exit status (2 for a usage error, 0 for `--help` and `--version`).
fn usage(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    use std::io::Write as _;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        // Help on stdout (stderr for a missing subcommand), coloured only on a terminal
        // and not under NO_COLOR (clap's anstream decides).
        let _ = e.print();
        return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    }
    // The plain text (no colour): `error: MESSAGE\n\n[tip]\nUsage: …\n\nFor more …`.
    let text = e.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    let text = match usage_tip(e) {
        Some(tip) => with_tip(text, &tip),
        None => text.to_string(),
    };
    let _ = write!(std::io::stderr().lock(), "weir: error: {text}");
    ExitCode::from(2)
}

/// The tip for the usage mistakes clap's own tips miss: `--format` (clap offers
/// `--log-format`, weir's log lines, where the output format `--to` was meant) and an
/// expression the shell split into words (`weir export id.orig_h == 1.2.3.4`).
fn usage_tip(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    if arg == "--format" || arg.starts_with("--format=") {
        return Some(
            "the output format is `--to FORMAT` (table, zeek-tsv, json, csv, arrow, parquet); `--log-format` formats weir's own log lines".into(),
        );
    }
    if arg.starts_with('-') && !arg.starts_with("-=") {
        return None;
    }
    Some("an expression is one argument: quote it for the shell, `'id.orig_h == 10.0.0.1 && uid == \"C1\"'`".into())
}

/// `text` (clap's rendering without `error: `) with `tip` after its first line, in place of
/// clap's own tip.
fn with_tip(text: &str, tip: &str) -> String {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let rest: Vec<&str> = rest
        .lines()
        .filter(|l| !l.trim_start().starts_with("tip: "))
        .collect();
    let rest = rest.join("\n");
    let rest = rest.trim_start_matches('\n');
    format!("{first}\n\n  tip: {tip}\n\n{rest}\n")
}

/// `n` and the noun, singular for 1: `1 event`, `2 events`, `0 batches`.
pub(crate) fn plural(n: u64, one: &str) -> String {
    match (n, one) {
        (1, _) => format!("1 {one}"),
        (_, "batch") => format!("{n} batches"),
        _ => format!("{n} {one}s"),
    }
}

/// Prints the rows skipped under `--on-error skip`, if any.
fn report_skips(skipped: &weir::unstable::error::SkipReport) {
    if skipped.skipped == 0 {
        return;
    }
    say!(
        "weir: skipped {} bad {}",
        skipped.skipped,
        if skipped.skipped == 1 { "row" } else { "rows" }
    );
    for e in &skipped.first {
        say!("  {e}");
    }
    if skipped.skipped > skipped.first.len() as u64 {
        say!("  ...");
    }
}

/// Prints the sources' warnings.
fn report_warnings(warnings: &[String]) {
    for w in warnings {
        say!("weir: warning: {w}");
    }
}
