//! Resuming a batch import (`weir import FILE...` without `--follow`): the same command run
//! again after a `kill -9`, a crash or an error imports exactly the part that is missing; a
//! file imported whole before is skipped with one line saying so, and `--again` imports it
//! anyway (see `src/source/resume.rs`).
//!
//! **Kill loop.** [`import_resumes_after_sigkill_at_random_moments`] imports 10 files (small
//! and large plain files, read by the sequential and the parallel parser; gzip files of
//! several members; two logs concatenated in one file; a bad line skipped under
//! `--on-error skip`; a last line without its newline, which waits for it), kills the import with SIGKILL at a
//! random moment, and reruns the same command until it exits 0: after every kill the archive
//! holds a prefix of the files' events, in order, each once; at the end, every event exactly
//! once. [`KILLS`] kills by default; `WEIR_IMPORT_KILLS=N` runs at least N kills (starting
//! over on a fresh archive each time the import completes), e.g.
//! `WEIR_IMPORT_KILLS=50 cargo test --release --test it cli_import_resume::import_resumes_after_sigkill`. The seed is
//! printed; `WEIR_IMPORT_SEED` replays a run.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::cli::{export_json, info, ok, run, run_until, run_with_stdin, s, text};
use common::conn_log::{self, check_event, numbers};
use common::gz::{gzip, gzip_members};
use common::rng::{kills_from_env, Rng};

/// Kills in the loop by default (CI); `WEIR_IMPORT_KILLS` overrides it.
const KILLS: u64 = 4;

/// Event numbers of file `k` start at `k * STRIDE`.
const STRIDE: u64 = 1_000_000;

/// A line that is not a row of the generated logs.
const BAD_LINE: &str = "not\ta\tvalid\trow\n";

/// Writes the 10 files of the kill loop under `dir`; returns their paths and the event
/// numbers of all of them, in order.
fn write_files(dir: &Path) -> (Vec<PathBuf>, Vec<u64>) {
    let mut paths = Vec::new();
    let mut all = Vec::new();
    for k in 0..10u64 {
        let base = k * STRIDE;
        // Small files go through the sequential parser, files of 1 MiB and more through the
        // parallel one; gzip files are decompressed by the parallel gunzip.
        let n = match k {
            0..=3 => 1_500,
            4..=6 => 11_000,
            7 | 8 => 5_000,
            _ => 3_000,
        };
        let range = base..base + n;
        let mut log = match k {
            // Two logs in one file: the second header block is in the middle.
            6 => conn_log::log(base..base + n / 2) + &conn_log::log(base + n / 2..base + n),
            _ => conn_log::log(range.clone()),
        };
        if k == 1 || k == 5 {
            // A bad line in the middle, skipped under `--on-error skip`.
            let at = log.len() / 2;
            let at = at + log[at..].find('\n').unwrap() + 1;
            log.insert_str(at, BAD_LINE);
        }
        if k == 9 {
            // The last line without its newline: it may still be written, so it is left for
            // a later import.
            log.pop();
        }
        let (name, data) = match k {
            7 | 8 => (format!("f{k}.log.gz"), gzip_members(log.as_bytes(), 4)),
            _ => (format!("f{k}.log"), log.into_bytes()),
        };
        let path = dir.join(name);
        std::fs::write(&path, data).unwrap();
        paths.push(path);
        all.extend(range.start..range.end - u64::from(k == 9));
    }
    (paths, all)
}

/// The archive's events (their numbers), each checked for its values.
fn events(db: &Path) -> Vec<u64> {
    let events = export_json(db);
    let n = numbers(&events);
    for (i, e) in n.iter().zip(&events) {
        check_event(*i, e);
    }
    n
}

/// `kill -9` at random moments, the same command rerun until it exits 0: every event exactly
/// once, in file order; after each kill, a prefix of them.
#[test]
fn import_resumes_after_sigkill_at_random_moments() {
    let kills = kills_from_env("WEIR_IMPORT_KILLS", KILLS);
    let mut rng = Rng::from_env("WEIR_IMPORT_SEED");
    let seed = rng.0;
    let tmp = tempfile::tempdir().unwrap();
    let (paths, all) = write_files(tmp.path());
    let args = |db: &Path| -> Vec<String> {
        let mut a: Vec<String> = [
            "import",
            "-q",
            "--on-error",
            "skip",
            "--batch-size",
            "300",
            "--batch-timeout",
            "5ms",
            "--max-segment-size",
            "256KiB",
            "--db",
            s(db),
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        a.extend(paths.iter().map(|p| s(p).to_string()));
        a
    };
    let log = tmp.path().join("stderr.txt");
    // How long a whole import takes here: kills land anywhere in it.
    let t0 = Instant::now();
    let first = tmp.path().join("whole.db");
    run_until(&args(&first), Duration::from_secs(600), &log).unwrap();
    let whole = t0.elapsed();
    assert_eq!(events(&first), all, "an import without kills");
    let mut done = 0u64;
    let mut round = 0;
    while done < kills {
        round += 1;
        let db = tmp.path().join(format!("db{round}"));
        let mut runs = 0;
        loop {
            runs += 1;
            assert!(runs < 1000, "the import never completes (seed {seed})");
            let ms = rng.below(whole.as_millis() as u64 * 11 / 10 + 1);
            match run_until(&args(&db), Duration::from_millis(ms), &log) {
                Some(stderr) => {
                    let skipped = stderr.matches("imported whole before; skipped").count();
                    assert!(skipped <= paths.len(), "{stderr}");
                    break;
                }
                None => {
                    done += 1;
                    if !db.join("catalog.json").exists() && !db.join("wal").exists() {
                        continue;
                    }
                    let got = events(&db);
                    assert_eq!(
                        got[..],
                        all[..got.len()],
                        "after kill {done} at {ms} ms (seed {seed}): not a prefix of the files' events"
                    );
                }
            }
        }
        assert_eq!(
            events(&db),
            all,
            "round {round} (seed {seed}): every event exactly once"
        );
        // Run again after completion: nothing is added, every file is skipped but the one
        // whose last line still waits for its newline.
        let out = run(&args(&db).iter().map(String::as_str).collect::<Vec<_>>());
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert_eq!(
            stderr.matches("imported whole before; skipped").count(),
            paths.len() - 1,
            "{stderr}"
        );
        assert_eq!(stderr.matches("has no newline yet").count(), 1, "{stderr}");
        assert_eq!(info(&db)["events"].as_u64(), Some(all.len() as u64));
    }
    eprintln!("{done} kills in {round} rounds (seed {seed})");
}

/// A file imported whole is skipped the next time, with one line saying so (also as its gzip
/// copy); `--again` imports it again. Stdin is imported every time, as before.
#[test]
fn a_file_imported_whole_is_skipped_and_again_imports_it() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let f = tmp.path().join("conn.log");
    let log = conn_log::log(0..500);
    std::fs::write(&f, &log).unwrap();
    let gz = tmp.path().join("conn.08:00:00-09:00:00.log.gz");
    std::fs::write(&gz, gzip_members(log.as_bytes(), 2)).unwrap();
    ok(
        &run(&["import", "-q", "--db", s(&db), s(&f)]),
        "first import",
    );
    assert_eq!(info(&db)["events"].as_u64(), Some(500));

    let out = run(&["import", "--db", s(&db), s(&f)]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("skipped")).collect();
    assert_eq!(
        lines,
        [format!(
            "weir: warning: {}: imported whole before; skipped (`--again` imports it again)",
            f.display()
        )],
        "{stderr}"
    );
    assert_eq!(info(&db)["events"].as_u64(), Some(500), "{stderr}");

    // The same file compressed (as a rotation makes it) is the same file.
    let out = run(&["import", "--db", s(&db), s(&gz)]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: imported whole before (as {}); skipped",
            gz.display(),
            f.display()
        )),
        "{stderr}"
    );
    assert_eq!(info(&db)["events"].as_u64(), Some(500), "{stderr}");

    ok(
        &run(&["import", "-q", "--again", "--db", s(&db), s(&f)]),
        "import --again",
    );
    let got = events(&db);
    let once: Vec<u64> = (0..500).collect();
    assert_eq!(got, [once.clone(), once].concat());

    // `--again` and `--follow` do not go together.
    let out = run(&["import", "--again", "--follow", "--db", s(&db), s(&f)]);
    assert!(!out.status.success());

    // Stdin keeps today's behaviour: imported each time.
    let stdin_db = tmp.path().join("stdin.db");
    for _ in 0..2 {
        ok(
            &run_with_stdin(&["import", "-q", "--db", s(&stdin_db), "-"], log.as_bytes()),
            "import from stdin",
        );
    }
    assert_eq!(info(&stdin_db)["events"].as_u64(), Some(1000));
}

/// An error in the middle of a file stops the import after committing the rows before it,
/// and says to fix or skip the line (a rerun resumes after the committed rows); run again, it stops at the same line (same line
/// number, nothing added); once the line is fixed, the rerun imports the rest: every event
/// once. Both for a large plain file (parallel parser) and a gzip file cut short.
#[test]
fn an_error_mid_file_then_a_rerun_imports_every_event_once() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let a = tmp.path().join("a.log");
    let b = tmp.path().join("b.log.gz");
    // a.log: 12,000 events (over 1 MiB), row 7,000 broken.
    let good = conn_log::log(0..12_000);
    let header_lines = conn_log::header().lines().count();
    let bad = good.replacen(&conn_log::uid(7_000), "C\tbroken", 1);
    assert_ne!(bad, good);
    std::fs::write(&a, &bad).unwrap();
    // b.log.gz: 1,500 events in 3 gzip members; 2,500 more in 5 members are appended later.
    let b_part = gzip_members(conn_log::log(STRIDE..STRIDE + 1_500).as_bytes(), 3);
    let mut more = String::new();
    for i in STRIDE + 1_500..STRIDE + 4_000 {
        more.push_str(&conn_log::row(i));
    }
    let b_full = [b_part.clone(), gzip_members(more.as_bytes(), 5)].concat();
    std::fs::write(&b, &b_part).unwrap();
    let cmd = [
        "import",
        "-q",
        "--batch-size",
        "500",
        "--db",
        s(&db),
        s(&a),
        s(&b),
    ];
    let line = format!("{}:{}", a.display(), header_lines + 7_001);

    let out = run(&cmd);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&line), "{stderr}");
    // Bad input: the advice is to fix or skip the line (a rerun as such stops there again).
    assert!(
        stderr.contains("fix that line, or rerun with `--on-error skip`")
            && stderr.contains("a rerun resumes after them"),
        "{stderr}"
    );
    let got = events(&db);
    assert!(!got.is_empty() && got.len() <= 7_000, "{stderr}");
    assert_eq!(got, (0..got.len() as u64).collect::<Vec<_>>());

    // Unchanged, the file fails at the same line again, adding nothing but what the first
    // run had not committed of the rows before it.
    let out = run(&cmd);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&line), "{stderr}");
    let got = events(&db);
    assert!(got.len() <= 7_000, "{stderr}");
    assert_eq!(got, (0..got.len() as u64).collect::<Vec<_>>());

    // Fixed, the rest of a.log is read, then b.log.gz.
    std::fs::write(&a, &good).unwrap();
    let out = run(&cmd);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let b_first: Vec<u64> = (STRIDE..STRIDE + 1_500).collect();
    let a_all: Vec<u64> = (0..12_000).collect();
    assert_eq!(events(&db), [a_all.clone(), b_first.clone()].concat());

    // The gzip file gets its other members: only they are read.
    std::fs::write(&b, &b_full).unwrap();
    let out = run(&cmd);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("{}: imported whole before; skipped", a.display())),
        "{stderr}"
    );
    let b_all: Vec<u64> = (STRIDE..STRIDE + 4_000).collect();
    assert_eq!(events(&db), [a_all, b_all].concat());
}

/// Every segment records how far each file read is imported (format 8): when those
/// checkpoints leave no room for an event, the error says so and how many files they are
/// for, not that the event is too large (found by the zeekctl long mode, whose segments
/// of 16 KiB filled up with the checkpoints of a thousand rotated files).
#[test]
fn checkpoints_that_fill_a_segment_are_named_in_the_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for k in 0..300u64 {
        let p = tmp.path().join(format!(
            "conn.a-rather-long-name-as-rotated-logs-have-{k:04}.log"
        ));
        std::fs::write(&p, conn_log::log(k..k + 1)).unwrap();
        paths.push(p);
    }
    let db = tmp.path().join("db");
    let mut args = vec!["import", "--db", s(&db), "--max-segment-size", "16KiB"];
    args.extend(paths.iter().map(|p| s(p)));
    let out = run(&args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("files read (how far each is imported) take")
            && err.contains("raise --max-segment-size")
            && !err.contains("cannot fit in a segment"),
        "{err}"
    );
    // With room for them, the same import takes every file.
    let out = run(&{
        let mut a = vec!["import", "--db", s(&db), "--max-segment-size", "1MiB"];
        a.extend(paths.iter().map(|p| s(p)));
        a
    });
    ok(&out, "import with room for the checkpoints");
    assert_eq!(numbers(&export_json(&db)), (0..300).collect::<Vec<_>>());
}

/// A file rewritten since its import with the same start (header and first row, so the same
/// fingerprint) but other rows after it is imported again whole with a warning naming it:
/// shorter than the part imported (was skipped as "imported whole before"), longer (was read
/// on from the old offset, in the middle of a line), and after an import that left an
/// unterminated last line for later. A file that only grew is read on from its checkpoint
/// without a warning.
#[test]
fn a_rewritten_file_with_the_same_start_is_imported_again_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let rows = |first: u64, range: std::ops::Range<u64>| {
        let mut log = conn_log::log(first..first + 1);
        for i in range {
            log.push_str(&conn_log::row(i));
        }
        log
    };
    let cases: [(&str, String, String); 3] = [
        ("shorter", rows(0, 1..300), rows(0, 10_000..10_100)),
        ("longer", rows(0, 1..300), rows(0, 20_000..20_600)),
        (
            "held",
            {
                let mut log = rows(0, 1..200);
                log.pop();
                log
            },
            rows(0, 30_000..30_400),
        ),
    ];
    for (case, first, second) in cases {
        let db = tmp.path().join(format!("{case}.db"));
        let f = tmp.path().join(format!("{case}.log"));
        std::fs::write(&f, &first).unwrap();
        ok(
            &run(&["import", "-q", "--db", s(&db), s(&f)]),
            "first import",
        );
        let before = events(&db);
        std::fs::write(&f, &second).unwrap();
        let out = run(&["import", "--db", s(&db), s(&f)]);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{case}: {stderr}");
        assert!(
            stderr.contains(&format!("{}: rewritten since it was imported", f.display()))
                && stderr.contains("imported again whole"),
            "{case}: {stderr}"
        );
        assert!(
            !stderr.contains("imported whole before"),
            "{case}: {stderr}"
        );
        let mut want = before.clone();
        want.extend(numbers_of(&second));
        assert_eq!(events(&db), want, "{case}: {stderr}");
        // And the checkpoint moved to the new file's end: nothing more the next time.
        let out = run(&["import", "--db", s(&db), s(&f)]);
        let stderr = text(&out.stderr);
        assert!(stderr.contains("imported whole before"), "{case}: {stderr}");
        assert_eq!(events(&db), want, "{case}");
    }

    // A file that only grew: read on, no warning.
    let db = tmp.path().join("grew.db");
    let f = tmp.path().join("grew.log");
    std::fs::write(&f, conn_log::log(0..100)).unwrap();
    ok(
        &run(&["import", "-q", "--db", s(&db), s(&f)]),
        "first import",
    );
    let mut grown = conn_log::log(0..100);
    for i in 100..150 {
        grown.push_str(&conn_log::row(i));
    }
    std::fs::write(&f, grown).unwrap();
    let out = run(&["import", "--db", s(&db), s(&f)]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("rewritten"), "{stderr}");
    assert_eq!(events(&db), (0..150).collect::<Vec<u64>>());
}

/// The event numbers of the complete rows of a generated log.
fn numbers_of(log: &str) -> Vec<u64> {
    log.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').nth(1).unwrap()[1..].parse().unwrap())
        .collect()
}

/// A compressed file (gzip, zstd) rewritten with the same first lines is imported again
/// whole with the warning, whether its compressed length stayed the same, shrank (both
/// once skipped as imported whole before) or grew (once read on from the middle); one that
/// only grew is read on, one unchanged is skipped.
#[test]
fn a_rewritten_compressed_file_with_the_same_start_is_imported_again_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let rows = |range: std::ops::Range<u64>| {
        let mut log = conn_log::log(0..1);
        for i in range {
            log.push_str(&conn_log::row(i));
        }
        log
    };
    for ext in ["gz", "zst"] {
        let compress = |data: &[u8]| compressed(ext, data);
        let mut cases = vec![
            ("shorter", rows(1..300), rows(10_000..10_100)),
            ("longer", rows(1..300), rows(20_000..20_600)),
        ];
        if ext == "gz" {
            // Same compressed length: zero bytes after the last member pad the shorter one.
            cases.push(("same", rows(1..300), rows(30_000..30_300)));
        }
        for (case, first, second) in cases {
            let db = tmp.path().join(format!("{case}-{ext}.db"));
            let f = tmp.path().join(format!("{case}.log.{ext}"));
            let (mut a, mut b) = (compress(first.as_bytes()), compress(second.as_bytes()));
            if case == "same" {
                let len = a.len().max(b.len());
                a.resize(len, 0);
                b.resize(len, 0);
            }
            std::fs::write(&f, &a).unwrap();
            ok(
                &run(&["import", "-q", "--db", s(&db), s(&f)]),
                "first import",
            );
            let before = events(&db);
            assert_eq!(before, numbers_of(&first), "{case} {ext}");
            std::fs::write(&f, &b).unwrap();
            let out = run(&["import", "--db", s(&db), s(&f)]);
            let stderr = text(&out.stderr);
            assert!(out.status.success(), "{case} {ext}: {stderr}");
            assert!(
                stderr.contains(&format!("{}: rewritten since it was imported", f.display()))
                    && stderr.contains("imported again whole"),
                "{case} {ext}: {stderr}"
            );
            assert!(
                !stderr.contains("imported whole before"),
                "{case} {ext}: {stderr}"
            );
            let mut want = before.clone();
            want.extend(numbers_of(&second));
            assert_eq!(events(&db), want, "{case} {ext}: {stderr}");
            // The checkpoint moved to the new file's end: unchanged, it is skipped.
            let out = run(&["import", "--db", s(&db), s(&f)]);
            let stderr = text(&out.stderr);
            assert!(
                stderr.contains("imported whole before") && !stderr.contains("rewritten"),
                "{case} {ext}: {stderr}"
            );
            assert_eq!(events(&db), want, "{case} {ext}");
        }

        // A file that only grew (a second member or frame): read on, no warning.
        let db = tmp.path().join(format!("grew-{ext}.db"));
        let f = tmp.path().join(format!("grew.log.{ext}"));
        let first = conn_log::log(0..100);
        let mut more = String::new();
        for i in 100..150 {
            more.push_str(&conn_log::row(i));
        }
        let mut data = compress(first.as_bytes());
        std::fs::write(&f, &data).unwrap();
        ok(
            &run(&["import", "-q", "--db", s(&db), s(&f)]),
            "first import",
        );
        data.extend(compress(more.as_bytes()));
        std::fs::write(&f, &data).unwrap();
        let out = run(&["import", "--db", s(&db), s(&f)]);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{ext}: {stderr}");
        assert!(!stderr.contains("rewritten"), "{ext}: {stderr}");
        assert_eq!(events(&db), (0..150).collect::<Vec<u64>>(), "{ext}");
    }
}

/// `data` as one gzip member (`gz`) or one zstd frame (`zst`).
fn compressed(ext: &str, data: &[u8]) -> Vec<u8> {
    if ext == "gz" {
        return gzip(&[data]);
    }
    let mut out = Vec::with_capacity(zstd_safe::compress_bound(data.len()));
    zstd_safe::compress(&mut out, data, 3).unwrap();
    out
}
