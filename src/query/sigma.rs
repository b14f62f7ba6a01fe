//! Sigma rules as queries: a rule's YAML (specification v2) compiled into an expression of
//! weir's language ([`compile`]), which then runs as any other (pruned by the catalog,
//! sketches and dictionaries).
//!
//! - **Logsource → schemas.** `product: zeek` with `service: S` is the schema `zeek.S` (Zeek
//!   names its logs by the service: `dns`, `http`, `dce_rpc`, `smb_files`, `kerberos`, `rdp`,
//!   `x509`, ...). `category: dns` (without a product, or with `product: zeek` or
//!   `suricata`) is every DNS schema, `zeek.dns` and `suricata.dns`, with Sigma's DNS field
//!   names mapped through the concepts (`query` is `net.domain`: `query` in Zeek,
//!   `dns.rrname` in EVE). Anything else is an error.
//! - **Field names** are the rule's, as the schema names them (`id.orig_h`), except the web
//!   taxonomy's names for Zeek's http log (`c-uri` is `uri`, `c-useragent` `user_agent`,
//!   `cs-method` `method`, `cs-host` `host`, `cs-referrer` `referrer`, `sc-status`
//!   `status_code`), which SigmaHQ's Zeek rules mix in.
//! - **Values** compare by the field's type in the schema: strings case-insensitively as a
//!   whole (a `/(?i)…/` pattern; `cased`: exactly) with `*` and `?` wildcards (`\*`, `\?`,
//!   `\\` escape them, as pySigma reads them), numbers as numbers, `true`/`false` with a
//!   `bool`, addresses as addresses; `null` is `== nil`. A value that the field's type
//!   cannot hold is an error.
//! - **Null semantics.** A Sigma condition is false on an unset field, and its negation true
//!   (SQL's `NOT COALESCE(…, FALSE)`), where weir's own `!` is false on unset values too: a
//!   negated condition `c` becomes `!c || field == nil`.
//! - **Refused**, each as [`SigmaError::Unsupported`] naming the file, line and feature:
//!   keyword (field-less) detections, aggregations (`| count()` …), `near`, correlation
//!   rules, `timeframe`, several conditions, unknown modifiers and those weir lacks
//!   (`windash`, `wide`, `utf16*`, `expand`, `fieldref`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::types::{Schema, Type};

use super::literal::quote;

/// Why a rule cannot be a query. Each names the rule's file and the line of the problem.
#[derive(Debug, thiserror::Error)]
pub enum SigmaError {
    /// The file cannot be read.
    #[error("{file}: cannot read the sigma rule: {message}")]
    Read {
        /// The rule's file.
        file: String,
        /// The system's message.
        message: String,
    },
    /// The YAML is malformed, or the rule is not shaped as Sigma says.
    #[error("{file}:{line}: invalid sigma rule: {message}")]
    Invalid {
        /// The rule's file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A feature of Sigma that weir does not implement.
    #[error("{file}:{line}: unsupported sigma feature: {feature}")]
    Unsupported {
        /// The rule's file.
        file: String,
        /// 1-based line.
        line: usize,
        /// The feature, as the rule writes it, and why.
        feature: String,
    },
}

impl SigmaError {
    /// The line of the problem (0 when the file could not be read).
    pub fn line(&self) -> usize {
        match self {
            SigmaError::Read { .. } => 0,
            SigmaError::Invalid { line, .. } | SigmaError::Unsupported { line, .. } => *line,
        }
    }
}

/// A YAML node with the line it starts on.
#[derive(Debug, Clone)]
enum Node {
    /// A scalar: its text and whether it was plain (unquoted: may be a number, bool, null).
    Scalar {
        text: String,
        plain: bool,
        line: usize,
    },
    Seq {
        items: Vec<Node>,
        line: usize,
    },
    Map {
        entries: Vec<(String, usize, Node)>,
        line: usize,
    },
}

impl Node {
    fn line(&self) -> usize {
        match self {
            Node::Scalar { line, .. } | Node::Seq { line, .. } | Node::Map { line, .. } => *line,
        }
    }

    fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map { entries, .. } => entries.iter().find(|(k, _, _)| k == key).map(|e| &e.2),
            _ => None,
        }
    }

    fn str(&self) -> Option<&str> {
        match self {
            Node::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }
}

/// Builds [`Node`]s from the parser's events.
#[derive(Default)]
struct Builder {
    stack: Vec<Node>,
    /// A map's key waiting for its value, per open map.
    keys: Vec<Option<(String, usize)>>,
    docs: Vec<Node>,
    error: Option<(usize, String)>,
}

impl Builder {
    fn push_value(&mut self, node: Node) {
        match self.stack.last_mut() {
            None => self.docs.push(node),
            Some(Node::Seq { items, .. }) => items.push(node),
            Some(Node::Map { entries, .. }) => {
                let Some(slot) = self.keys.last_mut() else {
                    return;
                };
                match slot.take() {
                    Some((k, line)) => entries.push((k, line, node)),
                    None => match node {
                        Node::Scalar { text, line, .. } => *slot = Some((text, line)),
                        other => {
                            self.error
                                .get_or_insert((other.line(), "a key that is not a scalar".into()));
                        }
                    },
                }
            }
            Some(Node::Scalar { .. }) => {}
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let line = mark.line().max(1);
        match ev {
            Event::Scalar(text, style, _, _) => self.push_value(Node::Scalar {
                text,
                plain: style == TScalarStyle::Plain,
                line,
            }),
            Event::SequenceStart(..) => {
                self.stack.push(Node::Seq {
                    items: Vec::new(),
                    line,
                });
                self.keys.push(None);
            }
            Event::MappingStart(..) => {
                self.stack.push(Node::Map {
                    entries: Vec::new(),
                    line,
                });
                self.keys.push(None);
            }
            Event::SequenceEnd | Event::MappingEnd => {
                self.keys.pop();
                if let Some(node) = self.stack.pop() {
                    self.push_value(node);
                }
            }
            Event::Alias(_) => {
                self.error
                    .get_or_insert((line, "YAML aliases are not supported".into()));
            }
            _ => {}
        }
    }
}

/// A rule compiled into an expression.
#[derive(Debug, Clone)]
pub struct SigmaRule {
    /// Where it came from (a file's path, or a name the caller gives).
    pub file: String,
    /// The rule's `id` (empty when it has none).
    pub id: String,
    /// The rule's `title`.
    pub title: String,
    /// The schemas its logsource selects.
    pub schemas: Vec<String>,
    /// The expression of weir's language that selects its matches.
    pub expression: String,
    /// Fields the rule names that none of its schemas has (each read as unset), with the
    /// file and line.
    pub warnings: Vec<String>,
}

/// The schemas of the archive (or the shipped ones) by name: what a rule's fields are
/// checked and typed against.
pub trait SchemaLookup {
    /// The schema of this name, when there is one.
    fn schema(&self, name: &str) -> Option<&Schema>;
}

impl SchemaLookup for BTreeMap<String, Schema> {
    fn schema(&self, name: &str) -> Option<&Schema> {
        self.get(name)
    }
}

/// The rule files of `paths`: a file as given, a directory's `*.yml` and `*.yaml` files in
/// name order.
pub fn rule_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, SigmaError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let read = |e: std::io::Error| SigmaError::Read {
                file: p.display().to_string(),
                message: e.to_string(),
            };
            let mut files = Vec::new();
            for entry in std::fs::read_dir(p).map_err(read)? {
                let path = entry.map_err(read)?.path();
                if path.extension().is_some_and(|x| x == "yml" || x == "yaml") {
                    files.push(path);
                }
            }
            files.sort();
            out.extend(files);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Reads a rule file: its text.
pub fn read_rule(path: &Path) -> Result<String, SigmaError> {
    std::fs::read_to_string(path).map_err(|e| SigmaError::Read {
        file: path.display().to_string(),
        message: e.to_string(),
    })
}

/// The schema names a rule's logsource selects (see the module docs), without compiling its
/// detection: what a caller must look up before [`compile`].
pub fn rule_schemas(file: &str, yaml: &str) -> Result<Vec<String>, SigmaError> {
    let cx = Cx { file };
    let doc = cx.document(yaml)?;
    Ok(cx.logsource(&doc)?.into_iter().map(|t| t.schema).collect())
}

/// Compiles the rule `yaml` (named `file` in errors) against `schemas`, which must hold the
/// schemas its logsource names that exist (an absent one is skipped; none at all compiles
/// to an expression with no match, `#id < 0`).
pub fn compile(
    file: &str,
    yaml: &str,
    schemas: &dyn SchemaLookup,
) -> Result<SigmaRule, SigmaError> {
    let cx = Cx { file };
    let doc = cx.document(yaml)?;
    if let Some(c) = doc.get("correlation") {
        return Err(cx.unsupported(c.line(), "correlation rules (`correlation:`)"));
    }
    let text = |k: &str| doc.get(k).and_then(Node::str).unwrap_or("").to_string();
    let (id, title) = (text("id"), text("title"));
    let targets = cx.logsource(&doc)?;
    let detection = doc
        .get("detection")
        .ok_or_else(|| cx.invalid(doc.line(), "no `detection`"))?;
    let Node::Map { entries, line } = detection else {
        return Err(cx.invalid(detection.line(), "`detection` is not a map"));
    };
    if let Some(t) = detection.get("timeframe") {
        return Err(cx.unsupported(t.line(), "`timeframe` (it belongs to aggregations)"));
    }
    let condition = detection
        .get("condition")
        .ok_or_else(|| cx.invalid(*line, "no `condition` in `detection`"))?;
    let (cond_text, cond_line) = match condition {
        Node::Scalar { text, line, .. } => (text.clone(), *line),
        Node::Seq { items, line } => match items.as_slice() {
            [Node::Scalar { text, line, .. }] => (text.clone(), *line),
            _ => {
                return Err(cx.unsupported(*line, "several conditions in one rule"));
            }
        },
        Node::Map { line, .. } => return Err(cx.invalid(*line, "`condition` is a map")),
    };
    let names: Vec<(&str, usize, &Node)> = entries
        .iter()
        .filter(|(k, _, _)| k != "condition" && k != "timeframe")
        .map(|(k, l, n)| (k.as_str(), *l, n))
        .collect();
    let cond = cx.condition(&cond_text, cond_line, &names)?;

    // Every detection's shape, modifiers and values are checked whether or not the data
    // holds the rule's schemas (against none: each field as absent).
    let empty = Schema::new(
        targets.first().map_or("", |t| t.schema.as_str()),
        Vec::new(),
    );
    let no_fields = BTreeMap::new();
    let mut check = Target {
        cx: &cx,
        schema: &empty,
        fields: &no_fields,
        missing: Vec::new(),
    };
    for (name, line, node) in &cond.1 {
        check.detection(name, *line, node)?;
    }
    let mut alternatives = Vec::new();
    let mut missing: Vec<(String, usize, String)> = Vec::new();
    let mut present = 0;
    for t in &targets {
        let Some(schema) = schemas.schema(&t.schema) else {
            continue;
        };
        let mut tcx = Target {
            cx: &cx,
            schema,
            fields: &t.fields,
            missing: Vec::new(),
        };
        let ir = tcx.cond(&cond)?;
        // A field this schema lacks (Zeek versions log different fields): unset here, said.
        for (field, line) in std::mem::take(&mut tcx.missing) {
            missing.push((field, line, t.schema.clone()));
        }
        present += 1;
        let ir = ir.fold();
        let ty = format!("#type == {}", quote(&t.schema));
        match ir {
            Ir::Const(false) => {}
            Ir::Const(true) => alternatives.push(ty),
            ir => {
                let mut s = String::new();
                ir.emit(false, &mut s);
                alternatives.push(format!("{ty} && ({s})"));
            }
        }
    }
    let expression = if alternatives.is_empty() {
        // Nothing to match (no schema of the rule here, or a condition never true).
        "#id < 0".to_string()
    } else if alternatives.len() == 1 {
        alternatives.remove(0)
    } else {
        alternatives
            .iter()
            .map(|a| format!("({a})"))
            .collect::<Vec<_>>()
            .join(" || ")
    };
    // A field no schema of the rule has is a warning (its conditions read it as unset), once.
    let mut warnings = Vec::new();
    for (field, line, _) in &missing {
        let lacking: Vec<&str> = missing
            .iter()
            .filter(|m| &m.0 == field)
            .map(|m| m.2.as_str())
            .collect();
        let text = format!(
            "{file}:{line}: no field `{field}` in {}: the rule reads it as unset",
            lacking.join(", ")
        );
        if lacking.len() == present && !warnings.contains(&text) {
            warnings.push(text);
        }
    }
    Ok(SigmaRule {
        file: file.to_string(),
        warnings,
        id,
        title,
        schemas: targets.into_iter().map(|t| t.schema).collect(),
        expression,
    })
}

/// The schemas of `names` that `archive` holds (its segments' and its write-ahead log's),
/// for [`compile`]: a rule's fields are typed by the data they will run on.
pub fn archive_schemas(
    archive: &crate::store::Archive,
    names: &[String],
) -> Result<BTreeMap<String, Schema>, crate::store::StoreError> {
    let mut out = BTreeMap::new();
    for entry in &archive.catalog().segments {
        if !names
            .iter()
            .any(|n| entry.schemas.contains_key(n) && !out.contains_key(n))
        {
            continue;
        }
        let seg = archive.segment(entry)?;
        for s in seg.schemas() {
            if names.contains(&s.name) {
                out.entry(s.name.clone()).or_insert_with(|| (**s).clone());
            }
        }
    }
    let next = archive.catalog().next_id;
    for b in archive.scan_range(next..u64::MAX).flatten() {
        let s = b.schema();
        if names.contains(&s.name) {
            out.entry(s.name.clone()).or_insert_with(|| (**s).clone());
        }
    }
    Ok(out)
}

/// The expression of one rule's text against `archive` (its schemas type the fields): what
/// `weir serve`'s `"sigma"` member runs. A rule with none of its schemas in the archive has
/// no match (`#id < 0`).
pub fn archive_expression(
    archive: &crate::store::Archive,
    yaml: &str,
) -> Result<Result<String, SigmaError>, crate::store::StoreError> {
    Ok(archive_rule(archive, yaml)?.map(|r| {
        for w in &r.warnings {
            tracing::warn!("{w}");
        }
        r.expression
    }))
}

/// A rule's YAML compiled against `archive`'s schemas ([`archive_expression`], the whole
/// rule: its id, title, expression and warnings).
pub fn archive_rule(
    archive: &crate::store::Archive,
    yaml: &str,
) -> Result<Result<SigmaRule, SigmaError>, crate::store::StoreError> {
    let file = "sigma rule";
    let names = match rule_schemas(file, yaml) {
        Ok(n) => n,
        Err(e) => return Ok(Err(e)),
    };
    let schemas = archive_schemas(archive, &names)?;
    Ok(compile(file, yaml, &schemas))
}

/// A weir pattern literal of the regex `re` (wrapped in a group, so it never ends in a
/// backslash before the closing slash; a slash escaped for the lexer).
fn pattern(re: &str) -> String {
    format!("/(?:{})/", re.replace('/', "\\/"))
}

/// One schema a rule runs on and how its fields are named there.
struct TargetSpec {
    schema: String,
    /// Sigma field name → the concept or field that stands for it.
    fields: BTreeMap<&'static str, &'static str>,
}

/// Compilation context: the file, for errors.
struct Cx<'a> {
    file: &'a str,
}

/// The named detections of a rule: name, line, definition.
type Defs = Vec<(String, usize, Node)>;

/// The condition's syntax tree.
#[derive(Debug, Clone)]
enum Cond {
    And(Vec<Cond>),
    Or(Vec<Cond>),
    Not(Box<Cond>),
    /// A named detection (search identifier) and the line of its definition.
    Sel(usize),
}

impl<'a> Cx<'a> {
    fn invalid(&self, line: usize, message: &str) -> SigmaError {
        SigmaError::Invalid {
            file: self.file.to_string(),
            line,
            message: message.to_string(),
        }
    }

    fn unsupported(&self, line: usize, feature: &str) -> SigmaError {
        SigmaError::Unsupported {
            file: self.file.to_string(),
            line,
            feature: feature.to_string(),
        }
    }

    fn document(&self, yaml: &str) -> Result<Node, SigmaError> {
        let mut b = Builder::default();
        let mut parser = Parser::new_from_str(yaml);
        parser.load(&mut b, true).map_err(|e| {
            self.invalid(
                e.marker().line().max(1),
                &format!("malformed YAML: {}", e.info()),
            )
        })?;
        if let Some((line, m)) = b.error {
            return Err(self.invalid(line, &m));
        }
        let mut docs = b.docs.into_iter();
        let doc = docs
            .next()
            .ok_or_else(|| self.invalid(1, "an empty document"))?;
        if let Some(second) = docs.next() {
            return Err(self.unsupported(
                second.line(),
                "several YAML documents in one file (rule collections)",
            ));
        }
        if !matches!(doc, Node::Map { .. }) {
            return Err(self.invalid(doc.line(), "the rule is not a map"));
        }
        Ok(doc)
    }

    fn logsource(&self, doc: &Node) -> Result<Vec<TargetSpec>, SigmaError> {
        let ls = doc
            .get("logsource")
            .ok_or_else(|| self.invalid(doc.line(), "no `logsource`"))?;
        let get = |k: &str| ls.get(k).and_then(Node::str).map(str::to_ascii_lowercase);
        let (product, service, category) = (get("product"), get("service"), get("category"));
        let word = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        };
        let dns_fields: BTreeMap<&'static str, &'static str> = [
            ("query", "net.domain"),
            ("src_ip", "net.src.ip"),
            ("src_port", "net.src.port"),
            ("dst_ip", "net.dst.ip"),
            ("dst_port", "net.dst.port"),
        ]
        .into_iter()
        .collect();
        match (product.as_deref(), service.as_deref(), category.as_deref()) {
            (Some("zeek"), Some(s), None) if word(s) => {
                let fields = if s == "http" {
                    [
                        ("c-uri", "uri"),
                        ("c-useragent", "user_agent"),
                        ("cs-method", "method"),
                        ("cs-host", "host"),
                        ("cs-referrer", "referrer"),
                        ("sc-status", "status_code"),
                    ]
                    .into_iter()
                    .collect()
                } else {
                    BTreeMap::new()
                };
                Ok(vec![TargetSpec {
                    schema: format!("zeek.{s}"),
                    fields,
                }])
            }
            (None | Some("zeek") | Some("suricata"), None, Some("dns")) => {
                let all = [("zeek", "zeek.dns"), ("suricata", "suricata.dns")];
                Ok(all
                    .iter()
                    .filter(|(p, _)| product.as_deref().is_none_or(|want| want == *p))
                    .map(|(_, s)| TargetSpec {
                        schema: s.to_string(),
                        fields: dns_fields.clone(),
                    })
                    .collect())
            }
            _ => {
                let mut shown = Vec::new();
                for (k, v) in [
                    ("product", &product),
                    ("service", &service),
                    ("category", &category),
                ] {
                    if let Some(v) = v {
                        shown.push(format!("{k}: {v}"));
                    }
                }
                Err(self.unsupported(
                    ls.line(),
                    &format!(
                        "logsource {{{}}} (weir knows product: zeek with a service, and category: dns)",
                        shown.join(", ")
                    ),
                ))
            }
        }
    }

    /// Parses the condition over the named detections.
    fn condition(
        &self,
        text: &str,
        line: usize,
        names: &[(&str, usize, &Node)],
    ) -> Result<(Cond, Defs), SigmaError> {
        if text.contains('|') {
            return Err(self.unsupported(
                line,
                &format!("aggregation in the condition `{}`", text.trim()),
            ));
        }
        let mut toks: Vec<String> = Vec::new();
        let mut cur = String::new();
        for c in text.chars() {
            match c {
                '(' | ')' => {
                    if !cur.is_empty() {
                        toks.push(std::mem::take(&mut cur));
                    }
                    toks.push(c.to_string());
                }
                c if c.is_whitespace() => {
                    if !cur.is_empty() {
                        toks.push(std::mem::take(&mut cur));
                    }
                }
                c => cur.push(c),
            }
        }
        if !cur.is_empty() {
            toks.push(cur);
        }
        let defs: Defs = names
            .iter()
            .map(|(n, l, node)| (n.to_string(), *l, (*node).clone()))
            .collect();
        let mut p = CondParser {
            cx: self,
            toks: &toks,
            at: 0,
            line,
            names: &defs,
            depth: 0,
        };
        let c = p.or()?;
        if let Some(t) = toks.get(p.at) {
            if t.eq_ignore_ascii_case("near") {
                return Err(self.unsupported(line, "`near` in the condition"));
            }
            return Err(self.invalid(line, &format!("unexpected `{t}` in the condition")));
        }
        Ok((c, defs))
    }
}

struct CondParser<'a, 'b> {
    cx: &'a Cx<'b>,
    toks: &'a [String],
    at: usize,
    line: usize,
    names: &'a [(String, usize, Node)],
    depth: usize,
}

impl CondParser<'_, '_> {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.at).map(String::as_str)
    }

    fn or(&mut self) -> Result<Cond, SigmaError> {
        let mut v = vec![self.and()?];
        while self.peek().is_some_and(|t| t.eq_ignore_ascii_case("or")) {
            self.at += 1;
            v.push(self.and()?);
        }
        Ok(if v.len() == 1 {
            v.remove(0)
        } else {
            Cond::Or(v)
        })
    }

    fn and(&mut self) -> Result<Cond, SigmaError> {
        let mut v = vec![self.not()?];
        while self.peek().is_some_and(|t| t.eq_ignore_ascii_case("and")) {
            self.at += 1;
            v.push(self.not()?);
        }
        Ok(if v.len() == 1 {
            v.remove(0)
        } else {
            Cond::And(v)
        })
    }

    fn not(&mut self) -> Result<Cond, SigmaError> {
        self.depth += 1;
        if self.depth > crate::query::MAX_DEPTH {
            return Err(self.cx.invalid(self.line, "the condition nests too deeply"));
        }
        let out = self.not_inner();
        self.depth -= 1;
        out
    }

    fn not_inner(&mut self) -> Result<Cond, SigmaError> {
        let Some(t) = self.peek().map(str::to_string) else {
            return Err(self.cx.invalid(self.line, "the condition ends too early"));
        };
        self.at += 1;
        let lower = t.to_ascii_lowercase();
        match lower.as_str() {
            "not" => Ok(Cond::Not(Box::new(self.not()?))),
            "(" => {
                let c = self.or()?;
                if self.peek() != Some(")") {
                    return Err(self
                        .cx
                        .invalid(self.line, "a `(` without its `)` in the condition"));
                }
                self.at += 1;
                Ok(c)
            }
            "1" | "any" | "all" => {
                if !self.peek().is_some_and(|t| t.eq_ignore_ascii_case("of")) {
                    return Err(self
                        .cx
                        .invalid(self.line, &format!("expected `of` after `{t}`")));
                }
                self.at += 1;
                let Some(what) = self.peek().map(str::to_string) else {
                    return Err(self.cx.invalid(self.line, "expected a name after `of`"));
                };
                self.at += 1;
                // `them` is every name; names starting with `_` are left out unless the
                // pattern starts with `_` too, as pySigma does.
                let re = if what == "them" {
                    regex::Regex::new("^.*$")
                } else {
                    regex::Regex::new(&format!("^{}$", regex::escape(&what).replace("\\*", ".*")))
                }
                .map_err(|e| self.cx.invalid(self.line, &e.to_string()))?;
                let hidden_too = what.starts_with('_');
                let picked: Vec<Cond> = (0..self.names.len())
                    .filter(|&i| {
                        let n = &self.names[i].0;
                        re.is_match(n) && (hidden_too || !n.starts_with('_'))
                    })
                    .map(Cond::Sel)
                    .collect();
                if picked.is_empty() {
                    return Err(self.cx.invalid(
                        self.line,
                        &format!("`{t} of {what}`: no detection of that name"),
                    ));
                }
                Ok(if lower == "all" {
                    Cond::And(picked)
                } else {
                    Cond::Or(picked)
                })
            }
            "and" | "or" | ")" => Err(self
                .cx
                .invalid(self.line, &format!("unexpected `{t}` in the condition"))),
            "near" => Err(self.cx.unsupported(self.line, "`near` in the condition")),
            _ => {
                if t.contains('*') {
                    return Err(self.cx.invalid(
                        self.line,
                        &format!("a wildcard name `{t}` needs `1 of` or `all of`"),
                    ));
                }
                match self.names.iter().position(|(n, _, _)| *n == t) {
                    Some(i) => Ok(Cond::Sel(i)),
                    None => Err(self.cx.invalid(
                        self.line,
                        &format!("the condition names `{t}`, which `detection` lacks"),
                    )),
                }
            }
        }
    }
}

/// The compiled condition of one schema.
#[derive(Debug, Clone)]
enum Ir {
    And(Vec<Ir>),
    Or(Vec<Ir>),
    Not(Box<Ir>),
    Const(bool),
    /// A predicate of weir's language on one field; `null` whether it holds on an unset
    /// value (`== nil`).
    Pred {
        field: String,
        text: String,
        null: bool,
    },
}

impl Ir {
    fn fold(self) -> Ir {
        match self {
            Ir::And(v) => {
                let mut out = Vec::new();
                for x in v.into_iter().map(Ir::fold) {
                    match x {
                        Ir::Const(true) => {}
                        Ir::Const(false) => return Ir::Const(false),
                        x => out.push(x),
                    }
                }
                match out.len() {
                    0 => Ir::Const(true),
                    1 => out.remove(0),
                    _ => Ir::And(out),
                }
            }
            Ir::Or(v) => {
                let mut out = Vec::new();
                for x in v.into_iter().map(Ir::fold) {
                    match x {
                        Ir::Const(false) => {}
                        Ir::Const(true) => return Ir::Const(true),
                        x => out.push(x),
                    }
                }
                match out.len() {
                    0 => Ir::Const(false),
                    1 => out.remove(0),
                    _ => Ir::Or(out),
                }
            }
            Ir::Not(x) => match x.fold() {
                Ir::Const(b) => Ir::Const(!b),
                x => Ir::Not(Box::new(x)),
            },
            x => x,
        }
    }

    /// Writes the expression (negated when `neg`), negations pushed down to the predicates
    /// with Sigma's meaning: a negated predicate also holds on an unset value.
    fn emit(&self, neg: bool, out: &mut String) {
        match self {
            Ir::Const(b) => {
                // Folded away before; kept total: a constant as a tautology on `#type`.
                let _ = write!(
                    out,
                    "{}",
                    if *b != neg {
                        "#type != \"\""
                    } else {
                        "#type == \"\""
                    }
                );
            }
            Ir::Not(x) => x.emit(!neg, out),
            Ir::And(v) | Ir::Or(v) => {
                let and = matches!(self, Ir::And(_)) != neg;
                let sep = if and { " && " } else { " || " };
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    out.push('(');
                    x.emit(neg, out);
                    out.push(')');
                }
            }
            Ir::Pred { field, text, null } => {
                if !neg {
                    out.push_str(text);
                } else if *null {
                    let _ = write!(out, "!({text})");
                } else {
                    let _ = write!(out, "!({text}) || {field} == nil");
                }
            }
        }
    }
}

/// A value of a detection, as YAML typed it.
#[derive(Debug, Clone)]
enum Val {
    Str(String),
    Int(i64),
    Real(f64),
    Bool(bool),
    Null,
}

impl Val {
    fn of(node: &Node) -> Option<Val> {
        let Node::Scalar { text, plain, .. } = node else {
            return None;
        };
        if !*plain {
            return Some(Val::Str(text.clone()));
        }
        Some(match text.as_str() {
            "" | "~" | "null" | "Null" | "NULL" => Val::Null,
            "true" | "True" | "TRUE" => Val::Bool(true),
            "false" | "False" | "FALSE" => Val::Bool(false),
            t => {
                if let Ok(i) = t.parse::<i64>() {
                    Val::Int(i)
                } else if let (Ok(f), true) = (
                    t.parse::<f64>(),
                    // YAML 1.1 (PyYAML, pySigma's reader): a float has a dot.
                    t.contains('.')
                        && t.bytes().any(|b| b.is_ascii_digit())
                        && t.bytes()
                            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)),
                ) {
                    Val::Real(f)
                } else {
                    Val::Str(t.to_string())
                }
            }
        })
    }

    /// The value as Sigma's string (a number's decimal text).
    fn text(&self) -> Option<String> {
        match self {
            Val::Str(s) => Some(s.clone()),
            Val::Int(i) => Some(i.to_string()),
            Val::Real(f) => Some(f.to_string()),
            Val::Bool(b) => Some(b.to_string()),
            Val::Null => None,
        }
    }
}

/// A piece of a Sigma string.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Lit(String),
    Star,
    One,
}

/// A Sigma string's pieces, as pySigma reads them: `*` and `?` are wildcards; a backslash
/// before `*`, `?` or a backslash escapes it; any other backslash is itself.
fn pieces(s: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some(&n @ ('*' | '?' | '\\')) => {
                    lit.push(n);
                    chars.next();
                }
                _ => lit.push('\\'),
            },
            '*' | '?' => {
                if !lit.is_empty() {
                    out.push(Piece::Lit(std::mem::take(&mut lit)));
                }
                out.push(if c == '*' { Piece::Star } else { Piece::One });
            }
            c => lit.push(c),
        }
    }
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    out
}

/// How a field's values compare.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Class {
    Text,
    Number,
    Bool,
    Addr,
    Other,
}

fn class_of(ty: &Type) -> Class {
    let ty = ty.element().unwrap_or(ty);
    match ty {
        _ if ty.is_stringy() => Class::Text,
        Type::Count | Type::Int | Type::Double | Type::Port => Class::Number,
        Type::Bool => Class::Bool,
        Type::Addr => Class::Addr,
        _ => Class::Other,
    }
}

/// The condition compiled for one schema.
struct Target<'a, 'b> {
    cx: &'a Cx<'b>,
    schema: &'a Schema,
    fields: &'a BTreeMap<&'static str, &'static str>,
    /// Whether the rule runs on several schemas (then a field may be absent from some).
    /// Fields the rule names that the schema lacks, with their lines.
    missing: Vec<(String, usize)>,
}

/// What the modifiers of one field say.
#[derive(Default)]
struct Mods {
    contains: bool,
    startswith: bool,
    endswith: bool,
    all: bool,
    re: bool,
    re_flags: String,
    cidr: bool,
    cmp: Option<&'static str>,
    base64: bool,
    base64offset: bool,
    exists: bool,
    cased: bool,
}

impl Target<'_, '_> {
    fn cond(&mut self, c: &(Cond, Defs)) -> Result<Ir, SigmaError> {
        let (cond, defs) = c;
        self.walk(cond, defs)
    }

    fn walk(&mut self, c: &Cond, defs: &[(String, usize, Node)]) -> Result<Ir, SigmaError> {
        Ok(match c {
            Cond::And(v) => Ir::And(
                v.iter()
                    .map(|x| self.walk(x, defs))
                    .collect::<Result<_, _>>()?,
            ),
            Cond::Or(v) => Ir::Or(
                v.iter()
                    .map(|x| self.walk(x, defs))
                    .collect::<Result<_, _>>()?,
            ),
            Cond::Not(x) => Ir::Not(Box::new(self.walk(x, defs)?)),
            Cond::Sel(i) => {
                let (name, line, node) = &defs[*i];
                self.detection(name, *line, node)?
            }
        })
    }

    /// A named detection: a map (AND of its fields) or a list of maps (OR).
    fn detection(&mut self, name: &str, line: usize, node: &Node) -> Result<Ir, SigmaError> {
        match node {
            Node::Map { entries, .. } => {
                let mut v = Vec::new();
                for (key, kline, value) in entries {
                    v.push(self.field(key, *kline, value)?);
                }
                Ok(Ir::And(v))
            }
            Node::Seq { items, line } => {
                if items.iter().all(|i| matches!(i, Node::Map { .. })) && !items.is_empty() {
                    let mut v = Vec::new();
                    for i in items {
                        v.push(self.detection(name, i.line(), i)?);
                    }
                    Ok(Ir::Or(v))
                } else {
                    Err(self.cx.unsupported(
                        *line,
                        &format!("keyword (field-less) detection `{name}`: weir searches fields, and what a keyword matches is backend-defined"),
                    ))
                }
            }
            Node::Scalar { .. } => Err(self
                .cx
                .unsupported(line, &format!("keyword (field-less) detection `{name}`"))),
        }
    }

    /// One `field|modifiers: value(s)` of a detection map.
    fn field(&mut self, key: &str, line: usize, value: &Node) -> Result<Ir, SigmaError> {
        let mut parts = key.split('|');
        let field = parts.next().unwrap_or("");
        if field.is_empty() {
            return Err(self.cx.unsupported(
                line,
                &format!("keyword (field-less) values with modifiers `{key}`"),
            ));
        }
        let mut m = Mods::default();
        for md in parts {
            match md {
                "contains" => m.contains = true,
                "startswith" => m.startswith = true,
                "endswith" => m.endswith = true,
                "all" => m.all = true,
                "re" => m.re = true,
                "i" | "m" | "s" if m.re => m.re_flags.push_str(md),
                "cidr" => m.cidr = true,
                "lt" => m.cmp = Some("<"),
                "lte" => m.cmp = Some("<="),
                "gt" => m.cmp = Some(">"),
                "gte" => m.cmp = Some(">="),
                "base64" => m.base64 = true,
                "base64offset" => m.base64offset = true,
                "exists" => m.exists = true,
                "cased" => m.cased = true,
                other => {
                    return Err(self
                        .cx
                        .unsupported(line, &format!("modifier `{other}` in `{key}`")))
                }
            }
        }
        if [m.contains, m.startswith, m.endswith]
            .iter()
            .filter(|b| **b)
            .count()
            > 1
        {
            return Err(self.cx.invalid(
                line,
                &format!("`{key}`: contains, startswith and endswith exclude each other"),
            ));
        }
        let values: Vec<(Val, usize)> = match value {
            Node::Seq { items, .. } => items
                .iter()
                .map(|n| {
                    Val::of(n).map(|v| (v, n.line())).ok_or_else(|| {
                        self.cx
                            .invalid(n.line(), &format!("`{key}`: a value that is not a scalar"))
                    })
                })
                .collect::<Result<_, _>>()?,
            n => vec![(
                Val::of(n).ok_or_else(|| {
                    self.cx
                        .invalid(n.line(), &format!("`{key}`: a map as a value"))
                })?,
                n.line(),
            )],
        };
        if values.is_empty() {
            return Err(self
                .cx
                .invalid(line, &format!("`{key}`: an empty list of values")));
        }
        // The field as this schema names it.
        let names: Vec<String> = match self.fields.get(field) {
            Some(mapped) => {
                let concept = crate::query::concepts::active().fields_in(mapped, self.schema);
                match concept {
                    Some(idx) => idx
                        .iter()
                        .map(|&i| self.schema.fields[i].name.clone())
                        .collect(),
                    None => vec![mapped.to_string()],
                }
            }
            None => vec![field.to_string()],
        };
        let found: Vec<(String, Type)> = names
            .iter()
            .filter_map(|n| {
                self.schema
                    .fields
                    .iter()
                    .find(|f| &f.name == n)
                    .map(|f| (f.name.clone(), f.ty.clone()))
            })
            .collect();
        if found.is_empty() {
            self.missing.push((field.to_string(), line));
            // Absent from this schema: as an unset field.
            if m.exists {
                return Ok(match values.first() {
                    Some((Val::Bool(b), _)) => Ir::Const(!*b),
                    _ => Ir::Const(false),
                });
            }
            let null = values.iter().any(|(v, _)| matches!(v, Val::Null));
            return Ok(Ir::Const(null && !m.all));
        }
        let mut per_field = Vec::new();
        for (name, ty) in &found {
            let written = self.written(name);
            per_field.push(self.values(key, &written, ty, &m, &values)?);
        }
        Ok(Ir::Or(per_field))
    }

    /// The field `name` of the schema as the expression must write it to mean that field
    /// alone: schema-qualified when another field ends with `.name` (a name also matches
    /// such suffixes) or when it is a concept's name.
    fn written(&self, name: &str) -> String {
        let suffix = format!(".{name}");
        let ambiguous = self.schema.fields.iter().any(|f| f.name.ends_with(&suffix))
            || crate::query::concepts::active()
                .fields_in(name, self.schema)
                .is_some();
        if ambiguous {
            format!("{}.{name}", self.schema.name)
        } else {
            name.to_string()
        }
    }

    fn values(
        &self,
        key: &str,
        name: &str,
        ty: &Type,
        m: &Mods,
        values: &[(Val, usize)],
    ) -> Result<Ir, SigmaError> {
        if m.exists {
            let [(Val::Bool(b), _)] = values else {
                return Err(self
                    .cx
                    .invalid(values[0].1, &format!("`{key}`: exists takes true or false")));
            };
            let op = if *b { "!=" } else { "==" };
            return Ok(Ir::Pred {
                field: name.to_string(),
                text: format!("{name} {op} nil"),
                null: !*b,
            });
        }
        let plain_strings = class_of(ty) == Class::Text
            && !m.all
            && !m.re
            && !m.cidr
            && m.cmp.is_none()
            && !m.base64
            && !m.base64offset
            && values.len() > 1;
        if plain_strings {
            // A list of strings: one pattern of alternatives, one pass over each value.
            let each: Option<Vec<Vec<Piece>>> = values
                .iter()
                .map(|(v, _)| v.text().map(|t| m.wrap(pieces(&t))))
                .collect();
            if let Some(each) = each {
                return Ok(Ir::Pred {
                    field: name.to_string(),
                    text: alternatives(name, &each, m.cased),
                    null: false,
                });
            }
        }
        let mut v = Vec::new();
        for (val, line) in values {
            v.push(self.value(key, name, ty, m, val, *line)?);
        }
        Ok(if m.all { Ir::And(v) } else { Ir::Or(v) })
    }

    fn value(
        &self,
        key: &str,
        name: &str,
        ty: &Type,
        m: &Mods,
        val: &Val,
        line: usize,
    ) -> Result<Ir, SigmaError> {
        let class = class_of(ty);
        let pred = |text: String| Ir::Pred {
            field: name.to_string(),
            text,
            null: false,
        };
        let bad = |what: &str| {
            self.cx.invalid(
                line,
                &format!(
                    "`{key}`: {what} for field `{name}` of type {ty} in {}",
                    self.schema.name
                ),
            )
        };
        if let Val::Null = val {
            return Ok(Ir::Pred {
                field: name.to_string(),
                text: format!("{name} == nil"),
                null: true,
            });
        }
        if let Some(op) = m.cmp {
            if class != Class::Number {
                return Err(bad("a numeric comparison"));
            }
            let n = match val {
                Val::Int(i) => i.to_string(),
                Val::Real(f) if f.is_finite() => format!("{f:?}"),
                _ => return Err(bad("a comparison with no number")),
            };
            return Ok(pred(format!("{name} {op} {n}")));
        }
        if m.cidr {
            let Some(text) = val.text() else {
                return Err(bad("cidr without a network"));
            };
            if class != Class::Addr {
                return Err(bad("cidr"));
            }
            let net = crate::codec::zeek::scalar::parse_subnet(text.as_bytes())
                .map(|_| text.clone())
                .or_else(|| {
                    crate::codec::zeek::scalar::parse_addr(text.as_bytes())
                        .map(|a| format!("{a}/{}", if a.is_ipv4() { 32 } else { 128 }))
                })
                .ok_or_else(|| bad(&format!("`{text}` is no network")))?;
            return Ok(pred(format!("{name} in {net}")));
        }
        if m.re {
            let Val::Str(re) = val else {
                return Err(bad("re with no string"));
            };
            if class != Class::Text {
                return Err(bad("re"));
            }
            regex::Regex::new(re).map_err(|e| bad(&format!("the regex does not compile: {e}")))?;
            let flags = if m.re_flags.is_empty() {
                String::new()
            } else {
                format!("(?{})", m.re_flags)
            };
            // Sigma's `re` searches (a partial match); weir's `~` matches the whole value.
            return Ok(pred(format!(
                "{name} ~ {}",
                pattern(&format!("(?s:.*?){flags}(?:{re})(?s:.*)"))
            )));
        }
        // Numbers and booleans with a field of that kind.
        match (class, val) {
            (Class::Number, Val::Int(i)) if !m.any_string() => {
                return Ok(pred(format!(
                    "{name} == {}",
                    if *i < 0 {
                        format!("{i}")
                    } else {
                        i.to_string()
                    }
                )));
            }
            (Class::Number, Val::Real(f)) if !m.any_string() && f.is_finite() => {
                return Ok(pred(format!("{name} == {f:?}")));
            }
            (Class::Number, Val::Str(s)) if !m.any_string() => {
                let plain = pieces(s);
                if let [Piece::Lit(t)] = plain.as_slice() {
                    if let Ok(i) = t.trim().parse::<i64>() {
                        return Ok(pred(format!("{name} == {i}")));
                    }
                    if let Ok(f) = t.trim().parse::<f64>() {
                        if f.is_finite() {
                            return Ok(pred(format!("{name} == {f:?}")));
                        }
                    }
                }
                return Err(bad(&format!("`{s}` is no number")));
            }
            (Class::Bool, Val::Bool(b)) if !m.any_string() => {
                return Ok(pred(format!("{name} == {}", if *b { "T" } else { "F" })));
            }
            (Class::Bool, Val::Str(s)) if !m.any_string() => {
                return match s.to_ascii_lowercase().as_str() {
                    "true" => Ok(pred(format!("{name} == T"))),
                    "false" => Ok(pred(format!("{name} == F"))),
                    _ => Err(bad(&format!("`{s}` is no boolean"))),
                };
            }
            (Class::Addr, Val::Str(s)) if !m.any_string() => {
                let plain = pieces(s);
                if let [Piece::Lit(t)] = plain.as_slice() {
                    if let Some(a) = crate::codec::zeek::scalar::parse_addr(t.as_bytes()) {
                        return Ok(pred(format!("{name} == {a}")));
                    }
                }
                return Err(bad(&format!(
                    "`{s}` is no address (wildcards on addresses are not supported: use cidr)"
                )));
            }
            (Class::Text, _) => {}
            _ => return Err(bad("a value of another type")),
        }
        // Strings.
        let Some(text) = val.text() else {
            return Err(bad("no value"));
        };
        let mut alts: Vec<Vec<Piece>> = Vec::new();
        if m.base64 || m.base64offset {
            // The value's bytes encoded (wildcards are not kept: pySigma refuses them too).
            let raw = pieces(&text);
            let bytes = match raw.as_slice() {
                [] => Vec::new(),
                [Piece::Lit(t)] => t.as_bytes().to_vec(),
                _ => {
                    return Err(self
                        .cx
                        .unsupported(line, &format!("`{key}`: wildcards with base64")))
                }
            };
            let enc = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
            if m.base64offset {
                // pySigma's three shifts: the encoding of the value after 0, 1 and 2 bytes,
                // cut to the characters that depend on the value alone.
                let starts = [0usize, 2, 3];
                let ends = [0usize, 3, 2];
                for i in 0..3 {
                    let mut shifted = vec![b' '; i];
                    shifted.extend_from_slice(&bytes);
                    let e = enc(&shifted);
                    let cut = ends[(bytes.len() + i) % 3];
                    let end = e.len().saturating_sub(cut);
                    let s = e.get(starts[i]..end).unwrap_or("").to_string();
                    alts.push(vec![Piece::Lit(s)]);
                }
            } else {
                alts.push(vec![Piece::Lit(enc(&bytes))]);
            }
        } else {
            alts.push(pieces(&text));
        }
        let mut out = Vec::new();
        for p in alts {
            out.push(pred(string_pred(name, &m.wrap(p), m.cased)));
        }
        Ok(if out.len() == 1 {
            out.remove(0)
        } else {
            Ir::Or(out)
        })
    }
}

impl Mods {
    /// The pieces with the wildcards `contains`, `startswith` and `endswith` add.
    fn wrap(&self, mut p: Vec<Piece>) -> Vec<Piece> {
        if self.contains || self.endswith {
            p.insert(0, Piece::Star);
        }
        if self.contains || self.startswith {
            p.push(Piece::Star);
        }
        p
    }

    /// Whether a modifier makes the value a string match.
    fn any_string(&self) -> bool {
        self.contains || self.startswith || self.endswith || self.base64 || self.base64offset
    }
}

/// The predicate of a string field matching the pieces: `==` where case does not matter and
/// there is no wildcard (the catalog's sketches and dictionaries can prune it), else a
/// pattern that must match the whole value.
/// The predicate of a string field matching any of the pieces' strings: one pattern.
fn alternatives(name: &str, each: &[Vec<Piece>], cased: bool) -> String {
    let mut re = String::from(if cased { "(?s)(?:" } else { "(?si)(?:" });
    for (i, p) in each.iter().enumerate() {
        if i > 0 {
            re.push('|');
        }
        re.push_str(&piece_regex(p));
    }
    re.push(')');
    format!("{name} ~ {}", pattern(&re))
}

/// The regex of pieces (matching as a whole once anchored).
fn piece_regex(p: &[Piece]) -> String {
    let mut re = String::new();
    for piece in p {
        match piece {
            Piece::Lit(t) => re.push_str(&regex::escape(t)),
            Piece::Star => re.push_str(".*"),
            Piece::One => re.push('.'),
        }
    }
    re
}

fn string_pred(name: &str, p: &[Piece], cased: bool) -> String {
    let literal: Option<String> = match p {
        [] => Some(String::new()),
        [Piece::Lit(t)] => Some(t.clone()),
        _ => None,
    };
    if let Some(t) = literal {
        if cased || !t.chars().any(|c| c.is_alphabetic()) {
            return format!("{name} == {}", quote(&t));
        }
    }
    let re = format!("{}{}", if cased { "(?s)" } else { "(?si)" }, piece_regex(p));
    format!("{name} ~ {}", pattern(&re))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::query::Query;
    use crate::types::Field;
    use crate::value::{encode_row, Value};
    use std::sync::Arc;

    fn schemas() -> BTreeMap<String, Schema> {
        let f = |n: &str, t: Type| Field::new(n, t);
        let mut m = BTreeMap::new();
        m.insert(
            "zeek.test".to_string(),
            Schema::new(
                "zeek.test",
                vec![
                    f("s", Type::String),
                    f("t", Type::String),
                    f("n", Type::Count),
                    f("b", Type::Bool),
                    f("a", Type::Addr),
                    f("v", Type::Vector(Box::new(Type::String))),
                ],
            ),
        );
        m
    }

    fn rule(detection: &str) -> String {
        format!(
            "title: t\nid: x-1\nlogsource:\n    product: zeek\n    service: test\ndetection:\n{detection}"
        )
    }

    fn compile_det(detection: &str) -> Result<SigmaRule, SigmaError> {
        compile("r.yml", &rule(detection), &schemas())
    }

    /// Whether the rule matches the event of these values (s, t, n, b, a, v).
    fn matches(detection: &str, row: Vec<Value>) -> bool {
        let r = compile_det(detection).unwrap();
        let q = Query::parse(&r.expression).unwrap_or_else(|e| panic!("{e}\n{}", r.expression));
        let schema = Arc::new(schemas().remove("zeek.test").unwrap());
        let p = q.bind(&schema);
        let mut bytes = Vec::new();
        encode_row(&row, &mut bytes);
        p.matches(&bytes).unwrap()
    }

    fn s(x: &str) -> Value {
        Value::String(x.as_bytes().to_vec())
    }

    fn ev(sv: Option<&str>) -> Vec<Value> {
        vec![
            sv.map_or(Value::Null, s),
            Value::Null,
            Value::Count(5),
            Value::Bool(true),
            Value::Addr("10.1.2.3".parse().unwrap()),
            Value::List(vec![s("One"), s("two")]),
        ]
    }

    #[test]
    fn plain_strings_match_whole_and_ignore_case() {
        let d = "    sel:\n        s: 'Hello'\n    condition: sel\n";
        assert!(matches(d, ev(Some("hello"))));
        assert!(matches(d, ev(Some("HELLO"))));
        assert!(!matches(d, ev(Some("hello!"))));
        assert!(!matches(d, ev(None)));
        let cased = "    sel:\n        s|cased: 'Hello'\n    condition: sel\n";
        assert!(matches(cased, ev(Some("Hello"))));
        assert!(!matches(cased, ev(Some("hello"))));
    }

    #[test]
    fn wildcards_and_escapes() {
        let d = "    sel:\n        s: 'a*b?c'\n    condition: sel\n";
        assert!(matches(d, ev(Some("aXXbYc"))));
        assert!(matches(d, ev(Some("abYc"))));
        assert!(!matches(d, ev(Some("abc"))));
        let esc = "    sel:\n        s: 'a\\*b\\?\\\\c\\d'\n    condition: sel\n";
        assert!(matches(esc, ev(Some("a*b?\\c\\d"))));
        assert!(!matches(esc, ev(Some("aXb?\\c\\d"))));
        // Slashes and quotes survive the expression's text.
        let q = "    sel:\n        s: 'x/\"y\\'\n    condition: sel\n";
        assert!(matches(q, ev(Some("X/\"Y\\"))));
    }

    #[test]
    fn contains_startswith_endswith_all() {
        let c = "    sel:\n        s|contains: 'mid'\n    condition: sel\n";
        assert!(matches(c, ev(Some("aMIDb"))));
        assert!(!matches(c, ev(Some("mi d"))));
        let st = "    sel:\n        s|startswith: 'ab'\n    condition: sel\n";
        assert!(matches(st, ev(Some("ABc"))));
        assert!(!matches(st, ev(Some("cab"))));
        let en = "    sel:\n        s|endswith: '.exe'\n    condition: sel\n";
        assert!(matches(en, ev(Some("x.EXE"))));
        assert!(!matches(en, ev(Some("x.exe.txt"))));
        let all = "    sel:\n        s|contains|all:\n            - a\n            - b\n    condition: sel\n";
        assert!(matches(all, ev(Some("xbxa"))));
        assert!(!matches(all, ev(Some("xxa"))));
        let any =
            "    sel:\n        s|contains:\n            - a\n            - b\n    condition: sel\n";
        assert!(matches(any, ev(Some("xxa"))));
    }

    #[test]
    fn re_cidr_numbers_bools_null_exists() {
        let re = "    sel:\n        s|re: 'b+c'\n    condition: sel\n";
        assert!(matches(re, ev(Some("abbcd"))));
        assert!(!matches(re, ev(Some("aBC"))));
        let rei = "    sel:\n        s|re|i: '^b+c'\n    condition: sel\n";
        assert!(matches(rei, ev(Some("BC"))));
        assert!(!matches(rei, ev(Some("aBC"))));
        let cidr = "    sel:\n        a|cidr: 10.0.0.0/8\n    condition: sel\n";
        assert!(matches(cidr, ev(None)));
        let cidr2 = "    sel:\n        a|cidr: 192.168.0.0/16\n    condition: sel\n";
        assert!(!matches(cidr2, ev(None)));
        let n = "    sel:\n        n: 5\n    condition: sel\n";
        assert!(matches(n, ev(None)));
        let nstr = "    sel:\n        n: '5'\n    condition: sel\n";
        assert!(matches(nstr, ev(None)));
        for (op, want) in [("lt", false), ("lte", true), ("gt", false), ("gte", true)] {
            let d = format!("    sel:\n        n|{op}: 5\n    condition: sel\n");
            assert_eq!(matches(&d, ev(None)), want, "{op}");
        }
        let b = "    sel:\n        b: 'TRUE'\n    condition: sel\n";
        assert!(matches(b, ev(None)));
        let null = "    sel:\n        s: null\n    condition: sel\n";
        assert!(matches(null, ev(None)));
        assert!(!matches(null, ev(Some("x"))));
        let ex = "    sel:\n        s|exists: true\n    condition: sel\n";
        assert!(!matches(ex, ev(None)));
        assert!(matches(ex, ev(Some(""))));
        let nex = "    sel:\n        s|exists: false\n    condition: sel\n";
        assert!(matches(nex, ev(None)));
    }

    #[test]
    fn base64_and_offsets() {
        let b = "    sel:\n        s|base64: 'abc'\n    condition: sel\n";
        assert!(matches(b, ev(Some("YWJj"))));
        // Compared as any string: case-insensitively (as pySigma's SQL with a NOCASE column).
        assert!(matches(b, ev(Some("ywjj"))));
        assert!(!matches(b, ev(Some("YWJk"))));
        let off = "    sel:\n        s|base64offset|contains: 'http'\n    condition: sel\n";
        let r = compile_det(off).unwrap();
        // pySigma's three: aHR0c, h0dH, odHRw.
        assert!(r.expression.contains("aHR0c"), "{}", r.expression);
        assert!(r.expression.contains("odHRw"), "{}", r.expression);
        assert!(r.expression.contains("h0dH"), "{}", r.expression);
        let enc = base64::engine::general_purpose::STANDARD.encode(b" http://x");
        assert!(matches(off, ev(Some(&enc))));
    }

    #[test]
    fn conditions_and_negation_of_unset_values() {
        let d = "    a:\n        s: x\n    b:\n        t: y\n    condition: a and not b\n";
        // `t` unset: `not b` holds (Sigma), where weir's own `!` would not.
        assert!(matches(d, ev(Some("x"))));
        let one = "    sel_1:\n        s: x\n    sel_2:\n        s: z\n    other:\n        s: x\n    condition: 1 of sel_* and not all of them\n";
        assert!(matches(one, ev(Some("z"))));
        assert!(matches(one, ev(Some("x"))));
        assert!(!matches(one, ev(Some("q"))));
        let paren = "    a:\n        s: x\n    b:\n        n: 6\n    c:\n        n: 5\n    condition: a and (b or c)\n";
        assert!(matches(paren, ev(Some("X"))));
        let list = "    a:\n        - s: q\n        - n: 5\n    condition: a\n";
        assert!(matches(list, ev(Some("x"))));
        let them = "    a:\n        s: x\n    b:\n        n: 5\n    condition: all of them\n";
        assert!(matches(them, ev(Some("x"))));
        assert!(!matches(them, ev(Some("y"))));
        // Names starting with `_` are not in `them` nor in `*` patterns (pySigma's rule).
        let hidden = "    a:\n        s: x\n    _b:\n        n: 6\n    condition: all of them and not 1 of *\n";
        assert!(!matches(hidden, ev(Some("x"))));
        let hidden = "    a:\n        s: x\n    _b:\n        n: 6\n    condition: all of them and not 1 of _*\n";
        assert!(matches(hidden, ev(Some("x"))));
    }

    #[test]
    fn containers_match_by_element() {
        let d = "    sel:\n        v: 'one'\n    condition: sel\n";
        assert!(matches(d, ev(None)));
        let n = "    sel:\n        v: 'three'\n    condition: not sel\n";
        assert!(matches(n, ev(None)));
    }

    fn err(detection: &str) -> SigmaError {
        compile_det(detection).unwrap_err()
    }

    #[test]
    fn refusals_name_file_line_and_feature() {
        let e = err("    sel:\n        s: x\n    condition: sel | count() > 5\n");
        assert_eq!(e.line(), 9, "{e}");
        assert!(
            e.to_string()
                .starts_with("r.yml:9: unsupported sigma feature: aggregation"),
            "{e}"
        );
        let e = err("    sel:\n        s|wide: x\n    condition: sel\n");
        assert_eq!(e.line(), 8, "{e}");
        assert!(e.to_string().contains("modifier `wide`"), "{e}");
        let e = err("    kw:\n        - a\n        - b\n    condition: kw\n");
        assert_eq!(e.line(), 8, "{e}");
        assert!(e.to_string().contains("keyword"), "{e}");
        let e = err("    a:\n        s: x\n    b:\n        s: y\n    condition: a near b\n");
        assert!(
            e.to_string()
                .starts_with("r.yml:11: unsupported sigma feature: `near`"),
            "{e}"
        );
        let r = compile_det("    sel:\n        nope: x\n    condition: sel\n").unwrap();
        assert_eq!(
            r.warnings,
            ["r.yml:8: no field `nope` in zeek.test: the rule reads it as unset"]
        );
        assert!(matches(
            "    sel:\n        nope: x\n    condition: not sel\n",
            ev(None)
        ));
        let e = err("    sel:\n        n: abc\n    condition: sel\n");
        assert!(e.to_string().contains("is no number"), "{e}");
        let e = err("    sel:\n        s: x\n    condition: other\n");
        assert!(e.to_string().contains("`other`"), "{e}");
        let e = compile(
            "c.yml",
            "title: c\ncorrelation:\n    type: event_count\n",
            &schemas(),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("c.yml:3: unsupported sigma feature: correlation"),
            "{e}"
        );
        let e = compile(
            "l.yml",
            "title: l\nlogsource:\n    product: windows\ndetection:\n    sel:\n        s: x\n    condition: sel\n",
            &schemas(),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("l.yml:3: unsupported sigma feature: logsource"),
            "{e}"
        );
        let e = compile("y.yml", "title: [\n", &schemas()).unwrap_err();
        assert!(e.to_string().contains("malformed YAML"), "{e}");
    }

    #[test]
    fn a_field_that_is_also_a_suffix_is_qualified() {
        let mut m = BTreeMap::new();
        m.insert(
            "zeek.q".to_string(),
            Schema::new(
                "zeek.q",
                vec![
                    Field::new("name", Type::String),
                    Field::new("prev.name", Type::String),
                ],
            ),
        );
        let y = "title: q\nlogsource:\n    product: zeek\n    service: q\ndetection:\n    sel:\n        name: a\n    condition: not sel\n";
        let r = compile("q.yml", y, &m).unwrap();
        assert!(r.expression.contains("!(zeek.q.name ~"), "{}", r.expression);
        assert!(
            r.expression.contains("zeek.q.name == nil"),
            "{}",
            r.expression
        );
        let q = Query::parse(&r.expression).unwrap();
        let schema = Arc::new(m.remove("zeek.q").unwrap());
        let p = q.bind(&schema);
        let mut row = Vec::new();
        encode_row(&[s("b"), s("a")], &mut row);
        assert!(p.matches(&row).unwrap(), "prev.name is another field");
    }

    #[test]
    fn pieces_read_escapes_as_pysigma() {
        assert_eq!(pieces("\\\\x00"), vec![Piece::Lit("\\x00".into())]);
        assert_eq!(
            pieces("\\\\\\*\\IPC$"),
            vec![Piece::Lit("\\*\\IPC$".into())]
        );
        assert_eq!(pieces("a*"), vec![Piece::Lit("a".into()), Piece::Star]);
    }

    #[test]
    fn logsource_category_dns_spans_both_sources() {
        let mut m = schemas();
        m.insert(
            "zeek.dns".into(),
            Schema::new("zeek.dns", vec![Field::new("query", Type::String)]),
        );
        m.insert(
            "suricata.dns".into(),
            Schema::new("suricata.dns", vec![Field::new("dns.rrname", Type::String)]),
        );
        let y = "title: d\nlogsource:\n    category: dns\ndetection:\n    sel:\n        query|endswith: '.evil'\n    condition: sel\n";
        let r = compile("d.yml", y, &m).unwrap();
        assert_eq!(r.schemas, vec!["zeek.dns", "suricata.dns"]);
        assert!(r.expression.contains("query ~"), "{}", r.expression);
        assert!(r.expression.contains("dns.rrname ~"), "{}", r.expression);
    }
}
