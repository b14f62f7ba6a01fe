//! The lake and the sources on S3, against a real S3 server on 127.0.0.1 (moto's,
//! `python3 -m moto.server`; `.ci/run` installs `moto[server]`): a lake exported to a bucket
//! reads back with pyarrow's S3 filesystem and Polars with the answers of the same lake on
//! local disk; gzip'd Zeek logs import from a bucket by glob; an export killed mid-way leaves
//! no partial object under a final `.parquet` name (`tests/engines/s3_lake.py`).
//!
//! Needs python3 with moto, boto3, pyarrow and polars: without them the tests print a note and
//! skip, except under `CI=true`, where they fail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::cli::{ok, s, weir};

/// A moto S3 server on a free port of 127.0.0.1, stopped when dropped.
struct S3Server {
    child: Child,
    endpoint: String,
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether python3 has what these tests need; `false` after a note outside CI.
fn tools_present() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import moto.server, boto3, pyarrow, polars, flask"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let note = "python3 with moto[server], boto3, pyarrow and polars not found \
                    (pip install 'moto[server]' boto3 pyarrow polars)";
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but {note}: .ci/run installs them");
        }
        eprintln!("note: {note}: skipping this test");
    }
    ok
}

/// Starts a moto server and creates `bucket`.
fn start(bucket: &str) -> S3Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("python3")
        .args([
            "-m",
            "moto.server",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 -m moto.server starts");
    let server = S3Server {
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
    };
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(30), "moto did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    helper(&server, &["mkbucket", &server.endpoint, bucket]);
    server
}

/// Runs `tests/engines/s3_lake.py ARGS`; its stdout, after asserting success.
fn helper(server: &S3Server, args: &[&str]) -> String {
    let script = common::root().join("tests/engines/s3_lake.py");
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .env("AWS_ENDPOINT_URL", &server.endpoint)
        .output()
        .unwrap();
    ok(&out, &format!("s3_lake.py {}", args.join(" ")))
}

/// `weir` with the AWS environment of the server.
fn weir_s3(server: &S3Server) -> Command {
    let mut c = weir();
    c.env("AWS_ENDPOINT_URL", &server.endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_PROFILE")
        .stdin(Stdio::null());
    c
}

fn run_s3(server: &S3Server, args: &[&str]) -> std::process::Output {
    weir_s3(server).args(args).output().unwrap()
}

/// A Zeek TSV log of `schema` (`conn` with a duration, or `dns`) with `n` events from `at`.
fn log(schema: &str, at: u64, n: u64) -> String {
    let (fields, types) = match schema {
        "conn" => ("duration", "interval"),
        _ => ("query", "string"),
    };
    let mut t = format!(
        "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n\
         #path\t{schema}\n#fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\t{fields}\n\
         #types\ttime\tstring\taddr\tport\taddr\tport\t{types}\n"
    );
    for i in at..at + n {
        let last = match schema {
            "conn" => format!("{}.5", (i * 37) % 1300),
            _ => format!("host{i}.example"),
        };
        t.push_str(&format!(
            "{}.{:06}\tC{i:08}\t10.0.{}.{}\t{}\t10.1.0.1\t{}\t{last}\n",
            1_700_000_000 + i * 30,
            i % 1_000_000,
            (i >> 8) & 255,
            i & 255,
            1024 + i % 60000,
            [53, 80, 443][(i % 3) as usize]
        ));
    }
    t
}

fn gzip(text: &str) -> Vec<u8> {
    common::gz::gzip(&[text.as_bytes()])
}

#[test]
fn export_and_convert_to_a_bucket_read_back_as_the_local_lake() {
    if !tools_present() {
        return;
    }
    let server = start("lake");
    let dir = tempfile::tempdir().unwrap();
    let conn = dir.path().join("conn.log");
    let dns = dir.path().join("dns.log");
    std::fs::write(&conn, log("conn", 0, 5000)).unwrap();
    std::fs::write(&dns, log("dns", 100, 3000)).unwrap();
    let db = dir.path().join("db");
    let out = run_s3(
        &server,
        &["import", "-q", "--db", s(&db), s(&conn), s(&dns)],
    );
    ok(&out, "import");
    let local = dir.path().join("lake");
    let out = run_s3(
        &server,
        &[
            "export",
            "--db",
            s(&db),
            "--to",
            "parquet",
            "--output",
            s(&local),
        ],
    );
    ok(&out, "export to disk");
    let out = run_s3(
        &server,
        &[
            "export",
            "--db",
            s(&db),
            "--to",
            "parquet",
            "--output",
            "s3://lake/exported",
        ],
    );
    ok(&out, "export to s3");
    let said = common::cli::text(&out.stderr);
    assert!(said.contains("wrote 8000 events in "), "{said}");
    assert!(said.contains("to s3://lake/exported"), "{said}");
    let answers = helper(
        &server,
        &["answers", &server.endpoint, "s3://lake/exported", s(&local)],
    );
    assert!(
        answers.contains("2 schemas, 8000 rows, 2 engines"),
        "{answers}"
    );
    // The converting sink (learns the schemas as it reads) writes the same lake.
    let out = run_s3(
        &server,
        &[
            "convert",
            "--to",
            "parquet",
            "--output",
            "s3://lake/converted/",
            s(&conn),
            s(&dns),
        ],
    );
    ok(&out, "convert to s3");
    helper(
        &server,
        &[
            "answers",
            &server.endpoint,
            "s3://lake/converted",
            s(&local),
        ],
    );
    let first = helper(
        &server,
        &["complete", &server.endpoint, "s3://lake/exported"],
    );
    let files: u64 = first.split(' ').next().unwrap().parse().unwrap();
    assert_eq!(first.trim(), format!("{files} files, 8000 rows"));
    // A second export appends files beside the first ones, numbered after them.
    let out = run_s3(
        &server,
        &[
            "export",
            "--db",
            s(&db),
            "--to",
            "parquet",
            "--output",
            "s3://lake/exported",
        ],
    );
    ok(&out, "second export to s3");
    let complete = helper(
        &server,
        &["complete", &server.endpoint, "s3://lake/exported"],
    );
    assert_eq!(complete.trim(), format!("{} files, 16000 rows", 2 * files));
}

#[test]
fn import_gzipped_logs_from_a_bucket_by_glob() {
    if !tools_present() {
        return;
    }
    let server = start("zeek-logs");
    let dir = tempfile::tempdir().unwrap();
    let objects = [
        ("2024-01-01/conn.00.log.gz", log("conn", 0, 700)),
        ("2024-01-01/conn.01.log.gz", log("conn", 700, 300)),
        ("2024-01-02/conn.00.log.gz", log("conn", 1000, 450)),
        ("2024-01-02/dns.00.log.gz", log("dns", 0, 99)),
        ("2024-02-01/conn.00.log.gz", log("conn", 2000, 11)),
    ];
    let mut matching = Vec::new();
    for (key, text) in &objects {
        let path = dir.path().join(key.replace('/', "_"));
        std::fs::write(&path, gzip(text)).unwrap();
        helper(
            &server,
            &["put", &server.endpoint, "zeek-logs", key, s(&path)],
        );
        if key.starts_with("2024-01-") && key.contains("/conn.") {
            matching.push(path);
        }
    }
    let local = dir.path().join("local");
    let mut args = vec!["import", "-q", "--db", s(&local)];
    args.extend(matching.iter().map(|p| s(p)));
    ok(&run_s3(&server, &args), "local import");
    let remote = dir.path().join("remote");
    let out = run_s3(
        &server,
        &[
            "import",
            "-q",
            "--db",
            s(&remote),
            "s3://zeek-logs/2024-01-*/conn.*.log.gz",
        ],
    );
    ok(&out, "import from s3");
    let events = |db: &Path| common::cli::export_json(db).len();
    assert_eq!(events(&remote), 1450);
    assert_eq!(events(&remote), events(&local));
    // convert reads objects too; errors name the URL.
    let out = run_s3(
        &server,
        &[
            "convert",
            "--to",
            "json",
            "s3://zeek-logs/2024-01-02/dns.00.log.gz",
        ],
    );
    assert_eq!(ok(&out, "convert from s3").lines().count(), 99);
    let out = run_s3(
        &server,
        &[
            "import",
            "-q",
            "--db",
            s(&remote),
            "s3://zeek-logs/nope/*.gz",
        ],
    );
    let err = common::cli::text(&out.stderr);
    assert!(
        !out.status.success() && err.contains("s3://zeek-logs/nope/*.gz"),
        "{err}"
    );
    let out = run_s3(
        &server,
        &[
            "import",
            "-q",
            "--db",
            s(&remote),
            "s3://zeek-logs/missing.log",
        ],
    );
    let err = common::cli::text(&out.stderr);
    assert!(
        !out.status.success() && err.contains("s3://zeek-logs/missing.log"),
        "{err}"
    );
}

#[test]
fn an_export_killed_mid_way_leaves_no_partial_object() {
    if !tools_present() {
        return;
    }
    let server = start("killed");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("conn.log");
    std::fs::write(&input, log("conn", 0, 300_000)).unwrap();
    let db = dir.path().join("db");
    ok(
        &run_s3(&server, &["import", "-q", "--db", s(&db), s(&input)]),
        "import",
    );
    let mut child = weir_s3(&server)
        .args([
            "export",
            "--db",
            s(&db),
            "--to",
            "parquet",
            "--output",
            "s3://killed/lake",
            "--max-file-size",
            "1MiB",
            "--row-group-size",
            "20000",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once some files are complete (or after a while).
    let t0 = Instant::now();
    loop {
        let listed = helper(&server, &["complete", &server.endpoint, "s3://killed/lake"]);
        if !listed.starts_with("0 files") || t0.elapsed() > Duration::from_secs(20) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let finished = child.try_wait().unwrap().is_some();
    let _ = child.kill();
    let _ = child.wait();
    // Every object under a final name opens as Parquet (the helper fails otherwise).
    let complete = helper(&server, &["complete", &server.endpoint, "s3://killed/lake"]);
    let rows: u64 = complete
        .trim()
        .rsplit(", ")
        .next()
        .and_then(|r| r.strip_suffix(" rows"))
        .unwrap()
        .parse()
        .unwrap();
    assert!(rows <= 300_000, "{complete}");
    if finished {
        eprintln!("note: the export ended before it was killed: {complete}");
    } else {
        assert!(rows < 300_000, "{complete}");
    }
}

#[test]
fn a_large_object_is_a_multipart_upload_visible_only_once_complete() {
    use std::io::Write;
    use weir::unstable::object::{expand_url, list, open_reader, ObjectUrl, Upload, PART_SIZE};
    if !tools_present() {
        return;
    }
    let server = start("multipart");
    // The one test that talks to the server from this process (its bucket's client is built
    // from the environment on first use).
    for (k, v) in [
        ("AWS_ENDPOINT_URL", server.endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
    ] {
        std::env::set_var(k, v);
    }
    let url = ObjectUrl::parse("s3://multipart/").unwrap();
    let data: Vec<u8> = (0..2 * PART_SIZE + 12_345)
        .map(|i| (i * 31 % 251) as u8)
        .collect();
    // Two parts sent, then dropped unfinished: aborted, no object.
    {
        let mut upload = Upload::new(&url, "dropped.bin");
        upload.write_all(&data).unwrap();
    }
    let mut upload = Upload::new(&url, "big.bin");
    upload.write_all(&data).unwrap();
    assert!(
        list(&url, "").unwrap().is_empty(),
        "visible before completion"
    );
    assert_eq!(upload.finish().unwrap(), data.len() as u64);
    assert_eq!(
        list(&url, "").unwrap(),
        [("big.bin".to_string(), data.len() as u64)]
    );
    // Read back as a source reads it, from an executor without a reactor.
    let object = expand_url("s3://multipart/big.bin").unwrap().remove(0);
    let mut reader = Box::pin(open_reader(&object));
    let mut back = Vec::new();
    futures::executor::block_on(tokio::io::AsyncReadExt::read_to_end(&mut reader, &mut back))
        .unwrap();
    assert!(back == data, "read back {} bytes", back.len());
}
