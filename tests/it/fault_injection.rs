//! Fault injection (issue 13): every storage operation of an import through [`Store`] is made
//! to fail in turn, and the archive must come back with every acknowledged batch exactly once.
//!
//! For N = 0, 1, 2, … a small Zeek log is imported into a fresh database with operation
//! number N failing (`weir::unstable::store::fault::fail_op`: writes, waited-for fsyncs, renames, file
//! size changes and `fallocate` collapses; of any kind, or of one kind), until an import runs
//! without reaching operation N. Each time:
//!
//! 1. The failure comes back as an error from `Store::open_writer`, `append`, `flush` or
//!    `close` (never a panic), and the import stops there. The one exception is a failed
//!    collapse, which the seal answers by copying the segment out instead, so the import
//!    completes.
//! 2. A new writer opens the database (replaying the WAL), and is closed.
//! 3. The archive is read. **Acknowledged** means: `append` returned `Ok` (under
//!    `SyncPolicy::Batch` the record is then in the WAL, which survives a crash of the
//!    process; a `flush` that returned `Ok` adds durability against power loss, which an
//!    injected fault does not take away: it loses nothing from the page cache, so every
//!    acknowledged batch must survive whether or not a flush followed it). The archive must
//!    hold the acknowledged batches' events in order, from ID 0, each once; after them, at
//!    most a prefix of the one batch whose `append` failed (its WAL record may have been
//!    written before a seal failed), and nothing else. `Archive::verify` finds no problem.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::path::Path;

use common::store::{expected, read_all};
use weir::unstable::batch::Batch;
use weir::unstable::codec::zeek::tsv::read_all as read_tsv;
use weir::unstable::codec::ReaderOptions;
use weir::unstable::store::fault::{self, Op};
use weir::unstable::store::{Archive, Store, StoreError, StoreOptions};
use weir::unstable::wal::SyncPolicy;

/// The log: `events` conn events, as batches of `rows`.
fn log_batches(events: u64, rows: usize) -> Vec<Batch> {
    let text = common::conn_log::log(0..events);
    let opts = ReaderOptions {
        batch_rows: rows,
        ..ReaderOptions::new("conn.log")
    };
    let (batches, skipped) = read_tsv(text.as_bytes(), opts).unwrap();
    assert_eq!(skipped.skipped, 0);
    batches
}

/// What one import did: the batches acknowledged, the batch whose append failed (if one
/// did), and the error that stopped it.
struct Import {
    acked: Vec<Batch>,
    in_flight: Option<Batch>,
    error: Option<StoreError>,
}

/// Imports `batches` into `db`, flushing after every `flush_every`, closing at the end;
/// stops at the first error.
fn import(db: &Path, opts: StoreOptions, batches: &[Batch], flush_every: usize) -> Import {
    let mut out = Import {
        acked: Vec::new(),
        in_flight: None,
        error: None,
    };
    let mut store = match Store::open_writer(db, opts) {
        Ok((s, _)) => s,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    for (i, b) in batches.iter().enumerate() {
        match store.append(b.clone()) {
            Ok(_) => out.acked.push(b.clone()),
            Err(e) => {
                out.in_flight = Some(b.clone());
                out.error = Some(e);
                return out;
            }
        }
        if (i + 1) % flush_every == 0 {
            if let Err(e) = store.flush() {
                out.error = Some(e);
                return out;
            }
        }
    }
    if let Err(e) = store.close() {
        out.error = Some(e);
    }
    out
}

/// Recovery after the failure, and the contents (see the module docs).
fn check_recovered(db: &Path, opts: StoreOptions, run: &Import, what: &str) {
    let (store, _) = Store::open_writer(db, opts)
        .unwrap_or_else(|e| panic!("{what}: reopening after the failure: {e}"));
    store
        .close()
        .unwrap_or_else(|e| panic!("{what}: closing the recovered writer: {e}"));
    let got = read_all(db);
    let want = expected(&run.acked);
    assert!(
        got.len() >= want.len(),
        "{what}: {} events after recovery, {} acknowledged",
        got.len(),
        want.len()
    );
    assert!(
        got[..want.len()] == want[..],
        "{what}: acknowledged events differ"
    );
    let mut upper = run.acked.clone();
    upper.extend(run.in_flight.clone());
    let most = expected(&upper);
    assert!(
        got.len() <= most.len() && got[..] == most[..got.len()],
        "{what}: {} events after recovery beyond the {} acknowledged are not a prefix of the failed batch",
        got.len() - want.len(),
        want.len()
    );
    let report = Archive::open(db).unwrap().verify();
    assert!(report.is_ok(), "{what}: verify after recovery: {report:?}");
}

/// Walks N over the operations of `kind` (`None`: all) of the import; returns the number of
/// operations of the fault-free run, per kind.
fn walk(opts: StoreOptions, batches: &[Batch], flush_every: usize, kind: Option<Op>) -> [u64; 4] {
    for n in 0u64.. {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path();
        fault::fail_op(n, kind);
        let run = import(db, opts, batches, flush_every);
        fault::disarm();
        let what = format!(
            "{kind:?} operation {n} ({:?}, {:?})",
            opts.sync,
            fault::fired()
        );
        match fault::fired() {
            None => {
                // Fewer than n + 1 operations: a complete, fault-free import.
                let counts = fault::ops_by_kind();
                let seen = match kind {
                    Some(k) => counts[k as usize],
                    None => counts.iter().sum(),
                };
                assert_eq!(seen, n, "{what}: {counts:?}");
                assert!(run.error.is_none(), "{what}: {:?}", run.error);
                assert_eq!(run.acked.len(), batches.len());
                check_recovered(db, opts, &run, &what);
                eprintln!(
                    "{:?} {kind:?}: {n} failure points; a full import has {counts:?} \
                     (write, sync, rename, allocate) operations",
                    opts.sync
                );
                return counts;
            }
            Some(Op::Allocate) if run.error.is_none() => {
                // A failed collapse: the seal copied the segment out instead.
                assert_eq!(run.acked.len(), batches.len(), "{what}");
            }
            Some(_) => {
                let e = run.error.as_ref().unwrap_or_else(|| {
                    panic!("{what}: the operation failed but the store reported no error")
                });
                assert!(
                    format!("{e}").contains("injected fault")
                        || matches!(e, StoreError::Poisoned(_)),
                    "{what}: unexpected error {e}"
                );
            }
        }
        fault::reset();
        check_recovered(db, opts, &run, &what);
    }
    unreachable!()
}

/// Small segments (several seals, copied out), the default sync policy, flushes: every
/// operation of any kind fails once.
#[test]
fn every_operation_of_an_import_may_fail() {
    let batches = log_batches(600, 40);
    let opts = StoreOptions {
        max_segment_size: 16 << 10,
        sync: SyncPolicy::Batch,
        ..StoreOptions::default()
    };
    let counts = walk(opts, &batches, 4, None);
    assert!(
        counts[Op::Rename as usize] >= 3,
        "seals happened: {counts:?}"
    );
}

/// `SyncPolicy::Always` (an fsync per append) and `Never` (no fsync at all).
#[test]
fn every_operation_may_fail_under_each_sync_policy() {
    let batches = log_batches(300, 40);
    for sync in [SyncPolicy::Always, SyncPolicy::Never] {
        let opts = StoreOptions {
            max_segment_size: 16 << 10,
            sync,
            ..StoreOptions::default()
        };
        walk(opts, &batches, 3, None);
    }
}

/// Segments of more than 1 MiB are cut out of their file by `fallocate` collapse; each
/// allocation, rename and sync fails once (one kind at a time: the per-kind knob).
#[test]
fn seals_by_collapse_may_fail() {
    // About 1.25 MB of rows: one segment, sealed at close by collapse.
    let batches = log_batches(16_000, 2_000);
    // Uncompressed: compressed, the rows would make a segment too small to collapse.
    let opts = StoreOptions {
        max_segment_size: 2 << 20,
        sync: SyncPolicy::Batch,
        compression: weir::unstable::segment::Compression::NONE,
        ..StoreOptions::default()
    };
    for kind in [Op::Allocate, Op::Rename, Op::Sync] {
        let counts = walk(opts, &batches, 3, Some(kind));
        // The sparse allocation of the segment file, and the collapse.
        assert_eq!(counts[Op::Allocate as usize], 2, "{counts:?}");
    }
}
