//! Builds and runs a pipeline in code: Zeek TSV text held in memory is parsed, re-batched and
//! written as JSON lines to stdout, while a second sink (fan-out) counts the events.
//!
//! ```sh
//! cargo run --example embed_pipeline
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::SinkExt;
use weir::{
    writer_for, Batch, BatchConfig, Input, OutputFormat, Pipeline, PipelineOptions, ReaderOptions,
    SourceConfig, WriterSink,
};

const CONN: &str = "#separator \\x09
#set_separator\t,
#empty_field\t(empty)
#unset_field\t-
#path\tconn
#fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto
#types\ttime\tstring\taddr\tport\taddr\tport\tenum
1258531221.486539\tPii6cUUq1v4\t192.168.1.102\t68\t192.168.1.1\t67\tudp
1258531680.237254\tnkCxlvNN8pi\t192.168.1.103\t137\t192.168.1.255\t137\tudp
";

const DNS: &str = "{\"_path\":\"dns\",\"ts\":1258531221.5,\"query\":\"example.com\",\"rcode\":0}
";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut pipeline = Pipeline::new(PipelineOptions {
        channel_capacity: 1 << 20, // at most 1 MiB of batches in flight per edge
        ..PipelineOptions::default()
    });

    // One source stage reading two in-memory inputs in order (TSV and JSON, detected).
    let inputs = vec![
        Input::bytes("conn.log", CONN),
        Input::bytes("dns.json", DNS),
    ];
    let source = pipeline.add_source(
        "logs",
        inputs,
        SourceConfig::zeek(ReaderOptions::default(), 1 << 20),
    )?;

    // Re-batch: at most 1024 events, flushed after 250 ms.
    let batched = pipeline.add_batcher(
        "batch",
        &[source],
        BatchConfig {
            timeout: Duration::from_millis(250),
            ..BatchConfig::default()
        },
    )?;

    // Fan-out: every batch goes to stdout as JSON lines and to a counting sink.
    pipeline.add_sink(
        "stdout",
        &[batched],
        WriterSink::new(writer_for(OutputFormat::Json), tokio::io::stdout()),
    )?;
    let count = Arc::new(AtomicU64::new(0));
    let counter = count.clone();
    let counting = futures::sink::drain().with(move |b: Batch| {
        counter.fetch_add(b.len() as u64, Ordering::Relaxed);
        futures::future::ready(Ok::<_, std::convert::Infallible>(()))
    });
    pipeline.add_sink("count", &[batched], counting)?;

    let metrics = pipeline.metrics();
    let summary = pipeline.run().await?;
    eprintln!(
        "{} events in {:?}; stages: {}",
        count.load(Ordering::Relaxed),
        summary.elapsed,
        metrics.to_json()["stages"]
    );
    assert_eq!(count.load(Ordering::Relaxed), 3);
    Ok(())
}
