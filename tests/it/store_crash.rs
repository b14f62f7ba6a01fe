//! `kill -9` crash test at the library level: a child process (this test binary, re-executed)
//! appends batches and reports every acknowledged ID range on stdout; the parent kills it with
//! SIGKILL at random moments, several times, and then checks that every acknowledged event is
//! present exactly once, with the right content, and that the archive verifies clean.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use weir::unstable::batch::{Batch, BatchBuilder};
use weir::unstable::store::{Archive, Store, StoreOptions};
use weir::unstable::types::{Field, Schema, SchemaRef, Type};
use weir::unstable::value::Value;
use weir::unstable::wal::SyncPolicy;

const CHILD_ENV: &str = "WEIR_CRASH_CHILD_DIR";

fn schemas() -> [SchemaRef; 2] {
    let f = |n: &str, t: Type| Field::new(n, t);
    [
        Schema::new(
            "zeek.a",
            vec![
                f("ts", Type::Time),
                f("uid", Type::String),
                f("n", Type::Count),
            ],
        )
        .into_shared(),
        Schema::new("zeek.b", vec![f("ts", Type::Time), f("s", Type::String)]).into_shared(),
    ]
}

/// The content of event `id` depends only on its ID, so that a lost or duplicated batch shows
/// up as a mismatch.
fn event(id: u64) -> (usize, Vec<Value>) {
    let which = ((id / 97) % 2) as usize;
    let ts = Value::Time(id as i64);
    let row = if which == 0 {
        vec![
            ts,
            Value::String(format!("C{id}").into_bytes()),
            Value::Count(id * 3),
        ]
    } else {
        vec![ts, Value::String(vec![b'x'; (id % 300) as usize])]
    };
    (which, row)
}

/// A batch of events `start..` of one schema (stops where the schema changes).
fn batch_from(start: u64, max_rows: u64) -> Batch {
    let schemas = schemas();
    let which = event(start).0;
    let mut b = BatchBuilder::new(schemas[which].clone());
    let mut id = start;
    while id < start + max_rows && event(id).0 == which {
        let (_, row) = event(id);
        b.begin_row();
        let mut enc = b.encoder();
        for v in &row {
            enc.value(v);
        }
        b.finish_row(Some(id as i64));
        id += 1;
    }
    b.finish()
}

fn opts() -> StoreOptions {
    StoreOptions {
        max_segment_size: 32 << 10,
        sync: SyncPolicy::Never,
        ..StoreOptions::default()
    }
}

/// The child: append forever, printing each acknowledged range.
#[test]
fn crash_child_entry() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let (mut store, _) = Store::open_writer(Path::new(&dir), opts()).expect("open");
    let mut k = 0u64;
    loop {
        let start = store.next_id();
        let b = batch_from(start, 1 + (start * 7 + k) % 150);
        let ids = store.append(b).expect("append");
        println!("ack {} {}", ids.start, ids.end);
        k += 1;
    }
}

#[test]
fn kill_dash_nine_loses_and_duplicates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut acked_end = 0u64;
    for round in 0..6u64 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                // The test's name in the one integration-test binary (tests/it/main.rs).
                "store_crash::crash_child_entry",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        // Let it run for a pseudo-random number of acknowledgements (some rounds long enough
        // to seal several segments), then kill -9 without warning.
        let target = 50 + (round * 7919) % 400;
        let started = Instant::now();
        let mut seen = 0;
        while seen < target && started.elapsed() < Duration::from_secs(20) {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(rest) = line.strip_prefix("ack ") {
                        let end: u64 = rest.split(' ').nth(1).unwrap().parse().unwrap();
                        assert!(end >= acked_end, "IDs went backwards after a crash");
                        acked_end = end;
                        seen += 1;
                    }
                }
                _ => break,
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // Acknowledgements printed before the kill but not yet read are still in the pipe.
        for line in lines.map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("ack ") {
                acked_end = rest.split(' ').nth(1).unwrap().parse().unwrap();
            }
        }
        assert!(seen > 0, "round {round}: the child acknowledged nothing");

        // A reader right after the crash (WAL tail included) sees every acknowledged event.
        check(dir.path(), acked_end);
    }
    // Recovery by a writer, then a clean archive.
    let (store, _) = Store::open_writer(dir.path(), opts()).unwrap();
    store.close().unwrap();
    let total = check(dir.path(), acked_end);
    let archive = Archive::open(dir.path()).unwrap();
    assert!(archive.catalog().segments.len() > 5);
    assert_eq!(archive.info().unwrap().events, total);
    let report = archive.verify();
    assert!(report.is_ok(), "{:?}", report.problems);
}

/// Every event 0..n is present once in ID order with its content; returns n (>= acked_end).
fn check(dir: &Path, acked_end: u64) -> u64 {
    let archive = Archive::open(dir).unwrap();
    let types: Vec<Vec<Type>> = schemas()
        .iter()
        .map(|s| s.fields.iter().map(|f| f.ty.clone()).collect())
        .collect();
    let mut next = 0u64;
    for b in archive.scan() {
        let b = b.unwrap();
        assert_eq!(b.first_id(), next);
        for row in b.rows() {
            let (which, want) = event(next);
            assert_eq!(b.schema().name, schemas()[which].name, "event {next}");
            let got = weir::unstable::value::decode_row(row, &types[which]).unwrap();
            assert_eq!(got, want, "event {next}");
            next += 1;
        }
    }
    assert!(
        next >= acked_end,
        "acknowledged up to {acked_end}, found {next}"
    );
    next
}
