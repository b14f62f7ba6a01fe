//! `weir serve`: the archive over HTTP, with a web page, beside the pipelines that fill it.
//!
//! The library side of the command: the router ([`router::router`]), its state
//! ([`AppState`]), the handlers ([`api`]), the streamed queries ([`query`]), the limits
//! ([`limits`]), the bearer token ([`auth`]) and the checks that keep web pages from using
//! the server ([`guard`]). The command (`src/cli/serve.rs`) runs the
//! pipelines and the server in one process; the endpoints are documented in the user guide,
//! `docs/book/src/serving/api.md`.
//!
//! # Files
//!
//! | file | owns |
//! | --- | --- |
//! | `limits.rs` | every limit of the server, and [`ServeLimits`] |
//! | `error.rs` | [`ApiError`]: the JSON error answers, and refusals that close the connection |
//! | `auth.rs` | the token file and the bearer-token middleware |
//! | `guard.rs` | what keeps web pages out: `Host`, `Origin`, JSON POSTs, body deadline, CSP |
//! | `memory.rs` | [`memory::QueryMemory`]: the running queries' share of memory |
//! | `status.rs` | [`PipelineStatus`]: the pipelines' live status and metrics |
//! | `state.rs` | [`AppState`]: what the handlers share, the query slots |
//! | `query.rs` | running a query on a blocking thread, streaming, `count` |
//! | `api.rs` | the handlers |
//! | `context.rs` | the handlers of `explore` and `pivot` |
//! | `intel.rs` | `/api/v1/intel/...`: the indicator sets (their writes need the token) |
//! | `sightings.rs` | `GET /api/v1/sightings`: the sightings, newest first or followed |
//! | `webhook.rs` | `--webhook`: each new sighting POSTed to a URL, at least once |
//! | `page.rs` | the page (`page.html`), held when another site opened it |
//! | `router.rs` | the routes |
//! | `tls.rs` | the certificate and key of `--tls-cert`/`--tls-key` |
//!
//! The server reads the archive as `weir export` does, through one resident reader whose
//! segment cache stays warm across queries and which moves to each new catalog before the
//! next query starts ([`crate::Db`]), so a query sees what the pipelines committed up to then;
//! nothing reachable over HTTP changes the archive's events; the intel API's writes, which need
//! the token, change its indicator sets ([`intel`]). With a
//! certificate and key it serves HTTPS ([`tls`]).

pub mod api;
pub mod auth;
pub mod context;
pub mod error;
pub mod guard;
pub mod intel;
pub mod limits;
pub mod memory;
pub mod page;
pub mod query;
pub mod router;
pub mod sightings;
pub mod state;
pub mod status;
pub mod tls;
pub mod webhook;

pub use error::ApiError;
pub use guard::Guard;
pub use limits::ServeLimits;
pub use router::router;
pub use state::AppState;
pub use status::PipelineStatus;

/// The address `weir serve` listens on without `--listen`: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8420";
