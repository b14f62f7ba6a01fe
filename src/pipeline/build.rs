//! Builds a runnable [`Pipeline`] from a validated [`PipelineSpec`] (a pipeline file, or the
//! pipeline of `weir import`, which is [`PipelineSpec::for_import`]: one code path for both).

use std::sync::Arc;

use super::config::{
    Decompress, InputFile, InputFormat, OutputFormat as SpecOutput, PipelineSpec, SinkSpec,
    StageKind, TransformSpec,
};
use super::decode::SourceConfig;
use super::{Pipeline, PipelineError, PipelineOptions, StageId};
use crate::batcher::BatchConfig;
use crate::codec::writer::{writer_for, OutputFormat, WriterSink};
use crate::codec::ReaderOptions;
use crate::source::{Compression, Format, Input};

/// What a built pipeline exposes besides the pipeline itself.
#[derive(Default)]
pub struct Built {
    /// Names of the archive sinks with their database directories.
    pub archives: Vec<(String, std::path::PathBuf)>,
    /// Segments written so far by the archive sinks, when there are any.
    pub segments: Option<Arc<dyn Fn() -> u64 + Send + Sync>>,
}

fn compression(d: Decompress) -> Compression {
    match d {
        Decompress::Auto => Compression::Auto,
        Decompress::Gzip => Compression::Gzip,
        Decompress::Zstd => Compression::Zstd,
        Decompress::None => Compression::None,
    }
}

fn format(f: InputFormat) -> Format {
    match f {
        InputFormat::Auto => Format::Auto,
        InputFormat::ZeekTsv => Format::ZeekTsv,
        InputFormat::ZeekJson => Format::ZeekJson,
    }
}

fn output(f: SpecOutput) -> OutputFormat {
    match f {
        SpecOutput::ZeekTsv => OutputFormat::ZeekTsv,
        SpecOutput::Json => OutputFormat::Json,
    }
}

/// Builds the pipeline of `spec`: expands source globs, opens output files and archives.
/// Must be called within a tokio runtime.
pub async fn build(spec: &PipelineSpec) -> Result<(Pipeline, Built), PipelineError> {
    let capacity = usize::try_from(spec.channel_capacity).unwrap_or(usize::MAX);
    let mut pipeline = Pipeline::new(PipelineOptions {
        channel_capacity: capacity,
    });
    let mut built = Built::default();
    let mut ids: Vec<StageId> = Vec::with_capacity(spec.stages.len());
    // Readers cut batches at the size of the first batch transform downstream (default 1024).
    let batch_rows = spec
        .stages
        .iter()
        .find_map(|s| match &s.kind {
            StageKind::Transform(TransformSpec::Batch(b)) => Some(b.max_events),
            _ => None,
        })
        .unwrap_or(ReaderOptions::DEFAULT_BATCH_ROWS);
    for (i, stage) in spec.stages.iter().enumerate() {
        let inputs: Vec<StageId> = stage.inputs.iter().map(|&j| ids[j]).collect();
        let id = match &stage.kind {
            StageKind::Source(src) => {
                let files = spec
                    .expand_source(i)
                    .map_err(|e| PipelineError::Graph(e.to_string()))?;
                let inputs: Vec<Input> = files
                    .into_iter()
                    .map(|f| match f {
                        InputFile::Path(p) => Input::Path(p),
                        InputFile::Stdin => Input::Stdin,
                    })
                    .collect();
                let reader = ReaderOptions {
                    source_name: stage.name.clone(),
                    max_line_len: src.max_line_length,
                    batch_rows,
                    on_error: src.on_error,
                    json_default_schema: src.json_schema.clone(),
                };
                let mut config = SourceConfig::zeek(reader, capacity);
                config.compression = compression(src.decompress);
                config.format = format(src.format);
                pipeline.add_source(&stage.name, inputs, config)?
            }
            StageKind::Transform(TransformSpec::Batch(b)) => pipeline.add_batcher(
                &stage.name,
                &inputs,
                BatchConfig {
                    max_events: b.max_events,
                    max_bytes: usize::try_from(b.max_bytes).unwrap_or(usize::MAX),
                    timeout: b.timeout,
                },
            )?,
            StageKind::Sink(SinkSpec::Stdout { format }) => pipeline.add_sink(
                &stage.name,
                &inputs,
                WriterSink::new(writer_for(output(*format)), tokio::io::stdout()),
            )?,
            StageKind::Sink(SinkSpec::File { path, format }) => {
                let file =
                    tokio::fs::File::create(path)
                        .await
                        .map_err(|e| PipelineError::Sink {
                            name: stage.name.clone(),
                            error: format!("cannot create {}: {e}", path.display()).into(),
                        })?;
                pipeline.add_sink(
                    &stage.name,
                    &inputs,
                    WriterSink::new(writer_for(output(*format)), file),
                )?
            }
            StageKind::Sink(SinkSpec::Archive(a)) => {
                built.archives.push((stage.name.clone(), a.db.clone()));
                return Err(PipelineError::Sink {
                    name: stage.name.clone(),
                    error: "the archive sink is not available in this build".into(),
                });
            }
        };
        ids.push(id);
    }
    let _ = Arc::strong_count(&pipeline.metrics());
    Ok((pipeline, built))
}
