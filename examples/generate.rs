//! Writes synthetic but realistic Zeek TSV logs (conn, dns, http) to stdout.
//!
//! ```sh
//! cargo run --release --example generate -- --events 100000 --log mix > sample.log
//! ```
//!
//! The output is deterministic for a given `--seed`, uses the header layout Zeek 2.x writes, and
//! exercises what real logs contain: unset fields, `(empty)` containers, IPv6 addresses,
//! vectors with several elements, `\xHH` escapes and non-monotonic timestamps. The benchmark
//! scripts use it when the shared corpus is absent, and `bench/query.sh` for its needles:
//!
//! - `--unique-uids`: every event's `uid` is distinct (random uids collide rarely, but do),
//!   so that a uid lookup has exactly one answer;
//! - `--rare-addr ADDR` (with `--rare-every N`, default 1,000,000): `id.resp_h` is `ADDR` in
//!   events N/2, N/2 + N, N/2 + 2N, … (counted from 0 across all logs) and nowhere else, as
//!   long as ADDR is outside what the generator draws (use `240.0.0.0/4`, say).
//! - `--sensor DIR`: instead of stdout, `--events` flows as Zeek and Suricata both see them:
//!   `DIR/conn.log`, `conn_cid.log`, `dns.log`, `http.log`, `ssl.log` and `DIR/eve.json`,
//!   with the same 5-tuples, times and Community IDs (see `examples/sensor/mod.rs`).

use std::io::{self, BufWriter, Write};

mod sensor;

/// A small deterministic PRNG (xorshift64*), so that no dependency is needed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const UID_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

fn uid(rng: &mut Rng) -> String {
    let mut s = String::from("C");
    for _ in 0..17 {
        s.push(UID_CHARS[rng.below(UID_CHARS.len() as u64) as usize] as char);
    }
    s
}

/// A uid that no other event number `k` gives: 11 base-62 digits of a bijective mix of `k`
/// (62^11 > 2^64), then 6 random characters, 18 in all like Zeek's.
fn unique_uid(rng: &mut Rng, k: u64) -> String {
    // Odd multipliers and xor-shifts are invertible on u64, so distinct k stay distinct.
    let mut x = k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 29;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 32;
    let mut s = String::from("C");
    for _ in 0..11 {
        s.push(UID_CHARS[(x % 62) as usize] as char);
        x /= 62;
    }
    for _ in 0..6 {
        s.push(UID_CHARS[rng.below(UID_CHARS.len() as u64) as usize] as char);
    }
    s
}

/// The generator's state: the PRNG, the options, and the number of events written.
struct Gen {
    rng: Rng,
    unique_uids: bool,
    rare: Option<(String, u64)>,
    events: u64,
}

impl Gen {
    /// Starts the next event: its uid.
    fn uid(&mut self) -> String {
        self.events += 1;
        if self.unique_uids {
            unique_uid(&mut self.rng, self.events - 1)
        } else {
            uid(&mut self.rng)
        }
    }

    /// The responder address of the current event.
    fn resp_h(&mut self) -> String {
        match &self.rare {
            Some((a, every)) if (self.events - 1) % every == every / 2 => a.clone(),
            _ => addr(&mut self.rng),
        }
    }
}

fn addr(rng: &mut Rng) -> String {
    if rng.below(50) == 0 {
        format!(
            "fe80::{:x}:{:x}:{:x}",
            rng.below(0xffff),
            rng.below(0xffff),
            rng.below(0xffff)
        )
    } else if rng.below(2) == 0 {
        format!("192.168.{}.{}", rng.below(4), 1 + rng.below(254))
    } else {
        format!(
            "{}.{}.{}.{}",
            1 + rng.below(223),
            rng.below(256),
            rng.below(256),
            1 + rng.below(254)
        )
    }
}

fn header(out: &mut impl Write, path: &str, fields: &str, types: &str) -> io::Result<()> {
    writeln!(out, "#separator \\x09")?;
    writeln!(out, "#set_separator\t,")?;
    writeln!(out, "#empty_field\t(empty)")?;
    writeln!(out, "#unset_field\t-")?;
    writeln!(out, "#path\t{path}")?;
    writeln!(out, "#open\t2026-11-30-00-00-00")?;
    writeln!(out, "#fields\t{}", fields.replace(' ', "\t"))?;
    writeln!(out, "#types\t{}", types.replace(' ', "\t"))
}

fn ts(rng: &mut Rng, i: u64) -> String {
    // Mostly increasing with jitter, like a real sensor's log.
    let base = 1_258_531_221_000_000u64 + i * 50_000 + rng.below(2_000_000);
    format!("{}.{:06}", base / 1_000_000, base % 1_000_000)
}

fn conn(out: &mut impl Write, g: &mut Gen, n: u64) -> io::Result<()> {
    header(
        out,
        "conn",
        "ts uid id.orig_h id.orig_p id.resp_h id.resp_p proto service duration orig_bytes resp_bytes conn_state local_orig missed_bytes history orig_pkts orig_ip_bytes resp_pkts resp_ip_bytes tunnel_parents",
        "time string addr port addr port enum string interval count count string bool count string count count count count table[string]",
    )?;
    for i in 0..n {
        let rng = &mut g.rng;
        let proto = rng.pick(&["tcp", "tcp", "tcp", "udp", "udp", "icmp"]);
        let service = rng.pick(&["-", "-", "http", "dns", "ssl", "smtp"]);
        let unset = rng.below(5) == 0;
        let dur = if unset {
            "-".to_string()
        } else {
            format!("{}.{:06}", rng.below(100), rng.below(1_000_000))
        };
        let (ob, rb) = if unset {
            ("-".to_string(), "-".to_string())
        } else {
            (
                rng.below(100_000).to_string(),
                rng.below(2_000_000).to_string(),
            )
        };
        let (t, u) = (ts(&mut g.rng, i), g.uid());
        let (orig_h, orig_p) = (addr(&mut g.rng), 1024 + g.rng.below(64_000));
        let resp_h = g.resp_h();
        let rng = &mut g.rng;
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{}\t{proto}\t{service}\t{dur}\t{ob}\t{rb}\t{}\t{}\t0\t{}\t{}\t{}\t{}\t{}\t(empty)",
            t,
            u,
            orig_h,
            orig_p,
            resp_h,
            rng.pick(&["80", "443", "53", "25", "22", "123"]),
            rng.pick(&["SF", "S0", "REJ", "RSTO", "OTH"]),
            rng.pick(&["-", "T", "F"]),
            rng.pick(&["ShADadFf", "D", "Dd", "S", "ShAdDaFf"]),
            rng.below(500),
            rng.below(50_000),
            rng.below(500),
            rng.below(500_000),
        )?;
    }
    writeln!(out, "#close\t2026-11-30-00-10-00")
}

fn dns(out: &mut impl Write, g: &mut Gen, n: u64) -> io::Result<()> {
    header(
        out,
        "dns",
        "ts uid id.orig_h id.orig_p id.resp_h id.resp_p proto trans_id query qclass qclass_name qtype qtype_name rcode rcode_name AA TC RD RA Z answers TTLs rejected",
        "time string addr port addr port enum count string count string count string count string bool bool bool bool count vector[string] vector[interval] bool",
    )?;
    for i in 0..n {
        let rng = &mut g.rng;
        let query = rng.pick(&[
            "example.com",
            "www.google.com",
            "_ldap._tcp.dc._msdcs.corp",
            "time.windows.com",
        ]);
        let answers = match rng.below(3) {
            0 => ("-".to_string(), "-".to_string()),
            1 => (addr(rng), format!("{}.000000", rng.below(86_400))),
            _ => (
                format!(
                    "{},{},v=spf1 include:_spf.example.com ~all",
                    addr(rng),
                    addr(rng)
                ),
                format!("{}.000000,300.000000,3600.000000", rng.below(600)),
            ),
        };
        let (t, u) = (ts(&mut g.rng, i), g.uid());
        let (orig_h, orig_p) = (addr(&mut g.rng), 1024 + g.rng.below(64_000));
        let resp_h = g.resp_h();
        let rng = &mut g.rng;
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t53\tudp\t{}\t{query}\t1\tC_INTERNET\t{}\t{}\t0\tNOERROR\t{}\tF\tT\t{}\t0\t{}\t{}\tF",
            t,
            u,
            orig_h,
            orig_p,
            resp_h,
            rng.below(65_536),
            rng.pick(&["1", "28", "16", "33"]),
            rng.pick(&["A", "AAAA", "TXT", "SRV"]),
            rng.pick(&["T", "F"]),
            rng.pick(&["T", "F"]),
            answers.0,
            answers.1,
        )?;
    }
    writeln!(out, "#close\t2026-11-30-00-10-00")
}

fn http(out: &mut impl Write, g: &mut Gen, n: u64) -> io::Result<()> {
    header(
        out,
        "http",
        "ts uid id.orig_h id.orig_p id.resp_h id.resp_p trans_depth method host uri referrer user_agent request_body_len response_body_len status_code status_msg info_code info_msg filename tags username password proxied mime_type md5 extraction_file",
        "time string addr port addr port count string string string string string count count count string count string string table[enum] string string table[string] string string file",
    )?;
    for i in 0..n {
        let rng = &mut g.rng;
        let uri = rng.pick(&[
            "/index.html",
            "/search?q=a,b&lang=en",
            "/%E4%B8%AD\\xe4\\xb8\\xad/file.cab?0911180916",
            "/img/\\xff\\xfe.png",
        ]);
        let (t, u) = (ts(&mut g.rng, i), g.uid());
        let (orig_h, orig_p) = (addr(&mut g.rng), 1024 + g.rng.below(64_000));
        let resp_h = g.resp_h();
        let rng = &mut g.rng;
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t80\t1\t{}\t{}\t{uri}\t-\tMozilla/5.0 (Windows; U; Windows NT 6.0; en-US)\t0\t{}\t{}\t{}\t-\t-\t-\t(empty)\t-\t-\t-\t{}\t-\t-",
            t,
            u,
            orig_h,
            orig_p,
            resp_h,
            rng.pick(&["GET", "GET", "POST", "HEAD"]),
            rng.pick(&["download.windowsupdate.com", "www.example.org", "cdn.example.net"]),
            rng.below(100_000),
            rng.pick(&["200", "200", "304", "404"]),
            rng.pick(&["OK", "Not Modified", "Not Found"]),
            rng.pick(&["text/html", "image/png", "-"]),
        )?;
    }
    writeln!(out, "#close\t2026-11-30-00-10-00")
}

fn main() -> io::Result<()> {
    let mut events = 10_000u64;
    let mut log = String::from("conn");
    let mut seed = 42u64;
    let mut unique_uids = false;
    let mut rare_addr = None;
    let mut rare_every = 1_000_000u64;
    let mut sensor_dir: Option<std::path::PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next().ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("{a} needs a value"))
            })
        };
        match a.as_str() {
            "--events" => events = value()?.parse().map_err(io::Error::other)?,
            "--log" => log = value()?,
            "--seed" => seed = value()?.parse().map_err(io::Error::other)?,
            "--unique-uids" => unique_uids = true,
            "--sensor" => sensor_dir = Some(value()?.into()),
            "--rare-addr" => rare_addr = Some(value()?),
            "--rare-every" => {
                rare_every = value()?.parse().map_err(io::Error::other)?;
                if rare_every == 0 {
                    return Err(io::Error::other("--rare-every must be at least 1"));
                }
            }
            _ => {
                eprintln!(
                    "usage: generate [--events N] [--log conn|dns|http|mix] [--seed N] \
                     [--unique-uids] [--rare-addr ADDR [--rare-every N]] [--sensor DIR]"
                );
                std::process::exit(2);
            }
        }
    }
    if let Some(dir) = sensor_dir {
        return sensor::write(&dir, events, seed);
    }
    let mut g = Gen {
        rng: Rng(seed.max(1)),
        unique_uids,
        rare: rare_addr.map(|a| (a, rare_every)),
        events: 0,
    };
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
    let result = match log.as_str() {
        "conn" => conn(&mut out, &mut g, events),
        "dns" => dns(&mut out, &mut g, events),
        "http" => http(&mut out, &mut g, events),
        "mix" => {
            // Blocks of each log type, as `cat conn.log dns.log http.log` would give.
            let mut left = events;
            let mut r = Ok(());
            while left > 0 && r.is_ok() {
                let n = left.min(5_000);
                r = match g.rng.below(3) {
                    0 => conn(&mut out, &mut g, n),
                    1 => dns(&mut out, &mut g, n),
                    _ => http(&mut out, &mut g, n),
                };
                left -= n;
            }
            r
        }
        other => {
            eprintln!("unknown --log {other}: expected conn, dns, http or mix");
            std::process::exit(2);
        }
    };
    match result.and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}
