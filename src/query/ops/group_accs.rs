//! The accumulators of one aggregation of a table's groups (`groups.rs`), compact.
//!
//! An [`Acc`] takes 40 bytes (the size of its largest kind); with millions of groups, the
//! accumulators were most of a `summarize`'s memory. The two aggregations of numbers that
//! need the least are kept in their own columns:
//! - `count()` and `count(F)`: the count, 8 bytes a group;
//! - `sum(F)`: a byte of flags (set, doubles added) and the integers' sum as 64 bits,
//!   9 bytes a group; the sum's high 64 bits and the doubles' sum get a column of their own
//!   when the first group needs one (a sum past `i64`, a double added), filled for the
//!   groups before.
//!
//! The others are [`Acc`]s. Every change to an accumulator goes through [`Acc`]'s methods
//! ([`AccColumn::update`] loads it, applies the change and stores it back), so an
//! aggregation means the same whichever column keeps it.

use super::aggregate::{Acc, Sum};
use super::per_group::PerGroup;
use super::syntax::AggFunc;
use crate::types::Type;
use crate::value::Value;

/// A [`Sum`]'s flags: any value added.
const SET: u8 = 1;
/// A [`Sum`]'s flags: a double added.
const FLOATS: u8 = 2;

/// The high half of an `i128` whose low half is `lo` read as an `i64`.
fn sign_of(lo: u64) -> i64 {
    (lo as i64) >> 63
}

/// A group's flags and low 64 bits of its sum, 9 bytes (one cache line for both).
#[derive(Debug, Clone, Copy)]
#[repr(C, packed)]
struct Low {
    lo: u64,
    flags: u8,
}

/// The sums of `sum(F)` (see the [module docs](self)).
#[derive(Debug, Clone, Default)]
pub(super) struct Sums {
    low: PerGroup<Low>,
    /// Once a sum is past `i64`: every sum's high half.
    hi: Option<PerGroup<i64>>,
    /// Once a double is added: every sum of doubles.
    float: Option<PerGroup<f64>>,
}

impl Sums {
    #[inline]
    fn load(&self, g: usize) -> Sum {
        let Low { lo, flags } = self.low.get(g).copied().unwrap_or(Low { lo: 0, flags: 0 });
        Sum {
            lo,
            hi: match &self.hi {
                Some(hi) => hi.get(g).copied().unwrap_or(0),
                None => sign_of(lo),
            },
            float: self
                .float
                .as_ref()
                .and_then(|f| f.get(g).copied())
                .unwrap_or(0.0),
            floats: flags & FLOATS != 0,
            set: flags & SET != 0,
        }
    }

    #[inline]
    fn store(&mut self, g: usize, s: &Sum) {
        let Some(low) = self.low.get_mut(g) else {
            return;
        };
        *low = Low {
            lo: s.lo,
            flags: (u8::from(s.set) * SET) | (u8::from(s.floats) * FLOATS),
        };
        let (wide, float) = (s.hi != sign_of(s.lo), s.float.to_bits() != 0);
        if (wide || self.hi.is_some()) || (float || self.float.is_some()) {
            self.store_rest(g, s, wide, float);
        }
    }

    /// The high half and the doubles of [`Sums::store`], in columns made when first needed.
    #[cold]
    fn store_rest(&mut self, g: usize, s: &Sum, wide: bool, float: bool) {
        if wide && self.hi.is_none() {
            let low = &self.low;
            self.hi = Some(PerGroup::from_fn(low.len(), |g| {
                sign_of(low.get(g).map_or(0, |l| l.lo))
            }));
        }
        if let Some(hi) = self.hi.as_mut().and_then(|h| h.get_mut(g)) {
            *hi = s.hi;
        }
        if float && self.float.is_none() {
            self.float = Some(PerGroup::from_fn(self.low.len(), |_| 0.0));
        }
        if let Some(f) = self.float.as_mut().and_then(|f| f.get_mut(g)) {
            *f = s.float;
        }
    }

    fn push(&mut self, s: &Sum) {
        self.low.push(Low { lo: 0, flags: 0 });
        if let Some(hi) = &mut self.hi {
            hi.push(0);
        }
        if let Some(f) = &mut self.float {
            f.push(0.0);
        }
        self.store(self.low.len() - 1, s);
    }
}

/// See the [module docs](self).
#[derive(Debug, Clone)]
pub(super) enum AccColumn {
    Count(PerGroup<u64>),
    Sum(Sums),
    /// Any other function's accumulators, and the heap bytes they hold ([`Acc::heap`]).
    Any(AggFunc, PerGroup<Acc>, usize),
}

impl AccColumn {
    /// No groups' accumulators of `f`.
    pub(super) fn new(f: AggFunc) -> AccColumn {
        match f {
            AggFunc::Count => AccColumn::Count(PerGroup::default()),
            AggFunc::Sum => AccColumn::Sum(Sums::default()),
            f => AccColumn::Any(f, PerGroup::default(), 0),
        }
    }

    /// Appends a fresh accumulator for the next group.
    pub(super) fn push_new(&mut self) {
        match self {
            AccColumn::Count(c) => c.push(0),
            AccColumn::Sum(s) => s.push(&Sum::default()),
            AccColumn::Any(f, c, heap) => {
                let a = Acc::new(*f);
                *heap += a.heap();
                c.push(a);
            }
        }
    }

    /// Appends group `g` of `from` (a column of the same function) for the next group,
    /// leaving a fresh one there.
    pub(super) fn push_taken(&mut self, from: &mut AccColumn, g: usize) {
        match (self, from) {
            (AccColumn::Count(c), AccColumn::Count(o)) => {
                c.push(o.get_mut(g).map_or(0, std::mem::take));
            }
            (AccColumn::Sum(s), AccColumn::Sum(o)) => {
                s.push(&o.load(g));
                o.store(g, &Sum::default());
            }
            (AccColumn::Any(f, c, heap), AccColumn::Any(_, o, o_heap)) => {
                let a = take_acc(*f, o, o_heap, g);
                *heap += a.heap();
                c.push(a);
            }
            // Columns of different functions never meet (one plan makes both).
            (this, _) => this.push_new(),
        }
    }

    /// Takes in group `g` of `from` (a column of the same function, over later events) into
    /// group `into` here ([`Acc::merge`]), leaving a fresh one there.
    pub(super) fn merge_taken(&mut self, into: usize, from: &mut AccColumn, g: usize) {
        if let (AccColumn::Sum(s), AccColumn::Sum(o)) = (&mut *self, &mut *from) {
            // (Not through an `Acc`: the most common merge of all.)
            let mut sum = s.load(into);
            sum.merge(&o.load(g));
            o.store(g, &Sum::default());
            s.store(into, &sum);
            return;
        }
        let taken = match from {
            AccColumn::Count(o) => Acc::Count(o.get_mut(g).map_or(0, std::mem::take)),
            AccColumn::Sum(o) => {
                let s = o.load(g);
                o.store(g, &Sum::default());
                Acc::Sum(s)
            }
            AccColumn::Any(f, o, o_heap) => take_acc(*f, o, o_heap, g),
        };
        self.update(into, |a| a.merge(taken));
    }

    /// Applies `change` to group `g`'s accumulator.
    #[inline]
    pub(super) fn update(&mut self, g: usize, change: impl FnOnce(&mut Acc)) {
        match self {
            AccColumn::Count(c) => {
                if let Some(n) = c.get_mut(g) {
                    let mut a = Acc::Count(*n);
                    change(&mut a);
                    if let Acc::Count(m) = a {
                        *n = m;
                    }
                }
            }
            AccColumn::Sum(s) => {
                let mut a = Acc::Sum(s.load(g));
                change(&mut a);
                if let Acc::Sum(x) = &a {
                    s.store(g, x);
                }
            }
            AccColumn::Any(_, c, heap) => {
                if let Some(a) = c.get_mut(g) {
                    let before = a.heap();
                    change(a);
                    *heap = (*heap + a.heap()).saturating_sub(before);
                }
            }
        }
    }

    /// The heap bytes it holds: the columns, and what the accumulators hold.
    pub(super) fn heap(&self) -> usize {
        match self {
            AccColumn::Count(c) => c.heap(),
            AccColumn::Sum(s) => {
                s.low.heap()
                    + s.hi.as_ref().map_or(0, PerGroup::heap)
                    + s.float.as_ref().map_or(0, PerGroup::heap)
            }
            AccColumn::Any(_, c, heap) => c.heap() + heap,
        }
    }

    /// Group `g`'s result, of type `ty` ([`Acc::finish`]).
    pub(super) fn finish(&self, g: usize, ty: &Type) -> Value {
        match self {
            AccColumn::Count(c) => Acc::Count(c.get(g).copied().unwrap_or(0)).finish(ty),
            AccColumn::Sum(s) => Acc::Sum(s.load(g)).finish(ty),
            AccColumn::Any(f, c, _) => match c.get(g) {
                Some(a) => a.finish(ty),
                None => Acc::new(*f).finish(ty),
            },
        }
    }
}

/// Group `g`'s accumulator of `column` (of `f`, holding `heap` bytes), taken: a fresh one
/// is left there.
fn take_acc(f: AggFunc, column: &mut PerGroup<Acc>, heap: &mut usize, g: usize) -> Acc {
    let fresh = Acc::new(f);
    *heap += fresh.heap();
    let taken = match column.get_mut(g) {
        Some(a) => std::mem::replace(a, fresh),
        None => fresh,
    };
    *heap = heap.saturating_sub(taken.heap());
    taken
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::ValueRef;

    /// Every function's column gives what an [`Acc`] of the same values gives: values added,
    /// events counted, integers added at once, groups moved and merged; sums past `i64`
    /// and doubles arriving after other groups' sums.
    #[test]
    fn columns_give_what_accumulators_give() {
        let values = [
            ValueRef::Count(7),
            ValueRef::Null,
            ValueRef::Int(-3),
            ValueRef::Count(u64::MAX),
            ValueRef::Count(u64::MAX),
            ValueRef::Double(0.5),
            ValueRef::Int(12),
            ValueRef::Interval(-5),
        ];
        let funcs = [
            AggFunc::Count,
            AggFunc::CountDistinct,
            AggFunc::Distinct,
            AggFunc::Sum,
            AggFunc::Min,
            AggFunc::Max,
            AggFunc::Mean,
        ];
        let types = [Type::Count, Type::Int, Type::Double, Type::Interval];
        let mut s = Vec::new();
        for f in funcs {
            // Group g takes the first g values, then an event and integers at once.
            let groups = values.len() + 1;
            let mut column = AccColumn::new(f);
            let mut accs: Vec<Acc> = Vec::new();
            for _ in 0..groups {
                column.push_new();
                accs.push(Acc::new(f));
            }
            for g in 0..groups {
                for v in &values[..g] {
                    column.update(g, |a| a.add(v, &mut s));
                    accs[g].add(v, &mut s);
                }
                column.update(g, Acc::add_event);
                accs[g].add_event();
                column.update(g, |a| a.add_integers(&Type::Int, i128::from(g as u64), 2));
                accs[g].add_integers(&Type::Int, i128::from(g as u64), 2);
            }
            // Moved to another column, then merged into each other.
            let mut moved = AccColumn::new(f);
            for g in 0..groups {
                moved.push_taken(&mut column, g);
                assert_eq!(
                    column.finish(g, &Type::Int),
                    Acc::new(f).finish(&Type::Int),
                    "{f:?} left fresh"
                );
            }
            for g in 1..groups {
                moved.merge_taken(0, &mut moved.clone(), g);
                let taken = std::mem::replace(&mut accs[g], Acc::new(f));
                accs[0].merge(taken.clone());
                accs[g] = taken;
            }
            for ty in &types {
                for (g, acc) in accs.iter().enumerate() {
                    assert_eq!(
                        moved.finish(g, ty),
                        acc.finish(ty),
                        "{f:?} group {g} as {ty}"
                    );
                }
            }
        }
    }
}
