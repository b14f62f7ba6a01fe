//! Live matching (issue 58): every batch a writer commits is matched against the archive's
//! indicator sets, and each match is committed with it as a `weir.sighting` event.
//!
//! - [`live_sightings_equal_the_reference_and_retro_adds_none`]: random indicators, random
//!   events (the generator and brute-force reference of `intel.rs`), the set stored before
//!   the import: the live sightings are exactly the reference's matches, and a retro match
//!   afterwards finds the same matches and records none again.
//! - [`live_sightings_are_exactly_once_across_sigkill`]: the same import killed with SIGKILL
//!   at random moments and rerun until it completes: after every kill no sighting is there
//!   twice and each has its evidence; at the end they are the reference's, each once. A
//!   second set is added after the first kill, so the runs after it match it live and, with
//!   `--retro`, in the background against the events already there, both killed at random.
//!   Then a retro match of that set (`weir intel match`), killed and rerun the same way,
//!   completes it: its sightings each once, the live ones untouched (`WEIR_LIVE_KILLS=60`
//!   for the long mode).
//! - [`removed_and_expired_indicators_stop_matching_and_sightings_stay`].
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::cli::{kill_until_done, ok, run, run_until, s, text};
use crate::common::rng::{kills_from_env, Rng};
use crate::intel::{add, assert_same, db_dir, expected, feed, generate, json_lines, now_ns, write};

/// Kills of the kill loop by default (`WEIR_LIVE_KILLS=N` for more).
const KILLS: u64 = 3;

type Key = (String, String, String, String);

/// What [`setup_with_second_feed`] makes: the temporary directory, the archive, the logs,
/// the reference's matches of the set added, and a second feed's file and matches.
type Setup = (
    tempfile::TempDir,
    PathBuf,
    Vec<PathBuf>,
    BTreeSet<Key>,
    (PathBuf, BTreeSet<Key>),
);

/// The sightings of `db` as (evidence uid, indicator type, indicator, field), in ID order,
/// duplicates kept; panics on a sighting whose evidence is not in the archive.
fn sightings(db: &Path) -> Vec<Key> {
    sightings_of(db, None)
}

/// [`sightings`] of set `set` alone (all: `None`).
fn sightings_of(db: &Path, set: Option<&str>) -> Vec<Key> {
    let all = sightings_with_uids(db);
    match set {
        Some(set) => keys_of(&all, set),
        None => all.iter().map(key).collect(),
    }
}

/// The keys of the sightings of set `set` among `all`.
fn keys_of(all: &[(String, serde_json::Value)], set: &str) -> Vec<Key> {
    all.iter()
        .filter(|(_, v)| v["name"] == set)
        .map(key)
        .collect()
}

/// A sighting's (evidence uid, indicator type, indicator, field).
fn key((evidence, v): &(String, serde_json::Value)) -> Key {
    (
        evidence.clone(),
        v["indicator_type"].as_str().unwrap().to_string(),
        v["indicator"].as_str().unwrap().to_string(),
        v["field"].as_str().unwrap().to_string(),
    )
}

/// The `weir.sighting` events of `db` in ID order, each with the `uid` of its evidence
/// (none yet: empty); panics on a sighting whose evidence is not in the archive.
pub(crate) fn sightings_with_uids(db: &Path) -> Vec<(String, serde_json::Value)> {
    let export = |expr: &str| run(&["export", "--db", s(db), "--to", "json", expr]);
    let out = export("#type == \"weir.sighting\"");
    if text(&out.stderr).contains("no schema named \"weir.sighting\"") {
        return Vec::new();
    }
    let out = ok(&out, "export sightings");
    let ids = ok(
        &export("#type != \"weir.sighting\" | select #id, uid"),
        "export ids",
    );
    let uid: HashMap<u64, String> = json_lines(&ids)
        .iter()
        .map(|v| {
            (
                v["#id"].as_u64().unwrap(),
                v["uid"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    json_lines(&out)
        .into_iter()
        .map(|v| {
            let id = v["event_id"].as_u64().unwrap();
            let evidence = uid
                .get(&id)
                .unwrap_or_else(|| panic!("sighting without its evidence {id}: {v}"))
                .clone();
            (evidence, v)
        })
        .collect()
}

/// The keys of `got`, each asserted once.
fn once(what: &str, got: Vec<Key>) -> BTreeSet<Key> {
    let mut set = BTreeSet::new();
    for k in got {
        assert!(set.insert(k.clone()), "{what}: a sighting twice: {k:?}");
    }
    set
}

/// An archive directory with set `feed` of `indicators` random indicators, and the logs
/// of `events` random events: (temporary dir, db, logs, reference matches).
fn setup(
    seed: u64,
    events: usize,
    indicators: usize,
) -> (tempfile::TempDir, PathBuf, Vec<PathBuf>, BTreeSet<Key>) {
    let (dir, db, logs, want, _) = setup_with_second_feed(seed, events, indicators);
    (dir, db, logs, want)
}

/// [`setup`], and a second feed (not added): its file and the reference's matches.
fn setup_with_second_feed(seed: u64, events: usize, indicators: usize) -> Setup {
    let mut rng = Rng(seed);
    let (dir, db) = db_dir();
    let (events, logs) = generate(&mut rng, dir.path(), events, now_ns());
    let (csv, live) = feed(&mut rng, indicators);
    let f = write(dir.path(), "feed.csv", &csv);
    ok(&add(&db, "feed", &[], &f), "intel add");
    let want = expected(&events, &live, None);
    assert!(!want.is_empty(), "seed {seed}: the round matches something");
    let (csv2, live2) = feed(&mut rng, indicators);
    let f2 = write(dir.path(), "feed2.csv", &csv2);
    let want2 = expected(&events, &live2, None);
    (dir, db, logs, want, (f2, want2))
}

#[test]
fn live_sightings_equal_the_reference_and_retro_adds_none() {
    for (seed, events, indicators) in [
        (0x9e37_79b9_7f4a_7c15, 500, 30),
        (0x51_7cc1_b727_220a, 300, 10),
    ] {
        let (_dir, db, logs, want) = setup(seed, events, indicators);
        let mut args = vec!["import", "-q", "--db", s(&db), "--batch-size", "37"];
        args.extend(logs.iter().map(|p| s(p)));
        ok(&run(&args), "import");
        let live = once("live", sightings(&db));
        assert_same("live", seed, &live, &want);
        // Retro over the same events: the same matches printed, none recorded again.
        let out = run(&["intel", "match", "--db", s(&db), "--to", "json", "feed"]);
        let printed = ok(&out, "intel match");
        assert_eq!(printed.lines().count(), want.len(), "seed {seed}");
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!(
                "0 new sightings recorded as weir.sighting events, {} recorded before",
                want.len()
            )),
            "seed {seed}: {err}"
        );
        assert_eq!(
            sightings(&db).len(),
            want.len(),
            "seed {seed}: nothing added"
        );
        // Every sighting is live, and leads to its evidence with `weir get`.
        let first = ok(
            &run(&[
                "export",
                "--db",
                s(&db),
                "--to",
                "json",
                "#type == \"weir.sighting\" | head 1",
            ]),
            "export",
        );
        let v = &json_lines(&first)[0];
        assert_eq!(v["mode"], "live");
        assert_eq!(v["matcher"], "intel");
        assert_eq!(v["name"], "feed");
        let got = ok(
            &run(&[
                "get",
                "--db",
                s(&db),
                "--to",
                "json",
                &v["event_id"].to_string(),
            ]),
            "get",
        );
        assert!(got.contains(v["value"].as_str().unwrap()), "{got}");
    }
}

#[test]
fn live_sightings_are_exactly_once_across_sigkill() {
    let kills = kills_from_env("WEIR_LIVE_KILLS", KILLS);
    let mut rng = Rng::from_env("WEIR_LIVE_SEED");
    let seed = rng.0;
    let (dir, whole_db, logs, want, (feed2, want2)) =
        setup_with_second_feed(0x2545_f491_4f6c_dd1d, 10_000, 40);
    let args = |db: &Path| -> Vec<String> {
        let mut a: Vec<String> = [
            "import",
            "-q",
            "--batch-size",
            "300",
            "--batch-timeout",
            "5ms",
            "--max-segment-size",
            "1MiB",
            "--retro",
            "--db",
            s(db),
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        a.extend(logs.iter().map(|p| s(p).to_string()));
        a
    };
    let log = dir.path().join("stderr.txt");
    let t0 = Instant::now();
    assert!(run_until(&args(&whole_db), Duration::from_secs(600), &log).is_some());
    let whole = t0.elapsed();
    assert_same("whole", seed, &once("whole", sightings(&whole_db)), &want);
    // How long a retro match of the second feed takes, whole.
    ok(&add(&whole_db, "feed2", &[], &feed2), "intel add feed2");
    let t0 = Instant::now();
    ok(
        &run(&["intel", "match", "--db", s(&whole_db), "feed2"]),
        "intel match",
    );
    let retro_whole = t0.elapsed();
    assert_same(
        "whole retro",
        seed,
        &once("whole retro", sightings_of(&whole_db, Some("feed2"))),
        &want2,
    );
    let feed_file = whole_db.join("intel/feed.json");
    let mut done = 0u64;
    let mut round = 0;
    while done < kills {
        round += 1;
        let db = dir.path().join(format!("db{round}"));
        std::fs::create_dir_all(db.join("intel")).unwrap();
        std::fs::copy(&feed_file, db.join("intel/feed.json")).unwrap();
        // The second set is added after the first kill that left events: the import's
        // next run matches it live and, in the background (`--retro`), against those events.
        let mut added = false;
        // A run after the second set was added also matches it in the background before it
        // ends: up to a whole import and a whole retro match.
        let run_takes = whole + retro_whole;
        done += kill_until_done(&args(&db), run_takes, &mut rng, &log, |k, ms| {
            if !db.join("catalog.json").exists() && !db.join("wal").exists() {
                return;
            }
            // No sighting twice, each with its evidence, none the reference lacks.
            let what = format!("after kill {} at {ms} ms (seed {seed})", done + k);
            let extra = |got: BTreeSet<Key>, want: &BTreeSet<Key>| {
                let extra: Vec<_> = got.difference(want).take(3).cloned().collect();
                assert!(extra.is_empty(), "{what}: {extra:?}");
            };
            let all = sightings_with_uids(&db);
            extra(once(&what, keys_of(&all, "feed")), &want);
            extra(once(&what, keys_of(&all, "feed2")), &want2);
            if !added && !all.is_empty() {
                ok(&add(&db, "feed2", &[], &feed2), "intel add feed2");
                added = true;
            }
        });
        let what = format!("round {round} (seed {seed})");
        let got = once(&what, sightings_of(&db, Some("feed")));
        assert_same(&format!("round {round}"), seed, &got, &want);
        // An import with --retro ends once its background match is committed.
        let got2 = once(&what, sightings_of(&db, Some("feed2")));
        if added {
            assert_same(&format!("round {round}, feed2"), seed, &got2, &want2);
        } else {
            assert!(got2.is_empty(), "{what}: feed2 before it was added");
        }
        // A retro match of the second set, killed and rerun until it completes: its
        // sightings once each, the live ones untouched.
        if !added {
            ok(&add(&db, "feed2", &[], &feed2), "intel add feed2");
        }
        let retro: Vec<String> = ["intel", "match", "--db", s(&db), "feed2"]
            .iter()
            .map(|x| x.to_string())
            .collect();
        done += kill_until_done(&retro, retro_whole, &mut rng, &log, |k, _| {
            once(
                &format!("retro kill {k} (seed {seed})"),
                sightings_of(&db, Some("feed2")),
            );
        });
        let got2 = once(
            &format!("retro, round {round} (seed {seed})"),
            sightings_of(&db, Some("feed2")),
        );
        assert_same(&format!("retro, round {round}"), seed, &got2, &want2);
        assert_eq!(once("live", sightings_of(&db, Some("feed"))), want);
        let out = run(&["verify", "--db", s(&db)]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    eprintln!("{done} kills in {round} rounds (seed {seed})");
}

/// A conn log of one connection per address in `resp`, at times after `t` (s).
fn conn_log(resp: &[&str], t: u64) -> String {
    let mut log = String::from(
        "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tconn\n\
#fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto\n\
#types\ttime\tstring\taddr\tport\taddr\tport\tenum\n",
    );
    for (i, a) in resp.iter().enumerate() {
        log.push_str(&format!(
            "{}.0\tC{t}x{i}\t10.9.9.9\t1234\t{a}\t80\ttcp\n",
            t + i as u64
        ));
    }
    log
}

#[test]
fn removed_and_expired_indicators_stop_matching_and_sightings_stay() {
    let (dir, db) = db_dir();
    let f = write(
        dir.path(),
        "feed.csv",
        "indicator,type,valid_until\n1.1.1.1,addr,\n2.2.2.2,addr,\n3.3.3.3,addr,2099-01-01T00:00:00Z\n",
    );
    ok(&add(&db, "feed", &[], &f), "intel add");
    let resp = ["1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"];
    let a = write(dir.path(), "a.log", &conn_log(&resp, 1_600_000_000));
    ok(&run(&["import", "-q", "--db", s(&db), s(&a)]), "import a");
    let indicators = |db: &Path| -> Vec<String> {
        let mut v: Vec<String> = sightings(db).into_iter().map(|k| k.2).collect();
        v.sort();
        v
    };
    assert_eq!(indicators(&db), ["1.1.1.1", "2.2.2.2", "3.3.3.3"]);
    // 2.2.2.2 removed, 3.3.3.3 now expired: the next import matches 1.1.1.1 alone.
    ok(
        &run(&[
            "intel",
            "remove",
            "--db",
            s(&db),
            "--set",
            "feed",
            "2.2.2.2",
        ]),
        "remove",
    );
    let g = write(
        dir.path(),
        "expire.csv",
        "indicator,type,valid_until\n3.3.3.3,addr,2020-01-01T00:00:00Z\n",
    );
    ok(&add(&db, "feed", &[], &g), "intel add (expiry)");
    let b = write(dir.path(), "b.log", &conn_log(&resp, 1_700_000_000));
    ok(&run(&["import", "-q", "--db", s(&db), s(&b)]), "import b");
    assert_eq!(
        indicators(&db),
        ["1.1.1.1", "1.1.1.1", "2.2.2.2", "3.3.3.3"],
        "the earlier sightings stay, the new import matches what is left"
    );
    // A whole set removed: nothing more matches.
    ok(
        &run(&["intel", "remove", "--db", s(&db), "--set", "feed"]),
        "remove set",
    );
    let c = write(dir.path(), "c.log", &conn_log(&resp, 1_800_000_000));
    ok(&run(&["import", "-q", "--db", s(&db), s(&c)]), "import c");
    assert_eq!(indicators(&db).len(), 4);
}

#[test]
fn import_with_retro_finishes_the_background_match_of_a_new_set() {
    let seed = 0x6a09_e667_f3bc_c908;
    let (dir, db, logs, want, (feed2, want2)) = setup_with_second_feed(seed, 400, 30);
    let mut args = vec!["import", "-q", "--db", s(&db)];
    args.extend(logs.iter().map(|p| s(p)));
    ok(&run(&args), "import");
    assert_same(
        "live",
        seed,
        &once("live", sightings_of(&db, Some("feed"))),
        &want,
    );
    // A set added afterwards, and an import of no events with --retro: the import matches
    // the new set against everything before it, and ends only when that is committed.
    ok(&add(&db, "feed2", &[], &feed2), "intel add feed2");
    let empty = write(dir.path(), "empty.log", &conn_log(&[], 1_900_000_000));
    let retro = ["import", "-q", "--retro", "--db", s(&db), s(&empty)];
    ok(&run(&retro), "import --retro");
    let all = sightings_with_uids(&db);
    let got = once("background retro", keys_of(&all, "feed2"));
    assert_same("background retro", seed, &got, &want2);
    assert!(
        all.iter()
            .filter(|(_, v)| v["name"] == "feed2")
            .all(|(_, v)| v["mode"] == "retro"),
        "the set's sightings are retro ones"
    );
    assert!(
        db.join("intel/feed2.retro").exists(),
        "the marker is written"
    );
    // Done once: the next import with --retro records nothing again.
    ok(&run(&retro), "import --retro again");
    assert_eq!(sightings(&db).len(), want.len() + want2.len());
}

#[test]
fn a_pipeline_file_matches_the_rules_of_its_archive_sink() {
    let (dir, db) = db_dir();
    let f = write(dir.path(), "ips.txt", "4.4.4.4\n");
    ok(&add(&db, "feed", &["--type", "addr"], &f), "intel add");
    let rule = write(
        dir.path(),
        "r.yml",
        "title: To 3.3.3.3\nid: r-1\nlogsource:\n  product: zeek\n  service: conn\n\
detection:\n  sel:\n    id.resp_h: 3.3.3.3\n  condition: sel\n",
    );
    let log = write(
        dir.path(),
        "a.log",
        &conn_log(&["1.1.1.1", "3.3.3.3", "4.4.4.4"], 1_600_000_000),
    );
    let pipeline = write(
        dir.path(),
        "p.toml",
        &format!(
            "[sources.input]\ntype = \"file\"\npaths = [{:?}]\n\n[sinks.archive]\ntype = \"archive\"\n\
inputs = [\"input\"]\ndb = {:?}\nrules_dir = {:?}\n",
            s(&log),
            s(&db),
            s(&rule)
        ),
    );
    ok(&run(&["run", "-q", s(&pipeline)]), "weir run");
    let out = ok(
        &run(&[
            "export",
            "--db",
            s(&db),
            "--to",
            "csv",
            "#type == \"weir.sighting\" | select matcher, name, indicator",
        ]),
        "export",
    );
    assert!(out.contains("intel,feed,4.4.4.4"), "{out}");
    assert!(out.contains("sigma,r-1,To 3.3.3.3"), "{out}");
    assert_eq!(out.lines().count(), 3, "{out}");
    // A rule weir cannot run stops the pipeline before it starts, naming file and line.
    let bad = write(
        dir.path(),
        "bad.yml",
        "title: t\nlogsource:\n  product: zeek\n  service: conn\ndetection:\n  sel:\n    id.resp_h|nosuch: x\n  condition: sel\n",
    );
    let out = run(&["import", "-q", "--db", s(&db), "--rules", s(&bad), s(&log)]);
    let err = text(&out.stderr);
    assert!(
        !out.status.success() && err.contains(&format!("{}:7", s(&bad))),
        "{err}"
    );
}
