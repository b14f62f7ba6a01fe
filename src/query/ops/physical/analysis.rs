//! The one analysis of a parsed chain: its plan as written ([`written`]), then with the
//! pushdown rules applied ([`optimized`]).

use super::super::syntax::{parse_where, AggFunc, AggSpec, OpSpec};
use super::rules::{OPERATOR_RULES, SCAN_RULES};
use super::{Node, Plan, ScanSpec};
use crate::query::{ExprError, Query};

/// The plan of the chain `text` (its leading expression `scan`, its operators `ops`) as
/// written: the scan reads every event whole, the expression is a `where`, each operator a
/// node (`top F N` and `rare F N`: `summarize count() by F | sort count, F | head N`), and
/// only the rules between operators are applied. What runs over input that is no archive
/// search (a pipeline's batches).
pub(crate) fn written(text: &str, scan: &Query, ops: &[OpSpec]) -> Result<Plan, ExprError> {
    let mut nodes = Vec::new();
    if scan.expr().is_some() {
        nodes.push(Node::Where(scan.clone()));
    }
    for op in ops {
        match op {
            OpSpec::Where { text: w, pos } => nodes.push(Node::Where(parse_where(text, w, *pos)?)),
            OpSpec::Select(f) | OpSpec::Drop(f) => nodes.push(Node::Project {
                fields: f.iter().map(|f| f.name.clone()).collect(),
                keep: matches!(op, OpSpec::Select(_)),
            }),
            OpSpec::Sort(keys) => nodes.push(Node::Sort {
                keys: keys.iter().map(|(f, d)| (f.name.clone(), *d)).collect(),
                limit: None,
                top: false,
                label: op.describe(),
            }),
            OpSpec::Head(n) => nodes.push(Node::Head(*n)),
            OpSpec::Tail(n) => nodes.push(Node::Tail {
                n: *n,
                top: false,
                label: op.describe(),
            }),
            OpSpec::Summarize {
                aggs,
                by,
                resolution,
            } => nodes.push(Node::Summarize {
                name: "weir.summarize".into(),
                aggs: aggs.clone(),
                by: by.iter().map(|f| f.name.clone()).collect(),
                resolution: *resolution,
                skip_unset: false,
                partial: false,
                feeds_top: None,
                label: op.describe(),
            }),
            OpSpec::Top {
                field,
                limit,
                descending,
            } => {
                let name = if *descending { "weir.top" } else { "weir.rare" };
                let count = AggSpec {
                    name: "count".into(),
                    func: AggFunc::Count,
                    field: None,
                    field_pos: field.pos,
                    pos: field.pos,
                };
                nodes.push(Node::Summarize {
                    name: name.into(),
                    aggs: vec![count],
                    by: vec![field.name.clone()],
                    resolution: None,
                    skip_unset: true,
                    partial: false,
                    feeds_top: None,
                    label: op.describe(),
                });
                // Summarize names its output fields as written: sort by those names.
                nodes.push(Node::Sort {
                    keys: vec![("count".into(), *descending), (field.name.clone(), false)],
                    limit: None,
                    top: false,
                    label: op.describe(),
                });
                nodes.push(Node::Head(*limit));
            }
        }
    }
    let plan = Plan {
        scan: ScanSpec::new(Query::all()),
        nodes,
    };
    Ok(OPERATOR_RULES.iter().fold(plan, |p, (_, rule)| rule(p)))
}

/// The plan of a chain over an archive: [`written`], then the rules that push work into
/// the scan.
pub(crate) fn optimized(text: &str, scan: &Query, ops: &[OpSpec]) -> Result<Plan, ExprError> {
    let plan = written(text, scan, ops)?;
    Ok(SCAN_RULES.iter().fold(plan, |p, (_, rule)| rule(p)))
}
