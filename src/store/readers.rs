//! Registered readers: what keeps a dropped segment file on disk while a reader that may
//! still map it runs.
//!
//! # Protocol
//!
//! - A reader ([`crate::store::Archive::open`] and `reload`) takes a *shared* `flock` on
//!   `DIR/readers/<generation>` for the catalog generation it expects (the newest lock file's;
//!   created if missing), and then reads the catalog: if its generation is another one (a
//!   change committed since), it locks that one and reads the catalog again. So a reader
//!   reads the catalog once, except the first after a change. It holds the lock as long as it may map segments of that
//!   catalog (or of a later one it loads while scanning).
//! - A change that drops segments from the catalog (erase, retention, compaction) commits a
//!   catalog with a higher generation *G* first, listing the dropped files under
//!   `pending_deletion` with *G*. A file so listed is deleted only once no registered reader
//!   holds a generation below *G* (`oldest_reader`): readers that started before the change
//!   keep reading the old files, also those they had not mapped yet, and those that started
//!   after it never name them.
//! - `oldest_reader` finds the held generations by trying an exclusive lock on each file;
//!   a file it can lock whose generation is not the current one has no reader and is
//!   removed. A reader that locked such a file just before its removal finds a newer
//!   generation when it reads the catalog again, and retries.
//! - Registration is best effort: a reader that cannot create the lock file (a read-only
//!   archive) reads unregistered, and a segment dropped while it runs may then be missing
//!   when it gets to it (reported as an error naming the file; never a `SIGBUS`: files are
//!   unlinked, never truncated, so mapped ones stay readable).

use std::fs::{File, OpenOptions};
use std::path::Path;

use super::catalog::Catalog;
use super::Result;

/// The directory of the readers' lock files inside the database directory.
pub const READERS_DIR: &str = "readers";

/// A reader's registration: the shared lock on its generation's file, released on drop.
#[derive(Debug)]
pub(crate) struct ReaderLock {
    _file: File,
}

/// Loads the catalog of `dir` and registers a reader of its generation (see the module docs).
pub(crate) fn register(dir: &Path) -> Result<(Catalog, Option<ReaderLock>)> {
    let readers = dir.join(READERS_DIR);
    // Its lock files are the archive's files too.
    crate::fs::use_archive_umask(dir);
    // The newest generation with a lock file is the current one, except right after a
    // change: then the catalog says which, and the loop locks that one.
    let mut generation = newest_lock(&readers);
    loop {
        let file = std::fs::create_dir_all(&readers).and_then(|()| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(readers.join(generation.to_string()))
        });
        let file = match file.and_then(|f| f.lock_shared().map(|()| f)) {
            Ok(f) => f,
            Err(e) => {
                tracing::debug!(dir = %dir.display(), error = %e, "reading unregistered");
                return Ok((Catalog::load(dir)?, None));
            }
        };
        // Read after locking: if its generation is still the one locked, no change that
        // committed after this point can delete a file it lists.
        let catalog = Catalog::load(dir)?;
        if catalog.generation == generation {
            return Ok((catalog, Some(ReaderLock { _file: file })));
        }
        generation = catalog.generation;
    }
}

/// The highest generation that has a lock file in `readers` (0 when none).
fn newest_lock(readers: &Path) -> u64 {
    std::fs::read_dir(readers)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u64>().ok()))
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

/// The oldest catalog generation a registered reader holds (`None`: no reader), removing the
/// lock files of generations below `current` that no reader holds. Called with the writer
/// lock held.
pub(crate) fn oldest_reader(dir: &Path, current: u64) -> Option<u64> {
    let readers = dir.join(READERS_DIR);
    let entries = std::fs::read_dir(&readers).ok()?;
    let mut oldest: Option<u64> = None;
    for entry in entries.flatten() {
        let Some(generation) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        let path = entry.path();
        let held = match File::open(&path) {
            Ok(f) => match f.try_lock() {
                Ok(()) => {
                    if generation != current {
                        let _ = std::fs::remove_file(&path);
                    }
                    false
                }
                Err(_) => true,
            },
            Err(_) => false,
        };
        if held {
            oldest = Some(oldest.map_or(generation, |o| o.min(generation)));
        }
    }
    oldest
}
