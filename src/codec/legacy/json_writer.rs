//! The msgpack row walk of main (temporary: compared with the batch path by a test).
#![allow(dead_code, missing_docs)]

use super::text_format::{write_row, ListText, TextFormat};
use super::write_each;
use crate::codec::event_writer::{EventWriter, WriteError};
use crate::codec::zeek::scalar::{
    push_addr, push_decimal_ns, push_double, push_i64, push_rfc3339, push_subnet,
};
use crate::types::SchemaRef;
use crate::value::ValueRef;

const HEX: &[u8; 16] = b"0123456789abcdef";

pub use crate::codec::json_writer::JsonTimestamps;

/// Writes events as JSON lines. See the module docs for the layout.
#[derive(Debug, Default)]
pub struct JsonWriter {
    /// `{"_path":"<path>"` and the `,"<name>":` prefix of every field, for the last schema.
    cache: Option<(SchemaRef, Vec<u8>, Vec<Vec<u8>>)>,
    timestamps: JsonTimestamps,
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
        _schema: &SchemaRef,
        _batch: &arrow_array::RecordBatch,
        _out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        Err(WriteError::Io(std::io::Error::other(
            "legacy writer: rows only",
        )))
    }

    fn write_rows(
        &mut self,
        schema: &SchemaRef,
        rows: &mut dyn Iterator<Item = &[u8]>,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        self.prepare(schema);
        let Some((_, head, keys)) = &self.cache else {
            return Ok(());
        };
        let format = Json {
            head,
            keys,
            timestamps: self.timestamps,
        };
        write_each(schema, rows, out, |row, out| {
            write_row(&format, schema, row, out)
        })
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
    const ROW_END: &'static [u8] = b"}\n";

    #[inline]
    fn begin_row(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.head);
    }

    #[inline]
    fn field(&self, i: usize, set: bool, out: &mut Vec<u8>) {
        match self.keys.get(i) {
            Some(key) if set => out.extend_from_slice(key),
            _ => {}
        }
    }

    #[inline]
    fn scalar(&self, v: ValueRef<'_>, _in_list: bool, out: &mut Vec<u8>) {
        match v {
            ValueRef::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            ValueRef::Double(d) => {
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
            ValueRef::String(s) => push_json_string(out, s),
            ValueRef::Time(ns) => match self.timestamps {
                JsonTimestamps::Iso8601 => quoted(out, |out| push_rfc3339(out, ns)),
                JsonTimestamps::Epoch => push_decimal_ns(out, ns),
                // Zeek: `(int64)(seconds * 1000)`, truncated toward zero.
                JsonTimestamps::Millis => push_i64(out, ns / 1_000_000),
            },
            ValueRef::Addr(a) => quoted(out, |out| push_addr(out, a)),
            ValueRef::Subnet(a, p) => quoted(out, |out| push_subnet(out, a, p)),
            // Written by `write_row`, or not scalars.
            _ => {}
        }
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
