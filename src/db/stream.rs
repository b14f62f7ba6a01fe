//! [`BatchStream`]: a query's record batches as a `futures::Stream`, for async programs.

use std::pin::Pin;
use std::task::{Context, Poll};

use arrow_array::RecordBatch;

use super::error::Result;
use super::producer::Producer;

/// The record batches of a query as a [`futures::Stream`] of `Result<RecordBatch>`, made by
/// [`crate::QueryResult::stream`]: the same items as [`crate::Batches`], read without
/// blocking the runtime (the search runs on a thread of its own, not on the runtime's).
///
/// Dropping the stream stops the query: its thread ends at its next batch (it is not waited
/// for, which would block the runtime).
#[derive(Debug)]
pub struct BatchStream {
    rx: tokio::sync::mpsc::Receiver<Result<RecordBatch>>,
    producer: Producer,
}

impl BatchStream {
    pub(crate) fn new(
        rx: tokio::sync::mpsc::Receiver<Result<RecordBatch>>,
        producer: Producer,
    ) -> BatchStream {
        BatchStream { rx, producer }
    }
}

impl futures::Stream for BatchStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for BatchStream {
    fn drop(&mut self) {
        self.producer.cancel();
        self.rx.close();
    }
}
