//! Evaluating a bound expression on a batch's columns as Arrow arrays, into a
//! [`BooleanArray`] (one value a row, never null: an unset value is `false`).
//!
//! The columns are those of [`crate::codec::arrow`]'s table (the types [`ArrowBuilder`]
//! writes): `time` a `timestamp[ns]`, `interval` `float64` seconds, `count` `uint64`, `int`
//! `int64`, `double` `float64`, `bool` `bool`, `port` `uint16`, addresses and subnets `utf8`
//! text, strings `utf8` (invalid UTF-8 escaped as `\xHH`), containers `list<T>`. Only the
//! fields the program reads ([`Program::read_fields`]) need to be given.
//!
//! # Meaning
//!
//! An expression means on a batch what it means on the rows that batch reads back as
//! ([`crate::codec::arrow::record_batch_to_batches`] and [`super::eval`]): each comparison
//! goes through [`holds`] (or the range forms [`Fast`] precompiled from it) on the value the
//! reader would decode, so the two agree on every type, unset values and empty containers
//! included; the tests compare them on random rows. That is the original event wherever the
//! Arrow form is lossless: everywhere except strings that are not UTF-8, which Arrow holds
//! escaped (the byte `0xff` is the text `\xff`: `s == "\xff"` holds for a string whose
//! text is those four characters, not for one that holds the byte). Intervals compare as the
//! exact nanoseconds the reader makes of their seconds ([`interval_from_seconds`]), without
//! formatting any value but those within a few nanoseconds of a bound; addresses and subnets
//! compare as addresses (parsed from their text: `10.0.0.10 > 10.0.0.9`, an IPv4 address
//! equal to its IPv4-mapped IPv6 form), not as text.
//!
//! # How
//!
//! A comparison makes a bitmap of its column in one loop ([`BooleanBuffer::collect_bool`], as
//! arrow-ord's comparison kernels do): a range test of integers for the [`Fast`] forms,
//! byte equality and `memmem` for strings, a parse then [`holds`] for the rest; the column's
//! null bitmap is then and-ed in. A negative operator is the negation of its positive one,
//! before the nulls go in, so that `!=` and `!in` never match an unset value. A container
//! comparison evaluates its element comparison on the list's values once, then asks each row
//! whether one of its elements holds (`field == [..]` compares whole lists, per row, as
//! [`super::eval`] does). `&&` and `||` combine bitmaps and stop once no row (every row) is
//! left; `#id` compares `first_id + row`.
//!
//! A column missing, of another Arrow type, of another length than the batch, or an address,
//! subnet or interval that does not read (text that is no address, a NaN) is a
//! [`KernelError`] naming the field (and row and value).
//!
//! [`ArrowBuilder`]: crate::codec::arrow::ArrowBuilder

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, TimestampNanosecondType, UInt16Type, UInt64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, StringArray};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{DataType, TimeUnit};

use super::bind::{Bound, Fast, Program, Test};
use super::eval::container;
use super::holds::holds;
use super::literal::{addr_bits, Literal};
use super::op::Op;
use crate::codec::arrow::schema::interval_from_seconds;
use crate::codec::zeek::scalar::{parse_addr, parse_subnet};
use crate::types::Type;
use crate::value::ValueRef;

/// Why a batch's columns could not be evaluated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// The program reads a field whose column was not given.
    #[error("field {field}: no column given, and the expression reads it")]
    Missing {
        /// The field's name.
        field: String,
    },
    /// A column holds another number of values than the batch has rows.
    #[error("field {field}: the column holds {len} values, the batch {rows} rows")]
    Length {
        /// The field's name.
        field: String,
        /// The column's length.
        len: usize,
        /// The batch's rows.
        rows: usize,
    },
    /// A column is not of the Arrow type of its field's Zeek type.
    #[error("field {field}: Zeek type {ty} held as Arrow type {arrow}")]
    Type {
        /// The field's name.
        field: String,
        /// The field's Zeek type.
        ty: String,
        /// The column's Arrow type.
        arrow: String,
    },
    /// A set value that does not read as its type.
    #[error("field {field}: invalid {ty} value {value:?} in row {row}")]
    Value {
        /// The field's name.
        field: String,
        /// The field's Zeek type.
        ty: String,
        /// The value, as text.
        value: String,
        /// Its row (for a container, the index among the list's values).
        row: usize,
    },
}

impl Program {
    /// The fields the program reads (ascending): the columns [`Program::evaluate_arrow`]
    /// needs.
    pub fn read_fields(&self) -> &[usize] {
        &self.fields
    }

    /// Which of the `rows` rows of a batch match, the batch given as its columns by field
    /// index of the program's schema (`None`, or past the end: a column not given; only
    /// [`Program::read_fields`] are needed); `first_id` is the first row's event ID, `None`
    /// when unknown (then `#id` comparisons are false, as in [`Program::matches`]).
    pub fn evaluate_arrow(
        &self,
        columns: &[Option<ArrayRef>],
        rows: usize,
        first_id: Option<u64>,
    ) -> Result<BooleanArray, KernelError> {
        let b = eval(self, &self.bound, columns, rows, first_id)?;
        Ok(BooleanArray::new(b, None))
    }

    /// [`Program::evaluate_arrow`] on a record batch of the program's schema (as
    /// [`crate::codec::arrow::ArrowBuilder`] makes it: a column per field, in order).
    pub fn evaluate_record_batch(
        &self,
        batch: &RecordBatch,
        first_id: Option<u64>,
    ) -> Result<BooleanArray, KernelError> {
        let columns: Vec<Option<ArrayRef>> = batch.columns().iter().cloned().map(Some).collect();
        self.evaluate_arrow(&columns, batch.num_rows(), first_id)
    }
}

fn eval(
    p: &Program,
    b: &Bound,
    cols: &[Option<ArrayRef>],
    rows: usize,
    first_id: Option<u64>,
) -> Result<BooleanBuffer, KernelError> {
    Ok(match b {
        Bound::Const(true) => BooleanBuffer::new_set(rows),
        Bound::Const(false) => BooleanBuffer::new_unset(rows),
        Bound::And(v) => {
            let mut acc = BooleanBuffer::new_set(rows);
            for b in v {
                if !acc.has_true() {
                    break;
                }
                acc &= &eval(p, b, cols, rows, first_id)?;
            }
            acc
        }
        Bound::Or(v) => {
            let mut acc = BooleanBuffer::new_unset(rows);
            for b in v {
                if !acc.has_false() {
                    break;
                }
                acc |= &eval(p, b, cols, rows, first_id)?;
            }
            acc
        }
        Bound::Test(t) => test(p, t, cols, rows)?,
        // An unknown ID is as an unset value: no match.
        Bound::Id(r) => match first_id {
            None => BooleanBuffer::new_unset(rows),
            Some(first) => {
                BooleanBuffer::collect_bool(rows, |i| r.holds(first.wrapping_add(i as u64)))
            }
        },
    })
}

/// The name of field `f` of the program's schema.
fn name(p: &Program, f: usize) -> String {
    p.schema
        .fields
        .get(f)
        .map_or_else(|| format!("#{f}"), |x| x.name.clone())
}

/// The column of field `f`, checked to have `rows` values.
fn column<'a>(
    p: &Program,
    cols: &'a [Option<ArrayRef>],
    f: usize,
    rows: usize,
) -> Result<&'a ArrayRef, KernelError> {
    let a = cols
        .get(f)
        .and_then(Option::as_ref)
        .ok_or_else(|| KernelError::Missing { field: name(p, f) })?;
    if a.len() != rows {
        return Err(KernelError::Length {
            field: name(p, f),
            len: a.len(),
            rows,
        });
    }
    Ok(a)
}

fn type_error(p: &Program, f: usize, ty: &Type, a: &dyn Array) -> KernelError {
    KernelError::Type {
        field: name(p, f),
        ty: ty.to_string(),
        arrow: a.data_type().to_string(),
    }
}

/// One comparison on its field's column.
fn test(
    p: &Program,
    t: &Test,
    cols: &[Option<ArrayRef>],
    rows: usize,
) -> Result<BooleanBuffer, KernelError> {
    let array = column(p, cols, t.field, rows)?;
    if let Literal::Nil = t.lit {
        // `== nil`: the unset rows; `!= nil`: the set ones (a container too, empty or not).
        let set = match array.logical_nulls() {
            Some(n) => n.inner().clone(),
            None => BooleanBuffer::new_set(rows),
        };
        return Ok(match t.op {
            Op::Eq => !&set,
            Op::Ne => set,
            _ => BooleanBuffer::new_unset(rows),
        });
    }
    // A port with a protocol: the event's `proto` text, where the schema has one.
    let proto = match (t.proto, &t.lit) {
        (Some(f), Literal::Port(_, Some(want))) => {
            let a = column(p, cols, f, rows)?;
            let ty = p.types.get(f).unwrap_or(&Type::String);
            let text = a
                .as_string_opt::<i32>()
                .ok_or_else(|| type_error(p, f, ty, a.as_ref()))?;
            Some((text, want.as_bytes()))
        }
        _ => None,
    };
    let at = Where {
        p,
        field: t.field,
        ty: &t.ty,
    };
    let Some(elem) = t.ty.element() else {
        return scalar(&at, array.as_ref(), t.op, &t.lit, t.fast, proto);
    };
    let list = array
        .as_list_opt::<i32>()
        .ok_or_else(|| type_error(p, t.field, &t.ty, array.as_ref()))?;
    let negate = t.op.is_negative();
    let op = if negate { t.op.negate() } else { t.op };
    let offsets = list.value_offsets();
    let values = list.values();
    let inner = Where {
        p,
        field: t.field,
        ty: elem,
    };
    let mut positive = match (op, &t.lit) {
        (Op::Eq, Literal::List(_)) => {
            // The whole list: per row, as the row evaluator does.
            let view = View::new(values.as_ref(), elem)
                .ok_or_else(|| type_error(p, t.field, &t.ty, array.as_ref()))?;
            let nulls = values.logical_nulls();
            let mut failed = None;
            let mut items = Vec::new();
            let b = BooleanBuffer::collect_bool(rows, |i| {
                items.clear();
                for j in offsets[i] as usize..offsets[i + 1] as usize {
                    if nulls.as_ref().is_some_and(|n| n.is_null(j)) {
                        items.push(ValueRef::Null);
                        continue;
                    }
                    match view.get(j) {
                        Ok(v) => items.push(v),
                        Err(e) => {
                            failed.get_or_insert((j, e));
                            return false;
                        }
                    }
                }
                container(&items, op, &t.lit)
            });
            if let Some((j, value)) = failed {
                return Err(inner.bad(value, j));
            }
            b
        }
        (op, x) => {
            // Some element holds (`x in field` is `field ni x`: an element equals `x`).
            let op = if op == Op::Ni { Op::Eq } else { op };
            let fast = Fast::of(&Test {
                field: t.field,
                ty: elem.clone(),
                op,
                lit: x.clone(),
                proto: None,
                slot: 0,
                proto_slot: None,
                fast: Fast::None,
            });
            let hit = scalar(&inner, values.as_ref(), op, x, fast, None)?;
            BooleanBuffer::collect_bool(rows, |i| {
                let (s, e) = (offsets[i] as usize, offsets[i + 1] as usize);
                (s..e).any(|j| hit.value(j))
            })
        }
    };
    if let Some((text, want)) = proto {
        positive &= &proto_agrees(text, want, rows);
    }
    Ok(finish(positive, negate, list.nulls()))
}

/// Per row, whether the event's `proto` agrees with a port's protocol: equal, or unset.
fn proto_agrees(text: &StringArray, want: &[u8], rows: usize) -> BooleanBuffer {
    BooleanBuffer::collect_bool(rows, |i| {
        text.is_null(i) || text.value(i).as_bytes() == want
    })
}

/// The answer from the positive operator's: negated for a negative one, then false where the
/// value is unset.
fn finish(positive: BooleanBuffer, negate: bool, nulls: Option<&NullBuffer>) -> BooleanBuffer {
    let out = if negate { !&positive } else { positive };
    match nulls {
        Some(n) => &out & n.inner(),
        None => out,
    }
}

/// The field a comparison reads (for errors) and the type of the values compared.
struct Where<'a> {
    p: &'a Program,
    field: usize,
    ty: &'a Type,
}

impl Where<'_> {
    fn bad(&self, value: String, row: usize) -> KernelError {
        KernelError::Value {
            field: name(self.p, self.field),
            ty: self.ty.to_string(),
            value,
            row,
        }
    }

    fn mismatch(&self, a: &dyn Array) -> KernelError {
        type_error(self.p, self.field, self.ty, a)
    }
}

/// `v op lit` (as [`holds`]) for each value of a scalar column of type `at.ty`, false where
/// unset; `fast` is the comparison's range form, `proto` the `proto` column and protocol of a
/// port with one.
fn scalar(
    at: &Where<'_>,
    array: &dyn Array,
    op: Op,
    lit: &Literal,
    fast: Fast,
    proto: Option<(&StringArray, &[u8])>,
) -> Result<BooleanBuffer, KernelError> {
    let rows = array.len();
    let nulls = array.logical_nulls();
    let view = View::new(array, at.ty).ok_or_else(|| at.mismatch(array))?;
    let valid = |i: usize| nulls.as_ref().is_none_or(|n| n.is_valid(i));
    let (positive, negate) = match (fast, &view) {
        (Fast::Unsigned { lo, hi, negate }, View::Count(v)) => (
            BooleanBuffer::collect_bool(rows, |i| (lo..=hi).contains(&v[i])),
            negate,
        ),
        (Fast::Unsigned { lo, hi, negate }, View::Port(v)) => (
            BooleanBuffer::collect_bool(rows, |i| (lo..=hi).contains(&u64::from(v[i]))),
            negate,
        ),
        (Fast::Signed { lo, hi, negate }, View::Int(v) | View::Time(v)) => (
            BooleanBuffer::collect_bool(rows, |i| (lo..=hi).contains(&v[i])),
            negate,
        ),
        (Fast::Signed { lo, hi, negate }, View::Seconds(v)) => {
            let mut failed = None;
            let b = BooleanBuffer::collect_bool(rows, |i| match seconds_in(v[i], lo, hi) {
                Some(b) => b,
                None => {
                    if valid(i) {
                        failed.get_or_insert(i);
                    }
                    false
                }
            });
            if let Some(i) = failed {
                return Err(at.bad(v[i].to_string(), i));
            }
            (b, negate)
        }
        (Fast::Bytes { negate }, View::Text(a)) => {
            let Literal::String(want) = lit else {
                return Ok(BooleanBuffer::new_unset(rows));
            };
            (text_equal(a, want), negate)
        }
        (Fast::Addr { bits: want, negate }, View::Addr(a)) => {
            let mut failed = None;
            let b = BooleanBuffer::collect_bool(rows, |i| {
                if !valid(i) {
                    return false;
                }
                let s = a.value(i);
                match parse_addr(s.as_bytes()) {
                    Some(x) => addr_bits(x) == want,
                    None => {
                        failed.get_or_insert(i);
                        false
                    }
                }
            });
            if let Some(i) = failed {
                return Err(at.bad(a.value(i).to_string(), i));
            }
            (b, negate)
        }
        _ => {
            let negate = op.is_negative();
            let op = if negate { op.negate() } else { op };
            (general(at, &view, &valid, op, lit, rows)?, negate)
        }
    };
    let positive = match proto {
        Some((text, want)) => &positive & &proto_agrees(text, want, rows),
        None => positive,
    };
    Ok(finish(positive, negate, nulls.as_ref()))
}

/// `v op lit` for a positive operator on each set value, by [`holds`] (a substring with one
/// `memmem` searcher for the column).
fn general(
    at: &Where<'_>,
    view: &View<'_>,
    valid: &dyn Fn(usize) -> bool,
    op: Op,
    lit: &Literal,
    rows: usize,
) -> Result<BooleanBuffer, KernelError> {
    if let (View::Text(a), Op::Ni, Literal::String(needle)) = (view, op, lit) {
        let finder = memchr::memmem::Finder::new(needle);
        return Ok(BooleanBuffer::collect_bool(rows, |i| {
            finder.find(a.value(i).as_bytes()).is_some()
        }));
    }
    let mut failed = None;
    let b = BooleanBuffer::collect_bool(rows, |i| {
        if !valid(i) {
            return false;
        }
        match view.get(i) {
            Ok(v) => holds(&v, op, lit),
            Err(e) => {
                failed.get_or_insert((i, e));
                false
            }
        }
    });
    match failed {
        Some((i, value)) => Err(at.bad(value, i)),
        None => Ok(b),
    }
}

/// Per row, whether the text's bytes equal `want` (the lengths first, from the offsets).
fn text_equal(a: &StringArray, want: &[u8]) -> BooleanBuffer {
    let offsets = a.value_offsets();
    let data = a.value_data();
    let n = want.len();
    BooleanBuffer::collect_bool(a.len(), |i| {
        let (s, e) = (offsets[i] as usize, offsets[i + 1] as usize);
        e - s == n && data.get(s..e) == Some(want)
    })
}

/// Whether an interval of `s` seconds is, in the nanoseconds the reader makes of it
/// ([`interval_from_seconds`]), within `lo..=hi`; `None` when it is no number (NaN or
/// infinite). Decided on `s * 1e9` where that is more than a few nanoseconds from both
/// bounds (the reader's value is within a nanosecond and a few units in the 15th digit of
/// it); the exact nanoseconds are made only near a bound.
#[inline(always)]
fn seconds_in(s: f64, lo: i64, hi: i64) -> Option<bool> {
    /// Beyond this many nanoseconds the reader saturates at the ends of an `i64`.
    const SATURATES: f64 = 9.2e18;
    let x = s * 1e9;
    let margin = 4.0 + x.abs() * 1e-13;
    let (lof, hif) = (lo as f64, hi as f64);
    if x.abs() < SATURATES {
        if x - margin >= lof && x + margin <= hif {
            return Some(true);
        }
        if x + margin < lof || x - margin > hif {
            return Some(false);
        }
    }
    let ns = interval_from_seconds(s)?;
    Some(lo <= ns && ns <= hi)
}

/// A scalar column as the Zeek values it holds.
enum View<'a> {
    Bool(&'a arrow_array::BooleanArray),
    Count(&'a [u64]),
    Int(&'a [i64]),
    Double(&'a [f64]),
    Time(&'a [i64]),
    /// `interval`: seconds.
    Seconds(&'a [f64]),
    Port(&'a [u16]),
    Text(&'a StringArray),
    Addr(&'a StringArray),
    Subnet(&'a StringArray),
}

impl<'a> View<'a> {
    /// `array` as values of the scalar type `ty`; `None` if it is not of its Arrow type.
    fn new(array: &'a dyn Array, ty: &Type) -> Option<View<'a>> {
        Some(match ty {
            Type::Bool => View::Bool(array.as_boolean_opt()?),
            Type::Count => View::Count(array.as_primitive_opt::<UInt64Type>()?.values()),
            Type::Int => View::Int(array.as_primitive_opt::<Int64Type>()?.values()),
            Type::Double => View::Double(array.as_primitive_opt::<Float64Type>()?.values()),
            Type::Time => match array.data_type() {
                DataType::Timestamp(TimeUnit::Nanosecond, _) => View::Time(
                    array
                        .as_primitive_opt::<TimestampNanosecondType>()?
                        .values(),
                ),
                _ => return None,
            },
            Type::Interval => View::Seconds(array.as_primitive_opt::<Float64Type>()?.values()),
            Type::Port => View::Port(array.as_primitive_opt::<UInt16Type>()?.values()),
            Type::Addr => View::Addr(array.as_string_opt::<i32>()?),
            Type::Subnet => View::Subnet(array.as_string_opt::<i32>()?),
            t if t.is_stringy() => View::Text(array.as_string_opt::<i32>()?),
            _ => return None,
        })
    }

    /// Value `i` (known to be set) as the reader decodes it; `Err` with its text when it
    /// does not read.
    #[inline]
    fn get(&self, i: usize) -> Result<ValueRef<'a>, String> {
        Ok(match self {
            View::Bool(a) => ValueRef::Bool(a.value(i)),
            View::Count(v) => ValueRef::Count(v[i]),
            View::Int(v) => ValueRef::Int(v[i]),
            View::Double(v) => ValueRef::Double(v[i]),
            View::Time(v) => ValueRef::Time(v[i]),
            View::Seconds(v) => {
                ValueRef::Interval(interval_from_seconds(v[i]).ok_or_else(|| v[i].to_string())?)
            }
            View::Port(v) => ValueRef::Port(u64::from(v[i])),
            View::Text(a) => ValueRef::String(a.value(i).as_bytes()),
            View::Addr(a) => {
                let s = a.value(i);
                ValueRef::Addr(parse_addr(s.as_bytes()).ok_or_else(|| s.to_string())?)
            }
            View::Subnet(a) => {
                let s = a.value(i);
                let (net, prefix) = parse_subnet(s.as_bytes()).ok_or_else(|| s.to_string())?;
                ValueRef::Subnet(net, prefix)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use super::*;
    use crate::codec::arrow::schema::interval_seconds;
    use crate::codec::arrow::ArrowBuilder;
    use crate::query::Query;
    use crate::types::{Field, Schema, SchemaRef};
    use crate::value::{encode_row, Value};

    fn schema() -> SchemaRef {
        Schema::new(
            "zeek.conn",
            vec![
                Field::new("ts", Type::Time),
                Field::new("id.orig_h", Type::Addr),
                Field::new("net", Type::Subnet),
                Field::new("duration", Type::Interval),
                Field::new("history", Type::String),
                Field::new("tags", Type::Set(Box::new(Type::String))),
                Field::new("id.resp_p", Type::Port),
                Field::new("proto", Type::Enum),
            ],
        )
        .into_shared()
    }

    fn addr(s: &str) -> Value {
        Value::Addr(s.parse().unwrap())
    }

    fn strings(v: &[&str]) -> Value {
        Value::List(
            v.iter()
                .map(|s| Value::String(s.as_bytes().to_vec()))
                .collect(),
        )
    }

    /// Rows of every kind of value the tests below ask about, unset ones among them.
    fn rows() -> Vec<Vec<Value>> {
        let t = 1_258_531_221_500_000_000;
        let s = |x: &[u8]| Value::String(x.to_vec());
        vec![
            vec![
                Value::Time(t),
                addr("10.0.0.10"),
                Value::Subnet("10.0.0.0".parse().unwrap(), 8),
                Value::Interval(1_000_000_001),
                s(b"ShADadFf"),
                strings(&["a", "b"]),
                Value::Port(53),
                s(b"udp"),
            ],
            vec![
                Value::Time(t + 1),
                addr("::ffff:10.0.0.9"),
                Value::Subnet("::ffff:10.0.0.0".parse().unwrap(), 104),
                Value::Interval(1_000_000_000),
                s(b"\xff"),
                strings(&[]),
                Value::Port(53),
                s(b"tcp"),
            ],
            vec![
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                s(b"\\xff"),
                Value::Null,
                Value::Null,
                Value::Null,
            ],
            vec![
                Value::Time(t - 1),
                addr("2001:db8::1"),
                Value::Subnet("2001:db8::".parse().unwrap(), 32),
                Value::Interval(999_999_999),
                s(b"S"),
                strings(&["a"]),
                Value::Port(80),
                Value::Null,
            ],
        ]
    }

    fn batch(schema: &SchemaRef, rows: &[Vec<Value>]) -> (RecordBatch, Vec<Vec<u8>>) {
        let mut b = ArrowBuilder::new(schema.clone());
        let mut encoded = Vec::new();
        for r in rows {
            let mut buf = Vec::new();
            encode_row(r, &mut buf);
            b.append(&buf).unwrap();
            encoded.push(buf);
        }
        (b.finish().unwrap(), encoded)
    }

    /// The rows each expression matches, by the Arrow evaluator.
    fn matching(expr: &str) -> Vec<usize> {
        let s = schema();
        let (rb, _) = batch(&s, &rows());
        let p = Query::parse(expr).unwrap().bind(&s);
        let got = p.evaluate_record_batch(&rb, Some(100)).unwrap();
        assert_eq!(got.null_count(), 0);
        (0..got.len()).filter(|&i| got.value(i)).collect()
    }

    #[test]
    fn comparisons_mean_what_the_language_says() {
        for (expr, want) in [
            // Addresses as addresses, not text; IPv4 is its IPv4-mapped form.
            ("id.orig_h > 10.0.0.9", vec![0, 3]),
            ("id.orig_h == 10.0.0.9", vec![1]),
            ("id.orig_h == ::ffff:10.0.0.10", vec![0]),
            ("id.orig_h in 10.0.0.0/8", vec![0, 1]),
            ("id.orig_h !in 10.0.0.0/8", vec![3]),
            (":subnet == 10.0.0.0/8", vec![0, 1]),
            ("net == 10.0.0.0/8", vec![0, 1]),
            ("net ni 10.1.2.3", vec![0, 1]),
            ("10.0.0.0/16 in net", vec![0, 1]),
            // Unset values never match, also negative operators.
            ("id.orig_h != 10.0.0.9", vec![0, 3]),
            ("! (ts < 2009-11-18T08:00:21.5Z)", vec![0, 1]),
            // Times and intervals to the nanosecond.
            ("ts == @1258531221.500000001", vec![1]),
            ("ts < @1258531221.5", vec![3]),
            ("duration > 1s", vec![0]),
            ("duration >= 1s", vec![0, 1]),
            ("duration < 1s", vec![3]),
            ("duration in [1000000001ns, 999999999ns]", vec![0, 3]),
            // Containers: an empty one holds nothing; its negation holds, an unset one's not.
            ("\"a\" in tags", vec![0, 3]),
            ("\"a\" !in tags", vec![1]),
            ("tags == [\"a\", \"b\"]", vec![0]),
            ("tags != [\"a\"]", vec![0, 1]),
            // Strings: substrings, patterns; Arrow holds the byte 0xff as the text `\xff`.
            ("\"AD\" in history", vec![0]),
            ("history == /S.*/", vec![0, 3]),
            ("history ni /A/", vec![0]),
            ("history == \"\\xff\"", vec![]),
            ("history == \"\\\\xff\"", vec![1, 2]),
            // Ports with a protocol check `proto` where it is set.
            ("id.resp_p == 53/udp", vec![0]),
            ("id.resp_p != 53/udp", vec![1, 3]),
            ("id.resp_p == 80/tcp", vec![3]),
            ("#id >= 101 && #id < 103", vec![1, 2]),
            (
                "#type == \"zeek.conn\" && #field == \"proto\"",
                vec![0, 1, 2, 3],
            ),
        ] {
            assert_eq!(matching(expr), want, "{expr}");
        }
    }

    /// The same answers as the row evaluator on the rows the batch reads back as, and on the
    /// original rows where Arrow holds them exactly (not the string that is no UTF-8).
    #[test]
    fn answers_are_the_row_evaluators() {
        let s = schema();
        let rows = rows();
        let (rb, encoded) = batch(&s, &rows);
        let back = crate::codec::arrow::record_batch_to_batches(&rb, &s, 100).unwrap();
        let back: Vec<&[u8]> = back.iter().flat_map(|b| b.rows()).collect();
        for expr in [
            "id.orig_h > 10.0.0.9",
            "duration > 1s || \"b\" in tags",
            "history != \"S\"",
            "id.resp_p < 60",
            ":string == /.*A.*/",
        ] {
            let p = Query::parse(expr).unwrap().bind(&s);
            let got = p.evaluate_record_batch(&rb, None).unwrap();
            for i in 0..rows.len() {
                assert_eq!(got.value(i), p.matches(back[i]).unwrap(), "{expr} row {i}");
                if i != 1 {
                    assert_eq!(got.value(i), p.matches(&encoded[i]).unwrap(), "{expr} {i}");
                }
            }
        }
    }

    /// Deciding an interval range on `s * 1e9` gives what the reader's exact nanoseconds
    /// give, near the bounds and far from them, at every magnitude, NaN and infinities
    /// refused.
    #[test]
    fn seconds_decide_ranges_as_their_exact_nanoseconds() {
        let mut next = crate::value::xorshift();
        let mut checked = 0;
        let bounds = [
            0i64,
            1,
            -1,
            999_999_999,
            1_000_000_000,
            1_000_000_001,
            600_000_000_000,
            1 << 53,
            (1 << 53) + 1,
            631_152_000_000_000_123,
            i64::MAX - 1,
            i64::MAX,
            i64::MIN,
        ];
        for &lo in &bounds {
            for &hi in &bounds {
                for &b in &bounds {
                    for d in [-3i64, -1, 0, 1, 2, 1000] {
                        let ns = b.saturating_add(d);
                        let mut ss = vec![interval_seconds(ns)];
                        ss.push(ss[0].next_up());
                        ss.push(ss[0].next_down());
                        ss.push(ns as f64 / 1e9 * (1.0 + next(100) as f64 * 1e-16));
                        for s in ss {
                            let exact = interval_from_seconds(s).map(|v| lo <= v && v <= hi);
                            assert_eq!(seconds_in(s, lo, hi), exact, "{s} in {lo}..={hi}");
                            checked += 1;
                        }
                    }
                }
            }
        }
        for s in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(seconds_in(s, 0, 1), None);
        }
        assert!(checked > 10_000, "{checked}");
    }

    #[test]
    fn columns_missing_mistyped_or_short_are_errors_naming_the_field() {
        let s = schema();
        let (rb, _) = batch(&s, &rows());
        let p = Query::parse("duration > 1s").unwrap().bind(&s);
        let mut cols: Vec<Option<ArrayRef>> = rb.columns().iter().cloned().map(Some).collect();
        cols[3] = None;
        let e = p.evaluate_arrow(&cols, 4, None).unwrap_err().to_string();
        assert!(e.contains("duration") && e.contains("no column"), "{e}");
        cols[3] = Some(rb.column(0).clone());
        let e = p.evaluate_arrow(&cols, 4, None).unwrap_err().to_string();
        assert!(
            e.contains("duration") && e.contains("Zeek type interval held as"),
            "{e}"
        );
        cols[3] = Some(rb.column(3).slice(0, 2));
        let e = p.evaluate_arrow(&cols, 4, None).unwrap_err().to_string();
        assert!(e.contains("duration") && e.contains("2 values"), "{e}");
        // Only the fields read are needed.
        let only: Vec<Option<ArrayRef>> = (0..4)
            .map(|f| (f == 3).then(|| rb.column(3).clone()))
            .collect();
        assert_eq!(p.read_fields(), [3]);
        let got = p.evaluate_arrow(&only, 4, None).unwrap();
        assert_eq!(got.iter().flatten().filter(|&b| b).count(), 1);
        // A NaN interval does not read.
        let nan: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![
            1.0,
            f64::NAN,
            2.0,
            0.0,
        ]));
        let e = p
            .evaluate_arrow(&[None, None, None, Some(nan)], 4, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("NaN") && e.contains("row 1"), "{e}");
    }
}
