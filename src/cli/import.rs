//! `weir import` and `weir run`: both build a pipeline from a [`PipelineSpec`] (for import,
//! [`PipelineSpec::for_import`], the same graph as `pipelines/zeek-to-archive.toml`) and run
//! it with progress, signals, a summary line and optional metrics.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use tokio_util::sync::CancellationToken;

use weir::pipeline::build::build;
use weir::pipeline::config::{
    BatchSpec, ImportSpec, InputFormat, LoadOptions, PipelineSpec, SyncMode,
};
use weir::source::{expand_inputs, total_size, Input};

use super::progress::{bytes, Progress};
use super::{parse_duration, signals, FromFormat, OnErrorArg, UsageError};

/// `--sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SyncArg {
    /// Fsync the WAL before each batch is acknowledged: survives power loss; slowest.
    Always,
    /// Write each batch to the WAL before acknowledging it (survives kill -9); fsync the WAL
    /// at every flush and seal, and segments always (the default).
    Batch,
    /// Never fsync: survives kill -9, not an OS crash or power loss (benchmarks, throwaway).
    Never,
}

impl From<SyncArg> for SyncMode {
    fn from(s: SyncArg) -> SyncMode {
        match s {
            SyncArg::Always => SyncMode::Always,
            SyncArg::Batch => SyncMode::Batch,
            SyncArg::Never => SyncMode::Never,
        }
    }
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The archive directory.
    #[arg(long, env = "WEIR_DB", default_value = "./weir.db", value_name = "DIR")]
    db: PathBuf,
    /// Input format.
    #[arg(long, value_enum, default_value_t = FromFormat::Auto)]
    from: FromFormat,
    /// Most events per batch.
    #[arg(long, default_value_t = BatchSpec::DEFAULT_MAX_EVENTS as u64, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=(1 << 24)))]
    batch_size: u64,
    /// Longest time a partial batch waits before it is written (`250ms`, `1s`, `2m`).
    #[arg(long, default_value = "1s", value_parser = parse_duration, value_name = "DUR")]
    batch_timeout: Duration,
    /// Largest segment file (`512MiB`, `1GiB`, `4096KiB`; a plain number is MiB); below 2 GiB.
    #[arg(long, value_name = "SIZE")]
    max_segment_size: Option<String>,
    /// What to do with a row that does not parse.
    #[arg(long = "on-error", value_enum, default_value_t = OnErrorArg::Fail)]
    on_error: OnErrorArg,
    /// When the write-ahead log is synced to disk (default: batch).
    #[arg(long, value_enum)]
    sync: Option<SyncArg>,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
    /// Write per-stage metrics as JSON to this file at the end.
    #[arg(long, value_name = "FILE")]
    metrics: Option<PathBuf>,
    /// Files or glob patterns, read in order (gzip and zstd detected); `-` or none: stdin.
    #[arg(value_name = "FILE")]
    files: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Only validate the pipeline file (including its paths), do not run it.
    #[arg(long)]
    check: bool,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
    /// Write per-stage metrics as JSON to this file at the end.
    #[arg(long, value_name = "FILE")]
    metrics: Option<PathBuf>,
    /// The pipeline definition (TOML).
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

/// Parses `--max-segment-size`, refusing sizes the archive cannot write (usage error).
fn segment_size(text: &str) -> anyhow::Result<u64> {
    let usage = |e: &dyn std::fmt::Display| {
        anyhow::Error::new(UsageError(format!("--max-segment-size {text}: {e}")))
    };
    let size = weir::size::parse_size(text).map_err(|e| usage(&e))?;
    weir::segment::check_max_segment_size(size).map_err(|e| usage(&e))?;
    Ok(size)
}

/// Runs `weir import`.
pub async fn import(args: ImportArgs) -> anyhow::Result<()> {
    let stop = signals::install();
    let max_segment_size = args
        .max_segment_size
        .as_deref()
        .map(segment_size)
        .transpose()?;
    let inputs = expand_inputs(&args.files)?;
    let total = total_size(&inputs);
    let import = ImportSpec {
        inputs: inputs
            .into_iter()
            .map(|i| match i {
                Input::Path(p) => p,
                _ => PathBuf::from("-"),
            })
            .collect(),
        db: args.db,
        format: match args.from {
            FromFormat::Auto => InputFormat::Auto,
            FromFormat::ZeekTsv => InputFormat::ZeekTsv,
            FromFormat::ZeekJson => InputFormat::ZeekJson,
        },
        on_error: args.on_error.into(),
        batch: BatchSpec {
            max_events: args.batch_size as usize,
            timeout: args.batch_timeout,
            ..BatchSpec::default()
        },
        max_segment_size,
        sync: args.sync.map(Into::into),
        ..ImportSpec::default()
    };
    let spec = PipelineSpec::for_import(&import);
    execute(
        &spec,
        args.quiet,
        args.metrics.as_deref(),
        total,
        "imported",
        stop,
    )
    .await
}

/// Runs `weir run`.
pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let stop = signals::install();
    let options = LoadOptions {
        check_paths: args.check,
        ..LoadOptions::default()
    };
    let spec = PipelineSpec::load(&args.file, &options)?;
    if args.check {
        eprintln!(
            "{}: ok ({} stages: {})",
            args.file.display(),
            spec.stages.len(),
            spec.stages
                .iter()
                .map(|s| s.table())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(());
    }
    execute(
        &spec,
        args.quiet,
        args.metrics.as_deref(),
        None,
        "processed",
        stop,
    )
    .await
}

/// Builds and runs a pipeline spec with signals, progress, summary and metrics.
async fn execute(
    spec: &PipelineSpec,
    quiet: bool,
    metrics_file: Option<&std::path::Path>,
    total: Option<u64>,
    verb: &str,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let (pipeline, built) = build(spec).await?;
    let counters = pipeline.source_counters();
    if let Some(t) = total {
        counters.add_total(t);
    }
    let metrics = pipeline.metrics();
    let sink_name = spec
        .sinks()
        .next()
        .map(|(_, s, _)| s.name.clone())
        .unwrap_or_default();
    let archives = built.archives.clone();
    let segments: Option<Arc<dyn Fn() -> u64 + Send + Sync>> = if archives.is_empty() {
        None
    } else {
        Some(Arc::new(move || {
            archives.iter().map(|a| a.segments_written()).sum()
        }))
    };
    super::report_warnings(&built.warnings);
    let done = CancellationToken::new();
    let progress = Progress {
        counters: counters.clone(),
        metrics: metrics.clone(),
        stage: sink_name.clone(),
        segments: segments.clone(),
    }
    .spawn(quiet, done.clone());
    signals::forward(stop, pipeline.shutdown_token());
    let result = pipeline.run().await;
    done.cancel();
    if let Some(p) = progress {
        let _ = p.await;
    }
    if let Some(path) = metrics_file {
        let text = serde_json::to_string_pretty(&metrics.to_json())?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write metrics to {}", path.display()))?;
    }
    let summary = result?;
    super::report_warnings(&summary.warnings);
    super::report_skips(&summary.skipped);
    let events = metrics.get(&sink_name).map_or(0, |m| m.events());
    let secs = summary.elapsed.as_secs_f64();
    let mut line = format!(
        "weir: {verb} {events} events, {} read, in {:.2} s ({:.0} events/s)",
        bytes(counters.bytes_read()),
        secs,
        events as f64 / secs.max(1e-9)
    );
    if let Some(seg) = &segments {
        line.push_str(&format!(", {} segments written", seg()));
    }
    if summary.interrupted {
        line.push_str(" (interrupted)");
    }
    eprintln!("{line}");
    Ok(())
}
