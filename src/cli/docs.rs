//! `weir completions SHELL` (clap_complete) and `weir man [COMMAND]` (clap_mangen): both
//! generated from the same clap definition as the parser, so they cannot drift from it.

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::archive::print_out;
use super::{Cli, UsageError};

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, powershell or elvish. Install e.g. with
    /// `weir completions bash > ~/.local/share/bash-completion/completions/weir`.
    #[arg(value_name = "SHELL")]
    shell: Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// A subcommand (`import`, `export`, ...): its page (weir-import(1)) instead of weir(1).
    #[arg(value_name = "COMMAND")]
    command: Option<String>,
}

/// `weir completions SHELL`: the completion script on stdout.
pub fn completions(args: CompletionsArgs) -> anyhow::Result<()> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "weir", &mut out);
    print_out(&String::from_utf8_lossy(&out))
}

/// `weir man [COMMAND]`: the roff man page on stdout (`weir man | man -l -`).
pub fn man(args: ManArgs) -> anyhow::Result<()> {
    let mut cmd = Cli::command();
    cmd.build();
    let page = match &args.command {
        None => cmd,
        Some(name) => {
            let sub = cmd
                .get_subcommands()
                .find(|c| c.get_name() == name)
                .cloned()
                .ok_or_else(|| UsageError(format!("no command {name:?}; see `weir --help`")))?;
            sub.display_name(format!("weir-{name}"))
                .version(env!("CARGO_PKG_VERSION"))
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    print_out(&String::from_utf8_lossy(&out))
}
