//! Retro matching in the background of a writer: a set added or changed since its last
//! retro match ([`super::retro::needs_retro`]) is matched against the events below the
//! writer's next ID on a thread of its own, and the writer commits the sightings it finds a
//! batch at a time with its next commits ([`super::LiveMatch`]); when all are committed, the
//! set's retro marker is written. Each sighting is recorded once: the thread skips those the
//! archive holds (live ones, or those of an earlier, interrupted match).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, TryRecvError};

use crate::intel::{retro_match, IndicatorSet, Matcher};
use crate::store::Archive;

use super::retro::{known_keys, retro_row, sighting_key, write_retro_marker, RETRO_BATCH};
use super::sighting::SightingRow;

/// What the thread sends.
enum Msg {
    Row(SightingRow),
    Done,
    Failed(String),
}

/// One set's retro match running in the background.
pub(crate) struct RetroJob {
    /// The set.
    pub set: String,
    /// Its version being matched.
    pub version: u64,
    /// Events below this ID are matched.
    pub through: u64,
    rx: Receiver<Msg>,
}

/// What draining a job found.
pub(crate) enum Drained {
    /// Rows, and the job goes on.
    More,
    /// The job sent its last row.
    Done,
    /// The job failed (logged); it will run again later.
    Failed,
}

impl RetroJob {
    /// Starts matching version `version` of set `set` of the archive `db` against the
    /// events below `through`.
    pub fn start(db: &Path, set: &str, version: u64, through: u64) -> RetroJob {
        let (tx, rx) = sync_channel(RETRO_BATCH);
        let (db, name): (PathBuf, String) = (db.to_path_buf(), set.to_string());
        let spawned = std::thread::Builder::new()
            .name(format!("weir-retro-{set}"))
            .spawn(move || {
                let run = || -> Result<bool, String> {
                    let Some(set) = IndicatorSet::load(&db, &name).map_err(|e| e.to_string())?
                    else {
                        return Ok(false);
                    };
                    if set.version() != version {
                        // Changed again: the newer version gets its own match.
                        return Ok(false);
                    }
                    let now = super::sighting::now_ns();
                    let matcher = Matcher::new(&set, now);
                    let archive = Archive::open(&db).map_err(|e| e.to_string())?;
                    let mut known = known_keys(&archive, &db, &name).map_err(|e| e.to_string())?;
                    let mut gone = false;
                    let stats = retro_match(
                        &archive,
                        &matcher,
                        None,
                        |s| -> Result<(), crate::query::QueryError> {
                            if gone || s.id >= through || !known.insert(sighting_key(&s)) {
                                return Ok(());
                            }
                            // The writer went away (closed, or the set changed): stop sending.
                            gone = tx.send(Msg::Row(retro_row(&name, &s, now))).is_err();
                            Ok(())
                        },
                    )
                    .map_err(|e| e.to_string())?;
                    if !stats.errors.is_empty() {
                        return Err(format!("{} damaged parts skipped", stats.errors.len()));
                    }
                    Ok(!gone)
                };
                let msg = match run() {
                    Ok(true) => Msg::Done,
                    Ok(false) => return,
                    Err(e) => Msg::Failed(e),
                };
                let _ = tx.send(msg);
            });
        if let Err(e) = spawned {
            tracing::warn!(set, "cannot start a retro match: {e}");
        }
        RetroJob {
            set: set.to_string(),
            version,
            through,
            rx,
        }
    }

    /// Moves up to `max` of the rows found so far into `out`, waiting up to `wait` (if any)
    /// for the first of them (or the job's end).
    pub fn drain(
        &self,
        max: usize,
        wait: Option<std::time::Duration>,
        out: &mut Vec<SightingRow>,
    ) -> Drained {
        use std::sync::mpsc::RecvTimeoutError;
        for n in 0..max {
            let msg = match wait.filter(|_| n == 0) {
                Some(wait) => self.rx.recv_timeout(wait).map_err(|e| match e {
                    RecvTimeoutError::Timeout => TryRecvError::Empty,
                    RecvTimeoutError::Disconnected => TryRecvError::Disconnected,
                }),
                None => self.rx.try_recv(),
            };
            match msg {
                Ok(Msg::Row(r)) => out.push(r),
                Ok(Msg::Done) => return Drained::Done,
                Ok(Msg::Failed(e)) => {
                    tracing::warn!(set = %self.set, "the background retro match failed: {e}");
                    return Drained::Failed;
                }
                Err(TryRecvError::Empty) => return Drained::More,
                // The thread ended without a word: the set changed or vanished.
                Err(TryRecvError::Disconnected) => return Drained::Failed,
            }
        }
        Drained::More
    }

    /// Writes the marker of a job whose rows are all committed.
    pub fn mark(db: &Path, set: &str, version: u64, through: u64) {
        match write_retro_marker(db, set, version, through) {
            Ok(()) => tracing::info!(set, version, through, "background retro match done"),
            Err(e) => tracing::warn!(set, "cannot write the retro marker: {e}"),
        }
    }
}
