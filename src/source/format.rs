//! The event format of a source: naming it and detecting it from the decompressed bytes.

use super::input::BoxReader;
use super::reader::peek;
use crate::setting::{Choice, ChoiceName};

/// The event format of a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Format {
    /// Decide by the first bytes: magic bytes, else the first byte that is not whitespace
    /// (the default).
    #[default]
    Auto,
    /// Zeek's TSV (ASCII writer) format.
    ZeekTsv,
    /// Zeek's JSON lines.
    ZeekJson,
    /// Suricata's EVE JSON lines (see [`crate::codec::suricata`]).
    Suricata,
    /// Parquet, as weir's lake writes it (`PAR1` magic; see [`crate::codec::arrow`]).
    Parquet,
    /// Arrow IPC streams or an Arrow IPC file (continuation marker `ff ff ff ff`, or `ARROW1`).
    Arrow,
}

impl Choice for Format {
    const WHAT: &'static str = "input format";
    const CHOICES: &'static [ChoiceName<Format>] = &[
        ChoiceName::new(
            "auto",
            Format::Auto,
            "told apart by the first bytes: Parquet, Arrow IPC, Suricata EVE, Zeek JSON or TSV",
        ),
        ChoiceName::new("zeek-tsv", Format::ZeekTsv, "Zeek TSV"),
        ChoiceName::new("zeek-json", Format::ZeekJson, "Zeek JSON lines"),
        ChoiceName::new("suricata", Format::Suricata, "Suricata EVE JSON lines"),
        ChoiceName::new("parquet", Format::Parquet, "a Parquet file weir wrote"),
        ChoiceName::new(
            "arrow",
            Format::Arrow,
            "Arrow IPC streams or file weir wrote",
        ),
    ];
}

crate::choice!(Format);

impl Format {
    /// The format that the first non-whitespace byte announces (`None`: empty input).
    pub fn detect(first: Option<u8>) -> Format {
        match first {
            Some(b'{') => Format::ZeekJson,
            _ => Format::ZeekTsv,
        }
    }

    /// The format that the first bytes of the input announce: Parquet and Arrow by their
    /// magic bytes; Suricata EVE when the first line is an EVE event
    /// ([`crate::codec::suricata::is_eve_line`]: a JSON object with `event_type` and
    /// `timestamp`, without `_path`); else as [`Format::detect`] by the first byte that is not
    /// whitespace.
    pub fn detect_prefix(prefix: &[u8]) -> Format {
        use crate::codec::arrow::{ipc, PARQUET_MAGIC};
        let text = prefix.trim_ascii_start();
        let line = text.split(|&b| b == b'\n').next().unwrap_or_default();
        if text.starts_with(b"{") && crate::codec::suricata::is_eve_line(line) {
            Format::Suricata
        } else if prefix.starts_with(PARQUET_MAGIC) {
            Format::Parquet
        } else if prefix.starts_with(ipc::ARROW_FILE_MAGIC)
            || prefix.starts_with(ipc::IPC_CONTINUATION)
        {
            Format::Arrow
        } else {
            Format::detect(prefix.iter().copied().find(|b| !b.is_ascii_whitespace()))
        }
    }
}

/// Decides the format of decompressed input under [`Format::Auto`] by its first bytes
/// ([`Format::detect_prefix`]; peeking up to 64 KiB of leading whitespace, and up to 8 bytes
/// when they could be magic bytes); other formats pass through. JSON is decided by its first
/// byte, without waiting for a whole line (a live stream on stdin may be slow to end one, and
/// where the bytes peeked end changes which rows the JSON reader emits together): the source
/// then has the JSON reader tell Suricata EVE from Zeek JSON by the first line
/// ([`crate::codec::ReaderOptions::detect_eve`]).
pub async fn detect_format(
    reader: BoxReader,
    format: Format,
) -> std::io::Result<(Format, BoxReader)> {
    if format != Format::Auto {
        return Ok((format, reader));
    }
    let first = |p: &[u8]| p.iter().copied().find(|b| !b.is_ascii_whitespace());
    // `P`, `A` and 0xff may start magic bytes: read 8 bytes to tell.
    let decided =
        |p: &[u8]| p.len() >= 8 || first(p).is_some_and(|b| !matches!(b, b'P' | b'A' | 0xff));
    let (prefix, reader) = peek(reader, 64 << 10, decided).await?;
    Ok((Format::detect_prefix(&prefix), reader))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_byte() {
        assert_eq!(Format::detect(Some(b'{')), Format::ZeekJson);
        assert_eq!(Format::detect(Some(b'#')), Format::ZeekTsv);
        assert_eq!(Format::detect(None), Format::ZeekTsv);
    }

    #[test]
    fn magic_bytes() {
        assert_eq!(Format::detect_prefix(b"PAR1\x15\x04"), Format::Parquet);
        assert_eq!(Format::detect_prefix(b"ARROW1\0\0"), Format::Arrow);
        assert_eq!(
            Format::detect_prefix(&[0xff, 0xff, 0xff, 0xff, 8]),
            Format::Arrow
        );
        assert_eq!(Format::detect_prefix(b"  {\"a\":1}"), Format::ZeekJson);
        assert_eq!(Format::detect_prefix(b"PAR"), Format::ZeekTsv);
        let eve =
            b"\n {\"timestamp\":\"2011-08-12T14:52:57.716360+0200\",\"event_type\":\"flow\"}\n{";
        assert_eq!(Format::detect_prefix(eve), Format::Suricata);
        assert_eq!(
            Format::detect_prefix(b"{\"_path\":\"x\",\"timestamp\":1,\"event_type\":\"a\"}\n"),
            Format::ZeekJson
        );
        assert_eq!(
            Format::detect_prefix(b"{\"timestamp\":\"x\",\"event_typ"),
            Format::ZeekJson
        );
    }

    #[test]
    fn parse_names() {
        assert_eq!("zeek-json".parse::<Format>(), Ok(Format::ZeekJson));
        assert_eq!("suricata".parse::<Format>(), Ok(Format::Suricata));
        let err = "csv".parse::<Format>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value \"csv\"; expected one of: auto, zeek-tsv, zeek-json, suricata, parquet, arrow"
        );
    }
}
