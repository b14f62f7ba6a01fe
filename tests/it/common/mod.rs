//! The one helper module of the integration tests: every test module that needs a helper says
//! `use crate::common;` and uses the submodule of its concept.
//!
//! - [`corpus`]: the real Zeek corpus (present, skipped with a note, or a failure in CI).
//! - [`zeekref`]: the independent reference reader `../shared/tools/zeekref.py`.
//! - [`gz`]: gzip in members, and reading a file that may be gzipped.
//! - [`events`]: events of batches for comparison, and values and batches made by hand.
//! - [`store`]: schemas and batches made with `BatchBuilder`, and archive contents.
//! - [`cli`]: running the real `weir` binary and reading what it prints.
//! - [`conn_log`]: small generated Zeek `conn` logs with a unique `uid` per event.
//! - [`follow`]: `weir import --follow` started, stopped and checked per log.
//! - [`rng`]: the seeded random numbers of kill loops.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

pub mod cli;
pub mod conn_log;
pub mod corpus;
pub mod events;
pub mod follow;
pub mod gz;
pub mod rng;
pub mod store;
pub mod zeekref;

use std::path::{Path, PathBuf};

/// The repository root (the crate's manifest directory).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The example binary `name` beside the `weir` under test, when it is built: `cargo test`
/// builds the examples, a run of the test binary alone may not have. `None` with a note
/// then, and a failure under `CI=true`.
pub fn built_example(name: &str) -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_BIN_EXE_weir"));
    let path = bin.parent()?.join("examples").join(name);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "no {}",
        path.display()
    );
    println!(
        "skipped: {} not built (cargo test builds it)",
        path.display()
    );
    None
}

/// Runs the generator's `--sensor DIR` for `flows` flows: Zeek logs and `eve.json` of the
/// same flows in `dir`. `None` (with a note) when the example is not built.
pub fn generate_sensor(dir: &Path, flows: u64) -> Option<()> {
    let generate = built_example("generate")?;
    let out = std::process::Command::new(&generate)
        .args(["--events", &flows.to_string(), "--sensor"])
        .arg(dir)
        .output()
        .unwrap();
    cli::ok(&out, "generate --sensor");
    Some(())
}

/// The files under `dir` (recursively) whose extension is `ext`, sorted.
pub fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The directory `tests/fixtures`.
pub fn fixtures() -> PathBuf {
    root().join("tests/fixtures")
}

/// The file (or directory) `tests/fixtures/REL`.
pub fn fixture(rel: &str) -> PathBuf {
    fixtures().join(rel)
}

/// The Zeek TSV fixtures that between them take every path of the reader: every type,
/// negative ints, unset values, escapes (its slow path), lists, several schemas in one file,
/// CRLF line ends and no final newline, a literal one-byte separator (`#separator |`).
pub const TSV_FIXTURES: [&str; 7] = [
    "all_types.log",
    "archive-v1.log",
    "escapes.log",
    "zeek_fidelity.log",
    "concat.log",
    "crlf_nofinal.log",
    "literal_pipe_sep.log",
];
