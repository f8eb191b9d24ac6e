//! What a new user meets first: `flexio profile show` before any tune,
//! shell completions and the man page generated from the parser's own
//! definitions.

use crate::common;

use common::{flexio, stderr};

#[test]
fn profile_show_before_any_tune_explains_the_built_in_table() {
    let output = flexio().args(["profile", "show"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("built-in table"), "{text}");
    assert!(text.contains("flexio tune"), "{text}");
}

#[test]
fn completions_for_bash_zsh_and_fish_know_the_subcommands_and_flags() {
    for shell in ["bash", "zsh", "fish"] {
        let output = flexio().args(["completions", shell]).output().unwrap();
        assert!(output.status.success(), "{shell}: {}", stderr(&output));
        let script = String::from_utf8_lossy(&output.stdout);
        for word in ["flexio", "copy", "serve", "via", "report", "queue-depth"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
    }
    let bad = flexio().args(["completions", "cmd.exe"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn the_man_page_is_roff_with_every_subcommand() {
    let output = flexio().arg("man").output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let page = String::from_utf8_lossy(&output.stdout);
    assert!(
        page.starts_with(".ie") || page.starts_with(".TH"),
        "{}",
        &page[..80]
    );
    assert!(page.contains(".TH flexio 1"), "no title");
    for section in ["FLEXIO COPY", "FLEXIO GET", "FLEXIO SERVE"] {
        assert!(page.contains(section), "no {section}");
    }
    assert!(
        page.contains("queue\\-depth"),
        "copy's options are not listed"
    );
}
