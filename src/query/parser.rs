//! The expression grammar and its syntax tree.
//!
//! ```text
//! expr      := conj ( "||" conj )*
//! conj      := unary ( "&&" unary )*
//! unary     := "!" unary | "(" expr ")" | predicate
//! predicate := operand op operand | literal          (a bare literal: a value predicate)
//! operand   := field | :type | #meta | literal
//! literal   := word | "string" | /pattern/ | "[" [ literal ( "," literal )* ] "]"
//!            | now (+|-) duration | duration ago
//! op        := == != < <= > >= in !in ni !ni ~ !~
//! model     := field ("==" | "!=") "<" element ( "," element )* ">"
//! element   := "_" | literal | concept ":" ( "_" | literal )
//! ```
//!
//! A `model` predicate compares a model ([`super::concepts`]: `net.connection`) with a record
//! literal, by position (`<10.0.0.1, _, 10.0.0.2, 80, _>`, one element per concept of the
//! model) or by concept name (`<net.src.ip: 10.0.0.1, net.dst.port: 80>`); it is expanded
//! here into predicates on its concepts (VAST's rules, in the module docs of `concepts`).
//!
//! A predicate compares one extractor with one literal; written the other way round
//! (`"zeek" in #type`, `10.0.0.0/8 ni net`) it is turned around (`#type ni "zeek"`). A value
//! predicate is rewritten to a type extractor: `10.0.0.1` is `:addr == 10.0.0.1`, `/x/` is
//! `:string ~ /x/`. [`Expr::normalize`] then pushes negations down to the predicates (De
//! Morgan, and `!(a == b)` is `a != b`), as VAST does: a negated predicate on an unset value
//! or a missing field is still false.

use std::fmt;
use std::ops::Range;

use super::concepts::Concepts;
use super::error::ParseError;
use super::lexer::{lex, Tok, Token};
use super::literal::{out_of_range, parse_duration, parse_word, Literal, Pattern};
use super::op::Op;

/// How deeply parentheses, negations (`!`) and lists may nest, together: deeper is an error
/// at the token that goes one level too deep. Every later step (negation normal form,
/// binding, evaluation) recurses once per level, so this bounds their stack use.
pub const MAX_DEPTH: usize = 256;

/// A type extractor: every field of a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TypeName {
    /// `:addr`
    Addr,
    /// `:subnet` (also matches addresses inside the subnet compared with)
    Subnet,
    /// `:count` (also ports)
    Count,
    /// `:int`
    Int,
    /// `:real`, `:double`
    Real,
    /// `:string` (also `file` fields)
    String,
    /// `:bool`
    Bool,
    /// `:time`
    Time,
    /// `:duration`, `:interval`
    Duration,
    /// `:port`
    Port,
    /// `:enum`
    Enum,
    /// `:pattern`
    Pattern,
    /// `:timestamp`: the event's `ts` field.
    Timestamp,
}

impl TypeName {
    fn parse(name: &str) -> Option<TypeName> {
        Some(match name {
            "addr" => TypeName::Addr,
            "subnet" => TypeName::Subnet,
            "count" => TypeName::Count,
            "int" => TypeName::Int,
            "real" | "double" => TypeName::Real,
            "string" => TypeName::String,
            "bool" => TypeName::Bool,
            "time" => TypeName::Time,
            "duration" | "interval" => TypeName::Duration,
            "port" => TypeName::Port,
            "enum" => TypeName::Enum,
            "pattern" => TypeName::Pattern,
            "timestamp" => TypeName::Timestamp,
            _ => return None,
        })
    }

    /// The extractor as written (`:addr`).
    pub fn as_str(self) -> &'static str {
        match self {
            TypeName::Addr => ":addr",
            TypeName::Subnet => ":subnet",
            TypeName::Count => ":count",
            TypeName::Int => ":int",
            TypeName::Real => ":real",
            TypeName::String => ":string",
            TypeName::Bool => ":bool",
            TypeName::Time => ":time",
            TypeName::Duration => ":duration",
            TypeName::Port => ":port",
            TypeName::Enum => ":enum",
            TypeName::Pattern => ":pattern",
            TypeName::Timestamp => ":timestamp",
        }
    }

    /// The type extractor of a value predicate with this literal.
    fn of_literal(lit: &Literal) -> Option<TypeName> {
        Some(match lit {
            Literal::Bool(_) => TypeName::Bool,
            Literal::Count(_) => TypeName::Count,
            Literal::Int(_) => TypeName::Int,
            Literal::Real(_) => TypeName::Real,
            Literal::String(_) | Literal::Pattern(_) => TypeName::String,
            Literal::Addr(_) => TypeName::Addr,
            Literal::Subnet(..) => TypeName::Subnet,
            Literal::Port(..) => TypeName::Port,
            Literal::Duration(_) => TypeName::Duration,
            Literal::Time(_) => TypeName::Time,
            Literal::List(_) | Literal::Nil => return None,
        })
    }
}

/// A meta extractor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Meta {
    /// `#type`: the schema name (`zeek.conn`).
    Type,
    /// `#timestamp`: the event's `ts` field (as `:timestamp`).
    Timestamp,
    /// `#field`: a field name of the schema.
    Field,
    /// `#id`: the event's ID in the archive (a count, as `weir get` takes it).
    Id,
}

/// What a predicate reads from an event.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Extractor {
    /// A field by name: the full dotted name, a suffix at a dot, or schema-qualified.
    Field(String),
    /// Every field of a type.
    Type(TypeName),
    /// Facts about the event rather than its values.
    Meta(Meta),
}

impl fmt::Display for Extractor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Extractor::Field(name) => f.write_str(name),
            Extractor::Type(t) => f.write_str(t.as_str()),
            Extractor::Meta(Meta::Type) => f.write_str("#type"),
            Extractor::Meta(Meta::Timestamp) => f.write_str("#timestamp"),
            Extractor::Meta(Meta::Field) => f.write_str("#field"),
            Extractor::Meta(Meta::Id) => f.write_str("#id"),
        }
    }
}

/// One comparison: `extractor op value`.
#[derive(Debug, Clone)]
pub struct Predicate {
    /// Numbers the predicates of an expression in order (the type check reports by it).
    pub id: usize,
    /// What is compared.
    pub extractor: Extractor,
    /// How.
    pub op: Op,
    /// With what.
    pub value: Literal,
    /// Byte offset of the predicate in the expression.
    pub pos: usize,
    /// The predicate as written.
    pub text: String,
    /// Where the extractor is written (for a value predicate, the value).
    pub extractor_span: Range<usize>,
    /// Where the value is written.
    pub value_span: Range<usize>,
}

/// A parsed expression.
#[derive(Debug, Clone)]
pub enum Expr {
    /// All of them (`&&`).
    And(Vec<Expr>),
    /// Any of them (`||`).
    Or(Vec<Expr>),
    /// Not (`!`); gone after [`Expr::normalize`].
    Not(Box<Expr>),
    /// A comparison.
    Pred(Predicate),
}

impl Expr {
    /// The expression with negations pushed down to the predicates (negation normal form).
    pub fn normalize(self) -> Expr {
        self.push(false)
    }

    fn push(self, negate: bool) -> Expr {
        match self {
            Expr::Not(e) => e.push(!negate),
            Expr::And(v) => {
                let v = v.into_iter().map(|e| e.push(negate)).collect();
                if negate {
                    Expr::Or(v)
                } else {
                    Expr::And(v)
                }
            }
            Expr::Or(v) => {
                let v = v.into_iter().map(|e| e.push(negate)).collect();
                if negate {
                    Expr::And(v)
                } else {
                    Expr::Or(v)
                }
            }
            Expr::Pred(mut p) => {
                if negate {
                    p.op = p.op.negate();
                }
                Expr::Pred(p)
            }
        }
    }

    /// Every predicate, in order.
    pub fn predicates(&self) -> Vec<&Predicate> {
        let mut out = Vec::new();
        self.visit(&mut |p| out.push(p));
        out
    }

    fn visit<'a>(&'a self, f: &mut impl FnMut(&'a Predicate)) {
        match self {
            Expr::And(v) | Expr::Or(v) => v.iter().for_each(|e| e.visit(f)),
            Expr::Not(e) => e.visit(f),
            Expr::Pred(p) => f(p),
        }
    }
}

/// One element of a record literal: its concept (and where that is written) in a named
/// record, its value (`None`: `_`), where it is written.
struct Element {
    name: Option<(String, usize)>,
    value: Option<Literal>,
    span: Range<usize>,
}

/// One side of a predicate while parsing.
enum Operand {
    Ext(Extractor),
    Lit(Literal),
}

struct Parser<'a> {
    text: &'a str,
    toks: Vec<Token>,
    i: usize,
    now: i64,
    next_id: usize,
    /// Parentheses, negations and lists open around the current token.
    depth: usize,
}

/// Parses an expression. `now` (nanoseconds since the epoch) is the value of `now`.
pub fn parse(text: &str, now: i64) -> Result<Expr, ParseError> {
    let toks = lex(text)?;
    let mut p = Parser {
        text,
        toks,
        i: 0,
        now,
        next_id: 0,
        depth: 0,
    };
    if p.toks.is_empty() {
        return Err(p.error(0, "expected an expression"));
    }
    let e = p.disjunction()?;
    if let Some(t) = p.peek() {
        let pos = t.pos;
        let what = p.describe(pos);
        return Err(p.error(pos, format!("expected && or || or the end, found {what}")));
    }
    Ok(e)
}

impl Parser<'_> {
    fn error(&self, pos: usize, message: impl Into<String>) -> ParseError {
        ParseError::new(self.text, pos, message)
    }

    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.i)
    }

    fn peek_tok(&self) -> Option<&Tok> {
        self.peek().map(|t| &t.tok)
    }

    /// Where the next token is (the end of the text when there is none).
    fn here(&self) -> usize {
        self.peek().map_or(self.text.len(), |t| t.pos)
    }

    /// The token at `pos` as written, for messages.
    fn describe(&self, pos: usize) -> String {
        match self.toks.iter().find(|t| t.pos == pos) {
            Some(t) => format!("`{}`", &self.text[t.pos..t.end]),
            None => "the end".into(),
        }
    }

    fn found(&self) -> String {
        self.describe(self.here())
    }

    fn disjunction(&mut self) -> Result<Expr, ParseError> {
        let mut terms = vec![self.conjunction()?];
        while self.peek_tok() == Some(&Tok::Or) {
            self.i += 1;
            terms.push(self.conjunction()?);
        }
        Ok(if terms.len() == 1 {
            terms.remove(0)
        } else {
            Expr::Or(terms)
        })
    }

    fn conjunction(&mut self) -> Result<Expr, ParseError> {
        let mut terms = vec![self.unary()?];
        while self.peek_tok() == Some(&Tok::And) {
            self.i += 1;
            terms.push(self.unary()?);
        }
        Ok(if terms.len() == 1 {
            terms.remove(0)
        } else {
            Expr::And(terms)
        })
    }

    /// Enters one more level of nesting at the next token (see [`MAX_DEPTH`]).
    fn deeper(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let msg = format!(
                "nesting too deep: parentheses, negations (!) and lists nest at most {MAX_DEPTH} levels"
            );
            return Err(self.error(self.here(), msg));
        }
        Ok(())
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        if matches!(self.peek_tok(), Some(Tok::Not | Tok::Open)) {
            self.deeper()?;
            let e = self.nested();
            self.depth -= 1;
            return e;
        }
        self.predicate()
    }

    /// `!unary` or `(expr)`.
    fn nested(&mut self) -> Result<Expr, ParseError> {
        match self.peek_tok() {
            Some(Tok::Not) => {
                self.i += 1;
                Ok(Expr::Not(Box::new(self.unary()?)))
            }
            _ => {
                let open = self.here();
                self.i += 1;
                let e = self.disjunction()?;
                if self.peek_tok() != Some(&Tok::Close) {
                    let msg = format!(
                        "expected ) to close the ( at column {}, found {}",
                        self.text[..open].chars().count() + 1,
                        self.found()
                    );
                    return Err(self.error(self.here(), msg));
                }
                self.i += 1;
                Ok(e)
            }
        }
    }

    fn predicate(&mut self) -> Result<Expr, ParseError> {
        let start = self.here();
        let lhs = self.operand("a predicate (a field, type or meta extractor, or a value)")?;
        let lhs_end = self
            .toks
            .get(self.i.wrapping_sub(1))
            .map_or(start, |t| t.end);
        let op = match self.peek_tok() {
            Some(Tok::Op(op)) => Some(*op),
            _ => None,
        };
        let id = self.next_id;
        self.next_id += 1;
        let Some(op) = op else {
            // A value predicate.
            let end = self
                .toks
                .get(self.i.wrapping_sub(1))
                .map_or(start, |t| t.end);
            return match lhs {
                Operand::Lit(lit) => {
                    let Some(ty) = TypeName::of_literal(&lit) else {
                        return Err(self.error(
                            start,
                            "a list cannot stand alone: expected a predicate such as `field in [...]`",
                        ));
                    };
                    let op = if matches!(lit, Literal::Pattern(_)) {
                        Op::Match
                    } else {
                        Op::Eq
                    };
                    Ok(Expr::Pred(Predicate {
                        id,
                        extractor: Extractor::Type(ty),
                        op,
                        value: lit,
                        pos: start,
                        text: self.text[start..end].to_string(),
                        extractor_span: start..end,
                        value_span: start..end,
                    }))
                }
                Operand::Ext(ext) => {
                    let msg = format!(
                        "expected an operator (== != < <= > >= in !in ni !ni ~ !~) after `{ext}`, found {}",
                        self.found()
                    );
                    Err(self.error(self.here(), msg))
                }
            };
        };
        let op_pos = self.here();
        self.i += 1;
        let rhs_pos = self.here();
        if self.peek_tok() == Some(&Tok::Op(Op::Lt)) {
            let Operand::Ext(Extractor::Field(model)) = lhs else {
                return Err(self.error(
                    rhs_pos,
                    "a record literal (<...>) compares with a model such as net.connection",
                ));
            };
            if !matches!(op, Op::Eq | Op::Ne) {
                return Err(self.error(
                    op_pos,
                    format!("a model compares with a record literal by == or != only, not `{op}`"),
                ));
            }
            self.deeper()?;
            let e = self.model_predicate(&model, op, id, start..lhs_end);
            self.depth -= 1;
            return e;
        }
        let rhs = self.operand(&format!("a value or an extractor after `{op}`"))?;
        let end = self.toks.get(self.i - 1).map_or(self.text.len(), |t| t.end);
        let text = self.text[start..end].to_string();
        let (lhs_span, rhs_span) = (start..lhs_end, rhs_pos..end);
        let (extractor, op, value, extractor_span, value_span) = match (lhs, rhs) {
            (Operand::Ext(e), Operand::Lit(l)) => (e, op, l, lhs_span, rhs_span),
            (Operand::Lit(l), Operand::Ext(e)) => (e, op.flip(), l, rhs_span, lhs_span),
            (Operand::Ext(l), Operand::Ext(e)) => {
                // An unquoted word is a field name: `proto == tcp` meant the string.
                let hint = match &e {
                    Extractor::Field(word) => format!(
                        "; a string is quoted: `{l} {op} \"{}\"`",
                        word.replace('\\', "\\\\").replace('"', "\\\"")
                    ),
                    _ => String::new(),
                };
                return Err(self.error(
                    rhs_pos,
                    format!("expected a value to compare with, found the extractor `{e}` (extractors compare with values only){hint}"),
                ));
            }
            (Operand::Lit(_), Operand::Lit(_)) => {
                return Err(self.error(
                    op_pos,
                    format!("expected a field, type or meta extractor on one side of `{op}`"),
                ))
            }
        };
        Ok(Expr::Pred(Predicate {
            id,
            extractor,
            op,
            value,
            pos: start,
            text,
            extractor_span,
            value_span,
        }))
    }

    fn operand(&mut self, expected: &str) -> Result<Operand, ParseError> {
        let Some(t) = self.peek().cloned() else {
            return Err(self.error(
                self.text.len(),
                format!("expected {expected}, found the end"),
            ));
        };
        self.i += 1;
        match t.tok {
            Tok::Str(s) => Ok(Operand::Lit(Literal::String(s))),
            Tok::Pattern(p) => Pattern::new(&p)
                .map(|p| Operand::Lit(Literal::Pattern(p)))
                .map_err(|e| {
                    let first = e.lines().last().unwrap_or("").trim().to_string();
                    self.error(t.pos, format!("invalid pattern: {first}"))
                }),
            Tok::ListOpen => {
                self.i -= 1;
                self.deeper()?;
                self.i += 1;
                let l = self.list(t.pos).map(Operand::Lit);
                self.depth -= 1;
                l
            }
            Tok::Word(w) => self.word(&w, t.pos),
            _ => {
                self.i -= 1;
                Err(self.error(
                    t.pos,
                    format!("expected {expected}, found {}", self.found()),
                ))
            }
        }
    }

    /// The elements of a record literal, the next token being its `<`.
    fn record(&mut self, concepts: &Concepts) -> Result<Vec<Element>, ParseError> {
        let open = self.here();
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let Some(t) = self.peek().cloned() else {
                return Err(self.error(
                    self.text.len(),
                    "expected a value, _ or concept: value in the record, found the end",
                ));
            };
            let mut element = Element {
                name: None,
                value: None,
                span: t.pos..t.end,
            };
            match &t.tok {
                Tok::Word(w) if w == "_" => self.i += 1,
                Tok::Word(w)
                    if w.split_once(':')
                        .is_some_and(|(n, _)| concepts.concept(n).is_some()) =>
                {
                    let (name, rest) = w.split_once(':').unwrap_or((w, ""));
                    element.name = Some((name.to_string(), t.pos));
                    self.i += 1;
                    if rest == "_" {
                    } else if !rest.is_empty() {
                        let at = t.pos + name.len() + 1;
                        element.value = Some(self.element_word(rest, at)?);
                    } else if matches!(self.peek_tok(), Some(Tok::Word(w)) if w == "_") {
                        self.i += 1;
                    } else {
                        let at = self.here();
                        match self.operand("a value or _ after the concept's `:`")? {
                            Operand::Lit(l) => element.value = Some(l),
                            Operand::Ext(e) => {
                                return Err(self.error(
                                    at,
                                    format!(
                                        "expected a value in the record, found the extractor `{e}`"
                                    ),
                                ))
                            }
                        }
                    }
                }
                _ => {
                    let at = self.here();
                    match self.operand("a value, _ or concept: value in the record")? {
                        Operand::Lit(l) => element.value = Some(l),
                        Operand::Ext(Extractor::Field(f)) if f.contains(':') => {
                            let name = f.split(':').next().unwrap_or_default();
                            return Err(
                                self.error(at, format!("unknown concept `{name}` in the record"))
                            );
                        }
                        Operand::Ext(e) => {
                            return Err(self.error(
                                at,
                                format!(
                                    "expected a value in the record, found the extractor `{e}`"
                                ),
                            ))
                        }
                    }
                }
            }
            element.span.end = self.toks.get(self.i - 1).map_or(t.end, |t| t.end);
            out.push(element);
            match self.peek_tok() {
                Some(Tok::Comma) => self.i += 1,
                Some(Tok::Op(Op::Gt)) => {
                    self.i += 1;
                    return Ok(out);
                }
                _ => {
                    let msg = format!(
                        "expected , or > to continue the record opened at column {}, found {}",
                        self.text[..open].chars().count() + 1,
                        self.found()
                    );
                    return Err(self.error(self.here(), msg));
                }
            }
        }
    }

    /// The value of a `concept:value` element written in one word.
    fn element_word(&self, w: &str, pos: usize) -> Result<Literal, ParseError> {
        if let Some(l) = parse_word(w, self.now) {
            return Ok(l);
        }
        Err(self.error(
            pos,
            out_of_range(w).unwrap_or_else(|| format!("invalid value `{w}` in the record")),
        ))
    }

    /// `model op <...>` (the next token is the `<`) as predicates on its concepts: a value
    /// restricts its concept (`concept == value`); `_` and a concept a named record leaves out
    /// mean that the schema has a field of it (`#field == "concept"`). `==` is the
    /// conjunction of all; `!=` negates the conjunction of the values only (VAST).
    fn model_predicate(
        &mut self,
        model: &str,
        op: Op,
        first_id: usize,
        model_span: Range<usize>,
    ) -> Result<Expr, ParseError> {
        let concepts = super::concepts::active();
        let Some(m) = concepts.model(model) else {
            let known: Vec<&str> = concepts.models().map(|(n, _)| n).collect();
            return Err(self.error(
                model_span.start,
                format!(
                    "`{model}` is no model: a record literal (<...>) compares with a model ({})",
                    known.join(", ")
                ),
            ));
        };
        let definition = m.definition.clone();
        let open = self.here();
        let elements = self.record(&concepts)?;
        let end = self.toks.get(self.i - 1).map_or(self.text.len(), |t| t.end);
        let text = self.text[model_span.start..end].to_string();
        let named = elements.iter().filter(|e| e.name.is_some()).count();
        // Per concept of the model, its value (`None`: `_`) and where it is written.
        let values: Vec<(Option<Literal>, Range<usize>)> = if named == 0 {
            if elements.len() != definition.len() {
                return Err(self.error(
                    open,
                    format!(
                        "the record has {} values; the model {model} has {} concepts: {}",
                        elements.len(),
                        definition.len(),
                        definition.join(", ")
                    ),
                ));
            }
            elements.into_iter().map(|e| (e.value, e.span)).collect()
        } else {
            if let Some(e) = elements.iter().find(|e| e.name.is_none()) {
                return Err(self.error(
                    e.span.start,
                    "a record names all its values (concept: value) or none",
                ));
            }
            let mut values: Vec<(Option<Literal>, Range<usize>)> =
                definition.iter().map(|_| (None, open..open + 1)).collect();
            let mut seen: Vec<usize> = Vec::new();
            for e in elements {
                let Some((name, pos)) = e.name else { continue };
                let Some(k) = definition.iter().position(|c| *c == name) else {
                    return Err(self.error(
                        pos,
                        format!(
                            "concept `{name}` is not part of the model {model}: {}",
                            definition.join(", ")
                        ),
                    ));
                };
                if seen.contains(&k) {
                    return Err(self.error(pos, format!("concept `{name}` is named twice")));
                }
                seen.push(k);
                values[k] = (e.value, e.span);
            }
            values
        };
        let mut next_id = Some(first_id);
        let mut id = || {
            next_id.take().unwrap_or_else(|| {
                self.next_id += 1;
                self.next_id - 1
            })
        };
        let mut exists = Vec::new();
        let mut restricted = Vec::new();
        for (concept, (value, span)) in definition.iter().zip(values) {
            let (extractor, value, list) = match value {
                None => (
                    Extractor::Meta(Meta::Field),
                    Literal::String(concept.clone().into_bytes()),
                    &mut exists,
                ),
                Some(v) => (Extractor::Field(concept.clone()), v, &mut restricted),
            };
            list.push(Expr::Pred(Predicate {
                id: id(),
                extractor,
                op: Op::Eq,
                value,
                pos: model_span.start,
                text: text.clone(),
                extractor_span: model_span.clone(),
                value_span: span,
            }));
        }
        if !restricted.is_empty() {
            let values = if restricted.len() == 1 {
                restricted.remove(0)
            } else {
                Expr::And(restricted)
            };
            exists.push(if op == Op::Ne {
                Expr::Not(Box::new(values))
            } else {
                values
            });
        }
        Ok(if exists.len() == 1 {
            exists.remove(0)
        } else {
            Expr::And(exists)
        })
    }

    fn list(&mut self, open: usize) -> Result<Literal, ParseError> {
        let mut items = Vec::new();
        if self.peek_tok() == Some(&Tok::ListClose) {
            self.i += 1;
            return Ok(Literal::List(items.into()));
        }
        loop {
            let pos = self.here();
            match self.operand("a value in the list")? {
                Operand::Lit(l) => items.push(l),
                Operand::Ext(e) => {
                    return Err(self.error(
                        pos,
                        format!("expected a value in the list, found the extractor `{e}`"),
                    ))
                }
            }
            match self.peek_tok() {
                Some(Tok::Comma) => self.i += 1,
                Some(Tok::ListClose) => {
                    self.i += 1;
                    return Ok(Literal::List(items.into()));
                }
                _ => {
                    let msg = format!(
                        "expected , or ] to continue the list opened at column {}, found {}",
                        self.text[..open].chars().count() + 1,
                        self.found()
                    );
                    return Err(self.error(self.here(), msg));
                }
            }
        }
    }

    fn word(&mut self, w: &str, pos: usize) -> Result<Operand, ParseError> {
        if let Some(meta) = w.strip_prefix('#') {
            return match meta {
                "type" => Ok(Operand::Ext(Extractor::Meta(Meta::Type))),
                "timestamp" => Ok(Operand::Ext(Extractor::Meta(Meta::Timestamp))),
                "field" => Ok(Operand::Ext(Extractor::Meta(Meta::Field))),
                "id" => Ok(Operand::Ext(Extractor::Meta(Meta::Id))),
                _ => Err(self.error(
                    pos,
                    format!(
                        "unknown meta extractor `{w}`: expected #type, #timestamp, #field or #id"
                    ),
                )),
            };
        }
        if let Some(name) = w.strip_prefix(':') {
            if name.bytes().all(|c| c.is_ascii_alphabetic()) && !name.is_empty() {
                return match TypeName::parse(name) {
                    Some(t) => Ok(Operand::Ext(Extractor::Type(t))),
                    None => Err(self.error(
                        pos,
                        format!("unknown type `{w}`: expected :addr :subnet :count :int :real :string :bool :time :duration :port :enum :pattern or :timestamp"),
                    )),
                };
            }
        }
        // `now - 1d`, `now + 1h`.
        if w == "now" {
            if let (Some(Tok::Word(sign)), Some(Tok::Word(d))) = (
                self.toks.get(self.i).map(|t| &t.tok),
                self.toks.get(self.i + 1).map(|t| &t.tok),
            ) {
                if sign == "-" || sign == "+" {
                    let d_pos = self.toks[self.i + 1].pos;
                    let Some(d) = parse_duration(d) else {
                        if let Some(msg) = out_of_range(d) {
                            return Err(self.error(d_pos, msg));
                        }
                        return Err(self.error(
                            d_pos,
                            format!("expected a duration after `now {sign}` (e.g. 1d, 2h, 30min)"),
                        ));
                    };
                    self.i += 2;
                    let d = if sign == "-" {
                        d.checked_neg()
                    } else {
                        Some(d)
                    };
                    return d
                        .and_then(|d| self.now.checked_add(d))
                        .map(|t| Operand::Lit(Literal::Time(t)))
                        .ok_or_else(|| self.error(pos, "time out of range"));
                }
            }
        }
        if let Some(lit) = parse_word(w, self.now) {
            // `1d ago`.
            if let Literal::Duration(d) = lit {
                if matches!(self.peek_tok(), Some(Tok::Word(a)) if a == "ago") {
                    self.i += 1;
                    return self
                        .now
                        .checked_sub(d)
                        .map(|t| Operand::Lit(Literal::Time(t)))
                        .ok_or_else(|| self.error(pos, "time out of range"));
                }
            }
            return Ok(Operand::Lit(lit));
        }
        if let Some(msg) = out_of_range(w) {
            return Err(self.error(pos, msg));
        }
        let valid_field = w
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b':' | b'.'))
            && w.bytes()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
            && !w.ends_with('.')
            && !w.contains("..");
        if valid_field {
            return Ok(Operand::Ext(Extractor::Field(w.to_string())));
        }
        Err(self.error(
            pos,
            format!("invalid value or field name `{w}`: expected a field name (letters, digits, _ - : .), a number, address, subnet, port, duration or time"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> (usize, String) {
        let e = parse(text, 0).unwrap_err();
        (e.pos, e.message)
    }

    #[test]
    fn precedence_and_orientation() {
        let e = parse("a == 1 || b == 2 && !(c == 3)", 0).unwrap();
        let Expr::Or(v) = &e else { panic!("{e:?}") };
        assert!(matches!(&v[1], Expr::And(w) if w.len() == 2));
        let e = parse("\"zeek\" in #type", 0).unwrap();
        let Expr::Pred(p) = e else { panic!() };
        assert_eq!(p.op, Op::Ni);
        assert_eq!(p.extractor, Extractor::Meta(Meta::Type));
        let e = parse("5 < x", 0).unwrap();
        let Expr::Pred(p) = e else { panic!() };
        assert_eq!(p.op, Op::Gt);
    }

    #[test]
    fn negation_is_pushed_down() {
        let e = parse("!(a == 1 && b in [1, 2])", 0).unwrap().normalize();
        let Expr::Or(v) = &e else { panic!("{e:?}") };
        let ops: Vec<Op> = v
            .iter()
            .map(|e| match e {
                Expr::Pred(p) => p.op,
                _ => panic!(),
            })
            .collect();
        assert_eq!(ops, [Op::Ne, Op::NotIn]);
    }

    #[test]
    fn value_predicates_and_relative_times() {
        let Expr::Pred(p) = parse("10.0.0.1", 0).unwrap() else {
            panic!()
        };
        assert_eq!(p.extractor, Extractor::Type(TypeName::Addr));
        let Expr::Pred(p) = parse("ts > now - 1d", 100 * 86_400_000_000_000).unwrap() else {
            panic!()
        };
        assert!(matches!(p.value, Literal::Time(t) if t == 99 * 86_400_000_000_000));
        let Expr::Pred(p) = parse("ts > 1h ago", 3_600_000_000_000).unwrap() else {
            panic!()
        };
        assert!(matches!(p.value, Literal::Time(0)));
    }

    /// Nesting up to [`MAX_DEPTH`] parses, normalizes and drops on a test thread's stack;
    /// one level more is an error at the token that goes too deep.
    #[test]
    fn nesting_is_bounded() {
        let d = MAX_DEPTH;
        let parens = format!("{}x == 1{}", "(".repeat(d), ")".repeat(d));
        let nots = format!("{}x == 1", "!".repeat(d));
        let mixed = format!("{}x == 1{}", "!(".repeat(d / 2), ")".repeat(d / 2));
        let lists = format!("x in {}1{}", "[".repeat(d), "]".repeat(d));
        for ok in [&parens, &nots, &mixed, &lists] {
            let e = parse(ok, 0).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(e.normalize().predicates().len(), 1);
        }
        let deeper = [
            (
                format!("{}x == 1{}", "(".repeat(d + 1), ")".repeat(d + 1)),
                d,
            ),
            (format!("{}x == 1", "!".repeat(20_000)), d),
            (format!("a == 1 && {}x == 1", "!(".repeat(d)), 9 + d + 1),
            (
                format!("x in {}1{}", "[".repeat(d + 1), "]".repeat(d + 1)),
                5 + d,
            ),
        ];
        for (text, pos) in deeper {
            let e = parse(&text, 0).unwrap_err();
            assert_eq!(e.pos, pos, "{}", e.message);
            assert!(e.message.contains("nesting too deep"), "{}", e.message);
        }
    }

    #[test]
    fn spans_locate_extractor_and_value() {
        for (text, ext, val) in [
            ("duration > 600", "duration", "600"),
            ("600 < duration", "duration", "600"),
            ("#type in [\"a\", \"b\"]", "#type", "[\"a\", \"b\"]"),
            ("10.0.0.1", "10.0.0.1", "10.0.0.1"),
        ] {
            let Expr::Pred(p) = parse(text, 0).unwrap() else {
                panic!()
            };
            assert_eq!(&text[p.extractor_span.clone()], ext, "{text}");
            assert_eq!(&text[p.value_span.clone()], val, "{text}");
        }
    }

    #[test]
    fn out_of_range_literals_say_so_at_their_position() {
        for (text, pos) in [
            ("ts > 2263-01-01", 5),
            ("x == 18446744073709551616", 5),
            ("x == -9223372036854775809", 5),
            ("resp_p == 70000/tcp", 10),
            ("duration > 106752d", 11),
            ("ts > now - 106752d", 11),
            ("ts > now-106752d", 5),
            ("ts < @99999999999", 5),
            ("x == 1e400", 5),
            ("net == 10.0.0.0/33", 7),
        ] {
            let e = parse(text, 0).unwrap_err();
            assert_eq!(e.pos, pos, "{text}: {}", e.message);
            assert!(e.message.contains("out of range"), "{text}: {}", e.message);
        }
        // The edges still parse.
        for text in [
            "ts > 2262-04-11",
            "x == 18446744073709551615",
            "x == -9223372036854775808",
            "resp_p == 65535/tcp",
            "duration > 106751d",
        ] {
            parse(text, 0).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    #[test]
    fn errors_point_at_the_problem() {
        assert_eq!(err("ts == ").0, 6);
        assert_eq!(err("(a == 1").0, 7);
        assert_eq!(err("a == 1 b").0, 7);
        assert_eq!(err("a 1").0, 2);
        assert_eq!(err("#nope == 1").0, 0);
        assert_eq!(err("x == \"abc").0, 5);
        assert_eq!(err("x ~ /(/").0, 4);
        assert_eq!(err("1 == 2").0, 2);
        assert_eq!(err("a == b").0, 5);
        assert_eq!(err("x in [1, 2").0, 10);
        assert_eq!(err("").0, 0);
        assert_eq!(err("a == 1 &&").0, 9);
        let e = parse("ts == && x", 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "expected a value or an extractor after `==`, found `&&` at column 7\n  ts == && x\n        ^"
        );
    }
}
