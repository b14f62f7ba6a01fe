//! The operators after the expression (`EXPR | OP | ...`, issue 33), each checked against an
//! independent brute-force evaluation. The shared Zeek corpus (`conn`, `dns`, `http`, `snmp`
//! and `unit/*.log`: 18,714 events of 7 schemas) is imported once and exported once with
//! `--to json`; each event's JSON object is typed with its schema (which fields the schema
//! has, which strings are times or addresses). The expected answer of every chain is computed
//! here, in plain Rust over those values ([`Rec`] and the functions under "Brute force"), and
//! compared with what `weir export --to json 'CHAIN'` prints: events of the archive as the
//! very text exported (less the members of fields not kept, in the order kept), aggregated
//! events (`weir.summarize`, `weir.top`, `weir.rare`) value by value (means within a rounding
//! tolerance), keys in the documented order. Events are in ID order, which is the export
//! order, so "stable" means "ties in export order".
//!
//! Also: `weir count 'CHAIN'` equals the number of events the chain prints; malformed chains
//! exit 2 with the caret under the problem; and `sort ts | head 5` and `summarize` stay within
//! a memory bound far below the rows they scan ([`memory_of_sort_head_and_summarize_is_bounded`]).
//!
//! Without the corpus (`WEIR_CORPUS`, default `../shared/data/zeek` beside the repository) the
//! corpus tests skip with a note, except under `CI=true`, where they fail.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;
use crate::common::cli::{ok, run, s, text};

use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::net::{IpAddr, Ipv6Addr};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value as Json};
use weir::unstable::store::Archive;
use weir::unstable::types::Type;

// ---------------------------------------------------------------------------------------------
// Values and events, as the test sees them
// ---------------------------------------------------------------------------------------------

/// A value, typed by its schema's field type.
#[derive(Clone, Debug, PartialEq)]
enum V {
    Null,
    /// `count`, `int`, `port`.
    Int(i128),
    /// `double`.
    Real(f64),
    /// `time`, in nanoseconds since the epoch.
    Time(i128),
    /// `interval`, in nanoseconds.
    Span(i128),
    /// `string`, `enum`, `pattern`, `file`.
    Str(String),
    /// `addr`, IPv4 as its IPv4-mapped IPv6 form.
    Addr(Ipv6Addr),
    /// `subnet`, as written (the corpus has none; never sorted on here).
    Net(String),
    Bool(bool),
    /// Containers.
    List(Vec<V>),
    /// An expected mean, compared within a rounding tolerance: seconds for intervals,
    /// nanoseconds for times, the value for numbers.
    About(f64),
}

impl V {
    fn is_null(&self) -> bool {
        matches!(self, V::Null)
    }

    /// The elements of a container, or the value itself; no unset ones.
    fn elements(&self) -> Vec<V> {
        match self {
            V::Null => Vec::new(),
            V::List(l) => l.iter().filter(|v| !v.is_null()).cloned().collect(),
            v => vec![v.clone()],
        }
    }

    /// A key equal for values that group together.
    fn key(&self) -> String {
        format!("{self:?}")
    }
}

/// The kinds of values in their order across types: numbers, times, intervals, strings,
/// addresses, subnets, bools, lists.
fn rank(v: &V) -> u8 {
    match v {
        V::Int(_) | V::Real(_) | V::About(_) => 0,
        V::Time(_) => 1,
        V::Span(_) => 2,
        V::Str(_) => 3,
        V::Addr(_) => 4,
        V::Net(_) => 5,
        V::Bool(_) => 6,
        V::List(_) => 7,
        V::Null => 8,
    }
}

fn as_f64(v: &V) -> f64 {
    match *v {
        V::Int(x) => x as f64,
        V::Real(x) | V::About(x) => x,
        _ => f64::NAN,
    }
}

/// The order of two set values (as the operators document it, written here independently).
fn compare(a: &V, b: &V) -> Ordering {
    match (a, b) {
        (V::Int(x), V::Int(y)) => x.cmp(y),
        (V::Time(x), V::Time(y)) | (V::Span(x), V::Span(y)) => x.cmp(y),
        (V::Str(x), V::Str(y)) | (V::Net(x), V::Net(y)) => x.as_bytes().cmp(y.as_bytes()),
        (V::Addr(x), V::Addr(y)) => x.octets().cmp(&y.octets()),
        (V::Bool(x), V::Bool(y)) => x.cmp(y),
        (V::List(x), V::List(y)) => x
            .iter()
            .zip(y)
            .map(|(p, q)| compare(p, q))
            .find(|o| o.is_ne())
            .unwrap_or(x.len().cmp(&y.len())),
        _ if rank(a) == 0 && rank(b) == 0 => as_f64(a).total_cmp(&as_f64(b)),
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Nanoseconds since the epoch of `YYYY-MM-DDTHH:MM:SS[.fraction]Z`.
fn parse_time(s: &str) -> i128 {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> i128 { s[r].parse().unwrap() };
    assert!(
        b.len() >= 20 && b[4] == b'-' && b[10] == b'T' && s.ends_with('Z'),
        "{s}"
    );
    let (y, m, d) = (num(0..4), num(5..7), num(8..10));
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + num(11..13) * 3600 + num(14..16) * 60 + num(17..19);
    let frac = &s[19..s.len() - 1];
    let nanos = match frac.strip_prefix('.') {
        Some(f) => format!("{f:0<9}")[..9].parse::<i128>().unwrap(),
        None => 0,
    };
    secs * 1_000_000_000 + nanos
}

/// The value of a field of type `ty` from its JSON form (`None`: the key is absent, unset).
fn typed(ty: &Type, j: Option<&Json>) -> V {
    let Some(j) = j.filter(|j| !j.is_null()) else {
        return V::Null;
    };
    let string = || {
        j.as_str()
            .unwrap_or_else(|| panic!("{j} is no string"))
            .to_string()
    };
    match ty {
        Type::Count | Type::Int | Type::Port => V::Int(
            j.as_u64()
                .map(i128::from)
                .or(j.as_i64().map(i128::from))
                .unwrap_or_else(|| panic!("{j} is no integer")),
        ),
        Type::Double => V::Real(j.as_f64().unwrap_or_else(|| match j.as_str() {
            Some("NaN") => f64::NAN,
            Some("Infinity") => f64::INFINITY,
            Some("-Infinity") => f64::NEG_INFINITY,
            _ => panic!("{j} is no double"),
        })),
        Type::Time => V::Time(parse_time(&string())),
        Type::Interval => V::Span((j.as_f64().unwrap() * 1e9).round() as i128),
        Type::String | Type::Enum | Type::Pattern | Type::File => V::Str(string()),
        Type::Addr => V::Addr(mapped(string().parse().unwrap())),
        Type::Subnet => V::Net(string()),
        Type::Bool => V::Bool(j.as_bool().unwrap()),
        Type::Set(t) | Type::Vector(t) | Type::Table(t) => V::List(
            j.as_array()
                .unwrap_or_else(|| panic!("{j} is no array"))
                .iter()
                .map(|e| typed(t, Some(e)))
                .collect(),
        ),
    }
}

fn mapped(a: IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    }
}

/// Whether `name` (an operator's field name) names the field `field` of the schema `schema`:
/// `SCHEMA.FIELD` is `name` or ends with `.name` (full name, suffix at a dot, qualified name).
fn names(schema: &str, field: &str, name: &str) -> bool {
    // Without building `SCHEMA.FIELD`: this runs for every field of every event.
    let (s, f, n) = (schema.as_bytes(), field.as_bytes(), name.as_bytes());
    let q = s.len() + 1 + f.len();
    let at = |i: usize| match i.cmp(&s.len()) {
        Ordering::Less => s[i],
        Ordering::Equal => b'.',
        Ordering::Greater => f[i - s.len() - 1],
    };
    n.len() <= q
        && (0..n.len()).all(|k| at(q - n.len() + k) == n[k])
        && (n.len() == q || at(q - n.len() - 1) == b'.')
}

/// An event: one of the archive, or one the test expects an aggregation to make. Cheap to
/// clone (the brute force copies events around freely).
#[derive(Clone, Debug)]
struct Rec {
    /// The schema's name (`zeek.conn`, `weir.summarize`).
    schema: Arc<str>,
    /// The fields (after `select`/`drop`: the kept ones), in order, `Null` when unset.
    fields: Arc<[(String, V)]>,
    /// An archive's event: its exported line and its members (`None` for aggregations).
    source: Option<Arc<Source>>,
    /// Whether `fields` are all of the schema's (no `select` or `drop`): the operators'
    /// output is then the exported line itself.
    whole: bool,
}

/// An archive's event as exported.
#[derive(Debug, PartialEq)]
struct Source {
    line: String,
    /// Each field's key and the range of its `"key":value` text in `line`.
    members: HashMap<String, Range<usize>>,
}

/// The members of a JSON object written on one line: each key and the range of its
/// `"key":value` text (split at the commas outside strings and arrays).
fn members(line: &str) -> HashMap<String, Range<usize>> {
    let b = line.as_bytes();
    assert!(
        b.first() == Some(&b'{') && b.last() == Some(&b'}'),
        "{line}"
    );
    let end = b.len() - 1;
    let mut out = HashMap::new();
    let mut i = 1;
    while i < end {
        let start = i;
        assert_eq!(b[i], b'"', "{line}");
        let close = i + 1 + line[i + 1..].find('"').unwrap();
        let key = &line[i + 1..close];
        assert!(!key.contains('\\'), "{line}");
        i = close + 1;
        assert_eq!(b[i], b':', "{line}");
        let (mut depth, mut in_string) = (0, false);
        while i < end {
            match (in_string, b[i]) {
                (true, b'\\') => i += 1,
                (true, b'"') | (false, b'"') => in_string = !in_string,
                (false, b'[') => depth += 1,
                (false, b']') => depth -= 1,
                (false, b',') if depth == 0 => break,
                _ => {}
            }
            i += 1;
        }
        out.insert(key.to_string(), start..i);
        i += 1;
    }
    out
}

impl Rec {
    /// What an operator reads for `name`: the first field it names (`Null` when there is
    /// none or it is unset); `#type` is the schema's name, or the field named `#type` of a
    /// `summarize ... by #type`.
    fn value(&self, name: &str) -> V {
        if name == "#type" && !self.fields.iter().any(|(f, _)| f == name) {
            return V::Str(self.schema.to_string());
        }
        self.fields
            .iter()
            .find(|(f, _)| names(&self.schema, f, name))
            .map_or(V::Null, |(_, v)| v.clone())
    }

    /// An aggregated event of `schema` with these fields.
    fn made(schema: &str, fields: Vec<(String, V)>) -> Rec {
        Rec {
            schema: schema.into(),
            fields: fields.into(),
            source: None,
            whole: true,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The corpus archive, imported and exported once for all tests of this file
// ---------------------------------------------------------------------------------------------

struct Corpus {
    db: PathBuf,
    /// Every event, in ID (export) order.
    events: Vec<Rec>,
}

static CORPUS: OnceLock<Option<Corpus>> = OnceLock::new();

/// The corpus archive; `None` (after a note) when the corpus is absent outside CI.
fn corpus() -> Option<&'static Corpus> {
    CORPUS.get_or_init(import_corpus).as_ref()
}

/// A directory for this process under Cargo's test scratch space; those of test processes
/// that are gone are removed (a static is never dropped, so no `TempDir` would be).
fn scratch() -> PathBuf {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let me = std::process::id();
    if let Ok(rd) = std::fs::read_dir(base) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.strip_prefix("query_operators-") else {
                continue;
            };
            if pid != me.to_string() && !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let dir = base.join(format!("query_operators-{me}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Imports the corpus files (not `zeek.json`) and types every exported event with its schema.
fn import_corpus() -> Option<Corpus> {
    let dir = common::corpus::dir()?;
    let files: Vec<String> = common::corpus::files(&dir)
        .into_iter()
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".log") || n.ends_with(".log.gz")
        })
        .map(|p| p.display().to_string())
        .collect();
    let db = scratch().join("db");
    let mut args = vec!["import", "--db", s(&db)];
    args.extend(files.iter().map(String::as_str));
    ok(&run(&args), "import the corpus");
    let lines = common::cli::export_json_text(&db);
    // The schema of each event, in ID order, from the archive's batches.
    let archive = Archive::open(&db).unwrap();
    let mut schemas = Vec::new();
    for b in archive.scan() {
        let b = b.unwrap();
        schemas.extend(std::iter::repeat_n(b.schema().clone(), b.len()));
    }
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(schemas.len(), lines.len(), "events exported");
    let events: Vec<Rec> = lines
        .into_iter()
        .zip(schemas)
        .map(|(line, schema)| {
            let obj = object(line);
            assert_eq!(obj["_path"], Json::from(schema.path()), "{line}");
            Rec {
                schema: schema.name.as_str().into(),
                fields: schema
                    .fields
                    .iter()
                    .map(|f| (f.name.clone(), typed(&f.ty, obj.get(&f.name))))
                    .collect(),
                source: Some(Arc::new(Source {
                    line: line.to_string(),
                    members: members(line),
                })),
                whole: true,
            }
        })
        .collect();
    assert!(events.len() > 18_000, "{} events", events.len());
    Some(Corpus { db, events })
}

// ---------------------------------------------------------------------------------------------
// Running chains and comparing their output
// ---------------------------------------------------------------------------------------------

/// The lines `weir export --to json CHAIN` prints.
fn export(db: &Path, chain: &str) -> Vec<String> {
    let out = run(&["export", "--db", s(db), "--to", "json", chain]);
    ok(&out, chain).lines().map(str::to_string).collect()
}

/// A line of JSON output, parsed.
fn object(line: &str) -> Map<String, Json> {
    match serde_json::from_str(line) {
        Ok(Json::Object(m)) => m,
        _ => panic!("not a JSON object: {line}"),
    }
}

/// What `weir count CHAIN` prints.
fn count(db: &Path, chain: &str) -> u64 {
    let out = run(&["count", "--db", s(db), chain]);
    ok(&out, chain).trim().parse().unwrap()
}

/// `_path` of a schema, as the JSON writer names it.
fn path(schema: &str) -> &str {
    schema.strip_prefix("zeek.").unwrap_or(schema)
}

/// Whether the JSON value `j` is the expected set value `v`.
fn matches(v: &V, j: &Json) -> bool {
    let close = |x: f64, y: f64, rel: f64| (x - y).abs() <= rel * x.abs().max(y.abs()).max(1.0);
    match v {
        V::Null => j.is_null(),
        V::Int(x) => {
            j.as_u64().map(i128::from) == Some(*x) || j.as_i64().map(i128::from) == Some(*x)
        }
        V::Real(x) => j.as_f64().is_some_and(|y| close(*x, y, 1e-12)),
        V::Time(x) => j.as_str().is_some_and(|y| parse_time(y) == *x),
        V::Span(x) => j.as_f64().is_some_and(|y| close(*x as f64 / 1e9, y, 1e-12)),
        V::Str(x) | V::Net(x) => j.as_str() == Some(x),
        V::Addr(x) => j
            .as_str()
            .and_then(|y| y.parse().ok())
            .is_some_and(|y| mapped(y) == *x),
        V::Bool(x) => j.as_bool() == Some(*x),
        V::List(x) => j
            .as_array()
            .is_some_and(|y| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| matches(p, q))),
        V::About(x) => match j {
            Json::String(t) => close(*x, parse_time(t) as f64, 1e-11),
            j => j.as_f64().is_some_and(|y| close(*x, y, 1e-9)),
        },
    }
}

/// Whether the keys of `line` come in the order `keys` (the writer's order).
fn in_order(line: &str, keys: &[&str]) -> bool {
    let mut at = 0;
    for k in keys {
        match line[at..].find(&format!("{}:", Json::from(*k))) {
            Some(p) => at += p + 1,
            None => return false,
        }
    }
    true
}

/// Asserts that `got` (the chain's output) is `want`, event by event.
fn assert_events(chain: &str, got: &[String], want: &[Rec]) {
    for (i, (line, rec)) in got.iter().zip(want).enumerate() {
        let what = || format!("{chain}: event {i}:\n  got  {line}\n  want {rec:?}");
        let set: Vec<&(String, V)> = rec.fields.iter().filter(|(_, v)| !v.is_null()).collect();
        match &rec.source {
            // An event of the archive, whole: the line exported.
            Some(source) if rec.whole => assert!(*line == source.line, "{}", what()),
            // The fields kept of an archive's event: their text as exported, in their order.
            Some(source) => {
                let mut want = format!("{{\"_path\":{}", Json::from(path(&rec.schema)));
                for (k, _) in &set {
                    want.push(',');
                    want.push_str(&source.line[source.members[k].clone()]);
                }
                want.push('}');
                assert!(*line == want, "{}\n  line {want}", what());
            }
            // An aggregation: value by value.
            None => {
                let obj = object(line);
                let keys: Vec<&str> = set.iter().map(|(k, _)| k.as_str()).collect();
                assert_eq!(
                    obj.get("_path"),
                    Some(&Json::from(path(&rec.schema))),
                    "{}",
                    what()
                );
                assert_eq!(obj.len(), set.len() + 1, "{}", what());
                for (k, v) in &set {
                    assert!(obj.get(k).is_some_and(|j| matches(v, j)), "{k}: {}", what());
                }
                assert!(in_order(line, &keys), "key order: {}", what());
            }
        }
    }
    assert_eq!(
        got.len(),
        want.len(),
        "{chain}: {} events, want {}",
        got.len(),
        want.len()
    );
}

/// Runs `chain` over the corpus archive and asserts it prints `want`.
fn check(c: &Corpus, chain: &str, want: &[Rec]) {
    let got = export(&c.db, chain);
    assert_events(chain, &got, want);
    eprintln!("{:6}  {chain}", want.len());
}

// ---------------------------------------------------------------------------------------------
// Brute force: the operators, written plainly over `Rec`s
// ---------------------------------------------------------------------------------------------

fn filter(events: &[Rec], keep: impl Fn(&Rec) -> bool) -> Vec<Rec> {
    events.iter().filter(|e| keep(e)).cloned().collect()
}

fn is(e: &Rec, name: &str, v: V) -> bool {
    compare(&e.value(name), &v).is_eq() && !e.value(name).is_null()
}

fn text_of(s: &str) -> V {
    V::Str(s.to_string())
}

/// The field indices of `rec` that `name` names for `select`/`drop`: the fields it names,
/// else the fields of the record it names (`id`: `id.orig_h`, ...).
fn named(rec: &Rec, name: &str) -> Vec<usize> {
    let direct: Vec<usize> = (0..rec.fields.len())
        .filter(|&i| names(&rec.schema, &rec.fields[i].0, name))
        .collect();
    if !direct.is_empty() {
        return direct;
    }
    (0..rec.fields.len())
        .filter(|&i| {
            let f = &rec.fields[i].0;
            f.match_indices('.')
                .any(|(dot, _)| names(&rec.schema, &f[..dot], name))
        })
        .collect()
}

/// `select` (`keep`) or `drop` of `fields`: an event left without fields is dropped.
fn project(events: &[Rec], fields: &[&str], keep: bool) -> Vec<Rec> {
    let mut out = Vec::new();
    for e in events {
        let take: Vec<usize> = if keep {
            let mut take = Vec::new();
            for n in fields {
                for i in named(e, n) {
                    if !take.contains(&i) {
                        take.push(i);
                    }
                }
            }
            take
        } else {
            let gone: Vec<usize> = fields.iter().flat_map(|n| named(e, n)).collect();
            (0..e.fields.len()).filter(|i| !gone.contains(i)).collect()
        };
        if !take.is_empty() {
            let mut e2 = e.clone();
            e2.fields = take.iter().map(|&i| e.fields[i].clone()).collect();
            e2.whole = false;
            out.push(e2);
        }
    }
    out
}

/// `sort` by `keys` (name, descending): unset values and missing fields last in both
/// directions; stable.
fn sort(events: &[Rec], keys: &[(&str, bool)]) -> Vec<Rec> {
    let mut keyed: Vec<(Vec<V>, &Rec)> = events
        .iter()
        .map(|e| (keys.iter().map(|(k, _)| e.value(k)).collect(), e))
        .collect();
    // `sort_by` is stable.
    keyed.sort_by(|(a, _), (b, _)| {
        for ((x, y), (_, desc)) in a.iter().zip(b).zip(keys) {
            let o = match (x.is_null(), y.is_null()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ if *desc => compare(y, x),
                _ => compare(x, y),
            };
            if o.is_ne() {
                return o;
            }
        }
        Ordering::Equal
    });
    keyed.into_iter().map(|(_, e)| e.clone()).collect()
}

fn head(events: &[Rec], n: usize) -> Vec<Rec> {
    events[..n.min(events.len())].to_vec()
}

fn tail(events: &[Rec], n: usize) -> Vec<Rec> {
    events[events.len().saturating_sub(n)..].to_vec()
}

/// One aggregation of `summarize`, with the field it reads.
#[derive(Clone, Copy)]
enum Agg<'a> {
    /// `count()`.
    Events,
    /// `count(F)`: events where F is set.
    Count(&'a str),
    CountDistinct(&'a str),
    Distinct(&'a str),
    Sum(&'a str),
    Min(&'a str),
    Max(&'a str),
    Mean(&'a str),
}

/// The result of `agg` over the events of one group.
fn aggregate(agg: Agg<'_>, group: &[&Rec]) -> V {
    let elements =
        |f: &str| -> Vec<V> { group.iter().flat_map(|e| e.value(f).elements()).collect() };
    let distinct = |f: &str| -> Vec<V> {
        let mut seen = HashMap::new();
        for v in elements(f) {
            seen.entry(v.key()).or_insert(v);
        }
        let mut v: Vec<V> = seen.into_values().collect();
        v.sort_by(compare);
        v
    };
    match agg {
        Agg::Events => V::Int(group.len() as i128),
        Agg::Count(f) => V::Int(group.iter().filter(|e| !e.value(f).is_null()).count() as i128),
        Agg::CountDistinct(f) => V::Int(distinct(f).len() as i128),
        Agg::Distinct(f) => V::List(distinct(f)),
        Agg::Sum(f) => {
            let xs = elements(f);
            if xs.is_empty() {
                V::Null
            } else if xs.iter().all(|x| matches!(x, V::Int(_))) {
                V::Int(
                    xs.iter()
                        .map(|x| if let V::Int(n) = x { *n } else { 0 })
                        .sum(),
                )
            } else if xs.iter().all(|x| matches!(x, V::Span(_))) {
                V::Span(
                    xs.iter()
                        .map(|x| if let V::Span(n) = x { *n } else { 0 })
                        .sum(),
                )
            } else {
                V::Real(xs.iter().map(as_f64).sum())
            }
        }
        Agg::Min(f) => elements(f).into_iter().min_by(compare).unwrap_or(V::Null),
        Agg::Max(f) => elements(f).into_iter().max_by(compare).unwrap_or(V::Null),
        Agg::Mean(f) => {
            let xs = elements(f);
            if xs.is_empty() {
                return V::Null;
            }
            let n = xs.len() as f64;
            let exact = |x: &V| match x {
                V::Time(t) | V::Span(t) => *t,
                _ => 0,
            };
            match xs[0] {
                V::Span(_) => V::About(xs.iter().map(exact).sum::<i128>() as f64 / n / 1e9),
                V::Time(_) => V::About(xs.iter().map(exact).sum::<i128>() as f64 / n),
                _ => V::About(xs.iter().map(as_f64).sum::<f64>() / n),
            }
        }
    }
}

/// `summarize AGGS [by BY] [resolution R]` into events of `schema`: one per distinct
/// combination of the `by` values (first seen first; time values rounded down to a multiple
/// of `R` ns), or one over no events when there is no `by` and no input.
fn summarize_as(
    schema: &str,
    events: &[Rec],
    aggs: &[(&str, Agg<'_>)],
    by: &[&str],
    resolution: Option<i128>,
) -> Vec<Rec> {
    let mut groups: Vec<(Vec<V>, Vec<&Rec>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for e in events {
        let values: Vec<V> = by
            .iter()
            .map(|b| match (e.value(b), resolution) {
                (V::Time(t), Some(r)) => V::Time(t.div_euclid(r) * r),
                (v, _) => v,
            })
            .collect();
        let key = format!("{values:?}");
        let g = *index.entry(key).or_insert_with(|| {
            groups.push((values, Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(e);
    }
    if by.is_empty() && groups.is_empty() {
        groups.push((Vec::new(), Vec::new()));
    }
    groups
        .into_iter()
        .map(|(values, members)| {
            let mut fields: Vec<(String, V)> =
                by.iter().map(|b| b.to_string()).zip(values).collect();
            fields.extend(
                aggs.iter()
                    .map(|(name, agg)| (name.to_string(), aggregate(*agg, &members))),
            );
            Rec::made(schema, fields)
        })
        .collect()
}

fn summarize(
    events: &[Rec],
    aggs: &[(&str, Agg<'_>)],
    by: &[&str],
    resolution: Option<i128>,
) -> Vec<Rec> {
    summarize_as("weir.summarize", events, aggs, by, resolution)
}

/// `top F N` (`most`) or `rare F N`: the values of F (where set) with their count, by count
/// (descending for `top`), ties by value ascending; the first N.
fn top(events: &[Rec], field: &str, n: usize, most: bool) -> Vec<Rec> {
    let set = filter(events, |e| !e.value(field).is_null());
    let schema = if most { "weir.top" } else { "weir.rare" };
    let mut groups = summarize_as(schema, &set, &[("count", Agg::Events)], &[field], None);
    groups.sort_by(|a, b| {
        let c = compare(&a.fields[1].1, &b.fields[1].1);
        let c = if most { c.reverse() } else { c };
        c.then_with(|| compare(&a.fields[0].1, &b.fields[0].1))
    });
    head(&groups, n)
}

const SECOND: i128 = 1_000_000_000;
const HOUR: i128 = 3600 * SECOND;

// ---------------------------------------------------------------------------------------------
// where
// ---------------------------------------------------------------------------------------------

/// `where` after the leading expression and after other operators filters what reaches it,
/// in order: the same as the brute-force filter of the brute-force input.
#[test]
fn where_mid_chain_filters_what_reaches_it() {
    let Some(c) = corpus() else { return };
    let e = &c.events;
    let udp = filter(e, |e| is(e, "proto", text_of("udp")));
    let want = filter(&udp, |e| is(e, "id.resp_p", V::Int(53)));
    assert!(want.len() > 1000);
    check(c, "proto == \"udp\" | where id.resp_p == 53", &want);
    // After `tail`: only the last 6,000 events are filtered.
    let want = filter(&tail(e, 6000), |e| is(e, "status_code", V::Int(404)));
    assert!(!want.is_empty());
    check(c, "tail 6000 | where status_code == 404", &want);
    // A chain that starts with `where`, two of them, then `head`.
    let dns = filter(e, |e| &*e.schema == "zeek.dns");
    let want = head(
        &filter(&dns, |e| is(e, "rcode_name", text_of("NXDOMAIN"))),
        25,
    );
    assert_eq!(want.len(), 25);
    check(
        c,
        "where #type == \"zeek.dns\" | where rcode_name == \"NXDOMAIN\" | head 25",
        &want,
    );
}

// ---------------------------------------------------------------------------------------------
// select and drop
// ---------------------------------------------------------------------------------------------

/// `select` keeps the named fields in the order named (suffixes, qualified names, a record's
/// name for its fields, each field once); events whose schema has none of them are dropped, events whose
/// selected fields are all unset stay (as `{"_path":...}`).
#[test]
fn select_keeps_the_named_fields_in_order() {
    let Some(c) = corpus() else { return };
    let e = &c.events;
    for (chain, fields) in [
        (
            "select orig_h, zeek.conn.id.resp_p",
            &["orig_h", "zeek.conn.id.resp_p"][..],
        ),
        // A field named twice (`orig_h` is in `id`) comes once, where first named.
        ("select resp_p, id, orig_h", &["resp_p", "id", "orig_h"]),
        ("select id", &["id"]),
        ("select conn.id, uid", &["conn.id", "uid"]),
        ("select qtype_name, query", &["qtype_name", "query"]),
        ("select service", &["service"]),
    ] {
        let want = project(e, fields, true);
        check(c, chain, &want);
        assert!(!want.is_empty(), "{chain}: a weak test");
    }
    // Some schemas drop out entirely, and unset fields stay as an empty event.
    let want = project(e, &["qtype_name", "query"], true);
    assert!(want.iter().all(|r| &*r.schema == "zeek.dns"));
    let want = project(e, &["service"], true);
    assert!(want.iter().any(|r| r.fields[0].1.is_null()));
}

/// `drop` removes the named fields and keeps the rest in schema order; an event left without
/// fields is dropped, the other schemas' events stay.
#[test]
fn drop_removes_the_named_fields() {
    let Some(c) = corpus() else { return };
    let e = &c.events;
    for (chain, fields) in [
        ("drop id, uid, ts", &["id", "uid", "ts"][..]),
        (
            "drop zeek.conn.id.resp_p, orig_bytes",
            &["zeek.conn.id.resp_p", "orig_bytes"],
        ),
        ("drop answers, TTLs", &["answers", "TTLs"]),
    ] {
        check(c, chain, &project(e, fields, false));
    }
    // Every field of snmp: its events go, ftp's stay with what is left.
    let snmp = e.iter().find(|r| &*r.schema == "zeek.snmp").unwrap();
    let all: Vec<&str> = snmp.fields.iter().map(|(f, _)| f.as_str()).collect();
    let input = filter(e, |r| &*r.schema == "zeek.snmp" || &*r.schema == "zeek.ftp");
    let want = project(&input, &all, false);
    assert!(!want.is_empty() && want.iter().all(|r| &*r.schema == "zeek.ftp"));
    check(
        c,
        &format!(
            "#type in [\"zeek.snmp\", \"zeek.ftp\"] | drop {}",
            all.join(", ")
        ),
        &want,
    );
}

// ---------------------------------------------------------------------------------------------
// sort
// ---------------------------------------------------------------------------------------------

/// `sort ts` is the timeline across every log; `desc` reverses it; ties keep ID order.
#[test]
fn sort_ts_is_the_timeline_across_logs() {
    let Some(c) = corpus() else { return };
    let e = &c.events;
    let want = sort(e, &[("ts", false)]);
    // The corpus is not in time order, so the sort does something.
    assert_ne!(
        want.iter().map(|r| r.value("ts")).collect::<Vec<_>>(),
        e.iter().map(|r| r.value("ts")).collect::<Vec<_>>()
    );
    check(c, "sort ts", &want);
    check(c, "sort ts desc", &sort(e, &[("ts", true)]));
}

/// Events without the field (other schemas) or with it unset come last in both directions,
/// in ID order; values of several schemas compare with each other (addresses with IPv6 ones).
#[test]
fn sort_puts_events_without_the_key_last_stably() {
    let Some(c) = corpus() else { return };
    let e = &c.events;
    for (chain, keys) in [
        ("sort service", &[("service", false)][..]),
        ("sort service desc", &[("service", true)]),
        ("sort duration desc", &[("duration", true)]),
        ("sort id.orig_h", &[("id.orig_h", false)]),
        ("sort uid asc", &[("uid", false)]),
    ] {
        let want = sort(e, keys);
        check(c, chain, &want);
    }
    // Some events lack `service` or have it unset: they are last, in ID order.
    let want = sort(e, &[("service", true)]);
    let unset: Vec<&Rec> = e.iter().filter(|r| r.value("service").is_null()).collect();
    assert!(unset.len() > 100);
    let last = &want[want.len() - unset.len()..];
    assert!(last.iter().zip(&unset).all(|(a, b)| a.source == b.source));
}

/// Several keys: the later ones order the ties of the earlier ones.
#[test]
fn sort_by_several_keys() {
    let Some(c) = corpus() else { return };
    let e = &c.events;
    let keys = [("id.resp_p", true), ("id.orig_h", false), ("ts", false)];
    check(c, "sort id.resp_p desc, id.orig_h, ts", &sort(e, &keys));
    let keys = [("#type", false), ("ts", true)];
    check(c, "sort #type, ts desc", &sort(e, &keys));
}

/// `sort ... | head N` (which keeps only N) gives the first N of the full sort, also when N
/// exceeds what it holds at once (1024) and when it is 0.
#[test]
fn sort_then_head_is_the_start_of_the_full_sort() {
    let Some(c) = corpus() else { return };
    let e = &c.events;
    for (chain, keys, n) in [
        ("sort ts | head 5", &[("ts", false)][..], 5),
        ("sort duration desc | head 50", &[("duration", true)], 50),
        (
            "sort id.orig_h desc, ts | head 3000",
            &[("id.orig_h", true), ("ts", false)],
            3000,
        ),
        ("sort service | head 0", &[("service", false)], 0),
    ] {
        check(c, chain, &head(&sort(e, keys), n));
    }
}

// ---------------------------------------------------------------------------------------------
// head and tail
// ---------------------------------------------------------------------------------------------

/// `head` and `tail` take the first and last N events (10 without N), `head 0` none, and an N
/// beyond the input everything.
#[test]
fn head_and_tail_take_the_first_and_last_events() {
    let Some(c) = corpus() else { return };
    let e = &c.events;
    check(c, "head", &head(e, 10));
    check(c, "tail", &tail(e, 10));
    check(c, "head 0", &[]);
    check(c, "tail 0", &[]);
    check(c, "head 1234", &head(e, 1234));
    let tcp = filter(e, |r| is(r, "proto", text_of("tcp")));
    check(c, "proto == \"tcp\" | tail 7", &tail(&tcp, 7));
    check(
        c,
        "#type == \"zeek.ftp\" | head 1000",
        &filter(e, |r| &*r.schema == "zeek.ftp"),
    );
    check(c, "tail 100 | head 3", &head(&tail(e, 100), 3));
    check(c, "head 100 | tail 3", &tail(&head(e, 100), 3));
}

// ---------------------------------------------------------------------------------------------
// summarize
// ---------------------------------------------------------------------------------------------

/// Every aggregation over every event, without `by`: one event.
#[test]
fn summarize_every_aggregation_without_by() {
    let Some(c) = corpus() else { return };
    let aggs = [
        ("count()", Agg::Events),
        ("count(service)", Agg::Count("service")),
        ("count_distinct(id.orig_h)", Agg::CountDistinct("id.orig_h")),
        ("sum(orig_bytes)", Agg::Sum("orig_bytes")),
        ("sum(duration)", Agg::Sum("duration")),
        ("min(ts)", Agg::Min("ts")),
        ("max(ts)", Agg::Max("ts")),
        ("mean(duration)", Agg::Mean("duration")),
        ("mean(orig_bytes)", Agg::Mean("orig_bytes")),
        ("mean(ts)", Agg::Mean("ts")),
        ("distinct(proto)", Agg::Distinct("proto")),
        ("min(id.orig_h)", Agg::Min("id.orig_h")),
        ("max(uid)", Agg::Max("uid")),
    ];
    let want = summarize(&c.events, &aggs, &[], None);
    assert_eq!(want.len(), 1);
    let list: Vec<&str> = aggs.iter().map(|a| a.0).collect();
    check(c, &format!("summarize {}", list.join(", ")), &want);
}

/// `by` one field, two fields, `#type`; events without a `by` field form the group where it
/// is unset; `NAME=` names an aggregation.
#[test]
fn summarize_by_fields() {
    let Some(c) = corpus() else { return };
    let e = &c.events;
    let aggs = [
        ("count()", Agg::Events),
        ("sum(orig_bytes)", Agg::Sum("orig_bytes")),
        ("mean(orig_bytes)", Agg::Mean("orig_bytes")),
        ("min(duration)", Agg::Min("duration")),
        ("max(duration)", Agg::Max("duration")),
    ];
    let want = summarize(e, &aggs, &["proto"], None);
    assert!(
        want.iter().any(|r| r.fields[0].1.is_null()),
        "an unset group"
    );
    check(
        c,
        "summarize count(), sum(orig_bytes), mean(orig_bytes), min(duration), max(duration) by proto",
        &want,
    );
    let aggs = [
        ("n", Agg::Events),
        ("sum(resp_bytes)", Agg::Sum("resp_bytes")),
    ];
    check(
        c,
        "summarize n=count(), sum(resp_bytes) by id.resp_p, proto",
        &summarize(e, &aggs, &["id.resp_p", "proto"], None),
    );
    let aggs = [
        ("count()", Agg::Events),
        ("min(ts)", Agg::Min("ts")),
        ("max(ts)", Agg::Max("ts")),
        ("mean(ts)", Agg::Mean("ts")),
        ("count_distinct(uid)", Agg::CountDistinct("uid")),
    ];
    let want = summarize(e, &aggs, &["#type"], None);
    assert_eq!(want.len(), 7);
    check(
        c,
        "summarize count(), min(ts), max(ts), mean(ts), count_distinct(uid) by #type",
        &want,
    );
    // Unset values of the `by` field and of the aggregated fields.
    let conn = filter(e, |r| &*r.schema == "zeek.conn");
    let aggs = [
        ("count()", Agg::Events),
        ("count(service)", Agg::Count("service")),
        ("count(orig_bytes)", Agg::Count("orig_bytes")),
        ("sum(orig_bytes)", Agg::Sum("orig_bytes")),
    ];
    check(
        c,
        "#type == \"zeek.conn\" | summarize count(), count(service), count(orig_bytes), sum(orig_bytes) by service",
        &summarize(&conn, &aggs, &["service"], None),
    );
    // Of the rows a filter selects, by a field stored as a dictionary (numbers added by
    // each row's code).
    let big = filter(e, |r| {
        let v = r.value("orig_bytes");
        !v.is_null() && compare(&v, &V::Int(100)).is_gt()
    });
    let aggs = [
        ("count()", Agg::Events),
        ("sum(resp_bytes)", Agg::Sum("resp_bytes")),
        ("max(duration)", Agg::Max("duration")),
        ("min(ts)", Agg::Min("ts")),
    ];
    let want = summarize(&big, &aggs, &["proto"], None);
    assert!(want.len() >= 2);
    check(
        c,
        "orig_bytes > 100 | summarize count(), sum(resp_bytes), max(duration), min(ts) by proto",
        &want,
    );
}

/// `resolution` rounds time values of the `by` fields down: events per hour, and per half
/// hour and protocol.
#[test]
fn summarize_by_time_with_a_resolution() {
    let Some(c) = corpus() else { return };
    let e = &c.events;
    let want = summarize(e, &[("count()", Agg::Events)], &["ts"], Some(HOUR));
    assert!(want.len() > 20);
    check(c, "summarize count() by ts resolution 1h", &want);
    let aggs = [
        ("n", Agg::Events),
        ("sum(orig_bytes)", Agg::Sum("orig_bytes")),
    ];
    check(
        c,
        "summarize n=count(), sum(orig_bytes) by ts, proto resolution 30min",
        &summarize(e, &aggs, &["ts", "proto"], Some(HOUR / 2)),
    );
}

/// Grouping goes by field name across schemas: conn, dns and http events of one originator
/// fall in one group; each aggregation counts what its own field's schemas hold.
#[test]
fn summarize_groups_across_schemas_by_field_name() {
    let Some(c) = corpus() else { return };
    let three = ["zeek.conn", "zeek.dns", "zeek.http"];
    let input = filter(&c.events, |r| three.contains(&&*r.schema));
    let aggs = [
        ("count()", Agg::Events),
        ("count(query)", Agg::Count("query")),
        ("count(method)", Agg::Count("method")),
        ("sum(orig_bytes)", Agg::Sum("orig_bytes")),
        ("distinct(#type)", Agg::Distinct("#type")),
    ];
    let want = summarize(&input, &aggs, &["id.orig_h"], None);
    assert!(
        want.iter()
            .any(|g| matches!(&g.fields[5].1, V::List(l) if l.len() == 3)),
        "an originator in all three logs"
    );
    check(
        c,
        "#type in [\"zeek.conn\", \"zeek.dns\", \"zeek.http\"] | summarize count(), count(query), count(method), sum(orig_bytes), distinct(#type) by id.orig_h",
        &want,
    );
}

/// Containers (dns `answers`, `vector[string]`, and `TTLs`, `vector[interval]`) contribute
/// each element; `count(F)` counts the events where the container is set.
#[test]
fn summarize_aggregates_the_elements_of_containers() {
    let Some(c) = corpus() else { return };
    let dns = filter(&c.events, |r| &*r.schema == "zeek.dns");
    let aggs = [
        ("count()", Agg::Events),
        ("count(answers)", Agg::Count("answers")),
        ("count_distinct(answers)", Agg::CountDistinct("answers")),
        ("distinct(TTLs)", Agg::Distinct("TTLs")),
        ("sum(TTLs)", Agg::Sum("TTLs")),
        ("min(TTLs)", Agg::Min("TTLs")),
        ("max(answers)", Agg::Max("answers")),
        ("mean(TTLs)", Agg::Mean("TTLs")),
    ];
    let want = summarize(&dns, &aggs, &["qtype_name"], None);
    assert!(want
        .iter()
        .any(|g| matches!(&g.fields[4].1, V::List(l) if l.len() > 10)));
    let list: Vec<&str> = aggs.iter().map(|a| a.0).collect();
    check(
        c,
        &format!(
            "#type == \"zeek.dns\" | summarize {} by qtype_name",
            list.join(", ")
        ),
        &want,
    );
}

/// No input: without `by`, one event of the empty aggregation (`count()` 0, `distinct` empty,
/// `sum`, `min`, `max`, `mean` unset); with `by`, none. Also when a `where` after another
/// operator matches nothing.
#[test]
fn summarize_of_nothing() {
    let Some(c) = corpus() else { return };
    let aggs = [
        ("count()", Agg::Events),
        ("count(proto)", Agg::Count("proto")),
        ("count_distinct(uid)", Agg::CountDistinct("uid")),
        ("sum(orig_bytes)", Agg::Sum("orig_bytes")),
        ("min(ts)", Agg::Min("ts")),
        ("max(ts)", Agg::Max("ts")),
        ("mean(duration)", Agg::Mean("duration")),
        ("distinct(proto)", Agg::Distinct("proto")),
    ];
    let want = summarize(&[], &aggs, &[], None);
    assert_eq!(want.len(), 1);
    let list: Vec<&str> = aggs.iter().map(|a| a.0).collect();
    let list = list.join(", ");
    check(c, &format!("proto == \"nope\" | summarize {list}"), &want);
    check(
        c,
        &format!("head 100 | where proto == \"nope\" | summarize {list}"),
        &want,
    );
    check(
        c,
        &format!("proto == \"nope\" | summarize {list} by proto"),
        &[],
    );
    check(c, "head 0 | summarize count() by ts resolution 1h", &[]);
}

/// A `summarize`'s fields are named as written, so later operators name them so:
/// `sort count() desc`, `sum(count())` of another `summarize`, `where`, `select`.
#[test]
fn operators_after_summarize_name_its_fields() {
    let Some(c) = corpus() else { return };
    let dns = filter(&c.events, |r| is(r, "id.resp_p", V::Int(53)));
    let groups = summarize(&dns, &[("count()", Agg::Events)], &["id.orig_h"], None);
    let want = head(&sort(&groups, &[("count()", true)]), 5);
    check(
        c,
        "id.resp_p == 53 | summarize count() by id.orig_h | sort count() desc | head 5",
        &want,
    );
    let aggs = [
        ("count()", Agg::Events),
        ("sum(orig_bytes)", Agg::Sum("orig_bytes")),
    ];
    let groups = summarize(&c.events, &aggs, &["#type"], None);
    let want = sort(&groups, &[("sum(orig_bytes)", false), ("#type", true)]);
    check(
        c,
        "summarize count(), sum(orig_bytes) by #type | sort sum(orig_bytes), #type desc",
        &want,
    );
    // A summarize of a summarize: `sum(count())` reads the field `count()`.
    let aggs = [("count()", Agg::Events)];
    let pairs = summarize(&c.events, &aggs, &["proto", "id.resp_p"], None);
    let aggs = [
        ("sum(count())", Agg::Sum("count()")),
        ("count()", Agg::Events),
    ];
    let want = summarize(&pairs, &aggs, &["proto"], None);
    check(
        c,
        "summarize count() by proto, id.resp_p | summarize sum(count()), count() by proto",
        &want,
    );
    let aggs = [("n", Agg::Events)];
    let groups = summarize(&c.events, &aggs, &["#type"], None);
    let want = project(
        &filter(&groups, |g| as_f64(&g.value("n")) > 100.0),
        &["#type"],
        true,
    );
    assert!(want.len() > 1 && want.len() < groups.len());
    check(
        c,
        "summarize n=count() by #type | where n > 100 | select #type",
        &want,
    );
}

/// `summarize ... | sort AGG desc | head N` keeps what the whole sort would, ties in the
/// order of the groups' first events, whichever table holds them: by `uid`, nearly every group
/// counts 1, so the first uids of the archive win, spread over every table. (Tables of many
/// groups are weighed on all cores: the unit test in `exec/summarize.rs` covers that.)
#[test]
fn summarize_sort_head_breaks_ties_by_first_event_across_tables() {
    let Some(c) = corpus() else { return };
    let groups = summarize(&c.events, &[("count()", Agg::Events)], &["uid"], None);
    for n in [1, 7, 2000] {
        let want = head(&sort(&groups, &[("count()", true)]), n);
        assert_eq!(want.len(), n);
        check(
            c,
            &format!("summarize count() by uid | sort count() desc | head {n}"),
            &want,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// top and rare
// ---------------------------------------------------------------------------------------------

/// `top F [N]` and `rare F [N]`: the N (10 without N) most and least common set values with
/// their count; ties by value ascending (the plan is `summarize count() by F | sort count
/// desc, F | head N`); events where F is unset or missing do not count.
#[test]
fn top_and_rare_count_values() {
    let Some(c) = corpus() else { return };
    let e = &c.events;
    for (chain, field, n, most) in [
        ("top id.resp_p", "id.resp_p", 10, true),
        ("top id.orig_h 5", "id.orig_h", 5, true),
        ("rare id.resp_p 7", "id.resp_p", 7, false),
        ("top service 3", "service", 3, true),
        ("rare proto", "proto", 10, false),
        ("rare qtype_name 4", "qtype_name", 4, false),
        ("top answers 3", "answers", 3, true),
        ("rare TTLs 5", "TTLs", 5, false),
        ("top zeek.http.method", "zeek.http.method", 10, true),
        ("top #type", "#type", 10, true),
        // Numbers counted by their decoded column: durations and times beyond the array of
        // small values, counts, and the unset rows left out.
        ("top duration 5", "duration", 5, true),
        ("rare orig_bytes 6", "orig_bytes", 6, false),
        ("top ts 3", "ts", 3, true),
        ("top TTLs 4", "TTLs", 4, true),
    ] {
        let want = top(e, field, n, most);
        assert!(!want.is_empty(), "{chain}");
        check(c, chain, &want);
    }
    // Of the rows a filter selects only (the selected rows of each batch counted).
    let big = |r: &Rec| {
        let v = r.value("orig_bytes");
        !v.is_null() && compare(&v, &V::Int(100)).is_gt()
    };
    let udp = |r: &Rec| &*r.schema == "zeek.conn" && is(r, "proto", text_of("udp"));
    for (expr, keep, field, n) in [
        (
            "orig_bytes > 100",
            &big as &dyn Fn(&Rec) -> bool,
            "id.resp_p",
            5,
        ),
        ("orig_bytes > 100", &big, "duration", 3),
        (
            "#type == \"zeek.conn\" && proto == \"udp\"",
            &udp,
            "id.orig_p",
            4,
        ),
    ] {
        let want = top(&filter(e, keep), field, n, true);
        assert!(!want.is_empty(), "{expr}");
        check(c, &format!("{expr} | top {field} {n}"), &want);
    }
    // `rare id.resp_p 7` has ties (4 ports seen once, 2 twice), ordered by value.
    let want = top(e, "id.resp_p", 7, false);
    assert!(
        want.windows(2)
            .filter(|w| w[0].fields[1].1 == w[1].fields[1].1)
            .count()
            >= 3
    );
    // Ties of `#type` (2 ftp, 2 snmp events) by value, not in the order first seen (snmp).
    let input = filter(e, |r| {
        &*r.schema == "zeek.ftp"
            || (&*r.schema == "zeek.snmp"
                && compare(&r.value("ts"), &V::Time(parse_time("2011-08-10T11:30:00Z"))).is_lt())
    });
    for most in [true, false] {
        let want = top(&input, "#type", 10, most);
        assert_eq!(want.len(), 2);
        assert_eq!(want[0].fields[1].1, want[1].fields[1].1, "a tie");
        assert_eq!(want[0].fields[0].1, text_of("zeek.ftp"));
        let op = if most { "top" } else { "rare" };
        check(
            c,
            &format!(
                "#type == \"zeek.ftp\" || (#type == \"zeek.snmp\" && ts < 2011-08-10T11:30:00Z) | {op} #type"
            ),
            &want,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// weir count
// ---------------------------------------------------------------------------------------------

/// `weir count 'EXPR | OP'` prints the number of events the chain emits.
#[test]
fn count_is_the_number_of_events_out_of_the_chain() {
    let Some(c) = corpus() else { return };
    for chain in [
        "proto == \"udp\" | where id.resp_p == 53",
        "select query",
        "sort ts | head 7",
        "tail 3",
        "head 0",
        "summarize count() by proto",
        "proto == \"nope\" | summarize count()",
        "proto == \"nope\" | summarize count() by proto",
        "top id.resp_p 4",
        "rare #type",
    ] {
        let printed = export(&c.db, chain).len() as u64;
        assert_eq!(count(&c.db, chain), printed, "{chain}");
    }
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Malformed chains exit 2 before reading anything, with the message, the chain and a caret
/// under the problem.
#[test]
fn malformed_chains_exit_2_with_a_caret() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("none");
    let at = |t: &str, what: &str| t.find(what).unwrap();
    let cases: Vec<(&str, usize, &str)> = vec![
        (
            "x == 1 | frob 3",
            at("x == 1 | frob 3", "frob"),
            "unknown operator `frob`",
        ),
        (
            "proto == \"udp\" | head ten",
            at("proto == \"udp\" | head ten", "ten"),
            "expected a number of events, found `ten`",
        ),
        (
            "summarize avg(x)",
            at("summarize avg(x)", "avg"),
            "unknown aggregation `avg`",
        ),
        ("proto == \"udp\" | sort", 21, "`sort` expects a field name"),
        ("x == 1 |", 8, "expected an operator after `|`"),
        ("x == 1 | | head 3", 8, "expected an operator after `|`"),
        (
            "| head",
            0,
            "expected an expression or an operator before `|`",
        ),
        (
            "sort ts frob",
            at("sort ts frob", "frob"),
            "unexpected input after `sort`'s arguments",
        ),
        (
            "summarize count() by ts resolution soon",
            at("summarize count() by ts resolution soon", "soon"),
            "`resolution` expects a positive duration",
        ),
        ("top", 3, "`top` expects a field name"),
        ("head 3 | where", 14, "`where` needs an expression"),
        ("head 3 | where ts >", 19, "expected a value"),
        (
            "summarize count() | sort count(a, b)",
            at("summarize count() | sort count(a, b)", "(a, b)"),
            "unexpected input after `sort`'s arguments",
        ),
    ];
    for (chain, pos, message) in cases {
        for cmd in ["export", "count"] {
            let out = run(&[cmd, "--db", s(&db), chain]);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{cmd} {chain}: {err}");
            assert!(out.stdout.is_empty(), "{chain}");
            assert!(err.contains(message), "{chain}: {err}");
            let lines: Vec<&str> = err.lines().collect();
            let k = lines
                .iter()
                .position(|l| *l == format!("  {chain}"))
                .unwrap_or_else(|| panic!("{chain}: the chain is not quoted: {err}"));
            let caret = format!("{}^", " ".repeat(2 + chain[..pos].chars().count()));
            assert_eq!(lines.get(k + 1), Some(&caret.as_str()), "{chain}: {err}");
            assert!(
                err.contains(&format!("at column {}", pos + 1)),
                "{chain}: {err}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------------

/// Events of the generated archive of [`memory_of_sort_head_and_summarize_is_bounded`].
const MEMORY_EVENTS: u64 = 200_000;
/// Bytes of the `pad` string of each generated event.
const PAD: usize = 1000;
/// The peak RSS that `sort ts | head 5` and `summarize count() by proto` stay below.
const BOUND_KIB: u64 = 80 * 1024;
/// The memory a `summarize` group may take at most, beyond the bound of a few groups.
const GROUP_BYTES: u64 = 512;

/// The time of generated event `i`, in ms after the first: a permutation of the event
/// numbers, so that the earliest events are spread through the archive (the first five are
/// events 152745, 170424, 188103, 5782 and 23461).
fn memory_t(i: u64) -> u64 {
    (i * 7919 + 12_345) % MEMORY_EVENTS
}

/// Event `i` of the generated log: its time, a unique `uid`, three protocols, and a `pad`
/// that makes each row about 1 KB.
fn memory_row(i: u64, pad: &str) -> String {
    let t = memory_t(i);
    format!(
        "{}.{:06}\tC{i:010}\t{}\t{pad}{i}\n",
        1_600_000_000 + t / 1000,
        (t % 1000) * 1000,
        ["tcp", "udp", "icmp"][(i % 3) as usize]
    )
}

/// The search works on every core, with a few batches in flight per core: the memory
/// bounds below hold for [`MEMORY_CPUS`] cores, and the measured runs are pinned to that many
/// (with `taskset`) on a machine with more.
const MEMORY_CPUS: usize = 2;

/// The first [`MEMORY_CPUS`] CPUs this process may run on (`Cpus_allowed_list`), when it may
/// run on more.
fn cpus_to_pin() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    let mut cpus = Vec::new();
    for part in list.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(a.parse::<usize>().ok()?..=b.parse::<usize>().ok()?);
    }
    (cpus.len() > MEMORY_CPUS).then(|| {
        let first: Vec<String> = cpus[..MEMORY_CPUS].iter().map(usize::to_string).collect();
        first.join(",")
    })
}

/// Runs `weir ARGS` under `/usr/bin/time` (and `taskset`, see [`MEMORY_CPUS`]); its stdout
/// and its peak RSS in KiB (`None` without `/usr/bin/time`, or on more cores without
/// `taskset`).
fn measured(args: &[&str]) -> (String, Option<u64>) {
    let time = Path::new("/usr/bin/time");
    let taskset = Path::new("/usr/bin/taskset");
    let pin = cpus_to_pin();
    let measurable = time.exists() && (pin.is_none() || taskset.exists());
    let bin = common::cli::weir().get_program().to_owned();
    let mut cmd = if measurable {
        let mut c = Command::new(time);
        c.arg("-f").arg("maxrss=%M");
        if let Some(cpus) = &pin {
            c.arg(taskset).arg("-c").arg(cpus);
        }
        c.arg(bin);
        c
    } else {
        Command::new(bin)
    };
    let out = cmd
        .env_remove("WEIR_DB")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    let rss = err
        .lines()
        .filter_map(|l| l.strip_prefix("maxrss="))
        .next_back()
        .and_then(|v| v.trim().parse().ok());
    (text(&out.stdout), rss.filter(|_| measurable))
}

/// Bounded memory: over a generated archive of 200,000 events of about 1 KB each (~206 MB
/// of rows, 2.5 times the bound), `sort ts | head 5` keeps 5 events (at most 1,024 at a
/// time), not all of them, and `summarize count() by proto` one entry per group: both peak
/// below 80 MiB (measured: 48 and 43 MB on 2 cores), where a buffer of the events would need
/// the ~206 MB of rows and more (`sort ts | tail 1`, a sort without a limit, peaks at
/// ~610 MB). The high-cardinality `summarize count() by uid` (200,000 groups) takes memory in
/// proportion to its groups: at most 512 bytes each above the low-cardinality one (measured:
/// 102 MB, ~300 bytes a group in a debug build), also below the rows' size; and more than 64
/// bytes each, so the measurement does see memory that grows. The results are checked too.
/// The peak RSS comes from `/usr/bin/time -f %M`; without it only the results are checked
/// (with a note).
///
/// Numbers: 2 million small events were the first plan, but a debug build imports ~64,000
/// small events/s and scans ~125,000/s, so the test would take over a minute; fewer, larger
/// rows keep the rows scanned 2.5 times the bound in ~25 s (import ~8 s, each run 4 to 7 s).
/// Small batches (`--batch-size 1000`, ~1 MB) keep the search's own buffers (four batches in
/// flight per core) small next to the bound.
#[test]
fn memory_of_sort_head_and_summarize_is_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let mut child = common::cli::weir()
        .args([
            "import",
            "--quiet",
            "--db",
            s(&db),
            "--batch-size",
            "1000",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let mut w = BufWriter::with_capacity(1 << 20, stdin);
        w.write_all(
            b"#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n\
              #path\tconn\n#fields\tts\tuid\tproto\tpad\n#types\ttime\tstring\tenum\tstring\n",
        )?;
        let pad = "x".repeat(PAD);
        for i in 0..MEMORY_EVENTS {
            w.write_all(memory_row(i, &pad).as_bytes())?;
        }
        w.flush()
    });
    let out = child.wait_with_output().unwrap();
    ok(&out, "import the generated log");
    writer.join().unwrap().unwrap();
    let rows_bytes = MEMORY_EVENTS * (PAD as u64 + 30);
    assert!(rows_bytes > 2 * BOUND_KIB * 1024);

    // `sort ts | head 5`: the 5 earliest, wherever they are in the archive.
    let chain = "sort ts | head 5";
    let (stdout, sort_rss) = measured(&["export", "--db", s(&db), "--to", "json", chain]);
    let got: Vec<Json> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut want: Vec<(u64, u64)> = (0..MEMORY_EVENTS)
        .map(|i| (memory_t(i), i))
        .filter(|&(t, _)| t < 5)
        .collect();
    want.sort();
    let uids: Vec<String> = want.iter().map(|(_, i)| format!("C{i:010}")).collect();
    let got_uids: Vec<&str> = got.iter().map(|e| e["uid"].as_str().unwrap()).collect();
    assert_eq!(got_uids, uids, "{chain}");
    assert!(
        want.iter().any(|&(_, i)| i > MEMORY_EVENTS / 2),
        "spread out"
    );
    assert!(
        want.iter().any(|&(_, i)| i < MEMORY_EVENTS / 2),
        "spread out"
    );

    // `summarize count() by proto`: three groups.
    let chain = "summarize count() by proto";
    let (stdout, few_rss) = measured(&["export", "--db", s(&db), "--to", "json", chain]);
    let mut got: Vec<(String, u64)> = stdout
        .lines()
        .map(|l| {
            let e: Json = serde_json::from_str(l).unwrap();
            (
                e["proto"].as_str().unwrap().to_string(),
                e["count()"].as_u64().unwrap(),
            )
        })
        .collect();
    got.sort();
    let n = |r: u64| (0..MEMORY_EVENTS).filter(|i| i % 3 == r).count() as u64;
    let want = vec![
        ("icmp".into(), n(2)),
        ("tcp".into(), n(0)),
        ("udp".into(), n(1)),
    ];
    assert_eq!(got, want, "{chain}");

    // `summarize count() by uid`: one group per event.
    let chain = "summarize count() by uid";
    let (stdout, many_rss) = measured(&["count", "--db", s(&db), chain]);
    assert_eq!(stdout.trim(), MEMORY_EVENTS.to_string(), "{chain}");

    let (Some(sort_rss), Some(few_rss), Some(many_rss)) = (sort_rss, few_rss, many_rss) else {
        eprintln!("note: /usr/bin/time (or taskset) is missing: peak memory not checked");
        return;
    };
    eprintln!(
        "peak RSS: sort|head {sort_rss} KiB, summarize by proto {few_rss} KiB, by uid {many_rss} KiB; rows {} MB",
        rows_bytes / 1_000_000
    );
    assert!(sort_rss < BOUND_KIB, "sort ts | head 5: {sort_rss} KiB");
    assert!(few_rss < BOUND_KIB, "summarize by proto: {few_rss} KiB");
    let groups_kib = MEMORY_EVENTS * GROUP_BYTES / 1024;
    assert!(
        many_rss < few_rss + groups_kib,
        "summarize by uid: {many_rss} KiB, by proto {few_rss} KiB"
    );
    // The measurement sees memory that grows with the groups.
    assert!(
        many_rss > few_rss + MEMORY_EVENTS * 64 / 1024,
        "summarize by uid: {many_rss} KiB, by proto {few_rss} KiB"
    );
}
