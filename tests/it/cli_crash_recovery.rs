//! `kill -9` of the real `weir import` binary at random moments, over several iterations on
//! one database, and what the next open finds.
//!
//! Each iteration starts `weir import` reading stdin from a pipe that a thread feeds in bursts
//! of generated events (each with a unique uid), with a tiny batch size and batch timeout and
//! a small `--max-segment-size`, so that batches are acknowledged and segments sealed all the
//! time. At a random moment another process runs `weir export`: the events it sees are
//! *acknowledged* (they reached the archive's files). Shortly after, at another random moment,
//! the importer gets SIGKILL. Then, before and after the next writer opens the database:
//!
//! - `weir verify` exits 0 (a torn WAL tail is a warning, not damage), also while the import
//!   runs, and `weir info` during the import reports dense IDs;
//! - `weir export` gives every event acknowledged before the kill, exactly once and in order;
//!   the other events of the pipe may be missing, but what is there is a prefix of what was
//!   sent, in order, never duplicated and with intact values (checked field by field);
//! - `weir info` reports dense IDs `[0, events)`.
//!
//! The guarantee checked is the one against a *process* crash, which holds for every `--sync`
//! mode (the page cache survives the process); the iterations cycle through `batch` (the
//! default), `always` and `never`. Power loss is not simulated. The seed is printed; set
//! `WEIR_CRASH_SEED` to replay a run.
//!
//! **Crash loop.** `WEIR_CRASH_LOOP=N` runs N iterations (= N kills) instead of the default
//! 12, e.g. `WEIR_CRASH_LOOP=200 cargo test --release --test it cli_crash_recovery::kill_9`; the
//! 8 KiB segments keep seals in flight all the time, so most kills land between, or in, seals.
//! Every [`ITERATIONS`] kills it starts over on a fresh database (each iteration exports the
//! whole database several times, so one database for all kills would make the loop quadratic).
//! The test prints the kills per `--sync` mode and how many iterations sealed a segment.

use crate::common;

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::cli::{self, export_json, info, ok, run, s, wait_for, weir};
use common::conn_log::{self, check_event, header, numbers, row};
use common::rng::Rng;
use common::store::copy_dir;

/// Iterations (kills) by default; `WEIR_CRASH_LOOP` overrides it.
const ITERATIONS: u64 = 12;

/// The number of iterations: `WEIR_CRASH_LOOP`, else [`ITERATIONS`].
fn iterations() -> u64 {
    std::env::var("WEIR_CRASH_LOOP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(ITERATIONS)
}

/// Checks the database after a crash; returns the event numbers it holds.
///
/// `before`: the events the database held when this iteration's importer started;
/// `sent`: the numbers written to this iteration's pipe, in order; `acked`: the numbers a
/// concurrent export saw before the kill.
fn check_after_crash(
    db: &Path,
    before: &[u64],
    sent: &[u64],
    acked: &[u64],
    what: &str,
) -> Vec<u64> {
    // Killed before it created the database, or after it created the directory but before
    // any file in it: an empty directory, which readers refuse as not an archive and the next
    // import takes as a new one.
    let empty = std::fs::read_dir(db).map_or(true, |mut d| d.next().is_none());
    if empty {
        assert!(
            before.is_empty() && acked.is_empty(),
            "{what}: database gone"
        );
        return Vec::new();
    }
    let verify = run(&["verify", "--db", s(db)]);
    let out = ok(&verify, &format!("{what}: weir verify"));
    assert!(out.starts_with("ok:"), "{what}: {out}");

    let events = export_json(db);
    let got = numbers(&events);
    for (e, n) in events.iter().zip(&got) {
        check_event(*n, e);
    }
    let unique: HashSet<u64> = got.iter().copied().collect();
    assert_eq!(unique.len(), got.len(), "{what}: duplicated events");
    // Nothing that was there before is lost, and the new events are a prefix of the pipe.
    assert!(got.len() >= before.len(), "{what}: events lost");
    assert_eq!(
        &got[..before.len()],
        before,
        "{what}: earlier events changed"
    );
    let new = &got[before.len()..];
    assert!(new.len() <= sent.len(), "{what}: more events than sent");
    assert_eq!(new, &sent[..new.len()], "{what}: not a prefix of the pipe");
    // Every acknowledged event survived.
    assert!(
        got.len() >= acked.len() && got[..acked.len()] == *acked,
        "{what}: acknowledged events lost: {} acknowledged, {} present",
        acked.len(),
        got.len()
    );
    let info = info(db);
    assert_eq!(info["events"], got.len() as u64, "{what}: {info}");
    if !got.is_empty() {
        assert_eq!(
            info["id_ranges"],
            serde_json::json!([[0, got.len()]]),
            "{what}: IDs not dense: {info}"
        );
    }
    got
}

#[test]
fn kill_9_at_random_moments_loses_no_acknowledged_event() {
    let mut rng = Rng::from_env("WEIR_CRASH_SEED");
    let seed = rng.0;
    let tmp = tempfile::tempdir().unwrap();
    let mut db = tmp.path().join("db");
    let mut held: Vec<u64> = Vec::new();
    let mut next_number = 0u64;
    let mut total_acked = 0;
    let iterations = iterations();
    let started = std::time::Instant::now();
    // Kills per --sync mode, and iterations that sealed at least one segment.
    let mut kills = [0u64; 3];
    let mut sealing = 0u64;
    let mut segments = 0;

    for it in 0..iterations {
        if it > 0 && it % ITERATIONS == 0 {
            // The crash loop's next round: a fresh database.
            db = tmp.path().join(format!("db-{}", it / ITERATIONS));
            held.clear();
            segments = 0;
        }
        let sync = ["batch", "always", "never"][(it % 3) as usize];
        let what = format!("iteration {it} (seed {seed}, --sync {sync})");
        let stderr_file = tmp.path().join(format!("stderr-{it}"));
        let mut child = weir()
            .args(["import", "--quiet", "--db", s(&db)])
            .args(["--batch-size", "7", "--batch-timeout", "20ms"])
            .args(["--max-segment-size", "8KiB", "--sync", sync])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr_file).unwrap())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();

        // The feeder: bursts of 1..40 events, 0..15 ms apart; keeps the pipe open until told.
        let first = next_number;
        let written = Arc::new(AtomicU64::new(first));
        let stop = Arc::new(AtomicBool::new(false));
        let feeder = {
            let (written, stop) = (written.clone(), stop.clone());
            let mut rng = Rng(rng.next() | 1);
            std::thread::spawn(move || {
                if stdin.write_all(header().as_bytes()).is_err() {
                    return;
                }
                let mut n = first;
                while !stop.load(Ordering::SeqCst) {
                    let burst = 1 + rng.below(40);
                    let text: String = (n..n + burst).map(row).collect();
                    if stdin.write_all(text.as_bytes()).is_err() {
                        return;
                    }
                    n += burst;
                    written.store(n, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(rng.below(16)));
                }
            })
        };

        // Let it run, then see what is acknowledged (at least one new batch), then kill at
        // another random moment. Every fourth iteration on average kills early instead, while
        // the importer may still be replaying the previous crash's WAL.
        let early = rng.below(4) == 0;
        let mut acked = held.clone();
        if !early {
            std::thread::sleep(Duration::from_millis(rng.below(300)));
            wait_for("acknowledged events", Duration::from_secs(30), || {
                let snapshot = run(&["export", "--db", s(&db), "--to", "json"]);
                // On a loaded machine the first importer may not have created the database yet.
                if !snapshot.status.success()
                    && cli::text(&snapshot.stderr).contains("no weir database")
                {
                    return false;
                }
                acked = numbers(
                    &ok(&snapshot, &format!("{what}: concurrent export"))
                        .lines()
                        .map(|l| serde_json::from_str(l).unwrap())
                        .collect::<Vec<serde_json::Value>>(),
                );
                acked.len() > held.len()
            });
            // Other readers while the import runs: `info` sees dense IDs covering at least
            // the acknowledged events, `verify` finds no damage.
            let info = info(&db);
            let n = info["events"].as_u64().unwrap();
            assert!(n >= acked.len() as u64, "{what}: {info}");
            assert_eq!(
                info["id_ranges"],
                serde_json::json!([[0, n]]),
                "{what}: IDs not dense during the import: {info}"
            );
            let verify = run(&["verify", "--db", s(&db)]);
            assert!(
                ok(&verify, &format!("{what}: weir verify during the import")).starts_with("ok:")
            );
        }
        std::thread::sleep(Duration::from_millis(rng.below(if early {
            30
        } else {
            60
        })));
        let still_running = child.try_wait().unwrap().is_none();
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        stop.store(true, Ordering::SeqCst);
        feeder.join().unwrap();
        let log = std::fs::read_to_string(&stderr_file).unwrap_or_default();
        assert!(
            still_running,
            "{what}: importer ended early: {status}: {log}"
        );
        assert!(
            log.is_empty() || !log.contains("error"),
            "{what}: importer reported: {log}"
        );

        let end = written.load(Ordering::SeqCst);
        next_number = end;
        let sent: Vec<u64> = (first..end).collect();
        // The snapshot itself: the earlier events, then a prefix of this pipe.
        assert_eq!(
            &acked[..held.len()],
            &held[..],
            "{what}: snapshot lost events"
        );
        total_acked += acked.len() - held.len();

        // Read-only opens right after the crash, then the next writer's replay (next
        // iteration) must find the same.
        held = check_after_crash(&db, &held, &sent, &acked, &what);
        kills[(it % 3) as usize] += 1;
        let now = cli::segment_files(&db).len();
        if now > segments {
            sealing += 1;
        }
        segments = now;
        eprintln!(
            "{what}: {}sent {}, acknowledged {}, present {}, {} segments",
            if early { "early kill: " } else { "" },
            sent.len(),
            acked.len(),
            held.len(),
            cli::segment_files(&db).len()
        );
    }
    assert!(total_acked > 0);
    eprintln!(
        "crash loop: {iterations} kills (--sync batch {}, always {}, never {}), {sealing} of them \
         after seals in that iteration, {segments} segments, {} events, {:.0?}",
        kills[0],
        kills[1],
        kills[2],
        held.len(),
        started.elapsed()
    );

    // A clean import after the last crash completes the archive: replayed WAL plus new events.
    let more: String = header() + &(next_number..next_number + 10).map(row).collect::<String>();
    let file = tmp.path().join("more.log");
    std::fs::write(&file, more).unwrap();
    let out = run(&["import", "--quiet", "--db", s(&db), s(&file)]);
    ok(&out, "final clean import");
    held.extend(next_number..next_number + 10);
    let got = numbers(&export_json(&db));
    assert_eq!(got, held);
    let verify = ok(&run(&["verify", "--db", s(&db)]), "final verify");
    assert!(
        verify.starts_with("ok: ") && verify.contains(&format!("{} events", held.len())),
        "{verify}"
    );
    let info = info(&db);
    assert_eq!(
        info["wal"]["events"], 0,
        "a clean close seals the WAL: {info}"
    );
    assert_eq!(info["id_ranges"], serde_json::json!([[0, held.len()]]));
}

#[test]
fn wal_left_by_kill_9_torn_tail_is_dropped_and_damage_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    // The default segment size: after the kill, all events are in the WAL only.
    let mut child = weir()
        .args(["import", "--quiet", "--db", s(&db)])
        .args(["--batch-size", "5", "--batch-timeout", "20ms"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(conn_log::log(0..100).as_bytes()).unwrap();
    stdin.flush().unwrap();
    wait_for("100 acknowledged events", Duration::from_secs(30), || {
        let out = run(&["export", "--db", s(&db), "--to", "json"]);
        out.status.success() && String::from_utf8_lossy(&out.stdout).lines().count() == 100
    });
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    let info = info(&db);
    assert_eq!(info["segments"], 0, "{info}");
    assert_eq!(info["wal"]["events"], 100, "{info}");
    let batches = info["wal"]["batches"].as_u64().unwrap();
    assert!(batches >= 20, "{info}");
    let verify = ok(&run(&["verify", "--db", s(&db)]), "verify after kill");
    assert!(verify.starts_with("ok: 0 segments, 100 events"), "{verify}");
    let wal = db.join("wal");
    let wal_bytes = std::fs::read(&wal).unwrap();

    // A torn last record (an interrupted write) is dropped with a warning, not an error.
    let torn = tmp.path().join("torn");
    copy_dir(&db, &torn);
    let torn_wal = torn.join("wal");
    std::fs::write(&torn_wal, &wal_bytes[..wal_bytes.len() - 3]).unwrap();
    let out = run(&["verify", "--db", s(&torn)]);
    assert!(ok(&out, "verify of a torn WAL").starts_with("ok:"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning"));
    let kept = numbers(&export_json(&torn));
    assert!(
        kept.len() >= 95 && kept.len() < 100,
        "{} events",
        kept.len()
    );
    assert_eq!(kept, (0..kept.len() as u64).collect::<Vec<_>>());
    // The next writer replays the rest, warns, and seals it.
    let out = weir()
        .args(["import", "--quiet", "--db", s(&torn)])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    ok(&out, "import after a torn WAL");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("warning"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(numbers(&export_json(&torn)), kept);
    assert!(ok(&run(&["verify", "--db", s(&torn)]), "verify").starts_with("ok: 1 segment,"));

    // A damaged record in the middle is corruption: named with file and offset, exit 1, and
    // the writer refuses to open rather than dropping acknowledged batches.
    let mut bad = wal_bytes.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x55;
    std::fs::write(&wal, &bad).unwrap();
    let out = run(&["verify", "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains(s(&wal)) && report.contains("offset"),
        "{report}"
    );
    let out = run(&["import", "--quiet", "--db", s(&db), "-"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("wal") && err.contains("offset"), "{err}");
    assert_eq!(std::fs::read(&wal).unwrap(), bad, "the WAL was changed");
}
