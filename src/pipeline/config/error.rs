//! Errors of pipeline definitions: where the problem is (file, line, table, key) and what it
//! is.

use std::fmt;
use std::io;
use std::sync::Arc;

use crate::setting::Problem;

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

impl ConfigError {
    /// An error at `file`, and at the line, table and key when known.
    pub fn new(
        file: &str,
        line: Option<usize>,
        table: Option<&str>,
        key: Option<&str>,
        kind: ConfigErrorKind,
    ) -> ConfigError {
        ConfigError {
            file: file.to_string(),
            line,
            table: table.map(str::to_string),
            key: key.map(str::to_string),
            kind: Box::new(kind),
        }
    }
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
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// The file cannot be read.
    #[error("cannot read the pipeline file: {0}")]
    Io(#[source] Arc<io::Error>),
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
    /// A value of the wrong TOML type (of a key this module reads itself: `type`, `inputs`).
    #[error("expected {expected}, found {found}")]
    WrongType {
        /// What was expected.
        expected: String,
        /// The TOML type found.
        found: String,
    },
    /// A value its stage's configuration does not accept: serde's message, e.g. an unknown
    /// word, a malformed size or duration.
    #[error("{0}")]
    Value(String),
    /// A value its stage refuses (see the stage's `validate()`).
    #[error(transparent)]
    Invalid(#[from] Problem),
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
    /// A glob that matches no file.
    #[error("{pattern:?} matches no file")]
    NoMatch {
        /// The pattern.
        pattern: String,
    },
    /// An output that would overwrite an input: a file sink whose `path` is a file that a
    /// source reads, or an archive whose `db` directory holds one (compared by device and
    /// inode, so a symlink or hard link to an input is found too).
    #[error("{output} would overwrite the input file {input} of [{source_table}]; write to another path")]
    OverwritesInput {
        /// What would be overwritten: `the file PATH` or `the archive PATH`.
        output: String,
        /// The input file, as its source names it.
        input: String,
        /// The source's table, e.g. `sources.logs`.
        source_table: String,
    },
    /// Two archive sinks writing to one database directory (the second would wait for the
    /// first one's writer lock forever, or fail on it).
    #[error("the archive {db} is also the db of [{first}]: two archive sinks cannot write to one database; give each its own db, or feed one sink from both inputs")]
    SharedArchive {
        /// The database directory, resolved (absolute, symbolic links followed).
        db: String,
        /// The table of the sink that names it first, e.g. `sinks.archive`.
        first: String,
    },
    /// A path that cannot be read or written.
    #[error("cannot access {path}: {error}")]
    Unreadable {
        /// The path.
        path: String,
        /// The I/O error.
        #[source]
        error: Arc<io::Error>,
    },
}
