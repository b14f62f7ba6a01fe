//! STIX 2.1 bundles: the indicators whose `pattern` compares one observable with `=`
//! (`[ipv4-addr:value = '198.51.100.1']`, `[domain-name:value = 'evil.com']`,
//! `[file:hashes.'SHA-256' = '…']`, ...). Any other pattern (several comparisons, `AND`,
//! `OR`, `FOLLOWEDBY`, other operators, other objects), a pattern type other than `stix`, and
//! a revoked indicator are reported with the indicator's id and skipped: never guessed.

use serde_json::Value as Json;

use super::indicator::{Indicator, IndicatorType, Meta};
use super::input::{parse_until, ReadOptions, ReadReport};
use super::IntelError;

/// The indicator type of a STIX object path, for the paths weir matches.
fn path_type(path: &str, value: &str) -> Option<IndicatorType> {
    let (object, property) = path.split_once(':')?;
    let hash = |p: &str| {
        let name = p.strip_prefix("hashes.")?;
        let name = name.trim_matches('\'').to_ascii_uppercase();
        matches!(
            name.as_str(),
            "MD5" | "SHA-1" | "SHA1" | "SHA-256" | "SHA256"
        )
        .then_some(())
    };
    match (object, property) {
        ("ipv4-addr" | "ipv6-addr", "value") if value.contains('/') => Some(IndicatorType::Subnet),
        ("ipv4-addr" | "ipv6-addr", "value") => Some(IndicatorType::Addr),
        ("domain-name", "value") => Some(IndicatorType::Domain),
        ("url", "value") => Some(IndicatorType::Url),
        ("email-addr", "value") => Some(IndicatorType::Email),
        ("file", p) => hash(p).map(|()| IndicatorType::FileHash),
        ("x509-certificate", p) => hash(p).map(|()| IndicatorType::CertHash),
        _ => None,
    }
}

/// The (object path, value) of a pattern that is one comparison `[PATH = 'VALUE']`, or why
/// it is not.
fn single_comparison(pattern: &str) -> Result<(String, String), String> {
    let p = pattern.trim();
    let inner = p
        .strip_prefix('[')
        .and_then(|p| p.strip_suffix(']'))
        .ok_or("not one bracketed comparison")?;
    // The path: up to the operator (quoted hash names may hold no blanks nor `=`).
    let eq = inner.find('=').ok_or("no `=` comparison")?;
    let path = inner[..eq].trim();
    if path.is_empty() || path.contains(|c: char| c.is_whitespace() || "[]()!<>".contains(c)) {
        return Err(format!(
            "the comparison `{}` is not `PATH = 'VALUE'`",
            inner.trim()
        ));
    }
    let rest = inner[eq + 1..].trim_start();
    let mut chars = rest.char_indices();
    if !matches!(chars.next(), Some((_, '\''))) {
        return Err("the value is not a quoted string".into());
    }
    let mut value = String::new();
    let mut end = None;
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, c @ ('\'' | '\\'))) => value.push(c),
                _ => return Err("a bad escape in the value".into()),
            },
            '\'' => {
                end = Some(i + 1);
                break;
            }
            c => value.push(c),
        }
    }
    let end = end.ok_or("an unterminated value")?;
    let after = rest[end..].trim();
    if !after.is_empty() {
        return Err(format!(
            "more than one comparison (`{after}` after the first): only a single comparison is matched"
        ));
    }
    Ok((path.to_string(), value))
}

/// The name of the identity an indicator's `created_by_ref` names in the bundle, else the
/// reference itself.
fn creator(objects: &[Json], reference: &str) -> String {
    objects
        .iter()
        .find(|o| o.get("id").and_then(Json::as_str) == Some(reference))
        .and_then(|o| o.get("name").and_then(Json::as_str))
        .unwrap_or(reference)
        .to_string()
}

/// Reads a STIX 2.1 bundle (or a single indicator object, or an array of objects).
pub(crate) fn read_stix(
    text: &str,
    file: &str,
    options: &ReadOptions,
) -> Result<ReadReport, IntelError> {
    let doc: Json = serde_json::from_str(text).map_err(|e| IntelError::Input {
        file: file.to_string(),
        line: e.line(),
        value: String::new(),
        message: format!("not JSON: {e}"),
    })?;
    let objects: Vec<Json> = match doc {
        Json::Object(ref o) if o.get("type").and_then(Json::as_str) == Some("bundle") => o
            .get("objects")
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default(),
        Json::Array(a) => a,
        other @ Json::Object(_) => vec![other],
        _ => {
            return Err(IntelError::Input {
                file: file.to_string(),
                line: 1,
                value: String::new(),
                message: "not a STIX bundle (an object of type \"bundle\")".into(),
            })
        }
    };
    let mut report = ReadReport::default();
    for o in &objects {
        if o.get("type").and_then(Json::as_str) != Some("indicator") {
            continue;
        }
        let id = o.get("id").and_then(Json::as_str).unwrap_or("(no id)");
        let mut unsupported = |why: String| report.unsupported.push(format!("{id}: {why}"));
        if o.get("revoked").and_then(Json::as_bool) == Some(true) {
            unsupported("revoked".into());
            continue;
        }
        match o.get("pattern_type").and_then(Json::as_str) {
            None | Some("stix") => {}
            Some(t) => {
                unsupported(format!("pattern_type {t:?} (only \"stix\" is read)"));
                continue;
            }
        }
        let Some(pattern) = o.get("pattern").and_then(Json::as_str) else {
            unsupported("no pattern".into());
            continue;
        };
        let (path, value) = match single_comparison(pattern) {
            Ok(c) => c,
            Err(why) => {
                unsupported(format!("pattern {pattern:?}: {why}"));
                continue;
            }
        };
        let Some(kind) = path_type(&path, &value) else {
            unsupported(format!(
                "pattern {pattern:?}: the object path {path} is not matched"
            ));
            continue;
        };
        let mut i = match Indicator::new(&value, kind) {
            Ok(i) => i,
            Err(why) => {
                unsupported(format!("pattern {pattern:?}: {why} ({kind})"));
                continue;
            }
        };
        let text_of = |k: &str| o.get(k).and_then(Json::as_str).map(str::to_string);
        i.meta = Meta {
            source: o
                .get("created_by_ref")
                .and_then(Json::as_str)
                .map(|r| creator(&objects, r)),
            description: text_of("name").or_else(|| text_of("description")),
            confidence: o
                .get("confidence")
                .and_then(Json::as_u64)
                .and_then(|c| u32::try_from(c.min(100)).ok()),
        };
        if let Some(until) = o.get("valid_until").and_then(Json::as_str) {
            match parse_until(until) {
                Some(t) => i.valid_until = Some(t),
                None => {
                    unsupported(format!("valid_until {until:?} is not a time"));
                    continue;
                }
            }
        }
        report.push(i, options);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const BUNDLE: &str = include_str!("../../tests/fixtures/intel/stix-reader.json");

    #[test]
    fn reads_single_comparisons_and_reports_the_rest() {
        let r = read_stix(BUNDLE, "b.json", &ReadOptions::default()).unwrap();
        let got: Vec<(IndicatorType, &str)> = r
            .indicators
            .iter()
            .map(|i| (i.kind, i.value.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (IndicatorType::Addr, "198.51.100.3"),
                (IndicatorType::Domain, "evil.example.com"),
                (
                    IndicatorType::FileHash,
                    "aec070645fe53ee3b3763059376134f058cc337247c978add178b6ccdfb0019f"
                ),
                (IndicatorType::Url, "evil.example.com/payload.exe"),
                (IndicatorType::Subnet, "2001:db8::/32"),
                (IndicatorType::Email, "boss@evil.example.com"),
            ]
        );
        assert_eq!(r.indicators[0].meta.source.as_deref(), Some("ACME CERT"));
        assert_eq!(r.indicators[0].meta.confidence, Some(85));
        assert!(r.indicators[1].valid_until.is_some());
        let ids: Vec<&str> = r
            .unsupported
            .iter()
            .map(|u| u.split(':').next().unwrap_or(""))
            .collect();
        assert_eq!(
            ids,
            vec![
                "indicator--b1",
                "indicator--b2",
                "indicator--b3",
                "indicator--b4"
            ]
        );
    }

    #[test]
    fn bad_json_is_positioned() {
        let e = read_stix(
            "{\n\"type\": \"bundle\",\n\"objects\": [,]}",
            "b.json",
            &ReadOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("b.json:3"), "{e}");
    }
}
