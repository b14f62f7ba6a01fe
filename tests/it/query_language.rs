//! The expression language, table-driven: each expression runs over an archive of the real
//! Zeek corpus plus `tests/fixtures/query/custom.log` (containers, unset values, subnets,
//! ports with protocols, ints, doubles, escapes), and its result must equal a brute-force
//! filter written independently in Rust over every exported event, in ID order, with and
//! without pruning; `count` must agree. Malformed and ill-typed expressions must fail at the
//! right position.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use weir::unstable::query::{Query, SearchOptions};
use weir::unstable::store::Archive;
use weir::unstable::types::{SchemaRef, Type};
use weir::unstable::value::Value;

/// One exported event.
struct Ev {
    id: u64,
    schema: SchemaRef,
    values: Vec<Value>,
}

impl Ev {
    fn name(&self) -> &str {
        &self.schema.name
    }

    /// The set values of the fields `name` resolves to (qualified name equal, or ending in
    /// `.name`).
    fn fields(&self, name: &str) -> Vec<(&Type, &Value)> {
        self.schema
            .fields
            .iter()
            .zip(&self.values)
            .filter(|(f, v)| {
                let q = format!("{}.{}", self.schema.name, f.name);
                (q == name || q.ends_with(&format!(".{name}"))) && !matches!(v, Value::Null)
            })
            .map(|(f, v)| (&f.ty, v))
            .collect()
    }

    fn has_field(&self, name: &str) -> bool {
        self.schema.fields.iter().any(|f| {
            let q = format!("{}.{}", self.schema.name, f.name);
            q == name || q.ends_with(&format!(".{name}"))
        })
    }

    fn any(&self, name: &str, f: impl Fn(&Value) -> bool) -> bool {
        self.fields(name).into_iter().any(|(_, v)| f(v))
    }

    /// Set values of scalar fields whose type satisfies `t`.
    fn typed(&self, t: impl Fn(&Type) -> bool) -> Vec<&Value> {
        self.schema
            .fields
            .iter()
            .zip(&self.values)
            .filter(|(f, v)| t(&f.ty) && !matches!(v, Value::Null))
            .map(|(_, v)| v)
            .collect()
    }

    fn ts(&self) -> Option<i64> {
        let i = self.schema.ts_index()?;
        match self.values[i] {
            Value::Time(t) => Some(t),
            _ => None,
        }
    }

    fn string(&self, name: &str) -> Option<&[u8]> {
        self.fields(name).into_iter().find_map(|(_, v)| match v {
            Value::String(s) => Some(s.as_slice()),
            _ => None,
        })
    }
}

fn num(v: &Value) -> Option<f64> {
    match *v {
        Value::Count(x) | Value::Port(x) => Some(x as f64),
        Value::Int(x) => Some(x as f64),
        Value::Double(x) => Some(x),
        _ => None,
    }
}

fn addr(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn in_net(a: &IpAddr, net: &str) -> bool {
    let (n, p) = net.split_once('/').unwrap();
    let (n, p): (IpAddr, u32) = (n.parse().unwrap(), p.parse().unwrap());
    let a = match a {
        IpAddr::V6(v) => v.to_ipv4_mapped().map_or(*a, IpAddr::V4),
        v => *v,
    };
    match (a, n) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let m = u32::MAX.checked_shl(32 - p).unwrap_or(0);
            u32::from(a) & m == u32::from(n) & m
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let m = u128::MAX.checked_shl(128 - p).unwrap_or(0);
            u128::from(a) & m == u128::from(n) & m
        }
        _ => false,
    }
}

/// An address as 128 bits, IPv4 as its IPv4-mapped IPv6 form (::ffff:a.b.c.d).
fn mapped(a: &IpAddr) -> u128 {
    match a {
        IpAddr::V4(v) => 0xffff_0000_0000 | u128::from(u32::from(*v)),
        IpAddr::V6(v) => u128::from(*v),
    }
}

/// Whether `v` is the address `want`, IPv4 and IPv4-mapped IPv6 forms alike.
fn mapped_eq(v: &Value, want: &str) -> bool {
    matches!(v, Value::Addr(a) if mapped(a) == mapped(&addr(want)))
}

fn is_str(v: &Value, s: &str) -> bool {
    matches!(v, Value::String(b) if b == s.as_bytes())
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len().max(1))
        .any(|w| w == needle.as_bytes())
}

/// 2009-11-18T00:00:00Z in nanoseconds.
const DAY: i64 = 1_258_502_400_000_000_000;
const H: i64 = 3_600_000_000_000;
const S: i64 = 1_000_000_000;

type Oracle = fn(&Ev) -> bool;

/// (expression, brute-force filter, must match something when the corpus is there).
fn table() -> Vec<(&'static str, Oracle, bool)> {
    vec![
        // Meta extractors.
        ("#type == \"zeek.conn\"", |e| e.name() == "zeek.conn", true),
        ("#type != \"zeek.conn\"", |e| e.name() != "zeek.conn", true),
        ("\"zeek\" in #type", |e| e.name().contains("zeek"), true),
        (
            "#type ~ /zeek\\.(dns|http)/",
            |e| e.name() == "zeek.dns" || e.name() == "zeek.http",
            true,
        ),
        (
            "#type in [\"zeek.dns\", \"zeek.snmp\"]",
            |e| e.name() == "zeek.dns" || e.name() == "zeek.snmp",
            true,
        ),
        (
            "#field == \"rcode_name\"",
            |e| e.has_field("rcode_name"),
            true,
        ),
        ("#field != \"query\"", |e| !e.has_field("query"), true),
        (
            "#timestamp >= 2009-11-18T09:00:00+01:00 && #timestamp <= 2009-11-18T08:30:00Z",
            |e| {
                e.ts()
                    .is_some_and(|t| (DAY + 8 * H..=DAY + 8 * H + 1800 * S).contains(&t))
            },
            true,
        ),
        // Field extractors: full, suffix, qualified; ports with and without protocol.
        (
            "id.resp_p == 53",
            |e| e.any("id.resp_p", |v| num(v) == Some(53.0)),
            true,
        ),
        (
            "resp_p == 53/udp",
            |e| {
                e.any("resp_p", |v| num(v) == Some(53.0))
                    && e.fields("proto").iter().all(|(_, v)| is_str(v, "udp"))
            },
            true,
        ),
        (
            "resp_p != 53/udp && #type == \"zeek.custom\"",
            |e| {
                e.name() == "zeek.custom"
                    && e.any("resp_p", |v| {
                        num(v) != Some(53.0)
                            || !e.fields("proto").iter().all(|(_, p)| is_str(p, "udp"))
                    })
            },
            true,
        ),
        (
            "zeek.conn.id.resp_h == 192.168.1.1",
            |e| {
                e.name() == "zeek.conn"
                    && e.any("id.resp_h", |v| *v == Value::Addr(addr("192.168.1.1")))
            },
            true,
        ),
        (
            "conn.duration > 2min",
            |e| {
                e.name() == "zeek.conn"
                    && e.any(
                        "duration",
                        |v| matches!(v, Value::Interval(d) if *d > 120 * S),
                    )
            },
            true,
        ),
        (
            "duration > 10s",
            |e| {
                e.any(
                    "duration",
                    |v| matches!(v, Value::Interval(d) if *d > 10 * S),
                )
            },
            true,
        ),
        (
            "duration <= 1.5ms",
            |e| {
                e.any(
                    "duration",
                    |v| matches!(v, Value::Interval(d) if *d <= 1_500_000),
                )
            },
            true,
        ),
        (
            "orig_h == 192.168.1.104",
            |e| e.any("orig_h", |v| *v == Value::Addr(addr("192.168.1.104"))),
            true,
        ),
        (
            "id.orig_h in 192.168.0.0/16",
            |e| {
                e.any(
                    "id.orig_h",
                    |v| matches!(v, Value::Addr(a) if in_net(a, "192.168.0.0/16")),
                )
            },
            true,
        ),
        (
            "orig_h !in 192.168.0.0/16",
            |e| {
                e.any(
                    "orig_h",
                    |v| matches!(v, Value::Addr(a) if !in_net(a, "192.168.0.0/16")),
                )
            },
            true,
        ),
        (
            "resp_h in 10.0.0.0/8",
            |e| {
                e.any(
                    "resp_h",
                    |v| matches!(v, Value::Addr(a) if in_net(a, "10.0.0.0/8")),
                )
            },
            true,
        ),
        // Addresses as VAST compares them: IPv4 is its IPv4-mapped IPv6 form (the fixture
        // stores 10.0.0.2 in IPv4 and ::ffff:10.0.0.9 in IPv6).
        (
            "resp_h == ::ffff:10.0.0.2",
            |e| e.any("resp_h", |v| mapped_eq(v, "::ffff:10.0.0.2")),
            true,
        ),
        (
            "id.resp_h == 10.0.0.9",
            |e| e.any("id.resp_h", |v| mapped_eq(v, "10.0.0.9")),
            true,
        ),
        (
            "resp_h in ::/0 && #type == \"zeek.custom\"",
            |e| e.name() == "zeek.custom" && e.any("resp_h", |v| matches!(v, Value::Addr(_))),
            true,
        ),
        (
            "orig_h in ::ffff:0:0/96",
            |e| {
                e.any(
                    "orig_h",
                    |v| matches!(v, Value::Addr(a) if mapped(a) >> 32 == 0xffff),
                )
            },
            true,
        ),
        (
            "net ni 10.1.2.3",
            |e| {
                e.any("net", |v| matches!(v, Value::Subnet(n, p) if in_net(&addr("10.1.2.3"), &format!("{n}/{p}"))))
            },
            true,
        ),
        (
            "10.0.0.0/16 in net",
            |e| {
                e.any("net", |v| matches!(v, Value::Subnet(n, p) if *p <= 16 && in_net(&addr("10.0.0.0"), &format!("{n}/{p}"))))
            },
            true,
        ),
        (
            "orig_bytes > 1k",
            |e| e.any("orig_bytes", |v| num(v).is_some_and(|n| n > 1000.0)),
            true,
        ),
        (
            "orig_bytes >= 1Ki && orig_bytes < 2Ki",
            |e| {
                e.any("orig_bytes", |v| num(v).is_some_and(|n| n >= 1024.0))
                    && e.any("orig_bytes", |v| num(v).is_some_and(|n| n < 2048.0))
            },
            true,
        ),
        // Integer comparisons across count and int, negated, and of time and interval fields
        // (the evaluator's precompiled ranges).
        (
            "orig_bytes != 0",
            |e| e.any("orig_bytes", |v| num(v).is_some_and(|n| n != 0.0)),
            true,
        ),
        (
            "orig_bytes > -1 && #type == \"zeek.conn\"",
            |e| e.name() == "zeek.conn" && e.any("orig_bytes", |v| num(v).is_some()),
            true,
        ),
        (
            "n <= 3",
            |e| e.any("n", |v| num(v).is_some_and(|n| n <= 3.0)),
            true,
        ),
        (
            "n != -5",
            |e| e.any("n", |v| num(v).is_some_and(|n| n != -5.0)),
            true,
        ),
        (
            "ts < 2009-11-18T08:00:30Z",
            |e| {
                e.any(
                    "ts",
                    |v| matches!(v, Value::Time(t) if *t < DAY + 8 * H + 30 * S),
                )
            },
            false,
        ),
        (
            "duration != 0s",
            |e| e.any("duration", |v| matches!(v, Value::Interval(d) if *d != 0)),
            true,
        ),
        ("n == -5", |e| e.any("n", |v| num(v) == Some(-5.0)), true),
        (
            "n > +3",
            |e| e.any("n", |v| num(v).is_some_and(|n| n > 3.0)),
            true,
        ),
        (
            "x < 0.5",
            |e| e.any("x", |v| num(v).is_some_and(|n| n < 0.5)),
            true,
        ),
        ("x == 1", |e| e.any("x", |v| num(v) == Some(1.0)), true),
        (
            "ok == T",
            |e| e.any("ok", |v| *v == Value::Bool(true)),
            true,
        ),
        (
            "local_orig == false",
            |e| e.any("local_orig", |v| *v == Value::Bool(false)),
            false,
        ),
        (
            "note == \"say \\\"hi\\\"\"",
            |e| e.any("note", |v| is_str(v, "say \"hi\"")),
            true,
        ),
        (
            "note == \"x\\x41y\"",
            |e| e.any("note", |v| is_str(v, "xAy")),
            true,
        ),
        // Type extractors and value predicates.
        (
            ":count == 53",
            |e| {
                e.typed(|t| matches!(t, Type::Count | Type::Port))
                    .iter()
                    .any(|v| num(v) == Some(53.0))
            },
            true,
        ),
        (
            "53",
            |e| {
                e.typed(|t| matches!(t, Type::Count | Type::Port))
                    .iter()
                    .any(|v| num(v) == Some(53.0))
            },
            true,
        ),
        (
            ":port >= 1024 && :port < 2048",
            |e| {
                e.typed(|t| *t == Type::Port)
                    .iter()
                    .any(|v| num(v).unwrap() >= 1024.0)
                    && e.typed(|t| *t == Type::Port)
                        .iter()
                        .any(|v| num(v).unwrap() < 2048.0)
            },
            true,
        ),
        (
            "192.168.1.104",
            |e| {
                e.typed(|t| *t == Type::Addr)
                    .contains(&&Value::Addr(addr("192.168.1.104")))
            },
            true,
        ),
        (
            ":subnet == 192.168.1.0/24",
            |e| {
                e.typed(|t| *t == Type::Addr)
                    .iter()
                    .any(|v| matches!(v, Value::Addr(a) if in_net(a, "192.168.1.0/24")))
                    || e.typed(|t| *t == Type::Subnet)
                        .iter()
                        .any(|v| matches!(v, Value::Subnet(n, 24) if in_net(n, "192.168.1.0/24")))
            },
            true,
        ),
        (
            "10.0.0.0/8",
            |e| {
                e.typed(|t| *t == Type::Addr)
                    .iter()
                    .any(|v| matches!(v, Value::Addr(a) if in_net(a, "10.0.0.0/8")))
                    || e.typed(|t| *t == Type::Subnet)
                        .iter()
                        .any(|v| matches!(v, Value::Subnet(n, 8) if in_net(n, "10.0.0.0/8")))
            },
            true,
        ),
        (
            ":duration > 1min",
            |e| {
                e.typed(|t| *t == Type::Interval)
                    .iter()
                    .any(|v| matches!(v, Value::Interval(d) if *d > 60 * S))
            },
            true,
        ),
        (
            ":bool == true",
            |e| e.typed(|t| *t == Type::Bool).contains(&&Value::Bool(true)),
            true,
        ),
        (
            ":enum == \"tcp\"",
            |e| {
                e.typed(|t| *t == Type::Enum)
                    .iter()
                    .any(|v| is_str(v, "tcp"))
            },
            true,
        ),
        (
            "\"dns\"",
            |e| {
                e.typed(|t| matches!(t, Type::String | Type::File))
                    .iter()
                    .any(|v| is_str(v, "dns"))
            },
            true,
        ),
        (
            ":real < 0",
            |e| {
                e.typed(|t| *t == Type::Double)
                    .iter()
                    .any(|v| num(v).is_some_and(|n| n < 0.0))
            },
            true,
        ),
        (
            ":int == +7",
            |e| {
                e.typed(|t| *t == Type::Int)
                    .iter()
                    .any(|v| num(v) == Some(7.0))
            },
            true,
        ),
        // Times.
        (
            "ts > 2009-11-18T10:00:00Z",
            |e| e.any("ts", |v| matches!(v, Value::Time(t) if *t > DAY + 10 * H)),
            true,
        ),
        (
            ":timestamp < 2009-11-18+08:05",
            |e| e.ts().is_some_and(|t| t < DAY + 8 * H + 300 * S),
            true,
        ),
        (
            ":time == 2009-11-18T08:00:22Z",
            |e| {
                e.typed(|t| *t == Type::Time)
                    .contains(&&Value::Time(DAY + 8 * H + 22 * S))
            },
            true,
        ),
        ("ts > now", |_| false, false),
        ("ts < now - 1d", |e| e.any("ts", |_| true), true),
        // Strings and patterns.
        (
            "query ~ /.*google.*/",
            |e| e.string("query").is_some_and(|s| contains(s, "google")),
            true,
        ),
        (
            "\"google\" in query",
            |e| e.string("query").is_some_and(|s| contains(s, "google")),
            true,
        ),
        (
            "query in [\"www.google.com\", \"google.com\"]",
            |e| {
                e.any("query", |v| {
                    is_str(v, "www.google.com") || is_str(v, "google.com")
                })
            },
            true,
        ),
        (
            "method != \"GET\"",
            |e| e.any("method", |v| !is_str(v, "GET")),
            true,
        ),
        (
            "method == /P.*/",
            |e| {
                e.any(
                    "method",
                    |v| matches!(v, Value::String(s) if s.starts_with(b"P")),
                )
            },
            true,
        ),
        (
            "user_agent !~ /.*Mozilla.*/",
            |e| {
                e.any(
                    "user_agent",
                    |v| matches!(v, Value::String(s) if !contains(s, "Mozilla")),
                )
            },
            true,
        ),
        (
            "/.*\\.(exe|zip)/ in uri",
            |e| {
                e.any(
                    "uri",
                    |v| matches!(v, Value::String(s) if contains(s, ".exe") || contains(s, ".zip")),
                )
            },
            false,
        ),
        // Containers.
        (
            "tags ni \"a\"",
            |e| {
                e.any(
                    "tags",
                    |v| matches!(v, Value::List(l) if l.iter().any(|x| is_str(x, "a"))),
                )
            },
            true,
        ),
        (
            "\"a\" !in tags",
            |e| {
                e.any(
                    "tags",
                    |v| matches!(v, Value::List(l) if !l.iter().any(|x| is_str(x, "a"))),
                )
            },
            true,
        ),
        (
            "hosts == [10.0.0.1, 10.0.0.2]",
            |e| {
                e.any("hosts", |v| {
                    *v == Value::List(vec![
                        Value::Addr(addr("10.0.0.1")),
                        Value::Addr(addr("10.0.0.2")),
                    ])
                })
            },
            true,
        ),
        (
            "hosts == 10.0.0.1",
            |e| {
                e.any(
                    "hosts",
                    |v| matches!(v, Value::List(l) if l.contains(&Value::Addr(addr("10.0.0.1")))),
                )
            },
            true,
        ),
        ("tunnel_parents == \"x\"", |_| false, false),
        (
            "answers ~ /.*\\.com/",
            |e| {
                e.any("answers", |v| matches!(v, Value::List(l) if l.iter().any(|x| matches!(x, Value::String(s) if s.ends_with(b".com")))))
            },
            true,
        ),
        (
            "TTLs > 1h",
            |e| {
                e.any("TTLs", |v| matches!(v, Value::List(l) if l.iter().any(|x| matches!(x, Value::Interval(d) if *d > H))))
            },
            true,
        ),
        // Connectives, precedence, negation (unset never matches).
        (
            "!(proto == \"udp\")",
            |e| e.any("proto", |v| !is_str(v, "udp")),
            true,
        ),
        (
            "!(orig_h in 192.168.0.0/16) && #type == \"zeek.conn\"",
            |e| {
                e.name() == "zeek.conn"
                    && e.any(
                        "orig_h",
                        |v| matches!(v, Value::Addr(a) if !in_net(a, "192.168.0.0/16")),
                    )
            },
            true,
        ),
        (
            "proto == \"udp\" && resp_p == 53 || proto == \"tcp\" && resp_p == 80",
            |e| {
                (e.any("proto", |v| is_str(v, "udp")) && e.any("resp_p", |v| num(v) == Some(53.0)))
                    || (e.any("proto", |v| is_str(v, "tcp"))
                        && e.any("resp_p", |v| num(v) == Some(80.0)))
            },
            true,
        ),
        (
            "uid == \"F1\" || (uid == \"F2\" || uid == \"F4\") && !ok == F",
            |e| {
                e.any("uid", |v| is_str(v, "F1"))
                    || (e.any("uid", |v| is_str(v, "F2") || is_str(v, "F4"))
                        && e.any("ok", |v| *v == Value::Bool(true)))
            },
            true,
        ),
        // A field the schema lacks is false for its events (a field no schema has is an
        // error: tests/it/query_errors.rs).
        (
            "x == 0.25 || #type == \"zeek.snmp\"",
            |e| e.any("x", |v| num(v) == Some(0.25)) || e.name() == "zeek.snmp",
            true,
        ),
        (
            "status_code >= 400 && status_code < 500",
            |e| {
                e.any("status_code", |v| {
                    num(v).is_some_and(|n| (400.0..500.0).contains(&n))
                })
            },
            true,
        ),
    ]
}

/// Every event of the archive, by a full scan.
fn export(dir: &Path) -> Vec<Ev> {
    let archive = Archive::open(dir).unwrap();
    let mut out = Vec::new();
    for b in archive.scan() {
        let b = b.unwrap();
        let batch = b.to_batch();
        for (i, values) in batch.to_values().unwrap().into_iter().enumerate() {
            out.push(Ev {
                id: b.first_id() + i as u64,
                schema: b.schema().clone(),
                values,
            });
        }
    }
    out
}

/// An archive of the corpus (when present) and the fixture, in small segments.
fn archive(tmp: &Path) -> (PathBuf, bool) {
    let db = tmp.join("db");
    let mut files: Vec<PathBuf> = Vec::new();
    let corpus = common::corpus::dir();
    if let Some(dir) = &corpus {
        files.extend(common::corpus::files(dir));
    }
    files.push(common::fixture("query/custom.log"));
    files.push(common::fixture("query/custom2.log"));
    let mut args = vec![
        "import".to_string(),
        "--db".into(),
        db.display().to_string(),
        "--max-segment-size".into(),
        "256KiB".into(),
        "--batch-size".into(),
        "1000".into(),
    ];
    args.extend(files.iter().map(|f| f.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = common::cli::run(&args);
    assert!(out.status.success(), "{}", common::cli::text(&out.stderr));
    (db, corpus.is_some())
}

fn search_ids(q: &Query, archive: &Archive, prune: bool) -> Vec<u64> {
    q.search_with(
        archive,
        SearchOptions {
            prune,
            ..SearchOptions::default()
        },
    )
    .unwrap()
    .flat_map(|h| h.unwrap().ids())
    .collect()
}

#[test]
fn expressions_agree_with_brute_force() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, corpus) = archive(tmp.path());
    let events = export(&db);
    let archive = Archive::open(&db).unwrap();
    assert!(archive.catalog().segments.len() > 1 || !corpus);
    let table = table();
    assert!(table.len() >= 40, "{} expressions", table.len());
    for (expr, oracle, nonempty) in table {
        let q = Query::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        if let (false, Err(e)) = (corpus, q.search(&archive)) {
            // Fields of the corpus's logs are unknown to an archive of the fixtures alone.
            let e = e.to_string();
            assert!(e.contains("no field"), "{expr}: {e}");
            eprintln!("skipped without the corpus: {expr}: {e}");
            continue;
        }
        let want: Vec<u64> = events.iter().filter(|e| oracle(e)).map(|e| e.id).collect();
        let got = search_ids(&q, &archive, true);
        assert_eq!(got.len(), want.len(), "{expr}: count differs");
        assert_eq!(got, want, "{expr}");
        assert_eq!(
            search_ids(&q, &archive, false),
            want,
            "{expr} without pruning"
        );
        let (n, _) = q.count(&archive).unwrap();
        assert_eq!(n, want.len() as u64, "{expr}: count");
        if corpus && nonempty {
            assert!(!want.is_empty(), "{expr} matches nothing: a weak test");
        }
        eprintln!("{:6}  {expr}", want.len());
    }
}

#[test]
fn errors_point_at_their_position() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, _) = archive(tmp.path());
    let archive = Archive::open(&db).unwrap();
    // (expression, byte position, part of the message)
    let parse_errors: &[(&str, usize, &str)] = &[
        ("ts == ", 6, "expected a value or an extractor after `==`, found the end"),
        ("(a == 1", 7, "expected ) to close the ( at column 1"),
        ("a == 1 b", 7, "expected && or || or the end, found `b`"),
        ("orig_h 1", 7, "expected an operator"),
        ("#nope == 1", 0, "unknown meta extractor `#nope`"),
        (":foo == 1", 0, "unknown type `:foo`"),
        ("x == \"abc", 5, "unterminated string"),
        ("x ~ /(/", 4, "invalid pattern"),
        ("1 == 2", 2, "expected a field, type or meta extractor on one side of `==`"),
        ("a == b", 5, "expected a value to compare with"),
        ("x in [1, 2", 10, "expected , or ] to continue the list"),
        ("a == 1 &&", 9, "expected a predicate"),
        ("[1, 2]", 0, "a list cannot stand alone"),
        ("a == 1 && || b == 2", 10, "expected a predicate"),
        (":addr == \"x\"", 0, "type mismatch in `:addr == \"x\"`: :addr fields cannot be compared with \"x\" of type string"),
        ("#type < 5", 0, "#type (a string) cannot be compared with 5 of type count"),
        ("x == 1 && :timestamp == 10s", 10, ":timestamp fields cannot be compared with"),
        ("a == 1$", 6, "unexpected character '$'"),
    ];
    for &(expr, pos, msg) in parse_errors {
        let e = Query::parse(expr).expect_err(expr);
        assert_eq!(e.pos, pos, "{expr}: {e}");
        assert!(e.message.contains(msg), "{expr}: {}", e.message);
        // The caret is under the position.
        let caret = e.to_string().lines().nth(2).unwrap().to_string();
        assert_eq!(
            caret.len(),
            2 + expr[..pos].chars().count() + 1,
            "{expr}: {e}"
        );
    }
    // Ill-typed against every schema of the archive: the field and both types are named.
    let q = Query::parse("uid == \"x\" || ts == \"yesterday\"").unwrap();
    let e = q.search(&archive).unwrap_err().to_string();
    assert!(
        e.contains("field ts is of type time and \"yesterday\" is of type string"),
        "{e}"
    );
    assert!(
        e.contains("\n  uid == \"x\" || ts == \"yesterday\"\n                ^"),
        "{e}"
    );
    assert!(q.count(&archive).is_err());
    // Ill-typed in some schemas only: false there, no error, a warning naming them (`n` is
    // an int in custom, a string in custom2).
    let q = Query::parse("n == 7").unwrap();
    assert_eq!(search_ids(&q, &archive, true).len(), 1);
    let w = q.search(&archive).unwrap().warnings().join("\n");
    assert!(
        w.contains("field n is of type string in zeek.custom2") && w.contains("`\"7\"`"),
        "{w}"
    );
    let q = Query::parse("n == \"7\" || n == \"seven\"").unwrap();
    assert_eq!(search_ids(&q, &archive, true).len(), 2);
    // A field no schema has: an error at the field, as VAST's silent zero would mislead.
    let q = Query::parse("uid == \"x\" || nothing.here == \"x\"").unwrap();
    let e = q.search(&archive).unwrap_err().to_string();
    assert!(
        e.contains("no field `nothing.here` in any schema of the archive")
            && e.contains("\n  uid == \"x\" || nothing.here == \"x\"\n                ^"),
        "{e}"
    );
}
