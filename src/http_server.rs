//! Serving an axum [`Router`] over HTTP/1.1 (hyper), with the limits every weir endpoint has.
//!
//! Both HTTP servers of weir, the Prometheus endpoint of a pipeline
//! ([`crate::metrics_http`]) and `weir serve` ([`crate::serve`]), run through [`HttpServer`]:
//!
//! - at most [`Limits::max_connections`] connections are served at once; further clients wait
//!   in the listen backlog until a connection ends (they are accepted, not refused);
//! - a client has [`Limits::header_timeout`] to send a request head, the first and each
//!   following one on a kept-alive connection, else the connection is closed (slow clients
//!   cannot hold a connection slot);
//! - a request head (request line and headers) longer than [`Limits::max_head_bytes`] is
//!   answered `431` by hyper; a malformed one `400`;
//! - with [`Limits::keep_alive`] off, every connection serves one request
//!   (`Connection: close`);
//! - [`HttpServer::shutdown`] stops accepting at once, lets the requests in progress finish
//!   for at most [`SHUTDOWN_GRACE`], and returns when the listener is closed.
//!
//! - with a TLS acceptor ([`HttpServer::serve_tls`]), each connection's handshake runs in
//!   its own task and must end within [`Limits::header_timeout`], else the connection is
//!   closed.
//!
//! Header names are written in title case (`Content-Type`), as most servers do.
//!
//! Bodies, per-request time limits and the like are the router's business (axum layers).
//! HTTP/2 is not served.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// How long requests in progress may take to finish after [`HttpServer::shutdown`].
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// How long the accept loop waits after a failed `accept` (out of file descriptors and the
/// like) before trying again, rather than spinning.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// The connection-level limits of a server (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most connections served at once.
    pub max_connections: usize,
    /// Longest time a client may take to send a request head.
    pub header_timeout: Duration,
    /// Largest request head accepted (at least 8 KiB, hyper's minimum).
    pub max_head_bytes: usize,
    /// Whether a connection may carry more than one request.
    pub keep_alive: bool,
}

/// The smallest head buffer hyper accepts.
const MIN_HEAD_BYTES: usize = 8 << 10;

/// A running server.
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl HttpServer {
    /// Binds `addr` and serves `router` there until [`HttpServer::shutdown`].
    pub async fn start(addr: SocketAddr, router: Router, limits: Limits) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        Ok(Self::serve(listener, router, limits))
    }

    /// Serves `router` on a bound listener until [`HttpServer::shutdown`].
    pub fn serve(listener: TcpListener, router: Router, limits: Limits) -> Self {
        Self::serve_with(listener, router, limits, None)
    }

    /// Serves `router` over TLS (`tls`'s certificate) on a bound listener until
    /// [`HttpServer::shutdown`].
    pub fn serve_tls(
        listener: TcpListener,
        router: Router,
        limits: Limits,
        tls: TlsAcceptor,
    ) -> Self {
        Self::serve_with(listener, router, limits, Some(tls))
    }

    fn serve_with(
        listener: TcpListener,
        router: Router,
        limits: Limits,
        tls: Option<TlsAcceptor>,
    ) -> Self {
        let addr = listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let stop = CancellationToken::new();
        let task = tokio::spawn(accept_loop(listener, router, limits, tls, stop.clone()));
        HttpServer { addr, stop, task }
    }

    /// The address it listens on (the port chosen when `:0` was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, closes the listener and gives the requests in progress
    /// [`SHUTDOWN_GRACE`] to finish.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

async fn accept_loop(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.max_head_bytes.max(MIN_HEAD_BYTES))
        .keep_alive(limits.keep_alive)
        .title_case_headers(true);
    loop {
        let permit = tokio::select! {
            _ = stop.cancelled() => return,
            p = slots.clone().acquire_owned() => p,
        };
        // The semaphore is never closed.
        let Ok(permit) = permit else { return };
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            a = listener.accept() => a,
        };
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(ACCEPT_RETRY).await;
            continue;
        };
        // An answer's last small write (a chunked body's end) goes out at once, instead of
        // waiting for the client's delayed ACK (~40 ms per request on a kept-alive connection).
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let builder = builder.clone();
        let stop = stop.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                None => serve_connection(stream, &builder, service, &stop).await,
                Some(tls) => {
                    let handshake = tokio::select! {
                        _ = stop.cancelled() => return,
                        h = tokio::time::timeout(limits.header_timeout, tls.accept(stream)) => h,
                    };
                    // A failed or stalled handshake closes the connection.
                    if let Ok(Ok(stream)) = handshake {
                        serve_connection(stream, &builder, service, &stop).await;
                    }
                }
            }
            drop(permit);
        });
    }
}

/// Serves the requests of one connection until it ends or the server stops.
async fn serve_connection<IO>(
    io: IO,
    builder: &hyper::server::conn::http1::Builder,
    service: TowerToHyperService<Router>,
    stop: &CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let conn = builder.serve_connection(TokioIo::new(io), service);
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn).await;
        }
    }
}
