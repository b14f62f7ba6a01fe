//! Community IDs computed at import (`zeek.conn` events without one get `community_id`),
//! checked against the reference implementation, Python's `communityid`
//! (`tests/engines/community_ids.py` over the same logs, read by `zeekref.py`), on every conn
//! event of the corpus: IPv6 and ICMP (v4 and v6) included.
//!
//! Needs the Zeek corpus and python3 with `communityid` (`.ci/run` installs it): without them
//! a test prints a note and skips, except under `CI=true`, where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::cli::{ok, run, run_with_stdin, s};
use serde_json::Value;

/// Whether python3 can import `communityid` and the reference reader `zeekref.py` is there;
/// `false` after a note outside CI.
///
/// # Panics
/// When it is missing and `CI=true`.
fn reference_present() -> bool {
    let ok = common::root().join("../shared/tools/zeekref.py").is_file()
        && Command::new("python3")
            .args(["-c", "import communityid"])
            .output()
            .is_ok_and(|o| o.status.success());
    if !ok {
        let note = "python3 with communityid (pip install communityid) or \
                    ../shared/tools/zeekref.py not found";
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but {note}: .ci/run installs it");
        }
        eprintln!("note: {note}: skipping this test");
    }
    ok
}

/// The reference's conn events of `files`, in order: uid, community ID, IPv6, proto.
fn reference(files: &[PathBuf], seed: u16) -> Vec<Value> {
    // Where `common::zeekref` finds the reference reader.
    let tools = common::root().join("../shared/tools");
    let out = Command::new("python3")
        .arg(common::root().join("tests/engines/community_ids.py"))
        .arg(&tools)
        .arg(seed.to_string())
        .args(files)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "community_ids.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `zeek.conn` events of the archive, in ID order.
fn conn_events(db: &Path) -> Vec<Value> {
    let out = run(&[
        "export",
        "--db",
        s(db),
        "--to",
        "json",
        "#type == \"zeek.conn\"",
    ]);
    ok(&out, "weir export")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Imports `files` into a new archive in `dir` with `flags`.
fn import(dir: &Path, flags: &[&str], files: &[PathBuf]) -> PathBuf {
    let db = dir.join("db");
    let mut args = vec!["import", "--db", s(&db)];
    args.extend_from_slice(flags);
    args.extend(files.iter().map(|f| s(f)));
    ok(&run(&args), "weir import");
    db
}

/// The corpus logs that hold conn events: TSV (gzip and plain) and JSON.
fn conn_logs(dir: &Path) -> Vec<PathBuf> {
    ["conn.log.gz", "unit/small_conn.log", "zeek.json"]
        .iter()
        .map(|f| dir.join(f))
        .collect()
}

/// Asserts that the archive's conn events carry exactly the reference's IDs, in order.
fn assert_equal_to_reference(got: &[Value], want: &[Value]) {
    assert_eq!(got.len(), want.len(), "conn events: weir vs reference");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g["uid"], w["uid"], "event {i}");
        assert_eq!(
            g.get("community_id").unwrap_or(&Value::Null),
            &w["community_id"],
            "event {i}: {g}"
        );
    }
}

#[test]
fn every_corpus_conn_event_has_the_reference_community_id() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    if !reference_present() {
        return;
    }
    let files = conn_logs(&dir);
    let want = reference(&files, 0);
    // The corpus covers what the spec treats apart: IPv6, ICMP over v4 and v6, UDP, TCP.
    let count = |f: &dyn Fn(&Value) -> bool| want.iter().filter(|w| f(w)).count();
    assert!(count(&|w| w["v6"] == true) >= 160);
    assert!(count(&|w| w["proto"] == "icmp" && w["v6"] == true) >= 10);
    assert!(count(&|w| w["proto"] == "icmp" && w["v6"] == false) >= 1);
    assert!(count(&|w| w["community_id"].is_string()) >= 8000);
    let tmp = tempfile::tempdir().unwrap();
    let db = import(tmp.path(), &[], &files);
    let got = conn_events(&db);
    assert_equal_to_reference(&got, &want);
    // `weir info` counts them.
    let info = common::cli::info(&db);
    assert_eq!(
        info["community_id"]["zeek.conn"],
        want.len() as u64,
        "{info}"
    );
    let text = ok(&run(&["info", "--db", s(&db)]), "weir info");
    assert!(
        text.contains(&format!(
            "  zeek.conn: {} of {} events",
            want.len(),
            want.len()
        )),
        "{text}"
    );
}

#[test]
fn a_seed_changes_the_ids_and_off_stores_conn_as_read() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    if !reference_present() {
        return;
    }
    let files = vec![dir.join("unit/small_conn.log")];
    let tmp = tempfile::tempdir().unwrap();
    let seeded = import(&tmp.path().join("seeded"), &["--community-id", "7"], &files);
    let want = reference(&files, 7);
    assert_equal_to_reference(&conn_events(&seeded), &want);
    assert_ne!(want, reference(&files, 0));

    let off = import(&tmp.path().join("off"), &["--community-id", "off"], &files);
    let events = conn_events(&off);
    assert_eq!(events.len(), want.len());
    assert!(events.iter().all(|e| e.get("community_id").is_none()));
    assert!(common::cli::info(&off)["community_id"]
        .as_object()
        .unwrap()
        .is_empty());

    let bad = run(&[
        "import",
        "--db",
        s(&tmp.path().join("bad")),
        "--community-id",
        "65536",
    ]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("65536"));
}

#[test]
fn stdin_and_pipeline_sources_compute_them_too() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    if !reference_present() {
        return;
    }
    let small = dir.join("unit/small_conn.log");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("stdin");
    let out = run_with_stdin(
        &["import", "--db", s(&db), "-"],
        &std::fs::read(&small).unwrap(),
    );
    ok(&out, "weir import from stdin");
    let files = vec![small.clone()];
    assert_equal_to_reference(&conn_events(&db), &reference(&files, 0));

    // A pipeline file's `community_id`, and `weir run --community-id` over it.
    let run_db = tmp.path().join("run");
    let pipeline = tmp.path().join("p.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[sources.in]\ntype = \"file\"\npaths = [{:?}]\ncommunity_id = 3\n\n\
             [sinks.out]\ntype = \"archive\"\ninputs = [\"in\"]\ndb = {:?}\n",
            s(&small),
            s(&run_db)
        ),
    )
    .unwrap();
    ok(&run(&["run", "-q", s(&pipeline)]), "weir run");
    assert_equal_to_reference(&conn_events(&run_db), &reference(&files, 3));
    let flag_db = tmp.path().join("flag");
    let text = std::fs::read_to_string(&pipeline)
        .unwrap()
        .replace(s(&run_db), s(&flag_db));
    std::fs::write(&pipeline, text).unwrap();
    ok(
        &run(&["run", "-q", "--community-id", "off", s(&pipeline)]),
        "weir run --community-id off",
    );
    assert!(conn_events(&flag_db)
        .iter()
        .all(|e| e.get("community_id").is_none()));
}

#[test]
fn a_conn_log_with_its_own_community_id_keeps_it() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("conn.log");
    let mut text = String::from(
        "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n\
         #path\tconn\n#fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto\tcommunity_id\n\
         #types\ttime\tstring\taddr\tport\taddr\tport\tenum\tstring\n",
    );
    text.push_str("1.0\tC1\t10.0.0.1\t1234\t10.0.0.2\t80\ttcp\t1:theirs=\n");
    text.push_str("2.0\tC2\t10.0.0.1\t1235\t10.0.0.2\t80\ttcp\t-\n");
    std::fs::write(&log, text).unwrap();
    let db = import(tmp.path(), &[], &[log]);
    let events = conn_events(&db);
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["community_id"], "1:theirs=");
    // Unset in the log stays unset: the log's column is the log's.
    assert!(events[1].get("community_id").is_none_or(Value::is_null));
    // A conn log without the column, beside it, gets computed ones: equal to the spec's
    // for the same tuple (the baseline's TCP flow), in both directions.
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let log = other.join("conn.log");
    let mut text = String::from(
        "#separator \\x09\n#path\tconn\n\
         #fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto\n\
         #types\ttime\tstring\taddr\tport\taddr\tport\tenum\n",
    );
    text.push_str("1.0\tC1\t128.232.110.120\t34855\t66.35.250.204\t80\ttcp\n");
    text.push_str("2.0\tC2\t66.35.250.204\t80\t128.232.110.120\t34855\ttcp\n");
    text.push_str("3.0\tC3\t10.0.0.1\t-\t10.0.0.2\t80\ttcp\n");
    text.push_str("4.0\tC4\t10.0.0.1\t0\t10.0.0.2\t0\tunknown_transport\n");
    std::fs::write(&log, text).unwrap();
    let db = import(&other, &[], &[log]);
    let events = conn_events(&db);
    assert_eq!(events[0]["community_id"], "1:LQU9qZlK+B5F3KDmev6m5PMibrg=");
    assert_eq!(events[1]["community_id"], "1:LQU9qZlK+B5F3KDmev6m5PMibrg=");
    for e in &events[2..] {
        assert!(e.get("community_id").is_none_or(Value::is_null), "{e}");
    }
    // Searchable like any field.
    let n = ok(
        &run(&[
            "count",
            "--db",
            s(&db),
            "community_id == \"1:LQU9qZlK+B5F3KDmev6m5PMibrg=\"",
        ]),
        "weir count",
    );
    assert_eq!(n.trim(), "2");
}

/// A Zeek TSV log of `path` with `fields` (name, type) and `rows` (tab-separated).
fn zeek_log(path: &Path, log: &str, fields: &[(&str, &str)], rows: &[&str]) {
    let names: Vec<&str> = fields.iter().map(|f| f.0).collect();
    let types: Vec<&str> = fields.iter().map(|f| f.1).collect();
    let mut text = format!(
        "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\t{log}\n\
         #fields\t{}\n#types\t{}\n",
        names.join("\t"),
        types.join("\t")
    );
    for r in rows {
        text.push_str(r);
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

/// The uids (Zeek) or signature IDs (Suricata alerts) of what `weir pivot TARGET EXPR`
/// prints, in order.
fn pivot(db: &Path, target: &str, expr: &str) -> Vec<String> {
    let out = run(&["pivot", "--db", s(db), "--to", "json", target, expr]);
    ok(&out, &format!("weir pivot {target} {expr}"))
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            match v.get("uid") {
                Some(u) => u.as_str().unwrap().to_string(),
                None => format!("sid {}", v["alert"]["signature_id"]),
            }
        })
        .collect()
}

/// A sensor's two sources of one capture: Zeek's conn (without community IDs: weir computes
/// them), http and dns logs, and Suricata's alerts with the community IDs Suricata writes
/// (the spec's baseline flows). A pivot from an alert reaches its flow's conn by community ID,
/// and its http or dns events through that conn's uid (two hops); back from conn to the
/// alerts by community ID; between Zeek logs by uid.
#[test]
fn pivot_from_suricata_alerts_reaches_zeek_conn_http_and_dns() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let conn = [
        ("ts", "time"),
        ("uid", "string"),
        ("id.orig_h", "addr"),
        ("id.orig_p", "port"),
        ("id.resp_h", "addr"),
        ("id.resp_p", "port"),
        ("proto", "enum"),
    ];
    zeek_log(
        &d.join("conn.log"),
        "conn",
        &conn,
        &[
            "1258531221.0\tCtcp\t128.232.110.120\t34855\t66.35.250.204\t80\ttcp",
            // The answer's direction: the same flow, the same community ID.
            "1258531222.0\tCudp\t8.8.8.8\t53\t192.168.1.52\t54585\tudp",
            "1258531223.0\tCother\t10.0.0.1\t1234\t10.0.0.2\t80\ttcp",
        ],
    );
    let http = [
        ("ts", "time"),
        ("uid", "string"),
        ("method", "string"),
        ("host", "string"),
    ];
    zeek_log(
        &d.join("http.log"),
        "http",
        &http,
        &[
            "1258531221.1\tCtcp\tGET\tspec.example",
            "1258531223.1\tCother\tGET\tother.example",
            "1258531221.2\tCtcp\tPOST\tspec.example",
        ],
    );
    let dns = [("ts", "time"), ("uid", "string"), ("query", "string")];
    zeek_log(
        &d.join("dns.log"),
        "dns",
        &dns,
        &[
            "1258531222.1\tCudp\tspec.example",
            "1258531223.2\tCother\tother.example",
        ],
    );
    let alert = |sid: u32, src: &str, sport: u16, dst: &str, dport: u16, proto: &str, cid: &str| {
        format!(
            "{{\"timestamp\":\"2009-11-18T08:00:2{sid}.000000+0000\",\"flow_id\":{sid},\
             \"event_type\":\"alert\",\"src_ip\":\"{src}\",\"src_port\":{sport},\
             \"dest_ip\":\"{dst}\",\"dest_port\":{dport},\"proto\":\"{proto}\",\
             \"community_id\":\"{cid}\",\"alert\":{{\"action\":\"allowed\",\"gid\":1,\
             \"signature_id\":{sid},\"rev\":1,\"signature\":\"test {sid}\",\"severity\":2}}}}\n"
        )
    };
    let eve = [
        alert(
            1,
            "66.35.250.204",
            80,
            "128.232.110.120",
            34855,
            "TCP",
            "1:LQU9qZlK+B5F3KDmev6m5PMibrg=",
        ),
        alert(
            2,
            "192.168.1.52",
            54585,
            "8.8.8.8",
            53,
            "UDP",
            "1:d/FP5EW3wiY1vCndhwleRRKHowQ=",
        ),
        // A flow Zeek did not log.
        alert(3, "10.9.9.9", 1, "10.9.9.8", 2, "TCP", "1:notinzeek="),
    ]
    .concat();
    std::fs::write(d.join("eve.json"), eve).unwrap();
    let files: Vec<PathBuf> = ["conn.log", "http.log", "dns.log", "eve.json"]
        .iter()
        .map(|f| d.join(f))
        .collect();
    let db = import(d, &[], &files);

    let alerts = "#type == \"suricata.alert\"";
    assert_eq!(pivot(&db, "zeek.conn", alerts), ["Ctcp", "Cudp"]);
    let sid = |n: u32| format!("{alerts} && alert.signature_id == {n}");
    assert_eq!(pivot(&db, "zeek.conn", &sid(2)), ["Cudp"]);
    // Two hops: alert -> conn (community ID) -> http, dns (uid).
    assert_eq!(pivot(&db, "zeek.http", &sid(1)), ["Ctcp", "Ctcp"]);
    assert_eq!(pivot(&db, "zeek.dns", &sid(2)), ["Cudp"]);
    assert_eq!(pivot(&db, "zeek.dns", &sid(1)), Vec::<String>::new());
    assert_eq!(pivot(&db, "zeek.http", &sid(3)), Vec::<String>::new());
    // Back: conn -> alert by community ID; http -> alert has no community ID to go by.
    assert_eq!(
        pivot(&db, "suricata.alert", "zeek.conn.uid == \"Cudp\""),
        ["sid 2"]
    );
    assert_eq!(
        pivot(&db, "suricata.alert", "#type == \"zeek.conn\""),
        ["sid 1", "sid 2"]
    );
    // Between Zeek logs, by uid (VAST's rule), community IDs notwithstanding.
    assert_eq!(
        pivot(&db, "zeek.http", "zeek.conn.uid == \"Cother\""),
        ["Cother"]
    );
    assert_eq!(
        pivot(&db, "zeek.conn", "zeek.dns.query == \"spec.example\""),
        ["Cudp"]
    );
}
