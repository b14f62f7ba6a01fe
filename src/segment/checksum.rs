//! The checksum of a stored batch's rows (every format): CRC-32 (IEEE) over its `data`, then
//! its offsets as little-endian u32. A leaf: the writer computes it, the reader and the
//! repair check it.

/// CRC-32 of a batch: over `data`, then the offsets as little-endian u32.
pub(crate) fn batch_checksum(data: &[u8], offsets: &[u32]) -> u32 {
    checksum_with_data_crc(crc32fast::hash(data), data.len(), offsets)
}

/// [`batch_checksum`] continuing from the CRC of the data.
pub(crate) fn checksum_with_data_crc(data_crc: u32, data_len: usize, offsets: &[u32]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial_len(data_crc, data_len as u64);
    let mut buf = [0u8; 4096];
    for chunk in offsets.chunks(1024) {
        for (o, out) in chunk.iter().zip(buf.chunks_exact_mut(4)) {
            out.copy_from_slice(&o.to_le_bytes());
        }
        h.update(&buf[..chunk.len() * 4]);
    }
    h.finalize()
}
