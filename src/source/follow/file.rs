//! One followed file: where its text comes from (a plain file, or a compressed one decoded
//! member by member), how far it is read, and the state needed to go on after it was closed.
//!
//! Positions are offsets in the file's *text* (its decompressed bytes). `pos` is always a
//! line start: the first byte not yet decoded. After it come, in order, `discard` bytes of an
//! over-long line being skipped and `partial`, text read but not yet a complete line; so the
//! text is read up to [`Tracked::text_read`].
//!
//! **Sums.** A plain file's checkpoints record the CRC-32 of its bytes before their position
//! ([`FileCheckpoint::sum`]), so that a restart notices a file rewritten while weir was down
//! with the same first lines but other bytes before the position (see the follower's module
//! docs). The sum is kept as the text is taken, from the bytes read (never read again: a
//! file rewritten since could give another sum): `sum` covers exactly the text before `pos`,
//! and moves with it ([`Tracked::advance`]) over lines, NUL holes and lines already in the
//! archive; the bytes of an over-long line being dropped are summed apart
//! (`discard_sum`) and join `sum` when `pos` moves past them. Where the bytes before `pos` were
//! not all read (a file found shorter than its checkpoint), the sum is unknown from then on,
//! and the checkpoints carry none (trusted as before).
//!
//! A plain file is read with positioned reads (`pread`), so a closed file is reopened by its
//! path and read on at the same offset, and an open descriptor keeps reading a file renamed
//! or deleted. A compressed file is fed, from its start, to a [`Verifier`], which passes a
//! member's or frame's text on only once it is complete and its checksum matched: a member
//! still being written is waited for, never taken in part (beyond the verifier's limit, see
//! [`crate::source::verify`]).

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::time::{Instant, SystemTime};

use super::registry::Fp;
use crate::checkpoint::{FileCheckpoint, FileId, Position};
use crate::source::decode::BatchDecoder;
use crate::source::identity::read_full;
use crate::source::verify::Verifier;

/// Most bytes read from one file before the next file gets its turn.
pub(super) const READ_CHUNK: usize = 1 << 20;

/// Most bytes of one header block kept to rebuild a decoder after its file was closed; a
/// longer block (no Zeek log has one) is rebuilt by reading the file from its start.
const MAX_HEADER: usize = 64 << 10;

/// A file's size and modification time, as a scan saw them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stat {
    pub size: u64,
    pub mtime: Option<SystemTime>,
}

impl Stat {
    pub fn of(meta: &std::fs::Metadata) -> Stat {
        Stat {
            size: meta.len(),
            mtime: meta.modified().ok(),
        }
    }
}

/// A compressed file's decoding state.
pub(super) struct Inflating {
    pub verifier: Verifier,
    /// Verified text not yet moved into `partial`.
    ready: VecDeque<Vec<u8>>,
    /// Stored bytes up to the end of the last complete member or frame.
    pub raw_done: u64,
    /// Since when the file has ended inside a member (waiting for its rest).
    pub partial_since: Option<Instant>,
    /// That wait was reported.
    pub warned: bool,
}

impl Inflating {
    pub fn new(verifier: Verifier) -> Inflating {
        Inflating {
            verifier,
            ready: VecDeque::new(),
            raw_done: 0,
            partial_since: None,
            warned: false,
        }
    }
}

/// What one read found.
pub(super) enum Read {
    /// This many bytes of text were added to `partial`.
    Text(usize),
    /// Nothing more for now. `between`: the text so far ends at a member boundary (always
    /// for a plain file); otherwise the file ends inside a member.
    End { between: bool },
}

/// A file being followed.
pub(super) struct Tracked {
    pub path: PathBuf,
    pub name: String,
    /// Device and inode.
    pub key: (u64, u64),
    /// Its identity (see [`crate::source::identity`]).
    pub fp: Fp,
    /// NUL bytes at its start (a hole, see [`crate::source::identity::Head::hole`]): its
    /// fingerprint covers the text after them.
    pub hole: u64,
    /// `None` while closed (see the follower's descriptor budget).
    pub file: Option<File>,
    pub inflating: Option<Inflating>,
    /// Text offset of the first byte not yet decoded: a line start.
    pub pos: u64,
    /// Rows decoded from the lines at `pos` that are already in the archive.
    pub skip: u64,
    /// Lines before this position were sent before (a resumed file): they are only read for
    /// their header lines.
    pub target: Option<Position>,
    /// Bytes of an over-long line after `pos` dropped so far (`--on-error skip`).
    pub discard: u64,
    /// Text after `pos + discard` not yet a complete line.
    pub partial: Vec<u8>,
    /// NUL bytes of a hole skipped just before `pos`, not reported yet (reported when the
    /// hole ends).
    pub nuls: u64,
    /// CRC-32 of the text before `pos` (see the module docs); `None` for a compressed file,
    /// or once the bytes before `pos` were not all read.
    pub sum: Option<crc32fast::Hasher>,
    /// CRC-32 of the `discard` bytes of an over-long line dropped so far.
    pub discard_sum: crc32fast::Hasher,
    /// The sum recorded with `target` (its checkpoint's), if any.
    pub target_sum: Option<u32>,
    /// The lines of the current header block (from its `#separator`), to rebuild the
    /// decoder of a closed file, and recorded in its checkpoints; `None` if it grew past
    /// [`MAX_HEADER`]. A file without header lines of its own (after copy-and-truncate)
    /// starts with the header it inherited.
    pub header: Option<Vec<u8>>,
    pub decoder: Option<Box<dyn BatchDecoder>>,
    /// No longer at any matched path: read to its end, then finished.
    pub rotated: bool,
    pub finished: bool,
    /// Last time text came.
    pub active: Instant,
    /// Size and modification time when last looked at.
    pub seen: Stat,
    /// Closed, and changed since: reopen at the next step.
    pub wake: bool,
    /// The last read found nothing more.
    pub caught_up: bool,
}

impl Tracked {
    /// Text read so far (decoded, discarded or partial).
    pub fn text_read(&self) -> u64 {
        self.pos + self.discard + self.partial.len() as u64
    }

    /// Stored bytes read so far.
    pub fn raw_read(&self) -> u64 {
        match &self.inflating {
            Some(i) => i.verifier.offset(),
            None => self.text_read(),
        }
    }

    /// Where its lines end (the rows at `pos` still to skip included).
    pub fn position(&self) -> Position {
        Position {
            offset: self.pos,
            skip: self.skip,
        }
    }

    /// Where a file given up now is read on from: its position, or, while it is still
    /// skipping lines already in the archive, the end of those.
    pub fn resume_position(&self) -> Position {
        match self.target {
            Some(t) => t.max(self.position()),
            None => self.position(),
        }
    }

    /// The sum of a plain file's first `zeros` bytes, all NUL (the part of a hole at its start
    /// that is not read, see `identity`); `None` for a compressed file.
    pub fn start_sum(plain: bool, zeros: u64) -> Option<crc32fast::Hasher> {
        plain.then(|| {
            let mut h = crc32fast::Hasher::new();
            update_zeros(&mut h, zeros);
            h
        })
    }

    /// Moves `pos` over `bytes`, the text at `pos` (lines, or the NUL bytes of a hole).
    pub fn advance(&mut self, bytes: &[u8]) {
        self.pos += bytes.len() as u64;
        if let Some(h) = &mut self.sum {
            h.update(bytes);
        }
    }

    /// Moves `pos` over the first `n` bytes of `partial` (the NUL bytes of a hole), dropping
    /// them.
    pub fn advance_partial(&mut self, n: usize) {
        if let Some(h) = &mut self.sum {
            h.update(&self.partial[..n]);
        }
        self.pos += n as u64;
        self.partial.drain(..n);
    }

    /// Drops the first `n` bytes of `partial`, part of an over-long line (after the `discard`
    /// bytes dropped before).
    pub fn drop_partial(&mut self, n: usize) {
        self.discard_sum.update(&self.partial[..n]);
        self.discard += n as u64;
        self.partial.drain(..n);
    }

    /// Moves `pos` past the over-long line dropped so far (its `discard` bytes).
    pub fn end_discard(&mut self) {
        self.pos += self.discard;
        self.discard = 0;
        let dropped = std::mem::take(&mut self.discard_sum);
        if let Some(h) = &mut self.sum {
            h.combine(&dropped);
        }
    }

    /// Moves `pos` to `offset` without reading what lies between: the sum is unknown from
    /// then on.
    pub fn jump(&mut self, offset: u64) {
        self.pos = offset;
        self.sum = None;
    }

    /// The sum of the text before `pos` ([`FileCheckpoint::sum`]).
    pub fn sum_now(&self) -> Option<u32> {
        self.sum.as_ref().map(|h| h.clone().finalize())
    }

    /// The sum of the text before `pos` followed by `lines`.
    pub fn sum_after(&self, lines: &[u8]) -> Option<u32> {
        self.sum.as_ref().map(|h| {
            let mut h = h.clone();
            h.update(lines);
            h.finalize()
        })
    }

    pub fn id(&self) -> FileId {
        FileId {
            dev: self.key.0,
            ino: self.key.1,
            fp_len: self.fp.0,
            fp_crc: self.fp.1,
        }
    }

    /// Its checkpoint at `pos`, with the sum of the bytes before it when that is known: at
    /// `pos` itself, or at the target resumed from (see [`Tracked::checkpoint_summed`]).
    pub fn checkpoint(&self, pos: Position, done: bool) -> FileCheckpoint {
        let sum = if pos.offset == self.pos {
            self.sum_now()
        } else {
            self.target
                .filter(|t| t.offset == pos.offset)
                .and(self.target_sum)
        };
        self.checkpoint_summed(pos, done, sum)
    }

    /// Its checkpoint at `pos`, whose bytes before it have the CRC-32 `sum`.
    pub fn checkpoint_summed(&self, pos: Position, done: bool, sum: Option<u32>) -> FileCheckpoint {
        FileCheckpoint {
            id: self.id(),
            path: self.name.clone(),
            pos,
            done,
            raw: match &self.inflating {
                Some(i) if done => i.raw_done,
                _ => 0,
            },
            // A file read to its end is not read on with it: not recorded (they add up).
            header: self
                .header
                .as_deref()
                .filter(|_| !done)
                .and_then(|h| std::str::from_utf8(h).ok())
                .unwrap_or_default()
                .to_string(),
            sum: sum.filter(|_| self.inflating.is_none() && pos.offset > 0),
        }
    }

    /// Reads more text into `partial` (at most [`READ_CHUNK`] stored bytes); `scratch` holds
    /// a compressed file's stored bytes.
    pub fn read(&mut self, scratch: &mut Vec<u8>) -> io::Result<Read> {
        let Some(file) = &self.file else {
            return Ok(Read::End { between: true });
        };
        if let Some(inf) = &mut self.inflating {
            if let Some(n) = take_ready(&mut inf.ready, &mut self.partial, &mut inf.verifier) {
                return Ok(Read::Text(n));
            }
            scratch.resize(READ_CHUNK, 0);
            let at = inf.verifier.offset();
            let n = read_full(file, at, scratch)?;
            if n == 0 {
                return Ok(Read::End {
                    between: inf.verifier.between(),
                });
            }
            // Bytes not fed now are read again next time (reads start at the verifier's
            // offset), so a run of steps that consume nothing may stop early.
            let (mut fed, mut idle) = (0, 0);
            while fed < n && idle < 4 {
                let (k, end) = inf.verifier.feed(&scratch[fed..n], &mut inf.ready)?;
                fed += k;
                if end {
                    inf.raw_done = inf.verifier.offset();
                }
                idle = if k == 0 { idle + 1 } else { 0 };
            }
            inf.partial_since = None;
            let got = take_ready(&mut inf.ready, &mut self.partial, &mut inf.verifier);
            return Ok(Read::Text(got.unwrap_or(0)));
        }
        let start = self.partial.len();
        self.partial.resize(start + READ_CHUNK, 0);
        let at = self.pos + self.discard + start as u64;
        let n = read_full(file, at, &mut self.partial[start..]);
        self.partial.truncate(start + *n.as_ref().unwrap_or(&0));
        match n? {
            0 => Ok(Read::End { between: true }),
            n => Ok(Read::Text(n)),
        }
    }

    /// Releases what an idle file need not hold: the spare capacity of its buffers.
    pub fn trim(&mut self) {
        if self.partial.capacity() > 4 * self.partial.len().max(4096) {
            self.partial.shrink_to(self.partial.len().max(1024));
        }
    }

    /// Closes the file (its descriptor and decoder; its position and header stay).
    pub fn close(&mut self) -> Option<Box<dyn BatchDecoder>> {
        self.file = None;
        self.trim();
        if self.header.is_some() {
            self.decoder.take()
        } else {
            None
        }
    }

    /// Notes the header lines among complete `lines` (the text at `pos`).
    pub fn capture_header(&mut self, lines: &[u8]) {
        let Some(header) = &mut self.header else {
            return;
        };
        let starts = (lines.first() == Some(&b'#'))
            .then_some(0)
            .into_iter()
            .chain(memchr::memmem::find_iter(lines, b"\n#").map(|i| i + 1));
        for at in starts {
            let end = memchr::memchr(b'\n', &lines[at..]).map_or(lines.len(), |i| at + i + 1);
            let line = &lines[at..end];
            if line.starts_with(b"#separator") {
                header.clear();
            }
            if header.len() + line.len() > MAX_HEADER {
                self.header = None;
                return;
            }
            header.extend_from_slice(line);
        }
    }
}

/// Adds `n` NUL bytes to `h`.
fn update_zeros(h: &mut crc32fast::Hasher, mut n: u64) {
    let zeros = [0u8; 4096];
    while n > 0 {
        let k = n.min(zeros.len() as u64) as usize;
        h.update(&zeros[..k]);
        n -= k as u64;
    }
}

/// Moves verified text from `ready` to `partial`; the bytes moved, `None` if there were none.
fn take_ready(
    ready: &mut VecDeque<Vec<u8>>,
    partial: &mut Vec<u8>,
    verifier: &mut Verifier,
) -> Option<usize> {
    let mut n = 0;
    while let Some(piece) = ready.pop_front() {
        partial.extend_from_slice(&piece);
        n += piece.len();
        verifier.recycle(piece);
        if n >= READ_CHUNK {
            break;
        }
    }
    (n > 0).then_some(n)
}
