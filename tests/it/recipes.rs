//! The analyst recipes of the user guide's "Investigating" page
//! (`docs/book/src/searching/investigating.md`), each run on the shared corpus
//! and checked against an independent computation over `weir export --to json` (plain Rust
//! over the JSON events). Each recipe's text must appear verbatim on that page, so that the
//! documentation cannot drift from what is tested.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::OnceLock;

use common::cli::{ok, run, s};
use serde_json::Value as J;

/// The corpus archive (conn, dns, http, snmp) and its events as JSON, built once.
fn corpus() -> Option<&'static (tempfile::TempDir, Vec<J>)> {
    static CORPUS: OnceLock<Option<(tempfile::TempDir, Vec<J>)>> = OnceLock::new();
    CORPUS
        .get_or_init(|| {
            let dir = common::corpus::dir()?;
            let tmp = tempfile::tempdir().unwrap();
            let db = tmp.path().join("db");
            let mut args = vec!["import".to_string(), "-q".into(), "--db".into()];
            args.push(s(&db).to_string());
            for f in ["conn.log.gz", "dns.log.gz", "http.log.gz", "snmp.log.gz"] {
                args.push(s(&dir.join(f)).to_string());
            }
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            ok(&run(&a), "import");
            let events = common::cli::export_json(&db);
            Some((tmp, events))
        })
        .as_ref()
}

fn db(c: &(tempfile::TempDir, Vec<J>)) -> std::path::PathBuf {
    c.0.path().join("db")
}

/// The guide's page of the recipes.
const PAGE: &str = "docs/book/src/searching/investigating.md";

/// Runs a recipe (checking that the guide's Investigating page shows it) and parses its JSON
/// lines.
fn recipe(db: &Path, text: &str) -> Vec<J> {
    let page = std::fs::read_to_string(common::root().join(PAGE)).unwrap();
    assert!(
        page.contains(&format!("weir export '{text}'")),
        "{PAGE} does not show `weir export '{text}'`"
    );
    let out = run(&["export", "--db", s(db), "--to", "json", text]);
    ok(&out, text)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn path(e: &J) -> &str {
    e["_path"].as_str().unwrap_or("")
}

fn of<'a>(events: &'a [J], log: &'a str) -> impl Iterator<Item = &'a J> + 'a {
    events.iter().filter(move |e| path(e) == log)
}

fn num(v: &J) -> Option<f64> {
    v.as_f64()
}

/// Top talkers: bytes sent per originator.
#[test]
fn top_talkers() {
    let Some(c) = corpus() else { return };
    let got = recipe(
        &db(c),
        "summarize sum(orig_bytes) by id.orig_h | sort sum(orig_bytes) desc | head 5",
    );
    let mut sums: HashMap<String, u64> = HashMap::new();
    for e in c.1.iter().filter(|e| e.get("orig_bytes").is_some()) {
        let Some(h) = e["id.orig_h"].as_str() else {
            continue;
        };
        let b = e["orig_bytes"].as_u64().unwrap_or(0);
        *sums.entry(h.to_string()).or_default() += b;
    }
    let mut want: Vec<(String, u64)> = sums.into_iter().collect();
    want.sort_by_key(|w| std::cmp::Reverse(w.1));
    assert_eq!(got.len(), 5);
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g["id.orig_h"].as_str(), Some(w.0.as_str()));
        assert_eq!(g["sum(orig_bytes)"].as_u64(), Some(w.1));
    }
}

/// The most common responder ports, across conn and dns (both have `id.resp_p`).
#[test]
fn top_ports() {
    let Some(c) = corpus() else { return };
    let got = recipe(&db(c), "top id.resp_p");
    let mut counts: HashMap<u64, u64> = HashMap::new();
    for e in &c.1 {
        if let Some(p) = e.get("id.resp_p").and_then(J::as_u64) {
            *counts.entry(p).or_default() += 1;
        }
    }
    let mut want: Vec<(u64, u64)> = counts.into_iter().collect();
    want.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    want.truncate(10);
    let got: Vec<(u64, u64)> = got
        .iter()
        .map(|e| {
            (
                e["id.resp_p"].as_u64().unwrap(),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want);
}

/// DNS queries for a domain pattern, most frequent first.
#[test]
fn dns_queries_for_a_domain() {
    let Some(c) = corpus() else { return };
    let got = recipe(
        &db(c),
        r#"#type == "zeek.dns" && query ~ /.*google.*/ | summarize count() by query | sort count() desc, query"#,
    );
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for e in of(&c.1, "dns") {
        if let Some(q) = e["query"].as_str().filter(|q| q.contains("google")) {
            *counts.entry(q.to_string()).or_default() += 1;
        }
    }
    let mut want: Vec<(String, u64)> = counts.into_iter().collect();
    want.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    assert!(!want.is_empty());
    let got: Vec<(String, u64)> = got
        .iter()
        .map(|e| {
            (
                e["query"].as_str().unwrap().to_string(),
                e["count()"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want);
}

/// Long connections, longest first.
#[test]
fn long_connections() {
    let Some(c) = corpus() else { return };
    let got = recipe(
        &db(c),
        "#type == \"zeek.conn\" && duration > 1h | sort duration desc | select uid, id.orig_h, id.resp_h, duration",
    );
    let mut want: Vec<(f64, String)> = of(&c.1, "conn")
        .filter_map(|e| {
            let d = num(&e["duration"])?;
            (d > 3600.0).then(|| (d, e["uid"].as_str().unwrap().to_string()))
        })
        .collect();
    want.sort_by(|a, b| b.0.total_cmp(&a.0));
    assert!(!want.is_empty());
    let got: Vec<String> = got
        .iter()
        .map(|e| {
            assert_eq!(e.as_object().unwrap().len(), 5, "{e}");
            e["uid"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(got, want.into_iter().map(|w| w.1).collect::<Vec<_>>());
}

/// A host's timeline across logs: its first events in time order, whatever their log.
#[test]
fn a_hosts_timeline_across_logs() {
    let Some(c) = corpus() else { return };
    let got = recipe(
        &db(c),
        "id.orig_h == 192.168.1.103 | sort ts | head 20 | select ts, uid, id.resp_h",
    );
    let mut want: Vec<(String, usize)> =
        c.1.iter()
            .enumerate()
            .filter(|(_, e)| e["id.orig_h"].as_str() == Some("192.168.1.103"))
            .filter_map(|(i, e)| Some((e["ts"].as_str()?.to_string(), i)))
            .collect();
    want.sort();
    want.truncate(20);
    let logs: HashSet<&str> = got.iter().map(path).collect();
    assert_eq!(got.len(), 20);
    for (g, (ts, i)) in got.iter().zip(&want) {
        assert_eq!(g["ts"].as_str(), Some(ts.as_str()));
        assert_eq!(g["uid"], c.1[*i]["uid"]);
    }
    assert!(!logs.is_empty());
}

/// One connection across conn, dns and http, by its uid, in time order.
#[test]
fn a_uid_across_logs() {
    let Some(c) = corpus() else { return };
    // A uid that occurs in more than one log.
    let mut logs_of: HashMap<&str, HashSet<&str>> = HashMap::new();
    for e in &c.1 {
        if let Some(u) = e["uid"].as_str() {
            logs_of.entry(u).or_default().insert(path(e));
        }
    }
    let uid = "J94V9kPFhec";
    assert!(logs_of[uid].len() >= 2, "{:?}", logs_of[uid]);
    let got = recipe(&db(c), r#"uid == "J94V9kPFhec" | sort ts"#);
    let mut want: Vec<(String, String)> =
        c.1.iter()
            .filter(|e| e["uid"].as_str() == Some(uid))
            .map(|e| (e["ts"].as_str().unwrap().to_string(), path(e).to_string()))
            .collect();
    want.sort_by(|a, b| a.0.cmp(&b.0));
    let got: Vec<(String, String)> = got
        .iter()
        .map(|e| (e["ts"].as_str().unwrap().to_string(), path(e).to_string()))
        .collect();
    assert_eq!(got, want);
}

/// Events per hour, across all logs.
#[test]
fn events_per_hour() {
    let Some(c) = corpus() else { return };
    let got = recipe(&db(c), "summarize count() by ts resolution 1h | sort ts");
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    let mut unset = 0;
    for e in &c.1 {
        match e["ts"].as_str() {
            Some(ts) => {
                *want
                    .entry(format!("{}:00:00.000000Z", &ts[..13]))
                    .or_default() += 1
            }
            None => unset += 1,
        }
    }
    let mut got_map = BTreeMap::new();
    let mut got_unset = 0;
    for e in &got {
        match e["ts"].as_str() {
            Some(ts) => {
                got_map.insert(ts.to_string(), e["count()"].as_u64().unwrap());
            }
            None => got_unset += e["count()"].as_u64().unwrap(),
        }
    }
    assert_eq!(got_map, want);
    assert_eq!(got_unset, unset);
    // Sorted by hour, the group of events without a time last.
    let hours: Vec<&str> = got.iter().filter_map(|e| e["ts"].as_str()).collect();
    assert!(hours.windows(2).all(|w| w[0] < w[1]));
}

/// The rarest user agents.
#[test]
fn rarest_user_agents() {
    let Some(c) = corpus() else { return };
    let got = recipe(&db(c), "rare user_agent 5");
    let mut counts: HashMap<&str, u64> = HashMap::new();
    for e in of(&c.1, "http") {
        if let Some(u) = e["user_agent"].as_str() {
            *counts.entry(u).or_default() += 1;
        }
    }
    let mut want: Vec<(&str, u64)> = counts.into_iter().collect();
    want.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(b.0)));
    want.truncate(5);
    let got: Vec<(&str, u64)> = got
        .iter()
        .map(|e| {
            (
                e["user_agent"].as_str().unwrap(),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want);
}

/// The last connections of a host, in import order.
#[test]
fn last_connections_of_a_host() {
    let Some(c) = corpus() else { return };
    let got = recipe(
        &db(c),
        "#type == \"zeek.conn\" && id.orig_h == 192.168.1.104 | tail 10",
    );
    let all: Vec<&J> = of(&c.1, "conn")
        .filter(|e| e["id.orig_h"].as_str() == Some("192.168.1.104"))
        .collect();
    let want = &all[all.len() - 10..];
    assert_eq!(got.len(), 10);
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g, *w);
    }
}

/// DNS servers each client asked, and how many.
#[test]
fn dns_servers_per_client() {
    let Some(c) = corpus() else { return };
    let got = recipe(
        &db(c),
        "#type == \"zeek.dns\" | summarize count_distinct(id.resp_h), distinct(id.resp_h) by id.orig_h",
    );
    let mut want: HashMap<String, HashSet<String>> = HashMap::new();
    for e in of(&c.1, "dns") {
        want.entry(e["id.orig_h"].as_str().unwrap().to_string())
            .or_default()
            .insert(e["id.resp_h"].as_str().unwrap().to_string());
    }
    assert_eq!(got.len(), want.len());
    for g in &got {
        let w = &want[g["id.orig_h"].as_str().unwrap()];
        assert_eq!(
            g["count_distinct(id.resp_h)"].as_u64(),
            Some(w.len() as u64)
        );
        let d: HashSet<String> = g["distinct(id.resp_h)"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect();
        assert_eq!(&d, w);
    }
}

/// Traffic per transport protocol.
#[test]
fn traffic_per_protocol() {
    let Some(c) = corpus() else { return };
    let got = recipe(
        &db(c),
        "#type == \"zeek.conn\" | summarize n=count(), sum(orig_bytes), sum(resp_bytes), max(duration) by proto",
    );
    let mut want: HashMap<&str, (u64, u64, u64, f64)> = HashMap::new();
    for e in of(&c.1, "conn") {
        let w = want.entry(e["proto"].as_str().unwrap()).or_default();
        w.0 += 1;
        w.1 += e["orig_bytes"].as_u64().unwrap_or(0);
        w.2 += e["resp_bytes"].as_u64().unwrap_or(0);
        w.3 = w.3.max(num(&e["duration"]).unwrap_or(0.0));
    }
    assert_eq!(got.len(), want.len());
    for g in &got {
        let w = want[g["proto"].as_str().unwrap()];
        assert_eq!(g["n"].as_u64(), Some(w.0));
        assert_eq!(g["sum(orig_bytes)"].as_u64(), Some(w.1));
        assert_eq!(g["sum(resp_bytes)"].as_u64(), Some(w.2));
        assert!((num(&g["max(duration)"]).unwrap() - w.3).abs() < 1e-6);
    }
}

/// HTTP requests per server and method, the busiest first.
#[test]
fn http_requests_per_host_and_method() {
    let Some(c) = corpus() else { return };
    let got = recipe(
        &db(c),
        "#type == \"zeek.http\" && host != \"\" && method != \"\" | summarize count() by host, method | sort count() desc, host, method | head 10",
    );
    let mut counts: HashMap<(String, String), u64> = HashMap::new();
    for e in of(&c.1, "http") {
        let k = (
            e["host"].as_str().unwrap_or("").to_string(),
            e["method"].as_str().unwrap_or("").to_string(),
        );
        if !k.0.is_empty() && !k.1.is_empty() {
            *counts.entry(k).or_default() += 1;
        }
    }
    let mut want: Vec<((String, String), u64)> = counts.into_iter().collect();
    want.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    want.truncate(10);
    let got: Vec<((String, String), u64)> = got
        .iter()
        .map(|e| {
            (
                (
                    e["host"].as_str().unwrap_or("").to_string(),
                    e["method"].as_str().unwrap_or("").to_string(),
                ),
                e["count()"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want);
}

/// `select #id` shows the IDs `weir get` takes: each event of a uid, got back by its ID,
/// is the event exported at that position (IDs are import order).
#[test]
fn event_ids_are_within_reach() {
    let Some(c) = corpus() else { return };
    let got = recipe(&db(c), r#"uid == "J94V9kPFhec" | select #id, uid"#);
    assert!(got.len() >= 2);
    for g in &got {
        let id = g["#id"].as_u64().unwrap();
        assert_eq!(g["uid"], c.1[id as usize]["uid"], "{g}");
        let out = run(&["get", "--db", s(&db(c)), "--to", "json", &id.to_string()]);
        let back: J = serde_json::from_str(ok(&out, "get").trim()).unwrap();
        assert_eq!(back, c.1[id as usize]);
    }
}
