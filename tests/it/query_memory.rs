//! The memory budget of one query (`weir export/count --memory`, `weir serve --query-memory`;
//! `src/query/memory.rs`), with the requests of issue 56: many `distinct(uid)` in one
//! `summarize`, many sorts in one chain, one big sort. Under a small budget each fails with
//! an error that names the operator and the budget, and the process's peak resident memory
//! (`VmHWM`) stays near the budget; under a large one each succeeds. Through the API the same
//! requests are answered `422` with that error, and the server goes on answering.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::common::cli::{s, text, weir};
use crate::serve::{archive, get, post, serve};

/// Events of the generated archive (unique uids): enough that each request needs several
/// times the small budget, few enough that a debug build answers them under the large one.
const EVENTS: u64 = 60_000;

/// `summarize distinct(uid), ...`, `k` times.
fn distincts(k: usize) -> String {
    format!("summarize {}", vec!["distinct(uid)"; k].join(", "))
}

/// `k` sorts of every event, by `n` up and down, then the first 3.
fn sorts(k: usize) -> String {
    let chain: Vec<&str> = (0..k)
        .map(|i| if i % 2 == 0 { "sort n" } else { "sort n desc" })
        .collect();
    format!("{} | sort n desc | head 3", chain.join(" | "))
}

/// One big sort of every event by a list of strings (each key a list on the heap).
const BIG_SORT: &str = "sort names desc";

/// A process's peak resident memory so far (`VmHWM` of `/proc/PID/status`), in bytes.
fn hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Runs `weir ARGS`, and its peak resident memory as last seen before it ended.
fn run_measured(args: &[&str]) -> (Output, u64) {
    let child = weir()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let peak = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Some(m) = hwm(pid) {
                    peak.fetch_max(m, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let out = child.wait_with_output().unwrap();
    done.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    (out, peak.load(Ordering::Relaxed))
}

/// `weir count --db DB --memory BUDGET CHAIN`: its output and peak memory.
fn count(db: &std::path::Path, budget: &str, chain: &str) -> (Output, u64) {
    run_measured(&["count", "--db", s(db), "--memory", budget, chain])
}

/// The small budget of the command-line requests.
const SMALL: &str = "8MiB";

fn mib(b: u64) -> u64 {
    b >> 20
}

#[test]
fn each_request_fails_under_a_small_budget_naming_it_and_succeeds_under_a_large_one() {
    if hwm(std::process::id()).is_none() {
        eprintln!("note: no VmHWM in /proc/self/status: peak memory is not measured here");
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), EVENTS);
    // What the process takes for a query that holds nothing (the binary, the archive's maps).
    let (out, base) = count(&db, SMALL, "n < 30 | head 5");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "5");

    let requests = [
        (distincts(8), "summarize distinct(uid), distinct(uid)"),
        (sorts(10), "sort n"),
        (BIG_SORT.to_string(), "sort names desc"),
    ];
    for (chain, operator) in &requests {
        let (small, peak_small) = count(&db, SMALL, chain);
        let err = text(&small.stderr);
        assert!(!small.status.success(), "{chain}: succeeded under {SMALL}");
        assert!(
            err.contains(&format!("`{operator}"))
                && err.contains("memory budget of 8.0 MiB (--memory)"),
            "{chain}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");

        let (large, peak_large) = count(&db, "4GiB", chain);
        assert!(large.status.success(), "{chain}: {}", text(&large.stderr));
        let want = if chain.contains("head 3") {
            3
        } else if chain.starts_with("summarize") {
            1
        } else {
            EVENTS
        };
        assert_eq!(text(&large.stdout).trim(), want.to_string(), "{chain}");
        eprintln!(
            "{chain:.60}: peak RSS {} MiB under {SMALL} (base {} MiB), {} MiB under 4 GiB",
            mib(peak_small),
            mib(base),
            mib(peak_large)
        );
        if base > 0 {
            // Stopped near the budget: the base, the budget, and what the search holds in
            // flight and the allocator keeps (a batch per core, a table's old buckets).
            assert!(
                peak_small < base + 2 * (8 << 20) + (24 << 20),
                "{chain}: {} MiB under a {SMALL} budget (base {} MiB)",
                mib(peak_small),
                mib(base)
            );
        }
    }
}

#[test]
fn the_whole_distinct_sets_are_what_is_charged() {
    // Every uid in the answer: a budget that holds them is enough, and the error is not an
    // estimate of row bytes (the uids' rows are far smaller than their sets).
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 20_000);
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args([
            "export",
            "--db",
            s(&db),
            "--to",
            "json",
            "--memory",
            "64MiB",
        ])
        .arg("summarize distinct(uid)")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["distinct(uid)"].as_array().unwrap().len(), 20_000);
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["export", "--db", s(&db), "--to", "json", "--memory", "1MiB"])
        .arg("summarize distinct(uid)")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(
        !out.status.success() && err.contains("`summarize distinct(uid)` needs more than"),
        "{err}"
    );
}

#[test]
fn the_api_answers_each_request_over_its_budget_422_and_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 150_000);
    let srv = serve(&db, &["--listen", "127.0.0.1:0", "--query-memory", "16MiB"]);
    let a = srv.addr;
    let base = hwm(srv.pid()).unwrap_or(0);
    // Two heavy requests at once (the 40 `distinct`s and the many sorts of the issue), then
    // the big sort and a count.
    let both = [distincts(40), sorts(200)]
        .map(|q| std::thread::spawn(move || post(a, "/api/v1/query", &json!({ "query": q }))));
    for (answer, operator) in both
        .into_iter()
        .map(|t| t.join().unwrap())
        .zip(["summarize distinct(uid)", "sort n"])
    {
        assert_eq!(answer.status, 422, "{}", answer.text());
        let e = answer.json()["error"].as_str().unwrap().to_string();
        assert!(
            e.contains(&format!("`{operator}"))
                && e.contains("memory budget of 16.0 MiB (--query-memory)"),
            "{e}"
        );
    }
    let big = post(a, "/api/v1/query", &json!({ "query": BIG_SORT }));
    assert_eq!(big.status, 422, "{}", big.text());
    let counted = post(a, "/api/v1/count", &json!({ "query": distincts(8) }));
    assert_eq!(counted.status, 422, "{}", counted.text());
    assert!(
        counted.text().contains("--query-memory"),
        "{}",
        counted.text()
    );
    let peak = hwm(srv.pid()).unwrap_or(0);
    eprintln!(
        "serve: peak RSS {} MiB (at start {} MiB) for requests under a 16 MiB budget",
        mib(peak),
        mib(base)
    );
    if base > 0 {
        // Two queries at their budget at once, their batches in flight, the allocator's.
        assert!(
            peak < base + 2 * (2 * (16 << 20) + (24 << 20)),
            "{} MiB",
            mib(peak)
        );
    }
    // The server goes on.
    assert_eq!(get(a, "/health").status, 200);
    let small = post(a, "/api/v1/query", &json!({ "query": "n == 30 | head 1" }));
    assert_eq!(small.status, 200, "{}", small.text());
    assert!(small.text().contains("C0000000010"), "{}", small.text());
    let top = post(a, "/api/v1/query", &json!({ "query": "top proto" }));
    assert_eq!(top.status, 200, "{}", top.text());
    assert!(top.text().contains("150000"), "{}", top.text());
}

#[test]
fn a_pivot_charges_its_keys_to_the_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 20_000);
    let pivot = |budget: &str| {
        Command::new(env!("CARGO_BIN_EXE_weir"))
            .args(["pivot", "--db", s(&db), "--to", "json", "--memory", budget])
            .args(["zeek.conn", "n > 0"])
            .output()
            .unwrap()
    };
    // 19,999 uids: about 2 MiB of sets.
    let out = pivot("256KiB");
    let err = text(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains(
                "`pivot` needs more than the query's memory budget of 256.0 KiB (--memory)"
            ),
        "{err}"
    );
    let out = pivot("64MiB");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().count(), 19_999);
}
