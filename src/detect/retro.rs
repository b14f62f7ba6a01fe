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

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::path::Path;

use crate::intel::Sighting;
use crate::query::{Query, QueryError};
use crate::store::{Archive, Store, StoreError, StoreOptions};
use crate::value::{DecodeError, Value};

use super::sighting::{Matcher, Mode, SightingBatch, SightingRow, SIGHTING_SCHEMA};

/// Sightings a retro match commits at a time.
pub const RETRO_BATCH: usize = 4096;

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
    set: String,
    known: HashSet<u128>,
    pending: SightingBatch,
    stored: u64,
    already: u64,
}

impl RetroRecorder {
    /// Opens the archive `db` for writing and reads the keys of set `set`'s sightings.
    pub fn open(db: &Path, set: &str) -> Result<RetroRecorder, RecordError> {
        // A reader first: a directory without an archive is refused, not made one.
        let archive = Archive::open(db)?;
        let (store, _) = Store::open_writer(db, StoreOptions::default())?;
        let mut known = HashSet::new();
        let recorded = crate::query::context::archive_schemas(&archive)
            .iter()
            .any(|s| s.name == SIGHTING_SCHEMA);
        if recorded {
            read_keys(&archive, db, set, &mut known)?;
        }
        Ok(RetroRecorder {
            store,
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
        if !self.known.insert(key(s.id, &s.indicator.value, &s.field)) {
            self.already += 1;
            return Ok(false);
        }
        let i = &s.indicator;
        self.pending.push(&SightingRow {
            ts: s.time.unwrap_or(now),
            event_id: s.id,
            event_type: s.schema.clone(),
            matcher: Matcher::Intel,
            name: self.set.clone(),
            indicator: i.value.clone(),
            indicator_type: i.kind.name().to_string(),
            field: Some(s.field.clone()),
            value: Some(s.value.clone()),
            source: i.meta.source.clone(),
            description: i.meta.description.clone(),
            confidence: i.meta.confidence,
            mode: Mode::Retro,
        });
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

    /// Commits what is pending and closes the archive: (sightings written, sightings that
    /// were recorded before).
    pub fn finish(mut self) -> Result<(u64, u64), RecordError> {
        self.commit()?;
        self.store.close()?;
        Ok((self.stored, self.already))
    }
}
