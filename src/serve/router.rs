//! The routes of `weir serve` and what guards them.
//!
//! Every request must name this server in `Host` and, when it has an `Origin`, come from
//! this server's page ([`super::guard`], `403`). `GET /` (the page) and `GET /health` are
//! otherwise open; everything else (`/api/v1/*`, `/metrics`) requires the bearer token when
//! the server has one ([`super::auth`]), and a POST a JSON body ([`super::guard`]) of at
//! most [`MAX_BODY_BYTES`] that arrives within the body deadline. An unknown path is `404`
//! with a JSON error; a known path with another method `405`. Every answer carries the
//! headers of [`super::guard::security_headers`]; the page its own policy
//! ([`super::guard::page_csp`]); opened by another site, the page runs nothing until the
//! person asks ([`page`]).

use axum::extract::DefaultBodyLimit;
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;

use super::api;
use super::error::ApiError;
use super::guard::{self, Guard};
use super::limits::{MAX_BODY_BYTES, MAX_INTEL_BODY_BYTES};
use super::page::page;
use super::state::AppState;

/// The router of a server with `state`; `token`: the bearer token the API requires;
/// `guard`: the `Host` and `Origin` the server answers.
pub fn router(state: AppState, token: Option<String>, guard: Guard) -> Router {
    let api = Router::new()
        .route("/api/v1/query", post(api::query))
        .route("/api/v1/count", post(api::count))
        .route("/api/v1/sigma", post(api::sigma))
        .route("/api/v1/get", post(api::get))
        .route("/api/v1/explore", post(super::context::explore))
        .route("/api/v1/pivot", post(super::context::pivot))
        .route("/api/v1/info", get(api::info))
        .route("/api/v1/sightings", get(super::sightings::sightings))
        .route("/api/v1/status", get(api::status))
        .route("/metrics", get(api::metrics))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "no such endpoint") })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state.clone())
        .layer(from_fn(guard::read_body));
    // The indicator sets: their writes take larger bodies, and need the token.
    let intel = Router::new()
        .route("/api/v1/intel", get(super::intel::list))
        .route(
            "/api/v1/intel/{name}",
            get(super::intel::show)
                .post(super::intel::add)
                .delete(super::intel::delete),
        )
        .route("/api/v1/intel/{name}/remove", post(super::intel::remove))
        .layer(DefaultBodyLimit::max(MAX_INTEL_BODY_BYTES))
        .with_state(state)
        .layer(from_fn(|req, next| {
            guard::read_body_within(MAX_INTEL_BODY_BYTES, req, next)
        }));
    // The token before the body: an unauthenticated client's body is never waited for.
    let (api, intel) = match token {
        Some(t) => (
            api.layer(from_fn_with_state(t.clone(), super::auth::require_token)),
            intel.layer(from_fn_with_state(t, super::auth::require_token)),
        ),
        None => (api, intel.layer(from_fn(super::auth::writes_need_a_token))),
    };
    let api = api.merge(intel);
    Router::new()
        .route("/health", get(api::health))
        .route(
            "/",
            get(|headers: HeaderMap| async move {
                (
                    [
                        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                        (header::CACHE_CONTROL, "no-cache"),
                        (header::CONTENT_SECURITY_POLICY, guard::page_csp()),
                        (header::VARY, "Sec-Fetch-Site"),
                    ],
                    page(&headers),
                )
                    .into_response()
            }),
        )
        .merge(api)
        .layer(from_fn_with_state(guard, guard::check_origin))
        .layer(from_fn(guard::security_headers))
}

#[cfg(test)]
mod tests {
    use super::super::page::PAGE;
    use super::*;

    #[test]
    fn a_page_opened_by_another_site_is_held() {
        let mut h = HeaderMap::new();
        assert_eq!(page(&h), PAGE);
        for (site, held) in [
            ("none", false),
            ("same-origin", false),
            ("same-site", true),
            ("cross-site", true),
        ] {
            h.insert("sec-fetch-site", site.parse().unwrap());
            assert_eq!(page(&h).contains("<body data-held>"), held, "{site}");
            // The same inline script and style: the policy's hashes hold for both.
            assert_eq!(
                page(&h).split_once("<script>").unwrap().1,
                PAGE.split_once("<script>").unwrap().1
            );
        }
    }
}
