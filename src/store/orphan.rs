//! Recovering the rows of an active segment file whose write-ahead log is gone (part of
//! `weir verify --repair`, see `wal_repair.rs`).
//!
//! The active segment's file (`segments/.<uuid>.seg.tmp`, see [`crate::segment`]'s writer)
//! holds each batch as a *chunk*: its `Batch` table of `schemas/segment.fbs` with its
//! vtable, sketch, row offsets and rows, padded to 8 bytes, laid back to back from the end of
//! the sparse file towards its start (the last batch lowest). The front (root, schemas,
//! batch vector) is only written at seal, so the chunks are found by scanning: from the first
//! byte written, each 8-aligned position is tried as a chunk start (up to 7 zero bytes of
//! padding, then a vtable whose table follows it and points back at it, every field inside
//! the file), and a candidate counts only if its rows match the batch's checksum (for a
//! batch in columns, its column header's checksum, and each column's when inflated). A
//! chunk found is skipped whole (the scan goes on after its rows, the highest part of it).
//!
//! What a chunk does not hold is its schema: the batch names an index into the segment's
//! schemas, which the lost log's records (and the front, at seal) held. A schema is
//! recovered only when it is certain enough: of the distinct schemas of the sealed segments
//! (and of a damaged log's intact records), exactly one must decode every row of every batch with that index (and no two indices may
//! take the same schema). Batches whose schema is not found so are not recovered; the report
//! says which IDs, and the file is kept in `damaged/`.

use std::collections::BTreeMap;
use std::io::Read;
use std::ops::Range;
use std::path::Path;

use super::archive::check_rows;
use super::catalog::Catalog;
use crate::batch::Batch;
use crate::segment::{from_stored_byte, unpack, Layout, Segment};
use crate::types::SchemaRef;

/// A batch found in the file, before its schema is known.
struct Found {
    schema: u32,
    first_id: u64,
    ts: Option<(i64, i64)>,
    rows: Vec<u8>,
    offsets: Vec<usize>,
}

/// What [`recover`] found in one file.
pub(super) struct Recovered {
    /// The batches whose schema was found, in ID order, with their IDs set.
    pub(super) batches: Vec<Batch>,
    /// Batches found whose schema was not: their IDs.
    pub(super) unknown: Vec<Range<u64>>,
    /// How each schema index was matched (for the report).
    pub(super) matched: Vec<String>,
    /// The ID after the last batch found (with a schema or not).
    pub(super) end: u64,
}

/// Bytes read at a time while looking for the first written byte.
const READ_BLOCK: usize = 1 << 20;

/// Reads the written part of `path` (from its first non-zero 8-aligned word) and recovers
/// the batches of IDs at or past `from_id` (see the module docs), the schemas of the sealed
/// segments and `known` (those of a damaged log's intact records) being the candidates.
/// `Err` says why nothing can be read.
pub(super) fn recover(
    dir: &Path,
    path: &Path,
    cat: &Catalog,
    from_id: u64,
    known: &[SchemaRef],
) -> Result<Recovered, String> {
    let mut file = std::fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    // Skip the sparse start block by block; keep everything from the first written block.
    let mut buf = Vec::new();
    let mut block = vec![0u8; READ_BLOCK];
    loop {
        let n = read_block(&mut file, &mut block).map_err(|e| format!("cannot read: {e}"))?;
        if n == 0 {
            break;
        }
        if buf.is_empty() && block[..n].iter().all(|&b| b == 0) {
            continue;
        }
        buf.extend_from_slice(&block[..n]);
    }
    // Blocks are 8-aligned (READ_BLOCK is), so positions in `buf` are as in the file mod 8.
    let mut found = Vec::new();
    let mut at = 0usize;
    while at + 8 <= buf.len() {
        match chunk_at(&buf, at) {
            Some((f, end)) => {
                found.push(f);
                at = end.max(at + 8).next_multiple_of(8);
            }
            None => at += 8,
        }
    }
    let mut schemas = sealed_schemas(dir, cat);
    for s in known {
        if !schemas.iter().any(|o| o == s) {
            schemas.push(s.clone());
        }
    }
    let mut by_index: BTreeMap<u32, Vec<&Found>> = BTreeMap::new();
    for f in found.iter().filter(|f| f.first_id >= from_id) {
        by_index.entry(f.schema).or_default().push(f);
    }
    let mut chosen: BTreeMap<u32, SchemaRef> = BTreeMap::new();
    let mut matched = Vec::new();
    for (index, batches) in &by_index {
        let fits: Vec<&SchemaRef> = schemas
            .iter()
            .filter(|s| {
                batches.iter().all(|f| {
                    check_rows(
                        s,
                        f.offsets.iter().enumerate().map(|(i, &o)| {
                            let end = f.offsets.get(i + 1).copied().unwrap_or(f.rows.len());
                            f.rows.get(o..end).unwrap_or_default()
                        }),
                    )
                    .is_ok()
                })
            })
            .collect();
        if let [one] = fits.as_slice() {
            matched.push(format!(
                "schema {index} of the file as {} (the one schema of the sealed segments that decodes its rows)",
                one.name
            ));
            chosen.insert(*index, (*one).clone());
        } else {
            matched.push(format!(
                "schema {index} of the file not known: {} schemas of the sealed segments decode its rows",
                fits.len()
            ));
        }
    }
    // Two indices taking one schema: one of them is wrong; neither is trusted.
    let taken: Vec<(u32, SchemaRef)> = chosen.iter().map(|(k, s)| (*k, s.clone())).collect();
    for (k, s) in &taken {
        if taken.iter().any(|(j, t)| j != k && t == s) {
            chosen.remove(k);
        }
    }
    let mut batches = Vec::new();
    let mut unknown = Vec::new();
    let mut sorted: Vec<&Found> = found.iter().filter(|f| f.first_id >= from_id).collect();
    sorted.sort_by_key(|f| f.first_id);
    let mut next = from_id;
    for f in sorted {
        let ids = f.first_id..f.first_id + f.offsets.len() as u64;
        if ids.start < next {
            // Overlaps a batch taken already (a chunk of an earlier life): not trusted.
            continue;
        }
        let batch = chosen.get(&f.schema).and_then(|s| {
            Batch::from_parts(s.clone(), f.rows.clone(), f.offsets.clone(), f.ts).map(|mut b| {
                b.set_id(f.first_id);
                b
            })
        });
        match batch {
            Some(b) => batches.push(b),
            None => unknown.push(ids.clone()),
        }
        next = ids.end;
    }
    Ok(Recovered {
        batches,
        unknown,
        matched,
        end: next,
    })
}

/// Fills `buf` as far as the file goes; returns the bytes read.
fn read_block(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The distinct schemas of the catalog's segments.
fn sealed_schemas(dir: &Path, cat: &Catalog) -> Vec<SchemaRef> {
    let mut out: Vec<SchemaRef> = Vec::new();
    for e in &cat.segments {
        let Ok(seg) = Segment::open(dir.join(&e.file)) else {
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

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Field slots of the `Batch` table (`schemas/segment.fbs`), in vtable order.
const F_SCHEMA: usize = 0;
const F_FIRST_ID: usize = 1;
const F_ROWS: usize = 2;
const F_TS: usize = 3;
const F_DATA: usize = 4;
const F_OFFSETS: usize = 5;
const F_CHECKSUM: usize = 6;
const F_CODEC: usize = 7;
const F_RAW_SIZE: usize = 8;

/// The batch of a chunk starting at `at` (8-aligned; up to 7 zero bytes, then the vtable),
/// and the end of its rows, if it is one whose rows match their checksum.
fn chunk_at(buf: &[u8], at: usize) -> Option<(Found, usize)> {
    let v = (at..at + 8).find(|&i| buf.get(i).is_some_and(|&b| b != 0))?;
    let vt_len = u16_at(buf, v)? as usize;
    let table_len = u16_at(buf, v + 2)? as usize;
    // `data` and `offsets` are required: the vtable reaches them at least (it stops at the
    // last field that is not at its default).
    if !(4 + 2 * (F_OFFSETS + 1)..=64).contains(&vt_len)
        || !vt_len.is_multiple_of(2)
        || table_len < 4
    {
        return None;
    }
    let t = v + vt_len;
    if !t.is_multiple_of(4) || t + table_len > buf.len() {
        return None;
    }
    // The table's first word points back at its vtable.
    if i32::from_le_bytes(buf.get(t..t + 4)?.try_into().ok()?) as i64 != (t - v) as i64 {
        return None;
    }
    let slot = |f: usize| -> Option<usize> {
        if 4 + 2 * f >= vt_len {
            return None;
        }
        let off = u16_at(buf, v + 4 + 2 * f)? as usize;
        (off != 0 && off < table_len).then_some(t + off)
    };
    let scalar32 = |f: usize| slot(f).map_or(Some(0), |p| u32_at(buf, p));
    let schema = scalar32(F_SCHEMA)?;
    let first_id = slot(F_FIRST_ID).map_or(Some(0), |p| u64_at(buf, p))?;
    let rows = scalar32(F_ROWS)? as usize;
    let checksum = scalar32(F_CHECKSUM)?;
    let raw_size = scalar32(F_RAW_SIZE)? as usize;
    let codec = slot(F_CODEC).map_or(Some(0), |p| buf.get(p).copied())?;
    let ts = match slot(F_TS) {
        Some(p) => Some((u64_at(buf, p)? as i64, u64_at(buf, p + 8)? as i64)),
        None => None,
    };
    if rows == 0 || first_id.checked_add(rows as u64).is_none() {
        return None;
    }
    let vector = |f: usize| -> Option<(usize, usize)> {
        let p = slot(f)?;
        let start = p.checked_add(u32_at(buf, p)? as usize)?;
        let len = u32_at(buf, start)? as usize;
        let body = start + 4;
        (body.checked_add(len)? <= buf.len()).then_some((body, len))
    };
    let (data_at, data_len) = vector(F_DATA)?;
    let (offsets_at, offsets_len) = vector(F_OFFSETS)?;
    let stored = &buf[data_at..data_at + data_len];
    let offsets_bytes = &buf[offsets_at..offsets_at + 4 * offsets_len];
    let end = data_at + data_len;
    let (codec, layout) = from_stored_byte(codec)?;
    let (rows_bytes, offsets) = if codec == crate::segment::Codec::None {
        let mut h = crc32fast::Hasher::new();
        h.update(stored);
        h.update(offsets_bytes);
        if h.finalize() != checksum || offsets_len != rows {
            return None;
        }
        let offsets: Vec<usize> = offsets_bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .collect();
        (stored.to_vec(), offsets)
    } else {
        let covered = match layout {
            Layout::Columns => {
                let h = crate::segment::columns::header(stored, raw_size, rows).ok()?;
                &stored[..h.len]
            }
            Layout::Rows => stored,
        };
        if crc32fast::hash(covered) != checksum {
            return None;
        }
        let (raw, len) = unpack(codec, layout, stored, raw_size, rows).ok()?;
        let raw: &[u8] = &raw;
        let offsets: Vec<usize> = raw
            .get(len..)?
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .collect();
        (raw.get(..len)?.to_vec(), offsets)
    };
    if offsets.len() != rows {
        return None;
    }
    Some((
        Found {
            schema,
            first_id,
            ts,
            rows: rows_bytes,
            offsets,
        },
        end,
    ))
}
