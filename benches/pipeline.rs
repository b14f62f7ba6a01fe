//! Throughput of the pipeline runtime: Zeek TSV text in memory -> source (parallel TSV
//! decoding) -> batcher -> a sink that drops batches, and the byte-bounded channel alone.
//!
//! Run: `cargo bench --bench pipeline`. Uses synthetic conn-like lines, no corpus needed.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use weir::unstable::batch::{Batch, BatchBuilder};
use weir::unstable::batcher::BatchConfig;
use weir::unstable::channel;
use weir::unstable::codec::ReaderOptions;
use weir::unstable::pipeline::{Pipeline, PipelineOptions};
use weir::unstable::source::{Input, SourceConfig};
use weir::unstable::types::{Field, Schema, Type};

/// About 20 MB of conn-like Zeek TSV.
fn text() -> (Vec<u8>, u64) {
    let mut s = String::from(
        "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tconn\n\
         #fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto\tduration\torig_bytes\tresp_bytes\thistory\n\
         #types\ttime\tstring\taddr\tport\taddr\tport\tenum\tinterval\tcount\tcount\tstring\n",
    );
    let n = 200_000u64;
    for i in 0..n {
        s.push_str(&format!(
            "{}.{:06}\tC{:016x}\t10.{}.{}.{}\t{}\t192.168.1.{}\t443\ttcp\t{}.{:06}\t{}\t{}\tShADadFf\n",
            1_258_531_221 + i / 100,
            i % 1_000_000,
            i.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            i % 256,
            (i / 256) % 256,
            i % 200,
            1024 + i % 60000,
            i % 254,
            i % 100,
            i % 999_999,
            i * 7 % 100_000,
            i * 13 % 1_000_000
        ));
    }
    (s.into_bytes(), n)
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (text, n) = text();
    let run = |text: &[u8]| {
        let data = bytes::Bytes::copy_from_slice(text);
        rt.block_on(async move {
            let mut p = Pipeline::new(PipelineOptions {
                channel_capacity: 16 << 20,
                ..PipelineOptions::default()
            });
            let src = p
                .add_source(
                    "input",
                    vec![Input::bytes("bench", data)],
                    SourceConfig::zeek(ReaderOptions::default(), 16 << 20),
                )
                .expect("source");
            let b = p
                .add_batcher("batch", &[src], BatchConfig::default())
                .expect("batcher");
            p.add_sink("null", &[b], futures::sink::drain())
                .expect("sink");
            p.run().await.expect("runs");
        });
    };
    let mut g = c.benchmark_group("pipeline_tsv_to_null");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("bytes", |b| b.iter(|| run(&text)));
    g.throughput(Throughput::Elements(n));
    g.bench_function("events", |b| b.iter(|| run(&text)));
    g.finish();

    // The channel alone: 10,000 batches of 64 KiB through a 1 MiB channel.
    let schema = Schema::new("zeek.x", vec![Field::new("s", Type::String)]).into_shared();
    let mut bb = BatchBuilder::new(schema);
    bb.begin_row().bytes(&vec![b'x'; 64 << 10]);
    bb.finish_row(None);
    let batch: Batch = bb.finish();
    let mut g = c.benchmark_group("channel");
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("batches_64KiB_cap_1MiB", |b| {
        b.iter(|| {
            let batch = batch.clone();
            rt.block_on(async move {
                let (tx, mut rx) = channel::channel::<Batch>(1 << 20);
                let producer = tokio::spawn(async move {
                    for _ in 0..10_000 {
                        if tx.send(batch.clone()).await.is_err() {
                            break;
                        }
                    }
                });
                let mut got = 0;
                while rx.recv().await.is_some() {
                    got += 1;
                }
                let _ = producer.await;
                assert_eq!(got, 10_000);
            })
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
