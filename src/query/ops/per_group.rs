//! One item per group, in chunks: the columns of a table of groups (`groups.rs`,
//! `group_values.rs`, `group_accs.rs`).
//!
//! Chunks of [`CHUNK`] items: growing moves nothing, and only the last chunk has room to
//! spare (a table of millions of groups in `Vec`s that double had up to half of it unused,
//! and copied all of it at each doubling). The first chunk grows as a `Vec` does, so a small
//! table stays small.

/// How many items a chunk holds.
pub(super) const CHUNK: usize = 4096;

/// See the [module docs](self).
#[derive(Debug, Clone)]
pub(super) struct PerGroup<T> {
    chunks: Vec<Vec<T>>,
    /// How many items there are.
    len: usize,
}

impl<T> Default for PerGroup<T> {
    fn default() -> Self {
        PerGroup {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> PerGroup<T> {
    /// `len` items, the `g`-th `item(g)`.
    pub(super) fn from_fn(len: usize, item: impl FnMut(usize) -> T) -> Self {
        let mut p = PerGroup::default();
        (0..len).map(item).for_each(|x| p.push(x));
        p
    }

    /// How many items there are.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The heap bytes it holds: every chunk after the first was made with room for
    /// [`CHUNK`] items and never grows, so this reads two capacities, not every chunk's.
    pub(super) fn heap(&self) -> usize {
        let items = match self.chunks.first() {
            None => 0,
            Some(first) => first.capacity() + (self.chunks.len() - 1) * CHUNK,
        };
        items * std::mem::size_of::<T>() + self.chunks.capacity() * std::mem::size_of::<Vec<T>>()
    }

    /// Appends the next group's item.
    #[inline]
    pub(super) fn push(&mut self, item: T) {
        self.len += 1;
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(item),
            _ => {
                let room = if self.chunks.is_empty() { 0 } else { CHUNK };
                let mut chunk = Vec::with_capacity(room);
                chunk.push(item);
                self.chunks.push(chunk);
            }
        }
    }

    /// Group `g`'s item.
    #[inline]
    pub(super) fn get(&self, g: usize) -> Option<&T> {
        self.chunks.get(g / CHUNK)?.get(g % CHUNK)
    }

    /// Group `g`'s item.
    #[inline]
    pub(super) fn get_mut(&mut self, g: usize) -> Option<&mut T> {
        self.chunks.get_mut(g / CHUNK)?.get_mut(g % CHUNK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_past_a_chunk_keep_their_places() {
        let n = 2 * CHUNK + 5;
        let mut p = PerGroup::from_fn(n, |g| g * 3);
        assert_eq!(p.len(), n);
        assert_eq!(p.get(CHUNK), Some(&(CHUNK * 3)));
        *p.get_mut(n - 1).unwrap_or(&mut 0) += 1;
        assert_eq!(p.get(n - 1), Some(&((n - 1) * 3 + 1)));
        assert_eq!(p.get(n), None);
        assert!((0..n).all(|g| p.get(g) == Some(&(g * 3 + usize::from(g == n - 1)))));
        // A full chunk is never grown: its capacity is what it was made with.
        assert!(p.chunks[1..].iter().all(|c| c.capacity() == CHUNK));
        let each: usize = p.chunks.iter().map(|c| c.capacity() * 8).sum();
        assert_eq!(
            p.heap(),
            each + p.chunks.capacity() * std::mem::size_of::<Vec<usize>>()
        );
    }
}
