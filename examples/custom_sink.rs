//! A user-defined [`futures::Sink`] plugged into a weir pipeline: it counts events per schema.
//!
//! ```sh
//! cargo run --example custom_sink -- conn.log.gz dns.log.gz   # or Zeek text on stdin
//! ```

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::Sink;
use weir::{Batch, Input, Pipeline, ReaderOptions, SourceConfig};

/// Counts events per schema name. Sinks see batches of one schema each.
#[derive(Clone, Default)]
struct CountPerSchema {
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl Sink<Batch> for CountPerSchema {
    type Error = std::io::Error;

    fn poll_ready(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn start_send(self: Pin<&mut Self>, batch: Batch) -> Result<(), Self::Error> {
        let mut counts = self
            .counts
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        *counts.entry(batch.schema().name.clone()).or_default() += batch.len() as u64;
        Ok(())
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Without arguments, count a small built-in sample instead of waiting on stdin.
    let inputs = if args.is_empty() {
        vec![Input::bytes(
            "sample",
            "#separator \\x09\n#path\tconn\n#fields\tts\tuid\n#types\ttime\tstring\n\
             1.0\ta\n2.0\tb\n#separator \\x09\n#path\tdns\n#fields\tts\tquery\n\
             #types\ttime\tstring\n3.0\texample.com\n",
        )]
    } else {
        args.iter().map(|a| Input::Path(a.into())).collect()
    };
    let mut pipeline = Pipeline::default();
    let source = pipeline.add_source(
        "input",
        inputs,
        SourceConfig::zeek(ReaderOptions::default(), 16 << 20),
    )?;
    let sink = CountPerSchema::default();
    pipeline.add_sink("count", &[source], sink.clone())?;
    pipeline.run().await?;
    for (schema, n) in sink.counts.lock().map_err(|_| "poisoned")?.iter() {
        println!("{schema}\t{n}");
    }
    Ok(())
}
