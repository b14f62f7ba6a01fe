//! The store: a database directory of sealed segments, a catalog, a write-ahead log and a lock.
//!
//! # Layout
//!
//! ```text
//! DIR/
//!   LOCK               the writer lock (below)
//!   catalog.json       sealed segments and their ID intervals (see [`catalog`])
//!   wal                write-ahead log of the active segment (see [`crate::wal`])
//!   segments/<uuid>.seg  sealed segments, one FlatBuffer each (see [`crate::segment`])
//!   segments/<uuid>.idx  each segment's index (its metadata, so readers need not verify the
//!                      segment to open it); written after the segment, removed before it, and
//!                      never needed: without it readers verify the segment (`crate::segment`)
//!   damaged/           files `weir verify --repair` moved aside (see [`repair`]); never read
//!   readers/<generation>  readers' lock files (see [`readers`]): what keeps erased segments
//!                      on disk while a reader of an older catalog runs
//!   staging/           new segments of an erase or compaction before they join `segments/`
//!                      (see `rewrite.rs`); emptied by the next writer
//!   .*.tmp, segments/.*.tmp  temporaries of atomic writes, and the active segment's file
//!                      while it is being written (sparse; see [`crate::segment`]'s writer),
//!                      removed by the next writer when the WAL does not point into them. An
//!                      active segment's file that holds rows while the WAL is missing is
//!                      never removed: the writer refuses to open
//!                      ([`StoreError::OrphanedActiveSegment`]) and `weir verify --repair`
//!                      deals with it (`wal_repair.rs`); a writer that fails to open removes
//!                      the active segment file it made while replaying
//! ```
//!
//! # Changing what the archive holds
//!
//! Besides appending, a writer erases events ([`Store::erase`], `weir erase`: `erase.rs`),
//! merges small segments ([`Store::compact`], `weir compact`, and in the background:
//! `compact.rs`) and applies retention by disk budget and age ([`Maintenance`]:
//! `retention.rs`). All three go through one transaction (`rewrite.rs`): new segments are
//! staged, announced in the catalog under `pending_deletion`, moved in, and the catalog is
//! committed with the dropped segments removed, their IDs added to `erased` and the dropped
//! files listed for deletion; files are deleted only once no reader may map them. The
//! catalog's new fields are documented in [`catalog`].
//!
//! # Invariants
//!
//! - Event IDs are one dense, monotonic u64 space assigned in arrival order by
//!   [`Store::append`]; they never wrap: a batch whose IDs would pass `u64::MAX` is refused
//!   ([`StoreError::IdOverflow`]) before anything is written, and the WAL and segment readers
//!   treat an ID range that overflows as damage. Every ID below the catalog's `next_id` is in exactly one sealed segment;
//!   the WAL holds the following IDs, contiguously.
//! - Each batch's rows are written once, into the active segment's temporary file, and its WAL
//!   record points at them (see [`crate::wal`]).
//! - Sealing the active segment is, in this order: complete the segment (its temporary file,
//!   written as batches arrive: front, fsync, rename, fsync directory); write the catalog
//!   naming it (the same way); replace the WAL by an empty one starting at the new `next_id`
//!   (the same way). A crash after step 1 leaves an unlisted segment that the WAL still points
//!   into: the next writer replays its events from it and removes it at its first seal; a
//!   crash after step 2 leaves WAL records below `next_id`, which replay skips without reading
//!   their rows. So every acknowledged batch is present exactly once after the next open.
//! - A segment file is deleted only when the WAL proves it redundant: the WAL points into it
//!   and a seal has since replaced the WAL (above), or its events all lie in the IDs the WAL's
//!   records hold (an interrupted seal while replaying). Any other segment the catalog does
//!   not list (a lost catalog or catalog entry) is kept: the writer warns about it, or, if it
//!   holds IDs at or past the catalog's `next_id` (which the writer would assign again),
//!   refuses to open ([`StoreError::Unlisted`]); readers warn about it and `weir verify`
//!   reports it as a problem. `weir verify --repair` puts it back into the catalog. A file the
//!   catalog lists under `pending_deletion` (erased, replaced by compaction, or the output of
//!   a change that did not commit) is not unlisted: nothing reads, reports or re-adds it, and
//!   the writer deletes it once no reader of an older generation is registered.
//! - IDs are never reused: erasing leaves `next_id` where it is and records the erased IDs in
//!   the catalog, so "every ID below `next_id` is in exactly one sealed segment" reads "... or
//!   erased". Surviving events keep their IDs.
//! - A seal that fails (a full disk, an I/O error) deletes nothing the WAL points into: the
//!   active segment's temporary file stays (see [`crate::segment::SegmentBuilder::write_to`]),
//!   the writer refuses further work ([`StoreError::Poisoned`]), and the next writer replays
//!   the WAL from that file once there is space again. Only the private temporaries of atomic
//!   writes and copies (`.<name>.tmp`, `.<name>.copy.tmp`) are removed on failure.
//! - `LOCK` is held with an exclusive advisory lock ([`std::fs::File::try_lock`], flock) by
//!   the one writer and contains its pid in decimal and a newline, for the error message of a
//!   second writer. A holder that keeps it for one bounded job (a retro match that `weir
//!   serve` runs while nothing else writes, [`crate::detect::IdleRetro`]) writes a second line,
//!   `brief`: a writer that finds the lock held by one waits for it (up to [`BRIEF_LOCK_WAIT`])
//!   instead of failing. The lock dies with the process, so a `kill -9` never leaves a stale
//!   lock. Readers take no
//!   lock: they read the catalog (replaced atomically), immutable segments and the WAL prefix
//!   present when they open it.

mod archive;
pub mod catalog;
mod compact;
mod config;
mod damaged;
mod erase;
mod error;
mod hook;
mod id_ranges;
mod orphan;
pub mod readers;
mod repair;
mod repair_report;
mod retention;
mod rewrite;
mod scan_segment;
mod sink;
mod wal_repair;

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The permissions of archive files (`crate::fs` owns them; `--umask` chooses).
pub use crate::fs::{manage_umask, DEFAULT_UMASK};
pub use archive::{
    Archive, ArchiveInfo, BatchRef, Problem, Scan, UnlistedSegments, VerifyReport, WalInfo,
    DEFAULT_SEGMENT_CACHE,
};
pub use catalog::{Catalog, CatalogEntry, PendingDeletion};
pub use compact::{CompactReport, COMPACT_SMALL_PERCENT};
pub use config::ArchiveSinkConfig;
pub use damaged::DAMAGED_DIR;
pub use erase::{EraseReport, EventSelector, IdSelector};
pub use error::{Result, StoreError};
pub use hook::CommitHook;
pub use repair::repair;
pub use repair_report::RepairReport;
pub(crate) use retention::retention_cutoff;
pub use retention::{Maintenance, LOW_MARK_PERCENT, MIN_BUDGET_SEGMENTS};
pub use rewrite::STAGING_DIR;
pub use sink::{ArchiveSink, HOOK_TICK};

/// Fault injection for tests (see `fs::fault`); not part of the API.
#[doc(hidden)]
pub use crate::fs::fault;
pub use crate::fs::FsError;
pub use crate::wal::{SyncPolicy, WalError};

use crate::batch::Batch;
use crate::checkpoint::{Checkpoints, FileCheckpoint, Mark};
use crate::segment::{Compression, PreparedBatch, SegmentBuilder, DEFAULT_MAX_SEGMENT_SIZE};
use crate::wal::{Entry, Wal, WalReader};

pub use crate::segment::SEGMENTS_DIR;
/// Name of the WAL file inside the database directory.
pub const WAL_FILE: &str = "wal";
/// Name of the lock file inside the database directory.
pub const LOCK_FILE: &str = "LOCK";

/// Settings of a writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// Maximum size of a segment file in bytes (default 1 GiB; at most
    /// [`crate::segment::MAX_SEGMENT_SIZE_LIMIT`]).
    pub max_segment_size: u64,
    /// When to fsync (default [`SyncPolicy::Batch`]).
    pub sync: SyncPolicy,
    /// How new batches are compressed (default zstd at its default level; see
    /// [`crate::segment::Codec`]).
    pub compression: Compression,
    /// Whether new batches get sketches for query pruning (default: yes).
    pub sketches: bool,
}

impl Default for StoreOptions {
    fn default() -> StoreOptions {
        StoreOptions {
            max_segment_size: DEFAULT_MAX_SEGMENT_SIZE,
            sync: SyncPolicy::default(),
            compression: Compression::default(),
            sketches: true,
        }
    }
}

/// What opening a writer found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// Warnings for the user (a torn WAL tail was discarded, orphans were removed).
    pub warnings: Vec<String>,
    /// Batches replayed from the WAL into the active segment.
    pub replayed_batches: u64,
    /// Events replayed from the WAL.
    pub replayed_events: u64,
    /// WAL records skipped because a sealed segment already held them.
    pub skipped_batches: u64,
    /// The ID of the next event appended (the events already in the archive, replayed ones
    /// included): this session's events get IDs from here.
    pub next_id: u64,
    /// Where each followed file's lines end in the archive (see [`crate::checkpoint`]): a
    /// followed import resumes there.
    pub checkpoints: Vec<FileCheckpoint>,
    /// The catalog says the checkpoints are lost (see [`catalog`]'s `checkpoints_lost`): a
    /// followed import must not start from them without the user's choice of where to start.
    pub checkpoints_lost: bool,
}

/// What a writer did, returned by [`Store::close`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    /// Events appended in this session (not counting replayed ones).
    pub events: u64,
    /// Bytes of msgpack row data appended in this session.
    pub bytes: u64,
    /// Segments sealed in this session.
    pub segments: u64,
    /// Bytes of segment files written in this session.
    pub segment_bytes: u64,
    /// The next event ID (= events in the archive).
    pub next_id: u64,
    /// Segments erased in this session by retention (`max_archive_size`, `retain`).
    pub erased_segments: u64,
    /// Events of those segments.
    pub erased_events: u64,
}

/// The writer of a database: appends batches, seals segments, keeps the WAL.
///
/// Dropping a `Store` without [`Store::close`] behaves like a crash: the active segment stays
/// in the WAL and is completed by the next [`Store::open_writer`].
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    _lock: File,
    opts: StoreOptions,
    catalog: Catalog,
    builder: SegmentBuilder,
    wal: Wal,
    next_id: u64,
    summary: Summary,
    /// Set when an operation failed half-way: the writer refuses further work.
    failed: Option<String>,
    /// Segment files of an earlier life that the WAL still points into; removed once a seal
    /// has replaced the WAL.
    stale: Vec<PathBuf>,
    /// Retention and background compaction (none by default).
    maintenance: Maintenance,
    /// Bytes of the sealed segments the catalog lists.
    sealed_bytes: u64,
    /// When retention by age was last checked.
    age_checked: Option<std::time::Instant>,
    /// The catalog in memory differs from the file only in files deleted since (written at
    /// the next seal or change, or at close).
    catalog_dirty: bool,
    /// Positions of followed files after the last appended event.
    checkpoints: Checkpoints,
}

/// How long a lock held in this process's name is waited for (see [`take_lock`]).
const OWN_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a writer waits for a lock held for a brief job (see the module docs).
pub const BRIEF_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

/// Who takes the lock: a writer, or a holder for one brief job (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holder {
    Writer,
    Brief,
}

pub(crate) fn take_lock(dir: &Path) -> Result<File> {
    take_lock_as(dir, Holder::Writer)
}

pub(crate) fn take_lock_as(dir: &Path, holder: Holder) -> Result<File> {
    // Every writer takes the lock first: what it creates gets the archive's permissions.
    crate::fs::use_archive_umask(dir);
    let path = dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| StoreError::io("open", &path, e))?;
    // A lock this process took and released can still be held for a moment by a child it is
    // starting: between fork and exec the child holds a copy of every descriptor (closed on
    // exec), the lock's included. So a lock that names this process is tried again for up to
    // `OWN_LOCK_WAIT` before it counts as taken.
    let started = std::time::Instant::now();
    let mut waited = false;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut s = String::new();
                let _ = file.seek(std::io::SeekFrom::Start(0));
                let _ = file.read_to_string(&mut s);
                let mut lines = s.lines();
                let pid: Option<u32> = lines.next().and_then(|l| l.trim().parse().ok());
                if pid == Some(std::process::id()) && started.elapsed() < OWN_LOCK_WAIT {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    continue;
                }
                let brief = lines.next().is_some_and(|l| l.trim() == "brief");
                if brief && holder == Holder::Writer && started.elapsed() < BRIEF_LOCK_WAIT {
                    if !waited {
                        tracing::warn!(
                            "database {} is locked by a retro match of weir serve{}: waiting for it",
                            dir.display(),
                            pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
                        );
                        waited = true;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    continue;
                }
                return Err(StoreError::Locked {
                    dir: dir.to_path_buf(),
                    pid,
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::io("lock", &path, e)),
        }
    }
    crate::fs::fault::hit(crate::fs::fault::Op::Write)
        .and_then(|()| file.set_len(0))
        .and_then(|()| {
            let mut text = format!("{}\n", std::process::id());
            if holder == Holder::Brief {
                text.push_str("brief\n");
            }
            file.write_all(text.as_bytes())
        })
        .map_err(|e| StoreError::io("write", &path, e))?;
    Ok(file)
}

/// Whether `dir` holds any of a weir archive's files (`catalog.json`, `wal`, `segments/`,
/// `LOCK`): readers refuse a directory that does not ([`StoreError::NoArchive`]).
pub(crate) fn looks_like_archive(dir: &Path) -> bool {
    [catalog::CATALOG_FILE, WAL_FILE, SEGMENTS_DIR, LOCK_FILE]
        .iter()
        .any(|name| dir.join(name).symlink_metadata().is_ok())
}

/// Refuses a directory that exists, is not empty and is not a weir archive (it has none of
/// `catalog.json`, `wal`, `segments/`, `LOCK`), before the writer creates or removes anything
/// in it. A missing directory, or an empty one (but for indicator sets, `intel/`), becomes a
/// new archive.
fn check_is_archive(dir: &Path) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StoreError::io("list", dir, e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("list", dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if [catalog::CATALOG_FILE, WAL_FILE, SEGMENTS_DIR, LOCK_FILE].contains(&name.as_str()) {
            return Ok(());
        }
        // Indicator sets may be added before the first import (`weir intel add`).
        if name == crate::unstable::intel::set::INTEL_DIR {
            continue;
        }
        found.push(name);
    }
    if found.is_empty() {
        return Ok(());
    }
    found.sort();
    let shown: Vec<String> = found.iter().take(3).map(|n| format!("{n:?}")).collect();
    let more = if found.len() > 3 {
        format!(" and {} more", found.len() - 3)
    } else {
        String::new()
    };
    Err(StoreError::NotAnArchive {
        dir: dir.to_path_buf(),
        found: shown.join(", ") + &more,
    })
}

/// Removes the temporaries of interrupted writes (`.*.tmp` in the database and segment
/// directories), except the segment files named in `keep` (the WAL points into them).
fn remove_temporaries(dir: &Path, keep: &HashSet<String>) -> Result<()> {
    for d in [dir.to_path_buf(), dir.join(SEGMENTS_DIR)] {
        let entries = std::fs::read_dir(&d).map_err(|e| StoreError::io("list", &d, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io("list", &d, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.ends_with(".tmp") && !keep.contains(&name) {
                let p = entry.path();
                std::fs::remove_file(&p).map_err(|e| StoreError::io("remove", &p, e))?;
            }
        }
    }
    Ok(())
}

/// The files of active segments in `segments/` (`.<uuid>.seg.tmp`, see
/// [`crate::segment`]'s writer) that hold written bytes: allocated blocks, since the file is
/// sparse and a segment's first chunk allocates some. A file created for a segment that
/// never got a batch holds none, and nothing can depend on it.
pub(crate) fn active_segment_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let d = dir.join(SEGMENTS_DIR);
    let entries = match std::fs::read_dir(&d) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io("list", &d, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("list", &d, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(uuid) = name
            .strip_prefix('.')
            .and_then(|n| n.strip_suffix(".seg.tmp"))
        else {
            continue;
        };
        if uuid::Uuid::parse_str(uuid).is_err() {
            continue;
        }
        let held = entry
            .metadata()
            .map(|m| std::os::unix::fs::MetadataExt::blocks(&m) > 0)
            .unwrap_or(false);
        if held {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Adds to a corrupt write-ahead log's error what to run (`weir verify --repair`).
fn with_repair_hint(e: StoreError) -> StoreError {
    match e {
        StoreError::Wal(WalError::Corrupt {
            path,
            offset,
            reason,
        }) if !reason.contains("verify --repair") => StoreError::Wal(WalError::Corrupt {
            path,
            offset,
            reason: format!("{reason} (`weir verify --repair` repairs the log)"),
        }),
        other => other,
    }
}

/// Removes a segment file and, first, its index file (see `crate::segment`'s index files).
fn remove_segment_file(path: &Path) -> Result<()> {
    crate::segment::remove_index(path)
        .map_err(|e| StoreError::io("remove", crate::segment::index_path(path), e))?;
    std::fs::remove_file(path).map_err(|e| StoreError::io("remove", path, e))
}

/// Removes the index files in `segments/` whose segment is gone (a crash between removing a
/// segment and its index cannot leave one, as the index goes first; this removes those of
/// segments deleted by hand, or by a weir without index files). An index names no event, so
/// nothing acknowledged depends on it.
fn remove_orphan_indexes(dir: &Path) -> Result<()> {
    let d = dir.join(SEGMENTS_DIR);
    let entries = std::fs::read_dir(&d).map_err(|e| StoreError::io("list", &d, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("list", &d, e))?;
        let p = entry.path();
        let is_index = p
            .extension()
            .is_some_and(|x| x == crate::segment::INDEX_EXTENSION);
        let name = entry.file_name();
        if is_index
            && !name.to_string_lossy().starts_with('.')
            && !p.with_extension(crate::segment::SEGMENT_EXTENSION).exists()
        {
            std::fs::remove_file(&p).map_err(|e| StoreError::io("remove", &p, e))?;
        }
    }
    Ok(())
}

/// The segment files (`segments/*.seg`) the catalog does not list, by file name, other than
/// those pending deletion (see [`catalog`]).
pub(crate) fn unlisted_segment_files(dir: &Path, catalog: &Catalog) -> Result<Vec<String>> {
    let seg_dir = dir.join(SEGMENTS_DIR);
    let known: HashSet<&str> = catalog.segments.iter().map(|s| s.file.as_str()).collect();
    let mut names = Vec::new();
    let entries = match std::fs::read_dir(&seg_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(names),
        Err(e) => return Err(StoreError::io("list", &seg_dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("list", &seg_dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.')
            && name.ends_with(".seg")
            && !known.contains(format!("{SEGMENTS_DIR}/{name}").as_str())
            && !catalog.is_pending_deletion(&name)
        {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Formats ID intervals as `[a, b) [c, d)`.
pub(crate) fn show_ranges(ranges: &[Range<u64>]) -> String {
    let r: Vec<String> = ranges
        .iter()
        .map(|r| format!("[{}, {})", r.start, r.end))
        .collect();
    r.join(" ")
}

/// Deals with the segment files the catalog does not list, other than those the WAL points
/// into (`keep`), after replay. Only a segment the WAL proves redundant is removed: one whose
/// events all lie in `wal_ids`, the IDs the log's records hold (read with their rows), so a
/// copy of every one of its events is being sealed again from the WAL (an interrupted seal
/// during an earlier replay). Any other unlisted segment is kept: one whose IDs are all below
/// the catalog's end (a lost catalog entry, or a duplicate) with a warning; one holding IDs at
/// or past the catalog's end (a lost catalog) is an error, since writing would assign its IDs
/// again. `weir verify --repair` puts such segments back into the catalog.
fn check_unlisted(
    dir: &Path,
    catalog: &Catalog,
    keep: &HashSet<String>,
    wal_ids: Range<u64>,
) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    for name in unlisted_segment_files(dir, catalog)? {
        if keep.contains(&name) {
            continue;
        }
        let path = dir.join(SEGMENTS_DIR).join(&name);
        let seg = match crate::segment::Segment::open(&path) {
            Ok(seg) => seg,
            Err(e) => {
                warnings.push(format!(
                    "kept segment {} that the catalog does not list and that cannot be read ({e}); `weir verify --repair` moves it aside",
                    path.display()
                ));
                continue;
            }
        };
        let ranges = seg.intervals().to_vec();
        drop(seg);
        let redundant = !ranges.is_empty()
            && ranges
                .iter()
                .all(|r| wal_ids.start <= r.start && r.end <= wal_ids.end);
        // A copy of events that listed (sealed, fsynced) segments hold: what a crash between
        // a seal's catalog write and the removal of the earlier life's file it replaced
        // leaves. Nothing refers to it: the catalog lists the new segment and the WAL starts
        // after it.
        let superseded = !ranges.is_empty() && catalog.covers(&ranges);
        if superseded && !redundant {
            remove_segment_file(&path)?;
            warnings.push(format!(
                "removed segment {}: a copy of events {} that listed segments hold (left by a crash after the seal that replaced it)",
                path.display(),
                show_ranges(&ranges)
            ));
        } else if redundant {
            remove_segment_file(&path)?;
            warnings.push(format!(
                "removed segment {} of an interrupted seal (its events {} are replayed from the write-ahead log)",
                path.display(),
                show_ranges(&ranges)
            ));
        } else if ranges.iter().any(|r| r.end > catalog.next_id) {
            return Err(StoreError::Unlisted {
                path,
                reason: format!(
                    "it holds event IDs {} at or past the catalog's end {}, which this writer would assign again; run `weir verify --repair` to add it back to the catalog",
                    show_ranges(&ranges),
                    catalog.next_id
                ),
            });
        } else {
            warnings.push(format!(
                "segment {} (events {}) is not in the catalog, so its events are not visible; kept: run `weir verify --repair` to add it back",
                path.display(),
                show_ranges(&ranges)
            ));
        }
    }
    Ok(warnings)
}

impl Store {
    /// Opens (creating if needed) the database in `dir` for writing: takes the lock, loads the
    /// catalog, removes leftovers of interrupted writes, and replays the WAL into the active
    /// segment. A second writer gets [`StoreError::Locked`]; a directory that holds other
    /// files but no archive gets [`StoreError::NotAnArchive`], before anything is touched.
    pub fn open_writer(dir: impl AsRef<Path>, opts: StoreOptions) -> Result<(Store, OpenReport)> {
        Store::open_writer_as(dir.as_ref(), opts, Holder::Writer)
    }

    /// [`Store::open_writer`] for `holder`: [`Holder::Brief`] takes the lock for one bounded
    /// job, and a writer that meets it waits (see the module docs).
    pub(crate) fn open_writer_as(
        dir: &Path,
        opts: StoreOptions,
        holder: Holder,
    ) -> Result<(Store, OpenReport)> {
        let dir = dir.to_path_buf();
        check_is_archive(&dir)?;
        let seg_dir = dir.join(SEGMENTS_DIR);
        let mut builder = SegmentBuilder::in_dir(opts.max_segment_size, &seg_dir)?;
        builder.set_compression(opts.compression);
        builder.set_sketches(opts.sketches);
        crate::fs::create_private_dir(&dir)?;
        crate::fs::use_archive_umask(&dir);
        std::fs::create_dir_all(&seg_dir).map_err(|e| StoreError::io("create", &seg_dir, e))?;
        let lock = take_lock_as(&dir, holder)?;
        let catalog = Catalog::load(&dir)?;
        let mut report = OpenReport::default();
        let wal_path = dir.join(WAL_FILE);
        let wal = if wal_path.exists() {
            // Opened as is; replay below cuts off a torn tail, if any.
            let len = std::fs::metadata(&wal_path)
                .map_err(|e| StoreError::io("stat", &wal_path, e))?
                .len();
            Wal::open_append(&wal_path, catalog.next_id, len, opts.sync)?
        } else {
            // Rows in an active segment's file were written for records of a log that is
            // gone: acknowledged events. Creating a log here would give their IDs to new
            // events, and the clean-up below would remove the file (see
            // [`StoreError::OrphanedActiveSegment`]).
            if let Some(path) = active_segment_files(&dir)?.into_iter().next() {
                return Err(StoreError::OrphanedActiveSegment {
                    path,
                    reason: format!("the write-ahead log {} is missing", wal_path.display()),
                });
            }
            Wal::create(&wal_path, catalog.next_id, opts.sync)?
        };
        let next_id = catalog.next_id;
        let mut checkpoints = Checkpoints::default();
        checkpoints.extend(catalog.checkpoints.iter().cloned());
        let mut store = Store {
            dir,
            _lock: lock,
            opts,
            catalog,
            builder,
            wal,
            next_id,
            summary: Summary::default(),
            failed: None,
            stale: Vec::new(),
            maintenance: Maintenance::default(),
            sealed_bytes: 0,
            age_checked: None,
            catalog_dirty: false,
            checkpoints,
        };
        let sealed_at_open = store.catalog.next_id;
        let referenced = match store.replay(&mut report) {
            Ok(r) => r,
            Err(e) => {
                store.abandon_active_file();
                return Err(with_repair_hint(e));
            }
        };
        // Leftovers go only now: the WAL may point into a temporary segment file of an earlier
        // life (or into a segment renamed just before a crash), which replay has read. Those
        // stay while the WAL points into them, until the next seal replaces it.
        let mut keep = HashSet::new();
        for uuid in &referenced {
            let name = crate::segment::file_name(uuid);
            keep.insert(format!(".{name}.tmp"));
            keep.insert(name);
        }
        keep.extend(store.builder.active_file_name());
        remove_temporaries(&store.dir, &keep)?;
        remove_orphan_indexes(&store.dir)?;
        // Outputs of an interrupted erase or compaction, and files it dropped or announced.
        rewrite::clean_staging(&store.dir)?;
        store.sweep();
        store.sealed_bytes = store.catalog.segments.iter().map(|s| s.disk_bytes()).sum();
        let wal_ids = sealed_at_open..store.next_id;
        match check_unlisted(&store.dir, &store.catalog, &keep, wal_ids) {
            Ok(w) => report.warnings.extend(w),
            Err(e) => {
                store.abandon_active_file();
                return Err(e);
            }
        }
        let known: HashSet<&str> = store
            .catalog
            .segments
            .iter()
            .map(|s| s.file.as_str())
            .collect();
        let active = store.builder.active_file_name();
        store.stale = keep
            .iter()
            .filter(|n| Some(*n) != active.as_ref())
            .filter(|n| !known.contains(format!("{SEGMENTS_DIR}/{n}").as_str()))
            .map(|n| seg_dir.join(n))
            .filter(|p| p.exists())
            .collect();
        report.next_id = store.next_id;
        report.checkpoints = store.checkpoints.to_vec();
        report.checkpoints_lost = store.catalog.checkpoints_lost;
        tracing::debug!(
            dir = %store.dir.display(),
            segments = store.catalog.segments.len(),
            next_id = store.next_id,
            "opened archive for writing"
        );
        Ok((store, report))
    }

    /// Opens an existing archive for writing, for a command that changes it (`weir erase`,
    /// `weir compact`): unlike [`Store::open_writer`], a missing directory is
    /// [`StoreError::NoDatabase`] and one that is not an archive [`StoreError::NoArchive`];
    /// nothing is created.
    pub fn open_existing(dir: impl AsRef<Path>, opts: StoreOptions) -> Result<(Store, OpenReport)> {
        let dir = dir.as_ref();
        if !dir.is_dir() {
            return Err(StoreError::NoDatabase {
                dir: dir.to_path_buf(),
            });
        }
        if !looks_like_archive(dir) {
            return Err(StoreError::NoArchive {
                dir: dir.to_path_buf(),
            });
        }
        Store::open_writer(dir, opts)
    }

    /// Removes the active segment's file of a writer that fails to open: replay wrote into
    /// it copies of rows that the log's records point at elsewhere, and no record names it
    /// (replay logs nothing), so nothing acknowledged depends on it. Without this, every
    /// refused open (a damaged log) left another sparse file of the maximum segment size.
    fn abandon_active_file(&mut self) {
        if let Some(name) = self.builder.active_file_name() {
            let path = self.dir.join(SEGMENTS_DIR).join(name);
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(file = %path.display(), error = %e, "cannot remove the active segment's file of a failed open");
            }
        }
    }

    /// Replays the WAL into the active segment; returns the segments whose files its records
    /// point into, if the WAL is kept (empty when it was replaced by a fresh one).
    fn replay(&mut self, report: &mut OpenReport) -> Result<Vec<uuid::Uuid>> {
        let path = self.dir.join(WAL_FILE);
        let mut reader = WalReader::open(&path)?;
        if reader.base_id() > self.catalog.next_id {
            return Err(WalError::Corrupt {
                path,
                offset: 0,
                reason: format!(
                    "the log starts at event ID {} but the catalog ends at {}: events {}..{} are missing",
                    reader.base_id(),
                    self.catalog.next_id,
                    self.catalog.next_id,
                    reader.base_id()
                ),
            }
            .into());
        }
        let mut live_marks = false;
        while let Some((offset, entry)) = reader.next_entry(self.catalog.next_id)? {
            let batch = match entry {
                Entry::Batch(b) if b.is_empty() => {
                    // Checkpoints only: nothing to add to the segment.
                    if b.id() >= self.catalog.next_id {
                        self.checkpoints.apply_marks(b.marks());
                        live_marks = true;
                    }
                    continue;
                }
                Entry::Batch(b) => b,
                Entry::Sealed(_) => {
                    report.skipped_batches += 1;
                    continue;
                }
            };
            let ids = batch.id_range();
            if ids.end <= self.catalog.next_id {
                report.skipped_batches += 1;
                continue;
            }
            if ids.start < self.catalog.next_id {
                return Err(WalError::Corrupt {
                    path,
                    offset,
                    reason: format!(
                        "record holds IDs {}..{} but the catalog ends at {}",
                        ids.start, ids.end, self.catalog.next_id
                    ),
                }
                .into());
            }
            report.replayed_batches += 1;
            report.replayed_events += batch.len() as u64;
            // Records were written per segment, but the maximum size may have shrunk since:
            // rotate as needed, keeping the WAL (its sealed records are skipped next time).
            self.add_to_segments(batch, false, false, None)?;
        }
        if let Some(torn) = reader.torn() {
            report.warnings.push(torn.to_string());
        }
        let level_info = report.replayed_batches > 0 || reader.torn().is_some();
        macro_rules! replayed {
            ($level:ident) => {
                tracing::$level!(
                    wal = %path.display(),
                    batches = report.replayed_batches,
                    events = report.replayed_events,
                    skipped_batches = report.skipped_batches,
                    torn = reader.torn().is_some(),
                    "replayed write-ahead log"
                )
            };
        }
        // A log with nothing to replay (a new archive, a clean shutdown) is only debug.
        if level_info {
            replayed!(info);
        } else {
            replayed!(debug);
        }
        self.next_id = self.catalog.next_id.max(reader.end_id());
        if report.replayed_batches == 0 && !live_marks {
            // Nothing live in the log (empty, or only records of the last sealed segment):
            // start a clean one at the catalog's end.
            self.wal = Wal::create(&path, self.catalog.next_id, self.opts.sync)?;
            return Ok(Vec::new());
        }
        self.wal = Wal::open_append(&path, reader.base_id(), reader.good_len(), self.opts.sync)?;
        Ok(reader.referenced_segments().to_vec())
    }

    /// The database directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The ID the next appended event gets (= number of events in the archive).
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// The options in effect.
    pub fn options(&self) -> StoreOptions {
        self.opts
    }

    /// What this writer has done so far.
    pub fn summary(&self) -> Summary {
        Summary {
            next_id: self.next_id,
            ..self.summary.clone()
        }
    }

    /// Appends a batch: assigns it the next IDs (setting [`Batch::set_id`]), logs it to the WAL
    /// and adds it to the active segment, sealing segments as they fill up. A batch larger than
    /// a segment is split across segments. When this returns, the batch is acknowledged: it
    /// survives a crash of this process (and, with [`SyncPolicy::Always`], of the machine).
    pub fn append(&mut self, batch: Batch) -> Result<Range<u64>> {
        self.append_prepared(batch, None)
    }

    /// [`Store::append`] of a batch already compressed and sketched by a [`Preparer`] (on
    /// another thread: see [`ArchiveSink`]); a `prepared` that does not belong to the batch, or
    /// to a part of it that a segment's end splits off, is prepared again here.
    ///
    /// [`Preparer`]: crate::segment::Preparer
    pub fn append_prepared(
        &mut self,
        mut batch: Batch,
        prepared: Option<PreparedBatch>,
    ) -> Result<Range<u64>> {
        self.check_failed()?;
        let start = self.next_id;
        if batch.is_empty() {
            if !batch.marks().is_empty() {
                // Checkpoints only: a record without rows moves them (see `crate::wal`). The
                // active segment must have room for the grown set (it records them when
                // sealed): if not, it is sealed first, with the set as it was.
                let grown = self.checkpoints.encoded_len()
                    + Mark::last_per_file(batch.marks())
                        .iter()
                        .map(crate::wal::checkpoint_len)
                        .sum::<usize>();
                if !self.builder.checkpoints_fit(grown) {
                    let r = self.seal(true);
                    self.poison_on_error(r)?;
                }
                self.builder.reserve_checkpoints(grown);
                batch.set_id(start);
                let r = self.wal.append(&batch).map_err(StoreError::from);
                self.poison_on_error(r)?;
                self.checkpoints.apply_marks(batch.marks());
            }
            return Ok(start..start);
        }
        // IDs are never wrapped: a batch that does not fit in the rest of the u64 space is
        // refused before anything is written.
        if start.checked_add(batch.len() as u64).is_none() {
            return Err(StoreError::IdOverflow {
                next_id: start,
                events: batch.len() as u64,
            });
        }
        // Refuse an event that cannot fit even in an empty segment before anything is written.
        let (i, len) = (0..batch.len())
            .map(|i| (i, batch.row_range(i).len()))
            .fold((0, 0), |a, b| if b.1 > a.1 { b } else { a });
        if !self.builder.row_fits_empty_segment(batch.schema(), len) {
            return Err(StoreError::EventTooLarge {
                id: start + i as u64,
                schema: batch.schema().name.clone(),
                bytes: len,
                max: self.opts.max_segment_size,
            });
        }
        batch.set_id(start);
        let ids = batch.id_range();
        let bytes = batch.byte_size() as u64;
        let r = self.add_to_segments(batch, true, true, prepared);
        self.poison_on_error(r)?;
        self.next_id = ids.end;
        self.summary.events += ids.end - ids.start;
        self.summary.bytes += bytes;
        // Age, now and then (the budget is checked at every seal).
        let r = self.retention(false);
        self.poison_on_error(r)?;
        Ok(ids)
    }

    /// Appends a *group*: batches that are committed together or not at all (see
    /// [`Batch::group_next`]), in order, each assigned the next IDs. The group goes into the
    /// active segment whole (the segment is sealed first if the group does not fit in the room
    /// left) and is logged as one WAL record ([`crate::wal::Wal::append_group`]), so a crash
    /// leaves all of it or none of it, and the checkpoints its batches carry move only with
    /// all of its rows. Batches without rows (checkpoints only) join the rows before them.
    ///
    /// A group that does not fit even in an empty segment (a window of input larger than the
    /// maximum segment size, e.g. `--max-segment-size` below the batcher's `max_bytes`) is
    /// appended batch by batch instead, with a warning: nothing is lost, but a crash between
    /// its batches commits the first ones without the checkpoints, which holds for all of them,
    /// so a resume imports those events again.
    ///
    /// `prepared` of each batch as for [`Store::append_prepared`]. Returns the IDs of the
    /// group's events.
    pub fn append_group(
        &mut self,
        group: Vec<(Batch, Option<PreparedBatch>)>,
    ) -> Result<Range<u64>> {
        self.check_failed()?;
        // Checkpoints of batches without rows join the rows before them (or after, before the
        // group's first rows): positions only move at the group's end anyway.
        let mut members: Vec<(Batch, Option<PreparedBatch>)> = Vec::with_capacity(group.len());
        let mut leading: Vec<Mark> = Vec::new();
        for (mut batch, prepared) in group {
            batch.set_group_next(false);
            if !batch.is_empty() {
                if !leading.is_empty() {
                    let mut marks = std::mem::take(&mut leading);
                    marks.extend(batch.marks().iter().cloned());
                    batch.set_marks(marks);
                }
                members.push((batch, prepared));
                continue;
            }
            let marks = batch.marks().iter().map(|m| Mark {
                row_start: 0,
                row_end: 0,
                start: None,
                ..m.clone()
            });
            match members.last_mut() {
                Some((last, _)) => {
                    let n = last.len();
                    for m in marks {
                        last.push_mark(Mark {
                            row_start: n,
                            row_end: n,
                            ..m
                        });
                    }
                }
                None => leading.extend(marks),
            }
        }
        if members.is_empty() {
            let carrier = crate::checkpoint::carrier(leading.into_iter().map(|m| m.end));
            return self.append_prepared(carrier, None);
        }
        if members.len() == 1 {
            let Some((batch, prepared)) = members.pop() else {
                return Ok(self.next_id..self.next_id);
            };
            return self.append_prepared(batch, prepared);
        }
        let start = self.next_id;
        let events: u64 = members.iter().map(|(b, _)| b.len() as u64).sum();
        if start.checked_add(events).is_none() {
            return Err(StoreError::IdOverflow {
                next_id: start,
                events,
            });
        }
        // Refuse an event that cannot fit even in an empty segment before anything is written.
        let mut id = start;
        for (batch, _) in &members {
            let (i, len) = (0..batch.len())
                .map(|i| (i, batch.row_range(i).len()))
                .fold((0, 0), |a, b| if b.1 > a.1 { b } else { a });
            if !self.builder.row_fits_empty_segment(batch.schema(), len) {
                return Err(StoreError::EventTooLarge {
                    id: id + i as u64,
                    schema: batch.schema().name.clone(),
                    bytes: len,
                    max: self.opts.max_segment_size,
                });
            }
            id += batch.len() as u64;
        }
        let marks: Vec<Mark> = members
            .iter()
            .flat_map(|(b, _)| b.marks().iter().cloned())
            .collect();
        let cp_bytes = self.checkpoints.encoded_len()
            + Mark::last_per_file(&marks)
                .iter()
                .map(crate::wal::checkpoint_len)
                .sum::<usize>();
        let fits = |store: &mut Store| {
            store.builder.reserve_checkpoints(cp_bytes);
            let batches: Vec<&Batch> = members.iter().map(|(b, _)| b).collect();
            store.builder.fits_all(&batches)
        };
        if !fits(self) && !self.builder.is_empty() {
            let r = self.seal(true);
            self.poison_on_error(r)?;
        }
        if !fits(self) {
            tracing::warn!(
                db = %self.dir.display(),
                batches = members.len(),
                events,
                max_segment_size = self.opts.max_segment_size,
                "a group of batches is larger than a segment: appended batch by batch (a crash in between may import some of its events again on resume)"
            );
            for (batch, prepared) in members {
                self.append_prepared(batch, prepared)?;
            }
            return Ok(start..self.next_id);
        }
        let bytes: u64 = members.iter().map(|(b, _)| b.byte_size() as u64).sum();
        let r = self.add_group(members, start);
        self.poison_on_error(r)?;
        self.next_id = start + events;
        self.summary.events += events;
        self.summary.bytes += bytes;
        let r = self.retention(false);
        self.poison_on_error(r)?;
        Ok(start..self.next_id)
    }

    /// Adds the batches of a group that fits to the active segment, then logs them in one
    /// record and moves the checkpoints (see [`Store::append_group`]).
    fn add_group(
        &mut self,
        mut members: Vec<(Batch, Option<PreparedBatch>)>,
        start: u64,
    ) -> Result<()> {
        let mut id = start;
        let mut logged = Vec::with_capacity(members.len());
        for (batch, prepared) in members.iter_mut() {
            batch.set_id(id);
            id += batch.len() as u64;
            let mut rows_crc = None;
            let location = self
                .builder
                .add_prepared(batch, prepared.take(), &mut rows_crc)?;
            logged.push((rows_crc, location));
        }
        if self.opts.sync == SyncPolicy::Always && logged.iter().any(|(_, l)| l.is_some()) {
            self.builder.sync_data()?;
        }
        let parts: Vec<crate::wal::GroupPart<'_>> = members
            .iter()
            .zip(&logged)
            .map(|((batch, _), (rows_crc, location))| crate::wal::GroupPart {
                batch,
                rows_crc: *rows_crc,
                location: *location,
            })
            .collect();
        self.wal.append_group(&parts)?;
        for (batch, _) in &members {
            self.checkpoints.apply_marks(batch.marks());
        }
        Ok(())
    }

    /// Adds a batch with its IDs set, rotating and splitting as needed. `log`: write each part
    /// to the WAL first; `reset_wal`: start a new WAL at each seal. `prepared`: the batch,
    /// compressed and sketched (used only if the batch goes into one segment whole).
    fn add_to_segments(
        &mut self,
        mut batch: Batch,
        log: bool,
        reset_wal: bool,
        mut prepared: Option<PreparedBatch>,
    ) -> Result<()> {
        // Room for the checkpoints the segment will record (format 8): the current set plus
        // this batch's, at most.
        let cp_bytes = self.checkpoints.encoded_len()
            + Mark::last_per_file(batch.marks())
                .iter()
                .map(crate::wal::checkpoint_len)
                .sum::<usize>();
        loop {
            self.builder.reserve_checkpoints(cp_bytes);
            if self.builder.fits(&batch) {
                return self.add_part(&batch, log, prepared.take());
            }
            if !self.builder.is_empty() {
                self.seal(reset_wal)?;
                continue;
            }
            let k = self.builder.rows_that_fit(&batch);
            let event = batch.row_range(0).len();
            if k == 0 && self.builder.row_fits_empty_segment(batch.schema(), event) {
                return Err(StoreError::NoRoomBesideCheckpoints {
                    files: self.checkpoints.len(),
                    bytes: cp_bytes,
                    id: batch.id(),
                    event,
                    max: self.opts.max_segment_size,
                });
            }
            if k == 0 {
                return Err(StoreError::EventTooLarge {
                    id: batch.id(),
                    schema: batch.schema().name.clone(),
                    bytes: batch.row_range(0).len(),
                    max: self.opts.max_segment_size,
                });
            }
            let tail = batch.split_off(k);
            self.add_part(&batch, log, None)?;
            self.seal(reset_wal)?;
            batch = tail;
        }
    }

    /// Adds a batch that fits to the active segment and, with `log`, records it in the WAL.
    ///
    /// The rows go to the segment's file first and the WAL record only points at them (see
    /// [`crate::wal`]): the rows are written once. The record is written after the rows, so an
    /// acknowledged record always finds them (under `--sync always`, durable first).
    fn add_part(
        &mut self,
        batch: &Batch,
        log: bool,
        prepared: Option<PreparedBatch>,
    ) -> Result<()> {
        // The rows' CRC-32, if the segment needs it (rows stored as they are), is computed once
        // for the segment and the WAL record; compressed rows are not read for it.
        let mut rows_crc = None;
        let location = self.builder.add_prepared(batch, prepared, &mut rows_crc)?;
        if log {
            match location {
                Some(location) => {
                    if self.opts.sync == SyncPolicy::Always {
                        self.builder.sync_data()?;
                    }
                    self.wal.append_external(batch, rows_crc, location)?;
                }
                None => match rows_crc {
                    Some(crc) => self.wal.append_with_crc(batch, crc)?,
                    None => self.wal.append(batch)?,
                },
            }
        }
        // The positions of followed files move with the rows (logged in the same record);
        // a seal writes them into the catalog.
        self.checkpoints.apply_marks(batch.marks());
        Ok(())
    }

    /// Clears the catalog's `checkpoints_lost` (see [`catalog`]): the user chose where
    /// followed files without a checkpoint start. Written with the next catalog (the first
    /// seal, or [`Store::close`]), so an import that commits nothing leaves the flag.
    pub fn clear_checkpoints_lost(&mut self) {
        if self.catalog.checkpoints_lost {
            self.catalog.checkpoints_lost = false;
            self.catalog_dirty = true;
        }
    }

    /// Where each followed file's lines end among the appended events.
    pub fn checkpoints(&self) -> Vec<FileCheckpoint> {
        self.checkpoints.to_vec()
    }

    /// Seals the active segment (if it holds anything): segment file, catalog, new WAL.
    fn seal(&mut self, reset_wal: bool) -> Result<()> {
        if self.builder.is_empty() {
            return Ok(());
        }
        let sync = self.opts.sync.sync_segments();
        // The segment records the full set of checkpoints as of its last event, so that a lost
        // catalog's checkpoints can be rebuilt (`repair.rs`).
        let checkpoints = self.checkpoints.to_vec();
        if !self.builder.set_checkpoints(Some(&checkpoints)) {
            return Err(StoreError::CheckpointsTooLarge {
                files: checkpoints.len(),
                bytes: self.checkpoints.encoded_len(),
                max: self.opts.max_segment_size,
            });
        }
        // No WAL fsync here: the segment holds every record of the WAL and is fsynced itself
        // before the catalog names it, so the WAL's bytes need never reach the disk.
        let sealed = self.builder.write_to(&self.dir.join(SEGMENTS_DIR), sync)?;
        self.summary.segments += 1;
        self.summary.segment_bytes += sealed.bytes;
        self.sealed_bytes += sealed.bytes + sealed.index_bytes;
        let entry = CatalogEntry::from_sealed(&sealed);
        tracing::info!(
            segment = %self.dir.join(&entry.file).display(),
            events = entry.events,
            batches = entry.batches,
            bytes = entry.bytes,
            "sealed segment"
        );
        self.catalog.push(entry);
        self.catalog.checkpoints = self.checkpoints.to_vec();
        self.catalog.save(&self.dir, sync)?;
        self.catalog_dirty = false;
        if reset_wal {
            self.wal = Wal::create(
                &self.dir.join(WAL_FILE),
                self.catalog.next_id,
                self.opts.sync,
            )?;
            // The new WAL points into nothing of an earlier life.
            for path in std::mem::take(&mut self.stale) {
                let _ = remove_segment_file(&path);
            }
            // Retention after every seal (also of a batch split over several segments), but
            // not while replaying: the writer applies it once it is open.
            self.retention(true)?;
        }
        self.sweep();
        Ok(())
    }

    /// Makes every appended batch durable (fsyncs the active segment's file, whose rows the
    /// WAL's records point at, then the WAL), per the [`SyncPolicy`].
    pub fn flush(&mut self) -> Result<()> {
        self.check_failed()?;
        // The rows first (the WAL's records point at them), then the records.
        let r = if self.opts.sync == SyncPolicy::Never {
            Ok(())
        } else {
            self.builder.sync_data().map_err(StoreError::from)
        };
        let r = r.and_then(|()| Ok(self.wal.sync()?));
        self.poison_on_error(r)?;
        // The input paused: time for retention by age and a bounded step of compaction.
        let r = self.retention(false).and_then(|()| self.idle_compaction());
        self.poison_on_error(r)
    }

    /// Seals the active segment and releases the lock.
    pub fn close(mut self) -> Result<Summary> {
        self.check_failed()?;
        self.seal(true)?;
        self.wal.sync()?;
        self.sweep();
        if self.catalog_dirty {
            self.catalog
                .save(&self.dir, self.opts.sync.sync_segments())?;
        }
        Ok(self.summary())
    }

    fn check_failed(&self) -> Result<()> {
        match &self.failed {
            Some(why) => Err(StoreError::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    fn poison_on_error<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            self.failed = Some(e.to_string());
        }
        r
    }
}

#[cfg(test)]
mod lock_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Holds `dir`'s lock as another process would (its pid and `extra` lines written), and
    /// lets it go after `hold`.
    fn held_by_another(
        dir: &Path,
        extra: &str,
        hold: std::time::Duration,
    ) -> std::thread::JoinHandle<()> {
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(LOCK_FILE))
            .unwrap();
        f.try_lock().unwrap();
        f.set_len(0).unwrap();
        // No process has pid 4194304 (above Linux's largest): not this one.
        f.write_all(format!("4194304\n{extra}").as_bytes()).unwrap();
        std::thread::spawn(move || {
            std::thread::sleep(hold);
            drop(f);
        })
    }

    /// A writer fails at once on another writer's lock, and waits for a brief holder's.
    #[test]
    fn a_writer_waits_for_a_brief_holder_only() {
        let dir = tempfile::tempdir().unwrap();
        let hold = std::time::Duration::from_millis(300);
        let t = held_by_another(dir.path(), "", hold);
        let started = std::time::Instant::now();
        match take_lock(dir.path()) {
            Err(StoreError::Locked { pid, .. }) => assert_eq!(pid, Some(4_194_304)),
            other => panic!("{other:?}"),
        }
        assert!(started.elapsed() < hold, "failed at once");
        t.join().unwrap();

        let t = held_by_another(dir.path(), "brief\n", hold);
        let started = std::time::Instant::now();
        let lock = take_lock(dir.path()).unwrap();
        assert!(started.elapsed() >= hold, "waited for the brief holder");
        t.join().unwrap();
        drop(lock);

        // A brief holder does not wait for another brief one, and marks the file so.
        let t = held_by_another(dir.path(), "brief\n", hold);
        assert!(matches!(
            take_lock_as(dir.path(), Holder::Brief),
            Err(StoreError::Locked { .. })
        ));
        t.join().unwrap();
        drop(take_lock_as(dir.path(), Holder::Brief).unwrap());
        let text = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(text, format!("{}\nbrief\n", std::process::id()));
    }
}
