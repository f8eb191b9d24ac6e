//! `flexio completions SHELL` and `flexio man`: shell completions and the
//! man page, generated from the same clap definitions the parser uses, so
//! they never drift from the flags.
//!
//! Installed with (README, "Install"):
//! `flexio completions bash > ~/.local/share/bash-completion/completions/flexio`,
//! `flexio man > ~/.local/share/man/man1/flexio.1`.

use clap::{Args, CommandFactory};
use flexio::Error;

/// Arguments of `flexio completions`.
#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    shell: clap_complete::Shell,
}

/// Prints the completion script for the shell on stdout.
pub fn completions(args: CompletionsArgs) -> Result<(), Error> {
    let mut command = crate::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "flexio", &mut script);
    crate::print_stdout(&String::from_utf8_lossy(&script));
    Ok(())
}

/// Prints the man page, flexio(1) in roff, on stdout; each subcommand's
/// options are in its own section.
pub fn man() -> Result<(), Error> {
    let command = crate::Cli::command();
    let mut page = Vec::new();
    let io = |error: std::io::Error| Error::Io {
        op: "write the man page",
        endpoint: "stdout".into(),
        offset: None,
        source: error,
    };
    clap_mangen::Man::new(command.clone())
        .render(&mut page)
        .map_err(io)?;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("flexio {}", sub.get_name());
        let sub = sub.clone().bin_name(name.clone());
        let mut section = Vec::new();
        clap_mangen::Man::new(sub.clone())
            .render_options_section(&mut section)
            .map_err(io)?;
        page.extend_from_slice(format!(".SH \"{}\"\n", name.to_uppercase()).as_bytes());
        if let Some(about) = sub.get_about() {
            page.extend_from_slice(format!("{about}\n").as_bytes());
        }
        // The options section's own heading, renamed to the subcommand's.
        let text = String::from_utf8_lossy(&section).replacen(".SH OPTIONS\n", "", 1);
        page.extend_from_slice(text.as_bytes());
    }
    crate::print_stdout(&String::from_utf8_lossy(&page));
    Ok(())
}
