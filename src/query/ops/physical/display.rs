//! A plan written out: as text for `--explain`, as JSON for the API's `"explain": true`.
//!
//! Text: a `scan` section (`predicate`, `columns`, `top-N`, `partial aggregation`, one line
//! each where it applies), then `operators`, one numbered line each with what the rules
//! pushed into it in brackets. JSON: `{"scan": {"predicate", "columns" (null: whole
//! events), "late_materialization", "top_n" (null, or `{"field", "desc", "per_batch"}`),
//! "partial_aggregation"}, "operators": [{"op", ...}]}`.

use std::fmt;

use serde_json::{json, Value as Json};

use super::{Node, Plan};

/// Keys as a chain writes them: `ts desc, uid`.
fn keys_text(keys: &[(String, bool)]) -> String {
    keys.iter()
        .map(|(k, d)| if *d { format!("{k} desc") } else { k.clone() })
        .collect::<Vec<_>>()
        .join(", ")
}

fn keys_json(keys: &[(String, bool)]) -> Json {
    keys.iter()
        .map(|(k, d)| json!({"field": k, "desc": d}))
        .collect()
}

impl Node {
    /// The node as text, with what was pushed into it.
    fn text(&self) -> String {
        match self {
            Node::Where(q) => format!("where {}", q.text()),
            Node::Project { fields, .. } => format!("{} {}", self.name(), fields.join(", ")),
            Node::Sort {
                keys, limit, top, ..
            } => {
                let mut s = format!("sort {}", keys_text(keys));
                if let Some(n) = limit {
                    s.push_str(&format!(" [keeps {n}]"));
                }
                if *top {
                    s.push_str(" [fed by the scan's top-N, publishes its cut-off]");
                }
                s
            }
            Node::Head(n) => format!("head {n}"),
            Node::Tail { n, top, .. } => {
                let fed = if *top {
                    " [fed by the scan's top-N, publishes its cut-off]"
                } else {
                    ""
                };
                format!("tail {n}{fed}")
            }
            Node::Summarize {
                name,
                aggs,
                by,
                partial,
                feeds_top,
                ..
            } => {
                let aggs: Vec<&str> = aggs.iter().map(|a| a.name.as_str()).collect();
                let mut s = format!("summarize {}", aggs.join(", "));
                if !by.is_empty() {
                    s.push_str(&format!(" by {}", by.join(", ")));
                }
                s.push_str(&format!(" -> {name}"));
                if *partial {
                    s.push_str(" [final aggregation of the scan's partial one]");
                }
                if let Some((keys, n)) = feeds_top {
                    s.push_str(&format!(
                        " [emits only its first {n} by {}]",
                        keys_text(keys)
                    ));
                }
                s
            }
        }
    }

    fn json(&self) -> Json {
        match self {
            Node::Where(q) => json!({"op": "where", "expr": q.text()}),
            Node::Project { fields, .. } => json!({"op": self.name(), "fields": fields}),
            Node::Sort {
                keys, limit, top, ..
            } => {
                json!({"op": "sort", "keys": keys_json(keys), "limit": limit, "top_n": top})
            }
            Node::Head(n) => json!({"op": "head", "n": n}),
            Node::Tail { n, top, .. } => json!({"op": "tail", "n": n, "top_n": top}),
            Node::Summarize {
                name,
                aggs,
                by,
                resolution,
                partial,
                feeds_top,
                ..
            } => json!({
                "op": "summarize",
                "schema": name,
                "aggregations": aggs.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
                "by": by,
                "resolution_ns": resolution,
                "final_of_partial": partial,
                "emits_first": feeds_top.as_ref().map(|(k, n)| json!({"keys": keys_json(k), "n": n})),
            }),
        }
    }
}

impl Plan {
    /// The plan as JSON.
    pub(crate) fn to_json(&self) -> Json {
        let s = &self.scan;
        json!({
            "scan": {
                "predicate": s.predicate.text(),
                "columns": s.columns,
                "late_materialization": s.late,
                "top_n": s.top.as_ref().map(|t| json!({
                    "field": t.field, "desc": t.desc, "per_batch": t.per_batch,
                })),
                "partial_aggregation": s.partial,
            },
            "operators": self.nodes.iter().map(Node::json).collect::<Vec<_>>(),
        })
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.scan;
        writeln!(f, "scan")?;
        match s.predicate.text() {
            "" => writeln!(f, "  predicate: every event")?,
            t => writeln!(f, "  predicate: {t}")?,
        }
        match &s.columns {
            None => writeln!(f, "  columns: every field")?,
            Some(c) => {
                let late = if s.late {
                    " [late materialization: the events that come out are read whole by ID]"
                } else {
                    ""
                };
                let names = match c.as_slice() {
                    [] => "none (event IDs only)".to_string(),
                    c => c.join(", "),
                };
                writeln!(f, "  columns: {names}{late}")?
            }
        }
        if let Some(t) = &s.top {
            let dir = if t.desc { "descending" } else { "ascending" };
            write!(f, "  top-N: batches best first by {} {dir}", t.field)?;
            if let Some(n) = t.per_batch {
                write!(f, ", at most {n} of each")?;
            }
            writeln!(f, ", none past the operator's cut-off")?;
        }
        if s.partial {
            writeln!(
                f,
                "  partial aggregation: each batch's groups on its columns"
            )?;
        }
        writeln!(f, "operators")?;
        if self.nodes.is_empty() {
            writeln!(f, "  (none)")?;
        }
        for (k, n) in self.nodes.iter().enumerate() {
            writeln!(f, "  {}. {}", k + 1, n.text())?;
        }
        Ok(())
    }
}
