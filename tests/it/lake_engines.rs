//! weir's Parquet lake and Arrow IPC output read by real engines, pyarrow and DuckDB
//! (`tests/engines/check_lake.py`), checked against the archive: rows per schema, per column
//! of every type the count of set values, min, max, sums, distinct counts and container
//! sizes, and every value of one event per schema.
//!
//! Needs the Zeek corpus and python3 with `pyarrow` and `duckdb` (`.ci/run` installs them):
//! without them the test prints a note and skips, except under `CI=true`, where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::cli::{ok, run};
use serde_json::{json, Map, Value as Json};
use weir::codec::arrow::push_escaped_utf8;
use weir::codec::zeek::scalar::{push_addr, push_subnet};
use weir::store::Archive;
use weir::types::Type;
use weir::value::Value;

/// Whether python3 can import pyarrow and duckdb; `false` after a note outside CI.
///
/// # Panics
/// When they are missing and `CI=true`.
fn engines_present() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import pyarrow, duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let note = "python3 with pyarrow and duckdb not found (pip install pyarrow duckdb)";
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but {note}: .ci/run installs them");
        }
        eprintln!("note: {note}: skipping this test");
    }
    ok
}

/// The text of a string-like, address or subnet value as the lake holds it.
fn text(v: &Value) -> Option<String> {
    let mut bytes = Vec::new();
    match v {
        Value::String(s) => {
            let mut t = String::new();
            push_escaped_utf8(&mut t, s);
            return Some(t);
        }
        Value::Addr(a) => push_addr(&mut bytes, *a),
        Value::Subnet(a, p) => push_subnet(&mut bytes, *a, *p),
        _ => return None,
    }
    Some(String::from_utf8(bytes).unwrap())
}

/// A value as check_lake.py sees it: numbers, times and intervals (nanoseconds), text, lists.
fn plain(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Count(n) | Value::Port(n) => json!(n),
        Value::Int(n) | Value::Time(n) | Value::Interval(n) => json!(n),
        Value::Double(d) => json!(d),
        Value::List(l) => Json::Array(l.iter().map(plain).collect()),
        other => json!(text(other)),
    }
}

/// Statistics of one column, as check_lake.py computes them.
#[derive(Default)]
struct Stats {
    nonnull: u64,
    min: Option<Json>,
    max: Option<Json>,
    sum: i128,
    trues: u64,
    distinct: std::collections::HashSet<String>,
    elements: u64,
}

/// Orders two JSON scalars of one column (numbers or strings).
fn less(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::String(x), Json::String(y)) => x < y,
        (Json::Number(x), Json::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(x), Some(y), _, _) => x < y,
                (_, _, Some(x), Some(y)) => x < y,
                _ => x.as_f64() < y.as_f64(),
            }
        }
        _ => false,
    }
}

impl Stats {
    fn add(&mut self, ty: &Type, v: &Value) {
        if matches!(v, Value::Null) {
            return;
        }
        self.nonnull += 1;
        match v {
            Value::List(l) => {
                self.elements += l.len() as u64;
                return;
            }
            Value::Bool(b) => {
                self.trues += *b as u64;
                return;
            }
            Value::Double(d) if d.is_nan() => return,
            Value::Count(n) | Value::Port(n) => self.sum += *n as i128,
            Value::Int(n) if *ty == Type::Int => self.sum += *n as i128,
            _ => {}
        }
        let p = plain(v);
        if let Some(t) = text(v) {
            self.distinct.insert(t);
        }
        if self.min.as_ref().is_none_or(|m| less(&p, m)) {
            self.min = Some(p.clone());
        }
        if self.max.as_ref().is_none_or(|m| less(m, &p)) {
            self.max = Some(p);
        }
    }

    fn to_json(&self, ty: &Type) -> Json {
        let mut m = Map::new();
        m.insert("nonnull".into(), json!(self.nonnull));
        if ty.is_container() {
            m.insert("elements".into(), json!(self.elements));
        } else if *ty == Type::Bool {
            m.insert("true".into(), json!(self.trues));
        } else {
            m.insert("min".into(), self.min.clone().unwrap_or(Json::Null));
            m.insert("max".into(), self.max.clone().unwrap_or(Json::Null));
            if matches!(ty, Type::Count | Type::Int | Type::Port) {
                m.insert("sum".into(), json!(self.sum.to_string()));
            }
            if ty.is_stringy() || matches!(ty, Type::Addr | Type::Subnet) {
                m.insert("distinct".into(), json!(self.distinct.len()));
            }
        }
        Json::Object(m)
    }
}

/// Rows, columns in order with their type and stats, and the sample of one schema.
type SchemaStats = (u64, Vec<(String, Type, Stats)>, Option<Json>);

/// What the archive holds, as check_lake.py's EXPECTED.json.
fn expected(db: &Path) -> Json {
    let archive = Archive::open(db).unwrap();
    let mut schemas: BTreeMap<String, SchemaStats> = BTreeMap::new();
    for b in archive.scan() {
        let b = b.unwrap();
        let schema = b.schema().clone();
        let entry = schemas.entry(schema.name.clone()).or_insert_with(|| {
            let cols = schema
                .fields
                .iter()
                .map(|f| (f.name.clone(), f.ty.clone(), Stats::default()))
                .collect();
            (0, cols, None)
        });
        for row in b.to_batch().to_values().unwrap() {
            entry.0 += 1;
            for ((_, ty, stats), v) in entry.1.iter_mut().zip(&row) {
                stats.add(ty, v);
            }
            if entry.2.is_none() {
                let ts = schema.ts_index().and_then(|i| match row[i] {
                    Value::Time(t) => Some(t),
                    _ => None,
                });
                let date = match ts {
                    Some(t) => {
                        let days = t.div_euclid(86_400_000_000_000);
                        // Civil date of a day number (proleptic Gregorian).
                        let z = days + 719_468;
                        let era = z.div_euclid(146_097);
                        let doe = z - era * 146_097;
                        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
                        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
                        let mp = (5 * doy + 2) / 153;
                        let d = doy - (153 * mp + 2) / 5 + 1;
                        let m = if mp < 10 { mp + 3 } else { mp - 9 };
                        let y = yoe + era * 400 + (m <= 2) as i64;
                        format!("{y:04}-{m:02}-{d:02}")
                    }
                    None => "__HIVE_DEFAULT_PARTITION__".into(),
                };
                let values: Map<String, Json> = schema
                    .fields
                    .iter()
                    .zip(&row)
                    .map(|(f, v)| (f.name.clone(), plain(v)))
                    .collect();
                entry.2 = Some(json!({"date": date, "values": values}));
            }
        }
    }
    let mut out = Map::new();
    for (name, (rows, cols, sample)) in schemas {
        let columns: Map<String, Json> = cols
            .iter()
            .map(|(n, ty, st)| {
                (
                    n.clone(),
                    json!({"type": ty.to_string(), "stats": st.to_json(ty)}),
                )
            })
            .collect();
        out.insert(
            name,
            json!({"rows": rows, "columns": columns, "sample": sample}),
        );
    }
    Json::Object(out)
}

#[test]
fn pyarrow_and_duckdb_read_the_lake_and_the_arrow_stream_as_the_archive_holds_them() {
    let Some(corpus) = common::corpus::dir() else {
        return;
    };
    if !engines_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let mut args: Vec<String> = ["import", "-q", "--db"].map(String::from).to_vec();
    args.push(db.display().to_string());
    for log in ["conn", "dns", "http", "snmp"] {
        args.push(corpus.join(format!("{log}.log.gz")).display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&run(&args), "import");
    let lake = tmp.path().join("lake");
    let db_s = db.to_str().unwrap();
    ok(
        &run(&[
            "export",
            "--db",
            db_s,
            "--to",
            "parquet",
            "--output",
            lake.to_str().unwrap(),
        ]),
        "export --to parquet",
    );
    let arrow = tmp.path().join("all.arrow");
    let out = run(&["export", "--db", db_s, "--to", "arrow"]);
    ok(&out, "export --to arrow");
    std::fs::write(&arrow, &out.stdout).unwrap();
    let want = tmp.path().join("expected.json");
    std::fs::write(&want, serde_json::to_vec(&expected(&db)).unwrap()).unwrap();
    let script = common::root().join("tests/engines/check_lake.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&want)
        .arg(&lake)
        .arg(&arrow)
        .output()
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{report}");
    assert!(out.status.success(), "{report}");
    assert!(report.contains("checked 4 schemas"), "{report}");
}

#[test]
fn a_lake_imported_and_exported_again_is_the_same_lake() {
    let Some(corpus) = common::corpus::dir() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let conn = corpus.join("conn.log.gz");
    let http = corpus.join("http.log.gz");
    ok(
        &run(&[
            "import",
            "-q",
            "--db",
            db.to_str().unwrap(),
            conn.to_str().unwrap(),
            http.to_str().unwrap(),
        ]),
        "import",
    );
    let lake = tmp.path().join("lake");
    ok(
        &run(&[
            "export",
            "--db",
            db.to_str().unwrap(),
            "--to",
            "parquet",
            "--output",
            lake.to_str().unwrap(),
        ]),
        "export",
    );
    // Import the lake's files (found by their magic bytes) into a second archive, export
    // that again: the same events, file for file.
    let mut files: Vec<String> = Vec::new();
    let mut stack = vec![lake.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p.display().to_string());
            }
        }
    }
    files.sort();
    let db2 = tmp.path().join("db2");
    let mut args = vec!["import", "-q", "--db", db2.to_str().unwrap()];
    args.extend(files.iter().map(String::as_str));
    ok(&run(&args), "import the lake");
    let lake2 = tmp.path().join("lake2");
    ok(
        &run(&[
            "export",
            "--db",
            db2.to_str().unwrap(),
            "--to",
            "parquet",
            "--output",
            lake2.to_str().unwrap(),
        ]),
        "export again",
    );
    for f in &files {
        let rel = Path::new(f).strip_prefix(&lake).unwrap();
        let a = run(&["convert", "--to", "json", f]);
        let b = run(&["convert", "--to", "json", lake2.join(rel).to_str().unwrap()]);
        assert_eq!(ok(&a, "read"), ok(&b, "read again"), "{}", rel.display());
    }
    // And the archive's own TSV, schema by schema, is what the original archive gives.
    for schema in ["zeek.conn", "zeek.http"] {
        let expr = format!("#type == \"{schema}\"");
        let one = run(&[
            "export",
            "--db",
            db.to_str().unwrap(),
            "--to",
            "json",
            &expr,
        ]);
        let two = run(&[
            "export",
            "--db",
            db2.to_str().unwrap(),
            "--to",
            "json",
            &expr,
        ]);
        let mut a: Vec<String> = ok(&one, "export").lines().map(String::from).collect();
        let mut b: Vec<String> = ok(&two, "export").lines().map(String::from).collect();
        // The lake orders events by day within a schema: compare as multisets.
        a.sort();
        b.sort();
        assert_eq!(a.len(), b.len(), "{schema}");
        assert!(a == b, "{schema}: the events differ");
    }
}
