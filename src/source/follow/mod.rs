//! Following files like `tail -F`, exactly once across restarts (`weir import --follow`,
//! `follow = true`).
//!
//! One thread (`weir-follow NAME`) matches the source's glob patterns every [`POLL_INTERVAL`]
//! and reads every matching file:
//!
//! - **Identity.** A file is known by its content, not its name or inode: the fingerprint of
//!   its decompressed first lines ([`crate::source::identity`]). A file is not read until its
//!   fingerprint is trusted (it holds its first data line). Every identity seen, and every
//!   checkpoint of the archive, is kept in a registry (`registry.rs`); a file whose content is
//!   known is read on from its position under whatever name and compression it has now (`conn.log`
//!   rotated into `2009-11-18/conn.08:00:00-09:00:00.log.gz` while weir was down is read on
//!   inside the decompressed text), a file read to its end is not read again under any name
//!   unless it grew, and a second name for a file being read is left alone. A plain file in
//!   another inode that reproduces a live file's identity but whose head differs from that
//!   file's further on (a look-alike: the same header and first rows) is another file, read
//!   from its start with a note under a longer fingerprint
//!   ([`crate::source::identity::distinguish`]); one that does not differ yet is looked at
//!   again at the next scan. A plain file found at a checkpoint that holds a sum of the bytes
//!   before its position ([`FileCheckpoint::sum`]: a batch import records one) is read on
//!   from there only if its bytes still have that sum; otherwise it was rewritten with the
//!   same start while not followed, and is read from its start with a warning. The follower
//!   records such sums in its own checkpoints of plain files (the CRC-32 of the bytes it
//!   read before each position, NUL holes included, see `file.rs`), so a file rewritten
//!   with the same first lines while weir was down is read from its start too. A file that
//!   ends before the position is not judged by its sum (see `sum_holds`).
//! - **Lines** are taken only when complete: the bytes after the last newline wait for the
//!   rest. Each file has its own decoder (its own Zeek header state) and its batches
//!   interleave with those of the other files into one stream. A line longer than the
//!   reader's maximum is an error, or under `--on-error skip` reported and skipped, as in a
//!   batch import.
//! - **Rotation** by rename: an open descriptor keeps reading the renamed file. If the new
//!   name still matches, the file is followed on under it; if not, it is read to its end and
//!   finished. By copy-and-truncate: the file is smaller than what was read, or its first
//!   bytes changed (compared after every read, so that bytes read from a rewrite that came
//!   between a check and the read are dropped, not taken as the old file's); its old
//!   identity keeps its position (so the copy, if a pattern matches it, is read on from
//!   there) and the file is read again as a new one once trusted; if the same inode then
//!   shows the same identity again (rewritten from its start with the same first lines), it
//!   is read from its start, with a warning, not on from the old position.
//! - **The header stays** after copy-and-truncate: Zeek writes a log's header once, so the
//!   truncated file holds rows without one. A file whose text starts with a data line (not
//!   `#`, not `{`) is read with the header it had: its identity's, as recorded in its
//!   checkpoint ([`FileCheckpoint::header`]: every checkpoint records the header block its
//!   lines are read with), else that of the file given up as truncated at its path in this
//!   run, else the one the checkpoints of its path recorded (truncated while weir was down),
//!   else that of a file of the same log name (its file name up to the first dot: `conn`
//!   for `conn.log` and its copy `conn.log.1`).
//! - **Holes.** A writer without `O_APPEND` writes on at its old offset after a truncation:
//!   NUL bytes before its new rows. They are not content (the identity is taken after them,
//!   see [`crate::source::identity`]); NUL bytes where a line starts are skipped, with one
//!   warning per hole.
//! - **Errors stay in their file.** An error of one file (a line its decoder refuses under
//!   `--on-error fail`, a line over the maximum, an unreadable file) is reported once; the
//!   file stops before the line (its identity released at its position) and is looked at
//!   again, as at a start, after [`RETRY_FIRST`], doubled at each failure up to
//!   [`RETRY_MAX`]. The other files and the process go on, and a restart meets the same
//!   error the same way.
//! - **Compressed files** (gzip, zstd) are decoded member by member (`file.rs`): only complete
//!   members or frames are taken; a file that ends inside one is waited for (with a warning
//!   after [`PARTIAL_WARN_AFTER`]) and never ends the import. A compressed file read through
//!   its last complete member is finished with its stored length (`raw`); members appended
//!   later are read once, also after a restart (a longer file than `raw`).
//! - **Bounded resources.** Reads go through one buffer; a file's own memory is its position,
//!   its partial last line and its header lines. At most a budget of descriptors
//!   are held (a quarter of the soft `RLIMIT_NOFILE`, see [`MAX_OPEN`]): beyond that, the
//!   files idle longest are closed (descriptor and decoder; the header lines rebuild the
//!   decoder) and reopened by path, identity checked, when they change. A closed file that is
//!   rotated away cannot be read to its end: that is reported (only more matching files
//!   than descriptors make it possible).
//! - **Exactly once**: every batch carries the position after its rows in its file
//!   ([`Mark`], see [`crate::checkpoint`]); the archive commits them with the rows. On start,
//!   the archive's checkpoints fill the registry; a checkpoint whose content no matching file
//!   has is looked for in the directory it was last seen in (by device and inode, its content
//!   checked), else reported with a warning that names the file and the kind of pattern that
//!   would have found it. Files of that file's log name (`conn` for `conn.log`) that no
//!   pattern matches, in its directory or a sibling of it (zeekctl's dated directories beside
//!   `current/`), were rotated there while weir was down and never seen (a whole hour may
//!   have come and gone): warned of once, with the pattern that would have found them
//!   (`Follower::warn_unseen`). The same after a pause of the process ([`PAUSE_GAP`]
//!   between two scans, as under SIGSTOP) for a followed file rotated away during it, with
//!   the files modified since the pause began.
//!
//! A finished file is marked done with a batch without rows that carries only its checkpoint
//! when its last batch has no rows to carry it, so that a restart does not look for it.

mod file;
mod registry;

use std::collections::{HashMap, HashSet};
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use futures::stream::BoxStream;
use futures::StreamExt;

use self::file::{Inflating, Read, Stat, Tracked};
use self::registry::Registry;
use super::decode::{BatchDecoder, SourceConfig, SourceShared};
use super::identity::{distinguish, extend_text, read_head, Head, Lookalike, LOOKALIKE_BYTES};
use super::resume::PrefixSum;
use super::verify::Verifier;
use super::{expand_pattern, Compression, Format, SourceError};
use crate::batch::{Batch, BatchBuilder};
use crate::channel;
use crate::checkpoint::{FileCheckpoint, Mark, Position, StartFrom};
use crate::error::{OnError, ReadError};
use crate::metrics::FileLag;
use crate::types::Schema;

/// How often the patterns are matched again and idle files looked at.
pub const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// How long a compressed file may end inside a member before that is reported (it is still
/// waited for).
pub const PARTIAL_WARN_AFTER: Duration = Duration::from_secs(60);

/// How long a followed file that failed (see `Follower::fail`) waits before it is tried
/// again, the first time; each further failure doubles the wait, up to [`RETRY_MAX`].
pub const RETRY_FIRST: Duration = Duration::from_secs(1);

/// The longest wait before a failed file is tried again.
pub const RETRY_MAX: Duration = Duration::from_secs(60);

/// Bounds of the descriptors held open for followed files: a quarter of the soft
/// `RLIMIT_NOFILE` (the rest is left to the archive, its segments and the other sources),
/// within these.
pub const MAX_OPEN: (usize, usize) = (8, 4096);

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
    /// Where a file without a checkpoint starts ([`StartFrom::End`]: at its end, on the first
    /// scan).
    pub start: StartFrom,
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

/// A scan this long after the one before follows a pause (weir was stopped with SIGSTOP, or
/// the machine slept): followed files rotated away during it may have had successors that
/// were created and rotated away unseen (see `Follower::warn_unseen`).
pub const PAUSE_GAP: Duration = Duration::from_secs(2);

/// The descriptors this process may hold for followed files (see [`MAX_OPEN`]).
fn max_open() -> usize {
    #[cfg(target_os = "linux")]
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    #[cfg(not(target_os = "linux"))]
    let soft = 256u64;
    let quarter = usize::try_from(soft / 4).unwrap_or(usize::MAX);
    quarter.clamp(MAX_OPEN.0, MAX_OPEN.1)
}

/// When a file that failed is tried again.
struct Retry {
    at: Instant,
    /// The wait before `at`, doubled at the next failure.
    wait: Duration,
}

/// A file seen in a scan.
struct Seen {
    path: PathBuf,
    meta: Metadata,
}

struct Follower {
    spec: FollowSpec,
    config: SourceConfig,
    shared: SourceShared,
    tx: channel::Sender<Result<Batch, ReadError>>,
    files: Vec<Tracked>,
    registry: Registry,
    /// Files looked at and left alone (not trusted yet, or read to their end), by device
    /// and inode: not looked at again while their size and modification time stay.
    idle: HashMap<(u64, u64), Stat>,
    /// Scan problems and file errors already reported (each once).
    reported: HashSet<String>,
    /// Files that failed, by device and inode: not looked at until their retry time.
    retry: HashMap<(u64, u64), Retry>,
    /// The header block of each file given up as truncated, by path: a file without header
    /// lines of its own found there next inherits it (see [`Follower::inherited_header`]).
    inherit: HashMap<PathBuf, Vec<u8>>,
    /// The identity each file given up as truncated had, by device and inode: found again
    /// there, it is the file rewritten from its start (see [`Follower::look_at`]).
    truncated: HashMap<(u64, u64), registry::Fp>,
    /// Time spent waiting for the channel to admit batches (backpressure), since last taken.
    blocked: Duration,
    /// Descriptors held at most (see [`MAX_OPEN`]).
    max_open: usize,
    /// At least the descriptors open now (see [`Follower::make_room`]).
    opened: usize,
    /// The one buffer compressed files are read through.
    scratch: Vec<u8>,
    /// Until the first scan is done: files without a checkpoint start at their end
    /// ([`StartFrom::End`]).
    start_at_end: bool,
    /// The files (device and inode) that the patterns matched at the last scan.
    matched: HashSet<(u64, u64)>,
    /// When the last scan was made.
    last_scan: Option<(Instant, std::time::SystemTime)>,
    /// The scan being made follows a pause ([`PAUSE_GAP`]) that began then.
    paused_since: Option<std::time::SystemTime>,
}

impl Follower {
    fn new(
        spec: FollowSpec,
        config: SourceConfig,
        shared: SourceShared,
        tx: channel::Sender<Result<Batch, ReadError>>,
    ) -> Follower {
        let resume = spec.resume.lock().map(|r| r.clone()).unwrap_or_default();
        let start_at_end = spec.start == StartFrom::End;
        Follower {
            spec,
            config,
            shared,
            tx,
            files: Vec::new(),
            registry: Registry::new(resume),
            idle: HashMap::new(),
            reported: HashSet::new(),
            retry: HashMap::new(),
            inherit: HashMap::new(),
            truncated: HashMap::new(),
            blocked: Duration::ZERO,
            max_open: max_open(),
            opened: 0,
            scratch: Vec::new(),
            start_at_end,
            matched: HashSet::new(),
            last_scan: None,
            paused_since: None,
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
            self.paused_since = self
                .last_scan
                .filter(|(at, _)| at.elapsed() >= PAUSE_GAP)
                .map(|(_, wall)| wall);
            self.last_scan = Some((t0, std::time::SystemTime::now()));
            let seen = self.scan();
            self.track(seen)?;
            if first {
                let lost = self.find_unmatched()?;
                self.send_all(lost).await?;
                first = false;
                self.start_at_end = false;
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
            self.scratch = Vec::new();
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
        for f in &mut self.files {
            if let Some(d) = f.decoder.take() {
                if let Ok(mut s) = self.shared.skips.lock() {
                    s.merge(&d.skip_report());
                }
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

    /// Notes renames, rotations and changes of the files followed, and looks at the others.
    fn track(&mut self, seen: Vec<Seen>) -> Result<(), ReadError> {
        let keys: HashMap<(u64, u64), &Seen> = seen
            .iter()
            .map(|s| ((s.meta.dev(), s.meta.ino()), s))
            .collect();
        let mut gone = Vec::new();
        for f in &mut self.files {
            match keys.get(&f.key) {
                Some(s) => {
                    if s.path != f.path {
                        tracing::info!(from = %f.name, to = %s.path.display(), "followed file renamed");
                        self.shared.metrics.remove_file(&f.name);
                        f.path = s.path.clone();
                        f.name = s.path.display().to_string();
                    }
                    let stat = Stat::of(&s.meta);
                    if stat != f.seen {
                        // Changed since last looked at: not caught up, so that it is read
                        // (reopened if it is closed, or closed before its next read).
                        f.caught_up = false;
                        f.wake = f.file.is_none();
                    }
                    f.seen = stat;
                }
                None if !f.rotated => {
                    tracing::info!(file = %f.name, "followed file rotated away; reading it to its end");
                    f.rotated = true;
                    if self.paused_since.is_some() {
                        gone.push(f.name.clone());
                    }
                }
                None => {}
            }
        }
        self.idle.retain(|k, _| keys.contains_key(k));
        self.retry.retain(|k, _| keys.contains_key(k));
        self.matched = keys.keys().copied().collect();
        for name in gone {
            self.warn_unseen(&name, self.paused_since);
        }
        let followed: HashSet<(u64, u64)> = self.files.iter().map(|f| f.key).collect();
        let now = Instant::now();
        for s in &seen {
            let key = (s.meta.dev(), s.meta.ino());
            if followed.contains(&key) || self.idle.get(&key) == Some(&Stat::of(&s.meta)) {
                continue;
            }
            if self.retry.get(&key).is_some_and(|r| now < r.at) {
                continue;
            }
            if let Err(e) = self.look_at(&s.path, &s.meta, false) {
                self.report_failure(key, &e, 0);
            }
        }
        // Closed files rotated away cannot be read to their end. Their identity is released
        // where reading would go on (never before what the archive holds: a file closed
        // while it still skipped to its checkpoint is released at that checkpoint), so that
        // a copy found by its content is read on from there.
        for f in &mut self.files {
            if f.rotated && f.file.is_none() && !f.finished {
                let at = f.resume_position();
                let text = format!(
                    "{}: rotated away while closed (more files match than the {} descriptors \
                     weir keeps open); lines written to it after byte {} are imported only if \
                     a pattern matches it where it went",
                    f.name, self.max_open, at.offset
                );
                tracing::warn!("{text}");
                if let Ok(mut w) = self.shared.warnings.lock() {
                    w.push(text);
                }
                f.finished = true;
                let cp = f.checkpoint(at, false);
                self.registry.release(&f.fp, cp);
            }
        }
        Ok(())
    }

    /// Looks at a file not followed: starts following it if it is trusted and has lines not
    /// read yet; else notes it as idle. `rotated`: it no longer matches the patterns.
    fn look_at(&mut self, path: &Path, meta: &Metadata, rotated: bool) -> Result<(), ReadError> {
        let key = (meta.dev(), meta.ino());
        let stat = Stat::of(meta);
        let name = path.display().to_string();
        let file = match File::open(path) {
            Ok(f) => f,
            // Gone between the scan and now, or unreadable: tried again at the next poll.
            Err(e) => {
                let text = format!("{name}: cannot open: {e}");
                if self.reported.insert(text.clone()) {
                    self.warn(text);
                }
                return Ok(());
            }
        };
        let mut head = read_head(&file, self.config.compression).map_err(|e| io_error(&name, e))?;
        // A look-alike's fingerprint may be longer than the head read (see `identity`).
        extend_text(&file, &mut head, self.registry.max_len() as usize)
            .map_err(|e| io_error(&name, e))?;
        let compressed = head.compression != Compression::None;
        // A different file that starts as a live file of a known identity does (see
        // `identity::distinguish`) is read as a file of its own.
        let mut lookalike = None;
        let found = match self.registry.find(&head) {
            Some(fp) => match self.lookalike(&head, &file, key, fp) {
                Lookalike::Same => Some(fp),
                Lookalike::Undecided => return Ok(()),
                Lookalike::Differs(own) => {
                    let other = self.registry.get(&fp).map(|k| k.cp.path.clone());
                    self.warn(format!(
                        "{name}: starts as {} does (the same header and first lines) but is another file; both are read",
                        other.unwrap_or_default()
                    ));
                    lookalike = Some(own);
                    None
                }
            },
            None => None,
        };
        let (fp, start) = match found {
            Some(fp) => {
                let Some(known) = self.registry.get(&fp) else {
                    return Ok(());
                };
                if known.claimed {
                    // Another name for a file being read. A closed file that was rotated away
                    // is read on here instead.
                    let Some(i) = self
                        .files
                        .iter()
                        .position(|f| f.fp == fp && f.rotated && f.file.is_none())
                    else {
                        return Ok(());
                    };
                    let f = self.files.remove(i);
                    self.shared.metrics.remove_file(&f.name);
                    tracing::info!(file = %name, was = %f.name, "found a rotated followed file by its content");
                    if let Some(h) = f.header.filter(|h| !h.is_empty()) {
                        self.inherit.insert(path.to_path_buf(), h);
                    }
                    (
                        fp,
                        Some(Position {
                            offset: f.pos,
                            skip: f.skip,
                        }),
                    )
                } else {
                    let cp = &known.cp;
                    if !compressed && !sum_holds(&file, cp).map_err(|e| io_error(&name, e))? {
                        // Rewritten since it was read, with the same start: not the file of
                        // that position (see `FileCheckpoint::sum`).
                        self.warn(format!(
                            "{name}: rewritten since it was read (its bytes before byte {}, where reading ended, are not those read); read again from its start",
                            cp.pos.offset
                        ));
                        (fp, None)
                    } else {
                        let grew = if !cp.done {
                            true
                        } else if compressed {
                            // Read before through its last member: on only if members came.
                            cp.raw == 0 || stat.size > cp.raw
                        } else {
                            stat.size > cp.pos.offset
                        };
                        if !grew {
                            self.idle.insert(key, stat);
                            return Ok(());
                        }
                        if cp.path != name {
                            tracing::info!(file = %name, was = %cp.path, "found a followed file by its content");
                        }
                        if !compressed && self.truncated.get(&key) == Some(&fp) {
                            // Seen shorter than its position, in the same inode: rewritten from
                            // its start with the same first lines, not the file read before.
                            self.truncated.remove(&key);
                            self.warn(format!(
                            "{name}: truncated, then written again with the same first lines as before; read again from its start"
                        ));
                            (fp, None)
                        } else {
                            (fp, Some(cp.pos))
                        }
                    }
                }
            }
            // `--from-end`: a file present at the first scan starts at its last complete line
            // (a compressed one, which does not grow, is left alone).
            None if self.start_at_end => match lookalike.or(head.fingerprint()) {
                Some(_) if compressed => {
                    self.idle.insert(key, stat);
                    return Ok(());
                }
                Some(fp) => {
                    let offset =
                        end_of_last_line(&file, stat.size).map_err(|e| io_error(&name, e))?;
                    (fp, Some(Position { offset, skip: 0 }))
                }
                None => {
                    self.idle.insert(key, stat);
                    return Ok(());
                }
            },
            None => match lookalike.or(head.fingerprint()) {
                Some(fp) => (fp, None),
                None => {
                    // Not trusted yet (or no data line at all): looked at again when it changes.
                    self.idle.insert(key, stat);
                    return Ok(());
                }
            },
        };
        // The descriptor its identity was proven on is kept (within the descriptor budget):
        // a file renamed away before its first read is read on through it. Reopening by path
        // instead would find the next file there, and the rotated one could then only be
        // given up (see `track`).
        self.make_room();
        let file = Some(file);
        let inflating = match head.compression {
            Compression::Gzip => Some(Inflating::new(Verifier::gzip(0))),
            Compression::Zstd => Some(Inflating::new(
                Verifier::zstd(0).map_err(|e| io_error(&name, e))?,
            )),
            _ => None,
        };
        let mut cp = FileCheckpoint {
            id: crate::checkpoint::FileId {
                dev: key.0,
                ino: key.1,
                fp_len: fp.0,
                fp_crc: fp.1,
            },
            path: name.clone(),
            pos: start.unwrap_or_default(),
            done: false,
            raw: 0,
            header: String::new(),
            sum: None,
        };
        match self.registry.get_mut(&fp) {
            Some(k) => {
                cp.pos = k.cp.pos.max(cp.pos);
                k.claimed = true;
            }
            None => {
                self.registry.insert(cp.clone());
                if let Some(k) = self.registry.get_mut(&fp) {
                    k.claimed = true;
                }
            }
        }
        tracing::info!(file = %name, checkpoint = ?start, "following file");
        let target = start.filter(|p| *p != Position::default());
        // A hole at its start (see `identity`) is not read: it holds no line.
        let hole = if inflating.is_none() { head.hole } else { 0 };
        let pos = target.map_or(hole, |t| t.offset.min(hole));
        if hole > 0 && target.is_none_or(|t| t.offset <= hole) {
            self.warn(format!(
                "{name}: starts with {hole} NUL bytes (a hole: a writer without O_APPEND wrote on at its old offset after the file was truncated); skipped"
            ));
        }
        // The sum recorded with the checkpoint read on from (see `file.rs`).
        let target_sum = target.and_then(|t| {
            self.registry
                .get(&fp)
                .filter(|k| k.cp.pos == t)
                .and_then(|k| k.cp.sum)
        });
        let inflating_none = inflating.is_none();
        let header = match self.headerless(&head) {
            true => self.inherited_header(&fp, path, key, &name),
            false => Vec::new(),
        };
        self.files.push(Tracked {
            path: path.to_path_buf(),
            name,
            key,
            fp,
            hole,
            file,
            inflating,
            pos,
            skip: 0,
            target,
            discard: 0,
            partial: Vec::new(),
            nuls: 0,
            sum: Tracked::start_sum(inflating_none, pos),
            discard_sum: crc32fast::Hasher::new(),
            target_sum,
            header: Some(header),
            decoder: None,
            rotated,
            finished: false,
            active: Instant::now(),
            seen: stat,
            wake: false,
            caught_up: false,
        });
        Ok(())
    }

    /// What a plain file at `key` whose head reproduces identity `fp` is to the live file of
    /// that identity (the one being read, else the one at its checkpoint's path and inode):
    /// the same file, or a look-alike (see [`crate::source::identity::distinguish`]). A
    /// compressed file, one at the identity's own inode, or one beside a live file now
    /// shorter than what was read of it (truncated: this may be its copy) is the same file.
    fn lookalike(&self, head: &Head, mine: &File, key: (u64, u64), fp: registry::Fp) -> Lookalike {
        if head.compression != Compression::None {
            return Lookalike::Same;
        }
        let Some(known) = self.registry.get(&fp) else {
            return Lookalike::Same;
        };
        // The other file, and how long it was when last read: a file now shorter was
        // truncated (it is not the file of that identity any more; its copy may be this file).
        let (path, other_key, read) = match self.files.iter().find(|f| f.fp == fp && !f.finished) {
            Some(f) if f.inflating.is_some() => return Lookalike::Same,
            Some(f) => (f.path.clone(), f.key, f.text_read()),
            None if known.claimed => return Lookalike::Same,
            None => (
                PathBuf::from(&known.cp.path),
                (known.cp.id.dev, known.cp.id.ino),
                known.cp.pos.offset,
            ),
        };
        if other_key == key {
            return Lookalike::Same;
        }
        let Ok(file) = File::open(&path) else {
            return Lookalike::Same;
        };
        let same_inode = file
            .metadata()
            .is_ok_and(|m| (m.dev(), m.ino()) == other_key && m.len() >= read);
        match read_head(&file, self.config.compression) {
            Ok(mut other) if same_inode && other.compression == Compression::None => {
                // Compared beyond the fingerprint: files alike through their first 4 KiB may
                // differ further on (see `identity`).
                let mut head = head.clone();
                let longer = extend_text(mine, &mut head, LOOKALIKE_BYTES)
                    .and_then(|()| extend_text(&file, &mut other, LOOKALIKE_BYTES));
                match longer {
                    Ok(()) => distinguish(&head.text, &other.text, fp.0 as usize),
                    Err(_) => Lookalike::Same,
                }
            }
            _ => Lookalike::Same,
        }
    }

    /// Whether a file's text starts with a data line of Zeek TSV, without header lines of its
    /// own: what copy-and-truncate leaves (Zeek writes the header once).
    fn headerless(&self, head: &Head) -> bool {
        let first = head.text.iter().find(|b| !b.is_ascii_whitespace());
        matches!(self.config.format, Format::Auto | Format::ZeekTsv)
            && first.is_some_and(|&b| b != b'#' && b != b'{')
    }

    /// The header a file without header lines of its own is read with: its identity's, as its
    /// checkpoint recorded it; else that of the file given up as truncated at its path in this
    /// run; else the one recorded in the checkpoints of its path or of a file of the same log
    /// name (truncated while weir was down, or a copy; see [`Registry::header_for`]). Empty
    /// if there is none: its first line is then an error of that file (see
    /// `Follower::fail`).
    fn inherited_header(
        &self,
        fp: &registry::Fp,
        path: &Path,
        key: (u64, u64),
        name: &str,
    ) -> Vec<u8> {
        let own = self
            .registry
            .get(fp)
            .map(|k| k.cp.header.as_bytes().to_vec())
            .filter(|h| !h.is_empty());
        let header = own
            .or_else(|| self.inherit.get(path).cloned())
            .or_else(|| {
                self.registry
                    .header_for(name, key)
                    .map(|h| h.as_bytes().to_vec())
            })
            .unwrap_or_default();
        if !header.is_empty() {
            tracing::info!(file = %name, "no header lines of its own (copy-and-truncate): read with the header it had before");
        }
        header
    }

    /// Reports a file's error (each distinct one once) and sets when it is tried again.
    fn report_failure(&mut self, key: (u64, u64), e: &ReadError, at: u64) {
        let wait = self
            .retry
            .get(&key)
            .map_or(RETRY_FIRST, |r| (r.wait * 2).min(RETRY_MAX));
        self.retry.insert(
            key,
            Retry {
                at: Instant::now() + wait,
                wait,
            },
        );
        let text = e.to_string();
        if self.reported.insert(text.clone()) {
            self.warn(format!(
                "{text}; this file stops at byte {at} and is tried again after a pause (up to {} s); the other files go on",
                RETRY_MAX.as_secs()
            ));
        }
    }

    /// Gives up a file after an error, for now: the error is reported, the lines before it
    /// are kept (its identity is released at its position) and the file is looked at again,
    /// as at a start, after a wait that grows with each failure ([`RETRY_FIRST`] to
    /// [`RETRY_MAX`]). The other files go on.
    fn fail(&mut self, f: &mut Tracked, e: ReadError) {
        let pos = f.resume_position();
        self.report_failure(f.key, &e, pos.offset);
        if let Some(d) = f.decoder.take() {
            if let Ok(mut s) = self.shared.skips.lock() {
                s.merge(&d.skip_report());
            }
        }
        let cp = f.checkpoint(pos, false);
        self.registry.release(&f.fp, cp);
        self.idle.remove(&f.key);
        f.file = None;
        f.finished = true;
    }

    /// After the first scan: the archive's checkpoints that no matching file took, looked for
    /// in the directory they were last seen in (by device and inode, content checked) and read
    /// to their end, else reported once: the batch returned marks them done (a file of their
    /// content that turns up later is still read on from there, as it is longer).
    fn find_unmatched(&mut self) -> Result<Vec<Batch>, ReadError> {
        let mut lost = Vec::new();
        for c in self.registry.unclaimed_open() {
            let dir = Path::new(&c.path).parent().unwrap_or(Path::new("."));
            let found = std::fs::read_dir(dir).ok().and_then(|rd| {
                rd.flatten().find_map(|e| {
                    let meta = std::fs::metadata(e.path()).ok()?;
                    (meta.is_file() && meta.dev() == c.id.dev && meta.ino() == c.id.ino)
                        .then(|| (e.path(), meta))
                })
            });
            let same = found.filter(|(path, _)| {
                File::open(path)
                    .and_then(|f| read_head(&f, self.config.compression))
                    .is_ok_and(|h: Head| h.matches(&c.id))
            });
            match same {
                Some((path, meta)) => {
                    tracing::info!(file = %path.display(), was = %c.path, "found a rotated followed file");
                    self.look_at(&path, &meta, true)?;
                }
                None => {
                    let dir = dir.display();
                    self.warn(format!(
                        "{}: a followed file (device {}, inode {}) is not found any more; its lines after byte {} are not imported. If it was rotated into another directory or compressed, a pattern that matches it there (for example {}/../**/*.log*) finds it by its content",
                        c.path, c.id.dev, c.id.ino, c.pos.offset, dir
                    ));
                    self.warn_unseen(&c.path, None);
                    let mut done = c.clone();
                    done.done = true;
                    lost.push(checkpoint_batch(done.clone()));
                    if let Some(k) = self.registry.get_mut(&(c.id.fp_len, c.id.fp_crc)) {
                        k.cp = done;
                    }
                }
            }
        }
        Ok(lost)
    }

    /// After a followed file was found gone (rotated while weir was down, or during a pause:
    /// modified `since` it began): files of its log name that no pattern matches, beside it
    /// (in its directory or a sibling of it, as zeekctl's dated directories are beside
    /// `current/`), whose content is not a file being read or read to its end, are files
    /// rotated there that weir never saw, or the rest of the file gone: warned of once per
    /// pattern that would have found them (see [`unseen_pattern`]).
    fn warn_unseen(&mut self, gone: &str, since: Option<std::time::SystemTime>) {
        let gone = Path::new(gone);
        let (Some(dir), Some(name)) = (gone.parent(), gone.file_name()) else {
            return;
        };
        let name = name.to_string_lossy();
        let stem = log_name(&name);
        if stem.is_empty() {
            return;
        }
        let mut dirs = vec![dir.to_path_buf()];
        if let Some(parent) = dir.parent() {
            if let Ok(rd) = std::fs::read_dir(parent) {
                let mut sub: Vec<PathBuf> = rd
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir() && p != dir)
                    .collect();
                sub.sort();
                dirs.extend(sub);
            }
        }
        let mut unseen: Vec<(String, PathBuf)> = Vec::new();
        for d in &dirs {
            let Ok(rd) = std::fs::read_dir(d) else {
                continue;
            };
            let mut found: Vec<PathBuf> = rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| log_name(&n.to_string_lossy()) == stem)
                })
                .filter(|p| {
                    std::fs::metadata(p).is_ok_and(|m| {
                        m.is_file()
                            && !self.matched.contains(&(m.dev(), m.ino()))
                            && since.is_none_or(|t| m.modified().is_ok_and(|w| w >= t))
                    })
                })
                .filter(|p| !self.read_or_reading(p))
                .collect();
            found.sort();
            for p in found {
                unseen.push((unseen_pattern(&p, d == dir), p));
            }
        }
        let mut patterns: Vec<&String> = unseen.iter().map(|(p, _)| p).collect();
        patterns.sort();
        patterns.dedup();
        for pattern in patterns {
            let files: Vec<String> = unseen
                .iter()
                .filter(|(p, _)| p == pattern)
                .map(|(_, f)| f.display().to_string())
                .collect();
            let key = format!("unseen {pattern}");
            if !self.reported.insert(key) {
                continue;
            }
            let more = match files.len() {
                1 => String::new(),
                n => format!(" and {} more", n - 1),
            };
            self.warn(format!(
                "{}{more}: no pattern matches {} beside the followed {} that is gone (rotated while weir was down?): files rotated there were never read; to read them, add the pattern {pattern}",
                files[0],
                if files.len() == 1 { "this file" } else { "these files" },
                gone.display()
            ));
        }
    }

    /// Whether the file at `path` has the content of a file being read or read to its end.
    fn read_or_reading(&self, path: &Path) -> bool {
        let Ok(head) = File::open(path).and_then(|f| read_head(&f, self.config.compression)) else {
            return false;
        };
        self.registry
            .find(&head)
            .and_then(|fp| self.registry.get(&fp))
            .is_some_and(|k| k.claimed || k.cp.done)
    }

    /// Makes room for one more descriptor: at the budget, closes the files idle longest down
    /// to half of it (so that the sweep, which looks at every file, is rare).
    fn make_room(&mut self) {
        // `opened` never counts fewer descriptors than are open (finished files only close).
        if self.opened < self.max_open {
            self.opened += 1;
            return;
        }
        let open = self.files.iter().filter(|f| f.file.is_some()).count();
        if open < self.max_open {
            self.opened = open + 1;
            return;
        }
        let keep = self.max_open / 2;
        // Files that are caught up first, then those idle longest.
        let mut candidates: Vec<(bool, Instant, usize)> = self
            .files
            .iter()
            .enumerate()
            .filter(|(_, f)| f.file.is_some() && f.inflating.is_none() && !f.rotated)
            .map(|(i, f)| (!f.caught_up, f.active, i))
            .collect();
        candidates.sort();
        let close = open.saturating_sub(keep).min(candidates.len());
        self.opened = open - close + 1;
        for (_, _, i) in candidates.into_iter().take(close) {
            let f = &mut self.files[i];
            if let Some(d) = f.close() {
                if let Ok(mut s) = self.shared.skips.lock() {
                    s.merge(&d.skip_report());
                }
            }
        }
    }

    /// Reads and decodes the next bytes of file `i`; whether there were any.
    async fn step(&mut self, i: usize) -> Result<bool, ReadError> {
        let mut f = match self.files.get_mut(i) {
            Some(f) if !f.finished => std::mem::replace(f, placeholder()),
            _ => return Ok(false),
        };
        let r = match self.step_file(&mut f).await {
            Ok(progressed) => {
                if progressed {
                    self.retry.remove(&f.key);
                }
                progressed
            }
            Err(e) => {
                self.fail(&mut f, e);
                true
            }
        };
        self.files[i] = f;
        Ok(r)
    }

    /// Reopens a closed file that changed; whether it is open.
    fn reopen(&mut self, f: &mut Tracked) -> Result<bool, ReadError> {
        if f.file.is_some() {
            return Ok(true);
        }
        if !f.wake && f.caught_up {
            return Ok(false);
        }
        f.wake = false;
        let Ok(file) = File::open(&f.path) else {
            return Ok(false);
        };
        let meta = file.metadata().map_err(|e| io_error(&f.name, e))?;
        if (meta.dev(), meta.ino()) != f.key {
            return Ok(false);
        }
        self.make_room();
        f.file = Some(file);
        Ok(true)
    }

    /// Whether an open plain file was truncated: smaller than what was read.
    fn truncated(f: &Tracked) -> io::Result<bool> {
        match &f.file {
            Some(file) if f.inflating.is_none() && !f.rotated => {
                Ok(file.metadata()?.len() < f.text_read())
            }
            _ => Ok(false),
        }
    }

    /// Whether the first bytes of an open plain file are no longer its identity's: it was
    /// truncated and refilled past the old position. Checked after each read, not before:
    /// a rewrite between a check and the read would otherwise be read on from the old
    /// position. A matching head after the read proves that the bytes read were this file's.
    fn rewritten(f: &Tracked) -> io::Result<bool> {
        let Some(file) = &f.file else {
            return Ok(false);
        };
        if f.inflating.is_some() || f.rotated {
            return Ok(false);
        }
        let mut head = vec![0u8; f.fp.0 as usize];
        let n = super::identity::read_full(file, f.hole, &mut head)?;
        Ok(n < head.len() || crc32fast::hash(&head) != f.fp.1)
    }

    /// Gives up a truncated or rewritten file: its old content keeps its position (a copy of
    /// it is read on from there); the file is looked at again as a new one at the next scan.
    fn drop_rewritten(&mut self, f: &mut Tracked) -> bool {
        tracing::info!(file = %f.name, "followed file truncated; reading it again as a new file");
        if let Some(h) = f.header.clone().filter(|h| !h.is_empty()) {
            self.inherit.insert(f.path.clone(), h);
        }
        if f.inflating.is_none() {
            self.truncated.insert(f.key, f.fp);
        }
        let cp = f.checkpoint(f.resume_position(), false);
        self.registry.release(&f.fp, cp);
        self.idle.remove(&f.key);
        f.finished = true;
        true
    }

    async fn step_file(&mut self, f: &mut Tracked) -> Result<bool, ReadError> {
        if !self.reopen(f)? {
            return Ok(false);
        }
        if Self::truncated(f).map_err(|e| io_error(&f.name, e))? {
            return Ok(self.drop_rewritten(f));
        }
        let read = f.read(&mut self.scratch).map_err(|e| io_error(&f.name, e));
        let read = match read {
            Ok(r) => r,
            Err(e) if f.inflating.is_some() && self.config.reader.on_error == OnError::Skip => {
                self.warn(format!(
                    "{e}; the rest of the file is skipped (--on-error skip)"
                ));
                return self.finish(f).await;
            }
            Err(e) => return Err(e),
        };
        match read {
            Read::Text(n) => {
                if Self::rewritten(f).map_err(|e| io_error(&f.name, e))? {
                    // What was read may be the new content: dropped unread.
                    f.partial.truncate(f.partial.len().saturating_sub(n));
                    return Ok(self.drop_rewritten(f));
                }
                f.active = Instant::now();
                f.caught_up = false;
                if f.inflating.is_none() {
                    self.shared.counters.add_plain(n as u64);
                }
                self.shared.metrics.set_file(
                    &f.name,
                    FileLag {
                        offset: f.raw_read(),
                        size: f.seen.size.max(f.raw_read()),
                    },
                );
                self.take_lines(f, false).await?;
                Ok(true)
            }
            Read::End { between: true } if f.inflating.is_some() || f.rotated => {
                if self.shared.cancel.is_cancelled() {
                    return Ok(false);
                }
                self.finish(f).await
            }
            Read::End { between } => {
                f.caught_up = true;
                if !between {
                    if let Some(inf) = &mut f.inflating {
                        let since = *inf.partial_since.get_or_insert_with(Instant::now);
                        if !inf.warned && since.elapsed() >= PARTIAL_WARN_AFTER {
                            inf.warned = true;
                            let at = inf.raw_done;
                            self.warn(format!(
                                "{}: the compressed member or frame at byte {at} has been incomplete for {} s; waiting for the rest",
                                f.name,
                                since.elapsed().as_secs()
                            ));
                        }
                    }
                }
                f.trim();
                Ok(false)
            }
        }
    }

    /// Decodes the complete lines of `f.partial` (all of it with `eof`), handling lines
    /// already in the archive (before `f.target`), over-long lines and NUL bytes where a line
    /// starts (a hole, see [`crate::source::identity`]: skipped, with a warning when it ends);
    /// sends the batches.
    async fn take_lines(&mut self, f: &mut Tracked, eof: bool) -> Result<(), ReadError> {
        loop {
            if f.discard == 0 {
                let nuls = f
                    .partial
                    .iter()
                    .position(|&b| b != 0)
                    .unwrap_or(f.partial.len());
                if nuls > 0 {
                    f.advance_partial(nuls);
                    f.nuls += nuls as u64;
                }
                if f.nuls > 0 && !f.partial.is_empty() {
                    self.warn(format!(
                        "{}: skipped {} NUL bytes before byte {} (a hole: a writer without O_APPEND wrote on at its old offset after the file was truncated)",
                        f.name, f.nuls, f.pos
                    ));
                    f.nuls = 0;
                }
            }
            // Lines up to a hole that starts after one of them; the hole is skipped next.
            let upto = memchr::memmem::find(&f.partial, b"\n\0").map(|i| i + 1);
            let rest = upto.map(|i| f.partial.split_off(i));
            let r = self.take_lines_before(f, eof && rest.is_none()).await;
            if let Some(rest) = rest {
                f.partial.extend_from_slice(&rest);
            }
            r?;
            if upto.is_none() || self.shared.cancel.is_cancelled() {
                return Ok(());
            }
        }
    }

    /// [`Follower::take_lines`] without holes.
    async fn take_lines_before(&mut self, f: &mut Tracked, eof: bool) -> Result<(), ReadError> {
        // An over-long line being skipped: drop it through its newline.
        if f.discard > 0 {
            match memchr::memchr(b'\n', &f.partial) {
                Some(i) => {
                    f.drop_partial(i + 1);
                    f.end_discard();
                }
                None => {
                    f.drop_partial(f.partial.len());
                    return Ok(());
                }
            }
        }
        let cut = if eof {
            Some(f.partial.len())
        } else {
            memchr::memrchr(b'\n', &f.partial).map(|i| i + 1)
        };
        let Some(cut) = cut.filter(|&c| c > 0) else {
            if f.partial.len() > self.config.reader.max_line_len {
                let text = format!(
                    "{}: line at byte {} is longer than the maximum of {} bytes",
                    f.name, f.pos, self.config.reader.max_line_len
                );
                if self.config.reader.on_error != OnError::Skip {
                    return Err(io_error(&f.name, io::Error::other(text)));
                }
                self.warn(format!("{text}; skipped (--on-error skip)"));
                f.drop_partial(f.partial.len());
            }
            return Ok(());
        };
        let rest = f.partial.split_off(cut);
        let mut lines = std::mem::replace(&mut f.partial, rest);
        // Lines already in the archive: only their header lines matter.
        if let Some(target) = f.target {
            let before = (target.offset.saturating_sub(f.pos) as usize).min(lines.len());
            f.capture_header(&lines[..before]);
            f.advance(&lines[..before]);
            lines.drain(..before);
            if f.pos >= target.offset {
                f.skip = target.skip;
                f.target = None;
            }
        }
        if lines.is_empty() {
            return Ok(());
        }
        let end = f.pos + lines.len() as u64;
        let batches = self.decode(f, &lines, end, eof)?;
        f.advance(&lines);
        self.send_all(batches).await
    }

    /// The end of a rotated or compressed file: its last line needs no newline; it is marked
    /// done, closed, and its identity released.
    async fn finish(&mut self, f: &mut Tracked) -> Result<bool, ReadError> {
        if let Some(target) = f.target {
            if f.text_read() < target.offset {
                self.warn(format!(
                    "{}: the file ends at byte {} of its text, before its checkpoint (byte {}); nothing of it is imported again",
                    f.name,
                    f.text_read(),
                    target.offset
                ));
                f.partial.clear();
                f.jump(target.offset);
                f.skip = target.skip;
                f.target = None;
            }
        }
        let mut batches = Vec::new();
        if f.discard == 0 && !f.partial.is_empty() {
            let lines = std::mem::take(&mut f.partial);
            let end = f.pos + lines.len() as u64;
            if f.target.is_none() {
                batches = self.decode(f, &lines, end, true)?;
            } else {
                f.capture_header(&lines);
            }
            f.advance(&lines);
        }
        f.end_discard();
        f.partial.clear();
        let done = f.checkpoint(
            Position {
                offset: f.pos,
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
                marks[last].end = done.clone();
                b.set_marks(marks);
            }
            None => batches.push(checkpoint_batch(done.clone())),
        }
        tracing::info!(file = %f.name, "finished reading a followed file");
        f.finished = true;
        if let Some(d) = f.decoder.take() {
            if let Ok(mut s) = self.shared.skips.lock() {
                s.merge(&d.skip_report());
            }
        }
        f.file = None;
        f.inflating = None;
        self.registry.release(&f.fp, done);
        if !f.rotated {
            self.idle.insert(f.key, f.seen);
        }
        self.send_all(batches).await?;
        Ok(true)
    }

    /// The decoder of a file whose text (its header lines, then complete lines) starts with
    /// `head`.
    fn decoder_for(&self, name: &str, head: &[u8]) -> Box<dyn BatchDecoder> {
        let format = match self.config.format {
            Format::Auto => match Format::detect_prefix(head) {
                f @ (Format::ZeekJson | Format::Suricata) => f,
                _ => Format::ZeekTsv,
            },
            f => f,
        };
        let mut options = self.config.reader.clone();
        options.source_name = name.to_string();
        (self.config.decoders)(format, options)
    }

    /// The decoder of `f`, made if it has none (after its file was closed: with the header
    /// lines seen before `f.pos` given to it again). `None` if it cannot be rebuilt.
    fn ensure_decoder(&self, f: &mut Tracked, lines: &[u8]) -> Result<(), ReadError> {
        if f.decoder.is_some() {
            return Ok(());
        }
        let header = f.header.clone().unwrap_or_default();
        let head = if header.is_empty() {
            lines
        } else {
            &header[..]
        };
        if head.iter().all(|b| b.is_ascii_whitespace()) {
            return Ok(());
        }
        let mut d = self.decoder_for(&f.name, head);
        if !header.is_empty() {
            let mut src = BytesMut::from(&header[..]);
            while let Some(b) = d.decode(&mut src)? {
                // Header lines make no rows; a row here would be a bug, never an event.
                debug_assert!(b.is_empty());
            }
        }
        f.decoder = Some(d);
        Ok(())
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
        self.ensure_decoder(f, lines)?;
        f.capture_header(lines);
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
                end: match i + 1 == count {
                    // After all of `lines`: the sum of the text through them.
                    true => f.checkpoint_summed(after, false, f.sum_after(lines)),
                    false => f.checkpoint(after, false),
                },
            }]);
            out.push(b);
        }
        Ok(out)
    }

    async fn send_all(&mut self, batches: Vec<Batch>) -> Result<(), ReadError> {
        for b in batches {
            let b = match &self.config.community_id {
                // A reader's bug only (see `ConnCommunityId::apply`).
                Some(cid) => cid.apply(b).map_err(std::io::Error::other)?,
                None => b,
            };
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

/// The offset after the last newline among the first `size` bytes of `file` (0 if none).
fn end_of_last_line(file: &File, size: u64) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 64 << 10];
    let mut end = size;
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        file.read_exact_at(chunk, start)?;
        if let Some(i) = memchr::memrchr(b'\n', chunk) {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// A log's name: its file name up to the first dot (`conn` for `conn.log`, `conn.log.1` and
/// `conn.08:00:00-09:00:00.log.gz`), as Zeek and rotation tools name logs.
fn log_name(file_name: &str) -> &str {
    file_name
        .split_once('.')
        .map_or(file_name, |(stem, _)| stem)
}

/// The pattern that matches `path` and the other files of its log name rotated like it:
/// `DIR/conn.*.log.gz` in the followed file's own directory (`same_dir`), else
/// `PARENT/*/conn.*.log.gz` (any sibling directory, as zeekctl's dated ones). The end kept is
/// from the name's last `.log` on (else its last extension); a name without a middle
/// (`conn.log.1`) gives `conn.log*`.
fn unseen_pattern(path: &Path, same_dir: bool) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = log_name(&name);
    let rest = &name[stem.len()..];
    let ext = match rest.rfind(".log") {
        Some(i) => &rest[i..],
        None => rest.rfind('.').map_or("", |i| &rest[i..]),
    };
    let file = if rest == ext {
        // No middle (`conn.log.1`): the first extension on, numbered or compressed alike.
        let first = rest[1.min(rest.len())..].split('.').next().unwrap_or("");
        format!("{stem}.{first}*")
    } else {
        format!("{stem}.*{ext}")
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    match (same_dir, dir.parent()) {
        (false, Some(parent)) => format!("{}/*/{file}", parent.display()),
        _ => format!("{}/{file}", dir.display()),
    }
}

/// Whether a plain file's bytes before `cp`'s position are those its checkpoint was taken
/// of: its sum, when it has one (see [`FileCheckpoint::sum`]), is that of the file now. A
/// file that ends before the position is not judged by it: a copy that copy-and-truncate
/// made before the last lines read reached the file ends there, and it is read on as before
/// (its lines before the position are in the archive; reading it from its start would
/// import them twice).
fn sum_holds(file: &File, cp: &FileCheckpoint) -> io::Result<bool> {
    let Some(want) = cp.sum.filter(|_| cp.pos.offset > 0) else {
        return Ok(true);
    };
    let mut sum = PrefixSum::new(std::sync::Arc::new(file.try_clone()?), 0, 0);
    Ok(sum.at(cp.pos.offset)?.is_none_or(|got| got == want))
}

/// A batch without rows that only moves `cp`'s file to its position.
fn checkpoint_batch(cp: FileCheckpoint) -> Batch {
    let mut b = BatchBuilder::new(Schema::new("weir.checkpoint", vec![]).into_shared()).finish();
    b.push_mark(Mark {
        row_start: 0,
        row_end: 0,
        start: None,
        end: cp,
    });
    b
}

/// Fills a slot of `files` while its file is being stepped.
fn placeholder() -> Tracked {
    Tracked {
        path: PathBuf::new(),
        name: String::new(),
        key: (0, 0),
        fp: (0, 0),
        hole: 0,
        file: None,
        inflating: None,
        pos: 0,
        skip: 0,
        target: None,
        discard: 0,
        partial: Vec::new(),
        nuls: 0,
        sum: None,
        discard_sum: crc32fast::Hasher::new(),
        target_sum: None,
        header: None,
        decoder: None,
        rotated: false,
        finished: true,
        active: Instant::now(),
        seen: Stat {
            size: 0,
            mtime: None,
        },
        wake: false,
        caught_up: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The running sum covers exactly the text before `pos`: a hole, lines, an over-long
    /// line dropped in pieces (summed once `pos` moves past it); a checkpoint elsewhere, or
    /// after a jump over bytes not read, has none.
    #[test]
    fn the_sum_moves_with_the_position() {
        let text = b"\0\0\0a\tb\n\0\0long-line-dropped\nc\td\n";
        let at = |n: usize| Some(crc32fast::hash(&text[..n]));
        let mut f = placeholder();
        f.sum = Tracked::start_sum(true, 2);
        f.pos = 2;
        f.partial = text[2..].to_vec();
        f.advance_partial(1);
        f.advance(&text[3..7]);
        f.partial.drain(..4);
        assert_eq!(f.sum_now(), at(7));
        f.advance_partial(2);
        f.drop_partial(5);
        f.drop_partial(13);
        assert_eq!((f.pos, f.sum_now(), f.discard), (9, at(9), 18));
        assert_eq!(f.partial, &text[27..]);
        f.end_discard();
        assert_eq!((f.pos, f.sum_now()), (27, at(27)));
        assert_eq!(f.sum_after(&text[27..]), at(text.len()));
        let pos = |offset| Position { offset, skip: 0 };
        assert_eq!(f.checkpoint(pos(27), false).sum, at(27));
        assert_eq!(f.checkpoint(pos(9), false).sum, None);
        f.target = Some(pos(31));
        f.target_sum = at(31);
        assert_eq!(f.checkpoint(pos(31), false).sum, at(31));
        f.jump(40);
        assert_eq!(f.checkpoint(pos(40), false).sum, None);
        assert_eq!(Tracked::start_sum(false, 2).map(|h| h.finalize()), None);
    }

    /// A Zeek log whose rows `range` have the count `n` of their number.
    fn log_text(range: std::ops::Range<u64>) -> String {
        let mut text =
            String::from("#separator \\x09\n#path\ttest\n#fields\tts\tn\n#types\ttime\tcount\n");
        for i in range {
            text.push_str(&format!("{}.5\t{i}\n", 1_600_000_000 + i));
        }
        text
    }

    /// A follower of `pattern` resuming from `checkpoints`, and the receiver of its batches.
    fn follower(
        pattern: &Path,
        checkpoints: Vec<FileCheckpoint>,
    ) -> (Follower, channel::Receiver<Result<Batch, ReadError>>) {
        let (tx, rx) = channel::channel(1 << 20);
        let spec = FollowSpec {
            patterns: vec![pattern.display().to_string()],
            resume: Arc::new(Mutex::new(checkpoints)),
            start: StartFrom::Checkpoints,
        };
        let config = SourceConfig::zeek(crate::codec::ReaderOptions::default(), 1 << 20);
        let shared = SourceShared {
            cancel: tokio_util::sync::CancellationToken::new(),
            counters: Arc::default(),
            metrics: Arc::new(crate::metrics::StageMetrics::new("test", "source")),
            skips: Arc::default(),
            warnings: Arc::default(),
            handle: None,
        };
        (Follower::new(spec, config, shared, tx), rx)
    }

    /// The checkpoint of plain file `path` (its identity, dev and inode) at `offset`.
    fn checkpoint_at(path: &Path, offset: u64) -> FileCheckpoint {
        let file = File::open(path).unwrap();
        let meta = file.metadata().unwrap();
        let head = read_head(&file, Compression::None).unwrap();
        let fp = head.fingerprint().unwrap();
        FileCheckpoint {
            id: crate::checkpoint::FileId {
                dev: meta.dev(),
                ino: meta.ino(),
                fp_len: fp.0,
                fp_crc: fp.1,
            },
            path: path.display().to_string(),
            pos: Position { offset, skip: 0 },
            done: false,
            raw: 0,
            header: String::new(),
            sum: None,
        }
    }

    /// Runs one scan and the steps after it, as `Follower::run` does, and returns the
    /// numbers of the rows sent.
    fn poll(f: &mut Follower, rx: &mut channel::Receiver<Result<Batch, ReadError>>) -> Vec<u64> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let seen = f.scan();
        f.track(seen).unwrap();
        rt.block_on(async {
            for i in 0..f.files.len() {
                while f.step(i).await.unwrap() {}
            }
        });
        f.files.retain(|t| !t.finished);
        let mut rows = Vec::new();
        while let Some(Some(batch)) = futures::FutureExt::now_or_never(rx.recv()) {
            for row in batch.unwrap().to_values().unwrap() {
                match row.get(1) {
                    Some(&crate::value::Value::Count(n)) => rows.push(n),
                    other => panic!("row without its number: {other:?}"),
                }
            }
        }
        rows
    }

    /// A file found at its checkpoint and renamed away (out of the patterns) before its
    /// first read is read on from the checkpoint to its end through the descriptor its
    /// identity was proven on: nothing again, nothing lost. (Opened again by path, it was
    /// the next file there; the rotated one was given up at byte 0, and its gzip copy read
    /// from its start: the lines before the checkpoint twice.)
    #[test]
    fn a_file_renamed_away_before_its_first_read_is_read_on_from_its_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        std::fs::write(&path, log_text(0..4)).unwrap();
        let done = std::fs::metadata(&path).unwrap().len();
        std::fs::write(&path, log_text(0..10)).unwrap();
        let (mut f, mut rx) = follower(&dir.path().join("*.log"), vec![checkpoint_at(&path, done)]);
        let seen = f.scan();
        f.track(seen).unwrap();
        assert_eq!(f.files.len(), 1);
        std::fs::rename(&path, dir.path().join("a.log.1")).unwrap();
        std::fs::write(&path, log_text(100..102)).unwrap();
        let rows = poll(&mut f, &mut rx);
        assert_eq!(rows, [4, 5, 6, 7, 8, 9, 100, 101]);
        assert!(f.shared.warnings.lock().unwrap().is_empty());
    }

    /// A file closed for the descriptor budget before its first read, then rotated away,
    /// is given up where reading would go on: at its checkpoint, not at byte 0, so that a
    /// copy of it is read on from there.
    #[test]
    fn a_closed_file_rotated_away_is_given_up_at_its_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.log"), dir.path().join("b.log"));
        std::fs::write(&a, log_text(0..4)).unwrap();
        let done = std::fs::metadata(&a).unwrap().len();
        std::fs::write(&a, log_text(0..10)).unwrap();
        std::fs::write(&b, log_text(50..52)).unwrap();
        let cp = checkpoint_at(&a, done);
        let fp = (cp.id.fp_len, cp.id.fp_crc);
        let (mut f, mut rx) = follower(&dir.path().join("*.log"), vec![cp]);
        f.max_open = 1;
        let seen = f.scan();
        f.track(seen).unwrap();
        let closed: Vec<&str> = f
            .files
            .iter()
            .filter(|t| t.file.is_none())
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(closed, [a.display().to_string()]);
        std::fs::rename(&a, dir.path().join("a.log.1")).unwrap();
        let rows = poll(&mut f, &mut rx);
        assert_eq!(rows, [50, 51]);
        let known = f.registry.get(&fp).unwrap();
        assert_eq!((known.cp.pos.offset, known.claimed), (done, false));
        let warnings = f.shared.warnings.lock().unwrap().clone();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains(&format!("after byte {done} ")),
            "{warnings:?}"
        );
        // Its copy under a matching name is read on from the checkpoint.
        std::fs::rename(dir.path().join("a.log.1"), dir.path().join("a2.log")).unwrap();
        assert_eq!(poll(&mut f, &mut rx), [4, 5, 6, 7, 8, 9]);
    }

    /// The pattern suggested for files never seen: the log name, any middle, the end from
    /// `.log` on; in a sibling directory, any sibling.
    #[test]
    fn patterns_for_unseen_files() {
        let p = |path: &str, same: bool| unseen_pattern(Path::new(path), same);
        assert_eq!(
            p("/z/logs/2009-11-18/conn.08:00:00-09:00:00.log.gz", false),
            "/z/logs/*/conn.*.log.gz"
        );
        assert_eq!(
            p("/z/logs/current/conn.2009-11-18-08-00-00.log", true),
            "/z/logs/current/conn.*.log"
        );
        assert_eq!(
            p("/z/logs/current/conn.log.1", true),
            "/z/logs/current/conn.log*"
        );
        assert_eq!(
            p("/z/logs/current/conn.log", true),
            "/z/logs/current/conn.log*"
        );
        assert_eq!(log_name("conn.08:00:00-09:00:00.log.gz"), "conn");
        assert_eq!(log_name("conn"), "conn");
    }
}
