//! The Bloom filters of segments: the hash of a value ([`value_hash`], documented with the
//! sketch format in [`super::sketch`]) and the filter's probes. A leaf of `segment/`: the
//! sketches, the blocks' filters and the dictionaries' hashes all build on it.

/// The tag of a string-like value in [`value_hash`].
pub const TAG_STRING: u8 = b's';
/// The tag of an address value in [`value_hash`].
pub const TAG_ADDR: u8 = b'a';

/// The hash of a value in a sketch's Bloom filter (see the module docs): 8 bytes per step.
pub fn value_hash(tag: u8, bytes: &[u8]) -> u64 {
    const M: u64 = 0xff51_afd7_ed55_8ccd;
    let mut h = 0x9e37_79b9_7f4a_7c15 ^ tag as u64 ^ ((bytes.len() as u64) << 8);
    let mut chunks = bytes.chunks_exact(8);
    for c in chunks.by_ref() {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h ^ w).wrapping_mul(M).rotate_left(29);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        // The last bytes, zero-padded: from an 8-byte load that ends with them when the value
        // has that many bytes (no copy of a variable length), else byte by byte.
        let w = match bytes.len().checked_sub(8).and_then(|at| bytes.get(at..)) {
            Some(tail) => le_u64(tail) >> (8 * (8 - rest.len())),
            None => le_short(rest),
        };
        h = (h ^ w).wrapping_mul(M).rotate_left(29);
    }
    // MurmurHash3's fmix64.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The first 8 bytes of `b` (at least 8) as a little-endian u64.
#[inline(always)]
pub(crate) fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// The bytes of `b` (under 8) as a little-endian u64, zero-padded.
#[inline(always)]
pub(crate) fn le_short(b: &[u8]) -> u64 {
    b.iter()
        .enumerate()
        .fold(0u64, |k, (i, &x)| k | (x as u64) << (8 * i))
}

/// The bit positions of probe `0..k` of hash `h` in a filter of `m` bits.
#[inline(always)]
pub(crate) fn probes(h: u64, k: u8, m: u64) -> impl Iterator<Item = u64> {
    let h1 = h as u32;
    let h2 = (h >> 32) as u32 | 1;
    (0..k as u32).map(move |i| (h1.wrapping_add(i.wrapping_mul(h2)) as u64 * m) >> 32)
}

/// Whether a Bloom filter (`bloom`, `k` probes) may hold the value hashed to `h`; an empty
/// filter holds nothing.
pub fn bloom_may_contain(bloom: &[u8], k: u8, h: u64) -> bool {
    let m = 8 * bloom.len() as u64;
    if m == 0 {
        return false;
    }
    probes(h, k, m).all(|j| bloom[(j / 8) as usize] & (1 << (j % 8)) != 0)
}

/// Sets the bits of the value hashed to `h` in a Bloom filter (`bloom`, not empty; `k`
/// probes), as [`bloom_may_contain`] probes them.
pub(crate) fn bloom_insert(bloom: &mut [u8], k: u8, h: u64) {
    let m = 8 * bloom.len() as u64;
    for j in probes(h, k, m) {
        bloom[(j / 8) as usize] |= 1 << (j % 8);
    }
}
