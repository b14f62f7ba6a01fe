//! The row walk shared by the text formats (Zeek TSV, JSON, and the cells of CSV and the
//! table): [`write_row`] reads one row of an Arrow [`RecordBatch`] and writes the parts every
//! format writes alike, and a [`TextFormat`] the rest (punctuation, and the scalars the
//! formats spell differently). This is the one place where values are read out of Arrow
//! arrays for text.
//!
//! # Columns
//! A batch's columns are typed by the weir schema passed alongside ([`text_columns`]): each
//! field's Zeek type and the column's Arrow type must be one of
//! - the types of [`crate::codec::arrow::arrow_schema`] (the lake's, Arrow IPC's, the API's):
//!   strings as `utf8` (a byte of invalid UTF-8 there is already the text `\xHH`, written as
//!   that text), intervals as `float64` seconds, read back to nanoseconds as the Arrow
//!   reader does ([`crate::codec::arrow::schema::interval_from_seconds`]; exact for every
//!   interval Zeek writes; a NaN or infinity is written as the double it is);
//! - the types of [`crate::codec::arrow::schema::exact_arrow_schema`] (the batches the
//!   writers build from msgpack rows): strings as `binary`, the bytes as they are, and
//!   intervals as `duration[ns]`, so that the text is that of the stored value exactly.
//!
//! `addr` and `subnet` are `utf8` text in both (`192.168.1.1`, `10.0.0.0/8`), written as they
//! are. Anything else is a [`WriteError::Column`] naming the field.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    DurationNanosecondType, Float64Type, Int64Type, TimestampNanosecondType, UInt16Type, UInt64Type,
};
use arrow_array::{
    Array, BinaryArray, BooleanArray, DurationNanosecondArray, Float64Array, Int64Array, ListArray,
    RecordBatch, StringArray, TimestampNanosecondArray, UInt16Array, UInt64Array,
};
use arrow_schema::{DataType, TimeUnit};

use crate::codec::arrow::schema::interval_from_seconds;
use crate::codec::event_writer::WriteError;
use crate::codec::zeek::scalar::{push_decimal_ns, push_i64, push_u64};
use crate::types::{Schema, SchemaRef, Type};

/// How a text format writes containers.
pub(crate) struct ListText {
    /// Before the first element.
    pub open: &'static [u8],
    /// After the last element.
    pub close: &'static [u8],
    /// An empty container.
    pub empty: &'static [u8],
    /// An unset element.
    pub unset: &'static [u8],
}

/// A set value that the formats write differently (the others, `count`, `int`, `port` and
/// `interval`, [`write_row`] writes itself).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scalar<'a> {
    /// A `bool`.
    Bool(bool),
    /// A `double`.
    Double(f64),
    /// A `time`, nanoseconds since the epoch.
    Time(i64),
    /// The bytes of a string-like value (`string`, `enum`, `pattern`, `file`).
    String(&'a [u8]),
    /// The text of an `addr` or a `subnet`, written as it is.
    Addr(&'a [u8]),
}

/// What sets one text format apart from another. [`write_row`] walks a row and calls these
/// for the punctuation and for the scalars that the formats write differently; `count`,
/// `int`, `port` (decimal) and `interval` (exact decimal seconds) are the same in every format
/// and written by [`write_row`] itself, and so is the `,` between the elements of a container.
pub(crate) trait TextFormat {
    /// How containers are written.
    const LIST: ListText;
    /// Before the first field.
    fn begin_row(&mut self, out: &mut Vec<u8>);
    /// Before the value of field `i` (0-based) when `set`, or in place of the field when not.
    fn field(&mut self, i: usize, set: bool, out: &mut Vec<u8>);
    /// After the last field.
    fn end_row(&mut self, out: &mut Vec<u8>);
    /// A set value of [`Scalar`]; `in_list` when it is a container's element.
    fn scalar(&mut self, v: Scalar<'_>, in_list: bool, out: &mut Vec<u8>);
}

/// One column of a batch as its field's Zeek type reads it.
#[derive(Debug)]
pub(crate) enum TextColumn<'a> {
    Bool(&'a BooleanArray),
    Count(&'a UInt64Array),
    Int(&'a Int64Array),
    Double(&'a Float64Array),
    Time(&'a TimestampNanosecondArray),
    /// `interval` as `float64` seconds.
    IntervalSeconds(&'a Float64Array),
    /// `interval` as `duration[ns]`.
    IntervalNs(&'a DurationNanosecondArray),
    Port(&'a UInt16Array),
    /// String-like as `utf8`.
    Text(&'a StringArray),
    /// String-like as `binary`.
    Bytes(&'a BinaryArray),
    /// `addr` or `subnet` as `utf8`.
    Addr(&'a StringArray),
    /// A container: the list array and its elements.
    List(&'a ListArray, Box<TextColumn<'a>>),
}

impl<'a> TextColumn<'a> {
    /// The column `array` of Zeek type `ty`, or what is wrong with it.
    fn new(array: &'a dyn Array, ty: &Type) -> Result<TextColumn<'a>, String> {
        let dt = array.data_type();
        let col = match (ty, dt) {
            (Type::Set(inner) | Type::Vector(inner) | Type::Table(inner), DataType::List(_)) => {
                let list = array.as_list::<i32>();
                let values = TextColumn::new(list.values().as_ref(), inner)?;
                TextColumn::List(list, Box::new(values))
            }
            (Type::Bool, DataType::Boolean) => TextColumn::Bool(array.as_boolean()),
            (Type::Count, DataType::UInt64) => {
                TextColumn::Count(array.as_primitive::<UInt64Type>())
            }
            (Type::Int, DataType::Int64) => TextColumn::Int(array.as_primitive::<Int64Type>()),
            (Type::Double, DataType::Float64) => {
                TextColumn::Double(array.as_primitive::<Float64Type>())
            }
            (Type::Time, DataType::Timestamp(TimeUnit::Nanosecond, _)) => {
                TextColumn::Time(array.as_primitive::<TimestampNanosecondType>())
            }
            (Type::Interval, DataType::Float64) => {
                TextColumn::IntervalSeconds(array.as_primitive::<Float64Type>())
            }
            (Type::Interval, DataType::Duration(TimeUnit::Nanosecond)) => {
                TextColumn::IntervalNs(array.as_primitive::<DurationNanosecondType>())
            }
            (Type::Port, DataType::UInt16) => TextColumn::Port(array.as_primitive::<UInt16Type>()),
            (Type::Addr | Type::Subnet, DataType::Utf8) => TextColumn::Addr(array.as_string()),
            (Type::String | Type::Enum | Type::Pattern | Type::File, DataType::Utf8) => {
                TextColumn::Text(array.as_string())
            }
            (Type::String | Type::Enum | Type::Pattern | Type::File, DataType::Binary) => {
                TextColumn::Bytes(array.as_binary())
            }
            _ => {
                return Err(format!(
                    "Zeek type {ty} cannot be written from Arrow type {dt}"
                ))
            }
        };
        Ok(col)
    }

    /// Whether value `i` is set.
    #[inline(always)]
    fn is_valid(&self, i: usize) -> bool {
        match self {
            TextColumn::Bool(a) => a.is_valid(i),
            TextColumn::Count(a) => a.is_valid(i),
            TextColumn::Int(a) => a.is_valid(i),
            TextColumn::Double(a) => a.is_valid(i),
            TextColumn::Time(a) => a.is_valid(i),
            TextColumn::IntervalSeconds(a) => a.is_valid(i),
            TextColumn::IntervalNs(a) => a.is_valid(i),
            TextColumn::Port(a) => a.is_valid(i),
            TextColumn::Text(a) | TextColumn::Addr(a) => a.is_valid(i),
            TextColumn::Bytes(a) => a.is_valid(i),
            TextColumn::List(a, _) => a.is_valid(i),
        }
    }
}

/// Whether `schema`'s rows go on under the header of `current` (the schema of the rows
/// before): the same column names (a timeline of several schemas, `select #type, ...`, is one
/// list), and with `by_schema` (`weir export --by-schema`) the same schema too. The
/// header-per-schema formats (CSV, the table) start a new section otherwise.
pub(crate) fn same_columns(
    current: Option<&SchemaRef>,
    schema: &SchemaRef,
    by_schema: bool,
) -> bool {
    match current {
        Some(cur) => {
            std::sync::Arc::ptr_eq(cur, schema)
                || ((!by_schema || cur.name == schema.name)
                    && cur.fields.len() == schema.fields.len()
                    && cur
                        .fields
                        .iter()
                        .zip(&schema.fields)
                        .all(|(a, b)| a.name == b.name))
        }
        None => false,
    }
}

/// The columns of `batch` as the fields of `schema` read them: one per field, in order. A
/// batch with another number of columns, or a column whose Arrow type does not hold its
/// field's Zeek type (see the module docs), is an error naming the field.
pub(crate) fn text_columns<'a>(
    schema: &Schema,
    batch: &'a RecordBatch,
) -> Result<Vec<TextColumn<'a>>, WriteError> {
    let error = |field: &str, problem: String| WriteError::Column {
        schema: schema.name.clone(),
        field: field.to_string(),
        problem,
    };
    if batch.num_columns() != schema.fields.len() {
        return Err(error(
            "",
            format!(
                "it has {} columns for {} fields",
                batch.num_columns(),
                schema.fields.len()
            ),
        ));
    }
    schema
        .fields
        .iter()
        .zip(batch.columns())
        .map(|(f, a)| {
            TextColumn::new(a.as_ref(), &f.ty)
                .map_err(|p| error(&f.name, format!("field {}: {p}", f.name)))
        })
        .collect()
}

/// Formats row `row` of the columns (of [`text_columns`]) in format `f`.
#[inline]
pub(crate) fn write_row<F: TextFormat>(
    f: &mut F,
    columns: &[TextColumn<'_>],
    row: usize,
    out: &mut Vec<u8>,
) {
    f.begin_row(out);
    for (i, col) in columns.iter().enumerate() {
        let set = col.is_valid(row);
        f.field(i, set, out);
        if !set {
            continue;
        }
        let TextColumn::List(list, values) = col else {
            write_scalar(f, col, row, false, out);
            continue;
        };
        let offsets = list.value_offsets();
        let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
        if start == end {
            out.extend_from_slice(F::LIST.empty);
            continue;
        }
        out.extend_from_slice(F::LIST.open);
        for j in start..end {
            if j > start {
                out.push(b',');
            }
            if values.is_valid(j) {
                write_scalar(f, values, j, true, out);
            } else {
                out.extend_from_slice(F::LIST.unset);
            }
        }
        out.extend_from_slice(F::LIST.close);
    }
    f.end_row(out);
}

/// Formats the set value `i` of a scalar column.
#[inline(always)]
fn write_scalar<F: TextFormat>(
    f: &mut F,
    col: &TextColumn<'_>,
    i: usize,
    in_list: bool,
    out: &mut Vec<u8>,
) {
    match col {
        TextColumn::Count(a) => push_u64(out, a.value(i)),
        TextColumn::Port(a) => push_u64(out, u64::from(a.value(i))),
        TextColumn::Int(a) => push_i64(out, a.value(i)),
        TextColumn::IntervalNs(a) => push_decimal_ns(out, a.value(i)),
        TextColumn::IntervalSeconds(a) => {
            let s = a.value(i);
            match interval_from_seconds(s) {
                Some(ns) => push_decimal_ns(out, ns),
                None => f.scalar(Scalar::Double(s), in_list, out),
            }
        }
        TextColumn::Bool(a) => f.scalar(Scalar::Bool(a.value(i)), in_list, out),
        TextColumn::Double(a) => f.scalar(Scalar::Double(a.value(i)), in_list, out),
        TextColumn::Time(a) => f.scalar(Scalar::Time(a.value(i)), in_list, out),
        TextColumn::Text(a) => f.scalar(Scalar::String(a.value(i).as_bytes()), in_list, out),
        TextColumn::Bytes(a) => f.scalar(Scalar::String(a.value(i)), in_list, out),
        TextColumn::Addr(a) => f.scalar(Scalar::Addr(a.value(i).as_bytes()), in_list, out),
        // Containers are not nested (`MAX_TYPE_DEPTH`).
        TextColumn::List(..) => {}
    }
}
