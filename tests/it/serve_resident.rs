//! `weir serve` reads through one resident reader (`src/serve/reader.rs`): its segment cache
//! stays warm across queries (`/api/v1/status`'s `reader` counts the segments mapped), and
//! what other processes commit while it runs (an import's sealed segment, an erase) is what
//! the next query sees, without keeping erased segments on disk.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::path::Path;

use serde_json::{json, Value};

use crate::common::cli::{ok, run, run_with_stdin, s};
use crate::common::conn_log;
use crate::serve::{archive, get, post, serve};

/// `weir import` of events `range` into `db` (a segment of their own).
fn import(db: &Path, range: std::ops::Range<u64>) {
    let out = run_with_stdin(
        &["import", "-q", "--db", s(db)],
        conn_log::log(range).as_bytes(),
    );
    ok(&out, "import");
}

fn count(addr: std::net::SocketAddr, query: &str) -> u64 {
    let a = post(addr, "/api/v1/count", &json!({ "query": query }));
    assert_eq!(a.status, 200, "{}", a.text());
    a.json()["count"].as_u64().unwrap()
}

/// The uid of the event `sort ts desc | head 1` (or `sort ts`) answers.
fn edge(addr: std::net::SocketAddr, order: &str) -> String {
    let q = format!("sort ts {order} | head 1");
    let a = post(addr, "/api/v1/query", &json!({ "query": q }));
    assert_eq!(a.status, 200, "{}", a.text());
    let text = a.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let v: Value = serde_json::from_str(lines[0]).unwrap();
    assert!(v.get("error").is_none(), "{text}");
    v["uid"].as_str().unwrap().to_string()
}

fn reader(addr: std::net::SocketAddr) -> Value {
    let a = get(addr, "/api/v1/status");
    assert_eq!(a.status, 200, "{}", a.text());
    let r = a.json()["reader"].clone();
    assert!(r.is_object(), "no reader in the status: {}", a.text());
    r
}

#[test]
fn keeps_segments_mapped_across_queries() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 3000);
    import(&db, 3000..5000);
    let srv = serve(&db, &["--listen", "127.0.0.1:0"]);
    let a = srv.addr;
    assert_eq!(count(a, "n >= 0"), 5000);
    assert_eq!(edge(a, "desc"), conn_log::uid(4999));
    assert_eq!(edge(a, "asc"), conn_log::uid(0));
    let first = reader(a);
    assert!(first["segments_mapped"].as_u64().unwrap() >= 2, "{first}");
    // Ten more queries over both segments map none of them again, and open nothing.
    for _ in 0..5 {
        assert_eq!(count(a, "n >= 0"), 5000);
        assert_eq!(edge(a, "desc"), conn_log::uid(4999));
    }
    let after = reader(a);
    assert_eq!(
        after["segments_mapped"], first["segments_mapped"],
        "{after}"
    );
    assert_eq!(after["opens"], 1, "{after}");
    assert_eq!(after["refreshes"], 0, "{after}");
}

#[test]
fn sees_a_segment_sealed_while_it_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 3000);
    let srv = serve(&db, &["--listen", "127.0.0.1:0"]);
    let a = srv.addr;
    assert_eq!(count(a, ""), 3000);
    assert_eq!(edge(a, "desc"), conn_log::uid(2999));
    import(&db, 3000..5000);
    // The very next queries see the new segment.
    assert_eq!(count(a, "n >= 0"), 5000);
    assert_eq!(edge(a, "desc"), conn_log::uid(4999));
    let r = reader(a);
    assert_eq!(r["opens"], 1, "{r}");
    assert!(r["refreshes"].as_u64().unwrap() >= 1, "{r}");
}

#[test]
fn an_erase_while_it_runs_is_seen_and_frees_the_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 3000);
    import(&db, 3000..5000);
    let catalog: Value =
        serde_json::from_slice(&std::fs::read(db.join("catalog.json")).unwrap()).unwrap();
    let first = db.join(catalog["segments"][0]["file"].as_str().unwrap());
    assert!(first.exists(), "{}", first.display());
    let srv = serve(&db, &["--listen", "127.0.0.1:0"]);
    let a = srv.addr;
    // Both segments mapped by the resident reader.
    assert_eq!(edge(a, "asc"), conn_log::uid(0));
    assert_eq!(edge(a, "desc"), conn_log::uid(4999));
    assert_eq!(count(a, "n >= 0"), 5000);

    // The first segment's events, erased whole by another process.
    ok(&run(&["erase", "--db", s(&db), "--ids", "0-2999"]), "erase");
    assert_eq!(count(a, "n >= 0"), 2000);
    assert_eq!(count(a, ""), 2000);
    assert_eq!(edge(a, "asc"), conn_log::uid(3000));
    assert_eq!(edge(a, "desc"), conn_log::uid(4999));
    let got = post(a, "/api/v1/get", &json!({ "ids": [0] }));
    assert_eq!(got.status, 404, "{}", got.text());

    // The server holds no reader of the old catalog any more: the writer's next open
    // deletes the erased segment.
    import(&db, 5000..5010);
    assert!(
        !first.exists(),
        "the erased segment {} is still on disk",
        first.display()
    );
    assert_eq!(count(a, "n >= 0"), 2010);
}
