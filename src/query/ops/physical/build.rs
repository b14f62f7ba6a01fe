//! The operators of a plan, ready to run, wired to what the scan shares with them.

use super::super::exec::{Head, Operator, Project, Sort, Stages, Summarize, Tail, Where};
use super::super::partial::AggPlan;
use super::{Node, Plan};
use crate::query::memory::MemoryBudget;

impl Plan {
    /// The operators of the plan, and the groups the scan's workers aggregate into when the
    /// plan aggregates in the scan ([`super::ScanSpec::partial`]). Each operator that holds
    /// state charges it to `budget`.
    pub(crate) fn operators(
        &self,
        budget: &std::sync::Arc<MemoryBudget>,
    ) -> (Stages, Option<AggPlan>) {
        let mut ops: Vec<Box<dyn Operator>> = Vec::new();
        let mut aggregate = None;
        let cutoff = self.scan.top.as_ref().map(|t| t.cutoff.clone());
        for node in &self.nodes {
            match node {
                Node::Where(q) => ops.push(Box::new(Where::new(q.clone()))),
                Node::Project { fields, keep } => {
                    ops.push(Box::new(Project::new(fields.clone(), *keep)))
                }
                Node::Sort {
                    keys,
                    limit,
                    top,
                    label,
                } => {
                    let mut sort = Sort::new(keys.clone(), *limit, budget.reserve(label.clone()));
                    if let (true, Some(c)) = (*top, &cutoff) {
                        sort.publish_to(c.clone());
                    }
                    ops.push(Box::new(sort));
                }
                Node::Head(n) => ops.push(Box::new(Head::new(*n))),
                Node::Tail { n, top, label } => {
                    let mut tail = Tail::new(*n, budget.reserve(label.clone()));
                    if let (true, Some(c)) = (*top, &cutoff) {
                        tail.publish_to(c.clone());
                    }
                    ops.push(Box::new(tail));
                }
                Node::Summarize {
                    name,
                    aggs,
                    by,
                    resolution,
                    skip_unset,
                    partial,
                    feeds_top,
                    label,
                } => {
                    let mut s = Summarize::new(
                        name,
                        aggs.clone(),
                        by.clone(),
                        *resolution,
                        *skip_unset,
                        budget.reserve(label.clone()),
                    );
                    if let Some((keys, n)) = feeds_top {
                        s.feeds_first(keys.clone(), *n);
                    }
                    if *partial {
                        aggregate = Some(s.agg_plan());
                    }
                    ops.push(Box::new(s));
                }
            }
        }
        (Stages::new(ops), aggregate)
    }
}
