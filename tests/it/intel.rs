//! `weir intel`: indicator sets (each reader on real-format text, bad input, dedup, expiry,
//! atomic rewrite) and retro matching against a brute-force reference over random events.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::cli::{ok, run, s, text};
use crate::common::rng::Rng;

/// The example of Zeek's Intel framework documentation (tab-separated).
const ZEEK_INTEL: &str = "#fields\tindicator\tindicator_type\tmeta.source\tmeta.desc\tmeta.url\n\
1.2.3.4\tIntel::ADDR\tsource1\tSending phishing email\thttp://source1.com/badhosts/1.2.3.4\n\
a.b.com\tIntel::DOMAIN\tsource2\tName used for data exfiltration\t-\n";

/// A STIX 2.1 bundle as feeds publish it: supported single comparisons and patterns that
/// must be reported and skipped.
const STIX: &str = include_str!("../fixtures/intel/stix-feed.json");

pub(crate) fn db_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    std::fs::create_dir(&db).unwrap();
    (dir, db)
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Each line of `text` as JSON.
pub(crate) fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `weir intel show`: (type, value) of each indicator, and the lines.
fn show(db: &Path, set: &str) -> Vec<Value> {
    json_lines(&ok(
        &run(&["intel", "show", "--db", s(db), set]),
        "intel show",
    ))
}

/// `weir intel add --db DB --set SET ARGS FILE`.
pub(crate) fn add(db: &Path, set: &str, args: &[&str], file: &Path) -> Output {
    let mut all = vec!["intel", "add", "--db", s(db), "--set", set];
    all.extend(args);
    all.push(s(file));
    run(&all)
}

/// `weir intel match --db DB --to json SET`.
fn match_json(db: &Path, set: &str) -> Output {
    run(&["intel", "match", "--db", s(db), "--to", "json", set])
}

/// What `weir intel list` prints, which must succeed.
fn list_sets(db: &Path) -> String {
    ok(&run(&["intel", "list", "--db", s(db)]), "list")
}

/// `weir import` of `log` into `db`, which must succeed.
fn import(db: &Path, log: &Path) {
    ok(&run(&["import", "--db", s(db), s(log)]), "import");
}

/// (event ID, field) of each match that `weir intel match --to json` printed.
fn id_fields(out: &str) -> Vec<(u64, String)> {
    json_lines(out)
        .iter()
        .map(|v| {
            (
                v["id"].as_u64().unwrap(),
                v["field"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(lines: &[Value]) -> Vec<(String, String)> {
    lines
        .iter()
        .map(|v| {
            (
                v["type"].as_str().unwrap().to_string(),
                v["value"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn reads_a_zeek_intel_file_as_zeeks_docs_show_it() {
    let (dir, db) = db_dir();
    let f = write(dir.path(), "intel.dat", ZEEK_INTEL);
    ok(&add(&db, "zeek", &[], &f), "add");
    let lines = show(&db, "zeek");
    assert_eq!(
        pairs(&lines),
        vec![
            ("addr".into(), "1.2.3.4".into()),
            ("domain".into(), "a.b.com".into())
        ]
    );
    assert_eq!(lines[0]["meta"]["source"], "source1");
    assert_eq!(
        lines[1]["meta"]["description"],
        "Name used for data exfiltration"
    );
    let list = list_sets(&db);
    assert!(list.starts_with("zeek\tversion 1\t2 indicators"), "{list}");
}

#[test]
fn reads_stix_bundles_and_reports_what_it_skips() {
    let (dir, db) = db_dir();
    let f = write(dir.path(), "bundle.json", STIX);
    let out = add(&db, "stix", &[], &f);
    ok(&out, "add");
    let err = text(&out.stderr);
    assert!(err.contains("4 STIX indicators not read"), "{err}");
    for id in [
        "indicator--unsupported-and",
        "indicator--unsupported-followedby",
        "indicator--unsupported-object",
        "indicator--unsupported-yara",
    ] {
        assert!(err.contains(id), "{id} not reported: {err}");
    }
    let lines = show(&db, "stix");
    let got: BTreeSet<(String, String)> = pairs(&lines).into_iter().collect();
    let want: BTreeSet<(String, String)> = [
        ("addr", "198.51.100.7"),
        ("addr", "2001:db8::1"),
        ("url", "x4z9arb.cn/4712/"),
        (
            "file_hash",
            "ef537f25c895bfa782526529a9b63d97aa631564d5d789c2b765448c8635fb6c",
        ),
        ("file_hash", "79054025255fb1a26e4bc422aef54eb4"),
        ("domain", "evil.example"),
        ("email", "ceo@evil.example"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(got, want);
    let c2 = lines.iter().find(|l| l["value"] == "198.51.100.7").unwrap();
    assert_eq!(c2["meta"]["source"], "Example CERT");
    assert_eq!(c2["meta"]["confidence"], 90);
    let dom = lines.iter().find(|l| l["value"] == "evil.example").unwrap();
    assert_eq!(dom["valid_until"], "2099-01-01T00:00:00.000000Z");
}

#[test]
fn reads_csv_and_lists() {
    let (dir, db) = db_dir();
    let csv = write(
        dir.path(),
        "feed.csv",
        "indicator,type,source,description,confidence,valid_until\n\
         10.0.0.0/8,subnet,acme,\"internal, all of it\",50,\n\
         Evil.COM,domain,acme,,,2099-01-01T00:00:00Z\n",
    );
    let list = write(dir.path(), "ips.txt", "# C2\n192.0.2.1\n\n192.0.2.2\n");
    ok(&add(&db, "mix", &[], &csv), "csv");
    // A list needs --type.
    let out = add(&db, "mix", &[], &list);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--type"),
        "{}",
        text(&out.stderr)
    );
    ok(
        &add(&db, "mix", &["--type", "addr", "--format", "list"], &list),
        "list",
    );
    let lines = show(&db, "mix");
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[2]["meta"]["description"], "internal, all of it");
    let list = list_sets(&db);
    assert!(
        list.contains("version 2\t4 indicators\taddr=2 subnet=1 domain=1"),
        "{list}"
    );
}

#[test]
fn bad_input_is_positioned_and_skippable() {
    let (dir, db) = db_dir();
    let text_in = format!(
        "{ZEEK_INTEL}10.0.0.300\tIntel::ADDR\tsrc\tbad address\t-\nx.org\tIntel::BOGUS\tsrc\t-\t-\nonly\ttwo\n"
    );
    let f = write(dir.path(), "intel.dat", &text_in);
    let out = add(&db, "z", &[], &f);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("intel.dat:4") && err.contains("10.0.0.300") && err.contains("not an address"),
        "{err}"
    );
    assert!(
        !db.join("intel/z.json").exists(),
        "a failed add stores nothing"
    );
    let out = add(&db, "z", &["--on-error", "skip"], &f);
    ok(&out, "skip");
    let err = text(&out.stderr);
    assert!(
        err.contains("intel.dat:5") && err.contains("Intel::BOGUS"),
        "{err}"
    );
    assert!(err.contains("intel.dat:6"), "{err}");
    assert_eq!(show(&db, "z").len(), 2);
    // STIX that is no JSON: the line.
    let b = write(
        dir.path(),
        "b.json",
        "{\"type\": \"bundle\",\n\"objects\": [\n}",
    );
    let out = add(&db, "z", &["--format", "stix"], &b);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("b.json:3"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_same_indicator_twice_is_kept_once_and_versions_count_changes() {
    let (dir, db) = db_dir();
    let a = write(dir.path(), "a.txt", "10.0.0.1\n::ffff:10.0.0.1\n10.0.0.2\n");
    ok(&add(&db, "s", &["--type", "addr"], &a), "first");
    ok(&add(&db, "s", &["--type", "addr"], &a), "again");
    assert_eq!(show(&db, "s").len(), 2);
    let list = list_sets(&db);
    assert!(
        list.starts_with("s\tversion 1\t"),
        "nothing changed, nothing written: {list}"
    );
    ok(
        &run(&["intel", "remove", "--db", s(&db), "--set", "s", "10.0.0.2"]),
        "remove",
    );
    assert_eq!(
        pairs(&show(&db, "s")),
        vec![("addr".into(), "10.0.0.1".into())]
    );
    let list = list_sets(&db);
    assert!(list.starts_with("s\tversion 2\t1 indicators"), "{list}");
    ok(
        &run(&["intel", "remove", "--db", s(&db), "--set", "s"]),
        "remove set",
    );
    assert_eq!(list_sets(&db), "");
    let out = run(&["intel", "show", "--db", s(&db), "s"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_set_file_is_never_half_written() {
    let (dir, db) = db_dir();
    let a = write(dir.path(), "a.txt", "10.0.0.1\n");
    let b = write(dir.path(), "b.txt", "10.0.0.2\n");
    ok(&add(&db, "s", &["--type", "addr"], &a), "a");
    let before = std::fs::read(db.join("intel/s.json")).unwrap();
    // The temporary cannot be created (a directory is in its place): the write fails, and
    // the previous version stays whole.
    std::fs::create_dir(db.join("intel/.s.json.tmp")).unwrap();
    let out = add(&db, "s", &["--type", "addr"], &b);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(db.join("intel/s.json")).unwrap(), before);
    assert_eq!(show(&db, "s").len(), 1);
    std::fs::remove_dir(db.join("intel/.s.json.tmp")).unwrap();
    ok(&add(&db, "s", &["--type", "addr"], &b), "b");
    assert_eq!(show(&db, "s").len(), 2);
    // A torn file (a prefix) is refused as damaged, naming it, never read as a smaller set.
    let whole = std::fs::read(db.join("intel/s.json")).unwrap();
    std::fs::write(db.join("intel/s.json"), &whole[..whole.len() / 2]).unwrap();
    let out = run(&["intel", "show", "--db", s(&db), "s"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("s.json: damaged indicator set"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_set_written_in_format_1_still_reads() {
    // `tests/fixtures/intel-set-v1`: a set stored by the weir of 2026-12-07 (format 1: one
    // JSON object), with its `weir intel show` of then.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/intel-set-v1");
    let shown = ok(
        &run(&["intel", "show", "--db", s(&fixture), "feed"]),
        "intel show",
    );
    let then = std::fs::read_to_string(fixture.join("show.jsonl")).unwrap();
    assert_eq!(shown, then);
    let listed = ok(&run(&["intel", "list", "--db", s(&fixture)]), "intel list");
    assert!(
        listed.starts_with("feed\tversion 2\t9 indicators"),
        "{listed}"
    );
    // Changed, it is written in format 2 as the next version, and reads back the same.
    let (dir, db) = db_dir();
    std::fs::create_dir_all(db.join("intel")).unwrap();
    std::fs::copy(fixture.join("intel/feed.json"), db.join("intel/feed.json")).unwrap();
    let extra = write(dir.path(), "x.txt", "10.1.1.1\n");
    ok(&add(&db, "feed", &["--type", "addr"], &extra), "intel add");
    let text = std::fs::read_to_string(db.join("intel/feed.json")).unwrap();
    assert!(
        text.starts_with("{\"format\":2,\"name\":\"feed\",\"version\":3,"),
        "{text}"
    );
    let mut now = show(&db, "feed");
    now.retain(|v| v["value"] != "10.1.1.1");
    assert_eq!(now, json_lines(&then));
}

// ---- retro matching -------------------------------------------------------------------

const CONN_HEAD: &str =
    "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tconn\n\
#fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto\n\
#types\ttime\tstring\taddr\tport\taddr\tport\tenum\n";
const DNS_HEAD: &str =
    "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tdns\n\
#fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto\tquery\n\
#types\ttime\tstring\taddr\tport\taddr\tport\tenum\tstring\n";
const HTTP_HEAD: &str =
    "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\thttp\n\
#fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\thost\turi\tuser_agent\n\
#types\ttime\tstring\taddr\tport\taddr\tport\tstring\tstring\tstring\n";

/// One generated event (its ID is its index in the list [`generate`] returns): its time,
/// fields and values.
pub(crate) struct Event {
    ts: i64,
    /// (field, value), `-` unset.
    fields: Vec<(&'static str, String)>,
}

impl Event {
    /// Its `uid` (unique: `C` and its number).
    pub(crate) fn uid(&self) -> &str {
        &self.fields[0].1
    }
}

fn pick<'a>(rng: &mut Rng, xs: &[&'a str]) -> &'a str {
    xs[rng.below(xs.len() as u64) as usize]
}

const ADDRS: &[&str] = &[
    "10.0.0.1",
    "10.0.0.2",
    "10.0.1.7",
    "10.1.2.3",
    "192.168.1.10",
    "192.168.1.200",
    "192.168.2.5",
    "172.16.0.9",
    "8.8.8.8",
    "8.8.4.4",
    "1.1.1.1",
    "2001:db8::1",
    "2001:db8::2",
    "2001:db8:1::5",
    "fe80::1",
];
const SUBNETS: &[&str] = &[
    "10.0.0.0/8",
    "10.0.0.0/24",
    "192.168.1.0/24",
    "192.168.0.0/16",
    "8.8.8.0/24",
    "2001:db8::/32",
    "2001:db8::/64",
    "172.16.0.0/12",
    "1.1.1.1/32",
];
const BASES: &[&str] = &["evil.com", "example.org", "bad.net", "com", "good.io"];
const LABELS: &[&str] = &["", "www.", "a.", "cdn.x.", "mail."];
const URIS: &[&str] = &["/", "/index.html", "/a/b?c=1", "/payload.exe", "/Login"];
const AGENTS: &[&str] = &[
    "Mozilla/5.0",
    "curl/8.0",
    "BadBot/1.0",
    "python-requests/2.31",
];

fn domain(rng: &mut Rng) -> String {
    let d = format!("{}{}", pick(rng, LABELS), pick(rng, BASES));
    // Mixed case: DNS names compare case-insensitively.
    if rng.below(4) == 0 {
        d.to_ascii_uppercase()
    } else {
        d
    }
}

/// Writes `n` random events of conn, dns and http into three logs, returns them with their
/// IDs (each log is imported in turn, so IDs follow the file order).
pub(crate) fn generate(
    rng: &mut Rng,
    dir: &Path,
    n: usize,
    now: i64,
) -> (Vec<Event>, Vec<std::path::PathBuf>) {
    let mut logs = [
        CONN_HEAD.to_string(),
        DNS_HEAD.to_string(),
        HTTP_HEAD.to_string(),
    ];
    let mut per: [Vec<Event>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for k in 0..n {
        let which = rng.below(3) as usize;
        // Within the last 200 days, never within a minute of the 90-day boundary.
        let mut age = rng.below(200 * 86_400) as i64;
        if (age - 90 * 86_400).abs() < 60 {
            age += 120;
        }
        let ts = now - age * 1_000_000_000;
        let mut fields: Vec<(&'static str, String)> = vec![
            ("uid", format!("C{k}")),
            ("id.orig_h", pick(rng, ADDRS).to_string()),
            ("id.orig_p", "1234".into()),
            ("id.resp_h", pick(rng, ADDRS).to_string()),
            ("id.resp_p", "80".into()),
        ];
        match which {
            0 => fields.push(("proto", "tcp".into())),
            1 => {
                fields.push(("proto", "udp".into()));
                let q = if rng.below(10) == 0 {
                    "-".into()
                } else {
                    domain(rng)
                };
                fields.push(("query", q));
            }
            _ => {
                fields.push(("host", domain(rng)));
                fields.push(("uri", pick(rng, URIS).to_string()));
                fields.push(("user_agent", pick(rng, AGENTS).to_string()));
            }
        }
        let line: Vec<String> = std::iter::once(format!(
            "{}.{:09}",
            ts.div_euclid(1_000_000_000),
            ts.rem_euclid(1_000_000_000)
        ))
        .chain(fields.iter().map(|(_, v)| v.clone()))
        .collect();
        logs[which].push_str(&line.join("\t"));
        logs[which].push('\n');
        per[which].push(Event { ts, fields });
    }
    let mut events = Vec::new();
    let mut paths = Vec::new();
    for (i, (log, evs)) in logs.iter().zip(per).enumerate() {
        let p = dir.join(["conn.log", "dns.log", "http.log"][i]);
        std::fs::write(&p, log).unwrap();
        paths.push(p);
        events.extend(evs);
    }
    (events, paths)
}

/// A random indicator: (type, value, expired).
fn indicator(rng: &mut Rng) -> (&'static str, String) {
    match rng.below(6) {
        0 => ("addr", pick(rng, ADDRS).to_string()),
        1 => ("subnet", pick(rng, SUBNETS).to_string()),
        2 => ("domain", pick(rng, BASES).to_string()),
        3 => ("domain", domain(rng).to_ascii_lowercase()),
        4 => (
            "url",
            format!("{}{}", domain(rng).to_ascii_lowercase(), pick(rng, URIS)),
        ),
        _ => ("software", pick(rng, AGENTS).to_string()),
    }
}

fn bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// Whether `value` of `field` matches indicator (`kind`, `ind`): the rules of the match table
/// of `docs/book/src/detection.md`, written independently of weir's matcher.
fn reference_matches(kind: &str, ind: &str, field: &str, value: &str, host: Option<&str>) -> bool {
    if value == "-" {
        return false;
    }
    let addr_field = field == "id.orig_h" || field == "id.resp_h";
    match kind {
        "addr" => {
            addr_field && value.parse::<IpAddr>().ok().map(bits) == ind.parse().ok().map(bits)
        }
        "subnet" => {
            let Some((net, len)) = ind.split_once('/') else {
                return false;
            };
            let net: IpAddr = net.parse().unwrap();
            let len: u32 = len.parse().unwrap();
            let len = if net.is_ipv4() { len + 96 } else { len };
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - len)
            };
            addr_field
                && value
                    .parse::<IpAddr>()
                    .is_ok_and(|a| bits(a) & mask == bits(net) & mask)
        }
        "domain" => {
            (field == "query" || field == "host") && {
                let v = value.to_ascii_lowercase();
                v == ind || v.ends_with(&format!(".{ind}"))
            }
        }
        "url" => {
            field == "uri"
                && host.is_some_and(|h| format!("{}{value}", h.to_ascii_lowercase()) == ind)
        }
        "software" => field == "user_agent" && value == ind,
        _ => false,
    }
}

/// `n` random indicators as a CSV feed, some expired: the text, and the (type, value) of
/// those that match (the last line of a value wins, its expiry too).
pub(crate) fn feed(rng: &mut Rng, n: usize) -> (String, BTreeSet<(String, String)>) {
    let mut csv = String::from("indicator,type,source,valid_until\n");
    let mut live: BTreeSet<(String, String)> = BTreeSet::new();
    for k in 0..n {
        let (kind, value) = indicator(rng);
        let expired = rng.below(5) == 0;
        let until = if expired {
            "2020-01-01T00:00:00Z"
        } else {
            "2099-01-01T00:00:00Z"
        };
        csv.push_str(&format!("{value},{kind},src{k},{until}\n"));
        live.remove(&(kind.to_string(), value.clone()));
        if !expired {
            live.insert((kind.to_string(), value));
        } else {
            live.retain(|(t, v)| !(t == kind && *v == value));
        }
    }
    (csv, live)
}

/// The matches of the reference: (uid, type, indicator, field) of every event from `since`
/// on (ns) against each indicator of `live`.
pub(crate) fn expected(
    events: &[Event],
    live: &BTreeSet<(String, String)>,
    since: Option<i64>,
) -> BTreeSet<(String, String, String, String)> {
    let mut want = BTreeSet::new();
    for e in events {
        if since.is_some_and(|t| e.ts < t) {
            continue;
        }
        let host = e
            .fields
            .iter()
            .find(|(f, _)| *f == "host")
            .map(|(_, v)| v.as_str());
        for (kind, ind) in live {
            for (field, value) in &e.fields {
                if reference_matches(kind, ind, field, value, host) {
                    want.insert((
                        e.uid().to_string(),
                        kind.clone(),
                        ind.clone(),
                        field.to_string(),
                    ));
                }
            }
        }
    }
    want
}

/// Asserts that `got` equals the reference's `want`.
pub(crate) fn assert_same(
    what: &str,
    seed: u64,
    got: &BTreeSet<(String, String, String, String)>,
    want: &BTreeSet<(String, String, String, String)>,
) {
    let missing: Vec<_> = want.difference(got).take(5).collect();
    let extra: Vec<_> = got.difference(want).take(5).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what}, seed {seed}: {} matches, {} expected; missing {missing:?}; extra {extra:?}",
        got.len(),
        want.len()
    );
}

pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

fn round(seed: u64, events_n: usize, indicators_n: usize, since: bool) {
    let mut rng = Rng(seed);
    let (dir, db) = db_dir();
    let now = now_ns();
    let (events, logs) = generate(&mut rng, dir.path(), events_n, now);
    for log in &logs {
        import(&db, log);
    }
    let (csv, live) = feed(&mut rng, indicators_n);
    let f = write(dir.path(), "feed.csv", &csv);
    ok(&add(&db, "feed", &[], &f), "intel add");
    // Canonical values as weir stores them (subnets with host bits cleared are already).
    let mut args = vec!["intel", "match", "--db", s(&db), "--to", "json", "feed"];
    if since {
        args.extend(["--since", "90d"]);
    }
    let out = run(&args);
    let got: BTreeSet<(String, String, String, String)> = json_lines(&ok(&out, "intel match"))
        .iter()
        .map(|v| {
            assert_eq!(v["set"], "feed");
            (
                events[v["id"].as_u64().unwrap() as usize].uid().to_string(),
                v["type"].as_str().unwrap().to_string(),
                v["indicator"].as_str().unwrap().to_string(),
                v["field"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let cut = since.then(|| now - 90 * 86_400 * 1_000_000_000);
    let want = expected(&events, &live, cut);
    assert!(!want.is_empty(), "seed {seed}: the round matches something");
    let kinds: BTreeSet<&str> = want.iter().map(|(_, k, _, _)| k.as_str()).collect();
    eprintln!("seed {seed}: {} matches of {kinds:?}", want.len());
    if indicators_n >= 25 {
        assert_eq!(
            kinds.len(),
            5,
            "seed {seed}: every rule is exercised: {kinds:?}"
        );
    }
    assert_same("retro", seed, &got, &want);
}

#[test]
fn retro_matches_equal_a_brute_force_reference() {
    for (seed, events, indicators, since) in [
        (0x9e37_79b9_7f4a_7c15, 400, 25, false),
        (0x2545_f491_4f6c_dd1d, 600, 60, true),
        (0x0123_4567_89ab_cdef, 300, 8, false),
    ] {
        round(seed, events, indicators, since);
    }
}

#[test]
fn many_indicators_prefilter_by_schema_only_and_still_match_exactly() {
    // More values of a kind than the pre-filter names: the search keeps the schemas, the
    // matcher decides.
    let (dir, db) = db_dir();
    let log = format!(
        "{DNS_HEAD}1258531221.0\tC1\t10.0.0.1\t1\t10.0.0.2\t53\tudp\tx.host7.example\n\
1258531222.0\tC2\t10.0.0.1\t1\t10.0.0.2\t53\tudp\tother.example\n"
    );
    let l = write(dir.path(), "dns.log", &log);
    import(&db, &l);
    let names: String = (0..2000).map(|i| format!("host{i}.example\n")).collect();
    let f = write(dir.path(), "names.txt", &names);
    ok(&add(&db, "big", &["--type", "domain"], &f), "add");
    let out = ok(&match_json(&db, "big"), "match");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(lines[0].contains("\"indicator\":\"host7.example\"") && lines[0].contains("\"id\":0"));
    // More addresses than the pre-filter names, and a name with a hyphen in the pattern.
    let ips: String = (0..30)
        .map(|i| format!("192.0.2.{i}\n"))
        .chain(["10.0.0.2\n".to_string()])
        .collect();
    let f = write(dir.path(), "ips.txt", &ips);
    ok(&add(&db, "ips", &["--type", "addr"], &f), "add");
    let out = ok(&match_json(&db, "ips"), "match");
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(
        out.lines().all(|l| l.contains("\"field\":\"id.resp_h\"")),
        "{out}"
    );
    let f = write(dir.path(), "d.txt", "x.host7-a.example\nhost7.example\n");
    ok(&add(&db, "hy", &["--type", "domain"], &f), "add");
    let out = ok(&match_json(&db, "hy"), "match");
    assert_eq!(out.lines().count(), 1, "{out}");
    // More subnets than the pre-filter names: every address field need only be set.
    let nets: String = (0..100).map(|i| format!("10.{i}.0.0/16\n")).collect();
    let f = write(dir.path(), "nets.txt", &nets);
    ok(&add(&db, "nets", &["--type", "subnet"], &f), "add");
    let out = ok(&match_json(&db, "nets"), "match");
    let got = id_fields(&out);
    let want: Vec<(u64, String)> = [
        (0, "id.orig_h"),
        (0, "id.resp_h"),
        (1, "id.orig_h"),
        (1, "id.resp_h"),
    ]
    .into_iter()
    .map(|(i, f)| (i, f.to_string()))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn expired_indicators_do_not_match() {
    let (dir, db) = db_dir();
    let log =
        format!("{DNS_HEAD}1258531221.0\tC1\t10.0.0.1\t1\t10.0.0.2\t53\tudp\tx.evil.example\n");
    let l = write(dir.path(), "dns.log", &log);
    import(&db, &l);
    let csv = write(
        dir.path(),
        "f.csv",
        "indicator,type,valid_until\nevil.example,domain,2020-01-01T00:00:00Z\n10.0.0.1,addr,2099-01-01T00:00:00Z\n",
    );
    ok(&add(&db, "f", &[], &csv), "add");
    let out = match_json(&db, "f");
    let lines = ok(&out, "match");
    assert_eq!(lines.lines().count(), 1, "{lines}");
    assert!(lines.contains("\"indicator\":\"10.0.0.1\""), "{lines}");
    assert!(
        text(&out.stderr).contains("1 expired indicators"),
        "{}",
        text(&out.stderr)
    );
    // --expire: indicators without an expiry of their own expire that long from now.
    let list = write(dir.path(), "l.txt", "10.0.0.2\n");
    ok(
        &add(&db, "g", &["--type", "addr", "--expire", "30d"], &list),
        "add --expire",
    );
    let shown = show(&db, "g");
    let until = shown[0]["valid_until"].as_str().unwrap();
    let year: i32 = until[..4].parse().unwrap();
    assert!(year >= 2024, "{until}");
    let out = ok(&match_json(&db, "g"), "match g");
    assert_eq!(out.lines().count(), 1, "{out}");
}

#[test]
fn hashes_match_through_the_concepts_and_a_concepts_file_extends_the_table() {
    let (dir, db) = db_dir();
    let files = "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tfiles\n\
#fields\tts\tfuid\ttx_hosts\tmd5\tsha1\tsha256\n\
#types\ttime\tstring\tset[addr]\tstring\tstring\tstring\n\
1258531221.0\tF1\t10.9.9.9,10.0.0.1\t79054025255fb1a26e4bc422aef54eb4\t-\t-\n\
1258531222.0\tF2\t10.9.9.8\t-\t-\tef537f25c895bfa782526529a9b63d97aa631564d5d789c2b765448c8635fb6c\n";
    let x509 = "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tx509\n\
#fields\tts\tfingerprint\tcertificate.subject\n\
#types\ttime\tstring\tstring\n\
1258531223.0\t0a1b2c\tCN=evil\n";
    for (name, log) in [("files.log", files), ("x509.log", x509)] {
        let l = write(dir.path(), name, log);
        import(&db, &l);
    }
    let f = write(
        dir.path(),
        "intel.dat",
        "#fields\tindicator\tindicator_type\tmeta.source\n\
79054025255FB1A26E4BC422AEF54EB4\tIntel::FILE_HASH\tfeed\n\
ef537f25c895bfa782526529a9b63d97aa631564d5d789c2b765448c8635fb6c\tIntel::FILE_HASH\tfeed\n\
0A1B2C\tIntel::CERT_HASH\tfeed\n\
10.9.9.9\tIntel::ADDR\tfeed\n",
    );
    ok(&add(&db, "h", &[], &f), "add");
    // The certificate hash has no shipped concept: not matched.
    let out = ok(&match_json(&db, "h"), "match");
    assert_eq!(
        id_fields(&out),
        vec![
            (0, "tx_hosts".into()),
            (0, "md5".into()),
            (1, "sha256".into())
        ]
    );
    let concepts = write(
        dir.path(),
        "concepts.toml",
        "format = 1\n[concepts.\"tls.cert.hash\"]\nfields = [\"zeek.x509.fingerprint\"]\n",
    );
    let out = run(&[
        "--concepts",
        s(&concepts),
        "intel",
        "match",
        "--db",
        s(&db),
        "--to",
        "json",
        "h",
    ]);
    assert_eq!(
        id_fields(&ok(&out, "match with concepts"))[3..],
        [(2, "fingerprint".to_string())]
    );
}

#[test]
fn sets_can_be_added_before_the_first_import() {
    let (dir, db) = db_dir();
    let l = write(dir.path(), "ips.txt", "10.0.0.1\n");
    ok(&add(&db, "s", &["--type", "addr"], &l), "add");
    let out = run(&["intel", "match", "--db", s(&db), "s"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "no archive yet: {}",
        text(&out.stderr)
    );
    let log = format!("{CONN_HEAD}1258531221.0\tC1\t10.0.0.1\t1\t10.0.0.2\t80\ttcp\n");
    let log = write(dir.path(), "conn.log", &log);
    ok(
        &run(&["import", "--db", s(&db), s(&log)]),
        "import into a directory with sets",
    );
    let out = ok(&match_json(&db, "s"), "match");
    assert_eq!(out.lines().count(), 1, "{out}");
    // A directory that is neither: refused.
    let out = add(&dir.path().join("none"), "s", &["--type", "addr"], &l);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn suricata_events_match_through_the_same_concepts() {
    let (dir, db) = db_dir();
    let eve = r#"{"timestamp":"2024-01-01T00:00:00.000000+0000","flow_id":1,"event_type":"http","src_ip":"10.0.0.1","src_port":1,"dest_ip":"1.2.3.4","dest_port":80,"proto":"TCP","http":{"hostname":"a.Evil.com","url":"/x?y","http_user_agent":"BadBot/1.0"}}
{"timestamp":"2024-01-01T00:00:01.000000+0000","flow_id":2,"event_type":"dns","src_ip":"10.0.0.2","src_port":1,"dest_ip":"8.8.8.8","dest_port":53,"proto":"UDP","dns":{"type":"query","rrname":"b.evil.com","rrtype":"A"}}
"#;
    let l = write(dir.path(), "eve.json", eve);
    ok(
        &run(&["import", "--db", s(&db), "--from", "suricata", s(&l)]),
        "import",
    );
    let f = write(
        dir.path(),
        "s.csv",
        "indicator,type\nevil.com,domain\nhttp://a.evil.com/x?y,url\nBadBot/1.0,software\n8.8.8.8,addr\n",
    );
    ok(&add(&db, "s", &[], &f), "add");
    let out = ok(&match_json(&db, "s"), "match");
    let got: BTreeSet<(u64, String, String)> = json_lines(&out)
        .iter()
        .map(|v| {
            (
                v["id"].as_u64().unwrap(),
                v["type"].as_str().unwrap().to_string(),
                v["field"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: BTreeSet<(u64, String, String)> = [
        (0, "domain", "http.hostname"),
        (0, "url", "http.url"),
        (0, "software", "http.http_user_agent"),
        (1, "addr", "dest_ip"),
        (1, "domain", "dns.rrname"),
    ]
    .into_iter()
    .map(|(i, t, f)| (i, t.to_string(), f.to_string()))
    .collect();
    assert_eq!(got, want);
}
