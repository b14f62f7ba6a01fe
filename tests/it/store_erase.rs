//! Erase, compaction and retention on the library: what stays, what goes, IDs, crash safety
//! at every storage operation, and readers that keep their snapshot.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::store::{batch, copy_dir, expected, read_all, schema};
use weir::unstable::batch::Batch;
use weir::unstable::query::{Query, QuerySelector};
use weir::unstable::store::{
    fault, repair, Archive, IdSelector, Maintenance, Store, StoreOptions, LOW_MARK_PERCENT,
};
use weir::unstable::value::Value;
use weir::unstable::wal::SyncPolicy;

type Events = Vec<(u64, String, Vec<Value>)>;

fn opts(max: u64) -> StoreOptions {
    StoreOptions {
        max_segment_size: max,
        sync: SyncPolicy::Batch,
        // Uncompressed: the tests count segments of known sizes.
        compression: weir::unstable::segment::Compression::NONE,
        ..StoreOptions::default()
    }
}

/// An archive of `n` batches of 50 events (two schemas) in segments of 16 KiB.
fn archive(db: &Path, n: u64) -> Vec<Batch> {
    let schemas = [schema("conn", 4), schema("dns", 2)];
    let (mut store, _) = Store::open_writer(db, opts(16 << 10)).unwrap();
    let mut batches = Vec::new();
    for i in 0..n {
        let b = batch(&schemas[(i % 2) as usize], 50, 20, i * 50);
        batches.push(b.clone());
        store.append(b).unwrap();
    }
    store.close().unwrap();
    batches
}

fn segments(db: &Path) -> usize {
    Archive::open(db).unwrap().catalog().segments.len()
}

/// The segment files on disk (not temporaries).
fn segment_files(db: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(db.join("segments"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".seg") && !n.starts_with('.'))
        .collect();
    v.sort();
    v
}

/// `verify` finds nothing and no segment file is outside the catalog.
fn sound(db: &Path) {
    let a = Archive::open(db).unwrap();
    let report = a.verify();
    assert!(report.is_ok(), "{:?}", report.problems);
    let unlisted = a.unlisted_segments().unwrap();
    assert!(unlisted.lost.is_empty() && unlisted.sealing.is_empty());
}

fn without(all: &Events, gone: impl Fn(u64, &str) -> bool) -> Events {
    all.iter()
        .filter(|(id, name, _)| !gone(*id, name))
        .cloned()
        .collect()
}

#[test]
fn erase_by_ids_drops_whole_segments_and_rewrites_partial_ones() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let batches = archive(db, 40);
    let all = expected(&batches);
    let before = segments(db);
    assert!(before > 4, "{before} segments");
    // From inside a batch of the first segments to inside a later batch.
    let (mut store, _) = Store::open_existing(db, opts(16 << 10)).unwrap();
    let report = store.erase(&mut IdSelector(75..1333)).unwrap();
    store.close().unwrap();
    assert_eq!(report.events, 1333 - 75);
    assert!(report.segments_dropped >= 1, "{report:?}");
    assert!(report.segments_rewritten >= 1, "{report:?}");
    let want = without(&all, |id, _| (75..1333).contains(&id));
    assert_eq!(read_all(db), want);
    sound(db);
    // Survivors keep their IDs; erased IDs are gone.
    let a = Archive::open(db).unwrap();
    for id in [0, 74, 1333, 1999] {
        let b = a.get(id).unwrap().unwrap();
        assert_eq!(b.first_id(), id);
        let row = b.to_batch().to_values().unwrap().remove(0);
        assert_eq!(row, all[id as usize].2);
    }
    for id in [75, 700, 1332] {
        assert!(a.get(id).unwrap().is_none(), "{id}");
    }
    assert_eq!(a.catalog().erased, vec![[75, 1333]]);
    drop(a);
    // New events get new IDs: erased ones are never reused.
    let (mut store, _) = Store::open_writer(db, opts(16 << 10)).unwrap();
    assert_eq!(
        store.append(batch(&schema("conn", 4), 3, 5, 9)).unwrap(),
        2000..2003
    );
    store.close().unwrap();
    sound(db);
    // Only the archive's segment files are left.
    let listed: Vec<String> = Archive::open(db)
        .unwrap()
        .catalog()
        .segments
        .iter()
        .map(|e| e.file.trim_start_matches("segments/").to_string())
        .collect();
    let mut listed = listed;
    listed.sort();
    assert_eq!(segment_files(db), listed);
}

#[test]
fn erase_by_expression_and_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let batches = archive(db, 20);
    let all = expected(&batches);
    let (mut store, _) = Store::open_existing(db, opts(16 << 10)).unwrap();
    let q = Query::parse(r#"#type == "zeek.dns""#).unwrap();
    let r = store.erase(&mut QuerySelector::new(&q)).unwrap();
    assert_eq!(r.events, 500);
    let after_type = without(&all, |_, name| name == "zeek.dns");
    store.close().unwrap();
    assert_eq!(read_all(db), after_type);
    sound(db);
    // `ts` of row i of batch k is (k * 50 * 31 + i) µs: erase everything before a time that
    // falls inside some batches, by the rows' values.
    let cut: i64 = 5 * 50 * 31 * 1000 + 20_000;
    let values_ts = |v: &Vec<Value>| match v[0] {
        Value::Time(t) => t,
        ref other => panic!("{other:?}"),
    };
    let want: Events = after_type
        .iter()
        .filter(|(_, _, v)| values_ts(v) >= cut)
        .cloned()
        .collect();
    assert!(want.len() < after_type.len() && !want.is_empty());
    let q = Query::parse(&format!(
        "#timestamp < @{}.{:09}",
        cut / 1_000_000_000,
        cut % 1_000_000_000
    ))
    .unwrap();
    let (mut store, _) = Store::open_existing(db, opts(16 << 10)).unwrap();
    store.erase(&mut QuerySelector::new(&q)).unwrap();
    store.close().unwrap();
    assert_eq!(read_all(db), want);
    sound(db);
}

#[test]
fn compaction_merges_small_segments_keeping_ids_and_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let s = schema("conn", 4);
    let mut batches = Vec::new();
    // Ten short imports: ten small segments.
    for i in 0..10u64 {
        let (mut store, _) = Store::open_writer(db, opts(1 << 20)).unwrap();
        let b = batch(&s, 30, 10, i * 30);
        batches.push(b.clone());
        store.append(b).unwrap();
        store.close().unwrap();
    }
    // A hole in the IDs, as an erase leaves.
    let (mut store, _) = Store::open_existing(db, opts(1 << 20)).unwrap();
    store.erase(&mut IdSelector(40..50)).unwrap();
    store.close().unwrap();
    let want = without(&expected(&batches), |id, _| (40..50).contains(&id));
    assert_eq!(segments(db), 10);
    let (mut store, _) = Store::open_existing(db, opts(1 << 20)).unwrap();
    let r = store.compact().unwrap();
    store.close().unwrap();
    assert_eq!(r.segments_merged, 10);
    assert_eq!(r.segments_written, 1);
    assert_eq!(segments(db), 1);
    assert_eq!(read_all(db), want);
    sound(db);
    // Adjacent batches were coalesced; the hole split them.
    let a = Archive::open(db).unwrap();
    let seg = a.segment(&a.catalog().segments[0]).unwrap();
    assert_eq!(seg.len(), 2);
    assert_eq!(seg.intervals(), &[0..40, 50..300]);
    assert_eq!(segment_files(db).len(), 1);
}

#[test]
fn budget_keeps_the_newest_data_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let s = schema("conn", 4);
    let max_seg = 16u64 << 10;
    let budget = 8 * max_seg;
    let m = Maintenance {
        max_archive_size: Some(budget),
        ..Maintenance::default()
    };
    let mut next = 0u64;
    for restart in 0..4u64 {
        let (mut store, _) = Store::open_writer(db, opts(max_seg)).unwrap();
        store.set_maintenance(m).unwrap();
        for i in 0..60u64 {
            let ids = store
                .append(batch(&s, 20, 20, restart * 10_000 + i))
                .unwrap();
            next = ids.end;
            assert!(
                store.archive_size() <= budget,
                "{} > {budget}",
                store.archive_size()
            );
        }
        store.close().unwrap();
        // What is on disk stays under the budget too.
        let bytes: u64 = segment_files(db)
            .iter()
            .map(|f| {
                std::fs::metadata(db.join("segments").join(f))
                    .unwrap()
                    .len()
            })
            .sum();
        assert!(bytes <= budget, "{bytes} on disk > {budget}");
        sound(db);
        // The newest events are kept: the last ID is there, and everything kept is a
        // suffix of the IDs.
        let events = read_all(db);
        assert_eq!(events.last().unwrap().0, next - 1);
        let first = events[0].0;
        assert_eq!(
            events.len() as u64,
            next - first,
            "kept events are not a suffix"
        );
        if restart == 3 {
            assert!(first > 0, "nothing was erased");
        }
    }
    // A smaller budget at the next start is applied at once, down to the low mark.
    let (mut store, _) = Store::open_writer(db, opts(max_seg)).unwrap();
    let smaller = 4 * max_seg;
    store
        .set_maintenance(Maintenance {
            max_archive_size: Some(smaller),
            ..Maintenance::default()
        })
        .unwrap();
    assert!(store.archive_size() <= smaller / 100 * LOW_MARK_PERCENT);
    assert!(store.summary().erased_segments > 0);
    store.close().unwrap();
    assert_eq!(read_all(db).last().unwrap().0, next - 1);
}

#[test]
fn retain_erases_segments_older_than_the_period_but_never_the_active_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let s = schema("conn", 4);
    let (mut store, _) = Store::open_writer(db, opts(16 << 10)).unwrap();
    // Events of 1970 (old) ...
    for i in 0..30u64 {
        store.append(batch(&s, 20, 20, i)).unwrap();
    }
    store.close().unwrap();
    let sealed = segments(db);
    assert!(sealed > 2);
    let (mut store, _) = Store::open_writer(db, opts(16 << 10)).unwrap();
    // ... then a batch in the active segment that is just as old.
    let active = store.append(batch(&s, 5, 5, 99)).unwrap();
    store
        .set_maintenance(Maintenance {
            retain: Some(Duration::from_secs(86_400)),
            ..Maintenance::default()
        })
        .unwrap();
    assert_eq!(store.summary().erased_segments as usize, sealed);
    assert_eq!(segments(db), 0);
    // The active segment's events are still there (until it is sealed).
    let ids: Vec<u64> = read_all(db).iter().map(|e| e.0).collect();
    assert_eq!(ids, active.clone().collect::<Vec<_>>());
    store.close().unwrap();
    sound(db);
}

#[test]
fn a_reader_keeps_its_snapshot_while_segments_are_erased() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let batches = archive(db, 30);
    let all = expected(&batches);
    // A reader opened before the erase, which has mapped none of the segments yet.
    let reader = Archive::open(db).unwrap();
    let files_before = segment_files(db);
    let (mut store, _) = Store::open_existing(db, opts(16 << 10)).unwrap();
    store.erase(&mut IdSelector(0..1400)).unwrap();
    // Its files are still there: the reader may map them.
    let now = segment_files(db);
    assert!(files_before.iter().all(|f| now.contains(f)));
    let mut old = Vec::new();
    for b in reader.scan() {
        let b = b.unwrap();
        for (i, row) in b.to_batch().to_values().unwrap().into_iter().enumerate() {
            old.push((b.first_id() + i as u64, b.schema().name.clone(), row));
        }
    }
    assert_eq!(old, all, "the reader sees its snapshot");
    // A new reader sees the new state, and verify reports nothing erased as damage.
    assert_eq!(read_all(db), without(&all, |id, _| id < 1400));
    sound(db);
    drop(reader);
    // Once the old reader is gone, the next change (or close) deletes the files. (A child
    // process that another test of this binary forks at that moment holds a copy of the
    // reader's lock until it execs, which looks like a reader still running: under load,
    // that took one close, so a few more changes are allowed to do it.)
    store.close().unwrap();
    for _ in 0..20 {
        if segment_files(db).len() < files_before.len() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (store, _) = Store::open_writer(db, opts(16 << 10)).unwrap();
        store.close().unwrap();
    }
    assert!(segment_files(db).len() < files_before.len());
    let (store, _) = Store::open_writer(db, opts(16 << 10)).unwrap();
    store.close().unwrap();
    let listed = Archive::open(db).unwrap().catalog().segments.len();
    assert_eq!(segment_files(db).len(), listed);
    assert!(Archive::open(db)
        .unwrap()
        .catalog()
        .pending_deletion
        .is_empty());
}

/// The state after a change that may have been interrupted: exactly `old` or `new`, sound,
/// and a repair resurrects nothing.
fn old_or_new(db: &Path, old: &Events, new: &Events, what: &str) -> bool {
    // The next writer cleans up after the interrupted change.
    let (store, _) = Store::open_writer(db, opts(16 << 10)).unwrap();
    store.close().unwrap();
    let now = read_all(db);
    let is_new = &now == new;
    assert!(
        is_new || &now == old,
        "{what}: neither the old nor the new state"
    );
    sound(db);
    let r = repair(db).unwrap();
    // Writing the index of a segment whose own the fault prevented is all it may do.
    let other: Vec<&String> = r
        .actions
        .iter()
        .filter(|a| !a.contains("wrote index") || !a.contains("it had none"))
        .collect();
    assert!(other.is_empty(), "{what}: repair did {:?}", r.actions);
    assert_eq!(&read_all(db), if is_new { new } else { old }, "{what}");
    is_new
}

/// Makes each storage operation of a change fail in turn (as a crash there would leave it:
/// the store is dropped without cleaning up) and checks the state after reopening.
fn every_failure(
    template: &Path,
    old: &Events,
    new: &Events,
    change: impl Fn(&mut Store) -> weir::unstable::store::Result<()>,
) {
    let mut n = 0u64;
    let mut saw_old = false;
    loop {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        copy_dir(template, &db);
        let (mut store, _) = Store::open_existing(&db, opts(16 << 10)).unwrap();
        fault::fail_op(n, None);
        let r = change(&mut store);
        let fired = fault::fired().is_some();
        fault::disarm();
        drop(store);
        if !fired {
            r.unwrap();
            assert!(old_or_new(&db, old, new, "no fault"));
            break;
        }
        assert!(r.is_err(), "operation {n} failed but the change succeeded");
        saw_old |= !old_or_new(&db, old, new, &format!("failed operation {n}"));
        n += 1;
    }
    assert!(n > 5, "only {n} operations");
    assert!(saw_old || old == new, "no failure left the old state");
}

#[test]
fn erase_fails_at_every_operation_into_the_old_or_the_new_state() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("t");
    let all = expected(&archive(&template, 12));
    let new = without(&all, |id, _| (30..420).contains(&id));
    every_failure(&template, &all, &new, |s| {
        s.erase(&mut IdSelector(30..420)).map(|_| ())
    });
}

#[test]
fn compaction_fails_at_every_operation_into_the_old_or_the_new_state() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("t");
    let s = schema("conn", 4);
    let mut batches = Vec::new();
    for i in 0..5u64 {
        let (mut store, _) = Store::open_writer(&template, opts(16 << 10)).unwrap();
        let b = batch(&s, 10, 10, i * 10);
        batches.push(b.clone());
        store.append(b).unwrap();
        store.close().unwrap();
    }
    let all = expected(&batches);
    every_failure(&template, &all, &all, |s| s.compact().map(|_| ()));
    // And it did compact in the end.
    let mut by_file = BTreeMap::new();
    for e in Archive::open(&template).unwrap().catalog().segments.iter() {
        by_file.insert(e.file.clone(), e.events);
    }
    assert_eq!(by_file.len(), 5, "the template is untouched");
}

#[test]
fn background_compaction_merges_when_the_input_pauses() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let s = schema("conn", 4);
    let mut batches = Vec::new();
    for i in 0..6u64 {
        let (mut store, _) = Store::open_writer(db, opts(1 << 20)).unwrap();
        let b = batch(&s, 20, 10, i * 20);
        batches.push(b.clone());
        store.append(b).unwrap();
        store.close().unwrap();
    }
    assert_eq!(segments(db), 6);
    // The sink's settings, as a pipeline file writes them.
    let config: weir::unstable::store::ArchiveSinkConfig = toml::from_str(&format!(
        "db = {:?}\nmax_segment_size = \"1MiB\"\ncompact = true\nretain = \"36500d\"\nmax_archive_size = \"64MiB\"",
        db.display().to_string()
    ))
    .unwrap();
    config.validate().unwrap();
    let m = config.maintenance();
    assert!(m.compact);
    assert_eq!(m.max_archive_size, Some(64 << 20));
    let (mut store, _) = Store::open_writer(db, config.store_options()).unwrap();
    store.set_maintenance(m).unwrap();
    let more = batch(&s, 5, 10, 999);
    batches.push(more.clone());
    store.append(more).unwrap();
    // Nothing is compacted while batches arrive; a flush (the input paused) does one step.
    assert_eq!(segments(db), 6);
    store.flush().unwrap();
    assert_eq!(segments(db), 1);
    store.close().unwrap();
    assert_eq!(segments(db), 2);
    assert_eq!(read_all(db), expected(&batches));
    sound(db);
}
