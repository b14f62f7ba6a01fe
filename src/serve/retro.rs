//! Retro matching in the background of `weir serve` when none of its pipelines writes to the
//! archive: every [`RETRO_CHECK`], each indicator set added or changed since its last retro
//! match ([`crate::detect::retro::needs_retro`]) is matched against the whole archive and its
//! sightings recorded ([`RetroRecorder`]), when the archive's writer lock is free (another
//! process importing into it has the lock: the match waits for the next check). When a
//! pipeline of the server writes to the archive, its writer does this instead
//! ([`crate::detect::LiveMatch::with_background_retro`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::detect::retro::{needs_retro, RecordError, RetroRecorder};
use crate::intel::{retro_match, IndicatorSet, Matcher};
use crate::store::{Archive, StoreError};

/// How often the server looks for sets to match.
pub const RETRO_CHECK: Duration = Duration::from_secs(2);

/// Matches each set that needs it, if the archive's lock is free.
fn check(db: &Path) {
    let names = match IndicatorSet::names(db) {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!("background retro matching: {e}");
            return;
        }
    };
    for name in names {
        let set = match IndicatorSet::load(db, &name) {
            Ok(Some(s)) => s,
            Ok(None) => continue,
            Err(e) => {
                tracing::warn!(set = %name, "background retro matching: {e}");
                continue;
            }
        };
        if !needs_retro(db, &name, set.version()) {
            continue;
        }
        let run = || -> Result<(u64, u64), RecordError> {
            let archive = Archive::open(db)?;
            let mut recorder = RetroRecorder::open(db, &name)?;
            let now = crate::detect::sighting::now_ns();
            let matcher = Matcher::new(&set, now);
            retro_match(&archive, &matcher, None, |s| {
                recorder.record(&s, now).map(|_| ())
            })?;
            recorder.finish(Some(set.version()))
        };
        match run() {
            Ok((stored, already)) => tracing::info!(
                set = %name,
                version = set.version(),
                stored,
                already,
                "background retro match done"
            ),
            // Another process writes to the archive: next time.
            Err(RecordError::Store(StoreError::Locked { .. })) => return,
            Err(e) => tracing::warn!(set = %name, "background retro match failed: {e}"),
        }
    }
}

/// Looks for sets to match every [`RETRO_CHECK`] (see the module docs) until `stop`.
pub async fn run(db: PathBuf, stop: CancellationToken) {
    loop {
        let d = db.clone();
        let _ = tokio::task::spawn_blocking(move || check(&d)).await;
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(RETRO_CHECK) => {}
        }
    }
}
