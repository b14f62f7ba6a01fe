//! The msgpack row walk of main (temporary: compared with the batch path by a test).
#![allow(dead_code, missing_docs)]

use crate::codec::zeek::scalar::{push_decimal_ns, push_i64, push_u64};
use crate::types::{Schema, Type};
use crate::value::{DecodeError, RowCursor, ValueRef, NIL};

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

/// What sets one text format apart from another. [`write_row`] walks a row with a
/// [`RowCursor`] and calls these for the punctuation and for the scalars that the formats write
/// differently; `count`, `int`, `port` (decimal) and `interval` (exact decimal seconds) are the
/// same in every format and written by [`write_row`] itself, and so is the `,` between the
/// elements of a container.
pub(crate) trait TextFormat {
    /// How containers are written.
    const LIST: ListText;
    /// After the last field.
    const ROW_END: &'static [u8];
    /// Before the first field.
    fn begin_row(&self, out: &mut Vec<u8>);
    /// Before the value of field `i` (0-based) when `set`, or in place of the field when not.
    fn field(&self, i: usize, set: bool, out: &mut Vec<u8>);
    /// A set `bool`, `double`, `time`, string-like, `addr` or `subnet` value; `in_list` when it
    /// is a container's element.
    fn scalar(&self, v: ValueRef<'_>, in_list: bool, out: &mut Vec<u8>);
}

/// Formats one msgpack row of `schema` (see [`crate::value`]) in format `f`.
#[inline]
pub(crate) fn write_row<F: TextFormat>(
    f: &F,
    schema: &Schema,
    row: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    let mut r = RowCursor::new(row);
    r.row_header(schema.fields.len())?;
    f.begin_row(out);
    for (i, field) in schema.fields.iter().enumerate() {
        let m = r.marker()?;
        f.field(i, m != NIL, out);
        if m == NIL {
            continue;
        }
        let Some(inner) = field.ty.element() else {
            write_scalar(f, &mut r, m, &field.ty, false, out)?;
            continue;
        };
        let n = r.list_len(m)?;
        if n == 0 {
            out.extend_from_slice(F::LIST.empty);
            continue;
        }
        out.extend_from_slice(F::LIST.open);
        for j in 0..n {
            if j > 0 {
                out.push(b',');
            }
            let m = r.marker()?;
            if m == NIL {
                out.extend_from_slice(F::LIST.unset);
            } else {
                write_scalar(f, &mut r, m, inner, true, out)?;
            }
        }
        out.extend_from_slice(F::LIST.close);
    }
    out.extend_from_slice(F::ROW_END);
    Ok(())
}

/// Formats the set scalar of type `ty` whose marker `m` was just read.
#[inline(always)]
fn write_scalar<F: TextFormat>(
    f: &F,
    r: &mut RowCursor<'_>,
    m: u8,
    ty: &Type,
    in_list: bool,
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    match ty {
        Type::Count | Type::Port => push_u64(out, r.uint(m, ty)?),
        Type::Int => push_i64(out, r.int(m, ty)?),
        Type::Interval => push_decimal_ns(out, r.int(m, ty)?),
        _ => f.scalar(r.scalar(m, ty)?, in_list, out),
    }
    Ok(())
}
