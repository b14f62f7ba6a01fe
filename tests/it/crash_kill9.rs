//! The crash test against the real binary: `weir import` reads from a pipe and is killed with
//! SIGKILL at pseudo-random moments, several times, into the same database. After each kill,
//! every event a reader had already seen (= acknowledged: in a segment or the WAL) is still
//! there; the archive is always an exact prefix of each round's input, in order, with no
//! duplicate; and `weir verify` is clean.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::cli::weir;
use weir::unstable::store::Archive;
use weir::unstable::types::Type;
use weir::unstable::value::{decode_row, Value};

fn header() -> String {
    "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tcrash\n\
     #fields\tts\tuid\tn\tpad\n#types\ttime\tstring\tcount\tstring\n"
        .to_string()
}

fn line(round: u64, i: u64) -> String {
    let pad: String = (0..(40 + i % 160))
        .map(|k| (b'a' + ((i + k) % 26) as u8) as char)
        .collect();
    format!(
        "{}.{:06}\tR{round}_{i}\t{i}\t{pad}\n",
        1_600_000_000 + i,
        i % 1_000_000
    )
}

/// Events of the archive as (uid, n), in ID order.
fn events(db: &Path) -> Vec<(String, u64)> {
    let archive = Archive::open(db).unwrap();
    let types = [Type::Time, Type::String, Type::Count, Type::String];
    let mut out = Vec::new();
    for b in archive.scan() {
        let b = b.unwrap();
        for row in b.rows() {
            let v = decode_row(row, &types).unwrap();
            let (Value::String(uid), Value::Count(n)) = (&v[1], &v[2]) else {
                panic!("unexpected row {v:?}");
            };
            out.push((String::from_utf8(uid.clone()).unwrap(), *n));
        }
    }
    out
}

fn seen_events(db: &Path) -> u64 {
    Archive::open(db)
        .and_then(|a| a.info())
        .map(|i| i.events)
        .unwrap_or(0)
}

#[test]
fn kill_dash_nine_during_import_from_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("weir.db");
    let mut rounds: Vec<u64> = Vec::new(); // events kept per round
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    for round in 0..5u64 {
        let before = seen_events(&db);
        let mut child = weir()
            .args(["import", "--db"])
            .arg(&db)
            .args(["--max-segment-size", "1MiB", "--batch-size", "200"])
            .args(["--batch-timeout", "20ms", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let feeder = std::thread::spawn(move || {
            let mut text = header();
            for i in 0..2_000_000u64 {
                text.push_str(&line(round, i));
                if text.len() > 64 << 10 {
                    if stdin.write_all(text.as_bytes()).is_err() {
                        return; // killed
                    }
                    text.clear();
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        });
        // Run for a pseudo-random time after the round's first acknowledged batch (enough to
        // seal a few 1 MiB segments in most rounds), remembering how many events a reader saw:
        // those were acknowledged. The time counts from that batch, not from the start: the
        // start (recovering the WAL of the last kill) takes long on a loaded machine, and these
        // tests share their process and the cores with others (tests/it/main.rs).
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let run = Duration::from_millis(300 + rng % 1500);
        let mut acked = before;
        let started = Instant::now();
        while acked == before && started.elapsed() < Duration::from_secs(60) {
            acked = acked.max(seen_events(&db));
            std::thread::sleep(Duration::from_millis(10));
        }
        let start = Instant::now();
        while start.elapsed() < run {
            acked = acked.max(seen_events(&db));
            std::thread::sleep(Duration::from_millis(10));
        }
        acked = acked.max(seen_events(&db));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        feeder.join().unwrap();

        let all = events(&db);
        assert!(
            all.len() as u64 >= acked,
            "round {round}: {} events after the crash, {acked} were acknowledged",
            all.len()
        );
        let kept = all.len() as u64 - rounds.iter().sum::<u64>();
        rounds.push(kept);
        // The archive is round 0's prefix, then round 1's, ...: in order, nothing twice.
        let mut it = all.iter();
        for (r, &n) in rounds.iter().enumerate() {
            for i in 0..n {
                let (uid, got) = it.next().unwrap();
                assert_eq!(uid, &format!("R{r}_{i}"), "round {r} event {i}");
                assert_eq!(*got, i);
            }
        }
        let verify = weir().args(["verify", "--db"]).arg(&db).output().unwrap();
        assert!(
            verify.status.success(),
            "round {round}: weir verify failed: {}{}",
            String::from_utf8_lossy(&verify.stdout),
            String::from_utf8_lossy(&verify.stderr)
        );
    }
    assert!(rounds.iter().filter(|&&n| n > 0).count() >= 3, "{rounds:?}");
    // A last clean import completes the active segment from the WAL and seals it.
    let st = weir()
        .args(["import", "--db"])
        .arg(&db)
        .arg("-")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(events(&db).len() as u64, rounds.iter().sum::<u64>());
    let archive = Archive::open(&db).unwrap();
    assert_eq!(archive.info().unwrap().wal.events, 0);
    assert!(archive.verify().is_ok());
    eprintln!(
        "events kept per round: {rounds:?}, segments: {}",
        archive.catalog().segments.len()
    );
}
