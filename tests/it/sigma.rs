//! Sigma rules as queries (`weir count|export --sigma`), checked against an independent
//! implementation: for every rule of `../shared/data/sigma/rules/` (21 SigmaHQ rules for
//! Zeek), `tests/engines/sigma_reference.py` writes a Zeek log of events made from the rule's
//! own values (matches and near-misses: another case, one character changed, cut short,
//! inside other text, numbers one off, addresses just inside and outside each network, unset
//! fields) and runs pySigma's SQLite backend over the same events; weir's matches must be
//! exactly pySigma's. A rule pySigma refuses (keyword detections) must be refused by weir
//! too, with a positioned error and exit code 2.
//!
//! Needs the rules and python3 with pySigma and its SQLite backend (`.ci/run` installs
//! them): without them a test prints a note and skips, except under `CI=true`, where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::cli::{ok, run, s};
use serde_json::Value;

fn rules_dir() -> PathBuf {
    common::root().join("../shared/data/sigma/rules")
}

/// Whether the rules and pySigma are there; `false` after a note outside CI.
///
/// # Panics
/// When they are missing and `CI=true`.
fn reference_present() -> bool {
    let ok = rules_dir().is_dir()
        && Command::new("python3")
            .args(["-c", "import sigma.backends.sqlite, yaml"])
            .output()
            .is_ok_and(|o| o.status.success());
    if !ok {
        let note = "python3 with pySigma (pip install pysigma pysigma-backend-sqlite) or \
                    ../shared/data/sigma/rules not found";
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but {note}: .ci/run installs it");
        }
        eprintln!("note: {note}: skipping this test");
    }
    ok
}

fn rules() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(rules_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yml"))
        .collect();
    v.sort();
    v
}

/// The reference's verdict on the events it writes into `dir`.
fn reference(rule: &Path, dir: &Path) -> Value {
    let out = Command::new("python3")
        .arg(common::root().join("tests/engines/sigma_reference.py"))
        .arg(rule)
        .arg(dir)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "sigma_reference.py failed on {}: {}",
        rule.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `weir import` of `logs` into `db`, which must succeed.
fn import(db: &Path, logs: &[&Path]) {
    let mut args = vec!["import", "--db", s(db)];
    args.extend(logs.iter().map(|p| s(p)));
    ok(&run(&args), "weir import");
}

/// The reference's events of the shared rule `name` (a rule of Zeek's dns log) in a new
/// archive: the temporary directory, the rule's path, the reference's verdict, the archive.
fn dns_archive(name: &str) -> (tempfile::TempDir, PathBuf, Value, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let rule = rules_dir().join(name);
    let want = reference(&rule, tmp.path());
    let db = tmp.path().join("db");
    import(&db, &[&tmp.path().join("dns.log")]);
    (tmp, rule, want, db)
}

/// `weir export --db DB --to json --sigma RULE`.
fn export_sigma(db: &Path, rule: &Path) -> std::process::Output {
    run(&["export", "--db", s(db), "--to", "json", "--sigma", s(rule)])
}

/// `weir COMMAND --db DB --sigma RULE`, which must refuse the rule (exit code 2): its stderr.
fn refused(command: &str, db: &Path, rule: &Path) -> String {
    let out = run(&[command, "--db", s(db), "--sigma", s(rule)]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "weir {command} must refuse {}",
        rule.display()
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The uids of the reference's matches, sorted.
fn expected_uids(want: &Value) -> Vec<String> {
    let mut expected: Vec<String> = want["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    expected.sort();
    expected
}

/// The `uid` of each JSON line of `text`, sorted; `check` is given each line (parsed, and as
/// text) first.
fn uids(text: &str, check: impl Fn(&Value, &str)) -> Vec<String> {
    let mut got: Vec<String> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            check(&v, l);
            v["uid"].as_str().unwrap().to_string()
        })
        .collect();
    got.sort();
    got
}

/// The uids of the evidence of the `weir.sighting` events of `db`, sorted; each sighting
/// must be rule `id`'s, and live.
fn sighting_uids(db: &Path, id: &str) -> Vec<String> {
    let mut got: Vec<String> = crate::live_match::sightings_with_uids(db)
        .into_iter()
        .map(|(uid, v)| {
            assert_eq!(v["matcher"], "sigma", "{v}");
            assert_eq!(v["mode"], "live", "{v}");
            assert_eq!(v["name"].as_str(), Some(id.trim()), "{v}");
            uid
        })
        .collect();
    got.sort();
    got
}

#[test]
fn every_shared_rule_matches_what_pysigma_matches() {
    if !reference_present() {
        return;
    }
    let mut compared = 0;
    let mut summary = Vec::new();
    for rule in rules() {
        let tmp = tempfile::tempdir().unwrap();
        let want = reference(&rule, tmp.path());
        let logs: Vec<PathBuf> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        let db = tmp.path().join("db");
        import(&db, &logs.iter().map(PathBuf::as_path).collect::<Vec<_>>());
        let name = rule.file_name().unwrap().to_string_lossy().to_string();
        // The same events imported with the rule matched live.
        let live_db = tmp.path().join("live");
        let mut args = vec!["import", "-q", "--db", s(&live_db), "--rules", s(&rule)];
        args.extend(logs.iter().map(|p| s(p)));
        let live = run(&args);
        if want["status"] == "refused" {
            // Keyword detections: pySigma's SQL backends refuse them, and so does weir.
            let err = refused("count", &db, &rule);
            assert!(
                err.contains(&format!("{}:", rule.display()))
                    && err.contains("unsupported sigma feature: keyword"),
                "{name}: {err}"
            );
            let err = String::from_utf8_lossy(&live.stderr);
            assert!(
                !live.status.success()
                    && err.contains(&format!("{}:", rule.display()))
                    && err.contains("unsupported sigma feature: keyword"),
                "{name}: import --rules must refuse it: {err}"
            );
            summary.push(format!("{name}: refused by both"));
            continue;
        }
        ok(&live, &format!("weir import --rules {name}"));
        let text = ok(
            &export_sigma(&db, &rule),
            &format!("weir export --sigma {name}"),
        );
        let got = uids(&text, |v, l| {
            assert!(
                v["sigma.id"].is_string() && v["sigma.title"].is_string(),
                "{l}"
            );
        });
        let expected = expected_uids(&want);
        let events = want["events"].as_u64().unwrap();
        assert!(
            !expected.is_empty() && (expected.len() as u64) < events,
            "{name}: the events hold matches and misses ({} of {events})",
            expected.len()
        );
        let missing: Vec<&String> = expected.iter().filter(|u| !got.contains(u)).collect();
        let extra: Vec<&String> = got.iter().filter(|u| !expected.contains(u)).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{name}: weir differs from pySigma: missing {missing:?}, extra {extra:?}\nSQL: {}",
            want["sql"]
        );
        // `count --sigma` agrees: COUNT, id, title.
        let counted = ok(
            &run(&["count", "--db", s(&db), "--sigma", s(&rule)]),
            "weir count --sigma",
        );
        let n: u64 = counted.split('\t').next().unwrap().parse().unwrap();
        assert_eq!(n, expected.len() as u64, "{name}: count");
        // Live matching found the same events, each once, tagged with the rule.
        let live_uids = sighting_uids(&live_db, counted.split('\t').nth(1).unwrap());
        assert_eq!(
            live_uids, expected,
            "{name}: live matching differs from pySigma"
        );
        summary.push(format!("{name}: {} of {events} events", expected.len()));
        compared += 1;
    }
    eprintln!("{}", summary.join("\n"));
    assert_eq!(compared, 20, "rules compared with pySigma");
}

#[test]
fn a_directory_of_rules_counts_each_rule() {
    if !reference_present() {
        return;
    }
    let (_tmp, rule, _, db) = dns_archive("zeek_dns_nkn.yml");
    // A directory with one refused rule is refused as a whole.
    refused("count", &db, &rules_dir());
    // Two rules: one line each; a rule whose schemas the archive lacks counts 0.
    let out = run(&[
        "count",
        "--db",
        s(&db),
        "--sigma",
        s(&rule),
        "--sigma",
        s(&rules_dir().join("zeek_susp_kerberos_rc4.yml")),
    ]);
    let text = ok(&out, "weir count --sigma");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0]
        .ends_with("\tfa7703d6-0ee8-4949-889c-48c84bc15b6f\tNew Kind of Network (NKN) Detection"));
    assert!(lines[1].starts_with("0\t503fe26e-"), "{text}");
}

#[test]
fn unsupported_features_are_positioned_errors_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let rule = tmp.path().join("agg.yml");
    import(&db, &[Path::new("/dev/null")]);
    for (command, yaml, want) in [
        (
            "count",
            "title: many queries\nid: x\nlogsource:\n  product: zeek\n  service: dns\ndetection:\n  sel:\n    query|contains: evil\n  condition: sel | count() by id.orig_h > 10\n",
            format!("{}:9: unsupported sigma feature: aggregation", rule.display()),
        ),
        (
            "export",
            "title: t\nlogsource:\n  product: zeek\n  service: dns\ndetection:\n  sel:\n    query|utf16le: evil\n  condition: sel\n",
            ":7: unsupported sigma feature: modifier `utf16le`".to_string(),
        ),
    ] {
        std::fs::write(&rule, yaml).unwrap();
        let err = refused(command, &db, &rule);
        assert!(err.contains(&want), "{err}");
    }
}

/// `nil`, which the rules' negations compile to, through the whole search: sealed segments,
/// their sketches (a batch whose field is never set has no range) and dictionaries.
#[test]
fn nil_matches_unset_values_through_the_search() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("x.log");
    let mut text = String::from(
        "#separator \\x09\n#path\tx\n#fields\tts\tuid\tn\ts\ta\tv\tnever\n#types\ttime\tstring\tcount\tstring\taddr\tvector[string]\tcount\n",
    );
    for i in 0..3000u64 {
        let set = i % 3 == 0;
        let (n, s_, a, v) = if set {
            (
                i.to_string(),
                format!("s{}", i % 7),
                "10.0.0.1".to_string(),
                "a,b".to_string(),
            )
        } else {
            ("-".into(), "-".into(), "-".into(), "-".into())
        };
        text.push_str(&format!("{i}.0\tC{i}\t{n}\t{s_}\t{a}\t{v}\t-\n"));
    }
    std::fs::write(&log, text).unwrap();
    let db = tmp.path().join("db");
    import(&db, &[&log]);
    let count = |expr: &str| -> u64 {
        ok(&run(&["count", "--db", s(&db), expr]), expr)
            .trim()
            .parse()
            .unwrap()
    };
    for f in ["n", "s", "a", "v"] {
        assert_eq!(count(&format!("{f} == nil")), 2000, "{f} == nil");
        assert_eq!(count(&format!("{f} != nil")), 1000, "{f} != nil");
        assert_eq!(count(&format!("!({f} == nil)")), 1000, "!({f} == nil)");
    }
    assert_eq!(count("never == nil"), 3000);
    assert_eq!(count("never != nil"), 0);
    assert_eq!(count("n == nil || n > 2990"), 2003);
}

/// The serve API's `"sigma"` member: the same matches as `weir export --sigma`; a rule that
/// cannot be a query is `400` naming its line and feature.
#[test]
fn the_serve_api_runs_a_rule_as_the_cli_does() {
    use crate::serve::{post, serve};
    use serde_json::json;
    if !reference_present() {
        return;
    }
    let (_tmp, rule, want, db) = dns_archive("zeek_dns_mining_pools.yml");
    let yaml = std::fs::read_to_string(&rule).unwrap();
    let srv = serve(&db, &["--listen", "127.0.0.1:0"]);
    let got = post(srv.addr, "/api/v1/count", &json!({ "sigma": yaml }));
    assert_eq!(got.status, 200, "{}", got.text());
    let n = want["matches"].as_array().unwrap().len() as u64;
    assert_eq!(got.json()["count"], n);
    let got = post(srv.addr, "/api/v1/query", &json!({ "sigma": yaml }));
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(uids(&got.text(), |_, _| {}), expected_uids(&want));
    let bad = yaml.replace(
        "condition: selection and not 1 of exclude_*",
        "condition: selection | count() > 3",
    );
    let got = post(srv.addr, "/api/v1/count", &json!({ "sigma": bad }));
    assert_eq!(got.status, 400, "{}", got.text());
    assert!(
        got.text()
            .contains("unsupported sigma feature: aggregation"),
        "{}",
        got.text()
    );
    let got = post(
        srv.addr,
        "/api/v1/count",
        &json!({ "sigma": yaml, "query": "x == 1" }),
    );
    assert_eq!(got.status, 400, "{}", got.text());
}

/// `weir explore --sigma`: a rule's matches with their context, tagged in JSON.
#[test]
fn explore_runs_a_rule_and_tags_its_events() {
    if !reference_present() {
        return;
    }
    let (_tmp, rule, want, db) = dns_archive("zeek_dns_nkn.yml");
    let out = run(&[
        "explore",
        "--db",
        s(&db),
        "--to",
        "json",
        "--by",
        "uid",
        "--sigma",
        s(&rule),
    ]);
    let text = ok(&out, "weir explore --sigma");
    let mut got = uids(&text, |v, l| {
        assert_eq!(v["sigma.id"], "fa7703d6-0ee8-4949-889c-48c84bc15b6f", "{l}");
    });
    got.dedup();
    let expected = expected_uids(&want);
    // Each uid is its own event: the context by uid is the match itself.
    assert_eq!(got, expected);
}

/// `category: dns` runs on Zeek's dns log and Suricata's dns events alike, Sigma's `query`
/// being each schema's field of the concept `net.domain`.
#[test]
fn category_dns_spans_zeek_and_suricata() {
    let tmp = tempfile::tempdir().unwrap();
    let eve = tmp.path().join("eve.json");
    std::fs::write(
        &eve,
        concat!(
            r#"{"timestamp":"2024-01-01T00:00:00.000000+0000","flow_id":1,"event_type":"dns","src_ip":"10.0.0.1","src_port":1234,"dest_ip":"10.0.0.2","dest_port":53,"proto":"UDP","dns":{"type":"query","id":1,"rrname":"www.EVIL.example","rrtype":"A","tx_id":0}}"#,
            "\n",
            r#"{"timestamp":"2024-01-01T00:00:01.000000+0000","flow_id":2,"event_type":"dns","src_ip":"10.0.0.1","src_port":1235,"dest_ip":"10.0.0.2","dest_port":53,"proto":"UDP","dns":{"type":"query","id":2,"rrname":"good.example","rrtype":"A","tx_id":0}}"#,
            "\n"
        ),
    )
    .unwrap();
    let log = tmp.path().join("dns.log");
    std::fs::write(
        &log,
        "#separator \\x09\n#path\tdns\n#fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tquery\n#types\ttime\tstring\taddr\tport\taddr\tport\tstring\n1.0\tC1\t10.0.0.1\t1\t10.0.0.2\t53\tevil.example\n2.0\tC2\t10.0.0.1\t1\t10.0.0.2\t53\tevil.example.org\n3.0\tC3\t10.0.0.1\t1\t10.0.0.2\t53\t-\n",
    )
    .unwrap();
    let rule = tmp.path().join("r.yml");
    std::fs::write(
        &rule,
        "title: evil\nid: c1\nlogsource:\n    category: dns\ndetection:\n    sel:\n        query|endswith: evil.example\n    filter:\n        query: good.example\n    condition: sel and not filter\n",
    )
    .unwrap();
    let db = tmp.path().join("db");
    import(&db, &[&log]);
    import(&db, &[&eve]);
    let text = ok(&export_sigma(&db, &rule), "weir export --sigma");
    let got: Vec<(String, String)> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let key = v["uid"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v["dns"]["rrname"].as_str().unwrap_or("?").to_string());
            (v["sigma.id"].as_str().unwrap().to_string(), key)
        })
        .collect();
    assert_eq!(
        got,
        [
            ("c1".to_string(), "C1".to_string()),
            ("c1".to_string(), "www.EVIL.example".to_string())
        ],
        "{text}"
    );
}
