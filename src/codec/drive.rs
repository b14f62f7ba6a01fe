//! Driving a push decoder without an async runtime, as tokio-util's `FramedRead` does: the
//! one loop shared by the readers' `read_all`, the fuzz targets and the tests that compare
//! chunkings.

use bytes::BytesMut;
use tokio_util::codec::Decoder;

use crate::batch::Batch;

/// Feeds `chunks` to `decoder` in order: after each chunk, `decode` until it wants more; after
/// the last, `decode_eof` until it is done. Returns the batches and the first error, after
/// which nothing more is decoded.
pub fn decode_chunks<D, C>(
    decoder: &mut D,
    chunks: impl IntoIterator<Item = C>,
) -> (Vec<Batch>, Option<D::Error>)
where
    D: Decoder<Item = Batch>,
    C: AsRef<[u8]>,
{
    let mut buf = BytesMut::new();
    let mut batches = Vec::new();
    let mut chunks = chunks.into_iter().peekable();
    loop {
        let last = match chunks.next() {
            Some(c) => {
                buf.extend_from_slice(c.as_ref());
                chunks.peek().is_none()
            }
            None => true,
        };
        loop {
            let r = if last {
                decoder.decode_eof(&mut buf)
            } else {
                decoder.decode(&mut buf)
            };
            match r {
                Ok(Some(b)) => batches.push(b),
                Ok(None) => break,
                Err(e) => return (batches, Some(e)),
            }
        }
        if last {
            return (batches, None);
        }
    }
}

/// Collects batches up to the first error (e.g. of a `ParallelTsvReader`).
pub fn collect_batches<E>(
    batches: impl IntoIterator<Item = Result<Batch, E>>,
) -> (Vec<Batch>, Option<E>) {
    let mut out = Vec::new();
    for b in batches {
        match b {
            Ok(b) => out.push(b),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}
