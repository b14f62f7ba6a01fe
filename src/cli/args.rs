//! Arguments shared by several commands, and the clap side of the library's settings: one
//! value parser for every [`Choice`] (the library's name table, so the command line and
//! pipeline files accept the same words).

use std::marker::PhantomData;
use std::path::PathBuf;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::Args;

use weir::error::OnError;
use weir::setting::Choice;
use weir::source::{FileSourceConfig, Format};

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
