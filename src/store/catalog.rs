//! The catalog: the list of sealed segments and their ID intervals.
//!
//! # Format
//!
//! `DIR/catalog.json`, one JSON object:
//!
//! ```json
//! {"format": "weir-catalog", "version": 1, "next_id": 2048,
//!  "segments": [{"uuid": "…", "file": "segments/….seg", "bytes": 123, "events": 2048,
//!                "batches": 2, "intervals": [[0, 2048]], "schemas": {"zeek.conn": 2048},
//!                "ts": [1, 2]}]},
//!  "checkpoints": [{"id": {"dev": 2049, "ino": 131, "fp_len": 4096, "fp_crc": 12345},
//!                   "path": "/opt/zeek/logs/current/conn.log",
//!                   "pos": {"offset": 81920, "skip": 0}}]}
//! ```
//!
//! Version 2 (written once anything was erased or compacted; version 1 otherwise, so that an
//! archive that never used those stays readable by older weir) adds three keys:
//!
//! ```json
//! {"generation": 3, "erased": [[0, 4096], [5000, 5100]],
//!  "pending_deletion": [{"file": "segments/….seg", "generation": 3}]}
//! ```
//!
//! - `generation`: bumped by every change that drops a segment from the catalog (erase,
//!   retention, compaction). Readers register the generation they read (see
//!   `store/readers.rs`), so that a dropped file is deleted only once no reader of an older
//!   generation can still map it.
//! - `erased`: the event IDs below `next_id` that were erased (ascending, merged, disjoint
//!   from every segment's intervals). IDs are never reused: an erased ID stays erased, so
//!   `weir verify` tells an erased range from a lost segment.
//! - `pending_deletion`: segment files that are *not* part of the archive and are deleted
//!   when possible: the files a change dropped (with the generation that dropped them; kept
//!   until no reader of an older generation is registered), and the outputs of an erase or
//!   compaction announced before they are moved into `segments/` (generation 0: always
//!   deletable; a crash before the change is committed leaves them, and the next writer
//!   deletes them). No reader, writer or `weir verify --repair` ever treats a listed file
//!   as a segment of the archive or as an unlisted one: an erased segment never comes back.
//!
//! `lost` (absent when empty; any version, since it only narrows `erased`) lists the IDs of
//! `erased` that were not erased on purpose but lost to damage: the batches and segments
//! `weir verify --repair` moved aside to `damaged/` (see `repair.rs`), and gaps it found in
//! no segment file. Its ranges are ascending, merged and each inside `erased`, so every reader
//! that knows `erased` treats them alike (no event there; `weir verify` is clean) and an
//! older weir that ignores `lost` reads the archive unchanged. `weir info` counts them apart.
//! A segment holding lost IDs that is put back into `segments/` is listed again by
//! `weir verify --repair`, which removes its IDs from `lost` and `erased`.
//!
//! `checkpoints` (absent when empty, so older catalogs read unchanged) holds the position of
//! every followed file after the last event of the last sealed segment (see
//! [`crate::checkpoint`]); `"done": true` marks a compressed file read to its end. The
//! write-ahead log's records carry the positions of the events after it. Each sealed segment
//! records the same set as of its last event (`crate::segment`, format 8), so that
//! `weir verify --repair` rebuilds `checkpoints` of a lost or corrupt catalog from the newest
//! segment (the write-ahead log's records then apply on top, as at every open). When the
//! newest segment does not record them (a segment of format 7 or older, or a rewrite of one),
//! repair writes `"checkpoints_lost": true` (absent when false): a followed source then
//! refuses to start until the user chooses where files without a checkpoint start
//! (`weir import --from-start` or `--from-end`, [`crate::checkpoint::StartFrom`]); the writer
//! of such an import clears the flag, written with the next catalog (its first seal, or its
//! close).
//!
//! # Invariants
//!
//! - Rewritten atomically (`crate::fs::write_atomic`: temporary file, fsync, rename, fsync
//!   directory) each time a segment is sealed, after the segment file itself is durable and
//!   before the WAL is reset. A segment file not listed here is either one of an interrupted
//!   seal, whose events are still in the WAL (the next writer removes it once the WAL proves
//!   that), or one whose entry was lost: it is kept and reported (see [`crate::store`]), and
//!   `weir verify --repair` lists it again.
//! - Segments are listed in ID order; their intervals ascend and do not overlap; `next_id` is
//!   the end of the last interval (0 for an empty archive): the first ID the WAL holds.
//! - Opening an archive reads only this file (no segment bodies), so it is fast with many
//!   segments; the range map (ID interval → segment) is built from it.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::checkpoint::FileCheckpoint;
use crate::segment::SealedSegment;
use crate::store::{Result, StoreError};

/// File name of the catalog in the database directory.
pub const CATALOG_FILE: &str = "catalog.json";
const FORMAT: &str = "weir-catalog";

/// The catalog of sealed segments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalog {
    /// Always `weir-catalog`.
    pub format: String,
    /// Format version (1, or 2 once anything was erased or compacted).
    pub version: u32,
    /// The ID after the last sealed event.
    pub next_id: u64,
    /// Sealed segments in ID order.
    pub segments: Vec<CatalogEntry>,
    /// Bumped by every change that drops segments (see the module docs).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generation: u64,
    /// Erased event ID ranges `[begin, end)`, ascending and merged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub erased: Vec<[u64; 2]>,
    /// The part of `erased` lost to damage (moved aside by `weir verify --repair`), ascending
    /// and merged (see the module docs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<[u64; 2]>,
    /// Segment files that are not part of the archive and are deleted when possible.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_deletion: Vec<PendingDeletion>,
    /// Positions of followed files as of `next_id` (see [`crate::checkpoint`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<FileCheckpoint>,
    /// Set by `weir verify --repair` when it rebuilt a lost catalog and could not rebuild the
    /// checkpoints (see the module docs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checkpoints_lost: bool,
    #[serde(skip)]
    ranges: Vec<(u64, u64, usize)>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A segment file to delete (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingDeletion {
    /// Path relative to the database directory (`segments/<uuid>.seg`).
    pub file: String,
    /// The generation whose change dropped it: deletable once no reader of an older
    /// generation is registered (0: at once).
    pub generation: u64,
}

/// One sealed segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogEntry {
    /// The segment's UUID.
    pub uuid: String,
    /// Path relative to the database directory.
    pub file: String,
    /// File size in bytes.
    pub bytes: u64,
    /// Size of the segment's index file in bytes (0: none, or an archive from before index
    /// files; absent from the JSON then).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub index_bytes: u64,
    /// Number of events.
    pub events: u64,
    /// Number of batches.
    pub batches: u64,
    /// Event ID intervals `[begin, end)`.
    pub intervals: Vec<[u64; 2]>,
    /// Events per schema name.
    pub schemas: BTreeMap<String, u64>,
    /// Range of the `ts` field.
    pub ts: Option<[i64; 2]>,
}

impl CatalogEntry {
    /// The entry for a freshly sealed segment stored under `segments/`.
    pub fn from_sealed(s: &SealedSegment) -> CatalogEntry {
        CatalogEntry {
            uuid: s.uuid.hyphenated().to_string(),
            file: format!(
                "{}/{}",
                super::SEGMENTS_DIR,
                crate::segment::file_name(&s.uuid)
            ),
            bytes: s.bytes,
            index_bytes: s.index_bytes,
            events: s.events,
            batches: s.batches,
            intervals: s.intervals.iter().map(|r| [r.start, r.end]).collect(),
            schemas: s.schemas.clone(),
            ts: s.ts.map(|(a, b)| [a, b]),
        }
    }

    /// Bytes on disk: the segment and its index (what retention counts).
    pub fn disk_bytes(&self) -> u64 {
        self.bytes + self.index_bytes
    }

    /// The ID intervals as ranges.
    pub fn ranges(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        self.intervals.iter().map(|[a, b]| *a..*b)
    }
}

impl Catalog {
    /// Whether every ID of `ranges` is held by a listed segment (what makes an unlisted copy
    /// of those events redundant).
    pub(crate) fn covers(&self, ranges: &[Range<u64>]) -> bool {
        let mut listed: Vec<Range<u64>> = self.segments.iter().flat_map(|s| s.ranges()).collect();
        listed.sort_by_key(|r| r.start);
        ranges.iter().all(|r| {
            let mut at = r.start;
            for l in &listed {
                if l.start > at {
                    break;
                }
                at = at.max(l.end);
                if at >= r.end {
                    return true;
                }
            }
            at >= r.end
        })
    }
}

/// `list` (ascending, merged) with `add` merged in.
fn merge(list: &[[u64; 2]], add: &[Range<u64>]) -> Vec<[u64; 2]> {
    let mut all: Vec<[u64; 2]> = list.to_vec();
    all.extend(
        add.iter()
            .filter(|r| r.start < r.end)
            .map(|r| [r.start, r.end]),
    );
    all.sort_unstable();
    let mut merged: Vec<[u64; 2]> = Vec::with_capacity(all.len());
    for [a, b] in all {
        match merged.last_mut() {
            Some(last) if a <= last[1] => last[1] = last[1].max(b),
            _ => merged.push([a, b]),
        }
    }
    merged
}

/// `list` (ascending, merged) without the IDs of `remove`.
fn cut(list: &[[u64; 2]], remove: &[Range<u64>]) -> Vec<[u64; 2]> {
    let mut out = Vec::with_capacity(list.len());
    for &[a, b] in list {
        let mut parts: Vec<Range<u64>> = std::iter::once(a..b).collect();
        for r in remove {
            parts = parts
                .into_iter()
                .flat_map(|p| {
                    if r.end <= p.start || p.end <= r.start {
                        vec![p]
                    } else {
                        [p.start..r.start, r.end..p.end]
                            .into_iter()
                            .filter(|x| x.start < x.end)
                            .collect()
                    }
                })
                .collect();
        }
        out.extend(parts.into_iter().map(|p| [p.start, p.end]));
    }
    out
}

impl Default for Catalog {
    fn default() -> Catalog {
        Catalog {
            format: FORMAT.into(),
            version: 1,
            next_id: 0,
            segments: Vec::new(),
            generation: 0,
            erased: Vec::new(),
            lost: Vec::new(),
            pending_deletion: Vec::new(),
            checkpoints: Vec::new(),
            checkpoints_lost: false,
            ranges: Vec::new(),
        }
    }
}

impl Catalog {
    /// Path of the catalog in `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(CATALOG_FILE)
    }

    /// Loads the catalog of `dir`; an absent catalog is an empty archive.
    pub fn load(dir: &Path) -> Result<Catalog> {
        let path = Self::path(dir);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Catalog::default()),
            Err(e) => return Err(StoreError::io("read", &path, e)),
        };
        let mut cat: Catalog =
            serde_json::from_slice(&bytes).map_err(|source| StoreError::CatalogJson {
                path: path.clone(),
                context: "invalid JSON",
                source,
            })?;
        let corrupt = |reason: String| StoreError::CorruptCatalog {
            path: path.clone(),
            reason,
        };
        if cat.format != FORMAT || !(1..=2).contains(&cat.version) {
            return Err(corrupt(format!(
                "unsupported format {:?} version {}",
                cat.format, cat.version
            )));
        }
        cat.index().map_err(corrupt)?;
        Ok(cat)
    }

    /// Builds the range map and checks the invariants.
    fn index(&mut self) -> std::result::Result<(), String> {
        self.ranges.clear();
        let mut end = 0u64;
        for (i, s) in self.segments.iter().enumerate() {
            if s.file.contains("..") || s.file.starts_with('/') {
                return Err(format!(
                    "segment {i}: file name {:?} leaves the database",
                    s.file
                ));
            }
            for r in s.ranges() {
                if r.start < end || r.end <= r.start {
                    return Err(format!(
                        "segment {} interval [{}, {}) overlaps or is out of order",
                        s.uuid, r.start, r.end
                    ));
                }
                end = r.end;
                self.ranges.push((r.start, r.end, i));
            }
        }
        if self.next_id < end {
            return Err(format!(
                "next_id {} is below the last interval end {end}",
                self.next_id
            ));
        }
        let mut prev = 0u64;
        for (i, &[a, b]) in self.erased.iter().enumerate() {
            if b <= a || (i > 0 && a <= prev) || b > self.next_id {
                return Err(format!(
                    "erased range [{a}, {b}) is empty, out of order or past next_id {}",
                    self.next_id
                ));
            }
            prev = b;
        }
        for (i, &[a, b]) in self.lost.iter().enumerate() {
            let inside = self.erased.iter().any(|&[x, y]| x <= a && b <= y);
            if b <= a || (i > 0 && a <= self.lost[i - 1][1]) || !inside {
                return Err(format!(
                    "lost range [{a}, {b}) is empty, out of order or not among the erased IDs"
                ));
            }
        }
        for p in &self.pending_deletion {
            if p.file.contains("..") || p.file.starts_with('/') {
                return Err(format!(
                    "file name {:?} pending deletion leaves the database",
                    p.file
                ));
            }
        }
        Ok(())
    }

    /// Rebuilds the range map after segments were removed or added (kept in ID order by
    /// the caller); an inconsistency is a corrupt catalog.
    pub(crate) fn reindex(&mut self, dir: &Path) -> Result<()> {
        self.index().map_err(|reason| StoreError::CorruptCatalog {
            path: Self::path(dir),
            reason,
        })
    }

    /// Adds `ranges` (ascending) to the erased IDs, merging.
    pub(crate) fn add_erased(&mut self, ranges: &[Range<u64>]) {
        self.erased = merge(&self.erased, ranges);
    }

    /// Adds `ranges` to the IDs lost to damage (and so to the erased IDs), merging.
    pub(crate) fn add_lost(&mut self, ranges: &[Range<u64>]) {
        self.erased = merge(&self.erased, ranges);
        self.lost = merge(&self.lost, ranges);
    }

    /// Removes `ranges` from the lost IDs and the erased IDs (a segment holding them is listed
    /// again).
    pub(crate) fn remove_lost(&mut self, ranges: &[Range<u64>]) {
        self.erased = cut(&self.erased, ranges);
        self.lost = cut(&self.lost, ranges);
    }

    /// The IDs lost to damage.
    pub fn lost_ranges(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        self.lost.iter().map(|[a, b]| *a..*b)
    }

    /// Whether `name` (a file name in `segments/`) is pending deletion.
    pub fn is_pending_deletion(&self, name: &str) -> bool {
        self.pending_deletion.iter().any(|p| {
            p.file
                .strip_prefix(super::SEGMENTS_DIR)
                .and_then(|f| f.strip_prefix('/'))
                == Some(name)
        })
    }

    /// The erased ID ranges.
    pub fn erased_ranges(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        self.erased.iter().map(|[a, b]| *a..*b)
    }

    /// Writes the catalog atomically to `dir`.
    pub fn save(&self, dir: &Path, sync: bool) -> Result<()> {
        // Version 1 as long as nothing of version 2 is used (see the module docs).
        let v2 =
            self.generation > 0 || !self.erased.is_empty() || !self.pending_deletion.is_empty();
        let versioned;
        let this = if (self.version == 2) == v2 {
            self
        } else {
            let mut c = self.clone();
            c.version = if v2 { 2 } else { 1 };
            versioned = c;
            &versioned
        };
        let json = serde_json::to_vec(this).map_err(|source| StoreError::CatalogJson {
            path: Self::path(dir),
            context: "cannot serialize",
            source,
        })?;
        crate::fs::write_atomic(dir, CATALOG_FILE, &json, sync)?;
        Ok(())
    }

    /// Adds a sealed segment (in ID order).
    pub fn push(&mut self, entry: CatalogEntry) {
        let i = self.segments.len();
        for r in entry.ranges() {
            self.ranges.push((r.start, r.end, i));
            self.next_id = self.next_id.max(r.end);
        }
        self.segments.push(entry);
    }

    /// The index of the segment holding event `id`.
    pub fn locate(&self, id: u64) -> Option<usize> {
        let i = self.ranges.partition_point(|r| r.0 <= id).checked_sub(1)?;
        let (_, end, seg) = self.ranges[i];
        (id < end).then_some(seg)
    }

    /// The first segment holding an ID at or after `id`, with the first such ID.
    pub fn locate_from(&self, id: u64) -> Option<(usize, u64)> {
        let i = self.ranges.partition_point(|r| r.1 <= id);
        self.ranges
            .get(i)
            .map(|&(start, _, seg)| (seg, start.max(id)))
    }

    /// Total number of events in sealed segments.
    pub fn events(&self) -> u64 {
        self.segments.iter().map(|s| s.events).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::Catalog;

    /// Lost IDs are part of the erased ones; listing a segment again removes its IDs from both.
    #[test]
    #[allow(clippy::single_range_in_vec_init)]
    fn lost_ranges_stay_inside_the_erased_ones() {
        let mut c = Catalog {
            next_id: 100,
            ..Catalog::default()
        };
        c.add_erased(&[0..10]);
        c.add_lost(&[20..30, 40..50]);
        assert_eq!(c.erased, vec![[0, 10], [20, 30], [40, 50]]);
        assert_eq!(c.lost, vec![[20, 30], [40, 50]]);
        assert!(c.index().is_ok());
        c.remove_lost(&[25..45]);
        assert_eq!(c.erased, vec![[0, 10], [20, 25], [45, 50]]);
        assert_eq!(c.lost, vec![[20, 25], [45, 50]]);
        c.lost.push([60, 70]);
        assert!(c.index().unwrap_err().contains("lost range [60, 70)"));
    }
}
