//! Helpers for the tests that drive the real `weir` binary (`cli_archive_roundtrip`,
//! `cli_crash_recovery`): running commands, generating small Zeek TSV logs with a unique `uid` per
//! event, and reading the uids back from `weir export --to json`.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary under test, with `WEIR_DB` cleared so that only `--db` chooses the database.
pub fn weir() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_weir"));
    c.env_remove("WEIR_DB");
    c
}

/// Runs `weir ARGS` with no stdin and returns its output.
pub fn run(args: &[&str]) -> Output {
    weir()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("weir runs")
}

/// Lossy UTF-8.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Asserts exit status 0 and returns stdout.
pub fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// `p` as a `&str` (temp paths are UTF-8 here).
pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The header of the generated logs.
pub fn header() -> String {
    "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tconn\n\
     #fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto\tn\tnames\n\
     #types\ttime\tstring\taddr\tport\taddr\tport\tenum\tcount\tvector[string]\n"
        .to_string()
}

/// The unique uid of event `i`.
pub fn uid(i: u64) -> String {
    format!("C{i:010}")
}

/// One event line whose every field is derived from `i`, so a corrupted event is noticed.
pub fn row(i: u64) -> String {
    format!(
        "{}.{:06}\t{}\t10.{}.{}.{}\t{}\t2001:db8::{:x}\t{}\ttcp\t{}\ta{},b c,{}\n",
        1_600_000_000 + i / 1000,
        (i % 1000) * 1000,
        uid(i),
        (i >> 16) & 255,
        (i >> 8) & 255,
        i & 255,
        i % 65536,
        i & 0xffff,
        (i * 7) % 65536,
        i * 3,
        i,
        i % 13
    )
}

/// A complete log of events `range`.
pub fn log(range: std::ops::Range<u64>) -> String {
    let mut out = header();
    for i in range {
        out.push_str(&row(i));
    }
    out
}

/// The JSON object `weir export --to json` should print for event `i` (as a check of values).
pub fn check_event(i: u64, obj: &serde_json::Value) {
    assert_eq!(obj["uid"], serde_json::json!(uid(i)), "{obj}");
    assert_eq!(obj["n"], serde_json::json!(i * 3), "{obj}");
    assert_eq!(obj["id.orig_p"], serde_json::json!(i % 65536), "{obj}");
    assert_eq!(
        obj["names"],
        serde_json::json!([format!("a{i}"), "b c", (i % 13).to_string()]),
        "{obj}"
    );
}

/// The events of `weir export --to json`, parsed.
pub fn export_json(db: &Path) -> Vec<serde_json::Value> {
    let out = run(&["export", "--db", s(db), "--to", "json"]);
    let stdout = ok(&out, "weir export --to json");
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

/// The event numbers (from the uids) of parsed exported events.
pub fn numbers(events: &[serde_json::Value]) -> Vec<u64> {
    events
        .iter()
        .map(|e| {
            let u = e["uid"].as_str().unwrap_or_else(|| panic!("no uid: {e}"));
            u[1..].parse().unwrap_or_else(|_| panic!("bad uid {u}"))
        })
        .collect()
}

/// `weir info --db DB --json`, parsed.
pub fn info(db: &Path) -> serde_json::Value {
    let out = run(&["info", "--db", s(db), "--json"]);
    serde_json::from_str(&ok(&out, "weir info --json")).expect("info --json is JSON")
}

/// Polls `cond` every 20 ms until it holds; panics naming `what` after `timeout`.
pub fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The sealed segment files of a database, sorted.
pub fn segment_files(db: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(db.join("segments"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "seg"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}
