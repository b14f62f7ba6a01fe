//! The write-ahead log's part of `weir verify --repair` (see `repair.rs` for the segments'
//! and the catalog's): it runs after them, with the writer lock still held.
//!
//! # What it does
//!
//! 1. Reads the log as replay would (the catalog's `next_id` says which records sealed
//!    segments hold already). A log whose header is damaged, or that is shorter than its
//!    header (an empty file), is read without it, from where the header ends, expecting
//!    the catalog's `next_id` ([`WalReader::open_headless`]). At a damaged record it goes
//!    on at the next intact record ([`WalReader::resync`]: a plausible header whose checksum
//!    holds, a payload that decodes, rows that match their CRC), so the intact records after
//!    a damaged one are kept; the event IDs between the last good record and the next
//!    intact one are those of the damaged records. A log that is intact, or only ends in a
//!    torn last record (which the writer cuts off itself, as after any crash), is left alone.
//! 2. A damaged log: its intact records (those past the catalog's `next_id`) are sealed into
//!    new segments as an erase's are (`rewrite.rs`: staged, announced under
//!    `pending_deletion`, moved in), each batch under its own IDs. This is how records after
//!    a gap are kept: a log's records must be contiguous, segments may leave IDs out.
//! 3. The original log is *copied* into `damaged/` (every byte kept for a human), then the
//!    catalog is committed: the new segments listed, `next_id` past the last intact record,
//!    the damaged records' IDs recorded as lost (see [`super::catalog`]), the checkpoints of
//!    followed files moved by the intact records' marks.
//! 4. If anything was lost, the active segment files the log pointed into (and, when the
//!    log's header was unreadable, every active segment file) are moved into `damaged/`:
//!    they may hold the rows of the damaged records. If nothing was lost they are left, and
//!    the next writer removes them: every row in them that a record named is in a sealed
//!    segment now, and the new log names none of them.
//! 5. The log is replaced (atomically) by an empty one starting at the new `next_id`.
//!
//! A missing log (or one without a single intact record) beside an active segment file that
//! holds rows ([`StoreError::OrphanedActiveSegment`]): those rows' schemas were in the lost
//! records (a segment's schemas are written when it is sealed), so they cannot be rebuilt;
//! the file is moved into `damaged/` (never deleted) and the report says so and from which ID
//! the events are lost. The writer can then open again.
//!
//! # Crash safety
//!
//! A crash before the catalog's commit leaves the archive as before (the staged segments are
//! pending deletion, the log untouched). After it, the old log's records all lie below
//! `next_id`: replay and readers skip them without reading their rows, and the next repair
//! finds the damage again, seals nothing and replaces the log. The original log is in
//! `damaged/` before anything changes.

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::catalog::Catalog;
use super::repair::{move_aside, RepairReport, DAMAGED_DIR};
use super::rewrite::{move_in, Staged};
use super::{active_segment_files, show_ranges, Result, StoreError, SEGMENTS_DIR, WAL_FILE};
use crate::checkpoint::Checkpoints;
use crate::segment::{Compression, DEFAULT_MAX_SEGMENT_SIZE};
use crate::wal::{Entry, Wal, WalError, WalReader};

/// What reading the log found (step 1 of the module docs).
#[derive(Default)]
struct Scanned {
    /// Why the header could not be read, if it could not.
    header: Option<String>,
    /// Each damaged record: its offset and what is wrong.
    damage: Vec<(u64, String)>,
    /// The IDs of damaged records followed by an intact one.
    lost: Vec<Range<u64>>,
    /// Where the damage that runs to the end of the log starts (its offset, and the ID the
    /// records there would have started at), if it does.
    lost_tail: Option<(u64, u64)>,
    /// Intact records past the catalog's end.
    records: u64,
    /// Their events.
    events: u64,
    /// The ID after the last intact record.
    end_id: u64,
    /// The active segment files the records point into.
    named: Vec<uuid::Uuid>,
}

impl Scanned {
    fn is_damaged(&self) -> bool {
        self.header.is_some() || !self.damage.is_empty()
    }
}

/// Reads the log at `path` (step 1), handing each intact batch past `next_id` to `keep`.
fn scan(
    path: &Path,
    next_id: u64,
    mut keep: impl FnMut(crate::batch::Batch) -> Result<()>,
) -> Result<Scanned> {
    let mut out = Scanned {
        end_id: next_id,
        ..Scanned::default()
    };
    let mut reader = match WalReader::open(path) {
        Ok(r) => r,
        Err(e @ WalError::Corrupt { .. }) => {
            out.header = Some(e.to_string());
            WalReader::open_headless(path, next_id)?
        }
        Err(e) => return Err(e.into()),
    };
    loop {
        match reader.next_entry(next_id) {
            Ok(Some((_, Entry::Sealed(_)))) => {}
            Ok(Some((_, Entry::Batch(mut b)))) => {
                let ids = b.id_range();
                // Sealed already (a record of checkpoints only: moved them before the end).
                if ids.end <= next_id && (!b.is_empty() || ids.start < next_id) {
                    continue;
                }
                if ids.start < next_id {
                    b = b.split_off((next_id - ids.start) as usize);
                }
                if !b.is_empty() {
                    out.records += 1;
                    out.events += b.len() as u64;
                }
                out.end_id = out.end_id.max(b.id_range().end);
                keep(b)?;
            }
            Ok(None) => break,
            Err(e @ WalError::Corrupt { .. }) => {
                let WalError::Corrupt { offset, reason, .. } = &e else {
                    break;
                };
                out.damage.push((*offset, reason.clone()));
                let from = reader.end_id().max(next_id);
                match reader.resync()? {
                    Some((_, skipped)) => {
                        let lost = skipped.start.max(next_id)..skipped.end;
                        if lost.start < lost.end {
                            out.lost.push(lost);
                        }
                    }
                    None => {
                        out.lost_tail = Some((*offset, from));
                        break;
                    }
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    out.named = reader.named_segments().to_vec();
    Ok(out)
}

/// Repairs the write-ahead log of the database in `dir` (see the module docs), adding its
/// actions and lost IDs to `report`. The caller holds the writer lock.
pub(super) fn repair_wal(dir: &Path, report: &mut RepairReport) -> Result<()> {
    let path = dir.join(WAL_FILE);
    let mut cat = Catalog::load(dir)?;
    if !path.exists() {
        return move_orphans(
            dir,
            &cat,
            &active_segment_files(dir)?,
            &format!("the write-ahead log {} is missing", path.display()),
            report,
        );
    }
    let found = scan(&path, cat.next_id, |_| Ok(()))?;
    if !found.is_damaged() {
        return Ok(());
    }
    if found.records == 0 && found.header.is_some() {
        // Nothing of the log is left: as if it were missing, but keep its bytes.
        let to = copy_aside(dir, &path)?;
        report.actions.push(format!(
            "copied the damaged write-ahead log {} to {} ({}); it holds no intact record",
            path.display(),
            to.display(),
            found.header.as_deref().unwrap_or_default()
        ));
        move_orphans(
            dir,
            &cat,
            &active_segment_files(dir)?,
            &format!(
                "the write-ahead log {} has no readable header",
                path.display()
            ),
            report,
        )?;
        Wal::create(&path, cat.next_id, crate::wal::SyncPolicy::Always)?;
        report.actions.push(format!(
            "started a new write-ahead log {} at event ID {}",
            path.display(),
            cat.next_id
        ));
        return Ok(());
    }
    // Step 2: seal the intact records, read a second time (the first read only looked for
    // damage, so that an intact log costs no compression).
    let mut staged: Option<Staged> = None;
    let mut checkpoints = Checkpoints::default();
    checkpoints.extend(cat.checkpoints.iter().cloned());
    let found = scan(&path, cat.next_id, |b| {
        checkpoints.apply_marks(b.marks());
        if b.is_empty() {
            return Ok(());
        }
        let s = match &mut staged {
            Some(s) => s,
            None => staged.insert(Staged::new(
                dir,
                DEFAULT_MAX_SEGMENT_SIZE,
                Compression::default(),
                true,
                true,
            )?),
        };
        s.add(b)
    })?;
    let list = checkpoints.to_vec();
    let added = match staged {
        Some(mut s) => {
            s.set_checkpoints(Some(list.clone()))?;
            s.finish()?
        }
        None => Vec::new(),
    };
    let announced_from = cat.clone();
    if !added.is_empty() {
        let mut announced = announced_from;
        move_in(dir, &mut announced, &added, true)?;
    }
    // Step 3.
    let to = copy_aside(dir, &path)?;
    let mut lost = found.lost.clone();
    for (offset, reason) in &found.damage {
        report.actions.push(format!(
            "write-ahead log {}: damaged record at offset {offset} ({reason})",
            path.display()
        ));
    }
    if let Some(h) = &found.header {
        report.actions.push(format!(
            "write-ahead log {}: damaged header ({h}); read its records without it",
            path.display()
        ));
    }
    report.actions.push(format!(
        "copied the damaged write-ahead log {} to {}",
        path.display(),
        to.display()
    ));
    for e in &added {
        cat.push(e.clone());
    }
    cat.next_id = cat.next_id.max(found.end_id);
    lost.sort_by_key(|r| r.start);
    cat.add_lost(&lost);
    cat.checkpoints = list;
    cat.reindex(dir)?;
    cat.save(dir, true)?;
    let files: Vec<&str> = added.iter().map(|e| e.file.as_str()).collect();
    report.actions.push(format!(
        "kept the {} intact records of the log ({} events) in {}",
        found.records,
        found.events,
        if files.is_empty() {
            "no segment".to_string()
        } else {
            files.join(", ")
        }
    ));
    if !lost.is_empty() {
        let n: u64 = lost.iter().map(|r| r.end - r.start).sum();
        report.actions.push(format!(
            "events {} ({n} events) of damaged records are lost",
            show_ranges(&lost)
        ));
    }
    if let Some((offset, from)) = found.lost_tail {
        report.actions.push(format!(
            "no intact record follows the damage at offset {offset}: the records from there to the end of the log are lost (their event IDs, from {from} on, are not known; {from} is given to the next event)"
        ));
    }
    // Step 4.
    if !lost.is_empty() || found.lost_tail.is_some() {
        let mut files: Vec<PathBuf> = found
            .named
            .iter()
            .map(|u| {
                dir.join(SEGMENTS_DIR)
                    .join(format!(".{}.tmp", crate::segment::file_name(u)))
            })
            .filter(|p| p.exists())
            .collect();
        if found.header.is_some() {
            for p in active_segment_files(dir)? {
                if !files.contains(&p) {
                    files.push(p);
                }
            }
        }
        for p in files {
            let to = move_aside(dir, &p)?;
            report.actions.push(format!(
                "moved active segment file {} to {}: it may hold the rows of the damaged records",
                p.display(),
                to.display()
            ));
        }
    }
    // Step 5.
    Wal::create(&path, cat.next_id, crate::wal::SyncPolicy::Always)?;
    report.actions.push(format!(
        "started a new write-ahead log {} at event ID {}",
        path.display(),
        cat.next_id
    ));
    report.lost.extend(lost);
    report.lost = merge(std::mem::take(&mut report.lost));
    Ok(())
}

/// Moves the active segment files `files`, whose log is gone (`why`), into `damaged/`.
fn move_orphans(
    dir: &Path,
    cat: &Catalog,
    files: &[PathBuf],
    why: &str,
    report: &mut RepairReport,
) -> Result<()> {
    for p in files {
        let to = move_aside(dir, p)?;
        report.actions.push(format!(
            "moved active segment file {} to {}: it holds rows of acknowledged events, but {why}, and its rows' schemas were in it: events from ID {} on are lost",
            p.display(),
            to.display(),
            cat.next_id
        ));
    }
    Ok(())
}

/// Copies `path` into `dir/damaged/` (its name, with `.1`, `.2`, … if taken); returns the copy.
fn copy_aside(dir: &Path, path: &Path) -> Result<PathBuf> {
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
    let copied = damaged.join(format!(".{name}.copy.tmp"));
    std::fs::copy(path, &copied)
        .map_err(|e| StoreError::io(format!("copy to {}", copied.display()), path, e))?;
    let file = std::fs::File::open(&copied).map_err(|e| StoreError::io("open", &copied, e))?;
    let final_name = to
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or(name);
    Ok(crate::fs::commit_file(
        &file,
        &copied,
        &damaged,
        &final_name,
        true,
    )?)
}

/// `ranges` sorted and merged.
fn merge(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
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
