//! The generator's sensor data (`examples/generate --sensor DIR`, issue 57): Zeek logs and
//! the EVE file of the same flows, imported together, join as a sensor's do:
//!
//! - every EVE event is read in its shipped schema (no type typed by inference);
//! - the Community ID weir computes for `zeek.conn` equals Suricata's for the same flow (by
//!   the 5-tuple), and the one `conn_cid.log` carries;
//! - a concept query counts both sources; a pivot from the alerts reaches the Zeek
//!   connections and HTTP requests of their flows.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::collections::HashMap;

use serde_json::Value;

use crate::common;
use common::cli::{ok, run, s};

/// Flows generated.
const FLOWS: u64 = 2_000;

/// The example binary `cargo test` builds beside the tests' `weir`.
fn export(db: &str, expr: &str) -> Vec<Value> {
    ok(&run(&["export", "--db", db, "--to", "json", expr]), expr)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn count(db: &str, expr: &str) -> u64 {
    ok(&run(&["count", "--db", db, expr]), expr)
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn zeek_and_suricata_of_the_same_flows_join() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sensor");
    if common::generate_sensor(&dir, FLOWS).is_none() {
        return;
    }
    let db = tmp.path().join("db");
    let mut args = vec![
        "import".to_string(),
        "--db".into(),
        s(&db).into(),
        "-v".into(),
    ];
    for f in ["conn.log", "dns.log", "http.log", "ssl.log", "eve.json"] {
        args.push(s(&dir.join(f)).into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let imported = run(&args);
    let err = common::cli::text(&imported.stderr);
    assert!(imported.status.success(), "{err}");
    assert!(
        !err.contains("without a schema"),
        "every EVE type has one: {err}"
    );
    let db = s(&db);

    // Every flow once in each source's flow record.
    assert_eq!(count(db, "#type == \"zeek.conn\""), FLOWS);
    assert_eq!(count(db, "#type == \"suricata.flow\""), FLOWS);
    assert_eq!(count(db, "#type == \"suricata.alert\""), FLOWS.div_ceil(10));
    assert_eq!(count(db, "#type == \"suricata.stats\""), FLOWS / 1000);

    // weir's Community ID of each Zeek connection is Suricata's of the same flow.
    let key = |e: &Value, src: &str, sp: &str, dst: &str, dp: &str| {
        format!("{}|{}|{}|{}", e[src], e[sp], e[dst], e[dp])
    };
    let suricata: HashMap<String, String> = export(db, "#type == \"suricata.flow\"")
        .iter()
        .map(|e| {
            (
                key(e, "src_ip", "src_port", "dest_ip", "dest_port"),
                e["community_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let conn = export(db, "#type == \"zeek.conn\"");
    for e in &conn {
        let k = key(e, "id.orig_h", "id.orig_p", "id.resp_h", "id.resp_p");
        assert_eq!(
            e["community_id"].as_str(),
            suricata.get(&k).map(String::as_str),
            "{e}"
        );
    }
    // And the column of conn_cid.log (the community-id package's) is the same.
    let with = tmp.path().join("db-cid");
    ok(
        &run(&[
            "import",
            "-q",
            "--db",
            s(&with),
            s(&dir.join("conn_cid.log")),
        ]),
        "import conn_cid.log",
    );
    let own = export(s(&with), "#type == \"zeek.conn\"");
    assert_eq!(own.len() as u64, FLOWS / 10);
    for (a, b) in own.iter().zip(&conn) {
        assert_eq!(a["community_id"], b["community_id"], "{a}");
    }

    // One question of both sources: the concept counts each source's own field.
    let host = conn[0]["id.orig_h"].as_str().unwrap();
    let both = count(db, &format!("net.src.ip == {host}"));
    let zeek = count(db, &format!("id.orig_h == {host}"));
    let eve = count(db, &format!("src_ip == {host}"));
    assert_eq!(both, zeek + eve);
    assert!(zeek > 0 && eve > 0);

    // From the alerts to the Zeek connections of their flows, and to their HTTP requests.
    let alerts = export(db, "#type == \"suricata.alert\"");
    let pivot = |target: &str| {
        let out = run(&[
            "pivot",
            "--db",
            db,
            "--to",
            "json",
            target,
            "#type == \"suricata.alert\"",
        ]);
        ok(&out, target)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .collect::<Vec<_>>()
    };
    let conns = pivot("zeek.conn");
    assert_eq!(conns.len(), alerts.len());
    let http_alerts = alerts.iter().filter(|a| a["app_proto"] == "http").count();
    let https = pivot("zeek.http");
    assert_eq!(https.len(), http_alerts);
    assert!(http_alerts > 0);
}
