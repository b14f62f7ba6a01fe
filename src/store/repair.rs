//! `weir verify --repair`: puts a database's catalog back in line with its segment files,
//! never deleting a file.
//!
//! # What it does, in order (one report line per action)
//!
//! 1. Takes the writer lock ([`super::LOCK_FILE`]): it refuses while an import runs.
//! 2. Loads the catalog. A corrupt one is moved aside to `damaged/` and, like a missing one, is
//!    rebuilt from the segment files (each segment's header holds its uuid, ID intervals and
//!    event count; its batches give the schemas and `ts` range).
//! 3. Checks every listed segment: the verifier and its metadata checksum, agreement with its
//!    entry, then every batch (its checksum, and that its rows decode with its schema). One
//!    whose header or metadata is damaged, or that does not match its entry, is moved aside to
//!    `damaged/`, its entry dropped and its IDs recorded as lost. One with damaged *batches*
//!    only is **salvaged**: its intact batches are rewritten into new segments by the rewrite
//!    machinery of `rewrite.rs` (staged in `staging/`, like an erase's; each batch keeps its
//!    first ID, so every intact event keeps its ID), the damaged batches' IDs are recorded as
//!    lost, and the original is moved aside to `damaged/` once the catalog lists its salvage.
//!    An entry whose file is missing is dropped and its IDs recorded as lost.
//! 4. Checks every segment file the catalog does not list. One the write-ahead log points into
//!    is left alone (an interrupted seal: the next writer replays and removes it). One whose
//!    header or metadata is damaged, or whose IDs overlap a listed segment or a salvage (a
//!    duplicate, e.g. the original of a salvage that a crash left in place), is moved aside to
//!    `damaged/`; one with damaged batches is salvaged as in step 3; a valid one is added to
//!    the catalog (and its IDs are no longer lost, if they were: a segment put back).
//!    Files the catalog lists under `pending_deletion` (erased, or replaced by compaction) are
//!    not segments of the archive and are left alone (the next writer deletes them); a
//!    rebuilt catalog (lost or corrupt) no longer knows them, so they would be added back.
//!    Each segment that stays gets its index file (`crate::segment`'s index files) if it has
//!    none (an archive written before them) or one that does not match it.
//! 5. Commits: the salvaged segments are announced in the catalog as it was (under
//!    `pending_deletion`) and moved into `segments/` (`rewrite.rs`, step 2); then the catalog
//!    is written atomically if anything changed, and only then are the salvaged originals
//!    moved aside. `next_id` is the largest of the end of the last listed interval, the old
//!    catalog's `next_id`, the end of the IDs lost, and the write-ahead log's first ID. Every
//!    ID below it that no segment holds and that is not erased (the IDs lost above, and gaps:
//!    a rebuilt catalog knows no erased IDs) is recorded in the catalog's `lost` IDs, which
//!    are part of its `erased` ones (see [`super::catalog`]). So after a repair `weir verify`
//!    finds the ID space whole, and a second repair finds nothing to do.
//!
//! When the catalog was rebuilt (step 2), its checkpoints of followed files are rebuilt from the
//! newest listed segment (format 8 records them, see [`super::catalog`]); if that segment
//! does not record them, the catalog says `"checkpoints_lost": true` and the report says so.
//! A catalog that loaded keeps its checkpoints.
//!
//! The report names every ID range lost, with its number of events ([`RepairReport::lost`]).
//!
//! # Invariants
//!
//! - Nothing of the archive is deleted or truncated: files are only renamed into
//!   `DIR/damaged/` (keeping their names, with `.1`, `.2`, … appended if taken; a segment's
//!   index file goes with it), so every byte is still there for a human. What repair writes
//!   is derived and replaced atomically: a segment's index (`crate::segment`'s index files)
//!   that does not match its verified segment, the catalog, and salvaged segments (new files;
//!   `staging/`, which holds only outputs of changes that never committed, is emptied first,
//!   as every writer does).
//! - A crash at any point leaves an archive that reads as before the repair or after it: the
//!   salvaged segments are pending deletion until the catalog lists them, and a salvaged
//!   original still in `segments/` after the commit is an unlisted duplicate, which readers
//!   warn about and the next repair moves aside.
//! - The write-ahead log is repaired last, by `wal_repair.rs` (its module docs say how): an
//!   intact one (or one ending in a torn last record, which the writer cuts off) is not
//!   touched; a damaged one is copied into `damaged/` before it is replaced.

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::catalog::{Catalog, CatalogEntry};
use super::rewrite::{clean_staging, move_in, Staged};
use super::{take_lock, Result, StoreError, SEGMENTS_DIR, WAL_FILE};
use crate::segment::{Compression, Segment, DEFAULT_MAX_SEGMENT_SIZE};
use crate::wal::WalReader;

/// The directory inside the database that damaged files are moved to.
pub const DAMAGED_DIR: &str = "damaged";

/// What [`repair`] did: one line per action, in order (empty: nothing needed doing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// The actions taken.
    pub actions: Vec<String>,
    /// The event IDs this repair found lost (damaged batches and segments moved aside,
    /// entries of missing files, gaps in no segment), ascending and merged; recorded in the
    /// catalog's `lost` (and `erased`) IDs.
    pub lost: Vec<Range<u64>>,
}

impl RepairReport {
    /// The number of events of [`RepairReport::lost`].
    pub fn lost_events(&self) -> u64 {
        self.lost.iter().map(|r| r.end - r.start).sum()
    }
}

/// A segment with damaged batches, rewritten without them (step 3 of the module docs).
struct Salvage {
    /// The damaged original, moved to `damaged/` once the catalog lists its salvage.
    path: PathBuf,
    /// The IDs of its damaged batches.
    lost: Vec<Range<u64>>,
    /// Its damaged batches and what is wrong with each.
    damaged: Vec<String>,
    /// The events kept.
    kept: u64,
    /// The new segments (indices into the staged entries).
    new: Range<usize>,
}

/// Repairs the database in `dir` (see the module docs).
pub fn repair(dir: &Path) -> Result<RepairReport> {
    if !dir.is_dir() {
        return Err(StoreError::NoDatabase {
            dir: dir.to_path_buf(),
        });
    }
    if !super::looks_like_archive(dir) {
        return Err(StoreError::NoArchive {
            dir: dir.to_path_buf(),
        });
    }
    let _lock = take_lock(dir)?;
    let mut report = RepairReport::default();
    let cat_path = Catalog::path(dir);
    let mut rebuilt = true;
    let (old, mut changed) = match Catalog::load(dir) {
        Ok(c) => {
            let rebuild = !cat_path.exists();
            rebuilt = rebuild;
            if rebuild {
                report.actions.push(format!(
                    "catalog {} is missing: rebuilding it from the segment files",
                    cat_path.display()
                ));
            }
            (c, rebuild)
        }
        Err(e) => {
            let to = move_aside(dir, &cat_path)?;
            report.actions.push(format!(
                "moved corrupt catalog {} to {} ({e}): rebuilding it from the segment files",
                cat_path.display(),
                to.display()
            ));
            (Catalog::default(), true)
        }
    };
    let mut lost: Vec<Range<u64>> = Vec::new();
    let mut entries: Vec<CatalogEntry> = Vec::new();
    let mut staged: Option<Staged> = None;
    let mut salvages: Vec<Salvage> = Vec::new();
    for entry in &old.segments {
        let path = dir.join(&entry.file);
        if !path.exists() {
            changed = true;
            lost.extend(entry.ranges());
            report.actions.push(format!(
                "dropped the catalog entry of missing segment {} (events {} are lost)",
                path.display(),
                show_count(&entry.ranges().collect::<Vec<_>>())
            ));
            continue;
        }
        let checked = check_segment(&path).and_then(|c| {
            let (uuid, intervals, events) = c.identity();
            if uuid == entry.uuid && intervals == entry.intervals && events == entry.events {
                Ok(c)
            } else {
                Err(format!(
                    "does not match its catalog entry (uuid {uuid}, intervals {intervals:?}; catalog: uuid {}, intervals {:?})",
                    entry.uuid, entry.intervals
                ))
            }
        });
        match checked {
            Ok(Checked::Intact(_, seg)) => {
                report.actions.extend(repair_index(&seg));
                entries.push(entry.clone());
            }
            Ok(Checked::Batches(seg, damaged)) => {
                changed = true;
                salvage(dir, &seg, damaged, &mut staged, &mut salvages)?;
            }
            Err(why) => {
                changed = true;
                let to = move_aside(dir, &path)?;
                lost.extend(entry.ranges());
                report.actions.push(format!(
                    "moved damaged segment {} to {} and dropped its catalog entry ({why}); events {} are lost",
                    path.display(),
                    to.display(),
                    show_count(&entry.ranges().collect::<Vec<_>>())
                ));
            }
        }
    }
    let named = wal_named_segments(dir);
    // Files pending deletion (erased or dropped by compaction) are not segments of the
    // archive: never added back.
    let listed: Catalog = catalog_of(entries.clone(), 0, &old);
    for name in super::unlisted_segment_files(dir, &listed)? {
        let path = dir.join(SEGMENTS_DIR).join(&name);
        if salvages.iter().any(|sv| sv.path == path) {
            // Salvaged above; moved aside once the catalog lists its salvage.
            continue;
        }
        if named.iter().any(|u| crate::segment::file_name(u) == name) {
            report.actions.push(format!(
                "left segment {} alone: the write-ahead log points into it (the next import replays and removes it)",
                path.display()
            ));
            continue;
        }
        // Its IDs first (the header and metadata are checksummed): a copy of events that a
        // listed segment, or the salvage of one, holds is a duplicate, whatever its batches.
        let intervals = match Segment::open_verified(&path) {
            Ok(seg) => seg.intervals().to_vec(),
            Err(e) => {
                let to = move_aside(dir, &path)?;
                report.actions.push(format!(
                    "moved damaged segment {} to {} ({e})",
                    path.display(),
                    to.display()
                ));
                continue;
            }
        };
        let salvaged = staged.as_ref().map_or(&[][..], |s| &s.entries[..]);
        let overlaps = entries.iter().chain(salvaged).find(|e| {
            e.ranges()
                .any(|a| intervals.iter().any(|b| a.start < b.end && b.start < a.end))
        });
        if let Some(other) = overlaps {
            let to = move_aside(dir, &path)?;
            report.actions.push(format!(
                "moved segment {} to {}: its events {} overlap those of listed segment {}",
                path.display(),
                to.display(),
                show(&intervals),
                other.file
            ));
            continue;
        }
        match check_segment(&path) {
            Ok(Checked::Intact(mut entry, seg)) => {
                report.actions.extend(repair_index(&seg));
                entry.index_bytes =
                    std::fs::metadata(crate::segment::index_path(&path)).map_or(0, |m| m.len());
                report.actions.push(format!(
                    "added segment {} (events {}) to the catalog",
                    path.display(),
                    show(&entry.ranges().collect::<Vec<_>>())
                ));
                entries.push(entry);
            }
            Ok(Checked::Batches(seg, damaged)) => {
                salvage(dir, &seg, damaged, &mut staged, &mut salvages)?;
            }
            Err(why) => {
                let to = move_aside(dir, &path)?;
                report.actions.push(format!(
                    "moved damaged segment {} to {} ({why})",
                    path.display(),
                    to.display()
                ));
                continue;
            }
        }
        changed = true;
    }
    // The salvaged segments join the archive the way an erase's do (`rewrite.rs`): announced
    // under `pending_deletion` in the catalog as it was, moved in, then committed below.
    let added = match staged {
        Some(s) => s.finish()?,
        None => Vec::new(),
    };
    if !added.is_empty() {
        let mut announced = old.clone();
        move_in(dir, &mut announced, &added, true)?;
    }
    for sv in &salvages {
        lost.extend(sv.lost.iter().cloned());
    }
    entries.extend(added.iter().cloned());
    entries.sort_by_key(|e| e.intervals.first().map_or(0, |r| r[0]));
    let mut cat = catalog_of(entries, old.next_id, &old);
    // The IDs lost now, those lost before, and the IDs of no segment (a rebuilt catalog knows
    // no erased ranges; a segment file gone without its entry) are all lost: recorded, so
    // `next_id` and the segments agree. IDs a listed segment holds (one put back) are not.
    lost.sort_by_key(|r| r.start);
    if let Some(end) = lost.iter().map(|r| r.end).max() {
        cat.next_id = cat.next_id.max(end);
    }
    if let Some(base) = wal_base(dir) {
        if base > cat.next_id {
            report.actions.push(format!(
                "the write-ahead log starts at event ID {base}, after the segments' end {}: next_id is {base}",
                cat.next_id
            ));
            cat.next_id = base;
            changed = true;
        }
    }
    cat.add_lost(&lost);
    let held: Vec<Range<u64>> = cat.segments.iter().flat_map(|e| e.ranges()).collect();
    let before = (cat.erased.clone(), cat.lost.clone());
    cat.remove_lost(&held);
    if (cat.erased.clone(), cat.lost.clone()) != (before.0.clone(), before.1.clone()) {
        changed = true;
        report.actions.push(format!(
            "events {} are held by a listed segment again: no longer lost",
            show(&cut_ranges(&before.1, &cat.lost))
        ));
    }
    if rebuilt {
        rebuild_checkpoints(dir, &mut cat, &mut report);
    }
    let gaps = gaps(&cat);
    if !gaps.is_empty() {
        changed = true;
        report.actions.push(format!(
            "events {} are in no segment file: recorded as lost",
            show_count(&gaps)
        ));
        cat.add_lost(&gaps);
        lost.extend(gaps);
    }
    if changed {
        cat.reindex(dir)?;
        cat.save(dir, true)?;
        // Only now are the damaged originals no longer listed: moved aside (a crash before
        // leaves them unlisted, overlapping their salvage; the next repair moves them aside).
        for sv in &salvages {
            let to = move_aside(dir, &sv.path)?;
            let new: Vec<&str> = added[sv.new.clone()]
                .iter()
                .map(|e| e.file.as_str())
                .collect();
            report.actions.push(format!(
                "salvaged damaged segment {}: moved it to {}, its {} intact events kept their IDs in {}; events {} of {} damaged batches are lost ({})",
                sv.path.display(),
                to.display(),
                sv.kept,
                if new.is_empty() { "no segment".to_string() } else { new.join(", ") },
                show_count(&sv.lost),
                sv.damaged.len(),
                sv.damaged.join("; ")
            ));
        }
        clean_staging(dir)?;
        report.actions.push(format!(
            "wrote catalog {} ({} segments, next_id {})",
            cat_path.display(),
            cat.segments.len(),
            cat.next_id
        ));
    }
    report.lost = merged(lost);
    // The write-ahead log last, against the catalog committed above.
    super::wal_repair::repair_wal(dir, &mut report)?;
    Ok(report)
}

/// Rebuilds the checkpoints of a rebuilt catalog from its newest segment (see
/// [`super::catalog`]): they are those as of its last event; or records that they are lost.
fn rebuild_checkpoints(dir: &Path, cat: &mut Catalog, report: &mut RepairReport) {
    let Some(newest) = cat.segments.last() else {
        // Nothing sealed: the write-ahead log holds every checkpoint there is.
        return;
    };
    let path = dir.join(&newest.file);
    let found = Segment::open(&path).and_then(|seg| Ok((seg.version(), seg.checkpoints()?)));
    match found {
        Ok((_, Some(list))) => {
            report.actions.push(format!(
                "rebuilt the checkpoints of {} from segment {}, the newest",
                plural_files(list.len()),
                path.display()
            ));
            cat.checkpoints = list;
            cat.checkpoints_lost = false;
        }
        Ok((version, None)) => {
            report.actions.push(format!(
                "the checkpoints of followed files are lost: the newest segment {} (format {version}) does not record them; `weir import --follow` refuses to start until you choose --from-start (read every matching file from byte 0) or --from-end (only lines written from now on)",
                path.display()
            ));
            cat.checkpoints.clear();
            cat.checkpoints_lost = true;
        }
        Err(e) => {
            report.actions.push(format!(
                "the checkpoints of followed files are lost: the newest segment {} cannot be read ({e}); `weir import --follow` refuses to start until you choose --from-start or --from-end",
                path.display()
            ));
            cat.checkpoints.clear();
            cat.checkpoints_lost = true;
        }
    }
}

fn plural_files(n: usize) -> String {
    match n {
        1 => "1 followed file".into(),
        n => format!("{n} followed files"),
    }
}

/// Stages the intact batches of `seg` (whose header and metadata are intact) into new
/// segments, keeping their IDs; a segment with no intact batch is staged as nothing (and so
/// lost whole).
fn salvage(
    dir: &Path,
    seg: &Segment,
    damaged: Vec<(usize, String)>,
    staged: &mut Option<Staged>,
    salvages: &mut Vec<Salvage>,
) -> Result<()> {
    let staged = match staged {
        Some(s) => s,
        None => staged.insert(Staged::new(
            dir,
            DEFAULT_MAX_SEGMENT_SIZE,
            Compression::default(),
            true,
            true,
        )?),
    };
    // The salvage records the checkpoints the original recorded (its metadata is intact).
    staged.set_checkpoints(seg.checkpoints()?)?;
    let first = staged.entries.len();
    let mut lost = Vec::new();
    let mut kept = 0u64;
    for i in 0..seg.len() {
        if damaged.iter().any(|(d, _)| *d == i) {
            if let Some((_, ids, _)) = seg.batch_meta(i) {
                lost.push(ids);
            }
            continue;
        }
        if let Some(b) = seg.batch(i) {
            let b = b?.to_batch();
            kept += b.len() as u64;
            staged.add(b)?;
        }
    }
    // Each salvaged segment gets its own new segments, as an erase's do.
    staged.seal()?;
    salvages.push(Salvage {
        path: seg.path().to_path_buf(),
        lost: merged(lost),
        damaged: damaged.into_iter().map(|(_, why)| why).collect(),
        kept,
        new: first..staged.entries.len(),
    });
    Ok(())
}

/// The IDs below `cat.next_id` that no segment holds and that are not erased.
fn gaps(cat: &Catalog) -> Vec<Range<u64>> {
    let mut covered: Vec<Range<u64>> = cat
        .segments
        .iter()
        .flat_map(|e| e.ranges())
        .chain(cat.erased_ranges())
        .collect();
    covered.sort_by_key(|r| r.start);
    let mut out = Vec::new();
    let mut at = 0u64;
    for r in covered {
        if r.start > at {
            out.push(at..r.start);
        }
        at = at.max(r.end);
    }
    if at < cat.next_id {
        out.push(at..cat.next_id);
    }
    out
}

/// `ranges` sorted and merged.
fn merged(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges.into_iter().filter(|r| r.start < r.end) {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// The IDs of `a` not in `b` (both catalog range lists).
fn cut_ranges(a: &[[u64; 2]], b: &[[u64; 2]]) -> Vec<Range<u64>> {
    let mut c = Catalog::default();
    c.erased = a.to_vec();
    c.lost = a.to_vec();
    c.remove_lost(&b.iter().map(|[x, y]| *x..*y).collect::<Vec<_>>());
    c.lost_ranges().collect()
}

/// A catalog of `entries` (in ID order), ending at the later of their end and `next_id`,
/// with the erased ranges, generation and files pending deletion of `old`.
fn catalog_of(entries: Vec<CatalogEntry>, next_id: u64, old: &Catalog) -> Catalog {
    let mut cat = Catalog::default();
    for e in entries {
        cat.push(e);
    }
    cat.next_id = cat.next_id.max(next_id);
    cat.generation = old.generation;
    cat.erased = old.erased.clone();
    cat.lost = old.lost.clone();
    cat.checkpoints = old.checkpoints.clone();
    cat.checkpoints_lost = old.checkpoints_lost;
    cat.pending_deletion = old.pending_deletion.clone();
    cat
}

/// The segments the write-ahead log's records name (none if it is missing or unreadable).
fn wal_named_segments(dir: &Path) -> Vec<uuid::Uuid> {
    match WalReader::open(&dir.join(WAL_FILE)) {
        Ok(mut r) => {
            while let Ok(Some(_)) = r.next_entry(u64::MAX) {}
            r.named_segments().to_vec()
        }
        Err(_) => Vec::new(),
    }
}

/// The first event ID of the write-ahead log (none if it is missing or unreadable).
fn wal_base(dir: &Path) -> Option<u64> {
    WalReader::open(&dir.join(WAL_FILE))
        .ok()
        .map(|r| r.base_id())
}

/// Writes the index file of `seg` (opened with the verifier) when it has none (a segment
/// written before index files) or one that does not match it; returns the action taken. An
/// index is derived from its segment, so writing it (atomically) loses nothing.
fn repair_index(seg: &Segment) -> Option<String> {
    let (done, why) = match crate::segment::check_index(seg) {
        Ok(true) => return None,
        Ok(false) => ("wrote", "it had none".to_string()),
        Err(why) => ("rewrote", why),
    };
    Some(match crate::segment::write_index(seg, true) {
        Ok((idx, _)) => format!("{done} index {} from its segment ({why})", idx.display()),
        Err(e) => format!(
            "could not write the index of {} ({why}): {e}",
            seg.path().display()
        ),
    })
}

/// What checking a segment found.
enum Checked {
    /// Every batch intact: its catalog entry (with the open segment).
    Intact(CatalogEntry, Segment),
    /// Header and metadata intact (so its IDs are known), but some batches damaged: their
    /// indices and what is wrong with each.
    Batches(Segment, Vec<(usize, String)>),
}

impl Checked {
    /// The uuid, intervals and event count its header gives.
    fn identity(&self) -> (String, Vec<[u64; 2]>, u64) {
        let seg = match self {
            Checked::Intact(_, seg) | Checked::Batches(seg, _) => seg,
        };
        (
            seg.uuid().hyphenated().to_string(),
            seg.intervals().iter().map(|r| [r.start, r.end]).collect(),
            seg.events(),
        )
    }
}

/// Opens and fully verifies the segment at `path` (header, metadata, then every batch: its
/// checksum, and that its rows decode with its schema, as `weir verify` checks). `Err` says
/// what is wrong when the segment cannot be read at all (its header or metadata).
fn check_segment(path: &Path) -> std::result::Result<Checked, String> {
    let seg = Segment::open_verified(path).map_err(|e| e.to_string())?;
    let uuid = seg.uuid();
    if path.file_name().and_then(|n| n.to_str()) != Some(&crate::segment::file_name(&uuid)) {
        return Err(format!("its header names uuid {uuid}, not its file name"));
    }
    let mut schemas = std::collections::BTreeMap::new();
    let mut ts: Option<(i64, i64)> = None;
    let mut damaged = Vec::new();
    for i in 0..seg.len() {
        let b = match seg.batch(i) {
            Some(Ok(b)) => b,
            Some(Err(e)) => {
                damaged.push((i, e.to_string()));
                continue;
            }
            None => continue,
        };
        if let Err(why) = super::archive::check_rows(b.schema(), b.rows()) {
            damaged.push((i, format!("batch {i}: {why}")));
            continue;
        }
        *schemas.entry(b.schema().name.clone()).or_insert(0u64) += b.len() as u64;
        if let Some((lo, hi)) = b.ts_range() {
            ts = Some(ts.map_or((lo, hi), |(a, z)| (a.min(lo), z.max(hi))));
        }
    }
    if !damaged.is_empty() {
        return Ok(Checked::Batches(seg, damaged));
    }
    let bytes = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    let index_bytes = std::fs::metadata(crate::segment::index_path(path)).map_or(0, |m| m.len());
    let entry = CatalogEntry {
        uuid: uuid.hyphenated().to_string(),
        file: format!("{SEGMENTS_DIR}/{}", crate::segment::file_name(&uuid)),
        bytes,
        index_bytes,
        events: seg.events(),
        batches: seg.len() as u64,
        intervals: seg.intervals().iter().map(|r| [r.start, r.end]).collect(),
        schemas,
        ts: ts.map(|(a, b)| [a, b]),
    };
    Ok(Checked::Intact(entry, seg))
}

/// Moves `path` into `dir/damaged/` (same name, with a numeric suffix if taken); returns the
/// new path. A rename within the database: never a copy, never a deletion.
pub(super) fn move_aside(dir: &Path, path: &Path) -> Result<PathBuf> {
    let damaged = dir.join(DAMAGED_DIR);
    std::fs::create_dir_all(&damaged).map_err(|e| StoreError::io("create", &damaged, e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let mut to = damaged.join(&name);
    let mut n = 1;
    while to.exists() {
        to = damaged.join(format!("{name}.{n}"));
        n += 1;
    }
    std::fs::rename(path, &to)
        .map_err(|e| StoreError::io(format!("move to {}", to.display()), path, e))?;
    // A segment's index goes with it (an index without its segment is removed by writers).
    let index = crate::segment::index_path(path);
    if index.exists() && path.extension() != index.extension() {
        let to = crate::segment::index_path(&to);
        std::fs::rename(&index, &to)
            .map_err(|e| StoreError::io(format!("move to {}", to.display()), &index, e))?;
    }
    crate::fs::sync_dir(&damaged)?;
    if let Some(parent) = path.parent() {
        crate::fs::sync_dir(parent)?;
    }
    Ok(to)
}

/// Formats ID intervals as `[a, b) [c, d)`.
fn show(ranges: &[Range<u64>]) -> String {
    super::show_ranges(ranges)
}

/// Formats ID intervals with their number of IDs: `[a, b) [c, d) (N events)`.
fn show_count(ranges: &[Range<u64>]) -> String {
    let n: u64 = ranges.iter().map(|r| r.end - r.start).sum();
    format!("{} ({n} events)", show(ranges))
}
