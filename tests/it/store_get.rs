//! `weir get` and `Archive::get_many`: many IDs fetched in one pass over the batches that hold
//! them, answered in the order given (repeats repeated, missing IDs named).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use common::cli::{ok, run_with_stdin, text};
use common::conn_log;
use common::rng::Rng;

const EVENTS: u64 = 12_000;

/// An archive of `EVENTS` conn events in batches of 100 (several segments), zstd and
/// uncompressed batches alike.
fn archive(dir: &std::path::Path, compression: &str) -> String {
    let db = dir.join(format!("db-{compression}")).display().to_string();
    let out = run_with_stdin(
        &[
            "import",
            "--db",
            &db,
            "--batch-size",
            "100",
            "--max-segment-size",
            "256KiB",
            "--compression",
            compression,
            "-q",
            "-",
        ],
        conn_log::log(0..EVENTS).as_bytes(),
    );
    ok(&out, "import");
    db
}

#[test]
fn get_answers_many_ids_in_the_order_given() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng::from_env("WEIR_GET_SEED");
    for compression in ["zstd", "none"] {
        let db = archive(tmp.path(), compression);
        // Random IDs in random order, a few repeated, across every batch and segment.
        let mut ids: Vec<u64> = (0..3_000).map(|_| rng.below(EVENTS)).collect();
        ids.extend_from_slice(&[ids[0], ids[1], EVENTS - 1, 0]);
        let args: Vec<String> = ids.iter().map(u64::to_string).collect();
        let mut argv = vec!["get", "--db", &db, "--to", "json"];
        argv.extend(args.iter().map(String::as_str));
        let out = ok(&common::cli::run(&argv), "get");
        let got: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(got.len(), ids.len(), "{compression}");
        for (id, event) in ids.iter().zip(&got) {
            conn_log::check_event(*id, event);
        }
        // Missing IDs: the others printed in order, then an error naming only the missing.
        let missing = [EVENTS.to_string(), (EVENTS + 7).to_string()];
        let out = common::cli::run(&[
            "get",
            "--db",
            &db,
            "--to",
            "json",
            "5",
            &missing[0],
            "3",
            &missing[1],
        ]);
        assert_eq!(out.status.code(), Some(1), "{compression}");
        let events: Vec<serde_json::Value> = text(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(conn_log::numbers(&events), [5, 3]);
        assert!(
            text(&out.stderr).contains(&format!("no event with ID {}, {}", missing[0], missing[1])),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn get_many_equals_get_one_by_one() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), "zstd");
    let archive = weir::unstable::store::Archive::open(&db).unwrap();
    let mut rng = Rng::from_env("WEIR_GET_SEED");
    let mut ids: Vec<u64> = (0..500).map(|_| rng.below(EVENTS + 50)).collect();
    ids.push(ids[3]);
    let many = archive.get_many(&ids).unwrap();
    assert_eq!(many.len(), ids.len());
    for (id, found) in ids.iter().zip(many) {
        let one = archive.get(*id).unwrap();
        match (found, one) {
            (None, None) => assert!(*id >= EVENTS),
            (Some((schema, row)), Some(b)) => {
                assert_eq!(&schema.name, &b.schema().name);
                assert_eq!(row.as_slice(), b.rows().next().unwrap(), "ID {id}");
            }
            (a, b) => panic!("ID {id}: get_many {:?}, get {:?}", a.is_some(), b.is_some()),
        }
    }
}
