//! The msgpack row walk of main (temporary: compared with the batch path by a test).
#![allow(dead_code, missing_docs)]

use super::text_format::{write_row, ListText, TextFormat};
use super::write_each;
use crate::codec::event_writer::{EventWriter, WriteError};
use crate::codec::zeek::scalar::{
    push_addr, push_decimal_ns, push_double, push_subnet, push_zeek_stamp,
};
use crate::types::SchemaRef;
use crate::value::ValueRef;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes events as Zeek TSV logs. See the module docs for the layout.
pub struct ZeekTsvWriter {
    /// Schema of the open header block, if any.
    current: Option<SchemaRef>,
    clock: fn() -> i64,
}

/// Now, in nanoseconds since the epoch (0 if the clock is before 1970).
fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl std::fmt::Debug for ZeekTsvWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZeekTsvWriter")
            .field("current", &self.current.as_ref().map(|s| s.name.clone()))
            .finish()
    }
}

impl Default for ZeekTsvWriter {
    fn default() -> Self {
        ZeekTsvWriter::new()
    }
}

impl ZeekTsvWriter {
    /// A writer stamping `#open`/`#close` with the current time.
    pub fn new() -> ZeekTsvWriter {
        ZeekTsvWriter::with_clock(now_ns)
    }

    /// A writer taking the `#open`/`#close` times (nanoseconds since the epoch) from `clock`,
    /// e.g. a constant for reproducible output.
    pub fn with_clock(clock: fn() -> i64) -> ZeekTsvWriter {
        ZeekTsvWriter {
            current: None,
            clock,
        }
    }

    fn close_block(&mut self, out: &mut Vec<u8>) {
        if self.current.take().is_some() {
            out.extend_from_slice(b"#close\t");
            push_zeek_stamp(out, (self.clock)());
            out.push(b'\n');
        }
    }

    fn open_block(&mut self, schema: &SchemaRef, out: &mut Vec<u8>) {
        self.close_block(out);
        out.extend_from_slice(
            b"#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\t",
        );
        escape_text(out, schema.path().as_bytes(), false);
        out.extend_from_slice(b"\n#open\t");
        push_zeek_stamp(out, (self.clock)());
        out.extend_from_slice(b"\n#fields");
        for f in &schema.fields {
            out.push(b'\t');
            escape_text(out, f.name.as_bytes(), false);
        }
        out.extend_from_slice(b"\n#types");
        for f in &schema.fields {
            out.push(b'\t');
            out.extend_from_slice(f.ty.to_string().as_bytes());
        }
        out.push(b'\n');
        self.current = Some(schema.clone());
    }

    fn same_schema(&self, schema: &SchemaRef) -> bool {
        match &self.current {
            Some(cur) => std::sync::Arc::ptr_eq(cur, schema) || **cur == **schema,
            None => false,
        }
    }
}

impl EventWriter for ZeekTsvWriter {
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
        let mut rows = rows.peekable();
        if rows.peek().is_none() {
            return Ok(());
        }
        if !self.same_schema(schema) {
            self.open_block(schema, out);
        }
        write_each(schema, rows, out, |row, out| {
            let start = out.len();
            write_row(&Tsv, schema, row, out)?;
            // A data line must not start with `#`, or readers take it for a header line:
            // Zeek writes that first `#` as `\x23` (the reader unescapes it).
            if out.get(start) == Some(&b'#') {
                out.splice(start..start + 1, *b"\\x23");
            }
            Ok(())
        })
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        self.close_block(out);
    }
}

/// Zeek TSV as a [`TextFormat`]: fields separated by tabs, `-` for unset, `(empty)` for an empty
/// container, a newline after the row.
struct Tsv;

impl TextFormat for Tsv {
    const LIST: ListText = ListText {
        open: b"",
        close: b"",
        empty: b"(empty)",
        unset: b"-",
    };
    const ROW_END: &'static [u8] = b"\n";

    fn begin_row(&self, _out: &mut Vec<u8>) {}

    #[inline]
    fn field(&self, i: usize, set: bool, out: &mut Vec<u8>) {
        if i > 0 {
            out.push(b'\t');
        }
        if !set {
            out.push(b'-');
        }
    }

    #[inline]
    fn scalar(&self, v: ValueRef<'_>, in_list: bool, out: &mut Vec<u8>) {
        match v {
            ValueRef::Bool(b) => out.push(if b { b'T' } else { b'F' }),
            ValueRef::Time(ns) => push_decimal_ns(out, ns),
            ValueRef::Double(d) => {
                push_double(out, d, false);
            }
            ValueRef::String(s) => write_string(out, s, in_list),
            ValueRef::Addr(a) => push_addr(out, a),
            ValueRef::Subnet(a, p) => push_subnet(out, a, p),
            // Written by `write_row`, or not scalars.
            _ => {}
        }
    }
}

/// Writes a string value: `(empty)` when empty, the markers `-`/`(empty)` with their first byte
/// escaped, everything else through [`escape_text`].
#[inline]
fn write_string(out: &mut Vec<u8>, s: &[u8], in_container: bool) {
    if s.is_empty() {
        if !in_container {
            out.extend_from_slice(b"(empty)");
        }
        return;
    }
    if s == b"-" || s == b"(empty)" {
        push_hex(out, s[0]);
        escape_text(out, &s[1..], in_container);
        return;
    }
    escape_text(out, s, in_container);
}

#[inline]
fn push_hex(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(&[b'\\', b'x', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
}

#[inline]
fn needs_escape(b: u8, in_container: bool) -> bool {
    !(0x20..0x7f).contains(&b) || b == b'\\' || (in_container && b == b',')
}

/// Appends bytes with backslash as `\\`, non-printable bytes as `\xHH` and, in a container, the
/// set separator as `\x2c`. Runs of plain bytes are copied at once.
#[inline]
fn escape_text(out: &mut Vec<u8>, s: &[u8], in_container: bool) {
    let mut plain = 0;
    for (i, &b) in s.iter().enumerate() {
        if needs_escape(b, in_container) {
            out.extend_from_slice(&s[plain..i]);
            if b == b'\\' {
                out.extend_from_slice(b"\\\\");
            } else {
                push_hex(out, b);
            }
            plain = i + 1;
        }
    }
    out.extend_from_slice(&s[plain..]);
}
