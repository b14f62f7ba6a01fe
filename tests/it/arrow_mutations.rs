//! Damaged Arrow IPC and Parquet input: every truncation and 1000 random byte changes of a
//! valid file are read to an error or to batches, never a panic or a hang.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::events::{batch_of, s, ty};
use weir::unstable::codec::arrow::{ArrowIpcDecoder, ArrowIpcWriter, ParquetDecoder};
use weir::unstable::codec::writer::EventWriter;
use weir::unstable::codec::{decode_chunks, ParquetSinkConfig, ReaderOptions};
use weir::unstable::types::{Field, Schema};
use weir::unstable::value::Value;

fn sample() -> weir::unstable::batch::Batch {
    let schema = Schema::new(
        "zeek.m",
        vec![
            Field::new("ts", ty("time")),
            Field::new("s", ty("string")),
            Field::new("a", ty("addr")),
            Field::new("v", ty("vector[count]")),
            Field::new("p", ty("port")),
        ],
    )
    .into_shared();
    let rows: Vec<Vec<Value>> = (0..50)
        .map(|i| {
            vec![
                Value::Time(1_258_531_221_000_000_000 + i),
                s(format!("row{i}").as_bytes()),
                Value::Addr(common::events::addr("10.0.0.1")),
                Value::List(vec![Value::Count(i as u64), Value::Null]),
                if i % 3 == 0 {
                    Value::Null
                } else {
                    Value::Port(i as u64)
                },
            ]
        })
        .collect();
    batch_of(&schema, &rows)
}

/// Mutations of `good`: every truncation, then byte changes from a fixed seed.
fn mutations(good: &[u8], count: usize) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = (0..good.len()).map(|n| good[..n].to_vec()).collect();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..count {
        let mut m = good.to_vec();
        for _ in 0..1 + next() % 4 {
            let at = (next() % m.len() as u64) as usize;
            m[at] = next() as u8;
        }
        out.push(m);
    }
    out
}

#[test]
fn damaged_arrow_streams_are_errors_not_panics() {
    let mut good = Vec::new();
    let mut w = ArrowIpcWriter::new();
    w.write_batch(&sample(), &mut good).unwrap();
    w.finish(&mut good);
    for m in mutations(&good, 1000) {
        let _ = decode_chunks(&mut ArrowIpcDecoder::new(ReaderOptions::new("m")), [&m]);
    }
}

#[test]
fn damaged_parquet_files_are_errors_not_panics() {
    let tmp = tempfile::tempdir().unwrap();
    let mut lake = ParquetSinkConfig::new(tmp.path()).writer().unwrap();
    let b = sample();
    lake.write_rows(b.schema(), b.rows()).unwrap();
    lake.close().unwrap();
    let path = tmp
        .path()
        .join("schema=zeek.m/day=2009-11-18/part-00000.parquet");
    let good = std::fs::read(path).unwrap();
    for m in mutations(&good, 1000) {
        let _ = decode_chunks(&mut ParquetDecoder::new(ReaderOptions::new("m")), [&m]);
    }
}
