//! `weir inspect`: one segment's header, like VAST's `lsvast`.

use std::fmt;
use std::path::Path;

use serde::Serialize;

use super::reader::Segment;
use super::Result;
use crate::size::Size;

/// What a segment holds, for humans ([`fmt::Display`]) and machines (serde, e.g. JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentInfo {
    /// The file inspected.
    pub file: String,
    /// The segment's UUID.
    pub uuid: String,
    /// Format version: 1, or 2 (with the metadata checksum).
    pub version: u32,
    /// File size in bytes.
    pub bytes: u64,
    /// Number of events.
    pub events: u64,
    /// Event ID intervals, half-open `[begin, end)`.
    pub intervals: Vec<[u64; 2]>,
    /// The batches in ID order.
    pub batches: Vec<BatchInfo>,
}

/// One batch of a segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BatchInfo {
    /// Schema name (`zeek.conn`).
    pub schema: String,
    /// The schema's fields as `name: type`.
    pub fields: Vec<String>,
    /// ID of the first event.
    pub first_id: u64,
    /// Number of events.
    pub rows: u64,
    /// Bytes of msgpack row data.
    pub bytes: u64,
    /// Range of the `ts` field in nanoseconds since the epoch.
    pub ts: Option<[i64; 2]>,
}

/// Opens and verifies the segment at `path` and describes it.
pub fn inspect(path: impl AsRef<Path>) -> Result<SegmentInfo> {
    let seg = Segment::open(path.as_ref())?;
    let mut batches = Vec::with_capacity(seg.len());
    for b in seg.batches() {
        let b = b?;
        batches.push(BatchInfo {
            schema: b.schema().name.clone(),
            fields: b
                .schema()
                .fields
                .iter()
                .map(|f| format!("{}: {}", f.name, f.ty))
                .collect(),
            first_id: b.first_id(),
            rows: b.len() as u64,
            bytes: b.data().len() as u64,
            ts: b.ts_range().map(|(a, z)| [a, z]),
        });
    }
    Ok(SegmentInfo {
        file: path.as_ref().display().to_string(),
        uuid: seg.uuid().hyphenated().to_string(),
        version: seg.version(),
        bytes: seg.byte_size() as u64,
        events: seg.events(),
        intervals: seg.intervals().iter().map(|r| [r.start, r.end]).collect(),
        batches,
    })
}

impl fmt::Display for SegmentInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "segment {}", self.file)?;
        writeln!(f, "  uuid:      {}", self.uuid)?;
        writeln!(f, "  version:   {}", self.version)?;
        writeln!(
            f,
            "  size:      {} ({} bytes)",
            Size(self.bytes),
            self.bytes
        )?;
        writeln!(f, "  events:    {}", self.events)?;
        let ivs: Vec<String> = self
            .intervals
            .iter()
            .map(|[a, b]| format!("[{a}, {b})"))
            .collect();
        writeln!(f, "  intervals: {}", ivs.join(" "))?;
        writeln!(f, "  batches:   {}", self.batches.len())?;
        for (i, b) in self.batches.iter().enumerate() {
            writeln!(
                f,
                "    #{i}: {} ids [{}, {}) rows {} bytes {}",
                b.schema,
                b.first_id,
                b.first_id + b.rows,
                b.rows,
                b.bytes
            )?;
        }
        let mut seen = std::collections::BTreeMap::new();
        for b in &self.batches {
            seen.entry(&b.schema).or_insert(&b.fields);
        }
        writeln!(f, "  schemas:")?;
        for (name, fields) in seen {
            writeln!(f, "    {name}: {}", fields.join(", "))?;
        }
        Ok(())
    }
}
