//! Arrow IPC and the Parquet lake, written and read back in Rust: every Zeek type through both
//! formats, the lake's layout, rotation, part numbering and atomicity, the `parquet` sink and
//! the commands. (Real engines reading these files: `tests/it/lake_engines.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

use common::cli::{ok, run, run_with_stdin};
use common::events::{addr, batch_of, events, s, ty};
use tokio_util::codec::Decoder;
use weir::unstable::batch::Batch;
use weir::unstable::codec::arrow::{
    push_escaped_utf8, ArrowIpcDecoder, ArrowIpcWriter, LakeWriter, ParallelLakeWriter,
    ParquetDecoder,
};
use weir::unstable::codec::writer::EventWriter;
use weir::unstable::codec::{decode_chunks, ParquetSinkConfig, ReaderOptions};
use weir::unstable::types::{Field, Schema, SchemaRef};
use weir::unstable::value::Value;

/// A schema with a field of every type, and rows that use every kind of value of each.
fn every_type() -> (SchemaRef, Vec<Vec<Value>>) {
    let names = [
        "time",
        "bool",
        "count",
        "int",
        "double",
        "interval",
        "string",
        "addr",
        "subnet",
        "port",
        "enum",
        "pattern",
        "file",
        "set[addr]",
        "vector[interval]",
        "table[string]",
        "vector[count]",
    ];
    let mut fields: Vec<Field> = names
        .iter()
        .map(|n| Field::new(format!("f.{n}"), ty(n)))
        .collect();
    fields[0].name = "ts".into();
    let schema = Schema::new("zeek.every", fields).into_shared();
    let day = 86_400_000_000_000i64;
    let t0 = 1_258_531_221_486_539_123i64;
    let rows = vec![
        vec![
            Value::Time(t0),
            Value::Bool(true),
            Value::Count(u64::MAX),
            Value::Int(i64::MIN),
            Value::Double(f64::NAN),
            Value::Interval(-5),
            s("é€😀 \"\\ \n\t".as_bytes()),
            Value::Addr(addr("2001:db8::1")),
            Value::Subnet(addr("10.0.0.0"), 8),
            Value::Port(65535),
            s(b"udp"),
            s(b"^a.*$"),
            s(b"/tmp/x"),
            Value::List(vec![Value::Addr(addr("10.1.2.3")), Value::Null]),
            Value::List(vec![Value::Interval(1), Value::Interval(-1_500_000_000)]),
            Value::List(vec![s(b""), s(b"b")]),
            Value::List(vec![]),
        ],
        // Unset everywhere but ts; the next day.
        std::iter::once(Value::Time(t0 + day))
            .chain(std::iter::repeat_n(Value::Null, names.len() - 1))
            .collect(),
        // Empty strings and containers, infinities, IPv4 in a subnet of IPv6, a day before
        // the epoch.
        vec![
            Value::Time(-1),
            Value::Bool(false),
            Value::Count(0),
            Value::Int(i64::MAX),
            Value::Double(f64::NEG_INFINITY),
            Value::Interval(i64::MAX),
            s(b""),
            Value::Addr(addr("0.0.0.0")),
            Value::Subnet(addr("2001:db8::"), 32),
            Value::Port(0),
            s(b""),
            s(b""),
            s(b""),
            Value::List(vec![]),
            Value::List(vec![Value::Null]),
            Value::List(vec![]),
            Value::List(vec![Value::Count(7)]),
        ],
    ];
    (schema, rows)
}

/// Decodes `bytes` with `decoder`, fed in chunks of `chunk` bytes.
fn decode_all<D>(decoder: &mut D, bytes: &[u8], chunk: usize) -> Vec<Batch>
where
    D: Decoder<Item = Batch>,
    D::Error: std::fmt::Debug,
{
    let (batches, err) = decode_chunks(decoder, bytes.chunks(chunk.max(1)));
    assert!(err.is_none(), "{err:?}");
    batches
}

fn options() -> ReaderOptions {
    ReaderOptions::new("test")
}

#[test]
fn every_type_round_trips_through_arrow_ipc_in_any_chunking() {
    let (schema, rows) = every_type();
    let batch = batch_of(&schema, &rows);
    let mut w = ArrowIpcWriter::new();
    let mut out = Vec::new();
    w.write_batch(&batch, &mut out).unwrap();
    w.finish(&mut out);
    let want = events(&[batch]);
    for chunk in [1, 7, 4096, out.len()] {
        let got = events(&decode_all(
            &mut ArrowIpcDecoder::new(options()),
            &out,
            chunk,
        ));
        assert_eq!(got, want, "chunks of {chunk}");
    }
}

#[test]
fn several_schemas_become_consecutive_streams_read_back_in_order() {
    let (every, rows) = every_type();
    let small = Schema::new("zeek.small", vec![Field::new("n", ty("count"))]).into_shared();
    let batches = vec![
        batch_of(&every, &rows[..1]),
        batch_of(&small, &[vec![Value::Count(1)], vec![Value::Null]]),
        batch_of(&every, &rows[1..]),
    ];
    let mut w = ArrowIpcWriter::new();
    let mut out = Vec::new();
    for b in &batches {
        w.write_batch(b, &mut out).unwrap();
    }
    w.finish(&mut out);
    let got = decode_all(&mut ArrowIpcDecoder::new(options()), &out, 1000);
    assert_eq!(events(&got), events(&batches));
    // A stream cut short is an error, not a silent end.
    let (_, err) = decode_chunks(
        &mut ArrowIpcDecoder::new(options()),
        [&out[..out.len() - 3]],
    );
    assert!(err.is_some());
}

#[test]
fn invalid_utf8_is_escaped_exactly_as_the_json_writer_does() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let schema = Schema::new("zeek.s", vec![Field::new("s", ty("string"))]).into_shared();
    for i in 0..500 {
        let len = (next() % 12) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| match next() % 4 {
                0 => b'a',
                1 => 0x80 | (next() % 64) as u8,
                2 => 0xc0 | (next() % 64) as u8,
                _ => (next() % 256) as u8,
            })
            .collect();
        let batch = batch_of(&schema, &[vec![s(&bytes)]]);
        let mut json = Vec::new();
        weir::unstable::codec::writer::writer_for(
            weir::unstable::codec::writer::OutputFormat::Json,
        )
        .write_batch(&batch, &mut json)
        .unwrap();
        let parsed: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let from_json = parsed["s"].as_str().unwrap().to_string();
        let mut escaped = String::new();
        push_escaped_utf8(&mut escaped, &bytes);
        assert_eq!(escaped, from_json, "case {i}: {bytes:?}");
        // And that is what an Arrow round trip gives back.
        let mut out = Vec::new();
        let mut w = ArrowIpcWriter::new();
        w.write_batch(&batch, &mut out).unwrap();
        w.finish(&mut out);
        let back = decode_all(&mut ArrowIpcDecoder::new(options()), &out, out.len());
        assert_eq!(
            events(&back)[0].2,
            vec![s(escaped.as_bytes())],
            "case {i}: {bytes:?}"
        );
    }
}

/// Every file under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// The batches of one Parquet file.
fn read_parquet(path: &Path) -> Vec<Batch> {
    let bytes = std::fs::read(path).unwrap();
    decode_all(&mut ParquetDecoder::new(options()), &bytes, 1 << 16)
}

fn lake_config(dir: &Path) -> ParquetSinkConfig {
    ParquetSinkConfig::new(dir)
}

#[test]
fn the_lake_is_partitioned_by_schema_and_day_and_reads_back_every_value() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lake");
    let (schema, rows) = every_type();
    let nots = Schema::new("zeek.nots", vec![Field::new("n", ty("count"))]).into_shared();
    let mut lake = lake_config(&dir).writer().unwrap();
    let batch = batch_of(&schema, &rows);
    lake.write_rows(batch.schema(), batch.rows()).unwrap();
    let other = batch_of(&nots, &[vec![Value::Count(3)]]);
    lake.write_rows(other.schema(), other.rows()).unwrap();
    let summary = lake.close().unwrap();
    assert_eq!((summary.events, summary.files), (4, 4));
    assert_eq!(
        tree(&dir),
        [
            "schema=zeek.every/day=1969-12-31/part-00000.parquet",
            "schema=zeek.every/day=2009-11-18/part-00000.parquet",
            "schema=zeek.every/day=2009-11-19/part-00000.parquet",
            "schema=zeek.nots/day=__HIVE_DEFAULT_PARTITION__/part-00000.parquet",
        ]
    );
    let day = |d: &str| dir.join(format!("schema=zeek.every/day={d}/part-00000.parquet"));
    assert_eq!(
        events(&read_parquet(&day("2009-11-18"))),
        events(&[batch_of(&schema, &rows[..1])])
    );
    assert_eq!(
        events(&read_parquet(&day("2009-11-19"))),
        events(&[batch_of(&schema, &rows[1..2])])
    );
    assert_eq!(
        events(&read_parquet(&day("1969-12-31"))),
        events(&[batch_of(&schema, &rows[2..])])
    );
    // A second writer adds files after the existing ones and replaces none.
    let mut lake = lake_config(&dir).writer().unwrap();
    lake.write_rows(other.schema(), other.rows()).unwrap();
    lake.close().unwrap();
    let nots_dir = dir.join("schema=zeek.nots/day=__HIVE_DEFAULT_PARTITION__");
    assert_eq!(
        tree(&nots_dir),
        ["part-00000.parquet", "part-00001.parquet"]
    );
}

#[test]
fn files_rotate_at_max_file_size_and_row_groups_are_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lake");
    let schema = Schema::new(
        "zeek.big",
        vec![
            Field::new("ts", ty("time")),
            Field::new("uid", ty("string")),
        ],
    )
    .into_shared();
    // Incompressible strings: 200,000 rows of 40 random hex bytes, about 8 MB.
    let mut seed = 1u64;
    let rows: Vec<Vec<Value>> = (0..200_000)
        .map(|i| {
            let text: String = (0..5)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    format!("{:08x}", seed >> 32)
                })
                .collect();
            vec![
                Value::Time(1_258_531_221_000_000_000 + i),
                s(text.as_bytes()),
            ]
        })
        .collect();
    let batch = batch_of(&schema, &rows);
    let config = ParquetSinkConfig {
        max_file_size: ParquetSinkConfig::MIN_FILE_SIZE,
        row_group_size: 10_000,
        ..lake_config(&dir)
    };
    let mut lake = config.writer().unwrap();
    lake.write_rows(batch.schema(), batch.rows()).unwrap();
    let summary = lake.close().unwrap();
    let files = tree(&dir);
    assert!(files.len() >= 4, "{files:?}");
    assert_eq!(summary.files as usize, files.len());
    let mut back = Vec::new();
    for f in &files {
        let path = dir.join(f);
        let len = std::fs::metadata(&path).unwrap().len();
        // A file passes the limit by at most one record batch (8192 rows, < 1 MiB here).
        assert!(len < 2 * ParquetSinkConfig::MIN_FILE_SIZE, "{f}: {len}");
        let bytes = bytes::Bytes::from(std::fs::read(&path).unwrap());
        let meta = parquet::file::reader::SerializedFileReader::new(bytes).unwrap();
        use parquet::file::reader::FileReader;
        for rg in meta.metadata().row_groups() {
            assert!(rg.num_rows() <= 10_000);
        }
        back.extend(read_parquet(&path));
    }
    assert_eq!(events(&back), events(&[batch]));
}

/// Every file of a lake: its relative path, bytes, and rows per row group.
fn lake_files(dir: &Path) -> Vec<(String, Vec<u8>, Vec<i64>)> {
    use parquet::file::reader::FileReader;
    tree(dir)
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(dir.join(&f)).unwrap();
            let reader =
                parquet::file::reader::SerializedFileReader::new(bytes::Bytes::from(bytes.clone()))
                    .unwrap();
            let groups = reader
                .metadata()
                .row_groups()
                .iter()
                .map(|rg| rg.num_rows())
                .collect();
            (f, bytes, groups)
        })
        .collect()
}

#[test]
fn record_batches_built_on_threads_make_the_same_lake_as_one_thread() {
    let tmp = tempfile::tempdir().unwrap();
    let schema = Schema::new(
        "zeek.conn",
        vec![
            Field::new("ts", ty("time")),
            Field::new("uid", ty("string")),
            Field::new("id.orig_h", ty("addr")),
            Field::new("id.orig_p", ty("port")),
            Field::new("proto", ty("enum")),
            Field::new("duration", ty("interval")),
            Field::new("orig_bytes", ty("count")),
            Field::new("tunnel_parents", ty("set[string]")),
        ],
    )
    .into_shared();
    // Rows around midnight, the two days interleaved; incompressible uids, so that files
    // rotate at 1 MiB.
    let midnight = 1_258_588_800_000_000_000i64;
    let mut seed = 7u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 16
    };
    let rows: Vec<Vec<Value>> = (0..120_000i64)
        .map(|i| {
            let r = next();
            vec![
                Value::Time(midnight - 30_000_000_000 + (i * 37 % 60) * 1_000_000_000 + i),
                s(format!("C{r:012x}{:012x}{:012x}", next(), next()).as_bytes()),
                Value::Addr(addr(&format!("10.{}.{}.{}", r % 7, i % 256, r % 256))),
                if i % 11 == 0 {
                    Value::Null
                } else {
                    Value::Port((r % 65536) as u16 as u64)
                },
                s(if r % 3 == 0 { b"udp" } else { b"tcp" }),
                Value::Interval((r % 1_000_000) as i64),
                Value::Count(r % 100_000),
                if i % 5 == 0 {
                    Value::List(vec![s(b"a"), s(format!("{}", r % 9).as_bytes())])
                } else {
                    Value::Null
                },
            ]
        })
        .collect();
    // Batches of uneven sizes, as a search yields them.
    let mut batches = Vec::new();
    let mut at = 0;
    for n in [32usize, 8192, 238, 1, 5000, 8192].iter().cycle() {
        if at >= rows.len() {
            break;
        }
        let end = (at + n).min(rows.len());
        batches.push(batch_of(&schema, &rows[at..end]));
        at = end;
    }
    let config = |name: &str| ParquetSinkConfig {
        max_file_size: ParquetSinkConfig::MIN_FILE_SIZE,
        row_group_size: 7_000,
        ..lake_config(&tmp.path().join(name))
    };
    let mut lakes = Vec::new();
    for threads in [1, 3] {
        let name = format!("threads{threads}");
        let mut lake = ParallelLakeWriter::new(config(&name).writer().unwrap(), threads);
        for b in &batches {
            // The last rows of each batch left out, as `export -n` does with the last one.
            lake.write(b.clone(), b.len() - b.len() / 100).unwrap();
        }
        let summary = lake.close().unwrap();
        lakes.push((summary, lake_files(&tmp.path().join(name))));
    }
    let (summary, one) = &lakes[0];
    assert!(
        one.len() >= 4,
        "{:?}",
        one.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    assert_eq!(summary.files as usize, one.len());
    for (s, files) in &lakes[1..] {
        assert_eq!(s, summary);
        assert!(
            files == one,
            "a lake written on threads differs from one thread's"
        );
    }
    // The same rows given to the writer one by one: the same files, row groups and rows.
    let mut lake = config("rows").writer().unwrap();
    for b in &batches {
        lake.write_rows(b.schema(), b.rows().take(b.len() - b.len() / 100))
            .unwrap();
    }
    assert_eq!(lake.close().unwrap(), *summary);
    let dir = tmp.path().join("rows");
    let by_rows = lake_files(&dir);
    let names = |fs: &[(String, Vec<u8>, Vec<i64>)]| {
        fs.iter()
            .map(|(f, _, g)| (f.clone(), g.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&by_rows), names(one));
    for (f, _, _) in one {
        assert_eq!(
            events(&read_parquet(&tmp.path().join("threads1").join(f))),
            events(&read_parquet(&dir.join(f))),
            "{f}"
        );
    }
    // Every file but each partition's last ends at a full row group (7,000 rows).
    for (f, _, groups) in one {
        assert!(
            groups[..groups.len() - 1].iter().all(|&n| n == 7_000),
            "{f}: {groups:?}"
        );
    }
}

#[test]
fn a_failed_lake_leaves_no_partial_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lake");
    let schema = Schema::new("zeek.x", vec![Field::new("n", ty("count"))]).into_shared();
    let mut lake: LakeWriter = lake_config(&dir).writer().unwrap();
    let good = batch_of(&schema, &vec![vec![Value::Count(1)]; 10_000]);
    lake.write_rows(good.schema(), good.rows()).unwrap();
    // A row that is not of the schema: an error naming it.
    let bad = batch_of(&schema, &[vec![s(b"not a count")]]);
    let e = lake.write_rows(bad.schema(), bad.rows()).unwrap_err();
    assert!(e.to_string().contains("zeek.x"), "{e}");
    drop(lake);
    // The open file was a temporary: nothing is left with a final name, nor a temporary.
    assert_eq!(tree(&dir), Vec::<String>::new());
    // The same with the record batches built on threads: the error names the row in its batch.
    let mut lake = ParallelLakeWriter::new(lake_config(&dir).writer().unwrap(), 2);
    lake.write(good.clone(), good.len()).unwrap();
    let mut rows = vec![vec![Value::Count(2)]; 5];
    rows[3] = vec![s(b"not a count")];
    let bad = batch_of(&schema, &rows);
    let e = match lake.write(bad.clone(), bad.len()) {
        Err(e) => {
            drop(lake);
            e
        }
        Ok(()) => lake.close().unwrap_err(),
    };
    assert!(e.to_string().contains("row 3 of schema zeek.x"), "{e}");
    assert_eq!(tree(&dir), Vec::<String>::new());
}

/// Writes `text` to `dir/name` and returns the path.
fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const CONN: &str = "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tconn\n#fields\tts\tuid\tid.orig_h\tid.orig_p\tproto\tduration\ttunnel_parents\n#types\ttime\tstring\taddr\tport\tenum\tinterval\tset[string]\n1258531221.486539\tCa\t192.168.1.102\t68\tudp\t0.163820\t-\n1258617621.5\tCb\t2001:db8::1\t443\ttcp\t-\ta,b\n";

#[test]
fn convert_writes_a_lake_and_reads_it_back_to_the_same_tsv() {
    let tmp = tempfile::tempdir().unwrap();
    let log = write(tmp.path(), "conn.log", CONN);
    let lake = tmp.path().join("lake");
    let out = run(&[
        "convert",
        "--to",
        "parquet",
        "--output",
        lake.to_str().unwrap(),
        log.to_str().unwrap(),
    ]);
    ok(&out, "convert --to parquet");
    let files = tree(&lake);
    assert_eq!(
        files,
        [
            "schema=zeek.conn/day=2009-11-18/part-00000.parquet",
            "schema=zeek.conn/day=2009-11-19/part-00000.parquet"
        ]
    );
    let paths: Vec<String> = files
        .iter()
        .map(|f| lake.join(f).display().to_string())
        .collect();
    let mut args = vec!["convert", "--to", "zeek-tsv"];
    args.extend(paths.iter().map(String::as_str));
    let back = ok(&run(&args), "convert the lake back");
    let direct = ok(&run(&["convert", log.to_str().unwrap()]), "convert the log");
    let body = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with("#open") && !l.starts_with("#close"))
            .map(String::from)
            .collect()
    };
    // Two files: two header blocks; the rows and the header lines are those of the log.
    let rows = |t: &str| -> Vec<String> {
        body(t)
            .into_iter()
            .filter(|l| !l.starts_with('#'))
            .collect()
    };
    assert_eq!(rows(&back), rows(&direct));
    assert!(body(&back)
        .contains(&"#types\ttime\tstring\taddr\tport\tenum\tinterval\tset[string]".to_string()));
    // Arrow on stdin too.
    let arrow = run(&["convert", "--to", "arrow", log.to_str().unwrap()]);
    let arrow = arrow.stdout.clone();
    let back = run_with_stdin(&["convert", "--to", "zeek-tsv"], &arrow);
    assert_eq!(rows(&ok(&back, "arrow on stdin")), rows(&direct));
}

#[test]
fn parquet_needs_a_directory_and_flags_are_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let log = write(tmp.path(), "conn.log", CONN);
    let out = run(&["convert", "--to", "parquet", log.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        common::cli::text(&out.stderr)
    );
    assert!(common::cli::text(&out.stderr).contains("--output"));
    let out = run(&[
        "convert",
        "--to",
        "parquet",
        "--output",
        tmp.path().join("l").to_str().unwrap(),
        "--row-group-size",
        "0",
        log.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(common::cli::text(&out.stderr).contains("--row-group-size"));
    let db = tmp.path().join("db");
    ok(
        &run(&[
            "import",
            "--db",
            db.to_str().unwrap(),
            "-q",
            log.to_str().unwrap(),
        ]),
        "import",
    );
    let out = run(&["export", "--db", db.to_str().unwrap(), "--to", "parquet"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[
        "export",
        "--db",
        db.to_str().unwrap(),
        "--to",
        "json",
        "--output",
        "x",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_pipeline_feeds_a_lake_and_export_honours_the_expression_and_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let log = write(tmp.path(), "conn.log", CONN);
    let lake = tmp.path().join("lake");
    let pipeline = write(
        tmp.path(),
        "p.toml",
        &format!(
            "[sources.in]\ntype = \"file\"\npaths = [{:?}]\n\n[sinks.lake]\ntype = \"parquet\"\ninputs = [\"in\"]\ndir = {:?}\nrow_group_size = 1000\nmax_file_size = \"64MiB\"\n",
            log.display().to_string(),
            lake.display().to_string()
        ),
    );
    ok(
        &run(&["run", "--check", pipeline.to_str().unwrap()]),
        "check",
    );
    ok(&run(&["run", "-q", pipeline.to_str().unwrap()]), "run");
    assert_eq!(tree(&lake).len(), 2);
    // The archive's export with an expression and -n.
    let db = tmp.path().join("db");
    ok(
        &run(&[
            "import",
            "--db",
            db.to_str().unwrap(),
            "-q",
            log.to_str().unwrap(),
        ]),
        "import",
    );
    let out2 = tmp.path().join("lake2");
    let out = run(&[
        "export",
        "--db",
        db.to_str().unwrap(),
        "--to",
        "parquet",
        "--output",
        out2.to_str().unwrap(),
        "proto == \"tcp\"",
    ]);
    ok(&out, "export");
    assert!(common::cli::text(&out.stderr).contains("wrote 1 event in 1 file"));
    let files = tree(&out2);
    assert_eq!(
        files,
        ["schema=zeek.conn/day=2009-11-19/part-00000.parquet"]
    );
    let back = read_parquet(&out2.join(&files[0]));
    assert_eq!(events(&back)[0].2[1], s(b"Cb"));
    let out3 = tmp.path().join("lake3");
    let out = run(&[
        "export",
        "--db",
        db.to_str().unwrap(),
        "--to",
        "parquet",
        "--output",
        out3.to_str().unwrap(),
        "-n",
        "1",
    ]);
    ok(&out, "export -n 1");
    assert_eq!(
        tree(&out3),
        ["schema=zeek.conn/day=2009-11-18/part-00000.parquet"]
    );
    // A wrong key of the sink is refused with the allowed ones.
    let bad = write(
        tmp.path(),
        "bad.toml",
        &format!(
            "[sources.in]\ntype = \"file\"\npaths = [{:?}]\n\n[sinks.lake]\ntype = \"parquet\"\ninputs = [\"in\"]\ndir = \"x\"\nrow_groups = 5\n",
            log.display().to_string()
        ),
    );
    let out = run(&["run", "--check", bad.to_str().unwrap()]);
    let err = common::cli::text(&out.stderr);
    assert!(
        err.contains("row_group_size") && err.contains("max_file_size"),
        "{err}"
    );
}

/// `weir export --to parquet` converts batches stored in columns from their columns (the
/// search defers them) and other batches from their rows: the same events make the same lake
/// either way, byte for byte — with every type, two days interleaved in one batch, `-n`
/// cutting a batch short and an expression selecting some rows of a batch.
#[test]
fn a_lake_from_stored_columns_is_the_lake_from_rows() {
    use weir::unstable::query::{Query, SearchOptions};
    use weir::unstable::segment::{Codec, Compression, Layout, Segment};
    use weir::unstable::store::{Archive, Store, StoreOptions};

    let tmp = tempfile::tempdir().unwrap();
    let (schema, base) = every_type();
    let day = 86_400_000_000_000i64;
    let midnight = 1_258_588_800_000_000_000i64;
    // 3,000 rows cycling through the every-type rows, their ts alternating around midnight
    // (the third row keeps its unset-everywhere shape but gets a ts too).
    let rows: Vec<Vec<Value>> = (0..3000i64)
        .map(|i| {
            let mut r = base[i as usize % base.len()].clone();
            let side = if i % 7 < 3 { -1 } else { 1 };
            r[0] = if i % 97 == 5 {
                Value::Null
            } else {
                Value::Time(midnight + side * (i * 1_000_003 % day / 2))
            };
            if let Value::Count(c) = &mut r[2] {
                *c = c.wrapping_add(i as u64);
            }
            r
        })
        .collect();
    let codecs = [
        ("none", Compression::NONE),
        ("zstd", Compression::new(Codec::Zstd)),
        ("lz4", Compression::new(Codec::Lz4)),
    ];
    for (name, compression) in codecs {
        let db = tmp.path().join(name);
        let (mut store, _) = Store::open_writer(
            &db,
            StoreOptions {
                compression,
                ..StoreOptions::default()
            },
        )
        .unwrap();
        let mut at = 0;
        for n in [700usize, 1, 1299, 1000] {
            store.append(batch_of(&schema, &rows[at..at + n])).unwrap();
            at += n;
        }
        store.close().unwrap();
        // Compressed batches (but the one-row one) are stored in columns and are found
        // deferred, as columns; uncompressed ones are not.
        let archive = Archive::open(&db).unwrap();
        let all = Query::all();
        let options = SearchOptions {
            defer_columns: true,
            ..SearchOptions::default()
        };
        let with_columns = all
            .search_with(&archive, options)
            .unwrap()
            .filter(|h| h.as_ref().unwrap().columns().is_some())
            .count();
        let seg = &common::cli::segment_files(&db)[0];
        let seg = Segment::open(seg).unwrap();
        let columnar = (0..seg.len())
            .filter(|&i| seg.batch_layout(i) == Some(Layout::Columns))
            .count();
        assert_eq!(with_columns, columnar, "{name}");
        assert!(columnar >= if name == "none" { 0 } else { 3 }, "{name}");
    }
    let cases: [&[&str]; 3] = [&[], &["-n", "1500"], &["f.count > 2000 || f.bool == T"]];
    for (k, extra) in cases.iter().enumerate() {
        let lakes: Vec<_> = codecs
            .iter()
            .map(|(name, _)| {
                let db = tmp.path().join(name);
                let lake = tmp.path().join(format!("lake-{name}-{k}"));
                let (db, lake_s) = (db.to_str().unwrap(), lake.to_str().unwrap());
                let mut args = vec!["export", "--db", db, "--to", "parquet", "--output", lake_s];
                args.extend(extra.iter());
                ok(&run(&args), &format!("export {name} {extra:?}"));
                lake_files(&lake)
            })
            .collect();
        assert_eq!(lakes[0].len(), 3, "two days and no day: {extra:?}");
        for lake in &lakes[1..] {
            assert!(lake == &lakes[0], "{extra:?}: lakes differ");
        }
    }
}

/// The Arrow schema of a Parquet file, as its footer holds it.
fn file_schema(path: &Path) -> arrow_schema::SchemaRef {
    let file = std::fs::File::open(path).unwrap();
    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .schema()
        .clone()
}

/// conn.log with fewer fields than [`CONN`] (a day later than its first event), and with one
/// more, `extra`, of the next day.
const CONN_NARROW: &str = "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tconn\n#fields\tts\tuid\tid.orig_p\n#types\ttime\tstring\tport\n1258531222.5\tCn\t80\n";
const CONN_WIDE: &str = "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tconn\n#fields\tts\tuid\tid.orig_p\textra\n#types\ttime\tstring\tport\tcount\n1258704021.5\tCw\t53\t7\n";

#[test]
fn a_partition_has_one_schema_when_its_schema_grows_and_appending_keeps_it_or_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let narrow = write(tmp.path(), "narrow.log", CONN_NARROW);
    let full = write(tmp.path(), "conn.log", CONN);
    let wide = write(tmp.path(), "wide.log", CONN_WIDE);
    let lake = tmp.path().join("lake");
    let convert = |lake: &Path, logs: &[&Path]| {
        let mut args = vec![
            "convert",
            "--to",
            "parquet",
            "--output",
            lake.to_str().unwrap(),
        ];
        args.extend(logs.iter().map(|p| p.to_str().unwrap()));
        run(&args)
    };
    // Three field lists of zeek.conn, the narrowest first: the files written before the
    // schema grew are rewritten with the union.
    ok(&convert(&lake, &[&narrow, &full, &wide]), "convert");
    let files = tree(&lake);
    assert!(files.len() >= 3, "{files:?}");
    let schemas: Vec<_> = files.iter().map(|f| file_schema(&lake.join(f))).collect();
    assert!(schemas.windows(2).all(|w| w[0] == w[1]), "{schemas:?}");
    let names: Vec<&str> = schemas[0]
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(
        names,
        [
            "ts",
            "uid",
            "id.orig_p",
            "id.orig_h",
            "proto",
            "duration",
            "tunnel_parents",
            "extra"
        ]
    );
    // Every event is there, with its values, null where its log lacks the field.
    let mut args = vec!["convert", "--to", "json"];
    let paths: Vec<String> = files
        .iter()
        .map(|f| lake.join(f).display().to_string())
        .collect();
    args.extend(paths.iter().map(String::as_str));
    let back = ok(&run(&args), "read the lake");
    let mut uids: Vec<&str> = back
        .lines()
        .map(|l| {
            l.split("\"uid\":\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
        })
        .collect();
    uids.sort();
    assert_eq!(uids, ["Ca", "Cb", "Cn", "Cw"]);
    assert!(
        back.contains(r#""uid":"Cw","id.orig_p":53,"extra":7}"#),
        "{back}"
    );
    assert!(back.contains(r#""uid":"Cn","id.orig_p":80}"#), "{back}");
    assert!(back.contains(r#""duration":0.16382"#), "{back}");
    // No temporaries left.
    assert!(files
        .iter()
        .all(|f| f.ends_with(".parquet") && !f.contains("/.")));

    // Appending events whose fields the partition has: written with its schema.
    ok(&convert(&lake, &[&narrow]), "append narrower events");
    let after = tree(&lake);
    assert_eq!(after.len(), files.len() + 1);
    for f in &after {
        assert_eq!(file_schema(&lake.join(f)), schemas[0], "{f}");
    }
    // Appending events with a field the partition's files lack: refused, saying why and what
    // to do, and nothing is written.
    let small = tmp.path().join("small");
    ok(&convert(&small, &[&narrow]), "a lake of the narrow schema");
    let out = convert(&small, &[&wide]);
    assert!(!out.status.success());
    let msg = common::cli::text(&out.stderr);
    for part in [
        "schema=zeek.conn",
        "column extra is not in the files",
        "new directory",
    ] {
        assert!(msg.contains(part), "{part}: {msg}");
    }
    assert_eq!(tree(&small).len(), 1, "{:?}", tree(&small));
}
