//! Checkpoints of followed files: where each file's lines end in the archive.
//!
//! A followed file (see [`crate::source::follow`]) is known by its [`FileId`]: device, inode,
//! and a fingerprint of its first bytes (so that a reused inode is not taken for the old
//! file, and a copy of a file, as copy-and-truncate rotation makes, is found by content). Its
//! progress is a [`Position`]: a byte offset at a line start, plus a number of rows to skip
//! after it (rows decoded from the lines after `offset` that are already in the archive; 0
//! except when a batch was cut between two rows of one read).
//!
//! Each batch decoded from a followed file carries [`Mark`]s: "after row `row_end` of this
//! batch, file F is at position P". The marks travel with the rows through the batcher
//! (which concatenates and cuts batches, see [`crate::batch::Batch::append`] and
//! [`crate::batch::Batch::split_off`]) to the archive, where the write-ahead log records, in
//! the same record as the rows, the last position of each file (see [`crate::wal`]), and the
//! catalog keeps the positions of everything sealed (see [`crate::store::catalog`]). So the
//! positions an archive holds are exactly those of the lines it holds: a restart resumes
//! there, with no line twice and none missing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Where a followed source starts reading a file that has no checkpoint (`weir import
/// --from-start`, `--from-end`; `from = "start"|"end"` of a file source).
///
/// The choice matters when an archive's checkpoints are lost (a repaired catalog that could not
/// rebuild them, see [`crate::store::catalog`]'s `checkpoints_lost`): then every file has no
/// checkpoint, and a followed source refuses to start with [`StartFrom::Checkpoints`] rather
/// than import again what the archive may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StartFrom {
    /// From the checkpoints; a file without one from byte 0 (the default).
    #[default]
    Checkpoints,
    /// Every file without a checkpoint from byte 0, even when checkpoints are lost.
    Start,
    /// A file without a checkpoint, present at the first scan, from its end (its size rounded
    /// back to the end of its last complete line): only lines written later are imported.
    /// Files that appear later are read whole.
    End,
}

/// The identity of a followed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FileId {
    /// Device number (`st_dev`).
    pub dev: u64,
    /// Inode number (`st_ino`).
    pub ino: u64,
    /// Bytes covered by the fingerprint (at most [`FileId::FINGERPRINT_BYTES`]).
    pub fp_len: u32,
    /// CRC-32 of the first `fp_len` bytes of the file (as stored, compressed or not).
    pub fp_crc: u32,
}

impl FileId {
    /// Bytes at the start of a file that its fingerprint covers: a Zeek log's header (its
    /// `#path` and `#open` lines) lies within them, so logs of different types and hours
    /// differ.
    pub const FINGERPRINT_BYTES: u32 = 4096;

    /// Whether `self` and `other` are the same content: equal fingerprints (the inode may
    /// differ, as for a copy).
    pub fn same_content(&self, other: &FileId) -> bool {
        self.fp_len == other.fp_len && self.fp_crc == other.fp_crc
    }
}

/// How far a file's lines are in the archive.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Position {
    /// Byte offset of a line start (in the decompressed text for compressed files).
    pub offset: u64,
    /// Rows decoded from the lines at `offset` that are already in the archive.
    pub skip: u64,
}

impl Position {
    /// The position `rows` rows further (within the lines after `offset`).
    pub fn plus_rows(self, rows: u64) -> Position {
        Position {
            offset: self.offset,
            skip: self.skip + rows,
        }
    }
}

/// A followed file's checkpoint: its identity, last known path and position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileCheckpoint {
    /// The file's identity.
    pub id: FileId,
    /// Its path when it was last read (for finding it again and for messages).
    pub path: String,
    /// Where its lines end in the archive.
    pub pos: Position,
    /// The file was read to its end: a compressed file through its last complete member or
    /// frame, or a rotated file. It is not looked for when following starts again; if it
    /// turns up again (by its content, under any name) it is read on from `pos` only if it
    /// grew (a plain file longer than `pos`, a compressed one longer than `raw`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub done: bool,
    /// For a compressed file: its stored (compressed) bytes up to the end of the last
    /// complete member or frame read, so that a restart sees whether members were appended
    /// without decompressing it. 0 for a plain file, and in checkpoints written before it was
    /// recorded (a compressed file marked done then is taken as finished for good).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub raw: u64,
    /// For a followed Zeek TSV file: the header block its lines at `pos` are read with (from
    /// its `#separator` line through its `#types` line, as the file has it or as it was
    /// inherited; see [`crate::source::follow`]), so that after copy-and-truncate, which
    /// leaves rows without a header, the file is read on with it, also after a restart. Empty
    /// for other files, for files read to their end (`done`), and in checkpoints written
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub header: String,
    /// CRC-32 of the file's text before `pos.offset` (its bytes as stored for a plain file,
    /// NUL bytes of holes included), so that a resume notices a file rewritten with the same
    /// start ([`FileId`]'s fingerprint) but other lines before the position, and reads it
    /// again whole rather than on from the middle of a line (see
    /// [`crate::source::resume`] and [`crate::source::follow`]). For a compressed file it is
    /// that of its decompressed text (recorded by batch imports, which read it as they
    /// decompress). `None` when not known: in checkpoints written before it was recorded, and
    /// for a compressed file followed (its `raw` length tells that it grew); a checkpoint
    /// without it is trusted as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum: Option<u32>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The schema name of a batch without rows that carries only checkpoints (see
/// [`carrier`]).
pub const CARRIER_SCHEMA: &str = "weir.checkpoint";

/// A batch without rows that carries `marks` (each holding after row 0): a file's position
/// moved without rows of its own (read to its end after its last row, or only lines that made
/// no rows). The batcher appends such marks to the rows before them.
pub fn carrier(marks: impl IntoIterator<Item = FileCheckpoint>) -> crate::batch::Batch {
    let schema = crate::types::Schema::new(CARRIER_SCHEMA, vec![]).into_shared();
    let mut b = crate::batch::BatchBuilder::new(schema).finish();
    for end in marks {
        b.push_mark(Mark {
            row_start: 0,
            row_end: 0,
            start: None,
            end,
        });
    }
    b
}

/// Where a decoded batch's rows lie in the text they came from, as its decoder saw it: they
/// are the rows `rows_before..rows_before + len` of the lines that start at byte
/// `line_start`; `end`, when known, is a line start (or the end of the text) such that the
/// rows of every line before it are in this batch or before it. A decoder reports this for
/// text it was given in runs of whole lines (see
/// [`crate::codec::zeek::parallel::ParallelTsvReader::next_span`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowSpan {
    /// A line start at or before the batch's first row.
    pub line_start: u64,
    /// Rows decoded from the lines after `line_start` before this batch's first row.
    pub rows_before: u64,
    /// The line start after the batch's rows, when all rows before it are out.
    pub end: Option<u64>,
}

/// A checkpoint carried by a batch: after its first `row_end` rows, the file is at `end`.
/// Rows `row_start..row_end` come from that file and start at `start` (when known), so a
/// batch cut between them still gets an exact position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// The first row of the batch that came from this read of the file.
    pub row_start: usize,
    /// The row after the last one from this read.
    pub row_end: usize,
    /// The file's position before row `row_start` (unknown for marks read back from a log).
    pub start: Option<Position>,
    /// The file and its position after row `row_end`.
    pub end: FileCheckpoint,
}

impl Mark {
    /// A mark with no rows of its own after row `rows` of a batch: the file is at `end`
    /// once those rows are committed (the checkpoints of rows dropped, regrouped or cut off,
    /// moved to where the batch that carries them ends).
    pub fn after_rows(rows: usize, end: FileCheckpoint) -> Mark {
        Mark {
            row_start: rows,
            row_end: rows,
            start: None,
            end,
        }
    }

    /// The marks of rows `[a, b)` of a batch with `marks`, renumbered from `a`: marks ending
    /// in the range are kept; a mark whose rows straddle `a` or `b` is cut there (when its start
    /// is known; otherwise the part before `b` gets none, which at worst reads those rows
    /// again after a crash).
    pub fn slice(marks: &[Mark], a: usize, b: usize) -> Vec<Mark> {
        let mut out = Vec::new();
        for m in marks {
            let keep = if m.row_start == m.row_end {
                // A position without rows of its own (a file read to its end, or one after a
                // filter): it holds after row `row_end - 1`, so it goes with that row.
                (a < m.row_end && m.row_end <= b) || (m.row_end == 0 && a == 0)
            } else {
                m.row_end > a && m.row_start < b
            };
            if !keep {
                continue;
            }
            let from = m.row_start.max(a);
            let start = m.start.map(|s| s.plus_rows((from - m.row_start) as u64));
            if m.row_end <= b {
                out.push(Mark {
                    row_start: from - a,
                    row_end: m.row_end - a,
                    start,
                    end: m.end.clone(),
                });
            } else if let Some(s) = m.start {
                let mut end = m.end.clone();
                end.pos = s.plus_rows((b - m.row_start) as u64);
                end.done = false;
                if end.pos.offset != m.end.pos.offset {
                    // The sum is that of the text before the read's end.
                    end.sum = None;
                }
                out.push(Mark {
                    row_start: from - a,
                    row_end: b - a,
                    start,
                    end,
                });
            }
        }
        out
    }

    /// The last checkpoint of each file among `marks` (in order of first appearance).
    pub fn last_per_file(marks: &[Mark]) -> Vec<FileCheckpoint> {
        let mut out: Vec<FileCheckpoint> = Vec::new();
        for m in marks {
            match out.iter_mut().find(|c| c.id == m.end.id) {
                Some(c) => *c = m.end.clone(),
                None => out.push(m.end.clone()),
            }
        }
        out
    }
}

/// The checkpoints of an archive, by file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checkpoints {
    map: BTreeMap<FileId, FileCheckpoint>,
}

impl Checkpoints {
    /// Records the positions in `marks` (later ones win).
    pub fn apply_marks(&mut self, marks: &[Mark]) {
        for m in marks {
            self.map.insert(m.end.id, m.end.clone());
        }
    }

    /// Records `list`.
    pub fn extend(&mut self, list: impl IntoIterator<Item = FileCheckpoint>) {
        for c in list {
            self.map.insert(c.id, c);
        }
    }

    /// Every checkpoint, ordered by file identity.
    pub fn to_vec(&self) -> Vec<FileCheckpoint> {
        self.map.values().cloned().collect()
    }

    /// The length of their encoding in a write-ahead log record or a segment
    /// ([`crate::wal::encode_checkpoints`]).
    pub fn encoded_len(&self) -> usize {
        4 + self
            .map
            .values()
            .map(crate::wal::checkpoint_len)
            .sum::<usize>()
    }

    /// How many files they are for.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(ino: u64, offset: u64) -> FileCheckpoint {
        FileCheckpoint {
            id: FileId {
                dev: 1,
                ino,
                fp_len: 10,
                fp_crc: 7,
            },
            path: format!("f{ino}"),
            pos: Position { offset, skip: 0 },
            done: false,
            raw: 0,
            header: String::new(),
            sum: None,
        }
    }

    fn mark(row_start: usize, row_end: usize, ino: u64, from: u64, to: u64) -> Mark {
        Mark {
            row_start,
            row_end,
            start: Some(Position {
                offset: from,
                skip: 0,
            }),
            end: cp(ino, to),
        }
    }

    /// Cutting between two rows of one read gives the read's start plus the rows before the
    /// cut; the rest keeps the read's end.
    #[test]
    fn slice_cuts_a_read_exactly() {
        let marks = vec![mark(0, 3, 1, 0, 30), mark(3, 8, 2, 100, 150)];
        let head = Mark::slice(&marks, 0, 5);
        assert_eq!(head.len(), 2);
        assert_eq!(head[0].end.pos.offset, 30);
        assert_eq!(
            head[1].end.pos,
            Position {
                offset: 100,
                skip: 2
            }
        );
        let tail = Mark::slice(&marks, 5, 8);
        assert_eq!(tail.len(), 1);
        assert_eq!((tail[0].row_start, tail[0].row_end), (0, 3));
        assert_eq!(
            tail[0].start,
            Some(Position {
                offset: 100,
                skip: 2
            })
        );
        assert_eq!(tail[0].end.pos.offset, 150);
        let last = Mark::last_per_file(&marks);
        assert_eq!(last.len(), 2);
    }

    /// A position without rows goes with the row before it.
    #[test]
    fn slice_keeps_positions_without_rows_with_the_row_before() {
        let mut m = mark(3, 3, 1, 0, 40);
        m.start = None;
        let marks = [m];
        assert!(Mark::slice(&marks, 0, 2).is_empty());
        assert_eq!(Mark::slice(&marks, 0, 3).len(), 1);
        assert_eq!(Mark::slice(&marks, 2, 3)[0].row_end, 1);
        assert!(Mark::slice(&marks, 3, 5).is_empty());
        let mut first = mark(0, 0, 1, 0, 40);
        first.start = None;
        assert_eq!(Mark::slice(&[first], 0, 2).len(), 1);
    }

    /// Without a known start, the part before the cut gets no position for that read.
    #[test]
    fn slice_without_start_keeps_nothing_partial() {
        let mut m = mark(0, 4, 1, 0, 40);
        m.start = None;
        assert!(Mark::slice(&[m.clone()], 0, 2).is_empty());
        assert_eq!(Mark::slice(&[m], 2, 4).len(), 1);
    }
}
