//! The pipeline runtime: a graph of `Stream` and `Sink` stages joined by byte-bounded
//! channels.
//!
//! ```text
//!  source "a" (files, in order) ──┐                 ┌──> sink "archive"
//!                                 ├─> batcher "b" ──┤
//!  source "s" (stdin) ────────────┘   (fan-in)      └──> sink "json"   (fan-out / tee)
//! ```
//!
//! A stage is a plain [`futures::Stream`] of batches (sources and transforms) or a
//! [`futures::Sink`] of batches (sinks); [`Pipeline`] wires them up:
//!
//! - every stage runs as its own task, so stages work in parallel; file sources decode on
//!   dedicated threads (see [`crate::source::decode`]);
//! - every edge is a [`channel`] with a capacity in bytes: a slow stage makes the stages
//!   upstream wait (backpressure), so memory stays bounded while the fastest source runs;
//! - a stage with several inputs reads them interleaved as they come (fan-in); the inputs of
//!   one source stage are read in order, one after the other;
//! - a stage with several consumers sends every batch to each of them (fan-out): the slowest
//!   consumer sets the pace, nothing is dropped;
//! - a sink is fed with `feed` while input is ready and flushed once its input pauses (at
//!   most every [`PipelineOptions::flush_interval`], and always within it), so a live source's
//!   batches become durable and visible promptly without a flush per batch; then it is closed.
//!
//! ```
//! use futures::StreamExt;
//! use weir::unstable::codec::ReaderOptions;
//! use weir::unstable::pipeline::Pipeline;
//! use weir::unstable::source::{Input, SourceConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let text = "#separator \\x09\n#path\tx\n#fields\tts\tn\n#types\ttime\tcount\n1.5\t1\n2.5\t2\n";
//! let mut p = Pipeline::default();
//! let config = SourceConfig::zeek(ReaderOptions::default(), 1 << 20);
//! let src = p.add_source("logs", vec![Input::bytes("memory", text)], config)?;
//! let batched = p.add_batcher("batch", &[src], Default::default())?;
//! // Any `Sink<Batch>` will do; here a channel whose other end we read afterwards.
//! let (tx, rx) = futures::channel::mpsc::unbounded();
//! p.add_sink("out", &[batched], tx)?;
//! p.run().await?;
//! let batches: Vec<_> = rx.collect().await;
//! assert_eq!(batches.len(), 1);
//! assert_eq!(batches[0].schema().name, "zeek.x");
//! assert_eq!(batches[0].len(), 2);
//! # Ok(())
//! # }
//! ```
//!
//! Shutdown: [`Pipeline::shutdown_token`] cancelled (e.g. on SIGINT) makes the sources stop
//! reading; everything in flight then drains through the graph, sinks are closed, and
//! [`Pipeline::run`] returns normally with [`RunSummary::interrupted`] set. An error in any
//! stage (bad input under `--on-error fail`, a failing sink) stops the sources the same way,
//! lets the other stages drain, and is returned naming the stage.

pub mod build;
pub mod config;

use std::error::Error as StdError;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::stream::{BoxStream, FuturesUnordered};
use futures::{FutureExt, Sink, SinkExt, Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::batch::Batch;
use crate::batcher::{BatchConfig, Batcher};
use crate::channel::{self, Weighted};
use crate::error::{ReadError, SkipReport};
use crate::metrics::{Metrics, StageMetrics};
use crate::setting::{InvalidSetting, Problem};
use crate::source::decode::{SourceConfig, SourceShared};
use crate::source::{Input, SourceCounters};

/// A boxed error from a stage.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// A boxed stream of batches, as transforms receive and return them.
pub type BatchStream = BoxStream<'static, Result<Batch, BoxError>>;

/// A boxed sink of batches.
pub type BatchSink = std::pin::Pin<Box<dyn Sink<Batch, Error = BoxError> + Send>>;

/// Identifies a stage within its [`Pipeline`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StageId(usize);

/// Why a pipeline failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PipelineError {
    /// A source could not be read, or its input is bad.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A sink failed.
    #[error("sink {name}: {error}")]
    Sink {
        /// The sink's name.
        name: String,
        /// What went wrong (naming the path where there is one).
        #[source]
        error: BoxError,
    },
    /// A source or transform failed.
    #[error("stage {name}: {error}")]
    Stage {
        /// The stage's name.
        name: String,
        /// What went wrong.
        #[source]
        error: BoxError,
    },
    /// The graph is malformed (unknown input, stage without consumer ...).
    #[error("pipeline: {0}")]
    Graph(String),
    /// The metrics endpoint cannot listen on its address.
    #[error("metrics_listen: cannot listen on {addr}: {error}")]
    MetricsListen {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        #[source]
        error: std::io::Error,
    },
    /// The certificate or key of the metrics endpoint cannot be used.
    #[error("metrics endpoint: {0}")]
    MetricsTls(#[from] crate::serve::tls::TlsError),
    /// A certificate for the metrics endpoint, but no endpoint.
    #[error("metrics_tls_cert: there is no metrics endpoint to serve over HTTPS (metrics_listen, --metrics-listen)")]
    MetricsTlsWithoutListen,
}

/// What is wrong with one input of a stage (see [`check_inputs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadInput {
    /// It names no stage.
    Unknown,
    /// It is a sink, which has no output.
    Sink,
    /// It is listed before (its batches would be processed twice).
    Twice,
}

/// Checks the inputs of a stage in order, each resolved to the index of an earlier stage
/// (`None`: no such stage): each exists, is not a sink and is listed once. Returns the position
/// of the first bad input. The one check of a stage's edges, for [`Pipeline`] and pipeline
/// files alike.
pub(crate) fn check_inputs(
    inputs: &[Option<usize>],
    is_sink: impl Fn(usize) -> bool,
) -> Result<(), (usize, BadInput)> {
    for (k, input) in inputs.iter().enumerate() {
        let bad = match *input {
            None => BadInput::Unknown,
            Some(j) if is_sink(j) => BadInput::Sink,
            Some(_) if inputs[..k].contains(input) => BadInput::Twice,
            Some(_) => continue,
        };
        return Err((k, bad));
    }
    Ok(())
}

/// Settings of a pipeline: the `[pipeline]` table of a pipeline file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PipelineOptions {
    /// Byte capacity of every edge: a slow sink slows the sources down.
    #[serde(deserialize_with = "crate::setting::de_size_usize")]
    pub channel_capacity: usize,
    /// Least time between two flushes of a sink whose input ran dry (a flush may fsync).
    /// Batches fed to a sink are flushed within this time once its input pauses.
    #[serde(skip)]
    pub flush_interval: Duration,
    /// Serve the pipeline's counters for Prometheus at `http://ADDR/metrics` while it runs
    /// (`metrics_listen = "127.0.0.1:9184"`, `--metrics-listen`); see
    /// [`crate::metrics_http`]. Default: no endpoint.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// With [`PipelineOptions::metrics_tls_key`]: serve the metrics endpoint over HTTPS with
    /// this certificate chain (PEM, the server's first; `--metrics-tls-cert`), as
    /// `weir serve --tls-cert` does ([`crate::serve::tls`]). Default: plain HTTP.
    pub metrics_tls_cert: Option<std::path::PathBuf>,
    /// The private key of [`PipelineOptions::metrics_tls_cert`] (PEM; `--metrics-tls-key`).
    pub metrics_tls_key: Option<std::path::PathBuf>,
}

impl PipelineOptions {
    /// Default edge capacity: 16 MiB (at 64 MiB, the batches queued between stages only
    /// added memory, not speed).
    pub const DEFAULT_CHANNEL_CAPACITY: usize = 16 << 20;
    /// Default least time between flushes: 100 ms.
    pub const DEFAULT_FLUSH_INTERVAL: Duration = Duration::from_millis(100);

    /// Checks the settings.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        InvalidSetting::at_least_one("channel_capacity", self.channel_capacity as u64)?;
        match (&self.metrics_tls_cert, &self.metrics_tls_key) {
            (Some(_), None) => Err(InvalidSetting {
                key: "metrics_tls_key",
                problem: Problem::Missing {
                    hint: "metrics_tls_cert needs its private key".into(),
                },
            }),
            (None, Some(_)) => Err(InvalidSetting {
                key: "metrics_tls_cert",
                problem: Problem::Missing {
                    hint: "metrics_tls_key needs its certificate".into(),
                },
            }),
            _ => Ok(()),
        }
    }

    /// Joins the relative paths of the TLS files to `base` (as the stages' paths).
    pub(crate) fn resolve_paths(&mut self, base: &std::path::Path) {
        for p in [&mut self.metrics_tls_cert, &mut self.metrics_tls_key]
            .into_iter()
            .flatten()
        {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        }
    }
}

impl Default for PipelineOptions {
    fn default() -> PipelineOptions {
        PipelineOptions {
            channel_capacity: Self::DEFAULT_CHANNEL_CAPACITY,
            flush_interval: Self::DEFAULT_FLUSH_INTERVAL,
            metrics_listen: None,
            metrics_tls_cert: None,
            metrics_tls_key: None,
        }
    }
}

/// The outcome of a run that did not fail.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Whether the run was stopped by the shutdown token before its sources ended.
    pub interrupted: bool,
    /// Rows the sources skipped under `--on-error skip`.
    pub skipped: SkipReport,
    /// Warnings of the sources (e.g. an unknown type name read as string), each naming its
    /// source, and of the archive sinks (events that retention erases on arrival), each
    /// naming its database.
    pub warnings: Vec<String>,
}

type SourceFn = Box<dyn FnOnce(SourceShared) -> BatchStream + Send>;
type TransformFn = Box<dyn FnOnce(BatchStream) -> BatchStream + Send>;

enum Kind {
    Source(SourceFn),
    Transform(TransformFn),
    Sink(BatchSink),
}

struct Stage {
    name: String,
    inputs: Vec<StageId>,
    kind: Kind,
}

/// A graph of stages; see the module docs.
pub struct Pipeline {
    options: PipelineOptions,
    stages: Vec<Stage>,
    cancel: CancellationToken,
    metrics: Arc<Metrics>,
    counters: Arc<SourceCounters>,
    skips: Arc<Mutex<SkipReport>>,
    warnings: Arc<Mutex<Vec<String>>>,
}

impl Default for Pipeline {
    fn default() -> Pipeline {
        Pipeline::new(PipelineOptions::default())
    }
}

impl Pipeline {
    /// An empty pipeline.
    pub fn new(options: PipelineOptions) -> Pipeline {
        Pipeline {
            options,
            stages: Vec::new(),
            cancel: CancellationToken::new(),
            metrics: Arc::new(Metrics::default()),
            counters: Arc::new(SourceCounters::default()),
            skips: Arc::default(),
            warnings: Arc::default(),
        }
    }

    fn push(
        &mut self,
        name: &str,
        inputs: &[StageId],
        kind: Kind,
    ) -> Result<StageId, PipelineError> {
        if self.stages.iter().any(|s| s.name == name) {
            return Err(PipelineError::Graph(format!(
                "duplicate stage name {name:?}"
            )));
        }
        let known: Vec<Option<usize>> = inputs
            .iter()
            .map(|i| (i.0 < self.stages.len()).then_some(i.0))
            .collect();
        if let Err((k, bad)) =
            check_inputs(&known, |j| matches!(self.stages[j].kind, Kind::Sink(_)))
        {
            let input = match known[k] {
                Some(j) => format!("{:?}", self.stages[j].name),
                None => format!("#{}", inputs[k].0),
            };
            return Err(PipelineError::Graph(format!(
                "stage {name:?}: input {input} {}",
                match bad {
                    BadInput::Unknown => "does not exist",
                    BadInput::Sink => "is a sink",
                    BadInput::Twice => "is listed twice",
                }
            )));
        }
        self.stages.push(Stage {
            name: name.to_string(),
            inputs: inputs.to_vec(),
            kind,
        });
        Ok(StageId(self.stages.len() - 1))
    }

    /// Adds a source reading `inputs` in order (files, stdin, bytes, readers), decompressing
    /// and decoding them as `config` says.
    pub fn add_source(
        &mut self,
        name: &str,
        inputs: Vec<Input>,
        config: SourceConfig,
    ) -> Result<StageId, PipelineError> {
        let f: SourceFn = Box::new(move |shared| {
            let stream = match config.follow.clone() {
                Some(spec) => crate::source::follow::follow_stream(spec, config, shared),
                None => crate::source::decode::source_stream(inputs, config, shared),
            };
            stream
                .map(|r| r.map_err(|e| Box::new(e) as BoxError))
                .boxed()
        });
        self.push(name, &[], Kind::Source(f))
    }

    /// Adds any stream of batches as a source (a user-defined stage). It stops being polled
    /// when the pipeline shuts down.
    pub fn add_stream<S, E>(&mut self, name: &str, stream: S) -> Result<StageId, PipelineError>
    where
        S: Stream<Item = Result<Batch, E>> + Send + 'static,
        E: Into<BoxError> + 'static,
    {
        let f: SourceFn = Box::new(move |shared| {
            stream
                .map(|r| r.map_err(Into::into))
                .take_until(shared.cancel.cancelled_owned())
                .boxed()
        });
        self.push(name, &[], Kind::Source(f))
    }

    /// Adds a transform: a function from its (merged) input stream to its output stream.
    pub fn add_transform<F>(
        &mut self,
        name: &str,
        inputs: &[StageId],
        f: F,
    ) -> Result<StageId, PipelineError>
    where
        F: FnOnce(BatchStream) -> BatchStream + Send + 'static,
    {
        self.push(name, inputs, Kind::Transform(Box::new(f)))
    }

    /// Adds a [`Batcher`] re-batching its inputs.
    pub fn add_batcher(
        &mut self,
        name: &str,
        inputs: &[StageId],
        config: BatchConfig,
    ) -> Result<StageId, PipelineError> {
        self.add_transform(name, inputs, move |s| Batcher::new(s, config).boxed())
    }

    /// Adds a sink consuming its inputs.
    pub fn add_sink<K, E>(
        &mut self,
        name: &str,
        inputs: &[StageId],
        sink: K,
    ) -> Result<StageId, PipelineError>
    where
        K: Sink<Batch, Error = E> + Send + 'static,
        E: Into<BoxError> + 'static,
    {
        let sink: BatchSink = Box::pin(sink.sink_map_err(Into::into));
        self.push(name, inputs, Kind::Sink(sink))
    }

    /// The token that shuts the pipeline down gracefully when cancelled.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// The pipeline's metrics (live while it runs).
    pub fn metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }

    /// The run's warnings so far (live while it runs; [`RunSummary::warnings`] at the end):
    /// a caller may show each as it comes.
    pub fn warnings(&self) -> Arc<Mutex<Vec<String>>> {
        self.warnings.clone()
    }

    /// Byte counts of all sources (live while it runs).
    pub fn source_counters(&self) -> Arc<SourceCounters> {
        self.counters.clone()
    }

    /// Runs the pipeline to the end of its sources (or shutdown) on the current tokio runtime.
    pub async fn run(self) -> Result<RunSummary, PipelineError> {
        let started = Instant::now();
        let Pipeline {
            options,
            stages,
            cancel,
            metrics,
            counters,
            skips,
            warnings,
        } = self;
        let n = stages.len();
        if n == 0 {
            return Err(PipelineError::Graph("no stage".into()));
        }
        for (i, s) in stages.iter().enumerate() {
            if !matches!(s.kind, Kind::Sink(_))
                && !stages.iter().any(|t| t.inputs.contains(&StageId(i)))
            {
                return Err(PipelineError::Graph(format!(
                    "stage {:?} has no consumer",
                    s.name
                )));
            }
            if !matches!(s.kind, Kind::Source(_)) && s.inputs.is_empty() {
                return Err(PipelineError::Graph(format!(
                    "stage {:?} has no input",
                    s.name
                )));
            }
        }
        // The Prometheus endpoint, before anything runs: a taken port fails the run at once.
        // Its certificate and key, read before anything listens.
        let tls = match (&options.metrics_tls_cert, &options.metrics_tls_key) {
            (Some(cert), Some(key)) => Some(crate::serve::tls::acceptor(cert, key)?),
            _ => None,
        };
        if tls.is_some() && options.metrics_listen.is_none() {
            return Err(PipelineError::MetricsTlsWithoutListen);
        }
        let scheme = if tls.is_some() { "https" } else { "http" };
        let server = match options.metrics_listen {
            Some(addr) => {
                let (m, c, k) = (metrics.clone(), counters.clone(), skips.clone());
                let snapshot: crate::metrics_http::Snapshot = Arc::new(move || {
                    let mut report = m.to_json();
                    if let serde_json::Value::Object(o) = &mut report {
                        // Live values the report gets only at the end.
                        o.insert("source_bytes_read".into(), c.bytes_read().into());
                        o.insert("source_bytes_decompressed".into(), c.bytes_decoded().into());
                        let skipped = k.lock().map_or(0, |s| s.skipped);
                        o.insert("errors_skipped".into(), skipped.into());
                    }
                    report
                });
                let server = crate::metrics_http::MetricsServer::start(addr, snapshot, tls)
                    .await
                    .map_err(|error| PipelineError::MetricsListen { addr, error })?;
                tracing::info!(
                    "serving metrics on {scheme}://{}{}",
                    server.local_addr(),
                    crate::metrics_http::PATH
                );
                Some(server)
            }
            None => None,
        };
        // One channel per edge.
        let mut senders: Vec<Vec<channel::Sender<Batch>>> = (0..n).map(|_| Vec::new()).collect();
        let mut receivers: Vec<Vec<channel::Receiver<Batch>>> =
            (0..n).map(|_| Vec::new()).collect();
        for (i, s) in stages.iter().enumerate() {
            for input in &s.inputs {
                let (tx, rx) = channel::channel::<Batch>(options.channel_capacity);
                metrics.edge(
                    format!("{} -> {}", stages[input.0].name, s.name),
                    tx.capacity(),
                    tx.gauge().clone(),
                );
                senders[input.0].push(tx);
                receivers[i].push(rx);
            }
        }
        let first_error: Arc<Mutex<Option<PipelineError>>> = Arc::default();
        let mut tasks: FuturesUnordered<BoxFuture<'static, ()>> = FuturesUnordered::new();
        for (i, stage) in stages.into_iter().enumerate() {
            let outs = std::mem::take(&mut senders[i]);
            let ins = std::mem::take(&mut receivers[i]);
            let ctx = StageCtx {
                name: stage.name.clone(),
                metrics: metrics.stage(
                    &stage.name,
                    match stage.kind {
                        Kind::Source(_) => "source",
                        Kind::Transform(_) => "transform",
                        Kind::Sink(_) => "sink",
                    },
                ),
                cancel: cancel.clone(),
                first_error: first_error.clone(),
            };
            let fut: BoxFuture<'static, ()> = match stage.kind {
                Kind::Source(f) => {
                    let shared = SourceShared {
                        cancel: cancel.clone(),
                        counters: counters.clone(),
                        metrics: ctx.metrics.clone(),
                        skips: skips.clone(),
                        warnings: warnings.clone(),
                        handle: tokio::runtime::Handle::try_current().ok(),
                    };
                    let stream = f(shared);
                    run_stream(ctx, stream, outs, true).boxed()
                }
                Kind::Transform(f) => {
                    let input = merge(ins).map(Ok).boxed();
                    let stream = Timed {
                        inner: f(input),
                        metrics: ctx.metrics.clone(),
                    }
                    .boxed();
                    run_stream(ctx, stream, outs, false).boxed()
                }
                Kind::Sink(sink) => run_sink(ctx, merge(ins), sink, options.flush_interval).boxed(),
            };
            let handle = tokio::spawn(fut);
            let name = stage.name.clone();
            let fe = first_error.clone();
            let cancel = cancel.clone();
            tasks.push(
                async move {
                    if let Err(e) = handle.await {
                        set_error(
                            &fe,
                            &cancel,
                            PipelineError::Stage {
                                name,
                                error: format!("task failed: {e}").into(),
                            },
                        );
                    }
                }
                .boxed(),
            );
        }
        while tasks.next().await.is_some() {}
        if let Some(server) = server {
            server.shutdown().await;
        }
        metrics.set(
            "source_bytes_read",
            serde_json::json!(counters.bytes_read()),
        );
        metrics.set(
            "source_bytes_decompressed",
            serde_json::json!(counters.bytes_decoded()),
        );
        let error = first_error.lock().ok().and_then(|mut e| e.take());
        if let Some(e) = error {
            return Err(e);
        }
        let skipped = skips.lock().map(|s| s.clone()).unwrap_or_default();
        Ok(RunSummary {
            elapsed: started.elapsed(),
            interrupted: cancel.is_cancelled(),
            skipped,
            warnings: warnings.lock().map(|w| w.clone()).unwrap_or_default(),
        })
    }
}

struct StageCtx {
    name: String,
    metrics: Arc<StageMetrics>,
    cancel: CancellationToken,
    first_error: Arc<Mutex<Option<PipelineError>>>,
}

/// Records the first error and stops the sources.
fn set_error(slot: &Mutex<Option<PipelineError>>, cancel: &CancellationToken, e: PipelineError) {
    if let Ok(mut s) = slot.lock() {
        if s.is_none() {
            *s = Some(e);
        }
    }
    cancel.cancel();
}

/// Interleaves several inputs (fan-in), a group of batches at a time (see
/// [`Batch::group_next`]): the batches of one input's group stay together.
fn merge(mut ins: Vec<channel::Receiver<Batch>>) -> BoxStream<'static, Batch> {
    if ins.len() == 1 {
        if let Some(rx) = ins.pop() {
            return rx.boxed();
        }
    }
    futures::stream::select_all(ins.into_iter().map(groups))
        .flat_map(futures::stream::iter)
        .boxed()
}

/// The batches of `rx`, a group at a time (an unfinished group at its end as it is).
fn groups(rx: channel::Receiver<Batch>) -> BoxStream<'static, Vec<Batch>> {
    futures::stream::unfold(Some(rx), |rx| async move {
        let mut rx = rx?;
        let mut group = Vec::new();
        loop {
            match rx.next().await {
                Some(b) => {
                    let more = b.group_next();
                    group.push(b);
                    if !more {
                        return Some((group, Some(rx)));
                    }
                }
                None => return (!group.is_empty()).then_some((group, None)),
            }
        }
    })
    .boxed()
}

/// Measures the time spent inside a transform's polls as its busy time.
struct Timed {
    inner: BatchStream,
    metrics: Arc<StageMetrics>,
}

impl Stream for Timed {
    type Item = Result<Batch, BoxError>;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let t0 = Instant::now();
        let r = self.inner.poll_next_unpin(cx);
        self.metrics.add_busy(t0.elapsed());
        r
    }
}

/// Drives a source or transform stream, sending every batch to every consumer.
async fn run_stream(
    ctx: StageCtx,
    mut stream: BatchStream,
    outs: Vec<channel::Sender<Batch>>,
    is_source: bool,
) {
    let mut outs: Vec<Option<channel::Sender<Batch>>> = outs.into_iter().map(Some).collect();
    let mut open_group = false;
    loop {
        let t0 = Instant::now();
        let busy0 = ctx.metrics.busy();
        let item = stream.next().await;
        if !is_source {
            // A source's threads record their own busy time; a transform's busy time is
            // recorded by `Timed` (time inside its polls), the rest of the wait is idle.
            let busy = ctx.metrics.busy().saturating_sub(busy0);
            ctx.metrics.add_idle(t0.elapsed().saturating_sub(busy));
        }
        let batch = match item {
            None => break,
            Some(Ok(b)) => b,
            Some(Err(e)) => {
                let err = match e.downcast::<ReadError>() {
                    Ok(re) => PipelineError::Read(*re),
                    Err(e) => PipelineError::Stage {
                        name: ctx.name.clone(),
                        error: e,
                    },
                };
                set_error(&ctx.first_error, &ctx.cancel, err);
                break;
            }
        };
        // An empty batch is passed on only if it carries checkpoints, or ends a group whose
        // batches before it were passed on (see `Batch::group_next`).
        let ends_group = open_group && !batch.group_next();
        if batch.is_empty() && batch.marks().is_empty() && !ends_group {
            continue;
        }
        open_group = batch.group_next();
        ctx.metrics.record(&batch);
        let t1 = Instant::now();
        let live = outs.iter().filter(|o| o.is_some()).count();
        let mut left = live;
        let mut batch = Some(batch);
        for slot in outs.iter_mut() {
            let Some(tx) = slot else { continue };
            left -= 1;
            let item = if left == 0 {
                batch.take()
            } else {
                batch.clone()
            };
            let Some(item) = item else { break };
            if tx.send(item).await.is_err() {
                // That consumer stopped (it failed and reported it): keep feeding the others.
                *slot = None;
            }
        }
        ctx.metrics.add_blocked(t1.elapsed());
        if outs.iter().all(Option::is_none) {
            ctx.cancel.cancel();
            break;
        }
    }
}

/// Drives a sink: feeds batches while input is ready, flushes when its input has run dry
/// (at most once per `flush_interval`, and always within it), closes it at the end.
async fn run_sink(
    ctx: StageCtx,
    mut input: BoxStream<'static, Batch>,
    mut sink: BatchSink,
    flush_interval: Duration,
) {
    let fail = |error: BoxError| {
        set_error(
            &ctx.first_error,
            &ctx.cancel,
            PipelineError::Sink {
                name: ctx.name.clone(),
                error,
            },
        );
    };
    let mut dirty = false;
    let mut last_flush = tokio::time::Instant::now();
    loop {
        let next = match input.next().now_or_never() {
            Some(item) => item,
            None => {
                let t0 = Instant::now();
                let mut item = None;
                let mut got = false;
                if dirty {
                    // Input ran dry: flush now, or once the interval since the last flush
                    // has passed, unless more input comes first.
                    let deadline = last_flush + flush_interval;
                    tokio::select! {
                        biased;
                        i = input.next() => { item = i; got = true; }
                        _ = tokio::time::sleep_until(deadline) => {}
                    }
                    if !got {
                        ctx.metrics.add_idle(t0.elapsed());
                        let t1 = Instant::now();
                        let r = sink.flush().await;
                        ctx.metrics.add_busy(t1.elapsed());
                        if let Err(e) = r {
                            return fail(e);
                        }
                        dirty = false;
                        last_flush = tokio::time::Instant::now();
                        continue;
                    }
                } else {
                    item = input.next().await;
                }
                ctx.metrics.add_idle(t0.elapsed());
                item
            }
        };
        let Some(batch) = next else { break };
        ctx.metrics.record(&batch);
        let t0 = Instant::now();
        let r = sink.feed(batch).await;
        ctx.metrics.add_busy(t0.elapsed());
        if let Err(e) = r {
            return fail(e);
        }
        dirty = true;
    }
    let t0 = Instant::now();
    let r = sink.close().await;
    ctx.metrics.add_busy(t0.elapsed());
    if let Err(e) = r {
        fail(e);
    }
}

/// Checks that `T` is weighted (keeps the trait import used in all configurations).
#[allow(dead_code)]
fn _weighted<T: Weighted>() {}
