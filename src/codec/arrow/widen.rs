//! Arrow types that other tools write, read as the types weir reads (issue 59): a column
//! without weir's Zeek type metadata ([`super::schema::ZEEK_TYPE_KEY`]) of a narrower or
//! other encoding is cast, before typing and reading, to the one weir maps to a Zeek type:
//!
//! | written by other tools | read as | Zeek type |
//! | --- | --- | --- |
//! | `Int8`, `Int16`, `Int32` (SQL `INTEGER`) | `Int64` | `int` |
//! | `UInt8`, `UInt32` | `UInt64` | `count` (`UInt16` stays: a `port`, as weir writes them) |
//! | `Float16`, `Float32` | `Float64` | `double` |
//! | `Date32`, `Date64` (SQL `DATE`) | `Timestamp(ms)`: midnight UTC | `time` |
//! | `LargeUtf8`, `Utf8View`, dictionaries of strings | `Utf8` | `string` |
//! | lists of the above | lists of the targets | `vector` |
//!
//! Timestamps of any unit and zone are read as they are (their values are UTC). Columns with
//! weir's metadata are weir's own and exact: never cast.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use super::schema::ZEEK_TYPE_KEY;
use super::ArrowCodecError;

/// The type a foreign column of type `dt` is read as (`dt` itself when weir reads it as is).
fn target(dt: &DataType) -> DataType {
    match dt {
        DataType::Int8 | DataType::Int16 | DataType::Int32 => DataType::Int64,
        DataType::UInt8 | DataType::UInt32 => DataType::UInt64,
        DataType::Float16 | DataType::Float32 => DataType::Float64,
        DataType::Date32 | DataType::Date64 => DataType::Timestamp(TimeUnit::Millisecond, None),
        DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
        DataType::Dictionary(_, v)
            if matches!(
                **v,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            ) =>
        {
            DataType::Utf8
        }
        DataType::List(f) | DataType::LargeList(f) => {
            let inner = target(f.data_type());
            DataType::List(Arc::new(f.as_ref().clone().with_data_type(inner)))
        }
        other => other.clone(),
    }
}

/// `schema` with each foreign column's type replaced by the one it is read as (metadata kept).
pub fn widen_schema(schema: &Schema) -> Schema {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            if f.metadata().contains_key(ZEEK_TYPE_KEY) {
                f.as_ref().clone()
            } else {
                f.as_ref().clone().with_data_type(target(f.data_type()))
            }
        })
        .collect();
    Schema::new(fields).with_metadata(schema.metadata().clone())
}

/// `batch` with its foreign columns cast as [`widen_schema`] says; the batch itself when none
/// is. A value the cast cannot take is an error naming the column.
pub fn widen_batch(batch: RecordBatch) -> Result<RecordBatch, ArrowCodecError> {
    let wanted: SchemaRef = Arc::new(widen_schema(&batch.schema()));
    if *wanted == *batch.schema() {
        return Ok(batch);
    }
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (column, field) in batch.columns().iter().zip(wanted.fields()) {
        if column.data_type() == field.data_type() {
            columns.push(column.clone());
            continue;
        }
        let cast =
            arrow_cast::cast(column, field.data_type()).map_err(|e| ArrowCodecError::Schema {
                field: field.name().clone(),
                problem: format!(
                    "cannot read Arrow type {} as {}: {e}",
                    column.data_type(),
                    field.data_type()
                ),
            })?;
        columns.push(cast);
    }
    RecordBatch::try_new(wanted, columns).map_err(|e| ArrowCodecError::Schema {
        field: String::new(),
        problem: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Int8Type;
    use arrow_array::{
        Array, Date32Array, DictionaryArray, Int32Array, LargeStringArray, UInt8Array,
    };

    #[test]
    fn foreign_widths_are_cast_and_weirs_own_columns_kept() {
        let own = Field::new("p", DataType::UInt16, true).with_metadata(
            std::collections::HashMap::from([(ZEEK_TYPE_KEY.to_string(), "port".to_string())]),
        );
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int32, true),
            Field::new("u", DataType::UInt8, true),
            Field::new("d", DataType::Date32, true),
            Field::new("s", DataType::LargeUtf8, true),
            Field::new(
                "k",
                DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8)),
                true,
            ),
            own,
        ]));
        let dict: DictionaryArray<Int8Type> = vec!["a", "b", "a"].into_iter().collect();
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(vec![Some(-5), None, Some(i32::MAX)])),
                Arc::new(UInt8Array::from(vec![1, 2, 255])),
                Arc::new(Date32Array::from(vec![0, 1, 14_566])),
                Arc::new(LargeStringArray::from(vec!["x", "y", "z"])),
                Arc::new(dict),
                Arc::new(arrow_array::UInt16Array::from(vec![80, 443, 53])),
            ],
        )
        .unwrap();
        let wide = widen_batch(batch).unwrap();
        let types: Vec<DataType> = wide
            .schema()
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        assert_eq!(
            types,
            [
                DataType::Int64,
                DataType::UInt64,
                DataType::Timestamp(TimeUnit::Millisecond, None),
                DataType::Utf8,
                DataType::Utf8,
                DataType::UInt16,
            ]
        );
        let n = wide
            .column(0)
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .unwrap();
        assert_eq!(
            (n.value(0), n.is_null(1), n.value(2)),
            (-5, true, i64::from(i32::MAX))
        );
        let d = wide
            .column(2)
            .as_any()
            .downcast_ref::<arrow_array::TimestampMillisecondArray>()
            .unwrap();
        // 2009-11-18 is day 14,566 of the epoch: midnight UTC.
        assert_eq!(d.value(2), 14_566 * 86_400_000);
        let k = wide
            .column(4)
            .as_any()
            .downcast_ref::<arrow_array::StringArray>()
            .unwrap();
        assert_eq!((k.value(0), k.value(1), k.value(2)), ("a", "b", "a"));
    }
}
