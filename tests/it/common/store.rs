//! For the storage tests: schemas and batches made with `BatchBuilder`, and archive contents.

use weir::unstable::batch::{Batch, BatchBuilder};
use weir::unstable::store::Archive;
use weir::unstable::types::{Field, Schema, SchemaRef, Type};
use weir::unstable::value::Value;

/// A schema `zeek.<name>` with a `ts` field and `extra` string/count fields.
pub fn schema(name: &str, extra: usize) -> SchemaRef {
    let mut fields = vec![
        Field::new("ts", Type::Time),
        Field::new("uid", Type::String),
    ];
    for i in 0..extra {
        let ty = match i % 4 {
            0 => Type::Count,
            1 => Type::String,
            2 => Type::Vector(Box::new(Type::String)),
            _ => Type::Addr,
        };
        fields.push(Field::new(format!("f{i}"), ty));
    }
    Schema::new(format!("zeek.{name}"), fields).into_shared()
}

/// A batch of `rows` rows; row `i` gets ts `seed + i` and strings of about `width` bytes.
pub fn batch(schema: &SchemaRef, rows: usize, width: usize, seed: u64) -> Batch {
    let mut b = BatchBuilder::new(schema.clone());
    for i in 0..rows {
        let n = seed.wrapping_mul(31).wrapping_add(i as u64);
        let ts = n as i64 * 1_000;
        let mut e = b.begin_row();
        e.int(ts);
        e.bytes(format!("C{n:x}").as_bytes());
        for (j, f) in schema.fields.iter().enumerate().skip(2) {
            match &f.ty {
                Type::Count => e.uint(n * j as u64),
                Type::String => {
                    let s: Vec<u8> = (0..width)
                        .map(|k| b'a' + ((n as usize + k + j) % 26) as u8)
                        .collect();
                    e.bytes(&s)
                }
                Type::Vector(_) => {
                    e.array(2);
                    e.bytes(b"x");
                    if n.is_multiple_of(3) {
                        e.null()
                    } else {
                        e.bytes(format!("{n}").as_bytes())
                    }
                }
                Type::Addr => e.addr(std::net::IpAddr::from([10, 0, (n >> 8) as u8, n as u8])),
                _ => e.null(),
            }
        }
        b.finish_row(Some(ts));
    }
    b.finish()
}

/// Every event of the archive as (id, schema name, values), by a full scan.
pub fn read_all(dir: &std::path::Path) -> Vec<(u64, String, Vec<Value>)> {
    let archive = Archive::open(dir).expect("open archive");
    let mut out = Vec::new();
    for b in archive.scan() {
        let b = b.expect("scan");
        let batch = b.to_batch();
        assert_eq!(batch.id(), b.first_id());
        for (i, row) in batch.to_values().expect("decode").into_iter().enumerate() {
            out.push((b.first_id() + i as u64, b.schema().name.clone(), row));
        }
    }
    out
}

/// The expected content for batches appended in order from ID 0.
pub fn expected(batches: &[Batch]) -> Vec<(u64, String, Vec<Value>)> {
    let mut out = Vec::new();
    let mut id = 0;
    for b in batches {
        for row in b.to_values().expect("decode") {
            out.push((id, b.schema().name.clone(), row));
            id += 1;
        }
    }
    out
}

/// Copies a database directory with its subdirectories (a crashed one, to test it twice).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}
