//! `weir convert` end to end through the real binary: formats, compression, stdin, order,
//! exit codes (usage 2, data 1 naming the line, closed output 0).

use crate::common;

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::cli::{run, run_with_stdin, text, weir};
use common::gz::gzip_members;

/// A fixture of the CLI tests.
fn fixture(name: &str) -> PathBuf {
    common::fixture("cli").join(name)
}

/// TSV output without the `#open`/`#close` lines, which hold the current time.
fn stable(tsv: &[u8]) -> String {
    text(tsv)
        .lines()
        .filter(|l| !l.starts_with("#open") && !l.starts_with("#close"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn tsv_to_json_and_back() {
    let conn = fixture("conn.log");
    let out = run(&["convert", "--to", "json", conn.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["_path"], "conn");
    assert_eq!(lines[0]["ts"], "2009-11-18T08:00:21.486539Z");
    assert_eq!(lines[1]["id.orig_h"], "fe80::1");
    assert!(
        lines[1].get("duration").is_none(),
        "unset fields are omitted"
    );
    assert_eq!(lines[1]["tunnel_parents"], serde_json::json!(["a", "b"]));

    // TSV -> TSV is stable, and TSV -> TSV -> JSON equals TSV -> JSON.
    let tsv = run(&["convert", conn.to_str().unwrap()]);
    assert!(tsv.status.success());
    let again = run_with_stdin(&["convert", "-"], &tsv.stdout);
    assert_eq!(stable(&tsv.stdout), stable(&again.stdout));
    let json2 = run_with_stdin(&["convert", "--to", "json"], &tsv.stdout);
    assert_eq!(text(&json2.stdout), text(&out.stdout));
}

#[test]
fn json_timestamps_flag_picks_zeeks_spelling() {
    let conn = fixture("conn.log");
    let first = |mode: &str| -> serde_json::Value {
        let out = run(&[
            "convert",
            "--to",
            "json",
            "--json-timestamps",
            mode,
            conn.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_str(text(&out.stdout).lines().next().unwrap()).unwrap()
    };
    assert_eq!(first("iso8601")["ts"], "2009-11-18T08:00:21.486539Z");
    assert_eq!(first("epoch")["ts"].to_string(), "1258531221.486539");
    assert_eq!(first("millis")["ts"], 1_258_531_221_486u64);
    // Epoch seconds read back (typed by the conn schema) to the same events.
    let epoch = run(&[
        "convert",
        "--to",
        "json",
        "--json-timestamps",
        "epoch",
        conn.to_str().unwrap(),
    ]);
    let back = run_with_stdin(
        &["convert", "--schema", "zeek.conn", "--to", "json"],
        &epoch.stdout,
    );
    let direct = run(&["convert", "--to", "json", conn.to_str().unwrap()]);
    let objects = |b: &[u8]| -> Vec<serde_json::Value> {
        text(b)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    assert_eq!(objects(&back.stdout), objects(&direct.stdout));
    let bad = run(&[
        "convert",
        "--json-timestamps",
        "seconds",
        conn.to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn json_input_is_detected() {
    let dns = fixture("dns.json");
    let out = run(&["convert", "--to", "json", dns.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let first: serde_json::Value =
        serde_json::from_str(text(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["_path"], "dns");
    assert_eq!(first["ts"], "2009-11-18T08:00:21.500000Z");
    // Forced TSV on JSON input is a data error.
    let forced = run(&["convert", "--from", "zeek-tsv", dns.to_str().unwrap()]);
    assert_eq!(forced.status.code(), Some(1));
}

#[test]
fn gzip_members_stdin_and_files_in_order() {
    let conn = std::fs::read(fixture("conn.log")).unwrap();
    let dns = std::fs::read(fixture("dns.json")).unwrap();
    let plain = run(&[
        "convert",
        "--to",
        "json",
        fixture("conn.log").to_str().unwrap(),
        fixture("dns.json").to_str().unwrap(),
    ]);
    assert!(plain.status.success());
    // Two gzip members on stdin are one stream.
    let gz = run_with_stdin(&["convert", "--to", "json"], &gzip_members(&conn, 2));
    assert!(gz.status.success(), "{}", text(&gz.stderr));
    let conn_json = run(&[
        "convert",
        "--to",
        "json",
        fixture("conn.log").to_str().unwrap(),
    ]);
    assert_eq!(text(&gz.stdout), text(&conn_json.stdout));
    // Files (gzip and plain, via a glob) are read in argument order, then stdin.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.log.gz"), gzip_members(&conn, 3)).unwrap();
    let pattern = format!("{}/*.gz", dir.path().display());
    let mixed = run_with_stdin(&["convert", "--to", "json", &pattern, "-"], &dns);
    assert!(mixed.status.success(), "{}", text(&mixed.stderr));
    assert_eq!(text(&mixed.stdout), text(&plain.stdout));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["convert", "--to", "xml"][..],
        &["convert", "--from", "csv"],
        &["convert", "--on-error", "maybe"],
        &["convert", "--bogus"],
        &["frobnicate"],
    ] {
        let out = run(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn data_error_exits_1_naming_file_and_line() {
    let bad = fixture("bad.log");
    let out = run(&["convert", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("bad.log:10:"), "{err}");
    assert!(err.contains("three"), "{err}");
    // The rows before the bad one were written.
    assert!(
        text(&out.stdout).contains("\n2.000000\t2\n"),
        "{}",
        text(&out.stdout)
    );

    let missing = run(&["convert", "/nonexistent/x.log"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing.stderr).contains("/nonexistent/x.log"));
}

#[test]
fn skip_reports_count_and_first_errors() {
    let bad = fixture("bad.log");
    let out = run(&[
        "convert",
        "--on-error",
        "skip",
        "--to",
        "json",
        bad.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().count(), 3);
    let err = text(&out.stderr);
    assert!(err.contains("skipped 1 bad row"), "{err}");
    assert!(err.contains("bad.log:10:"), "{err}");
}

#[test]
fn closed_stdout_exits_0() {
    // Enough output that the writer is still busy when the reader goes away.
    let mut log = String::from(
        "#separator \\x09\n#path\tbig\n#fields\tts\tn\ts\n#types\ttime\tcount\tstring\n",
    );
    for i in 0..200_000 {
        log.push_str(&format!("{i}.5\t{i}\tsome text to make the line longer\n"));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.log");
    std::fs::write(&path, log).unwrap();
    let mut child = weir()
        .args(["convert", "--to", "json", path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 100];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout); // like `| head -c 100`
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&first).starts_with("{\"_path\":\"big\""));
}

#[test]
fn second_signal_exits_at_once() {
    let mut log =
        String::from("#separator \\x09\n#path\tbig\n#fields\tts\tn\n#types\ttime\tcount\n");
    for i in 0..300_000 {
        log.push_str(&format!("{i}.5\t{i}\n"));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.log");
    std::fs::write(&path, log).unwrap();
    // Nobody reads stdout: once the pipe is full the writer blocks, so a graceful stop can
    // never finish; only the second signal ends the process.
    let mut child = weir()
        .args(["convert", path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let pid = child.id().to_string();
    // Output has started, so the signal handlers (installed first) are in place.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 100];
    stdout.read_exact(&mut first).unwrap();
    let kill = |sig: &str| {
        assert!(Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success());
    };
    kill("-TERM");
    // The first signal is acknowledged on stderr, and the process keeps draining.
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !text(&seen).contains("stopping") {
        let n = stderr.read(&mut buf).unwrap();
        assert!(n > 0, "stderr closed: {}", text(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    assert!(child.try_wait().unwrap().is_none());
    kill("-TERM");
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "still running"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    drop(stdout);
}
