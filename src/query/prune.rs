//! Deciding from metadata, before any row is read, whether a segment or batch can hold a match.
//!
//! - A **segment** is known by its catalog entry: the names of its schemas (with event counts)
//!   and the range of its `ts` values. `#type` predicates are decided by the name;
//!   `#timestamp` and `:timestamp` comparisons with a time are false when the range cannot
//!   satisfy them (and when no event has a `ts`). Everything else is "maybe". A schema name
//!   whose answer is [`Tri::False`] needs none of its batches; one that is [`Tri::True`] is
//!   counted from the catalog without opening the segment.
//! - A **batch** is known by its full schema ([`Program`]: a constant answer, e.g. a missing
//!   field or another `#type`) and its `ts` range, which prunes every comparison of the
//!   schema's `ts` field with a time, whichever extractor named it.
//!
//! Both are conservative: "maybe" reads the rows.

use super::bind::{Bound, Program, Test};
use super::eval::Fast;
use super::literal::Literal;
use super::parser::{Expr, Extractor, Meta, Op, TypeName};
use crate::segment::Segment;
use crate::store::BatchRef;

/// A three-valued answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tri {
    /// No event matches.
    False,
    /// Every event matches.
    True,
    /// Rows must be read.
    Maybe,
}

impl Tri {
    fn and(self, other: Tri) -> Tri {
        match (self, other) {
            (Tri::False, _) | (_, Tri::False) => Tri::False,
            (Tri::True, Tri::True) => Tri::True,
            _ => Tri::Maybe,
        }
    }

    fn or(self, other: Tri) -> Tri {
        match (self, other) {
            (Tri::True, _) | (_, Tri::True) => Tri::True,
            (Tri::False, Tri::False) => Tri::False,
            _ => Tri::Maybe,
        }
    }
}

/// Whether a `ts` range `[lo, hi]` (`None`: no event has a `ts`) can satisfy `ts op t`.
fn ts_may(range: Option<(i64, i64)>, op: Op, t: i64) -> bool {
    let Some((lo, hi)) = range else {
        return false;
    };
    match op {
        Op::Eq => lo <= t && t <= hi,
        Op::Lt => lo < t,
        Op::Le => lo <= t,
        Op::Gt => hi > t,
        Op::Ge => hi >= t,
        _ => true,
    }
}

/// The answer for the events of schema `name` in a segment whose `ts` values span `range`,
/// from a normalized expression (`None`: everything).
pub fn by_name(expr: Option<&Expr>, name: &str, range: Option<(i64, i64)>) -> Tri {
    match expr {
        None => Tri::True,
        Some(e) => name_tri(e, name, range),
    }
}

fn name_tri(e: &Expr, name: &str, range: Option<(i64, i64)>) -> Tri {
    match e {
        Expr::And(v) => v
            .iter()
            .fold(Tri::True, |acc, e| acc.and(name_tri(e, name, range))),
        Expr::Or(v) => v
            .iter()
            .fold(Tri::False, |acc, e| acc.or(name_tri(e, name, range))),
        Expr::Not(_) => Tri::Maybe,
        Expr::Pred(p) => match (&p.extractor, &p.value) {
            (Extractor::Meta(Meta::Type), lit) => {
                let v = crate::value::ValueRef::String(name.as_bytes());
                if super::eval::holds(&v, p.op, lit) {
                    Tri::True
                } else {
                    Tri::False
                }
            }
            (
                Extractor::Meta(Meta::Timestamp) | Extractor::Type(TypeName::Timestamp),
                Literal::Time(t),
            ) if !ts_may(range, p.op, *t) => Tri::False,
            _ => Tri::Maybe,
        },
    }
}

impl Program {
    /// Whether a batch of this schema whose `ts` values span `range` can hold a match.
    pub fn may_match(&self, range: Option<(i64, i64)>) -> bool {
        bound_may(&self.bound, self.ts_index, range)
    }
}

fn bound_may(b: &Bound, ts: Option<usize>, range: Option<(i64, i64)>) -> bool {
    match b {
        Bound::Const(b) => *b,
        Bound::And(v) => v.iter().all(|b| bound_may(b, ts, range)),
        Bound::Or(v) => v.iter().any(|b| bound_may(b, ts, range)),
        Bound::Test(t) if Some(t.field) != ts => true,
        // A range (one comparison, or several of `ts` merged): it must meet the batch's.
        Bound::Test(Test {
            fast:
                Fast::Signed {
                    lo,
                    hi,
                    negate: false,
                },
            ..
        }) => range.is_some_and(|(a, b)| a <= *hi && *lo <= b),
        Bound::Test(t) => match &t.lit {
            Literal::Time(x) => ts_may(range, t.op, *x),
            _ => true,
        },
    }
}

/// Whether batch `i` of `seg` can hold a match of `p`, from the batch's metadata alone (its
/// schema's constant answer and its `ts` range): the one batch-level check of a search, made
/// before the batch's rows are verified or read.
pub(crate) fn segment_batch(p: &Program, seg: &Segment, i: usize) -> bool {
    let Some((_, _, ts)) = seg.batch_meta(i) else {
        return true;
    };
    p.constant() != Some(false) && p.may_match(ts)
}

/// [`segment_batch`] for a batch of the write-ahead log.
pub(crate) fn wal_batch(p: &Program, b: &BatchRef) -> bool {
    p.constant() != Some(false) && p.may_match(b.ts_range())
}
