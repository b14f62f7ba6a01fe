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
//!   the wanted columns at their places in the stored bytes; between them lie bytes of an
//!   earlier batch (or zeros), which nothing reads: `columns.rs` reads the header and the
//!   wanted columns alone, each against its checksum.
//! - A read that fails or comes back short (a file shortened behind weir's back) is an error
//!   naming what was read, never a panic (through the map it would have been a SIGBUS).

use std::cell::RefCell;
use std::fs::File;
use std::ops::Range;

use super::columns::Header;

/// Header bytes read at first: enough for a schema of a few hundred fields; a longer header
/// is read in a second step.
const HEAD: usize = 4096;

/// Wanted columns less than this apart are read in one call, with the bytes between them.
const GAP: usize = 4096;

thread_local! {
    /// The stored bytes of the batch being read (see the invariants).
    static STORED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// `f` of the stored bytes of the batch at `data` in `file` (of `raw_size` bytes of rows in
/// `rows` rows) with its header and the columns `want` marks (all without it) read, once
/// `check` accepted the header (its bytes and what they say).
pub(super) fn with_stored<T>(
    file: &File,
    data: Range<usize>,
    (raw_size, rows): (usize, usize),
    want: Option<&[bool]>,
    check: impl FnOnce(&[u8], &Header) -> Result<(), String>,
    f: impl FnOnce(&[u8]) -> Result<T, String>,
) -> Result<T, String> {
    STORED.with(|cell| {
        // Taken out while in use: a nested call (there is none) would allocate, not fail.
        let mut buf = std::mem::take(&mut *cell.borrow_mut());
        let out = read(file, &data, (raw_size, rows), want, check, &mut buf).and_then(|()| {
            let stored = buf.get(..data.len()).ok_or("no stored bytes")?;
            f(stored)
        });
        *cell.borrow_mut() = buf;
        out
    })
}

fn read(
    file: &File,
    data: &Range<usize>,
    (raw_size, rows): (usize, usize),
    want: Option<&[bool]>,
    check: impl FnOnce(&[u8], &Header) -> Result<(), String>,
    buf: &mut Vec<u8>,
) -> Result<(), String> {
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
    // The wanted columns past what was read, adjacent ones in one call.
    let mut spans = header
        .spans()
        .enumerate()
        .filter(|(c, _)| want.is_none_or(|w| w.get(*c) == Some(&true)))
        .map(|(_, r)| r.start.max(head)..r.end)
        .filter(|r| !r.is_empty());
    let Some(mut run) = spans.next() else {
        return Ok(());
    };
    for r in spans {
        if r.start <= run.end + GAP {
            run.end = run.end.max(r.end);
        } else {
            read_at(&mut stored[run.clone()], run.start)?;
            run = r;
        }
    }
    read_at(&mut stored[run.clone()], run.start)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Write;

    use super::super::codec::{Codec, Compression, Layout, Packer};
    use super::super::columns::{read_columns, Columns};
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
                |s| read_columns(Codec::Zstd, s, raw, n, want, (None, None)),
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
            |_| Ok(()),
        );
        assert_eq!(refused.unwrap_err(), "no");
        file.set_len(1000 + stored.len() as u64 / 2).unwrap();
        let short = read(None).unwrap_err();
        assert!(short.starts_with("reading"), "{short}");
    }
}
