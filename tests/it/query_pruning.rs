//! Pruning never changes an answer, and it does avoid work:
//!
//! - a proptest: random expressions over random events (two schemas, many small segments,
//!   unset values, addresses stored as IPv4 and as IPv4-mapped IPv6) give the same IDs with pruning, without it, with and without per-batch
//!   sketches (and compressed or not), and by brute force (each exported row tested on its
//!   own), and `count` agrees;
//! - a needle query (one string, one address, stored as IPv4 or IPv4-mapped IPv6 and asked
//!   for in either form) reads only the batch that holds it: the others are skipped by their
//!   sketches;
//! - on an archive of 120 segments, a narrow time query opens only the segments whose time
//!   range overlaps it; a `#type` count opens none.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::path::Path;

use proptest::prelude::*;

use weir::unstable::batch::{Batch, BatchBuilder};
use weir::unstable::query::{Query, SearchOptions};
use weir::unstable::segment::{Compression, SegmentBuilder};
use weir::unstable::store::{Archive, Catalog, CatalogEntry};
use weir::unstable::types::{Field, Schema, SchemaRef, Type};

const SEC: i64 = 1_000_000_000;
/// 2009-11-18T00:00:00Z.
const BASE: i64 = 1_258_502_400 * SEC;

fn schemas() -> [SchemaRef; 2] {
    let a = Schema::new(
        "zeek.a",
        vec![
            Field::new("ts", Type::Time),
            Field::new("id.orig_h", Type::Addr),
            Field::new("id.resp_p", Type::Port),
            Field::new("n", Type::Count),
            Field::new("s", Type::String),
        ],
    );
    let b = Schema::new(
        "zeek.b",
        vec![
            Field::new("ts", Type::Time),
            Field::new("n", Type::Int),
            Field::new("tags", Type::Vector(Box::new(Type::String))),
            Field::new("dur", Type::Interval),
        ],
    );
    [a.into_shared(), b.into_shared()]
}

/// One generated event: which schema, its time (seconds after BASE, or unset) and a seed for
/// the other values (`None` fields are unset).
#[derive(Debug, Clone)]
struct Gen {
    schema: usize,
    ts: Option<i64>,
    n: Option<u8>,
    s: Option<u8>,
}

fn batch_of(schema: &SchemaRef, events: &[Gen]) -> Batch {
    let mut b = BatchBuilder::new(schema.clone());
    for g in events {
        let ts = g.ts.map(|t| BASE + t * SEC);
        let mut e = b.begin_row();
        match ts {
            Some(t) => e.int(t),
            None => e.null(),
        }
        if schema.name == "zeek.a" {
            // Half of the addresses stored as IPv4, half IPv4-mapped IPv6 (one address to
            // a query, VAST's way).
            match g.n {
                Some(n) if n % 16 < 8 => e.addr([10, 0, 0, n % 4].into()),
                Some(n) => e.addr(
                    std::net::Ipv4Addr::from([10, 0, 0, n % 4])
                        .to_ipv6_mapped()
                        .into(),
                ),
                None => e.null(),
            }
            match g.n {
                Some(n) => e.uint(50 + (n % 8) as u64),
                None => e.null(),
            }
            match g.s {
                Some(s) => e.uint(s as u64 % 10),
                None => e.null(),
            }
            match g.s {
                Some(s) => e.bytes(["x", "y", "xy", ""][s as usize % 4].as_bytes()),
                None => e.null(),
            }
        } else {
            match g.n {
                Some(n) => e.int(n as i64 % 10 - 5),
                None => e.null(),
            }
            match g.s {
                Some(s) => {
                    let k = s as u32 % 3;
                    e.array(k);
                    for i in 0..k {
                        e.bytes(["x", "y", "z"][i as usize].as_bytes());
                    }
                }
                None => e.null(),
            }
            match g.n {
                Some(n) => e.int((n as i64 % 5) * SEC),
                None => e.null(),
            }
        }
        b.finish_row(ts);
    }
    b.finish()
}

/// Writes `groups` as segments of one or more batches each (events in time order per group)
/// and the catalog; with `sketches`, zstd-compressed with sketches, else neither.
fn write_archive(dir: &Path, segments: &[Vec<Vec<Gen>>], sketches: bool) {
    let schemas = schemas();
    let seg_dir = dir.join("segments");
    std::fs::create_dir_all(&seg_dir).unwrap();
    let mut builder = SegmentBuilder::new(1 << 20).unwrap();
    builder.set_sketches(sketches);
    if !sketches {
        builder.set_compression(Compression::NONE);
    }
    let mut catalog = Catalog::default();
    let mut id = 0u64;
    for batches in segments {
        for events in batches {
            // One batch per schema present.
            for (k, schema) in schemas.iter().enumerate() {
                let mine: Vec<Gen> = events.iter().filter(|g| g.schema == k).cloned().collect();
                if mine.is_empty() {
                    continue;
                }
                let mut b = batch_of(schema, &mine);
                b.set_id(id);
                id += b.len() as u64;
                builder.add(&b).unwrap();
            }
        }
        if builder.is_empty() {
            continue;
        }
        let sealed = builder.write_to(&seg_dir, false).unwrap();
        catalog.push(CatalogEntry::from_sealed(&sealed));
    }
    catalog.save(dir, false).unwrap();
}

fn gen_event() -> impl Strategy<Value = Gen> {
    (
        0..2usize,
        prop_oneof![1 => Just(None), 6 => (0..600i64).prop_map(Some)],
        prop_oneof![1 => Just(None), 4 => any::<u8>().prop_map(Some)],
        prop_oneof![1 => Just(None), 4 => any::<u8>().prop_map(Some)],
    )
        .prop_map(|(schema, ts, n, s)| Gen { schema, ts, n, s })
}

fn time(t: i64) -> String {
    // BASE + t seconds as 2009-11-18THH:MM:SSZ.
    format!(
        "2009-11-18T{:02}:{:02}:{:02}Z",
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

fn gen_predicate() -> impl Strategy<Value = String> {
    prop_oneof![
        (0..600i64, 0..6usize).prop_map(|(t, op)| format!(
            "{} {} {}",
            ["ts", ":timestamp", "#timestamp"][op % 3],
            ["<", ">=", "==", "<=", ">", "!="][op],
            time(t)
        )),
        (0..2usize).prop_map(|k| format!("#type == \"zeek.{}\"", ["a", "b"][k])),
        (0..10u64, 0..4usize).prop_map(|(v, op)| format!("n {} {v}", ["==", "<", ">=", "!="][op])),
        (-5..5i64, 0..2usize).prop_map(|(v, op)| format!("n {} {v:+}", ["==", ">"][op])),
        (0..8u64).prop_map(|v| format!("resp_p == {}/tcp", 50 + v)),
        (0..4u8).prop_map(|v| format!("orig_h == 10.0.0.{v}")),
        (0..4u8, 0..2usize)
            .prop_map(|(v, op)| format!("orig_h {} ::ffff:10.0.0.{v}", ["==", "!="][op])),
        Just("orig_h in 10.0.0.0/31".to_string()),
        Just("orig_h in 10.0.0.0/24".to_string()),
        Just("orig_h in 10.0.1.0/24".to_string()),
        Just("orig_h in ::ffff:10.0.0.0/127".to_string()),
        Just("orig_h in ::/0".to_string()),
        Just("orig_h !in ::ffff:0:0/96".to_string()),
        (0..12u8).prop_map(|v| format!("orig_h in [::ffff:10.0.0.{v}, 10.0.1.1]")),
        (0..4u8).prop_map(|v| format!("::ffff:10.0.0.{v}")),
        (0..5usize).prop_map(|k| format!("s == \"{}\"", ["x", "y", "xy", "", "zz"][k])),
        (0..3usize).prop_map(|k| format!("s in [\"{}\", \"q\"]", ["x", "y", "w"][k])),
        (0..4usize).prop_map(|k| format!("\"{}\" in tags", ["x", "y", "z", "q"][k])),
        (0..12u8).prop_map(|v| format!("orig_h in [10.0.0.{v}, 10.0.1.1]")),
        (0..12u64, 0..4usize).prop_map(|(v, op)| format!("n {} {v}", ["<=", ">", "==", "<"][op])),
        (0..300u64).prop_map(|v| format!(":count == {v}")),
        (-1..6i64, 0..3usize).prop_map(|(d, op)| format!("dur {} {d}s", ["<", "==", ">"][op])),
        (0..200u64, 0..6usize)
            .prop_map(|(v, op)| format!("#id {} {v}", ["==", "<", ">=", "!=", "<=", ">"][op])),
        (0..60u64, 0..2usize).prop_map(|(v, op)| format!(
            "#id {} [{v}, {}, 7]",
            ["in", "!in"][op],
            v * 3
        )),
        Just("\"x\" in s".to_string()),
        Just("s ~ /x.*/".to_string()),
        (0..5i64).prop_map(|d| format!("dur >= {d}s")),
        (0..10u64).prop_map(|v| format!("{v}")),
    ]
}

fn gen_expr() -> impl Strategy<Value = String> {
    gen_predicate().prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} && {b}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} || {b})")),
            inner.prop_map(|a| format!("!({a})")),
        ]
    })
}

fn ids(q: &Query, archive: &Archive, prune: bool) -> Vec<u64> {
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

/// Each exported row tested on its own with the schema's program.
fn brute_force(q: &Query, archive: &Archive) -> Vec<u64> {
    let mut out = Vec::new();
    for b in archive.scan() {
        let b = b.unwrap();
        let p = q.bind(b.schema());
        for (i, row) in b.rows().enumerate() {
            if p.matches_id(row, b.first_id() + i as u64).unwrap() {
                out.push(b.first_id() + i as u64);
            }
        }
    }
    out
}

/// Whether an error names a field (`no field `F``) or schema (`no schema named "S"`) that
/// really is in no schema of the archive.
fn names_absent(error: &str, archive: &Archive) -> bool {
    let mut schemas: Vec<SchemaRef> = Vec::new();
    for b in archive.scan() {
        let b = b.unwrap();
        if !schemas.iter().any(|s| s.name == b.schema().name) {
            schemas.push(b.schema().clone());
        }
    }
    if let Some(rest) = error.split("no field `").nth(1) {
        let name = rest.split('`').next().unwrap();
        return !schemas.iter().any(|s| {
            s.fields.iter().any(|f| {
                let q = format!("{}.{}", s.name, f.name);
                q == name || q.ends_with(&format!(".{name}"))
            })
        });
    }
    if let Some(rest) = error.split("no schema named \"").nth(1) {
        let name = rest.split('"').next().unwrap();
        return !schemas.iter().any(|s| s.name == name);
    }
    false
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn pruning_never_changes_the_answer(
        segments in prop::collection::vec(
            prop::collection::vec(prop::collection::vec(gen_event(), 1..12), 1..4),
            1..10,
        ),
        exprs in prop::collection::vec(gen_expr(), 1..8),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        // Sort each segment's events by time so that segments cover narrow time ranges.
        let mut segments = segments;
        let mut offset = 0;
        for seg in &mut segments {
            for batch in seg.iter_mut() {
                for g in batch.iter_mut() {
                    g.ts = g.ts.map(|t| t / 10 + offset);
                }
            }
            offset += 60;
        }
        write_archive(tmp.path(), &segments, true);
        let plain = tmp.path().join("plain");
        write_archive(&plain, &segments, false);
        let archive = Archive::open(tmp.path()).unwrap();
        let plain = Archive::open(&plain).unwrap();
        for text in &exprs {
            let q = Query::parse(text).unwrap();
            if let Err(e) = q.search(&archive) {
                // A name the archive lacks is an error (both schemas need not be there).
                prop_assert!(names_absent(&e.to_string(), &archive), "{}: {}", text, e);
                prop_assert!(q.search(&plain).is_err(), "{}", text);
                continue;
            }
            let want = brute_force(&q, &archive);
            prop_assert_eq!(&brute_force(&q, &plain), &want, "{} brute force", text);
            prop_assert_eq!(&ids(&q, &archive, true), &want, "{}", text);
            prop_assert_eq!(&ids(&q, &archive, false), &want, "{} without pruning", text);
            prop_assert_eq!(&ids(&q, &plain, true), &want, "{} without sketches", text);
            prop_assert_eq!(q.count(&archive).unwrap().0, want.len() as u64, "{} count", text);
            prop_assert_eq!(q.count(&plain).unwrap().0, want.len() as u64, "{} count", text);
        }
    }
}

#[test]
fn a_narrow_time_query_opens_only_overlapping_segments() {
    let tmp = tempfile::tempdir().unwrap();
    // 120 segments, each 100 events over 100 s, in time order; both schemas in each.
    let segments: Vec<Vec<Vec<Gen>>> = (0..120i64)
        .map(|s| {
            vec![(0..100i64)
                .map(|i| Gen {
                    schema: (i % 2) as usize,
                    ts: Some(s * 100 + i),
                    n: Some(i as u8),
                    s: Some(i as u8),
                })
                .collect()]
        })
        .collect();
    write_archive(tmp.path(), &segments, true);
    let archive = Archive::open(tmp.path()).unwrap();
    assert_eq!(archive.catalog().segments.len(), 120);

    // Seconds 5_050..5_250: segments 50, 51 and 52.
    let q = Query::parse(&format!(
        "#timestamp >= {} && #timestamp < {}",
        time(5_050),
        time(5_250)
    ))
    .unwrap();
    let mut search = q.search(&archive).unwrap();
    let mut n = 0;
    for h in search.by_ref() {
        n += h.unwrap().len();
    }
    assert_eq!(n, 200, "events of seconds 5050..5250");
    let stats = search.stats().clone();
    assert_eq!(stats.segments, 120);
    assert_eq!(stats.segments_opened, 3, "{stats:?}");
    assert_eq!(stats.segments_pruned, 117, "{stats:?}");

    // A field `ts` prunes batches of the segments it opens, and `count` too.
    let q = Query::parse(&format!("ts >= {} && ts < {}", time(5_050), time(5_060))).unwrap();
    let (count, stats) = q.count(&archive).unwrap();
    assert_eq!(count, 10);
    assert!(stats.batches_pruned >= 119 * 2, "{stats:?}");

    // `#type` alone is counted from the catalog: no segment opened.
    let q = Query::parse("#type == \"zeek.a\"").unwrap();
    let (count, stats) = q.count(&archive).unwrap();
    assert_eq!(count, 120 * 50);
    assert_eq!(stats.segments_opened, 0, "{stats:?}");
    assert_eq!(stats.segments_counted, 120, "{stats:?}");
    let (all, stats) = Query::all().count(&archive).unwrap();
    assert_eq!(all, 12_000);
    assert_eq!(stats.segments_opened, 0, "{stats:?}");
}

/// 40 batches of 200 events with distinct strings and addresses: a query for one string (or
/// one address) reads the one batch that holds it; the sketches of the others (about 1% false
/// positives each) skip them. Without sketches, every batch of the schema is read.
#[test]
fn a_needle_query_reads_only_the_batch_that_holds_it() {
    // Addresses stored as IPv4, then as IPv4-mapped IPv6: either literal finds either.
    for mapped in [false, true] {
        needle_queries(mapped);
    }
}

fn needle_queries(mapped: bool) {
    let schema = Schema::new(
        "zeek.conn",
        vec![
            Field::new("ts", Type::Time),
            Field::new("uid", Type::String),
            Field::new("id.orig_h", Type::Addr),
            Field::new("orig_bytes", Type::Count),
        ],
    )
    .into_shared();
    let tmp = tempfile::tempdir().unwrap();
    let mut dirs = Vec::new();
    for sketches in [true, false] {
        let dir = tmp.path().join(format!("sketches-{sketches}"));
        let mut batches = Vec::new();
        for k in 0..40u32 {
            let mut b = BatchBuilder::new(schema.clone());
            for i in 0..200u32 {
                let n = k * 200 + i;
                let mut e = b.begin_row();
                e.int(BASE + n as i64 * SEC);
                e.bytes(
                    format!("C{:016x}", (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).as_bytes(),
                );
                let v4 = std::net::Ipv4Addr::from(0x0a00_0000 + n);
                if mapped {
                    e.addr(v4.to_ipv6_mapped().into());
                } else {
                    e.addr(v4.into());
                }
                e.uint(n as u64);
                b.finish_row(Some(BASE + n as i64 * SEC));
            }
            batches.push(b.finish());
        }
        write_one_segment(&dir, batches, sketches);
        dirs.push(dir);
    }
    let needle = 17 * 200 + 123u64;
    let uid = format!("C{:016x}", needle.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let addr = std::net::Ipv4Addr::from(0x0a00_0000 + needle as u32);
    for text in [
        format!("uid == \"{uid}\""),
        format!("\"{uid}\""),
        format!("id.orig_h == {addr}"),
        format!("id.orig_h == ::ffff:{addr}"),
        format!("::ffff:{addr}"),
        format!("orig_h in [{addr}, 192.168.0.1]"),
        format!("orig_bytes == {needle}"),
    ] {
        let q = Query::parse(&text).unwrap();
        let (n, stats) = q.count(&Archive::open(&dirs[0]).unwrap()).unwrap();
        assert_eq!(n, 1, "{text} (mapped: {mapped})");
        // The batch that holds it, and at most one false positive (~1% each of 39).
        assert!(stats.batches_read <= 2, "{text}: {stats:?}");
        assert_eq!(
            stats.batches_read + stats.batches_pruned,
            40,
            "{text}: {stats:?}"
        );
        let (n, stats) = q.count(&Archive::open(&dirs[1]).unwrap()).unwrap();
        assert_eq!(n, 1, "{text} (mapped: {mapped})");
        let min = if text.starts_with("orig_bytes") {
            1
        } else {
            40
        };
        assert!(
            stats.batches_read >= min,
            "{text} without sketches: {stats:?}"
        );
    }
    // A small subnet is looked up address by address: the batch that holds its four
    // addresses is read, and few others (IPv4 or IPv4-mapped, either way it is written), and a wide one reads
    // every batch.
    let net = std::net::Ipv4Addr::from(u32::from(addr) & !3);
    for text in [
        format!("id.orig_h in {net}/30"),
        format!("id.orig_h in ::ffff:{net}/126"),
        format!(":addr in {net}/30"),
    ] {
        let q = Query::parse(&text).unwrap();
        let (n, stats) = q.count(&Archive::open(&dirs[0]).unwrap()).unwrap();
        assert_eq!(n, 4, "{text} (mapped: {mapped})");
        // Four addresses, each in two forms: about 7% false positives per other batch (2.8
        // of 39 expected), against 40 batches read without the lookups.
        assert!(stats.batches_read <= 8, "{text}: {stats:?}");
    }
    let q = Query::parse("id.orig_h in 10.0.0.0/16").unwrap();
    let (n, stats) = q.count(&Archive::open(&dirs[0]).unwrap()).unwrap();
    assert_eq!((n, stats.batches_read), (8000, 40), "{stats:?}");
    // Absent values read nothing but a false positive (an IPv4 address is looked up in both
    // its stored forms: about 2% per batch), and evaluate no row (the needle is not there).
    let q = Query::parse("uid == \"nope\" || id.orig_h == 192.168.0.1").unwrap();
    let (n, stats) = q.count(&Archive::open(&dirs[0]).unwrap()).unwrap();
    assert_eq!((n, stats.rows_evaluated), (0, 0), "{stats:?}");
    assert!(stats.batches_read <= 1, "{stats:?}");
}

/// The matching IDs of a search on `threads` threads, batch by batch, and its stats.
fn search_ids(q: &Query, archive: &Archive, threads: usize, limit: Option<usize>) -> Vec<u64> {
    let options = SearchOptions {
        threads,
        ..SearchOptions::default()
    };
    let mut out = Vec::new();
    for h in q.search_with(archive, options).unwrap() {
        out.extend(h.unwrap().ids());
        if limit.is_some_and(|n| out.len() >= n) {
            // Stopping early drops the search with batches still in flight.
            out.truncate(limit.unwrap_or(0));
            break;
        }
    }
    out
}

#[test]
fn parallel_results_equal_sequential_results_in_id_order() {
    let tmp = tempfile::tempdir().unwrap();
    // 40 segments of 3 batches (each split by schema): 240 batches of mixed sizes.
    let segments: Vec<Vec<Vec<Gen>>> = (0..40i64)
        .map(|s| {
            (0..3i64)
                .map(|b| {
                    (0..(5 + (s * 7 + b * 3) % 40))
                        .map(|i| Gen {
                            schema: ((i + s) % 3 % 2) as usize,
                            ts: (i % 9 != 0).then_some(s * 100 + b * 30 + i % 30),
                            n: (i % 5 != 0).then_some((i * 13 + s) as u8),
                            s: (i % 7 != 0).then_some((i + b) as u8),
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    write_archive(tmp.path(), &segments, true);
    let archive = Archive::open(tmp.path()).unwrap();
    let exprs = [
        "n >= 5".to_string(),
        "s == \"xy\" || orig_h == 10.0.0.3".to_string(),
        "#type == \"zeek.b\" && \"y\" in tags".to_string(),
        format!("ts >= {} && ts < {}", time(1_000), time(2_500)),
        "n == 3 && resp_p > 52".to_string(),
    ];
    for text in &exprs {
        let q = Query::parse(text).unwrap();
        let sequential = search_ids(&q, &archive, 1, None);
        assert!(!sequential.is_empty(), "{text}");
        assert!(
            sequential.windows(2).all(|w| w[0] < w[1]),
            "{text}: ID order"
        );
        for threads in [2, 3, 8] {
            assert_eq!(
                search_ids(&q, &archive, threads, None),
                sequential,
                "{text} on {threads} threads"
            );
            for limit in [1, 2, 7, sequential.len() / 2 + 1] {
                assert_eq!(
                    search_ids(&q, &archive, threads, Some(limit)),
                    sequential[..limit.min(sequential.len())],
                    "{text} on {threads} threads, first {limit}"
                );
            }
        }
        // The whole search touches the same on any number of threads, and counts agree.
        let stats = |threads: usize| {
            let options = SearchOptions {
                threads,
                ..SearchOptions::default()
            };
            let mut s = q.search_with(&archive, options).unwrap();
            let n: usize = s.by_ref().map(|h| h.unwrap().len()).sum();
            let (count, _) = q.search_with(&archive, options).unwrap().count().unwrap();
            assert_eq!(count, n as u64, "{text} count on {threads} threads");
            s.stats().clone()
        };
        let one = stats(1);
        assert_eq!(one.matched, sequential.len() as u64, "{text}");
        assert_eq!(stats(4), one, "{text}");
    }
}

/// Writes one segment of `batches` (rows of `(ts, n)`; `None` unset) of a schema with `ts` and a
/// count `n`, with sketches, and its catalog.
fn write_ts_count_archive(dir: &Path, batches: &[Vec<(Option<i64>, Option<u64>)>]) {
    let schema = Schema::new(
        "zeek.t",
        vec![Field::new("ts", Type::Time), Field::new("n", Type::Count)],
    )
    .into_shared();
    let mut out = Vec::new();
    for rows in batches {
        let mut b = BatchBuilder::new(schema.clone());
        for &(ts, n) in rows {
            let mut e = b.begin_row();
            match ts {
                Some(t) => e.int(BASE + t * SEC),
                None => e.null(),
            }
            match n {
                Some(n) => e.uint(n),
                None => e.null(),
            }
            b.finish_row(ts.map(|t| BASE + t * SEC));
        }
        out.push(b.finish());
    }
    write_one_segment(dir, out, true);
}

/// Writes `batches` (IDs assigned from 0) as one segment in `dir`, with or without sketches
/// (compressed by default), and its catalog.
fn write_one_segment(dir: &Path, batches: Vec<Batch>, sketches: bool) {
    let seg_dir = dir.join("segments");
    std::fs::create_dir_all(&seg_dir).unwrap();
    let mut builder = SegmentBuilder::new(1 << 24).unwrap();
    builder.set_sketches(sketches);
    let mut id = 0;
    for mut b in batches {
        b.set_id(id);
        id += b.len() as u64;
        builder.add(&b).unwrap();
    }
    let sealed = builder.write_to(&seg_dir, false).unwrap();
    let mut catalog = Catalog::default();
    catalog.push(CatalogEntry::from_sealed(&sealed));
    catalog.save(dir, false).unwrap();
}

/// An archive in `dir` of one segment: `batches` batches of 100 events of schema
/// `zeek.conn` (`ts`, `n`), event `n` (from 0) with time `ts(n)`.
fn ts_n_archive(dir: &Path, batches: u64, ts: impl Fn(u64) -> i64) -> Archive {
    let schema = Schema::new(
        "zeek.conn",
        vec![Field::new("ts", Type::Time), Field::new("n", Type::Count)],
    )
    .into_shared();
    let mut out = Vec::new();
    for k in 0..batches {
        let mut b = BatchBuilder::new(schema.clone());
        for n in k * 100..(k + 1) * 100 {
            let mut e = b.begin_row();
            e.int(ts(n));
            e.uint(n);
            b.finish_row(Some(ts(n)));
        }
        out.push(b.finish());
    }
    write_one_segment(dir, out, true);
    Archive::open(dir).unwrap()
}

/// The IDs of the events `text` gives over `archive`, in output order, and its statistics.
fn chain_ids(archive: &Archive, text: &str) -> (Vec<u64>, weir::unstable::query::ChainStats) {
    let chain = weir::unstable::query::Chain::parse(text).unwrap();
    let mut got: Vec<u64> = Vec::new();
    let stats = chain
        .run(
            archive,
            &mut |s| {
                got.extend(s.ids());
                Ok(weir::unstable::query::Flow::More)
            },
            &mut |e| panic!("{e}"),
        )
        .unwrap();
    (got, stats)
}

#[test]
fn a_count_takes_batches_wholly_in_range_from_their_sketch() {
    // Batch k holds ts k*100 .. k*100+99 and n = ts; batch 3 has one unset ts and batch 4 one
    // unset n, so only they must be read for a range their values would otherwise satisfy.
    let batches: Vec<Vec<(Option<i64>, Option<u64>)>> = (0..6i64)
        .map(|k| {
            (0..100i64)
                .map(|i| {
                    let t = k * 100 + i;
                    match (k, i) {
                        (3, 50) => (None, Some(t as u64)),
                        (4, 10) => (Some(t), None),
                        _ => (Some(t), Some(t as u64)),
                    }
                })
                .collect()
        })
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    write_ts_count_archive(tmp.path(), &batches);
    let archive = Archive::open(tmp.path()).unwrap();
    let count = |text: &str| {
        let (n, stats) = Query::parse(text).unwrap().count(&archive).unwrap();
        (n, stats.rows_evaluated)
    };
    // Every ts is at or after BASE: each batch counts its rows with a ts (`present`), batch 3
    // (an unset ts, which never matches) 99 of its 100, and none is read.
    assert_eq!(count(&format!("#timestamp >= {}", time(0))), (599, 0));
    // `n >= 100 && n < 500`: batches 1 and 2 wholly inside, 0 and 5 pruned, 3 inside (its n
    // are all set), 4 inside but for its unset n (99).
    assert_eq!(count("n >= 100 && n < 500"), (399, 0));
    // Both: in batch 3 every row has its n in range, so the count is its rows with a ts
    // (99); batch 4 the other way round. When neither part holds for every row of a batch
    // (batch 2: 50 rows before 250 s, 80 with n >= 220), its rows are read.
    assert_eq!(
        count(&format!("n >= 100 && n < 500 && ts >= {}", time(0))),
        (398, 0)
    );
    assert_eq!(count(&format!("ts < {} && n >= 220", time(250))), (30, 100));
    // A range that cuts a batch is counted from its time histogram (format 5) when the cut
    // falls on a bucket edge: batch 2 (ts 200..299 s, 1-second buckets) at 250 s; half a second
    // later, it is read.
    assert_eq!(count(&format!(":timestamp < {}", time(250))), (250, 0));
    let half = format!("{}.5Z", time(250).trim_end_matches('Z'));
    assert_eq!(count(&format!(":timestamp < {half}")), (251, 100));
    assert_eq!(
        count(&format!("ts >= {} && ts < {}", time(150), time(420))),
        (269, 0),
        "batch 3's unset ts is in no bucket"
    );
    // Merged comparisons of one field prune by the whole range (not only the first one).
    assert_eq!(count("n >= 100 && n < 200"), (100, 0));
    // Negations and equality of one value are never taken whole.
    let (n, read) = count("n != 7");
    assert_eq!(n, 598);
    assert!(read >= 500, "{read}");
}

/// `sort ... | head N` reads only the sort key while it sorts, then reads the N events that
/// come out whole: each stored batch that holds some of them is decoded once, not once per
/// event (3,000 decodes of 200-row batches took a minute in a debug build).
#[test]
fn late_materialization_decodes_each_batch_once() {
    let schema = Schema::new(
        "zeek.conn",
        vec![
            Field::new("ts", Type::Time),
            Field::new("uid", Type::String),
            Field::new("orig_bytes", Type::Count),
        ],
    )
    .into_shared();
    let mut batches = Vec::new();
    for k in 0..40u64 {
        let mut b = BatchBuilder::new(schema.clone());
        for i in 0..200u64 {
            let n = k * 200 + i;
            let mut e = b.begin_row();
            e.int(BASE + n as i64 * SEC);
            e.bytes(format!("C{n}").as_bytes());
            e.uint(n);
            b.finish_row(Some(BASE + n as i64 * SEC));
        }
        batches.push(b.finish());
    }
    let tmp = tempfile::tempdir().unwrap();
    write_one_segment(tmp.path(), batches, true);
    let archive = Archive::open(tmp.path()).unwrap();
    let chain = weir::unstable::query::Chain::parse("sort orig_bytes desc | head 3000").unwrap();
    let mut got: Vec<(u64, Vec<weir::unstable::Value>)> = Vec::new();
    let stats = chain
        .run(
            &archive,
            &mut |s| {
                let types: Vec<Type> = s.schema().fields.iter().map(|f| f.ty.clone()).collect();
                for (row, &id) in s.rows().zip(s.ids()) {
                    got.push((id, weir::unstable::decode_row(row, &types).unwrap()));
                }
                Ok(weir::unstable::query::Flow::More)
            },
            &mut |e| panic!("{e}"),
        )
        .unwrap();
    let want: Vec<u64> = (5000..8000).rev().collect();
    assert_eq!(got.iter().map(|(id, _)| *id).collect::<Vec<_>>(), want);
    for (id, row) in &got {
        // Whole rows: every field, not only the sort key.
        assert_eq!(row.len(), 3);
        assert_eq!(
            row[1],
            weir::unstable::Value::String(format!("C{id}").into_bytes())
        );
        assert_eq!(row[2], weir::unstable::Value::Count(*id));
    }
    // Batches 25 to 39 hold the 3,000 largest.
    assert_eq!(stats.batches_materialized, 15, "{stats:?}");
}

/// `sort F | head N` visits the batches best first by their ranges of `F` and stops once no
/// batch left can beat the N-th event kept; the answer is the brute-force one (ties by ID,
/// unset values last, mixed schemas), with and without sketches.
#[test]
fn sort_head_reads_batches_best_first_and_stops() {
    let conn = Schema::new(
        "zeek.conn",
        vec![
            Field::new("ts", Type::Time),
            Field::new("uid", Type::String),
            Field::new("orig_bytes", Type::Count),
        ],
    )
    .into_shared();
    let dns = Schema::new(
        "zeek.dns",
        vec![
            Field::new("ts", Type::Time),
            Field::new("query", Type::String),
        ],
    )
    .into_shared();
    // (id, ts, orig_bytes) of every event. Times fall as IDs rise, three events a second
    // (ties across batch boundaries: 200 is no multiple of 3); every 7th `orig_bytes` unset.
    let mut all: Vec<(u64, i64, Option<u64>)> = Vec::new();
    let mut batches = Vec::new();
    let mut n = 0u64;
    for k in 0..45u64 {
        let schema = if k % 9 == 4 { &dns } else { &conn };
        let mut b = BatchBuilder::new(schema.clone());
        for _ in 0..200 {
            let ts = BASE + (9000 - n as i64) / 3 * SEC;
            let bytes =
                (!n.is_multiple_of(7) && schema.name == "zeek.conn").then_some(n * 7919 % 1000);
            let mut e = b.begin_row();
            e.int(ts);
            e.bytes(format!("C{n}").as_bytes());
            if schema.name == "zeek.conn" {
                match bytes {
                    Some(v) => e.uint(v),
                    None => e.null(),
                }
            }
            b.finish_row(Some(ts));
            all.push((n, ts, bytes));
            n += 1;
        }
        batches.push(b.finish());
    }
    for sketches in [true, false] {
        let tmp = tempfile::tempdir().unwrap();
        write_one_segment(tmp.path(), batches.clone(), sketches);
        let archive = Archive::open(tmp.path()).unwrap();
        for (text, key, desc, limit) in [
            ("sort ts desc | head 7", 0, true, 7),
            ("sort ts | head 7", 0, false, 7),
            ("sort ts desc | head 700", 0, true, 700),
            ("sort orig_bytes desc | head 250", 1, true, 250),
            ("sort orig_bytes | head 5", 1, false, 5),
            ("sort orig_bytes desc | head 9000", 1, true, 9000),
        ] {
            let (got, stats) = chain_ids(&archive, text);
            let mut want = all.clone();
            want.sort_by(|a, b| {
                let (x, y) = match key {
                    0 => (Some(a.1 as u64), Some(b.1 as u64)),
                    _ => (a.2, b.2),
                };
                let o = match (x, y) {
                    (None, None) => std::cmp::Ordering::Equal,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (Some(x), Some(y)) if desc => y.cmp(&x),
                    (Some(x), Some(y)) => x.cmp(&y),
                };
                o.then(a.0.cmp(&b.0))
            });
            let want: Vec<u64> = want.iter().take(limit).map(|e| e.0).collect();
            assert_eq!(got, want, "{text} (sketches: {sketches})");
            let read = stats.search.batches_read;
            match (text, sketches) {
                // The newest events are in the first batches: a few are read (the window of
                // jobs in flight), not all 45.
                ("sort ts desc | head 7" | "sort ts | head 7", _) => {
                    assert!(read <= 12, "{text}: {stats:?}")
                }
                ("sort orig_bytes | head 5", true) => assert!(read <= 12, "{text}: {stats:?}"),
                // Without sketches no conn batch has a known range of `orig_bytes` (the 5 dns
                // batches have no such field: they come last, and are not read).
                ("sort orig_bytes | head 5", false) => assert_eq!(read, 40, "{stats:?}"),
                _ => {}
            }
        }
    }
}

/// A `where` after the expression joins the search: the batches are filtered (and the
/// `summarize` after it aggregated) by the search's workers, with the same answer.
#[test]
fn leading_wheres_are_one_search() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = ts_n_archive(tmp.path(), 10, |_| BASE);
    let run = |text: &str| {
        let chain = weir::unstable::query::Chain::parse(text).unwrap();
        let mut rows = Vec::new();
        let stats = chain
            .run(
                &archive,
                &mut |s| {
                    let types: Vec<Type> = s.schema().fields.iter().map(|f| f.ty.clone()).collect();
                    for row in s.rows() {
                        rows.push(weir::unstable::decode_row(row, &types).unwrap());
                    }
                    Ok(weir::unstable::query::Flow::More)
                },
                &mut |e| panic!("{e}"),
            )
            .unwrap();
        (rows, stats)
    };
    let (rows, stats) = run("n >= 250 | where n < 700 | where n != 300 | summarize count()");
    assert_eq!(rows, vec![vec![weir::unstable::Value::Count(449)]]);
    // The search matched only what passes every `where`, and pruned the batches none does.
    assert_eq!(stats.search.matched, 449, "{stats:?}");
    assert_eq!(stats.search.batches_pruned, 5, "{stats:?}");
    // A `where` after another operator stays where it is.
    let (rows, _) = run("n >= 250 | head 100 | where n < 300 | summarize count()");
    assert_eq!(rows, vec![vec![weir::unstable::Value::Count(50)]]);
}

/// Batches whose ranges tie (the same day repeated, as in W1000): the first events in ID
/// order win the ties, so `sort ts desc | head N` stops once it has N events of the newest
/// time and the batches left start past the N-th's ID.
#[test]
fn sort_head_stops_at_ties_by_id() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = ts_n_archive(tmp.path(), 40, |n| BASE + (n % 50) as i64 * SEC);
    for (text, want) in [
        // The newest second (i % 50 == 49) is at i = 49 and 99 of every batch.
        ("sort ts desc | head 5", vec![49, 99, 149, 199, 249]),
        ("sort ts | head 3", vec![0, 50, 100]),
    ] {
        let (got, stats) = chain_ids(&archive, text);
        assert_eq!(got, want, "{text}");
        assert!(stats.search.batches_read <= 12, "{text}: {stats:?}");
    }
}

/// `tail N` visits the batches from the newest IDs back and stops once it has N events with
/// larger IDs than any batch left: the answer is the last N in ID order.
#[test]
fn tail_reads_the_newest_batches_only() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = ts_n_archive(tmp.path(), 40, |_| BASE);
    for (text, want, most) in [
        ("tail 7", (3993..4000).collect::<Vec<u64>>(), 12),
        // The last 150 matches span three batches, with older matches before them.
        (
            "n < 50 || (n >= 3050 && n < 3100) || n >= 3500 && n < 3600 | tail 150",
            (3050..3100).chain(3500..3600).collect(),
            12,
        ),
        ("n < 10 | tail 3", (7..10).collect(), 40),
    ] {
        let (got, stats) = chain_ids(&archive, text);
        assert_eq!(got, want, "{text}");
        assert!(stats.search.batches_read <= most, "{text}: {stats:?}");
    }
}

/// A batch whose uid and address columns are large enough to be stored in blocks of rows
/// (segment format 11): every kind of predicate, needles found in one block, in several, in
/// none, and combined with other columns, gives the IDs and rows of brute force, with and
/// without pruning, counted and exported (rows left out by a block's filter never match, and
/// an exported row is never one of the nil rows of a block left out).
#[test]
fn blocked_columns_answer_as_whole_rows_do() {
    let schema = Schema::new(
        "zeek.conn",
        vec![
            Field::new("ts", Type::Time),
            Field::new("uid", Type::String),
            Field::new("id.orig_h", Type::Addr),
            Field::new("orig_bytes", Type::Count),
            Field::new("note", Type::String),
        ],
    )
    .into_shared();
    let uid = |n: u64| format!("C{:016x}", n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let addr = |n: u64| std::net::Ipv4Addr::from(0x0a00_0000 + (n as u32 % 5_000));
    let tmp = tempfile::tempdir().unwrap();
    let mut batches = Vec::new();
    let mut n = 0u64;
    for rows in [6_000u64, 500] {
        let mut b = BatchBuilder::new(schema.clone());
        for _ in 0..rows {
            let mut e = b.begin_row();
            e.int(BASE + n as i64 * SEC);
            if n % 101 == 7 {
                e.null();
            } else {
                e.bytes(uid(n % 5_900).as_bytes());
            }
            if n.is_multiple_of(2) {
                e.addr(addr(n).to_ipv6_mapped().into());
            } else {
                e.addr(addr(n).into());
            }
            e.uint(n);
            e.bytes(["x", "y"][n as usize % 2].as_bytes());
            b.finish_row(Some(BASE + n as i64 * SEC));
            n += 1;
        }
        batches.push(b.finish());
    }
    write_one_segment(tmp.path(), batches, true);
    let archive = Archive::open(tmp.path()).unwrap();
    let seg = archive.segment(&archive.catalog().segments[0]).unwrap();
    assert_eq!(seg.version(), weir::unstable::segment::FORMAT_VERSION);
    assert_eq!(seg.batch_blocked(0), Some(vec![1]));
    assert_eq!(seg.batch_blocked(1), Some(vec![]));
    let whole = rows_by_id(&archive);
    for text in [
        format!("uid == \"{}\"", uid(123)),
        format!("uid == \"{}\"", uid(5_899)),
        format!("\"{}\"", uid(4_000)),
        format!("uid in [\"{}\", \"{}\", \"nope\"]", uid(10), uid(3_333)),
        "uid == \"nope\"".to_string(),
        format!("uid != \"{}\"", uid(42)),
        format!("uid == \"{}\" || orig_bytes > 6400", uid(2_500)),
        format!("uid == \"{}\" && orig_bytes < 1000", uid(500)),
        format!("uid == \"{}\" && note == \"y\"", uid(501)),
        format!("id.orig_h == {}", addr(4_321)),
        format!("id.orig_h == ::ffff:{}", addr(1_234)),
        format!("{} || uid == \"{}\"", addr(77), uid(5_000)),
        format!("uid == \"{}\" || id.orig_h == 192.168.0.1", uid(5_555)),
        "\"x\" in uid".to_string(),
        "uid != \"nope\"".to_string(),
        "orig_bytes > 6450".to_string(),
    ] {
        answers_as_brute_force(&text, &archive, &whole);
    }
}

/// Every row of `archive` by its ID, as a scan gives them.
fn rows_by_id(archive: &Archive) -> std::collections::HashMap<u64, Vec<u8>> {
    let mut whole = std::collections::HashMap::new();
    for b in archive.scan() {
        let b = b.unwrap();
        for (i, row) in b.rows().enumerate() {
            whole.insert(b.first_id() + i as u64, row.to_vec());
        }
    }
    whole
}

/// Asserts that the query `text` gives brute force's IDs on `archive` with and without
/// pruning, counts them, and exports each as the row a scan gives (`whole`).
fn answers_as_brute_force(
    text: &str,
    archive: &Archive,
    whole: &std::collections::HashMap<u64, Vec<u8>>,
) {
    let q = Query::parse(text).unwrap();
    let want = brute_force(&q, archive);
    assert_eq!(ids(&q, archive, true), want, "{text}");
    assert_eq!(ids(&q, archive, false), want, "{text} without pruning");
    assert_eq!(q.count(archive).unwrap().0, want.len() as u64, "{text}");
    for hits in q.search(archive).unwrap() {
        let hits = hits.unwrap();
        for (row, id) in hits.rows().zip(hits.ids()) {
            assert_eq!(row, &whole[&id][..], "{text}: row {id}");
        }
    }
}

/// An archive of one segment whose first batch (3,000 rows) keeps its `uid` column in blocks
/// of rows (each uid in several blocks, some rows unset), made once for the property test
/// below; and the values its expressions pick from.
fn blocked_archive() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let schema = Schema::new(
            "zeek.conn",
            vec![
                Field::new("ts", Type::Time),
                Field::new("uid", Type::String),
                Field::new("n", Type::Count),
                Field::new("note", Type::String),
            ],
        )
        .into_shared();
        let tmp = tempfile::tempdir().unwrap();
        let mut batches = Vec::new();
        let mut id = 0u64;
        for rows in [3_000u64, 200] {
            let mut b = BatchBuilder::new(schema.clone());
            for _ in 0..rows {
                let mut e = b.begin_row();
                e.int(BASE + id as i64 * SEC);
                // About 1,500 distinct uids (too many for a dictionary), most in two rows.
                match id.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40 {
                    k if k % 13 == 0 => e.null(),
                    k => e.bytes(blocked_uid(k % 1_500).as_bytes()),
                }
                e.uint(id % 50);
                e.bytes(["x", "y"][id as usize % 2].as_bytes());
                b.finish_row(Some(BASE + id as i64 * SEC));
                id += 1;
            }
            batches.push(b.finish());
        }
        write_one_segment(tmp.path(), batches, true);
        tmp
    })
    .path()
}

fn blocked_uid(k: u64) -> String {
    format!("C{k:04}-padding-to-32k")
}

fn gen_blocked_predicate() -> impl Strategy<Value = String> {
    prop_oneof![
        (0..1_600u64).prop_map(|k| format!("uid == \"{}\"", blocked_uid(k))),
        (0..1_600u64, 0..1_600u64).prop_map(|(a, b)| format!(
            "uid in [\"{}\", \"{}\"]",
            blocked_uid(a),
            blocked_uid(b)
        )),
        (0..1_600u64).prop_map(|k| format!("uid != \"{}\"", blocked_uid(k))),
        (0..1_600u64).prop_map(|k| format!("\"{}\"", blocked_uid(k))),
        (0..10u64).prop_map(|k| format!("\"C00{k}\" in uid")),
        (0..50u64, 0..4usize).prop_map(|(v, op)| format!("n {} {v}", ["==", "<", ">=", "!="][op])),
        (0..2usize).prop_map(|k| format!("note == \"{}\"", ["x", "y"][k])),
        (0..3_200u64, 0..2usize).prop_map(|(v, op)| format!("#id {} {v}", ["<", ">="][op])),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random expressions over a batch whose uid column is in blocks of rows (segment format
    /// 11) give brute force's IDs, counts and rows, with and without pruning.
    #[test]
    fn blocked_columns_never_change_the_answer(
        exprs in prop::collection::vec(
            gen_blocked_predicate().prop_recursive(2, 8, 3, |inner| {
                prop_oneof![
                    (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} && {b}")),
                    (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} || {b})")),
                    inner.prop_map(|a| format!("!({a})")),
                ]
            }),
            1..6,
        ),
    ) {
        let archive = Archive::open(blocked_archive()).unwrap();
        let seg = archive.segment(&archive.catalog().segments[0]).unwrap();
        prop_assert_eq!(seg.batch_blocked(0), Some(vec![1]));
        let whole = rows_by_id(&archive);
        for text in &exprs {
            // (A failed assertion panics, which proptest reports and shrinks as a failure.)
            answers_as_brute_force(text, &archive, &whole);
        }
    }
}
