//! Evaluating a bound expression on encoded rows, in place: one [`RowCursor`] pass reads the
//! fields the comparisons need (as borrowed [`ValueRef`]s) and steps over the others without
//! building values. Unset values never match, whatever the operator.

use std::cmp::Ordering;

use super::bind::{Bound, Program, Test};
use super::literal::{in_subnet, mask, Literal, Number};
use super::parser::Op;
use crate::types::Type;
use crate::value::{DecodeError, RowCursor, ValueRef, NIL};

impl Program {
    /// Whether the encoded row (of this program's schema) matches.
    pub fn matches(&self, row: &[u8]) -> Result<bool, DecodeError> {
        if let Bound::Const(b) = self.bound {
            return Ok(b);
        }
        let values = self.read(row)?;
        Ok(eval(&self.bound, &values))
    }

    /// The values of the fields the program reads (others are `Null`), up to the last one.
    fn read<'a>(&self, row: &'a [u8]) -> Result<Vec<ValueRef<'a>>, DecodeError> {
        let mut c = RowCursor::new(row);
        c.row_header(self.types.len())?;
        let last = self.fields.last().map_or(0, |&l| l + 1);
        let mut values = Vec::with_capacity(last);
        let mut wanted = self.fields.iter().peekable();
        for (i, ty) in self.types.iter().enumerate().take(last) {
            if wanted.peek() == Some(&&i) {
                wanted.next();
                values.push(c.read(ty)?);
            } else {
                skip(&mut c, ty)?;
                values.push(ValueRef::Null);
            }
        }
        Ok(values)
    }

    /// The `ts` value of a row (for the time range of a filtered batch).
    pub(crate) fn row_ts(&self, row: &[u8]) -> Result<Option<i64>, DecodeError> {
        let Some(ts) = self.ts_index else {
            return Ok(None);
        };
        let mut c = RowCursor::new(row);
        c.row_header(self.types.len())?;
        for ty in &self.types[..ts] {
            skip(&mut c, ty)?;
        }
        Ok(match c.read(&self.types[ts])? {
            ValueRef::Time(t) => Some(t),
            _ => None,
        })
    }
}

/// Steps over one value of type `ty` without building it.
fn skip(c: &mut RowCursor<'_>, ty: &Type) -> Result<(), DecodeError> {
    let m = c.marker()?;
    if m == NIL {
        return Ok(());
    }
    match ty.element() {
        Some(elem) => {
            for _ in 0..c.list_len(m)? {
                let m = c.marker()?;
                if m != NIL {
                    c.scalar(m, elem)?;
                }
            }
        }
        None => {
            c.scalar(m, ty)?;
        }
    }
    Ok(())
}

fn eval(b: &Bound, values: &[ValueRef<'_>]) -> bool {
    match b {
        Bound::Const(b) => *b,
        Bound::And(v) => v.iter().all(|b| eval(b, values)),
        Bound::Or(v) => v.iter().any(|b| eval(b, values)),
        Bound::Test(t) => test(t, values),
    }
}

fn test(t: &Test, values: &[ValueRef<'_>]) -> bool {
    let v = match values.get(t.field) {
        None | Some(ValueRef::Null) => return false,
        Some(v) => v,
    };
    if let (Some(p), Literal::Port(_, Some(want))) = (t.proto, &t.lit) {
        // A port with a protocol: the event's `proto` must agree when it is set.
        if let Some(ValueRef::String(got)) = values.get(p) {
            if *got != want.as_bytes() {
                return t.op.is_negative();
            }
        }
    }
    match v {
        ValueRef::List(items) if t.ty.is_container() => container(items, t.op, &t.lit),
        v => holds(v, t.op, &t.lit),
    }
}

/// A container field: the operator holds for some element (`field == [..]` compares the whole
/// list); a negative operator is the negation of its positive.
fn container(items: &[ValueRef<'_>], op: Op, lit: &Literal) -> bool {
    if op.is_negative() {
        return !container(items, op.negate(), lit);
    }
    match (op, lit) {
        (Op::Eq, Literal::List(want)) => {
            items.len() == want.len() && items.iter().zip(want).all(|(v, w)| holds(v, Op::Eq, w))
        }
        (Op::Ni, x) => items.iter().any(|v| holds(v, Op::Eq, x)),
        (op, x) => items.iter().any(|v| holds(v, op, x)),
    }
}

/// Whether `v op lit` holds for a scalar value (`false` for an unset one and for types that
/// do not compare). A negative operator is the negation of its positive on a set value.
pub(crate) fn holds(v: &ValueRef<'_>, op: Op, lit: &Literal) -> bool {
    if matches!(v, ValueRef::Null) {
        return false;
    }
    if op.is_negative() {
        return !holds(v, op.negate(), lit);
    }
    match (op, lit) {
        (Op::Eq | Op::Match, Literal::Pattern(p)) => match v {
            ValueRef::String(s) => p.full.is_match(s),
            _ => false,
        },
        (Op::Match, _) => false,
        (Op::In, Literal::List(items)) => items.iter().any(|x| holds(v, Op::Eq, x)),
        (Op::In, Literal::Subnet(net, p)) => match *v {
            ValueRef::Addr(a) => in_subnet(a, *net, *p),
            ValueRef::Subnet(a, q) => q >= *p && in_subnet(a, *net, *p),
            _ => false,
        },
        (Op::In, Literal::String(l)) => match v {
            ValueRef::String(s) => contains(l, s),
            _ => false,
        },
        (Op::In, _) => false,
        (Op::Ni, Literal::String(l)) => match v {
            ValueRef::String(s) => contains(s, l),
            _ => false,
        },
        (Op::Ni, Literal::Pattern(p)) => match v {
            ValueRef::String(s) => p.search.is_match(s),
            _ => false,
        },
        (Op::Ni, Literal::Addr(x)) => match *v {
            ValueRef::Subnet(a, q) => in_subnet(*x, a, q),
            _ => false,
        },
        (Op::Ni, Literal::Subnet(n, p)) => match *v {
            ValueRef::Subnet(a, q) => *p >= q && in_subnet(*n, a, q),
            _ => false,
        },
        (Op::Ni, _) => false,
        (op, lit) => compare(v, lit).is_some_and(|o| match op {
            Op::Eq => o == Ordering::Equal,
            Op::Lt => o == Ordering::Less,
            Op::Le => o != Ordering::Greater,
            Op::Gt => o == Ordering::Greater,
            Op::Ge => o != Ordering::Less,
            _ => false,
        }),
    }
}

/// Whether `needle` occurs in `hay`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || memchr::memmem::find(hay, needle).is_some()
}

/// The order of a value and a literal of comparable types.
pub(crate) fn compare(v: &ValueRef<'_>, lit: &Literal) -> Option<Ordering> {
    use ValueRef as V;
    let num = match *v {
        V::Count(x) | V::Port(x) => Some(Number::U(x)),
        V::Int(x) => Some(Number::I(x)),
        V::Double(x) => Some(Number::F(x)),
        _ => None,
    };
    if let (Some(a), Some(b)) = (num, lit.number()) {
        return a.cmp(b);
    }
    match (v, lit) {
        (V::Bool(a), Literal::Bool(b)) => Some(a.cmp(b)),
        (V::String(s), Literal::String(l)) => Some((*s).cmp(l.as_slice())),
        (V::Addr(a), Literal::Addr(b)) => Some(a.cmp(b)),
        (V::Subnet(a, p), Literal::Subnet(b, q)) => {
            (p == q && mask(*a, *p) == *b).then_some(Ordering::Equal)
        }
        (V::Port(a) | V::Count(a), Literal::Port(b, _)) => Some(a.cmp(b)),
        (V::Time(a), Literal::Time(b)) | (V::Interval(a), Literal::Duration(b)) => Some(a.cmp(b)),
        _ => None,
    }
}
