//! Running the real `weir` binary and reading what it prints.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `n` with its thousands grouped, as the summary line prints counts: `1,234,567`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The binary under test, with `WEIR_DB` cleared so that only `--db` chooses the database.
/// `WEIR_TEST_BIN` runs the tests against another build (e.g. an older commit's, to see a
/// regression test fail there).
pub fn weir() -> Command {
    let bin = std::env::var_os("WEIR_TEST_BIN")
        .unwrap_or_else(|| std::ffi::OsString::from(env!("CARGO_BIN_EXE_weir")));
    let mut c = Command::new(bin);
    c.env_remove("WEIR_DB");
    c
}

/// What `child` (its stderr piped) wrote to stderr, read to the end: call it once the child
/// has exited or been killed.
pub fn stderr_of(child: &mut Child) -> String {
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err
}

/// Runs `weir ARGS` with no stdin and returns its output.
pub fn run(args: &[&str]) -> Output {
    weir()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("weir runs")
}

/// Runs `weir ARGS` with `stdin` written to its standard input (by a thread, so that a large
/// input cannot deadlock against its output) and returns its output.
pub fn run_with_stdin(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = weir()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("weir runs");
    let mut input = child.stdin.take().expect("stdin is piped");
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().expect("weir runs");
    writer.join().unwrap();
    out
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

/// What `weir export --db DB --to json` prints: one JSON object a line.
pub fn export_json_text(db: &Path) -> String {
    let out = run(&["export", "--db", s(db), "--to", "json"]);
    ok(&out, "weir export --to json")
}

/// The events of `weir export --to json`, parsed.
pub fn export_json(db: &Path) -> Vec<serde_json::Value> {
    export_json_text(db)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
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

/// Runs the import command `args` until `delay` has passed (then SIGKILLs it: `None`) or it
/// exits (its stderr, after checking it exited 0).
pub fn run_until(args: &[String], delay: Duration, log: &Path) -> Option<String> {
    let err = std::fs::File::create(log).unwrap();
    let mut child = weir()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .expect("weir runs");
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let stderr = std::fs::read_to_string(log).unwrap();
            assert!(status.success(), "weir import failed: {status}\n{stderr}");
            return Some(stderr);
        }
        if t0.elapsed() >= delay {
            child.kill().unwrap();
            child.wait().unwrap();
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs `args` (a weir command that resumes where a killed run stopped) with SIGKILL at
/// random moments until a run completes; `after_kill(kills, ms)` checks the state after each
/// kill. Returns the kills. The first kill comes within 110% of `whole` (how long a run took
/// uninterrupted) and each kill widens that window by another 10%: a run that a loaded
/// machine, or a fuller archive, makes slower than `whole` still completes after a few
/// kills. (A fixed window once never let a retro match complete in 1,000 tries on a busy CI
/// machine.)
pub fn kill_until_done(
    args: &[String],
    whole: Duration,
    rng: &mut super::rng::Rng,
    log: &Path,
    mut after_kill: impl FnMut(u64, u64),
) -> u64 {
    let mut kills = 0;
    loop {
        let window = whole.as_millis() as u64 * (11 + kills) / 10;
        let ms = rng.below(window + 1);
        if run_until(args, Duration::from_millis(ms), log).is_some() {
            return kills;
        }
        kills += 1;
        assert!(kills < 200, "{args:?} never completes");
        after_kill(kills, ms);
    }
}
