//! The one decoder of a batch stored in columns ([`Columns`], segment format 4 on) into an
//! Arrow [`RecordBatch`]: each column decoded from the encoding it was kept in, straight into
//! the array of [`super::arrow_schema`]'s type for its field, so that the lake, `--to arrow`
//! and the embedding API's batches get the same arrays as from the batch's rows through
//! [`ArrowBuilder`](super::ArrowBuilder) (the tests compare both, for every format and codec).
//!
//! # Encodings
//!
//! | column kept as | decoded |
//! | --- | --- |
//! | integer planes, as their numbers ([`Columns::ints`]) | each number checked against the field's type, into a primitive array, the rows without one null |
//! | marked integers ([`Columns::marked`]) | each value's width from its marker, the same checks |
//! | a dictionary ([`Columns::dict`]) | the entries decoded once (by the row converter's own appenders), then taken by the rows' codes (`arrow_select::take`): a `Utf8` array as from the rows, no `DictionaryArray`, so the lake and IPC types do not change |
//! | msgpack values ([`Columns::column`], blocks included) | the row converter's per-type appenders, a column at a time |
//!
//! # Forms
//!
//! The arrays are of the types of the Arrow schema given, in either [`super::ArrowForm`]:
//! the interchange form of [`super::arrow_schema`] (the lake, IPC, the embedding API) or the
//! exact form of [`super::schema::exact_arrow_schema`] (strings as `binary`, intervals as
//! `duration[ns]`), which the text writers take, so that an export in text never rebuilds
//! msgpack rows either.
//!
//! # Projection and selection
//!
//! `fields` (schema indices) picks the columns and their order; the record batch's schema is
//! that of [`super::arrow_schema`] projected to them (the schema's metadata kept). Only
//! those columns need to have been inflated. `select` (row indices, strictly ascending, each
//! below the batch's rows) keeps those rows alone: a dictionary takes their codes, numbers
//! are picked by index, a column of msgpack values skips the others' bytes without decoding
//! them.
//!
//! # Errors
//!
//! A column that does not decode as its field (a value of another type, a number out of the
//! type's range, fewer or more values than the batch's rows) is
//! [`ArrowCodecError::DecodeColumn`] naming the schema and the field; a projection or a
//! selection that does not fit the batch is an error too. Nothing here panics on damaged
//! columns: every code, length and index is checked before it is used.

use std::sync::Arc;

use arrow_array::types::{
    DurationNanosecondType, Float64Type, Int64Type, TimestampNanosecondType, UInt16Type, UInt64Type,
};
use arrow_array::{ArrayRef, PrimitiveArray, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field as ArrowField, Schema as ArrowSchema, TimeUnit};

use super::builder::FieldColumn;
use super::schema::interval_seconds;
use super::ArrowCodecError;
use crate::segment::marked::{value, Marked, KINDS, NEG, SIGNED, UNSET};
use crate::segment::{Columns, Ints};
use crate::types::{SchemaRef, Type};
use crate::value::{DecodeError, RowCursor};

/// Decodes the columns `cols` of a batch of `schema` (whose Arrow schema is `arrow`, that of
/// either [`super::ArrowForm`]: [`super::arrow_schema`] or
/// [`super::schema::exact_arrow_schema`]) into a record batch of the fields `fields` (schema indices;
/// `None`: all, in order) and the rows `select` (ascending indices; `None`: all). See the
/// module docs.
pub fn decode_columns(
    schema: &SchemaRef,
    arrow: &Arc<ArrowSchema>,
    cols: &Columns,
    fields: Option<&[usize]>,
    select: Option<&[usize]>,
) -> Result<RecordBatch, ArrowCodecError> {
    let n = schema.fields.len();
    if cols.len() != n || arrow.fields().len() != n {
        return Err(ArrowCodecError::DecodeColumn {
            schema: schema.name.clone(),
            field: String::new(),
            source: DecodeError::FieldCount {
                got: cols.len(),
                want: n,
            },
        });
    }
    let rows = cols.rows();
    if let Some(select) = select {
        check_selection(select, rows).map_err(|problem| ArrowCodecError::Read {
            schema: schema.name.clone(),
            source: problem.into(),
        })?;
    }
    let all: Vec<usize>;
    let fields = match fields {
        Some(f) => f,
        None => {
            all = (0..n).collect();
            &all
        }
    };
    let out_schema = match fields.len() == n && fields.iter().enumerate().all(|(k, &c)| k == c) {
        true => arrow.clone(),
        false => Arc::new(arrow.project(fields)?),
    };
    let mut arrays = Vec::with_capacity(fields.len());
    for &c in fields {
        let field = &schema.fields[c];
        let bad = |source: DecodeError| ArrowCodecError::DecodeColumn {
            schema: schema.name.clone(),
            field: field.name.clone(),
            source,
        };
        let af = arrow.field(c);
        let array = if let Some(ints) = cols.ints(c) {
            ints_array(ints, &field.ty, af, rows, select).map_err(bad)?
        } else if let Some(m) = cols.marked(c) {
            marked_array(m, &field.ty, af, select).map_err(bad)?
        } else if let Some((dict, enc)) = cols.dict(c) {
            let entries = dict.entries(enc);
            let (lo, hi) = dict.code_bytes(enc);
            dict_array(entries, (lo, hi), &field.ty, af, rows, select).map_err(|e| match e {
                Failed::Decode(e) => bad(e),
                Failed::Arrow(e) => e,
            })?
        } else {
            values_array(cols.column(c), &field.ty, af, rows, select).map_err(|e| match e {
                Failed::Decode(e) => bad(e),
                Failed::Arrow(e) => e,
            })?
        };
        arrays.push(array);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(select.map_or(rows, <[_]>::len)));
    Ok(RecordBatch::try_new_with_options(
        out_schema, arrays, &options,
    )?)
}

/// Checks that `select` is strictly ascending and below `rows`.
fn check_selection(select: &[usize], rows: usize) -> Result<(), String> {
    if let Some(r) = select.iter().find(|&&r| r >= rows) {
        return Err(format!("row {r} selected of a batch of {rows}"));
    }
    if let Some(w) = select.windows(2).find(|w| w[0] >= w[1]) {
        return Err(format!("rows {} and {} selected out of order", w[0], w[1]));
    }
    Ok(())
}

/// Why a column did not decode: its bytes, or Arrow.
enum Failed {
    Decode(DecodeError),
    Arrow(ArrowCodecError),
}

impl From<DecodeError> for Failed {
    fn from(e: DecodeError) -> Failed {
        Failed::Decode(e)
    }
}

impl From<ArrowCodecError> for Failed {
    fn from(e: ArrowCodecError) -> Failed {
        Failed::Arrow(e)
    }
}

/// A column of msgpack values (`data`, `rows` of them) of type `ty` through the row
/// converter's appenders: all of them (then exactly `rows` values, or an error), or the rows
/// `select`, the others skipped.
fn values_array(
    data: &[u8],
    ty: &Type,
    af: &ArrowField,
    rows: usize,
    select: Option<&[usize]>,
) -> Result<ArrayRef, Failed> {
    let mut col = FieldColumn::new(ty, af);
    let mut r = RowCursor::new(data);
    match select {
        None => {
            col.append_values(&mut r, rows, ty)?;
            if r.position() != data.len() {
                return Err(Failed::Decode(DecodeError::Trailing {
                    at: r.position(),
                    len: data.len(),
                }));
            }
        }
        Some(select) => {
            let mut next = 0;
            for &s in select {
                r.skip_many(s - next)?;
                col.append_values(&mut r, 1, ty)?;
                next = s + 1;
            }
        }
    }
    Ok(col.finish()?)
}

/// A dictionary column: its `entries` (msgpack values) decoded once as an array of `ty`,
/// then taken by the codes (`lo`, and `hi` for dictionaries of more than 256 entries) of
/// the rows (all `rows`, or `select`).
fn dict_array<'a>(
    entries: impl Iterator<Item = &'a [u8]>,
    (lo, hi): (&[u8], &[u8]),
    ty: &Type,
    af: &ArrowField,
    rows: usize,
    select: Option<&[usize]>,
) -> Result<ArrayRef, Failed> {
    let mut col = FieldColumn::new(ty, af);
    let mut count = 0u32;
    for e in entries {
        let mut r = RowCursor::new(e);
        col.append_values(&mut r, 1, ty)?;
        if r.position() != e.len() {
            return Err(Failed::Decode(DecodeError::Trailing {
                at: r.position(),
                len: e.len(),
            }));
        }
        count += 1;
    }
    let values = col.finish()?;
    if lo.len() != rows || !(hi.is_empty() || hi.len() == rows) {
        return Err(Failed::Decode(DecodeError::Truncated(lo.len() + hi.len())));
    }
    let code = |r: usize| u32::from(lo[r]) | hi.get(r).map_or(0, |&h| u32::from(h) << 8);
    let codes: UInt32Array = match select {
        None => (0..rows).map(code).collect(),
        Some(select) => select.iter().map(|&r| code(r)).collect(),
    };
    // `take` panics on an index past the entries: every code is checked first.
    if let Some(k) = codes.values().iter().position(|&c| c >= count) {
        return Err(Failed::Decode(DecodeError::Unexpected {
            marker: lo.get(k).copied().unwrap_or_default(),
            ty: ty.to_string(),
            at: k,
        }));
    }
    Ok(arrow_select::take::take(&values, &codes, None).map_err(ArrowCodecError::from)?)
}

/// The Arrow array of numbers of type `ty` (`count`, `int`, `time`, `interval`, `port`):
/// `value(k)` gives the `k`-th of `len` rows' number (`None`: unset) as an `i128`, and the
/// marker to name in an error; a number out of the type's range is an error, as the row
/// converter's.
fn numbers_array(
    ty: &Type,
    af: &ArrowField,
    len: usize,
    mut value: impl FnMut(usize) -> (Option<i128>, u8),
) -> Result<ArrayRef, DecodeError> {
    let mut valid = Vec::with_capacity(len);
    let mut nulls = 0usize;
    /// The array of `$t` whose values are `$conv` of each set number `v`.
    macro_rules! build {
        ($t:ty, $v:ident => $conv:expr) => {{
            let mut values = Vec::with_capacity(len);
            for k in 0..len {
                match value(k) {
                    (None, _) => {
                        values.push(Default::default());
                        valid.push(false);
                        nulls += 1;
                    }
                    (Some($v), m) => {
                        let out = $conv.ok_or_else(|| DecodeError::Unexpected {
                            marker: m,
                            ty: ty.to_string(),
                            at: k,
                        })?;
                        values.push(out);
                        valid.push(true);
                    }
                }
            }
            let nulls = (nulls > 0).then(|| NullBuffer::from(valid));
            PrimitiveArray::<$t>::new(ScalarBuffer::from(values), nulls)
        }};
    }
    Ok(match ty {
        Type::Count => Arc::new(build!(UInt64Type, v => u64::try_from(v).ok())),
        Type::Port => Arc::new(build!(UInt16Type, v => u16::try_from(v).ok())),
        Type::Int => Arc::new(build!(Int64Type, v => i64::try_from(v).ok())),
        Type::Time => Arc::new(
            build!(TimestampNanosecondType, v => i64::try_from(v).ok()).with_timezone("UTC"),
        ),
        Type::Interval if matches!(af.data_type(), DataType::Duration(TimeUnit::Nanosecond)) => {
            Arc::new(build!(DurationNanosecondType, v => i64::try_from(v).ok()))
        }
        Type::Interval => {
            Arc::new(build!(Float64Type, v => i64::try_from(v).ok().map(interval_seconds)))
        }
        other => {
            return Err(DecodeError::Unexpected {
                marker: 0,
                ty: other.to_string(),
                at: 0,
            })
        }
    })
}

/// A column of integer planes kept as its numbers (the bits of an `i64` each).
fn ints_array(
    ints: &Ints,
    ty: &Type,
    af: &ArrowField,
    rows: usize,
    select: Option<&[usize]>,
) -> Result<ArrayRef, DecodeError> {
    if ints.values.len() != rows || ints.set.len() != rows.div_ceil(64) {
        return Err(DecodeError::Truncated(ints.values.len()));
    }
    let at = |r: usize| {
        let set = ints.set[r / 64] >> (r % 64) & 1 == 1;
        // The marker of an `int 64`, the form the planes rebuild a number in.
        (set.then_some(ints.values[r] as i64 as i128), 0xd3)
    };
    match select {
        None => numbers_array(ty, af, rows, at),
        Some(select) => numbers_array(ty, af, select.len(), |k| at(select[k])),
    }
}

/// A marked column: each value's number read by its marker (a signed form as an `i64`, an
/// unsigned one as a `u64`).
fn marked_array(
    m: Marked<'_>,
    ty: &Type,
    af: &ArrowField,
    select: Option<&[usize]>,
) -> Result<ArrayRef, DecodeError> {
    let rows = m.markers.len();
    let number = |(v, kind): (u64, u8)| match kind {
        UNSET => None,
        NEG | SIGNED => Some(v as i64 as i128),
        _ => Some(i128::from(v)),
    };
    match select {
        None => {
            // 64 rows at a time, each value's width from its marker.
            let mut numbers = vec![0u64; rows];
            let mut pos = 0;
            for (k, chunk) in numbers.chunks_mut(64).enumerate() {
                m.numbers(k * 64, &mut pos, chunk);
            }
            numbers_array(ty, af, rows, |r| {
                let marker = m.markers[r];
                let kind = KINDS[usize::from(marker)] >> 4;
                (number((numbers[r], kind)), marker)
            })
        }
        Some(select) => {
            // A selected row's payload starts after those of the rows before it.
            let (mut next, mut pos) = (0, 0);
            numbers_array(ty, af, select.len(), |k| {
                let r = select[k];
                pos += m.payload_len(next..r);
                next = r + 1;
                let marker = m.markers[r];
                (number(value(&m, r, &mut pos)), marker)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use arrow_array::{Array, UInt32Array};

    use super::*;
    use crate::codec::arrow::{arrow_schema, ArrowBuilder};
    use crate::types::{Field, Schema};
    use crate::value::{encode_row, Value};

    /// A schema of a time, a count, a string of few values (a dictionary when asked), an
    /// address of few values, and a set; and `n` rows of it (some values unset), as rows
    /// back to back and their offsets.
    fn rows(n: usize) -> (SchemaRef, Vec<u8>, Vec<u32>) {
        let schema = Arc::new(Schema::new(
            "t",
            vec![
                Field::new("ts", Type::Time),
                Field::new("n", Type::Count),
                Field::new("state", Type::String),
                Field::new("host", Type::Addr),
                Field::new("tags", Type::Set(Box::new(Type::String))),
            ],
        ));
        let (mut data, mut offsets) = (Vec::new(), Vec::new());
        for i in 0..n {
            offsets.push(data.len() as u32);
            let unset = i % 13 == 4;
            let row = [
                Value::Time(1_600_000_000_000_000_000 + i as i64 * 1_000),
                if unset {
                    Value::Null
                } else {
                    Value::Count((i * 977) as u64)
                },
                match i % 5 {
                    4 => Value::Null,
                    k => Value::String(format!("S{k}").into_bytes()),
                },
                Value::Addr(std::net::IpAddr::from([10, 0, 0, (i % 3) as u8])),
                Value::List(vec![Value::String(b"a".to_vec()); i % 3]),
            ];
            encode_row(&row, &mut data);
        }
        (schema, data, offsets)
    }

    /// The rows through the row converter, all fields.
    fn from_rows(schema: &SchemaRef, data: &[u8], offsets: &[u32]) -> RecordBatch {
        let mut b = ArrowBuilder::new(schema.clone());
        for (k, &o) in offsets.iter().enumerate() {
            let end = offsets.get(k + 1).map_or(data.len(), |&e| e as usize);
            b.append(&data[o as usize..end]).unwrap();
        }
        b.finish().unwrap()
    }

    /// Columns of msgpack values and of dictionaries decode to the record batch of the rows,
    /// projected and selected alike (some rows, none, all; fields reordered).
    #[test]
    fn columns_decode_as_their_rows_with_projections_and_selections() {
        let (schema, data, offsets) = rows(700);
        let arrow = Arc::new(arrow_schema(&schema));
        let want = from_rows(&schema, &data, &offsets);
        for as_dicts in [&[][..], &[false, false, true, true, false][..]] {
            let cols = Columns::split_rows(&data, &offsets, 5, as_dicts).unwrap();
            assert_eq!(cols.dict(2).is_some(), !as_dicts.is_empty());
            let all = decode_columns(&schema, &arrow, &cols, None, None).unwrap();
            assert_eq!(all, want);
            let some: Vec<usize> = (0..700).filter(|r| r % 7 == 3).collect();
            let every: Vec<usize> = (0..700).collect();
            for select in [&some[..], &[][..], &every[..], &[699][..]] {
                for fields in [&[3usize, 0][..], &[2][..], &[0, 1, 2, 3, 4][..]] {
                    let got =
                        decode_columns(&schema, &arrow, &cols, Some(fields), Some(select)).unwrap();
                    let idx: UInt32Array = select.iter().map(|&r| r as u32).collect();
                    let expected =
                        arrow_select::take::take_record_batch(&want.project(fields).unwrap(), &idx)
                            .unwrap();
                    assert_eq!(got, expected, "{fields:?} {} rows", select.len());
                    assert_eq!(got.schema(), Arc::new(arrow.project(fields).unwrap()));
                }
            }
        }
    }

    /// A column whose values are not of its field's type is an error naming the field.
    #[test]
    fn a_column_of_another_type_is_an_error_naming_its_field() {
        let (schema, data, offsets) = rows(50);
        let cols = Columns::split_rows(&data, &offsets, 5, &[]).unwrap();
        let mut fields = schema.fields.clone();
        fields[1] = Field::new("n", Type::Addr);
        let wrong = Arc::new(Schema::new("t", fields));
        let arrow = Arc::new(arrow_schema(&wrong));
        let e = decode_columns(&wrong, &arrow, &cols, None, None).unwrap_err();
        assert!(
            matches!(&e, ArrowCodecError::DecodeColumn { field, .. } if field == "n"),
            "{e}"
        );
        assert!(e.to_string().contains("field n"), "{e}");
    }

    /// Columns that hold fewer or more values than the batch claims, a selection past the
    /// rows or out of order, and a projection past the schema are errors, never panics; the
    /// first two name a field.
    #[test]
    fn columns_not_of_the_batch_s_rows_are_errors() {
        let (schema, data, offsets) = rows(64);
        let arrow = Arc::new(arrow_schema(&schema));
        for (claim, dicts) in [(65, false), (63, false), (65, true), (63, true)] {
            let as_dicts = if dicts {
                vec![false, false, true, true, false]
            } else {
                vec![]
            };
            let cols = Columns::split_rows(&data, &offsets, 5, &as_dicts)
                .unwrap()
                .claiming_rows(claim);
            let e = decode_columns(&schema, &arrow, &cols, None, None).unwrap_err();
            assert!(
                matches!(&e, ArrowCodecError::DecodeColumn { field, .. } if !field.is_empty()),
                "{claim} {dicts}: {e}"
            );
            // The dictionary alone: its codes are not as many as the rows.
            if dicts {
                let e = decode_columns(&schema, &arrow, &cols, Some(&[2]), None).unwrap_err();
                assert!(e.to_string().contains("field state"), "{e}");
            }
        }
        let cols = Columns::split_rows(&data, &offsets, 5, &[]).unwrap();
        for select in [&[64][..], &[3, 3][..], &[5, 2][..]] {
            let e = decode_columns(&schema, &arrow, &cols, None, Some(select)).unwrap_err();
            assert!(e.to_string().contains("selected"), "{e}");
        }
        assert!(decode_columns(&schema, &arrow, &cols, Some(&[5]), None).is_err());
        // A selection reads nothing past its last row: a short column still gives them.
        let short = Columns::split_rows(&data, &offsets, 5, &[])
            .unwrap()
            .claiming_rows(100);
        let got = decode_columns(&schema, &arrow, &short, None, Some(&[0, 63])).unwrap();
        assert_eq!(got.num_rows(), 2);
        let e = decode_columns(&schema, &arrow, &short, None, Some(&[64])).unwrap_err();
        assert!(matches!(e, ArrowCodecError::DecodeColumn { .. }), "{e}");
        assert_eq!(got.column(1).null_count(), 0);
    }
}
