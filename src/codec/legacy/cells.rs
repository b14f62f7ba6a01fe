//! The msgpack row walk of main (temporary: compared with the batch path by a test).
#![allow(dead_code, missing_docs)]

use crate::codec::zeek::scalar::{
    push_addr, push_decimal_ns, push_double, push_i64, push_rfc3339, push_subnet, push_u64,
};
use crate::types::{Schema, Type};
use crate::value::{DecodeError, RowCursor, ValueRef, NIL};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Whether the text of strings keeps control characters as they are (CSV, where quoting
/// keeps line breaks inside a cell) or escapes them (the table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Controls {
    /// Control characters are written as they are.
    Keep,
    /// Control characters are written as `\xHH` per UTF-8 byte.
    Escape,
}

/// What a cell holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CellKind {
    /// The field is unset; the cell has no text.
    Unset,
    /// The field is set but has no text: an empty string or an empty container.
    Empty,
    /// The field's text.
    Text,
}

/// The end of a cell's text in the text buffer, and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cell {
    /// Byte offset just past the cell's text.
    pub end: usize,
    /// What the cell holds.
    pub kind: CellKind,
}

/// Appends the cells of one msgpack row of `schema` (see [`crate::value`]): the text of each
/// field to `text` and its [`Cell`] to `cells`, one per field.
///
/// On error, `text` and `cells` may hold part of the row: the caller truncates them.
#[inline]
pub(crate) fn push_cells(
    schema: &Schema,
    row: &[u8],
    controls: Controls,
    text: &mut Vec<u8>,
    cells: &mut Vec<Cell>,
) -> Result<(), DecodeError> {
    let mut r = RowCursor::new(row);
    r.row_header(schema.fields.len())?;
    for field in &schema.fields {
        let m = r.marker()?;
        if m == NIL {
            cells.push(Cell {
                end: text.len(),
                kind: CellKind::Unset,
            });
            continue;
        }
        let start = text.len();
        match field.ty.element() {
            None => push_scalar(&mut r, m, &field.ty, false, controls, text)?,
            Some(inner) => {
                let n = r.list_len(m)?;
                for j in 0..n {
                    if j > 0 {
                        text.push(b',');
                    }
                    let m = r.marker()?;
                    if m == NIL {
                        text.push(b'-');
                    } else {
                        push_scalar(&mut r, m, inner, true, controls, text)?;
                    }
                }
            }
        }
        cells.push(Cell {
            end: text.len(),
            kind: if text.len() == start {
                CellKind::Empty
            } else {
                CellKind::Text
            },
        });
    }
    Ok(())
}

/// Appends the text of the set scalar of type `ty` whose marker `m` was just read; `in_list`
/// when it is a container's element.
#[inline(always)]
fn push_scalar(
    r: &mut RowCursor<'_>,
    m: u8,
    ty: &Type,
    in_list: bool,
    controls: Controls,
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    match ty {
        Type::Count | Type::Port => push_u64(out, r.uint(m, ty)?),
        Type::Int => push_i64(out, r.int(m, ty)?),
        Type::Interval => push_decimal_ns(out, r.int(m, ty)?),
        _ => match r.scalar(m, ty)? {
            ValueRef::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            ValueRef::Double(d) => {
                push_double(out, d, false);
            }
            ValueRef::Time(ns) => push_rfc3339(out, ns),
            ValueRef::String(s) => push_text(out, s, in_list, controls),
            ValueRef::Addr(a) => push_addr(out, a),
            ValueRef::Subnet(a, p) => push_subnet(out, a, p),
            // Written above, or not scalars.
            _ => {}
        },
    }
    Ok(())
}

#[inline]
fn push_hex(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(&[b'\\', b'x', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
}

/// Appends string bytes as text: valid UTF-8 as it is, but `,` in a container and (with
/// [`Controls::Escape`]) control characters as `\xHH` per byte; each byte of invalid UTF-8 as
/// `\xHH`. Runs of plain bytes are copied at once.
#[inline]
pub(crate) fn push_text(out: &mut Vec<u8>, s: &[u8], in_list: bool, controls: Controls) {
    let escape = controls == Controls::Escape;
    for chunk in s.utf8_chunks() {
        let v = chunk.valid().as_bytes();
        let mut plain = 0;
        let mut i = 0;
        while i < v.len() {
            let b = v[i];
            let n = if (in_list && b == b',') || (escape && (b < 0x20 || b == 0x7f)) {
                1
            } else if escape && b == 0xc2 && v.get(i + 1).is_some_and(|&c| c < 0xa0) {
                // U+0080..U+009F, the C1 controls (the second byte of valid UTF-8 is >= 0x80).
                2
            } else {
                0
            };
            if n == 0 {
                i += 1;
                continue;
            }
            out.extend_from_slice(&v[plain..i]);
            for &b in &v[i..i + n] {
                push_hex(out, b);
            }
            i += n;
            plain = i;
        }
        out.extend_from_slice(&v[plain..]);
        for &b in chunk.invalid() {
            push_hex(out, b);
        }
    }
}
