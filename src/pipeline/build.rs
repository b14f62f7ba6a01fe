//! Builds a runnable [`Pipeline`] from a validated [`PipelineSpec`] (a pipeline file, or the
//! pipeline of `weir import`, which is [`PipelineSpec::for_import`]: one code path for both).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use futures::{Sink, SinkExt};

use super::config::{
    Decompress, InputFile, InputFormat, OutputFormat as SpecOutput, PipelineSpec, SinkSpec,
    StageKind, SyncMode, TransformSpec,
};
use super::decode::SourceConfig;
use super::{BoxError, Pipeline, PipelineError, PipelineOptions, StageId};
use crate::batch::Batch;
use crate::batcher::BatchConfig;
use crate::codec::writer::{writer_for, OutputFormat, WriterSink};
use crate::codec::ReaderOptions;
use crate::source::{Compression, Format, Input};
use crate::store::{ArchiveSink, StoreError, StoreOptions, Summary};
use crate::wal::SyncPolicy;

/// What a built pipeline exposes besides the pipeline itself.
#[derive(Debug, Default)]
pub struct Built {
    /// The archive sinks: name, database directory, and what the sink wrote (set when it
    /// closes).
    pub archives: Vec<ArchiveHandle>,
    /// Warnings from opening the archives (e.g. a torn WAL tail was discarded).
    pub warnings: Vec<String>,
}

/// An archive sink of a built pipeline.
#[derive(Debug, Clone)]
pub struct ArchiveHandle {
    /// The sink's stage name.
    pub name: String,
    /// The database directory.
    pub db: std::path::PathBuf,
    /// What the sink wrote, once it has closed cleanly.
    pub summary: Arc<Mutex<Option<Summary>>>,
    /// Segment files in the directory when the sink was opened.
    pub segments_before: u64,
}

impl ArchiveHandle {
    /// Segments sealed since the sink opened: from the summary once closed, else by counting
    /// the segment files in the directory (for progress display).
    pub fn segments_written(&self) -> u64 {
        if let Some(s) = self.summary.lock().ok().and_then(|s| s.clone()) {
            return s.segments;
        }
        count_segments(&self.db).saturating_sub(self.segments_before)
    }
}

/// Segment files (`*.seg`) in a database directory.
fn count_segments(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir.join(crate::store::SEGMENTS_DIR)).map_or(0, |rd| {
        rd.flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".seg"))
            .count() as u64
    })
}

/// An [`ArchiveSink`] that keeps its summary when it closes.
struct KeepSummary {
    sink: ArchiveSink,
    slot: Arc<Mutex<Option<Summary>>>,
}

impl Sink<Batch> for KeepSummary {
    type Error = StoreError;
    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), StoreError>> {
        Pin::new(&mut self.sink).poll_ready(cx)
    }
    fn start_send(mut self: Pin<&mut Self>, item: Batch) -> Result<(), StoreError> {
        Pin::new(&mut self.sink).start_send(item)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), StoreError>> {
        Pin::new(&mut self.sink).poll_flush(cx)
    }
    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), StoreError>> {
        let r = ready!(Pin::new(&mut self.sink).poll_close(cx));
        if r.is_ok() {
            if let Ok(mut slot) = self.slot.lock() {
                *slot = self.sink.summary().cloned();
            }
        }
        Poll::Ready(r)
    }
}

fn sync_policy(s: SyncMode) -> SyncPolicy {
    match s {
        SyncMode::Always => SyncPolicy::Always,
        SyncMode::Batch => SyncPolicy::Batch,
        SyncMode::Never => SyncPolicy::Never,
    }
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
        ..PipelineOptions::default()
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
                let shown = path.display().to_string();
                let sink = WriterSink::new(writer_for(output(*format)), file)
                    .sink_map_err(move |e| -> BoxError { format!("{shown}: {e}").into() });
                pipeline.add_sink(&stage.name, &inputs, sink)?
            }
            StageKind::Sink(SinkSpec::Archive(a)) => {
                let mut opts = StoreOptions::default();
                if let Some(m) = a.max_segment_size {
                    opts.max_segment_size = m;
                }
                if let Some(s) = a.sync {
                    opts.sync = sync_policy(s);
                }
                let db = a.db.clone();
                let segments_before = count_segments(&db);
                let opened = tokio::task::spawn_blocking(move || ArchiveSink::open(&db, opts))
                    .await
                    .map_err(|e| PipelineError::Sink {
                        name: stage.name.clone(),
                        error: format!("cannot open the archive: {e}").into(),
                    })?;
                let (sink, report) = opened.map_err(|e| PipelineError::Sink {
                    name: stage.name.clone(),
                    error: Box::new(e),
                })?;
                built.warnings.extend(
                    report
                        .warnings
                        .into_iter()
                        .map(|w| format!("{}: {w}", a.db.display())),
                );
                let slot = Arc::new(Mutex::new(None));
                built.archives.push(ArchiveHandle {
                    name: stage.name.clone(),
                    db: a.db.clone(),
                    summary: slot.clone(),
                    segments_before,
                });
                pipeline.add_sink(&stage.name, &inputs, KeepSummary { sink, slot })?
            }
        };
        ids.push(id);
    }
    Ok((pipeline, built))
}
