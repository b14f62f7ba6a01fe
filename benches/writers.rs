//! Throughput of the Zeek TSV writer, the JSON lines writer and the Zeek JSON reader on
//! synthetic conn-like events (the 20 fields of conn.log, every third row with IPv6, many unset
//! values).
//!
//! The JSON reader is measured twice: by default every set of keys is a schema (the JSON writer,
//! like Zeek, omits unset fields, so lines switch between a few schemas), and with
//! `absent_as_unset`, where they fold into one.
//!
//! `cargo bench --bench writers`: throughput is in bytes of text (written or read); events/s is
//! that divided by the bytes per event, which the bench prints first.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use tokio_util::codec::Decoder;
use weir::unstable::batch::{Batch, BatchBuilder};
use weir::unstable::codec::writer::{writer_for, OutputFormat};
use weir::unstable::codec::zeek::json::{read_all, JsonDecoder};
use weir::unstable::codec::ReaderOptions;
use weir::unstable::types::{Field, Schema, SchemaRef, Type};

const EVENTS: usize = 20_000;
const PER_BATCH: usize = 1024;

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
            f("local_orig", "bool"),
            f("missed_bytes", "count"),
            f("history", "string"),
            f("orig_pkts", "count"),
            f("orig_ip_bytes", "count"),
            f("resp_pkts", "count"),
            f("resp_ip_bytes", "count"),
            f("tunnel_parents", "table[string]"),
        ],
    )
    .into_shared()
}

/// Deterministic pseudo-random numbers (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn batches() -> Vec<Batch> {
    let schema = conn_schema();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::new();
    let mut b = BatchBuilder::new(schema);
    let mut ts = 1_258_531_221_486_539_000i64;
    for i in 0..EVENTS {
        let r = rng.next();
        ts += (r % 1_000_000) as i64 * 1000;
        let mut e = b.begin_row();
        e.int(ts);
        let uid: Vec<u8> = (0..11)
            .map(|k| {
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                    [((r >> (k * 5)) % 62) as usize]
            })
            .collect();
        e.bytes(&uid);
        let v6 = i % 3 == 0;
        let addr = |x: u64| -> IpAddr {
            if v6 {
                IpAddr::V6(Ipv6Addr::new(
                    0xfe80,
                    0,
                    0,
                    0,
                    0x219,
                    0xe3ff,
                    (x >> 16) as u16,
                    x as u16,
                ))
            } else {
                IpAddr::V4(Ipv4Addr::new(192, 168, (x >> 8) as u8, x as u8))
            }
        };
        e.addr(addr(r >> 20));
        e.uint(r % 65536);
        e.addr(addr(r >> 36));
        e.uint([80, 443, 53, 22][(r % 4) as usize]);
        e.bytes(if r.is_multiple_of(5) { b"udp" } else { b"tcp" });
        if r.is_multiple_of(2) {
            e.bytes(b"http");
        } else {
            e.null();
        }
        if r.is_multiple_of(7) {
            e.null();
        } else {
            e.int((r % 100_000_000_000) as i64);
        }
        e.uint(r % 100_000);
        e.uint(r % 3_000_000);
        e.bytes(b"SF");
        e.null();
        e.uint(0);
        e.bytes(b"ShADadfF");
        e.uint(r % 100);
        e.uint(r % 10_000);
        e.uint(r % 90);
        e.uint(r % 100_000);
        e.array(0);
        b.finish_row(Some(ts));
        if b.len() == PER_BATCH {
            out.push(b.finish());
        }
    }
    if !b.is_empty() {
        out.push(b.finish());
    }
    out
}

fn write_all(format: OutputFormat, batches: &[Batch], out: &mut Vec<u8>) {
    let mut w = writer_for(format);
    for b in batches {
        w.write_batch(b, out).expect("synthetic rows decode");
    }
    w.finish(out);
}

fn bench(c: &mut Criterion) {
    let batches = batches();
    let mut g = c.benchmark_group("writers");
    g.sample_size(20);
    for (name, format) in [
        ("zeek_tsv", OutputFormat::ZeekTsv),
        ("json", OutputFormat::Json),
        ("csv", OutputFormat::Csv),
        ("table", OutputFormat::Table),
    ] {
        let mut sample = Vec::new();
        write_all(format, &batches, &mut sample);
        eprintln!(
            "{name}: {EVENTS} events, {} bytes, {:.1} bytes/event",
            sample.len(),
            sample.len() as f64 / EVENTS as f64
        );
        g.throughput(Throughput::Bytes(sample.len() as u64));
        let mut out = Vec::with_capacity(sample.len() + 4096);
        g.bench_function(format!("write_{name}"), |bch| {
            bch.iter(|| {
                out.clear();
                write_all(format, &batches, &mut out);
                out.len()
            })
        });
    }
    let mut json = Vec::new();
    write_all(OutputFormat::Json, &batches, &mut json);
    g.throughput(Throughput::Bytes(json.len() as u64));
    // Inference only, as before typed Zeek JSON; `read_zeek_json_typed` below reads the same
    // text in the shipped conn schema (the default).
    g.bench_function("read_zeek_json", |bch| {
        bch.iter_batched(
            || ReaderOptions {
                zeek_schemas: None,
                ..ReaderOptions::new("bench")
            },
            |opts| {
                let (b, _) = read_all(&json, opts).expect("valid JSON");
                b.len()
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("read_zeek_json_typed", |bch| {
        bch.iter_batched(
            || ReaderOptions::new("bench"),
            |opts| {
                let (b, _) = read_all(&json, opts).expect("valid JSON");
                b.len()
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("read_zeek_json_absent_as_unset", |bch| {
        bch.iter(|| {
            let untyped = ReaderOptions {
                zeek_schemas: None,
                ..ReaderOptions::new("bench")
            };
            let mut dec = JsonDecoder::new(untyped).absent_as_unset(true);
            let mut buf = BytesMut::from(&json[..]);
            let mut n = 0;
            while let Some(b) = dec.decode_eof(&mut buf).expect("valid JSON") {
                n += b.len();
            }
            n
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
