//! The expressions of the property test: a small syntax tree ([`Expr`]) generated at random
//! over the fields of a log's schemas ([`Gen`]) and printed in weir's query syntax
//! ([`Expr::text`]). The tree is evaluated by `eval.rs`, never parsed back.

use std::fmt::Write as _;
use std::net::IpAddr;

use super::random::{self, Pick, ELEMENTS, ENUMS, PORTS, STRINGS, SUBNETS};
use super::tsv::Schema;
use super::value::{Num, Ty};
use crate::common::rng::Rng;

/// The operators of the language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
    Ni,
    NotNi,
    Match,
    NotMatch,
}

impl Op {
    pub fn text(self) -> &'static str {
        match self {
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::In => "in",
            Op::NotIn => "!in",
            Op::Ni => "ni",
            Op::NotNi => "!ni",
            Op::Match => "~",
            Op::NotMatch => "!~",
        }
    }

    /// The operator `!(x op y)` is (negation pushed into the predicate).
    pub fn negate(self) -> Op {
        match self {
            Op::Eq => Op::Ne,
            Op::Ne => Op::Eq,
            Op::Lt => Op::Ge,
            Op::Le => Op::Gt,
            Op::Gt => Op::Le,
            Op::Ge => Op::Lt,
            Op::In => Op::NotIn,
            Op::NotIn => Op::In,
            Op::Ni => Op::NotNi,
            Op::NotNi => Op::Ni,
            Op::Match => Op::NotMatch,
            Op::NotMatch => Op::Match,
        }
    }

    /// `!=`, `!in`, `!ni`, `!~`: the negation of a positive operator on a set value.
    pub fn is_negative(self) -> bool {
        matches!(self, Op::Ne | Op::NotIn | Op::NotNi | Op::NotMatch)
    }

    /// The operator with its sides swapped (`a < b` is `b > a`, `a in b` is `b ni a`).
    fn flip(self) -> Option<Op> {
        Some(match self {
            Op::Eq | Op::Ne => self,
            Op::Lt => Op::Gt,
            Op::Le => Op::Ge,
            Op::Gt => Op::Lt,
            Op::Ge => Op::Le,
            Op::In => Op::Ni,
            Op::NotIn => Op::NotNi,
            Op::Ni => Op::In,
            Op::NotNi => Op::NotIn,
            Op::Match | Op::NotMatch => return None,
        })
    }
}

/// A literal.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    Bool(bool),
    Count(u64),
    Int(i64),
    Real(f64),
    Str(Vec<u8>),
    Addr(IpAddr),
    Subnet(IpAddr, u8),
    Port(u64, Option<String>),
    Duration(i64),
    Time(i64),
    /// A regular expression (its source).
    Pattern(String),
    List(Vec<Lit>),
}

impl Lit {
    /// A count, int or real literal as a number.
    pub fn num(&self) -> Option<Num> {
        match *self {
            Lit::Count(x) => Some(Num::I(i128::from(x))),
            Lit::Int(x) => Some(Num::I(i128::from(x))),
            Lit::Real(x) => Some(Num::F(x)),
            _ => None,
        }
    }
}

/// A type extractor (`:addr`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeName {
    Addr,
    Subnet,
    Count,
    Int,
    Real,
    String,
    Bool,
    Time,
    Duration,
    Port,
    Enum,
    Timestamp,
}

impl TypeName {
    const ALL: [TypeName; 12] = [
        TypeName::Addr,
        TypeName::Subnet,
        TypeName::Count,
        TypeName::Int,
        TypeName::Real,
        TypeName::String,
        TypeName::Bool,
        TypeName::Time,
        TypeName::Duration,
        TypeName::Port,
        TypeName::Enum,
        TypeName::Timestamp,
    ];

    fn text(self) -> &'static str {
        match self {
            TypeName::Addr => ":addr",
            TypeName::Subnet => ":subnet",
            TypeName::Count => ":count",
            TypeName::Int => ":int",
            TypeName::Real => ":real",
            TypeName::String => ":string",
            TypeName::Bool => ":bool",
            TypeName::Time => ":time",
            TypeName::Duration => ":duration",
            TypeName::Port => ":port",
            TypeName::Enum => ":enum",
            TypeName::Timestamp => ":timestamp",
        }
    }

    /// The field type whose literals it usually meets.
    fn literal_type(self) -> Ty {
        match self {
            TypeName::Addr => Ty::Addr,
            TypeName::Subnet => Ty::Subnet,
            TypeName::Count => Ty::Count,
            TypeName::Int => Ty::Int,
            TypeName::Real => Ty::Double,
            TypeName::String => Ty::String,
            TypeName::Bool => Ty::Bool,
            TypeName::Time | TypeName::Timestamp => Ty::Time,
            TypeName::Duration => Ty::Interval,
            TypeName::Port => Ty::Port,
            TypeName::Enum => Ty::Enum,
        }
    }
}

/// The left side of a predicate.
#[derive(Clone, Debug, PartialEq)]
pub enum Extractor {
    /// A field name as written: full, a suffix at a dot, or schema-qualified.
    Field(String),
    Type(TypeName),
    /// `#type`.
    SchemaName,
    /// `#timestamp`.
    Timestamp,
    /// `#id`: the event's ID (its position in import order).
    Id,
    /// `#field`: the schema's field names.
    FieldName,
}

/// One comparison.
#[derive(Clone, Debug)]
pub struct Pred {
    pub extractor: Extractor,
    pub op: Op,
    pub lit: Lit,
    /// The literal as printed.
    pub lit_text: String,
    /// Printed literal first (`"a" in tags` for `tags ni "a"`).
    pub flipped: bool,
    /// Printed as the bare literal (a value predicate: `:TYPE == lit`).
    pub bare: bool,
}

/// An expression.
#[derive(Clone, Debug)]
pub enum Expr {
    Pred(Pred),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
}

impl Expr {
    /// The expression in weir's syntax (parentheses only where `&&` binds an `||`).
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Expr::Pred(p) => p.write(out),
            Expr::And(a, b) => {
                for (i, e) in [a, b].into_iter().enumerate() {
                    if i > 0 {
                        out.push_str(" && ");
                    }
                    if matches!(**e, Expr::Or(..)) {
                        out.push('(');
                        e.write(out);
                        out.push(')');
                    } else {
                        e.write(out);
                    }
                }
            }
            Expr::Or(a, b) => {
                a.write(out);
                out.push_str(" || ");
                b.write(out);
            }
            Expr::Not(e) => {
                out.push_str("!(");
                e.write(out);
                out.push(')');
            }
        }
    }

    /// Every predicate, in order.
    pub fn preds(&self) -> Vec<&Pred> {
        match self {
            Expr::Pred(p) => vec![p],
            Expr::And(a, b) | Expr::Or(a, b) => {
                let mut v = a.preds();
                v.extend(b.preds());
                v
            }
            Expr::Not(e) => e.preds(),
        }
    }
}

impl Pred {
    fn write(&self, out: &mut String) {
        let ex = match &self.extractor {
            Extractor::Field(n) => n.clone(),
            Extractor::Type(t) => t.text().to_string(),
            Extractor::SchemaName => "#type".into(),
            Extractor::Timestamp => "#timestamp".into(),
            Extractor::Id => "#id".into(),
            Extractor::FieldName => "#field".into(),
        };
        if self.bare {
            out.push_str(&self.lit_text);
        } else if let (true, Some(f)) = (self.flipped, self.op.flip()) {
            let _ = write!(out, "{} {} {ex}", self.lit_text, f.text());
        } else {
            let _ = write!(out, "{ex} {} {}", self.op.text(), self.lit_text);
        }
    }
}

/// Quoted, as the language writes strings.
pub fn quote(s: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in s {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('"');
    out
}

/// Generates expressions over the fields of `schemas`.
pub struct Gen<'a> {
    pub schemas: &'a [Schema],
    /// How many events there are (for `#id` literals).
    pub events: usize,
    /// Extra strings to draw literals from (a fixture's values).
    pub strings: Vec<Vec<u8>>,
    /// Extra addresses (a fixture's values).
    pub addrs: Vec<IpAddr>,
    /// Extra times, in nanoseconds.
    pub times: Vec<i64>,
    /// Extra numbers.
    pub counts: Vec<u64>,
}

const PATTERNS: &[&str] = &[
    "a.*", "ab", "[ab]+", ".*z.*", "x\\.y", "b", ".*", "a", "[0-9]+",
];

impl Gen<'_> {
    /// An expression of at most `depth` levels of `&&`, `||`, `!`.
    pub fn expr(&self, rng: &mut Rng, depth: u32) -> Expr {
        if depth == 0 || rng.chance(35) {
            return Expr::Pred(self.pred(rng));
        }
        match rng.below(5) {
            0 | 1 => Expr::And(
                Box::new(self.expr(rng, depth - 1)),
                Box::new(self.expr(rng, depth - 1)),
            ),
            2 | 3 => Expr::Or(
                Box::new(self.expr(rng, depth - 1)),
                Box::new(self.expr(rng, depth - 1)),
            ),
            _ => Expr::Not(Box::new(self.expr(rng, depth - 1))),
        }
    }

    fn pred(&self, rng: &mut Rng) -> Pred {
        let roll = rng.below(100);
        let (extractor, ty) = if roll < 62 {
            let s = rng.pick(self.schemas);
            let (name, ty) = rng.pick(&s.fields);
            (Extractor::Field(spell(rng, &s.name, name)), ty.clone())
        } else if roll < 82 {
            let t = *rng.pick(&TypeName::ALL);
            (Extractor::Type(t), t.literal_type())
        } else if roll < 87 {
            (Extractor::SchemaName, Ty::String)
        } else if roll < 90 {
            (Extractor::Timestamp, Ty::Time)
        } else if roll < 93 {
            (Extractor::Id, Ty::Count)
        } else if roll < 95 {
            (Extractor::FieldName, Ty::String)
        } else {
            return self.bare(rng);
        };
        let (op, lit, lit_text) = if extractor == Extractor::SchemaName {
            self.schema_name(rng)
        } else if extractor == Extractor::Id {
            self.id(rng)
        } else if extractor == Extractor::FieldName {
            self.field_name(rng)
        } else if rng.chance(8) {
            // Most likely ill-typed: what the language says of it is tested too.
            let other = rng.pick(&Ty::SCALARS).clone();
            self.comparison(rng, &other)
        } else {
            self.comparison(rng, &ty)
        };
        let flipped = op.flip().is_some() && rng.chance(15);
        Pred {
            extractor,
            op,
            lit,
            lit_text,
            flipped,
            bare: false,
        }
    }

    /// A value predicate: a bare address, subnet, count, string or pattern.
    fn bare(&self, rng: &mut Rng) -> Pred {
        let (t, (lit, lit_text)) = match rng.below(5) {
            0 => (TypeName::Addr, self.literal(rng, &Ty::Addr)),
            1 => (TypeName::Subnet, self.literal(rng, &Ty::Subnet)),
            2 => (TypeName::Count, count_lit(rng, self)),
            3 => (TypeName::String, self.literal(rng, &Ty::String)),
            _ => (TypeName::String, pattern(rng)),
        };
        Pred {
            extractor: Extractor::Type(t),
            op: Op::Eq,
            lit,
            lit_text,
            flipped: false,
            bare: true,
        }
    }

    /// `#id` with a count (or, rarely, what it cannot compare with).
    fn id(&self, rng: &mut Rng) -> (Op, Lit, String) {
        let mut id = || rng.below(self.events as u64 + 2);
        let (a, b) = (id(), id());
        match rng.below(8) {
            0 => (
                *rng.pick(&[Op::In, Op::NotIn]),
                Lit::List(vec![Lit::Count(a), Lit::Count(b)]),
                format!("[{a}, {b}]"),
            ),
            1 => (Op::Eq, Lit::Str(b"1".to_vec()), "\"1\"".into()),
            _ => (
                *rng.pick(&[Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge]),
                Lit::Count(a),
                a.to_string(),
            ),
        }
    }

    /// `#field` with the name of a field (as an extractor may spell it) or a list of them.
    fn field_name(&self, rng: &mut Rng) -> (Op, Lit, String) {
        let name = |rng: &mut Rng| {
            let s = rng.pick(self.schemas);
            let (f, _) = rng.pick(&s.fields);
            if rng.chance(20) {
                "nosuchfield".to_string()
            } else {
                spell(rng, &s.name, f)
            }
        };
        if rng.chance(25) {
            let (a, b) = (name(rng), name(rng));
            let text = format!("[{}, {}]", quote(a.as_bytes()), quote(b.as_bytes()));
            let lit = Lit::List(vec![Lit::Str(a.into_bytes()), Lit::Str(b.into_bytes())]);
            (*rng.pick(&[Op::In, Op::NotIn]), lit, text)
        } else {
            let a = name(rng);
            let text = quote(a.as_bytes());
            (*rng.pick(&[Op::Eq, Op::Ne]), Lit::Str(a.into_bytes()), text)
        }
    }

    fn schema_name(&self, rng: &mut Rng) -> (Op, Lit, String) {
        let mut names: Vec<String> = self.schemas.iter().map(|s| s.name.clone()).collect();
        // A Zeek log the data lacks: no mistake, and no match.
        names.push("zeek.smtp".into());
        let name = rng.pick(&names).clone();
        let lit = |s: &str| (Lit::Str(s.as_bytes().to_vec()), quote(s.as_bytes()));
        match rng.below(6) {
            0 | 1 => {
                let (l, t) = lit(&name);
                (*rng.pick(&[Op::Eq, Op::Ne]), l, t)
            }
            2 => {
                let other = rng.pick(&names).clone();
                let (a, at) = lit(&name);
                let (b, bt) = lit(&other);
                (
                    *rng.pick(&[Op::In, Op::NotIn]),
                    Lit::List(vec![a, b]),
                    format!("[{at}, {bt}]"),
                )
            }
            3 => {
                let sub = &name[rng.below(name.len() as u64) as usize..];
                let (l, t) = lit(sub);
                (*rng.pick(&[Op::Ni, Op::NotNi]), l, t)
            }
            4 => {
                let (l, t) = lit(&name);
                (*rng.pick(&[Op::Lt, Op::Ge]), l, t)
            }
            _ => (
                *rng.pick(&[Op::Match, Op::NotMatch]),
                Lit::Pattern("zeek\\.t[01]".into()),
                "/zeek\\.t[01]/".into(),
            ),
        }
    }

    /// An operator and a literal for a field of type `ty`.
    fn comparison(&self, rng: &mut Rng, ty: &Ty) -> (Op, Lit, String) {
        let maybe_negated = |rng: &mut Rng, op: Op| if rng.chance(30) { op.negate() } else { op };
        let ordering = [Op::Eq, Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::Eq];
        if let Some(e) = ty.element() {
            return match rng.below(5) {
                4 => {
                    let (l, t) = self.list(rng, e);
                    (maybe_negated(rng, Op::Eq), l, t)
                }
                0 | 1 => {
                    let (l, t) = self.literal(rng, e);
                    (maybe_negated(rng, Op::Ni), l, t)
                }
                2 => {
                    let (l, t) = self.literal(rng, e);
                    (
                        {
                            let o = *rng.pick(&ordering);
                            maybe_negated(rng, o)
                        },
                        l,
                        t,
                    )
                }
                _ => {
                    let (l, t) = self.list(rng, e);
                    (maybe_negated(rng, Op::In), l, t)
                }
            };
        }
        match ty {
            Ty::String | Ty::Enum | Ty::Pattern | Ty::File => match rng.below(7) {
                0 => {
                    let (l, t) = pattern(rng);
                    (*rng.pick(&[Op::Match, Op::NotMatch, Op::Eq, Op::Ni]), l, t)
                }
                1 => {
                    let (l, t) = self.literal(rng, ty);
                    (
                        {
                            let o = *rng.pick(&[Op::In, Op::Ni]);
                            maybe_negated(rng, o)
                        },
                        l,
                        t,
                    )
                }
                2 => {
                    let (l, t) = self.list(rng, ty);
                    (maybe_negated(rng, Op::In), l, t)
                }
                _ => {
                    let (l, t) = self.literal(rng, ty);
                    (
                        {
                            let o = *rng.pick(&ordering);
                            maybe_negated(rng, o)
                        },
                        l,
                        t,
                    )
                }
            },
            Ty::Addr => match rng.below(4) {
                0 => {
                    let (l, t) = self.literal(rng, &Ty::Subnet);
                    (maybe_negated(rng, Op::In), l, t)
                }
                1 => {
                    let (l, t) = self.list(rng, ty);
                    (maybe_negated(rng, Op::In), l, t)
                }
                _ => {
                    let (l, t) = self.literal(rng, ty);
                    (
                        {
                            let o = *rng.pick(&ordering);
                            maybe_negated(rng, o)
                        },
                        l,
                        t,
                    )
                }
            },
            Ty::Subnet => match rng.below(3) {
                0 => {
                    let (l, t) = self.literal(rng, &Ty::Subnet);
                    (
                        {
                            let o = *rng.pick(&[Op::In, Op::Ni]);
                            maybe_negated(rng, o)
                        },
                        l,
                        t,
                    )
                }
                1 => {
                    let (l, t) = self.literal(rng, &Ty::Addr);
                    (maybe_negated(rng, Op::Ni), l, t)
                }
                _ => {
                    let (l, t) = self.literal(rng, ty);
                    (maybe_negated(rng, Op::Eq), l, t)
                }
            },
            Ty::Bool => {
                let (l, t) = self.literal(rng, ty);
                (maybe_negated(rng, Op::Eq), l, t)
            }
            _ => {
                if rng.chance(12) {
                    let (l, t) = self.list(rng, ty);
                    (maybe_negated(rng, Op::In), l, t)
                } else {
                    let (l, t) = self.literal(rng, ty);
                    (
                        {
                            let o = *rng.pick(&ordering);
                            maybe_negated(rng, o)
                        },
                        l,
                        t,
                    )
                }
            }
        }
    }

    fn list(&self, rng: &mut Rng, ty: &Ty) -> (Lit, String) {
        let items: Vec<(Lit, String)> = (0..rng.range(1, 3))
            .map(|_| self.literal(rng, ty))
            .collect();
        let text = items
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        (
            Lit::List(items.into_iter().map(|(l, _)| l).collect()),
            format!("[{text}]"),
        )
    }

    /// A literal that usually compares with fields of type `ty`, with its spelling.
    pub fn literal(&self, rng: &mut Rng, ty: &Ty) -> (Lit, String) {
        match ty {
            Ty::Bool => {
                let (b, t) =
                    *rng.pick(&[(true, "T"), (false, "F"), (true, "true"), (false, "false")]);
                (Lit::Bool(b), t.into())
            }
            Ty::Count | Ty::Int | Ty::Double => match rng.below(4) {
                0 => {
                    let x = rng.range(-6, 6);
                    (Lit::Int(x), format!("{x:+}"))
                }
                1 => {
                    let x = rng.range(-12, 12) as f64 / 4.0;
                    (Lit::Real(x), format!("{x:.2}"))
                }
                _ => count_lit(rng, self),
            },
            Ty::Port => {
                if rng.chance(50) {
                    count_lit(rng, self)
                } else {
                    let n = *rng.pick(PORTS);
                    let proto = *rng.pick(&["tcp", "udp", "?"]);
                    let p = (proto != "?").then(|| proto.to_string());
                    (Lit::Port(n, p), format!("{n}/{proto}"))
                }
            }
            Ty::Time => {
                if rng.chance(4) {
                    // Far after every event: the exact `now` does not matter.
                    let (ns, text) = *rng.pick(&[
                        (NOW_BELOW, "now"),
                        (NOW_BELOW - 86_400_000_000_000, "now - 1d"),
                        (NOW_BELOW - 3_600_000_000_000, "1h ago"),
                    ]);
                    return (Lit::Time(ns), text.into());
                }
                let ns = if !self.times.is_empty() && rng.chance(50) {
                    *rng.pick(&self.times)
                } else {
                    random::time_ns(rng)
                };
                (Lit::Time(ns), time_text(rng, ns))
            }
            Ty::Interval => {
                let q = rng.range(-4, 12);
                let ns = q * 250_000_000;
                let text = match rng.below(4) {
                    _ if q == 0 && rng.chance(50) => "0min".to_string(),
                    0 if q % 4 == 0 => format!("{}s", q / 4),
                    1 => format!("{}ms", q * 250),
                    2 => format!("{}us", q * 250_000),
                    _ => format!("{}s", q as f64 / 4.0),
                };
                (Lit::Duration(ns), text)
            }
            Ty::String | Ty::Pattern | Ty::File => {
                let s = if !self.strings.is_empty() && rng.chance(60) {
                    let whole = rng.pick(&self.strings).clone();
                    if rng.chance(30) && whole.len() > 2 {
                        whole[1..whole.len() - 1].to_vec()
                    } else {
                        whole
                    }
                } else {
                    {
                        let pool = if rng.chance(50) { STRINGS } else { ELEMENTS };
                        rng.pick(pool).as_bytes().to_vec()
                    }
                };
                let text = quote(&s);
                (Lit::Str(s), text)
            }
            Ty::Enum => {
                let s = rng.pick(ENUMS).as_bytes().to_vec();
                let text = quote(&s);
                (Lit::Str(s), text)
            }
            Ty::Addr => {
                let a = if !self.addrs.is_empty() && rng.chance(60) {
                    *rng.pick(&self.addrs)
                } else {
                    random::addr(rng)
                };
                (Lit::Addr(a), a.to_string())
            }
            Ty::Subnet => {
                let (a, p) = *rng.pick(SUBNETS);
                (
                    Lit::Subnet(a.parse().expect("a subnet of the pool"), p),
                    format!("{a}/{p}"),
                )
            }
            Ty::Set(e) | Ty::Vector(e) => self.literal(rng, e),
        }
    }
}

/// A count literal, sometimes with a unit suffix or at the type's edge.
fn count_lit(rng: &mut Rng, g: &Gen<'_>) -> (Lit, String) {
    match rng.below(10) {
        0 => (Lit::Count(1000), "1k".into()),
        1 => (Lit::Count(1024), "1Ki".into()),
        2 => (Lit::Count(u64::MAX), u64::MAX.to_string()),
        3 | 4 if !g.counts.is_empty() => {
            let x = *rng.pick(&g.counts);
            (Lit::Count(x), x.to_string())
        }
        _ => {
            let x = rng.below(12);
            (Lit::Count(x), x.to_string())
        }
    }
}

fn pattern(rng: &mut Rng) -> (Lit, String) {
    let p = *rng.pick(PATTERNS);
    (Lit::Pattern(p.into()), format!("/{p}/"))
}

/// A time before any `now` the test runs at (2020-01-01), after every event of the tests:
/// `now`, `now - 1d` and `1h ago` stand for it in the reference, which compares nothing with
/// them but times of 2009.
pub const NOW_BELOW: i64 = 1_577_836_800_000_000_000;

/// A time literal: `@SECONDS.FRACTION`, or ISO 8601 in UTC or at +01:00 (`T` or `+` between
/// date and time, a fraction of a second when there is one).
fn time_text(rng: &mut Rng, ns: i64) -> String {
    let (secs, frac) = (ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000));
    if rng.chance(40) {
        return format!("@{secs}.{frac:09}");
    }
    let offset = rng.chance(30);
    let local = secs + if offset { 3600 } else { 0 };
    let (days, rem) = (local.div_euclid(86_400), local.rem_euclid(86_400));
    let (y, m, d) = civil(days);
    let sep = if !offset && rng.chance(30) { "+" } else { "T" };
    let fraction = if frac == 0 {
        String::new()
    } else {
        format!(".{}", format!("{frac:09}").trim_end_matches('0'))
    };
    let zone = if offset {
        "+01:00"
    } else if sep == "T" {
        "Z"
    } else {
        ""
    };
    format!(
        "{y:04}-{m:02}-{d:02}{sep}{:02}:{:02}:{:02}{fraction}{zone}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The date of `days` since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A field name as the extractor may spell it: full, its last part after a dot, or
/// qualified by the schema (`t0.name`, `zeek.t0.name`).
fn spell(rng: &mut Rng, schema: &str, field: &str) -> String {
    match rng.below(10) {
        0 => format!("{schema}.{field}"),
        1 => format!("{}.{field}", schema.strip_prefix("zeek.").unwrap_or(schema)),
        2 | 3 => field.rsplit('.').next().unwrap_or(field).to_string(),
        _ => field.to_string(),
    }
}
