//! Rows as cells of plain text: the values of the table ([`crate::codec::table_writer`]) and
//! CSV ([`crate::codec::csv_writer`]) writers, for people and spreadsheets rather than for
//! reading back.
//!
//! # Values
//! One cell per field of the schema, in schema order, read from a row of an Arrow record batch
//! by the row walk of `codec::text_format` (which also says which Arrow columns hold which
//! Zeek types). A cell's text is:
//! - `bool`: `true` / `false`;
//! - `count`, `int`, `port`: decimal (a port without its protocol, as Zeek TSV writes it);
//! - `interval`: seconds with the exact fraction, at least 6 digits (`0.163820`), as Zeek TSV;
//! - `double`: the shortest text that re-reads to the identical `f64`, `.0` after integral
//!   values, `inf`, `-inf`, `nan`, as Zeek TSV;
//! - `time`: ISO 8601 / RFC 3339 in UTC with the exact fraction, at least 6 digits
//!   (`2009-11-18T08:00:21.486539Z`), the JSON writer's default text;
//! - `addr`, `subnet`: `192.168.1.1`, `2001:db8::1`, `10.0.0.0/8`;
//! - string-like (`string`, `enum`, `pattern`, `file`): the text as it is when it is valid
//!   UTF-8; each byte of an invalid UTF-8 sequence is the four characters `\xHH` (lowercase
//!   hex), the text the JSON writer's strings decode to ([`crate::codec::arrow::push_escaped_utf8`]).
//!   In the table, control characters (U+0000–U+001F, U+007F and
//!   U+0080–U+009F) are written as the `\xHH` of each of their UTF-8 bytes too (a newline is
//!   `\x0a`), so that a value cannot break a line or steer the terminal;
//! - containers: their elements joined by `,`, as Zeek TSV; an unset element is `-`; a `,`
//!   inside a string element is `\x2c` (as Zeek TSV writes it), so that the elements can be
//!   told apart.
//!
//! Whether a value is unset, or set with no text (an empty string or container), is the
//! cell's kind, for the writer to show as it does (`-` / `(empty)` in the table, an
//! empty cell / `""` in CSV). A container whose one element is the empty string has no text
//! either, and is shown as empty.
//!
//! These texts do not read back to the identical values in every case (`\xHH` written by
//! escaping cannot be told from the same four characters in the data, nor a `,` escaped in a
//! container from a literal `\x2c`): use `zeek-tsv`, `json`, `arrow` or `parquet` to move
//! data between tools without loss.

use crate::codec::text_format::{write_row, ListText, Scalar, TextColumn, TextFormat};
use crate::codec::zeek::scalar::{push_double, push_rfc3339};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Whether the text of strings keeps control characters as they are (CSV, where quoting
/// keeps line breaks inside a cell) or escapes them (the table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Controls {
    /// Control characters are written as they are.
    Keep,
    /// Control characters are written as `\xHH` per UTF-8 byte.
    Escape,
}

/// What a cell holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CellKind {
    /// The field is unset; the cell has no text.
    Unset,
    /// The field is set but has no text: an empty string or an empty container.
    Empty,
    /// The field's text.
    Text,
}

/// The end of a cell's text in the text buffer, and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cell {
    /// Byte offset just past the cell's text.
    pub end: usize,
    /// What the cell holds.
    pub kind: CellKind,
}

/// Appends the cells of row `row` of the columns of a batch
/// ([`crate::codec::text_format::text_columns`]): the text of each field to `text` and its
/// [`Cell`] to `cells`, one per field.
#[inline]
pub(crate) fn push_cells(
    columns: &[TextColumn<'_>],
    row: usize,
    controls: Controls,
    text: &mut Vec<u8>,
    cells: &mut Vec<Cell>,
) {
    let mut format = Cells {
        controls,
        cells,
        start: 0,
        set: false,
        open: false,
    };
    write_row(&mut format, columns, row, text);
}

/// Cells as a [`TextFormat`]: no punctuation but `,` between a container's elements; each
/// field's [`Cell`] recorded when the next one starts, or the row ends.
struct Cells<'a> {
    controls: Controls,
    cells: &'a mut Vec<Cell>,
    /// Where the open cell's text starts.
    start: usize,
    /// Whether the open cell's field is set.
    set: bool,
    /// Whether a cell is open.
    open: bool,
}

impl Cells<'_> {
    /// Records the open cell, if any, as ending at `end`.
    #[inline]
    fn close(&mut self, end: usize) {
        if !self.open {
            return;
        }
        self.open = false;
        let kind = if !self.set {
            CellKind::Unset
        } else if end == self.start {
            CellKind::Empty
        } else {
            CellKind::Text
        };
        self.cells.push(Cell { end, kind });
    }
}

impl TextFormat for Cells<'_> {
    const LIST: ListText = ListText {
        open: b"",
        close: b"",
        empty: b"",
        unset: b"-",
    };

    #[inline]
    fn begin_row(&mut self, _out: &mut Vec<u8>) {
        self.open = false;
    }

    #[inline]
    fn field(&mut self, _i: usize, set: bool, out: &mut Vec<u8>) {
        self.close(out.len());
        self.start = out.len();
        self.set = set;
        self.open = true;
    }

    #[inline]
    fn end_row(&mut self, out: &mut Vec<u8>) {
        self.close(out.len());
    }

    #[inline]
    fn scalar(&mut self, v: Scalar<'_>, in_list: bool, out: &mut Vec<u8>) {
        match v {
            Scalar::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            Scalar::Double(d) => {
                push_double(out, d, false);
            }
            Scalar::Time(ns) => push_rfc3339(out, ns),
            Scalar::String(s) => push_text(out, s, in_list, self.controls),
            Scalar::Addr(a) => out.extend_from_slice(a),
        }
    }
}

#[inline]
fn push_hex(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(&[b'\\', b'x', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
}

/// Appends string bytes as text: valid UTF-8 as it is, but `,` in a container and (with
/// [`Controls::Escape`]) control characters as `\xHH` per byte; each byte of invalid UTF-8 as
/// `\xHH`. Runs of plain bytes are copied at once.
#[inline]
pub(crate) fn push_text(out: &mut Vec<u8>, s: &[u8], in_list: bool, controls: Controls) {
    let escape = controls == Controls::Escape;
    for chunk in s.utf8_chunks() {
        let v = chunk.valid().as_bytes();
        let mut plain = 0;
        let mut i = 0;
        while i < v.len() {
            let b = v[i];
            let n = if (in_list && b == b',') || (escape && (b < 0x20 || b == 0x7f)) {
                1
            } else if escape && b == 0xc2 && v.get(i + 1).is_some_and(|&c| c < 0xa0) {
                // U+0080..U+009F, the C1 controls (the second byte of valid UTF-8 is >= 0x80).
                2
            } else {
                0
            };
            if n == 0 {
                i += 1;
                continue;
            }
            out.extend_from_slice(&v[plain..i]);
            for &b in &v[i..i + n] {
                push_hex(out, b);
            }
            i += n;
            plain = i;
        }
        out.extend_from_slice(&v[plain..]);
        for &b in chunk.invalid() {
            push_hex(out, b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::arrow::ArrowBuilder;
    use crate::codec::text_format::text_columns;
    use crate::types::{Field, Schema, Type};
    use crate::value::{encode_row, Value};

    fn text(s: &[u8], in_list: bool, controls: Controls) -> String {
        let mut o = Vec::new();
        push_text(&mut o, s, in_list, controls);
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn strings_are_text_with_invalid_utf8_escaped() {
        use Controls::*;
        assert_eq!(text(b"a,b", false, Keep), "a,b");
        assert_eq!(text(b"a,b", true, Keep), "a\\x2cb");
        assert_eq!(text(b"a\nb\x1b", false, Keep), "a\nb\x1b");
        assert_eq!(text(b"a\nb\x1b\x7f", false, Escape), "a\\x0ab\\x1b\\x7f");
        assert_eq!(text("é\u{9b}€".as_bytes(), false, Escape), "é\\xc2\\x9b€");
        assert_eq!(text(&[0xff, b'a', 0xc3], false, Keep), "\\xffa\\xc3");
        // The text the Arrow and JSON writers decode to.
        let bytes = [b'x', 0xe2, 0x82, b'y', 0xc3, 0xa9];
        let mut arrow = String::new();
        crate::codec::arrow::push_escaped_utf8(&mut arrow, &bytes);
        assert_eq!(text(&bytes, false, Keep), arrow);
    }

    #[test]
    fn cells_of_every_type() {
        let types = [
            "bool",
            "count",
            "int",
            "double",
            "time",
            "interval",
            "string",
            "addr",
            "subnet",
            "port",
            "set[string]",
            "vector[count]",
            "string",
            "set[string]",
            "string",
        ];
        let schema = Schema::new(
            "zeek.t",
            types
                .iter()
                .enumerate()
                .map(|(i, t)| Field::new(format!("f{i}"), Type::parse(t).unwrap()))
                .collect(),
        );
        let a: std::net::IpAddr = "2001:db8::1".parse().unwrap();
        let row = [
            Value::Bool(false),
            Value::Count(1 << 40),
            Value::Int(-300),
            Value::Double(f64::NEG_INFINITY),
            Value::Time(1_258_531_221_486_539_000),
            Value::Interval(163_820_000),
            Value::String(b"a,\"b\"".to_vec()),
            Value::Addr(a),
            Value::Subnet(a, 64),
            Value::Port(80),
            Value::List(vec![Value::String(b"x,y".to_vec()), Value::Null]),
            Value::List(vec![]),
            Value::String(vec![]),
            Value::List(vec![Value::String(vec![])]),
            Value::Null,
        ];
        let mut buf = Vec::new();
        encode_row(&row, &mut buf);
        let schema = schema.into_shared();
        let mut builder = ArrowBuilder::exact(schema.clone());
        builder.append(&buf).unwrap();
        let batch = builder.finish().unwrap();
        let columns = text_columns(&schema, &batch).unwrap();
        let (mut text, mut cells) = (Vec::new(), Vec::new());
        push_cells(&columns, 0, Controls::Keep, &mut text, &mut cells);
        let mut start = 0;
        let got: Vec<(String, CellKind)> = cells
            .iter()
            .map(|c| {
                let t = String::from_utf8(text[start..c.end].to_vec()).unwrap();
                start = c.end;
                (t, c.kind)
            })
            .collect();
        use CellKind::*;
        let want = [
            ("false", Text),
            ("1099511627776", Text),
            ("-300", Text),
            ("-inf", Text),
            ("2009-11-18T08:00:21.486539Z", Text),
            ("0.163820", Text),
            ("a,\"b\"", Text),
            ("2001:db8::1", Text),
            ("2001:db8::1/64", Text),
            ("80", Text),
            ("x\\x2cy,-", Text),
            ("", Empty),
            ("", Empty),
            ("", Empty),
            ("", Unset),
        ];
        let want: Vec<(String, CellKind)> = want.iter().map(|(t, k)| (t.to_string(), *k)).collect();
        assert_eq!(got, want);
    }
}
