//! The write-ahead log of the active segment.
//!
//! VAST kept the active segment only in memory, so a crash lost up to a whole segment. weir
//! records every batch in this log before the store's `append` returns (= before the batch is
//! acknowledged); on the next open the log is replayed into the active segment.
//!
//! This layer builds on `crate::fs` and [`crate::segment`] only; the store above it decides
//! when logs are created, replayed and replaced.
//!
//! The store writes each batch's rows once: into the active segment's file (see
//! [`crate::segment::SegmentBuilder::add_located`]), and the record *points at them* (the
//! external flag) instead of holding a copy. A record can also hold its rows itself, as
//! [`Wal::append`] writes.
//!
//! # Format
//!
//! ```text
//! header (20 bytes):  magic "WEIRWAL4" (8) | base_id u64 LE (8) | CRC-32 of the previous 16 bytes (4)
//! record:             payload_len u32 LE | CRC-32 of payload u32 LE | payload
//! payload:            first_id u64 | rows u32 | flags u8 | ts_min i64 | ts_max i64
//!                     | schema name (u32 length + UTF-8) | field count u32
//!                     | per field: name (u32 length + UTF-8), type (u32 length + UTF-8, e.g. "vector[string]")
//!                     | data_len u32 | row offsets (rows × u32, relative to data)
//!                     | flags bit 3 set:   checkpoint count u32 | per checkpoint: dev u64 | inode u64
//!                                          | fingerprint length u32 | fingerprint CRC-32 u32
//!                                          | offset u64 | skip u64 | done u8
//!                                          | flags bit 4 set: raw u64 (compressed length)
//!                                          | path (u32 length + UTF-8)
//!                                          | count bit 31 set: header (u32 length + UTF-8)
//!                                          | count bit 30 set: sum present u8 (0 or 1) | sum u32
//!                     | flags bit 1 clear: data (data_len bytes of msgpack rows)
//!                     | flags bit 1 set:   segment UUID (16) | from_end u64 | CRC-32 of the rows u32
//!                       and with bit 2:    codec u8 | stored_len u32 | raw_size u32
//! payload, bit 5 set: first_id u64 | rows u32 (of the whole group) | flags u8 (bit 5 only)
//!                     | batch count u32 (at least 2)
//!                     | per batch: payload_len u32 | a payload as above (bit 5 clear)
//! flags:              bit 0: ts_min/ts_max present; bit 1: rows in the segment file;
//!                     bit 2: compressed there (only with bit 1); bit 3: checkpoints of followed files;
//!                     bit 4 (only with bit 3): each checkpoint holds `raw`;
//!                     bit 5: a group of batches
//! ```
//!
//! Bit 5 (since the batcher regroups a window of input by schema, issue 57; logs of version 4,
//! magic "WEIRWAL4"): the record is a *group*, batches that are committed together or not at
//! all ([`Wal::append_group`], `crate::store::Store::append_group`): a window of interleaved
//! input (Suricata EVE's event types, Zeek JSON's `_path`s) is cut into one batch per schema,
//! and no line-order position describes some of those batches without the others, so the
//! window's checkpoints (on its last batch, or spread over several) hold only for all of
//! them. The group's batches are contiguous in event IDs (the first at the record's
//! `first_id`, each next where the previous ended, `rows` in all), each encoded as the
//! payload of a record of its own (flags bits 0 to 4 as above, bit 5 clear), and covered by
//! the one length and checksum of the record: a torn or damaged group is one torn or damaged
//! record, dropped or reported whole. A reader returns the batches of a group one by one
//! ([`WalReader::next_entry`]), but only once all of them are read and checked (rows of
//! every batch pointing into a segment file readable). A group of one batch is written as
//! that batch's plain record. Logs of versions 1 to 3 read as before and are upgraded to
//! version 4 in place when a writer opens them to append; a weir of version 3 refuses a log
//! of version 4 as a whole.
//!
//! Bit 3 (since `weir import --follow`; segments of format 8 store their full set of
//! checkpoints in the same encoding, see [`encode_checkpoints`]): the record also holds, for each followed file whose
//! lines are among its rows, the file's identity and its position after the record's last row
//! of it ([`crate::checkpoint::FileCheckpoint`]). A record with bit 3 may hold no rows
//! (`rows` 0, `data_len` 0, its `first_id` the next ID): it only moves checkpoints, e.g. marks
//! a rotated file as read to its end; [`WalReader::next_record`] skips it. Rows and positions are in one record, written
//! with one `write` and one checksum, so they are committed together or not at all. Logs
//! without bit 3 (written before) replay as before; a weir that predates bit 3 refuses such
//! a record as damaged.
//!
//! Bit 4 (since checkpoints record a compressed file's `raw` length,
//! [`crate::checkpoint::FileCheckpoint::raw`]): written with every record that has bit 3.
//! Records without it read with `raw` 0, as before.
//!
//! Bit 31 of the checkpoint count (since followed files keep their Zeek header across
//! copy-and-truncate, [`crate::checkpoint::FileCheckpoint::header`]): each checkpoint ends
//! with its header block; written with every non-empty list, in records and in segments'
//! checkpoints alike. A
//! count without it (written before) reads with empty headers; a weir that predates it
//! refuses the count as too large (damaged) rather than misread it. Logs that may hold such
//! records are of version 2 (magic "WEIRWAL2"): a log of version 1 ("WEIRWAL1", written
//! before) is read as before, and its header is rewritten to version 2 when a writer opens
//! it to append ([`Wal::open_append`]), so that a weir of version 1 refuses the whole log
//! instead of cutting a last record it cannot read as a torn tail.
//!
//! Bit 30 of the checkpoint count (since a checkpoint records a checksum of its file's text
//! before its position, [`crate::checkpoint::FileCheckpoint::sum`], so that a resume notices
//! a file rewritten with the same start): each checkpoint ends, after its header, with a
//! byte saying whether it has a sum (1) or not (0) and the sum (0 when it has none); written
//! with every non-empty list, in records and segments' checkpoints alike. A count without it
//! (written before) reads without sums. Logs that may hold such records are of version 3
//! (magic "WEIRWAL3"); logs of versions 1 and 2 read as before and are upgraded to version 3
//! in place when a writer opens them to append, as version 1 was to version 2.
//!
//! With bit 1, the rows are the `data_len` bytes that start `from_end` bytes before the end of
//! the segment's file: `segments/.<uuid>.seg.tmp` while it is built, `segments/<uuid>.seg` once
//! sealed (sealing cuts the unused start off the file or copies it out, and both keep the end).
//! With bit 2 as well, what is there is the batch as the segment stores it compressed (see
//! `crate::segment`'s codecs): `stored_len` bytes, which the CRC covers, inflating with the
//! codec (its byte in `schemas/segment.fbs`) to `raw_size` bytes: the rows' lengths and the
//! rows (codecs 1 and 2), or, for a batch stored in columns (codecs 3 and 4, since segment
//! format 4), the columns behind their header, rebuilt into the `raw_size` bytes of rows
//! (`crate::segment`'s `columns.rs`).
//! All integers are little-endian; CRC-32 is IEEE (crc32fast).
//!
//! # Invariants
//!
//! - `base_id` is the first event ID the log was created for: the catalog's `next_id` when the
//!   previous segment was sealed. Records are contiguous: the first starts at `base_id`, each
//!   next one where the previous ended. A record describes exactly one batch of the active
//!   segment (batches split across segments are logged per part), or a group of batches all
//!   in the active segment: the writer never seals a segment between the batches of a group
//!   (it seals before a group that does not fit; see `crate::store::Store::append_group` for
//!   a group larger than a whole segment). Replaying a log into a segment of a smaller
//!   maximum size may seal between them; the log is kept then, and the group's batches below
//!   the catalog's end are skipped one by one, as whole records are.
//! - The log is created atomically (`crate::fs::write_atomic`) when a segment is sealed,
//!   *after* the catalog naming that segment is durable. A crash between the two leaves a log whose records are already in a sealed segment; they are recognized
//!   by their IDs (below the catalog's `next_id`) and skipped, so nothing is duplicated.
//! - A record is written with one `write` call before the append is acknowledged, and after
//!   the rows it points at were written to the segment file. A process crash (`kill -9`)
//!   therefore never loses an acknowledged record: record and rows are in the page cache.
//!   Durability against power loss depends on [`SyncPolicy`]; a flush fsyncs the segment file
//!   before the log.
//! - The segment files that records point into stay until the log no longer points into them:
//!   the writer removes the files of an earlier life at the first seal after replaying them.
//! - Only a torn *last* record may be dropped. A record is damaged if its length is out of
//!   range or runs past the end of the file, its checksum fails, its payload does not decode,
//!   or (pointing into a segment file) its rows are missing or do not match their CRC. A
//!   damaged record is a *torn tail* (an interrupted, unacknowledged write; or, after a power
//!   loss, records written since the last flush that outlived their rows, which were not
//!   acknowledged as durable either) if no *intact* record follows it: it and everything after
//!   it is discarded with a warning, and the writer cuts it off. If an intact record follows
//!   (found by scanning forward byte by byte from just after the damaged record's start, or,
//!   for rows that do not match, from its end; intact = plausible header, matching checksum, a
//!   payload that decodes, and readable rows), the log is *damaged*: an error naming the file
//!   and the offsets of both records. The writer then refuses to open and changes nothing
//!   (the log is never truncated past an intact record); `weir verify` reports it. A length
//!   field damaged into a large value therefore does not hide the records after it, and
//!   neither does a bit flipped in the rows of a middle record.
//! - Readers of the archive (`crate::store::Archive`) never fail on the log: at damage (or a
//!   header that does not decode, an empty file) they stop reading it and warn
//!   (`Archive::wal_warnings`), having read the sealed segments and the records before it.
//! - `weir verify --repair` (`crate::store`'s `wal_repair.rs`) is the only thing that cuts
//!   a damaged log: it reads on past the damage ([`WalReader::resync`]; a damaged header
//!   with [`WalReader::open_headless`]), seals every intact record into segments, copies the
//!   log into `damaged/` and only then replaces it with an empty one.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, IoSlice, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::batch::Batch;
use crate::checkpoint::{FileCheckpoint, FileId, Mark, Position};
use crate::fs::fault::{self, Op};
use crate::fs::{self, FsError, Writeback};
use crate::segment::{from_stored_byte, stored_byte, DataLocation, Packed};
use crate::setting::{Choice, ChoiceName};
use crate::types::{Field, Schema, SchemaRef, Type};

pub use crate::fs::WRITEBACK_BYTES;

/// An error of the write-ahead log. Every variant names the file (and offset) concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WalError {
    /// An I/O operation on the log failed.
    #[error(transparent)]
    Io(#[from] FsError),
    /// A record in the middle of the log (not a torn last record) is damaged, or the log does
    /// not follow the catalog.
    #[error("corrupt write-ahead log {} at offset {offset}: {reason}", path.display())]
    Corrupt {
        /// The WAL file.
        path: PathBuf,
        /// Byte offset of the damaged record (0 for the header).
        offset: u64,
        /// What is wrong.
        reason: String,
    },
}

impl WalError {
    /// An I/O error while doing `action` on `path`.
    pub fn io(action: impl Into<String>, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        WalError::Io(FsError::new(action, path, source))
    }

    /// Whether this error is about damaged data (as opposed to I/O).
    pub fn is_corruption(&self) -> bool {
        matches!(self, WalError::Corrupt { .. })
    }
}

/// Shorthand for results of the write-ahead log.
pub type Result<T, E = WalError> = std::result::Result<T, E>;

/// Record flag: the batch has a `ts` range.
const FLAG_TS: u8 = 1;
/// Record flag: the rows are not in the record but in the active segment's file.
const FLAG_EXTERNAL: u8 = 2;
/// Record flag (with [`FLAG_EXTERNAL`]): the rows are stored compressed there.
const FLAG_PACKED: u8 = 4;
/// Record flag: checkpoints of followed files follow the row offsets.
const FLAG_MARKS: u8 = 8;
/// Record flag (with [`FLAG_MARKS`]): each checkpoint holds its compressed length (`raw`).
const FLAG_RAW: u8 = 16;
/// Record flag: the record is a group of batches committed together (see the module docs).
const FLAG_GROUP: u8 = 32;
/// Every flag a record may have.
const KNOWN_FLAGS: u8 = FLAG_TS | FLAG_EXTERNAL | FLAG_PACKED | FLAG_MARKS | FLAG_RAW | FLAG_GROUP;

/// The magic bytes at the start of every WAL file weir writes: version 4, whose records may
/// be groups of batches (flag bit 5) and hold checkpoint counts with bits 31 (headers of
/// followed files) and 30 (sums of the text before each position).
pub const WAL_MAGIC: [u8; 8] = *b"WEIRWAL4";
/// The magic bytes of a WAL of version 3 (before groups, flag bit 5): still read, and
/// upgraded to [`WAL_MAGIC`] in place before anything is appended to it.
pub const WAL_MAGIC_V3: [u8; 8] = *b"WEIRWAL3";
/// The magic bytes of a WAL of version 2 (before bit 30 of the checkpoint count): still read,
/// and upgraded to [`WAL_MAGIC`] in place before anything is appended to it.
pub const WAL_MAGIC_V2: [u8; 8] = *b"WEIRWAL2";
/// The magic bytes of a WAL of version 1 (before bit 31 of the checkpoint count): still read,
/// and upgraded to [`WAL_MAGIC`] in place before anything is appended to it.
pub const WAL_MAGIC_V1: [u8; 8] = *b"WEIRWAL1";
/// Size of the WAL file header.
pub const WAL_HEADER_LEN: u64 = 20;
const RECORD_HEADER_LEN: u64 = 8;
/// The smallest possible payload (fixed fields, empty schema, no rows).
const MIN_PAYLOAD: u64 = 8 + 4 + 1 + 8 + 8 + 4 + 4 + 4;
/// Largest payload accepted: a batch never exceeds a segment, which is below 2 GiB.
const MAX_PAYLOAD: u64 = 1 << 31;

/// When the WAL (and sealed segments) are fsynced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncPolicy {
    /// Fsync the WAL (after the segment rows its record points at) before every append
    /// returns: an acknowledged batch survives a process crash and an OS crash or power loss.
    /// Slowest.
    Always,
    /// The default. Every append is written to the WAL (one `write`) before it returns, so an
    /// acknowledged batch survives a process crash (`kill -9`); the WAL (after the rows of the
    /// segment file its records point at) is fsynced on the store's `flush` and at close, so
    /// after an OS crash or power loss at most the batches since the last flush are lost. A
    /// segment seal does not fsync the WAL: the sealed segment, which holds all of its
    /// records, is fsynced, and the log is replaced by a new one written atomically. Sealed
    /// segments, the catalog and each new log are always fsynced.
    #[default]
    Batch,
    /// Never fsync (neither WAL, segments nor catalog): still safe against a process crash,
    /// but an OS crash or power loss may lose or tear recent data. For benchmarks and
    /// throwaway imports.
    Never,
}

impl SyncPolicy {
    /// Whether sealed segments, the catalog and directories are fsynced.
    pub fn sync_segments(self) -> bool {
        self != SyncPolicy::Never
    }
}

impl Choice for SyncPolicy {
    const WHAT: &'static str = "--sync";
    const CHOICES: &'static [ChoiceName<SyncPolicy>] = &[
        ChoiceName::new("always", SyncPolicy::Always, "fsync the WAL before each batch is acknowledged: survives power loss; slowest"),
        ChoiceName::new("batch", SyncPolicy::Batch, "write each batch to the WAL before acknowledging it (survives kill -9); fsync at every flush and seal (the default)"),
        ChoiceName::new("never", SyncPolicy::Never, "never fsync: survives kill -9, not an OS crash or power loss"),
    ];
}

crate::choice!(SyncPolicy);

/// A discarded torn last record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// The WAL file.
    pub path: PathBuf,
    /// Offset of the torn record.
    pub offset: u64,
    /// Bytes discarded (from `offset` to the end of the file).
    pub bytes: u64,
    /// Why the record is incomplete.
    pub reason: String,
}

impl std::fmt::Display for TornTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "write-ahead log {}: discarded a torn last record at offset {} ({} bytes): {}",
            self.path.display(),
            self.offset,
            self.bytes,
            self.reason
        )
    }
}

fn header_bytes(base_id: u64) -> [u8; WAL_HEADER_LEN as usize] {
    header_bytes_of(WAL_MAGIC, base_id)
}

/// The header of a WAL of version `magic` that starts at `base_id`.
fn header_bytes_of(magic: [u8; 8], base_id: u64) -> [u8; WAL_HEADER_LEN as usize] {
    let mut h = [0u8; WAL_HEADER_LEN as usize];
    h[..8].copy_from_slice(&magic);
    h[8..16].copy_from_slice(&base_id.to_le_bytes());
    let crc = crc32fast::hash(&h[..16]);
    h[16..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// The appending side of the WAL.
#[derive(Debug)]
pub struct Wal {
    path: PathBuf,
    file: File,
    base_id: u64,
    len: u64,
    policy: SyncPolicy,
    buf: Vec<u8>,
    dirty: bool,
    /// Background writeback under [`SyncPolicy::Batch`] (see [`crate::fs::WRITEBACK_BYTES`]).
    writeback: Writeback,
}

impl Wal {
    /// Creates (or atomically replaces) the WAL at `path` with no records, starting at
    /// `base_id`.
    pub fn create(path: &Path, base_id: u64, policy: SyncPolicy) -> Result<Wal> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "wal".into());
        fs::write_atomic(dir, &name, &header_bytes(base_id), policy.sync_segments())?;
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| WalError::io("open", path, e))?;
        Ok(Wal::appending(path, file, base_id, WAL_HEADER_LEN, policy))
    }

    /// A log appending to `file` (at `path`), positioned at its end `len`.
    fn appending(path: &Path, file: File, base_id: u64, len: u64, policy: SyncPolicy) -> Wal {
        Wal {
            path: path.to_path_buf(),
            file,
            base_id,
            len,
            policy,
            buf: Vec::new(),
            dirty: false,
            writeback: Writeback::dropping_cache(),
        }
    }

    /// Opens an existing WAL for appending after its last good record, cutting off anything
    /// beyond `good_len` (a torn tail found by [`WalReader`]).
    pub fn open_append(
        path: &Path,
        base_id: u64,
        good_len: u64,
        policy: SyncPolicy,
    ) -> Result<Wal> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| WalError::io("open", path, e))?;
        let len = file
            .metadata()
            .map_err(|e| WalError::io("stat", path, e))?
            .len();
        if len != good_len {
            fault::hit(Op::Allocate)
                .and_then(|()| file.set_len(good_len))
                .map_err(|e| WalError::io("truncate", path, e))?;
            if policy.sync_segments() {
                fault::hit(Op::Sync)
                    .and_then(|()| file.sync_all())
                    .map_err(|e| WalError::io("fsync", path, e))?;
            }
        }
        // A log of version 1, 2 or 3 becomes one of version 4 before a record of version 4
        // joins it: an older weir then refuses it as a whole rather than take a new record for
        // a torn tail. The header is one write of 20 bytes within the first sector; a torn one
        // fails its checksum, and `weir verify --repair` reads the records around it.
        let mut magic = [0u8; 8];
        if good_len >= WAL_HEADER_LEN {
            fs::read_exact_at(&file, &mut magic, 0).map_err(|e| WalError::io("read", path, e))?;
        }
        if magic == WAL_MAGIC_V1 || magic == WAL_MAGIC_V2 || magic == WAL_MAGIC_V3 {
            fault::hit(Op::Write)
                .and_then(|()| fs::write_all_at(&file, &header_bytes(base_id), 0))
                .map_err(|e| WalError::io("write", path, e))?;
            if policy.sync_segments() {
                fault::hit(Op::Sync)
                    .and_then(|()| file.sync_all())
                    .map_err(|e| WalError::io("fsync", path, e))?;
            }
        }
        let mut file = file;
        file.seek(SeekFrom::Start(good_len))
            .map_err(|e| WalError::io("seek", path, e))?;
        Ok(Wal::appending(path, file, base_id, good_len, policy))
    }

    /// The WAL file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The first event ID this log was created for.
    pub fn base_id(&self) -> u64 {
        self.base_id
    }

    /// Bytes in the file (header and records).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the log has no record.
    pub fn is_empty(&self) -> bool {
        self.len <= WAL_HEADER_LEN
    }

    /// Appends one batch (with its ID set) as a record, in a single `write`, and fsyncs it
    /// under [`SyncPolicy::Always`].
    pub fn append(&mut self, batch: &Batch) -> Result<()> {
        self.append_with_crc(batch, crc32fast::hash(batch.data()))
    }

    /// [`Wal::append`] with the CRC-32 of `batch.data()` already computed.
    pub fn append_with_crc(&mut self, batch: &Batch, data_crc: u32) -> Result<()> {
        self.buf.clear();
        self.buf
            .extend_from_slice(&[0u8; RECORD_HEADER_LEN as usize]);
        encode_payload_head(batch, 0, &mut self.buf);
        let data = batch.data();
        let payload_len = self.buf.len() - RECORD_HEADER_LEN as usize + data.len();
        let mut crc = crc32fast::Hasher::new();
        crc.update(&self.buf[RECORD_HEADER_LEN as usize..]);
        crc.combine(&crc32fast::Hasher::new_with_initial_len(
            data_crc,
            data.len() as u64,
        ));
        self.buf[..4].copy_from_slice(&(payload_len as u32).to_le_bytes());
        self.buf[4..8].copy_from_slice(&crc.finalize().to_le_bytes());
        // Header, metadata and offsets from the buffer, rows straight from the batch: one
        // vectored write, normally one system call.
        let mut parts = [IoSlice::new(&self.buf), IoSlice::new(data)];
        let mut slices = &mut parts[..];
        fault::hit(Op::Write).map_err(|e| WalError::io("append to", &self.path, e))?;
        while !slices.is_empty() {
            match self.file.write_vectored(slices) {
                Ok(0) => {
                    return Err(WalError::io(
                        "append to",
                        &self.path,
                        std::io::ErrorKind::WriteZero.into(),
                    ))
                }
                Ok(n) => IoSlice::advance_slices(&mut slices, n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(WalError::io("append to", &self.path, e)),
            }
        }
        let written = (self.buf.len() + data.len()) as u64;
        if self.buf.capacity() > 16 << 20 {
            self.buf = Vec::new();
        }
        self.appended(written)
    }

    /// Bookkeeping after a record of `written` bytes: length, and the sync policy.
    fn appended(&mut self, written: u64) -> Result<()> {
        self.len += written;
        self.dirty = true;
        match self.policy {
            SyncPolicy::Always => self.sync(),
            SyncPolicy::Batch => {
                self.writeback.appended(written, &self.file);
                Ok(())
            }
            SyncPolicy::Never => Ok(()),
        }
    }

    /// Appends one batch (with its ID set) whose rows were written to the active segment's file
    /// at `location` first: the record holds everything but the rows, and points at them (so
    /// the rows are written once). Fsyncs it under [`SyncPolicy::Always`]; the caller makes the
    /// segment file durable before that. `rows_crc` is the CRC-32 of `batch.data()` if the
    /// caller has it: a record of rows stored as they are holds it (computed here if `None`),
    /// one of compressed rows holds their stored bytes' CRC from `location` instead.
    pub fn append_external(
        &mut self,
        batch: &Batch,
        rows_crc: Option<u32>,
        location: DataLocation,
    ) -> Result<()> {
        self.buf.clear();
        self.buf
            .extend_from_slice(&[0u8; RECORD_HEADER_LEN as usize]);
        encode_external(batch, rows_crc, location, &mut self.buf);
        self.write_buffered_record()
    }

    /// Appends a *group*: batches (with their IDs set, contiguous) that are committed together
    /// or not at all, as one record with one checksum and one `write` (flag bit 5, see the
    /// module docs). Each part's rows are either in the record or, written to the active
    /// segment's file first, pointed at (as [`Wal::append_external`]). A group of one batch is
    /// written as the plain record of that batch. Fsyncs it under [`SyncPolicy::Always`].
    pub fn append_group(&mut self, parts: &[GroupPart<'_>]) -> Result<()> {
        let (first, rows) = match parts {
            [] => return Ok(()),
            [one] => {
                return match one.location {
                    Some(location) => self.append_external(one.batch, one.rows_crc, location),
                    None => {
                        let crc = one
                            .rows_crc
                            .unwrap_or_else(|| crc32fast::hash(one.batch.data()));
                        self.append_with_crc(one.batch, crc)
                    }
                };
            }
            [first, ..] => (
                first.batch.id(),
                parts.iter().map(|p| p.batch.len() as u64).sum::<u64>(),
            ),
        };
        let rows = u32::try_from(rows).map_err(|_| WalError::Corrupt {
            path: self.path.clone(),
            offset: self.len,
            reason: format!("a group of {rows} events is too large for one record"),
        })?;
        self.buf.clear();
        self.buf
            .extend_from_slice(&[0u8; RECORD_HEADER_LEN as usize]);
        self.buf.extend_from_slice(&first.to_le_bytes());
        self.buf.extend_from_slice(&rows.to_le_bytes());
        self.buf.push(FLAG_GROUP);
        self.buf
            .extend_from_slice(&(parts.len() as u32).to_le_bytes());
        for part in parts {
            let at = self.buf.len();
            self.buf.extend_from_slice(&[0u8; 4]);
            match part.location {
                Some(location) => {
                    encode_external(part.batch, part.rows_crc, location, &mut self.buf)
                }
                None => {
                    encode_payload_head(part.batch, 0, &mut self.buf);
                    self.buf.extend_from_slice(part.batch.data());
                }
            }
            let len = (self.buf.len() - at - 4) as u32;
            self.buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
        }
        if self.buf.len() as u64 - RECORD_HEADER_LEN > MAX_PAYLOAD {
            return Err(WalError::Corrupt {
                path: self.path.clone(),
                offset: self.len,
                reason: format!(
                    "a group record of {} bytes is larger than a record may be",
                    self.buf.len()
                ),
            });
        }
        self.write_buffered_record()
    }

    /// Fills in the record header of the record in `buf` (length and checksum of the payload
    /// after it) and appends it with one `write`.
    fn write_buffered_record(&mut self) -> Result<()> {
        let payload_len = self.buf.len() - RECORD_HEADER_LEN as usize;
        let crc = crc32fast::hash(&self.buf[RECORD_HEADER_LEN as usize..]);
        self.buf[..4].copy_from_slice(&(payload_len as u32).to_le_bytes());
        self.buf[4..8].copy_from_slice(&crc.to_le_bytes());
        fault::hit(Op::Write)
            .and_then(|()| self.file.write_all(&self.buf))
            .map_err(|e| WalError::io("append to", &self.path, e))?;
        let written = self.buf.len() as u64;
        if self.buf.capacity() > 16 << 20 {
            self.buf = Vec::new();
        }
        self.appended(written)
    }

    /// Makes the appended records durable (fdatasync), unless the policy is
    /// [`SyncPolicy::Never`].
    pub fn sync(&mut self) -> Result<()> {
        self.writeback
            .finish()
            .map_err(|e| WalError::io("fsync", &self.path, e))?;
        if self.dirty && self.policy != SyncPolicy::Never {
            fault::hit(Op::Sync)
                .and_then(|()| self.file.sync_data())
                .map_err(|e| WalError::io("fsync", &self.path, e))?;
        }
        self.dirty = false;
        Ok(())
    }
}

/// One batch of a group record ([`Wal::append_group`]).
#[derive(Debug, Clone, Copy)]
pub struct GroupPart<'a> {
    /// The batch, its ID set.
    pub batch: &'a Batch,
    /// The CRC-32 of `batch.data()` if known (see [`Wal::append_external`]).
    pub rows_crc: Option<u32>,
    /// Where its rows were written in the active segment's file; `None`: the record holds them.
    pub location: Option<DataLocation>,
}

/// The payload of a record whose rows are at `location` (see [`Wal::append_external`]).
fn encode_external(
    batch: &Batch,
    rows_crc: Option<u32>,
    location: DataLocation,
    out: &mut Vec<u8>,
) {
    let flags = match location.packed {
        Some(_) => FLAG_EXTERNAL | FLAG_PACKED,
        None => FLAG_EXTERNAL,
    };
    encode_payload_head(batch, flags, out);
    out.extend_from_slice(location.segment.as_bytes());
    out.extend_from_slice(&location.from_end.to_le_bytes());
    match location.packed {
        Some(p) => {
            out.extend_from_slice(&p.crc.to_le_bytes());
            out.push(stored_byte(p.codec, p.layout));
            out.extend_from_slice(&p.stored_len.to_le_bytes());
            out.extend_from_slice(&p.raw_size.to_le_bytes());
        }
        None => {
            let crc = rows_crc.unwrap_or_else(|| crc32fast::hash(batch.data()));
            out.extend_from_slice(&crc.to_le_bytes());
        }
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Everything of the payload but the rows themselves (which follow it in the record, or are
/// pointed at with `FLAG_EXTERNAL`).
fn encode_payload_head(batch: &Batch, extra_flags: u8, out: &mut Vec<u8>) {
    out.reserve(256 + 4 * batch.len());
    out.extend_from_slice(&batch.id().to_le_bytes());
    out.extend_from_slice(&(batch.len() as u32).to_le_bytes());
    let (flags, (lo, hi)) = match batch.ts_range() {
        Some(r) => (FLAG_TS, r),
        None => (0u8, (0, 0)),
    };
    let marks = Mark::last_per_file(batch.marks());
    let mark_flag = if marks.is_empty() {
        0
    } else {
        FLAG_MARKS | FLAG_RAW
    };
    out.push(flags | extra_flags | mark_flag);
    out.extend_from_slice(&lo.to_le_bytes());
    out.extend_from_slice(&hi.to_le_bytes());
    let schema = batch.schema();
    put_str(out, &schema.name);
    out.extend_from_slice(&(schema.fields.len() as u32).to_le_bytes());
    for f in &schema.fields {
        put_str(out, &f.name);
        put_str(out, &f.ty.to_string());
    }
    out.extend_from_slice(&(batch.byte_size() as u32).to_le_bytes());
    for &o in batch.offsets() {
        out.extend_from_slice(&(o as u32).to_le_bytes());
    }
    if !marks.is_empty() {
        put_checkpoints(out, &marks);
    }
}

/// Appends the encoding of `list` (a count, then each checkpoint: the bytes of flag bits 3
/// and 4 in the module docs, `raw` included). Segments of format 8 store their checkpoints
/// the same way ([`crate::segment`]).
fn put_checkpoints(out: &mut Vec<u8>, list: &[FileCheckpoint]) {
    // An empty list is encoded as before (no checkpoint to hold a header or a sum).
    let flag = if list.is_empty() {
        0
    } else {
        CHECKPOINT_HEADERS | CHECKPOINT_SUMS
    };
    out.extend_from_slice(&(list.len() as u32 | flag).to_le_bytes());
    for m in list {
        out.extend_from_slice(&m.id.dev.to_le_bytes());
        out.extend_from_slice(&m.id.ino.to_le_bytes());
        out.extend_from_slice(&m.id.fp_len.to_le_bytes());
        out.extend_from_slice(&m.id.fp_crc.to_le_bytes());
        out.extend_from_slice(&m.pos.offset.to_le_bytes());
        out.extend_from_slice(&m.pos.skip.to_le_bytes());
        out.push(m.done as u8);
        out.extend_from_slice(&m.raw.to_le_bytes());
        put_str(out, &m.path);
        put_str(out, &m.header);
        out.push(m.sum.is_some() as u8);
        out.extend_from_slice(&m.sum.unwrap_or(0).to_le_bytes());
    }
}

/// Set in the count of an encoding of checkpoints whose each checkpoint ends with its header
/// (see the module docs).
const CHECKPOINT_HEADERS: u32 = 1 << 31;
/// Set in the count of an encoding of checkpoints whose each checkpoint ends with its sum
/// (see the module docs).
const CHECKPOINT_SUMS: u32 = 1 << 30;

/// The encoding of `list` as a record with flag bits 3 and 4 holds it (see the module docs).
pub fn encode_checkpoints(list: &[FileCheckpoint]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + list.iter().map(checkpoint_len).sum::<usize>());
    put_checkpoints(&mut out, list);
    out
}

/// The encoded length of one checkpoint (see [`encode_checkpoints`]).
pub fn checkpoint_len(c: &FileCheckpoint) -> usize {
    8 + 8 + 4 + 4 + 8 + 8 + 1 + 8 + 4 + c.path.len() + 4 + c.header.len() + 1 + 4
}

/// Decodes what [`encode_checkpoints`] wrote; every byte must be used.
pub fn decode_checkpoints(bytes: &[u8]) -> std::result::Result<Vec<FileCheckpoint>, String> {
    let mut c = Cursor { buf: bytes, pos: 0 };
    let list = decode_marks(&mut c, 0, true)?
        .into_iter()
        .map(|m| m.end)
        .collect();
    if c.pos != bytes.len() {
        return Err(format!(
            "{} bytes after the checkpoints",
            bytes.len() - c.pos
        ));
    }
    Ok(list)
}

/// The checkpoints of a record with [`FLAG_MARKS`], as marks after its last row.
fn decode_marks(
    c: &mut Cursor<'_>,
    rows: usize,
    with_raw: bool,
) -> std::result::Result<Vec<Mark>, String> {
    let count = c.u32()?;
    let headers = count & CHECKPOINT_HEADERS != 0;
    let sums = count & CHECKPOINT_SUMS != 0;
    let n = (count & !(CHECKPOINT_HEADERS | CHECKPOINT_SUMS)) as usize;
    if n > c.buf.len() {
        return Err(format!("{n} checkpoints cannot fit in the record"));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let id = FileId {
            dev: c.u64()?,
            ino: c.u64()?,
            fp_len: c.u32()?,
            fp_crc: c.u32()?,
        };
        let pos = Position {
            offset: c.u64()?,
            skip: c.u64()?,
        };
        let done = match c.u8()? {
            0 => false,
            1 => true,
            d => return Err(format!("checkpoint done flag {d}")),
        };
        let raw = if with_raw { c.u64()? } else { 0 };
        let path = c.str()?.to_string();
        let header = if headers {
            c.str()?.to_string()
        } else {
            String::new()
        };
        let sum = match (sums, if sums { c.u8()? } else { 0 }) {
            (false, _) => None,
            (true, 0) => {
                c.u32()?;
                None
            }
            (true, 1) => Some(c.u32()?),
            (true, d) => return Err(format!("checkpoint sum flag {d}")),
        };
        out.push(Mark {
            row_start: rows,
            row_end: rows,
            start: None,
            end: FileCheckpoint {
                id,
                path,
                pos,
                done,
                raw,
                header,
                sum,
            },
        });
    }
    Ok(out)
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| format!("payload ends early (needs {n} bytes at {})", self.pos))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> std::result::Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> std::result::Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> std::result::Result<u64, String> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    fn str(&mut self) -> std::result::Result<&'a str, String> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).map_err(|_| "string is not UTF-8".to_string())
    }
}

/// A decoded record whose rows are in a segment file, still to be read.
struct External {
    schema: SchemaRef,
    first_id: u64,
    offsets: Vec<usize>,
    ts: Option<(i64, i64)>,
    data_len: usize,
    location: DataLocation,
    data_crc: u32,
    marks: Vec<Mark>,
}

/// A decoded record: a whole batch, one whose rows are in a segment file, or a group of them.
enum Decoded {
    Inline(Batch),
    External(External),
    Group(Vec<Decoded>),
}

impl Decoded {
    /// The first event ID and the number of events.
    fn ids(&self) -> (u64, usize) {
        match self {
            Decoded::Inline(b) => (b.id(), b.len()),
            Decoded::External(x) => (x.first_id, x.offsets.len()),
            Decoded::Group(parts) => (
                parts.first().map_or(0, |p| p.ids().0),
                parts.iter().map(|p| p.ids().1).sum(),
            ),
        }
    }
}

fn decode_payload(
    payload: &[u8],
    last: &mut Option<SchemaRef>,
) -> std::result::Result<Decoded, String> {
    let mut c = Cursor {
        buf: payload,
        pos: 0,
    };
    let first_id = c.u64()?;
    let rows = c.u32()? as usize;
    let flags = c.u8()?;
    if flags & FLAG_GROUP != 0 {
        return decode_group(&mut c, first_id, rows, flags, last);
    }
    let lo = c.u64()? as i64;
    let hi = c.u64()? as i64;
    let name = c.str()?;
    let nfields = c.u32()? as usize;
    if nfields > payload.len() {
        return Err(format!("{nfields} fields cannot fit in the record"));
    }
    let mut fields = Vec::with_capacity(nfields);
    for _ in 0..nfields {
        let fname = c.str()?;
        let ty = c.str()?;
        let ty = Type::parse(ty).ok_or_else(|| format!("field {fname}: unknown type {ty:?}"))?;
        fields.push(Field::new(fname, ty));
    }
    let schema = Schema::new(name, fields);
    let schema = match last {
        Some(s) if **s == schema => s.clone(),
        _ => {
            let s = Arc::new(schema);
            *last = Some(s.clone());
            s
        }
    };
    first_id
        .checked_add(rows as u64)
        .ok_or_else(|| format!("event IDs {first_id}.. plus {rows} rows overflow"))?;
    let data_len = c.u32()? as usize;
    let offsets_bytes = c.take(rows.checked_mul(4).ok_or("row count overflows")?)?;
    let offsets: Vec<usize> = offsets_bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .collect();
    let marks = if flags & FLAG_MARKS != 0 {
        decode_marks(&mut c, rows, flags & FLAG_RAW != 0)?
    } else {
        Vec::new()
    };
    let external = flags & FLAG_EXTERNAL != 0;
    if flags & FLAG_PACKED != 0 && !external {
        return Err("compressed rows outside a segment file".into());
    }
    let data = if external {
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(c.take(16)?);
        let from_end = c.u64()?;
        let data_crc = c.u32()?;
        let packed = if flags & FLAG_PACKED != 0 {
            let b = c.u8()?;
            let (codec, layout) =
                from_stored_byte(b).ok_or_else(|| format!("unknown codec {b}"))?;
            let stored_len = c.u32()?;
            let raw_size = c.u32()?;
            Some(Packed {
                codec,
                layout,
                stored_len,
                raw_size,
                crc: data_crc,
            })
        } else {
            None
        };
        Err((uuid::Uuid::from_bytes(uuid), from_end, data_crc, packed))
    } else {
        Ok(c.take(data_len)?)
    };
    if c.pos != payload.len() {
        return Err(format!(
            "{} unexpected bytes after the rows",
            payload.len() - c.pos
        ));
    }
    if rows == 0 && marks.is_empty() {
        return Err("record holds no rows".into());
    }
    let ts = (flags & FLAG_TS != 0).then_some((lo, hi));
    match data {
        Ok(data) => {
            let mut batch = Batch::from_parts(schema, data.to_vec(), offsets, ts)
                .ok_or("row offsets are not increasing within the data")?;
            batch.set_id(first_id);
            batch.set_marks(marks);
            Ok(Decoded::Inline(batch))
        }
        Err((segment, from_end, data_crc, packed)) => Ok(Decoded::External(External {
            schema,
            first_id,
            offsets,
            ts,
            data_len,
            location: DataLocation {
                segment,
                from_end,
                packed,
            },
            data_crc,
            marks,
        })),
    }
}

/// The rest of a group record's payload (flag bit 5): its batches, each a payload of its own,
/// contiguous from `first_id` and `rows` events in all.
fn decode_group(
    c: &mut Cursor<'_>,
    first_id: u64,
    rows: usize,
    flags: u8,
    last: &mut Option<SchemaRef>,
) -> std::result::Result<Decoded, String> {
    if flags != FLAG_GROUP {
        return Err(format!("group record with other flags {flags:#x}"));
    }
    let count = c.u32()? as usize;
    if count < 2 {
        return Err(format!("group record of {count} batches"));
    }
    if count > c.buf.len() {
        return Err(format!("{count} batches cannot fit in the record"));
    }
    let mut parts = Vec::with_capacity(count);
    let mut next = first_id;
    for i in 0..count {
        let len = c.u32()? as usize;
        let bytes = c.take(len)?;
        if bytes.get(12).is_some_and(|f| f & FLAG_GROUP != 0) {
            return Err(format!("batch {i} of a group is a group"));
        }
        let part = decode_payload(bytes, last)?;
        let (id, n) = part.ids();
        if id != next {
            return Err(format!(
                "batch {i} of the group starts at event ID {id}, expected {next}"
            ));
        }
        next = id
            .checked_add(n as u64)
            .ok_or_else(|| format!("event IDs {id}.. plus {n} rows overflow"))?;
        parts.push(part);
    }
    if c.pos != c.buf.len() {
        return Err(format!(
            "{} unexpected bytes after the group",
            c.buf.len() - c.pos
        ));
    }
    if next - first_id != rows as u64 {
        return Err(format!(
            "the group says {rows} events, its batches hold {}",
            next - first_id
        ));
    }
    Ok(Decoded::Group(parts))
}

/// Reads the `len` bytes of rows of a batch of `rows` rows at `location` from the segment file
/// in `dir` (the temporary file while the segment is built, the sealed file after), checking
/// their CRC (of the stored bytes) and decompressing them if they are stored compressed. A
/// seal that collapses the file between the size check and the read is retried. `Err` says
/// why the rows are not there.
fn read_external(
    dir: &Path,
    location: DataLocation,
    len: usize,
    rows: usize,
    crc: u32,
) -> std::result::Result<Vec<u8>, String> {
    let Some(p) = location.packed else {
        return read_stored(dir, location, len, crc);
    };
    let stored = read_stored(dir, location, p.stored_len as usize, crc)?;
    let (data, data_len) =
        crate::segment::unpack(p.codec, p.layout, &stored, p.raw_size as usize, rows)?;
    if data_len != len {
        return Err(format!(
            "its rows inflate to {data_len} bytes, the record says {len}"
        ));
    }
    Ok(data[..len].to_vec())
}

/// Reads `len` stored bytes at `location` and checks their CRC (see [`read_external`]).
fn read_stored(
    dir: &Path,
    location: DataLocation,
    len: usize,
    crc: u32,
) -> std::result::Result<Vec<u8>, String> {
    let name = crate::segment::file_name(&location.segment);
    let mut why = String::new();
    for _ in 0..3 {
        let file = [format!(".{name}.tmp"), name.clone()]
            .iter()
            .find_map(|n| File::open(dir.join(n)).ok().map(|f| (f, dir.join(n))));
        let Some((file, path)) = file else {
            return Err(format!("its segment file {name} is missing"));
        };
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        // The rows must lie within the file (checked before allocating for them).
        let at = size
            .checked_sub(location.from_end)
            .filter(|&at| at.checked_add(len as u64).is_some_and(|end| end <= size));
        let Some(at) = at else {
            why = format!("{} is too short for its rows", path.display());
            continue;
        };
        let mut data = vec![0u8; len];
        if fs::read_exact_at(&file, &mut data, at).is_err() {
            why = format!("{} is too short for its rows", path.display());
            continue;
        }
        if crc32fast::hash(&data) == crc {
            return Ok(data);
        }
        why = format!("its rows in {} do not match their checksum", path.display());
    }
    Err(why)
}

/// Reads a WAL record by record (streaming: one record in memory at a time).
///
/// The end of the log is the file size when it was opened, so a log that a writer is
/// appending to concurrently reads as a consistent prefix (a record being written shows up as
/// a torn tail, which a reader ignores).
#[derive(Debug)]
pub struct WalReader {
    path: PathBuf,
    /// Where the segment files are that external records point into.
    segments: PathBuf,
    /// Segments whose files external records read so far pointed into.
    referenced: Vec<uuid::Uuid>,
    /// Segments named by the external records read so far, whether their rows were read or
    /// not ([`Entry::Sealed`]).
    named: Vec<uuid::Uuid>,
    reader: BufReader<File>,
    base_id: u64,
    pos: u64,
    end: u64,
    expected_id: u64,
    torn: Option<TornTail>,
    done: bool,
    last_schema: Option<SchemaRef>,
    payload: Vec<u8>,
    /// The batches of a group record not returned yet (all read and checked).
    queued: VecDeque<(u64, Entry)>,
}

impl WalReader {
    /// Opens the WAL at `path` and checks its header.
    pub fn open(path: &Path) -> Result<WalReader> {
        let (file, end) = fs::open_with_len(path)?;
        let corrupt = |reason: String| WalError::Corrupt {
            path: path.to_path_buf(),
            offset: 0,
            reason,
        };
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut h = [0u8; WAL_HEADER_LEN as usize];
        if end < WAL_HEADER_LEN {
            return Err(corrupt(format!(
                "file of {end} bytes is shorter than the header"
            )));
        }
        reader
            .read_exact(&mut h)
            .map_err(|e| WalError::io("read", path, e))?;
        let magic = match h[..8].try_into() {
            Ok(m)
                if m == WAL_MAGIC
                    || m == WAL_MAGIC_V3
                    || m == WAL_MAGIC_V2
                    || m == WAL_MAGIC_V1 =>
            {
                m
            }
            _ => return Err(corrupt("not a weir write-ahead log (bad magic)".into())),
        };
        if header_bytes_of(
            magic,
            u64::from_le_bytes(h[8..16].try_into().unwrap_or([0; 8])),
        ) != h
        {
            return Err(corrupt("header checksum mismatch".into()));
        }
        let base_id = u64::from_le_bytes(h[8..16].try_into().unwrap_or([0; 8]));
        Ok(WalReader::at(path, reader, base_id, WAL_HEADER_LEN, end))
    }

    /// A reader of the log at `path` through `reader`, positioned at `pos` of its `end`
    /// bytes, whose next record is expected at event `base_id`.
    fn at(path: &Path, reader: BufReader<File>, base_id: u64, pos: u64, end: u64) -> WalReader {
        let segments = path
            .parent()
            .unwrap_or(Path::new("."))
            .join(crate::segment::SEGMENTS_DIR);
        WalReader {
            path: path.to_path_buf(),
            segments,
            referenced: Vec::new(),
            named: Vec::new(),
            reader,
            base_id,
            pos,
            end,
            expected_id: base_id,
            torn: None,
            done: false,
            last_schema: None,
            payload: Vec::new(),
            queued: VecDeque::new(),
        }
    }

    /// Opens the WAL at `path` without trusting its header (damaged, or cut short): records
    /// are read from where the header ends (or the end of a shorter file), the first expected
    /// at `expected_id` or later (see [`WalReader::resync`]). For `weir verify --repair`
    /// (`crate::store`), which takes `expected_id` from the catalog.
    pub fn open_headless(path: &Path, expected_id: u64) -> Result<WalReader> {
        let (file, end) = fs::open_with_len(path)?;
        let pos = WAL_HEADER_LEN.min(end);
        let mut reader = BufReader::with_capacity(1 << 20, file);
        reader
            .seek(SeekFrom::Start(pos))
            .map_err(|e| WalError::io("seek", path, e))?;
        Ok(WalReader::at(path, reader, expected_id, pos, end))
    }

    /// After [`WalReader::next_entry`] found a damaged record (an error), goes on at the next
    /// intact record after it (the module docs say what intact means; its first event ID at
    /// or after the one expected), so that reading keeps the records that follow a damaged
    /// one. Returns the offset it goes on at and the event IDs skipped (those of the damaged
    /// records: from the end of the last good record to the start of the intact one), or
    /// `None` when no intact record follows: the rest of the file is damage, and reading is
    /// at its end. A header that does not decode is not skipped this way (see
    /// [`WalReader::open_headless`]).
    pub fn resync(&mut self) -> Result<Option<(u64, std::ops::Range<u64>)>> {
        let Some(next) = self.intact_record_from(self.pos + 1)? else {
            self.done = true;
            return Ok(None);
        };
        let mut id = [0u8; 8];
        fs::read_exact_at(self.reader.get_ref(), &mut id, next + RECORD_HEADER_LEN)
            .map_err(|e| WalError::io("read", &self.path, e))?;
        let first = u64::from_le_bytes(id);
        self.reader
            .seek(SeekFrom::Start(next))
            .map_err(|e| WalError::io("seek", &self.path, e))?;
        let skipped = self.expected_id..first.max(self.expected_id);
        self.pos = next;
        self.expected_id = first;
        self.queued.clear();
        self.torn = None;
        self.done = false;
        Ok(Some((next, skipped)))
    }

    /// The first event ID of the log.
    pub fn base_id(&self) -> u64 {
        self.base_id
    }

    /// The ID after the last record read so far.
    pub fn end_id(&self) -> u64 {
        self.expected_id
    }

    /// Offset just after the last good record read so far.
    pub fn good_len(&self) -> u64 {
        self.pos
    }

    /// The segments whose files the records read so far point into (their rows are there).
    pub fn referenced_segments(&self) -> &[uuid::Uuid] {
        &self.referenced
    }

    /// The segments named by the external records read so far (also those of records
    /// returned as [`Entry::Sealed`], whose rows were not read).
    pub fn named_segments(&self) -> &[uuid::Uuid] {
        &self.named
    }

    /// The torn tail found, if reading stopped at one.
    pub fn torn(&self) -> Option<&TornTail> {
        self.torn.as_ref()
    }

    fn torn_at<T>(&mut self, reason: String) -> Result<Option<T>> {
        self.torn = Some(TornTail {
            path: self.path.clone(),
            offset: self.pos,
            bytes: self.end - self.pos,
            reason,
        });
        self.done = true;
        Ok(None)
    }

    /// The record at `self.pos` is damaged (`reason`): a torn tail if no intact record starts
    /// at or after `from`, else corruption naming the offsets of both (see the module docs).
    fn torn_or_corrupt<T>(&mut self, from: u64, reason: String) -> Result<Option<T>> {
        match self.intact_record_from(from)? {
            None => self.torn_at(reason),
            Some(next) => Err(self.corrupt_at(format!(
                "{reason}, but an intact record follows at offset {next}: the log is damaged, not torn (`weir verify --repair` keeps the intact records)"
            ))),
        }
    }

    /// The offset of the first intact record that starts at or after `from`: a plausible
    /// header (length in range and within the file, first event ID at or after the expected
    /// one, at least one row, known flags), a matching checksum, a payload that decodes, and,
    /// if it points into a segment file, rows there that match their checksum. Scans byte by
    /// byte (a record that passes the checksum but not the rest is skipped whole); reads the
    /// rest of the file into memory, which only happens once, when the log is damaged.
    fn intact_record_from(&mut self, from: u64) -> Result<Option<u64>> {
        if from >= self.end {
            return Ok(None);
        }
        let mut rest = vec![0u8; (self.end - from) as usize];
        fs::read_exact_at(self.reader.get_ref(), &mut rest, from)
            .map_err(|e| WalError::io("read", &self.path, e))?;
        let u32_at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut schema = None;
        let mut i = 0usize;
        while i + RECORD_HEADER_LEN as usize + MIN_PAYLOAD as usize <= rest.len() {
            let len = u32_at(&rest, i) as usize;
            let start = i + RECORD_HEADER_LEN as usize;
            let plausible = (MIN_PAYLOAD as usize..=MAX_PAYLOAD as usize).contains(&len)
                && start + len <= rest.len()
                && {
                    let p = &rest[start..start + len];
                    let mut id = [0u8; 8];
                    id.copy_from_slice(&p[..8]);
                    u64::from_le_bytes(id) >= self.expected_id
                        && (u32_at(p, 8) > 0 || p[12] & (FLAG_MARKS | FLAG_GROUP) != 0)
                        && p[12] & !KNOWN_FLAGS == 0
                };
            if !plausible || crc32fast::hash(&rest[start..start + len]) != u32_at(&rest, i + 4) {
                i += 1;
                continue;
            }
            let readable = |d: &Decoded| match d {
                Decoded::External(x) => read_external(
                    &self.segments,
                    x.location,
                    x.data_len,
                    x.offsets.len(),
                    x.data_crc,
                )
                .is_ok(),
                _ => true,
            };
            let intact = match decode_payload(&rest[start..start + len], &mut schema) {
                Ok(Decoded::Group(parts)) => parts.iter().all(readable),
                Ok(d) => readable(&d),
                Err(_) => false,
            };
            if intact {
                return Ok(Some(from + i as u64));
            }
            i = start + len;
        }
        Ok(None)
    }

    fn corrupt_at(&mut self, reason: String) -> WalError {
        self.done = true;
        WalError::Corrupt {
            path: self.path.clone(),
            offset: self.pos,
            reason,
        }
    }

    fn rest_is_zero(&mut self) -> Result<bool> {
        let mut buf = [0u8; 8192];
        loop {
            let n = self
                .reader
                .read(&mut buf)
                .map_err(|e| WalError::io("read", &self.path, e))?;
            if n == 0 {
                return Ok(true);
            }
            if buf[..n].iter().any(|&b| b != 0) {
                return Ok(false);
            }
        }
    }

    /// The next record: its offset and batch. `Ok(None)` at the end, or at a torn tail (see
    /// [`WalReader::torn`]). A damaged record in the middle is an error naming the offset.
    pub fn next_record(&mut self) -> Result<Option<(u64, Batch)>> {
        loop {
            match self.next_entry(0)? {
                None => return Ok(None),
                // A record of checkpoints only holds no event.
                Some((_, Entry::Batch(b))) if b.is_empty() => continue,
                Some((offset, Entry::Batch(b))) => return Ok(Some((offset, b))),
                Some((_, Entry::Sealed(_))) => continue,
            }
        }
    }

    /// Like [`WalReader::next_record`], but a record whose events all lie below `sealed_below`
    /// (they are in sealed segments) comes as [`Entry::Sealed`] without its rows being read:
    /// they may point into a segment file of an earlier life that is gone.
    pub fn next_entry(&mut self, sealed_below: u64) -> Result<Option<(u64, Entry)>> {
        // The other batches of a group record read last.
        if let Some(e) = self.queued.pop_front() {
            return Ok(Some(e));
        }
        if self.done {
            return Ok(None);
        }
        let remaining = self.end - self.pos;
        if remaining == 0 {
            self.done = true;
            return Ok(None);
        }
        if remaining < RECORD_HEADER_LEN {
            return self.torn_at(format!("only {remaining} bytes of a record header"));
        }
        let mut h = [0u8; RECORD_HEADER_LEN as usize];
        if !read_full(&mut self.reader, &mut h).map_err(|e| WalError::io("read", &self.path, e))? {
            return self.torn_at(TRUNCATED_WHILE_READING.into());
        }
        let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as u64;
        let crc = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
        if len == 0 && h == [0; 8] && self.rest_is_zero()? {
            return self.torn_at("zero-filled tail".into());
        }
        if !(MIN_PAYLOAD..=MAX_PAYLOAD).contains(&len) {
            return self.torn_or_corrupt(self.pos + 1, format!("invalid record length {len}"));
        }
        let record_end = self.pos + RECORD_HEADER_LEN + len;
        if record_end > self.end {
            return self.torn_or_corrupt(
                self.pos + 1,
                format!(
                    "record of {len} bytes but only {} left in the file",
                    remaining - RECORD_HEADER_LEN
                ),
            );
        }
        self.payload.resize(len as usize, 0);
        if !read_full(&mut self.reader, &mut self.payload)
            .map_err(|e| WalError::io("read", &self.path, e))?
        {
            return self.torn_at(TRUNCATED_WHILE_READING.into());
        }
        if crc32fast::hash(&self.payload) != crc {
            return self.torn_or_corrupt(self.pos + 1, "record checksum mismatch".into());
        }
        let decoded = match decode_payload(&self.payload, &mut self.last_schema) {
            Ok(d) => d,
            Err(reason) => return Err(self.corrupt_at(format!("bad record: {reason}"))),
        };
        let parts = match decoded {
            Decoded::Group(parts) => parts,
            d => vec![d],
        };
        let offset = self.pos;
        // Every batch of the record is resolved before any is returned: a group is read
        // whole or not at all.
        let mut entries = VecDeque::with_capacity(parts.len());
        let mut expected = self.expected_id;
        for part in parts {
            if let Decoded::External(x) = &part {
                if !self.named.contains(&x.location.segment) {
                    self.named.push(x.location.segment);
                }
            }
            let (first, rows) = part.ids();
            if first != expected {
                return Err(self.corrupt_at(format!(
                    "record starts at event ID {first}, expected {expected}",
                )));
            }
            let end = first + rows as u64;
            let entry = match part {
                Decoded::Inline(b) => Entry::Batch(b),
                Decoded::External(_) if end <= sealed_below => Entry::Sealed(first..end),
                Decoded::External(x) => {
                    // The rows were written to the segment file before the record; after a
                    // power loss, records written since the last flush may have outlived their
                    // rows: the log ends there, as at a torn record.
                    let data = match read_external(
                        &self.segments,
                        x.location,
                        x.data_len,
                        x.offsets.len(),
                        x.data_crc,
                    ) {
                        Ok(d) => d,
                        Err(why) => {
                            return self.torn_or_corrupt(
                                record_end,
                                format!("record's rows are not readable: {why}"),
                            )
                        }
                    };
                    if !self.referenced.contains(&x.location.segment) {
                        self.referenced.push(x.location.segment);
                    }
                    match Batch::from_parts(x.schema, data, x.offsets, x.ts) {
                        Some(mut b) => {
                            b.set_id(x.first_id);
                            b.set_marks(x.marks);
                            Entry::Batch(b)
                        }
                        None => {
                            return Err(self.corrupt_at(
                                "bad record: row offsets are not increasing within the data".into(),
                            ))
                        }
                    }
                }
                Decoded::Group(_) => {
                    return Err(self.corrupt_at("bad record: a group within a group".into()))
                }
            };
            expected = end;
            entries.push_back((offset, entry));
        }
        if self.payload.capacity() > 64 << 20 {
            self.payload = Vec::new();
        }
        self.expected_id = expected;
        self.pos = record_end;
        let first = entries.pop_front();
        self.queued = entries;
        Ok(first)
    }
}

/// Why reading stopped when the file ended early: it shrank since it was opened (a writer cut
/// off a torn tail).
const TRUNCATED_WHILE_READING: &str = "the file was truncated while reading";

/// Fills `buf` from `reader`; `Ok(false)` if the input ended first.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    match reader.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// A record read by [`WalReader::next_entry`].
#[derive(Debug)]
pub enum Entry {
    /// A batch to replay.
    Batch(Batch),
    /// The IDs of a record already in sealed segments (its rows were not read).
    Sealed(std::ops::Range<u64>),
}

impl Iterator for WalReader {
    type Item = Result<(u64, Batch)>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::BatchBuilder;
    use crate::types::{Field, Schema, Type};

    fn checkpoint(ino: u64, offset: u64, done: bool) -> FileCheckpoint {
        FileCheckpoint {
            id: FileId {
                dev: 7,
                ino,
                fp_len: 4096,
                fp_crc: 0xdead_beef,
            },
            path: format!("/logs/f{ino}.log"),
            pos: Position { offset, skip: 3 },
            done,
            raw: if done { offset / 3 } else { 0 },
            header: String::new(),
            sum: None,
        }
    }

    /// A record of rows stored as they are holds their CRC-32 whether the caller hands it
    /// over (the store, which has it from the segment builder) or not (computed then): the
    /// two records are the same bytes.
    #[test]
    fn external_record_of_plain_rows_computes_their_crc_when_not_given() {
        let dir = tempfile::tempdir().expect("tempdir");
        let schema = Schema::new("zeek.t", vec![Field::new("s", Type::String)]).into_shared();
        let mut b = BatchBuilder::new(schema);
        for v in [&b"a"[..], b"bc", b"def"] {
            b.begin_row().bytes(v);
            b.finish_row(None);
        }
        let batch = b.finish();
        let location = DataLocation {
            segment: uuid::Uuid::from_u128(7),
            from_end: 100,
            packed: None,
        };
        let record = |name: &str, crc: Option<u32>| {
            let path = dir.path().join(name);
            let mut wal = Wal::create(&path, 0, SyncPolicy::Batch).expect("create");
            wal.append_external(&batch, crc, location).expect("append");
            drop(wal);
            std::fs::read(&path).expect("read")
        };
        let given = record("given", Some(crc32fast::hash(batch.data())));
        assert_eq!(record("computed", None), given);
        // And the CRC is in it: another one makes another record.
        assert_ne!(record("wrong", Some(0)), given);
    }

    /// A checkpoint's header and sum are encoded with it; an encoding from before headers were
    /// recorded (no bit 31 in the count) reads with empty headers, one from before sums (no
    /// bit 30) without sums.
    #[test]
    fn checkpoint_headers_round_trip_and_old_encodings_read() {
        let mut a = checkpoint(1, 10, false);
        a.header = "#separator \\x09\n#fields\tts\n#types\ttime\n".to_string();
        a.sum = Some(0);
        let b = checkpoint(2, 20, true);
        let list = vec![a.clone(), b.clone()];
        let bytes = encode_checkpoints(&list);
        assert_eq!(bytes.len(), 4 + checkpoint_len(&a) + checkpoint_len(&b));
        assert_eq!(decode_checkpoints(&bytes), Ok(list));
        assert_eq!(encode_checkpoints(&[]), 0u32.to_le_bytes());
        // The encoding before: the count without bit 31, no header lengths.
        let mut old = 1u32.to_le_bytes().to_vec();
        for n in [7u64, 2] {
            old.extend_from_slice(&n.to_le_bytes());
        }
        old.extend_from_slice(&4096u32.to_le_bytes());
        old.extend_from_slice(&0xdead_beefu32.to_le_bytes());
        old.extend_from_slice(&20u64.to_le_bytes());
        old.extend_from_slice(&3u64.to_le_bytes());
        old.push(1);
        old.extend_from_slice(&(20u64 / 3).to_le_bytes());
        put_str(&mut old, "/logs/f2.log");
        assert_eq!(decode_checkpoints(&old), Ok(vec![b.clone()]));
        // The encoding of WAL version 2: bit 31, headers, no sums.
        let mut v2 = (1u32 | CHECKPOINT_HEADERS).to_le_bytes().to_vec();
        v2.extend_from_slice(&old[4..]);
        put_str(&mut v2, "#fields\tts\n");
        let mut with_header = b.clone();
        with_header.header = "#fields\tts\n".to_string();
        assert_eq!(decode_checkpoints(&v2), Ok(vec![with_header]));
        // A sum flag other than 0 or 1 is damage.
        let mut bad = encode_checkpoints(&[b]);
        let flag = bad.len() - 5;
        bad[flag] = 2;
        assert!(decode_checkpoints(&bad).is_err());
    }

    /// Checkpoints are written in the record of their rows (the last one per file), read
    /// back with it, and a record of checkpoints alone is read by replay (`next_entry`) but
    /// holds no event for readers (`next_record`).
    /// A log of version 1 or 2 reads as before, and becomes version 3 when a writer opens it
    /// to append: its records and the new ones all read back.
    #[test]
    fn logs_of_versions_1_to_3_read_and_are_upgraded_before_an_append() {
        for old in [WAL_MAGIC_V1, WAL_MAGIC_V2, WAL_MAGIC_V3] {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("wal");
            let schema = Schema::new("zeek.t", vec![Field::new("s", Type::String)]).into_shared();
            let batch = |id: u64, v: &[u8]| {
                let mut b = BatchBuilder::new(schema.clone());
                b.begin_row().bytes(v);
                b.finish_row(None);
                let mut b = b.finish();
                b.set_id(id);
                b
            };
            let mut wal = Wal::create(&path, 5, SyncPolicy::Batch).expect("create");
            wal.append(&batch(5, b"old")).expect("append");
            wal.sync().expect("sync");
            drop(wal);
            let mut bytes = std::fs::read(&path).expect("read");
            assert_eq!(&bytes[..8], b"WEIRWAL4");
            bytes[..20].copy_from_slice(&header_bytes_of(old, 5));
            std::fs::write(&path, &bytes).expect("write");
            let rows = |path: &Path| {
                let mut r = WalReader::open(path).expect("open");
                let mut ids = Vec::new();
                while let Some((_, b)) = r.next_record().expect("record") {
                    ids.push(b.id());
                }
                ids
            };
            assert_eq!(rows(&path), [5]);
            let len = bytes.len() as u64;
            let mut wal = Wal::open_append(&path, 5, len, SyncPolicy::Batch).expect("open_append");
            wal.append(&batch(6, b"new")).expect("append");
            wal.sync().expect("sync");
            drop(wal);
            let bytes = std::fs::read(&path).expect("read");
            assert_eq!(&bytes[..20], &header_bytes(5));
            assert_eq!(rows(&path), [5, 6]);
            // Anything else is not a log.
            let mut bad = bytes.clone();
            bad[..20].copy_from_slice(&header_bytes_of(*b"WEIRWAL5", 5));
            std::fs::write(&path, &bad).expect("write");
            assert!(WalReader::open(&path).is_err());
        }
    }

    /// A group of three batches of two schemas with a checkpoint on the last, in a log after
    /// a plain record of events 0..2: events 2..8. Returns the log's path and the offset of
    /// the group record.
    fn log_with_group(dir: &Path) -> (PathBuf, u64) {
        let a = Schema::new("suricata.flow", vec![Field::new("s", Type::String)]).into_shared();
        let b = Schema::new("suricata.dns", vec![Field::new("n", Type::Count)]).into_shared();
        let rows_a = |id: u64, n: u64| {
            let mut bb = BatchBuilder::new(a.clone());
            for i in 0..n {
                bb.begin_row().bytes(format!("a{}", id + i).as_bytes());
                bb.finish_row(None);
            }
            let mut x = bb.finish();
            x.set_id(id);
            x
        };
        let rows_b = |id: u64, n: u64| {
            let mut bb = BatchBuilder::new(b.clone());
            for i in 0..n {
                bb.begin_row().uint(id + i);
                bb.finish_row(None);
            }
            let mut x = bb.finish();
            x.set_id(id);
            x
        };
        let path = dir.join("wal");
        let mut wal = Wal::create(&path, 0, SyncPolicy::Batch).expect("create");
        wal.append(&rows_a(0, 2)).expect("append");
        let group_at = wal.len();
        let (g1, g2, mut g3) = (rows_a(2, 3), rows_b(5, 2), rows_a(7, 1));
        g3.set_marks(vec![Mark {
            row_start: 1,
            row_end: 1,
            start: None,
            end: checkpoint(9, 700, false),
        }]);
        let part = |batch| GroupPart {
            batch,
            rows_crc: None,
            location: None,
        };
        wal.append_group(&[part(&g1), part(&g2), part(&g3)])
            .expect("append group");
        wal.sync().expect("sync");
        (path, group_at)
    }

    /// Per batch read: the record's offset, the batch's first ID and its schema's name.
    type Read = Vec<(u64, u64, String)>;

    fn read_all(path: &Path) -> Result<(Read, Vec<Mark>, WalReader)> {
        let mut r = WalReader::open(path)?;
        let mut out = Vec::new();
        let mut marks = Vec::new();
        while let Some((offset, b)) = r.next_record()? {
            out.push((offset, b.id(), b.schema().name.clone()));
            marks.extend(b.marks().iter().cloned());
        }
        Ok((out, marks, r))
    }

    #[test]
    fn a_group_is_one_record_read_batch_by_batch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, at) = log_with_group(dir.path());
        let (read, marks, r) = read_all(&path).expect("read");
        let flow = "suricata.flow".to_string();
        assert_eq!(
            read,
            [
                (WAL_HEADER_LEN, 0, flow.clone()),
                (at, 2, flow.clone()),
                (at, 5, "suricata.dns".into()),
                (at, 7, flow),
            ]
        );
        assert_eq!(r.end_id(), 8);
        assert!(r.torn().is_none());
        assert_eq!(marks.len(), 1);
        assert_eq!(marks[0].end.pos.offset, 700);
        // One record: its flags byte says group, and the file ends with it.
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(bytes[at as usize + 8 + 12], FLAG_GROUP);
        let len = u32::from_le_bytes(bytes[at as usize..at as usize + 4].try_into().expect("4"));
        assert_eq!(at + 8 + u64::from(len), bytes.len() as u64);
    }

    #[test]
    fn a_torn_group_at_the_end_is_dropped_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, at) = log_with_group(dir.path());
        let full = std::fs::metadata(&path).expect("stat").len();
        // Cut anywhere within the group record: none of its batches is read.
        for cut in [at + 3, at + 40, full - 20, full - 1] {
            let bytes = std::fs::read(&path).expect("read");
            let torn = dir.path().join("torn");
            std::fs::write(&torn, &bytes[..cut as usize]).expect("write");
            let (read, marks, r) = read_all(&torn).expect("read torn");
            assert_eq!(read.len(), 1, "cut at {cut}");
            assert!(marks.is_empty());
            assert_eq!(r.end_id(), 2);
            assert_eq!(r.good_len(), at);
            assert_eq!(r.torn().map(|t| t.offset), Some(at));
        }
    }

    #[test]
    fn a_damaged_group_in_the_middle_is_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, at) = log_with_group(dir.path());
        let schema =
            Schema::new("suricata.flow", vec![Field::new("s", Type::String)]).into_shared();
        let mut bb = BatchBuilder::new(schema);
        bb.begin_row().bytes(b"after");
        bb.finish_row(None);
        let mut after = bb.finish();
        after.set_id(8);
        let len = std::fs::metadata(&path).expect("stat").len();
        let mut wal = Wal::open_append(&path, 0, len, SyncPolicy::Batch).expect("open");
        wal.append(&after).expect("append");
        drop(wal);
        let mut bytes = std::fs::read(&path).expect("read");
        // A bit flipped in the rows of the group's second batch.
        let flip = at as usize + 100;
        bytes[flip] ^= 0x10;
        std::fs::write(&path, &bytes).expect("write");
        let err = read_all(&path).expect_err("damage is an error");
        match err {
            WalError::Corrupt { offset, reason, .. } => {
                assert_eq!(offset, at);
                assert!(reason.contains("intact record follows"), "{reason}");
            }
            e => panic!("{e}"),
        }
        // Reading on past it finds the record after the group, and none of the group.
        let mut r = WalReader::open(&path).expect("open");
        assert!(r.next_record().expect("first").is_some());
        assert!(r.next_record().is_err());
        let (next, skipped) = r.resync().expect("resync").expect("an intact record");
        assert_eq!(skipped, 2..8);
        let (offset, b) = r.next_record().expect("record").expect("after");
        assert_eq!((offset, b.id()), (next, 8));
    }

    #[test]
    fn checkpoints_travel_in_the_record_of_their_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("wal");
        let mut wal = Wal::create(&path, 0, SyncPolicy::Batch).expect("create");
        let schema = Schema::new("zeek.t", vec![Field::new("s", Type::String)]).into_shared();
        let mut b = BatchBuilder::new(schema);
        for _ in 0..3 {
            b.begin_row().bytes(b"x");
            b.finish_row(None);
        }
        let mut batch = b.finish();
        for (row_end, cp) in [
            (1, checkpoint(1, 10, false)),
            (2, checkpoint(2, 20, false)),
            (3, checkpoint(1, 30, false)),
        ] {
            batch.push_mark(Mark {
                row_start: row_end - 1,
                row_end,
                start: None,
                end: cp,
            });
        }
        wal.append(&batch).expect("append");
        let mut only =
            BatchBuilder::new(Schema::new("weir.checkpoint", vec![]).into_shared()).finish();
        only.set_id(3);
        only.push_mark(Mark {
            row_start: 0,
            row_end: 0,
            start: None,
            end: checkpoint(2, 99, true),
        });
        wal.append(&only).expect("append");
        let mut r = WalReader::open(&path).expect("open");
        let Some((_, Entry::Batch(first))) = r.next_entry(0).expect("entry") else {
            panic!("a batch");
        };
        let got: Vec<FileCheckpoint> = first.marks().iter().map(|m| m.end.clone()).collect();
        assert_eq!(
            got,
            vec![checkpoint(1, 30, false), checkpoint(2, 20, false)]
        );
        assert!(first.marks().iter().all(|m| m.row_end == 3));
        let Some((_, Entry::Batch(second))) = r.next_entry(0).expect("entry") else {
            panic!("a record of checkpoints");
        };
        assert!(second.is_empty());
        assert_eq!(second.marks()[0].end, checkpoint(2, 99, true));
        assert!(r.next_entry(0).expect("end").is_none());
        assert!(r.torn().is_none());
        let mut r = WalReader::open(&path).expect("open");
        assert_eq!(
            r.next_record().expect("record").map(|(_, b)| b.len()),
            Some(3)
        );
        assert!(r.next_record().expect("end").is_none());
        assert_eq!(r.end_id(), 3);
    }

    /// Appending past several write-back thresholds starts background syncs and leaves every
    /// record readable, in order, after the waiting sync.
    #[test]
    fn background_writeback_keeps_every_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("wal");
        let mut wal = Wal::create(&path, 0, SyncPolicy::Batch).expect("create");
        let schema = Schema::new("zeek.t", vec![Field::new("s", Type::String)]).into_shared();
        let payload = vec![b'x'; 1 << 20];
        let records = 3 * WRITEBACK_BYTES / (1 << 20);
        let mut started = 0;
        for i in 0..records {
            let mut b = BatchBuilder::new(schema.clone());
            b.begin_row().bytes(&payload);
            b.finish_row(None);
            let mut batch = b.finish();
            batch.set_id(i);
            wal.append(&batch).expect("append");
            started += wal.writeback.is_running() as u32;
        }
        assert!(started > 0, "no background write-back was started");
        wal.sync().expect("sync");
        assert!(!wal.writeback.is_running());
        let mut r = WalReader::open(&path).expect("open");
        let mut n = 0;
        while let Some((_, b)) = r.next_record().expect("record") {
            assert_eq!(b.id(), n);
            assert_eq!(b.row(0).len(), payload.len() + 6);
            n += 1;
        }
        assert_eq!(n, records);
    }
}
