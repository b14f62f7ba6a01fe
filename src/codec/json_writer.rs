//! The JSON lines writer, following Zeek's JSON logs (`LogAscii::use_json=T`).
//!
//! # Layout
//! One object per event and line: `"_path"` first (the schema's Zeek path, e.g. `"conn"`), then
//! the set fields in schema order under their dotted Zeek names (`"id.orig_h"`); unset fields are
//! omitted.
//! ```text
//! {"_path":"conn","ts":"2009-11-18T08:00:21.486539Z","uid":"Pii6cUUq1v4","id.orig_h":"192.168.1.102",...}
//! ```
//!
//! # Suricata EVE events
//! Events of a Suricata EVE schema (`suricata.<event_type>`, [`crate::codec::suricata`]) are
//! written in EVE's own shape instead: no `_path` (their `event_type` is a field), and the
//! dotted names nested as objects again (`{"timestamp":...,"alert":{"signature_id":2019236,...}}`;
//! the grouping rules in [`crate::codec::json_nest`]), with the values as below (times in UTC).
//! `weir import --from suricata` reads such a line back to the same values.
//!
//! # Values
//! Written from Arrow record batches ([`EventWriter::write_record_batch`]; rows become batches
//! first), by the row walk of `codec::text_format`:
//! - `time`, as chosen by [`JsonTimestamps`] (`--json-timestamps`, `json_timestamps`):
//!   - `iso8601` (weir's default): RFC 3339 UTC string with the exact fraction, at least 6
//!     digits (`"2009-11-18T08:00:21.486539Z"`, `"...21.486539123Z"` when nanoseconds are
//!     set), Zeek's `JSON::TS_ISO8601`;
//!   - `epoch`: a number of seconds since the epoch, exact decimal text from the nanoseconds
//!     (`1258531221.486539`), Zeek's default `JSON::TS_EPOCH`;
//!   - `millis`: an integer number of milliseconds since the epoch, truncated toward zero
//!     (`1258531221486`), Zeek's `JSON::TS_MILLIS` (for Elasticsearch). Not read back as the
//!     same time: weir's JSON reader takes numbers as seconds, as Zeek's own readers do.
//!
//!   Both `iso8601` and `epoch` read back to the identical nanoseconds.
//! - `interval`: a number of seconds, exact decimal text from the nanoseconds (`0.163820`);
//! - `count`, `int`, `port`: numbers; `bool`: `true`/`false`;
//! - `double`: the shortest number that re-reads to the identical `f64` (`.0` after integral
//!   values). JSON has no infinity or NaN: they are the strings `"Infinity"`, `"-Infinity"`
//!   and `"NaN"` (JavaScript's names), which weir's JSON reader reads back as those doubles.
//!   Zeek itself writes `null` there, which cannot be told from an unset value; weir keeps
//!   them apart so that an export re-imports to the same values;
//! - `addr`, `subnet`, `string`, `enum`, `pattern`, `file`: strings;
//! - containers: arrays (unset elements `null`).
//!
//! # Strings
//! Zeek strings are bytes. Valid UTF-8 is written as is (with `"` and `\` escaped as JSON
//! requires); bytes that are not valid UTF-8 are written as the four characters `\xHH`
//! (lowercase hex), as Zeek does, so the JSON source holds `"\\xff"`. This is not reversible for
//! a string that holds a literal `\x` followed by two hex digits: the same loss as Zeek's own JSON
//! logs. Control bytes (below 0x20) and DEL (0x7f) use JSON's own escapes (`\n`, `\t`, `\r`,
//! `\u00HH`): Zeek JSON logs in the wild hold `\n` that way, and JSON read from them must be
//! written back the same (the reference `zeekref.py` takes `\u000a` and `\x0a` text as equal
//! when comparing with TSV originals).

use arrow_array::RecordBatch;

use crate::codec::arrow::ArrowForm;
use crate::codec::event_writer::{EventWriter, WriteError};
use crate::codec::json_nest::Nest;
use crate::codec::row_batches::{write_rows, RowBatches};
use crate::codec::text_format::{
    text_columns, write_row, ListText, Scalar, TextColumn, TextFormat,
};
use crate::codec::zeek::scalar::{push_decimal_ns, push_double, push_i64, push_rfc3339};
use crate::setting::{Choice, ChoiceName};
use crate::types::{SchemaRef, EVE_SCHEMA_PREFIX};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// How the JSON writer spells a `time` (Zeek's `LogAscii::json_timestamps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum JsonTimestamps {
    /// `epoch`: seconds since the epoch as a number, `1258531221.486539` (`JSON::TS_EPOCH`).
    Epoch,
    /// `iso8601`: an RFC 3339 UTC string, `"2009-11-18T08:00:21.486539Z"`
    /// (`JSON::TS_ISO8601`); weir's default.
    #[default]
    Iso8601,
    /// `millis`: integer milliseconds since the epoch, `1258531221486` (`JSON::TS_MILLIS`).
    Millis,
}

impl Choice for JsonTimestamps {
    const WHAT: &'static str = "JSON timestamp format";
    const CHOICES: &'static [ChoiceName<JsonTimestamps>] = &[
        ChoiceName::new(
            "epoch",
            JsonTimestamps::Epoch,
            "seconds since the epoch, a number (Zeek's default)",
        ),
        ChoiceName::new(
            "iso8601",
            JsonTimestamps::Iso8601,
            "RFC 3339 UTC strings with the exact fraction",
        ),
        ChoiceName::new(
            "millis",
            JsonTimestamps::Millis,
            "integer milliseconds since the epoch (for Elasticsearch)",
        ),
    ];
}

crate::choice!(JsonTimestamps);

/// Writes events as JSON lines. See the module docs for the layout.
#[derive(Debug)]
pub struct JsonWriter {
    /// `{"_path":"<path>"` and the `,"<name>":` prefix of every field, for the last schema.
    cache: Option<(SchemaRef, Vec<u8>, Vec<Vec<u8>>)>,
    timestamps: JsonTimestamps,
    rows: RowBatches,
    /// The object layout of the last EVE schema written.
    nest: Option<(SchemaRef, Nest)>,
    /// An EVE row's field values as JSON text, and where each starts (and whether set).
    scratch: Vec<u8>,
    starts: Vec<(usize, bool)>,
}

impl Default for JsonWriter {
    fn default() -> Self {
        JsonWriter::with_timestamps(JsonTimestamps::default())
    }
}

impl JsonWriter {
    /// A JSON lines writer (times in RFC 3339).
    pub fn new() -> JsonWriter {
        JsonWriter::default()
    }

    /// A JSON lines writer spelling times as `timestamps` says.
    pub fn with_timestamps(timestamps: JsonTimestamps) -> JsonWriter {
        JsonWriter {
            cache: None,
            timestamps,
            rows: RowBatches::new(ArrowForm::Exact),
            nest: None,
            scratch: Vec::new(),
            starts: Vec::new(),
        }
    }

    /// Writes the rows of a Suricata EVE schema in EVE's nested shape (module docs).
    fn write_eve(
        &mut self,
        schema: &SchemaRef,
        columns: &[TextColumn<'_>],
        rows: usize,
        out: &mut Vec<u8>,
    ) {
        let fresh = match &self.nest {
            Some((cur, _)) => !(std::sync::Arc::ptr_eq(cur, schema) || **cur == **schema),
            None => true,
        };
        if fresh {
            let key = |name: &str| {
                let mut k = Vec::with_capacity(name.len() + 3);
                push_json_string(&mut k, name.as_bytes());
                k.push(b':');
                k
            };
            let nest = Nest::new(schema.fields.iter().map(|f| f.name.as_str()), &key);
            self.nest = Some((schema.clone(), nest));
        }
        let Some((_, nest)) = &self.nest else {
            return;
        };
        for row in 0..rows {
            self.scratch.clear();
            self.starts.clear();
            let mut spans = Spans {
                json: Json {
                    head: b"",
                    keys: &[],
                    timestamps: self.timestamps,
                },
                starts: &mut self.starts,
            };
            write_row(&mut spans, columns, row, &mut self.scratch);
            let (starts, scratch) = (&self.starts, &self.scratch);
            let value = |i: usize| -> Option<&[u8]> {
                let &(start, set) = starts.get(i)?;
                let end = starts.get(i + 1).map_or(scratch.len(), |&(e, _)| e);
                set.then(|| &scratch[start..end])
            };
            nest.write(&value, out);
            out.push(b'\n');
        }
    }

    fn prepare(&mut self, schema: &SchemaRef) {
        if let Some((cur, _, _)) = &self.cache {
            if std::sync::Arc::ptr_eq(cur, schema) || **cur == **schema {
                return;
            }
        }
        let mut head = b"{\"_path\":".to_vec();
        push_json_string(&mut head, schema.path().as_bytes());
        let keys = schema
            .fields
            .iter()
            .map(|f| {
                let mut k = b",".to_vec();
                push_json_string(&mut k, f.name.as_bytes());
                k.push(b':');
                k
            })
            .collect();
        self.cache = Some((schema.clone(), head, keys));
    }
}

impl EventWriter for JsonWriter {
    fn write_record_batch(
        &mut self,
        schema: &SchemaRef,
        batch: &RecordBatch,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        let columns = text_columns(schema, batch)?;
        if schema.name.starts_with(EVE_SCHEMA_PREFIX) {
            self.write_eve(schema, &columns, batch.num_rows(), out);
            return Ok(());
        }
        self.prepare(schema);
        let Some((_, head, keys)) = &self.cache else {
            return Ok(());
        };
        let mut format = Json {
            head,
            keys,
            timestamps: self.timestamps,
        };
        for row in 0..batch.num_rows() {
            write_row(&mut format, &columns, row, out);
        }
        Ok(())
    }

    fn write_rows(
        &mut self,
        schema: &SchemaRef,
        rows: &mut dyn Iterator<Item = &[u8]>,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        write_rows(self, |w| &mut w.rows, schema, rows, out)
    }

    fn finish(&mut self, _out: &mut Vec<u8>) {}
}

/// JSON lines as a [`TextFormat`]: `head` (`{"_path":...`) starts the row, `keys[i]` (`,"name":`)
/// precedes set field `i`, unset fields are left out.
struct Json<'a> {
    head: &'a [u8],
    keys: &'a [Vec<u8>],
    timestamps: JsonTimestamps,
}

impl TextFormat for Json<'_> {
    const LIST: ListText = ListText {
        open: b"[",
        close: b"]",
        empty: b"[]",
        unset: b"null",
    };

    #[inline]
    fn begin_row(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.head);
    }

    #[inline]
    fn end_row(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"}\n");
    }

    #[inline]
    fn field(&mut self, i: usize, set: bool, out: &mut Vec<u8>) {
        match self.keys.get(i) {
            Some(key) if set => out.extend_from_slice(key),
            _ => {}
        }
    }

    #[inline]
    fn scalar(&mut self, v: Scalar<'_>, _in_list: bool, out: &mut Vec<u8>) {
        match v {
            Scalar::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            Scalar::Double(d) => {
                let finite = push_double(out, d, true);
                if !finite {
                    // JSON has no infinity or NaN (Zeek writes null, like unset): strings that
                    // the JSON reader reads back as these doubles.
                    out.extend_from_slice(if d.is_nan() {
                        b"\"NaN\""
                    } else if d > 0.0 {
                        b"\"Infinity\""
                    } else {
                        b"\"-Infinity\""
                    });
                }
            }
            Scalar::String(s) => push_json_string(out, s),
            Scalar::Time(ns) => match self.timestamps {
                JsonTimestamps::Iso8601 => quoted(out, |out| push_rfc3339(out, ns)),
                JsonTimestamps::Epoch => push_decimal_ns(out, ns),
                // Zeek: `(int64)(seconds * 1000)`, truncated toward zero.
                JsonTimestamps::Millis => push_i64(out, ns / 1_000_000),
            },
            Scalar::Addr(a) => quoted(out, |out| out.extend_from_slice(a)),
        }
    }
}

/// An EVE row's fields written one after the other with [`Json`]'s values and no keys,
/// recording where each field's text starts (and whether it is set), for [`Nest`] to place.
struct Spans<'a, 'b> {
    json: Json<'a>,
    starts: &'b mut Vec<(usize, bool)>,
}

impl TextFormat for Spans<'_, '_> {
    const LIST: ListText = <Json<'static> as TextFormat>::LIST;

    #[inline]
    fn begin_row(&mut self, _out: &mut Vec<u8>) {}

    #[inline]
    fn field(&mut self, _i: usize, set: bool, out: &mut Vec<u8>) {
        self.starts.push((out.len(), set));
    }

    #[inline]
    fn end_row(&mut self, _out: &mut Vec<u8>) {}

    #[inline]
    fn scalar(&mut self, v: Scalar<'_>, in_list: bool, out: &mut Vec<u8>) {
        self.json.scalar(v, in_list, out);
    }
}

/// Appends what `write` writes between double quotes (text that needs no escaping).
#[inline]
fn quoted(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    out.push(b'"');
    write(out);
    out.push(b'"');
}

#[inline]
fn push_escaped_hex(out: &mut Vec<u8>, b: u8) {
    // JSON source `\\xHH`: the decoded string holds a backslash, `x` and two hex digits.
    out.extend_from_slice(&[
        b'\\',
        b'\\',
        b'x',
        HEX[(b >> 4) as usize],
        HEX[(b & 15) as usize],
    ]);
}

/// Appends bytes as a JSON string: `"` and `\` escaped, valid UTF-8 kept, control bytes and DEL
/// as JSON escapes (`\n`, `\u0001`), bytes of invalid UTF-8 as `\xHH` text.
pub(crate) fn push_json_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    let mut rest = s;
    loop {
        // Plain ASCII run.
        let mut i = 0;
        while i < rest.len() {
            let b = rest[i];
            if b < 0x20 || b == b'"' || b == b'\\' || b >= 0x7f {
                break;
            }
            i += 1;
        }
        out.extend_from_slice(&rest[..i]);
        rest = &rest[i..];
        let Some(&b) = rest.first() else { break };
        if b == b'"' || b == b'\\' {
            out.extend_from_slice(&[b'\\', b]);
            rest = &rest[1..];
        } else if b < 0x80 {
            // Control bytes and DEL: JSON's own escapes, so that control characters read from
            // Zeek JSON are written back as they were.
            match b {
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                _ => out.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[(b >> 4) as usize],
                    HEX[(b & 15) as usize],
                ]),
            }
            rest = &rest[1..];
        } else {
            // Non-ASCII: copy one valid UTF-8 character, or escape one invalid byte.
            let w = match b {
                0xc2..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf4 => 4,
                _ => 0,
            };
            if w > 0 && rest.len() >= w && std::str::from_utf8(&rest[..w]).is_ok() {
                out.extend_from_slice(&rest[..w]);
                rest = &rest[w..];
            } else {
                push_escaped_hex(out, b);
                rest = &rest[1..];
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(s: &[u8]) -> String {
        let mut o = Vec::new();
        push_json_string(&mut o, s);
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn strings_escape_like_zeek() {
        assert_eq!(js(b"plain"), r#""plain""#);
        assert_eq!(js(b"a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(js(b"\n\t\r\x01\x7f"), r#""\n\t\r\u0001\u007f""#);
        assert_eq!(js(&[0xff, b'a']), r#""\\xffa""#);
        assert_eq!(js("é€😀".as_bytes()), "\"é€😀\"");
        // Truncated UTF-8 sequence then ASCII: each bad byte escaped on its own.
        assert_eq!(js(&[0xe2, 0x82, b'x']), r#""\\xe2\\x82x""#);
        assert_eq!(js(&[b'a', 0xc3, 0xa9, 0xc3]), "\"aé\\\\xc3\"");
    }
}
