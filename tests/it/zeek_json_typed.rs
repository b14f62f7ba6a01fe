//! Typed Zeek JSON: Zeek log schemas (`schemas/zeek/*.toml`) applied to JSON lines by `_path`,
//! file name or option; unknown fields by inference; one schema per log; errors; and the
//! corpus (conn, dns, http) equal to its TSV import after `weir convert --to json` and back.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::path::Path;

use bytes::BytesMut;
use tokio_util::codec::Decoder;
use weir::unstable::batch::Batch;
use weir::unstable::codec::zeek::json::{read_all, JsonDecoder};
use weir::unstable::codec::zeek::schema::ZeekSchemas;
use weir::unstable::codec::ReaderOptions;
use weir::unstable::error::{OnError, ReadError};
use weir::unstable::types::Type;
use weir::unstable::value::Value;

use common::cli::{ok, run, s};
use common::events::{addr, events};

fn opts(name: &str) -> ReaderOptions {
    ReaderOptions::new(name)
}

fn st(v: &str) -> Value {
    Value::String(v.as_bytes().to_vec())
}

/// Column `name` of every row.
fn column(batches: &[Batch], name: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for b in batches {
        let k = b
            .schema()
            .fields
            .iter()
            .position(|f| f.name == name)
            .unwrap_or_else(|| panic!("no field {name} in {:?}", b.schema()));
        for r in b.to_values().unwrap() {
            out.push(r[k].clone());
        }
    }
    out
}

fn ty(batches: &[Batch], name: &str) -> String {
    let f = batches[0].schema().fields.iter().find(|f| f.name == name);
    f.map(|f| f.ty.to_string()).unwrap_or_default()
}

const CONN: &[u8] = br#"{"_path":"conn","_write_ts":"2020-04-01T16:19:47.100869Z","ts":1585757982.100275,"uid":"C1","id.orig_h":"45.231.152.1","id.orig_p":21,"id.resp_h":"2001:0db8::1","id.resp_p":443,"proto":"tcp","duration":3.423925,"orig_bytes":0,"conn_state":"REJ","local_orig":false,"history":"HWrrr","tunnel_parents":["Cx","Cy"],"orig_cc":"BR"}
{"_path":"conn","ts":"2020-04-01T16:19:43.5Z","uid":"C2","id.orig_h":"10.0.0.1","id.orig_p":53,"id.resp_h":"10.0.0.2","id.resp_p":53,"proto":"udp","duration":4.294967296e+09}
{"_path":"conn","uid":"C3","ts":-1418429426.887384,"id.orig_h":"10.0.0.3","id.orig_p":1,"id.resp_h":"10.0.0.4","id.resp_p":2,"proto":"icmp","orig_cc":"DE"}
"#;

#[test]
fn a_log_schema_types_every_known_field() {
    let (batches, report) = read_all(CONN, opts("x.json")).unwrap();
    assert_eq!(report.skipped, 0);
    // Three key sets, one schema, one batch.
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0].schema().name, "zeek.conn");
    for (field, want) in [
        ("ts", "time"),
        ("id.orig_h", "addr"),
        ("id.orig_p", "port"),
        ("id.resp_p", "port"),
        ("proto", "enum"),
        ("duration", "interval"),
        ("orig_bytes", "count"),
        ("local_orig", "bool"),
        ("tunnel_parents", "set[string]"),
        // Not in the schema: kept, typed by inference, after the schema's fields.
        ("_write_ts", "time"),
        ("orig_cc", "string"),
    ] {
        assert_eq!(ty(&batches, field), want, "{field}");
    }
    let fields = &batches[0].schema().fields;
    let shipped = ZeekSchemas::builtin().unwrap();
    let conn = shipped.get("conn").unwrap().schema().fields.len();
    assert_eq!(fields.len(), conn + 2);
    assert_eq!(fields[conn].name, "_write_ts");
    assert_eq!(fields[conn + 1].name, "orig_cc");
    // Epoch seconds and RFC 3339 alike, exact; negative and exponent forms too.
    assert_eq!(
        column(&batches, "ts"),
        [
            Value::Time(1_585_757_982_100_275_000),
            Value::Time(1_585_757_983_500_000_000),
            Value::Time(-1_418_429_426_887_384_000),
        ]
    );
    assert_eq!(
        column(&batches, "duration"),
        [
            Value::Interval(3_423_925_000),
            Value::Interval(4_294_967_296_000_000_000),
            Value::Null,
        ]
    );
    // Any address text, as the TSV reader takes it; ports; absent fields unset.
    assert_eq!(
        column(&batches, "id.resp_h"),
        [
            Value::Addr(addr("2001:db8::1")),
            Value::Addr(addr("10.0.0.2")),
            Value::Addr(addr("10.0.0.4"))
        ]
    );
    assert_eq!(
        column(&batches, "id.resp_p"),
        [Value::Port(443), Value::Port(53), Value::Port(2)]
    );
    assert_eq!(
        column(&batches, "tunnel_parents"),
        [
            Value::List(vec![st("Cx"), st("Cy")]),
            Value::Null,
            Value::Null
        ]
    );
    assert_eq!(
        column(&batches, "orig_cc"),
        [st("BR"), Value::Null, st("DE")]
    );
    assert_eq!(
        batches[0].ts_range(),
        Some((-1_418_429_426_887_384_000, 1_585_757_983_500_000_000))
    );
}

#[test]
fn without_path_the_file_name_or_the_option_picks_the_schema() {
    let line = br#"{"ts":1.5,"uid":"C1","id.orig_p":80,"proto":"tcp"}"#;
    for name in [
        "conn.log",
        "conn.json",
        "/var/zeek/2024-01-01/conn.2024-01-01-00-00-00.log.gz",
    ] {
        let (batches, _) = read_all(line, opts(name)).unwrap();
        assert_eq!(batches[0].schema().name, "zeek.conn", "{name}");
        assert_eq!(ty(&batches, "id.orig_p"), "port", "{name}");
    }
    // An unknown name: inference under the default name, as before.
    let (batches, _) = read_all(line, opts("events.json")).unwrap();
    assert_eq!(batches[0].schema().name, "zeek.json");
    // Inference, but by Zeek's field conventions a `*_p` number is still a port.
    assert_eq!(ty(&batches, "id.orig_p"), "port");
    assert_eq!(ty(&batches, "proto"), "string");
    // The option wins over the file name.
    let o = ReaderOptions {
        json_schema: Some("zeek.dns".into()),
        ..opts("conn.log")
    };
    let (batches, _) = read_all(line, o).unwrap();
    assert_eq!(batches[0].schema().name, "zeek.dns");
    assert_eq!(ty(&batches, "proto"), "enum");
    // `_path` wins over both.
    let with_path = br#"{"_path":"weird","ts":1.5,"name":"x","notice":false}"#;
    let (batches, _) = read_all(with_path, opts("conn.log")).unwrap();
    assert_eq!(batches[0].schema().name, "zeek.weird");
    // No schemas: inference only.
    let o = ReaderOptions {
        zeek_schemas: None,
        ..opts("conn.log")
    };
    let (batches, _) = read_all(line, o).unwrap();
    assert_eq!(batches[0].schema().name, "zeek.json");
}

#[test]
fn values_that_do_not_convert_are_errors_naming_line_field_and_value() {
    let err = |input: &[u8]| match read_all(input, opts("c.json")) {
        Err(ReadError::Parse(e)) => e.to_string(),
        other => panic!("expected a parse error, got {other:?}"),
    };
    assert_eq!(
        err(br#"{"_path":"conn","id.orig_p":"http"}"#),
        "c.json:1: field id.orig_p: invalid port value \"http\""
    );
    assert_eq!(
        err(br#"{"_path":"conn","id.orig_p":65536}"#),
        "c.json:1: field id.orig_p: invalid port value \"65536\""
    );
    assert_eq!(
        err(br#"{"_path":"conn","id.orig_h":"10.0.0.300"}"#),
        "c.json:1: field id.orig_h: invalid addr value \"10.0.0.300\""
    );
    assert_eq!(
        err(br#"{"_path":"conn","tunnel_parents":"a"}"#),
        "c.json:1: field tunnel_parents: invalid set[string] value \"a\""
    );
    assert_eq!(
        err(br#"{"_path":"conn","orig_bytes":[1,2]}"#),
        "c.json:1: field orig_bytes: invalid count value \"[1,2]\""
    );
    assert_eq!(
        err(br#"{"_path":"dns","TTLs":[1.0,"x"]}"#),
        "c.json:1: field TTLs: invalid vector[interval] value \"x\""
    );
    assert_eq!(
        err(br#"{"_path":"conn","uid":"a","x":1,"x":2}"#),
        "c.json:1: field x: duplicate key \"x\""
    );
    // Strings take numbers and booleans as their text.
    let (b, _) = read_all(br#"{"_path":"conn","uid":12,"history":true}"#, opts("c")).unwrap();
    assert_eq!(column(&b, "uid"), [st("12")]);
    assert_eq!(column(&b, "history"), [st("true")]);

    // Events before a bad line are emitted first, also when the bad line starts another
    // log's schema; under skip the line is dropped and counted.
    let input = b"{\"_path\":\"conn\",\"uid\":\"a\"}\n{\"_path\":\"dns\",\"rtt\":\"slow\"}\n{\"_path\":\"dns\",\"rtt\":0.5}\n";
    let mut dec = JsonDecoder::new(opts("m.json"));
    let mut buf = BytesMut::from(&input[..]);
    let first = dec.decode(&mut buf).unwrap().unwrap();
    assert_eq!(first.schema().name, "zeek.conn");
    let e = dec.decode(&mut buf).unwrap_err().to_string();
    assert_eq!(e, "m.json:2: field rtt: invalid interval value \"slow\"");
    let o = ReaderOptions {
        on_error: OnError::Skip,
        ..opts("m.json")
    };
    let (batches, report) = read_all(input, o).unwrap();
    assert_eq!(report.skipped, 1);
    let ev = events(&batches);
    assert_eq!(ev.len(), 2);
    assert_eq!(column(&batches[1..], "rtt"), [Value::Interval(500_000_000)]);
}

#[test]
fn one_log_stays_one_schema_and_one_batch_stream() {
    // Zeek omits unset fields: every line another key set. Untyped, each is a schema.
    let mut text = Vec::new();
    for i in 0..300u32 {
        text.extend_from_slice(
            format!("{{\"_path\":\"dns\",\"ts\":{i}.5,\"uid\":\"C{i}\"").as_bytes(),
        );
        if i % 2 == 0 {
            text.extend_from_slice(b",\"rtt\":0.1");
        }
        if i % 3 == 0 {
            text.extend_from_slice(b",\"answers\":[\"a\",\"b\"],\"TTLs\":[60.0,1e+02]");
        }
        if i % 5 == 0 {
            text.extend_from_slice(b",\"rejected\":true");
        }
        text.extend_from_slice(b"}\n");
    }
    let (typed, _) = read_all(&text, opts("dns.json")).unwrap();
    assert_eq!(typed.len(), 1);
    assert_eq!(typed[0].len(), 300);
    let untyped = ReaderOptions {
        zeek_schemas: None,
        ..opts("dns.json")
    };
    let (inferred, _) = read_all(&text, untyped).unwrap();
    assert!(inferred.len() > 100, "{}", inferred.len());
    assert_eq!(
        column(&typed, "TTLs")[0],
        Value::List(vec![
            Value::Interval(60_000_000_000),
            Value::Interval(100_000_000_000)
        ])
    );
    // An unknown field appearing later widens the schema, pending rows with it (no batch of
    // their own); an unknown field whose inferred type changes retypes it (a new batch).
    let more = b"{\"_path\":\"dns\",\"uid\":\"a\"}\n{\"_path\":\"dns\",\"uid\":\"b\",\"x\":1}\n{\"_path\":\"dns\",\"uid\":\"c\"}\n{\"_path\":\"dns\",\"uid\":\"d\",\"x\":\"s\"}\n";
    let (b, _) = read_all(more, opts("m")).unwrap();
    let schemas: Vec<(usize, String)> = b
        .iter()
        .map(|b| (b.len(), ty(std::slice::from_ref(b), "x")))
        .collect();
    assert_eq!(
        schemas,
        [(3, "count".to_string()), (1, "string".to_string())]
    );
}

#[test]
fn ever_new_keys_cost_bounded_columns_and_widenings() {
    let mut text = Vec::new();
    let n = 1100;
    for i in 0..n {
        text.extend_from_slice(
            format!("{{\"_path\":\"dns\",\"uid\":\"u\",\"k{i}\":{i}}}\n").as_bytes(),
        );
    }
    let (batches, _) = read_all(&text, opts("d")).unwrap();
    let base = ZeekSchemas::builtin()
        .unwrap()
        .get("dns")
        .unwrap()
        .schema()
        .fields
        .len();
    let widest = batches
        .iter()
        .map(|b| b.schema().fields.len())
        .max()
        .unwrap();
    assert!(widest <= base + 1025 + 1, "{widest}");
    // Widened at most 32 times a batch, then cut.
    assert!(batches.len() >= n / 33, "{}", batches.len());
    // Every value is kept, in its own column.
    let mut seen = 0;
    for b in &batches {
        let rows = b.to_values().unwrap();
        for r in rows {
            let k = format!("k{seen}");
            let col = b.schema().fields.iter().position(|f| f.name == k).unwrap();
            assert_eq!(r[col], Value::Count(seen as u64));
            seen += 1;
        }
    }
    assert_eq!(seen, n);
}

#[test]
fn any_chunking_gives_the_same_events() {
    let whole = events(&read_all(CONN, opts("c.json")).unwrap().0);
    let mut dec = JsonDecoder::new(opts("c.json"));
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    for &b in CONN {
        buf.extend_from_slice(&[b]);
        while let Some(x) = dec.decode(&mut buf).unwrap() {
            got.push(x);
        }
    }
    while let Some(x) = dec.decode_eof(&mut buf).unwrap() {
        got.push(x);
    }
    assert_eq!(events(&got), whole);
}

/// Found by the fuzz smoke run (its seed `fuzz/seeds/zeek_json/typed_widening_at_chunk_end`):
/// a field new to a typed log, on a line that the input's first chunk ends inside, widens the
/// log's schema after the rows before it were emitted (no complete line was left). The module
/// docs allow exactly this: chunking decides which early rows have the narrower schema, never
/// their values; the wider rows have the new field unset.
#[test]
fn a_field_new_at_a_chunk_end_widens_only_the_rows_still_pending() {
    let input = b"{\"_path\":\"conn\",\"ts\":2.0,\"q\":\"b\"}\n{\"_path\":\"conn\",\"tv\":2.0,\"q\":\"b\"}\n";
    let (whole, _) = read_all(input, opts("x")).unwrap();
    let mut dec = JsonDecoder::new(opts("x"));
    let (cut, last) = input.split_at(input.len() - 1);
    let mut buf = BytesMut::from(cut);
    let mut chunked = Vec::new();
    while let Some(b) = dec.decode(&mut buf).unwrap() {
        chunked.push(b);
    }
    buf.extend_from_slice(last);
    while let Some(b) = dec.decode_eof(&mut buf).unwrap() {
        chunked.push(b);
    }
    // Whole: one batch, both rows in the widened schema. Chunked: the first row was emitted
    // at the chunk's end, in the schema before `tv`.
    assert_eq!(whole.len(), 1);
    assert_eq!(chunked.len(), 2);
    let wide = whole[0].schema().fields.len();
    assert_eq!(chunked[0].schema().fields.len(), wide - 1);
    assert_eq!(chunked[1].schema(), whole[0].schema());
    let (w, c) = (
        whole[0].to_values().unwrap(),
        chunked[0].to_values().unwrap(),
    );
    assert_eq!(w[0][..wide - 1], c[0][..]);
    assert_eq!(w[0][wide - 1], Value::Null);
    assert_eq!(w[1], chunked[1].to_values().unwrap()[0]);
}

#[test]
fn a_schema_directory_adds_and_replaces_schemas() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mylog.toml"),
        "format = 1\npath = \"mylog\"\nfields = [[\"ts\", \"time\"], [\"p\", \"port\"], [\"nets\", \"vector[subnet]\"]]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("conn.toml"),
        "format = 1\npath = \"conn\"\nfields = [[\"ts\", \"time\"], [\"uid\", \"count\"]]\n",
    )
    .unwrap();
    let schemas = ZeekSchemas::load(Some(dir.path())).unwrap();
    let o = ReaderOptions {
        zeek_schemas: Some(schemas),
        ..opts("x")
    };
    let input = b"{\"_path\":\"mylog\",\"ts\":1,\"p\":8,\"nets\":[\"10.0.0.0/8\"]}\n{\"_path\":\"conn\",\"uid\":7}\n";
    let (b, _) = read_all(input, o).unwrap();
    assert_eq!(ty(&b[..1], "p"), "port");
    assert_eq!(ty(&b[..1], "nets"), "vector[subnet]");
    assert_eq!(b[1].schema().fields.len(), 2);
    assert_eq!(column(&b[1..], "uid"), [Value::Count(7)]);
    // Errors name the file.
    std::fs::write(
        dir.path().join("bad.toml"),
        "format = 1\npath = \"b\"\nfields = [[\"a\", \"nope\"]]\n",
    )
    .unwrap();
    let e = ZeekSchemas::load(Some(dir.path())).unwrap_err().to_string();
    assert!(
        e.ends_with("bad.toml: field \"a\": unknown type \"nope\""),
        "{e}"
    );
    assert!(ZeekSchemas::load(Some(&dir.path().join("missing"))).is_err());
}

#[test]
fn cli_schema_flags() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("events.json");
    // A number without a Zeek convention for its name (not a port like `id.orig_p`): `count`.
    std::fs::write(&input, "{\"ts\":1.5,\"uid\":\"C1\",\"orig_bytes\":80}\n").unwrap();
    let tsv = |args: &[&str]| -> String {
        let mut all = vec!["convert"];
        all.extend_from_slice(args);
        all.push(s(&input));
        ok(&run(&all), "weir convert")
    };
    let types = |text: &str| -> String {
        text.lines()
            .find(|l| l.starts_with("#types"))
            .unwrap_or_default()
            .to_string()
    };
    assert!(types(&tsv(&[])).starts_with("#types\ttime\tstring\tcount"));
    let typed = tsv(&["--schema", "zeek.conn"]);
    assert!(typed.contains("#path\tconn\n"), "{typed}");
    assert!(types(&typed).starts_with("#types\ttime\tstring\taddr\tport"));
    let bad = run(&["convert", "--schema", "zeek.nope", s(&input)]);
    assert_eq!(bad.status.code(), Some(2));
    let msg = common::cli::text(&bad.stderr);
    assert!(
        msg.contains("zeek.nope") && msg.contains("zeek.conn"),
        "{msg}"
    );
    std::fs::write(
        dir.path().join("events.toml"),
        "format = 1\npath = \"events\"\nfields = [[\"ts\", \"time\"], [\"id.orig_p\", \"port\"]]\n",
    )
    .unwrap();
    let with_dir = tsv(&["--schema-dir", s(dir.path())]);
    assert!(with_dir.contains("#path\tevents\n"), "{with_dir}");
    assert!(
        types(&with_dir).starts_with("#types\ttime\tport\tstring"),
        "{with_dir}"
    );
}

#[test]
fn pipeline_file_schema_keys() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("stream.json");
    // A number without a Zeek convention for its name (not a port like `id.orig_p`): `count`.
    std::fs::write(&input, "{\"ts\":1.5,\"uid\":\"C1\",\"orig_bytes\":80}\n").unwrap();
    let out = dir.path().join("out.log");
    let pipeline = |name: &str, keys: &str| {
        let p = dir.path().join(name);
        std::fs::write(
            &p,
            format!(
                "[sources.in]\ntype = \"file\"\npaths = [\"{}\"]\n{keys}\n\n[sinks.out]\ntype = \"file\"\ninputs = [\"in\"]\npath = \"{}\"\nformat = \"zeek-tsv\"\n",
                s(&input),
                s(&out)
            ),
        )
        .unwrap();
        p
    };
    let good = pipeline("good.toml", "schema = \"zeek.conn\"");
    ok(&run(&["run", "-q", s(&good)]), "weir run");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("#path\tconn\n") && text.contains("\tport\t"),
        "{text}"
    );
    let bad = pipeline("bad.toml", "schema = \"zeek.nope\"");
    let r = run(&["run", "--check", s(&bad)]);
    assert_eq!(r.status.code(), Some(2));
    let msg = common::cli::text(&r.stderr);
    assert!(
        msg.contains("bad.toml:4: [sources.in] schema: no Zeek log schema is named \"zeek.nope\""),
        "{msg}"
    );
    let missing = pipeline("dir.toml", "schema_dir = \"/nonexistent/schemas\"");
    let r = run(&["run", "--check", s(&missing)]);
    assert_eq!(r.status.code(), Some(2));
    let msg = common::cli::text(&r.stderr);
    assert!(
        msg.contains("[sources.in] schema_dir: /nonexistent/schemas: cannot read"),
        "{msg}"
    );
}

/// The schema and batch count of every batch of an archive (`weir inspect`).
fn batches_of(db: &Path) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for seg in common::cli::segment_files(db) {
        let text = ok(&run(&["inspect", "--json", s(&seg)]), "weir inspect");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for b in v["batches"].as_array().unwrap() {
            let fields = b["fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap().to_string())
                .collect();
            out.push((b["schema"].as_str().unwrap().to_string(), fields));
        }
    }
    out
}

/// Field name to type of an archive's one schema.
fn types_of(batches: &[(String, Vec<String>)]) -> Vec<(String, String)> {
    batches[0]
        .1
        .iter()
        .map(|f| {
            let (n, t) = f.split_once(": ").unwrap();
            (n.to_string(), t.to_string())
        })
        .collect()
}

#[test]
fn corpus_typed_json_equals_the_tsv_import() {
    let Some(corpus) = common::corpus::dir() else {
        return;
    };
    let shipped = ZeekSchemas::builtin().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for log in ["conn", "dns", "http"] {
        let orig = corpus.join(format!("{log}.log.gz"));
        let a = tmp.path().join(format!("{log}-tsv.db"));
        let b = tmp.path().join(format!("{log}-json.db"));
        ok(
            &run(&["import", "-q", "--db", s(&a), s(&orig)]),
            "import TSV",
        );
        let json = ok(&run(&["convert", "--to", "json", s(&orig)]), "convert");
        let json_file = tmp.path().join(format!("{log}.json"));
        std::fs::write(&json_file, &json).unwrap();
        ok(
            &run(&["import", "-q", "--db", s(&b), s(&json_file)]),
            "import JSON",
        );
        // Value for value: the same events, in the same order, the same set fields.
        let ea = common::cli::export_json(&a);
        let eb = common::cli::export_json(&b);
        assert_eq!(ea.len(), eb.len(), "{log}");
        assert!(ea.len() > 4000, "{log}");
        for (i, (x, y)) in ea.iter().zip(&eb).enumerate() {
            assert_eq!(x, y, "{log}: event {i}");
        }
        // The same types: every field of the TSV schema has its TSV type in the JSON
        // import (Bro 2.x's `table[T]` is Zeek's `set[T]`); fields the shipped schema does
        // not know are inferred, and `file` is then a string.
        let ba = batches_of(&a);
        let bb = batches_of(&b);
        let tb = types_of(&bb);
        let known = shipped.get(log).unwrap();
        for (name, t) in types_of(&ba) {
            let got = tb.iter().find(|(n, _)| *n == name).map(|(_, t)| t.clone());
            let Some(got) = got else {
                // Zeek JSON omits unset fields: one the schema does not know and that is
                // never set does not appear (the exports, equal above, hold no value of it).
                assert!(known.position(&name).is_none(), "{log}: {name} missing");
                continue;
            };
            let want = t.replace("table[", "set[");
            if known.position(&name).is_some() {
                assert_eq!(got, want, "{log}: {name}");
            } else {
                let inferred = Type::parse(&got).unwrap();
                assert!(
                    got == want || (want == "file" && inferred == Type::String),
                    "{log}: {name}: {got} vs {want}"
                );
            }
        }
        // One schema, and as few batches as events need (8192 a batch), not one per key set.
        assert!(bb.iter().all(|(_, f)| *f == bb[0].1), "{log}: one schema");
        let events = eb.len();
        assert!(
            bb.len() <= events.div_ceil(8192) + 1,
            "{log}: {} batches for {events} events",
            bb.len()
        );
    }
}
