//! A followed Suricata `eve.json` under logrotate (issue 57): exactly once across `kill -9`,
//! as issue 32's guarantee for Zeek logs.
//!
//! Suricata appends to `eve.json`; logrotate, as Suricata's documentation configures it,
//! either renames it (`create`: `eve.json` becomes `eve.json.1`, Suricata reopens a new
//! `eve.json` on SIGHUP) or copies it and truncates it in place (`copytruncate`), and with
//! `delaycompress` gzips the older copy on the next rotation (`eve.json.1` becomes
//! `eve.json.2.gz`, the oldest dropped past `rotate 4`: never one weir has not read all of,
//! here). The follower is given `eve.json*`, so it sees the rotated and compressed copies.
//!
//! [`kill_loop`] kills the follower at random moments while events are appended and the file
//! is rotated both ways, also while weir is down, then checks that every event is in the
//! archive exactly once (by its `flow_id`), [`KILLS`] times by default, for numbered and for
//! dated copies; `WEIR_EVE_KILLS=N` runs N kills (the long mode: 200), `WEIR_EVE_SEED`
//! replays a run and `WEIR_EVE_LOG=FILE` appends what each killed follower said (`-v`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use crate::common;
use common::cli::{export_json, s, stderr_of};
use common::follow::{append, follow, stop, wait_running_with};
use common::gz::gzip;
use common::rng::{kills_from_env, Rng};

/// Kills of the loop in CI.
const KILLS: u64 = 12;
/// Numbered copies kept (logrotate's `rotate N`): so many that none is dropped. A real
/// `rotate 4` drops the oldest copy at the fifth rotation, read or not: a follower that was
/// down (or, here, killed again and again before it caught up) for five rotations loses it,
/// as any reader would; weir then warns, naming the file and the byte after which its lines
/// were not imported (`... is not found any more; its lines after byte 31340 are not
/// imported`). This loop checks everything weir can guarantee, so it drops nothing.
const ROTATE: u64 = 1000;

/// How logrotate names the rotated copies.
#[derive(Clone, Copy, Debug)]
enum Naming {
    /// `eve.json.1`, then `eve.json.2.gz`, `eve.json.3.gz`, ... each renamed on (the
    /// default, with `compress` and `delaycompress`).
    Numbered,
    /// `eve.json-N` (`dateext`), gzipped in place to `eve.json-N.gz` at the next rotation
    /// (`delaycompress`).
    Dated,
}

/// EVE event `n`: its `flow_id` is `n`, its type one of three, its time `n` microseconds
/// after a start (with Suricata's `+0000` offset).
fn event(n: u64) -> String {
    let us = 1_695_017_621_000_000 + n;
    let (secs, micros) = (us / 1_000_000, us % 1_000_000);
    let t = time_text(secs, micros);
    match n % 3 {
        0 => format!(
            r#"{{"timestamp":"{t}+0000","flow_id":{n},"event_type":"alert","src_ip":"10.0.0.{}","src_port":{},"dest_ip":"192.168.1.1","dest_port":80,"proto":"TCP","alert":{{"action":"allowed","gid":1,"signature_id":{},"rev":1,"signature":"test {n}","category":"c","severity":2}}}}"#,
            n % 250,
            1024 + n % 60_000,
            2_000_000 + n % 7
        ),
        1 => format!(
            r#"{{"timestamp":"{t}+0000","flow_id":{n},"event_type":"dns","src_ip":"10.0.0.1","src_port":{},"dest_ip":"10.0.0.53","dest_port":53,"proto":"UDP","dns":{{"version":3,"type":"request","tx_id":0,"id":{},"rrname":"h{n}.example.com","rrtype":"A"}}}}"#,
            1024 + n % 60_000,
            n % 65_536
        ),
        _ => format!(
            r#"{{"timestamp":"{t}+0000","flow_id":{n},"event_type":"flow","src_ip":"10.0.0.2","src_port":{},"dest_ip":"10.0.0.3","dest_port":443,"proto":"TCP","flow":{{"pkts_toserver":{n},"pkts_toclient":1,"bytes_toserver":{},"bytes_toclient":60,"start":"{t}+0000","end":"{t}+0000","age":0,"state":"closed","reason":"timeout","alerted":false}}}}"#,
            1024 + n % 60_000,
            n * 100
        ),
    }
}

/// `secs.micros` as ISO 8601 (UTC, without offset): 2023-09-18 plus the seconds of that day.
fn time_text(secs: u64, micros: u64) -> String {
    let day_start = 1_694_995_200; // 2023-09-18T00:00:00Z
    let s = secs - day_start;
    format!(
        "2023-09-18T{:02}:{:02}:{:02}.{micros:06}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// Suricata and logrotate: events appended to `eve.json`, rotations by rename or by copy and
/// truncate, older copies gzipped and the oldest dropped.
struct Sensor {
    dir: PathBuf,
    naming: Naming,
    /// Events written so far (their `flow_id`s are `0..written`).
    written: u64,
    /// Events in the current `eve.json` since its creation or truncation.
    fresh: u64,
    /// Rotations so far (by rename, by copy and truncate).
    renamed: u64,
    copied: u64,
}

impl Sensor {
    fn eve(&self) -> PathBuf {
        self.dir.join("eve.json")
    }

    fn events(&mut self, n: u64) {
        let mut text = String::new();
        for i in self.written..self.written + n {
            text.push_str(&event(i));
            text.push('\n');
        }
        append(&self.eve(), &text);
        self.written += n;
        self.fresh += n;
    }

    /// logrotate's shifting before a rotation: `eve.json.K.gz` to `K+1`, the oldest dropped,
    /// and `eve.json.1` gzipped to `eve.json.2.gz` (`delaycompress`).
    fn shift(&self) {
        let _ = std::fs::remove_file(self.dir.join(format!("eve.json.{ROTATE}.gz")));
        for k in (2..ROTATE).rev() {
            let from = self.dir.join(format!("eve.json.{k}.gz"));
            if from.exists() {
                std::fs::rename(&from, self.dir.join(format!("eve.json.{}.gz", k + 1))).unwrap();
            }
        }
        let one = self.dir.join("eve.json.1");
        if one.exists() {
            let data = std::fs::read(&one).unwrap();
            let gz = self.dir.join("eve.json.2.gz");
            let tmp = self.dir.join(".eve.json.2.gz.tmp");
            std::fs::write(&tmp, gzip(&[&data])).unwrap();
            std::fs::rename(&tmp, &gz).unwrap();
            std::fs::remove_file(&one).unwrap();
        }
    }

    /// One rotation: by rename (`create`; the next event creates a new `eve.json`) or by copy
    /// and truncate (`copytruncate`).
    fn rotate(&mut self, by_copy: bool) {
        let one = match self.naming {
            Naming::Numbered => {
                self.shift();
                self.dir.join("eve.json.1")
            }
            Naming::Dated => {
                let n = self.renamed + self.copied;
                if n > 0 {
                    let prev = self.dir.join(format!("eve.json-{n}"));
                    let data = std::fs::read(&prev).unwrap();
                    let tmp = self.dir.join(".eve.json.gz.tmp");
                    std::fs::write(&tmp, gzip(&[&data])).unwrap();
                    std::fs::rename(&tmp, self.dir.join(format!("eve.json-{n}.gz"))).unwrap();
                    std::fs::remove_file(&prev).unwrap();
                }
                self.dir.join(format!("eve.json-{}", n + 1))
            }
        };
        if by_copy {
            std::fs::copy(self.eve(), &one).unwrap();
            std::fs::OpenOptions::new()
                .write(true)
                .open(self.eve())
                .unwrap()
                .set_len(0)
                .unwrap();
            self.copied += 1;
        } else {
            std::fs::rename(self.eve(), &one).unwrap();
            self.renamed += 1;
        }
        self.fresh = 0;
    }

    fn step(&mut self, rng: &mut Rng) {
        if self.fresh > 0 && rng.below(10) == 0 {
            self.rotate(rng.below(2) == 0);
        }
        self.events(1 + rng.below(25));
    }
}

/// The `flow_id`s in the archive, each with how many times it is there.
fn flow_ids(db: &Path) -> BTreeMap<u64, usize> {
    let mut out = BTreeMap::new();
    for e in export_json(db) {
        let id = e["flow_id"]
            .as_u64()
            .unwrap_or_else(|| panic!("an event without flow_id: {e}"));
        *out.entry(id).or_default() += 1;
    }
    out
}

/// No event twice and none that was not written; with `all`, every written one.
fn check_once(db: &Path, written: u64, all: bool, seed: u64) {
    let got = flow_ids(db);
    let twice: Vec<(&u64, &usize)> = got.iter().filter(|(_, c)| **c > 1).take(5).collect();
    assert!(
        twice.is_empty(),
        "events more than once: {twice:?} (seed {seed})"
    );
    assert!(
        got.keys().all(|&k| k < written),
        "events never written (seed {seed})"
    );
    if all {
        let missing: Vec<u64> = (0..written)
            .filter(|k| !got.contains_key(k))
            .take(5)
            .collect();
        assert!(
            missing.is_empty(),
            "events missing: {missing:?}... (seed {seed})"
        );
    }
}

/// [`wait_running_with`], saying which events are missing and the seed.
fn wait_running(db: &Path, n: u64, child: &mut Child, seed: u64) {
    wait_running_with(db, n, child, || {
        let ids = flow_ids(db);
        let missing: Vec<u64> = (0..n).filter(|k| !ids.contains_key(k)).collect();
        format!(", missing {} (seed {seed})", runs(&missing))
    });
}

/// `ids` (sorted) as runs `a-b`, at most 20.
fn runs(ids: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() && out.len() < 20 {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        out.push(format!("{}-{}", ids[i], ids[j]));
        i = j + 1;
    }
    out.join(", ")
}

#[test]
fn eve_follow_kill_loop_with_numbered_rotation() {
    kill_loop(Naming::Numbered);
}

#[test]
fn eve_follow_kill_loop_with_dated_rotation() {
    kill_loop(Naming::Dated);
}

/// `kill -9` at random moments while Suricata appends and logrotate rotates (by rename or
/// by copy and truncate, at random) with `naming`, also while weir is down; at the end every
/// event is in the archive once, typed.
fn kill_loop(naming: Naming) {
    let kills = kills_from_env("WEIR_EVE_KILLS", KILLS);
    let mut rng = Rng::from_env("WEIR_EVE_SEED");
    let seed = rng.0;
    let t0 = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("suricata");
    std::fs::create_dir(&dir).unwrap();
    let db = tmp.path().join("db");
    let pattern = format!("{}/eve.json*", s(&dir));
    let verbose = std::env::var("WEIR_EVE_LOG").is_ok();
    let mut args = vec![];
    if verbose {
        args.push("-v");
    }
    args.extend([
        "--from",
        "suricata",
        "--batch-size",
        "7",
        "--batch-timeout",
        "20ms",
        "--max-segment-size",
        "256KiB",
    ]);
    let mut sensor = Sensor {
        dir,
        naming,
        written: 0,
        fresh: 0,
        renamed: 0,
        copied: 0,
    };
    sensor.events(5);
    let mut child = follow(&db, &[&pattern], &args);
    wait_running(&db, sensor.written, &mut child, seed);
    for _ in 0..kills {
        for _ in 0..rng.below(30) {
            sensor.step(&mut rng);
            std::thread::sleep(Duration::from_millis(rng.below(20)));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        if let Ok(log) = std::env::var("WEIR_EVE_LOG") {
            // Diagnostics: what the follower said (with `-v` in WEIR_EVE_ARGS).
            let err = stderr_of(&mut child);
            append(
                Path::new(&log),
                &format!("== run (written {})\n{err}", sensor.written),
            );
        }
        check_once(&db, sensor.written, false, seed);
        // Suricata and logrotate go on while weir is down.
        for _ in 0..rng.below(4) {
            sensor.step(&mut rng);
        }
        child = follow(&db, &[&pattern], &args);
    }
    wait_running(&db, sensor.written, &mut child, seed);
    let err = stop(child);
    check_once(&db, sensor.written, true, seed);
    // Every event typed in its schema: the alerts' signature IDs are counts.
    let alerts = common::cli::run(&[
        "count",
        "--db",
        s(&db),
        "#type == \"suricata.alert\" && alert.signature_id >= 2000000",
    ]);
    let want = (0..sensor.written).filter(|n| n % 3 == 0).count();
    assert_eq!(
        common::cli::text(&alerts.stdout).trim(),
        want.to_string(),
        "{err}"
    );
    eprintln!(
        "{naming:?}: {kills} kills, {} events, {} rotations by rename and {} by copy-and-truncate in {:?} (seed {seed})",
        sensor.written,
        sensor.renamed,
        sensor.copied,
        t0.elapsed()
    );
}
