//! Following by file identity (issue 32): one test per case seen on a zeekctl-style sensor.
//!
//! Each test writes Zeek TSV logs whose every line has a unique uid (file `k`'s events are
//! numbered from `k * STRIDE`), follows them with the real binary, and checks with
//! `weir export` that every line is in the archive exactly once, in its file's order.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::cli::{s, wait_for, weir};
use common::conn_log::{header, row};
use common::follow::{append, count, follow, follow_command, stop, streams, CATCH_UP};

const STRIDE: u64 = 1_000_000;

/// The header of log `name` (its `#path`), opened at `open` (its `#open` line).
fn log_header(name: &str, open: &str) -> String {
    header().replace("#path\tconn\n", &format!("#path\t{name}\n#open\t{open}\n"))
}

fn rows(k: u64, range: std::ops::Range<u64>) -> String {
    range.map(|i| row(k * STRIDE + i)).collect()
}

fn gzip(text: &str) -> Vec<u8> {
    common::gz::gzip(&[text.as_bytes()])
}

/// Waits until the archive holds `n` events, then lets a few more polls pass: a duplicate
/// shows up as more.
fn wait_count(db: &Path, n: u64) {
    wait_for(&format!("{n} events in the archive"), CATCH_UP, || {
        count(db) >= n
    });
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(count(db), n, "events in the archive");
}

/// Log `name` holds exactly the events `want`, in this order.
fn check(db: &Path, name: &str, want: Vec<u64>) {
    let got = streams(db);
    let g = got.get(name).cloned().unwrap_or_default();
    assert_eq!(g.len(), want.len(), "{name}: events ({got:?})");
    assert_eq!(g, want, "{name}: events out of order, missing or twice");
}

fn ids(k: u64, range: std::ops::Range<u64>) -> Vec<u64> {
    range.map(|i| k * STRIDE + i).collect()
}

/// Case 1: weir is down while zeekctl moves `current/conn.log` into a dated directory and
/// gzips it; with a pattern covering both, the rotated file is found by its content and read
/// on from its checkpoint inside the decompressed text: every line once, no warning.
#[test]
fn zeekctl_rotation_while_down_is_read_on_inside_the_gzip() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    let current = logs.join("current");
    std::fs::create_dir_all(&current).unwrap();
    let db = tmp.path().join("db");
    let conn = current.join("conn.log");
    let first = log_header("conn", "2009-11-18-08-00-00") + &rows(0, 0..100);
    append(&conn, &first);
    let pattern = format!("{}/**/*.log*", s(&logs));
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 100);
    stop(child);
    // While weir is down: the hour's last lines, then the rotation and compression.
    let tail = rows(0, 100..150);
    append(&conn, &tail);
    let dated = logs.join("2009-11-18");
    std::fs::create_dir(&dated).unwrap();
    let whole = first + &tail;
    std::fs::write(dated.join("conn.08:00:00-09:00:00.log.gz"), gzip(&whole)).unwrap();
    std::fs::remove_file(&conn).unwrap();
    append(
        &conn,
        &(log_header("conn", "2009-11-18-09-00-00") + &rows(1, 0..30)),
    );
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 180);
    let err = stop(child);
    assert!(!err.contains("not found any more"), "{err}");
    let mut want = ids(0, 0..150);
    want.extend(ids(1, 0..30));
    check(&db, "conn", want);
    // And once more: nothing is read again.
    let child = follow(&db, &[&pattern], &[]);
    std::thread::sleep(Duration::from_millis(1200));
    stop(child);
    assert_eq!(count(&db), 180);
}

/// Case 1: a pattern that matches a rotated file twice, as `.log` and as the `.log.gz` made
/// of it, imports it once.
#[test]
fn a_file_and_its_gzip_are_one_file() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    let dated = logs.join("2009-11-18");
    std::fs::create_dir_all(&dated).unwrap();
    let db = tmp.path().join("db");
    let text = log_header("conn", "2009-11-18-08-00-00") + &rows(0, 0..40);
    std::fs::write(dated.join("conn.08:00:00-09:00:00.log"), &text).unwrap();
    std::fs::write(dated.join("conn.08:00:00-09:00:00.log.gz"), gzip(&text)).unwrap();
    let pattern = format!("{}/**/*.log*", s(&logs));
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 40);
    stop(child);
    // A restart finds both finished.
    let child = follow(&db, &[&pattern], &[]);
    std::thread::sleep(Duration::from_millis(1200));
    stop(child);
    check(&db, "conn", ids(0, 0..40));
}

/// Case 2: following starts while the file holds 40 bytes of its header (no fingerprint yet);
/// it is filled and read, then truncated and rewritten past the old position before the next
/// poll. The rewrite is seen (the first data line changed) and read whole.
#[test]
fn a_short_fingerprint_is_not_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.path().join("db");
    let path = logs.join("conn.log");
    let a = log_header("conn", "2009-11-18-08-00-00") + &rows(0, 0..20);
    append(&path, &a[..40]);
    let pattern = format!("{}/*.log", s(&logs));
    let child = follow(&db, &[&pattern], &[]);
    std::thread::sleep(Duration::from_millis(700));
    append(&path, &a[40..]);
    wait_count(&db, 20);
    // Copy-and-truncate, refilled with a longer log at once.
    let b = log_header("conn", "2009-11-18-09-00-00") + &rows(1, 0..30);
    std::fs::write(&path, &b).unwrap();
    wait_count(&db, 50);
    stop(child);
    let mut want = ids(0, 0..20);
    want.extend(ids(1, 0..30));
    check(&db, "conn", want);
}

/// Case 3: a finished file that reappears under a matching name is not read again
/// (`mv a.log a.log.tmp; sleep 1; mv a.log.tmp a.1.log`).
#[test]
fn a_finished_file_stays_finished_under_a_new_name() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.path().join("db");
    let a = logs.join("a.log");
    append(
        &a,
        &(log_header("a", "2009-11-18-08-00-00") + &rows(0, 0..25)),
    );
    let pattern = format!("{}/*.log", s(&logs));
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 25);
    let tmpname = logs.join("a.log.tmp");
    std::fs::rename(&a, &tmpname).unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    std::fs::rename(&tmpname, logs.join("a.1.log")).unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    // A restart does not read it either.
    stop(child);
    let child = follow(&db, &[&pattern], &[]);
    std::thread::sleep(Duration::from_millis(1000));
    stop(child);
    check(&db, "a", ids(0, 0..25));
}

/// Case 4: a followed `.gz` that gets more members: each member is read once, also across a
/// restart; a member that is only half there is waited for and does not end the import (nor
/// stop the other files).
#[test]
fn gzip_members_appended_later_are_read_once() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.path().join("db");
    let gz = logs.join("a.log.gz");
    let plain = logs.join("b.log");
    let add = |bytes: &[u8]| {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&gz)
            .unwrap();
        f.write_all(bytes).unwrap();
    };
    add(&gzip(
        &(log_header("a", "2009-11-18-08-00-00") + &rows(0, 0..20)),
    ));
    append(
        &plain,
        &(log_header("b", "2009-11-18-08-00-00") + &rows(1, 0..5)),
    );
    let patterns = [format!("{}/*.gz", s(&logs)), format!("{}/*.log", s(&logs))];
    let pats: Vec<&str> = patterns.iter().map(String::as_str).collect();
    let child = follow(&db, &pats, &[]);
    wait_count(&db, 25);
    // A second member, written in two halves: the first half alone is waited for.
    let second = gzip(&rows(0, 20..50));
    let half = second.len() / 2;
    add(&second[..half]);
    std::thread::sleep(Duration::from_millis(800));
    append(&plain, &rows(1, 5..10));
    wait_count(&db, 30);
    add(&second[half..]);
    wait_count(&db, 60);
    stop(child);
    // A third member while weir is down, read after the restart.
    add(&gzip(&rows(0, 50..60)));
    let child = follow(&db, &pats, &[]);
    wait_count(&db, 70);
    stop(child);
    check(&db, "a", ids(0, 0..60));
    check(&db, "b", ids(1, 0..10));
}

/// Case 6: more growing files than descriptors: under `ulimit -n 64`, 300 files, each
/// appended to after it was read, every line once; the import keeps running.
#[test]
fn many_files_under_a_small_descriptor_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.path().join("db");
    const FILES: u64 = 300;
    for k in 0..FILES {
        append(
            &logs.join(format!("f{k}.log")),
            &(log_header("f", "2009-11-18-08-00-00") + &rows(k, 0..3)),
        );
    }
    let pattern = format!("{}/*.log", s(&logs));
    let cmd = follow_command(&db, &[&pattern], &[]);
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| format!("'{}'", a.to_str().unwrap()))
        .collect();
    let script = format!(
        "ulimit -n 64 && exec '{}' {}",
        cmd.get_program().to_str().unwrap(),
        args.join(" ")
    );
    let child = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_count(&db, FILES * 3);
    for k in 0..FILES {
        append(&logs.join(format!("f{k}.log")), &rows(k, 3..5));
    }
    wait_count(&db, FILES * 5);
    stop(child);
    let mut got: Vec<u64> = streams(&db).remove("f").unwrap();
    got.sort_unstable();
    let mut want: Vec<u64> = (0..FILES).flat_map(|k| ids(k, 0..5)).collect();
    want.sort_unstable();
    assert_eq!(got, want);
}

/// Case 7: one over-long line under `--on-error skip` is reported and skipped; the file goes
/// on, and a restart does not stop at it.
#[test]
fn an_over_long_line_is_skipped_when_following() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.path().join("db");
    let path = logs.join("a.log");
    append(
        &path,
        &(log_header("a", "2009-11-18-08-00-00") + &rows(0, 0..10)),
    );
    let pipeline = tmp.path().join("p.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[sources.logs]\ntype = \"file\"\npaths = [\"{}/*.log\"]\nfollow = true\n\
             on_error = \"skip\"\nmax_line_length = \"1KiB\"\n\n\
             [sinks.archive]\ntype = \"archive\"\ninputs = [\"logs\"]\ndb = \"{}\"\n",
            s(&logs),
            s(&db)
        ),
    )
    .unwrap();
    let start = || {
        weir()
            .args(["run", s(&pipeline)])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let child = start();
    wait_count(&db, 10);
    // The long line arrives in parts: a poll sees more than the maximum without a newline.
    append(&path, &"x".repeat(3000));
    std::thread::sleep(Duration::from_millis(800));
    append(&path, &("x".repeat(100) + "\n" + &rows(0, 10..20)));
    wait_count(&db, 20);
    let err = stop(child);
    assert!(err.contains("longer than the maximum"), "{err}");
    append(&path, &rows(0, 20..25));
    let child = start();
    wait_count(&db, 25);
    stop(child);
    check(&db, "a", ids(0, 0..25));
}
