//! Verified decompression: the output of a gzip member or a zstd frame is held back until the
//! checksum that covers it has passed, so that a damaged member never reaches the parser.
//!
//! gzip ends each member with a CRC-32 and the length of its output; zstd may end a frame with
//! (the low 32 bits of) an XXH64 of its output, which libzstd verifies itself and reports as
//! `checksum wrong`. Both come *after* the data, so `Verifier` keeps the decompressed bytes of
//! the member or frame being decoded and passes them on only once it ended and its checksum
//! (gzip: CRC-32 and length) matched. A member or frame that fails (bad data, bad checksum,
//! input ending inside it) is withdrawn whole: none of its rows are parsed, and the error names
//! it by its compressed offset ([`FrameError`]).
//!
//! Limits, and the guarantee beyond them:
//!
//! - At most [`MAX_UNVERIFIED`] bytes of output are held per input. A member or frame that
//!   decompresses to more is passed on as it is decoded once it exceeds that: its first
//!   [`MAX_UNVERIFIED`] bytes and what follows reach the parser before its checksum is known
//!   (a single-member `.gz` or single-frame `.zst` of a large log is the common case; holding
//!   it whole would make memory unbounded). A bad checksum at its end is still an error naming
//!   the member or frame, and says how many of its bytes were passed on unverified.
//! - A zstd frame written without the content checksum (`zstd --no-check`) has no checksum to
//!   verify: its output is still held until the frame ends (so a frame that fails to decode is
//!   withdrawn), but damage that decodes cleanly cannot be detected.
//! - Output is held in pieces of [`PIECE`] bytes, so that it is freed piece by piece as the
//!   parser consumes it.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncBufRead, AsyncRead, ReadBuf};

/// Most decompressed bytes held back per input while a member's or frame's checksum is unknown;
/// see the module docs for what happens beyond.
pub const MAX_UNVERIFIED: usize = 64 << 20;

/// Size of the pieces decompressed output is held and passed on in.
pub const PIECE: usize = 1 << 20;

/// Longest gzip member header accepted (with its optional extra field, name and comment).
const MAX_GZIP_HEADER: usize = 1 << 20;

/// A gzip member or zstd frame that failed: its kind, its compressed offset and what is wrong.
/// Carried inside an [`io::Error`] of kind [`InvalidData`](io::ErrorKind::InvalidData).
#[derive(Debug, thiserror::Error)]
#[error("{kind} at compressed byte {offset}: {message}{}", unverified_note(*.unverified))]
pub struct FrameError {
    /// `gzip member` or `zstd frame`.
    pub kind: &'static str,
    /// Offset of the member or frame in the compressed input.
    pub offset: u64,
    /// What is wrong.
    pub message: String,
    /// Bytes of its output passed on before the failure (only for a member or frame larger
    /// than [`MAX_UNVERIFIED`]); 0 means nothing of it was parsed.
    pub unverified: u64,
}

fn unverified_note(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(
            " ({n} bytes of its output were passed on before the check, as it exceeds \
             the {} MiB held for verification)",
            MAX_UNVERIFIED >> 20
        )
    }
}

/// One step of a codec: input bytes consumed, and whether a member or frame just ended (with
/// its checksum verified).
struct Step {
    consumed: usize,
    end: bool,
}

/// A decompressor that reports where members or frames end.
trait Codec: Send {
    /// Decodes from `input`, appending at most the spare capacity of `out`.
    fn step(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Step, String>;
    /// Whether the codec stands between members or frames (none begun).
    fn between(&self) -> bool;
}

/// gzip members, one after another: headers and trailers parsed here, deflate by zlib.
struct Gzip {
    state: GzState,
    inflate: flate2::Decompress,
    crc: crc32fast::Hasher,
    len: u32,
    /// Bytes of a header or trailer collected so far.
    part: Vec<u8>,
    /// Zero bytes seen after the last member (padding, as tape archives leave).
    padding: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GzState {
    Between,
    Header,
    Body,
    Trailer,
}

/// The length of the gzip header at the start of `h`, `None` if more bytes are needed.
fn gzip_header_len(h: &[u8]) -> Result<Option<usize>, String> {
    if h.len() < 10 {
        if h.len() >= 2 && h[..2] != [0x1f, 0x8b] {
            return Err("not a gzip member (bad magic bytes)".into());
        }
        return Ok(None);
    }
    if h[..2] != [0x1f, 0x8b] {
        return Err("not a gzip member (bad magic bytes)".into());
    }
    if h[2] != 8 {
        return Err(format!("unknown compression method {}", h[2]));
    }
    let flags = h[3];
    if flags & 0xe0 != 0 {
        return Err(format!("reserved header flags set ({flags:#04x})"));
    }
    let mut at = 10;
    if flags & 4 != 0 {
        let Some(x) = h.get(at..at + 2) else {
            return Ok(None);
        };
        at += 2 + u16::from_le_bytes([x[0], x[1]]) as usize;
        if h.len() < at {
            return Ok(None);
        }
    }
    for bit in [8, 16] {
        if flags & bit != 0 {
            match memchr::memchr(0, &h[at..]) {
                Some(i) => at += i + 1,
                None => return Ok(None),
            }
        }
    }
    if flags & 2 != 0 {
        at += 2;
    }
    Ok((h.len() >= at).then_some(at))
}

impl Gzip {
    fn new() -> Gzip {
        Gzip {
            state: GzState::Between,
            inflate: flate2::Decompress::new(false),
            crc: crc32fast::Hasher::new(),
            len: 0,
            part: Vec::new(),
            padding: false,
        }
    }
}

impl Codec for Gzip {
    fn step(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Step, String> {
        let go = |consumed| {
            Ok(Step {
                consumed,
                end: false,
            })
        };
        match self.state {
            GzState::Between => {
                let zeros = input.iter().take_while(|&&b| b == 0).count();
                if zeros > 0 {
                    self.padding = true;
                    return go(zeros);
                }
                if self.padding {
                    return Err("data after zero padding".into());
                }
                self.state = GzState::Header;
                self.part.clear();
                go(0)
            }
            GzState::Header => {
                let before = self.part.len();
                let take = input.len().min(4096);
                self.part.extend_from_slice(&input[..take]);
                match gzip_header_len(&self.part)? {
                    Some(len) => {
                        self.part.clear();
                        self.state = GzState::Body;
                        self.inflate.reset(false);
                        self.crc = crc32fast::Hasher::new();
                        self.len = 0;
                        go(len - before)
                    }
                    None if self.part.len() > MAX_GZIP_HEADER => {
                        Err(format!("header longer than {} KiB", MAX_GZIP_HEADER >> 10))
                    }
                    None => go(take),
                }
            }
            GzState::Body => {
                let (in0, out0) = (self.inflate.total_in(), out.len());
                let status = self
                    .inflate
                    .decompress_vec(input, out, flate2::FlushDecompress::None)
                    .map_err(|e| format!("invalid deflate data: {e}"))?;
                let produced = &out[out0..];
                self.crc.update(produced);
                self.len = self.len.wrapping_add(produced.len() as u32);
                if status == flate2::Status::StreamEnd {
                    self.state = GzState::Trailer;
                }
                go((self.inflate.total_in() - in0) as usize)
            }
            GzState::Trailer => {
                let take = input.len().min(8 - self.part.len());
                self.part.extend_from_slice(&input[..take]);
                if self.part.len() < 8 {
                    return go(take);
                }
                let word = |i: usize| {
                    u32::from_le_bytes([
                        self.part[i],
                        self.part[i + 1],
                        self.part[i + 2],
                        self.part[i + 3],
                    ])
                };
                let (crc, len) = (word(0), word(4));
                let actual = std::mem::take(&mut self.crc).finalize();
                if crc != actual {
                    return Err(format!(
                        "CRC-32 mismatch (recorded {crc:08x}, computed {actual:08x})"
                    ));
                }
                if len != self.len {
                    return Err(format!(
                        "length mismatch (recorded {len}, decompressed {})",
                        self.len
                    ));
                }
                self.state = GzState::Between;
                Ok(Step {
                    consumed: take,
                    end: true,
                })
            }
        }
    }

    fn between(&self) -> bool {
        self.state == GzState::Between
    }
}

/// zstd frames, decoded by libzstd, which verifies a frame's content checksum when it has one.
struct Zstd {
    dctx: zstd_safe::DCtx<'static>,
    in_frame: bool,
}

impl Codec for Zstd {
    fn step(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Step, String> {
        let mut inb = zstd_safe::InBuffer::around(input);
        let pos = out.len();
        let mut outb = zstd_safe::OutBuffer::around_pos(out, pos);
        let hint = self
            .dctx
            .decompress_stream(&mut outb, &mut inb)
            .map_err(|code| zstd_safe::get_error_name(code).to_string())?;
        let consumed = inb.pos();
        // 0: a frame was completely decoded (its checksum, if any, verified) and flushed.
        let end = hint == 0 && (self.in_frame || consumed > 0);
        self.in_frame = !end && (self.in_frame || consumed > 0);
        Ok(Step { consumed, end })
    }

    fn between(&self) -> bool {
        !self.in_frame
    }
}

/// The sans-I/O core: feeds compressed bytes to a codec and holds the output of the current
/// member or frame until it is verified. See the module docs.
pub(crate) struct Verifier {
    codec: Box<dyn Codec>,
    kind: &'static str,
    /// Compressed bytes consumed so far (plus the offset the input started at).
    offset: u64,
    /// Where the current member or frame started.
    start: u64,
    /// Output of the current member or frame, in pieces, not yet passed on.
    held: Vec<Vec<u8>>,
    held_len: usize,
    /// Output of the current member or frame already passed on (it exceeded the limit).
    passed: u64,
    /// Pieces free for reuse.
    spare: Vec<Vec<u8>>,
}

impl Verifier {
    /// A gzip verifier; `offset` is where the input starts in the compressed stream.
    pub(crate) fn gzip(offset: u64) -> Verifier {
        Verifier::new(Box::new(Gzip::new()), "gzip member", offset)
    }

    /// A zstd verifier.
    pub(crate) fn zstd(offset: u64) -> io::Result<Verifier> {
        let mut dctx = zstd_safe::DCtx::try_create()
            .ok_or_else(|| io::Error::other("cannot create a zstd decompression context"))?;
        dctx.init()
            .map_err(|c| io::Error::other(zstd_safe::get_error_name(c)))?;
        let codec = Zstd {
            dctx,
            in_frame: false,
        };
        Ok(Verifier::new(Box::new(codec), "zstd frame", offset))
    }

    fn new(codec: Box<dyn Codec>, kind: &'static str, offset: u64) -> Verifier {
        Verifier {
            codec,
            kind,
            offset,
            start: offset,
            held: Vec::new(),
            held_len: 0,
            passed: 0,
            spare: Vec::new(),
        }
    }

    fn error(&self, message: String) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            FrameError {
                kind: self.kind,
                offset: self.start,
                message,
                unverified: self.passed,
            },
        )
    }

    /// Gives a piece back for reuse.
    pub(crate) fn recycle(&mut self, mut piece: Vec<u8>) {
        if self.spare.len() < 4 && piece.capacity() >= PIECE {
            piece.clear();
            self.spare.push(piece);
        }
    }

    /// Decodes some of `input`; returns the bytes consumed, whether a member or frame ended
    /// there, and appends to `ready` the output that may be passed on.
    pub(crate) fn feed(
        &mut self,
        input: &[u8],
        ready: &mut VecDeque<Vec<u8>>,
    ) -> io::Result<(usize, bool)> {
        if self.codec.between() {
            self.start = self.offset;
        }
        if self.held.last().is_none_or(|p| p.len() == p.capacity()) {
            let piece = self
                .spare
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(PIECE));
            self.held.push(piece);
        }
        let Some(piece) = self.held.last_mut() else {
            return Ok((0, false));
        };
        let before = piece.len();
        let step = self.codec.step(input, piece);
        let produced = piece.len() - before;
        let step = match step {
            Ok(s) => s,
            Err(message) => {
                let e = self.error(message);
                self.held.clear();
                self.held_len = 0;
                return Err(e);
            }
        };
        self.offset += step.consumed as u64;
        self.held_len += produced;
        if step.end {
            self.pass(ready);
            self.passed = 0;
            self.start = self.offset;
        } else if self.held_len > MAX_UNVERIFIED || (self.passed > 0 && self.held_len >= PIECE) {
            self.passed += self.held_len as u64;
            self.pass(ready);
        }
        Ok((step.consumed, step.end))
    }

    fn pass(&mut self, ready: &mut VecDeque<Vec<u8>>) {
        ready.extend(self.held.drain(..).filter(|p| !p.is_empty()));
        self.held_len = 0;
    }

    /// Whether the input fed so far ends between members or frames (none is partly fed).
    pub(crate) fn between(&self) -> bool {
        self.codec.between()
    }

    /// Stored bytes fed so far, plus the offset the input started at.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// The end of the input: an error if it ends inside a member or frame.
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        if self.codec.between() {
            return Ok(());
        }
        self.held.clear();
        self.held_len = 0;
        Err(self.error("the input ends inside it (truncated)".into()))
    }
}

/// The first `want` bytes (fewer at the end of the input, or where it is truncated or damaged)
/// of what `input` decompresses to, gzip or zstd, *without* waiting for any checksum: for a
/// file's fingerprint only (see [`crate::source::follow`]), never for rows. `read` fills the
/// buffer it is given from the compressed input and returns 0 at its end.
pub(crate) fn unverified_head(
    zstd: bool,
    want: usize,
    read: &mut dyn FnMut(&mut [u8]) -> io::Result<usize>,
) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(want);
    unverified_text(zstd, want as u64, read, &mut |b| head.extend_from_slice(b))?;
    Ok(head)
}

/// Gives `sink` the first `want` bytes of what `input` decompresses to, in pieces, as
/// [`unverified_head`] (for checks that only compare, never for rows); returns how many.
pub(crate) fn unverified_text(
    zstd: bool,
    want: u64,
    read: &mut dyn FnMut(&mut [u8]) -> io::Result<usize>,
    sink: &mut dyn FnMut(&[u8]),
) -> io::Result<u64> {
    let mut codec: Box<dyn Codec> = if zstd {
        let mut dctx = zstd_safe::DCtx::try_create()
            .ok_or_else(|| io::Error::other("cannot create a zstd decompression context"))?;
        dctx.init()
            .map_err(|c| io::Error::other(zstd_safe::get_error_name(c)))?;
        Box::new(Zstd {
            dctx,
            in_frame: false,
        })
    } else {
        Box::new(Gzip::new())
    };
    // `step` fills the spare capacity only.
    let mut out = Vec::with_capacity(64 << 10);
    let mut given = 0u64;
    let mut input = vec![0u8; 16 << 10];
    let (mut at, mut end, mut stalled) = (0, 0, 0);
    while given < want {
        if at == end {
            end = read(&mut input)?;
            at = 0;
            if end == 0 {
                break;
            }
        }
        out.clear();
        let consumed = match codec.step(&input[at..end], &mut out) {
            Ok(step) => step.consumed,
            // Damaged past the bytes decoded so far: the text is what came out before.
            Err(_) => break,
        };
        at += consumed;
        let n = usize::try_from(want - given).map_or(out.len(), |n| n.min(out.len()));
        sink(&out[..n]);
        given += n as u64;
        // A step that neither consumes nor produces only changes state (gzip between
        // members); more than two in a row would never end.
        stalled = if consumed == 0 && out.is_empty() {
            stalled + 1
        } else {
            0
        };
        if stalled > 2 {
            break;
        }
    }
    Ok(given)
}

/// Verified decompression of an async byte stream (stdin, a pipe, a reader, bytes in memory).
pub(crate) struct VerifiedReader<R> {
    inner: R,
    verifier: Verifier,
    ready: VecDeque<Vec<u8>>,
    /// Read position in the front piece of `ready`.
    at: usize,
    done: bool,
}

impl<R: AsyncBufRead + Unpin> VerifiedReader<R> {
    pub(crate) fn new(inner: R, verifier: Verifier) -> VerifiedReader<R> {
        VerifiedReader {
            inner,
            verifier,
            ready: VecDeque::new(),
            at: 0,
            done: false,
        }
    }
}

impl<R: AsyncBufRead + Unpin> AsyncRead for VerifiedReader<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if let Some(front) = this.ready.front() {
                let n = (front.len() - this.at).min(buf.remaining());
                buf.put_slice(&front[this.at..this.at + n]);
                this.at += n;
                if this.at == front.len() {
                    this.at = 0;
                    if let Some(p) = this.ready.pop_front() {
                        this.verifier.recycle(p);
                    }
                }
                return Poll::Ready(Ok(()));
            }
            if this.done {
                return Poll::Ready(Ok(()));
            }
            let input = ready!(Pin::new(&mut this.inner).poll_fill_buf(cx))?;
            if input.is_empty() {
                this.done = true;
                this.verifier.finish()?;
                continue;
            }
            let (n, _) = this.verifier.feed(input, &mut this.ready)?;
            Pin::new(&mut this.inner).consume(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// Feeds `input` in pieces of `chunk` bytes; the output passed on and the result.
    fn run(mut v: Verifier, input: &[u8], chunk: usize) -> (Vec<u8>, io::Result<()>) {
        let mut ready = VecDeque::new();
        let mut out = Vec::new();
        let mut pos = 0;
        let result = loop {
            if pos == input.len() {
                break v.finish();
            }
            let end = (pos + chunk).min(input.len());
            match v.feed(&input[pos..end], &mut ready) {
                Ok((n, _)) => pos += n,
                Err(e) => break Err(e),
            }
            out.extend(ready.drain(..).flatten());
        };
        out.extend(ready.drain(..).flatten());
        (out, result)
    }

    #[test]
    fn gzip_members_pass_whole_and_only_when_verified() {
        let mut input = gz(b"first member\n");
        let second_at = input.len();
        input.extend(gz(b"second member\n"));
        for chunk in [1, 3, 7, 4096] {
            let (out, r) = run(Verifier::gzip(0), &input, chunk);
            r.unwrap();
            assert_eq!(out, b"first member\nsecond member\n");
        }
        // A flipped CRC byte in the second member: only the first member passes.
        let mut bad = input.clone();
        let n = bad.len();
        bad[n - 6] ^= 1;
        let (out, r) = run(Verifier::gzip(0), &bad, 5);
        assert_eq!(out, b"first member\n");
        let e = r.unwrap_err().to_string();
        assert!(
            e.contains(&format!("gzip member at compressed byte {second_at}")),
            "{e}"
        );
        assert!(e.contains("CRC-32 mismatch"), "{e}");
        // Truncated.
        let (out, r) = run(Verifier::gzip(0), &input[..n - 3], 4096);
        assert_eq!(out, b"first member\n");
        assert!(r.unwrap_err().to_string().contains("truncated"));
    }

    #[test]
    fn gzip_header_fields_and_padding() {
        let mut e = flate2::GzBuilder::new()
            .filename("x.log")
            .comment("c")
            .extra(vec![1, 2, 3])
            .write(Vec::new(), flate2::Compression::best());
        e.write_all(b"data\n").unwrap();
        let mut input = e.finish().unwrap();
        input.extend([0u8; 10]);
        let (out, r) = run(Verifier::gzip(0), &input, 2);
        r.unwrap();
        assert_eq!(out, b"data\n");
        input.push(7);
        assert!(run(Verifier::gzip(0), &input, 64).1.is_err());
    }

    #[test]
    fn zstd_frames_checksum_is_verified() {
        let frame = |d: &[u8]| {
            let mut c = zstd_safe::CCtx::create();
            c.set_parameter(zstd_safe::CParameter::ChecksumFlag(true))
                .unwrap();
            let mut out = vec![0u8; zstd_safe::compress_bound(d.len())];
            let n = c.compress2(&mut out[..], d).unwrap();
            out.truncate(n);
            out
        };
        let mut input = frame(b"one\n");
        let second_at = input.len();
        input.extend(frame(b"two\n"));
        let (out, r) = run(Verifier::zstd(0).unwrap(), &input, 3);
        r.unwrap();
        assert_eq!(out, b"one\ntwo\n");
        let mut bad = input.clone();
        let n = bad.len();
        bad[n - 1] ^= 0x40; // the checksum itself
        let (out, r) = run(Verifier::zstd(0).unwrap(), &bad, 3);
        assert_eq!(out, b"one\n");
        let e = r.unwrap_err().to_string();
        assert!(
            e.contains(&format!("zstd frame at compressed byte {second_at}")),
            "{e}"
        );
        assert!(e.contains("checksum"), "{e}");
    }
}
