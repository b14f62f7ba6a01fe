//! What the per-batch sketches cost, on one core and without the rest of an import: the two
//! places that work for them, each timed with and without it, on the corpus's conn.log (one
//! copy of W1000's workload: a batch of 8,192 rows and one of 270).
//!
//! - `sketch_parse`: the TSV reader with and without recording column stats
//!   ([`ReaderOptions::column_stats`], which the sketches take instead of decoding the numeric
//!   columns).
//! - `sketch_prepare`: preparing the batches for a segment (split into columns, zstd, and the
//!   sketch) with and without sketches, as a prepare thread of `weir import` does.
//!
//! The sketches' cost is the difference within each pair; `bench/sketch-cost.sh` measures the
//! same on the whole W1000 import, where two cores share all stages and the noise is larger.
//!
//! Run: `cargo bench --bench sketch`. Skips with a note when the corpus is absent.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use weir::unstable::codec::zeek::tsv::read_all;
use weir::unstable::codec::ReaderOptions;
use weir::unstable::segment::{Compression, Preparer};
use weir::unstable::Batch;

/// The batches of `text`, with column stats when `stats`.
fn parse(text: &[u8], stats: bool) -> Vec<Batch> {
    let mut opts = ReaderOptions::new("conn.log");
    opts.column_stats = stats;
    read_all(text, opts).expect("conn.log parses").0
}

fn bench(c: &mut Criterion) {
    let Some(text) = common::conn_log() else {
        eprintln!("note: conn.log.gz not found (set WEIR_CORPUS): skipping the sketch benchmark");
        return;
    };
    let batches = parse(&text, true);
    let events: usize = batches.iter().map(Batch::len).sum();
    // The benchmark is only meaningful if the sketches get the stats, as in an import.
    assert!(batches.iter().all(|b| b.column_stats().is_some()));

    let mut g = c.benchmark_group("sketch_parse");
    g.throughput(Throughput::Elements(events as u64));
    for (name, stats) in [("no_stats", false), ("stats", true)] {
        g.bench_function(name, |b| {
            b.iter(|| std::hint::black_box(parse(&text, stats)))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("sketch_prepare");
    g.throughput(Throughput::Elements(events as u64));
    for (name, sketches) in [("no_sketches", false), ("sketches", true)] {
        let mut preparer = Preparer::new(Compression::default(), sketches);
        // One core: the sketch is not built on a second thread beside the compression.
        preparer.set_split(false);
        let prepared = preparer.prepare(&batches[0]);
        assert_eq!(prepared.sketch().is_some(), sketches);
        g.bench_function(name, |b| {
            b.iter(|| {
                for batch in &batches {
                    std::hint::black_box(preparer.prepare(batch));
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
