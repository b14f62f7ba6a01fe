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
//! `checkpoints` (absent when empty, so older catalogs read unchanged) holds the position of
//! every followed file after the last event of the last sealed segment (see
//! [`crate::checkpoint`]); `"done": true` marks a compressed file read to its end. The
//! write-ahead log's records carry the positions of the events after it.
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
    /// Format version (1).
    pub version: u32,
    /// The ID after the last sealed event.
    pub next_id: u64,
    /// Sealed segments in ID order.
    pub segments: Vec<CatalogEntry>,
    /// Positions of followed files as of `next_id` (see [`crate::checkpoint`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<FileCheckpoint>,
    #[serde(skip)]
    ranges: Vec<(u64, u64, usize)>,
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
            events: s.events,
            batches: s.batches,
            intervals: s.intervals.iter().map(|r| [r.start, r.end]).collect(),
            schemas: s.schemas.clone(),
            ts: s.ts.map(|(a, b)| [a, b]),
        }
    }

    /// The ID intervals as ranges.
    pub fn ranges(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        self.intervals.iter().map(|[a, b]| *a..*b)
    }
}

impl Default for Catalog {
    fn default() -> Catalog {
        Catalog {
            format: FORMAT.into(),
            version: 1,
            next_id: 0,
            segments: Vec::new(),
            checkpoints: Vec::new(),
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
        if cat.format != FORMAT || cat.version != 1 {
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
        Ok(())
    }

    /// Writes the catalog atomically to `dir`.
    pub fn save(&self, dir: &Path, sync: bool) -> Result<()> {
        let json = serde_json::to_vec(self).map_err(|source| StoreError::CatalogJson {
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
