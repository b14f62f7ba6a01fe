//! Files that do not only grow: a batch import of a file still being written (its last line
//! without a newline waits for a later import), and, under `--follow`, copy-and-truncate
//! rotation (the rows after the truncation keep the header the file was read with, also
//! across restarts), NUL holes left by writers without `O_APPEND`, and errors kept to the
//! file they happen in (see `src/source/follow/mod.rs` and `src/source/resume.rs`).
//!
//! **Kill loop.** [`follow_kill_loop_with_copy_truncate_and_holes`] kills a followed import
//! at random moments while logs are appended to, rotated by rename, and copied and truncated
//! (under writers with and without `O_APPEND`), [`KILLS`] times by default;
//! `WEIR_TRUNC_KILLS=N` runs N kills (at least 200 in the long mode) and `WEIR_TRUNC_SEED`
//! replays a run.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use common::cli::{export_json, run, s, text};
use common::conn_log::{self, check_event, numbers, row};
use common::follow::{append, follow, log_header, stop, streams, wait_running};
use common::rng::{kills_from_env, Rng};

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
/// rerun imports it and the rest, each event once. A small file (the sequential parser) and
/// one of more than 1 MiB (the parallel one).
#[test]
fn batch_import_waits_for_an_unterminated_last_line() {
    for n in [10, 12_000] {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("conn.log");
        let db = tmp.path().join("db");
        let last = row(n);
        let cut = last.len() - 9;
        std::fs::write(&file, conn_log::log(0..n) + &last[..cut]).unwrap();
        let err = import(&db, &file);
        assert!(err.contains("has no newline yet"), "{n}: {err}");
        assert_eq!(events(&db), (0..n).collect::<Vec<_>>());
        let rest = conn_log::log(n + 1..n + 50);
        append(
            &file,
            &(last[cut..].to_string() + &rest[conn_log::header().len()..]),
        );
        let err = import(&db, &file);
        assert!(!err.contains("has no newline yet"), "{n}: {err}");
        assert_eq!(events(&db), (0..n + 50).collect::<Vec<_>>());
        // Read whole now: the next run skips it.
        let err = import(&db, &file);
        assert!(err.contains("imported whole before; skipped"), "{n}: {err}");
    }
}

/// Uids of log `k` start at `k * STRIDE`.
const STRIDE: u64 = 1_000_000;

/// Rows `range` of log `k`.
fn rows(k: u64, range: std::ops::Range<u64>) -> String {
    range.map(|i| row(k * STRIDE + i)).collect()
}

/// Checks that log `name_k` holds exactly rows `0..n` of log `k`, in order, for each `(k, n)`.
fn check(db: &Path, expected: &[(u64, u64)]) {
    let got = streams(db);
    let want: BTreeMap<String, Vec<u64>> = expected
        .iter()
        .map(|&(k, n)| (format!("f{k}"), (0..n).map(|i| k * STRIDE + i).collect()))
        .collect();
    assert_eq!(got, want);
}

/// Copies `path` aside (as logrotate's `copytruncate` does) and truncates it to 0.
fn copy_truncate(path: &Path, to: &Path) {
    std::fs::copy(path, to).unwrap();
    truncate(path);
}

/// Truncates `path` to 0.
fn truncate(path: &Path) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(0)
        .unwrap();
}

/// A log `f0.log` in `tmp/logs` with rows `0..n` of log 0, and the archive `tmp/db` to follow
/// it into: the directory, the archive and the log.
fn one_log(tmp: &Path, n: u64) -> (PathBuf, PathBuf, PathBuf) {
    let logs = tmp.join("logs");
    std::fs::create_dir(&logs).unwrap();
    let a = logs.join("f0.log");
    append(&a, &(log_header("f0") + &rows(0, 0..n)));
    (logs, tmp.join("db"), a)
}

/// Two followed logs `f0.log` and `f1.log` in `tmp/logs`, 10 rows each, and `weir import
/// --follow ARGS` of them into `tmp/db`, waited for until it holds all 20 events: the
/// directory, the archive, both logs and the process.
fn follow_two_logs(tmp: &Path, args: &[&str]) -> (PathBuf, PathBuf, PathBuf, PathBuf, Child) {
    let logs = tmp.join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.join("db");
    let (a, b) = (logs.join("f0.log"), logs.join("f1.log"));
    append(&a, &(log_header("f0") + &rows(0, 0..10)));
    append(&b, &(log_header("f1") + &rows(1, 0..10)));
    let pattern = format!("{}/*.log", s(&logs));
    let mut child = follow(&db, &[&pattern], args);
    wait_running(&db, 20, &mut child);
    (logs, db, a, b, child)
}

/// Two followed logs; `f0.log` is copied aside and truncated, and Zeek writes on into it
/// (rows without a header): they are read with the header it had, under `--on-error fail`
/// (the default) and `skip`, and `f1.log` flows on all along.
#[test]
fn copy_and_truncate_keeps_the_header_under_fail_and_skip() {
    for on_error in ["fail", "skip"] {
        let tmp = tempfile::tempdir().unwrap();
        let (logs, db, a, b, mut child) = follow_two_logs(tmp.path(), &["--on-error", on_error]);
        copy_truncate(&a, &logs.join("f0.log.1"));
        append(&a, &rows(0, 10..20));
        append(&b, &rows(1, 10..20));
        wait_running(&db, 40, &mut child);
        append(&a, &rows(0, 20..25));
        append(&b, &rows(1, 20..25));
        wait_running(&db, 50, &mut child);
        let err = stop(child);
        assert!(!err.contains("header"), "{on_error}: {err}");
        check(&db, &[(0, 25), (1, 25)]);
    }
}

/// Copy-and-truncate while weir runs, then a restart; and while weir is down: the rows after
/// each truncation are read with the header the file had, once each.
#[test]
fn copy_and_truncate_across_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let (logs, db, a, b, mut child) = follow_two_logs(tmp.path(), &[]);
    let pattern = format!("{}/*.log", s(&logs));
    copy_truncate(&a, &logs.join("f0.log.1"));
    append(&a, &rows(0, 10..20));
    wait_running(&db, 30, &mut child);
    stop(child);
    // Rows written while weir is down, after the truncation it saw.
    append(&a, &rows(0, 20..30));
    let mut child = follow(&db, &[&pattern], &[]);
    wait_running(&db, 40, &mut child);
    stop(child);
    // A truncation while weir is down.
    copy_truncate(&a, &logs.join("f0.log.2"));
    append(&a, &rows(0, 30..40));
    append(&b, &rows(1, 10..15));
    let mut child = follow(&db, &[&pattern], &[]);
    wait_running(&db, 55, &mut child);
    append(&a, &rows(0, 40..45));
    wait_running(&db, 60, &mut child);
    let err = stop(child);
    assert!(!err.contains("header"), "{err}");
    check(&db, &[(0, 45), (1, 15)]);
}

/// A writer without `O_APPEND` writes on at its old offset after copy-and-truncate, leaving a
/// hole of NUL bytes before its new rows, twice: the holes are skipped with a warning, the
/// rows read with the file's header, once each, and the other log flows on.
#[test]
fn nul_holes_of_a_writer_without_o_append_are_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.path().join("db");
    let (a, b) = (logs.join("f0.log"), logs.join("f1.log"));
    // Zeek's writer: its own offset, no O_APPEND.
    let mut w = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&a)
        .unwrap();
    w.write_all((log_header("f0") + &rows(0, 0..10)).as_bytes())
        .unwrap();
    append(&b, &(log_header("f1") + &rows(1, 0..10)));
    let pattern = format!("{}/*.log", s(&logs));
    let mut child = follow(&db, &[&pattern], &[]);
    wait_running(&db, 20, &mut child);
    copy_truncate(&a, &logs.join("f0.log.1"));
    w.write_all(rows(0, 10..20).as_bytes()).unwrap();
    append(&b, &rows(1, 10..20));
    wait_running(&db, 40, &mut child);
    copy_truncate(&a, &logs.join("f0.log.2"));
    w.write_all(rows(0, 20..30).as_bytes()).unwrap();
    wait_running(&db, 50, &mut child);
    let err = stop(child);
    assert!(err.contains("NUL bytes"), "{err}");
    check(&db, &[(0, 30), (1, 20)]);
}

/// Under `--on-error fail`, a bad line stops its own file only: the error is reported, the
/// other log flows on, the process exits 0 at SIGTERM, and a restart does not fail on it.
#[test]
fn an_error_stops_only_its_own_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (logs, db, a, b, mut child) = follow_two_logs(tmp.path(), &[]);
    let pattern = format!("{}/*.log", s(&logs));
    append(&a, &("not\ta\trow\n".to_string() + &rows(0, 10..20)));
    append(&b, &rows(1, 10..20));
    wait_running(&db, 30, &mut child);
    let err = stop(child);
    assert!(
        err.contains("f0.log") && err.contains("tried again"),
        "{err}"
    );
    let mut child = follow(&db, &[&pattern], &[]);
    append(&b, &rows(1, 20..30));
    wait_running(&db, 40, &mut child);
    stop(child);
    check(&db, &[(0, 10), (1, 30)]);
}

/// Kills in the loop by default (CI); `WEIR_TRUNC_KILLS` overrides it (at least 200 in the
/// long mode: `WEIR_TRUNC_KILLS=200 cargo test --release --test it follow_truncate::follow_kill_loop`).
const KILLS: u64 = 25;

/// Log numbers of the kill loop: `f0..f2` (one file each), the look-alikes' own rows (`LK_OWN`
/// for `la/lk.log`, `LK_OWN + 1` for `lb/lk.log`) and their common first rows (`LK_COMMON`,
/// written to both files).
const LK_OWN: u64 = 3;
const LK_COMMON: u64 = 5;
const LOGS: usize = 6;

/// The logs of the kill loop: `f0.log` rotated by rename, `f1.log` copied and truncated under
/// a writer without `O_APPEND` (holes), `f2.log` copied and truncated under an appending
/// writer; and two look-alike files `la/lk.log` and `lb/lk.log` in two directories: each
/// generation of both starts with the same header and the same first rows (1 to 90 of them,
/// so often more than the fingerprint's 4 KiB), then each gets rows of its own; they rotate
/// together, Zeek-style (renamed aside, a new generation created). Rotated files and copies
/// stay where the patterns match them.
struct Writers {
    logs: std::path::PathBuf,
    /// Rows written of each log number (the common rows: to each look-alike).
    written: [u64; LOGS],
    /// The writer of `f1.log`, with its own offset.
    holed: std::fs::File,
    /// Rows in the current generation of each file (since its creation or truncation).
    fresh: [u64; 3],
    /// The look-alikes' directories and their generation.
    lk: [PathBuf; 2],
    generation: u64,
    turn: u64,
}

impl Writers {
    fn new(logs: &Path, lk: [PathBuf; 2], rng: &mut Rng) -> Writers {
        let mut w = Writers {
            logs: logs.to_path_buf(),
            written: [0; LOGS],
            holed: std::fs::File::create(logs.join("f1.log")).unwrap(),
            fresh: [0; 3],
            lk,
            generation: 0,
            turn: 0,
        };
        for k in 0..3u64 {
            w.write(k, &log_header(&format!("f{k}")));
            w.rows(k, 5);
        }
        w.lookalikes(rng);
        w
    }

    fn path(&self, k: u64) -> std::path::PathBuf {
        match k {
            0..=2 => self.logs.join(format!("f{k}.log")),
            _ => self.lk[(k - LK_OWN) as usize].join("lk.log"),
        }
    }

    fn write(&mut self, k: u64, text: &str) {
        match k {
            1 => self.holed.write_all(text.as_bytes()).unwrap(),
            _ => append(&self.path(k), text),
        }
    }

    fn rows(&mut self, k: u64, n: u64) {
        let w = self.written[k as usize];
        self.write(k, &rows(k, w..w + n));
        self.written[k as usize] += n;
        if k < 3 {
            self.fresh[k as usize] += n;
        }
    }

    /// A new generation of the look-alikes (the current one renamed aside first): the same
    /// header and first rows in both, then one row of its own in each (a file that never
    /// differs from the other would be a copy of it).
    fn lookalikes(&mut self, rng: &mut Rng) {
        if self.generation > 0 {
            for k in [LK_OWN, LK_OWN + 1] {
                let path = self.path(k);
                std::fs::rename(&path, path.with_extension(format!("log.{}", self.turn))).unwrap();
            }
        }
        self.generation += 1;
        let c = self.written[LK_COMMON as usize];
        let n = 1 + rng.below(90);
        let head =
            log_header(&format!("lk\n#open\tg{}", self.generation)) + &rows(LK_COMMON, c..c + n);
        self.written[LK_COMMON as usize] += n;
        for k in [LK_OWN, LK_OWN + 1] {
            self.write(k, &head);
        }
        for k in [LK_OWN, LK_OWN + 1] {
            self.rows(k, 1);
        }
    }

    /// One random step: rows, or a rotation of a file that has rows since its last one.
    fn step(&mut self, rng: &mut Rng) {
        let k = rng.below(5);
        self.turn += 1;
        let rotate = rng.below(16) == 0;
        if k >= LK_OWN {
            if rotate {
                self.lookalikes(rng);
            }
            self.rows(k, 1 + rng.below(20));
            return;
        }
        if rotate && self.fresh[k as usize] > 0 {
            let aside = self.logs.join(format!("f{k}.log.{}", self.turn));
            if k == 0 {
                std::fs::rename(self.path(k), &aside).unwrap();
                self.write(k, &log_header("f0"));
            } else {
                copy_truncate(&self.path(k), &aside);
            }
            self.fresh[k as usize] = 0;
        }
        self.rows(k, 1 + rng.below(20));
    }

    /// Events written (the common rows once per look-alike).
    fn total(&self) -> u64 {
        self.written.iter().sum::<u64>() + self.written[LK_COMMON as usize]
    }
}

/// Each log's events, sorted (copies and the truncated file may interleave): each at most
/// once (the look-alikes' common rows at most twice, once per file), and none that was not
/// written; with `all`, exactly those written. `f0..f2` in their own streams (the header kept
/// across copy-and-truncate), the look-alikes in `lk`.
fn check_once(db: &Path, written: &[u64; LOGS], all: bool, seed: u64) {
    let got = streams(db);
    for k in [0, 1, 2, LK_OWN, LK_OWN + 1, LK_COMMON] {
        let stream = if k < 3 { format!("f{k}") } else { "lk".into() };
        let mut uids: Vec<u64> = got
            .get(&stream)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|u| u / STRIDE == k)
            .collect();
        uids.sort_unstable();
        let times = if k == LK_COMMON { 2 } else { 1 };
        let want: Vec<u64> = (0..written[k as usize])
            .flat_map(|i| std::iter::repeat_n(k * STRIDE + i, times))
            .collect();
        let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
        for u in &uids {
            *counts.entry(*u).or_default() += 1;
        }
        assert!(
            counts.values().all(|&c| c <= times),
            "log {k}: events more than {times} times (seed {seed})"
        );
        if all {
            assert_eq!(
                uids, want,
                "log {k}: not every event as written (seed {seed})"
            );
        } else {
            assert!(
                uids.iter().all(|u| want.binary_search(u).is_ok()),
                "log {k}: events never written (seed {seed})"
            );
        }
    }
}

/// `kill -9` at random moments while the writers append, rotate by rename, copy and truncate
/// (with and without `O_APPEND`, so with NUL holes), and write look-alike files in two
/// directories, rotated Zeek-style, also while weir is down; after the last run, every
/// written event is in the archive exactly once (the look-alikes' common rows once per file).
#[test]
fn follow_kill_loop_with_copy_truncate_and_holes() {
    let kills = kills_from_env("WEIR_TRUNC_KILLS", KILLS);
    let mut rng = Rng::from_env("WEIR_TRUNC_SEED");
    let seed = rng.0;
    let t0 = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    let lk = [tmp.path().join("la"), tmp.path().join("lb")];
    for d in [&logs, &lk[0], &lk[1]] {
        std::fs::create_dir(d).unwrap();
    }
    let db = tmp.path().join("db");
    let patterns: Vec<String> = [&logs, &lk[0], &lk[1]]
        .iter()
        .map(|d| format!("{}/*", s(d)))
        .collect();
    let patterns: Vec<&str> = patterns.iter().map(String::as_str).collect();
    let args = [
        "--batch-size",
        "7",
        "--batch-timeout",
        "20ms",
        "--max-segment-size",
        "256KiB",
    ];
    let mut w = Writers::new(&logs, lk, &mut rng);
    // The first run reads every header before anything is truncated.
    let mut child = follow(&db, &patterns, &args);
    wait_running(&db, w.total(), &mut child);
    for _ in 0..kills {
        for _ in 0..rng.below(30) {
            w.step(&mut rng);
            std::thread::sleep(Duration::from_millis(rng.below(20)));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        check_once(&db, &w.written, false, seed);
        // Steps while weir is down.
        for _ in 0..rng.below(4) {
            w.step(&mut rng);
        }
        child = follow(&db, &patterns, &args);
    }
    wait_running(&db, w.total(), &mut child);
    let err = stop(child);
    assert!(!err.contains("tried again"), "seed {seed}: {err}");
    check_once(&db, &w.written, true, seed);
    eprintln!(
        "{kills} kills, {} events, {} look-alike generations in {:?} (seed {seed})",
        w.total(),
        w.generation,
        t0.elapsed()
    );
}

/// A file truncated to 0, seen empty, then written again from its start with the same header
/// and first row (a look-alike of what it held): read again from its start, not on from the
/// old position in the middle of a line.
#[test]
fn a_file_rewritten_with_the_same_first_row_is_read_from_its_start() {
    let tmp = tempfile::tempdir().unwrap();
    let (logs, db, a) = one_log(tmp.path(), 10);
    let pattern = format!("{}/*.log", s(&logs));
    let mut child = follow(&db, &[&pattern], &[]);
    wait_running(&db, 10, &mut child);
    truncate(&a);
    std::thread::sleep(Duration::from_millis(1000));
    append(
        &a,
        &(log_header("f0") + &rows(0, 0..1) + &rows(0, 100..150)),
    );
    wait_running(&db, 61, &mut child);
    let err = stop(child);
    assert!(err.contains("read again from its start"), "{err}");
    assert_rows_of_f0(&db, (0..10).chain(0..1).chain(100..150));
}

/// A file imported by a batch import, then rewritten with the same start (the same header
/// and first row, other rows after them) before it is followed: the follower sees that its
/// bytes before the imported position are not those imported (the checkpoint's sum) and
/// reads it from its start with a warning, rather than on from the old position, in the
/// middle of a line.
#[test]
fn a_file_rewritten_after_a_batch_import_is_followed_from_its_start() {
    let tmp = tempfile::tempdir().unwrap();
    let (logs, db, a) = one_log(tmp.path(), 50);
    import(&db, &a);
    let pattern = format!("{}/*.log", s(&logs));
    rewrite_and_follow(&db, &a, &pattern);
}

/// Rewrites `a` (rows 0 to 49 of log 0 read before) with the same header and first row and
/// 120 other rows, follows it into `db` and checks that it was read from its start with a
/// warning: the rows before, and each row of the rewritten file once.
fn rewrite_and_follow(db: &Path, a: &Path, pattern: &str) {
    std::fs::write(a, log_header("f0") + &rows(0, 0..1) + &rows(0, 1000..1120)).unwrap();
    let mut child = follow(db, &[pattern], &[]);
    wait_running(db, 50 + 121, &mut child);
    std::thread::sleep(Duration::from_millis(500));
    let err = stop(child);
    assert!(
        err.contains(&format!("{}: rewritten since it was read", s(a)))
            && err.contains("read again from its start"),
        "{err}"
    );
    assert_rows_of_f0(db, (0..50).chain(0..1).chain(1000..1120));
}

/// A followed file rewritten while weir is down with the same start (the same header and
/// first row, other rows after them): the sum of the follower's own checkpoint tells it
/// from the file read, so it is read from its start with a warning, rather than on from the
/// old position, in the middle of a line.
#[test]
fn a_followed_file_rewritten_while_weir_is_down_is_read_from_its_start() {
    let tmp = tempfile::tempdir().unwrap();
    let (logs, db, a) = one_log(tmp.path(), 50);
    let pattern = format!("{}/*.log", s(&logs));
    let mut child = follow(&db, &[&pattern], &["--batch-size", "7"]);
    wait_running(&db, 50, &mut child);
    stop(child);
    rewrite_and_follow(&db, &a, &pattern);
}

/// The sums of a followed file's checkpoints are those of its bytes before each position,
/// through NUL holes (one where the file starts, one between two rows) and batches cut
/// between rows of one read: restarts on the unchanged file find no rewrite and import
/// nothing twice, and rows appended later are read on.
#[test]
fn follow_sums_hold_across_holes_and_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let (logs, db, a) = one_log(tmp.path(), 5);
    let pattern = format!("{}/*.log", s(&logs));
    let args = ["--batch-size", "7", "--batch-timeout", "20ms"];
    let mut child = follow(&db, &[&pattern], &args);
    wait_running(&db, 5, &mut child);
    // A writer without O_APPEND after a truncation: a hole, then rows (the header inherited).
    truncate(&a);
    let mut w = std::fs::OpenOptions::new().write(true).open(&a).unwrap();
    use std::io::{Seek, SeekFrom};
    w.seek(SeekFrom::Start(3000)).unwrap();
    w.write_all(rows(0, 5..30).as_bytes()).unwrap();
    wait_running(&db, 30, &mut child);
    // A hole between two rows.
    w.seek(SeekFrom::Current(5000)).unwrap();
    w.write_all(rows(0, 30..47).as_bytes()).unwrap();
    wait_running(&db, 47, &mut child);
    stop(child);
    for round in 0..2 {
        let mut child = follow(&db, &[&pattern], &args);
        std::thread::sleep(Duration::from_millis(800));
        w.write_all(rows(0, 47 + round * 10..57 + round * 10).as_bytes())
            .unwrap();
        wait_running(&db, 57 + round * 10, &mut child);
        std::thread::sleep(Duration::from_millis(300));
        let err = stop(child);
        assert!(!err.contains("rewritten"), "round {round}: {err}");
    }
    let mut got = streams(&db).remove("f0").unwrap();
    got.sort_unstable();
    assert_eq!(got, (0..67).collect::<Vec<_>>());
}

/// Logrotate's `copytruncate` race: the writer wrote on between the copy and the truncation,
/// so the copy ends before what was read of the file. It cannot be checked against the
/// position's sum and is not taken for a rewritten file: none of its rows is imported twice,
/// and the rows after the truncation are read.
#[test]
fn a_copy_shorter_than_what_was_read_is_not_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let (logs, db, a) = one_log(tmp.path(), 50);
    let pattern = format!("{}/*.log*", s(&logs));
    let mut child = follow(&db, &[&pattern], &[]);
    wait_running(&db, 50, &mut child);
    std::fs::write(logs.join("f0.log.1"), log_header("f0") + &rows(0, 0..40)).unwrap();
    truncate(&a);
    append(&a, &rows(0, 50..60));
    wait_running(&db, 60, &mut child);
    std::thread::sleep(Duration::from_millis(1000));
    let err = stop(child);
    assert!(!err.contains("rewritten"), "{err}");
    let mut got = streams(&db).remove("f0").unwrap();
    got.sort_unstable();
    assert_eq!(got, (0..60).collect::<Vec<_>>());
}

/// The rows of log `f0` in the archive are exactly `want`, in any order (each once).
fn assert_rows_of_f0(db: &Path, want: impl Iterator<Item = u64>) {
    let mut want: Vec<u64> = want.collect();
    want.sort_unstable();
    let mut got = streams(db).remove("f0").unwrap();
    got.sort_unstable();
    assert_eq!(got, want);
}
