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
//!
//! [sources.logs]                  # a source named "logs"
//! type = "file"
//! paths = ["${WEIR_INPUT}"]       # globs, read in order; see "Paths" and "Variables" below
//!
//! [transforms.batch]
//! type = "batch"
//! inputs = ["logs"]               # names of the stages that feed this one
//! max_events = 1024
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
//! | section | `type` | keys (default) |
//! | --- | --- | --- |
//! | `pipeline` | — | `channel_capacity` size (`"16MiB"`) |
//! | `sources` | `file` | `paths` list of globs (required), `format`, `decompress`, `on_error`, `json_schema`, `max_line_length` |
//! | `sources` | `stdin` | `format`, `decompress`, `on_error`, `json_schema`, `max_line_length` |
//! | `transforms` | `batch` | `inputs`, `max_events` (1024), `max_bytes` size (`"16MiB"`), `timeout` duration (`"1s"`) |
//! | `sinks` | `archive` | `inputs`, `db` path (required), `max_segment_size` size (archive default, 1 GiB), `sync` `"always"`/`"batch"`/`"never"` (archive default) |
//! | `sinks` | `file` | `inputs`, `path` (required), `format` `"zeek-tsv"`/`"json"` (`"json"`) |
//! | `sinks` | `stdout` | `inputs`, `format` `"zeek-tsv"`/`"json"` (`"zeek-tsv"`) |
//!
//! Source keys: `format` is `"auto"` (the default: TSV or JSON told apart by the first byte),
//! `"zeek-tsv"` or `"zeek-json"`; `decompress` is `"auto"` (the default: gzip and zstd detected
//! by their magic bytes), `"gzip"`, `"zstd"` or `"none"`; `on_error` is `"fail"` (the default)
//! or `"skip"`; `json_schema` names the schema of Zeek JSON lines without `_path`
//! (`"zeek.json"`); `max_line_length` is a size (`"64MiB"`).
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
//! ## Variables
//!
//! Every string value may use `${NAME}` (the environment variable `NAME`; an error names it
//! when it is not set) and `${NAME:-default}` (the default when `NAME` is unset or empty);
//! `$$` is a literal `$`, and any other `$` is kept as it is. `${PIPELINE_DIR}` is built in:
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

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::duration::{parse_duration, DurationError};
use crate::error::OnError;
use crate::size::parse_size;

// ---------------------------------------------------------------------------------------------
// The typed form
// ---------------------------------------------------------------------------------------------

/// A validated pipeline: its stages in topological order.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineSpec {
    /// Where the definition came from: the file path, or a description such as `weir import`.
    pub origin: String,
    /// The byte bound of every edge (bounded channel) of the graph.
    pub channel_capacity: u64,
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
    /// What the stage does.
    pub kind: StageKind,
    /// The stages that feed this one, as indices into [`PipelineSpec::stages`] (all smaller
    /// than this stage's own index), in the order of the `inputs` key. Empty for sources.
    pub inputs: Vec<usize>,
}

impl Stage {
    /// The stage's table name, e.g. `sources.logs`.
    pub fn table(&self) -> String {
        format!("{}.{}", self.kind.section(), self.name)
    }
}

/// What a stage does.
#[derive(Debug, Clone, PartialEq)]
pub enum StageKind {
    /// Produces batches from bytes read somewhere.
    Source(SourceSpec),
    /// Turns batches into batches.
    Transform(TransformSpec),
    /// Consumes batches.
    Sink(SinkSpec),
}

impl StageKind {
    /// The section of the pipeline file: `sources`, `transforms` or `sinks`.
    pub fn section(&self) -> Section {
        match self {
            StageKind::Source(_) => Section::Sources,
            StageKind::Transform(_) => Section::Transforms,
            StageKind::Sink(_) => Section::Sinks,
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

/// A source: where bytes come from and how they are decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceSpec {
    /// What is read, in order.
    pub inputs: Vec<InputPath>,
    /// The input format.
    pub format: InputFormat,
    /// Decompression.
    pub decompress: Decompress,
    /// What to do with rows that do not parse.
    pub on_error: OnError,
    /// Schema name for Zeek JSON lines without `_path`.
    pub json_schema: String,
    /// Longest accepted line in bytes.
    pub max_line_length: usize,
}

impl SourceSpec {
    /// Default schema name for Zeek JSON lines without `_path`.
    pub const DEFAULT_JSON_SCHEMA: &'static str = "zeek.json";
    /// Default longest line: 64 MiB.
    pub const DEFAULT_MAX_LINE_LENGTH: usize = 64 << 20;

    /// A source reading `inputs` with every other setting at its default.
    pub fn new(inputs: Vec<InputPath>) -> SourceSpec {
        SourceSpec {
            inputs,
            format: InputFormat::Auto,
            decompress: Decompress::Auto,
            on_error: OnError::Fail,
            json_schema: Self::DEFAULT_JSON_SCHEMA.to_string(),
            max_line_length: Self::DEFAULT_MAX_LINE_LENGTH,
        }
    }

    /// Expands the inputs into the files to read, in order: each glob's matches in
    /// alphabetical order. A glob that matches nothing, or a literal path that does not exist,
    /// is an error ([`ConfigErrorKind::NoMatch`], [`ConfigErrorKind::Unreadable`]); the error
    /// names no file or line; [`PipelineSpec::expand_source`] adds them.
    pub fn expand(&self) -> Result<Vec<InputFile>, ConfigErrorKind> {
        let mut out = Vec::new();
        for input in &self.inputs {
            match input {
                InputPath::Stdin => out.push(InputFile::Stdin),
                InputPath::Literal(path) => {
                    std::fs::metadata(path).map_err(|e| ConfigErrorKind::Unreadable {
                        path: path.display().to_string(),
                        error: e.to_string(),
                    })?;
                    out.push(InputFile::Path(path.clone()));
                }
                InputPath::Glob(pattern) => {
                    let text = pattern.to_string_lossy();
                    let paths = glob::glob(&text).map_err(|e| ConfigErrorKind::BadGlob {
                        pattern: text.to_string(),
                        reason: e.msg.to_string(),
                    })?;
                    let before = out.len();
                    for entry in paths {
                        match entry {
                            Ok(path) if path.is_dir() => {}
                            Ok(path) => out.push(InputFile::Path(path)),
                            Err(e) => {
                                return Err(ConfigErrorKind::Unreadable {
                                    path: e.path().display().to_string(),
                                    error: e.error().to_string(),
                                })
                            }
                        }
                    }
                    if out.len() == before {
                        return Err(ConfigErrorKind::NoMatch {
                            pattern: text.to_string(),
                        });
                    }
                }
            }
        }
        Ok(out)
    }
}

/// One entry of a source's inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputPath {
    /// A glob pattern (every entry of `paths` in a pipeline file), already resolved against
    /// the base directory when relative.
    Glob(PathBuf),
    /// A path taken literally (the file arguments of `weir import`).
    Literal(PathBuf),
    /// Standard input.
    Stdin,
}

/// One file to read, after glob expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputFile {
    /// A file.
    Path(PathBuf),
    /// Standard input.
    Stdin,
}

/// Input formats of a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputFormat {
    /// Zeek TSV or Zeek JSON, told apart by the first byte.
    #[default]
    Auto,
    /// Zeek TSV (the ASCII writer's default).
    ZeekTsv,
    /// Zeek JSON lines.
    ZeekJson,
}

impl InputFormat {
    const NAMES: &'static [(&'static str, InputFormat)] = &[
        ("auto", InputFormat::Auto),
        ("zeek-tsv", InputFormat::ZeekTsv),
        ("zeek-json", InputFormat::ZeekJson),
    ];
}

/// Decompression of a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Decompress {
    /// gzip or zstd by magic bytes, otherwise none.
    #[default]
    Auto,
    /// gzip (several members are one stream).
    Gzip,
    /// zstd.
    Zstd,
    /// The bytes are read as they are.
    None,
}

impl Decompress {
    const NAMES: &'static [(&'static str, Decompress)] = &[
        ("auto", Decompress::Auto),
        ("gzip", Decompress::Gzip),
        ("zstd", Decompress::Zstd),
        ("none", Decompress::None),
    ];
}

/// Output formats of the writer sinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Zeek TSV, exactly as Zeek writes it.
    ZeekTsv,
    /// JSON lines, following Zeek's JSON logs.
    Json,
}

impl OutputFormat {
    const NAMES: &'static [(&'static str, OutputFormat)] = &[
        ("zeek-tsv", OutputFormat::ZeekTsv),
        ("json", OutputFormat::Json),
    ];
}

/// When the archive's write-ahead log is synced to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// After every WAL record.
    Always,
    /// Once per batch, before the batch is acknowledged.
    Batch,
    /// Never explicitly (the OS decides); fastest, unsafe against power loss.
    Never,
}

impl SyncMode {
    const NAMES: &'static [(&'static str, SyncMode)] = &[
        ("always", SyncMode::Always),
        ("batch", SyncMode::Batch),
        ("never", SyncMode::Never),
    ];
}

/// A transform.
#[derive(Debug, Clone, PartialEq)]
pub enum TransformSpec {
    /// Re-batches events: emits a batch when it has `max_events` events or `max_bytes` bytes,
    /// or when `timeout` has passed since its first event (a partial batch).
    Batch(BatchSpec),
}

/// Settings of a batch transform (shaped like Vector's `BatchConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSpec {
    /// Most events in one batch (at least 1).
    pub max_events: usize,
    /// Most bytes of encoded rows in one batch (at least 1).
    pub max_bytes: u64,
    /// Longest time a partial batch is held before it is flushed.
    pub timeout: Duration,
}

impl BatchSpec {
    /// Default `max_events` (`--batch-size`).
    pub const DEFAULT_MAX_EVENTS: usize = 8192;
    /// Default `max_bytes`: 16 MiB.
    pub const DEFAULT_MAX_BYTES: u64 = 16 << 20;
    /// Default `timeout` (`--batch-timeout`): 1 s.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);
}

impl Default for BatchSpec {
    fn default() -> BatchSpec {
        BatchSpec {
            max_events: Self::DEFAULT_MAX_EVENTS,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }
}

/// A sink.
#[derive(Debug, Clone, PartialEq)]
pub enum SinkSpec {
    /// The segment archive.
    Archive(ArchiveSinkSpec),
    /// A text file written with one of the writers.
    File {
        /// The file (created or truncated).
        path: PathBuf,
        /// Its format.
        format: OutputFormat,
    },
    /// Standard output, written with one of the writers.
    Stdout {
        /// The format.
        format: OutputFormat,
    },
}

/// Settings of an archive sink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveSinkSpec {
    /// The database directory.
    pub db: PathBuf,
    /// Largest segment file in bytes; `None` is the archive's default.
    pub max_segment_size: Option<u64>,
    /// WAL sync policy; `None` is the archive's default.
    pub sync: Option<SyncMode>,
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// A problem with a pipeline definition: where it is and what is wrong.
///
/// Displayed as `FILE[:LINE]: [TABLE] KEY: WHAT`, each part present when known.
#[derive(Debug, thiserror::Error)]
pub struct ConfigError {
    /// The pipeline file (or the origin of a built spec).
    pub file: String,
    /// 1-based line in the file, when known.
    pub line: Option<usize>,
    /// The table, e.g. `sources.logs` or `pipeline`.
    pub table: Option<String>,
    /// The key within the table, e.g. `inputs`.
    pub key: Option<String>,
    /// What is wrong (boxed to keep `Result`s small).
    #[source]
    pub kind: Box<ConfigErrorKind>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        f.write_str(":")?;
        if let Some(table) = &self.table {
            write!(f, " [{table}]")?;
        }
        if let Some(key) = &self.key {
            write!(f, " {key}:")?;
        } else if self.table.is_some() {
            f.write_str(":")?;
        }
        write!(f, " {}", self.kind)
    }
}

/// What is wrong in a pipeline definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigErrorKind {
    /// The file cannot be read.
    #[error("cannot read the pipeline file: {0}")]
    Io(String),
    /// TOML syntax, or a section that does not exist, or a section of the wrong shape.
    #[error("{0}")]
    Toml(String),
    /// A stage `type` that does not exist in its section.
    #[error("unknown {section} type {found:?}; expected one of: {expected}")]
    UnknownType {
        /// The stage's section noun (`source`, `transform`, `sink`).
        section: &'static str,
        /// The type given.
        found: String,
        /// The types there are.
        expected: String,
    },
    /// A required key is missing.
    #[error("missing required key{}", hint.as_deref().map(|h| format!(" ({h})")).unwrap_or_default())]
    MissingKey {
        /// A hint on what to write.
        hint: Option<String>,
    },
    /// A key that this stage type (or the `[pipeline]` table) does not have.
    #[error("unknown key for {what}; allowed keys: {allowed}")]
    UnknownKey {
        /// What has no such key, e.g. `a file source`.
        what: String,
        /// The keys there are.
        allowed: String,
    },
    /// A value of the wrong TOML type.
    #[error("expected {expected}, found {found}")]
    WrongType {
        /// What was expected.
        expected: String,
        /// The TOML type found.
        found: String,
    },
    /// A string that is not one of the allowed words.
    #[error("invalid value {found:?}; expected one of: {expected}")]
    BadChoice {
        /// The value given.
        found: String,
        /// The values there are.
        expected: String,
    },
    /// A size string that does not parse.
    #[error("{0}")]
    BadSize(String),
    /// A duration string that does not parse.
    #[error(transparent)]
    BadDuration(#[from] DurationError),
    /// A number out of range.
    #[error("{value} is out of range: {reason}")]
    OutOfRange {
        /// The value given.
        value: String,
        /// The allowed range.
        reason: String,
    },
    /// `${NAME}` of an unset environment variable.
    #[error("environment variable {name} is not set (set it, or give a default with ${{{name}:-default}})")]
    UnsetVariable {
        /// The variable.
        name: String,
    },
    /// A malformed `${...}`.
    #[error("malformed variable reference in {text:?}: {reason}")]
    BadVariable {
        /// The string value.
        text: String,
        /// What is wrong.
        reason: String,
    },
    /// An input naming no stage.
    #[error("unknown input {input:?}; stages are: {known}")]
    UnknownInput {
        /// The input given.
        input: String,
        /// The stage names there are.
        known: String,
    },
    /// An input naming a sink, which has no output.
    #[error("input {input:?} is a sink, which has no output")]
    SinkAsInput {
        /// The input given.
        input: String,
    },
    /// The same input listed twice (its batches would be processed twice).
    #[error("input {input:?} is listed twice")]
    DuplicateInput {
        /// The input given.
        input: String,
    },
    /// A transform or sink without inputs.
    #[error("a {section} needs at least one input: add inputs = [\"NAME\", ...]")]
    MissingInputs {
        /// The section noun.
        section: &'static str,
    },
    /// A source with an `inputs` key.
    #[error("a source reads data itself and takes no inputs; remove the key")]
    SourceWithInputs,
    /// The graph has a cycle.
    #[error("cycle: {}", path.join(" -> "))]
    Cycle {
        /// The stage names around the cycle, the first repeated at the end.
        path: Vec<String>,
    },
    /// Two stages share a name.
    #[error("duplicate stage name {name:?}: already defined as [{first}]")]
    DuplicateName {
        /// The name.
        name: String,
        /// The first table with that name (with its line).
        first: String,
    },
    /// An empty stage name.
    #[error("empty stage name")]
    EmptyName,
    /// A source or transform whose output nothing consumes.
    #[error("output is not used: no transform or sink lists {name:?} in its inputs")]
    Unused {
        /// The stage's name.
        name: String,
    },
    /// No sources, or no sinks.
    #[error("the pipeline has no {0}: define at least one [{0}.NAME] table")]
    Empty(&'static str),
    /// A glob pattern that does not parse.
    #[error("invalid glob pattern {pattern:?}: {reason}")]
    BadGlob {
        /// The pattern.
        pattern: String,
        /// What is wrong.
        reason: String,
    },
    /// A glob that matches no file.
    #[error("{pattern:?} matches no file")]
    NoMatch {
        /// The pattern.
        pattern: String,
    },
    /// A path that cannot be read or written.
    #[error("cannot access {path}: {error}")]
    Unreadable {
        /// The path.
        path: String,
        /// The I/O error.
        error: String,
    },
}

// ---------------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------------

/// How a pipeline file is loaded.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Relative paths are joined to this directory; `None` leaves them relative, i.e.
    /// relative to the process's working directory (what `weir run` does).
    pub base_dir: Option<PathBuf>,
    /// The variables `${NAME}` can use; `None` is the process environment.
    /// `PIPELINE_DIR` is always the pipeline file's directory.
    pub vars: Option<HashMap<String, String>>,
    /// Also run [`PipelineSpec::check_paths`] (what `weir run --check` does).
    pub check_paths: bool,
}

/// Settings of `weir import`, from which [`PipelineSpec::for_import`] builds its pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportSpec {
    /// The files, in order; `-` is stdin; none means stdin.
    pub inputs: Vec<PathBuf>,
    /// The database directory (`--db`).
    pub db: PathBuf,
    /// `--from`.
    pub format: InputFormat,
    /// `--on-error`.
    pub on_error: OnError,
    /// Schema name for Zeek JSON lines without `_path`.
    pub json_schema: String,
    /// `--batch-size`, `--batch-timeout`, and the byte limit of a batch.
    pub batch: BatchSpec,
    /// `--max-segment-size`; `None` is the archive's default.
    pub max_segment_size: Option<u64>,
    /// `--sync`; `None` is the archive's default.
    pub sync: Option<SyncMode>,
    /// The byte bound of every edge.
    pub channel_capacity: u64,
}

impl Default for ImportSpec {
    fn default() -> ImportSpec {
        ImportSpec {
            inputs: Vec::new(),
            db: PathBuf::from("weir.db"),
            format: InputFormat::Auto,
            on_error: OnError::Fail,
            json_schema: SourceSpec::DEFAULT_JSON_SCHEMA.to_string(),
            batch: BatchSpec::default(),
            max_segment_size: None,
            sync: None,
            channel_capacity: PipelineSpec::DEFAULT_CHANNEL_CAPACITY,
        }
    }
}

impl PipelineSpec {
    /// Default byte bound of an edge: 64 MiB.
    pub const DEFAULT_CHANNEL_CAPACITY: u64 = 16 << 20;

    /// Names of the stages of [`PipelineSpec::for_import`]; `pipelines/zeek-to-archive.toml`
    /// uses the same ones.
    pub const IMPORT_STAGES: [&'static str; 3] = ["input", "batch", "archive"];

    /// Reads, parses and validates a pipeline file.
    pub fn load(path: &Path, options: &LoadOptions) -> Result<PipelineSpec, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: file.clone(),
            line: None,
            table: None,
            key: None,
            kind: Box::new(ConfigErrorKind::Io(e.to_string())),
        })?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Self::parse(&text, &file, &dir, options)
    }

    /// Parses and validates pipeline text. `file` names it in errors; `dir` is its directory
    /// (the value of `${PIPELINE_DIR}`).
    pub fn parse(
        text: &str,
        file: &str,
        dir: &Path,
        options: &LoadOptions,
    ) -> Result<PipelineSpec, ConfigError> {
        let mut parser = Parser {
            text,
            file,
            dir,
            options,
        };
        let spec = parser.parse()?;
        if options.check_paths {
            spec.check_paths()?;
        }
        Ok(spec)
    }

    /// The pipeline `weir import` runs: one source reading `inputs` in order (stdin when
    /// empty), a batch transform, and an archive sink, named as in
    /// [`PipelineSpec::IMPORT_STAGES`].
    pub fn for_import(import: &ImportSpec) -> PipelineSpec {
        let inputs = if import.inputs.is_empty() {
            vec![InputPath::Stdin]
        } else {
            import
                .inputs
                .iter()
                .map(|p| {
                    if p.as_os_str() == "-" {
                        InputPath::Stdin
                    } else {
                        InputPath::Literal(p.clone())
                    }
                })
                .collect()
        };
        let source = SourceSpec {
            inputs,
            format: import.format,
            decompress: Decompress::Auto,
            on_error: import.on_error,
            json_schema: import.json_schema.clone(),
            max_line_length: SourceSpec::DEFAULT_MAX_LINE_LENGTH,
        };
        let [input, batch, archive] = Self::IMPORT_STAGES;
        PipelineSpec {
            origin: "weir import".to_string(),
            channel_capacity: import.channel_capacity,
            stages: vec![
                Stage {
                    name: input.into(),
                    line: None,
                    kind: StageKind::Source(source),
                    inputs: vec![],
                },
                Stage {
                    name: batch.into(),
                    line: None,
                    kind: StageKind::Transform(TransformSpec::Batch(import.batch)),
                    inputs: vec![0],
                },
                Stage {
                    name: archive.into(),
                    line: None,
                    kind: StageKind::Sink(SinkSpec::Archive(ArchiveSinkSpec {
                        db: import.db.clone(),
                        max_segment_size: import.max_segment_size,
                        sync: import.sync,
                    })),
                    inputs: vec![1],
                },
            ],
        }
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
    pub fn sources(&self) -> impl Iterator<Item = (usize, &Stage, &SourceSpec)> {
        self.stages
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match &s.kind {
                StageKind::Source(src) => Some((i, s, src)),
                _ => None,
            })
    }

    /// The sinks with their indices.
    pub fn sinks(&self) -> impl Iterator<Item = (usize, &Stage, &SinkSpec)> {
        self.stages
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match &s.kind {
                StageKind::Sink(sink) => Some((i, s, sink)),
                _ => None,
            })
    }

    /// Expands the inputs of source `index` into files (see [`SourceSpec::expand`]), with
    /// errors naming this pipeline and the source's table and `paths` key.
    /// Not a source (or no such index): no files.
    pub fn expand_source(&self, index: usize) -> Result<Vec<InputFile>, ConfigError> {
        match self.stages.get(index) {
            Some(
                stage @ Stage {
                    kind: StageKind::Source(src),
                    ..
                },
            ) => src.expand().map_err(|kind| self.error_at(stage, kind)),
            _ => Ok(Vec::new()),
        }
    }

    /// The file-system checks of `weir run --check`: every file source's globs match files
    /// that can be opened, and the parent directories of archive and file sinks exist.
    pub fn check_paths(&self) -> Result<(), ConfigError> {
        for (i, stage) in self.stages.iter().enumerate() {
            match &stage.kind {
                StageKind::Source(_) => {
                    for file in self.expand_source(i)? {
                        if let InputFile::Path(path) = file {
                            std::fs::File::open(&path).map_err(|e| {
                                self.error_at(
                                    stage,
                                    ConfigErrorKind::Unreadable {
                                        path: path.display().to_string(),
                                        error: e.to_string(),
                                    },
                                )
                            })?;
                        }
                    }
                }
                StageKind::Sink(SinkSpec::Archive(a)) => self.check_parent(stage, &a.db)?,
                StageKind::Sink(SinkSpec::File { path, .. }) => self.check_parent(stage, path)?,
                _ => {}
            }
        }
        Ok(())
    }

    fn check_parent(&self, stage: &Stage, path: &Path) -> Result<(), ConfigError> {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => return Ok(()),
        };
        match std::fs::metadata(parent) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err(self.error_at(
                stage,
                ConfigErrorKind::Unreadable {
                    path: parent.display().to_string(),
                    error: "not a directory".into(),
                },
            )),
            Err(e) => Err(self.error_at(
                stage,
                ConfigErrorKind::Unreadable {
                    path: parent.display().to_string(),
                    error: e.to_string(),
                },
            )),
        }
    }

    fn error_at(&self, stage: &Stage, kind: ConfigErrorKind) -> ConfigError {
        let key = match &stage.kind {
            StageKind::Source(s) if s.inputs.iter().all(|i| *i == InputPath::Stdin) => None,
            StageKind::Source(_) => Some("paths"),
            StageKind::Sink(SinkSpec::Archive(_)) => Some("db"),
            StageKind::Sink(SinkSpec::File { .. }) => Some("path"),
            _ => None,
        };
        ConfigError {
            file: self.origin.clone(),
            line: stage.line,
            table: Some(stage.table()),
            key: key.map(str::to_string),
            kind: Box::new(kind),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The parser: TOML into raw tables with spans, then validation into the typed form
// ---------------------------------------------------------------------------------------------

/// A TOML error message on one line, speaking of sections rather than serde fields.
fn toml_message(message: &str) -> String {
    let one_line = message
        .trim()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(": ");
    if let Some(rest) = one_line.strip_prefix("unknown field ") {
        return format!("unknown section {rest}");
    }
    if one_line.ends_with("expected a map") {
        return format!(
            "{one_line}: a section holds stage tables such as [sources.NAME], each with its keys"
        );
    }
    one_line
}

/// The keys of one stage table, each value with its byte span in the file.
type RawTable = BTreeMap<String, Spanned<toml::Value>>;

/// The document as TOML gives it: only the sections are fixed, so that every key error can
/// be reported by this module with its table and line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDocument {
    #[serde(default)]
    pipeline: Option<Spanned<RawTable>>,
    #[serde(default)]
    sources: BTreeMap<String, Spanned<RawTable>>,
    #[serde(default)]
    transforms: BTreeMap<String, Spanned<RawTable>>,
    #[serde(default)]
    sinks: BTreeMap<String, Spanned<RawTable>>,
}

const PIPELINE_KEYS: &[&str] = &["channel_capacity"];
const SOURCE_COMMON: &[&str] = &[
    "type",
    "format",
    "decompress",
    "on_error",
    "json_schema",
    "max_line_length",
];
const SOURCE_TYPES: &str = "file, stdin";
const TRANSFORM_TYPES: &str = "batch";
const SINK_TYPES: &str = "archive, file, stdout";

struct Parser<'a> {
    text: &'a str,
    file: &'a str,
    dir: &'a Path,
    options: &'a LoadOptions,
}

/// A stage between parsing and ordering.
struct Pending {
    name: String,
    line: usize,
    kind: StageKind,
    inputs: Vec<(String, usize)>, // name and line of the `inputs` key
}

impl Parser<'_> {
    fn line_of(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// The name of the last `[table]` header at or before `line`, for TOML errors.
    fn header_before(&self, line: usize) -> Option<String> {
        self.text
            .lines()
            .take(line)
            .filter_map(|l| {
                let l = l.trim();
                let inner = l.strip_prefix('[')?.split(']').next()?;
                (!inner.starts_with('[') && !inner.is_empty()).then(|| inner.trim().to_string())
            })
            .last()
    }

    fn error(
        &self,
        line: Option<usize>,
        table: Option<&str>,
        key: Option<&str>,
        kind: ConfigErrorKind,
    ) -> ConfigError {
        ConfigError {
            file: self.file.to_string(),
            line,
            table: table.map(str::to_string),
            key: key.map(str::to_string),
            kind: Box::new(kind),
        }
    }

    fn parse(&mut self) -> Result<PipelineSpec, ConfigError> {
        let doc: RawDocument = toml::from_str(self.text).map_err(|e| {
            let line = e.span().map(|s| self.line_of(s.start));
            let table = line.and_then(|l| self.header_before(l));
            self.error(
                line,
                table.as_deref(),
                None,
                ConfigErrorKind::Toml(toml_message(e.message())),
            )
        })?;

        let mut channel_capacity = PipelineSpec::DEFAULT_CHANNEL_CAPACITY;
        if let Some(table) = &doc.pipeline {
            let t = self.table("pipeline".into(), table);
            t.check_keys(PIPELINE_KEYS, "the [pipeline] table")?;
            if let Some(v) = t.size("channel_capacity")? {
                channel_capacity = t.at_least_one("channel_capacity", v)?;
            }
        }

        // All stages, in declaration order, with duplicate names refused.
        let mut raw: Vec<(Section, &String, &Spanned<RawTable>)> = Vec::new();
        for (name, table) in &doc.sources {
            raw.push((Section::Sources, name, table));
        }
        for (name, table) in &doc.transforms {
            raw.push((Section::Transforms, name, table));
        }
        for (name, table) in &doc.sinks {
            raw.push((Section::Sinks, name, table));
        }
        raw.sort_by_key(|(_, _, t)| t.span().start);

        let mut pending: Vec<Pending> = Vec::new();
        let mut seen: HashMap<&str, String> = HashMap::new();
        for (section, name, table) in &raw {
            let t = self.table(format!("{section}.{name}"), table);
            if name.is_empty() {
                return Err(t.table_error(ConfigErrorKind::EmptyName));
            }
            if let Some(first) = seen.get(name.as_str()) {
                return Err(t.table_error(ConfigErrorKind::DuplicateName {
                    name: name.to_string(),
                    first: first.clone(),
                }));
            }
            seen.insert(name, format!("{} at line {}", t.table, t.line));
            pending.push(self.stage(*section, name, &t)?);
        }

        if !pending
            .iter()
            .any(|p| matches!(p.kind, StageKind::Source(_)))
        {
            return Err(self.error(None, None, None, ConfigErrorKind::Empty("sources")));
        }
        if !pending.iter().any(|p| matches!(p.kind, StageKind::Sink(_))) {
            return Err(self.error(None, None, None, ConfigErrorKind::Empty("sinks")));
        }
        let stages = self.order(pending)?;
        Ok(PipelineSpec {
            origin: self.file.to_string(),
            channel_capacity,
            stages,
        })
    }

    fn table<'t>(&'t self, table: String, raw: &'t Spanned<RawTable>) -> Table<'t> {
        Table {
            parser: self,
            line: self.line_of(raw.span().start),
            table,
            raw: raw.get_ref(),
        }
    }

    fn stage(&self, section: Section, name: &str, t: &Table<'_>) -> Result<Pending, ConfigError> {
        let ty = t.string("type")?.ok_or_else(|| {
            t.key_error(
                "type",
                None,
                ConfigErrorKind::MissingKey {
                    hint: Some(format!(
                        "the {} type, one of: {}",
                        section.noun(),
                        match section {
                            Section::Sources => SOURCE_TYPES,
                            Section::Transforms => TRANSFORM_TYPES,
                            Section::Sinks => SINK_TYPES,
                        }
                    )),
                },
            )
        })?;
        let unknown_type = |expected: &str| {
            t.key_error(
                "type",
                t.line_of_key("type"),
                ConfigErrorKind::UnknownType {
                    section: section.noun(),
                    found: ty.clone(),
                    expected: expected.to_string(),
                },
            )
        };
        let kind = match section {
            Section::Sources => {
                if t.raw.contains_key("inputs") {
                    return Err(t.key_error(
                        "inputs",
                        t.line_of_key("inputs"),
                        ConfigErrorKind::SourceWithInputs,
                    ));
                }
                let inputs = match ty.as_str() {
                    "file" => {
                        t.check_keys(&[SOURCE_COMMON, &["paths"]].concat(), "a file source")?;
                        let paths = t.string_list("paths")?.ok_or_else(|| {
                            t.key_error(
                                "paths",
                                None,
                                ConfigErrorKind::MissingKey {
                                    hint: Some(
                                        "the files to read, e.g. paths = [\"logs/*.log.gz\"]"
                                            .into(),
                                    ),
                                },
                            )
                        })?;
                        if paths.is_empty() {
                            return Err(t.key_error(
                                "paths",
                                t.line_of_key("paths"),
                                ConfigErrorKind::MissingKey {
                                    hint: Some("the list is empty".into()),
                                },
                            ));
                        }
                        let mut inputs = Vec::new();
                        for p in paths {
                            if p == "-" {
                                inputs.push(InputPath::Stdin);
                                continue;
                            }
                            if let Err(e) = glob::Pattern::new(&p) {
                                return Err(t.key_error(
                                    "paths",
                                    t.line_of_key("paths"),
                                    ConfigErrorKind::BadGlob {
                                        pattern: p,
                                        reason: e.msg.to_string(),
                                    },
                                ));
                            }
                            inputs.push(InputPath::Glob(self.resolve(&p)));
                        }
                        inputs
                    }
                    "stdin" => {
                        t.check_keys(SOURCE_COMMON, "a stdin source")?;
                        vec![InputPath::Stdin]
                    }
                    _ => return Err(unknown_type(SOURCE_TYPES)),
                };
                let mut src = SourceSpec::new(inputs);
                if let Some(f) = t.choice("format", InputFormat::NAMES)? {
                    src.format = f;
                }
                if let Some(d) = t.choice("decompress", Decompress::NAMES)? {
                    src.decompress = d;
                }
                if let Some(o) = t.choice(
                    "on_error",
                    &[("fail", OnError::Fail), ("skip", OnError::Skip)],
                )? {
                    src.on_error = o;
                }
                if let Some(s) = t.string("json_schema")? {
                    src.json_schema = s;
                }
                if let Some(n) = t.size("max_line_length")? {
                    let n = t.at_least_one("max_line_length", n)?;
                    src.max_line_length = usize::try_from(n).unwrap_or(usize::MAX);
                }
                StageKind::Source(src)
            }
            Section::Transforms => match ty.as_str() {
                "batch" => {
                    t.check_keys(
                        &["type", "inputs", "max_events", "max_bytes", "timeout"],
                        "a batch transform",
                    )?;
                    let mut b = BatchSpec::default();
                    if let Some(n) = t.integer("max_events")? {
                        let n = t.at_least_one("max_events", n)?;
                        b.max_events = usize::try_from(n).unwrap_or(usize::MAX);
                    }
                    if let Some(n) = t.size("max_bytes")? {
                        b.max_bytes = t.at_least_one("max_bytes", n)?;
                    }
                    if let Some(d) = t.duration("timeout")? {
                        b.timeout = d;
                    }
                    StageKind::Transform(TransformSpec::Batch(b))
                }
                _ => return Err(unknown_type(TRANSFORM_TYPES)),
            },
            Section::Sinks => match ty.as_str() {
                "archive" => {
                    t.check_keys(
                        &["type", "inputs", "db", "max_segment_size", "sync"],
                        "an archive sink",
                    )?;
                    let db = t.string("db")?.ok_or_else(|| {
                        t.key_error(
                            "db",
                            None,
                            ConfigErrorKind::MissingKey {
                                hint: Some(
                                    "the database directory, e.g. db = \"${WEIR_DB:-weir.db}\""
                                        .into(),
                                ),
                            },
                        )
                    })?;
                    let max_segment_size = match t.size("max_segment_size")? {
                        Some(n) => Some(t.at_least_one("max_segment_size", n)?),
                        None => None,
                    };
                    StageKind::Sink(SinkSpec::Archive(ArchiveSinkSpec {
                        db: self.resolve(&db),
                        max_segment_size,
                        sync: t.choice("sync", SyncMode::NAMES)?,
                    }))
                }
                "file" => {
                    t.check_keys(&["type", "inputs", "path", "format"], "a file sink")?;
                    let path = t.string("path")?.ok_or_else(|| {
                        t.key_error(
                            "path",
                            None,
                            ConfigErrorKind::MissingKey {
                                hint: Some("the file to write, e.g. path = \"events.json\"".into()),
                            },
                        )
                    })?;
                    StageKind::Sink(SinkSpec::File {
                        path: self.resolve(&path),
                        format: t
                            .choice("format", OutputFormat::NAMES)?
                            .unwrap_or(OutputFormat::Json),
                    })
                }
                "stdout" => {
                    t.check_keys(&["type", "inputs", "format"], "a stdout sink")?;
                    StageKind::Sink(SinkSpec::Stdout {
                        format: t
                            .choice("format", OutputFormat::NAMES)?
                            .unwrap_or(OutputFormat::ZeekTsv),
                    })
                }
                _ => return Err(unknown_type(SINK_TYPES)),
            },
        };

        let inputs = if section == Section::Sources {
            Vec::new()
        } else {
            let list = t.string_list("inputs")?.unwrap_or_default();
            if list.is_empty() {
                return Err(t.key_error(
                    "inputs",
                    t.line_of_key("inputs"),
                    ConfigErrorKind::MissingInputs {
                        section: section.noun(),
                    },
                ));
            }
            let line = t.line_of_key("inputs").unwrap_or(t.line);
            list.into_iter().map(|name| (name, line)).collect()
        };
        Ok(Pending {
            name: name.to_string(),
            line: t.line,
            kind,
            inputs,
        })
    }

    /// Joins a relative path to the base directory, if there is one.
    fn resolve(&self, path: &str) -> PathBuf {
        let p = PathBuf::from(path);
        match &self.options.base_dir {
            Some(base) if p.is_relative() => base.join(p),
            _ => p,
        }
    }

    /// Substitutes `${NAME}`, `${NAME:-default}` and `$$` in a string value.
    fn interpolate(&self, text: &str) -> Result<String, ConfigErrorKind> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(pos) = rest.find('$') {
            out.push_str(&rest[..pos]);
            let after = &rest[pos + 1..];
            if let Some(tail) = after.strip_prefix('$') {
                out.push('$');
                rest = tail;
            } else if let Some(body) = after.strip_prefix('{') {
                let end = body.find('}').ok_or_else(|| ConfigErrorKind::BadVariable {
                    text: text.to_string(),
                    reason: "missing closing brace".into(),
                })?;
                let inner = &body[..end];
                let (name, default) = match inner.split_once(":-") {
                    Some((n, d)) => (n, Some(d)),
                    None => (inner, None),
                };
                let valid = name
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid {
                    return Err(ConfigErrorKind::BadVariable {
                        text: text.to_string(),
                        reason: format!(
                            "{name:?} is not a variable name (letters, digits and _; write $$ for a literal $)"
                        ),
                    });
                }
                let value = self
                    .lookup(name)
                    .filter(|v| default.is_none() || !v.is_empty());
                match (value, default) {
                    (Some(v), _) => out.push_str(&v),
                    (None, Some(d)) => out.push_str(d),
                    (None, None) => {
                        return Err(ConfigErrorKind::UnsetVariable {
                            name: name.to_string(),
                        })
                    }
                }
                rest = &body[end + 1..];
            } else {
                out.push('$');
                rest = after;
            }
        }
        out.push_str(rest);
        Ok(out)
    }

    fn lookup(&self, name: &str) -> Option<String> {
        if name == "PIPELINE_DIR" {
            return Some(self.dir.display().to_string());
        }
        match &self.options.vars {
            Some(vars) => vars.get(name).cloned(),
            None => std::env::var(name).ok(),
        }
    }

    /// Orders the stages topologically (Kahn's algorithm, ties in declaration order),
    /// resolving inputs to indices; refuses unknown inputs, sinks as inputs, duplicates,
    /// unused outputs and cycles.
    fn order(&self, pending: Vec<Pending>) -> Result<Vec<Stage>, ConfigError> {
        let index: HashMap<&str, usize> = pending
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.as_str(), i))
            .collect();
        let known = pending
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let table_of = |p: &Pending| format!("{}.{}", p.kind.section(), p.name);

        // Edges: preds[i] = indices of i's inputs (in `inputs` order).
        let mut preds: Vec<Vec<usize>> = Vec::with_capacity(pending.len());
        for p in &pending {
            let mut list = Vec::new();
            for (input, line) in &p.inputs {
                let err = |kind| self.error(Some(*line), Some(&table_of(p)), Some("inputs"), kind);
                let Some(&j) = index.get(input.as_str()) else {
                    return Err(err(ConfigErrorKind::UnknownInput {
                        input: input.clone(),
                        known: known.clone(),
                    }));
                };
                if matches!(pending[j].kind, StageKind::Sink(_)) {
                    return Err(err(ConfigErrorKind::SinkAsInput {
                        input: input.clone(),
                    }));
                }
                if list.contains(&j) {
                    return Err(err(ConfigErrorKind::DuplicateInput {
                        input: input.clone(),
                    }));
                }
                list.push(j);
            }
            preds.push(list);
        }

        // A cycle first: an unused stage inside a cycle is better explained by the cycle.
        let n = pending.len();
        let mut indegree: Vec<usize> = preds.iter().map(Vec::len).collect();
        let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, list) in preds.iter().enumerate() {
            for &j in list {
                succs[j].push(i);
            }
        }
        let mut order: Vec<usize> = Vec::with_capacity(n);
        let mut ready: std::collections::BTreeSet<usize> =
            (0..n).filter(|&i| indegree[i] == 0).collect();
        while let Some(i) = ready.pop_first() {
            order.push(i);
            for &k in &succs[i] {
                indegree[k] -= 1;
                if indegree[k] == 0 {
                    ready.insert(k);
                }
            }
        }
        if order.len() < n {
            // Walk back along inputs from a stage left over until a stage repeats.
            let left: Vec<bool> = (0..n).map(|i| indegree[i] > 0).collect();
            let mut path: Vec<usize> = Vec::new();
            let mut cur = (0..n).find(|&i| left[i]).unwrap_or(0);
            while !path.contains(&cur) {
                path.push(cur);
                cur = preds[cur].iter().copied().find(|&j| left[j]).unwrap_or(cur);
            }
            let from = path.iter().position(|&i| i == cur).unwrap_or(0);
            let mut cycle: Vec<usize> = path[from..].to_vec();
            cycle.reverse(); // data-flow direction: input -> consumer
            let first = cycle.iter().copied().min().unwrap_or(cur);
            let rot = cycle.iter().position(|&i| i == first).unwrap_or(0);
            cycle.rotate_left(rot);
            let mut names: Vec<String> = cycle.iter().map(|&i| pending[i].name.clone()).collect();
            names.push(pending[first].name.clone());
            let p = &pending[first];
            let line = p.inputs.first().map(|(_, l)| *l).unwrap_or(p.line);
            return Err(self.error(
                Some(line),
                Some(&table_of(p)),
                Some("inputs"),
                ConfigErrorKind::Cycle { path: names },
            ));
        }

        for (i, p) in pending.iter().enumerate() {
            if !matches!(p.kind, StageKind::Sink(_)) && succs[i].is_empty() {
                return Err(self.error(
                    Some(p.line),
                    Some(&table_of(p)),
                    None,
                    ConfigErrorKind::Unused {
                        name: p.name.clone(),
                    },
                ));
            }
        }

        let mut position = vec![0usize; n];
        for (pos, &i) in order.iter().enumerate() {
            position[i] = pos;
        }
        let mut slots: Vec<Option<Pending>> = pending.into_iter().map(Some).collect();
        let mut stages = Vec::with_capacity(n);
        for &i in &order {
            let Some(p) = slots[i].take() else { continue };
            stages.push(Stage {
                name: p.name,
                line: Some(p.line),
                kind: p.kind,
                inputs: preds[i].iter().map(|&j| position[j]).collect(),
            });
        }
        Ok(stages)
    }
}

/// One table being validated: typed access to its keys with errors that name it.
struct Table<'a> {
    parser: &'a Parser<'a>,
    table: String,
    line: usize,
    raw: &'a RawTable,
}

impl Table<'_> {
    fn line_of_key(&self, key: &str) -> Option<usize> {
        self.raw
            .get(key)
            .map(|v| self.parser.line_of(v.span().start))
    }

    fn key_error(&self, key: &str, line: Option<usize>, kind: ConfigErrorKind) -> ConfigError {
        self.parser.error(
            Some(line.unwrap_or(self.line)),
            Some(&self.table),
            Some(key),
            kind,
        )
    }

    fn table_error(&self, kind: ConfigErrorKind) -> ConfigError {
        self.parser
            .error(Some(self.line), Some(&self.table), None, kind)
    }

    /// Refuses keys outside `allowed`, the first in file order.
    fn check_keys(&self, allowed: &[&str], what: &str) -> Result<(), ConfigError> {
        let mut unknown: Vec<(&String, &Spanned<toml::Value>)> = self
            .raw
            .iter()
            .filter(|(k, _)| !allowed.contains(&k.as_str()))
            .collect();
        unknown.sort_by_key(|(_, v)| v.span().start);
        match unknown.first() {
            None => Ok(()),
            Some((key, v)) => Err(self.key_error(
                key,
                Some(self.parser.line_of(v.span().start)),
                ConfigErrorKind::UnknownKey {
                    what: what.to_string(),
                    allowed: allowed.join(", "),
                },
            )),
        }
    }

    fn wrong_type(&self, key: &str, v: &Spanned<toml::Value>, expected: &str) -> ConfigError {
        self.key_error(
            key,
            Some(self.parser.line_of(v.span().start)),
            ConfigErrorKind::WrongType {
                expected: expected.to_string(),
                found: v.get_ref().type_str().to_string(),
            },
        )
    }

    /// A string value, with variables substituted.
    fn string(&self, key: &str) -> Result<Option<String>, ConfigError> {
        let Some(v) = self.raw.get(key) else {
            return Ok(None);
        };
        match v.get_ref() {
            toml::Value::String(s) => self.parser.interpolate(s).map(Some).map_err(|kind| {
                self.key_error(key, Some(self.parser.line_of(v.span().start)), kind)
            }),
            _ => Err(self.wrong_type(key, v, "a string")),
        }
    }

    /// A list of strings, with variables substituted.
    fn string_list(&self, key: &str) -> Result<Option<Vec<String>>, ConfigError> {
        let Some(v) = self.raw.get(key) else {
            return Ok(None);
        };
        let expected = "a list of strings, e.g. [\"a\", \"b\"]";
        let toml::Value::Array(items) = v.get_ref() else {
            return Err(self.wrong_type(key, v, expected));
        };
        let line = Some(self.parser.line_of(v.span().start));
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let toml::Value::String(s) = item else {
                return Err(self.key_error(
                    key,
                    line,
                    ConfigErrorKind::WrongType {
                        expected: expected.to_string(),
                        found: format!("a list holding {}", item.type_str()),
                    },
                ));
            };
            out.push(
                self.parser
                    .interpolate(s)
                    .map_err(|kind| self.key_error(key, line, kind))?,
            );
        }
        Ok(Some(out))
    }

    fn integer(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        let Some(v) = self.raw.get(key) else {
            return Ok(None);
        };
        match v.get_ref() {
            toml::Value::Integer(n) => u64::try_from(*n).map(Some).map_err(|_| {
                self.key_error(
                    key,
                    Some(self.parser.line_of(v.span().start)),
                    ConfigErrorKind::OutOfRange {
                        value: n.to_string(),
                        reason: "must not be negative".into(),
                    },
                )
            }),
            _ => Err(self.wrong_type(key, v, "an integer")),
        }
    }

    fn at_least_one(&self, key: &str, n: u64) -> Result<u64, ConfigError> {
        if n == 0 {
            return Err(self.key_error(
                key,
                self.line_of_key(key),
                ConfigErrorKind::OutOfRange {
                    value: "0".into(),
                    reason: "must be at least 1".into(),
                },
            ));
        }
        Ok(n)
    }

    fn size(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        let Some(v) = self.raw.get(key) else {
            return Ok(None);
        };
        if !matches!(v.get_ref(), toml::Value::String(_)) {
            return Err(self.wrong_type(key, v, "a size string such as \"4MiB\""));
        }
        let Some(s) = self.string(key)? else {
            return Ok(None);
        };
        parse_size(&s).map(Some).map_err(|e| {
            self.key_error(
                key,
                self.line_of_key(key),
                ConfigErrorKind::BadSize(e.to_string()),
            )
        })
    }

    fn duration(&self, key: &str) -> Result<Option<Duration>, ConfigError> {
        let Some(v) = self.raw.get(key) else {
            return Ok(None);
        };
        if !matches!(v.get_ref(), toml::Value::String(_)) {
            return Err(self.wrong_type(key, v, "a duration string such as \"1s\" or \"250ms\""));
        }
        let Some(s) = self.string(key)? else {
            return Ok(None);
        };
        parse_duration(&s)
            .map(Some)
            .map_err(|e| self.key_error(key, self.line_of_key(key), e.into()))
    }

    fn choice<T: Copy>(&self, key: &str, names: &[(&str, T)]) -> Result<Option<T>, ConfigError> {
        let Some(s) = self.string(key)? else {
            return Ok(None);
        };
        match names.iter().find(|(n, _)| *n == s) {
            Some((_, v)) => Ok(Some(*v)),
            None => Err(self.key_error(
                key,
                self.line_of_key(key),
                ConfigErrorKind::BadChoice {
                    found: s,
                    expected: names.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
                },
            )),
        }
    }
}
