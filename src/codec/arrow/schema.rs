//! Zeek types and schemas as Arrow types and schemas, and back: the one mapping (the table is
//! in [`crate::codec::arrow`]).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field as ArrowField, Schema as ArrowSchema, TimeUnit};

use super::ArrowCodecError;
use crate::types::{Field, Schema, Type};

/// Field metadata key holding the Zeek type name (`count`, `set[addr]`, …).
pub const ZEEK_TYPE_KEY: &str = "zeek.type";

/// Schema metadata key holding the weir schema name (`zeek.conn`).
pub const SCHEMA_NAME_KEY: &str = "zeek.schema";

/// The Arrow type of a Zeek type (see the table in [`crate::codec::arrow`]).
pub fn arrow_type(ty: &Type) -> DataType {
    match ty {
        Type::Bool => DataType::Boolean,
        Type::Count => DataType::UInt64,
        Type::Int => DataType::Int64,
        Type::Double => DataType::Float64,
        Type::Time => DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
        Type::Interval => DataType::Duration(TimeUnit::Nanosecond),
        Type::Port => DataType::UInt16,
        Type::String | Type::Enum | Type::Pattern | Type::File | Type::Addr | Type::Subnet => {
            DataType::Utf8
        }
        Type::Set(t) | Type::Vector(t) | Type::Table(t) => {
            DataType::List(Arc::new(ArrowField::new("item", arrow_type(t), true)))
        }
    }
}

/// The Arrow field of a Zeek field: same name (dots kept), nullable (unset is null), the Zeek
/// type name in the field metadata under [`ZEEK_TYPE_KEY`].
pub fn arrow_field(field: &Field) -> ArrowField {
    ArrowField::new(field.name.clone(), arrow_type(&field.ty), true).with_metadata(HashMap::from([
        (ZEEK_TYPE_KEY.to_string(), field.ty.to_string()),
    ]))
}

/// The Arrow schema of a weir schema: its fields in order, the schema's name in the schema
/// metadata under [`SCHEMA_NAME_KEY`].
pub fn arrow_schema(schema: &Schema) -> ArrowSchema {
    ArrowSchema::new(schema.fields.iter().map(arrow_field).collect::<Vec<_>>()).with_metadata(
        HashMap::from([(SCHEMA_NAME_KEY.to_string(), schema.name.clone())]),
    )
}

/// The Zeek type an Arrow type stands for when a field has no [`ZEEK_TYPE_KEY`] (a file
/// written by another tool): the inverse of [`arrow_type`] on exactly its types, with every
/// string as `string` and every list as `vector`.
fn zeek_type(dt: &DataType) -> Option<Type> {
    Some(match dt {
        DataType::Boolean => Type::Bool,
        DataType::UInt64 => Type::Count,
        DataType::Int64 => Type::Int,
        DataType::Float64 => Type::Double,
        DataType::Timestamp(TimeUnit::Nanosecond, _) => Type::Time,
        DataType::Duration(TimeUnit::Nanosecond) => Type::Interval,
        DataType::UInt16 => Type::Port,
        DataType::Utf8 => Type::String,
        DataType::List(f) => {
            let inner = zeek_type(f.data_type())?;
            if inner.is_container() {
                return None;
            }
            Type::Vector(Box::new(inner))
        }
        _ => return None,
    })
}

/// The weir schema of an Arrow schema: the name from [`SCHEMA_NAME_KEY`] (else `default`),
/// each field's type from its [`ZEEK_TYPE_KEY`] (else from its Arrow type). A field whose
/// Arrow type does not carry its Zeek type is an error naming it.
pub fn zeek_schema(arrow: &ArrowSchema, default: &str) -> Result<Schema, ArrowCodecError> {
    let name = arrow
        .metadata()
        .get(SCHEMA_NAME_KEY)
        .cloned()
        .unwrap_or_else(|| default.to_string());
    let mut fields = Vec::with_capacity(arrow.fields().len());
    for f in arrow.fields() {
        let ty = match f.metadata().get(ZEEK_TYPE_KEY) {
            Some(t) => Type::parse(t).ok_or_else(|| ArrowCodecError::Schema {
                field: f.name().clone(),
                problem: format!("unknown Zeek type {t:?} in its metadata"),
            })?,
            None => zeek_type(f.data_type()).ok_or_else(|| ArrowCodecError::Schema {
                field: f.name().clone(),
                problem: format!("Arrow type {} has no Zeek type", f.data_type()),
            })?,
        };
        if !compatible(&arrow_type(&ty), f.data_type()) {
            return Err(ArrowCodecError::Schema {
                field: f.name().clone(),
                problem: format!("Zeek type {ty} stored as Arrow type {}", f.data_type()),
            });
        }
        fields.push(Field::new(f.name().clone(), ty));
    }
    Ok(Schema::new(name, fields))
}

/// Whether `got` holds what `want` does, up to names of list items and time zones.
fn compatible(want: &DataType, got: &DataType) -> bool {
    match (want, got) {
        (DataType::List(a), DataType::List(b)) => compatible(a.data_type(), b.data_type()),
        (DataType::Timestamp(u, _), DataType::Timestamp(v, _)) => u == v,
        (a, b) => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_round_trips_through_arrow() {
        let names = [
            "bool",
            "count",
            "int",
            "double",
            "time",
            "interval",
            "string",
            "addr",
            "subnet",
            "port",
            "enum",
            "pattern",
            "file",
            "set[addr]",
            "vector[interval]",
            "table[string]",
        ];
        let schema = Schema::new(
            "zeek.all",
            names
                .iter()
                .map(|n| Field::new(format!("f.{n}"), Type::parse(n).unwrap()))
                .collect(),
        );
        let arrow = arrow_schema(&schema);
        assert_eq!(zeek_schema(&arrow, "x").unwrap(), schema);
        assert_eq!(
            arrow.field(4).data_type().to_string(),
            "Timestamp(ns, \"UTC\")"
        );
    }

    #[test]
    fn a_foreign_schema_maps_by_arrow_type_and_bad_metadata_is_refused() {
        let foreign = ArrowSchema::new(vec![
            ArrowField::new("n", DataType::Int64, true),
            ArrowField::new("s", DataType::Utf8, true),
        ]);
        let s = zeek_schema(&foreign, "zeek.x").unwrap();
        assert_eq!(s.name, "zeek.x");
        assert_eq!(s.fields[0].ty, Type::Int);
        assert_eq!(s.fields[1].ty, Type::String);
        let bad = ArrowSchema::new(vec![ArrowField::new("n", DataType::Int64, true)
            .with_metadata(HashMap::from([(ZEEK_TYPE_KEY.into(), "addr".into())]))]);
        let e = zeek_schema(&bad, "zeek.x").unwrap_err().to_string();
        assert!(e.contains("field n") && e.contains("addr"), "{e}");
        let binary = ArrowSchema::new(vec![ArrowField::new("b", DataType::Binary, true)]);
        assert!(zeek_schema(&binary, "zeek.x").is_err());
    }
}
