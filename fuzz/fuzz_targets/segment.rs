//! The segment reader and verifier on arbitrary bytes, written to a file (segments are
//! memory-mapped files; there is no from-bytes API): open, verify every batch, and read every
//! row of every batch that verifies (decompressing compressed ones: format 3), and its sketch;
//! `weir inspect` on the same file.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use weir::unstable::segment::{inspect, Segment};
use weir::unstable::value::{check_row, decode_row};

fn path() -> &'static PathBuf {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = DIR.get_or_init(|| tempfile::tempdir().expect("tempdir"));
        dir.path().join("fuzz.seg")
    })
}

fuzz_target!(|data: &[u8]| {
    let path = path();
    // A new file each time: a segment is mapped, and a mapped file must not change.
    let _ = std::fs::remove_file(path);
    std::fs::write(path, data).expect("write the input");
    let _ = inspect(path);
    let Ok(seg) = Segment::open(path) else { return };
    let _ = seg.verify_all();
    let _ = (seg.uuid(), seg.intervals(), seg.events(), seg.byte_size());
    for i in 0..seg.len() {
        let ids = seg.batch_ids(i).expect("a batch below len() has IDs");
        let _ = seg.find(ids.start);
        let _ = seg.first_batch_from(ids.start);
        let _ = seg.batch_storage(i);
        if let Some(sk) = seg.sketch(i) {
            let _ = (sk.may_contain(ids.start), sk.bloom_bytes(), sk.range_count());
            let _ = sk.range(0);
        }
        let Some(Ok(b)) = seg.batch(i) else { continue };
        let _ = b.codec();
        assert_eq!(b.id_range(), ids);
        let types: Vec<_> = b.schema().fields.iter().map(|f| f.ty.clone()).collect();
        assert_eq!(b.rows().len(), b.len());
        for row in b.rows() {
            if check_row(row, &types).is_ok() {
                decode_row(row, &types).expect("a checked row decodes");
            }
        }
        let _ = b.to_batch().to_values();
    }
    let _ = seg.find(u64::MAX);
    let _ = seg.first_batch_from(u64::MAX);
});
