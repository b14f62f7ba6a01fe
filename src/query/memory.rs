//! The memory budget of one query: one accountant ([`MemoryBudget`]) per run of a chain,
//! which every operator that holds state charges with the heap its state takes.
//!
//! # The rule
//!
//! A run of a chain ([`crate::query::Chain::run`]) makes one [`MemoryBudget`] of the chain's
//! limit ([`crate::query::Chain::with_memory`]; by default [`default_query_memory`]). Each
//! operator that holds state keeps a reservation of it (`Reservation`) and resizes the reservation to
//! what its state takes on the heap after each change, measured from the state itself (the
//! capacity of its vectors and hash tables times their element sizes, plus the heap bytes of
//! the keys and values they hold; see `value_heap` and `table_bytes`), not estimated from
//! the bytes of the rows it read:
//!
//! | operator | charges |
//! | --- | --- |
//! | `sort` (also the `sort` of `top`, `rare`) | its entries: the row, the keys and their heap, the vector of entries |
//! | `tail` | the rows kept and their queue |
//! | `summarize` (`top`, `rare`) | every table of groups (`groups.rs`): `by` values, accumulators with the sets of `distinct` and `count_distinct` and the values of `min`/`max`, the index, the keys; and each batch's groups that a search worker merges into them (`partial.rs`), while it merges them |
//! | `pivot` (`query/context/pivot.rs`) | the sets of uids and community IDs of the results, with their keys |
//!
//! (`explore`'s windows are bounded by their count, `--max-events-query`, not charged; see
//! [`crate::query::context`].)
//!
//! A reservation that would take the budget's total past its limit fails with
//! [`QueryError::Memory`], which names the operator (as written in the chain) and the budget,
//! and the query stops: its state is dropped and its reservations given back. The process
//! goes on. The charge is made after the state grew, so a query holds at most its budget
//! plus one step of one operator (a row, or the growth of one table by one batch).
//!
//! Each allocation is counted as the allocator takes it (`alloc_bytes`: with millions of
//! small keys, the rounding is most of their memory). Not counted: the search's batches in
//! flight (a few per core, decoded), a table's old buckets while it grows into new ones, and
//! memory the allocator keeps after it was freed; measured (`tests/it/query_memory.rs`), the
//! process's peak resident memory over its base stays within about twice the budget.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::QueryError;
use crate::value::Value;

/// What a query may take when nothing says otherwise, as a fraction of the machine's physical
/// memory: one in [`DEFAULT_SHARE`] of it, between [`MIN_DEFAULT`] and [`MAX_DEFAULT`].
pub const DEFAULT_SHARE: u64 = 4;
/// The smallest default budget ([`default_query_memory`]), also where physical memory is
/// unknown.
pub const MIN_DEFAULT: u64 = 256 << 20;
/// The largest default budget ([`default_query_memory`]).
pub const MAX_DEFAULT: u64 = 16 << 30;

/// The budget of a query when none is given: a quarter ([`DEFAULT_SHARE`]) of the physical
/// memory (`MemTotal` of `/proc/meminfo`, read once), between [`MIN_DEFAULT`] and
/// [`MAX_DEFAULT`]; [`MIN_DEFAULT`] where it cannot be read.
pub fn default_query_memory() -> u64 {
    static DEFAULT: OnceLock<u64> = OnceLock::new();
    *DEFAULT.get_or_init(|| {
        physical_memory().map_or(MIN_DEFAULT, |m| {
            (m / DEFAULT_SHARE).clamp(MIN_DEFAULT, MAX_DEFAULT)
        })
    })
}

/// The machine's physical memory, from `/proc/meminfo` (`None` off Linux).
fn physical_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line
        .trim_start_matches("MemTotal:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// A query's limit, and the option that sets it (named in the error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimit {
    /// The most bytes the query's operators may hold together.
    pub bytes: u64,
    /// The option that sets it (`--memory`, `--query-memory`), for the error.
    pub option: &'static str,
}

impl Default for MemoryLimit {
    /// [`default_query_memory`], set with `--memory`.
    fn default() -> Self {
        MemoryLimit {
            bytes: default_query_memory(),
            option: "--memory",
        }
    }
}

/// The accountant of one query (see the [module docs](self)).
#[derive(Debug)]
pub struct MemoryBudget {
    limit: MemoryLimit,
    used: AtomicU64,
    peak: AtomicU64,
}

impl MemoryBudget {
    /// A budget of `limit`, nothing used.
    pub fn new(limit: MemoryLimit) -> Arc<MemoryBudget> {
        Arc::new(MemoryBudget {
            limit,
            used: AtomicU64::new(0),
            peak: AtomicU64::new(0),
        })
    }

    /// The limit.
    pub fn limit(&self) -> MemoryLimit {
        self.limit
    }

    /// Bytes reserved now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// The most bytes reserved at once.
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    /// A reservation of nothing yet, for `operator` (as written in the chain).
    pub(crate) fn reserve(self: &Arc<Self>, operator: impl Into<String>) -> Reservation {
        Reservation {
            budget: self.clone(),
            operator: operator.into(),
            size: AtomicU64::new(0),
        }
    }

    /// Adds `bytes` (whatever the limit: they are held already); returns whether the total
    /// is still within the limit.
    fn charge(&self, bytes: u64) -> bool {
        let now = self.used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
        now <= self.limit.bytes
    }

    fn release(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// What one operator holds of a [`MemoryBudget`], given back when dropped. It may be
/// resized from several threads (the search's workers merging groups).
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: Arc<MemoryBudget>,
    operator: String,
    size: AtomicU64,
}

impl Reservation {
    /// The error of this operator past the budget.
    pub(crate) fn error(&self) -> QueryError {
        let limit = self.budget.limit;
        QueryError::Memory {
            operator: self.operator.clone(),
            budget: limit.bytes,
            option: limit.option,
        }
    }

    /// Bytes held now.
    pub(crate) fn size(&self) -> u64 {
        self.size.load(Ordering::Relaxed)
    }

    /// Counts `bytes` more (held already); an error when the query is then past its budget
    /// (the bytes stay counted until the reservation shrinks or is dropped).
    pub(crate) fn grow(&self, bytes: usize) -> Result<(), QueryError> {
        let bytes = bytes as u64;
        self.size.fetch_add(bytes, Ordering::Relaxed);
        if self.budget.charge(bytes) {
            Ok(())
        } else {
            Err(self.error())
        }
    }

    /// Whether `bytes` more would fit in the budget beside what is counted (nothing is
    /// counted).
    pub(crate) fn fits(&self, bytes: usize) -> bool {
        self.budget.used().saturating_add(bytes as u64) <= self.budget.limit.bytes
    }

    /// Counts `bytes` fewer.
    pub(crate) fn shrink(&self, bytes: usize) {
        let bytes = (bytes as u64).min(self.size());
        self.size.fetch_sub(bytes, Ordering::Relaxed);
        self.budget.release(bytes);
    }

    /// Makes the reservation `bytes` (see [`Reservation::grow`]). For one owner: two threads
    /// resizing at once would count each other's change wrong (they [`Reservation::grow`]
    /// and [`Reservation::shrink`] by their own changes instead).
    pub(crate) fn resize(&self, bytes: usize) -> Result<(), QueryError> {
        let now = self.size() as usize;
        if bytes >= now {
            self.grow(bytes - now)
        } else {
            self.shrink(now - bytes);
            Ok(())
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(self.size());
    }
}

/// A reservation of a budget of its own of `bytes`, for unit tests of the operators.
#[cfg(test)]
pub(crate) fn test_reservation(bytes: u64, operator: &str) -> Reservation {
    MemoryBudget::new(MemoryLimit {
        bytes,
        option: "--memory",
    })
    .reserve(operator)
}

/// A reservation of an unlimited budget, for unit tests of the operators' state.
#[cfg(test)]
pub(crate) fn test_memory() -> Reservation {
    test_reservation(u64::MAX, "summarize")
}

/// The bytes the allocator takes for an allocation of `n` bytes (glibc's `malloc`, the
/// allocator of weir's builds: an 8-byte header, rounded up to 16 bytes, at least 32): a
/// key of 12 bytes takes 32, and with millions of small keys that is most of their memory.
pub(crate) fn alloc_bytes(n: usize) -> usize {
    match n {
        0 => 0,
        n => n.saturating_add(8).max(32).next_multiple_of(16),
    }
}

/// The heap bytes of `v` (beside the value itself): a string's buffer, a list's items, as
/// allocated ([`alloc_bytes`]).
pub(crate) fn value_heap(v: &Value) -> usize {
    match v {
        Value::String(s) => alloc_bytes(s.capacity()),
        Value::List(items) => {
            alloc_bytes(items.capacity() * std::mem::size_of::<Value>())
                + items.iter().map(value_heap).sum::<usize>()
        }
        _ => 0,
    }
}

/// The bytes a hash table (hashbrown's, which `std`'s maps and sets are) of `capacity`
/// (as its `capacity()` says) of items of `item` bytes allocates: its buckets (a power of
/// two, 8 per 7 items, or one more than the capacity below 8) of an item and a control byte
/// each, and a group (16) of control bytes more.
pub(crate) fn table_bytes(capacity: usize, item: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 8 {
        capacity + 1
    } else {
        (capacity.saturating_mul(8) / 7).next_power_of_two()
    };
    alloc_bytes(buckets.saturating_mul(item + 1) + 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(bytes: u64) -> MemoryLimit {
        MemoryLimit {
            bytes,
            option: "--memory",
        }
    }

    #[test]
    fn reservations_share_one_limit_and_give_back_when_dropped() {
        let budget = MemoryBudget::new(limit(1000));
        let a = budget.reserve("sort x");
        let b = budget.reserve("summarize distinct(uid)");
        a.resize(600).unwrap();
        assert_eq!(budget.used(), 600);
        let e = b.grow(500).unwrap_err().to_string();
        assert!(
            e.contains("summarize distinct(uid)") && e.contains("1000 B") && e.contains("--memory"),
            "{e}"
        );
        a.resize(100).unwrap();
        assert_eq!(budget.used(), 600);
        drop(b);
        assert_eq!(budget.used(), 100);
        drop(a);
        assert_eq!(budget.used(), 0);
        assert_eq!(budget.peak(), 1100);
    }

    #[test]
    fn a_table_is_charged_by_its_real_allocation() {
        let mut s: std::collections::HashSet<u64> = std::collections::HashSet::new();
        assert_eq!(table_bytes(s.capacity(), 8), 0);
        s.extend(0..1000u64);
        // 1000 items take 2048 buckets of 8 bytes and a control byte.
        assert_eq!(table_bytes(s.capacity(), 8), alloc_bytes(2048 * 9 + 16));
        s.insert(1000);
        assert_eq!(table_bytes(s.capacity(), 8), alloc_bytes(2048 * 9 + 16));
        // A string of 3 bytes takes the allocator's smallest chunk, a list of one value 48.
        let v = Value::List(vec![Value::String(b"abc".to_vec())]);
        assert_eq!(value_heap(&v), 48 + 32);
        assert_eq!(alloc_bytes(100), 112);
    }
}
