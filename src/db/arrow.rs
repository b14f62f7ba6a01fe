//! The engine's output as Arrow [`RecordBatch`]es for the embedding API: a plain
//! expression's [`Hits`](crate::query::Hits) through [`crate::query::to_arrow`] (a batch
//! stored in columns decoded from its columns), a chain's slices of msgpack rows through
//! [`ArrowBuilder`] (the same conversion `--to arrow` writes). Both give the same arrays for
//! the same events.

use arrow_array::RecordBatch;

use crate::codec::arrow::{ArrowBuilder, ArrowCodecError, ArrowForm};
use crate::query::export::Part;

/// The first `take` events of `part` as record batches (one, unless its rows pass
/// [`ArrowBuilder::MAX_BYTES`]), each with the schema [`crate::codec::arrow::arrow_schema`]
/// gives the part's schema.
pub(crate) fn record_batches(
    part: &Part,
    take: usize,
) -> Result<Vec<RecordBatch>, ArrowCodecError> {
    if let Part::Hits(hits) = part {
        return hits.record_batches(ArrowForm::Interchange, None, take);
    }
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
