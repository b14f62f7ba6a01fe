//! The write-ahead log damage matrix: a log flipped in a middle record or in its header, cut
//! in a record, emptied or deleted, against `count`, `export`, `info`, the server's count, `verify`,
//! `verify --repair` and the next import. Sealed events are always readable; a repair exits 0
//! with every intact record's events under their IDs; the next import succeeds and leaves no
//! active segment file behind; nothing acknowledged is deleted on the way.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::cli::{run, s, text};
use common::store::{batch, expected, read_all, schema};
use weir::unstable::batch::Batch;
use weir::unstable::store::{Archive, Store, StoreError, StoreOptions};
use weir::unstable::wal::SyncPolicy;

/// Batches sealed before the crash, and records in the log at the crash.
const SEALED: usize = 3;
const LOGGED: usize = 4;
/// Events per batch.
const ROWS: usize = 20;

fn opts() -> StoreOptions {
    StoreOptions {
        max_segment_size: 1 << 20,
        sync: SyncPolicy::Batch,
        ..StoreOptions::default()
    }
}

fn batches() -> Vec<Batch> {
    let s = [schema("conn", 3), schema("dns", 1)];
    (0..SEALED + LOGGED)
        .map(|i| batch(&s[i % 2], ROWS, 12, i as u64))
        .collect()
}

/// An archive with `SEALED` batches in a sealed segment and `LOGGED` in the log of a writer
/// that crashed (dropped without closing): their rows in its active segment file.
fn archive(dir: &Path) -> Vec<Batch> {
    let all = batches();
    let (mut store, _) = Store::open_writer(dir, opts()).unwrap();
    for b in &all[..SEALED] {
        store.append(b.clone()).unwrap();
    }
    store.close().unwrap();
    let (mut store, _) = Store::open_writer(dir, opts()).unwrap();
    for b in &all[SEALED..] {
        store.append(b.clone()).unwrap();
    }
    drop(store);
    all
}

/// The offsets of the log's records (after its 20-byte header).
fn record_offsets(wal: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 20;
    while at + 8 <= wal.len() {
        out.push(at);
        at += 8 + u32::from_le_bytes(wal[at..at + 4].try_into().unwrap()) as usize;
    }
    out
}

/// Active segment files (`segments/.*.seg.tmp`).
fn active_files(db: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(db.join("segments"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".seg.tmp"))
        .collect();
    v.sort();
    v
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Damage {
    /// A byte of the second record's payload flipped.
    Flip,
    /// A byte of the header flipped.
    FlipHeader,
    /// The log cut in the middle of its third record.
    Truncate,
    /// The log emptied (0 bytes).
    Empty,
    /// The log deleted.
    Delete,
}

/// What each damage leaves readable, in batches of `batches()`: before a repair, and after.
struct Outcome {
    readable_before: usize,
    kept_after: Vec<usize>,
}

fn outcome(d: Damage) -> Outcome {
    let all: Vec<usize> = (0..SEALED + LOGGED).collect();
    match d {
        // The records after the damaged second one are kept, and its own batch is
        // recovered from its rows in the active segment file.
        Damage::Flip => Outcome {
            readable_before: SEALED + 1,
            kept_after: all.clone(),
        },
        // Every record is intact: read without the header.
        Damage::FlipHeader => Outcome {
            readable_before: SEALED,
            kept_after: all,
        },
        Damage::Truncate => Outcome {
            readable_before: SEALED + 2,
            kept_after: all[..SEALED + 2].to_vec(),
        },
        // Recovered from the active segment file: its batches carry their checksums, and
        // each schema is the one of the sealed segments that decodes its rows.
        Damage::Empty | Damage::Delete => Outcome {
            readable_before: SEALED,
            kept_after: all,
        },
    }
}

fn damage(db: &Path, d: Damage) {
    let wal = db.join("wal");
    let mut bytes = fs::read(&wal).unwrap();
    let recs = record_offsets(&bytes);
    assert_eq!(recs.len(), LOGGED, "{recs:?}");
    match d {
        Damage::Flip => {
            bytes[recs[1] + 8 + 30] ^= 0x40;
            fs::write(&wal, &bytes).unwrap();
        }
        Damage::FlipHeader => {
            bytes[10] ^= 0x01;
            fs::write(&wal, &bytes).unwrap();
        }
        Damage::Truncate => {
            bytes.truncate(recs[2] + 20);
            fs::write(&wal, &bytes).unwrap();
        }
        Damage::Empty => fs::write(&wal, b"").unwrap(),
        Damage::Delete => fs::remove_file(&wal).unwrap(),
    }
}

/// The events of the batches `which` of `all`, with their IDs.
fn events_of(
    all: &[Batch],
    which: &[usize],
) -> Vec<(u64, String, Vec<weir::unstable::value::Value>)> {
    let want = expected(all);
    want.into_iter()
        .filter(|(id, ..)| which.contains(&((*id as usize) / ROWS)))
        .collect()
}

/// One row of the matrix: every reader, verify, a refused or allowed import before the
/// repair, the repair, and the next import.
fn matrix_row(d: Damage) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let all = archive(db);
    let actives = active_files(db);
    assert_eq!(actives.len(), 1, "{actives:?}");
    damage(db, d);
    let original = fs::read(db.join("wal")).ok();
    let o = outcome(d);
    let readable = (o.readable_before * ROWS) as u64;

    // count: the sealed events (and the log's intact records before the damage), exit 0,
    // a warning naming the log unless it is only torn.
    let out = run(&["count", "--db", s(db)]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{d:?} count: {err}");
    assert_eq!(
        text(&out.stdout).trim(),
        readable.to_string(),
        "{d:?} count"
    );
    if d != Damage::Truncate {
        assert!(
            err.contains("warning") && err.contains("wal"),
            "{d:?}: {err}"
        );
        assert!(err.contains("verify --repair"), "{d:?}: {err}");
    }
    if d == Damage::Flip {
        let offset = record_offsets(original.as_deref().unwrap())[1];
        assert!(err.contains(&format!("offset {offset}")), "{d:?}: {err}");
    }
    // export: the same events.
    let out = run(&["export", "--db", s(db), "--to", "json"]);
    assert!(out.status.success(), "{d:?} export: {}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).lines().count() as u64,
        readable,
        "{d:?} export"
    );
    // info: exit 0, the events readable, the log's problem in its JSON.
    let out = run(&["info", "--db", s(db), "--json"]);
    assert!(out.status.success(), "{d:?} info: {}", text(&out.stderr));
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["events"], readable, "{d:?} info");
    if d != Damage::Truncate {
        assert!(info["wal"]["problem"].is_string(), "{d:?} info: {info}");
        assert!(text(&out.stderr).contains("warning"), "{d:?} info");
    }
    // The server's count (the function `POST /api/v1/count` runs on its archive).
    let archive = Archive::open(db).unwrap();
    let n = weir::unstable::serve::query::count(&archive, "").unwrap();
    assert_eq!(n, readable, "{d:?} serve count");
    let n = weir::unstable::serve::query::count(&archive, "#type == \"zeek.conn\" | head 1000")
        .unwrap();
    assert!(n > 0, "{d:?} serve chain count");
    assert!(
        d == Damage::Truncate || !archive.wal_warnings().is_empty(),
        "{d:?}: no warning"
    );
    drop(archive);

    // verify: a problem naming the log (or the orphaned active segment file), exit 1; a
    // torn tail is a warning only.
    let out = run(&["verify", "--db", s(db)]);
    let said = text(&out.stdout) + &text(&out.stderr);
    if d == Damage::Truncate {
        assert!(out.status.success(), "{d:?} verify: {said}");
        assert!(said.contains("torn"), "{d:?} verify: {said}");
    } else {
        assert_eq!(out.status.code(), Some(1), "{d:?} verify: {said}");
        match d {
            Damage::Delete => assert!(said.contains(".seg.tmp"), "{said}"),
            _ => assert!(said.contains("wal"), "{said}"),
        }
        if d == Damage::Flip {
            let offset = record_offsets(original.as_deref().unwrap())[1];
            assert!(said.contains(&format!("offset {offset}")), "{said}");
        }
    }

    // An import before the repair: refused while the log is damaged (naming the repair), and
    // leaving no active segment file of its own; the original one is kept.
    if d != Damage::Truncate {
        for _ in 0..2 {
            let err = Store::open_writer(db, opts()).unwrap_err();
            assert!(err.to_string().contains("verify --repair"), "{d:?}: {err}");
            if d == Damage::Delete {
                assert!(
                    matches!(err, StoreError::OrphanedActiveSegment { .. }),
                    "{err}"
                );
            }
            assert_eq!(active_files(db), actives, "{d:?}: active segment files");
        }
    }

    // The repair: exit 0, the log's original bytes in damaged/, every intact record's events
    // under their IDs, the lost ones reported.
    let out = run(&["verify", "--repair", "--db", s(db)]);
    let said = text(&out.stdout) + &text(&out.stderr);
    assert!(out.status.success(), "{d:?} repair: {said}");
    assert!(said.contains("ok:"), "{d:?} repair: {said}");
    if matches!(d, Damage::Flip | Damage::FlipHeader | Damage::Empty) {
        assert_eq!(
            fs::read(db.join("damaged/wal")).ok(),
            original,
            "{d:?}: the damaged log's bytes are kept"
        );
    }
    if d == Damage::Flip {
        let first = (SEALED + 1) * ROWS;
        assert!(
            said.contains(&format!("recovered events [{first}, {})", first + ROWS)),
            "{d:?} repair names the IDs of the damaged record: {said}"
        );
    }
    if matches!(d, Damage::Empty | Damage::Delete) {
        // Never deleted: the active segment file is moved aside.
        let name = actives[0].file_name().unwrap();
        assert!(db.join("damaged").join(name).exists(), "{d:?}: {said}");
    }
    assert_eq!(
        read_all(db),
        events_of(&all, &o.kept_after),
        "{d:?}: events after the repair"
    );
    let out = run(&["verify", "--db", s(db)]);
    assert!(
        out.status.success(),
        "{d:?} verify after repair: {}",
        text(&out.stdout) + &text(&out.stderr)
    );

    // The next import: succeeds, and leaves no active segment file.
    let more = batch(&schema("http", 2), ROWS, 8, 99);
    let (mut store, _) = Store::open_writer(db, opts()).unwrap();
    let ids = store.append(more.clone()).unwrap();
    store.close().unwrap();
    assert!(active_files(db).is_empty(), "{d:?}: {:?}", active_files(db));
    let got = read_all(db);
    let mut want = events_of(&all, &o.kept_after);
    want.extend(
        more.to_values()
            .unwrap()
            .into_iter()
            .enumerate()
            .map(|(i, v)| (ids.start + i as u64, "zeek.http".to_string(), v)),
    );
    assert_eq!(got, want, "{d:?}: events after the next import");
    assert!(Archive::open(db).unwrap().verify().is_ok(), "{d:?}");
    // A second repair finds nothing to do.
    let out = run(&["verify", "--repair", "--db", s(db)]);
    assert!(
        text(&out.stdout).contains("nothing to do"),
        "{d:?}: {}",
        text(&out.stdout)
    );
}

#[test]
fn flipped_record() {
    matrix_row(Damage::Flip);
}

#[test]
fn flipped_header() {
    matrix_row(Damage::FlipHeader);
}

#[test]
fn truncated() {
    matrix_row(Damage::Truncate);
}

#[test]
fn empty() {
    matrix_row(Damage::Empty);
}

#[test]
fn deleted() {
    matrix_row(Damage::Delete);
}

/// A deleted log beside batches stored as they are, without sketches (a chunk whose table
/// leaves its trailing fields out): recovered the same.
#[test]
fn deleted_with_uncompressed_batches() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let plain = StoreOptions {
        compression: weir::unstable::segment::Compression::NONE,
        sketches: false,
        ..opts()
    };
    let all = batches();
    let (mut store, _) = Store::open_writer(db, plain).unwrap();
    for b in &all[..SEALED] {
        store.append(b.clone()).unwrap();
    }
    store.close().unwrap();
    let (mut store, _) = Store::open_writer(db, plain).unwrap();
    for b in &all[SEALED..] {
        store.append(b.clone()).unwrap();
    }
    drop(store);
    fs::remove_file(db.join("wal")).unwrap();
    let report = weir::unstable::store::repair(db).unwrap();
    assert!(report.lost.is_empty(), "{report:?}");
    assert_eq!(read_all(db), expected(&all));
}

/// A schema is taken for a batch of an active segment file without its log only when it is
/// the one schema of the sealed segments that decodes its rows: two schemas alike but for
/// their name leave the batch unrecovered, its IDs recorded as lost (never given to new
/// events), and the file kept in damaged/.
#[test]
fn deleted_with_ambiguous_schemas_recovers_nothing_it_cannot_be_sure_of() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let (a, b) = (schema("a", 2), schema("b", 2));
    let sealed = [batch(&a, ROWS, 8, 1), batch(&b, ROWS, 8, 2)];
    let logged = batch(&a, ROWS, 8, 3);
    let (mut store, _) = Store::open_writer(db, opts()).unwrap();
    for x in &sealed {
        store.append(x.clone()).unwrap();
    }
    store.close().unwrap();
    let (mut store, _) = Store::open_writer(db, opts()).unwrap();
    store.append(logged).unwrap();
    drop(store);
    let active = active_files(db);
    fs::remove_file(db.join("wal")).unwrap();
    let report = weir::unstable::store::repair(db).unwrap();
    let first = (2 * ROWS) as u64;
    assert_eq!(report.lost, vec![first..first + ROWS as u64], "{report:?}");
    assert_eq!(read_all(db), expected(&sealed));
    assert!(db
        .join("damaged")
        .join(active[0].file_name().unwrap())
        .exists());
    let (mut store, _) = Store::open_writer(db, opts()).unwrap();
    let ids = store.append(batch(&a, 1, 8, 4)).unwrap();
    store.close().unwrap();
    assert_eq!(ids.start, first + ROWS as u64);
}

/// Batches recovered from an active segment file come without the positions of the files
/// they were read from (those were in the lost records): an archive that tracks files has
/// its checkpoints marked lost, so that a followed import asks where to start rather than
/// import those lines again.
#[test]
fn recovered_events_mark_the_checkpoints_lost() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let all = batches();
    let (mut store, _) = Store::open_writer(db, opts()).unwrap();
    store.append(marked(all[0].clone(), 100)).unwrap();
    store.close().unwrap();
    assert!(!Archive::open(db).unwrap().catalog().checkpoints.is_empty());
    let (mut store, _) = Store::open_writer(db, opts()).unwrap();
    store.append(marked(all[2].clone(), 200)).unwrap();
    drop(store);
    fs::remove_file(db.join("wal")).unwrap();
    let report = weir::unstable::store::repair(db).unwrap();
    assert!(
        report.actions.iter().any(|a| a.contains("--from-start")),
        "{report:?}"
    );
    let archive = Archive::open(db).unwrap();
    assert!(archive.catalog().checkpoints_lost);
    assert_eq!(read_all(db), expected(&[all[0].clone(), all[2].clone()]));
}

/// A batch with a mark saying its rows end at `offset` of one followed file (as a resumed
/// or followed import's batches do).
fn marked(mut b: Batch, offset: u64) -> Batch {
    use weir::unstable::checkpoint::{FileCheckpoint, FileId, Mark, Position};
    let rows = b.len();
    b.push_mark(Mark {
        row_start: 0,
        row_end: rows,
        start: None,
        end: FileCheckpoint {
            id: FileId {
                dev: 1,
                ino: 2,
                fp_len: 10,
                fp_crc: 3,
            },
            path: "/logs/conn.log".into(),
            pos: Position { offset, skip: 0 },
            done: false,
            raw: 0,
            header: String::new(),
            sum: None,
        },
    });
    b
}

/// The position the archive's catalog records for the followed file of [`marked`].
fn checkpoint_offset(db: &Path) -> Vec<u64> {
    let cat = Archive::open(db).unwrap().catalog().clone();
    cat.checkpoints.iter().map(|c| c.pos.offset).collect()
}

/// Damage at the log's *last* record is a torn write, and its rows are not recovered even
/// though they lie intact in the active segment file (the writer writes a batch's rows there
/// first, then its record, then acknowledges it: rows without a complete record were never
/// acknowledged, and the checkpoint that moves past them is in that record). The retry of
/// the import, resuming from the last intact record's checkpoint, reads those lines again:
/// had the repair recovered them, every one of them would be in the archive twice.
#[test]
fn a_torn_last_record_is_not_recovered_so_a_retry_imports_it_once() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let all = batches();
    let (mut store, _) = Store::open_writer(&db, opts()).unwrap();
    store.append(marked(all[0].clone(), 100)).unwrap();
    store.close().unwrap();
    let (mut store, _) = Store::open_writer(&db, opts()).unwrap();
    store.append(marked(all[1].clone(), 200)).unwrap();
    store.append(marked(all[2].clone(), 300)).unwrap();
    // A crash while the last record was being written: its rows are in the active segment
    // file, the record is cut.
    drop(store);
    let wal = db.join("wal");
    let mut bytes = fs::read(&wal).unwrap();
    let recs = record_offsets(&bytes);
    assert_eq!(recs.len(), 2, "{recs:?}");
    bytes.truncate(recs[1] + 20);
    fs::write(&wal, &bytes).unwrap();

    // The torn record's rows are there, with their checksums: without a log, the orphan
    // recovery (which cannot tell which rows were acknowledged) finds them (batch 1's
    // schema is in no sealed segment, so it is not certain there).
    let orphan = tmp.path().join("orphan");
    common::store::copy_dir(&db, &orphan);
    fs::remove_file(orphan.join("wal")).unwrap();
    weir::unstable::store::repair(&orphan).unwrap();
    assert_eq!(read_all(&orphan), events_of(&all, &[0, 2]));

    // With the log, the torn record is an unacknowledged write: readers and the repair
    // leave it out, and the repair changes nothing.
    assert_eq!(read_all(&db), expected(&all[..2]));
    let report = weir::unstable::store::repair(&db).unwrap();
    assert!(report.lost.is_empty(), "{report:?}");
    assert_eq!(read_all(&db), expected(&all[..2]));
    // The writer cuts the torn record; the checkpoint is the last intact record's.
    let (store, _) = Store::open_writer(&db, opts()).unwrap();
    store.close().unwrap();
    assert_eq!(checkpoint_offset(&db), vec![200]);
    // The retry resumes at offset 200: the torn record's lines come again, once.
    let (mut store, _) = Store::open_writer(&db, opts()).unwrap();
    store.append(marked(all[2].clone(), 300)).unwrap();
    store.close().unwrap();
    assert_eq!(read_all(&db), expected(&all[..3]));
    assert_eq!(checkpoint_offset(&db), vec![300]);
}

/// Random single-bit flips anywhere in the log but its last record (damage there is a torn
/// tail by the log's rules: `crate::wal`'s module docs): after `verify --repair` every
/// acknowledged event is there under its ID (the intact records are kept, a damaged one's
/// batch is recovered from its rows in the active segment file), `verify` is clean, and the
/// next import succeeds and leaves no active segment file. `WEIR_WAL_FLIPS=N` runs N flips
/// (default 16), `WEIR_WAL_FLIP_SEED` replays a run.
#[test]
fn random_flips_lose_no_acknowledged_event() {
    let flips: u64 = std::env::var("WEIR_WAL_FLIPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let mut rng = common::rng::Rng::from_env("WEIR_WAL_FLIP_SEED");
    for _ in 0..flips {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path();
        let all = archive(db);
        let wal = db.join("wal");
        let mut bytes = fs::read(&wal).unwrap();
        let last = record_offsets(&bytes)[LOGGED - 1];
        let at = rng.below(last as u64) as usize;
        let bit = rng.below(8);
        bytes[at] ^= 1 << bit;
        fs::write(&wal, &bytes).unwrap();
        let what = format!("bit {bit} of byte {at} (last record at {last})");
        // Readers never fail; the sealed events are always there.
        assert!(read_all(db).len() >= SEALED * ROWS, "{what}");
        let report = weir::unstable::store::repair(db).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(report.lost.is_empty(), "{what}: {report:?}");
        assert_eq!(read_all(db), expected(&all), "{what}: {report:?}");
        assert!(
            Archive::open(db).unwrap().verify().is_ok(),
            "{what}: {report:?}"
        );
        let (mut store, _) = Store::open_writer(db, opts()).unwrap();
        store.append(batch(&schema("http", 2), 3, 8, 7)).unwrap();
        store.close().unwrap();
        assert!(active_files(db).is_empty(), "{what}");
    }
}
