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
//! 4. The damaged records' rows are usually intact in the active segment file the log
//!    pointed into (a record points at its rows; they carry their own checksum): the file is
//!    scanned for its batches (`orphan.rs`), and those of the damaged records' IDs are
//!    sealed with the intact records (their schema: the one of the log's records and the
//!    sealed segments that decodes their rows). What is still lost is recorded in the
//!    catalog and reported. If anything is still lost, the active segment files the log
//!    pointed into (and, when its header was unreadable, every active segment file) are then
//!    moved into `damaged/`; if nothing is, they are left, and the next writer removes them:
//!    every row in them that a record named is in a sealed segment now, and the new log names
//!    none of them.
//! 5. The log is replaced (atomically) by an empty one starting at the new `next_id`.
//!
//! A missing log (or one without a single intact record) beside an active segment file that
//! holds rows ([`StoreError::OrphanedActiveSegment`]): the file's batches are recovered the
//! same way (`orphan.rs`; their schemas from the sealed segments), sealed under their IDs,
//! and the catalog's `next_id` goes past the last batch found; batches whose schema is not
//! certain are recorded as lost. The file is then moved into `damaged/` (never deleted), and
//! the writer can open again.
//!
//! # Why a torn last record's rows are not recovered
//!
//! Damage at the log's last record (cut, or failing its checksum, with no intact record
//! after it) is a torn write, and its rows are dropped even when the active segment file
//! holds them intact: the writer writes a batch's rows into that file *first*, then its
//! record (one `write`), and only then acknowledges the batch (`crate::wal`'s invariants).
//! Rows with good checksums in the file therefore prove nothing: a crash between the two
//! writes leaves exactly that, for a batch never acknowledged. And the positions of the
//! followed or resumed files that move past those rows are in the same record: the
//! importer's retry starts from the last intact record's positions and reads those lines
//! again, so recovering the rows would store every one of them twice. Under
//! `--sync always` a record is fsynced before it is acknowledged, so a torn one never was;
//! under `--sync batch` one written since the last flush was not acknowledged as durable
//! (`SyncPolicy`). `tests/it/wal_damage.rs`
//! (`a_torn_last_record_is_not_recovered_so_a_retry_imports_it_once`) checks this. Only
//! records followed by an intact one (damaged, not torn: acknowledged, since a later
//! record was written after them) have their rows recovered (step 4). The orphan recovery
//! (no log at all) cannot tell the last batch of the file apart and takes every batch it
//! finds; it marks the checkpoints lost, so that a followed import asks where to start.
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
use super::damaged::{damaged_place, move_aside, DAMAGED_DIR};
use super::id_ranges::{merged, subtract};
use super::repair_report::RepairReport;
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
    /// Intact batches past the catalog's end (each batch of a group record counted).
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
            Err(WalError::Corrupt { offset, reason, .. }) => {
                out.damage.push((offset, reason));
                let from = reader.end_id().max(next_id);
                match reader.resync()? {
                    Some((_, skipped)) => {
                        let lost = skipped.start.max(next_id)..skipped.end;
                        if lost.start < lost.end {
                            out.lost.push(lost);
                        }
                    }
                    None => {
                        out.lost_tail = Some((offset, from));
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
    let mut schemas: Vec<crate::types::SchemaRef> = Vec::new();
    let found = scan(&path, cat.next_id, |b| {
        if !b.is_empty() && !schemas.iter().any(|s| s == b.schema()) {
            schemas.push(b.schema().clone());
        }
        Ok(())
    })?;
    if !found.is_damaged() {
        return Ok(());
    }
    // The damaged records' rows may be intact in the active segment files the log points
    // into (their chunks carry their own checksums: `orphan.rs`).
    let mut rescued: Vec<crate::batch::Batch> = Vec::new();
    if !found.lost.is_empty() {
        for u in &found.named {
            let p = dir
                .join(SEGMENTS_DIR)
                .join(format!(".{}.tmp", crate::segment::file_name(u)));
            if let Ok(r) = super::orphan::recover(dir, &p, &cat, cat.next_id, &schemas) {
                rescued.extend(r.batches.into_iter().filter(|b| {
                    let ids = b.id_range();
                    found
                        .lost
                        .iter()
                        .any(|l| l.start <= ids.start && ids.end <= l.end)
                }));
            }
        }
        rescued.sort_by_key(|b| b.id());
        rescued.dedup_by_key(|b| b.id());
    }
    let rescued_ids: Vec<Range<u64>> = rescued.iter().map(|b| b.id_range()).collect();
    let mut rescued = rescued.into_iter().peekable();
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
        // The recovery may have moved the catalog's end.
        let cat = Catalog::load(dir)?;
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
    let add = |staged: &mut Option<Staged>, b: crate::batch::Batch| -> Result<()> {
        let s = match staged {
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
    };
    let found = scan(&path, cat.next_id, |b| {
        checkpoints.apply_marks(b.marks());
        if b.is_empty() {
            return Ok(());
        }
        // The batches rescued from the segment files go in ID order among the records'.
        while let Some(r) = rescued.next_if(|r| r.id() < b.id()) {
            add(&mut staged, r)?;
        }
        add(&mut staged, b)
    })?;
    for r in rescued {
        add(&mut staged, r)?;
    }
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
    let mut lost = cut(&found.lost, &rescued_ids);
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
    if !rescued_ids.is_empty() {
        flag_checkpoints(&mut cat, report);
    }
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
    if !rescued_ids.is_empty() {
        let n: u64 = rescued_ids.iter().map(|r| r.end - r.start).sum();
        report.actions.push(format!(
            "recovered events {} ({n} events) of damaged records from their rows in the active segment file (their batches' checksums hold)",
            show_ranges(&rescued_ids)
        ));
    }
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
    report.lost = merged(std::mem::take(&mut report.lost));
    Ok(())
}

/// Recovers what it can of the active segment files `files`, whose log is gone (`why`), and
/// moves them into `damaged/` (see `orphan.rs`): the batches whose rows match their checksum
/// and whose schema is certain are sealed into new segments under their IDs, and the
/// catalog's `next_id` goes past them.
fn move_orphans(
    dir: &Path,
    cat: &Catalog,
    files: &[PathBuf],
    why: &str,
    report: &mut RepairReport,
) -> Result<()> {
    let mut cat = cat.clone();
    for p in files {
        let from = cat.next_id;
        let found = super::orphan::recover(dir, p, &cat, from, &[]);
        let mut kept = 0u64;
        let mut lost: Vec<Range<u64>> = Vec::new();
        let mut added = Vec::new();
        match &found {
            Ok(r) => {
                report.actions.extend(
                    r.matched
                        .iter()
                        .map(|m| format!("active segment file {}: {m}", p.display())),
                );
                if r.end > from {
                    let mut staged = Staged::new(
                        dir,
                        DEFAULT_MAX_SEGMENT_SIZE,
                        Compression::default(),
                        true,
                        true,
                    )?;
                    staged.set_checkpoints(Some(cat.checkpoints.clone()))?;
                    let mut next = from;
                    for b in &r.batches {
                        let ids = b.id_range();
                        if ids.start > next {
                            lost.push(next..ids.start);
                        }
                        next = ids.end;
                        kept += ids.end - ids.start;
                        staged.add(b.clone())?;
                    }
                    // Batches without a certain schema, between and after: lost, not
                    // given to new events.
                    if r.end > next {
                        lost.push(next..r.end);
                        next = r.end;
                    }
                    added = staged.finish()?;
                    let mut announced = cat.clone();
                    move_in(dir, &mut announced, &added, true)?;
                    for e in &added {
                        cat.push(e.clone());
                    }
                    cat.next_id = cat.next_id.max(next);
                    lost.retain(|r| !r.is_empty());
                    cat.add_lost(&lost);
                    if kept > 0 {
                        flag_checkpoints(&mut cat, report);
                    }
                    cat.reindex(dir)?;
                    cat.save(dir, true)?;
                }
            }
            Err(e) => report.actions.push(format!(
                "active segment file {} cannot be read: {e}",
                p.display()
            )),
        }
        let to = move_aside(dir, p)?;
        let unknown = found.as_ref().map_or(&[][..], |r| &r.unknown[..]);
        let files: Vec<&str> = added.iter().map(|e| e.file.as_str()).collect();
        report.actions.push(format!(
            "moved active segment file {} to {} ({why}): recovered {kept} events of acknowledged batches from it{}{}{}; the IDs of batches after the last one found are not known, and {} is given to the next event",
            p.display(),
            to.display(),
            if files.is_empty() { String::new() } else { format!(" into {}", files.join(", ")) },
            if lost.is_empty() { String::new() } else { format!("; events {} are lost", show_ranges(&lost)) },
            if unknown.is_empty() { String::new() } else { format!(" (events {} are in batches whose schema is not certain)", show_ranges(unknown)) },
            cat.next_id
        ));
        report.lost.extend(lost);
    }
    report.lost = merged(std::mem::take(&mut report.lost));
    Ok(())
}

/// Batches recovered from an active segment file come without the checkpoints of followed
/// (or resumed) files that their log records held: the catalog's are then older than the
/// archive's events. If it has any, they are marked lost (see [`super::catalog`]), so that a
/// followed import asks where to start (`--from-start`, `--from-end`) rather than import
/// those lines again.
fn flag_checkpoints(cat: &mut Catalog, report: &mut RepairReport) {
    if cat.checkpoints.is_empty() || cat.checkpoints_lost {
        return;
    }
    cat.checkpoints_lost = true;
    report.actions.push(
        "the checkpoints of followed files of the recovered events were in the lost log records: marked lost; `weir import --follow` refuses to start until you choose --from-start or --from-end".into(),
    );
}

/// Copies `path` into `dir/damaged/` (its name, with `.1`, `.2`, … if taken); returns the copy.
fn copy_aside(dir: &Path, path: &Path) -> Result<PathBuf> {
    let to = damaged_place(dir, path)?;
    let damaged = dir.join(DAMAGED_DIR);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
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

/// The IDs of `ranges` not in `holes`.
fn cut(ranges: &[Range<u64>], holes: &[Range<u64>]) -> Vec<Range<u64>> {
    subtract(&merged(ranges.to_vec()), &merged(holes.to_vec()))
}
