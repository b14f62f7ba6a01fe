//! Recording the sightings of a retro match ([`crate::intel::retro_match`]) as
//! `weir.sighting` events, each once.
//!
//! A retro match may meet events that live matching already reported (the set was loaded by
//! a running import), and it may be interrupted and run again. So before it writes, the
//! recorder reads the keys of the sightings the archive already holds for the set (event ID,
//! indicator, field: 16 bytes each in memory), and writes only the others, in batches of
//! [`RETRO_BATCH`] sightings, each committed on its own: an interrupted run leaves a prefix of
//! its sightings, and the next run writes the rest. It holds the archive's writer lock
//! while it runs (a running import must stop first; printing matches needs no lock).
//!
//! # The retro marker
//!
//! When a retro match of a set has recorded all its sightings, the file
//! `DIR/intel/NAME.retro` (JSON, written atomically) says so: `{"format": 1, "version": V,
//! "through": ID}`: every event below ID was matched against version V of the set, and the
//! events from ID on are matched live by the writers ([`super::live`]). A set whose marker is
//! missing or names another version (it was added or changed since) is what the writers of
//! `weir serve`'s pipelines match in the background ([`super::LiveMatch::with_background_retro`]).
//! A marker that cannot be read is taken as missing: the match runs again, and records
//! nothing twice.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::path::Path;

use crate::intel::Sighting;
use crate::query::{Query, QueryError};
use crate::store::{Archive, Holder, Store, StoreError, StoreOptions};
use crate::value::{DecodeError, Value};

use super::sighting::{Matcher, Mode, SightingBatch, SightingRow, SIGHTING_SCHEMA};

/// Sightings a retro match commits at a time.
pub const RETRO_BATCH: usize = 4096;

/// How long a failed retro match in the background (beside a writer, or of an idle server)
/// waits before it runs again.
pub(crate) const RETRO_RETRY: std::time::Duration = std::time::Duration::from_secs(60);

/// The suffix of a set's retro marker (see the module docs).
const MARKER_SUFFIX: &str = ".retro";

/// A set's retro marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RetroMarker {
    /// 1.
    pub format: u32,
    /// The set's version that was matched.
    pub version: u64,
    /// Every event below this ID was matched.
    pub through: u64,
}

/// The retro marker of set `set` of the archive `db`, if it has a readable one.
pub fn retro_marker(db: &Path, set: &str) -> Option<RetroMarker> {
    let path = crate::intel::set::intel_dir(db).join(format!("{set}{MARKER_SUFFIX}"));
    let m: RetroMarker = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    (m.format == 1).then_some(m)
}

/// Writes the retro marker of set `set` (see the module docs).
pub fn write_retro_marker(
    db: &Path,
    set: &str,
    version: u64,
    through: u64,
) -> Result<(), crate::fs::FsError> {
    let m = RetroMarker {
        format: 1,
        version,
        through,
    };
    let bytes = serde_json::to_vec(&m).unwrap_or_default();
    crate::fs::write_atomic(
        &crate::intel::set::intel_dir(db),
        &format!("{set}{MARKER_SUFFIX}"),
        &bytes,
        true,
    )?;
    Ok(())
}

/// Whether set `set` (at `version`) still needs a retro match.
pub fn needs_retro(db: &Path, set: &str, version: u64) -> bool {
    retro_marker(db, set).is_none_or(|m| m.version != version)
}

/// The keys of the sightings of set `set` that `db`'s archive holds.
pub(crate) fn known_keys(
    archive: &Archive,
    db: &Path,
    set: &str,
) -> Result<HashSet<u128>, RecordError> {
    let mut known = HashSet::new();
    let recorded = crate::query::context::archive_schemas(archive)
        .iter()
        .any(|s| s.name == SIGHTING_SCHEMA);
    if recorded {
        read_keys(archive, db, set, &mut known)?;
    }
    Ok(known)
}

/// The key of sighting `s` (see [`RetroRecorder`]).
pub(crate) fn sighting_key(s: &Sighting) -> u128 {
    key(s.id, &s.indicator.value, &s.field)
}

/// The `weir.sighting` row of retro sighting `s` of set `set`; `now`: its time when the
/// evidence has none.
pub(crate) fn retro_row(set: &str, s: &Sighting, now: i64) -> SightingRow {
    let i = &s.indicator;
    SightingRow {
        ts: s.time.unwrap_or(now),
        event_id: s.id,
        event_type: s.schema.clone(),
        matcher: Matcher::Intel,
        name: set.to_string(),
        indicator: i.value.clone(),
        indicator_type: i.kind.name().to_string(),
        field: Some(s.field.clone()),
        value: Some(s.value.clone()),
        source: i.meta.source.clone(),
        description: i.meta.description.clone(),
        confidence: i.meta.confidence,
        mode: Mode::Retro,
    }
}

/// What went wrong while recording sightings.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The archive could not be opened or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The sightings already recorded could not be read.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// A recorded sighting could not be decoded.
    #[error("a recorded sighting of {db}: {source}")]
    Decode {
        /// The archive.
        db: String,
        /// Why.
        source: DecodeError,
    },
}

/// The key of a sighting: its evidence's ID, and a hash of its indicator and field.
fn key(event_id: u64, indicator: &str, field: &str) -> u128 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (indicator, field).hash(&mut h);
    (u128::from(event_id) << 64) | u128::from(h.finish())
}

/// Adds the keys of the sightings of set `set` that `archive` (of `db`) holds to `known`.
fn read_keys(
    archive: &Archive,
    db: &Path,
    set: &str,
    known: &mut HashSet<u128>,
) -> Result<(), RecordError> {
    let text = format!(
        "#type == {} && matcher == \"intel\" && name == {}",
        crate::query::literal::quote(SIGHTING_SCHEMA),
        crate::query::literal::quote(set)
    );
    let query = Query::parse(&text).map_err(QueryError::from)?;
    let decode = |source| RecordError::Decode {
        db: db.display().to_string(),
        source,
    };
    for batch in query.search(archive)? {
        let batch = batch?;
        let schema = batch.schema();
        let at = |name: &str| schema.fields.iter().position(|f| f.name == name);
        let (Some(id), Some(ind), Some(field)) = (at("event_id"), at("indicator"), at("field"))
        else {
            continue;
        };
        let types: Vec<_> = schema.fields.iter().map(|f| f.ty.clone()).collect();
        for row in batch.rows() {
            let values = crate::value::decode_row(row, &types).map_err(decode)?;
            let text = |v: &Value| match v {
                Value::String(s) => String::from_utf8_lossy(s).into_owned(),
                _ => String::new(),
            };
            if let Value::Count(e) = values[id] {
                known.insert(key(e, &text(&values[ind]), &text(&values[field])));
            }
        }
    }
    Ok(())
}

/// Writes the new sightings of one set's retro match (see the module docs).
#[derive(Debug)]
pub struct RetroRecorder {
    store: Store,
    db: std::path::PathBuf,
    /// The writer's first ID: every event the match can see is below it.
    through: u64,
    set: String,
    known: HashSet<u128>,
    pending: SightingBatch,
    stored: u64,
    already: u64,
}

impl RetroRecorder {
    /// Opens the archive `db` for writing and reads the keys of set `set`'s sightings.
    pub fn open(db: &Path, set: &str) -> Result<RetroRecorder, RecordError> {
        RetroRecorder::open_as(db, set, Holder::Writer)
    }

    /// [`RetroRecorder::open`] with the archive's lock taken for `holder` (a brief job's lets
    /// a writer that comes meanwhile wait instead of fail).
    pub(crate) fn open_as(
        db: &Path,
        set: &str,
        holder: Holder,
    ) -> Result<RetroRecorder, RecordError> {
        // A reader first: a directory without an archive is refused, not made one.
        let archive = Archive::open(db)?;
        let (store, _) = Store::open_writer_as(db, StoreOptions::default(), holder)?;
        let known = known_keys(&archive, db, set)?;
        Ok(RetroRecorder {
            through: store.next_id(),
            store,
            db: db.to_path_buf(),
            set: set.to_string(),
            known,
            pending: SightingBatch::default(),
            stored: 0,
            already: 0,
        })
    }

    /// Records `s` unless the archive holds it already; whether it is new. `now`: the time
    /// of a sighting whose evidence has none.
    pub fn record(&mut self, s: &Sighting, now: i64) -> Result<bool, RecordError> {
        if !self.known.insert(sighting_key(s)) {
            self.already += 1;
            return Ok(false);
        }
        self.pending.push(&retro_row(&self.set, s, now));
        if self.pending.len() >= RETRO_BATCH {
            self.commit()?;
        }
        Ok(true)
    }

    fn commit(&mut self) -> Result<(), RecordError> {
        if let Some(batch) = self.pending.finish() {
            let n = batch.len() as u64;
            self.store.append(batch)?;
            self.store.flush()?;
            self.stored += n;
        }
        Ok(())
    }

    /// Commits what is pending, closes the archive and, for a match of the whole archive
    /// (`whole`: no `--since`) of set version `version`, writes the retro marker: (sightings
    /// written, sightings that were recorded before).
    pub fn finish(mut self, whole: Option<u64>) -> Result<(u64, u64), RecordError> {
        self.commit()?;
        self.store.close()?;
        if let Some(version) = whole {
            write_retro_marker(&self.db, &self.set, version, self.through)
                .map_err(|e| RecordError::Store(e.into()))?;
        }
        Ok((self.stored, self.already))
    }
}
