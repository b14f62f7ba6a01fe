//! The groups of an aggregation, flat: what a `summarize` holds (`exec/summarize.rs`) and what
//! the search's workers hand it per batch (`partial.rs`).
//!
//! Group `g`'s `by` values are `values[g * by..][..by]` and its accumulators
//! `accs[g * aggs..][..aggs]`, in the order of the groups' first events: no allocation per
//! group, and merging a group touches its accumulators and its index entry alone. A group is
//! found by one of two indexes:
//! - a single `by` value that is a number, time, address, bool or unset, by its kind and bits
//!   ([`scalar_key`]), compared in the index itself, with no key built;
//! - any other, by the bytes of its values' key ([`push_key`]), kept in one buffer, and
//!   their hash.
//!
//! Which index a group is in depends on its values alone, so every table finds the same group
//! for the same values, however they came in (a row, a batch's partial groups).

use hashbrown::HashTable;

use super::aggregate::{push_key, Acc, KeyHasher};
use super::syntax::AggFunc;
use crate::value::{Value, ValueRef};

/// A single `by` value that is a number, time, address, bool or unset, as its kind and bits:
/// a group is looked up by these without building its key. Values of different kinds or bits
/// get different scalar keys.
fn scalar_key(values: &[ValueRef<'_>]) -> Option<(u8, u128)> {
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
        ValueRef::Addr(std::net::IpAddr::V6(a)) => (8, u128::from(*a)),
        _ => return None,
    })
}

/// An entry of the scalar index: the bits, the group, the kind.
type ScalarEntry = (u128, u32, u8);

/// See the [module docs](self).
#[derive(Debug, Clone)]
pub(crate) struct GroupTable {
    /// `by` values per group.
    by: usize,
    funcs: Vec<AggFunc>,
    hasher: KeyHasher,
    values: Vec<Value>,
    accs: Vec<Acc>,
    /// Groups of a single scalar `by` value.
    scalars: HashTable<ScalarEntry>,
    /// Other groups: their key's hash and the group.
    index: HashTable<(u64, u32)>,
    /// The keys of the groups in `index`, one after the other; `key_ends[g]` is where group
    /// `g`'s ends (a group of the scalar index adds nothing).
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    /// Scratch for a key being looked up.
    key: Vec<u8>,
}

impl GroupTable {
    /// No groups yet, of `by` values each and accumulators of `funcs`; keys hashed by
    /// `hasher`.
    pub(crate) fn new(by: usize, funcs: Vec<AggFunc>, hasher: KeyHasher) -> GroupTable {
        GroupTable {
            by,
            funcs,
            hasher,
            values: Vec::new(),
            accs: Vec::new(),
            scalars: HashTable::new(),
            index: HashTable::new(),
            keys: Vec::new(),
            key_ends: Vec::new(),
            key: Vec::new(),
        }
    }

    /// How many groups there are.
    pub(crate) fn len(&self) -> usize {
        self.key_ends.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.key_ends.is_empty()
    }

    /// Group `g`'s accumulators.
    pub(crate) fn accs_mut(&mut self, g: usize) -> &mut [Acc] {
        let n = self.funcs.len();
        &mut self.accs[g * n..(g + 1) * n]
    }

    /// The group of `values` (one per `by` field), made with fresh accumulators when there
    /// is none, if fewer than `max` groups are there (`None` otherwise).
    pub(crate) fn group(&mut self, values: &[ValueRef<'_>], max: usize) -> Option<usize> {
        match self.find(values) {
            Ok(g) => Some(g),
            Err(slot) => {
                if self.len() >= max {
                    return None;
                }
                let g = self.len();
                self.values.extend(values.iter().map(ValueRef::to_owned));
                self.accs.extend(self.funcs.iter().map(|&f| Acc::new(f)));
                self.insert(slot, g);
                Some(g)
            }
        }
    }

    /// The group of `values`, or where to index a new one (the key is left in `self.key`).
    fn find(&mut self, values: &[ValueRef<'_>]) -> Result<usize, Slot> {
        if let Some((kind, bits)) = scalar_key(values) {
            let hash = self.hasher.hash_one((kind, bits));
            return match self.scalars.find(hash, |&(b, _, k)| b == bits && k == kind) {
                Some(&(_, g, _)) => Ok(g as usize),
                None => Err(Slot::Scalar(hash, kind, bits)),
            };
        }
        self.key.clear();
        for v in values {
            push_key(&mut self.key, v);
        }
        let hash = self.hasher.hash_one(self.key.as_slice());
        let (keys, ends, key) = (&self.keys, &self.key_ends, &self.key);
        match self.index.find(hash, |&(h, g)| {
            h == hash && {
                let g = g as usize;
                let start = if g == 0 { 0 } else { ends[g - 1] };
                keys[start..ends[g]] == key[..]
            }
        }) {
            Some(&(_, g)) => Ok(g as usize),
            None => Err(Slot::Hashed(hash)),
        }
    }

    /// Indexes new group `g` (its values and accumulators already pushed).
    fn insert(&mut self, slot: Slot, g: usize) {
        let hasher = &self.hasher;
        match slot {
            Slot::Scalar(hash, kind, bits) => {
                self.scalars
                    .insert_unique(hash, (bits, g as u32, kind), |&(b, _, k)| {
                        hasher.hash_one((k, b))
                    });
            }
            Slot::Hashed(hash) => {
                self.keys.extend_from_slice(&self.key);
                self.index
                    .insert_unique(hash, (hash, g as u32), |&(h, _)| h);
            }
        }
        self.key_ends.push(self.keys.len());
    }

    /// Adds `other`'s groups (of the same `by` fields and aggregations): a group already
    /// here takes the other's accumulators ([`Acc::merge`]); a new one comes after the
    /// others, in `other`'s order. `Err(())` when more than `max` groups would be here.
    pub(crate) fn merge(&mut self, other: GroupTable, max: usize) -> Result<(), ()> {
        let (by, n) = (self.by, self.funcs.len());
        let mut values = other.values.into_iter();
        let mut accs = other.accs.into_iter();
        let mut group: Vec<Value> = Vec::with_capacity(by);
        for _ in 0..other.key_ends.len() {
            group.clear();
            group.extend(values.by_ref().take(by));
            let found = match group.as_slice() {
                [] => self.find(&[]),
                [v] => self.find(&[v.borrowed()]),
                many => {
                    let refs: Vec<ValueRef<'_>> = many.iter().map(Value::borrowed).collect();
                    self.find(&refs)
                }
            };
            match found {
                Ok(g) => {
                    for (acc, o) in self.accs[g * n..(g + 1) * n].iter_mut().zip(accs.by_ref()) {
                        acc.merge(o);
                    }
                }
                Err(slot) => {
                    if self.len() >= max {
                        return Err(());
                    }
                    let g = self.len();
                    self.values.append(&mut group);
                    self.accs.extend(accs.by_ref().take(n));
                    self.insert(slot, g);
                }
            }
        }
        Ok(())
    }

    /// The groups' values and accumulators, group after group (see the module docs); the
    /// table is left empty.
    pub(crate) fn take(&mut self) -> (Vec<Value>, Vec<Acc>) {
        self.scalars.clear();
        self.index.clear();
        self.keys.clear();
        self.key_ends.clear();
        (
            std::mem::take(&mut self.values),
            std::mem::take(&mut self.accs),
        )
    }
}

/// Where a group not found goes.
enum Slot {
    /// The scalar index, with the hash, kind and bits.
    Scalar(u64, u8, u128),
    /// The key index, with the hash of `GroupTable::key`.
    Hashed(u64),
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn table() -> GroupTable {
        GroupTable::new(1, vec![AggFunc::Count], KeyHasher::new())
    }

    #[test]
    fn scalar_and_keyed_groups_merge_by_their_values() {
        let s = |x: &str| Value::String(x.into());
        let inputs = [
            vec![Value::Count(1), s("a"), Value::Null, Value::Count(1)],
            vec![s("a"), Value::Count(2), Value::Null, s("b")],
        ];
        let mut whole = table();
        let mut merged = table();
        for input in &inputs {
            let mut part = table();
            for v in input {
                let g = part.group(&[v.borrowed()], usize::MAX).unwrap();
                part.accs_mut(g)[0].add_event();
                let g = whole.group(&[v.borrowed()], usize::MAX).unwrap();
                whole.accs_mut(g)[0].add_event();
            }
            merged.merge(part, usize::MAX).unwrap();
        }
        let (wv, wa) = whole.take();
        let (mv, ma) = merged.take();
        assert_eq!(wv, mv);
        assert_eq!(
            wv,
            [
                Value::Count(1),
                s("a"),
                Value::Null,
                Value::Count(2),
                s("b")
            ]
        );
        let counts = |a: &[Acc]| {
            a.iter()
                .map(|a| a.finish(&crate::types::Type::Count))
                .collect::<Vec<_>>()
        };
        assert_eq!(counts(&wa), counts(&ma));
        assert_eq!(counts(&wa)[0], Value::Count(2));
        assert_eq!(counts(&wa)[1], Value::Count(2));
    }

    #[test]
    fn the_limit_is_kept() {
        let mut t = table();
        assert!(t.group(&[ValueRef::Count(1)], 1).is_some());
        assert!(
            t.group(&[ValueRef::Count(1)], 1).is_some(),
            "found, not made"
        );
        assert!(t.group(&[ValueRef::Count(2)], 1).is_none());
        let mut other = table();
        other.group(&[ValueRef::Count(3)], 9).unwrap();
        assert!(t.merge(other, 1).is_err());
    }
}
