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
//!    whose header or metadata is damaged is **recovered** if it can be (below) and then
//!    salvaged whole; one that cannot be is moved aside to `damaged/`, its entry dropped and
//!    its IDs recorded as lost. One that reads but does not match its entry (the catalog has
//!    no checksum; the segment's header does) keeps its file: the entry is dropped and the
//!    file checked in step 4 as one the catalog does not list. One with damaged *batches* is
//!    **salvaged**: its intact batches are rewritten into new segments by the rewrite
//!    machinery of `rewrite.rs` (staged in `staging/`, like an erase's; each batch keeps its
//!    first ID, so every intact event keeps its ID), the damaged batches' IDs are recorded as
//!    lost, and the original is moved aside to `damaged/` once the catalog lists its salvage.
//!    An entry whose file is missing is dropped and its IDs recorded as lost.
//! 4. Checks every segment file the catalog does not list. One the write-ahead log points into
//!    is left alone (an interrupted seal: the next writer replays and removes it). One whose
//!    header or metadata is damaged and cannot be recovered, or whose IDs overlap a listed
//!    segment or a salvage (a duplicate, e.g. the original of a salvage that a crash left in
//!    place), is moved aside to `damaged/`; a recovered one, or one with damaged batches, is
//!    salvaged as in step 3; a valid one is added to the catalog (and its IDs are no longer
//!    lost, if they were: a segment put back).
//!    Files the catalog lists under `pending_deletion` (erased, or replaced by compaction) are
//!    not segments of the archive and are left alone (the next writer deletes them); a
//!    rebuilt catalog (lost or corrupt) no longer knows them, so they would be added back.
//!    Each segment that stays gets its index file (`crate::segment`'s index files) if it has
//!    none (an archive written before them) or one that does not match it.
//! 5. Commits: the salvaged segments, each verified whole first (header, metadata, every
//!    batch and row, and the events its entry names; one that does not read back fails the
//!    repair, changing nothing), are announced in the catalog as it was (under
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
//! The report names every ID range lost, with its number of events ([`RepairReport::lost`]):
//! the IDs of damaged batches, of segments moved aside, of entries without a file, and gaps,
//! less those a listed segment holds after the repair.
//!
//! # Recovering a segment
//!
//! The events of a segment whose header or metadata fails verification are usually all
//! there: each batch's rows carry their own checksum. Readers read such a segment with the
//! metadata of its index file (`crate::segment`'s index files: a CRC-checked copy of the
//! header, schemas and every batch's metadata, positions and checksum, for the segment's
//! exact file length), so repair does too, and keeps what readers read:
//!
//! 1. When its size prefix (the file's length less 4) or file identifier (`WSEG`, bytes 8
//!    to 12), the only bytes every segment of its length has alike, are damaged, they are
//!    restored in a copy `staging/restored-<uuid>.seg`; if that copy verifies whole (header,
//!    metadata and its checksum) and names the same uuid, it is salvaged as in step 3. The
//!    copy is derived, and removed with `staging/`.
//! 2. Otherwise, with a usable index file naming the segment's uuid, the segment is opened
//!    from it; its batches are checked one by one against their own checksums (and rows
//!    against their schema), and salvaged as in step 3: only the batches that fail are lost.
//!    The checkpoints of followed files it records cannot be verified without its metadata,
//!    so its salvage records none (not known, as for a segment of format 7; a catalog that
//!    loaded keeps its own).
//! 3. Otherwise nothing is read from its metadata (without an index, damage the metadata
//!    checksum finds cannot be located: a damaged field name would rename a field of every
//!    event, and no reader reads such a metadata either), but its batches are still there:
//!    the file is scanned for them as an orphaned active file is (`scan_segment.rs`), each
//!    counting only if its rows match its own checksum and its schema is certain (exactly
//!    one schema of the archive's other segments, of the names its catalog entry records,
//!    decodes its rows). They are salvaged as in step 3 under their IDs; the IDs of its
//!    entry that no batch found holds (damaged batches, and batches whose schema is not
//!    certain: never guessed) are reported lost. Its checkpoints were in its metadata: the
//!    salvage records none. A segment in which the scan finds no batch is moved aside whole.
//!
//! `tests/it/repair_flips.rs` flips random single bytes of random archives and checks that
//! every event readable before a repair is there after it, with its ID, once and unchanged.
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
use super::damaged::move_aside;
use super::id_ranges::{merged, subtract};
use super::repair_report::RepairReport;
use super::rewrite::{clean_staging, move_in, Staged};
use super::scan_segment;
use super::{take_lock, Result, StoreError, SEGMENTS_DIR, WAL_FILE};
use crate::segment::{Compression, Segment, DEFAULT_MAX_SEGMENT_SIZE};
use crate::wal::WalReader;

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
        let checked = check_segment(&path)
            .or_else(|why| recovered(dir, &path, why, &mut staged, &mut report));
        if let Ok(c) = &checked {
            let (uuid, intervals, events) = c.identity();
            if uuid != entry.uuid || intervals != entry.intervals || events != entry.events {
                // The segment reads (its header and metadata are checksummed, the catalog is
                // not): the entry is what is wrong. Dropped, and the file checked below as
                // one the catalog does not list (added back unless it overlaps another).
                changed = true;
                report.actions.push(format!(
                    "dropped the catalog entry of segment {}: it does not match the segment (uuid {uuid}, intervals {intervals:?}, {events} events; catalog: uuid {}, intervals {:?}, {} events)",
                    path.display(),
                    entry.uuid,
                    entry.intervals,
                    entry.events
                ));
                continue;
            }
        }
        match checked {
            Ok(Checked::Intact(_, seg)) => {
                report.actions.extend(repair_index(&seg));
                entries.push(entry.clone());
            }
            Ok(Checked::Batches(seg, damaged)) => {
                changed = true;
                salvage(dir, &seg, damaged, &mut staged, &mut salvages)?;
                salvaged_from(&mut salvages, &path);
            }
            Err(why) => {
                changed = true;
                if let Ok(found) = scan_segment::scan_segment(dir, &path, Some(entry)) {
                    salvage_scanned(
                        dir,
                        &path,
                        found,
                        Some(entry),
                        &mut staged,
                        &mut salvages,
                        &mut report,
                    )?;
                    continue;
                }
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
        // One whose header or metadata fails verification may still be read (see
        // "Recovering a segment" in the module docs): its IDs are then those recovered.
        let mut rescued = None;
        let mut scanned = None;
        let intervals = match Segment::open_verified(&path) {
            Ok(seg) => seg.intervals().to_vec(),
            Err(e) => match recovered(dir, &path, e.to_string(), &mut staged, &mut report) {
                Ok(c) => rescued.insert(c).segment().intervals().to_vec(),
                Err(_) => match scan_segment::scan_segment(dir, &path, None) {
                    Ok(found) => {
                        let ids = merged(found.batches.iter().map(|b| b.id_range()).collect());
                        scanned = Some(found);
                        ids
                    }
                    Err(why) => {
                        let to = move_aside(dir, &path)?;
                        report.actions.push(format!(
                            "moved damaged segment {} to {} ({e}; {why})",
                            path.display(),
                            to.display()
                        ));
                        continue;
                    }
                },
            },
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
        if let Some(found) = scanned {
            salvage_scanned(
                dir,
                &path,
                found,
                None,
                &mut staged,
                &mut salvages,
                &mut report,
            )?;
            changed = true;
            continue;
        }
        match rescued.map_or_else(|| check_segment(&path), Ok) {
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
                salvaged_from(&mut salvages, &path);
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
        verify_staged(dir, &added)?;
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
                "salvaged damaged segment {}: moved it to {}, its {} intact events kept their IDs in {}; {}",
                sv.path.display(),
                to.display(),
                sv.kept,
                if new.is_empty() { "no segment".to_string() } else { new.join(", ") },
                if sv.damaged.is_empty() {
                    "no batch is damaged, no event is lost".to_string()
                } else {
                    format!(
                        "events {} of {} damaged batches are lost ({})",
                        show_count(&sv.lost),
                        sv.damaged.len(),
                        sv.damaged.join("; ")
                    )
                }
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
    // IDs a listed segment holds (one put back, or salvaged) are not lost.
    report.lost = subtract(&merged(lost), &merged(held));
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
    // The salvage records the checkpoints the original recorded (its metadata is intact).
    // Those of a segment read with its index file's metadata cannot be verified: not known.
    let checkpoints = match seg.opened_from_index() {
        true => None,
        false => seg.checkpoints()?,
    };
    let mut lost = Vec::new();
    let mut batches = Vec::new();
    for i in 0..seg.len() {
        if damaged.iter().any(|(d, _)| *d == i) {
            if let Some((_, ids, _)) = seg.batch_meta(i) {
                lost.push(ids);
            }
            continue;
        }
        if let Some(b) = seg.batch(i) {
            batches.push(b?.to_batch());
        }
    }
    let damaged = damaged.into_iter().map(|(_, why)| why).collect();
    stage_salvage(
        dir,
        seg.path(),
        checkpoints,
        batches,
        lost,
        damaged,
        staged,
        salvages,
    )
}

/// Stages `batches`, recovered from the damaged segment at `path` (`lost`: the IDs of its
/// `damaged` batches), into new segments of their own recording `checkpoints`, keeping
/// their IDs; the original is moved aside once the catalog lists them.
#[allow(clippy::too_many_arguments)]
fn stage_salvage(
    dir: &Path,
    path: &Path,
    checkpoints: Option<Vec<crate::checkpoint::FileCheckpoint>>,
    batches: Vec<crate::batch::Batch>,
    lost: Vec<Range<u64>>,
    damaged: Vec<String>,
    staged: &mut Option<Staged>,
    salvages: &mut Vec<Salvage>,
) -> Result<()> {
    stage(dir, staged)?;
    let Some(staged) = staged.as_mut() else {
        return Ok(());
    };
    staged.set_checkpoints(checkpoints)?;
    let first = staged.entries.len();
    let mut kept = 0u64;
    for b in batches {
        kept += b.len() as u64;
        staged.add(b)?;
    }
    // Each salvaged segment gets its own new segments, as an erase's do.
    staged.seal()?;
    salvages.push(Salvage {
        path: path.to_path_buf(),
        lost: merged(lost),
        damaged,
        kept,
        new: first..staged.entries.len(),
    });
    Ok(())
}

/// Salvages the batches that scanning the segment at `path` found (its metadata lost, see
/// "Recovering a segment", step 3, in the module docs): `entry` is its catalog entry, if it
/// has one, whose IDs no recovered batch holds are lost; without one, those of the batches
/// found without a certain schema are (the IDs of batches not found are gaps, recorded lost
/// by the repair).
fn salvage_scanned(
    dir: &Path,
    path: &Path,
    found: scan_segment::Scanned,
    entry: Option<&CatalogEntry>,
    staged: &mut Option<Staged>,
    salvages: &mut Vec<Salvage>,
    report: &mut RepairReport,
) -> Result<()> {
    let held = merged(found.batches.iter().map(|b| b.id_range()).collect());
    let lost = match entry {
        Some(e) => subtract(&merged(e.ranges().collect()), &held),
        None => merged(found.unknown.clone()),
    };
    report.actions.push(format!(
        "segment {} has no usable metadata (no index file, and restoring its size prefix and file identifier does not make it verify): scanned it for batches whose checksums hold, found events {} ({})",
        path.display(),
        show_count(&held),
        found.matched.join("; ")
    ));
    let damaged = match lost.is_empty() {
        true => Vec::new(),
        false => vec![format!(
            "events {} are in no batch found whose checksum holds and whose schema is certain",
            show(&lost)
        )],
    };
    // The checkpoints it recorded were in its metadata: not known.
    stage_salvage(
        dir,
        path,
        None,
        found.batches,
        lost,
        damaged,
        staged,
        salvages,
    )
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
    /// The open segment.
    fn segment(&self) -> &Segment {
        match self {
            Checked::Intact(_, seg) | Checked::Batches(seg, _) => seg,
        }
    }

    /// The uuid, intervals and event count its header gives.
    fn identity(&self) -> (String, Vec<[u64; 2]>, u64) {
        let seg = self.segment();
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
        if let Some((seg, damaged)) = through_index(path, &seg, damaged.len()) {
            return Ok(Checked::Batches(seg, damaged));
        }
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

/// The segment at `path` opened with its index file, and its damaged batches, when fewer of
/// its batches fail that way than the `damaged` that fail through the segment's own tables
/// (`seg`, verified whole): a batch's place and length are in both copies of the metadata,
/// but the length prefix of its bytes in the segment is covered by neither checksum, so one
/// flipped byte there fails the batch only when read through the segment's own tables.
/// Readers read it through the index, and so does the salvage then. The segment is
/// rewritten all the same (the salvage keeps every batch that reads), so that `verify`
/// passes afterwards.
fn through_index(
    path: &Path,
    seg: &Segment,
    damaged: usize,
) -> Option<(Segment, Vec<(usize, String)>)> {
    let idx = Segment::open(path)
        .ok()
        .filter(Segment::opened_from_index)?;
    if idx.uuid() != seg.uuid()
        || idx.intervals() != seg.intervals()
        || idx.events() != seg.events()
    {
        return None;
    }
    let fewer = damaged_batches(&idx);
    (fewer.len() < damaged).then_some((idx, fewer))
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

/// The prefix of the copy of a segment whose size prefix or file identifier was restored
/// ([`recover_segment`]), in `staging/` (emptied when the repair ends, as every change's).
const RESTORED_PREFIX: &str = "restored-";

/// Reads a segment that [`check_segment`] refused for its header or metadata (see the module
/// docs, "Recovering a segment"): from a copy in `staging/` with its size prefix and file
/// identifier (the only bytes that every segment of its length has alike) restored, if they
/// are damaged and the copy then verifies whole; else from its index file, which holds a
/// checksummed copy of its metadata. `Ok`: the open segment (whose batches are each still
/// checked against their own checksum when read) and where its metadata came from; `Err`
/// when neither holds (the segment is moved aside whole, as before).
fn recover_segment(
    dir: &Path,
    path: &Path,
    staged: &mut Option<Staged>,
) -> std::result::Result<(Segment, String), String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("not a segment file name")?
        .to_string();
    let named = |seg: &Segment| crate::segment::file_name(&seg.uuid()) == name;
    // The restored copy first: verified whole, it keeps the checkpoints it records, which
    // the index file has no copy of.
    let restored = restore_constant_bytes(dir, path, &name, staged);
    if let Ok((seg, how)) = restored {
        if named(&seg) {
            return Ok((seg, how));
        }
    }
    match Segment::open(path) {
        Ok(seg) if seg.opened_from_index() && named(&seg) => {
            let idx = crate::segment::index_path(path);
            Ok((seg, format!("its index file {}", idx.display())))
        }
        _ => Err("no usable index file, and restoring its size prefix and file identifier does not make it verify".into()),
    }
}

/// Copies the segment at `path` (named `name`) to `staging/restored-<name>` with its size
/// prefix and file identifier restored, when either differs from what a segment of its
/// length has, and opens the copy with the verifier.
fn restore_constant_bytes(
    dir: &Path,
    path: &Path,
    name: &str,
    staged: &mut Option<Staged>,
) -> std::result::Result<(Segment, String), String> {
    use std::io::Read;
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; 12];
    let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let len = f.metadata().map_err(|e| e.to_string())?.len();
    f.read_exact(&mut head).map_err(|e| e.to_string())?;
    let size = u32::try_from(len.saturating_sub(4)).map_err(|_| format!("{len} bytes"))?;
    let ident = crate::segment::generated::SEGMENT_IDENTIFIER.as_bytes();
    if head[..4] == size.to_le_bytes() && &head[8..12] == ident {
        return Err("its size prefix and file identifier are intact".into());
    }
    let staging = stage(dir, staged).map_err(|e| e.to_string())?;
    let copy = staging.join(format!("{RESTORED_PREFIX}{name}"));
    std::fs::copy(path, &copy).map_err(|e| e.to_string())?;
    let out = std::fs::OpenOptions::new()
        .write(true)
        .open(&copy)
        .map_err(|e| e.to_string())?;
    out.write_all_at(&size.to_le_bytes(), 0)
        .and_then(|()| out.write_all_at(ident, 8))
        .map_err(|e| e.to_string())?;
    drop(out);
    let seg = Segment::open_verified(&copy).map_err(|e| e.to_string())?;
    Ok((
        seg,
        format!(
            "a copy {} with its size prefix and file identifier restored",
            copy.display()
        ),
    ))
}

/// The salvage's staging of new segments, created (and `staging/` emptied) on first use;
/// returns the `staging/` directory.
fn stage(dir: &Path, staged: &mut Option<Staged>) -> Result<PathBuf> {
    if staged.is_none() {
        *staged = Some(Staged::new(
            dir,
            DEFAULT_MAX_SEGMENT_SIZE,
            Compression::default(),
            true,
            true,
        )?);
    }
    Ok(dir.join(super::rewrite::STAGING_DIR))
}

/// The batches of `seg` that cannot be read: their checksum fails, or their rows do not
/// decode with their schema (as [`check_segment`] checks them).
fn damaged_batches(seg: &Segment) -> Vec<(usize, String)> {
    let mut damaged = Vec::new();
    for i in 0..seg.len() {
        match seg.batch(i) {
            Some(Ok(b)) => {
                if let Err(why) = super::archive::check_rows(b.schema(), b.rows()) {
                    damaged.push((i, format!("batch {i}: {why}")));
                }
            }
            Some(Err(e)) => damaged.push((i, e.to_string())),
            None => damaged.push((i, format!("batch {i}: missing"))),
        }
    }
    damaged
}

/// Checks the salvage's new segments in `staging/` before they join the archive: each one
/// verified whole (header, metadata, every batch and row) and holding the events its entry
/// says. A salvage that does not read back is an error, and the archive is left as it was.
fn verify_staged(dir: &Path, added: &[CatalogEntry]) -> Result<()> {
    let staging = dir.join(super::rewrite::STAGING_DIR);
    for e in added {
        let name = e.file.rsplit('/').next().unwrap_or(&e.file);
        let path = staging.join(name);
        let bad = |why: String| {
            StoreError::Segment(crate::segment::SegmentError::Corrupt {
                path: path.clone(),
                reason: format!("the salvage does not read back: {why}"),
            })
        };
        match check_segment(&path) {
            Ok(Checked::Intact(found, _))
                if found.events == e.events && found.intervals == e.intervals => {}
            Ok(Checked::Intact(found, _)) => {
                return Err(bad(format!(
                    "it holds {} events in {:?}, not {} in {:?}",
                    found.events, found.intervals, e.events, e.intervals
                )))
            }
            Ok(Checked::Batches(_, damaged)) => {
                let what: Vec<String> = damaged.into_iter().map(|(_, w)| w).collect();
                return Err(bad(what.join("; ")));
            }
            Err(why) => return Err(bad(why)),
        }
    }
    Ok(())
}

/// [`check_segment`] found the header or metadata of the segment at `path` damaged (`why`):
/// reads it as [`recover_segment`] can, reporting how, with the batches that cannot be read
/// (none, mostly: the damage is elsewhere); `Err(why)` when it cannot.
fn recovered(
    dir: &Path,
    path: &Path,
    why: String,
    staged: &mut Option<Staged>,
    report: &mut RepairReport,
) -> std::result::Result<Checked, String> {
    let (seg, how) = recover_segment(dir, path, staged).map_err(|_| why.clone())?;
    let damaged = damaged_batches(&seg);
    // On one line: the verifier's message spans several.
    let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
    report.actions.push(format!(
        "segment {} cannot be verified ({why}): read its {} batches with the metadata of {how}, {} of them damaged",
        path.display(),
        seg.len(),
        damaged.len()
    ));
    Ok(Checked::Batches(seg, damaged))
}

/// The last salvage is that of the segment at `path` (read from a restored copy in
/// `staging/`, see [`recover_segment`]): the original is the file moved aside.
fn salvaged_from(salvages: &mut [Salvage], path: &Path) {
    if let Some(sv) = salvages.last_mut() {
        sv.path = path.to_path_buf();
    }
}
