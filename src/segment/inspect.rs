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
    /// Format version: 1, 2 (with the metadata checksum), 3 (compressed batches, sketches), 4
    /// (batches in columns) or 5 (time histograms).
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
    /// Bytes of msgpack row data (uncompressed).
    pub bytes: u64,
    /// How the rows are stored: `none`, `lz4` or `zstd`.
    pub codec: String,
    /// How compressed rows are arranged: `rows` (formats 3 and 4) or `columns` (format 4).
    pub layout: String,
    /// The fields stored as integer planes (format 6) rather than as their values.
    pub planes: Vec<String>,
    /// The fields stored as dictionaries (format 7) rather than as their values.
    pub dicts: Vec<String>,
    /// The fields stored marked (format 10: markers, then payloads) rather than as their
    /// values.
    pub marked: Vec<String>,
    /// The fields stored in blocks of rows (format 11) rather than as one frame.
    pub blocked: Vec<String>,
    /// Bytes the batch's rows and row offsets take in the segment (compressed or not).
    pub stored_bytes: u64,
    /// Bytes of the batch's sketch's Bloom filter (0 without a sketch).
    pub bloom_bytes: u64,
    /// Fields with a value range in the sketch.
    pub ranges: u64,
    /// The sketch's time histogram (format 5): its buckets and their width in seconds.
    pub time_buckets: Option<(u64, u64)>,
    /// Range of the `ts` field in nanoseconds since the epoch.
    pub ts: Option<[i64; 2]>,
}

/// Opens and verifies the segment at `path` and describes it.
pub fn inspect(path: impl AsRef<Path>) -> Result<SegmentInfo> {
    let seg = Segment::open(path.as_ref())?;
    let mut batches = Vec::with_capacity(seg.len());
    for (i, b) in seg.batches().enumerate() {
        let b = b?;
        let (codec, stored, _) = seg.batch_storage(i).unwrap_or_default();
        let sketch = seg.sketch(i);
        let names = |cols: Option<Vec<usize>>| -> Vec<String> {
            let fields = &b.schema().fields;
            cols.unwrap_or_default()
                .into_iter()
                .filter_map(|c| fields.get(c).map(|f| f.name.clone()))
                .collect()
        };
        batches.push(BatchInfo {
            codec: codec.to_string(),
            layout: seg.batch_layout(i).unwrap_or_default().name().to_string(),
            planes: names(seg.batch_planes(i)),
            dicts: names(seg.batch_dicts(i)),
            marked: names(seg.batch_marked(i)),
            blocked: names(seg.batch_blocked(i)),
            stored_bytes: stored as u64,
            bloom_bytes: sketch.as_ref().map_or(0, |s| s.bloom_bytes() as u64),
            ranges: sketch.as_ref().map_or(0, |s| s.range_count() as u64),
            time_buckets: sketch
                .as_ref()
                .and_then(|s| s.times())
                .map(|t| (t.len() as u64, (t.width / 1_000_000_000) as u64)),
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
                "    #{i}: {} ids [{}, {}) rows {} bytes {} stored {} ({}{}) sketch {}",
                b.schema,
                b.first_id,
                b.first_id + b.rows,
                b.rows,
                b.bytes,
                b.stored_bytes,
                b.codec,
                if b.layout == "columns" {
                    let mut s = String::from(", columns");
                    for (what, cols) in [
                        ("planes", &b.planes),
                        ("dicts", &b.dicts),
                        ("marked", &b.marked),
                        ("blocks", &b.blocked),
                    ] {
                        if !cols.is_empty() {
                            s.push_str(&format!("; {what}: {}", cols.join(" ")));
                        }
                    }
                    s
                } else {
                    String::new()
                },
                match (b.bloom_bytes > 0 || b.ranges > 0, b.time_buckets) {
                    (false, _) => "none".into(),
                    (true, None) => format!("{} B bloom, {} ranges", b.bloom_bytes, b.ranges),
                    (true, Some((n, w))) => format!(
                        "{} B bloom, {} ranges, {n} time buckets of {w} s",
                        b.bloom_bytes, b.ranges
                    ),
                }
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
