//! The CRC-32 of a compressed file's decompressed text before each of its checkpoints'
//! positions ([`crate::checkpoint::FileCheckpoint::sum`]), taken from the text as the import
//! reads it: [`SumTee`] copies each decompressed read into a queue shared with a [`TextSum`],
//! which adds the bytes before each position asked for to a running CRC-32 and drops them.
//! The queue holds the text read but not yet summed (what the decoder reads ahead of the
//! positions it reports), never the whole file unless no position is ever asked for.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

use super::input::BoxReader;

/// Text read and not yet summed.
type Queue = Arc<Mutex<VecDeque<u8>>>;

/// Passes a decompressed reader's bytes on, copying them into a [`TextSum`]'s queue.
pub(crate) struct SumTee {
    inner: BoxReader,
    queue: Queue,
}

impl AsyncRead for SumTee {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = self.inner.as_mut().poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let new = &buf.filled()[before..];
            if !new.is_empty() {
                match self.queue.lock() {
                    Ok(mut q) => q.extend(new),
                    Err(_) => return Poll::Ready(Err(io::Error::other("text sum queue poisoned"))),
                }
            }
        }
        polled
    }
}

/// The CRC-32 of the text before positions that only move forward.
#[derive(Debug)]
pub(crate) struct TextSum {
    queue: Queue,
    /// Text offset of the queue's first byte (the bytes summed so far).
    at: u64,
    hasher: crc32fast::Hasher,
    /// A position ran past the text read: no sum from then on.
    short: bool,
}

impl TextSum {
    /// Sums the text that `reader` yields from text offset `at` on, the text before which has
    /// the CRC-32 `crc`: returns the reader to read instead.
    pub fn tee(reader: BoxReader, at: u64, crc: u32) -> (BoxReader, TextSum) {
        let queue = Queue::default();
        let tee = SumTee {
            inner: reader,
            queue: queue.clone(),
        };
        let sum = TextSum {
            queue,
            at,
            hasher: crc32fast::Hasher::new_with_initial_len(crc, at),
            short: false,
        };
        (Box::pin(tee), sum)
    }

    /// The CRC-32 of the text before `offset`; `None` for an offset before one asked for
    /// already, or past the text read so far.
    pub fn at(&mut self, offset: u64) -> Option<u32> {
        if self.short || offset < self.at {
            return None;
        }
        let mut q = self.queue.lock().ok()?;
        let n = usize::try_from(offset - self.at).ok()?;
        if n > q.len() {
            self.short = true;
            return None;
        }
        let (a, b) = q.as_slices();
        let from_a = n.min(a.len());
        self.hasher.update(&a[..from_a]);
        self.hasher.update(&b[..n - from_a]);
        q.drain(..n);
        self.at = offset;
        Some(self.hasher.clone().finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// The sums are those of the text's prefixes, whatever the reads, from a base on.
    #[tokio::test]
    async fn sums_are_those_of_the_prefixes() {
        let text = b"#fields\ta\n1\n22\n333\n".to_vec();
        let base = crc32fast::hash(&text[..3]);
        let reader: BoxReader = Box::pin(std::io::Cursor::new(text[3..].to_vec()));
        let (mut reader, mut sum) = TextSum::tee(reader, 3, base);
        let mut buf = [0u8; 4];
        let n = reader.read(&mut buf).await.unwrap();
        assert_eq!(sum.at(3 + n as u64), Some(crc32fast::hash(&text[..3 + n])));
        assert_eq!(sum.at(3 + n as u64 + 1), None, "past the text read");
        let mut sum2 = TextSum::tee(Box::pin(std::io::Cursor::new(text.clone())), 0, 0);
        let mut rest = Vec::new();
        sum2.0.read_to_end(&mut rest).await.unwrap();
        assert_eq!(sum2.1.at(10), Some(crc32fast::hash(&text[..10])));
        assert_eq!(sum2.1.at(9), None, "backwards");
        assert_eq!(sum2.1.at(15), Some(crc32fast::hash(&text[..15])));
    }
}
