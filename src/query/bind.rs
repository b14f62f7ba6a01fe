//! Binding an expression to a schema: extractors resolved to field indices, each comparison
//! type-checked against its field, meta extractors decided outright. The result, a
//! [`Program`], is what [`super::eval`] runs on rows and [`super::prune`] runs on metadata, with
//! its comparisons precompiled for the evaluator ([`Fast`]) and the bytes a batch needs to
//! hold a match ([`Needles`]).
//!
//! # Resolution
//!
//! A field extractor `N` names every field whose qualified name `SCHEMA.FIELD` (e.g.
//! `zeek.conn.id.orig_h`) equals `N` or ends with `.N`: the full name (`id.orig_h`), any
//! suffix at a dot (`orig_h`), or a schema-qualified name (`conn.duration`,
//! `zeek.conn.id.resp_h`). Several matching fields mean any of them. A type extractor names
//! every scalar field of its type (`:count` also ports; `:string` also `file` fields;
//! `:subnet` also addresses, compared by membership); `:timestamp` and `#timestamp` name the
//! schema's `ts` field.
//!
//! # Types
//!
//! [`well_typed`] says which comparisons make sense (numbers compare across `count`, `int`,
//! `real` and `port`; see the table in [`super`]). A comparison that is not well-typed for a
//! field is false for that field, and a missing field is false for the schema. The query
//! reports an error only when no schema makes a comparison well-typed (see [`Typing`]).

use super::holds::holds;
use super::literal::Literal;
use super::literal::{addr_bits, v4_of};
use super::op::Op;
use super::parser::{Expr, Extractor, Meta, Predicate, TypeName};
use crate::types::{Schema, SchemaRef, Type};

/// A bound expression: constants and comparisons on field indices, negations already pushed
/// into the operators.
#[derive(Debug, Clone)]
pub(crate) enum Bound {
    /// Decided without looking at a row.
    Const(bool),
    /// All of them.
    And(Vec<Bound>),
    /// Any of them.
    Or(Vec<Bound>),
    /// One comparison on one field.
    Test(Test),
    /// A comparison of the event's ID (`#id`).
    Id(IdRange),
}

/// `#id` compared with a count: "the ID lies in `lo..=hi`" (an empty range when `lo > hi`),
/// negated for `!=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdRange {
    pub lo: u64,
    pub hi: u64,
    pub negate: bool,
}

impl IdRange {
    /// Whether the event with ID `id` matches.
    pub(crate) fn holds(self, id: u64) -> bool {
        (self.lo <= id && id <= self.hi) != self.negate
    }

    /// The answer for every event with an ID in `ids` when it is the same for all of them
    /// (`None`: it differs, or `ids` is empty).
    pub(crate) fn decide(self, ids: &std::ops::Range<u64>) -> Option<bool> {
        let last = ids.end.checked_sub(1).filter(|&l| l >= ids.start)?;
        if self.lo > self.hi {
            // No ID is in an empty range.
            Some(self.negate)
        } else if self.lo <= ids.start && last <= self.hi {
            Some(!self.negate)
        } else if self.hi < ids.start || self.lo > last {
            Some(self.negate)
        } else {
            None
        }
    }
}

/// The bound form of `#id op lit` (`lit` a count or an int, or for `in`/`!in` a list of
/// them: checked at parse time; anything else never matches).
pub(crate) fn id_bound(op: Op, lit: &Literal) -> Bound {
    match (op, lit) {
        (Op::In, Literal::List(items)) => {
            Bound::Or(items.iter().map(|x| id_bound(Op::Eq, x)).collect())
        }
        (Op::NotIn, Literal::List(items)) => {
            Bound::And(items.iter().map(|x| id_bound(Op::Ne, x)).collect())
        }
        _ => {
            let t = Test {
                field: 0,
                ty: Type::Count,
                op,
                lit: lit.clone(),
                proto: None,
                slot: 0,
                proto_slot: None,
                fast: Fast::None,
            };
            match Fast::of(&t) {
                Fast::Unsigned { lo, hi, negate } => Bound::Id(IdRange { lo, hi, negate }),
                _ => Bound::Const(false),
            }
        }
    }
}

/// A comparison of field `field` (of type `ty`) with a literal.
#[derive(Debug, Clone)]
pub(crate) struct Test {
    pub field: usize,
    pub ty: Type,
    pub op: Op,
    pub lit: Literal,
    /// The schema's `proto` field, for a port literal with a protocol.
    pub proto: Option<usize>,
    /// Where `field` and `proto` are in the program's `fields` (what the evaluator
    /// indexes its field offsets by); set by [`Program::new`].
    pub slot: usize,
    pub proto_slot: Option<usize>,
    /// A cheaper equivalent of the comparison for the evaluator, where there is one.
    pub fast: Fast,
}

/// How a predicate fared in the schemas bound so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct Typing {
    /// Some schema has a field the extractor names.
    pub resolved: bool,
    /// Some such field makes the comparison well-typed.
    pub well_typed: bool,
    /// The first field that did not: its name and type.
    pub mismatch: Option<(String, Type)>,
    /// The schemas that have fields the extractor names but none that makes the comparison
    /// well-typed: the schema's name, the first such field and its type.
    pub ill_typed: Vec<(String, String, Type)>,
}

/// An expression bound to one schema.
#[derive(Debug, Clone)]
pub struct Program {
    pub(crate) schema: SchemaRef,
    pub(crate) bound: Bound,
    /// The fields the comparisons read (ascending, no duplicates).
    pub(crate) fields: Vec<usize>,
    pub(crate) types: Vec<Type>,
    pub(crate) ts_index: Option<usize>,
    /// Bytes a batch must contain to hold a match.
    pub(crate) needles: Option<Needles>,
    /// Whether it compares event IDs (`#id`): see [`Program::for_ids`].
    pub(crate) has_id: bool,
}

impl Program {
    /// Binds `expr` (normalized; `None`: everything) to `schema`, recording each predicate's
    /// typing in `typing` (indexed by predicate id).
    pub(crate) fn new(expr: Option<&Expr>, schema: &SchemaRef, typing: &mut [Typing]) -> Program {
        let mut bound = match expr {
            None => Bound::Const(true),
            Some(e) => simplify(bind(e, schema, typing)),
        };
        let mut fields = Vec::new();
        collect_fields(&bound, &mut fields);
        fields.sort_unstable();
        fields.dedup();
        prepare(&mut bound, &fields);
        let needles = Needles::of(&bound);
        Program {
            needles,
            has_id: has_id(&bound),
            schema: schema.clone(),
            bound,
            fields,
            types: schema.fields.iter().map(|f| f.ty.clone()).collect(),
            ts_index: schema.ts_index(),
        }
    }

    /// This program for the events with IDs in `ids` (a batch's), its `#id` comparisons
    /// decided where they hold for all of them or for none (so that [`Program::constant`], the
    /// pruning and the counts from metadata see them); `None` when it compares no IDs (it is
    /// its own).
    pub(crate) fn for_ids(&self, ids: &std::ops::Range<u64>) -> Option<Program> {
        if !self.has_id {
            return None;
        }
        let bound = simplify(decide_ids(self.bound.clone(), ids));
        Some(Program {
            has_id: has_id(&bound),
            bound,
            ..self.clone()
        })
    }

    /// The schema bound to.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// `Some(answer)` when every event of the schema gives the same answer.
    pub fn constant(&self) -> Option<bool> {
        match self.bound {
            Bound::Const(b) => Some(b),
            _ => None,
        }
    }
}

fn has_id(b: &Bound) -> bool {
    match b {
        Bound::Id(_) => true,
        Bound::And(v) | Bound::Or(v) => v.iter().any(has_id),
        Bound::Const(_) | Bound::Test(_) => false,
    }
}

/// `b` with each ID comparison that the IDs `ids` decide replaced by its answer.
fn decide_ids(b: Bound, ids: &std::ops::Range<u64>) -> Bound {
    match b {
        Bound::Id(r) => r.decide(ids).map_or(Bound::Id(r), Bound::Const),
        Bound::And(v) => Bound::And(v.into_iter().map(|b| decide_ids(b, ids)).collect()),
        Bound::Or(v) => Bound::Or(v.into_iter().map(|b| decide_ids(b, ids)).collect()),
        other => other,
    }
}

/// Replaces each test's field (and `proto` field) index by `pos` of it; slots stay, as they
/// are positions among the fields read, in the same order.
fn collect_fields(b: &Bound, out: &mut Vec<usize>) {
    match b {
        Bound::Const(_) | Bound::Id(_) => {}
        Bound::And(v) | Bound::Or(v) => v.iter().for_each(|b| collect_fields(b, out)),
        Bound::Test(t) => {
            out.push(t.field);
            out.extend(t.proto);
        }
    }
}

/// Sets each test's slots (positions in `fields`) and its fast form.
fn prepare(b: &mut Bound, fields: &[usize]) {
    match b {
        Bound::Const(_) | Bound::Id(_) => {}
        Bound::Or(v) => v.iter_mut().for_each(|b| prepare(b, fields)),
        Bound::And(v) => {
            v.iter_mut().for_each(|b| prepare(b, fields));
            merge_ranges(v);
            if v.len() == 1 {
                if let Some(one) = v.pop() {
                    *b = one;
                }
            }
        }
        Bound::Test(t) => {
            t.slot = slot_of(fields, t.field);
            t.proto_slot = t.proto.map(|f| slot_of(fields, f));
            t.fast = Fast::of(t);
        }
    }
}

/// Merges the range tests of one field in a conjunction into one (`ts >= a && ts < b` is
/// one test of `ts` in `a..=b-1`): one decoding of the field instead of two. The first range
/// test of each field takes the later ones; linear in the conjunction's length.
fn merge_ranges(v: &mut Vec<Bound>) {
    // Per field, the position of its first range test.
    let mut first: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    let mut keep = vec![true; v.len()];
    for j in 0..v.len() {
        let Bound::Test(b) = &v[j] else { continue };
        let (field, fast) = (b.field, b.fast);
        if fast.intersect(fast).is_none() {
            // Not a range.
            continue;
        }
        let Some(&i) = first.get(&field) else {
            first.insert(field, j);
            continue;
        };
        if let Bound::Test(a) = &mut v[i] {
            if let Some(merged) = a.fast.intersect(fast) {
                a.fast = merged;
                keep[j] = false;
            }
        }
    }
    let mut k = keep.iter();
    v.retain(|_| k.next().copied().unwrap_or(true));
}

/// The position of field `f` in `fields` (which holds it).
fn slot_of(fields: &[usize], f: usize) -> usize {
    fields.binary_search(&f).unwrap_or(0)
}

/// Folds constants: `x && false` is false, `x || true` is true, one-element lists unwrap.
fn simplify(b: Bound) -> Bound {
    match b {
        Bound::And(v) => {
            let mut out = Vec::new();
            for b in v.into_iter().map(simplify) {
                match b {
                    Bound::Const(true) => {}
                    Bound::Const(false) => return Bound::Const(false),
                    other => out.push(other),
                }
            }
            match out.len() {
                0 => Bound::Const(true),
                1 => out.remove(0),
                _ => Bound::And(out),
            }
        }
        Bound::Or(v) => {
            let mut out = Vec::new();
            for b in v.into_iter().map(simplify) {
                match b {
                    Bound::Const(false) => {}
                    Bound::Const(true) => return Bound::Const(true),
                    other => out.push(other),
                }
            }
            match out.len() {
                0 => Bound::Const(false),
                1 => out.remove(0),
                _ => Bound::Or(out),
            }
        }
        other => other,
    }
}

fn bind(e: &Expr, schema: &Schema, typing: &mut [Typing]) -> Bound {
    match e {
        Expr::And(v) => Bound::And(v.iter().map(|e| bind(e, schema, typing)).collect()),
        Expr::Or(v) => Bound::Or(v.iter().map(|e| bind(e, schema, typing)).collect()),
        // Normalized expressions have none; bind one anyway as its meaning.
        Expr::Not(inner) => bind(&(**inner).clone().normalize_negated(), schema, typing),
        Expr::Pred(p) => bind_predicate(p, schema, typing),
    }
}

impl Expr {
    /// `!self` in negation normal form.
    fn normalize_negated(self) -> Expr {
        Expr::Not(Box::new(self)).normalize()
    }
}

/// Whether the field named `name` by a field extractor is field `f` of `schema`.
pub(crate) fn names_field(schema: &Schema, field: &str, name: &str) -> bool {
    // SCHEMA.FIELD == name, or SCHEMA.FIELD ends with ".name".
    let qualified_len = schema.name.len() + 1 + field.len();
    if name.len() > qualified_len {
        return false;
    }
    if name.len() <= field.len() {
        return field.ends_with(name)
            && (name.len() == field.len()
                || field.as_bytes()[field.len() - name.len() - 1] == b'.');
    }
    // The name reaches into the schema name.
    let in_schema = name.len() - field.len() - 1;
    let (head, tail) = name.split_at(name.len() - field.len());
    tail == field
        && head.ends_with('.')
        && schema.name.ends_with(&head[..in_schema])
        && (in_schema == schema.name.len()
            || schema.name.as_bytes()[schema.name.len() - in_schema - 1] == b'.')
}

/// The schema's `proto` field (a string or enum), for port protocols.
fn proto_field(schema: &Schema) -> Option<usize> {
    schema
        .fields
        .iter()
        .position(|f| f.name == "proto" && f.ty.is_stringy())
}

/// The fields a type extractor names, each with the operator to use on it.
fn type_fields(schema: &Schema, t: TypeName, op: Op) -> Vec<(usize, Op)> {
    if t == TypeName::Timestamp {
        return schema.ts_index().map(|i| (i, op)).into_iter().collect();
    }
    schema
        .fields
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let op = type_op(t, &f.ty, op)?;
            Some((i, op))
        })
        .collect()
}

/// The operator a type extractor uses on a field of type `ty`, if it names such fields.
pub(crate) fn type_op(t: TypeName, ty: &Type, op: Op) -> Option<Op> {
    let hit = match t {
        TypeName::Addr => *ty == Type::Addr,
        TypeName::Subnet => {
            if *ty == Type::Addr {
                // `:subnet == 10.0.0.0/8` also matches addresses in it.
                return Some(match op {
                    Op::Eq => Op::In,
                    Op::Ne => Op::NotIn,
                    other => other,
                });
            }
            *ty == Type::Subnet
        }
        TypeName::Count => matches!(ty, Type::Count | Type::Port),
        TypeName::Int => *ty == Type::Int,
        TypeName::Real => *ty == Type::Double,
        TypeName::String => matches!(ty, Type::String | Type::File),
        TypeName::Bool => *ty == Type::Bool,
        TypeName::Time | TypeName::Timestamp => *ty == Type::Time,
        TypeName::Duration => *ty == Type::Interval,
        TypeName::Port => *ty == Type::Port,
        TypeName::Enum => *ty == Type::Enum,
        TypeName::Pattern => *ty == Type::Pattern,
    };
    hit.then_some(op)
}

/// The types a type extractor can name (for the check that needs no schema).
pub(crate) fn type_candidates(t: TypeName) -> &'static [Type] {
    match t {
        TypeName::Addr => &[Type::Addr],
        TypeName::Subnet => &[Type::Subnet, Type::Addr],
        TypeName::Count => &[Type::Count, Type::Port],
        TypeName::Int => &[Type::Int],
        TypeName::Real => &[Type::Double],
        TypeName::String => &[Type::String, Type::File],
        TypeName::Bool => &[Type::Bool],
        TypeName::Time | TypeName::Timestamp => &[Type::Time],
        TypeName::Duration => &[Type::Interval],
        TypeName::Port => &[Type::Port],
        TypeName::Enum => &[Type::Enum],
        TypeName::Pattern => &[Type::Pattern],
    }
}

fn test(schema: &Schema, field: usize, op: Op, lit: &Literal) -> Bound {
    let ty = schema.fields[field].ty.clone();
    let proto = match lit {
        Literal::Port(_, Some(_)) => proto_field(schema),
        _ => None,
    };
    Bound::Test(Test {
        field,
        ty,
        op,
        lit: lit.clone(),
        proto,
        slot: 0,
        proto_slot: None,
        fast: Fast::None,
    })
}

fn bind_predicate(p: &Predicate, schema: &Schema, typing: &mut [Typing]) -> Bound {
    let lit = &p.value;
    match &p.extractor {
        Extractor::Meta(Meta::Type) => {
            let name = crate::value::ValueRef::String(schema.name.as_bytes());
            Bound::Const(holds(&name, p.op, lit))
        }
        Extractor::Meta(Meta::Field) => Bound::Const(field_meta(schema, p.op, lit)),
        Extractor::Meta(Meta::Id) => id_bound(p.op, lit),
        Extractor::Meta(Meta::Timestamp) => Bound::Or(
            type_fields(schema, TypeName::Timestamp, p.op)
                .into_iter()
                .map(|(i, op)| test(schema, i, op, lit))
                .collect(),
        ),
        Extractor::Type(t) => Bound::Or(
            type_fields(schema, *t, p.op)
                .into_iter()
                .filter(|(i, op)| well_typed(&schema.fields[*i].ty, *op, lit))
                .map(|(i, op)| test(schema, i, op, lit))
                .collect(),
        ),
        Extractor::Field(name) => {
            if let Some(fields) = super::concepts::active().fields_in(name, schema) {
                return bind_concept(p, schema, &fields, typing);
            }
            let mut any = Vec::new();
            let t = typing.get_mut(p.id);
            let mut t_fallback = Typing::default();
            let t = t.unwrap_or(&mut t_fallback);
            let mut first_bad: Option<usize> = None;
            for (i, f) in schema.fields.iter().enumerate() {
                if !names_field(schema, &f.name, name) {
                    continue;
                }
                t.resolved = true;
                if well_typed(&f.ty, p.op, lit) {
                    any.push(test(schema, i, p.op, lit));
                } else if first_bad.is_none() {
                    first_bad = Some(i);
                }
            }
            match first_bad.and_then(|i| schema.fields.get(i)) {
                _ if !any.is_empty() => t.well_typed = true,
                Some(f) => {
                    if t.mismatch.is_none() {
                        t.mismatch = Some((f.name.clone(), f.ty.clone()));
                    }
                    t.ill_typed
                        .push((schema.name.clone(), f.name.clone(), f.ty.clone()));
                }
                None => {}
            }
            Bound::Or(any)
        }
    }
}

/// A predicate on a concept (see [`super::concepts`]): over `fields`, the concept's fields
/// that `schema` has, the disjunction of the well-typed comparisons; for a negative operator
/// the negation of the positive disjunction, so every such field must differ (`!(c == x)`
/// and `c != x` mean the same). No well-typed field: false, as a missing field. A field of a
/// type the comparison does not suit is left out without a warning (a concept spans types by
/// design); when no schema has one that suits it, the query reports the mismatch.
fn bind_concept(p: &Predicate, schema: &Schema, fields: &[usize], typing: &mut [Typing]) -> Bound {
    let mut t_fallback = Typing::default();
    let t = typing.get_mut(p.id).unwrap_or(&mut t_fallback);
    let mut tests = Vec::new();
    for &i in fields {
        let f = &schema.fields[i];
        t.resolved = true;
        if well_typed(&f.ty, p.op, &p.value) {
            tests.push(test(schema, i, p.op, &p.value));
        } else if t.mismatch.is_none() {
            t.mismatch = Some((f.name.clone(), f.ty.clone()));
        }
    }
    if tests.is_empty() {
        return Bound::Const(false);
    }
    t.well_typed = true;
    if p.op.is_negative() {
        Bound::And(tests)
    } else {
        Bound::Or(tests)
    }
}

/// `#field op "name"`: `==` is true when a field of the schema has that name (resolved as a
/// field extractor); other positive operators compare the full field names as strings; a
/// negative operator is true when no field satisfies its positive.
fn field_meta(schema: &Schema, op: Op, lit: &Literal) -> bool {
    let positive = if op.is_negative() { op.negate() } else { op };
    if let (Op::Eq, Literal::String(s)) = (positive, lit) {
        // `#field == "net.src.port"`: the schema has a field of the concept.
        let concept = std::str::from_utf8(s)
            .ok()
            .and_then(|s| super::concepts::active().fields_in(s, schema));
        if let Some(fields) = concept {
            return fields.is_empty() == op.is_negative();
        }
    }
    let any = schema.fields.iter().any(|f| match (positive, lit) {
        (Op::Eq, Literal::String(s)) => {
            std::str::from_utf8(s).is_ok_and(|s| names_field(schema, &f.name, s))
        }
        (Op::In, Literal::List(items)) => items.iter().any(|x| field_meta(schema, Op::Eq, x)),
        _ => holds(
            &crate::value::ValueRef::String(f.name.as_bytes()),
            positive,
            lit,
        ),
    });
    any != op.is_negative()
}

/// Whether `field op lit` is a meaningful comparison for a field of type `ty`.
///
/// Containers compare element-wise: `x in field` (`field ni x`), `field == x` and the other
/// operators hold when some element does; `field == [a, b]` compares the whole list.
pub(crate) fn well_typed(ty: &Type, op: Op, lit: &Literal) -> bool {
    let op = if op.is_negative() { op.negate() } else { op };
    if let Literal::Nil = lit {
        // Any field may be unset: `== nil` and `!= nil` suit every type.
        return op == Op::Eq;
    }
    if let Some(elem) = ty.element() {
        return match (op, lit) {
            (Op::Eq, Literal::List(items)) => items.iter().all(|x| scalar_ok(elem, Op::Eq, x)),
            (Op::Ni, x) => !matches!(x, Literal::List(_)) && scalar_ok(elem, Op::Eq, x),
            (op, x) => scalar_ok(elem, op, x),
        };
    }
    scalar_ok(ty, op, lit)
}

fn is_number(ty: &Type) -> bool {
    matches!(ty, Type::Count | Type::Int | Type::Double | Type::Port)
}

/// [`well_typed`] for a scalar type and a positive operator.
fn scalar_ok(ty: &Type, op: Op, lit: &Literal) -> bool {
    use Literal as L;
    match (op, lit) {
        (Op::Eq | Op::Match | Op::Ni, L::Pattern(_)) => ty.is_stringy(),
        (Op::Match, _) | (_, L::Pattern(_)) => false,
        (Op::In, L::List(items)) => items.iter().all(|x| scalar_ok(ty, Op::Eq, x)),
        (_, L::List(_)) => false,
        (_, L::Nil) => op == Op::Eq,
        (Op::In, L::Subnet(..)) => matches!(ty, Type::Addr | Type::Subnet),
        (Op::In, L::String(_)) => ty.is_stringy(),
        (Op::In, _) => false,
        (Op::Ni, L::String(_)) => ty.is_stringy(),
        (Op::Ni, L::Addr(_) | L::Subnet(..)) => *ty == Type::Subnet,
        (Op::Ni, _) => false,
        (_, L::Bool(_)) => *ty == Type::Bool && op == Op::Eq,
        (_, L::Count(_) | L::Int(_) | L::Real(_)) => is_number(ty),
        (_, L::String(_)) => ty.is_stringy(),
        (_, L::Addr(_)) => *ty == Type::Addr,
        (_, L::Subnet(..)) => *ty == Type::Subnet && op == Op::Eq,
        (_, L::Port(..)) => matches!(ty, Type::Port | Type::Count),
        (_, L::Duration(_)) => *ty == Type::Interval,
        (_, L::Time(_)) => *ty == Type::Time,
    }
}

/// A comparison precompiled for the evaluator: "the value lies in `lo..=hi`" (an empty range
/// when `lo > hi`), negated for `!=`. Equivalent to [`holds`] on a set value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fast {
    /// No fast form: decode the value and use [`holds`].
    None,
    /// An unsigned field (`count`, `port`).
    Unsigned { lo: u64, hi: u64, negate: bool },
    /// A signed field (`int`, `time`, `interval`).
    Signed { lo: i64, hi: i64, negate: bool },
    /// `==` (or `!=`, negated) of a string-like field with a string: the bytes compare.
    Bytes { negate: bool },
    /// `==` (or `!=`, negated) of an address field with an address, as VAST compares them
    /// (an IPv4 address equals its IPv4-mapped IPv6 form): the stored bytes as 128 bits (an
    /// IPv4 address in its IPv4-mapped form) equal `bits`, the literal's [`addr_bits`]. No
    /// `IpAddr` is built.
    Addr { bits: u128, negate: bool },
    /// `in` of an address field with a subnet, as VAST compares them ([`in_subnet`]): the
    /// stored bytes as 128 bits (an IPv4 address in its IPv4-mapped form) under the mask of
    /// `prefix` (of 128) equal `net`. No `IpAddr` is built.
    ///
    /// [`in_subnet`]: super::literal::in_subnet
    Subnet { net: u128, mask: u128 },
    /// `in` of an address field with a list of at least [`ListItems::INDEXED_FROM`] items:
    /// the stored bytes as 128 bits looked up in the list's [`AddrSet`], which is what
    /// [`holds`] does for an address and such a list. No `IpAddr` is built.
    ///
    /// [`ListItems::INDEXED_FROM`]: super::literal::ListItems::INDEXED_FROM
    /// [`AddrSet`]: super::literal::AddrSet
    AddrList,
}

impl Fast {
    /// The one range both ranges describe (`None` unless both are ranges of the same kind,
    /// not negated).
    pub(crate) fn intersect(self, other: Fast) -> Option<Fast> {
        match (self, other) {
            (
                Fast::Unsigned {
                    lo: a,
                    hi: b,
                    negate: false,
                },
                Fast::Unsigned {
                    lo: c,
                    hi: d,
                    negate: false,
                },
            ) => Some(Fast::Unsigned {
                lo: a.max(c),
                hi: b.min(d),
                negate: false,
            }),
            (
                Fast::Signed {
                    lo: a,
                    hi: b,
                    negate: false,
                },
                Fast::Signed {
                    lo: c,
                    hi: d,
                    negate: false,
                },
            ) => Some(Fast::Signed {
                lo: a.max(c),
                hi: b.min(d),
                negate: false,
            }),
            _ => None,
        }
    }

    /// The fast form of a test, if it has one.
    pub(crate) fn of(t: &Test) -> Fast {
        let eq = matches!(t.op, Op::Eq | Op::Ne);
        match (&t.ty, &t.lit) {
            (ty, Literal::String(_)) if eq && ty.is_stringy() => {
                return Fast::Bytes {
                    negate: t.op == Op::Ne,
                }
            }
            (Type::Addr, Literal::Addr(a)) if eq => {
                return Fast::Addr {
                    bits: addr_bits(*a),
                    negate: t.op == Op::Ne,
                };
            }
            (Type::Addr, Literal::Subnet(net, prefix)) if t.op == Op::In => {
                let (net, p) = super::literal::net_bits(*net, *prefix);
                let mask = u128::MAX.checked_shl(128 - u32::from(p)).unwrap_or(0);
                return Fast::Subnet { net, mask };
            }
            (Type::Addr, Literal::List(items)) if t.op == Op::In && items.index().is_some() => {
                return Fast::AddrList;
            }
            _ => {}
        }
        let x: i128 = match (&t.ty, &t.lit) {
            (Type::Count | Type::Port, Literal::Count(x)) => *x as i128,
            (Type::Count | Type::Port, Literal::Int(x)) => *x as i128,
            // A port with a protocol also checks `proto` when the schema has one.
            (Type::Count | Type::Port, Literal::Port(x, proto))
                if proto.is_none() || t.proto.is_none() =>
            {
                *x as i128
            }
            (Type::Int, Literal::Count(x)) => *x as i128,
            (Type::Int, Literal::Int(x))
            | (Type::Time, Literal::Time(x))
            | (Type::Interval, Literal::Duration(x)) => *x as i128,
            _ => return Fast::None,
        };
        let (negate, op) = match t.op {
            Op::Ne => (true, Op::Eq),
            op => (false, op),
        };
        let (lo, hi) = match op {
            Op::Eq => (x, x),
            Op::Lt => (i128::MIN, x - 1),
            Op::Le => (i128::MIN, x),
            Op::Gt => (x + 1, i128::MAX),
            Op::Ge => (x, i128::MAX),
            _ => return Fast::None,
        };
        let clamp = |v: i128, min: i128, max: i128| v.clamp(min, max);
        if matches!(t.ty, Type::Count | Type::Port) {
            let (lo, hi) = (
                clamp(lo, 0, u64::MAX as i128 + 1),
                clamp(hi, -1, u64::MAX as i128),
            );
            if lo > hi {
                return Fast::Unsigned {
                    lo: 1,
                    hi: 0,
                    negate,
                };
            }
            Fast::Unsigned {
                lo: lo as u64,
                hi: hi as u64,
                negate,
            }
        } else {
            let (min, max) = (i64::MIN as i128, i64::MAX as i128);
            let (lo, hi) = (clamp(lo, min, max + 1), clamp(hi, min - 1, max));
            if lo > hi {
                return Fast::Signed {
                    lo: 1,
                    hi: 0,
                    negate,
                };
            }
            Fast::Signed {
                lo: lo as i64,
                hi: hi as i64,
                negate,
            }
        }
    }
}

/// Byte strings that a batch's encoded rows must contain for one of its rows to match: what
/// an equality with a string or an address needs (a matching row holds the literal's bytes,
/// however its length is encoded). A batch without them is skipped after one `memmem` pass
/// over its bytes instead of an evaluation of each row.
#[derive(Debug, Clone)]
pub(crate) enum Needles {
    /// Each of them.
    All(Vec<Needles>),
    /// One of them.
    Any(Vec<Needles>),
    /// These bytes.
    Bytes(Box<memchr::memmem::Finder<'static>>),
}

impl Needles {
    /// The needles of a bound expression (`None`: it needs no particular bytes).
    pub(crate) fn of(b: &Bound) -> Option<Needles> {
        match b {
            Bound::Const(_) | Bound::Id(_) => None,
            Bound::And(v) => {
                let all: Vec<Needles> = v.iter().filter_map(Needles::of).collect();
                (!all.is_empty()).then_some(Needles::All(all))
            }
            // Every alternative needs its bytes, or the batch can match without any.
            Bound::Or(v) => v
                .iter()
                .map(Needles::of)
                .collect::<Option<_>>()
                .map(Needles::Any),
            Bound::Test(t) => {
                let scalar = t.ty.element().unwrap_or(&t.ty);
                // `==` on a scalar, `==` and `ni` on a container's elements, `ni` (substring)
                // on a string: a match holds the literal's bytes.
                let bytes = match (&t.lit, t.op) {
                    (Literal::String(s), Op::Eq | Op::Ni) if scalar.is_stringy() => s.clone(),
                    // An IPv4 address is stored in 4 bytes or, IPv4-mapped, in 16 that end
                    // with them: the 4 bytes are in either form.
                    (Literal::Addr(a), Op::Eq | Op::Ni) if *scalar == Type::Addr => {
                        match v4_of(*a) {
                            Some(v4) => v4.octets().to_vec(),
                            None => addr_bits(*a).to_be_bytes().to_vec(),
                        }
                    }
                    _ => return None,
                };
                (!bytes.is_empty()).then(|| {
                    Needles::Bytes(Box::new(memchr::memmem::Finder::new(&bytes).into_owned()))
                })
            }
        }
    }

    /// Whether `data` holds the needles.
    pub(crate) fn found_in(&self, data: &[u8]) -> bool {
        match self {
            Needles::All(v) => v.iter().all(|n| n.found_in(data)),
            Needles::Any(v) => v.iter().any(|n| n.found_in(data)),
            Needles::Bytes(f) => f.find(data).is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Field;

    #[test]
    fn names_resolve_by_suffix_and_qualification() {
        let s = Schema::new(
            "zeek.conn",
            vec![
                Field::new("id.orig_h", Type::Addr),
                Field::new("duration", Type::Interval),
            ],
        );
        let f = |field: &str, name: &str| names_field(&s, field, name);
        assert!(f("id.orig_h", "id.orig_h"));
        assert!(f("id.orig_h", "orig_h"));
        assert!(!f("id.orig_h", "rig_h"));
        assert!(!f("id.orig_h", "h"));
        assert!(f("id.orig_h", "conn.id.orig_h"));
        assert!(f("id.orig_h", "zeek.conn.id.orig_h"));
        assert!(!f("id.orig_h", "onn.id.orig_h"));
        assert!(!f("id.orig_h", "x.zeek.conn.id.orig_h"));
        assert!(f("duration", "conn.duration"));
        assert!(!f("duration", "dns.duration"));
        assert!(!f("duration", "conn"));
    }

    /// The range tests of each field in a conjunction become one, in one pass: interleaved
    /// fields, negated tests (no range) kept apart, thousands of tests.
    #[test]
    fn ranges_merge_per_field() {
        let s = Schema::new(
            "zeek.x",
            vec![Field::new("a", Type::Count), Field::new("b", Type::Int)],
        )
        .into_shared();
        let mut parts = Vec::new();
        for i in 0..3000u64 {
            parts.push(format!(
                "a >= {i} && b < {} && a != {}",
                10_000 - i,
                i + 5000
            ));
        }
        let q = super::super::Query::parse(&parts.join(" && ")).unwrap();
        let p = q.bind(&s);
        let Bound::And(v) = &p.bound else {
            panic!("{:?}", p.bound)
        };
        // One range per field, and the 3000 negated tests.
        assert_eq!(v.len(), 2 + 3000);
        let ranges: Vec<Fast> = v
            .iter()
            .filter_map(|b| match b {
                Bound::Test(t) if t.fast.intersect(t.fast).is_some() => Some(t.fast),
                _ => None,
            })
            .collect();
        assert_eq!(
            ranges,
            [
                Fast::Unsigned {
                    lo: 2999,
                    hi: u64::MAX,
                    negate: false
                },
                Fast::Signed {
                    lo: i64::MIN,
                    hi: 7000,
                    negate: false
                }
            ]
        );
    }

    /// `#id` comparisons decided for a range of IDs agree with each ID's answer.
    #[test]
    fn id_ranges_decide_as_their_ids() {
        use Literal as L;
        let lits = [
            L::Count(0),
            L::Count(5),
            L::Count(9),
            L::Count(u64::MAX),
            L::Int(-1),
        ];
        for op in [Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge] {
            for lit in &lits {
                let Bound::Id(r) = id_bound(op, lit) else {
                    panic!("{op:?} {lit}")
                };
                for start in [0u64, 4, 5, 6, 9, 10] {
                    for end in [start, start + 1, start + 5, start + 20] {
                        let ids = start..end;
                        let all: Vec<bool> = ids.clone().map(|i| r.holds(i)).collect();
                        match r.decide(&ids) {
                            Some(b) => assert!(all.iter().all(|&x| x == b), "{op:?} {lit} {ids:?}"),
                            None => assert!(
                                all.is_empty() || all.iter().any(|&x| x != all[0]),
                                "{op:?} {lit} {ids:?}: undecided"
                            ),
                        }
                    }
                }
            }
        }
        let Bound::Or(v) = id_bound(Op::In, &L::List(vec![L::Count(1), L::Count(5)].into())) else {
            panic!()
        };
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn typing_table() {
        use Literal as L;
        assert!(well_typed(&Type::Port, Op::Eq, &L::Count(53)));
        assert!(well_typed(&Type::Double, Op::Lt, &L::Int(-1)));
        assert!(!well_typed(&Type::Time, Op::Eq, &L::String(b"x".to_vec())));
        assert!(well_typed(
            &Type::Addr,
            Op::In,
            &L::Subnet([10, 0, 0, 0].into(), 8)
        ));
        assert!(well_typed(
            &Type::Addr,
            Op::NotIn,
            &L::List(vec![L::Addr([1, 1, 1, 1].into())].into())
        ));
        assert!(well_typed(
            &Type::Vector(Box::new(Type::String)),
            Op::Ni,
            &L::String(vec![])
        ));
        assert!(!well_typed(&Type::Bool, Op::Lt, &L::Bool(true)));
        assert!(well_typed(
            &Type::Enum,
            Op::NotMatch,
            &L::Pattern(super::super::literal::Pattern::new("x").unwrap())
        ));
    }
}
