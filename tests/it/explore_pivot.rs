//! `weir explore` and `weir pivot` against VAST's documented semantics, computed here by brute
//! force over every event of `weir export --to json` (the event at line i has ID i: the
//! archives are imported fresh, IDs from 0): the results of the expression (a Rust predicate
//! written independently of the query language), then each result's context or related
//! events by a scan of all events, then the union in ID order. The command's output must be
//! exactly the exported lines of those IDs, in that order: each event once, in ID order.
//!
//! On the shared Zeek corpus (conn, dns and http logs of one capture, related by uid) and on
//! generated logs that also have `files.log` in both of Zeek's forms (`conn_uids` before Zeek
//! 5, `uid` after), community IDs, unset values, and more relation values than the search's
//! pre-filter names.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use common::cli::{ok, run, s, text};
use common::rng::Rng;
use serde_json::{Map, Value};

/// Microseconds per second.
const US: i64 = 1_000_000;

/// One exported event.
struct Ev {
    id: usize,
    /// The schema name, `zeek.` and `_path`.
    schema: String,
    /// `ts` in microseconds.
    ts: Option<i64>,
    obj: Map<String, Value>,
    line: String,
}

impl Ev {
    /// The set values of the fields `name` names (the full name, or a suffix at a dot).
    fn named(&self, name: &str) -> Vec<&Value> {
        let dotted = format!(".{name}");
        self.obj
            .iter()
            .filter(|(k, v)| (*k == name || k.ends_with(&dotted)) && !v.is_null())
            .map(|(_, v)| v)
            .collect()
    }

    fn str(&self, name: &str) -> Option<&str> {
        self.obj.get(name).and_then(Value::as_str)
    }

    /// The strings of a field that holds a string or a list of strings.
    fn strings(&self, name: &str) -> Vec<&str> {
        match self.obj.get(name) {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        }
    }
}

/// Every event of the archive, in ID order.
fn load(db: &Path) -> Vec<Ev> {
    let out = run(&[
        "export",
        "--db",
        s(db),
        "--to",
        "json",
        "--json-timestamps",
        "epoch",
    ]);
    let text = ok(&out, "export");
    let info = common::cli::info(db);
    let events = text
        .lines()
        .enumerate()
        .map(|(id, line)| {
            let obj: Map<String, Value> = serde_json::from_str(line).unwrap();
            let schema = format!("zeek.{}", obj["_path"].as_str().unwrap());
            let ts = obj
                .get("ts")
                .and_then(Value::as_f64)
                .map(|t| (t * US as f64).round() as i64);
            Ev {
                id,
                schema,
                ts,
                obj,
                line: line.to_string(),
            }
        })
        .collect::<Vec<_>>();
    assert_eq!(
        info["events"].as_u64(),
        Some(events.len() as u64),
        "a fresh archive: IDs 0..N"
    );
    events
}

/// The lines of `weir ARGS` (which must succeed).
fn lines(args: &[&str]) -> Vec<String> {
    let out = run(args);
    ok(&out, &args.join(" "))
        .lines()
        .map(str::to_string)
        .collect()
}

/// The exported lines of the events `ids`.
fn expected(evs: &[Ev], ids: &BTreeSet<usize>) -> Vec<String> {
    ids.iter().map(|&i| evs[i].line.clone()).collect()
}

/// An `explore` invocation and its brute-force meaning.
struct Explore<'a> {
    expr: &'a str,
    matches: &'a dyn Fn(&Ev) -> bool,
    /// Seconds.
    before: Option<i64>,
    after: Option<i64>,
    /// `--context` (seconds), given as such.
    context: Option<i64>,
    by: Option<&'a str>,
    /// `--for`, each item given as one argument (commas inside are the command's to split).
    types: &'a [&'a str],
    max_query: Option<usize>,
    max_context: Option<usize>,
    max_events: Option<usize>,
}

impl Default for Explore<'_> {
    fn default() -> Self {
        Explore {
            expr: "",
            matches: &|_| false,
            before: None,
            after: None,
            context: None,
            by: None,
            types: &[],
            max_query: None,
            max_context: None,
            max_events: None,
        }
    }
}

/// What the brute force found besides the IDs: the sum of the contexts' sizes (to see that
/// contexts overlapped, and that caps bit).
struct Found {
    ids: BTreeSet<usize>,
    origins: usize,
    context_sum: usize,
    uncapped_sum: usize,
}

impl Explore<'_> {
    fn args(&self, db: &Path) -> Vec<String> {
        let mut a: Vec<String> = ["explore", "--db", s(db), "--to", "json"]
            .iter()
            .map(|x| x.to_string())
            .collect();
        a.extend(["--json-timestamps".into(), "epoch".into()]);
        let mut push = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                a.push(k.to_string());
                a.push(v);
            }
        };
        push("--before", self.before.map(|x| format!("{x}s")));
        push("--after", self.after.map(|x| format!("{x}s")));
        push("--context", self.context.map(|x| format!("{x}s")));
        push("--by", self.by.map(str::to_string));
        push("--max-events-query", self.max_query.map(|x| x.to_string()));
        push(
            "--max-events-context",
            self.max_context.map(|x| x.to_string()),
        );
        push("-n", self.max_events.map(|x| x.to_string()));
        for t in self.types {
            a.push("--for".into());
            a.push(t.to_string());
        }
        a.push(self.expr.to_string());
        a
    }

    /// VAST's semantics, by brute force.
    fn brute(&self, evs: &[Ev]) -> Found {
        let before = self.before.or(self.context).map(|x| x * US);
        let after = self.after.or(self.context).map(|x| x * US);
        let window = match (before, after) {
            (None, None) => None,
            (b, a) => Some((b.unwrap_or(0), a.unwrap_or(0))),
        };
        let types: Vec<&str> = self.types.iter().flat_map(|t| t.split(',')).collect();
        let results = evs
            .iter()
            .filter(|e| (self.matches)(e))
            .take(self.max_query.unwrap_or(100));
        let mut found = Found {
            ids: BTreeSet::new(),
            origins: 0,
            context_sum: 0,
            uncapped_sum: 0,
        };
        for r in results {
            let Some(t) = r.ts else { continue };
            let key = match self.by {
                None => None,
                Some(by) => match r.named(by).first() {
                    Some(v) => Some((*v).clone()),
                    None => continue,
                },
            };
            found.origins += 1;
            let context: Vec<usize> =
                evs.iter()
                    .filter(|e| types.is_empty() || types.contains(&e.schema.as_str()))
                    .filter(|e| match (window, e.ts) {
                        (None, _) => true,
                        (Some((b, a)), Some(et)) => t - b <= et && et <= t + a,
                        (Some(_), None) => false,
                    })
                    .filter(|e| match (&key, self.by) {
                        (Some(k), Some(by)) => e.named(by).into_iter().any(|v| {
                            v == k || matches!(v, Value::Array(items) if items.contains(k))
                        }),
                        _ => true,
                    })
                    .map(|e| e.id)
                    .collect();
            let cap = self.max_context.unwrap_or(100);
            found.uncapped_sum += context.len();
            found.context_sum += context.len().min(cap);
            found.ids.extend(context.into_iter().take(cap));
        }
        if let Some(n) = self.max_events {
            found.ids = found.ids.into_iter().take(n).collect();
        }
        found
    }

    /// Runs it and compares; returns the brute force's findings.
    fn check(&self, db: &Path, evs: &[Ev]) -> Found {
        let found = self.brute(evs);
        let args = self.args(db);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = lines(&args);
        let want = expected(evs, &found.ids);
        assert_eq!(
            got.len(),
            want.len(),
            "weir {}: {} events, brute force {}",
            args.join(" "),
            got.len(),
            want.len()
        );
        assert!(got == want, "weir {}: other events", args.join(" "));
        found
    }
}

/// VAST's pivot with the uid / community ID relation, by brute force: by uid between two Zeek
/// types that have one, else by community ID (the target's own, or, when it has none but a
/// uid, through the uids of the `zeek.conn` events with that community ID), else by uid.
fn brute_pivot(
    evs: &[Ev],
    target: &str,
    matches: &dyn Fn(&Ev) -> bool,
) -> (BTreeSet<usize>, usize, usize) {
    // Whether some event of `schema` has one of `keys` (a field of the schema).
    let has = |schema: &str, keys: &[&str]| {
        evs.iter()
            .any(|e| e.schema == schema && keys.iter().any(|k| e.obj.contains_key(*k)))
    };
    let target_has_cid = has(target, &["community_id"]);
    let target_has_uid = has(target, &["uid", "conn_uids"]);
    let mut cids: HashSet<&str> = HashSet::new();
    let mut uids: HashSet<&str> = HashSet::new();
    let mut hop: HashSet<&str> = HashSet::new();
    for r in evs.iter().filter(|e| matches(e)) {
        let zeek_pair = target.starts_with("zeek.")
            && r.schema.starts_with("zeek.")
            && target_has_uid
            && has(&r.schema, &["uid", "conn_uids"]);
        match r.str("community_id").filter(|_| !zeek_pair) {
            Some(c) if target_has_cid => {
                cids.insert(c);
            }
            Some(c) if target_has_uid => {
                hop.insert(c);
            }
            _ => {
                uids.extend(r.strings("uid"));
                uids.extend(r.strings("conn_uids"));
            }
        }
    }
    for e in evs.iter().filter(|e| e.schema == "zeek.conn") {
        if e.str("community_id").is_some_and(|c| hop.contains(c)) {
            uids.extend(e.strings("uid"));
        }
    }
    let ids = evs
        .iter()
        .filter(|e| e.schema == target)
        .filter(|e| {
            e.str("community_id").is_some_and(|c| cids.contains(c))
                || e.strings("uid").iter().any(|u| uids.contains(u))
                || e.strings("conn_uids").iter().any(|u| uids.contains(u))
        })
        .map(|e| e.id)
        .collect();
    (ids, cids.len(), uids.len())
}

fn check_pivot(
    db: &Path,
    evs: &[Ev],
    target: &str,
    expr: &str,
    matches: &dyn Fn(&Ev) -> bool,
    extra: &[&str],
) -> (usize, usize, usize) {
    let (ids, cids, uids) = brute_pivot(evs, target, matches);
    let mut args = vec![
        "pivot",
        "--db",
        s(db),
        "--to",
        "json",
        "--json-timestamps",
        "epoch",
    ];
    args.extend_from_slice(extra);
    args.extend([target, expr]);
    let got = lines(&args);
    let mut want = expected(evs, &ids);
    if let Some(i) = extra.iter().position(|a| *a == "-n") {
        want.truncate(extra[i + 1].parse().unwrap());
    }
    assert_eq!(got.len(), want.len(), "weir {}", args.join(" "));
    assert!(got == want, "weir {}: other events", args.join(" "));
    (want.len(), cids, uids)
}

fn corpus_db(tmp: &Path) -> Option<std::path::PathBuf> {
    let dir = common::corpus::dir()?;
    let db = tmp.join("db");
    let files: Vec<String> = ["conn.log.gz", "dns.log.gz", "http.log.gz"]
        .iter()
        .map(|f| dir.join(f).display().to_string())
        .collect();
    let mut args = vec!["import", "-q", "--db", s(&db)];
    args.extend(files.iter().map(String::as_str));
    ok(&run(&args), "import the corpus");
    Some(db)
}

#[test]
fn explore_on_the_corpus_matches_brute_force() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(db) = corpus_db(tmp.path()) else {
        return;
    };
    let evs = load(&db);
    let post = |e: &Ev| e.schema == "zeek.http" && e.str("method") == Some("POST");
    let web = |e: &Ev| {
        e.schema == "zeek.conn"
            && e.obj.get("id.resp_p").and_then(Value::as_u64) == Some(80)
            && e.str("id.orig_h") == Some("192.168.1.104")
    };

    // After only; the default limits (100 results of 474).
    let f = Explore {
        expr: "zeek.http.method == \"POST\"",
        matches: &post,
        after: Some(2),
        ..Explore::default()
    }
    .check(&db, &evs);
    assert_eq!(f.origins, 100);
    assert!(
        f.context_sum > f.ids.len(),
        "contexts overlap: each event once"
    );

    // Before and after, by the originator: contexts of the same host overlap.
    let f = Explore {
        expr: "zeek.conn.id.resp_p == 80 && zeek.conn.id.orig_h == 192.168.1.104",
        matches: &web,
        before: Some(1),
        after: Some(3),
        by: Some("id.orig_h"),
        max_query: Some(30),
        ..Explore::default()
    }
    .check(&db, &evs);
    assert!(f.context_sum > f.ids.len() && !f.ids.is_empty());

    // --context with --for as a comma list and repeated; a suffix as --by.
    for types in [&["zeek.dns,zeek.http"][..], &["zeek.dns", "zeek.http"][..]] {
        let f = Explore {
            expr: "zeek.http.method == \"POST\"",
            matches: &post,
            context: Some(5),
            by: Some("orig_h"),
            types,
            max_query: Some(50),
            ..Explore::default()
        }
        .check(&db, &evs);
        assert!(f.ids.iter().any(|&i| evs[i].schema == "zeek.dns"));
        assert!(f.ids.iter().all(|&i| evs[i].schema != "zeek.conn"));
    }

    // --by alone: no time bound; every event of the same uid (conn, http).
    let f = Explore {
        expr: "zeek.conn.id.resp_p == 80 && zeek.conn.id.orig_h == 192.168.1.104",
        matches: &web,
        by: Some("uid"),
        max_query: Some(20),
        ..Explore::default()
    }
    .check(&db, &evs);
    assert!(f.ids.iter().any(|&i| evs[i].schema == "zeek.http"));

    // The caps: per context, the results taken, and in all.
    let f = Explore {
        expr: "zeek.http.method == \"POST\"",
        matches: &post,
        context: Some(10),
        max_query: Some(40),
        max_context: Some(3),
        ..Explore::default()
    }
    .check(&db, &evs);
    assert!(f.uncapped_sum > f.context_sum, "the context cap bites");
    let all = Explore {
        expr: "zeek.http.method == \"POST\"",
        matches: &post,
        context: Some(10),
        max_query: Some(40),
        max_context: Some(3),
        max_events: Some(25),
        ..Explore::default()
    }
    .check(&db, &evs);
    assert_eq!(all.ids.len(), 25);
}

#[test]
fn pivot_on_the_corpus_matches_brute_force() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(db) = corpus_db(tmp.path()) else {
        return;
    };
    let evs = load(&db);
    // conn -> http, a few uids (named in the search's pre-filter).
    let host = |e: &Ev| {
        e.schema == "zeek.conn"
            && e.str("id.orig_h") == Some("192.168.1.103")
            && e.obj.get("id.resp_p").and_then(Value::as_u64) == Some(80)
            && e.obj
                .get("ts")
                .and_then(Value::as_f64)
                .is_some_and(|t| t < 1_258_560_000.0)
    };
    let (n, _, uids) = check_pivot(
        &db,
        &evs,
        "zeek.http",
        "zeek.conn.id.orig_h == 192.168.1.103 && zeek.conn.id.resp_p == 80 && zeek.conn.ts < 2009-11-18T16:00:00Z",
        &host,
        &[],
    );
    assert!(n > 0 && uids > 0 && uids <= 256, "{n} events, {uids} uids");
    // http -> conn, more uids than the pre-filter names.
    let post = |e: &Ev| e.schema == "zeek.http" && e.str("method") == Some("POST");
    let (n, _, uids) = check_pivot(
        &db,
        &evs,
        "zeek.conn",
        "zeek.http.method == \"POST\"",
        &post,
        &[],
    );
    assert!(n > 0 && uids > 256, "{n} events, {uids} uids");
    // conn -> dns, capped.
    let udp = |e: &Ev| e.schema == "zeek.conn" && e.str("id.orig_h") == Some("192.168.1.103");
    let (n, ..) = check_pivot(
        &db,
        &evs,
        "zeek.dns",
        "zeek.conn.id.orig_h == 192.168.1.103",
        &udp,
        &["-n", "7"],
    );
    assert_eq!(n, 7);
}

/// Writes a Zeek TSV log.
fn write_log(path: &Path, log: &str, fields: &[(&str, &str)], rows: &[Vec<String>]) {
    let mut t = String::from(
        "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n",
    );
    t.push_str(&format!("#path\t{log}\n#fields"));
    for (f, _) in fields {
        t.push_str(&format!("\t{f}"));
    }
    t.push_str("\n#types");
    for (_, ty) in fields {
        t.push_str(&format!("\t{ty}"));
    }
    t.push('\n');
    for r in rows {
        t.push_str(&r.join("\t"));
        t.push('\n');
    }
    std::fs::write(path, t).unwrap();
}

/// Generated logs: conn (community IDs on most rows), http, files in Zeek's old form
/// (`conn_uids`) and new form (`uid`), and a `flow` log related by community ID alone.
fn generated_db(tmp: &Path) -> std::path::PathBuf {
    let mut rng = Rng(0x5eed_0033);
    let base = 1_258_531_200i64;
    let time = |rng: &mut Rng| {
        format!(
            "{}.{:06}",
            base + rng.below(600) as i64,
            rng.below(1_000_000)
        )
    };
    let conns = 1500;
    let uid = |i: u64| format!("C{i:05}");
    let cid = |i: u64| format!("1:cid{i:03}=");
    let mut conn = Vec::new();
    for i in 0..conns {
        let c = if rng.below(10) < 7 {
            cid(rng.below(300))
        } else {
            "-".into()
        };
        conn.push(vec![
            time(&mut rng),
            uid(i),
            c,
            format!("10.0.0.{}", rng.below(8)),
            format!("{}", 1024 + rng.below(60000)),
            format!("192.168.0.{}", rng.below(20)),
            ["80", "443", "53"][rng.below(3) as usize].to_string(),
        ]);
    }
    let mut http = Vec::new();
    for _ in 0..900 {
        http.push(vec![
            time(&mut rng),
            uid(rng.below(conns + 100)),
            format!("10.0.0.{}", rng.below(8)),
            ["GET", "POST"][rng.below(2) as usize].to_string(),
        ]);
    }
    let mut old = Vec::new();
    for i in 0..400 {
        let n = 1 + rng.below(3);
        let us: Vec<String> = (0..n).map(|_| uid(rng.below(conns))).collect();
        old.push(vec![
            time(&mut rng),
            format!("F{i}"),
            us.join(","),
            "text/plain".into(),
        ]);
    }
    let mut new = Vec::new();
    for i in 0..300 {
        let u = if rng.below(10) == 0 {
            "-".into()
        } else {
            uid(rng.below(conns))
        };
        new.push(vec![time(&mut rng), format!("G{i}"), u, "text/html".into()]);
    }
    let mut flow = Vec::new();
    for _ in 0..500 {
        flow.push(vec![
            time(&mut rng),
            cid(rng.below(400)),
            format!("10.0.0.{}", rng.below(8)),
        ]);
    }
    let d = tmp.join("logs");
    std::fs::create_dir_all(&d).unwrap();
    let conn_fields = [
        ("ts", "time"),
        ("uid", "string"),
        ("community_id", "string"),
        ("id.orig_h", "addr"),
        ("id.orig_p", "port"),
        ("id.resp_h", "addr"),
        ("id.resp_p", "port"),
    ];
    write_log(&d.join("conn.log"), "conn", &conn_fields, &conn);
    let http_fields = [
        ("ts", "time"),
        ("uid", "string"),
        ("id.orig_h", "addr"),
        ("method", "string"),
    ];
    write_log(&d.join("http.log"), "http", &http_fields, &http);
    let old_fields = [
        ("ts", "time"),
        ("fuid", "string"),
        ("conn_uids", "set[string]"),
        ("mime_type", "string"),
    ];
    write_log(&d.join("files_old.log"), "files", &old_fields, &old);
    let new_fields = [
        ("ts", "time"),
        ("fuid", "string"),
        ("uid", "string"),
        ("mime_type", "string"),
    ];
    write_log(&d.join("files_new.log"), "files", &new_fields, &new);
    let flow_fields = [("ts", "time"), ("community_id", "string"), ("src", "addr")];
    write_log(&d.join("flow.log"), "flow", &flow_fields, &flow);
    let db = tmp.join("db");
    let mut args = vec![
        "import".to_string(),
        "-q".into(),
        "--db".into(),
        s(&db).into(),
    ];
    for f in [
        "conn.log",
        "http.log",
        "files_old.log",
        "files_new.log",
        "flow.log",
    ] {
        args.push(d.join(f).display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&run(&args), "import generated logs");
    db
}

#[test]
fn pivot_on_generated_logs_relates_by_uid_conn_uids_and_community_id() {
    let tmp = tempfile::tempdir().unwrap();
    let db = generated_db(tmp.path());
    let evs = load(&db);
    let conn_of =
        |h: &'static str| move |e: &Ev| e.schema == "zeek.conn" && e.str("id.orig_h") == Some(h);

    // conn -> files: old files by conn_uids, new ones by uid (few values: pre-filtered).
    let few = |e: &Ev| conn_of("10.0.0.3")(e) && e.str("id.resp_h") == Some("192.168.0.7");
    let (n, cids, uids) = check_pivot(
        &db,
        &evs,
        "zeek.files",
        "zeek.conn.id.orig_h == 10.0.0.3 && zeek.conn.id.resp_h == 192.168.0.7",
        &few,
        &[],
    );
    assert!(
        n > 0 && cids == 0 && uids > 0 && uids <= 256,
        "{n} {cids} {uids}"
    );
    // The same over many values (tested on rows alone); both forms of files are reached.
    let many = conn_of("10.0.0.3");
    let (ids, ..) = brute_pivot(&evs, "zeek.files", &many);
    assert!(ids.iter().any(|&i| evs[i].obj.contains_key("conn_uids")));
    assert!(ids.iter().any(|&i| evs[i].obj.contains_key("uid")));
    let (n, _, uids) = check_pivot(
        &db,
        &evs,
        "zeek.files",
        "zeek.conn.id.orig_h == 10.0.0.3",
        &many,
        &[],
    );
    assert!(n > 0 && uids > 100, "{n} {uids}");

    // files -> conn: by conn_uids and uid (files have no community ID).
    let files = |e: &Ev| e.schema == "zeek.files";
    let (n, cids, _) = check_pivot(
        &db,
        &evs,
        "zeek.conn",
        "#type == \"zeek.files\"",
        &files,
        &[],
    );
    assert!(n > 0 && cids == 0);

    // conn -> flow: by community ID where set (flow has no uid), else by uid (which relates
    // nothing there); conn -> conn: by uid, as between any two Zeek types (VAST's rule),
    // community IDs notwithstanding; http -> conn by uid.
    let m = conn_of("10.0.0.5");
    let expr = "zeek.conn.id.orig_h == 10.0.0.5";
    let (n, cids, uids) = check_pivot(&db, &evs, "zeek.flow", expr, &m, &[]);
    assert!(
        n > 0 && cids > 0 && uids > 0,
        "zeek.flow: {n} {cids} {uids}"
    );
    let (n, cids, uids) = check_pivot(&db, &evs, "zeek.conn", expr, &m, &[]);
    assert!(
        n > 0 && cids == 0 && uids > 0,
        "zeek.conn: {n} {cids} {uids}"
    );
    // flow -> http: two hops, community ID to the conn events, their uids to http.
    let flows = |e: &Ev| e.schema == "zeek.flow" && e.str("src") == Some("10.0.0.1");
    let (n, cids, uids) = check_pivot(
        &db,
        &evs,
        "zeek.http",
        "zeek.flow.src == 10.0.0.1",
        &flows,
        &[],
    );
    assert!(
        n > 0 && cids == 0 && uids > 0,
        "zeek.http: {n} {cids} {uids}"
    );
    let post = |e: &Ev| e.schema == "zeek.http" && e.str("method") == Some("POST");
    let (n, ..) = check_pivot(
        &db,
        &evs,
        "zeek.conn",
        "zeek.http.method == \"POST\"",
        &post,
        &["-n", "50"],
    );
    assert_eq!(n, 50);

    // A type the archive lacks: nothing, and a warning.
    let out = run(&[
        "pivot",
        "--db",
        s(&db),
        "zeek.dns",
        "zeek.conn.id.orig_h == 10.0.0.5",
    ]);
    assert!(out.status.success() && out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains("no events of type"),
        "{}",
        text(&out.stderr)
    );
    // Too many relation values for --max-keys: an error, not a silent cut.
    let out = run(&[
        "pivot",
        "--db",
        s(&db),
        "--max-keys",
        "10",
        "zeek.conn",
        "#type == \"zeek.http\"",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("more than 10"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn explore_on_generated_logs_and_refused_options() {
    let tmp = tempfile::tempdir().unwrap();
    let db = generated_db(tmp.path());
    let evs = load(&db);
    let post = |e: &Ev| e.schema == "zeek.http" && e.str("method") == Some("POST");
    // Overlapping windows by address across conn and http; files have no id.orig_h.
    let f = Explore {
        expr: "zeek.http.method == \"POST\"",
        matches: &post,
        context: Some(20),
        by: Some("id.orig_h"),
        types: &["zeek.conn,zeek.http"],
        max_query: Some(60),
        max_context: Some(1000),
        ..Explore::default()
    }
    .check(&db, &evs);
    assert!(f.context_sum > f.ids.len() && f.origins == 60);
    // --by a uid without a time bound reaches the files of the new form; --before alone.
    let conn = |e: &Ev| e.schema == "zeek.conn" && e.str("id.orig_h") == Some("10.0.0.1");
    Explore {
        expr: "zeek.conn.id.orig_h == 10.0.0.1",
        matches: &conn,
        by: Some("uid"),
        ..Explore::default()
    }
    .check(&db, &evs);
    Explore {
        expr: "zeek.conn.id.orig_h == 10.0.0.1",
        matches: &conn,
        before: Some(3),
        max_query: Some(500),
        max_context: Some(2),
        max_events: Some(300),
        ..Explore::default()
    }
    .check(&db, &evs);

    // VAST's refusals: no constraint; a zero window without --by; a bad duration.
    for args in [
        &["explore", "--db", s(&db), "zeek.conn.id.orig_h == 10.0.0.1"][..],
        &[
            "explore",
            "--db",
            s(&db),
            "--after",
            "0s",
            "zeek.conn.id.orig_h == 10.0.0.1",
        ][..],
        &[
            "explore",
            "--db",
            s(&db),
            "--after",
            "5",
            "zeek.conn.id.orig_h == 10.0.0.1",
        ][..],
        &[
            "explore",
            "--db",
            s(&db),
            "--by",
            "x y",
            "zeek.conn.id.orig_h == 10.0.0.1",
        ][..],
        &[
            "explore",
            "--db",
            s(&db),
            "-A",
            "1s",
            "zeek.conn.id.orig_h ==",
        ][..],
    ] {
        let out = run(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    // A --for type the archive lacks: a warning.
    let out = run(&[
        "explore",
        "--db",
        s(&db),
        "-A",
        "1s",
        "--for",
        "zeek.dns",
        "zeek.conn.id.orig_h == 10.0.0.1",
    ]);
    assert!(out.status.success() && out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains("no events of type"),
        "{}",
        text(&out.stderr)
    );
    // The help texts carry examples.
    for cmd in ["explore", "pivot"] {
        let help = ok(&run(&[cmd, "--help"]), "help");
        assert!(
            help.contains("Examples:") && help.contains(&format!("weir {cmd} ")),
            "{help}"
        );
    }
}
