//! The one resident archive reader of a [`crate::Db`] ([`Resident`]), shared by every query
//! (of a program, or of every request `weir serve` answers).
//!
//! Each query gets a handle of it ([`crate::store::Archive::handle`]): the same catalog and
//! segment cache, its own cancellation token. So the segments a query mapped stay mapped
//! for the next ones (up to the cache's capacity), instead of every query opening the
//! archive cold.
//!
//! # Freshness
//!
//! Before a handle is given out, the catalog file's identity is compared with the one the
//! resident reader was loaded from (one `stat`: its inode, length and modification time;
//! the catalog is only ever replaced by a rename, so any commit changes it). When it
//! differs (segments sealed by the pipelines `weir serve` runs, or by another process; an
//! erase, compaction or retention), the reader is replaced by one of the current catalog
//! ([`crate::store::Archive::refreshed`]), which registers for that catalog's generation
//! and unmaps the segments it no longer lists. So each query sees what was committed
//! before it started, as if it opened the archive itself; the WAL tail (events not sealed
//! yet) is read by every scan anew, as before.
//!
//! # Erased segments
//!
//! A handle holds its reader's registration (`readers/<generation>`, see
//! [`crate::store::readers`]) while its query runs, so a segment an erase drops is not deleted
//! under it. The resident reader itself holds one too: without queries, a check every
//! [`REFRESH_INTERVAL`] moves it to the current catalog, so it keeps dropped segments on
//! disk for at most that long after the change (deleted at the writer's next change, seal or
//! open, as for any reader).
//!
//! The reader is behind a mutex held only to compare the stamp and clone the handle (and,
//! after a change, to load the new catalog): never during a query.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use crate::store::{Archive, Catalog, StoreError};

/// Without queries, how often the resident reader checks for a changed catalog (see the
/// module docs: how long it may keep erased segments on disk).
pub(crate) const REFRESH_INTERVAL: Duration = Duration::from_secs(1);

/// What identifies one version of the catalog file: `None` when there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp(Option<(u64, u64, u64, Option<SystemTime>)>);

impl Stamp {
    fn of(dir: &Path) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp(
            std::fs::metadata(Catalog::path(dir))
                .ok()
                .map(|m| (m.dev(), m.ino(), m.len(), m.modified().ok())),
        )
    }
}

/// The long-lived reader of the served archive (see the module docs).
#[derive(Debug)]
pub(crate) struct Resident {
    dir: PathBuf,
    /// The reader and the stamp of the catalog it read (`None` until the archive opens).
    current: Mutex<Option<(Stamp, Archive)>>,
    opens: AtomicU64,
    refreshes: AtomicU64,
    /// Query threads running now ([`DbStats::query_threads`]).
    pub(crate) threads: Arc<AtomicUsize>,
}

/// The counters of a [`crate::Db`] ([`crate::Db::stats`]), also in `weir serve`'s
/// `/api/v1/status` (as `reader`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct DbStats {
    /// Times the archive was opened (once, unless opening failed).
    pub opens: u64,
    /// Times the reader moved to a changed catalog.
    pub refreshes: u64,
    /// Segments mapped since the archive was opened (a segment read from the cache again
    /// does not count).
    pub segments_mapped: u64,
    /// Segments mapped now.
    pub segments_cached: usize,
    /// The generation of the catalog read: bumped by each change that drops segments (an
    /// erase, retention, compaction), not by a commit of new ones (see `refreshes`).
    pub generation: u64,
    /// Threads of queries read as batches or streams running now (a dropped
    /// [`crate::Batches`] waits for its thread to end).
    pub query_threads: usize,
}

impl Resident {
    /// The reader of `dir`, opened at its first use.
    pub(crate) fn new(dir: PathBuf) -> Resident {
        Resident {
            dir,
            current: Mutex::new(None),
            opens: AtomicU64::new(0),
            refreshes: AtomicU64::new(0),
            threads: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A handle of the reader of the current catalog, for one query (opening the archive, or
    /// moving to a changed catalog, first).
    pub(crate) fn handle(&self) -> Result<Archive, StoreError> {
        // Taken before the catalog is read: a change in between is read again next time.
        let stamp = Stamp::of(&self.dir);
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        match current.as_mut() {
            Some((seen, archive)) if *seen == stamp => Ok(archive.handle()),
            Some((seen, archive)) => {
                let next = archive.refreshed()?;
                self.refreshes.fetch_add(1, Ordering::Relaxed);
                let out = next.handle();
                (*seen, *archive) = (stamp, next);
                Ok(out)
            }
            None => {
                let archive = Archive::open(&self.dir)?;
                self.opens.fetch_add(1, Ordering::Relaxed);
                let out = archive.handle();
                *current = Some((stamp, archive));
                Ok(out)
            }
        }
    }

    /// Moves to a changed catalog if the archive is open (the periodic check).
    fn refresh(&self) {
        let open = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        if open {
            if let Err(e) = self.handle() {
                tracing::debug!(dir = %self.dir.display(), error = %e, "refreshing the reader");
            }
        }
    }

    /// Checks for a changed catalog every [`REFRESH_INTERVAL`] while `resident` lives, on
    /// the current tokio runtime (none: only queries refresh it).
    pub(crate) fn refresh_in_background(resident: &Arc<Resident>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak: Weak<Resident> = Arc::downgrade(resident);
        runtime.spawn(async move {
            let mut tick = tokio::time::interval(REFRESH_INTERVAL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(resident) = weak.upgrade() else {
                    return;
                };
                // Loading a catalog reads a file: not on the runtime's threads.
                let done = tokio::task::spawn_blocking(move || resident.refresh()).await;
                if done.is_err() {
                    return;
                }
            }
        });
    }

    /// The archive's directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The reader's counters.
    pub(crate) fn stats(&self) -> DbStats {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let archive = current.as_ref().map(|(_, a)| a);
        DbStats {
            opens: self.opens.load(Ordering::Relaxed),
            refreshes: self.refreshes.load(Ordering::Relaxed),
            segments_mapped: archive.map_or(0, Archive::segments_mapped),
            segments_cached: archive.map_or(0, Archive::cached_segments),
            generation: archive.map_or(0, |a| a.catalog().generation),
            query_threads: self.threads.load(Ordering::SeqCst),
        }
    }
}
