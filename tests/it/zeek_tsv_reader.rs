//! The Zeek TSV reader against hand-written fixtures, the real corpus and the reference reader.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use bytes::BytesMut;
use proptest::prelude::*;
use tokio_util::codec::Decoder;
use weir::unstable::batch::Batch;
use weir::unstable::codec::zeek::tsv::{read_all, TsvDecoder};
use weir::unstable::codec::ReaderOptions;
use weir::unstable::error::{OnError, ReadError};
use weir::unstable::types::{SchemaRef, Type};
use weir::unstable::value::Value;

use common::fixture;

fn opts(name: &str) -> ReaderOptions {
    ReaderOptions::new(name)
}

/// Rows with their schemas, in order.
type Rows = Vec<(SchemaRef, Vec<Value>)>;

/// Every row with its schema, in order.
fn rows(batches: &[Batch]) -> Rows {
    let mut out = Vec::new();
    for b in batches {
        for r in b.to_values().expect("rows decode") {
            out.push((b.schema().clone(), r));
        }
    }
    out
}

fn read_fixture(name: &str) -> Rows {
    let bytes = std::fs::read(fixture(name)).unwrap();
    let (batches, skipped) = read_all(&bytes, opts(name)).unwrap();
    assert_eq!(skipped.skipped, 0);
    rows(&batches)
}

fn s(v: &[u8]) -> Value {
    Value::String(v.to_vec())
}

fn addr(a: &str) -> Value {
    Value::Addr(a.parse().unwrap())
}

fn list(v: Vec<Value>) -> Value {
    Value::List(v)
}

fn parse_error(bytes: &[u8], name: &str) -> String {
    match read_all(bytes, opts(name)) {
        Err(ReadError::Parse(e)) => e.to_string(),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn every_type_with_unset_and_empty() {
    let rows = read_fixture("all_types.log");
    assert_eq!(rows.len(), 4);
    let schema = &rows[0].0;
    assert_eq!(schema.name, "zeek.types");
    assert_eq!(schema.fields.len(), 26);
    assert_eq!(schema.fields[13].ty, Type::parse("set[bool]").unwrap());
    let r = &rows[0].1;
    let want = vec![
        Value::Bool(true),
        Value::Count(u64::MAX),
        Value::Int(i64::MIN),
        Value::Double(3.25),
        Value::Time(1_258_531_221_486_539_000),
        Value::Interval(-1_000),
        s(b"hello world"),
        addr("192.168.1.102"),
        Value::Subnet("10.0.0.0".parse().unwrap(), 8),
        Value::Port(443),
        s(b"udp"),
        s(b"^a.*b$"),
        s(b"/tmp/x.bin"),
        list(vec![Value::Bool(true), Value::Bool(false), Value::Null]),
        list(vec![Value::Count(1), Value::Count(2), Value::Count(3)]),
        list(vec![Value::Int(-1), Value::Int(0), Value::Int(1)]),
        list(vec![
            Value::Double(f64::INFINITY),
            Value::Double(f64::NEG_INFINITY),
            Value::Double(f64::NAN),
            Value::Double(1e300),
        ]),
        list(vec![Value::Time(1_500_000_000), Value::Null]),
        list(vec![
            Value::Interval(1_000),
            Value::Interval(-2_500_000_000),
        ]),
        list(vec![s(b"a"), s(b"b c"), s(b"d=e")]),
        list(vec![addr("::1"), addr("10.1.2.3")]),
        list(vec![
            Value::Subnet("2001:db8::".parse().unwrap(), 32),
            Value::Subnet("192.168.0.0".parse().unwrap(), 16),
        ]),
        list(vec![Value::Port(80), Value::Port(443)]),
        list(vec![s(b"tcp"), s(b"udp")]),
        list(vec![s(b"/a"), s(b"/b")]),
        list(vec![s(b"x+"), s(b"y*")]),
    ];
    assert_eq!(r, &want);
    // All unset.
    assert!(rows[1].1.iter().all(|v| *v == Value::Null));
    // (empty): empty strings for string-like types, empty containers.
    let r = &rows[2].1;
    assert_eq!(r[3], Value::Double(-0.5));
    assert_eq!(r[5], Value::Interval(86_400_000_000_000));
    assert_eq!(r[6], s(b""));
    assert_eq!(r[7], addr("2001:db8::ff00:42:8329"));
    assert_eq!(r[8], Value::Subnet("2001:db8::".parse().unwrap(), 48));
    for v in &r[10..13] {
        assert_eq!(*v, s(b""));
    }
    for v in &r[13..] {
        assert_eq!(*v, list(vec![]));
    }
    // Very long integral double, `+7`, an empty raw string, markers only as whole values.
    let r = &rows[3].1;
    assert_eq!(r[2], Value::Int(7));
    assert_eq!(r[3], Value::Double(123456789012345678901234567890.0));
    assert_eq!(r[4], Value::Time(-1_500_000_000));
    assert_eq!(r[6], s(b""));
    assert_eq!(r[10], s(b"-x"));
    assert_eq!(r[11], s(b"--"));
    assert_eq!(r[12], s(b"(empty)x"));
}

#[test]
fn ts_range_comes_from_the_ts_field() {
    let bytes = std::fs::read(fixture("concat.log")).unwrap();
    let (batches, _) = read_all(&bytes, opts("concat.log")).unwrap();
    assert_eq!(batches[0].ts_range(), Some((1_000_000_000, 2_000_000_000)));
    let bytes = std::fs::read(fixture("all_types.log")).unwrap();
    let (batches, _) = read_all(&bytes, opts("all_types.log")).unwrap();
    // The schema's ts is `ts` (time); -1.5 and 0.0 and 1258531221.486539 are set, one row unset.
    assert_eq!(
        batches[0].ts_range(),
        Some((-1_500_000_000, 1_258_531_221_486_539_000))
    );
}

#[test]
fn every_escape_case() {
    let rows = read_fixture("escapes.log");
    let r: Vec<&Vec<Value>> = rows.iter().map(|(_, r)| r).collect();
    assert_eq!(
        r[0],
        &vec![
            s(br"back\slash"),
            list(vec![s(b"a,b"), s(b"c")]),
            Value::Count(42),
            addr("1.2.3.4"),
        ]
    );
    // A bare backslash before a comma is literal; an escaped dash is the string "-".
    assert_eq!(r[1][0], s(br"CN=foo\,O=bar"));
    assert_eq!(r[1][1], list(vec![s(b"-"), Value::Null]));
    assert_eq!(r[2][0], s(b"-"));
    assert_eq!(r[2][1], list(vec![s(b"(empty)")]));
    assert_eq!(r[3][0], s(b"\xff\xfe\x00\ttab"));
    assert_eq!(r[3][1], list(vec![s(br"x\"), s(br"\xzz")]));
    assert_eq!(r[4][0], s(b"trailing\\"));
    assert_eq!(r[4][1], list(vec![s(br"\\")]));
}

/// Regression: Zeek writes doubles, times and intervals at or above 2^31-1 in exponent form
/// (`%.16e`, trailing zeros stripped), negative times occur (NTP), and a data line starting
/// with `#` has it escaped as `\x23`. Such a file used to be refused (exponent) or lose
/// events (a raw `#` line is a comment).
#[test]
fn zeek_exponent_forms_negative_times_and_escaped_hash() {
    let rows = read_fixture("zeek_fidelity.log");
    let r: Vec<&Vec<Value>> = rows.iter().map(|(_, r)| r).collect();
    assert_eq!(
        r.len(),
        3,
        "the comment line is no event, the escaped ones are"
    );
    assert_eq!(
        r[0],
        &vec![
            s(b"#Kaputt"),
            Value::Time(4_294_967_296_000_000_000),
            Value::Time(-1_418_429_426_887_384_000),
            Value::Interval(2_147_483_647_123_456_700),
            Value::Double(4_294_967_296.0),
            list(vec![
                Value::Interval(100),
                Value::Interval(3_000_000_000_000_000_000)
            ]),
        ]
    );
    assert_eq!(
        r[1],
        &vec![
            s(b"#"),
            Value::Time(-1_418_429_426_887_384_000),
            Value::Time(-500_000_000),
            Value::Interval(100),
            Value::Double(-2.5e10),
            Value::Null,
        ]
    );
    assert_eq!(r[2][1], Value::Time(1_258_531_221_486_539_000));
    assert_eq!(r[2][2], Value::Time(-1_000_000_000));
    // ts ranges over the exponent and negative times too.
    let bytes = std::fs::read(fixture("zeek_fidelity.log")).unwrap();
    let (batches, _) = read_all(&bytes, opts("f")).unwrap();
    assert_eq!(
        batches[0].ts_range(),
        Some((-1_418_429_426_887_384_000, 4_294_967_296_000_000_000))
    );
}

/// The fidelity cases round-trip: read, written back by weir's TSV writer, read again.
#[test]
fn fidelity_cases_round_trip_through_the_writer() {
    use weir::unstable::codec::writer::EventWriter;
    let bytes = std::fs::read(fixture("zeek_fidelity.log")).unwrap();
    let (batches, _) = read_all(&bytes, opts("f")).unwrap();
    let mut w = weir::unstable::codec::zeek::tsv_writer::ZeekTsvWriter::new();
    let mut out = Vec::new();
    for b in &batches {
        w.write_batch(b, &mut out).unwrap();
    }
    w.finish(&mut out);
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("\n\\x23Kaputt\t"), "{text}");
    let (again, _) = read_all(&out, opts("out")).unwrap();
    assert_eq!(rows(&again), rows(&batches));
}

#[test]
fn header_changes_and_close_switch_schemas() {
    let rows = read_fixture("concat.log");
    let names: Vec<&str> = rows.iter().map(|(s, _)| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "zeek.conn",
            "zeek.conn",
            "zeek.dns",
            "zeek.conn",
            "zeek.conn"
        ]
    );
    // The same schema again is the same Arc.
    assert!(Arc::ptr_eq(&rows[0].0, &rows[3].0));
    assert!(Arc::ptr_eq(&rows[0].0, &rows[4].0));
    assert_eq!(rows[1].1[2], addr("::1"));
    assert_eq!(
        rows[2].1,
        vec![
            Value::Time(3_500_000_000),
            s(b"example.com"),
            list(vec![s(b"1.2.3.4"), s(b"TXT v=spf1 -all")]),
            list(vec![
                Value::Interval(60_000_000_000),
                Value::Interval(3_600_000_000_000)
            ]),
        ]
    );
    assert_eq!(rows[4].1[1], s(b"D"));
}

#[test]
fn close_ends_the_document() {
    let err = parse_error(
        b"#fields\tn\n#types\tcount\n1\n#close\t2026\n2\n",
        "closed.log",
    );
    assert!(
        err.starts_with("closed.log:5: data before any #fields/#types header"),
        "{err}"
    );
}

#[test]
fn crlf_empty_lines_and_no_final_newline() {
    let rows = read_fixture("crlf_nofinal.log");
    let r: Vec<&Vec<Value>> = rows.iter().map(|(_, r)| r).collect();
    assert_eq!(r.len(), 3);
    assert_eq!(
        r[0],
        &vec![
            Value::Time(1_000_001_000),
            s(b"one"),
            list(vec![Value::Count(1), Value::Count(2)])
        ]
    );
    assert_eq!(
        r[1],
        &vec![Value::Time(2_500_000_000), s(b""), list(vec![])]
    );
    assert_eq!(
        r[2],
        &vec![Value::Time(3_000_000_000), s(b"last"), Value::Null]
    );
}

#[test]
fn multi_byte_separators_and_custom_markers() {
    let rows = read_fixture("multibyte_sep.log");
    assert_eq!(rows[0].0.name, "zeek.weird");
    let r: Vec<&Vec<Value>> = rows.iter().map(|(_, r)| r).collect();
    assert_eq!(
        r[0],
        &vec![
            Value::Time(10_500_000_000),
            s(b"a|b"),
            list(vec![s(b"x"), s(b"y"), Value::Null]),
            Value::Count(1)
        ]
    );
    assert_eq!(
        r[1],
        &vec![
            Value::Time(11_500_000_000),
            s(b""),
            list(vec![]),
            Value::Null
        ]
    );
    assert_eq!(
        r[2],
        &vec![
            Value::Time(12_500_000_000),
            s(b"-"),
            list(vec![s(b"-"), s(b"(empty)")]),
            Value::Count(2)
        ]
    );
}

/// Zeek writes `#separator` as `\xHH` escapes by default and literally when a script sets a
/// printable one (`||`); both, and any mix, read the same rows, with a multi-byte separator
/// (general path) and a one-byte one (fast path).
#[test]
fn literal_separators_read_as_their_escapes() {
    let literal = read_fixture("literal_sep.log");
    assert_eq!(literal.len(), 3);
    assert_eq!(literal, read_fixture("multibyte_sep.log"));
    let pipe = read_fixture("literal_pipe_sep.log");
    assert_eq!(pipe.len(), 4);
    assert_eq!(pipe[0].0.name, "zeek.pipe");
    assert_eq!(pipe[0].1[1], s(b"CHhAvVGS1DHFjwGM9"));
    assert_eq!(pipe[0].1[6], list(vec![s(b"a"), s(b"b")]));
    assert_eq!(pipe[2].1[1], s(b"C|pipe"));
    assert_eq!(pipe[2].1[2], addr("::1"));
    let text = std::fs::read_to_string(fixture("literal_pipe_sep.log")).unwrap();
    for written in ["\\x7c", "\\x7C"] {
        let escaped = text.replacen("#separator |", &format!("#separator {written}"), 1);
        let (batches, _) = read_all(escaped.as_bytes(), opts("escaped")).unwrap();
        assert_eq!(rows(&batches), pipe, "{written}");
    }
    let text = std::fs::read_to_string(fixture("multibyte_sep.log")).unwrap();
    for written in ["\\x7c|", "|\\x7c", "||"] {
        let mixed = text.replacen("\\x7c\\x7c", written, 1);
        let (batches, _) = read_all(mixed.as_bytes(), opts("mixed")).unwrap();
        assert_eq!(rows(&batches), literal, "{written}");
    }
    // A literal tab is the usual tab.
    let tab = std::fs::read_to_string(fixture("all_types.log"))
        .unwrap()
        .replacen("#separator \\x09", "#separator \t", 1);
    let (batches, _) = read_all(tab.as_bytes(), opts("tab")).unwrap();
    assert_eq!(rows(&batches), read_fixture("all_types.log"));
}

/// What cannot be a separator Zeek wrote is an error at its line, naming both forms.
#[test]
fn separators_that_lost_a_backslash_are_refused() {
    for (value, why) in [
        ("x09", "a \\xHH escape without its backslash"),
        ("x7cx7c", "a \\xHH escape without its backslash"),
        ("\\t", "a backslash that starts no \\xHH escape"),
        ("\\x7", "a backslash that starts no \\xHH escape"),
    ] {
        let text = format!("#separator {value}\n#fields\tn\n#types\tcount\n1\n");
        let e = parse_error(text.as_bytes(), "bad.log");
        assert_eq!(
            e,
            format!("bad.log:1: invalid #separator {value:?}: {why}; expected \\xHH escapes (\\x09) or literal characters (||)")
        );
    }
}

#[test]
fn non_utf8_bytes_and_ipv6() {
    let rows = read_fixture("non_utf8.log");
    assert_eq!(rows[0].1[1], s(b"caf\xe9 \xff\xfe"));
    assert_eq!(rows[0].1[2], addr("fe80::1"));
    assert_eq!(rows[0].1[3], list(vec![s(b"\xc3\x28"), s(b"ok")]));
    assert_eq!(rows[1].1[1], s("€ euro".as_bytes()));
    assert_eq!(rows[1].1[2], addr("::ffff:192.0.2.1"));
}

#[test]
fn unknown_types_are_strings_with_one_warning_each() {
    let bytes = std::fs::read(fixture("unknown_type.log")).unwrap();
    let mut d = TsvDecoder::new(opts("unknown_type.log"));
    let mut again = bytes.clone();
    again.extend_from_slice(&bytes);
    let batches = d.read_all(&again).unwrap();
    let rows = rows(&batches);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].0.fields[1].ty, Type::String);
    assert_eq!(rows[0].1[1], s(b"some_func"));
    assert_eq!(rows[0].1[2], s(b"r1,r2"));
    let w = d.take_warnings();
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].contains("\"func\"") && w[0].contains("field f"),
        "{w:?}"
    );
    assert!(w[1].contains("vector[record]"), "{w:?}");
    assert!(d.take_warnings().is_empty());
}

#[test]
fn error_wrong_column_count() {
    let bytes = std::fs::read(fixture("err_columns.log")).unwrap();
    let err = parse_error(&bytes, "err_columns.log");
    assert!(
        err.starts_with("err_columns.log:10: expected 3 columns, found 2: \"2.0\\t2\""),
        "{err}"
    );
}

#[test]
fn error_value_names_line_and_field() {
    let bytes = std::fs::read(fixture("err_value.log")).unwrap();
    let err = parse_error(&bytes, "err_value.log");
    assert_eq!(err, "err_value.log:9: field n: invalid count value \"12x\"");
    let bytes = std::fs::read(fixture("err_addr.log")).unwrap();
    let err = parse_error(&bytes, "err_addr.log");
    assert_eq!(
        err,
        "err_addr.log:10: field a: invalid addr value \"300.1.1.1\""
    );
    let err = parse_error(b"#fields\tv\n#types\tvector[count]\n1,x,3\n", "v.log");
    assert_eq!(
        err,
        "v.log:3: field v: invalid vector[count] value \"1,x,3\""
    );
    // `1e9` is Zeek's own exponent form (read since the fidelity fix); a bare exponent is not.
    let err = parse_error(b"#fields\tt\n#types\ttime\ne9\n", "t.log");
    assert_eq!(err, "t.log:3: field t: invalid time value \"e9\"");
    let err = parse_error(b"#fields\tt\n#types\ttime\n1.5e\n", "t.log");
    assert_eq!(err, "t.log:3: field t: invalid time value \"1.5e\"");
    let err = parse_error(b"#fields\tb\n#types\tbool\n(empty)\n", "b.log");
    assert_eq!(err, "b.log:3: field b: invalid bool value \"(empty)\"");
}

#[test]
fn error_data_before_header() {
    let bytes = std::fs::read(fixture("err_no_header.log")).unwrap();
    let err = parse_error(&bytes, "err_no_header.log");
    assert!(
        err.starts_with("err_no_header.log:1: data before any #fields/#types header"),
        "{err}"
    );
}

#[test]
fn error_fields_types_mismatch() {
    let bytes = std::fs::read(fixture("err_fields_types.log")).unwrap();
    let err = parse_error(&bytes, "err_fields_types.log");
    assert_eq!(
        err,
        "err_fields_types.log:4: #fields names 3 columns but #types names 2"
    );
}

#[test]
fn error_line_too_long_whole_and_streamed() {
    let mut text = b"#fields\ts\n#types\tstring\nshort\n".to_vec();
    text.extend(std::iter::repeat_n(b'x', 100));
    text.extend_from_slice(b"\nafter\n");
    let mut o = opts("long.log");
    o.max_line_len = 50;
    let err = match read_all(&text, o.clone()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("no error"),
    };
    assert!(
        err.starts_with("long.log:4: line longer than the maximum of 50 bytes"),
        "{err}"
    );
    // Streamed in small chunks, the error comes before the line is complete and the buffer
    // never holds much more than the limit.
    let mut d = TsvDecoder::new(o.clone());
    let mut buf = BytesMut::new();
    let mut got = None;
    for chunk in text.chunks(7) {
        buf.extend_from_slice(chunk);
        loop {
            match d.decode(&mut buf) {
                Ok(Some(_)) => continue,
                Ok(None) => break,
                Err(e) => {
                    got = Some(e.to_string());
                    break;
                }
            }
        }
        assert!(buf.len() <= 60, "buffered {} bytes", buf.len());
        if got.is_some() {
            break;
        }
    }
    assert_eq!(got.as_deref(), Some(err.as_str()));
    // Skip mode drops the long line and continues.
    o.on_error = OnError::Skip;
    let (batches, skipped) = read_all(&text, o).unwrap();
    assert_eq!(skipped.skipped, 1);
    assert_eq!(skipped.first[0].line, 4);
    let vals: Vec<Value> = rows(&batches)
        .into_iter()
        .map(|(_, r)| r[0].clone())
        .collect();
    assert_eq!(vals, vec![s(b"short"), s(b"after")]);
}

#[test]
fn skip_mode_drops_bad_rows_and_reports_them() {
    let bytes = std::fs::read(fixture("err_columns.log")).unwrap();
    let mut o = opts("err_columns.log");
    o.on_error = OnError::Skip;
    let (batches, skipped) = read_all(&bytes, o).unwrap();
    assert_eq!(rows(&batches).len(), 2);
    assert_eq!(skipped.skipped, 1);
    assert_eq!(skipped.first[0].line, 10);
}

#[test]
fn fail_mode_emits_rows_before_the_error() {
    let bytes = std::fs::read(fixture("err_addr.log")).unwrap();
    let mut d = TsvDecoder::new(opts("x"));
    let mut buf = BytesMut::from(&bytes[..]);
    let first = d.decode_eof(&mut buf).unwrap().expect("the good row");
    assert_eq!(first.len(), 1);
    let err = d.decode_eof(&mut buf).unwrap_err();
    assert!(err.to_string().starts_with("x:10: field a:"), "{err}");
}

#[test]
fn batches_are_cut_at_batch_rows() {
    let mut text = b"#fields\tts\tn\n#types\ttime\tcount\n".to_vec();
    for i in 0..10 {
        text.extend_from_slice(format!("{i}.5\t{i}\n").as_bytes());
    }
    let mut o = opts("x");
    o.batch_rows = 4;
    let (batches, _) = read_all(&text, o).unwrap();
    let lens: Vec<usize> = batches.iter().map(Batch::len).collect();
    assert_eq!(lens, [4, 4, 2]);
    assert_eq!(batches[1].ts_range(), Some((4_500_000_000, 7_500_000_000)));
}

#[tokio::test]
async fn works_with_framed_read() {
    use futures::StreamExt;
    let bytes = std::fs::read(fixture("concat.log")).unwrap();
    let reader = tokio_util::io::StreamReader::new(futures::stream::iter(
        bytes
            .chunks(13)
            .map(|c| Ok::<_, std::io::Error>(bytes::Bytes::copy_from_slice(c)))
            .collect::<Vec<_>>(),
    ));
    let mut framed = tokio_util::codec::FramedRead::new(reader, TsvDecoder::new(opts("x")));
    let mut got = Vec::new();
    while let Some(b) = framed.next().await {
        got.push(b.unwrap());
    }
    assert_eq!(rows(&got), read_fixture("concat.log"));
}

// ---- chunking independence and robustness ----

/// Feeds `chunks` into a decoder; returns the rows with schemas and the outcome.
fn feed(chunks: &[&[u8]], o: &ReaderOptions) -> (Rows, Result<(), String>, u64) {
    let mut d = TsvDecoder::new(o.clone());
    let mut buf = BytesMut::new();
    let mut batches = Vec::new();
    let mut outcome = Ok(());
    'outer: for (i, c) in chunks.iter().enumerate() {
        buf.extend_from_slice(c);
        let last = i + 1 == chunks.len();
        loop {
            let r = if last {
                d.decode_eof(&mut buf)
            } else {
                d.decode(&mut buf)
            };
            match r {
                Ok(Some(b)) => {
                    assert!(!b.is_empty());
                    batches.push(b)
                }
                Ok(None) => break,
                Err(e) => {
                    outcome = Err(e.to_string());
                    break 'outer;
                }
            }
        }
    }
    if chunks.is_empty() {
        while let Ok(Some(b)) = d.decode_eof(&mut buf) {
            batches.push(b);
        }
    }
    let skipped = d.skip_report().skipped;
    (rows(&batches), outcome, skipped)
}

fn split_at_points(data: &[u8], mut cuts: Vec<usize>) -> Vec<&[u8]> {
    cuts.iter_mut().for_each(|c| *c %= data.len() + 1);
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut prev = 0;
    for c in cuts {
        out.push(&data[prev..c]);
        prev = c;
    }
    out.push(&data[prev..]);
    out
}

fn all_fixtures() -> Vec<u8> {
    let mut all = Vec::new();
    for f in [
        "all_types.log",
        "escapes.log",
        "concat.log",
        "multibyte_sep.log",
        "literal_sep.log",
        "literal_pipe_sep.log",
        "non_utf8.log",
        "err_columns.log",
        "crlf_nofinal.log",
        "zeek_fidelity.log",
    ] {
        all.extend(std::fs::read(fixture(f)).unwrap());
        if !all.ends_with(b"\n") {
            all.push(b'\n');
        }
    }
    all
}

#[test]
fn one_byte_chunks_equal_whole_input() {
    let data = all_fixtures();
    for on_error in [OnError::Skip, OnError::Fail] {
        let mut o = opts("x");
        o.on_error = on_error;
        o.batch_rows = 3;
        let whole = feed(&[&data], &o);
        let bytes: Vec<&[u8]> = data.chunks(1).collect();
        assert_eq!(feed(&bytes, &o), whole);
        if on_error == OnError::Skip {
            assert_eq!(whole.2, 1);
            assert!(whole.0.len() > 20);
        } else {
            assert!(whole.1.is_err());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_chunking_gives_the_same_rows(
        cuts in prop::collection::vec(any::<usize>(), 0..40),
        batch_rows in 0usize..6,
        skip in any::<bool>(),
        max_line_len in prop::sample::select(vec![40usize, 300, 1 << 20]),
    ) {
        let data = all_fixtures();
        let mut o = opts("x");
        o.batch_rows = batch_rows;
        o.max_line_len = max_line_len;
        o.on_error = if skip { OnError::Skip } else { OnError::Fail };
        let whole = feed(&[&data], &o);
        let chunks = split_at_points(&data, cuts);
        prop_assert_eq!(feed(&chunks, &o), whole);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        data in prop::collection::vec(any::<u8>(), 0..600),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
        skip in any::<bool>(),
    ) {
        let mut o = opts("x");
        o.max_line_len = 64;
        o.on_error = if skip { OnError::Skip } else { OnError::Fail };
        let whole = feed(&[&data], &o);
        prop_assert_eq!(feed(&split_at_points(&data, cuts), &o), whole);
    }

    #[test]
    fn mutated_real_headers_never_panic(
        edits in prop::collection::vec((any::<usize>(), prop::sample::select(
            b"\t\n\r#\\x,-()[]0123456789.:/|;abcdefTF ".to_vec())), 1..12),
        skip in any::<bool>(),
    ) {
        let mut data = all_fixtures();
        for (at, byte) in edits {
            let at = at % data.len();
            data[at] = byte;
        }
        let mut o = opts("x");
        o.on_error = if skip { OnError::Skip } else { OnError::Fail };
        let (rows, _, _) = feed(&[&data], &o);
        // Whatever parsed decodes back under its schema.
        for (schema, r) in rows {
            prop_assert_eq!(r.len(), schema.fields.len());
        }
    }
}

// ---- the real corpus ----

fn expected_events(name: &str) -> Option<usize> {
    Some(match name {
        "conn.log.gz" => 8_462,
        "dns.log.gz" => 5_124,
        "http.log.gz" => 4_896,
        "snmp.log.gz" => 4,
        "small_conn.log" => 20,
        "dns.log" => 32,
        "http.log" => 40,
        "ftp.log" => 2,
        "smtp.log" => 21,
        "ssl.log" => 113,
        _ => return None,
    })
}

#[test]
fn corpus_parses_with_the_documented_event_counts() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    let mut seen = 0;
    for path in common::corpus::files(&dir) {
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if name.ends_with(".json") {
            continue;
        }
        let text = common::gz::read_maybe_gz(&path);
        let mut d = TsvDecoder::new(opts(&name));
        let batches = d.read_all(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let n: usize = batches.iter().map(Batch::len).sum();
        if let Some(want) = expected_events(&name) {
            assert_eq!(n, want, "{name}");
            seen += 1;
        }
        assert!(d.take_warnings().is_empty(), "{name}");
        for b in &batches {
            b.to_values().unwrap();
        }
    }
    assert_eq!(seen, 10);
}

/// A record as the reference reader prints it: (path, [(field, JSON value)]).
fn reference_records(path: &Path) -> Option<Vec<serde_json::Value>> {
    let o = common::zeekref::output(&[Path::new("records"), path])?;
    assert!(
        o.status.success(),
        "zeekref failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = o.stdout;
    let text = String::from_utf8(out).unwrap();
    // Python writes undecodable bytes as lone surrogates `\udcXX`, which serde_json refuses:
    // map them to private-use characters U+F7XX, as `json_string` does for weir's bytes.
    let mut fixed = String::with_capacity(text.len());
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            fixed.push(c);
            continue;
        }
        let next = it.next().unwrap();
        if next == 'u' {
            let hex: String = (0..4).map(|_| it.next().unwrap()).collect();
            if let Some(b) = hex.strip_prefix("dc") {
                fixed.push_str("\\uf7");
                fixed.push_str(b);
                continue;
            }
            fixed.push_str("\\u");
            fixed.push_str(&hex);
        } else {
            fixed.push('\\');
            fixed.push(next);
        }
    }
    Some(
        fixed
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    )
}

/// Bytes as the reference prints them: UTF-8 where valid, each other byte as U+F7XX.
fn json_string(b: &[u8]) -> String {
    let mut out = String::new();
    for chunk in b.utf8_chunks() {
        out.push_str(chunk.valid());
        for &x in chunk.invalid() {
            out.push(char::from_u32(0xf700 + x as u32).unwrap());
        }
    }
    out
}

fn to_json(v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Count(x) | Value::Port(x) => J::from(*x),
        Value::Int(x) | Value::Time(x) | Value::Interval(x) => J::from(*x),
        Value::Double(x) => J::from(*x),
        Value::String(s) => J::String(json_string(s)),
        Value::Addr(a) => J::String(a.to_string()),
        Value::Subnet(a, p) => J::String(format!("{a}/{p}")),
        Value::List(l) => J::Array(l.iter().map(to_json).collect()),
    }
}

/// Normalizes the reference's address text through `IpAddr`.
fn normalize(ty: &Type, v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match (ty, v) {
        (Type::Addr, J::String(a)) => J::String(a.parse::<IpAddr>().unwrap().to_string()),
        (t, J::Array(items)) if t.is_container() => {
            let e = t.element().unwrap();
            J::Array(items.into_iter().map(|i| normalize(e, i)).collect())
        }
        (_, v) => v,
    }
}

#[test]
fn values_match_the_reference_reader() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    for name in [
        "unit/ssl.log",
        "unit/dns.log",
        "unit/smtp.log",
        "http.log.gz",
        "conn.log.gz",
    ] {
        let path = dir.join(name);
        let Some(want) = reference_records(&path) else {
            return;
        };
        let (batches, _) = read_all(&common::gz::read_maybe_gz(&path), opts(name)).unwrap();
        let got = rows(&batches);
        assert_eq!(got.len(), want.len(), "{name}");
        for (i, ((schema, row), rec)) in got.iter().zip(want).enumerate() {
            let serde_json::Value::Object(mut rec) = rec else {
                panic!("not an object")
            };
            assert_eq!(
                rec.remove("_path").unwrap(),
                serde_json::Value::String(schema.path().into())
            );
            assert_eq!(rec.len(), schema.fields.len());
            for (f, v) in schema.fields.iter().zip(row) {
                let theirs = normalize(&f.ty, rec.remove(&f.name).unwrap());
                assert_eq!(to_json(v), theirs, "{name} record {i} field {}", f.name);
            }
        }
    }
}
