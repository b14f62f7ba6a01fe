//! `weir verify --repair`: puts a database's catalog back in line with its segment files,
//! never deleting a file.
//!
//! # What it does, in order (one report line per action)
//!
//! 1. Takes the writer lock ([`super::LOCK_FILE`]): it refuses while an import runs.
//! 2. Loads the catalog. A corrupt one is moved aside to `damaged/` and, like a missing one, is
//!    rebuilt from the segment files (each segment's header holds its uuid, ID intervals and
//!    event count; its batches give the schemas and `ts` range).
//! 3. Checks every listed segment (verifier, every batch checksum, agreement with its entry). A
//!    damaged one is moved aside to `damaged/` and its entry dropped; an entry whose file is
//!    missing is dropped (its events are gone either way; `weir verify` then reports the gap).
//! 4. Checks every segment file the catalog does not list. One the write-ahead log points into
//!    is left alone (an interrupted seal: the next writer replays and removes it). A damaged
//!    one, or one whose IDs overlap a listed segment (a duplicate), is moved aside to
//!    `damaged/`; a valid one is added to the catalog.
//!    Files the catalog lists under `pending_deletion` (erased, or replaced by compaction) are
//!    not segments of the archive and are left alone (the next writer deletes them); a
//!    rebuilt catalog (lost or corrupt) no longer knows them, so they would be added back.
//!    Each segment that stays gets its index file (`crate::segment`'s index files) if it has
//!    none (an archive written before them) or one that does not match it.
//! 5. Writes the catalog atomically if anything changed. `next_id` is the end of the last
//!    listed interval, or the old catalog's `next_id` if that is larger.
//!
//! # Invariants
//!
//! - Nothing is deleted or truncated: files are only renamed into `DIR/damaged/` (keeping their
//!   names, with `.1`, `.2`, … appended if taken; a segment's index file goes with it), so
//!   every byte is still there for a human. The one file rewritten is a segment's index
//!   (`crate::segment`'s index files) that does not match its verified segment: it is derived
//!   from the segment, and replaced atomically.
//! - The write-ahead log is not touched.

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::catalog::{Catalog, CatalogEntry};
use super::{take_lock, Result, StoreError, SEGMENTS_DIR, WAL_FILE};
use crate::segment::Segment;
use crate::wal::WalReader;

/// The directory inside the database that damaged files are moved to.
pub const DAMAGED_DIR: &str = "damaged";

/// What [`repair`] did: one line per action, in order (empty: nothing needed doing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// The actions taken.
    pub actions: Vec<String>,
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
    let (old, mut changed) = match Catalog::load(dir) {
        Ok(c) => {
            let rebuild = !cat_path.exists();
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
    let mut entries: Vec<CatalogEntry> = Vec::new();
    for entry in &old.segments {
        let path = dir.join(&entry.file);
        if !path.exists() {
            changed = true;
            report.actions.push(format!(
                "dropped the catalog entry of missing segment {} (events {} are lost)",
                path.display(),
                show(&entry.ranges().collect::<Vec<_>>())
            ));
            continue;
        }
        match check_segment(&path).and_then(|(e, seg)| {
            if e.uuid == entry.uuid && e.intervals == entry.intervals && e.events == entry.events
            {
                Ok(seg)
            } else {
                Err(format!(
                    "does not match its catalog entry (uuid {}, intervals {:?}; catalog: uuid {}, intervals {:?})",
                    e.uuid, e.intervals, entry.uuid, entry.intervals
                ))
            }
        }) {
            Ok(seg) => {
                report.actions.extend(repair_index(&seg));
                entries.push(entry.clone());
            }
            Err(why) => {
                changed = true;
                let to = move_aside(dir, &path)?;
                report.actions.push(format!(
                    "moved damaged segment {} to {} and dropped its catalog entry ({why})",
                    path.display(),
                    to.display()
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
        if named.iter().any(|u| crate::segment::file_name(u) == name) {
            report.actions.push(format!(
                "left segment {} alone: the write-ahead log points into it (the next import replays and removes it)",
                path.display()
            ));
            continue;
        }
        let (mut entry, seg) = match check_segment(&path) {
            Ok(found) => found,
            Err(why) => {
                let to = move_aside(dir, &path)?;
                report.actions.push(format!(
                    "moved damaged segment {} to {} ({why})",
                    path.display(),
                    to.display()
                ));
                continue;
            }
        };
        let overlaps = entries.iter().find(|e| {
            e.ranges()
                .any(|a| entry.ranges().any(|b| a.start < b.end && b.start < a.end))
        });
        if let Some(other) = overlaps {
            let to = move_aside(dir, &path)?;
            report.actions.push(format!(
                "moved segment {} to {}: its events {} overlap those of listed segment {}",
                path.display(),
                to.display(),
                show(&entry.ranges().collect::<Vec<_>>()),
                other.file
            ));
            continue;
        }
        report.actions.extend(repair_index(&seg));
        entry.index_bytes =
            std::fs::metadata(crate::segment::index_path(&path)).map_or(0, |m| m.len());
        report.actions.push(format!(
            "added segment {} (events {}) to the catalog",
            path.display(),
            show(&entry.ranges().collect::<Vec<_>>())
        ));
        entries.push(entry);
        changed = true;
    }
    if changed {
        entries.sort_by_key(|e| e.intervals.first().map_or(0, |r| r[0]));
        let cat = catalog_of(entries, old.next_id, &old);
        cat.save(dir, true)?;
        report.actions.push(format!(
            "wrote catalog {} ({} segments, next_id {})",
            cat_path.display(),
            cat.segments.len(),
            cat.next_id
        ));
    }
    Ok(report)
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

/// Opens and fully verifies the segment at `path` and describes it as a catalog entry (with
/// the open segment); `Err` says what is wrong.
fn check_segment(path: &Path) -> std::result::Result<(CatalogEntry, Segment), String> {
    let seg = Segment::open_verified(path).map_err(|e| e.to_string())?;
    seg.verify_all().map_err(|e| e.to_string())?;
    let mut schemas = std::collections::BTreeMap::new();
    let mut ts: Option<(i64, i64)> = None;
    for b in seg.batches() {
        let b = b.map_err(|e| e.to_string())?;
        *schemas.entry(b.schema().name.clone()).or_insert(0u64) += b.len() as u64;
        if let Some((lo, hi)) = b.ts_range() {
            ts = Some(ts.map_or((lo, hi), |(a, z)| (a.min(lo), z.max(hi))));
        }
    }
    let bytes = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    let index_bytes = std::fs::metadata(crate::segment::index_path(path)).map_or(0, |m| m.len());
    let uuid = seg.uuid();
    if path.file_name().and_then(|n| n.to_str()) != Some(&crate::segment::file_name(&uuid)) {
        return Err(format!("its header names uuid {uuid}, not its file name"));
    }
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
    Ok((entry, seg))
}

/// Moves `path` into `dir/damaged/` (same name, with a numeric suffix if taken); returns the
/// new path. A rename within the database: never a copy, never a deletion.
fn move_aside(dir: &Path, path: &Path) -> Result<PathBuf> {
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
