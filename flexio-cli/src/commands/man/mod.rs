//! `flexio man`: the man pages, rendered from the same clap definitions the
//! parser uses, so they never drift from the flags. Installed with
//! (README, "Install"): `flexio man --dir ~/.local/share/man/man1`
//! (flexio(1) and a page per subcommand).

mod pages;

use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::{Error, Result};
use crate::output::print_stdout;

#[cfg(test)]
pub(crate) use pages::{examples, subcommands};

/// Arguments of `flexio man`.
#[derive(Args)]
pub struct ManArgs {
    /// Write flexio.1 and one page per subcommand (flexio-copy.1 and so
    /// on) into this directory instead of printing flexio(1).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Prints flexio(1) of `command` (flexio's parser) in roff on stdout, or
/// writes every page into `--dir` (made if it does not exist).
pub fn run(args: ManArgs, command: clap::Command) -> Result<()> {
    let io = |op: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |error: std::io::Error| Error::io(op, &path, error)
    };
    let Some(dir) = args.dir else {
        let page = pages::top_page_alone(&command)
            .map_err(io("render the man page", Path::new("stdout")))?;
        print_stdout(&page.text);
        return Ok(());
    };
    let pages = pages::all_pages(&command).map_err(io("render the man pages", &dir))?;
    // As `install -d` would: a man directory such as ~/.local/share/man/man1
    // often does not exist yet.
    std::fs::create_dir_all(&dir).map_err(io("create the man page directory", &dir))?;
    for page in pages {
        let path = dir.join(&page.file_name);
        std::fs::write(&path, page.text).map_err(io("write the man page", &path))?;
    }
    Ok(())
}
