//! The schemas an archive holds: one definition of every schema (name and fields) of the
//! sealed segments and of the write-ahead log, so that the pre-filter of a second search names
//! only fields that some schema has, and names each one where it can only be well-typed.
//!
//! A sealed segment is opened only when its catalog entry lists a schema name not met yet (as
//! the search's type check does); the write-ahead log's batches are read (at most one
//! segment's worth). A segment that cannot be opened is left out: the search reports it.

use std::collections::HashSet;

use crate::store::Archive;
use crate::types::SchemaRef;

/// Every distinct schema definition of `archive` (the same name may come with several field
/// lists, from different Zeek versions).
pub fn archive_schemas(archive: &Archive) -> Vec<SchemaRef> {
    let mut names: HashSet<&str> = HashSet::new();
    let mut out: Vec<SchemaRef> = Vec::new();
    let add = |s: &SchemaRef, out: &mut Vec<SchemaRef>| {
        if !out.iter().any(|x| **x == **s) {
            out.push(s.clone());
        }
    };
    let catalog = archive.catalog();
    for entry in &catalog.segments {
        if entry.schemas.keys().all(|n| names.contains(n.as_str())) {
            continue;
        }
        let Ok(seg) = archive.segment(entry) else {
            continue;
        };
        names.extend(entry.schemas.keys().map(String::as_str));
        for s in seg.schemas() {
            add(s, &mut out);
        }
    }
    for b in archive.scan_range(catalog.next_id..u64::MAX).flatten() {
        add(b.schema(), &mut out);
    }
    out
}
