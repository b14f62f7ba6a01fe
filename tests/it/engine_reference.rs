//! The engine against a plain reference evaluator (issue 56, "Done means"): random
//! expressions over random events, and over every segment format fixture, each answered by
//! the engine through the public API (`weir::Db`, `db.query(text)`, `.count()`,
//! `.write(OutputFormat::Json, ..)`; imports by the `weir` binary) and by the reference in
//! `reference/` (which evaluates the expression's syntax tree on the test's own values), and
//! compared: the count, the matching events (by `uid`, or `#id` for the fixtures), `EXPR |
//! head N`, `EXPR | sort F [desc] | head N` (ties kept in ID order) and `EXPR | summarize
//! count() by F`. The expressions combine every operator with literals of the field's type (and
//! one time in twelve another type: the engine must then refuse the query where the reference
//! says the comparison is well-typed for no field), `&&`, `||`, `!`, field names in full, as a
//! suffix and schema-qualified, type extractors, bare literals, `#type`, `#timestamp`, `#id`
//! and `#field`.
//!
//! No construct is skipped: every disagreement found while this was written was the test's
//! (none was the engine's). One that is the engine's is skipped here by name, with its
//! reproducer, until it is fixed.
//!
//! The random events (a few schemas of every Zeek type, unset values, empty strings and
//! containers) are written as Zeek TSV and imported under every `--compression` codec, with
//! and without sketches (`--no-sketches`), in batches of 7 events and segments of 16 KiB (many
//! batches and segments); more events are then appended to the write-ahead log without a
//! seal (`weir::unstable::store::Store`, dropped unclosed), so that queries read them there.
//!
//! Fixed seeds in CI ([`CASES`] cases of [`EXPRS`] expressions); `WEIR_REFEVAL_CASES=N` runs
//! N cases, `WEIR_REFEVAL_SEED=S` starts at seed S (a failure prints the seed that replays
//! it); the long mode is `cargo test --test it engine_reference:: -- --include-ignored`
//! ([`LONG_CASES`] cases at least).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::collections::BTreeMap;
use std::fs;

use crate::common;
use crate::reference::eval::{self, order};
use crate::reference::expr::{Expr, Gen};
use crate::reference::random::{self, Pick};
use crate::reference::tsv::{Event, Log};
use crate::reference::value::{Ty, Val};
use common::cli::{ok, run, s};
use common::rng::Rng;
use weir::unstable::codec::zeek::tsv;
use weir::unstable::segment::{Codec, Compression};
use weir::unstable::store::{Store, StoreOptions};
use weir::unstable::wal::SyncPolicy;
use weir::{Db, OutputFormat};

/// Cases (data sets) of the CI run.
const CASES: u64 = 2;
/// Cases of the long mode, at least.
const LONG_CASES: u64 = 40;
/// Expressions per case (and per fixture).
const EXPRS: usize = 40;
/// The first seed of the CI run.
const SEED: u64 = 0x7eed_5eed;
/// Events imported per case, and appended to the write-ahead log after.
const IMPORTED: usize = 160;
const IN_WAL: usize = 30;

/// The codecs of `weir import --compression`.
const CODECS: [(&str, Codec); 3] = [
    ("zstd", Codec::Zstd),
    ("lz4", Codec::Lz4),
    ("none", Codec::None),
];

/// What the engine answered differently from the reference (the reproducer first).
struct Findings(Vec<String>);

impl Findings {
    fn check<T: PartialEq + std::fmt::Debug>(&mut self, what: &str, engine: T, reference: T) {
        if engine != reference {
            self.0.push(format!(
                "{what}\n    engine:    {engine:?}\n    reference: {reference:?}"
            ));
        }
    }

    fn assert_none(self, replay: &str) {
        assert!(
            self.0.is_empty(),
            "{} disagreements of the engine with the reference ({replay}):\n{}",
            self.0.len(),
            self.0
                .iter()
                .take(12)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

fn env_u64(var: &str) -> Option<u64> {
    std::env::var(var).ok().and_then(|s| s.parse().ok())
}

#[test]
fn engine_agrees_with_the_reference_on_random_events() {
    let cases = env_u64("WEIR_REFEVAL_CASES").unwrap_or(CASES);
    random_cases(cases);
}

#[test]
#[ignore = "the long mode: cargo test --test it engine_reference:: -- --include-ignored"]
fn engine_agrees_with_the_reference_on_random_events_long() {
    let cases = env_u64("WEIR_REFEVAL_CASES").unwrap_or(0);
    random_cases(cases.max(LONG_CASES));
}

fn random_cases(cases: u64) {
    let first = env_u64("WEIR_REFEVAL_SEED").unwrap_or(SEED);
    for seed in first..first + cases {
        let mut findings = Findings(Vec::new());
        random_case(seed, &mut findings);
        findings.assert_none(&format!(
            "WEIR_REFEVAL_SEED={seed} WEIR_REFEVAL_CASES=1 replays it"
        ));
    }
}

/// One data set imported every way, and [`EXPRS`] expressions over it.
fn random_case(seed: u64, findings: &mut Findings) {
    let mut rng = Rng(seed | 1);
    let mut log = Log {
        schemas: random::schemas(&mut rng, 3),
        events: Vec::new(),
    };
    let imported = random::events(&mut rng, &log, 0, IMPORTED);
    let in_wal = random::events(&mut rng, &log, IMPORTED, IN_WAL);
    log.events = imported.iter().chain(&in_wal).cloned().collect();

    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("events.log");
    fs::write(&file, log.to_tsv(&imported)).unwrap();
    let wal_tsv = log.to_tsv(&in_wal);
    let (wal_batches, report) =
        tsv::read_all(wal_tsv.as_bytes(), weir::ReaderOptions::new("wal events")).unwrap();
    assert_eq!(report.skipped, 0, "the test's TSV reads whole");

    let gen = Gen {
        schemas: &log.schemas,
        events: log.events.len(),
        strings: Vec::new(),
        addrs: Vec::new(),
        times: Vec::new(),
        counts: Vec::new(),
    };
    let exprs: Vec<Expr> = (0..EXPRS).map(|_| gen.expr(&mut rng, 3)).collect();
    let queries: Vec<Queries> = exprs
        .iter()
        .map(|e| Queries::new(&mut rng, e, &log))
        .collect();
    tally(&format!("seed {seed}"), &queries, log.events.len());

    for (name, codec) in CODECS {
        for sketches in [true, false] {
            let db = tmp.path().join(format!("db-{name}-{sketches}"));
            let mut args = vec![
                "import",
                "--db",
                s(&db),
                "--compression",
                name,
                "--batch-size",
                "7",
                // The reference's order is the file's line order, schemas interleaved.
                "--batch-in-order",
                "--max-segment-size",
                "16KiB",
                "-q",
            ];
            if !sketches {
                args.push("--no-sketches");
            }
            args.push(s(&file));
            ok(&run(&args), "weir import of the random events");
            let opts = StoreOptions {
                sync: SyncPolicy::Never,
                compression: Compression::new(codec),
                sketches,
                ..StoreOptions::default()
            };
            let (mut store, _) = Store::open_writer(&db, opts).unwrap();
            for b in &wal_batches {
                store.append(b.clone()).unwrap();
            }
            drop(store); // unsealed: the events stay in the write-ahead log

            let db = Db::open(&db).unwrap();
            let at = format!("seed {seed}, --compression {name}, sketches {sketches}");
            // The reference's event order is the import's ID order.
            findings.check(
                &format!("[{at}] every event, in ID order"),
                uids(&db, ""),
                Some(log.events.iter().map(uid).collect()),
            );
            for q in &queries {
                q.compare(&db, &log, Ident::Uid, &at, findings);
            }
        }
    }
}

/// Prints how many expressions are refused, match nothing, some or every event: a test that
/// only ever compared empty answers would prove little.
fn tally(what: &str, queries: &[Queries], events: usize) {
    let refused = queries.iter().filter(|q| q.refused.is_some()).count();
    let live: Vec<&Queries> = queries.iter().filter(|q| q.refused.is_none()).collect();
    let none = live.iter().filter(|q| q.hits.is_empty()).count();
    let all = live.iter().filter(|q| q.hits.len() == events).count();
    eprintln!(
        "{what}: {} expressions: {refused} refused, {none} match nothing, {all} every event, {} some",
        queries.len(),
        live.len() - none - all
    );
    for q in queries {
        eprintln!(
            "  {:>4} {}",
            if q.refused.is_some() {
                "ERR".to_string()
            } else {
                q.hits.len().to_string()
            },
            q.text
        );
    }
}

/// An event's `uid` (the random events' identity).
fn uid(e: &Event) -> String {
    match &e.values[1] {
        Some(Val::Str(s)) => String::from_utf8_lossy(s).into_owned(),
        other => panic!("a random event's uid is a string: {other:?}"),
    }
}

/// The JSON lines of `text`'s export (`None` when the query fails).
fn json(db: &Db, text: &str) -> Option<Vec<serde_json::Value>> {
    let mut out = Vec::new();
    db.query(text)
        .ok()?
        .write(OutputFormat::Json, &mut out)
        .ok()?;
    Some(
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect(),
    )
}

/// The `uid`s of `text`'s export, in order.
fn uids(db: &Db, text: &str) -> Option<Vec<String>> {
    Some(
        json(db, text)?
            .iter()
            .map(|v| v["uid"].as_str().unwrap_or("?").to_string())
            .collect(),
    )
}

/// How the events of a query's output are told apart.
#[derive(Clone, Copy)]
enum Ident {
    /// By `uid` (unique in the random events), in the export of the query itself.
    Uid,
    /// By event ID, through `| select #id` (IDs are the positions in the source logs).
    Id,
}

impl Ident {
    /// The events that `text` outputs, in order.
    fn engine(self, db: &Db, text: &str) -> Option<Vec<String>> {
        match self {
            Ident::Uid => uids(db, text),
            Ident::Id => Some(
                json(db, &format!("{text} | select #id"))?
                    .iter()
                    .map(|v| v["#id"].to_string())
                    .collect(),
            ),
        }
    }

    /// Event `i` of the log.
    fn of(self, log: &Log, i: usize) -> String {
        match self {
            Ident::Uid => uid(&log.events[i]),
            Ident::Id => i.to_string(),
        }
    }
}

/// The count of `text` (`None` when the query fails).
fn count(db: &Db, text: &str) -> Option<u64> {
    db.query(text).ok()?.count().ok()
}

/// One expression and the operators run after it.
struct Queries {
    text: String,
    /// Why the engine must refuse it, if it must.
    refused: Option<String>,
    /// The indices of the matching events (in ID order).
    hits: Vec<usize>,
    head: usize,
    /// `sort` key: a field name of one sortable type in every schema that has it, descending.
    sort: Option<(String, bool)>,
    /// `summarize count() by` key.
    by: Option<String>,
}

impl Queries {
    fn new(rng: &mut Rng, e: &Expr, log: &Log) -> Queries {
        let refused = eval::refused(e, &log.schemas);
        let hits = (0..log.events.len())
            .filter(|&i| eval::matches(e, log, i))
            .collect();
        let sortable = fields_of_one_type(log, |t| {
            t.is_number()
                || matches!(
                    t,
                    Ty::Time | Ty::Interval | Ty::String | Ty::Enum | Ty::Bool
                )
        });
        let mut groupable = fields_of_one_type(log, |t| {
            matches!(t, Ty::String | Ty::Enum | Ty::Count | Ty::Int | Ty::Bool)
        });
        // One group per event says little.
        groupable.retain(|f| f != "uid");
        Queries {
            text: e.text(),
            refused,
            hits,
            head: rng.range(1, 6) as usize,
            sort: (!sortable.is_empty()).then(|| (rng.pick(&sortable).clone(), rng.chance(50))),
            by: (!groupable.is_empty()).then(|| rng.pick(&groupable).clone()),
        }
    }

    fn compare(&self, db: &Db, log: &Log, ident: Ident, at: &str, f: &mut Findings) {
        let text = &self.text;
        let engine = count(db, text);
        if let Some(why) = &self.refused {
            f.check(&format!("[{at}] {text}: refused ({why})"), engine, None);
            return;
        }
        f.check(
            &format!("[{at}] count of {text}"),
            engine,
            Some(self.hits.len() as u64),
        );
        let want: Vec<String> = self.hits.iter().map(|&i| ident.of(log, i)).collect();
        f.check(
            &format!("[{at}] export of {text}"),
            ident.engine(db, text),
            Some(want.clone()),
        );
        let head = format!("{text} | head {}", self.head);
        let first: Vec<String> = want.iter().take(self.head).cloned().collect();
        f.check(
            &format!("[{at}] {head}"),
            ident.engine(db, &head),
            Some(first),
        );
        if let Some((field, desc)) = &self.sort {
            let q = format!(
                "{text} | sort {field}{} | head {}",
                if *desc { " desc" } else { "" },
                self.head
            );
            let want = self
                .sorted(log, field, *desc)
                .into_iter()
                .map(|i| ident.of(log, i));
            f.check(
                &format!("[{at}] {q}"),
                ident.engine(db, &q),
                Some(want.collect()),
            );
        }
        if let Some(by) = &self.by {
            let q = format!("{text} | summarize count() by {by}");
            let engine = json(db, &q).map(|rows| {
                let mut groups: Vec<(String, u64)> = rows
                    .iter()
                    .map(|r| {
                        (
                            r[by.as_str()].to_string(),
                            r["count()"].as_u64().unwrap_or(0),
                        )
                    })
                    .collect();
                groups.sort();
                groups
            });
            f.check(&format!("[{at}] {q}"), engine, Some(self.groups(log, by)));
        }
    }

    /// The first [`Queries::head`] matches by `field` (stable; events without it last).
    fn sorted(&self, log: &Log, field: &str, desc: bool) -> Vec<usize> {
        let mut keyed: Vec<(Option<&Val>, usize)> = self
            .hits
            .iter()
            .map(|&i| (field_value(log, &log.events[i], field), i))
            .collect();
        keyed.sort_by(|(a, _), (b, _)| match (a, b) {
            (Some(a), Some(b)) if desc => order(b, a),
            (Some(a), Some(b)) => order(a, b),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        });
        keyed.iter().take(self.head).map(|&(_, i)| i).collect()
    }

    /// The groups of the matches by `by`: the key as JSON, and the count.
    fn groups(&self, log: &Log, by: &str) -> Vec<(String, u64)> {
        let mut groups: BTreeMap<String, u64> = BTreeMap::new();
        for &i in &self.hits {
            let key = match field_value(log, &log.events[i], by) {
                None => serde_json::Value::Null,
                Some(Val::Str(s)) => serde_json::Value::from(json_text(s)),
                Some(Val::Count(x)) => serde_json::Value::from(*x),
                Some(Val::Int(x)) => serde_json::Value::from(*x),
                Some(Val::Bool(b)) => serde_json::Value::from(*b),
                Some(other) => panic!("no group key of {other:?}"),
            };
            *groups.entry(key.to_string()).or_default() += 1;
        }
        groups.into_iter().collect()
    }
}

/// A string as the JSON output writes it (as Zeek does): bytes that are no UTF-8 as `\xHH`.
fn json_text(s: &[u8]) -> String {
    let mut out = String::new();
    for chunk in s.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// The value of the field named exactly `name` in event `e` (`None`: unset or absent).
fn field_value<'a>(log: &Log, e: &'a Event, name: &str) -> Option<&'a Val> {
    let i = log.schemas[e.schema].index(name)?;
    e.values[i].as_ref()
}

/// The full field names (no other field's suffix) that have one type, accepted by `ok`, in
/// every schema that has them.
fn fields_of_one_type(log: &Log, ok: impl Fn(&Ty) -> bool) -> Vec<String> {
    let mut types: BTreeMap<&str, Vec<&Ty>> = BTreeMap::new();
    for s in &log.schemas {
        for (n, t) in &s.fields {
            types.entry(n).or_default().push(t);
        }
    }
    let all: Vec<&str> = types.keys().copied().collect();
    types
        .iter()
        .filter(|(n, ts)| {
            ts.iter().all(|t| *t == ts[0] && ok(t))
                && !all.iter().any(|o| o != *n && o.ends_with(&format!(".{n}")))
        })
        .map(|(n, _)| n.to_string())
        .collect()
}

/// The fixtures `archive-v1` .. `archive-v11`: the same import of `archive-v1.log` and
/// `all_types.log` (see `segment_format.rs`) by weir of each segment format.
const FORMATS: std::ops::RangeInclusive<u32> = 1..=11;

#[test]
fn engine_agrees_with_the_reference_on_every_segment_format_fixture() {
    let seed = env_u64("WEIR_REFEVAL_SEED").unwrap_or(SEED);
    let mut text = String::new();
    for name in ["archive-v1.log", "all_types.log"] {
        text.push_str(&fs::read_to_string(common::fixture(name)).unwrap());
    }
    let log = Log::parse(&text).expect("the fixtures' source logs read as Zeek TSV");
    assert_eq!(log.events.len(), 324, "the fixtures hold 324 events");
    let gen = fixture_gen(&log);
    let mut rng = Rng(seed | 1);
    let exprs: Vec<Expr> = (0..EXPRS).map(|_| gen.expr(&mut rng, 3)).collect();
    let queries: Vec<Queries> = exprs
        .iter()
        .map(|e| Queries::new(&mut rng, e, &log))
        .collect();
    tally(
        &format!("fixtures, seed {seed}"),
        &queries,
        log.events.len(),
    );
    let mut findings = Findings(Vec::new());
    for version in FORMATS {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        common::store::copy_dir(&common::fixture(&format!("archive-v{version}")), &dir);
        let db = Db::open(&dir).unwrap();
        let at = format!("seed {seed}, archive-v{version}");
        for q in &queries {
            q.compare(&db, &log, Ident::Id, &at, &mut findings);
        }
    }
    findings.assert_none(&format!("WEIR_REFEVAL_SEED={seed} replays it"));
}

/// The generator of expressions over the fixtures' fields, with literals also drawn from
/// their values (so that comparisons hit).
fn fixture_gen(log: &Log) -> Gen<'_> {
    let mut gen = Gen {
        schemas: &log.schemas,
        events: log.events.len(),
        strings: Vec::new(),
        addrs: Vec::new(),
        times: Vec::new(),
        counts: Vec::new(),
    };
    for (i, e) in log.events.iter().enumerate() {
        // Every 7th event's values: enough to hit, few enough to miss too.
        if i % 7 != 0 {
            continue;
        }
        for v in e.values.iter().flatten() {
            match v {
                Val::Str(s) if !s.is_empty() => gen.strings.push(s.clone()),
                Val::Addr(a) => gen.addrs.push(*a),
                Val::Time(t) => gen.times.push(*t),
                Val::Count(c) | Val::Port(c) => gen.counts.push(*c),
                _ => {}
            }
        }
    }
    gen
}
