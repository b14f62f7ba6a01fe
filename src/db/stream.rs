//! [`BatchStream`]: a query's record batches as a `futures::Stream`, for async programs.

use std::pin::Pin;
use std::task::{Context, Poll};

use arrow_array::RecordBatch;

use super::error::Result;
use super::producer::Producer;

/// The record batches of a query as a [`Stream`](futures::Stream) of `Result<RecordBatch>`, made by
/// [`crate::QueryResult::stream`]: the same items as [`crate::Batches`], read without
/// blocking the runtime (the search runs on a thread of its own, not on the runtime's).
///
/// Dropping the stream stops the query: its thread ends at its next batch (it is not waited
/// for, which would block the runtime).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let tmp = tempfile::tempdir()?;
/// # let dir = tmp.path().join("db");
/// # let log = "#separator \\x09\n#path\tconn\n#fields\tts\tuid\tid.orig_h\n#types\ttime\tstring\taddr\n1258531221.486539\tPii6cUUq1v4\t192.168.1.102\n1258531680.237254\tnkCxlvNN8pi\tfe80::1\n";
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// #     let mut pipeline = weir::Pipeline::default();
/// #     let config = weir::SourceConfig::zeek(weir::ReaderOptions::default(), 1 << 20);
/// #     let source = pipeline.add_source("logs", vec![weir::Input::bytes("memory", log)], config)?;
/// #     let batches = pipeline.add_batcher("batch", &[source], Default::default())?;
/// #     let (sink, _) = weir::ArchiveSink::open(&dir, Default::default())?;
/// #     pipeline.add_sink("archive", &[batches], sink)?;
/// #     pipeline.run().await?;
/// #     Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// use futures::TryStreamExt;
/// let db = weir::Db::open(&dir)?;
/// let runtime = tokio::runtime::Runtime::new()?;
/// let batches: Vec<_> = runtime.block_on(db.query("")?.stream().try_collect())?;
/// assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
/// # Ok(())
/// # }
/// ```
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
