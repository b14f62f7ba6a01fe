//! No silent wrong answers (issue 59, items 3, 5 and 6), on the real binary: each case a
//! new user met gets the answer meant or a message that says what happened and what to
//! write instead, and every suggestion, when followed, gives the right answer.
//!
//! - `query ~ /google/` matches nothing (`~` is whole-value): a warning with the rewrite and
//!   its count; a pattern that matches nowhere gets no warning;
//! - `summarize count() by proto | sort count desc`: an error naming `count()`;
//! - `#type == "zeek.dns" | top orig_bytes`: a warning naming the schema that has it;
//! - `ts > 2009` suggests `2009-01-01` (not `@2009`, which is 1970), and following it counts
//!   the events after that day;
//! - `explore` over more results than `--max-events-query` says so without `-v`;
//! - `=` for `==`, an unquoted string, `~ "string"`, `--format`, an expression the shell
//!   split: each message carries the fix;
//! - after bad input, the advice is `--on-error skip`, not "rerun to resume".
//!
//! The archive is generated Zeek TSV (`zeek.conn`, `zeek.dns`); expected numbers come from
//! the generator.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::path::Path;

use crate::common;
use common::cli::{ok, run, s, text};

/// Events of each log.
const N: u64 = 200;
/// The first event's `ts` (2009-11-18T08:00:21Z).
const T0: u64 = 1_258_531_221;

const HEADER: &str =
    "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n";

/// DNS event `i`'s query: every fourth names google.
fn query(i: u64) -> String {
    match i % 4 {
        0 => format!("www{i}.google.com"),
        1 => format!("host{i}.example.org"),
        2 => format!("mail{i}.example.net"),
        _ => format!("cdn{i}.example.com"),
    }
}

/// A Zeek TSV log of `path` with `N` rows: `ts` (from `T0`, a second apart), `uid`
/// (`{uid}{i}`), `id.*` (from `10.0.0.{i % 9}` port `port + i` to `192.168.1.1:53`), `proto`
/// and one more field, `name` of type `ty`; row `i`'s values of these two are `tail(i)`.
fn log(
    path: &str,
    uid: char,
    port: u64,
    (name, ty): (&str, &str),
    tail: impl Fn(u64) -> (String, String),
) -> String {
    let mut s = format!(
        "{HEADER}#path\t{path}\n#fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto\t{name}\n#types\ttime\tstring\taddr\tport\taddr\tport\tenum\t{ty}\n"
    );
    for i in 0..N {
        let (proto, value) = tail(i);
        s.push_str(&format!(
            "{}.000000\t{uid}{i}\t10.0.0.{}\t{}\t192.168.1.1\t53\t{proto}\t{value}\n",
            T0 + i,
            i % 9,
            port + i,
        ));
    }
    s
}

fn conn_log() -> String {
    log("conn", 'C', 40_000, ("orig_bytes", "count"), |i| {
        let proto = ["udp", "tcp", "tcp", "icmp"][i as usize % 4];
        (proto.to_string(), (i * 10).to_string())
    })
}

fn dns_log() -> String {
    log("dns", 'D', 50_000, ("query", "string"), |i| {
        ("udp".to_string(), query(i))
    })
}

/// An archive of the conn and dns logs, written to `dir`.
fn archive(dir: &Path) -> String {
    let db = dir.join("db");
    let (conn, dns) = (dir.join("conn.log"), dir.join("dns.log"));
    std::fs::write(&conn, conn_log()).unwrap();
    std::fs::write(&dns, dns_log()).unwrap();
    ok(
        &run(&["import", "--db", s(&db), s(&conn), s(&dns)]),
        "import",
    );
    s(&db).to_string()
}

/// `weir ARGS`: exit status, stdout, stderr.
fn weir(args: &[&str]) -> (Option<i32>, String, String) {
    let out = run(args);
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn a_whole_value_pattern_that_matches_nothing_says_what_would() {
    let dir = tempfile::tempdir().unwrap();
    let db = archive(dir.path());
    let google = (0..N).filter(|i| query(*i).contains("google")).count();
    let (code, out, err) = weir(&["count", "--db", &db, "query ~ /google/"]);
    assert_eq!((code, out.trim()), (Some(0), "0"), "{err}");
    assert!(
        err.contains("`query ~ /.*google.*/`") && err.contains(&format!("matches {google} events")),
        "{err}"
    );
    // The rewrite, followed, gives that number.
    let (_, out, _) = weir(&["count", "--db", &db, "query ~ /.*google.*/"]);
    assert_eq!(out.trim(), google.to_string());
    // export says it too; a pattern found nowhere, or one that matched, says nothing.
    let (code, out, err) = weir(&["export", "--db", &db, "--to", "json", "query ~ /google/"]);
    assert_eq!((code, out.as_str()), (Some(0), ""));
    assert!(
        err.contains("matches nothing") || err.contains("matched nothing"),
        "{err}"
    );
    let (_, _, err) = weir(&["count", "--db", &db, "query ~ /yahoo/"]);
    assert!(!err.contains("warning"), "{err}");
    let (_, _, err) = weir(&["count", "--db", &db, "query ~ /www0\\.google\\.com/"]);
    assert!(!err.contains("warning"), "{err}");
}

#[test]
fn a_field_an_aggregation_renamed_is_an_error_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let db = archive(dir.path());
    let chain = "#type == \"zeek.conn\" | summarize count() by proto | sort count desc";
    let (code, out, err) = weir(&["export", "--db", &db, chain]);
    assert_eq!((code, out.as_str()), (Some(2), ""), "{err}");
    assert!(err.contains("did you mean `count()`?"), "{err}");
    // Following it sorts: udp 50, tcp 100, icmp 50 -> tcp first.
    let fixed = "#type == \"zeek.conn\" | summarize count() by proto | sort count() desc | head 1";
    let (code, out, err) = weir(&["export", "--db", &db, "--to", "json", fixed]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["proto"], "tcp", "{out}");
    assert_eq!(v["count()"], 100, "{out}");
    // After `top`, the fields are the field and `count`.
    let (code, _, err) = weir(&[
        "export",
        "--db",
        &db,
        "#type == \"zeek.dns\" | top query | sort cnt",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`query`, `count`"), "{err}");
}

#[test]
fn an_operator_on_a_field_the_kept_schemas_lack_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = archive(dir.path());
    let (code, out, err) = weir(&[
        "export",
        "--db",
        &db,
        "--to",
        "json",
        "#type == \"zeek.dns\" | top orig_bytes",
    ]);
    // The language's answer (empty), and a warning that says why.
    assert_eq!((code, out.as_str()), (Some(0), ""), "{err}");
    assert!(
        err.contains("warning")
            && err.contains("no field `orig_bytes` in zeek.dns")
            && err.contains("zeek.conn"),
        "{err}"
    );
    // A field of the kept schema, or the field over every schema: no warning.
    for chain in [
        "#type == \"zeek.dns\" | top id.orig_h 1",
        "top orig_bytes 1",
    ] {
        let (code, out, err) = weir(&["export", "--db", &db, "--to", "json", chain]);
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains("\"count\""), "{chain}: {out}");
        assert!(!err.contains("warning"), "{chain}: {err}");
    }
}

#[test]
fn a_year_compared_with_a_time_suggests_a_date_that_works() {
    let dir = tempfile::tempdir().unwrap();
    let db = archive(dir.path());
    let (code, _, err) = weir(&["count", "--db", &db, "ts > 2009"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("did you mean `2009-01-01`?"), "{err}");
    assert!(!err.contains("@2009"), "{err}");
    // Every event is of 2009-11-18: after 2009-01-01 all, after 2010-01-01 none.
    let (_, out, _) = weir(&["count", "--db", &db, "ts > 2009-01-01"]);
    assert_eq!(out.trim(), (2 * N).to_string());
    let (_, _, err) = weir(&["count", "--db", &db, "ts > 500"]);
    assert!(
        !err.contains("did you mean"),
        "no hint for a small number: {err}"
    );
}

#[test]
fn explore_says_when_it_explored_only_the_first_results() {
    let dir = tempfile::tempdir().unwrap();
    let db = archive(dir.path());
    let google = (0..N).filter(|i| query(*i).contains("google")).count();
    let expr = "query ~ /.*google.*/";
    let args = [
        "explore",
        "--db",
        &db,
        "--by",
        "id.orig_h",
        "-n",
        "1",
        "--to",
        "json",
    ];
    let (code, _, err) = weir(&[&args[..], &["--max-events-query", "7", expr]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(&format!("explored the first 7 of {google} results"))
            && err.contains("--max-events-query"),
        "{err}"
    );
    let all = google.to_string();
    let (_, _, err) = weir(&[&args[..], &["--max-events-query", &all, expr]].concat());
    assert!(!err.contains("explored the first"), "{err}");
}

#[test]
fn common_mistakes_get_the_fix_in_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let db = archive(dir.path());
    let cases: &[(&str, &str)] = &[
        ("id.orig_h = 10.0.0.1", "did you mean `==`?"),
        ("proto == tcp", "a string is quoted: `proto == \"tcp\"`"),
        ("uid == C17", "`uid == \"C17\"`"),
        ("query ~ \"google\"", "`query ~ /.*google.*/`"),
        ("query ~ \"google\"", "`\"google\" in query`"),
    ];
    for (expr, fix) in cases {
        let (code, _, err) = weir(&["count", "--db", &db, expr]);
        assert_eq!(code, Some(2), "{expr}: {err}");
        assert!(err.contains(fix), "{expr}: {err}");
    }
    // The fixes, followed, run.
    for (expr, want) in [
        ("id.orig_h == 10.0.0.1", N.div_ceil(9) * 2),
        ("proto == \"tcp\" && #type == \"zeek.conn\"", N / 2),
        ("\"google\" in query", N / 4),
    ] {
        let (code, out, err) = weir(&["count", "--db", &db, expr]);
        assert_eq!(
            (code, out.trim()),
            (Some(0), want.to_string().as_str()),
            "{expr}: {err}"
        );
    }
    let (code, _, err) = weir(&["export", "--db", &db, "--format", "json"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("`--to FORMAT`") && !err.contains("similar argument"),
        "{err}"
    );
    let (code, _, err) = weir(&["export", "--db", &db, "id.orig_h", "==", "10.0.0.1"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("quote it"), "{err}");
}

#[test]
fn bad_input_advises_skipping_not_rerunning() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("conn.log");
    let mut body = conn_log();
    let line = body.lines().count() + 1;
    body.push_str("broken\tline\n");
    std::fs::write(&log, body).unwrap();
    let db = dir.path().join("db");
    let (code, _, err) = weir(&["import", "--db", s(&db), "--batch-size", "50", s(&log)]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("--on-error skip") && err.contains(&format!(":{line}:")),
        "{err}"
    );
    assert!(!err.contains("rerun the same command to resume"), "{err}");
    // Following the advice imports the rest and reports the line.
    let (code, _, err) = weir(&["import", "--db", s(&db), "--on-error", "skip", s(&log)]);
    assert_eq!(code, Some(0), "{err}");
    let (_, out, _) = weir(&["count", "--db", s(&db)]);
    assert_eq!(out.trim(), N.to_string());
}

/// One timeline across logs (issue 59, item 1): `select #type, ...` keeps `#type`, and the
/// table and CSV show the events of both schemas as one list in the chain's order, a column
/// unset where a schema lacks the field.
#[test]
fn select_with_type_is_one_list_across_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let db = archive(dir.path());
    let chain = "id.orig_h == 10.0.0.1 | sort ts | head 6 | select #type, ts, uid, query";
    // The reference: the same events as JSON, each with its schema.
    let (code, json, err) = weir(&["export", "--db", &db, "--to", "json", chain]);
    assert_eq!(code, Some(0), "{err}");
    let events: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 6, "{json}");
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["#type"].as_str().unwrap())
        .collect();
    assert!(
        types.contains(&"zeek.conn") && types.contains(&"zeek.dns"),
        "{types:?}"
    );
    let (code, csv, err) = weir(&["export", "--db", &db, "--to", "csv", chain]);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "#type,ts,uid,query", "{csv}");
    assert_eq!(lines.len(), 7, "one header, six rows: {csv}");
    for (line, e) in lines[1..].iter().zip(&events) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[0], e["#type"], "{line}");
        assert_eq!(cells[2], e["uid"], "{line}");
        assert_eq!(cells[3], e["query"].as_str().unwrap_or(""), "{line}");
    }
    let (code, table, err) = weir(&["export", "--db", &db, "--to", "table", chain]);
    assert_eq!(code, Some(0), "{err}");
    let mut title: Vec<&str> = Vec::new();
    for t in &types {
        if !title.contains(t) {
            title.push(t);
        }
    }
    assert_eq!(
        table.lines().next(),
        Some(title.join(", ").as_str()),
        "{table}"
    );
    assert_eq!(table.matches("#type").count(), 1, "one header: {table}");
    assert_eq!(table.lines().count(), 2 + 6, "{table}");
    // `--by-schema`: a block with its header per run of one schema, as before the timeline.
    let runs = 1 + types.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(runs > 1, "the chain alternates schemas: {types:?}");
    let (code, csv, err) = weir(&["export", "--db", &db, "--to", "csv", "--by-schema", chain]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(csv.matches("#type,ts,uid,query").count(), runs, "{csv}");
    let rows: Vec<&str> = csv
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("#type"))
        .collect();
    assert_eq!(rows.len(), 6, "{csv}");
    let (code, table, err) = weir(&["export", "--db", &db, "--to", "table", "--by-schema", chain]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        table.matches("#type").count(),
        runs,
        "a header per block: {table}"
    );
    let titles: Vec<&str> = table
        .split("\n\n")
        .map(|block| block.lines().next().unwrap_or(""))
        .collect();
    let mut expected: Vec<&str> = types.clone();
    expected.dedup();
    assert_eq!(
        titles, expected,
        "each block titled by its one schema: {table}"
    );
}

/// JSON logs without `_path` whose file name names no log (issue 59, item 4): a DNS log is
/// recognized by its fields and typed as `zeek.dns`, with one warning; lines that are no
/// Zeek log's go to `zeek.json` with a warning naming the file and `--schema`.
#[test]
fn json_without_path_is_recognized_by_its_fields_or_said() {
    let dir = tempfile::tempdir().unwrap();
    let mut dns = String::new();
    for i in 0..N {
        dns.push_str(&format!(
            "{{\"ts\":{}.5,\"uid\":\"D{i}\",\"id.orig_h\":\"10.0.0.{}\",\"id.orig_p\":{},\"id.resp_h\":\"192.168.1.1\",\"id.resp_p\":53,\"proto\":\"udp\",\"query\":\"{}\",\"qtype_name\":\"A\",\"rcode_name\":\"NOERROR\"}}\n",
            T0 + i,
            i % 9,
            50_000 + i,
            query(i)
        ));
    }
    let events = dir.path().join("events.json");
    std::fs::write(&events, dns).unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(
        &other,
        "{\"name\":\"a\",\"size\":1}\n{\"name\":\"b\",\"size\":2}\n",
    )
    .unwrap();
    let db = dir.path().join("db");
    let (code, _, err) = weir(&["import", "--db", s(&db), s(&events), s(&other)]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        err.matches("read as zeek.dns, recognized by their fields")
            .count(),
        1,
        "{err}"
    );
    assert!(
        err.contains(&format!("{}: line 1: ", events.display())),
        "the warning names the file: {err}"
    );
    assert!(
        err.contains(&format!("{}: line 1: ", other.display()))
            && err.contains("imported as zeek.json")
            && err.contains("--schema"),
        "{err}"
    );
    let db = s(&db);
    let (_, out, _) = weir(&["count", "--db", db, "#type == \"zeek.dns\""]);
    assert_eq!(out.trim(), N.to_string());
    // Typed, not guessed: the ts is a time, the responder an address.
    let (_, out, _) = weir(&[
        "count",
        "--db",
        db,
        "#type == \"zeek.dns\" && ts > 2009-11-18 && id.resp_h == 192.168.1.1",
    ]);
    assert_eq!(out.trim(), N.to_string());
    let (_, out, _) = weir(&["count", "--db", db, "#type == \"zeek.json\""]);
    assert_eq!(out.trim(), "2");
}
