//! `flexio completions SHELL`: the shell's completion script, generated
//! from the same clap definitions the parser uses, so it never drifts from
//! the flags. Installed with (README, "Install"):
//! `flexio completions bash > ~/.local/share/bash-completion/completions/flexio`
//! (read by the bash-completion package).

use clap::Args;

/// Arguments of `flexio completions`.
#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    shell: clap_complete::Shell,
}

/// Prints the completion script of `command` (flexio's parser) for the
/// shell on stdout.
pub fn run(args: CompletionsArgs, mut command: clap::Command) -> crate::error::Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "flexio", &mut script);
    crate::output::print_stdout(&String::from_utf8_lossy(&script));
    Ok(())
}
