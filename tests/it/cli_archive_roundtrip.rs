//! The archive end to end through the real binary: `weir import` of the whole corpus in one
//! command (gzip and plain TSV plus Zeek JSON, `--from auto` per file) and `weir export` give
//! back the same events in the same order with identical values (checked by the independent
//! reference reader `zeekref.py` and by weir's own TSV reader), also with 1 MiB segments;
//! the segment size limit; `export -n`; `inspect --json`; `verify` on a good and a damaged
//! database; the writer lock against a second concurrent import.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::cli::{
    self, export_json, export_json_text, info, ok, run, s, segment_files, text, wait_for, weir,
};
use common::conn_log::{self, check_event, log, numbers};
use common::gz::gzip_members;
use weir::unstable::codec::zeek::{json, tsv};
use weir::unstable::codec::ReaderOptions;

/// The corpus inputs of one import: TSV logs (gzip and plain), then the Zeek JSON log.
struct Inputs {
    tsv: Vec<PathBuf>,
    json: PathBuf,
}

impl Inputs {
    fn find(dir: &Path) -> Inputs {
        let all = common::corpus::files(dir);
        let tsv: Vec<PathBuf> = all
            .iter()
            .filter(|p| !p.to_string_lossy().ends_with(".json"))
            .cloned()
            .collect();
        assert!(tsv.iter().any(|p| p.to_string_lossy().ends_with(".log.gz")));
        assert!(tsv.iter().any(|p| p.to_string_lossy().ends_with(".log")));
        Inputs {
            tsv,
            json: dir.join("zeek.json"),
        }
    }

    /// Every input, in import order.
    fn all(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.tsv.iter().map(|p| s(p)).collect();
        v.push(s(&self.json));
        v
    }

    /// The originals read by weir's own readers, in import order: (TSV part, JSON part).
    fn originals(&self) -> (Vec<common::events::Event>, Vec<common::events::Event>) {
        let mut t = Vec::new();
        for p in &self.tsv {
            let (batches, report) = tsv::read_all(
                &common::gz::read_maybe_gz(p),
                ReaderOptions::new(p.display().to_string()),
            )
            .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(report.skipped, 0);
            t.extend(common::events::events(&batches));
        }
        let (batches, report) = json::read_all(
            &std::fs::read(&self.json).unwrap(),
            ReaderOptions::new(self.json.display().to_string()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(report.skipped, 0);
        (t, common::events::events(&batches))
    }
}

/// Asserts `zeekref.py CMD ORIG... -- OUT` matches every record.
fn reference_check(cmd: &str, origs: &[&str], out: &Path) {
    let mut args = vec![cmd];
    args.extend_from_slice(origs);
    args.push("--");
    args.push(s(out));
    if let Some((good, report)) = common::zeekref::check(&args) {
        assert!(good, "zeekref {cmd} for {}: {report}", out.display());
        assert!(report.contains(" 0 differ"), "{report}");
    }
}

/// Imports the corpus into `db` with `extra` options (not quiet: the summary is checked) and
/// checks the export in both formats.
/// Returns the import's summary line(s).
fn import_and_check(inputs: &Inputs, db: &Path, extra: &[&str]) -> String {
    let tmp = db.parent().unwrap();
    // The events as the logs hold them: no computed Community IDs (tests/it/community_id.rs).
    // In line order (`--batch-in-order`): the events are compared with the logs' in order,
    // and zeek.json interleaves its paths.
    let mut args = vec![
        "import",
        "--db",
        s(db),
        "--community-id",
        "off",
        "--batch-in-order",
    ];
    args.extend_from_slice(extra);
    args.extend(inputs.all());
    let out = run(&args);
    ok(&out, "weir import of the corpus");
    let summary = text(&out.stderr);

    let (orig_tsv, orig_json) = inputs.originals();
    let total = orig_tsv.len() + orig_json.len();
    assert!(
        summary.contains(&format!("imported {} events", cli::grouped(total as u64))),
        "{summary}"
    );
    let info = info(db);
    assert_eq!(info["events"], total as u64, "{info}");
    assert_eq!(info["id_ranges"], serde_json::json!([[0, total]]), "{info}");

    // TSV export read back by weir's own reader: identical events, in order.
    let out_tsv = tmp.join("out.tsv");
    let out = run(&["export", "--db", s(db), "--to", "zeek-tsv"]);
    std::fs::write(&out_tsv, ok(&out, "weir export --to zeek-tsv")).unwrap();
    let (back, report) =
        tsv::read_all(&out.stdout, ReaderOptions::new("export")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.skipped, 0);
    let back = common::events::events(&back);
    assert_eq!(back.len(), total);
    for (i, (w, g)) in orig_tsv.iter().chain(&orig_json).zip(&back).enumerate() {
        assert_eq!(w, g, "event {i}");
    }

    // The reference reader on the TSV part (`-n` stops right before the JSON-sourced events).
    let tsv_origs: Vec<&str> = inputs.tsv.iter().map(|p| s(p)).collect();
    let n = orig_tsv.len().to_string();
    let head_tsv = tmp.join("head.tsv");
    let out = run(&["export", "--db", s(db), "--to", "zeek-tsv", "-n", &n]);
    std::fs::write(&head_tsv, ok(&out, "weir export -n")).unwrap();
    reference_check("compare-tsv", &tsv_origs, &head_tsv);

    // JSON export: the TSV part against the TSV logs, the rest against zeek.json.
    let out = run(&["export", "--db", s(db), "--to", "json"]);
    let json_text = ok(&out, "weir export --to json");
    let lines: Vec<&str> = json_text.lines().collect();
    assert_eq!(lines.len(), total);
    let (head, tail) = lines.split_at(orig_tsv.len());
    let head_json = tmp.join("head.json");
    let tail_json = tmp.join("tail.json");
    std::fs::write(&head_json, head.join("\n") + "\n").unwrap();
    std::fs::write(&tail_json, tail.join("\n") + "\n").unwrap();
    reference_check("compare-json", &tsv_origs, &head_json);
    reference_check("compare-jj", &[s(&inputs.json)], &tail_json);
    summary
}

#[test]
fn corpus_in_one_import_exports_identical_events() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    let inputs = Inputs::find(&dir);
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    import_and_check(&inputs, &db, &[]);
    // Everything fits in one default (1 GiB) segment.
    assert_eq!(segment_files(&db).len(), 1);
    assert_eq!(info(&db)["segments"], 1);
}

#[test]
fn corpus_with_1mib_segments_rotates_and_exports_identical_events() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    let inputs = Inputs::find(&dir);
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let summary = import_and_check(&inputs, &db, &["--max-segment-size", "1MiB"]);
    let files = segment_files(&db);
    assert!(
        summary.contains(&format!(", {} segments written", files.len())),
        "{summary}"
    );
    let info = info(&db);
    assert!(files.len() >= 3, "{} segments", files.len());
    assert_eq!(info["segments"], files.len() as u64, "{info}");
    let mut sum = 0;
    for f in &files {
        let len = std::fs::metadata(f).unwrap().len();
        assert!(len <= 1 << 20, "{} is {len} bytes", f.display());
        sum += len;
    }
    assert_eq!(info["bytes"], sum, "{info}");
}

/// A database of events `0..n` written with `extra` import options, from a generated log file.
fn small_db(dir: &Path, n: u64, extra: &[&str]) -> PathBuf {
    let db = dir.join("db");
    let file = dir.join("gen.log");
    std::fs::write(&file, log(0..n)).unwrap();
    let mut args = vec!["import", "--quiet", "--db", s(&db)];
    args.extend_from_slice(extra);
    args.push(s(&file));
    ok(&run(&args), "weir import");
    db
}

#[test]
fn segment_size_at_or_over_2gib_is_refused_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("gen.log");
    std::fs::write(&file, log(0..10)).unwrap();
    // `2048` is a plain number of MiB, so 2 GiB as well.
    for size in ["2GiB", "4GiB", "2048", "2097152KiB", "1TiB"] {
        let db = tmp.path().join(format!("db-{size}"));
        let out = run(&[
            "import",
            "--quiet",
            "--db",
            s(&db),
            "--max-segment-size",
            size,
            s(&file),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{size}: {err}");
        assert!(err.contains("--max-segment-size"), "{size}: {err}");
        assert!(
            err.contains("2 GiB") && err.contains("FlatBuffer"),
            "{size}: {err}"
        );
        // Refused at startup: nothing was imported.
        assert!(segment_files(&db).is_empty(), "{size}");
        assert!(!db.join("wal").exists(), "{size}: a WAL was created");
    }
    for size in ["1GiB", "1024", "2047", "512MiB", "4096KiB"] {
        let db = tmp.path().join(format!("db-{size}"));
        let out = run(&[
            "import",
            "--quiet",
            "--db",
            s(&db),
            "--max-segment-size",
            size,
            s(&file),
        ]);
        ok(&out, size);
        assert_eq!(numbers(&export_json(&db)), (0..10).collect::<Vec<_>>());
    }
}

#[test]
fn export_n_prints_exactly_n_events() {
    let tmp = tempfile::tempdir().unwrap();
    let total = 1500;
    let db = small_db(
        tmp.path(),
        total,
        &["--batch-size", "100", "--max-segment-size", "8KiB"],
    );
    let segments = segment_files(&db);
    assert!(segments.len() >= 3, "{} segments", segments.len());
    for n in [
        0,
        1,
        99,
        100,
        101,
        777,
        total - 1,
        total,
        total + 1,
        1 << 40,
    ] {
        let out = run(&[
            "export",
            "--db",
            s(&db),
            "--to",
            "json",
            "-n",
            &n.to_string(),
        ]);
        let events: Vec<serde_json::Value> = ok(&out, "export -n")
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let want = n.min(total);
        assert_eq!(numbers(&events), (0..want).collect::<Vec<_>>(), "-n {n}");
        for (i, e) in events.iter().enumerate() {
            check_event(i as u64, e);
        }
        // The same count in Zeek TSV.
        let out = run(&["export", "--db", s(&db), "-n", &n.to_string()]);
        ok(&out, "export -n --to zeek-tsv");
        let (batches, _) = tsv::read_all(&out.stdout, ReaderOptions::new("export")).unwrap();
        assert_eq!(
            batches.iter().map(|b| b.len() as u64).sum::<u64>(),
            want,
            "-n {n} (TSV)"
        );
    }
    // `-n` touches no more segments than needed: damage the segment holding the last events;
    // `-n 1` still succeeds, a full export reports the damage.
    let last = last_segment(&db);
    flip_byte(&last);
    let out = run(&["export", "--db", s(&db), "--to", "json", "-n", "1"]);
    assert_eq!(ok(&out, "export -n 1").lines().count(), 1);
    let out = run(&["export", "--db", s(&db), "--to", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
}

/// The segment file holding the highest IDs, from `weir inspect --json`.
fn last_segment(db: &Path) -> PathBuf {
    segment_files(db)
        .into_iter()
        .max_by_key(|f| {
            let j = inspect_json(f);
            j["intervals"][0][0].as_u64().unwrap()
        })
        .unwrap()
}

fn inspect_json(seg: &Path) -> serde_json::Value {
    let out = run(&["inspect", s(seg), "--json"]);
    serde_json::from_str(&ok(&out, "weir inspect --json")).expect("inspect --json is JSON")
}

/// Flips every bit of the byte in the middle of `path` (inside the batch data).
/// Damages the rows of the segment at `path`: flips a byte from its middle on, the first
/// whose damage reading every batch finds (a segment has bytes nothing refers to, alignment and
/// padding, and metadata that readers take from its index file).
fn flip_byte(path: &Path) {
    let good = std::fs::read(path).unwrap();
    for at in good.len() / 2..good.len() {
        let mut bytes = good.clone();
        bytes[at] ^= 0xff;
        std::fs::write(path, &bytes).unwrap();
        if weir::unstable::segment::Segment::open(path)
            .and_then(|s| s.verify_all())
            .is_err()
        {
            return;
        }
    }
    panic!("no byte past the middle of {} is checked", path.display());
}

#[test]
fn inspect_json_matches_the_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let total = 1200;
    let db = small_db(
        tmp.path(),
        total,
        &["--batch-size", "64", "--max-segment-size", "16KiB"],
    );
    let files = segment_files(&db);
    assert!(files.len() >= 2);
    let mut intervals = Vec::new();
    for f in &files {
        let j = inspect_json(f);
        let events = j["events"].as_u64().unwrap();
        assert_eq!(j["bytes"], std::fs::metadata(f).unwrap().len(), "{j}");
        let stem = f.file_stem().unwrap().to_str().unwrap();
        assert_eq!(j["uuid"], stem, "{j}");
        let batches = j["batches"].as_array().unwrap();
        assert!(!batches.is_empty());
        let mut rows = 0;
        for b in batches {
            assert_eq!(b["schema"], "zeek.conn", "{b}");
            rows += b["rows"].as_u64().unwrap();
        }
        assert_eq!(rows, events, "{}", f.display());
        for iv in j["intervals"].as_array().unwrap() {
            let (a, b) = (iv[0].as_u64().unwrap(), iv[1].as_u64().unwrap());
            intervals.push((a, b));
        }
        // The human form names the same uuid.
        let out = run(&["inspect", s(f)]);
        assert!(ok(&out, "weir inspect").contains(stem));
    }
    // The segments' intervals tile [0, total) exactly.
    intervals.sort();
    let mut next = 0;
    for (a, b) in intervals {
        assert_eq!(a, next);
        next = b;
    }
    assert_eq!(next, total);
    // A file that is not a segment is an error naming it.
    let junk = tmp.path().join("junk.seg");
    std::fs::write(&junk, b"not a flatbuffer").unwrap();
    let out = run(&["inspect", s(&junk), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("junk.seg"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn inspect_and_info_exit_0_when_the_reader_goes_away() {
    let tmp = tempfile::tempdir().unwrap();
    let db = small_db(tmp.path(), 3000, &["--batch-size", "10"]);
    let seg = segment_files(&db).remove(0);
    for args in [
        vec!["inspect", s(&seg), "--json"],
        vec!["inspect", s(&seg)],
        vec!["info", "--db", s(&db), "--json"],
        vec!["export", "--db", s(&db)],
    ] {
        let mut child = weir()
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close our end of the pipe at once, like `| head -0`.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn verify_passes_a_good_db_and_names_a_damaged_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let total = 2000;
    let db = small_db(
        tmp.path(),
        total,
        &["--batch-size", "100", "--max-segment-size", "16KiB"],
    );
    let out = run(&["verify", "--db", s(&db)]);
    let stdout = ok(&out, "weir verify");
    let segs = segment_files(&db);
    assert!(segs.len() >= 3);
    assert!(
        stdout.contains(&format!("ok: {} segments, {total} events", segs.len())),
        "{stdout}"
    );

    // Damage the middle segment: verify exits 1 naming it (and only it).
    let bad = segs[segs.len() / 2].clone();
    let bad_iv = &inspect_json(&bad)["intervals"][0];
    let (a, b) = (bad_iv[0].as_u64().unwrap(), bad_iv[1].as_u64().unwrap());
    flip_byte(&bad);
    let out = run(&["verify", "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    let name = bad.file_name().unwrap().to_str().unwrap();
    assert!(stdout.contains(name), "{stdout}");
    for other in segs.iter().filter(|f| **f != bad) {
        let o = other.file_name().unwrap().to_str().unwrap();
        assert!(!stdout.contains(o), "{o} reported: {stdout}");
    }
    // The rest of the archive stays readable: export skips the damaged part and exits 1.
    let out = run(&["export", "--db", s(&db), "--to", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains(name), "{}", text(&out.stderr));
    let events: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // What is missing is one damaged batch (100 events) of the damaged segment, no more.
    let got = numbers(&events);
    assert!(got.windows(2).all(|w| w[0] < w[1]), "not in order");
    let present: std::collections::HashSet<u64> = got.iter().copied().collect();
    let missing: Vec<u64> = (0..total).filter(|i| !present.contains(i)).collect();
    assert!(!missing.is_empty(), "nothing skipped");
    assert!(
        missing.len() <= 100 && missing[0] >= a && *missing.last().unwrap() < b,
        "skipped {}..={} ({} events), damaged segment holds {a}..{b}",
        missing[0],
        missing.last().unwrap(),
        missing.len()
    );
    assert_eq!(
        missing.last().unwrap() - missing[0] + 1,
        missing.len() as u64,
        "skipped events not contiguous"
    );
    assert_eq!(got.len() + missing.len(), total as usize);

    // A truncated segment is damage too.
    let seg0 = segs.iter().find(|f| **f != bad).unwrap();
    let len = std::fs::metadata(seg0).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(seg0)
        .unwrap()
        .set_len(len / 3)
        .unwrap();
    let out = run(&["verify", "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(seg0.file_name().unwrap().to_str().unwrap()),
        "{stdout}"
    );
}

#[test]
fn second_concurrent_import_is_refused_as_locked() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let mut first = weir()
        .args(["import", "--quiet", "--db", s(&db)])
        .args(["--batch-timeout", "100ms"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = first.stdin.take().unwrap();
    stdin.write_all(log(0..5).as_bytes()).unwrap();
    stdin.flush().unwrap();
    // The first importer holds the database once its events are visible.
    wait_for("the first import's events", Duration::from_secs(30), || {
        let out = run(&["export", "--db", s(&db), "--to", "json"]);
        out.status.success() && text(&out.stdout).lines().count() == 5
    });

    let file = tmp.path().join("more.log");
    std::fs::write(&file, log(5..8)).unwrap();
    let second = run(&["import", "--quiet", "--db", s(&db), s(&file)]);
    let err = text(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{err}");
    assert!(err.contains("locked"), "{err}");
    assert!(err.contains(s(&db)), "{err}");
    assert!(err.contains(&format!("pid {}", first.id())), "{err}");
    // Readers are still fine while the import runs.
    ok(
        &run(&["info", "--db", s(&db)]),
        "weir info during an import",
    );
    assert!(
        first.try_wait().unwrap().is_none(),
        "first import ended early"
    );

    // EOF ends the first import; the lock is released with it.
    drop(stdin);
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    ok(
        &run(&["import", "--quiet", "--db", s(&db), s(&file)]),
        "import after the lock is released",
    );
    let events = export_json(&db);
    assert_eq!(numbers(&events), (0..8).collect::<Vec<_>>());
    for (i, e) in events.iter().enumerate() {
        check_event(i as u64, e);
    }
}

#[test]
fn batch_larger_than_a_segment_is_split_and_an_event_larger_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    // One batch of 3000 events (about 300 KB of rows) into 64 KiB segments.
    let total = 3000;
    let db = small_db(
        tmp.path(),
        total,
        &["--batch-size", "100000", "--max-segment-size", "64KiB"],
    );
    let files = segment_files(&db);
    assert!(files.len() >= 4, "{} segments", files.len());
    for f in &files {
        let len = std::fs::metadata(f).unwrap().len();
        assert!(len <= 64 << 10, "{} is {len} bytes", f.display());
    }
    let events = export_json(&db);
    assert_eq!(numbers(&events), (0..total).collect::<Vec<_>>());
    for (i, e) in events.iter().enumerate() {
        check_event(i as u64, e);
    }

    // A single event bigger than a segment cannot be stored: exit 1 with a clear message;
    // the events before it stay.
    let file = tmp.path().join("big.log");
    let mut text = log(total..total + 2);
    text.push_str(&conn_log::row(total + 2).replacen(
        ",b c,",
        &format!(",{},", "x".repeat(9000)),
        1,
    ));
    text.push_str(&conn_log::row(total + 3));
    std::fs::write(&file, text).unwrap();
    let out = run(&[
        "import",
        "--quiet",
        "--db",
        s(&db),
        "--max-segment-size",
        "4KiB",
        "--batch-size",
        "1",
        s(&file),
    ]);
    let err = cli::text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot fit in a segment"), "{err}");
    assert_eq!(
        numbers(&export_json(&db)),
        (0..total + 2).collect::<Vec<_>>()
    );
    assert!(ok(&run(&["verify", "--db", s(&db)]), "verify").starts_with("ok:"));
}

/// A gzip file large enough to be inflated and parsed in parallel, its members cut mid-line:
/// every event, in order; and Zeek JSON lines gzip'd the same way.
#[test]
fn large_gzip_files_of_tsv_and_json_import_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let total = 120_000;
    let plain = log(0..total);
    let gz = gzip_members(plain.as_bytes(), 7);
    // Above `PARALLEL_MIN_SIZE` (1 MiB of file), below which the parsers are not parallel.
    assert!(gz.len() > 1 << 20, "{}", gz.len());
    let tsv = tmp.path().join("big.log.gz");
    std::fs::write(&tsv, gz).unwrap();
    let db = tmp.path().join("db");
    let out = run(&["import", "--db", s(&db), s(&tsv)]);
    let summary = text(&out.stderr);
    ok(&out, "import of a large gzip file");
    let events = export_json(&db);
    assert_eq!(numbers(&events), (0..total).collect::<Vec<_>>());
    for (i, e) in events.iter().enumerate() {
        check_event(i as u64, e);
    }
    assert!(
        summary.contains(&format!("imported {} events", cli::grouped(total))),
        "{summary}"
    );

    let json = export_json_text(&db);
    let gz = tmp.path().join("big.json.gz");
    std::fs::write(&gz, gzip_members(json.as_bytes(), 5)).unwrap();
    let db2 = tmp.path().join("db2");
    ok(
        &run(&["import", "--db", s(&db2), s(&gz)]),
        "import of gzip'd JSON",
    );
    assert_eq!(export_json_text(&db2), json);
}

#[test]
fn one_import_of_tsv_json_gzip_and_zstd_files_detects_each() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut files = Vec::new();
    // Multi-member gzip TSV.
    let a = dir.join("a.log.gz");
    std::fs::write(&a, gzip_members(log(0..100).as_bytes(), 3)).unwrap();
    files.push(a);
    // Zeek JSON lines (as `weir convert --to json` writes them).
    let src = dir.join("b.log");
    std::fs::write(&src, log(100..150)).unwrap();
    let b = dir.join("b.json");
    std::fs::write(
        &b,
        ok(&run(&["convert", "--to", "json", s(&src)]), "convert"),
    )
    .unwrap();
    files.push(b.clone());
    // zstd TSV, when the zstd tool is there.
    let c = dir.join("c.log");
    std::fs::write(&c, log(150..200)).unwrap();
    let zst = dir.join("c.log.zst");
    match std::process::Command::new("zstd")
        .args(["-q", "-o", s(&zst), s(&c)])
        .status()
    {
        Ok(st) if st.success() => files.push(zst),
        _ => {
            eprintln!("note: no zstd tool: the zstd input is plain TSV");
            files.push(c);
        }
    }
    // Plain TSV.
    let d = dir.join("d.log");
    std::fs::write(&d, log(200..250)).unwrap();
    files.push(d);

    let db = dir.join("db");
    // In line order: the JSON file's schemas differ from the TSV files'.
    let mut args = vec!["import", "--quiet", "--batch-in-order", "--db", s(&db)];
    args.extend(files.iter().map(|p| s(p)));
    ok(&run(&args), "import of mixed inputs");
    let events = export_json(&db);
    assert_eq!(numbers(&events), (0..250).collect::<Vec<_>>());
    for (i, e) in events.iter().enumerate() {
        check_event(i as u64, e);
    }

    // Forcing TSV on a JSON file is a data error naming the file and line.
    let db2 = dir.join("db2");
    let out = run(&[
        "import",
        "--quiet",
        "--db",
        s(&db2),
        "--from",
        "zeek-tsv",
        s(&files[0]),
        s(&b),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("b.json:1"), "{err}");
}

/// Logs with literal separators (`#separator ||`, `#separator |`) import, and what
/// `weir export --to zeek` writes of them (its own `#separator \x09` header) imports again
/// with the same events.
#[test]
fn literal_separators_import_and_export_back() {
    let dir = tempfile::tempdir().unwrap();
    let (db, again) = (dir.path().join("db"), dir.path().join("again"));
    let logs = [
        common::fixture("literal_sep.log"),
        common::fixture("literal_pipe_sep.log"),
    ];
    let mut args = vec!["import", "-q", "--db", s(&db)];
    args.extend(logs.iter().map(|p| s(p)));
    ok(&run(&args), "import");
    let events = export_json(&db);
    assert_eq!(events.len(), 7);
    let exported = dir.path().join("exported.log");
    let zeek = ok(
        &run(&["export", "--db", s(&db), "--to", "zeek-tsv"]),
        "export",
    );
    assert!(zeek.starts_with("#separator \\x09\n"), "{zeek}");
    std::fs::write(&exported, &zeek).unwrap();
    ok(
        &run(&["import", "-q", "--db", s(&again), s(&exported)]),
        "import of the export",
    );
    assert_eq!(export_json(&again), events);
}

/// During a live import the active segment is a sparse file of the maximum segment size:
/// `weir info` counts the blocks it takes, not its length.
#[test]
fn info_during_a_live_import_counts_the_bytes_on_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let mut child = weir()
        .args([
            "import",
            "-q",
            "--db",
            s(&db),
            "--max-segment-size",
            "1GiB",
            "--batch-timeout",
            "50ms",
        ])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(log(0..100).as_bytes()).unwrap();
    stdin.flush().unwrap();
    let active = || {
        std::fs::read_dir(db.join("segments")).ok().and_then(|d| {
            d.flatten()
                .map(|e| e.path())
                .find(|p| p.to_string_lossy().ends_with(".seg.tmp"))
        })
    };
    wait_for("the active segment", Duration::from_secs(30), || {
        active().is_some()
    });
    wait_for("the events in the WAL", Duration::from_secs(30), || {
        info(&db)["wal"]["events"] == 100
    });
    let tmp_len = active().map(|p| std::fs::metadata(p).unwrap().len());
    let shown = info(&db);
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert!(tmp_len.unwrap() >= 1 << 30, "{tmp_len:?}");
    let on_disk = shown["disk_bytes"].as_u64().unwrap();
    assert!(on_disk < 64 << 20, "{on_disk} bytes on disk: {shown}");
    assert!(on_disk > 0, "{shown}");
}
