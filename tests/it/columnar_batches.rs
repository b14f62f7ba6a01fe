//! Columnar batches (`Batch::columns`): the Zeek TSV reader, when asked
//! (`ReaderOptions::columns`, which `weir import` sets unless `--compression none`), writes each
//! batch's values field by field instead of as rows, so that the segment writer need not split
//! rows into columns. Everything must be as if it had written rows: the same rows, offsets and
//! time ranges, and segments byte for byte the same, for every real log and every fixture
//! (escapes and lists that take the reader's slow path, several schemas), read sequentially and
//! in parallel, coalesced and split as the batcher and the store do, and stored in each codec.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use weir::unstable::codec::zeek::parallel::ParallelTsvReader;
use weir::unstable::codec::zeek::tsv;
use weir::unstable::codec::ReaderOptions;
use weir::unstable::segment::{Codec, Compression, SegmentBuilder};
use weir::unstable::Batch;

/// The segment of `batches` (in memory, a fixed uuid), compressed with `codec`.
fn segment(batches: &[Batch], codec: Codec) -> Vec<u8> {
    let mut seg = SegmentBuilder::new(1 << 30).unwrap();
    seg.set_compression(Compression::new(codec));
    for b in batches {
        seg.add(b).unwrap();
    }
    seg.finish(uuid::Uuid::nil()).unwrap().1.to_vec()
}

fn opts(name: &str, columns: bool, batch_rows: usize) -> ReaderOptions {
    let mut o = ReaderOptions::new(name.to_string());
    o.columns = columns;
    o.batch_rows = batch_rows;
    o
}

/// Coalesces runs of one schema up to `rows` rows, as the batcher does, and cuts every
/// batch in two, as the store does at a segment's end.
fn reshape(batches: &[Batch], rows: usize) -> Vec<Batch> {
    let mut merged: Vec<Batch> = Vec::new();
    for b in batches {
        match merged.last_mut() {
            Some(last) if last.schema() == b.schema() && last.len() < rows => {
                assert!(last.append(b));
            }
            _ => merged.push(b.clone()),
        }
    }
    let mut out = Vec::new();
    for mut b in merged {
        let tail = b.split_off(b.len() / 2);
        out.push(b);
        out.push(tail);
    }
    out
}

/// Reads `text` with and without columns and checks that nothing differs. Returns how many
/// batches were columnar.
fn check(name: &str, text: &[u8]) -> usize {
    let (rows, _) = tsv::read_all(text, opts(name, false, 8192)).unwrap();
    let (cols, _) = tsv::read_all(text, opts(name, true, 8192)).unwrap();
    assert!(!rows.is_empty(), "{name}");
    assert!(rows.iter().all(|b| b.columns().is_none()), "{name}");
    assert_eq!(rows.len(), cols.len(), "{name}");
    for (r, c) in rows.iter().zip(&cols) {
        assert_eq!(r.byte_size(), c.byte_size(), "{name}");
        assert_eq!(r.offsets(), c.offsets(), "{name}");
        assert_eq!(r.ts_range(), c.ts_range(), "{name}");
        assert_eq!(
            r.column_stats().is_some(),
            c.column_stats().is_some(),
            "{name}"
        );
    }
    for codec in [Codec::Zstd, Codec::Lz4, Codec::None] {
        // Fresh copies: a batch's rows, once asked for, stay assembled.
        let fresh: Vec<Batch> = tsv::read_all(text, opts(name, true, 8192)).unwrap().0;
        assert!(
            segment(&rows, codec) == segment(&fresh, codec),
            "{name}: the {codec:?} segment differs with columns"
        );
    }
    assert_eq!(rows, cols, "{name}: the rows differ");
    // Small batches, coalesced and cut.
    let (small_rows, _) = tsv::read_all(text, opts(name, false, 7)).unwrap();
    let (small_cols, _) = tsv::read_all(text, opts(name, true, 7)).unwrap();
    let (a, b) = (reshape(&small_rows, 40), reshape(&small_cols, 40));
    assert!(
        segment(&a, Codec::Zstd) == segment(&b, Codec::Zstd),
        "{name}: coalesced"
    );
    assert_eq!(a, b, "{name}: coalesced rows");
    // The parallel reader (forks of the decoder, small pieces) writes columns the same way.
    let parallel = |columns: bool| -> Vec<Batch> {
        let chunks: Vec<std::io::Result<Vec<u8>>> =
            text.chunks(4096).map(|c| Ok(c.to_vec())).collect();
        ParallelTsvReader::new(chunks.into_iter(), opts(name, columns, 8192), 2)
            .with_piece_bytes(16 << 10)
            .map(Result::unwrap)
            .collect()
    };
    let (par_rows, par_cols) = (parallel(false), parallel(true));
    assert!(
        par_cols.iter().any(|b| b.columns().is_some())
            || !cols.iter().any(|b| b.columns().is_some())
    );
    assert!(
        segment(&par_rows, Codec::Zstd) == segment(&par_cols, Codec::Zstd),
        "{name}: parallel"
    );
    assert_eq!(par_rows, par_cols, "{name}: parallel rows");
    cols.iter().filter(|b| b.columns().is_some()).count()
}

#[test]
fn columnar_batches_match_rows_on_fixtures() {
    let mut columnar = 0;
    for name in common::TSV_FIXTURES {
        let path = common::fixture(name);
        columnar += check(name, &std::fs::read(&path).unwrap());
    }
    assert!(columnar > 0);
}

#[test]
fn columnar_batches_match_rows_on_the_corpus() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    for name in ["conn.log.gz", "dns.log.gz", "http.log.gz"] {
        let text = common::gz::read_maybe_gz(&dir.join(name));
        let n = check(name, &text);
        assert!(n > 0, "{name}: no batch was columnar");
    }
}

/// Off by default: a reader not asked for columns (every consumer but the compressing
/// archive) writes rows.
#[test]
fn columns_are_off_by_default() {
    assert!(!ReaderOptions::default().columns);
    let text = std::fs::read(common::fixture("archive-v1.log")).unwrap();
    let (b, _) = tsv::read_all(&text, ReaderOptions::new("a".to_string())).unwrap();
    assert!(b.iter().all(|b| b.columns().is_none()));
}
