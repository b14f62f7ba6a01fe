//! `weir convert`: Zeek logs in, Zeek TSV or JSON lines out on stdout; a pipeline of one
//! source (the inputs in order) and one stdout sink.

use clap::Args;

use weir::codec::writer::OutputFormat;
use weir::codec::StdoutSinkConfig;
use weir::pipeline::build::build;
use weir::pipeline::config::{PipelineSpec, Stage, StageConfig};
use weir::pipeline::PipelineOptions;

use super::args::{choice, SourceArgs};
use super::signals;

#[derive(Debug, Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Output format.
    #[arg(long, value_parser = choice::<OutputFormat>(), value_name = "FORMAT",
          default_value_t = StdoutSinkConfig::default().format)]
    to: OutputFormat,
}

/// Runs `weir convert`.
pub async fn run(args: ConvertArgs) -> anyhow::Result<()> {
    let stop = signals::install();
    let sink = StdoutSinkConfig { format: args.to };
    let source = args.source.config();
    // Fail on a missing input before anything is written.
    source.inputs()?;
    let spec = PipelineSpec {
        origin: "weir convert".into(),
        options: PipelineOptions::default(),
        stages: vec![
            Stage {
                name: "input".into(),
                line: None,
                config: StageConfig::source(source),
                inputs: vec![],
            },
            Stage {
                name: "stdout".into(),
                line: None,
                config: StageConfig::Stdout(sink),
                inputs: vec![0],
            },
        ],
    };
    let (pipeline, _) = build(&spec).await?;
    signals::forward(stop, pipeline.shutdown_token());
    let summary = pipeline.run().await?;
    super::report_warnings(&summary.warnings);
    super::report_skips(&summary.skipped);
    Ok(())
}
