//! Suricata EVE JSON (`--from suricata`, detected from the first line): one schema per event
//! type, the types that make questions work, nothing dropped silently, positioned errors,
//! the event time, `--follow`, and the shipped schema files equal to what
//! `scripts/eve-schemas.py` makes from Suricata's own schema. The lines are modelled on the
//! examples of Suricata's `eve-json-format.rst`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::path::Path;

use weir::unstable::batch::Batch;
use weir::unstable::codec::decode_chunks;
use weir::unstable::codec::zeek::json::JsonDecoder;
use weir::unstable::codec::zeek::schema::ZeekSchemas;
use weir::unstable::codec::ReaderOptions;
use weir::unstable::error::{OnError, ReadError};
use weir::unstable::value::Value;

use common::cli::{ok, run, run_with_stdin, s, text};

/// 2023-09-18T06:13:41.532140Z in nanoseconds.
const ALERT_NS: i64 = 1_695_017_621_532_140_000;
/// A `flow_id` above 2^53: a double would round it.
const BIG_FLOW_ID: u64 = 9_007_199_254_740_993;

const ALERT: &str = r#"{"timestamp":"2023-09-18T06:13:41.532140+0000","flow_id":9007199254740993,"pcap_cnt":130,"event_type":"alert","src_ip":"142.11.240.191","src_port":35361,"dest_ip":"192.168.100.237","dest_port":49175,"proto":"TCP","pkt_src":"wire/pcap","ether":{"src_mac":"52:54:00:36:3e:ff","dest_mac":"12:a9:86:6c:77:de"},"tx_id":1,"alert":{"action":"allowed","gid":1,"signature_id":2019236,"rev":1,"signature":"ET ATTACK_RESPONSE Win32/LeftHook Stealer","category":"A Network Trojan was detected","severity":1,"metadata":{"created_at":["2023_04_17"],"deployment":["Perimeter"]}},"http":{"hostname":"142.11.240.191","http_port":35361,"url":"/","http_method":"POST","status":200,"length":5362},"files":[{"filename":"/","gaps":false,"size":5362}],"app_proto":"http","direction":"to_client","flow":{"pkts_toserver":13,"pkts_toclient":12,"bytes_toserver":1616,"bytes_toclient":8044,"start":"2023-09-18T06:13:33.324862+0000","src_ip":"192.168.100.237","dest_ip":"142.11.240.191","src_port":49175,"dest_port":35361}}"#;
const FLOW: &str = r#"{"timestamp":"2023-09-18T06:13:21.216460+0000","flow_id":1676750115612680,"event_type":"flow","src_ip":"192.168.100.237","src_port":49175,"dest_ip":"142.11.240.191","dest_port":35361,"proto":"TCP","app_proto":"http","flow":{"pkts_toserver":3869,"pkts_toclient":1523,"bytes_toserver":3536402,"bytes_toclient":94102,"start":"2023-09-18T06:13:33.324862+0000","end":"2023-09-18T06:14:13.752399+0000","age":40,"state":"closed","reason":"shutdown","alerted":true},"tcp":{"tcp_flags":"1e","syn":true,"rst":true,"state":"closed"}}"#;
/// DNS version 1: one event per answer.
const DNS_V1: &str = r#"{"timestamp":"2023-09-18T06:13:22.000001+0000","flow_id":1,"event_type":"dns","src_ip":"10.0.0.53","src_port":53,"dest_ip":"10.0.0.1","dest_port":40000,"proto":"UDP","dns":{"type":"answer","id":16000,"rcode":"NOERROR","rrname":"twitter.com","rrtype":"A","ttl":8,"rdata":"199.16.156.6"}}"#;
/// DNS version 2: answers as a list and grouped.
const DNS_V2: &str = r#"{"timestamp":"2023-09-18T06:13:22.000002+0000","flow_id":2,"event_type":"dns","src_ip":"10.0.0.53","src_port":53,"dest_ip":"10.0.0.1","dest_port":40001,"proto":"UDP","dns":{"version":2,"type":"answer","id":45444,"flags":"8180","qr":true,"rd":true,"ra":true,"rcode":"NOERROR","rrname":"www.suricata-ids.org","rrtype":"A","answers":[{"rrname":"www.suricata-ids.org","rrtype":"CNAME","ttl":3324,"rdata":"suricata-ids.org"},{"rrname":"suricata-ids.org","rrtype":"A","ttl":10,"rdata":"192.0.78.24"}],"grouped":{"A":["192.0.78.24","192.0.78.25"],"CNAME":["suricata-ids.org"]}}}"#;
/// DNS version 3: queries as a list.
const DNS_V3: &str = r#"{"timestamp":"2023-09-18T06:13:22.000003+0000","flow_id":3,"event_type":"dns","src_ip":"10.0.0.1","src_port":40002,"dest_ip":"10.0.0.53","dest_port":53,"proto":"UDP","dns":{"version":3,"type":"request","tx_id":0,"id":1,"flags":"100","rd":true,"opcode":0,"rcode":"NOERROR","queries":[{"rrname":"example.com","rrtype":"A"}]}}"#;
const HTTP: &str = r#"{"timestamp":"2023-09-18T06:13:23.5+0000","flow_id":4,"event_type":"http","src_ip":"10.0.0.1","src_port":40003,"dest_ip":"10.0.0.80","dest_port":80,"proto":"TCP","tx_id":0,"http":{"hostname":"www.example.com","url":"/index.html","http_user_agent":"Mozilla/5.0","http_content_type":"text/html","http_method":"GET","protocol":"HTTP/1.1","status":200,"length":1024}}"#;
const TLS: &str = r#"{"timestamp":"2023-09-18T06:13:24.000000+0000","flow_id":5,"event_type":"tls","src_ip":"10.0.0.1","src_port":40004,"dest_ip":"10.0.0.43","dest_port":443,"proto":"TCP","tls":{"subject":"CN=example.com","issuerdn":"CN=Example CA","serial":"00:01","fingerprint":"aa:bb","sni":"example.com","version":"TLS 1.2","notbefore":"2023-01-01T00:00:00","notafter":"2024-01-01T00:00:00","ja3":{"hash":"e7d705a3286e19ea42f587b344ee6865","string":"771,49195"}}}"#;
const FILEINFO: &str = r#"{"timestamp":"2023-09-18T06:13:25.000000+0000","flow_id":4,"event_type":"fileinfo","src_ip":"10.0.0.80","src_port":80,"dest_ip":"10.0.0.1","dest_port":40003,"proto":"TCP","http":{"hostname":"www.example.com","url":"/index.html"},"app_proto":"http","fileinfo":{"filename":"/index.html","magic":"HTML document","gaps":false,"state":"CLOSED","md5":"0d4bd39ae6c0a6d2b8d4d2d0e4f0e1a5","stored":false,"size":1024,"tx_id":0}}"#;
const ANOMALY: &str = r#"{"timestamp":"2023-09-18T06:13:26.000000+0000","flow_id":6,"event_type":"anomaly","src_ip":"10.0.0.1","src_port":0,"dest_ip":"10.0.0.2","dest_port":0,"proto":"UDP","anomaly":{"type":"decode","event":"ipv4.trunc_pkt"}}"#;
const STATS: &str = r#"{"timestamp":"2023-09-18T06:13:27.000000+0000","event_type":"stats","stats":{"uptime":3600,"capture":{"kernel_packets":123456789012,"kernel_drops":7},"decoder":{"pkts":123456789012,"bytes":98765432109876,"ipv4":100,"ipv6":5}}}"#;
/// An event type weir has no schema for, with a field only it has.
const UNKNOWN_TYPE: &str = r#"{"timestamp":"2023-09-18T06:13:28.000000+0000","flow_id":7,"event_type":"mything","src_ip":"10.0.0.1","src_port":5000,"dest_ip":"10.0.0.2","dest_port":6000,"mything":{"count":3,"seen":"2023-09-18T06:13:28.500000+0000","name":"x"}}"#;
/// A field the alert schema does not know.
const UNKNOWN_FIELD: &str = r#"{"timestamp":"2011-08-12T14:52:57.716360+0200","flow_id":8,"event_type":"alert","src_ip":"10.0.0.1","src_port":1,"dest_ip":"10.0.0.2","dest_port":2,"proto":"TCP","alert":{"action":"blocked","signature_id":1,"signature":"test","new_thing":42}}"#;

fn all_lines() -> String {
    [
        ALERT,
        FLOW,
        DNS_V1,
        DNS_V2,
        DNS_V3,
        HTTP,
        TLS,
        FILEINFO,
        ANOMALY,
        STATS,
        UNKNOWN_TYPE,
        UNKNOWN_FIELD,
    ]
    .join("\n")
        + "\n"
}

/// The batches of EVE `text` read by the EVE reader.
fn read_eve(text: &str, on_error: OnError) -> Result<Vec<Batch>, ReadError> {
    let mut opts = ReaderOptions::new("eve.json");
    opts.on_error = on_error;
    read_eve_with(text, opts)
}

fn read_eve_with(text: &str, opts: ReaderOptions) -> Result<Vec<Batch>, ReadError> {
    let mut dec = JsonDecoder::eve(opts);
    match decode_chunks(&mut dec, [text.as_bytes()]) {
        (_, Some(e)) => Err(e),
        (out, None) => Ok(out),
    }
}

/// Field `name` of every event of schema `schema`, with its type.
fn column(batches: &[Batch], schema: &str, name: &str) -> (String, Vec<Value>) {
    let mut ty = String::new();
    let mut out = Vec::new();
    for b in batches.iter().filter(|b| b.schema().name == schema) {
        let k = b
            .schema()
            .fields
            .iter()
            .position(|f| f.name == name)
            .unwrap_or_else(|| panic!("no field {name} in {:?}", b.schema()));
        ty = b.schema().fields[k].ty.to_string();
        for r in b.to_values().unwrap() {
            out.push(r[k].clone());
        }
    }
    (ty, out)
}

fn one(batches: &[Batch], schema: &str, name: &str) -> (String, Value) {
    let (ty, v) = column(batches, schema, name);
    assert_eq!(v.len(), 1, "{schema} {name}: {v:?}");
    (ty, v[0].clone())
}

fn st(v: &str) -> Value {
    Value::String(v.as_bytes().to_vec())
}

#[test]
fn every_event_type_reads_in_its_schema_with_its_types() {
    let batches = read_eve(&all_lines(), OnError::Fail).unwrap();
    let mut names: Vec<&str> = batches.iter().map(|b| b.schema().name.as_str()).collect();
    names.dedup();
    assert_eq!(
        names,
        [
            "suricata.alert",
            "suricata.flow",
            "suricata.dns",
            "suricata.http",
            "suricata.tls",
            "suricata.fileinfo",
            "suricata.anomaly",
            "suricata.stats",
            "suricata.mything",
            "suricata.alert",
        ]
    );
    let a = "suricata.alert";
    let (ty, ts) = column(&batches, a, "timestamp");
    assert_eq!(ty, "time");
    assert_eq!(ts[0], Value::Time(ALERT_NS));
    assert_eq!(
        one(&batches[..1], a, "flow_id"),
        ("count".into(), Value::Count(BIG_FLOW_ID))
    );
    let ip = |t: &str| Value::Addr(t.parse().unwrap());
    assert_eq!(
        one(&batches[..1], a, "src_ip"),
        ("addr".into(), ip("142.11.240.191"))
    );
    assert_eq!(
        one(&batches[..1], a, "dest_port"),
        ("port".into(), Value::Port(49175))
    );
    assert_eq!(
        one(&batches[..1], a, "alert.signature_id"),
        ("count".into(), Value::Count(2019236))
    );
    assert_eq!(
        one(&batches[..1], a, "alert.metadata.deployment"),
        ("vector[string]".into(), Value::List(vec![st("Perimeter")]))
    );
    assert_eq!(
        one(&batches[..1], a, "flow.bytes_toclient"),
        ("count".into(), Value::Count(8044))
    );
    assert_eq!(
        one(&batches[..1], a, "flow.start").1,
        Value::Time(1_695_017_613_324_862_000)
    );
    // Objects the alert schema does not have (Suricata adds app-layer context): kept.
    assert_eq!(
        one(&batches[..1], a, "http.http_port"),
        ("port".into(), Value::Port(35361))
    );
    assert_eq!(one(&batches[..1], a, "ether.src_mac").0, "string");
    assert_eq!(one(&batches[..1], a, "files").0, "vector[string]");

    let f = "suricata.flow";
    assert_eq!(
        one(&batches, f, "flow.bytes_toserver"),
        ("count".into(), Value::Count(3_536_402))
    );
    assert_eq!(
        one(&batches, f, "flow.end"),
        ("time".into(), Value::Time(1_695_017_653_752_399_000))
    );
    assert_eq!(one(&batches, f, "flow.alerted").1, Value::Bool(true));
    assert_eq!(one(&batches, f, "tcp.syn").1, Value::Bool(true));

    // DNS: versions 1, 2 and 3 in one schema.
    let d = "suricata.dns";
    let (_, rdata) = column(&batches, d, "dns.rdata");
    assert_eq!(rdata, [st("199.16.156.6"), Value::Null, Value::Null]);
    let (_, ttl) = column(&batches, d, "dns.ttl");
    assert_eq!(ttl[0], Value::Count(8));
    let (ty, answers) = column(&batches, d, "dns.answers");
    assert_eq!(ty, "vector[string]");
    let Value::List(answers) = &answers[1] else {
        panic!("{answers:?}")
    };
    assert_eq!(answers.len(), 2);
    let first: serde_json::Value = match &answers[0] {
        Value::String(b) => serde_json::from_slice(b).unwrap(),
        v => panic!("{v:?}"),
    };
    assert_eq!(first["rdata"], "suricata-ids.org");
    let (_, grouped) = column(&batches, d, "dns.grouped.A");
    assert_eq!(
        grouped[1],
        Value::List(vec![st("192.0.78.24"), st("192.0.78.25")])
    );
    let (_, version) = column(&batches, d, "dns.version");
    assert_eq!(version, [Value::Null, Value::Count(2), Value::Count(3)]);
    let (_, queries) = column(&batches, d, "dns.queries");
    assert!(matches!(&queries[2], Value::List(q) if q.len() == 1));

    assert_eq!(
        one(&batches, "suricata.http", "http.status"),
        ("count".into(), Value::Count(200))
    );
    assert_eq!(
        one(&batches, "suricata.http", "timestamp").1,
        Value::Time(1_695_017_603_500_000_000)
    );
    assert_eq!(
        one(&batches, "suricata.tls", "tls.notafter"),
        ("time".into(), Value::Time(1_704_067_200_000_000_000))
    );
    assert_eq!(
        one(&batches, "suricata.tls", "tls.ja3.hash").1,
        st("e7d705a3286e19ea42f587b344ee6865")
    );
    assert_eq!(
        one(&batches, "suricata.fileinfo", "fileinfo.size"),
        ("count".into(), Value::Count(1024))
    );
    assert_eq!(
        one(&batches, "suricata.anomaly", "anomaly.event").1,
        st("ipv4.trunc_pkt")
    );
    assert_eq!(
        one(&batches, "suricata.stats", "stats.decoder.bytes"),
        ("count".into(), Value::Count(98_765_432_109_876))
    );
    assert_eq!(
        one(&batches, "suricata.stats", "stats.capture.kernel_drops").1,
        Value::Count(7)
    );
    // Every schema's event time is its timestamp.
    for b in &batches {
        let i = b.schema().ts_index().expect("a time field");
        assert_eq!(b.schema().fields[i].name, "timestamp");
        assert!(b.ts_range().is_some(), "{}", b.schema().name);
    }
}

#[test]
fn unknown_event_types_and_fields_are_kept_typed_by_inference() {
    let batches = read_eve(&all_lines(), OnError::Fail).unwrap();
    let m = "suricata.mything";
    assert_eq!(
        one(&batches, m, "timestamp"),
        ("time".into(), Value::Time(1_695_017_608_000_000_000))
    );
    assert_eq!(
        one(&batches, m, "flow_id"),
        ("count".into(), Value::Count(7))
    );
    assert_eq!(
        one(&batches, m, "src_port"),
        ("port".into(), Value::Port(5000))
    );
    assert_eq!(one(&batches, m, "src_ip").0, "addr");
    assert_eq!(one(&batches, m, "mything.count").1, Value::Count(3));
    assert_eq!(
        one(&batches, m, "mything.seen"),
        ("time".into(), Value::Time(1_695_017_608_500_000_000))
    );
    assert_eq!(one(&batches, m, "mything.name").1, st("x"));
    // The last alert has a field its schema does not know: kept, after the schema's.
    let last = batches.last().unwrap();
    assert_eq!(last.schema().name, "suricata.alert");
    let (ty, v) = column(
        std::slice::from_ref(last),
        "suricata.alert",
        "alert.new_thing",
    );
    assert_eq!((ty.as_str(), v.last()), ("count", Some(&Value::Count(42))));
    // `+0200` applied exactly: 12:52:57.716360 UTC.
    let (_, ts) = column(std::slice::from_ref(last), "suricata.alert", "timestamp");
    assert_eq!(ts.last(), Some(&Value::Time(1_313_153_577_716_360_000)));
}

#[test]
fn bad_lines_are_positioned_errors_or_skipped() {
    let bad_ts = ALERT.replace("2023-09-18T06:13:41.532140+0000", "2023-09-18 06:13:41");
    for (line, field, what) in [
        ("{\"timestamp\": oops}", None, "invalid JSON at byte"),
        (bad_ts.as_str(), Some("timestamp"), "invalid time value"),
        (
            r#"{"timestamp":"2023-09-18T06:13:41.532140+0000","x":1}"#,
            Some("event_type"),
            "needs a string \"event_type\"",
        ),
        (
            r#"{"timestamp":"2023-09-18T06:13:41.532140+0000","event_type":"a/b"}"#,
            Some("event_type"),
            "is not a name",
        ),
    ] {
        let text = format!("{FLOW}\n{line}\n{HTTP}\n");
        let err = read_eve(&text, OnError::Fail).unwrap_err();
        let ReadError::Parse(e) = &err else {
            panic!("{err}")
        };
        assert_eq!(e.line, 2, "{err}");
        assert_eq!(e.source_name, "eve.json");
        assert_eq!(e.field.as_deref(), field, "{err}");
        assert!(err.to_string().contains(what), "{err}");
        // Skipped: the lines around it are read.
        let batches = read_eve(&text, OnError::Skip).unwrap();
        let n: usize = batches.iter().map(Batch::len).sum();
        assert_eq!(n, 2, "{line}");
    }
}

#[test]
fn a_schema_dir_adds_and_replaces_eve_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, path: &str, fields: &str| {
        let text = format!(
            "format = 1\nnamespace = \"suricata\"\npath = \"{path}\"\nfields = [{fields}]\n"
        );
        std::fs::write(dir.path().join(name), text).unwrap();
    };
    file(
        "mine.toml",
        "mything",
        r#"["timestamp", "time"], ["mything.count", "int"]"#,
    );
    file(
        "alert.toml",
        "alert",
        r#"["timestamp", "time"], ["alert.signature_id", "string"]"#,
    );
    let mut opts = ReaderOptions::new("eve.json");
    opts.zeek_schemas = Some(ZeekSchemas::load(Some(dir.path())).unwrap());
    let batches = read_eve_with(&all_lines(), opts).unwrap();
    assert_eq!(
        one(&batches, "suricata.mything", "mything.count"),
        ("int".into(), Value::Int(3))
    );
    let (ty, sids) = column(&batches, "suricata.alert", "alert.signature_id");
    assert_eq!((ty.as_str(), &sids[0]), ("string", &st("2019236")));
    // The others stay the shipped ones.
    assert_eq!(
        one(&batches, "suricata.flow", "flow.bytes_toserver").0,
        "count"
    );
}

/// Writes the sample EVE file into `dir`.
fn eve_file(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("eve.json");
    std::fs::write(&p, all_lines()).unwrap();
    p
}

fn count(db: &Path, expr: &str) -> u64 {
    let mut args = vec!["count", "--db", s(db)];
    if !expr.is_empty() {
        args.push(expr);
    }
    let out = run(&args);
    ok(&out, expr).trim().parse().unwrap()
}

#[test]
fn import_detects_eve_and_queries_go_by_its_types_and_time() {
    let dir = tempfile::tempdir().unwrap();
    let eve = eve_file(dir.path());
    let db = dir.path().join("db");
    // Without --from: detected from the first line. -v reports what is kept by inference.
    let out = run(&["-v", "import", "-q", "--db", s(&db), s(&eve)]);
    ok(&out, "import eve.json");
    let log = text(&out.stderr);
    assert_eq!(
        log.matches("suricata.mything: an event type without a schema")
            .count(),
        1,
        "{log}"
    );
    assert_eq!(
        log.matches("suricata.alert: kept field \"alert.new_thing\"")
            .count(),
        1,
        "{log}"
    );
    assert_eq!(count(&db, ""), 12);
    assert_eq!(
        count(
            &db,
            "#type == \"suricata.alert\" && alert.signature_id == 2019236"
        ),
        1
    );
    assert_eq!(count(&db, "flow_id == 9007199254740993"), 1);
    assert_eq!(count(&db, "flow_id == 9007199254740992"), 0);
    assert_eq!(count(&db, "src_ip in 10.0.0.0/8"), 9);
    assert_eq!(count(&db, "dest_port == 53/udp || dest_port == 53"), 1);
    assert_eq!(count(&db, "flow.bytes_toserver > 1000000"), 1);
    assert_eq!(count(&db, "dns.rrname == \"twitter.com\""), 1);
    assert_eq!(count(&db, "#type == \"suricata.dns\""), 3);
    // The event time is `timestamp`: time ranges, with the offset applied.
    assert_eq!(count(&db, "#timestamp < 2012-01-01"), 1);
    assert_eq!(count(&db, "#timestamp >= 2011-08-12T12:52:57.716360Z && #timestamp <= 2011-08-12T12:52:57.716360Z"), 1);
    assert_eq!(
        count(
            &db,
            "#timestamp >= 2023-09-18T06:13:22Z && #timestamp < 2023-09-18T06:13:23Z"
        ),
        3
    );
    let info = common::cli::info(&db);
    let text = info.to_string();
    assert!(text.contains("2011-08-12T12:52:57.71636"), "{text}");
    assert!(text.contains("2023-09-18T06:13:41.53214"), "{text}");

    // --from suricata, gzip, stdin: the same events.
    let gz = dir.path().join("events.log.gz");
    std::fs::write(&gz, common::gz::gzip(&[all_lines().as_bytes()])).unwrap();
    let db2 = dir.path().join("db2");
    ok(
        &run(&[
            "import",
            "-q",
            "--db",
            s(&db2),
            "--from",
            "suricata",
            s(&gz),
        ]),
        "import gz",
    );
    let db3 = dir.path().join("db3");
    ok(
        &run_with_stdin(
            &["import", "-q", "--db", s(&db3), "--from", "suricata", "-"],
            all_lines().as_bytes(),
        ),
        "import stdin",
    );
    let a = common::cli::export_json_text(&db);
    assert_eq!(common::cli::export_json_text(&db2), a);
    assert_eq!(common::cli::export_json_text(&db3), a);
}

#[test]
fn a_followed_eve_json_is_read_as_it_grows() {
    let dir = tempfile::tempdir().unwrap();
    let eve = dir.path().join("eve.json");
    let db = dir.path().join("db");
    common::follow::append(&eve, &format!("{FLOW}\n{HTTP}\n"));
    let child = common::follow::follow(&db, &[s(&eve)], &[]);
    common::follow::wait_count(&db, 2);
    common::follow::append(&eve, &format!("{ALERT}\n{DNS_V2}\n{UNKNOWN_FIELD}\n"));
    common::follow::wait_count(&db, 5);
    common::follow::stop(child);
    assert_eq!(count(&db, "#type == \"suricata.alert\""), 2);
    assert_eq!(count(&db, "alert.signature_id == 2019236"), 1);
    assert_eq!(count(&db, "#timestamp < 2012-01-01"), 1);
}

#[test]
fn shipped_schemas_are_what_the_script_makes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema = root.join("../shared/data/suricata/schema.json");
    if !schema.exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true needs {}",
            schema.display()
        );
        eprintln!("note: {} is missing; skipping", schema.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("shipped.rs");
    let st = std::process::Command::new("python3")
        .arg(root.join("scripts/eve-schemas.py"))
        .args([
            "--schema",
            s(&schema),
            "--out",
            s(dir.path()),
            "--list",
            s(&list),
        ])
        .status()
        .expect("python3 runs");
    assert!(st.success());
    let shipped = root.join("schemas/suricata");
    let mut names: Vec<_> = std::fs::read_dir(&shipped)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    let mut made: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "shipped.rs")
        .collect();
    made.sort();
    assert_eq!(names, made);
    for n in names {
        let a = std::fs::read_to_string(shipped.join(&n)).unwrap();
        let b = std::fs::read_to_string(dir.path().join(&n)).unwrap();
        assert!(
            a == b,
            "{n:?} differs from what scripts/eve-schemas.py makes"
        );
    }
    let a = std::fs::read_to_string(root.join("src/codec/suricata/shipped.rs")).unwrap();
    assert_eq!(a, std::fs::read_to_string(&list).unwrap());
}

#[test]
fn export_to_json_is_eve_shaped_and_reads_back_to_the_same_values() {
    let dir = tempfile::tempdir().unwrap();
    let eve = eve_file(dir.path());
    let db = dir.path().join("db");
    ok(
        &run(&[
            "import",
            "-q",
            "--db",
            s(&db),
            "--from",
            "suricata",
            s(&eve),
        ]),
        "import",
    );
    let exported = common::cli::export_json_text(&db);
    let events: Vec<serde_json::Value> = exported
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 12);
    let alert = &events[0];
    assert!(alert.get("_path").is_none(), "{alert}");
    assert_eq!(alert["event_type"], "alert");
    assert_eq!(alert["timestamp"], "2023-09-18T06:13:41.532140Z");
    assert_eq!(alert["flow_id"].as_u64(), Some(BIG_FLOW_ID));
    assert_eq!(alert["alert"]["signature_id"], 2019236);
    assert_eq!(alert["alert"]["metadata"]["deployment"][0], "Perimeter");
    assert_eq!(alert["flow"]["bytes_toserver"], 1616);
    assert_eq!(alert["flow"]["start"], "2023-09-18T06:13:33.324862Z");
    assert_eq!(alert["http"]["http_port"], 35361);
    assert_eq!(alert["src_ip"], "142.11.240.191");
    // Unset fields and objects are left out.
    assert!(alert.get("netflow").is_none() && alert["flow"].get("end").is_none());
    let last = &events[11];
    assert_eq!(last["timestamp"], "2011-08-12T12:52:57.716360Z");
    assert_eq!(last["alert"]["new_thing"], 42);
    assert_eq!(
        events[9]["stats"]["decoder"]["bytes"],
        98_765_432_109_876u64
    );

    // Read back, detected from the first line: the same events, types and values.
    let back = dir.path().join("back.json");
    std::fs::write(&back, &exported).unwrap();
    let db2 = dir.path().join("db2");
    ok(
        &run(&["import", "-q", "--db", s(&db2), s(&back)]),
        "re-import",
    );
    assert_eq!(common::cli::export_json_text(&db2), exported);
    let tsv = |db: &Path| {
        let out = run(&["export", "--db", s(db), "--to", "zeek-tsv"]);
        ok(&out, "export zeek-tsv")
            .lines()
            .filter(|l| !l.starts_with("#open") && !l.starts_with("#close"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let a = tsv(&db);
    assert!(a.contains("#path\tsuricata.alert"), "{a}");
    assert_eq!(tsv(&db2), a);
    let read = |text: &str| {
        read_eve(text, OnError::Fail)
            .unwrap()
            .iter()
            .map(|b| (b.schema().clone(), b.to_values().unwrap()))
            .collect::<Vec<_>>()
    };
    assert_eq!(read(&exported), read(&all_lines()));
}
