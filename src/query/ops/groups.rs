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
//!
//! Each group also keeps the position of its first event (`first`): its index in a table
//! built from rows, and, in the tables of `partitions.rs`, which take batches in any order,
//! the smallest position any batch gave it; the groups come out ordered by it.

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

/// An entry of the scalar index: the bits (low and high halves: a `u128` would make it 32
/// bytes, not 24), the group, the kind.
type ScalarEntry = ([u64; 2], u32, u8);

fn halves(bits: u128) -> [u64; 2] {
    [bits as u64, (bits >> 64) as u64]
}

fn whole([lo, hi]: [u64; 2]) -> u128 {
    u128::from(lo) | u128::from(hi) << 64
}

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
    /// Per group: the position of its first event (see the module docs).
    first: Vec<u64>,
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
            first: Vec::new(),
            key: Vec::new(),
        }
    }

    /// How many groups there are.
    pub(crate) fn len(&self) -> usize {
        self.key_ends.len()
    }

    /// Group `g`'s accumulators.
    pub(crate) fn accs_mut(&mut self, g: usize) -> &mut [Acc] {
        let n = self.funcs.len();
        &mut self.accs[g * n..(g + 1) * n]
    }

    /// Group `g`'s `by` values.
    pub(crate) fn values(&self, g: usize) -> &[Value] {
        &self.values[g * self.by..(g + 1) * self.by]
    }

    /// Group `g`'s `by` values and accumulators, its values to be taken.
    pub(crate) fn group_mut(&mut self, g: usize) -> (&mut [Value], &[Acc]) {
        let n = self.funcs.len();
        (
            &mut self.values[g * self.by..(g + 1) * self.by],
            &self.accs[g * n..(g + 1) * n],
        )
    }

    /// The position of group `g`'s first event (see the module docs).
    pub(crate) fn first(&self, g: usize) -> u64 {
        self.first[g]
    }

    /// The hash by which group `g` is indexed: equal in every table (of one hasher) for
    /// equal values.
    pub(crate) fn hash(&self, g: usize) -> u64 {
        if let [v] = self.values(g) {
            if let Some(key) = scalar_key(&[v.borrowed()]) {
                return self.hasher.hash_one(key);
            }
        }
        // Any other group's key is kept (empty without `by` fields).
        let start = if g == 0 { 0 } else { self.key_ends[g - 1] };
        self.hasher.hash_one(&self.keys[start..self.key_ends[g]])
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
                self.first.push(g as u64);
                self.insert(slot, g);
                Some(g)
            }
        }
    }

    /// The group of `values`, or where to index a new one (the key is left in `self.key`).
    fn find(&mut self, values: &[ValueRef<'_>]) -> Result<usize, Slot> {
        if let Some((kind, bits)) = scalar_key(values) {
            let hash = self.hasher.hash_one((kind, bits));
            let bits = halves(bits);
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
                        hasher.hash_one((k, whole(b)))
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

    /// Takes `other`'s group `g` (of the same `by` fields and aggregations), whose first
    /// event is at `first`: a group already here takes its accumulators ([`Acc::merge`]) and
    /// the smaller first position; a new one comes last. Returns whether it is new. `other`'s
    /// group is left with unset values and fresh accumulators.
    pub(crate) fn absorb(&mut self, other: &mut GroupTable, g: usize, first: u64) -> bool {
        let (by, n) = (self.by, self.funcs.len());
        let group = &mut other.values[g * by..(g + 1) * by];
        let found = match &*group {
            [] => self.find(&[]),
            [v] => self.find(&[v.borrowed()]),
            many => {
                let refs: Vec<ValueRef<'_>> = many.iter().map(Value::borrowed).collect();
                self.find(&refs)
            }
        };
        let accs = other.accs[g * n..(g + 1) * n]
            .iter_mut()
            .zip(&self.funcs)
            .map(|(a, &f)| std::mem::replace(a, Acc::new(f)));
        match found {
            Ok(h) => {
                for (acc, o) in self.accs[h * n..(h + 1) * n].iter_mut().zip(accs) {
                    acc.merge(o);
                }
                self.first[h] = self.first[h].min(first);
                false
            }
            Err(slot) => {
                let h = self.len();
                self.values
                    .extend(group.iter_mut().map(|v| std::mem::replace(v, Value::Null)));
                self.accs.extend(accs);
                self.first.push(first);
                self.insert(slot, h);
                true
            }
        }
    }
}

/// Where a group not found goes.
enum Slot {
    /// The scalar index, with the hash, kind and bits.
    Scalar(u64, u8, [u64; 2]),
    /// The key index, with the hash of `GroupTable::key`.
    Hashed(u64),
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A table of `count()` by one field; every one of a test hashes alike.
    fn table() -> GroupTable {
        GroupTable::new(1, vec![AggFunc::Count], KeyHasher::with_seeds(1, 2, 3, 4))
    }

    /// Every group's values, count and first position.
    fn groups(t: &mut GroupTable) -> Vec<(Value, Value, u64)> {
        (0..t.len())
            .map(|g| {
                let first = t.first(g);
                let (v, a) = t.group_mut(g);
                (v[0].clone(), a[0].finish(&crate::types::Type::Count), first)
            })
            .collect()
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
        for (i, input) in inputs.iter().enumerate() {
            let mut part = table();
            for v in input {
                let g = part.group(&[v.borrowed()], usize::MAX).unwrap();
                part.accs_mut(g)[0].add_event();
                let g = whole.group(&[v.borrowed()], usize::MAX).unwrap();
                whole.accs_mut(g)[0].add_event();
            }
            for g in 0..part.len() {
                // Each part's groups hash as the whole's do.
                let same = (0..whole.len()).find(|&w| whole.values(w) == part.values(g));
                assert_eq!(part.hash(g), whole.hash(same.unwrap()));
                merged.absorb(&mut part, g, 10 * i as u64 + g as u64);
            }
        }
        let (w, m) = (groups(&mut whole), groups(&mut merged));
        let c = Value::Count;
        assert_eq!(
            w,
            [
                (c(1), c(2), 0),
                (s("a"), c(2), 1),
                (Value::Null, c(2), 2),
                (c(2), c(1), 3),
                (s("b"), c(1), 4),
            ]
        );
        // The same groups and counts; first positions as the parts gave them.
        let firsts: Vec<u64> = m.iter().map(|g| g.2).collect();
        assert_eq!(firsts, [0, 1, 2, 11, 13]);
        let strip =
            |v: Vec<(Value, Value, u64)>| v.into_iter().map(|g| (g.0, g.1)).collect::<Vec<_>>();
        assert_eq!(strip(w), strip(m));
    }

    #[test]
    fn a_group_absorbed_again_keeps_its_smallest_first_position() {
        let mut t = table();
        for first in [7, 3, 9] {
            let mut part = table();
            let g = part.group(&[ValueRef::Count(5)], usize::MAX).unwrap();
            part.accs_mut(g)[0].add_event();
            assert_eq!(t.absorb(&mut part, g, first), first == 7, "new only once");
        }
        assert_eq!(groups(&mut t), [(Value::Count(5), Value::Count(3), 3)]);
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
    }
}
