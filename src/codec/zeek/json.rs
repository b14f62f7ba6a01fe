//! The Zeek JSON reader: one JSON object per line, as Zeek writes with `LogAscii::use_json=T`.
//!
//! [`JsonDecoder`] is a synchronous push decoder in the shape of tokio-util's [`Decoder`]: feed
//! it bytes in any chunks; it consumes complete lines and emits [`Batch`]es. The output is the
//! same events, in the same schemas, whatever the chunking of the input (with one documented
//! exception for typed logs, below: which rows get a schema widened mid-log).
//!
//! # Emission contract (the same as the TSV reader's)
//! `decode` consumes complete lines and returns `Some(batch)` when `batch_rows` events are
//! pending, when a line's schema differs from the pending events' schema (the pending events are
//! emitted, the line starts the next batch), or when no complete line remains in the buffer and
//! events are pending; otherwise `None`. `decode_eof` also reads a last line without newline.
//!
//! # Typed logs
//! A line of a log that a Zeek log schema describes ([`crate::codec::zeek::schema`]: `_path`
//! names the log; without `_path`, [`ReaderOptions::json_schema`], else the input's file
//! name) is read in that schema, not by inference:
//!
//! - the schema's fields come first, in its order; a field the line omits (Zeek leaves out
//!   unset fields) is unset, so every line of the log has the same schema whatever keys it
//!   has, and a log is one batch stream;
//! - each value is converted to its field's type: numbers of seconds (exponent and sign
//!   allowed, exact to the nanosecond) or RFC 3339 strings for `time`, numbers of seconds for
//!   `interval`, integer numbers for `count`, `int` and `port` (up to 65535), any address
//!   text for `addr`, arrays for `set`/`vector`/`table`; a string field takes a number or
//!   boolean as its text. A value that does not convert is a [`ParseError`] naming the line,
//!   the field and the value (`field id.orig_p: invalid port value "http"`);
//! - fields the schema does not know are kept after the schema's, typed by inference (below)
//!   in order of first appearance. One that first appears mid-log widens the log's schema:
//!   the rows still pending are widened with it (unset there); rows already emitted keep
//!   the narrower schema, so for such a log where batches were cut (chunking, batch size)
//!   decides which early rows have which of the two schemas, never their values. One whose
//!   inferred type changes starts a schema with the new type. A batch is widened at most 32
//!   times (then cut), and a log keeps at most 1024 unknown fields (then they start over),
//!   so that a log with ever new keys costs bounded time and memory.
//!
//! # Schemas
//! Without a typed log, a line's schema is named `zeek.<_path>` when the object has a top-level string `_path`, else
//! [`ReaderOptions::json_default_schema`]. `_path` itself is not a field. Every other key is a
//! field, in the order of the line; nested objects are flattened with dots (`{"id":{"orig_h":..}}`
//! is the field `id.orig_h`). Underscored keys such as `_write_ts` or `_system_name` are ordinary
//! fields. A new schema starts whenever the names, their order, or the inferred types change;
//! schemas seen before are shared (the same [`SchemaRef`]), so interleaved log types do not
//! multiply schemas. With [`JsonDecoder::absent_as_unset`], a line whose keys are a subsequence
//! of a recent schema's (Zeek omits unset fields) is read in that schema instead.
//!
//! # Type inference
//! | JSON | type |
//! |---|---|
//! | `true`/`false` | `bool` |
//! | integer (no `.`, no exponent) | `count` if non-negative, else `int`; beyond 64 bits `double` |
//! | other number | `double` |
//! | number in a field named `ts`, ending in `_ts` or `.ts` | `time`, exact nanoseconds from the number's decimal text (`1258531221.486539` is exactly `1258531221486539000` ns) |
//! | number in a field Zeek's logs type `interval` (`duration`, `rtt`, `suppress_for`, ...: [`number_kind`]) | `interval`, seconds, exact nanoseconds as for `time` |
//! | integer from 0 to 65535 in a field Zeek's logs type `port` (`id.orig_p`, `id.resp_p`, `p`, and any name ending in `_p`: [`number_kind`]) | `port` (a larger or negative integer: as above) |
//! | string holding an IP address in canonical form (`10.0.0.1`, `2001:db8::1`) | `addr` |
//! | string holding a subnet in canonical form (`10.0.0.0/8`) | `subnet` |
//! | string holding an RFC 3339 timestamp (`2020-02-26T03:40:03.724911Z`, offsets allowed) | `time` |
//! | the string `"NaN"`, `"Infinity"` or `"-Infinity"` (how weir's JSON writer spells the doubles JSON has no number for) | `double` |
//! | other string | `string` |
//! | array | `vector[T]`, `T` inferred from the non-null elements: all of one type, or `count` mixed with `int` (`int`), or numbers mixed with doubles (`double`); anything else, and nested arrays or objects, `vector[string]` of the elements' JSON text |
//! | `null` | unset |
//!
//! Like an address in a string field, a string field whose text is exactly `NaN`, `Infinity`
//! or `-Infinity` reads back as a double: inference goes by the text alone.
//! Addresses must be in canonical form (the form weir writes back) so that converting to JSON
//! reproduces the text; `2001:0db8::1` stays a string. A field that is `null`, or an array that
//! is empty or all `null`, has no type of its own: the line fits the pending schema, else one of
//! the last 16 schemas used, whatever that schema's type for the field (so an occasional `null`
//! does not start a new schema); in a new schema it takes the type of the field of that name in
//! the pending schema when there is one, else `string` (`vector[string]` for arrays). String escapes are decoded (`\n`,
//! `\u00e9`, surrogate pairs); the `\xHH` text Zeek writes for non-UTF-8 bytes is kept as text.
//!
//! # Errors
//! Under [`OnError::Fail`] (the default) the events before a bad line are emitted first, then
//! the error. A line that is not valid JSON, not an object, has a non-string `_path`, a key twice (after
//! flattening), or nesting deeper than 64 levels is a [`ParseError`] naming the source and line.
//! Under [`OnError::Skip`] the line is dropped and counted ([`JsonDecoder::skip_report`]). A line
//! longer than [`ReaderOptions::max_line_len`] (counting a `\r` before the newline) is an error
//! too, detected without buffering more than that many bytes; under skip, the rest of the line
//! is discarded as it arrives. Empty and whitespace-only lines are ignored, and so is a UTF-8
//! byte order mark before the first line.
//!
//! [`Decoder`]: tokio_util::codec::Decoder

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

use crate::batch::{Batch, BatchBuilder};
use crate::codec::suricata;
use crate::codec::zeek::scalar::{
    parse_addr, parse_canonical_addr, parse_canonical_subnet, parse_f64, parse_i64, parse_json_ns,
    parse_rfc3339, parse_subnet, parse_time_text, parse_u64,
};
use crate::codec::zeek::schema::{number_kind, LogSchema, NumberKind};
use crate::codec::ReaderOptions;
use crate::error::{quote, OnError, ParseError, ReadError, SkipReport};
use crate::types::{Field, Schema, SchemaRef, Type};
use crate::value::{RowEncoder, Value, ValueOf};

/// Deepest accepted nesting of objects and arrays.
const MAX_DEPTH: usize = 64;
/// Schemas compared with a line before the cache is consulted (interleaved log types).
const RECENT_SCHEMAS: usize = 16;
/// Schemas remembered for sharing; the cache is emptied when it grows past this.
const MAX_CACHED_SCHEMAS: usize = 4096;

/// A byte range in one of the parser's buffers.
#[derive(Debug, Clone, Copy, Default)]
struct Span {
    start: usize,
    end: usize,
}

impl Span {
    fn of(self, buf: &[u8]) -> &[u8] {
        &buf[self.start..self.end]
    }
}

/// A JSON scalar as written.
#[derive(Debug, Clone, Copy)]
enum Raw {
    Null,
    Bool(bool),
    /// Number text, in the line.
    Num(Span),
    /// Decoded string, in `Parsed::strs`.
    Str(Span),
    /// A nested array or object inside an array: its JSON text, in the line.
    Json(Span),
}

/// A scalar's inferred value. Strings (and nested JSON inside an array, kept as its text) are
/// `String(())`: their bytes stay where `Item::raw` points. Inference makes no lists; it makes
/// intervals and ports only in the fields Zeek's conventions name so ([`number_kind`]).
type Inferred = ValueOf<()>;

/// Scalar types inference produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sk {
    Bool,
    Count,
    Int,
    Double,
    Time,
    Interval,
    Port,
    Addr,
    Subnet,
    String,
}

impl Sk {
    fn of(v: &Inferred) -> Option<Sk> {
        Some(match v {
            Inferred::Null => return None,
            Inferred::Bool(_) => Sk::Bool,
            Inferred::Count(_) => Sk::Count,
            Inferred::Int(_) => Sk::Int,
            Inferred::Double(_) => Sk::Double,
            Inferred::Time(_) => Sk::Time,
            Inferred::Addr(_) => Sk::Addr,
            Inferred::Subnet(..) => Sk::Subnet,
            Inferred::Interval(_) => Sk::Interval,
            Inferred::Port(_) => Sk::Port,
            Inferred::String(()) | Inferred::List(_) => Sk::String,
        })
    }

    fn ty(self) -> Type {
        match self {
            Sk::Bool => Type::Bool,
            Sk::Count => Type::Count,
            Sk::Int => Type::Int,
            Sk::Double => Type::Double,
            Sk::Time => Type::Time,
            Sk::Interval => Type::Interval,
            Sk::Port => Type::Port,
            Sk::Addr => Type::Addr,
            Sk::Subnet => Type::Subnet,
            Sk::String => Type::String,
        }
    }

    fn is(self, ty: &Type) -> bool {
        matches!(
            (self, ty),
            (Sk::Bool, Type::Bool)
                | (Sk::Count, Type::Count)
                | (Sk::Int, Type::Int)
                | (Sk::Double, Type::Double)
                | (Sk::Time, Type::Time)
                | (Sk::Interval, Type::Interval)
                | (Sk::Port, Type::Port)
                | (Sk::Addr, Type::Addr)
                | (Sk::Subnet, Type::Subnet)
                | (Sk::String, Type::String)
        )
    }
}

#[derive(Debug, Clone)]
struct Item {
    raw: Raw,
    val: Inferred,
}

#[derive(Debug, Clone)]
enum FieldVal {
    One(Item),
    /// Elements in `Parsed::elems`.
    Many(Span),
}

#[derive(Debug, Clone)]
struct RawField {
    /// In `Parsed::names`.
    name: Span,
    val: FieldVal,
    /// Inferred type: `None` when unknown (null, or an empty or all-null array).
    sk: Option<Sk>,
}

/// Scratch buffers for one line, reused from line to line.
#[derive(Debug, Default)]
struct Parsed {
    path: Option<Span>,
    names: Vec<u8>,
    strs: Vec<u8>,
    fields: Vec<RawField>,
    elems: Vec<Item>,
    prefix: Vec<u8>,
    tmp: Vec<u8>,
}

impl Parsed {
    fn clear(&mut self) {
        self.path = None;
        self.names.clear();
        self.strs.clear();
        self.fields.clear();
        self.elems.clear();
        self.prefix.clear();
    }
}

/// A syntax error: byte offset in the line and what was expected.
struct Syntax(usize, String);

struct Parser<'a, 'p> {
    s: &'a [u8],
    i: usize,
    p: &'p mut Parsed,
    /// Whether a top-level `_path` names the log (Zeek) instead of being a field (EVE).
    path_key: bool,
}

impl Parser<'_, '_> {
    fn err<T>(&self, what: impl Into<String>) -> Result<T, Syntax> {
        Err(Syntax(self.i, what.into()))
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, b: u8) -> Result<(), Syntax> {
        if self.peek() == Some(b) {
            self.i += 1;
            Ok(())
        } else {
            self.err(format!("expected '{}'", b as char))
        }
    }

    fn line(mut self) -> Result<(), Syntax> {
        self.ws();
        if self.peek() != Some(b'{') {
            return self.err("line is not a JSON object");
        }
        self.i += 1;
        self.object(1)?;
        self.ws();
        if self.i != self.s.len() {
            return self.err("trailing characters after the object");
        }
        Ok(())
    }

    /// Parses the members of an object whose `{` is consumed, flattening into fields.
    fn object(&mut self, depth: usize) -> Result<(), Syntax> {
        if depth > MAX_DEPTH {
            return self.err(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return self.err("expected a string key");
            }
            self.i += 1;
            let key_start = self.p.strs.len();
            self.string_into_strs()?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            let is_path = self.path_key && depth == 1 && &self.p.strs[key_start..] == b"_path";
            if is_path {
                if self.p.path.is_some() {
                    return self.err("duplicate key \"_path\"");
                }
                if self.peek() != Some(b'"') {
                    return self.err("_path is not a string");
                }
                self.p.strs.truncate(key_start);
                self.i += 1;
                let start = self.p.strs.len();
                self.string_into_strs()?;
                self.p.path = Some(Span {
                    start,
                    end: self.p.strs.len(),
                });
            } else {
                // Move the key from strs to the end of the prefix.
                let prefix_len = self.p.prefix.len();
                let (p_strs, p_prefix) = (&self.p.strs, &mut self.p.prefix);
                p_prefix.extend_from_slice(&p_strs[key_start..]);
                self.p.strs.truncate(key_start);
                match self.peek() {
                    Some(b'{') => {
                        self.i += 1;
                        self.p.prefix.push(b'.');
                        self.object(depth + 1)?;
                    }
                    Some(b'[') => {
                        self.i += 1;
                        let span = self.array(depth + 1)?;
                        self.push_field(FieldVal::Many(span));
                    }
                    _ => {
                        let raw = self.scalar()?;
                        self.push_field(FieldVal::One(Item {
                            raw,
                            val: Inferred::Null,
                        }));
                    }
                }
                self.p.prefix.truncate(prefix_len);
            }
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return self.err("expected ',' or '}'"),
            }
        }
    }

    fn push_field(&mut self, val: FieldVal) {
        let start = self.p.names.len();
        let (names, prefix) = (&mut self.p.names, &self.p.prefix);
        names.extend_from_slice(prefix);
        self.p.fields.push(RawField {
            name: Span {
                start,
                end: self.p.names.len(),
            },
            val,
            sk: None,
        });
    }

    /// Parses an array whose `[` is consumed into `elems`.
    fn array(&mut self, depth: usize) -> Result<Span, Syntax> {
        let start = self.p.elems.len();
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(Span { start, end: start });
        }
        loop {
            self.ws();
            let raw = match self.peek() {
                Some(b'{' | b'[') => {
                    let from = self.i;
                    self.skip_value(depth)?;
                    Raw::Json(Span {
                        start: from,
                        end: self.i,
                    })
                }
                _ => self.scalar()?,
            };
            self.p.elems.push(Item {
                raw,
                val: Inferred::Null,
            });
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Span {
                        start,
                        end: self.p.elems.len(),
                    });
                }
                _ => return self.err("expected ',' or ']'"),
            }
        }
    }

    /// Validates and skips any value (nested structures inside arrays).
    fn skip_value(&mut self, depth: usize) -> Result<(), Syntax> {
        if depth > MAX_DEPTH {
            return self.err(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        match self.peek() {
            Some(open @ (b'{' | b'[')) => {
                self.i += 1;
                let close = if open == b'{' { b'}' } else { b']' };
                self.ws();
                if self.peek() == Some(close) {
                    self.i += 1;
                    return Ok(());
                }
                loop {
                    self.ws();
                    if open == b'{' {
                        self.expect(b'"')?;
                        self.skip_string()?;
                        self.ws();
                        self.expect(b':')?;
                        self.ws();
                    }
                    self.skip_value(depth + 1)?;
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(c) if c == close => {
                            self.i += 1;
                            return Ok(());
                        }
                        _ => return self.err(format!("expected ',' or '{}'", close as char)),
                    }
                }
            }
            Some(b'"') => {
                self.i += 1;
                self.skip_string()
            }
            _ => self.scalar().map(|_| ()),
        }
    }

    fn skip_string(&mut self) -> Result<(), Syntax> {
        let mut tmp = std::mem::take(&mut self.p.tmp);
        tmp.clear();
        let r = self.string(&mut tmp);
        self.p.tmp = tmp;
        r
    }

    fn string_into_strs(&mut self) -> Result<(), Syntax> {
        let mut strs = std::mem::take(&mut self.p.strs);
        let r = self.string(&mut strs);
        self.p.strs = strs;
        r
    }

    /// Parses a scalar: string, number, `true`, `false`, `null`.
    fn scalar(&mut self) -> Result<Raw, Syntax> {
        match self.peek() {
            Some(b'"') => {
                self.i += 1;
                let start = self.p.strs.len();
                self.string_into_strs()?;
                Ok(Raw::Str(Span {
                    start,
                    end: self.p.strs.len(),
                }))
            }
            Some(b't') => self.literal(b"true", Raw::Bool(true)),
            Some(b'f') => self.literal(b"false", Raw::Bool(false)),
            Some(b'n') => self.literal(b"null", Raw::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => self.err("expected a value"),
            None => self.err("unexpected end of line"),
        }
    }

    fn literal(&mut self, word: &[u8], raw: Raw) -> Result<Raw, Syntax> {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(raw)
        } else {
            self.err("expected a value")
        }
    }

    fn digits(&mut self) -> usize {
        let from = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - from
    }

    fn number(&mut self) -> Result<Raw, Syntax> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return self.err("invalid number"),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return self.err("invalid number");
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return self.err("invalid number");
            }
        }
        Ok(Raw::Num(Span { start, end: self.i }))
    }

    /// Decodes a string whose opening quote is consumed into `out`.
    fn string(&mut self, out: &mut Vec<u8>) -> Result<(), Syntax> {
        loop {
            // Copy the run up to the next quote or backslash, checking it for control bytes.
            let Some(k) = memchr::memchr2(b'"', b'\\', &self.s[self.i..]) else {
                return self.err("unterminated string");
            };
            let run = &self.s[self.i..self.i + k];
            if let Some(c) = run.iter().position(|&b| b < 0x20) {
                self.i += c;
                return self.err("control character in string");
            }
            out.extend_from_slice(run);
            self.i += k + 1;
            if self.s[self.i - 1] == b'"' {
                return Ok(());
            }
            self.escape(out)?;
        }
    }

    fn hex4(&mut self) -> Result<u32, Syntax> {
        let Some(h) = self.s.get(self.i..self.i + 4) else {
            return self.err("invalid \\u escape");
        };
        let mut v = 0u32;
        for &c in h {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return self.err("invalid \\u escape"),
            };
            v = v * 16 + d as u32;
        }
        self.i += 4;
        Ok(v)
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), Syntax> {
        let Some(&e) = self.s.get(self.i) else {
            return self.err("unterminated string");
        };
        self.i += 1;
        let b = match e {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let hi = self.hex4()?;
                let cp = match hi {
                    0xd800..=0xdbff => {
                        if self.s.get(self.i..self.i + 2) != Some(b"\\u") {
                            return self.err("lone surrogate in \\u escape");
                        }
                        self.i += 2;
                        let lo = self.hex4()?;
                        if !(0xdc00..=0xdfff).contains(&lo) {
                            return self.err("lone surrogate in \\u escape");
                        }
                        0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                    }
                    0xdc00..=0xdfff => return self.err("lone surrogate in \\u escape"),
                    cp => cp,
                };
                let c = char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER);
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                return Ok(());
            }
            _ => {
                self.i -= 1;
                return self.err("invalid escape");
            }
        };
        out.push(b);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Inference of scalar values.

/// The `f64` of JSON number text (a subset of what [`parse_f64`] accepts).
fn number_f64(text: &[u8]) -> f64 {
    parse_f64(text).unwrap_or(f64::NAN)
}

fn infer(
    raw: Raw,
    kind: NumberKind,
    eve: bool,
    line: &[u8],
    strs: &[u8],
    tmp: &mut Vec<u8>,
) -> Inferred {
    match raw {
        Raw::Null => Inferred::Null,
        Raw::Bool(b) => Inferred::Bool(b),
        Raw::Json(_) => Inferred::String(()),
        Raw::Num(span) => {
            let t = span.of(line);
            match kind {
                NumberKind::Time => {
                    if let Some(ns) = parse_json_ns(t) {
                        return Inferred::Time(ns);
                    }
                }
                NumberKind::Interval => {
                    if let Some(ns) = parse_json_ns(t) {
                        return Inferred::Interval(ns);
                    }
                }
                NumberKind::Port => {
                    if let Some(p) = parse_u64(t).filter(|&p| p <= u64::from(u16::MAX)) {
                        return Inferred::Port(p);
                    }
                }
                NumberKind::Plain => {}
            }
            if t.iter().any(|&b| matches!(b, b'.' | b'e' | b'E')) {
                return Inferred::Double(number_f64(t));
            }
            match t.split_first() {
                Some((b'-', d)) => match parse_u64(d) {
                    Some(v) if v <= 1 << 63 => Inferred::Int((v as i64).wrapping_neg()),
                    _ => Inferred::Double(number_f64(t)),
                },
                _ => match parse_u64(t) {
                    Some(v) => Inferred::Count(v),
                    None => Inferred::Double(number_f64(t)),
                },
            }
        }
        Raw::Str(span) => {
            let s = span.of(strs);
            // The non-finite doubles as weir's JSON writer spells them.
            match s {
                b"NaN" => return Inferred::Double(f64::NAN),
                b"Infinity" => return Inferred::Double(f64::INFINITY),
                b"-Infinity" => return Inferred::Double(f64::NEG_INFINITY),
                _ => {}
            }
            if let Some(ns) = parse_rfc3339(s) {
                return Inferred::Time(ns);
            }
            // EVE's own time form (`+0200`), which the EVE writer turns into RFC 3339.
            if eve && has_compact_offset(s) {
                if let Some(ns) = parse_time_text(s) {
                    return Inferred::Time(ns);
                }
            }
            if let Some(a) = parse_canonical_addr(s, tmp) {
                return Inferred::Addr(a);
            }
            if s.contains(&b'/') {
                if let Some((a, p)) = parse_canonical_subnet(s, tmp) {
                    return Inferred::Subnet(a, p);
                }
            }
            Inferred::String(())
        }
    }
}

/// Whether `s` ends in an offset as EVE writes it, without colon: `+0200`.
fn has_compact_offset(s: &[u8]) -> bool {
    matches!(s.len().checked_sub(5).and_then(|k| s.get(k..)), Some([b'+' | b'-', d @ ..]) if d.iter().all(u8::is_ascii_digit))
}

/// The common type of array elements; `None` when none is set.
fn unify(items: &[Item]) -> Option<Sk> {
    let mut acc: Option<Sk> = None;
    let mut big_count = false;
    for it in items {
        let Some(k) = Sk::of(&it.val) else { continue };
        if let Inferred::Count(v) = it.val {
            big_count |= v > i64::MAX as u64;
        }
        acc = Some(match (acc, k) {
            (None, k) => k,
            (Some(a), k) if a == k => a,
            (Some(Sk::Count | Sk::Port), Sk::Count | Sk::Port) => Sk::Count,
            (Some(Sk::Count | Sk::Int | Sk::Port), Sk::Count | Sk::Int | Sk::Port) => Sk::Int,
            (
                Some(Sk::Count | Sk::Int | Sk::Port | Sk::Double),
                Sk::Count | Sk::Int | Sk::Port | Sk::Double,
            ) => Sk::Double,
            _ => return Some(Sk::String),
        });
    }
    if acc == Some(Sk::Int) && big_count {
        return Some(Sk::Double);
    }
    acc
}

/// Encodes one item as a value of type `ty` (the type inferred for it or its array).
fn encode_item(e: &mut RowEncoder<'_>, it: &Item, ty: &Type, line: &[u8], strs: &[u8]) {
    match (ty, &it.val) {
        (_, Inferred::Null) => e.null(),
        (Type::String, _) => match it.raw {
            Raw::Str(s) => e.bytes(s.of(strs)),
            Raw::Num(s) | Raw::Json(s) => e.bytes(s.of(line)),
            Raw::Bool(b) => e.bytes(if b { b"true" } else { b"false" }),
            Raw::Null => e.null(),
        },
        (Type::Bool, Inferred::Bool(b)) => e.bool(*b),
        (Type::Count, Inferred::Count(v)) => e.uint(*v),
        (Type::Int, Inferred::Int(v)) => e.int(*v),
        (Type::Int, Inferred::Count(v) | Inferred::Port(v)) => e.int(*v as i64),
        (Type::Double, Inferred::Double(v)) => e.double(*v),
        (Type::Double, Inferred::Count(_) | Inferred::Int(_) | Inferred::Port(_)) => match it.raw {
            Raw::Num(s) => e.double(number_f64(s.of(line))),
            _ => e.null(),
        },
        (Type::Time, Inferred::Time(v)) => e.int(*v),
        (Type::Interval, Inferred::Interval(v)) => e.int(*v),
        (Type::Port, Inferred::Port(v)) => e.uint(*v),
        (Type::Count, Inferred::Port(v)) => e.uint(*v),
        (Type::Addr, Inferred::Addr(a)) => e.addr(*a),
        (Type::Subnet, Inferred::Subnet(a, p)) => e.subnet(*a, *p),
        // Inference gives every item the type of its field; nothing else reaches here.
        _ => e.null(),
    }
}

/// Re-encodes the rows of `pending` into `into`, whose schema is `pending`'s with fields
/// appended (unset in these rows). False (with `into` partly filled) if a row does not
/// decode, which a batch this reader built cannot do.
fn widen(pending: &Batch, into: &mut BatchBuilder, ts_index: Option<usize>) -> bool {
    let Ok(rows) = pending.to_values() else {
        return false;
    };
    let added = into.schema().fields.len() - pending.schema().fields.len();
    for row in rows {
        let ts = ts_index.and_then(|k| match row.get(k) {
            Some(Value::Time(t)) => Some(*t),
            _ => None,
        });
        let mut e = into.begin_row();
        for v in &row {
            e.value(v);
        }
        for _ in 0..added {
            e.null();
        }
        into.finish_row(ts);
    }
    true
}

/// How many leading columns of `schema` come from its typed log's schema file.
fn st_len(typed: &HashMap<String, Typed>, schema: &Schema) -> usize {
    typed
        .get(schema.path())
        .map_or(0, |t| t.log.schema().fields.len())
}

/// Encodes one typed row: columns below `known` converted to the schema's type, the others
/// as inferred. Returns the `ts` value, or the column and text of a value that does not
/// convert.
fn encode_typed_row(
    builder: &mut BatchBuilder,
    schema: &Schema,
    known: usize,
    slots: &[usize],
    p: &Parsed,
    line: &[u8],
    ts_index: Option<usize>,
) -> Result<Option<i64>, (usize, Vec<u8>)> {
    let mut ts = None;
    let mut e = builder.begin_row();
    for (k, field) in schema.fields.iter().enumerate() {
        let Some(f) = slots.get(k).and_then(|&j| p.fields.get(j)) else {
            e.null();
            continue;
        };
        if k >= known {
            // Typed by inference.
            match &f.val {
                FieldVal::One(it) => encode_item(&mut e, it, &field.ty, line, &p.strs),
                FieldVal::Many(span) => {
                    let inner = field.ty.element().unwrap_or(&Type::String);
                    e.array((span.end - span.start) as u32);
                    for it in &p.elems[span.start..span.end] {
                        encode_item(&mut e, it, inner, line, &p.strs);
                    }
                }
            }
            continue;
        }
        match (&f.val, field.ty.element()) {
            (FieldVal::One(it), None) => {
                let t = typed_value(&mut e, it.raw, &field.ty, line, &p.strs)
                    .map_err(|text| (k, text))?;
                if Some(k) == ts_index {
                    ts = t;
                }
            }
            (FieldVal::One(Item { raw: Raw::Null, .. }), Some(_)) => e.null(),
            (FieldVal::One(it), Some(_)) => return Err((k, raw_text(it.raw, line, &p.strs))),
            (FieldVal::Many(span), Some(inner)) => {
                e.array((span.end - span.start) as u32);
                for it in &p.elems[span.start..span.end] {
                    typed_value(&mut e, it.raw, inner, line, &p.strs).map_err(|text| (k, text))?;
                }
            }
            (FieldVal::Many(span), None) => {
                let text = p.elems[span.start..span.end]
                    .iter()
                    .map(|it| raw_text(it.raw, line, &p.strs))
                    .collect::<Vec<_>>()
                    .join(&b","[..]);
                return Err((k, [&b"["[..], &text, b"]"].concat()));
            }
        }
    }
    Ok(ts)
}

/// The text of a JSON scalar, for messages.
fn raw_text(raw: Raw, line: &[u8], strs: &[u8]) -> Vec<u8> {
    match raw {
        Raw::Null => b"null".to_vec(),
        Raw::Bool(true) => b"true".to_vec(),
        Raw::Bool(false) => b"false".to_vec(),
        Raw::Num(s) | Raw::Json(s) => s.of(line).to_vec(),
        Raw::Str(s) => s.of(strs).to_vec(),
    }
}

/// Encodes a JSON scalar as a value of the scalar type `ty` (a schema's type); the value's
/// text when it does not convert. Returns the nanoseconds of a `time`.
///
/// | type | JSON |
/// |---|---|
/// | `bool` | `true`, `false` |
/// | `count`, `port` (0-65535), `int` | an integer number |
/// | `double` | a number, or the strings `"NaN"`, `"Infinity"`, `"-Infinity"` |
/// | `time` | a number of seconds (exponent allowed, exact to the nanosecond), or an RFC 3339 string |
/// | `interval` | a number of seconds (exponent allowed, exact) |
/// | `addr`, `subnet` | a string holding one (any form the TSV reader takes) |
/// | `string`, `enum`, `pattern`, `file` | a string; a number, `true`/`false` or nested JSON as its text |
fn typed_value(
    e: &mut RowEncoder<'_>,
    raw: Raw,
    ty: &Type,
    line: &[u8],
    strs: &[u8],
) -> Result<Option<i64>, Vec<u8>> {
    let bad = || raw_text(raw, line, strs);
    match (ty, raw) {
        (_, Raw::Null) => e.null(),
        (Type::Bool, Raw::Bool(b)) => e.bool(b),
        (Type::Count, Raw::Num(s)) => e.uint(parse_u64(s.of(line)).ok_or_else(bad)?),
        (Type::Port, Raw::Num(s)) => e.uint(
            parse_u64(s.of(line))
                .filter(|&v| v <= 65535)
                .ok_or_else(bad)?,
        ),
        (Type::Int, Raw::Num(s)) => e.int(parse_i64(s.of(line)).ok_or_else(bad)?),
        (Type::Double, Raw::Num(s)) => e.double(parse_f64(s.of(line)).ok_or_else(bad)?),
        (Type::Double, Raw::Str(s)) => e.double(match s.of(strs) {
            b"NaN" => f64::NAN,
            b"Infinity" => f64::INFINITY,
            b"-Infinity" => f64::NEG_INFINITY,
            _ => return Err(bad()),
        }),
        (Type::Time, Raw::Num(s)) | (Type::Interval, Raw::Num(s)) => {
            let v = parse_json_ns(s.of(line)).ok_or_else(bad)?;
            e.int(v);
            return Ok(Some(v));
        }
        (Type::Time, Raw::Str(s)) => {
            let v = parse_time_text(s.of(strs)).ok_or_else(bad)?;
            e.int(v);
            return Ok(Some(v));
        }
        (Type::Addr, Raw::Str(s)) => e.addr(parse_addr(s.of(strs)).ok_or_else(bad)?),
        (Type::Subnet, Raw::Str(s)) => {
            let (a, p) = parse_subnet(s.of(strs)).ok_or_else(bad)?;
            e.subnet(a, p);
        }
        (t, Raw::Str(s)) if t.is_stringy() => e.bytes(s.of(strs)),
        (t, Raw::Num(s) | Raw::Json(s)) if t.is_stringy() => e.bytes(s.of(line)),
        (t, Raw::Bool(b)) if t.is_stringy() => e.bytes(if b { b"true" } else { b"false" }),
        _ => return Err(bad()),
    }
    Ok(None)
}

/// Reads Zeek JSON lines into batches. See the module docs.
#[derive(Debug)]
pub struct JsonDecoder {
    opts: ReaderOptions,
    /// Lines consumed so far.
    line: u64,
    /// Bytes at the start of the buffer already searched for a newline.
    scanned: usize,
    /// Discarding the rest of an overlong line (skip mode).
    skipping: bool,
    builder: Option<BatchBuilder>,
    ts_index: Option<usize>,
    schemas: HashMap<(String, Vec<Field>), SchemaRef>,
    /// Schemas used last, most recent first.
    recent: Vec<SchemaRef>,
    absent_as_unset: bool,
    report: SkipReport,
    /// Fail mode: the error to return once the events before it are emitted.
    pending_err: Option<ParseError>,
    p: Parsed,
    /// Typed logs seen so far, by Zeek path.
    typed: HashMap<String, Typed>,
    /// The typed log of lines without `_path` (the option's, else the file name's).
    unnamed: Option<Arc<LogSchema>>,
    /// Per column of a typed line's schema: the index of the line's field, or `NO_FIELD`.
    slots: Vec<usize>,
    /// Times the pending batch was widened (bounded by `MAX_WIDENINGS`).
    widened: usize,
    /// Suricata EVE lines: `event_type` picks the schema ([`crate::codec::suricata`]).
    eve: bool,
    /// EVE event types without a shipped schema seen so far, with their schema.
    unknown_types: HashMap<String, Arc<LogSchema>>,
    /// What was reported on the log (EVE: unknown event types and fields), to report each once.
    reported: HashSet<String>,
    /// [`ReaderOptions::detect_eve`] and no line read yet: the first line decides `eve`.
    undecided: bool,
    /// A line without `_path` whose log neither the option nor the file name gives was
    /// looked at: its keys chose the log ([`ZeekSchemas::by_fields`]) or inference.
    recognized: bool,
    /// Warnings for the source to show ([`JsonDecoder::take_warnings`]).
    warnings: Vec<String>,
}

/// Unknown event types and fields reported on the log per input, at most.
const MAX_REPORTED: usize = 4096;
/// EVE event types without a schema remembered; beyond, they start over (bounded memory).
const MAX_UNKNOWN_TYPES: usize = 1024;

/// Fields a typed log's schema does not know that are kept as columns; beyond, the log's
/// unknown fields start over (bounded memory for logs with ever new keys).
const MAX_EXTRA_FIELDS: usize = 1024;
/// Times the pending batch of a typed log is widened before it is emitted instead (each
/// widening re-encodes its rows).
const MAX_WIDENINGS: usize = 32;

/// No field of the line fills this column.
const NO_FIELD: usize = usize::MAX;

/// A typed log's current schema: the log schema's fields, then the fields it does not know
/// (typed by inference) in order of first appearance.
#[derive(Debug)]
struct Typed {
    log: Arc<LogSchema>,
    schema: SchemaRef,
    /// Columns after the log schema's: name and type.
    extras: Vec<Field>,
    /// Name to column, for the extras.
    extra_index: HashMap<String, usize>,
}

impl Typed {
    fn new(log: Arc<LogSchema>) -> Typed {
        Typed {
            schema: log.schema().clone(),
            log,
            extras: Vec::new(),
            extra_index: HashMap::new(),
        }
    }

    /// The column of the field `name`, trying `guess` first (lines mostly follow the
    /// schema's order).
    fn column(&self, name: &[u8], guess: usize) -> Option<usize> {
        if self
            .schema
            .fields
            .get(guess)
            .is_some_and(|f| f.name.as_bytes() == name)
        {
            return Some(guess);
        }
        let name = std::str::from_utf8(name).ok()?;
        self.log
            .position(name)
            .or_else(|| self.extra_index.get(name).copied())
    }

    fn rebuild(&mut self) {
        let base = self.log.schema();
        let mut fields = base.fields.clone();
        fields.extend(self.extras.iter().cloned());
        self.schema = Schema::new(base.name.clone(), fields).into_shared();
    }
}

impl JsonDecoder {
    /// A decoder with the given options.
    pub fn new(opts: ReaderOptions) -> JsonDecoder {
        let opts_detect_eve = opts.detect_eve;
        JsonDecoder {
            opts,
            line: 0,
            scanned: 0,
            skipping: false,
            builder: None,
            ts_index: None,
            schemas: HashMap::new(),
            recent: Vec::new(),
            absent_as_unset: false,
            report: SkipReport::default(),
            pending_err: None,
            p: Parsed::default(),
            typed: HashMap::new(),
            unnamed: None,
            slots: Vec::new(),
            widened: 0,
            eve: false,
            unknown_types: HashMap::new(),
            reported: HashSet::new(),
            undecided: opts_detect_eve,
            recognized: false,
            warnings: Vec::new(),
        }
        .with_unnamed()
    }

    /// A decoder of Suricata's EVE JSON ([`crate::codec::suricata`]): each line is read in the
    /// schema `suricata.<event_type>` (the shipped or `--schema-dir` one, else one typed by
    /// inference), `_path` is an ordinary field, and EVE's naming conventions guide inference.
    pub fn eve(opts: ReaderOptions) -> JsonDecoder {
        let mut d = JsonDecoder::new(opts);
        d.eve = true;
        d.unnamed = None;
        d
    }

    /// The schema of the EVE line just parsed, by its `event_type`.
    fn eve_log(&mut self) -> Result<Arc<LogSchema>, ParseError> {
        let p = &self.p;
        let found = p
            .fields
            .iter()
            .find(|f| f.name.of(&p.names) == suricata::EVENT_TYPE_KEY.as_bytes());
        let event_type = match found.map(|f| &f.val) {
            Some(FieldVal::One(Item {
                raw: Raw::Str(s), ..
            })) => s.of(&p.strs),
            _ => {
                return Err(self.error(
                    self.line,
                    Some(suricata::EVENT_TYPE_KEY.into()),
                    "an EVE event needs a string \"event_type\"".into(),
                ))
            }
        };
        if !suricata::is_event_type(event_type) {
            return Err(self.error(
                self.line,
                Some(suricata::EVENT_TYPE_KEY.into()),
                format!(
                    "event_type {} is not a name (1 to {} ASCII letters, digits, _ or -)",
                    quote(event_type),
                    suricata::MAX_EVENT_TYPE_LEN
                ),
            ));
        }
        // Checked above: ASCII.
        let event_type = String::from_utf8_lossy(event_type);
        if let Some(log) = self
            .opts
            .zeek_schemas
            .as_ref()
            .and_then(|s| s.eve(&event_type))
        {
            return Ok(log.clone());
        }
        if let Some(log) = self.unknown_types.get(event_type.as_ref()) {
            return Ok(log.clone());
        }
        if self.unknown_types.len() >= MAX_UNKNOWN_TYPES {
            self.unknown_types.clear();
        }
        let log = Arc::new(suricata::unknown_type_schema(&event_type));
        if self.reported.len() < MAX_REPORTED && self.reported.insert(log.schema().name.clone()) {
            tracing::info!(
                input = %self.opts.source_name,
                line = self.line,
                "{}: an event type without a schema, kept and typed by inference",
                log.schema().name
            );
        }
        self.unknown_types
            .insert(event_type.into_owned(), log.clone());
        Ok(log)
    }

    /// The log of the lines without `_path` of an input whose file name names none (and no
    /// option gives one), from the first such line's keys, said once in a warning either way:
    /// a Zeek log recognized by its fields, or the default schema typed by inference.
    fn recognize(&mut self) {
        self.recognized = true;
        let Some(schemas) = &self.opts.zeek_schemas else {
            return;
        };
        if self.opts.json_schema.is_some() {
            return;
        }
        let p = &self.p;
        let names: Vec<&str> = p
            .fields
            .iter()
            .filter_map(|f| std::str::from_utf8(f.name.of(&p.names)).ok())
            .collect();
        let line = self.line;
        match schemas.by_fields(&names) {
            Some(log) => {
                let name = log.schema().name.clone();
                self.unnamed = Some(log.clone());
                self.warnings.push(format!(
                    "line {line}: JSON lines without `_path`, in a file whose name names no Zeek log: read as {name}, recognized by their fields (`--schema NAME` chooses the log)"
                ));
            }
            None => self.warnings.push(format!(
                "line {line}: JSON lines without `_path`, in a file whose name names no Zeek log, and whose fields are no Zeek log's: imported as {}, typed by inference (`--schema zeek.NAME` reads them as that Zeek log)",
                self.opts.json_default_schema
            )),
        }
    }

    /// Takes the warnings collected so far.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Resolves the typed log of lines without `_path`.
    fn with_unnamed(mut self) -> JsonDecoder {
        if let Some(schemas) = &self.opts.zeek_schemas {
            self.unnamed = match &self.opts.json_schema {
                Some(name) => schemas.by_name(name),
                None => schemas.for_file_name(&self.opts.source_name),
            }
            .cloned();
        }
        self
    }

    /// The typed log of the line just parsed, if a schema types it.
    fn typed_log(&self) -> Option<Arc<LogSchema>> {
        let schemas = self.opts.zeek_schemas.as_ref()?;
        match self.p.path {
            Some(span) => std::str::from_utf8(span.of(&self.p.strs))
                .ok()
                .and_then(|path| schemas.get(path))
                .cloned(),
            None => self.unnamed.clone(),
        }
    }

    /// With `true`, a line whose keys are a subsequence (same order) of the keys of the pending
    /// schema or one of the last 16 schemas used, with the same name and types, is read in that
    /// schema with the missing fields unset, instead of starting a schema of its own.
    ///
    /// Zeek omits unset fields from its JSON logs, so by the letter of the format (a new schema
    /// whenever the set of keys changes, the default) nearly every line of a busy log can be a
    /// schema and a batch of its own; this option folds them back together. The events differ
    /// only in that absent fields become unset fields of the wider schema.
    pub fn absent_as_unset(mut self, on: bool) -> JsonDecoder {
        self.absent_as_unset = on;
        self
    }

    /// Rows dropped so far under [`OnError::Skip`].
    pub fn skip_report(&self) -> &SkipReport {
        &self.report
    }

    /// Lines consumed so far.
    pub fn lines(&self) -> u64 {
        self.line
    }

    fn error(&self, line: u64, field: Option<String>, message: String) -> ParseError {
        ParseError {
            source_name: self.opts.source_name.clone(),
            line,
            field,
            message,
        }
    }

    /// Fails or records (skip mode) a bad line. Failing with events pending emits them first
    /// and keeps the error for the next call.
    fn bad(&mut self, e: ParseError) -> Result<Option<Batch>, ReadError> {
        match self.opts.on_error {
            OnError::Fail => match self.take_pending() {
                Some(b) => {
                    self.pending_err = Some(e);
                    Ok(Some(b))
                }
                None => Err(e.into()),
            },
            OnError::Skip => {
                self.report.record(e);
                Ok(None)
            }
        }
    }

    fn too_long(&self, line: u64) -> ParseError {
        self.error(
            line,
            None,
            format!(
                "line longer than the maximum of {} bytes",
                self.opts.max_line_len
            ),
        )
    }

    fn take_pending(&mut self) -> Option<Batch> {
        self.widened = 0;
        match &mut self.builder {
            Some(b) if !b.is_empty() => Some(b.finish()),
            _ => None,
        }
    }

    /// Parses one line (without its newline) and appends its event; returns the pending batch
    /// when the line's schema differs from it.
    fn handle_line(&mut self, line: &[u8]) -> Result<Option<Batch>, ReadError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // A UTF-8 byte order mark before the first line.
        let line = match line.strip_prefix(b"\xef\xbb\xbf") {
            Some(rest) if self.line == 1 => rest,
            _ => line,
        };
        if line
            .iter()
            .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        {
            return Ok(None);
        }
        if self.undecided {
            self.undecided = false;
            if suricata::is_eve_line(line) {
                self.eve = true;
                self.unnamed = None;
            }
        }
        match self.parse(line) {
            Ok(emitted) => Ok(emitted),
            Err(e) => self.bad(e),
        }
    }

    fn parse(&mut self, line: &[u8]) -> Result<Option<Batch>, ParseError> {
        self.p.clear();
        let parser = Parser {
            s: line,
            i: 0,
            p: &mut self.p,
            path_key: !self.eve,
        };
        if let Err(Syntax(at, what)) = parser.line() {
            let from = at.saturating_sub(20);
            return Err(self.error(
                self.line,
                None,
                format!(
                    "invalid JSON at byte {}: {what}: {}",
                    at + 1,
                    quote(&line[from..])
                ),
            ));
        }
        if self.eve {
            let log = self.eve_log()?;
            return self.parse_typed(line, log);
        }
        if self.p.path.is_none() && self.unnamed.is_none() && !self.recognized {
            self.recognize();
        }
        if let Some(log) = self.typed_log() {
            return self.parse_typed(line, log);
        }
        // Infer every value's type.
        let eve = self.eve;
        let p = &mut self.p;
        for f in p.fields.iter_mut() {
            let ts = number_kind(f.name.of(&p.names));
            let sk = match &mut f.val {
                FieldVal::One(it) => {
                    it.val = infer(it.raw, ts, eve, line, &p.strs, &mut p.tmp);
                    Sk::of(&it.val)
                }
                FieldVal::Many(span) => {
                    for j in span.start..span.end {
                        let raw = p.elems[j].raw;
                        p.elems[j].val = infer(raw, ts, eve, line, &p.strs, &mut p.tmp);
                    }
                    unify(&p.elems[span.start..span.end])
                }
            };
            f.sk = sk;
        }
        // Find the schema: the pending one, else a cached or new one.
        let mut emitted = None;
        let fits_pending = matches!(&self.builder, Some(b) if self.fits(b.schema()));
        if !fits_pending {
            // Recently used schemas first (no allocation), then the cache or a new schema.
            let schema = match self.recent.iter().position(|s| self.fits(s)) {
                Some(k) => self.recent.remove(k),
                None => self.lookup_schema()?,
            };
            self.recent.insert(0, schema.clone());
            self.recent.truncate(RECENT_SCHEMAS);
            self.ts_index = schema.ts_index();
            match &mut self.builder {
                Some(b) if !b.is_empty() => {
                    emitted = Some(b.finish());
                    *b = BatchBuilder::new(schema);
                }
                _ => self.builder = Some(BatchBuilder::new(schema)),
            }
        }
        let Some(builder) = self.builder.as_mut() else {
            return Ok(emitted);
        };
        let schema = builder.schema().clone();
        let p = &self.p;
        let mut ts = None;
        let mut e = builder.begin_row();
        let mut j = 0;
        for (k, field) in schema.fields.iter().enumerate() {
            // The schema's fields are the line's, or (absent_as_unset) a supersequence of them.
            let Some(f) = p
                .fields
                .get(j)
                .filter(|f| f.name.of(&p.names) == field.name.as_bytes())
            else {
                e.null();
                continue;
            };
            j += 1;
            match &f.val {
                FieldVal::One(it) => {
                    if Some(k) == self.ts_index {
                        if let Inferred::Time(t) = it.val {
                            ts = Some(t);
                        }
                    }
                    encode_item(&mut e, it, &field.ty, line, &p.strs);
                }
                FieldVal::Many(span) => {
                    let inner = field.ty.element().unwrap_or(&Type::String);
                    e.array((span.end - span.start) as u32);
                    for it in &p.elems[span.start..span.end] {
                        encode_item(&mut e, it, inner, line, &p.strs);
                    }
                }
            }
        }
        builder.finish_row(ts);
        Ok(emitted)
    }

    /// Reads the line just parsed in its typed log's schema: every field the schema knows
    /// converted to its type, the others typed by inference (a new one, or one whose
    /// inferred type changes, widens the log's schema), absent fields unset.
    fn parse_typed(
        &mut self,
        line: &[u8],
        log: Arc<LogSchema>,
    ) -> Result<Option<Batch>, ParseError> {
        let path = log.schema().path().to_string();
        let st = self
            .typed
            .entry(path)
            .or_insert_with(|| Typed::new(log.clone()));
        if st.extras.len() > MAX_EXTRA_FIELDS {
            // A log with ever new keys: start over rather than grow without bound.
            *st = Typed::new(log);
        }
        let eve = self.eve;
        let p = &mut self.p;
        // Columns of the line's fields; unknown fields become (or retype) extras.
        let mut cols = std::mem::take(&mut self.slots);
        cols.clear();
        let mut changed = false;
        // Whether the schema only grows at its end (new fields), so that pending rows can
        // be widened instead of cut off into a batch of their own.
        let mut appended_only = true;
        let before = st.schema.clone();
        let base = st.log.schema().fields.len();
        for f in p.fields.iter_mut() {
            let name = f.name.of(&p.names);
            let guess = cols.last().map_or(0, |&c: &usize| c + 1);
            let known = st.column(name, guess);
            if let Some(c) = known.filter(|&c| c < base) {
                cols.push(c);
                continue;
            }
            // Not in the log schema: infer, as for untyped logs.
            let ts = if eve {
                suricata::number_kind(name)
            } else {
                number_kind(name)
            };
            let sk = match &mut f.val {
                FieldVal::One(it) => {
                    it.val = infer(it.raw, ts, eve, line, &p.strs, &mut p.tmp);
                    Sk::of(&it.val)
                }
                FieldVal::Many(span) => {
                    for k in span.start..span.end {
                        let raw = p.elems[k].raw;
                        p.elems[k].val = infer(raw, ts, eve, line, &p.strs, &mut p.tmp);
                    }
                    unify(&p.elems[span.start..span.end])
                }
            };
            f.sk = sk;
            let many = matches!(f.val, FieldVal::Many(_));
            let inferred = sk.map(|k| {
                if many {
                    Type::Vector(Box::new(k.ty()))
                } else {
                    k.ty()
                }
            });
            match known {
                Some(c) => {
                    let e = c - base;
                    let cur = &st.extras[e].ty;
                    let fits = match (many, sk) {
                        (false, None) => true,
                        (false, Some(k)) => k.is(cur),
                        (true, None) => cur.is_container(),
                        (true, Some(k)) => matches!(cur, Type::Vector(t) if k.is(t)),
                    };
                    if !fits {
                        st.extras[e].ty = inferred.unwrap_or(Type::Vector(Box::new(Type::String)));
                        changed = true;
                        appended_only = false;
                    }
                    cols.push(c);
                }
                None => {
                    let ty = inferred.unwrap_or_else(|| {
                        if many {
                            Type::Vector(Box::new(Type::String))
                        } else {
                            Type::String
                        }
                    });
                    let fname = String::from_utf8_lossy(name).into_owned();
                    if eve && self.reported.len() < MAX_REPORTED {
                        let schema = st.log.schema().name.as_str();
                        if self.reported.insert(format!("{schema}\0{fname}")) {
                            tracing::info!(
                                input = %self.opts.source_name,
                                line = self.line,
                                "{schema}: kept field {fname:?}, which its schema does not know, typed by inference as {ty}"
                            );
                        }
                    }
                    let c = base + st.extras.len();
                    st.extra_index.insert(fname.clone(), c);
                    st.extras.push(Field::new(fname, ty));
                    changed = true;
                    cols.push(c);
                }
            }
        }
        if changed {
            st.rebuild();
        }
        let schema = st.schema.clone();
        // Column -> field, refusing a key twice.
        let mut slots = std::mem::take(&mut cols);
        let n = schema.fields.len();
        let mut by_col = vec![NO_FIELD; n];
        for (j, &c) in slots.iter().enumerate() {
            if c >= n {
                continue;
            }
            if by_col[c] != NO_FIELD {
                let name = &schema.fields[c].name;
                self.slots = slots;
                return Err(self.error(
                    self.line,
                    Some(name.clone()),
                    format!("duplicate key {}", quote(name.as_bytes())),
                ));
            }
            by_col[c] = j;
        }
        slots.clear();
        slots.extend_from_slice(&by_col);
        // Switch to the schema.
        let mut emitted = None;
        let same = matches!(&self.builder, Some(b) if Arc::ptr_eq(b.schema(), &schema));
        if !same {
            self.ts_index = schema.ts_index();
            match &mut self.builder {
                Some(b) if !b.is_empty() => {
                    let pending = b.finish();
                    *b = BatchBuilder::new(schema.clone());
                    let grows = appended_only
                        && Arc::ptr_eq(pending.schema(), &before)
                        && self.widened < MAX_WIDENINGS;
                    if grows && widen(&pending, b, self.ts_index) {
                        self.widened += 1;
                    } else {
                        *b = BatchBuilder::new(schema.clone());
                        emitted = Some(pending);
                        self.widened = 0;
                    }
                }
                _ => {
                    self.builder = Some(BatchBuilder::new(schema.clone()));
                    self.widened = 0;
                }
            }
        }
        let known = st_len(&self.typed, &schema);
        let result = match self.builder.as_mut() {
            Some(builder) => {
                let r = encode_typed_row(
                    builder,
                    &schema,
                    known,
                    &slots,
                    &self.p,
                    line,
                    self.ts_index,
                );
                match r {
                    Ok(ts) => {
                        builder.finish_row(ts);
                        Ok(())
                    }
                    Err(bad) => {
                        builder.discard_row();
                        Err(bad)
                    }
                }
            }
            None => Ok(()),
        };
        self.slots = slots;
        match result {
            Ok(()) => Ok(emitted),
            Err((col, text)) => {
                let f = &schema.fields[col];
                let e = self.error(
                    self.line,
                    Some(f.name.clone()),
                    format!("invalid {} value {}", f.ty, quote(&text)),
                );
                match emitted {
                    // The batch before is out already: report the error after it.
                    Some(b) => {
                        match self.opts.on_error {
                            OnError::Fail => self.pending_err = Some(e),
                            OnError::Skip => self.report.record(e),
                        }
                        Ok(Some(b))
                    }
                    None => Err(e),
                }
            }
        }
    }

    /// Whether the line just parsed fits schema `s`: same name, same field names in the same
    /// order, same types (a null fits any type, an empty array any container).
    fn fits(&self, s: &Schema) -> bool {
        let p = &self.p;
        let name_ok = match p.path {
            Some(span) => s.name.as_bytes().strip_prefix(b"zeek.") == Some(span.of(&p.strs)),
            None => s.name == self.opts.json_default_schema,
        };
        if !name_ok || p.fields.len() > s.fields.len() {
            return false;
        }
        if !self.absent_as_unset && p.fields.len() != s.fields.len() {
            return false;
        }
        // The line's fields, in order, must be the schema's (or, with absent_as_unset, a
        // subsequence of them).
        let mut j = 0;
        for sf in &s.fields {
            let Some(f) = p.fields.get(j) else { break };
            if f.name.of(&p.names) != sf.name.as_bytes() {
                if self.absent_as_unset {
                    continue;
                }
                return false;
            }
            let ok = match (&f.val, f.sk) {
                (FieldVal::One(_), None) => true,
                (FieldVal::One(_), Some(sk)) => sk.is(&sf.ty),
                (FieldVal::Many(_), None) => sf.ty.is_container(),
                (FieldVal::Many(_), Some(sk)) => matches!(&sf.ty, Type::Vector(t) if sk.is(t)),
            };
            if !ok {
                return false;
            }
            j += 1;
        }
        j == p.fields.len()
    }

    /// The schema of the line just parsed, from the cache or new.
    fn lookup_schema(&mut self) -> Result<SchemaRef, ParseError> {
        let p = &self.p;
        let name = match p.path {
            Some(span) => format!("zeek.{}", String::from_utf8_lossy(span.of(&p.strs))),
            None => self.opts.json_default_schema.clone(),
        };
        let current = self.builder.as_ref().map(|b| b.schema().clone());
        let mut fields = Vec::with_capacity(p.fields.len());
        for f in &p.fields {
            let fname = String::from_utf8_lossy(f.name.of(&p.names)).into_owned();
            let many = matches!(f.val, FieldVal::Many(_));
            let ty = match f.sk {
                Some(sk) if many => Type::Vector(Box::new(sk.ty())),
                Some(sk) => sk.ty(),
                None => {
                    // Unknown: borrow the type of the previous schema's field of that name.
                    let prev = current
                        .as_ref()
                        .and_then(|s| s.fields.iter().find(|pf| pf.name == fname))
                        .map(|pf| pf.ty.clone())
                        .filter(|t| !many || t.is_container());
                    prev.unwrap_or_else(|| {
                        if many {
                            Type::Vector(Box::new(Type::String))
                        } else {
                            Type::String
                        }
                    })
                }
            };
            fields.push(Field::new(fname, ty));
        }
        let key = (name, fields);
        if let Some(s) = self.schemas.get(&key) {
            return Ok(s.clone());
        }
        let mut seen = HashSet::with_capacity(key.1.len());
        for f in &key.1 {
            if !seen.insert(f.name.as_str()) {
                return Err(self.error(
                    self.line,
                    Some(f.name.clone()),
                    format!("duplicate key {}", quote(f.name.as_bytes())),
                ));
            }
        }
        if self.schemas.len() >= MAX_CACHED_SCHEMAS {
            self.schemas.clear();
        }
        let schema = Schema::new(key.0.clone(), key.1.clone()).into_shared();
        self.schemas.insert(key, schema.clone());
        Ok(schema)
    }
}

impl Decoder for JsonDecoder {
    type Item = Batch;
    type Error = ReadError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        if let Some(e) = self.pending_err.take() {
            return Err(e.into());
        }
        loop {
            if self.skipping {
                match memchr::memchr(b'\n', src) {
                    Some(i) => {
                        src.advance(i + 1);
                        self.line += 1;
                        self.skipping = false;
                        self.scanned = 0;
                    }
                    None => {
                        src.clear();
                        return Ok(self.take_pending());
                    }
                }
            }
            let from = self.scanned.min(src.len());
            let Some(i) = memchr::memchr(b'\n', &src[from..]).map(|i| i + from) else {
                self.scanned = src.len();
                if src.len() > self.opts.max_line_len {
                    let e = self.too_long(self.line + 1);
                    let emitted = self.bad(e)?;
                    self.skipping = true;
                    src.clear();
                    self.scanned = 0;
                    if emitted.is_some() {
                        return Ok(emitted);
                    }
                    continue;
                }
                return Ok(self.take_pending());
            };
            self.scanned = 0;
            self.line += 1;
            let emitted = if i > self.opts.max_line_len {
                let e = self.too_long(self.line);
                self.bad(e)?
            } else {
                self.handle_line(&src[..i])?
            };
            src.advance(i + 1);
            if emitted.is_some() {
                return Ok(emitted);
            }
            if self
                .builder
                .as_ref()
                .is_some_and(|b| b.len() >= self.opts.batch_rows)
            {
                return Ok(self.take_pending());
            }
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        if let Some(b) = self.decode(src)? {
            return Ok(Some(b));
        }
        if !src.is_empty() {
            // A last line without newline (shorter than the maximum: decode checked).
            let rest = src.split();
            self.scanned = 0;
            self.line += 1;
            if let Some(b) = self.handle_line(&rest)? {
                return Ok(Some(b));
            }
        }
        self.skipping = false;
        Ok(self.take_pending())
    }
}

/// Reads a whole input held in memory (for tests and small files): the batches, and the report
/// of lines skipped under [`OnError::Skip`].
pub fn read_all(bytes: &[u8], opts: ReaderOptions) -> Result<(Vec<Batch>, SkipReport), ReadError> {
    let mut dec = JsonDecoder::new(opts);
    match crate::codec::decode_chunks(&mut dec, [bytes]) {
        (_, Some(e)) => Err(e),
        (out, None) => Ok((out, dec.report.clone())),
    }
}
