//! `weir serve --db DIR [--listen ADDR] [PIPELINE.toml ...]`: runs the pipelines and serves
//! the archive over HTTP in one process (the server is [`weir::unstable::serve`]).
//!
//! At start it prints one line on stderr, `weir: serving http://ADDR/` (`https://` with
//! `--tls-cert`; with the port chosen for `:0`), once the listener is bound: scripts and tests read the address from it. The
//! first SIGINT or SIGTERM stops the pipelines' sources, waits for them to commit what is in
//! flight, then stops the server and exits 0 (a pipeline that failed makes it exit 1).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use tokio::net::TcpListener;

use weir::unstable::http_server::HttpServer;
use weir::unstable::pipeline::build::build;
use weir::unstable::pipeline::config::{LoadOptions, PipelineSpec};
use weir::unstable::serve::{auth, limits, tls, AppState, Guard, PipelineStatus, ServeLimits};

use super::args::{DbArg, DurationText, SizeText};
use super::signals;

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    db: DbArg,
    /// The address to listen on. Off loopback, requests need the bearer token (see
    /// --token-file).
    #[arg(long, value_name = "ADDR", default_value = weir::unstable::serve::DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// The bearer token's file, made with a new token (mode 0600) when missing; required on
    /// any address when given. Without it: DIR/serve.token off loopback, no token on
    /// loopback. Refused when group or others may read it or its token is under 32 bytes.
    #[arg(long = "token-file", value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Host names the server answers to besides its address and localhost (the Host header
    /// of requests through a reverse proxy or DNS); other names are refused (403), which
    /// keeps DNS-rebinding web pages out.
    #[arg(long = "allowed-hosts", value_name = "NAME,...", value_delimiter = ',')]
    allowed_hosts: Vec<String>,
    /// Most queries running at once; one more is answered 503.
    #[arg(long = "max-queries", value_name = "N", default_value_t = limits::MAX_QUERIES)]
    max_queries: usize,
    /// Longest time a query may run.
    #[arg(long = "query-timeout", value_name = "DURATION",
          default_value_t = DurationText(limits::QUERY_TIMEOUT))]
    query_timeout: DurationText,
    /// Largest answer of a query.
    #[arg(long = "max-response", value_name = "SIZE",
          default_value_t = SizeText(limits::MAX_RESPONSE_BYTES))]
    max_response: SizeText,
    /// The memory all running queries may take together, beyond a reserve for the
    /// pipelines' ingest; past it the query started last is stopped (503).
    #[arg(long = "max-query-memory", value_name = "SIZE",
          default_value_t = SizeText(limits::MAX_QUERY_MEMORY))]
    max_query_memory: SizeText,
    /// The most memory one query's operators (sort, summarize, top, rare, tail) may hold
    /// together; past it the query fails (422) with an error naming the operator.
    #[arg(long = "query-memory", value_name = "SIZE",
          default_value_t = SizeText(limits::query_memory()))]
    query_memory: SizeText,
    /// The memory kept for the pipelines' ingest, which queries cannot take.
    #[arg(long = "ingest-reserve", value_name = "SIZE",
          default_value_t = SizeText(limits::INGEST_RESERVE))]
    ingest_reserve: SizeText,
    /// Serve HTTPS with this certificate (PEM: the server's, then the intermediates).
    #[arg(long = "tls-cert", value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, RSA or EC).
    #[arg(long = "tls-key", value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// POST every new sighting (`weir.sighting` event) to this URL as JSON, at least once,
    /// retried with backoff; the header `X-Weir-Sighting-Id` carries its ID.
    #[arg(long, value_name = "URL")]
    webhook: Option<String>,
    /// Pipeline definitions (TOML) to run beside the server, e.g. pipelines/zeek-live.toml.
    #[arg(value_name = "PIPELINE")]
    pipelines: Vec<PathBuf>,
}

/// `weir serve`.
pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let stop = signals::install();
    // A certificate that cannot serve is an error before anything runs.
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tls::acceptor(cert, key)?),
        _ => None,
    };
    // Every pipeline loads and builds before anything runs or listens.
    let mut specs = Vec::new();
    for file in &args.pipelines {
        match PipelineSpec::load_all(file, &LoadOptions::default()) {
            Ok(mut spec) => {
                // Sets added or changed are matched against the archive's past too.
                for stage in &mut spec.stages {
                    if let weir::unstable::pipeline::config::StageConfig::Archive(a) =
                        &mut stage.config
                    {
                        a.retro = true;
                    }
                }
                specs.push((file, spec))
            }
            Err(mut errors) => {
                let last = errors.pop();
                for e in &errors {
                    say!("weir: error: {e}");
                }
                match last {
                    Some(e) => return Err(e.into()),
                    None => anyhow::bail!("{}: invalid pipeline", file.display()),
                }
            }
        }
    }
    let mut pipelines = Vec::new();
    let mut fills_db = false;
    for (file, spec) in &specs {
        let (pipeline, built) = build(spec).await?;
        super::report_warnings(&built.warnings);
        fills_db |= built
            .archives
            .iter()
            .any(|a| same_dir(&a.db, &args.db.path));
        let status = Arc::new(PipelineStatus::new(&file.display().to_string(), &pipeline));
        pipelines.push((pipeline, status));
    }
    if !pipelines.is_empty() && !fills_db {
        say!(
            "weir: warning: no pipeline writes to {} (the archive served); their archive sinks name other directories",
            args.db.path.display()
        );
    }
    if pipelines.is_empty() {
        // Nothing will create it: a missing archive is an error now, not at the first query.
        weir::unstable::store::Archive::open(&args.db.path)?;
    }
    // No pipeline of this server writes its archive, so none matches a set added or changed
    // against the past: a thread of its own does, whenever no other writer holds the archive.
    let _idle_retro = match fills_db {
        true => None,
        false => Some(weir::unstable::detect::IdleRetro::start(&args.db.path)?),
    };
    // --token-file is honoured on every address; off loopback a token is required anyway.
    let token_file = match &args.token_file {
        Some(path) => Some(path.clone()),
        None if args.listen.ip().is_loopback() => None,
        None => Some(args.db.path.join(auth::TOKEN_FILE)),
    };
    let token = match token_file {
        None => None,
        Some(path) => {
            let (token, made) = auth::load_or_create(&path)?;
            if made {
                say!("weir: wrote a new bearer token to {}", path.display());
            }
            Some(token)
        }
    };
    let limits = ServeLimits {
        max_queries: args.max_queries,
        query_timeout: args.query_timeout.0,
        max_response_bytes: args.max_response.0,
        max_query_memory: args.max_query_memory.0,
        ingest_reserve: args.ingest_reserve.0,
        query_memory: args.query_memory.0,
    };
    let state = AppState::new(
        args.db.path.clone(),
        limits,
        pipelines.iter().map(|(_, s)| s.clone()).collect(),
    );
    let listener = TcpListener::bind(args.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    let port = listener
        .local_addr()
        .map_or(args.listen.port(), |a| a.port());
    let guard = Guard::new(port, tls.is_some(), &args.allowed_hosts)?;
    let webhook = match args.webhook.clone() {
        None => None,
        Some(url) => {
            use weir::unstable::serve::webhook;
            let (reader, db, u) = (state.reader.clone(), args.db.path.clone(), url.clone());
            let start =
                tokio::task::spawn_blocking(move || webhook::start_after(&reader, &db, &u)).await?;
            let stats = std::sync::Arc::new(webhook::WebhookStats::default());
            Some(tokio::spawn(webhook::run(
                state.reader.clone(),
                args.db.path.clone(),
                url,
                start,
                stats,
                stop.clone(),
            )))
        }
    };
    let router = weir::unstable::serve::router(state, token, guard);
    let (server, scheme) = match tls {
        None => (
            HttpServer::serve(listener, router, limits.connections()),
            "http",
        ),
        Some(tls) => (
            HttpServer::serve_tls(listener, router, limits.connections(), tls),
            "https",
        ),
    };
    say!("weir: serving {scheme}://{}/", server.local_addr());
    let mut runs = Vec::new();
    for (pipeline, status) in pipelines {
        signals::forward(stop.clone(), pipeline.shutdown_token());
        runs.push(tokio::spawn(async move {
            let result = pipeline.run().await;
            let failed = result.as_ref().err().map(|e| e.to_string());
            match &failed {
                Some(e) => say!("weir: error: pipeline {}: {e}", status.file()),
                None => {
                    if let Ok(summary) = &result {
                        super::report_skips(&summary.skipped);
                    }
                }
            }
            status.finish(failed.clone().map_or(Ok(()), Err));
            failed.is_none()
        }));
    }
    // Serve until the signal; the pipelines commit what they read, then the server stops.
    stop.cancelled().await;
    let mut ok = true;
    for run in runs {
        ok &= run.await.unwrap_or(false);
    }
    server.shutdown().await;
    if let Some(w) = webhook {
        let _ = w.await;
    }
    if !ok {
        anyhow::bail!("a pipeline failed (see above)");
    }
    Ok(())
}

/// Whether two paths name the same directory (compared canonically when both exist).
fn same_dir(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
