//! Throughput of the Zeek TSV reader on the corpus's conn.log (decompressed once up front):
//! bytes/s and events/s of text into typed batches on one core.
//!
//! Run: `cargo bench --bench tsv`. Skips with a note when the corpus is absent.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use weir::unstable::codec::zeek::tsv::read_all;
use weir::unstable::codec::ReaderOptions;

fn events(text: &[u8]) -> u64 {
    let (batches, _) = read_all(text, ReaderOptions::new("conn.log")).expect("conn.log parses");
    batches.iter().map(|b| b.len() as u64).sum()
}

fn bench(c: &mut Criterion) {
    let Some(text) = common::conn_log() else {
        eprintln!("note: conn.log.gz not found (set WEIR_CORPUS): skipping the TSV benchmark");
        return;
    };
    let n = events(&text);
    let run = |text: &[u8]| {
        let (batches, _) = read_all(text, ReaderOptions::new("conn.log")).expect("parses");
        std::hint::black_box(batches);
    };

    let mut g = c.benchmark_group("tsv_bytes");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("conn.log", |b| b.iter(|| run(&text)));
    g.finish();

    let mut g = c.benchmark_group("tsv_events");
    g.throughput(Throughput::Elements(n));
    g.bench_function("conn.log", |b| b.iter(|| run(&text)));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
