//! Peak memory of a long import: at most one segment plus a small constant, whatever the input
//! size (a generous bound: the store's builder writes each batch to the segment's file as it
//! arrives and holds only one batch and some metadata, see `src/segment/writer.rs`). Ignored by default (it writes about 1 GiB); run with
//! `cargo test --release --test it store_memory:: -- --ignored --nocapture`.

use std::process::Command;
use std::time::Instant;

use weir::unstable::batch::{Batch, BatchBuilder};
use weir::unstable::store::{Store, StoreOptions};
use weir::unstable::types::{Field, Schema, SchemaRef, Type};
use weir::unstable::wal::SyncPolicy;

const CHILD_ENV: &str = "WEIR_STORE_MEMORY_CHILD";

fn schema() -> SchemaRef {
    Schema::new(
        "zeek.conn",
        vec![
            Field::new("ts", Type::Time),
            Field::new("uid", Type::String),
            Field::new("id.orig_h", Type::Addr),
            Field::new("history", Type::String),
            Field::new("orig_bytes", Type::Count),
        ],
    )
    .into_shared()
}

fn conn_batch(schema: &SchemaRef, seed: u64) -> Batch {
    let mut b = BatchBuilder::new(schema.clone());
    for i in 0..1024u64 {
        let n = seed * 1024 + i;
        let mut e = b.begin_row();
        e.int(n as i64);
        e.bytes(format!("C{n:016x}{n:032x}").as_bytes());
        e.addr(std::net::IpAddr::from([10, 1, (n >> 8) as u8, n as u8]));
        e.bytes(b"ShADadfFShADadfF");
        e.uint(n);
        b.finish_row(Some(n as i64));
    }
    b.finish()
}

/// Peak resident set size of this process, from /proc (Linux).
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

/// Peak RSS is a number of the whole process, and this test binary runs the other tests on
/// other threads at the same time (tests/it/main.rs): the import runs in a process of its own,
/// this binary re-executed for [`peak_memory_child`] alone.
#[test]
#[ignore]
fn peak_memory_stays_below_one_segment_plus_256_mib() {
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            // The test's name in the one integration-test binary.
            "store_memory::peak_memory_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .status()
        .unwrap();
    assert!(status.success(), "the import's process failed: {status}");
}

/// The child of [`peak_memory_stays_below_one_segment_plus_256_mib`]; does nothing unless
/// started by it.
#[test]
fn peak_memory_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let Some(before) = peak_rss() else {
        eprintln!("note: no /proc/self/status: skipping");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let max: u64 = 256 << 20;
    let (mut store, _) = Store::open_writer(
        dir.path(),
        StoreOptions {
            max_segment_size: max,
            sync: SyncPolicy::Never,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let s = schema();
    let start = Instant::now();
    let mut bytes = 0u64;
    let mut i = 0;
    // About four segments' worth, generated on the fly.
    while bytes < 4 * max {
        let b = conn_batch(&s, i);
        bytes += b.byte_size() as u64;
        store.append(b).unwrap();
        i += 1;
    }
    let summary = store.close().unwrap();
    let secs = start.elapsed().as_secs_f64();
    let peak = peak_rss().unwrap();
    eprintln!(
        "appended {} MiB in {} batches: {:.0} MiB/s, {} segments; peak RSS {} MiB (before {} MiB)",
        bytes >> 20,
        i,
        bytes as f64 / secs / (1 << 20) as f64,
        summary.segments,
        peak >> 20,
        before >> 20
    );
    assert!(summary.segments >= 4);
    assert!(
        peak <= max + (256 << 20),
        "peak RSS {} MiB exceeds {} MiB + 256 MiB",
        peak >> 20,
        max >> 20
    );
}
