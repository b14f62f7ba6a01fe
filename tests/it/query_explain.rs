//! `--explain` (issue 56, item 1): `weir export --explain EXPR` and `weir count --explain
//! EXPR` print the physical plan (the scan spec, the operators) with what each pushdown rule
//! moved, and the segments and batches the catalog and the sketches keep, without running
//! the query; the serve API answers the same with `"explain": true`, as JSON. One generated
//! archive of 20,000 `conn` events in 40 batches of 500 (`n` = 3 x the event number, so a
//! range of `n` is a range of batches).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::cli::{ok, run, s};
use crate::common::conn_log;
use crate::serve::{post, serve};

/// The archive of events 0..20,000 in batches of 500.
fn archive(dir: &Path) -> PathBuf {
    let db = dir.join("db");
    let log = dir.join("conn.log");
    std::fs::write(&log, conn_log::log(0..20_000)).unwrap();
    let out = run(&[
        "import",
        "-q",
        "--db",
        s(&db),
        "--batch-size",
        "500",
        s(&log),
    ]);
    ok(&out, "import");
    db
}

/// `weir export --explain EXPR`.
fn explain(db: &Path, expr: &str) -> String {
    ok(
        &run(&["export", "--explain", "--db", s(db), expr]),
        "export --explain",
    )
}

/// The line of `text` that starts with `prefix` (after its indent).
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .map(str::trim)
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{text}"))
}

#[test]
fn explain_shows_each_pushdown_rule_and_the_pruning() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path());

    // filter into scan: the leading `where`s are the predicate; the sketches keep only the
    // last batch (n > 59000: events 19,667..); a later `where` stays an operator.
    let t = explain(&db, "n > 59000 | where n > 1 | head 3");
    assert_eq!(line(&t, "predicate:"), "predicate: (n > 59000) && (n > 1)");
    assert_eq!(line(&t, "1."), "1. head 3");
    assert_eq!(
        line(&t, "batches:"),
        "batches: 40 in the segments opened, 39 pruned by their metadata, 1 read (500 events)"
    );
    let t = explain(&db, "head 3 | where n > 1");
    assert_eq!(line(&t, "predicate:"), "predicate: every event");
    assert_eq!(line(&t, "2."), "2. where n > 1");
    assert_eq!(
        line(&t, "batches:"),
        "batches: 40 in the segments opened, 0 pruned by their metadata, 40 read (20000 events)"
    );

    // top-N with a shared cut-off (and the limit pushed into the sort), late
    // materialization of the events kept.
    let t = explain(&db, "sort ts desc | head 10");
    assert_eq!(
        line(&t, "top-N:"),
        "top-N: batches best first by ts descending, at most 10 of each, none past the operator's cut-off"
    );
    assert_eq!(
        line(&t, "1."),
        "1. sort ts desc [keeps 10] [fed by the scan's top-N, publishes its cut-off]"
    );
    assert_eq!(
        line(&t, "columns:"),
        "columns: ts [late materialization: the events that come out are read whole by ID]"
    );
    let t = explain(&db, "tail 5");
    assert!(line(&t, "top-N:").starts_with("top-N: batches best first by #id descending"));
    // Unbounded: no top-N, whole events; bounded but not first: no top-N, late
    // materialization still.
    let t = explain(&db, "sort ts desc");
    assert!(!t.contains("top-N"), "{t}");
    assert_eq!(line(&t, "columns:"), "columns: every field");
    let t = explain(&db, "where n > 1 | head 1 | sort ts | head 2");
    assert!(!t.contains("top-N"), "{t}");
    assert_eq!(line(&t, "1."), "1. head 1");
    assert!(line(&t, "columns:").starts_with("columns: ts [late"), "{t}");

    // Partial then final aggregation, the top-N of the sort pushed into the aggregation,
    // and the projection to the fields read.
    let t = explain(&db, "top id.resp_p 5");
    assert_eq!(
        line(&t, "partial aggregation:"),
        "partial aggregation: each batch's groups on its columns"
    );
    assert_eq!(line(&t, "columns:"), "columns: id.resp_p");
    let first = line(&t, "1.");
    assert!(
        first.contains("[final aggregation of the scan's partial one]"),
        "{t}"
    );
    assert!(
        first.contains("[emits only its first 5 by count desc, id.resp_p]"),
        "{t}"
    );
    let t = explain(
        &db,
        "where n > 5 | summarize sum(n) by proto | select proto",
    );
    assert_eq!(line(&t, "columns:"), "columns: proto, n");
    // An aggregation after another operator is not pushed down.
    let t = explain(&db, "head 100 | summarize count() by proto");
    assert!(!t.contains("partial aggregation"), "{t}");
    assert!(!t.contains("final aggregation"), "{t}");
}

#[test]
fn count_explains_without_counting_and_errors_as_a_query_does() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path());
    let t = ok(
        &run(&["count", "--explain", "--db", s(&db), "n < 10"]),
        "count --explain",
    );
    assert_eq!(line(&t, "predicate:"), "predicate: n < 10");
    assert!(!t.lines().any(|l| l.trim() == "4"), "{t}");
    assert_eq!(
        line(&t, "batches:"),
        "batches: 40 in the segments opened, 39 pruned by their metadata, 1 read (500 events)"
    );
    // A field no schema has is refused as the query itself would refuse it (exit 2).
    let out = run(&["export", "--explain", "--db", s(&db), "nosuch > 1 | head 1"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = run(&["export", "--explain", "--db", s(&db), "n > 1 | sort"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn the_api_answers_the_plan_as_json_and_text() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path());
    let srv = serve(&db, &["--listen", "127.0.0.1:0"]);
    let a = srv.addr;
    let got = post(
        a,
        "/api/v1/query",
        &json!({"query": "n > 59000 | sort ts desc | head 10", "explain": true}),
    );
    assert_eq!(got.status, 200, "{}", got.text());
    let v: Value = got.json();
    assert_eq!(v["plan"]["scan"]["predicate"], json!("n > 59000"));
    assert_eq!(
        v["plan"]["scan"]["top_n"],
        json!({"field": "ts", "desc": true, "per_batch": 10})
    );
    assert_eq!(v["plan"]["scan"]["columns"], json!(["ts"]));
    assert_eq!(v["plan"]["scan"]["late_materialization"], json!(true));
    assert_eq!(v["plan"]["operators"][0]["op"], json!("sort"));
    assert_eq!(v["plan"]["operators"][0]["limit"], json!(10));
    assert_eq!(v["plan"]["operators"][1], json!({"op": "head", "n": 10}));
    assert_eq!(v["pruning"]["batches"], json!(40));
    assert_eq!(v["pruning"]["batches_pruned"], json!(39));
    assert_eq!(v["pruning"]["events_kept"], json!(500));
    // The text is what the CLI prints.
    assert_eq!(
        v["text"].as_str().unwrap(),
        explain(&db, "n > 59000 | sort ts desc | head 10")
    );
    let got = post(
        a,
        "/api/v1/count",
        &json!({"query": "summarize count() by proto", "explain": true}),
    );
    assert_eq!(got.status, 200, "{}", got.text());
    let v: Value = got.json();
    assert_eq!(v["plan"]["scan"]["partial_aggregation"], json!(true));
    assert_eq!(v["plan"]["operators"][0]["final_of_partial"], json!(true));
    assert!(v.get("count").is_none(), "{v}");
    // Without `explain`, the query runs as before.
    let got = post(a, "/api/v1/count", &json!({"query": "n < 10"}));
    assert_eq!(got.json(), json!({"count": 4}));
}
