//! Concepts and models (VAST 2021's taxonomies): names that stand for fields across schemas,
//! so that one question asks Zeek and Suricata alike.
//!
//! A **concept** (`net.src.ip`) names a set of fields: `id.orig_h` in Zeek's logs, `src_ip`
//! in Suricata's. In an expression, `net.src.ip == 10.0.0.1` means, in each schema, the
//! disjunction over every field of the concept the schema has with a type the comparison
//! suits (`id.orig_h == 10.0.0.1` in `zeek.conn`, `src_ip == 10.0.0.1` in `suricata.alert`);
//! a schema with none of them has no match. The expansion happens when the expression is
//! bound to a schema (`query::bind`), so the catalog, sketches and dictionaries prune a
//! concept as they prune its fields. In the operators (`top net.dst.port`, `summarize count()
//! by net.src.ip`, `sort`, `select net.src.ip`), a concept reads, per schema, the first of its
//! fields (in the order listed) that the schema has; `select` names the column by the
//! concept. A concept's name takes precedence over a field of the same name.
//!
//! **Negation.** `net.src.ip != 10.0.0.1` is the negation of the positive disjunction: in a
//! schema with several fields of the concept, none of them may equal the value (VAST's code
//! writes a disjunction of `!=`, which is not the negation when a schema has two fields of
//! the concept). weir pushes `!` into its predicates (`!(x == 1)` is `x != 1`), so the two
//! spellings must mean the same thing, and they do. As for a plain field, an unset value and
//! a schema without any field of the concept never match, `!=` included.
//!
//! A **model** (`net.connection`) is an ordered list of concepts, compared with a record
//! literal: `net.connection == <192.168.168.100, _, 72.247.178.18, _, _>` (by position, one
//! value per concept) or `<net.src.ip: 192.168.168.100, net.dst.port: 80>` (by concept name;
//! the concepts not named are `_`). A value restricts its concept (`concept == value`); `_`,
//! and a concept not named, means the schema has a field of the concept (`#field ==
//! "net.src.port"`). `==` is the conjunction of all of them; `!=`, as VAST defines it, keeps
//! the `_` conditions and negates the conjunction of the values: `net.connection != <a, _, b,
//! _, _>` is `#field == "net.src.port" && #field == "net.dst.port" && #field == "net.proto"
//! && !(net.src.ip == a && net.dst.ip == b)`.
//!
//! # The file format (format 1)
//!
//! The shipped table is `schemas/concepts.toml` (in the binary); a user's file in the same
//! format (`weir --concepts FILE`, or `WEIR_CONCEPTS`) extends it.
//!
//! ```toml
//! format = 1
//!
//! [concepts."net.src.ip"]
//! description = "the address of the host that opened the connection"
//! fields = ["id.orig_h", "src_ip", "zeek.notice.src"]
//! concepts = []          # optional: other concepts whose fields this one includes
//! replace = false        # optional, a user file only: true replaces the shipped concept
//!
//! [models."net.connection"]
//! description = "a connection by its 5-tuple"
//! definition = ["net.src.ip", "net.src.port", "net.dst.ip", "net.dst.port", "net.proto"]
//! ```
//!
//! A field entry is `FIELD`, the field of exactly that full name in any schema (`src_ip`, not
//! `flow.src_ip`), or `SCHEMA.FIELD`, that field of that schema only (`zeek.dns.query`).
//! Concept and model names are letters, digits and `_ - .`, starting with a letter. A user's
//! concept of a shipped name adds its fields after the shipped ones (`replace = true`:
//! instead of them); a user's model replaces the shipped one. A model's definition lists
//! concepts only; a concept's `concepts` may refer to each other (cycles are harmless).
//! Unknown keys, an unknown format, a model naming an unknown concept and an empty concept
//! are errors naming the file and the line or the name.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock, RwLock};

use crate::types::Schema;

/// The format number this weir reads.
pub const CONCEPTS_FORMAT: u32 = 1;

/// The shipped table.
const SHIPPED: &str = include_str!("../../schemas/concepts.toml");

/// A concepts file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ConceptsError {
    /// The file.
    pub file: String,
    /// What is wrong, with the line or the name where known.
    pub message: String,
}

/// One concept: the fields it names, directly and through other concepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Concept {
    /// What it means.
    pub description: String,
    /// Its field entries (`FIELD` or `SCHEMA.FIELD`), in order, with those of the concepts
    /// it includes after its own.
    pub fields: Vec<String>,
}

/// One model: concepts in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    /// What it means.
    pub description: String,
    /// Its concepts, in order.
    pub definition: Vec<String>,
}

/// A table of concepts and models.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Concepts {
    concepts: BTreeMap<String, Concept>,
    models: BTreeMap<String, Model>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileText {
    format: u32,
    #[serde(default)]
    concepts: BTreeMap<String, ConceptText>,
    #[serde(default)]
    models: BTreeMap<String, ModelText>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ConceptText {
    #[serde(default)]
    description: String,
    #[serde(default)]
    fields: Vec<String>,
    #[serde(default)]
    concepts: Vec<String>,
    #[serde(default)]
    replace: bool,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelText {
    #[serde(default)]
    description: String,
    definition: Vec<String>,
}

/// Whether `name` is a valid concept or model name.
fn valid_name(name: &str) -> bool {
    name.bytes().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
        && !name.ends_with('.')
        && !name.contains("..")
}

/// A table as read, before included concepts are resolved.
struct Raw {
    concepts: BTreeMap<String, (ConceptText, bool)>,
    models: BTreeMap<String, ModelText>,
}

fn read(text: &str, file: &str) -> Result<Raw, ConceptsError> {
    let err = |message: String| ConceptsError {
        file: file.to_string(),
        message,
    };
    let raw: FileText = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text.get(..s.start).unwrap_or(text).matches('\n').count() + 1);
        let what = e.message().trim().to_string();
        match line {
            Some(l) => err(format!("line {l}: {what}")),
            None => err(what),
        }
    })?;
    if raw.format != CONCEPTS_FORMAT {
        return Err(err(format!(
            "format {} is not supported; this weir reads format {CONCEPTS_FORMAT}",
            raw.format
        )));
    }
    for (name, c) in &raw.concepts {
        if !valid_name(name) {
            return Err(err(format!(
                "concept {name:?}: a name is letters, digits, _ - and ., starting with a letter"
            )));
        }
        if c.fields.is_empty() && c.concepts.is_empty() {
            return Err(err(format!("concept {name:?}: no fields and no concepts")));
        }
        if let Some(f) = c.fields.iter().find(|f| f.is_empty()) {
            return Err(err(format!("concept {name:?}: empty field name {f:?}")));
        }
    }
    for (name, m) in &raw.models {
        if !valid_name(name) {
            return Err(err(format!(
                "model {name:?}: a name is letters, digits, _ - and ., starting with a letter"
            )));
        }
        if m.definition.is_empty() {
            return Err(err(format!("model {name:?}: the definition is empty")));
        }
    }
    Ok(Raw {
        concepts: raw
            .concepts
            .into_iter()
            .map(|(n, c)| {
                let replace = c.replace;
                (n, (c, replace))
            })
            .collect(),
        models: raw.models,
    })
}

impl Concepts {
    /// The shipped table (`schemas/concepts.toml`).
    pub fn shipped() -> Arc<Concepts> {
        static SHIPPED_TABLE: OnceLock<Arc<Concepts>> = OnceLock::new();
        SHIPPED_TABLE
            .get_or_init(|| match Concepts::parse(SHIPPED, "schemas/concepts.toml") {
                Ok(c) => Arc::new(c),
                Err(e) => {
                    // A unit test parses the shipped table: this is a build that broke it.
                    tracing::error!("the shipped concepts do not load: {e}");
                    Arc::new(Concepts::default())
                }
            })
            .clone()
    }

    /// The table of one file's text alone; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Concepts, ConceptsError> {
        Concepts::default().extended(text, file)
    }

    /// The shipped table extended by the concepts file at `path`.
    pub fn load(path: &Path) -> Result<Concepts, ConceptsError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConceptsError {
            file: file.clone(),
            message: format!("cannot read it: {e}"),
        })?;
        (*Concepts::shipped()).clone().extended(&text, &file)
    }

    /// This table extended by a file's text (see the module docs for the rules).
    pub fn extended(self, text: &str, file: &str) -> Result<Concepts, ConceptsError> {
        let user = read(text, file)?;
        // Start from the resolved table: each existing concept's fields are already
        // flattened, which is what including it means.
        let mut own: BTreeMap<String, (String, Vec<String>, Vec<String>)> = self
            .concepts
            .into_iter()
            .map(|(n, c)| (n, (c.description, c.fields, Vec::new())))
            .collect();
        for (name, (c, replace)) in user.concepts {
            let entry = own
                .entry(name)
                .or_insert_with(|| (String::new(), Vec::new(), Vec::new()));
            if replace {
                *entry = (String::new(), Vec::new(), Vec::new());
            }
            if !c.description.is_empty() {
                entry.0 = c.description;
            }
            for f in c.fields {
                if !entry.1.contains(&f) {
                    entry.1.push(f);
                }
            }
            entry.2.extend(c.concepts);
        }
        // Included concepts, breadth first, each once (cycles are harmless).
        let mut concepts = BTreeMap::new();
        for (name, (description, fields, includes)) in &own {
            let mut out = fields.clone();
            let mut seen: Vec<&str> = vec![name.as_str()];
            let mut queue: Vec<&str> = includes.iter().map(String::as_str).collect();
            let mut i = 0;
            while let Some(&next) = queue.get(i) {
                i += 1;
                if seen.contains(&next) {
                    continue;
                }
                seen.push(next);
                let Some((_, f, inc)) = own.get(next) else {
                    return Err(ConceptsError {
                        file: file.to_string(),
                        message: format!("concept {name:?} includes {next:?}, which is no concept"),
                    });
                };
                for x in f {
                    if !out.contains(x) {
                        out.push(x.clone());
                    }
                }
                queue.extend(inc.iter().map(String::as_str));
            }
            concepts.insert(
                name.clone(),
                Concept {
                    description: description.clone(),
                    fields: out,
                },
            );
        }
        let mut models = self.models;
        for (name, m) in user.models {
            models.insert(
                name,
                Model {
                    description: m.description,
                    definition: m.definition,
                },
            );
        }
        for (name, m) in &models {
            if let Some(c) = m.definition.iter().find(|c| !concepts.contains_key(*c)) {
                return Err(ConceptsError {
                    file: file.to_string(),
                    message: format!("model {name:?} lists {c:?}, which is no concept"),
                });
            }
        }
        Ok(Concepts { concepts, models })
    }

    /// The concept named `name`.
    pub fn concept(&self, name: &str) -> Option<&Concept> {
        self.concepts.get(name)
    }

    /// The model named `name`.
    pub fn model(&self, name: &str) -> Option<&Model> {
        self.models.get(name)
    }

    /// Every concept, by name.
    pub fn concepts(&self) -> impl Iterator<Item = (&str, &Concept)> {
        self.concepts.iter().map(|(n, c)| (n.as_str(), c))
    }

    /// Every model, by name.
    pub fn models(&self) -> impl Iterator<Item = (&str, &Model)> {
        self.models.iter().map(|(n, m)| (n.as_str(), m))
    }

    /// The fields of `schema` that the concept `name` names, in the order of its entries
    /// (each once); `None` when `name` is no concept.
    pub fn fields_in(&self, name: &str, schema: &Schema) -> Option<Vec<usize>> {
        let c = self.concepts.get(name)?;
        let mut out = Vec::new();
        for entry in &c.fields {
            for (i, f) in schema.fields.iter().enumerate() {
                if entry_names(schema, &f.name, entry) && !out.contains(&i) {
                    out.push(i);
                }
            }
        }
        Some(out)
    }
}

/// Whether the concept entry `entry` names field `field` of `schema`: the field's full name,
/// or the schema's name, a dot and the field's full name.
pub fn entry_names(schema: &Schema, field: &str, entry: &str) -> bool {
    entry == field
        || (entry.len() == schema.name.len() + 1 + field.len()
            && entry.starts_with(schema.name.as_str())
            && entry.as_bytes()[schema.name.len()] == b'.'
            && entry.ends_with(field))
}

/// The table in force in this process.
static ACTIVE: RwLock<Option<Arc<Concepts>>> = RwLock::new(None);

/// The table queries use: the one [`install`]ed, else the shipped one.
pub fn active() -> Arc<Concepts> {
    let installed = ACTIVE.read().ok().and_then(|g| g.clone());
    installed.unwrap_or_else(Concepts::shipped)
}

/// Makes `concepts` the table every query of this process uses from now on (queries already
/// parsed keep their models' expansion; their concepts resolve anew when bound). `weir
/// --concepts FILE` installs the shipped table extended by the file, once, at start.
pub fn install(concepts: Concepts) {
    if let Ok(mut g) = ACTIVE.write() {
        *g = Some(Arc::new(concepts));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Field, Type};

    #[test]
    fn the_shipped_table_loads_with_the_required_concepts() {
        let c = Concepts::parse(SHIPPED, "shipped").unwrap();
        for name in [
            "net.src.ip",
            "net.src.port",
            "net.dst.ip",
            "net.dst.port",
            "net.proto",
            "net.app",
            "net.community_id",
            "net.domain",
            "net.url",
            "net.user_agent",
            "net.bytes_in",
            "net.bytes_out",
            "net.packets",
            "net.duration",
            "file.hash.md5",
            "file.hash.sha1",
            "file.hash.sha256",
        ] {
            assert!(c.concept(name).is_some(), "{name}");
        }
        let m = c.model("net.connection").unwrap();
        assert_eq!(m.definition.len(), 5);
        assert_eq!(*Concepts::shipped(), c);
    }

    #[test]
    fn entries_name_exact_fields_or_schema_qualified_ones() {
        let s = Schema::new(
            "suricata.alert",
            vec![
                Field::new("src_ip", Type::Addr),
                Field::new("flow.src_ip", Type::Addr),
            ],
        );
        assert!(entry_names(&s, "src_ip", "src_ip"));
        assert!(!entry_names(&s, "flow.src_ip", "src_ip"));
        assert!(entry_names(&s, "flow.src_ip", "suricata.alert.flow.src_ip"));
        assert!(!entry_names(&s, "flow.src_ip", "alert.flow.src_ip"));
        assert!(!entry_names(&s, "src_ip", "suricata.alertXsrc_ip"));
        let c = Concepts::shipped();
        assert_eq!(c.fields_in("net.src.ip", &s), Some(vec![0]));
        assert_eq!(c.fields_in("src_ip", &s), None);
    }

    #[test]
    fn a_user_file_extends_replaces_and_includes() {
        let base = Concepts::parse(
            "format = 1\n[concepts.a]\nfields = [\"x\"]\n[concepts.b]\nfields = [\"y\"]\n",
            "base",
        )
        .unwrap();
        let c = base
            .extended(
                "format = 1\n[concepts.a]\nfields = [\"z\", \"x\"]\n\
                 [concepts.b]\nfields = [\"w\"]\nreplace = true\n\
                 [concepts.c]\nfields = [\"v\"]\nconcepts = [\"a\", \"c\"]\n\
                 [models.m]\ndefinition = [\"a\", \"c\"]\n",
                "user",
            )
            .unwrap();
        assert_eq!(c.concept("a").unwrap().fields, ["x", "z"]);
        assert_eq!(c.concept("b").unwrap().fields, ["w"]);
        assert_eq!(c.concept("c").unwrap().fields, ["v", "x", "z"]);
        assert_eq!(c.model("m").unwrap().definition, ["a", "c"]);
    }

    #[test]
    fn bad_files_are_errors_naming_file_and_line_or_name() {
        for (text, want) in [
            ("format = 2\n", "format 2"),
            ("format = 1\n[concepts.a]\nfeilds = [\"x\"]\n", "line 3"),
            ("format = 1\n[concepts.a]\n", "no fields"),
            (
                "format = 1\n[models.m]\ndefinition = [\"nope\"]\n",
                "\"nope\", which is no concept",
            ),
            (
                "format = 1\n[concepts.a]\nconcepts = [\"b\"]\n",
                "includes \"b\"",
            ),
            (
                "format = 1\n[concepts.\"1a\"]\nfields = [\"x\"]\n",
                "\"1a\"",
            ),
        ] {
            let e = Concepts::parse(text, "my.toml").unwrap_err();
            assert!(e.to_string().starts_with("my.toml: "), "{e}");
            assert!(e.message.contains(want), "{text}: {e}");
        }
    }
}
