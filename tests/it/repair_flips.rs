//! `weir verify --repair` keeps every readable event (issue 55, item 4): one flipped byte
//! anywhere in a random small archive (several segments of several batches, compressed or
//! not), and every event the library's read path returned before the repair (with its ID)
//! is still there after it, unchanged, once; the IDs missing are those the repair reports
//! lost, and the archive verifies clean.
//!
//! Archives with index files and without (a segment whose metadata is lost is then scanned
//! for its batches: only the damaged batch is lost, and batches whose schema no other
//! segment has). The flips hit the segment files, their index files and the catalog (the write-ahead log
//! is item 6's, tested with it). [`FLIPS`] flips by default (CI); `WEIR_REPAIR_FLIPS=N` runs
//! N, and the ignored test runs at least [`LONG_FLIPS`] (the long mode:
//! `cargo test --test it repair_flips:: -- --include-ignored`). The seed is printed;
//! `WEIR_REPAIR_SEED=seed` replays a run.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::rng::Rng;
use crate::common::store::{batch, copy_dir, read_all, schema};
use weir::unstable::store::{Archive, Store, StoreOptions, SyncPolicy};
use weir::unstable::value::Value;

/// Flips in the CI run (about 10 s in a debug build on a loaded 2-core machine).
const FLIPS: u64 = 100;

/// Flips of the long mode.
const LONG_FLIPS: u64 = 1_000;

/// Flips per generated archive.
const FLIPS_PER_ARCHIVE: u64 = 20;

/// An event: its schema's name and values.
type Event = (String, Vec<Value>);

/// Writes a random archive into `db`: batches of 1 to 40 rows of one or two schemas,
/// uncompressed or compressed (rows or columns), with sketches or not, until 2 to 4
/// segments are sealed, and a few more batches (sealed at close).
fn random_archive(db: &Path, rng: &mut Rng) {
    let compression = match rng.below(3) {
        0 => weir::unstable::segment::Compression::NONE,
        1 => weir::unstable::segment::Compression::new(weir::unstable::segment::Codec::Lz4),
        _ => weir::unstable::segment::Compression::default(),
    };
    let opts = StoreOptions {
        max_segment_size: weir::unstable::segment::MIN_SEGMENT_SIZE,
        sync: SyncPolicy::Batch,
        compression,
        sketches: rng.below(4) != 0,
    };
    let schemas = [schema("conn", 4), schema("dns", 2)];
    let (mut store, _) = Store::open_writer(db, opts).expect("open writer");
    let segments = 2 + rng.below(3) as usize;
    let mut more = 1 + rng.below(4);
    while more > 0 {
        let s = &schemas[rng.below(2) as usize];
        let rows = 1 + rng.below(40) as usize;
        let width = 4 + rng.below(60) as usize;
        let seed = rng.next() % 1_000_000;
        store.append(batch(s, rows, width, seed)).expect("append");
        if segment_files(db).len() >= segments {
            more -= 1;
        }
    }
    store.close().expect("close");
}

/// The sealed segment files of the archive in `db`, in name order.
fn segment_files(db: &Path) -> Vec<PathBuf> {
    let mut segs: Vec<PathBuf> = fs::read_dir(db.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    segs.sort();
    segs
}

/// Every event the library reads from the archive in `db`, by ID: each listed segment
/// opened as readers open it (from its index file when it has a usable one), each of its
/// batches that reads and decodes. Nothing when the archive cannot be opened.
fn readable(db: &Path) -> BTreeMap<u64, Event> {
    let mut out = BTreeMap::new();
    let Ok(archive) = Archive::open(db) else {
        return out;
    };
    for entry in &archive.catalog().segments {
        let Ok(seg) = archive.segment(entry) else {
            continue;
        };
        for i in 0..seg.len() {
            let Some(Ok(b)) = seg.batch(i) else {
                continue;
            };
            let Ok(rows) = b.to_batch().to_values() else {
                continue;
            };
            for (k, row) in rows.into_iter().enumerate() {
                out.insert(b.first_id() + k as u64, (b.schema().name.clone(), row));
            }
        }
    }
    out
}

/// The files a flip may hit, with their lengths: segments, index files, the catalog.
/// The names of the schemas of the segments of `db` other than `victim`.
fn schemas_beside(db: &Path, victim: &Path) -> Vec<String> {
    segment_files(db)
        .iter()
        .filter(|p| p.as_path() != victim)
        .flat_map(|p| {
            weir::unstable::segment::Segment::open(p)
                .unwrap()
                .schemas()
                .to_vec()
        })
        .map(|s| s.name.clone())
        .collect()
}

fn targets(db: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = vec![db.join("catalog.json")];
    let mut segs: Vec<PathBuf> = fs::read_dir(db.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segs.sort();
    out.extend(segs);
    out.into_iter()
        .map(|p| {
            let len = fs::metadata(&p).unwrap().len();
            (p, len)
        })
        .collect()
}

/// Runs `flips` random flips (see the module docs).
fn flip_and_repair(flips: u64) {
    let mut rng = Rng::from_env("WEIR_REPAIR_SEED");
    let seed = rng.0;
    let tmp = tempfile::tempdir().unwrap();
    let mut done = 0u64;
    // Per (index files, file kind): flips, flips after which events could not be read
    // before the repair, flips after which events are lost after it, events lost.
    let mut tallies: BTreeMap<(bool, String), [u64; 4]> = BTreeMap::new();
    for a in 0.. {
        if done >= flips {
            break;
        }
        let template = tmp.path().join(format!("a{a}"));
        random_archive(&template, &mut rng);
        // A quarter of the archives without index files (as written before them).
        let indexed = rng.below(4) != 0;
        if !indexed {
            for seg in segment_files(&template) {
                fs::remove_file(seg.with_extension("idx")).unwrap();
            }
        }
        let original: BTreeMap<u64, Event> = read_all(&template)
            .into_iter()
            .map(|(id, s, v)| (id, (s, v)))
            .collect();
        let files = targets(&template);
        for f in 0..FLIPS_PER_ARCHIVE.min(flips - done) {
            done += 1;
            let db = tmp.path().join(format!("a{a}-f{f}"));
            copy_dir(&template, &db);
            let (file, len) = &files[rng.below(files.len() as u64) as usize];
            // A third of the flips hit a file's first 256 bytes (a segment's size prefix,
            // root tables and schemas, an index's header).
            let at = match rng.below(3) {
                0 => rng.below((*len).min(256)),
                _ => rng.below(*len),
            };
            let xor = 1 + rng.below(255) as u8;
            let rel = file.strip_prefix(&template).unwrap();
            let what = format!(
                "seed {seed} (WEIR_REPAIR_SEED replays), archive {a} (index files: {indexed}), flip {f}: byte {at} of {} ^= {xor:#04x}",
                rel.display()
            );
            let path = db.join(rel);
            let mut bytes = fs::read(&path).unwrap();
            bytes[at as usize] ^= xor;
            fs::write(&path, &bytes).unwrap();

            let before = readable(&db);
            let report = weir::unstable::store::repair(&db)
                .unwrap_or_else(|e| panic!("{what}: repair failed: {e}"));
            let archive = Archive::open(&db).unwrap_or_else(|e| panic!("{what}: open: {e}"));
            let mut after: BTreeMap<u64, Event> = BTreeMap::new();
            for b in archive.scan() {
                let b = b.unwrap_or_else(|e| panic!("{what}: read after repair: {e}\n{report:?}"));
                let rows = b.to_batch().to_values().unwrap();
                for (k, row) in rows.into_iter().enumerate() {
                    let id = b.first_id() + k as u64;
                    let dup = after.insert(id, (b.schema().name.clone(), row));
                    assert!(dup.is_none(), "{what}: event {id} twice after repair");
                }
            }
            for (id, ev) in &after {
                assert!(
                    original.get(id) == Some(ev),
                    "{what}: event {id} after repair is not the original's\n{report:?}"
                );
            }
            for (id, ev) in &before {
                assert!(
                    after.get(id) == Some(ev),
                    "{what}: event {id} was readable before the repair, not after\n{report:?}"
                );
            }
            for id in original.keys().filter(|id| !after.contains_key(id)) {
                assert!(
                    report.lost.iter().any(|r| r.contains(id)),
                    "{what}: event {id} is gone but not reported lost\n{report:?}"
                );
            }
            for r in &report.lost {
                let held: Vec<u64> = after.range(r.clone()).map(|(id, _)| *id).collect();
                assert!(
                    held.is_empty(),
                    "{what}: events {held:?} are reported lost but are there\n{report:?}"
                );
            }
            // Beyond what was readable: a flip in the catalog (derived, rebuilt) or an index
            // file (a copy) loses nothing, and one in a segment with its index file at most
            // the batch it hit (at most 40 events, consecutive IDs).
            let gone: Vec<u64> = original
                .keys()
                .filter(|id| !after.contains_key(id))
                .copied()
                .collect();
            let is_seg = rel.extension().is_some_and(|e| e == "seg");
            if !is_seg {
                assert!(gone.is_empty(), "{what}: events {gone:?} lost\n{report:?}");
            } else if indexed {
                let one_batch = gone.len() <= 40 && gone.windows(2).all(|w| w[1] == w[0] + 1);
                assert!(one_batch, "{what}: events {gone:?} lost\n{report:?}");
            } else {
                // Without index files, a segment whose metadata is lost is scanned for its
                // batches: only the damaged batch is lost, and those whose schema no other
                // segment has (not certain, so not guessed).
                let others = schemas_beside(&template, &template.join(rel));
                let uncertain: Vec<u64> = gone
                    .iter()
                    .copied()
                    .filter(|id| !others.contains(&original[id].0))
                    .collect();
                let rest: Vec<u64> = gone
                    .iter()
                    .copied()
                    .filter(|id| !uncertain.contains(id))
                    .collect();
                let victim = weir::unstable::segment::Segment::open(template.join(rel)).unwrap();
                let one_batch = (0..victim.len()).any(|i| {
                    let ids = victim.batch_meta(i).unwrap().1;
                    rest.iter().all(|id| ids.contains(id))
                });
                assert!(
                    one_batch || rest.is_empty(),
                    "{what}: events {rest:?} lost, more than one batch\n{report:?}"
                );
            }
            let problems = archive.verify().problems;
            assert!(
                problems.is_empty(),
                "{what}: verify after repair: {problems:?}\n{report:?}"
            );
            let kind = rel
                .extension()
                .map_or(String::new(), |e| e.to_string_lossy().into_owned());
            let tally = tallies.entry((indexed, kind)).or_insert([0; 4]);
            tally[0] += 1;
            tally[1] += u64::from(before.len() < original.len());
            tally[2] += u64::from(after.len() < original.len());
            tally[3] += (original.len() - after.len()) as u64;
            drop(archive);
            fs::remove_dir_all(&db).unwrap();
        }
        fs::remove_dir_all(&template).unwrap();
    }
    eprintln!("{done} flips (seed {seed}):");
    for ((indexed, kind), [n, unreadable, lost, events]) in tallies {
        eprintln!(
            "  index files {indexed}, .{kind}: {n} flips, {unreadable} with events unreadable before repair, {lost} with events lost after it ({events} events)"
        );
    }
}

/// The CI run: [`FLIPS`] flips, or `WEIR_REPAIR_FLIPS`.
#[test]
fn repair_keeps_every_readable_event() {
    let flips = std::env::var("WEIR_REPAIR_FLIPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(FLIPS);
    flip_and_repair(flips);
}

/// The long mode: at least [`LONG_FLIPS`] flips.
#[test]
#[ignore = "the long mode: cargo test --test it repair_flips:: -- --include-ignored"]
fn repair_keeps_every_readable_event_long() {
    let flips = std::env::var("WEIR_REPAIR_FLIPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    flip_and_repair(flips.max(LONG_FLIPS));
}

/// An archive of several segments with index files, its events by ID, and its segments.
fn fixed_archive(db: &Path, seed: u64) -> (BTreeMap<u64, Event>, Vec<PathBuf>) {
    random_archive(db, &mut Rng(seed));
    let events = read_all(db)
        .into_iter()
        .map(|(id, s, v)| (id, (s, v)))
        .collect();
    (events, segment_files(db))
}

/// Repairs `db` and returns its report's actions and every event after it by ID.
fn repaired(db: &Path) -> (Vec<String>, BTreeMap<u64, Event>) {
    let report = weir::unstable::store::repair(db).unwrap();
    let events = read_all(db)
        .into_iter()
        .map(|(id, s, v)| (id, (s, v)))
        .collect();
    assert!(Archive::open(db).unwrap().verify().problems.is_empty());
    (report.actions, events)
}

/// Each of the first 64 bytes of a segment (size prefix, root offset, file identifier, root
/// tables) flipped in turn: the segment does not verify, but its index file holds its
/// metadata (and its size prefix and identifier are known), so readers read every event, and so does the archive after the repair, which
/// rewrites the segment from its batches (each checked against its own checksum) and moves
/// the original aside.
#[test]
fn a_segment_with_damaged_metadata_is_read_with_its_index_file() {
    let tmp = tempfile::tempdir().unwrap();
    let template = tmp.path().join("template");
    let (original, segs) = fixed_archive(&template, 55);
    let victim = segs[1].strip_prefix(&template).unwrap().to_path_buf();
    let mut broken = 0;
    for at in 0..64 {
        let db = tmp.path().join(format!("flip{at}"));
        copy_dir(&template, &db);
        let mut bytes = fs::read(db.join(&victim)).unwrap();
        bytes[at] ^= 0x5a;
        fs::write(db.join(&victim), &bytes).unwrap();
        let damaged = weir::unstable::segment::Segment::open_verified(db.join(&victim)).is_err();
        assert!(
            readable(&db) == original,
            "byte {at}: not every event reads before repair"
        );
        let (actions, after) = repaired(&db);
        assert!(
            after == original,
            "byte {at}: events differ after repair: {actions:?}"
        );
        if damaged {
            broken += 1;
            // The size prefix and file identifier are restored (which keeps the segment's
            // checkpoints); other damage is read around with the index file.
            let how = match at {
                0..4 | 8..12 => "with its size prefix and file identifier restored",
                _ => "with the metadata of its index file",
            };
            assert!(
                actions.iter().any(|a| a.contains(how)),
                "byte {at}: {actions:?}"
            );
            assert_eq!(
                fs::read(db.join("damaged").join(victim.file_name().unwrap())).unwrap(),
                bytes
            );
        }
        fs::remove_dir_all(&db).unwrap();
    }
    // Most of them are damage the verifier or the metadata checksum finds.
    assert!(
        broken >= 32,
        "only {broken} of 64 flips damaged the segment"
    );
}

/// Without index files: a flipped byte of a segment's size prefix or file identifier (the
/// bytes every segment of its size has alike) is restored in a copy, which verifies whole,
/// and the repair keeps every event; the damaged original goes to `damaged/` unchanged.
#[test]
fn a_damaged_size_prefix_or_identifier_is_restored_without_an_index() {
    let tmp = tempfile::tempdir().unwrap();
    let template = tmp.path().join("template");
    let (original, segs) = fixed_archive(&template, 56);
    for seg in &segs {
        fs::remove_file(seg.with_extension("idx")).unwrap();
    }
    let victim = segs[0].strip_prefix(&template).unwrap().to_path_buf();
    for at in [0, 1, 2, 3, 8, 9, 10, 11] {
        let db = tmp.path().join(format!("flip{at}"));
        copy_dir(&template, &db);
        let mut bytes = fs::read(db.join(&victim)).unwrap();
        bytes[at] ^= 0x01;
        fs::write(db.join(&victim), &bytes).unwrap();
        assert!(weir::unstable::segment::Segment::open(db.join(&victim)).is_err());
        let (actions, after) = repaired(&db);
        assert!(
            after == original,
            "byte {at}: events differ after repair: {actions:?}"
        );
        assert!(
            actions
                .iter()
                .any(|a| a.contains("with its size prefix and file identifier restored")),
            "byte {at}: {actions:?}"
        );
        let moved = db.join("damaged").join(victim.file_name().unwrap());
        assert_eq!(fs::read(moved).unwrap(), bytes, "byte {at}");
        assert!(
            !db.join("staging").exists(),
            "byte {at}: staging/ left behind"
        );
        fs::remove_dir_all(&db).unwrap();
    }
}

/// The case through the binary: the corpus's conn.log in a default archive (one
/// segment), one byte of the segment's size prefix or of a field name in its schema flipped:
/// `export` still returns every event, identical (read with the index file), and after
/// `weir verify --repair` it returns them all again, identical, where the old repair moved
/// the segment aside and left none; `verify` is then clean and the original is in
/// `damaged/`, unchanged.
#[test]
fn repair_of_a_default_archive_keeps_every_event_export_returned() {
    use crate::common::cli::{export_json_text, ok, run, s};
    let Some(corpus) = crate::common::corpus::dir() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let template = tmp.path().join("template");
    let conn = corpus.join("conn.log.gz");
    ok(
        &run(&["import", "--quiet", "--db", s(&template), s(&conn)]),
        "import",
    );
    let want = export_json_text(&template);
    let segs = segment_files(&template);
    assert_eq!(segs.len(), 1);
    let rel = segs[0].strip_prefix(&template).unwrap().to_path_buf();
    let bytes = fs::read(&segs[0]).unwrap();
    let field = bytes.windows(9).position(|w| w == b"id.orig_h").unwrap();
    for at in [0, field + 3] {
        let db = tmp.path().join(format!("flip{at}"));
        copy_dir(&template, &db);
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x04;
        fs::write(db.join(&rel), &damaged).unwrap();
        assert!(weir::unstable::segment::Segment::open_verified(db.join(&rel)).is_err());
        assert!(
            export_json_text(&db) == want,
            "byte {at}: export before repair"
        );
        let out = ok(&run(&["verify", "--repair", "--db", s(&db)]), "repair");
        assert!(
            export_json_text(&db) == want,
            "byte {at}: export after repair differs\n{out}"
        );
        ok(&run(&["verify", "--db", s(&db)]), "verify");
        let moved = db.join("damaged").join(rel.file_name().unwrap());
        assert_eq!(fs::read(moved).unwrap(), damaged, "byte {at}");
    }
}

/// A segment without its index file whose metadata is damaged beyond its size prefix and
/// file identifier (the root offset, the root table and its vtable, the schemas, the batch
/// vector: the front written at seal) is scanned for its batches: every event comes back
/// with its ID, and the report says so.
#[test]
fn a_segment_without_index_whose_metadata_is_damaged_is_scanned_for_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let template = tmp.path().join("template");
    let (original, segs) = fixed_archive(&template, 57);
    for seg in &segs {
        fs::remove_file(seg.with_extension("idx")).unwrap();
    }
    let victim = segs[1].strip_prefix(&template).unwrap().to_path_buf();
    let others = schemas_beside(&template, &segs[1]);
    let own = weir::unstable::segment::Segment::open(&segs[1]).unwrap();
    assert!(
        own.schemas().iter().all(|s| others.contains(&s.name)),
        "the fixture's other segments must hold the victim's schemas"
    );
    let len = fs::metadata(&segs[1]).unwrap().len() as usize;
    let front: Vec<usize> = (4..8).chain(12..160).step_by(3).collect();
    let mut scanned = 0;
    for at in front {
        let db = tmp.path().join(format!("flip{at}"));
        copy_dir(&template, &db);
        let mut bytes = fs::read(db.join(&victim)).unwrap();
        bytes[at] ^= 0x5a;
        fs::write(db.join(&victim), &bytes).unwrap();
        if weir::unstable::segment::Segment::open(db.join(&victim)).is_ok() {
            fs::remove_dir_all(&db).unwrap();
            continue;
        }
        // Every other flip with the catalog lost too: the segment is then one the catalog
        // (rebuilt) does not list.
        if at % 2 == 1 {
            fs::remove_file(db.join("catalog.json")).unwrap();
        }
        let (actions, after) = repaired(&db);
        assert!(
            after == original,
            "byte {at} of {len}: events differ after repair: {actions:?}"
        );
        assert!(
            actions.iter().any(|a| a.contains("scanned it for batches")),
            "byte {at}: {actions:?}"
        );
        let moved = db.join("damaged").join(victim.file_name().unwrap());
        assert_eq!(fs::read(moved).unwrap(), bytes, "byte {at}");
        scanned += 1;
        fs::remove_dir_all(&db).unwrap();
    }
    assert!(scanned >= 10, "only {scanned} flips damaged the metadata");
}

/// A batch found by the scan whose schema no other segment has is not guessed: its events
/// are reported lost (and recorded so), while the batches of known schemas are kept.
#[test]
fn a_scanned_batch_of_a_schema_no_other_segment_has_is_reported_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let [conn, http] = [schema("conn", 4), schema("http", 3)];
    let opts = || StoreOptions {
        sync: SyncPolicy::Batch,
        ..StoreOptions::default()
    };
    // Three segments; only the middle one has `http` events (IDs 20..30).
    for (i, parts) in [vec![&conn], vec![&conn, &http, &conn], vec![&conn]]
        .into_iter()
        .enumerate()
    {
        let (mut store, _) = Store::open_writer(&db, opts()).unwrap();
        for (j, s) in parts.into_iter().enumerate() {
            store.append(batch(s, 10, 16, (i * 10 + j) as u64)).unwrap();
        }
        store.close().unwrap();
    }
    let segs = segment_files(&db);
    assert_eq!(segs.len(), 3);
    let original: BTreeMap<u64, Event> = read_all(&db)
        .into_iter()
        .map(|(id, s, v)| (id, (s, v)))
        .collect();
    let victim = segs
        .iter()
        .find(|p| {
            weir::unstable::segment::Segment::open(p)
                .unwrap()
                .schemas()
                .len()
                == 2
        })
        .unwrap()
        .clone();
    for seg in &segs {
        fs::remove_file(seg.with_extension("idx")).unwrap();
    }
    let mut bytes = fs::read(&victim).unwrap();
    bytes[5] ^= 0x5a; // the root table's offset
    fs::write(&victim, &bytes).unwrap();
    assert!(weir::unstable::segment::Segment::open(&victim).is_err());
    let report = weir::unstable::store::repair(&db).unwrap();
    assert_eq!(report.lost, vec![20..30], "{report:?}");
    let after: BTreeMap<u64, Event> = read_all(&db)
        .into_iter()
        .map(|(id, s, v)| (id, (s, v)))
        .collect();
    let mut want = original.clone();
    want.retain(|id, _| !(20..30).contains(id));
    assert!(after == want, "{report:?}");
    assert!(Archive::open(&db).unwrap().verify().problems.is_empty());
}
