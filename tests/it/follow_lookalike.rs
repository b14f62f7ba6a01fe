//! Following files that weir could take for others, or never sees (issue 55 items 9 and 10):
//! files rotated away while weir was down, beside a `current/`-only pattern, and look-alike
//! files (the same header and first rows) in different directories.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::cli::s;
use common::conn_log::{header, row};
use common::follow::{append, follow, stop, streams, wait_count};

const STRIDE: u64 = 1_000_000;

/// The header of a conn log opened at `open` (its `#open` line).
fn log_header(open: &str) -> String {
    header().replace("#path\tconn\n", &format!("#path\tconn\n#open\t{open}\n"))
}

fn rows(k: u64, range: std::ops::Range<u64>) -> String {
    range.map(|i| row(k * STRIDE + i)).collect()
}

/// Item 10: with a `current/`-only pattern, weir is down while zeekctl rotates the followed
/// `conn.log` into a dated directory, and a whole further hour is created and rotated too.
/// The restart warns of the checkpointed file that is gone (as before) and, once, of the
/// files beside it that no pattern matches, naming the pattern that would have found them.
#[test]
fn files_rotated_while_down_beside_a_current_only_pattern_are_warned_of() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    let current = logs.join("current");
    std::fs::create_dir_all(&current).unwrap();
    let db = tmp.path().join("db");
    let conn = current.join("conn.log");
    let first = log_header("2009-11-18-08-00-00") + &rows(0, 0..100);
    append(&conn, &first);
    let pattern = format!("{}/*.log", s(&current));
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 100);
    stop(child);
    // While weir is down: two rotations into a dated directory (gzipped).
    let dated = logs.join("2009-11-18");
    std::fs::create_dir(&dated).unwrap();
    let whole = first + &rows(0, 100..150);
    let gz = |text: &str| common::gz::gzip(&[text.as_bytes()]);
    std::fs::write(dated.join("conn.08:00:00-09:00:00.log.gz"), gz(&whole)).unwrap();
    std::fs::remove_file(&conn).unwrap();
    let second = log_header("2009-11-18-09-00-00") + &rows(1, 0..40);
    std::fs::write(dated.join("conn.09:00:00-10:00:00.log.gz"), gz(&second)).unwrap();
    append(
        &conn,
        &(log_header("2009-11-18-10-00-00") + &rows(2, 0..30)),
    );
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 130);
    let err = stop(child);
    assert!(err.contains("is not found any more"), "{err}");
    let hint: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("no pattern matches"))
        .collect();
    assert_eq!(hint.len(), 1, "one warning of the unseen files: {err}");
    let want = format!("add the pattern {}/*/conn.*.log.gz", s(&logs));
    assert!(hint[0].contains(&want), "{}", hint[0]);
    assert!(
        hint[0].contains("conn.08:00:00-09:00:00.log.gz and 1 more"),
        "{}",
        hint[0]
    );
    // The pattern it names finds them: the rest of the first hour and the whole second.
    let found = format!("{}/*/conn.*.log.gz", s(&logs));
    let child = follow(&db, &[&pattern, &found], &[]);
    wait_count(&db, 220);
    let err = stop(child);
    assert!(!err.contains("no pattern matches"), "{err}");
    let got = streams(&db);
    assert_eq!(got["conn"].len(), 220);
}

/// Item 9: two growing files in different directories with the same header and the same
/// first rows, both followed: every row of both is imported once (the second's rows were
/// ignored without a warning, taken for the first file), with a note naming both; and a
/// restart reads each on from its own position.
#[test]
fn lookalike_files_in_two_directories_are_both_read() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    let (a, b) = (logs.join("a"), logs.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let db = tmp.path().join("db");
    let (fa, fb) = (a.join("conn.log"), b.join("conn.log"));
    let common = log_header("2009-11-18-08-00-00") + &rows(0, 0..2);
    append(&fa, &common);
    append(&fb, &common);
    let pattern = format!("{}/*/conn.log", s(&logs));
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 2);
    // Both grow, each with rows of its own, in pieces.
    for i in 0..4 {
        append(&fa, &rows(0, 2 + i * 15..2 + (i + 1) * 15));
        append(&fb, &rows(1, 2 + i * 10..2 + (i + 1) * 10));
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    wait_count(&db, 62 + 42);
    let err = stop(child);
    assert!(
        err.contains("but is another file; both are read"),
        "a note names the look-alike: {err}"
    );
    // A restart reads each on from its own position.
    append(&fa, &rows(0, 62..70));
    append(&fb, &rows(1, 42..50));
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 70 + 50);
    stop(child);
    assert_both_once(&db, 70, 2, 50);
}

/// Item 10, a pause: weir is stopped (SIGSTOP) while zeekctl rotates the followed file and a
/// whole further hour is created and rotated too. Back (SIGCONT), the rotated file is read to
/// its end through its descriptor, and the hour never seen is warned of once, with the
/// pattern that would have found it; the file being read on is not named.
#[test]
fn files_rotated_during_a_pause_beside_a_current_only_pattern_are_warned_of() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    let current = logs.join("current");
    let dated = logs.join("2009-11-18");
    std::fs::create_dir_all(&current).unwrap();
    std::fs::create_dir_all(&dated).unwrap();
    let db = tmp.path().join("db");
    let conn = current.join("conn.log");
    append(
        &conn,
        &(log_header("2009-11-18-08-00-00") + &rows(0, 0..100)),
    );
    let pattern = format!("{}/*.log", s(&current));
    let child = follow(&db, &[&pattern], &[]);
    wait_count(&db, 100);
    let signal = |sig: &str| {
        let st = std::process::Command::new("kill")
            .args([sig, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    };
    signal("-STOP");
    append(&conn, &rows(0, 100..120));
    let first = dated.join("conn.08:00:00-09:00:00.log");
    std::fs::rename(&conn, &first).unwrap();
    append(
        &conn,
        &(log_header("2009-11-18-09-00-00") + &rows(1, 0..40)),
    );
    let unseen = dated.join("conn.09:00:00-10:00:00.log");
    std::fs::rename(&conn, &unseen).unwrap();
    append(
        &conn,
        &(log_header("2009-11-18-10-00-00") + &rows(2, 0..30)),
    );
    std::thread::sleep(std::time::Duration::from_millis(2500));
    signal("-CONT");
    wait_count(&db, 150);
    let err = stop(child);
    let hint: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("no pattern matches"))
        .collect();
    assert_eq!(hint.len(), 1, "one warning of the unseen file: {err}");
    assert!(hint[0].contains(s(&unseen)), "{}", hint[0]);
    assert!(!hint[0].contains(s(&first)), "{}", hint[0]);
    let want = format!("add the pattern {}/*/conn.*.log", s(&logs));
    assert!(hint[0].contains(&want), "{}", hint[0]);
}

/// Item 9 across a restart: two look-alike files that do not differ yet when weir stops (the
/// second is left alone as another name for the first); they differ when it starts again,
/// with the second's pattern first: every row of both once (on the old code the second's
/// rows after the first's checkpoint were taken for the first's).
#[test]
fn lookalikes_that_differ_only_after_a_restart_are_both_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let db = tmp.path().join("db");
    let (fa, fb) = (a.join("conn.log"), b.join("conn.log"));
    let common = log_header("2009-11-18-08-00-00") + &rows(0, 0..3);
    append(&fa, &common);
    let (pa, pb) = (format!("{}/*.log", s(&a)), format!("{}/*.log", s(&b)));
    let child = follow(&db, &[&pa, &pb], &[]);
    wait_count(&db, 3);
    append(&fb, &common);
    std::thread::sleep(std::time::Duration::from_millis(800));
    stop(child);
    append(&fa, &rows(0, 3..20));
    append(&fb, &rows(1, 3..30));
    let child = follow(&db, &[&pb, &pa], &[]);
    wait_count(&db, 20 + 30);
    stop(child);
    assert_both_once(&db, 20, 3, 30);
}

/// Item 9, look-alikes alike beyond the fingerprint's 4 KiB: two files in two directories
/// with the same header and the same first 100 rows (over 5 KiB), then rows of their own, both
/// followed in one run: both read whole, with a note (the second was ignored, taken for the
/// first); across a restart, with the look-alike's pattern first, each is read on from its
/// own position: every row of both once.
#[test]
fn lookalikes_alike_beyond_the_fingerprint_bytes_are_both_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let db = tmp.path().join("db");
    let (fa, fb) = (a.join("conn.log"), b.join("conn.log"));
    let common = log_header("2009-11-18-08-00-00") + &rows(0, 0..100);
    assert!(common.len() > weir::unstable::checkpoint::FileId::FINGERPRINT_BYTES as usize + 800);
    append(&fa, &common);
    let (pa, pb) = (format!("{}/*.log", s(&a)), format!("{}/*.log", s(&b)));
    let child = follow(&db, &[&pa, &pb], &[]);
    wait_count(&db, 100);
    append(&fb, &common);
    for i in 0..3 {
        append(&fa, &rows(0, 100 + i * 10..100 + (i + 1) * 10));
        append(&fb, &rows(1, 100 + i * 7..100 + (i + 1) * 7));
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    wait_count(&db, 130 + 121);
    let err = stop(child);
    assert!(
        err.contains("but is another file; both are read"),
        "a note names the look-alike: {err}"
    );
    append(&fa, &rows(0, 130..140));
    append(&fb, &rows(1, 121..135));
    let child = follow(&db, &[&pb, &pa], &[]);
    wait_count(&db, 140 + 135);
    std::thread::sleep(std::time::Duration::from_millis(1200));
    stop(child);
    assert_both_once(&db, 140, 100, 135);
}

/// Every row of both look-alike files is in the archive once: rows `0..a` of the first, and of
/// the second its `shared` first rows (equal to the first's) then its own up to row `b`.
fn assert_both_once(db: &std::path::Path, a: u64, shared: u64, b: u64) {
    let mut got = streams(db)["conn"].clone();
    got.sort_unstable();
    let mut want: Vec<u64> = (0..a)
        .chain(0..shared)
        .chain(STRIDE + shared..STRIDE + b)
        .collect();
    want.sort_unstable();
    assert_eq!(got, want, "every row of both files once");
}
