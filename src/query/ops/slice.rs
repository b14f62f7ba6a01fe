//! [`Slice`]: the unit that flows between operators, events of one schema as msgpack rows
//! (see [`crate::value`]) with their event IDs; and [`Fields`], a field name resolved in one
//! schema.

use crate::query::bind::names_field;
use crate::types::{SchemaRef, Type};
use crate::value::{DecodeError, RowCursor, ValueRef};

/// Events of one schema: rows back to back, each with its event ID (events an aggregation
/// made have none: `ids` is empty).
#[derive(Debug, Clone)]
pub struct Slice {
    schema: SchemaRef,
    data: Vec<u8>,
    /// End of each row in `data`.
    ends: Vec<usize>,
    ids: Vec<u64>,
}

impl Slice {
    /// An empty slice of `schema`.
    pub fn new(schema: SchemaRef) -> Slice {
        Slice {
            schema,
            data: Vec::new(),
            ends: Vec::new(),
            ids: Vec::new(),
        }
    }

    /// The schema of the events.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there is no event.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes held.
    pub fn byte_size(&self) -> usize {
        self.data.len() + self.ends.len() * 16
    }

    /// Appends an encoded row (of this schema) with its ID, if it has one.
    pub fn push(&mut self, row: &[u8], id: Option<u64>) {
        self.data.extend_from_slice(row);
        self.ends.push(self.data.len());
        if let Some(id) = id {
            self.ids.push(id);
        }
    }

    /// Appends a row written by `write` into the slice's buffer.
    pub fn push_with(&mut self, id: Option<u64>, write: impl FnOnce(&mut Vec<u8>)) {
        write(&mut self.data);
        self.ends.push(self.data.len());
        if let Some(id) = id {
            self.ids.push(id);
        }
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    /// The rows in order.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        (0..self.len()).map(|i| self.row(i))
    }

    /// The ID of event `i`, if the events have IDs.
    pub fn id(&self, i: usize) -> Option<u64> {
        self.ids.get(i).copied()
    }

    /// The event IDs (empty for events an aggregation made).
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// The first `n` events.
    pub fn truncate(&mut self, n: usize) {
        if n < self.len() {
            self.ends.truncate(n);
            self.data.truncate(self.ends.last().copied().unwrap_or(0));
            self.ids.truncate(n);
        }
    }
}

/// The fields of one schema that a field name resolves to (see the resolution rules in
/// [`crate::query::bind`]): the full name, a suffix at a dot, or a schema-qualified name; or
/// a concept's fields ([`crate::query::concepts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fields {
    /// Field indices: ascending for a field name; for a concept, in the order of its
    /// entries (the first is the one an operator reads).
    pub indices: Vec<usize>,
}

impl Fields {
    /// The fields of `schema` that `name` names. For `select` and `drop`, a record's name
    /// (`id`) also names its fields (`id.orig_h`, ...): see [`Fields::resolve_record`].
    pub fn resolve(schema: &SchemaRef, name: &str) -> Fields {
        if let Some(indices) = crate::query::concepts::active().fields_in(name, schema) {
            return Fields { indices };
        }
        Fields {
            indices: schema
                .fields
                .iter()
                .enumerate()
                .filter(|(_, f)| names_field(schema, &f.name, name))
                .map(|(i, _)| i)
                .collect(),
        }
    }

    /// [`Fields::resolve`], or else the fields of the record `name` names (`id`:
    /// `id.orig_h`, `id.orig_p`, ...; `conn.id` too).
    pub fn resolve_record(schema: &SchemaRef, name: &str) -> Fields {
        let direct = Fields::resolve(schema, name);
        if !direct.indices.is_empty() {
            return direct;
        }
        Fields {
            indices: schema
                .fields
                .iter()
                .enumerate()
                .filter(|(_, f)| {
                    f.name
                        .match_indices('.')
                        .any(|(dot, _)| names_field(schema, &f.name[..dot], name))
                })
                .map(|(i, _)| i)
                .collect(),
        }
    }

    /// The first field named, if any.
    pub fn first(&self) -> Option<usize> {
        self.indices.first().copied()
    }
}

/// Where an operator reads a value in the events of one schema: a field, or the schema's
/// name (`#type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The field at this index, of this type.
    Field(usize, Type),
    /// `#type`: the schema's name, a string.
    SchemaName,
}

impl Source {
    /// What `name` reads in `schema`: `#type`, or the first field it names. The events of
    /// `summarize ... by #type` (and `top #type`) have a field named `#type` with the
    /// grouped schema names: `#type` reads that field there, not their own schema's name.
    pub fn resolve(schema: &SchemaRef, name: &str) -> Option<Source> {
        if name == "#type" {
            let field = schema
                .fields
                .iter()
                .enumerate()
                .find(|(_, f)| f.name == name);
            return Some(match field {
                Some((i, f)) => Source::Field(i, f.ty.clone()),
                None => Source::SchemaName,
            });
        }
        let i = Fields::resolve(schema, name).first()?;
        Some(Source::Field(i, schema.fields[i].ty.clone()))
    }

    /// The type of the values read.
    pub fn ty(&self) -> Type {
        match self {
            Source::Field(_, t) => t.clone(),
            Source::SchemaName => Type::String,
        }
    }

    /// The value in `row` (of `schema`).
    pub fn read<'a>(
        &self,
        schema: &'a SchemaRef,
        row: &'a [u8],
    ) -> Result<ValueRef<'a>, DecodeError> {
        match self {
            Source::Field(i, ty) => read_field(row, schema.fields.len(), *i, ty),
            Source::SchemaName => Ok(ValueRef::String(schema.name.as_bytes())),
        }
    }
}

/// Reads field `index` (of type `ty`) of a row of a schema with `n` fields.
pub fn read_field<'a>(
    row: &'a [u8],
    n: usize,
    index: usize,
    ty: &Type,
) -> Result<ValueRef<'a>, DecodeError> {
    let mut c = RowCursor::new(row);
    c.row_header(n)?;
    c.skip_many(index)?;
    c.read(ty)
}
