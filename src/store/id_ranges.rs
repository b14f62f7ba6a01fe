//! Lists of event-ID ranges as the store computes them: [`merged`] sorts and merges them,
//! [`subtract`] takes one merged list from another. Used by the repairs and by the
//! transaction that changes the segments (`rewrite.rs`: the IDs a change erases).

use std::ops::Range;

/// `ranges` sorted and merged.
pub(super) fn merged(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges.into_iter().filter(|r| r.start < r.end) {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// The IDs of `a` not in `b` (both sorted and merged), in one pass over each.
pub(super) fn subtract(a: &[Range<u64>], b: &[Range<u64>]) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    let mut j = 0;
    for r in a {
        let mut start = r.start;
        while j < b.len() && b[j].end <= start {
            j += 1;
        }
        let mut k = j;
        while k < b.len() && b[k].start < r.end {
            if b[k].start > start {
                out.push(start..b[k].start);
            }
            start = start.max(b[k].end);
            k += 1;
        }
        if start < r.end {
            out.push(start..r.end);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{merged, subtract};

    #[test]
    fn merged_sorts_joins_touching_ranges_and_drops_empty_ones() {
        assert_eq!(
            merged(vec![5..7, 0..2, 1..3, 4..4, 7..9, 3..3]),
            vec![0..3, 5..9]
        );
        assert_eq!(merged(vec![]), vec![]);
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)]
    fn subtract_ranges() {
        assert_eq!(subtract(&[0..10], &[2..4, 6..7]), vec![0..2, 4..6, 7..10]);
        assert_eq!(subtract(&[0..10], &[0..10]), vec![]);
        assert_eq!(subtract(&[0..5, 8..12], &[3..9]), vec![0..3, 9..12]);
        assert_eq!(subtract(&[0..5], &[]), vec![0..5]);
        assert_eq!(subtract(&[5..6], &[0..1, 10..20]), vec![5..6]);
    }
}
