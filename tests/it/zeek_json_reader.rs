//! The Zeek JSON reader: type inference, schemas, chunking, errors, and the real zeek.json.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::sync::Arc;

use bytes::BytesMut;
use futures::StreamExt;
use proptest::prelude::*;
use tokio_util::codec::{Decoder, FramedRead};
use weir::unstable::batch::Batch;
use weir::unstable::codec::writer::{writer_for, OutputFormat};
use weir::unstable::codec::zeek::json::{read_all, JsonDecoder};
use weir::unstable::codec::ReaderOptions;
use weir::unstable::error::{OnError, ReadError};
use weir::unstable::types::Type;
use weir::unstable::value::Value;

use common::events::{addr, events};

fn fixture(name: &str) -> Vec<u8> {
    let p = common::fixture("json").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn opts() -> ReaderOptions {
    ReaderOptions::new("test.json")
}

/// Type inference only: no Zeek log schema types `conn`, `dns`, ... (tests of inference).
fn untyped() -> ReaderOptions {
    ReaderOptions {
        zeek_schemas: None,
        ..opts()
    }
}

fn s(v: &str) -> Value {
    Value::String(v.as_bytes().to_vec())
}

#[test]
fn infers_every_type_and_flattens() {
    let (batches, report) = read_all(&fixture("types.jsonl"), untyped()).unwrap();
    assert_eq!(report.skipped, 0);
    // Line 2 has `ttls` as vector[count] (line 1: vector[int]): a new schema.
    assert_eq!(batches.len(), 2);
    let schema = batches[0].schema();
    assert_eq!(schema.name, "zeek.conn");
    let fields: Vec<String> = schema
        .fields
        .iter()
        .map(|f| format!("{}:{}", f.name, f.ty))
        .collect();
    assert_eq!(
        fields,
        [
            "ts:time",
            "uid:string",
            "id.orig_h:addr",
            // Zeek's field conventions: `*_p` are ports, `duration` an interval.
            "id.orig_p:port",
            "id.resp_h:addr",
            "id.resp_p:port",
            "proto:string",
            "duration:interval",
            "neg:int",
            "big:count",
            "huger:double",
            "ok:bool",
            "net:subnet",
            "seen:time",
            "tags:vector[string]",
            "ttls:vector[int]",
            "mix:vector[string]",
            "empty:vector[string]",
            "gone:string",
            "esc:string",
        ]
    );
    let row = &batches[0].to_values().unwrap()[0];
    assert_eq!(row[0], Value::Time(1_258_531_221_486_539_000));
    assert_eq!(row[2], Value::Addr(addr("192.168.1.102")));
    assert_eq!(row[4], Value::Addr(addr("2001:db8::1")));
    assert_eq!(row[5], Value::Port(67));
    assert_eq!(row[7], Value::Interval(163_820_000));
    assert_eq!(row[8], Value::Int(-7));
    assert_eq!(row[9], Value::Count(u64::MAX));
    assert_eq!(row[10], Value::Double(18446744073709551616.0));
    assert_eq!(row[11], Value::Bool(true));
    assert_eq!(row[12], Value::Subnet(addr("10.0.0.0"), 8));
    assert_eq!(row[13], Value::Time(1_258_531_221_486_539_000));
    assert_eq!(row[14], Value::List(vec![s("a"), s("b")]));
    assert_eq!(row[15], Value::List(vec![Value::Int(1), Value::Int(-2)]));
    assert_eq!(
        row[16],
        Value::List(vec![s("1"), s("x"), s("true"), Value::Null, s("{\"k\":1}")])
    );
    assert_eq!(row[17], Value::List(vec![]));
    assert_eq!(row[18], Value::Null);
    assert_eq!(
        row[19],
        Value::String("tab\there \"q\" \\ é 😀 \\xff".as_bytes().to_vec())
    );
    assert_eq!(
        batches[0].ts_range(),
        Some((1_258_531_221_486_539_000, 1_258_531_221_486_539_000))
    );

    let row = &batches[1].to_values().unwrap()[0];
    let t2 = &batches[1].schema().fields;
    assert_eq!(t2[15].ty, Type::parse("vector[count]").unwrap());
    assert_eq!(row[0], Value::Time(1_258_531_222_000_000_000));
    assert_eq!(row[10], Value::Double(2.5));
    assert_eq!(row[12], Value::Subnet(addr("2001:db8::"), 32));
    // 09:00:21+01:00 is 08:00:21Z.
    assert_eq!(row[13], Value::Time(1_258_531_221_000_000_000));
    // An empty array takes the previous schema's type for the field.
    assert_eq!(row[14], Value::List(vec![]));
    assert_eq!(row[19], s("-"));
}

#[test]
fn null_and_empty_arrays_keep_the_previous_schema() {
    let input = br#"{"_path":"x","a":1,"v":[1.5],"s":"q"}
{"_path":"x","a":null,"v":[],"s":null}
{"_path":"x","a":3,"v":[null],"s":"r"}
"#;
    let (batches, _) = read_all(input, opts()).unwrap();
    assert_eq!(batches.len(), 1, "nulls must not start a new schema");
    let rows = batches[0].to_values().unwrap();
    assert_eq!(rows[1], vec![Value::Null, Value::List(vec![]), Value::Null]);
    assert_eq!(
        rows[2],
        vec![Value::Count(3), Value::List(vec![Value::Null]), s("r")]
    );
    assert_eq!(
        batches[0].schema().fields[1].ty,
        Type::parse("vector[double]").unwrap()
    );
}

#[test]
fn interleaved_paths_switch_schemas_and_share_them() {
    let (batches, _) = read_all(&fixture("mixed_crlf_nofinal.jsonl"), untyped()).unwrap();
    let names: Vec<&str> = batches.iter().map(|b| b.schema().name.as_str()).collect();
    assert_eq!(names, ["zeek.dns", "zeek.conn", "zeek.json", "zeek.dns"]);
    // The same schema seen again is the same Arc.
    assert!(Arc::ptr_eq(batches[0].schema(), batches[3].schema()));
    // CRLF stripped, last line without newline read, empty lines ignored.
    assert_eq!(batches[0].to_values().unwrap()[0][1], s("a"));
    assert_eq!(batches[3].to_values().unwrap()[0][1], s("d"));
    // `_write_ts` is an ordinary field; no `_path` gives the default schema.
    let json = batches[2].schema();
    assert_eq!(json.fields[2].name, "_write_ts");
    assert_eq!(json.fields[2].ty, Type::Time);
    let mut o = opts();
    o.json_default_schema = "zeek.other".into();
    let (batches, _) = read_all(&fixture("mixed_crlf_nofinal.jsonl"), o).unwrap();
    assert_eq!(batches[2].schema().name, "zeek.other");
}

#[test]
fn a_byte_order_mark_is_ignored_on_the_first_line_only() {
    let (batches, _) = read_all(b"\xef\xbb\xbf{\"a\":1}\n", opts()).unwrap();
    assert_eq!(batches[0].to_values().unwrap(), vec![vec![Value::Count(1)]]);
    let err = read_all(b"{\"a\":1}\n\xef\xbb\xbf{\"a\":1}\n", opts()).unwrap_err();
    assert!(
        err.to_string().starts_with("test.json:2: invalid JSON"),
        "{err}"
    );
}

#[test]
fn a_second_path_is_an_error() {
    let err = read_all(b"{\"_path\":\"a\",\"x\":1,\"_path\":\"b\"}\n", opts()).unwrap_err();
    assert!(err.to_string().contains("duplicate key \"_path\""), "{err}");
}

#[test]
fn batches_are_cut_at_batch_rows() {
    let mut input = Vec::new();
    for i in 0..10 {
        input.extend_from_slice(format!("{{\"ts\":{i}.5,\"n\":{i}}}\n").as_bytes());
    }
    let mut o = opts();
    o.batch_rows = 4;
    let (batches, _) = read_all(&input, o).unwrap();
    let sizes: Vec<usize> = batches.iter().map(Batch::len).collect();
    assert_eq!(sizes, [4, 4, 2]);
    assert_eq!(batches[1].ts_range(), Some((4_500_000_000, 7_500_000_000)));
}

#[test]
fn bad_lines_fail_naming_source_and_line() {
    let err = read_all(&fixture("errors.jsonl"), opts()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("test.json:2: invalid JSON"), "{msg}");
    assert!(msg.contains("expected ',' or '}'"), "{msg}");
    match err {
        ReadError::Parse(e) => assert_eq!(e.line, 2),
        other => panic!("{other}"),
    }
}

#[test]
fn fail_emits_the_events_before_the_bad_line_first() {
    let mut dec = JsonDecoder::new(opts());
    let mut buf = BytesMut::from(&fixture("errors.jsonl")[..]);
    let first = dec.decode(&mut buf).unwrap().expect("the good first line");
    assert_eq!(first.to_values().unwrap(), vec![vec![Value::Count(1)]]);
    let err = dec.decode(&mut buf).unwrap_err();
    assert!(err.to_string().starts_with("test.json:2: "), "{err}");
}

#[test]
fn skip_drops_bad_lines_and_reports_them() {
    let mut o = opts();
    o.on_error = OnError::Skip;
    let (batches, report) = read_all(&fixture("errors.jsonl"), o).unwrap();
    let a: Vec<Value> = events(&batches)
        .into_iter()
        .map(|e| e.2[0].clone())
        .collect();
    assert_eq!(a, [Value::Count(1), Value::Count(3), Value::Count(7)]);
    assert_eq!(report.skipped, 5);
    let lines: Vec<u64> = report.first.iter().map(|e| e.line).collect();
    assert_eq!(lines, [2, 3, 5, 6, 7]);
    assert!(report.first[1].message.contains("not a JSON object"));
    assert!(report.first[2].message.contains("_path is not a string"));
    assert!(report.first[3].message.contains("duplicate key"));
    assert_eq!(report.first[3].field.as_deref(), Some("a"));
    assert!(report.first[4].message.contains("surrogate"));
}

#[test]
fn overlong_lines_are_rejected_without_buffering() {
    let long = format!("{{\"a\":\"{}\"}}", "x".repeat(200));
    let input = format!("{{\"a\":\"1\"}}\n{long}\n{{\"a\":\"2\"}}\n");
    let mut o = opts();
    o.max_line_len = 100;
    let err = read_all(input.as_bytes(), o.clone())
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "test.json:2: line longer than the maximum of 100 bytes"
    );

    // Fed in 16-byte chunks, the decoder never holds much more than the limit.
    o.on_error = OnError::Skip;
    let mut dec = JsonDecoder::new(o);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in input.as_bytes().chunks(16) {
        buf.extend_from_slice(chunk);
        while let Some(b) = dec.decode(&mut buf).unwrap() {
            out.push(b);
        }
        assert!(buf.len() <= 100 + 16, "buffered {}", buf.len());
    }
    while let Some(b) = dec.decode_eof(&mut buf).unwrap() {
        out.push(b);
    }
    let a: Vec<Value> = events(&out).into_iter().map(|e| e.2[0].clone()).collect();
    assert_eq!(a, [s("1"), s("2")]);
    assert_eq!(dec.skip_report().skipped, 1);
    assert_eq!(dec.skip_report().first[0].line, 2);
    assert_eq!(dec.lines(), 3);
}

fn decode_chunked(input: &[u8], cuts: &[usize], o: ReaderOptions) -> Result<Vec<Batch>, String> {
    let mut dec = JsonDecoder::new(o);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut at = 0;
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    bounds.sort_unstable();
    bounds.push(input.len());
    for end in bounds {
        buf.extend_from_slice(&input[at..end.max(at)]);
        at = end.max(at);
        while let Some(b) = dec.decode(&mut buf).map_err(|e| e.to_string())? {
            out.push(b);
        }
    }
    while let Some(b) = dec.decode_eof(&mut buf).map_err(|e| e.to_string())? {
        out.push(b);
    }
    Ok(out)
}

fn all_fixtures() -> Vec<u8> {
    let mut all = fixture("types.jsonl");
    all.extend(fixture("mixed_crlf_nofinal.jsonl"));
    all.push(b'\n');
    all.extend(fixture("errors.jsonl"));
    all
}

#[test]
fn one_byte_chunks_give_the_same_events() {
    let input = all_fixtures();
    let mut o = opts();
    o.on_error = OnError::Skip;
    o.batch_rows = 3;
    let whole = decode_chunked(&input, &[], o.clone()).unwrap();
    let cuts: Vec<usize> = (1..input.len()).collect();
    let bytes = decode_chunked(&input, &cuts, o).unwrap();
    assert_eq!(events(&whole), events(&bytes));
    assert_eq!(events(&whole).len(), 9);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn chunking_does_not_change_events(cuts in proptest::collection::vec(0usize..4000, 0..40),
                                       batch_rows in 1usize..6) {
        let input = all_fixtures();
        let mut o = opts();
        o.on_error = OnError::Skip;
        o.batch_rows = batch_rows;
        let whole = decode_chunked(&input, &[], o.clone()).unwrap();
        let chunked = decode_chunked(&input, &cuts, o).unwrap();
        prop_assert_eq!(events(&whole), events(&chunked));
        prop_assert!(chunked.iter().all(|b| !b.is_empty() && b.len() <= batch_rows));
    }
}

#[tokio::test]
async fn drives_from_async_read_with_framed_read() {
    let input = fixture("mixed_crlf_nofinal.jsonl");
    let mut framed = FramedRead::with_capacity(&input[..], JsonDecoder::new(opts()), 7);
    let mut got = Vec::new();
    while let Some(b) = framed.next().await {
        got.push(b.unwrap());
    }
    let (whole, _) = read_all(&input, opts()).unwrap();
    assert_eq!(events(&got), events(&whole));
}

#[test]
fn corpus_zeek_json_round_trips_through_the_json_writer() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    let orig = dir.join("zeek.json");
    let input = std::fs::read(&orig).unwrap();
    let (batches, report) =
        read_all(&input, ReaderOptions::new(orig.display().to_string())).unwrap();
    assert_eq!(report.skipped, 0);
    let n: usize = batches.iter().map(Batch::len).sum();
    assert_eq!(
        n,
        input
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count()
    );
    // Times are inferred from RFC 3339 strings (`ts`, `_write_ts`); one line has none.
    let timed = batches
        .iter()
        .filter(|b| b.schema().fields.iter().any(|f| f.ty == Type::Time))
        .count();
    assert_eq!(timed, batches.len() - 1);

    let mut w = writer_for(OutputFormat::Json);
    let mut out = Vec::new();
    for b in &batches {
        w.write_batch(b, &mut out).unwrap();
    }
    w.finish(&mut out);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("out.jsonl");
    std::fs::write(&path, &out).unwrap();
    let Some((status, report)) = common::zeekref::check(&[
        "compare-jj",
        orig.to_str().unwrap(),
        "--",
        path.to_str().unwrap(),
    ]) else {
        return;
    };
    assert!(status, "zeekref compare-jj reported a mismatch:\n{report}");
}

fn read_with(dec: JsonDecoder, input: &[u8]) -> Vec<Batch> {
    let mut dec = dec;
    let mut buf = BytesMut::from(input);
    let mut out = Vec::new();
    while let Some(b) = dec.decode(&mut buf).unwrap() {
        out.push(b);
    }
    while let Some(b) = dec.decode_eof(&mut buf).unwrap() {
        out.push(b);
    }
    out
}

#[test]
fn omitted_fields_start_new_schemas_unless_absent_as_unset() {
    let input = br#"{"_path":"conn","ts":1.0,"uid":"a","service":"dns","duration":0.5}
{"_path":"conn","ts":2.0,"uid":"b","duration":0.25}
{"_path":"conn","ts":3.0,"uid":"c"}
{"_path":"dns","ts":3.5,"q":"x"}
{"_path":"conn","ts":4.0,"uid":"d","service":"http"}
{"_path":"conn","ts":5.0,"service":"http","uid":"e"}
"#;
    let strict = read_with(JsonDecoder::new(untyped()), input);
    assert_eq!(strict.len(), 6, "every key set is a schema by default");

    let folded = read_with(JsonDecoder::new(untyped()).absent_as_unset(true), input);
    let names: Vec<&str> = folded.iter().map(|b| b.schema().name.as_str()).collect();
    // The last line has its keys in another order: a schema of its own.
    assert_eq!(names, ["zeek.conn", "zeek.dns", "zeek.conn", "zeek.conn"]);
    assert!(Arc::ptr_eq(folded[0].schema(), folded[2].schema()));
    let rows: Vec<Vec<Value>> = folded[0]
        .to_values()
        .unwrap()
        .into_iter()
        .chain(folded[2].to_values().unwrap())
        .collect();
    let t = |s: i64| Value::Time(s * 1_000_000_000);
    assert_eq!(
        rows,
        [
            vec![t(1), s("a"), s("dns"), Value::Interval(500_000_000)],
            vec![t(2), s("b"), Value::Null, Value::Interval(250_000_000)],
            vec![t(3), s("c"), Value::Null, Value::Null],
            vec![t(4), s("d"), s("http"), Value::Null],
        ]
    );
    // Chunking still does not matter.
    let mut dec = JsonDecoder::new(untyped()).absent_as_unset(true);
    let mut buf = BytesMut::new();
    let mut bytewise = Vec::new();
    for &b in input.iter() {
        buf.extend_from_slice(&[b]);
        while let Some(x) = dec.decode(&mut buf).unwrap() {
            bytewise.push(x);
        }
    }
    while let Some(x) = dec.decode_eof(&mut buf).unwrap() {
        bytewise.push(x);
    }
    assert_eq!(events(&bytewise), events(&folded));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Arbitrary bytes (and arbitrary JSON-ish text) never panic, in either error mode.
    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300),
                            text in "[{}\\[\\]\":,0-9a-z.eE+\\-\\\\ \n]{0,200}") {
        for input in [&bytes[..], text.as_bytes()] {
            let _ = read_all(input, opts());
            let mut o = opts();
            o.on_error = OnError::Skip;
            o.max_line_len = 50;
            let (batches, report) = read_all(input, o).unwrap();
            let lines = input.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count() as u64;
            let n: u64 = batches.iter().map(|b| b.len() as u64).sum();
            prop_assert!(n + report.skipped <= lines);
        }
    }
}
