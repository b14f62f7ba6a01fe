//! The aggregation functions of `summarize` and their accumulators.
//!
//! | function | result | result type |
//! | --- | --- | --- |
//! | `count()` | events of the group | `count` |
//! | `count(F)` | events whose `F` is set | `count` |
//! | `count_distinct(F)` | distinct set values of `F` | `count` |
//! | `distinct(F)` | the distinct set values of `F`, in value order | `set[T]` |
//! | `sum(F)` | the sum of the set values of `F` | `count`, `int`, `double` or `interval` |
//! | `min(F)`, `max(F)` | the least and greatest set value ([`super::order`]) | `F`'s type |
//! | `mean(F)` | the mean of the set values | `double` (`interval` of intervals, `time` of times) |
//!
//! A field of a container type contributes each element to `distinct`, `count_distinct`,
//! `sum`, `min`, `max` and `mean`. Numbers of different types across schemas widen: `count`
//! and `port` to `int` if an `int` comes, and to `double` if a `double` comes. A group with
//! no set value has an unset `sum`, `min`, `max` and `mean`. Memory: a fixed size per group
//! and function, plus the distinct values for `distinct` and `count_distinct`.

use std::collections::{HashMap, HashSet};

/// A hash map of groups or distinct values (see `ahash` in Cargo.toml).
pub(crate) type Map<K, V> = HashMap<K, V, ahash::RandomState>;
/// The hasher of group keys: one state for the search's workers and the `summarize` that
/// merges their groups, so that a group's hash is computed once, where it is made.
pub(crate) type KeyHasher = ahash::RandomState;
/// A hash set of distinct values.
pub(crate) type Set<K> = HashSet<K, ahash::RandomState>;

use super::order::compare;
use super::syntax::AggFunc;
use crate::query::memory::{alloc_bytes, table_bytes, value_heap};
use crate::types::Type;
use crate::value::{RowEncoder, Value, ValueRef};

/// The type of numbers that `a` and `b` both fit, for values of both in one column.
pub fn unify(a: &Type, b: &Type) -> Type {
    let rank = |t: &Type| match t {
        Type::Count | Type::Port => Some(0),
        Type::Int => Some(1),
        Type::Double => Some(2),
        _ => None,
    };
    match (rank(a), rank(b)) {
        (Some(x), Some(y)) if x != y => match x.max(y) {
            1 => Type::Int,
            _ => Type::Double,
        },
        _ => a.clone(),
    }
}

/// `v` as a value of type `ty` (numbers converted to a wider type; others unchanged).
pub fn coerce(v: Value, ty: &Type) -> Value {
    match (v, ty) {
        (Value::Count(x) | Value::Port(x), Type::Int) => {
            Value::Int(i64::try_from(x).unwrap_or(i64::MAX))
        }
        (Value::Count(x) | Value::Port(x), Type::Double) => Value::Double(x as f64),
        (Value::Int(x), Type::Double) => Value::Double(x as f64),
        (Value::List(l), Type::Set(inner) | Type::Vector(inner) | Type::Table(inner)) => {
            Value::List(l.into_iter().map(|e| coerce(e, inner)).collect())
        }
        (v, _) => v,
    }
}

/// A `by` value as it groups: a time rounded down to a multiple of `resolution` nanoseconds
/// (when given), any other value as it is.
pub fn bucket(v: ValueRef<'_>, resolution: Option<i64>) -> ValueRef<'_> {
    match (v, resolution) {
        (ValueRef::Time(t), Some(r)) => ValueRef::Time(t.div_euclid(r) * r),
        (v, _) => v,
    }
}

/// Appends the canonical encoding of `v` to `key`: values equal for grouping encode alike
/// (a `port` and a `count` of one number, a non-negative `int` too).
pub fn push_key(key: &mut Vec<u8>, v: &ValueRef<'_>) {
    let mut e = RowEncoder::new(key);
    match v {
        ValueRef::Null => e.null(),
        ValueRef::Bool(b) => e.bool(*b),
        ValueRef::Count(x) | ValueRef::Port(x) => e.uint(*x),
        ValueRef::Int(x) if *x >= 0 => e.uint(*x as u64),
        ValueRef::Int(x) | ValueRef::Time(x) | ValueRef::Interval(x) => e.int(*x),
        ValueRef::Double(x) => e.double(*x),
        ValueRef::String(s) => e.bytes(s),
        ValueRef::Addr(a) => e.addr(*a),
        ValueRef::Subnet(a, p) => e.subnet(*a, *p),
        ValueRef::List(l) => {
            e.array(l.len() as u32);
            for x in l {
                push_key(key, x);
            }
        }
    }
}

/// A sum of numbers of any type, exact for integers.
#[derive(Debug, Clone, Default)]
pub struct Sum {
    /// The integers' sum, an i128 as its low and high halves: an `i128` field would align
    /// the accumulator to 16 bytes.
    pub(super) lo: u64,
    pub(super) hi: i64,
    /// The doubles' sum.
    pub(super) float: f64,
    /// Whether a double was added.
    pub(super) floats: bool,
    /// Whether any value was added.
    pub(super) set: bool,
}

impl Sum {
    /// The integers' sum.
    fn int(&self) -> i128 {
        (i128::from(self.hi) << 64) | i128::from(self.lo)
    }

    fn add_int(&mut self, x: i128) {
        let v = self.int().wrapping_add(x);
        self.lo = v as u64;
        self.hi = (v >> 64) as i64;
    }

    /// Adds a number (with `times`, a time too, as its nanoseconds: `mean` takes them,
    /// `sum` does not); whether `v` was added.
    fn add(&mut self, v: &ValueRef<'_>, times: bool) -> bool {
        match *v {
            ValueRef::Count(x) | ValueRef::Port(x) => self.add_int(i128::from(x)),
            ValueRef::Int(x) | ValueRef::Interval(x) => self.add_int(i128::from(x)),
            ValueRef::Time(x) if times => self.add_int(i128::from(x)),
            ValueRef::Double(x) => {
                self.float += x;
                self.floats = true;
            }
            _ => return false,
        }
        self.set = true;
        true
    }

    pub(super) fn merge(&mut self, other: &Sum) {
        self.add_int(other.int());
        self.float += other.float;
        self.floats |= other.floats;
        self.set |= other.set;
    }
}

/// The state of one aggregation in one group.
#[derive(Debug, Clone)]
pub enum Acc {
    Count(u64),
    /// (Boxed, as `Distinct`: a set is 64 bytes, and every group has an accumulator of the
    /// size of the largest.) Beside it, the heap bytes of its keys ([`Acc::heap`]).
    CountDistinct(Box<Set<Vec<u8>>>, usize),
    /// The distinct values by their keys, and the heap bytes of both ([`Acc::heap`]).
    Distinct(Box<Map<Vec<u8>, Value>>, usize),
    Sum(Sum),
    Min(Option<Value>),
    Max(Option<Value>),
    /// The sum (exact for integers, whatever the order of adding) and how many values.
    Mean {
        sum: Sum,
        n: u64,
    },
}

impl Acc {
    /// A fresh accumulator of `f`.
    pub fn new(f: AggFunc) -> Acc {
        match f {
            AggFunc::Count => Acc::Count(0),
            AggFunc::CountDistinct => Acc::CountDistinct(Box::default(), 0),
            AggFunc::Distinct => Acc::Distinct(Box::default(), 0),
            AggFunc::Sum => Acc::Sum(Sum::default()),
            AggFunc::Min => Acc::Min(None),
            AggFunc::Max => Acc::Max(None),
            AggFunc::Mean => Acc::Mean {
                sum: Sum::default(),
                n: 0,
            },
        }
    }

    /// The heap bytes it holds: the table and keys of a set (a distinct value's key and
    /// value), the value of `min` and `max`.
    pub fn heap(&self) -> usize {
        match self {
            Acc::CountDistinct(set, heap) => {
                alloc_bytes(std::mem::size_of::<Set<Vec<u8>>>())
                    + table_bytes(set.capacity(), std::mem::size_of::<Vec<u8>>())
                    + heap
            }
            Acc::Distinct(map, heap) => {
                alloc_bytes(std::mem::size_of::<Map<Vec<u8>, Value>>())
                    + table_bytes(map.capacity(), std::mem::size_of::<(Vec<u8>, Value)>())
                    + heap
            }
            Acc::Min(Some(v)) | Acc::Max(Some(v)) => value_heap(v),
            _ => 0,
        }
    }

    /// Adds an event without the field (or `count()`'s event): only `count()` counts it.
    pub fn add_event(&mut self) {
        if let Acc::Count(n) = self {
            *n += 1;
        }
    }

    /// Adds `n` events at once, as [`Acc::add_event`] `n` times.
    pub fn add_events(&mut self, n: u64) {
        if let Acc::Count(c) = self {
            *c += n;
        }
    }

    /// Adds `n` set values of an integer type `ty` (not unset ones) whose sum is `sum`, as
    /// [`Acc::add`] of each would, for `count(F)`, `sum` and `mean` (others add nothing:
    /// they take values one at a time).
    pub fn add_integers(&mut self, ty: &Type, sum: i128, n: u64) {
        match self {
            Acc::Count(c) => *c += n,
            // `sum` of times adds nothing (`Sum::add`); `mean` of times does.
            Acc::Sum(_) if matches!(ty, Type::Time) => {}
            Acc::Sum(s) => {
                s.add_int(sum);
                s.set |= n > 0;
            }
            Acc::Mean { sum: s, n: m } => {
                s.add_int(sum);
                s.set |= n > 0;
                *m += n;
            }
            _ => {}
        }
    }

    /// Adds the value of the field of one event (`count(F)` counts it if set).
    pub fn add(&mut self, v: &ValueRef<'_>, scratch: &mut Vec<u8>) {
        if let ValueRef::Null = v {
            return;
        }
        if let Acc::Count(n) = self {
            *n += 1;
            return;
        }
        if let ValueRef::List(items) = v {
            for x in items {
                self.add_one(x, scratch);
            }
            return;
        }
        self.add_one(v, scratch);
    }

    fn add_one(&mut self, v: &ValueRef<'_>, scratch: &mut Vec<u8>) {
        if let ValueRef::Null = v {
            return;
        }
        match self {
            Acc::Count(n) => *n += 1,
            Acc::CountDistinct(set, heap) => {
                scratch.clear();
                push_key(scratch, v);
                if !set.contains(scratch.as_slice()) {
                    let key = scratch.clone();
                    *heap += alloc_bytes(key.capacity());
                    set.insert(key);
                }
            }
            Acc::Distinct(map, heap) => {
                scratch.clear();
                push_key(scratch, v);
                if !map.contains_key(scratch.as_slice()) {
                    let (key, value) = (scratch.clone(), v.to_owned());
                    *heap += alloc_bytes(key.capacity()) + value_heap(&value);
                    map.insert(key, value);
                }
            }
            Acc::Sum(s) => {
                s.add(v, false);
            }
            Acc::Min(m) => {
                if m.as_ref().is_none_or(|m| compare(v, m).is_lt()) {
                    *m = Some(v.to_owned());
                }
            }
            Acc::Max(m) => {
                if m.as_ref().is_none_or(|m| compare(v, m).is_gt()) {
                    *m = Some(v.to_owned());
                }
            }
            Acc::Mean { sum, n } => {
                if sum.add(v, true) {
                    *n += 1;
                }
            }
        }
    }

    /// Takes in `other`, an accumulator of the same function over later events (the
    /// events of a later batch): the result is the one of adding all their values here.
    pub fn merge(&mut self, other: Acc) {
        match (self, other) {
            (Acc::Count(a), Acc::Count(b)) => *a += b,
            (Acc::CountDistinct(a, heap), Acc::CountDistinct(b, _)) => {
                for k in *b {
                    let bytes = alloc_bytes(k.capacity());
                    if a.insert(k) {
                        *heap += bytes;
                    }
                }
            }
            (Acc::Distinct(a, heap), Acc::Distinct(b, _)) => {
                for (k, v) in *b {
                    if let std::collections::hash_map::Entry::Vacant(e) = a.entry(k) {
                        *heap += alloc_bytes(e.key().capacity()) + value_heap(&v);
                        e.insert(v);
                    }
                }
            }
            (Acc::Sum(a), Acc::Sum(b)) => a.merge(&b),
            (Acc::Min(a), Acc::Min(Some(b)))
                if a.as_ref().is_none_or(|a| compare(&b, a).is_lt()) =>
            {
                *a = Some(b);
            }
            (Acc::Max(a), Acc::Max(Some(b)))
                if a.as_ref().is_none_or(|a| compare(&b, a).is_gt()) =>
            {
                *a = Some(b);
            }
            (Acc::Mean { sum, n }, Acc::Mean { sum: s, n: m }) => {
                sum.merge(&s);
                *n += m;
            }
            // Different functions never meet (one plan makes both); a min or max that is
            // not less (greater) adds nothing.
            _ => {}
        }
    }

    /// The result, of type `ty` ([`result_type`]).
    pub fn finish(&self, ty: &Type) -> Value {
        match self {
            Acc::Count(n) => Value::Count(*n),
            Acc::CountDistinct(s, _) => Value::Count(s.len() as u64),
            Acc::Distinct(m, _) => {
                let mut v: Vec<Value> = m.values().cloned().collect();
                v.sort_by(compare);
                let inner = match ty {
                    Type::Set(t) => t.as_ref().clone(),
                    t => t.clone(),
                };
                Value::List(v.into_iter().map(|x| coerce(x, &inner)).collect())
            }
            Acc::Sum(s) if !s.set => Value::Null,
            Acc::Sum(s) => match ty {
                Type::Double => Value::Double(s.float + s.int() as f64),
                Type::Interval => Value::Interval(clamp_i64(s.int())),
                Type::Int => Value::Int(clamp_i64(s.int())),
                _ if s.int() < 0 => Value::Int(clamp_i64(s.int())),
                _ => Value::Count(u64::try_from(s.int()).unwrap_or(u64::MAX)),
            },
            Acc::Min(m) | Acc::Max(m) => m.clone().map_or(Value::Null, |v| coerce(v, ty)),
            Acc::Mean { n: 0, .. } => Value::Null,
            Acc::Mean { sum, n } if !sum.floats && matches!(ty, Type::Interval | Type::Time) => {
                // Exact: nanoseconds since 1970 are past f64's 53 bits.
                let n = i128::from(*n);
                let m = clamp_i64((2 * sum.int() + n).div_euclid(2 * n));
                match ty {
                    Type::Interval => Value::Interval(m),
                    _ => Value::Time(m),
                }
            }
            Acc::Mean { sum, n } => {
                let m = (sum.float + sum.int() as f64) / *n as f64;
                match ty {
                    Type::Interval => Value::Interval(m.round() as i64),
                    Type::Time => Value::Time(m.round() as i64),
                    _ => Value::Double(m),
                }
            }
        }
    }
}

fn clamp_i64(x: i128) -> i64 {
    i64::try_from(x).unwrap_or(if x < 0 { i64::MIN } else { i64::MAX })
}

/// The result type of `f` over a field of type `field` (`None`: no schema had the field).
pub fn result_type(f: AggFunc, field: Option<&Type>) -> Type {
    let scalar = field.map(|t| match t {
        Type::Set(i) | Type::Vector(i) | Type::Table(i) => i.as_ref().clone(),
        t => t.clone(),
    });
    match f {
        AggFunc::Count | AggFunc::CountDistinct => Type::Count,
        AggFunc::Distinct => Type::Set(Box::new(scalar.unwrap_or(Type::String))),
        AggFunc::Sum => match scalar {
            Some(Type::Double) => Type::Double,
            Some(Type::Int) => Type::Int,
            Some(Type::Interval) => Type::Interval,
            _ => Type::Count,
        },
        AggFunc::Min | AggFunc::Max => scalar.unwrap_or(Type::String),
        AggFunc::Mean => match scalar {
            Some(Type::Interval) => Type::Interval,
            Some(Type::Time) => Type::Time,
            _ => Type::Double,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every group holds one accumulator per aggregation: its size is the groups' memory.
    #[test]
    fn an_accumulator_takes_at_most_40_bytes() {
        assert!(size_of::<Acc>() <= 40, "{}", size_of::<Acc>());
    }

    #[test]
    fn integers_added_at_once_give_what_adding_each_gives() {
        let numbers: [i64; 5] = [5, -3, 1 << 40, 0, 7];
        for ty in [
            Type::Count,
            Type::Port,
            Type::Int,
            Type::Time,
            Type::Interval,
        ] {
            for f in [AggFunc::Count, AggFunc::Sum, AggFunc::Mean] {
                let value = |x: i64| match ty {
                    Type::Count => ValueRef::Count(x.unsigned_abs()),
                    Type::Port => ValueRef::Port(x.unsigned_abs()),
                    Type::Int => ValueRef::Int(x),
                    Type::Time => ValueRef::Time(x),
                    _ => ValueRef::Interval(x),
                };
                let (mut each, mut once, mut none) = (Acc::new(f), Acc::new(f), Acc::new(f));
                let mut total = 0i128;
                for &x in &numbers {
                    each.add(&value(x), &mut Vec::new());
                    total += match value(x) {
                        ValueRef::Count(u) | ValueRef::Port(u) => i128::from(u),
                        _ => i128::from(x),
                    };
                }
                once.add_integers(&ty, total, numbers.len() as u64);
                none.add_integers(&ty, 0, 0);
                let result = result_type(f, Some(&ty));
                assert_eq!(once.finish(&result), each.finish(&result), "{f:?} of {ty}");
                assert_eq!(
                    none.finish(&result),
                    Acc::new(f).finish(&result),
                    "{f:?} of no {ty}"
                );
            }
        }
    }

    #[test]
    fn keys_of_equal_numbers_are_equal() {
        let k = |v: ValueRef<'_>| {
            let mut b = Vec::new();
            push_key(&mut b, &v);
            b
        };
        assert_eq!(k(ValueRef::Port(443)), k(ValueRef::Count(443)));
        assert_eq!(k(ValueRef::Int(70000)), k(ValueRef::Count(70000)));
        assert_ne!(k(ValueRef::Int(-1)), k(ValueRef::Count(1)));
    }

    #[test]
    fn sums_and_means_widen() {
        let mut s = Vec::new();
        let mut a = Acc::new(AggFunc::Sum);
        a.add(&ValueRef::Count(u64::MAX), &mut s);
        a.add(&ValueRef::Int(-5), &mut s);
        assert_eq!(a.finish(&Type::Count), Value::Count(u64::MAX - 5));
        let mut m = Acc::new(AggFunc::Mean);
        assert_eq!(m.finish(&Type::Double), Value::Null);
        m.add(&ValueRef::Count(1), &mut s);
        m.add(&ValueRef::Double(2.0), &mut s);
        assert_eq!(m.finish(&Type::Double), Value::Double(1.5));
        let mut d = Acc::new(AggFunc::Distinct);
        for x in [3u64, 1, 3, 2] {
            d.add(&ValueRef::Count(x), &mut s);
        }
        assert_eq!(
            d.finish(&Type::Set(Box::new(Type::Count))),
            Value::List(vec![Value::Count(1), Value::Count(2), Value::Count(3)])
        );
    }

    /// Accumulators of parts of the events, merged in order, give what one accumulator of
    /// all of them gives (the workers aggregate batch by batch, `partial.rs`).
    #[test]
    fn merged_parts_equal_the_whole() {
        let values = [
            ValueRef::Count(7),
            ValueRef::Null,
            ValueRef::Int(-3),
            ValueRef::Count(7),
            ValueRef::Double(0.5),
            ValueRef::Count(u64::MAX),
            ValueRef::Int(12),
        ];
        let funcs = [
            (AggFunc::Count, Type::Count),
            (AggFunc::CountDistinct, Type::Count),
            (AggFunc::Distinct, Type::Set(Box::new(Type::Double))),
            (AggFunc::Sum, Type::Double),
            (AggFunc::Min, Type::Double),
            (AggFunc::Max, Type::Double),
            (AggFunc::Mean, Type::Double),
        ];
        let mut s = Vec::new();
        for (f, ty) in funcs {
            let mut whole = Acc::new(f);
            for v in &values {
                whole.add(v, &mut s);
            }
            for cut in 0..=values.len() {
                let (a, b) = values.split_at(cut);
                let mut first = Acc::new(f);
                let mut second = Acc::new(f);
                a.iter().for_each(|v| first.add(v, &mut s));
                b.iter().for_each(|v| second.add(v, &mut s));
                first.merge(second);
                assert_eq!(first.finish(&ty), whole.finish(&ty), "{f:?} cut at {cut}");
            }
        }
        // A mean of times (nanoseconds since 1970) is exact whatever the order.
        let mut m = Acc::new(AggFunc::Mean);
        m.add(&ValueRef::Time(1_700_000_000_000_000_001), &mut s);
        let mut n = Acc::new(AggFunc::Mean);
        n.add(&ValueRef::Time(1_700_000_000_000_000_003), &mut s);
        m.merge(n);
        assert_eq!(
            m.finish(&Type::Time),
            Value::Time(1_700_000_000_000_000_002)
        );
    }
}
