//! Zeek log schemas: the field names and types of Zeek's logs, which type Zeek's JSON logs.
//!
//! Zeek's JSON logs carry no types: a port is a number, an enum a string, an interval a
//! number of seconds, an address a string. A schema file names a log's fields and their Zeek
//! types, and the JSON reader ([`crate::codec::zeek::json`]) reads every line of that log in
//! it. weir ships schemas for Zeek's common logs, written from Zeek's documentation of each
//! log's `Info` record (the files in `schemas/zeek/` of the source tree, embedded in the
//! binary); more can be added, or the shipped ones replaced, with a directory of schema files
//! (`--schema-dir DIR`, `schema_dir` of a source).
//!
//! # File format (version 1)
//!
//! One TOML file per log, named anything ending in `.toml` (by convention `<path>.toml`):
//!
//! ```toml
//! # Zeek's conn.log
//! format = 1                     # the format version: 1
//! path = "conn"                  # the log's Zeek path; the schema is named "zeek.conn"
//! fields = [                     # every logged field, in Zeek's order
//!   ["ts",        "time"],       # [name, type]: the dotted name as in the log
//!   ["id.orig_h", "addr"],
//!   ["id.orig_p", "port"],
//!   ["tunnel_parents", "set[string]"],
//! ]
//! ```
//!
//! - `format` (required) must be `1`; a file of another version is refused, naming it.
//! - `path` (required): non-empty, without `/`. A file in a schema directory with the path
//!   of a shipped schema replaces it; two files of one directory with the same path are an
//!   error.
//! - `fields` (required, non-empty): `[name, type]` pairs. Names are unique; types are
//!   Zeek's type names as in a TSV `#types` line: `bool`, `count`, `int`, `double`, `time`,
//!   `interval`, `string`, `addr`, `subnet`, `port`, `enum`, `pattern`, `file`, and
//!   `set[T]`, `vector[T]`, `table[T]` of those.
//! - No other keys. Every error names the file and, where TOML knows it, the line.
//!
//! # Which schema a JSON line gets
//!
//! The line's `_path` names the log (`"_path":"conn"` is `zeek.conn`); a line without one
//! takes the schema given to the source (`--schema zeek.conn`, `schema = "zeek.conn"`), else
//! the one named by its input's file name: the part before the first `.` (`conn.log`,
//! `conn.json`, `conn.2024-01-01-00-00-00.log.gz` and `/logs/current/conn.log` are all
//! `conn`). A log without a schema is read by type inference, as before. See
//! [`crate::codec::zeek::json`] for how lines map onto a schema.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde::Deserialize;

use crate::types::{Field, Schema, SchemaRef, Type};

/// What a JSON number means in a log without a schema, by its field's name (Zeek's field
/// conventions): see [`number_kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberKind {
    /// No convention: inferred from the number alone (`count`, `int`, `double`).
    Plain,
    /// Epoch seconds: `time`.
    Time,
    /// A port number: `port` when an integer from 0 to 65535.
    Port,
    /// Seconds: `interval`.
    Interval,
}

/// What a number in a field named `name` of a log without a schema is (the JSON reader's type
/// inference, [`crate::codec::zeek::json`]), by Zeek's field conventions:
///
/// - `time`: `ts`, and names ending in `_ts` or `.ts`;
/// - `port`: a name that is a `port` (or a container of ports) in every shipped schema that
///   has it (`id.orig_p`, `id.resp_p`, `p`, `host_p`, `port_num`, ...), and any name ending in
///   `_p` (Zeek's suffix for ports: `orig_p`, `resp_p`);
/// - `interval`: a name that is an `interval` (or a container of intervals) in every shipped
///   schema that has it (`duration`, `rtt`, `suppress_for`, `lease_time`, `TTLs`, ...).
///
/// So a log typed by inference gives a field the type the same field has in a log with a
/// schema, and a lake holds one type per field name (see [`crate::codec::arrow::lake`]).
pub fn number_kind(name: &[u8]) -> NumberKind {
    if name == b"ts" || name.ends_with(b"_ts") || name.ends_with(b".ts") {
        return NumberKind::Time;
    }
    static BY_NAME: OnceLock<HashMap<Vec<u8>, NumberKind>> = OnceLock::new();
    let table = BY_NAME.get_or_init(|| {
        // name -> its kind, or Plain once two shipped schemas disagree.
        let mut table: HashMap<Vec<u8>, NumberKind> = HashMap::new();
        let Ok(shipped) = ZeekSchemas::builtin() else {
            return table;
        };
        for log in shipped.by_path.values() {
            for f in &log.schema.fields {
                let kind = match f.ty.element().unwrap_or(&f.ty) {
                    Type::Port => NumberKind::Port,
                    Type::Interval => NumberKind::Interval,
                    _ => NumberKind::Plain,
                };
                let e = table.entry(f.name.as_bytes().to_vec()).or_insert(kind);
                if *e != kind {
                    *e = NumberKind::Plain;
                }
            }
        }
        table.retain(|_, k| *k != NumberKind::Plain);
        table
    });
    match table.get(name) {
        Some(k) => *k,
        None if name.ends_with(b"_p") => NumberKind::Port,
        None => NumberKind::Plain,
    }
}

/// The schema file format this weir reads.
pub const FORMAT_VERSION: u32 = 1;

/// The shipped schema files, embedded: (file name, text).
const BUILTIN: &[(&str, &str)] = &[
    (
        "capture_loss.toml",
        include_str!("../../../schemas/zeek/capture_loss.toml"),
    ),
    ("conn.toml", include_str!("../../../schemas/zeek/conn.toml")),
    ("dhcp.toml", include_str!("../../../schemas/zeek/dhcp.toml")),
    ("dns.toml", include_str!("../../../schemas/zeek/dns.toml")),
    ("dpd.toml", include_str!("../../../schemas/zeek/dpd.toml")),
    (
        "files.toml",
        include_str!("../../../schemas/zeek/files.toml"),
    ),
    ("ftp.toml", include_str!("../../../schemas/zeek/ftp.toml")),
    ("http.toml", include_str!("../../../schemas/zeek/http.toml")),
    (
        "known_services.toml",
        include_str!("../../../schemas/zeek/known_services.toml"),
    ),
    (
        "notice.toml",
        include_str!("../../../schemas/zeek/notice.toml"),
    ),
    ("ntp.toml", include_str!("../../../schemas/zeek/ntp.toml")),
    ("smtp.toml", include_str!("../../../schemas/zeek/smtp.toml")),
    (
        "software.toml",
        include_str!("../../../schemas/zeek/software.toml"),
    ),
    ("ssh.toml", include_str!("../../../schemas/zeek/ssh.toml")),
    ("ssl.toml", include_str!("../../../schemas/zeek/ssl.toml")),
    (
        "stats.toml",
        include_str!("../../../schemas/zeek/stats.toml"),
    ),
    (
        "tunnel.toml",
        include_str!("../../../schemas/zeek/tunnel.toml"),
    ),
    (
        "weird.toml",
        include_str!("../../../schemas/zeek/weird.toml"),
    ),
    ("x509.toml", include_str!("../../../schemas/zeek/x509.toml")),
];

/// A schema file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct SchemaFileError {
    /// The file (or directory).
    pub file: String,
    /// What is wrong, with the line where known.
    pub message: String,
}

/// One log's schema, with its fields indexed by name.
#[derive(Debug)]
pub struct LogSchema {
    schema: SchemaRef,
    index: HashMap<String, usize>,
}

impl LogSchema {
    /// The schema (`zeek.<path>`, the fields in file order).
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The column of the field named `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }
}

/// The schemas known to a reader, by Zeek path.
#[derive(Debug, Clone, Default)]
pub struct ZeekSchemas {
    by_path: HashMap<String, Arc<LogSchema>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileText {
    format: u32,
    path: String,
    fields: Vec<(String, String)>,
}

impl ZeekSchemas {
    /// The shipped schemas (parsed once per process).
    pub fn builtin() -> Result<Arc<ZeekSchemas>, SchemaFileError> {
        static BUILT: OnceLock<Result<Arc<ZeekSchemas>, SchemaFileError>> = OnceLock::new();
        BUILT
            .get_or_init(|| {
                let mut s = ZeekSchemas::default();
                for (name, text) in BUILTIN {
                    let log = parse(text, &format!("schemas/zeek/{name}"))?;
                    s.insert(log);
                }
                Ok(Arc::new(s))
            })
            .clone()
    }

    /// The shipped schemas, plus (replacing shipped ones of the same path) every `*.toml`
    /// file of `dir` when given.
    pub fn load(dir: Option<&Path>) -> Result<Arc<ZeekSchemas>, SchemaFileError> {
        let builtin = ZeekSchemas::builtin()?;
        let Some(dir) = dir else {
            return Ok(builtin);
        };
        let shown = dir.display().to_string();
        let err = |file: &str, message: String| SchemaFileError {
            file: file.to_string(),
            message,
        };
        let entries = std::fs::read_dir(dir)
            .map_err(|e| err(&shown, format!("cannot read the schema directory: {e}")))?;
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| err(&shown, format!("cannot list: {e}")))?;
            let p = entry.path();
            if p.extension().is_some_and(|x| x == "toml") {
                files.push(p);
            }
        }
        files.sort();
        let mut out = (*builtin).clone();
        let mut seen: HashMap<String, String> = HashMap::new();
        for p in files {
            let file = p.display().to_string();
            let text =
                std::fs::read_to_string(&p).map_err(|e| err(&file, format!("cannot read: {e}")))?;
            let log = parse(&text, &file)?;
            let path = log.schema.path().to_string();
            if let Some(other) = seen.insert(path.clone(), file.clone()) {
                return Err(err(
                    &file,
                    format!("path {path:?} is already defined by {other}"),
                ));
            }
            out.insert(log);
        }
        Ok(Arc::new(out))
    }

    fn insert(&mut self, log: LogSchema) {
        self.by_path
            .insert(log.schema.path().to_string(), Arc::new(log));
    }

    /// The schema of the log with Zeek path `path` (`conn`).
    pub fn get(&self, path: &str) -> Option<&Arc<LogSchema>> {
        self.by_path.get(path)
    }

    /// The schema named `name` (`zeek.conn`).
    pub fn by_name(&self, name: &str) -> Option<&Arc<LogSchema>> {
        self.get(name.strip_prefix("zeek.")?)
    }

    /// The names of all schemas (`zeek.conn`, ...), sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .by_path
            .values()
            .map(|l| l.schema.name.clone())
            .collect();
        v.sort();
        v
    }

    /// The schema for an input without `_path`, by its file name: the part of the last path
    /// component before its first `.` (`/logs/conn.2024-01-01-00-00-00.log.gz` is `conn`).
    pub fn for_file_name(&self, source_name: &str) -> Option<&Arc<LogSchema>> {
        let base = source_name.rsplit('/').next()?;
        let stem = base.split('.').next()?;
        if stem.is_empty() {
            return None;
        }
        self.get(stem)
    }
}

/// Parses one schema file's text; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<LogSchema, SchemaFileError> {
    let err = |message: String| SchemaFileError {
        file: file.to_string(),
        message,
    };
    let raw: FileText = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
        let what = e.message().trim().to_string();
        match line {
            Some(l) => err(format!("line {l}: {what}")),
            None => err(what),
        }
    })?;
    if raw.format != FORMAT_VERSION {
        return Err(err(format!(
            "format {} is not supported; this weir reads format {FORMAT_VERSION}",
            raw.format
        )));
    }
    if raw.path.is_empty() || raw.path.contains('/') {
        return Err(err(format!(
            "path {:?}: expected a Zeek log path such as \"conn\"",
            raw.path
        )));
    }
    if raw.fields.is_empty() {
        return Err(err("fields: the list is empty".into()));
    }
    let mut index = HashMap::with_capacity(raw.fields.len());
    let mut fields = Vec::with_capacity(raw.fields.len());
    for (i, (name, ty)) in raw.fields.into_iter().enumerate() {
        let Some(t) = Type::parse(&ty) else {
            return Err(err(format!("field {name:?}: unknown type {ty:?}")));
        };
        if name.is_empty() {
            return Err(err(format!("field {}: empty name", i + 1)));
        }
        if index.insert(name.clone(), i).is_some() {
            return Err(err(format!("field {name:?} is listed twice")));
        }
        fields.push(Field::new(name, t));
    }
    Ok(LogSchema {
        schema: Schema::new(format!("zeek.{}", raw.path), fields).into_shared(),
        index,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_schema_parses_and_has_a_ts() {
        let s = ZeekSchemas::builtin().unwrap();
        assert_eq!(s.names().len(), BUILTIN.len());
        for name in s.names() {
            let log = s.by_name(&name).unwrap();
            assert_eq!(log.schema().ts_index(), Some(0), "{name}: ts first, a time");
        }
        let conn = s.get("conn").unwrap();
        assert_eq!(conn.position("id.resp_p"), Some(5));
        assert_eq!(conn.schema().fields[5].ty, Type::Port);
    }

    #[test]
    fn file_names_pick_schemas() {
        let s = ZeekSchemas::builtin().unwrap();
        for name in [
            "conn.log",
            "conn.json",
            "conn.2024-01-01-00-00-00.log.gz",
            "/var/log/zeek/current/conn.log",
            "conn",
        ] {
            assert_eq!(
                s.for_file_name(name).map(|l| l.schema().name.as_str()),
                Some("zeek.conn"),
                "{name}"
            );
        }
        for name in ["<stdin>", "events.json", ".conn", "logs/"] {
            assert!(s.for_file_name(name).is_none(), "{name}");
        }
    }

    #[test]
    fn bad_files_are_refused_with_file_and_reason() {
        let e = |text: &str| parse(text, "x.toml").unwrap_err().to_string();
        assert_eq!(
            e("format = 2\npath = \"a\"\nfields = [[\"ts\", \"time\"]]"),
            "x.toml: format 2 is not supported; this weir reads format 1"
        );
        assert_eq!(
            e("format = 1\npath = \"a\"\nfields = [[\"ts\", \"tiem\"]]"),
            "x.toml: field \"ts\": unknown type \"tiem\""
        );
        assert_eq!(
            e("format = 1\npath = \"a\"\nfields = [[\"a\", \"count\"], [\"a\", \"time\"]]"),
            "x.toml: field \"a\" is listed twice"
        );
        assert_eq!(
            e("format = 1\npath = \"a\"\nfields = []"),
            "x.toml: fields: the list is empty"
        );
        assert!(e("format = 1\npath = \"a\"\nfields = [[\"a\"]]\n").starts_with("x.toml: line 3:"));
        assert!(e("format = 1\npath = \"a\"\nfield = []\n").contains("unknown field"));
        assert!(e("format = 1\npath = \"a/b\"\nfields = [[\"a\", \"count\"]]\n").contains("path"));
    }
}
