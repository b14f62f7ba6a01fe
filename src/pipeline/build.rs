//! Builds a runnable [`Pipeline`] from a validated [`PipelineSpec`] (a pipeline file, or the
//! pipeline of `weir import`, which is [`PipelineSpec::for_import`]: one code path for both).

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use futures::{Sink, SinkExt, StreamExt};

use super::config::{ConfigError, PipelineSpec, StageConfig};
use super::{BoxError, Pipeline, PipelineError, StageId};
use crate::batch::Batch;
use crate::batcher::BatchConfig;
use crate::source::SourceConfig;
use crate::store::{ArchiveSink, StoreError, Summary};

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
    /// The ID of the first event this sink appends (the events in the archive when it was
    /// opened): after a failed run, the events from here to the archive's end are what the
    /// run committed.
    pub first_id: u64,
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

/// An [`ArchiveSink`] that keeps its summary when it closes, and warns once when the
/// import brings events that its retention period erases ([`RetainWatch`]).
struct KeepSummary {
    sink: ArchiveSink,
    slot: Arc<Mutex<Option<Summary>>>,
    watch: Option<RetainWatch>,
}

/// Watches the batches of an archive sink with a retention period until the first one
/// holding an event older than the period: a back-fill that the archive erases again, which
/// is said at once (not only in the final "retention erased" line).
struct RetainWatch {
    retain: Duration,
    db: PathBuf,
    /// The pipeline's warnings ([`Pipeline::warnings`]).
    warnings: Arc<Mutex<Vec<String>>>,
}

impl RetainWatch {
    /// The warning for `batch` if it holds an event before the cut-off now.
    fn check(&self, batch: &Batch) -> Option<String> {
        const NS: i64 = 1_000_000_000;
        let (oldest, _) = batch.ts_range()?;
        // Whole seconds, rounded down: every event before it is past the period.
        let cutoff = crate::store::retention_cutoff(self.retain);
        let cutoff = cutoff - cutoff.rem_euclid(NS);
        (oldest < cutoff).then(|| {
            format!(
                "{}: events before {} are erased by the retention period of {} (--retain, retain); this import brings older ones (first seen: {})",
                self.db.display(),
                utc(cutoff),
                crate::duration::format_duration(self.retain),
                utc(oldest)
            )
        })
    }
}

/// A time as RFC 3339 UTC, without a zero fraction: `2026-09-03T07:00:00Z`.
fn utc(ns: i64) -> String {
    let mut out = Vec::new();
    crate::codec::zeek::scalar::push_rfc3339(&mut out, ns);
    let text = String::from_utf8_lossy(&out).into_owned();
    match text.strip_suffix(".000000Z") {
        Some(whole) => format!("{whole}Z"),
        None => text,
    }
}

impl Sink<Batch> for KeepSummary {
    type Error = StoreError;
    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), StoreError>> {
        Pin::new(&mut self.sink).poll_ready(cx)
    }
    fn start_send(mut self: Pin<&mut Self>, item: Batch) -> Result<(), StoreError> {
        if let Some(watch) = &self.watch {
            if let Some(w) = watch.check(&item) {
                tracing::warn!("{w}");
                if let Ok(mut list) = watch.warnings.lock() {
                    list.push(w);
                }
                self.watch = None;
            }
        }
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

/// Builds the pipeline of `spec`: validates it, refuses outputs that would overwrite inputs
/// ([`PipelineSpec::check_outputs`]), expands source globs, opens output files and
/// archives. Must be called within a tokio runtime.
pub async fn build(spec: &PipelineSpec) -> Result<(Pipeline, Built), BuildError> {
    spec.validate()?;
    // Before any output file is created (truncated) or archive opened.
    spec.check_outputs()?;
    let capacity = spec.options.channel_capacity;
    let mut pipeline = Pipeline::new(spec.options.clone());
    let mut built = Built::default();
    let mut ids: Vec<StageId> = Vec::with_capacity(spec.stages.len());
    // Followed sources resume from the checkpoints of the (first) archive; if the archive's
    // checkpoints are lost, only a source that chose where to start may run (and its choice
    // clears the archive's flag once the import commits; see `crate::store::catalog`).
    let follow_from: Vec<crate::checkpoint::StartFrom> = spec
        .stages
        .iter()
        .filter_map(|s| match &s.config {
            StageConfig::File(src) | StageConfig::Stdin(src) if src.follow => Some(src.from),
            _ => None,
        })
        .collect();
    let mut resumes = Vec::new();
    // So do files read once (without an archive, they carry no checkpoints).
    let mut batch_resumes = Vec::new();
    let mut checkpoints = None;
    // Readers cut batches at the size of the first batch transform downstream.
    let batch_rows = spec
        .stages
        .iter()
        .find_map(|s| match &s.config {
            StageConfig::Batch(b) => Some(b.max_events),
            _ => None,
        })
        .unwrap_or(BatchConfig::DEFAULT_MAX_EVENTS);
    for (i, stage) in spec.stages.iter().enumerate() {
        let inputs: Vec<StageId> = stage.inputs.iter().map(|&j| ids[j]).collect();
        let sink_error = |error: BoxError| PipelineError::Sink {
            name: stage.name.clone(),
            error,
        };
        let id = match &stage.config {
            StageConfig::File(src) | StageConfig::Stdin(src) => {
                let files = spec.expand_source(i)?;
                // Each input decoded ahead gets its own channel; a smaller one suffices to
                // keep the decoders busy and bounds memory with many inputs.
                let per_input = capacity.min(SourceConfig::DEFAULT_CHANNEL_CAPACITY);
                let config = src.build(&stage.name, batch_rows, per_input).map_err(|e| {
                    ConfigError::new(
                        &spec.origin,
                        stage.line,
                        Some(&stage.table()),
                        Some(e.key),
                        e.problem.into(),
                    )
                })?;
                let mut config = config;
                config.reader.columns = spec.stores_columns(i);
                if let Some(f) = &config.follow {
                    resumes.push(f.resume.clone());
                }
                if let Some(r) = &config.resume {
                    batch_resumes.push(r.clone());
                }
                pipeline.add_source(&stage.name, files, config)?
            }
            StageConfig::Batch(b) => pipeline.add_batcher(&stage.name, &inputs, *b)?,
            StageConfig::Filter(f) => {
                let mut filter = f.build().map_err(|e| {
                    ConfigError::new(
                        &spec.origin,
                        stage.line,
                        Some(&stage.table()),
                        Some(e.key),
                        e.problem.into(),
                    )
                })?;
                pipeline.add_transform(&stage.name, &inputs, move |s| {
                    s.filter_map(move |r| {
                        let out = match r {
                            Ok(b) => {
                                // A group's batches stay a group (see `Batch::group_next`):
                                // a dropped last batch leaves an empty one in its place.
                                let next = b.group_next();
                                match filter.apply(b) {
                                    Ok(Some(mut b)) => {
                                        b.set_group_next(next);
                                        Some(Ok(b))
                                    }
                                    Ok(None) if !next => Some(Ok(group_end())),
                                    Ok(None) => None,
                                    Err(e) => Some(Err(BoxError::from(e))),
                                }
                            }
                            Err(e) => Some(Err(e)),
                        };
                        futures::future::ready(out)
                    })
                    .boxed()
                })?
            }
            StageConfig::Query(q) => {
                let transform = q.build().map_err(|e| {
                    ConfigError::new(
                        &spec.origin,
                        stage.line,
                        Some(&stage.table()),
                        Some(e.key),
                        e.problem.into(),
                    )
                })?;
                pipeline.add_transform(&stage.name, &inputs, move |s| query_stream(s, transform))?
            }
            StageConfig::Stdout(s) => pipeline.add_sink(&stage.name, &inputs, s.build())?,
            StageConfig::Directory(d) => {
                let shown = d.dir.display().to_string();
                let sink = d
                    .build()
                    .sink_map_err(move |e| -> BoxError { format!("{shown}: {e}").into() });
                pipeline.add_sink(&stage.name, &inputs, sink)?
            }
            StageConfig::Parquet(p) => {
                let shown = p.dir.display().to_string();
                let sink = p
                    .build()
                    .map_err(|e| sink_error(format!("{shown}: {e}").into()))?
                    .sink_map_err(move |e| -> BoxError { format!("{shown}: {e}").into() });
                pipeline.add_sink(&stage.name, &inputs, sink)?
            }
            StageConfig::FileSink(f) => {
                let shown = f.path.display().to_string();
                let sink = f
                    .build()
                    .await
                    .map_err(|e| sink_error(format!("cannot create {shown}: {e}").into()))?;
                let sink =
                    sink.sink_map_err(move |e| -> BoxError { format!("{shown}: {e}").into() });
                pipeline.add_sink(&stage.name, &inputs, sink)?
            }
            StageConfig::Archive(a) => {
                let segments_before = count_segments(&a.db);
                let config = a.clone();
                let first_archive = checkpoints.is_none();
                let follow_from = follow_from.clone();
                // Live matching: the archive's indicator sets and the stage's Sigma rules.
                let rules: Vec<std::path::PathBuf> = a.rules_dir.iter().cloned().collect();
                let mut live = crate::detect::LiveMatch::open(&a.db, &rules)
                    .map_err(|e| sink_error(Box::new(e)))?;
                if a.retro {
                    live = live.with_background_retro();
                }
                let opened = tokio::task::spawn_blocking(move || {
                    config.build_with(
                        |store, report| {
                            if !first_archive || follow_from.is_empty() || !report.checkpoints_lost
                            {
                                return Ok(());
                            }
                            if follow_from.contains(&crate::checkpoint::StartFrom::Checkpoints) {
                                return Err(crate::store::StoreError::CheckpointsLost {
                                    dir: store.dir().to_path_buf(),
                                });
                            }
                            store.clear_checkpoints_lost();
                            Ok(())
                        },
                        Some(Box::new(live)),
                    )
                })
                .await
                .map_err(|e| sink_error(format!("cannot open the archive: {e}").into()))?;
                let (sink, report) = opened.map_err(|e| sink_error(Box::new(e)))?;
                let first_id = report.next_id;
                if checkpoints.is_none() {
                    checkpoints = Some(report.checkpoints.clone());
                }
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
                    first_id,
                });
                let watch = a.retain.map(|retain| RetainWatch {
                    retain,
                    db: a.db.clone(),
                    warnings: pipeline.warnings(),
                });
                pipeline.add_sink(&stage.name, &inputs, KeepSummary { sink, slot, watch })?
            }
        };
        ids.push(id);
    }
    for slot in resumes {
        if let (Ok(mut slot), Some(c)) = (slot.lock(), &checkpoints) {
            *slot = c.clone();
        }
    }
    if let Some(c) = &checkpoints {
        for r in batch_resumes {
            r.set_checkpoints(c.clone());
        }
    }
    Ok((pipeline, built))
}

/// Why a pipeline could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A setting is refused, or a source's files cannot be found: the definition is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A stage could not be set up (an archive or output file cannot be opened).
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
}

/// The batches of a `query` transform over `input`: each batch's results as it passes, and
/// what the operators hold at the end of the input.
/// An empty batch that ends a group whose last batch a stage dropped (see
/// [`Batch::group_next`]); the stage runner passes it on only after an open group.
fn group_end() -> Batch {
    crate::checkpoint::carrier(Vec::new())
}

fn query_stream(
    input: futures::stream::BoxStream<'static, Result<Batch, BoxError>>,
    transform: crate::query::QueryTransform,
) -> futures::stream::BoxStream<'static, Result<Batch, BoxError>> {
    use std::collections::VecDeque;
    let state = (input, Some(transform), VecDeque::new());
    futures::stream::unfold(
        state,
        |(mut input, mut transform, mut pending)| async move {
            loop {
                if let Some(b) = pending.pop_front() {
                    return Some((Ok(b), (input, transform, pending)));
                }
                let t = transform.as_mut()?;
                let step = match input.next().await {
                    Some(Ok(batch)) => {
                        // The batches out of a group's batch stay in the group (see
                        // `Batch::group_next`); a group's last batch that makes none leaves an
                        // empty one in its place.
                        let next = batch.group_next();
                        t.apply(batch).map(|mut out| {
                            let n = out.len();
                            for (i, b) in out.iter_mut().enumerate() {
                                b.set_group_next(i + 1 < n || next);
                            }
                            if out.is_empty() && !next {
                                out.push(group_end());
                            }
                            out
                        })
                    }
                    Some(Err(e)) => return Some((Err(e), (input, transform, pending))),
                    None => {
                        let out = t.finish();
                        transform = None;
                        out
                    }
                };
                match step {
                    Ok(batches) => pending.extend(batches),
                    Err(e) => return Some((Err(BoxError::from(e)), (input, None, pending))),
                }
            }
        },
    )
    .boxed()
}
