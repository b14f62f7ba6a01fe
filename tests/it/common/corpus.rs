//! The real Zeek corpus: `$WEIR_CORPUS`, else `../shared/data/zeek` beside the repo.
//!
//! A test that needs it starts with `let Some(dir) = common::corpus::dir() else { return };`.
//! Without the corpus it skips with a note, except in CI (`CI=true`), where a missing corpus is
//! a failure: CI must test against it, not skip silently.

use std::path::{Path, PathBuf};

/// What a test does about the corpus at a given place.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// It is there: use it.
    Use(PathBuf),
    /// It is missing outside CI: print this note and skip.
    Skip(String),
    /// It is missing in CI: fail with this message.
    Fail(String),
}

/// The decision for the corpus at `dir`, given whether it is `present` and the value of `CI`:
/// a pure function, so that it is tested without touching the process environment.
pub fn decide(dir: PathBuf, present: bool, ci: Option<&str>) -> Decision {
    if present {
        Decision::Use(dir)
    } else if ci == Some("true") {
        Decision::Fail(format!(
            "CI=true but the Zeek corpus is missing at {}: CI must have ../shared beside the repo \
             (or set WEIR_CORPUS)",
            dir.display()
        ))
    } else {
        Decision::Skip(format!(
            "note: Zeek corpus not found at {} (set WEIR_CORPUS): skipping this test",
            dir.display()
        ))
    }
}

/// Where the corpus should be: `$WEIR_CORPUS`, else `../shared/data/zeek` beside the repo.
pub fn location() -> PathBuf {
    std::env::var_os("WEIR_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::root().join("../shared/data/zeek"))
}

/// The corpus directory; `None`, after printing a note, when it is absent outside CI.
///
/// # Panics
/// When it is absent and `CI=true`.
pub fn dir() -> Option<PathBuf> {
    let dir = location();
    let present = dir.join("conn.log.gz").is_file();
    let ci = std::env::var("CI").ok();
    match decide(dir, present, ci.as_deref()) {
        Decision::Use(dir) => Some(dir),
        Decision::Skip(note) => {
            eprintln!("{note}");
            None
        }
        Decision::Fail(message) => panic!("{message}"),
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
