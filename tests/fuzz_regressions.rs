//! Findings of the fuzz targets in `fuzz/` (see `fuzz/README.md`): each minimal reproducer is
//! a file under `tests/fixtures/fuzz/`, read here by the API its target drives. Also the
//! generator of the binary seed corpora (`fuzz/seeds/{segment,wal,catalog}`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

mod common;

use std::path::Path;

use common::store::{batch, schema};
use weir::store::{Store, StoreOptions};
use weir::wal::SyncPolicy;

/// Writes the seeds of the `segment`, `wal` and `catalog` fuzz targets from a small store
/// (segment UUIDs are random, so the files differ on every run; they are committed once):
/// `cargo test --test fuzz_regressions -- --ignored write_fuzz_seeds`.
#[test]
#[ignore = "writes fuzz/seeds; run by hand"]
fn write_fuzz_seeds() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let opts = StoreOptions {
        max_segment_size: 8 << 10,
        sync: SyncPolicy::Never,
    };
    let (mut store, _) = Store::open_writer(db, opts).unwrap();
    let conn = schema("conn", 4);
    let dns = schema("dns", 2);
    // Enough to seal a segment, then two batches left in the WAL.
    let mut seed = 0;
    while store.summary().segments == 0 {
        let s = if seed % 2 == 0 { &conn } else { &dns };
        store.append(batch(s, 3, 8, seed)).unwrap();
        seed += 1;
    }
    store.append(batch(&conn, 2, 4, 100)).unwrap();
    store.append(batch(&dns, 1, 4, 101)).unwrap();
    store.flush().unwrap();
    drop(store); // as after a crash: the WAL and the active segment's file stay

    let put = |target: &str, name: &str, bytes: &[u8]| {
        let d = seeds.join(target);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(name), bytes).unwrap();
    };
    put(
        "catalog",
        "catalog.json",
        &std::fs::read(db.join("catalog.json")).unwrap(),
    );
    let mut active = None;
    for e in std::fs::read_dir(db.join("segments")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let bytes = std::fs::read(e.path()).unwrap();
        if name.ends_with(".seg.tmp") {
            active = Some(bytes);
        } else if name.ends_with(".seg") {
            put("segment", "sealed.seg", &bytes);
        }
    }
    // The WAL target's input: u16 LE length, the WAL, then the end of the active segment's
    // file (its rows are at the end; the sparse start is zeros).
    let wal = std::fs::read(db.join("wal")).unwrap();
    let active = active.expect("an active segment file");
    let start = active.iter().position(|&b| b != 0).unwrap_or(0);
    let tail = &active[start.saturating_sub(16)..];
    let mut input = (wal.len() as u16).to_le_bytes().to_vec();
    input.extend_from_slice(&wal);
    input.extend_from_slice(tail);
    put("wal", "two-records", &input);
}
