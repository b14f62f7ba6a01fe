//! The batcher as a stream adapter: events are never lost, reordered within a schema or across
//! windows, or mixed across schemas, limits hold for any input and window (a group of batches),
//! and partial windows flush on time (paused tokio time).
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
        let config = BatchConfig { max_events, max_bytes, timeout: Duration::from_secs(3600), regroup: true };
        let out: Vec<Batch> = rt.block_on(
            Batcher::new(futures::stream::iter(batches.into_iter().map(Ok::<_, ()>)), config)
                .map(|r| r.unwrap())
                .collect(),
        );
        // Every event once, and within each schema in input order.
        let mut got: Vec<(String, u64)> = out.iter().flat_map(events).collect();
        let mut sorted_want = want.clone();
        sorted_want.sort_by_key(|e| e.1);
        got.sort_by_key(|e| e.1);
        prop_assert_eq!(&got, &sorted_want);
        for k in 0..3u8 {
            let name = format!("zeek.s{k}");
            let of = |v: Vec<(String, u64)>| v.into_iter().filter(|e| e.0 == name).collect::<Vec<_>>();
            prop_assert_eq!(of(out.iter().flat_map(events).collect()), of(want.clone()));
        }
        // The output is a sequence of groups (windows), each in the limits as a whole, of
        // distinct schemas, every event of a group before every event of the next one.
        let mut groups: Vec<Vec<&Batch>> = vec![Vec::new()];
        for b in &out {
            groups.last_mut().unwrap().push(b);
            if !b.group_next() {
                groups.push(Vec::new());
            }
        }
        prop_assert!(groups.pop().unwrap().is_empty(), "the last group is not closed");
        let mut last_max: Option<u64> = None;
        for g in &groups {
            let n: usize = g.iter().map(|b| b.len()).sum();
            let bytes: usize = g.iter().map(|b| b.byte_size()).sum();
            prop_assert!(n <= max_events);
            prop_assert!(bytes <= max_bytes || n == 1, "a group of {} events, {} bytes", n, bytes);
            let mut names: Vec<&str> = g.iter().map(|b| b.schema().name.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            prop_assert_eq!(names.len(), g.len(), "a schema twice in a group");
            let ids: Vec<u64> = g.iter().flat_map(|b| events(b)).map(|e| e.1).collect();
            let (lo, hi) = (*ids.iter().min().unwrap(), *ids.iter().max().unwrap());
            prop_assert!(last_max.is_none_or(|m| m < lo), "groups overlap in input order");
            last_max = Some(hi);
        }
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
        // A group is only cut at a limit: the input batch after it, which the next group
        // holds whole or (cut from a bigger one) is a piece alone, would not fit with it.
        for w in groups.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            let n: usize = a.iter().chain(b.iter()).map(|x| x.len()).sum();
            let bytes: usize = a.iter().chain(b.iter()).map(|x| x.byte_size()).sum();
            prop_assert!(
                n > max_events || bytes > max_bytes || b.len() == 1,
                "windows of {} events, {} bytes in all cut without reason", n, bytes
            );
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
    // Another schema joins the window; its timer runs from the window's first event (which
    // the batcher sees at its first poll, 300 ms in).
    tx.unbounded_send(Ok(batch(1, 2, &[1]))).unwrap();
    let first = b.next().await.unwrap().unwrap();
    assert_eq!(events(&first).len(), 2);
    assert!(first.group_next());
    assert_eq!(t0.elapsed(), Duration::from_millis(1300));
    let second = b.next().await.unwrap().unwrap();
    assert_eq!(second.schema().name, "zeek.s1");
    assert!(!second.group_next());
    assert_eq!(t0.elapsed(), Duration::from_millis(1300));
    // The next window's timer starts with its first event.
    tx.unbounded_send(Ok(batch(1, 3, &[1]))).unwrap();
    let third = b.next().await.unwrap().unwrap();
    assert_eq!(events(&third), [("zeek.s1".to_string(), 3)]);
    assert_eq!(t0.elapsed(), Duration::from_millis(2300));
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
    let fourth = b.next().await.unwrap().unwrap();
    assert_eq!(fourth.len(), BatchConfig::DEFAULT_MAX_EVENTS);
    assert_eq!(t0.elapsed(), Duration::from_millis(2300));
    // End of input flushes what is pending at once.
    tx.unbounded_send(Ok(batch(2, 5000, &[1]))).unwrap();
    drop(tx);
    assert_eq!(b.next().await.unwrap().unwrap().len(), 1);
    assert!(b.next().await.is_none());
    assert_eq!(t0.elapsed(), Duration::from_millis(2300));
}
