//! Following files like `tail -F`, exactly once across restarts (`weir import --follow`,
//! `follow = true`).
//!
//! One thread (`weir-follow NAME`) polls the source's glob patterns every [`POLL_INTERVAL`]
//! and reads every matching file:
//!
//! - **Files** are known by device and inode, plus a fingerprint of their first bytes
//!   ([`FileId`]). Every matching regular file is read from its start (or from its checkpoint)
//!   to its end, then followed; files that appear later are picked up at the next poll. A
//!   compressed file (gzip or zstd, by its magic bytes) is read whole, since it does not grow,
//!   and marked done.
//! - **Lines** are taken only when complete: the bytes after the last newline wait for the
//!   rest. Each file has its own decoder, hence its own Zeek header state and its own batch
//!   stream; the batches of all files interleave into one stream.
//! - **Rotation** by rename-and-recreate: the renamed file is no longer at a matched path (or
//!   still is, under its new name, and is simply followed on); it is read to its end through
//!   its open descriptor, then closed; the new file at the old path is a new file. By
//!   copy-and-truncate: the size drops below what was read; the file is read again from its
//!   start as a new file (its fingerprint changes with its content).
//! - **Exactly once**: every batch carries the position after its rows in its file
//!   ([`Mark`], see [`crate::checkpoint`]); the archive commits them with the rows. On start,
//!   the checkpoints the archive holds are matched to the files by identity: the same device,
//!   inode and fingerprint; or, for a file that was copied (copy-and-truncate while weir was
//!   down), the same fingerprint under another inode; or a file with the checkpoint's device
//!   and inode in the directory it was last seen in (a file rotated out of the patterns while
//!   weir was down). Such a file is read from its checkpoint: its Zeek header lines before the
//!   offset are read again (to rebuild the header state), then the rows already in the
//!   archive are skipped. A checkpoint whose file is not found is reported (a warning naming
//!   the file); compressed files marked done are not read again.
//!
//! A rotated file read to its end is marked done with a batch without rows that carries
//! only its checkpoint, so that a restart does not look for it.

use std::collections::{HashMap, HashSet};
use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bytes::BytesMut;
use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::io::AsyncReadExt;

use super::decode::{BatchDecoder, SourceConfig, SourceShared};
use super::{expand_pattern, open, BoxReader, Compression, Format, Input, SourceError};
use crate::batch::{Batch, BatchBuilder};
use crate::channel;
use crate::checkpoint::{FileCheckpoint, FileId, Mark, Position};
use crate::error::ReadError;
use crate::metrics::FileLag;
use crate::types::Schema;

/// How often the patterns are matched again and idle files looked at.
pub const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// Most bytes read from one file before the next file gets its turn.
const READ_CHUNK: usize = 1 << 20;

/// The checkpoints a followed source resumes from: filled by the pipeline with the archive's
/// checkpoints once the archive is open, read when the source starts.
pub type Resume = Arc<Mutex<Vec<FileCheckpoint>>>;

/// What a followed source reads: its patterns and where to resume.
#[derive(Clone)]
pub struct FollowSpec {
    /// Glob patterns (or file names), matched again at every poll.
    pub patterns: Vec<String>,
    /// The archive's checkpoints (see [`Resume`]).
    pub resume: Resume,
}

fn io_error(name: &str, error: io::Error) -> ReadError {
    ReadError::Io {
        source_name: name.to_string(),
        error,
    }
}

/// The stream of batches of a followed source; it ends only at shutdown (or on an error).
pub(crate) fn follow_stream(
    spec: FollowSpec,
    config: SourceConfig,
    shared: SourceShared,
) -> BoxStream<'static, Result<Batch, ReadError>> {
    // A followed source never knows its total size.
    shared.counters.add_unknown_total();
    let (tx, rx) = channel::channel(config.channel_capacity);
    let name = config.reader.source_name.clone();
    let thread = std::thread::Builder::new()
        .name(format!("weir-follow {name}"))
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build();
            match rt {
                Ok(rt) => {
                    let guard = tx.clone();
                    let run = std::panic::AssertUnwindSafe(|| {
                        rt.block_on(async {
                            let mut f = Follower::new(spec, config, shared, tx.clone());
                            if let Err(e) = f.run().await {
                                let _ = tx.send(Err(e)).await;
                            }
                        })
                    });
                    if std::panic::catch_unwind(run).is_err() {
                        let e = io::Error::other("the follower failed unexpectedly (a bug)");
                        let _ = futures::executor::block_on(guard.send(Err(io_error(&name, e))));
                    }
                }
                Err(e) => {
                    let _ = futures::executor::block_on(tx.send(Err(io_error(&name, e))));
                }
            }
        });
    match thread {
        Ok(_) => rx.boxed(),
        Err(e) => futures::stream::iter([Err(io_error("follow", e))]).boxed(),
    }
}

/// Where a followed file's bytes come from.
enum Reader {
    /// A plain file, read through its descriptor (which survives a rename).
    Plain(File),
    /// A compressed file's decompressed bytes.
    Compressed(BoxReader),
}

/// A file being followed.
struct Tracked {
    path: PathBuf,
    name: String,
    id: FileId,
    reader: Reader,
    /// Offset (decompressed) of the first byte not yet decoded: a line start.
    pos: u64,
    /// Rows decoded from the lines at `pos` that are already in the archive.
    skip: u64,
    /// Bytes read after `pos` (an incomplete line).
    buf: Vec<u8>,
    decoder: Option<Box<dyn BatchDecoder>>,
    /// No longer at any matched path: read to the end, then closed.
    rotated: bool,
    finished: bool,
    /// Size and modification time when opened.
    opened: Closed,
}

impl Tracked {
    fn key(&self) -> (u64, u64) {
        (self.id.dev, self.id.ino)
    }

    fn checkpoint(&self, pos: Position, done: bool) -> FileCheckpoint {
        FileCheckpoint {
            id: self.id,
            path: self.name.clone(),
            pos,
            done,
            raw: 0,
        }
    }
}

/// A file seen in a scan.
struct Seen {
    path: PathBuf,
    meta: Metadata,
}

/// Files finished in this run that still match, by device and inode: not opened again while
/// their size and modification time stay.
#[derive(PartialEq, Eq)]
struct Closed {
    size: u64,
    mtime: Option<SystemTime>,
}

struct Follower {
    spec: FollowSpec,
    config: SourceConfig,
    shared: SourceShared,
    tx: channel::Sender<Result<Batch, ReadError>>,
    files: Vec<Tracked>,
    closed: HashMap<(u64, u64), Closed>,
    /// Checkpoints from the archive not yet matched to a file.
    resume: Vec<FileCheckpoint>,
    /// Scan problems already reported (each once).
    reported: HashSet<String>,
    /// Time spent waiting for the channel to admit batches (backpressure), since last taken.
    blocked: Duration,
}

fn fingerprint(head: &[u8]) -> (u32, u32) {
    let n = head.len().min(FileId::FINGERPRINT_BYTES as usize);
    (n as u32, crc32fast::hash(&head[..n]))
}

/// The first bytes of `file` (up to the fingerprint length).
fn read_head(file: &File) -> io::Result<Vec<u8>> {
    let mut head = vec![0u8; FileId::FINGERPRINT_BYTES as usize];
    let mut n = 0;
    while n < head.len() {
        match file.read_at(&mut head[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(n);
    Ok(head)
}

fn matches_content(id: &FileId, head: &[u8]) -> bool {
    id.fp_len > 0
        && head.len() >= id.fp_len as usize
        && crc32fast::hash(&head[..id.fp_len as usize]) == id.fp_crc
}

impl Follower {
    fn new(
        spec: FollowSpec,
        config: SourceConfig,
        shared: SourceShared,
        tx: channel::Sender<Result<Batch, ReadError>>,
    ) -> Follower {
        let resume = spec.resume.lock().map(|r| r.clone()).unwrap_or_default();
        Follower {
            spec,
            config,
            shared,
            tx,
            files: Vec::new(),
            closed: HashMap::new(),
            resume,
            reported: HashSet::new(),
            blocked: Duration::ZERO,
        }
    }

    fn warn(&self, text: String) {
        tracing::warn!("{text}");
        if let Ok(mut w) = self.shared.warnings.lock() {
            w.push(text);
        }
    }

    async fn run(&mut self) -> Result<(), ReadError> {
        let mut first = true;
        loop {
            if self.shared.cancel.is_cancelled() {
                break;
            }
            let t0 = Instant::now();
            let seen = self.scan();
            self.track(seen).await?;
            if first {
                for (path, meta, file, head, c) in self.unmatched() {
                    self.open(path, &meta, file, head, Some(c), true).await?;
                }
                first = false;
            }
            // A rotated file's last lines come before those of the file that replaced it.
            self.files.sort_by_key(|f| !f.rotated);
            let mut progressed = false;
            let mut i = 0;
            while i < self.files.len() {
                if self.shared.cancel.is_cancelled() {
                    break;
                }
                progressed |= self.step(i).await?;
                i += 1;
            }
            for f in self.files.iter().filter(|f| f.finished) {
                self.shared.metrics.remove_file(&f.name);
            }
            self.files.retain(|f| !f.finished);
            let blocked = std::mem::take(&mut self.blocked);
            self.shared
                .metrics
                .add_busy(t0.elapsed().saturating_sub(blocked));
            if !progressed {
                let t1 = Instant::now();
                tokio::select! {
                    _ = self.shared.cancel.cancelled() => break,
                    _ = tokio::time::sleep(POLL_INTERVAL) => {}
                }
                self.shared.metrics.add_idle(t1.elapsed());
            }
        }
        Ok(())
    }

    /// The regular files matching the patterns now, each once.
    fn scan(&mut self) -> Vec<Seen> {
        let mut out = Vec::new();
        let mut keys = HashSet::new();
        for pattern in self.spec.patterns.clone() {
            let paths = match expand_pattern(&pattern) {
                Ok(p) => p,
                Err(SourceError::NoMatch { .. }) => continue,
                Err(e) => {
                    let text = e.to_string();
                    if self.reported.insert(text.clone()) {
                        self.warn(text);
                    }
                    continue;
                }
            };
            for path in paths {
                let Ok(meta) = std::fs::metadata(&path) else {
                    continue;
                };
                if meta.is_file() && keys.insert((meta.dev(), meta.ino())) {
                    out.push(Seen { path, meta });
                }
            }
        }
        out
    }

    /// Notes rotations and opens the files not followed yet.
    async fn track(&mut self, seen: Vec<Seen>) -> Result<(), ReadError> {
        let keys: HashMap<(u64, u64), &Seen> = seen
            .iter()
            .map(|s| ((s.meta.dev(), s.meta.ino()), s))
            .collect();
        for f in &mut self.files {
            match keys.get(&f.key()) {
                Some(s) if s.path != f.path => {
                    tracing::info!(from = %f.name, to = %s.path.display(), "followed file renamed");
                    self.shared.metrics.remove_file(&f.name);
                    f.path = s.path.clone();
                    f.name = s.path.display().to_string();
                }
                Some(_) => {}
                None if !f.rotated => {
                    tracing::info!(file = %f.name, "followed file rotated away; reading it to its end");
                    f.rotated = true;
                }
                None => {}
            }
        }
        self.closed.retain(|k, _| keys.contains_key(k));
        let followed: HashSet<(u64, u64)> = self.files.iter().map(Tracked::key).collect();
        let mut new: Vec<(Seen, File, Vec<u8>)> = Vec::new();
        for s in seen {
            let key = (s.meta.dev(), s.meta.ino());
            if followed.contains(&key) {
                continue;
            }
            let state = Closed {
                size: s.meta.len(),
                mtime: s.meta.modified().ok(),
            };
            if self.closed.get(&key) == Some(&state) {
                continue;
            }
            self.closed.remove(&key);
            let file = match File::open(&s.path) {
                Ok(f) => f,
                // Gone between the scan and now, or unreadable: tried again at the next poll.
                Err(e) => {
                    let text = format!("{}: cannot open: {e}", s.path.display());
                    if self.reported.insert(text.clone()) {
                        self.warn(text);
                    }
                    continue;
                }
            };
            let head = read_head(&file).map_err(|e| io_error(&s.path.display().to_string(), e))?;
            new.push((s, file, head));
        }
        // Exact identities first, then copies (same content, another inode).
        let mut matched: Vec<Option<FileCheckpoint>> = new
            .iter()
            .map(|(s, _, head)| {
                let i = self.resume.iter().position(|c| {
                    c.id.dev == s.meta.dev()
                        && c.id.ino == s.meta.ino()
                        && matches_content(&c.id, head)
                })?;
                Some(self.resume.remove(i))
            })
            .collect();
        for (slot, (s, _, head)) in matched.iter_mut().zip(&new) {
            if slot.is_some() {
                continue;
            }
            let i = self
                .resume
                .iter()
                .position(|c| !c.done && c.pos.offset > 0 && matches_content(&c.id, head));
            if let Some(i) = i {
                let mut c = self.resume.remove(i);
                tracing::info!(file = %s.path.display(), was = %c.path, "found a followed file by its content");
                c.id.dev = s.meta.dev();
                c.id.ino = s.meta.ino();
                *slot = Some(c);
            }
        }
        for ((s, file, head), cp) in new.into_iter().zip(matched) {
            self.open(s.path, &s.meta, file, head, cp, false).await?;
        }
        Ok(())
    }

    /// Checkpoints of files not found among the matches: looked for in the directory they
    /// were last seen in (by device, inode and fingerprint) and returned to be read to their
    /// end, else reported.
    fn unmatched(&mut self) -> Vec<(PathBuf, Metadata, File, Vec<u8>, FileCheckpoint)> {
        let mut out = Vec::new();
        for c in std::mem::take(&mut self.resume) {
            if c.done {
                continue;
            }
            let dir = Path::new(&c.path).parent().unwrap_or(Path::new("."));
            let found = std::fs::read_dir(dir).ok().and_then(|rd| {
                rd.flatten().find_map(|e| {
                    let meta = std::fs::metadata(e.path()).ok()?;
                    (meta.is_file() && meta.dev() == c.id.dev && meta.ino() == c.id.ino)
                        .then(|| (e.path(), meta))
                })
            });
            let opened = found.and_then(|(path, meta)| {
                let file = File::open(&path).ok()?;
                let head = read_head(&file).ok()?;
                matches_content(&c.id, &head).then_some((path, meta, file, head))
            });
            match opened {
                Some((path, meta, file, head)) => {
                    tracing::info!(file = %path.display(), was = %c.path, "found a rotated followed file");
                    out.push((path, meta, file, head, c));
                }
                None => self.warn(format!(
                    "{}: a followed file (device {}, inode {}) is not found any more; its lines after byte {} are not imported",
                    c.path, c.id.dev, c.id.ino, c.pos.offset
                )),
            }
        }
        out
    }

    /// Starts following `file` (at `path`), from its checkpoint `cp` if there is one.
    async fn open(
        &mut self,
        path: PathBuf,
        meta: &Metadata,
        file: File,
        head: Vec<u8>,
        cp: Option<FileCheckpoint>,
        rotated: bool,
    ) -> Result<(), ReadError> {
        let name = path.display().to_string();
        let key = (meta.dev(), meta.ino());
        if cp.as_ref().is_some_and(|c| c.done) {
            // A compressed file read before.
            self.closed.insert(
                key,
                Closed {
                    size: meta.len(),
                    mtime: meta.modified().ok(),
                },
            );
            return Ok(());
        }
        let compression = match self.config.compression {
            Compression::Auto => Compression::detect(&head),
            c => c,
        };
        let reader = if compression == Compression::None {
            Reader::Plain(file)
        } else {
            drop(file);
            let (_, _, r) = open(
                Input::Path(path.clone()),
                compression,
                &self.shared.counters,
                &self.shared.cancel,
            )
            .await
            .map_err(|e| match e {
                SourceError::Io { name, error } => io_error(&name, error),
                other => io_error(&name, io::Error::other(other)),
            })?;
            Reader::Compressed(r)
        };
        let (fp_len, fp_crc) = fingerprint(&head);
        let mut f = Tracked {
            path,
            name: name.clone(),
            id: FileId {
                dev: key.0,
                ino: key.1,
                fp_len,
                fp_crc,
            },
            reader,
            pos: 0,
            skip: 0,
            buf: Vec::new(),
            decoder: None,
            rotated,
            finished: false,
            opened: Closed {
                size: meta.len(),
                mtime: meta.modified().ok(),
            },
        };
        tracing::info!(file = %name, checkpoint = ?cp.as_ref().map(|c| c.pos), "following file");
        if let Some(c) = cp {
            f.id = c.id;
            if let Err(e) = self.rebuild(&mut f, c.pos).await {
                if self.shared.cancel.is_cancelled() {
                    return Ok(());
                }
                return Err(e);
            }
        }
        self.files.push(f);
        Ok(())
    }

    /// Positions `f` at `pos`: reads its lines before `pos.offset`, giving the Zeek header
    /// lines among them to its decoder (so that the header state is that of the offset), and
    /// notes the rows to skip.
    async fn rebuild(&mut self, f: &mut Tracked, pos: Position) -> Result<(), ReadError> {
        let mut left = pos.offset;
        let mut line = Vec::new();
        let mut buf = vec![0u8; READ_CHUNK];
        while left > 0 {
            let want = (left as usize).min(buf.len());
            let n = read_some(&mut f.reader, &mut buf[..want])
                .await
                .map_err(|e| io_error(&f.name, e))?;
            if n == 0 {
                // Shorter than its checkpoint: truncated while weir was down.
                self.warn(format!(
                    "{}: the file is shorter than its checkpoint (byte {}); reading it from its start",
                    f.name, pos.offset
                ));
                return self.restart(f).await;
            }
            left -= n as u64;
            let mut chunk = &buf[..n];
            while !chunk.is_empty() {
                match memchr::memchr(b'\n', chunk) {
                    Some(i) => {
                        line.extend_from_slice(&chunk[..=i]);
                        chunk = &chunk[i + 1..];
                        self.header_line(f, &line)?;
                        line.clear();
                    }
                    None => {
                        // Only the start of a line matters: is it a header line?
                        if line.len() < 2 {
                            line.extend_from_slice(chunk);
                        } else {
                            line.truncate(2);
                        }
                        chunk = &[];
                    }
                }
            }
        }
        f.pos = pos.offset;
        f.skip = pos.skip;
        Ok(())
    }

    /// Reads `f` again from its start as a new file (it was truncated).
    async fn restart(&mut self, f: &mut Tracked) -> Result<(), ReadError> {
        match &mut f.reader {
            Reader::Plain(file) => {
                file.seek(SeekFrom::Start(0))
                    .map_err(|e| io_error(&f.name, e))?;
                let head = read_head(file).map_err(|e| io_error(&f.name, e))?;
                let (fp_len, fp_crc) = fingerprint(&head);
                f.id.fp_len = fp_len;
                f.id.fp_crc = fp_crc;
            }
            Reader::Compressed(_) => {
                return Err(io_error(
                    &f.name,
                    io::Error::other("compressed file changed since it was checkpointed"),
                ))
            }
        }
        f.pos = 0;
        f.skip = 0;
        f.buf.clear();
        f.decoder = None;
        Ok(())
    }

    /// Gives a line before the checkpoint to the decoder if it is a Zeek header line.
    fn header_line(&self, f: &mut Tracked, line: &[u8]) -> Result<(), ReadError> {
        if f.decoder.is_none() {
            let first = line.iter().find(|b| !b.is_ascii_whitespace());
            if first.is_none() {
                return Ok(());
            }
            f.decoder = Some(self.decoder_for(&f.name, first == Some(&b'{')));
        }
        if line.first() != Some(&b'#') {
            return Ok(());
        }
        if let Some(d) = &mut f.decoder {
            let mut src = BytesMut::from(line);
            while let Some(b) = d.decode(&mut src)? {
                // A header line makes no rows; a row here would be a bug, never an event.
                debug_assert!(b.is_empty());
            }
        }
        Ok(())
    }

    fn decoder_for(&self, name: &str, json: bool) -> Box<dyn BatchDecoder> {
        let format = match self.config.format {
            Format::Auto if json => Format::ZeekJson,
            Format::Auto => Format::ZeekTsv,
            f => f,
        };
        let mut options = self.config.reader.clone();
        options.source_name = name.to_string();
        (self.config.decoders)(format, options)
    }

    /// Reads and decodes the next bytes of file `i`; whether there were any.
    async fn step(&mut self, i: usize) -> Result<bool, ReadError> {
        let mut f = match self.files.get_mut(i) {
            Some(f) if !f.finished => std::mem::replace(f, placeholder()),
            _ => return Ok(false),
        };
        let r = self.step_file(&mut f).await;
        self.files[i] = f;
        r
    }

    async fn step_file(&mut self, f: &mut Tracked) -> Result<bool, ReadError> {
        let mut size = None;
        if let Reader::Plain(file) = &f.reader {
            let len = file.metadata().map_err(|e| io_error(&f.name, e))?.len();
            let read = f.pos + f.buf.len() as u64;
            // Truncated (copy-and-truncate rotation): smaller than what was read, or, if it
            // was refilled past that before this poll, different in its first bytes.
            let rewritten = !f.rotated
                && f.id.fp_len > 0
                && (len < read
                    || !matches_content(
                        &f.id,
                        &read_head(file).map_err(|e| io_error(&f.name, e))?,
                    ));
            if rewritten {
                tracing::info!(file = %f.name, size = len, read, "followed file truncated; reading it from its start");
                self.restart(f).await?;
            }
            size = Some(len);
        }
        let start = f.buf.len();
        f.buf.resize(start + READ_CHUNK, 0);
        let n = read_some(&mut f.reader, &mut f.buf[start..]).await;
        f.buf.truncate(start + *n.as_ref().unwrap_or(&0));
        let n = n.map_err(|e| io_error(&f.name, e))?;
        if let Some(size) = size {
            self.shared.counters.add_plain(n as u64);
            let offset = f.pos + f.buf.len() as u64;
            self.shared.metrics.set_file(
                &f.name,
                FileLag {
                    offset,
                    size: size.max(offset),
                },
            );
        }
        if n == 0 {
            let compressed = matches!(f.reader, Reader::Compressed(_));
            if !(compressed || f.rotated) || self.shared.cancel.is_cancelled() {
                return Ok(false);
            }
            // The end of a compressed or rotated file: its last line needs no newline.
            let rest = std::mem::take(&mut f.buf);
            let end = f.pos + rest.len() as u64;
            let mut batches = self.decode(f, &rest, end, true)?;
            f.pos = end;
            let done = f.checkpoint(
                Position {
                    offset: end,
                    skip: 0,
                },
                true,
            );
            match batches.last_mut().and_then(|b| {
                let last = b.marks().len().checked_sub(1)?;
                Some((b, last))
            }) {
                Some((b, last)) => {
                    let mut marks = b.marks().to_vec();
                    marks[last].end = done;
                    b.set_marks(marks);
                }
                None => {
                    let mut b =
                        BatchBuilder::new(Schema::new("weir.checkpoint", vec![]).into_shared())
                            .finish();
                    b.push_mark(Mark {
                        row_start: 0,
                        row_end: 0,
                        start: None,
                        end: done,
                    });
                    batches.push(b);
                }
            }
            tracing::info!(file = %f.name, "finished reading a followed file");
            f.finished = true;
            let opened = std::mem::replace(
                &mut f.opened,
                Closed {
                    size: 0,
                    mtime: None,
                },
            );
            self.closed.insert(f.key(), opened);
            self.send_all(batches).await?;
            return Ok(true);
        }
        if f.id.fp_len == 0 {
            if let Reader::Plain(file) = &f.reader {
                let head = read_head(file).map_err(|e| io_error(&f.name, e))?;
                let (fp_len, fp_crc) = fingerprint(&head);
                f.id.fp_len = fp_len;
                f.id.fp_crc = fp_crc;
            }
        }
        let Some(nl) = memchr::memrchr(b'\n', &f.buf) else {
            if f.buf.len() > self.config.reader.max_line_len {
                return Err(io_error(
                    &f.name,
                    io::Error::other(format!(
                        "line at byte {} is longer than the maximum of {} bytes",
                        f.pos, self.config.reader.max_line_len
                    )),
                ));
            }
            return Ok(true);
        };
        let rest = f.buf.split_off(nl + 1);
        let lines = std::mem::replace(&mut f.buf, rest);
        let end = f.pos + lines.len() as u64;
        let batches = self.decode(f, &lines, end, false)?;
        f.pos = end;
        self.send_all(batches).await?;
        Ok(true)
    }

    /// Decodes complete lines that start at `f.pos` and end at `end`, drops the rows still to
    /// skip, and marks each batch with the file's position after it.
    fn decode(
        &self,
        f: &mut Tracked,
        lines: &[u8],
        end: u64,
        eof: bool,
    ) -> Result<Vec<Batch>, ReadError> {
        if f.decoder.is_none() {
            let first = lines.iter().find(|b| !b.is_ascii_whitespace());
            if first.is_none() {
                return Ok(Vec::new());
            }
            f.decoder = Some(self.decoder_for(&f.name, first == Some(&b'{')));
        }
        let Some(d) = f.decoder.as_mut() else {
            return Ok(Vec::new());
        };
        let mut src = BytesMut::from(lines);
        let mut decoded = Vec::new();
        loop {
            let r = if eof {
                d.decode_eof(&mut src)?
            } else {
                d.decode(&mut src)?
            };
            match r {
                Some(b) => decoded.push(b),
                None => break,
            }
        }
        for w in d.take_warnings() {
            self.warn(format!("{}: {w}", f.name));
        }
        let start = f.pos;
        let count = decoded.len();
        let mut rows = 0u64;
        let mut out = Vec::with_capacity(count);
        for (i, mut b) in decoded.into_iter().enumerate() {
            let n = b.len() as u64;
            let drop = f.skip.min(n);
            f.skip -= drop;
            if drop > 0 {
                b = b.split_off(drop as usize);
            }
            let before = rows + drop;
            rows += n;
            if b.is_empty() {
                continue;
            }
            let after = if i + 1 == count {
                Position {
                    offset: end,
                    skip: f.skip,
                }
            } else {
                Position {
                    offset: start,
                    skip: rows,
                }
            };
            let len = b.len();
            b.set_marks(vec![Mark {
                row_start: 0,
                row_end: len,
                start: Some(Position {
                    offset: start,
                    skip: before,
                }),
                end: f.checkpoint(after, false),
            }]);
            out.push(b);
        }
        Ok(out)
    }

    async fn send_all(&mut self, batches: Vec<Batch>) -> Result<(), ReadError> {
        for b in batches {
            let t0 = Instant::now();
            let r = self.tx.send(Ok(b)).await;
            self.blocked += t0.elapsed();
            self.shared.metrics.add_blocked(t0.elapsed());
            if r.is_err() {
                // The consumer is gone (the pipeline is stopping).
                self.shared.cancel.cancel();
                return Ok(());
            }
        }
        Ok(())
    }
}

/// Fills a slot of `files` while its file is being stepped.
fn placeholder() -> Tracked {
    Tracked {
        path: PathBuf::new(),
        name: String::new(),
        id: FileId {
            dev: 0,
            ino: 0,
            fp_len: 0,
            fp_crc: 0,
        },
        reader: Reader::Compressed(Box::pin(tokio::io::empty())),
        pos: 0,
        skip: 0,
        buf: Vec::new(),
        decoder: None,
        rotated: false,
        finished: true,
        opened: Closed {
            size: 0,
            mtime: None,
        },
    }
}

/// One read into `buf`: the bytes read (0 at the end, for now, of the file).
async fn read_some(reader: &mut Reader, buf: &mut [u8]) -> io::Result<usize> {
    match reader {
        Reader::Plain(file) => loop {
            match file.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        },
        Reader::Compressed(r) => r.read(buf).await,
    }
}
