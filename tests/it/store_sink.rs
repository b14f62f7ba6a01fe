//! The async segment-writer sink: backpressured, durable on flush, summary after close.

use crate::common;

use common::store::{batch, expected, read_all, schema};
use futures::{stream, SinkExt, StreamExt};
use weir::unstable::store::{ArchiveSink, StoreError, StoreOptions};
use weir::unstable::wal::SyncPolicy;

fn opts(max: u64) -> StoreOptions {
    StoreOptions {
        max_segment_size: max,
        sync: SyncPolicy::Batch,
        ..StoreOptions::default()
    }
}

#[tokio::test]
async fn sink_writes_everything_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let s = schema("conn", 3);
    let batches: Vec<_> = (0..50)
        .map(|i| batch(&s, 10 + i % 7, 30, i as u64))
        .collect();
    let (mut sink, report) = ArchiveSink::open(dir.path(), opts(16 << 10)).unwrap();
    assert!(report.warnings.is_empty());
    let mut input = stream::iter(batches.clone()).map(Ok::<_, StoreError>);
    sink.send_all(&mut input).await.unwrap();
    // Flushed: a reader sees every event even before close.
    assert_eq!(read_all(dir.path()), expected(&batches));
    sink.close().await.unwrap();
    let summary = sink.summary().unwrap();
    let events: u64 = batches.iter().map(|b| b.len() as u64).sum();
    assert_eq!(summary.events, events);
    assert_eq!(summary.next_id, events);
    assert!(summary.segments > 1, "{summary:?}");
    assert_eq!(read_all(dir.path()), expected(&batches));
    // The lock is released after close.
    let (sink, _) = ArchiveSink::open(dir.path(), opts(16 << 10)).unwrap();
    drop(sink);
}

#[tokio::test]
async fn batches_prepared_on_several_threads_arrive_in_order() {
    // Large and tiny batches alternate, so a later tiny batch is prepared (compressed and
    // sketched) long before the large one sent before it: the writer must still append them
    // in the order sent, also where a segment's end splits a prepared batch.
    let dir = tempfile::tempdir().unwrap();
    let s = schema("conn", 4);
    let batches: Vec<_> = (0..40)
        .map(|i| {
            let rows = if i % 2 == 0 { 3000 } else { 1 };
            batch(&s, rows, 40, i as u64)
        })
        .collect();
    let (mut sink, _) = ArchiveSink::open(dir.path(), opts(256 << 10)).unwrap();
    let mut input = stream::iter(batches.clone()).map(Ok::<_, StoreError>);
    sink.send_all(&mut input).await.unwrap();
    sink.close().await.unwrap();
    let summary = sink.summary().unwrap();
    assert!(summary.segments > 2, "{summary:?}");
    assert_eq!(read_all(dir.path()), expected(&batches));
}

#[tokio::test]
async fn sink_applies_backpressure() {
    let dir = tempfile::tempdir().unwrap();
    let s = schema("conn", 1);
    let (mut sink, _) = ArchiveSink::open(dir.path(), opts(1 << 20)).unwrap();
    // Feeding batches one by one: each feed waits for room, so never more than the small queue
    // is outstanding; the writer drains it.
    for i in 0..20 {
        sink.feed(batch(&s, 5, 8, i)).await.unwrap();
    }
    sink.flush().await.unwrap();
    sink.close().await.unwrap();
    assert_eq!(sink.summary().unwrap().events, 100);
}

#[tokio::test]
async fn sink_reports_store_errors() {
    let dir = tempfile::tempdir().unwrap();
    let s = schema("huge", 2);
    let (mut sink, _) = ArchiveSink::open(dir.path(), opts(4096)).unwrap();
    // One event larger than a segment: the writer fails and the sink says why.
    let mut result = sink.send(batch(&s, 1, 10_000, 0)).await;
    for i in 0..5 {
        if result.is_err() {
            break;
        }
        result = sink.send(batch(&s, 1, 8, i)).await;
    }
    let err = match result {
        Err(e) => e,
        Ok(()) => sink.close().await.unwrap_err(),
    };
    assert!(err.to_string().contains("cannot fit in a segment"), "{err}");
}

#[test]
fn second_sink_is_refused_while_the_first_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (sink, _) = ArchiveSink::open(dir.path(), opts(1 << 20)).unwrap();
    let err = ArchiveSink::open(dir.path(), opts(1 << 20)).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
    drop(sink);
}
