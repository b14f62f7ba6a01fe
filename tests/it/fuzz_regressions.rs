//! Findings of the fuzz targets in `fuzz/` (see `fuzz/README.md`): each minimal reproducer is
//! a file under `tests/fixtures/fuzz/`, read here by the API its target drives. Also the
//! generator of the binary seed corpora (`fuzz/seeds/{segment,wal,catalog}`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::path::Path;

use common::fixture;
use common::store::{batch, schema};
use weir::unstable::batch::Batch;
use weir::unstable::codec::zeek::parallel::ParallelTsvReader;
use weir::unstable::codec::zeek::tsv::TsvDecoder;
use weir::unstable::codec::{collect_batches, decode_chunks, ReaderOptions};
use weir::unstable::error::{OnError, SkipReport};
use weir::unstable::store::{Store, StoreOptions};
use weir::unstable::value::Value;
use weir::unstable::wal::SyncPolicy;

/// Writes the seeds of the `segment`, `wal` and `catalog` fuzz targets from a small store
/// (segment UUIDs are random, so the files differ on every run; they are committed once):
/// `cargo test --test it -- --ignored fuzz_regressions::write_fuzz_seeds`.
#[test]
#[ignore = "writes fuzz/seeds; run by hand"]
fn write_fuzz_seeds() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let opts = StoreOptions {
        max_segment_size: 8 << 10,
        sync: SyncPolicy::Never,
        ..StoreOptions::default()
    };
    let (mut store, _) = Store::open_writer(db, opts).unwrap();
    let conn = schema("conn", 4);
    let dns = schema("dns", 2);
    // Enough to seal a segment, then two batches left in the WAL.
    let mut seed = 0;
    while store.summary().segments == 0 {
        let s = if seed % 2 == 0 { &conn } else { &dns };
        store.append(batch(s, 3, 8, seed)).unwrap();
        seed += 1;
    }
    store.append(batch(&conn, 2, 4, 100)).unwrap();
    store.append(batch(&dns, 1, 4, 101)).unwrap();
    store.flush().unwrap();
    drop(store); // as after a crash: the WAL and the active segment's file stay

    let put = |target: &str, name: &str, bytes: &[u8]| {
        let d = seeds.join(target);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(name), bytes).unwrap();
    };
    put(
        "catalog",
        "catalog.json",
        &std::fs::read(db.join("catalog.json")).unwrap(),
    );
    let mut active = None;
    for e in std::fs::read_dir(db.join("segments")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let bytes = std::fs::read(e.path()).unwrap();
        if name.ends_with(".seg.tmp") {
            active = Some(bytes);
        } else if name.ends_with(".seg") {
            put("segment", "sealed.seg", &bytes);
        }
    }
    // The WAL target's input: u16 LE length, the WAL, then the end of the active segment's
    // file (its rows are at the end; the sparse start is zeros).
    let wal = std::fs::read(db.join("wal")).unwrap();
    let active = active.expect("an active segment file");
    let start = active.iter().position(|&b| b != 0).unwrap_or(0);
    let tail = &active[start.saturating_sub(16)..];
    let mut input = (wal.len() as u16).to_le_bytes().to_vec();
    input.extend_from_slice(&wal);
    input.extend_from_slice(tail);
    put("wal", "two-records", &input);
}

// ---------------------------------------------------------------------------------------------
// zeek_tsv: the parallel reader built the schema from an overlong first data line.

/// Everything a TSV reader produced: rows with their schema names, the error, the skips.
type Outcome = (Vec<(String, Vec<Value>)>, Option<String>, SkipReport);

fn outcome(batches: Vec<Batch>, error: Option<String>, skips: SkipReport) -> Outcome {
    let mut rows = Vec::new();
    for b in &batches {
        for r in b.to_values().unwrap() {
            rows.push((b.schema().name.clone(), r));
        }
    }
    (rows, error, skips)
}

fn tsv_sequential(text: &[u8], opts: ReaderOptions) -> Outcome {
    let mut d = TsvDecoder::new(opts);
    let (batches, error) = decode_chunks(&mut d, [text]);
    outcome(
        batches,
        error.map(|e| e.to_string()),
        d.skip_report().clone(),
    )
}

fn tsv_parallel(text: &[u8], chunk: usize, piece: usize, opts: ReaderOptions) -> Outcome {
    let chunks: Vec<std::io::Result<Vec<u8>>> =
        text.chunks(chunk).map(|c| Ok(c.to_vec())).collect();
    let mut r = ParallelTsvReader::new(chunks.into_iter(), opts, 2).with_piece_bytes(piece);
    let (batches, error) = collect_batches(&mut r);
    let skips = r.skip_report().clone();
    outcome(batches, error.map(|e| e.to_string()), skips)
}

/// Found by `zeek_tsv`: with a line limit, `ParallelTsvReader` built the schema from the first
/// data line after a header even when that line was longer than the limit, so it reported
/// "data before any #fields/#types header" (or a column error) where `TsvDecoder` reports the
/// overlong line. Fixed in `TsvDecoder::prime`.
#[test]
fn zeek_tsv_overlong_first_data_line_is_reported_as_by_the_decoder() {
    // The minimal reproducer: one data line of 70 bytes, no header, limit 64.
    let found = std::fs::read(fixture("fuzz/zeek_tsv-overlong-first-line.log")).unwrap();
    let after_header = [
        &b"#separator \\x09\n#fields\ta\tb\n#types\tstring\tcount\n"[..],
        &[b'y'; 70],
        b"\nok\t1\n",
    ]
    .concat();
    for text in [&found[..], &after_header[..]] {
        for on_error in [OnError::Fail, OnError::Skip] {
            let opts = ReaderOptions {
                on_error,
                max_line_len: 64,
                ..ReaderOptions::new("fuzz")
            };
            let want = tsv_sequential(text, opts.clone());
            if on_error == OnError::Fail {
                let e = want.1.as_deref().unwrap();
                assert!(
                    e.contains("line longer than the maximum of 64 bytes"),
                    "{e}"
                );
            }
            for (chunk, piece) in [(8, 81), (1 << 20, 1), (3, 1 << 20)] {
                let got = tsv_parallel(text, chunk, piece, opts.clone());
                assert_eq!(got, want, "{on_error:?}, chunks {chunk}, pieces {piece}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Crash loop (WEIR_CRASH_LOOP=200): `weir verify` called a segment of an interrupted seal
// during WAL replay "not visible".

/// Found by the crash loop of `tests/it/cli_crash_recovery.rs`: a writer that replays the WAL of
/// a crashed one seals during the replay (the replayed events exceed its segment size), and is
/// killed after renaming the segment but before writing the catalog. The WAL then still is the
/// old one, which names only the previous life's segment file, not the new segment, although it
/// holds all of its events. `Archive::verify` reported that segment as a problem ("holds events
/// that are not visible", exit 1) where the writer (rightly) removes it as redundant; the events
/// are visible through the WAL. Fixed in `Archive::unlisted_segments`.
#[test]
fn segment_of_a_seal_interrupted_during_replay_is_not_a_problem() {
    use weir::unstable::store::{fault, Archive};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path();
    let s = schema("conn", 4);
    let batches: Vec<Batch> = (0..30).map(|i| batch(&s, 10, 40, i)).collect();
    {
        let big = StoreOptions {
            max_segment_size: 1 << 20,
            sync: SyncPolicy::Batch,
            ..StoreOptions::default()
        };
        let (mut store, _) = Store::open_writer(db, big).unwrap();
        for b in &batches {
            store.append(b.clone()).unwrap();
        }
        drop(store); // a crash: everything is in the WAL and the active segment's file
    }
    let small = StoreOptions {
        max_segment_size: 16 << 10,
        sync: SyncPolicy::Batch,
        ..StoreOptions::default()
    };
    // The replay seals; its second commit (the catalog) fails: the segment is renamed into
    // place, the catalog does not list it, the WAL is still the old one.
    fault::fail_commit_after(1);
    let failed = Store::open_writer(db, small);
    fault::disarm();
    assert!(failed.is_err(), "the replay's seal failed");
    let report = Archive::open(db).unwrap().verify();
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(
        common::store::read_all(db),
        common::store::expected(&batches)
    );
    let (store, _) = Store::open_writer(db, small).unwrap();
    store.close().unwrap();
    assert_eq!(
        common::store::read_all(db),
        common::store::expected(&batches)
    );
    assert!(Archive::open(db).unwrap().verify().is_ok());
}
