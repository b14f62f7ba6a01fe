//! A batch slice of a search, and a batch's [`Hits`], as Arrow [`RecordBatch`]es: the one
//! way the engine's scan output becomes Arrow (the embedding API's batches, `--to arrow`, the
//! lake's selected rows).
//!
//! A sealed batch stored in columns is decoded from its columns by
//! [`crate::codec::arrow::decode_columns`] (only the projected ones inflated; dictionaries,
//! integer planes and marked columns straight from their encodings; only the selected rows
//! taken), and its msgpack rows are never rebuilt. Anything else (a batch in the row layout, a
//! batch of the write-ahead log, rows narrowed to a projection) goes through the row converter
//! [`ArrowBuilder`] and is projected afterwards. Both give the arrays of the
//! [`ArrowForm`] asked for (the interchange types of [`crate::codec::arrow::arrow_schema`],
//! or the exact ones the text writers take), the same for the same events (the tests
//! compare them on every segment format and codec). A batch of [`ArrowBuilder::MAX_BYTES`]
//! of rows or more is converted from its rows, in record batches of at most that many bytes.

use std::sync::Arc;

use arrow_array::RecordBatch;

use super::search::Hits;
use crate::codec::arrow::{decode_columns, ArrowBuilder, ArrowCodecError, ArrowForm};
use crate::segment::Columns;
use crate::store::BatchRef;

/// The events `select` (indices among the slice's rows, strictly ascending; `None`: all) of
/// the batch slice `batch` as record batches in the Arrow form `form` (one, unless converted from rows of more than
/// [`ArrowBuilder::MAX_BYTES`]), of the fields `fields` (indices of the batch's schema, in
/// the order wanted; `None`: all). A field index past the schema, a selected row past the
/// slice, or a column or row that does not decode is an error (naming the field or the row).
pub fn record_batches(
    batch: &BatchRef,
    form: ArrowForm,
    fields: Option<&[usize]>,
    select: Option<&[usize]>,
) -> Result<Vec<RecordBatch>, ArrowCodecError> {
    let schema = batch.schema();
    let arrow = Arc::new(form.schema(schema));
    if let Some(f) = fields.and_then(|f| f.iter().find(|&&f| f >= schema.fields.len())) {
        return Err(ArrowCodecError::Schema {
            field: format!("#{f}"),
            problem: format!("no such field in schema {}", schema.name),
        });
    }
    let want = fields.map(|f| {
        let mut want = vec![false; schema.fields.len()];
        for &c in f {
            want[c] = true;
        }
        want
    });
    if let Some(cols) = encoded_columns(batch, want.as_deref()) {
        let cols = cols?;
        if cols.raw_size() < ArrowBuilder::MAX_BYTES {
            return Ok(vec![decode_columns(schema, &arrow, &cols, fields, select)?]);
        }
    }
    from_rows(batch, &arrow, fields, select)
}

/// The columns of `batch` that `want` marks (all without it) as the decoder takes them
/// ([`BatchRef::encoded_columns`]; `None` when it is not a whole batch stored in columns).
/// When they cannot be read (a column that does not inflate, or fails its checksum), the
/// error names the first wanted field that cannot be read alone
/// ([`ArrowCodecError::ReadColumn`]), else the batch ([`ArrowCodecError::Read`]).
pub fn encoded_columns(
    batch: &BatchRef,
    want: Option<&[bool]>,
) -> Option<Result<Columns, ArrowCodecError>> {
    let e = match batch.encoded_columns(want)? {
        Ok(cols) => return Some(Ok(cols)),
        Err(e) => e,
    };
    let schema = batch.schema();
    let n = schema.fields.len();
    let failed = (0..n)
        .filter(|&c| want.is_none_or(|w| w.get(c) == Some(&true)))
        .find_map(|c| {
            let mut one = vec![false; n];
            one[c] = true;
            match batch.encoded_columns(Some(&one)) {
                Some(Err(e)) => Some((c, e)),
                _ => None,
            }
        });
    Some(Err(match failed {
        Some((c, source)) => ArrowCodecError::ReadColumn {
            schema: schema.name.clone(),
            field: schema.fields[c].name.clone(),
            source: source.into(),
        },
        None => ArrowCodecError::Read {
            schema: schema.name.clone(),
            source: e.into(),
        },
    }))
}

/// [`record_batches`] through the row converter.
fn from_rows(
    batch: &BatchRef,
    arrow: &Arc<arrow_schema::Schema>,
    fields: Option<&[usize]>,
    select: Option<&[usize]>,
) -> Result<Vec<RecordBatch>, ArrowCodecError> {
    let schema = batch.schema();
    if let Some(select) = select {
        let len = batch.len();
        let bad = select
            .iter()
            .find(|&&r| r >= len)
            .map(|r| format!("row {r} selected of a batch slice of {len}"))
            .or_else(|| {
                select
                    .windows(2)
                    .find(|w| w[0] >= w[1])
                    .map(|w| format!("rows {} and {} selected out of order", w[0], w[1]))
            });
        if let Some(problem) = bad {
            return Err(ArrowCodecError::Read {
                schema: schema.name.clone(),
                source: problem.into(),
            });
        }
    }
    let mut builder = ArrowBuilder::with_arrow_schema(schema.clone(), arrow.clone());
    let mut out = Vec::new();
    let finish = |b: &mut ArrowBuilder, out: &mut Vec<RecordBatch>| {
        let rb = b.finish()?;
        out.push(match fields {
            Some(f) => rb.project(f)?,
            None => rb,
        });
        Ok::<_, ArrowCodecError>(())
    };
    let mut picked = select.map(|s| s.iter().peekable());
    for (i, row) in batch.rows().enumerate() {
        if let Some(p) = picked.as_mut() {
            match p.peek() {
                None => break,
                Some(&&r) if r != i => continue,
                Some(_) => {
                    p.next();
                }
            }
        }
        builder
            .append(row)
            .map_err(|source| ArrowCodecError::Decode {
                schema: schema.name.clone(),
                row: i,
                source,
            })?;
        if builder.is_full() {
            finish(&mut builder, &mut out)?;
        }
    }
    if !builder.is_empty() || out.is_empty() {
        finish(&mut builder, &mut out)?;
    }
    Ok(out)
}

impl Hits {
    /// The first `take` matching events as record batches ([`record_batches`]) of the fields
    /// `fields` (indices of [`Hits::schema`]; `None`: all): decoded from the batch's columns
    /// when it is stored so, without rebuilding its rows.
    pub fn record_batches(
        &self,
        form: ArrowForm,
        fields: Option<&[usize]>,
        take: usize,
    ) -> Result<Vec<RecordBatch>, ArrowCodecError> {
        let first: Vec<usize>;
        let select = match self.selected() {
            Some(s) => Some(&s[..take.min(s.len())]),
            None if take < self.len() => {
                first = (0..take).collect();
                Some(&first[..])
            }
            None => None,
        };
        record_batches(self.batch(), form, fields, select)
    }
}
