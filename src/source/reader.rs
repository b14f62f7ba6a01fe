//! Reader threads: files and stdin are read by a dedicated OS thread each, with blocking
//! reads of [`CHUNK_SIZE`] bytes handed over a small bounded channel, so blocking file I/O
//! never runs on an async runtime worker and reading overlaps with decompression and parsing.
//! The thread stops when the reader side is dropped (stdin's thread may stay blocked in `read`
//! until more input arrives or the process exits; it holds nothing else).
//!
//! Once the `stop` token is cancelled a reader reads no more from its file or pipe, still
//! delivers the chunks it already read, then ends; nothing read is lost.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio::sync::mpsc;
use tokio_util::io::StreamReader;
use tokio_util::sync::CancellationToken;

use super::counters::{CountedRead, SourceCounters};
use super::inflate::{BufferPool, ParallelGunzip};
use super::input::BoxReader;

/// Size of one blocking read from a file or stdin.
pub const CHUNK_SIZE: usize = 1 << 20;

/// How many chunks a reader thread may read ahead of its consumer.
const CHUNKS_AHEAD: usize = 2;

/// Starts a thread reading a regular file in whole chunks (read straight into fresh buffers,
/// without zeroing them first); returns the async side.
pub(super) fn spawn_file_reader(
    name: String,
    file: std::fs::File,
    stop: &CancellationToken,
) -> BoxReader {
    use std::io::Read;
    let mut file = file;
    spawn_chunks(name, stop, move || {
        let mut buf = Vec::with_capacity(CHUNK_SIZE);
        (&mut file).take(CHUNK_SIZE as u64).read_to_end(&mut buf)?;
        Ok((!buf.is_empty()).then(|| Bytes::from(buf)))
    })
}

/// Starts a thread reading `read` (a pipe, stdin) in chunks, handing over what is there as
/// soon as a read returns little, so that a slow live source flows; returns the async side.
pub(super) fn spawn_reader<R: io::Read + Send + 'static>(
    name: String,
    mut read: R,
    stop: &CancellationToken,
) -> BoxReader {
    spawn_chunks(name, stop, move || {
        let mut buf = vec![0u8; CHUNK_SIZE];
        let mut filled = 0;
        // Fill the chunk unless the source is slow (a pipe): hand over what is there then.
        loop {
            match read.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => {
                    filled += n;
                    if filled == buf.len() || n < 64 << 10 {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        buf.truncate(filled);
        Ok((filled > 0).then(|| Bytes::from(buf)))
    })
}

/// Starts a thread calling `next` for chunks until it returns `None` or an error, handing
/// them over a small bounded channel; returns the async side.
fn spawn_chunks<F>(name: String, stop: &CancellationToken, mut next: F) -> BoxReader
where
    F: FnMut() -> io::Result<Option<Bytes>> + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(CHUNKS_AHEAD);
    let spawned = std::thread::Builder::new()
        .name(format!("weir-read {name}"))
        .spawn(move || loop {
            match next() {
                Ok(None) => return,
                Ok(Some(chunk)) => {
                    if tx.blocking_send(Ok(chunk)).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            }
        });
    match spawned {
        Ok(_) => Box::pin(StreamReader::new(chunk_stream(rx, stop.clone()))),
        Err(e) => Box::pin(FailedReader(Some(e))),
    }
}

/// Decompresses a gzip file with [`ParallelGunzip`] on a reader thread, counting compressed
/// bytes as read.
pub(super) fn spawn_parallel_gunzip(
    name: String,
    file: std::fs::File,
    counters: Arc<SourceCounters>,
    stop: &CancellationToken,
) -> BoxReader {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    // Count compressed bytes as they are read from the file (whatever way the members are
    // then decoded).
    let counted = CountedRead {
        inner: file,
        counters,
    };
    let mut gz = ParallelGunzip::new(io::BufReader::with_capacity(CHUNK_SIZE, counted), threads);
    spawn_chunks(name, stop, move || {
        let pool = gz.pool();
        Ok(gz
            .next()
            .transpose()?
            .map(|buf| Bytes::from_owner(Recycled { buf, pool })))
    })
}

/// A decoded chunk that goes back to its [`BufferPool`] when the last `Bytes` of it is dropped.
struct Recycled {
    buf: Vec<u8>,
    pool: BufferPool,
}

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.buf));
    }
}

/// A reader that fails once with the given error (a thread could not be started).
struct FailedReader(Option<io::Error>);

impl AsyncRead for FailedReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        _buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Poll::Ready(match self.0.take() {
            Some(e) => Err(e),
            None => Ok(()),
        })
    }
}

/// The chunks of a reader thread. Once `stop` is cancelled the channel is closed: the reader
/// thread reads no more, the chunks it already read are still delivered, then the stream ends.
fn chunk_stream(
    mut rx: mpsc::Receiver<io::Result<Bytes>>,
    stop: CancellationToken,
) -> impl futures::Stream<Item = io::Result<Bytes>> + Send {
    let mut stopped = Box::pin(stop.cancelled_owned());
    let mut closed = false;
    futures::stream::poll_fn(move |cx| {
        if !closed && stopped.as_mut().poll(cx).is_ready() {
            rx.close();
            closed = true;
        }
        rx.poll_recv(cx)
    })
}

/// A reader that ends (reads nothing more) once `stop` is cancelled.
pub(super) struct StopReader {
    inner: BoxReader,
    stopped: Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
}

impl StopReader {
    /// Reads `inner` until `stop` is cancelled.
    pub(super) fn new(inner: BoxReader, stop: &CancellationToken) -> StopReader {
        StopReader {
            inner,
            stopped: Box::pin(stop.clone().cancelled_owned()),
        }
    }
}

impl AsyncRead for StopReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.stopped.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Ok(()));
        }
        self.inner.as_mut().poll_read(cx, buf)
    }
}

/// Reads up to `n` bytes (fewer only at end of input), stopping early once `done` says so;
/// returns them and a reader that yields them again followed by the rest.
pub(super) async fn peek(
    mut reader: BoxReader,
    n: usize,
    done: impl Fn(&[u8]) -> bool,
) -> io::Result<(Vec<u8>, BoxReader)> {
    let mut prefix = Vec::with_capacity(n.min(4096));
    let mut buf = [0u8; 4096];
    while prefix.len() < n && !done(&prefix) {
        let want = (n - prefix.len()).min(buf.len());
        let got = reader.read(&mut buf[..want]).await?;
        if got == 0 {
            break;
        }
        prefix.extend_from_slice(&buf[..got]);
    }
    let again: BoxReader = Box::pin(io::Cursor::new(prefix.clone()).chain(reader));
    Ok((prefix, again))
}
