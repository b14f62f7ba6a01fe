//! The web page (`page.html`) and how it is served: one file, held when another site opened
//! it. Its content security policy is [`super::guard::page_csp`], computed from this text.

use std::sync::LazyLock;

use axum::http::HeaderMap;

/// The web page: one file, its script and style inline, nothing fetched from elsewhere.
pub const PAGE: &str = include_str!("page.html");

/// The page as served for a request with `headers`: held (`<body data-held>`: it runs no
/// query until the person presses Search) when another site opened it, by a link or a
/// script (`Sec-Fetch-Site: cross-site` or `same-site`), so that no web page can make it run
/// a query of its choosing (`?q=`). Typed, bookmarked and reloaded pages run at once.
pub fn page(headers: &HeaderMap) -> &'static str {
    static HELD: LazyLock<String> =
        LazyLock::new(|| PAGE.replacen("<body>", "<body data-held>", 1));
    let from_elsewhere = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.eq_ignore_ascii_case("cross-site") || v.eq_ignore_ascii_case("same-site")
        });
    if from_elsewhere {
        &HELD
    } else {
        PAGE
    }
}
