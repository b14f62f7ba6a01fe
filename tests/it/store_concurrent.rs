//! Readers while a writer imports: every scan sees a dense, correct prefix of the events
//! (sealed segments, then the WAL tail), never a duplicate or a gap, even across seals.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use common::store::{batch, schema};
use weir::unstable::store::{Archive, Store, StoreOptions};
use weir::unstable::wal::SyncPolicy;

#[test]
fn readers_see_a_consistent_prefix_during_an_import() {
    let dir = tempfile::tempdir().unwrap();
    let s = schema("conn", 2);
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (mut store, _) = Store::open_writer(
        dir.path(),
        StoreOptions {
            max_segment_size: 16 << 10,
            sync: SyncPolicy::Never,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let writer = {
        let acked = acked.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) && i < 3000 {
                let b = batch(&s, 1 + (i % 40) as usize, 5, 0);
                let ids = store.append(b).unwrap();
                acked.store(ids.end, Ordering::Release);
                i += 1;
            }
            store.close().unwrap()
        })
    };
    let mut scans = 0;
    while !writer.is_finished() || scans < 3 {
        let before = acked.load(Ordering::Acquire);
        let archive = Archive::open(dir.path()).unwrap();
        let mut next = 0u64;
        for b in archive.scan() {
            let b = b.unwrap();
            assert_eq!(b.first_id(), next, "gap or duplicate at {next}");
            next += b.len() as u64;
        }
        assert!(
            next >= before,
            "scan saw {next} events, {before} were acknowledged"
        );
        scans += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let summary = writer.join().unwrap();
    assert!(summary.segments > 10, "{summary:?}");
    assert!(scans > 3);
    let archive = Archive::open(dir.path()).unwrap();
    assert_eq!(
        archive.scan().map(|b| b.unwrap().len() as u64).sum::<u64>(),
        summary.next_id
    );
}
