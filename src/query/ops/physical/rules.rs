//! The pushdown rules: each a function from plan to plan that moves work from the operators
//! into the scan (or into the operator before), and leaves a plan it does not apply to as
//! it is. `analysis.rs` applies them in the order of these lists.

use std::sync::Arc;

use super::{Cutoff, Node, Plan, TopN};
use crate::query::{Extractor, Meta, Query};

/// A rule: a plan in, the same query's plan out.
pub(crate) type Rule = fn(Plan) -> Plan;

/// The rules between operators, which hold for any input.
pub(crate) const OPERATOR_RULES: [(&str, Rule); 2] = [
    ("limit_into_sort", limit_into_sort),
    ("topn_into_aggregate", topn_into_aggregate),
];

/// The rules that push work into an archive's search, after [`OPERATOR_RULES`].
pub(crate) const SCAN_RULES: [(&str, Rule); 4] = [
    ("filter_into_scan", filter_into_scan),
    ("topn_into_scan", topn_into_scan),
    ("partial_aggregation", partial_aggregation),
    ("projection", projection),
];

/// The leading `where`s become the scan's predicate (with the one it has, by `&&`): pruned by
/// the catalog and the sketches, and evaluated on every core.
pub(crate) fn filter_into_scan(mut plan: Plan) -> Plan {
    while let Some(Node::Where(q)) = plan.nodes.first() {
        let merged = match plan.scan.predicate.expr() {
            None => q.clone(),
            Some(_) => {
                let both = format!("({}) && ({})", plan.scan.predicate.text(), q.text());
                match Query::parse(&both) {
                    Ok(b) => b,
                    Err(_) => break,
                }
            }
        };
        plan.scan.predicate = merged;
        plan.nodes.remove(0);
    }
    plan
}

/// A `sort` followed by `head N` keeps only its first `N` events.
pub(crate) fn limit_into_sort(mut plan: Plan) -> Plan {
    for k in 1..plan.nodes.len() {
        if let Node::Head(n) = plan.nodes[k] {
            if let Node::Sort { limit, .. } = &mut plan.nodes[k - 1] {
                *limit = Some(limit.map_or(n, |l| l.min(n)));
            }
        }
    }
    plan
}

/// A `summarize` followed by a `sort` that keeps its first `N` events emits only the groups
/// that can be among them, in the order it would have emitted them.
pub(crate) fn topn_into_aggregate(mut plan: Plan) -> Plan {
    for k in 1..plan.nodes.len() {
        let (before, after) = plan.nodes.split_at_mut(k);
        if let (
            Node::Summarize { feeds_top, .. },
            Node::Sort {
                keys,
                limit: Some(n),
                top: false,
                ..
            },
        ) = (&mut before[k - 1], &after[0])
        {
            *feeds_top = Some((keys.clone(), usize::try_from(*n).unwrap_or(usize::MAX)));
        }
    }
    plan
}

/// A first `sort F ... | head N` (F a field) or `tail N` (`#id` descending) keeps the first
/// events by one field: the scan visits the batches best first by it, hands out at most `N`
/// of each batch when `F` is the only key, and reads none that cannot beat the cut-off the
/// operator publishes. The operator then takes batches in any order (ties by event ID).
pub(crate) fn topn_into_scan(mut plan: Plan) -> Plan {
    let top = match plan.nodes.first_mut() {
        Some(Node::Sort {
            keys,
            limit: Some(n),
            top,
            ..
        }) => match keys.first() {
            Some((field, desc)) if !field.starts_with('#') => {
                *top = true;
                let n = usize::try_from(*n).unwrap_or(usize::MAX);
                Some(TopN {
                    field: field.clone(),
                    desc: *desc,
                    per_batch: Some(n).filter(|&n| n > 0 && keys.len() == 1),
                    cutoff: Arc::new(Cutoff::default()),
                })
            }
            _ => None,
        },
        Some(Node::Tail { n, top, .. }) if *n > 0 => {
            *top = true;
            Some(TopN {
                field: "#id".into(),
                desc: true,
                per_batch: None,
                cutoff: Arc::new(Cutoff::default()),
            })
        }
        _ => None,
    };
    if top.is_some() {
        plan.scan.top = top;
    }
    plan
}

/// A first `summarize` is aggregated by the scan's workers, batch by batch on the columns
/// (partial aggregation); the operator merges their groups (the final aggregation).
pub(crate) fn partial_aggregation(mut plan: Plan) -> Plan {
    if let Some(Node::Summarize { partial, .. }) = plan.nodes.first_mut() {
        *partial = true;
        plan.scan.partial = true;
    }
    plan
}

/// The scan reads only the fields the operators read: up to the first operator that makes
/// events of its own (`select`, `summarize`), what it and those before it name. A bounded
/// output of whole events (`sort ... | head N`, `tail N`, with `where`s of fields) is picked
/// on the fields the operators read and read whole again by ID (late materialization). An
/// operator that reads every field (`drop`, a `where` of other extractors) leaves the
/// events whole.
pub(crate) fn projection(mut plan: Plan) -> Plan {
    let mut names: Vec<String> = Vec::new();
    let add = |n: &str, names: &mut Vec<String>| {
        if n != "#type" && !names.iter().any(|x| x == n) {
            names.push(n.to_string());
        }
    };
    let mut bounded = false;
    for node in &plan.nodes {
        match node {
            Node::Where(q) => {
                for p in q.expr().map(|e| e.predicates()).unwrap_or_default() {
                    match &p.extractor {
                        Extractor::Field(n) => add(n, &mut names),
                        Extractor::Meta(Meta::Type) => {}
                        _ => return plan,
                    }
                }
            }
            Node::Sort { keys, limit, .. } => {
                keys.iter().for_each(|(f, _)| add(f, &mut names));
                bounded |= limit.is_some();
            }
            Node::Tail { .. } => bounded = true,
            Node::Head(_) => {}
            Node::Project { keep: false, .. } => return plan,
            Node::Project { fields, keep: true } => {
                fields.iter().for_each(|f| add(f, &mut names));
                plan.scan.columns = Some(names);
                return plan;
            }
            Node::Summarize { aggs, by, .. } => {
                by.iter().for_each(|f| add(f, &mut names));
                aggs.iter()
                    .filter_map(|a| a.field.as_deref())
                    .for_each(|f| add(f, &mut names));
                plan.scan.columns = Some(names);
                return plan;
            }
        }
    }
    if bounded {
        plan.scan.columns = Some(names);
        plan.scan.late = true;
    }
    plan
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::super::super::syntax::{self, OpSpec};
    use super::super::{analysis, ScanSpec};
    use super::*;

    /// The plan of `text` as written (the operator rules applied, none into the scan).
    fn written(text: &str) -> Plan {
        let mut ops = Vec::new();
        for (k, (part, at)) in syntax::split(text).unwrap().into_iter().enumerate() {
            if k == 0 && !syntax::starts_with_operator(part) {
                ops.push(OpSpec::Where {
                    text: part.to_string(),
                    pos: at,
                });
            } else {
                ops.push(syntax::parse_op(text, part, at).unwrap());
            }
        }
        analysis::written(text, &Query::all(), &ops).unwrap()
    }

    fn names(plan: &Plan) -> Vec<&'static str> {
        plan.nodes.iter().map(Node::name).collect()
    }

    #[test]
    fn filter_into_scan_takes_the_leading_wheres_only() {
        let p = filter_into_scan(written("x == 1 | where y == 2 | head 3 | where z == 3"));
        assert_eq!(p.scan.predicate.text(), "(x == 1) && (y == 2)");
        assert_eq!(names(&p), ["head", "where"]);
        // No leading `where`: nothing moves.
        let p = filter_into_scan(written("head 3 | where z == 3"));
        assert_eq!(p.scan.predicate.text(), "");
        assert_eq!(names(&p), ["head", "where"]);
    }

    #[test]
    fn limit_into_sort_bounds_a_sort_followed_by_head() {
        let p = written("sort ts desc | head 7");
        assert!(matches!(p.nodes[0], Node::Sort { limit: Some(7), .. }));
        let p = limit_into_sort(Plan {
            scan: ScanSpec::new(Query::all()),
            nodes: vec![
                Node::Sort {
                    keys: vec![("ts".into(), false)],
                    limit: None,
                    top: false,
                    label: "sort ts".into(),
                },
                Node::Head(4),
            ],
        });
        assert!(matches!(p.nodes[0], Node::Sort { limit: Some(4), .. }));
        // A `head` not right after: unbounded.
        let p = written("sort ts | where x == 1 | head 7");
        assert!(matches!(p.nodes[0], Node::Sort { limit: None, .. }));
    }

    #[test]
    fn topn_into_aggregate_tells_summarize_what_the_next_sort_keeps() {
        let p = written("summarize n=count() by x | sort n desc | head 5");
        let Node::Summarize { feeds_top, .. } = &p.nodes[0] else {
            panic!("{p:?}")
        };
        assert_eq!(feeds_top, &Some((vec![("n".to_string(), true)], 5)));
        // `top` is the same shape.
        let p = written("top x 3");
        assert!(matches!(
            &p.nodes[0],
            Node::Summarize {
                feeds_top: Some((_, 3)),
                ..
            }
        ));
        // An unbounded sort after: every group.
        let p = written("summarize count() by x | sort x");
        assert!(matches!(
            &p.nodes[0],
            Node::Summarize {
                feeds_top: None,
                ..
            }
        ));
    }

    #[test]
    fn topn_into_scan_shares_a_cutoff_for_a_first_bounded_sort_or_tail() {
        let p = topn_into_scan(written("sort ts desc | head 10"));
        let top = p.scan.top.as_ref().unwrap();
        assert_eq!(
            (top.field.as_str(), top.desc, top.per_batch),
            ("ts", true, Some(10))
        );
        assert!(matches!(p.nodes[0], Node::Sort { top: true, .. }));
        // More keys: batches best first, but every match of a batch.
        let p = topn_into_scan(written("sort ts, uid | head 10"));
        assert_eq!(p.scan.top.as_ref().unwrap().per_batch, None);
        // `tail N`: the largest IDs first.
        let p = topn_into_scan(written("tail 3"));
        let top = p.scan.top.as_ref().unwrap();
        assert_eq!((top.field.as_str(), top.desc), ("#id", true));
        assert!(matches!(p.nodes[0], Node::Tail { top: true, .. }));
        // Not first, unbounded, by a meta key, or `tail 0`: no top-N.
        for text in [
            "head 1 | sort ts | head 2",
            "sort ts",
            "sort #id | head 2",
            "tail 0",
        ] {
            let p = topn_into_scan(written(text));
            assert!(p.scan.top.is_none(), "{text}");
            assert!(
                !matches!(p.nodes[0], Node::Sort { top: true, .. }),
                "{text}"
            );
        }
    }

    #[test]
    fn partial_aggregation_only_for_a_first_summarize() {
        let p = partial_aggregation(written("summarize count() by x"));
        assert!(p.scan.partial);
        assert!(matches!(p.nodes[0], Node::Summarize { partial: true, .. }));
        let p = partial_aggregation(written("where y == 1 | summarize count() by x"));
        assert!(!p.scan.partial);
        // After the filter moved into the scan, it is first.
        let p = partial_aggregation(filter_into_scan(written("y == 1 | top x")));
        assert!(p.scan.partial);
    }

    #[test]
    fn projection_reads_only_named_fields_and_materializes_bounded_outputs() {
        let p = projection(written("where y == 1 | summarize sum(b) by x | select x"));
        assert_eq!(
            p.scan.columns,
            Some(vec!["y".into(), "x".into(), "b".into()])
        );
        assert!(!p.scan.late);
        let p = projection(written("sort ts desc | head 3"));
        assert_eq!(p.scan.columns, Some(vec!["ts".into()]));
        assert!(p.scan.late);
        let p = projection(written("tail 2"));
        assert_eq!(p.scan.columns, Some(vec![]));
        assert!(p.scan.late);
        // Whole events: unbounded, `drop`, or a `where` of other extractors.
        for text in [
            "sort ts",
            "drop x | select y",
            "where :addr == 1.2.3.4 | tail 2",
        ] {
            let p = projection(written(text));
            assert_eq!(
                (p.scan.columns.clone(), p.scan.late),
                (None, false),
                "{text}"
            );
        }
    }
}
