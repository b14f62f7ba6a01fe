//! `select F, ...` (the named fields, in the order named; a name matching several fields
//! takes them all, in schema order; a concept (`crate::query::concepts`) the first of its
//! fields the schema has, as a column named by the concept; `#id` is the event ID, a field
//! `#id` of type `count`) and `drop F, ...` (all but the named fields: a concept all of its
//! fields). `#type` in a `select` is the event's schema name, a field `#type` of type
//! `string`, and makes the selection a timeline: every name is a column, in the order named,
//! unset where the schema lacks the field (of type `string` there), so that events of several
//! schemas share one header in the table and CSV outputs (which start a new block only when
//! the column names change). The schema keeps its name; an event left without fields is
//! dropped.

use std::sync::Arc;

use super::super::slice::{Fields, Slice};
use super::{Flow, Operator};
use crate::query::QueryError;
use crate::types::{Field, Schema, SchemaRef, Type};
use crate::value::RowCursor;

/// The output schema of one input schema and the input fields it takes, in its order
/// ([`ID`] for the event ID; `None`: none of its fields is kept).
type Plan = Option<(SchemaRef, Vec<usize>)>;

/// The place of `#id` among the fields a `select` takes.
const ID: usize = usize::MAX;
/// The place of `#type` among the fields a `select` takes.
const TYPE: usize = usize::MAX - 1;
/// The place of a named field the schema lacks, in a timeline (`select #type, ...`).
const ABSENT: usize = usize::MAX - 2;

/// `select` or `drop`.
pub(crate) struct Project {
    names: Vec<String>,
    keep: bool,
    /// Per input schema: the output schema and the input fields it takes, in its order.
    cache: Vec<(SchemaRef, Plan)>,
}

impl Project {
    /// `select` (`keep`) or `drop` of `names`.
    pub fn new(names: Vec<String>, keep: bool) -> Project {
        Project {
            names,
            keep,
            cache: Vec::new(),
        }
    }

    fn plan(&self, schema: &SchemaRef) -> Plan {
        let mut take: Vec<usize> = Vec::new();
        // Output names other than the field's own: a concept's column is named by it.
        let mut renamed: Vec<(usize, &str)> = Vec::new();
        let concepts = crate::query::concepts::active();
        let timeline = self.keep && self.names.iter().any(|n| n == "#type");
        if self.keep {
            for n in &self.names {
                if n == "#id" && !take.contains(&ID) {
                    take.push(ID);
                }
                // (After `summarize ... by #type`, `#type` is a field of its own.)
                if n == "#type" && !schema.fields.iter().any(|f| f.name == "#type") {
                    if !take.contains(&TYPE) {
                        take.push(TYPE);
                    }
                    continue;
                }
                if let Some(fields) = concepts.fields_in(n, schema) {
                    // The first of the concept's fields the schema has, named by the concept.
                    match fields.first() {
                        Some(&i) if !take.contains(&i) => {
                            renamed.push((take.len(), n));
                            take.push(i);
                        }
                        None if timeline => {
                            renamed.push((take.len(), n));
                            take.push(ABSENT);
                        }
                        _ => {}
                    }
                    continue;
                }
                let found = Fields::resolve_record(schema, n).indices;
                if found.is_empty() && timeline && !n.starts_with('#') {
                    renamed.push((take.len(), n));
                    take.push(ABSENT);
                }
                for i in found {
                    if !take.contains(&i) {
                        take.push(i);
                    }
                }
            }
        } else {
            let mut gone = vec![false; schema.fields.len()];
            for n in &self.names {
                for i in Fields::resolve_record(schema, n).indices {
                    gone[i] = true;
                }
            }
            take = (0..schema.fields.len()).filter(|&i| !gone[i]).collect();
        }
        if take.is_empty() || take.iter().all(|&i| i == ABSENT) {
            return None;
        }
        let fields = take
            .iter()
            .enumerate()
            .map(
                |(k, &i)| match (i, renamed.iter().find(|(at, _)| *at == k)) {
                    (ID, _) => Field::new("#id", Type::Count),
                    (TYPE, _) => Field::new("#type", Type::String),
                    (ABSENT, Some((_, name))) => Field::new(*name, Type::String),
                    (ABSENT, None) => Field::new("", Type::String),
                    (i, Some((_, name))) => Field::new(*name, schema.fields[i].ty.clone()),
                    (i, None) => schema.fields[i].clone(),
                },
            )
            .collect();
        Some((Arc::new(Schema::new(schema.name.clone(), fields)), take))
    }
}

impl Operator for Project {
    fn push(&mut self, slice: Slice, out: &mut Vec<Slice>) -> Result<Flow, QueryError> {
        let i = match self
            .cache
            .iter()
            .position(|(s, _)| Arc::ptr_eq(s, slice.schema()) || **s == **slice.schema())
        {
            Some(i) => i,
            None => {
                let plan = self.plan(slice.schema());
                self.cache.push((slice.schema().clone(), plan));
                self.cache.len() - 1
            }
        };
        let Some((schema, take)) = &self.cache[i].1 else {
            return Ok(Flow::More);
        };
        if take.len() == slice.schema().fields.len()
            && take.iter().all(|&i| i < slice.schema().fields.len())
            && take.windows(2).all(|w| w[0] < w[1])
        {
            // Every field, in order: the rows as they are.
            let mut s = Slice::new(schema.clone());
            for (k, row) in slice.rows().enumerate() {
                s.push(row, slice.id(k));
            }
            out.push(s);
            return Ok(Flow::More);
        }
        let n = slice.schema().fields.len();
        let mut s = Slice::new(schema.clone());
        let mut spans = vec![(0usize, 0usize); n];
        for (k, row) in slice.rows().enumerate() {
            let mut c = RowCursor::new(row);
            c.row_header(n)?;
            for span in spans.iter_mut() {
                let a = c.position();
                c.skip()?;
                *span = (a, c.position());
            }
            s.push_with(slice.id(k), |buf| {
                crate::value::RowEncoder::new(buf).array(take.len() as u32);
                for &f in take {
                    match (f, slice.id(k)) {
                        (ID, Some(id)) => crate::value::RowEncoder::new(buf).uint(id),
                        (ID, None) | (ABSENT, _) => crate::value::RowEncoder::new(buf).null(),
                        (TYPE, _) => {
                            crate::value::RowEncoder::new(buf).bytes(slice.schema().name.as_bytes())
                        }
                        (f, _) => {
                            let (a, b) = spans[f];
                            buf.extend_from_slice(&row[a..b]);
                        }
                    }
                }
            });
        }
        out.push(s);
        Ok(Flow::More)
    }

    fn finish(&mut self, _out: &mut Vec<Slice>) -> Result<bool, QueryError> {
        Ok(false)
    }
}
