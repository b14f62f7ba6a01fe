//! The groups of a `summarize` (`exec/summarize.rs`), merged by whichever thread has them: the
//! search's workers merge the groups of each batch they aggregate (`partial.rs`) as soon as
//! they have them, in parallel, and no thread merges every batch's groups alone (with
//! millions of groups, that thread was the query's bottleneck, missing the cache on almost
//! every group).
//!
//! The groups are spread over [`PARTS`] tables (`groups.rs`) by their hash, each behind its
//! own lock: a batch's groups are sorted by table, and each table is locked once per batch.
//! Batches come in any order, so each group keeps the position of its first event: a batch
//! of the archive gives its `g`-th group (in the order of their first events) the position
//! of its first event ID plus `g`, which lies inside the batch's IDs, above every earlier
//! batch's and below every later one's. The groups come out ordered by that position
//! ([`Ordered::new`]): as a `summarize` that saw every event in ID order, one after the
//! other, would have made them.
//!
//! Memory: the groups, and per group a `u32` while they are taken out in order. What each
//! table holds on the heap ([`GroupTable::heap`]) is charged to the query's memory budget
//! (`query/memory.rs`) after each merge, under the table's lock, and so is each batch's own
//! table while it is merged; a charge past the budget marks the groups over it
//! ([`Partitions::check`]), and the `summarize` fails with an error that names it. At most
//! `max` groups (the most the tables can number): a merge that makes more marks the groups
//! full, and the `summarize` fails.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::aggregate::KeyHasher;
use super::groups::GroupTable;
use super::syntax::AggFunc;
use crate::query::memory::Reservation;
use crate::query::QueryError;

/// How many tables the groups are spread over: enough that two threads rarely want the same
/// one, few enough that a batch's groups fill each with a run.
pub(crate) const PARTS: usize = 64;

/// See the [module docs](self).
pub(crate) struct Partitions {
    parts: Vec<Mutex<GroupTable>>,
    /// Per table: the heap bytes charged for it (changed under its lock).
    charged: Vec<AtomicUsize>,
    /// What all tables hold, charged to the query's budget.
    memory: Reservation,
    /// A charge passed the budget.
    over: AtomicBool,
    /// Groups in all tables.
    groups: AtomicUsize,
    max: usize,
    full: AtomicBool,
    /// Batches list their groups ([`Partitions::learn`]).
    listing: AtomicBool,
    /// An empty table like the others (for a batch's groups).
    empty: GroupTable,
}

impl std::fmt::Debug for Partitions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partitions")
            .field("groups", &self.groups.load(Ordering::Relaxed))
            .field("max", &self.max)
            .finish()
    }
}

/// Which table a group of hash `hash` is in: bits of the high half, which the tables' own
/// indexes do not keep (they place and tag a group by the low half, `groups.rs`), so that
/// a table's groups differ in all the bits it uses.
fn part_of(hash: u64) -> usize {
    (hash >> 32) as usize % PARTS
}

impl Partitions {
    /// No groups, of `by` values and accumulators of `funcs` each, at most `max` of them,
    /// what they hold charged to `memory`.
    pub(crate) fn new(
        by: usize,
        funcs: Vec<AggFunc>,
        hasher: KeyHasher,
        max: usize,
        memory: Reservation,
    ) -> Self {
        let empty = GroupTable::new(by, funcs, hasher);
        Partitions {
            parts: (0..PARTS).map(|_| Mutex::new(empty.clone())).collect(),
            charged: (0..PARTS).map(|_| AtomicUsize::new(0)).collect(),
            memory,
            over: AtomicBool::new(false),
            groups: AtomicUsize::new(0),
            max,
            full: AtomicBool::new(false),
            listing: AtomicBool::new(false),
            empty,
        }
    }

    /// An empty table for one batch's groups (made by rows, so that group `g`'s first
    /// position is `g`), to [`Partitions::merge`] here.
    pub(crate) fn table(&self) -> GroupTable {
        self.empty.clone()
    }

    fn lock(&self, part: usize) -> MutexGuard<'_, GroupTable> {
        // A panic under the lock is a bug, whose batch the pool reports lost (`pool.rs`);
        // the other threads go on with the table as it is.
        self.parts[part].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a batch's groups, the `g`-th of which has its first event at `base + g` (see the
    /// module docs); returns how many of them found a group made by an earlier one of the
    /// batch (repeats: only in a table that lists its groups, [`GroupTable::listing`]).
    pub(crate) fn merge(&self, mut batch: GroupTable, base: u64) -> usize {
        // The batch's own table is held until it is merged.
        let held = batch.heap();
        self.charge(self.memory.grow(held));
        // The groups by table, in their order within each (a counting sort).
        let hashes: Vec<u64> = (0..batch.len()).map(|g| batch.hash(g)).collect();
        let mut starts = [0usize; PARTS + 1];
        for &h in &hashes {
            starts[part_of(h) + 1] += 1;
        }
        for p in 0..PARTS {
            starts[p + 1] += starts[p];
        }
        let mut next = starts;
        let mut order = vec![0u32; hashes.len()];
        for (g, &h) in hashes.iter().enumerate() {
            let at = &mut next[part_of(h)];
            order[*at] = g as u32;
            *at += 1;
        }
        let (mut made, mut repeats) = (0, 0);
        for p in 0..PARTS {
            let run = &order[starts[p]..starts[p + 1]];
            if run.is_empty() {
                continue;
            }
            let mut table = self.lock(p);
            // Groups from here on are this batch's: one found among them is a repeat.
            let ours = table.len();
            for &g in run {
                let g = g as usize;
                let first = batch.first(g).saturating_add(base);
                match table.absorb(&mut batch, g, hashes[g], first) {
                    None => made += 1,
                    Some(h) => repeats += usize::from(h >= ours),
                }
            }
            let now = table.heap();
            let was = self.charged[p].swap(now, Ordering::Relaxed);
            match now.checked_sub(was) {
                Some(more) => self.charge(self.memory.grow(more)),
                None => self.memory.shrink(was - now),
            }
        }
        drop(batch);
        self.memory.shrink(held);
        if self.groups.fetch_add(made, Ordering::Relaxed) + made > self.max {
            self.full.store(true, Ordering::Relaxed);
        }
        repeats
    }

    /// Whether the next batches should list their groups ([`GroupTable::listing`]).
    pub(crate) fn listing(&self) -> bool {
        self.listing.load(Ordering::Relaxed)
    }

    /// Learns from a batch of `rows` rows that made `groups` groups, `repeats` of them found
    /// again in the merge (see [`Partitions::merge`]), whether the next should list theirs:
    /// when nearly every row makes a group of its own (more than three in four), an index per
    /// batch finds almost nothing; once a listed batch's rows repeat (more than one in four),
    /// it is worth it again. (Threads racing on it decide for a batch or two at worst.)
    pub(crate) fn learn(&self, rows: usize, groups: usize, listed: bool, repeats: usize) {
        let list = if listed {
            repeats * 4 <= groups
        } else {
            groups * 4 > rows * 3
        };
        self.listing.store(list, Ordering::Relaxed);
    }

    fn charge(&self, grown: Result<(), QueryError>) {
        if grown.is_err() {
            self.over.store(true, Ordering::Relaxed);
        }
    }

    /// Whether a merge made more than `max` groups.
    pub(crate) fn full(&self) -> bool {
        self.full.load(Ordering::Relaxed)
    }

    /// Whether `extra` bytes more (a batch's groups being made) fit in the query's budget
    /// beside what is charged; when not, the groups are marked over it
    /// ([`Partitions::check`]).
    pub(crate) fn fits(&self, extra: usize) -> bool {
        let fits = self.memory.fits(extra);
        if !fits {
            self.over.store(true, Ordering::Relaxed);
        }
        fits
    }

    /// The error of the groups past the query's memory budget, if they are.
    pub(crate) fn check(&self) -> Result<(), QueryError> {
        match self.over.load(Ordering::Relaxed) {
            true => Err(self.memory.error()),
            false => Ok(()),
        }
    }

    /// The tables taken out ([`Partitions::take_tables`]) were dropped: their charge is
    /// given back.
    pub(crate) fn taken_dropped(&self) {
        for c in &self.charged {
            c.store(0, Ordering::Relaxed);
        }
        self.memory.shrink(self.memory.size() as usize);
    }

    /// Every group's table; the tables here are left empty (their charge stays until
    /// [`Partitions::taken_dropped`]).
    pub(crate) fn take_tables(&self) -> Vec<GroupTable> {
        let tables = (0..PARTS)
            .map(|p| std::mem::replace(&mut *self.lock(p), self.empty.clone()))
            .collect();
        self.groups.store(0, Ordering::Relaxed);
        tables
    }
}

/// Groups of [`Partitions::take_tables`], in order.
pub(crate) struct Ordered {
    tables: Vec<GroupTable>,
    order: Order,
}

enum Order {
    /// Every group by first position: per table, its groups by first position, and per
    /// table with groups left, the next one's first position, the table, and its place in
    /// the table's order.
    Merge {
        orders: Vec<Vec<u32>>,
        heads: BinaryHeap<Reverse<(u64, usize, usize)>>,
    },
    /// These groups (table, group), in this order.
    List(std::vec::IntoIter<(u32, u32)>),
}

impl Ordered {
    /// Every group of `tables`, in the order of their first positions.
    pub(crate) fn new(tables: Vec<GroupTable>) -> Ordered {
        let orders: Vec<Vec<u32>> = tables
            .iter()
            .map(|t| {
                let mut o: Vec<u32> = (0..t.len() as u32).collect();
                o.sort_unstable_by_key(|&g| t.first(g as usize));
                o
            })
            .collect();
        let heads = orders
            .iter()
            .enumerate()
            .filter_map(|(p, o)| Some(Reverse((tables[p].first(*o.first()? as usize), p, 0))))
            .collect();
        Ordered {
            tables,
            order: Order::Merge { orders, heads },
        }
    }

    /// The groups `list` (table, group) of `tables`, in that order.
    pub(crate) fn listed(tables: Vec<GroupTable>, list: Vec<(u32, u32)>) -> Ordered {
        Ordered {
            tables,
            order: Order::List(list.into_iter()),
        }
    }

    /// The next group: its table, and its place there (its values to be taken).
    pub(crate) fn next_group(&mut self) -> Option<(&mut GroupTable, usize)> {
        let (p, g) = match &mut self.order {
            Order::Merge { orders, heads } => {
                let Reverse((_, p, at)) = heads.pop()?;
                let g = orders[p][at] as usize;
                if let Some(&next) = orders[p].get(at + 1) {
                    let first = self.tables[p].first(next as usize);
                    heads.push(Reverse((first, p, at + 1)));
                }
                (p, g)
            }
            Order::List(list) => {
                let (p, g) = list.next()?;
                (p as usize, g as usize)
            }
        };
        Some((self.tables.get_mut(p)?, g))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::super::aggregate::Acc;
    use super::*;
    use crate::query::memory::test_memory;
    use crate::types::Type;
    use crate::value::{Value, ValueRef};

    /// A batch's table of `count()` by one value, from rows.
    fn batch(p: &Partitions, rows: &[u64]) -> GroupTable {
        let mut t = p.table();
        for &r in rows {
            let g = t.group(&[ValueRef::Count(r)], usize::MAX).unwrap();
            t.update(g, 0, Acc::add_event);
        }
        t
    }

    fn drain(p: &Partitions) -> Vec<(Value, Value)> {
        let mut o = Ordered::new(p.take_tables());
        let mut out = Vec::new();
        while let Some((t, g)) = o.next_group() {
            out.push((t.value(g, 0), t.finish(g, 0, &Type::Count)));
        }
        out
    }

    #[test]
    fn batches_merged_in_any_order_give_the_groups_in_the_order_of_their_first_events() {
        // Three batches of IDs 0.., 100.., 200..; merged last to first.
        let rows: [&[u64]; 3] = [&[5, 1, 5], &[7, 1, 9, 7], &[2, 9, 3000]];
        let p = Partitions::new(
            1,
            vec![AggFunc::Count],
            KeyHasher::new(),
            usize::MAX,
            test_memory(),
        );
        for (i, r) in rows.iter().enumerate().rev() {
            p.merge(batch(&p, r), 100 * i as u64);
        }
        let got = drain(&p);
        let c = Value::Count;
        assert_eq!(
            got,
            [
                (c(5), c(2)),
                (c(1), c(2)),
                (c(7), c(2)),
                (c(9), c(2)),
                (c(2), c(1)),
                (c(3000), c(1)),
            ]
        );
        assert!(!p.full());
        assert!(drain(&p).is_empty(), "taken");
    }

    #[test]
    fn batches_that_list_their_groups_give_the_same_groups_and_count_their_repeats() {
        let rows: [&[u64]; 3] = [&[5, 1, 5, 5], &[7, 1, 9, 7], &[2, 9, 3000]];
        let indexed = Partitions::new(
            1,
            vec![AggFunc::Count],
            KeyHasher::new(),
            usize::MAX,
            test_memory(),
        );
        let listed = Partitions::new(
            1,
            vec![AggFunc::Count],
            KeyHasher::new(),
            usize::MAX,
            test_memory(),
        );
        let mut repeats = Vec::new();
        for (i, r) in rows.iter().enumerate().rev() {
            assert_eq!(indexed.merge(batch(&indexed, r), 100 * i as u64), 0);
            let mut t = listed.table().listing();
            for &x in *r {
                let g = t.group(&[ValueRef::Count(x)], usize::MAX).unwrap();
                t.update(g, 0, Acc::add_event);
            }
            assert_eq!(t.len(), r.len(), "a group per row");
            repeats.push(listed.merge(t, 100 * i as u64));
        }
        // Repeats within a batch only: 7 in the second, 5 twice in the first.
        assert_eq!(repeats, [0, 1, 2]);
        assert_eq!(drain(&listed), drain(&indexed));
    }

    /// The sets of `distinct` that batches merge into one group are charged as they grow,
    /// past the budget the groups fail naming it, and the charge is given back once the
    /// tables taken out are dropped.
    #[test]
    fn the_groups_charge_their_distinct_sets_and_give_them_back() {
        use crate::query::memory::{MemoryBudget, MemoryLimit};
        let budget = MemoryBudget::new(MemoryLimit {
            bytes: 1 << 20,
            option: "--memory",
        });
        let p = Partitions::new(
            0,
            vec![AggFunc::Distinct],
            KeyHasher::new(),
            usize::MAX,
            budget.reserve("summarize distinct(x)"),
        );
        let mut scratch = Vec::new();
        let mut charged = Vec::new();
        for b in 0..40u64 {
            let mut t = p.table();
            let g = t.group(&[], usize::MAX).unwrap();
            for x in b * 1000..(b + 1) * 1000 {
                t.update(g, 0, |a| a.add(&ValueRef::Count(x), &mut scratch));
            }
            p.merge(t, b * 1000);
            charged.push(budget.used());
        }
        // At least a key, a value and a bucket per distinct value (about 90 bytes here).
        assert!(charged.windows(2).all(|w| w[0] <= w[1]), "{charged:?}");
        assert!(charged[9] > 10_000 * 64, "{}", charged[9]);
        let e = p.check().unwrap_err().to_string();
        assert!(
            e.contains("`summarize distinct(x)`") && e.contains("1.0 MiB"),
            "{e}"
        );
        assert!(budget.peak() >= 40_000 * 64);
        drop(p.take_tables());
        p.taken_dropped();
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn batches_list_their_groups_while_rows_rarely_repeat() {
        let p = Partitions::new(
            1,
            vec![AggFunc::Count],
            KeyHasher::new(),
            usize::MAX,
            test_memory(),
        );
        assert!(!p.listing());
        p.learn(100, 90, false, 0);
        assert!(p.listing(), "90 groups of 100 rows");
        p.learn(100, 100, true, 10);
        assert!(p.listing(), "10 repeats in 100");
        p.learn(100, 100, true, 40);
        assert!(!p.listing(), "40 repeats in 100");
        p.learn(100, 60, false, 0);
        assert!(!p.listing());
    }

    #[test]
    fn more_groups_than_the_limit_mark_the_table_full() {
        let p = Partitions::new(1, vec![AggFunc::Count], KeyHasher::new(), 3, test_memory());
        p.merge(batch(&p, &[1, 2, 1]), 0);
        assert!(!p.full());
        p.merge(batch(&p, &[2, 3]), 10);
        assert!(!p.full(), "3 groups");
        p.merge(batch(&p, &[4]), 20);
        assert!(p.full());
    }

    #[test]
    fn groups_spread_over_the_tables_come_out_whole() {
        let p = Partitions::new(
            1,
            vec![AggFunc::Count],
            KeyHasher::new(),
            usize::MAX,
            test_memory(),
        );
        let rows: Vec<u64> = (0..10_000).map(|i| i % 2_500).collect();
        for (i, chunk) in rows.chunks(1_000).enumerate() {
            p.merge(batch(&p, chunk), 1_000 * i as u64);
        }
        let got = drain(&p);
        assert_eq!(got.len(), 2_500);
        for (i, (v, n)) in got.iter().enumerate() {
            assert_eq!((v, n), (&Value::Count(i as u64), &Value::Count(4)));
        }
    }
}
