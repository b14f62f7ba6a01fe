//! Msgpack rows to record batches for the stream writers: the one loop by which every
//! writer's [`EventWriter::write_rows`](crate::codec::event_writer::EventWriter::write_rows)
//! is its `write_record_batch`.
//!
//! The rows of one call are appended to an [`ArrowBuilder`] (kept by the writer from call to
//! call, so that its buffers keep their capacity) and written as one record batch, or more
//! when they pass [`ArrowBuilder::MAX_BYTES`]. A row that does not decode as its schema says
//! ends the call: the rows before it are written, nothing of it, and the error names the
//! schema and the row's index among the rows of the call.

use std::sync::Arc;

use arrow_array::RecordBatch;

use crate::codec::arrow::{ArrowBuilder, ArrowForm};
use crate::codec::event_writer::{EventWriter, WriteError};
use crate::types::SchemaRef;

/// The builder a writer keeps between calls: that of the last schema written.
#[derive(Debug)]
pub(crate) struct RowBatches {
    form: ArrowForm,
    builder: Option<ArrowBuilder>,
}

impl RowBatches {
    /// No builder yet; batches will be of `form`.
    pub(crate) fn new(form: ArrowForm) -> RowBatches {
        RowBatches {
            form,
            builder: None,
        }
    }

    /// Writes `rows` of `schema` through `write`, a record batch at a time (see the module
    /// docs). `write` is given each batch and `out`.
    pub(crate) fn write(
        &mut self,
        schema: &SchemaRef,
        rows: &mut dyn Iterator<Item = &[u8]>,
        out: &mut Vec<u8>,
        mut write: impl FnMut(&RecordBatch, &mut Vec<u8>) -> Result<(), WriteError>,
    ) -> Result<(), WriteError> {
        let rows: Vec<&[u8]> = rows.collect();
        if rows.is_empty() {
            return Ok(());
        }
        let mut builder = match self.builder.take() {
            Some(b) if Arc::ptr_eq(b.schema(), schema) || **b.schema() == **schema => b,
            _ => match self.form {
                ArrowForm::Interchange => ArrowBuilder::new(schema.clone()),
                ArrowForm::Exact => ArrowBuilder::exact(schema.clone()),
            },
        };
        let result = write_all(&mut builder, schema, &rows, out, &mut write);
        self.builder = Some(builder);
        result
    }
}

/// [`EventWriter::write_rows`] of a writer that keeps its [`RowBatches`] where `batches`
/// says: the rows as record batches, each written by its
/// [`EventWriter::write_record_batch`].
pub(crate) fn write_rows<W: EventWriter>(
    writer: &mut W,
    batches: fn(&mut W) -> &mut RowBatches,
    schema: &SchemaRef,
    rows: &mut dyn Iterator<Item = &[u8]>,
    out: &mut Vec<u8>,
) -> Result<(), WriteError> {
    let slot = batches(writer);
    let form = slot.form;
    let mut taken = std::mem::replace(slot, RowBatches::new(form));
    let result = taken.write(schema, rows, out, |rb, out| {
        writer.write_record_batch(schema, rb, out)
    });
    *batches(writer) = taken;
    result
}

fn write_all(
    builder: &mut ArrowBuilder,
    schema: &SchemaRef,
    rows: &[&[u8]],
    out: &mut Vec<u8>,
    write: &mut impl FnMut(&RecordBatch, &mut Vec<u8>) -> Result<(), WriteError>,
) -> Result<(), WriteError> {
    let decode = |row: usize, source| WriteError::Decode {
        schema: schema.name.clone(),
        row,
        source,
    };
    let batch = |builder: &mut ArrowBuilder| {
        builder
            .finish()
            .map_err(|e| WriteError::Io(std::io::Error::other(format!("arrow: {e}"))))
    };
    // The first row the builder holds.
    let mut start = 0;
    for (i, row) in rows.iter().enumerate() {
        if let Err(source) = builder.append(row) {
            // The builder's columns are out of step: start over with the rows before the bad
            // one, which are written; nothing of the bad one is.
            *builder =
                ArrowBuilder::with_arrow_schema(schema.clone(), builder.arrow_schema().clone());
            for r in &rows[start..i] {
                builder.append(r).map_err(|source| decode(i, source))?;
            }
            if !builder.is_empty() {
                write(&batch(builder)?, out)?;
            }
            return Err(decode(i, source));
        }
        if builder.is_full() {
            write(&batch(builder)?, out)?;
            start = i + 1;
        }
    }
    if !builder.is_empty() {
        write(&batch(builder)?, out)?;
    }
    Ok(())
}
