//! The batcher as a stream adapter: events are never lost, reordered or mixed across schemas,
//! limits hold for any input, and partial batches flush on time (paused tokio time).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::time::Duration;

use futures::StreamExt;
use proptest::prelude::*;
use weir::unstable::batch::{Batch, BatchBuilder};
use weir::unstable::batcher::{BatchConfig, Batcher};
use weir::unstable::types::{Field, Schema, SchemaRef, Type};
use weir::unstable::value::Value;

fn schema(k: u8) -> SchemaRef {
    Schema::new(
        format!("zeek.s{k}"),
        vec![
            Field::new("ts", Type::Time),
            Field::new("n", Type::Count),
            Field::new("s", Type::String),
        ],
    )
    .into_shared()
}

/// A batch of schema `k` with events numbered from `from`, each with `pad` bytes of text.
fn batch(k: u8, from: u64, pads: &[usize]) -> Batch {
    let mut b = BatchBuilder::new(schema(k));
    for (i, &pad) in pads.iter().enumerate() {
        let n = from + i as u64;
        let mut e = b.begin_row();
        e.int(1000 - n as i64);
        e.uint(n);
        e.bytes(&vec![b'x'; pad]);
        b.finish_row(Some(1000 - n as i64));
    }
    b.finish()
}

fn events(b: &Batch) -> Vec<(String, u64)> {
    b.to_values()
        .unwrap()
        .into_iter()
        .map(|r| match r[1] {
            Value::Count(n) => (b.schema().name.clone(), n),
            ref v => panic!("{v:?}"),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn output_is_input_within_limits(
        input in prop::collection::vec((0u8..3, prop::collection::vec(0usize..200, 0..40)), 0..30),
        max_events in 1usize..50,
        max_bytes in 1usize..3000,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let mut next = 0u64;
        let batches: Vec<Batch> = input
            .iter()
            .map(|(k, pads)| {
                let b = batch(*k, next, pads);
                next += pads.len() as u64;
                b
            })
            .collect();
        let want: Vec<(String, u64)> = batches.iter().flat_map(events).collect();
        let config = BatchConfig { max_events, max_bytes, timeout: Duration::from_secs(3600) };
        let out: Vec<Batch> = rt.block_on(
            Batcher::new(futures::stream::iter(batches.into_iter().map(Ok::<_, ()>)), config)
                .map(|r| r.unwrap())
                .collect(),
        );
        let got: Vec<(String, u64)> = out.iter().flat_map(events).collect();
        prop_assert_eq!(got, want);
        for b in &out {
            prop_assert!(!b.is_empty());
            prop_assert!(b.len() <= max_events);
            // Only a single event may exceed the byte limit.
            prop_assert!(b.byte_size() <= max_bytes || b.len() == 1);
            // The ts range is exactly that of the batch's rows.
            let ts: Vec<i64> = b.to_values().unwrap().iter().map(|r| match r[0] {
                Value::Time(t) => t,
                ref v => panic!("{v:?}"),
            }).collect();
            let lo = *ts.iter().min().unwrap();
            let hi = *ts.iter().max().unwrap();
            prop_assert_eq!(b.ts_range(), Some((lo, hi)));
        }
        // Consecutive output batches of one schema are only cut at a limit: together they
        // would not fit, or the second is a full piece cut from a bigger input.
        for i in 1..out.len() {
            let (a, b) = (&out[i - 1], &out[i]);
            if a.schema() != b.schema() {
                continue;
            }
            let together_too_big =
                a.len() + b.len() > max_events || a.byte_size() + b.byte_size() > max_bytes;
            let b_full = b.len() == max_events
                || out.get(i + 1).is_some_and(|c| {
                    c.schema() == b.schema() && b.byte_size() + c.row(0).len() > max_bytes
                });
            prop_assert!(together_too_big || b_full, "cut without reason: {} + {} events, {} + {} bytes",
                a.len(), b.len(), a.byte_size(), b.byte_size());
        }
    }
}

#[tokio::test(start_paused = true)]
async fn each_partial_batch_waits_the_timeout_from_its_first_event() {
    let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Batch, ()>>();
    let timeout = Duration::from_millis(1000);
    let mut b = Batcher::new(
        rx,
        BatchConfig {
            timeout,
            ..BatchConfig::default()
        },
    );
    let t0 = tokio::time::Instant::now();
    tx.unbounded_send(Ok(batch(0, 0, &[1, 1]))).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A schema change flushes the first batch at once and starts a new timer.
    tx.unbounded_send(Ok(batch(1, 2, &[1]))).unwrap();
    let first = b.next().await.unwrap().unwrap();
    assert_eq!(events(&first).len(), 2);
    assert_eq!(t0.elapsed(), Duration::from_millis(300));
    let second = b.next().await.unwrap().unwrap();
    assert_eq!(second.schema().name, "zeek.s1");
    assert_eq!(t0.elapsed(), Duration::from_millis(1300));
    // A full batch goes at once, without waiting.
    let mut full = BatchBuilder::new(schema(0));
    for i in 0..BatchConfig::DEFAULT_MAX_EVENTS as u64 {
        let mut e = full.begin_row();
        e.int(i as i64);
        e.uint(i);
        e.bytes(b"");
        full.finish_row(Some(i as i64));
    }
    tx.unbounded_send(Ok(full.finish())).unwrap();
    let third = b.next().await.unwrap().unwrap();
    assert_eq!(third.len(), BatchConfig::DEFAULT_MAX_EVENTS);
    assert_eq!(t0.elapsed(), Duration::from_millis(1300));
    // End of input flushes what is pending at once.
    tx.unbounded_send(Ok(batch(2, 5000, &[1]))).unwrap();
    drop(tx);
    assert_eq!(b.next().await.unwrap().unwrap().len(), 1);
    assert!(b.next().await.is_none());
    assert_eq!(t0.elapsed(), Duration::from_millis(1300));
}
