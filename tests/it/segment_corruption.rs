//! Damaged segments: a clear error naming the file and the reason, never a panic, and the
//! rest of the archive stays readable.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::store::{batch, expected, schema};
use proptest::prelude::*;
use weir::unstable::segment::{Compression, Segment, SegmentError};
use weir::unstable::store::{Archive, Store, StoreOptions};
use weir::unstable::wal::SyncPolicy;

/// An archive of several small segments; returns its segment files in ID order.
fn archive(dir: &Path, max: u64, n: usize) -> (Vec<PathBuf>, Vec<weir::unstable::batch::Batch>) {
    archive_with(dir, max, n, Compression::default())
}

/// [`archive`] with batches compressed with `compression`.
fn archive_with(
    dir: &Path,
    max: u64,
    n: usize,
    compression: Compression,
) -> (Vec<PathBuf>, Vec<weir::unstable::batch::Batch>) {
    let s = schema("conn", 4);
    let batches: Vec<_> = (0..n).map(|i| batch(&s, 3 + i % 5, 12, i as u64)).collect();
    let (mut store, _) = Store::open_writer(
        dir,
        StoreOptions {
            max_segment_size: max,
            sync: SyncPolicy::Never,
            compression,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    for b in &batches {
        store.append(b.clone()).unwrap();
    }
    store.close().unwrap();
    let a = Archive::open(dir).unwrap();
    let files = a
        .catalog()
        .segments
        .iter()
        .map(|s| dir.join(&s.file))
        .collect();
    (files, batches)
}

fn contents(seg: &Segment) -> Result<Vec<(u64, Vec<u8>)>, SegmentError> {
    let mut out = Vec::new();
    for b in seg.batches() {
        let b = b?;
        let first = b.first_id();
        out.extend(
            b.rows()
                .enumerate()
                .map(|(i, r)| (first + i as u64, r.to_vec())),
        );
    }
    Ok(out)
}

#[test]
fn truncated_segment_is_reported_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let (files, _) = archive(dir.path(), 1 << 20, 10);
    let bytes = fs::read(&files[0]).unwrap();
    for keep in [0, 3, 8, 15, 16, 100, bytes.len() / 2, bytes.len() - 1] {
        fs::write(&files[0], &bytes[..keep]).unwrap();
        let err = Segment::open(&files[0])
            .and_then(|s| s.verify_all())
            .unwrap_err();
        assert!(err.is_corruption(), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(&files[0].display().to_string()), "{msg}");
    }
}

#[test]
fn corrupted_segment_leaves_the_rest_readable() {
    let dir = tempfile::tempdir().unwrap();
    // Uncompressed, so that a row is found in the file by its bytes (damage to compressed
    // batches: `tests/it/segment_format.rs`).
    let (files, batches) = archive_with(dir.path(), 4096, 40, Compression::NONE);
    assert!(files.len() >= 3);
    // Damage a row of the second segment (the first row of its middle batch, found in the
    // file by its bytes): the checksum catches it.
    let victim = &files[1];
    let row = {
        let seg = Segment::open(victim).unwrap();
        let n = seg.batches().len();
        let b = seg.batches().nth(n / 2).unwrap().unwrap();
        b.rows().next().unwrap().to_vec()
    };
    let mut bytes = fs::read(victim).unwrap();
    let at = bytes
        .windows(row.len())
        .position(|w| w == row)
        .expect("the row is in the file");
    bytes[at + row.len() / 2] ^= 0xff;
    fs::write(victim, &bytes).unwrap();

    let archive = Archive::open(dir.path()).unwrap();
    let mut errors = Vec::new();
    let mut ids = Vec::new();
    for b in archive.scan() {
        match b {
            Ok(b) => ids.extend(b.id_range()),
            Err(e) => errors.push(e.to_string()),
        }
    }
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains(&victim.display().to_string()),
        "{errors:?}"
    );
    // Only the damaged batch of that segment is lost: every other event is read, in order.
    let lost = &archive.catalog().segments[1];
    let total = expected(&batches).len() as u64;
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let missing: Vec<u64> = (0..total)
        .filter(|id| ids.binary_search(id).is_err())
        .collect();
    assert!(!missing.is_empty());
    assert!(missing
        .iter()
        .all(|id| lost.ranges().any(|r| r.contains(id))));
    assert!((missing.len() as u64) < lost.events, "{missing:?}");
    let report = archive.verify();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert!(report.problems[0].file.ends_with(&lost.file));
    assert!(!report.problems[0].reason.is_empty());
}

#[test]
fn segment_not_matching_the_catalog_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let (files, _) = archive(dir.path(), 4096, 40);
    // Swap two valid segments: each is sound, but not what the catalog says.
    let a = fs::read(&files[0]).unwrap();
    fs::copy(&files[1], &files[0]).unwrap();
    fs::write(&files[1], a).unwrap();
    let report = Archive::open(dir.path()).unwrap().verify();
    assert_eq!(report.problems.len(), 2, "{report:?}");
    assert!(report.problems[0]
        .reason
        .contains("does not match the catalog"));
}

#[test]
fn missing_segment_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (files, _) = archive(dir.path(), 4096, 40);
    fs::remove_file(&files[2]).unwrap();
    let archive = Archive::open(dir.path()).unwrap();
    let report = archive.verify();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert_eq!(archive.scan().filter(|b| b.is_err()).count(), 1);
}

#[test]
fn not_a_segment() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.seg");
    fs::write(&p, b"this is certainly not a flatbuffer, just text").unwrap();
    let msg = Segment::open(&p).unwrap_err().to_string();
    assert!(msg.contains("x.seg") && msg.contains("WSEG"), "{msg}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    /// A flipped bit anywhere is either detected (an error naming the file) or harmless
    /// (padding): the segment then reads back exactly as written. Never a panic.
    #[test]
    fn bit_flipped_segment(pos in 0.0f64..1.0, bit in 0u8..8) {
        let dir = tempfile::tempdir().unwrap();
        let (files, _) = archive(dir.path(), 1 << 20, 6);
        let original = contents(&Segment::open(&files[0]).unwrap()).unwrap();
        let mut bytes = fs::read(&files[0]).unwrap();
        let i = ((bytes.len() - 1) as f64 * pos) as usize;
        bytes[i] ^= 1 << bit;
        fs::write(&files[0], &bytes).unwrap();
        match Segment::open(&files[0]).and_then(|seg| contents(&seg)) {
            Ok(c) => prop_assert_eq!(c, original),
            Err(e) => {
                prop_assert!(e.is_corruption(), "{}", e);
                prop_assert!(e.to_string().contains(&files[0].display().to_string()));
            }
        }
    }

    /// Any truncation is an error naming the file.
    #[test]
    fn truncated_segment(cut in 0.0f64..1.0) {
        let dir = tempfile::tempdir().unwrap();
        let (files, _) = archive(dir.path(), 1 << 20, 6);
        let bytes = fs::read(&files[0]).unwrap();
        let keep = ((bytes.len() - 1) as f64 * cut) as usize;
        fs::write(&files[0], &bytes[..keep]).unwrap();
        let e = Segment::open(&files[0]).and_then(|s| s.verify_all()).unwrap_err();
        prop_assert!(e.is_corruption(), "{}", e);
    }
}

/// A segment cut short behind weir's back while it is open: the columns of a batch (read
/// with positioned reads, not through the map, which would have raised SIGBUS) and its Bloom
/// filter give an error naming the file and batch, or leave the batch to be read; no panic.
#[test]
fn a_segment_cut_short_while_open_fails_its_reads_with_the_file_and_batch() {
    let dir = tempfile::tempdir().unwrap();
    let s = schema("conn", 6);
    let (mut store, _) = Store::open_writer(dir.path(), StoreOptions::default()).unwrap();
    for i in 0..4u64 {
        store.append(batch(&s, 400, 12, i * 1000)).unwrap();
    }
    store.close().unwrap();
    let a = Archive::open(dir.path()).unwrap();
    let path = dir.path().join(&a.catalog().segments[0].file);
    let seg = Segment::open(&path).unwrap();
    let last = seg.len() - 1;
    assert_eq!(
        seg.batch_layout(last),
        Some(weir::unstable::segment::Layout::Columns)
    );
    let whole = seg.batch_columns(last).unwrap().unwrap();
    assert!(whole.rows() == 400);
    // A string the first batch does not hold: its filter says so, until it cannot be read.
    use weir::unstable::segment::sketch::{value_hash, TAG_STRING};
    let absent = (0..100u32)
        .map(|i| value_hash(TAG_STRING, format!("absent {i}").as_bytes()))
        .find(|&h| !seg.sketch(0).unwrap().may_contain(h))
        .expect("some string the filter rules out");
    // (Another filter read since: a thread keeps only the last one it read.)
    let _ = seg.sketch(last).unwrap().may_contain(absent);
    // Cut short before any batch's stored bytes.
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(64)
        .unwrap();
    let err = match seg.batch_columns(last).unwrap() {
        Ok(_) => panic!("batch {last} read from a file cut short"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains(&path.display().to_string()) && err.contains(&format!("batch {last}")),
        "{err}"
    );
    assert!(
        seg.sketch(0).unwrap().may_contain(absent),
        "an unread filter holds anything"
    );
    assert!(err.contains("reading"), "{err}");
}
