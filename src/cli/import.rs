//! `weir import` and `weir run`: both build a pipeline from a [`PipelineSpec`] (for import,
//! [`PipelineSpec::for_import`], the same graph as `pipelines/zeek-to-archive.toml`, with the
//! command's flags applied to the stages' configurations) and run it with progress, signals,
//! a summary line and optional metrics. A run that fails says, for each archive, how many
//! events it committed before the error and their IDs: they stay in the archive, with the
//! position in each file they came from, so that the same command run again imports exactly
//! the part that is missing (see [`weir::unstable::source::resume`]); what was read from stdin cannot be
//! resumed.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use tokio_util::sync::CancellationToken;

use weir::unstable::batcher::BatchConfig;
use weir::unstable::codec::community_id::CommunityId;
use weir::unstable::pipeline::build::{build, ArchiveHandle};
use weir::unstable::pipeline::config::{
    ConfigError, ImportConfig, LoadOptions, PipelineSpec, StageConfig,
};
use weir::unstable::segment::Codec;
use weir::unstable::source::{total_size, Input};
use weir::unstable::store::{Archive, ArchiveSinkConfig};
use weir::unstable::SyncPolicy;

use super::args::{choice, BudgetText, DbArg, DurationText, PeriodText, SizeText, SourceArgs};
use super::progress::Progress;
use super::{signals, UsageError};

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    source: SourceArgs,
    /// Most events per batch.
    #[arg(long, value_name = "N", default_value_t = BatchConfig::DEFAULT_MAX_EVENTS)]
    batch_size: usize,
    /// Longest time a partial batch waits before it is written (`250ms`, `1s`, `2m`).
    #[arg(long, value_name = "DUR",
          default_value_t = DurationText(BatchConfig::DEFAULT_TIMEOUT))]
    batch_timeout: DurationText,
    /// Keep events of different schemas in input order: a change of schema ends a batch
    /// (without it, a window of `--batch-size` events of interleaved schemas, such as
    /// Suricata EVE's event types, is stored as one batch per schema, much faster).
    #[arg(long)]
    batch_in_order: bool,
    /// Largest segment file (`512MiB`, `1GiB`, `4096KiB`; a plain number is MiB), below the
    /// 2 GiB FlatBuffers limit.
    #[arg(long, value_name = "SIZE",
          default_value_t = SizeText(ArchiveSinkConfig::default().max_segment_size))]
    max_segment_size: SizeText,
    /// When the write-ahead log is synced to disk.
    #[arg(long, value_parser = choice::<SyncPolicy>(), value_name = "WHEN",
          default_value_t = ArchiveSinkConfig::default().sync)]
    sync: SyncPolicy,
    /// How batches are compressed in the segments.
    #[arg(long, value_parser = choice::<Codec>(), value_name = "CODEC",
          default_value_t = ArchiveSinkConfig::default().compression)]
    compression: Codec,
    /// The codec's level (zstd: 1 by default, up to 22; negative levels are faster; lz4 and
    /// none have no levels).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    compression_level: Option<i32>,
    /// Write no per-batch sketches (needle queries then read every batch of the schema).
    #[arg(long)]
    no_sketches: bool,
    /// Community ID of `zeek.conn` events that lack one: computed with this seed, or `off`
    /// (see the guide, docs/book/src/suricata-sigma/community-id.md).
    #[arg(long = "community-id", value_name = "off|SEED",
          default_value_t = CommunityId::DEFAULT)]
    community_id: CommunityId,
    /// Disk budget of the archive (`50GiB`): beyond it the oldest segments are erased, down
    /// to 90% of it; checked at start and while importing. At least two segments. The unit
    /// is required.
    #[arg(long, value_name = "SIZE")]
    max_archive_size: Option<BudgetText>,
    /// Erase segments whose newest event is older than this (`90d`, `12h`; the unit is
    /// required); checked at start, at every seal and every minute.
    #[arg(long, value_name = "DURATION")]
    retain: Option<PeriodText>,
    /// Sigma rules to match live on every commit, besides the archive's indicator sets: a
    /// rule file or a directory of `*.yml`/`*.yaml` (matches become `weir.sighting` events).
    #[arg(long, value_name = "PATH")]
    rules: Option<PathBuf>,
    /// Also match each indicator set added or changed since its last retro match against the
    /// archive's past, in the background, as `weir serve` does: its sightings commit with the
    /// import's next commits, and when the input ends the import finishes those matches
    /// before it exits (a second Ctrl-C stops at once; the next start resumes them).
    #[arg(long)]
    retro: bool,
    /// No progress display and no summary: only warnings and errors (skipped rows included).
    #[arg(long, short)]
    quiet: bool,
    /// Write per-stage metrics as JSON to this file at the end.
    #[arg(long, value_name = "FILE")]
    metrics: Option<PathBuf>,
    /// Serve per-stage counters for Prometheus at http://ADDR/metrics while running (e.g.
    /// `127.0.0.1:9184`).
    #[arg(long = "metrics-listen", value_name = "ADDR")]
    metrics_listen: Option<std::net::SocketAddr>,
    /// Serve --metrics-listen over HTTPS with this certificate chain (PEM: the server's
    /// certificate first, then the intermediates), as `weir serve --tls-cert`.
    #[arg(
        long = "metrics-tls-cert",
        value_name = "FILE",
        requires_all = ["metrics_tls_key", "metrics_listen"]
    )]
    metrics_tls_cert: Option<PathBuf>,
    /// The private key of --metrics-tls-cert (PEM: PKCS#8, RSA or EC).
    #[arg(
        long = "metrics-tls-key",
        value_name = "FILE",
        requires = "metrics_tls_cert"
    )]
    metrics_tls_key: Option<PathBuf>,
    /// Follow the files like `tail -F` until SIGINT/SIGTERM: files matching the patterns
    /// (quote them) that appear later are read too, rotation is detected, and a restart
    /// resumes exactly where the archive ends.
    #[arg(long)]
    follow: bool,
    /// Import the files whole even if this archive holds them (or part of them) from an
    /// earlier import; without it, a file imported whole before is skipped and one imported
    /// in part is read on from where its events end.
    #[arg(long, conflicts_with = "follow")]
    again: bool,
    /// With --follow: read every matching file that has no checkpoint from byte 0, also when
    /// the archive's checkpoints are lost (after `weir verify --repair` could not rebuild
    /// them), importing again what the archive may hold.
    #[arg(long, requires = "follow", conflicts_with = "from_end")]
    from_start: bool,
    /// With --follow: start each matching file that has no checkpoint at its end (what it
    /// holds now is skipped; only lines written later are imported); also when the archive's
    /// checkpoints are lost.
    #[arg(long, requires = "follow")]
    from_end: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Only validate the pipeline file (including its paths), do not run it.
    #[arg(long)]
    check: bool,
    /// Community ID of `zeek.conn` events that lack one, for every file and stdin source:
    /// computed with this seed, or `off` (instead of each source's `community_id`).
    #[arg(long = "community-id", value_name = "off|SEED")]
    community_id: Option<CommunityId>,
    /// No progress display and no summary: only warnings and errors (skipped rows included).
    #[arg(long, short)]
    quiet: bool,
    /// Write per-stage metrics as JSON to this file at the end.
    #[arg(long, value_name = "FILE")]
    metrics: Option<PathBuf>,
    /// Serve per-stage counters for Prometheus at http://ADDR/metrics while running, instead of `[pipeline] metrics_listen` (e.g.
    /// `127.0.0.1:9184`).
    #[arg(long = "metrics-listen", value_name = "ADDR")]
    metrics_listen: Option<std::net::SocketAddr>,
    /// Serve the metrics endpoint over HTTPS with this certificate chain (PEM), instead of
    /// `[pipeline] metrics_tls_cert`; as `weir serve --tls-cert`.
    #[arg(
        long = "metrics-tls-cert",
        value_name = "FILE",
        requires = "metrics_tls_key"
    )]
    metrics_tls_cert: Option<PathBuf>,
    /// The private key of --metrics-tls-cert (PEM: PKCS#8, RSA or EC), instead of
    /// `[pipeline] metrics_tls_key`.
    #[arg(
        long = "metrics-tls-key",
        value_name = "FILE",
        requires = "metrics_tls_cert"
    )]
    metrics_tls_key: Option<PathBuf>,
    /// The pipeline definition (TOML).
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

impl ImportArgs {
    /// The stages of the import: their defaults with each given flag applied.
    fn config(&self) -> ImportConfig {
        let mut c = ImportConfig {
            source: self.source.config(),
            ..ImportConfig::default()
        };
        c.archive.db = self.db.path.clone();
        c.batch.max_events = self.batch_size;
        c.batch.timeout = self.batch_timeout.0;
        c.batch.regroup = !self.batch_in_order;
        c.archive.max_segment_size = self.max_segment_size.0;
        c.archive.sync = self.sync;
        c.archive.compression = self.compression;
        c.archive.compression_level = self.compression_level;
        c.archive.sketches = !self.no_sketches;
        c.source.no_column_stats = self.no_sketches;
        c.source.community_id = self.community_id;
        if let Some(size) = &self.max_archive_size {
            c.archive.max_archive_size = Some(size.0);
        }
        if let Some(d) = &self.retain {
            c.archive.retain = Some(d.0);
        }
        c.archive.rules_dir = self.rules.clone();
        c.archive.retro = self.retro;
        c.source.follow = self.follow;
        c.source.again = self.again;
        if self.from_start {
            c.source.from = weir::unstable::checkpoint::StartFrom::Start;
        } else if self.from_end {
            c.source.from = weir::unstable::checkpoint::StartFrom::End;
        }
        c
    }
}

/// The flag of `weir import` that sets a stage's key (stage names of
/// [`PipelineSpec::IMPORT_STAGES`]).
const IMPORT_FLAGS: &[(&str, &str, &str)] = &[
    ("sources.input", "paths", "FILE"),
    ("sources.input", "format", "--from"),
    ("sources.input", "on_error", "--on-error"),
    ("sources.input", "schema", "--schema"),
    ("sources.input", "schema_dir", "--schema-dir"),
    ("sources.input", "follow", "--follow"),
    ("sources.input", "again", "--again"),
    ("sources.input", "from", "--from-start/--from-end"),
    ("sources.input", "community_id", "--community-id"),
    ("transforms.batch", "max_events", "--batch-size"),
    ("transforms.batch", "timeout", "--batch-timeout"),
    ("transforms.batch", "regroup", "--batch-in-order"),
    ("sinks.archive", "db", "--db"),
    ("sinks.archive", "max_segment_size", "--max-segment-size"),
    ("sinks.archive", "sync", "--sync"),
    ("sinks.archive", "compression", "--compression"),
    ("sinks.archive", "compression_level", "--compression-level"),
    ("sinks.archive", "sketches", "--no-sketches"),
    ("sinks.archive", "max_archive_size", "--max-archive-size"),
    ("sinks.archive", "retain", "--retain"),
    ("sinks.archive", "rules_dir", "--rules"),
    ("sinks.archive", "retro", "--retro"),
];

/// A refused setting of `weir import`, in the words of its flag.
pub(super) fn flag_error(e: ConfigError) -> anyhow::Error {
    let flag = IMPORT_FLAGS.iter().find(|(table, key, _)| {
        e.table.as_deref() == Some(*table) && e.key.as_deref() == Some(*key)
    });
    match flag {
        Some((_, _, flag)) => UsageError(format!("{flag}: {}", e.kind)).into(),
        None => e.into(),
    }
}

/// Runs `weir import`.
pub async fn import(args: ImportArgs) -> anyhow::Result<()> {
    let stop = signals::install();
    let config = args.config();
    // A missing input is reported before anything is created.
    config.source.inputs()?;
    let mut spec = PipelineSpec::for_import(config);
    spec.options.metrics_listen = args.metrics_listen;
    spec.options.metrics_tls_cert = args.metrics_tls_cert.clone();
    spec.options.metrics_tls_key = args.metrics_tls_key.clone();
    spec.validate().map_err(flag_error)?;
    // A database this import creates is removed again if the import fails before it holds
    // anything.
    let db = &args.db.path;
    let created = db.symlink_metadata().is_err().then_some(db.as_path());
    execute(
        &spec,
        args.quiet,
        args.metrics.as_deref(),
        "imported",
        stop,
        created,
    )
    .await
}

/// After a failed import that created the database directory: removes it again if it holds
/// nothing but the files an archive starts with (`LOCK`, `wal`, `catalog.json`, an empty
/// `segments/`) and no event, and no other process holds its lock. Anything else is left
/// alone; a failure to remove is not reported (the import's error is what matters). Returns
/// whether the directory is gone.
fn remove_unused_archive(db: &std::path::Path) -> bool {
    use weir::unstable::store::{readers::READERS_DIR, LOCK_FILE, SEGMENTS_DIR, WAL_FILE};
    const CATALOG: &str = "catalog.json";
    let Ok(entries) = std::fs::read_dir(db) else {
        return false;
    };
    let names: Vec<_> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if !names
        .iter()
        .all(|n| [LOCK_FILE, WAL_FILE, CATALOG, SEGMENTS_DIR, READERS_DIR].contains(&n.as_str()))
    {
        return false;
    }
    let empty = Archive::open(db)
        .and_then(|a| a.info())
        .is_ok_and(|i| i.events == 0 && i.segments == 0 && i.unlisted.is_empty());
    if !empty {
        return false;
    }
    // Another import may have started on the directory since: its lock says so.
    let lock = std::fs::File::open(db.join(LOCK_FILE));
    let _held = match lock {
        Ok(f) => match f.try_lock() {
            Ok(()) => Some(f),
            Err(_) => return false,
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(_) => return false,
    };
    // `remove_dir` removes only empty directories: a segment written meanwhile stays.
    if std::fs::remove_dir(db.join(SEGMENTS_DIR))
        .or_else(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Ok(()),
            _ => Err(e),
        })
        .is_err()
    {
        return false;
    }
    for name in [WAL_FILE, CATALOG, LOCK_FILE] {
        let _ = std::fs::remove_file(db.join(name));
    }
    // The readers' lock files (the check above registered one; it is released).
    let _ = std::fs::remove_dir_all(db.join(READERS_DIR));
    std::fs::remove_dir(db).is_ok()
}

/// Runs `weir run`.
pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let stop = signals::install();
    let options = LoadOptions {
        check_paths: args.check,
        ..LoadOptions::default()
    };
    // Every problem of the file is reported (the last one as the command's error, which sets
    // the exit status), as Vector's `validate` does.
    let mut spec = match PipelineSpec::load_all(&args.file, &options) {
        Ok(spec) => spec,
        Err(mut errors) => {
            let last = errors.pop();
            for e in &errors {
                say!("weir: error: {e}");
            }
            match last {
                Some(e) => return Err(e.into()),
                None => anyhow::bail!("{}: invalid pipeline", args.file.display()),
            }
        }
    };
    if args.metrics_listen.is_some() {
        spec.options.metrics_listen = args.metrics_listen;
    }
    if let Some(cid) = args.community_id {
        for stage in &mut spec.stages {
            if let StageConfig::File(src) | StageConfig::Stdin(src) = &mut stage.config {
                src.community_id = cid;
            }
        }
    }
    if args.metrics_tls_cert.is_some() {
        spec.options.metrics_tls_cert = args.metrics_tls_cert.clone();
        spec.options.metrics_tls_key = args.metrics_tls_key.clone();
    }
    if args.check {
        // The metrics endpoint's certificate and key are files too: read them as a run would.
        if let (Some(cert), Some(key)) = (
            &spec.options.metrics_tls_cert,
            &spec.options.metrics_tls_key,
        ) {
            weir::unstable::serve::tls::acceptor(cert, key)?;
        }
        for w in spec.query_warnings() {
            say!("weir: warning: {w}");
        }
        say!(
            "{}: ok ({}: {})",
            args.file.display(),
            super::plural(spec.stages.len() as u64, "stage"),
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
        "processed",
        stop,
        None,
    )
    .await
}

/// The total size of the pipeline's inputs when every one has a known size (files, not
/// stdin), so that progress is a share of it, and whether any source reads stdin.
fn inputs_of(spec: &PipelineSpec) -> (Option<u64>, bool) {
    let mut total = Some(0u64);
    let mut stdin = false;
    for (_, _, source) in spec.sources() {
        match source.inputs() {
            Ok(inputs) => {
                stdin |= inputs.iter().any(|i| matches!(i, Input::Stdin));
                total = total.zip(total_size(&inputs)).map(|(a, b)| a + b);
            }
            Err(_) => total = None,
        }
    }
    (total, stdin)
}

/// Builds and runs a pipeline spec with signals, progress, summary and metrics. `created`:
/// a database directory this run created, removed again after a failure that left it
/// without events (see [`remove_unused_archive`]).
#[allow(clippy::too_many_arguments)]
async fn execute(
    spec: &PipelineSpec,
    quiet: bool,
    metrics_file: Option<&std::path::Path>,
    verb: &str,
    stop: CancellationToken,
    created: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let (pipeline, built) = match build(spec).await {
        Ok(b) => b,
        Err(e) => {
            if let Some(db) = created {
                remove_unused_archive(db);
            }
            return Err(e.into());
        }
    };
    let counters = pipeline.source_counters();
    let (total, reads_stdin) = inputs_of(spec);
    if let Some(t) = total {
        counters.add_total(t);
    }
    let metrics = pipeline.metrics();
    let sink_name = spec
        .sinks()
        .next()
        .map(|(_, s)| s.name.clone())
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
    super::progress::stdin_hint(reads_stdin, quiet);
    let done = CancellationToken::new();
    let live = Arc::new(LiveWarnings {
        list: pipeline.warnings(),
        shown: std::sync::atomic::AtomicUsize::new(0),
    });
    let watcher = tokio::spawn(live.clone().watch(done.clone()));
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
    let _ = watcher.await;
    if let Some(p) = progress {
        let _ = p.await;
    }
    // What came after the watcher's last look (the list holds every warning of the run).
    live.show_new();
    if let Some(path) = metrics_file {
        // The rows skipped under `--on-error skip` (null when the run failed).
        let skipped = result.as_ref().ok().map(|s| s.skipped.skipped);
        metrics.set("skipped_rows", serde_json::json!(skipped));
        let text = serde_json::to_string_pretty(&metrics.to_json())?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write metrics to {}", path.display()))?;
    }
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            let removed = created.filter(|db| remove_unused_archive(db));
            let kept: Vec<_> = built
                .archives
                .iter()
                .filter(|a| Some(a.db.as_path()) != removed)
                .cloned()
                .collect();
            // Bad input stops a rerun at the same line: resuming is no advice for it.
            let data_error = matches!(
                &e,
                weir::unstable::pipeline::PipelineError::Read(
                    weir::unstable::error::ReadError::Parse(_)
                )
            );
            report_committed(&kept, !reads_stdin, data_error);
            return Err(e.into());
        }
    };
    super::report_skips(&summary.skipped);
    if quiet {
        return Ok(());
    }
    let events = metrics.get(&sink_name).map_or(0, |m| m.events());
    for line in super::progress::summary_lines(
        verb,
        events,
        counters.bytes_read(),
        summary.elapsed,
        segments.as_ref().map(|seg| seg()),
        summary.interrupted,
    ) {
        say!("{line}");
    }
    for a in &built.archives {
        let Some(s) = a.summary.lock().ok().and_then(|s| s.clone()) else {
            continue;
        };
        if s.erased_segments > 0 {
            say!(
                "weir: retention erased {} ({}) of {}",
                super::plural(s.erased_segments, "segment"),
                super::plural(s.erased_events, "event"),
                a.db.display()
            );
        }
    }
    Ok(())
}

/// Shows the run's warnings as they come (a back-fill that retention erases, a followed file
/// gone), each once, instead of only at the end.
struct LiveWarnings {
    list: Arc<std::sync::Mutex<Vec<String>>>,
    /// How many of `list` have been shown.
    shown: std::sync::atomic::AtomicUsize,
}

impl LiveWarnings {
    /// How often the list is looked at while the pipeline runs.
    const INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

    /// Shows the warnings not shown yet.
    fn show_new(&self) {
        use std::sync::atomic::Ordering;
        let new: Vec<String> = match self.list.lock() {
            Ok(list) => list
                .get(self.shown.load(Ordering::Relaxed)..)
                .unwrap_or_default()
                .to_vec(),
            Err(_) => return,
        };
        self.shown.fetch_add(new.len(), Ordering::Relaxed);
        super::report_warnings(&new);
    }

    /// Shows new warnings every [`Self::INTERVAL`] until `done`.
    async fn watch(self: Arc<Self>, done: CancellationToken) {
        let mut tick = tokio::time::interval(Self::INTERVAL);
        loop {
            tokio::select! {
                _ = tick.tick() => self.show_new(),
                _ = done.cancelled() => return,
            }
        }
    }
}

/// After a failed run, says for each archive how many events the run committed and their IDs:
/// they stay in the archive with their files' positions, so that the same command resumes
/// after them (`resumable`: no input is stdin, whose events a rerun would add again). After
/// bad input (`data_error`) a rerun stops at the same line: the advice is to fix it or skip
/// bad lines.
fn report_committed(archives: &[ArchiveHandle], resumable: bool, data_error: bool) {
    const SKIP: &str = "the error is in the input, so the same command stops at the same line again: fix that line, or rerun with `--on-error skip` (`on_error = \"skip\"` on a pipeline's source), which skips bad lines and reports each";
    for a in archives {
        // The summary of a sink that closed cleanly (the error was elsewhere); else the
        // archive as its writer left it (a sink's error comes after its writer has stopped).
        let end = a
            .summary
            .lock()
            .ok()
            .and_then(|s| s.as_ref().map(|s| s.next_id))
            .or_else(|| {
                let info = Archive::open(&a.db).and_then(|ar| ar.info()).ok()?;
                Some(info.id_ranges.last().map_or(0, |r| r[1]))
            });
        let db = a.db.display();
        match end {
            Some(end) if end > a.first_id => {
                let n = end - a.first_id;
                let next = if data_error && resumable {
                    format!("{SKIP}; a rerun resumes after them")
                } else if data_error {
                    SKIP.to_string()
                } else if resumable {
                    "rerun the same command to resume: it imports exactly the part that is missing".to_string()
                } else {
                    "events read from stdin cannot be resumed: a retry of the same input would add them again".to_string()
                };
                say!(
                    "weir: {} {} committed to {db} before the error (IDs {}-{}); they stay there; {next}",
                    super::plural(n, "event"),
                    if n == 1 { "was" } else { "were" },
                    a.first_id,
                    end - 1
                );
            }
            Some(_) if data_error => {
                say!("weir: no events were committed to {db} before the error; {SKIP}")
            }
            Some(_) => say!("weir: no events were committed to {db} before the error"),
            None => say!("weir: cannot tell how many events were committed to {db} before the error; see `weir info --db {db}`"),
        }
    }
}
