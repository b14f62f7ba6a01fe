//! How a setting is written, once for the command line and for pipeline files.
//!
//! A setting whose value is one of a few words (`--from zeek-tsv`, `format = "zeek-tsv"`) is
//! an enum implementing [`Choice`]: its one name table, [`Choice::CHOICES`], is what clap
//! offers and parses (the binary's value parser reads it), what serde accepts in a pipeline
//! file, and what `Display`/`FromStr` use; [`choice!`](crate::choice) writes those impls.
//! Sizes and durations are strings parsed by [`crate::size`] and [`crate::duration`]; their
//! serde forms are [`de_size`] and [`de_duration`], refusing bare TOML numbers (so that
//! `max_bytes = 1048576` cannot silently mean a TiB). Retention settings, where a wrong guess
//! erases data, also refuse a string without a unit: [`de_size_with_unit`] and [`de_period`].
//!
//! [`field_names`] lists the keys a `Deserialize` struct accepts, so that a pipeline file's
//! unknown key can be reported with the keys there are, at its own line.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};

/// One word of a [`Choice`].
#[derive(Debug, Clone, Copy)]
pub struct ChoiceName<T: 'static> {
    /// The word, as written on the command line and in pipeline files.
    pub name: &'static str,
    /// The value it stands for.
    pub value: T,
    /// One line of help; `None` marks an alias, accepted but not listed.
    pub help: Option<&'static str>,
}

impl<T> ChoiceName<T> {
    /// A listed word with its help.
    pub const fn new(name: &'static str, value: T, help: &'static str) -> ChoiceName<T> {
        ChoiceName {
            name,
            value,
            help: Some(help),
        }
    }

    /// An alias: accepted, not listed.
    pub const fn alias(name: &'static str, value: T) -> ChoiceName<T> {
        ChoiceName {
            name,
            value,
            help: None,
        }
    }
}

/// A setting whose value is one of a fixed set of words.
pub trait Choice: Copy + PartialEq + Sized + 'static {
    /// What the setting is, for messages (`input format`).
    const WHAT: &'static str;
    /// Every accepted word; the first entry of each value is its canonical name, entries
    /// without help are aliases.
    const CHOICES: &'static [ChoiceName<Self>];

    /// The value named `word`, if any.
    fn from_name(word: &str) -> Option<Self> {
        Self::CHOICES
            .iter()
            .find(|c| c.name == word)
            .map(|c| c.value)
    }

    /// The canonical name of this value.
    fn name(self) -> &'static str {
        Self::CHOICES
            .iter()
            .find(|c| c.value == self)
            .map_or("?", |c| c.name)
    }

    /// The listed names, comma-separated (for messages).
    fn expected() -> String {
        Self::CHOICES
            .iter()
            .filter(|c| c.help.is_some())
            .map(|c| c.name)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A word that names no value of a [`Choice`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value {found:?}; expected one of: {expected}")]
pub struct ChoiceError {
    /// The word given.
    pub found: String,
    /// The words there are.
    pub expected: String,
}

/// Parses a word of a [`Choice`].
pub fn parse_choice<T: Choice>(word: &str) -> Result<T, ChoiceError> {
    T::from_name(word).ok_or_else(|| ChoiceError {
        found: word.to_string(),
        expected: T::expected(),
    })
}

/// Deserializes a [`Choice`] from its word.
pub fn de_choice<'de, D: Deserializer<'de>, T: Choice>(d: D) -> Result<T, D::Error> {
    struct V<T>(PhantomData<T>);
    impl<T: Choice> Visitor<'_> for V<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "one of: {}", T::expected())
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<T, E> {
            parse_choice(s).map_err(E::custom)
        }
    }
    d.deserialize_str(V(PhantomData))
}

/// Implements `FromStr`, `Display` and `Deserialize` for a [`Choice`] from its name table.
#[macro_export]
#[doc(hidden)]
macro_rules! choice {
    ($ty:ty) => {
        impl ::std::str::FromStr for $ty {
            type Err = $crate::setting::ChoiceError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $crate::setting::parse_choice(s)
            }
        }
        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str($crate::setting::Choice::name(*self))
            }
        }
        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::setting::de_choice(d)
            }
        }
    };
}

/// A setting that its stage refuses: which key, and what is wrong. A stage's `validate()`
/// returns it; the pipeline loader adds file, line and table, the command line the flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {problem}")]
pub struct InvalidSetting {
    /// The key in the stage's table (`max_events`).
    pub key: &'static str,
    /// What is wrong.
    #[source]
    pub problem: Problem,
}

impl InvalidSetting {
    /// Refuses 0 for a count or size that must be at least 1.
    pub fn at_least_one(key: &'static str, n: u64) -> Result<(), InvalidSetting> {
        if n == 0 {
            return Err(InvalidSetting::out_of_range(key, "0", "must be at least 1"));
        }
        Ok(())
    }

    /// A value outside its range.
    pub fn out_of_range(
        key: &'static str,
        value: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        InvalidSetting {
            key,
            problem: Problem::OutOfRange {
                value: value.into(),
                reason: reason.into(),
            },
        }
    }
}

/// What is wrong with a setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// A value outside its range.
    #[error("{value} is out of range: {reason}")]
    OutOfRange {
        /// The value, as the user would write it.
        value: String,
        /// What the allowed values are.
        reason: String,
    },
    /// A required setting that is missing or empty.
    #[error("missing required key ({hint})")]
    Missing {
        /// What to write.
        hint: String,
    },
    /// An expression that does not parse or type-check (a filter's `where`), shown with a
    /// caret under the problem.
    #[error("invalid expression: {0}")]
    Expression(String),
    /// A value that cannot be used, with the reason (an unreadable or invalid file it
    /// names, a name nothing has).
    #[error("{0}")]
    Invalid(String),
    /// A glob pattern that does not parse.
    #[error("invalid glob pattern {pattern:?}: {reason}")]
    BadGlob {
        /// The pattern.
        pattern: String,
        /// What is wrong.
        reason: String,
    },
}

/// A string setting: what a visitor expects, and what it found otherwise.
struct StrVisitor<F> {
    expected: &'static str,
    parse: F,
}

impl<'de, T, E: fmt::Display, F: FnOnce(&str) -> Result<T, E>> Visitor<'de> for StrVisitor<F> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expected)
    }
    fn visit_str<Er: de::Error>(self, s: &str) -> Result<T, Er> {
        (self.parse)(s).map_err(Er::custom)
    }
    fn visit_i64<Er: de::Error>(self, _: i64) -> Result<T, Er> {
        Err(Er::custom(format!(
            "expected {}, found integer",
            self.expected
        )))
    }
    fn visit_u64<Er: de::Error>(self, _: u64) -> Result<T, Er> {
        Err(Er::custom(format!(
            "expected {}, found integer",
            self.expected
        )))
    }
    fn visit_f64<Er: de::Error>(self, _: f64) -> Result<T, Er> {
        Err(Er::custom(format!(
            "expected {}, found float",
            self.expected
        )))
    }
    fn visit_bool<Er: de::Error>(self, _: bool) -> Result<T, Er> {
        Err(Er::custom(format!(
            "expected {}, found boolean",
            self.expected
        )))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<T, A::Error> {
        Err(de::Error::custom(format!(
            "expected {}, found array",
            self.expected
        )))
    }
}

/// Deserializes a size string (`"16MiB"`; see [`crate::size`]) into bytes.
pub fn de_size<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(StrVisitor {
        expected: "a size string such as \"4MiB\"",
        parse: crate::size::parse_size,
    })
}

/// Deserializes a size string into a `usize` (saturating on 32-bit platforms, where nothing
/// gets that big).
pub fn de_size_usize<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    de_size(d).map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// Deserializes a size string that must have a unit (`"500GiB"`; see
/// [`crate::size::parse_size_with_unit`]): a disk budget.
pub fn de_size_with_unit<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(StrVisitor {
        expected: "a size string with a unit such as \"500GiB\"",
        parse: crate::size::parse_size_with_unit,
    })
}

/// Deserializes a duration string that must have a unit (`"90d"`; see
/// [`crate::duration::parse_period`]): a retention period.
pub fn de_period<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    d.deserialize_any(StrVisitor {
        expected: "a duration string with a unit such as \"90d\" or \"12h\"",
        parse: crate::duration::parse_period,
    })
}

/// Deserializes a duration string (`"250ms"`; see [`crate::duration`]).
pub fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    d.deserialize_any(StrVisitor {
        expected: "a duration string such as \"1s\" or \"250ms\"",
        parse: crate::duration::parse_duration,
    })
}

/// The keys a `Deserialize` struct accepts, in declaration order: serde passes them to
/// `deserialize_struct`, where this deserializer catches them.
pub fn field_names<'de, T: serde::Deserialize<'de>>() -> &'static [&'static str] {
    struct Catch<'a>(&'a mut &'static [&'static str]);
    #[derive(Debug)]
    struct Caught;
    impl fmt::Display for Caught {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("field names caught")
        }
    }
    impl std::error::Error for Caught {}
    impl de::Error for Caught {
        fn custom<M: fmt::Display>(_: M) -> Caught {
            Caught
        }
    }
    impl<'de> Deserializer<'de> for Catch<'_> {
        type Error = Caught;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Caught> {
            Err(Caught)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Caught> {
            *self.0 = fields;
            Err(Caught)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Catch(&mut fields));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Color {
        Red,
        Blue,
    }

    impl Choice for Color {
        const WHAT: &'static str = "color";
        const CHOICES: &'static [ChoiceName<Color>] = &[
            ChoiceName::new("red", Color::Red, "warm"),
            ChoiceName::new("blue", Color::Blue, "cold"),
            ChoiceName::alias("b", Color::Blue),
        ];
    }
    crate::choice!(Color);

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Keys {
        alpha: u8,
        beta: String,
    }

    #[test]
    fn choices_parse_print_and_list_without_aliases() {
        assert_eq!("b".parse::<Color>(), Ok(Color::Blue));
        assert_eq!(Color::Blue.to_string(), "blue");
        let e = "green".parse::<Color>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value \"green\"; expected one of: red, blue"
        );
    }

    #[test]
    fn field_names_are_caught() {
        assert_eq!(field_names::<Keys>(), ["alpha", "beta"]);
    }
}
