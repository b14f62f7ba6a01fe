//! A filter of addresses in front of a hash table of them: one bit per slot of a table
//! [`AddrFilter::BITS_PER_ADDR`] times as long as the members, set for the slot of each
//! member. An address whose bit is clear is no member, known without probing the table.
//!
//! Matching an indicator set tests every address of every event, nearly none of them a
//! member. A table of 100,000 addresses (about 4 MiB) misses the processor's cache on almost
//! every probe; its filter (512 KiB) far less often, and it lets through about one in 32 of
//! the others. Used by long `in [...]` lists of addresses (`literal.rs`), which a retro match
//! of an indicator set searches with. (The live matcher's tables, `intel/matcher.rs`, gained
//! nothing measurable from it: an import of W1000 with 1 M indicators cost +13% and +16%
//! with and without it, medians of 5 pairs.)

/// The filter; see the module docs. Empty (no member) when built from no address.
#[derive(Debug, Default, Clone)]
pub(crate) struct AddrFilter {
    /// The bits; empty for no member.
    bits: Vec<u64>,
    /// A member's slot is the top `64 - shift` bits of its mix.
    shift: u32,
}

impl AddrFilter {
    /// Filter bits per member (rounded up to a power of two in all).
    pub const BITS_PER_ADDR: usize = 32;

    /// The filter of `members` (addresses as 128 bits, an IPv4 address in its IPv4-mapped
    /// form), `count` of them.
    pub(crate) fn new(count: usize, members: impl IntoIterator<Item = u128>) -> AddrFilter {
        if count == 0 {
            return AddrFilter::default();
        }
        let slots = (count * Self::BITS_PER_ADDR).next_power_of_two().max(64);
        let mut f = AddrFilter {
            bits: vec![0u64; slots / 64],
            shift: 64 - slots.trailing_zeros(),
        };
        for x in members {
            let s = f.slot(x);
            f.bits[s / 64] |= 1 << (s % 64);
        }
        f
    }

    /// The slot of an address: its two halves folded and multiplied by 2^64 over the golden
    /// ratio (Fibonacci hashing), whose top bits depend on every input bit.
    #[inline]
    fn slot(&self, x: u128) -> usize {
        let folded = (x as u64) ^ ((x >> 64) as u64).rotate_left(32);
        (folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// Whether `x` may be a member: `false` only for no member, `true` for every member and
    /// about one in [`AddrFilter::BITS_PER_ADDR`] of the others.
    #[inline]
    pub(crate) fn may_contain(&self, x: u128) -> bool {
        if self.bits.is_empty() {
            return false;
        }
        let s = self.slot(x);
        self.bits[s / 64] >> (s % 64) & 1 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every member passes; of other addresses, about the promised share.
    #[test]
    fn members_pass_and_few_others_do() {
        let members: Vec<u128> = (0..10_000u128)
            .map(|i| (0xffff_u128 << 32) | (i * 7919 % (1 << 32)))
            .chain((0..1000u128).map(|i| 0x2001_0db8_u128 << 96 | i))
            .collect();
        let f = AddrFilter::new(members.len(), members.iter().copied());
        assert!(members.iter().all(|&x| f.may_contain(x)));
        let others = (0..100_000u128).map(|i| (0xffff_u128 << 32) | (0x0a00_0000 + i));
        let passed = others.filter(|&x| f.may_contain(x)).count();
        // One in 32 expected (3,125); a filter that passes everything fails here.
        assert!(passed < 100_000 / 16, "{passed} of 100,000 passed");
        let empty = AddrFilter::new(0, []);
        assert!(!empty.may_contain(0));
    }
}
