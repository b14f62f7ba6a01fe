//! Delivery of sightings by `weir serve` (issue 58): `GET /api/v1/sightings` (newest first,
//! after an ID, and followed across a disconnect: every sighting once) and `--webhook`
//! against a receiver that fails, drops connections and is slow (every sighting delivered,
//! in order, while the import keeps its pace).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::common::cli::{ok, run, s, wait_for};
use crate::intel::{add, db_dir, json_lines, write};
use crate::serve::{get, serve};

/// A conn log whose connection `i` goes to one of the set's addresses when `i % 3 == 0`.
fn log(first: u64, n: u64) -> String {
    let mut log = String::from(
        "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tconn\n\
#fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto\n\
#types\ttime\tstring\taddr\tport\taddr\tport\tenum\n",
    );
    for i in first..first + n {
        let resp = if i % 3 == 0 { "6.6.6.6" } else { "10.0.0.2" };
        log.push_str(&format!(
            "{}.0\tC{i}\t10.0.0.1\t1234\t{resp}\t80\ttcp\n",
            1_600_000_000 + i
        ));
    }
    log
}

/// The IDs of the archive's sightings, in order.
fn sighting_ids(db: &Path) -> Vec<u64> {
    let out = run(&[
        "export",
        "--db",
        s(db),
        "--to",
        "json",
        "#type == \"weir.sighting\" | select #id",
    ]);
    if crate::common::cli::text(&out.stderr).contains("no schema named \"weir.sighting\"") {
        return Vec::new(); // none yet
    }
    let out = ok(&out, "export");
    json_lines(&out)
        .iter()
        .map(|v| v["#id"].as_u64().unwrap())
        .collect()
}

/// An archive with set `feed` (6.6.6.6) and `n` events imported.
fn archive(dir: &Path, n: u64) -> std::path::PathBuf {
    let db = dir.join("db");
    std::fs::create_dir(&db).unwrap();
    let f = write(dir, "ips.txt", "6.6.6.6\n");
    ok(&add(&db, "feed", &["--type", "addr"], &f), "intel add");
    import(dir, &db, 0, n);
    db
}

fn import(dir: &Path, db: &Path, first: u64, n: u64) {
    let l = write(dir, &format!("conn{first}.log"), &log(first, n));
    ok(
        &run(&["import", "-q", "--batch-size", "50", "--db", s(db), s(&l)]),
        "import",
    );
}

/// Reads `n` lines of a followed stream (`GET path` over HTTP/1.0) and hangs up.
fn follow(addr: SocketAddr, path: &str, n: usize) -> Vec<Value> {
    read_lines(&mut follow_open(addr, path), n)
}

/// Opens a followed stream (`GET path` over HTTP/1.0): the stream after its head (the
/// server has then fixed where it starts).
fn follow_open(addr: SocketAddr, path: &str) -> BufReader<TcpStream> {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(c, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut r = BufReader::new(c);
    let mut line = String::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        assert!(!line.is_empty(), "the head ends");
    }
    r
}

/// The next `n` lines of a followed stream.
fn read_lines(r: &mut BufReader<TcpStream>, n: usize) -> Vec<Value> {
    let mut line = String::new();
    (0..n)
        .map(|_| {
            line.clear();
            assert!(r.read_line(&mut line).unwrap() > 0, "the stream goes on");
            serde_json::from_str(&line).unwrap()
        })
        .collect()
}

#[test]
fn sightings_are_answered_newest_first_and_followed_across_a_disconnect() {
    let dir = tempfile::tempdir().unwrap();
    let db = archive(dir.path(), 300);
    let first = sighting_ids(&db);
    assert_eq!(first.len(), 100);
    let server = serve(&db, &["--listen", "127.0.0.1:0"]);
    // Newest first.
    let a = get(server.addr, "/api/v1/sightings?limit=3");
    assert_eq!(a.status, 200, "{}", a.text());
    let newest: Vec<u64> = json_lines(&a.text())
        .iter()
        .map(|v| v["id"].as_u64().unwrap())
        .collect();
    assert_eq!(
        newest,
        first.iter().rev().take(3).copied().collect::<Vec<_>>()
    );
    // After an ID, oldest first; bad parameters are 400.
    let a = get(
        server.addr,
        &format!("/api/v1/sightings?after={}&limit=2", first[10]),
    );
    let v = json_lines(&a.text());
    assert_eq!(v.len(), 2);
    assert_eq!(v[0]["id"].as_u64(), Some(first[11]));
    assert_eq!(v[0]["matcher"], "intel");
    assert_eq!(v[0]["indicator"], "6.6.6.6");
    assert_eq!(get(server.addr, "/api/v1/sightings?limit=0").status, 400);
    assert_eq!(get(server.addr, "/api/v1/sightings?nope=1").status, 400);
    // A follower reads 40, goes away; more are committed; it comes back after the last it
    // read and gets the rest: each once, in order.
    let part = follow(server.addr, "/api/v1/sightings?follow=true&after=0", 40);
    let last = part.last().unwrap()["id"].as_u64().unwrap();
    import(dir.path(), &db, 300, 300);
    let all = sighting_ids(&db);
    assert_eq!(all.len(), 200);
    let rest_n = all.iter().filter(|&&id| id > last).count();
    let rest = follow(
        server.addr,
        &format!("/api/v1/sightings?follow=true&after={last}"),
        rest_n,
    );
    let got: Vec<u64> = part
        .iter()
        .chain(&rest)
        .map(|v| v["id"].as_u64().unwrap())
        .collect();
    assert_eq!(got, all, "every sighting once, in ID order");
    // A follower without `after` gets only what is committed from then on.
    let mut late = follow_open(server.addr, "/api/v1/sightings?follow=true");
    import(dir.path(), &db, 600, 3);
    let got = read_lines(&mut late, 1);
    let newest = *sighting_ids(&db).last().unwrap();
    assert_eq!(got[0]["id"].as_u64(), Some(newest));
    assert!(server.stop().success());
}

/// A webhook receiver: answers 500 to the first `fail` requests, hangs up on the next one,
/// then 200 until `down` is set (then 503); records the sighting IDs it accepted.
struct Receiver {
    addr: SocketAddr,
    got: Arc<Mutex<Vec<u64>>>,
    down: Arc<AtomicBool>,
}

fn receiver(fail: usize) -> Receiver {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let down = Arc::new(AtomicBool::new(false));
    let (g, d) = (got.clone(), down.clone());
    std::thread::spawn(move || {
        for (n, c) in l.incoming().enumerate() {
            let Ok(mut c) = c else { continue };
            let mut r = BufReader::new(c.try_clone().unwrap());
            let mut len = 0;
            let mut id = None;
            let mut line = String::new();
            loop {
                line.clear();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if let Some(v) = lower.strip_prefix("x-weir-sighting-id:") {
                    id = Some(v.trim().parse::<u64>().unwrap());
                }
            }
            let mut body = vec![0; len];
            let _ = r.read_exact(&mut body);
            if n == fail {
                continue; // hang up without an answer
            }
            let status = if n < fail || d.load(Ordering::SeqCst) {
                "500 No"
            } else {
                "200 OK"
            };
            if status.starts_with("200") {
                let v: Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(v["id"].as_u64(), id, "the header names the body's sighting");
                g.lock().unwrap().push(id.unwrap());
            }
            let _ = write!(
                c,
                "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    Receiver { addr, got, down }
}

#[test]
fn the_webhook_delivers_every_sighting_in_order_despite_failures() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, db) = db_dir();
    let f = write(dir.path(), "ips.txt", "6.6.6.6\n");
    ok(&add(&db, "feed", &["--type", "addr"], &f), "intel add");
    // An archive without sightings yet (events 1 and 2 do not match).
    import(dir.path(), &db, 1, 2);
    let rx = receiver(3);
    // Down while the import runs: the import does not wait for it.
    rx.down.store(true, Ordering::SeqCst);
    let url = format!("http://{}/hook", rx.addr);
    let server = serve(&db, &["--listen", "127.0.0.1:0", "--webhook", &url]);
    import(dir.path(), &db, 3, 900);
    let all = sighting_ids(&db);
    assert_eq!(all.len(), 300);
    assert!(
        rx.got.lock().unwrap().is_empty(),
        "nothing accepted while down"
    );
    rx.down.store(false, Ordering::SeqCst);
    // Generous: the pause before a retry grows to 30 s while the receiver is down, and a
    // loaded machine runs many tests at once.
    wait_for("every sighting delivered", Duration::from_secs(300), || {
        rx.got.lock().unwrap().len() >= all.len()
    });
    let got = rx.got.lock().unwrap().clone();
    assert_eq!(got, all, "each once and in order (no restart in between)");
    assert!(server.stop().success());
    // Restarted: the cursor holds; only new sightings go out.
    let server = serve(&db, &["--listen", "127.0.0.1:0", "--webhook", &url]);
    import(dir.path(), &db, 903, 30);
    let all = sighting_ids(&db);
    wait_for(
        "the new sightings delivered",
        Duration::from_secs(60),
        || rx.got.lock().unwrap().len() >= all.len(),
    );
    std::thread::sleep(Duration::from_millis(600));
    let got: Vec<u64> = rx.got.lock().unwrap().clone();
    assert_eq!(got, all);
    let distinct: BTreeSet<&u64> = got.iter().collect();
    assert_eq!(distinct.len(), got.len());
    assert!(server.stop().success());
}

#[test]
fn the_page_lists_the_newest_sightings_and_opens_their_evidence() {
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let (Some(_), Some(page)) = (crate::serve::chromium(), crate::serve::driver()) else {
        assert!(
            !ci,
            "CI=true but no chromium with Python's playwright: .ci/run installs them"
        );
        println!("skipped: no chromium with Python's playwright to render the page");
        return;
    };
    let script = page.with_file_name("sightings.py");
    let dir = tempfile::tempdir().unwrap();
    let db = archive(dir.path(), 300);
    let server = serve(&db, &["--listen", "127.0.0.1:0"]);
    let shot = dir.path().join("sightings.png");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(format!("http://{}/", server.addr))
        .arg(&shot)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["errors"], serde_json::json!([]), "{v}");
    // The newest 20, newest first, as the archive holds them.
    let ids: Vec<u64> = v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    let want: Vec<u64> = sighting_ids(&db).into_iter().rev().take(20).collect();
    assert_eq!(ids, want);
    let first = v["texts"][0].as_str().unwrap();
    assert!(
        first.contains("feed") && first.contains("6.6.6.6") && first.contains("zeek.conn"),
        "{first}"
    );
    // The link opens the evidence: one conn event to 6.6.6.6.
    let q = v["query"].as_str().unwrap();
    assert!(q.starts_with("#id == "), "{q}");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    assert!(rows[0].to_string().contains("6.6.6.6"), "{v}");
    assert_eq!(v["all_query"], "#type == \"weir.sighting\"");
    assert!(shot.exists());
    assert!(server.stop().success());
}

#[test]
fn the_intel_api_changes_sets_only_with_the_token() {
    use crate::serve::request;
    let dir = tempfile::tempdir().unwrap();
    let db = archive(dir.path(), 3);
    // Without a token: reads, no writes.
    let server = serve(&db, &["--listen", "127.0.0.1:0"]);
    let a = get(server.addr, "/api/v1/intel");
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(a.json()["sets"][0]["name"], "feed");
    let a = request(
        server.addr,
        "POST",
        "/api/v1/intel/x",
        &[],
        r#"{"text":"1.2.3.4","type":"addr"}"#,
    );
    assert_eq!(a.status, 403, "{}", a.text());
    assert_eq!(
        request(server.addr, "DELETE", "/api/v1/intel/feed", &[], "").status,
        403
    );
    assert!(server.stop().success());
    // With one: the writes need it.
    let token_file = dir.path().join("token");
    let server = serve(
        &db,
        &["--listen", "127.0.0.1:0", "--token-file", s(&token_file)],
    );
    let token = std::fs::read_to_string(&token_file).unwrap();
    let auth = format!("Authorization: Bearer {}", token.trim());
    let h = [auth.as_str()];
    let feed = "#fields\tindicator\tindicator_type\tmeta.source\n7.7.7.7\tIntel::ADDR\tacme\nevil.example\tIntel::DOMAIN\tacme\n";
    let body = serde_json::json!({ "text": feed }).to_string();
    assert_eq!(
        request(server.addr, "POST", "/api/v1/intel/c2", &[], &body).status,
        401
    );
    let a = request(server.addr, "POST", "/api/v1/intel/c2", &h, &body);
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(
        (a.json()["added"].as_u64(), a.json()["version"].as_u64()),
        (Some(2), Some(1))
    );
    let a = request(server.addr, "GET", "/api/v1/intel/c2", &h, "");
    let shown = json_lines(&a.text());
    assert_eq!(shown.len(), 2);
    assert_eq!(shown[0]["meta"]["source"], "acme");
    // A bad line: 400 naming it, nothing stored.
    let bad = serde_json::json!({ "text": "1.2.3.4\n10.0.0.300\n", "type": "addr" }).to_string();
    let a = request(server.addr, "POST", "/api/v1/intel/c2", &h, &bad);
    assert_eq!(a.status, 400, "{}", a.text());
    assert!(a.text().contains("request:2"), "{}", a.text());
    // The running server's sets are what the CLI sees; an import matches them.
    let listed = ok(&run(&["intel", "list", "--db", s(&db)]), "list");
    assert!(listed.contains("c2\tversion 1\t2 indicators"), "{listed}");
    let l = write(
        dir.path(),
        "b.log",
        &log(100, 1).replace("10.0.0.2", "7.7.7.7"),
    );
    ok(&run(&["import", "-q", "--db", s(&db), s(&l)]), "import");
    let a = get_with(server.addr, "/api/v1/sightings?limit=1", &h);
    assert_eq!(a.json()["indicator"], "7.7.7.7", "{}", a.text());
    let a = request(
        server.addr,
        "POST",
        "/api/v1/intel/c2/remove",
        &h,
        r#"{"values":["7.7.7.7"]}"#,
    );
    assert_eq!(a.json()["removed"].as_u64(), Some(1), "{}", a.text());
    let a = request(server.addr, "DELETE", "/api/v1/intel/c2", &h, "");
    assert_eq!(a.json()["deleted"], true);
    assert_eq!(
        request(server.addr, "GET", "/api/v1/intel/c2", &h, "").status,
        404
    );
    assert!(server.stop().success());
}

fn get_with(addr: SocketAddr, path: &str, headers: &[&str]) -> crate::serve::Answer {
    crate::serve::request(addr, "GET", path, headers, "")
}

/// The (event uid, mode) of the archive's sightings.
fn sighting_modes(db: &Path) -> Vec<(String, String)> {
    crate::live_match::sightings_with_uids(db)
        .into_iter()
        .map(|(uid, v)| (uid, v["mode"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn serve_matches_a_new_set_against_the_past_in_the_background() {
    // A pipeline follows a log into the archive: its writer records the set's sightings of
    // the past, beside the live ones of what arrives later; each event once.
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let db = dir.path().join("db");
    let pipeline = write(
        dir.path(),
        "live.toml",
        &format!(
            "[sources.zeek]\ntype = \"file\"\npaths = [\"{}/*.log\"]\nfollow = true\n\n\
             [transforms.batch]\ntype = \"batch\"\ninputs = [\"zeek\"]\ntimeout = \"200ms\"\n\n\
             [sinks.archive]\ntype = \"archive\"\ninputs = [\"batch\"]\ndb = \"{}\"\n",
            s(&logs),
            s(&db)
        ),
    );
    let conn = logs.join("conn.log");
    std::fs::write(&conn, log(0, 300)).unwrap();
    let server = serve(&db, &["--listen", "127.0.0.1:0", s(&pipeline)]);
    let events = |db: &Path| -> u64 {
        let out = run(&["count", "--db", s(db), "#type == \"zeek.conn\""]);
        crate::common::cli::text(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0)
    };
    wait_for("300 events", Duration::from_secs(60), || events(&db) == 300);
    let f = write(dir.path(), "ips.txt", "6.6.6.6\n");
    ok(&add(&db, "late", &["--type", "addr"], &f), "intel add");
    wait_for("100 retro sightings", Duration::from_secs(60), || {
        sighting_ids(&db).len() >= 100
    });
    // More lines: matched live.
    let mut more = log(300, 300);
    more = more
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&conn)
        .unwrap();
    file.write_all(more.as_bytes()).unwrap();
    drop(file);
    wait_for("600 events", Duration::from_secs(60), || events(&db) == 600);
    wait_for("200 sightings", Duration::from_secs(60), || {
        sighting_ids(&db).len() >= 200
    });
    std::thread::sleep(Duration::from_millis(1500));
    let got = sighting_modes(&db);
    let uids: BTreeSet<&String> = got.iter().map(|(u, _)| u).collect();
    assert_eq!(
        (got.len(), uids.len()),
        (200, 200),
        "each event once: {got:?}"
    );
    let retro = got.iter().filter(|(_, m)| m == "retro").count();
    let live = got.iter().filter(|(_, m)| m == "live").count();
    assert_eq!(retro + live, 200);
    assert!(retro >= 100 && live >= 1, "retro {retro}, live {live}");
    assert!(server.stop().success());
    assert!(db.join("intel/late.retro").exists(), "the marker");
}

/// The (evidence ID, mode) of set `set`'s sightings, sorted.
fn set_sightings(db: &Path, set: &str) -> Vec<(u64, String)> {
    let expr = format!("#type == \"weir.sighting\" && name == \"{set}\"");
    let out = run(&["export", "--db", s(db), "--to", "json", &expr]);
    if !out.status.success() {
        return Vec::new(); // no sighting yet
    }
    let mut v: Vec<(u64, String)> = json_lines(&crate::common::cli::text(&out.stdout))
        .iter()
        .map(|j| {
            (
                j["event_id"].as_u64().unwrap(),
                j["mode"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

/// `weir serve` with no pipeline writing its archive matches a set added while it runs
/// against the archive's past, each sighting once and marked `retro`; an import meanwhile
/// still runs (the match's lock is a brief one), and a restarted server adds nothing.
#[test]
fn a_server_without_a_pipeline_matches_a_new_set_against_the_past() {
    let dir = tempfile::tempdir().unwrap();
    let db = archive(dir.path(), 300);
    let evidence = || {
        let expr = "#type == \"zeek.conn\" && id.resp_h == 10.0.0.2 | select #id";
        let out = ok(
            &run(&["export", "--db", s(&db), "--to", "json", expr]),
            "export",
        );
        json_lines(&out)
            .iter()
            .map(|v| v["#id"].as_u64().unwrap())
            .collect::<Vec<u64>>()
    };
    let past = evidence();
    assert_eq!(past.len(), 200);
    let server = serve(&db, &["--listen", "127.0.0.1:0"]);
    let want: Vec<(u64, String)> = past.iter().map(|&i| (i, "retro".to_string())).collect();
    let f = write(dir.path(), "late.txt", "10.0.0.2\n");
    ok(&add(&db, "late", &["--type", "addr"], &f), "intel add");
    // Imports run while the server may be matching: each waits for the match, none fails.
    for k in 0..3 {
        import(dir.path(), &db, 300 + k * 10, 10);
    }
    wait_for("the retro sightings", Duration::from_secs(60), || {
        set_sightings(&db, "late")
            .iter()
            .filter(|(_, m)| m == "retro")
            .count()
            >= want.len()
    });
    let got = set_sightings(&db, "late");
    let retro: Vec<_> = got.iter().filter(|(_, m)| m == "retro").cloned().collect();
    assert_eq!(
        retro, want,
        "every past event once, none of the later imports"
    );
    // The later imports' events are matched live, each once (and never again by retro).
    let live: Vec<u64> = got
        .iter()
        .filter(|(_, m)| m == "live")
        .map(|(i, _)| *i)
        .collect();
    let later: Vec<u64> = evidence()
        .into_iter()
        .filter(|i| !past.contains(i))
        .collect();
    assert_eq!(later.len(), 20);
    assert_eq!(live, later, "the later events matched live, each once");
    // Three polls later, nothing more.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(set_sightings(&db, "late"), got);
    assert!(server.stop().success());
    let server = serve(&db, &["--listen", "127.0.0.1:0"]);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        set_sightings(&db, "late"),
        got,
        "a restart matches nothing again"
    );
    assert!(server.stop().success());
}
