//! The text writers write from Arrow record batches: rows become batches first, and the text
//! of every value is the same through every path (random rows of every Zeek type, with
//! unset values, empty containers, invalid UTF-8 and extreme numbers). Until the commit that
//! removed it, the first property compared every format with main's msgpack row walk.
#![allow(clippy::unwrap_used)]

use std::net::IpAddr;

use proptest::prelude::*;

use weir::unstable::codec::arrow::{record_batch_to_batches, ArrowBuilder};
use weir::unstable::codec::csv_writer::CsvWriter;
use weir::unstable::codec::json_writer::{JsonTimestamps, JsonWriter};
use weir::unstable::codec::table_writer::TableWriter;
use weir::unstable::codec::writer::{EventWriter, WriteError};
use weir::unstable::codec::zeek::tsv_writer::ZeekTsvWriter;
use weir::unstable::types::{Field, Schema, SchemaRef, Type};
use weir::unstable::value::{encode_row, Value};

/// 2014-05-23-18-02-04 UTC, for reproducible `#open`/`#close` lines.
fn clock() -> i64 {
    1_400_868_124_000_000_000
}

/// Every Zeek type, scalar and in containers.
const TYPES: &[&str] = &[
    "bool",
    "count",
    "int",
    "double",
    "time",
    "interval",
    "string",
    "addr",
    "subnet",
    "port",
    "enum",
    "pattern",
    "file",
    "set[bool]",
    "set[string]",
    "vector[count]",
    "vector[int]",
    "vector[double]",
    "vector[time]",
    "vector[interval]",
    "table[string]",
    "set[addr]",
    "set[subnet]",
    "set[port]",
    "set[enum]",
    "vector[file]",
    "vector[pattern]",
];

fn schema() -> SchemaRef {
    Schema::new(
        "zeek.every",
        TYPES
            .iter()
            .enumerate()
            .map(|(i, t)| Field::new(format!("f{i}.{t}"), Type::parse(t).unwrap()))
            .collect(),
    )
    .into_shared()
}

/// The writers compared, by name: every text format and its variants.
fn writers() -> Vec<(&'static str, Box<dyn EventWriter>)> {
    vec![
        ("zeek-tsv", Box::new(ZeekTsvWriter::with_clock(clock))),
        ("json", Box::new(JsonWriter::new())),
        (
            "json epoch",
            Box::new(JsonWriter::with_timestamps(JsonTimestamps::Epoch)),
        ),
        (
            "json millis",
            Box::new(JsonWriter::with_timestamps(JsonTimestamps::Millis)),
        ),
        ("csv", Box::new(CsvWriter::new())),
        ("table", Box::new(TableWriter::with_width(100))),
        ("wide table", Box::new(TableWriter::with_width(100_000))),
    ]
}

fn maybe(v: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Value> {
    prop_oneof![1 => Just(Value::Null), 6 => v].boxed()
}

fn bytes() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..12),
        "\\PC{0,6}".prop_map(String::into_bytes),
        proptest::sample::select(vec![
            b"-".to_vec(),
            b"(empty)".to_vec(),
            b",".to_vec(),
            b"a,b".to_vec(),
            b"\\".to_vec(),
            b"\\x41".to_vec(),
            b"\\xff".to_vec(),
            vec![0xff],
            vec![0xe2, 0x82],
            vec![0xed, 0xa0, 0x80],
            "é\u{9b}€".as_bytes().to_vec(),
            b"\t\n\r\x00\x1b\x7f".to_vec(),
            b"\"q\"".to_vec(),
            b"#".to_vec(),
            b"#x".to_vec(),
            Vec::new(),
        ]),
    ]
    .boxed()
}

fn int() -> BoxedStrategy<i64> {
    prop_oneof![
        any::<i64>(),
        proptest::sample::select(vec![0, 1, -1, i64::MIN, i64::MAX, 999_999, -999_999]),
        // Microseconds, as Zeek writes them.
        (-10_i64.pow(15)..10_i64.pow(15)).prop_map(|us| us * 1000),
    ]
    .boxed()
}

fn double() -> BoxedStrategy<f64> {
    prop_oneof![
        any::<f64>(),
        proptest::sample::select(vec![
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN_POSITIVE,
            1e21,
            1e-7,
            0.1,
        ]),
    ]
    .boxed()
}

fn ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(IpAddr::from),
        any::<[u8; 16]>().prop_map(IpAddr::from),
    ]
}

fn subnet() -> impl Strategy<Value = Value> {
    ip().prop_flat_map(|a| {
        let max: u8 = if a.is_ipv4() { 32 } else { 128 };
        (0..=max).prop_map(move |p| Value::Subnet(a, p))
    })
}

/// A set value of Zeek type `t` (a scalar type).
fn scalar(t: &str) -> BoxedStrategy<Value> {
    match t {
        "bool" => any::<bool>().prop_map(Value::Bool).boxed(),
        "count" => prop_oneof![any::<u64>(), Just(u64::MAX), Just(0)]
            .prop_map(Value::Count)
            .boxed(),
        "int" => int().prop_map(Value::Int).boxed(),
        "double" => double().prop_map(Value::Double).boxed(),
        "time" => int().prop_map(Value::Time).boxed(),
        "interval" => int().prop_map(Value::Interval).boxed(),
        "addr" => ip().prop_map(Value::Addr).boxed(),
        "subnet" => subnet().boxed(),
        "port" => any::<u16>().prop_map(|p| Value::Port(p.into())).boxed(),
        _ => bytes().prop_map(Value::String).boxed(),
    }
}

/// A value of Zeek type `t`, unset sometimes; containers empty, of unset elements, or of
/// empty strings sometimes.
fn value(t: &'static str) -> BoxedStrategy<Value> {
    match t.split_once('[') {
        None => maybe(scalar(t)),
        Some((_, inner)) => {
            let inner = inner.trim_end_matches(']');
            maybe(proptest::collection::vec(maybe(scalar(inner)), 0..4).prop_map(Value::List))
        }
    }
}

fn row() -> impl Strategy<Value = Vec<Value>> {
    TYPES.iter().map(|t| value(t)).collect::<Vec<_>>()
}

fn encode(rows: &[Vec<Value>]) -> Vec<Vec<u8>> {
    rows.iter()
        .map(|r| {
            let mut b = Vec::new();
            encode_row(r, &mut b);
            b
        })
        .collect()
}

/// The text of `rows` written with `w` in calls of `chunk` rows, then finished.
fn write_rows(
    w: &mut dyn EventWriter,
    schema: &SchemaRef,
    rows: &[Vec<u8>],
    chunk: usize,
) -> Vec<u8> {
    let mut out = Vec::new();
    for part in rows.chunks(chunk.max(1)) {
        w.write_rows(schema, &mut part.iter().map(|r| r.as_slice()), &mut out)
            .unwrap();
    }
    w.finish(&mut out);
    out
}

/// The Zeek TSV text of a value, by the rules of the TSV writer's docs: a small reference.
fn tsv_value(v: &Value, in_list: bool, out: &mut Vec<u8>) {
    fn hex(b: u8, out: &mut Vec<u8>) {
        out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
    }
    fn escaped(s: &[u8], in_list: bool, out: &mut Vec<u8>) {
        for &b in s {
            match b {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b',' if in_list => hex(b, out),
                0x20..0x7f => out.push(b),
                _ => hex(b, out),
            }
        }
    }
    fn seconds(ns: i64, out: &mut Vec<u8>) {
        let (abs, sign) = (ns.unsigned_abs(), if ns < 0 { "-" } else { "" });
        let mut frac = format!("{:09}", abs % 1_000_000_000);
        while frac.len() > 6 && frac.ends_with('0') {
            frac.pop();
        }
        out.extend_from_slice(format!("{sign}{}.{frac}", abs / 1_000_000_000).as_bytes());
    }
    match v {
        Value::Null => out.push(b'-'),
        Value::Bool(b) => out.push(if *b { b'T' } else { b'F' }),
        Value::Count(n) | Value::Port(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::Int(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::Double(d) if d.is_nan() => out.extend_from_slice(b"nan"),
        Value::Double(d) if d.is_infinite() => {
            out.extend_from_slice(if *d > 0.0 { b"inf" } else { b"-inf" })
        }
        Value::Double(d) => {
            let t = d.to_string();
            out.extend_from_slice(t.as_bytes());
            if !t.contains('.') {
                out.extend_from_slice(b".0");
            }
        }
        Value::Time(ns) | Value::Interval(ns) => seconds(*ns, out),
        Value::String(s) if s.is_empty() => {
            if !in_list {
                out.extend_from_slice(b"(empty)");
            }
        }
        Value::String(s) if s == b"-" || s == b"(empty)" => {
            hex(s[0], out);
            escaped(&s[1..], in_list, out);
        }
        Value::String(s) => escaped(s, in_list, out),
        Value::Addr(a) => out.extend_from_slice(a.to_string().as_bytes()),
        Value::Subnet(a, p) => out.extend_from_slice(format!("{a}/{p}").as_bytes()),
        Value::List(l) if l.is_empty() => out.extend_from_slice(b"(empty)"),
        Value::List(l) => {
            for (i, e) in l.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                tsv_value(e, true, out);
            }
        }
    }
}

/// The data lines of `rows` as Zeek TSV, by [`tsv_value`]; a line starting with `#` has it
/// as `\x23`.
fn tsv_lines(rows: &[Vec<Value>]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in rows {
        let start = out.len();
        for (i, v) in r.iter().enumerate() {
            if i > 0 {
                out.push(b'\t');
            }
            tsv_value(v, false, &mut out);
        }
        if out.get(start) == Some(&b'#') {
            out.splice(start..start + 1, *b"\\x23");
        }
        out.push(b'\n');
    }
    out
}

/// A fresh writer of the name of [`writers`].
fn fresh_writer(name: &str) -> Box<dyn EventWriter> {
    writers().into_iter().find(|(n, _)| *n == name).unwrap().1
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Rows written through record batches give the Zeek TSV text of a small reference, and
    /// the other formats the same text whether written in one call or in several.
    #[test]
    fn batches_give_the_text_of_a_reference(
        rows in proptest::collection::vec(row(), 1..6),
        chunk in 1usize..4,
    ) {
        let schema = schema();
        let encoded = encode(&rows);
        let mut w = ZeekTsvWriter::with_clock(clock);
        let text = write_rows(&mut w, &schema, &encoded, encoded.len());
        let data: Vec<u8> = text
            .split_inclusive(|&b| b == b'\n')
            .filter(|l| l.first() != Some(&b'#'))
            .flatten()
            .copied()
            .collect();
        let want = tsv_lines(&rows);
        prop_assert_eq!(String::from_utf8_lossy(&data), String::from_utf8_lossy(&want));
        prop_assert_eq!(data, want);
        for (name, mut w) in writers() {
            let chunked = write_rows(w.as_mut(), &schema, &encoded, chunk);
            let whole = write_rows(fresh_writer(name).as_mut(), &schema, &encoded, encoded.len());
            prop_assert_eq!(chunked, whole, "{}", name);
        }
    }

    /// A batch as the lake and Arrow IPC hold it (`arrow_schema`: strings as UTF-8 text,
    /// intervals as seconds) written directly gives the text of its rows as the Arrow reader
    /// reads them back, written as rows.
    #[test]
    fn interchange_batches_give_the_text_of_their_rows(
        rows in proptest::collection::vec(row(), 1..6),
    ) {
        let schema = schema();
        let mut builder = ArrowBuilder::new(schema.clone());
        for r in encode(&rows) {
            builder.append(&r).unwrap();
        }
        let batch = builder.finish().unwrap();
        let read = record_batch_to_batches(&batch, &schema, 1 << 20).unwrap();
        for (name, mut w) in writers() {
            let mut direct = Vec::new();
            w.write_record_batch(&schema, &batch, &mut direct).unwrap();
            w.finish(&mut direct);
            let mut via_rows = Vec::new();
            let mut w = fresh_writer(name);
            for b in &read {
                w.write_batch(b, &mut via_rows).unwrap();
            }
            w.finish(&mut via_rows);
            prop_assert_eq!(
                String::from_utf8_lossy(&direct),
                String::from_utf8_lossy(&via_rows),
                "{}", name
            );
        }
    }
}

/// A batch whose columns do not hold the schema's types is refused before anything is
/// written, naming the field.
#[test]
fn a_batch_of_other_types_is_refused_naming_the_field() {
    let schema = schema();
    let other = Schema::new(
        "zeek.every",
        schema
            .fields
            .iter()
            .map(|f| Field::new(f.name.clone(), Type::Count))
            .collect(),
    )
    .into_shared();
    let mut builder = ArrowBuilder::new(other.clone());
    let row: Vec<Value> = other.fields.iter().map(|_| Value::Count(1)).collect();
    builder.append(&encode(&[row])[0]).unwrap();
    let batch = builder.finish().unwrap();
    for (name, mut w) in writers() {
        let mut out = Vec::new();
        let e = w.write_record_batch(&schema, &batch, &mut out).unwrap_err();
        assert!(matches!(e, WriteError::Column { .. }), "{name}: {e}");
        let text = e.to_string();
        assert!(
            text.contains("f0.bool") && text.contains("zeek.every"),
            "{name}: {text}"
        );
        assert!(out.is_empty(), "{name}");
    }
    // And a batch of fewer columns.
    let one = Schema::new("zeek.one", vec![Field::new("n", Type::Count)]).into_shared();
    let mut builder = ArrowBuilder::new(one);
    builder
        .append(&encode(&[vec![Value::Count(1)]])[0])
        .unwrap();
    let batch = builder.finish().unwrap();
    let e = JsonWriter::new()
        .write_record_batch(&schema, &batch, &mut Vec::new())
        .unwrap_err();
    assert!(e.to_string().contains("1 columns for 27 fields"), "{e}");
}
