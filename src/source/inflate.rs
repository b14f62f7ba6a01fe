//! Fast gzip decompression: whole members with libdeflate, several at once, output in order.
//!
//! Zeek logs arrive as gzip files, often several members back to back (`cat a.gz b.gz`, log
//! rotation, or the 1,000 members of the W1000 benchmark). Members are independent, so a
//! seekable input can be split at member boundaries and decoded in parallel. The boundaries are
//! not indexed anywhere, so [`ParallelGunzip`] finds them speculatively:
//!
//! 1. Read a window of compressed input (it always starts at a member start).
//! 2. Find candidate member starts: the gzip magic `1f 8b 08` followed by a plausible header
//!    (reserved flag bits clear, known XFL and OS bytes). Compressed data can contain such
//!    bytes by chance, so a candidate is only a guess.
//! 3. Decode every slice between consecutive candidates in parallel with libdeflate, which
//!    needs the whole member in memory and is about twice as fast as zlib. A slice is accepted
//!    only if it is *exactly* one member: libdeflate checked the member's CRC-32 and length, and
//!    those must be the slice's last 8 bytes, so a member that ended early (a true boundary that
//!    was not a candidate) or that runs past the slice (a false candidate) is never accepted.
//! 4. A slice that fails is decoded by zlib (flate2) streaming, one member from its start,
//!    which finds the true member end; decoding then resumes in parallel after it. The
//!    streamed member's output is passed on once its CRC-32 and length verified (for members
//!    up to [`MAX_UNVERIFIED`](super::verify::MAX_UNVERIFIED) of output; see
//!    [`verify`](super::verify)), like every member decoded by libdeflate: a damaged member
//!    is an error ([`FrameError`](super::verify::FrameError)) and none of its bytes are output.
//!
//! Output order is input order; a member larger than the window is decoded by the streaming
//! fallback without holding its input whole. Non-seekable input (stdin) uses
//! [`verify`](super::verify) alone (see `source`).

use std::io::{self, Read};

use libdeflater::{DecompressionError, Decompressor};

use super::verify::Verifier;

/// Compressed bytes read at a time while a member is streamed.
const STREAM_READ: usize = 1 << 20;

/// Default size of the compressed window decoded in one parallel round.
pub const DEFAULT_WINDOW: usize = 8 << 20;

/// Largest member output libdeflate is asked to produce in one piece; bigger members (by their
/// recorded size) are left to the streaming fallback, which holds at most
/// [`MAX_UNVERIFIED`](super::verify::MAX_UNVERIFIED) of output.
const MAX_MEMBER_OUTPUT: usize = 64 << 20;

/// Most output (by the members' recorded sizes) decoded in one parallel round: members of a
/// window beyond it wait for the next round, so a window of highly compressed members (a gzip
/// bomb) is never inflated at once.
const MAX_ROUND_OUTPUT: usize = 64 << 20;

/// Most output per compressed byte that deflate can produce (258 bytes per 2 bits, a little
/// over 1032:1); a slice claiming more in its trailer is not one member.
const MAX_RATIO: usize = 1033;

/// The output size a slice claims in its last 4 bytes, if the slice could be one member of
/// that size decodable by libdeflate.
fn claimed_size(slice: &[u8]) -> Option<usize> {
    let n = slice.len();
    let tail: [u8; 4] = slice.get(n.checked_sub(4)?..)?.try_into().ok()?;
    let isize = u32::from_le_bytes(tail) as usize;
    (n >= 18 && isize <= MAX_MEMBER_OUTPUT && isize <= n.saturating_mul(MAX_RATIO)).then_some(isize)
}

/// Whether a plausible gzip member header starts at `data[at..]`.
pub fn is_member_header(data: &[u8], at: usize) -> bool {
    let h = match data.get(at..at + 10) {
        Some(h) => h,
        None => return false,
    };
    h[0] == 0x1f
        && h[1] == 0x8b
        && h[2] == 8 // deflate
        && h[3] & 0xe0 == 0 // reserved flags
        && matches!(h[8], 0 | 2 | 4) // XFL
        && (h[9] <= 13 || h[9] == 255) // OS
}

/// Offsets of all candidate member starts in `data`.
pub fn member_candidates(data: &[u8]) -> Vec<usize> {
    memchr::memmem::find_iter(data, &[0x1f, 0x8b, 0x08])
        .filter(|&at| is_member_header(data, at))
        .collect()
}

/// Output buffers for decoded members, handed back by the consumer ([`BufferPool::give`]) and
/// reused, so that a stream of members does not allocate (page-fault and zero) fresh memory for
/// every one: on a W1000 import that churn cost about a third as much CPU as inflating itself.
#[derive(Debug, Clone, Default)]
pub struct BufferPool(std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>);

impl BufferPool {
    /// Buffers kept at most; more are freed.
    const MAX_KEPT: usize = 64;

    /// A buffer of exactly `len` bytes. Its contents are unspecified (a reused buffer keeps
    /// old bytes; only memory it never had is zeroed): callers overwrite all of it.
    fn take(&self, len: usize) -> Vec<u8> {
        let reused = self.0.lock().ok().and_then(|mut v| v.pop());
        let mut buf = reused.unwrap_or_default();
        if buf.len() >= len {
            buf.truncate(len);
        } else {
            buf.resize(len, 0);
        }
        buf
    }

    /// Returns a buffer for reuse.
    pub fn give(&self, buf: Vec<u8>) {
        if let Ok(mut v) = self.0.lock() {
            if v.len() < Self::MAX_KEPT {
                v.push(buf);
            }
        }
    }
}

/// Decodes `slice` if it is exactly one gzip member; `None` otherwise.
fn decode_exact(dec: &mut Decompressor, slice: &[u8], pool: &BufferPool) -> Option<Vec<u8>> {
    let n = slice.len();
    if n < 18 {
        return None;
    }
    let crc = u32::from_le_bytes(slice[n - 8..n - 4].try_into().ok()?);
    let isize = claimed_size(slice)?;
    let mut out = pool.take(isize);
    let ok = match dec.gzip_decompress(slice, &mut out) {
        Ok(len) => len == isize,
        Err(DecompressionError::BadData) | Err(DecompressionError::InsufficientSpace) => false,
    };
    // libdeflate verified the CRC it read after the deflate stream; if that stream ended before
    // the slice's end, the trailer it read is not the slice's last 8 bytes.
    if ok && crc32fast::hash(&out) == crc {
        Some(out)
    } else {
        pool.give(out);
        None
    }
}

/// Decompresses concatenated gzip members from a reader, decoding several members at once.
///
/// An iterator of decompressed chunks in input order; each chunk is one or more whole members.
///
/// ```
/// use std::io::Write;
/// let mut gz = Vec::new();
/// for part in [&b"hello "[..], b"world"] {
///     let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
///     e.write_all(part).unwrap();
///     gz.extend(e.finish().unwrap());
/// }
/// let out: Vec<u8> = weir::unstable::source::inflate::ParallelGunzip::new(&gz[..], 2)
///     .collect::<std::io::Result<Vec<_>>>()
///     .unwrap()
///     .concat();
/// assert_eq!(out, b"hello world");
/// ```
pub struct ParallelGunzip<R> {
    input: Option<R>,
    /// The member being decoded by the streaming fallback, if any.
    member: Option<Verifier>,
    /// Bytes at the start of `buf` the streaming fallback already consumed.
    head: usize,
    threads: usize,
    window: usize,
    buf: Vec<u8>,
    eof: bool,
    consumed: u64,
    ready: std::collections::VecDeque<Vec<u8>>,
    failed: bool,
    pool: BufferPool,
}

impl<R: Read> ParallelGunzip<R> {
    /// Decodes `input` with up to `threads` members at once and the default window.
    pub fn new(input: R, threads: usize) -> ParallelGunzip<R> {
        ParallelGunzip::with_window(input, threads, DEFAULT_WINDOW)
    }

    /// Decodes with a given compressed window size (at least 64 KiB).
    pub fn with_window(input: R, threads: usize, window: usize) -> ParallelGunzip<R> {
        ParallelGunzip {
            input: Some(input),
            member: None,
            head: 0,
            threads: threads.max(1),
            window: window.max(64 << 10),
            buf: Vec::new(),
            eof: false,
            consumed: 0,
            ready: Default::default(),
            failed: false,
            pool: BufferPool::default(),
        }
    }

    /// The pool the decoded chunks come from: give them back when done with them
    /// ([`BufferPool::give`]) and they are reused for later members.
    pub fn pool(&self) -> BufferPool {
        self.pool.clone()
    }

    /// Compressed bytes consumed so far.
    pub fn compressed_consumed(&self) -> u64 {
        self.consumed
    }

    fn fill(&mut self, want: usize) -> io::Result<()> {
        while !self.eof && self.buf.len() < want {
            let Some(input) = self.input.as_mut() else {
                self.eof = true;
                break;
            };
            // Into spare capacity, without zeroing it first; stops at `want` or the end.
            let need = (want - self.buf.len()) as u64;
            let n = input.by_ref().take(need).read_to_end(&mut self.buf)?;
            if (n as u64) < need {
                self.eof = true;
            }
        }
        Ok(())
    }

    /// Decodes the next window into `self.ready`.
    fn round(&mut self) -> io::Result<()> {
        self.fill(self.window)?;
        if self.buf.is_empty() {
            return Ok(());
        }
        let starts = member_candidates(&self.buf);
        // The last candidate's member may be cut by the window's end, unless input ended.
        let limit = if self.eof {
            self.buf.len()
        } else {
            starts.last().copied().unwrap_or(0)
        };
        let mut bounds = starts.clone();
        if self.eof {
            bounds.push(self.buf.len());
        }
        let mut slices: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
        // Bound the output of this round: decode only the slices whose claimed sizes fit (at
        // least one); the rest of the window waits for the next round.
        let mut limit = limit;
        let mut total = 0usize;
        if let Some(cut) = slices.iter().enumerate().position(|(i, &(a, b))| {
            total += claimed_size(&self.buf[a..b]).unwrap_or(0);
            i > 0 && total > MAX_ROUND_OUTPUT
        }) {
            limit = limit.min(slices[cut].0);
            slices.truncate(cut);
        }
        let mut decoded = decode_parallel(&self.buf, &slices, self.threads, &self.pool).into_iter();
        let mut next_slice = 0;

        let mut pos = 0;
        while pos < limit {
            // The speculative result for a slice starting exactly here, if any.
            while next_slice < slices.len() && slices[next_slice].0 < pos {
                next_slice += 1;
                decoded.next();
            }
            if next_slice < slices.len() && slices[next_slice].0 == pos {
                next_slice += 1;
                if let Some(Some(out)) = decoded.next() {
                    self.ready.push_back(out);
                    pos = slices[next_slice - 1].1;
                    continue;
                }
            }
            if self.eof && self.buf[pos..].iter().all(|&b| b == 0) {
                pos = self.buf.len(); // zero padding, as tape archives leave
                break;
            }
            // Not exactly one member: decode the member that starts here by streaming, which
            // finds its true end.
            self.member = Some(Verifier::gzip(self.consumed + pos as u64));
            break;
        }
        if pos == 0 && !self.eof && self.member.is_none() {
            // One member is larger than the window: stream it.
            self.member = Some(Verifier::gzip(self.consumed));
        }
        self.buf.drain(..pos);
        self.consumed += pos as u64;
        Ok(())
    }

    /// Decodes the member being streamed a little further (its output is passed on once its
    /// CRC verified; see [`Verifier`]); ends streaming at its end.
    fn stream_step(&mut self) -> io::Result<()> {
        if self.head == self.buf.len() {
            self.consumed += self.head as u64;
            self.buf.clear();
            self.head = 0;
            self.fill(STREAM_READ)?;
        }
        let Some(member) = self.member.as_mut() else {
            return Ok(());
        };
        if self.buf.is_empty() {
            member.finish()?;
            self.member = None;
            return Ok(());
        }
        let (n, end) = member.feed(&self.buf[self.head..], &mut self.ready)?;
        self.head += n;
        if end {
            self.member = None;
            self.buf.drain(..self.head);
            self.consumed += self.head as u64;
            self.head = 0;
        }
        Ok(())
    }
}

/// Decodes each slice `[start, end)` of `buf` on up to `threads` threads, in order.
fn decode_parallel(
    buf: &[u8],
    slices: &[(usize, usize)],
    threads: usize,
    pool: &BufferPool,
) -> Vec<Option<Vec<u8>>> {
    if slices.is_empty() {
        return Vec::new();
    }
    let threads = threads.min(slices.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<Vec<u8>>> = Vec::new();
    results.resize_with(slices.len(), || None);
    let cells: Vec<std::sync::Mutex<Option<Vec<u8>>>> =
        results.into_iter().map(std::sync::Mutex::new).collect();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut dec = Decompressor::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&(a, b)) = slices.get(i) else { break };
                        let out = decode_exact(&mut dec, &buf[a..b], pool);
                        if let Ok(mut cell) = cells[i].lock() {
                            *cell = out;
                        }
                    }
                })
            })
            .collect();
        // Joined one by one, which waits until each thread has exited (its thread-locals
        // freed); the scope alone waits only for the closures. A worker that panicked leaves
        // the slice it was on undecoded, and the caller decodes that one by streaming.
        for w in workers {
            let _ = w.join();
        }
    });
    cells
        .into_iter()
        .map(|c| c.into_inner().ok().flatten())
        .collect()
}

impl<R: Read> Iterator for ParallelGunzip<R> {
    type Item = io::Result<Vec<u8>>;

    fn next(&mut self) -> Option<io::Result<Vec<u8>>> {
        loop {
            if let Some(out) = self.ready.pop_front() {
                return Some(Ok(out));
            }
            if self.failed {
                return None;
            }
            let step = if self.member.is_some() {
                self.stream_step()
            } else if self.eof && self.buf.is_empty() {
                return None;
            } else {
                self.round()
            };
            if let Err(e) = step {
                self.failed = true;
                return Some(Err(e));
            }
            if self.ready.is_empty() && self.member.is_none() && self.eof && self.buf.is_empty() {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8], level: u32) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn gunzip_all(input: &[u8], window: usize) -> io::Result<Vec<u8>> {
        Ok(ParallelGunzip::with_window(input, 2, window)
            .collect::<io::Result<Vec<_>>>()?
            .concat())
    }

    fn text(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed.max(1);
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b"abc\tdef 0123\n"[(x % 13) as usize]
            })
            .collect()
    }

    /// Chunks given back to the pool are reused for later members, longer and shorter ones:
    /// no stale byte of an earlier member shows up in a later one.
    #[test]
    fn reused_buffers_hold_exactly_the_new_member() {
        let sizes = [200_000usize, 50_000, 120_000, 7, 300_000, 1_000, 90_000];
        let members: Vec<Vec<u8>> = (0..40)
            .map(|i| text(sizes[i % sizes.len()], i as u64 + 1))
            .collect();
        let input: Vec<u8> = members.iter().flat_map(|m| gz(m, 6)).collect();
        let mut gunzip = ParallelGunzip::with_window(&input[..], 2, 256 << 10);
        let pool = gunzip.pool();
        let mut out = Vec::new();
        for chunk in &mut gunzip {
            let chunk = chunk.unwrap();
            out.extend_from_slice(&chunk);
            pool.give(chunk);
        }
        assert_eq!(out, members.concat());
        assert!(!pool.0.lock().unwrap().is_empty());
    }

    /// One gzip member of `1 + 258 * k` newlines, built by hand (fixed Huffman: a literal,
    /// then `k` matches of length 258 at distance 1), without the cost of compressing.
    fn newline_member(k: usize) -> Vec<u8> {
        let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
        let (mut acc, mut n) = (0u64, 0u32);
        let mut code = |out: &mut Vec<u8>, c: u64, len: u32, msb_first: bool| {
            let v = if msb_first {
                (0..len).fold(0, |r, i| r | ((c >> i) & 1) << (len - 1 - i))
            } else {
                c
            };
            acc |= v << n;
            n += len;
            while n >= 8 {
                out.push(acc as u8);
                acc >>= 8;
                n -= 8;
            }
        };
        code(&mut out, 0b011, 3, false); // last block, fixed Huffman
        code(&mut out, 0x30 + 10, 8, true); // '\n'
        for _ in 0..k {
            code(&mut out, 0xc5, 8, true); // length 258
            code(&mut out, 0, 5, true); // distance 1
        }
        code(&mut out, 0, 7, true); // end of block
        code(&mut out, 0, 7, false); // to a byte boundary
        let len = 1 + 258 * k;
        out.extend(crc32fast::hash(&vec![b'\n'; len]).to_le_bytes());
        out.extend((len as u32).to_le_bytes());
        out
    }

    /// A window of highly compressed members (a gzip bomb: 12 x 16 MiB of newlines in 2 MB)
    /// is not inflated at once: the output held at any time stays near MAX_ROUND_OUTPUT.
    #[test]
    fn output_in_flight_is_bounded() {
        let member = newline_member((16 << 20) / 258);
        let input: Vec<u8> = (0..12).flat_map(|_| member.iter().copied()).collect();
        let mut gunzip = ParallelGunzip::new(&input[..], 2);
        let (mut total, mut most) = (0, 0);
        while let Some(chunk) = gunzip.next() {
            let chunk = chunk.unwrap();
            total += chunk.len();
            let held: usize = gunzip.ready.iter().map(Vec::len).sum::<usize>() + chunk.len();
            most = most.max(held);
        }
        assert_eq!(total, 12 * (1 + 258 * ((16 << 20) / 258)));
        assert!(most <= MAX_ROUND_OUTPUT, "{most} bytes held at once");
    }

    /// Fake member headers claim huge members in their last bytes: nothing is allocated for
    /// them, and the input is an error naming the first member.
    #[test]
    fn fake_headers_claim_nothing() {
        let fake = [0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3];
        let data: Vec<u8> = (0..1461).flat_map(|_| fake).collect();
        assert_eq!(claimed_size(&data[..20]), None);
        let e = gunzip_all(&data, DEFAULT_WINDOW).unwrap_err().to_string();
        assert!(e.contains("gzip member at compressed byte 0"), "{e}");
    }

    #[test]
    fn many_members_in_order() {
        let mut input = Vec::new();
        let mut want = Vec::new();
        for i in 0..50 {
            let t = text(1000 + i * 997, i as u64);
            input.extend(gz(&t, 6));
            want.extend(t);
        }
        for window in [64 << 10, 1 << 20, 64 << 20] {
            assert_eq!(gunzip_all(&input, window).unwrap(), want);
        }
    }

    #[test]
    fn member_bigger_than_window_is_streamed() {
        let big = text(3 << 20, 7);
        let small = text(5000, 8);
        let mut input = gz(&small, 1);
        input.extend(gz(&big, 1));
        input.extend(gz(&small, 9));
        let want = [small.clone(), big, small].concat();
        assert_eq!(gunzip_all(&input, 64 << 10).unwrap(), want);
    }

    #[test]
    fn false_candidates_inside_members_are_harmless() {
        // Stored (level 0) members carry the payload verbatim: embed fake headers in it.
        let mut payload = Vec::new();
        for _ in 0..100 {
            payload.extend_from_slice(&[0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3]);
            payload.extend(text(300, 3));
        }
        let mut input = gz(&payload, 0);
        input.extend(gz(b"tail", 0));
        assert!(member_candidates(&input).len() > 50);
        let want = [payload, b"tail".to_vec()].concat();
        assert_eq!(gunzip_all(&input, 64 << 10).unwrap(), want);
    }

    #[test]
    fn truncated_and_garbage_inputs_are_errors() {
        let one = gz(&text(10_000, 1), 6);
        let cut = &one[..one.len() - 3];
        assert!(gunzip_all(cut, 1 << 20).is_err());
        let mut trailing = one.clone();
        trailing.extend_from_slice(b"garbage!");
        assert!(gunzip_all(&trailing, 1 << 20).is_err());
        assert!(gunzip_all(b"plain text, not gzip", 1 << 20).is_err());
        let mut padded = one.clone();
        padded.extend_from_slice(&[0; 100]);
        assert_eq!(gunzip_all(&padded, 1 << 20).unwrap(), text(10_000, 1));
        assert!(gunzip_all(b"", 1 << 20).unwrap().is_empty());
    }
}
