//! `flexio man --dir` writes flexio(1) and a page per subcommand, each
//! saying what the command does and holding EXAMPLES and EXIT STATUS; the
//! top page's SEE ALSO names only pages written beside it, and the page
//! `flexio man` prints alone names none.

use crate::common;

/// The subcommands `flexio --help` lists (its "Commands:" block).
fn listed_subcommands() -> Vec<String> {
    let output = common::flexio().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&output.stdout).into_owned();
    help.split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The `flexio-NAME(1)` references in a page.
fn references(page: &str) -> Vec<String> {
    page.split("flexio\\-")
        .skip(1)
        .filter_map(|rest| rest.split_once("(1)").map(|(name, _)| name.to_string()))
        .filter(|name| name.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .collect()
}

#[test]
fn every_subcommand_has_a_page_with_examples_and_exit_status() {
    let top = tempfile::tempdir().unwrap();
    // A man directory that does not exist yet is made.
    let dir = top.path().join("share/man/man1");
    let output = common::flexio()
        .args(["man", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", common::stderr(&output));
    let subcommands = listed_subcommands();
    assert!(subcommands.len() >= 12, "{subcommands:?}");
    for name in &subcommands {
        let path = dir.join(format!("flexio-{name}.1"));
        let page =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name_section = page
            .split(".SH NAME\n")
            .nth(1)
            .unwrap()
            .lines()
            .next()
            .unwrap();
        assert!(
            name_section.starts_with(&format!("flexio\\-{name} \\- ")) && name_section.len() > 25,
            "{name}: NAME is {name_section:?}"
        );
        assert!(page.contains(".SH EXAMPLES\n"), "{name}: no EXAMPLES");
        assert!(
            page.contains(&format!("flexio {name}")),
            "{name}: no example of it"
        );
        assert!(
            page.contains(".SH \"EXIT STATUS\"\n"),
            "{name}: no EXIT STATUS"
        );
        assert!(page.contains(".SH \"SEE ALSO\"\nflexio(1)"), "{name}");
    }
    let top = std::fs::read_to_string(dir.join("flexio.1")).unwrap();
    let name = top
        .split(".SH NAME\n")
        .nth(1)
        .unwrap()
        .lines()
        .next()
        .unwrap();
    assert!(
        name.starts_with("flexio \\- Copy files"),
        "the top page's NAME: {name}"
    );
    let cited = references(top.split(".SH \"SEE ALSO\"").nth(1).expect("SEE ALSO"));
    assert_eq!(cited.len(), subcommands.len(), "{cited:?}");
    for name in references(&top) {
        assert!(
            dir.join(format!("flexio-{name}.1")).is_file(),
            "flexio(1) cites flexio-{name}(1), which was not written"
        );
    }
}

#[test]
fn the_page_printed_alone_cites_no_other_page() {
    let output = common::flexio().arg("man").output().unwrap();
    assert!(output.status.success(), "{}", common::stderr(&output));
    let page = String::from_utf8_lossy(&output.stdout);
    assert!(page.contains(".TH flexio 1"), "{page}");
    assert!(page.contains(".SH \"EXIT STATUS\""), "{page}");
    assert_eq!(references(&page), Vec::<String>::new());
}
