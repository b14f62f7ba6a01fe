//! The query evaluator alone: `Program::matches` over every row of the corpus's conn.log
//! (parsed into batches once up front), on one core, for a broad comparison, a needle, a time
//! range and a bare address. No segment, CRC check or page mapping is involved: this is the
//! per-row cost that `weir count` pays on top of those (see `bench/query.sh` for the whole).
//!
//! Run: `cargo bench --bench query`. Skips with a note when the corpus is absent.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use weir::unstable::codec::zeek::tsv::read_all;
use weir::unstable::codec::ReaderOptions;
use weir::unstable::query::Query;

fn bench(c: &mut Criterion) {
    let Some(text) = common::conn_log() else {
        eprintln!("note: conn.log.gz not found (set WEIR_CORPUS): skipping the query benchmark");
        return;
    };
    let (batches, _) = read_all(&text[..], ReaderOptions::new("conn.log")).expect("parses");
    let events: u64 = batches.iter().map(|b| b.len() as u64).sum();
    let mut group = c.benchmark_group("evaluate");
    group.throughput(Throughput::Elements(events));
    for (name, expr) in [
        ("broad", "#type == \"zeek.conn\" && orig_bytes > 1k"),
        ("needle uid", "uid == \"Pii6cUUq1v4\""),
        (
            "time range",
            "#timestamp >= 2009-11-18T10:00:00Z && #timestamp < 2009-11-18T11:00:00Z",
        ),
        ("bare address", "192.168.1.104"),
    ] {
        let q = Query::parse(expr).unwrap();
        let programs: Vec<_> = batches.iter().map(|b| q.bind(b.schema())).collect();
        group.bench_function(name, |bench| {
            bench.iter(|| {
                let mut n = 0u64;
                for (b, p) in batches.iter().zip(&programs) {
                    for row in b.rows() {
                        n += u64::from(p.matches(row).unwrap());
                    }
                }
                std::hint::black_box(n)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
