//! Reading a pipeline file: TOML into tables with spans, variables substituted, each stage
//! table handed to its stage's configuration type (serde), every error placed at its file,
//! line, table and key.
//!
//! The stage types are listed once, in [`STAGE_TYPES`]: a new stage type is one entry there
//! plus its configuration type (which derives `Deserialize` and owns its `Default` and its
//! `validate()`; it builds its component with `build()`, or, for the batcher, is the
//! component's settings as they are).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::graph::{order, Pending};
use super::vars::Vars;
use super::{ConfigError, ConfigErrorKind, PipelineSpec, Section, StageConfig};
use crate::batcher::BatchConfig;
use crate::codec::{DirSinkConfig, FileSinkConfig, ParquetSinkConfig, StdoutSinkConfig};
use crate::pipeline::PipelineOptions;
use crate::query::{FilterConfig, QueryConfig};
use crate::setting::{field_names, InvalidSetting};
use crate::source::FileSourceConfig;
use crate::store::ArchiveSinkConfig;

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

/// One stage type of a pipeline file.
struct StageType {
    section: Section,
    /// The value of its `type` key.
    name: &'static str,
    /// What it is, for messages: `a file source`.
    what: &'static str,
    /// Keys that must be present, each with a hint on what to write.
    required: &'static [(&'static str, &'static str)],
    /// Keys of its configuration type that this stage type does not take.
    excluded: &'static [&'static str],
    /// Its configuration type's keys.
    keys: fn() -> &'static [&'static str],
    /// Deserializes its configuration from the stage table (without `type` and `inputs`).
    parse: fn(toml::Value) -> Result<StageConfig, toml::de::Error>,
}

/// Every stage type, by section.
const STAGE_TYPES: &[StageType] = &[
    StageType {
        section: Section::Sources,
        name: "file",
        what: "a file source",
        required: &[(
            "paths",
            "the files to read, e.g. paths = [\"logs/*.log.gz\"]",
        )],
        excluded: &[],
        keys: field_names::<FileSourceConfig>,
        parse: |v| FileSourceConfig::deserialize(v).map(StageConfig::File),
    },
    StageType {
        section: Section::Sources,
        name: "stdin",
        what: "a stdin source",
        required: &[],
        excluded: &["paths", "follow"],
        keys: field_names::<FileSourceConfig>,
        parse: |v| FileSourceConfig::deserialize(v).map(StageConfig::Stdin),
    },
    StageType {
        section: Section::Transforms,
        name: "batch",
        what: "a batch transform",
        required: &[],
        excluded: &[],
        keys: field_names::<BatchConfig>,
        parse: |v| BatchConfig::deserialize(v).map(StageConfig::Batch),
    },
    StageType {
        section: Section::Transforms,
        name: "filter",
        what: "a filter transform",
        required: &[(
            "where",
            "the expression events must match, e.g. where = \"id.resp_p == 53\"",
        )],
        excluded: &[],
        keys: field_names::<FilterConfig>,
        parse: |v| FilterConfig::deserialize(v).map(StageConfig::Filter),
    },
    StageType {
        section: Section::Transforms,
        name: "query",
        what: "a query transform",
        required: &[(
            "query",
            "the operators, e.g. query = \"where id.resp_p == 53 | select ts, uid\"",
        )],
        excluded: &[],
        keys: field_names::<QueryConfig>,
        parse: |v| QueryConfig::deserialize(v).map(StageConfig::Query),
    },
    StageType {
        section: Section::Sinks,
        name: "archive",
        what: "an archive sink",
        required: &[(
            "db",
            "the database directory, e.g. db = \"${WEIR_DB:-weir.db}\"",
        )],
        excluded: &[],
        keys: field_names::<ArchiveSinkConfig>,
        parse: |v| ArchiveSinkConfig::deserialize(v).map(StageConfig::Archive),
    },
    StageType {
        section: Section::Sinks,
        name: "file",
        what: "a file sink",
        required: &[("path", "the file to write, e.g. path = \"events.json\"")],
        excluded: &[],
        keys: field_names::<FileSinkConfig>,
        parse: |v| FileSinkConfig::deserialize(v).map(StageConfig::FileSink),
    },
    StageType {
        section: Section::Sinks,
        name: "directory",
        what: "a directory sink",
        required: &[(
            "dir",
            "the directory to write the logs into, e.g. dir = \"logs\"",
        )],
        excluded: &[],
        keys: field_names::<DirSinkConfig>,
        parse: |v| DirSinkConfig::deserialize(v).map(StageConfig::Directory),
    },
    StageType {
        section: Section::Sinks,
        name: "parquet",
        what: "a parquet sink",
        required: &[("dir", "the lake's directory, e.g. dir = \"lake\"")],
        excluded: &[],
        keys: field_names::<ParquetSinkConfig>,
        parse: |v| ParquetSinkConfig::deserialize(v).map(StageConfig::Parquet),
    },
    StageType {
        section: Section::Sinks,
        name: "stdout",
        what: "a stdout sink",
        required: &[],
        excluded: &[],
        keys: field_names::<StdoutSinkConfig>,
        parse: |v| StdoutSinkConfig::deserialize(v).map(StageConfig::Stdout),
    },
];

impl StageType {
    /// Every key a table of this type may have, `type` and `inputs` first.
    fn allowed(&self) -> Vec<&'static str> {
        let mut keys = vec!["type"];
        if self.section != Section::Sources {
            keys.push("inputs");
        }
        keys.extend(
            (self.keys)()
                .iter()
                .copied()
                .filter(|k| !self.excluded.contains(k)),
        );
        keys
    }
}

/// The type names of a section, for messages.
fn type_names(section: Section) -> String {
    STAGE_TYPES
        .iter()
        .filter(|t| t.section == section)
        .map(|t| t.name)
        .collect::<Vec<_>>()
        .join(", ")
}

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

/// The keys of one table, each value with its byte span in the file.
type RawTable = BTreeMap<String, Spanned<toml::Value>>;

/// The document as TOML gives it: only the sections are fixed, so that every key error can
/// be reported with its table and line.
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

/// Reads pipeline text into a [`PipelineSpec`].
pub(super) struct Parser<'a> {
    pub text: &'a str,
    pub file: &'a str,
    pub dir: &'a Path,
    pub options: &'a LoadOptions,
}

/// One table being read: its name, line and keys, with errors that name them.
struct Table<'a> {
    parser: &'a Parser<'a>,
    table: String,
    line: usize,
    raw: RawTable,
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
        ConfigError::new(self.file, line, table, key, kind)
    }

    /// Reads the pipeline, reporting every table's problems (a stage's first problem each):
    /// the errors come back in file order, and the graph is checked once every table is good.
    pub(super) fn parse(&self) -> Result<PipelineSpec, Vec<ConfigError>> {
        let doc: RawDocument = toml::from_str(self.text).map_err(|e| {
            let line = e.span().map(|s| self.line_of(s.start));
            let table = line.and_then(|l| self.header_before(l));
            vec![self.error(
                line,
                table.as_deref(),
                None,
                ConfigErrorKind::Toml(toml_message(e.message())),
            )]
        })?;

        let mut errors = Vec::new();
        let mut options = PipelineOptions::default();
        if let Some(raw) = doc.pipeline {
            match self.pipeline_table(raw) {
                Ok(o) => options = o,
                Err(e) => errors.push(e),
            }
        }

        // All stages, in declaration order, with duplicate names refused.
        let mut raw: Vec<(Section, String, Spanned<RawTable>)> = Vec::new();
        for (name, table) in doc.sources {
            raw.push((Section::Sources, name, table));
        }
        for (name, table) in doc.transforms {
            raw.push((Section::Transforms, name, table));
        }
        for (name, table) in doc.sinks {
            raw.push((Section::Sinks, name, table));
        }
        raw.sort_by_key(|(_, _, t)| t.span().start);

        let mut pending: Vec<Pending> = Vec::new();
        let mut seen: HashMap<String, String> = HashMap::new();
        for (section, name, table) in raw {
            match self.stage_table(section, name, table, &mut seen) {
                Ok(p) => pending.push(p),
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }

        if !pending
            .iter()
            .any(|p| p.config.section() == Section::Sources)
        {
            return Err(vec![self.error(
                None,
                None,
                None,
                ConfigErrorKind::Empty("sources"),
            )]);
        }
        if !pending.iter().any(|p| p.config.section() == Section::Sinks) {
            return Err(vec![self.error(
                None,
                None,
                None,
                ConfigErrorKind::Empty("sinks"),
            )]);
        }
        let stages = order(self.file, pending).map_err(|e| vec![e])?;
        let spec = PipelineSpec {
            origin: self.file.to_string(),
            options,
            stages,
        };
        spec.check_archives().map_err(|e| vec![e])?;
        spec.check_blocking_after_live().map_err(|e| vec![e])?;
        Ok(spec)
    }

    /// The `[pipeline]` table.
    fn pipeline_table(&self, raw: Spanned<RawTable>) -> Result<PipelineOptions, ConfigError> {
        let t = self.table("pipeline".into(), raw)?;
        t.check_keys(field_names::<PipelineOptions>(), "the [pipeline] table")?;
        let mut options = t.deserialize(PipelineOptions::deserialize)?;
        options.validate().map_err(|e| t.invalid(e))?;
        if let Some(base) = &self.options.base_dir {
            options.resolve_paths(base);
        }
        Ok(options)
    }

    /// One stage's table; `seen` holds the names so far, for duplicates.
    fn stage_table(
        &self,
        section: Section,
        name: String,
        raw: Spanned<RawTable>,
        seen: &mut HashMap<String, String>,
    ) -> Result<Pending, ConfigError> {
        let t = self.table(format!("{section}.{name}"), raw)?;
        if name.is_empty() {
            return Err(t.table_error(ConfigErrorKind::EmptyName));
        }
        if let Some(first) = seen.get(&name) {
            return Err(t.table_error(ConfigErrorKind::DuplicateName {
                name,
                first: first.clone(),
            }));
        }
        seen.insert(name.clone(), format!("{} at line {}", t.table, t.line));
        self.stage(section, name, t)
    }

    /// A table, its variables substituted.
    fn table(&self, table: String, raw: Spanned<RawTable>) -> Result<Table<'_>, ConfigError> {
        let line = self.line_of(raw.span().start);
        let vars = Vars {
            pipeline_dir: self.dir,
            vars: self.options.vars.as_ref(),
        };
        let mut keys = raw.into_inner();
        for (key, value) in keys.iter_mut() {
            let value_line = self.line_of(value.span().start);
            vars.expand(value.get_mut())
                .map_err(|kind| self.error(Some(value_line), Some(&table), Some(key), kind))?;
        }
        Ok(Table {
            parser: self,
            table,
            line,
            raw: keys,
        })
    }

    fn stage(
        &self,
        section: Section,
        name: String,
        mut t: Table<'_>,
    ) -> Result<Pending, ConfigError> {
        let ty = match t.raw.remove("type") {
            None => {
                return Err(t.key_error(
                    "type",
                    None,
                    ConfigErrorKind::MissingKey {
                        hint: Some(format!(
                            "the {} type, one of: {}",
                            section.noun(),
                            type_names(section)
                        )),
                    },
                ))
            }
            Some(v) => match v.get_ref() {
                toml::Value::String(s) => (s.clone(), self.line_of(v.span().start)),
                other => {
                    return Err(t.key_error(
                        "type",
                        Some(self.line_of(v.span().start)),
                        ConfigErrorKind::WrongType {
                            expected: "a string".into(),
                            found: other.type_str().into(),
                        },
                    ))
                }
            },
        };
        let Some(stage_type) = STAGE_TYPES
            .iter()
            .find(|s| s.section == section && s.name == ty.0)
        else {
            return Err(t.key_error(
                "type",
                Some(ty.1),
                ConfigErrorKind::UnknownType {
                    section: section.noun(),
                    found: ty.0,
                    expected: type_names(section),
                },
            ));
        };

        let inputs = match (section, t.raw.remove("inputs")) {
            (Section::Sources, Some(v)) => {
                return Err(t.key_error(
                    "inputs",
                    Some(self.line_of(v.span().start)),
                    ConfigErrorKind::SourceWithInputs,
                ))
            }
            (Section::Sources, None) => Vec::new(),
            (_, inputs) => {
                let line = inputs
                    .as_ref()
                    .map_or(t.line, |v| self.line_of(v.span().start));
                let list = match inputs {
                    None => Vec::new(),
                    Some(v) => t.string_list("inputs", &v)?,
                };
                if list.is_empty() {
                    return Err(t.key_error(
                        "inputs",
                        Some(line),
                        ConfigErrorKind::MissingInputs {
                            section: section.noun(),
                        },
                    ));
                }
                list.into_iter().map(|name| (name, line)).collect()
            }
        };

        t.check_keys(&stage_type.allowed(), stage_type.what)?;
        for (key, hint) in stage_type.required {
            if !t.raw.contains_key(*key) {
                return Err(t.key_error(
                    key,
                    None,
                    ConfigErrorKind::MissingKey {
                        hint: Some((*hint).to_string()),
                    },
                ));
            }
        }
        let mut config = t.deserialize(stage_type.parse)?;
        config.validate().map_err(|e| t.invalid(e))?;
        if let Some(base) = &self.options.base_dir {
            config.resolve_paths(base);
        }
        Ok(Pending {
            name,
            line: t.line,
            config,
            inputs,
        })
    }
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

    /// A setting refused by the stage's `validate()`, at the line of its key (or of the table
    /// when the key is absent).
    fn invalid(&self, e: InvalidSetting) -> ConfigError {
        self.key_error(e.key, self.line_of_key(e.key), e.problem.into())
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

    /// A list of strings.
    fn string_list(&self, key: &str, v: &Spanned<toml::Value>) -> Result<Vec<String>, ConfigError> {
        let expected = "a list of strings, e.g. [\"a\", \"b\"]";
        let line = Some(self.parser.line_of(v.span().start));
        let wrong = |found: String| {
            self.key_error(
                key,
                line,
                ConfigErrorKind::WrongType {
                    expected: expected.to_string(),
                    found,
                },
            )
        };
        let toml::Value::Array(items) = v.get_ref() else {
            return Err(wrong(v.get_ref().type_str().to_string()));
        };
        items
            .iter()
            .map(|item| match item {
                toml::Value::String(s) => Ok(s.clone()),
                other => Err(wrong(format!("a list holding {}", other.type_str()))),
            })
            .collect()
    }

    /// Deserializes the table's keys with `parse`. Each key is first deserialized alone (the
    /// configuration types default every key), so that an error names its key and line.
    fn deserialize<T>(
        &self,
        parse: impl Fn(toml::Value) -> Result<T, toml::de::Error>,
    ) -> Result<T, ConfigError> {
        let table = |keys: &mut dyn Iterator<Item = (&String, &Spanned<toml::Value>)>| {
            toml::Value::Table(
                keys.map(|(k, v)| (k.clone(), v.get_ref().clone()))
                    .collect(),
            )
        };
        let mut keys: Vec<(&String, &Spanned<toml::Value>)> = self.raw.iter().collect();
        keys.sort_by_key(|(_, v)| v.span().start);
        for (key, value) in &keys {
            if let Err(e) = parse(table(&mut std::iter::once((*key, *value)))) {
                return Err(self.key_error(
                    key,
                    Some(self.parser.line_of(value.span().start)),
                    ConfigErrorKind::Value(toml_message(e.message())),
                ));
            }
        }
        parse(table(&mut keys.into_iter()))
            .map_err(|e| self.table_error(ConfigErrorKind::Value(toml_message(e.message()))))
    }
}
