//! The comparison operators of a predicate (`==`, `in`, `~`, ...): a leaf of the language,
//! shared by the lexer (which reads them), the parser, the binder and the evaluator.

use std::fmt;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `in`: the left side is in the right side (subnet, list, substring).
    In,
    /// `!in`
    NotIn,
    /// `ni`: the right side is in the left side.
    Ni,
    /// `!ni`
    NotNi,
    /// `~`: the string matches the pattern.
    Match,
    /// `!~`
    NotMatch,
}

impl Op {
    /// The operator of the negated predicate.
    pub fn negate(self) -> Op {
        use Op::*;
        match self {
            Eq => Ne,
            Ne => Eq,
            Lt => Ge,
            Ge => Lt,
            Le => Gt,
            Gt => Le,
            In => NotIn,
            NotIn => In,
            Ni => NotNi,
            NotNi => Ni,
            Match => NotMatch,
            NotMatch => Match,
        }
    }

    /// The operator with its sides swapped (`a < b` is `b > a`).
    pub fn flip(self) -> Op {
        use Op::*;
        match self {
            Lt => Gt,
            Gt => Lt,
            Le => Ge,
            Ge => Le,
            In => Ni,
            Ni => In,
            NotIn => NotNi,
            NotNi => NotIn,
            other => other,
        }
    }

    /// Whether this is one of the negative operators (`!=`, `!in`, `!ni`, `!~`).
    pub fn is_negative(self) -> bool {
        matches!(self, Op::Ne | Op::NotIn | Op::NotNi | Op::NotMatch)
    }

    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        use Op::*;
        match self {
            Eq => "==",
            Ne => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            In => "in",
            NotIn => "!in",
            Ni => "ni",
            NotNi => "!ni",
            Match => "~",
            NotMatch => "!~",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
