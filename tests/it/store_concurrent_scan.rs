//! A reader's scan while a writer in the same process keeps sealing segments: every seal
//! replaces the catalog and the WAL under the scan, possibly many times during one scan. The
//! scan must still give every event once, in ID order, with its values, and no error.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use common::store::{batch, expected, schema};
use weir::unstable::store::{Archive, Store, StoreOptions};
use weir::unstable::value::Value;
use weir::unstable::wal::SyncPolicy;

#[test]
fn scan_survives_many_seals_during_one_scan() {
    let dir = tempfile::tempdir().unwrap();
    let s = schema("conn", 4);
    let opts = StoreOptions {
        max_segment_size: 4096,
        sync: SyncPolicy::Never,
        ..StoreOptions::default()
    };
    let (mut store, _) = Store::open_writer(dir.path(), opts).unwrap();
    let mut written = Vec::new();
    let mut seed = 0;
    // Appends batches until the writer has sealed one more segment (and logged the batch that
    // did not fit in the WAL of the new active segment).
    let mut seal_once = |store: &mut Store, written: &mut Vec<_>| {
        let before = store.summary().segments;
        while store.summary().segments == before {
            let b = batch(&s, 6, 40, seed);
            seed += 1;
            store.append(b.clone()).unwrap();
            written.push(b);
        }
    };
    seal_once(&mut store, &mut written);

    let archive = Archive::open(dir.path()).unwrap();
    let mut got: Vec<(u64, String, Vec<Value>)> = Vec::new();
    let mut seals = 0;
    for b in archive.scan() {
        let b = b.unwrap_or_else(|e| panic!("scan after {seals} seals: {e}"));
        for (i, row) in b.to_batch().to_values().unwrap().into_iter().enumerate() {
            got.push((b.first_id() + i as u64, b.schema().name.clone(), row));
        }
        // A seal between every two batches the reader takes, for a while.
        if seals < 12 {
            seal_once(&mut store, &mut written);
            seals += 1;
        }
    }
    assert_eq!(seals, 12);
    assert_eq!(got, expected(&written));
    store.close().unwrap();
}

/// A writer with tiny segments, its first segment sealed, and a helper that seals one more.
fn sealing_writer(
    dir: &std::path::Path,
) -> (
    Store,
    impl FnMut(&mut Store, &mut Vec<weir::unstable::batch::Batch>),
) {
    let s = schema("conn", 4);
    let opts = StoreOptions {
        max_segment_size: 4096,
        sync: SyncPolicy::Never,
        ..StoreOptions::default()
    };
    let (store, _) = Store::open_writer(dir, opts).unwrap();
    let mut seed = 1000;
    let seal_once = move |store: &mut Store, written: &mut Vec<weir::unstable::batch::Batch>| {
        let before = store.summary().segments;
        while store.summary().segments == before {
            let b = batch(&s, 6, 40, seed);
            seed += 1;
            store.append(b.clone()).unwrap();
            written.push(b);
        }
    };
    (store, seal_once)
}

#[test]
fn info_after_seals_since_open_has_no_gap() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, mut seal_once) = sealing_writer(dir.path());
    let mut written = Vec::new();
    seal_once(&mut store, &mut written);
    let archive = Archive::open(dir.path()).unwrap();
    seal_once(&mut store, &mut written);
    seal_once(&mut store, &mut written);
    let info = archive.info().unwrap();
    let n = store.next_id();
    assert_eq!(info.id_ranges, vec![[0, n]], "{info}");
    assert_eq!(info.events, n, "{info}");
    assert_eq!(info.schemas.get("zeek.conn").copied(), Some(n), "{info}");
    store.close().unwrap();
}

#[test]
fn verify_after_seals_since_open_finds_no_problem() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, mut seal_once) = sealing_writer(dir.path());
    let mut written = Vec::new();
    seal_once(&mut store, &mut written);
    let archive = Archive::open(dir.path()).unwrap();
    seal_once(&mut store, &mut written);
    let report = archive.verify();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.events, store.next_id());
    store.close().unwrap();
}
