//! One Arrow schema per partition and one type per field name: how the lake unites the weir
//! schemas it is given, and fits record batches to the united schema.
//!
//! # Rules
//! - **Per field name, one type.** When the schemas written to one lake give a field name
//!   different Zeek types, the lake's type is their union ([`unite_types`]): `port` and
//!   `count` are `count`; with `int` they are `int`; with `double` or `interval` (or
//!   `interval` with anything but itself) `double`; the string-like types (`string`, `enum`,
//!   `pattern`, `file`) with `addr` and `subnet` are `string` (all are text in the lake);
//!   containers unite by their elements (`set`, `vector` and `table` of one element type stay
//!   what they are when all agree, else `vector`). Any other pair (`bool` with `count`, a
//!   container with a scalar, `time` with anything else) has no union.
//! - **Per schema name, one Arrow schema** ([`lake_schemas`]): the fields of every schema of
//!   the name, in order of first appearance, each with its lake type. A batch of one of the
//!   schemas is fitted to it ([`conform`]): its columns by name, widened where the lake type
//!   is wider (`uint16` to `uint64`, to `int64`, integers to `float64`), the columns it lacks
//!   all null.
//!
//! Zeek's field conventions already give a field one type wherever it occurs (a port is a
//! `port` whether the log came typed or not: [`crate::codec::zeek::schema::number_kind`]), so
//! on Zeek logs the first rule rarely has anything to unite; the second is what a schema that
//! gained fields mid-log (or a Zeek version that added fields) needs.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::types::{Float64Type, Int64Type, UInt16Type, UInt64Type};
use arrow_array::{
    cast::AsArray, new_null_array, Array, ArrayRef, ListArray, RecordBatch, RecordBatchOptions,
};
use arrow_schema::{DataType, Field as ArrowField, Schema as ArrowSchema};

use super::schema::{arrow_schema, arrow_type};
use super::ArrowCodecError;
use crate::types::{Field, Schema, SchemaRef, Type};

/// The union of two Zeek types of one field name (the rules are in the module docs); `None`
/// when they have none.
pub fn unite_types(a: &Type, b: &Type) -> Option<Type> {
    use Type::*;
    if a == b {
        return Some(a.clone());
    }
    let text = |t: &Type| t.is_stringy() || matches!(t, Addr | Subnet);
    Some(match (a, b) {
        (Set(x), Set(y)) => Set(Box::new(unite_types(x, y)?)),
        (Table(x), Table(y)) => Table(Box::new(unite_types(x, y)?)),
        (Set(x) | Vector(x) | Table(x), Set(y) | Vector(y) | Table(y)) => {
            Vector(Box::new(unite_types(x, y)?))
        }
        (Port | Count, Port | Count) => Count,
        (Port | Count | Int, Port | Count | Int) => Int,
        (Port | Count | Int | Double | Interval, Port | Count | Int | Double | Interval) => Double,
        (x, y) if text(x) && text(y) => String,
        _ => return None,
    })
}

/// Why schemas cannot share one Arrow schema: a field whose types have no union.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The field's name.
    pub field: String,
    /// Its type in one schema.
    pub one: Type,
    /// Its type in another.
    pub other: Type,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "field {} is {} in one schema and {} in another, which have no common type",
            self.field, self.one, self.other
        )
    }
}

/// The Arrow schema of each schema name of a lake.
pub type LakeSchemas = HashMap<String, Arc<ArrowSchema>>;

/// The lake's Arrow schema of each schema name among `schemas` (see the module docs): the
/// union of the fields of that name's schemas, with each field name's type united over all
/// `schemas`. A field name whose types have no union across names keeps, per schema name, the
/// union within that name; a schema name whose own schemas have a field without a union is
/// left out with its [`Conflict`] (its schemas are written each with its own Arrow schema).
pub fn lake_schemas(schemas: &[SchemaRef]) -> (LakeSchemas, Vec<(String, Conflict)>) {
    // The lake-wide type of each field name; `None` once two types have no union.
    let mut lake: HashMap<&str, Option<Type>> = HashMap::new();
    for s in schemas {
        for f in &s.fields {
            lake.entry(&f.name)
                .and_modify(|t| *t = t.as_ref().and_then(|t| unite_types(t, &f.ty)))
                .or_insert_with(|| Some(f.ty.clone()));
        }
    }
    let mut names: Vec<&str> = Vec::new();
    let mut by_name: HashMap<&str, Vec<&SchemaRef>> = HashMap::new();
    for s in schemas {
        by_name
            .entry(&s.name)
            .or_insert_with(|| {
                names.push(&s.name);
                Vec::new()
            })
            .push(s);
    }
    let mut out = HashMap::new();
    let mut conflicts = Vec::new();
    'names: for name in names {
        let mut fields: Vec<Field> = Vec::new();
        for s in &by_name[name] {
            for f in &s.fields {
                match fields.iter_mut().find(|g| g.name == f.name) {
                    None => fields.push(f.clone()),
                    Some(g) => match unite_types(&g.ty, &f.ty) {
                        Some(t) => g.ty = t,
                        None => {
                            let conflict = Conflict {
                                field: f.name.clone(),
                                one: g.ty.clone(),
                                other: f.ty.clone(),
                            };
                            conflicts.push((name.to_string(), conflict));
                            continue 'names;
                        }
                    },
                }
            }
        }
        for f in &mut fields {
            if let Some(Some(t)) = lake.get(f.name.as_str()) {
                f.ty = t.clone();
            }
        }
        let united = Schema::new(name.to_string(), fields);
        out.insert(name.to_string(), Arc::new(arrow_schema(&united)));
    }
    (out, conflicts)
}

/// Whether a column of Arrow type `from` fits a column of type `to` ([`conform`] widens it).
pub fn widens_to(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    match (from, to) {
        (List(a), List(b)) => widens_to(a.data_type(), b.data_type()),
        (a, b) if a == b => true,
        (UInt16, UInt64 | Int64 | Float64) | (UInt64 | Int64, Int64 | Float64) => true,
        _ => false,
    }
}

/// Whether every field of `schema` fits a column of `target` of its name ([`widens_to`]).
pub fn fits(schema: &Schema, target: &ArrowSchema) -> bool {
    schema.fields.iter().all(|f| {
        target
            .field_with_name(&f.name)
            .is_ok_and(|t| widens_to(&arrow_type(&f.ty), t.data_type()))
    })
}

/// The first field of `schema` that does not fit `target`, with why (for messages).
pub fn misfit(schema: &ArrowSchema, target: &ArrowSchema) -> Option<String> {
    schema
        .fields()
        .iter()
        .find_map(|f| match target.field_with_name(f.name()) {
            Err(_) => Some(format!("column {} is not in the files", f.name())),
            Ok(t) if !widens_to(f.data_type(), t.data_type()) => Some(format!(
                "column {} is {} here but {} in the files",
                f.name(),
                f.data_type(),
                t.data_type()
            )),
            Ok(_) => None,
        })
}

/// `array` as Arrow type `to` (which it [`widens_to`]).
fn widen(array: &ArrayRef, to: &DataType, field: &str) -> Result<ArrayRef, ArrowCodecError> {
    use DataType::*;
    if array.data_type() == to {
        return Ok(array.clone());
    }
    let bad = |problem: String| ArrowCodecError::Schema {
        field: field.to_string(),
        problem,
    };
    let cannot = || bad(format!("cannot widen {} to {to}", array.data_type()));
    Ok(match (array.data_type(), to) {
        (List(_), List(item)) => {
            let list = array.as_list::<i32>();
            let values = widen(list.values(), item.data_type(), field)?;
            Arc::new(ListArray::try_new(
                item.clone(),
                list.offsets().clone(),
                values,
                list.nulls().cloned(),
            )?)
        }
        (UInt16, UInt64) => Arc::new(
            array
                .as_primitive::<UInt16Type>()
                .unary::<_, UInt64Type>(u64::from),
        ),
        (UInt16, Int64) => Arc::new(
            array
                .as_primitive::<UInt16Type>()
                .unary::<_, Int64Type>(i64::from),
        ),
        (UInt16, Float64) => Arc::new(
            array
                .as_primitive::<UInt16Type>()
                .unary::<_, Float64Type>(f64::from),
        ),
        (UInt64, Int64) => {
            let a = array.as_primitive::<UInt64Type>();
            if let Some(v) = a.iter().flatten().find(|&v| i64::try_from(v).is_err()) {
                return Err(bad(format!(
                    "count {v} does not fit the lake's int column of this name"
                )));
            }
            Arc::new(a.unary::<_, Int64Type>(|v| v as i64))
        }
        (UInt64, Float64) => Arc::new(
            array
                .as_primitive::<UInt64Type>()
                .unary::<_, Float64Type>(|v| v as f64),
        ),
        (Int64, Float64) => Arc::new(
            array
                .as_primitive::<Int64Type>()
                .unary::<_, Float64Type>(|v| v as f64),
        ),
        _ => return Err(cannot()),
    })
}

/// `rb` fitted to `target` (see the module docs): its columns by name, widened as needed, the
/// others null. A column of `rb` that `target` lacks or cannot hold is an error naming it.
pub fn conform(
    rb: &RecordBatch,
    target: &Arc<ArrowSchema>,
) -> Result<RecordBatch, ArrowCodecError> {
    let src = rb.schema();
    if Arc::ptr_eq(&src, target) {
        return Ok(rb.clone());
    }
    if let Some(problem) = misfit(&src, target) {
        return Err(ArrowCodecError::Schema {
            field: "*".into(),
            problem,
        });
    }
    let columns = target
        .fields()
        .iter()
        .map(|f: &Arc<ArrowField>| match src.index_of(f.name()) {
            Ok(i) => widen(rb.column(i), f.data_type(), f.name()),
            Err(_) => Ok(new_null_array(f.data_type(), rb.num_rows())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(rb.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        target.clone(),
        columns,
        &options,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Type {
        Type::parse(s).unwrap()
    }

    #[test]
    fn types_unite_by_the_rules() {
        let cases = [
            ("port", "count", Some("count")),
            ("port", "int", Some("int")),
            ("count", "double", Some("double")),
            ("interval", "count", Some("double")),
            ("interval", "double", Some("double")),
            ("addr", "string", Some("string")),
            ("enum", "subnet", Some("string")),
            ("set[string]", "table[string]", Some("vector[string]")),
            ("set[enum]", "set[string]", Some("set[string]")),
            ("vector[port]", "vector[count]", Some("vector[count]")),
            ("bool", "count", None),
            ("time", "double", None),
            ("set[string]", "string", None),
        ];
        for (a, b, want) in cases {
            let got = unite_types(&t(a), &t(b)).map(|t| t.to_string());
            assert_eq!(got.as_deref(), want, "{a} with {b}");
            // The union does not depend on the order.
            let back = unite_types(&t(b), &t(a)).map(|t| t.to_string());
            assert_eq!(back.as_deref(), want, "{b} with {a}");
            // What unites widens: each side's Arrow type fits the union's.
            if let Some(u) = unite_types(&t(a), &t(b)) {
                assert!(widens_to(&arrow_type(&t(a)), &arrow_type(&u)), "{a}");
                assert!(widens_to(&arrow_type(&t(b)), &arrow_type(&u)), "{b}");
            }
        }
    }

    #[test]
    fn a_name_gets_the_union_of_its_fields_and_each_field_one_type() {
        let s = |name: &str, fields: &[(&str, &str)]| {
            Schema::new(
                name,
                fields.iter().map(|(n, ty)| Field::new(*n, t(ty))).collect(),
            )
            .into_shared()
        };
        let a = s("zeek.conn", &[("ts", "time"), ("id.orig_p", "port")]);
        let b = s("zeek.conn", &[("ts", "time"), ("extra", "string")]);
        let c = s("zeek.x", &[("id.orig_p", "count")]);
        let d = s("zeek.bad", &[("v", "bool")]);
        let e = s("zeek.bad", &[("v", "count")]);
        let (u, conflicts) = lake_schemas(&[a.clone(), b.clone(), c, d, e]);
        let conn = &u["zeek.conn"];
        let names: Vec<&str> = conn.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["ts", "id.orig_p", "extra"]);
        // Lake-wide: the port is a count because zeek.x has it as a count.
        assert_eq!(conn.field(1).data_type(), &DataType::UInt64);
        assert_eq!(u["zeek.x"].field(0).data_type(), &DataType::UInt64);
        assert!(fits(&a, conn) && fits(&b, conn));
        assert!(!u.contains_key("zeek.bad"));
        assert_eq!(conflicts.len(), 1);
        assert!(conflicts[0].1.to_string().contains("field v is bool"));
    }

    #[test]
    fn a_batch_is_fitted_by_name_with_nulls_and_widening() {
        let small = Schema::new(
            "zeek.x",
            vec![
                Field::new("p", t("port")),
                Field::new("l", t("vector[port]")),
            ],
        )
        .into_shared();
        let target = Arc::new(arrow_schema(&Schema::new(
            "zeek.x",
            vec![
                Field::new("q", t("string")),
                Field::new("l", t("vector[count]")),
                Field::new("p", t("int")),
            ],
        )));
        let arrow = Arc::new(arrow_schema(&small));
        let p: ArrayRef = Arc::new(arrow_array::UInt16Array::from(vec![Some(80), None]));
        let l: ArrayRef = Arc::new(ListArray::from_iter_primitive::<UInt16Type, _, _>(vec![
            Some(vec![Some(1), None]),
            None,
        ]));
        let rb = RecordBatch::try_new(arrow, vec![p, l]).unwrap();
        let out = conform(&rb, &target).unwrap();
        assert_eq!(out.schema(), target);
        assert_eq!(out.column(0).null_count(), 2);
        let p = out.column(2).as_primitive::<Int64Type>();
        assert_eq!(p.value(0), 80);
        assert!(p.is_null(1));
        let l = out.column(1).as_list::<i32>();
        assert_eq!(l.value(0).as_primitive::<UInt64Type>().value(0), 1);
        assert!(l.is_null(1));
        // A column the target lacks is refused, naming it.
        let narrow = Arc::new(ArrowSchema::new(vec![target.field(0).clone()]));
        let e = conform(&rb, &narrow).unwrap_err().to_string();
        assert!(e.contains("column p is not in the files"), "{e}");
    }
}
