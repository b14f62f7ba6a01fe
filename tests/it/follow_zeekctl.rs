//! A zeekctl sensor, simulated in-process, followed by `weir import --follow` that is
//! SIGKILLed at random moments: every line of every log exactly once (issue 32).
//!
//! **The sensor.** A writer thread plays Zeek and zeekctl's archiver for three logs (`conn`,
//! `dns`, `http`). It appends lines to `logs/current/NAME.log` in pieces of random size (a
//! line is often half written for a while), and every 1.5 to 3.5 s rotates all three as
//! zeekctl does: `#close`, a rename within `current/` (to `NAME.2009-11-18-08-00-00.log` as
//! Zeek names it, or to a name that no pattern matches; chosen at random each time), a new
//! `NAME.log` with a fresh header (`#open` with the next hour), then the archiver gzips the
//! renamed file into `logs/2009-11-18/NAME.08:00:00-09:00:00.log.gz`, one gzip member written
//! in three pieces with pauses (so weir sees a partial member), and removes the plain file.
//! One hour of one log is a *generation*; every line has a unique uid (log `k`'s lines are
//! numbered on from `k * STRIDE` across its generations), so each exported event names its
//! generation and its place in it.
//!
//! **The kills.** While the writer runs, weir is started and SIGKILLed [`KILLS`] times: at a
//! random moment, just after a rename, or while a gzip file is half written; weir is down
//! for a random while in between. After each kill, each generation's events in the archive
//! are its first lines, each once, in order, and `weir verify` is clean. Then a last run sees
//! at least two more rotations, the writer stops, weir catches up and is stopped with
//! SIGTERM, and:
//!
//! - `logs/**/*.log*` (current and dated directories): every line of every generation is in
//!   the archive exactly once, in its file's order (generations of a log are compared by
//!   uid), and nothing else; no run warned of a file not found.
//! - `logs/current/*.log` only: the same, except that a generation whose plain file was
//!   removed while weir was down may lack a tail: only if some run's stderr has the warning
//!   that names that file (one of its paths in `current/`, its inode, and a byte offset at or
//!   before its first missing line) and suggests a `**/*.log*` pattern. Rotations while weir
//!   runs lose nothing: those of the last run are checked exactly, those of killed runs as
//!   far as timing allows (no tail may be missing from a file removed after weir was up and
//!   more than [`COMMIT_SLACK`] before it was killed). Here the writer rotates a log only
//!   once weir has been up for [`SEEN`] with it in `current/`: a file that is created and
//!   rotated away while weir is down cannot be seen by any reader that watches `current/`.
//!
//! **Long mode.** `WEIR_ZEEKCTL_KILLS=N` runs N kills in each of the two tests (300 is the
//! long mode: `WEIR_ZEEKCTL_KILLS=300 cargo test --release --test it follow_zeekctl::`);
//! `WEIR_ZEEKCTL_SEED` replays a run (the seed is printed at the start and in failures);
//! `WEIR_ZEEKCTL_TRACE=FILE` appends each run's stderr (what the follower did) to FILE, and
//! `WEIR_ZEEKCTL_LOG` replaces its `WEIR_LOG` filter (`debug` for more).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::cli::{s, wait_for};
use common::conn_log::row;
use common::follow::{
    append, check_verify, count, follow_command, log_header, sigterm, streams, CATCH_UP,
};
use common::rng::{kills_from_env, Rng};

/// Kills per test by default (CI); `WEIR_ZEEKCTL_KILLS` overrides it.
const KILLS: u64 = 4;

/// The logs Zeek writes.
const LOGS: [&str; 3] = ["conn", "dns", "http"];

/// Uids of log `k` start at `k * STRIDE`.
const STRIDE: u64 = 1_000_000_000;

/// Current-only: how long weir must have been up with a generation in `current/` before the
/// writer rotates it.
const SEEN: Duration = Duration::from_millis(1500);

/// After weir's first `following file` line, its first scan (and its search for files not
/// found) is over by then.
const READY_MARGIN: Duration = Duration::from_millis(500);

/// Time that weir, up, is given to read a rotated file to its end and commit it.
const COMMIT_SLACK: Duration = Duration::from_secs(3);

/// Tiny batches: kills land between the WAL records of batches.
const ARGS: [&str; 4] = ["--batch-size", "16", "--batch-timeout", "20ms"];

/// Tiny segments, so that kills land between seals too: 16 KiB of rows, plus room for the
/// checkpoints of every file, which each segment records: of the `gens` generations made so
/// far (two files each at most: the plain one and its gzip copy) and of those a run can make
/// (rotations every 2.5 s on average). A checkpoint takes 66 bytes, its path and, for a file
/// not read to its end (a plain file removed before weir finished it), its Zeek header
/// (`checkpoint_len` in src/wal.rs): 319 bytes per file on average in a long run (1,416 files,
/// 452,029 bytes), so 512 bytes each are reserved. (At 128 bytes each, the long mode stopped
/// with "the checkpoints of 1416 files read ... raise --max-segment-size", as it should.)
fn max_segment_size(gens: usize) -> String {
    let files = 2 * (gens as u64 + 3 * 40);
    format!("{}KiB", 16 + files.div_ceil(2))
}

/// What the follower logs (`following file` says its first scan is under way); warnings
/// pass too.
const WEIR_LOG: &str = "warn,weir::unstable::source::follow=info";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Patterns {
    /// `logs/**/*.log*`: `current/` and the dated directories.
    All,
    /// `logs/current/*.log`.
    CurrentOnly,
}

/// One hour of one log.
struct Gen {
    log: usize,
    /// Sequence number (uid within its log) of its first line.
    first: u64,
    /// The text offset of each of its data lines (line `i` has sequence `first + i`).
    offsets: Vec<u64>,
    /// Bytes of text made so far.
    len: u64,
    dev: u64,
    ino: u64,
    /// Its plain paths: `current/NAME.log`, then the one it was renamed to.
    names: Vec<PathBuf>,
    created: Instant,
    renamed: Option<Instant>,
    removed: Option<Instant>,
}

/// State shared by the writer thread and the test.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    /// The test failed: the writer ends at once.
    abort: AtomicBool,
    /// Rotations done (each rotates every log).
    rotations: AtomicU64,
    /// Gzip files written in part.
    partial_gz: AtomicU64,
    /// Since when the running weir has been up (its first scan), `None` while it is down.
    up: Mutex<Option<Instant>>,
    /// Bumped at every kill, under `up`'s lock: a late `following file` of a killed run
    /// does not count.
    epoch: AtomicU64,
    gens: Mutex<Vec<Gen>>,
}

/// The date and hour of hour `h` of the simulation (hour 0: 2009-11-18 08:00).
fn clock(h: u64) -> (String, u64) {
    let hours = 8 + h as i64;
    // Days since 1970-01-01 to civil date (H. Hinnant's algorithm); 14566 is 2009-11-18.
    let z = 14566 + hours / 24 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (format!("{y:04}-{m:02}-{d:02}"), (hours % 24) as u64)
}

/// The Zeek time stamp of the start of hour `h` (`#open`, `#close`, rotated names).
fn stamp(h: u64) -> String {
    let (date, hh) = clock(h);
    format!("{date}-{hh:02}-00-00")
}

/// The writer's view of one log's current file.
struct Live {
    gen: usize,
    /// Lines made, not written yet.
    pending: Vec<u8>,
}

/// A rotated file being gzipped into its dated directory.
struct Job {
    gen: usize,
    staging: PathBuf,
    dest: PathBuf,
    gz: Vec<u8>,
    /// The ends of the pieces written at once.
    cuts: Vec<usize>,
    done: usize,
    next_at: Instant,
}

/// Zeek opens `current/NAME.log` for hour `hour`: a header, no line yet.
fn open_gen(root: &Path, log: usize, hour: u64, first: u64, sh: &Shared) -> Live {
    let path = root.join("current").join(format!("{}.log", LOGS[log]));
    let name = LOGS[log];
    let header = log_header(name).replace(
        &format!("#path\t{name}\n"),
        &format!("#path\t{name}\n#open\t{}\n", stamp(hour)),
    );
    assert!(!path.exists(), "{}", path.display());
    append(&path, &header);
    let meta = std::fs::metadata(&path).unwrap();
    let mut gens = sh.gens.lock().unwrap();
    gens.push(Gen {
        log,
        first,
        offsets: Vec::new(),
        len: header.len() as u64,
        dev: meta.dev(),
        ino: meta.ino(),
        names: vec![path],
        created: Instant::now(),
        renamed: None,
        removed: None,
    });
    Live {
        gen: gens.len() - 1,
        pending: Vec::new(),
    }
}

/// Zeek and zeekctl's archiver (see the module docs), until `sh.stop`: then the pending
/// gzip files are finished and every line made is written.
fn writer(root: PathBuf, seed: u64, need_seen: bool, sh: Arc<Shared>) {
    let mut rng = Rng(seed);
    let current = root.join("current");
    let mut hour = 0u64;
    let mut next = [0u64; LOGS.len()];
    let mut live: Vec<Live> = (0..LOGS.len())
        .map(|k| open_gen(&root, k, hour, 0, &sh))
        .collect();
    let interval = |rng: &mut Rng| Duration::from_millis(1500 + rng.below(2000));
    let mut rotate_at = Instant::now() + interval(&mut rng);
    let mut seen = false;
    let mut jobs: Vec<Job> = Vec::new();
    loop {
        if sh.abort.load(Ordering::SeqCst) {
            return;
        }
        let stopping = sh.stop.load(Ordering::SeqCst);
        // Zeek writes: new lines, and a random part of what it buffered.
        for (k, l) in live.iter_mut().enumerate() {
            let path = current.join(format!("{}.log", LOGS[k]));
            if !stopping {
                let mut gens = sh.gens.lock().unwrap();
                let g = &mut gens[l.gen];
                for _ in 0..rng.below(4) {
                    let line = row(k as u64 * STRIDE + next[k]);
                    next[k] += 1;
                    g.offsets.push(g.len);
                    g.len += line.len() as u64;
                    l.pending.extend_from_slice(line.as_bytes());
                }
            }
            let n = if stopping || rng.below(2) == 0 {
                l.pending.len()
            } else {
                rng.below(l.pending.len() as u64 + 1) as usize
            };
            if n > 0 {
                let piece: Vec<u8> = l.pending.drain(..n).collect();
                append(&path, std::str::from_utf8(&piece).unwrap());
            }
        }
        let now = Instant::now();
        if let Some(up) = *sh.up.lock().unwrap() {
            let gens = sh.gens.lock().unwrap();
            seen |= live
                .iter()
                .all(|l| now.saturating_duration_since(up.max(gens[l.gen].created)) >= SEEN);
        }
        if !stopping && now >= rotate_at && (seen || !need_seen) {
            hour += 1;
            for (k, l) in live.iter_mut().enumerate() {
                jobs.push(rotate(&root, k, l, hour, &mut next, &mut rng, &sh));
            }
            rotate_at = Instant::now() + interval(&mut rng);
            seen = false;
            sh.rotations.fetch_add(1, Ordering::SeqCst);
        }
        // The archiver.
        jobs.retain_mut(|j| !archive_step(j, stopping, &mut rng, &sh));
        if stopping && jobs.is_empty() && live.iter().all(|l| l.pending.is_empty()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10 + rng.below(20)));
    }
}

/// Rotates log `k` into hour `hour`: `#close`, rename within `current/`, a new file; returns
/// the archiver's job for the old one.
fn rotate(
    root: &Path,
    k: usize,
    l: &mut Live,
    hour: u64,
    next: &mut [u64],
    rng: &mut Rng,
    sh: &Shared,
) -> Job {
    let name = LOGS[k];
    let path = root.join("current").join(format!("{name}.log"));
    let close = format!("#close\t{}\n", stamp(hour));
    l.pending.extend_from_slice(close.as_bytes());
    append(&path, std::str::from_utf8(&l.pending).unwrap());
    l.pending.clear();
    let prev = hour - 1;
    let staging = if rng.below(2) == 0 {
        // As Zeek names it: still matches `current/*.log`.
        root.join("current")
            .join(format!("{name}.{}.log", stamp(prev)))
    } else {
        // A name no pattern matches.
        root.join("current")
            .join(format!("{name}-{}.rotating", stamp(prev)))
    };
    std::fs::rename(&path, &staging).unwrap();
    {
        let mut gens = sh.gens.lock().unwrap();
        let g = &mut gens[l.gen];
        g.len += close.len() as u64;
        g.renamed = Some(Instant::now());
        g.names.push(staging.clone());
    }
    let gen = l.gen;
    *l = open_gen(root, k, hour, next[k], sh);
    let text = std::fs::read(&staging).unwrap();
    let gz = common::gz::gzip(&[&text]);
    let (date, hh) = clock(prev);
    let dest = root.join(&date).join(format!(
        "{name}.{hh:02}:00:00-{:02}:00:00.log.gz",
        (hh + 1) % 24
    ));
    let a = 1 + rng.below(gz.len() as u64 - 2) as usize;
    let b = 1 + rng.below(gz.len() as u64 - 2) as usize;
    let mut cuts = vec![a.min(b), a.max(b), gz.len()];
    cuts.dedup();
    Job {
        gen,
        staging,
        dest,
        gz,
        cuts,
        done: 0,
        next_at: Instant::now() + Duration::from_millis(rng.below(60)),
    }
}

/// Writes the next piece of a gzip file when it is time (all at once when `stopping`);
/// whether the job is over (the plain file removed).
fn archive_step(j: &mut Job, stopping: bool, rng: &mut Rng, sh: &Shared) -> bool {
    if !stopping && Instant::now() < j.next_at {
        return false;
    }
    std::fs::create_dir_all(j.dest.parent().unwrap()).unwrap();
    let from = j.cuts.iter().take_while(|&&c| c <= j.done).count();
    let end = if stopping { j.gz.len() } else { j.cuts[from] };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&j.dest)
        .unwrap();
    std::io::Write::write_all(&mut f, &j.gz[j.done..end]).unwrap();
    if j.done == 0 {
        sh.partial_gz.fetch_add(1, Ordering::SeqCst);
    }
    j.done = end;
    if j.done < j.gz.len() {
        j.next_at = Instant::now() + Duration::from_millis(30 + rng.below(60));
        return false;
    }
    std::fs::remove_file(&j.staging).unwrap();
    sh.partial_gz.fetch_sub(1, Ordering::SeqCst);
    sh.gens.lock().unwrap()[j.gen].removed = Some(Instant::now());
    true
}

/// A weir run being followed: its stderr is read by a thread that notes when it is up.
struct Running {
    child: Child,
    ready: Arc<Mutex<Option<Instant>>>,
    reader: Option<JoinHandle<String>>,
}

/// A failed test leaves no weir running.
impl Drop for Running {
    fn drop(&mut self) {
        if self.reader.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A failed test stops the writer.
struct Abort(Arc<Shared>);

impl Drop for Abort {
    fn drop(&mut self) {
        self.0.abort.store(true, Ordering::SeqCst);
    }
}

/// What one run of weir did.
struct Run {
    ready: Option<Instant>,
    /// When it was about to be killed or stopped.
    end: Instant,
    stderr: String,
}

fn start(db: &Path, pattern: &str, sh: &Arc<Shared>) -> Running {
    let segment = max_segment_size(sh.gens.lock().unwrap().len());
    let args: Vec<&str> = ARGS
        .iter()
        .copied()
        .chain(["--max-segment-size", segment.as_str()])
        .collect();
    let mut child = follow_command(db, &[pattern], &args)
        .env(
            "WEIR_LOG",
            std::env::var("WEIR_ZEEKCTL_LOG").unwrap_or_else(|_| WEIR_LOG.to_string()),
        )
        .spawn()
        .expect("weir runs");
    let stderr = child.stderr.take().unwrap();
    let ready = Arc::new(Mutex::new(None));
    let epoch = sh.epoch.load(Ordering::SeqCst);
    let reader = {
        let (ready, sh) = (ready.clone(), sh.clone());
        std::thread::spawn(move || {
            let mut out = String::new();
            let mut r = BufReader::new(stderr);
            let mut line = Vec::new();
            while r.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
                let text = String::from_utf8_lossy(&line).into_owned();
                if text.contains("following file") {
                    let mut up = sh.up.lock().unwrap();
                    let mut ready = ready.lock().unwrap();
                    if ready.is_none() && sh.epoch.load(Ordering::SeqCst) == epoch {
                        let now = Instant::now();
                        *ready = Some(now);
                        *up = Some(now);
                    }
                }
                out.push_str(&text);
                line.clear();
            }
            out
        })
    };
    Running {
        child,
        ready,
        reader: Some(reader),
    }
}

impl Running {
    /// Marks weir down (for the writer), then ends it: SIGKILL, or SIGTERM with `graceful`
    /// (then it must exit 0).
    fn end(mut self, sh: &Shared, graceful: bool) -> Run {
        let end = {
            let mut up = sh.up.lock().unwrap();
            sh.epoch.fetch_add(1, Ordering::SeqCst);
            *up = None;
            Instant::now()
        };
        let status = if graceful {
            sigterm(&self.child);
            self.child.wait().unwrap()
        } else {
            self.child.kill().unwrap();
            self.child.wait().unwrap()
        };
        let stderr = self.reader.take().unwrap().join().unwrap();
        if graceful {
            assert!(status.success(), "import --follow failed: {stderr}");
        }
        let ready = *self.ready.lock().unwrap();
        // `WEIR_ZEEKCTL_TRACE=FILE` keeps every run's stderr (the follower's decisions) there.
        if let Some(trace) = std::env::var_os("WEIR_ZEEKCTL_TRACE") {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(trace)
                .unwrap();
            writeln!(
                f,
                "==== run ended ({}killed)\n{stderr}",
                if graceful { "not " } else { "" }
            )
            .unwrap();
        }
        Run { ready, end, stderr }
    }
}

/// The events of each generation (index into `gens`), in ID order; checks that each is its
/// generation's first lines, each once, in order, and that no event belongs to no line
/// written.
fn by_gen(db: &Path, gens: &[Gen], seed: u64) -> BTreeMap<usize, usize> {
    let mut got: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for (path, uids) in streams(db) {
        let k = LOGS
            .iter()
            .position(|l| *l == path)
            .unwrap_or_else(|| panic!("an event of no log: {path} (seed {seed})"));
        for uid in uids {
            assert_eq!(uid / STRIDE, k as u64, "{path}: uid {uid} (seed {seed})");
            let seq = uid % STRIDE;
            let g = gens
                .iter()
                .enumerate()
                .filter(|(_, g)| g.log == k && g.first <= seq)
                .max_by_key(|(_, g)| g.first)
                .map(|(i, _)| i)
                .unwrap();
            assert!(
                seq < gens[g].first + gens[g].offsets.len() as u64,
                "{path}: uid {uid} was never written (seed {seed})"
            );
            got.entry(g).or_default().push(seq);
        }
    }
    got.into_iter()
        .map(|(g, seqs)| {
            let first = gens[g].first;
            let want: Vec<u64> = (first..first + seqs.len() as u64).collect();
            assert_eq!(
                seqs,
                want,
                "{}: generation of {} (seed {seed}): not its first lines once each in order",
                LOGS[gens[g].log],
                gens[g].names[0].display()
            );
            (g, seqs.len())
        })
        .collect()
}

/// The warnings `NAME: a followed file (device D, inode I) is not found any more; its lines
/// after byte N are not imported ...` of all runs: (the line, N).
fn not_found_warnings(runs: &[Run]) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for r in runs {
        for line in r
            .stderr
            .lines()
            .filter(|l| l.contains("is not found any more"))
        {
            let after = line
                .split("lines after byte ")
                .nth(1)
                .and_then(|t| t.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no byte offset in {line:?}"));
            out.push((line.to_string(), after));
        }
    }
    out
}

fn zeekctl(patterns: Patterns) {
    let t0 = Instant::now();
    let kills = kills_from_env("WEIR_ZEEKCTL_KILLS", KILLS);
    let mut rng = Rng::from_env("WEIR_ZEEKCTL_SEED");
    let seed = rng.0;
    assert_eq!(stamp(0), "2009-11-18-08-00-00");
    assert_eq!(stamp(16 + 24 * 13), "2009-12-02-00-00-00");
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("logs");
    std::fs::create_dir_all(root.join("current")).unwrap();
    let db = tmp.path().join("db");
    let pattern = match patterns {
        Patterns::All => format!("{}/**/*.log*", s(&root)),
        Patterns::CurrentOnly => format!("{}/current/*.log", s(&root)),
    };
    let sh = Arc::new(Shared::default());
    let _abort = Abort(sh.clone());
    let writer = {
        let (root, sh, wseed) = (root.clone(), sh.clone(), rng.next());
        let need_seen = patterns == Patterns::CurrentOnly;
        std::thread::spawn(move || writer(root, wseed, need_seen, sh))
    };
    let mut runs = Vec::new();
    let (mut at_rename, mut at_partial) = (0, 0);
    for _ in 0..kills {
        let weir = start(&db, &pattern, &sh);
        let rotations = sh.rotations.load(Ordering::SeqCst);
        match rng.below(4) {
            0 => {
                // While a gzip file is half written.
                let deadline = Instant::now() + Duration::from_secs(8);
                while sh.partial_gz.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(2));
                }
                std::thread::sleep(Duration::from_millis(rng.below(40)));
            }
            1 => {
                // Just after a rename.
                let deadline = Instant::now() + Duration::from_secs(8);
                while sh.rotations.load(Ordering::SeqCst) == rotations && Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
                std::thread::sleep(Duration::from_millis(rng.below(20)));
            }
            _ => {
                let ms = if rng.below(8) == 0 {
                    4000 + rng.below(4000)
                } else {
                    50 + rng.below(3000)
                };
                std::thread::sleep(Duration::from_millis(ms));
            }
        }
        if sh.partial_gz.load(Ordering::SeqCst) > 0 {
            at_partial += 1;
        }
        if sh.rotations.load(Ordering::SeqCst) > rotations {
            at_rename += 1;
        }
        runs.push(weir.end(&sh, false));
        // What is there is the first lines of each generation, once each, in order (unless
        // a loaded machine let the first run be killed before it made the archive).
        if std::fs::read_dir(&db).is_ok_and(|mut d| d.next().is_some()) {
            by_gen(&db, &sh.gens.lock().unwrap(), seed);
            check_verify(&db);
        }
        std::thread::sleep(Duration::from_millis(rng.below(1000)));
    }
    // The last run: at least two rotations while it is up, then the writer stops.
    let weir = start(&db, &pattern, &sh);
    let t = Instant::now();
    while weir.ready.lock().unwrap().is_none() {
        if t.elapsed() > CATCH_UP {
            let r = weir.end(&sh, false);
            panic!(
                "timed out waiting for weir's first scan (seed {seed}): {}",
                r.stderr
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(READY_MARGIN);
    let last_up = Instant::now();
    let r0 = sh.rotations.load(Ordering::SeqCst);
    wait_for("two rotations", CATCH_UP, || {
        sh.rotations.load(Ordering::SeqCst) >= r0 + 2
    });
    sh.stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    let gens = std::mem::take(&mut *sh.gens.lock().unwrap());
    let total: u64 = gens.iter().map(|g| g.offsets.len() as u64).sum();
    // Caught up: every line (all directories), or every line of the generations that must be
    // whole (current only: the files still in `current/` and those rotated in the last run).
    // Not a panic on a timeout: the check below then names each file that lacks lines.
    let caught_up = Instant::now();
    let done = || match patterns {
        Patterns::All => count(&db) >= total,
        Patterns::CurrentOnly => {
            let got = by_gen(&db, &gens, seed);
            (0..gens.len())
                .filter(|&g| gens[g].renamed.is_none_or(|t| t >= last_up))
                .all(|g| got.get(&g).copied().unwrap_or(0) == gens[g].offsets.len())
        }
    };
    while !done() && caught_up.elapsed() < CATCH_UP {
        std::thread::sleep(Duration::from_millis(50));
    }
    let caught_up = caught_up.elapsed();
    // Anything else it would read (it would be a bug) has had time to arrive.
    std::thread::sleep(Duration::from_secs(1));
    runs.push(weir.end(&sh, true));
    check_verify(&db);
    // The check.
    let got = by_gen(&db, &gens, seed);
    let warnings = not_found_warnings(&runs);
    let mut lost = (0, 0);
    for (i, g) in gens.iter().enumerate() {
        let have = got.get(&i).copied().unwrap_or(0);
        if have == g.offsets.len() {
            continue;
        }
        let what = format!(
            "{} of {} lines of {} (inode {}, seed {seed}) missing ({caught_up:?} after the \
             writer stopped)",
            g.offsets.len() - have,
            g.offsets.len(),
            g.names.last().unwrap().display(),
            g.ino
        );
        assert_eq!(patterns, Patterns::CurrentOnly, "{what}");
        let removed = g
            .removed
            .unwrap_or_else(|| panic!("{what}; it was never removed"));
        assert!(
            g.renamed.unwrap() < last_up,
            "{what}; it was rotated while the last run was up"
        );
        for r in &runs {
            let Some(ready) = r.ready else { continue };
            assert!(
                removed < ready + READY_MARGIN || removed + COMMIT_SLACK > r.end,
                "{what}; it was removed {:?} after weir was up and {:?} before it was killed",
                removed.duration_since(ready),
                r.end.saturating_duration_since(removed)
            );
        }
        let first_missing = g.offsets[have];
        let named = warnings.iter().any(|(line, after)| {
            g.names.iter().any(|n| {
                line.contains(&format!(
                    "{}: a followed file (device {}, inode {})",
                    n.display(),
                    g.dev,
                    g.ino
                ))
            }) && *after <= first_missing
                && line.contains("**/*.log*")
        });
        let all: Vec<&str> = warnings.iter().map(|w| w.0.as_str()).collect();
        assert!(
            named,
            "{what}, from byte {first_missing} of its text, and no warning names it: {all:#?}"
        );
        lost.0 += 1;
        lost.1 += g.offsets.len() - have;
    }
    if patterns == Patterns::All {
        assert!(warnings.is_empty(), "{warnings:#?} (seed {seed})");
    }
    for r in &runs {
        assert!(
            !r.stderr.contains("before its checkpoint"),
            "{} (seed {seed})",
            r.stderr
        );
    }
    eprintln!(
        "zeekctl {patterns:?}: {kills} kills ({at_rename} in a run with a rotation, {at_partial} \
         with a gzip file half written), {} rotations, {} files, {total} lines, {} warnings, \
         {} files lost a tail ({} lines), caught up in {caught_up:.1?}, {:.1} s",
        sh.rotations.load(Ordering::SeqCst),
        gens.len(),
        warnings.len(),
        lost.0,
        lost.1,
        t0.elapsed().as_secs_f64()
    );
}

/// `logs/**/*.log*`: every line of every log exactly once, in order, through kills at any
/// moment of a rotation and compression.
#[test]
fn zeekctl_rotation_all_directories_exactly_once() {
    zeekctl(Patterns::All);
}

/// `logs/current/*.log`: the same for rotations while weir runs; a rotation while it is
/// down loses a tail only with a warning that names the file and a pattern that finds it.
#[test]
fn zeekctl_rotation_current_only_loses_only_with_a_warning() {
    zeekctl(Patterns::CurrentOnly);
}
