//! Changing which segments make up the archive: the one transaction behind erase, retention
//! and compaction, and the deletion of dropped files.
//!
//! # A change, in order
//!
//! 1. New segments (the rewritten part of a partially erased segment, a compaction's merged
//!    segment) are built and sealed in `DIR/staging/` (the segment writer's temporary files,
//!    then `staging/<uuid>.seg`). A crash here leaves only files in `staging/`, which the next
//!    writer removes: the old state.
//! 2. If there are new segments: the catalog is written (atomically, through `crate::fs`) with
//!    their final names `segments/<uuid>.seg` under `pending_deletion` (generation 0), then
//!    they are renamed into `segments/` and the directory is fsynced. A crash here leaves
//!    files the catalog says to delete: the next writer deletes them (the old state). They
//!    are never taken for lost segments: readers, `weir verify` and `--repair` skip them.
//! 3. The catalog is written with the dropped entries removed, the new ones added, the IDs
//!    that the dropped segments held and the new ones do not added to `erased`, a new
//!    `generation`, and the dropped files under `pending_deletion` with that generation. This
//!    is the commit: before it the old state, after it the new one.
//! 4. Dropped files are deleted once no registered reader of an older generation remains
//!    (see [`super::readers`]); until then (and after a crash) they stay listed under
//!    `pending_deletion`, and every later change, seal and open of a writer tries again.
//!
//! A new segment records the checkpoints of followed files of the segment it rewrites (see
//! `crate::segment`, format 8, and `crate::checkpoint`): an erase's, those of the segment it
//! rewrote; a compaction's, those of the source segment whose events were added last (so the
//! newest output has those of the newest source); a repair's salvage, those of the damaged
//! original. A source of an older format records none, and neither does its rewrite. So
//! the newest segment always holds the checkpoints as of its last event, from which
//! `weir verify --repair` rebuilds a lost catalog's.
//!
//! Files are only ever unlinked, never truncated or rewritten in place, so a reader that has
//! a segment mapped keeps reading it.

use std::ops::Range;
use std::path::Path;

use super::catalog::{CatalogEntry, PendingDeletion};
use super::id_ranges::{merged, subtract};
use super::{readers, Result, Store, StoreError, SEGMENTS_DIR};
use crate::batch::Batch;
use crate::checkpoint::FileCheckpoint;
use crate::segment::SegmentBuilder;

/// The directory of a change's new segments before they join the archive.
pub const STAGING_DIR: &str = "staging";

/// Removes what an interrupted change left in `DIR/staging/` (called with the writer lock).
pub(crate) fn clean_staging(dir: &Path) -> Result<()> {
    let staging = dir.join(STAGING_DIR);
    match std::fs::remove_dir_all(&staging) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io("remove", &staging, e)),
    }
}

/// The union of the ID intervals of `entries`, sorted and merged.
fn union<'a>(entries: impl Iterator<Item = &'a CatalogEntry>) -> Vec<Range<u64>> {
    merged(entries.flat_map(|e| e.ranges()).collect())
}

/// Builds the new segments of a change in `DIR/staging/`, rotating at the store's maximum
/// segment size.
pub(crate) struct Staged {
    dir: std::path::PathBuf,
    builder: SegmentBuilder,
    sync: bool,
    /// The sealed new segments, as catalog entries naming their final place.
    pub(crate) entries: Vec<CatalogEntry>,
}

impl Staged {
    /// Adds a batch with its IDs set (in ascending ID order), sealing a segment when full.
    pub(crate) fn add(&mut self, mut batch: Batch) -> Result<()> {
        loop {
            if batch.is_empty() {
                return Ok(());
            }
            if self.builder.fits(&batch) {
                self.builder.add(&batch)?;
                return Ok(());
            }
            if !self.builder.is_empty() {
                self.seal()?;
                continue;
            }
            let k = self.builder.rows_that_fit(&batch);
            if k == 0 {
                return Err(StoreError::EventTooLarge {
                    id: batch.id(),
                    schema: batch.schema().name.clone(),
                    bytes: batch.row_range(0).len(),
                    max: self.builder.max_size() as u64,
                });
            }
            let tail = batch.split_off(k);
            self.builder.add(&batch)?;
            self.seal()?;
            batch = tail;
        }
    }

    /// Sets the checkpoints of followed files that the new segments record from now on (those
    /// of the segment whose events are added next: see `crate::segment`, format 8; `None`:
    /// not known, as for a segment of an older format). A segment being built that has no
    /// room for them is sealed first.
    pub(crate) fn set_checkpoints(&mut self, list: Option<Vec<FileCheckpoint>>) -> Result<()> {
        if self.builder.set_checkpoints(list.as_deref()) {
            return Ok(());
        }
        self.seal()?;
        if self.builder.set_checkpoints(list.as_deref()) {
            return Ok(());
        }
        let list = list.unwrap_or_default();
        Err(StoreError::CheckpointsTooLarge {
            files: list.len(),
            bytes: crate::wal::encode_checkpoints(&list).len(),
            max: self.builder.max_size() as u64,
        })
    }

    /// Seals the segment being built (if any) into `staging/`.
    pub(crate) fn seal(&mut self) -> Result<()> {
        if self.builder.is_empty() {
            return Ok(());
        }
        let sealed = self.builder.write_to(&self.dir, self.sync)?;
        self.entries.push(CatalogEntry::from_sealed(&sealed));
        Ok(())
    }

    /// Seals what is left and returns the new segments.
    pub(crate) fn finish(mut self) -> Result<Vec<CatalogEntry>> {
        self.seal()?;
        Ok(self.entries)
    }
}

impl Staged {
    /// A builder of new segments in `DIR/staging/` (emptied first), rotating at
    /// `max_segment_size` and compressing and sketching like a writer with `compression` and
    /// `sketches`.
    pub(crate) fn new(
        dir: &Path,
        max_segment_size: u64,
        compression: crate::segment::Compression,
        sketches: bool,
        sync: bool,
    ) -> Result<Staged> {
        clean_staging(dir)?;
        let dir = dir.join(STAGING_DIR);
        std::fs::create_dir_all(&dir).map_err(|e| StoreError::io("create", &dir, e))?;
        let mut builder = SegmentBuilder::in_dir(max_segment_size, &dir)?;
        builder.set_compression(compression);
        builder.set_sketches(sketches);
        Ok(Staged {
            builder,
            dir,
            sync,
            entries: Vec::new(),
        })
    }
}

/// Step 2 of a change (see the module docs): announces `added` (sealed in `staging/`) in
/// `catalog` under `pending_deletion`, writes it, and moves them into `segments/`. The caller
/// then commits a catalog that lists them and no longer lists them as pending deletion.
pub(crate) fn move_in(
    dir: &Path,
    catalog: &mut super::Catalog,
    added: &[CatalogEntry],
    sync: bool,
) -> Result<()> {
    if added.is_empty() {
        return Ok(());
    }
    for e in added {
        catalog.pending_deletion.push(PendingDeletion {
            file: e.file.clone(),
            generation: 0,
        });
    }
    catalog.save(dir, sync)?;
    let staging = dir.join(STAGING_DIR);
    for e in added {
        let name = e.file.rsplit('/').next().unwrap_or(&e.file);
        let from = staging.join(name);
        let to = dir.join(&e.file);
        crate::fs::fault::hit(crate::fs::fault::Op::Rename)
            .and_then(|()| std::fs::rename(&from, &to))
            .map_err(|e| StoreError::io(format!("rename to {}", to.display()), &from, e))?;
        // Its index follows it (after it: see `crate::segment`'s index files); one that
        // cannot follow is left in staging, which is emptied below, and readers verify the
        // segment instead.
        let _ = std::fs::rename(
            crate::segment::index_path(&from),
            crate::segment::index_path(&to),
        );
    }
    if sync {
        crate::fs::sync_dir(&dir.join(SEGMENTS_DIR))?;
    }
    Ok(())
}

impl Store {
    /// A builder of new segments in `DIR/staging/` (emptied first), with this writer's
    /// settings.
    pub(crate) fn staging(&self) -> Result<Staged> {
        // Rewritten segments are compressed and sketched like new ones.
        Staged::new(
            &self.dir,
            self.opts.max_segment_size,
            self.opts.compression,
            self.opts.sketches,
            self.opts.sync.sync_segments(),
        )
    }

    /// Commits a change (steps 2 to 4 of the module docs): drops the catalog's segments at
    /// `drop` (indices), adds `added` (sealed in `staging/`). Returns the events erased (held
    /// by the dropped segments and not by the new ones).
    pub(crate) fn commit_change(
        &mut self,
        drop: &[usize],
        added: Vec<CatalogEntry>,
    ) -> Result<u64> {
        if drop.is_empty() && added.is_empty() {
            return Ok(0);
        }
        let sync = self.opts.sync.sync_segments();
        move_in(&self.dir, &mut self.catalog, &added, sync)?;
        let mut cat = self.catalog.clone();
        let mut dropped = Vec::with_capacity(drop.len());
        let mut idx = drop.to_vec();
        idx.sort_unstable();
        idx.dedup();
        for &i in idx.iter().rev() {
            if i < cat.segments.len() {
                dropped.push(cat.segments.remove(i));
            }
        }
        let erased = subtract(&union(dropped.iter()), &union(added.iter()));
        let events: u64 = erased.iter().map(|r| r.end - r.start).sum();
        cat.pending_deletion
            .retain(|p| !added.iter().any(|e| e.file == p.file));
        if !dropped.is_empty() {
            cat.generation += 1;
            for d in &dropped {
                cat.pending_deletion.push(PendingDeletion {
                    file: d.file.clone(),
                    generation: cat.generation,
                });
            }
        }
        cat.segments.extend(added);
        cat.segments
            .sort_by_key(|e| e.intervals.first().map_or(0, |r| r[0]));
        cat.add_erased(&erased);
        cat.reindex(&self.dir)?;
        cat.save(&self.dir, sync)?;
        self.catalog = cat;
        self.catalog_dirty = false;
        self.sealed_bytes = self.catalog.segments.iter().map(|s| s.disk_bytes()).sum();
        clean_staging(&self.dir)?;
        self.sweep();
        Ok(events)
    }

    /// Deletes the files pending deletion that no registered reader may still map, and
    /// forgets them (the next catalog write records that: a seal, a change, or
    /// [`Store::close`]).
    pub(crate) fn sweep(&mut self) {
        if self.catalog.pending_deletion.is_empty() {
            return;
        }
        let before = self.catalog.pending_deletion.len();
        let oldest = readers::oldest_reader(&self.dir, self.catalog.generation);
        let dir = self.dir.clone();
        self.catalog.pending_deletion.retain(|p| {
            if oldest.is_some_and(|o| o < p.generation) {
                return true;
            }
            let path = dir.join(&p.file);
            // The index first: a crash in between leaves a segment without one, never an
            // index without its segment (see `crate::segment`'s index files).
            match crate::segment::remove_index(&path).and_then(|()| std::fs::remove_file(&path)) {
                Ok(()) => {
                    tracing::debug!(segment = %path.display(), "deleted dropped segment");
                    false
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                Err(e) => {
                    tracing::warn!(segment = %path.display(), error = %e, "cannot delete dropped segment; trying again later");
                    true
                }
            }
        });
        self.catalog_dirty |= self.catalog.pending_deletion.len() != before;
    }
}
