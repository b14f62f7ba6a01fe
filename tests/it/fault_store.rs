//! Faults of the store that must not lose or hide acknowledged data (issue 13): a disk that
//! fills up while sealing, segment files the catalog does not list, a damaged write-ahead log,
//! event ID overflow, and `weir verify --repair`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::cli::{ok, run, run_with_stdin, s, text};
use common::store::{batch, expected, read_all, schema};
use weir::unstable::batch::Batch;
use weir::unstable::store::{fault, Archive, Store, StoreOptions};
use weir::unstable::wal::{Entry, SyncPolicy, WalReader};

/// Uncompressed: these tests find rows in the files and count on segments filling up.
fn opts(max: u64) -> StoreOptions {
    StoreOptions {
        max_segment_size: max,
        sync: SyncPolicy::Batch,
        compression: weir::unstable::segment::Compression::NONE,
        ..StoreOptions::default()
    }
}

/// The event ID after the last record of the WAL in `db` (without reading any rows).
fn wal_end(db: &Path) -> u64 {
    let mut r = WalReader::open(&db.join("wal")).unwrap();
    while let Some((_, e)) = r.next_entry(u64::MAX).unwrap() {
        assert!(matches!(e, Entry::Sealed(_)));
    }
    r.end_id()
}

/// Asserts that the archive in `db` holds exactly `batches`, appended from ID 0 (without
/// printing thousands of events when it does not).
fn assert_events(db: &Path, batches: &[Batch]) {
    let (got, want) = (read_all(db), expected(batches));
    assert_eq!(got.len(), want.len(), "events in {}", db.display());
    assert!(got == want, "the events of {} differ", db.display());
}

// ---------------------------------------------------------------------------------------------
// 1. A full disk during a seal.

/// A seal that fails (as on a full disk) keeps the active segment's temporary file, whose rows
/// the acknowledged WAL records point at; the next writer recovers every acknowledged event.
#[test]
fn failed_seal_keeps_the_rows_of_acknowledged_records() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let s = schema("conn", 4);
    let mut acked: Vec<Batch> = Vec::new();
    {
        let (mut store, _) = Store::open_writer(db, opts(64 << 10)).unwrap();
        // The first commit on this thread is the first seal's segment file.
        fault::fail_commit_after(0);
        let mut failed = None;
        for i in 0..100 {
            let b = batch(&s, 20, 40, i);
            match store.append(b.clone()) {
                Ok(_) => acked.push(b),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        fault::disarm();
        let e = failed.expect("the seal failed");
        assert!(e.to_string().contains("no space left"), "{e}");
        assert!(!acked.is_empty());
    }
    assert_eq!(wal_end(db), expected(&acked).len() as u64);
    // Readers still see every acknowledged event (rows read from the kept file).
    assert_events(db, &acked);
    let (store, report) = Store::open_writer(db, opts(64 << 10)).unwrap();
    assert!(report.warnings.is_empty(), "{report:?}");
    store.close().unwrap();
    assert_events(db, &acked);
    assert!(Archive::open(db).unwrap().verify().is_ok());
}

/// Unmounts a tmpfs when dropped.
struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// The real case: `weir import` onto a 5 MiB tmpfs fails with "No space left"; after space is
/// freed, the next import recovers every acknowledged event. Needs root (`mount`): skipped
/// with a note otherwise.
#[test]
fn full_tmpfs_during_import_loses_no_acknowledged_event() {
    let Some(corpus) = common::corpus::dir() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("S");
    fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=5m", "tmpfs", s(&mnt)])
        .output();
    if !mounted.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("note: cannot mount a tmpfs (needs root): skipping {mounted:?}");
        return;
    }
    let _mount = Mount(mnt.clone());
    let db = mnt.join("db");
    let logs: Vec<String> = ["conn", "dns", "http", "conn", "dns", "http"]
        .iter()
        .map(|n| corpus.join(format!("{n}.log.gz")).display().to_string())
        .collect();
    let mut args = vec![
        "import",
        "-q",
        "--db",
        s(&db),
        "--max-segment-size",
        "1MiB",
        "--compression",
        "none",
        // The sizes this test is tuned to are those of the logs' own fields.
        "--community-id",
        "off",
    ];
    args.extend(logs.iter().map(String::as_str));
    let out = run(&args);
    assert!(!out.status.success(), "the import should fill the disk");
    assert!(
        text(&out.stderr).contains("No space left"),
        "{}",
        text(&out.stderr)
    );
    let sealed = Archive::open(&db).unwrap().catalog().next_id;
    let acknowledged = wal_end(&db);
    assert!(
        acknowledged > sealed,
        "the WAL holds no acknowledged event beyond the sealed ones ({sealed}): the test proves nothing"
    );
    let remount = Command::new("mount")
        .args(["-o", "remount,size=64m", s(&mnt)])
        .status()
        .unwrap();
    assert!(remount.success());
    let out = run_with_stdin(&["import", "-q", "--db", s(&db)], b"");
    ok(&out, "weir import after freeing space");
    let info = common::cli::info(&db);
    assert_eq!(info["events"], acknowledged, "{info}");
    assert_eq!(info["id_ranges"], serde_json::json!([[0, acknowledged]]));
    let verify = run(&["verify", "--db", s(&db)]);
    assert!(ok(&verify, "weir verify").starts_with("ok:"));
}

// ---------------------------------------------------------------------------------------------
// 2. Segment files the catalog does not list.

/// An archive of several sealed segments (and a few events in the WAL) made by the library;
/// returns the batches, appended from ID 0.
fn archive_of_segments(db: &Path, n: u64) -> Vec<Batch> {
    let s = schema("conn", 4);
    let batches: Vec<Batch> = (0..n).map(|i| batch(&s, 20, 40, i)).collect();
    let (mut store, _) = Store::open_writer(db, opts(16 << 10)).unwrap();
    for b in &batches {
        store.append(b.clone()).unwrap();
    }
    store.close().unwrap();
    batches
}

/// Removes the `i`th entry of the catalog of `db` (keeping `next_id`); returns its file.
fn drop_catalog_entry(db: &Path, i: usize) -> std::path::PathBuf {
    let path = db.join("catalog.json");
    let mut cat: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let entry = cat["segments"].as_array_mut().unwrap().remove(i);
    fs::write(&path, serde_json::to_vec(&cat).unwrap()).unwrap();
    db.join(entry["file"].as_str().unwrap())
}

/// With `catalog.json` and `wal` gone, `verify` reports every segment, and the next import
/// refuses to write (it would assign their IDs again) instead of deleting them.
#[test]
fn segments_of_a_lost_catalog_are_reported_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    archive_of_segments(db, 20);
    let files = common::cli::segment_files(db);
    assert!(files.len() > 2, "{files:?}");
    fs::remove_file(db.join("catalog.json")).unwrap();
    fs::remove_file(db.join("wal")).unwrap();
    let verify = run(&["verify", "--db", s(db)]);
    assert_eq!(verify.status.code(), Some(1), "{}", text(&verify.stdout));
    let out = text(&verify.stdout);
    for f in &files {
        assert!(out.contains(s(f)), "{f:?} not reported: {out}");
    }
    let import = run_with_stdin(&["import", "-q", "--db", s(db)], b"");
    assert!(!import.status.success());
    let err = text(&import.stderr);
    assert!(
        err.contains("not in the catalog") && err.contains("--repair"),
        "{err}"
    );
    assert_eq!(common::cli::segment_files(db), files);
}

/// One catalog entry lost: export and info warn (and still exit 0), verify exits 1 naming it,
/// and the next import keeps the file, with a warning.
#[test]
fn a_lost_catalog_entry_is_reported_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    archive_of_segments(db, 20);
    let lost = drop_catalog_entry(db, 1);
    let export = run(&["export", "--db", s(db), "--to", "json"]);
    ok(&export, "weir export");
    assert!(
        text(&export.stderr).contains(&format!("segment {} is not in the catalog", s(&lost))),
        "{}",
        text(&export.stderr)
    );
    let info = run(&["info", "--db", s(db)]);
    ok(&info, "weir info");
    assert!(
        text(&info.stderr).contains(s(&lost)),
        "{}",
        text(&info.stderr)
    );
    let verify = run(&["verify", "--db", s(db)]);
    assert_eq!(verify.status.code(), Some(1));
    assert!(
        text(&verify.stdout).contains(s(&lost)),
        "{}",
        text(&verify.stdout)
    );
    let import = run_with_stdin(&["import", "-q", "--db", s(db)], b"");
    ok(&import, "weir import");
    assert!(
        text(&import.stderr).contains(s(&lost)),
        "{}",
        text(&import.stderr)
    );
    assert!(lost.exists(), "the import deleted {lost:?}");
}

/// A copy of a listed segment's events under another name (what a crash between a seal's
/// catalog write and the removal of the earlier life's file leaves): verify warns but exits 0,
/// the next writer removes it, and every event is still there once.
#[test]
fn an_unlisted_copy_of_listed_events_is_removed_by_the_next_writer() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let batches = archive_of_segments(db, 20);
    let files = common::cli::segment_files(db);
    let copy = db
        .join("segments")
        .join("00000000-0000-4000-8000-000000000001.seg");
    fs::copy(&files[1], &copy).unwrap();
    let verify = run(&["verify", "--db", s(db)]);
    ok(&verify, "weir verify");
    let all = format!("{}{}", text(&verify.stdout), text(&verify.stderr));
    assert!(
        all.contains(s(&copy)) && all.contains("listed segment"),
        "{all}"
    );
    let import = run_with_stdin(&["import", "-q", "--db", s(db)], b"");
    ok(&import, "weir import");
    assert!(
        text(&import.stderr).contains("removed segment"),
        "{}",
        text(&import.stderr)
    );
    assert!(!copy.exists(), "{copy:?} kept");
    assert_eq!(common::cli::segment_files(db), files);
    assert_eq!(read_all(db), expected(&batches));
}

// ---------------------------------------------------------------------------------------------
// 3. A damaged write-ahead log is not a torn tail.

/// Appends `batches` and drops the store without closing it (a crash after the appends).
fn crash_after(db: &Path, batches: &[Batch]) {
    let (mut store, _) = Store::open_writer(db, opts(1 << 20)).unwrap();
    for b in batches {
        store.append(b.clone()).unwrap();
    }
    drop(store);
}

fn small_batches(n: u64) -> Vec<Batch> {
    let s = schema("conn", 3);
    (0..n).map(|i| batch(&s, 5 + i as usize, 10, i)).collect()
}

/// The offsets of the WAL's records.
fn record_offsets(db: &Path) -> Vec<u64> {
    let mut r = WalReader::open(&db.join("wal")).unwrap();
    let mut offsets = Vec::new();
    while let Some((offset, _)) = r.next_record().unwrap() {
        offsets.push(offset);
    }
    offsets
}

/// The active segment's temporary file.
fn active_segment_file(db: &Path) -> std::path::PathBuf {
    fs::read_dir(db.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".seg.tmp"))
        .expect("a temporary segment file")
}

/// Flips a bit in the middle of row 0 of `b` in the file at `path`.
fn damage_row(path: &Path, b: &Batch) {
    let row = b.row(0).to_vec();
    let mut bytes = fs::read(path).unwrap();
    let at = bytes
        .windows(row.len())
        .position(|w| w == row)
        .expect("the row is in the file");
    bytes[at + row.len() / 2] ^= 0x20;
    fs::write(path, &bytes).unwrap();
}

/// The writer refuses a damaged log with an error naming it and the offset, changes nothing,
/// and `weir verify` exits 1 naming it.
fn assert_refused(db: &Path, offset: u64) {
    let wal = db.join("wal");
    let before = fs::read(&wal).unwrap();
    let temp = active_segment_file(db);
    let temp_before = fs::read(&temp).unwrap();
    let e = Store::open_writer(db, opts(1 << 20)).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains(s(&wal)) && msg.contains(&format!("offset {offset}")),
        "{msg}"
    );
    assert!(e.is_corruption(), "{msg}");
    let import = run_with_stdin(&["import", "-q", "--db", s(db)], b"");
    assert!(!import.status.success());
    assert!(text(&import.stderr).contains(&format!("offset {offset}")));
    assert!(fs::read(&wal).unwrap() == before, "the WAL was changed");
    assert!(
        fs::read(&temp).unwrap() == temp_before,
        "the segment file was changed"
    );
    let verify = run(&["verify", "--db", s(db)]);
    assert_eq!(verify.status.code(), Some(1), "{}", text(&verify.stdout));
    let out = text(&verify.stdout);
    assert!(
        out.contains(s(&wal)) && out.contains(&format!("offset {offset}")),
        "{out}"
    );
}

/// A middle record's length field set to `ff ff ff 7f` (a length that runs past the end of
/// the file) does not make the records after it a torn tail.
#[test]
fn a_damaged_length_in_a_middle_record_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    crash_after(db, &small_batches(6));
    let offsets = record_offsets(db);
    assert_eq!(offsets.len(), 6);
    let wal = db.join("wal");
    let mut bytes = fs::read(&wal).unwrap();
    let at = offsets[2] as usize;
    bytes[at..at + 4].copy_from_slice(&[0xff, 0xff, 0xff, 0x7f]);
    fs::write(&wal, &bytes).unwrap();
    assert_refused(db, offsets[2]);
}

/// One bit flipped in the rows of a middle record (in the active segment's file) does not make
/// the records after it a torn tail.
#[test]
fn a_bit_flip_in_the_rows_of_a_middle_record_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let batches = small_batches(6);
    crash_after(db, &batches);
    let offsets = record_offsets(db);
    damage_row(&active_segment_file(db), &batches[3]);
    assert_refused(db, offsets[3]);
}

/// The same damage in the last record is a torn tail: dropped with a warning.
#[test]
fn damage_in_the_last_record_is_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let batches = small_batches(6);
    crash_after(db, &batches);
    damage_row(&active_segment_file(db), &batches[5]);
    let verify = run(&["verify", "--db", s(db)]);
    ok(&verify, "weir verify");
    let (store, report) = Store::open_writer(db, opts(1 << 20)).unwrap();
    assert_eq!(report.replayed_batches, 5, "{report:?}");
    assert!(
        report.warnings.iter().any(|w| w.contains("torn")),
        "{report:?}"
    );
    store.close().unwrap();
    assert_events(db, &batches[..5]);
}

// ---------------------------------------------------------------------------------------------
// 4. Event ID overflow.

/// A database whose catalog ends `left` IDs before `u64::MAX` (no segments).
fn near_the_end_of_the_id_space(db: &Path, left: u64) -> u64 {
    let next_id = u64::MAX - left;
    fs::create_dir_all(db).unwrap();
    let cat = serde_json::json!({
        "format": "weir-catalog", "version": 1, "next_id": next_id, "segments": []
    });
    fs::write(db.join("catalog.json"), serde_json::to_vec(&cat).unwrap()).unwrap();
    next_id
}

/// A batch that would take IDs past `u64::MAX` is refused with a clear error before anything
/// is written; batches that fit are kept, and the archive stays readable.
#[test]
fn a_batch_past_the_end_of_the_id_space_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let next_id = near_the_end_of_the_id_space(db, 5);
    let s = schema("conn", 2);
    let (mut store, _) = Store::open_writer(db, opts(1 << 20)).unwrap();
    assert_eq!(
        store.append(batch(&s, 3, 10, 0)).unwrap(),
        next_id..next_id + 3
    );
    let e = store.append(batch(&s, 10, 10, 1)).unwrap_err();
    assert!(
        matches!(e, weir::unstable::StoreError::IdOverflow { next_id: n, events: 10 } if n == next_id + 3),
        "{e}"
    );
    assert!(e.to_string().contains("event ID space exhausted"), "{e}");
    // Not poisoned: a batch that fits still goes in, exactly up to the last ID.
    assert_eq!(
        store.append(batch(&s, 2, 10, 2)).unwrap(),
        next_id + 3..u64::MAX
    );
    assert!(store.append(batch(&s, 1, 10, 3)).is_err());
    store.close().unwrap();
    let archive = Archive::open(db).unwrap();
    assert_eq!(archive.catalog().next_id, u64::MAX);
    let info = archive.info().unwrap();
    assert_eq!(info.segment_events, 5);
    assert_eq!(info.id_ranges, vec![[next_id, u64::MAX]]);
}

/// The CLI case: `weir import` fails (instead of exiting 0 after writing the interval
/// `[18446744073709551615, 19)`), and every command still reads the catalog.
#[test]
fn import_past_the_end_of_the_id_space_fails_and_keeps_the_archive_readable() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    near_the_end_of_the_id_space(&db, 1);
    let log = dir.path().join("conn.log");
    fs::write(&log, common::conn_log::log(0..20)).unwrap();
    let import = run(&["import", "-q", "--db", s(&db), s(&log)]);
    assert!(!import.status.success(), "{}", text(&import.stderr));
    assert!(
        text(&import.stderr).contains("event ID space exhausted"),
        "{}",
        text(&import.stderr)
    );
    let info = common::cli::info(&db);
    assert_eq!(info["events"], 0, "{info}");
    ok(&run(&["export", "--db", s(&db)]), "weir export");
    let again = run(&["import", "-q", "--db", s(&db), s(&log)]);
    assert!(text(&again.stderr).contains("event ID space exhausted"));
}

// ---------------------------------------------------------------------------------------------
// 5. `weir verify --repair`.

/// Every file under `dir` with its size, sorted (to show that a command changed nothing). The
/// lock files (the writer's `LOCK`, the readers' `readers/`) are not contents.
fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.ends_with("readers") {
            continue;
        }
        if p.is_dir() {
            out.extend(listing(&p));
        } else if !p.ends_with("LOCK") {
            out.push((p.display().to_string(), fs::metadata(&p).unwrap().len()));
        }
    }
    out.sort();
    out
}

/// Runs `weir verify --repair` and returns its `repair:` lines; asserts the exit status.
fn repair(db: &Path, ok_after: bool) -> Vec<String> {
    let out = run(&["verify", "--repair", "--db", s(db)]);
    assert_eq!(
        out.status.code(),
        Some(if ok_after { 0 } else { 1 }),
        "stdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("repair: "))
        .map(String::from)
        .collect()
}

/// A lost catalog entry: plain `verify` changes nothing and exits 1; `--repair` adds the
/// segment back (one line saying so), after which everything verifies and reads.
#[test]
fn repair_adds_a_lost_catalog_entry_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let batches = archive_of_segments(db, 20);
    let lost = drop_catalog_entry(db, 2);
    let before = listing(db);
    assert_eq!(run(&["verify", "--db", s(db)]).status.code(), Some(1));
    assert_eq!(listing(db), before, "verify changed files");
    let lines = repair(db, true);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with(&format!("repair: added segment {}", s(&lost))),
        "{lines:?}"
    );
    assert!(lines[1].starts_with("repair: wrote catalog"), "{lines:?}");
    assert_events(db, &batches);
    assert_eq!(repair(db, true), vec!["repair: nothing to do".to_string()]);
}

/// A lost catalog (and WAL) is rebuilt from the segment files.
#[test]
fn repair_rebuilds_a_lost_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let batches = archive_of_segments(db, 20);
    let files = common::cli::segment_files(db);
    fs::remove_file(db.join("catalog.json")).unwrap();
    fs::remove_file(db.join("wal")).unwrap();
    let lines = repair(db, true);
    assert!(
        lines[0].contains("catalog") && lines[0].contains("missing"),
        "{lines:?}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.contains("added segment")).count(),
        files.len(),
        "{lines:?}"
    );
    assert_events(db, &batches);
    // And the archive takes imports again.
    ok(
        &run_with_stdin(&["import", "-q", "--db", s(db)], b""),
        "weir import",
    );
}

/// A corrupt catalog is moved aside into `damaged/` (not deleted) and rebuilt.
#[test]
fn repair_moves_a_corrupt_catalog_aside_and_rebuilds_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let batches = archive_of_segments(db, 20);
    fs::write(db.join("catalog.json"), b"{\"format\": \"weir-cat").unwrap();
    assert_eq!(run(&["verify", "--db", s(db)]).status.code(), Some(1));
    let lines = repair(db, true);
    assert!(lines[0].contains("moved corrupt catalog"), "{lines:?}");
    assert_eq!(
        fs::read(db.join("damaged/catalog.json")).unwrap(),
        b"{\"format\": \"weir-cat"
    );
    assert_events(db, &batches);
}

/// One flipped byte in one batch of a many-batch segment (issue 32, case 10): repair
/// rewrites the segment without that batch, every other event keeps its ID, the original is
/// moved aside into `damaged/` (not deleted), the lost IDs are reported as a range with their
/// count and recorded, `verify` is clean, and a second repair changes nothing.
#[test]
fn repair_salvages_the_intact_batches_of_a_damaged_segment() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let sc = schema("conn", 4);
    let batches: Vec<Batch> = (0..30).map(|i| batch(&sc, 20, 40, i)).collect();
    {
        let (mut store, _) = Store::open_writer(db, opts(1 << 20)).unwrap();
        for b in &batches {
            store.append(b.clone()).unwrap();
        }
        store.close().unwrap();
    }
    let files = common::cli::segment_files(db);
    assert_eq!(files.len(), 1, "{files:?}");
    let victim = files[0].clone();
    // Batch 12 (IDs 240..260): a bit of one of its rows.
    damage_row_bytes(&victim, batches[12].row(3));
    let damaged_bytes = fs::read(&victim).unwrap();
    let lines = repair(db, true);
    let salvage = lines
        .iter()
        .find(|l| l.contains("salvaged damaged segment"))
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(
        salvage.contains("events [240, 260) (20 events)") && salvage.contains("580 intact events"),
        "{lines:?}"
    );
    // The original is kept, byte for byte, in `damaged/`.
    let moved = db.join("damaged").join(victim.file_name().unwrap());
    assert_eq!(fs::read(&moved).unwrap(), damaged_bytes);
    assert!(!victim.exists());
    // Every other event, under its old ID.
    let mut want = expected(&batches);
    want.retain(|(id, _, _)| !(240..260).contains(id));
    let got = read_all(db);
    assert_eq!(got.len(), want.len());
    assert!(got == want, "the surviving events differ");
    let info = common::cli::info(db);
    assert_eq!(info["events"], 580, "{info}");
    assert_eq!(info["lost_events"], 20, "{info}");
    assert_eq!(info["erased_events"], 0, "{info}");
    let cat: serde_json::Value =
        serde_json::from_slice(&fs::read(db.join("catalog.json")).unwrap()).unwrap();
    assert_eq!(cat["next_id"], 600, "{cat}");
    assert_eq!(cat["lost"], serde_json::json!([[240, 260]]), "{cat}");
    let verify = ok(&run(&["verify", "--db", s(db)]), "verify");
    assert!(verify.starts_with("ok: 1 segment, 580 events"), "{verify}");
    // Idempotent: nothing to do, nothing changed.
    let before = listing(db);
    assert_eq!(repair(db, true), vec!["repair: nothing to do".to_string()]);
    assert_eq!(listing(db), before);
    // Putting the damaged original back does not bring the damage back: it is a duplicate.
    fs::copy(&moved, &victim).unwrap();
    let lines = repair(db, true);
    assert!(lines.iter().any(|l| l.contains("overlap")), "{lines:?}");
    assert_eq!(read_all(db), want);
    // And the archive takes imports after the lost IDs.
    let (mut store, report) = Store::open_writer(db, opts(1 << 20)).unwrap();
    assert!(report.warnings.is_empty(), "{report:?}");
    assert_eq!(store.append(batch(&sc, 5, 40, 99)).unwrap(), 600..605);
    store.close().unwrap();
    ok(&run(&["verify", "--db", s(db)]), "verify");
}

/// A segment whose metadata (not a batch) is damaged and that has no index file to read its
/// batches with (an archive written before them) is scanned for its batches (their own
/// checksums hold, their schema is the one of the other segments that decodes their rows):
/// it is salvaged whole, the original moved into `damaged/` unchanged, nothing is lost,
/// `verify` is clean and a second repair changes nothing. (With its index file it is read
/// with that: `repair_flips`.)
#[test]
fn repair_scans_a_segment_with_a_damaged_header_for_its_batches() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let batches = archive_of_segments(db, 20);
    let cat: serde_json::Value =
        serde_json::from_slice(&fs::read(db.join("catalog.json")).unwrap()).unwrap();
    let entry = &cat["segments"][1];
    let victim = db.join(entry["file"].as_str().unwrap());
    let [a, b] = [
        entry["intervals"][0][0].as_u64().unwrap(),
        entry["intervals"][0][1].as_u64().unwrap(),
    ];
    let mut bytes = fs::read(&victim).unwrap();
    let at = bytes.windows(9).position(|w| w == b"zeek.conn").unwrap();
    bytes[at + 5] ^= 0x01; // the schema's name
    fs::write(&victim, &bytes).unwrap();
    fs::remove_file(victim.with_extension("idx")).unwrap();
    let lines = repair(db, true);
    assert!(
        lines[0].starts_with(&format!(
            "repair: segment {} has no usable metadata",
            s(&victim)
        )) && lines[0].contains(&format!(
            "scanned it for batches whose checksums hold, found events [{a}, {b}) ({} events)",
            b - a
        )),
        "{lines:?}"
    );
    assert!(
        lines[1].contains("no batch is damaged, no event is lost"),
        "{lines:?}"
    );
    let moved = db.join("damaged").join(victim.file_name().unwrap());
    assert_eq!(fs::read(&moved).unwrap(), bytes);
    assert!(read_all(db) == expected(&batches), "events differ");
    assert_eq!(common::cli::info(db)["lost_events"], 0);
    ok(&run(&["verify", "--db", s(db)]), "verify");
    let before = listing(db);
    assert_eq!(repair(db, true), vec!["repair: nothing to do".to_string()]);
    assert_eq!(listing(db), before);
}

/// Flips a bit in the middle of `row` in the file at `path`.
fn damage_row_bytes(path: &Path, row: &[u8]) {
    let mut bytes = fs::read(path).unwrap();
    let at = bytes.windows(row.len()).position(|w| w == row).unwrap();
    bytes[at + row.len() / 2] ^= 0x20;
    fs::write(path, &bytes).unwrap();
}

/// `--repair` takes the writer lock: it refuses while a writer (an import) holds it, and
/// changes nothing.
#[test]
fn repair_refuses_while_an_import_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    archive_of_segments(db, 20);
    drop_catalog_entry(db, 1);
    let before = listing(db);
    let (store, _) = Store::open_writer(db, opts(16 << 10)).unwrap();
    let out = run(&["verify", "--repair", "--db", s(db)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("locked"),
        "{}",
        text(&out.stderr)
    );
    drop(store);
    assert_eq!(listing(db), before);
}
