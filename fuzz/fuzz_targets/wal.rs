//! Write-ahead log replay on arbitrary bytes. Input: a u16 LE length, that many bytes of WAL
//! file, then the bytes of the active segment's file. The log is read once to learn which
//! segment its records point into; the rest of the input becomes that segment's temporary file
//! (`segments/.<uuid>.seg.tmp`, only its end matters). Then the log is read again with the rows,
//! read by an `Archive` (which replays the active segment from the log), and replayed by a
//! writer (`Store::open_writer`), which may cut a torn tail.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir::unstable::store::{Archive, Store, StoreOptions};
use weir::unstable::wal::{Entry, SyncPolicy, WalReader};

fuzz_target!(|data: &[u8]| {
    let [a, b, rest @ ..] = data else { return };
    let n = (u16::from_le_bytes([*a, *b]) as usize).min(rest.len());
    let (wal, seg) = rest.split_at(n);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path();
    let wal_path = db.join("wal");
    std::fs::write(&wal_path, wal).expect("write the log");
    let segments = db.join(weir::unstable::store::SEGMENTS_DIR);
    std::fs::create_dir(&segments).expect("mkdir");

    let Ok(mut r) = WalReader::open(&wal_path) else {
        return;
    };
    while let Ok(Some(_)) = r.next_entry(u64::MAX) {}
    if let Some(uuid) = r.named_segments().first() {
        let name = format!(".{}.tmp", weir::unstable::segment::file_name(uuid));
        std::fs::write(segments.join(name), seg).expect("write the segment");
    }

    let Ok(mut r) = WalReader::open(&wal_path) else {
        return;
    };
    let sealed_below = r.base_id().saturating_add(seg.len() as u64 % 7);
    let mut end = r.base_id();
    loop {
        match r.next_entry(sealed_below) {
            Ok(Some((_, Entry::Batch(b)))) => {
                assert_eq!(b.id(), end, "records are contiguous");
                end += b.len() as u64;
                let _ = b.to_values();
            }
            Ok(Some((_, Entry::Sealed(ids)))) => {
                assert_eq!(ids.start, end, "records are contiguous");
                end = ids.end;
            }
            Ok(None) | Err(_) => break,
        }
    }

    if let Ok(archive) = Archive::open(db) {
        for b in archive.scan().take(10_000) {
            let Ok(b) = b else { break };
            let _ = b.to_batch().to_values();
        }
        let _ = archive.verify();
    }

    let opts = StoreOptions {
        max_segment_size: 64 << 10,
        sync: SyncPolicy::Never,
        ..StoreOptions::default()
    };
    if let Ok((store, _)) = Store::open_writer(db, opts) {
        drop(store);
    }
});
