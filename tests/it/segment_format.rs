//! The segment format versions: archives written in format 1 (before the metadata checksum)
//! keep reading and verifying, and in format 2 every byte that carries meaning is covered: a
//! damaged field name, uuid, interval, count or batch header is an error naming the file.
//!
//! `tests/fixtures/archive-v1` was written by weir before format 2 (the commit before it):
//! `weir import --db tests/fixtures/archive-v1 --max-segment-size 16KiB --batch-size 50
//! tests/fixtures/archive-v1.log tests/fixtures/all_types.log` (324 events, 5 segments; the
//! LOCK file removed). `archive-v1.log` is `examples/generate` output: 120 conn events
//! (`--seed 13`), 100 dns (`--seed 14`) and 100 http (`--seed 15`), concatenated.
//! `tests/fixtures/archive-v2` is the same import by weir before format 3 (commit 121015d,
//! the last to write format 2: uncompressed batches, no sketches). `tests/fixtures/archive-v3`
//! is the same import by weir before format 4 (commit edda041, the last to write format 3:
//! zstd batches of varint row lengths and rows in one frame, sketches). `tests/fixtures/archive-v4`
//! is the same import by weir before format 5 (commit 3a00cd4,
//! the last to write format 4: batches in columns, sketches with per-field value counts, no
//! time histograms). `tests/fixtures/archive-v5` is the same import by weir before format 6 (commit
//! a5e250e, the last to write format 5: every column stored as msgpack values, sketches with
//! time histograms, index files). `tests/fixtures/archive-v6` is the same import by weir before
//! format 7 (commit 23072a7, the last to write format 6: time and duration columns as integer
//! planes, no dictionaries). `tests/fixtures/archive-v7` is the same import by weir before
//! format 8 (commit 0f1fd43, the last to write format 7: no checkpoints of followed files in
//! the segments). `tests/fixtures/archive-v8` is the same import by weir before format 9
//! (commit a3e3074, the last to write format 8: one checksum over all of a batch's columns).
//! `tests/fixtures/archive-v9` is the same import by weir before format 10 (commit 6990e40,
//! the last to write format 9: count, port and integer columns as msgpack values, no marked
//! columns). `tests/fixtures/archive-v10` is the same import by weir before format 11 (commit
//! 5411bbc, the last to write format 10: no column in blocks of rows; its batches of 50 rows
//! would hold none anyway, so it tests the version, and the blocked columns are tested on
//! batches large enough in `query_pruning.rs` and `columns.rs`). `tests/fixtures/archive-v11`
//! is the same import by weir before format 12 (commit a141dbf, the last on main to write
//! format 11 checkpoints in their first encoding, before bit 31 of the count, a followed
//! file's header, and bit 30, a file's sum; built in a worktree of its own): its checkpoints
//! have neither, which format 12 and a resume still read.
//! Tests work on a copy: opening a writer may modify an archive.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use common::cli::{ok, run, s, segment_files, text};
use common::store::{batch, copy_dir, schema};
use weir::unstable::codec::zeek::tsv;
use weir::unstable::codec::ReaderOptions;
use weir::unstable::segment::{Segment, SegmentError, FORMAT_VERSION};
use weir::unstable::store::{Archive, Store, StoreOptions};
use weir::unstable::wal::SyncPolicy;

/// A copy of the fixture archive of format `version` in a new temporary directory.
fn old_archive(version: u32) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    copy_dir(&common::fixture(&format!("archive-v{version}")), &db);
    (tmp, db)
}

/// The events of the fixture's source logs, read by weir's TSV reader, in import order.
fn v1_sources() -> Vec<common::events::Event> {
    let mut out = Vec::new();
    for name in ["archive-v1.log", "all_types.log"] {
        let path = common::fixture(name);
        let (batches, report) = tsv::read_all(
            &fs::read(&path).unwrap(),
            ReaderOptions::new(path.display().to_string()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(report.skipped, 0);
        out.extend(common::events::events(&batches));
    }
    out
}

#[test]
fn v1_archive_opens_exports_its_source_and_verifies_clean() {
    old_archive_opens_exports_its_source_and_verifies_clean(1);
}

#[test]
fn v2_archive_opens_exports_its_source_and_verifies_clean() {
    old_archive_opens_exports_its_source_and_verifies_clean(2);
}

#[test]
fn v3_archive_opens_exports_its_source_and_verifies_clean() {
    old_archive_opens_exports_its_source_and_verifies_clean(3);
}

#[test]
fn v4_archive_opens_exports_its_source_and_verifies_clean() {
    old_archive_opens_exports_its_source_and_verifies_clean(4);
}

#[test]
fn v5_archive_opens_exports_its_source_and_verifies_clean() {
    old_archive_opens_exports_its_source_and_verifies_clean(5);
}

#[test]
fn v6_archive_opens_exports_its_source_and_verifies_clean() {
    old_archive_opens_exports_its_source_and_verifies_clean(6);
}

#[test]
fn v7_archive_opens_exports_its_source_and_verifies_clean() {
    old_archive_opens_exports_its_source_and_verifies_clean(7);
}

#[test]
fn v8_archive_opens_exports_its_source_and_verifies_clean() {
    old_archive_opens_exports_its_source_and_verifies_clean(8);
}

#[test]
fn v9_archive_opens_exports_its_source_and_verifies_clean() {
    old_archive_opens_exports_its_source_and_verifies_clean(9);
}

#[test]
fn v10_archive_opens_exports_its_source_and_verifies_clean() {
    old_archive_opens_exports_its_source_and_verifies_clean(10);
}

#[test]
fn v11_archive_opens_exports_its_source_and_verifies_clean() {
    old_archive_opens_exports_its_source_and_verifies_clean(11);
}

fn old_archive_opens_exports_its_source_and_verifies_clean(version: u32) {
    let (_tmp, db) = old_archive(version);
    let files = segment_files(&db);
    assert_eq!(files.len(), 5);
    for f in &files {
        let seg = Segment::open(f).unwrap();
        assert_eq!(seg.version(), version, "{}", f.display());
        seg.verify_all().unwrap();
    }

    let archive = Archive::open(&db).unwrap();
    let report = archive.verify();
    assert!(report.problems.is_empty(), "{report:?}");
    assert_eq!(report.segments, 5);
    drop(archive);

    // The export, read back by weir's own TSV reader: the source logs' events, in order.
    let out = run(&["export", "--db", s(&db), "--to", "zeek-tsv"]);
    let exported = ok(&out, "weir export of an old archive");
    let (back, report) = tsv::read_all(exported.as_bytes(), ReaderOptions::new("export"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.skipped, 0);
    let back = common::events::events(&back);
    let want = v1_sources();
    assert_eq!(want.len(), 324);
    assert_eq!(back.len(), want.len());
    for (i, (w, g)) in want.iter().zip(&back).enumerate() {
        assert_eq!(w, g, "event {i}");
    }

    let out = run(&["verify", "--db", s(&db)]);
    assert!(
        ok(&out, "weir verify of an old archive").contains("5 segments, 324 events"),
        "{}",
        text(&out.stdout)
    );
    let out = run(&["inspect", s(&files[0]), "--json"]);
    let j: serde_json::Value = serde_json::from_str(&ok(&out, "weir inspect")).unwrap();
    assert_eq!(j["version"], version);
}

/// Appending to an archive of an older format writes segments of the current format next to the
/// old ones; all read and verify.
#[test]
fn v1_archive_takes_new_segments_in_the_current_format() {
    old_archive_takes_new_segments_in_the_current_format(1);
}

#[test]
fn v2_archive_takes_new_segments_in_the_current_format() {
    old_archive_takes_new_segments_in_the_current_format(2);
}

#[test]
fn v3_archive_takes_new_segments_in_the_current_format() {
    old_archive_takes_new_segments_in_the_current_format(3);
}

#[test]
fn v4_archive_takes_new_segments_in_the_current_format() {
    old_archive_takes_new_segments_in_the_current_format(4);
}

#[test]
fn v5_archive_takes_new_segments_in_the_current_format() {
    old_archive_takes_new_segments_in_the_current_format(5);
}

#[test]
fn v6_archive_takes_new_segments_in_the_current_format() {
    old_archive_takes_new_segments_in_the_current_format(6);
}

#[test]
fn v7_archive_takes_new_segments_in_the_current_format() {
    old_archive_takes_new_segments_in_the_current_format(7);
}

#[test]
fn v8_archive_takes_new_segments_in_the_current_format() {
    old_archive_takes_new_segments_in_the_current_format(8);
}

#[test]
fn v9_archive_takes_new_segments_in_the_current_format() {
    old_archive_takes_new_segments_in_the_current_format(9);
}

#[test]
fn v10_archive_takes_new_segments_in_the_current_format() {
    old_archive_takes_new_segments_in_the_current_format(10);
}

#[test]
fn v11_archive_takes_new_segments_in_the_current_format() {
    old_archive_takes_new_segments_in_the_current_format(11);
}

/// The checkpoints of the archive's newest segment (the full set as of its last event).
fn newest_checkpoints(db: &Path) -> (u32, Vec<weir::unstable::checkpoint::FileCheckpoint>) {
    let newest = segment_files(db)
        .into_iter()
        .map(|f| Segment::open(&f).unwrap())
        .max_by_key(|seg| seg.intervals().last().map(|r| r.end))
        .unwrap();
    let checkpoints = newest.checkpoints().unwrap().expect("checkpoints recorded");
    (newest.version(), checkpoints)
}

/// `archive-v11` holds its checkpoints in the encoding of format 11 before headers and sums
/// (bits 31 and 30 of the count), which format 12 was made for: they read back, and a second
/// import of the same logs skips both as imported whole, adding nothing. The same import by
/// this weir records the sums that the old encoding could not hold, so it is format 12: a
/// weir of format 11 refuses it by its version rather than calling its checkpoints damaged.
#[test]
fn v11_checkpoints_in_the_old_encoding_read_and_resume() {
    let (tmp, db) = old_archive(11);
    let logs = [
        common::fixture("archive-v1.log"),
        common::fixture("all_types.log"),
    ];
    let (version, old) = newest_checkpoints(&db);
    assert_eq!(version, 11);
    assert_eq!(old.len(), 2, "{old:?}");
    for cp in &old {
        assert!(cp.done, "{cp:?}");
        assert_eq!(cp.sum, None, "{cp:?}");
        assert_eq!(cp.header, "", "{cp:?}");
        let log = logs
            .iter()
            .find(|l| cp.path.ends_with(l.file_name().unwrap().to_str().unwrap()))
            .unwrap_or_else(|| panic!("{cp:?}"));
        assert_eq!(cp.pos.offset, fs::metadata(log).unwrap().len(), "{cp:?}");
    }

    let mut args = vec!["import", "--db", s(&db)];
    args.extend(logs.iter().map(|l| s(l)));
    let out = run(&args);
    let said = format!("{}{}", ok(&out, "import again"), text(&out.stderr));
    assert_eq!(said.matches("imported whole before").count(), 2, "{said}");
    let count = ok(&run(&["count", "--db", s(&db)]), "count");
    assert_eq!(count.trim(), "324");

    let fresh = tmp.path().join("fresh");
    let mut args = vec!["import", "-q", "--db", s(&fresh)];
    args.extend(["--max-segment-size", "16KiB", "--batch-size", "50"]);
    args.extend(logs.iter().map(|l| s(l)));
    ok(&run(&args), "import");
    let (version, new) = newest_checkpoints(&fresh);
    assert_eq!(new.len(), 2, "{new:?}");
    assert!(new.iter().all(|cp| cp.sum.is_some()), "{new:?}");
    assert_eq!(version, 12);
    assert_eq!(FORMAT_VERSION, 12);
}

fn old_archive_takes_new_segments_in_the_current_format(version: u32) {
    let (_tmp, db) = old_archive(version);
    let old = segment_files(&db);
    let s1 = schema("conn", 3);
    let (mut store, _) = Store::open_writer(
        &db,
        StoreOptions {
            max_segment_size: 16 << 10,
            sync: SyncPolicy::Never,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    for i in 0..10 {
        store.append(batch(&s1, 20, 30, i)).unwrap();
    }
    store.close().unwrap();
    let files = segment_files(&db);
    assert!(files.len() > old.len(), "{files:?}");
    for f in &files {
        let want = if old.contains(f) {
            version
        } else {
            FORMAT_VERSION
        };
        assert_eq!(Segment::open(f).unwrap().version(), want, "{}", f.display());
    }
    let archive = Archive::open(&db).unwrap();
    let report = archive.verify();
    assert!(report.problems.is_empty(), "{report:?}");
    assert_eq!(
        archive.scan().map(|b| b.unwrap().len()).sum::<usize>(),
        324 + 200
    );
    ok(&run(&["verify", "--db", s(&db)]), "weir verify");
}

/// A new archive of a few segments with several batches and schemas each.
fn v2_archive(dir: &Path) -> Vec<PathBuf> {
    let (a, b) = (schema("conn", 4), schema("dns", 2));
    let (mut store, _) = Store::open_writer(
        dir,
        StoreOptions {
            max_segment_size: 6 << 10,
            sync: SyncPolicy::Never,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    for i in 0..24u64 {
        let s = if i % 3 == 0 { &b } else { &a };
        store.append(batch(s, 2 + i as usize % 4, 20, i)).unwrap();
    }
    store.close().unwrap();
    let files = segment_files(dir);
    assert!(files.len() >= 2, "{files:?}");
    for f in &files {
        assert_eq!(Segment::open(f).unwrap().version(), FORMAT_VERSION);
    }
    files
}

#[test]
fn flipped_byte_in_a_field_name_fails_verify_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let files = v2_archive(dir.path());
    let victim = &files[0];
    let mut bytes = fs::read(victim).unwrap();
    let at = bytes
        .windows(3)
        .position(|w| w == b"uid")
        .expect("a field name in the file");
    bytes[at + 1] ^= 0x20; // "uId"
    fs::write(victim, &bytes).unwrap();

    // The segment's own checksum (`Segment::open` would read its index file, which holds the
    // undamaged metadata: `tests/it/segment_index.rs`).
    let err = Segment::open_verified(victim).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains(&victim.display().to_string()), "{msg}");
    assert!(msg.contains("metadata checksum mismatch"), "{msg}");

    let report = Archive::open(dir.path()).unwrap().verify();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    let name = victim.file_name().unwrap().to_str().unwrap();
    assert!(report.problems[0].file.ends_with(name), "{report:?}");
    assert!(report.problems[0].reason.contains("metadata checksum"));

    let out = run(&["verify", "--db", s(dir.path())]);
    assert_eq!(out.status.code(), Some(1));
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        all.contains(name) && all.contains("metadata checksum"),
        "{all}"
    );
}

/// A batch as read: schema, first ID, `ts` range and rows.
type BatchContent = (String, u64, Option<(i64, i64)>, Vec<Vec<u8>>);

/// Everything a segment says, metadata and rows.
#[derive(Debug, PartialEq)]
struct Content {
    version: u32,
    uuid: uuid::Uuid,
    intervals: Vec<std::ops::Range<u64>>,
    events: u64,
    schemas: Vec<String>,
    batches: Vec<BatchContent>,
}

/// Read with the verifier: these tests are about the segment file's own checks (its index
/// file, which `Segment::open` would read instead, has its own: `tests/it/segment_index.rs`).
fn content(path: &Path) -> Result<Content, SegmentError> {
    let seg = Segment::open_verified(path)?;
    let mut batches = Vec::new();
    for b in seg.batches() {
        let b = b?;
        batches.push((
            format!("{:?}", b.schema()),
            b.first_id(),
            b.ts_range(),
            b.rows().map(<[u8]>::to_vec).collect(),
        ));
    }
    Ok(Content {
        version: seg.version(),
        uuid: seg.uuid(),
        intervals: seg.intervals().to_vec(),
        events: seg.events(),
        schemas: seg.schemas().iter().map(|s| format!("{s:?}")).collect(),
        batches,
    })
}

/// Every byte of a format 2 segment, damaged in turn (all bits, then the lowest): the segment
/// is refused with an error naming the file, or the byte carried no meaning (padding) and
/// every value reads back exactly as written. In format 1 this failed for schema names, field
/// names, the uuid and the `ts` ranges.
#[test]
fn every_damaged_byte_is_detected_or_harmless() {
    let dir = tempfile::tempdir().unwrap();
    let files = v2_archive(dir.path());
    let path = &files[0];
    let original = fs::read(path).unwrap();
    let want = content(path).unwrap();
    assert!(
        want.batches.len() >= 2 && want.schemas.len() == 2,
        "{want:?}"
    );
    let file = fs::OpenOptions::new().write(true).open(path).unwrap();
    let (mut detected, mut harmless) = (0, 0);
    for i in 0..original.len() {
        for mask in [0xff, 0x01] {
            // In place (rewriting the whole file each time is slow on some file systems).
            file.write_all_at(&[original[i] ^ mask], i as u64).unwrap();
            let result = content(path);
            file.write_all_at(&original[i..=i], i as u64).unwrap();
            match result {
                Ok(got) => {
                    assert_eq!(got, want, "byte {i} ^ {mask:#x} read back differently");
                    harmless += 1;
                }
                Err(e) => {
                    assert!(e.is_corruption(), "byte {i}: {e}");
                    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
                    detected += 1;
                }
            }
        }
    }
    assert!(
        detected > harmless,
        "{detected} detected, {harmless} harmless"
    );
}

/// Every codec and a few levels, through the real binary: the export is the source, `verify`
/// is clean, `inspect` names the codec of each batch and `info` the ratio.
#[test]
fn every_codec_round_trips_through_import_and_export() {
    let tmp = tempfile::tempdir().unwrap();
    let src = common::fixture("archive-v1.log");
    let plain = tmp.path().join("plain");
    ok(
        &run(&[
            "import",
            "-q",
            "--db",
            s(&plain),
            "--compression",
            "none",
            s(&src),
        ]),
        "import",
    );
    let want = ok(
        &run(&["export", "--db", s(&plain), "--to", "json"]),
        "export",
    );
    for (codec, level) in [
        ("zstd", None),
        ("zstd", Some("-3")),
        ("zstd", Some("9")),
        ("lz4", None),
    ] {
        let db = tmp.path().join(format!("{codec}{}", level.unwrap_or("")));
        let mut args = vec!["import", "-q", "--db", s(&db), "--compression", codec];
        if let Some(l) = level {
            args.extend(["--compression-level", l]);
        }
        args.push(s(&src));
        ok(&run(&args), "import");
        let got = ok(&run(&["export", "--db", s(&db), "--to", "json"]), "export");
        assert_eq!(got, want, "{codec} {level:?}");
        ok(&run(&["verify", "--db", s(&db)]), "verify");
        let files = segment_files(&db);
        let out = run(&["inspect", s(&files[0]), "--json"]);
        let j: serde_json::Value = serde_json::from_str(&ok(&out, "inspect")).unwrap();
        assert_eq!(j["version"], FORMAT_VERSION);
        let b = &j["batches"][0];
        assert_eq!(b["codec"], codec, "{j}");
        // Format 4: rows that fit the schema are stored in columns.
        assert_eq!(b["layout"], "columns", "{j}");
        // Format 6: conn's times and durations as integer planes, in every batch of a codec;
        // format 7: its strings of few values as dictionaries (not its unique uids).
        for b in j["batches"].as_array().unwrap() {
            let planes = &b["planes"];
            let dicts = b["dicts"].as_array().unwrap();
            match b["schema"].as_str().unwrap() {
                "zeek.conn" => {
                    assert_eq!(planes, &serde_json::json!(["ts", "duration"]), "{j}");
                    assert!(dicts.contains(&"proto".into()), "{j}");
                    assert!(dicts.contains(&"conn_state".into()), "{j}");
                    assert!(!dicts.contains(&"uid".into()), "{j}");
                }
                _ => assert!(planes.as_array().unwrap().contains(&"ts".into()), "{j}"),
            }
        }
        assert!(b["stored_bytes"].as_u64() < b["bytes"].as_u64(), "{j}");
        assert!(b["bloom_bytes"].as_u64().unwrap() > 0, "{j}");
        let info: serde_json::Value =
            serde_json::from_str(&ok(&run(&["info", "--db", s(&db), "--json"]), "info")).unwrap();
        assert!(info["compression_ratio"].as_f64().unwrap() > 1.5, "{info}");
    }
    // A level the codec does not take is a usage error naming the flag.
    let out = run(&[
        "import",
        "--db",
        s(&tmp.path().join("x")),
        "--compression",
        "lz4",
        "--compression-level",
        "3",
        s(&src),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--compression-level"),
        "{}",
        text(&out.stderr)
    );
}

/// An archive of format 1, 2, 3 or 6 and current-format segments (uncompressed and
/// compressed): export, count, verify and info see every event.
#[test]
fn an_archive_mixing_formats_and_codecs_reads_whole() {
    for version in [1, 2, 3, 6] {
        let (_tmp, db) = old_archive(version);
        let src = common::fixture("archive-v1.log");
        for codec in ["zstd", "none", "lz4"] {
            ok(
                &run(&[
                    "import",
                    "-q",
                    "--again",
                    "--db",
                    s(&db),
                    "--compression",
                    codec,
                    s(&src),
                ]),
                "import",
            );
        }
        let versions: Vec<u32> = segment_files(&db)
            .iter()
            .map(|f| Segment::open(f).unwrap().version())
            .collect();
        assert!(
            versions.contains(&version) && versions.contains(&FORMAT_VERSION),
            "{versions:?}"
        );
        let total = 324 + 3 * 320;
        let out = ok(&run(&["count", "--db", s(&db)]), "count");
        assert_eq!(out.trim(), total.to_string());
        let out = ok(
            &run(&[
                "count",
                "--db",
                s(&db),
                "#type == \"zeek.dns\" && rcode_name != \"x\"",
            ]),
            "count",
        );
        assert_eq!(out.trim(), (4 * 100).to_string());
        let exported = ok(&run(&["export", "--db", s(&db), "--to", "json"]), "export");
        assert_eq!(exported.lines().count(), total);
        let v = ok(&run(&["verify", "--db", s(&db)]), "verify");
        assert!(v.contains(&format!("{total} events")), "{v}");
        let info: serde_json::Value =
            serde_json::from_str(&ok(&run(&["info", "--db", s(&db), "--json"]), "info")).unwrap();
        assert_eq!(info["events"], total);
        assert!(info["compression_ratio"].as_f64().unwrap() > 1.0, "{info}");
    }
}

/// Compacting an archive of format 6 segments and current ones rewrites them all in the
/// current format, with dictionary columns, every event kept in ID order.
#[test]
fn compacting_a_v6_archive_rewrites_it_in_the_current_format() {
    let (_tmp, db) = old_archive(6);
    let src = common::fixture("archive-v1.log");
    ok(&run(&["import", "-q", "--db", s(&db), s(&src)]), "import");
    let before = ok(&run(&["export", "--db", s(&db), "--to", "json"]), "export");
    assert_eq!(before.lines().count(), 324 + 320);
    ok(&run(&["compact", "--db", s(&db)]), "compact");
    let after = ok(&run(&["export", "--db", s(&db), "--to", "json"]), "export");
    assert_eq!(after, before);
    ok(&run(&["verify", "--db", s(&db)]), "verify");
    let files = segment_files(&db);
    assert!(files.len() < 6, "{} segments", files.len());
    let mut dicts = 0;
    for f in &files {
        assert_eq!(Segment::open(f).unwrap().version(), FORMAT_VERSION);
        let out = run(&["inspect", s(f), "--json"]);
        let j: serde_json::Value = serde_json::from_str(&ok(&out, "inspect")).unwrap();
        for b in j["batches"].as_array().unwrap() {
            dicts += b["dicts"].as_array().unwrap().len();
        }
    }
    assert!(dicts > 0, "no dictionary column after compaction");
}

/// A damaged byte in a compressed batch's stored bytes: `verify` names the segment and the
/// batch, and the other batches stay readable.
#[test]
fn a_damaged_compressed_batch_is_named_by_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let src = common::fixture("archive-v1.log");
    ok(
        &run(&[
            "import",
            "-q",
            "--db",
            s(&db),
            "--batch-size",
            "40",
            s(&src),
        ]),
        "import",
    );
    let files = segment_files(&db);
    let path = &files[0];
    let seg = Segment::open(path).unwrap();
    let (codec, stored, _) = seg.batch_storage(2).unwrap();
    assert_eq!(codec, weir::unstable::segment::Codec::Zstd);
    drop(seg);
    // Find batch 2's stored bytes by their content: the longest run that differs from an
    // import without batch 2 is hard to get, so damage every byte of the file in turn until
    // verify names batch 2 (the front holds no bytes of it).
    let original = fs::read(path).unwrap();
    let file = fs::OpenOptions::new().write(true).open(path).unwrap();
    let mut named = false;
    for i in (0..original.len()).rev().step_by(7) {
        file.write_all_at(&[original[i] ^ 0x5a], i as u64).unwrap();
        let report = Archive::open(&db).unwrap().verify();
        file.write_all_at(&original[i..=i], i as u64).unwrap();
        // (Damage to the batch's table is found at open, by the verifier or the metadata
        // checksum; damage to its stored rows only when they are read.)
        if let Some(p) = report
            .problems
            .iter()
            // (Format 9: the header's or one column's checksum.)
            .find(|p| p.reason.starts_with("batch 2: ") && p.reason.contains("checksum mismatch"))
        {
            assert!(
                p.file
                    .ends_with(path.file_name().unwrap().to_str().unwrap()),
                "{p:?}"
            );
            assert!(p.reason.contains("checksum"), "{p:?}");
            named = true;
            // The batches before and after it still export; the export fails at the end.
            file.write_all_at(&[original[i] ^ 0x5a], i as u64).unwrap();
            let out = run(&["export", "--db", s(&db), "--to", "json"]);
            assert_eq!(out.status.code(), Some(1));
            assert_eq!(text(&out.stdout).lines().count(), 320 - 40);
            assert!(
                text(&out.stderr).contains("batch 2"),
                "{}",
                text(&out.stderr)
            );
            break;
        }
    }
    assert!(named, "no damage named batch 2 ({stored} stored bytes)");
}

/// Queries evaluated on the columns they read (format 4) give what they give on uncompressed
/// rows: the same counts and the same exported events, for predicates on one field, several,
/// containers, unset values, type extractors and values.
#[test]
fn projected_evaluation_equals_full_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let src = common::fixture("archive-v1.log");
    let all = common::fixture("all_types.log");
    let dbs: Vec<PathBuf> = ["none", "zstd", "lz4"]
        .iter()
        .map(|codec| {
            let db = tmp.path().join(codec);
            ok(
                &run(&[
                    "import",
                    "-q",
                    "--db",
                    s(&db),
                    "--compression",
                    codec,
                    s(&src),
                    s(&all),
                ]),
                "import",
            );
            db
        })
        .collect();
    let files = segment_files(&dbs[1]);
    let j: serde_json::Value =
        serde_json::from_str(&ok(&run(&["inspect", s(&files[0]), "--json"]), "inspect")).unwrap();
    assert_eq!(j["batches"][0]["layout"], "columns", "{j}");
    for q in [
        "orig_bytes > 1k",
        "#type == \"zeek.conn\" && orig_bytes > 100",
        "id.resp_p == 53 || query ~ /example/",
        "service == \"dns\"",
        "resp_h in 10.0.0.0/8",
        "\"ns1.example\" in answers",
        "status_code >= 400 && method == \"GET\"",
        "duration > 1s",
        ":count > 1000",
        ":addr == 192.168.1.1",
        "192.168.1.102",
        "uid != \"x\"",
        "ts > 2009-11-18",
    ] {
        let mut got = Vec::new();
        for db in &dbs {
            let count = ok(&run(&["count", "--db", s(db), q]), "count");
            let export = ok(
                &run(&["export", "--db", s(db), "--to", "json", q]),
                "export",
            );
            assert_eq!(count.trim(), export.lines().count().to_string(), "{q}");
            got.push((count, export));
        }
        assert_eq!(got[0], got[1], "{q}: zstd columns");
        assert_eq!(got[0], got[2], "{q}: lz4 columns");
    }
}

/// Format 3 sketches carry no per-field value counts: a count over a v3 archive reads every
/// row of a batch that a format 4 sketch counts whole, and both give the same answer.
#[test]
fn v3_sketches_never_count_a_batch_whole_format_4_ones_do() {
    let (_tmp, db) = old_archive(3);
    let q = weir::unstable::query::Query::parse("#timestamp >= 1970-01-02").unwrap();
    let archive = Archive::open(&db).unwrap();
    let total = archive.catalog().next_id;
    let (n3, stats3) = q.count(&archive).unwrap();
    // A few events have no `ts`: every row is read to find them.
    assert!(n3 > 0 && n3 < total, "{n3} of {total}");
    assert_eq!(stats3.rows_evaluated, total, "{stats3:?}");
    // The same events rewritten in the current format (export, then import).
    let out = run(&["export", "--db", s(&db), "--to", "zeek-tsv"]);
    let tsv = ok(&out, "export");
    let db4 = db.with_file_name("v4");
    let imported = common::cli::run_with_stdin(&["import", "-q", "--db", s(&db4)], tsv.as_bytes());
    ok(&imported, "import");
    let (n4, stats4) = q.count(&Archive::open(&db4).unwrap()).unwrap();
    assert_eq!(n4, n3);
    // Only the batches holding an event without `ts` are read; the others are counted whole.
    assert!(stats4.rows_evaluated < total / 10, "{stats4:?}");
}

/// Format 4 sketches have no time histograms: a count of a time range that cuts batches
/// reads their rows in a v4 archive; the same events in the current format are counted from
/// the histograms (the range's ends are whole seconds), with the same answer.
#[test]
fn v4_batches_are_read_for_a_time_range_the_current_format_counts_from_histograms() {
    let (_tmp, db) = old_archive(4);
    let q = weir::unstable::query::Query::parse(
        "#timestamp >= 2009-11-18T08:00:23Z && #timestamp < 2009-11-18T08:00:26Z",
    )
    .unwrap();
    let (n4, stats4) = q.count(&Archive::open(&db).unwrap()).unwrap();
    assert!(n4 > 0, "{n4}");
    assert!(stats4.rows_evaluated > 0, "{stats4:?}");
    let out = run(&["export", "--db", s(&db), "--to", "zeek-tsv"]);
    let tsv = ok(&out, "export");
    let db5 = db.with_file_name("v5");
    let imported = common::cli::run_with_stdin(&["import", "-q", "--db", s(&db5)], tsv.as_bytes());
    ok(&imported, "import");
    let archive = Archive::open(&db5).unwrap();
    for f in segment_files(&db5) {
        assert_eq!(Segment::open(&f).unwrap().version(), FORMAT_VERSION);
    }
    let (n5, stats5) = q.count(&archive).unwrap();
    assert_eq!(n5, n4);
    assert_eq!(stats5.rows_evaluated, 0, "{stats5:?}");
    // Without pruning, the rows say the same.
    let all = weir::unstable::query::SearchOptions {
        prune: false,
        ..weir::unstable::query::SearchOptions::default()
    };
    let (n, _) = q.search_with(&archive, all).unwrap().count().unwrap();
    assert_eq!(n, n5);
}

/// A checkpoint of file `ino` at `offset`.
fn checkpoint(ino: u64, offset: u64) -> weir::unstable::checkpoint::FileCheckpoint {
    weir::unstable::checkpoint::FileCheckpoint {
        id: weir::unstable::checkpoint::FileId {
            dev: 7,
            ino,
            fp_len: 100,
            fp_crc: 42,
        },
        path: format!("/logs/f{ino}.log"),
        pos: weir::unstable::checkpoint::Position { offset, skip: 0 },
        done: false,
        raw: offset / 3,
        header: String::new(),
        sum: None,
    }
}

/// Format 8: each sealed segment records the full set of checkpoints as of its last event
/// (not only those of its own rows), covered by the metadata checksum; an erase's and a
/// compaction's new segments carry those of the segments they rewrite; format 7 segments
/// record none.
#[test]
fn segments_record_the_checkpoints_as_of_their_last_event() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let s1 = schema("conn", 3);
    let opts = StoreOptions {
        max_segment_size: 16 << 10,
        sync: SyncPolicy::Never,
        compression: weir::unstable::segment::Compression::NONE,
        ..StoreOptions::default()
    };
    let (mut store, _) = Store::open_writer(&db, opts).unwrap();
    for i in 0..12u64 {
        let mut b = batch(&s1, 20, 30, i);
        // File 1 only in the first batch; file 2 in every one.
        let mut ends = vec![checkpoint(2, 100 * (i + 1))];
        if i == 0 {
            ends.insert(0, checkpoint(1, 50));
        }
        b.set_marks(
            ends.into_iter()
                .map(|end| weir::unstable::checkpoint::Mark {
                    row_start: 0,
                    row_end: 20,
                    start: None,
                    end,
                })
                .collect(),
        );
        store.append(b).unwrap();
    }
    store.close().unwrap();
    let cat: serde_json::Value =
        serde_json::from_slice(&fs::read(db.join("catalog.json")).unwrap()).unwrap();
    let segs = cat["segments"].as_array().unwrap();
    assert!(segs.len() > 1, "{cat}");
    // The newest holds no row of file 1, yet records it: the full set.
    let newest = db.join(segs.last().unwrap()["file"].as_str().unwrap());
    let list = Segment::open(&newest)
        .unwrap()
        .checkpoints()
        .unwrap()
        .unwrap();
    assert_eq!(list, vec![checkpoint(1, 50), checkpoint(2, 1200)]);
    // An older segment: file 2 as of its end.
    let second = Segment::open(db.join(segs[0]["file"].as_str().unwrap())).unwrap();
    let end = second.intervals().last().unwrap().end;
    let list = second.checkpoints().unwrap().unwrap();
    assert_eq!(
        list,
        vec![checkpoint(1, 50), checkpoint(2, 100 * (end / 20))]
    );
    // Covered by the metadata checksum: a changed path byte is damage.
    let mut bytes = fs::read(&newest).unwrap();
    let at = bytes
        .windows(12)
        .position(|w| w == b"/logs/f2.log")
        .unwrap();
    bytes[at + 7] ^= 0x01;
    let damaged = tmp.path().join("damaged.seg");
    fs::write(&damaged, &bytes).unwrap();
    let err = Segment::open_verified(&damaged).unwrap_err();
    assert!(err.to_string().contains("metadata checksum"), "{err}");
    // Erase part of the newest segment, then compact: the newest keeps the full set.
    let last = segs.last().unwrap()["intervals"][0][0].as_u64().unwrap();
    ok(
        &run(&[
            "erase",
            "--db",
            s(&db),
            "--ids",
            &format!("{last}-{}", last + 4),
        ]),
        "erase",
    );
    ok(&run(&["compact", "--db", s(&db)]), "compact");
    let cat: serde_json::Value =
        serde_json::from_slice(&fs::read(db.join("catalog.json")).unwrap()).unwrap();
    let newest = db.join(
        cat["segments"].as_array().unwrap().last().unwrap()["file"]
            .as_str()
            .unwrap(),
    );
    let list = Segment::open(&newest)
        .unwrap()
        .checkpoints()
        .unwrap()
        .unwrap();
    assert_eq!(list, vec![checkpoint(1, 50), checkpoint(2, 1200)]);
    // Format 7 segments record none.
    for f in segment_files(&common::fixture("archive-v7")) {
        assert_eq!(Segment::open(&f).unwrap().checkpoints().unwrap(), None);
    }
}

/// Format 10 stores count, port and int columns marked (markers, then payloads): the
/// fixture of format 9 (the same events as msgpack values) and a fresh import of its
/// sources in the current format answer every query on those columns alike, through the
/// comparisons that read the numbers, the aggregations and the rows rebuilt for output.
#[test]
fn a_v9_archive_and_its_sources_in_the_current_format_answer_alike() {
    let (_tmp, old) = old_archive(9);
    let new = _tmp.path().join("current");
    ok(
        &run(&[
            "import",
            "-q",
            // As the v9 archive holds them: no computed Community IDs.
            "--community-id",
            "off",
            "--db",
            s(&new),
            "--max-segment-size",
            "16KiB",
            "--batch-size",
            "50",
            s(&common::fixture("archive-v1.log")),
            s(&common::fixture("all_types.log")),
        ]),
        "import",
    );
    // The new segments hold marked columns; the old ones none.
    let marked = |db: &Path| -> usize {
        segment_files(db)
            .iter()
            .map(|f| {
                let out = run(&["inspect", s(f), "--json"]);
                let j: serde_json::Value = serde_json::from_str(&ok(&out, "inspect")).unwrap();
                j["batches"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b["marked"].as_array().map_or(0, Vec::len))
                    .sum::<usize>()
            })
            .sum()
    };
    assert_eq!(marked(&old), 0);
    assert!(marked(&new) > 0);
    let counts = [
        "orig_bytes > 100",
        "id.resp_p == 53",
        "id.resp_p != 53",
        "id.orig_p < 1024 || orig_pkts >= 3",
        "resp_bytes > 0 && missed_bytes == 0",
        ":count > 1000",
        ":int < 0",
        "c >= 1 && i > -5",
        "id.resp_p == 53/udp",
        "orig_bytes in [0, 1, 2]",
        "trans_id > 30000",
    ];
    for q in counts {
        let a = ok(&run(&["count", "--db", s(&old), q]), q);
        let b = ok(&run(&["count", "--db", s(&new), q]), q);
        assert_eq!(a, b, "{q}");
    }
    let exports = [
        "orig_bytes > 100",
        "id.resp_p == 53 || :int < 0",
        "summarize count() by id.resp_p",
        "summarize s=sum(orig_bytes), m=mean(resp_bytes), x=max(orig_pkts) by proto",
        "orig_bytes > 10 | summarize n=count(), d=distinct(id.orig_p) by service",
        "top id.orig_p 5",
        "rare trans_id 3",
        "summarize sum(orig_bytes) by id.orig_h | sort sum(orig_bytes) desc | head 4",
        "sort orig_bytes desc | head 7",
    ];
    for q in exports {
        let a = ok(&run(&["export", "--db", s(&old), "--to", "json", q]), q);
        let b = ok(&run(&["export", "--db", s(&new), "--to", "json", q]), q);
        assert!(!a.trim().is_empty(), "{q}");
        assert_eq!(a, b, "{q}");
    }
}
