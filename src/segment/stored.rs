//! The stored bytes of a batch in columns, read with positioned reads (`pread`) rather than
//! through the segment's memory map: its header and the columns a reader wants, nothing else.
//!
//! # Why not the map
//!
//! A scan reads a few columns of every batch: a few KiB, spread over the whole file. Through
//! the map, the first touch of each page is a fault, and the kernel maps the 16 pages around
//! it (fault-around) and tears all of them down when the map goes, on one thread, at the end
//! of the query. Measured on W1000 (about 2,000 batches, every page in the page cache):
//! `orig_bytes > 1k` faulted 4,215 times and `"Fa" in history` 3,941 times; read this way,
//! 1,638 and 1,638 (the rest is the program's own memory), and their times fell from 57-65 to
//! 45-49 ms and from 43 to 32-34 ms (perf stat -r 10, alternating). Reading copies the bytes
//! once, which costs less than mapping them. The segment stays mapped for everything else:
//! its metadata, batches in rows, and the batches of segments written before format 9.
//!
//! # Invariants
//!
//! - Only batches in columns of format 9 or later are read so: their header has its own
//!   checksum (checked here on the batch's first access, as `Segment::check` would through
//!   the map) and so has every column (checked by the column reader before it is used).
//! - The buffer is the thread's, as long as the largest batch read, and holds the header and
//!   the wanted columns at their places in the stored bytes (of a blocked column, format 11,
//!   read for some rows only: its directory and the blocks that hold them); between them lie
//!   bytes of an earlier batch (or zeros), which nothing reads: `columns.rs` reads the header
//!   and the wanted columns alone, each against its checksum, and of a blocked column only
//!   the blocks of the rows it was asked for, each against its own.
//! - A read that fails or comes back short (a file shortened behind weir's back) is an error
//!   naming what was read, never a panic (through the map it would have been a SIGBUS).

use std::cell::RefCell;
use std::fs::File;
use std::ops::Range;

use super::blocks::Directory;
use super::columns::{any_set, checked_directory, Header};

/// Header bytes read at first: enough for a schema of a few hundred fields; a longer header
/// is read in a second step.
const HEAD: usize = 4096;

/// Wanted columns less than this apart are read in one call, with the bytes between them.
const GAP: usize = 4096;

thread_local! {
    /// The stored bytes of the batch being read (see the invariants).
    static STORED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Chooses the rows a reader needs (one bit per row; `None`: all) from the directories of
/// the wanted blocked columns (by column; `None` for the others).
pub(super) type Choose<'c> = &'c mut dyn FnMut(&[Option<Directory<'_>>]) -> Option<Vec<u64>>;

/// `f` of the stored bytes of the batch at `data` in `file` (of `raw_size` bytes of rows in
/// `rows` rows) with its header and the columns `want` marks (all without it) read, once
/// `check` accepted the header (its bytes and what they say). With `choose`, a wanted
/// blocked column (format 11, `blocks.rs`) is read as its directory, checked against the
/// column's checksum, and the blocks that hold a row `choose` needs (all blocks when its
/// directory is damaged: the column reader then names the damage); `f` is given those rows.
pub(super) fn with_stored<T>(
    file: &File,
    data: Range<usize>,
    (raw_size, rows): (usize, usize),
    want: Option<&[bool]>,
    check: impl FnOnce(&[u8], &Header) -> Result<(), String>,
    choose: Option<Choose<'_>>,
    f: impl FnOnce(&[u8], Option<&[u64]>) -> Result<T, String>,
) -> Result<T, String> {
    STORED.with(|cell| {
        // Taken out while in use: a nested call (there is none) would allocate, not fail.
        let mut buf = std::mem::take(&mut *cell.borrow_mut());
        let sizes = (raw_size, rows);
        let out = read(file, &data, sizes, want, check, choose, &mut buf).and_then(|needed| {
            let stored = buf.get(..data.len()).ok_or("no stored bytes")?;
            f(stored, needed.as_deref())
        });
        *cell.borrow_mut() = buf;
        out
    })
}

/// Reads what [`with_stored`] describes into `buf`; returns the rows `choose` needs.
fn read(
    file: &File,
    data: &Range<usize>,
    (raw_size, rows): (usize, usize),
    want: Option<&[bool]>,
    check: impl FnOnce(&[u8], &Header) -> Result<(), String>,
    choose: Option<Choose<'_>>,
    buf: &mut Vec<u8>,
) -> Result<Option<Vec<u64>>, String> {
    let len = data.len();
    if buf.len() < len {
        // A new buffer of zeros rather than the old one grown: nothing of it is copied or
        // written here, so the pages a read never reaches (the columns not wanted) are never
        // touched, and cost no page fault (the allocator takes zeroed pages from the system).
        *buf = vec![0; len.next_power_of_two()];
    }
    let stored = &mut buf[..len];
    let at = data.start as u64;
    let read_at = |bytes: &mut [u8], from: usize| {
        crate::fs::read_exact_at(file, bytes, at + from as u64).map_err(|e| {
            format!(
                "reading {} stored bytes at offset {}: {e}",
                bytes.len(),
                at + from as u64
            )
        })
    };
    // The header's length is known once it is read: the first `head` bytes, more if it is
    // longer. (A header read past `head` reads bytes that are not this batch's yet: it is
    // read again once they are.)
    let mut head = len.min(HEAD);
    read_at(&mut stored[..head], 0)?;
    let header = loop {
        let header = super::columns::header(stored, raw_size, rows);
        let more = match &header {
            Ok(h) if h.len <= head => break header?,
            Ok(h) => h.len,
            Err(_) if head == len => break header?,
            Err(_) => len.min(4 * head),
        };
        read_at(&mut stored[head..more], head)?;
        head = more;
    };
    check(&stored[..header.len], &header)?;
    let wanted = |c: usize| want.is_none_or(|w| w.get(c) == Some(&true));
    // The wanted blocked columns' directories, and the blocks that hold the rows needed.
    let mut blocked: Vec<Option<Vec<Range<usize>>>> = Vec::new();
    let mut needed = None;
    if let Some(choose) = choose {
        let dirs = directories(&header, stored, &wanted, rows, read_at)?;
        if dirs.iter().any(Option::is_some) {
            needed = choose(&dirs);
        }
        if let Some(words) = &needed {
            if words.iter().all(|&w| w == 0) {
                // No row needed: nothing more to read.
                return Ok(needed);
            }
            blocked = needed_blocks(&header, &dirs, words, rows);
        }
    }
    // The wanted columns past what was read (of a blocked column, the blocks needed),
    // adjacent ones in one call.
    let mut spans = header
        .spans()
        .enumerate()
        .filter(|&(c, _)| wanted(c))
        .flat_map(|(c, r)| match blocked.get(c) {
            Some(Some(blocks)) => blocks.clone(),
            _ => vec![r],
        })
        .map(|r| r.start.max(head)..r.end)
        .filter(|r| !r.is_empty());
    let Some(mut run) = spans.next() else {
        return Ok(needed);
    };
    for r in spans {
        if r.start <= run.end + GAP {
            run.end = run.end.max(r.end);
        } else {
            read_at(&mut stored[run.clone()], run.start)?;
            run = r;
        }
    }
    read_at(&mut stored[run.clone()], run.start)?;
    Ok(needed)
}

/// The directories of the wanted blocked columns of a batch whose header is `header`, read
/// into `stored` with `read_at` (by column; `None` for the others and for a directory that
/// does not read back or check against its column's checksum).
fn directories<'s>(
    header: &Header,
    stored: &'s mut [u8],
    wanted: &dyn Fn(usize) -> bool,
    rows: usize,
    read_at: impl Fn(&mut [u8], usize) -> Result<(), String>,
) -> Result<Vec<Option<Directory<'s>>>, String> {
    let blocked: Vec<usize> = (0..header.columns())
        .filter(|&c| wanted(c) && header.is_blocked(c))
        .collect();
    for &c in &blocked {
        let span = header.span(c);
        let fixed = span.len().min(super::blocks::FIXED);
        read_at(&mut stored[span.start..span.start + fixed], span.start)?;
        let len = super::blocks::directory_len(&stored[span.start..span.start + fixed])
            .unwrap_or(span.len())
            .min(span.len());
        read_at(
            &mut stored[span.start + fixed..span.start + len],
            span.start + fixed,
        )?;
    }
    let stored: &'s [u8] = stored;
    let mut dirs: Vec<Option<Directory<'s>>> = (0..header.columns()).map(|_| None).collect();
    for c in blocked {
        let col = &stored[header.span(c)];
        dirs[c] = checked_directory(col, header.crc(c), rows, header.raw(c)).ok();
    }
    Ok(dirs)
}

/// Per column of `dirs` (a batch's, of `rows` rows), the byte ranges of its directory and of
/// the blocks that hold a row `words` marks; `None` for a column without a directory.
fn needed_blocks(
    header: &Header,
    dirs: &[Option<Directory<'_>>],
    words: &[u64],
    rows: usize,
) -> Vec<Option<Vec<Range<usize>>>> {
    dirs.iter()
        .enumerate()
        .map(|(c, d)| {
            let d = d.as_ref()?;
            let start = header.span(c).start;
            let mut out = Vec::with_capacity(d.blocks.len() + 1);
            out.push(start..start + d.len);
            for (b, block) in d.blocks.iter().enumerate() {
                if any_set(words, d.rows_of(b, rows)) {
                    out.push(start + block.at..start + block.at + block.stored);
                }
            }
            Some(out)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Write;

    use super::super::codec::Packer;
    use super::super::columns::{read_columns, Columns};
    use super::super::compress::{Codec, Compression, Layout};
    use super::*;
    use crate::value::{encode_row, Value};

    /// A batch of `n` rows of `fields` fields in columns (zstd), its stored bytes and raw
    /// length; a string column every third field, counts otherwise.
    fn batch(n: usize, fields: usize) -> (Vec<u8>, usize) {
        let (mut data, mut offsets) = (Vec::new(), Vec::new());
        for r in 0..n {
            offsets.push(data.len() as u32);
            let row: Vec<Value> = (0..fields)
                .map(|f| match f % 3 {
                    0 => Value::String(format!("v{}-{}", r % 11, f).into_bytes()),
                    _ => Value::Count((r * f) as u64),
                })
                .collect();
            encode_row(&row, &mut data);
        }
        let mut p = Packer::new(Compression::new(Codec::Zstd));
        let (layout, stored, raw) = p.pack(&data, &offsets, fields).unwrap();
        assert_eq!(layout, Layout::Columns);
        (stored.to_vec(), raw)
    }

    /// Column `c` of `cols`, as bytes.
    fn column(cols: &Columns, c: usize) -> Vec<u8> {
        cols.column(c).to_vec()
    }

    /// A header longer than the first read (600 columns), the batch after 1,000 other bytes
    /// of its file: the wanted columns read as from the bytes in memory, and the unwanted
    /// ones are not read at all (damage in one fails only a read that wants it).
    #[test]
    fn the_header_and_the_wanted_columns_are_read_and_nothing_else() {
        let (n, fields) = (40, 600);
        let (stored, raw) = batch(n, fields);
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[0xee; 1000]).unwrap();
        file.write_all(&stored).unwrap();
        let data = 1000..1000 + stored.len();
        let whole = read_columns(Codec::Zstd, &stored, raw, n, None, (None, None)).unwrap();
        let header = super::super::columns::header(&stored, raw, n).unwrap();
        assert!(header.len > HEAD, "a header of {} bytes", header.len);
        let want: Vec<bool> = (0..fields)
            .map(|c| c == 3 || c == 597 || c == 598)
            .collect();
        let read = |want: Option<&[bool]>| {
            with_stored(
                &file,
                data.clone(),
                (raw, n),
                want,
                |bytes, h| {
                    assert_eq!(bytes, &stored[..h.len], "the header's bytes");
                    Ok(())
                },
                None,
                |s, _| read_columns(Codec::Zstd, s, raw, n, want, (None, None)),
            )
        };
        let got = read(Some(&want)).unwrap();
        for c in [3, 597, 598] {
            assert_eq!(column(&got, c), column(&whole, c), "column {c}");
        }
        let all = read(None).unwrap();
        assert!((0..fields).all(|c| column(&all, c) == column(&whole, c)));
        // An unwanted column damaged in the file: only a read that wants it fails.
        let span = header.spans().nth(10).unwrap();
        let mut damaged = stored.clone();
        damaged[span.start] ^= 0xff;
        crate::fs::write_all_at(&file, &damaged, 1000).unwrap();
        let got = read(Some(&want)).unwrap();
        assert_eq!(column(&got, 598), column(&whole, 598));
        // (Not read: the buffer still holds that byte as the whole read before left it.)
        let kept = STORED.with(|b| b.borrow()[span.start]);
        assert_eq!(kept, stored[span.start], "an unwanted column was read");
        assert!(read(None).unwrap_err().contains("column 10"));
        // A check that refuses the header fails the read; a file cut short is an error.
        let refused = with_stored(
            &file,
            data.clone(),
            (raw, n),
            None,
            |_, _| Err("no".into()),
            None,
            |_, _| Ok(()),
        );
        assert_eq!(refused.unwrap_err(), "no");
        file.set_len(1000 + stored.len() as u64 / 2).unwrap();
        let short = read(None).unwrap_err();
        assert!(short.starts_with("reading"), "{short}");
    }

    /// A blocked column (format 11) read for the rows of its first block: its directory and
    /// that block are read, the other blocks not (damage there fails only a read that needs
    /// them); with its directory damaged, `choose` does not see it and the column reader
    /// names the damage.
    #[test]
    fn a_blocked_column_is_read_as_the_blocks_that_hold_the_rows_needed() {
        use super::super::blocks::BLOCK_ROWS;
        use super::super::columns::read_rows_of_columns;
        let n = 3 * BLOCK_ROWS;
        let (mut data, mut offsets) = (Vec::new(), Vec::new());
        for r in 0..n {
            offsets.push(data.len() as u32);
            let uid = format!("C{:017x}", (r as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            encode_row(
                &[Value::Count(r as u64), Value::String(uid.into_bytes())],
                &mut data,
            );
        }
        let mut p = Packer::new(Compression::new(Codec::Zstd));
        let tags = [None, Some(super::super::sketch::TAG_STRING)];
        let (_, stored, raw) = p.pack_blocked(&data, &offsets, 2, &tags).unwrap();
        let stored = stored.to_vec();
        let header = super::super::columns::header(&stored, raw, n).unwrap();
        assert!(header.is_blocked(1));
        let whole = read_columns(Codec::Zstd, &stored, raw, n, None, (None, None)).unwrap();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&stored).unwrap();
        let mut first = vec![0u64; n.div_ceil(64)];
        first[0] = 1;
        let read = |file: &File| {
            let mut seen = 0;
            let mut choose = |dirs: &[Option<Directory<'_>>]| {
                seen = dirs.iter().flatten().count();
                Some(first.clone())
            };
            let got = with_stored(
                file,
                0..stored.len(),
                (raw, n),
                None,
                |_, _| Ok(()),
                Some(&mut choose),
                |s, needed| {
                    let words = needed.ok_or("no rows chosen")?;
                    read_rows_of_columns(Codec::Zstd, s, raw, n, None, (None, None), Some(words))
                },
            );
            (got, seen)
        };
        let (got, seen) = read(&file);
        let got = got.unwrap();
        assert_eq!(seen, 1);
        assert_eq!(column(&got, 0), column(&whole, 0));
        let value_end = |col: &[u8], rows: usize| {
            let mut c = crate::value::RowCursor::new(col);
            c.skip_many(rows).unwrap();
            c.position()
        };
        let end = value_end(whole.column(1), BLOCK_ROWS);
        assert_eq!(&got.column(1)[..end], &whole.column(1)[..end]);
        // The last block damaged: not read, so not noticed; a whole read names it.
        let span = header.span(1);
        let mut damaged = stored.clone();
        damaged[span.end - 1] ^= 0xff;
        crate::fs::write_all_at(&file, &damaged, 0).unwrap();
        assert!(read(&file).0.is_ok());
        // A read of every column, whole.
        let whole_read = |file: &File| {
            with_stored(
                file,
                0..stored.len(),
                (raw, n),
                None,
                |_, _| Ok(()),
                None,
                |s, _| read_columns(Codec::Zstd, s, raw, n, None, (None, None)),
            )
        };
        let err = whole_read(&file).unwrap_err();
        assert!(err.contains("column 1: block 2"), "{err}");
        // The directory damaged: not chosen from, and named.
        let mut damaged = stored.clone();
        damaged[span.start + 20] ^= 0xff;
        crate::fs::write_all_at(&file, &damaged, 0).unwrap();
        let (got, seen) = read(&file);
        assert_eq!(seen, 0);
        assert!(got.unwrap_err().contains("no rows chosen"));
        let err = whole_read(&file).unwrap_err();
        assert!(err.contains("column 1: checksum mismatch"), "{err}");
    }
}
