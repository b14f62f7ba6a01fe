//! The search commands on the real binary: `weir export EXPR`, `weir count`, `weir get`,
//! `weir convert --where`, and `weir run` of a filter pipeline.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use common::cli::{ok, run, text};

fn fixture() -> String {
    common::fixture("query/custom.log").display().to_string()
}

fn import(db: &str) {
    let out = run(&["import", "--db", db, &fixture()]);
    ok(&out, "import");
}

#[test]
fn export_count_and_get() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db").display().to_string();
    import(&db);
    let out = ok(
        &run(&[
            "export",
            "--db",
            &db,
            "--to",
            "json",
            "resp_p == 53 && ok == T",
        ]),
        "export",
    );
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains("\"uid\":\"F1\""), "{out}");
    let out = ok(
        &run(&["export", "--db", &db, "--to", "json", "-n", "2"]),
        "export -n",
    );
    assert_eq!(out.lines().count(), 2);
    let out = ok(&run(&["count", "--db", &db]), "count");
    assert_eq!(out, "5\n");
    let out = ok(&run(&["count", "--db", &db, "10.0.0.0/8"]), "count");
    assert_eq!(out, "3\n");
    let out = ok(&run(&["get", "--db", &db, "--to", "json", "3", "0"]), "get");
    let uids: Vec<&str> = out
        .lines()
        .map(|l| &l[l.find("\"uid\"").unwrap() + 7..][..2])
        .collect();
    assert_eq!(uids, ["F4", "F1"]);
    // A missing ID is an error after the others are printed.
    let out = run(&["get", "--db", &db, "0", "99"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no event with ID 99"));
}

#[test]
fn bad_expressions_exit_2_with_a_caret() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db").display().to_string();
    import(&db);
    let out = run(&["export", "--db", &db, "uid == "]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("expected a value or an extractor after `==`"),
        "{err}"
    );
    assert!(err.contains("\n  uid == \n         ^"), "{err}");
    let out = run(&["count", "--db", &db, "ts == \"yesterday\""]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("field ts is of type time"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn convert_where_and_a_filter_pipeline() {
    let out = ok(
        &run(&[
            "convert",
            "--to",
            "json",
            "--where",
            "\"a\" in tags",
            &fixture(),
        ]),
        "convert --where",
    );
    assert_eq!(out.lines().count(), 2, "{out}");
    let out = run(&["convert", "--where", "(x", &fixture()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--where: invalid expression"),
        "{}",
        text(&out.stderr)
    );

    // The shipped filter pipeline keeps the non-DNS events and failed DNS lookups.
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db").display().to_string();
    let out = common::cli::weir()
        .args([
            "run",
            common::root()
                .join("pipelines/filter-noise.toml")
                .to_str()
                .unwrap(),
        ])
        .env("WEIR_INPUT", fixture())
        .env("WEIR_DB", &db)
        .output()
        .unwrap();
    ok(&out, "run filter-noise");
    assert_eq!(ok(&run(&["count", "--db", &db]), "count"), "5\n");
}

/// Batches are evaluated on all cores; `export -n N` still prints the first N matches in ID
/// order, whatever batch they are in.
#[test]
fn export_limits_give_the_first_matches_in_id_order() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db").display().to_string();
    let log = tmp.path().join("conn.log");
    std::fs::write(&log, common::conn_log::log(0..20_000)).unwrap();
    let out = run(&[
        "import",
        "--db",
        &db,
        "--batch-size",
        "500",
        &log.display().to_string(),
    ]);
    ok(&out, "import");
    // Events 0..1000 (the first two batches) and 19_667.. (the last one): 1333 in all.
    let expr = "id.orig_p < 1000 || n > 59000";
    let all = ok(
        &run(&["export", "--db", &db, "--to", "json", expr]),
        "export",
    );
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines.len(), 1333);
    let events: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let numbers = common::conn_log::numbers(&events);
    let want: Vec<u64> = (0..1000).chain(19_667..20_000).collect();
    assert_eq!(numbers, want);
    for n in [1usize, 499, 500, 501, 1000, 1001, 1333, 5000] {
        let out = ok(
            &run(&[
                "export",
                "--db",
                &db,
                "--to",
                "json",
                "-n",
                &n.to_string(),
                expr,
            ]),
            "export -n",
        );
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            lines[..n.min(1333)],
            "-n {n}"
        );
    }
    assert_eq!(ok(&run(&["count", "--db", &db, expr]), "count"), "1333\n");
}
