//! Segment index files (`segments/<uuid>.idx`): opening a segment from its index gives exactly
//! what verifying it gives; a damaged, truncated or foreign index is passed over (the segment
//! is verified instead) and reported by `weir verify`, and `--repair` rewrites it; indexes come
//! and go with their segments through imports, erase and compaction.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::cli::{export_json_text, ok, run, s, segment_files, text};
use weir::unstable::segment::{check_index, index_path, Segment};

/// An archive of the fixture logs (324 events of conn, dns, http and every type), imported with
/// `extra` flags into many small segments.
fn archive(extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let (a, b) = (
        common::fixture("archive-v1.log"),
        common::fixture("all_types.log"),
    );
    let mut args = vec![
        "import",
        "--db",
        s(&db),
        "--max-segment-size",
        "16KiB",
        "--batch-size",
        "50",
    ];
    args.extend_from_slice(extra);
    args.extend([s(&a), s(&b)]);
    ok(&run(&args), "weir import");
    (tmp, db)
}

fn index_files(db: &Path) -> Vec<PathBuf> {
    let mut v: Vec<_> = fs::read_dir(db.join("segments"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "idx"))
        .collect();
    v.sort();
    v
}

/// Every observable part of two opens of one segment agrees, batch by batch.
fn assert_same(a: &Segment, b: &Segment) {
    assert_eq!(a.version(), b.version());
    assert_eq!(a.uuid(), b.uuid());
    assert_eq!(a.intervals(), b.intervals());
    assert_eq!(a.events(), b.events());
    assert_eq!(a.schemas(), b.schemas());
    assert_eq!(a.len(), b.len());
    for i in 0..a.len() {
        let (sa, ia, ta) = a.batch_meta(i).unwrap();
        let (sb, ib, tb) = b.batch_meta(i).unwrap();
        assert_eq!((sa, ia, ta), (sb, ib, tb), "batch {i}");
        assert_eq!(a.batch_storage(i), b.batch_storage(i), "batch {i}");
        assert_eq!(a.batch_layout(i), b.batch_layout(i), "batch {i}");
        assert_eq!(a.sketch(i), b.sketch(i), "batch {i}");
        let rows = |s: &Segment| -> Vec<Vec<u8>> {
            let b = s.batch(i).unwrap().unwrap();
            b.rows().map(<[u8]>::to_vec).collect()
        };
        let (ra, rb) = (rows(a), rows(b));
        assert_eq!(ra, rb, "batch {i}");
    }
}

#[test]
fn an_index_opens_its_segment_as_verifying_does_for_every_codec() {
    for extra in [
        &[][..],
        &["--compression", "none"],
        &["--compression", "lz4"],
        &["--no-sketches"],
        &["--compression", "none", "--no-sketches"],
    ] {
        let (_tmp, db) = archive(extra);
        let segs = segment_files(&db);
        assert!(segs.len() >= 3, "{extra:?}: {segs:?}");
        // One index per segment, nothing else.
        let want: Vec<PathBuf> = segs.iter().map(|p| index_path(p)).collect();
        assert_eq!(index_files(&db), want, "{extra:?}");
        let mut sketched = 0;
        for p in &segs {
            let fast = Segment::open(p).unwrap();
            let verified = Segment::open_verified(p).unwrap();
            assert!(fast.opened_from_index(), "{}", p.display());
            assert!(!verified.opened_from_index());
            assert_same(&fast, &verified);
            assert_eq!(check_index(&verified), Ok(true));
            sketched += (0..fast.len())
                .filter(|&i| fast.sketch(i).is_some())
                .count();
        }
        assert_eq!(sketched > 0, !extra.contains(&"--no-sketches"), "{extra:?}");
        ok(&run(&["verify", "--db", s(&db)]), "weir verify");
        // `inspect` reads the same from the index as from the verified segment.
        let seg_args: Vec<&str> = segs.iter().map(|p| s(p)).collect();
        let with = ok(&run(&[&["inspect"][..], &seg_args].concat()), "inspect");
        for i in &want {
            fs::remove_file(i).unwrap();
        }
        let without = ok(&run(&[&["inspect"][..], &seg_args].concat()), "inspect");
        assert_eq!(with, without, "{extra:?}");
    }
}

#[test]
fn a_damaged_or_foreign_index_is_passed_over_reported_and_repaired() {
    let (tmp, db) = archive(&[]);
    let events = export_json_text(&db);
    let count = |expr: &str| ok(&run(&["count", "--db", s(&db), expr]), "weir count");
    let queries = [
        "#timestamp >= 2009-11-18T10:00:00Z",
        "orig_bytes > 100",
        "#type == \"zeek.dns\"",
    ];
    let answers: Vec<String> = queries.iter().map(|q| count(q)).collect();
    let segs = segment_files(&db);
    let (a, b) = (&segs[0], &segs[1]);
    let good_a = fs::read(index_path(a)).unwrap();

    // Damage: every single flipped byte position class (magic, header, a batch, the checksum).
    let mut damaged = good_a.clone();
    let mid = damaged.len() / 2;
    damaged[mid] ^= 0x40;
    // A foreign index: that of another segment (another length, another uuid).
    let foreign = fs::read(index_path(b)).unwrap();
    // A truncated one, and one whose checksum was recomputed over a moved data range.
    let truncated = good_a[..good_a.len() - 9].to_vec();
    for (what, bytes) in [
        ("damaged", &damaged),
        ("foreign", &foreign),
        ("truncated", &truncated),
    ] {
        fs::write(index_path(a), bytes).unwrap();
        let seg = Segment::open(a).unwrap();
        assert!(!seg.opened_from_index(), "{what}: the bad index was used");
        assert_same(&seg, &Segment::open_verified(a).unwrap());
        assert_eq!(export_json_text(&db), events, "{what}");
        let got: Vec<String> = queries.iter().map(|q| count(q)).collect();
        assert_eq!(got, answers, "{what}");
        let v = run(&["verify", "--db", s(&db)]);
        assert_eq!(v.status.code(), Some(1), "{what}: {}", text(&v.stdout));
        let out = text(&v.stdout) + &text(&v.stderr);
        assert!(out.contains(s(a)) && out.contains("index"), "{what}: {out}");
        let r = ok(&run(&["verify", "--db", s(&db), "--repair"]), "repair");
        assert!(r.contains("rewrote index"), "{what}: {r}");
        assert_eq!(fs::read(index_path(a)).unwrap(), good_a, "{what}");
        ok(&run(&["verify", "--db", s(&db)]), "weir verify");
        assert!(Segment::open(a).unwrap().opened_from_index());
    }
    // A missing index is no problem at all, and `--repair` writes it (so an archive from
    // before index files gets them).
    fs::remove_file(index_path(a)).unwrap();
    ok(&run(&["verify", "--db", s(&db)]), "weir verify");
    assert_eq!(export_json_text(&db), events);
    let r = ok(&run(&["verify", "--db", s(&db), "--repair"]), "repair");
    assert!(
        r.contains("wrote index") && r.contains("it had none"),
        "{r}"
    );
    assert_eq!(fs::read(index_path(a)).unwrap(), good_a);
    let r = ok(&run(&["verify", "--db", s(&db), "--repair"]), "repair");
    assert!(!r.contains("index"), "{r}");
    drop(tmp);
}

#[test]
fn indexes_come_and_go_with_their_segments() {
    let (_tmp, db) = archive(&[]);
    let events = export_json_text(&db);
    let paired = |db: &Path| {
        let want: Vec<PathBuf> = segment_files(db).iter().map(|p| index_path(p)).collect();
        assert_eq!(index_files(db), want);
    };
    // An orphan index (its segment deleted by hand) is removed by the next writer; it never
    // names a segment that is not there.
    let orphan = db.join("segments/00000000-0000-4000-8000-000000000000.idx");
    fs::copy(index_path(&segment_files(&db)[0]), &orphan).unwrap();
    ok(&run(&["compact", "--db", s(&db)]), "weir compact");
    assert!(!orphan.exists());
    paired(&db);
    assert_eq!(export_json_text(&db), events);
    // Erasing whole segments and rewriting a partly covered one.
    // IDs 0 to 130, both included.
    ok(
        &run(&["erase", "--db", s(&db), "--ids", "0-130"]),
        "weir erase",
    );
    paired(&db);
    for p in segment_files(&db) {
        assert!(Segment::open(&p).unwrap().opened_from_index());
    }
    let left = common::cli::export_json(&db);
    assert_eq!(left.len(), 324 - 131);
    ok(&run(&["verify", "--db", s(&db)]), "weir verify");
}

/// Every byte of an index damaged in turn (all bits, then the lowest): the index is never
/// used (its checksum), and the segment opens and reads exactly as verified.
#[test]
fn every_damaged_index_byte_is_detected() {
    let (_tmp, db) = archive(&[]);
    let seg = segment_files(&db)[0].clone();
    let want = Segment::open_verified(&seg).unwrap();
    let idx = index_path(&seg);
    let original = fs::read(&idx).unwrap();
    assert!(original.len() > 100, "{}", original.len());
    for i in 0..original.len() {
        for mask in [0xff, 0x01] {
            let mut bytes = original.clone();
            bytes[i] ^= mask;
            fs::write(&idx, &bytes).unwrap();
            let got = Segment::open(&seg).unwrap();
            assert!(
                !got.opened_from_index(),
                "byte {i} ^ {mask:#x} went unnoticed"
            );
            assert_same(&got, &want);
        }
    }
    fs::write(&idx, &original).unwrap();
    assert!(Segment::open(&seg).unwrap().opened_from_index());
}

/// A large segment (sealed by collapsing its file's unused start where the file system can,
/// padded to a block): the index the writer encodes is exactly the verified segment's.
#[test]
fn a_large_segment_gets_the_index_of_its_verified_self() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let logs: Vec<PathBuf> = ["conn.log.gz", "dns.log.gz", "http.log.gz"]
        .iter()
        .map(|n| dir.join(n))
        .collect();
    for codec in ["none", "zstd"] {
        let _ = fs::remove_dir_all(&db);
        let mut args = vec!["import", "--db", s(&db), "--compression", codec];
        args.extend(logs.iter().map(|p| s(p)));
        ok(&run(&args), "weir import");
        let segs = segment_files(&db);
        assert_eq!(segs.len(), 1);
        let seg = Segment::open_verified(&segs[0]).unwrap();
        assert!(seg.byte_size() > 200_000, "{}", seg.byte_size());
        assert_eq!(check_index(&seg), Ok(true), "{codec}");
        assert!(Segment::open(&segs[0]).unwrap().opened_from_index());
    }
}

/// `weir inspect DB/segments/*` describes each segment once (its index is passed over); an
/// index file alone is refused, naming its segment.
#[test]
fn inspect_takes_a_glob_of_segments_and_indexes() {
    let (_tmp, db) = archive(&[]);
    let mut all: Vec<PathBuf> = fs::read_dir(db.join("segments"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    all.sort();
    let segs = segment_files(&db);
    assert_eq!(all.len(), 2 * segs.len());
    let args: Vec<&str> = all.iter().map(|p| s(p)).collect();
    let out = ok(&run(&[&["inspect"][..], &args].concat()), "inspect *");
    assert_eq!(out.matches("\nsegment ").count() + 1, segs.len(), "{out}");
    let idx = index_path(&segs[0]);
    let alone = run(&["inspect", s(&idx)]);
    assert_eq!(alone.status.code(), Some(1));
    let err = text(&alone.stderr);
    assert!(
        err.contains("index file, not a segment") && err.contains(s(&segs[0])),
        "{err}"
    );
}
