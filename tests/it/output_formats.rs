//! `--to csv` and `--to table` on the real binary: every value against `--to json` of the
//! same query (an independent writer), CSV parsed by the `csv` crate, quoting, one file per
//! schema with `--output DIR`, the table within `COLUMNS`, and the defaults through a pipe.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::collections::BTreeMap;
use std::path::Path;

use crate::common;

use common::cli::{ok, run, s, text, weir};
use serde_json::Value;

/// A log of awkward values: quotes, commas and line breaks in strings, bytes that are not
/// UTF-8, control characters, empty and unset values and containers, doubles that are not
/// finite, a string `-`, and a long non-ASCII string.
fn quirks_log() -> String {
    let long = "ünïcödé ".repeat(12);
    let mut log = String::from(
        "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tquirks\n\
         #fields\tts\ts\ttags\tv\td\ti\tb\te\n\
         #types\ttime\tstring\tset[string]\tvector[count]\tdouble\tinterval\tbool\tenum\n",
    );
    for line in [
        "1258531221.000001\tsay \"hi\", ok\ta\\x2cb,c\t1,2,3\t1.0\t0.000001\tT\tx",
        "1258531222.500000\tline\\x0abreak\\x0d\\x0aend\t(empty)\t(empty)\t-0.0\t-1.500000\tF\t-",
        "1258531223.000000\t\\xff\\xfe not utf-8 \\xc3\\xa9\t\"q\",-\t-\tinf\t3600.000000\t-\ty",
        "1258531224.000000\t(empty)\t-\t7\tnan\t-\tT\tz",
        "1258531225.000000\t\\x2d\t\\x2d,(empty)\t0\t-inf\t0.000000\tF\tx",
        "1258531226.000000\ttab\\x09and\\x1besc\\x7f\tq\t18446744073709551615\t123456789.125\t0.5\tT\tx",
    ] {
        log.push_str(line);
        log.push('\n');
    }
    log.push_str(&format!(
        "1258531227.000000\t{long}\t{long}\t-\t0.1\t1.0\tT\tx\n"
    ));
    log
}

/// The field names of the logs this file writes, by schema.
fn fields_of(schema: &str) -> Vec<String> {
    let line = match schema {
        "zeek.quirks" => quirks_log(),
        "zeek.conn" => common::conn_log::header(),
        "zeek.custom" => std::fs::read_to_string(common::fixture("query/custom.log")).unwrap(),
        other => panic!("no fields known for {other}"),
    };
    let fields = line.lines().find(|l| l.starts_with("#fields\t")).unwrap();
    fields.split('\t').skip(1).map(String::from).collect()
}

/// An archive of 1,500 generated conn events, the query fixture and the quirks log.
fn small_archive(dir: &Path) -> String {
    let conn = dir.join("conn.log");
    std::fs::write(&conn, common::conn_log::log(0..1500)).unwrap();
    let quirks = dir.join("quirks.log");
    std::fs::write(&quirks, quirks_log()).unwrap();
    let db = dir.join("db").display().to_string();
    let custom = common::fixture("query/custom.log");
    ok(
        &run(&[
            "import",
            "--db",
            &db,
            // The logs' own fields (the output compared with them): no computed Community IDs.
            "--community-id",
            "off",
            s(&conn),
            s(&custom),
            s(&quirks),
        ]),
        "import",
    );
    db
}

fn export(db: &str, args: &[&str]) -> String {
    let mut all = vec!["export", "--db", db];
    all.extend_from_slice(args);
    ok(&run(&all), &format!("export {args:?}"))
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// Whether `cell` is how the CSV and table writers show the JSON element or value `v`:
/// numbers by value (`1.500000` is 1.5), `NaN`/`Infinity` as `nan`/`inf`, booleans as
/// `true`/`false`, arrays as their elements joined by `,` (a `,` in a string element as
/// `\x2c`, a null element as `-`).
fn same(cell: &str, v: &Value) -> bool {
    match v {
        Value::String(s) => {
            cell == s
                || (s == "NaN" && cell == "nan")
                || (s == "Infinity" && cell == "inf")
                || (s == "-Infinity" && cell == "-inf")
        }
        Value::Number(n) => {
            if n.is_u64() || n.is_i64() {
                cell == n.to_string()
            } else {
                cell.parse::<f64>().ok() == n.as_f64()
            }
        }
        Value::Bool(b) => cell == if *b { "true" } else { "false" },
        Value::Null => cell == "-",
        Value::Array(items) => {
            let parts: Vec<&str> = if items.is_empty() {
                vec![]
            } else {
                cell.split(',').collect()
            };
            parts.len() == items.len()
                && parts.iter().zip(items).all(|(p, item)| match item {
                    Value::String(s) => *p == s.replace(',', "\\x2c"),
                    other => same(p, other),
                })
        }
        Value::Object(_) => false,
    }
}

/// A JSON value with the control characters of its strings written as the table writes them,
/// `\xHH` per UTF-8 byte.
fn escape_controls(v: &Value) -> Value {
    match v {
        Value::String(s) => {
            let mut out = String::new();
            for c in s.chars() {
                if c.is_control() {
                    let mut b = [0; 4];
                    for byte in c.encode_utf8(&mut b).bytes() {
                        out.push_str(&format!("\\x{byte:02x}"));
                    }
                } else {
                    out.push(c);
                }
            }
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(escape_controls).collect()),
        other => other.clone(),
    }
}

/// The whole text of a JSON value as the table shows it before it is cut (strings, and
/// arrays of strings, are the ones long enough to be cut).
fn full_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => s.replace(',', "\\x2c"),
                Value::Null => "-".into(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    }
}

/// Checks that `records` (the CSV's records after a header) hold the values of `events`
/// (from `--to json`) under `header`: a field the JSON omits (unset) is an empty cell.
fn check_rows(header: &[String], records: &[csv::StringRecord], events: &[Value]) {
    assert_eq!(records.len(), events.len());
    for (rec, ev) in records.iter().zip(events) {
        assert_eq!(rec.len(), header.len(), "{rec:?}");
        let obj = ev.as_object().unwrap();
        for key in obj.keys().filter(|k| *k != "_path") {
            assert!(header.contains(key), "JSON field {key} not in {header:?}");
        }
        for (name, cell) in header.iter().zip(rec.iter()) {
            match obj.get(name) {
                None => assert_eq!(cell, "", "unset {name} in {rec:?}"),
                Some(v) => assert!(same(cell, v), "{name}: CSV {cell:?}, JSON {v}"),
            }
        }
    }
}

/// Every CSV record of `csv_text` (several schemas: a header per section) against the JSON
/// events of the same query; returns the number of sections.
fn check_csv_against_json(csv_text: &str, json_text: &str) -> usize {
    let events = json_lines(json_text);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(csv_text.as_bytes());
    let records: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    // Runs of one schema in the JSON output, by `_path`.
    let mut sections = 0;
    let (mut at, mut i) = (0, 0);
    while i < events.len() {
        let path = events[i]["_path"].as_str().unwrap();
        let n = events[i..]
            .iter()
            .take_while(|e| e["_path"] == path)
            .count();
        let header: Vec<String> = records[at].iter().map(String::from).collect();
        assert_eq!(
            header,
            fields_of(&format!("zeek.{path}")),
            "section {sections}"
        );
        check_rows(&header, &records[at + 1..at + 1 + n], &events[i..i + n]);
        // After the first section, the header follows an empty line.
        let header_line = format!("{}\n", header.join(","));
        if sections == 0 {
            assert!(csv_text.starts_with(&header_line));
        } else {
            assert!(csv_text.contains(&format!("\n\n{header_line}")));
        }
        sections += 1;
        at += 1 + n;
        i += n;
    }
    assert_eq!(at, records.len(), "records after the last event");
    sections
}

#[test]
fn csv_holds_the_values_of_json() {
    let tmp = tempfile::tempdir().unwrap();
    let db = small_archive(tmp.path());
    let csv_text = export(&db, &["--to", "csv"]);
    let json_text = export(&db, &["--to", "json"]);
    assert_eq!(check_csv_against_json(&csv_text, &json_text), 3);
    // One schema, and -n.
    let q = "#type == \"zeek.quirks\"";
    let csv_text = export(&db, &["--to", "csv", q]);
    let json_text = export(&db, &["--to", "json", q]);
    assert_eq!(check_csv_against_json(&csv_text, &json_text), 1);
    let csv_text = export(&db, &["--to", "csv", "-n", "7"]);
    assert_eq!(csv_text.lines().count(), 8);

    // The shared conn log, when present.
    let Some(corpus) = common::corpus::dir() else {
        return;
    };
    let db = tmp.path().join("corpus-db").display().to_string();
    let conn = corpus.join("conn.log.gz");
    ok(
        &run(&["import", "--db", &db, "--community-id", "off", s(&conn)]),
        "import conn",
    );
    let csv_text = export(&db, &["--to", "csv"]);
    let json_text = export(&db, &["--to", "json"]);
    let events = json_lines(&json_text);
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    // The header is the log's own #fields line.
    let raw = text(&common::gz::read_maybe_gz(&conn));
    let fields: Vec<String> = raw
        .lines()
        .find(|l| l.starts_with("#fields\t"))
        .unwrap()
        .split('\t')
        .skip(1)
        .map(String::from)
        .collect();
    assert_eq!(header, fields);
    let records: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert!(records.len() > 1000, "{}", records.len());
    check_rows(&header, &records, &events);
}

#[test]
fn csv_quotes_commas_quotes_and_line_breaks() {
    let tmp = tempfile::tempdir().unwrap();
    let db = small_archive(tmp.path());
    let out = export(&db, &["--to", "csv", "#type == \"zeek.quirks\""]);
    // RFC 4180 quoting, checked on the text itself.
    assert!(out.contains(",\"say \"\"hi\"\", ok\","), "{out}");
    assert!(out.contains(",\"line\nbreak\r\nend\","), "{out}");
    assert!(out.contains(",\"\"\"q\"\",-\","), "{out}");
    assert!(out.contains(",\"a\\x2cb,c\","), "{out}");
    // Not UTF-8: escaped as the JSON writer's strings read; a control byte kept, quoted or not.
    assert!(out.contains(",\\xff\\xfe not utf-8 é,"), "{out}");
    assert!(out.contains(",tab\tand\x1besc\x7f,"), "{out}");
    // An empty string and an empty container are `""`; unset is an empty cell.
    let line = out
        .lines()
        .find(|l| l.starts_with("2009-11-18T08:00:24"))
        .unwrap();
    assert_eq!(line, "2009-11-18T08:00:24.000000Z,\"\",,7,nan,,true,z");
    let line = out
        .lines()
        .find(|l| l.starts_with("2009-11-18T08:00:22"))
        .unwrap();
    assert_eq!(line, "2009-11-18T08:00:22.500000Z,\"line");
    assert!(
        out.contains("end\",\"\",\"\",-0.0,-1.500000,false,\n"),
        "{out}"
    );
    // LF line ends: the only CR is the one inside the value.
    assert_eq!(out.matches('\r').count(), 1);
}

#[test]
fn csv_output_dir_has_one_file_per_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let db = small_archive(tmp.path());
    let dir = tmp.path().join("out/csv");
    let out = run(&["export", "--db", &db, "--to", "csv", "--output", s(&dir)]);
    ok(&out, "export --output");
    assert!(
        text(&out.stderr).contains("in 3 files"),
        "{}",
        text(&out.stderr)
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["zeek.conn.csv", "zeek.custom.csv", "zeek.quirks.csv"]
    );
    for name in &names {
        let schema = name.trim_end_matches(".csv");
        let body = std::fs::read_to_string(dir.join(name)).unwrap();
        let q = format!("#type == \"{schema}\"");
        // The same as that schema's export to stdout, and so its values those of JSON.
        assert_eq!(body, export(&db, &["--to", "csv", &q]), "{name}");
        let sections = check_csv_against_json(&body, &export(&db, &["--to", "json", &q]));
        assert_eq!(sections, 1, "{name}");
        let count = ok(&run(&["count", "--db", &db, &q]), "count");
        let mut reader = csv::Reader::from_reader(body.as_bytes());
        assert_eq!(reader.records().count().to_string(), count.trim(), "{name}");
    }
    // A second export into the same directory refuses to overwrite.
    let before = std::fs::read(dir.join("zeek.conn.csv")).unwrap();
    let out = run(&["export", "--db", &db, "--to", "csv", "--output", s(&dir)]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("refusing to overwrite"), "{err}");
    assert!(err.contains("zeek.conn.csv"), "{err}");
    assert_eq!(std::fs::read(dir.join("zeek.conn.csv")).unwrap(), before);
    // --output is for csv and parquet only.
    let out = run(&["export", "--db", &db, "--to", "table", "--output", s(&dir)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--output DIR is for --to parquet and --to csv"));
}

/// Every output of `weir export` runs the one export loop: an expression naming no field of
/// the archive is a usage error (exit 2) for each, also with `-n 0`, before any file is
/// written; a known one with `-n 0` writes nothing.
#[test]
fn every_output_checks_the_expression_even_for_no_events() {
    let tmp = tempfile::tempdir().unwrap();
    let db = small_archive(tmp.path());
    let outputs: [&[&str]; 4] = [
        &["--to", "json"],
        &["--to", "csv"],
        &["--to", "csv", "--output"],
        &["--to", "parquet", "--output"],
    ];
    for (i, output) in outputs.iter().enumerate() {
        let dir = tmp.path().join(format!("out{i}"));
        let mut args = vec!["export", "--db", &db];
        args.extend_from_slice(output);
        if output.ends_with(&["--output"]) {
            args.push(s(&dir));
        }
        let mut bad = args.clone();
        bad.extend_from_slice(&["-n", "0", "nosuchfield == 1"]);
        let out = run(&bad);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{output:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("no field `nosuchfield`"),
            "{output:?}: {}",
            text(&out.stderr)
        );
        args.extend_from_slice(&["-n", "0", "id.resp_p == 53"]);
        let out = run(&args);
        ok(&out, &format!("{output:?}"));
        assert!(out.stdout.is_empty(), "{output:?}");
    }
}

/// With operators, `--to csv --output DIR` writes what they emit, one file per schema: an
/// aggregation's `weir.summarize.csv`, the same as its CSV on stdout, with the counts of
/// its JSON; events of two logs after `select`, one file each.
#[test]
fn csv_output_dir_takes_what_operators_emit() {
    let tmp = tempfile::tempdir().unwrap();
    let db = small_archive(tmp.path());
    let dir = tmp.path().join("agg");
    let chain = "summarize n=count() by #type";
    let out = run(&[
        "export",
        "--db",
        &db,
        "--to",
        "csv",
        "--output",
        s(&dir),
        chain,
    ]);
    ok(&out, "export --output with operators");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["weir.summarize.csv"]);
    let body = std::fs::read_to_string(dir.join("weir.summarize.csv")).unwrap();
    assert_eq!(body, export(&db, &["--to", "csv", chain]));
    let json = json_lines(&export(&db, &["--to", "json", chain]));
    let mut reader = csv::Reader::from_reader(body.as_bytes());
    assert_eq!(
        reader.headers().unwrap().iter().collect::<Vec<_>>(),
        ["#type", "n"]
    );
    let rows: Vec<(String, String)> = reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[0].to_string(), r[1].to_string())
        })
        .collect();
    let want: Vec<(String, String)> = json
        .iter()
        .map(|e| {
            (
                e["#type"].as_str().unwrap().to_string(),
                e["n"].as_u64().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(rows, want);
    assert_eq!(rows.len(), 3);
    // Several schemas: a file each (a schema with none of the fields has none), `-n`
    // counted over all of them.
    let dir = tmp.path().join("sel");
    let chain = "select ts, uid";
    let out = run(&[
        "export",
        "--db",
        &db,
        "--to",
        "csv",
        "--output",
        s(&dir),
        "-n",
        "1600",
        chain,
    ]);
    ok(&out, "export --output select");
    let mut total = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let body = std::fs::read_to_string(e.unwrap().path()).unwrap();
        let mut reader = csv::Reader::from_reader(body.as_bytes());
        // The selected fields a schema has, in the order selected.
        let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
        assert!(
            header == ["ts", "uid"] || header == ["ts"] || header == ["uid"],
            "{header:?}"
        );
        total += reader.records().count();
    }
    let all: usize = ok(&run(&["count", "--db", &db, chain]), "count")
        .trim()
        .parse()
        .unwrap();
    assert!(all > 1000, "{all}");
    assert_eq!(total, all.min(1600));
}

/// Runs `weir export` with `--to table` and `COLUMNS=columns`.
fn table(db: &str, columns: &str, args: &[&str]) -> String {
    let out = weir()
        .args(["export", "--db", db, "--to", "table"])
        .args(args)
        .env("COLUMNS", columns)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    ok(&out, "export --to table")
}

/// The blocks of a table: (title, header, rows), checking the empty lines between them.
fn blocks(out: &str) -> Vec<(String, String, Vec<String>)> {
    let mut blocks = Vec::new();
    for block in out.trim_end_matches('\n').split("\n\n") {
        let mut lines = block.lines().map(String::from);
        let title = lines.next().unwrap();
        let header = lines.next().unwrap();
        blocks.push((title, header, lines.collect()));
    }
    blocks
}

/// Checks a table's blocks against the JSON events of the same query: titles, headers that
/// are the first fields of the schema, the number of columns left out, and each shown cell.
fn check_table(out: &str, json_text: &str, width: usize, block_rows: &[usize]) {
    for line in out.lines() {
        assert!(
            line.chars().count() <= width,
            "{} > {width}: {line}",
            line.chars().count()
        );
        assert_eq!(line, line.trim_end(), "trailing spaces");
    }
    let events = json_lines(json_text);
    let blocks = blocks(out);
    assert_eq!(
        blocks.iter().map(|b| b.2.len()).collect::<Vec<_>>(),
        block_rows
    );
    let mut at = 0;
    for (title, header, rows) in &blocks {
        let schema = format!("zeek.{}", events[at]["_path"].as_str().unwrap());
        let fields = fields_of(&schema);
        let names: Vec<&str> = header.split_whitespace().collect();
        assert!(!names.is_empty());
        let shown = names.len();
        // The header is the first fields, the last one maybe cut.
        for (j, name) in names.iter().enumerate() {
            match name.strip_suffix('…') {
                Some(prefix) if j + 1 == shown => assert!(fields[j].starts_with(prefix)),
                _ => assert_eq!(*name, fields[j], "{header}"),
            }
        }
        let more = fields.len() - shown;
        match more {
            0 => assert_eq!(*title, schema),
            1 => assert_eq!(*title, format!("{schema}  … 1 more column")),
            n => assert_eq!(*title, format!("{schema}  … {n} more columns")),
        }
        for row in rows {
            let ev = events[at].as_object().unwrap();
            let cells: Vec<&str> = row
                .split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            assert_eq!(cells.len(), shown, "{row}");
            for (name, cell) in fields.iter().zip(&cells) {
                let Some(v) = ev.get(name) else {
                    assert_eq!(*cell, "-", "{name} in {row}");
                    continue;
                };
                let v = &escape_controls(v);
                let shown_value = match v {
                    Value::String(s) if s.is_empty() => "(empty)".to_string(),
                    Value::Array(a) if a.is_empty() => "(empty)".to_string(),
                    _ => cell.to_string(),
                };
                if let Some(prefix) = cell.strip_suffix('…') {
                    let full = full_text(v);
                    assert!(full.starts_with(prefix), "{name}: {cell} of {full}");
                } else if shown_value == "(empty)" {
                    assert_eq!(*cell, "(empty)");
                } else {
                    assert!(same(cell, v), "{name}: table {cell:?}, JSON {v}");
                }
            }
            at += 1;
        }
    }
    assert_eq!(at, events.len());
}

#[test]
fn the_table_fits_columns_and_shows_every_row() {
    let tmp = tempfile::tempdir().unwrap();
    let db = small_archive(tmp.path());
    let q = "#type == \"zeek.conn\"";
    let json_text = export(&db, &["--to", "json", q]);
    // 1,500 rows: a block of 1,000 and one of 500.
    let out = table(&db, "60", &[q]);
    check_table(&out, &json_text, 60, &[1000, 500]);
    // Wide enough for every column: none left out, and no line longer than needed.
    let out = table(&db, "400", &[q]);
    check_table(&out, &json_text, 400, &[1000, 500]);
    assert!(!out.lines().next().unwrap().contains("more column"));

    // A few schemas, and -n.
    let q = "#type == \"zeek.custom\" || #type == \"zeek.quirks\"";
    let json_text = export(&db, &["--to", "json", q]);
    for width in ["60", "100", "200"] {
        let out = table(&db, width, &[q]);
        check_table(&out, &json_text, width.parse().unwrap(), &[5, 7]);
    }
    let out = table(&db, "60", &["-n", "3"]);
    assert_eq!(blocks(&out).len(), 1);
    assert_eq!(blocks(&out)[0].2.len(), 3);
}

#[test]
fn the_table_escapes_what_is_not_text() {
    let tmp = tempfile::tempdir().unwrap();
    let db = small_archive(tmp.path());
    let out = table(&db, "200", &["#type == \"zeek.quirks\""]);
    // Invalid UTF-8 as the JSON writer's strings read; control characters escaped, so that
    // every event is one line.
    assert!(out.contains("\\xff\\xfe not utf-8 é"), "{out}");
    assert!(out.contains("line\\x0abreak\\x0d\\x0aend"), "{out}");
    assert!(out.contains("tab\\x09and\\x1besc\\x7f"), "{out}");
    assert!(!out.contains('\r') && !out.contains('\t') && !out.contains('\x1b'));
    assert_eq!(out.lines().count(), 2 + 7);
    // Cut by characters: the long non-ASCII value ends in `…` within the width.
    let out = table(&db, "70", &["#type == \"zeek.quirks\""]);
    let line = out.lines().find(|l| l.contains("ünïcödé")).unwrap();
    assert!(line.ends_with('…'), "{line}");
    assert_eq!(line.chars().count(), 70, "{line}");
    assert!(line.len() > 70, "{line}");
}

#[test]
fn without_to_a_pipe_gets_zeek_tsv_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let db = small_archive(tmp.path());
    // `#open` and `#close` carry the time of writing.
    let strip = |t: &str| -> String {
        t.lines()
            .filter(|l| !l.starts_with("#open") && !l.starts_with("#close"))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    let default = export(&db, &[]);
    assert!(default.starts_with("#separator \\x09\n"), "{default}");
    assert_eq!(strip(&default), strip(&export(&db, &["--to", "zeek-tsv"])));
    let get = |args: &[&str]| {
        let mut all = vec!["get", "--db", &db];
        all.extend_from_slice(args);
        ok(&run(&all), "get")
    };
    assert_eq!(
        strip(&get(&["3", "1500"])),
        strip(&get(&["--to", "zeek-tsv", "3", "1500"]))
    );
    // `--help` says what the default is in each case.
    let help = ok(&run(&["export", "--help"]), "help");
    assert!(
        help.contains("[default: table when stdout is a terminal, else zeek-tsv]"),
        "{help}"
    );
    let mut counts = BTreeMap::new();
    for f in ["table", "csv"] {
        counts.insert(f, help.matches(&format!("- {f}:")).count());
    }
    assert_eq!(
        counts.values().copied().collect::<Vec<_>>(),
        [1, 1],
        "{help}"
    );
}
