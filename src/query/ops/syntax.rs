//! The text of a chain: `EXPR | OP ARGS | OP ARGS ...`, cut at each `|` that is not part of
//! `||`, a `"string"` or a `/pattern/` (the expression lexer's rules), then each part parsed
//! into an [`OpSpec`]. A chain may start with an operator (`top id.resp_p`); a first part
//! that does not start with an operator's name is an expression (`where` implied).

use super::super::error::ExprError;
use super::super::literal::parse_duration;

/// Words that start an operator.
pub(crate) const OPERATORS: &[&str] = &[
    "where",
    "select",
    "drop",
    "sort",
    "head",
    "tail",
    "summarize",
    "top",
    "rare",
];

/// `head` and `tail` without a number, and `top`/`rare` without one.
pub const DEFAULT_LIMIT: u64 = 10;

/// One aggregation of `summarize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggSpec {
    /// The output field's name: `name=` if given, else the call as written
    /// (`count()`, `sum(orig_bytes)`).
    pub name: String,
    pub func: AggFunc,
    /// The field read (`None` for `count()`).
    pub field: Option<String>,
    /// Byte offset of the field in the whole chain.
    pub field_pos: usize,
    /// Byte offset of the call in the whole chain.
    pub pos: usize,
}

/// The aggregation functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    /// `count()`: events; `count(F)`: events where F is set.
    Count,
    CountDistinct,
    Sum,
    Min,
    Max,
    Mean,
    Distinct,
}

impl AggFunc {
    fn parse(name: &str) -> Option<AggFunc> {
        Some(match name {
            "count" => AggFunc::Count,
            "count_distinct" => AggFunc::CountDistinct,
            "sum" => AggFunc::Sum,
            "min" => AggFunc::Min,
            "max" => AggFunc::Max,
            "mean" => AggFunc::Mean,
            "distinct" => AggFunc::Distinct,
            _ => return None,
        })
    }
}

/// A field named in an operator, with its position for errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSpec {
    pub name: String,
    pub pos: usize,
}

/// One operator as written.
#[derive(Debug, Clone, PartialEq)]
pub enum OpSpec {
    /// `where EXPR` (or a leading expression): the text and where it starts in the chain.
    Where {
        text: String,
        pos: usize,
    },
    Select(Vec<FieldSpec>),
    Drop(Vec<FieldSpec>),
    /// Keys with `true` for descending.
    Sort(Vec<(FieldSpec, bool)>),
    Head(u64),
    Tail(u64),
    Summarize {
        aggs: Vec<AggSpec>,
        by: Vec<FieldSpec>,
        /// Nanoseconds: time values of the `by` fields are rounded down to a multiple.
        resolution: Option<i64>,
    },
    /// `top F [N]` (`rare`: `descending` false).
    Top {
        field: FieldSpec,
        limit: u64,
        descending: bool,
    },
}

/// Parses the expression of a `where` at byte `pos` of the chain `whole`; errors point into
/// the whole chain.
pub(crate) fn parse_where(
    whole: &str,
    text: &str,
    pos: usize,
) -> Result<crate::query::Query, ExprError> {
    crate::query::Query::parse(text.trim()).map_err(|e| {
        let lead = text.len() - text.trim_start().len();
        ExprError::new(whole, pos + lead + e.pos, e.message)
    })
}

/// The most characters of an operator in an error ([`OpSpec::describe`]).
const DESCRIBE_CHARS: usize = 100;

impl OpSpec {
    /// The operator as the errors name it: its name and arguments (`sort history desc`,
    /// `summarize distinct(uid) by id.orig_h`, `top id.resp_p`), cut after
    /// [`DESCRIBE_CHARS`] characters.
    pub(crate) fn describe(&self) -> String {
        let whole = self.describe_whole();
        match whole.char_indices().nth(DESCRIBE_CHARS) {
            Some((at, _)) => format!("{}...", &whole[..at]),
            None => whole,
        }
    }

    fn describe_whole(&self) -> String {
        let names = |f: &[FieldSpec]| {
            f.iter()
                .map(|f| f.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            OpSpec::Where { text, .. } => format!("where {}", text.trim()),
            OpSpec::Select(f) => format!("select {}", names(f)),
            OpSpec::Drop(f) => format!("drop {}", names(f)),
            OpSpec::Sort(keys) => {
                let keys: Vec<String> = keys
                    .iter()
                    .map(|(f, desc)| match desc {
                        true => format!("{} desc", f.name),
                        false => f.name.clone(),
                    })
                    .collect();
                format!("sort {}", keys.join(", "))
            }
            OpSpec::Head(n) => format!("head {n}"),
            OpSpec::Tail(n) => format!("tail {n}"),
            OpSpec::Summarize { aggs, by, .. } => {
                let aggs: Vec<&str> = aggs.iter().map(|a| a.name.as_str()).collect();
                match by.is_empty() {
                    true => format!("summarize {}", aggs.join(", ")),
                    false => format!("summarize {} by {}", aggs.join(", "), names(by)),
                }
            }
            OpSpec::Top {
                field, descending, ..
            } => format!(
                "{} {}",
                if *descending { "top" } else { "rare" },
                field.name
            ),
        }
    }
}

/// Cuts `text` at its operator bars: each part's text and byte offset.
pub(crate) fn split(text: &str) -> Result<Vec<(&str, usize)>, ExprError> {
    let b = text.as_bytes();
    let mut parts = Vec::new();
    let mut start = 0;
    let mut i = 0;
    // Whether the last byte seen belongs to a word (a `/` inside a word is no pattern).
    let mut in_word = false;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' | b'/' if c == b'"' || !in_word => {
                let what = if c == b'"' {
                    "unterminated string: expected a closing \""
                } else {
                    "unterminated pattern: expected a closing /"
                };
                i = closing(b, i, c).ok_or_else(|| ExprError::new(text, i, what))? + 1;
                in_word = false;
                continue;
            }
            b'|' if b.get(i + 1) == Some(&b'|') => {
                i += 2;
                in_word = false;
                continue;
            }
            b'|' => {
                parts.push((&text[start..i], start));
                start = i + 1;
            }
            _ => {}
        }
        in_word = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'_' | b'-' | b':' | b'.' | b'/' | b'+' | b'@' | b'?' | b'#'
            );
        i += 1;
    }
    parts.push((&text[start..], start));
    Ok(parts)
}

/// The position of the `close` byte that ends the string or pattern opened at `open`
/// (a backslash escapes the byte after it); `None` when there is none.
fn closing(b: &[u8], open: usize, close: u8) -> Option<usize> {
    let mut j = open + 1;
    loop {
        match *b.get(j)? {
            b'\\' => j += 2,
            c if c == close => return Some(j),
            _ => j += 1,
        }
    }
}

/// Whether `part` starts with an operator's name (followed by the end, a space, or `(` for
/// none of them): `top id.resp_p` does, `top == 5` (a field named `top`) does not.
pub(crate) fn starts_with_operator(part: &str) -> bool {
    let t = part.trim_start();
    let word: &str = t
        .split(|c: char| c.is_whitespace())
        .next()
        .unwrap_or_default();
    if !OPERATORS.contains(&word) {
        return false;
    }
    let rest = t[word.len()..].trim_start();
    !(rest.starts_with("==")
        || rest.starts_with("!=")
        || rest.starts_with('<')
        || rest.starts_with('>')
        || rest.starts_with('~')
        || rest.starts_with("!~")
        || rest.starts_with("in ")
        || rest.starts_with("!in")
        || rest.starts_with("ni ")
        || rest.starts_with("!ni"))
}

/// Whether `text` is a chain with operators (rather than a plain expression).
pub fn is_chain(text: &str) -> bool {
    match split(text) {
        Ok(parts) => parts.len() > 1 || starts_with_operator(text),
        Err(_) => false,
    }
}

/// A token of an operator's arguments.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Open,
    Close,
    Comma,
    Assign,
}

fn is_word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b':' | b'.' | b'@' | b'#' | b'+')
}

/// The tokens of an operator's arguments (`at`: the part's offset in `whole`).
fn tokens(whole: &str, part: &str, at: usize) -> Result<Vec<(Tok, usize)>, ExprError> {
    let b = part.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let pos = at + i;
        match c {
            c if c.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            b'(' => out.push((Tok::Open, pos)),
            b')' => out.push((Tok::Close, pos)),
            b',' => out.push((Tok::Comma, pos)),
            b'=' => out.push((Tok::Assign, pos)),
            c if is_word_char(c) => {
                let n = b[i..].iter().take_while(|&&c| is_word_char(c)).count();
                out.push((Tok::Word(part[i..i + n].to_string()), pos));
                i += n;
                continue;
            }
            _ => {
                let ch = part[i..].chars().next().unwrap_or('?');
                return Err(ExprError::new(
                    whole,
                    pos,
                    format!("unexpected character {ch:?} in the operator's arguments"),
                ));
            }
        }
        i += 1;
    }
    Ok(out)
}

/// Parses one operator part (`part` at byte `at` of `whole`).
pub(crate) fn parse_op(whole: &str, part: &str, at: usize) -> Result<OpSpec, ExprError> {
    let lead = part.len() - part.trim_start().len();
    let t = part.trim_start();
    let name_len = t.find(|c: char| c.is_whitespace()).unwrap_or(t.len());
    let name = &t[..name_len];
    let rest_at = at + lead + name_len;
    let rest = &t[name_len..];
    let err = |pos: usize, msg: String| ExprError::new(whole, pos, msg);
    if name == "where" {
        if rest.trim().is_empty() {
            return Err(err(rest_at, "`where` needs an expression".into()));
        }
        return Ok(OpSpec::Where {
            text: rest.to_string(),
            pos: rest_at,
        });
    }
    let toks = tokens(whole, rest, rest_at)?;
    let end = at + part.trim_end().len();
    let mut p = Args {
        whole,
        toks,
        i: 0,
        end,
    };
    let op = match name {
        "select" | "drop" => {
            let fields = p.field_list(name)?;
            if name == "select" {
                OpSpec::Select(fields)
            } else {
                OpSpec::Drop(fields)
            }
        }
        "sort" => {
            let mut keys = Vec::new();
            loop {
                let f = p.field(name)?;
                let desc = match p.peek_word() {
                    Some("desc") => {
                        p.i += 1;
                        true
                    }
                    Some("asc") => {
                        p.i += 1;
                        false
                    }
                    _ => false,
                };
                keys.push((f, desc));
                if !p.comma() {
                    break;
                }
            }
            OpSpec::Sort(keys)
        }
        "head" | "tail" => {
            let n = p.optional_count()?.unwrap_or(DEFAULT_LIMIT);
            if name == "head" {
                OpSpec::Head(n)
            } else {
                OpSpec::Tail(n)
            }
        }
        "top" | "rare" => {
            let field = p.field(name)?;
            let limit = p.optional_count()?.unwrap_or(DEFAULT_LIMIT);
            OpSpec::Top {
                field,
                limit,
                descending: name == "top",
            }
        }
        "summarize" => p.summarize()?,
        _ => {
            return Err(err(
                at + lead,
                format!(
                    "unknown operator `{name}`; the operators are {}",
                    OPERATORS.join(", ")
                ),
            ))
        }
    };
    if let Some((_, pos)) = p.toks.get(p.i) {
        return Err(err(
            *pos,
            format!("unexpected input after `{name}`'s arguments"),
        ));
    }
    Ok(op)
}

/// A cursor over an operator's argument tokens.
struct Args<'a> {
    whole: &'a str,
    toks: Vec<(Tok, usize)>,
    i: usize,
    /// Where the part ends (for "expected ... at the end").
    end: usize,
}

impl Args<'_> {
    fn pos(&self) -> usize {
        self.toks.get(self.i).map_or(self.end, |t| t.1)
    }

    fn err(&self, msg: String) -> ExprError {
        ExprError::new(self.whole, self.pos(), msg)
    }

    fn peek_word(&self) -> Option<&str> {
        match self.toks.get(self.i) {
            Some((Tok::Word(w), _)) => Some(w),
            _ => None,
        }
    }

    fn comma(&mut self) -> bool {
        if matches!(self.toks.get(self.i), Some((Tok::Comma, _))) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// A field name: a word, or a word with a call after it (`count()`, `sum(orig_bytes)`):
    /// the name of an aggregation's field in a `summarize`'s output, as written there.
    fn field(&mut self, op: &str) -> Result<FieldSpec, ExprError> {
        match self.toks.get(self.i) {
            Some((Tok::Word(w), pos)) => {
                let mut f = FieldSpec {
                    name: w.clone(),
                    pos: *pos,
                };
                self.i += 1;
                if let Some(arg) = self.call_argument() {
                    f.name = format!("{}({arg})", f.name);
                }
                Ok(f)
            }
            _ => Err(self.err(format!("`{op}` expects a field name here"))),
        }
    }

    /// After a word: `()` or `(WORD)`, consumed, with the word inside (empty for `()`).
    fn call_argument(&mut self) -> Option<String> {
        if !matches!(self.toks.get(self.i), Some((Tok::Open, _))) {
            return None;
        }
        match (self.toks.get(self.i + 1), self.toks.get(self.i + 2)) {
            (Some((Tok::Close, _)), _) => {
                self.i += 2;
                Some(String::new())
            }
            (Some((Tok::Word(w), _)), Some((Tok::Close, _))) => {
                let w = w.clone();
                self.i += 3;
                Some(w)
            }
            _ => None,
        }
    }

    fn field_list(&mut self, op: &str) -> Result<Vec<FieldSpec>, ExprError> {
        let mut out = vec![self.field(op)?];
        while self.comma() {
            out.push(self.field(op)?);
        }
        Ok(out)
    }

    fn optional_count(&mut self) -> Result<Option<u64>, ExprError> {
        let Some(w) = self.peek_word() else {
            return Ok(None);
        };
        match w.parse::<u64>() {
            Ok(n) => {
                self.i += 1;
                Ok(Some(n))
            }
            Err(_) => Err(self.err(format!("expected a number of events, found `{w}`"))),
        }
    }

    fn summarize(&mut self) -> Result<OpSpec, ExprError> {
        let mut aggs = Vec::new();
        loop {
            if self.peek_word() == Some("by") || self.i >= self.toks.len() {
                break;
            }
            aggs.push(self.aggregation()?);
            if !self.comma() {
                break;
            }
        }
        if aggs.is_empty() {
            return Err(self.err(
                "`summarize` expects an aggregation, e.g. `count()` or `sum(orig_bytes)`".into(),
            ));
        }
        let mut by = Vec::new();
        let mut resolution = None;
        if self.peek_word() == Some("by") {
            self.i += 1;
            by = self.field_list("summarize ... by")?;
            if self.peek_word() == Some("resolution") {
                self.i += 1;
                let pos = self.pos();
                let word = self.peek_word().map(str::to_string);
                let ns = word.as_deref().and_then(parse_duration).filter(|&d| d > 0);
                match ns {
                    Some(d) => {
                        self.i += 1;
                        resolution = Some(d);
                    }
                    None => {
                        return Err(ExprError::new(
                            self.whole,
                            pos,
                            "`resolution` expects a positive duration, e.g. `1h`",
                        ))
                    }
                }
            }
        }
        Ok(OpSpec::Summarize {
            aggs,
            by,
            resolution,
        })
    }

    fn aggregation(&mut self) -> Result<AggSpec, ExprError> {
        let start = self.pos();
        let mut name = None;
        if let (Some((Tok::Word(w), _)), Some((Tok::Assign, _))) =
            (self.toks.get(self.i), self.toks.get(self.i + 1))
        {
            name = Some(w.clone());
            self.i += 2;
        }
        let fpos = self.pos();
        let Some(fname) = self.peek_word().map(str::to_string) else {
            return Err(self.err("expected an aggregation such as `count()`".into()));
        };
        let Some(func) = AggFunc::parse(&fname) else {
            return Err(ExprError::new(
                self.whole,
                fpos,
                format!(
                    "unknown aggregation `{fname}`; the aggregations are count, count_distinct, sum, min, max, mean, distinct"
                ),
            ));
        };
        self.i += 1;
        if !matches!(self.toks.get(self.i), Some((Tok::Open, _))) {
            return Err(self.err(format!("expected `(` after `{fname}`")));
        }
        self.i += 1;
        let field_pos = self.pos();
        let field = match self.toks.get(self.i) {
            Some((Tok::Close, _)) => None,
            _ => Some(self.field(&fname)?),
        };
        if !matches!(self.toks.get(self.i), Some((Tok::Close, _))) {
            return Err(self.err(format!("expected `)` to close `{fname}(`")));
        }
        self.i += 1;
        if field.is_none() && func != AggFunc::Count {
            return Err(ExprError::new(
                self.whole,
                fpos,
                format!("`{fname}()` needs a field, e.g. `{fname}(orig_bytes)`"),
            ));
        }
        let call = format!(
            "{fname}({})",
            field.as_ref().map_or("", |f| f.name.as_str())
        );
        Ok(AggSpec {
            name: name.unwrap_or(call),
            func,
            field: field.map(|f| f.name),
            field_pos,
            pos: start,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(t: &str) -> Vec<&str> {
        split(t).unwrap().into_iter().map(|p| p.0).collect()
    }

    #[test]
    fn bars_split_outside_strings_patterns_and_or() {
        assert_eq!(
            parts("a == 1 || b == 2 | head"),
            ["a == 1 || b == 2 ", " head"]
        );
        assert_eq!(parts(r#"x == "a|b" | head"#), [r#"x == "a|b" "#, " head"]);
        assert_eq!(
            parts(r#"x == "a\"|b" | head"#),
            [r#"x == "a\"|b" "#, " head"]
        );
        assert_eq!(parts("x ~ /a|b/ | head"), ["x ~ /a|b/ ", " head"]);
        assert_eq!(
            parts("x in 10.0.0.0/8 | head"),
            ["x in 10.0.0.0/8 ", " head"]
        );
        assert_eq!(parts("top x"), ["top x"]);
    }

    #[test]
    fn operators_are_told_from_fields() {
        assert!(starts_with_operator("top id.resp_p"));
        assert!(starts_with_operator(" head"));
        assert!(!starts_with_operator("top == 5"));
        assert!(!starts_with_operator("id.resp_p == 53"));
        assert!(is_chain("x == 1 | head"));
        assert!(!is_chain("x == 1 || y == 2"));
    }

    #[test]
    fn summarize_parses_names_by_and_resolution() {
        let t = "summarize n=count(), sum(orig_bytes) by ts, id.orig_h resolution 1h";
        let op = parse_op(t, t, 0).unwrap();
        let OpSpec::Summarize {
            aggs,
            by,
            resolution,
        } = op
        else {
            panic!("{op:?}")
        };
        assert_eq!(aggs[0].name, "n");
        assert_eq!(aggs[1].name, "sum(orig_bytes)");
        assert_eq!(aggs[1].field.as_deref(), Some("orig_bytes"));
        assert_eq!(by.len(), 2);
        assert_eq!(resolution, Some(3_600_000_000_000));
    }

    #[test]
    fn aggregation_names_are_field_names() {
        let t = "sort count() desc, sum(orig_bytes)";
        let OpSpec::Sort(keys) = parse_op(t, t, 0).unwrap() else {
            panic!()
        };
        let names: Vec<_> = keys.iter().map(|(f, d)| (f.name.as_str(), *d)).collect();
        assert_eq!(names, [("count()", true), ("sum(orig_bytes)", false)]);
        let t = "select id.orig_h, count()";
        assert!(matches!(parse_op(t, t, 0).unwrap(), OpSpec::Select(f) if f[1].name == "count()"));
        let t = "sort count(a, b)";
        let e = parse_op(t, t, 0).unwrap_err();
        assert_eq!(&t[e.pos..], "(a, b)");
    }

    #[test]
    fn errors_point_at_the_problem() {
        let t = "x == 1 | sort ts frob";
        let (p, at) = split(t).unwrap()[1];
        let e = parse_op(t, p, at).unwrap_err();
        assert_eq!(&t[e.pos..], "frob");
        let t = "summarize avg(x)";
        let e = parse_op(t, t, 0).unwrap_err();
        assert_eq!(&t[e.pos..], "avg(x)");
        let t = "head ten";
        let e = parse_op(t, t, 0).unwrap_err();
        assert_eq!(&t[e.pos..], "ten");
        let t = "sum(x)";
        assert!(parse_op(t, t, 0).is_err());
    }
}
