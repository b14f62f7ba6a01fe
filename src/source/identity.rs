//! File identity: how a followed or imported file is known across renames, rotation into
//! another directory, compression, copy-and-truncate and inode reuse.
//!
//! # The rule
//!
//! A file is known by its *content*. Its fingerprint ([`FileId::fp_len`], [`FileId::fp_crc`])
//! is the CRC-32 of its first bytes **as decompressed**, through the end of its first data
//! line: the first line that is neither empty nor a `#` header line. For a Zeek TSV log that
//! is the whole header (its `#path`, and `#open` with the time the log was opened) and the
//! first row (with its `ts` and `uid`); for Zeek JSON lines, the first row. If the first data
//! line ends after [`FileId::FINGERPRINT_BYTES`] bytes, the fingerprint covers those bytes.
//!
//! - **Not trusted until it covers that much.** A file that does not yet hold a complete
//!   first data line (Zeek has written only part of the header) has no fingerprint, and weir
//!   reads nothing of it: a header alone could belong to any hour's log, and a file filled,
//!   copied away and truncated before the next look could otherwise be taken for its
//!   successor. Once trusted, a fingerprint never changes: it is a function of the first
//!   line's content, so the same file yields the same fingerprint whenever it is looked at.
//! - **Compression does not change identity.** `conn.log` and the
//!   `conn.08:00:00-09:00:00.log.gz` that zeekctl makes of it have the same decompressed
//!   text, hence the same fingerprint: a finished file stays finished under any name and
//!   compression, and a checkpoint taken in the plain file is a position in the decompressed
//!   text of the compressed one.
//! - **Device and inode are hints.** They are recorded (to find a rotated file in the
//!   directory it was last seen in, and for messages) but two files are the same file exactly
//!   when their fingerprints are equal; a reused inode with new content is a new file, and a
//!   copy is the same file. One exception: a *look-alike*, a plain file in another inode
//!   whose head reproduces the fingerprint of a live file (being read, or still at its
//!   checkpoint's path and inode) but differs from that file's head further on (two sensors'
//!   logs with the same header and first rows), is another file: its fingerprint is taken
//!   through its first line that differs ([`distinguish`]), longer than the other's, so it
//!   is read from its start and found again by that identity after a restart. The heads
//!   compared go beyond the fingerprint's bytes, up to [`LOOKALIKE_BYTES`]: two files alike
//!   through their first 4 KiB (a header and dozens of identical rows) that differ further
//!   on are two files too, the look-alike's fingerprint then longer than
//!   [`FileId::FINGERPRINT_BYTES`] (a follower whose registry holds such a fingerprint reads
//!   as much of a file's head to find it, see [`extend_text`]). Files alike through the first
//!   [`LOOKALIKE_BYTES`] bytes are taken for one file.
//!
//! - **A hole is not content.** A plain file that starts with NUL bytes (a writer without
//!   `O_APPEND` writes on at its old offset after copy-and-truncate, leaving a hole before
//!   the new rows) is fingerprinted from its first byte after them ([`Head::hole`]), as if
//!   they were not there; the follower skips them with a warning.
//!
//! A checkpoint matches a file when the file's first (decompressed) bytes reproduce the
//! checkpoint's fingerprint: at least `fp_len` bytes whose CRC-32 is `fp_crc`
//! ([`Head::matches`]). Checkpoints written before this rule covered the first 4096 bytes *as
//! stored* (compressed, for a compressed file); they match by the same test on the stored
//! bytes, so archives written before keep resuming where they were.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::verify::unverified_head;
use super::Compression;
use crate::checkpoint::FileId;

/// The first bytes of a file: as stored, and as decompressed.
#[derive(Debug, Clone, Default)]
pub struct Head {
    /// The first [`FileId::FINGERPRINT_BYTES`] bytes as stored (fewer for a shorter file).
    pub raw: Vec<u8>,
    /// The first [`FileId::FINGERPRINT_BYTES`] bytes of its text (decompressed), fewer for a
    /// shorter text or a compressed file whose first member is not complete yet.
    pub text: Vec<u8>,
    /// How the file is compressed (by its magic bytes, unless the source names one).
    pub compression: Compression,
    /// NUL bytes at the start of a plain file: a *hole*, as a writer without `O_APPEND`
    /// leaves after copy-and-truncate (it writes on at its old offset). [`Self::text`] starts
    /// after them, so the fingerprint is that of the first line written after the hole, and
    /// files that differ only there are not taken for one another (see the module docs).
    pub hole: u64,
}

/// Reads `file`'s head. `compression` is the source's setting: [`Compression::Auto`] decides
/// by the magic bytes.
pub fn read_head(file: &File, compression: Compression) -> io::Result<Head> {
    let want = FileId::FINGERPRINT_BYTES as usize;
    let raw = read_at_most(file, 0, want)?;
    let compression = match compression {
        Compression::Auto => Compression::detect(&raw),
        c => c,
    };
    let mut hole = 0;
    let text = match compression {
        _ if raw.first() == Some(&0)
            && !matches!(compression, Compression::Gzip | Compression::Zstd) =>
        {
            hole = hole_len(file)?;
            read_at_most(file, hole, want)?
        }
        Compression::Gzip | Compression::Zstd => {
            let mut at = 0u64;
            let mut read = |buf: &mut [u8]| -> io::Result<usize> {
                let n = read_full(file, at, buf)?;
                at += n as u64;
                Ok(n)
            };
            unverified_head(compression == Compression::Zstd, want, &mut read)?
        }
        _ => raw.clone(),
    };
    Ok(Head {
        raw,
        text,
        compression,
        hole,
    })
}

/// How many NUL bytes `file` starts with.
fn hole_len(file: &File) -> io::Result<u64> {
    let mut buf = vec![0u8; 64 << 10];
    let mut at = 0u64;
    loop {
        let n = read_full(file, at, &mut buf)?;
        match buf[..n].iter().position(|&b| b != 0) {
            Some(i) => return Ok(at + i as u64),
            None if n < buf.len() => return Ok(at + n as u64),
            None => at += n as u64,
        }
    }
}

impl Head {
    /// The file's fingerprint (length, CRC-32), or `None` while it is not trusted (see the
    /// module docs).
    pub fn fingerprint(&self) -> Option<(u32, u32)> {
        fingerprint_len(&self.text, false).map(|n| (n as u32, crc32fast::hash(&self.text[..n])))
    }

    /// The fingerprint of a file whose whole text is [`Self::text`] (it ended: a finished
    /// compressed file, or a rotated one read to its end): as [`Self::fingerprint`], but a
    /// last data line without its newline counts. `None` if the text holds no data line.
    pub fn final_fingerprint(&self) -> Option<(u32, u32)> {
        fingerprint_len(&self.text, true).map(|n| (n as u32, crc32fast::hash(&self.text[..n])))
    }

    /// Whether `id`'s fingerprint is that of this file (see the module docs).
    pub fn matches(&self, id: &FileId) -> bool {
        let n = id.fp_len as usize;
        let prefix = |b: &[u8]| n > 0 && b.len() >= n && crc32fast::hash(&b[..n]) == id.fp_crc;
        prefix(&self.text) || (self.compression != Compression::None && prefix(&self.raw))
    }
}

/// How far the heads of a file and of a live file whose fingerprint it reproduces are compared
/// to tell a look-alike from a copy (see the module docs and [`distinguish`]): the longest
/// fingerprint a look-alike gets.
pub const LOOKALIKE_BYTES: usize = 1 << 20;

/// Reads `head`'s text of a plain file on to `len` bytes (fewer at the file's end), so that
/// fingerprints longer than [`FileId::FINGERPRINT_BYTES`] (look-alikes', see the module docs)
/// can be matched and heads compared beyond it. A compressed file's text stays as it is.
pub fn extend_text(file: &File, head: &mut Head, len: usize) -> io::Result<()> {
    let cap = FileId::FINGERPRINT_BYTES as usize;
    if head.compression == Compression::None && head.text.len() >= cap && len > head.text.len() {
        head.text = read_at_most(file, head.hole, len)?;
    }
    Ok(())
}

/// What a file whose head reproduces another live file's fingerprint is to that file (see
/// [`distinguish`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookalike {
    /// Its text is the other's as far as both go: another name for it, or a copy.
    Same,
    /// A different file that starts alike: its own, longer fingerprint (length, CRC-32),
    /// through the end of its first line that differs from the other's.
    Differs((u32, u32)),
    /// It differs, but that line is not complete yet: looked at again later.
    Undecided,
}

/// Tells a file (`mine`, its first text bytes) from another live file of the same
/// fingerprint (`other`, the first `fp_len` bytes of both reproduce it): a *look-alike*, two
/// logs with the same header and first rows (two sensors, two directories), differs from
/// the other within the bytes compared (up to [`LOOKALIKE_BYTES`]); its identity is then the
/// longer fingerprint through its first differing line, which the other does not reproduce
/// (the registry takes the longest fingerprint a file reproduces), so each keeps its own
/// position, across restarts too. Files alike through all the bytes compared (at most
/// [`LOOKALIKE_BYTES`]) are one file.
pub fn distinguish(mine: &[u8], other: &[u8], fp_len: usize) -> Lookalike {
    let cap = LOOKALIKE_BYTES;
    let Some(d) = mine.iter().zip(other).position(|(a, b)| a != b) else {
        return Lookalike::Same;
    };
    if d < fp_len {
        // The other does not reproduce the fingerprint (it is no longer that file).
        return Lookalike::Same;
    }
    let end = match memchr::memchr(b'\n', &mine[d..]) {
        Some(i) => (d + i + 1).min(cap),
        None if mine.len() >= cap => cap,
        None => return Lookalike::Undecided,
    };
    Lookalike::Differs((end as u32, crc32fast::hash(&mine[..end])))
}

/// How many bytes of `text` the fingerprint covers, `None` while not trusted. With `whole`,
/// `text` is the whole file, so a last data line needs no newline.
fn fingerprint_len(text: &[u8], whole: bool) -> Option<usize> {
    let cap = FileId::FINGERPRINT_BYTES as usize;
    let mut at = 0;
    while at < text.len() {
        let end = memchr::memchr(b'\n', &text[at..]).map(|i| at + i + 1);
        let line = &text[at..end.unwrap_or(text.len())];
        let data = line
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|&b| b != b'#');
        match end {
            Some(end) if data => return Some(end.min(cap)),
            Some(end) => at = end,
            None if data && whole => return Some(text.len().min(cap)),
            None => break,
        }
    }
    (text.len() >= cap).then_some(cap)
}

/// Up to `len` bytes of `file` from `offset` (fewer at its end).
fn read_at_most(file: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let n = read_full(file, offset, &mut buf)?;
    buf.truncate(n);
    Ok(buf)
}

/// Fills `buf` from `file` at `offset` as far as the file goes; the bytes read.
pub(crate) fn read_full(file: &File, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], offset + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &[u8] = b"#separator \\x09\n#path\tconn\n#open\t2009-11-18-08-00-00\n#fields\tts\tuid\n#types\ttime\tstring\n";

    /// A header alone is not trusted; the first data line makes the fingerprint, which does
    /// not change as the file grows.
    #[test]
    fn trusted_from_the_first_data_line_on() {
        let mut text = HEADER.to_vec();
        assert_eq!(fingerprint_len(&text, false), None);
        text.extend_from_slice(b"1258531221.486539\tC1");
        assert_eq!(fingerprint_len(&text, false), None);
        assert_eq!(fingerprint_len(&text, true), Some(text.len()));
        text.extend_from_slice(b"\n");
        let n = text.len();
        assert_eq!(fingerprint_len(&text, false), Some(n));
        text.extend_from_slice(b"1258531222.000000\tC2\n");
        assert_eq!(fingerprint_len(&text, false), Some(n));
        assert_eq!(fingerprint_len(b"{\"ts\":1}\n{", false), Some(9));
        assert_eq!(fingerprint_len(b"\n\n#x\n", true), None);
    }

    /// A first line longer than the fingerprint's bytes: they are enough.
    #[test]
    fn a_long_first_line_is_capped() {
        let cap = FileId::FINGERPRINT_BYTES as usize;
        let text = vec![b'x'; cap + 10];
        assert_eq!(fingerprint_len(&text[..cap - 1], false), None);
        assert_eq!(fingerprint_len(&text[..cap], false), Some(cap));
        assert_eq!(fingerprint_len(&text, false), Some(cap));
    }

    /// NUL bytes at the start (a hole) are not content: the fingerprint is taken after them,
    /// so two holed files with different first rows differ, and a holed file is the file
    /// without its hole.
    #[test]
    fn a_hole_is_not_content() {
        let dir = tempfile::tempdir().unwrap();
        let head = |name: &str, hole: usize, text: &[u8]| {
            let path = dir.path().join(name);
            let mut bytes = vec![0u8; hole];
            bytes.extend_from_slice(text);
            std::fs::write(&path, bytes).unwrap();
            read_head(&File::open(&path).unwrap(), Compression::Auto).unwrap()
        };
        let plain = head("a", 0, b"row one\nrow two\n");
        let holed = head("b", 70_000, b"row one\nrow two\n");
        let other = head("c", 70_000, b"row six\nrow two\n");
        assert_eq!(holed.hole, 70_000);
        assert_eq!(holed.compression, Compression::None);
        assert!(holed.fingerprint().is_some());
        assert_eq!(holed.fingerprint(), plain.fingerprint());
        assert_ne!(holed.fingerprint(), other.fingerprint());
        assert_eq!(head("d", 5, b"").hole, 5);
    }

    /// A gzip file is known by its text: its fingerprint is the plain file's.
    #[test]
    fn compressed_and_plain_share_a_fingerprint() {
        use std::io::Write;
        let mut text = HEADER.to_vec();
        text.extend_from_slice(b"1258531221.486539\tC1\n1258531222.1\tC2\n");
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("conn.log");
        std::fs::write(&plain, &text).unwrap();
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&text).unwrap();
        let gz = dir.path().join("conn.log.gz");
        std::fs::write(&gz, e.finish().unwrap()).unwrap();
        let a = read_head(&File::open(&plain).unwrap(), Compression::Auto).unwrap();
        let b = read_head(&File::open(&gz).unwrap(), Compression::Auto).unwrap();
        assert_eq!(b.compression, Compression::Gzip);
        assert!(a.fingerprint().is_some());
        assert_eq!(a.fingerprint(), b.fingerprint());
        let (fp_len, fp_crc) = a.fingerprint().unwrap();
        let id = FileId {
            dev: 1,
            ino: 2,
            fp_len,
            fp_crc,
        };
        assert!(a.matches(&id) && b.matches(&id));
        // A checkpoint from before this rule: the first stored bytes of the gzip file.
        let legacy = FileId {
            dev: 1,
            ino: 3,
            fp_len: b.raw.len() as u32,
            fp_crc: crc32fast::hash(&b.raw),
        };
        assert!(b.matches(&legacy));
        assert!(!a.matches(&legacy));
    }

    /// A look-alike (same header and first row, another second row) gets the fingerprint
    /// through its differing line; a copy, or a file not differing yet, is the same file.
    #[test]
    fn lookalikes_are_told_apart() {
        let mut a = HEADER.to_vec();
        a.extend_from_slice(b"1.0\tC1\n");
        let fp = fingerprint_len(&a, false).unwrap();
        let mut b = a.clone();
        a.extend_from_slice(b"2.0\tC2\n3.0\tC3\n");
        assert_eq!(distinguish(&a[..fp + 4], &a, fp), Lookalike::Same);
        b.extend_from_slice(b"2.0\tX2");
        assert_eq!(distinguish(&b, &a, fp), Lookalike::Undecided);
        b.extend_from_slice(b"\n");
        let end = b.len();
        let got = distinguish(&b, &a, fp);
        assert_eq!(got, Lookalike::Differs((end as u32, crc32fast::hash(&b))));
        // The other does not reproduce it; both reproduce the short one.
        let head = |t: &[u8]| Head {
            raw: t.to_vec(),
            text: t.to_vec(),
            compression: Compression::None,
            hole: 0,
        };
        let id = |(fp_len, fp_crc)| FileId {
            dev: 0,
            ino: 0,
            fp_len,
            fp_crc,
        };
        let Lookalike::Differs(long) = got else {
            unreachable!()
        };
        assert!(head(&b).matches(&id(long)) && !head(&a).matches(&id(long)));
        // Alike through more than the fingerprint's bytes: told apart further on, with a
        // fingerprint longer than them.
        let mut long = HEADER.to_vec();
        while long.len() < FileId::FINGERPRINT_BYTES as usize + 900 {
            long.extend_from_slice(b"1.0\tC1\n");
        }
        let (mut x, mut y) = (long.clone(), long.clone());
        x.extend_from_slice(b"2.0\tX\n");
        y.extend_from_slice(b"2.0\tY\n");
        match distinguish(&y, &x, fp) {
            Lookalike::Differs((n, crc)) => {
                assert_eq!(n as usize, y.len());
                assert_eq!(crc, crc32fast::hash(&y));
            }
            other => panic!("{other:?}"),
        }
        // Different within the fingerprint: not this identity any more.
        let mut c = HEADER.to_vec();
        c.extend_from_slice(b"9.0\tC9\n2.0\tC2\n");
        assert_eq!(distinguish(&a, &c, fp), Lookalike::Same);
    }
}
