//! Retro matching by a server that writes nothing ([`IdleRetro`]): `weir serve` without a
//! pipeline that fills its archive still matches a set added or changed (through its API or
//! `weir intel add`) against the archive's past.
//!
//! A thread polls the set files every [`IDLE_POLL`] (one directory listing and one `stat` per
//! set; a set is read again only when its stamp changes, `stamp.rs`). A set whose version has
//! no retro marker ([`needs_retro`]) is matched as `weir intel match NAME` does it ([`RetroRecorder`]:
//! each sighting once, the marker written at the end), with the archive's lock taken as a
//! *brief* holder: a `weir import` that starts meanwhile waits for the match to end instead of
//! failing (see [`crate::store`]). While another process holds the lock (an import), the set
//! is tried again every [`LOCKED_RETRY`]: an import with `--retro` matches it itself, and one
//! without leaves it to this thread once it ends. A failure (an archive that cannot be written, a
//! damaged part) is logged and tried again after a minute (`RETRO_RETRY`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::intel::{retro_match, IndicatorSet, Matcher};
use crate::store::{Archive, Holder, StoreError};

use super::retro::{needs_retro, RecordError, RetroRecorder, RETRO_RETRY};
use super::stamp::{stamp, Stamp};

/// How often the idle retro matcher looks at the set files.
pub const IDLE_POLL: Duration = Duration::from_secs(1);

/// How long a set waits after it met the lock of another writer (each try opens the archive).
pub const LOCKED_RETRY: Duration = Duration::from_secs(5);

/// The idle retro matcher's thread; told to stop on drop. It is not waited for: a match it
/// is running ends with the process, as after a `kill -9` (each sighting is still recorded
/// once, and the match runs again at the next start: see [`RetroRecorder`]).
#[derive(Debug)]
pub struct IdleRetro {
    stop: Arc<AtomicBool>,
}

/// What the thread knows of one set.
struct Known {
    stamp: Stamp,
    version: u64,
    /// Matched (or found matched) at this version, or not readable: nothing to do until the
    /// file changes.
    done: bool,
    /// Not to be tried again before this (after a failure).
    not_before: Option<Instant>,
}

impl IdleRetro {
    /// Starts the thread for the archive `db`.
    pub fn start(db: &Path) -> std::io::Result<IdleRetro> {
        let stop = Arc::new(AtomicBool::new(false));
        let (db, flag) = (db.to_path_buf(), stop.clone());
        std::thread::Builder::new()
            .name("weir-idle-retro".into())
            .spawn(move || {
                let mut known = HashMap::new();
                while !flag.load(Ordering::Relaxed) {
                    poll(&db, &mut known, &flag);
                    // Sleeps in short steps, so that a stop is seen soon.
                    let until = Instant::now() + IDLE_POLL;
                    while Instant::now() < until && !flag.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            })?;
        Ok(IdleRetro { stop })
    }
}

impl Drop for IdleRetro {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One look at the set files: matches each set that needs it, one after the other.
fn poll(db: &Path, known: &mut HashMap<String, Known>, stop: &AtomicBool) {
    let names = match IndicatorSet::names(db) {
        Ok(n) => n,
        Err(e) => {
            tracing::debug!("idle retro matching cannot list the sets: {e}");
            return;
        }
    };
    known.retain(|n, _| names.contains(n));
    for name in names {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let Some(now) = stamp(&IndicatorSet::path(db, &name)) else {
            continue;
        };
        let k = match known.get_mut(&name) {
            Some(k) if k.stamp == now => k,
            _ => {
                // New or changed: its version, from the file (stamped before it is read). A
                // file that cannot be read is passed over until it changes (warned once).
                let (version, done) = match IndicatorSet::load(db, &name) {
                    Ok(Some(set)) => (set.version(), false),
                    Ok(None) => continue,
                    Err(e) => {
                        tracing::warn!(set = %name, "idle retro matching cannot read the set: {e}");
                        (0, true)
                    }
                };
                known.insert(
                    name.clone(),
                    Known {
                        stamp: now,
                        version,
                        done,
                        not_before: None,
                    },
                );
                match known.get_mut(&name) {
                    Some(k) => k,
                    None => continue,
                }
            }
        };
        if k.done || k.not_before.is_some_and(|t| Instant::now() < t) {
            continue;
        }
        if !needs_retro(db, &name, k.version) {
            k.done = true;
            continue;
        }
        match match_set(db, &name, k.version) {
            Ok(Some((stored, already))) => {
                tracing::info!(set = %name, version = k.version, stored, already, "idle retro match done");
                k.done = true;
            }
            // Changed since it was stamped: the next poll sees the new stamp.
            Ok(None) => {}
            Err(RecordError::Store(StoreError::Locked { pid, .. })) => {
                tracing::debug!(set = %name, ?pid, "the archive's writer will match the set");
                k.not_before = Some(Instant::now() + LOCKED_RETRY);
            }
            Err(e) => {
                tracing::warn!(set = %name, "idle retro match failed (tried again later): {e}");
                k.not_before = Some(Instant::now() + RETRO_RETRY);
            }
        }
    }
}

/// Matches version `version` of set `name` against the whole archive and records its
/// sightings: (sightings written, sightings recorded before); `None` when the set is gone
/// or at another version now.
fn match_set(db: &Path, name: &str, version: u64) -> Result<Option<(u64, u64)>, RecordError> {
    let set = match IndicatorSet::load(db, name) {
        Ok(Some(set)) if set.version() == version => set,
        Ok(_) => return Ok(None),
        Err(e) => {
            tracing::warn!(set = %name, "idle retro matching cannot read the set: {e}");
            return Ok(None);
        }
    };
    let now = super::sighting::now_ns();
    let matcher = Matcher::new(&set, now);
    let mut recorder = RetroRecorder::open_as(db, name, Holder::Brief)?;
    // Opened after the writer: it sees the events its log replay committed.
    let archive = Archive::open(db)?;
    let stats = retro_match(&archive, &matcher, None, |s| {
        recorder.record(&s, now).map(|_| ())
    })?;
    // Damaged parts were skipped: what was found is committed, but no marker is written, so
    // that a repaired archive is matched again.
    let whole = stats.errors.is_empty().then_some(version);
    let counts = recorder.finish(whole)?;
    match stats.errors.into_iter().next() {
        Some(e) => Err(RecordError::Query(e)),
        None => Ok(Some(counts)),
    }
}
