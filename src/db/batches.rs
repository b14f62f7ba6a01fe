//! [`Batches`]: a query's record batches as an iterator, read from its thread
//! ([`super::producer`]) as they come.

use arrow_array::RecordBatch;

use super::error::Result;
use super::producer::Producer;

/// The record batches of a query, in the order the query produces them: an iterator of
/// `Result<RecordBatch>`, made by [`crate::QueryResult::batches`] (or a `for` loop over a
/// [`crate::QueryResult`]).
///
/// The search runs on a thread of its own, at most
/// [`BATCHES_IN_FLIGHT`](crate::BATCHES_IN_FLIGHT) batches ahead of the reader. An `Err`
/// item is a damaged batch (its events are left out; the iteration goes on) or, as the last
/// item, the failure of the query. Dropping the iterator stops the query and waits for its
/// thread to end.
#[derive(Debug)]
pub struct Batches {
    rx: Option<std::sync::mpsc::Receiver<Result<RecordBatch>>>,
    producer: Producer,
}

impl Batches {
    pub(crate) fn new(
        rx: std::sync::mpsc::Receiver<Result<RecordBatch>>,
        producer: Producer,
    ) -> Batches {
        Batches {
            rx: Some(rx),
            producer,
        }
    }
}

impl Iterator for Batches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.rx.as_ref()?.recv().ok();
        if item.is_none() {
            // The thread dropped its end: it is done.
            self.rx = None;
            self.producer.join();
        }
        item
    }
}

impl Drop for Batches {
    fn drop(&mut self) {
        self.producer.cancel();
        // A send blocked on the full channel fails now.
        self.rx = None;
        self.producer.join();
    }
}
