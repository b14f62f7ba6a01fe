//! Events of batches, for comparing event streams, and values and batches made by hand.

use std::net::IpAddr;

use weir::unstable::batch::Batch;
use weir::unstable::types::{SchemaRef, Type};
use weir::unstable::value::{encode_row, Value};

/// One event as (schema name, "name:type" fields, values), for comparing event streams.
pub type Event = (String, Vec<String>, Vec<Value>);

/// Every event of `batches`, in order.
pub fn events(batches: &[Batch]) -> Vec<Event> {
    let mut out = Vec::new();
    for b in batches {
        let fields: Vec<String> = b
            .schema()
            .fields
            .iter()
            .map(|f| format!("{}:{}", f.name, f.ty))
            .collect();
        for row in b.to_values().expect("rows decode") {
            out.push((b.schema().name.clone(), fields.clone(), row));
        }
    }
    out
}

/// The Zeek type named `t`.
pub fn ty(t: &str) -> Type {
    Type::parse(t).unwrap()
}

/// The address `a`.
pub fn addr(a: &str) -> IpAddr {
    a.parse().unwrap()
}

/// A string value of the bytes `v`.
pub fn s(v: &[u8]) -> Value {
    Value::String(v.to_vec())
}

/// A batch of `rows`, encoded as given (no checks against the schema).
pub fn batch_of(schema: &SchemaRef, rows: &[Vec<Value>]) -> Batch {
    let mut data = Vec::new();
    let mut offsets = Vec::new();
    for r in rows {
        offsets.push(data.len());
        encode_row(r, &mut data);
    }
    Batch::from_parts(schema.clone(), data, offsets, None).unwrap()
}
