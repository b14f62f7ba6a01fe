//! What the benchmarks share: the corpus's conn.log, read from `WEIR_CORPUS` (default
//! `../shared/data/zeek`), never copied into the repo.

use std::io::Read;
use std::path::PathBuf;

/// The corpus's conn.log, decompressed; `None` when the corpus is absent (the benchmark then
/// skips with a note).
pub fn conn_log() -> Option<Vec<u8>> {
    let dir = std::env::var_os("WEIR_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/zeek"));
    let gz = std::fs::read(dir.join("conn.log.gz")).ok()?;
    let mut text = Vec::new();
    flate2::read::MultiGzDecoder::new(&gz[..])
        .read_to_end(&mut text)
        .ok()?;
    Some(text)
}
