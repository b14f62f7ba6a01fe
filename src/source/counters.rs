//! Byte counts of sources, for progress display and metrics, and the readers that count.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Byte counts of sources, for progress and metrics. Shared by every source of a stage.
#[derive(Debug, Default)]
pub struct SourceCounters {
    read: AtomicU64,
    decoded: AtomicU64,
    total: AtomicU64,
    unknown_total: AtomicU64,
}

impl SourceCounters {
    /// Bytes read from the underlying sources (compressed, as stored).
    pub fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// Bytes after decompression.
    pub fn bytes_decoded(&self) -> u64 {
        self.decoded.load(Ordering::Relaxed)
    }

    /// Total size of the sources opened so far, when all of them have a known size (files);
    /// `None` once a source of unknown size (stdin, a reader) was opened.
    pub fn total(&self) -> Option<u64> {
        (self.unknown_total.load(Ordering::Relaxed) == 0)
            .then(|| self.total.load(Ordering::Relaxed))
    }

    /// Adds to the known total size of the inputs (called by whoever knows the sizes up front,
    /// e.g. the CLI with file metadata, so that percent covers all files from the start).
    pub fn add_total(&self, bytes: u64) {
        self.total.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts `bytes` read and decoded from a source read without a counting reader (a
    /// followed plain file).
    pub fn add_plain(&self, bytes: u64) {
        self.read.fetch_add(bytes, Ordering::Relaxed);
        self.decoded.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Records a source whose size cannot be known.
    pub fn add_unknown_total(&self) {
        self.unknown_total.fetch_add(1, Ordering::Relaxed);
    }
}

/// Counts the bytes passing through an async reader, as read (from the source, compressed)
/// or as decoded (after decompression).
pub(super) struct Counted<R> {
    inner: R,
    counter: Arc<SourceCounters>,
    decoded: bool,
}

impl<R> Counted<R> {
    /// Counts what `inner` yields as bytes read from the source.
    pub(super) fn read(inner: R, counter: Arc<SourceCounters>) -> Counted<R> {
        Counted {
            inner,
            counter,
            decoded: false,
        }
    }

    /// Counts what `inner` yields as decompressed bytes.
    pub(super) fn decoded(inner: R, counter: Arc<SourceCounters>) -> Counted<R> {
        Counted {
            inner,
            counter,
            decoded: true,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Counted<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = (buf.filled().len() - before) as u64;
        if n > 0 {
            let c = if self.decoded {
                &self.counter.decoded
            } else {
                &self.counter.read
            };
            c.fetch_add(n, Ordering::Relaxed);
        }
        r
    }
}

/// Counts the bytes read from a blocking reader as read from the source.
pub(super) struct CountedRead<R> {
    pub(super) inner: R,
    pub(super) counters: Arc<SourceCounters>,
}

impl<R: io::Read> io::Read for CountedRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counters.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}
