//! The CSV writer (`--to csv`): RFC 4180 text for spreadsheets and data tools.
//!
//! # Layout
//! ```text
//! ts,uid,id.orig_h,id.orig_p,id.resp_h,id.resp_p,proto,service,duration,...,tunnel_parents
//! 2009-11-18T08:00:21.486539Z,Pii6cUUq1v4,192.168.1.102,68,192.168.1.1,67,udp,dhcp,0.163820,...,
//! ```
//! - A header line with the field names (dotted Zeek names, `id.orig_h`) starts the output, and
//!   every change of the column names starts a new section: an empty line, then the new
//!   header line (events of several schemas with the same columns, as `select #type, ...`
//!   gives them, are one section; [`CsvWriter::by_schema`], `weir export --by-schema`, starts one
//!   at each change of schema instead). Write one schema per file (`weir export --to csv --output DIR` does, one file per
//!   schema) or select one schema (`#type == "zeek.conn"`) where a tool expects a single
//!   table.
//! - Fields are separated by `,`; a cell is quoted with `"` when it holds a `,`, a `"`, a CR or
//!   a LF, and a `"` inside a quoted cell is doubled (RFC 4180; the quoting rules of the `csv`
//!   crate's `csv-core`, style "necessary").
//! - Lines end with LF (`\n`), as the `csv` crate and most Unix tools write them. RFC 4180
//!   says CRLF; readers of CSV (the `csv` crate, Python's `csv`, DuckDB, pandas, LibreOffice,
//!   Excel) accept both. Line breaks inside a value are kept as they are, inside its quotes.
//! - UTF-8 without a byte order mark.
//!
//! # Values
//! As [`crate::codec::cells`] writes them: times as ISO 8601 UTC
//! (`2009-11-18T08:00:21.486539Z`), intervals as seconds with the exact fraction
//! (`0.163820`), `true`/`false`, containers as their elements joined by `,` in one (quoted)
//! cell, invalid UTF-8 as `\xHH`; control characters are kept (inside quotes where needed).
//! An unset value is an empty cell; a set value with no text (an empty string or container) is
//! the quoted empty cell `""`, which tools such as DuckDB read as an empty string where they
//! read an empty cell as NULL. A row of a single unset field is an empty line, which some
//! readers skip.
//!
//! Cells are written as they are: a string starting with `=`, `+`, `-` or `@` is not
//! defused against formula evaluation in spreadsheets.

use arrow_array::RecordBatch;

use crate::codec::arrow::ArrowForm;
use crate::codec::cells::{push_cells, Cell, CellKind, Controls};
use crate::codec::event_writer::{EventWriter, WriteError};
use crate::codec::row_batches::{write_rows, RowBatches};
use crate::codec::text_format::{same_columns, text_columns};
use crate::types::SchemaRef;

/// Writes events as CSV. See the module docs for the layout.
pub struct CsvWriter {
    /// Schema of the open section, if any.
    current: Option<SchemaRef>,
    /// A section per schema, also where schemas have the same column names
    /// ([`CsvWriter::by_schema`]).
    by_schema: bool,
    /// Whether a section was written since the start (or [`EventWriter::finish`]).
    started: bool,
    /// Decides which cells need quotes, and how to quote.
    quoting: csv_core::Writer,
    /// The text of the cells of the row being written, and their ends.
    text: Vec<u8>,
    cells: Vec<Cell>,
    rows: RowBatches,
}

impl std::fmt::Debug for CsvWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsvWriter")
            .field("current", &self.current.as_ref().map(|s| s.name.clone()))
            .finish()
    }
}

impl Default for CsvWriter {
    fn default() -> Self {
        CsvWriter::new()
    }
}

impl CsvWriter {
    /// A CSV writer.
    pub fn new() -> CsvWriter {
        CsvWriter {
            current: None,
            by_schema: false,
            started: false,
            quoting: csv_core::WriterBuilder::new()
                .quote_style(csv_core::QuoteStyle::Necessary)
                .build(),
            text: Vec::new(),
            cells: Vec::new(),
            rows: RowBatches::new(ArrowForm::Exact),
        }
    }

    /// A header (a section) per schema even where schemas have the same column names, as
    /// before the timeline (`weir export --to csv --by-schema`).
    pub fn by_schema(mut self, on: bool) -> CsvWriter {
        self.by_schema = on;
        self
    }

    /// Starts the section of `schema`: an empty line after an earlier section, then the header.
    fn open_section(&mut self, schema: &SchemaRef, out: &mut Vec<u8>) {
        if self.started {
            out.push(b'\n');
        }
        for (i, f) in schema.fields.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            push_field(&self.quoting, f.name.as_bytes(), out);
        }
        out.push(b'\n');
        self.current = Some(schema.clone());
        self.started = true;
    }
}

/// Appends one cell, quoted when it needs to be.
#[inline]
fn push_field(quoting: &csv_core::Writer, cell: &[u8], out: &mut Vec<u8>) {
    if !quoting.should_quote(cell) {
        out.extend_from_slice(cell);
        return;
    }
    out.push(b'"');
    let start = out.len();
    // At most two bytes per byte of input (every one a doubled quote).
    out.resize(start + 2 * cell.len(), 0);
    let (_, _, n) = csv_core::quote(cell, &mut out[start..], b'"', b'\\', true);
    out.truncate(start + n);
    out.push(b'"');
}

impl EventWriter for CsvWriter {
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
        if !same_columns(self.current.as_ref(), schema, self.by_schema) {
            self.open_section(schema, out);
        }
        for row in 0..batch.num_rows() {
            self.text.clear();
            self.cells.clear();
            push_cells(
                &columns,
                row,
                Controls::Keep,
                &mut self.text,
                &mut self.cells,
            );
            let mut start = 0;
            for (j, cell) in self.cells.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                match cell.kind {
                    CellKind::Unset => {}
                    CellKind::Empty => out.extend_from_slice(b"\"\""),
                    CellKind::Text => push_field(&self.quoting, &self.text[start..cell.end], out),
                }
                start = cell.end;
            }
            out.push(b'\n');
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

    fn finish(&mut self, _out: &mut Vec<u8>) {
        self.current = None;
        self.started = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(s: &[u8]) -> String {
        let mut o = Vec::new();
        push_field(&CsvWriter::new().quoting, s, &mut o);
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn a_change_of_schema_starts_a_section() {
        use crate::types::{Field, Schema, Type};
        use crate::value::{encode_row, Value};
        let a = Schema::new("a", vec![Field::new("x,y", Type::Count)]).into_shared();
        let b = Schema::new(
            "b",
            vec![Field::new("s", Type::String), Field::new("t", Type::Bool)],
        )
        .into_shared();
        let row = |values: &[Value]| {
            let mut buf = Vec::new();
            encode_row(values, &mut buf);
            buf
        };
        let (ra, rb) = (
            row(&[Value::Count(1)]),
            row(&[Value::Null, Value::Bool(true)]),
        );
        let mut w = CsvWriter::new();
        let mut out = Vec::new();
        for (schema, r) in [(&a, &ra), (&a, &ra), (&b, &rb), (&a, &ra)] {
            w.write_rows(schema, &mut std::iter::once(&r[..]), &mut out)
                .unwrap();
        }
        w.finish(&mut out);
        w.write_rows(&b, &mut std::iter::once(&rb[..]), &mut out)
            .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"x,y\"\n1\n1\n\ns,t\n,true\n\n\"x,y\"\n1\ns,t\n,true\n"
        );
    }

    #[test]
    fn cells_are_quoted_only_when_needed() {
        assert_eq!(field(b"plain text"), "plain text");
        assert_eq!(field(b"a,b"), "\"a,b\"");
        assert_eq!(field(b"say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field(b"\""), "\"\"\"\"");
        assert_eq!(field(b"line\nbreak"), "\"line\nbreak\"");
        assert_eq!(field(b"cr\r"), "\"cr\r\"");
        assert_eq!(field("é".as_bytes()), "é");
    }
}
