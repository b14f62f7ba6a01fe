//! Unsigned LEB128 varints: the lengths inside stored columns and dictionaries. A leaf of
//! `segment/`.

/// Appends `v` as an unsigned LEB128 varint.
pub(crate) fn push_varint(out: &mut Vec<u8>, mut v: usize) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads an unsigned LEB128 varint of at most 32 bits at `*pos`.
pub(crate) fn read_varint(buf: &[u8], pos: &mut usize) -> Result<usize, String> {
    let mut v = 0usize;
    let mut shift = 0;
    loop {
        let b = *buf.get(*pos).ok_or("a length runs past the stored bytes")?;
        *pos += 1;
        if shift > 28 {
            return Err("a length does not fit in 32 bits".into());
        }
        v |= ((b & 0x7f) as usize) << shift;
        shift += 7;
        if b < 0x80 {
            return Ok(v);
        }
    }
}
