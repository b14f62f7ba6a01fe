//! `weir erase`, `weir compact` and `weir import --max-archive-size/--retain` through the real
//! binary: each selector, refusal of directories that are not archives, an export reading
//! while the same segments are erased, SIGKILL at random moments of erase and compaction, and
//! a live import under a disk budget.
//!
//! **Crash loop.** `WEIR_ERASE_CRASH_LOOP=N` kills N erases and N compactions (default 4
//! each); `WEIR_CRASH_SEED` replays a run.
//!
//! **Soak.** `WEIR_RETENTION_SOAK_SECS=1800` runs the live import under a budget for 30
//! minutes (default 3 seconds), restarting the import every tenth of the time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::cli::{export_json, ok, run, run_with_stdin, s, text, weir};
use common::conn_log::{check_event, log, numbers, row};
use common::rng::Rng;
use common::store::copy_dir;

/// An archive of conn events `0..n` (IDs = event numbers) in segments of `seg`.
fn archive(db: &Path, n: u64, seg: &str) {
    let out = run_with_stdin(
        &["import", "--db", s(db), "--max-segment-size", seg, "-q"],
        log(0..n).as_bytes(),
    );
    ok(&out, "import");
}

fn exported(db: &Path) -> Vec<u64> {
    let events = export_json(db);
    for (i, e) in numbers(&events).iter().zip(&events) {
        check_event(*i, e);
    }
    numbers(&events)
}

fn count(db: &Path, expr: &str) -> u64 {
    let mut args = vec!["count", "--db", s(db)];
    if !expr.is_empty() {
        args.push(expr);
    }
    ok(&run(&args), "count").trim().parse().unwrap()
}

fn verify_ok(db: &Path) {
    let out = run(&["verify", "--db", s(db)]);
    let stdout = ok(&out, "verify");
    assert!(stdout.starts_with("ok:"), "{stdout}");
    assert!(
        !text(&out.stderr).contains("not in the catalog"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn erase_by_each_selector() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    archive(&db, 6000, "16KiB");
    // --ids: inclusive, a partially covered segment at each end.
    let out = ok(
        &run(&["erase", "--db", s(&db), "--ids", "1001-2999"]),
        "erase --ids",
    );
    assert!(out.starts_with("erased 1999 events"), "{out}");
    // Whole segments inside the range go; the two at its ends are rewritten.
    assert!(
        out.contains(" dropped, 2 segments rewritten into "),
        "{out}"
    );
    let want: Vec<u64> = (0..1001).chain(3000..6000).collect();
    assert_eq!(exported(&db), want);
    verify_ok(&db);
    // Survivors keep their IDs; erased IDs are gone.
    let got = ok(
        &run(&["get", "--db", s(&db), "--to", "json", "1000", "3000"]),
        "get",
    );
    let got: Vec<serde_json::Value> = got
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(numbers(&got), vec![1000, 3000]);
    let out = run(&["get", "--db", s(&db), "1001"]);
    assert_eq!(out.status.code(), Some(1));
    // --before: event i has ts 1600000000 + i / 1000 s.
    ok(
        &run(&["erase", "--db", s(&db), "--before", "@1600000001"]),
        "erase --before",
    );
    let want: Vec<u64> = (1000..1001).chain(3000..6000).collect();
    assert_eq!(exported(&db), want);
    // EXPR.
    ok(
        &run(&["erase", "--db", s(&db), "n >= 15000 && n < 15030"]),
        "erase EXPR",
    );
    let want: Vec<u64> = want
        .into_iter()
        .filter(|i| !(5000..5010).contains(i))
        .collect();
    assert_eq!(exported(&db), want);
    // --older-than: everything (2020) is older than a day.
    let out = ok(
        &run(&["erase", "--db", s(&db), "--older-than", "1d"]),
        "erase --older-than",
    );
    assert!(
        out.starts_with(&format!("erased {} events", want.len())),
        "{out}"
    );
    // Every segment is wholly covered: the report names only the drops.
    assert!(
        out.contains(" dropped)") && !out.contains("rewritten"),
        "{out}"
    );
    assert_eq!(count(&db, ""), 0);
    verify_ok(&db);
    // An erase that selects nothing changes nothing.
    let out = ok(
        &run(&["erase", "--db", s(&db), "--ids", "0-10"]),
        "erase nothing",
    );
    assert_eq!(out.trim_end(), "erased 0 events (no segment changed)");
    // New events continue after the erased IDs.
    let out = run_with_stdin(
        &["import", "--db", s(&db), "-q"],
        log(7000..7010).as_bytes(),
    );
    ok(&out, "import");
    let got = ok(
        &run(&["get", "--db", s(&db), "--to", "json", "6000"]),
        "get",
    );
    assert!(got.contains(&common::conn_log::uid(7000)), "{got}");
}

#[test]
fn usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    archive(&db, 10, "16KiB");
    for args in [
        vec!["erase", "--db", s(&db)],
        vec!["erase", "--db", s(&db), "--ids", "5-2"],
        vec![
            "erase",
            "--db",
            s(&db),
            "--ids",
            "1-2",
            "--before",
            "2020-01-01",
        ],
        vec!["erase", "--db", s(&db), "--before", "yesterday-ish"],
        vec!["erase", "--db", s(&db), "x =="],
        vec!["erase", "--db", s(&db), "ts == \"yesterday\""],
        vec!["compact", "--db", s(&db), "--max-segment-size", "4GiB"],
    ] {
        let out = run(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    // A budget must hold two segments.
    let out = run_with_stdin(
        &[
            "import",
            "--db",
            s(&db),
            "--max-segment-size",
            "1MiB",
            "--max-archive-size",
            "1MiB",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--max-archive-size"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn new_commands_refuse_what_is_not_an_archive() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes");
    std::fs::create_dir(&notes).unwrap();
    std::fs::write(notes.join("todo.txt"), "x").unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let missing = dir.path().join("missing");
    for db in [&notes, &empty, &missing] {
        for args in [
            vec!["erase", "--db", s(db), "--ids", "0-1"],
            vec!["compact", "--db", s(db)],
        ] {
            let out = run(&args);
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            let err = text(&out.stderr);
            assert!(
                err.contains("is not a weir archive") || err.contains("no weir database"),
                "{err}"
            );
        }
    }
    // Nothing was created or touched.
    assert!(!missing.exists());
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(&notes).unwrap().count(), 1);
}

#[test]
fn compact_merges_the_segments_of_short_imports() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for k in 0..8u64 {
        let out = run_with_stdin(
            &["import", "--db", s(&db), "-q"],
            log(k * 100..k * 100 + 100).as_bytes(),
        );
        ok(&out, "import");
    }
    ok(
        &run(&["erase", "--db", s(&db), "--ids", "150-249"]),
        "erase",
    );
    let before = common::cli::segment_files(&db).len();
    assert_eq!(before, 8);
    let out = ok(&run(&["compact", "--db", s(&db)]), "compact");
    assert!(
        out.starts_with("compacted 8 segments into 1 segment"),
        "{out}"
    );
    assert_eq!(common::cli::segment_files(&db).len(), 1);
    let want: Vec<u64> = (0..150).chain(250..800).collect();
    assert_eq!(exported(&db), want);
    verify_ok(&db);
    let out = ok(&run(&["compact", "--db", s(&db)]), "compact again");
    assert!(out.starts_with("compacted 0 segments"), "{out}");
}

/// An export that has read part of the archive when every segment is erased finishes with
/// the whole old snapshot, exit 0 (its registration keeps the files until it ends).
#[test]
fn erase_while_an_export_reads_the_same_segments() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let n = 20_000;
    archive(&db, n, "64KiB");
    let mut export = weir()
        .args(["export", "--db", s(&db), "--to", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(export.stdout.take().unwrap()).lines();
    let first: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    check_event(0, &first);
    // The export now blocks on the full pipe, in the middle of the archive.
    let out = ok(
        &run(&["erase", "--db", s(&db), "--ids", &format!("0-{}", n - 1)]),
        "erase",
    );
    assert!(out.starts_with(&format!("erased {n} events")), "{out}");
    assert_eq!(count(&db, ""), 0);
    let mut seen = 1u64;
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        check_event(seen, &v);
        seen += 1;
    }
    let status = export.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut export.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert_eq!(seen, n);
    // Now that the reader is gone, the next writer deletes the erased files.
    ok(&run(&["compact", "--db", s(&db)]), "compact");
    assert!(common::cli::segment_files(&db).is_empty());
    verify_ok(&db);
}

/// Kills `weir ARGS` on a copy of `template` at random moments; after each kill the archive
/// holds `old` or `new` (as event numbers), verifies, and a repair brings nothing back.
fn kill_loop(
    template: &Path,
    args: &[&str],
    (old, new): (&[u64], &[u64]),
    max_delay: Duration,
    rng: &mut Rng,
) {
    let segments_before = common::cli::info(template)["segments"].as_u64().unwrap();
    let kills: u64 = std::env::var("WEIR_ERASE_CRASH_LOOP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let (mut finished, mut new_state, mut merged) = (0, 0, 0);
    for k in 0..kills {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        copy_dir(template, &db);
        let mut full = args.to_vec();
        full.extend(["--db", s(&db)]);
        let mut child = weir()
            .args(&full)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kills land before, during and after the change (fsyncs and renames).
        let delay = Duration::from_micros(rng.next() % max_delay.as_micros() as u64);
        std::thread::sleep(delay);
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.success() {
            finished += 1;
        }
        let what = format!("{args:?} killed after {delay:?} (kill {k})");
        // Readers first, before any writer cleaned up.
        verify_ok(&db);
        let got = exported(&db);
        assert!(got == old || got == new, "{what}: neither state");
        if got == new && old != new {
            new_state += 1;
        }
        if common::cli::info(&db)["segments"].as_u64().unwrap() < segments_before {
            merged += 1;
        }
        // The next writer finishes the clean-up; then repair finds nothing to resurrect.
        ok(&run(&["compact", "--db", s(&db)]), "compact after kill");
        let out = ok(&run(&["verify", "--repair", "--db", s(&db)]), "repair");
        // Writing the index of a segment whose own the kill prevented is all it may do.
        let other: Vec<&str> = out
            .lines()
            .filter(|l| !l.contains("wrote index") || !l.contains("it had none"))
            .collect();
        assert!(
            out.contains("repair: nothing to do") || other.is_empty(),
            "{what}: {out}"
        );
        let again = exported(&db);
        assert_eq!(again, got, "{what}");
        // No file is left that is not in the catalog.
        let info = common::cli::info(&db);
        assert_eq!(
            info["segments"].as_u64().unwrap() as usize,
            common::cli::segment_files(&db).len(),
            "{what}"
        );
    }
    println!(
        "{args:?}: {kills} kills, {finished} finished before the kill, {new_state} left the new events, {merged} fewer segments"
    );
}

#[test]
fn erase_and_compact_killed_at_random_moments() {
    let mut rng = Rng::from_env("WEIR_CRASH_SEED");
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("t");
    archive(&template, 4000, "8KiB");
    let all: Vec<u64> = (0..4000).collect();
    let erased: Vec<u64> = (0..4000).filter(|i| !(500..1500).contains(i)).collect();
    let ms = Duration::from_millis;
    let erase = ["erase", "--ids", "500-1499"];
    kill_loop(&template, &erase, (&all, &erased), ms(200), &mut rng);
    let compact = ["compact", "--max-segment-size", "64KiB"];
    kill_loop(&template, &compact, (&all, &all), ms(800), &mut rng);
}

/// Bytes of the sealed segment files.
fn sealed_bytes(db: &Path) -> u64 {
    common::cli::segment_files(db)
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// A live import under a disk budget, restarted now and then: the sealed segments never pass
/// the budget, and the newest events are kept.
#[test]
fn live_import_under_a_budget() {
    let secs: u64 = std::env::var("WEIR_RETENTION_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let budget: u64 = 256 << 10;
    let end = Instant::now() + Duration::from_secs(secs);
    let restart_every = Duration::from_millis(secs * 100).max(Duration::from_millis(500));
    let mut next = 0u64;
    let mut peak = 0u64;
    let mut restarts = 0;
    while Instant::now() < end {
        let mut child = weir()
            .args([
                "import",
                "--db",
                s(&db),
                "-q",
                "--max-segment-size",
                "16KiB",
                "--max-archive-size",
                "256KiB",
                "--batch-timeout",
                "50ms",
                // Uncompressed, so that a few seconds of input pass the budget.
                "--compression",
                "none",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(common::conn_log::header().as_bytes())
            .unwrap();
        let until = (Instant::now() + restart_every).min(end);
        while Instant::now() < until {
            let mut chunk = String::new();
            for i in next..next + 200 {
                chunk.push_str(&row(i));
            }
            stdin.write_all(chunk.as_bytes()).unwrap();
            next += 200;
            std::thread::sleep(Duration::from_millis(10));
            let b = sealed_bytes(&db);
            peak = peak.max(b);
            assert!(
                b <= budget,
                "{b} bytes of segments > budget {budget}: {:?} {}",
                common::cli::segment_files(&db),
                std::fs::read_to_string(db.join("catalog.json")).unwrap_or_default()
            );
        }
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        restarts += 1;
        assert!(sealed_bytes(&db) <= budget);
    }
    verify_ok(&db);
    let got = exported(&db);
    // The newest events are kept, as a suffix.
    assert_eq!(*got.last().unwrap(), next - 1);
    let first = got[0];
    assert_eq!(got, (first..next).collect::<Vec<_>>());
    assert!(
        first > 0,
        "the budget never erased anything ({next} events)"
    );
    println!("{secs} s: {next} events, {restarts} imports, peak {peak} bytes of segments, kept from {first}");
}

#[test]
fn erase_and_compact_take_the_writer_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    archive(&db, 100, "16KiB");
    // An import running on the archive holds the lock.
    let mut import = weir()
        .args(["import", "--db", s(&db), "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = import.stdin.take().unwrap();
    stdin.write_all(log(100..110).as_bytes()).unwrap();
    common::cli::wait_for(
        "the import to take the lock",
        Duration::from_secs(20),
        || {
            std::fs::read_to_string(db.join("LOCK"))
                .is_ok_and(|p| p.trim() == import.id().to_string())
        },
    );
    for args in [
        vec!["erase", "--db", s(&db), "--ids", "0-9"],
        vec!["compact", "--db", s(&db)],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            text(&out.stderr).contains("locked"),
            "{}",
            text(&out.stderr)
        );
    }
    drop(stdin);
    assert!(import.wait().unwrap().success());
    assert_eq!(exported(&db), (0..110).collect::<Vec<_>>());
}

#[test]
fn import_with_retain_erases_old_segments_and_info_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    archive(&db, 3000, "16KiB");
    // The events are of 2020: older than 30 days. The new import's segment goes too once it
    // is sealed (at the end); the events of the last import stay until then.
    let out = run_with_stdin(
        &["import", "--db", s(&db), "--retain", "30d"],
        log(3000..3010).as_bytes(),
    );
    ok(&out, "import --retain");
    let err = text(&out.stderr);
    assert!(err.contains("weir: retention erased"), "{err}");
    assert_eq!(count(&db, ""), 0);
    let info = ok(&run(&["info", "--db", s(&db)]), "info");
    assert!(info.contains("erased:    3010 events"), "{info}");
    assert_eq!(common::cli::info(&db)["erased_events"], 3010);
    verify_ok(&db);
}

/// `--retain 90` once meant 90 seconds and erased a whole archive: a retention period, an age
/// to erase and a disk budget without a unit are refused, with the units named, before
/// anything is created; so are `retain = "90"` and `max_archive_size = "500"` in a pipeline.
#[test]
fn retention_settings_without_a_unit_are_refused_with_the_units() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for (args, units) in [
        (
            vec!["import", "--db", s(&db), "--retain", "90"],
            "(s, m, h, d)",
        ),
        (
            vec!["import", "--db", s(&db), "--max-archive-size", "500"],
            "GiB",
        ),
    ] {
        let out = run_with_stdin(&args, log(0..3).as_bytes());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("without a unit"), "{args:?}: {err}");
        assert!(err.contains(units), "{args:?}: {err}");
        assert!(!db.exists(), "{args:?} created the archive");
    }
    archive(&db, 10, "1MiB");
    let out = run(&["erase", "--db", s(&db), "--older-than", "90"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("(s, m, h, d)"), "{err}");
    assert_eq!(count(&db, ""), 10);
    // The same in a pipeline file, at the key's line.
    for (key, value, units) in [
        ("retain", "90", "(s, m, h, d)"),
        ("max_archive_size", "500", "GiB"),
    ] {
        let pipeline = dir.path().join(format!("{key}.toml"));
        std::fs::write(
            &pipeline,
            format!(
                "[sources.in]\ntype = \"stdin\"\n\n[sinks.out]\ntype = \"archive\"\ninputs = [\"in\"]\ndb = {:?}\n{key} = {value:?}\n",
                s(&dir.path().join("other"))
            ),
        )
        .unwrap();
        let out = run(&["run", "--check", s(&pipeline)]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{key}: {err}");
        assert!(
            err.contains(&format!(":8: [sinks.out] {key}: ")),
            "{key}: {err}"
        );
        assert!(err.contains("without a unit"), "{key}: {err}");
        assert!(err.contains(units), "{key}: {err}");
    }
}

/// A back-fill of events older than the retention period is said while the import runs, at
/// its first batch, with the cut-off in UTC: not only in the final summary.
#[test]
fn an_import_of_events_that_retention_erases_says_so_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut child = weir()
        .args([
            "import",
            "--db",
            s(&db),
            "--retain",
            "30d",
            "--batch-timeout",
            "50ms",
        ])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Events of 2020, and stdin stays open: the import is still running.
    stdin.write_all(log(0..10).as_bytes()).unwrap();
    stdin.flush().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let line = line.unwrap();
            let _ = tx.send(line);
        }
    });
    let warning = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("a warning while the import runs");
    drop(stdin);
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let rest: Vec<String> = rx.try_iter().collect();
    assert!(status.success(), "{warning}\n{rest:?}");
    let prefix = format!("weir: warning: {}: events before 20", s(&db));
    assert!(warning.starts_with(&prefix), "{warning}");
    assert!(
        warning.contains("Z are erased by the retention period of 30d (--retain, retain); this import brings older ones (first seen: 2020-09-13T12:26:40Z)"),
        "{warning}"
    );
    // The cut-off is 30 days ago, in whole seconds.
    let cutoff = &warning[prefix.len() - 2..prefix.len() + 18];
    assert!(cutoff.ends_with('Z') && cutoff.len() == 20, "{cutoff}");
    // Said once; the summary still counts what was erased.
    assert!(
        !rest.iter().any(|l| l.contains("events before")),
        "{rest:?}"
    );
    assert!(
        rest.iter()
            .any(|l| l.starts_with("weir: retention erased 1 segment (10 events)")),
        "{rest:?}"
    );
}

/// After many erases, `weir info` says how many ID ranges there are with the first and the
/// last, instead of listing every one; `--json` keeps the full lists.
#[test]
fn info_summarizes_the_id_ranges_of_many_erases() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    archive(&db, 100, "1MiB");
    for id in [10, 20, 30, 40, 50, 60] {
        let id = id.to_string();
        ok(&run(&["erase", "--db", s(&db), "--ids", &id]), "erase");
    }
    let info = ok(&run(&["info", "--db", s(&db)]), "info");
    assert!(
        info.contains(
            "\nid ranges: 7 ranges, first [0, 10), last [61, 100) (all of them: --json)\n"
        ),
        "{info}"
    );
    assert!(
        info.contains("\nerased:    6 events: 6 ranges, first [10, 11), last [60, 61) (all of them: --json)\n"),
        "{info}"
    );
    let json = common::cli::info(&db);
    assert_eq!(json["id_ranges"].as_array().unwrap().len(), 7);
    assert_eq!(
        json["erased_ranges"],
        serde_json::json!([[10, 11], [20, 21], [30, 31], [40, 41], [50, 51], [60, 61]])
    );
    // A few are listed.
    let few = dir.path().join("few");
    archive(&few, 100, "1MiB");
    ok(&run(&["erase", "--db", s(&few), "--ids", "10-19"]), "erase");
    let info = ok(&run(&["info", "--db", s(&few)]), "info");
    assert!(info.contains("\nid ranges: [0, 10) [20, 100)\n"), "{info}");
    assert!(
        info.contains("\nerased:    10 events: [10, 20)\n"),
        "{info}"
    );
}
