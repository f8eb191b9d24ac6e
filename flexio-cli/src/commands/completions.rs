//! `flexio completions SHELL` and `flexio man`: shell completions and the
//! man page, generated from the same clap definitions the parser uses, so
//! they never drift from the flags.
//!
//! Installed with (README, "Install"):
//! `flexio completions bash > ~/.local/share/bash-completion/completions/flexio`
//! (read by the bash-completion package), `flexio man --dir
//! ~/.local/share/man/man1` (flexio(1) and a page per subcommand).

use std::path::{Path, PathBuf};

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

/// Arguments of `flexio man`.
#[derive(Args)]
pub struct ManArgs {
    /// Write flexio.1 and one page per subcommand (flexio-copy.1 and so
    /// on) into this directory instead of printing flexio(1).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Prints flexio(1) in roff on stdout, or writes every page into
/// `--dir` (made if it does not exist).
pub fn man(args: ManArgs) -> Result<(), Error> {
    let io = |op: &'static str, endpoint: &Path| {
        let endpoint = endpoint.display().to_string();
        move |error: std::io::Error| Error::Io {
            op,
            endpoint,
            offset: None,
            source: error,
        }
    };
    let Some(dir) = args.dir else {
        let page = crate::commands::man::pages::top_page_alone()
            .map_err(io("render the man page", Path::new("stdout")))?;
        crate::print_stdout(&page.text);
        return Ok(());
    };
    let pages = crate::commands::man::pages::all_pages().map_err(io("render the man pages", &dir))?;
    // As `install -d` would: a man directory such as ~/.local/share/man/man1
    // often does not exist yet.
    std::fs::create_dir_all(&dir).map_err(io("create the man page directory", &dir))?;
    for page in pages {
        let path = dir.join(&page.file_name);
        std::fs::write(&path, page.text).map_err(io("write the man page", &path))?;
    }
    Ok(())
}
