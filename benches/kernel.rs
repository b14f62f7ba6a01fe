//! The Arrow evaluator (`Program::evaluate_record_batch`, `src/query/kernel.rs`) against the
//! columnar one on msgpack columns (`src/query/columnar.rs`) and the row evaluator, on one
//! batch of 8,192 events of the corpus's conn.log, one core:
//!
//! - `arrow`, `columnar`, `rows`: the evaluation alone, on the batch already in the
//!   evaluator's form (a `RecordBatch`; msgpack columns with dictionaries where the program
//!   reads them as such; msgpack rows);
//! - `arrow+decode`, `columnar+decode`: the batch's rows made into that form first
//!   (`ArrowBuilder`; `Program::split_columns`), then evaluated. A search pays its own
//!   decoding instead (inflating a segment's columns), so these bound it from above.
//!
//! Run: `cargo bench --bench kernel`. Skips with a note when the corpus is absent.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use weir::unstable::codec::arrow::ArrowBuilder;
use weir::unstable::codec::zeek::tsv::read_all;
use weir::unstable::codec::ReaderOptions;
use weir::unstable::query::Query;

/// Events in the batch evaluated.
const ROWS: usize = 8192;

fn bench(c: &mut Criterion) {
    let Some(text) = common::conn_log() else {
        eprintln!("note: conn.log.gz not found (set WEIR_CORPUS): skipping the kernel benchmark");
        return;
    };
    let mut options = ReaderOptions::new("conn.log");
    options.batch_rows = ROWS;
    let (batches, _) = read_all(&text[..], options).expect("parses");
    let batch = batches
        .into_iter()
        .find(|b| b.len() == ROWS)
        .expect("a full batch");
    let schema = batch.schema().clone();
    let mut builder = ArrowBuilder::new(schema.clone());
    for row in batch.rows() {
        builder.append(row).unwrap();
    }
    let record = builder.finish().unwrap();
    let mut group = c.benchmark_group("kernel");
    group.throughput(Throughput::Elements(ROWS as u64));
    group.sample_size(30);
    for (name, expr) in [
        ("orig_bytes", "orig_bytes > 1000"),
        ("address", "id.orig_h == 192.168.1.104"),
        ("substring", "\"Fa\" in history"),
        ("uid", "uid == \"Pii6cUUq1v4\""),
        ("subnet", "id.resp_h in 192.168.0.0/16"),
    ] {
        let p = Query::parse(expr).unwrap().bind(&schema);
        let cols = p.split_columns(&batch).unwrap();
        let want = p.count_columns(&cols, 0).unwrap();
        let got = p.evaluate_record_batch(&record, Some(0)).unwrap();
        assert_eq!(got.true_count(), want, "{expr}");
        group.bench_function(format!("arrow/{name}"), |b| {
            b.iter(|| {
                p.evaluate_record_batch(&record, Some(0))
                    .unwrap()
                    .true_count()
            })
        });
        group.bench_function(format!("columnar/{name}"), |b| {
            b.iter(|| p.count_columns(&cols, 0).unwrap())
        });
        group.bench_function(format!("rows/{name}"), |b| {
            b.iter(|| batch.rows().filter(|row| p.matches(row).unwrap()).count())
        });
        group.bench_function(format!("arrow+decode/{name}"), |b| {
            b.iter(|| {
                for row in batch.rows() {
                    builder.append(row).unwrap();
                }
                let record = builder.finish().unwrap();
                p.evaluate_record_batch(&record, Some(0))
                    .unwrap()
                    .true_count()
            })
        });
        group.bench_function(format!("columnar+decode/{name}"), |b| {
            b.iter(|| {
                let cols = p.split_columns(&batch).unwrap();
                p.count_columns(&cols, 0).unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
