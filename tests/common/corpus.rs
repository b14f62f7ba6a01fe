//! The real Zeek corpus: `$WEIR_CORPUS`, else `../shared/data/zeek` beside the repo.
//!
//! A test that needs it starts with `let Some(dir) = common::corpus::dir() else { return };`.
//! Without the corpus it skips with a note.

use std::path::{Path, PathBuf};

/// Where the corpus should be: `$WEIR_CORPUS`, else `../shared/data/zeek` beside the repo.
pub fn location() -> PathBuf {
    std::env::var_os("WEIR_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::root().join("../shared/data/zeek"))
}

/// The corpus directory; `None`, after printing a note, when it is absent.
pub fn dir() -> Option<PathBuf> {
    let dir = location();
    if dir.join("conn.log.gz").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "note: Zeek corpus not found at {} (set WEIR_CORPUS): skipping this test",
            dir.display()
        );
        None
    }
}

/// Every log file of the corpus (`*.log.gz`, `*.log`, `*.json`, also in `unit/`), sorted.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for d in [dir.to_path_buf(), dir.join("unit")] {
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten() {
                let p = e.path();
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if name.ends_with(".log") || name.ends_with(".log.gz") || name.ends_with(".json") {
                    files.push(p);
                }
            }
        }
    }
    files.sort();
    files
}
