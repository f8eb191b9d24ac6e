//! The man pages, rendered from the clap definitions the parser uses:
//! flexio(1) and one page per subcommand (flexio-copy(1), flexio-get(1)…),
//! each with EXAMPLES and EXIT STATUS, and a SEE ALSO that names only
//! pages written beside it.

/// One man page: its file name (`flexio-copy.1`) and its roff text.
pub struct Page {
    /// The file name, section included.
    pub file_name: String,
    /// The page in roff.
    pub text: String,
}

/// What every command's exit status means (error.rs picks 1 or 2).
const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "Success."),
    (
        "1",
        "The work failed at run time; the message names the operation, the path and, where it applies, the byte offset.",
    ),
    (
        "2",
        "A usage error: a bad argument, a mechanism that cannot serve the pair, a missing operand.",
    ),
];

/// Exit statuses particular to one subcommand.
fn exit_status_extra(name: &str) -> &'static [(&'static str, &'static str)] {
    match name {
        "copy" => &[(
            "128+N",
            "Killed by signal N (SIGINT, SIGTERM, SIGHUP): the temporary file is removed first, nothing is left under the destination's name.",
        )],
        "serve" => &[(
            "130",
            "A second SIGINT or SIGTERM while the first lets answers in flight finish (the first exits 0 once they have).",
        )],
        "get" | "put" => &[(
            "1",
            "For a tree: at least one file failed; the others were still moved, and each failure is listed.",
        )],
        _ => &[],
    }
}

/// Examples per subcommand: what it does, then the command line. Each is
/// parsed by a unit test, so none drifts from the flags.
pub(crate) fn examples(name: &str) -> &'static [(&'static str, &'static str)] {
    match name {
        "copy" => &[
            ("Copy a file and say which mechanism ran, and why:", "flexio copy big.iso big-copy.iso --report"),
            ("Copy a tree as cp -a does; an interrupted copy leaves only whole files:", "flexio copy -a photos/ backup/"),
            ("Copy with splice, then check both sides with BLAKE3:", "flexio copy --via splice --verify big.iso big-copy.iso"),
            ("Copy at most 100 MiB/s:", "flexio copy --rate 100M big.iso /mnt/slow/big.iso"),
        ],
        "bench" => &[
            ("The quick bench (about two minutes); the verdict first, the tables in report.md:", "flexio bench"),
            ("One scenario, one size, one round:", "flexio bench --scenario file-to-file --sizes 1M --runs 1 --out bench-out"),
            ("Many small files against cp -a, rsync -a and tar, installing xcp first if missing:", "flexio bench --scenario tree --install-peers"),
        ],
        "cache" => &[
            ("Replay a generated trace through every eviction policy:", "flexio cache sim --trace zipf:blocks=20000,alpha=0.9,len=200000,seed=1 --size 1000,5000"),
            ("Measure the block cache on the disk under /mnt/data:", "flexio cache bench --dir /mnt/data"),
        ],
        "mechanisms" => &[("Which mechanism serves which pair of endpoints:", "flexio mechanisms")],
        "plan" => &[("What auto would do for this copy, and why, without moving data:", "flexio plan big.iso big-copy.iso")],
        "profile" => &[
            ("Show the tuned profile auto reads:", "flexio profile show"),
            ("Compare two profiles:", "flexio profile diff old.toml new.toml"),
        ],
        "tune" => &[("Measure this machine (minutes) and write the profile auto reads:", "flexio tune --quick")],
        "serve" => &[
            ("Serve a directory on loopback port 8080:", "flexio serve photos --listen 8080"),
            ("Serve to other hosts over HTTPS with a throw-away certificate:", "flexio serve photos --listen 0.0.0.0:8443 --public --tls-self-signed"),
            ("Take uploads from holders of a token:", "flexio serve incoming --listen 8080 --token-file token"),
        ],
        "get" => &[
            ("Fetch one file in parallel ranges (run again to resume):", "flexio get http://127.0.0.1:8080/big.iso"),
            ("Fetch a tree, every file checked against the server's manifest:", "flexio get http://127.0.0.1:8080/photos/ photos-fetched"),
            ("Fetch one share of four of a tree, as a job array's task 2:", "flexio get http://127.0.0.1:8080/photos/ photos --shard 2/4"),
        ],
        "put" => &[
            ("Upload a file; pieces over 4 connections, resumable:", "flexio put big.iso http://127.0.0.1:8080/ --token-file token --streams 4"),
            ("Upload a tree (MKCOL per directory, PUT per file):", "flexio put photos http://127.0.0.1:8080/photos/ --token-file token"),
        ],
        "completions" => &[(
            "Install bash completions (they need the bash-completion package):",
            "flexio completions bash > ~/.local/share/bash-completion/completions/flexio",
        )],
        "man" => &[
            ("Install every page:", "flexio man --dir ~/.local/share/man/man1"),
            ("Print flexio(1):", "flexio man"),
        ],
        _ => &[],
    }
}

/// Escapes text for roff: a backslash, and a line-leading dot or quote.
fn roff_text(text: &str) -> String {
    let text = text.replace('\\', "\\e").replace('-', "\\-");
    if text.starts_with(['.', '\'']) {
        format!("\\&{text}")
    } else {
        text
    }
}

/// EXAMPLES and EXIT STATUS of subcommand `name`, in roff.
fn examples_and_exit_status(name: &str) -> String {
    let mut out = String::from(".SH EXAMPLES\n");
    for (what, command) in examples(name) {
        out += &format!(
            ".PP\n{}\n.PP\n.RS 4\n.nf\n{}\n.fi\n.RE\n",
            roff_text(what),
            roff_text(command)
        );
    }
    out += ".SH \"EXIT STATUS\"\n";
    for (status, what) in EXIT_STATUS.iter().chain(exit_status_extra(name)) {
        out += &format!(".TP\n{}\n{}\n", roff_text(status), roff_text(what));
    }
    out
}

/// The visible subcommands of flexio, in the parser's order.
pub(crate) fn subcommands(command: &clap::Command) -> Vec<clap::Command> {
    command
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect()
}

/// Renders `man` into a string.
fn render(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    write(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The options of each of `command`'s own subcommands (`cache sim`,
/// `profile diff`), each under its own heading.
fn nested_sections(command: &clap::Command, prefix: &str) -> std::io::Result<String> {
    let mut out = String::new();
    for sub in subcommands(command) {
        let name = format!("{prefix} {}", sub.get_name());
        out += &format!(".SH \"{}\"\n", name.to_uppercase());
        if let Some(about) = sub.get_about() {
            out += &format!("{}\n", roff_text(&about.to_string()));
        }
        let man = clap_mangen::Man::new(sub.clone().bin_name(name.clone()));
        let options = render(|w| man.render_options_section(w))?;
        out += &options.replacen(".SH OPTIONS\n", "", 1);
    }
    Ok(out)
}

/// flexio-NAME(1) for one subcommand: NAME (what it does), SYNOPSIS,
/// DESCRIPTION, OPTIONS, its own subcommands' options, EXAMPLES, EXIT
/// STATUS, SEE ALSO flexio(1).
fn subcommand_page(sub: &clap::Command, version: &str) -> std::io::Result<Page> {
    let name = sub.get_name().to_string();
    let title = format!("flexio-{name}");
    let command = sub
        .clone()
        .display_name(title.clone())
        .bin_name(format!("flexio {name}"));
    let man = clap_mangen::Man::new(command.clone())
        .title(title.clone())
        .source(format!("flexio {version}"));
    let mut text = render(|w| man.render_title(w))?;
    text += &render(|w| man.render_name_section(w))?;
    text += &render(|w| man.render_synopsis_section(w))?;
    text += &render(|w| man.render_description_section(w))?;
    if command.get_arguments().any(|a| !a.is_hide_set()) {
        text += &render(|w| man.render_options_section(w))?;
    }
    text += &nested_sections(&command, &format!("flexio {name}"))?;
    text += &examples_and_exit_status(&name);
    text += ".SH \"SEE ALSO\"\nflexio(1)\n";
    Ok(Page {
        file_name: format!("{title}.1"),
        text,
    })
}

/// flexio(1): the program, its subcommands with what each does, each
/// one's options, the exit statuses; with `see_also`, a SEE ALSO naming
/// the subcommands' own pages (written beside it by `flexio man --dir`).
fn top_page(command: &clap::Command, see_also: bool) -> std::io::Result<Page> {
    let version = command.get_version().unwrap_or_default().to_string();
    let man = clap_mangen::Man::new(command.clone()).source(format!("flexio {version}"));
    let mut text = render(|w| man.render_title(w))?;
    text += &render(|w| man.render_name_section(w))?;
    text += &render(|w| man.render_synopsis_section(w))?;
    text += &render(|w| man.render_description_section(w))?;
    text += ".SH COMMANDS\n";
    for sub in subcommands(command) {
        text += &format!(".TP\n\\fBflexio {}\\fR\n", sub.get_name());
        if let Some(about) = sub.get_about() {
            text += &format!("{}\n", roff_text(&about.to_string()));
        }
    }
    text += &nested_sections(command, "flexio")?;
    text += ".SH \"EXIT STATUS\"\n";
    for (status, what) in EXIT_STATUS {
        text += &format!(".TP\n{}\n{}\n", roff_text(status), roff_text(what));
    }
    if see_also {
        let pages: Vec<String> = subcommands(command)
            .iter()
            .map(|sub| format!("flexio\\-{}(1)", sub.get_name()))
            .collect();
        text += &format!(".SH \"SEE ALSO\"\n{}\n", pages.join(", "));
    }
    Ok(Page {
        file_name: "flexio.1".to_string(),
        text,
    })
}

/// flexio(1) alone, for `command` (flexio's parser), as `flexio man`
/// prints it: it names no other page, as none may be installed beside it.
///
/// # Errors
/// Only what rendering into memory can return (nothing in practice).
pub fn top_page_alone(command: &clap::Command) -> std::io::Result<Page> {
    top_page(command, false)
}

/// Every page `flexio man --dir` writes for `command` (flexio's parser): flexio(1), whose SEE ALSO names
/// the others, and flexio-NAME(1) for each visible subcommand.
///
/// # Errors
/// Only what rendering into memory can return (nothing in practice).
pub fn all_pages(command: &clap::Command) -> std::io::Result<Vec<Page>> {
    let version = command.get_version().unwrap_or_default().to_string();
    let mut pages = vec![top_page(command, true)?];
    for sub in subcommands(command) {
        pages.push(subcommand_page(&sub, &version)?);
    }
    Ok(pages)
}
