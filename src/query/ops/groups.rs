//! The groups of an aggregation, flat: what a `summarize` holds (`exec/summarize.rs`) and what
//! the search's workers make of each batch (`partial.rs`).
//!
//! Group `g`'s `by` values and its accumulators are the `g`-th of their columns
//! (`per_group.rs`), in the order the groups were made: no allocation per group, and merging
//! a group touches its accumulators and its index entry alone. A column keeps a `by` field's
//! values compact (`group_values.rs`: 9 bytes for a number or an IPv4 address), and an
//! aggregation's accumulators (`group_accs.rs`: 8 bytes for a count, 9 for a sum); a table
//! of one address and a sum of integers takes about 40 bytes per group with its index. A group is
//! found by its hash in one index of 8-byte entries (the group and the low half of the
//! hash), and compared:
//! - a single `by` value that is a number, time, address, bool or unset by its kind and bits
//!   ([`scalar_key`]), hashed as they are, with no key built;
//! - any other by the bytes of its values' key ([`push_key`]), kept in one buffer.
//!
//! Which of the two a group's hash is made of depends on its values alone, so every table
//! (of one hasher) finds the same group for the same values, however they came in (a row, a
//! batch's partial groups).
//!
//! Each group also keeps the position of its first event (`first`): its index in a table
//! built from rows, and, in the tables of `partitions.rs`, which take batches in any order,
//! the smallest position any batch gave it; the groups come out ordered by it.

use hashbrown::HashTable;

use super::aggregate::{push_key, Acc, KeyHasher};
use super::group_accs::AccColumn;
use super::group_values::{scalar_key, GroupValues};
use super::per_group::PerGroup;
use super::syntax::AggFunc;
use crate::query::memory::table_bytes;
use crate::types::Type;
use crate::value::{Value, ValueRef};

/// An index entry: the group, and the low half of its hash (see [`spread`]).
type Entry = (u32, u32);

/// The hash the index places an entry by, made again from the half the entry keeps, so
/// that growing the index reads no group and hashes no key: multiplied by an odd constant,
/// its low bits (which place the entry) and its top seven (which tag it) both vary.
fn spread(low: u32) -> u64 {
    u64::from(low).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// See the [module docs](self).
#[derive(Debug, Clone)]
pub(crate) struct GroupTable {
    hasher: KeyHasher,
    /// One column per `by` field.
    values: Vec<GroupValues>,
    /// One column per aggregation.
    accs: Vec<AccColumn>,
    /// Every group, by its hash: 8 bytes an entry (and a byte of tag).
    index: HashTable<Entry>,
    /// The keys of the groups that have one (not a scalar), one after the other;
    /// `key_ends[g]` is where group `g`'s ends (a scalar group adds nothing). Until a group
    /// has a key, `key_ends` is empty: a table of scalars spends nothing on it.
    keys: Vec<u8>,
    key_ends: PerGroup<usize>,
    /// Per group: the position of its first event (see the module docs).
    first: PerGroup<u64>,
    /// No group's first position is above this (the largest any group was made with; they
    /// only fall): a group found again with a later first event keeps its own without it
    /// being read (batches mostly come in order, and reading it missed the cache).
    latest: u64,
    /// How many groups there are.
    len: usize,
    /// Every [`GroupTable::group`] makes a new group, not indexed ([`GroupTable::listing`]).
    listing: bool,
    /// Scratch for a key being looked up.
    key: Vec<u8>,
}

impl GroupTable {
    /// No groups yet, of `by` values each and accumulators of `funcs`; keys hashed by
    /// `hasher`.
    pub(crate) fn new(by: usize, funcs: Vec<AggFunc>, hasher: KeyHasher) -> GroupTable {
        GroupTable {
            hasher,
            values: vec![GroupValues::default(); by],
            accs: funcs.iter().map(|&f| AccColumn::new(f)).collect(),
            index: HashTable::new(),
            keys: Vec::new(),
            key_ends: PerGroup::default(),
            first: PerGroup::default(),
            latest: 0,
            len: 0,
            listing: false,
            key: Vec::new(),
        }
    }

    /// How many groups there are.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The heap bytes it holds: its columns with what their values and accumulators hold
    /// (`group_values.rs`, `group_accs.rs`), its index, its keys.
    pub(crate) fn heap(&self) -> usize {
        self.values.iter().map(GroupValues::heap).sum::<usize>()
            + self.accs.iter().map(AccColumn::heap).sum::<usize>()
            + table_bytes(self.index.capacity(), std::mem::size_of::<Entry>())
            + self.keys.capacity()
            + self.key_ends.heap()
            + self.first.heap()
            + self.key.capacity()
    }

    /// Group `g`'s value of the `i`-th `by` field.
    pub(crate) fn value(&self, g: usize, i: usize) -> Value {
        self.values.get(i).map_or(Value::Null, |c| c.get(g))
    }

    /// Group `g`'s value of the `i`-th `by` field, taken (left unset).
    pub(crate) fn take_value(&mut self, g: usize, i: usize) -> Value {
        self.values.get_mut(i).map_or(Value::Null, |c| c.take(g))
    }

    /// Applies `change` to group `g`'s accumulator of the `k`-th aggregation.
    #[inline]
    pub(crate) fn update(&mut self, g: usize, k: usize, change: impl FnOnce(&mut Acc)) {
        if let Some(c) = self.accs.get_mut(k) {
            c.update(g, change);
        }
    }

    /// Applies `change` to each of group `g`'s accumulators.
    pub(crate) fn update_all(&mut self, g: usize, mut change: impl FnMut(&mut Acc)) {
        for c in &mut self.accs {
            c.update(g, &mut change);
        }
    }

    /// Group `g`'s result of the `k`-th aggregation, of type `ty` ([`Acc::finish`]).
    pub(crate) fn finish(&self, g: usize, k: usize, ty: &Type) -> Value {
        self.accs.get(k).map_or(Value::Null, |c| c.finish(g, ty))
    }

    /// The position of group `g`'s first event (see the module docs).
    pub(crate) fn first(&self, g: usize) -> u64 {
        self.first.get(g).copied().unwrap_or(u64::MAX)
    }

    /// Group `g`'s [`scalar_key`], when it has one `by` value that has one.
    fn scalar(&self, g: usize) -> Option<(u8, u128)> {
        match self.values.as_slice() {
            [column] => column.scalar(g),
            _ => None,
        }
    }

    /// The hash by which group `g` is indexed: equal in every table (of one hasher) for
    /// equal values.
    pub(crate) fn hash(&self, g: usize) -> u64 {
        if let Some(key) = self.scalar(g) {
            return self.hasher.hash_one(key);
        }
        // Any other group's key is kept (empty without `by` fields).
        self.hasher.hash_one(&self.keys[self.key_range(g)])
    }

    /// The group of `values` (one per `by` field), made with fresh accumulators when there
    /// is none, if fewer than `max` groups are there (`None` otherwise).
    pub(crate) fn group(&mut self, values: &[ValueRef<'_>], max: usize) -> Option<usize> {
        let (keyed, low) = if self.listing {
            let keyed = scalar_key(values).is_none();
            if keyed {
                self.make_key(values);
            }
            (keyed, None)
        } else {
            match self.find(values) {
                Ok(g) => return Some(g),
                Err(slot) => (slot.keyed, Some(slot.low)),
            }
        };
        if self.len() >= max {
            return None;
        }
        let g = self.len();
        for (column, v) in self.values.iter_mut().zip(values) {
            column.push(v);
        }
        for column in &mut self.accs {
            column.push_new();
        }
        self.first.push(g as u64);
        self.latest = g as u64;
        self.add(g, keyed, low);
        Some(g)
    }

    /// The key of `values` (not a scalar) into `self.key`.
    fn make_key(&mut self, values: &[ValueRef<'_>]) {
        self.key.clear();
        for v in values {
            push_key(&mut self.key, v);
        }
    }

    /// The group of `values`, or where to index a new one (the key is left in `self.key`).
    fn find(&mut self, values: &[ValueRef<'_>]) -> Result<usize, Slot> {
        let scalar = scalar_key(values);
        let hash = match scalar {
            Some(key) => self.hasher.hash_one(key),
            None => {
                self.make_key(values);
                self.hasher.hash_one(self.key.as_slice())
            }
        };
        self.find_hashed(scalar, hash)
    }

    /// The group of the values whose scalar key is `scalar` (or, without one, whose key is
    /// in `self.key`) and whose hash is `hash`.
    fn find_hashed(&self, scalar: Option<(u8, u128)>, hash: u64) -> Result<usize, Slot> {
        let low = hash as u32;
        let found = self.index.find(spread(low), |&(g, h)| {
            h == low
                && match scalar {
                    Some(key) => self.scalar(g as usize) == Some(key),
                    None => self.keys[self.key_range(g as usize)] == self.key[..],
                }
        });
        match found {
            Some(&(g, _)) => Ok(g as usize),
            None => Err(Slot {
                low,
                keyed: scalar.is_none(),
            }),
        }
    }

    /// Counts in new group `g` (its values, accumulators and first position already
    /// pushed): keeps its key (in `self.key`) when `keyed`, and indexes it by the low half of
    /// its hash, `low` (`None`: a table that lists its groups).
    fn add(&mut self, g: usize, keyed: bool, low: Option<u32>) {
        self.add_key(keyed, g);
        if let Some(low) = low {
            self.index
                .insert_unique(spread(low), (g as u32, low), |&(_, h)| spread(h));
        }
        self.len += 1;
    }

    /// Keeps new group `g`'s key (in `self.key`) when it has one, not a scalar.
    fn add_key(&mut self, keyed: bool, g: usize) {
        if keyed {
            // The first group with a key: the scalar ones before it end where keys start.
            while self.key_ends.len() < g {
                self.key_ends.push(0);
            }
            self.keys.extend_from_slice(&self.key);
        }
        if keyed || self.key_ends.len() > 0 {
            self.key_ends.push(self.keys.len());
        }
    }

    /// This table, empty, made to list its groups: every [`GroupTable::group`] makes a new
    /// one, with no index to find it by, so that equal values may make several. For a
    /// batch whose rows nearly all have values of their own, merged into tables that find
    /// the repeats ([`GroupTable::absorb`]): the index would cost more than it saves.
    pub(crate) fn listing(mut self) -> GroupTable {
        self.listing = self.len == 0;
        self
    }

    /// Where group `g`'s key is in `keys`.
    fn key_range(&self, g: usize) -> std::ops::Range<usize> {
        key_range(&self.key_ends, g)
    }

    /// Takes `other`'s group `g` (of the same `by` fields and aggregations, and the same
    /// hasher), whose [`GroupTable::hash`] is `hash` and whose first event is at `first`: a
    /// group already here takes its accumulators ([`Acc::merge`]) and the smaller first
    /// position; a new one comes last. Returns the group found (`None`: it is new).
    /// `other`'s group is left with unset values and placeholder accumulators (`count`s of
    /// 0), not to be used again.
    pub(crate) fn absorb(
        &mut self,
        other: &mut GroupTable,
        g: usize,
        hash: u64,
        first: u64,
    ) -> Option<usize> {
        let scalar = other.scalar(g);
        if scalar.is_none() {
            self.key.clear();
            self.key.extend_from_slice(&other.keys[other.key_range(g)]);
        }
        // (Taken, not copied: the batch's table is dropped after its merge.)
        match self.find_hashed(scalar, hash) {
            Ok(h) => {
                for (column, from) in self.accs.iter_mut().zip(&mut other.accs) {
                    column.merge_taken(h, from, g);
                }
                if first < self.latest {
                    if let Some(at) = self.first.get_mut(h) {
                        *at = (*at).min(first);
                    }
                }
                Some(h)
            }
            Err(slot) => {
                let h = self.len();
                for (column, from) in self.values.iter_mut().zip(&mut other.values) {
                    column.push_taken(from, g);
                }
                for (column, from) in self.accs.iter_mut().zip(&mut other.accs) {
                    column.push_taken(from, g);
                }
                self.first.push(first);
                self.latest = self.latest.max(first);
                self.add(h, slot.keyed, Some(slot.low));
                None
            }
        }
    }
}

/// Where group `g`'s key is in the keys, by their ends.
fn key_range(ends: &PerGroup<usize>, g: usize) -> std::ops::Range<usize> {
    if g >= ends.len() {
        // No group has a key.
        return 0..0;
    }
    let start = match g.checked_sub(1) {
        Some(before) => ends.get(before).copied().unwrap_or(0),
        None => 0,
    };
    start..ends.get(g).copied().unwrap_or(start)
}

/// Where a group not found goes: the low half of its hash, and whether it has a key (in
/// `GroupTable::key`) rather than a scalar.
struct Slot {
    low: u32,
    keyed: bool,
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
    fn groups(t: &GroupTable) -> Vec<(Value, Value, u64)> {
        (0..t.len())
            .map(|g| (t.value(g, 0), t.finish(g, 0, &Type::Count), t.first(g)))
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
                part.update(g, 0, Acc::add_event);
                let g = whole.group(&[v.borrowed()], usize::MAX).unwrap();
                whole.update(g, 0, Acc::add_event);
            }
            for g in 0..part.len() {
                // Each part's groups hash as the whole's do.
                let same = (0..whole.len()).find(|&w| whole.value(w, 0) == part.value(g, 0));
                assert_eq!(part.hash(g), whole.hash(same.unwrap()));
                let hash = part.hash(g);
                merged.absorb(&mut part, g, hash, 10 * i as u64 + g as u64);
            }
        }
        let (w, m) = (groups(&whole), groups(&merged));
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
        let mut smallest = u64::MAX;
        for first in [7, 3, 9] {
            smallest = smallest.min(first);
            let mut part = table();
            let g = part.group(&[ValueRef::Count(5)], usize::MAX).unwrap();
            part.update(g, 0, Acc::add_event);
            let hash = part.hash(g);
            let found = (first != 7).then_some(0);
            assert_eq!(t.absorb(&mut part, g, hash, first), found, "new only once");
            assert_eq!(t.first(0), smallest, "the smallest position");
        }
        assert_eq!(groups(&t), [(Value::Count(5), Value::Count(3), 3)]);
    }

    #[test]
    fn groups_past_a_chunk_keep_their_values_counts_and_positions() {
        let n = 2 * super::super::per_group::CHUNK + 5;
        let mut t = table();
        for round in 0..2 {
            for i in 0..n as u64 {
                let g = t.group(&[ValueRef::Count(i * 3)], usize::MAX).unwrap();
                assert_eq!(g, i as usize, "round {round}");
                t.update(g, 0, Acc::add_event);
            }
        }
        let got = groups(&t);
        assert_eq!(got.len(), n);
        for (i, g) in got.iter().enumerate() {
            assert_eq!(g, &(Value::Count(i as u64 * 3), Value::Count(2), i as u64));
        }
        // Without `by` fields: one group, no values.
        let mut none = GroupTable::new(0, vec![AggFunc::Count], KeyHasher::with_seeds(1, 2, 3, 4));
        for _ in 0..3 {
            let g = none.group(&[], usize::MAX).unwrap();
            none.update(g, 0, Acc::add_event);
        }
        assert_eq!(none.len(), 1);
        assert_eq!(none.value(0, 0), Value::Null, "no values");
        assert_eq!(none.finish(0, 0, &Type::Count), Value::Count(3));
    }

    #[test]
    fn groups_of_equal_hashes_are_told_apart_by_their_values() {
        let mut t = table();
        let s = |x: &str| Value::String(x.into());
        for v in [Value::Count(1), s("x")] {
            t.group(&[v.borrowed()], usize::MAX).unwrap();
        }
        let (h_count, h_string) = (t.hash(0), t.hash(1));
        // A scalar of another value, with the scalar group's hash, or the string's.
        let two = scalar_key(&[ValueRef::Count(2)]);
        assert!(t.find_hashed(two, h_count).is_err());
        assert!(t.find_hashed(two, h_string).is_err());
        assert_eq!(
            t.find_hashed(scalar_key(&[ValueRef::Count(1)]), h_count)
                .ok(),
            Some(0)
        );
        // A key of another string, with either group's hash.
        t.key.clear();
        push_key(&mut t.key, &ValueRef::String(b"y"));
        assert!(t.find_hashed(None, h_count).is_err());
        assert!(t.find_hashed(None, h_string).is_err());
        t.key.clear();
        push_key(&mut t.key, &ValueRef::String(b"x"));
        assert_eq!(t.find_hashed(None, h_string).ok(), Some(1));
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
