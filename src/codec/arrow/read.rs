//! Arrow record batches back to weir batches: the reading side of Arrow IPC and Parquet.

use std::net::IpAddr;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    DurationNanosecondType, Float64Type, Int64Type, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, TimeUnit};

use super::schema::interval_from_seconds;
use super::ArrowCodecError;
use crate::batch::{Batch, BatchBuilder};
use crate::codec::zeek::scalar::{parse_addr, parse_subnet};
use crate::types::{SchemaRef, Type};
use crate::value::RowEncoder;

/// A column viewed as the Zeek type it holds.
enum Col<'a> {
    Bool(&'a arrow_array::BooleanArray),
    Count(&'a arrow_array::UInt64Array),
    Int(&'a arrow_array::Int64Array),
    Double(&'a arrow_array::Float64Array),
    /// `time`, and `interval` as earlier weir versions wrote it: nanoseconds.
    Nanos(&'a [i64]),
    /// `time` in another unit (other tools write microseconds): the values and nanoseconds
    /// per unit.
    Scaled(&'a [i64], i64),
    /// `interval`: seconds ([`super::schema::interval_seconds`]).
    Seconds(&'a arrow_array::Float64Array),
    Port(&'a arrow_array::UInt16Array),
    Text(&'a arrow_array::StringArray),
    Addr(&'a arrow_array::StringArray),
    Subnet(&'a arrow_array::StringArray),
}

impl<'a> Col<'a> {
    /// Views `array` as values of the scalar type `ty`; `None` if it holds another type.
    fn new(array: &'a ArrayRef, ty: &Type) -> Option<Col<'a>> {
        Some(match ty {
            Type::Bool => Col::Bool(array.as_boolean_opt()?),
            Type::Count => Col::Count(array.as_primitive_opt::<UInt64Type>()?),
            Type::Int => Col::Int(array.as_primitive_opt::<Int64Type>()?),
            Type::Double => Col::Double(array.as_primitive_opt::<Float64Type>()?),
            Type::Time => match array.data_type() {
                DataType::Timestamp(TimeUnit::Microsecond, _) => Col::Scaled(
                    array
                        .as_primitive_opt::<TimestampMicrosecondType>()?
                        .values(),
                    1_000,
                ),
                DataType::Timestamp(TimeUnit::Millisecond, _) => Col::Scaled(
                    array
                        .as_primitive_opt::<TimestampMillisecondType>()?
                        .values(),
                    1_000_000,
                ),
                DataType::Timestamp(TimeUnit::Second, _) => Col::Scaled(
                    array.as_primitive_opt::<TimestampSecondType>()?.values(),
                    1_000_000_000,
                ),
                _ => Col::Nanos(
                    array
                        .as_primitive_opt::<TimestampNanosecondType>()?
                        .values(),
                ),
            },
            Type::Interval => match array.as_primitive_opt::<Float64Type>() {
                Some(a) => Col::Seconds(a),
                None => Col::Nanos(array.as_primitive_opt::<DurationNanosecondType>()?.values()),
            },
            Type::Port => Col::Port(array.as_primitive_opt::<UInt16Type>()?),
            Type::Addr => Col::Addr(array.as_string_opt::<i32>()?),
            Type::Subnet => Col::Subnet(array.as_string_opt::<i32>()?),
            _ => Col::Text(array.as_string_opt::<i32>()?),
        })
    }

    /// Encodes value `i` (known to be set). `Err` carries the text of an address or subnet
    /// that does not parse.
    #[inline]
    fn encode(&self, i: usize, enc: &mut RowEncoder<'_>) -> Result<(), String> {
        match self {
            Col::Bool(a) => enc.bool(a.value(i)),
            Col::Count(a) => enc.uint(a.value(i)),
            Col::Int(a) => enc.int(a.value(i)),
            Col::Double(a) => enc.double(a.value(i)),
            Col::Nanos(v) => enc.int(v[i]),
            Col::Scaled(v, per) => enc.int(
                v[i].checked_mul(*per)
                    .ok_or_else(|| format!("{} (beyond the nanoseconds of an i64)", v[i]))?,
            ),
            Col::Seconds(a) => {
                let s = a.value(i);
                enc.int(interval_from_seconds(s).ok_or_else(|| s.to_string())?)
            }
            Col::Port(a) => enc.uint(a.value(i) as u64),
            Col::Text(a) => enc.bytes(a.value(i).as_bytes()),
            Col::Addr(a) => {
                let t = a.value(i);
                let addr: IpAddr = parse_addr(t.as_bytes()).ok_or_else(|| t.to_string())?;
                enc.addr(addr);
            }
            Col::Subnet(a) => {
                let t = a.value(i);
                let (addr, p) = parse_subnet(t.as_bytes()).ok_or_else(|| t.to_string())?;
                enc.subnet(addr, p);
            }
        }
        Ok(())
    }
}

/// A column of a record batch: a scalar, or a list of scalars.
enum Column<'a> {
    Scalar(&'a dyn Array, Col<'a>),
    List(&'a arrow_array::ListArray, Col<'a>, &'a dyn Array),
}

/// Converts a record batch of `schema` (as [`super::zeek_schema`] read it from the batch's
/// Arrow schema) into weir batches of at most `max_rows` rows each.
pub fn record_batch_to_batches(
    rb: &RecordBatch,
    schema: &SchemaRef,
    max_rows: usize,
) -> Result<Vec<Batch>, ArrowCodecError> {
    let bad = |field: &str, problem: String| ArrowCodecError::Schema {
        field: field.to_string(),
        problem,
    };
    if rb.num_columns() != schema.fields.len() {
        return Err(bad(
            "*",
            format!(
                "batch has {} columns, schema {}",
                rb.num_columns(),
                schema.fields.len()
            ),
        ));
    }
    let mut columns = Vec::with_capacity(schema.fields.len());
    for (field, array) in schema.fields.iter().zip(rb.columns()) {
        let mismatch = || {
            bad(
                &field.name,
                format!(
                    "Zeek type {} stored as Arrow type {}",
                    field.ty,
                    array.data_type()
                ),
            )
        };
        columns.push(match field.ty.element() {
            Some(inner) => {
                let list = array.as_list_opt::<i32>().ok_or_else(mismatch)?;
                let values = list.values();
                let col = Col::new(values, inner).ok_or_else(mismatch)?;
                Column::List(list, col, values.as_ref())
            }
            None => Column::Scalar(
                array.as_ref(),
                Col::new(array, &field.ty).ok_or_else(mismatch)?,
            ),
        });
    }
    let ts = schema.ts_index();
    let ts_values = ts.and_then(|i| match &columns[i] {
        Column::Scalar(a, Col::Nanos(v)) => Some((*a, *v, 1)),
        Column::Scalar(a, Col::Scaled(v, per)) => Some((*a, *v, *per)),
        _ => None,
    });
    let max_rows = max_rows.max(1);
    let mut out = Vec::new();
    let mut builder = BatchBuilder::new(schema.clone());
    for row in 0..rb.num_rows() {
        let mut enc = builder.begin_row();
        for (c, field) in columns.iter().zip(&schema.fields) {
            let result = match c {
                Column::Scalar(a, col) => {
                    if a.is_null(row) {
                        enc.null();
                        Ok(())
                    } else {
                        col.encode(row, &mut enc)
                    }
                }
                Column::List(list, col, values) => {
                    if list.is_null(row) {
                        enc.null();
                        Ok(())
                    } else {
                        let offs = list.value_offsets();
                        let (start, end) = (offs[row] as usize, offs[row + 1] as usize);
                        enc.array((end - start) as u32);
                        (start..end).try_for_each(|j| {
                            if values.is_null(j) {
                                enc.null();
                                Ok(())
                            } else {
                                col.encode(j, &mut enc)
                            }
                        })
                    }
                }
            };
            if let Err(text) = result {
                return Err(bad(
                    &field.name,
                    format!("invalid {} value {text:?} in row {row}", field.ty),
                ));
            }
        }
        let ts = ts_values
            .and_then(|(a, v, per)| (!a.is_null(row)).then(|| v[row].checked_mul(per)).flatten());
        builder.finish_row(ts);
        if builder.len() >= max_rows {
            out.push(builder.finish());
        }
    }
    if !builder.is_empty() {
        out.push(builder.finish());
    }
    Ok(out)
}
