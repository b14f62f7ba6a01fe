//! Compressed batches (formats 3, 4 and 6): the codecs, their levels, the two layouts, and
//! the one place where a batch's rows are packed and unpacked.
//!
//! Format 4 stores a batch whose rows fit the schema in *columns* ([`Layout::Columns`], the
//! byte layout is in `columns.rs`), each column compressed on its own, so that a query
//! inflates only the columns it reads (format 6: time and duration columns as integer planes
//! where that is smaller, `planes.rs`); the packer falls back to the *row* layout of format 3
//! ([`Layout::Rows`], below) for any other batch, and to storing the rows uncompressed when
//! neither is smaller than the rows and their u32 offsets (so a stored batch is never larger
//! than that, which the segment builder's worst-case accounting relies on).
//!
//! In the row layout a compressed batch stores in `data` the compression of its *raw* bytes: the length of every
//! row as an unsigned LEB128 varint (7 bits per byte, low bits first, high bit set on every
//! byte but the last; a row of under 128 bytes takes one byte), then the msgpack rows back to
//! back; its `offsets` vector is empty. Lengths rather than u32 offsets: they cost a tenth as
//! much once compressed (on Zeek's conn.log, u32 offsets made the archive 9% larger).
//! `raw_size` is the length of the raw bytes, so a reader allocates exactly that and never
//! more (a damaged frame that would inflate further is an error), and the rows' lengths must
//! add up to exactly the bytes after them. zstd stores one frame (`ZSTD_compress`), lz4 one
//! raw block (`lz4_flex::block`, no frame, no size prefix). Readers get the rows followed by
//! their offsets as little-endian u32, the layout of an uncompressed batch's `data` and
//! `offsets` concatenated.

use super::columns;

use super::compress::{inflate, Codec, Compression, Layout, RowBuf};

/// A batch's rows split into columns (`columns::split`), with how each may be stored.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SplitRows<'a> {
    /// The columns' msgpack values.
    pub(crate) cols: &'a [Vec<u8>],
    /// Per column: its plan for integer planes (`planes::plan`; missing: none).
    pub(crate) planes: &'a [Option<bool>],
    /// Per column: whether it may be marked (`marked::plan`; missing: no).
    pub(crate) marked: &'a [bool],
    /// Per column: its encoded bytes as a dictionary (`dict.rs`), which the preparer made
    /// before (empty or missing: not a dictionary).
    pub(crate) dicts: &'a [Vec<u8>],
    /// Per column: the hash tag of its values if it may be cut into blocks (`blocks::plan`;
    /// missing: no).
    pub(crate) blocked: &'a [Option<u8>],
}

/// Compresses batches; keeps its zstd context between them.
pub(crate) struct Packer {
    compression: Compression,
    zstd: Option<zstd_safe::CCtx<'static>>,
    raw: Vec<u8>,
    out: Vec<u8>,
    /// One compressed column (or the compressed rows), the columns' stored bytes, and the
    /// column layout's header.
    frame: Vec<u8>,
    frames: Vec<u8>,
    header: Vec<u8>,
    /// Integer planes of one column (`planes.rs`) and their encoder.
    planes: super::planes::Encoder,
    encoded: Vec<u8>,
    /// A column's blocks (`blocks.rs`) and their stored bytes.
    cutter: super::blocks::Cutter,
    blocks: Vec<u8>,
}

impl std::fmt::Debug for Packer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packer")
            .field("compression", &self.compression)
            .finish_non_exhaustive()
    }
}

impl Packer {
    pub(crate) fn new(compression: Compression) -> Packer {
        Packer {
            compression,
            zstd: None,
            raw: Vec::new(),
            out: Vec::new(),
            frame: Vec::new(),
            frames: Vec::new(),
            header: Vec::new(),
            planes: super::planes::Encoder::default(),
            encoded: Vec::new(),
            cutter: super::blocks::Cutter::default(),
            blocks: Vec::new(),
        }
    }

    pub(crate) fn compression(&self) -> Compression {
        self.compression
    }

    /// Compresses the rows `data` starting at `offsets` of a batch of `fields` fields: in
    /// columns when every row fits, else in rows (see the module docs; the writer splits the
    /// rows itself, see [`Packer::pack_split`]). Returns the layout,
    /// the stored bytes and the raw length, or `None` when the codec is [`Codec::None`] or
    /// compressing did not make the batch smaller than its rows and u32 offsets (it is then
    /// stored uncompressed).
    #[cfg(test)]
    pub(crate) fn pack(
        &mut self,
        data: &[u8],
        offsets: &[u32],
        fields: usize,
    ) -> Option<(Layout, &[u8], usize)> {
        self.pack_planned(data, offsets, fields, &vec![None; fields])
    }

    /// [`Packer::pack`] with the columns `plans` marks (`planes::plan`) stored as integer
    /// planes where their values allow.
    #[cfg(test)]
    pub(crate) fn pack_planned(
        &mut self,
        data: &[u8],
        offsets: &[u32],
        fields: usize,
        plans: &[Option<bool>],
    ) -> Option<(Layout, &[u8], usize)> {
        self.pack_encoded(data, offsets, fields, plans, &[], &[])
    }

    /// [`Packer::pack_planned`] with the columns `dicts` marks stored as dictionaries
    /// (`dict.rs`) where their values allow, as the preparer makes them, and those `marked`
    /// marks stored marked (`marked.rs`) where their values allow.
    #[cfg(test)]
    pub(crate) fn pack_encoded(
        &mut self,
        data: &[u8],
        offsets: &[u32],
        fields: usize,
        plans: &[Option<bool>],
        dicts: &[bool],
        marked: &[bool],
    ) -> Option<(Layout, &[u8], usize)> {
        if self.compression.codec == Codec::None {
            return None;
        }
        let mut cols = Vec::new();
        let split = columns::split(data, offsets, fields, &mut cols);
        let mut encoded = Vec::new();
        let wanted = |c: usize| dicts.get(c).copied().unwrap_or(false);
        super::dict::Encoder::default().encode_all(&cols, offsets.len(), wanted, &mut encoded);
        let split = split.then_some(SplitRows {
            cols: &cols,
            planes: plans,
            marked,
            dicts: &encoded,
            blocked: &[],
        });
        self.pack_split(data.len(), || data, offsets, split)
    }

    /// [`Packer::pack`] with the columns `blocked` gives a hash tag cut into blocks of rows
    /// (`blocks.rs`) where they are large enough, as the preparer asks.
    #[cfg(test)]
    pub(crate) fn pack_blocked(
        &mut self,
        data: &[u8],
        offsets: &[u32],
        fields: usize,
        blocked: &[Option<u8>],
    ) -> Option<(Layout, &[u8], usize)> {
        let mut cols = Vec::new();
        let split = columns::split(data, offsets, fields, &mut cols);
        let split = split.then_some(SplitRows {
            cols: &cols,
            planes: &[],
            marked: &[],
            dicts: &[],
            blocked,
        });
        self.pack_split(data.len(), || data, offsets, split)
    }

    /// [`Packer::pack`] with the rows (`data_len` bytes, which `data` gives: called only when
    /// they are stored in the row layout) already split into `cols` (`columns::split`, or a
    /// columnar batch's columns; `None`: they do not fit the column layout), each with its
    /// plan (`planes::plan`).
    pub(crate) fn pack_split<'d>(
        &mut self,
        data_len: usize,
        data: impl FnOnce() -> &'d [u8],
        offsets: &[u32],
        cols: Option<SplitRows<'_>>,
    ) -> Option<(Layout, &[u8], usize)> {
        if self.compression.codec == Codec::None {
            return None;
        }
        let bound = data_len + 4 * offsets.len();
        if let Some(split) = cols {
            if self
                .pack_columns(split, offsets.len())
                .is_some_and(|n| n < bound)
            {
                return Some((Layout::Columns, &self.out[..], data_len));
            }
        }
        self.pack_rows(data(), offsets)
            .filter(|&n| n < bound)
            .map(|_| (Layout::Rows, &self.out[..], self.raw.len()))
    }

    /// Compresses `src` into `self.frame` (cleared); `None` when the codec fails.
    fn compress(&mut self, src: &[u8]) -> Option<()> {
        let frame = &mut self.frame;
        frame.clear();
        let n = match self.compression.codec {
            Codec::Zstd => {
                frame.reserve(zstd_safe::compress_bound(src.len()));
                let cctx = self.zstd.get_or_insert_with(zstd_safe::CCtx::create);
                cctx.compress(&mut *frame, src, self.compression.level)
                    .ok()?
            }
            Codec::Lz4 => {
                frame.resize(lz4_flex::block::get_maximum_output_size(src.len()), 0);
                lz4_flex::block::compress_into(src, frame).ok()?
            }
            Codec::None => return None,
        };
        frame.truncate(n);
        Some(())
    }

    /// The column layout of `cols` into `self.out` (which may have been taken: see
    /// [`Packer::take_packed`]); returns its length.
    fn pack_columns(&mut self, split: SplitRows<'_>, rows: usize) -> Option<usize> {
        let SplitRows {
            cols,
            planes: plans,
            marked,
            dicts,
            blocked,
        } = split;
        self.header.clear();
        self.frames.clear();
        // The checksummed header (format 9): two 0s, the column count, and each column's
        // encoding and checksum.
        super::varint::push_varint(&mut self.header, 0);
        super::varint::push_varint(&mut self.header, 0);
        super::varint::push_varint(&mut self.header, cols.len());
        // Out of `self` while a column borrows it.
        let mut encoded = std::mem::take(&mut self.encoded);
        let mut cutter = std::mem::take(&mut self.cutter);
        for (c, raw) in cols.iter().enumerate() {
            super::varint::push_varint(&mut self.header, raw.len());
            // The bytes of a blocked column's directory, which its checksum covers.
            let mut directory = None;
            let delta = plans.get(c).copied().flatten();
            let dict = dicts.get(c).filter(|d| !d.is_empty());
            let col = match (dict, delta) {
                (Some(dict), _) => {
                    super::varint::push_varint(&mut self.header, columns::DICT);
                    super::varint::push_varint(&mut self.header, dict.len());
                    dict
                }
                (None, Some(delta)) if self.planes.encode(raw, rows, delta, &mut encoded) => {
                    super::varint::push_varint(&mut self.header, columns::PLANES);
                    super::varint::push_varint(&mut self.header, encoded.len());
                    &encoded
                }
                (None, None)
                    if marked.get(c) == Some(&true)
                        && super::marked::encode(raw, rows, &mut encoded) =>
                {
                    super::varint::push_varint(&mut self.header, columns::MARKED);
                    super::varint::push_varint(&mut self.header, encoded.len());
                    &encoded
                }
                (None, None)
                    if blocked.get(c).copied().flatten().is_some_and(|tag| {
                        super::blocks::wanted(raw.len(), rows) && cutter.cut(raw, rows, tag)
                    }) =>
                {
                    directory = Some(self.pack_blocks(raw, &cutter, &mut encoded));
                    super::varint::push_varint(&mut self.header, columns::BLOCKS);
                    super::varint::push_varint(&mut self.header, encoded.len());
                    &encoded
                }
                _ => {
                    super::varint::push_varint(&mut self.header, columns::VALUES);
                    raw
                }
            };
            let at = self.frames.len();
            if let Some(dir) = directory {
                // Its blocks are compressed each on its own; the column is stored as it is.
                self.frames.extend_from_slice(col);
                super::varint::push_varint(&mut self.header, col.len());
                let crc = crc32fast::hash(&col[..dir]);
                self.header.extend_from_slice(&crc.to_le_bytes());
                continue;
            }
            let compress = col.len() >= columns::MIN_COMPRESS;
            let packed = match self.compression.codec {
                // zstd writes its frame right after the columns before it (no copy).
                Codec::Zstd if compress => {
                    self.frames.reserve(zstd_safe::compress_bound(col.len()));
                    let cctx = self.zstd.get_or_insert_with(zstd_safe::CCtx::create);
                    let mut tail = std::io::Cursor::new(&mut self.frames);
                    tail.set_position(at as u64);
                    cctx.compress(&mut tail, col, self.compression.level)
                        .is_ok_and(|n| n < col.len())
                }
                _ => {
                    let packed =
                        compress && self.compress(col).is_some() && self.frame.len() < col.len();
                    if packed {
                        self.frames.extend_from_slice(&self.frame);
                    }
                    packed
                }
            };
            if !packed {
                self.frames.truncate(at);
                self.frames.extend_from_slice(col);
            }
            super::varint::push_varint(&mut self.header, self.frames.len() - at);
            let crc = crc32fast::hash(&self.frames[at..]);
            self.header.extend_from_slice(&crc.to_le_bytes());
        }
        self.encoded = encoded;
        self.cutter = cutter;
        self.out.clear();
        self.out
            .reserve_exact(self.header.len() + self.frames.len());
        self.out.extend_from_slice(&self.header);
        self.out.extend_from_slice(&self.frames);
        Some(self.out.len())
    }

    /// The blocked column (`blocks.rs`) of the values `raw`, cut by `cutter`, into `out`
    /// (cleared): its directory, then each block compressed where that makes it smaller.
    /// Returns the directory's length.
    fn pack_blocks(
        &mut self,
        raw: &[u8],
        cutter: &super::blocks::Cutter,
        out: &mut Vec<u8>,
    ) -> usize {
        let mut blocks = std::mem::take(&mut self.blocks);
        blocks.clear();
        let mut entries = Vec::with_capacity(cutter.bounds.len());
        for w in cutter.bounds.windows(2) {
            let src = &raw[w[0]..w[1]];
            let at = blocks.len();
            if src.len() >= columns::MIN_COMPRESS
                && self.compress(src).is_some()
                && self.frame.len() < src.len()
            {
                blocks.extend_from_slice(&self.frame);
            } else {
                blocks.extend_from_slice(src);
            }
            entries.push((blocks.len() - at, crc32fast::hash(&blocks[at..])));
        }
        out.clear();
        cutter.push_directory(&entries, out);
        let dir = out.len();
        out.extend_from_slice(&blocks);
        self.blocks = blocks;
        dir
    }

    /// The stored bytes of the last [`Packer::pack_split`], taken out of the packer (which
    /// allocates anew for the next batch) instead of copied.
    pub(crate) fn take_packed(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// The row layout of format 3 into `self.out` (raw bytes in `self.raw`); returns its length.
    fn pack_rows(&mut self, data: &[u8], offsets: &[u32]) -> Option<usize> {
        self.raw.clear();
        self.raw.reserve(data.len() + 2 * offsets.len());
        for (i, &o) in offsets.iter().enumerate() {
            let end = offsets.get(i + 1).map_or(data.len(), |&e| e as usize);
            super::varint::push_varint(&mut self.raw, end.saturating_sub(o as usize));
        }
        self.raw.extend_from_slice(data);
        let raw = std::mem::take(&mut self.raw);
        let ok = self.compress(&raw);
        self.raw = raw;
        ok?;
        std::mem::swap(&mut self.out, &mut self.frame);
        Some(self.out.len())
    }
}

/// Decompresses a batch of `rows` rows from its stored bytes in `layout`, whose raw bytes
/// must be exactly `raw_size` bytes, into its rows followed by their offsets as little-endian
/// u32. Returns those and the length of the rows. `Err` says what is wrong (for a corruption
/// message naming segment and batch).
pub(crate) fn unpack(
    codec: Codec,
    layout: Layout,
    stored: &[u8],
    raw_size: usize,
    rows: usize,
) -> Result<(RowBuf, usize), String> {
    if layout == Layout::Columns {
        return columns::assemble(codec, stored, raw_size, rows, None, None);
    }
    let mut out = RowBuf::take(raw_size + 4 * rows);
    let buf = out.vec_mut();
    inflate(codec, stored, raw_size, buf)?;
    let mut lengths = Vec::with_capacity(rows);
    let mut pos = 0;
    for _ in 0..rows {
        let mut len = 0usize;
        let mut shift = 0;
        loop {
            let b = *buf
                .get(pos)
                .ok_or("the row lengths run past the raw bytes")?;
            pos += 1;
            if shift > 28 {
                return Err("a row length does not fit in 32 bits".into());
            }
            len |= ((b & 0x7f) as usize) << shift;
            shift += 7;
            if b < 0x80 {
                break;
            }
        }
        if len == 0 {
            return Err("a row of 0 bytes".into());
        }
        lengths.push(len);
    }
    let data_len = buf.len() - pos;
    if lengths.iter().try_fold(0usize, |a, &l| a.checked_add(l)) != Some(data_len) {
        return Err(format!(
            "the row lengths do not add up to the {data_len} bytes of rows"
        ));
    }
    buf.drain(..pos);
    let mut at = 0u32;
    for l in lengths {
        buf.extend_from_slice(&at.to_le_bytes());
        at += l as u32;
    }
    Ok((out, data_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips_and_refuses_a_wrong_size() {
        let data: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i % 97).to_le_bytes())
            .collect();
        // Rows of 1 byte and of more than 128 (two-byte lengths).
        let offsets: Vec<u32> = (0..100).map(|i| i * 400).chain([39_999]).collect();
        let mut raw = data.clone();
        raw.extend(offsets.iter().flat_map(|o| o.to_le_bytes()));
        let rows = offsets.len();
        for c in [
            Compression::new(Codec::Zstd),
            Compression {
                codec: Codec::Zstd,
                level: 9,
            },
            Compression {
                codec: Codec::Zstd,
                level: -5,
            },
            Compression::new(Codec::Lz4),
        ] {
            let mut p = Packer::new(c);
            // Not msgpack rows: the row layout.
            let (layout, stored, n) = p.pack(&data, &offsets, 3).unwrap();
            assert_eq!(layout, Layout::Rows);
            assert_eq!(n, data.len() + 2 * 100 + 1);
            assert!(stored.len() < raw.len() / 4, "{c:?}: {}", stored.len());
            let r = Layout::Rows;
            let (got, len) = unpack(c.codec, r, stored, n, rows).unwrap();
            assert_eq!((&got[..], len), (&raw[..], data.len()), "{c:?}");
            assert!(unpack(c.codec, r, stored, n - 1, rows).is_err(), "{c:?}");
            assert!(unpack(c.codec, r, stored, n, rows + 1).is_err(), "{c:?}");
            assert!(unpack(c.codec, r, &stored[..stored.len() / 2], n, rows).is_err());
        }
        assert!(Packer::new(Compression::NONE)
            .pack(&data, &offsets, 3)
            .is_none());
        // Incompressible bytes are stored as they are.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect();
        assert!(Packer::new(Compression::new(Codec::Lz4))
            .pack(&noise, &[0], 1)
            .is_none());
    }

    #[test]
    fn codec_bytes_and_words() {
        for c in [Codec::None, Codec::Lz4, Codec::Zstd] {
            assert_eq!(Codec::from_byte(c.to_byte()), Some(c));
            assert_eq!(c.to_string().parse::<Codec>().unwrap(), c);
        }
        assert_eq!(Codec::from_byte(3), None);
        assert_eq!(Codec::default(), Codec::Zstd);
    }
}
