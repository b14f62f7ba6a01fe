//! The file-system layer: the few ways the storage engine touches files, in one place, below
//! segments, the write-ahead log and the store (which all build on it and nothing else).
//!
//! # Guarantees
//!
//! - **Atomic write** ([`write_atomic`], [`copy_range_atomic`], and [`commit_file`] at the end
//!   of both): a file `dir/name` is written under a temporary name `.name…tmp` in the same
//!   directory, fsynced, renamed over `name`, and the directory is fsynced. A reader of
//!   `dir/name` therefore sees either the previous file or the complete new one, never a mix
//!   or a prefix, also after a crash at any point; after the call returns (with `sync`), the new
//!   file survives an OS crash or power loss. A crash before the rename leaves the temporary,
//!   which the next writer removes (temporaries start with `.` and end with `.tmp`). Without
//!   `sync` nothing is fsynced: the rename is still atomic for concurrent readers and across a
//!   process crash, but not across a power loss.
//! - **Directory durability** ([`sync_dir`]): after it returns, renames and creations in the
//!   directory are durable.
//! - **Background write-back** ([`Writeback`]): promises nothing about durability; it only
//!   starts an `fdatasync` on a background thread every [`WRITEBACK_BYTES`], so that a later
//!   fsync that is waited for finds little left to write. Its errors are never lost: the next
//!   [`Writeback::finish`] reports them.
//! - **Positioned I/O** ([`read_exact_at`], [`write_all_at`]): whole buffers at an offset, with
//!   a seek-based fallback off Unix.
//! - **Memory maps** ([`map_readonly`]): the crate's only hand-written `unsafe` code,
//!   read-only maps of files that are never written again (see the `SAFETY` comment there).
//!
//! Every failure is an [`FsError`] naming the operation and the path.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

/// An I/O operation on a file or directory failed: what was done, on which path, and why.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {}: {source}", path.display())]
pub struct FsError {
    action: String,
    path: PathBuf,
    #[source]
    source: io::Error,
}

impl FsError {
    /// An I/O error while doing `action` (`open`, `write`, `rename to …`) on `path`.
    pub fn new(action: impl Into<String>, path: impl Into<PathBuf>, source: io::Error) -> FsError {
        FsError {
            action: action.into(),
            path: path.into(),
            source,
        }
    }

    /// What was being done (`open`, `write`, `rename to …`).
    pub fn action(&self) -> &str {
        &self.action
    }

    /// The file or directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The kind of the underlying I/O error.
    pub fn kind(&self) -> io::ErrorKind {
        self.source.kind()
    }
}

/// Shorthand for results of the file-system layer.
pub type Result<T, E = FsError> = std::result::Result<T, E>;

/// Opens the file at `path` for reading and returns it with its length. Only a regular file
/// is accepted: it is opened with `O_NONBLOCK` (which regular files ignore), so that a FIFO
/// or device in its place cannot block the open, and then refused by its `fstat`.
pub fn open_with_len(path: &Path) -> Result<(File, u64)> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = File::options()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(|e| FsError::new("open", path, e))?;
    let meta = file.metadata().map_err(|e| FsError::new("stat", path, e))?;
    let t = meta.file_type();
    if !t.is_file() {
        let what = if t.is_fifo() {
            "a FIFO"
        } else if t.is_dir() {
            "a directory"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_block_device() || t.is_char_device() {
            "a device"
        } else {
            "a special file"
        };
        let e = io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what}, not a regular file"),
        );
        return Err(FsError::new("open", path, e));
    }
    Ok((file, meta.len()))
}

/// Writes `bytes` to `dir/name` atomically: a temporary file `.name.tmp` is written, then
/// committed with [`commit_file`] (fsyncs only when `sync`). Returns the final path.
///
/// On failure the temporary is removed (it is a private copy nothing points into; on a full
/// disk that frees its space).
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8], sync: bool) -> Result<PathBuf> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = File::create(&tmp).map_err(|e| FsError::new("create", &tmp, e))?;
    let r = fault::hit(fault::Op::Write)
        .and_then(|()| f.write_all(bytes))
        .map_err(|e| FsError::new("write", &tmp, e))
        .and_then(|()| commit_file(&f, &tmp, dir, name, sync));
    remove_temporary_on_error(r, &tmp)
}

/// [`write_atomic`] of what `write` writes, through a buffer: the content is never held
/// whole in memory (an indicator set of a million indicators is 140 MB of JSON).
pub fn write_atomic_with(
    dir: &Path,
    name: &str,
    sync: bool,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<PathBuf> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let f = File::create(&tmp).map_err(|e| FsError::new("create", &tmp, e))?;
    let mut w = io::BufWriter::new(f);
    let r = fault::hit(fault::Op::Write)
        .and_then(|()| write(&mut w))
        .and_then(|()| w.flush())
        .map_err(|e| FsError::new("write", &tmp, e))
        .and_then(|()| commit_file(w.get_ref(), &tmp, dir, name, sync));
    remove_temporary_on_error(r, &tmp)
}

/// Removes `tmp` if `r` failed (after a failed rename it is still there; after a failed
/// directory fsync it is gone and this does nothing).
fn remove_temporary_on_error<T>(r: Result<T>, tmp: &Path) -> Result<T> {
    if r.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    r
}

/// Copies bytes `range` of `file` (at `path`) to a new file `dir/name`, atomically: through a
/// temporary `.name.copy.tmp` committed with [`commit_file`] (fsyncs only when `sync`).
/// On failure that temporary is removed (never `file` itself).
pub fn copy_range_atomic(
    file: &File,
    path: &Path,
    range: std::ops::Range<u64>,
    dir: &Path,
    name: &str,
    sync: bool,
) -> Result<PathBuf> {
    let tmp = dir.join(format!(".{name}.copy.tmp"));
    let r = copy_range_to(file, path, range, &tmp)
        .and_then(|out| commit_file(&out, &tmp, dir, name, sync));
    remove_temporary_on_error(r, &tmp)
}

/// The copy of [`copy_range_atomic`]: bytes `range` of `file` to a new file `tmp`.
fn copy_range_to(
    file: &File,
    path: &Path,
    range: std::ops::Range<u64>,
    tmp: &Path,
) -> Result<File> {
    let mut out = File::create(tmp).map_err(|e| FsError::new("create", tmp, e))?;
    let mut src = file;
    src.seek(SeekFrom::Start(range.start))
        .map_err(|e| FsError::new("seek", path, e))?;
    let len = range.end.saturating_sub(range.start);
    let copied = fault::hit(fault::Op::Write)
        .and_then(|()| io::copy(&mut src.take(len), &mut out))
        .map_err(|e| FsError::new("copy to", tmp, e))?;
    if copied != len {
        return Err(FsError::new(
            "copy",
            path,
            io::Error::new(io::ErrorKind::UnexpectedEof, "segment file is short"),
        ));
    }
    Ok(out)
}

/// The end of every atomic write: fsyncs the written temporary `file` at `tmp`, renames it to
/// `dir/name` and fsyncs the directory (fsyncs only when `sync`). Returns the final path.
///
/// `tmp` must be in `dir` (a rename is atomic only within one file system).
pub fn commit_file(file: &File, tmp: &Path, dir: &Path, name: &str, sync: bool) -> Result<PathBuf> {
    fault::check("commit", tmp)?;
    if sync {
        fault::hit(fault::Op::Sync)
            .and_then(|()| file.sync_all())
            .map_err(|e| FsError::new("fsync", tmp, e))?;
    }
    let path = dir.join(name);
    fault::hit(fault::Op::Rename)
        .and_then(|()| std::fs::rename(tmp, &path))
        .map_err(|e| FsError::new(format!("rename to {}", path.display()), tmp, e))?;
    if sync {
        sync_dir(dir)?;
    }
    Ok(path)
}

/// Fault injection for tests: makes a storage operation fail as on a full disk or a failing
/// device, without needing one.
///
/// Two knobs, both per thread (a [`crate::store::Store`] writes, syncs, renames and seals on
/// the thread that appends, so tests running in parallel do not see each other's faults):
///
/// - `fail_commit_after`: the Nth `commit_file` (the end of every atomic write and of every
///   segment seal) fails before anything is fsynced or renamed.
/// - `fail_op`: the Nth storage operation of a kind (`Op`), or of any kind, fails before it
///   is done. The operations are the writes of segment files, the write-ahead log, atomic
///   writes and the lock file; every waited-for `fsync`/`fdatasync` (of files and
///   directories); renames; and the size changes of files: the active segment's sparse
///   allocation, cutting a torn WAL tail, and `fallocate(FALLOC_FL_COLLAPSE_RANGE)` (an
///   injected collapse failure makes the seal copy the segment out instead, as on a file
///   system without it). The background write-back's `fdatasync` runs on another thread and
///   is not counted; its errors reach the store through the next waited-for sync anyway.
///
/// An injected failure has no effect on the file: the write, sync or rename did not happen,
/// and the error ([`io::ErrorKind::StorageFull`] for writes and allocations, a plain I/O
/// error for syncs and renames) says "injected fault". `ops` counts the operations seen
/// since the last arming or `reset`, so a test can walk N over all of them. Not part of the
/// API.
#[doc(hidden)]
pub mod fault {
    use std::cell::Cell;
    use std::io;
    use std::path::Path;

    /// A kind of storage operation that [`fail_op`] can make fail.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Op {
        /// A write of file contents.
        Write,
        /// A waited-for `fsync` or `fdatasync` of a file or directory.
        Sync,
        /// A rename.
        Rename,
        /// A change of a file's size or extents: `set_len`, `fallocate` collapse.
        Allocate,
    }

    impl Op {
        /// Every kind, in the order of [`ops_by_kind`].
        pub const ALL: [Op; 4] = [Op::Write, Op::Sync, Op::Rename, Op::Allocate];

        fn index(self) -> usize {
            self as usize
        }
    }

    #[derive(Clone, Copy)]
    struct Armed {
        /// The kind counted, or `None` for operations of any kind.
        kind: Option<Op>,
        /// Matching operations to let pass before one fails.
        skip: u64,
    }

    thread_local! {
        /// Commits to let pass before one fails; `None`: no fault armed.
        static COMMITS_BEFORE_FAILURE: Cell<Option<u32>> = const { Cell::new(None) };
        static ARMED: Cell<Option<Armed>> = const { Cell::new(None) };
        /// Operations seen per kind since the last arming or reset.
        static SEEN: Cell<[u64; 4]> = const { Cell::new([0; 4]) };
        /// The kind of the injected failure, once it happened.
        static FIRED: Cell<Option<Op>> = const { Cell::new(None) };
    }

    /// Arms a fault: after `skip` more commits on this thread succeed, the next one fails (once)
    /// with [`io::ErrorKind::StorageFull`], before anything is fsynced or renamed.
    pub fn fail_commit_after(skip: u32) {
        COMMITS_BEFORE_FAILURE.with(|c| c.set(Some(skip)));
    }

    /// Arms a fault: operation number `n` (from 0) of kind `kind` (`None`: of any kind) on this
    /// thread fails, once. Resets the counts of [`ops`] and [`fired`].
    pub fn fail_op(n: u64, kind: Option<Op>) {
        reset();
        ARMED.with(|a| a.set(Some(Armed { kind, skip: n })));
    }

    /// Disarms the faults of this thread.
    pub fn disarm() {
        COMMITS_BEFORE_FAILURE.with(|c| c.set(None));
        ARMED.with(|a| a.set(None));
    }

    /// Zeroes the operation counts and forgets a fired fault (without arming anything).
    pub fn reset() {
        SEEN.with(|s| s.set([0; 4]));
        FIRED.with(|f| f.set(None));
    }

    /// Operations of any kind seen on this thread since the last [`fail_op`] or [`reset`]
    /// (the failed one included).
    pub fn ops() -> u64 {
        SEEN.with(|s| s.get().iter().sum())
    }

    /// Operations per kind, in the order of [`Op::ALL`], as [`ops`] counts them.
    pub fn ops_by_kind() -> [u64; 4] {
        SEEN.with(|s| s.get())
    }

    /// The kind of the operation that failed, if the fault armed by [`fail_op`] fired.
    pub fn fired() -> Option<Op> {
        FIRED.with(|f| f.get())
    }

    /// Called before every storage operation: counts it, and fails if the armed fault is due.
    pub fn hit(op: Op) -> io::Result<()> {
        SEEN.with(|s| {
            let mut seen = s.get();
            seen[op.index()] += 1;
            s.set(seen);
        });
        let due = ARMED.with(|a| match a.get() {
            Some(armed) if armed.kind.is_none_or(|k| k == op) => {
                if armed.skip == 0 {
                    a.set(None);
                    true
                } else {
                    a.set(Some(Armed {
                        skip: armed.skip - 1,
                        ..armed
                    }));
                    false
                }
            }
            _ => false,
        });
        if !due {
            return Ok(());
        }
        FIRED.with(|f| f.set(Some(op)));
        Err(match op {
            Op::Write | Op::Allocate => io::Error::new(
                io::ErrorKind::StorageFull,
                "no space left on device (injected fault)",
            ),
            Op::Sync | Op::Rename => io::Error::other("input/output error (injected fault)"),
        })
    }

    /// Called by the commit: fails if the armed commit fault is due.
    pub(super) fn check(action: &str, path: &Path) -> super::Result<()> {
        let due = COMMITS_BEFORE_FAILURE.with(|c| match c.get() {
            Some(0) => {
                c.set(None);
                true
            }
            Some(n) => {
                c.set(Some(n - 1));
                false
            }
            None => false,
        });
        if due {
            return Err(super::FsError::new(
                action,
                path,
                io::Error::new(
                    io::ErrorKind::StorageFull,
                    "no space left on device (injected fault)",
                ),
            ));
        }
        Ok(())
    }
}

/// Creates `dir` and its missing parents below `root` (`root` too, but not its parents),
/// fsyncing each parent after a creation: the output directories of the `parquet` and
/// `directory` sinks.
pub fn create_dirs(root: &Path, dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut cur = dir;
    while !cur.is_dir() {
        missing.push(cur.to_path_buf());
        match cur.parent() {
            Some(p) if cur != root => cur = p,
            _ => break,
        }
    }
    for d in missing.iter().rev() {
        match std::fs::create_dir(d) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(FsError::new("create directory", d, e)),
        }
        if let Some(p) = d.parent().filter(|p| !p.as_os_str().is_empty()) {
            sync_dir(p)?;
        }
    }
    Ok(())
}

/// The default umask of the files weir creates in an archive: only their owner may read
/// them, since the segments, the write-ahead log and the catalog hold the events (and
/// `serve.token` lies beside them). `--umask` ([`manage_umask`]) shares them, e.g. `027`
/// gives the directory 0750 and the files 0640.
pub const DEFAULT_UMASK: u32 = 0o077;

/// Whether this process manages its umask ([`manage_umask`], by the command line), and the
/// one chosen with `--umask`, if one was.
static MANAGED_UMASK: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();

/// Makes this process manage its umask (the `weir` command does, before anything is
/// created; a library user's process keeps its own): with `chosen` (`--umask`; the owner's
/// bits are kept, so that weir can read what it writes), the process's umask is set to it
/// now and kept; without, each writer sets it from its archive directory
/// (`use_archive_umask` in `crate::fs`). The first call stands.
pub fn manage_umask(chosen: Option<u32>) {
    let chosen = *MANAGED_UMASK.get_or_init(|| chosen.map(|m| m & 0o077));
    if let Some(mask) = chosen {
        set_umask(mask);
    }
}

/// The umask `--umask` chose, if the process manages its umask and one was chosen.
fn chosen_umask() -> Option<u32> {
    MANAGED_UMASK.get().copied().flatten()
}

/// In a process that manages its umask ([`manage_umask`]), sets it for the files a writer
/// creates in the archive `dir` (segments, index files, `catalog.json`, the write-ahead log,
/// `staging/`, `damaged/`, `readers/`): the one chosen with `--umask`; else the archive
/// directory's own mode decides (a directory of mode 0750 gives files 0640, one of 0700
/// files 0600, so `chmod 750 DIR` shares an archive with a group); else, for a directory
/// not made yet, [`DEFAULT_UMASK`]. Changes nothing in other processes (tests, library
/// users: the umask is the process's).
pub fn use_archive_umask(dir: &Path) {
    if MANAGED_UMASK.get().is_none() {
        return;
    }
    let mask = chosen_umask()
        .or_else(|| dir_umask(dir))
        .unwrap_or(DEFAULT_UMASK);
    set_umask(mask);
}

/// The umask that gives files the permissions of the existing directory `dir` (its group
/// and others bits), if it exists.
fn dir_umask(dir: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir).ok()?.permissions().mode();
        Some(!mode & 0o077)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

/// Sets the process's umask (on Unix; nothing elsewhere).
fn set_umask(mask: u32) {
    #[cfg(unix)]
    rustix::process::umask(rustix::fs::Mode::from_bits_truncate(mask as _));
    #[cfg(not(unix))]
    let _ = mask;
}

/// The mode of an archive directory that weir creates: only its owner may enter it (0700,
/// by [`DEFAULT_UMASK`]), or as the umask chosen with `--umask` allows.
fn new_dir_mode() -> u32 {
    0o777 & !chosen_umask().unwrap_or(DEFAULT_UMASK)
}

/// Creates `dir` with [`new_dir_mode`] when it does not exist (its missing parents as
/// `create_dir_all` makes them); an existing directory is left as it is (its mode then
/// decides that of the files inside, see [`use_archive_umask`]).
pub fn create_private_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| FsError::new("create directory", parent, e))?;
    }
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, new_dir_mode());
    match builder.create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(FsError::new("create directory", dir, e)),
    }
}

/// Fsyncs a directory so that renames and creations in it are durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    fault::hit(fault::Op::Sync)
        .and_then(|()| File::open(dir))
        .and_then(|d| d.sync_all())
        .map_err(|e| FsError::new("fsync directory", dir, e))
}

/// Fills `buf` from `file` at `offset`.
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(buf, offset)
    }
    #[cfg(not(unix))]
    {
        let mut f = file;
        f.seek(SeekFrom::Start(offset))?;
        f.read_exact(buf)
    }
}

/// Writes all of `bytes` to `file` at `offset`.
pub fn write_all_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    fault::hit(fault::Op::Write)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.write_all_at(bytes, offset)
    }
    #[cfg(not(unix))]
    {
        let mut f = file;
        f.seek(SeekFrom::Start(offset))?;
        f.write_all(bytes)
    }
}

/// The block size of the file system holding `file` (4096 when unknown or implausible).
pub fn block_size(file: &File) -> usize {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Ok(m) = file.metadata() {
            let b = m.blksize() as usize;
            if b.is_power_of_two() && (512..=1 << 16).contains(&b) {
                return b;
            }
        }
    }
    let _ = file;
    4096
}

/// Removes the first `len` bytes of `file` (a multiple of its block size) by moving extents
/// (`fallocate(FALLOC_FL_COLLAPSE_RANGE)`: ext4, XFS). Returns false where the file system
/// does not support that; the file is then unchanged.
pub fn collapse_front(file: &File, len: usize) -> bool {
    if fault::hit(fault::Op::Allocate).is_err() {
        return false;
    }
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{fallocate, FallocateFlags};
        fallocate(file, FallocateFlags::COLLAPSE_RANGE, 0, len as u64).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, len);
        false
    }
}

/// Maps `file` (at `path`) into memory, read-only; with `whole`, every page at once (for a
/// file read from end to end right away, such as a segment's index: one call maps them all
/// instead of a page fault per run of pages).
///
/// The caller promises what makes this sound: nobody writes or truncates the file while the
/// map lives. The storage engine maps only sealed segment files and their index files, which
/// it never opens for writing again.
#[expect(
    unsafe_code,
    reason = "memory-mapping a file is unsafe in Rust; weir maps only immutable segment files"
)]
pub fn map_readonly(file: &File, path: &Path, whole: bool) -> Result<Mmap> {
    let mut options = memmap2::MmapOptions::new();
    if whole {
        options.populate();
    }
    // SAFETY: segment files (and their index files, `segment/index.rs`) are immutable once
    // written: weir writes them under a temporary name, renames them into place and never
    // opens them for writing again (the store only
    // deletes orphaned segments that are not in the catalog, at writer start-up, and unlinking
    // a file keeps existing maps valid). The map is read-only, and every read goes through
    // bounds-checked slices after verification, so a file changed behind weir's back by
    // another program can at worst yield wrong bytes or SIGBUS, which is outside what Rust can
    // guard against for any mmap.
    unsafe { options.map(file) }.map_err(|e| FsError::new("memory-map", path, e))
}

/// After this many bytes written since the last one, `Writeback` starts an `fdatasync` of
/// the file on a background thread (used for the write-ahead log and the segment file being
/// written). It promises nothing (acknowledgement never waits for it) but keeps the dirty data
/// small, so that the fsync at a flush, seal or close, which does wait, finds little left to
/// write: a long import no longer pays for all of its log at the end.
pub const WRITEBACK_BYTES: u64 = 32 << 20;

/// Background write-back of a file being appended to: one background `fdatasync` at a time
/// every [`WRITEBACK_BYTES`]; its error is kept for the next [`Writeback::finish`], so a failed
/// write-back is never lost (a second fsync may not report it again).
#[derive(Debug, Default)]
pub struct Writeback {
    /// Drop the file's pages from the page cache once they are written back (for the WAL,
    /// which is read only after a crash): the kernel frees them on the background thread as
    /// the import runs, instead of all at once when the log is replaced at a seal.
    drop_cache: bool,
    since: u64,
    running: Option<std::thread::JoinHandle<io::Result<()>>>,
    error: Option<io::Error>,
}

impl Writeback {
    /// A writeback that also drops the written-back pages from the page cache.
    pub fn dropping_cache() -> Writeback {
        Writeback {
            drop_cache: true,
            ..Writeback::default()
        }
    }

    /// Whether a background sync is running.
    #[cfg(test)]
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Collects a finished (or, with `wait`, the running) background sync's outcome.
    fn reap(&mut self, wait: bool) {
        if let Some(h) = self.running.take() {
            if !wait && !h.is_finished() {
                self.running = Some(h);
                return;
            }
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => self.error = self.error.take().or(Some(e)),
                Err(_) => {
                    self.error = self
                        .error
                        .take()
                        .or(Some(io::Error::other("background fsync thread panicked")))
                }
            }
        }
    }

    /// Waits for the running background sync and returns the first error any of them met.
    pub fn finish(&mut self) -> io::Result<()> {
        self.reap(true);
        self.error.take().map_or(Ok(()), Err)
    }

    /// Counts `bytes` written to `file` and starts a background sync when due and none is
    /// running.
    pub fn appended(&mut self, bytes: u64, file: &File) {
        self.since += bytes;
        self.reap(false);
        if self.since < WRITEBACK_BYTES || self.running.is_some() {
            return;
        }
        if let Ok(f) = file.try_clone() {
            let drop_cache = self.drop_cache;
            let spawned = std::thread::Builder::new()
                .name("weir-writeback".into())
                .spawn(move || {
                    f.sync_data()?;
                    if drop_cache {
                        drop_clean_pages(&f);
                    }
                    Ok(())
                });
            if let Ok(h) = spawned {
                self.running = Some(h);
                self.since = 0;
            }
        }
    }
}

/// Asks the kernel to drop the clean cached pages of `file` (advice only: errors are ignored).
fn drop_clean_pages(file: &File) {
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::DontNeed);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    #[test]
    fn collapse_front_moves_whole_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let block = block_size(&f);
        let mut bytes = vec![0u8; 3 * block];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i / 97) as u8;
        }
        write_all_at(&f, &bytes, 0).unwrap();
        let mut back = vec![0u8; block];
        read_exact_at(&f, &mut back, block as u64).unwrap();
        assert_eq!(back, &bytes[block..2 * block]);
        if !collapse_front(&f, block) {
            eprintln!("note: this file system cannot collapse ranges; the copy path is used");
            return;
        }
        assert_eq!(std::fs::read(&path).unwrap(), &bytes[block..]);
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_atomic(dir.path(), "x", b"one", true).unwrap();
        assert_eq!(p, dir.path().join("x"));
        write_atomic(dir.path(), "x", b"two", false).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let err = write_atomic(&dir.path().join("missing"), "x", b"", true).unwrap_err();
        assert_eq!(err.action(), "create");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().starts_with("cannot create "), "{err}");
    }
}
