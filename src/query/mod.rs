//! Searching: VAST's expression language over the archive and over pipeline batches.
//!
//! A [`Query`] is a parsed expression. [`Query::search`] runs it over an [`Archive`] (pruning
//! segments and batches by their metadata, then evaluating rows in place, results in ID
//! order); [`Query::count`] counts from metadata where it can; [`Query::bind`] gives the
//! [`Program`] of one schema, which tests encoded rows ([`Program::matches`]); the pipeline's
//! `filter` transform ([`FilterConfig`]) uses it on batches.
//!
//! ```
//! use weir::unstable::query::Query;
//! let q = Query::parse("#type == \"zeek.conn\" && id.resp_p == 53 && duration > 1s").unwrap();
//! assert_eq!(q.text(), "#type == \"zeek.conn\" && id.resp_p == 53 && duration > 1s");
//! let e = Query::parse("ts == && x").unwrap_err();
//! assert_eq!(e.pos, 6);
//! ```
//!
//! # The language (VAST's, 2021)
//!
//! An expression combines **predicates** with `&&`, `||`, `!` and parentheses (`&&` binds
//! tighter than `||`; whitespace is free). A predicate is `LHS op RHS`, one side an
//! extractor and the other a literal (either order: `"zeek" in #type`).
//!
//! | operator | meaning |
//! | --- | --- |
//! | `==` `!=` `<` `<=` `>` `>=` | compare (numbers across `count`, `int`, `real`, `port`; strings by bytes; times; durations; addresses; subnets only `==`/`!=`; bools only `==`/`!=`) |
//! | `in` `!in` | the left side is in the right: address in subnet, subnet in subnet, value in list, string is a substring |
//! | `ni` `!ni` | the right side is in the left (`a ni b` is `b in a`); `x in field` for a container field is element membership |
//! | `~` `!~` | the string matches the `/pattern/` as a whole (`==` with a pattern too); `/re/ in field` searches |
//!
//! **Extractors.** A field name: the full dotted name (`id.orig_h`), any suffix at a dot
//! (`orig_h`), or qualified by the schema (`conn.duration`, `zeek.conn.id.resp_h`); several
//! matching fields mean any of them. A type: `:addr :subnet :count :int :real (:double)
//! :string :bool :time :duration (:interval) :port :enum :pattern :timestamp`: every field of
//! that type (`:count` also ports, `:string` also `file` fields, `:subnet == 10.0.0.0/8` also
//! addresses in it, `:timestamp` the event's `ts`). Meta: `#type` (the schema name,
//! `zeek.conn`), `#timestamp` (= `:timestamp`), `#field` (a field name: `#field == "uid"`),
//! `#id` (the event's ID in the archive, a count: `#id >= 100 && #id < 200`, `#id in [1, 5]`;
//! compared with counts only; the pipeline's `filter` refuses it, as its events have no IDs
//! yet, and [`Program::matches`] takes it as unset: [`Program::matches_id`] knows the ID).
//!
//! **Concepts and models** ([`concepts`]): a concept name (`net.src.ip`) as a field extractor
//! means, in each schema, the disjunction over the concept's fields it has (`id.orig_h` in
//! Zeek's logs, `src_ip` in Suricata's), `!=` its negation; `#field == "net.src.ip"` holds
//! where a schema has one of them. A model compares with a record literal:
//! `net.connection == <10.0.0.1, _, 10.0.0.2, 80, _>`, `<net.src.ip: 10.0.0.1>`.
//!
//! **Literals.** Strings `"a\"b\x41"`; counts `53`, `1k`, `1M`, `1G` (×1000), `1Ki`, `1Mi`,
//! `1Gi` (×1024); ints `+5`, `-5`; reals `1.5`, `2.5e2`; bools `T F true false`; addresses
//! `10.0.0.1`, `::1`; subnets `10.0.0.0/8`; ports `80/tcp`, `53/udp`, `0/?` (the number
//! compares with port and count fields (JSON logs have counts); the protocol must equal the event's `proto` field when it has a set one);
//! durations `10s 1.5ms 2min 2h 1d 1w` (`ns us ms s m/min h d w y`); times `2009-11-18`,
//! `2009-11-18T08:00:21Z`, `2009-11-18+08:00:21.5`, `2009-11-18T09:00:21+01:00`, `@1258531221.5`
//! (epoch seconds), `now`, `now - 1d`, `now + 1h`, `1h ago`; lists `[a, b, c]`; patterns
//! `/re/` (Rust's `regex` syntax, on bytes).
//!
//! A literal of a literal's form whose value is out of its type's range is an error saying
//! so at its position: `2263-01-01` (times are nanoseconds in an `i64`: 1677-09-21 to
//! 2262-04-11), `18446744073709551616`, `70000/tcp`, `106752d`, `10.0.0.0/33`.
//!
//! **Nesting.** Parentheses, negations (`!`) and lists nest at most [`MAX_DEPTH`] (256) levels
//! together; deeper is an error at the token that goes too deep (every later step recurses
//! once per level). A chain of `&&` or `||` is no nesting: 6,000 predicates parse, check and
//! bind in linear time.
//!
//! **Value predicates.** A bare literal is `:TYPE == literal` for its type: `10.0.0.1` is
//! `:addr == 10.0.0.1`, `10.0.0.0/8` matches subnets equal to it and addresses in it, `53`
//! matches counts and ports, `"x"` strings, `/re/` strings matching it.
//!
//! # Semantics (as VAST)
//!
//! - An unset value never matches, whatever the operator (also `!=`, `!in`); negation is
//!   pushed into the predicates first (`!(x == 1)` is `x != 1`), so `!` does not make unset
//!   values match either.
//! - A schema without the field: false for its events. A comparison that is not well-typed
//!   for a field is false for that field. A type or meta extractor with a literal it can never
//!   compare with fails at parse time.
//!
//! # No silent zeros
//!
//! Against the data it runs on ([`Query::check`], which a search runs before reading: see
//! [`Search`]), a mistake is an error or a warning rather than an empty answer:
//!
//! - a field extractor that names no field of any schema is an error with the nearest known
//!   names ([`unknown_field`]: "no field `duraton` in any schema of the archive; did you mean
//!   `duration`?");
//! - `#type == "..."` or `#type in [...]` naming no schema of the data and no Zeek log
//!   ([`ZEEK_LOGS`]) is an error ([`unknown_type_name`]: `"conn"`, did you mean
//!   `"zeek.conn"`?); negative predicates (`#type != "foobar"`) are never refused;
//! - a comparison that no field of any schema makes well-typed (`ts == "yesterday"`) is an
//!   error naming the field, both types and, where there is one, the literal probably meant
//!   (`duration > 600` with an interval: `600s`);
//! - one that is ill-typed in some schemas only is a warning ([`Search::warnings`]) naming
//!   those schemas, the field's type and the literal probably meant; results are unchanged;
//! - with no schemas (an empty archive) nothing is refused. [`lint`] gives every problem of
//!   an expression as messages, for a pipeline (`weir run --check` warns with them).
//! - Addresses compare as VAST stores them, an IPv4 address as its IPv4-mapped IPv6 form:
//!   `10.6.7.1 == ::ffff:10.6.7.1` whichever form the log wrote, `::/0` holds every address
//!   and `::ffff:0:0/96` every IPv4 one; subnets compare through the same mapping
//!   (`10.0.0.0/8` is `::ffff:10.0.0.0/104`). Pruning looks an IPv4 address up in both stored
//!   forms (4 and 16 bytes).
//! - Containers (`set`, `vector`, `table`): `x in field` holds when an element equals `x`;
//!   `field == x` and the ordering operators hold when some element does (so an empty
//!   container never equals a scalar); `field == [a, b]` compares the whole list; a negative
//!   operator is the negation of its positive on a set container.
//!
//! # Modules
//!
//! | file | owns |
//! | --- | --- |
//! | `lexer.rs` | tokens with positions |
//! | `parser.rs` | the grammar, the syntax tree ([`Expr`], [`Predicate`], [`Op`], [`Extractor`]), negation normal form |
//! | `literal.rs` | [`Literal`]s and the parsers of their unquoted forms |
//! | `bind.rs` | resolving extractors in a schema, type checks: [`Program`] |
//! | `concepts.rs` | concepts and models ([`concepts::Concepts`]): the shipped table, a user's file, the one in force |
//! | `names.rs` | unknown fields and `#type` names, suggestions, the literal probably meant |
//! | `eval.rs` | evaluating a program on encoded rows with `RowCursor` |
//! | `kernel.rs` | evaluating a program on a batch's Arrow arrays into a `BooleanArray` ([`Program::evaluate_arrow`], [`KernelError`]) |
//! | `prune.rs` | answers from metadata: catalog entries and batch `ts` ranges |
//! | `search.rs` | the archive search ([`Search`], [`Hits`], [`SearchStats`]) and counts |
//! | `filter.rs` | the pipeline's `filter` transform ([`FilterConfig`], [`Filter`]) |
//! | `ops/` | operators after the expression: `EXPR \| sort ts \| head` ([`Chain`]) |
//! | `context/` | VAST's `explore` and `pivot`: the events around and related to results ([`context`]) |
//! | `error.rs` | [`ExprError`] (with the caret) and [`QueryError`] |

pub(crate) mod addr_filter;
mod bind;
mod columnar;
pub mod concepts;
pub mod context;
mod erase;
mod error;
mod eval;
pub mod export;
mod filter;
mod hints;
mod holds;
pub(crate) mod ints;
mod kernel;
mod lexer;
pub(crate) mod literal;
pub mod memory;
mod names;
mod op;
pub mod ops;
mod parser;
mod prune;
mod search;
pub mod sigma;
pub mod to_arrow;

use std::time::{SystemTime, UNIX_EPOCH};

pub use bind::Program;
pub use erase::QuerySelector;
pub use error::{ExprError, QueryError};
pub use filter::{Filter, FilterConfig};
pub use hints::whole_match_hints;
pub use kernel::KernelError;
pub use literal::{ListItems, Literal, Pattern};
pub use names::{unknown_field, unknown_type_name, MAX_SUGGESTIONS, ZEEK_LOGS};
pub use op::Op;
pub use ops::{is_chain, Chain, ChainStats, Explain, Flow, QueryConfig, QueryTransform, Slice};
pub use parser::{Expr, Extractor, Meta, Predicate, TypeName, MAX_DEPTH};
pub use prune::Tri;
pub use search::{HitRows, Hits, Pruning, Search, SearchOptions, SearchStats};

use crate::store::Archive;
use crate::types::{SchemaRef, Type};
use names::Scope;

/// A parsed, statically checked expression (or "everything").
#[derive(Debug, Clone)]
pub struct Query {
    text: String,
    /// In negation normal form; `None` matches every event.
    expr: Option<Expr>,
}

/// Nanoseconds since the epoch, now.
fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

impl Query {
    /// Parses an expression; `now` is the current time.
    pub fn parse(text: &str) -> Result<Query, ExprError> {
        Query::parse_at(text, now_ns())
    }

    /// Parses an expression with `now` at `now` (nanoseconds since the epoch).
    pub fn parse_at(text: &str, now: i64) -> Result<Query, ExprError> {
        let expr = parser::parse(text, now)?.normalize();
        for p in expr.predicates() {
            check_static(text, p)?;
        }
        Ok(Query {
            text: text.to_string(),
            expr: Some(expr),
        })
    }

    /// The query that matches every event.
    pub fn all() -> Query {
        Query {
            text: String::new(),
            expr: None,
        }
    }

    /// The expression as written (empty for [`Query::all`]).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The expression in negation normal form (`None` for [`Query::all`]).
    pub fn expr(&self) -> Option<&Expr> {
        self.expr.as_ref()
    }

    fn predicate_count(&self) -> usize {
        self.expr.as_ref().map_or(0, |e| {
            e.predicates().iter().map(|p| p.id + 1).max().unwrap_or(0)
        })
    }

    fn has_field_predicates(&self) -> bool {
        self.expr.as_ref().is_some_and(|e| {
            e.predicates()
                .iter()
                .any(|p| matches!(p.extractor, Extractor::Field(_)))
        })
    }

    /// The program of one schema.
    pub fn bind(&self, schema: &SchemaRef) -> Program {
        let mut typing = vec![bind::Typing::default(); self.predicate_count()];
        Program::new(self.expr.as_ref(), schema, &mut typing)
    }

    /// Fails when a field comparison names fields in `schemas` but none of them makes it
    /// well-typed (`ts == "yesterday"`): the error names the field and both types.
    pub fn check_types(&self, schemas: &[SchemaRef]) -> Result<(), ExprError> {
        let (errors, _) = self.field_problems(schemas, false, Scope::Archive);
        errors.into_iter().next().map_or(Ok(()), Err)
    }

    /// Checks the expression against the schemas of the data it will run on: fails on the
    /// first field extractor that names no field of any of them ([`unknown_field`], with the
    /// nearest names), on a comparison that no field makes well-typed (naming both types and,
    /// where there is one, the literal probably meant: `600s` for `600` with an interval
    /// field), and on a `#type == "..."` naming none of them and no Zeek log
    /// ([`unknown_type_name`]). Returns the warnings: comparisons ill-typed for the field in
    /// some schemas but not all (false for those schemas' events), each naming them, the
    /// field's type and the literal probably meant. Nothing is refused when `schemas` is
    /// empty.
    pub fn check(&self, schemas: &[SchemaRef]) -> Result<Vec<String>, ExprError> {
        let names: Vec<&str> = schemas.iter().map(|s| s.name.as_str()).collect();
        self.check_type_names(&names)?;
        self.check_fields(schemas)
    }

    /// The field part of [`Query::check`]: unknown field extractors and ill-typed comparisons
    /// are errors, comparisons ill-typed in some schemas only are the warnings returned.
    pub fn check_fields(&self, schemas: &[SchemaRef]) -> Result<Vec<String>, ExprError> {
        let (errors, warnings) = self.field_problems(schemas, true, Scope::Archive);
        errors.into_iter().next().map_or(Ok(warnings), Err)
    }

    /// The `#type` part of [`Query::check`]: fails on a positive `#type` predicate (`==` or
    /// `in [...]`) whose string names none of `names` (the schema names of the data) and no
    /// Zeek log ([`ZEEK_LOGS`]); a negative one (`#type != "foobar"`) is never refused, nor
    /// anything when `names` is empty.
    pub fn check_type_names(&self, names: &[&str]) -> Result<(), ExprError> {
        self.type_name_problems(names, Scope::Archive)
            .into_iter()
            .next()
            .map_or(Ok(()), Err)
    }

    /// Whether the expression has positive `#type` predicates with strings
    /// ([`Query::check_type_names`] has something to check).
    pub(crate) fn has_type_names(&self) -> bool {
        self.expr
            .as_ref()
            .is_some_and(|e| e.predicates().iter().any(|p| !type_names(p).is_empty()))
    }

    fn type_name_problems(&self, names: &[&str], scope: Scope) -> Vec<ExprError> {
        let Some(expr) = &self.expr else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for p in expr.predicates() {
            for v in type_names(p) {
                let v = String::from_utf8_lossy(v);
                out.extend(names::unknown_type_name_in(
                    &self.text,
                    p.value_span.start,
                    &v,
                    names,
                    scope,
                ));
            }
        }
        out
    }

    /// The problems of the field predicates against `schemas`, in predicate order: errors
    /// (unknown fields when `names`, comparisons no field makes well-typed) and warnings.
    fn field_problems(
        &self,
        schemas: &[SchemaRef],
        names: bool,
        scope: Scope,
    ) -> (Vec<ExprError>, Vec<String>) {
        let (mut errors, mut warnings) = (Vec::new(), Vec::new());
        let Some(expr) = &self.expr else {
            return (errors, warnings);
        };
        if schemas.is_empty() {
            return (errors, warnings);
        }
        let mut typing = vec![bind::Typing::default(); self.predicate_count()];
        for s in schemas {
            Program::new(Some(expr), s, &mut typing);
        }
        for p in expr.predicates() {
            let Extractor::Field(name) = &p.extractor else {
                continue;
            };
            let Some(t) = typing.get(p.id) else { continue };
            if !t.resolved {
                if names {
                    errors.extend(names::unknown_field_in(
                        &self.text,
                        p.extractor_span.start,
                        name,
                        schemas,
                        scope,
                    ));
                }
                continue;
            }
            let written = self.text.get(p.value_span.clone()).unwrap_or_default();
            if let (false, Op::Match | Op::NotMatch, Literal::String(s)) =
                (t.well_typed, p.op, &p.value)
            {
                // `query ~ "google"`: a pattern was meant; say how to write one.
                let s = String::from_utf8_lossy(s);
                let pattern = regex::escape(&s).replace('/', "\\/");
                let not = if p.op == Op::NotMatch { "!" } else { "" };
                errors.push(ExprError::new(
                    &self.text,
                    p.pos,
                    format!(
                        "`{}` takes a /pattern/, not a string: `{} {} /.*{pattern}.*/` (the pattern anywhere in the value; `~` matches the whole value), or `\"{}\" {not}in {}` for a substring",
                        p.op,
                        p.extractor,
                        p.op,
                        s.replace('\\', "\\\\").replace('"', "\\\""),
                        p.extractor
                    ),
                ));
                continue;
            }
            if let (false, Some((field, ty))) = (t.well_typed, &t.mismatch) {
                let hint = names::meant(ty, p.op, &p.value, written)
                    .map(|m| format!("; did you mean `{m}`?"))
                    .unwrap_or_default();
                errors.push(ExprError::new(
                    &self.text,
                    p.pos,
                    format!(
                        "type mismatch in `{}`: field {field} is of type {ty} and {} is of type {}; no field {} of any schema can be compared with it by `{}`{hint}",
                        p.text,
                        p.value,
                        p.value.type_name(),
                        p.extractor,
                        p.op
                    ),
                ));
            } else if t.well_typed && !t.ill_typed.is_empty() && names {
                warnings.push(self.ill_typed_warning(p, &t.ill_typed, written));
            }
        }
        (errors, warnings)
    }

    /// The warning for a comparison ill-typed for the field in the schemas of `ill` (schema,
    /// field, type), but not in all.
    fn ill_typed_warning(
        &self,
        p: &Predicate,
        ill: &[(String, String, Type)],
        written: &str,
    ) -> String {
        // (field, type, schemas)
        let mut groups: Vec<(&str, &Type, Vec<&str>)> = Vec::new();
        for (schema, field, ty) in ill {
            match groups.iter_mut().find(|g| g.0 == field && g.1 == ty) {
                Some(g) if !g.2.contains(&schema.as_str()) => g.2.push(schema),
                Some(_) => {}
                None => groups.push((field, ty, vec![schema])),
            }
        }
        let parts: Vec<String> = groups
            .iter()
            .map(|(f, ty, s)| format!("field {f} is of type {ty} in {}", s.join(", ")))
            .collect();
        let hint = groups
            .first()
            .and_then(|(_, ty, _)| names::meant(ty, p.op, &p.value, written))
            .map(|m| format!("; did you mean `{m}`?"))
            .unwrap_or_default();
        let column = self.text.get(..p.pos).map_or(0, |s| s.chars().count()) + 1;
        format!(
            "`{}` at column {column}: {}, which cannot be compared with {} of type {} by `{}`: no event of {} matches it{hint}",
            p.text,
            parts.join("; "),
            p.value,
            p.value.type_name(),
            p.op,
            if groups.iter().map(|g| g.2.len()).sum::<usize>() == 1 {
                "that schema"
            } else {
                "those schemas"
            }
        )
    }

    /// The matching events of `archive`, in ID order, with pruning.
    pub fn search<'a>(&'a self, archive: &'a Archive) -> Result<Search<'a>, QueryError> {
        Search::new(archive, self, SearchOptions::default())
    }

    /// [`Query::search`] with options.
    pub fn search_with<'a>(
        &'a self,
        archive: &'a Archive,
        options: SearchOptions,
    ) -> Result<Search<'a>, QueryError> {
        Search::new(archive, self, options)
    }

    /// The number of matching events (see [`Search::count`]).
    pub fn count(&self, archive: &Archive) -> Result<(u64, SearchStats), QueryError> {
        Search::new(archive, self, SearchOptions::default())?.count()
    }
}

/// Every problem of the expression `text` against the schemas of the data it will run on,
/// as messages: each unknown field extractor and `#type` name (with the nearest names), each
/// comparison no field makes well-typed, each one ill-typed in some schemas only (see
/// [`Query::check`]). Empty when `text` does not parse (that is an error of its own) or when
/// `schemas` is empty. For checking a pipeline's expressions before they run (`weir run
/// --check`), where a problem is a warning.
pub fn lint(text: &str, schemas: &[SchemaRef]) -> Vec<String> {
    let Ok(q) = Query::parse(text) else {
        return Vec::new();
    };
    let names: Vec<&str> = schemas.iter().map(|s| s.name.as_str()).collect();
    let mut out: Vec<String> = q
        .type_name_problems(&names, Scope::Sources)
        .iter()
        .map(ExprError::to_string)
        .collect();
    let (errors, warnings) = q.field_problems(schemas, true, Scope::Sources);
    out.extend(errors.iter().map(ExprError::to_string));
    out.extend(warnings);
    out
}

/// The strings a positive `#type` predicate names (`==` one, `in [...]` its strings).
fn type_names(p: &Predicate) -> Vec<&[u8]> {
    match (&p.extractor, p.op, &p.value) {
        (Extractor::Meta(Meta::Type), Op::Eq, Literal::String(s)) => vec![s],
        (Extractor::Meta(Meta::Type), Op::In, Literal::List(items)) => items
            .iter()
            .filter_map(|x| match x {
                Literal::String(s) => Some(s.as_slice()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Refuses type and meta extractors compared with a literal no field of theirs can take.
fn check_static(text: &str, p: &Predicate) -> Result<(), ExprError> {
    let (what, ok) = match &p.extractor {
        Extractor::Field(_) => return Ok(()),
        Extractor::Type(t) => (
            format!("{} fields", t.as_str()),
            bind::type_candidates(*t).iter().any(|ty| {
                bind::type_op(*t, ty, p.op).is_some_and(|op| bind::well_typed(ty, op, &p.value))
            }),
        ),
        Extractor::Meta(Meta::Type) => (
            "#type (a string)".to_string(),
            bind::well_typed(&Type::String, p.op, &p.value),
        ),
        Extractor::Meta(Meta::Field) => (
            "#field (a string)".to_string(),
            bind::well_typed(&Type::String, p.op, &p.value),
        ),
        Extractor::Meta(Meta::Timestamp) => (
            "#timestamp (a time)".to_string(),
            bind::well_typed(&Type::Time, p.op, &p.value),
        ),
        Extractor::Meta(Meta::Id) => {
            let integer = |l: &Literal| matches!(l, Literal::Count(_) | Literal::Int(_));
            let ok = match (p.op, &p.value) {
                (Op::In | Op::NotIn, Literal::List(items)) => items.iter().all(integer),
                (Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge, l) => integer(l),
                _ => false,
            };
            ("#id (a count)".to_string(), ok)
        }
    };
    if ok {
        return Ok(());
    }
    Err(ExprError::new(
        text,
        p.pos,
        format!(
            "type mismatch in `{}`: {what} cannot be compared with {} of type {} by `{}`",
            p.text,
            p.value,
            p.value.type_name(),
            p.op
        ),
    ))
}
