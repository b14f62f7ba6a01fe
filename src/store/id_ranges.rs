//! Lists of event-ID ranges as a repair computes them: [`merged`] sorts and merges them,
//! [`subtract`] takes one merged list from another.

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

/// The IDs of `a` not in `b` (both sorted and merged).
pub(super) fn subtract(a: &[Range<u64>], b: &[Range<u64>]) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    for r in a {
        let mut start = r.start;
        for h in b.iter().filter(|h| h.start < r.end && r.start < h.end) {
            if h.start > start {
                out.push(start..h.start);
            }
            start = start.max(h.end);
        }
        if start < r.end {
            out.push(start..r.end);
        }
    }
    out
}
