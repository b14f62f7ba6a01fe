//! The stored-batch decoder (`codec::arrow::decode_columns`, through `query::to_arrow`):
//! a batch stored in columns decodes straight into the record batch that its rows give
//! through the row converter (`ArrowBuilder`), for every segment format fixture
//! (`tests/fixtures/archive-v1` to `v11`), fresh archives of every `--compression` codec
//! (columns; rows for `none`), batches of the write-ahead log, with projections and
//! selections (some rows, none, all); a search's hits decode as their rows; and a damaged
//! column is an error naming its field, never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use arrow_array::{RecordBatch, UInt32Array};
use common::cli::{ok, run, s};
use weir::unstable::codec::arrow::{ArrowBuilder, ArrowForm};
use weir::unstable::query::to_arrow::record_batches;
use weir::unstable::query::{Query, SearchOptions};
use weir::unstable::store::{Archive, BatchRef, Store, StoreOptions};

/// The rows of `rows` through the row converter, as one record batch.
fn from_rows<'a>(
    schema: &weir::unstable::types::SchemaRef,
    rows: impl Iterator<Item = &'a [u8]>,
) -> RecordBatch {
    from_rows_as(schema, rows, ArrowForm::Interchange)
}

/// `rows` of `schema` through the row converter, in the Arrow form `form`.
fn from_rows_as<'a>(
    schema: &weir::unstable::types::SchemaRef,
    rows: impl Iterator<Item = &'a [u8]>,
    form: ArrowForm,
) -> RecordBatch {
    let mut b = match form {
        ArrowForm::Interchange => ArrowBuilder::new(schema.clone()),
        ArrowForm::Exact => ArrowBuilder::exact(schema.clone()),
    };
    for row in rows {
        b.append(row).unwrap();
    }
    b.finish().unwrap()
}

/// `want` projected to `fields` and cut to the rows `select`.
fn expected(want: &RecordBatch, fields: Option<&[usize]>, select: Option<&[usize]>) -> RecordBatch {
    let projected = match fields {
        Some(f) => want.project(f).unwrap(),
        None => want.clone(),
    };
    match select {
        Some(sel) => {
            let idx: UInt32Array = sel.iter().map(|&r| r as u32).collect();
            arrow_select::take::take_record_batch(&projected, &idx).unwrap()
        }
        None => projected,
    }
}

/// Decodes every batch of `archive` (the decoder where it is stored in columns, the row
/// converter otherwise) and compares it with its rows through the row converter, whole and
/// with projections and selections. Returns (batches decoded from columns, batches).
fn check_archive(archive: &Archive, what: &str) -> (usize, usize) {
    let (mut columnar, mut batches) = (0, 0);
    for b in archive.scan() {
        let b: BatchRef = b.unwrap();
        batches += 1;
        if b.encoded_columns(None).is_some() {
            columnar += 1;
        }
        let schema = b.schema().clone();
        // Both forms: the interchange one (lake, IPC, API) and the exact one (text writers).
        for form in [ArrowForm::Interchange, ArrowForm::Exact] {
            let want = from_rows_as(&schema, b.rows(), form);
            let got = record_batches(&b, form, None, None).unwrap();
            assert_eq!(got.len(), 1, "{what}");
            assert!(got[0] == want, "{what}: batch {batches} differs ({form:?})");
            let (n, k) = (b.len(), schema.fields.len());
            let some: Vec<usize> = (0..n).filter(|r| r % 3 == 1).collect();
            let all: Vec<usize> = (0..n).collect();
            let last = vec![n - 1];
            let reversed: Vec<usize> = (0..k).rev().collect();
            let selections: [Option<&[usize]>; 5] =
                [None, Some(&[]), Some(&all), Some(&some), Some(&last)];
            let projections: [Option<&[usize]>; 4] =
                [None, Some(&[k - 1, 0]), Some(&[k / 2]), Some(&reversed)];
            for select in selections {
                for fields in projections {
                    let got = record_batches(&b, form, fields, select).unwrap();
                    assert_eq!(got.len(), 1, "{what}");
                    let want = expected(&want, fields, select);
                    assert!(
                        got[0] == want,
                        "{what}: batch {batches}, fields {fields:?}, {:?} rows ({form:?})",
                        select.map(<[_]>::len)
                    );
                }
            }
        }
    }
    (columnar, batches)
}

/// Every segment format fixture: formats 4 on have batches stored in columns (planes from 6,
/// dictionaries from 7, marked columns from 10, blocks from 11), each decoding to its rows.
#[test]
fn every_fixture_archive_decodes_as_its_rows() {
    let tmp = tempfile::tempdir().unwrap();
    for version in 1..=11 {
        let db = tmp.path().join(format!("v{version}"));
        common::store::copy_dir(&common::fixture(&format!("archive-v{version}")), &db);
        let archive = Archive::open(&db).unwrap();
        let (columnar, batches) = check_archive(&archive, &format!("archive-v{version}"));
        assert!(batches > 0, "v{version}");
        if version >= 4 {
            assert!(
                columnar > 0,
                "v{version}: no batch decoded from its columns"
            );
        } else {
            assert_eq!(columnar, 0, "v{version}");
        }
    }
}

/// Fresh archives of every `--compression` codec: zstd and lz4 store batches in columns,
/// none in rows; both decode to their rows.
#[test]
fn fresh_archives_of_every_codec_decode_as_their_rows() {
    let tmp = tempfile::tempdir().unwrap();
    for codec in ["zstd", "lz4", "none"] {
        let db = tmp.path().join(codec);
        let out = run(&[
            "import",
            "--db",
            s(&db),
            "--compression",
            codec,
            "--batch-size",
            "40",
            s(&common::fixture("archive-v1.log")),
            s(&common::fixture("all_types.log")),
            s(&common::fixture("non_utf8.log")),
        ]);
        ok(&out, &format!("import {codec}"));
        let archive = Archive::open(&db).unwrap();
        let (columnar, batches) = check_archive(&archive, codec);
        assert!(batches > 3, "{codec}");
        match codec {
            "none" => assert_eq!(columnar, 0),
            _ => assert!(columnar * 2 > batches, "{codec}: {columnar} of {batches}"),
        }
    }
}

/// Batches of the write-ahead log (an archive still being written) convert through the row
/// converter, projected and selected the same way.
#[test]
fn write_ahead_log_batches_decode_as_their_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let (mut store, _) = Store::open_writer(&db, StoreOptions::default()).unwrap();
    let schema = common::store::schema("conn", 5);
    for seed in 0..3 {
        store
            .append(common::store::batch(&schema, 30 + seed as usize, 10, seed))
            .unwrap();
    }
    store.flush().unwrap();
    let archive = Archive::open(&db).unwrap();
    let (columnar, batches) = check_archive(&archive, "wal");
    assert_eq!((columnar, batches), (0, 3));
    store.close().unwrap();
}

/// A search's hits (every event, and an expression that selects some rows of each batch)
/// decode to the record batch of their rows, whole and cut short, from columns when the
/// search defers them.
#[test]
fn hits_decode_as_their_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let out = run(&[
        "import",
        "--db",
        s(&db),
        "--batch-size",
        "50",
        s(&common::fixture("archive-v1.log")),
        s(&common::fixture("all_types.log")),
    ]);
    ok(&out, "import");
    let archive = Archive::open(&db).unwrap();
    for text in [
        "",
        "orig_bytes > 100 || proto == \"udp\"",
        "#type == \"zeek.conn\"",
    ] {
        let query = match text {
            "" => Query::all(),
            t => Query::parse(t).unwrap(),
        };
        for defer_columns in [true, false] {
            let options = SearchOptions {
                defer_columns,
                ..SearchOptions::default()
            };
            let (mut hits_seen, mut selected) = (0, 0);
            for hits in query.search_with(&archive, options).unwrap() {
                let hits = hits.unwrap();
                hits_seen += 1;
                selected += usize::from(hits.selected().is_some());
                for take in [hits.len(), hits.len().div_ceil(2)] {
                    let want = from_rows(hits.schema(), hits.rows().take(take));
                    let got = hits
                        .record_batches(ArrowForm::Interchange, None, take)
                        .unwrap();
                    assert_eq!(got.len(), 1);
                    assert!(got[0] == want, "{text:?} take {take}");
                    let k = hits.schema().fields.len();
                    let got = hits
                        .record_batches(ArrowForm::Interchange, Some(&[k - 1, 1]), take)
                        .unwrap();
                    assert!(got[0] == want.project(&[k - 1, 1]).unwrap(), "{text:?}");
                }
            }
            assert!(hits_seen > 0, "{text:?}");
            if text.contains("orig_bytes") {
                assert!(selected > 0, "some batch has some rows selected");
            }
        }
    }
}

/// One batch of a unique string per row (most of the segment's bytes), a count and a time;
/// a byte of the middle of the segment file flipped lands in the string column, whose
/// checksum then fails: converting the batch is an error naming that field (not a panic),
/// through the embedding API's path and the lake's.
#[test]
fn a_damaged_column_is_an_error_naming_its_field() {
    use weir::unstable::types::{Field, Schema, Type};
    use weir::unstable::value::Value;

    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let schema = std::sync::Arc::new(Schema::new(
        "zeek.unique",
        vec![
            Field::new("ts", Type::Time),
            Field::new("uid", Type::String),
            Field::new("n", Type::Count),
        ],
    ));
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let rows: Vec<Vec<Value>> = (0..3000i64)
        .map(|i| {
            let uid: String = (0..40)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    char::from(b'a' + (x % 26) as u8)
                })
                .collect();
            vec![
                Value::Time(1_600_000_000_000_000_000 + i * 1_000_000),
                Value::String(uid.into_bytes()),
                Value::Count(i as u64),
            ]
        })
        .collect();
    let (mut store, _) = Store::open_writer(&db, StoreOptions::default()).unwrap();
    store
        .append(common::events::batch_of(&schema, &rows))
        .unwrap();
    store.close().unwrap();
    let seg = &common::cli::segment_files(&db)[0];
    let mut bytes = std::fs::read(seg).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(seg, &bytes).unwrap();

    let archive = Archive::open(&db).unwrap();
    let options = SearchOptions {
        defer_columns: true,
        ..SearchOptions::default()
    };
    let mut errors = Vec::new();
    for hits in Query::all().search_with(&archive, options).unwrap() {
        match hits {
            Ok(h) => errors.push(
                h.record_batches(ArrowForm::Interchange, None, h.len())
                    .unwrap_err()
                    .to_string(),
            ),
            Err(e) => errors.push(e.to_string()),
        }
    }
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("field uid"), "{}", errors[0]);
    // The lake's export fails naming the field too.
    let lake = tmp.path().join("lake");
    let out = run(&[
        "export",
        "--db",
        s(&db),
        "--to",
        "parquet",
        "--output",
        s(&lake),
    ]);
    assert!(!out.status.success());
    let err = common::cli::text(&out.stderr);
    assert!(err.contains("field uid"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// `weir export` decodes batches stored in columns straight into Arrow (the interchange form
/// for `--to arrow`, the exact one for the text formats): its output is the same, byte for
/// byte, as from an archive stored in rows (`--compression none`), for every event, an
/// expression selecting some rows of each batch, and `-n` cutting a batch short.
#[test]
fn arrow_output_from_columns_is_the_output_from_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = [
        common::fixture("archive-v1.log"),
        common::fixture("all_types.log"),
    ];
    for codec in ["zstd", "none"] {
        let db = tmp.path().join(codec);
        let mut args = vec!["import", "--db", s(&db), "--compression", codec];
        args.extend(logs.iter().map(|l| s(l)));
        ok(&run(&args), &format!("import {codec}"));
    }
    let cases: [&[&str]; 4] = [
        &[],
        &["orig_bytes > 100 || proto == \"udp\""],
        &["-n", "77"],
        &["#type == \"zeek.conn\"", "-n", "3"],
    ];
    let formats = ["arrow", "zeek-tsv", "json", "csv", "table"];
    for (extra, to) in cases
        .iter()
        .flat_map(|c| formats.iter().map(move |f| (c, f)))
    {
        let outputs: Vec<Vec<u8>> = ["zstd", "none"]
            .iter()
            .map(|codec| {
                let db = tmp.path().join(codec);
                let mut args = vec!["export", "--db", s(&db), "--to", to];
                args.extend(extra.iter());
                let out = run(&args);
                ok(&out, &format!("export {codec} --to {to} {extra:?}"));
                // `#open`/`#close` carry the wall clock of writing.
                let stamped = |l: &&[u8]| l.starts_with(b"#open\t") || l.starts_with(b"#close\t");
                match *to {
                    "zeek-tsv" => out
                        .stdout
                        .split(|&b| b == b'\n')
                        .filter(|l| !stamped(l))
                        .collect::<Vec<_>>()
                        .join(&b'\n'),
                    _ => out.stdout,
                }
            })
            .collect();
        assert!(!outputs[0].is_empty(), "--to {to} {extra:?}");
        assert!(
            outputs[0] == outputs[1],
            "--to {to} {extra:?}: outputs differ"
        );
    }
}
