//! Arguments shared by several commands, and the clap side of the library's settings: one
//! value parser for every [`Choice`] (the library's name table, so the command line and
//! pipeline files accept the same words).

use std::marker::PhantomData;
use std::path::PathBuf;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::Args;

use weir::unstable::error::OnError;
use weir::unstable::setting::Choice;
use weir::unstable::source::{FileSourceConfig, Format};

/// `--db DIR`: the archive directory.
#[derive(Debug, Clone, Args)]
pub struct DbArg {
    /// The archive directory.
    #[arg(
        long = "db",
        env = "WEIR_DB",
        default_value = "./weir.db",
        value_name = "DIR"
    )]
    pub path: PathBuf,
}

/// `--memory SIZE`: the memory budget of a query's operators ([`weir::unstable::query::memory`]).
#[derive(Debug, Clone, Args)]
pub struct MemoryArg {
    /// The most memory the operators of the query (sort, summarize, top, rare, tail) may
    /// hold together; past it the query fails with an error naming the operator. The
    /// default is a quarter of the machine's memory.
    #[arg(long = "memory", value_name = "SIZE",
          default_value_t = SizeText(weir::unstable::query::memory::default_query_memory()))]
    pub memory: SizeText,
}

impl MemoryArg {
    /// The chain's memory limit.
    pub fn limit(&self) -> weir::unstable::query::memory::MemoryLimit {
        weir::unstable::query::memory::MemoryLimit {
            bytes: self.memory.0,
            option: "--memory",
        }
    }
}

/// The inputs of `weir import` and `weir convert`: overrides of a [`FileSourceConfig`].
#[derive(Debug, Clone, Args)]
pub struct SourceArgs {
    /// Input format.
    #[arg(long, value_parser = choice::<Format>(), value_name = "FORMAT",
          default_value_t = FileSourceConfig::default().format)]
    pub from: Format,
    /// What to do with a row that does not parse.
    #[arg(long = "on-error", value_parser = choice::<OnError>(), value_name = "WHAT",
          default_value_t = FileSourceConfig::default().on_error)]
    pub on_error: OnError,
    /// The Zeek log schema of JSON lines without `_path`, e.g. `zeek.conn` (default: the one
    /// each input's file name names, `conn.log` → `zeek.conn`).
    #[arg(long, value_name = "NAME")]
    pub schema: Option<String>,
    /// A directory of more Zeek log schema files (`*.toml`), added to the shipped ones (see
    /// the guide, docs/book/src/import/zeek-json.md).
    #[arg(long = "schema-dir", value_name = "DIR")]
    pub schema_dir: Option<PathBuf>,
    /// Files or glob patterns, read in order (gzip and zstd detected); `-` or none: stdin.
    #[arg(value_name = "FILE")]
    pub files: Vec<String>,
}

impl SourceArgs {
    /// The source these flags describe: the defaults with each given flag applied.
    pub fn config(&self) -> FileSourceConfig {
        let mut c = FileSourceConfig::new(self.files.iter().cloned());
        c.format = self.from;
        c.on_error = self.on_error;
        c.schema = self.schema.clone();
        c.schema_dir = self.schema_dir.clone();
        c
    }
}

/// Parses the words of a [`Choice`] and lists them (with their help) in `--help`.
#[derive(Clone)]
pub struct ChoiceParser<T>(PhantomData<T>);

/// The value parser of a [`Choice`] setting: `#[arg(value_parser = choice::<Format>())]`.
pub fn choice<T: Choice + Send + Sync>() -> ChoiceParser<T> {
    ChoiceParser(PhantomData)
}

impl<T: Choice + Send + Sync> TypedValueParser for ChoiceParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let word = value.to_string_lossy();
        T::from_name(&word).ok_or_else(|| {
            let mut e = clap::Error::new(ErrorKind::InvalidValue).with_cmd(cmd);
            if let Some(arg) = arg {
                e.insert(
                    ContextKind::InvalidArg,
                    ContextValue::String(arg.to_string()),
                );
            }
            e.insert(
                ContextKind::InvalidValue,
                ContextValue::String(word.into_owned()),
            );
            e.insert(
                ContextKind::ValidValue,
                ContextValue::Strings(
                    T::CHOICES
                        .iter()
                        .filter(|c| c.help.is_some())
                        .map(|c| c.name.to_string())
                        .collect(),
                ),
            );
            e
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(T::CHOICES.iter().map(|c| match c.help {
            Some(help) => PossibleValue::new(c.name).help(help),
            None => PossibleValue::new(c.name).hide(true),
        })))
    }
}

/// A byte size as a flag takes and shows it (`1GiB`, `512MiB`, `1500B`): its `Display` is
/// the exact largest binary unit, which [`weir::unstable::size::parse_size`] reads back, so that
/// `--help` shows a default taken from the library's constant (`[default: 1GiB]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeText(pub u64);

impl std::str::FromStr for SizeText {
    type Err = weir::unstable::size::SizeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        weir::unstable::size::parse_size(s).map(SizeText)
    }
}

/// A size that must have a unit (`500GiB`; a plain number is refused): the disk budget of
/// retention ([`weir::unstable::size::parse_size_with_unit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetText(pub u64);

impl std::str::FromStr for BudgetText {
    type Err = weir::unstable::size::SizeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        weir::unstable::size::parse_size_with_unit(s).map(BudgetText)
    }
}

impl std::fmt::Display for SizeText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const UNITS: [(&str, u64); 4] = [
            ("TiB", 1 << 40),
            ("GiB", 1 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
        ];
        match UNITS
            .iter()
            .find(|(_, factor)| self.0 != 0 && self.0.is_multiple_of(*factor))
        {
            Some((unit, factor)) => write!(f, "{}{unit}", self.0 / factor),
            None => write!(f, "{}B", self.0),
        }
    }
}

/// A duration as a flag takes and shows it (`1s`, `250ms`, `2m`): its `Display` is the
/// exact largest unit, which [`weir::unstable::duration::parse_duration`] reads back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationText(pub std::time::Duration);

impl std::str::FromStr for DurationText {
    type Err = weir::unstable::duration::DurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        weir::unstable::duration::parse_duration(s).map(DurationText)
    }
}

/// A duration that must have a unit (`90d`; a plain number is refused): a retention period
/// or an age to erase ([`weir::unstable::duration::parse_period`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeriodText(pub std::time::Duration);

impl std::str::FromStr for PeriodText {
    type Err = weir::unstable::duration::DurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        weir::unstable::duration::parse_period(s).map(PeriodText)
    }
}

impl std::fmt::Display for DurationText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&weir::unstable::duration::format_duration(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::{DurationText, SizeText};
    use std::time::Duration;

    #[test]
    fn sizes_and_durations_show_as_they_parse() {
        for (n, shown) in [
            (1 << 30, "1GiB"),
            (512 << 20, "512MiB"),
            (3072, "3KiB"),
            (1536, "1536B"),
            (1500, "1500B"),
            (0, "0B"),
        ] {
            assert_eq!(SizeText(n).to_string(), shown);
            assert_eq!(shown.parse::<SizeText>().unwrap(), SizeText(n));
        }
        for (d, shown) in [
            (Duration::from_secs(1), "1s"),
            (Duration::from_millis(250), "250ms"),
            (Duration::from_secs(120), "2m"),
            (Duration::from_secs(5400), "90m"),
            (Duration::from_secs(90 * 86_400), "90d"),
            (Duration::ZERO, "0s"),
        ] {
            assert_eq!(DurationText(d).to_string(), shown);
            assert_eq!(shown.parse::<DurationText>().unwrap(), DurationText(d));
        }
    }
}
