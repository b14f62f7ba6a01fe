//! The values of one `by` field of a table's groups (`groups.rs`), compact.
//!
//! A value that is unset, a bool, a `count`, `port`, `int`, `time`, `interval` or an IPv4
//! address is kept as its kind (a byte) and 64 bits: 9 bytes a group, where a [`Value`] takes
//! 32 (with millions of groups, most of a table's memory). Any other value (a string, an
//! IPv6 address, a subnet, a double, a list) is kept whole beside them, the bits giving its
//! place. The kinds are those of [`scalar_key`], by which a table finds a group of one such
//! value without building its key.

use super::per_group::PerGroup;
use crate::query::memory::value_heap;
use crate::value::{Value, ValueRef};

/// The kind of a value kept whole (see the module docs).
const OTHER: u8 = u8::MAX;
/// The kind of an IPv6 address in a [`scalar_key`] (kept whole here: its bits take 128).
const V6: u8 = 8;

/// A single `by` value that is a number, time, address, bool or unset, as its kind and bits:
/// a group is looked up by these without building its key. Values of different kinds or bits
/// get different scalar keys.
pub(super) fn scalar_key(values: &[ValueRef<'_>]) -> Option<(u8, u128)> {
    let [v] = values else { return None };
    Some(match v {
        ValueRef::Null => (0, 0),
        ValueRef::Bool(b) => (1, u128::from(*b)),
        ValueRef::Count(x) => (2, u128::from(*x)),
        ValueRef::Port(x) => (3, u128::from(*x)),
        ValueRef::Int(x) => (4, *x as u64 as u128),
        ValueRef::Time(x) => (5, *x as u64 as u128),
        ValueRef::Interval(x) => (6, *x as u64 as u128),
        ValueRef::Addr(std::net::IpAddr::V4(a)) => (7, u128::from(u32::from(*a))),
        ValueRef::Addr(std::net::IpAddr::V6(a)) => (V6, u128::from(*a)),
        _ => return None,
    })
}

/// The value of a kind and bits of [`scalar_key`] (not [`OTHER`] nor [`V6`]).
fn value_of(kind: u8, bits: u64) -> Value {
    match kind {
        1 => Value::Bool(bits != 0),
        2 => Value::Count(bits),
        3 => Value::Port(bits),
        4 => Value::Int(bits as i64),
        5 => Value::Time(bits as i64),
        6 => Value::Interval(bits as i64),
        7 => Value::Addr(std::net::Ipv4Addr::from(bits as u32).into()),
        _ => Value::Null,
    }
}

/// A group's value: its kind and bits, 9 bytes (a group found by its scalar reads one
/// cache line for both, not two).
#[derive(Debug, Clone, Copy)]
#[repr(C, packed)]
struct Scalar {
    /// A scalar's bits, or an other value's place in `others`.
    bits: u64,
    kind: u8,
}

/// See the [module docs](self).
#[derive(Debug, Clone, Default)]
pub(super) struct GroupValues {
    scalars: PerGroup<Scalar>,
    others: PerGroup<Value>,
    /// The heap bytes of `others`' values.
    others_heap: usize,
}

impl GroupValues {
    /// Appends the next group's value.
    pub(super) fn push(&mut self, v: &ValueRef<'_>) {
        match scalar_key(std::slice::from_ref(v)) {
            Some((kind, bits)) if kind != V6 => self.push_scalar(kind, bits as u64),
            _ => self.push_other(v.to_owned()),
        }
    }

    /// Appends the next group's value, taken from group `g` of `from` (left unset there).
    pub(super) fn push_taken(&mut self, from: &mut GroupValues, g: usize) {
        match from.scalars.get(g).copied() {
            Some(Scalar { kind: OTHER, .. }) => {
                let v = from.take(g);
                self.push_other(v);
            }
            Some(s) => self.scalars.push(s),
            None => self.push_scalar(0, 0),
        }
    }

    fn push_scalar(&mut self, kind: u8, bits: u64) {
        self.scalars.push(Scalar { bits, kind });
    }

    fn push_other(&mut self, v: Value) {
        self.others_heap += value_heap(&v);
        self.push_scalar(OTHER, self.others.len() as u64);
        self.others.push(v);
    }

    /// Group `g`'s kind and bits.
    #[inline]
    fn read(&self, g: usize) -> Option<(u8, u64)> {
        let s = *self.scalars.get(g)?;
        Some((s.kind, s.bits))
    }

    fn other(&self, at: u64) -> Option<&Value> {
        self.others.get(usize::try_from(at).ok()?)
    }

    /// Group `g`'s [`scalar_key`] (`None`: a value that has none).
    #[inline]
    pub(super) fn scalar(&self, g: usize) -> Option<(u8, u128)> {
        match self.read(g)? {
            (OTHER, at) => match self.other(at)? {
                // (A list is no scalar; borrowing it would copy its items.)
                Value::List(_) => None,
                v => scalar_key(&[v.borrowed()]),
            },
            (kind, bits) => Some((kind, u128::from(bits))),
        }
    }

    /// Group `g`'s value.
    pub(super) fn get(&self, g: usize) -> Value {
        match self.read(g) {
            Some((OTHER, at)) => self.other(at).cloned().unwrap_or(Value::Null),
            Some((kind, bits)) => value_of(kind, bits),
            None => Value::Null,
        }
    }

    /// Group `g`'s value, taken: left unset.
    pub(super) fn take(&mut self, g: usize) -> Value {
        match self.read(g) {
            Some((OTHER, at)) => usize::try_from(at)
                .ok()
                .and_then(|at| self.others.get_mut(at))
                .map_or(Value::Null, |v| {
                    let v = std::mem::replace(v, Value::Null);
                    self.others_heap -= value_heap(&v);
                    v
                }),
            _ => self.get(g),
        }
    }

    /// The heap bytes it holds.
    pub(super) fn heap(&self) -> usize {
        self.scalars.heap() + self.others.heap() + self.others_heap
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn values_of_every_kind_come_back_as_they_went_in() {
        let values = [
            Value::Null,
            Value::Bool(true),
            Value::Bool(false),
            Value::Count(u64::MAX),
            Value::Port(443),
            Value::Int(-7),
            Value::Int(i64::MIN),
            Value::Time(-1),
            Value::Interval(i64::MAX),
            Value::Addr("10.0.0.1".parse().unwrap()),
            Value::Addr("::1".parse().unwrap()),
            Value::Addr("::ffff:10.0.0.1".parse().unwrap()),
            Value::Subnet("10.0.0.0".parse().unwrap(), 8),
            Value::Double(-0.5),
            Value::String(b"x".to_vec()),
            Value::List(vec![Value::Count(1), Value::Null]),
        ];
        let mut column = GroupValues::default();
        for v in &values {
            column.push(&v.borrowed());
        }
        let mut moved = GroupValues::default();
        for (g, v) in values.iter().enumerate() {
            assert_eq!(&column.get(g), v);
            let want = match v {
                Value::List(_) => None,
                v => scalar_key(&[v.borrowed()]),
            };
            assert_eq!(column.scalar(g), want, "{v:?}");
            moved.push_taken(&mut column, g);
            assert_eq!(&moved.get(g), v);
            assert_eq!(moved.scalar(g), want, "{v:?} moved");
        }
        // Taken values are left unset; scalars read as before.
        assert_eq!(column.get(values.len() - 1), Value::Null);
        assert_eq!(column.get(3), Value::Count(u64::MAX));
        assert_eq!(moved.take(14), values[14]);
        assert_eq!(moved.get(14), Value::Null);
        assert_eq!(column.get(values.len()), Value::Null, "past the end");
    }
}
