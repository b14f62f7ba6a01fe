//! The permissions of archive files (issue 55, item 10): under a process umask of 022 an
//! archive's directory is 0700 and its files (segments, index files, `catalog.json`, the
//! write-ahead log, `damaged/` and what repair writes) 0600; `--umask 027` shares them with
//! the group (0750 and 0640); an existing archive's directory decides for the files added.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::common::cli::{ok, s, weir};
use crate::common::conn_log;

/// Runs `weir ARGS` under a process umask of 022 (the usual shell's).
fn run_under_022(args: &[&str]) -> Output {
    let bin = weir().get_program().to_owned();
    std::process::Command::new("sh")
        .arg("-c")
        .arg("umask 022; exec \"$0\" \"$@\"")
        .arg(bin)
        .args(args)
        .env_remove("WEIR_DB")
        .stdin(Stdio::null())
        .output()
        .expect("sh runs weir")
}

/// Every path under `dir` (itself included) with its permission bits.
fn modes(dir: &Path) -> Vec<(PathBuf, u32)> {
    let mut out = vec![(dir.to_path_buf(), mode(dir))];
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(modes(&p));
        } else {
            out.push((p.clone(), mode(&p)));
        }
    }
    out
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// Imports 3,000 conn events into `db` (a few segments, a `.idx` each, the catalog and the
/// log), with `extra` arguments.
fn import(tmp: &Path, db: &Path, extra: &[&str]) {
    let log = tmp.join("conn.log");
    std::fs::write(&log, conn_log::log(0..3000)).unwrap();
    let mut args = vec!["import", "--db", s(db), "--max-segment-size", "1MiB"];
    args.extend_from_slice(extra);
    args.push(s(&log));
    ok(&run_under_022(&args), "import");
}

/// Checks that every directory under `db` has mode `dir` and every file `file`, and that
/// the kinds of files the item names are among them.
fn check(db: &Path, dir: u32, file: u32) {
    let all = modes(db);
    for (p, m) in &all {
        let want = if p.is_dir() { dir } else { file };
        assert_eq!(*m, want, "{} has mode {m:o}, not {want:o}", p.display());
    }
    for kind in [".seg", ".idx", "catalog.json", "/wal", "damaged/"] {
        assert!(
            all.iter().any(|(p, _)| p.to_string_lossy().contains(kind)),
            "no {kind} file among {all:?}"
        );
    }
}

/// Damages the catalog, so that `verify --repair` moves it into `damaged/` and writes a new
/// one.
fn repair_catalog(db: &Path, extra: &[&str]) {
    std::fs::write(db.join("catalog.json"), b"{ not json").unwrap();
    let mut args = vec!["verify", "--repair", "--db", s(db)];
    args.extend_from_slice(extra);
    ok(&run_under_022(&args), "verify --repair");
}

#[test]
fn archive_files_are_private_under_umask_022() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("weir.db");
    import(tmp.path(), &db, &[]);
    // A second import adds files to the existing archive: the directory's mode decides.
    ok(
        &run_under_022(&["import", "--db", s(&db), s(&tmp.path().join("conn.log"))]),
        "second import",
    );
    repair_catalog(&db, &[]);
    check(&db, 0o700, 0o600);
}

#[test]
fn umask_027_shares_the_archive_with_the_group() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("weir.db");
    import(tmp.path(), &db, &["--umask", "027"]);
    repair_catalog(&db, &["--umask", "027"]);
    check(&db, 0o750, 0o640);
}

#[test]
fn an_archive_directory_shared_by_chmod_gives_its_new_files_group_read() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("weir.db");
    import(tmp.path(), &db, &[]);
    for (p, m) in modes(&db) {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(m | (m & 0o500) >> 3))
            .unwrap();
    }
    repair_catalog(&db, &[]);
    check(&db, 0o750, 0o640);
}

#[test]
fn a_umask_that_is_not_octal_is_a_usage_error() {
    let out = run_under_022(&["info", "--umask", "9", "--db", "/nonexistent"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a umask"),
        "{out:?}"
    );
}
