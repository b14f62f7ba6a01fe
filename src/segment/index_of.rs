//! The index file of an open segment (the format is in `index.rs`): encoded from what opening
//! the segment found, written beside it, checked against it. Above both the index format and
//! the reader.

use std::ops::Range;
use std::path::PathBuf;

use super::compress::stored_byte;
use super::index::{
    decode, encode_records, index_path, write_index_bytes, BatchRecord, Header, SketchRecord,
};
use super::Segment;

/// The encoding of `seg`'s index, from what opening it found.
fn encode(seg: &Segment) -> Vec<u8> {
    let p = seg.parts();
    let file_len = seg.byte_size();
    let pos = |r: &Range<usize>| ((file_len - r.start) as u64, r.len() as u32);
    let batches: Vec<BatchRecord> = p
        .batches
        .iter()
        .enumerate()
        .map(|(i, b)| BatchRecord {
            schema: b.schema,
            first_id: b.first_id,
            rows: b.rows,
            ts: b.ts,
            data: pos(&b.data),
            offsets: pos(&b.offsets),
            checksum: b.checksum,
            stored: stored_byte(b.codec, b.layout),
            raw_size: b.raw_size as u32,
            sketch: b.sketch.as_ref().map(|(bloom, hashes, _, _)| {
                let sk = seg.sketch(i);
                SketchRecord {
                    bloom: pos(bloom),
                    hashes: *hashes,
                    ranges: sk
                        .iter()
                        .flat_map(|sk| sk.ranges.iter())
                        .map(|r| (r.field(), r.bits().0, r.bits().1, r.present()))
                        .collect(),
                    times: sk.and_then(|sk| sk.times()).map(|t| t.to_owned()),
                }
            }),
        })
        .collect();
    let header = Header {
        file_len,
        version: p.version,
        uuid: p.uuid,
        events: p.events,
        intervals: &p.intervals,
        schemas: &p.schemas,
    };
    encode_records(&header, &batches)
}

/// Writes the index of `seg` (opened with the verifier) next to it, atomically; returns its
/// path and size.
pub fn write_index(seg: &Segment, sync: bool) -> Result<(PathBuf, u64), crate::fs::FsError> {
    write_index_bytes(seg.path(), &encode(seg), sync)
}

/// Checks the index file of `seg` (opened with the verifier) against it: `Ok(false)` when
/// there is none, `Err` when it exists and is not exactly the index of `seg`.
pub fn check_index(seg: &Segment) -> Result<bool, String> {
    let path = index_path(seg.path());
    let stored = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if let Err(reason) = decode(&stored, seg.byte_size()) {
        return Err(format!("index {} is damaged: {reason}", path.display()));
    }
    if stored != encode(seg) {
        return Err(format!(
            "index {} does not describe its segment",
            path.display()
        ));
    }
    Ok(true)
}
