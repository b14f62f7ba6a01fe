//! The order and the values of the groups of `summarize`, `top` and `rare` over an archive
//! whose batches the search's worker threads aggregate and merge in any order, with events
//! still in the write-ahead log (which reach `summarize` as rows, on the main thread).
//!
//! The documented semantics (`src/query/ops/exec/summarize.rs`): the groups come out in the
//! order they were first seen, as a row-by-row `summarize` over every event in ID order
//! makes them; `top F N` is `summarize count() by F | sort count desc, F | head N` over the
//! events where `F` is set (`rare` sorts the counts ascending). Each answer is checked here,
//! whole and in order, against a brute force over `weir export --to json` of every event.
//!
//! The archive: 74,000 generated Zeek `conn` events (seeded, so every run is the same) read
//! by the Zeek TSV reader in columns, as `weir import` reads them, in batches of 8,192
//! events, one in three kept whole and the others cut into batches of 1 to 500 events (a
//! one-event batch is stored as rows, the others in columns), appended to a writer with
//! small segments: several sealed segments of dozens of batches each. The last 6,000
//! events are appended by a second writer session whose segment cannot fill, and left in
//! the WAL of its active segment, in batches of 1 to 5,000 events. The `by` values repeat
//! across batches and segments, and many groups are first seen well after the first batch
//! (hundreds in the WAL alone), so a batch merged early holds groups whose first event is
//! in a batch merged later. Some stretches of events draw their hosts and ports from few
//! values, so that the segment writer stores the hosts as a dictionary there (the workers'
//! per-code paths), and as plain values elsewhere (their row-by-row paths); ports are
//! numbers (their number path). `top` and `rare` have ties of counts, which go by value.
//! The pairs of host and source port are nearly unique: more groups than a table keeps per
//! chunk in one batch, and than `summarize` emits at a time.
//!
//! The search uses one worker thread per core (`SearchOptions::threads` 0, which `weir
//! export` uses): on a machine with a single core it has one, and the test says so.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::collections::HashMap;
use std::path::Path;

use common::cli::{ok, run, s};
use common::rng::Rng;
use serde_json::{json, Map, Value as J};
use weir::unstable::codec::zeek::tsv;
use weir::unstable::store::{Archive, Store, StoreOptions};
use weir::unstable::{ReaderOptions, SyncPolicy};

/// Events in sealed segments.
const SEALED: u64 = 68_000;
/// Events left in the write-ahead log.
const IN_WAL: u64 = 6_000;
/// The groups a table keeps per chunk of its arrays (`groups.rs`): a batch of more events
/// with distinct keys fills several.
const GROUP_CHUNK: usize = 4_096;
/// The groups `summarize` emits at a time (`EMIT_GROUPS` of `exec/summarize.rs`).
const EMIT_GROUPS: usize = 65_536;

const HEADER: &str = "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n\
    #unset_field\t-\n#path\tconn\n\
    #fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto\torig_bytes\n\
    #types\ttime\tstring\taddr\tport\taddr\tport\tenum\tcount\n";

/// The service ports most connections go to.
const SERVICES: [u64; 24] = [
    22, 25, 53, 80, 88, 110, 123, 137, 139, 143, 161, 389, 443, 445, 465, 587, 636, 993, 995, 1433,
    3306, 3389, 5353, 8080,
];

/// Host `k` of the generated network: IPv4 mostly, every 17th an IPv6 address.
fn host(k: u64) -> String {
    if k % 17 == 5 {
        format!("2001:db8::{:x}:{:x}", k >> 16, k & 0xffff)
    } else {
        format!("10.{}.{}.{}", (k >> 12) & 255, (k >> 6) & 63, k & 63)
    }
}

/// The log lines of events `0..n`. Stretches of 700 events (not aligned with batches) take
/// turns: one in three draws its hosts from 40 (shifted from stretch to stretch, so new
/// hosts keep appearing) and its ports from the services alone; the others draw hosts from
/// a pool that grows with `i` (so most hosts recur, anywhere, and new ones appear up to the
/// end) and one port in three at random. Source ports are random: a host and its source
/// port are nearly unique.
fn lines(n: u64) -> Vec<String> {
    let mut rng = Rng(0x005e_ed0f_6a0c);
    (0..n)
        .map(|i| {
            let hot = (i / 700) % 3 == 0;
            let orig = if hot {
                100_000 + (i / 700) * 7 + rng.below(40)
            } else {
                rng.below(2_000 + i / 8)
            };
            let port = if hot || rng.below(3) > 0 {
                SERVICES[rng.below(SERVICES.len() as u64) as usize]
            } else {
                1_024 + rng.below(64_512)
            };
            let proto = match rng.below(10) {
                0..=5 => "tcp",
                6..=8 => "udp",
                _ => "icmp",
            };
            // Unset one time in eight: a host seen once without it has no sum.
            let bytes = match rng.below(8) {
                0 => "-".to_string(),
                _ => rng.below(100_000).to_string(),
            };
            format!(
                "{}.{:06}\tC{i:010}\t{}\t{}\t192.168.{}.{}\t{port}\t{proto}\t{bytes}\n",
                1_600_000_000 + i / 10,
                (i % 10) * 100_000,
                host(orig),
                1_024 + rng.below(60_000),
                rng.below(4),
                1 + rng.below(200),
            )
        })
        .collect()
}

/// The batches of `lines` as `weir import` reads them (in columns: 8,192 events each), cut
/// into pieces of the sizes `size` gives (or what is left) for the `k`-th batch read, whose
/// first `at` events are cut off already.
fn batches(
    lines: &[String],
    mut size: impl FnMut(usize, usize) -> usize,
) -> Vec<weir::unstable::Batch> {
    let mut text = HEADER.to_string();
    text.extend(lines.iter().map(String::as_str));
    let mut opts = ReaderOptions::new("conn.log");
    opts.columns = true;
    opts.batch_rows = 8_192;
    let (read, skipped) = tsv::read_all(text.as_bytes(), opts).unwrap();
    assert_eq!(skipped.skipped, 0);
    let mut out = Vec::new();
    for (k, mut b) in read.into_iter().enumerate() {
        assert!(b.columns().is_some(), "read in columns");
        let mut at = 0;
        while !b.is_empty() {
            let n = size(k, at).min(b.len());
            let rest = b.split_off(n);
            out.push(std::mem::replace(&mut b, rest));
            at += n;
        }
    }
    out
}

/// Every event of the archive, in ID order.
fn all_events(db: &Path) -> Vec<J> {
    let events = common::cli::export_json(db);
    let numbers: Vec<u64> = events
        .iter()
        .map(|e| e["uid"].as_str().unwrap()[1..].parse().unwrap())
        .collect();
    assert!(
        numbers.iter().copied().eq(0..SEALED + IN_WAL),
        "every event once, in ID order"
    );
    events
}

/// What `weir export --to json 'CHAIN'` prints, parsed.
fn export(db: &Path, chain: &str) -> Vec<J> {
    let out = run(&["export", "--db", s(db), "--to", "json", chain]);
    ok(&out, chain)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{chain}: {l:?}: {e}")))
        .collect()
}

/// Asserts that `chain` prints `want`, event for event in order; names the first difference.
fn check(db: &Path, chain: &str, want: &[J]) {
    let got = export(db, chain);
    if let Some(i) = (0..got.len().min(want.len())).find(|&i| got[i] != want[i]) {
        panic!(
            "{chain}: event {i} of {} (expected {}) differs:\n  got  {}\n  want {}",
            got.len(),
            want.len(),
            got[i],
            want[i]
        );
    }
    assert_eq!(got.len(), want.len(), "{chain}: how many events");
}

// ---------------------------------------------------------------------------------------------
// Brute force
// ---------------------------------------------------------------------------------------------

/// Groups of events: their `by` values (`null` where unset) and their events, in the order
/// of their first events.
type Groups<'a> = Vec<(Vec<J>, Vec<&'a J>)>;

/// The groups of `events` by the fields `by`, as a row-by-row pass in ID order makes them.
/// With `skip_unset`, events whose `by` values are all unset are left out (`top`, `rare`).
fn groups<'a>(events: &'a [J], by: &[&str], skip_unset: bool) -> Groups<'a> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut out: Groups<'a> = Vec::new();
    let mut text = String::new();
    for e in events {
        let key: Vec<&J> = by.iter().map(|f| e.get(*f).unwrap_or(&J::Null)).collect();
        if skip_unset && key.iter().all(|v| v.is_null()) {
            continue;
        }
        // The key as text: strings and numbers apart, unset apart from both.
        text.clear();
        for v in &key {
            match v {
                J::String(s) => text.push_str(&format!("s{s}\x1f")),
                J::Null => text.push_str("-\x1f"),
                v => text.push_str(&format!("n{v}\x1f")),
            }
        }
        let g = match index.get(&text) {
            Some(&g) => g,
            None => {
                index.insert(text.clone(), out.len());
                out.push((key.into_iter().cloned().collect(), Vec::new()));
                out.len() - 1
            }
        };
        out[g].1.push(e);
    }
    out
}

/// `sum(F)` of a group's events: unset when no event has `F` set.
fn sum(events: &[&J], field: &str) -> J {
    let values: Vec<u64> = events.iter().filter_map(|e| e[field].as_u64()).collect();
    if values.is_empty() {
        J::Null
    } else {
        json!(values.iter().sum::<u64>())
    }
}

/// One output event of the schema `path` (`weir.summarize`, `weir.top`, `weir.rare`): the
/// `by` fields, then the aggregations; unset values left out, as `--to json` leaves them.
fn event(path: &str, by: &[&str], key: &[J], aggs: &[(&str, J)]) -> J {
    let mut m = Map::new();
    m.insert("_path".to_string(), json!(path));
    let fields = by.iter().zip(key).chain(aggs.iter().map(|(n, v)| (n, v)));
    for (name, v) in fields.filter(|(_, v)| !v.is_null()) {
        m.insert(name.to_string(), v.clone());
    }
    J::Object(m)
}

/// `summarize n=count(), s=sum(orig_bytes) by BY` of the groups by `by`.
fn count_and_sum(groups: &Groups<'_>, by: &[&str]) -> Vec<J> {
    groups
        .iter()
        .map(|(key, es)| {
            let aggs = [("n", json!(es.len())), ("s", sum(es, "orig_bytes"))];
            event("weir.summarize", by, key, &aggs)
        })
        .collect()
}

/// `summarize count() by BY` of the groups by `by`.
fn counts(groups: &Groups<'_>, by: &[&str]) -> Vec<J> {
    groups
        .iter()
        .map(|(key, es)| event("weir.summarize", by, key, &[("count()", json!(es.len()))]))
        .collect()
}

/// The order of two values of one field here: numbers by value, strings bytewise.
fn order(a: &J, b: &J) -> std::cmp::Ordering {
    match (a.as_u64(), b.as_u64()) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => a.as_str().unwrap().cmp(b.as_str().unwrap()),
    }
}

/// `top F N` (`most`) or `rare F N` of the groups by `F` alone (unset left out): by count
/// (descending for `top`), then by value.
fn top(groups: &Groups<'_>, field: &str, n: usize, most: bool) -> Vec<J> {
    let mut g: Vec<(&J, usize)> = groups.iter().map(|(k, es)| (&k[0], es.len())).collect();
    g.sort_by(|a, b| {
        let by_count = if most { b.1.cmp(&a.1) } else { a.1.cmp(&b.1) };
        by_count.then_with(|| order(a.0, b.0))
    });
    g.truncate(n);
    let path = if most { "weir.top" } else { "weir.rare" };
    g.into_iter()
        .map(|(v, c)| {
            event(
                path,
                &[field],
                std::slice::from_ref(v),
                &[("count", json!(c))],
            )
        })
        .collect()
}

/// `sort K [desc], ... | head n` of `events`: stable, by each key (unset after the others in
/// both directions), numbers by value.
fn sort_head(events: &[J], keys: &[(&str, bool)], n: usize) -> Vec<J> {
    let mut out = events.to_vec();
    out.sort_by(|a, b| {
        for &(k, desc) in keys {
            let o = match (a.get(k), b.get(k)) {
                (None, None) => std::cmp::Ordering::Equal,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some(_), None) => std::cmp::Ordering::Less,
                (Some(x), Some(y)) if desc => order(y, x),
                (Some(x), Some(y)) => order(x, y),
            };
            if o != std::cmp::Ordering::Equal {
                return o;
            }
        }
        std::cmp::Ordering::Equal
    });
    out.truncate(n);
    out
}

// ---------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------

/// Builds the archive described in the module docs; returns the writer that holds the
/// events in its WAL (dropping it leaves them there, as a crash would).
fn build(db: &Path) -> Store {
    let lines = lines(SEALED + IN_WAL);
    let mut rng = Rng(0xba7c4);
    let opts = |max_segment_size| StoreOptions {
        max_segment_size,
        sync: SyncPolicy::Never,
        ..StoreOptions::default()
    };
    let (mut store, _) = Store::open_writer(db, opts(384 << 10)).unwrap();
    // One batch read in three kept whole (8,192 events, split where a segment ends), the
    // others cut small.
    let sizes = [1, 37, 150, 300, 500];
    let sealed = batches(&lines[..SEALED as usize], |k, at| match (k % 3, at) {
        (1, 0) => usize::MAX,
        _ => sizes[rng.below(sizes.len() as u64) as usize],
    });
    for b in sealed {
        store.append(b).unwrap();
    }
    store.close().unwrap();
    // A session whose segment cannot fill: its batches stay in the WAL.
    let (mut store, report) = Store::open_writer(db, opts(1 << 30)).unwrap();
    assert_eq!(report.next_id, SEALED);
    let mut sizes = [37, 1, 150, 500, 5_000, 1, 37, 150, 1, 500].into_iter();
    let wal = batches(&lines[SEALED as usize..], |_, _| {
        sizes.next().unwrap_or(500)
    });
    let largest = wal.iter().map(weir::unstable::Batch::len).max().unwrap();
    assert!(wal.len() >= 10, "{} batches in the WAL", wal.len());
    assert!(largest > GROUP_CHUNK, "a WAL batch of {largest} events");
    for b in wal {
        store.append(b).unwrap();
    }
    store.flush().unwrap();
    store
}

#[test]
fn summarize_top_and_rare_give_the_groups_of_a_row_by_row_pass_in_id_order() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let writer = build(&db);

    // The archive is as described: several sealed segments of many batches, in columns and
    // as rows, with dictionary and plain columns of the `by` fields; events in the WAL.
    let info = Archive::open(&db).unwrap().info().unwrap();
    assert_eq!(info.events, SEALED + IN_WAL);
    assert_eq!(info.segment_events, SEALED, "the rest is in the WAL");
    assert!(info.segments >= 4, "{} segments", info.segments);
    let stored: Vec<_> = common::cli::segment_files(&db)
        .iter()
        .flat_map(|f| weir::unstable::segment::inspect(f).unwrap().batches)
        .collect();
    let columns = stored.iter().filter(|b| b.layout == "columns").count();
    let rows = stored.iter().filter(|b| b.layout == "rows").count();
    let dict = |f: &str| {
        stored
            .iter()
            .filter(|b| b.dicts.iter().any(|d| d == f))
            .count()
    };
    eprintln!(
        "{} segments, {} batches ({columns} in columns, {rows} as rows; id.orig_h a dictionary in {}, proto in {}), {IN_WAL} events in the WAL; {} search threads",
        info.segments,
        stored.len(),
        dict("id.orig_h"),
        dict("proto"),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    assert!(columns >= 50 && rows >= 10, "{columns} {rows}");
    let largest = stored.iter().map(|b| b.rows).max().unwrap();
    assert!(
        largest > GROUP_CHUNK as u64,
        "a stored batch of {largest} events"
    );
    // The workers read the hosts both ways (per dictionary code, and value by value), and
    // the protocols per code.
    let hosts_as_codes = dict("id.orig_h");
    assert!(
        hosts_as_codes > 0 && hosts_as_codes < columns,
        "{hosts_as_codes} of {columns}"
    );
    assert!(dict("proto") > 0);
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("note: one core: the search has a single worker thread");
    }

    let events = all_events(&db);
    let hosts = groups(&events, &["id.orig_h"], false);
    // Hosts first seen late: past the first half of the sealed events, and in the WAL; and
    // hosts seen both in the first 5,000 events and in the WAL.
    let ids = |es: &[&J]| -> Vec<u64> {
        es.iter()
            .map(|e| e["uid"].as_str().unwrap()[1..].parse().unwrap())
            .collect()
    };
    let spans: Vec<(u64, u64)> = hosts
        .iter()
        .map(|(_, es)| {
            let ids = ids(es);
            (ids[0], *ids.last().unwrap())
        })
        .collect();
    let late = spans.iter().filter(|s| s.0 > SEALED / 2).count();
    let in_wal = spans.iter().filter(|s| s.0 >= SEALED).count();
    let across = spans
        .iter()
        .filter(|s| s.0 < 5_000 && s.1 >= SEALED)
        .count();
    eprintln!(
        "{} hosts: {late} first seen past event {}, {in_wal} in the WAL, {across} from the start to the WAL",
        hosts.len(),
        SEALED / 2
    );
    assert!(late > 1_000 && in_wal > 100 && across > 100);

    let by_host = count_and_sum(&hosts, &["id.orig_h"]);
    assert!(by_host.iter().any(|e| e.get("s").is_none()), "a sum unset");
    check(
        &db,
        "summarize n=count(), s=sum(orig_bytes) by id.orig_h",
        &by_host,
    );
    check(
        &db,
        "summarize count() by id.orig_h",
        &counts(&hosts, &["id.orig_h"]),
    );
    // `sort ... | head N` right after: `summarize` emits only the groups that can be among
    // the first N, and the same events come out (ties at the cut in the groups' order).
    for (keys, n) in [
        (&[("s", true)][..], 25),
        (&[("s", false)][..], 7),
        (&[("n", true), ("s", false)][..], 40),
        (&[("n", false)][..], 300),
    ] {
        let text: Vec<String> = keys
            .iter()
            .map(|(k, d)| format!("{k}{}", if *d { " desc" } else { "" }))
            .collect();
        let chain = format!(
            "summarize n=count(), s=sum(orig_bytes) by id.orig_h | sort {} | head {n}",
            text.join(", ")
        );
        let want = sort_head(&by_host, keys, n);
        if keys[0].0 == "n" {
            // Ties at the cut: the order of the groups decides which are kept.
            let cut = &want[n - 1]["n"];
            let tied = by_host.iter().filter(|e| &e["n"] == cut).count();
            let kept = want.iter().filter(|e| &e["n"] == cut).count();
            assert!(tied > kept, "{chain}: a tie at the cut");
        }
        check(&db, &chain, &want);
    }
    // By the addresses (in their own order): the first events of the whole sort.
    let all = export(
        &db,
        "summarize n=count() by id.orig_h | sort id.orig_h desc",
    );
    let chain = "summarize n=count() by id.orig_h | sort id.orig_h desc | head 3";
    check(&db, chain, &all[..3]);
    check(
        &db,
        "summarize count() by proto, id.resp_p",
        &counts(
            &groups(&events, &["proto", "id.resp_p"], false),
            &["proto", "id.resp_p"],
        ),
    );
    check(
        &db,
        "summarize count() by id.resp_p",
        &counts(&groups(&events, &["id.resp_p"], false), &["id.resp_p"]),
    );
    // A filter: the workers aggregate only the matching rows of a batch.
    let big: Vec<J> = events
        .iter()
        .filter(|e| e["orig_bytes"].as_u64().is_some_and(|b| b > 50_000))
        .cloned()
        .collect();
    check(
        &db,
        "orig_bytes > 50000 | summarize n=count(), s=sum(orig_bytes) by id.orig_h",
        &count_and_sum(&groups(&big, &["id.orig_h"], false), &["id.orig_h"]),
    );
    // All set: `top` and `rare` count every event.
    let ports = groups(&events, &["id.resp_p"], true);
    check(&db, "top id.resp_p 40", &top(&ports, "id.resp_p", 40, true));
    check(
        &db,
        "rare id.resp_p 40",
        &top(&ports, "id.resp_p", 40, false),
    );
    check(
        &db,
        "top proto",
        &top(&groups(&events, &["proto"], true), "proto", 10, true),
    );
    // More groups than a table's chunk in one batch, and than `summarize` emits at a time.
    let by = ["id.orig_h", "id.orig_p"];
    let pairs = count_and_sum(&groups(&events, &by, false), &by);
    assert!(pairs.len() > EMIT_GROUPS, "{} groups", pairs.len());
    check(
        &db,
        "summarize n=count(), s=sum(orig_bytes) by id.orig_h, id.orig_p",
        &pairs,
    );
    // `sort F | head N` of events: the workers hand out only the first N of each batch
    // (`Search::keep_first`). Against a stable sort of every event in ID order: service
    // ports tie by the thousand, an eighth of the byte counts is unset (last either way),
    // `head` cuts inside ties and past a batch's events, with and without a filter.
    for (field, desc, n) in [
        ("id.resp_p", false, 50),
        ("id.resp_p", true, 333),
        ("orig_bytes", false, 20),
        ("orig_bytes", true, 9_000),
        ("id.orig_p", true, 1),
        ("ts", true, 5),
        ("ts", false, 12_000),
    ] {
        let dir = if desc { " desc" } else { "" };
        let chain = format!("sort {field}{dir} | head {n}");
        let want = sort_head(&events, &[(field, desc)], n);
        if (field, desc) == ("id.resp_p", false) {
            let cut = &want[n - 1][field];
            let tied = events.iter().filter(|e| &e[field] == cut).count();
            let kept = want.iter().filter(|e| &e[field] == cut).count();
            assert!(tied > kept, "{chain}: a tie at the cut");
        }
        check(&db, &chain, &want);
    }
    let udp: Vec<J> = events
        .iter()
        .filter(|e| e["proto"] == "udp")
        .cloned()
        .collect();
    // `head 0` keeps nothing (and hands out nothing of a batch).
    check(&db, "sort orig_bytes desc | head 0", &[]);
    for (field, desc, n) in [("orig_bytes", true, 40), ("id.resp_p", false, 700)] {
        let dir = if desc { " desc" } else { "" };
        let chain = format!("proto == \"udp\" | sort {field}{dir} | head {n}");
        check(&db, &chain, &sort_head(&udp, &[(field, desc)], n));
    }
    drop(writer);
}
