//! The query language on arbitrary text: `Query::parse_at` (lexer, parser, literals, static
//! checks), then binding to a schema with a field of every type and evaluating the program on
//! two rows (one with values, one all unset); every error must render.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use weir::unstable::query::Query;
use weir::unstable::value::{encode_row, Value};
use weir::unstable::{Field, Schema, Type};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // A fixed "now", so that runs are reproducible.
    let query = match Query::parse_at(text, 1_258_531_221_000_000_000) {
        Ok(q) => q,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let fields = vec![
        Field::new("ts", Type::Time),
        Field::new("uid", Type::String),
        Field::new("id.orig_h", Type::Addr),
        Field::new("id.orig_p", Type::Port),
        Field::new("proto", Type::Enum),
        Field::new("duration", Type::Interval),
        Field::new("orig_bytes", Type::Count),
        Field::new("delta", Type::Int),
        Field::new("ratio", Type::Double),
        Field::new("local", Type::Bool),
        Field::new("net", Type::Subnet),
        Field::new("answers", Type::Vector(Box::new(Type::String))),
        Field::new("tags", Type::Set(Box::new(Type::Addr))),
    ];
    let schema = Arc::new(Schema::new("zeek.conn", fields));
    if let Err(e) = query.check_types(std::slice::from_ref(&schema)) {
        let _ = e.to_string();
    }
    let program = query.bind(&schema);
    let full = [
        Value::Time(1_258_531_221_486_539_000),
        Value::String(b"Pii6cUUq1v4".to_vec()),
        Value::Addr("192.168.1.102".parse().unwrap()),
        Value::Port(53),
        Value::String(b"udp".to_vec()),
        Value::Interval(1_500_000_000),
        Value::Count(1_000),
        Value::Int(-5),
        Value::Double(f64::NAN),
        Value::Bool(true),
        Value::Subnet("10.0.0.0".parse().unwrap(), 8),
        Value::List(vec![Value::String(b"ns1.example".to_vec())]),
        Value::List(vec![]),
    ];
    let unset: Vec<Value> = full.iter().map(|_| Value::Null).collect();
    for row in [&full[..], &unset[..]] {
        let mut buf = Vec::new();
        encode_row(row, &mut buf);
        let _ = program.matches(&buf);
    }
});
