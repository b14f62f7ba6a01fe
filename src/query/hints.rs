//! Hints for a search that matched nothing although the user probably meant something
//! that matches: `query ~ /google/` finds no DNS query that *is* `google`, since `~`
//! matches the whole value (as VAST's does), while `/.*google.*/` finds hundreds. An empty
//! answer without a word is the silent wrong answer; these hints say what to write
//! instead, and only when following them gives events (each is counted first).

use super::{Literal, Op, Query};
use crate::store::Archive;

/// For an expression that matched no event: each `FIELD ~ /P/` (a pattern not already
/// open at both ends) whose search with `/.*(?:P).*/` in its place matches events, as a
/// hint naming the rewritten predicate and its count. Empty when no rewrite matches; an
/// error while counting a rewrite drops that hint (the search already answered).
pub fn whole_match_hints(query: &Query, archive: &Archive) -> Vec<String> {
    let Some(expr) = query.expr() else {
        return Vec::new();
    };
    let text = query.text();
    let mut hints = Vec::new();
    for p in expr.predicates() {
        let (Op::Match, Literal::Pattern(pattern)) = (p.op, &p.value) else {
            continue;
        };
        let source = &pattern.source;
        if source.starts_with(".*") && source.ends_with(".*") {
            continue;
        }
        let Some(written) = text.get(p.value_span.clone()) else {
            continue;
        };
        let Some(inner) = written.strip_prefix('/').and_then(|w| w.strip_suffix('/')) else {
            continue;
        };
        let open = if inner.contains('|') {
            format!("/.*(?:{inner}).*/")
        } else {
            format!("/.*{inner}.*/")
        };
        let rewritten = format!(
            "{}{open}{}",
            &text[..p.value_span.start],
            &text[p.value_span.end..]
        );
        let Ok(q) = Query::parse(&rewritten) else {
            continue;
        };
        let Ok((n, _)) = q.count(archive) else {
            continue;
        };
        if n > 0 {
            let suggestion = p.text.replacen(written, &open, 1);
            hints.push(format!(
                "`{}` matched nothing: `~` matches the whole value, as in VAST; with `{suggestion}` (the pattern anywhere in the value) the expression matches {n} event{}",
                p.text,
                if n == 1 { "" } else { "s" }
            ));
        }
    }
    hints
}
