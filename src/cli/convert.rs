//! `weir convert`: Zeek logs in, Zeek TSV or JSON lines out on stdout.

use clap::Args;

use weir::codec::writer::{writer_for, WriterSink};
use weir::codec::ReaderOptions;
use weir::pipeline::decode::SourceConfig;
use weir::pipeline::{Pipeline, PipelineOptions};
use weir::source::expand_inputs;

use super::{signals, FromFormat, OnErrorArg, ToFormat};

/// Bytes in flight per edge: enough to keep the parser and the writer busy.
const CAPACITY: usize = 16 << 20;

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Input format.
    #[arg(long, value_enum, default_value_t = FromFormat::Auto)]
    from: FromFormat,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ToFormat::ZeekTsv)]
    to: ToFormat,
    /// What to do with a row that does not parse.
    #[arg(long = "on-error", value_enum, default_value_t = OnErrorArg::Fail)]
    on_error: OnErrorArg,
    /// Files or glob patterns, read in order (gzip and zstd detected); `-` or none: stdin.
    #[arg(value_name = "FILE")]
    files: Vec<String>,
}

/// Runs `weir convert`: a pipeline of one source (the inputs in order) and one stdout sink.
pub async fn run(args: ConvertArgs) -> anyhow::Result<()> {
    let stop = signals::install();
    let inputs = expand_inputs(&args.files)?;
    let reader = ReaderOptions {
        on_error: args.on_error.into(),
        ..ReaderOptions::default()
    };
    let mut config = SourceConfig::zeek(reader, CAPACITY);
    config.format = args.from.into();
    let mut p = Pipeline::new(PipelineOptions {
        channel_capacity: CAPACITY,
        ..PipelineOptions::default()
    });
    let src = p.add_source("input", inputs, config)?;
    let out = WriterSink::new(writer_for(args.to.into()), tokio::io::stdout());
    p.add_sink("stdout", &[src], out)?;
    signals::forward(stop, p.shutdown_token());
    let summary = p.run().await?;
    super::report_warnings(&summary.warnings);
    super::report_skips(&summary.skipped);
    Ok(())
}
