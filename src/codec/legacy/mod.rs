//! The writers of main, formatting msgpack rows directly (temporary: the property test
//! `batch_writers` compares them with the writers that format record batches, before they
//! are deleted).
#![allow(missing_docs)]

pub mod cells;
pub mod csv_writer;
pub mod json_writer;
pub mod table_writer;
pub mod text_format;
pub mod tsv_writer;

use crate::codec::event_writer::WriteError;
use crate::types::SchemaRef;
use crate::value::DecodeError;

pub(crate) fn write_each<'a>(
    schema: &SchemaRef,
    rows: impl Iterator<Item = &'a [u8]>,
    out: &mut Vec<u8>,
    mut write: impl FnMut(&'a [u8], &mut Vec<u8>) -> Result<(), DecodeError>,
) -> Result<(), WriteError> {
    for (i, row) in rows.enumerate() {
        let start = out.len();
        if let Err(source) = write(row, out) {
            out.truncate(start);
            return Err(WriteError::Decode {
                schema: schema.name.clone(),
                row: i,
                source,
            });
        }
    }
    Ok(())
}
