//! Readers of indicator files: Zeek Intel framework files, CSV, plain lists and STIX 2.1
//! bundles ([`super::stix`]), their options and report in [`super::input`]. Each bad line is an error naming the file, the line and the
//! value; under [`crate::error::OnError::Skip`] it is counted and kept for the report instead.
//!
//! Zeek files, CSV and lists are read a line at a time ([`read_indicators_from`]), so that a
//! feed of millions of indicators is never held whole, as text or as [`Indicator`]s.

use std::io::BufRead;

use super::indicator::{Indicator, IndicatorType, Meta};
use super::input::{input_error, parse_until, IntelFormat, ReadOptions, ReadReport};
use super::IntelError;

/// Reads the text of one indicator file (`file` names it in errors).
pub fn read_indicators(
    text: &str,
    file: &str,
    options: &ReadOptions,
) -> Result<ReadReport, IntelError> {
    let format = options.format.unwrap_or_else(|| IntelFormat::detect(text));
    if format == IntelFormat::Stix {
        return super::stix::read_stix(text, file, options);
    }
    let mut indicators = Vec::new();
    let mut lines = TextLines {
        lines: text.lines(),
        line: 0,
    };
    let mut report = read_lines(format, &mut lines, file, options, &mut |i| {
        indicators.push(i)
    })?;
    report.indicators = indicators;
    Ok(report)
}

/// Reads one indicator file from `input` as it comes (`file` names it in errors), handing
/// each indicator to `each` in the file's order; the report's `indicators` are empty. Zeek
/// files, CSV and lists are read a line at a time; a STIX bundle, one JSON document, whole.
pub fn read_indicators_from(
    input: &mut dyn BufRead,
    file: &str,
    options: &ReadOptions,
    each: &mut dyn FnMut(Indicator),
) -> Result<ReadReport, IntelError> {
    let mut lines = ReadLines {
        input,
        file,
        buf: String::new(),
        line: 0,
        held: false,
    };
    // The format from the first line that is not blank, which is then read again.
    let format = match options.format {
        Some(f) => f,
        None => loop {
            match lines.next_line()? {
                None => break IntelFormat::List,
                Some((_, l)) if l.trim().is_empty() => continue,
                Some((_, l)) => {
                    let f = IntelFormat::detect(l);
                    lines.hold();
                    break f;
                }
            }
        },
    };
    if format == IntelFormat::Stix {
        let mut text = String::new();
        while let Some((_, l)) = lines.next_line()? {
            text.push_str(l);
            text.push('\n');
        }
        let mut report = super::stix::read_stix(&text, file, options)?;
        report.indicators.drain(..).for_each(each);
        return Ok(report);
    }
    read_lines(format, &mut lines, file, options, each)
}

/// Lines of a file, numbered from 1, without their `\n` or `\r\n`, nor a `\r` that ends the
/// last line (each format reader takes them so).
trait Lines {
    /// The next line's number and text; `None` at the end.
    fn next_line(&mut self) -> Result<Option<(usize, &str)>, IntelError>;
}

struct TextLines<'a> {
    lines: std::str::Lines<'a>,
    line: usize,
}

impl Lines for TextLines<'_> {
    fn next_line(&mut self) -> Result<Option<(usize, &str)>, IntelError> {
        let l = self.lines.next();
        self.line += usize::from(l.is_some());
        Ok(l.map(|l| (self.line, l.strip_suffix('\r').unwrap_or(l))))
    }
}

struct ReadLines<'a> {
    input: &'a mut dyn BufRead,
    file: &'a str,
    buf: String,
    line: usize,
    /// The line in `buf` is to be returned again.
    held: bool,
}

impl ReadLines<'_> {
    /// Returns the last line again on the next call.
    fn hold(&mut self) {
        self.held = true;
        self.line -= 1;
    }
}

impl Lines for ReadLines<'_> {
    fn next_line(&mut self) -> Result<Option<(usize, &str)>, IntelError> {
        if self.held {
            self.held = false;
        } else {
            self.buf.clear();
            let n = self
                .input
                .read_line(&mut self.buf)
                .map_err(|e| crate::fs::FsError::new("read", self.file, e))?;
            if n == 0 {
                return Ok(None);
            }
            if self.buf.ends_with('\n') {
                self.buf.pop();
            }
            if self.buf.ends_with('\r') {
                self.buf.pop();
            }
        }
        self.line += 1;
        Ok(Some((self.line, &self.buf)))
    }
}

/// Reads the lines of a file of a line-based format.
fn read_lines(
    format: IntelFormat,
    lines: &mut dyn Lines,
    file: &str,
    options: &ReadOptions,
    each: &mut dyn FnMut(Indicator),
) -> Result<ReadReport, IntelError> {
    let mut out = |mut i: Indicator| {
        if i.valid_until.is_none() {
            i.valid_until = options.valid_until;
        }
        each(i)
    };
    match format {
        IntelFormat::Zeek => read_zeek(lines, file, options, &mut out),
        IntelFormat::Csv => read_csv(lines, file, options, &mut out),
        IntelFormat::List | IntelFormat::Stix => read_list(lines, file, options, &mut out),
    }
}

/// An indicator of `value` and `kind`, or a positioned error.
fn indicator(
    file: &str,
    line: usize,
    value: &str,
    kind: IndicatorType,
) -> Result<Indicator, IntelError> {
    Indicator::new(value, kind).map_err(|m| input_error(file, line, value, format!("{m} ({kind})")))
}

/// A number 0-100 (a fraction 0-1 is scaled, as CIF writes it).
fn confidence(file: &str, line: usize, text: &str) -> Result<Option<u32>, IntelError> {
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<f64>() {
        Ok(c) if (0.0..=1.0).contains(&c) && text.contains('.') => Ok(Some((c * 100.0) as u32)),
        Ok(c) if (0.0..=100.0).contains(&c) => Ok(Some(c as u32)),
        _ => Err(input_error(
            file,
            line,
            text,
            "not a confidence (a number from 0 to 100)",
        )),
    }
}

/// Zeek's Intel framework file: `#fields indicator indicator_type meta.source meta.desc
/// ...`, tab-separated; `-` is unset. Columns weir does not know are ignored.
fn read_zeek(
    lines: &mut dyn Lines,
    file: &str,
    options: &ReadOptions,
    out: &mut dyn FnMut(Indicator),
) -> Result<ReadReport, IntelError> {
    let mut report = ReadReport::default();
    let mut cols: Option<Vec<String>> = None;
    while let Some((line, raw)) = lines.next_line()? {
        if let Some(rest) = raw.strip_prefix("#fields") {
            let names: Vec<String> = rest
                .split('\t')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            for need in ["indicator", "indicator_type"] {
                if !names.iter().any(|c| c == need) {
                    return Err(input_error(
                        file,
                        line,
                        raw,
                        format!("the #fields line has no `{need}` column"),
                    ));
                }
            }
            cols = Some(names);
            continue;
        }
        if raw.starts_with('#') || raw.trim().is_empty() {
            continue;
        }
        let Some(cols) = &cols else {
            return Err(input_error(
                file,
                line,
                raw,
                "a Zeek intel file starts with a #fields line (indicator, indicator_type, meta.source, ...)",
            ));
        };
        let values: Vec<&str> = raw.split('\t').collect();
        if values.len() != cols.len() {
            let e = input_error(
                file,
                line,
                raw,
                format!(
                    "{} tab-separated values for the {} columns of #fields",
                    values.len(),
                    cols.len()
                ),
            );
            report.bad(options.on_error, e)?;
            continue;
        }
        let get = |name: &str| {
            cols.iter()
                .position(|c| c == name)
                .and_then(|i| values.get(i).copied())
                .filter(|v| *v != "-")
                .map(|v| if v == "(empty)" { "" } else { v })
        };
        let value = get("indicator").unwrap_or("");
        let type_text = get("indicator_type").unwrap_or("");
        let Some(kind) = IndicatorType::from_name(type_text) else {
            let e = input_error(
                file,
                line,
                type_text,
                "not an indicator type (Intel::ADDR, Intel::SUBNET, Intel::DOMAIN, Intel::URL, Intel::FILE_HASH, Intel::CERT_HASH, Intel::SOFTWARE, Intel::USER_NAME, Intel::EMAIL)",
            );
            report.bad(options.on_error, e)?;
            continue;
        };
        let conf = get("meta.confidence")
            .or_else(|| get("meta.cif_confidence"))
            .or_else(|| get("meta.cif.confidence"))
            .unwrap_or("");
        let parsed = indicator(file, line, value, kind).and_then(|mut i| {
            i.meta = Meta {
                source: get("meta.source").map(str::to_string),
                description: get("meta.desc").map(str::to_string),
                confidence: confidence(file, line, conf)?,
            };
            Ok(i)
        });
        match parsed {
            Ok(i) => out(i),
            Err(e) => report.bad(options.on_error, e)?,
        }
    }
    Ok(report)
}

/// The fields of one CSV line (RFC 4180 quoting within the line).
fn csv_fields(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cur.push(c),
            (false, '"') if cur.trim().is_empty() && !was_quoted => {
                cur.clear();
                quoted = true;
                was_quoted = true;
            }
            (false, ',') => {
                out.push(if was_quoted {
                    cur.clone()
                } else {
                    cur.trim().to_string()
                });
                cur.clear();
                was_quoted = false;
            }
            (false, c) => cur.push(c),
        }
    }
    if quoted {
        return None;
    }
    out.push(if was_quoted {
        cur
    } else {
        cur.trim().to_string()
    });
    Some(out)
}

/// CSV: a header naming `indicator` and `type` (or `indicator_type`), and optionally
/// `source`, `description`, `confidence`, `valid_until`, in any order.
fn read_csv(
    lines: &mut dyn Lines,
    file: &str,
    options: &ReadOptions,
    out: &mut dyn FnMut(Indicator),
) -> Result<ReadReport, IntelError> {
    let mut report = ReadReport::default();
    let mut header: Option<Vec<String>> = None;
    while let Some((line, raw)) = lines.next_line()? {
        if raw.trim().is_empty() || (header.is_some() && raw.starts_with('#')) {
            continue;
        }
        let Some(fields) = csv_fields(raw) else {
            report.bad(
                options.on_error,
                input_error(file, line, raw, "an unterminated quote"),
            )?;
            continue;
        };
        let Some(cols) = &header else {
            let cols: Vec<String> = fields
                .iter()
                .map(|c| c.trim().to_ascii_lowercase())
                .collect();
            if !cols.iter().any(|c| c == "indicator") {
                return Err(input_error(
                    file,
                    line,
                    raw,
                    "the CSV header names no `indicator` column (indicator,type[,source,description,confidence,valid_until])",
                ));
            }
            if !cols.iter().any(|c| c == "type" || c == "indicator_type") && options.kind.is_none()
            {
                return Err(input_error(
                    file,
                    line,
                    raw,
                    "the CSV header names no `type` column, and no --type was given",
                ));
            }
            header = Some(cols);
            continue;
        };
        let get = |name: &str| {
            cols.iter()
                .position(|c| c == name)
                .and_then(|i| fields.get(i))
                .map(|s| s.as_str())
                .filter(|s| !s.is_empty())
        };
        let value = get("indicator").unwrap_or("");
        let kind = match get("type").or_else(|| get("indicator_type")) {
            Some(t) => match IndicatorType::from_name(t) {
                Some(k) => k,
                None => {
                    report.bad(
                        options.on_error,
                        input_error(file, line, t, "not an indicator type (addr, subnet, domain, url, file_hash, cert_hash, software, user_name, email)"),
                    )?;
                    continue;
                }
            },
            None => match options.kind {
                Some(k) => k,
                None => {
                    report.bad(
                        options.on_error,
                        input_error(file, line, raw, "no type (and no --type)"),
                    )?;
                    continue;
                }
            },
        };
        let parsed = indicator(file, line, value, kind).and_then(|mut i| {
            i.meta = Meta {
                source: get("source").map(str::to_string),
                description: get("description").map(str::to_string),
                confidence: confidence(file, line, get("confidence").unwrap_or(""))?,
            };
            if let Some(t) = get("valid_until") {
                i.valid_until = Some(parse_until(t).ok_or_else(|| {
                    input_error(file, line, t, "not a time (RFC 3339, 2026-01-31T00:00:00Z)")
                })?);
            }
            Ok(i)
        });
        match parsed {
            Ok(i) => out(i),
            Err(e) => report.bad(options.on_error, e)?,
        }
    }
    Ok(report)
}

/// A plain list: one value per line, of `options.kind`.
fn read_list(
    lines: &mut dyn Lines,
    file: &str,
    options: &ReadOptions,
    out: &mut dyn FnMut(Indicator),
) -> Result<ReadReport, IntelError> {
    let Some(kind) = options.kind else {
        return Err(IntelError::NoType {
            file: file.to_string(),
        });
    };
    let mut report = ReadReport::default();
    while let Some((line, raw)) = lines.next_line()? {
        let value = raw.trim();
        if value.is_empty() || value.starts_with('#') {
            continue;
        }
        match indicator(file, line, value, kind) {
            Ok(i) => out(i),
            Err(e) => report.bad(options.on_error, e)?,
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::OnError;

    /// The example of Zeek's documentation of the Intel framework.
    const ZEEK: &str = "#fields\tindicator\tindicator_type\tmeta.source\tmeta.desc\tmeta.url\n\
1.2.3.4\tIntel::ADDR\tsource1\tSending phishing email\thttp://source1.com/badhosts/1.2.3.4\n\
a.b.com\tIntel::DOMAIN\tsource2\tName used for data exfiltration\t-\n";

    fn opts() -> ReadOptions {
        ReadOptions::default()
    }

    #[test]
    fn reading_a_stream_gives_what_reading_the_text_gives() {
        let csv = "\n\r\nindicator,type,source\r\n10.0.0.1,addr,x\r\nevil.com,domain,y";
        let list = "# c2\n\n10.0.0.1\n::ffff:10.0.0.2";
        // Windows line ends, and a last line ended by `\r` alone: the same as ZEEK.
        let crlf = format!("{}\r", ZEEK.replace('\n', "\r\n").trim_end_matches("\r\n"));
        let zeek_crlf = crlf.as_str();
        for (text, kind) in [
            (ZEEK, None),
            (zeek_crlf, None),
            (csv, None),
            (list, Some(IndicatorType::Addr)),
        ] {
            let o = ReadOptions { kind, ..opts() };
            let whole = read_indicators(text, "f", &o).unwrap().indicators;
            let mut streamed = Vec::new();
            let r = read_indicators_from(&mut text.as_bytes(), "f", &o, &mut |i| streamed.push(i))
                .unwrap();
            assert!(r.indicators.is_empty());
            assert_eq!(streamed, whole, "{text:?}");
            assert_eq!(whole.len(), 2, "{text:?}");
            if text == zeek_crlf {
                assert_eq!(whole, read_indicators(ZEEK, "f", &o).unwrap().indicators);
            }
        }
        // Lines are numbered as in the text, blank lines before the header counted.
        let bad = "\n#fields\tindicator\tindicator_type\n1.2.3.4\tIntel::NOPE\n";
        let e = read_indicators_from(&mut bad.as_bytes(), "f", &opts(), &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("f:3:"), "{e}");
    }

    #[test]
    fn reads_zeeks_example() {
        let r = read_indicators(ZEEK, "intel.dat", &opts()).unwrap();
        assert_eq!(r.indicators.len(), 2);
        assert_eq!(r.indicators[0].kind, IndicatorType::Addr);
        assert_eq!(r.indicators[0].meta.source.as_deref(), Some("source1"));
        assert_eq!(
            r.indicators[1].meta.description.as_deref(),
            Some("Name used for data exfiltration")
        );
        assert_eq!(r.indicators[1].value, "a.b.com");
    }

    #[test]
    fn a_bad_zeek_line_is_positioned_or_skipped() {
        let text = format!("{ZEEK}999.1.1.1\tIntel::ADDR\ts\td\t-\nx\tIntel::NOPE\ts\td\t-\n");
        let e = read_indicators(&text, "intel.dat", &opts())
            .unwrap_err()
            .to_string();
        assert!(e.contains("intel.dat:4") && e.contains("999.1.1.1"), "{e}");
        let skip = ReadOptions {
            on_error: OnError::Skip,
            ..opts()
        };
        let r = read_indicators(&text, "intel.dat", &skip).unwrap();
        assert_eq!((r.indicators.len(), r.skipped.len()), (2, 2));
        assert!(r.skipped[1].to_string().contains("Intel::NOPE"));
    }

    #[test]
    fn reads_csv_with_quotes_and_expiry() {
        let text = "indicator,type,source,description,confidence,valid_until\n\
10.0.0.0/8,subnet,feed,\"a, quoted\",80,2030-01-01T00:00:00Z\n\
evil.com,Intel::DOMAIN,,,,\n";
        let r = read_indicators(text, "f.csv", &opts()).unwrap();
        assert_eq!(r.indicators.len(), 2);
        assert_eq!(
            r.indicators[0].meta.description.as_deref(),
            Some("a, quoted")
        );
        assert_eq!(r.indicators[0].meta.confidence, Some(80));
        assert!(r.indicators[0].valid_until.is_some());
        assert_eq!(r.indicators[1].valid_until, None);
        let bad = "indicator,type\nevil.com,domain\n1.2.3,addr\n";
        let e = read_indicators(bad, "f.csv", &opts())
            .unwrap_err()
            .to_string();
        assert!(e.contains("f.csv:3") && e.contains("1.2.3"), "{e}");
    }

    #[test]
    fn reads_lists_with_a_type() {
        let text = "# comment\n1.2.3.4\n\n5.6.7.8\n";
        assert!(read_indicators(text, "l.txt", &opts()).is_err());
        let o = ReadOptions {
            kind: Some(IndicatorType::Addr),
            valid_until: Some(7),
            ..opts()
        };
        let r = read_indicators(text, "l.txt", &o).unwrap();
        assert_eq!(r.indicators.len(), 2);
        assert_eq!(r.indicators[1].valid_until, Some(7));
    }

    #[test]
    fn detects_formats() {
        assert_eq!(IntelFormat::detect(ZEEK), IntelFormat::Zeek);
        assert_eq!(
            IntelFormat::detect("{\"type\":\"bundle\"}"),
            IntelFormat::Stix
        );
        assert_eq!(IntelFormat::detect("indicator,type\n"), IntelFormat::Csv);
        assert_eq!(IntelFormat::detect("1.2.3.4\n"), IntelFormat::List);
    }
}
