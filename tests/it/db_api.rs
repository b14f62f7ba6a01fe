//! The embedding API, `weir::Db`: its batches, counts and writes equal what `weir export` and
//! `weir count` give for the same text; it sees a commit of another process at its next
//! query; dropping a query's iterator stops its thread; the async `Stream` gives the same
//! batches as the iterator.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use futures::StreamExt;
use weir::{Db, Error, OutputFormat};

use crate::common::cli::{ok, run, run_with_stdin, s};
use crate::common::conn_log;

/// The queries each comparison runs: every event, an expression, operators.
const QUERIES: &[&str] = &[
    "",
    "n > 3000 && id.resp_p < 20000",
    "id.orig_h in 10.0.0.0/16 | sort n desc | head 7",
    "summarize count() by proto",
];

/// `weir import` of events `range` into `db`.
fn import(db: &Path, range: std::ops::Range<u64>) {
    let out = run_with_stdin(
        &["import", "-q", "--db", s(db)],
        conn_log::log(range).as_bytes(),
    );
    ok(&out, "import");
}

/// The arguments `args` then `text`, left out when empty (every event).
fn cli<'a>(args: &[&'a str], text: &'a str) -> Vec<&'a str> {
    let mut out = args.to_vec();
    if !text.is_empty() {
        out.push(text);
    }
    out
}

/// An archive of events 0..n in `dir/db`.
fn archive(dir: &Path, n: u64) -> PathBuf {
    let db = dir.join("db");
    import(&db, 0..n);
    db
}

/// The batches of `batches` as one (they share a schema here).
fn concat(batches: &[RecordBatch]) -> RecordBatch {
    arrow_select::concat::concat_batches(&batches[0].schema(), batches).unwrap()
}

/// The record batches of `weir export --to arrow TEXT`.
fn exported_batches(db: &Path, text: &str) -> Vec<RecordBatch> {
    let out = run(&cli(&["export", "--db", s(db), "--to", "arrow"], text));
    assert!(out.status.success(), "export {text:?}");
    let reader =
        arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(out.stdout), None).unwrap();
    reader.map(|b| b.unwrap()).collect()
}

#[test]
fn opening_a_directory_without_an_archive_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let err = Db::open(tmp.path()).unwrap_err();
    assert!(matches!(err, Error::Store(_)), "{err:?}");
    assert!(Db::open(tmp.path().join("missing")).is_err());
}

#[test]
fn query_batches_equal_exports_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let db_dir = archive(tmp.path(), 6000);
    let db = Db::open(&db_dir).unwrap();
    for text in QUERIES {
        let ours: Vec<RecordBatch> = db
            .query(text)
            .unwrap()
            .into_iter()
            .map(|b| b.unwrap())
            .collect();
        let theirs = exported_batches(&db_dir, text);
        assert!(!ours.is_empty(), "{text:?}: no batches");
        let (ours, theirs) = (concat(&ours), concat(&theirs));
        assert!(ours.num_rows() > 0, "{text:?}");
        assert_eq!(ours, theirs, "{text:?}");
    }
    // A limit stops where `-n` does.
    let first: usize = db
        .query("")
        .unwrap()
        .limit(10)
        .batches()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(first, 10);
}

#[test]
fn a_query_that_does_not_parse_fails_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(archive(tmp.path(), 10)).unwrap();
    let err = db.query("n >").unwrap_err();
    assert!(matches!(err, Error::Query(_)), "{err:?}");
    assert!(err.to_string().contains("invalid expression"), "{err}");
    // One that does not type-check is the first item.
    let mut items = db.query("n == \"x\" && n < 1.5.5.5").unwrap().into_iter();
    assert!(items.next().unwrap().is_err());
}

#[test]
fn refresh_sees_a_new_import_after_its_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let db_dir = archive(tmp.path(), 3000);
    let db = Db::open(&db_dir).unwrap();
    let before = db.query("").unwrap();
    assert_eq!(db.query("").unwrap().count().unwrap(), 3000);
    assert!(!db.reload().unwrap());
    // Another process commits a segment.
    import(&db_dir, 3000..5000);
    assert_eq!(db.query("").unwrap().count().unwrap(), 5000);
    let stats = db.stats();
    assert_eq!((stats.opens, stats.refreshes), (1, 1), "{stats:?}");
    assert!(!db.reload().unwrap());
    import(&db_dir, 5000..5001);
    assert!(db.reload().unwrap());
    assert_eq!(db.stats().refreshes, 2);
    // A query made before the commits reads at least what was committed then.
    let rows: usize = before.batches().map(|b| b.unwrap().num_rows()).sum();
    assert!(rows >= 3000, "{rows}");
    let uids = |q: weir::QueryResult| -> usize { q.batches().map(|b| b.unwrap().num_rows()).sum() };
    assert_eq!(uids(db.query("uid == \"C0000004999\"").unwrap()), 1);
}

#[test]
fn dropping_the_iterator_early_stops_the_query() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(archive(tmp.path(), 40_000)).unwrap();
    assert_eq!(db.stats().query_threads, 0);
    let mut batches = db.query("").unwrap().batches();
    let first = batches.next().unwrap().unwrap();
    assert!(
        first.num_rows() > 0 && first.num_rows() < 40_000,
        "{}",
        first.num_rows()
    );
    assert_eq!(db.stats().query_threads, 1);
    drop(batches);
    // The thread was waited for: none is left running.
    assert_eq!(db.stats().query_threads, 0);
    // Also an aggregation that has sent nothing yet (stopped by its cancellation).
    let batches = db.query("summarize count() by uid").unwrap().batches();
    drop(batches);
    assert_eq!(db.stats().query_threads, 0);
    // Read to the end, the thread ends too.
    let n: usize = db
        .query("")
        .unwrap()
        .batches()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(n, 40_000);
    assert_eq!(db.stats().query_threads, 0);
}

#[test]
fn count_equals_weir_count() {
    let tmp = tempfile::tempdir().unwrap();
    let db_dir = archive(tmp.path(), 6000);
    let db = Db::open(&db_dir).unwrap();
    for text in QUERIES
        .iter()
        .chain(&["uid == \"C0000000042\"", "n > 100000"])
    {
        let theirs = ok(&run(&cli(&["count", "--db", s(&db_dir)], text)), "count");
        let ours = db.query(text).unwrap().count().unwrap();
        assert_eq!(ours.to_string(), theirs.trim(), "{text:?}");
    }
    assert_eq!(db.query("").unwrap().limit(5).count().unwrap(), 5);
}

#[test]
fn write_in_each_format_equals_export() {
    let tmp = tempfile::tempdir().unwrap();
    let db_dir = archive(tmp.path(), 3000);
    let db = Db::open(&db_dir).unwrap();
    let formats = [
        ("zeek-tsv", OutputFormat::ZeekTsv),
        ("json", OutputFormat::Json),
        ("csv", OutputFormat::Csv),
        ("arrow", OutputFormat::Arrow),
        ("table", OutputFormat::Table),
    ];
    for text in QUERIES {
        for (name, format) in formats {
            let theirs = run(&cli(&["export", "--db", s(&db_dir), "--to", name], text));
            assert!(theirs.status.success(), "{name} {text:?}");
            let mut ours = Vec::new();
            let n = db.query(text).unwrap().write(format, &mut ours).unwrap();
            assert!(n > 0, "{name} {text:?}");
            // Zeek TSV's `#open`/`#close` carry the wall-clock second of writing: the two
            // writes may fall in different seconds.
            assert!(
                without_clock(&ours) == without_clock(&theirs.stdout),
                "{name} {text:?}: the outputs differ"
            );
        }
    }
    let err = db
        .query("")
        .unwrap()
        .write(OutputFormat::Parquet, Vec::new())
        .unwrap_err();
    assert!(
        matches!(err, Error::NotAStream(OutputFormat::Parquet)),
        "{err:?}"
    );
}

#[test]
fn the_stream_gives_the_iterators_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(archive(tmp.path(), 6000)).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for text in QUERIES {
        let iterated: Vec<RecordBatch> = db
            .query(text)
            .unwrap()
            .batches()
            .map(|b| b.unwrap())
            .collect();
        let streamed: Vec<RecordBatch> = rt.block_on(async {
            let stream = db.query(text).unwrap().stream();
            stream.map(|b| b.unwrap()).collect().await
        });
        assert_eq!(concat(&iterated), concat(&streamed), "{text:?}");
    }
    // Dropped early, the stream's thread ends on its own.
    let mut stream = db.query("").unwrap().stream();
    let first = rt.block_on(stream.next()).unwrap().unwrap();
    assert!(first.num_rows() > 0);
    drop(stream);
    crate::common::cli::wait_for(
        "the stream's thread to end",
        std::time::Duration::from_secs(10),
        || db.stats().query_threads == 0,
    );
}

#[test]
fn explain_is_the_plan_and_pruning_export_explain_prints() {
    let tmp = tempfile::tempdir().unwrap();
    let db_dir = archive(tmp.path(), 6000);
    let db = Db::open(&db_dir).unwrap();
    for text in QUERIES.iter().chain(&["sort ts desc | head 10"]) {
        let theirs = ok(
            &run(&cli(&["export", "--explain", "--db", s(&db_dir)], text)),
            "export --explain",
        );
        let ours = db.query(text).unwrap().explain().unwrap();
        assert_eq!(ours.to_string(), theirs, "{text:?}");
    }
    // Every event: nothing pruned. Past the largest `n`: the batch's metadata rules it out,
    // no event is read, and the count agrees.
    let all = db.query("").unwrap().explain().unwrap();
    assert_eq!(all.pruning().batches_pruned, 0);
    assert_eq!(all.pruning().events_kept, 6000);
    let none = db.query("n > 100000").unwrap().explain().unwrap();
    let p = none.pruning();
    assert_eq!((p.segments, p.events_kept), (1, 0), "{p:?}");
    assert_eq!(p.segments_pruned + p.batches_pruned, 1, "{p:?}");
    assert_eq!(db.query("n > 100000").unwrap().count().unwrap(), 0);
    let json = none.to_json();
    assert_eq!(json["plan"]["scan"]["predicate"], "n > 100000", "{json}");
    // A query that does not type-check fails to explain, as its first read does.
    assert!(db
        .query("n == \"x\" && n < 1.5.5.5")
        .unwrap()
        .explain()
        .is_err());
}

/// `out` without its Zeek TSV `#open` and `#close` lines (the time of writing).
fn without_clock(out: &[u8]) -> Vec<&[u8]> {
    out.split(|&b| b == b'\n')
        .filter(|l| !l.starts_with(b"#open\t") && !l.starts_with(b"#close\t"))
        .collect()
}
