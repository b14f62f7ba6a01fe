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
use weir::unstable::codec::arrow::push_escaped_utf8;
use weir::unstable::codec::zeek::scalar::{push_addr, push_subnet};
use weir::unstable::store::Archive;
use weir::unstable::types::Type;
use weir::unstable::value::Value;

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

/// Whether python3 can import every engine of `tests/engines/engines_lake.py`; `false` after a
/// note outside CI.
///
/// # Panics
/// When they are missing and `CI=true`.
fn all_engines_present() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import pyarrow, duckdb, polars, datafusion"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let note = "python3 with pyarrow, duckdb, polars and datafusion not found \
                    (pip install pyarrow duckdb polars datafusion)";
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but {note}: .ci/run installs them");
        }
        eprintln!("note: {note}: skipping this test");
    }
    ok
}

/// Every log of the corpus: the TSV logs, the JSON log, the unit logs.
fn corpus_logs(corpus: &Path) -> Vec<String> {
    let mut logs: Vec<String> = Vec::new();
    for dir in [corpus.to_path_buf(), corpus.join("unit")] {
        let mut here: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy().to_string();
                n.ends_with(".log") || n.ends_with(".log.gz") || n.ends_with(".json")
            })
            .map(|p| p.display().to_string())
            .collect();
        here.sort();
        logs.extend(here);
    }
    logs
}

/// The archive of the whole corpus and its lake (`weir export --to parquet`), made once per
/// run of the test binary: (temporary directory, archive, lake).
fn corpus_lake() -> Option<&'static (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf)> {
    static LAKE: std::sync::OnceLock<
        Option<(tempfile::TempDir, std::path::PathBuf, std::path::PathBuf)>,
    > = std::sync::OnceLock::new();
    LAKE.get_or_init(|| {
        let corpus = common::corpus::dir()?;
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("db");
        let logs = corpus_logs(&corpus);
        let mut args = vec!["import", "-q", "--db", db.to_str().unwrap()];
        args.extend(logs.iter().map(String::as_str));
        ok(&run(&args), "import the corpus");
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
            "export --to parquet",
        );
        Some((tmp, db, lake))
    })
    .as_ref()
}

/// The Parquet files under `dir`, sorted.
fn parquet_files(dir: &Path) -> Vec<std::path::PathBuf> {
    common::files_with_extension(dir, "parquet")
}

/// The count of events `expr` matches in `db`, by weir's own query engine.
fn weir_count(db: &Path, expr: &str) -> u64 {
    let out = run(&["count", "--db", db.to_str().unwrap(), expr]);
    ok(&out, expr).trim().parse().unwrap()
}

/// The five answers per schema, from the archive's values (not weir's query engine): rows,
/// `duration` over ten minutes, `id.resp_p` 53, `ts` in [from, to), `uid` equal to `uid`;
/// null where the schema lacks the field.
fn five_answers(db: &Path, from_ns: i64, to_ns: i64, uid: &str) -> BTreeMap<String, [Json; 5]> {
    let archive = Archive::open(db).unwrap();
    let mut out: BTreeMap<String, [Json; 5]> = BTreeMap::new();
    for b in archive.scan() {
        let b = b.unwrap();
        let schema = b.schema().clone();
        let pos = |name: &str| schema.fields.iter().position(|f| f.name == name);
        let (dur, resp, ts, uidf) = (pos("duration"), pos("id.resp_p"), pos("ts"), pos("uid"));
        let entry = out
            .entry(schema.name.clone())
            .or_insert_with(|| [json!(0), Json::Null, Json::Null, Json::Null, Json::Null]);
        // A field any schema of the name has is a column of its partition: count from 0.
        for (k, p) in [(1, dur), (2, resp), (3, ts), (4, uidf)] {
            if p.is_some() && entry[k].is_null() {
                entry[k] = json!(0);
            }
        }
        let bump = |v: &mut Json| *v = json!(v.as_u64().unwrap() + 1);
        for row in b.to_batch().to_values().unwrap() {
            bump(&mut entry[0]);
            let at = |p: Option<usize>| p.map(|i| &row[i]);
            let long = match at(dur) {
                Some(Value::Interval(ns)) => *ns > 600_000_000_000,
                Some(Value::Double(s)) => *s > 600.0,
                Some(Value::Count(n)) => *n > 600,
                _ => false,
            };
            if long {
                bump(&mut entry[1]);
            }
            if matches!(at(resp), Some(Value::Port(53) | Value::Count(53))) {
                bump(&mut entry[2]);
            }
            if matches!(at(ts), Some(Value::Time(t)) if (from_ns..to_ns).contains(t)) {
                bump(&mut entry[3]);
            }
            if matches!(at(uidf), Some(Value::String(u)) if u == uid.as_bytes()) {
                bump(&mut entry[4]);
            }
        }
    }
    out
}

#[test]
fn the_corpus_lake_has_one_schema_per_partition_and_one_type_per_field_name() {
    let Some((_, _, lake)) = corpus_lake() else {
        return;
    };
    let mut partitions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut types: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for f in parquet_files(lake) {
        let file = std::fs::File::open(&f).unwrap();
        let arrow = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .schema()
            .clone();
        let rel = f.strip_prefix(lake).unwrap().to_string_lossy().to_string();
        let partition = rel.split('/').next().unwrap().to_string();
        partitions
            .entry(partition)
            .or_default()
            .push(format!("{:?}", arrow.fields()));
        for field in arrow.fields() {
            types
                .entry(field.name().clone())
                .or_default()
                .insert(field.data_type().to_string());
            if field.metadata().get("zeek.type").map(String::as_str) == Some("interval") {
                assert_eq!(field.data_type().to_string(), "Float64", "{rel}");
            }
        }
    }
    assert!(partitions.len() > 30, "{}", partitions.len());
    for (p, schemas) in &partitions {
        assert!(
            schemas.windows(2).all(|w| w[0] == w[1]),
            "{p}: several schemas"
        );
    }
    for (name, t) in &types {
        assert_eq!(t.len(), 1, "field {name} has the types {t:?}");
    }
}

#[test]
fn duckdb_polars_datafusion_and_pyarrow_load_the_corpus_lake_per_partition_and_whole() {
    let Some((tmp, db, lake)) = corpus_lake() else {
        return;
    };
    if !all_engines_present() {
        return;
    }
    // A uid of the corpus (its first conn event), and an hour of 2009-11-18.
    let first = run(&[
        "export",
        "--db",
        db.to_str().unwrap(),
        "--to",
        "json",
        "-n",
        "1",
        "#type == \"zeek.conn\"",
    ]);
    let first: Json = serde_json::from_str(ok(&first, "export").lines().next().unwrap()).unwrap();
    let uid = first["uid"].as_str().unwrap().to_string();
    let (from, to) = ("2009-11-18T10:00:00Z", "2009-11-18T11:00:00Z");
    let from_ns = 1_258_538_400_000_000_000;
    let to_ns = from_ns + 3_600_000_000_000;
    let answers = five_answers(db, from_ns, to_ns, &uid);
    // The totals agree with weir's own queries.
    let total = |k: usize| -> u64 { answers.values().map(|a| a[k].as_u64().unwrap_or(0)).sum() };
    assert_eq!(total(1), weir_count(db, "duration > 10min"));
    assert_eq!(total(2), weir_count(db, "id.resp_p == 53"));
    assert_eq!(
        total(3),
        weir_count(db, "ts >= 2009-11-18T10:00:00 && ts < 2009-11-18T11:00:00")
    );
    assert_eq!(total(4), weir_count(db, &format!("uid == \"{uid}\"")));
    assert!(total(1) > 0 && total(2) > 0 && total(3) > 0 && total(4) > 0);
    let schemas: Map<String, Json> = answers
        .iter()
        .map(|(s, a)| {
            let keys = ["rows", "duration", "resp_p", "range", "uid"];
            let m: Map<String, Json> = keys
                .iter()
                .zip(a)
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect();
            (s.clone(), Json::Object(m))
        })
        .collect();
    let want = tmp.path().join("five.json");
    let expected = json!({"uid": uid, "from": from, "to": to, "schemas": schemas});
    std::fs::write(&want, serde_json::to_vec(&expected).unwrap()).unwrap();
    let script = common::root().join("tests/engines/engines_lake.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&want)
        .arg(lake)
        .output()
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{report}");
    assert!(out.status.success(), "{report}");
    assert!(report.contains(": 0 problems"), "{report}");
}

#[test]
fn parquet_written_by_pyarrow_duckdb_and_polars_with_their_defaults_imports() {
    if !all_engines_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let script = common::root().join("tests/engines/write_foreign.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What the script wrote, as weir's JSON writer gives it (the name of a schema without
    // metadata is that of the source's default, `zeek.json`).
    let want = [
        r#"{"_path":"json","ts":"2024-01-01T00:00:00.123456Z","uid":"Ca","n":1,"x":1.5,"tags":["a","b"]}"#,
        r#"{"_path":"json","ts":"2024-01-02T00:00:00.000000Z","uid":"Cb","n":2,"tags":[]}"#,
        r#"{"_path":"json","n":3,"x":-2.25}"#,
    ];
    for name in [
        "pyarrow-snappy",
        "pyarrow-gzip",
        "pyarrow-lz4",
        "pyarrow-zstd",
        "duckdb",
        "polars",
    ] {
        let file = tmp.path().join(format!("{name}.parquet"));
        let got = ok(
            &run(&["convert", "--to", "json", file.to_str().unwrap()]),
            name,
        );
        let got: Vec<&str> = got.lines().collect();
        assert_eq!(got, want, "{name}");
        // And into an archive.
        let db = tmp.path().join(format!("db-{name}"));
        ok(
            &run(&[
                "import",
                "-q",
                "--db",
                db.to_str().unwrap(),
                file.to_str().unwrap(),
            ]),
            name,
        );
        assert_eq!(weir_count(&db, "n >= 1"), 3, "{name}");
    }
    // Other widths and encodings (issue 59): read as weir's types, values exact.
    let widths = [
        (
            "widths.parquet",
            vec![
                r#"{"_path":"json","n":-1,"u":0,"small":0,"f":0.5,"d":"2009-11-18T00:00:00.000000Z","t":"2009-11-18T08:00:00.000000Z"}"#,
                r#"{"_path":"json","n":0,"u":1,"small":1000,"f":1.5,"d":"2009-11-19T00:00:00.000000Z","t":"2009-11-18T08:00:01.000000Z"}"#,
                r#"{"_path":"json","n":1,"u":2,"small":2000,"f":2.5,"d":"2009-11-20T00:00:00.000000Z","t":"2009-11-18T08:00:02.000000Z"}"#,
            ],
        ),
        (
            "widths.arrow",
            vec![
                r#"{"_path":"json","b":-1,"big":"x","k":"a"}"#,
                r#"{"_path":"json","b":0,"big":"y","k":"b"}"#,
                r#"{"_path":"json","b":127,"k":"a"}"#,
            ],
        ),
    ];
    for (name, want) in widths {
        let file = tmp.path().join(name);
        let got = ok(
            &run(&["convert", "--to", "json", file.to_str().unwrap()]),
            name,
        );
        assert_eq!(got.lines().collect::<Vec<_>>(), want, "{name}");
    }
    // `--schema` names a file without weir's metadata, as it names JSON without `_path`.
    let dns = tmp.path().join("unnamed-dns.parquet");
    let db = tmp.path().join("db-dns");
    ok(
        &run(&[
            "import",
            "-q",
            "--schema",
            "zeek.dns",
            "--db",
            db.to_str().unwrap(),
            dns.to_str().unwrap(),
        ]),
        "--schema zeek.dns",
    );
    assert_eq!(
        weir_count(&db, "#type == \"zeek.dns\" && query == \"example.org\""),
        1
    );
    // A file that claims zeek.conn with `ts` as text is refused, naming the file, the column
    // and both types.
    let bad = tmp.path().join("claims-conn.parquet");
    let out = run(&["convert", "--to", "json", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let msg = common::cli::text(&out.stderr);
    for part in [
        "claims-conn.parquet",
        "field ts",
        "zeek.conn",
        "time",
        "Utf8",
    ] {
        assert!(msg.contains(part), "{part}: {msg}");
    }
}
