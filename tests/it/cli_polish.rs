//! The command line's manners (issue 15): `--quiet`, plurals, messages in the user's words,
//! archives recognized rather than assumed, `inspect` of several files, `info`'s time range,
//! shell completions and the man page. Each test asserts the exact text and exit status.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::path::Path;

use common::cli::{ok, run, s, segment_files, text, wait_for, weir};

/// A Zeek TSV log of `n` events numbered from 0.
fn tsv_log(n: u64) -> String {
    let mut out = String::from(
        "#separator \\x09\n#path\tnum\n#fields\tts\tn\ttext\n#types\ttime\tcount\tstring\n",
    );
    for i in 0..n {
        out.push_str(&format!("{}.25\t{i}\tevent {i}\n", 1_600_000_000 + i));
    }
    out
}

/// Writes a log of `n` events to `dir/name` and returns its path.
fn write_log(dir: &Path, name: &str, n: u64) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, tsv_log(n)).unwrap();
    p
}

/// The summary lines of an import with their timing and byte parts removed:
/// `weir: imported 1 event | 1 segment written`.
fn summary_words(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().collect();
    let [.., first, second] = lines[..] else {
        panic!("no summary: {stderr}");
    };
    let head = first.split_once(" in ").unwrap().0;
    let tail = second.split_once(" read, ").map_or("", |(_, t)| t);
    format!("{head} | {tail}")
}

#[test]
fn quiet_import_and_run_print_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "num.log", 3);
    let db = dir.path().join("db");
    for q in ["-q", "--quiet"] {
        // `--again`: the second round imports the same file once more instead of skipping
        // it with a warning.
        let out = run(&["import", q, "--again", "--db", s(&db), s(&log)]);
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(text(&out.stderr), "");
        assert_eq!(text(&out.stdout), "");
    }
    let pipeline = dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[sources.input]\ntype = \"file\"\npaths = [{:?}]\n\n[sinks.out]\ntype = \"archive\"\ninputs = [\"input\"]\ndb = {:?}\n",
            s(&log),
            s(&dir.path().join("db2"))
        ),
    )
    .unwrap();
    let out = run(&["run", "--check", s(&pipeline)]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stderr),
        format!(
            "{}: ok (2 stages: sources.input, sinks.out)\n",
            s(&pipeline)
        )
    );
    let out = run(&["run", "--quiet", s(&pipeline)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    // Errors still show, with what the failed run committed.
    let missing = dir.path().join("nosuch.log");
    let out = run(&["import", "-q", "--db", s(&db), s(&missing)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "weir: no events were committed to {} before the error\nweir: error: cannot read {}: No such file or directory (os error 2)\n",
            s(&db),
            s(&missing)
        )
    );
}

#[test]
fn counts_are_singular_for_one() {
    let dir = tempfile::tempdir().unwrap();
    let one = write_log(dir.path(), "one.log", 1);
    let db = dir.path().join("db");
    let out = run(&["import", "--db", s(&db), s(&one)]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        summary_words(&text(&out.stderr)),
        "weir: imported 1 event | 1 segment written"
    );
    let out = run(&["verify", "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "ok: 1 segment, 1 event\n");

    let two = write_log(dir.path(), "two.log", 2);
    let db2 = dir.path().join("db2");
    let out = run(&["import", "--db", s(&db2), s(&two), s(&two)]);
    assert_eq!(
        summary_words(&text(&out.stderr)),
        "weir: imported 4 events | 1 segment written"
    );
    let out = run(&["verify", "--db", s(&db2)]);
    assert_eq!(text(&out.stdout), "ok: 1 segment, 4 events\n");

    // One damaged segment: one problem, and export says what it skipped. (Without its index
    // file, so that the reader verifies the segment: with it, damage to the segment's
    // metadata does not touch what readers read, see `tests/it/segment_index.rs`.)
    let seg = &segment_files(&db)[0];
    weir::unstable::segment::remove_index(seg).unwrap();
    let mut bytes = std::fs::read(seg).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0xff;
    std::fs::write(seg, bytes).unwrap();
    let out = run(&["verify", "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert_eq!(
        err.lines().last().unwrap(),
        format!("weir: error: 1 problem found in {}", s(&db))
    );
    let out = run(&["export", "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert_eq!(
        err.lines().last().unwrap(),
        "weir: error: skipped 1 damaged batch (1 event) (see above)"
    );
}

#[test]
fn one_bad_row_is_one_row() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("bad.log");
    let mut t = tsv_log(2);
    t.push_str("oops\tnot-a-count\tx\n");
    std::fs::write(&log, t).unwrap();
    let out = run(&[
        "import",
        "--on-error",
        "skip",
        "--db",
        s(&dir.path().join("db")),
        s(&log),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert_eq!(
        err.lines().next().unwrap(),
        "weir: skipped 1 bad row",
        "{err}"
    );
}

#[test]
fn a_missing_input_is_named_plainly_and_leaves_no_database() {
    let dir = tempfile::tempdir().unwrap();
    let out = weir()
        .current_dir(dir.path())
        .args(["import", "nosuch.log.gz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "weir: error: cannot read nosuch.log.gz: No such file or directory (os error 2)\n"
    );
    // The failed first import removed the database it created.
    assert!(!dir.path().join("weir.db").exists());

    // A database that existed before is left alone, even when empty.
    let db = dir.path().join("db");
    std::fs::create_dir(&db).unwrap();
    let out = run(&[
        "import",
        "-q",
        "--db",
        s(&db),
        s(&dir.path().join("nosuch.log")),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(db.is_dir());

    // A failure after events were committed keeps them (and the database).
    let db2 = dir.path().join("db2");
    let bad = dir.path().join("bad.log");
    let mut t = tsv_log(3);
    t.push_str("oops\tnot-a-count\tx\n");
    std::fs::write(&bad, t).unwrap();
    let good = write_log(dir.path(), "good.log", 2);
    let out = run(&[
        "import",
        "-q",
        "--batch-size",
        "1",
        "--db",
        s(&db2),
        s(&good),
        s(&bad),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(db2.join("wal").exists() || db2.join("segments").is_dir());
    let out = run(&["count", "--db", s(&db2)]);
    assert_ne!(ok(&out, "count"), "0\n");
}

#[test]
fn a_locked_database_names_the_other_import() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut holder = weir()
        .args(["import", "-q", "--db", s(&db), "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lock = db.join("LOCK");
    wait_for("the lock", std::time::Duration::from_secs(20), || {
        std::fs::read_to_string(&lock).is_ok_and(|t| t.trim() == holder.id().to_string())
    });
    let log = write_log(dir.path(), "num.log", 1);
    let out = run(&["import", "--db", s(&db), s(&log)]);
    drop(holder.stdin.take());
    holder.wait().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr).lines().last().unwrap(),
        format!(
            "weir: error: database {} is locked by another weir import (pid {})",
            s(&db),
            holder.id()
        )
    );
}

#[test]
fn readers_refuse_a_directory_that_is_not_an_archive() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("zeek");
    std::fs::create_dir(&logs).unwrap();
    write_log(&logs, "conn.log", 1);
    let want = format!(
        "weir: error: {} is not a weir archive (no catalog.json, wal or segments/)\n",
        s(&logs)
    );
    for cmd in [
        &["export"][..],
        &["count"],
        &["get", "0"],
        &["info"],
        &["verify"],
        &["verify", "--repair"],
    ] {
        let mut args = cmd.to_vec();
        args.extend(["--db", s(&logs)]);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{cmd:?}");
        assert_eq!(text(&out.stderr), want, "{cmd:?}");
        assert_eq!(text(&out.stdout), "", "{cmd:?}");
    }
    // Nothing was written into it.
    assert_eq!(std::fs::read_dir(&logs).unwrap().count(), 1);
    let missing = dir.path().join("missing");
    let out = run(&["info", "--db", s(&missing)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!("weir: error: no weir database at {}\n", s(&missing))
    );

    // An archive with no events still works.
    let empty = dir.path().join("empty");
    let out = run(&["import", "-q", "--db", s(&empty), "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(ok(&run(&["count", "--db", s(&empty)]), "count"), "0\n");
    assert_eq!(ok(&run(&["export", "--db", s(&empty)]), "export"), "");
    assert_eq!(
        ok(&run(&["verify", "--db", s(&empty)]), "verify"),
        "ok: 0 segments, 0 events\n"
    );
}

#[test]
fn inspect_says_what_a_file_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "conn.log", 1);
    let out = run(&["inspect", s(&log)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "weir: error: {} is not a weir segment: file identifier WSEG missing\n",
            s(&log)
        )
    );
}

#[test]
fn inspect_takes_several_segments() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let log = write_log(dir.path(), "num.log", 3);
    let out = run(&["import", "-q", "--db", s(&db), s(&log)]);
    ok(&out, "import 1");
    // The same file again (it would be skipped as imported whole before).
    let out = run(&["import", "-q", "--again", "--db", s(&db), s(&log)]);
    ok(&out, "import 2");
    let segs = segment_files(&db);
    assert_eq!(segs.len(), 2);
    let one: Vec<String> = segs
        .iter()
        .map(|p| ok(&run(&["inspect", s(p)]), "inspect one"))
        .collect();
    let both = ok(&run(&["inspect", s(&segs[0]), s(&segs[1])]), "inspect two");
    assert_eq!(both, one.join("\n"));

    // JSON: an object for one file (unchanged), an array for several.
    let single: serde_json::Value =
        serde_json::from_str(&ok(&run(&["inspect", "--json", s(&segs[0])]), "json")).unwrap();
    assert!(single.is_object());
    let many: serde_json::Value = serde_json::from_str(&ok(
        &run(&["inspect", "--json", s(&segs[0]), s(&segs[1])]),
        "json two",
    ))
    .unwrap();
    assert_eq!(many.as_array().unwrap().len(), 2);
    assert_eq!(many[0], single);

    // One bad file among good ones: the good ones are shown, the exit status is 1.
    let out = run(&["inspect", s(&segs[0]), s(&log)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), one[0]);
    assert_eq!(
        text(&out.stderr),
        format!(
            "weir: error: {} is not a weir segment: file identifier WSEG missing\nweir: error: cannot inspect 1 of 2 files (see above)\n",
            s(&log)
        )
    );
}

#[test]
fn tsv_is_an_alias_of_zeek_tsv() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let log = write_log(dir.path(), "num.log", 2);
    ok(&run(&["import", "-q", "--db", s(&db), s(&log)]), "import");
    let tsv = ok(&run(&["export", "--db", s(&db), "--to", "tsv"]), "tsv");
    let zeek = ok(
        &run(&["export", "--db", s(&db), "--to", "zeek-tsv"]),
        "zeek-tsv",
    );
    // The same output but for the #open/#close times, which may fall in different seconds.
    let timeless = |t: &str| {
        t.lines()
            .filter(|l| !l.starts_with("#open") && !l.starts_with("#close"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(timeless(&tsv), timeless(&zeek));
    assert!(tsv.contains("#fields\tts\tn\ttext"), "{tsv}");
    let got = ok(&run(&["get", "--db", s(&db), "--to", "tsv", "1"]), "get");
    assert!(got.contains("1600000001.250000\t1\tevent 1"), "{got}");
}

#[test]
fn info_shows_the_time_range_and_bytes_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let log = write_log(dir.path(), "num.log", 3);
    ok(&run(&["import", "-q", "--db", s(&db), s(&log)]), "import");
    let out = ok(&run(&["info", "--db", s(&db)]), "info");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("database:  {}", s(&db)));
    assert!(lines[1].starts_with("segments:  1 ("), "{out}");
    assert!(lines[2].starts_with("on disk:   "), "{out}");
    assert_eq!(
        lines[3],
        "events:    3 (3 sealed, 0 in the write-ahead log)"
    );
    assert_eq!(
        lines[4],
        "time:      2020-09-13T12:26:40.250000Z to 2020-09-13T12:26:42.250000Z"
    );
    let info = common::cli::info(&db);
    assert_eq!(
        info["time"],
        serde_json::json!(["2020-09-13T12:26:40.250000Z", "2020-09-13T12:26:42.250000Z"])
    );
    assert_eq!(
        info["ts"],
        serde_json::json!([1_600_000_000_250_000_000i64, 1_600_000_002_250_000_000i64])
    );
    let on_disk: u64 = walk_bytes(&db);
    assert_eq!(info["disk_bytes"], on_disk);
    assert!(on_disk >= info["bytes"].as_u64().unwrap());

    // No events: no time.
    let empty = dir.path().join("empty");
    ok(
        &run(&["import", "-q", "--db", s(&empty), "-"]),
        "import empty",
    );
    let out = ok(&run(&["info", "--db", s(&empty)]), "info empty");
    assert!(out.contains("\ntime:      none\n"), "{out}");
    assert_eq!(common::cli::info(&empty)["time"], serde_json::Value::Null);
}

/// Bytes the files under `dir` take on disk.
fn walk_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                walk_bytes(&e.path())
            } else {
                // The blocks a file takes, as `weir info` counts them (sparse files).
                std::os::unix::fs::MetadataExt::blocks(&m) * 512
            }
        })
        .sum()
}

#[test]
fn completions_for_every_shell() {
    for (shell, marker) in [
        ("bash", "_weir() {"),
        ("zsh", "#compdef weir"),
        ("fish", "complete -c weir"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[weir]"),
    ] {
        let out = run(&["completions", shell]);
        let script = ok(&out, shell);
        assert!(script.contains(marker), "{shell}: {script}");
        // Every command is completed.
        for cmd in ["import", "export", "inspect", "completions", "man"] {
            assert!(script.contains(cmd), "{shell} lacks {cmd}");
        }
    }
    let out = run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("weir: error: invalid value 'tcsh' for '<SHELL>'"));
}

#[test]
fn man_pages_for_weir_and_each_command() {
    let version = env!("CARGO_PKG_VERSION");
    let page = ok(&run(&["man"]), "man");
    let head: Vec<&str> = page.lines().skip(2).take(3).collect();
    assert_eq!(
        head,
        [
            format!(".TH weir 1  \"weir {version}\" ").as_str(),
            ".SH NAME",
            "weir \\- Ingest Zeek logs through a backpressured async pipeline into an archive of memory\\-mapped FlatBuffers segments.",
        ]
    );
    assert!(page.contains("weir\\-import(1)"), "{page}");
    let page = ok(&run(&["man", "import"]), "man import");
    let head: Vec<&str> = page.lines().skip(2).take(2).collect();
    assert_eq!(
        head,
        [
            format!(".TH weir-import 1  \"import {version}\" ").as_str(),
            ".SH NAME"
        ]
    );
    assert!(page.contains("\\fB\\-q\\fR, \\fB\\-\\-quiet\\fR"), "{page}");
    let out = run(&["man", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "weir: error: no command \"nosuch\"; see `weir --help`\n"
    );
}

/// Log lines without their timestamp.
fn log_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains("  INFO ") || l.contains(" DEBUG ") || l.contains("  WARN "))
        .map(|l| l.split_once(' ').unwrap().1.trim_start().to_string())
        .collect()
}

#[test]
fn verbose_logs_files_segments_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let log = write_log(dir.path(), "num.log", 2);
    let out = run(&["import", "-q", "-v", "--db", s(&db), s(&log)]);
    ok(&out, "import -v");
    let seg = &segment_files(&db)[0];
    assert_eq!(
        log_lines(&text(&out.stderr)),
        [
            format!(
                "INFO opened input input={} bytes={}",
                s(&log),
                std::fs::metadata(&log).unwrap().len()
            ),
            format!("INFO read to its end input={}", s(&log)),
            format!(
                "INFO sealed segment segment={} events=2 batches=1 bytes={}",
                s(seg),
                std::fs::metadata(seg).unwrap().len()
            ),
        ]
    );
    // Without -v or WEIR_LOG: nothing.
    let out = run(&["count", "--db", s(&db)]);
    assert_eq!(text(&out.stderr), "");
    // -vv (global: after the command too) and WEIR_LOG show debug events, and the query's
    // statistics (counted from the catalog: one segment, nothing read, both events).
    let stats = |lines: Vec<String>| -> Vec<String> {
        lines
            .into_iter()
            .map(|l| match l.split_once(" ms=") {
                Some((head, _)) => head.to_string(),
                None => l,
            })
            .collect()
    };
    let want = [
        format!("DEBUG opened archive dir={} segments=1", s(&db)),
        "INFO query statistics segments=1 segments_pruned=0 segments_counted=1 segments_opened=0 batches_read=0 batches_pruned=0 rows_evaluated=0 matched=2".to_string(),
    ];
    let out = run(&["count", "--db", s(&db), "-vv"]);
    assert_eq!(stats(log_lines(&text(&out.stderr))), want);
    let out = common::cli::weir()
        .env("WEIR_LOG", "weir=debug")
        .args(["count", "--db", s(&db)])
        .output()
        .unwrap();
    assert_eq!(stats(log_lines(&text(&out.stderr))), want);
    let out = common::cli::weir()
        .env("WEIR_LOG", "weir=[")
        .args(["count", "--db", s(&db)])
        .output()
        .unwrap();
    assert_eq!(ok(&out, "bad WEIR_LOG"), "2\n");
    assert!(
        text(&out.stderr).starts_with("weir: warning: WEIR_LOG=\"weir=[\" is not a log filter ("),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn verbose_logs_a_write_ahead_log_replay() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut child = weir()
        .args([
            "import",
            "-q",
            "--batch-timeout",
            "10ms",
            "--db",
            s(&db),
            "-",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(tsv_log(3).as_bytes()).unwrap();
    stdin.flush().unwrap();
    wait_for(
        "3 events in the WAL",
        std::time::Duration::from_secs(20),
        || text(&run(&["count", "--db", s(&db)]).stdout) == "3\n",
    );
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    let out = run(&["import", "-v", "--db", s(&db), "-"]);
    ok(&out, "import after kill");
    let lines = log_lines(&text(&out.stderr));
    let wal = db.join("wal");
    let prefix = format!("INFO replayed write-ahead log wal={} batches=", s(&wal));
    assert!(
        lines.iter().any(
            |l| l.starts_with(&prefix) && l.ends_with(" events=3 skipped_batches=0 torn=false")
        ),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("INFO sealed segment ") && l.contains(" events=3 ")),
        "{lines:?}"
    );
}

/// `text` without ANSI escape sequences (CSI `ESC [ … final`, and two-byte `ESC x`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if ('\x40'..='\x7e').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

/// The pieces of terminal output between carriage returns and newlines, escapes removed.
fn screen_pieces(raw: &str) -> Vec<String> {
    strip_ansi(raw)
        .split(['\r', '\n'])
        .map(str::to_string)
        .collect()
}

/// Runs `sh_command` under `script` (a pseudo-terminal 60 columns wide); returns the child.
fn in_pty(sh_command: &str) -> std::process::Child {
    std::process::Command::new("script")
        .args([
            "-qfec",
            &format!("stty cols 60 rows 24; COLUMNS=60; export COLUMNS; {sh_command}"),
            "/dev/null",
        ])
        .env_remove("WEIR_DB")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux script runs")
}

/// Waits for `child` (at most 30 s) and returns its output.
fn finish(mut child: std::process::Child) -> std::process::Output {
    wait_for(
        "the child to exit",
        std::time::Duration::from_secs(30),
        || child.try_wait().unwrap().is_some(),
    );
    child.wait_with_output().unwrap()
}

#[test]
fn progress_fits_the_terminal_and_ctrl_c_starts_a_clean_line() {
    use std::io::Write as _;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let fifo = dir.path().join("slow.log");
    let pid_file = dir.path().join("pid");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // A slow input: a header, then a line every 20 ms until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (fifo, stop) = (fifo.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            let log = tsv_log(10_000);
            let mut lines = log.split_inclusive('\n');
            for line in lines.by_ref().take(4) {
                f.write_all(line.as_bytes()).unwrap();
            }
            for line in lines {
                if stop.load(Ordering::Relaxed) || f.write_all(line.as_bytes()).is_err() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        })
    };
    let child = in_pty(&format!(
        "echo $$ > {}; exec {} import --batch-timeout 50ms --db {} {}",
        s(&pid_file),
        env!("CARGO_BIN_EXE_weir"),
        s(&db),
        s(&fifo)
    ));
    wait_for("the pid file", std::time::Duration::from_secs(10), || {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| p.ends_with('\n'))
    });
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    // Long enough for several refreshes (every 200 ms) with events and a segment.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(std::process::Command::new("kill")
        .args(["-INT", pid.trim()])
        .status()
        .unwrap()
        .success());
    let out = finish(child);
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let raw = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{raw:?}");
    let pieces = screen_pieces(&raw);
    // The progress line's draws (every piece that is not a message) and the summary.
    for p in pieces
        .iter()
        .filter(|p| !p.starts_with("weir: ") || p.starts_with("weir: imported "))
    {
        assert!(
            p.chars().count() <= 60,
            "wider than 60 columns: {p:?}\n{raw:?}"
        );
    }
    // At least one refresh, with the bytes read (a fifo has no size), grouped counts and the
    // segment being written counted.
    assert!(
        pieces.iter().any(|p| p.contains(" read, ")
            && p.contains(" events (")
            && p.contains("/s), 1 segment")),
        "{pieces:?}"
    );
    assert!(
        pieces
            .iter()
            .any(|p| p == "weir: stopping: flushing what was read (signal again to exit at once)"),
        "{raw:?}"
    );
    let at = pieces
        .iter()
        .position(|p| p.starts_with("weir: imported "))
        .unwrap();
    let summary = &pieces[at];
    let read = pieces[at + 1..]
        .iter()
        .find(|p| p.starts_with("weir: "))
        .unwrap();
    assert!(summary.contains(" events in "), "{summary}");
    assert!(read.ends_with(" (interrupted)"), "{read}");
    assert!(
        read.contains(" MiB read, ") || read.contains(" KiB read, "),
        "{read}"
    );
    assert!(read.chars().count() <= 60, "{read}");
}

#[test]
fn a_terminal_on_stdin_gets_a_hint() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut child = in_pty(&format!(
        "exec {} import --db {}",
        env!("CARGO_BIN_EXE_weir"),
        s(&db)
    ));
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    stdin.write_all(tsv_log(2).as_bytes()).unwrap();
    stdin.write_all(b"\x04").unwrap();
    stdin.flush().unwrap();
    let out = finish(child);
    drop(stdin);
    let raw = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{raw:?}");
    let pieces = screen_pieces(&raw);
    assert!(
        pieces
            .iter()
            .any(|p| p == "weir: reading Zeek logs from stdin (Ctrl-D ends)"),
        "{raw:?}"
    );
    assert!(
        pieces
            .iter()
            .any(|p| p.starts_with("weir: imported 2 events in ")),
        "{raw:?}"
    );
}

#[test]
fn run_shows_progress_as_a_share_of_the_input_size() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "num.log", 3);
    let size = std::fs::metadata(&log).unwrap().len();
    let pipeline = dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[sources.input]\ntype = \"file\"\npaths = [{:?}]\n\n[sinks.out]\ntype = \"archive\"\ninputs = [\"input\"]\ndb = {:?}\n",
            s(&log),
            s(&dir.path().join("db"))
        ),
    )
    .unwrap();
    let out = finish(in_pty(&format!(
        "exec {} run {}",
        env!("CARGO_BIN_EXE_weir"),
        s(&pipeline)
    )));
    let raw = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{raw:?}");
    let pieces = screen_pieces(&raw);
    let shown = format!("% of {size} B, ");
    assert!(pieces.iter().any(|p| p.contains(&shown)), "{raw:?}");
    assert!(
        pieces
            .iter()
            .any(|p| p.starts_with("weir: processed 3 events in ")),
        "{raw:?}"
    );
}

#[test]
fn usage_errors_have_weirs_prefix_and_help_stays_plain() {
    let out = run(&["import", "--bogus"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        text(&out.stderr),
        "weir: error: unexpected argument '--bogus' found\n\n  tip: to pass '--bogus' as a value, use '-- --bogus'\n\nUsage: weir import [OPTIONS] [FILE]...\n\nFor more information, try '--help'.\n"
    );
    let out = run(&["import", "--batch-timeout", "soon"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with(
            "weir: error: invalid value 'soon' for '--batch-timeout <DUR>': invalid duration \"soon\""
        ),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        format!("weir {}\n", env!("CARGO_PKG_VERSION"))
    );
    let out = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("\nUsage: weir [OPTIONS] <COMMAND>\n"));
    assert_eq!(text(&out.stderr), "");
    // On a terminal with NO_COLOR: no escape sequence in help or errors.
    let out = finish(in_pty(&format!(
        "export NO_COLOR=1; {w} --help; {w} import --bogus; exit 0",
        w = env!("CARGO_BIN_EXE_weir")
    )));
    let raw = text(&out.stdout);
    assert!(raw.contains("Usage: weir [OPTIONS] <COMMAND>"), "{raw:?}");
    assert!(
        raw.contains("weir: error: unexpected argument '--bogus' found"),
        "{raw:?}"
    );
    assert!(!raw.contains('\x1b'), "{raw:?}");
}

#[test]
fn size_and_duration_flags_show_their_defaults() {
    let out = run(&["import", "--help"]);
    let help = ok(&out, "import --help");
    let after = |flag: &str| {
        let rest = &help[help.find(flag).unwrap()..];
        rest[..rest.find("\n      -").unwrap_or(rest.len())].to_string()
    };
    assert!(
        after("--batch-timeout <DUR>").contains("[default: 1s]"),
        "{help}"
    );
    assert!(
        after("--max-segment-size <SIZE>").contains("[default: 1GiB]"),
        "{help}"
    );
    // The shown defaults parse back.
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "num.log", 2);
    let db = dir.path().join("db");
    let out = run(&[
        "import",
        "-q",
        "--batch-timeout",
        "1s",
        "--max-segment-size",
        "1GiB",
        "--db",
        s(&db),
        s(&log),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn a_separator_without_its_backslash_is_reported_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mangled.log");
    std::fs::write(&log, tsv_log(2).replacen("\\x09", "x09", 1)).unwrap();
    let out = run(&["convert", s(&log)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "weir: error: {}:1: invalid #separator \"x09\": a \\xHH escape without its backslash; expected \\xHH escapes (\\x09) or literal characters (||)\n",
            s(&log)
        )
    );
}

#[test]
fn metrics_end_with_a_newline_and_count_skipped_rows() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("bad.log");
    let mut t = tsv_log(2);
    t.push_str("oops\tnot-a-count\tx\n");
    std::fs::write(&log, t).unwrap();
    let db = dir.path().join("db");
    let metrics = dir.path().join("m.json");
    let out = run(&[
        "import",
        "-q",
        "--on-error",
        "skip",
        "--metrics",
        s(&metrics),
        "--db",
        s(&db),
        s(&log),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json = std::fs::read_to_string(&metrics).unwrap();
    assert!(json.ends_with("}\n"), "{json:?}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["skipped_rows"], 1, "{json}");
}

/// `weir run --check` reports every table's problem, in file order, not only the first; the
/// library's `load` still gives the first.
#[test]
fn run_check_reports_every_problem_of_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("multi.toml");
    std::fs::write(
        &path,
        "[sources.in]\ntype = \"stdin\"\nmax_line_length = \"0\"\n\n\
         [transforms.batch]\ntype = \"batch\"\ninputs = [\"in\"]\nmax_events = 0\n\n\
         [sinks.out]\ntype = \"stdout\"\ninputs = [\"batch\"]\nformat = \"xlsx\"\n",
    )
    .unwrap();
    let shown = path.display().to_string();
    let out = common::cli::run(&["run", "--check", &shown]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        common::cli::text(&out.stderr),
        format!(
            "weir: error: {shown}:3: [sources.in] max_line_length: 0 is out of range: must be at least 1\n\
             weir: error: {shown}:8: [transforms.batch] max_events: 0 is out of range: must be at least 1\n\
             weir: error: {shown}:13: [sinks.out] format: invalid value \"xlsx\"; expected one of: zeek-tsv, json, arrow, table, csv, parquet\n"
        )
    );
    let first = weir::unstable::pipeline::config::PipelineSpec::load(&path, &Default::default())
        .unwrap_err();
    assert_eq!(first.line, Some(3));
}

/// `--log-format json` writes each log line as one JSON object, for services.
#[test]
fn json_log_lines_for_services() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let log = tmp.path().join("x.log");
    std::fs::write(
        &log,
        "#separator \\x09\n#path\tconn\n#fields\tts\tuid\n#types\ttime\tstring\n1.5\ta\n",
    )
    .unwrap();
    let out = run(&[
        "-v",
        "--log-format",
        "json",
        "import",
        "-q",
        "--db",
        s(&db),
        s(&log),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let lines: Vec<serde_json::Value> = err
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let messages: Vec<&str> = lines
        .iter()
        .map(|l| l["fields"]["message"].as_str().unwrap())
        .collect();
    assert!(messages.contains(&"opened input"), "{messages:?}");
    assert!(messages.contains(&"sealed segment"), "{messages:?}");
    assert!(lines.iter().all(|l| l["level"] == "INFO"));
}

/// `weir convert --output DIR` writes one file per log path, as Zeek does: interleaved logs
/// come apart into `conn.log` and `dns.log`, each with one header block, and read back to the
/// same events; a directory holding an input is refused before anything is written.
#[test]
fn convert_output_writes_one_file_per_log_path() {
    let tmp = tempfile::tempdir().unwrap();
    let header = |path: &str, field: &str| {
        format!("#separator \\x09\n#path\t{path}\n#fields\tts\t{field}\n#types\ttime\tstring\n")
    };
    let input = tmp.path().join("mixed.log");
    std::fs::write(
        &input,
        format!(
            "{}1.0\ta\n{}2.0\tq1\n{}3.0\tb\n{}4.0\tq2\n",
            header("conn", "uid"),
            header("dns", "query"),
            header("conn", "uid"),
            header("dns", "query"),
        ),
    )
    .unwrap();
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = run(&["convert", "--output", s(&out_dir), s(&input)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let mut names: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["conn.log", "dns.log"]);
    for (name, values) in [("conn.log", ["a", "b"]), ("dns.log", ["q1", "q2"])] {
        let file = out_dir.join(name);
        let body = std::fs::read_to_string(&file).unwrap();
        assert_eq!(body.matches("#fields").count(), 1, "{body}");
        let back = run(&["convert", "--to", "json", s(&file)]);
        let lines = text(&back.stdout);
        let got: Vec<String> = lines
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let key = if name == "conn.log" { "uid" } else { "query" };
                v[key].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(got, values, "{name}");
    }
    // The input's own directory as the output would overwrite it.
    let refused = run(&["convert", "--output", s(tmp.path()), s(&input)]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(text(&refused.stderr).contains("would overwrite the input"));
    assert!(std::fs::read_to_string(&input).unwrap().contains("q2"));
}

/// `weir get --to parquet` is a usage error (exit 2, nothing read), not a failure.
#[test]
fn get_to_parquet_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let log = write_log(dir.path(), "num.log", 2);
    ok(&run(&["import", "-q", "--db", s(&db), s(&log)]), "import");
    let out = run(&["get", "--db", s(&db), "--to", "parquet", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "weir: error: --to parquet writes a lake into a directory: use `weir export --to parquet --output DIR`\n"
    );
    assert!(out.stdout.is_empty());
}
