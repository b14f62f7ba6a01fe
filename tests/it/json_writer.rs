//! The JSON lines writer and the async WriterSink.

use crate::common;

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::{stream, SinkExt};
use tokio::io::AsyncWrite;
use weir::unstable::batch::Batch;
use weir::unstable::codec::json_writer::{JsonTimestamps, JsonWriter};
use weir::unstable::codec::writer::{
    writer_for, EventWriter, OutputFormat, WriteError, WriterSink,
};
use weir::unstable::codec::zeek::json::read_all;
use weir::unstable::codec::ReaderOptions;
use weir::unstable::types::{Field, Schema, SchemaRef, Type};
use weir::unstable::value::Value;

use common::events::{addr, batch_of, s, ty};

fn all_types() -> (SchemaRef, Vec<Vec<Value>>) {
    let f = |n: &str, t: &str| Field::new(n, ty(t));
    let schema = Schema::new(
        "zeek.conn",
        vec![
            f("ts", "time"),
            f("b", "bool"),
            f("c", "count"),
            f("i", "int"),
            f("d", "double"),
            f("iv", "interval"),
            f("s", "string"),
            f("id.orig_h", "addr"),
            f("sn", "subnet"),
            f("p", "port"),
            f("e", "enum"),
            f("set", "set[string]"),
            f("vd", "vector[double]"),
            f("vi", "vector[interval]"),
        ],
    )
    .into_shared();
    let rows = vec![
        vec![
            Value::Time(1_258_531_221_486_539_000),
            Value::Bool(true),
            Value::Count(u64::MAX),
            Value::Int(-5),
            Value::Double(0.1),
            Value::Interval(163_820_000),
            s(b"a\"b\\c\td\xff\xc3\xa9"),
            Value::Addr(addr("2001:db8::1")),
            Value::Subnet(addr("10.0.0.0"), 8),
            Value::Port(443),
            s(b"tcp"),
            Value::List(vec![s(b"x,y"), Value::Null]),
            Value::List(vec![
                Value::Double(1.0),
                Value::Double(f64::NAN),
                Value::Double(f64::INFINITY),
            ]),
            Value::List(vec![Value::Interval(-1)]),
        ],
        {
            let mut r = vec![Value::Null; 14];
            r[0] = Value::Time(1_258_531_221_486_539_123);
            r[4] = Value::Double(f64::NEG_INFINITY);
            r[11] = Value::List(vec![]);
            r
        },
        vec![Value::Null; 14],
    ];
    (schema, rows)
}

const WANT: &str = r#"{"_path":"conn","ts":"2009-11-18T08:00:21.486539Z","b":true,"c":18446744073709551615,"i":-5,"d":0.1,"iv":0.163820,"s":"a\"b\\c\td\\xffé","id.orig_h":"2001:db8::1","sn":"10.0.0.0/8","p":443,"e":"tcp","set":["x,y",null],"vd":[1.0,"NaN","Infinity"],"vi":[-0.000000001]}
{"_path":"conn","ts":"2009-11-18T08:00:21.486539123Z","d":"-Infinity","set":[]}
{"_path":"conn"}
"#;

#[test]
fn every_type_as_zeek_json() {
    let (schema, rows) = all_types();
    let mut w = JsonWriter::new();
    let mut out = Vec::new();
    w.write_batch(&batch_of(&schema, &rows), &mut out).unwrap();
    w.finish(&mut out);
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text, WANT);
    // Every line is valid JSON, and the non-UTF-8 byte is `\xff` text.
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v.is_object());
    }
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["s"], "a\"b\\c\td\\xffé");
}

#[test]
fn path_comes_from_the_schema_name() {
    let schema = Schema::new("custom", vec![Field::new("n", Type::Count)]).into_shared();
    let mut out = Vec::new();
    writer_for(OutputFormat::Json)
        .write_batch(&batch_of(&schema, &[vec![Value::Count(1)]]), &mut out)
        .unwrap();
    assert_eq!(out, b"{\"_path\":\"custom\",\"n\":1}\n");
}

#[test]
fn timestamps_as_epoch_iso8601_or_millis() {
    let f = |n: &str, t: &str| Field::new(n, ty(t));
    let schema = Schema::new(
        "zeek.t",
        vec![
            f("ts", "time"),
            f("seen_ts", "vector[time]"),
            f("iv", "interval"),
        ],
    )
    .into_shared();
    let rows = vec![
        vec![
            Value::Time(1_258_531_221_486_539_123),
            Value::List(vec![Value::Time(-1_418_429_426_887_384_000), Value::Null]),
            Value::Interval(1_500_000_000),
        ],
        vec![Value::Time(1_500), Value::List(vec![]), Value::Null],
    ];
    let batch = batch_of(&schema, &rows);
    let write = |ts: JsonTimestamps| {
        let mut out = Vec::new();
        JsonWriter::with_timestamps(ts)
            .write_batch(&batch, &mut out)
            .unwrap();
        String::from_utf8(out).unwrap()
    };
    assert_eq!(
        write(JsonTimestamps::Epoch),
        "{\"_path\":\"t\",\"ts\":1258531221.486539123,\"seen_ts\":[-1418429426.887384,null],\"iv\":1.500000}\n\
         {\"_path\":\"t\",\"ts\":0.0000015,\"seen_ts\":[]}\n"
    );
    assert_eq!(
        write(JsonTimestamps::Millis),
        "{\"_path\":\"t\",\"ts\":1258531221486,\"seen_ts\":[-1418429426887,null],\"iv\":1.500000}\n\
         {\"_path\":\"t\",\"ts\":0,\"seen_ts\":[]}\n"
    );
    assert_eq!(
        write(JsonTimestamps::Iso8601),
        String::from_utf8({
            let mut out = Vec::new();
            JsonWriter::new().write_batch(&batch, &mut out).unwrap();
            out
        })
        .unwrap()
    );
    assert!(write(JsonTimestamps::Iso8601).contains("\"ts\":\"2009-11-18T08:00:21.486539123Z\""));
    // Epoch and ISO 8601 both read back to the identical nanoseconds.
    for ts in [JsonTimestamps::Epoch, JsonTimestamps::Iso8601] {
        let text = write(ts);
        let (batches, _) = read_all(text.as_bytes(), ReaderOptions::new("t.json")).unwrap();
        assert_eq!(
            batches[0].to_values().unwrap()[0][0],
            Value::Time(1_258_531_221_486_539_123),
            "{ts}"
        );
    }
    for (word, want) in [
        ("epoch", JsonTimestamps::Epoch),
        ("iso8601", JsonTimestamps::Iso8601),
        ("millis", JsonTimestamps::Millis),
    ] {
        assert_eq!(word.parse::<JsonTimestamps>().unwrap(), want);
        assert_eq!(want.to_string(), word);
    }
    assert!("seconds".parse::<JsonTimestamps>().is_err());
}

#[test]
fn json_reader_reads_the_output_back() {
    // Types the JSON reader infers back exactly.
    let f = |n: &str, t: &str| Field::new(n, ty(t));
    let schema = Schema::new(
        "zeek.dns",
        vec![
            f("ts", "time"),
            f("ok", "bool"),
            f("n", "count"),
            f("neg", "int"),
            f("d", "double"),
            f("s", "string"),
            f("a", "addr"),
            f("net", "subnet"),
            f("answers", "vector[string]"),
            f("ttls", "vector[double]"),
            f("when_ts", "time"),
        ],
    )
    .into_shared();
    let rows: Vec<Vec<Value>> = (0..50)
        .map(|i| {
            vec![
                Value::Time(1_258_531_221_486_539_000 + i * 1_000_000_007),
                Value::Bool(i % 2 == 0),
                Value::Count(i as u64 * 1000),
                Value::Int(-i - 1),
                Value::Double(i as f64 / 7.0 + 0.5),
                s(format!("q{i}\n\"quoted\" \\ é").as_bytes()),
                Value::Addr(if i % 3 == 0 {
                    addr("fe80::1")
                } else {
                    addr("192.168.1.1")
                }),
                Value::Subnet(addr("192.168.0.0"), 16),
                Value::List(vec![s(b"a b=c"), s(b"d")]),
                Value::List(vec![Value::Double(1.0), Value::Double(2.5)]),
                Value::Time(-i * 999_999_999),
            ]
        })
        .collect();
    let mut out = Vec::new();
    JsonWriter::new()
        .write_batch(&batch_of(&schema, &rows), &mut out)
        .unwrap();
    // Inference only (a typed `dns` would add the fields of Zeek's dns.log).
    let untyped = ReaderOptions {
        zeek_schemas: None,
        ..ReaderOptions::new("out.json")
    };
    let (batches, report) = read_all(&out, untyped).unwrap();
    assert_eq!(report.skipped, 0);
    assert_eq!(batches.len(), 1);
    assert_eq!(**batches[0].schema(), *schema);
    assert_eq!(batches[0].to_values().unwrap(), rows);
}

/// An output that accepts `limit` bytes, at most `max_write` per call, then fails as a closed
/// pipe.
struct Pipe {
    got: Vec<u8>,
    writes: usize,
    max_write: usize,
    limit: usize,
}

impl AsyncWrite for Pipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.got.len() >= this.limit {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        let n = buf
            .len()
            .min(this.max_write)
            .min(this.limit - this.got.len());
        this.got.extend_from_slice(&buf[..n]);
        this.writes += 1;
        Poll::Ready(Ok(n))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

fn many_batches() -> Vec<Batch> {
    let schema = Schema::new("zeek.x", vec![Field::new("n", Type::Count)]).into_shared();
    (0..100)
        .map(|b| {
            let rows: Vec<Vec<Value>> = (0..100).map(|i| vec![Value::Count(b * 100 + i)]).collect();
            batch_of(&schema, &rows)
        })
        .collect()
}

#[tokio::test]
async fn sink_writes_what_the_writer_formats_and_closes_with_the_trailer() {
    for format in [OutputFormat::ZeekTsv, OutputFormat::Json] {
        let batches = many_batches();
        let mut direct = Vec::new();
        let mut w = writer_for(format);
        for b in &batches {
            w.write_batch(b, &mut direct).unwrap();
        }
        w.finish(&mut direct);

        let pipe = Pipe {
            got: Vec::new(),
            writes: 0,
            max_write: 1000,
            limit: usize::MAX,
        };
        let mut sink = WriterSink::with_chunk(writer_for(format), pipe, 4096);
        sink.send_all(&mut stream::iter(batches.into_iter().map(Ok)))
            .await
            .unwrap();
        sink.close().await.unwrap();
        let pipe = sink.into_inner();
        // #open/#close stamps may differ by a second: compare without them.
        let strip = |b: &[u8]| -> String {
            String::from_utf8_lossy(b)
                .lines()
                .filter(|l| !l.starts_with("#open") && !l.starts_with("#close"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(strip(&pipe.got), strip(&direct), "{format}");
        if format == OutputFormat::ZeekTsv {
            assert!(String::from_utf8_lossy(&pipe.got)
                .trim_end()
                .rsplit('\n')
                .next()
                .unwrap()
                .starts_with("#close\t"));
        }
        // Written in chunks, each call at most max_write bytes.
        assert!(pipe.writes >= pipe.got.len() / 1000);
    }
}

#[tokio::test]
async fn broken_pipe_is_a_distinct_clean_end() {
    let pipe = Pipe {
        got: Vec::new(),
        writes: 0,
        max_write: 1 << 20,
        limit: 10_000,
    };
    let mut sink = WriterSink::with_chunk(writer_for(OutputFormat::Json), pipe, 1024);
    let err = sink
        .send_all(&mut stream::iter(many_batches().into_iter().map(Ok)))
        .await
        .unwrap_err();
    assert!(err.is_closed(), "{err}");
    assert!(matches!(err, WriteError::Closed));
    assert_eq!(sink.into_inner().got.len(), 10_000);
}

#[tokio::test]
async fn other_io_errors_are_failures() {
    struct Full;
    impl AsyncWrite for Full {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Ready(Err(io::Error::other("disk full")))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }
    let mut sink = WriterSink::new(writer_for(OutputFormat::ZeekTsv), Full);
    sink.feed(many_batches().remove(0)).await.unwrap();
    let err = sink.close().await.unwrap_err();
    assert!(!err.is_closed());
    assert_eq!(err.to_string(), "cannot write output: disk full");
}

#[tokio::test]
async fn sink_writes_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.jsonl");
    let file = tokio::fs::File::create(&path).await.unwrap();
    let mut sink = WriterSink::new(writer_for(OutputFormat::Json), file);
    for b in many_batches() {
        sink.feed(b).await.unwrap();
    }
    sink.close().await.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 10_000);
    assert_eq!(text.lines().last(), Some(r#"{"_path":"x","n":9999}"#));
}

proptest::proptest! {
    /// Any bytes in a string field give a valid JSON line whose string is the bytes, with
    /// invalid UTF-8 as `\xHH` text.
    #[test]
    fn arbitrary_strings_give_valid_json(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
        let schema = Schema::new("zeek.s", vec![Field::new("s", Type::String)]).into_shared();
        let mut out = Vec::new();
        JsonWriter::new().write_batch(&batch_of(&schema, &[vec![Value::String(bytes.clone())]]), &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let got = v["s"].as_str().unwrap().to_owned();
        // What Zeek (and the reference's json_text) expects: lossy UTF-8 with \xHH for bad bytes.
        let mut want = String::new();
        for chunk in bytes.utf8_chunks() {
            want.push_str(chunk.valid());
            for b in chunk.invalid() {
                want.push_str(&format!("\\x{b:02x}"));
            }
        }
        proptest::prop_assert_eq!(got, want);
    }
}
