//! Storage benchmarks: segment building throughput, store append throughput (WAL + segments),
//! opening an archive of 10,000 small segments, and first-event latency (open + first row).
//!
//! Run: `cargo bench --bench archive`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::path::Path;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use weir::unstable::batch::{Batch, BatchBuilder};
use weir::unstable::segment::SegmentBuilder;
use weir::unstable::store::{Archive, Catalog, CatalogEntry, Store, StoreOptions};
use weir::unstable::types::{Field, Schema, SchemaRef, Type};
use weir::unstable::wal::SyncPolicy;

/// A conn.log-like schema.
fn conn_schema() -> SchemaRef {
    let f = |n: &str, t: &str| Field::new(n, Type::parse(t).unwrap());
    Schema::new(
        "zeek.conn",
        vec![
            f("ts", "time"),
            f("uid", "string"),
            f("id.orig_h", "addr"),
            f("id.orig_p", "port"),
            f("id.resp_h", "addr"),
            f("id.resp_p", "port"),
            f("proto", "enum"),
            f("service", "string"),
            f("duration", "interval"),
            f("orig_bytes", "count"),
            f("resp_bytes", "count"),
            f("conn_state", "string"),
            f("history", "string"),
            f("tunnel_parents", "set[string]"),
        ],
    )
    .into_shared()
}

/// A batch of 1024 conn-like rows (about 100 bytes each).
fn conn_batch(schema: &SchemaRef, seed: u64) -> Batch {
    let mut b = BatchBuilder::new(schema.clone());
    for i in 0..1024u64 {
        let n = seed * 1024 + i;
        let ts = 1_300_000_000_000_000_000 + n as i64 * 1_000_000;
        let mut e = b.begin_row();
        e.int(ts);
        e.bytes(format!("C{n:016x}").as_bytes());
        e.addr(std::net::IpAddr::from([192, 168, (n >> 8) as u8, n as u8]));
        e.uint(40000 + n % 20000);
        e.addr(std::net::IpAddr::from([10, 0, 0, (n % 250) as u8]));
        e.uint(if n.is_multiple_of(3) { 53 } else { 443 });
        e.bytes(if n.is_multiple_of(3) { b"udp" } else { b"tcp" });
        e.bytes(if n.is_multiple_of(3) { b"dns" } else { b"ssl" });
        e.int((n % 5_000_000) as i64 * 1000);
        e.uint(n % 4000);
        e.uint(n % 90000);
        e.bytes(b"SF");
        e.bytes(b"ShADadfF");
        e.array(0);
        b.finish_row(Some(ts));
    }
    b.finish()
}

fn batches(n: u64) -> Vec<Batch> {
    let s = conn_schema();
    (0..n).map(|i| conn_batch(&s, i)).collect()
}

fn segment_building(c: &mut Criterion) {
    let mut input = batches(256);
    let mut id = 0;
    for b in &mut input {
        b.set_id(id);
        id += b.len() as u64;
    }
    let bytes: usize = input.iter().map(Batch::byte_size).sum();
    let mut g = c.benchmark_group("segment_build");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(10);
    let mut builder = SegmentBuilder::new(1 << 30).unwrap();
    g.bench_function("add_and_finish_1GiB_builder", |b| {
        b.iter(|| {
            for batch in &input {
                builder.add(batch).unwrap();
            }
            let (sealed, bytes) = builder.finish(uuid::Uuid::nil()).unwrap();
            assert!(bytes.len() as u64 == sealed.bytes);
            builder.clear();
        })
    });
    g.bench_function("store_append_wal_and_seal", |b| {
        b.iter_batched(
            || (tempfile::tempdir().unwrap(), input.clone()),
            |(dir, input)| {
                let opts = StoreOptions {
                    max_segment_size: 16 << 20,
                    sync: SyncPolicy::Never,
                    ..StoreOptions::default()
                };
                let (mut store, _) = Store::open_writer(dir.path(), opts).unwrap();
                for batch in input {
                    store.append(batch).unwrap();
                }
                store.close().unwrap();
                dir
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// Writes `n` one-batch segments and their catalog directly (one catalog write instead of n).
fn many_segments(dir: &Path, n: u64) {
    let s = conn_schema();
    let seg_dir = dir.join("segments");
    std::fs::create_dir_all(&seg_dir).unwrap();
    let mut builder = SegmentBuilder::new(64 << 10).unwrap();
    let mut catalog = Catalog::default();
    let mut template = conn_batch(&s, 0);
    template.split_off(16);
    for i in 0..n {
        let mut b = template.clone();
        b.set_id(i * 16);
        builder.add(&b).unwrap();
        let sealed = builder.write_to(&seg_dir, false).unwrap();
        catalog.push(CatalogEntry::from_sealed(&sealed));
    }
    catalog.save(dir, false).unwrap();
}

fn archive_open(c: &mut Criterion) {
    // Built on first use, so that filtering for other benchmarks skips it.
    let dir_cell = std::sync::OnceLock::new();
    let dir = || {
        dir_cell
            .get_or_init(|| {
                let dir = tempfile::tempdir().unwrap();
                many_segments(dir.path(), 10_000);
                dir
            })
            .path()
            .to_path_buf()
    };
    let mut g = c.benchmark_group("archive_10000_segments");
    g.bench_function("open", |b| {
        let dir = dir();
        b.iter(|| {
            let a = Archive::open(&dir).unwrap();
            assert_eq!(a.catalog().segments.len(), 10_000);
        })
    });
    // What `open` costs beyond parsing the catalog: the directory checks and the reader's
    // registration (`readers/`), measured in the same run.
    g.bench_function("catalog_load", |b| {
        let dir = dir();
        b.iter(|| {
            let c = Catalog::load(&dir).unwrap();
            assert_eq!(c.segments.len(), 10_000);
        })
    });
    g.bench_function("open_and_first_event", |b| {
        let dir = dir();
        b.iter(|| {
            let a = Archive::open(&dir).unwrap();
            let first = a.scan().next().unwrap().unwrap();
            let row = first.rows().next().unwrap();
            assert!(!row.is_empty());
        })
    });
    g.bench_function("lookup_last_event", |b| {
        let a = Archive::open(dir()).unwrap();
        b.iter(|| {
            let e = a.get(10_000 * 16 - 1).unwrap().unwrap();
            assert_eq!(e.len(), 1);
        })
    });
    g.finish();
}

criterion_group!(benches, segment_building, archive_open);
criterion_main!(benches);
