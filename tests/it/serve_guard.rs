//! `weir serve` against web pages and slow clients (issue 55, items 1, 2, 7 and the framing
//! of 10): the `Host` and `Origin` checks, JSON-only POSTs, the token on loopback, the
//! token file's checks, the connection and body limits, and the attacks of a browser
//! (tests/browser/attack.py).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::cli::{s, stderr_of, text, weir};
use crate::serve::{answer, archive, chromium, get, post, request, serve, Answer};

/// Sends `head` (lines without their CRLF; `Content-Length` added) and `body` over a new
/// connection, and reads the answer to its end (the server closes).
fn raw(addr: SocketAddr, head: &[&str], body: &str) -> Answer {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = head.join("\r\n");
    req.push_str(&format!("\r\nContent-Length: {}\r\n\r\n{body}", body.len()));
    c.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    c.read_to_end(&mut out).unwrap();
    answer(&out)
}

/// What `c` receives until the server closes it; `Err` when it did not within the read
/// timeout. A reset after the answer counts as closed: the server closes a connection whose
/// request it did not read whole, and the client's next write then draws a reset.
fn until_closed(c: &mut TcpStream) -> (Vec<u8>, std::io::Result<()>) {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return (out, Ok(())),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !out.is_empty() => {
                return (out, Ok(()))
            }
            Err(e) => return (out, Err(e)),
        }
    }
}

/// `queries.started` of `GET /api/v1/status`.
fn started(addr: SocketAddr) -> u64 {
    let status = get(addr, "/api/v1/status").json();
    status["queries"]["started"]
        .as_u64()
        .unwrap_or_else(|| panic!("{status}"))
}

#[test]
fn only_its_own_host_and_origin_and_json_posts_are_answered() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 20);
    let srv = serve(
        &db,
        &[
            "--listen",
            "127.0.0.1:0",
            "--allowed-hosts",
            "weir.example,Other.Example",
        ],
    );
    let a = srv.addr;
    let port = a.port();
    let count = json!({"query": ""}).to_string();
    let post_as = |host: &str, extra: &[&str]| {
        let host = format!("Host: {host}");
        let mut head = vec!["POST /api/v1/count HTTP/1.0", &host];
        head.extend_from_slice(extra);
        raw(a, &head, &count)
    };
    let json_type = "Content-Type: application/json";

    // Its address, localhost and the names given: answered.
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "weir.example".to_string(),
        format!("other.example:{port}"),
    ] {
        let got = post_as(&host, &[json_type]);
        assert_eq!(got.status, 200, "{host}: {}", got.text());
        assert_eq!(got.json(), json!({"count": 20}));
    }
    // An Origin of this server's page passes.
    let own = format!("Origin: http://127.0.0.1:{port}");
    let got = post_as(&format!("127.0.0.1:{port}"), &[json_type, &own]);
    assert_eq!(got.status, 200, "{}", got.text());
    // Any other name (a rebound one): 403 with a JSON error, for the API, the page and
    // the health check alike, and no query runs.
    let before = started(a);
    for host in [
        format!("attacker.example:{port}"),
        format!("localhost:{}", port.wrapping_add(1)),
        "attacker.test".to_string(),
    ] {
        let got = post_as(&host, &[json_type]);
        assert_eq!(got.status, 403, "{host}: {}", got.text());
        let error = got.json()["error"].as_str().unwrap().to_string();
        assert!(error.contains("is not this server's"), "{error}");
        assert_eq!(got.header("connection"), Some("close"));
        for path in ["/", "/health", "/api/v1/info"] {
            let hostline = format!("Host: {host}");
            let got = raw(a, &[&format!("GET {path} HTTP/1.0"), &hostline], "");
            assert_eq!(got.status, 403, "{host} {path}");
        }
    }
    // Origin: another origin, or none known (`null`), is 403.
    for origin in [
        "Origin: http://attacker.example".to_string(),
        format!("Origin: http://127.0.0.1:{}", port.wrapping_add(1)),
        format!("Origin: http://localhost:{port}"),
        "Origin: null".to_string(),
    ] {
        let got = post_as(&format!("127.0.0.1:{port}"), &[json_type, &origin]);
        assert_eq!(got.status, 403, "{origin}: {}", got.text());
        assert!(got.json()["error"]
            .as_str()
            .unwrap()
            .contains("cross-origin request refused"));
    }
    // A POST whose body is not declared JSON (what a form or a no-cors fetch sends): 415.
    for content_type in [
        Some("Content-Type: text/plain"),
        Some("Content-Type: text/plain;charset=UTF-8"),
        Some("Content-Type: application/x-www-form-urlencoded"),
        Some("Content-Type: multipart/form-data; boundary=x"),
        None,
    ] {
        let extra: Vec<&str> = content_type.into_iter().collect();
        let got = post_as(&format!("127.0.0.1:{port}"), &extra);
        assert_eq!(got.status, 415, "{content_type:?}: {}", got.text());
        assert!(got.json()["error"]
            .as_str()
            .unwrap()
            .contains("Content-Type: application/json"));
    }
    // None of the refused requests ran a query.
    assert_eq!(started(a), before);
    let with_charset = post_as(
        &format!("127.0.0.1:{port}"),
        &["Content-Type: application/json; charset=utf-8"],
    );
    assert_eq!(with_charset.status, 200);
    assert_eq!(started(a), before + 1);

    // The page cannot be framed, runs only its own script and style, and no answer is
    // sniffed into another type.
    let page = get(a, "/");
    assert_eq!(page.status, 200);
    let csp = page.header("content-security-policy").unwrap();
    for part in [
        "default-src 'none'",
        "script-src 'sha256-",
        "style-src 'sha256-",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(part), "{part}: {csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    for got in [
        page,
        get(a, "/health"),
        post(a, "/api/v1/count", &json!({})),
    ] {
        assert_eq!(got.header("x-frame-options"), Some("DENY"));
        assert_eq!(got.header("x-content-type-options"), Some("nosniff"));
        assert!(got
            .header("content-security-policy")
            .unwrap()
            .contains("frame-ancestors 'none'"));
    }
    assert_eq!(srv.stop().code(), Some(0));

    // A name that no Host header can carry is refused at start.
    let out = crate::common::cli::run(&[
        "serve",
        "--db",
        s(&db),
        "--listen",
        "127.0.0.1:0",
        "--allowed-hosts",
        "weir.example:8420",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("\"weir.example:8420\" is not a host name"),
        "{}",
        text(&out.stderr)
    );
}

/// A token file of `token` with `mode`.
fn token_file(dir: &Path, name: &str, token: &str, mode: u32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("{token}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

/// `weir serve ARGS`, which must exit at start: its exit code and stderr (a server that
/// starts instead is killed after 20 s, and the test fails).
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let mut child = weir()
        .arg("serve")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let err = stderr_of(&mut child);
            let _ = child.wait();
            panic!("weir serve {args:?} started instead of refusing: {err}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let err = stderr_of(&mut child);
    (child.wait().unwrap().code(), err)
}

#[test]
fn a_token_file_is_required_on_loopback_too_and_must_be_private_and_long() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 10);
    let token = "5f0c1d2e3a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9012a3b4c5d6";
    let file = token_file(tmp.path(), "token", token, 0o600);
    let srv = serve(&db, &["--listen", "127.0.0.1:0", "--token-file", s(&file)]);
    let a = srv.addr;
    let count = json!({"query": ""}).to_string();
    // Without the token: 401 at once, without waiting for the body it announced, and the
    // connection closed (HTTP/1.1, which would keep it open).
    let mut c = TcpStream::connect(a).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let asked = Instant::now();
    write!(
        c,
        "POST /api/v1/count HTTP/1.1\r\nHost: {a}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{"
    )
    .unwrap();
    let (out, end) = until_closed(&mut c);
    let took = asked.elapsed();
    assert!(end.is_ok(), "no answer and no close within 10 s: {end:?}");
    let got = answer(&out);
    assert_eq!(got.status, 401, "{}", got.text());
    assert_eq!(got.header("connection"), Some("close"));
    assert_eq!(got.header("www-authenticate"), Some("Bearer"));
    println!("401 and closed after {took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    for auth in [None, Some("Authorization: Bearer nope".to_string())] {
        let headers: Vec<&str> = auth.iter().map(String::as_str).collect();
        let got = request(a, "POST", "/api/v1/count", &headers, &count);
        assert_eq!(got.status, 401, "{auth:?}");
    }
    assert_eq!(get(a, "/metrics").status, 401);
    let auth = format!("Authorization: Bearer {token}");
    let right = request(a, "POST", "/api/v1/count", &[&auth], &count);
    assert_eq!(right.status, 200, "{}", right.text());
    assert_eq!(right.json(), json!({"count": 10}));
    assert_eq!(get(a, "/health").status, 200);
    assert_eq!(get(a, "/").status, 200);
    assert_eq!(srv.stop().code(), Some(0));

    // A file others may read, or a short token: refused at start, on loopback with
    // --token-file and off loopback with the archive's default file alike.
    let open = token_file(tmp.path(), "open", token, 0o644);
    let short = token_file(tmp.path(), "short", "12345", 0o600);
    let (code, err) = refused(&[
        "--db",
        s(&db),
        "--listen",
        "127.0.0.1:0",
        "--token-file",
        s(&open),
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("has mode 0644") && err.contains(&format!("chmod 600 {}", s(&open))),
        "{err}"
    );
    let (code, err) = refused(&[
        "--db",
        s(&db),
        "--listen",
        "127.0.0.1:0",
        "--token-file",
        s(&short),
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("a token of 5 bytes; at least 32 are required"),
        "{err}"
    );
    std::fs::copy(&short, db.join("serve.token")).unwrap();
    let (code, err) = refused(&["--db", s(&db), "--listen", "0.0.0.0:0"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("at least 32 are required"), "{err}");
    token_file(&db, "serve.token", token, 0o604);
    let (code, err) = refused(&["--db", s(&db), "--listen", "0.0.0.0:0"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("chmod 600"), "{err}");
}

/// One `GET /health` on a new connection, and how long it took.
fn health(addr: SocketAddr) -> Duration {
    let t = Instant::now();
    let got = get(addr, "/health");
    let took = t.elapsed();
    assert_eq!(got.status, 200);
    took
}

#[test]
fn idle_sockets_and_trickling_bodies_do_not_stall_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 10);
    let srv = serve(&db, &["--listen", "127.0.0.1:0"]);
    let a = srv.addr;
    // 256 connections that send nothing.
    let idle: Vec<TcpStream> = (0..256).map(|_| TcpStream::connect(a).unwrap()).collect();
    // 64 POSTs whose bodies trickle in at a byte a second (100 announced).
    let mut trickling: Vec<TcpStream> = (0..64)
        .map(|_| {
            let mut c = TcpStream::connect(a).unwrap();
            write!(
                c,
                "POST /api/v1/count HTTP/1.1\r\nHost: {a}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{"
            )
            .unwrap();
            c
        })
        .collect();
    let opened = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<TcpStream> = trickling.iter().map(|c| c.try_clone().unwrap()).collect();
    let trickle = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut writers = writers;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(1));
                // A socket the server closed fails here: it stops being written.
                writers.retain_mut(|c| c.write_all(b" ").is_ok());
            }
        })
    };
    // Meanwhile the health check answers at once, every time.
    std::thread::sleep(Duration::from_millis(200));
    let mut times: Vec<Duration> = (0..20).map(|_| health(a)).collect();
    times.sort();
    println!(
        "/health beside 256 idle sockets and 64 trickling bodies, 20 requests: median {:?}, max {:?}",
        times[10], times[19]
    );
    assert!(times[19] < Duration::from_secs(1), "{times:?}");
    // A trickling body is cut off at the body deadline: 408 and closed.
    let c = &mut trickling[0];
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let (out, end) = until_closed(c);
    let after = opened.elapsed();
    assert!(end.is_ok(), "still open after {after:?}: {end:?}");
    let got = answer(&out);
    assert_eq!(got.status, 408, "{}", got.text());
    assert!(got.json()["error"]
        .as_str()
        .unwrap()
        .contains("did not arrive within 10s"));
    println!("a trickling body was answered 408 after {after:?}");
    // An idle connection was closed (the head deadline), before the body deadline.
    let mut c = &idle[0];
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = [0u8; 16];
    assert!(matches!(c.read(&mut buf), Ok(0)));
    // A kept-alive connection that goes idle after an answer is closed too.
    let mut c = TcpStream::connect(a).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(c, "GET /health HTTP/1.1\r\nHost: {a}\r\n\r\n").unwrap();
    let mut got = Vec::new();
    while !text(&got).ends_with("{\"status\":\"ok\"}") {
        let mut buf = [0u8; 4096];
        let n = c.read(&mut buf).unwrap();
        assert!(n > 0, "{}", text(&got));
        got.extend_from_slice(&buf[..n]);
    }
    assert!(text(&got).starts_with("HTTP/1.1 200"), "{}", text(&got));
    let idle_since = Instant::now();
    let mut rest = Vec::new();
    let read = c.read_to_end(&mut rest);
    let idle_for = idle_since.elapsed();
    assert!(read.is_ok() && rest.is_empty(), "{read:?}: {}", text(&rest));
    println!("a kept-alive connection was closed after {idle_for:?} idle");
    assert!(idle_for < Duration::from_secs(20), "{idle_for:?}");
    stop.store(true, Ordering::Relaxed);
    trickle.join().unwrap();
    drop(idle);
    assert!(health(a) < Duration::from_secs(1));
    assert_eq!(srv.stop().code(), Some(0));
}

/// The attack driver (tests/browser/attack.py), when Python has Playwright.
fn attack_driver() -> Option<std::path::PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/attack.py");
    let has = std::process::Command::new("python3")
        .args(["-c", "import playwright.sync_api"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    has.then_some(script)
}

#[test]
fn web_pages_cannot_drive_the_server() {
    let ci = std::env::var("CI").as_deref() == Ok("true");
    if chromium().is_none() {
        assert!(
            !ci,
            "CI=true but no chromium at /usr/bin/chromium: .ci/run installs Debian's package"
        );
        println!("skipped: no chromium for the attacks (apt-get install chromium)");
        return;
    }
    let Some(script) = attack_driver() else {
        assert!(
            !ci,
            "CI=true but Python has no playwright to drive chromium: .ci/run pip-installs it"
        );
        println!("skipped: no Python playwright to drive the attacks (pip install playwright)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = archive(tmp.path(), 300);
    let srv = serve(&db, &["--listen", "127.0.0.1:0"]);
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(srv.addr.port().to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "attack.py: {}", text(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    println!("{seen}");

    // DNS rebinding: the page's same-origin requests reach the server under the attacker's
    // name, and are refused; it reads no event.
    let rebinding = &seen["rebinding"];
    for what in ["query", "info"] {
        assert_eq!(rebinding[what]["status"], 403, "{what}: {rebinding}");
        let body = rebinding[what]["body"].as_str().unwrap();
        assert!(body.contains("is not this server's"), "{what}: {body}");
        assert!(!body.contains("\"uid\""), "{what}: {body}");
    }
    // No-cors POSTs from another origin were sent, and ran no query; the page did not
    // render in the attacker's frame (which would have run its own queries).
    let no_cors = &seen["no_cors"];
    assert_eq!(no_cors["sent"].as_array().unwrap().len(), 2, "{no_cors}");
    assert!(no_cors["started_before"].is_u64(), "{no_cors}");
    assert_eq!(
        no_cors["started_after"], no_cors["started_before"],
        "{no_cors}"
    );
    assert_eq!(seen["framed"], false, "{seen}");
    // Sent to the server's page with a query of its choosing, the browser shows the query
    // and runs nothing until the person presses Search.
    let opened = &seen["opened"];
    assert_eq!(opened["query"], "summarize count() by uid", "{opened}");
    assert_eq!(opened["searches"], "0", "{opened}");
    assert_eq!(
        opened["started_after"], opened["started_before"],
        "{opened}"
    );
    assert!(
        opened["note"]
            .as_str()
            .unwrap()
            .contains("opened from another site"),
        "{opened}"
    );
    assert_eq!(opened["searches_after_click"], "1", "{opened}");
    // The server's own page works under its policy: its first search ran, its legend is
    // colored, and nothing was blocked.
    let page = &seen["page"];
    assert_eq!(page["searched"], "300", "{page}");
    assert!(page["legend"].as_u64().unwrap() >= 1, "{page}");
    assert_eq!(page["legend_colored"], true, "{page}");
    assert_eq!(page["csp_errors"], json!([]), "{page}");
    assert_eq!(page["page_errors"], json!([]), "{page}");
    assert_eq!(srv.stop().code(), Some(0));
}
