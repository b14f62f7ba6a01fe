//! Live matching: the [`CommitHook`] that matches every group of batches a writer commits
//! against the archive's indicator sets and the loaded Sigma rules, and commits the
//! sightings with them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::batch::Batch;
use crate::intel::matcher::SchemaPlan;
use crate::intel::{IndicatorSet, Matcher};
use crate::query::sigma::{self, SigmaError};
use crate::query::Program;
use crate::query::Query;
use crate::store::CommitHook;
use crate::types::{Schema, SchemaRef};

use super::background::{Drained, RetroJob};
use super::retro::{needs_retro, RETRO_BATCH, RETRO_RETRY};
use super::sighting::{
    now_ns, Matcher as Kind, Mode, SightingBatch, SightingRow, OWN_SCHEMA_PREFIX,
};
use super::stamp::{stamp, Stamp};

/// How long a closing writer waits for a background retro match's next row before it looks
/// at the other matches.
const FINISH_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// A set as loaded, with its plans per schema.
struct LoadedSet {
    name: String,
    version: u64,
    stamp: Stamp,
    matcher: Matcher,
    plans: Vec<(SchemaRef, SchemaPlan)>,
}

/// A Sigma rule, compiled against the schemas seen so far that its logsource names.
struct LiveRule {
    file: String,
    yaml: String,
    /// The rule's `id`, or its file's name.
    name: String,
    title: String,
    /// The schemas its logsource selects.
    schemas: Vec<String>,
    /// The compiled query and the schemas it was typed against.
    query: Query,
    typed_with: Vec<String>,
    programs: Vec<(SchemaRef, Arc<Program>)>,
}

/// Live matching of one archive (see the [module docs](super)).
pub struct LiveMatch {
    db: PathBuf,
    sets: Vec<LoadedSet>,
    rules: Vec<LiveRule>,
    /// The schemas of the batches seen, by name (what rules are typed against).
    seen: BTreeMap<String, Schema>,
    /// Whether sets added or changed are matched against the archive's past in the
    /// background ([`LiveMatch::with_background_retro`]).
    retro: bool,
    /// The background retro matches running.
    jobs: Vec<RetroJob>,
    /// Sets whose retro match is to start (not before the instant).
    pending: Vec<(String, std::time::Instant)>,
    /// Retro matches whose last rows went into the previous commit: (set, version, through).
    markers_due: Vec<(String, u64, u64)>,
    /// Whether the input ended and the retro matches are being finished.
    finishing: bool,
}

impl std::fmt::Debug for LiveMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveMatch")
            .field("db", &self.db)
            .field(
                "sets",
                &self.sets.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .field(
                "rules",
                &self.rules.iter().map(|r| &r.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl LiveMatch {
    /// Live matching for the archive `db`: its indicator sets (`DIR/intel/`, loaded now and
    /// again whenever one changes) and the Sigma rules of `rule_paths` (files, or
    /// directories of `*.yml`/`*.yaml`), each checked now: a rule weir cannot run is an error
    /// naming its file and line.
    pub fn open(db: &Path, rule_paths: &[PathBuf]) -> Result<LiveMatch, SigmaError> {
        let mut rules = Vec::new();
        for path in sigma::rule_files(rule_paths)? {
            let file = path.display().to_string();
            let yaml = sigma::read_rule(&path)?;
            let schemas = sigma::rule_schemas(&file, &yaml)?;
            // Compiled against no schema: every error of the rule itself shows now.
            let rule = sigma::compile(&file, &yaml, &BTreeMap::<String, Schema>::new())?;
            let query = Query::parse(&rule.expression).map_err(|e| SigmaError::Read {
                file: file.clone(),
                message: e.to_string(),
            })?;
            let name = if rule.id.is_empty() {
                path.file_stem()
                    .map_or(file.clone(), |s| s.to_string_lossy().into_owned())
            } else {
                rule.id.clone()
            };
            rules.push(LiveRule {
                file,
                yaml,
                name,
                title: rule.title,
                schemas,
                query,
                typed_with: Vec::new(),
                programs: Vec::new(),
            });
        }
        let mut live = LiveMatch {
            db: db.to_path_buf(),
            sets: Vec::new(),
            rules,
            seen: BTreeMap::new(),
            retro: false,
            jobs: Vec::new(),
            pending: Vec::new(),
            markers_due: Vec::new(),
            finishing: false,
        };
        live.refresh_sets();
        Ok(live)
    }

    /// Also matches each set added or changed (since its last retro match) against the
    /// events before it was loaded, in the background (`background.rs`); what
    /// `weir serve` does for its pipelines.
    pub fn with_background_retro(mut self) -> LiveMatch {
        self.retro = true;
        let now = std::time::Instant::now();
        for s in &self.sets {
            if needs_retro(&self.db, &s.name, s.version) {
                self.pending.push((s.name.clone(), now));
            }
        }
        self
    }

    /// Starts the retro matches that are due, of the events below `through`.
    fn start_jobs(&mut self, through: u64) {
        let now = std::time::Instant::now();
        let mut later = Vec::new();
        for (name, not_before) in std::mem::take(&mut self.pending) {
            if not_before > now {
                later.push((name, not_before));
                continue;
            }
            let Some(set) = self.sets.iter().find(|s| s.name == name) else {
                continue; // removed
            };
            if self.jobs.iter().any(|j| j.set == name) || !needs_retro(&self.db, &name, set.version)
            {
                continue;
            }
            tracing::info!(set = %name, version = set.version, through, "background retro match started");
            self.jobs
                .push(RetroJob::start(&self.db, &name, set.version, through));
        }
        self.pending = later;
    }

    /// Moves what the retro matches found into `out` (at most [`RETRO_BATCH`] a commit),
    /// waiting up to `wait` for each job's first row.
    fn drain_jobs(&mut self, out: &mut SightingBatch, wait: Option<std::time::Duration>) {
        let mut rows = Vec::new();
        let mut jobs = std::mem::take(&mut self.jobs);
        jobs.retain(|j| {
            let room = RETRO_BATCH.saturating_sub(rows.len());
            match j.drain(room, wait, &mut rows) {
                Drained::More => true,
                Drained::Done => {
                    self.markers_due.push((j.set.clone(), j.version, j.through));
                    false
                }
                Drained::Failed => {
                    self.pending
                        .push((j.set.clone(), std::time::Instant::now() + RETRO_RETRY));
                    false
                }
            }
        });
        self.jobs = jobs;
        for r in &rows {
            out.push(r);
        }
    }

    /// Writes the markers of the retro matches whose last rows have committed.
    fn write_due_markers(&mut self) {
        for (set, version, through) in std::mem::take(&mut self.markers_due) {
            RetroJob::mark(&self.db, &set, version, through);
        }
    }

    /// The names of the sets loaded now.
    pub fn set_names(&self) -> Vec<&str> {
        self.sets.iter().map(|s| s.name.as_str()).collect()
    }

    /// How many rules are loaded.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// Brings the loaded sets up to date with the set files: a changed file is loaded again,
    /// a removed one dropped. A file that cannot be read keeps its previous version loaded
    /// (with a warning), so a torn copy never turns matching off.
    fn refresh_sets(&mut self) {
        let names = match IndicatorSet::names(&self.db) {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!("live matching keeps its sets: {e}");
                return;
            }
        };
        self.sets.retain(|s| names.contains(&s.name));
        for name in names {
            let path = IndicatorSet::path(&self.db, &name);
            // Stamped before it is read: a change during the read shows as a new stamp
            // next time, never as an old one over new content.
            let Some(now) = stamp(&path) else { continue };
            let at = self.sets.iter().position(|s| s.name == name);
            if at.is_some_and(|i| self.sets[i].stamp == now) {
                continue;
            }
            let set = match IndicatorSet::load(&self.db, &name) {
                Ok(Some(set)) => set,
                Ok(None) => {
                    if let Some(i) = at {
                        self.sets.remove(i);
                    }
                    continue;
                }
                Err(e) => {
                    tracing::warn!(set = %name, "live matching keeps the set as it was: {e}");
                    continue;
                }
            };
            let version = set.version();
            if self.retro && needs_retro(&self.db, &name, version) {
                // A running match of an earlier version stops (its thread sees the channel
                // gone); this version's starts at the next commit.
                self.jobs.retain(|j| j.set != name);
                self.pending.retain(|(n, _)| *n != name);
                self.pending.push((name.clone(), std::time::Instant::now()));
            }
            let loaded = LoadedSet {
                name: name.clone(),
                version,
                stamp: now,
                matcher: Matcher::new(&set, now_ns()),
                plans: Vec::new(),
            };
            tracing::info!(set = %name, version = set.version(), indicators = set.len(), "live matching loaded a set");
            match at {
                Some(i) => self.sets[i] = loaded,
                None => self.sets.push(loaded),
            }
        }
    }

    /// The sightings of the rows of `batch`, whose first event has ID `first_id`.
    fn match_batch(
        &mut self,
        batch: &Batch,
        first_id: u64,
        now: i64,
        out: &mut SightingBatch,
    ) -> Result<(), String> {
        let schema = batch.schema();
        for set in &mut self.sets {
            let at = match set.plans.iter().position(|(s, _)| Arc::ptr_eq(s, schema)) {
                Some(at) => at,
                None => {
                    set.plans.push((schema.clone(), set.matcher.plan(schema)));
                    set.plans.len() - 1
                }
            };
            let plan = &set.plans[at].1;
            if plan.is_empty() {
                continue;
            }
            let matcher = &set.matcher;
            let name = &set.name;
            matcher
                .match_rows(batch, plan, |row, time, hits| {
                    let mut seen: Vec<(usize, usize)> = Vec::new();
                    for h in hits.drain(..) {
                        // One sighting per indicator and field (a container may hold a value
                        // twice).
                        if seen.contains(&(h.indicator, h.field)) {
                            continue;
                        }
                        seen.push((h.indicator, h.field));
                        let i = matcher.indicator(h.indicator);
                        if i.expired(now) {
                            continue;
                        }
                        out.push(&SightingRow {
                            ts: time.unwrap_or(now),
                            event_id: first_id + row as u64,
                            event_type: schema.name.clone(),
                            matcher: Kind::Intel,
                            name: name.clone(),
                            indicator: i.value.to_string(),
                            indicator_type: i.kind.name().to_string(),
                            field: Some(schema.fields[h.field].name.clone()),
                            value: Some(h.value),
                            source: i.meta.source.map(str::to_string),
                            description: i.meta.description.map(str::to_string),
                            confidence: i.meta.confidence,
                            mode: Mode::Live,
                        });
                    }
                })
                .map_err(|(row, e)| {
                    format!("{}: event {}: {e}", schema.name, first_id + row as u64)
                })?;
        }
        if self.rules.iter().any(|r| r.schemas.contains(&schema.name))
            && !self.seen.contains_key(&schema.name)
        {
            self.seen.insert(schema.name.clone(), (**schema).clone());
        }
        for rule in &mut self.rules {
            if !rule.schemas.contains(&schema.name) {
                continue;
            }
            if !rule.typed_with.contains(&schema.name) {
                // Typed against every schema of its logsource seen so far.
                let compiled = sigma::compile(&rule.file, &rule.yaml, &self.seen)
                    .map_err(|e| e.to_string())?;
                rule.query = Query::parse(&compiled.expression)
                    .map_err(|e| format!("{}: {e}", rule.file))?;
                rule.typed_with = self
                    .seen
                    .keys()
                    .filter(|n| rule.schemas.contains(n))
                    .cloned()
                    .collect();
                rule.programs.clear();
            }
            let at = match rule
                .programs
                .iter()
                .position(|(s, _)| Arc::ptr_eq(s, schema))
            {
                Some(at) => at,
                None => {
                    rule.programs
                        .push((schema.clone(), Arc::new(rule.query.bind(schema))));
                    rule.programs.len() - 1
                }
            };
            let program = &rule.programs[at].1;
            if program.constant() == Some(false) {
                continue;
            }
            let ts = schema.ts_index();
            for (row, bytes) in batch.rows().enumerate() {
                let id = first_id + row as u64;
                if !program
                    .matches_id(bytes, id)
                    .map_err(|e| format!("{}: event {id}: {e}", schema.name))?
                {
                    continue;
                }
                let time = ts.and_then(|t| row_time(bytes, schema, t));
                out.push(&SightingRow {
                    ts: time.unwrap_or(now),
                    event_id: id,
                    event_type: schema.name.clone(),
                    matcher: Kind::Sigma,
                    name: rule.name.clone(),
                    indicator: rule.title.clone(),
                    indicator_type: "sigma".to_string(),
                    field: None,
                    value: None,
                    source: None,
                    description: None,
                    confidence: None,
                    mode: Mode::Live,
                });
            }
        }
        Ok(())
    }
}

/// The time in field `t` of an encoded row of `schema`, if it is set.
fn row_time(row: &[u8], schema: &Schema, t: usize) -> Option<i64> {
    let mut c = crate::value::RowCursor::new(row);
    c.row_header(schema.fields.len()).ok()?;
    c.skip_many(t).ok()?;
    match c.read(&schema.fields[t].ty).ok()? {
        crate::value::ValueRef::Time(ns) => Some(ns),
        _ => None,
    }
}

impl CommitHook for LiveMatch {
    fn before_commit(
        &mut self,
        batches: &[&Batch],
        first_id: u64,
    ) -> Result<Option<Batch>, String> {
        // Called again: the previous commit, with the last rows of these matches, succeeded.
        self.write_due_markers();
        self.refresh_sets();
        let mut out = SightingBatch::default();
        if self.retro {
            self.start_jobs(first_id);
            self.drain_jobs(&mut out, None);
        }
        if self.sets.is_empty() && self.rules.is_empty() {
            return Ok(out.finish());
        }
        let now = now_ns();
        let mut id = first_id;
        for batch in batches {
            if !batch.schema().name.starts_with(OWN_SCHEMA_PREFIX) {
                self.match_batch(batch, id, now, &mut out)?;
            }
            id += batch.len() as u64;
        }
        Ok(out.finish())
    }

    /// The input ended: the background retro matches running or due are finished, their
    /// sightings committed a batch at a time and their markers written, before the writer
    /// closes (a second SIGINT stops at once; the next start resumes them). One that fails
    /// is left to the next start.
    fn finish(&mut self, first_id: u64) -> Result<Option<Batch>, String> {
        // Called again: the previous batch committed.
        self.write_due_markers();
        if !self.retro {
            return Ok(None);
        }
        self.start_jobs(first_id);
        if !self.jobs.is_empty() && !self.finishing {
            self.finishing = true;
            let sets: Vec<&str> = self.jobs.iter().map(|j| j.set.as_str()).collect();
            tracing::info!(
                ?sets,
                "the input ended: finishing the background retro matches"
            );
        }
        let mut out = SightingBatch::default();
        loop {
            self.drain_jobs(&mut out, Some(FINISH_WAIT));
            if !out.is_empty() {
                return Ok(out.finish());
            }
            // Nothing of the jobs that ended is uncommitted.
            self.write_due_markers();
            if self.jobs.is_empty() {
                return Ok(None);
            }
        }
    }
}
