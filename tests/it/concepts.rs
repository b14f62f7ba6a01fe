//! Concepts and models (issue 57, VAST 2021's taxonomies) on a mixed archive: Zeek TSV logs
//! (`conn`, `dns`, `http`, `ssl`, `files`) and a Suricata EVE file (`flow`, `alert`, `dns`,
//! `http`, `tls`, `fileinfo`) of the same hosts, generated here. Each concept and model
//! query is compared with its disjunction expanded by hand over the schemas' own field names
//! (schema-qualified where a plain name would reach further, as `src_ip` reaches
//! `flow.src_ip` of an alert): the counts, and the exported events as text, are equal. The
//! alerts' `flow.src_ip` is the flow's other end, so a concept that took field names as
//! suffixes would differ. Operators (`summarize ... by`, `top`, `select`) read, per schema,
//! the concept's field, their column named by the concept. A user's concepts file extends the
//! shipped table through `weir --concepts`; a bad one is an error naming the file and line.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow_array::{Array, RecordBatch};
use weir::unstable::query::Query;
use weir::{Db, OutputFormat};

use crate::common::cli::{ok, run, s, text};

const SRC: [&str; 4] = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"];
const DST: [&str; 3] = ["10.0.1.1", "10.0.1.2", "10.0.1.3"];
const DPORT: [u16; 3] = [80, 443, 53];
const DOMAINS: [&str; 3] = ["example.com", "weir.test", "evil.test"];
/// The EVE event types of the file, in the order they repeat.
const EVE_TYPES: [&str; 6] = ["flow", "alert", "dns", "http", "tls", "fileinfo"];

/// A Zeek TSV log of `path` with `fields` (name, type) and `rows`.
fn zeek_log(path: &str, fields: &[(&str, &str)], rows: &[Vec<String>]) -> String {
    let names: Vec<&str> = fields.iter().map(|f| f.0).collect();
    let types: Vec<&str> = fields.iter().map(|f| f.1).collect();
    let mut out = format!(
        "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\t{path}\n#fields\t{}\n#types\t{}\n",
        names.join("\t"),
        types.join("\t")
    );
    for r in rows {
        out.push_str(&r.join("\t"));
        out.push('\n');
    }
    out
}

const ID: [(&str, &str); 6] = [
    ("ts", "time"),
    ("uid", "string"),
    ("id.orig_h", "addr"),
    ("id.orig_p", "port"),
    ("id.resp_h", "addr"),
    ("id.resp_p", "port"),
];

/// `ts uid id.*` of Zeek event `i` of a log.
fn zeek_id(i: usize) -> Vec<String> {
    vec![
        format!("{}.5", 1_700_000_000 + i),
        format!("C{i:05}"),
        SRC[i % 4].into(),
        (40000 + i).to_string(),
        DST[i % 3].into(),
        DPORT[i % 3].to_string(),
    ]
}

fn with(fields: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    ID.iter().chain(fields).copied().collect()
}

/// The Zeek logs, as (file name, text).
fn zeek_logs() -> Vec<(&'static str, String)> {
    let conn = (0..30)
        .map(|i| {
            let mut r = zeek_id(i);
            let resp_bytes = if i % 5 == 0 {
                "-".into()
            } else {
                (i * 7).to_string()
            };
            r.extend([
                if DPORT[i % 3] == 53 { "udp" } else { "tcp" }.to_string(),
                ["http", "ssl", "dns"][i % 3].to_string(),
                format!("{i}.25"),
                (i * 10).to_string(),
                resp_bytes,
                (i % 6).to_string(),
                ((i * 2) % 6).to_string(),
                format!("1:cid{}", i % 5),
            ]);
            r
        })
        .collect::<Vec<_>>();
    let conn = zeek_log(
        "conn",
        &with(&[
            ("proto", "enum"),
            ("service", "string"),
            ("duration", "interval"),
            ("orig_bytes", "count"),
            ("resp_bytes", "count"),
            ("orig_pkts", "count"),
            ("resp_pkts", "count"),
            ("community_id", "string"),
        ]),
        &conn,
    );
    let dns = (0..12)
        .map(|i| {
            let mut r = zeek_id(i + 100);
            r.extend(["udp".to_string(), DOMAINS[i % 3].to_string()]);
            r
        })
        .collect::<Vec<_>>();
    let dns = zeek_log(
        "dns",
        &with(&[("proto", "enum"), ("query", "string")]),
        &dns,
    );
    let http = (0..12)
        .map(|i| {
            let mut r = zeek_id(i + 200);
            r.extend([
                DOMAINS[(i + 1) % 3].to_string(),
                format!("/p{}", i % 4),
                format!("UA{}", i % 2),
            ]);
            r
        })
        .collect::<Vec<_>>();
    let http = zeek_log(
        "http",
        &with(&[
            ("host", "string"),
            ("uri", "string"),
            ("user_agent", "string"),
        ]),
        &http,
    );
    let ssl = (0..9)
        .map(|i| {
            let mut r = zeek_id(i + 300);
            r.push(DOMAINS[(i + 2) % 3].to_string());
            r
        })
        .collect::<Vec<_>>();
    let ssl = zeek_log("ssl", &with(&[("server_name", "string")]), &ssl);
    let files = (0..6)
        .map(|i| {
            let mut r = zeek_id(i + 400);
            r.extend([
                format!("md5-{}", i % 3),
                format!("sha1-{}", i % 3),
                format!("sha256-{}", i % 3),
            ]);
            r
        })
        .collect::<Vec<_>>();
    let files = zeek_log(
        "files",
        &with(&[("md5", "string"), ("sha1", "string"), ("sha256", "string")]),
        &files,
    );
    vec![
        ("conn.log", conn),
        ("dns.log", dns),
        ("http.log", http),
        ("ssl.log", ssl),
        ("files.log", files),
    ]
}

/// The EVE file: 36 events, each type of [`EVE_TYPES`] in turn.
fn eve() -> String {
    let mut out = String::new();
    for i in 0..36usize {
        let ty = EVE_TYPES[i % EVE_TYPES.len()];
        // The how-manyth event of its type: what its application fields vary by.
        let k = i / EVE_TYPES.len();
        let (src, dst, dport) = (SRC[(i + 1) % 4], DST[(i + 1) % 3], DPORT[(i + 1) % 3]);
        let proto = if dport == 53 { "UDP" } else { "TCP" };
        let app = ["http", "tls", "dns"][(i + 1) % 3];
        let mut e = serde_json::json!({
            "timestamp": format!("2023-11-14T22:13:{:02}.000000+0000", i),
            "flow_id": i + 1,
            "event_type": ty,
            "src_ip": src,
            "src_port": 50000 + i,
            "dest_ip": dst,
            "dest_port": dport,
            "proto": proto,
            "app_proto": app,
            "community_id": format!("1:cid{}", i % 5),
        });
        let body = match ty {
            "flow" => serde_json::json!({
                "pkts_toserver": i % 6, "pkts_toclient": (i + 3) % 6,
                "bytes_toserver": i * 10, "bytes_toclient": i * 7,
                "start": "2023-11-14T22:13:00.000000+0000",
                "end": "2023-11-14T22:14:00.000000+0000", "age": 60
            }),
            // The flow of an alert is written from its other end.
            "alert" => {
                e["alert"] = serde_json::json!({"signature_id": 2000 + i, "signature": "test"});
                serde_json::json!({
                    "src_ip": dst, "dest_ip": src, "src_port": dport, "dest_port": 50000 + i,
                    "pkts_toserver": (i + 1) % 6, "pkts_toclient": i % 6,
                    "bytes_toserver": i * 11, "bytes_toclient": i * 3
                })
            }
            "dns" => {
                serde_json::json!({"type": "query", "id": i, "rrname": DOMAINS[k % 3], "rrtype": "A"})
            }
            "http" => serde_json::json!({
                "hostname": DOMAINS[(k + 2) % 3], "url": format!("/p{}", k % 4),
                "http_user_agent": format!("UA{}", k % 2), "status": 200
            }),
            "tls" => serde_json::json!({"sni": DOMAINS[k % 3], "version": "TLS 1.3"}),
            _ => serde_json::json!({
                "filename": "/f", "md5": format!("md5-{}", k % 3),
                "sha1": format!("sha1-{}", k % 3), "sha256": format!("sha256-{}", k % 3),
                "size": 10, "state": "CLOSED"
            }),
        };
        let key = if ty == "alert" { "flow" } else { ty };
        e[key] = body;
        out.push_str(&e.to_string());
        out.push('\n');
    }
    out
}

/// The mixed archive in `dir/db`.
fn archive(dir: &Path) -> PathBuf {
    let db = dir.join("db");
    let mut zeek: Vec<String> = Vec::new();
    for (name, body) in zeek_logs() {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        zeek.push(p.to_str().unwrap().to_string());
    }
    let mut args = vec!["import", "-q", "--db", s(&db)];
    args.extend(zeek.iter().map(String::as_str));
    ok(&run(&args), "import zeek");
    let eve_path = dir.join("eve.json");
    std::fs::write(&eve_path, eve()).unwrap();
    ok(
        &run(&[
            "import",
            "-q",
            "--db",
            s(&db),
            "--from",
            "suricata",
            s(&eve_path),
        ]),
        "import eve",
    );
    db
}

/// `FIELD op value` over the Suricata schemas `types`, qualified (`suricata.flow.src_ip`).
fn sur(types: &[&str], field: &str, op: &str, value: &str) -> String {
    let parts: Vec<String> = types
        .iter()
        .map(|t| format!("suricata.{t}.{field} {op} {value}"))
        .collect();
    format!("({})", parts.join(" || "))
}

/// The JSON lines `db` writes for `text`.
fn exported(db: &Db, text: &str) -> String {
    let mut out = Vec::new();
    db.query(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .write(OutputFormat::Json, &mut out)
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    String::from_utf8(out).unwrap()
}

fn count(db: &Db, text: &str) -> u64 {
    db.query(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .count()
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The schemas of the events `text` matches, with their counts.
fn schemas_of(db: &Db, text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in exported(db, &format!("{text} | summarize n=count() by #type")).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        out.insert(
            v["#type"].as_str().unwrap().to_string(),
            v["n"].as_u64().unwrap(),
        );
    }
    out
}

/// Asserts that `concept` and `expanded` match the same events (counts and exports), and
/// returns the count.
fn same(db: &Db, concept: &str, expanded: &str) -> u64 {
    let n = count(db, concept);
    assert_eq!(n, count(db, expanded), "count of {concept} vs {expanded}");
    let a = exported(db, concept);
    assert_eq!(
        a,
        exported(db, expanded),
        "export of {concept} vs {expanded}"
    );
    assert_eq!(a.lines().count() as u64, n, "{concept}");
    n
}

const ALL_EVE: [&str; 6] = EVE_TYPES;
const FLOWS: [&str; 2] = ["flow", "alert"];

#[test]
fn concept_queries_equal_their_disjunctions_by_hand() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(archive(tmp.path())).unwrap();
    let total = count(&db, "");
    assert_eq!(total, 30 + 12 + 12 + 9 + 6 + 36);
    let a = "10.0.0.1";
    let cases: Vec<(String, String)> = vec![
        (
            format!("net.src.ip == {a}"),
            format!("id.orig_h == {a} || {}", sur(&ALL_EVE, "src_ip", "==", a)),
        ),
        (
            format!("net.src.ip != {a}"),
            format!("id.orig_h != {a} || {}", sur(&ALL_EVE, "src_ip", "!=", a)),
        ),
        (
            format!("!(net.src.ip == {a})"),
            format!("id.orig_h != {a} || {}", sur(&ALL_EVE, "src_ip", "!=", a)),
        ),
        (
            "net.dst.ip in 10.0.1.0/31".into(),
            format!(
                "id.resp_h in 10.0.1.0/31 || {}",
                sur(&ALL_EVE, "dest_ip", "in", "10.0.1.0/31")
            ),
        ),
        (
            "net.src.port >= 50010 || net.dst.port == 443".into(),
            format!(
                "id.orig_p >= 50010 || {} || id.resp_p == 443 || {}",
                sur(&ALL_EVE, "src_port", ">=", "50010"),
                sur(&ALL_EVE, "dest_port", "==", "443")
            ),
        ),
        (
            "net.domain == \"evil.test\"".into(),
            "zeek.dns.query == \"evil.test\" || zeek.http.host == \"evil.test\" \
             || zeek.ssl.server_name == \"evil.test\" || suricata.dns.dns.rrname == \"evil.test\" \
             || suricata.http.http.hostname == \"evil.test\" || suricata.tls.tls.sni == \"evil.test\""
                .into(),
        ),
        (
            "\"weir\" in net.domain".into(),
            "zeek.dns.query ni \"weir\" || zeek.http.host ni \"weir\" \
             || zeek.ssl.server_name ni \"weir\" || suricata.dns.dns.rrname ni \"weir\" \
             || suricata.http.http.hostname ni \"weir\" || suricata.tls.tls.sni ni \"weir\""
                .into(),
        ),
        (
            "net.packets == 3".into(),
            format!(
                "zeek.conn.orig_pkts == 3 || zeek.conn.resp_pkts == 3 || {} || {}",
                sur(&FLOWS, "flow.pkts_toserver", "==", "3"),
                sur(&FLOWS, "flow.pkts_toclient", "==", "3")
            ),
        ),
        // The negation of the disjunction: in a schema with two fields of the concept,
        // neither may equal the value.
        (
            "net.packets != 3".into(),
            "(zeek.conn.orig_pkts != 3 && zeek.conn.resp_pkts != 3) \
             || (suricata.flow.flow.pkts_toserver != 3 && suricata.flow.flow.pkts_toclient != 3) \
             || (suricata.alert.flow.pkts_toserver != 3 && suricata.alert.flow.pkts_toclient != 3)"
                .into(),
        ),
        (
            "net.bytes_out > 100 && net.bytes_in < 100".into(),
            format!(
                "(zeek.conn.orig_bytes > 100 || {}) && (zeek.conn.resp_bytes < 100 || {})",
                sur(&FLOWS, "flow.bytes_toserver", ">", "100"),
                sur(&FLOWS, "flow.bytes_toclient", "<", "100")
            ),
        ),
        (
            "file.hash.md5 == \"md5-1\" || file.hash.sha1 == \"sha1-2\" || file.hash.sha256 == \"sha256-0\"".into(),
            "zeek.files.md5 == \"md5-1\" || suricata.fileinfo.fileinfo.md5 == \"md5-1\" \
             || zeek.files.sha1 == \"sha1-2\" || suricata.fileinfo.fileinfo.sha1 == \"sha1-2\" \
             || zeek.files.sha256 == \"sha256-0\" || suricata.fileinfo.fileinfo.sha256 == \"sha256-0\""
                .into(),
        ),
        (
            "net.community_id == \"1:cid2\" && net.proto in [\"tcp\", \"TCP\"]".into(),
            "community_id == \"1:cid2\" && proto in [\"tcp\", \"TCP\"]".into(),
        ),
        (
            "net.url == \"/p1\" || net.user_agent == \"UA0\"".into(),
            "zeek.http.uri == \"/p1\" || suricata.http.http.url == \"/p1\" \
             || zeek.http.user_agent == \"UA0\" || suricata.http.http.http_user_agent == \"UA0\""
                .into(),
        ),
        (
            "net.app == \"dns\"".into(),
            "zeek.conn.service == \"dns\" || app_proto == \"dns\"".into(),
        ),
        (
            "net.duration > 10s".into(),
            "zeek.conn.duration > 10s".into(),
        ),
    ];
    for (concept, expanded) in &cases {
        let n = same(&db, concept, expanded);
        assert!(n > 0 && n < total, "{concept}: {n} of {total}");
    }
    // Both sources answer, and the alerts' `flow.src_ip` (the other end) is not the concept.
    let by_schema = schemas_of(&db, &format!("net.src.ip == {a}"));
    assert!(
        by_schema.keys().any(|k| k.starts_with("zeek.")),
        "{by_schema:?}"
    );
    assert!(
        by_schema.keys().any(|k| k.starts_with("suricata.")),
        "{by_schema:?}"
    );
    assert_eq!(count(&db, &format!("net.dst.ip == {a}")), 0);
    assert!(
        count(&db, &format!("id.resp_h == {a} || dest_ip == {a}")) > 0,
        "dest_ip as a suffix also names the alerts' flow.dest_ip"
    );
    let domains = schemas_of(&db, "net.domain == \"evil.test\"");
    assert_eq!(domains.len(), 6, "{domains:?}");
}

#[test]
fn model_queries_equal_their_expansions_by_hand() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(archive(tmp.path())).unwrap();
    let (a, b) = ("10.0.0.2", "10.0.1.2");
    // `_` is "the schema has a field of the concept": zeek.http, ssl and files have no
    // `proto`, so no connection of theirs is one of the model.
    let zeek_5tuple = "#field == \"proto\"";
    let cases: Vec<(String, String)> = vec![
        (
            format!("net.connection == <{a}, _, {b}, _, _>"),
            format!(
                "(id.orig_h == {a} && id.resp_h == {b} && {zeek_5tuple}) || ({} && {})",
                sur(&ALL_EVE, "src_ip", "==", a),
                sur(&ALL_EVE, "dest_ip", "==", b)
            ),
        ),
        (
            format!("net.connection == <net.src.ip: {a}, net.dst.port: 80>"),
            format!(
                "(id.orig_h == {a} && id.resp_p == 80 && {zeek_5tuple}) || ({} && {})",
                sur(&ALL_EVE, "src_ip", "==", a),
                sur(&ALL_EVE, "dest_port", "==", "80")
            ),
        ),
        (
            format!("net.connection == <net.dst.port:80, net.src.ip:{a}>"),
            format!(
                "(id.orig_h == {a} && id.resp_p == 80 && {zeek_5tuple}) || ({} && {})",
                sur(&ALL_EVE, "src_ip", "==", a),
                sur(&ALL_EVE, "dest_port", "==", "80")
            ),
        ),
        // VAST's `!=`: the `_` conditions stay, the values' conjunction is negated.
        (
            format!("net.connection != <{a}, _, {b}, _, _>"),
            format!(
                "((id.orig_h != {a} || id.resp_h != {b}) && {zeek_5tuple}) || {} || {}",
                sur(&ALL_EVE, "src_ip", "!=", a),
                sur(&ALL_EVE, "dest_ip", "!=", b)
            ),
        ),
        (
            "net.connection == <_, _, _, _, _>".into(),
            "#type in [\"zeek.conn\", \"zeek.dns\"] || \"suricata\" in #type".into(),
        ),
        (
            format!(
                "net.connection == <{a}, _, _, _, \"tcp\"> || net.connection == <_, _, _, 53, _>"
            ),
            format!(
                "(id.orig_h == {a} && proto == \"tcp\") || (id.resp_p == 53 && {zeek_5tuple}) \
                 || ({} && proto == \"tcp\") || {}",
                sur(&ALL_EVE, "src_ip", "==", a),
                sur(&ALL_EVE, "dest_port", "==", "53")
            ),
        ),
    ];
    let total = count(&db, "");
    for (model, expanded) in &cases {
        let n = same(&db, model, expanded);
        assert!(n > 0 && n < total, "{model}: {n} of {total}");
    }
    let hit = schemas_of(&db, &format!("net.connection == <{a}, _, {b}, _, _>"));
    assert!(
        hit.contains_key("zeek.conn") && hit.contains_key("suricata.flow"),
        "{hit:?}"
    );
    assert!(!hit.contains_key("zeek.http"), "{hit:?}");
}

#[test]
fn malformed_model_queries_are_positioned_errors() {
    for (text, pos, what) in [
        ("net.connection == <1.2.3.4, _>", 18, "has 2 values"),
        (
            "net.connection == <net.src.ip: 1.2.3.4, 80>",
            40,
            "all its values",
        ),
        (
            "net.connection == <net.url: \"x\">",
            19,
            "not part of the model",
        ),
        (
            "net.connection == <net.src.ip: 1.2.3.4, net.src.ip: 1.2.3.5>",
            40,
            "named twice",
        ),
        ("net.src.ip == <1.2.3.4>", 0, "is no model"),
        ("net.connection < <1.2.3.4>", 15, "== or != only"),
        (
            "net.connection == <1.2.3.4, _, _, _, _",
            38,
            "expected , or >",
        ),
    ] {
        let e = Query::parse(text).unwrap_err();
        assert_eq!(e.pos, pos, "{text}: {}", e.message);
        assert!(e.message.contains(what), "{text}: {}", e.message);
    }
}

/// The string values of column `name` of `batches`, each batch's rows in order.
fn column(batches: &[RecordBatch], name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for b in batches {
        let Some(c) = b.column_by_name(name) else {
            continue;
        };
        let any = c.as_any();
        let value = |i: usize| -> String {
            if let Some(a) = any.downcast_ref::<arrow_array::StringArray>() {
                a.value(i).to_string()
            } else if let Some(a) = any.downcast_ref::<arrow_array::UInt64Array>() {
                a.value(i).to_string()
            } else if let Some(a) = any.downcast_ref::<arrow_array::UInt16Array>() {
                a.value(i).to_string()
            } else if let Some(a) = any.downcast_ref::<arrow_array::Int64Array>() {
                a.value(i).to_string()
            } else {
                panic!("column {name}: type {}", c.data_type())
            }
        };
        for i in 0..c.len() {
            out.push(if c.is_null(i) { "-".into() } else { value(i) });
        }
    }
    out
}

fn batches(db: &Db, text: &str) -> Vec<RecordBatch> {
    db.query(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .batches()
        .map(|b| b.unwrap())
        .collect()
}

/// `key → count` of the rows of a `summarize`/`top` output.
fn tally(db: &Db, text: &str, key: &str, n: &str) -> BTreeMap<String, u64> {
    let b = batches(db, text);
    let keys = column(&b, key);
    let counts = column(&b, n);
    assert_eq!(keys.len(), counts.len(), "{text}");
    let mut out = BTreeMap::new();
    for (k, c) in keys.into_iter().zip(counts) {
        *out.entry(k).or_insert(0) += c.parse::<u64>().unwrap();
    }
    out
}

#[test]
fn operators_read_the_concepts_field_per_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(archive(tmp.path())).unwrap();
    // summarize ... by a concept: the union of the per-source groups.
    let ours = tally(&db, "summarize n=count() by net.src.ip", "net.src.ip", "n");
    let mut theirs = tally(
        &db,
        "\"zeek\" in #type | summarize n=count() by id.orig_h",
        "id.orig_h",
        "n",
    );
    for t in EVE_TYPES {
        for (k, v) in tally(
            &db,
            &format!("#type == \"suricata.{t}\" | summarize n=count() by suricata.{t}.src_ip"),
            &format!("suricata.{t}.src_ip"),
            "n",
        ) {
            *theirs.entry(k).or_insert(0) += v;
        }
    }
    assert_eq!(ours, theirs);
    assert_eq!(ours.values().sum::<u64>(), count(&db, ""));
    // top: the same counts by the destination port.
    let top = tally(&db, "top net.dst.port", "net.dst.port", "count");
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for p in DPORT {
        let n = count(
            &db,
            &format!(
                "id.resp_p == {p} || {}",
                sur(&ALL_EVE, "dest_port", "==", &p.to_string())
            ),
        );
        want.insert(p.to_string(), n);
    }
    assert_eq!(top, want);
    // select: a column named by the concept, each event's own field's value, in ID order.
    let selected = batches(&db, "net.dst.port == 443 | select #id, net.src.ip");
    let ids = column(&selected, "#id");
    let ips = column(&selected, "net.src.ip");
    assert_eq!(ids.len() as u64, count(&db, "net.dst.port == 443"));
    let mut expect: Vec<(u64, String)> = Vec::new();
    let zeek = batches(
        &db,
        "\"zeek\" in #type && id.resp_p == 443 | select #id, id.orig_h",
    );
    expect.extend(
        column(&zeek, "#id")
            .into_iter()
            .map(|i| i.parse().unwrap())
            .zip(column(&zeek, "id.orig_h")),
    );
    for t in EVE_TYPES {
        let f = format!("suricata.{t}.src_ip");
        let b = batches(
            &db,
            &format!("suricata.{t}.dest_port == 443 | select #id, {f}"),
        );
        expect.extend(
            column(&b, "#id")
                .into_iter()
                .map(|i| i.parse().unwrap())
                .zip(column(&b, "src_ip")),
        );
    }
    expect.sort();
    let got: Vec<(u64, String)> = ids
        .into_iter()
        .map(|i| i.parse().unwrap())
        .zip(ips)
        .collect();
    assert_eq!(got, expect);
    assert!(
        got.iter().all(|(_, ip)| SRC.contains(&ip.as_str())),
        "{got:?}"
    );
}

#[test]
fn a_users_concepts_file_extends_the_shipped_table() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path());
    let file = tmp.path().join("mine.toml");
    std::fs::write(
        &file,
        "format = 1\n\
         [concepts.\"my.host\"]\n\
         fields = [\"zeek.http.host\", \"http.hostname\"]\n\
         [concepts.\"net.domain\"]\n\
         fields = [\"zeek.files.md5\"]\n\
         [models.\"my.pair\"]\n\
         definition = [\"net.src.ip\", \"my.host\"]\n",
    )
    .unwrap();
    let count_with = |expr: &str| -> u64 {
        let out = run(&["--concepts", s(&file), "count", "--db", s(&db), expr]);
        ok(&out, expr).trim().parse().unwrap()
    };
    let plain = |expr: &str| -> u64 {
        let out = run(&["count", "--db", s(&db), expr]);
        ok(&out, expr).trim().parse().unwrap()
    };
    let mine = count_with("my.host == \"evil.test\"");
    assert_eq!(
        mine,
        plain("zeek.http.host == \"evil.test\" || suricata.http.http.hostname == \"evil.test\"")
    );
    assert!(mine > 0);
    // net.domain extended: its shipped fields and the user's.
    assert_eq!(
        count_with("net.domain == \"evil.test\" || net.domain == \"md5-1\""),
        plain("net.domain == \"evil.test\" || zeek.files.md5 == \"md5-1\"")
    );
    assert_eq!(
        count_with("my.pair == <10.0.0.1, \"evil.test\">"),
        plain(
            "(net.src.ip == 10.0.0.1 && (zeek.http.host == \"evil.test\" || suricata.http.http.hostname == \"evil.test\"))"
        )
    );
    // Without the file, `my.host` is no field of any schema.
    let out = run(&["count", "--db", s(&db), "my.host == \"x\""]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("my.host"),
        "{}",
        text(&out.stderr)
    );
    // A bad file: the file and the line.
    std::fs::write(&file, "format = 1\n[concepts.x]\nfeilds = [\"a\"]\n").unwrap();
    let out = run(&["--concepts", s(&file), "count", "--db", s(&db), ""]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("mine.toml") && err.contains("line 3"), "{err}");
}

/// A concept is pruned by the catalog, the sketches and the dictionaries as its fields are:
/// the search statistics of a concept query equal those of its disjunction by hand.
#[test]
fn concepts_prune_as_their_fields() {
    use weir::unstable::store::Archive;
    let tmp = tempfile::tempdir().unwrap();
    let archive = Archive::open(archive(tmp.path())).unwrap();
    let stats = |text: &str| {
        let q = Query::parse(text).unwrap();
        let (n, stats) = q.count(&archive).unwrap();
        (n, stats)
    };
    for (concept, expanded) in [
        (
            "net.src.ip == 10.9.9.9".to_string(),
            format!("id.orig_h == 10.9.9.9 || {}", sur(&ALL_EVE, "src_ip", "==", "10.9.9.9")),
        ),
        (
            "net.domain == \"nowhere.test\"".to_string(),
            "zeek.dns.query == \"nowhere.test\" || zeek.http.host == \"nowhere.test\" \
             || zeek.ssl.server_name == \"nowhere.test\" || suricata.dns.dns.rrname == \"nowhere.test\" \
             || suricata.http.http.hostname == \"nowhere.test\" || suricata.tls.tls.sni == \"nowhere.test\""
                .to_string(),
        ),
        (
            "file.hash.md5 == \"md5-1\"".to_string(),
            "zeek.files.md5 == \"md5-1\" || suricata.fileinfo.fileinfo.md5 == \"md5-1\"".to_string(),
        ),
    ] {
        let (a, b) = (stats(&concept), stats(&expanded));
        eprintln!("{concept}: {a:?}");
        assert_eq!(a, b, "{concept} vs {expanded}");
    }
    // An address no event has: no row of any batch is evaluated.
    let (n, s) = stats("net.src.ip == 10.9.9.9");
    assert_eq!(n, 0);
    assert_eq!(s.rows_evaluated, 0, "{s:?}");
}

/// `explore --by` a concept relates events of both sources by the concept's field of each.
#[test]
fn explore_by_a_concept_reaches_both_sources() {
    let tmp = tempfile::tempdir().unwrap();
    let db_dir = archive(tmp.path());
    let out = run(&[
        "explore",
        "--db",
        s(&db_dir),
        "--by",
        "net.src.ip",
        "-C",
        "1h",
        "--to",
        "json",
        "#type == \"suricata.alert\" && src_ip == 10.0.0.3",
    ]);
    let got = ok(&out, "explore").lines().count() as u64;
    // Every event lies within the hour: the context is every event of that source address.
    let db = Db::open(&db_dir).unwrap();
    let want = count(&db, "net.src.ip == 10.0.0.3");
    assert_eq!(got, want);
    let schemas = schemas_of(&db, "net.src.ip == 10.0.0.3");
    assert!(schemas.len() > 5, "{schemas:?}");
}
