//! The catalog (`catalog.json`) on arbitrary bytes: `Catalog::load`, lookups in the range map
//! it builds, and an `Archive` opened on it (its segment files do not exist).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use weir::unstable::store::{Archive, Catalog};

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        DIR.get_or_init(|| tempfile::tempdir().expect("tempdir"))
            .path()
            .into()
    })
}

fuzz_target!(|data: &[u8]| {
    let dir = dir();
    std::fs::write(Catalog::path(dir), data).expect("write the catalog");
    let Ok(cat) = Catalog::load(dir) else { return };
    let events = cat.events();
    for id in [0, 1, events / 2, events, events.saturating_sub(1), u64::MAX] {
        let _ = cat.locate(id);
        let _ = cat.locate_from(id);
    }
    if let Ok(archive) = Archive::open(dir) {
        let _ = archive.info();
        let _ = archive.get(0);
        for b in archive.scan().take(100) {
            if b.is_err() {
                break;
            }
        }
    }
});
