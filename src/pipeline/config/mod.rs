//! Pipeline definition files: a TOML description of a pipeline graph, Vector-style, and its
//! validated, typed form [`PipelineSpec`] that the runtime executes.
//!
//! `weir run FILE` runs one; `weir run --check FILE` only validates it (including the
//! file-system checks of [`PipelineSpec::check_paths`]). `weir import FILES --db DIR` is the
//! pipeline built by [`PipelineSpec::for_import`], so both commands share one code path.
//!
//! # File format
//!
//! A pipeline file has named stages in three sections, plus optional global settings:
//!
//! ```toml
//! [pipeline]                      # optional
//! channel_capacity = "16MiB"      # byte bound of every edge (bounded channel) of the graph
//! # metrics_listen = "127.0.0.1:9184"  # serve the counters for Prometheus (crate::metrics_http)
//! # metrics_tls_cert = "cert.pem"      # and over HTTPS, with metrics_tls_key (crate::serve::tls)
//!
//! [sources.logs]                  # a source named "logs"
//! type = "file"
//! paths = ["${WEIR_INPUT}"]       # globs, read in order; see "Paths" and "Variables" below
//!
//! [transforms.batch]
//! type = "batch"
//! inputs = ["logs"]               # names of the stages that feed this one
//! max_events = 8192
//! timeout = "1s"
//!
//! [sinks.archive]
//! type = "archive"
//! inputs = ["batch"]
//! db = "${WEIR_DB:-weir.db}"
//! ```
//!
//! Stage names are unique across the three sections. Sources have no `inputs`; transforms and
//! sinks have at least one. Several inputs merge (fan-in); a stage listed by several others
//! feeds each of them every batch (fan-out). The graph must be acyclic, every source and
//! transform must feed something, and there is at least one source and one sink. Unknown
//! sections and unknown keys are errors, so a typo never goes unnoticed.
//!
//! ## Stage types and keys
//!
//! | section | `type` | configuration (its docs list the keys and defaults) |
//! | --- | --- | --- |
//! | `pipeline` | — | [`PipelineOptions`]: `channel_capacity`, `metrics_listen`, `metrics_tls_cert`, `metrics_tls_key` |
//! | `sources` | `file` | [`FileSourceConfig`]: `paths` (required), `format`, `decompress`, `on_error`, `json_schema`, `schema`, `schema_dir`, `max_line_length`, `follow` (`tail -F`, exactly once: [`crate::source::follow`]), `again` (read files imported before again: [`crate::source::resume`]), `community_id` (`0`: Community ID of `zeek.conn` events without one, computed with this seed, or `"off"`: [`crate::codec::zeek::conn_community_id`]) |
//! | `sources` | `stdin` | [`FileSourceConfig`] without `paths` |
//! | `transforms` | `batch` | `inputs`, [`BatchConfig`]: `max_events`, `max_bytes`, `timeout`, `regroup` (default true: a window of interleaved schemas becomes one batch per schema, a group committed whole) |
//! | `transforms` | `filter` | `inputs`, [`FilterConfig`]: `where` (required; an expression, see [`crate::query`]) |
//! | `transforms` | `query` | `inputs`, [`QueryConfig`]: `query` (required; operators, see [`crate::query::ops`]); a chain with `sort`, `tail`, `summarize`, `top` or `rare` emits at the end of its input, so it is refused after a source with `follow = true` |
//! | `sinks` | `archive` | `inputs`, [`ArchiveSinkConfig`]: `db` (required), `max_segment_size`, `sync`, `compression`, `compression_level`, `sketches`, `max_archive_size`, `retain`, `compact` |
//! | `sinks` | `file` | `inputs`, [`FileSinkConfig`]: `path` (required), `format`, `json_timestamps` |
//! | `sinks` | `directory` | `inputs`, [`DirSinkConfig`]: `dir` (required), `format`, `json_timestamps`: one file per log path |
//! | `sinks` | `parquet` | `inputs`, [`ParquetSinkConfig`]: `dir` (required), `max_file_size`, `row_group_size`, `compression_level`: a Hive-partitioned Parquet lake |
//! | `sinks` | `stdout` | `inputs`, [`StdoutSinkConfig`]: `format`, `json_timestamps` |
//!
//! Each configuration type derives `Deserialize` for its table and owns its defaults (its
//! `Default`), its limits (its `validate()`, the one check of each, also for the flags of
//! `weir import`) and the component it builds. Enum-valued keys take the words of their
//! type's [`Choice`](crate::setting::Choice) table, the same words the command line takes.
//!
//! Sizes are strings with a unit: `"4096KiB"`, `"512MiB"`, `"1GiB"`; a string without a unit is
//! MiB, as on the command line (`"512"` = 512 MiB). Bare TOML integers are refused for sizes, so
//! that `max_bytes = 1048576` cannot silently mean a TiB. Durations are strings such as
//! `"250ms"`, `"1s"`, `"2m"` (see [`crate::duration`] and [`crate::size`]).
//!
//! ## Paths
//!
//! Relative paths (`paths`, `db`, `path`) are relative to the **working directory** of the
//! `weir` process, exactly like the file arguments of `weir import`, so that
//! `WEIR_INPUT='logs/*.gz' weir run pipelines/zeek-to-archive.toml` reads `./logs`. For a path
//! relative to the pipeline file itself, start it with `${PIPELINE_DIR}`. (A library user can
//! pick another base with [`LoadOptions::base_dir`].)
//!
//! Every entry of a file source's `paths` is a glob pattern (`*`, `?`, `[...]`, `**`); the
//! matches of one pattern are read in alphabetical order, and the patterns in the order given,
//! one after the other (the order of event IDs in the archive). The entry `"-"` reads stdin.
//! A pattern that matches nothing is an error when the source starts (and under `--check`).
//!
//! An output must not destroy an input: a file sink whose `path` is a file a source reads, or
//! an archive whose `db` directory holds one, is refused under `--check` and before the
//! pipeline starts (exit status 2), comparing files by device and inode
//! ([`PipelineSpec::check_outputs`]).
//!
//! ## Variables
//!
//! Every string value may use `${NAME}` (the environment variable `NAME`; an error names it
//! when it is not set) and `${NAME:-default}` (the default when `NAME` is unset or empty);
//! `$$` is a literal `$`, and any other `$` is kept as it is. A default may itself use
//! variables (`${WEIR_DB:-${HOME}/weir.db}`), expanded only when the default is used. `${PIPELINE_DIR}` is built in:
//! the directory of the pipeline file. Substitution happens on parsed values, so a variable
//! can never inject TOML syntax. This is how shipped pipelines take their input paths and the
//! archive directory from the user.
//!
//! # Errors
//!
//! Every problem is a [`ConfigError`] naming the file, the line (when known), the table and the
//! key, e.g. `pipelines/tee.toml:14: [sinks.json] inputs: unknown input "batcher"; stages are:
//! logs, batch, archive, json`.
//!
//! # The typed form
//!
//! [`PipelineSpec::stages`] holds every stage in a topological order (each stage after all of
//! its inputs; among independent stages, the order of declaration), with inputs resolved to
//! indices into that list.

mod error;
mod graph;
mod load;
mod vars;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use error::{ConfigError, ConfigErrorKind};
pub use load::LoadOptions;

use crate::batcher::BatchConfig;
use crate::codec::{DirSinkConfig, FileSinkConfig, ParquetSinkConfig, StdoutSinkConfig};
use crate::pipeline::PipelineOptions;
use crate::query::{FilterConfig, QueryConfig};
use crate::setting::InvalidSetting;
use crate::source::{FileSourceConfig, Input, SourceError};
use crate::store::ArchiveSinkConfig;
use crate::types::SchemaRef;

/// A validated pipeline: its stages in topological order.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineSpec {
    /// Where the definition came from: the file path, or a description such as `weir import`.
    pub origin: String,
    /// Settings of the whole graph (the `[pipeline]` table).
    pub options: PipelineOptions,
    /// All stages, each after all of its inputs.
    pub stages: Vec<Stage>,
}

/// One named stage of a pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    /// The stage's name (the `NAME` of `[sources.NAME]`).
    pub name: String,
    /// The 1-based line of its table in the pipeline file, when it came from one.
    pub line: Option<usize>,
    /// What the stage does, and its settings.
    pub config: StageConfig,
    /// The stages that feed this one, as indices into [`PipelineSpec::stages`] (all smaller
    /// than this stage's own index), in the order of the `inputs` key. Empty for sources.
    pub inputs: Vec<usize>,
}

impl PipelineSpec {
    /// Whether every event stage `i` emits ends in archives that compress batches, in columns:
    /// its consumers (and theirs, through batch transforms, which keep a reader's columns) are
    /// all archive sinks with a codec, and there is at least one. The readers of such a source
    /// write columnar batches ([`crate::codec::ReaderOptions::columns`]); any other consumer
    /// (a filter, a file, a lake) would make rows of them again.
    pub fn stores_columns(&self, i: usize) -> bool {
        let mut consumers = self
            .stages
            .iter()
            .enumerate()
            .filter(|(_, s)| s.inputs.contains(&i))
            .peekable();
        consumers.peek().is_some()
            && consumers.all(|(j, s)| match &s.config {
                StageConfig::Archive(a) => a.compression != crate::segment::Codec::None,
                StageConfig::Batch(_) => self.stores_columns(j),
                _ => false,
            })
    }
}

impl Stage {
    /// The stage's table name, e.g. `sources.logs`.
    pub fn table(&self) -> String {
        format!("{}.{}", self.config.section(), self.name)
    }
}

/// A stage's type and configuration.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StageConfig {
    /// `[sources.NAME] type = "file"`: files and globs, read in order.
    File(FileSourceConfig),
    /// `[sources.NAME] type = "stdin"` (its `paths` is `["-"]`).
    Stdin(FileSourceConfig),
    /// `[transforms.NAME] type = "batch"`: re-batches by events, bytes and time.
    Batch(BatchConfig),
    /// `[transforms.NAME] type = "filter"`: keeps the events matching an expression.
    Filter(FilterConfig),
    /// `[transforms.NAME] type = "query"`: runs operators (`where ... | select ...`).
    Query(QueryConfig),
    /// `[sinks.NAME] type = "archive"`: the segment archive.
    Archive(ArchiveSinkConfig),
    /// `[sinks.NAME] type = "file"`: a Zeek TSV or JSON-lines file.
    FileSink(FileSinkConfig),
    /// `[sinks.NAME] type = "directory"`: one Zeek TSV or JSON-lines file per log path.
    Directory(DirSinkConfig),
    /// `[sinks.NAME] type = "parquet"`: a Hive-partitioned Parquet lake.
    Parquet(ParquetSinkConfig),
    /// `[sinks.NAME] type = "stdout"`: Zeek TSV or JSON lines on standard output.
    Stdout(StdoutSinkConfig),
}

impl StageConfig {
    /// A source stage: [`StageConfig::Stdin`] when it reads only stdin, else
    /// [`StageConfig::File`].
    pub fn source(config: FileSourceConfig) -> StageConfig {
        if config.is_stdin() {
            StageConfig::Stdin(config)
        } else {
            StageConfig::File(config)
        }
    }

    /// The section of the pipeline file the stage belongs to.
    pub fn section(&self) -> Section {
        match self {
            StageConfig::File(_) | StageConfig::Stdin(_) => Section::Sources,
            StageConfig::Batch(_) | StageConfig::Filter(_) | StageConfig::Query(_) => {
                Section::Transforms
            }
            StageConfig::Archive(_)
            | StageConfig::FileSink(_)
            | StageConfig::Directory(_)
            | StageConfig::Parquet(_)
            | StageConfig::Stdout(_) => Section::Sinks,
        }
    }

    /// The source's configuration, if the stage is a source.
    pub fn as_source(&self) -> Option<&FileSourceConfig> {
        match self {
            StageConfig::File(s) | StageConfig::Stdin(s) => Some(s),
            _ => None,
        }
    }

    /// Checks the settings (each stage's own `validate()`).
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        match self {
            StageConfig::File(s) | StageConfig::Stdin(s) => s.validate(),
            StageConfig::Batch(b) => b.validate(),
            StageConfig::Filter(f) => f.validate(),
            StageConfig::Query(q) => q.validate(),
            StageConfig::Archive(a) => a.validate(),
            StageConfig::FileSink(f) => f.validate(),
            StageConfig::Directory(d) => d.validate(),
            StageConfig::Parquet(p) => p.validate(),
            StageConfig::Stdout(s) => s.validate(),
        }
    }

    /// The key that names the stage's files, for file-system errors.
    fn path_key(&self) -> Option<&'static str> {
        match self {
            StageConfig::File(_) => Some("paths"),
            StageConfig::Archive(_) => Some("db"),
            StageConfig::FileSink(_) => Some("path"),
            StageConfig::Directory(_) | StageConfig::Parquet(_) => Some("dir"),
            _ => None,
        }
    }

    /// Joins relative paths to `base` (object storage URLs, `s3://`, stay as they are).
    fn resolve_paths(&mut self, base: &Path) {
        let url = |p: &str| crate::object::is_url(p);
        let join = |p: &mut PathBuf| {
            if p.is_relative() && !p.to_str().is_some_and(url) {
                *p = base.join(&*p);
            }
        };
        match self {
            StageConfig::File(s) => {
                for p in s.paths.iter_mut().filter(|p| *p != FileSourceConfig::STDIN) {
                    if Path::new(p.as_str()).is_relative() && !url(p) {
                        *p = base.join(p.as_str()).display().to_string();
                    }
                }
            }
            StageConfig::Archive(a) => {
                join(&mut a.db);
                if let Some(r) = &mut a.rules_dir {
                    join(r);
                }
            }
            StageConfig::FileSink(f) => join(&mut f.path),
            StageConfig::Directory(d) => join(&mut d.dir),
            StageConfig::Parquet(p) => join(&mut p.dir),
            _ => {}
        }
    }
}

/// The three sections of stages in a pipeline file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    /// `[sources.NAME]`.
    Sources,
    /// `[transforms.NAME]`.
    Transforms,
    /// `[sinks.NAME]`.
    Sinks,
}

impl Section {
    /// The section's name in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Section::Sources => "sources",
            Section::Transforms => "transforms",
            Section::Sinks => "sinks",
        }
    }

    /// The singular noun for messages: `source`, `transform`, `sink`.
    fn noun(self) -> &'static str {
        match self {
            Section::Sources => "source",
            Section::Transforms => "transform",
            Section::Sinks => "sink",
        }
    }
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The stages of `weir import` (see [`PipelineSpec::for_import`]): the command's flags are
/// applied to these, and `pipelines/zeek-to-archive.toml` spells out the same graph.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ImportConfig {
    /// The FILE arguments, `--from`, `--on-error`.
    pub source: FileSourceConfig,
    /// `--batch-size`, `--batch-timeout`.
    pub batch: BatchConfig,
    /// `--db`, `--max-segment-size`, `--sync`.
    pub archive: ArchiveSinkConfig,
    /// The graph's settings.
    pub options: PipelineOptions,
}

/// `path` made absolute with symbolic links followed: the path itself when it exists, else
/// its parent (an archive not created yet), else as it is written, made absolute.
fn resolved(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match (abs.parent(), abs.file_name()) {
        (Some(parent), Some(name)) => parent.canonicalize().map_or(abs.clone(), |p| p.join(name)),
        _ => abs,
    }
}

/// The first of a non-empty list of problems.
fn first(mut errors: Vec<ConfigError>) -> ConfigError {
    if errors.is_empty() {
        // Never happens: an error list is never empty; say so rather than panic.
        return ConfigError::new(
            "pipeline",
            None,
            None,
            None,
            ConfigErrorKind::Toml("invalid pipeline".into()),
        );
    }
    errors.swap_remove(0)
}

impl PipelineSpec {
    /// Names of the stages of [`PipelineSpec::for_import`]; `pipelines/zeek-to-archive.toml`
    /// uses the same ones.
    pub const IMPORT_STAGES: [&'static str; 3] = ["input", "batch", "archive"];

    /// The origin of [`PipelineSpec::for_import`].
    pub const IMPORT_ORIGIN: &'static str = "weir import";

    /// Reads, parses and validates a pipeline file; the first problem is the error.
    pub fn load(path: &Path, options: &LoadOptions) -> Result<PipelineSpec, ConfigError> {
        Self::load_all(path, options).map_err(first)
    }

    /// Like [`PipelineSpec::load`], with every problem found (what `weir run --check`
    /// reports): each table's, in file order, or else the graph's, then every stage's file
    /// checks. Never empty when it is an error.
    pub fn load_all(path: &Path, options: &LoadOptions) -> Result<PipelineSpec, Vec<ConfigError>> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            vec![ConfigError::new(
                &file,
                None,
                None,
                None,
                ConfigErrorKind::Io(Arc::new(e)),
            )]
        })?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Self::parse_all(&text, &file, &dir, options)
    }

    /// Parses and validates pipeline text. `file` names it in errors; `dir` is its directory
    /// (the value of `${PIPELINE_DIR}`). The first problem is the error.
    pub fn parse(
        text: &str,
        file: &str,
        dir: &Path,
        options: &LoadOptions,
    ) -> Result<PipelineSpec, ConfigError> {
        Self::parse_all(text, file, dir, options).map_err(first)
    }

    /// Like [`PipelineSpec::parse`], with every problem found (see
    /// [`PipelineSpec::load_all`]).
    pub fn parse_all(
        text: &str,
        file: &str,
        dir: &Path,
        options: &LoadOptions,
    ) -> Result<PipelineSpec, Vec<ConfigError>> {
        let spec = load::Parser {
            text,
            file,
            dir,
            options,
        }
        .parse()?;
        if options.check_paths {
            let errors = spec.check_paths_all();
            if !errors.is_empty() {
                return Err(errors);
            }
        }
        Ok(spec)
    }

    /// The pipeline `weir import` runs: one source, a batch transform and an archive sink,
    /// named as in [`PipelineSpec::IMPORT_STAGES`]. Not validated yet: see
    /// [`PipelineSpec::validate`].
    pub fn for_import(import: ImportConfig) -> PipelineSpec {
        let [input, batch, archive] = Self::IMPORT_STAGES;
        let source = StageConfig::source(import.source);
        let stage = |name: &str, config, inputs| Stage {
            name: name.to_string(),
            line: None,
            config,
            inputs,
        };
        PipelineSpec {
            origin: Self::IMPORT_ORIGIN.to_string(),
            options: import.options,
            stages: vec![
                stage(input, source, vec![]),
                stage(batch, StageConfig::Batch(import.batch), vec![0]),
                stage(archive, StageConfig::Archive(import.archive), vec![1]),
            ],
        }
    }

    /// Refuses two archive sinks with one database directory: each takes the writer lock of
    /// its directory, so the second could never open it. Paths are compared resolved
    /// (absolute, symbolic links followed where they exist), so `db`, `./db` and a link to
    /// it are one directory. The error is at the second sink's `db`.
    pub fn check_archives(&self) -> Result<(), ConfigError> {
        let mut seen: Vec<(PathBuf, &Stage)> = Vec::new();
        for stage in &self.stages {
            let StageConfig::Archive(a) = &stage.config else {
                continue;
            };
            let db = resolved(&a.db);
            if let Some((_, first)) = seen.iter().find(|(p, _)| *p == db) {
                return Err(self.error_at(
                    stage,
                    ConfigErrorKind::SharedArchive {
                        db: db.display().to_string(),
                        first: first.table(),
                    },
                ));
            }
            seen.push((db, stage));
        }
        Ok(())
    }

    /// Refuses a `query` transform with an operator that emits only at the end of its input
    /// (`sort`, `summarize`, ...) fed, directly or through other transforms, by a source
    /// that never ends (`follow = true`): it would never emit anything.
    pub fn check_blocking_after_live(&self) -> Result<(), ConfigError> {
        for (i, stage) in self.stages.iter().enumerate() {
            let StageConfig::Query(q) = &stage.config else {
                continue;
            };
            let Ok(chain) = q.chain() else { continue };
            let Some(op) = chain.blocking_operator() else {
                continue;
            };
            let mut stack = vec![i];
            let mut seen = vec![false; self.stages.len()];
            while let Some(k) = stack.pop() {
                if std::mem::replace(&mut seen[k], true) {
                    continue;
                }
                let s = &self.stages[k];
                if let Some(src) = s.config.as_source() {
                    if src.follow {
                        return Err(ConfigError {
                            file: self.origin.clone(),
                            line: stage.line,
                            table: Some(stage.table()),
                            key: Some(QueryConfig::KEY.to_string()),
                            kind: Box::new(ConfigErrorKind::Invalid(crate::setting::Problem::Invalid(format!(
                                "`{op}` emits only at the end of its input, and its input [sources.{}] follows files (follow = true) and never ends; use streaming operators (where, select, drop, head) here, or run the aggregation on the archive (`weir export '... | {op} ...'`)",
                                s.name
                            )))),
                        });
                    }
                }
                stack.extend(&s.inputs);
            }
        }
        Ok(())
    }

    /// Checks every setting of every stage (a loaded pipeline file has been checked already),
    /// and that no two archive sinks share a database ([`PipelineSpec::check_archives`]).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.options.validate().map_err(|e| ConfigError {
            file: self.origin.clone(),
            line: None,
            table: Some("pipeline".into()),
            key: Some(e.key.to_string()),
            kind: Box::new(e.problem.into()),
        })?;
        for stage in &self.stages {
            stage.config.validate().map_err(|e| ConfigError {
                file: self.origin.clone(),
                line: stage.line,
                table: Some(stage.table()),
                key: Some(e.key.to_string()),
                kind: Box::new(e.problem.into()),
            })?;
        }
        self.check_archives()?;
        self.check_blocking_after_live()
    }

    /// The schemas the sources upstream of stage `index` can produce: the shipped Zeek log
    /// schemas and those of each source's `schema_dir` (a source whose schemas do not load
    /// adds none: validation reports it).
    pub fn upstream_schemas(&self, index: usize) -> Vec<SchemaRef> {
        let mut seen = vec![false; self.stages.len()];
        let mut todo = vec![index];
        let mut out: Vec<SchemaRef> = Vec::new();
        while let Some(i) = todo.pop() {
            let Some(stage) = self.stages.get(i) else {
                continue;
            };
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            todo.extend(&stage.inputs);
            let Some(Ok(zeek)) = stage.config.as_source().map(|s| s.zeek_schemas()) else {
                continue;
            };
            for name in zeek.names() {
                if let Some(log) = zeek.by_name(&name) {
                    if !out.iter().any(|s| **s == **log.schema()) {
                        out.push(log.schema().clone());
                    }
                }
            }
        }
        out
    }

    /// Warnings about the expressions of `filter` transforms (`where`) against the schemas
    /// their sources can produce ([`PipelineSpec::upstream_schemas`], checked by
    /// [`crate::query::lint`]): field names none of them has (with the nearest names),
    /// comparisons none makes well-typed or some do not, `#type` names. `weir run --check`
    /// prints them; they do not fail it, as a Zeek TSV log (or a JSON one without a schema)
    /// may bring fields no schema file names.
    pub fn query_warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, stage) in self.stages.iter().enumerate() {
            let key = match &stage.config {
                StageConfig::Filter(_) => FilterConfig::KEY,
                StageConfig::Query(_) => QueryConfig::KEY,
                _ => continue,
            };
            let schemas = self.upstream_schemas(i);
            let problems = match &stage.config {
                StageConfig::Filter(f) => crate::query::lint(&f.expr, &schemas),
                StageConfig::Query(q) => q.chain().map(|c| c.lint(&schemas)).unwrap_or_default(),
                _ => Vec::new(),
            };
            // As a `ConfigError` shows its place: FILE:LINE: [TABLE] KEY: ...
            let line = stage.line.map(|l| format!(":{l}")).unwrap_or_default();
            for problem in problems {
                out.push(format!(
                    "{}{line}: [{}] {key}: {problem}",
                    self.origin,
                    stage.table(),
                ));
            }
        }
        out
    }

    /// The stage with this name and its index.
    pub fn stage(&self, name: &str) -> Option<(usize, &Stage)> {
        self.stages.iter().enumerate().find(|(_, s)| s.name == name)
    }

    /// Indices of the stages that list stage `index` among their inputs (its fan-out), in
    /// topological order.
    pub fn consumers(&self, index: usize) -> Vec<usize> {
        self.stages
            .iter()
            .enumerate()
            .filter(|(_, s)| s.inputs.contains(&index))
            .map(|(i, _)| i)
            .collect()
    }

    /// The sources with their indices.
    pub fn sources(&self) -> impl Iterator<Item = (usize, &Stage, &FileSourceConfig)> {
        self.stages
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.config.as_source().map(|src| (i, s, src)))
    }

    /// The sinks with their indices.
    pub fn sinks(&self) -> impl Iterator<Item = (usize, &Stage)> {
        self.stages
            .iter()
            .enumerate()
            .filter(|(_, s)| s.config.section() == Section::Sinks)
    }

    /// Expands the inputs of source `index` into files (see [`FileSourceConfig::inputs`]),
    /// with errors naming this pipeline and the source's table and `paths` key.
    /// Not a source (or no such index): no inputs.
    pub fn expand_source(&self, index: usize) -> Result<Vec<Input>, ConfigError> {
        let Some(stage) = self.stages.get(index) else {
            return Ok(Vec::new());
        };
        let Some(src) = stage.config.as_source() else {
            return Ok(Vec::new());
        };
        src.inputs().map_err(|e| {
            let kind = match e {
                SourceError::NoMatch { pattern } => ConfigErrorKind::NoMatch { pattern },
                SourceError::Pattern {
                    pattern, message, ..
                } => ConfigErrorKind::Invalid(crate::setting::Problem::BadGlob {
                    pattern,
                    reason: message,
                }),
                SourceError::Io { name, error } => ConfigErrorKind::Unreadable {
                    path: name,
                    error: Arc::new(error),
                },
                SourceError::Object(crate::object::ObjectError::NoMatch { url }) => {
                    ConfigErrorKind::NoMatch { pattern: url }
                }
                SourceError::Object(e) => ConfigErrorKind::Unreadable {
                    path: e.url().to_string(),
                    error: Arc::new(std::io::Error::other(e.problem())),
                },
            };
            self.error_at(stage, kind)
        })
    }

    /// Refuses a pipeline that would destroy its own input: a file sink whose `path` is one of
    /// the files a source reads (creating the sink truncates it), or an archive sink whose
    /// `db` directory is or holds one of them. Files are compared by device and inode, not by
    /// name, so `./a.log`, a symlink and a hard link to `a.log` are all the same file. Outputs
    /// that do not exist yet cannot be inputs. Called by [`PipelineSpec::check_paths`] and by
    /// [`build`](crate::pipeline::build::build) before any output is created; the error is at
    /// the sink's table and path key.
    pub fn check_outputs(&self) -> Result<(), ConfigError> {
        use std::os::unix::fs::MetadataExt;
        let id = |m: &std::fs::Metadata| (m.dev(), m.ino());
        // (device, inode) of each input file, with its name and source.
        let mut inputs: Vec<((u64, u64), PathBuf, String)> = Vec::new();
        for (i, stage, _) in self.sources() {
            for input in self.expand_source(i)? {
                if let Input::Path(path) = input {
                    if let Ok(m) = std::fs::metadata(&path) {
                        inputs.push((id(&m), path, stage.table()));
                    }
                }
            }
        }
        if inputs.is_empty() {
            return Ok(());
        }
        // The input that lies inside directory `dir`, if any: one of its ancestors is `dir`.
        let inside = |dir: &Path| {
            let dir = id(&std::fs::metadata(dir).ok()?);
            inputs.iter().find(|(_, path, _)| {
                path.canonicalize().is_ok_and(|p| {
                    p.ancestors()
                        .any(|a| std::fs::metadata(a).is_ok_and(|m| id(&m) == dir))
                })
            })
        };
        for stage in &self.stages {
            let clash = match &stage.config {
                StageConfig::FileSink(f) => std::fs::metadata(&f.path).ok().and_then(|m| {
                    let out = id(&m);
                    inputs
                        .iter()
                        .find(|(i, ..)| *i == out)
                        .map(|hit| (format!("the file {}", f.path.display()), hit))
                }),
                // An input inside the directory could be one of its log files.
                StageConfig::Directory(d) => {
                    inside(&d.dir).map(|hit| (format!("the directory {}", d.dir.display()), hit))
                }
                StageConfig::Parquet(p) => {
                    inside(&p.dir).map(|hit| (format!("the lake {}", p.dir.display()), hit))
                }
                StageConfig::Archive(a) => {
                    inside(&a.db).map(|hit| (format!("the archive {}", a.db.display()), hit))
                }
                _ => None,
            };
            if let Some((output, (_, input, source_table))) = clash {
                return Err(self.error_at(
                    stage,
                    ConfigErrorKind::OverwritesInput {
                        output,
                        input: input.display().to_string(),
                        source_table: source_table.clone(),
                    },
                ));
            }
        }
        Ok(())
    }

    /// The file-system checks of `weir run --check`: every file source's globs match files
    /// that can be opened, the parent directories of archive, file, directory and parquet
    /// sinks exist (the sinks create the rest), and no
    /// output would overwrite an input ([`PipelineSpec::check_outputs`]).
    pub fn check_paths(&self) -> Result<(), ConfigError> {
        match self.check_paths_all().into_iter().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Every problem [`PipelineSpec::check_paths`] finds: each stage's first, then the
    /// outputs that would overwrite inputs.
    pub fn check_paths_all(&self) -> Vec<ConfigError> {
        let mut errors: Vec<ConfigError> = self
            .stages
            .iter()
            .enumerate()
            .filter_map(|(i, stage)| self.check_stage_paths(i, stage).err())
            .collect();
        if errors.is_empty() {
            if let Err(e) = self.check_outputs() {
                errors.push(e);
            }
        }
        errors
    }

    fn check_stage_paths(&self, i: usize, stage: &Stage) -> Result<(), ConfigError> {
        match &stage.config {
            StageConfig::File(_) | StageConfig::Stdin(_) => {
                for input in self.expand_source(i)? {
                    if let Input::Path(path) = input {
                        std::fs::File::open(&path).map_err(|e| {
                            self.error_at(
                                stage,
                                ConfigErrorKind::Unreadable {
                                    path: path.display().to_string(),
                                    error: Arc::new(e),
                                },
                            )
                        })?;
                    }
                }
                Ok(())
            }
            StageConfig::Archive(a) => self.check_parent(stage, &a.db),
            StageConfig::FileSink(f) => self.check_parent(stage, &f.path),
            StageConfig::Directory(d) => self.check_parent(stage, &d.dir),
            StageConfig::Parquet(p) => self.check_parent(stage, &p.dir),
            _ => Ok(()),
        }
    }

    fn check_parent(&self, stage: &Stage, path: &Path) -> Result<(), ConfigError> {
        if path.to_str().is_some_and(crate::object::is_url) {
            return Ok(());
        }
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => return Ok(()),
        };
        let error = match std::fs::metadata(parent) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) => std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            Err(e) => e,
        };
        Err(self.error_at(
            stage,
            ConfigErrorKind::Unreadable {
                path: parent.display().to_string(),
                error: Arc::new(error),
            },
        ))
    }

    /// An error about a stage's files, at its table and path key.
    fn error_at(&self, stage: &Stage, kind: ConfigErrorKind) -> ConfigError {
        ConfigError {
            file: self.origin.clone(),
            line: stage.line,
            table: Some(stage.table()),
            key: stage.config.path_key().map(str::to_string),
            kind: Box::new(kind),
        }
    }
}
