//! `weir import --follow` driven from tests: Zeek logs with a `#path` of their own, the
//! follower started and stopped, and what the archive holds per log.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::cli::{export_json, run, s, stderr_of, text, weir};
use super::conn_log::header;

/// How long a test waits for the archive to catch up before it fails.
pub const CATCH_UP: Duration = Duration::from_secs(60);

/// The header of log `name` (its `#path`, hence its schema `zeek.NAME`).
pub fn log_header(name: &str) -> String {
    header().replace("#path\tconn", &format!("#path\t{name}"))
}

/// Appends `text` to `path`, creating it if needed.
pub fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// The command `weir import -q --follow EXTRA PATTERNS` into `db`, stderr piped.
pub fn follow_command(db: &Path, patterns: &[&str], extra: &[&str]) -> Command {
    let mut c = weir();
    c.args(["import", "-q", "--db", s(db), "--follow"])
        .args(extra)
        .args(patterns)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// `weir import --follow` of `patterns` into `db`, in the background.
pub fn follow(db: &Path, patterns: &[&str], extra: &[&str]) -> Child {
    follow_command(db, patterns, extra)
        .spawn()
        .expect("weir runs")
}

/// Sends SIGTERM to `child`.
pub fn sigterm(child: &Child) {
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

/// Stops a followed import with SIGTERM; returns its stderr after checking it exited 0.
pub fn stop(child: Child) -> String {
    sigterm(&child);
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "import --follow failed: {err}");
    err
}

/// The events in the archive (`weir count`, a concurrent reader); 0 if it cannot be read.
pub fn count(db: &Path) -> u64 {
    let out = run(&["count", "--db", s(db)]);
    if !out.status.success() {
        return 0;
    }
    text(&out.stdout).trim().parse().unwrap_or(0)
}

/// Waits until the archive holds `n` events, then checks it holds no more.
pub fn wait_count(db: &Path, n: u64) {
    let mut last = 0;
    let start = Instant::now();
    while last < n {
        last = count(db);
        assert!(
            start.elapsed() < CATCH_UP,
            "timed out waiting for {n} events in the archive: {last} after {CATCH_UP:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Nothing beyond: a duplicate would show up here too.
    assert_eq!(count(db), n);
}

/// Waits until the archive holds `n` events, then checks it holds no more; fails at once if
/// the follower `child` (its stderr piped) exits, and after [`CATCH_UP`] otherwise, with its
/// stderr.
pub fn wait_running(db: &Path, n: u64, child: &mut Child) {
    wait_running_with(db, n, child, String::new);
}

/// [`wait_running`], whose failure also says what `diagnosis` tells (which events are
/// missing, the seed).
pub fn wait_running_with(db: &Path, n: u64, child: &mut Child, diagnosis: impl FnOnce() -> String) {
    let t0 = Instant::now();
    loop {
        let got = count(db);
        if got >= n {
            assert_eq!(count(db), n, "more events than written");
            return;
        }
        let exited = child.try_wait().unwrap();
        if exited.is_some() || t0.elapsed() > CATCH_UP {
            let _ = child.kill();
            let err = stderr_of(child);
            let what = match exited {
                Some(status) => {
                    format!("weir import --follow exited ({status}) with {got} of {n} events")
                }
                None => format!("timed out waiting for {n} events: {got} after {CATCH_UP:?}"),
            };
            panic!("{what}{}: {err}", diagnosis());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The uid numbers of each log path, in ID order.
pub fn streams(db: &Path) -> BTreeMap<String, Vec<u64>> {
    let mut out: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for e in export_json(db) {
        let path = e["_path"].as_str().unwrap().to_string();
        let uid = e["uid"].as_str().unwrap();
        out.entry(path).or_default().push(uid[1..].parse().unwrap());
    }
    out
}

/// `weir verify` after a kill: no problem (a copy of listed events left by a kill during a
/// seal is a warning, and the next writer removes it).
pub fn check_verify(db: &Path) {
    let v = run(&["verify", "--db", s(db)]);
    assert!(
        v.status.success(),
        "weir verify after a kill: {}\n{}",
        text(&v.stdout),
        text(&v.stderr)
    );
}
