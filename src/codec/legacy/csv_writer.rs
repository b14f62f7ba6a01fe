//! The msgpack row walk of main (temporary: compared with the batch path by a test).
#![allow(dead_code, missing_docs)]

use super::cells::{push_cells, Cell, CellKind, Controls};
use crate::codec::event_writer::{EventWriter, WriteError};
use crate::types::SchemaRef;

/// Writes events as CSV. See the module docs for the layout.
pub struct CsvWriter {
    /// Schema of the open section, if any.
    current: Option<SchemaRef>,
    /// Whether a section was written since the start (or [`EventWriter::finish`]).
    started: bool,
    /// Decides which cells need quotes, and how to quote.
    quoting: csv_core::Writer,
    /// The text of the cells of the row being written, and their ends.
    text: Vec<u8>,
    cells: Vec<Cell>,
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
            started: false,
            quoting: csv_core::WriterBuilder::new()
                .quote_style(csv_core::QuoteStyle::Necessary)
                .build(),
            text: Vec::new(),
            cells: Vec::new(),
        }
    }

    fn same_schema(&self, schema: &SchemaRef) -> bool {
        match &self.current {
            Some(cur) => std::sync::Arc::ptr_eq(cur, schema) || **cur == **schema,
            None => false,
        }
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
            self.open_section(schema, out);
        }
        for (i, row) in rows.enumerate() {
            self.text.clear();
            self.cells.clear();
            // The row is formatted whole before any of it is written: a bad row leaves `out`
            // as it was.
            push_cells(schema, row, Controls::Keep, &mut self.text, &mut self.cells).map_err(
                |source| WriteError::Decode {
                    schema: schema.name.clone(),
                    row: i,
                    source,
                },
            )?;
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

    fn finish(&mut self, _out: &mut Vec<u8>) {
        self.current = None;
        self.started = false;
    }
}
