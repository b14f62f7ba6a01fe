//! Compression of a source: naming it, detecting it by magic bytes, and undoing it.

use std::sync::Arc;

use tokio::io::BufReader;

use super::counters::{Counted, SourceCounters};
use super::input::BoxReader;
use super::reader::peek;
use super::verify::{VerifiedReader, Verifier};
use crate::setting::{Choice, ChoiceName};

/// How a source is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Decide by the magic bytes (the default).
    #[default]
    Auto,
    /// gzip, possibly several concatenated members.
    Gzip,
    /// zstd, possibly several frames.
    Zstd,
    /// Not compressed.
    None,
}

impl Choice for Compression {
    const WHAT: &'static str = "decompression";
    const CHOICES: &'static [ChoiceName<Compression>] = &[
        ChoiceName::new(
            "auto",
            Compression::Auto,
            "gzip or zstd by their magic bytes, otherwise none",
        ),
        ChoiceName::new(
            "gzip",
            Compression::Gzip,
            "gzip, possibly several concatenated members",
        ),
        ChoiceName::alias("gz", Compression::Gzip),
        ChoiceName::new("zstd", Compression::Zstd, "zstd, possibly several frames"),
        ChoiceName::alias("zst", Compression::Zstd),
        ChoiceName::new("none", Compression::None, "read the bytes as they are"),
    ];
}

crate::choice!(Compression);

impl Compression {
    /// The compression that the first bytes of a stream announce.
    pub fn detect(prefix: &[u8]) -> Compression {
        if prefix.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if prefix.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

/// Undoes the compression of `reader` (detected by magic bytes under [`Compression::Auto`]);
/// returns the compression found and the decompressed bytes, counted as decoded bytes.
///
/// Each gzip member's and zstd frame's output is passed on only once its checksum verified
/// (up to a limit; see [`verify`](super::verify)): a damaged member or frame is an error and
/// none of its rows are parsed.
pub async fn decompress(
    reader: BoxReader,
    compression: Compression,
    counters: &Arc<SourceCounters>,
) -> std::io::Result<(Compression, BoxReader)> {
    let (found, reader) = match compression {
        Compression::Auto => {
            let (prefix, reader) = peek(reader, 4, |p| {
                !p.is_empty() && p[0] != 0x1f && p[0] != 0x28
                    || p.len() >= 2 && p[..2] == [0x1f, 0x8b]
            })
            .await?;
            (Compression::detect(&prefix), reader)
        }
        c => (c, reader),
    };
    let out: BoxReader = match found {
        Compression::Gzip => Box::pin(VerifiedReader::new(
            BufReader::with_capacity(256 << 10, reader),
            Verifier::gzip(0),
        )),
        Compression::Zstd => Box::pin(VerifiedReader::new(
            BufReader::with_capacity(256 << 10, reader),
            Verifier::zstd(0)?,
        )),
        Compression::None | Compression::Auto => reader,
    };
    Ok((found, Box::pin(Counted::decoded(out, counters.clone()))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_bytes() {
        assert_eq!(Compression::detect(&[0x1f, 0x8b, 8, 0]), Compression::Gzip);
        assert_eq!(
            Compression::detect(&[0x28, 0xb5, 0x2f, 0xfd]),
            Compression::Zstd
        );
        assert_eq!(Compression::detect(b"#sep"), Compression::None);
        assert_eq!(Compression::detect(&[0x1f]), Compression::None);
    }

    #[test]
    fn parse_names() {
        assert_eq!("gzip".parse::<Compression>(), Ok(Compression::Gzip));
        let err = "lz4".parse::<Compression>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value \"lz4\"; expected one of: auto, gzip, zstd, none"
        );
    }
}
