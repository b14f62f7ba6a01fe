//! The Zeek TSV writer: the layout of Zeek's ASCII log writer.
//!
//! # Layout
//! ```text
//! #separator \x09
//! #set_separator<TAB>,
//! #empty_field<TAB>(empty)
//! #unset_field<TAB>-
//! #path<TAB>conn
//! #open<TAB>2014-05-23-18-02-04
//! #fields<TAB>ts<TAB>uid<TAB>...
//! #types<TAB>time<TAB>string<TAB>...
//! 1258531221.486539<TAB>Pii6cUUq1v4<TAB>...
//! #close<TAB>2014-05-23-18-02-35
//! ```
//! A header block starts the output and every change of schema; the block of the previous
//! schema is ended by `#close` first. `#open`/`#close` carry the wall-clock time of writing in
//! UTC (Zeek writes local time), or a fixed time set with [`ZeekTsvWriter::with_clock`].
//!
//! # Values
//! Written from Arrow record batches ([`EventWriter::write_record_batch`]; rows become batches
//! first), by the row walk of `codec::text_format`:
//! - unset: `-`; an empty container or empty string: `(empty)`;
//! - `bool`: `T`/`F`; `count`, `int`, `port`: decimal;
//! - `time`, `interval`: exact decimal seconds from the nanoseconds, at least 6 fraction digits
//!   (`1258531221.486539`), more only when needed (`1258531221.486539123`);
//! - `double`: the shortest text that re-reads to the identical `f64`, `.0` after integral
//!   values, `inf`, `-inf`, `nan`;
//! - `addr`, `subnet`: `192.168.1.1`, `2001:db8::1`, `10.0.0.0/8`;
//! - containers: elements joined by `,` (unset elements `-`).
//!
//! # Escaping
//! So that the output re-reads to identical values, string-like values (`string`, `enum`,
//! `pattern`, `file`), field names and the path are escaped as Zeek does: a backslash as `\\`,
//! bytes below 0x20, 0x7f and above (so the tab separator too) as `\xHH`, and inside containers
//! the set separator `,` as `\x2c`. A string equal to `-` or `(empty)` (a whole value, or a
//! container element) gets its first byte escaped (`\x2d`, `\x28empty)`), so that it is not
//! taken for the unset or empty marker. An empty string inside a container is written as
//! nothing (`a,,b`; a container of one empty string is an empty field). A line whose first
//! field starts with `#` (a string, or a container's first element) has that `#` written as
//! `\x23`, as Zeek does, so that it is not read as a header or comment line.
//!
//! The format has one ambiguity, in Zeek too: a container holding a single unset element is
//! written `-`, the unset marker, and reads back as an unset container.

use arrow_array::RecordBatch;

use crate::codec::arrow::ArrowForm;
use crate::codec::event_writer::{EventWriter, WriteError};
use crate::codec::row_batches::{write_rows, RowBatches};
use crate::codec::text_format::{text_columns, write_row, ListText, Scalar, TextFormat};
use crate::codec::zeek::scalar::{push_decimal_ns, push_double, push_zeek_stamp};
use crate::types::SchemaRef;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes events as Zeek TSV logs. See the module docs for the layout.
pub struct ZeekTsvWriter {
    /// Schema of the open header block, if any.
    current: Option<SchemaRef>,
    clock: fn() -> i64,
    rows: RowBatches,
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
            rows: RowBatches::new(ArrowForm::Exact),
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
        schema: &SchemaRef,
        batch: &RecordBatch,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        let columns = text_columns(schema, batch)?;
        if batch.num_rows() == 0 {
            return Ok(());
        }
        if !self.same_schema(schema) {
            self.open_block(schema, out);
        }
        for row in 0..batch.num_rows() {
            let start = out.len();
            write_row(&mut Tsv, &columns, row, out);
            // A data line must not start with `#`, or readers take it for a header line:
            // Zeek writes that first `#` as `\x23` (the reader unescapes it).
            if out.get(start) == Some(&b'#') {
                out.splice(start..start + 1, *b"\\x23");
            }
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

    fn begin_row(&mut self, _out: &mut Vec<u8>) {}

    #[inline]
    fn end_row(&mut self, out: &mut Vec<u8>) {
        out.push(b'\n');
    }

    #[inline]
    fn field(&mut self, i: usize, set: bool, out: &mut Vec<u8>) {
        if i > 0 {
            out.push(b'\t');
        }
        if !set {
            out.push(b'-');
        }
    }

    #[inline]
    fn scalar(&mut self, v: Scalar<'_>, in_list: bool, out: &mut Vec<u8>) {
        match v {
            Scalar::Bool(b) => out.push(if b { b'T' } else { b'F' }),
            Scalar::Time(ns) => push_decimal_ns(out, ns),
            Scalar::Double(d) => {
                push_double(out, d, false);
            }
            Scalar::String(s) => write_string(out, s, in_list),
            Scalar::Addr(a) => out.extend_from_slice(a),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &[u8], c: bool) -> String {
        let mut o = Vec::new();
        write_string(&mut o, s, c);
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn escapes_like_zeek() {
        assert_eq!(esc(b"a\tb", false), "a\\x09b");
        assert_eq!(esc(b"a,b", false), "a,b");
        assert_eq!(esc(b"a,b", true), "a\\x2cb");
        assert_eq!(esc(b"a\\,b", false), "a\\\\,b");
        assert_eq!(esc(b"-", false), "\\x2d");
        assert_eq!(esc(b"-", true), "\\x2d");
        assert_eq!(esc(b"(empty)", false), "\\x28empty)");
        assert_eq!(esc(b"", false), "(empty)");
        assert_eq!(esc(b"", true), "");
        assert_eq!(esc(&[0xff, 0x7f, b'\n'], false), "\\xff\\x7f\\x0a");
        assert_eq!(esc(b"--", false), "--");
    }
}
