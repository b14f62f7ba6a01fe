//! Subcommands whose arguments clap builds only when they are needed.

use clap::{ArgMatches, Args, Command, FromArgMatches};

/// The arguments `A` of one subcommand, added to it only when clap needs them: when that
/// subcommand is the one given, or when help, completions or a man page are made
/// ([`Command::defer`]). Building every subcommand's arguments on every start was a fifth of
/// a fresh `weir count`'s CPU (2026-12-04, `docs/dev/performance-log.md`).
#[derive(Debug)]
pub(super) struct Deferred<A>(pub(super) A);

impl<A: FromArgMatches> FromArgMatches for Deferred<A> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        A::from_arg_matches(matches).map(Deferred)
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        A::from_arg_matches_mut(matches).map(Deferred)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }

    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}

impl<A: Args> Args for Deferred<A> {
    fn group_id() -> Option<clap::Id> {
        A::group_id()
    }

    fn augment_args(cmd: Command) -> Command {
        cmd.defer(|cmd| keeping_about(cmd, A::augment_args))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        cmd.defer(|cmd| keeping_about(cmd, A::augment_args_for_update))
    }
}

/// `augment(cmd)` with `cmd`'s about texts kept: the subcommand's own (its variant's doc
/// comment) were set before its arguments are added, which would otherwise replace them
/// with those of a flattened struct's doc comment.
fn keeping_about(cmd: Command, augment: fn(Command) -> Command) -> Command {
    let about = cmd.get_about().cloned();
    let long_about = cmd.get_long_about().cloned();
    let mut cmd = augment(cmd);
    if let Some(about) = about {
        cmd = cmd.about(about);
    }
    if let Some(long_about) = long_about {
        cmd = cmd.long_about(long_about);
    }
    cmd
}
