//! The one conversion of the engine's output to Arrow: a [`Part`] of msgpack rows into
//! [`RecordBatch`]es, through [`ArrowBuilder`] (the same conversion `--to arrow` writes).
//!
//! It is the only place the embedding API turns rows into Arrow: when the engine produces
//! Arrow batches itself, this file is what goes.

use arrow_array::RecordBatch;

use crate::codec::arrow::{ArrowBuilder, ArrowCodecError};
use crate::query::export::Part;

/// The first `take` events of `part` as record batches (one, unless its rows pass
/// [`ArrowBuilder::MAX_BYTES`]), each with the schema [`crate::codec::arrow::arrow_schema`]
/// gives the part's schema.
pub(crate) fn record_batches(
    part: &Part,
    take: usize,
) -> Result<Vec<RecordBatch>, ArrowCodecError> {
    let mut builder = ArrowBuilder::new(part.schema().clone());
    let mut out = Vec::new();
    for (row_index, row) in part.rows().take(take).enumerate() {
        builder
            .append(row)
            .map_err(|source| ArrowCodecError::Decode {
                schema: part.schema().name.clone(),
                row: row_index,
                source,
            })?;
        if builder.is_full() {
            out.push(builder.finish()?);
        }
    }
    if !builder.is_empty() {
        out.push(builder.finish()?);
    }
    Ok(out)
}
