//! `weir serve --max-query-memory`: queries that together pass the cap are stopped (the one
//! started last first) and answered `503`, and the server, with the ingest beside it, goes on.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::serve::{archive, get, post, serve, Answer, Server};

/// The anonymous resident memory of process `pid`, in bytes (`RssAnon`).
fn anon(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `query`'s answer from `srv`, and the most anonymous memory the server held meanwhile.
fn peak_during(srv: &Server, query: &str) -> (Answer, u64) {
    let pid = srv.pid();
    let peak = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Some(m) = anon(pid) {
                    peak.fetch_max(m, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let answer = post(srv.addr, "/api/v1/query", &json!({ "query": query }));
    done.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    (answer, peak.load(Ordering::Relaxed))
}

#[test]
fn queries_past_the_memory_cap_stop_and_the_server_goes_on() {
    if anon(std::process::id()).is_none() {
        eprintln!("note: no RssAnon in /proc/self/status: weir serve has no memory cap here");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 150_000);
    // Sets of every uid, name list and address: about a hundred MiB in a debug build.
    let heavy =
        "summarize distinct(uid), distinct(names), distinct(id.orig_h), distinct(id.resp_h)";

    let free = serve(&db, &["--listen", "127.0.0.1:0"]);
    let (answer, peak_free) = peak_during(&free, heavy);
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert!(answer.text().contains("C0000149999"));
    drop(free);

    let capped = serve(
        &db,
        &[
            "--listen",
            "127.0.0.1:0",
            "--ingest-reserve",
            "0",
            "--max-query-memory",
            "24MiB",
        ],
    );
    let (answer, peak_capped) = peak_during(&capped, heavy);
    eprintln!(
        "peak anonymous memory: {} MiB without a cap, {} MiB with 24 MiB",
        peak_free >> 20,
        peak_capped >> 20
    );
    assert_eq!(answer.status, 503, "{}", answer.text());
    let error = answer.json()["error"].as_str().unwrap().to_string();
    assert!(error.contains("--max-query-memory"), "{error}");
    assert!(error.contains("24.0 MiB"), "{error}");
    // Stopped on the way, not after the whole answer was built.
    assert!(
        peak_capped < peak_free,
        "{} MiB with the cap, {} MiB without",
        peak_capped >> 20,
        peak_free >> 20
    );
    // The server goes on: small queries are answered as before.
    assert_eq!(get(capped.addr, "/health").status, 200);
    let small = post(
        capped.addr,
        "/api/v1/query",
        &json!({ "query": "n == 30 | head 1" }),
    );
    assert_eq!(small.status, 200, "{}", small.text());
    assert!(small.text().contains("C0000000010"), "{}", small.text());
}
