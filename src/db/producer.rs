//! The thread that runs one query and hands its record batches to a bounded channel: what
//! both [`super::Batches`] (an iterator) and [`super::BatchStream`] (a `Stream`) read.
//!
//! The channel holds at most [`BATCHES_IN_FLIGHT`] batches: a reader that stops reading
//! stops the search (its thread waits on the full channel), so a query's results are never
//! all in memory. Dropping the reader cancels the archive handle's token (the search stops
//! at its next batch, even an aggregation that has sent nothing yet) and closes the channel
//! (a blocked send fails, the thread ends).
//!
//! Damaged batches are items of their own (`Err`), and the search goes on; a failure of
//! the query (an error of the search, a conversion, a panic of the thread) is the last item.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use tokio_util::sync::CancellationToken;

use super::arrow::record_batches;
use super::error::{Error, Result};
use crate::query::export::{export, ExportSink, Part, Source};
use crate::query::{Chain, Flow, QueryError, SearchOptions};
use crate::store::Archive;

/// How many record batches a running query may have converted but not yet read.
pub const BATCHES_IN_FLIGHT: usize = 4;

/// Hands one item to the reader; `false` once the reader is gone.
pub(crate) type Send = Box<dyn FnMut(Result<RecordBatch>) -> bool + std::marker::Send>;

/// A running query's thread.
#[derive(Debug)]
pub(crate) struct Producer {
    cancel: CancellationToken,
    thread: Option<JoinHandle<()>>,
}

/// Counts a query thread while it lives (see [`crate::DbStats::query_threads`]).
struct Running(Arc<AtomicUsize>);

impl Running {
    fn new(count: Arc<AtomicUsize>) -> Running {
        count.fetch_add(1, Ordering::SeqCst);
        Running(count)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Producer {
    /// Starts `chain` over `archive` (at most `limit` events) on a thread of its own,
    /// counted in `running`, handing each batch to `send`.
    pub(crate) fn spawn(
        mut archive: Archive,
        chain: Chain,
        limit: Option<u64>,
        running: Arc<AtomicUsize>,
        mut send: Send,
    ) -> Result<Producer> {
        let cancel = CancellationToken::new();
        archive.cancel_on(cancel.clone());
        let counted = Running::new(running);
        let thread = std::thread::Builder::new()
            .name("weir-query".into())
            .spawn(move || {
                let _counted = counted;
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run(&archive, &chain, limit, &mut send)
                }));
                if ran.is_err() {
                    send(Err(Error::Thread));
                }
            })
            .map_err(Error::Io)?;
        Ok(Producer {
            cancel,
            thread: Some(thread),
        })
    }

    /// No thread: the query could not start (its error is the reader's one item).
    pub(crate) fn finished() -> Producer {
        Producer {
            cancel: CancellationToken::new(),
            thread: None,
        }
    }

    /// Stops the search at its next batch (the reader is going away).
    pub(crate) fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Waits for the thread to end (after the channel closed or [`Producer::cancel`]).
    pub(crate) fn join(&mut self) {
        if let Some(thread) = self.thread.take() {
            // A panic was caught in the thread and reported as its last item.
            let _ = thread.join();
        }
    }
}

/// The thread's sink: each slice that comes out converted to record batches and sent, each
/// damaged batch sent as an error of its own, in the order they come.
struct Channel<'a> {
    send: &'a mut Send,
    /// The reader went away while a damaged batch was being sent.
    gone: bool,
}

/// Why the thread stopped handing out batches early.
enum Stop {
    /// The reader is gone.
    Gone,
    Fail(Error),
}

impl ExportSink for Channel<'_> {
    type Error = Stop;

    fn write(&mut self, part: Part, take: usize) -> std::result::Result<Flow, Stop> {
        if self.gone {
            return Err(Stop::Gone);
        }
        let batches = record_batches(&part, take).map_err(|e| Stop::Fail(e.into()))?;
        for batch in batches {
            if !(self.send)(Ok(batch)) {
                return Err(Stop::Gone);
            }
        }
        Ok(Flow::More)
    }

    fn damaged(&mut self, error: QueryError) {
        if !matches!(error, QueryError::Cancelled) && !self.gone {
            self.gone = !(self.send)(Err(error.into()));
        }
    }
}

/// The thread's work: runs the chain, converting each slice that comes out.
fn run(archive: &Archive, chain: &Chain, limit: Option<u64>, send: &mut Send) {
    let mut sink = Channel { send, gone: false };
    // A plain expression hands out each batch's hits, which a batch stored in columns
    // decodes from its columns (`query::to_arrow`), its rows never rebuilt.
    let source = match chain.has_operators() {
        false => Source::Search(
            chain.scan(),
            SearchOptions {
                defer_columns: true,
                ..SearchOptions::default()
            },
        ),
        true => Source::Chain(chain),
    };
    let result = export(archive, source, limit, &mut sink);
    if archive.is_cancelled() {
        return;
    }
    match result {
        Err(e) => {
            (sink.send)(Err(e.into()));
        }
        Ok((_, Some(Stop::Fail(e)))) => {
            (sink.send)(Err(e));
        }
        Ok((_, Some(Stop::Gone))) | Ok((_, None)) => {}
    }
}
