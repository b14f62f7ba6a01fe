//! The pipeline runtime: backpressure, fan-out, fan-in, ordered sources, errors, shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use futures::{Sink, SinkExt, StreamExt};
use weir::unstable::batch::{Batch, BatchBuilder};
use weir::unstable::codec::ReaderOptions;
use weir::unstable::error::ReadError;
use weir::unstable::pipeline::{Pipeline, PipelineError, PipelineOptions};
use weir::unstable::source::decode::BatchDecoder;
use weir::unstable::source::{Compression, Format, Input, SourceConfig};
use weir::unstable::types::{Field, Schema, SchemaRef, Type};
use weir::unstable::value::Value;

fn schema(name: &str) -> SchemaRef {
    Schema::new(
        name,
        vec![
            Field::new("n", Type::Count),
            Field::new("pad", Type::String),
        ],
    )
    .into_shared()
}

/// A batch of `rows` events numbered from `from`, each padded to about `pad` bytes.
fn batch(s: &SchemaRef, from: u64, rows: u64, pad: usize) -> Batch {
    let mut b = BatchBuilder::new(s.clone());
    for i in from..from + rows {
        let mut e = b.begin_row();
        e.uint(i);
        e.bytes(&vec![b'x'; pad]);
        b.finish_row(None);
    }
    b.finish()
}

fn numbers(b: &Batch) -> Vec<u64> {
    b.to_values()
        .unwrap()
        .into_iter()
        .map(|r| match &r[0] {
            Value::Count(n) => *n,
            Value::String(s) => String::from_utf8_lossy(s).parse().unwrap(),
            v => panic!("unexpected {v:?}"),
        })
        .collect()
}

/// A sink recording what it gets, optionally slow, optionally failing after some batches.
#[derive(Clone, Default)]
struct Recorder {
    got: Arc<Mutex<Vec<u64>>>,
    batches: Arc<AtomicU64>,
    delay: Option<Duration>,
    fail_after: Option<u64>,
}

impl Recorder {
    fn sink(&self) -> impl Sink<Batch, Error = std::io::Error> + Send + 'static {
        let me = self.clone();
        futures::sink::unfold(me, |me, b: Batch| async move {
            if let Some(d) = me.delay {
                tokio::time::sleep(d).await;
            }
            let n = me.batches.fetch_add(1, Ordering::SeqCst) + 1;
            if me.fail_after.is_some_and(|f| n > f) {
                return Err(std::io::Error::other("disk full writing /x/y"));
            }
            me.got.lock().unwrap().extend(numbers(&b));
            Ok(me)
        })
    }
    fn numbers(&self) -> Vec<u64> {
        self.got.lock().unwrap().clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_sink_bounds_in_flight_bytes() {
    let s = schema("zeek.t");
    let one = batch(&s, 0, 10, 100).byte_size();
    let capacity = one * 4;
    let produced = Arc::new(AtomicU64::new(0));
    let p2 = produced.clone();
    let total = 300u64;
    let source = futures::stream::iter(0..total).map(move |i| {
        p2.fetch_add(1, Ordering::SeqCst);
        Ok::<_, std::io::Error>(batch(&s, i * 10, 10, 100))
    });
    let mut p = Pipeline::new(PipelineOptions {
        channel_capacity: capacity,
        ..PipelineOptions::default()
    });
    let src = p.add_stream("fast", source).unwrap();
    let rec = Recorder {
        delay: Some(Duration::from_millis(1)),
        ..Default::default()
    };
    // Watch how far the source runs ahead of the sink while it runs.
    let ahead = Arc::new(AtomicU64::new(0));
    let (a2, p3, b2) = (ahead.clone(), produced.clone(), rec.batches.clone());
    let sink = rec.sink().with(move |b: Batch| {
        let lead = p3.load(Ordering::SeqCst) - b2.load(Ordering::SeqCst);
        a2.fetch_max(lead, Ordering::SeqCst);
        futures::future::ready(Ok::<_, std::io::Error>(b))
    });
    p.add_sink("slow", &[src], sink).unwrap();
    let metrics = p.metrics();
    p.run().await.unwrap();
    assert_eq!(rec.numbers(), (0..total * 10).collect::<Vec<_>>());
    let max = metrics.max_in_flight();
    assert!(max > 0);
    assert!(
        max <= capacity as u64,
        "in flight {max} > capacity {capacity}"
    );
    // The channel holds at most 4 batches; the sink, the stage task and the stream each hold
    // at most one more.
    let lead = ahead.load(Ordering::SeqCst);
    assert!(lead <= 4 + 3, "source ran {lead} batches ahead of the sink");
    let json = metrics.to_json();
    assert_eq!(json["stages"]["slow"]["events"], total * 10);
    assert_eq!(json["stages"]["fast"]["batches"], total);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fan_out_delivers_every_batch_to_every_sink() {
    let s = schema("zeek.t");
    let source = futures::stream::iter(0..100u64)
        .map(move |i| Ok::<_, std::io::Error>(batch(&s, i * 3, 3, 10)));
    let mut p = Pipeline::new(PipelineOptions {
        channel_capacity: 1000,
        ..PipelineOptions::default()
    });
    let src = p.add_stream("src", source).unwrap();
    let fast = Recorder::default();
    let slow = Recorder {
        delay: Some(Duration::from_micros(300)),
        ..Default::default()
    };
    let third = Recorder::default();
    p.add_sink("fast", &[src], fast.sink()).unwrap();
    p.add_sink("slow", &[src], slow.sink()).unwrap();
    p.add_sink("third", &[src], third.sink()).unwrap();
    p.run().await.unwrap();
    let want: Vec<u64> = (0..300).collect();
    assert_eq!(fast.numbers(), want);
    assert_eq!(slow.numbers(), want);
    assert_eq!(third.numbers(), want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fan_in_merges_sources_through_a_batcher() {
    let s = schema("zeek.t");
    let s2 = s.clone();
    let a =
        futures::stream::iter(0..50u64).map(move |i| Ok::<_, std::io::Error>(batch(&s, i, 1, 1)));
    let b = futures::stream::iter(50..120u64)
        .map(move |i| Ok::<_, std::io::Error>(batch(&s2, i, 1, 1)));
    let mut p = Pipeline::default();
    let a = p.add_stream("a", a).unwrap();
    let b = p.add_stream("b", b).unwrap();
    let batched = p
        .add_batcher(
            "batch",
            &[a, b],
            weir::unstable::batcher::BatchConfig {
                max_events: 16,
                ..Default::default()
            },
        )
        .unwrap();
    let rec = Recorder::default();
    p.add_sink("sink", &[batched], rec.sink()).unwrap();
    let metrics = p.metrics();
    p.run().await.unwrap();
    let mut got = rec.numbers();
    // Each source's own order is kept within the merge.
    let from_a: Vec<u64> = got.iter().copied().filter(|&n| n < 50).collect();
    assert_eq!(from_a, (0..50).collect::<Vec<_>>());
    got.sort();
    assert_eq!(got, (0..120).collect::<Vec<_>>());
    assert!(metrics.get("sink").unwrap().batches() >= 120 / 16);
}

/// Decodes each line into one event whose first field is the line's text.
struct Lines {
    schema: SchemaRef,
    builder: BatchBuilder,
}

impl Lines {
    fn factory() -> weir::unstable::source::decode::DecoderFactory {
        Arc::new(|_format, _opts: ReaderOptions| {
            let schema = Schema::new(
                "zeek.line",
                vec![
                    Field::new("line", Type::String),
                    Field::new("pad", Type::String),
                ],
            )
            .into_shared();
            Box::new(Lines {
                builder: BatchBuilder::new(schema.clone()),
                schema,
            }) as Box<dyn BatchDecoder>
        })
    }
    fn push(&mut self, line: &[u8]) {
        let _ = &self.schema;
        let mut e = self.builder.begin_row();
        e.bytes(line);
        e.bytes(b"");
        self.builder.finish_row(None);
    }
}

impl BatchDecoder for Lines {
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        while let Some(i) = memchr::memchr(b'\n', src) {
            let line = src.split_to(i + 1);
            self.push(&line[..i]);
        }
        Ok((!self.builder.is_empty()).then(|| self.builder.finish()))
    }
    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        if !src.is_empty() && !src.contains(&b'\n') {
            let rest = src.split();
            self.push(&rest);
        }
        self.decode(src)
    }
}

fn lines(from: u64, to: u64) -> String {
    (from..to).map(|i| format!("{i}\n")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_reads_inputs_in_order_with_decode_ahead() {
    let inputs: Vec<Input> = (0..6u64)
        .map(|k| Input::bytes(format!("in{k}"), lines(k * 1000, k * 1000 + 1000)))
        .collect();
    let mut p = Pipeline::new(PipelineOptions {
        channel_capacity: 4096,
        ..PipelineOptions::default()
    });
    let src = p
        .add_source(
            "files",
            inputs,
            SourceConfig {
                compression: Compression::Auto,
                format: Format::Auto,
                reader: ReaderOptions::default(),
                decoders: Lines::factory(),
                decode_ahead: 3,
                channel_capacity: 4096,
                parallel_tsv: 0,
                follow: None,
                resume: None,
                community_id: None,
            },
        )
        .unwrap();
    let rec = Recorder::default();
    p.add_sink("sink", &[src], rec.sink()).unwrap();
    let counters = p.source_counters();
    p.run().await.unwrap();
    assert_eq!(rec.numbers(), (0..6000).collect::<Vec<_>>());
    assert_eq!(counters.bytes_read(), lines(0, 6000).len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sink_error_stops_the_pipeline_and_names_the_sink() {
    let s = schema("zeek.t");
    // An endless source: only the error can stop it.
    let source =
        futures::stream::iter(0u64..).map(move |i| Ok::<_, std::io::Error>(batch(&s, i, 1, 1)));
    let mut p = Pipeline::default();
    let src = p.add_stream("endless", source).unwrap();
    let bad = Recorder {
        fail_after: Some(3),
        ..Default::default()
    };
    let good = Recorder::default();
    p.add_sink("disk", &[src], bad.sink()).unwrap();
    p.add_sink("other", &[src], good.sink()).unwrap();
    let err = p.run().await.unwrap_err();
    assert!(matches!(err, PipelineError::Sink { ref name, .. } if name == "disk"));
    assert_eq!(err.to_string(), "sink disk: disk full writing /x/y");
    assert_eq!(bad.numbers(), vec![0, 1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_everything_read() {
    let s = schema("zeek.t");
    let produced = Arc::new(AtomicU64::new(0));
    let p2 = produced.clone();
    let source = futures::stream::iter(0u64..).then(move |i| {
        let s = s.clone();
        let p2 = p2.clone();
        async move {
            tokio::time::sleep(Duration::from_micros(200)).await;
            p2.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>(batch(&s, i, 1, 1))
        }
    });
    let mut p = Pipeline::default();
    let src = p.add_stream("live", source).unwrap();
    let b = p
        .add_batcher(
            "batch",
            &[src],
            weir::unstable::batcher::BatchConfig::default(),
        )
        .unwrap();
    let rec = Recorder::default();
    p.add_sink("sink", &[b], rec.sink()).unwrap();
    let token = p.shutdown_token();
    let handle = tokio::spawn(p.run());
    while produced.load(Ordering::SeqCst) < 50 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    token.cancel();
    let summary = handle.await.unwrap().unwrap();
    assert!(summary.interrupted);
    let n = produced.load(Ordering::SeqCst);
    assert_eq!(rec.numbers(), (0..n).collect::<Vec<_>>());
}

#[tokio::test]
async fn graph_errors() {
    let mut p = Pipeline::default();
    let s = p
        .add_stream(
            "s",
            futures::stream::empty::<Result<Batch, std::io::Error>>(),
        )
        .unwrap();
    assert!(p
        .add_stream(
            "s",
            futures::stream::empty::<Result<Batch, std::io::Error>>()
        )
        .is_err());
    let e = p
        .add_sink("twice", &[s, s], Recorder::default().sink())
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "pipeline: stage \"twice\": input \"s\" is listed twice"
    );
    let e = p.run().await.unwrap_err();
    assert_eq!(e.to_string(), "pipeline: stage \"s\" has no consumer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_reader_source_stops_on_shutdown_keeping_what_was_read() {
    use tokio::io::AsyncWriteExt;
    let (mut writer, reader) = tokio::io::duplex(1 << 16);
    let mut p = Pipeline::default();
    let src = p
        .add_source(
            "live",
            vec![Input::reader("live", reader)],
            SourceConfig::zeek(ReaderOptions::default(), 1 << 20),
        )
        .unwrap();
    let b = p
        .add_batcher(
            "batch",
            &[src],
            weir::unstable::batcher::BatchConfig {
                timeout: Duration::from_millis(50),
                ..Default::default()
            },
        )
        .unwrap();
    let rec = Recorder::default();
    p.add_sink("sink", &[b], rec.sink()).unwrap();
    let token = p.shutdown_token();
    let handle = tokio::spawn(p.run());
    writer
        .write_all(b"#separator \\x09\n#path\tlive\n#fields\tn\n#types\tcount\n0\n1\n2\n")
        .await
        .unwrap();
    // The events arrive while the input is still open (batch timeout).
    while rec.numbers().len() < 3 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    writer.write_all(b"3\n4\n5").await.unwrap(); // "5" is a partial line
    while rec.numbers().len() < 5 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    token.cancel();
    let summary = handle.await.unwrap().unwrap();
    assert!(summary.interrupted);
    assert_eq!(rec.numbers(), vec![0, 1, 2, 3, 4]);
    assert!(
        summary
            .warnings
            .iter()
            .any(|w| w.contains("partial last line")),
        "{:?}",
        summary.warnings
    );
    drop(writer);
}

/// Runs text through a source with `parallel_tsv` threads and returns every event's values.
async fn decode_all(text: &str, parallel_tsv: usize) -> Vec<(String, Vec<Value>)> {
    let mut p = Pipeline::default();
    let mut config = SourceConfig::zeek(ReaderOptions::default(), 1 << 20);
    config.parallel_tsv = parallel_tsv;
    let src = p
        .add_source("in", vec![Input::bytes("mem", text.to_string())], config)
        .unwrap();
    let (tx, rx) = futures::channel::mpsc::unbounded();
    p.add_sink("out", &[src], tx).unwrap();
    p.run().await.unwrap();
    let batches: Vec<Batch> = rx.collect().await;
    batches
        .iter()
        .flat_map(|b| {
            let name = b.schema().name.clone();
            b.to_values()
                .unwrap()
                .into_iter()
                .map(move |r| (name.clone(), r))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_tsv_decoding_equals_sequential() {
    let mut text = String::new();
    for (k, path) in ["conn", "dns", "conn"].iter().enumerate() {
        text.push_str(&format!(
            "#separator \\x09\n#path\t{path}\n#fields\tts\tn\ts\tv\n#types\ttime\tcount\tstring\tvector[int]\n"
        ));
        for i in 0..40_000u64 {
            text.push_str(&format!(
                "{}.{:06}\t{i}\tline {k} {i}\t-1,{i}\n",
                1_600_000_000 + i,
                i
            ));
        }
        text.push_str("#close\t2020-01-01-00-00-00\n");
    }
    assert!(text.len() as u64 > weir::unstable::source::decode::PARALLEL_MIN_SIZE);
    let seq = decode_all(&text, 0).await;
    let par = decode_all(&text, 3).await;
    assert_eq!(seq.len(), 120_000);
    assert!(seq == par, "parallel decoding differs");
}

struct Panics;

impl BatchDecoder for Panics {
    fn decode(&mut self, _src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        panic!("decoder bug")
    }
    fn decode_eof(&mut self, _src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        panic!("decoder bug")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_decoder_is_an_error_not_an_early_end() {
    let mut p = Pipeline::default();
    let src = p
        .add_source(
            "in",
            vec![Input::bytes("mem", "1\n2\n")],
            SourceConfig {
                compression: Compression::Auto,
                format: Format::Auto,
                reader: ReaderOptions::default(),
                decoders: Arc::new(|_, _| Box::new(Panics) as Box<dyn BatchDecoder>),
                decode_ahead: 1,
                channel_capacity: 4096,
                parallel_tsv: 0,
                follow: None,
                resume: None,
                community_id: None,
            },
        )
        .unwrap();
    p.add_sink("sink", &[src], Recorder::default().sink())
        .unwrap();
    let err = p.run().await.unwrap_err();
    assert!(err.to_string().contains("mem"), "{err}");
    assert!(err.to_string().contains("failed unexpectedly"), "{err}");
}
