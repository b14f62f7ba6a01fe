//! The reference evaluator: an [`Expr`] evaluated on a [`Log`]'s events as the language's
//! documentation (`docs/book/src/reference/language.md`, `src/query/mod.rs`) defines it,
//! written plainly and independently of the engine:
//!
//! - negation is pushed into the predicates (`!(x < 1)` is `x >= 1`); an unset value never
//!   matches; a negative operator (`!=`, `!in`, `!ni`, `!~`) is its positive negated on a set
//!   value (containers included);
//! - a field extractor names every field whose `SCHEMA.FIELD` equals it or ends with `.` and
//!   it, and matches when any of them does; a comparison not well-typed for a field is false
//!   for that field; a type extractor names the scalar fields of its type (`:count` also
//!   ports, `:subnet` also addresses, by membership; `:timestamp` the `ts` field);
//! - a query is refused when a type or meta extractor meets a literal it never compares with,
//!   or a field comparison is well-typed for no field of any schema ([`refused`]).

use std::cmp::Ordering;

use regex::bytes::Regex;

use super::expr::{Expr, Extractor, Lit, Op, Pred, TypeName};
use super::tsv::{Event, Log, Schema};
use super::value::{addr_bits, in_subnet, net_bits, subnet_in, Ty, Val};

/// Whether `field op lit` is meaningful for a field of type `ty` (the language's table: numbers
/// across count, int, real and port; strings, times, durations, addresses ordered; subnets and
/// bools only `==`; `in` a list, an address or subnet in a subnet, a substring; `ni` the
/// reverse; `~` patterns on strings; containers element-wise).
pub fn well_typed(ty: &Ty, op: Op, lit: &Lit) -> bool {
    let op = if op.is_negative() { op.negate() } else { op };
    if let Some(e) = ty.element() {
        return match (op, lit) {
            (Op::Eq, Lit::List(items)) => items.iter().all(|x| scalar_ok(e, Op::Eq, x)),
            (Op::Ni, Lit::List(_)) => false,
            (Op::Ni, x) => scalar_ok(e, Op::Eq, x),
            (op, x) => scalar_ok(e, op, x),
        };
    }
    scalar_ok(ty, op, lit)
}

fn scalar_ok(ty: &Ty, op: Op, lit: &Lit) -> bool {
    match (op, lit) {
        (Op::Eq | Op::Match | Op::Ni, Lit::Pattern(_)) => ty.is_stringy(),
        (Op::Match, _) | (_, Lit::Pattern(_)) => false,
        (Op::In, Lit::List(items)) => items.iter().all(|x| scalar_ok(ty, Op::Eq, x)),
        (_, Lit::List(_)) => false,
        (Op::In, Lit::Subnet(..)) => matches!(ty, Ty::Addr | Ty::Subnet),
        (Op::In, Lit::Str(_)) => ty.is_stringy(),
        (Op::In, _) => false,
        (Op::Ni, Lit::Str(_)) => ty.is_stringy(),
        (Op::Ni, Lit::Addr(_) | Lit::Subnet(..)) => *ty == Ty::Subnet,
        (Op::Ni, _) => false,
        (_, Lit::Bool(_)) => *ty == Ty::Bool && op == Op::Eq,
        (_, Lit::Count(_) | Lit::Int(_) | Lit::Real(_)) => ty.is_number(),
        (_, Lit::Str(_)) => ty.is_stringy(),
        (_, Lit::Addr(_)) => *ty == Ty::Addr,
        (_, Lit::Subnet(..)) => *ty == Ty::Subnet && op == Op::Eq,
        (_, Lit::Port(..)) => matches!(ty, Ty::Port | Ty::Count),
        (_, Lit::Duration(_)) => *ty == Ty::Interval,
        (_, Lit::Time(_)) => *ty == Ty::Time,
    }
}

/// Whether the field extractor `name` names field `field` of schema `schema`.
pub fn names_field(schema: &str, field: &str, name: &str) -> bool {
    let qualified = format!("{schema}.{field}");
    qualified == name || qualified.ends_with(&format!(".{name}"))
}

/// The fields a type extractor names in `schema`, each with the operator used on it.
fn type_fields(schema: &Schema, t: TypeName, op: Op) -> Vec<(usize, Op)> {
    if t == TypeName::Timestamp {
        return schema.index("ts").map(|i| (i, op)).into_iter().collect();
    }
    schema
        .fields
        .iter()
        .enumerate()
        .filter_map(|(i, (_, ty))| type_op(t, ty, op).map(|op| (i, op)))
        .collect()
}

fn type_op(t: TypeName, ty: &Ty, op: Op) -> Option<Op> {
    let hit = match t {
        TypeName::Addr => *ty == Ty::Addr,
        TypeName::Subnet if *ty == Ty::Addr => {
            return Some(match op {
                Op::Eq => Op::In,
                Op::Ne => Op::NotIn,
                other => other,
            })
        }
        TypeName::Subnet => *ty == Ty::Subnet,
        TypeName::Count => matches!(ty, Ty::Count | Ty::Port),
        TypeName::Int => *ty == Ty::Int,
        TypeName::Real => *ty == Ty::Double,
        TypeName::String => matches!(ty, Ty::String | Ty::File),
        TypeName::Bool => *ty == Ty::Bool,
        TypeName::Time | TypeName::Timestamp => *ty == Ty::Time,
        TypeName::Duration => *ty == Ty::Interval,
        TypeName::Port => *ty == Ty::Port,
        TypeName::Enum => *ty == Ty::Enum,
    };
    hit.then_some(op)
}

/// Why the engine must refuse `expr` over the schemas `schemas`, if it must.
pub fn refused(expr: &Expr, schemas: &[Schema]) -> Option<String> {
    for p in expr.preds() {
        let ok = match &p.extractor {
            Extractor::SchemaName => well_typed(&Ty::String, p.op, &p.lit),
            Extractor::Timestamp => well_typed(&Ty::Time, p.op, &p.lit),
            Extractor::FieldName => well_typed(&Ty::String, p.op, &p.lit),
            // Compared with counts only (ints too: a literal `+5` is an int).
            Extractor::Id => {
                let integer = |l: &Lit| matches!(l, Lit::Count(_) | Lit::Int(_));
                match (p.op, &p.lit) {
                    (Op::In | Op::NotIn, Lit::List(items)) => items.iter().all(integer),
                    (Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge, l) => integer(l),
                    _ => false,
                }
            }
            Extractor::Type(t) => {
                let candidates: &[Ty] = match t {
                    TypeName::Addr => &[Ty::Addr],
                    TypeName::Subnet => &[Ty::Subnet, Ty::Addr],
                    TypeName::Count => &[Ty::Count, Ty::Port],
                    TypeName::Int => &[Ty::Int],
                    TypeName::Real => &[Ty::Double],
                    TypeName::String => &[Ty::String, Ty::File],
                    TypeName::Bool => &[Ty::Bool],
                    TypeName::Time | TypeName::Timestamp => &[Ty::Time],
                    TypeName::Duration => &[Ty::Interval],
                    TypeName::Port => &[Ty::Port],
                    TypeName::Enum => &[Ty::Enum],
                };
                candidates
                    .iter()
                    .any(|ty| type_op(*t, ty, p.op).is_some_and(|op| well_typed(ty, op, &p.lit)))
            }
            Extractor::Field(name) => schemas.iter().any(|s| {
                s.fields
                    .iter()
                    .any(|(f, ty)| names_field(&s.name, f, name) && well_typed(ty, p.op, &p.lit))
            }),
        };
        if !ok {
            return Some(format!("`{}` is well-typed nowhere", p.lit_text));
        }
    }
    None
}

/// Whether `expr` matches event number `id` of `log` (its ID: the position in import order).
pub fn matches(expr: &Expr, log: &Log, id: usize) -> bool {
    let e = &log.events[id];
    eval(expr, &log.schemas[e.schema], e, id, false)
}

fn eval(expr: &Expr, s: &Schema, e: &Event, id: usize, negated: bool) -> bool {
    match (expr, negated) {
        (Expr::Pred(p), _) => pred(p, if negated { p.op.negate() } else { p.op }, s, e, id),
        (Expr::And(a, b), false) | (Expr::Or(a, b), true) => {
            eval(a, s, e, id, negated) && eval(b, s, e, id, negated)
        }
        (Expr::Or(a, b), false) | (Expr::And(a, b), true) => {
            eval(a, s, e, id, negated) || eval(b, s, e, id, negated)
        }
        (Expr::Not(x), _) => eval(x, s, e, id, !negated),
    }
}

/// `#field op lit`: `==` holds when the schema has a field the string names (as a field
/// extractor would), `in` a list when it has one that some string names; a negative operator
/// is its positive negated.
fn field_name(s: &Schema, op: Op, lit: &Lit) -> bool {
    if op.is_negative() {
        return !field_name(s, op.negate(), lit);
    }
    let named = |l: &Lit| match l {
        Lit::Str(n) => {
            let n = String::from_utf8_lossy(n);
            s.fields.iter().any(|(f, _)| names_field(&s.name, f, &n))
        }
        _ => false,
    };
    match (op, lit) {
        (Op::Eq, l) => named(l),
        (Op::In, Lit::List(items)) => items.iter().any(named),
        _ => panic!("the generator makes no `#field {}`", op.text()),
    }
}

fn pred(p: &Pred, op: Op, s: &Schema, e: &Event, id: usize) -> bool {
    let fields: Vec<(usize, Op)> = match &p.extractor {
        Extractor::Id => {
            let id = Some(Val::Count(id as u64));
            return holds(&id, &Ty::Count, op, &p.lit, None);
        }
        Extractor::FieldName => return field_name(s, op, &p.lit),
        Extractor::SchemaName => {
            let name = Some(Val::Str(s.name.as_bytes().to_vec()));
            return holds(&name, &Ty::String, op, &p.lit, None);
        }
        Extractor::Timestamp => type_fields(s, TypeName::Timestamp, op),
        Extractor::Type(t) => type_fields(s, *t, op),
        Extractor::Field(name) => s
            .fields
            .iter()
            .enumerate()
            .filter(|(_, (f, _))| names_field(&s.name, f, name))
            .map(|(i, _)| (i, op))
            .collect(),
    };
    let proto = s
        .fields
        .iter()
        .position(|(n, t)| n == "proto" && t.is_stringy());
    let proto = proto.and_then(|i| match &e.values[i] {
        Some(Val::Str(v)) => Some(v.as_slice()),
        _ => None,
    });
    fields.into_iter().any(|(i, op)| {
        let ty = &s.fields[i].1;
        well_typed(ty, op, &p.lit) && holds(&e.values[i], ty, op, &p.lit, proto)
    })
}

/// Whether `v op lit` holds for a value of a field of type `ty`; `proto` is the event's set
/// `proto`, which a port literal's protocol must equal.
fn holds(v: &Option<Val>, ty: &Ty, op: Op, lit: &Lit, proto: Option<&[u8]>) -> bool {
    let Some(v) = v else { return false };
    if op.is_negative() {
        return !holds(&Some(v.clone()), ty, op.negate(), lit, proto);
    }
    if let (Lit::Port(_, Some(want)), Some(got)) = (lit, proto) {
        if got != want.as_bytes() {
            return false;
        }
    }
    match (ty.element(), v) {
        (Some(e), Val::List(items)) => match (op, lit) {
            (Op::Eq, Lit::List(want)) => {
                items.len() == want.len()
                    && items
                        .iter()
                        .zip(want)
                        .all(|(i, w)| i.as_ref().is_some_and(|i| scalar(i, e, Op::Eq, w)))
            }
            (Op::Ni, x) => items.iter().flatten().any(|i| scalar(i, e, Op::Eq, x)),
            (op, x) => items.iter().flatten().any(|i| scalar(i, e, op, x)),
        },
        _ => scalar(v, ty, op, lit),
    }
}

fn full(re: &str) -> Regex {
    Regex::new(&format!("^(?:{re})$")).expect("a valid pattern")
}

fn scalar(v: &Val, ty: &Ty, op: Op, lit: &Lit) -> bool {
    match (op, lit, v) {
        (Op::Eq | Op::Match, Lit::Pattern(re), Val::Str(s)) => {
            ty.is_stringy() && full(re).is_match(s)
        }
        (Op::Eq | Op::Match, Lit::Pattern(_), _) | (Op::Match, _, _) => false,
        (Op::In, Lit::List(items), _) => items.iter().any(|x| scalar(v, ty, Op::Eq, x)),
        (Op::In, Lit::Subnet(n, p), Val::Addr(a)) => in_subnet(*a, *n, *p),
        (Op::In, Lit::Subnet(n, p), Val::Subnet(a, q)) => subnet_in(*a, *q, *n, *p),
        (Op::In, Lit::Str(l), Val::Str(s)) => contains(l, s),
        (Op::In, _, _) => false,
        (Op::Ni, Lit::Str(l), Val::Str(s)) => contains(s, l),
        (Op::Ni, Lit::Pattern(re), Val::Str(s)) => {
            Regex::new(re).expect("a valid pattern").is_match(s)
        }
        (Op::Ni, Lit::Addr(x), Val::Subnet(a, q)) => in_subnet(*x, *a, *q),
        (Op::Ni, Lit::Subnet(n, p), Val::Subnet(a, q)) => subnet_in(*n, *p, *a, *q),
        (Op::Ni, _, _) => false,
        (op, lit, v) => compare(v, lit).is_some_and(|o| match op {
            Op::Eq => o == Ordering::Equal,
            Op::Lt => o == Ordering::Less,
            Op::Le => o != Ordering::Greater,
            Op::Gt => o == Ordering::Greater,
            Op::Ge => o != Ordering::Less,
            _ => false,
        }),
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// The order of a value and a literal it compares with.
fn compare(v: &Val, lit: &Lit) -> Option<Ordering> {
    if let (Some(a), Some(b)) = (v.num(), lit.num()) {
        return a.cmp(b);
    }
    match (v, lit) {
        (Val::Bool(a), Lit::Bool(b)) => Some(a.cmp(b)),
        (Val::Str(a), Lit::Str(b)) => Some(a.as_slice().cmp(b.as_slice())),
        (Val::Addr(a), Lit::Addr(b)) => Some(addr_bits(*a).cmp(&addr_bits(*b))),
        (Val::Subnet(a, p), Lit::Subnet(b, q)) => {
            (net_bits(*a, *p) == net_bits(*b, *q)).then_some(Ordering::Equal)
        }
        (Val::Port(a) | Val::Count(a), Lit::Port(b, _)) => Some(a.cmp(b)),
        (Val::Time(a), Lit::Time(b)) | (Val::Interval(a), Lit::Duration(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

/// The order of two values of one type, as `sort` orders keys.
pub fn order(a: &Val, b: &Val) -> Ordering {
    if let (Some(x), Some(y)) = (a.num(), b.num()) {
        return x.cmp(y).unwrap_or(Ordering::Equal);
    }
    match (a, b) {
        (Val::Bool(x), Val::Bool(y)) => x.cmp(y),
        (Val::Str(x), Val::Str(y)) => x.cmp(y),
        (Val::Addr(x), Val::Addr(y)) => addr_bits(*x).cmp(&addr_bits(*y)),
        (Val::Time(x), Val::Time(y)) | (Val::Interval(x), Val::Interval(y)) => x.cmp(y),
        _ => Ordering::Equal,
    }
}
