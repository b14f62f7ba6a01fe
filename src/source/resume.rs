//! Resuming a batch import (`weir import FILE...` without `--follow`) exactly where the
//! archive ends.
//!
//! A file read by a batch import carries the same per-file checkpoints as a followed one (see
//! [`crate::checkpoint`]): every batch decoded from it carries a [`Mark`] with the file's
//! position after the batch's rows, and the batch that holds its last rows (or, without one,
//! a rows-free [`carrier`] batch) carries it with `done`. The archive commits the marks with
//! the rows. The file is known by its identity ([`super::identity`]: the fingerprint of its
//! decompressed first lines), so a file imported by `weir import` and later followed, or
//! imported again renamed or compressed, is the same file.
//!
//! When an import opens a regular file, the archive's checkpoints that match it decide
//! (`plan`; when several match, the one with the longest fingerprint, then the furthest
//! position):
//!
//! - none: the file is read from its start;
//! - one not `done`: it is read from that position (the rows before it are in the archive);
//! - one `done`: the file was imported whole before and is skipped with one line saying so,
//!   unless it grew since (a plain file longer than the position, a compressed one longer
//!   than the checkpoint's `raw`): then it is read on from the position;
//! - with `again` (`weir import --again`) the checkpoints are ignored and the file is read
//!   whole.
//!
//! # A file rewritten since
//!
//! The fingerprint covers a file's first lines only: a file rewritten with the same start
//! (truncated and written again, or replaced by another run's log with the same header and
//! first row) matches the checkpoint of the file imported before. So the checkpoint of a
//! file also holds the CRC-32 of its text before its position ([`FileCheckpoint::sum`]):
//! a plain file's bytes, a compressed file's decompressed text. When a plain file matches a
//! checkpoint with a sum, the sum of the file's bytes before that position is computed again
//! (one read of them, only for files whose checkpoint matched). A compressed file's is
//! computed as its prelude is decompressed when it is read on from the position; when it
//! would be skipped as imported whole before (its compressed length did not grow), its text
//! before the position is decompressed for the sum alone. When the sum differs, or the file
//! (its text) ends before the position, the file is not the one imported: a warning names it
//! and it is imported again whole (never skipped as imported whole before, never read on
//! from the middle of a line). A checkpoint without a sum (written before sums) is trusted
//! as before.
//!
//! The sums are computed as the checkpoints are made. A plain file's (`PrefixSum`): each
//! position's bytes are read once more (from the page cache: they were just read) and added
//! to a running CRC-32. A compressed file's text is summed as it is decompressed for the
//! decoder (see `source::textsum`). A position that a batch cut moves between two rows of one read
//! ([`crate::checkpoint::Mark::slice`]) within the same line start keeps its sum; a cut to
//! another line start has none (it is trusted as before, and the next checkpoint of the file
//! has one again).
//!
//! Within one import, every input given is read (a file given twice under two names is read
//! twice, as before). Inputs that are not regular files (stdin, pipes), files without a fingerprint yet (no
//! complete data line) and inputs in a binary format carry no checkpoints.
//!
//! # A file still being written
//!
//! A plain file read with checkpoints may still be written (a Zeek log imported while Zeek
//! writes it): a last line without its newline is not decoded, as a followed file's is not.
//! A warning names it; the file's checkpoint ends at the last complete line and is not `done`,
//! so a later import reads on from there and takes the line once it is complete. (A file that
//! truly ends without a newline needs one appended; compressed files, which end with their
//! last complete member, and inputs without checkpoints take their last line as it is.)
//!
//! # Reading from a position
//!
//! A position is a line start in the decompressed text plus rows to skip after it. The lines
//! before it are not decoded, but the decoder's header state must be that of the offset, and
//! its line numbers (in error messages) those of the file: the decoder is first given a
//! *prelude* made of the lines before the offset with each Zeek `#` header line kept as it is
//! and every other line replaced by an empty line (which makes no row; for Zeek JSON lines,
//! every line becomes empty). A plain file is then read from the offset (the prelude comes
//! from reading the bytes before it); a compressed one is decompressed from its start and its
//! text before the offset goes into the prelude. The first `skip` rows decoded after the
//! prelude are dropped.
//!
//! # Positions out of parallel decoding
//!
//! A decoder reports where each batch's rows lie ([`RowSpan`]): a line start at or before
//! its first row, the rows decoded after that line start before the batch, and, when the
//! batch holds the last rows of a run of whole lines, the line start after them. The
//! sequential path decodes runs of whole lines (cut at the last newline of each read); the
//! parallel TSV reader knows each piece's byte range (see
//! [`crate::codec::zeek::parallel`]). `Marker` turns spans (in the coordinates of the
//! decoder's text, prelude included) into file positions: a batch's mark ends at the span's
//! `end` when known, else at its line start plus the rows up to the batch's end, which
//! [`Mark::slice`] can cut between any two rows.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::batch::Batch;
use crate::checkpoint::{carrier, FileCheckpoint, FileId, Mark, Position, RowSpan};

use super::identity::{read_full, read_head};
use super::textsum::TextSum;
use super::verify::unverified_text;
use super::{Compression, Format};

/// The checkpoints a batch source resumes from, and its choices: filled by the pipeline with
/// the archive's checkpoints once the archive is open (a source without an archive downstream
/// gets none and carries no checkpoints).
#[derive(Debug, Default)]
pub struct BatchResume {
    /// The archive's checkpoints; `None` until an archive gave them.
    checkpoints: Mutex<Option<Arc<Vec<FileCheckpoint>>>>,
    /// Ignore the checkpoints: read every file whole (`--again`).
    again: bool,
}

impl BatchResume {
    /// A resume slot; with `again`, files imported before are read again whole.
    pub fn new(again: bool) -> Arc<BatchResume> {
        Arc::new(BatchResume {
            again,
            ..BatchResume::default()
        })
    }

    /// Gives the archive's checkpoints (which turns checkpointing on).
    pub fn set_checkpoints(&self, list: Vec<FileCheckpoint>) {
        if let Ok(mut c) = self.checkpoints.lock() {
            *c = Some(Arc::new(list));
        }
    }

    fn checkpoints(&self) -> Option<Arc<Vec<FileCheckpoint>>> {
        self.checkpoints.lock().ok().and_then(|c| c.clone())
    }
}

/// What to do with an input file.
#[derive(Debug)]
pub(crate) enum Plan {
    /// Read it as it is, without checkpoints.
    Untracked,
    /// Do not read it; the line saying why.
    Skip(String),
    /// Read it from `file.from`, with checkpoints.
    Read(TrackedFile),
}

/// A file read with checkpoints.
#[derive(Debug, Clone)]
pub(crate) struct TrackedFile {
    /// The identity its checkpoints carry.
    pub id: FileId,
    /// Its name (the path given).
    pub path: String,
    /// Where reading starts.
    pub from: Position,
    /// Its stored length when opened (the `raw` of a compressed file's checkpoints).
    pub len: u64,
    /// How it is compressed.
    pub compression: Compression,
    /// Zeek JSON lines (no header lines to keep in the prelude).
    pub json: bool,
    /// The file opened, for the sums of its checkpoints (a plain file; `None` otherwise), with
    /// the CRC-32 of its bytes before `from.offset`.
    pub sum: Option<(Arc<File>, u32)>,
    /// The CRC-32 that the decompressed text before `from.offset` of a compressed file must
    /// have (its checkpoint's sum): compared as its prelude is decompressed.
    pub check: Option<u32>,
    /// A warning to give before reading it (it was rewritten since it was imported).
    pub warning: Option<String>,
}

impl TrackedFile {
    /// Makes it read again whole from its start, with the warning that it was rewritten
    /// since it was imported: its bytes (or decompressed text) before `offset`, where the
    /// import ended, are not those imported.
    pub fn rewritten(&mut self, offset: u64) {
        let what = match self.compression {
            Compression::None => "bytes",
            _ => "decompressed text",
        };
        self.from = Position::default();
        self.sum = self.sum.take().map(|(f, _)| (f, 0));
        self.check = None;
        self.warning = Some(format!(
            "{}: rewritten since it was imported (its {what} before byte {offset}, where the import ended, are not those imported); imported again whole",
            self.path
        ));
    }
}

/// Decides how `path` is read (see the module docs). `format` and `compression` are the
/// source's settings.
pub(crate) fn plan(
    path: &Path,
    format: Format,
    compression: Compression,
    resume: &BatchResume,
) -> io::Result<Plan> {
    let Some(checkpoints) = resume.checkpoints() else {
        return Ok(Plan::Untracked);
    };
    if matches!(format, Format::Parquet | Format::Arrow) {
        return Ok(Plan::Untracked);
    }
    let name = path.display().to_string();
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(Plan::Untracked);
    }
    let head = read_head(&file, compression)?;
    let whole = meta.len() < u64::from(FileId::FINGERPRINT_BYTES);
    let fingerprint = head
        .fingerprint()
        .or_else(|| whole.then(|| head.final_fingerprint()).flatten());
    let Some((fp_len, fp_crc)) = fingerprint else {
        return Ok(Plan::Untracked);
    };
    let json = match format {
        Format::ZeekJson | Format::Suricata => true,
        Format::Auto => head.text.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{'),
        _ => false,
    };
    let plain = head.compression == Compression::None;
    let file = Arc::new(file);
    let mut tracked = TrackedFile {
        id: FileId {
            dev: meta.dev(),
            ino: meta.ino(),
            fp_len,
            fp_crc,
        },
        path: name.clone(),
        from: Position::default(),
        len: meta.len(),
        compression: head.compression,
        json,
        sum: plain.then(|| (file.clone(), 0)),
        check: None,
        warning: None,
    };
    let best = checkpoints
        .iter()
        .filter(|c| !resume.again && head.matches(&c.id))
        .max_by_key(|c| (c.id.fp_len, c.pos));
    if let Some(c) = best {
        let grew = match head.compression {
            Compression::None => meta.len() > c.pos.offset,
            _ => c.raw > 0 && meta.len() > c.raw,
        };
        let skip = c.done && !grew;
        // The checkpoint's identity, so that its entry moves on (or back to the start)
        // rather than a second one.
        tracked.id = c.id;
        if let Some(want) = c.sum {
            let got = if plain {
                Some(PrefixSum::new(file.clone(), 0, 0).at(c.pos.offset)?)
            } else if skip {
                // Skipped only if its text is the one imported; a file read on is checked
                // as its prelude is decompressed.
                Some(text_sum(&file, head.compression, c.pos.offset)?)
            } else {
                tracked.check = Some(want);
                None
            };
            if got.is_some_and(|got| got != Some(want)) {
                tracked.rewritten(c.pos.offset);
                return Ok(Plan::Read(tracked));
            }
            if plain {
                tracked.sum = Some((file.clone(), want));
            }
        }
        if skip {
            let before = if c.path == name {
                String::new()
            } else {
                format!(" (as {})", c.path)
            };
            return Ok(Plan::Skip(format!(
                "{name}: imported whole before{before}; skipped (`--again` imports it again)"
            )));
        }
        tracked.from = c.pos;
        if plain && c.sum.is_none() && c.pos.offset > 0 {
            // A checkpoint from before sums: the next ones get them.
            let base = PrefixSum::new(file.clone(), 0, 0).at(c.pos.offset)?;
            tracked.sum = base.map(|crc| (file.clone(), crc));
        }
    }
    Ok(Plan::Read(tracked))
}

/// Builds the prelude of a file read from an offset (see the module docs) from the text
/// before the offset, fed in pieces cut anywhere.
#[derive(Debug, Default)]
pub struct Prelude {
    out: Vec<u8>,
    /// Keep `#` lines (Zeek TSV); otherwise every line becomes empty.
    headers: bool,
    /// Inside a line: `Some(true)` a header line being copied, `Some(false)` another line.
    inside: Option<bool>,
}

impl Prelude {
    /// A prelude keeping Zeek TSV header lines when `headers`.
    pub fn new(headers: bool) -> Prelude {
        Prelude {
            headers,
            ..Prelude::default()
        }
    }

    /// Adds the next bytes of the text.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(&first) = bytes.first() {
            let header = *self.inside.get_or_insert(self.headers && first == b'#');
            let nl = memchr::memchr(b'\n', bytes);
            let end = nl.map_or(bytes.len(), |i| i + 1);
            if header {
                self.out.extend_from_slice(&bytes[..end]);
            } else if nl.is_some() {
                self.out.push(b'\n');
            }
            if nl.is_some() {
                self.inside = None;
            }
            bytes = &bytes[end..];
        }
    }

    /// The prelude: complete lines only (the text ended at a line start).
    pub fn finish(self) -> Vec<u8> {
        self.out
    }
}

/// The prelude of a plain file read from `offset`: its bytes before it, read with `pread`.
pub(crate) fn plain_prelude(file: &File, offset: u64, headers: bool) -> io::Result<Vec<u8>> {
    let mut prelude = Prelude::new(headers);
    let mut buf = vec![0u8; super::CHUNK_SIZE];
    let mut at = 0u64;
    while at < offset {
        let want = usize::try_from(offset - at).map_or(buf.len(), |n| n.min(buf.len()));
        let n = read_full(file, at, &mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::other(format!(
                "the file ends at byte {at}, before the part of it already imported (byte {offset}): it is not the file imported before; `--again` imports it whole"
            )));
        }
        prelude.feed(&buf[..n]);
        at += n as u64;
    }
    Ok(prelude.finish())
}

/// The CRC-32 of a compressed file's decompressed text before `offset` (`None` if the text
/// ends before it), decompressed here without waiting for checksums: it only decides whether
/// the file is the one imported.
fn text_sum(file: &File, compression: Compression, offset: u64) -> io::Result<Option<u32>> {
    let mut at = 0u64;
    let mut read = |buf: &mut [u8]| -> io::Result<usize> {
        let n = read_full(file, at, buf)?;
        at += n as u64;
        Ok(n)
    };
    let mut hasher = crc32fast::Hasher::new();
    let zstd = compression == Compression::Zstd;
    let n = unverified_text(zstd, offset, &mut read, &mut |b| hasher.update(b))?;
    Ok((n == offset).then(|| hasher.finalize()))
}

/// The CRC-32 of a plain file's bytes before a position that only moves forward: the sums
/// of a file's checkpoints ([`FileCheckpoint::sum`]), each read on from the one before.
pub(crate) struct PrefixSum {
    file: Arc<File>,
    /// Bytes summed so far.
    at: u64,
    hasher: crc32fast::Hasher,
    /// The file ended before a position asked for: no sum from then on.
    short: bool,
}

impl PrefixSum {
    /// The sums of `file`, whose bytes before `at` have the CRC-32 `crc`.
    pub fn new(file: Arc<File>, at: u64, crc: u32) -> PrefixSum {
        PrefixSum {
            file,
            at,
            hasher: crc32fast::Hasher::new_with_initial_len(crc, at),
            short: false,
        }
    }

    /// The CRC-32 of the bytes before `offset`; `None` if the file ends before it, or for an
    /// offset before one asked for already.
    pub fn at(&mut self, offset: u64) -> io::Result<Option<u32>> {
        if self.short || offset < self.at {
            return Ok(None);
        }
        let mut buf = vec![0u8; (offset - self.at).min(super::CHUNK_SIZE as u64) as usize];
        while self.at < offset {
            let want = usize::try_from(offset - self.at).map_or(buf.len(), |n| n.min(buf.len()));
            let n = read_full(&self.file, self.at, &mut buf[..want])?;
            if n == 0 {
                self.short = true;
                return Ok(None);
            }
            self.hasher.update(&buf[..n]);
            self.at += n as u64;
        }
        Ok(Some(self.hasher.clone().finalize()))
    }
}

/// Where a tracked file's checkpoint sums come from.
enum Sums {
    /// A plain file's bytes, read again.
    File(PrefixSum),
    /// A compressed file's text, as the import decompresses it.
    Text(TextSum),
}

/// Marks the batches decoded from a tracked file: drops the rows already in the archive and
/// holds back the last batch, so that the end of the file can mark it done.
pub(crate) struct Marker {
    file: TrackedFile,
    /// The sums of its checkpoints.
    sum: Option<Sums>,
    /// Length of the prelude: text offsets up to it are the file's `from.offset`.
    prelude: u64,
    /// Rows still to drop.
    skip: u64,
    held: Option<Batch>,
}

impl Marker {
    /// Marks for `file`, whose decoder's text starts with a prelude of `prelude` bytes.
    pub fn new(file: TrackedFile, prelude: u64) -> Marker {
        let skip = file.from.skip;
        let sum = file
            .sum
            .as_ref()
            .map(|(f, crc)| Sums::File(PrefixSum::new(f.clone(), file.from.offset, *crc)));
        Marker {
            file,
            sum,
            prelude,
            skip,
            held: None,
        }
    }

    /// Takes the sums of its checkpoints from its decompressed text as it is read (a
    /// compressed file; see [`super::textsum`]).
    pub fn sum_text(&mut self, sum: TextSum) {
        self.sum = Some(Sums::Text(sum));
    }

    /// The file offset of text offset `at`.
    fn offset(&self, at: u64) -> u64 {
        self.file.from.offset + at.saturating_sub(self.prelude)
    }

    fn checkpoint(&mut self, pos: Position, done: bool) -> FileCheckpoint {
        let compressed = self.file.compression != Compression::None;
        // A sum that cannot be read is left out: the checkpoint is trusted as before.
        let sum = match self.sum.as_mut() {
            Some(Sums::File(s)) => s.at(pos.offset).ok().flatten(),
            Some(Sums::Text(s)) => s.at(pos.offset),
            None => None,
        };
        FileCheckpoint {
            id: self.file.id,
            path: self.file.path.clone(),
            pos,
            done,
            raw: if compressed && done { self.file.len } else { 0 },
            header: String::new(),
            sum,
        }
    }

    /// Takes a decoded batch and where its rows lie: returns the batch to send before it (the
    /// one held back until now), if any.
    pub fn mark(&mut self, mut batch: Batch, span: Option<RowSpan>) -> Option<Batch> {
        let Some(span) = span else {
            // Not a batch of a run of lines (never for the decoders used here): no position.
            return self.held.replace(batch);
        };
        let n = batch.len() as u64;
        let drop = self.skip.min(n);
        self.skip -= drop;
        if drop > 0 {
            batch = batch.split_off(drop as usize);
        }
        if batch.is_empty() {
            return None;
        }
        let line = self.offset(span.line_start);
        let end = match span.end {
            Some(e) => Position {
                offset: self.offset(e),
                skip: 0,
            },
            None => Position {
                offset: line,
                skip: span.rows_before + n,
            },
        };
        let len = batch.len();
        batch.set_marks(vec![Mark {
            row_start: 0,
            row_end: len,
            start: Some(Position {
                offset: line,
                skip: span.rows_before + drop,
            }),
            end: self.checkpoint(end, false),
        }]);
        self.held.replace(batch)
    }

    /// The batch held back, as it is (reading stopped before the end).
    pub fn flush(&mut self) -> Option<Batch> {
        self.held.take()
    }

    /// Whether the file is plain (not compressed): one that may still be written.
    pub fn plain(&self) -> bool {
        self.file.compression == Compression::None
    }

    /// The file offset of text offset `at` (for messages).
    pub fn file_offset(&self, at: u64) -> u64 {
        self.offset(at)
    }

    /// The end of the lines read, at text offset `text_len`: the batch held back with the
    /// file's checkpoint there, or a rows-free batch carrying it. `done`: the file was read to
    /// its end (otherwise an unterminated last line after `text_len` waits for a later import).
    pub fn finish(&mut self, text_len: u64, done: bool) -> Batch {
        let done = self.checkpoint(
            Position {
                offset: self.offset(text_len),
                skip: 0,
            },
            done,
        );
        match self.held.take() {
            Some(mut b) => {
                let mut marks = b.marks().to_vec();
                match marks.last_mut() {
                    Some(m) => m.end = done,
                    None => marks.push(Mark {
                        row_start: b.len(),
                        row_end: b.len(),
                        start: None,
                        end: done,
                    }),
                }
                b.set_marks(marks);
                b
            }
            None => carrier([done]),
        }
    }

    /// The file's name.
    pub fn name(&self) -> &str {
        &self.file.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Header lines are kept, other lines become empty, wherever the pieces are cut.
    #[test]
    fn prelude_keeps_headers_and_line_count() {
        let text = b"#fields\ta\n#types\tcount\n1\n22\n#close\tx\n333\n";
        for cut in 0..text.len() {
            let mut p = Prelude::new(true);
            p.feed(&text[..cut]);
            p.feed(&text[cut..]);
            assert_eq!(
                p.finish(),
                b"#fields\ta\n#types\tcount\n\n\n#close\tx\n\n".to_vec(),
                "cut at {cut}"
            );
        }
        let mut p = Prelude::new(false);
        p.feed(b"{\"a\":1}\n#x\n\n");
        assert_eq!(p.finish(), b"\n\n\n".to_vec());
    }
}
