//! `weir import --follow`: files followed like `tail -F`, exactly once across restarts.
//!
//! Every test writes small Zeek TSV logs into a temporary directory while the real binary
//! follows it, waits (with `weir count`, a concurrent reader) until the archive holds what
//! was written, stops the import with SIGTERM (or SIGKILL), and checks with `weir export` that
//! every line of every file is there exactly once, in its file's order. Each log has its own
//! `#path` (its own schema) and every event a unique uid that names its file and its place in
//! it, so events are attributed to their files after export.
//!
//! **Kill loop.** `follow_survives_sigkill_at_random_moments` kills a followed import of
//! growing files at random moments, [`KILLS`] times by default; `WEIR_FOLLOW_KILLS=N` runs N
//! kills, e.g. `WEIR_FOLLOW_KILLS=20 cargo test --release --test it cli_follow::follow_survives_sigkill`;
//! `WEIR_FOLLOW_SEED` replays a run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::cli::{export_json, run, s, text};
use common::conn_log::row;
use common::follow::{append, check_verify, count, follow, log_header, stop, streams, wait_count};
use common::rng::{kills_from_env, Rng};

/// Kills in the loop by default (CI); `WEIR_FOLLOW_KILLS` overrides it.
const KILLS: u64 = 3;

/// Uids of file `k` start at `k * STRIDE`.
const STRIDE: u64 = 1_000_000;

/// Events `range` of file `k`, one line each.
fn rows(k: u64, range: std::ops::Range<u64>) -> String {
    range.map(|i| row(k * STRIDE + i)).collect()
}

/// Checks that log `name_k` holds exactly events `0..n` of file `k`, in order, for each
/// `(k, n)`, and that there is no other log.
fn check(db: &Path, expected: &[(u64, u64)]) {
    let got = streams(db);
    let want: BTreeMap<String, Vec<u64>> = expected
        .iter()
        .map(|&(k, n)| (format!("f{k}"), (0..n).map(|i| k * STRIDE + i).collect()))
        .collect();
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (path, uids) in &want {
        let g = &got[path];
        assert_eq!(g.len(), uids.len(), "{path}: events");
        let first_bad = g.iter().zip(uids).position(|(a, b)| a != b);
        assert_eq!(first_bad, None, "{path}: events out of order or duplicated");
    }
}

fn dir_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

/// Appends, files that appear later, a line written in two halves, and a restart that
/// resumes where the archive ends.
#[test]
fn follow_reads_appends_new_files_partial_lines_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.path().join("db");
    let pattern = format!("{}/*.log", s(&logs));
    let f0 = dir_path(&logs, "f0.log");
    let f1 = dir_path(&logs, "f1.log");
    append(&f0, &(log_header("f0") + &rows(0, 0..50)));
    let metrics = tmp.path().join("metrics.json");
    let child = follow(&db, &[&pattern], &["--metrics", s(&metrics)]);
    wait_count(&db, 50);
    append(&f0, &rows(0, 50..80));
    append(&f1, &(log_header("f1") + &rows(1, 0..10)));
    wait_count(&db, 90);
    // Half a line: it waits for the rest (taken now, it would not parse and fail the import).
    let line = rows(0, 80..81);
    let (a, b) = line.split_at(line.len() / 2);
    append(&f0, a);
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(count(&db), 90);
    append(&f0, b);
    wait_count(&db, 91);
    stop(child);
    check(&db, &[(0, 81), (1, 10)]);
    // Per followed file: its size, the offset read, and the lag in bytes (none: all read).
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&metrics).unwrap()).unwrap();
    let f = &m["files"][s(&f0)];
    assert_eq!(f["stage"], "input", "{m}");
    let size = std::fs::metadata(&f0).unwrap().len();
    assert_eq!(f["size"], size, "{m}");
    assert_eq!(f["offset"], size, "{m}");
    assert_eq!(f["lag_bytes"], 0, "{m}");
    // Restart: what was imported is not imported again; what was added meanwhile is.
    append(&f1, &rows(1, 10..25));
    let f2 = dir_path(&logs, "f2.log");
    append(&f2, &(log_header("f2") + &rows(2, 0..5)));
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 111);
    stop(child);
    check(&db, &[(0, 81), (1, 25), (2, 5)]);
    // The checkpoints are in the catalog (sealed at the end of each run).
    let catalog = std::fs::read_to_string(db.join("catalog.json")).unwrap();
    assert!(catalog.contains("\"checkpoints\""), "{catalog}");
}

/// Rotation by rename (the renamed file's last lines are still read) and by copy-and-truncate
/// (the file is read again from its start).
#[test]
fn follow_handles_both_kinds_of_rotation() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.path().join("db");
    let pattern = format!("{}/*.log", s(&logs));
    let f0 = dir_path(&logs, "f0.log");
    let f1 = dir_path(&logs, "f1.log");
    append(&f0, &(log_header("f0") + &rows(0, 0..40)));
    append(&f1, &(log_header("f1") + &rows(1, 0..40)));
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 80);
    // Rename-and-recreate, with lines written just before the rename that may not be read
    // yet: they are read through the open file after it moved out of the pattern.
    append(&f0, &rows(0, 40..60));
    std::fs::rename(&f0, logs.join("f0.log.1")).unwrap();
    append(&f0, &(log_header("f0") + &rows(0, 60..70)));
    // Copy-and-truncate, after everything was read (lines written between the copy and the
    // truncation are lost with this kind of rotation, in any tool).
    std::fs::copy(&f1, logs.join("f1.log.1")).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&f1)
        .unwrap()
        .set_len(0)
        .unwrap();
    append(&f1, &(log_header("f1") + &rows(1, 40..45)));
    wait_count(&db, 115);
    let err = stop(child);
    assert!(!err.contains("error"), "{err}");
    check(&db, &[(0, 70), (1, 45)]);
}

/// A file rotated away while weir was down is found by its identity in its directory and
/// finished from its checkpoint, before the file that replaced it; one that is gone is named
/// in a warning.
#[test]
fn follow_finishes_files_rotated_while_down() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.path().join("db");
    let pattern = format!("{}/*.log", s(&logs));
    let f0 = dir_path(&logs, "f0.log");
    append(&f0, &(log_header("f0") + &rows(0, 0..20)));
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 20);
    stop(child);
    // Down: the file grows, is rotated out of the pattern, and a new one starts.
    append(&f0, &rows(0, 20..30));
    std::fs::rename(&f0, logs.join("f0.log.1")).unwrap();
    append(&f0, &(log_header("f0") + &rows(0, 30..35)));
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 35);
    stop(child);
    check(&db, &[(0, 35)]);
    // Down again: the file grows and is moved where weir cannot find it.
    append(&f0, &rows(0, 35..40));
    let away = tmp.path().join("elsewhere");
    std::fs::create_dir(&away).unwrap();
    std::fs::rename(&f0, away.join("f0.log")).unwrap();
    let child = follow(&db, &[&pattern], &[]);
    std::thread::sleep(Duration::from_millis(700));
    let err = stop(child);
    assert!(
        err.contains(&format!("{}: a followed file", s(&f0))) && err.contains("not found"),
        "{err}"
    );
    check(&db, &[(0, 35)]);
}

/// Many logs growing at once interleave into one archive, each with its own header state.
#[test]
fn follow_interleaves_many_logs() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.path().join("db");
    let pattern = format!("{}/*.log", s(&logs));
    const FILES: u64 = 6;
    for k in 0..FILES {
        append(
            &logs.join(format!("f{k}.log")),
            &(log_header(&format!("f{k}")) + &rows(k, 0..3)),
        );
    }
    let child = follow(
        &db,
        &[&pattern],
        &["--batch-size", "16", "--batch-timeout", "50ms"],
    );
    for round in 0..10u64 {
        for k in 0..FILES {
            let path = logs.join(format!("f{k}.log"));
            append(&path, &rows(k, 3 + round * 7..3 + (round + 1) * 7));
        }
        std::thread::sleep(Duration::from_millis(30));
    }
    let expected: Vec<(u64, u64)> = (0..FILES).map(|k| (k, 73)).collect();
    let total: u64 = expected.iter().map(|e| e.1).sum();
    wait_count(&db, total);
    stop(child);
    check(&db, &expected);
    // The batches of different files were not merged: each schema is one log.
    let info = common::cli::info(&db);
    assert!(info.to_string().contains("zeek.f5"), "{info}");
}

/// A gzip'd log matching a pattern is read whole, once: a restart does not read it again.
#[test]
fn follow_reads_compressed_files_once() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.path().join("db");
    let text = log_header("f0") + &rows(0, 0..30);
    std::fs::write(
        logs.join("f0.2024-01-01.log.gz"),
        common::gz::gzip(&[text.as_bytes()]),
    )
    .unwrap();
    let pattern = format!("{}/*.gz", s(&logs));
    for _ in 0..2 {
        let child = follow(&db, &[&pattern], &[]);
        wait_count(&db, 30);
        std::thread::sleep(Duration::from_millis(600));
        stop(child);
        check(&db, &[(0, 30)]);
    }
}

/// `--follow` needs files: stdin cannot be followed (a usage error naming the flag).
#[test]
fn follow_refuses_stdin() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let out = run(&["import", "--db", s(&db), "--follow"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--follow"),
        "{}",
        text(&out.stderr)
    );
}

/// SIGKILL at random moments while files grow, then a last run to the end: every line of
/// every file is in the archive exactly once, in its file's order. Tiny batches and segments
/// make kills land between the WAL records of batches cut across reads and segments.
#[test]
fn follow_survives_sigkill_at_random_moments() {
    let kills = kills_from_env("WEIR_FOLLOW_KILLS", KILLS);
    let mut rng = Rng::from_env("WEIR_FOLLOW_SEED");
    let seed = rng.0;
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.path().join("db");
    let pattern = format!("{}/*.log", s(&logs));
    const FILES: u64 = 5;
    let mut written = vec![0u64; FILES as usize];
    for k in 0..FILES {
        append(
            &logs.join(format!("f{k}.log")),
            &log_header(&format!("f{k}")),
        );
    }
    let args = [
        "--batch-size",
        "7",
        "--batch-timeout",
        "20ms",
        "--max-segment-size",
        "8KiB",
    ];
    let grow = |rng: &mut Rng, written: &mut Vec<u64>| {
        let k = rng.next() % FILES;
        let n = 1 + rng.next() % 40;
        let w = &mut written[k as usize];
        append(&logs.join(format!("f{k}.log")), &rows(k, *w..*w + n));
        *w += n;
    };
    for _ in 0..kills {
        let mut child = follow(&db, &[&pattern], &args);
        let steps = 5 + rng.next() % 30;
        for _ in 0..steps {
            grow(&mut rng, &mut written);
            std::thread::sleep(Duration::from_millis(rng.next() % 25));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // What is there is a prefix of each file, exactly once (checked fully at the end).
        for (path, uids) in streams(&db) {
            let k: u64 = path[1..].parse().unwrap();
            let want: Vec<u64> = (0..uids.len() as u64).map(|i| k * STRIDE + i).collect();
            assert_eq!(uids, want, "{path} after a kill (seed {seed})");
        }
        check_verify(&db);
    }
    let child = follow(&db, &[&pattern], &args);
    let total: u64 = written.iter().sum();
    wait_count(&db, total);
    stop(child);
    let expected: Vec<(u64, u64)> = (0..FILES)
        .filter(|&k| written[k as usize] > 0)
        .map(|k| (k, written[k as usize]))
        .collect();
    check(&db, &expected);
}

/// `weir verify --repair` of `db`; returns its stdout after checking it exited 0.
fn repair(db: &Path) -> String {
    let out = run(&["verify", "--repair", "--db", s(db)]);
    assert!(
        out.status.success(),
        "weir verify --repair: {}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The uid numbers of log `name` in the archive, in ID order (other logs ignored).
fn stream(db: &Path, name: &str) -> Vec<u64> {
    export_json(db)
        .iter()
        .filter(|e| e["_path"].as_str() == Some(name))
        .map(|e| e["uid"].as_str().unwrap()[1..].parse().unwrap())
        .collect()
}

/// Issue 32, case 5: the catalog lost (deleted, then damaged) after followed imports (one
/// stopped, one killed with records in the write-ahead log): `weir verify --repair` rebuilds
/// the checkpoints from the newest segment, and following again imports every line exactly
/// once.
#[test]
fn follow_checkpoints_survive_the_loss_of_the_catalog() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.path().join("db");
    let pattern = format!("{}/*.log", s(&logs));
    let f0 = dir_path(&logs, "f0.log");
    let f1 = dir_path(&logs, "f1.log");
    append(&f0, &(log_header("f0") + &rows(0, 0..60)));
    append(&f1, &(log_header("f1") + &rows(1, 0..40)));
    let seg = ["--max-segment-size", "16KiB"];
    let child = follow(&db, &[&pattern], &seg);
    wait_count(&db, 100);
    stop(child);
    std::fs::remove_file(db.join("catalog.json")).unwrap();
    let out = repair(&db);
    assert!(
        out.contains("rebuilt the checkpoints of 2 followed files"),
        "{out}"
    );
    append(&f0, &rows(0, 60..70));
    let child = follow(&db, &[&pattern], &seg);
    wait_count(&db, 110);
    // Killed: the last lines are in the write-ahead log only, with their checkpoints.
    append(&f1, &rows(1, 40..45));
    wait_count(&db, 115);
    let mut child = child;
    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::write(db.join("catalog.json"), b"{\"format\": \"weir-cat").unwrap();
    let out = repair(&db);
    assert!(out.contains("moved corrupt catalog"), "{out}");
    assert!(out.contains("rebuilt the checkpoints"), "{out}");
    append(&f1, &rows(1, 45..50));
    let child = follow(&db, &[&pattern], &seg);
    wait_count(&db, 120);
    stop(child);
    check(&db, &[(0, 70), (1, 50)]);
}

/// Checkpoints that cannot be recovered (a format 7 archive, which does not record them in
/// its segments, whose catalog is lost): repair says so, a followed import refuses to start
/// until `--from-end` or `--from-start` is chosen, and each does as named; the choice clears
/// the flag, so the next import resumes from the checkpoints as usual.
#[test]
fn follow_refuses_lost_checkpoints_until_the_user_chooses_where_to_start() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let pattern = format!("{}/*.log", s(&logs));
    let f0 = dir_path(&logs, "f0.log");
    append(&f0, &(log_header("f0") + &rows(0, 0..30)));
    let lost_archive = |name: &str| {
        let db = tmp.path().join(name);
        common::store::copy_dir(&common::fixture("archive-v7"), &db);
        std::fs::remove_file(db.join("catalog.json")).unwrap();
        let out = repair(&db);
        assert!(
            out.contains("checkpoints of followed files are lost"),
            "{out}"
        );
        let cat = std::fs::read_to_string(db.join("catalog.json")).unwrap();
        assert!(cat.contains("\"checkpoints_lost\":true"), "{cat}");
        db
    };
    let db = lost_archive("end");
    // Refused, with the two choices named; nothing imported.
    let out = run(&["import", "-q", "--db", s(&db), "--follow", &pattern]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("are lost") && err.contains("--from-start") && err.contains("--from-end"),
        "{err}"
    );
    assert_eq!(count(&db), 324);
    // --from-end: what f0 holds now is skipped, lines written later are imported.
    let child = follow(&db, &[&pattern], &["--from-end"]);
    std::thread::sleep(Duration::from_millis(1500));
    append(&f0, &rows(0, 30..40));
    wait_count(&db, 334);
    stop(child);
    assert_eq!(
        stream(&db, "f0"),
        (30..40).collect::<Vec<u64>>(),
        "--from-end"
    );
    let cat = std::fs::read_to_string(db.join("catalog.json")).unwrap();
    assert!(!cat.contains("checkpoints_lost"), "{cat}");
    // The flag is cleared: a plain follow resumes from the checkpoints.
    append(&f0, &rows(0, 40..45));
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 339);
    stop(child);
    assert_eq!(stream(&db, "f0"), (30..45).collect::<Vec<u64>>());
    // --from-start: every matching file from byte 0.
    let db = lost_archive("start");
    let child = follow(&db, &[&pattern], &["--from-start"]);
    wait_count(&db, 324 + 45);
    stop(child);
    assert_eq!(stream(&db, "f0"), (0..45).collect::<Vec<u64>>());
}

/// An archive whose write-ahead log holds checkpoints written before they carried `raw` (WAL
/// records with flag bit 3 only, by weir at 0f1fd43, killed with `kill -9`;
/// `tests/fixtures/follow-v7`): a follow of the same log, now in another directory, replays
/// them, finds the file by its content and reads only the lines appended since.
#[test]
fn follow_resumes_from_checkpoints_of_the_previous_wal_records() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    common::store::copy_dir(&common::fixture("follow-v7/db"), &db);
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let log = logs.join("conn.log");
    std::fs::copy(common::fixture("follow-v7/conn.log"), &log).unwrap();
    // The fixture's log has the fields `ts` and `uid` only.
    append(&log, "1600000000.000030\tC0000000030\n");
    let pattern = format!("{}/*.log", s(&logs));
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 31);
    stop(child);
    let uids: Vec<String> = export_json(&db)
        .iter()
        .map(|e| e["uid"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(uids.len(), 31);
    assert_eq!(uids[30], "C0000000030");
    let distinct: std::collections::BTreeSet<&String> = uids.iter().collect();
    assert_eq!(distinct.len(), 31);
    check_verify(&db);
}
