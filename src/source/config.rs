//! The configuration of a file or stdin source: the `[sources.NAME]` table of a pipeline file
//! with `type = "file"` or `type = "stdin"`, and the FILE arguments, `--from` and
//! `--on-error` of `weir import`.

use serde::Deserialize;

use super::follow::{FollowSpec, Resume};
use super::resume::BatchResume;
use super::{expand_inputs, expand_pattern, Compression, Format, Input, SourceConfig, SourceError};
use std::sync::Arc;

use crate::codec::community_id::CommunityId;
use crate::codec::zeek::conn_community_id::ConnCommunityId;
use crate::codec::zeek::schema::ZeekSchemas;
use crate::codec::ReaderOptions;
use crate::error::OnError;
use crate::setting::{de_size, InvalidSetting, Problem};

/// A source of Zeek logs: files and globs read in order, or stdin.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FileSourceConfig {
    /// What is read, in order: files or glob patterns (a pattern naming an existing file is
    /// that file; the matches of one pattern are read in alphabetical order), `-` for stdin.
    #[serde(deserialize_with = "de_paths")]
    pub paths: Vec<String>,
    /// The event format.
    pub format: Format,
    /// How the inputs are compressed.
    pub decompress: Compression,
    /// What to do with a row that does not parse.
    pub on_error: OnError,
    /// Schema name of Zeek JSON lines without `_path` that no Zeek log schema types.
    pub json_schema: String,
    /// The Zeek log schema of JSON lines without `_path` (`"zeek.conn"`), instead of the
    /// one named by each input's file name (`--schema`).
    pub schema: Option<String>,
    /// A directory of more Zeek log schema files (`*.toml`, see
    /// [`crate::codec::zeek::schema`]), added to the shipped ones (`--schema-dir`).
    pub schema_dir: Option<std::path::PathBuf>,
    /// Longest accepted line in bytes: a longer one is an error, never unbounded memory.
    #[serde(deserialize_with = "de_size")]
    pub max_line_length: u64,
    /// Follow the files like `tail -F`, exactly once across restarts (see
    /// [`crate::source::follow`]): the source runs until shutdown.
    pub follow: bool,
    /// Read every file whole, also one that this archive holds (wholly or in part) from an
    /// earlier import (`weir import --again`); without it, a file imported before is skipped
    /// or read on from where it stopped (see [`crate::source::resume`]).
    pub again: bool,
    /// With `follow`: where a file without a checkpoint starts (`"start"`, `"end"`; default:
    /// from the checkpoints, refused when the archive's checkpoints are lost; see
    /// [`crate::checkpoint::StartFrom`]).
    pub from: crate::checkpoint::StartFrom,
    /// Community ID of `zeek.conn` events that lack it: computed with this seed (default 0)
    /// or `"off"` (`--community-id`; see [`crate::codec::zeek::conn_community_id`]).
    pub community_id: CommunityId,
    /// Do not record column ranges for sketches ([`ReaderOptions::column_stats`]): set by
    /// `weir import --no-sketches`; not a key of the pipeline file.
    #[serde(skip)]
    pub no_column_stats: bool,
}

impl Default for FileSourceConfig {
    /// Stdin, everything else at the readers' defaults (their constants: the shipped Zeek
    /// schemas, which `ReaderOptions::default` parses, are not needed to print `weir --help`).
    fn default() -> FileSourceConfig {
        FileSourceConfig {
            paths: vec![Self::STDIN.to_string()],
            format: Format::default(),
            decompress: Compression::default(),
            on_error: ReaderOptions::DEFAULT_ON_ERROR,
            json_schema: ReaderOptions::DEFAULT_JSON_SCHEMA.to_string(),
            schema: None,
            schema_dir: None,
            max_line_length: ReaderOptions::DEFAULT_MAX_LINE_LEN as u64,
            follow: false,
            again: false,
            from: crate::checkpoint::StartFrom::default(),
            community_id: CommunityId::DEFAULT,
            no_column_stats: !ReaderOptions::DEFAULT_COLUMN_STATS,
        }
    }
}

impl FileSourceConfig {
    /// The entry of `paths` that reads standard input.
    pub const STDIN: &'static str = "-";

    /// A source reading `paths` (stdin when empty) with every other setting at its default.
    pub fn new<S: Into<String>>(paths: impl IntoIterator<Item = S>) -> FileSourceConfig {
        let paths: Vec<String> = paths.into_iter().map(Into::into).collect();
        FileSourceConfig {
            paths: if paths.is_empty() {
                vec![Self::STDIN.to_string()]
            } else {
                paths
            },
            ..FileSourceConfig::default()
        }
    }

    /// Whether this source reads only stdin.
    pub fn is_stdin(&self) -> bool {
        self.paths.iter().all(|p| p == Self::STDIN)
    }

    /// Checks the settings: the one check of each limit.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.paths.is_empty() {
            return Err(InvalidSetting {
                key: "paths",
                problem: Problem::Missing {
                    hint: "the list is empty".into(),
                },
            });
        }
        for p in &self.paths {
            if crate::object::is_url(p) && self.follow {
                return Err(InvalidSetting {
                    key: "follow",
                    problem: Problem::OutOfRange {
                        value: "true".into(),
                        reason: format!(
                            "{p}: objects of object storage cannot be followed; import them \
                             once (a new object is read by a new import)"
                        ),
                    },
                });
            }
            if p == Self::STDIN && self.follow {
                return Err(InvalidSetting {
                    key: "follow",
                    problem: Problem::OutOfRange {
                        value: "true".into(),
                        reason: "stdin (\"-\") cannot be followed; name files or glob patterns"
                            .into(),
                    },
                });
            }
            if p != Self::STDIN {
                if let Err(e) = glob::Pattern::new(p) {
                    return Err(InvalidSetting {
                        key: "paths",
                        problem: Problem::BadGlob {
                            pattern: p.clone(),
                            reason: e.msg.to_string(),
                        },
                    });
                }
            }
        }
        if self.again && self.follow {
            return Err(InvalidSetting {
                key: "again",
                problem: Problem::OutOfRange {
                    value: "true".into(),
                    reason:
                        "a followed source resumes where it stopped; `again` is for files read once"
                            .into(),
                },
            });
        }
        InvalidSetting::at_least_one("max_line_length", self.max_line_length)?;
        self.zeek_schemas().map(|_| ())
    }

    /// The Zeek log schemas of this source: the shipped ones and those of `schema_dir`;
    /// refuses an unreadable or invalid schema file and a `schema` that names none of them.
    pub fn zeek_schemas(&self) -> Result<Arc<ZeekSchemas>, InvalidSetting> {
        let schemas =
            ZeekSchemas::load(self.schema_dir.as_deref()).map_err(|e| InvalidSetting {
                key: "schema_dir",
                problem: Problem::Invalid(e.to_string()),
            })?;
        if let Some(name) = &self.schema {
            if schemas.by_name(name).is_none() {
                return Err(InvalidSetting {
                    key: "schema",
                    problem: Problem::Invalid(format!(
                        "no Zeek log schema is named {name:?}; known: {}",
                        schemas.names().join(", ")
                    )),
                });
            }
        }
        Ok(schemas)
    }

    /// The inputs, in order: globs expanded now (a pattern matching nothing is an error,
    /// except for a followed source, whose files may appear later).
    pub fn inputs(&self) -> Result<Vec<Input>, SourceError> {
        if !self.follow {
            return expand_inputs(&self.paths);
        }
        let mut out = Vec::new();
        for p in &self.paths {
            match expand_pattern(p) {
                Ok(paths) => out.extend(paths.into_iter().map(Input::Path)),
                Err(SourceError::NoMatch { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The source stage's runtime settings: the readers named `name` in errors, cutting
    /// batches of `batch_rows` events, each input decoded ahead into a channel of
    /// `channel_capacity` bytes.
    ///
    /// Fails as [`Self::validate`] does when the schema files cannot be used.
    pub fn build(
        &self,
        name: &str,
        batch_rows: usize,
        channel_capacity: usize,
    ) -> Result<SourceConfig, InvalidSetting> {
        let reader = ReaderOptions {
            source_name: name.to_string(),
            max_line_len: usize::try_from(self.max_line_length).unwrap_or(usize::MAX),
            batch_rows,
            on_error: self.on_error,
            json_default_schema: self.json_schema.clone(),
            zeek_schemas: Some(self.zeek_schemas()?),
            json_schema: self.schema.clone(),
            column_stats: !self.no_column_stats,
            // Decided by what the source feeds (see `PipelineSpec::stores_columns`).
            columns: false,
            detect_eve: false,
        };
        let mut config = SourceConfig::zeek(reader, channel_capacity);
        config.compression = self.decompress;
        config.format = self.format;
        config.follow = self.follow.then(|| FollowSpec {
            patterns: self.paths.clone(),
            resume: Resume::default(),
            start: self.from,
        });
        config.resume = (!self.follow).then(|| BatchResume::new(self.again));
        config.community_id = self
            .community_id
            .seed()
            .map(|seed| Arc::new(ConnCommunityId::new(seed)));
        Ok(config)
    }
}

/// `paths`: a list of strings.
fn de_paths<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    use serde::de::{Error, SeqAccess, Visitor};
    struct V;
    const EXPECTED: &str = "a list of strings, e.g. [\"a\", \"b\"]";
    impl<'de> Visitor<'de> for V {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(EXPECTED)
        }
        fn visit_str<E: Error>(self, _: &str) -> Result<Vec<String>, E> {
            Err(E::custom(format!("expected {EXPECTED}, found string")))
        }
        fn visit_i64<E: Error>(self, _: i64) -> Result<Vec<String>, E> {
            Err(E::custom(format!("expected {EXPECTED}, found integer")))
        }
        fn visit_bool<E: Error>(self, _: bool) -> Result<Vec<String>, E> {
            Err(E::custom(format!("expected {EXPECTED}, found boolean")))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
            let mut out = Vec::new();
            while let Some(item) = seq.next_element::<toml::Value>()? {
                match item {
                    toml::Value::String(s) => out.push(s),
                    other => {
                        return Err(A::Error::custom(format!(
                            "expected {EXPECTED}, found a list holding {}",
                            other.type_str()
                        )))
                    }
                }
            }
            Ok(out)
        }
    }
    d.deserialize_any(V)
}
