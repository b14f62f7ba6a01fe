//! Reading the batches of a sealed segment whose metadata is lost (part of `weir verify
//! --repair`, see `repair.rs`, "Recovering a segment", step 3).
//!
//! A sealed segment keeps each batch as the chunk its active file held (`orphan.rs` says
//! how they are laid out and found): sealing only writes the front (root, schemas, batch
//! vector) and cuts the unused start, keeping the end. So when the front or the footer is
//! damaged beyond what its size prefix and file identifier restore, and no index file
//! holds a copy of it, the batches are found by scanning the file as an orphaned active
//! file's are: each candidate counts only if its rows match its own checksum.
//!
//! A chunk names its schema by an index into the lost front. The candidates are the
//! distinct schemas of the archive's other segment files that open (and, when the catalog
//! lists the segment, only those of the names its entry records); an index is given a
//! schema only when exactly one candidate decodes every row of every batch with it, and no
//! two indices take the same one (`orphan.rs`). A batch whose schema is not certain is not
//! guessed: its IDs are reported lost. With a catalog entry, only batches inside its ID
//! intervals are taken (the entry says which events the segment holds); every other ID of
//! the entry is lost.

use std::ops::Range;
use std::path::Path;

use super::catalog::{Catalog, CatalogEntry};
use super::{unlisted_segment_files, SEGMENTS_DIR};
use crate::batch::Batch;
use crate::segment::Segment;
use crate::types::SchemaRef;

/// What scanning a segment found.
pub(super) struct Scanned {
    /// The batches recovered, in ID order, with their IDs.
    pub(super) batches: Vec<Batch>,
    /// The IDs of batches found without a certain schema (with an entry, every ID of it
    /// that no recovered batch holds is lost: the caller's to compute).
    pub(super) unknown: Vec<Range<u64>>,
    /// How each schema index was matched (for the report).
    pub(super) matched: Vec<String>,
}

/// Scans the segment at `path` of the archive in `dir` for its batches (see the module
/// docs); `entry` is its catalog entry, if the catalog lists it. `Err` when no batch is
/// recovered (why).
pub(super) fn scan_segment(
    dir: &Path,
    path: &Path,
    entry: Option<&CatalogEntry>,
) -> Result<Scanned, String> {
    let mut schemas = other_schemas(dir, path);
    if let Some(e) = entry {
        schemas.retain(|s| e.schemas.contains_key(&s.name));
    }
    let found = super::orphan::recover(dir, path, &Catalog::default(), 0, &schemas)?;
    let mut batches = found.batches;
    if let Some(e) = entry {
        let ranges: Vec<Range<u64>> = e.ranges().collect();
        batches.retain(|b| {
            let ids = b.id_range();
            ranges
                .iter()
                .any(|r| r.start <= ids.start && ids.end <= r.end)
        });
    }
    if batches.is_empty() {
        return Err(format!(
            "scanning it for batches found none whose checksum holds and whose schema is certain ({})",
            found.matched.join("; ")
        ));
    }
    Ok(Scanned {
        batches,
        unknown: found.unknown,
        matched: found.matched,
    })
}

/// The distinct schemas of the segment files of `dir` other than `path` that open.
fn other_schemas(dir: &Path, path: &Path) -> Vec<SchemaRef> {
    let mut out: Vec<SchemaRef> = Vec::new();
    let names = unlisted_segment_files(dir, &Catalog::default()).unwrap_or_default();
    for name in names {
        let p = dir.join(SEGMENTS_DIR).join(&name);
        if p == path {
            continue;
        }
        let Ok(seg) = Segment::open(&p) else {
            continue;
        };
        for s in seg.schemas() {
            if !out.iter().any(|o| o == s) {
                out.push(s.clone());
            }
        }
    }
    out
}
