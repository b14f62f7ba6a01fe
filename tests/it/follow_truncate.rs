//! Files that do not only grow: a batch import of a file still being written (its last line
//! without a newline waits for a later import), and, under `--follow`, copy-and-truncate
//! rotation (the rows after the truncation keep the header the file was read with, also
//! across restarts), NUL holes left by writers without `O_APPEND`, and errors kept to the
//! file they happen in (see `src/source/follow/mod.rs` and `src/source/resume.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::path::Path;

use common::cli::{export_json, run, s, text};
use common::conn_log::{self, check_event, numbers, row};

/// The events of the archive (their numbers), each checked for its values.
fn events(db: &Path) -> Vec<u64> {
    let events = export_json(db);
    let n = numbers(&events);
    for (i, e) in n.iter().zip(&events) {
        check_event(*i, e);
    }
    n
}

/// `weir import` of `file` into `db`; its stderr after checking it exited 0.
fn import(db: &Path, file: &Path) -> String {
    let out = run(&["import", "--db", s(db), s(file)]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "weir import failed: {err}");
    err
}

/// A batch import of a file whose last line is being written: that line is not stored cut
/// but left for later with a warning; once the writer finished it (and wrote 49 more), a
/// rerun imports it and the rest, each event once.
#[test]
fn batch_import_waits_for_an_unterminated_last_line() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("conn.log");
    let db = tmp.path().join("db");
    let last = row(10);
    let cut = last.len() - 9;
    std::fs::write(&file, conn_log::log(0..10) + &last[..cut]).unwrap();
    let err = import(&db, &file);
    assert!(err.contains("has no newline yet"), "{err}");
    assert_eq!(events(&db), (0..10).collect::<Vec<_>>());
    common::follow::append(
        &file,
        &(last[cut..].to_string() + &conn_log::log(11..60)[conn_log::header().len()..]),
    );
    let err = import(&db, &file);
    assert!(!err.contains("has no newline yet"), "{err}");
    assert_eq!(events(&db), (0..60).collect::<Vec<_>>());
    // Read whole now: the next run skips it.
    let err = import(&db, &file);
    assert!(err.contains("imported whole before; skipped"), "{err}");
}
