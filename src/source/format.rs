//! The event format of a source: naming it and detecting it from the decompressed bytes.

use super::input::BoxReader;
use super::reader::peek;
use crate::setting::{Choice, ChoiceName};

/// The event format of a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Format {
    /// Decide by the first byte that is not whitespace (the default).
    #[default]
    Auto,
    /// Zeek's TSV (ASCII writer) format.
    ZeekTsv,
    /// Zeek's JSON lines.
    ZeekJson,
}

impl Choice for Format {
    const WHAT: &'static str = "input format";
    const CHOICES: &'static [ChoiceName<Format>] = &[
        ChoiceName::new(
            "auto",
            Format::Auto,
            "Zeek TSV or JSON, told apart by the first byte",
        ),
        ChoiceName::new("zeek-tsv", Format::ZeekTsv, "Zeek TSV"),
        ChoiceName::new("zeek-json", Format::ZeekJson, "Zeek JSON lines"),
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
}

/// Decides the format of decompressed input under [`Format::Auto`] by its first byte that is
/// not whitespace (peeking up to 64 KiB of leading whitespace); other formats pass through.
pub async fn detect_format(
    reader: BoxReader,
    format: Format,
) -> std::io::Result<(Format, BoxReader)> {
    if format != Format::Auto {
        return Ok((format, reader));
    }
    let first = |p: &[u8]| p.iter().copied().find(|b| !b.is_ascii_whitespace());
    let (prefix, reader) = peek(reader, 64 << 10, |p| first(p).is_some()).await?;
    Ok((Format::detect(first(&prefix)), reader))
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
    fn parse_names() {
        assert_eq!("zeek-json".parse::<Format>(), Ok(Format::ZeekJson));
        let err = "csv".parse::<Format>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value \"csv\"; expected one of: auto, zeek-tsv, zeek-json"
        );
    }
}
