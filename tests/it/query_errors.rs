//! No silent zeros, on the real binary: a mistake in an expression is an error (exit 2, with
//! the caret and the nearest names) or a warning, never a quiet "0".
//!
//! - unknown field extractors and `#type` names (but `#type != "foobar"` stays valid, and an
//!   empty archive refuses nothing);
//! - comparisons ill-typed in some schemas warn (results unchanged), in all schemas fail,
//!   each with the literal probably meant (`600s`);
//! - `weir run --check` warns about the fields of `filter` transforms;
//! - nesting beyond `MAX_DEPTH`, long conjunctions in linear time, out-of-range literals,
//!   `2.5e2`;
//! - IPv4 addresses equal their IPv4-mapped IPv6 forms (with and without pruning);
//! - `#id` compares event IDs (with and without pruning).
//!
//! The archive is imported from generated Zeek TSV (`zeek.conn` and a `zeek.timing` log whose
//! `duration` is a count); expected counts are computed from the generator, not by weir.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common;
use common::cli::{ok, run, s, text};

use weir::unstable::query::{Query, SearchOptions, MAX_DEPTH};
use weir::unstable::store::Archive;

/// Events of each log.
const N: u64 = 300;

const HEADER: &str =
    "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n";

/// The responder of conn event `i`: 10.6.7.1 written as IPv4, the same address IPv4-mapped,
/// or an IPv6 address.
fn resp_h(i: u64) -> String {
    match i % 3 {
        0 => "10.6.7.1".into(),
        1 => "::ffff:10.6.7.1".into(),
        _ => format!("2001:db8::{:x}", i + 1),
    }
}

/// Conn event `i`'s duration in seconds (unset for every 11th).
fn conn_duration(i: u64) -> Option<u64> {
    (!i.is_multiple_of(11)).then_some(i % 50 * 30)
}

fn conn_log() -> String {
    let mut s = format!(
        "{HEADER}#path\tconn\n#fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto\tduration\torig_bytes\n#types\ttime\tstring\taddr\tport\taddr\tport\tenum\tinterval\tcount\n"
    );
    for i in 0..N {
        let d = conn_duration(i).map_or("-".to_string(), |d| format!("{d}.000000"));
        s.push_str(&format!(
            "{}.000000\tC{i}\t10.0.{}.{}\t{}\t{}\t{}\t{}\t{d}\t{}\n",
            1_258_531_221 + i,
            i % 7,
            i % 200,
            40_000 + i,
            resp_h(i),
            [53, 80, 443][i as usize % 3],
            ["udp", "tcp", "tcp"][i as usize % 3],
            i * 10
        ));
    }
    s
}

/// The timing event `i`'s `duration` (a count), `score` (a double) and `net` (a subnet).
fn timing(i: u64) -> (u64, f64, &'static str) {
    let score = if i.is_multiple_of(4) { 250.0 } else { i as f64 };
    let net = ["10.0.0.0/8", "::ffff:10.0.0.0/104", "192.168.0.0/16"][i as usize % 3];
    (i * 7 % 1000, score, net)
}

fn timing_log() -> String {
    let mut s = format!(
        "{HEADER}#path\ttiming\n#fields\tts\tduration\tscore\tnet\n#types\ttime\tcount\tdouble\tsubnet\n"
    );
    for i in 0..N {
        let (d, score, net) = timing(i);
        s.push_str(&format!(
            "{}.000000\t{d}\t{score:.1}\t{net}\n",
            1_258_531_221 + i
        ));
    }
    s
}

/// An archive of the given logs (written to `dir`), in small batches.
fn archive(dir: &Path, logs: &[(&str, String)]) -> String {
    let db = dir.join("db");
    let mut args = vec![
        "import".to_string(),
        "--db".into(),
        s(&db).into(),
        "--batch-size".into(),
        "64".into(),
    ];
    for (name, body) in logs {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        args.push(s(&p).into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&run(&args), "import");
    s(&db).to_string()
}

fn both(dir: &Path) -> String {
    archive(
        dir,
        &[("conn.log", conn_log()), ("timing.log", timing_log())],
    )
}

/// `weir count EXPR`: its exit status, stdout and stderr.
fn count(db: &str, expr: &str) -> (Option<i32>, String, String) {
    let out = run(&["count", "--db", db, expr]);
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// Asserts exit 2 with `msg` and the caret under byte `pos` of `expr`.
fn refused(db: &str, expr: &str, pos: usize, msg: &str) -> String {
    let (code, out, err) = count(db, expr);
    assert_eq!(code, Some(2), "{expr}: {out}{err}");
    assert!(err.contains(msg), "{expr}: {err}");
    let caret = format!("\n  {}^", " ".repeat(expr[..pos].chars().count()));
    assert!(err.contains(&caret), "{expr}: caret not at {pos}: {err}");
    err
}

#[test]
fn unknown_fields_and_type_names_are_errors_with_suggestions() {
    let tmp = tempfile::tempdir().unwrap();
    let db = both(tmp.path());
    refused(
        &db,
        "duraton > 10min",
        0,
        "no field `duraton` in any schema of the archive; did you mean `duration`?",
    );
    refused(
        &db,
        "uid == \"C1\" || conn.duraton > 1s",
        15,
        "no field `conn.duraton` in any schema of the archive; did you mean `conn.duration`?",
    );
    // Flipped, the caret is still at the field.
    refused(&db, "1s < duraton", 5, "no field `duraton`");
    refused(
        &db,
        "#type == \"conn\"",
        9,
        "no schema named \"conn\" in the archive, and no Zeek log is named so",
    );
    let err = refused(&db, "#type == \"conn\"", 9, "did you mean \"zeek.conn\"?");
    assert!(!err.contains("panicked"), "{err}");
    refused(
        &db,
        "#type in [\"zeek.conn\", \"zeek.timng\"]",
        9,
        "did you mean \"zeek.timing\"?",
    );
    // Also with `-n 0`, and for export.
    let out = run(&["export", "--db", &db, "-n", "0", "duraton > 1s"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));

    // Negative predicates stay valid, as in VAST's integration queries; a Zeek log the
    // archive lacks is no mistake; a field of a schema the query does not reach is known.
    for (expr, want) in [
        ("#type != \"foobar\"", 2 * N),
        ("#type !in [\"foobar\", \"zeek.conn\"]", N),
        ("#type == \"zeek.smtp\"", 0),
        ("#type == \"zeek.conn\" && score > 1.0", 0),
        ("#type == \"zeek.timing\" && orig_bytes > 0", 0),
    ] {
        let (code, out, err) = count(&db, expr);
        assert_eq!(
            (code, out.trim()),
            (Some(0), want.to_string().as_str()),
            "{expr}: {err}"
        );
        assert!(!err.contains("warning"), "{expr}: {err}");
    }

    // An empty archive has nothing to check against.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let edb = archive(
        &empty,
        &[(
            "conn.log",
            format!("{HEADER}#path\tconn\n#fields\tts\tuid\n#types\ttime\tstring\n"),
        )],
    );
    for expr in ["duraton > 1s", "#type == \"conn\""] {
        assert_eq!(count(&edb, expr), (Some(0), "0\n".into(), String::new()));
    }

    // The library gives the same check to any list of field names (`select`, `sort`, ...).
    let archive = Archive::open(Path::new(&db)).unwrap();
    let schemas: Vec<_> = archive
        .scan()
        .map(|b| b.unwrap().schema().clone())
        .collect();
    let e = weir::unstable::query::unknown_field("sort duraton", 5, "duraton", &schemas).unwrap();
    assert_eq!(e.pos, 5);
    assert!(e.message.contains("did you mean `duration`?"), "{e}");
    assert!(
        weir::unstable::query::unknown_field("sort id.resp_h", 5, "resp_h", &schemas).is_none()
    );
}

#[test]
fn partly_ill_typed_predicates_warn_and_wholly_ill_typed_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let db = both(tmp.path());
    // `duration` is an interval in zeek.conn, a count in zeek.timing: `> 600` compares the
    // counts; conn's events never match it.
    let (code, out, err) = count(&db, "duration > 600");
    let want = (0..N).filter(|&i| timing(i).0 > 600).count();
    assert_eq!(
        (code, out.trim()),
        (Some(0), want.to_string().as_str()),
        "{err}"
    );
    assert!(
        err.starts_with("weir: warning: `duration > 600` at column 1:"),
        "{err}"
    );
    for part in [
        "field duration is of type interval in zeek.conn",
        "cannot be compared with 600 of type count",
        "did you mean `600s`?",
    ] {
        assert!(err.contains(part), "{part}: {err}");
    }
    // And the intervals, with the literal meant: the counts never match.
    let (code, out, err) = count(&db, "duration > 600s");
    let want = (0..N)
        .filter(|&i| conn_duration(i).is_some_and(|d| d > 600))
        .count();
    assert_eq!(
        (code, out.trim()),
        (Some(0), want.to_string().as_str()),
        "{err}"
    );
    assert!(
        err.contains("field duration is of type count in zeek.timing"),
        "{err}"
    );
    // Export warns too, and prints the same events.
    let out = run(&["export", "--db", &db, "--to", "json", "duration > 600"]);
    assert!(text(&out.stderr).contains("weir: warning:"));
    assert_eq!(
        text(&out.stdout).lines().count(),
        (0..N).filter(|&i| timing(i).0 > 600).count()
    );
    // Well-typed everywhere: no warning.
    let (_, _, err) = count(&db, "orig_bytes > 600");
    assert_eq!(err, "");

    // Ill-typed in every schema: an error, with the hint.
    let conn_only = tmp.path().join("conn_only");
    std::fs::create_dir(&conn_only).unwrap();
    let cdb = archive(&conn_only, &[("conn.log", conn_log())]);
    let err = refused(
        &cdb,
        "duration > 600",
        0,
        "type mismatch in `duration > 600`: field duration is of type interval and 600 is of type count",
    );
    assert!(err.contains("did you mean `600s`?"), "{err}");
    let err = refused(&cdb, "id.resp_h == 10.6.0.0/16", 0, "type mismatch");
    assert!(err.contains("did you mean `in 10.6.0.0/16`?"), "{err}");
    let err = refused(&cdb, "ts > \"2009-11-18\"", 0, "type mismatch");
    assert!(err.contains("did you mean `2009-11-18`?"), "{err}");
}

#[test]
fn run_check_warns_about_unknown_filter_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let log = dir.join("timing.log");
    std::fs::write(&log, timing_log()).unwrap();
    let schemas = dir.join("schemas");
    std::fs::create_dir(&schemas).unwrap();
    std::fs::write(
        schemas.join("timing.toml"),
        "format = 1\npath = \"timing\"\nfields = [[\"ts\", \"time\"], [\"duration\", \"count\"], [\"score\", \"double\"], [\"net\", \"subnet\"]]\n",
    )
    .unwrap();
    let pipeline = dir.join("p.toml");
    let write = |filters: &[(&str, &str)], schema_dir: bool| {
        let mut t = format!(
            "[sources.logs]\ntype = \"file\"\npaths = [{:?}]\n{}\n",
            s(&log),
            if schema_dir {
                format!("schema_dir = {:?}\n", s(&schemas))
            } else {
                String::new()
            }
        );
        let mut input = "logs".to_string();
        for (name, expr) in filters {
            t.push_str(&format!(
                "[transforms.{name}]\ntype = \"filter\"\ninputs = [\"{input}\"]\nwhere = {expr:?}\n\n"
            ));
            input = name.to_string();
        }
        t.push_str(&format!(
            "[sinks.out]\ntype = \"stdout\"\ninputs = [\"{input}\"]\n"
        ));
        std::fs::write(&pipeline, t).unwrap();
    };
    write(
        &[
            ("typo", "duraton > 1s"),
            ("long", "duration > 3600"),
            ("fine", "id.resp_p == 53 || score > 1.0"),
        ],
        true,
    );
    let out = run(&["run", "--check", s(&pipeline)]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("weir: warning:"))
        .collect();
    assert_eq!(warnings.len(), 2, "{err}");
    assert!(
        warnings[0].contains("[transforms.typo] where: no field `duraton`")
            && warnings[0].contains("did you mean `duration`?"),
        "{err}"
    );
    // `duration` is an interval in zeek.conn (shipped) and a count in the schema_dir's log.
    assert!(
        warnings[1].contains("[transforms.long] where:")
            && warnings[1].contains("field duration is of type interval in zeek.conn")
            && warnings[1].contains("did you mean `3600s`?"),
        "{err}"
    );
    assert!(err.contains(": ok (5 stages"), "{err}");
    // Without the schema_dir, `score` is unknown and `duration > 3600` ill-typed everywhere.
    write(&[("long", "duration > 3600 && score > 1.0")], false);
    let out = run(&["run", "--check", s(&pipeline)]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("type mismatch in `duration > 3600`"), "{err}");
    assert!(
        err.contains("no field `score` in any schema its sources can produce"),
        "{err}"
    );
    // A clean file: no warning.
    write(&[("fine", "id.resp_p == 53")], false);
    let out = run(&["run", "--check", s(&pipeline)]);
    assert!(
        !text(&out.stderr).contains("warning"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn nesting_beyond_the_limit_is_an_error_not_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let db = both(tmp.path());
    let parens = format!("{}uid == \"C1\"{}", "(".repeat(10_000), ")".repeat(10_000));
    let nots = format!("{}uid == \"C1\"", "!".repeat(20_000));
    for expr in [&parens, &nots] {
        let (code, _, err) = count(&db, expr);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!("nesting too deep: parentheses, negations (!) and lists nest at most {MAX_DEPTH} levels at column {}", MAX_DEPTH + 1)),
            "{}",
            &err[..200.min(err.len())]
        );
    }
    // At the limit: fine (an even number of `!` is no negation).
    let at = format!(
        "{}uid == \"C1\"{}",
        "(".repeat(MAX_DEPTH),
        ")".repeat(MAX_DEPTH)
    );
    assert_eq!(count(&db, &at).1, "1\n");
    let at = format!("{}uid == \"C1\"", "!".repeat(MAX_DEPTH));
    assert_eq!(count(&db, &at).1, "1\n");
}

/// Parses, checks and binds `n` predicates joined by `&&` against the archive's schemas: the
/// best of three times.
fn plan_time(n: usize, schemas: &[weir::unstable::types::SchemaRef]) -> Duration {
    let text: Vec<String> = (0..n).map(|i| format!("id.resp_p != {i}")).collect();
    let text = text.join(" && ");
    (0..3)
        .map(|_| {
            let start = Instant::now();
            let q = Query::parse(&text).unwrap();
            q.check(schemas).unwrap();
            for s in schemas {
                std::hint::black_box(q.bind(s));
            }
            start.elapsed()
        })
        .min()
        .unwrap()
}

#[test]
fn long_conjunctions_parse_and_plan_in_linear_time() {
    let tmp = tempfile::tempdir().unwrap();
    let db = both(tmp.path());
    // 6,000 predicates (about the longest argument a process takes): 9.8 s before.
    let expr: Vec<String> = (0..6000)
        .map(|i| format!("id.resp_p != {}", i + 1))
        .collect();
    let start = Instant::now();
    let (code, out, err) = count(&db, &expr.join(" && "));
    let took = start.elapsed();
    assert_eq!(code, Some(0), "{err}");
    // Every conn event has a port of 53, 80 or 443, each among the excluded ones.
    assert_eq!(out, "0\n");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // Linear: four times the predicates take about four times as long (sixteen if
    // quadratic), in the library.
    let archive = Archive::open(Path::new(&db)).unwrap();
    let mut schemas: Vec<weir::unstable::types::SchemaRef> = Vec::new();
    for b in archive.scan() {
        let s = b.unwrap().schema().clone();
        if !schemas.contains(&s) {
            schemas.push(s);
        }
    }
    let small = plan_time(4000, &schemas);
    let large = plan_time(16_000, &schemas);
    assert!(
        large < small * 9,
        "4,000 predicates: {small:?}, 16,000: {large:?}"
    );
}

#[test]
fn out_of_range_literals_are_named_and_exponents_are_reals() {
    let tmp = tempfile::tempdir().unwrap();
    let db = both(tmp.path());
    for (expr, pos, kind) in [
        ("ts < 2263-01-01", 5, "a time"),
        ("orig_bytes == 18446744073709551616", 14, "a count"),
        ("id.resp_p == 70000/tcp", 13, "a port"),
        ("duration > 106752d", 11, "a duration"),
        ("ts > now - 106752d", 11, "a duration"),
        ("ts > @9999999999999", 5, "a time"),
    ] {
        let word = expr[pos..].split(' ').next().unwrap();
        refused(
            &db,
            expr,
            pos,
            &format!("`{word}` is out of range for {kind}"),
        );
    }
    // 2.5e2 is the real 250.0.
    let want = (0..N).filter(|&i| timing(i).1 == 250.0).count();
    for expr in ["score == 2.5e2", "score == 250.0", "score == 25e1"] {
        assert_eq!(count(&db, expr).1, format!("{want}\n"), "{expr}");
    }
}

#[test]
fn ipv4_addresses_equal_their_ipv4_mapped_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let db = both(tmp.path());
    let v4_or_mapped = (0..N).filter(|i| i % 3 != 2).count();
    let v6 = (0..N).filter(|i| i % 3 == 2).count();
    let net_10 = (0..N).filter(|i| i % 3 != 2).count();
    for (expr, want) in [
        ("id.resp_h == 10.6.7.1", v4_or_mapped),
        ("id.resp_h == ::ffff:10.6.7.1", v4_or_mapped),
        ("id.resp_h != ::ffff:10.6.7.1", v6),
        ("::ffff:10.6.7.1", v4_or_mapped),
        ("id.resp_h in [::ffff:10.6.7.1, 192.0.2.1]", v4_or_mapped),
        ("id.resp_h in ::/0", N as usize),
        ("id.resp_h in ::ffff:0:0/96", v4_or_mapped),
        ("id.resp_h in 10.6.0.0/16", v4_or_mapped),
        ("id.resp_h in ::ffff:10.6.0.0/112", v4_or_mapped),
        ("id.resp_h !in 0.0.0.0/0", v6),
        ("id.resp_h in 2001:db8::/32", v6),
        // Subnets compare through the mapping too.
        ("net == 10.0.0.0/8", net_10),
        ("net == ::ffff:10.0.0.0/104", net_10),
        ("net ni 10.1.2.3", net_10),
        ("net in ::ffff:0:0/96", N as usize),
    ] {
        let (code, out, err) = count(&db, expr);
        assert_eq!(
            (code, out.trim()),
            (Some(0), want.to_string().as_str()),
            "{expr}: {err}"
        );
        // Pruned (sketches, needles) and unpruned searches agree.
        let archive = Archive::open(Path::new(&db)).unwrap();
        let q = Query::parse(expr).unwrap();
        let ids = |prune| -> Vec<u64> {
            q.search_with(
                &archive,
                SearchOptions {
                    prune,
                    ..SearchOptions::default()
                },
            )
            .unwrap()
            .flat_map(|h| h.unwrap().ids())
            .collect()
        };
        assert_eq!(ids(true), ids(false), "{expr}");
        assert_eq!(ids(true).len(), want, "{expr}");
    }
}

/// The ID of the event whose `uid` is `uid`, by a scan of every event's values.
fn uid_id(archive: &Archive, uid: &str) -> u64 {
    for b in archive.scan() {
        let b = b.unwrap();
        let Some(k) = b.schema().fields.iter().position(|f| f.name == "uid") else {
            continue;
        };
        for (i, values) in b.to_batch().to_values().unwrap().into_iter().enumerate() {
            if values[k] == weir::unstable::value::Value::String(uid.as_bytes().to_vec()) {
                return b.first_id() + i as u64;
            }
        }
    }
    panic!("no event with uid {uid}")
}

#[test]
fn event_ids_are_within_reach() {
    let tmp = tempfile::tempdir().unwrap();
    let db = both(tmp.path());
    let archive = Archive::open(Path::new(&db)).unwrap();
    // Every ID, from a plain scan.
    let all: Vec<u64> = archive.scan().flat_map(|b| b.unwrap().id_range()).collect();
    assert_eq!(all.len() as u64, 2 * N);
    type Pick = fn(u64) -> bool;
    let cases: [(&str, Pick); 8] = [
        ("#id >= 100 && #id < 200", |i| (100..200).contains(&i)),
        ("#id == 5", |i| i == 5),
        ("#id in [1, 5, 9]", |i| [1, 5, 9].contains(&i)),
        ("#id !in [1, 5, 9]", |i| ![1, 5, 9].contains(&i)),
        ("#id != 64", |i| i != 64),
        ("#id < 64 || #id > 500", |i| !(64..=500).contains(&i)),
        ("#id >= 0", |_| true),
        ("#id > 100 && uid == \"C150\"", |_| false),
    ];
    for (expr, pick) in cases {
        let want: Vec<u64> = all.iter().copied().filter(|&i| pick(i)).collect();
        let want = if expr.contains("C150") {
            // The ID of the event whose uid is C150, from a plain scan of the values.
            let id = uid_id(&archive, "C150");
            if id > 100 {
                vec![id]
            } else {
                vec![]
            }
        } else {
            want
        };
        let (code, out, err) = count(&db, expr);
        assert_eq!(
            (code, out.trim()),
            (Some(0), want.len().to_string().as_str()),
            "{expr}: {err}"
        );
        let q = Query::parse(expr).unwrap();
        for prune in [true, false] {
            let got: Vec<u64> = q
                .search_with(
                    &archive,
                    SearchOptions {
                        prune,
                        ..SearchOptions::default()
                    },
                )
                .unwrap()
                .flat_map(|h| h.unwrap().ids())
                .collect();
            assert_eq!(got, want, "{expr} (prune: {prune})");
        }
    }
    // The events `weir get` prints for those IDs are those `#id` selects.
    let get = ok(&run(&["get", "--db", &db, "--to", "json", "7", "8"]), "get");
    let export = ok(
        &run(&["export", "--db", &db, "--to", "json", "#id in [7, 8]"]),
        "export",
    );
    assert_eq!(get, export);
    // Not a count: refused; in a pipeline's filter: refused (no IDs there).
    refused(
        &db,
        "#id > 2.5",
        0,
        "#id (a count) cannot be compared with 2.5",
    );
    let log = tmp.path().join("conn.log");
    let out = run(&["convert", "--where", "uid == \"C1\" || #id == 1", s(&log)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("the events of a pipeline have none yet"));
}

/// On the shared corpus: the silent zeros of the issue are errors, and an address of the
/// corpus counts the same in both forms.
#[test]
fn the_corpus_mistakes_are_refused() {
    let Some(corpus) = common::corpus::dir() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let conn = corpus.join("conn.log.gz");
    ok(
        &run(&["import", "--db", s(&db), s(&conn)]),
        "import the corpus's conn.log",
    );
    let db = s(&db);
    refused(db, "duraton > 10min", 0, "did you mean `duration`?");
    refused(db, "#type == \"conn\"", 9, "did you mean \"zeek.conn\"?");
    let err = refused(db, "duration > 600", 0, "type mismatch");
    assert!(err.contains("did you mean `600s`?"), "{err}");
    let v4 = count(db, "id.resp_h == 192.168.1.1");
    let mapped = count(db, "id.resp_h == ::ffff:192.168.1.1");
    assert_eq!(v4.0, Some(0));
    assert_ne!(v4.1, "0\n");
    assert_eq!(v4, mapped);
}

/// `weir run --check` warns about the field names of `query` transforms too (the
/// expressions' and the operators'), and refuses a blocking operator after a followed source.
#[test]
fn run_check_warns_about_query_transform_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let log = dir.join("conn.log");
    std::fs::write(&log, common::conn_log::log(0..3)).unwrap();
    let pipeline = dir.join("p.toml");
    let write = |query: &str, follow: bool| {
        let t = format!(
            "[sources.logs]\ntype = \"file\"\npaths = [{:?}]\nfollow = {follow}\n\n\
             [transforms.q]\ntype = \"query\"\ninputs = [\"logs\"]\nquery = {query:?}\n\n\
             [sinks.out]\ntype = \"stdout\"\ninputs = [\"q\"]\n",
            s(&log)
        );
        std::fs::write(&pipeline, t).unwrap();
    };
    write("where duraton > 1h | select uidd, duration | head 2", false);
    let out = run(&["run", "--check", s(&pipeline)]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("[transforms.q] query: no field `duraton`"),
        "{err}"
    );
    assert!(err.contains("did you mean `duration`?"), "{err}");
    assert!(err.contains("no field `uidd`"), "{err}");
    assert!(err.contains("did you mean `uid`"), "{err}");
    write("where duration > 1h | select uid, duration | head 2", false);
    let out = run(&["run", "--check", s(&pipeline)]);
    let err = text(&out.stderr);
    assert!(out.status.success() && !err.contains("warning"), "{err}");
    // Streaming operators run on live input; blocking ones are refused there.
    write("select uid | head 2", true);
    let out = run(&["run", "--check", s(&pipeline)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    write("summarize count() by proto", true);
    let out = run(&["run", "--check", s(&pipeline)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`summarize` emits only at the end of its input"),
        "{err}"
    );
}
