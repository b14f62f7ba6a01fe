//! What keeps web pages from driving `weir serve`: the `Host` and `Origin` checks, JSON-only
//! POSTs, the request body's deadline and the headers that keep the page from being framed.
//!
//! A browser lets any web page send requests to `127.0.0.1`: a form or a `fetch(..., {mode:
//! "no-cors"})` POST with a `text/plain` body (the page cannot read the answer, but the
//! query runs), and after DNS rebinding (a name of the attacker's that first points to the
//! attacker's server and then to `127.0.0.1`) even same-origin requests whose answers it
//! reads. So every request passes these checks, in this order, before any handler runs:
//!
//! 1. `Host` ([`Guard::allows_host`]): an IP address (any: no name was resolved, so nothing
//!    was rebound) or `localhost`, with the server's port (none stands for 80, or 443 with
//!    TLS), or one of the names of `--allowed-hosts` with any port or none (the names a
//!    reverse proxy or DNS gives the server). Anything else is `403`: after a rebinding,
//!    the browser still sends the attacker's name. A request without `Host` (HTTP/1.0 from
//!    a script; browsers always send it) passes.
//! 2. `Origin`, when present (browsers send it with every POST and every cross-origin
//!    request): its host must be the `Host`'s, and its port (explicit, or its scheme's
//!    default) the `Host`'s port when `Host` names one; else `403`. `Origin: null`
//!    (sandboxed frames, files) is `403`.
//! 3. On `/api/v1/*` and `/metrics`, the bearer token when the server has one
//!    ([`super::auth`]: `401`, and the connection is closed at once).
//! 4. A POST must say `Content-Type: application/json` (`415` otherwise): a browser sends
//!    that type cross-origin only after a CORS preflight, which this server never grants
//!    (`OPTIONS` is `405`, no `Access-Control-*` header is ever sent).
//! 5. A POST's body must arrive whole within [`BODY_TIMEOUT`] (`408`) and be at most
//!    [`MAX_BODY_BYTES`] (`413`); a client trickling its body holds a connection, never a
//!    query slot, and not for longer than that.
//!
//! Refusals are JSON errors ([`ApiError`](super::error::ApiError), `error.rs`'s `refuse`) with
//! `Connection: close`. Every answer carries
//! `X-Content-Type-Options: nosniff`, `X-Frame-Options: DENY` and a `Content-Security-Policy`;
//! the page's ([`page_csp`]) allows only its own inline script and style, by their SHA-256
//! hashes computed from the page itself, and requests to its own origin.

use std::sync::{Arc, LazyLock};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;

use super::error::refuse;
use super::limits::{BODY_TIMEOUT, MAX_BODY_BYTES};
use super::page::PAGE;

/// Why `--allowed-hosts` was refused.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    /// A name that no `Host` header can carry.
    #[error("--allowed-hosts: {name:?} is not a host name (names only, without a port or scheme, e.g. weir.example)")]
    BadName {
        /// The name given.
        name: String,
    },
}

/// The `Host` and `Origin` rules of one server (see the module docs).
#[derive(Debug, Clone)]
pub struct Guard {
    /// The port the server listens on.
    port: u16,
    /// The port a `Host` without one stands for (80, or 443 with TLS).
    default_port: u16,
    /// The names of `--allowed-hosts`, lowercase, without a trailing dot.
    names: Arc<[String]>,
}

impl Guard {
    /// The rules of a server listening on `port` (`tls`: HTTPS), that also answers to
    /// `names` (`--allowed-hosts`).
    pub fn new(port: u16, tls: bool, names: &[String]) -> Result<Guard, HostsError> {
        let mut kept = Vec::new();
        for name in names {
            let n = name.trim().trim_end_matches('.').to_ascii_lowercase();
            let valid = !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_');
            if !valid {
                return Err(HostsError::BadName { name: name.clone() });
            }
            kept.push(n);
        }
        Ok(Guard {
            port,
            default_port: if tls { 443 } else { 80 },
            names: kept.into(),
        })
    }

    /// Whether a `Host` header of `value` names this server (see the module docs).
    pub fn allows_host(&self, value: &str) -> bool {
        let Some((host, port)) = split_authority(value) else {
            return false;
        };
        if self.names.contains(&host) {
            return true;
        }
        let ours = port.unwrap_or(self.default_port) == self.port;
        ours && (host == "localhost" || is_ip(&host))
    }
}

/// The host (lowercase, without a trailing dot; an IPv6 address keeps its brackets) and the
/// port of an authority `host[:port]`; `None` when it is malformed.
fn split_authority(value: &str) -> Option<(String, Option<u16>)> {
    let value = value.trim();
    let (host, port) = if value.starts_with('[') {
        let end = value.find(']')?;
        let rest = &value[end + 1..];
        let port = match rest {
            "" => None,
            _ => Some(rest.strip_prefix(':')?),
        };
        (&value[..=end], port)
    } else {
        match value.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (value, None),
        }
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => Some(p.parse().ok()?),
        Some(_) => return None,
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c == '/' || c == '@') {
        return None;
    }
    Some((host, port))
}

/// Whether `host` (from [`split_authority`]) is an IP address.
fn is_ip(host: &str) -> bool {
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => host.parse::<std::net::Ipv4Addr>().is_ok(),
    }
}

/// Whether the page of `origin` (`scheme://host[:port]`) is on the server that `host` (the
/// `Host` header) names.
fn same_origin(origin: &str, host: &str) -> bool {
    let Some((scheme, authority)) = origin.trim().split_once("://") else {
        return false;
    };
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return false,
    };
    let (Some((o_host, o_port)), Some((h_host, h_port))) =
        (split_authority(authority), split_authority(host))
    else {
        return false;
    };
    o_host == h_host && h_port.is_none_or(|p| p == o_port.unwrap_or(default))
}

/// The middleware of checks 1 and 2 (`Host`, `Origin`), on every route.
pub async fn check_origin(State(guard): State<Guard>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = match headers.get(header::HOST).map(HeaderValue::to_str) {
        None => None,
        Some(Ok(h)) if guard.allows_host(h) => Some(h),
        Some(h) => {
            let shown = h.unwrap_or("(not text)");
            return refuse(
                StatusCode::FORBIDDEN,
                format!(
                    "Host {shown:?} is not this server's: use its address (or localhost) with port {}, or start it with --allowed-hosts naming the host",
                    guard.port
                ),
            );
        }
    };
    if let Some(origin) = headers.get(header::ORIGIN) {
        let text = origin.to_str().unwrap_or("(not text)");
        if !host.is_some_and(|h| same_origin(text, h)) {
            return refuse(
                StatusCode::FORBIDDEN,
                format!("cross-origin request refused: Origin {text:?} is not this server's"),
            );
        }
    }
    next.run(req).await
}

/// Whether `value` (a `Content-Type`) is `application/json`, parameters aside.
fn is_json(value: Option<&HeaderValue>) -> bool {
    value
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// The middleware of checks 4 and 5 (JSON POSTs, the body's deadline and size), on the API.
pub async fn read_body(req: Request, next: Next) -> Response {
    read_body_within(MAX_BODY_BYTES, req, next).await
}

/// [`read_body`] with bodies of at most `max` bytes (the intel API's larger limit:
/// [`super::limits::MAX_INTEL_BODY_BYTES`]).
pub async fn read_body_within(max: usize, req: Request, next: Next) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    if !is_json(req.headers().get(header::CONTENT_TYPE)) {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a request body must be JSON, sent with Content-Type: application/json",
        );
    }
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return too_large(max);
    }
    let (parts, body) = req.into_parts();
    let bytes = match tokio::time::timeout(BODY_TIMEOUT, collect(body, max)).await {
        Err(_) => {
            return refuse(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {} (the server's limit)",
                    crate::duration::format_duration(BODY_TIMEOUT)
                ),
            )
        }
        Ok(Err(Collect::TooLarge)) => return too_large(max),
        Ok(Err(Collect::Failed(e))) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                format!("the request body could not be read: {e}"),
            )
        }
        Ok(Ok(bytes)) => bytes,
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn too_large(max: usize) -> Response {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "a request body is at most {} (the server's limit)",
            crate::size::Size(max as u64)
        ),
    )
}

/// Why a body was not read whole.
enum Collect {
    TooLarge,
    Failed(axum::Error),
}

/// The whole of `body`, at most `max` bytes.
async fn collect(body: Body, max: usize) -> Result<Bytes, Collect> {
    let mut stream = body.into_data_stream();
    let mut buf = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(Collect::Failed)?;
        if buf.len() + chunk.len() > max {
            return Err(Collect::TooLarge);
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buf))
}

/// The policy of every answer but the page: nothing may be loaded, nothing may frame it.
const API_CSP: &str = "default-src 'none'; frame-ancestors 'none'";

/// The middleware that adds the headers every answer has (see the module docs).
pub async fn security_headers(req: Request, next: Next) -> Response {
    let mut r = next.run(req).await;
    let h = r.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(API_CSP),
        );
    }
    r
}

/// The text between the first `<open>` and the next `</close>` of `page`.
fn inline<'a>(page: &'a str, open: &str, close: &str) -> &'a str {
    page.split_once(open)
        .and_then(|(_, rest)| rest.split_once(close))
        .map_or("", |(inner, _)| inner)
}

/// `'sha256-BASE64'` of `text`, as CSP names an inline script or style.
fn csp_hash(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    format!("'sha256-{}'", base64(digest.as_ref()))
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(c.get(1).copied().unwrap_or(0)) << 8)
            | u32::from(c.get(2).copied().unwrap_or(0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(char::from(ABC[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The page's policy: its one inline script and one inline style by their hashes, requests
/// to its own origin only, no frames, forms, plugins or base URL.
pub fn page_csp() -> &'static str {
    static CSP: LazyLock<String> = LazyLock::new(|| {
        format!(
            "default-src 'none'; script-src {}; style-src {}; connect-src 'self'; img-src 'self'; \
             base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            csp_hash(inline(PAGE, "<script>", "</script>")),
            csp_hash(inline(PAGE, "<style>", "</style>")),
        )
    });
    &CSP
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(port: u16, names: &[&str]) -> Guard {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        Guard::new(port, false, &names).unwrap()
    }

    #[test]
    fn hosts_are_addresses_localhost_or_named() {
        let g = guard(8420, &["Weir.Example."]);
        for ok in [
            "127.0.0.1:8420",
            "localhost:8420",
            "LOCALHOST:8420",
            "[::1]:8420",
            "10.1.2.3:8420",
            "weir.example",
            "weir.example:443",
            "WEIR.example.:8420",
        ] {
            assert!(g.allows_host(ok), "{ok}");
        }
        for bad in [
            "attacker.example:8420",
            "attacker.test",
            "127.0.0.1:8421",
            "localhost",
            "localhost.attacker.example:8420",
            "127.0.0.1.nip.io:8420",
            "[::1]",
            "[::1]x",
            "[zz]:8420",
            "",
            "127.0.0.1:",
            "127.0.0.1:99999",
            "a b:8420",
            "user@127.0.0.1:8420",
        ] {
            assert!(!g.allows_host(bad), "{bad}");
        }
        // Port 80 is what a Host without a port means.
        assert!(guard(80, &[]).allows_host("127.0.0.1"));
        let tls = Guard::new(443, true, &[]).unwrap();
        assert!(tls.allows_host("localhost") && !tls.allows_host("localhost:80"));
        assert!(Guard::new(1, false, &["a.example:8420".to_string()]).is_err());
        assert!(Guard::new(1, false, &["https://a.example".to_string()]).is_err());
        assert!(Guard::new(1, false, &[String::new()]).is_err());
    }

    #[test]
    fn origins_must_be_the_hosts() {
        assert!(same_origin("http://127.0.0.1:8420", "127.0.0.1:8420"));
        assert!(same_origin("http://LOCALHOST:8420", "localhost:8420"));
        assert!(same_origin("https://weir.example", "weir.example"));
        assert!(same_origin("https://weir.example", "weir.example:443"));
        assert!(same_origin("http://[::1]:8420", "[::1]:8420"));
        assert!(!same_origin("http://attacker.test:8420", "127.0.0.1:8420"));
        assert!(!same_origin("http://127.0.0.1:9999", "127.0.0.1:8420"));
        assert!(!same_origin("http://127.0.0.1", "127.0.0.1:8420"));
        assert!(!same_origin("null", "127.0.0.1:8420"));
        assert!(!same_origin("file://", "127.0.0.1:8420"));
        assert!(!same_origin("ftp://127.0.0.1:8420", "127.0.0.1:8420"));
    }

    #[test]
    fn json_content_types() {
        let v = |s: &'static str| Some(HeaderValue::from_static(s));
        assert!(is_json(v("application/json").as_ref()));
        assert!(is_json(v("Application/JSON; charset=utf-8").as_ref()));
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
        ] {
            assert!(!is_json(v(bad).as_ref()), "{bad}");
        }
        assert!(!is_json(None));
    }

    #[test]
    fn the_page_policy_hashes_its_script_and_style() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        // SHA-256 of "abc" (FIPS 180-2), as CSP writes it.
        assert_eq!(
            csp_hash("abc"),
            "'sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0='"
        );
        // One inline script and one inline style, no inline handler or style attribute,
        // which the policy would block.
        assert_eq!(PAGE.matches("<script").count(), 1);
        assert_eq!(PAGE.matches("<style").count(), 1);
        assert!(!PAGE.contains(" style=\"") && !PAGE.contains("{ style:"));
        assert!(!inline(PAGE, "<script>", "</script>").trim().is_empty());
        let csp = page_csp();
        assert!(csp.contains(&csp_hash(inline(PAGE, "<script>", "</script>"))));
        assert!(csp.contains(&csp_hash(inline(PAGE, "<style>", "</style>"))));
        assert!(csp.contains("frame-ancestors 'none'"));
        assert!(!csp.contains("unsafe"));
    }
}
