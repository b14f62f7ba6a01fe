//! Names an expression uses that the data does not know, so that a mistake is an error
//! instead of a silent zero:
//!
//! - a field extractor that resolves in no schema ([`unknown_field`]: "no field `duraton` in
//!   any schema of the archive; did you mean `duration`?");
//! - a `#type == "..."` (or `#type in [...]`) value that names no schema and no Zeek log
//!   ([`unknown_type_name`]: `"conn"`, did you mean `"zeek.conn"`?);
//! - for a comparison that is ill-typed for a field, the literal (or operator) probably meant
//!   ([`meant`]: `duration > 600` with an `interval` field, did you mean `600s`?).
//!
//! Suggestions are the known names nearest by edit distance (Levenshtein, case-insensitive),
//! at most [`MAX_SUGGESTIONS`], within a third of the name's length (at least 1, at most 3)
//! and short of replacing it whole.
//! For a field, the known names are every schema's fields by every name that resolves to
//! them (`zeek.conn.id.orig_h`, `conn.id.orig_h`, `id.orig_h`, `orig_h`).

use super::bind::{names_field, well_typed};
use super::error::ExprError;
use super::literal::{parse_word, Literal};
use super::op::Op;
use crate::types::{SchemaRef, Type};

/// Suggestions in a message, at most.
pub const MAX_SUGGESTIONS: usize = 3;

/// The paths of Zeek's logs as Zeek's documentation lists them (Zeek 6 and 7, "Zeek Logs"):
/// `#type == "zeek.PATH"` with one of them is no mistake even when the data has none of that
/// log (the shipped schemas of `schemas/zeek/` are counted too).
pub const ZEEK_LOGS: &[&str] = &[
    "analyzer",
    "barnyard2",
    "broker",
    "capture_loss",
    "cluster",
    "config",
    "conn",
    "dce_rpc",
    "dhcp",
    "dnp3",
    "dns",
    "dpd",
    "files",
    "ftp",
    "http",
    "intel",
    "irc",
    "kerberos",
    "known_certs",
    "known_hosts",
    "known_modbus",
    "known_services",
    "ldap",
    "ldap_search",
    "loaded_scripts",
    "modbus",
    "modbus_register_change",
    "mqtt_connect",
    "mqtt_publish",
    "mqtt_subscribe",
    "mysql",
    "netcontrol",
    "netcontrol_catch_release",
    "netcontrol_drop",
    "netcontrol_shunt",
    "notice",
    "notice_alarm",
    "ntlm",
    "ntp",
    "ocsp",
    "openflow",
    "packet_filter",
    "pe",
    "print",
    "prof",
    "quic",
    "radius",
    "rdp",
    "reporter",
    "rfb",
    "signatures",
    "sip",
    "smb_cmd",
    "smb_files",
    "smb_mapping",
    "smtp",
    "snmp",
    "socks",
    "software",
    "ssh",
    "ssl",
    "stats",
    "stderr",
    "stdout",
    "syslog",
    "telemetry",
    "telemetry_histogram",
    "traceroute",
    "tunnel",
    "unified2",
    "unknown_protocols",
    "websocket",
    "weird",
    "weird_stats",
    "x509",
];

/// Where the schemas checked against come from, as messages say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// An archive's: "of the archive".
    Archive,
    /// A pipeline's sources': the shipped Zeek schemas and `schema_dir`.
    Sources,
}

impl Scope {
    fn of(self) -> &'static str {
        match self {
            Scope::Archive => "of the archive",
            Scope::Sources => "its sources can produce (the shipped Zeek schemas and `schema_dir`)",
        }
    }

    fn in_(self) -> &'static str {
        match self {
            Scope::Archive => "in the archive",
            Scope::Sources => {
                "among those its sources can produce (the shipped Zeek schemas and `schema_dir`)"
            }
        }
    }
}

/// The schema names of Zeek's logs (`zeek.conn`, ...): [`ZEEK_LOGS`] and the shipped schemas.
fn zeek_names() -> Vec<String> {
    let mut v: Vec<String> = ZEEK_LOGS.iter().map(|p| format!("zeek.{p}")).collect();
    if let Ok(shipped) = crate::codec::zeek::schema::ZeekSchemas::builtin() {
        v.extend(shipped.names());
    }
    v.sort();
    v.dedup();
    v
}

/// Whether the field extractor `name` names a field of one of `schemas`.
pub fn resolves(name: &str, schemas: &[SchemaRef]) -> bool {
    schemas
        .iter()
        .any(|s| s.fields.iter().any(|f| names_field(s, &f.name, name)))
}

/// The error for the field extractor `name`, written at byte `pos` of `text`, when it names no
/// field of any of `schemas` (`None` when it names one, or when there are no schemas to
/// check against), with the nearest known names. For any list of field names (an operator's
/// `select`, `sort`, ...) as well as for a predicate's extractor.
pub fn unknown_field(
    text: &str,
    pos: usize,
    name: &str,
    schemas: &[SchemaRef],
) -> Option<ExprError> {
    unknown_field_in(text, pos, name, schemas, Scope::Archive)
}

/// [`unknown_field`], the message naming `scope`.
pub(crate) fn unknown_field_in(
    text: &str,
    pos: usize,
    name: &str,
    schemas: &[SchemaRef],
    scope: Scope,
) -> Option<ExprError> {
    if schemas.is_empty() || resolves(name, schemas) {
        return None;
    }
    let mut known = Vec::new();
    for s in schemas {
        for f in &s.fields {
            let q = format!("{}.{}", s.name, f.name);
            known.push(q.clone());
            known.extend(q.match_indices('.').map(|(i, _)| q[i + 1..].to_string()));
        }
    }
    let near = nearest(name, &known, |k| vec![k]);
    let quoted: Vec<String> = near.iter().map(|n| format!("`{n}`")).collect();
    Some(ExprError::new(
        text,
        pos,
        format!(
            "no field `{name}` in any schema {}{}",
            scope.of(),
            did_you_mean(&quoted)
        ),
    ))
}

/// The error for the field `name`, written at byte `pos` of `text`, read after the operator
/// `after` (as written: `summarize count() by proto`), whose events have only `fields`: the
/// nearest of them, and an aggregation's output name for its function's (`count` is
/// `count()`, `sum` is `sum(orig_bytes)`).
pub(crate) fn unknown_output_field(
    text: &str,
    pos: usize,
    name: &str,
    fields: &[String],
    after: &str,
) -> ExprError {
    let mut near: Vec<&str> = fields
        .iter()
        .map(String::as_str)
        .filter(|f| {
            f.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('('))
        })
        .collect();
    if near.is_empty() {
        near = nearest(name, fields, |k| vec![k]);
    }
    let quoted: Vec<String> = near.iter().map(|n| format!("`{n}`")).collect();
    let listed: Vec<String> = fields.iter().map(|f| format!("`{f}`")).collect();
    ExprError::new(
        text,
        pos,
        format!(
            "no field `{name}` after `{after}`, whose events have the fields {}{}",
            listed.join(", "),
            did_you_mean(&quoted)
        ),
    )
}

/// The error for `#type == "value"` (or `in [...]`), the value written at byte `pos` of
/// `text`, when it names none of `names` (the schema names of the data) and no Zeek log
/// (`None` when it names one, or when `names` is empty: nothing to check against), with the
/// nearest names.
pub fn unknown_type_name(text: &str, pos: usize, value: &str, names: &[&str]) -> Option<ExprError> {
    unknown_type_name_in(text, pos, value, names, Scope::Archive)
}

/// [`unknown_type_name`], the message naming `scope`.
pub(crate) fn unknown_type_name_in(
    text: &str,
    pos: usize,
    value: &str,
    names: &[&str],
    scope: Scope,
) -> Option<ExprError> {
    let zeek = zeek_names();
    if names.is_empty() || names.contains(&value) || zeek.iter().any(|z| z == value) {
        return None;
    }
    let mut known: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    known.extend(zeek);
    known.sort();
    known.dedup();
    // `conn` is near `zeek.conn`: compare with the part after the first dot too.
    let near = nearest(value, &known, |k| {
        let mut v = vec![k];
        if let Some((_, rest)) = k.split_once('.') {
            v.push(rest);
        }
        v
    });
    let quoted: Vec<String> = near.iter().map(|n| format!("{n:?}")).collect();
    Some(ExprError::new(
        text,
        pos,
        format!(
            "no schema named {value:?} {}, and no Zeek log is named so (#type is the schema's full name, e.g. \"zeek.conn\"){}",
            scope.in_(),
            did_you_mean(&quoted)
        ),
    ))
}

/// `"; did you mean A, B or C?"`, or nothing.
pub(crate) fn did_you_mean(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => format!("; did you mean {one}?"),
        [init @ .., last] => format!("; did you mean {} or {last}?", init.join(", ")),
    }
}

/// The known names nearest to `word` (see the module docs); `forms` gives the strings a known
/// name is compared by (the nearest of them counts).
fn nearest<'a>(
    word: &str,
    known: &'a [String],
    forms: impl Fn(&'a str) -> Vec<&'a str>,
) -> Vec<&'a str> {
    let word = word.to_lowercase();
    let limit = (word.chars().count() / 3).clamp(1, 3);
    let mut scored: Vec<(usize, &str)> = known
        .iter()
        .filter_map(|k| {
            let d = forms(k)
                .into_iter()
                .map(|f| edit_distance(&word, &f.to_lowercase()))
                .min()?;
            // Replacing a whole name is no suggestion (`n` for `Z`).
            (d <= limit && d < word.chars().count()).then_some((d, k.as_str()))
        })
        .collect();
    scored.sort_by(|a, b| (a.0, a.1.len(), a.1).cmp(&(b.0, b.1.len(), b.1)));
    let mut out: Vec<&str> = Vec::new();
    for (_, k) in scored {
        if !out.contains(&k) {
            out.push(k);
        }
        if out.len() == MAX_SUGGESTIONS {
            break;
        }
    }
    out
}

/// The Levenshtein distance between two strings, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The smallest number `meant` reads as seconds since the epoch (1973-03-03): smaller ones
/// are counts, not times.
const EPOCH_HINT_MIN: f64 = 1e8;

/// What was probably meant by `op` with the literal written `written` (`lit`) for a field of
/// type `ty` that cannot compare with it: a literal of the field's type (`600` for an
/// interval: `600s`; `1258531221` for a time: `@1258531221`, `2009`: `2009-01-01`; `53` for a string: `"53"`; a
/// quoted time, address or number unquoted), or `in` for an address compared with a subnet by
/// `==`. Only what is well-typed for the field is offered.
pub(crate) fn meant(ty: &Type, op: Op, lit: &Literal, written: &str) -> Option<String> {
    let scalar = ty.element().unwrap_or(ty);
    if let (Type::Addr, Op::Eq | Op::Ne, Literal::Subnet(..)) = (scalar, op, lit) {
        let op = if op == Op::Eq { "in" } else { "!in" };
        return Some(format!("{op} {written}"));
    }
    let candidate = match lit {
        Literal::Count(_) | Literal::Int(_) | Literal::Real(_) if *scalar == Type::Interval => {
            format!("{written}s")
        }
        // A number compared with a time: a year (`ts > 2009` is `2009-01-01`) or seconds
        // since the epoch (`@1258531221`); anything smaller gets no hint, since `@2009` is
        // 1970-01-01T00:33:29, which is never what was meant.
        Literal::Count(y) if *scalar == Type::Time && (1970..=2200).contains(y) => {
            format!("{y}-01-01")
        }
        Literal::Count(_) | Literal::Real(_) if *scalar == Type::Time => {
            let secs = match lit {
                Literal::Count(n) => *n as f64,
                Literal::Real(r) => *r,
                _ => return None,
            };
            if secs < EPOCH_HINT_MIN {
                return None;
            }
            format!("@{written}")
        }
        Literal::String(s) => String::from_utf8(s.clone()).ok()?,
        Literal::Pattern(_) | Literal::List(_) => return None,
        _ if scalar.is_stringy() => format!("\"{written}\""),
        _ => return None,
    };
    let parsed = match candidate.strip_prefix('"') {
        Some(inner) => Literal::String(inner.strip_suffix('"')?.as_bytes().to_vec()),
        None => parse_word(&candidate, 0)?,
    };
    well_typed(ty, op, &parsed).then_some(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Field, Schema};

    #[test]
    fn distance_and_nearest() {
        assert_eq!(edit_distance("duraton", "duration"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        let known: Vec<String> = ["duration", "uid", "orig_h", "resp_h", "id.orig_h"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(nearest("duraton", &known, |k| vec![k]), ["duration"]);
        assert_eq!(nearest("orig_x", &known, |k| vec![k]), ["orig_h"]);
        assert_eq!(nearest("Uid", &known, |k| vec![k]), ["uid"]);
        assert!(nearest("zzzzzz", &known, |k| vec![k]).is_empty());
        assert!(nearest("x", &["Z".to_string()], |k| vec![k]).is_empty());
    }

    #[test]
    fn a_number_for_a_time_is_a_year_or_epoch_seconds_or_no_hint() {
        let meant_for = |n: u64| meant(&Type::Time, Op::Gt, &Literal::Count(n), &n.to_string());
        // `@2009` would be 1970-01-01T00:33:29: following that hint returns every event.
        assert_eq!(meant_for(2009).as_deref(), Some("2009-01-01"));
        assert_eq!(meant_for(1258531221).as_deref(), Some("@1258531221"));
        assert_eq!(meant_for(500), None);
        assert_eq!(meant_for(99_999_999), None);
        let real = meant(&Type::Time, Op::Gt, &Literal::Real(1.5e9), "1.5e9");
        assert_eq!(real.as_deref(), Some("@1.5e9"));
    }

    #[test]
    fn unknown_names_suggest_the_nearest() {
        let s = Schema::new(
            "zeek.conn",
            vec![
                Field::new("id.orig_h", Type::Addr),
                Field::new("duration", Type::Interval),
            ],
        )
        .into_shared();
        let schemas = [s];
        let e = unknown_field("duraton > 1s", 0, "duraton", &schemas).unwrap();
        assert!(
            e.message.ends_with("; did you mean `duration`?"),
            "{}",
            e.message
        );
        assert!(unknown_field("orig_h == 1.2.3.4", 0, "orig_h", &schemas).is_none());
        assert!(unknown_field("conn.duration > 1s", 0, "conn.duration", &schemas).is_none());
        assert!(unknown_field("x == 1", 0, "x", &[]).is_none());
        let e = unknown_type_name("#type == \"conn\"", 9, "conn", &["zeek.conn"]).unwrap();
        assert!(
            e.message.contains("did you mean \"zeek.conn\"?"),
            "{}",
            e.message
        );
        // A Zeek log the data lacks is no mistake.
        assert!(unknown_type_name("", 0, "zeek.smb_files", &["zeek.conn"]).is_none());
        assert!(unknown_type_name("", 0, "foobar", &[]).is_none());
    }

    #[test]
    fn literals_probably_meant() {
        let m = |ty: Type, op, lit, w: &str| meant(&ty, op, &lit, w);
        assert_eq!(
            m(Type::Interval, Op::Gt, Literal::Count(600), "600").as_deref(),
            Some("600s")
        );
        assert_eq!(
            m(Type::Time, Op::Gt, Literal::Count(5), "5").as_deref(),
            None
        );
        assert_eq!(
            m(
                Type::Time,
                Op::Gt,
                Literal::Count(1_258_531_221),
                "1258531221"
            )
            .as_deref(),
            Some("@1258531221")
        );
        assert_eq!(
            m(Type::String, Op::Eq, Literal::Count(3), "3").as_deref(),
            Some("\"3\"")
        );
        assert_eq!(
            m(
                Type::Time,
                Op::Lt,
                Literal::String(b"2009-11-18".to_vec()),
                "\"2009-11-18\""
            )
            .as_deref(),
            Some("2009-11-18")
        );
        assert_eq!(
            m(
                Type::Addr,
                Op::Eq,
                Literal::Subnet([10, 0, 0, 0].into(), 8),
                "10.0.0.0/8"
            )
            .as_deref(),
            Some("in 10.0.0.0/8")
        );
        assert_eq!(
            m(Type::Bool, Op::Eq, Literal::String(b"x".to_vec()), "\"x\""),
            None
        );
    }
}
