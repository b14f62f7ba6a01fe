//! Compression of stored batches: the codecs and their levels, the two layouts, their
//! stored byte, and inflating a frame. A leaf of `segment/`: the column container
//! (`columns.rs`) and the packer (`codec.rs`) build on it.

use crate::setting::{Choice, ChoiceName};

/// How the rows of a batch are stored in a segment (`--compression`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Codec {
    /// Not compressed: rows and offsets are read zero-copy from the map.
    None,
    /// lz4 (one raw block): fast to write and read, larger.
    Lz4,
    /// zstd (one frame): the default.
    #[default]
    Zstd,
}

impl Choice for Codec {
    const WHAT: &'static str = "--compression";
    const CHOICES: &'static [ChoiceName<Codec>] = &[
        ChoiceName::new(
            "zstd",
            Codec::Zstd,
            "zstd: the smallest archive at import speed (the default)",
        ),
        ChoiceName::new(
            "lz4",
            Codec::Lz4,
            "lz4: the fastest to write and read, about twice zstd's size",
        ),
        ChoiceName::new(
            "none",
            Codec::None,
            "uncompressed: read zero-copy from the map, several times larger",
        ),
    ];
}

crate::choice!(Codec);

impl Codec {
    /// The byte stored in a batch's `codec` field (`schemas/segment.fbs`, enum `Codec`).
    pub fn to_byte(self) -> u8 {
        match self {
            Codec::None => 0,
            Codec::Lz4 => 1,
            Codec::Zstd => 2,
        }
    }

    /// The codec of a stored byte (`None` for one this weir does not know).
    pub fn from_byte(b: u8) -> Option<Codec> {
        match b {
            0 => Some(Codec::None),
            1 => Some(Codec::Lz4),
            2 => Some(Codec::Zstd),
            _ => None,
        }
    }

    /// The level used when none is given: zstd 1, the fastest positive level (measured on the
    /// Zeek corpus: 5-10% above the `.log.gz` size with sketches, level 3 only 1-5% smaller,
    /// level 9 at or below the `.log.gz` but about twice the compression time; on W1000 level 1
    /// adds about 1 s of CPU to an import); lz4 and none have no levels (0).
    pub fn default_level(self) -> i32 {
        match self {
            Codec::Zstd => 1,
            Codec::Lz4 | Codec::None => 0,
        }
    }

    /// The levels accepted: zstd's (negative ones are faster and larger); only 0 otherwise.
    pub fn levels(self) -> std::ops::RangeInclusive<i32> {
        match self {
            Codec::Zstd => zstd_safe::min_c_level()..=zstd_safe::max_c_level(),
            Codec::Lz4 | Codec::None => 0..=0,
        }
    }
}

/// How a compressed batch's bytes are arranged before compression (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// Rows (format 3): the rows' lengths as varints and the rows, one frame.
    #[default]
    Rows,
    /// Columns (format 4): each field's values back to back, one frame per column.
    Columns,
}

impl Layout {
    /// The word `weir inspect` shows.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Rows => "rows",
            Layout::Columns => "columns",
        }
    }
}

/// The byte stored in a batch's `codec` field and a WAL record for a codec and layout: the
/// codec's own byte in the row layout (and for [`Codec::None`]); 3 (`Lz4Columns`) and 4
/// (`ZstdColumns`) in the column layout.
pub fn stored_byte(codec: Codec, layout: Layout) -> u8 {
    match (codec, layout) {
        (Codec::Lz4, Layout::Columns) => 3,
        (Codec::Zstd, Layout::Columns) => 4,
        (c, _) => c.to_byte(),
    }
}

/// The codec and layout of a stored byte (`None` for one this weir does not know).
pub fn from_stored_byte(b: u8) -> Option<(Codec, Layout)> {
    match b {
        3 => Some((Codec::Lz4, Layout::Columns)),
        4 => Some((Codec::Zstd, Layout::Columns)),
        b => Codec::from_byte(b).map(|c| (c, Layout::Rows)),
    }
}

/// A codec and its level: what a segment writer compresses batches with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compression {
    /// The codec.
    pub codec: Codec,
    /// Its level (see [`Codec::levels`]).
    pub level: i32,
}

impl Default for Compression {
    fn default() -> Compression {
        Compression::new(Codec::default())
    }
}

impl Compression {
    /// `codec` at its default level.
    pub fn new(codec: Codec) -> Compression {
        Compression {
            codec,
            level: codec.default_level(),
        }
    }

    /// No compression.
    pub const NONE: Compression = Compression {
        codec: Codec::None,
        level: 0,
    };
}

/// The memory of a decompressed batch: returned to a small pool when dropped, so that a scan
/// reuses the same few buffers instead of faulting in fresh pages for every batch.
#[derive(Debug, Default)]
pub struct RowBuf(Vec<u8>);

/// Buffers kept for reuse (a scan holds one or two batches at a time).
static POOL: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
const POOL_MAX: usize = 4;

impl RowBuf {
    /// An empty buffer of at least `capacity` bytes, from the pool when it has one.
    pub(crate) fn take(capacity: usize) -> RowBuf {
        let reused = POOL.lock().ok().and_then(|mut p| p.pop());
        let mut v = reused.unwrap_or_default();
        v.clear();
        v.reserve_exact(capacity);
        RowBuf(v)
    }

    /// A buffer of exactly `len` bytes, from the pool when it has one (the one with the most
    /// bytes), holding whatever its last user left there (zeros past that): for a caller
    /// that writes every byte before it reads it, and would otherwise zero them all first (a
    /// batch's every column, for one printed row: 7% of a W1000 uid export).
    pub(crate) fn take_len(len: usize) -> RowBuf {
        let reused = POOL.lock().ok().and_then(|mut p| {
            let fullest = (0..p.len()).max_by_key(|&i| p[i].len())?;
            Some(p.swap_remove(fullest))
        });
        let mut v = reused.unwrap_or_default();
        v.truncate(len);
        v.resize(len, 0);
        RowBuf(v)
    }

    /// The buffer, to fill.
    pub(crate) fn vec_mut(&mut self) -> &mut Vec<u8> {
        &mut self.0
    }
}

impl std::ops::Deref for RowBuf {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.0
    }
}

impl Drop for RowBuf {
    fn drop(&mut self) {
        let v = std::mem::take(&mut self.0);
        if let Ok(mut pool) = POOL.lock() {
            if pool.len() < POOL_MAX {
                pool.push(v);
            }
        }
    }
}

thread_local! {
    /// The zstd decompression context of this thread.
    static DCTX: std::cell::RefCell<Option<zstd_safe::DCtx<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Decompresses `stored` into exactly the bytes of `out` (a frame that inflates to more or
/// fewer is an error).
pub(crate) fn inflate_into(codec: Codec, stored: &[u8], out: &mut [u8]) -> Result<(), String> {
    let want = out.len();
    let n = match codec {
        Codec::None => return Err("a compressed column without a codec".into()),
        Codec::Zstd => DCTX
            .with(|d| {
                // A context per thread, reused: creating one per frame cost 6% of an export.
                let mut d = d.borrow_mut();
                let d = d.get_or_insert_with(zstd_safe::DCtx::create);
                d.decompress(out, stored)
            })
            .map_err(|code| format!("zstd: {}", zstd_safe::get_error_name(code)))?,
        Codec::Lz4 => {
            lz4_flex::block::decompress_into(stored, out).map_err(|e| format!("lz4: {e}"))?
        }
    };
    if n != want {
        return Err(format!("{n} bytes decompressed, {want} expected"));
    }
    Ok(())
}

/// Decompresses exactly `raw_size` bytes into `out` (empty, with at least that capacity).
pub(crate) fn inflate(
    codec: Codec,
    stored: &[u8],
    raw_size: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    match codec {
        Codec::None => out.extend_from_slice(stored),
        Codec::Zstd => {
            // Into the spare capacity (bounded): a frame that inflates to more or less than
            // `raw_size` is an error.
            let n = zstd_safe::decompress(&mut *out, stored)
                .map_err(|code| format!("zstd: {}", zstd_safe::get_error_name(code)))?;
            if n != raw_size {
                return Err(format!("zstd: {n} bytes decompressed, {raw_size} expected"));
            }
        }
        Codec::Lz4 => {
            out.resize(raw_size, 0);
            let n =
                lz4_flex::block::decompress_into(stored, out).map_err(|e| format!("lz4: {e}"))?;
            if n != raw_size {
                return Err(format!("lz4: {n} bytes decompressed, {raw_size} expected"));
            }
        }
    }
    Ok(())
}
