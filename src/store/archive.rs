//! Reading a database: the range map, an LRU of mapped segments, scans, lookups, info and
//! verification. Any number of readers may run, also while a writer imports.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Serialize;

use super::catalog::{Catalog, CatalogEntry};
use super::{Result, StoreError, SEGMENTS_DIR, WAL_FILE};
use crate::batch::Batch;
use crate::segment::{OffsetsRef, RowIter, Segment, SegmentError};
use crate::size::Size;
use crate::types::{SchemaRef, Type};
use crate::wal::{WalError, WalReader};

/// Default number of segments kept mapped (as VAST).
pub const DEFAULT_SEGMENT_CACHE: usize = 10;

#[derive(Debug)]
struct SegmentCache {
    capacity: usize,
    /// Most recently used last: the catalog entry's file and UUID, and the segment.
    entries: Vec<(String, String, Arc<Segment>)>,
    /// Segments mapped (opened and checked against their catalog entry) through this cache.
    mapped: u64,
    /// The newest catalog generation it was pruned for ([`SegmentCache::keep_listed`]): a
    /// reader of an older one (a query that started before an erase) does not add to it, as
    /// what it maps may be a segment the erase dropped.
    generation: u64,
}

impl SegmentCache {
    fn get(&mut self, entry: &CatalogEntry) -> Option<Arc<Segment>> {
        let i = self
            .entries
            .iter()
            .position(|(f, u, _)| *f == entry.file && *u == entry.uuid)?;
        let e = self.entries.remove(i);
        let seg = e.2.clone();
        self.entries.push(e);
        Some(seg)
    }

    fn put(&mut self, entry: &CatalogEntry, seg: Arc<Segment>) {
        if self.capacity == 0 {
            return;
        }
        while self.entries.len() >= self.capacity {
            self.entries.remove(0);
        }
        self.entries
            .push((entry.file.clone(), entry.uuid.clone(), seg));
    }

    /// Unmaps the segments that `catalog` does not list (erased, compacted away): a reader
    /// of a later catalog never reads them, and a mapping would keep a deleted file's blocks.
    fn keep_listed(&mut self, catalog: &Catalog) {
        self.generation = self.generation.max(catalog.generation);
        let listed: std::collections::HashSet<(&str, &str)> = catalog
            .segments
            .iter()
            .map(|e| (e.file.as_str(), e.uuid.as_str()))
            .collect();
        self.entries
            .retain(|(f, u, _)| listed.contains(&(f.as_str(), u.as_str())));
    }
}

/// A read-only view of a database directory.
///
/// Opening reads only the catalog; segments are mapped and verified lazily when first read,
/// and kept in an LRU of [`DEFAULT_SEGMENT_CACHE`] segments. Scans also read the WAL, so events
/// of the active segment of a running import are visible.
///
/// [`Archive::handle`] gives another reader of the same catalog that shares the segment
/// cache (a long-lived reader hands one to each query, with its own cancellation token), and
/// [`Archive::refreshed`] one of the current catalog that shares it too.
#[derive(Debug)]
pub struct Archive {
    dir: PathBuf,
    catalog: Arc<Catalog>,
    /// Shared by the handles and refreshed readers of one opened archive.
    cache: Arc<Mutex<SegmentCache>>,
    /// This reader's registration, which keeps the segments of its catalog on disk while it
    /// (or a handle of it) lives, even if an erase or compaction drops them (see
    /// [`super::readers`]).
    _registered: Option<Arc<super::readers::ReaderLock>>,
    /// [`Archive::cancel_on`]: searches over this archive stop once it is cancelled.
    cancel: Option<tokio_util::sync::CancellationToken>,
    /// What scans found wrong with the write-ahead log (see [`Archive::wal_warnings`]).
    wal_warnings: Mutex<Vec<String>>,
}

impl Archive {
    /// Opens the database in `dir` for reading (no lock is taken).
    pub fn open(dir: impl AsRef<Path>) -> Result<Archive> {
        let dir = dir.as_ref().to_path_buf();
        if !dir.is_dir() {
            return Err(StoreError::NoDatabase { dir });
        }
        if !super::looks_like_archive(&dir) {
            return Err(StoreError::NoArchive { dir });
        }
        let (catalog, registered) = super::readers::register(&dir)?;
        let catalog = Arc::new(catalog);
        let generation = catalog.generation;
        tracing::debug!(
            dir = %dir.display(),
            segments = catalog.segments.len(),
            "opened archive"
        );
        Ok(Archive {
            dir,
            catalog,
            cache: Arc::new(Mutex::new(SegmentCache {
                capacity: DEFAULT_SEGMENT_CACHE,
                entries: Vec::new(),
                mapped: 0,
                generation,
            })),
            _registered: registered.map(Arc::new),
            cancel: None,
            wal_warnings: Mutex::new(Vec::new()),
        })
    }

    /// Another reader of this archive's catalog, sharing its segment cache and registration,
    /// without a cancellation token: cheap (no file is read).
    pub fn handle(&self) -> Archive {
        Archive {
            dir: self.dir.clone(),
            catalog: self.catalog.clone(),
            cache: self.cache.clone(),
            _registered: self._registered.clone(),
            cancel: None,
            wal_warnings: Mutex::new(Vec::new()),
        }
    }

    /// A reader of the current catalog (registered for it, as [`Archive::open`] does) that
    /// shares this one's segment cache, from which the segments the new catalog no longer
    /// lists are dropped. This reader, and handles of it, keep reading their own catalog.
    pub fn refreshed(&self) -> Result<Archive> {
        let (catalog, registered) = super::readers::register(&self.dir)?;
        self.lock_cache().keep_listed(&catalog);
        Ok(Archive {
            dir: self.dir.clone(),
            catalog: Arc::new(catalog),
            cache: self.cache.clone(),
            _registered: registered.map(Arc::new),
            cancel: None,
            wal_warnings: Mutex::new(Vec::new()),
        })
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, SegmentCache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Segments mapped through this archive's cache (shared with its handles) since it was
    /// opened: a segment read again from the cache does not count.
    pub fn segments_mapped(&self) -> u64 {
        self.lock_cache().mapped
    }

    /// Searches over this archive stop early once `token` is cancelled: no further batch is
    /// read, and the search ends with [`crate::query::QueryError::Cancelled`] (a server's
    /// query past its timeout, or whose client went away).
    pub fn cancel_on(&mut self, token: tokio_util::sync::CancellationToken) {
        self.cancel = Some(token);
    }

    /// Whether the token of [`Archive::cancel_on`] was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|t| t.is_cancelled())
    }

    /// What reading the write-ahead log found wrong so far (each once): a damaged record, a
    /// log that is empty or whose header is damaged, one that does not follow the catalog,
    /// or a missing log beside an active segment's file that holds rows. Readers do not fail
    /// on these: a scan reads the sealed segments and the log's intact records up to the
    /// damage, and the command tells the user these warnings (`weir verify` reports them as
    /// problems, `weir verify --repair` repairs the log).
    pub fn wal_warnings(&self) -> Vec<String> {
        self.wal_warnings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Records a problem of the write-ahead log (once), and logs it.
    fn note_wal(&self, warning: String) {
        let mut w = self.wal_warnings.lock().unwrap_or_else(|e| e.into_inner());
        if !w.contains(&warning) {
            tracing::warn!("{warning}");
            w.push(warning);
        }
    }

    /// The warning for a missing write-ahead log, if an active segment's file holds rows
    /// (acknowledged events no log names; see [`StoreError::OrphanedActiveSegment`]).
    fn missing_wal_warning(&self) -> Option<String> {
        let files = super::active_segment_files(&self.dir).ok()?;
        let first = files.first()?;
        Some(format!(
            "the write-ahead log {} is missing, but active segment file {} holds rows of acknowledged events that are not read; run `weir verify --repair`",
            self.dir.join(WAL_FILE).display(),
            first.display()
        ))
    }

    /// The warning for a write-ahead log that cannot be read past `e`.
    fn damaged_wal_warning(e: &WalError) -> String {
        format!(
            "{e}; only the sealed segments and the log's records before the damage are read (`weir verify --repair` repairs it)"
        )
    }

    /// Sets how many segments stay mapped (0 disables caching).
    pub fn set_cache_capacity(&mut self, capacity: usize) {
        let mut c = self.lock_cache();
        c.capacity = capacity;
        let excess = c.entries.len().saturating_sub(capacity);
        c.entries.drain(..excess);
    }

    /// Number of segments currently mapped.
    pub fn cached_segments(&self) -> usize {
        self.lock_cache().entries.len()
    }

    /// Re-reads the catalog (to see segments sealed, erased or compacted since opening), and
    /// registers this reader for it.
    pub fn reload(&mut self) -> Result<()> {
        let mut next = self.refreshed()?;
        next.cancel = self.cancel.take();
        *self = next;
        Ok(())
    }

    /// The database directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The catalog read at open.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The open segment of a catalog entry, from the cache or mapped and verified now.
    /// The cache is not locked while the segment is mapped: concurrent readers sharing it
    /// (handles) do not wait on each other's reads.
    pub fn segment(&self, entry: &CatalogEntry) -> Result<Arc<Segment>> {
        if let Some(seg) = self.lock_cache().get(entry) {
            return Ok(seg);
        }
        let seg = Arc::new(self.open_entry(entry, false)?);
        let mut cache = self.lock_cache();
        cache.mapped += 1;
        // Another handle may have mapped it meanwhile: keep one.
        if let Some(first) = cache.get(entry) {
            return Ok(first);
        }
        if self.catalog.generation >= cache.generation {
            cache.put(entry, seg.clone());
        }
        Ok(seg)
    }

    /// Opens the segment of `entry` (from its index file unless `verified`: see
    /// `crate::segment`) and checks it against the entry.
    fn open_entry(&self, entry: &CatalogEntry, verified: bool) -> Result<Segment> {
        let path = self.dir.join(&entry.file);
        tracing::debug!(segment = %path.display(), "mapping segment");
        let seg = if verified {
            Segment::open_verified(&path)?
        } else {
            Segment::open(&path)?
        };
        let intervals: Vec<[u64; 2]> = seg.intervals().iter().map(|r| [r.start, r.end]).collect();
        if seg.uuid().hyphenated().to_string() != entry.uuid
            || seg.events() != entry.events
            || intervals != entry.intervals
        {
            return Err(SegmentError::Corrupt {
                path,
                reason: format!(
                    "does not match the catalog (uuid {}, {} events, intervals {:?}; catalog: uuid {}, {} events, intervals {:?})",
                    seg.uuid(),
                    seg.events(),
                    intervals,
                    entry.uuid,
                    entry.events,
                    entry.intervals
                ),
            }
            .into());
        }
        Ok(seg)
    }

    /// Every event in ID order: sealed segments, then the WAL of the active segment.
    pub fn scan(&self) -> Scan<'_> {
        self.scan_range(0..u64::MAX)
    }

    /// The batches that hold the events `ids` (ascending), in ID order, as batch slices: a
    /// batch without any of them is skipped unread, and of a batch stored in columns only
    /// the rows of `ids` are rebuilt; its other rows are empty arrays without fields (see
    /// [`BatchRef::of_segment_selected`]): read only the rows of `ids`. For reading whole
    /// a few events found by their IDs (late materialization).
    pub fn scan_ids(&self, ids: &[u64]) -> Scan<'_> {
        let (Some(&first), Some(&last)) = (ids.first(), ids.last()) else {
            return self.scan_range(0..0);
        };
        let mut scan = self.scan_range(first..last.saturating_add(1));
        scan.only = Some(ids.to_vec());
        scan
    }

    /// The events with IDs in `ids`, in ID order, as batch slices.
    ///
    /// Segments are opened only when the scan reaches them, so stopping early touches no more
    /// segments than needed. A damaged segment yields one error naming it, and the scan goes
    /// on after it.
    pub fn scan_range(&self, ids: Range<u64>) -> Scan<'_> {
        Scan {
            archive: self,
            catalog: self.catalog.clone(),
            only: None,
            next: ids.start,
            end: ids.end,
            current: None,
            wal: None,
            done: false,
        }
    }

    /// The event with ID `id`, as a one-row batch slice (`None` if there is none).
    pub fn get(&self, id: u64) -> Result<Option<BatchRef>> {
        match self.scan_range(id..id.saturating_add(1)).next() {
            Some(Ok(b)) => Ok(Some(b)),
            Some(Err(e)) => Err(e),
            None => Ok(None),
        }
    }

    /// The events with the IDs `ids`, in the order given (an ID given twice is there twice):
    /// each its schema and its encoded row (one msgpack array, copied out of the batch),
    /// `None` for an ID that no event has.
    ///
    /// One pass over the batches that hold them ([`Archive::scan_ids`]): each batch is read
    /// once, and of a batch stored in columns only the wanted rows are rebuilt; a batch is
    /// released once its rows are copied, so memory follows the rows asked for. Looking the
    /// IDs up one by one ([`Archive::get`]) reads a batch per ID (10,000 IDs took 18 s).
    pub fn get_many(&self, ids: &[u64]) -> Result<Vec<Option<FoundRow>>> {
        let mut wanted = ids.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        let mut found = std::collections::HashMap::with_capacity(wanted.len());
        for slice in self.scan_ids(&wanted) {
            let slice = slice?;
            let range = slice.id_range();
            let lo = wanted.partition_point(|&id| id < range.start);
            for &id in wanted[lo..].iter().take_while(|&&id| id < range.end) {
                if let Some(row) = slice
                    .row(id)
                    .as_ref()
                    .and_then(|r| r.rows().next().map(<[u8]>::to_vec))
                {
                    found.insert(id, (slice.schema().clone(), row));
                }
            }
        }
        Ok(ids.iter().map(|id| found.get(id).cloned()).collect())
    }

    /// The catalog to read together with `wal`, a WAL opened just now: the one read at open,
    /// or, if segments were sealed since (the WAL starts past its end), a fresh one. A seal
    /// writes the catalog before it replaces the WAL, so a catalog read after the WAL was
    /// opened reaches at least the WAL's base: no gap between segments and WAL.
    fn catalog_for(&self, wal: Option<&WalReader>) -> Result<Arc<Catalog>> {
        match wal {
            Some(r) if r.base_id() > self.catalog.next_id => {
                Ok(Arc::new(Catalog::load(&self.dir)?))
            }
            _ => Ok(self.catalog.clone()),
        }
    }

    /// The segment files in `segments/` that the catalog does not list, in two groups.
    ///
    /// `lost`: no WAL record names them, so their events are not visible (a lost catalog or
    /// catalog entry); `weir verify --repair` lists them again. `sealing`: the WAL points into
    /// them, or holds all of their events (a seal in progress, or one interrupted by a crash:
    /// the next writer replays the WAL and removes them; a writer that seals while replaying the
    /// WAL of a crashed one writes a segment that the old WAL does not name but whose events it
    /// holds, as the writer's own clean-up recognizes). A seal renames the segment file, then writes the catalog, then
    /// replaces the WAL; so the WAL is read before the catalog is read again, and a file still
    /// unlisted then was named by that WAL if a seal was writing it.
    pub fn unlisted_segments(&self) -> Result<UnlistedSegments> {
        let mut out = UnlistedSegments::default();
        let names = super::unlisted_segment_files(&self.dir, &self.catalog)?;
        if names.is_empty() {
            return Ok(out);
        }
        let mut named = Vec::new();
        let mut wal_ids = 0..0;
        if let Ok(mut r) = WalReader::open(&self.dir.join(WAL_FILE)) {
            while let Ok(Some(_)) = r.next_entry(u64::MAX) {}
            named = r.named_segments().to_vec();
            wal_ids = r.base_id()..r.end_id();
        }
        let fresh = Catalog::load(&self.dir)?;
        let now = super::unlisted_segment_files(&self.dir, &fresh)?;
        for name in names.into_iter().filter(|n| now.contains(n)) {
            let path = self.dir.join(SEGMENTS_DIR).join(&name);
            let in_wal = || {
                Segment::open(&path).is_ok_and(|seg| {
                    !seg.intervals().is_empty()
                        && seg
                            .intervals()
                            .iter()
                            .all(|r| wal_ids.start <= r.start && r.end <= wal_ids.end)
                })
            };
            let superseded = || {
                Segment::open(&path)
                    .is_ok_and(|seg| !seg.intervals().is_empty() && fresh.covers(seg.intervals()))
            };
            if named.iter().any(|u| crate::segment::file_name(u) == name) || in_wal() {
                out.sealing.push(path);
            } else if superseded() {
                out.superseded.push(path);
            } else {
                out.lost.push(path);
            }
        }
        Ok(out)
    }

    /// Segments, events, bytes, ID ranges and events per schema (sealed and in the WAL).
    pub fn info(&self) -> Result<ArchiveInfo> {
        let wal_path = self.dir.join(WAL_FILE);
        let mut wal_reader = None;
        if wal_path.exists() {
            match WalReader::open(&wal_path) {
                Ok(r) => wal_reader = Some(r),
                Err(e) => self.note_wal(Archive::damaged_wal_warning(&e)),
            }
        } else if let Some(w) = self.missing_wal_warning() {
            self.note_wal(w);
        }
        let cat = &self.catalog_for(wal_reader.as_ref())?;
        let mut schemas: BTreeMap<String, u64> = BTreeMap::new();
        let mut community_id: BTreeMap<String, u64> = BTreeMap::new();
        let mut ranges: Vec<[u64; 2]> = Vec::new();
        let mut push_range = |r: Range<u64>| match ranges.last_mut() {
            Some(last) if last[1] == r.start => last[1] = r.end,
            _ => ranges.push([r.start, r.end]),
        };
        for s in &cat.segments {
            for (k, v) in &s.schemas {
                *schemas.entry(k.clone()).or_default() += v;
            }
            s.ranges().for_each(&mut push_range);
        }
        let mut ts: Option<[i64; 2]> = None;
        let mut widen = |r: Option<(i64, i64)>| {
            if let Some((a, z)) = r {
                ts = Some(ts.map_or([a, z], |[x, y]| [x.min(a), y.max(z)]));
            }
        };
        for s in &cat.segments {
            widen(s.ts.map(|[a, z]| (a, z)));
        }
        let mut wal = WalInfo::default();
        if let Some(mut r) = wal_reader.take() {
            loop {
                let b = match r.next_record() {
                    Ok(Some((_, b))) => b,
                    Ok(None) => break,
                    Err(e) => {
                        self.note_wal(Archive::damaged_wal_warning(&e));
                        break;
                    }
                };
                let ids = b.id_range();
                if ids.end <= cat.next_id {
                    continue;
                }
                wal.batches += 1;
                wal.events += b.len() as u64;
                *schemas.entry(b.schema().name.clone()).or_default() += b.len() as u64;
                if has_community_id(b.schema()) {
                    *community_id.entry(b.schema().name.clone()).or_default() += b.len() as u64;
                }
                widen(b.ts_range());
                push_range(ids);
            }
            wal.bytes = r.good_len();
        }
        wal.problem = self.wal_warnings().first().cloned();
        let segment_events = cat.events();
        // Each segment's index (not its rows) for the raw size of its batches.
        let mut raw_bytes = 0u64;
        for entry in &cat.segments {
            if let Ok(seg) = self.segment(entry) {
                raw_bytes += (0..seg.len())
                    .filter_map(|i| seg.batch_storage(i))
                    .map(|(_, _, raw)| raw as u64)
                    .sum::<u64>();
                for i in 0..seg.len() {
                    if let Some((schema, ids, _)) = seg.batch_meta(i) {
                        if has_community_id(schema) {
                            let n = ids.end - ids.start;
                            *community_id.entry(schema.name.clone()).or_default() += n;
                        }
                    }
                }
            }
        }
        let bytes: u64 = cat.segments.iter().map(|s| s.bytes).sum();
        let unlisted = self
            .unlisted_segments()?
            .lost
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let lost_events = cat.lost_ranges().map(|r| r.end - r.start).sum::<u64>();
        let lost_ranges: Vec<[u64; 2]> = cat.lost_ranges().map(|r| [r.start, r.end]).collect();
        Ok(ArchiveInfo {
            unlisted,
            dir: self.dir.display().to_string(),
            segments: cat.segments.len() as u64,
            events: segment_events + wal.events,
            segment_events,
            bytes,
            raw_bytes,
            compression_ratio: (bytes > 0).then(|| raw_bytes as f64 / bytes as f64),
            disk_bytes: disk_usage(&self.dir)?,
            ts,
            id_ranges: ranges,
            schemas,
            community_id,
            wal,
            erased_events: cat.erased_ranges().map(|r| r.end - r.start).sum::<u64>() - lost_events,
            lost_events,
            erased_ranges: without(cat.erased_ranges().map(|r| [r.start, r.end]), &lost_ranges),
            lost_ranges,
        })
    }

    /// Checks every segment (verifier, checksums, agreement with the catalog, every row decodes
    /// with its schema), the catalog's ID space and the WAL. Problems are collected, not
    /// returned as errors, so that one damaged segment does not hide another.
    pub fn verify(&self) -> VerifyReport {
        let mut report = VerifyReport::default();
        let wal_path = self.dir.join(WAL_FILE);
        let wal_reader = wal_path.exists().then(|| WalReader::open(&wal_path));
        let cat = &match self.catalog_for(wal_reader.as_ref().and_then(|r| r.as_ref().ok())) {
            Ok(c) => c,
            Err(e) => {
                report
                    .problems
                    .push(Problem::from_error(&Catalog::path(&self.dir), e));
                self.catalog.clone()
            }
        };
        let mut expected = 0u64;
        // Erased IDs are in no segment by design; any other gap is a lost segment.
        let mut erased = cat.erased_ranges().peekable();
        let mut skip_erased = |expected: &mut u64, upto: u64| {
            while let Some(r) = erased.peek() {
                if r.start > *expected || r.start >= upto {
                    break;
                }
                *expected = (*expected).max(r.end);
                erased.next();
            }
        };
        for entry in &cat.segments {
            let path = self.dir.join(&entry.file);
            for r in entry.ranges() {
                skip_erased(&mut expected, r.start);
                if r.start != expected {
                    report.problem(
                        &path,
                        format!("event IDs {expected}..{} are in no segment", r.start),
                    );
                }
                expected = r.end;
            }
            match self.open_entry(entry, true) {
                Ok(seg) => {
                    report.segments += 1;
                    report.events += seg.events();
                    if let Err(why) = crate::segment::check_index(&seg) {
                        report
                            .problem(&path, format!("{why} (`weir verify --repair` rewrites it)"));
                    }
                    for (i, b) in seg.batches().enumerate() {
                        match b {
                            Ok(b) => {
                                if let Err(reason) = check_rows(b.schema(), b.rows()) {
                                    report.problem(&path, format!("batch {i}: {reason}"));
                                }
                            }
                            Err(e) => report.problems.push(Problem::from_error(&path, e)),
                        }
                    }
                }
                Err(e) => report.problems.push(Problem::from_error(&path, e)),
            }
        }
        skip_erased(&mut expected, cat.next_id);
        if cat.next_id != expected {
            report.problem(
                &Catalog::path(&self.dir),
                format!("next_id {} but segments end at {expected}", cat.next_id),
            );
        }
        // Segment files the catalog does not name: a seal in progress, or an interrupted one
        // that the next writer cleans up (the WAL points into it), is not damage; any other
        // holds events that are not visible: a problem (`--repair` lists it again).
        match self.unlisted_segments() {
            Ok(unlisted) => {
                for path in &unlisted.sealing {
                    report.warnings.push(format!(
                        "{}: not in the catalog (a seal in progress or interrupted; the write-ahead log holds its events and the next import removes it)",
                        path.display()
                    ));
                }
                for path in &unlisted.superseded {
                    report.warnings.push(format!(
                        "{}: not in the catalog, and every event it holds is in a listed segment (a copy left by a crash after the seal that replaced it; the next import removes it)",
                        path.display()
                    ));
                }
                for path in &unlisted.lost {
                    let what = match Segment::open(path) {
                        Ok(seg) => format!(
                            "holds events {} that are not visible",
                            seg.intervals()
                                .iter()
                                .map(|r| format!("[{}, {})", r.start, r.end))
                                .collect::<Vec<_>>()
                                .join(" ")
                        ),
                        Err(e) => format!("cannot be read ({e})"),
                    };
                    report.problem(
                        path,
                        format!("not in the catalog: {what} (`weir verify --repair` puts it back or moves it aside)"),
                    );
                }
            }
            Err(e) => report
                .problems
                .push(Problem::from_error(&self.dir.join(SEGMENTS_DIR), e)),
        }
        if let Some(wal_reader) = wal_reader {
            match wal_reader {
                Err(e) => report.problems.push(Problem::from_error(&wal_path, e)),
                Ok(mut r) => {
                    if r.base_id() > cat.next_id {
                        report.problem(
                            &wal_path,
                            format!(
                                "starts at event ID {} but the catalog ends at {}",
                                r.base_id(),
                                cat.next_id
                            ),
                        );
                    }
                    loop {
                        match r.next_record() {
                            Ok(Some((offset, b))) => {
                                if b.id_range().end > cat.next_id {
                                    report.events += b.len() as u64;
                                }
                                if let Err(reason) = check_rows(b.schema(), b.rows()) {
                                    report.problem(
                                        &wal_path,
                                        format!("record at offset {offset}: {reason}"),
                                    );
                                }
                            }
                            Ok(None) => break,
                            Err(e) => {
                                report.problems.push(Problem::from_error(&wal_path, e));
                                break;
                            }
                        }
                    }
                    if let Some(t) = r.torn() {
                        report.warnings.push(t.to_string());
                    }
                }
            }
        } else if let Ok(files) = super::active_segment_files(&self.dir) {
            // Rows written for the records of a log that is gone: acknowledged events that
            // no reader sees and that the writer refuses to overwrite.
            for path in files {
                report.problem(
                    &path,
                    format!(
                        "an active segment's file that holds rows, but the write-ahead log {} is missing: its acknowledged events are not visible (`weir verify --repair` recovers what it can)",
                        wal_path.display()
                    ),
                );
            }
        }
        report
    }
}

/// Checks that every row decodes with the schema's types.
pub(crate) fn check_rows<'a>(
    schema: &SchemaRef,
    rows: impl Iterator<Item = &'a [u8]>,
) -> std::result::Result<(), String> {
    let types: Vec<Type> = schema.fields.iter().map(|f| f.ty.clone()).collect();
    for (i, row) in rows.enumerate() {
        crate::value::check_row(row, &types)
            .map_err(|e| format!("row {i} does not decode as {}: {e}", schema.name))?;
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum Source {
    /// An uncompressed batch: zero-copy from the map.
    Sealed(Arc<Segment>, usize),
    /// A compressed batch, decompressed: its rows, then its offsets; the length of the rows.
    Unpacked(Arc<Segment>, usize, Arc<crate::segment::RowBuf>, usize),
    Tail(Arc<Batch>),
    /// A batch stored in columns, checked but not read: its columns are read by
    /// [`BatchRef::columns`]; its rows are rebuilt on first use (see [`BatchRef::deferred`]).
    Deferred(Arc<Segment>, usize, Arc<OnceLock<Unpacked>>),
}

/// Rows rebuilt from a deferred batch: the rows followed by their offsets, the length of the
/// rows (`None`: rebuilding failed; see [`BatchRef::deferred`]).
type Unpacked = Option<(Arc<crate::segment::RowBuf>, usize)>;

/// An event found by its ID ([`Archive::get_many`]): its schema and its encoded row (one
/// msgpack array, see [`crate::value`]).
pub type FoundRow = (SchemaRef, Vec<u8>);

/// A slice of a batch found by a scan: zero-copy rows of a mapped segment (kept mapped while
/// this exists), the decompressed rows of a compressed batch (held while this exists), or of
/// a batch read from the WAL.
#[derive(Debug, Clone)]
pub struct BatchRef {
    source: Source,
    schema: SchemaRef,
    rows: Range<usize>,
}

/// Schema, first ID, data, offsets and ts range of the underlying batch.
type Parts<'a> = (
    &'a SchemaRef,
    u64,
    &'a [u8],
    OffsetsRef<'a>,
    Option<(i64, i64)>,
);

impl BatchRef {
    /// All rows of batch `i` of a sealed segment (`None` past its end). The batch is checked
    /// on its first access, as [`Segment::batch`] does: a damaged one is an error.
    pub fn of_segment(seg: Arc<Segment>, i: usize) -> Option<Result<BatchRef>> {
        Self::of_segment_projected(seg, i, None)
    }

    /// [`BatchRef::of_segment`] with only the fields `want` marks read (narrow rows of those
    /// fields alone) when the batch is stored in columns (see [`Segment::batch_projected`]); `None` reads all.
    /// For evaluating a predicate that reads only those fields, never for output.
    pub fn of_segment_projected(
        seg: Arc<Segment>,
        i: usize,
        want: Option<&[bool]>,
    ) -> Option<Result<BatchRef>> {
        Self::of_segment_selected(seg, i, want, None)
    }

    /// [`BatchRef::of_segment_projected`] with, when `select` is given, only those rows
    /// (indices, ascending) rebuilt (see [`Segment::batch_selected`]): the others are empty
    /// rows that hold no field. For output of the matching rows alone, never for reading
    /// the others.
    pub fn of_segment_selected(
        seg: Arc<Segment>,
        i: usize,
        want: Option<&[bool]>,
        select: Option<&[usize]>,
    ) -> Option<Result<BatchRef>> {
        let batch = match (want, select) {
            (_, Some(s)) => seg.batch_selected(i, want, s)?,
            (Some(w), None) => seg.batch_projected(i, w)?,
            (None, None) => seg.batch(i)?,
        };
        let (schema, len, unpacked) = match batch {
            Ok(b) => (b.schema().clone(), b.len(), b.unpacked()),
            Err(e) => return Some(Err(e.into())),
        };
        // A compressed batch keeps its decompressed rows; an uncompressed one is read from
        // the map.
        let source = match unpacked {
            Some((buf, data_len)) => Source::Unpacked(seg, i, buf, data_len),
            None => Source::Sealed(seg, i),
        };
        Some(Ok(BatchRef {
            source,
            schema,
            rows: 0..len,
        }))
    }

    /// The same rows under another schema: a projection's narrow rows get the schema of
    /// the fields they hold.
    pub(crate) fn with_schema(mut self, schema: SchemaRef) -> BatchRef {
        self.schema = schema;
        self
    }

    /// Batch `i` of `seg`, stored in columns and already checked ([`Segment::check`]), whose
    /// rows are not read until they are used: a consumer that wants columns takes them with
    /// [`BatchRef::columns`] and never pays for rebuilding the rows. `None` when the batch is
    /// not stored in columns (or is past the end). The checksum was verified, so only a
    /// writer that stored a column that does not inflate could make the rebuilding fail; the
    /// rows are then empty, and [`BatchRef::columns`] reports the error.
    pub fn deferred(seg: Arc<Segment>, i: usize) -> Option<BatchRef> {
        if seg.batch_layout(i)? != crate::segment::Layout::Columns {
            return None;
        }
        let (schema, ids, _) = seg.batch_meta(i)?;
        let (schema, len) = (schema.clone(), (ids.end - ids.start) as usize);
        Some(BatchRef {
            source: Source::Deferred(seg, i, Arc::new(OnceLock::new())),
            schema,
            rows: 0..len,
        })
    }

    /// The columns of the underlying batch when it is stored in columns, and this slice is
    /// all of it (`None` otherwise): each field's values back to back, inflated from the map
    /// without rebuilding the rows.
    pub fn columns(&self) -> Option<Result<crate::segment::Columns>> {
        let (seg, i) = match &self.source {
            Source::Sealed(seg, i) | Source::Unpacked(seg, i, ..) | Source::Deferred(seg, i, _) => {
                (seg, *i)
            }
            Source::Tail(_) => return None,
        };
        let ids = seg.batch_ids(i)?;
        if self.rows != (0..(ids.end - ids.start) as usize) {
            return None;
        }
        Some(seg.batch_columns(i)?.map_err(Into::into))
    }

    /// The columns of the underlying batch for decoding them straight into Arrow
    /// (`crate::codec::arrow::decode_columns`): only those `want` marks (one flag per field;
    /// `None`: all) inflated, and of those every dictionary, column of integer planes and
    /// marked column kept in its encoding (`Columns::dict`, `ints`,
    /// `marked`) rather than rebuilt as msgpack. `None` unless the batch is sealed, stored in
    /// columns, this slice is all of it and its rows are of the batch's own schema (not
    /// narrowed to a projection's fields).
    pub fn encoded_columns(
        &self,
        want: Option<&[bool]>,
    ) -> Option<Result<crate::segment::Columns>> {
        let (seg, i) = match &self.source {
            Source::Sealed(seg, i) | Source::Unpacked(seg, i, ..) | Source::Deferred(seg, i, _) => {
                (seg, *i)
            }
            Source::Tail(_) => return None,
        };
        let (schema, ids, _) = seg.batch_meta(i)?;
        if !Arc::ptr_eq(schema, &self.schema) || self.rows != (0..(ids.end - ids.start) as usize) {
            return None;
        }
        let keep = vec![true; schema.fields.len()];
        let cols = seg.batch_columns_keeping(i, want, Some(&keep), Some(&keep))?;
        Some(cols.map_err(Into::into))
    }

    fn parts(&self) -> Parts<'_> {
        let none = || (&self.schema, 0, &[][..], OffsetsRef::Native(&[]), None);
        match &self.source {
            Source::Deferred(seg, i, rows) => {
                let rows = rows.get_or_init(|| match seg.batch(*i) {
                    Some(Ok(b)) => b.unpacked(),
                    _ => None,
                });
                match rows {
                    Some((buf, len)) => {
                        unpacked_parts(&self.schema, seg, *i, buf, *len).unwrap_or_else(none)
                    }
                    None => none(),
                }
            }
            Source::Sealed(seg, i) => {
                // The index was valid when the ref was made and segments are immutable.
                match (seg.mapped_rows(*i), seg.batch_meta(*i)) {
                    (Some((data, offsets)), Some((_, ids, ts))) => {
                        (&self.schema, ids.start, data, offsets, ts)
                    }
                    _ => none(),
                }
            }
            Source::Unpacked(seg, i, buf, len) => {
                unpacked_parts(&self.schema, seg, *i, buf, *len).unwrap_or_else(none)
            }
            Source::Tail(b) => (
                b.schema(),
                b.id(),
                b.data(),
                OffsetsRef::Native(b.offsets()),
                b.ts_range(),
            ),
        }
    }

    /// The schema of the rows.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// ID of the first row of this slice.
    pub fn first_id(&self) -> u64 {
        self.parts().1 + self.rows.start as u64
    }

    /// The IDs of the rows of this slice.
    pub fn id_range(&self) -> Range<u64> {
        self.first_id()..self.first_id() + self.len() as u64
    }

    /// The one-row slice of the event with ID `id`, if this slice holds it.
    pub fn row(&self, id: u64) -> Option<BatchRef> {
        if !self.id_range().contains(&id) {
            return None;
        }
        let i = (id - self.parts().1) as usize;
        let mut one = self.clone();
        one.rows = i..i + 1;
        Some(one)
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the slice has no row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The `ts` range of the whole underlying batch.
    pub fn ts_range(&self) -> Option<(i64, i64)> {
        self.parts().4
    }

    /// The encoded rows of the whole underlying batch, back to back (those of this slice are
    /// a part): for scanning a batch's bytes in one pass.
    pub fn batch_data(&self) -> &[u8] {
        self.parts().2
    }

    /// The encoded rows (one msgpack array each), borrowed.
    pub fn rows(&self) -> RowIter<'_> {
        let (_, _, data, offsets, _) = self.parts();
        RowIter::new(data, offsets, self.rows.clone())
    }

    /// The segment file the rows come from (`None` for the WAL).
    pub fn segment_path(&self) -> Option<&Path> {
        match &self.source {
            Source::Sealed(seg, _) | Source::Unpacked(seg, ..) | Source::Deferred(seg, ..) => {
                Some(seg.path())
            }
            Source::Tail(_) => None,
        }
    }

    /// Copies the rows into an owned [`Batch`] with its ID set.
    pub fn to_batch(&self) -> Batch {
        let mut b = match &self.source {
            Source::Sealed(..) | Source::Unpacked(..) | Source::Deferred(..) => {
                let (schema, first, data, offsets, ts) = self.parts();
                let offsets = (0..offsets.len()).map(|i| offsets.get(i)).collect();
                let mut b = Batch::from_parts(schema.clone(), data.to_vec(), offsets, ts)
                    .unwrap_or_else(|| crate::batch::BatchBuilder::new(schema.clone()).finish());
                b.set_id(first);
                b
            }
            Source::Tail(b) => (**b).clone(),
        };
        if self.rows.end < b.len() {
            b.split_off(self.rows.end);
        }
        if self.rows.start > 0 {
            b = b.split_off(self.rows.start);
        }
        b
    }
}

/// The parts of batch `i` of `seg` whose rows were decompressed (or rebuilt) into `buf`: the
/// rows (`len` bytes), then their offsets as little-endian u32.
fn unpacked_parts<'a>(
    schema: &'a SchemaRef,
    seg: &Segment,
    i: usize,
    buf: &'a [u8],
    len: usize,
) -> Option<Parts<'a>> {
    let (_, ids, ts) = seg.batch_meta(i)?;
    Some((
        schema,
        ids.start,
        buf.get(..len)?,
        OffsetsRef::U32Le(buf.get(len..)?),
        ts,
    ))
}

/// An iterator over batch slices in ID order; see [`Archive::scan_range`].
#[derive(Debug)]
pub struct Scan<'a> {
    archive: &'a Archive,
    catalog: Arc<Catalog>,
    next: u64,
    end: u64,
    /// The segment being read, the next batch index, and the end of the segment's IDs.
    current: Option<(Arc<Segment>, usize, u64)>,
    wal: Option<WalReader>,
    done: bool,
    /// [`Archive::scan_ids`]: the IDs wanted, ascending.
    only: Option<Vec<u64>>,
}

impl Scan<'_> {
    fn clip(&mut self, first: u64, rows: usize) -> Option<Range<usize>> {
        let end = first + rows as u64;
        if end <= self.next || first >= self.end {
            return None;
        }
        let lo = self.next.saturating_sub(first) as usize;
        let hi = (self.end.min(end) - first) as usize;
        self.next = first + hi as u64;
        Some(lo..hi)
    }

    fn step(&mut self) -> Option<Result<BatchRef>> {
        loop {
            if self.done || self.next >= self.end {
                return None;
            }
            if let Some((seg, i, seg_end)) = self.current.take() {
                // Of `only`, the rows this batch holds; a batch with none is skipped unread.
                let mut select = None;
                if let (Some(only), Some(ids)) = (&self.only, seg.batch_ids(i)) {
                    let lo = only.partition_point(|&x| x < ids.start.max(self.next));
                    let hi = only.partition_point(|&x| x < ids.end);
                    if lo == hi {
                        match only.get(lo) {
                            None => return None,
                            Some(&want) if want >= seg_end => self.next = want,
                            Some(_) => {
                                self.next = self.next.max(ids.end);
                                self.current = Some((seg, i + 1, seg_end));
                            }
                        }
                        continue;
                    }
                    let rows: Vec<usize> = only[lo..hi]
                        .iter()
                        .map(|&x| (x - ids.start) as usize)
                        .collect();
                    select = Some(rows);
                }
                let made = match &select {
                    Some(rows) => BatchRef::of_segment_selected(seg.clone(), i, None, Some(rows)),
                    None => BatchRef::of_segment(seg.clone(), i),
                };
                let mut b = match made {
                    None => {
                        // Past the segment's last batch: go on after its IDs.
                        self.next = self.next.max(seg_end);
                        continue;
                    }
                    Some(Err(e)) => {
                        // Skip the damaged batch; the rest stays readable.
                        if let Some(m) = seg.batch_ids(i) {
                            self.next = self.next.max(m.end);
                        }
                        self.current = Some((seg, i + 1, seg_end));
                        return Some(Err(e));
                    }
                    Some(Ok(b)) => b,
                };
                self.current = Some((seg, i + 1, seg_end));
                let first = b.first_id();
                if first >= self.end {
                    return None;
                }
                if let Some(rows) = self.clip(first, b.len()) {
                    b.rows = rows;
                    return Some(Ok(b));
                }
                continue;
            }
            if let Some(wal) = &mut self.wal {
                return match wal.next_record() {
                    Err(e) => {
                        // The sealed segments and the records before the damage were read:
                        // a warning, not a failure of the whole read.
                        self.done = true;
                        self.archive.note_wal(Archive::damaged_wal_warning(&e));
                        None
                    }
                    // The end, or a torn tail: a record a running writer has not finished.
                    Ok(None) => {
                        self.done = true;
                        None
                    }
                    Ok(Some((_, batch))) => {
                        let Some(rows) = self.clip(batch.id(), batch.len()) else {
                            continue;
                        };
                        Some(Ok(BatchRef {
                            schema: batch.schema().clone(),
                            source: Source::Tail(Arc::new(batch)),
                            rows,
                        }))
                    }
                };
            }
            if let Some((si, first)) = self.catalog.locate_from(self.next) {
                let entry = &self.catalog.segments[si];
                self.next = first;
                let end = entry.ranges().map(|r| r.end).max().unwrap_or(first);
                let end = end.max(first + 1);
                match self.archive.segment(entry) {
                    Ok(seg) => {
                        let i = seg.first_batch_from(self.next);
                        self.current = Some((seg, i, end));
                    }
                    Err(e) => {
                        // Skip the damaged segment; the rest stays readable.
                        self.next = end;
                        return Some(Err(e));
                    }
                }
                continue;
            }
            // Past the sealed segments: the WAL of the active segment.
            let path = self.archive.dir.join(WAL_FILE);
            let reader = match WalReader::open(&path) {
                Ok(r) => r,
                Err(WalError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.done = true;
                    if let Some(w) = self.archive.missing_wal_warning() {
                        self.archive.note_wal(w);
                    }
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    self.archive.note_wal(Archive::damaged_wal_warning(&e));
                    return None;
                }
            };
            if reader.base_id() > self.next.max(self.catalog.next_id) {
                // Segments were sealed after our catalog was read: read the new catalog, which
                // must have grown (else the WAL does not follow the catalog: damage).
                match Catalog::load(&self.archive.dir) {
                    Ok(c) if c.next_id > self.catalog.next_id => self.catalog = Arc::new(c),
                    Ok(_) => {
                        self.done = true;
                        let e = WalError::Corrupt {
                            path,
                            offset: 0,
                            reason: format!(
                                "starts at event ID {} but the catalog ends at {}",
                                reader.base_id(),
                                self.catalog.next_id
                            ),
                        };
                        self.archive.note_wal(Archive::damaged_wal_warning(&e));
                        return None;
                    }
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                }
                continue;
            }
            self.wal = Some(reader);
        }
    }
}

impl Iterator for Scan<'_> {
    type Item = Result<BatchRef>;
    fn next(&mut self) -> Option<Result<BatchRef>> {
        self.step()
    }
}

/// Bytes the files under `dir` take on disk (allocated blocks), recursively (symbolic links
/// are not followed).
fn disk_usage(dir: &Path) -> Result<u64> {
    let mut total = 0;
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| StoreError::io("list", &d, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io("list", &d, e))?;
            let meta = match entry.metadata() {
                Ok(m) => m,
                // Removed since listed (a seal replacing the WAL, a temporary).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(StoreError::io("stat", entry.path(), e)),
            };
            if meta.is_dir() {
                dirs.push(entry.path());
            } else {
                // The blocks allocated, not the length: the active segment (`.seg.tmp`) is
                // a sparse file of the maximum segment size while an import runs.
                total += std::os::unix::fs::MetadataExt::blocks(&meta) * 512;
            }
        }
    }
    Ok(total)
}

/// The WAL part of [`ArchiveInfo`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WalInfo {
    /// Batches of the active segment.
    pub batches: u64,
    /// Events of the active segment.
    pub events: u64,
    /// Bytes of the log (up to its last complete record).
    pub bytes: u64,
    /// What is wrong with the log, if anything (the events above are those of its records
    /// before the damage; see [`Archive::wal_warnings`]).
    pub problem: Option<String>,
}

/// The result of [`Archive::unlisted_segments`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnlistedSegments {
    /// Segment files no WAL record names: their events are not visible.
    pub lost: Vec<PathBuf>,
    /// Segment files the WAL points into: a seal in progress or interrupted.
    pub sealing: Vec<PathBuf>,
    /// Segment files whose every event a listed segment holds: the copy of an earlier life
    /// left by a crash after the seal that replaced it; the next writer removes it.
    pub superseded: Vec<PathBuf>,
}

/// Summary of an archive (`weir info`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArchiveInfo {
    /// Segment files the catalog does not list (and no WAL record names): their events are not
    /// counted here; `weir verify --repair` lists them again.
    pub unlisted: Vec<String>,
    /// The database directory.
    pub dir: String,
    /// Sealed segments.
    pub segments: u64,
    /// All events (sealed and in the WAL).
    pub events: u64,
    /// Events in sealed segments.
    pub segment_events: u64,
    /// Bytes of segment files.
    pub bytes: u64,
    /// Bytes of the sealed segments' rows as msgpack, uncompressed (segments that cannot be
    /// read count none).
    pub raw_bytes: u64,
    /// `raw_bytes` / `bytes`: how much smaller compression made the segments (1.0 for
    /// uncompressed ones, which also hold row offsets; `None` without segments).
    pub compression_ratio: Option<f64>,
    /// Bytes on disk (allocated blocks, so a sparse active segment counts what it holds) of
    /// every file in the database directory (segments, write-ahead log, catalog, lock,
    /// anything moved aside into `damaged/`).
    pub disk_bytes: u64,
    /// The time of the first and last event (nanoseconds since the epoch), from the batches'
    /// `ts` ranges; `None` when no event has a `ts`.
    pub ts: Option<[i64; 2]>,
    /// Event ID ranges `[begin, end)`, merged.
    pub id_ranges: Vec<[u64; 2]>,
    /// Events per schema.
    pub schemas: BTreeMap<String, u64>,
    /// Events per schema whose events carry a `community_id` field
    /// ([`crate::types::COMMUNITY_ID_FIELD`]: the `zeek.conn` events that weir computed it
    /// for at import, and those of logs that had their own); schemas without it are not
    /// listed.
    pub community_id: BTreeMap<String, u64>,
    /// The active segment's write-ahead log.
    pub wal: WalInfo,
    /// Events erased (by `weir erase` or retention): IDs below the end that no segment holds
    /// by design (not counting those lost).
    pub erased_events: u64,
    /// Events lost to damage: IDs below the end in no segment because `weir verify --repair`
    /// moved their batches or segments aside (see [`crate::store::catalog`]'s `lost`).
    pub lost_events: u64,
    /// The IDs lost to damage, `[begin, end)`.
    pub lost_ranges: Vec<[u64; 2]>,
    /// The erased ID ranges `[begin, end)`, those lost to damage left out (as in
    /// `erased_events`).
    pub erased_ranges: Vec<[u64; 2]>,
}

impl ArchiveInfo {
    /// ID ranges listed one by one in the text form; more are summarized (how many, the
    /// first and the last), the full lists being in the JSON form.
    pub const LISTED_RANGES: usize = 4;
}

/// `ranges` without the IDs in `holes` (sorted, each inside one of `ranges`).
fn without(ranges: impl Iterator<Item = [u64; 2]>, holes: &[[u64; 2]]) -> Vec<[u64; 2]> {
    let mut out = Vec::new();
    for [mut a, b] in ranges {
        for &[h0, h1] in holes {
            if h0 >= b || h1 <= a {
                continue;
            }
            if h0 > a {
                out.push([a, h0]);
            }
            a = a.max(h1);
        }
        if a < b {
            out.push([a, b]);
        }
    }
    out
}

/// ID ranges for the text form: `[0, 10) [20, 30)`, or with more than
/// [`ArchiveInfo::LISTED_RANGES`], `312 ranges, first [0, 10), last [5000, 5010)`.
fn ranges_text(ranges: &[[u64; 2]]) -> String {
    let one = |[a, b]: &[u64; 2]| format!("[{a}, {b})");
    match ranges {
        [] => "none".into(),
        [first, .., last] if ranges.len() > ArchiveInfo::LISTED_RANGES => format!(
            "{} ranges, first {}, last {} (all of them: --json)",
            ranges.len(),
            one(first),
            one(last)
        ),
        _ => ranges.iter().map(one).collect::<Vec<_>>().join(" "),
    }
}

impl fmt::Display for ArchiveInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "database:  {}", self.dir)?;
        match self.compression_ratio {
            Some(r) => writeln!(
                f,
                "segments:  {} ({}; rows {} uncompressed: ratio {r:.2})",
                self.segments,
                Size(self.bytes),
                Size(self.raw_bytes)
            )?,
            None => writeln!(f, "segments:  {} ({})", self.segments, Size(self.bytes))?,
        }
        writeln!(f, "on disk:   {}", Size(self.disk_bytes))?;
        writeln!(
            f,
            "events:    {} ({} sealed, {} in the write-ahead log)",
            self.events, self.segment_events, self.wal.events
        )?;
        writeln!(f, "id ranges: {}", ranges_text(&self.id_ranges))?;
        if self.erased_events > 0 {
            writeln!(
                f,
                "erased:    {} events: {}",
                self.erased_events,
                ranges_text(&self.erased_ranges)
            )?;
        }
        if self.lost_events > 0 {
            writeln!(
                f,
                "lost:      {} events (damaged; moved aside by weir verify --repair): {}",
                self.lost_events,
                ranges_text(&self.lost_ranges)
            )?;
        }
        for u in &self.unlisted {
            writeln!(
                f,
                "unlisted:  {u} (not in the catalog; run weir verify --repair)"
            )?;
        }
        writeln!(f, "schemas:")?;
        for (name, n) in &self.schemas {
            writeln!(f, "  {name}: {n}")?;
        }
        if !self.community_id.is_empty() {
            writeln!(
                f,
                "community_id (Suricata's; computed at import for zeek.conn logs without one):"
            )?;
            for (name, n) in &self.community_id {
                let of = self.schemas.get(name).copied().unwrap_or(*n);
                writeln!(f, "  {name}: {n} of {of} events")?;
            }
        }
        Ok(())
    }
}

/// Whether the events of `schema` carry a Community ID field.
fn has_community_id(schema: &crate::types::Schema) -> bool {
    schema
        .fields
        .iter()
        .any(|f| f.name == crate::types::COMMUNITY_ID_FIELD)
}

/// One problem found by [`Archive::verify`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The file concerned.
    pub file: String,
    /// What is wrong.
    pub reason: String,
}

impl Problem {
    fn from_error(path: &Path, e: impl Into<StoreError>) -> Problem {
        let reason = match e.into() {
            StoreError::Segment(e) => e.corruption_reason().unwrap_or_else(|| e.to_string()),
            StoreError::CorruptCatalog { reason, .. } => reason,
            StoreError::CatalogJson {
                context, source, ..
            } => format!("{context}: {source}"),
            StoreError::Wal(WalError::Corrupt { offset, reason, .. }) => {
                format!("at offset {offset}: {reason}")
            }
            other => other.to_string(),
        };
        Problem {
            file: path.display().to_string(),
            reason,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.reason)
    }
}

/// The result of [`Archive::verify`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Segments that passed.
    pub segments: u64,
    /// Events checked (sealed and live WAL records).
    pub events: u64,
    /// Damage found; empty means the archive is sound.
    pub problems: Vec<Problem>,
    /// Not damage, but worth telling (a torn WAL tail, a seal in progress).
    pub warnings: Vec<String>,
}

impl VerifyReport {
    fn problem(&mut self, path: &Path, reason: String) {
        self.problems.push(Problem {
            file: path.display().to_string(),
            reason,
        });
    }

    /// Whether no problem was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::without;

    /// Lost IDs are cut out of the erased ranges they lie in.
    #[test]
    fn erased_ranges_without_the_lost_ones() {
        let erased = [[0u64, 10], [20, 30], [40, 50]];
        let lost = [[0u64, 3], [22, 25], [28, 30], [40, 50]];
        assert_eq!(
            without(erased.into_iter(), &lost),
            vec![[3, 10], [20, 22], [25, 28]]
        );
        assert_eq!(without(erased.into_iter(), &[]), erased.to_vec());
    }
}
