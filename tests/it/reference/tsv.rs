//! Zeek TSV as the reference writes and reads it, plainly: a [`Log`] is schemas and events in
//! file order, written with one header block per schema run ([`Log::to_tsv`]) and read back
//! from a file of one or more header blocks ([`Log::parse`]; the separators are Zeek's
//! defaults: a tab, `,`, `(empty)`, `-`).

use std::net::IpAddr;

use super::value::{Ty, Val};

/// A schema: its name as weir names it (`zeek.` and the `#path`) and its fields.
#[derive(Clone, Debug)]
pub struct Schema {
    pub name: String,
    pub fields: Vec<(String, Ty)>,
}

impl Schema {
    /// The index of the field named exactly `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|(n, _)| n == name)
    }
}

/// One event: its schema (an index into [`Log::schemas`]) and a value per field.
#[derive(Clone, Debug)]
pub struct Event {
    pub schema: usize,
    pub values: Vec<Option<Val>>,
}

/// Schemas and events in file (and so import) order.
#[derive(Clone, Debug, Default)]
pub struct Log {
    pub schemas: Vec<Schema>,
    pub events: Vec<Event>,
}

impl Log {
    /// Zeek TSV of `events` (a header block wherever the schema changes).
    pub fn to_tsv(&self, events: &[Event]) -> String {
        let mut out = String::new();
        let mut current = None;
        for e in events {
            if current != Some(e.schema) {
                current = Some(e.schema);
                let s = &self.schemas[e.schema];
                let path = s.name.strip_prefix("zeek.").unwrap_or(&s.name);
                out.push_str("#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n");
                out.push_str(&format!("#unset_field\t-\n#path\t{path}\n#fields"));
                for (n, _) in &s.fields {
                    out.push_str(&format!("\t{n}"));
                }
                out.push_str("\n#types");
                for (_, t) in &s.fields {
                    out.push_str(&format!("\t{}", t.zeek()));
                }
                out.push('\n');
            }
            let cells: Vec<String> = e.values.iter().map(render).collect();
            out.push_str(&cells.join("\t"));
            out.push('\n');
        }
        out
    }

    /// The log of Zeek TSV `text` (the test's own reading; `None` on what it does not know).
    pub fn parse(text: &str) -> Option<Log> {
        let mut log = Log::default();
        let (mut fields, mut path): (Vec<String>, String) = (Vec::new(), String::new());
        let mut current: Option<usize> = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("#fields\t") {
                fields = rest.split('\t').map(str::to_string).collect();
                current = None;
            } else if let Some(rest) = line.strip_prefix("#path\t") {
                path = rest.to_string();
                current = None;
            } else if let Some(rest) = line.strip_prefix("#types\t") {
                let types: Option<Vec<Ty>> = rest.split('\t').map(Ty::parse).collect();
                let schema = Schema {
                    name: format!("zeek.{path}"),
                    fields: fields.iter().cloned().zip(types?).collect(),
                };
                let at = log
                    .schemas
                    .iter()
                    .position(|s| s.name == schema.name && s.fields == schema.fields);
                current = Some(at.unwrap_or_else(|| {
                    log.schemas.push(schema);
                    log.schemas.len() - 1
                }));
            } else if line.starts_with('#') {
                continue;
            } else {
                let s = current?;
                let cells: Vec<&str> = line.split('\t').collect();
                let schema = &log.schemas[s];
                if cells.len() != schema.fields.len() {
                    return None;
                }
                let values = cells
                    .iter()
                    .zip(&schema.fields)
                    .map(|(c, (_, t))| parse_cell(c, t))
                    .collect::<Option<Vec<_>>>()?;
                log.events.push(Event { schema: s, values });
            }
        }
        Some(log)
    }
}

/// A cell of Zeek TSV.
pub fn render(v: &Option<Val>) -> String {
    match v {
        None => "-".into(),
        Some(Val::List(items)) if items.is_empty() => "(empty)".into(),
        Some(Val::List(items)) => items.iter().map(render).collect::<Vec<_>>().join(","),
        Some(Val::Str(s)) if s.is_empty() => "(empty)".into(),
        Some(v) => scalar(v),
    }
}

fn scalar(v: &Val) -> String {
    match v {
        Val::Bool(b) => if *b { "T" } else { "F" }.into(),
        Val::Count(x) | Val::Port(x) => x.to_string(),
        Val::Int(x) => x.to_string(),
        Val::Double(x) => format!("{x:.2}"),
        Val::Time(ns) | Val::Interval(ns) => seconds(*ns),
        Val::Str(s) => String::from_utf8_lossy(s).into_owned(),
        Val::Addr(a) => a.to_string(),
        Val::Subnet(a, p) => format!("{a}/{p}"),
        Val::List(_) => render(&Some(v.clone())),
    }
}

/// Nanoseconds (whole microseconds) as Zeek writes seconds: `-1.500000`.
pub fn seconds(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let us = ns.unsigned_abs() / 1000;
    format!("{sign}{}.{:06}", us / 1_000_000, us % 1_000_000)
}

/// Decimal seconds (`-1.5`, `86400.0`, `1`) as nanoseconds, exactly.
pub fn parse_seconds(s: &str) -> Option<i64> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty()
        || frac.len() > 9
        || !(int.bytes().chain(frac.bytes())).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole: i128 = int.parse().ok()?;
    let frac_ns: i128 = format!("{frac:0<9}").parse().ok()?;
    let ns = whole * 1_000_000_000 + frac_ns;
    i64::try_from(if neg { -ns } else { ns }).ok()
}

fn parse_cell(c: &str, t: &Ty) -> Option<Option<Val>> {
    if c == "-" {
        return Some(None);
    }
    if let Some(e) = t.element() {
        if c == "(empty)" {
            return Some(Some(Val::List(Vec::new())));
        }
        let items = c
            .split(',')
            .map(|x| {
                if x == "-" {
                    Some(None)
                } else {
                    parse_scalar(x, e).map(Some)
                }
            })
            .collect::<Option<Vec<_>>>()?;
        return Some(Some(Val::List(items)));
    }
    if c == "(empty)" && t.is_stringy() {
        return Some(Some(Val::Str(Vec::new())));
    }
    parse_scalar(c, t).map(Some)
}

fn parse_scalar(c: &str, t: &Ty) -> Option<Val> {
    Some(match t {
        Ty::Bool => match c {
            "T" => Val::Bool(true),
            "F" => Val::Bool(false),
            _ => return None,
        },
        Ty::Count => Val::Count(c.parse().ok()?),
        Ty::Int => Val::Int(c.strip_prefix('+').unwrap_or(c).parse().ok()?),
        Ty::Double => Val::Double(c.parse().ok()?),
        Ty::Time => Val::Time(parse_seconds(c)?),
        Ty::Interval => Val::Interval(parse_seconds(c)?),
        Ty::String | Ty::Enum | Ty::Pattern | Ty::File => Val::Str(unescape(c)?),
        Ty::Addr => Val::Addr(c.parse().ok()?),
        Ty::Subnet => {
            let (a, p) = c.split_once('/')?;
            Val::Subnet(a.parse::<IpAddr>().ok()?, p.parse().ok()?)
        }
        Ty::Port => Val::Port(c.parse().ok()?),
        Ty::Set(_) | Ty::Vector(_) => return None,
    })
}

/// Zeek's `\xHH` escapes.
fn unescape(c: &str) -> Option<Vec<u8>> {
    let b = c.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') {
            let hex = std::str::from_utf8(b.get(i + 2..i + 4)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}
