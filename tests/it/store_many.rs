//! Archives of many small segments: the range map finds every event, a scan that stops early
//! maps only the segments it needs, and the LRU keeps at most its capacity mapped.
//!
//! `WEIR_MANY_DB=DIR cargo test --release --test it store_many:: -- --ignored` builds a 10,000
//! segment archive in DIR for benchmarking `weir export -n 1` (see benches/archive.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::path::Path;

use common::store::{batch, schema};
use weir::unstable::segment::SegmentBuilder;
use weir::unstable::store::{Archive, Catalog, CatalogEntry};

/// Writes `n` one-batch segments of 16 events and their catalog (one catalog write instead of
/// one per seal, to build large test archives quickly).
fn many_segments(dir: &Path, n: u64) {
    let s = schema("conn", 4);
    let seg_dir = dir.join("segments");
    std::fs::create_dir_all(&seg_dir).unwrap();
    let mut builder = SegmentBuilder::new(64 << 10).unwrap();
    let mut catalog = Catalog::default();
    for i in 0..n {
        let mut b = batch(&s, 16, 10, i);
        b.set_id(i * 16);
        builder.add(&b).unwrap();
        let sealed = builder.write_to(&seg_dir, false).unwrap();
        catalog.push(CatalogEntry::from_sealed(&sealed));
    }
    catalog.save(dir, false).unwrap();
}

#[test]
fn many_segments_lookup_scan_and_lru() {
    let dir = tempfile::tempdir().unwrap();
    many_segments(dir.path(), 500);
    let archive = Archive::open(dir.path()).unwrap();
    assert_eq!(archive.catalog().segments.len(), 500);
    assert_eq!(archive.cached_segments(), 0, "open maps no segment");
    // The first event touches one segment.
    let first = archive.scan().next().unwrap().unwrap();
    assert_eq!(first.first_id(), 0);
    assert_eq!(archive.cached_segments(), 1);
    for id in [0u64, 15, 16, 17, 4321, 500 * 16 - 1] {
        let b = archive.get(id).unwrap().unwrap();
        assert_eq!(b.first_id(), id);
        let seg = b.segment_path().unwrap().to_path_buf();
        let entry = &archive.catalog().segments[(id / 16) as usize];
        assert!(seg.ends_with(&entry.file), "{id}: {seg:?}");
    }
    assert!(archive.get(500 * 16).unwrap().is_none());
    // A range scan in the middle starts mid-batch and stops mid-batch.
    let ids: Vec<u64> = archive
        .scan_range(100..205)
        .flat_map(|b| b.unwrap().id_range())
        .collect();
    assert_eq!(ids, (100..205).collect::<Vec<_>>());
    // A full scan maps every segment once, keeping at most the LRU capacity (10).
    let n: u64 = archive.scan().map(|b| b.unwrap().len() as u64).sum();
    assert_eq!(n, 500 * 16);
    assert_eq!(archive.cached_segments(), 10);
    let info = archive.info().unwrap();
    assert_eq!(info.id_ranges, vec![[0, 8000]]);
    assert!(archive.verify().is_ok());
}

#[test]
#[ignore]
fn make_archive_of_10000_segments() {
    let Some(dir) = std::env::var_os("WEIR_MANY_DB") else {
        eprintln!("note: set WEIR_MANY_DB=DIR to build the archive");
        return;
    };
    many_segments(Path::new(&dir), 10_000);
}
