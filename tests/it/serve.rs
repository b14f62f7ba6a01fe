//! `weir serve`: the real binary on a free loopback port, queried over plain HTTP/1.0 (one
//! request per connection, the body read to the end), its answers compared with what the
//! CLI prints for the same query.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStderr, Stdio};
use std::time::{Duration, Instant};

use common::cli::{ok, run, run_with_stdin, s, text, wait_for, weir};
use common::conn_log;
use common::follow::{append, sigterm};
use serde_json::{json, Value};

/// A running `weir serve` and the address it printed.
pub(crate) struct Server {
    child: Child,
    pub(crate) addr: SocketAddr,
    _stderr: std::thread::JoinHandle<String>,
}

/// Starts `weir serve --db DB ARGS` and reads the address from its first stderr line
/// (`weir: serving http://ADDR/`); the rest of stderr is drained by a thread.
pub(crate) fn serve(db: &Path, args: &[&str]) -> Server {
    let mut child = weir()
        .args(["serve", "--db", s(db)])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut addr = None;
    let mut seen = String::new();
    while addr.is_none() {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "no address: {seen}");
        seen.push_str(&line);
        addr = line
            .trim()
            .strip_prefix("weir: serving http://")
            .or_else(|| line.trim().strip_prefix("weir: serving https://"))
            .and_then(|a| a.strip_suffix('/'))
            .map(|a| a.parse::<SocketAddr>().unwrap());
    }
    let mut addr = addr.unwrap();
    if addr.ip().is_unspecified() {
        addr.set_ip([127, 0, 0, 1].into());
    }
    let drain = std::thread::spawn(move || drain(err));
    Server {
        child,
        addr,
        _stderr: drain,
    }
}

fn drain(mut err: BufReader<ChildStderr>) -> String {
    let mut rest = String::new();
    let _ = err.read_to_string(&mut rest);
    rest
}

/// A test that fails leaves no server behind.
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// The server's process ID.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, and the exit status.
    pub(crate) fn stop(mut self) -> std::process::ExitStatus {
        sigterm(&self.child);
        self.child.wait().unwrap()
    }
}

/// An answer: status, headers (lowercase names), body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", text(&self.body)))
    }
    pub(crate) fn text(&self) -> String {
        text(&self.body)
    }
}

/// One HTTP/1.0 request (the server closes after the answer), with the `Host` a browser
/// sends and, for a POST, a JSON body's `Content-Type`.
pub(crate) fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> Answer {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\n");
    if method == "POST" {
        req.push_str("Content-Type: application/json\r\n");
    }
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    c.write_all(req.as_bytes()).unwrap();
    c.write_all(body.as_bytes()).unwrap();
    let mut out = Vec::new();
    c.read_to_end(&mut out).unwrap();
    answer(&out)
}

/// The status, headers and body of a whole HTTP/1.0 answer.
pub(crate) fn answer(out: &[u8]) -> Answer {
    let end = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = text(&out[..end]);
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    Answer {
        status,
        headers,
        body: out[end + 4..].to_vec(),
    }
}

pub(crate) fn post(addr: SocketAddr, path: &str, body: &Value) -> Answer {
    request(addr, "POST", path, &[], &body.to_string())
}

pub(crate) fn get(addr: SocketAddr, path: &str) -> Answer {
    request(addr, "GET", path, &[], "")
}

/// An archive of `n` generated conn events.
pub(crate) fn archive(dir: &Path, n: u64) -> std::path::PathBuf {
    let db = dir.join("db");
    let out = run_with_stdin(
        &["import", "-q", "--db", s(&db)],
        conn_log::log(0..n).as_bytes(),
    );
    ok(&out, "import");
    db
}

/// The record batches of a Parquet file, as one.
fn parquet_batch(bytes: Vec<u8>) -> arrow_array::RecordBatch {
    let batches: Vec<_> = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        bytes::Bytes::from(bytes),
    )
    .expect("a Parquet file")
    .build()
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap();
    arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap()
}

/// The values of column `name` of `rb` as text (null: `None`).
fn column_text(rb: &arrow_array::RecordBatch, name: &str) -> Vec<Option<String>> {
    let i = rb.schema().index_of(name).unwrap();
    let text = arrow_cast::cast(rb.column(i), &arrow_schema::DataType::Utf8).unwrap();
    let text = text
        .as_any()
        .downcast_ref::<arrow_array::StringArray>()
        .unwrap();
    text.iter().map(|v| v.map(str::to_string)).collect()
}

/// The record batches of one Arrow IPC stream, as one.
fn arrow_batch(bytes: &[u8]) -> arrow_array::RecordBatch {
    let reader = arrow_ipc::reader::StreamReader::try_new(bytes, None).unwrap();
    let schema = reader.schema();
    let batches: Vec<_> = reader.collect::<Result<_, _>>().unwrap();
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

/// `weir export --to json EXPR`.
fn export(db: &Path, expr: &str) -> String {
    ok(
        &run(&["export", "--db", s(db), "--to", "json", expr]),
        "export",
    )
}

#[test]
fn answers_as_the_cli_does() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 3000);
    let srv = serve(&db, &["--listen", "127.0.0.1:0"]);
    let a = srv.addr;

    // Queries: the same events as `weir export --to json`, with and without operators.
    for q in [
        "id.orig_p < 100",
        "n > 300 | sort n desc | head 7",
        "summarize count() by #type, ts resolution 1m",
        "select uid, n | tail 3",
    ] {
        let got = post(a, "/api/v1/query", &json!({ "query": q }));
        assert_eq!(got.status, 200, "{q}: {}", got.text());
        assert_eq!(got.header("content-type"), Some("application/x-ndjson"));
        assert_eq!(got.text(), export(&db, q), "{q}");
        assert!(!got.body.is_empty(), "{q}");
    }
    // A limit, and the whole archive without a query.
    let got = post(a, "/api/v1/query", &json!({"query": "n > 30", "limit": 5}));
    assert_eq!(got.text().lines().count(), 5);
    assert_eq!(
        got.text(),
        ok(
            &run(&[
                "export",
                "--db",
                s(&db),
                "--to",
                "json",
                "-n",
                "5",
                "n > 30"
            ]),
            "export -n"
        )
    );
    let all = post(a, "/api/v1/query", &json!({}));
    assert_eq!(all.text().lines().count(), 3000);
    // Arrow IPC: the stream of `weir export --to arrow`.
    let arrow = post(
        a,
        "/api/v1/query",
        &json!({"query": "n < 30", "format": "arrow"}),
    );
    assert_eq!(arrow.status, 200);
    assert_eq!(
        arrow.header("content-type"),
        Some("application/vnd.apache.arrow.stream")
    );
    let cli = run(&["export", "--db", s(&db), "--to", "arrow", "n < 30"]);
    assert_eq!(arrow.body, cli.stdout);
    // Parquet: one file holding the same columns and values as the Arrow answer.
    let parquet = post(
        a,
        "/api/v1/query",
        &json!({"query": "n < 30", "format": "parquet"}),
    );
    assert_eq!(parquet.status, 200, "{}", parquet.text());
    assert_eq!(
        parquet.header("content-type"),
        Some("application/vnd.apache.parquet")
    );
    let from_parquet = parquet_batch(parquet.body.clone());
    let from_arrow = arrow_batch(&arrow.body);
    assert!(from_arrow.num_rows() > 0);
    assert_eq!(from_parquet.num_rows(), from_arrow.num_rows());
    assert_eq!(from_parquet.schema().fields(), from_arrow.schema().fields());
    assert_eq!(from_parquet.columns(), from_arrow.columns());
    let bad = post(a, "/api/v1/query", &json!({"query": "", "format": "xml"}));
    assert_eq!(bad.status, 400);
    assert!(bad.json()["error"]
        .as_str()
        .unwrap()
        .contains("arrow or parquet"));

    // Sigma: a rule as the expression it runs as here, which counts what `weir count --sigma`
    // counts; a rule that cannot be a query is 400 naming what.
    let rule = tmp.path().join("rule.yml");
    std::fs::write(
        &rule,
        "title: Low originator ports\nid: 0c1d2e3f-0000-4000-8000-000000000001\n\
         logsource:\n  product: zeek\n  service: conn\ndetection:\n  low:\n    \
         id.orig_p|lt: 100\n  condition: low\n",
    )
    .unwrap();
    let got = post(
        a,
        "/api/v1/sigma",
        &json!({"sigma": std::fs::read_to_string(&rule).unwrap()}),
    );
    assert_eq!(got.status, 200, "{}", got.text());
    let compiled = got.json();
    assert_eq!(compiled["title"], "Low originator ports");
    let expr = compiled["query"].as_str().unwrap();
    let by_rule = ok(
        &run(&["count", "--db", s(&db), "--sigma", s(&rule)]),
        "count --sigma",
    );
    let want: u64 = by_rule.split('\t').next().unwrap().trim().parse().unwrap();
    assert!(want > 0, "{by_rule}");
    assert_eq!(count(&db, expr), want, "{expr}");
    let bad = post(
        a,
        "/api/v1/sigma",
        &json!({"sigma": "title: x\nlogsource: {product: zeek, service: conn}\ndetection:\n  a:\n    n|nosuch: 1\n  condition: a\n"}),
    );
    assert_eq!(bad.status, 400, "{}", bad.text());
    assert!(
        bad.json()["error"].as_str().unwrap().contains("nosuch"),
        "{}",
        bad.text()
    );

    // Count: as `weir count`, for an expression and a chain.
    for q in ["id.orig_p < 100", "n > 300 | head 9", ""] {
        let got = post(a, "/api/v1/count", &json!({ "query": q }));
        assert_eq!(got.status, 200, "{}", got.text());
        let mut args = vec!["count", "--db", s(&db)];
        if !q.is_empty() {
            args.push(q);
        }
        let want: u64 = ok(&run(&args), "count").trim().parse().unwrap();
        assert_eq!(got.json(), json!({ "count": want }), "{q}");
    }

    // Get: as `weir get --to json`; a missing ID is 404.
    let got = post(a, "/api/v1/get", &json!({"ids": [5, 2, 2999]}));
    assert_eq!(got.status, 200);
    let want = ok(
        &run(&["get", "--db", s(&db), "--to", "json", "5", "2", "2999"]),
        "get",
    );
    assert_eq!(got.text(), want);
    let missing = post(a, "/api/v1/get", &json!({"ids": [1, 3000]}));
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"], "no event with ID 3000");

    // Explore and pivot: as the commands.
    let got = post(
        a,
        "/api/v1/explore",
        &json!({"query": "n == 300", "context": "2s", "for": ["zeek.conn"]}),
    );
    assert_eq!(got.status, 200, "{}", got.text());
    let want = ok(
        &run(&[
            "explore",
            "--db",
            s(&db),
            "--to",
            "json",
            "-C",
            "2s",
            "--for",
            "zeek.conn",
            "n == 300",
        ]),
        "explore",
    );
    assert!(want.lines().count() > 1, "{want}");
    assert_eq!(got.text(), want);
    let got = post(
        a,
        "/api/v1/pivot",
        &json!({"query": "n < 9", "target": "zeek.conn"}),
    );
    assert_eq!(got.status, 200, "{}", got.text());
    let want = ok(
        &run(&[
            "pivot",
            "--db",
            s(&db),
            "--to",
            "json",
            "zeek.conn",
            "n < 9",
        ]),
        "pivot",
    );
    assert!(!want.is_empty());
    assert_eq!(got.text(), want);
    let got = post(
        a,
        "/api/v1/explore",
        &json!({"query": "n == 1", "context": "soon"}),
    );
    assert_eq!(got.status, 400);

    // A parse error: 400, the CLI's message, the caret's position.
    let bad = "n > 3 && && x";
    let got = post(a, "/api/v1/query", &json!({ "query": bad }));
    assert_eq!(got.status, 400);
    let cli = run(&["export", "--db", s(&db), bad]);
    assert_eq!(cli.status.code(), Some(2));
    let err = got.json();
    let message = err["error"].as_str().unwrap();
    assert_eq!(
        format!("weir: error: {message}\n"),
        text(&cli.stderr),
        "{err}"
    );
    assert_eq!(err["position"], json!(bad.find("&& x").unwrap()), "{err}");
    let got = post(a, "/api/v1/count", &json!({"query": "n > 1 | sort"}));
    assert_eq!(got.status, 400);
    assert!(got.json()["position"].is_u64(), "{}", got.text());
    // An ill-typed comparison is found against the archive: 400 too.
    let typed = "id.resp_p == \"x\"";
    let got = post(a, "/api/v1/query", &json!({ "query": typed }));
    let cli = run(&["export", "--db", s(&db), typed]);
    assert_eq!(cli.status.code(), Some(2));
    assert_eq!(got.status, 400, "{}", got.text());
    assert_eq!(
        format!("weir: error: {}\n", got.json()["error"].as_str().unwrap()),
        text(&cli.stderr)
    );

    // Bad requests: malformed JSON, wrong types, unknown members, a huge body, an unknown
    // endpoint, a wrong method.
    for body in [
        "{",
        "[]",
        "{\"query\": 5}",
        "{\"query\": \"x\", \"limit\": -1}",
        "{\"query\": \"x\", \"bogus\": 1}",
        "{\"format\": \"xml\"}",
    ] {
        let got = request(a, "POST", "/api/v1/query", &[], body);
        assert_eq!(got.status, 400, "{body}: {}", got.text());
        assert!(got.json()["error"].is_string(), "{body}");
    }
    let huge = format!("{{\"query\": \"{}\"}}", "x".repeat(200_000));
    let got = request(a, "POST", "/api/v1/query", &[], &huge);
    assert_eq!(got.status, 413);
    let got = get(a, "/api/v1/nothing");
    assert_eq!(got.status, 404);
    assert!(got.json()["error"].is_string());
    assert_eq!(get(a, "/api/v1/query").status, 405);

    // Info: `weir info --json`'s numbers, and the fields of each schema.
    let info = get(a, "/api/v1/info").json();
    let cli = common::cli::info(&db);
    for k in [
        "events",
        "segments",
        "bytes",
        "schemas",
        "id_ranges",
        "time",
    ] {
        assert_eq!(info[k], cli[k], "{k}");
    }
    let fields = info["fields"]["zeek.conn"].as_array().unwrap();
    assert!(
        fields.contains(&json!({"name": "id.orig_h", "type": "addr"})),
        "{fields:?}"
    );
    assert!(
        fields.contains(&json!({"name": "names", "type": "vector[string]"})),
        "{fields:?}"
    );

    // Status without pipelines, health, metrics, the page.
    let status = get(a, "/api/v1/status").json();
    assert_eq!(status["pipelines"], json!([]));
    assert_eq!(status["queries"]["running"], json!(0));
    assert_eq!(get(a, "/health").json(), json!({"status": "ok"}));
    let m = get(a, "/metrics");
    assert_eq!(m.status, 200);
    assert_eq!(
        m.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert!(
        m.text().lines().any(|l| l == "weir_queries_running 0"),
        "{}",
        m.text()
    );
    let page = get(a, "/");
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    assert!(page.text().contains("id=\"q\""));
    // Nothing fetched from elsewhere.
    assert!(!page.text().contains("http://") && !page.text().contains("https://"));

    // Other commands read the archive while it is served.
    ok(&run(&["count", "--db", s(&db)]), "count beside serve");

    assert_eq!(srv.stop().code(), Some(0));
}

#[test]
fn limits_answer_503_504_413() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 2000);
    let q = json!({"query": "summarize count() by uid"});
    // No query slot: 503 with a JSON error; the rest still answers.
    let srv = serve(&db, &["--listen", "127.0.0.1:0", "--max-queries", "0"]);
    for path in ["/api/v1/query", "/api/v1/count"] {
        let got = post(srv.addr, path, &q);
        assert_eq!(got.status, 503, "{}", got.text());
        assert!(got.json()["error"]
            .as_str()
            .unwrap()
            .contains("too many queries"));
    }
    assert_eq!(get(srv.addr, "/health").status, 200);
    assert_eq!(srv.stop().code(), Some(0));
    // A timeout shorter than any query: 504.
    let srv = serve(&db, &["--listen", "127.0.0.1:0", "--query-timeout", "1ms"]);
    let got = post(srv.addr, "/api/v1/query", &q);
    assert_eq!(got.status, 504, "{}", got.text());
    assert!(got.json()["error"]
        .as_str()
        .unwrap()
        .contains("longer than 1ms"));
    assert_eq!(srv.stop().code(), Some(0));
    // An answer over the cap: 413 before anything is sent.
    let srv = serve(&db, &["--listen", "127.0.0.1:0", "--max-response", "1KiB"]);
    let got = post(srv.addr, "/api/v1/query", &json!({"query": "n < 100"}));
    assert_eq!(got.status, 413, "{}", got.text());
    let small = post(srv.addr, "/api/v1/query", &json!({"query": "n < 3"}));
    assert_eq!(small.status, 200);
    assert_eq!(small.text().lines().count(), 1);
    assert_eq!(srv.stop().code(), Some(0));
    // Over the cap after the first piece was sent: the stream ends with an error line.
    let srv = serve(
        &db,
        &["--listen", "127.0.0.1:0", "--max-response", "200KiB"],
    );
    let got = post(srv.addr, "/api/v1/query", &json!({}));
    assert_eq!(got.status, 200);
    let body = got.text();
    let lines: Vec<&str> = body.lines().collect();
    let last: Value = serde_json::from_str(lines[lines.len() - 1]).unwrap();
    assert!(
        last["error"]
            .as_str()
            .unwrap()
            .contains("larger than 200.0 KiB (the server's cap)"),
        "{last}"
    );
    // What came before it are whole events, the first of `weir export`.
    let events = lines.len() - 1;
    assert!(events > 0 && events < 2000, "{events}");
    let want: Vec<String> = common::cli::export_json_text(&db)
        .lines()
        .take(events)
        .map(String::from)
        .collect();
    assert_eq!(lines[..events], want[..]);
    assert_eq!(srv.stop().code(), Some(0));
}

#[test]
fn off_loopback_a_token_is_required() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 10);
    let srv = serve(&db, &["--listen", "0.0.0.0:0"]);
    let token_file = db.join("serve.token");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_string();
    assert!(token.len() >= 32);
    let count = json!({"query": ""}).to_string();
    let none = request(srv.addr, "POST", "/api/v1/count", &[], &count);
    assert_eq!(none.status, 401);
    assert!(none.json()["error"].is_string());
    let wrong = request(
        srv.addr,
        "POST",
        "/api/v1/count",
        &["Authorization: Bearer nope"],
        &count,
    );
    assert_eq!(wrong.status, 401);
    assert_eq!(get(srv.addr, "/metrics").status, 401);
    let auth = format!("Authorization: Bearer {token}");
    let right = request(srv.addr, "POST", "/api/v1/count", &[&auth], &count);
    assert_eq!(right.status, 200);
    assert_eq!(right.json(), json!({"count": 10}));
    // The page and the health check are open (the page asks for the token).
    assert_eq!(get(srv.addr, "/health").status, 200);
    assert_eq!(get(srv.addr, "/").status, 200);
    assert_eq!(srv.stop().code(), Some(0));
    // The token is kept across restarts.
    let srv = serve(&db, &["--listen", "0.0.0.0:0"]);
    let right = request(srv.addr, "POST", "/api/v1/count", &[&auth], &count);
    assert_eq!(right.status, 200);
    assert_eq!(srv.stop().code(), Some(0));
}

#[test]
fn runs_a_following_pipeline_and_sigterm_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = tmp.path().join("db");
    let pipeline = tmp.path().join("live.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[sources.zeek]\ntype = \"file\"\npaths = [\"{}/*.log\"]\nfollow = true\n\n\
             [transforms.batch]\ntype = \"batch\"\ninputs = [\"zeek\"]\ntimeout = \"2s\"\n\n\
             [sinks.archive]\ntype = \"archive\"\ninputs = [\"batch\"]\ndb = \"{}\"\n",
            s(&logs),
            s(&db)
        ),
    )
    .unwrap();
    let conn = logs.join("conn.log");
    append(&conn, &conn_log::log(0..100));
    let srv = serve(&db, &["--listen", "127.0.0.1:0", s(&pipeline)]);
    let count = |srv: &Server| {
        let got = post(srv.addr, "/api/v1/count", &json!({"query": ""}));
        if got.status == 200 {
            got.json()["count"].as_u64().unwrap()
        } else {
            0
        }
    };
    wait_for("the first 100 events", Duration::from_secs(60), || {
        count(&srv) == 100
    });
    let mut more = String::new();
    for i in 100..250 {
        more.push_str(&conn_log::row(i));
    }
    append(&conn, &more);
    wait_for("250 events", Duration::from_secs(60), || count(&srv) == 250);
    let status = get(srv.addr, "/api/v1/status").json();
    let p = &status["pipelines"][0];
    assert_eq!(p["state"], "running", "{status}");
    assert_eq!(p["file"], s(&pipeline));
    let files = p["report"]["files"].as_object().unwrap();
    assert_eq!(files.len(), 1, "{status}");
    let m = get(srv.addr, "/metrics").text();
    assert!(
        m.contains("weir_stage_events_total{stage=\"archive\",kind=\"sink\"} 250"),
        "{m}"
    );
    // A last few rows, then SIGTERM: they are committed, and the exit status is 0.
    let mut last = String::new();
    for i in 250..260 {
        last.push_str(&conn_log::row(i));
    }
    append(&conn, &last);
    // Read by the source, most likely still in the batcher (its timeout is 2s): SIGTERM
    // commits them.
    wait_for(
        "the source to read 260 events",
        Duration::from_secs(60),
        || {
            get(srv.addr, "/metrics")
                .text()
                .contains("weir_stage_events_total{stage=\"zeek\",kind=\"source\"} 260")
        },
    );
    assert_eq!(srv.stop().code(), Some(0));
    let n: u64 = ok(&run(&["count", "--db", s(&db)]), "count")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(n, 260);
}

#[test]
fn a_client_that_goes_away_stops_its_query() {
    let tmp = tempfile::tempdir().unwrap();
    // Far more output than the socket buffers and the server's pieces in flight hold.
    let db = archive(tmp.path(), 100_000);
    let srv = serve(&db, &["--listen", "127.0.0.1:0", "--max-queries", "1"]);
    let running =
        |srv: &Server| get(srv.addr, "/api/v1/status").json()["queries"]["running"].clone();
    let mut c = TcpStream::connect(srv.addr).unwrap();
    let body = json!({"query": ""}).to_string();
    write!(
        c,
        "POST /api/v1/query HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut first = [0u8; 64];
    c.read_exact(&mut first).unwrap();
    assert!(text(&first).starts_with("HTTP/1.0 200"), "{}", text(&first));
    // The client reads no more: the query waits for it, holding its slot.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(running(&srv), json!(1));
    let busy = post(srv.addr, "/api/v1/count", &json!({}));
    assert_eq!(busy.status, 503);
    // It goes away: the query stops, and the slot is free again.
    drop(c);
    wait_for("the query to stop", Duration::from_secs(30), || {
        running(&srv) == json!(0)
    });
    let got = post(srv.addr, "/api/v1/count", &json!({}));
    assert_eq!(got.json(), json!({"count": 100_000}));
    assert_eq!(srv.stop().code(), Some(0));
}

#[test]
fn a_query_past_its_timeout_stops_before_any_output() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 200_000);
    // An aggregation: no output until the search has read every event.
    let q = json!({"query": "summarize count() by uid, n"});
    let srv = serve(&db, &["--listen", "127.0.0.1:0", "--max-queries", "1"]);
    let start = Instant::now();
    let full = post(srv.addr, "/api/v1/query", &q);
    let whole = start.elapsed();
    assert_eq!(full.status, 200, "{}", full.text());
    assert_eq!(full.text().lines().count(), 200_000);
    assert_eq!(srv.stop().code(), Some(0));
    let timeout = whole / 5;
    let arg = format!("{}ms", timeout.as_millis().max(1));
    let srv = serve(
        &db,
        &[
            "--listen",
            "127.0.0.1:0",
            "--max-queries",
            "1",
            "--query-timeout",
            &arg,
        ],
    );
    let running =
        |srv: &Server| get(srv.addr, "/api/v1/status").json()["queries"]["running"].clone();
    // A streamed query, and a count (the same chain: it counts what comes out).
    for path in ["/api/v1/query", "/api/v1/count"] {
        let start = Instant::now();
        let got = post(srv.addr, path, &q);
        assert_eq!(got.status, 504, "{path}: {}", got.text());
        // The search stops at the timeout, not at its end: the slot is free well before
        // the whole search would have ended (the timeout is a fifth of it; the batches in
        // flight finish first, and on 2 loaded cores they took up to half of it).
        wait_for("the query to stop", Duration::from_secs(60), || {
            running(&srv) == json!(0)
        });
        let freed = start.elapsed();
        assert!(
            freed < whole * 3 / 4,
            "{path}: the slot was freed after {freed:?}; the whole query takes {whole:?}, the timeout is {timeout:?}"
        );
    }
    assert_eq!(srv.stop().code(), Some(0));
}

#[test]
fn serves_https_with_its_certificate() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 10);
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = tmp.path().join("cert.pem");
    let key = tmp.path().join("key.pem");
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    let srv = serve(
        &db,
        &[
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            s(&cert),
            "--tls-key",
            s(&key),
        ],
    );
    // A client that trusts that certificate alone.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(made.cert.der().clone()).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = std::sync::Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    let https = |path: &str, body: &str| {
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let conn = rustls::ClientConnection::new(config.clone(), name).unwrap();
        let tcp = TcpStream::connect(srv.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        let method = if body.is_empty() { "GET" } else { "POST" };
        write!(
            tls,
            "{method} {path} HTTP/1.0\r\nHost: localhost:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            srv.addr.port(),
            body.len()
        )
        .unwrap();
        let mut out = Vec::new();
        tls.read_to_end(&mut out).unwrap();
        answer(&out)
    };
    let got = https("/api/v1/count", &json!({"query": "n < 4"}).to_string());
    assert_eq!(got.status, 200, "{}", got.text());
    let want: u64 = ok(&run(&["count", "--db", s(&db), "n < 4"]), "count")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(got.json(), json!({ "count": want }));
    assert_eq!(https("/health", "").json(), json!({"status": "ok"}));
    assert!(https("/", "").text().contains("<title>weir</title>"));
    // Plain HTTP on the TLS port gets no HTTP answer.
    let mut c = TcpStream::connect(srv.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let _ = c.write_all(b"GET /health HTTP/1.0\r\n\r\n");
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    assert!(!text(&out).contains("HTTP/1."), "{}", text(&out));
    assert_eq!(srv.stop().code(), Some(0));
    // Files that cannot serve: an error naming the file, before anything listens.
    let start = |cert: &Path, key: &Path| {
        let out = run(&[
            "serve",
            "--db",
            s(&db),
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            s(cert),
            "--tls-key",
            s(key),
        ]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let missing = tmp.path().join("none.pem");
    let err = start(&missing, &key);
    assert!(
        err.contains(&format!("{}: cannot read the TLS certificate", s(&missing))),
        "{err}"
    );
    let err = start(&key, &key);
    assert!(
        err.contains(&format!("{}: no certificate in it", s(&key))),
        "{err}"
    );
    let err = start(&cert, &cert);
    assert!(
        err.contains(&format!("{}: cannot read the TLS private key", s(&cert))),
        "{err}"
    );
    let other = tmp.path().join("other.pem");
    let stranger = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(&other, stranger.signing_key.serialize_pem()).unwrap();
    let err = start(&cert, &other);
    assert!(err.contains("unusable certificate and key"), "{err}");
    // Both or neither.
    let out = run(&["serve", "--db", s(&db), "--tls-cert", s(&cert)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// The system's headless Chromium, if installed (Debian's `chromium`).
pub(crate) fn chromium() -> Option<std::path::PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists())
}

/// The page's DOM after its scripts ran, as headless Chromium renders `url`.
fn rendered(browser: &Path, url: &str) -> String {
    let out = std::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=10000",
            "--dump-dom",
            url,
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    text(&out.stdout)
}

/// The driver of the page (tests/browser/page.py), when Python has Playwright.
pub(crate) fn driver() -> Option<std::path::PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/page.py");
    let has = std::process::Command::new("python3")
        .args(["-c", "import playwright.sync_api"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    has.then_some(script)
}

/// `weir count EXPR` as a number.
fn count(db: &Path, expr: &str) -> u64 {
    ok(&run(&["count", "--db", s(db), expr]), "count")
        .trim()
        .parse()
        .unwrap()
}

/// The uids of `weir export --to json EXPR`, in order.
fn uids(db: &Path, expr: &str) -> Vec<String> {
    export(db, expr)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["uid"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// One tab of the page's results, as the driver saw it: its label and the uids of its rows.
fn tab_uids(tab: &Value) -> (String, Vec<String>) {
    let columns = tab["columns"].as_array().unwrap();
    let at = columns.iter().position(|c| c == "uid").unwrap();
    let rows = tab["rows"].as_array().unwrap();
    let uids = rows
        .iter()
        .map(|r| r[at].as_str().unwrap().to_string())
        .collect();
    (tab["label"].as_str().unwrap().to_string(), uids)
}

#[test]
fn the_page_in_a_browser_shows_what_the_cli_counts() {
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let Some(browser) = chromium() else {
        // CI installs it (.ci/run): there a missing browser is a failure, not a skip.
        assert!(
            !ci,
            "CI=true but no chromium at /usr/bin/chromium: .ci/run installs Debian's package"
        );
        println!("skipped: no chromium to render the page (apt-get install chromium)");
        return;
    };
    let Some(script) = driver() else {
        assert!(
            !ci,
            "CI=true but Python has no playwright to drive chromium: .ci/run pip-installs it"
        );
        println!("skipped: no Python playwright to drive the page (pip install playwright)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 3000);
    // And dns events of every third of the first 300 connections (same uid, udp), so that a
    // uid leads to events of two schemas.
    let mut dns = String::from(
        "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tdns\n\
         #fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto\tquery\n\
         #types\ttime\tstring\taddr\tport\taddr\tport\tenum\tstring\n",
    );
    for i in (0..300).step_by(3) {
        dns.push_str(&format!(
            "{}.{:06}\t{}\t10.0.{}.{}\t{i}\t192.0.2.53\t53\tudp\tq{i}.example\n",
            1_600_000_000 + i / 1000,
            (i % 1000) * 1000 + 1,
            conn_log::uid(i),
            (i >> 8) & 255,
            i & 255,
        ));
    }
    // And one dns event nine years before all others (an outlier the chart leaves out).
    dns.push_str(&format!(
        "1300000000.000001\t{}\t10.9.9.9\t65000\t192.0.2.53\t53\tudp\toutlier.example\n",
        conn_log::uid(999_999)
    ));
    let dns_log = tmp.path().join("dns.log");
    std::fs::write(&dns_log, dns).unwrap();
    ok(
        &run(&["import", "-q", "--db", s(&db), s(&dns_log)]),
        "import dns",
    );
    let srv = serve(&db, &["--listen", "127.0.0.1:0"]);

    // A person types a query, clicks a proto value, then a uid.
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-page.png");
    let pivot_shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-page-pivot.png");
    let views: Vec<std::path::PathBuf> = ["outliers", "sorted", "fields", "detail", "1280x800"]
        .iter()
        .map(|v| Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("serve-page-{v}.png")))
        .collect();
    for f in [&shot, &pivot_shot].into_iter().chain(&views) {
        let _ = std::fs::remove_file(f);
    }
    let expr = "id.orig_p < 700 || n > 8000";
    let rule = tmp.path().join("dns-rule.yml");
    std::fs::write(
        &rule,
        "title: Queries ending in 0.example\nid: 0c1d2e3f-0000-4000-8000-000000000002\n\
         logsource:\n  product: zeek\n  service: dns\ndetection:\n  sel:\n    \
         query|endswith: '0.example'\n  condition: sel\n",
    )
    .unwrap();
    let started = Instant::now();
    let out = std::process::Command::new("python3")
        .arg(&script)
        .args([
            &format!("http://{}/", srv.addr),
            expr,
            "proto",
            s(&shot),
            s(&rule),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(out.status.success(), "page.py: {}", text(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    println!(
        "the browser session took {took:?} (seconds since start: {})",
        seen["seconds"]
    );
    assert_eq!(seen["page_errors"], json!([]), "{seen}");

    // Before typing: every event.
    assert_eq!(seen["initial"]["total"], json!(3101), "{seen}");
    assert_eq!(seen["initial"]["outside"], json!(1), "{seen}");

    // Typed: the histogram's total is `weir count`'s; a tab per schema, each the first events
    // of `weir export` of that schema (one page of 50).
    let typed = &seen["typed"];
    assert_eq!(typed["query"], expr);
    assert_eq!(typed["error"], "");
    let want = count(&db, expr);
    assert_eq!(want, 700 + 333 + 100);
    assert_eq!(typed["total"], json!(want), "{typed}");
    let tabs = typed["tabs"].as_array().unwrap();
    assert_eq!(tabs.len(), 3, "the timeline and two schemas: {typed}");
    // The timeline, the tab shown first: both schemas in one list in time order, as `weir
    // export 'EXPR | sort ts'`, with `#type` first and the fields both schemas have next.
    let timeline = &tabs[0];
    let (label, got) = tab_uids(timeline);
    let sorted = uids(&db, &format!("{expr} | sort ts"));
    assert_eq!(
        label,
        format!("timeline 1,000 of {}", common::cli::grouped(want))
    );
    assert_eq!(got, sorted[..50], "{timeline}");
    let columns = timeline["columns"].as_array().unwrap();
    assert_eq!(columns[1], "#type", "{timeline}");
    assert_eq!(columns[2], "ts", "{timeline}");
    let types: std::collections::BTreeSet<&str> = timeline["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[1].as_str().unwrap())
        .collect();
    assert!(types.contains("zeek.conn"), "{types:?}");
    for (tab, schema) in tabs[1..].iter().zip(["conn", "dns"]) {
        let (label, got) = tab_uids(tab);
        let all = uids(&db, &format!("({expr}) && #type == \"zeek.{schema}\""));
        let fetched = all.len().min(1000);
        let of = if all.len() > fetched {
            format!(" of {}", common::cli::grouped(all.len() as u64))
        } else {
            String::new()
        };
        assert_eq!(
            label,
            format!("{schema} {}{of}", common::cli::grouped(fetched as u64))
        );
        assert_eq!(got, all[..all.len().min(50)], "{schema}");
    }

    // A click on the first connection's proto: `&& proto == "tcp"` joins the query (the
    // expression in parentheses, as it has `||`), and the page counts as `weir count` does.
    assert_eq!(seen["value_clicked"], "tcp");
    let value = &seen["value"];
    let narrowed = format!("({expr}) && proto == \"tcp\"");
    assert_eq!(value["query"], narrowed, "{value}");
    assert_eq!(value["total"], json!(count(&db, &narrowed)), "{value}");
    assert_eq!(value["total"], json!(700 + 333), "{value}");
    let tabs = value["tabs"].as_array().unwrap();
    assert_eq!(tabs.len(), 1, "{value}");
    assert_eq!(tab_uids(&tabs[0]).1, uids(&db, &narrowed)[..50]);

    // A click on the first uid: the query is that uid's, and the page shows its events of
    // both schemas, as `weir export` of that query.
    let uid = conn_log::uid(0);
    assert_eq!(seen["uid_clicked"], uid.as_str());
    let pivot = &seen["uid"];
    let by_uid = format!("uid == \"{uid}\"");
    assert_eq!(pivot["query"], by_uid, "{pivot}");
    assert_eq!(pivot["total"], json!(count(&db, &by_uid)), "{pivot}");
    assert_eq!(pivot["total"], json!(2), "{pivot}");
    let shown: Vec<(String, Vec<String>)> = pivot["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .map(tab_uids)
        .collect();
    assert_eq!(
        shown,
        [
            ("timeline 2".to_string(), vec![uid.clone(), uid.clone()]),
            ("conn 1".to_string(), vec![uid.clone()]),
            ("dns 1".to_string(), vec![uid.clone()]),
        ],
        "{pivot}"
    );
    assert_eq!(uids(&db, &by_uid), [uid.clone(), uid.clone()]);

    // Back: the value's search again, its query in the box and the URL, the same answer;
    // Forward: the uid's (issue 59: each query is a history entry).
    let back = &seen["back"];
    assert_eq!(back["query"], narrowed, "{back}");
    assert_eq!(back["total"], value["total"], "{back}");
    assert_eq!(back["tabs"], value["tabs"], "{back}");
    assert_eq!(seen["back_url_q"], narrowed, "{seen}");
    let forward = &seen["forward"];
    assert_eq!(forward["query"], by_uid, "{forward}");
    assert_eq!(forward["total"], pivot["total"], "{forward}");
    assert_eq!(forward["tabs"], pivot["tabs"], "{forward}");

    // The chart's bins are the engine's: the events per bin of the resolution shown, for a
    // query (the fine histogram summed up) and for every event, outliers left out or not.
    for step in ["typed", "value", "cleared", "all"] {
        let got = &seen[step];
        let res = got["res"].as_str().unwrap();
        let query = got["query"].as_str().unwrap();
        let chain = format!(
            "{}summarize count() by ts resolution {res}",
            if query.is_empty() {
                String::new()
            } else {
                format!("{query} | ")
            }
        );
        let mut want: Vec<(String, u64)> = export(&db, &chain)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| !e["ts"].is_null())
            .map(|e| {
                let t = e["ts"].as_str().unwrap();
                // The page writes times as JavaScript does: to the millisecond.
                let ms = format!("{}Z", &t[..23]);
                (ms, e["count()"].as_u64().unwrap())
            })
            .collect();
        want.sort();
        let bars: Vec<(String, u64)> = got["bars"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (b[0].as_str().unwrap().to_string(), b[1].as_u64().unwrap()))
            .collect();
        // Every bin, the outliers' too (the chart draws those within its range).
        assert_eq!(bars, want, "{step} at {res}");
    }

    // The whole archive: the 2011 event is left out of the chart, which starts in 2020, and
    // the page says so; "include them" spans every event.
    let cleared = &seen["cleared"];
    assert_eq!(cleared["total"], json!(3101), "{cleared}");
    assert_eq!(cleared["outside"], json!(1), "{cleared}");
    assert!(
        cleared["chart_from"].as_str().unwrap() >= "2020-09-13",
        "{cleared}"
    );
    let said = seen["outside_text"].as_str().unwrap();
    assert!(said.contains("1 event lies outside"), "{said}");
    let all = &seen["all"];
    assert_eq!(all["total"], json!(3101), "{all}");
    assert_eq!(all["outside"], json!(0), "{all}");
    assert!(all["chart_from"].as_str().unwrap() <= "2011-03-13", "{all}");

    // A header click sorts through the query: the first tab shows the conn events in the
    // order of `weir export 'sort id.orig_p'`; a second click sorts descending.
    for (step, chain) in [
        ("sorted", "sort id.orig_p"),
        ("sorted_desc", "sort id.orig_p desc"),
    ] {
        let got = &seen[step];
        assert_eq!(got["query"], chain, "{got}");
        let want: Vec<String> = export(&db, chain)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["_path"] == "conn")
            .map(|e| e["uid"].as_str().unwrap().to_string())
            .take(50)
            .collect();
        let conn = got["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["label"].as_str().unwrap().starts_with("conn"))
            .unwrap_or_else(|| panic!("no conn tab: {got}"));
        assert_eq!(tab_uids(conn).1, want, "{step}");
    }

    // The field panel: proto's top values in the first tab, the timeline of every schema,
    // are `weir export`'s `top proto` over every event, and "-" on the first adds
    // `proto != "..."` to the query.
    let want: Vec<Value> = export(&db, "top proto")
        .lines()
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            json!([e["proto"], e["count"].to_string()])
        })
        .collect();
    assert!(!want.is_empty());
    assert_eq!(seen["top"], json!(want), "{seen}");
    let dropped = &seen["dropped"];
    let first = want[0][0].as_str().unwrap();
    let without = format!("proto != \"{first}\"");
    assert_eq!(dropped["query"], without, "{dropped}");
    assert_eq!(dropped["total"], json!(count(&db, &without)), "{dropped}");

    // The detail pane shows the row's fields as the table does, and the events of its uid in
    // time order, as `weir export 'uid == X | sort ts'`.
    let detail = &seen["detail"];
    let columns = seen["detail_columns"].as_array().unwrap();
    let row = seen["detail_row"].as_array().unwrap();
    for (c, v) in columns.iter().zip(row).skip(1) {
        assert_eq!(detail["fields"][c.as_str().unwrap()], *v, "{c}: {detail}");
    }
    let uid = detail["fields"]["uid"].as_str().unwrap();
    let want: Vec<Value> = export(&db, &format!("uid == \"{uid}\" | sort ts"))
        .lines()
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            json!([e["_path"], e["ts"].to_string(), e["uid"]])
        })
        .collect();
    let got: Vec<Value> = detail["related"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!([r[0], r[1], r[2]]))
        .collect();
    assert_eq!(got.len(), want.len(), "{detail}");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!((&g[0], &g[2]), (&w[0], &w[2]), "{detail}");
    }

    // The column chooser hides a column of the shown tab (dns) and shows it again.
    let hidden: Vec<&str> = seen["hidden_columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let shown: Vec<&str> = seen["shown_columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(
        shown.contains(&"query") && !hidden.contains(&"query"),
        "{hidden:?} {shown:?}"
    );
    assert_eq!(
        hidden,
        shown
            .iter()
            .filter(|c| **c != "query")
            .copied()
            .collect::<Vec<_>>()
    );

    // Keyboard only: ArrowDown twice chooses the second row, Enter opens its detail.
    assert_eq!(seen["selected_uid"], seen["second_row_uid"], "{seen}");
    assert_eq!(
        seen["keyboard_detail_uid"], seen["second_row_uid"],
        "{seen}"
    );

    // `/` focuses the query box and types nothing into it.
    assert_eq!(seen["slash_focus"], "q", "{seen}");
    assert_eq!(seen["slash_query"], by_uid, "{seen}");

    // The downloads hold what `weir export` writes for the query shown (the uid's).
    for (fmt, to) in [("csv", "csv"), ("json", "json")] {
        let got = &seen[format!("download_{fmt}")];
        assert_eq!(got["name"], format!("weir-result.{fmt}"), "{got}");
        let want = ok(
            &run(&["export", "--db", s(&db), "--to", to, &by_uid]),
            "export",
        );
        assert_eq!(got["text"].as_str().unwrap(), want, "{fmt}");
    }
    // The Parquet download: one file, a `#type` column when the uid's events are of several
    // schemas, and the rows of `weir export` in its order.
    let got = &seen["download_parquet"];
    assert_eq!(got["name"], "weir-result.parquet", "{got}");
    let rb = parquet_batch(std::fs::read(got["path"].as_str().unwrap()).unwrap());
    let want: Vec<Value> = export(&db, &by_uid)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rb.num_rows(), want.len());
    let want_uids: Vec<Option<String>> = want
        .iter()
        .map(|e| e["uid"].as_str().map(str::to_string))
        .collect();
    assert_eq!(column_text(&rb, "uid"), want_uids);

    // The Sigma rule searched from the page: its expression in the box, the count of
    // `weir count --sigma` on the chart.
    let by_rule = ok(
        &run(&["count", "--db", s(&db), "--sigma", s(&rule)]),
        "count --sigma",
    );
    let want: u64 = by_rule.split('\t').next().unwrap().trim().parse().unwrap();
    assert!(want > 0, "{by_rule}");
    let sigma = &seen["sigma"];
    assert_eq!(sigma["total"], json!(want), "{}", sigma["query"]);
    assert_eq!(
        count(&db, sigma["query"].as_str().unwrap()),
        want,
        "{}",
        sigma["query"]
    );
    assert!(
        seen["sigma_said"]
            .as_str()
            .unwrap()
            .contains("Queries ending in 0.example"),
        "{}",
        seen["sigma_said"]
    );

    // At 1280x800 nothing is wider than the window.
    assert_eq!(seen["overflow_1280"], json!(0), "{seen}");

    // Screenshots, for a person to look at: target/tmp/serve-page.png and -pivot.png.
    for f in [&shot, &pivot_shot].into_iter().chain(&views) {
        let png = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", s(f)));
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 10_000,
            "{}",
            png.len()
        );
    }

    // Rendered from the URL alone: no query, the histogram's range comes from the archive's
    // info, its total is every event; a parse error is shown with its caret under the query.
    let dom = rendered(&browser, &format!("http://{}/", srv.addr));
    assert!(dom.contains("data-total=\"3101\""), "{dom}");
    assert_eq!(dom.matches("<tr>").count(), 1 + 50, "{dom}");
    let dom = rendered(
        &browser,
        &format!("http://{}/?q=n%20%3D%3D%20%3D%3D%201", srv.addr),
    );
    assert!(dom.contains("n == == 1\n     ^"), "{dom}");
    assert!(!dom.contains("data-total"), "{dom}");
    assert_eq!(srv.stop().code(), Some(0));
}

/// The page's count of matches that have no `ts` is `weir count`'s, not "0 matching events"
/// (the histogram has nothing to place them on), and its first tab is the schema with the
/// most matches (issue 59).
#[test]
fn the_page_counts_matches_without_a_time() {
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let Some(browser) = chromium() else {
        assert!(!ci, "CI=true but no chromium at /usr/bin/chromium");
        println!("skipped: no chromium to render the page (apt-get install chromium)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 20);
    let mut log = String::from(
        "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tnotime\n\
         #fields\tuid\tn\n#types\tstring\tcount\n",
    );
    for i in 0..37 {
        log.push_str(&format!("N{i}\t{i}\n"));
    }
    let path = tmp.path().join("notime.log");
    std::fs::write(&path, log).unwrap();
    ok(&run(&["import", "-q", "--db", s(&db), s(&path)]), "import");
    let srv = serve(&db, &["--listen", "127.0.0.1:0"]);
    for (q, encoded) in [
        (
            "#type == \"zeek.notime\"",
            "%23type%20%3D%3D%20%22zeek.notime%22",
        ),
        ("uid == \"nothing\"", "uid%20%3D%3D%20%22nothing%22"),
    ] {
        let want = count(&db, q);
        let dom = rendered(&browser, &format!("http://{}/?q={encoded}", srv.addr));
        assert!(
            dom.contains(&format!("data-total=\"{want}\"")),
            "{q}: {dom}"
        );
        let summary = if want == 0 {
            "0 matching events".to_string()
        } else {
            format!("{want} matching events, none with ts")
        };
        assert!(dom.contains(&summary), "{q}: {dom}");
    }
    assert_eq!(count(&db, "#type == \"zeek.notime\""), 37);
    // Every event: the tab shown first is the timeline of all of them, then the schemas
    // by their number of matches (notime's 37 before conn's 20), not by name.
    let dom = rendered(&browser, &format!("http://{}/", srv.addr));
    assert!(dom.contains("data-total=\"57\""), "{dom}");
    assert!(dom.contains("class=\"on\">timeline 57"), "{dom}");
    let (notime, conn) = (dom.find(">notime 37<"), dom.find(">conn 20<"));
    assert!(notime.is_some() && notime < conn, "{dom}");
    assert_eq!(srv.stop().code(), Some(0));
}

/// A Parquet download of several schemas is one file with a `#type` column and the union of
/// their fields, rows in the query's order; a field of two types without a common one is
/// refused (`422`) naming it and the way out.
#[test]
fn a_parquet_download_unites_schemas_or_names_the_conflict() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 20);
    let header = "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n";
    let mut notes =
        format!("{header}#path\tnotes\n#fields\tts\tuid\tnote\n#types\ttime\tstring\tstring\n");
    let mut flags = format!("{header}#path\tflags\n#fields\tuid\tn\n#types\tstring\tbool\n");
    for i in 0..7 {
        notes.push_str(&format!("{}.5\tC{i}\tnote {i}\n", 1_258_531_221 + i));
        flags.push_str(&format!("F{i}\tT\n"));
    }
    for (name, text) in [("notes.log", &notes), ("flags.log", &flags)] {
        let path = tmp.path().join(name);
        std::fs::write(&path, text).unwrap();
        ok(&run(&["import", "-q", "--db", s(&db), s(&path)]), "import");
    }
    let srv = serve(&db, &["--listen", "127.0.0.1:0"]);
    let q = "#type != \"zeek.flags\" | sort ts";
    let got = post(
        srv.addr,
        "/api/v1/query",
        &json!({"query": q, "format": "parquet"}),
    );
    assert_eq!(got.status, 200, "{}", got.text());
    let rb = parquet_batch(got.body.clone());
    let want: Vec<Value> = export(&db, q)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rb.num_rows(), want.len());
    assert_eq!(rb.schema().field(0).name(), "#type");
    let col = |name: &str| column_text(&rb, name);
    let types: Vec<Option<String>> = want
        .iter()
        .map(|e| Some(format!("zeek.{}", e["_path"].as_str().unwrap())))
        .collect();
    assert_eq!(col("#type"), types);
    let uids: Vec<Option<String>> = want
        .iter()
        .map(|e| e["uid"].as_str().map(str::to_string))
        .collect();
    assert_eq!(col("uid"), uids);
    let notes: Vec<Option<String>> = want
        .iter()
        .map(|e| e["note"].as_str().map(str::to_string))
        .collect();
    assert_eq!(col("note"), notes);
    assert!(notes.iter().any(Option::is_some) && notes.iter().any(Option::is_none));

    // `n` is a count in conn and a bool in flags: one column cannot hold both.
    let got = post(
        srv.addr,
        "/api/v1/query",
        &json!({"query": "", "format": "parquet"}),
    );
    assert_eq!(got.status, 422, "{}", got.text());
    let e = got.json()["error"].as_str().unwrap().to_string();
    assert!(e.contains("field n is"), "{e}");
    assert!(e.contains("download one schema at a time"), "{e}");
    assert_eq!(srv.stop().code(), Some(0));
}

#[test]
fn refuses_a_missing_archive_and_a_taken_port() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(&[
        "serve",
        "--db",
        s(&tmp.path().join("none")),
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).starts_with("weir: error: "),
        "{}",
        text(&out.stderr)
    );
    let db = archive(tmp.path(), 5);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run(&["serve", "--db", s(&db), "--listen", &addr]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!("cannot listen on {addr}")),
        "{}",
        text(&out.stderr)
    );
}
