//! Atomic group commits (issue 57): the batcher regroups a window of interleaved Suricata EVE
//! event types into one batch per type, and the archive commits the window's batches together
//! or not at all, in one write-ahead log record.
//!
//! - [`eve_import_resumes_exactly_once_after_sigkill`]: `weir import --from suricata` of an
//!   EVE file whose types interleave, killed with SIGKILL at random moments and rerun until it
//!   completes: after every kill no event is there twice; at the end every event is there
//!   exactly once, in far fewer batches than runs of one type, and `weir verify` is clean.
//! - [`a_group_cut_off_in_the_log_is_dropped_whole`]: a group whose record is cut anywhere (a
//!   torn write) comes back with none of its events and the checkpoints before it; a whole one
//!   with all of them and its checkpoint.
//! - [`a_damaged_group_in_the_middle_is_reported_and_repair_keeps_what_follows`]: a group
//!   damaged in the middle of the log stops the writer, `weir verify` reports it, and
//!   `weir verify --repair` keeps the intact record after it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common;
use common::cli::{export_json, kill_until_done, run, run_until, s, text};
use common::rng::{kills_from_env, Rng};
use weir::unstable::batch::{Batch, BatchBuilder};
use weir::unstable::checkpoint::{FileCheckpoint, FileId, Mark, Position};
use weir::unstable::store::{Store, StoreOptions};
use weir::unstable::types::{Field, Schema, SchemaRef, Type};

/// Kills of the kill loop by default (`WEIR_GROUP_KILLS=N` for more).
const KILLS: u64 = 6;

/// EVE event `n`: `flow_id` `n`, its type from a pattern without period shorter than the file.
fn event(n: u64) -> String {
    let t = format!(
        "2023-09-18T10:{:02}:{:02}.{:06}+0000",
        n / 60_000_000 % 60,
        n / 1_000_000 % 60,
        n % 1_000_000
    );
    let kind = (n * 7 + n / 5 + n / 13) % 4;
    match kind {
        0 => format!(
            r#"{{"timestamp":"{t}","flow_id":{n},"event_type":"alert","src_ip":"10.0.0.{}","src_port":{},"dest_ip":"192.168.1.1","dest_port":80,"proto":"TCP","alert":{{"action":"allowed","gid":1,"signature_id":{},"rev":1,"signature":"test {n}","category":"c","severity":2}}}}"#,
            n % 250,
            1024 + n % 60_000,
            2_000_000 + n % 7
        ),
        1 => format!(
            r#"{{"timestamp":"{t}","flow_id":{n},"event_type":"dns","src_ip":"10.0.0.1","src_port":{},"dest_ip":"10.0.0.53","dest_port":53,"proto":"UDP","dns":{{"type":"query","id":{},"rrname":"h{n}.example.com","rrtype":"A"}}}}"#,
            1024 + n % 60_000,
            n % 65_536
        ),
        2 => format!(
            r#"{{"timestamp":"{t}","flow_id":{n},"event_type":"http","src_ip":"10.0.0.4","src_port":{},"dest_ip":"10.0.0.5","dest_port":80,"proto":"TCP","http":{{"hostname":"h{n}.example.com","url":"/x/{n}","http_method":"GET","status":200,"length":{}}}}}"#,
            1024 + n % 60_000,
            n % 9000
        ),
        _ => format!(
            r#"{{"timestamp":"{t}","flow_id":{n},"event_type":"flow","src_ip":"10.0.0.2","src_port":{},"dest_ip":"10.0.0.3","dest_port":443,"proto":"TCP","flow":{{"pkts_toserver":{n},"pkts_toclient":1,"bytes_toserver":{},"bytes_toclient":60,"age":0,"state":"closed","reason":"timeout","alerted":false}}}}"#,
            1024 + n % 60_000,
            n * 100
        ),
    }
}

/// The `flow_id`s in the archive, each with how many times it is there.
fn flow_ids(db: &Path) -> BTreeMap<u64, usize> {
    let mut out = BTreeMap::new();
    for e in export_json(db) {
        let id = e["flow_id"].as_u64().expect("flow_id");
        *out.entry(id).or_default() += 1;
    }
    out
}

/// Batches in the archive's sealed segments (the catalog's count).
fn batches(db: &Path) -> u64 {
    let catalog: serde_json::Value =
        serde_json::from_slice(&std::fs::read(db.join("catalog.json")).unwrap()).unwrap();
    catalog["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .map(|s| s["batches"].as_u64().expect("batches"))
        .sum()
}

#[test]
fn eve_import_resumes_exactly_once_after_sigkill() {
    let kills = kills_from_env("WEIR_GROUP_KILLS", KILLS);
    let mut rng = Rng::from_env("WEIR_GROUP_SEED");
    let seed = rng.0;
    let tmp = tempfile::tempdir().unwrap();
    let n = 40_000u64;
    let eve = tmp.path().join("eve.json");
    let mut text_all = String::new();
    let mut runs = 0u64;
    let mut last_kind = None;
    for i in 0..n {
        let e = event(i);
        let kind = e
            .split("\"event_type\":\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string();
        if last_kind.as_ref() != Some(&kind) {
            runs += 1;
            last_kind = Some(kind);
        }
        text_all.push_str(&e);
        text_all.push('\n');
    }
    std::fs::write(&eve, &text_all).unwrap();
    let args = |db: &Path| -> Vec<String> {
        [
            "import",
            "-q",
            "--from",
            "suricata",
            "--batch-size",
            "400",
            "--batch-timeout",
            "5ms",
            "--max-segment-size",
            "1MiB",
            "--db",
            s(db),
            s(&eve),
        ]
        .iter()
        .map(|x| x.to_string())
        .collect()
    };
    let log = tmp.path().join("stderr.txt");
    let t0 = Instant::now();
    let whole_db = tmp.path().join("whole.db");
    assert!(run_until(&args(&whole_db), Duration::from_secs(600), &log).is_some());
    let whole = t0.elapsed();
    let ids = flow_ids(&whole_db);
    assert_eq!(ids.len() as u64, n);
    assert!(ids.values().all(|&c| c == 1));
    // Regrouped: a batch per type per window of 400 events, not one per run of a type.
    let b = batches(&whole_db);
    assert!(
        b * 10 < runs,
        "{b} batches for {runs} runs of one event type: not regrouped"
    );
    let mut done = 0u64;
    let mut round = 0;
    while done < kills {
        round += 1;
        let db = tmp.path().join(format!("db{round}"));
        done += kill_until_done(&args(&db), whole, &mut rng, &log, |k, ms| {
            if !db.join("catalog.json").exists() && !db.join("wal").exists() {
                return;
            }
            let got = flow_ids(&db);
            let twice: Vec<_> = got.iter().filter(|(_, c)| **c > 1).take(5).collect();
            assert!(
                twice.is_empty(),
                "after kill {} at {ms} ms (seed {seed}): events twice: {twice:?}",
                done + k
            );
        });
        let got = flow_ids(&db);
        let missing: Vec<u64> = (0..n).filter(|k| !got.contains_key(k)).take(5).collect();
        assert!(
            missing.is_empty(),
            "round {round} (seed {seed}): missing {missing:?}"
        );
        assert!(
            got.values().all(|&c| c == 1),
            "round {round} (seed {seed}): an event twice"
        );
        let out = run(&["verify", "--db", s(&db)]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    eprintln!("{done} kills in {round} rounds (seed {seed})");
}

/// Segments of 1 MiB: the active segment's file is that large (sparse), and tests copy it.
fn small() -> StoreOptions {
    StoreOptions {
        max_segment_size: 1 << 20,
        ..StoreOptions::default()
    }
}

fn schema(name: &str) -> SchemaRef {
    Schema::new(
        name,
        vec![Field::new("ts", Type::Time), Field::new("n", Type::Count)],
    )
    .into_shared()
}

fn rows(s: &SchemaRef, ns: &[u64]) -> Batch {
    let mut b = BatchBuilder::new(s.clone());
    for &n in ns {
        let mut e = b.begin_row();
        e.int(n as i64);
        e.uint(n);
        b.finish_row(Some(n as i64));
    }
    b.finish()
}

fn position(offset: u64) -> FileCheckpoint {
    FileCheckpoint {
        id: FileId {
            dev: 1,
            ino: 2,
            fp_len: 10,
            fp_crc: 3,
        },
        path: "/var/log/suricata/eve.json".into(),
        pos: Position { offset, skip: 0 },
        done: false,
        raw: 0,
        header: String::new(),
        sum: None,
    }
}

fn marked(mut b: Batch, offset: u64) -> Batch {
    let n = b.len();
    b.set_marks(vec![Mark {
        row_start: n,
        row_end: n,
        start: None,
        end: position(offset),
    }]);
    b
}

/// An archive with events 0..2 (checkpoint at 100) and a group of events 2..9 in three batches
/// (checkpoint at 900 on its last), not closed (as after a crash). Returns the WAL's length
/// before the group.
fn archive_with_group(db: &Path) -> u64 {
    let (flow, dns) = (schema("suricata.flow"), schema("suricata.dns"));
    let (mut store, _) = Store::open_writer(db, small()).unwrap();
    store.append(marked(rows(&flow, &[0, 1]), 100)).unwrap();
    let before = std::fs::metadata(db.join("wal")).unwrap().len();
    let ids = store
        .append_group(vec![
            (rows(&flow, &[2, 4, 5]), None),
            (rows(&dns, &[3, 6, 8]), None),
            (marked(rows(&flow, &[7]), 900), None),
        ])
        .unwrap();
    assert_eq!(ids, 2..9);
    drop(store);
    before
}

#[test]
fn a_group_cut_off_in_the_log_is_dropped_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let before = archive_with_group(&db);
    let wal = db.join("wal");
    let full = std::fs::read(&wal).unwrap();
    assert_eq!(&full[..8], b"WEIRWAL4");
    // Whole: every event and the group's checkpoint.
    let copy = tmp.path().join("whole");
    copy_dir(&db, &copy);
    let (store, report) = Store::open_writer(&copy, small()).unwrap();
    assert_eq!(report.next_id, 9);
    assert_eq!(report.checkpoints[0].pos.offset, 900);
    store.close().unwrap();
    // Cut anywhere in the group's record: none of its events, the checkpoint before it.
    for cut in [
        before + 5,
        before + 60,
        (before + full.len() as u64) / 2,
        full.len() as u64 - 1,
    ] {
        let copy = tmp.path().join(format!("cut{cut}"));
        copy_dir(&db, &copy);
        std::fs::write(copy.join("wal"), &full[..cut as usize]).unwrap();
        let (store, report) = Store::open_writer(&copy, small()).unwrap();
        assert_eq!(report.next_id, 2, "cut at {cut}");
        assert_eq!(report.checkpoints[0].pos.offset, 100, "cut at {cut}");
        assert!(
            report
                .warnings
                .iter()
                .any(|w| w.contains("torn last record")),
            "{:?}",
            report.warnings
        );
        let summary = store.close().unwrap();
        assert_eq!(summary.next_id, 2);
    }
}

#[test]
fn a_damaged_group_in_the_middle_is_reported_and_repair_keeps_what_follows() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let before = archive_with_group(&db);
    // A record after the group.
    let (mut store, _) = Store::open_writer(&db, small()).unwrap();
    store
        .append(marked(rows(&schema("suricata.flow"), &[9]), 1000))
        .unwrap();
    drop(store);
    let wal = db.join("wal");
    let mut bytes = std::fs::read(&wal).unwrap();
    // A bit flipped in the group's record (in its second batch's header).
    bytes[before as usize + 8 + 17 + 60] ^= 0x40;
    std::fs::write(&wal, &bytes).unwrap();
    let err = Store::open_writer(&db, small()).unwrap_err();
    assert!(
        err.to_string().contains(&format!("offset {before}")),
        "{err}"
    );
    let out = run(&["verify", "--db", s(&db)]);
    assert!(!out.status.success());
    assert!(text(&out.stdout).contains("wal") || text(&out.stderr).contains("wal"));
    let out = run(&["verify", "--repair", "--db", s(&db)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got = flow_or_n(&db);
    // The events before and after the damaged group; none of it.
    assert_eq!(got, vec![0, 1, 9]);
}

/// The `n` of every event, in ID order.
fn flow_or_n(db: &Path) -> Vec<u64> {
    export_json(db)
        .iter()
        .map(|e| e["n"].as_u64().expect("n"))
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// An archive whose write-ahead log is of version 3 (one record per run of one EVE event
/// type, each with its file's checkpoint), by weir at 1dd5999 (`weir import --follow --from
/// suricata --batch-timeout 10ms --max-segment-size 64KiB`, killed with `kill -9` once the
/// file's 30 events were in; `tests/fixtures/follow-eve-v3`): it reads as it is, and a follow
/// of the same file, now in another directory, replays the log, upgrades it to version 4 and
/// imports only the lines appended since, each once.
#[test]
fn a_log_of_version_3_reads_and_a_follow_appends_to_it() {
    use common::follow::{append, check_verify, follow, stop, wait_count};
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    common::store::copy_dir(&common::fixture("follow-eve-v3/db"), &db);
    assert_eq!(&std::fs::read(db.join("wal")).unwrap()[..8], b"WEIRWAL3");
    let ids = flow_ids(&db);
    assert_eq!(
        ids.keys().copied().collect::<Vec<u64>>(),
        (0..30).collect::<Vec<u64>>()
    );
    assert!(ids.values().all(|&c| c == 1));
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let eve = logs.join("eve.json");
    std::fs::copy(common::fixture("follow-eve-v3/eve.json"), &eve).unwrap();
    let mut more = String::new();
    for n in 30..90 {
        more.push_str(&event(n));
        more.push('\n');
    }
    append(&eve, &more);
    let pattern = format!("{}/eve.json", s(&logs));
    let child = follow(
        &db,
        &[&pattern],
        &["--from", "suricata", "--batch-timeout", "10ms"],
    );
    wait_count(&db, 90);
    // The writer is appending to the log it replayed: of version 4 now.
    assert_eq!(&std::fs::read(db.join("wal")).unwrap()[..8], b"WEIRWAL4");
    stop(child);
    let ids = flow_ids(&db);
    assert_eq!(
        ids.keys().copied().collect::<Vec<u64>>(),
        (0..90).collect::<Vec<u64>>()
    );
    assert!(ids.values().all(|&c| c == 1));
    check_verify(&db);
}

/// A group larger than a whole segment is appended batch by batch (see
/// `Store::append_group`): every event is there once, in order, over several segments, and
/// the group's checkpoint with them.
#[test]
fn a_group_larger_than_a_segment_is_appended_batch_by_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let opts = StoreOptions {
        max_segment_size: 4096,
        ..StoreOptions::default()
    };
    let (flow, dns) = (schema("suricata.flow"), schema("suricata.dns"));
    let (mut store, _) = Store::open_writer(&db, opts).unwrap();
    let a: Vec<u64> = (0..400).collect();
    let b: Vec<u64> = (400..800).collect();
    let c: Vec<u64> = (800..1200).collect();
    let ids = store
        .append_group(vec![
            (rows(&flow, &a), None),
            (rows(&dns, &b), None),
            (marked(rows(&flow, &c), 5000), None),
        ])
        .unwrap();
    assert_eq!(ids, 0..1200);
    assert_eq!(store.checkpoints()[0].pos.offset, 5000);
    let summary = store.close().unwrap();
    assert!(summary.segments > 1, "{summary:?}");
    assert_eq!(flow_or_n(&db), (0..1200).collect::<Vec<u64>>());
}
