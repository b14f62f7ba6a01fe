//! Crash recovery: the WAL is replayed, torn tails are discarded with a warning, damage in the
//! middle is an error naming file and offset, and no seal interruption duplicates events.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::fs;
use std::path::Path;

use common::store::{batch, copy_dir, expected, read_all, schema};
use proptest::prelude::*;
use weir::unstable::batch::Batch;
use weir::unstable::store::{Archive, Store, StoreError, StoreOptions};
use weir::unstable::wal::{SyncPolicy, WalError, WalReader};

fn opts(max: u64) -> StoreOptions {
    StoreOptions {
        max_segment_size: max,
        sync: SyncPolicy::Batch,
        ..StoreOptions::default()
    }
}

/// Appends `batches` and drops the store without closing it (a crash after the appends).
fn crash_after(dir: &Path, max: u64, batches: &[Batch]) {
    let (mut store, _) = Store::open_writer(dir, opts(max)).unwrap();
    for b in batches {
        store.append(b.clone()).unwrap();
    }
    drop(store);
}

fn some_batches(n: usize) -> Vec<Batch> {
    let s = [schema("conn", 3), schema("dns", 1)];
    (0..n)
        .map(|i| batch(&s[i % 2], 5 + i, 10, i as u64))
        .collect()
}

/// The temporary file of the segment a crashed writer was building.
fn active_segment_file(seg_dir: &Path) -> std::path::PathBuf {
    fs::read_dir(seg_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".seg.tmp"))
        .expect("a temporary segment file")
}

#[test]
fn replay_after_crash_completes_the_active_segment() {
    let dir = tempfile::tempdir().unwrap();
    let batches = some_batches(6);
    crash_after(dir.path(), 1 << 20, &batches);
    // Readers see the unsealed events through the WAL.
    assert_eq!(read_all(dir.path()), expected(&batches));
    let (mut store, report) = Store::open_writer(dir.path(), opts(1 << 20)).unwrap();
    assert_eq!(report.replayed_batches, 6);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let more = some_batches(2);
    store.append(more[0].clone()).unwrap();
    store.close().unwrap();
    let mut all = batches.clone();
    all.push(more[0].clone());
    assert_eq!(read_all(dir.path()), expected(&all));
    assert!(Archive::open(dir.path()).unwrap().verify().is_ok());
}

#[test]
fn crash_with_sealed_segments_and_wal_tail() {
    let dir = tempfile::tempdir().unwrap();
    let batches = some_batches(40);
    crash_after(dir.path(), 8192, &batches);
    assert!(Archive::open(dir.path()).unwrap().catalog().segments.len() > 2);
    let (store, report) = Store::open_writer(dir.path(), opts(8192)).unwrap();
    assert!(report.replayed_batches > 0);
    store.close().unwrap();
    assert_eq!(read_all(dir.path()), expected(&batches));
}

#[test]
fn torn_last_record_is_discarded_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let batches = some_batches(4);
    crash_after(dir.path(), 1 << 20, &batches);
    let wal = dir.path().join("wal");
    let len = fs::metadata(&wal).unwrap().len();
    // Cut the last record in half: it was never acknowledged.
    let last = batches[3].byte_size() as u64;
    fs::OpenOptions::new()
        .write(true)
        .open(&wal)
        .unwrap()
        .set_len(len - last / 2)
        .unwrap();
    let (mut store, report) = Store::open_writer(dir.path(), opts(1 << 20)).unwrap();
    assert_eq!(report.replayed_batches, 3);
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(
        report.warnings[0].contains("torn last record"),
        "{:?}",
        report.warnings
    );
    assert!(report.warnings[0].contains("wal"), "{:?}", report.warnings);
    // The torn bytes are cut off: new appends follow the last good record.
    store.append(batches[3].clone()).unwrap();
    drop(store);
    let (store, report) = Store::open_writer(dir.path(), opts(1 << 20)).unwrap();
    assert!(report.warnings.is_empty());
    store.close().unwrap();
    assert_eq!(read_all(dir.path()), expected(&batches));
}

#[test]
fn corrupt_middle_record_is_an_error_naming_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let batches = some_batches(4);
    crash_after(dir.path(), 1 << 20, &batches);
    let wal = dir.path().join("wal");
    let mut bytes = fs::read(&wal).unwrap();
    // The second record starts after the header (20) and the first record.
    let first_len = u32::from_le_bytes(bytes[20..24].try_into().unwrap()) as usize;
    let second = 20 + 8 + first_len;
    bytes[second + 8 + 40] ^= 0x55;
    fs::write(&wal, &bytes).unwrap();
    let err = Store::open_writer(dir.path(), opts(1 << 20)).unwrap_err();
    match &err {
        StoreError::Wal(WalError::Corrupt { offset, .. }) => assert_eq!(*offset, second as u64),
        other => panic!("unexpected {other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("wal") && msg.contains(&format!("offset {second}")),
        "{msg}"
    );
    // verify reports it too; readers read the records before it, with a warning naming it.
    let report = Archive::open(dir.path()).unwrap().verify();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    let archive = Archive::open(dir.path()).unwrap();
    let events: usize = archive.scan().map(|b| b.unwrap().len()).sum();
    assert_eq!(events, batches[0].len());
    let warnings = archive.wal_warnings();
    assert!(
        warnings.len() == 1 && warnings[0].contains(&format!("offset {second}")),
        "{warnings:?}"
    );
}

#[test]
fn crash_between_segment_and_catalog_does_not_duplicate() {
    // State: the WAL holds the active segment's records and the segment file was renamed into
    // place, but the catalog does not name it yet.
    let crashed = tempfile::tempdir().unwrap();
    let batches = some_batches(5);
    crash_after(crashed.path(), 1 << 20, &batches);
    let sealed = tempfile::tempdir().unwrap();
    copy_dir(crashed.path(), sealed.path());
    Store::open_writer(sealed.path(), opts(1 << 20))
        .unwrap()
        .0
        .close()
        .unwrap();
    for e in fs::read_dir(sealed.path().join("segments")).unwrap() {
        let e = e.unwrap();
        fs::copy(
            e.path(),
            crashed.path().join("segments").join(e.file_name()),
        )
        .unwrap();
    }
    let (store, report) = Store::open_writer(crashed.path(), opts(1 << 20)).unwrap();
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("interrupted seal")),
        "{report:?}"
    );
    store.close().unwrap();
    assert_eq!(read_all(crashed.path()), expected(&batches));
    assert_eq!(
        Archive::open(crashed.path())
            .unwrap()
            .catalog()
            .segments
            .len(),
        1
    );
    assert!(Archive::open(crashed.path()).unwrap().verify().is_ok());
}

#[test]
fn crash_between_catalog_and_wal_reset_does_not_duplicate() {
    // State: segment and catalog are durable, but the old WAL (whose records the segment
    // holds) was not replaced yet.
    let crashed = tempfile::tempdir().unwrap();
    let batches = some_batches(5);
    crash_after(crashed.path(), 1 << 20, &batches);
    let old_wal = fs::read(crashed.path().join("wal")).unwrap();
    Store::open_writer(crashed.path(), opts(1 << 20))
        .unwrap()
        .0
        .close()
        .unwrap();
    fs::write(crashed.path().join("wal"), old_wal).unwrap();
    // A reader skips the stale records already.
    assert_eq!(read_all(crashed.path()), expected(&batches));
    let (mut store, report) = Store::open_writer(crashed.path(), opts(1 << 20)).unwrap();
    assert_eq!(report.replayed_batches, 0);
    assert_eq!(report.skipped_batches, 5);
    let more = some_batches(1);
    store.append(more[0].clone()).unwrap();
    drop(store);
    Store::open_writer(crashed.path(), opts(1 << 20))
        .unwrap()
        .0
        .close()
        .unwrap();
    let mut all = batches.clone();
    all.extend(more);
    assert_eq!(read_all(crashed.path()), expected(&all));
    assert!(Archive::open(crashed.path()).unwrap().verify().is_ok());
}

#[test]
fn replay_with_a_smaller_maximum_rotates() {
    let dir = tempfile::tempdir().unwrap();
    let batches = some_batches(30);
    crash_after(dir.path(), 1 << 20, &batches);
    let (store, report) = Store::open_writer(dir.path(), opts(8192)).unwrap();
    assert_eq!(report.replayed_batches, 30);
    // Crash again in the middle of the new life: replayed segments were sealed, WAL kept.
    drop(store);
    let (store, _) = Store::open_writer(dir.path(), opts(8192)).unwrap();
    store.close().unwrap();
    assert_eq!(read_all(dir.path()), expected(&batches));
    let archive = Archive::open(dir.path()).unwrap();
    assert!(
        archive.catalog().segments.len() >= 3,
        "{:?}",
        archive.catalog().segments.len()
    );
    assert!(archive.catalog().segments.iter().all(|s| s.bytes <= 8192));
}

#[test]
fn sync_policies_parse() {
    assert_eq!("always".parse::<SyncPolicy>().unwrap(), SyncPolicy::Always);
    assert_eq!("batch".parse::<SyncPolicy>().unwrap(), SyncPolicy::Batch);
    assert_eq!("never".parse::<SyncPolicy>().unwrap(), SyncPolicy::Never);
    assert!("sometimes".parse::<SyncPolicy>().is_err());
    assert_eq!(SyncPolicy::default(), SyncPolicy::Batch);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Any truncation of the WAL recovers a prefix of the acknowledged batches (the records
    /// wholly before the cut) and never panics.
    #[test]
    fn truncated_wal_recovers_a_prefix(cut in 0.0f64..1.0) {
        let dir = tempfile::tempdir().unwrap();
        let batches = some_batches(5);
        crash_after(dir.path(), 1 << 20, &batches);
        let wal = dir.path().join("wal");
        let len = fs::metadata(&wal).unwrap().len();
        let keep = (len as f64 * cut) as u64;
        fs::OpenOptions::new().write(true).open(&wal).unwrap().set_len(keep).unwrap();
        match Store::open_writer(dir.path(), opts(1 << 20)) {
            Ok((store, _)) => {
                store.close().unwrap();
                let got = read_all(dir.path());
                let want = expected(&batches);
                prop_assert!(got.len() <= want.len());
                prop_assert_eq!(&got[..], &want[..got.len()]);
            }
            Err(e) => {
                // Only a cut inside the header is fatal, and it is reported, not a panic.
                prop_assert!(keep < 20, "{}", e);
                prop_assert!(e.to_string().contains("wal"), "{}", e);
            }
        }
    }

    /// Any single bit flip in the WAL gives an error or a clean prefix, never a panic or wrong
    /// data.
    #[test]
    fn bit_flipped_wal_never_panics(pos in 0.0f64..1.0, bit in 0u8..8) {
        let dir = tempfile::tempdir().unwrap();
        let batches = some_batches(4);
        crash_after(dir.path(), 1 << 20, &batches);
        let wal = dir.path().join("wal");
        let mut bytes = fs::read(&wal).unwrap();
        let i = ((bytes.len() - 1) as f64 * pos) as usize;
        bytes[i] ^= 1 << bit;
        fs::write(&wal, &bytes).unwrap();
        let mut reader = match WalReader::open(&wal) {
            Ok(r) => r,
            Err(e) => { prop_assert!(e.is_corruption()); return Ok(()); }
        };
        let want = expected(&batches);
        let mut got = Vec::new();
        loop {
            match reader.next_record() {
                Ok(Some((_, b))) => got.extend(b.to_values().unwrap()),
                Ok(None) => break,
                Err(e) => { prop_assert!(e.is_corruption(), "{}", e); break; }
            }
        }
        // Whatever was accepted is exactly what was written.
        for (g, w) in got.iter().zip(&want) {
            prop_assert_eq!(g, &w.2);
        }
        prop_assert!(got.len() <= want.len());
    }
}

/// The WAL points at the rows in the active segment's file instead of holding a second copy,
/// and replay after a crash reads them from there.
#[test]
fn wal_records_point_at_rows_in_the_segment_file() {
    let dir = tempfile::tempdir().unwrap();
    let s = schema("conn", 4);
    let batches: Vec<Batch> = (0..20).map(|i| batch(&s, 50, 400, i)).collect();
    let rows: usize = batches.iter().map(Batch::byte_size).sum();
    crash_after(dir.path(), 16 << 20, &batches);
    let wal = fs::metadata(dir.path().join("wal")).unwrap().len() as usize;
    assert!(
        wal * 10 < rows,
        "WAL of {wal} bytes for {rows} bytes of rows"
    );
    let temps: Vec<_> = fs::read_dir(dir.path().join("segments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        temps.len() == 1 && temps[0].ends_with(".seg.tmp"),
        "{temps:?}"
    );
    // A reader sees the unsealed events through the WAL, rows read from the segment file.
    assert_eq!(read_all(dir.path()), expected(&batches));
    let (store, report) = Store::open_writer(dir.path(), opts(16 << 20)).unwrap();
    assert_eq!(report.replayed_batches, 20);
    assert!(report.warnings.is_empty(), "{report:?}");
    store.close().unwrap();
    assert_eq!(read_all(dir.path()), expected(&batches));
    // The earlier life's file is gone once a seal replaced the WAL: one segment and its index.
    let mut names: Vec<_> = fs::read_dir(dir.path().join("segments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names.len() == 2
            && names[0].ends_with(".idx")
            && names[1] == names[0].replace(".idx", ".seg")
            && !names[0].starts_with('.'),
        "{names:?}"
    );
    assert!(Archive::open(dir.path()).unwrap().verify().is_ok());
}

/// A second crash right after a replay: the WAL still points into the first life's file, which
/// must still be there.
#[test]
fn crash_again_after_replay_keeps_the_rows_the_wal_points_at() {
    let dir = tempfile::tempdir().unwrap();
    let batches = some_batches(6);
    crash_after(dir.path(), 1 << 20, &batches);
    let more = some_batches(9);
    crash_after(dir.path(), 1 << 20, &more[6..]);
    let (store, report) = Store::open_writer(dir.path(), opts(1 << 20)).unwrap();
    assert_eq!(report.replayed_batches, 9, "{report:?}");
    store.close().unwrap();
    assert_eq!(read_all(dir.path()), expected(&more));
    assert!(Archive::open(dir.path()).unwrap().verify().is_ok());
}

/// Rows of the last record damaged in the segment file (or records that outlived their rows
/// after a power loss) end the log there, with a warning: the events before are kept, nothing
/// is invented. (Damaged rows of a middle record are corruption: tests/it/fault_store.rs.)
#[test]
fn damaged_rows_in_the_segment_file_end_the_log_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let batches = some_batches(6);
    // Uncompressed, to find the row by its bytes (the read path of compressed rows is the same
    // after their CRC, which covers the stored bytes).
    let (mut store, _) = Store::open_writer(
        dir.path(),
        StoreOptions {
            compression: weir::unstable::segment::Compression::NONE,
            ..opts(1 << 20)
        },
    )
    .unwrap();
    for b in &batches {
        store.append(b.clone()).unwrap();
    }
    drop(store);
    let seg_dir = dir.path().join("segments");
    let temp = active_segment_file(&seg_dir);
    // Damage a row of the last batch, found by its bytes.
    let row = batches[5].row(0).to_vec();
    let mut bytes = fs::read(&temp).unwrap();
    let at = bytes
        .windows(row.len())
        .position(|w| w == row)
        .expect("the row is in the segment file");
    bytes[at + row.len() / 2] ^= 0x20;
    fs::write(&temp, &bytes).unwrap();
    let (store, report) = Store::open_writer(dir.path(), opts(1 << 20)).unwrap();
    assert_eq!(report.replayed_batches, 5, "{report:?}");
    assert!(
        report.warnings.iter().any(|w| w.contains("not readable")),
        "{report:?}"
    );
    store.close().unwrap();
    assert_eq!(read_all(dir.path()), expected(&batches[..5]));
}

/// A crash after the active segment's file was renamed into place but before the catalog named
/// it: the WAL points into the renamed file, which replay reads and the next seal removes.
#[test]
fn crash_after_renaming_the_segment_file_replays_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let batches = some_batches(5);
    crash_after(dir.path(), 1 << 20, &batches);
    let seg_dir = dir.path().join("segments");
    let temp = active_segment_file(&seg_dir);
    let name = temp.file_name().unwrap().to_string_lossy().into_owned();
    let sealed_name = name
        .trim_start_matches('.')
        .trim_end_matches(".tmp")
        .to_string();
    // Sealing keeps the end of the file where it is, so the rows stay at their distance from
    // the end: a plain rename is enough to stand for it here.
    fs::rename(&temp, seg_dir.join(&sealed_name)).unwrap();
    let (store, report) = Store::open_writer(dir.path(), opts(1 << 20)).unwrap();
    assert_eq!(report.replayed_batches, 5, "{report:?}");
    assert!(seg_dir.join(&sealed_name).exists());
    store.close().unwrap();
    assert!(!seg_dir.join(&sealed_name).exists());
    assert_eq!(read_all(dir.path()), expected(&batches));
    assert!(Archive::open(dir.path()).unwrap().verify().is_ok());
}

/// Format 4: the WAL points at batches stored in columns in the active segment; a replay
/// rebuilds their rows from the columns, and the sealed segment holds them in columns.
#[test]
fn replay_rebuilds_batches_stored_in_columns() {
    let dir = tempfile::tempdir().unwrap();
    let s = schema("conn", 6);
    let batches: Vec<Batch> = (0..5).map(|i| batch(&s, 200, 40, i)).collect();
    crash_after(dir.path(), 1 << 20, &batches);
    assert_eq!(read_all(dir.path()), expected(&batches));
    let (store, report) = Store::open_writer(dir.path(), opts(1 << 20)).unwrap();
    assert_eq!(report.replayed_batches, 5);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    store.close().unwrap();
    assert_eq!(read_all(dir.path()), expected(&batches));
    let archive = Archive::open(dir.path()).unwrap();
    assert!(archive.verify().is_ok());
    let entry = &archive.catalog().segments[0];
    let seg = weir::unstable::segment::Segment::open(dir.path().join(&entry.file)).unwrap();
    assert!(seg.len() >= 5);
    for i in 0..seg.len() {
        assert_eq!(
            seg.batch_layout(i),
            Some(weir::unstable::segment::Layout::Columns),
            "batch {i}"
        );
    }
}
