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

/// Nanoseconds per second.
const NS_PER_SEC: f64 = 1e9;

/// An interval (nanoseconds) as the lake and Arrow IPC hold it: seconds, the nearest `f64`.
/// [`interval_from_seconds`] gives the nanoseconds back exactly whenever their decimal
/// seconds have at most 15 significant digits (an `f64` keeps those): every interval of whole
/// microseconds below 10^9 s (31 years; Zeek writes microseconds), every one below 10^6 s
/// (11 days) to the nanosecond.
#[inline]
pub fn interval_seconds(ns: i64) -> f64 {
    /// Below this many nanoseconds an i64 is an exact f64, and one division rounds correctly.
    const EXACT: i64 = 1 << 53;
    if (-EXACT..EXACT).contains(&ns) {
        return ns as f64 / NS_PER_SEC;
    }
    // The decimal text of the seconds, parsed: correctly rounded (rare: beyond 104 days).
    let (sign, abs) = if ns < 0 {
        ("-", ns.unsigned_abs())
    } else {
        ("", ns.unsigned_abs())
    };
    format!("{sign}{}.{:09}", abs / 1_000_000_000, abs % 1_000_000_000)
        .parse()
        .unwrap_or(ns as f64 / NS_PER_SEC)
}

/// The nanoseconds of an interval held as seconds ([`interval_seconds`]): the shortest decimal
/// text of the `f64` read exactly, so that `interval_from_seconds(interval_seconds(ns)) == ns`
/// within the range documented there. Values beyond the i64 range of nanoseconds (±292
/// years) saturate, so the largest and smallest intervals come back as they were; `None` for
/// NaN and infinities.
pub fn interval_from_seconds(s: f64) -> Option<i64> {
    if !s.is_finite() {
        return None;
    }
    // Display of an f64 is its shortest round-trip decimal, never with an exponent.
    Some(
        crate::codec::zeek::scalar::parse_json_ns(s.to_string().as_bytes()).unwrap_or(if s > 0.0 {
            i64::MAX
        } else {
            i64::MIN
        }),
    )
}

/// The Arrow type of a Zeek type (see the table in [`crate::codec::arrow`]).
pub fn arrow_type(ty: &Type) -> DataType {
    match ty {
        Type::Bool => DataType::Boolean,
        Type::Count => DataType::UInt64,
        Type::Int => DataType::Int64,
        Type::Double => DataType::Float64,
        Type::Time => DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
        Type::Interval => DataType::Float64,
        Type::Port => DataType::UInt16,
        Type::String | Type::Enum | Type::Pattern | Type::File | Type::Addr | Type::Subnet => {
            DataType::Utf8
        }
        Type::Set(t) | Type::Vector(t) | Type::Table(t) => {
            DataType::List(Arc::new(ArrowField::new("item", arrow_type(t), true)))
        }
    }
}

/// The exact Arrow type of a Zeek type ([`exact_arrow_schema`]): that of [`arrow_type`], but
/// `binary` (the bytes as they are) for `string`, `enum`, `pattern` and `file`, and
/// `duration[ns]` for `interval`.
pub fn exact_arrow_type(ty: &Type) -> DataType {
    match ty {
        Type::String | Type::Enum | Type::Pattern | Type::File => DataType::Binary,
        Type::Interval => DataType::Duration(TimeUnit::Nanosecond),
        Type::Set(t) | Type::Vector(t) | Type::Table(t) => {
            DataType::List(Arc::new(ArrowField::new("item", exact_arrow_type(t), true)))
        }
        other => arrow_type(other),
    }
}

/// The Arrow field of a Zeek field: same name (dots kept), nullable (unset is null), the Zeek
/// type name in the field metadata under [`ZEEK_TYPE_KEY`].
pub fn arrow_field(field: &Field) -> ArrowField {
    with_zeek_type(
        ArrowField::new(field.name.clone(), arrow_type(&field.ty), true),
        field,
    )
}

fn with_zeek_type(arrow: ArrowField, field: &Field) -> ArrowField {
    arrow.with_metadata(HashMap::from([(
        ZEEK_TYPE_KEY.to_string(),
        field.ty.to_string(),
    )]))
}

fn with_schema_name(fields: Vec<ArrowField>, schema: &Schema) -> ArrowSchema {
    ArrowSchema::new(fields).with_metadata(HashMap::from([(
        SCHEMA_NAME_KEY.to_string(),
        schema.name.clone(),
    )]))
}

/// The Arrow schema of a weir schema: its fields in order, the schema's name in the schema
/// metadata under [`SCHEMA_NAME_KEY`].
pub fn arrow_schema(schema: &Schema) -> ArrowSchema {
    with_schema_name(schema.fields.iter().map(arrow_field).collect(), schema)
}

/// The exact Arrow schema of a weir schema: as [`arrow_schema()`] (names, nullability,
/// metadata), with the types of [`exact_arrow_type`], which hold every value as it is: the
/// bytes of a string that is not UTF-8 (which [`arrow_schema()`]'s `utf8` holds as `\xHH`
/// text, the same text as a string holding those four characters) and the nanoseconds of
/// an interval (which seconds as `float64` hold exactly only up to the limits of
/// [`interval_seconds`]). Not for interchange (other tools take `binary` for bytes, not
/// text): the batches the text writers build from rows
/// ([`crate::codec::event_writer::EventWriter::write_rows`]) are of this schema, so that
/// their output is exact.
pub fn exact_arrow_schema(schema: &Schema) -> ArrowSchema {
    let fields = schema
        .fields
        .iter()
        .map(|f| {
            with_zeek_type(
                ArrowField::new(f.name.clone(), exact_arrow_type(&f.ty), true),
                f,
            )
        })
        .collect();
    with_schema_name(fields, schema)
}

/// Which of the two Arrow forms of events a record batch is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrowForm {
    /// [`arrow_schema()`]'s types: what the lake, Arrow IPC and the embedding API hold.
    Interchange,
    /// [`exact_arrow_schema`]'s types: every value as it is, for the text writers.
    Exact,
}

impl ArrowForm {
    /// The Arrow schema of `schema` in this form.
    pub fn schema(self, schema: &Schema) -> ArrowSchema {
        match self {
            ArrowForm::Interchange => arrow_schema(schema),
            ArrowForm::Exact => exact_arrow_schema(schema),
        }
    }
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
        // Other tools write microseconds (DuckDB, Polars, pyarrow from Python datetimes).
        DataType::Timestamp(_, _) => Type::Time,
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
        if !compatible(&ty, f.data_type()) {
            return Err(ArrowCodecError::Schema {
                field: f.name().clone(),
                problem: format!("Zeek type {ty} stored as Arrow type {}", f.data_type()),
            });
        }
        fields.push(Field::new(f.name().clone(), ty));
    }
    Ok(Schema::new(name, fields))
}

/// The weir schema of an Arrow schema as [`zeek_schema`] reads it, checked against a Zeek log
/// schema it claims to be: when the name ([`SCHEMA_NAME_KEY`], else `default`) is that of
/// one of `known` (the shipped ones, `zeek.conn`), each of its columns without Zeek type
/// metadata (a file written by another tool) that the log schema has takes the log's type
/// when it holds it (`id.orig_p` of `uint16` is a `port`, `proto` of `utf8` an `enum`),
/// and is an error naming the column, the type the log has and the Arrow type found when it
/// cannot (`ts` as text for `zeek.conn`); a file is never imported as a second schema of a
/// Zeek log's name with a column of another type. Columns the log schema lacks keep their own
/// types (as [`zeek_schema`]).
pub fn claimed_zeek_schema(
    arrow: &ArrowSchema,
    default: &str,
    known: Option<&crate::codec::zeek::schema::ZeekSchemas>,
) -> Result<Schema, ArrowCodecError> {
    let mut schema = zeek_schema(arrow, default)?;
    let Some(log) = known.and_then(|k| k.by_name(&schema.name)) else {
        return Ok(schema);
    };
    let log = log.schema();
    for (f, af) in schema.fields.iter_mut().zip(arrow.fields()) {
        if af.metadata().contains_key(ZEEK_TYPE_KEY) {
            continue;
        }
        let Some(want) = log.fields.iter().find(|g| g.name == f.name) else {
            continue;
        };
        if compatible(&want.ty, af.data_type()) {
            f.ty = want.ty.clone();
        } else {
            return Err(ArrowCodecError::Schema {
                field: f.name.clone(),
                problem: format!(
                    "the file claims schema {}, whose {} is {} (Arrow {}), but the column is \
                     Arrow {}",
                    log.name,
                    want.name,
                    want.ty,
                    arrow_type(&want.ty),
                    af.data_type()
                ),
            });
        }
    }
    Ok(Schema::new(schema.name.clone(), schema.fields))
}

/// Whether `got` holds values of Zeek type `ty`, up to names of list items and time zones:
/// its [`arrow_type`], or for `interval` also `duration[ns]` (how earlier weir versions wrote
/// intervals; such lakes still import).
fn compatible(ty: &Type, got: &DataType) -> bool {
    match (ty.element(), got) {
        (Some(inner), DataType::List(b)) => compatible(inner, b.data_type()),
        (Some(_), _) => false,
        (None, got) => match (arrow_type(ty), got) {
            // Any unit: the reader scales to nanoseconds.
            (DataType::Timestamp(..), DataType::Timestamp(..)) => true,
            _ if *ty == Type::Interval && *got == DataType::Duration(TimeUnit::Nanosecond) => true,
            (a, b) => a == *b,
        },
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
    fn intervals_come_back_from_seconds_exactly() {
        for ns in [
            0,
            1,
            -1,
            163_820_000,
            1_196_975_041_000,
            -1_500_000_000,
            // Microseconds below 10^9 s, and nanoseconds below 10^6 s.
            999_999_999_999_999_000,
            -999_999_999_999_999_000,
            999_999_999_999_999,
            i64::MAX,
            i64::MIN,
        ] {
            assert_eq!(
                interval_from_seconds(interval_seconds(ns)),
                Some(ns),
                "{ns}"
            );
        }
        assert_eq!(interval_seconds(600_000_000_000), 600.0);
        assert_eq!(interval_from_seconds(f64::NAN), None);
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
