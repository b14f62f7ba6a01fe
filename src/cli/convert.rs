//! `weir convert`: Zeek logs in, Zeek TSV, JSON lines, Arrow, a table or CSV out on stdout; a pipeline of one
//! source (the inputs in order), a filter transform with `--where`, and one stdout sink.

use clap::Args;

use weir::unstable::codec::writer::{JsonTimestamps, OutputFormat};
use weir::unstable::codec::{DirSinkConfig, StdoutSinkConfig};
use weir::unstable::pipeline::build::build;
use weir::unstable::pipeline::config::{PipelineSpec, Stage, StageConfig};
use weir::unstable::pipeline::PipelineOptions;
use weir::unstable::query::FilterConfig;

use super::args::{choice, SourceArgs};
use super::lake::LakeArgs;
use super::signals;
use super::UsageError;

#[derive(Debug, Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Output format.
    #[arg(long, value_parser = choice::<OutputFormat>(), value_name = "FORMAT",
          default_value_t = StdoutSinkConfig::default().format)]
    to: OutputFormat,
    /// How `--to json` writes times: `epoch` seconds (Zeek's default), `iso8601` strings or
    /// `millis`.
    #[arg(long = "json-timestamps", value_parser = choice::<JsonTimestamps>(), value_name = "FORMAT",
          default_value_t = StdoutSinkConfig::default().json_timestamps)]
    json_timestamps: JsonTimestamps,
    /// Keep only the events matching this expression (the pipeline's filter transform; see
    /// the guide, docs/book/src/searching/index.md).
    #[arg(long = "where", value_name = "EXPR")]
    filter: Option<String>,
    /// Write one file per log path into this directory (`conn.log`, `dns.log`, …, or
    /// `conn.json`, `conn.csv`, … with `--to json`, `--to csv`), as Zeek does, instead of stdout; the directory is
    /// created when missing (its parent must exist). With `--to parquet` (required there):
    /// the lake's directory, created when missing.
    #[arg(long, value_name = "DIR")]
    output: Option<std::path::PathBuf>,
    #[command(flatten)]
    lake: LakeArgs,
}

/// Runs `weir convert`.
pub async fn run(args: ConvertArgs) -> anyhow::Result<()> {
    let stop = signals::install();
    let (sink_name, sink) = match args.output {
        Some(dir) if args.to == OutputFormat::Parquet => {
            ("output", StageConfig::Parquet(args.lake.config(dir)?))
        }
        None if args.to == OutputFormat::Parquet => {
            return Err(UsageError("--to parquet writes a lake: give --output DIR".into()).into())
        }
        Some(dir) => (
            "output",
            StageConfig::Directory(DirSinkConfig {
                dir,
                format: args.to,
                json_timestamps: args.json_timestamps,
            }),
        ),
        None => (
            "stdout",
            StageConfig::Stdout(StdoutSinkConfig {
                format: args.to,
                json_timestamps: args.json_timestamps,
            }),
        ),
    };
    let mut source = args.source.config();
    // A conversion writes the events as they are: Community IDs are computed at import.
    source.community_id = weir::unstable::codec::community_id::CommunityId::Off;
    // Fail on a missing input before anything is written.
    source.inputs()?;
    let mut stages = vec![Stage {
        name: "input".into(),
        line: None,
        config: StageConfig::source(source),
        inputs: vec![],
    }];
    if let Some(expr) = args.filter {
        let filter = FilterConfig::new(expr);
        // A malformed expression is a usage error, reported before anything is read.
        filter
            .validate()
            .map_err(|e| UsageError(format!("--where: {}", e.problem)))?;
        stages.push(Stage {
            name: "where".into(),
            line: None,
            config: StageConfig::Filter(filter),
            inputs: vec![0],
        });
    }
    stages.push(Stage {
        name: sink_name.into(),
        line: None,
        config: sink,
        inputs: vec![stages.len() - 1],
    });
    let spec = PipelineSpec {
        origin: "weir convert".into(),
        options: PipelineOptions::default(),
        stages,
    };
    // The output directory's parent must exist, and the directory must not hold an input (its files would be
    // overwritten): the same checks as `weir run --check`.
    spec.check_paths()?;
    // A refused setting in the words of its flag (`--schema`), exit 2.
    spec.validate().map_err(super::import::flag_error)?;
    let (pipeline, _) = build(&spec).await?;
    signals::forward(stop, pipeline.shutdown_token());
    let summary = pipeline.run().await?;
    super::report_warnings(&summary.warnings);
    super::report_skips(&summary.skipped);
    Ok(())
}
