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
/// use arrow_array::cast::AsArray;
/// let db = weir::Db::open(&dir)?;
/// let mut uids = Vec::new();
/// for batch in db.query("summarize n=count() by uid | sort uid")?.batches() {
///     let batch = batch?;
///     let column = batch.column_by_name("uid").ok_or("no uid")?;
///     uids.extend(column.as_string::<i32>().iter().flatten().map(String::from));
/// }
/// assert_eq!(uids, ["Pii6cUUq1v4", "nkCxlvNN8pi"]);
/// # Ok(())
/// # }
/// ```
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
