//! `weir serve` reads through one resident reader (`src/serve/reader.rs`): its segment cache
//! stays warm across queries (`/api/v1/status`'s `reader` counts the segments mapped), and
//! what other processes commit while it runs (an import's sealed segment, an erase) is what
//! the next query sees, without keeping erased segments on disk.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

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

#[test]
fn a_query_from_before_an_erase_leaves_its_segments_out_of_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 30_000);
    import(&db, 30_000..60_000);
    import(&db, 60_000..90_000);
    let catalog: Value =
        serde_json::from_slice(&std::fs::read(db.join("catalog.json")).unwrap()).unwrap();
    assert_eq!(
        catalog["segments"].as_array().unwrap().len(),
        3,
        "{catalog}"
    );
    let last = db.join(catalog["segments"][2]["file"].as_str().unwrap());
    let srv = serve(&db, &["--listen", "127.0.0.1:0"]);
    let a = srv.addr;

    // Every event, streamed to a client that reads nothing more for now: the search waits in
    // the first segments, far more output than the socket buffers hold ahead of it.
    let mut c = TcpStream::connect(a).unwrap();
    let body = json!({"query": ""}).to_string();
    write!(
        c,
        "POST /api/v1/query HTTP/1.0\r\nHost: {a}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut first = [0u8; 64];
    c.read_exact(&mut first).unwrap();
    assert!(first.starts_with(b"HTTP/1.0 200"), "{:?}", first);
    std::thread::sleep(Duration::from_millis(500));

    // The last segment erased meanwhile: the next query reads the new catalog.
    ok(
        &run(&["erase", "--db", s(&db), "--ids", "60000-89999"]),
        "erase",
    );
    assert_eq!(count(a, "n >= 0"), 60_000);
    // The streamed query reads the catalog it started with to its end, the erased segment
    // too (kept on disk for it)...
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).unwrap();
    let text = String::from_utf8_lossy(&rest);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('{')).collect();
    assert_eq!(lines.len(), 90_000, "{}", lines.last().unwrap_or(&""));
    assert!(
        !text.contains("\"error\""),
        "{}",
        lines.last().unwrap_or(&"")
    );
    // ... without leaving it mapped in the shared cache.
    let r = reader(a);
    assert!(r["segments_cached"].as_u64().unwrap() <= 2, "{r}");
    // Nothing holds the old catalog now: the writer's next open deletes the segment.
    import(&db, 90_000..90_010);
    assert!(!last.exists(), "{} is still on disk", last.display());
    assert_eq!(count(a, ""), 60_010);
}

/// The guard behind the server's shared cache, through the library: a reader of the catalog
/// from before an erase (a query that started before it) maps a segment the erase dropped
/// after a reader of the new catalog was made from it; the shared cache does not keep it.
#[test]
fn a_reader_of_an_older_catalog_adds_nothing_to_the_shared_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 3000);
    import(&db, 3000..5000);
    let old = weir::unstable::store::Archive::open(&db).unwrap();
    assert_eq!(old.catalog().segments.len(), 2);
    ok(
        &run(&["erase", "--db", s(&db), "--ids", "3000-4999"]),
        "erase",
    );
    let new = old.refreshed().unwrap();
    assert_eq!(new.catalog().segments.len(), 1);
    // The old reader still reads the dropped segment (its registration keeps it)...
    let dropped = old.segment(&old.catalog().segments[1]).unwrap();
    assert_eq!(dropped.events(), 2000);
    assert_eq!(new.segments_mapped(), 1);
    // ... but leaves it out of the cache the new reader shares.
    assert_eq!(new.cached_segments(), 0);
    // What the new reader maps is cached for both.
    new.segment(&new.catalog().segments[0]).unwrap();
    assert_eq!((new.cached_segments(), old.cached_segments()), (1, 1));
}
