//! gzip for test inputs, and reading a file that may be gzipped.

use std::io::{Read, Write};
use std::path::Path;

/// The `parts`, each as one gzip member, concatenated.
pub fn gzip(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(p).unwrap();
        out.extend(e.finish().unwrap());
    }
    out
}

/// `data` as gzip, in `parts` members.
pub fn gzip_members(data: &[u8], parts: usize) -> Vec<u8> {
    let chunks: Vec<&[u8]> = data.chunks(data.len().div_ceil(parts)).collect();
    gzip(&chunks)
}

/// Reads a file, gunzipping it (all members) when it is gzip.
pub fn read_maybe_gz(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out
    } else {
        raw
    }
}
