//! `where EXPR` after the first operator: the expression evaluated on each row, with one
//! compiled program per schema (the same evaluator as the archive search).

use super::super::slice::Slice;
use super::{Flow, Operator};
use crate::query::search::Programs;
use crate::query::{Query, QueryError};

/// Keeps the events that match an expression.
pub(crate) struct Where {
    query: Query,
    programs: Programs,
}

impl Where {
    pub fn new(query: Query) -> Where {
        Where {
            query,
            programs: Programs::default(),
        }
    }
}

impl Operator for Where {
    fn push(&mut self, slice: Slice, out: &mut Vec<Slice>) -> Result<Flow, QueryError> {
        let program = self.programs.get(&self.query, slice.schema());
        match program.constant() {
            Some(true) => out.push(slice),
            Some(false) => {}
            None => {
                let mut kept = Slice::new(slice.schema().clone());
                for (i, row) in slice.rows().enumerate() {
                    if program.matches(row)? {
                        kept.push(row, slice.id(i));
                    }
                }
                if !kept.is_empty() {
                    out.push(kept);
                }
            }
        }
        Ok(Flow::More)
    }

    fn finish(&mut self, _out: &mut Vec<Slice>) -> Result<bool, QueryError> {
        Ok(false)
    }
}
