//! The Prometheus endpoint (`--metrics-listen`): scraped on loopback while an import reads a
//! slow stdin; the exposition parses and its counters move; the server's limits.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Stdio;
use std::time::Duration;

use common::cli::{ok, run, s, text, wait_for, weir};

/// A loopback port that was free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Sends `request` and returns the whole response (the server closes after it).
fn http(addr: SocketAddr, request: &[u8]) -> std::io::Result<String> {
    let mut c = TcpStream::connect(addr)?;
    c.set_read_timeout(Some(Duration::from_secs(10)))?;
    c.write_all(request)?;
    let mut out = Vec::new();
    c.read_to_end(&mut out)?;
    Ok(text(&out))
}

/// The samples of an exposition, `name{labels}` to value; checks that every sample's family
/// has one HELP and one TYPE line before it.
fn parse(body: &str) -> HashMap<String, f64> {
    let mut samples = HashMap::new();
    let mut help = HashMap::new();
    let mut types = HashMap::new();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap();
            assert!(
                help.insert(name.to_string(), ()).is_none(),
                "HELP twice: {name}"
            );
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut p = rest.split(' ');
            let name = p.next().unwrap().to_string();
            let kind = p.next().unwrap();
            assert!(kind == "counter" || kind == "gauge", "{line}");
            assert_eq!(kind == "counter", name.ends_with("_total"), "{line}");
            assert!(types.insert(name, ()).is_none(), "TYPE twice: {line}");
        } else {
            let (key, value) = line.rsplit_once(' ').unwrap();
            let name = key.split('{').next().unwrap();
            assert!(name.starts_with("weir_"), "{line}");
            assert!(
                help.contains_key(name) && types.contains_key(name),
                "{line}"
            );
            samples.insert(key.to_string(), value.parse::<f64>().unwrap());
        }
    }
    samples
}

fn scrape(addr: SocketAddr) -> Option<HashMap<String, f64>> {
    let resp = http(addr, b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").ok()?;
    let (head, body) = resp.split_once("\r\n\r\n")?;
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(len, body.len());
    Some(parse(body))
}

const HEADER: &str = "#separator \\x09\n#fields\tts\tn\n#types\ttime\tcount\n";

/// `weir import` from stdin into `db`, serving its metrics at `addr` (with `extra` flags),
/// after the header and 10 events were written to it (stdin stays open).
fn import_ten(
    db: &std::path::Path,
    addr: SocketAddr,
    extra: &[&str],
) -> (std::process::Child, std::process::ChildStdin) {
    let listen = addr.to_string();
    let mut args = vec![
        "import",
        "-q",
        "--db",
        s(db),
        "--batch-timeout",
        "50ms",
        "--metrics-listen",
        &listen,
    ];
    args.extend_from_slice(extra);
    let mut child = weir()
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(HEADER.as_bytes()).unwrap();
    for i in 0..10 {
        writeln!(stdin, "{i}.5\t{i}").unwrap();
    }
    stdin.flush().unwrap();
    (child, stdin)
}

#[test]
fn import_serves_moving_counters_while_it_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let (child, mut stdin) = import_ten(&db, addr, &[]);
    let sink = "weir_stage_events_total{stage=\"archive\",kind=\"sink\"}";
    let mut first = HashMap::new();
    wait_for("the first 10 events", Duration::from_secs(20), || {
        first = scrape(addr).unwrap_or_default();
        first.get(sink) == Some(&10.0)
    });
    for key in [
        "weir_stage_events_total{stage=\"input\",kind=\"source\"}",
        "weir_stage_batches_total{stage=\"archive\",kind=\"sink\"}",
        "weir_stage_bytes_total{stage=\"batch\",kind=\"transform\"}",
        "weir_stage_busy_seconds_total{stage=\"archive\",kind=\"sink\"}",
        "weir_stage_idle_seconds_total{stage=\"archive\",kind=\"sink\"}",
        "weir_stage_blocked_seconds_total{stage=\"input\",kind=\"source\"}",
        "weir_edge_in_flight_bytes{edge=\"input -> batch\"}",
        "weir_edge_max_in_flight_bytes{edge=\"batch -> archive\"}",
        "weir_edge_capacity_bytes{edge=\"batch -> archive\"}",
        "weir_source_bytes_read_total",
        "weir_errors_skipped_total",
        "weir_elapsed_seconds",
    ] {
        assert!(first.contains_key(key), "{key} missing: {first:?}");
    }
    // More input: the counters move.
    for i in 10..25 {
        writeln!(stdin, "{i}.5\t{i}").unwrap();
    }
    stdin.flush().unwrap();
    let mut second = HashMap::new();
    wait_for("25 events", Duration::from_secs(20), || {
        second = scrape(addr).unwrap_or_default();
        second.get(sink) == Some(&25.0)
    });
    let grew = |k: &str| second[k] > first[k];
    assert!(grew("weir_source_bytes_read_total"));
    assert!(grew(
        "weir_stage_batches_total{stage=\"archive\",kind=\"sink\"}"
    ));
    assert!(grew("weir_elapsed_seconds"));

    // The server's answers besides GET /metrics.
    let head = http(addr, b"HEAD /metrics HTTP/1.1\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.1 200 OK\r\n") && head.ends_with("\r\n\r\n"),
        "{head}"
    );
    let q = http(addr, b"GET /metrics?x=1 HTTP/1.0\r\n\r\n").unwrap();
    // hyper answers an HTTP/1.0 request in HTTP/1.0.
    assert!(q.starts_with("HTTP/1.0 200 OK\r\n"), "{q}");
    let nf = http(addr, b"GET / HTTP/1.1\r\n\r\n").unwrap();
    assert!(nf.starts_with("HTTP/1.1 404 "), "{nf}");
    let post = http(
        addr,
        b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
    )
    .unwrap();
    assert!(
        post.starts_with("HTTP/1.1 405 ") && post.contains("Allow: GET, HEAD"),
        "{post}"
    );
    let bad = http(addr, b"hello\r\n\r\n").unwrap();
    assert!(bad.starts_with("HTTP/1.1 400 "), "{bad}");
    let mut big = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', 20_000));
    let huge = http(addr, &big).unwrap_or_default();
    assert!(
        huge.is_empty() || huge.starts_with("HTTP/1.1 431 "),
        "{huge}"
    );
    // A client that sends nothing does not stop others.
    let _idle = TcpStream::connect(addr).unwrap();
    assert!(scrape(addr).is_some());

    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The endpoint ends with the import.
    assert!(TcpStream::connect(addr).is_err());
}

#[test]
fn metrics_listen_in_a_pipeline_file_and_its_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in.log");
    std::fs::write(&input, format!("{HEADER}1.5\t1\n")).unwrap();
    let pipeline = |listen: &str| {
        let p = tmp.path().join(format!("p{}.toml", listen.len()));
        std::fs::write(
            &p,
            format!(
                "[pipeline]\nmetrics_listen = \"{listen}\"\n\n[sources.in]\ntype = \"file\"\npaths = [\"{}\"]\n\n[sinks.out]\ntype = \"file\"\ninputs = [\"in\"]\npath = \"{}\"\n",
                s(&input),
                s(&tmp.path().join("out.json"))
            ),
        )
        .unwrap();
        p
    };
    let p = pipeline("127.0.0.1:0");
    ok(&run(&["run", "--check", s(&p)]), "run --check");
    ok(&run(&["run", "-q", s(&p)]), "run");
    let bad = run(&["run", "--check", s(&pipeline("localhost"))]);
    assert_eq!(bad.status.code(), Some(2));
    let msg = text(&bad.stderr);
    assert!(msg.contains("[pipeline] metrics_listen"), "{msg}");
    // A taken port fails the run, naming the address.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run(&["run", "-q", "--metrics-listen", &addr, s(&p)]);
    assert_eq!(out.status.code(), Some(1));
    let msg = text(&out.stderr);
    assert!(msg.contains(&format!("cannot listen on {addr}")), "{msg}");
}

type Der = rustls::pki_types::CertificateDer<'static>;

/// A self-signed certificate for `localhost` and its key, as PEM files in `dir`.
fn certificate(dir: &std::path::Path) -> (Der, std::path::PathBuf, std::path::PathBuf) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (made.cert.der().clone(), cert, key)
}

/// `GET /metrics` over TLS from a client that trusts `trusted` alone: the whole answer.
fn https(addr: SocketAddr, trusted: &Der) -> std::io::Result<String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(trusted.clone()).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(addr)?;
    tcp.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    tls.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")?;
    let mut out = Vec::new();
    tls.read_to_end(&mut out)?;
    Ok(text(&out))
}

#[test]
fn serves_https_with_its_certificate() {
    let tmp = tempfile::tempdir().unwrap();
    let (made, cert, key) = certificate(tmp.path());
    let db = tmp.path().join("db");
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let (child, stdin) = import_ten(
        &db,
        addr,
        &["--metrics-tls-cert", s(&cert), "--metrics-tls-key", s(&key)],
    );
    // The counters, over HTTPS.
    let sink = "weir_stage_events_total{stage=\"archive\",kind=\"sink\"} 10";
    let mut got = String::new();
    wait_for("10 events over HTTPS", Duration::from_secs(20), || {
        got = https(addr, &made).unwrap_or_default();
        got.contains(sink)
    });
    assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
    assert!(
        got.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
        "{got}"
    );
    // Plain HTTP on the TLS port gets no HTTP answer.
    let plain = http(addr, b"GET /metrics HTTP/1.1\r\n\r\n").unwrap_or_default();
    assert!(!plain.contains("HTTP/1."), "{plain}");
    // A client that trusts another certificate does not get through.
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    assert!(https(addr, other.cert.der()).is_err());
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));

    // In a pipeline file: [pipeline] metrics_tls_cert and metrics_tls_key, with their errors.
    let input = tmp.path().join("in.log");
    std::fs::write(&input, format!("{HEADER}1.5\t1\n")).unwrap();
    let pipeline = |name: &str, tls: &str| {
        let p = tmp.path().join(format!("{name}.toml"));
        std::fs::write(
            &p,
            format!(
                "[pipeline]\nmetrics_listen = \"127.0.0.1:0\"\n{tls}\n[sources.in]\ntype = \"file\"\npaths = [\"{}\"]\n\n[sinks.out]\ntype = \"file\"\ninputs = [\"in\"]\npath = \"{}\"\n",
                s(&input),
                s(&tmp.path().join(format!("{name}.json")))
            ),
        )
        .unwrap();
        p
    };
    let good = pipeline(
        "good",
        &format!(
            "metrics_tls_cert = \"{}\"\nmetrics_tls_key = \"{}\"\n",
            s(&cert),
            s(&key)
        ),
    );
    ok(&run(&["run", "--check", s(&good)]), "run --check");
    let out = run(&["run", "-v", s(&good)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("serving metrics on https://127.0.0.1:"),
        "{}",
        text(&out.stderr)
    );
    // A certificate without its key.
    let half = pipeline("half", &format!("metrics_tls_cert = \"{}\"\n", s(&cert)));
    let out = run(&["run", "--check", s(&half)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("metrics_tls_key"),
        "{}",
        text(&out.stderr)
    );
    // Files that cannot serve: an error naming the file, before anything runs.
    let missing = tmp.path().join("none.pem");
    for check in [true, false] {
        let mut args = vec!["run", "-q"];
        if check {
            args.push("--check");
        }
        args.extend([
            "--metrics-tls-cert",
            s(&missing),
            "--metrics-tls-key",
            s(&key),
            s(&good),
        ]);
        let out = run(&args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr)
                .contains(&format!("{}: cannot read the TLS certificate", s(&missing))),
            "{}",
            text(&out.stderr)
        );
    }
    // On import, the flags need each other and an address.
    for args in [
        vec!["--metrics-tls-cert", s(&cert), "--metrics-tls-key", s(&key)],
        vec![
            "--metrics-listen",
            "127.0.0.1:0",
            "--metrics-tls-cert",
            s(&cert),
        ],
    ] {
        let mut all = vec!["import", "-q", "--db", s(&db)];
        all.extend(args);
        all.push(s(&input));
        let out = run(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {}", text(&out.stderr));
    }
}
