//! Column stats (`weir::unstable::ColumnStats`): the Zeek TSV reader records the range of each integer
//! and time column as it parses, and the segment writer's sketch takes them instead of decoding
//! those columns. The segment must be byte for byte the one built from the same rows without
//! stats, for every real log and every fixture (negative ints, unset values, escapes that take
//! the reader's slow path, lists, several schemas).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use weir::unstable::codec::zeek::parallel::ParallelTsvReader;
use weir::unstable::codec::zeek::tsv;
use weir::unstable::codec::ReaderOptions;
use weir::unstable::segment::SegmentBuilder;
use weir::unstable::Batch;

/// The same rows, without stats.
fn stripped(b: &Batch) -> Batch {
    Batch::from_parts(
        b.schema().clone(),
        b.data().to_vec(),
        b.offsets().to_vec(),
        b.ts_range(),
    )
    .unwrap()
}

/// The segment of `batches` (in memory, a fixed uuid).
fn segment(batches: &[Batch]) -> Vec<u8> {
    let mut seg = SegmentBuilder::new(1 << 30).unwrap();
    for b in batches {
        seg.add(b).unwrap();
    }
    seg.finish(uuid::Uuid::nil()).unwrap().1.to_vec()
}

/// Reads `text` both ways (sequential and parallel), checks that batches carry stats exactly
/// when expected, and that the segments with and without stats are identical. Returns how many
/// batches carried stats.
fn check(name: &str, text: &[u8]) -> usize {
    let (batches, _) = tsv::read_all(text, ReaderOptions::new(name.to_string())).unwrap();
    assert!(!batches.is_empty(), "{name}");
    let plain: Vec<Batch> = batches.iter().map(stripped).collect();
    assert!(plain.iter().all(|b| b.column_stats().is_none()));
    assert!(
        segment(&batches) == segment(&plain),
        "{name}: the segment differs with column stats"
    );
    // The parallel reader (forks of the decoder, small pieces) records them the same way.
    let chunks: Vec<std::io::Result<Vec<u8>>> = text.chunks(4096).map(|c| Ok(c.to_vec())).collect();
    let chunks = chunks.into_iter();
    let par: Vec<Batch> = ParallelTsvReader::new(chunks, ReaderOptions::new(name.to_string()), 2)
        .with_piece_bytes(16 << 10)
        .map(Result::unwrap)
        .collect();
    let par_plain: Vec<Batch> = par.iter().map(stripped).collect();
    assert!(segment(&par) == segment(&par_plain), "{name}: parallel");
    batches
        .iter()
        .filter(|b| b.column_stats().is_some())
        .count()
}

#[test]
fn segments_are_the_same_with_and_without_column_stats_on_fixtures() {
    let mut with_stats = 0;
    for name in common::TSV_FIXTURES {
        let path = common::fixture(name);
        with_stats += check(name, &std::fs::read(&path).unwrap());
    }
    assert!(with_stats > 0);
}

#[test]
fn segments_are_the_same_with_and_without_column_stats_on_the_corpus() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    // A batch with a row the fast path cannot take (escapes, common in http.log) carries no
    // stats, and is sketched from its columns; conn.log's rows all take the fast path.
    for name in ["conn.log.gz", "dns.log.gz", "http.log.gz"] {
        let text = common::gz::read_maybe_gz(&dir.join(name));
        let n = check(name, &text);
        assert!(
            name != "conn.log.gz" || n > 0,
            "{name}: no batch carried column stats"
        );
    }
}

/// Stats are all or nothing per batch: a row the fast path cannot take (here an escaped
/// value, parsed by the general path) drops them; rows that fail to parse leave them intact
/// only when no value was recorded for them.
#[test]
fn a_row_outside_the_fast_path_drops_the_batch_stats() {
    let head = "#separator \\x09\n#fields\tts\tn\ts\n#types\ttime\tcount\tstring\n";
    let fast = format!("{head}1.0\t5\ta\n2.0\t7\tb\n");
    let (b, _) = tsv::read_all(fast.as_bytes(), ReaderOptions::new("f".to_string())).unwrap();
    assert!(b[0].column_stats().is_some());
    let slow = format!("{head}1.0\t5\ta\n2.0\t7\tb\\x41\n");
    let (b, _) = tsv::read_all(slow.as_bytes(), ReaderOptions::new("s".to_string())).unwrap();
    assert_eq!(b[0].len(), 2);
    assert!(b[0].column_stats().is_none());
    assert!(segment(&b) == segment(&[stripped(&b[0])]));
}

/// Off (`weir import --no-sketches`): no stats; and stats merged by coalescing batches (the
/// batcher's `Batch::append`) still give the same segment.
#[test]
fn stats_can_be_off_and_survive_coalescing() {
    let path = common::fixture("archive-v1.log");
    let text = std::fs::read(&path).unwrap();
    let mut opts = ReaderOptions::new("a".to_string());
    opts.batch_rows = 7;
    opts.column_stats = false;
    let (off, _) = tsv::read_all(&text, opts.clone()).unwrap();
    assert!(off.iter().all(|b| b.column_stats().is_none()));
    opts.column_stats = true;
    let (on, _) = tsv::read_all(&text, opts).unwrap();
    let on: Vec<Batch> = on
        .into_iter()
        .filter(|b| b.column_stats().is_some())
        .collect();
    assert!(on.len() > 10, "{}", on.len());
    // Coalesce runs of one schema, as the batcher does.
    let mut merged: Vec<Batch> = Vec::new();
    for b in &on {
        match merged.last_mut() {
            Some(last) if last.schema() == b.schema() && last.len() < 40 => {
                assert!(last.append(b));
            }
            _ => merged.push(b.clone()),
        }
    }
    assert!(merged.len() < on.len());
    assert!(merged.iter().all(|b| b.column_stats().is_some()));
    let plain: Vec<Batch> = merged.iter().map(stripped).collect();
    assert!(segment(&merged) == segment(&plain));
    // A batch split at a segment's end (`split_off`) drops them: they would be wrong.
    let mut first = merged[0].clone();
    let tail = first.split_off(first.len() / 2);
    assert!(first.column_stats().is_none() && tail.column_stats().is_none());
}
