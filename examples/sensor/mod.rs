//! `generate --sensor DIR`: one sensor's view of the same flows from Zeek and Suricata
//! (issue 57). Each flow has one 5-tuple, one time and one Community ID (v1, seed 0, computed
//! with weir's own `community_id_v1`, which `tests/it/community_id.rs` checks against the
//! reference implementation), and is written as:
//!
//! - Zeek: `conn.log` (without `community_id`, as most sensors write it: weir computes it
//!   at import) and `conn_cid.log` (the same flows' first 10%, with the `community-id`
//!   package's column), plus `dns.log`, `http.log` and `ssl.log` for the flows of those
//!   applications, with the flow's `uid`;
//! - Suricata: `eve.json` with a `flow` event per flow and, by application, `dns`, `http`
//!   and `tls` events; an `alert` for every 10th flow (signature 2000000 + flow % 7), a
//!   `fileinfo` for every 4th HTTP flow, an `anomaly` for every 50th flow and a `stats`
//!   event per 1,000 flows. Times carry Suricata's `+0000` offset.
//!
//! Deterministic for a given seed.

use std::io::{self, BufWriter, Write};
use std::net::IpAddr;
use std::path::Path;

use weir::unstable::codec::community_id::{community_id_v1, FlowTuple};

use super::{addr, header, Rng};

/// One flow, as both sensors see it.
struct Flow {
    n: u64,
    /// Microseconds since the epoch.
    us: u64,
    uid: String,
    orig: (String, u16),
    resp: (String, u16),
    proto: &'static str,
    app: &'static str,
    cid: Option<String>,
    bytes: (u64, u64),
    pkts: (u64, u64),
}

fn flow(rng: &mut Rng, n: u64) -> Flow {
    let app = ["dns", "http", "tls", "-"][rng.below(4) as usize];
    let (proto, port) = match app {
        "dns" => ("udp", 53),
        "http" => ("tcp", 80),
        "tls" => ("tcp", 443),
        _ => ("tcp", [22u16, 25, 8080][rng.below(3) as usize]),
    };
    let orig = (
        format!(
            "10.{}.{}.{}",
            rng.below(4),
            rng.below(256),
            1 + rng.below(254)
        ),
        1024 + rng.below(60_000) as u16,
    );
    let resp = (addr(rng), port);
    let number = if proto == "udp" { 17 } else { 6 };
    let cid = match (orig.0.parse::<IpAddr>(), resp.0.parse::<IpAddr>()) {
        (Ok(src), Ok(dst)) => community_id_v1(
            0,
            &FlowTuple {
                proto: number,
                src,
                dst,
                ports: Some((orig.1, resp.1)),
            },
        ),
        _ => None,
    };
    Flow {
        n,
        us: 1_258_531_221_000_000 + n * 20_000 + rng.below(10_000),
        uid: format!("CS{n:016x}"),
        orig,
        resp,
        proto,
        app,
        cid,
        bytes: (rng.below(100_000), rng.below(2_000_000)),
        pkts: (1 + rng.below(500), 1 + rng.below(500)),
    }
}

fn zeek_ts(us: u64) -> String {
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}

/// ISO 8601 with Suricata's offset: `2009-11-18T08:00:21.123456+0000`.
fn eve_ts(us: u64) -> String {
    let secs = us / 1_000_000;
    let days = secs / 86_400;
    let (y, m, d) = civil(days as i64);
    let s = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}+0000",
        s / 3600,
        s / 60 % 60,
        s % 60,
        us % 1_000_000
    )
}

/// The date of a day since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The EVE members every event of `f` starts with.
fn eve_head(f: &Flow, event_type: &str, us: u64) -> String {
    let cid = f
        .cid
        .as_ref()
        .map(|c| format!(r#","community_id":"{c}""#))
        .unwrap_or_default();
    format!(
        r#"{{"timestamp":"{}","flow_id":{},"event_type":"{event_type}","src_ip":"{}","src_port":{},"dest_ip":"{}","dest_port":{},"proto":"{}"{cid}"#,
        eve_ts(us),
        1_000_000_000_000 + f.n,
        f.orig.0,
        f.orig.1,
        f.resp.0,
        f.resp.1,
        f.proto.to_uppercase()
    )
}

const HOSTS: &[&str] = &[
    "www.example.org",
    "cdn.example.net",
    "update.example.com",
    "evil.test",
];

/// Writes the sensor's files for `flows` flows into `dir` (created if needed).
pub fn write(dir: &Path, flows: u64, seed: u64) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let open = |name: &str| -> io::Result<BufWriter<std::fs::File>> {
        Ok(BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(dir.join(name))?,
        ))
    };
    let (mut conn, mut conn_cid, mut dns, mut http, mut ssl, mut eve) = (
        open("conn.log")?,
        open("conn_cid.log")?,
        open("dns.log")?,
        open("http.log")?,
        open("ssl.log")?,
        open("eve.json")?,
    );
    let conn_fields = "ts uid id.orig_h id.orig_p id.resp_h id.resp_p proto service duration orig_bytes resp_bytes conn_state orig_pkts resp_pkts";
    let conn_types =
        "time string addr port addr port enum string interval count count string count count";
    header(&mut conn, "conn", conn_fields, conn_types)?;
    header(
        &mut conn_cid,
        "conn",
        &format!("{conn_fields} community_id"),
        &format!("{conn_types} string"),
    )?;
    header(
        &mut dns,
        "dns",
        "ts uid id.orig_h id.orig_p id.resp_h id.resp_p proto trans_id query qtype_name rcode_name",
        "time string addr port addr port enum count string string string",
    )?;
    header(
        &mut http,
        "http",
        "ts uid id.orig_h id.orig_p id.resp_h id.resp_p trans_depth method host uri user_agent status_code",
        "time string addr port addr port count string string string string count",
    )?;
    header(
        &mut ssl,
        "ssl",
        "ts uid id.orig_h id.orig_p id.resp_h id.resp_p version server_name established",
        "time string addr port addr port string string bool",
    )?;
    let mut rng = Rng(seed.max(1));
    for n in 0..flows {
        let f = flow(&mut rng, n);
        let host = HOSTS[rng.below(HOSTS.len() as u64) as usize];
        let (t, dur) = (zeek_ts(f.us), rng.below(5_000_000));
        let service = match f.app {
            "tls" => "ssl",
            other => other,
        };
        let row = format!(
            "{t}\t{}\t{}\t{}\t{}\t{}\t{}\t{service}\t{}.{:06}\t{}\t{}\tSF\t{}\t{}",
            f.uid,
            f.orig.0,
            f.orig.1,
            f.resp.0,
            f.resp.1,
            f.proto,
            dur / 1_000_000,
            dur % 1_000_000,
            f.bytes.0,
            f.bytes.1,
            f.pkts.0,
            f.pkts.1
        );
        writeln!(conn, "{row}")?;
        if n < flows / 10 {
            writeln!(conn_cid, "{row}\t{}", f.cid.as_deref().unwrap_or("-"))?;
        }
        let id = format!("{}\t{}\t{}\t{}", f.orig.0, f.orig.1, f.resp.0, f.resp.1);
        let app_us = f.us + 1_000;
        match f.app {
            "dns" => {
                let q = format!("h{}.{host}", n % 100);
                writeln!(
                    dns,
                    "{}\t{}\t{id}\tudp\t{}\t{q}\tA\tNOERROR",
                    zeek_ts(app_us),
                    f.uid,
                    n % 65_536
                )?;
                writeln!(
                    eve,
                    r#"{},"dns":{{"version":3,"type":"request","tx_id":0,"id":{},"rrname":"{q}","rrtype":"A"}}}}"#,
                    eve_head(&f, "dns", app_us),
                    n % 65_536
                )?;
            }
            "http" => {
                let uri = format!("/p/{n}");
                let ua = "Mozilla/5.0 (X11; Linux x86_64)";
                writeln!(
                    http,
                    "{}\t{}\t{id}\t1\tGET\t{host}\t{uri}\t{ua}\t200",
                    zeek_ts(app_us),
                    f.uid
                )?;
                writeln!(
                    eve,
                    r#"{},"http":{{"hostname":"{host}","url":"{uri}","http_user_agent":"{ua}","http_method":"GET","protocol":"HTTP/1.1","status":200,"length":{}}}}}"#,
                    eve_head(&f, "http", app_us),
                    f.bytes.1
                )?;
                if n % 4 == 0 {
                    writeln!(
                        eve,
                        r#"{},"app_proto":"http","fileinfo":{{"filename":"{uri}","gaps":false,"state":"CLOSED","stored":false,"size":{},"tx_id":0}}}}"#,
                        eve_head(&f, "fileinfo", app_us + 500),
                        f.bytes.1
                    )?;
                }
            }
            "tls" => {
                writeln!(
                    ssl,
                    "{}\t{}\t{id}\tTLSv13\t{host}\tT",
                    zeek_ts(app_us),
                    f.uid
                )?;
                writeln!(
                    eve,
                    r#"{},"tls":{{"sni":"{host}","version":"TLS 1.3"}}}}"#,
                    eve_head(&f, "tls", app_us)
                )?;
            }
            _ => {}
        }
        if n % 10 == 0 {
            writeln!(
                eve,
                r#"{},"alert":{{"action":"allowed","gid":1,"signature_id":{},"rev":1,"signature":"weir test signature {}","category":"Misc activity","severity":3}},"app_proto":"{}"}}"#,
                eve_head(&f, "alert", app_us + 200),
                2_000_000 + n % 7,
                n % 7,
                if f.app == "-" { "failed" } else { f.app }
            )?;
        }
        if n % 50 == 0 {
            writeln!(
                eve,
                r#"{},"anomaly":{{"type":"stream","event":"stream.pkt_invalid_timestamp","layer":"proto_detect"}}}}"#,
                eve_head(&f, "anomaly", app_us + 300)
            )?;
        }
        writeln!(
            eve,
            r#"{},"app_proto":"{}","flow":{{"pkts_toserver":{},"pkts_toclient":{},"bytes_toserver":{},"bytes_toclient":{},"start":"{}","end":"{}","age":{},"state":"closed","reason":"timeout","alerted":{}}}}}"#,
            eve_head(&f, "flow", f.us + dur),
            if f.app == "-" { "failed" } else { f.app },
            f.pkts.0,
            f.pkts.1,
            f.bytes.0,
            f.bytes.1,
            eve_ts(f.us),
            eve_ts(f.us + dur),
            dur / 1_000_000,
            n % 10 == 0
        )?;
        if n % 1000 == 999 {
            writeln!(
                eve,
                r#"{{"timestamp":"{}","event_type":"stats","stats":{{"uptime":{},"decoder":{{"pkts":{},"bytes":{}}},"flow":{{"memuse":7074304}}}}}}"#,
                eve_ts(f.us + 1),
                n / 50,
                n * 20,
                n * 15_000
            )?;
        }
    }
    for mut w in [conn, conn_cid, dns, http, ssl] {
        writeln!(w, "#close\t2026-11-30-00-10-00")?;
        w.flush()?;
    }
    eve.flush()
}
