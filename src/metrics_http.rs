//! The Prometheus endpoint of a running pipeline (`--metrics-listen ADDR`,
//! `[pipeline] metrics_listen`): `GET /metrics` answers with the pipeline's counters in the
//! Prometheus text exposition format (version 0.0.4).
//!
//! # Exposition
//!
//! [`render`] turns the metrics report ([`crate::metrics::Metrics::to_json`], plus the live
//! values the pipeline adds) into metrics, generically, so that a counter added to the report
//! is served without a change here:
//!
//! - a number at the top of the report is a metric `weir_<key>` (`elapsed_seconds`,
//!   `source_bytes_read`, `errors_skipped`);
//! - an object of objects (`"stages": {"input": {...}}`) is a family per numeric member, named
//!   `weir_<group without its plural s>_<member>` and labelled with the group's singular and
//!   the entry's name, plus its string members as labels:
//!   `weir_stage_events_total{stage="input",kind="source"} 8462`,
//!   `weir_edge_in_flight_bytes{edge="input -> batch"} 0`, and per followed file
//!   `weir_file_<member>{file="..."}` when the report has a `files` group;
//! - names are `weir_` plus the key with every character outside `[a-zA-Z0-9_]` as `_`;
//!   label values escape `\`, `"` and newlines as the format requires;
//! - members in [`COUNTERS`] are counters (`# TYPE ... counter`, name ending in `_total`),
//!   everything else a gauge. Every family has one `# HELP` and one `# TYPE` line; [`HELP`]
//!   holds the texts of the known members.
//!
//! # Server
//!
//! An axum router on the pipeline's tokio runtime, served by [`crate::http_server`], for
//! scrapers only: one request per connection (`Connection: close`); the request head is read
//! up to [`MAX_REQUEST_BYTES`] (else `431`) within [`REQUEST_TIMEOUT`] (else the connection is
//! closed); bodies are never read. `GET /metrics` (any query string) is `200`, `HEAD` the same
//! without body, another path `404`, another method `405`, a malformed request `400`. At most
//! [`MAX_CONNECTIONS`] connections are served at once; more wait until one ends. The server
//! stops when the pipeline ends.
//!
//! With a certificate and key (`--metrics-tls-cert`/`--metrics-tls-key`, `[pipeline]
//! metrics_tls_cert`/`metrics_tls_key`) it serves HTTPS only, with the TLS of `weir serve`
//! ([`crate::serve::tls`]: the same files, the same errors, the handshake within
//! [`REQUEST_TIMEOUT`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::http_server::{HttpServer, Limits};

/// The one path served.
pub const PATH: &str = "/metrics";
/// Largest request head accepted (request line and headers).
pub const MAX_REQUEST_BYTES: usize = 8 << 10;
/// Longest time a client may take to send its request head.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Most connections served at once.
pub const MAX_CONNECTIONS: usize = 16;
/// The exposition format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Report members that only grow: exposed as counters with a `_total` suffix.
pub const COUNTERS: &[&str] = &[
    "events",
    "bytes",
    "batches",
    "busy_seconds",
    "blocked_seconds",
    "idle_seconds",
    "source_bytes_read",
    "source_bytes_decompressed",
    "errors_skipped",
];

/// Help texts of the known report members (by member name); others get a generic text.
pub const HELP: &[(&str, &str)] = &[
    ("events", "Events handled by the stage."),
    (
        "bytes",
        "Encoded bytes of the batches handled by the stage.",
    ),
    ("batches", "Batches handled by the stage."),
    ("busy_seconds", "Time the stage spent working."),
    (
        "blocked_seconds",
        "Time the stage spent waiting for downstream (backpressure).",
    ),
    ("idle_seconds", "Time the stage spent waiting for input."),
    ("capacity_bytes", "Byte capacity of the edge."),
    ("in_flight_bytes", "Bytes in flight in the edge now."),
    (
        "max_in_flight_bytes",
        "Most bytes ever in flight in the edge.",
    ),
    ("elapsed_seconds", "Time since the pipeline started."),
    ("source_bytes_read", "Bytes read by the sources, as stored."),
    (
        "source_bytes_decompressed",
        "Bytes the sources decoded after decompression.",
    ),
    (
        "errors_skipped",
        "Rows the sources dropped under on_error = skip.",
    ),
    ("lag_bytes", "Bytes of the followed file not read yet."),
    ("queries_running", "Queries weir serve is running now."),
];

/// The metric name of a report key: `weir_` and the key with anything outside
/// `[a-zA-Z0-9_]` as `_`.
fn metric_name(parts: &[&str]) -> String {
    let mut out = String::from("weir");
    for p in parts {
        out.push('_');
        out.extend(p.chars().map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        }));
    }
    out
}

/// A label value with `\`, `"` and newline escaped.
fn label_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn number(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "1" } else { "0" }.to_string()),
        _ => None,
    }
}

/// One metric family: its samples as `(labels, value)`.
struct Family {
    name: String,
    member: String,
    counter: bool,
    samples: Vec<(String, String)>,
}

fn family<'a>(families: &'a mut Vec<Family>, parts: &[&str], member: &str) -> &'a mut Family {
    let counter = COUNTERS.contains(&member);
    let mut name = metric_name(parts);
    if counter {
        name.push_str("_total");
    }
    let i = match families.iter().position(|f| f.name == name) {
        Some(i) => i,
        None => {
            families.push(Family {
                name,
                member: member.to_string(),
                counter,
                samples: Vec::new(),
            });
            families.len() - 1
        }
    };
    &mut families[i]
}

/// The Prometheus text exposition of a metrics report (see the module docs).
pub fn render(report: &Value) -> String {
    let mut families: Vec<Family> = Vec::new();
    if let Value::Object(top) = report {
        for (key, v) in top {
            if let Some(n) = number(v) {
                family(&mut families, &[key], key)
                    .samples
                    .push((String::new(), n));
                continue;
            }
            let Value::Object(group) = v else { continue };
            let label = key.strip_suffix('s').unwrap_or(key);
            let label = metric_name(&[label]);
            let label = label.trim_start_matches("weir_").to_string();
            for (entry, fields) in group {
                let Value::Object(fields) = fields else {
                    continue;
                };
                let mut labels = format!("{label}=\"{}\"", label_value(entry));
                for (k, s) in fields {
                    if let Value::String(s) = s {
                        let k = metric_name(&[k]);
                        let k = k.trim_start_matches("weir_");
                        labels.push_str(&format!(",{k}=\"{}\"", label_value(s)));
                    }
                }
                for (member, x) in fields {
                    if let Some(n) = number(x) {
                        family(&mut families, &[&label, member], member)
                            .samples
                            .push((labels.clone(), n));
                    }
                }
            }
        }
    }
    let mut out = String::new();
    for f in &families {
        let help = HELP.iter().find(|(k, _)| *k == f.member).map_or_else(
            || format!("weir metric {}.", f.member),
            |(_, h)| h.to_string(),
        );
        out.push_str(&format!("# HELP {} {help}\n", f.name));
        let kind = if f.counter { "counter" } else { "gauge" };
        out.push_str(&format!("# TYPE {} {kind}\n", f.name));
        for (labels, v) in &f.samples {
            if labels.is_empty() {
                out.push_str(&format!("{} {v}\n", f.name));
            } else {
                out.push_str(&format!("{}{{{labels}}} {v}\n", f.name));
            }
        }
    }
    out
}

/// What the server answers with: the current metrics report.
pub type Snapshot = Arc<dyn Fn() -> Value + Send + Sync>;

/// The router of the endpoint: `GET`/`HEAD` [`PATH`] answers with [`render`] of
/// `snapshot`; other methods `405`, other paths `404`. [`crate::serve`] mounts the same
/// answer at its own `/metrics`.
pub fn router(snapshot: Snapshot) -> Router {
    Router::new()
        .route(
            PATH,
            get(move || {
                let snapshot = snapshot.clone();
                async move { exposition(&snapshot()) }
            })
            .fallback(|| async {
                (
                    StatusCode::METHOD_NOT_ALLOWED,
                    [(header::ALLOW, "GET, HEAD")],
                )
            }),
        )
        .fallback(|| async { StatusCode::NOT_FOUND })
}

/// The `200` answer of a scrape: [`render`] of `report` with its content type.
pub fn exposition(report: &Value) -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], render(report)).into_response()
}

/// A running endpoint.
#[derive(Debug)]
pub struct MetricsServer {
    server: HttpServer,
}

impl MetricsServer {
    /// Binds `addr` and serves `snapshot` there until [`MetricsServer::shutdown`]: over
    /// HTTPS with `tls` (see [`crate::serve::tls::acceptor`]), else plain HTTP.
    pub async fn start(
        addr: SocketAddr,
        snapshot: Snapshot,
        tls: Option<TlsAcceptor>,
    ) -> std::io::Result<MetricsServer> {
        let limits = Limits {
            max_connections: MAX_CONNECTIONS,
            header_timeout: REQUEST_TIMEOUT,
            max_head_bytes: MAX_REQUEST_BYTES,
            keep_alive: false,
        };
        let listener = TcpListener::bind(addr).await?;
        let router = router(snapshot);
        let server = match tls {
            None => HttpServer::serve(listener, router, limits),
            Some(tls) => HttpServer::serve_tls(listener, router, limits, tls),
        };
        Ok(MetricsServer { server })
    }

    /// The address it listens on (the port chosen when `:0` was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// Stops accepting and waits for the listener to close.
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_groups_as_labelled_families() {
        let report = json!({
            "elapsed_seconds": 1.5,
            "source_bytes_read": 100,
            "stages": {
                "input": {"kind": "source", "events": 10, "busy_seconds": 0.25},
                "arch\"ive": {"kind": "sink", "events": 7, "busy_seconds": 0.5},
            },
            "edges": {"input -> archive": {"capacity_bytes": 16, "in_flight_bytes": 3}},
            "files": {"/logs/conn.log": {"lag_bytes": 42, "done": false}},
            "note": "ignored",
        });
        let text = render(&report);
        let want = [
            "# HELP weir_elapsed_seconds Time since the pipeline started.",
            "# TYPE weir_elapsed_seconds gauge",
            "weir_elapsed_seconds 1.5",
            "# TYPE weir_source_bytes_read_total counter",
            "weir_source_bytes_read_total 100",
            "# TYPE weir_stage_events_total counter",
            "weir_stage_events_total{stage=\"input\",kind=\"source\"} 10",
            "weir_stage_events_total{stage=\"arch\\\"ive\",kind=\"sink\"} 7",
            "weir_stage_busy_seconds_total{stage=\"input\",kind=\"source\"} 0.25",
            "# TYPE weir_edge_in_flight_bytes gauge",
            "weir_edge_in_flight_bytes{edge=\"input -> archive\"} 3",
            "# HELP weir_file_lag_bytes Bytes of the followed file not read yet.",
            "weir_file_lag_bytes{file=\"/logs/conn.log\"} 42",
            "weir_file_done{file=\"/logs/conn.log\"} 0",
        ];
        for line in want {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
        // One HELP and one TYPE per family, before its samples.
        let types = text
            .lines()
            .filter(|l| l.starts_with("# TYPE weir_stage_events_total"))
            .count();
        assert_eq!(types, 1);
        assert!(!text.contains("note"));
    }

    #[test]
    fn names_and_label_values_are_escaped() {
        assert_eq!(metric_name(&["a.b-c", "x"]), "weir_a_b_c_x");
        assert_eq!(label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    }
}
