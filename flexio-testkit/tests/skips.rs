//! The skip helpers keep `.ci/run`'s promise: under
//! `FLEXIO_TEST_PRIVILEGED=1` a tool CI installs must be there (a missing
//! one fails), while an optional peer still skips; and the list of tools
//! a test may require matches what `.ci/run` installs.

use std::path::Path;
use std::process::Command;

const CHILD: &str = "FLEXIO_TESTKIT_SKIP_CHILD";

/// Run again by the tests below, in a child whose PATH holds nothing:
/// asks for the tool `$FLEXIO_TESTKIT_SKIP_CHILD` names.
#[test]
fn child_asks_for_a_tool() {
    let Ok(what) = std::env::var(CHILD) else {
        return;
    };
    let found = match what.as_str() {
        "required" => flexio_testkit::require_tool("curl"),
        _ => flexio_testkit::optional_tool("lftp"),
    };
    println!("found: {found}");
}

/// The child's exit status and stderr, asking for `what` with `privileged`.
fn ask(what: &str, privileged: bool) -> (bool, String) {
    let empty = tempfile::tempdir().unwrap();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "child_asks_for_a_tool",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, what)
        .env("PATH", empty.path())
        .env("RUST_BACKTRACE", "0");
    if privileged {
        command.env(flexio_testkit::PRIVILEGED_ENV, "1");
    } else {
        command.env_remove(flexio_testkit::PRIVILEGED_ENV);
    }
    let output = command.output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}

#[test]
fn a_missing_ci_tool_fails_under_privileged_and_skips_otherwise() {
    let (passed, text) = ask("required", true);
    assert!(
        !passed,
        "a missing curl passed under FLEXIO_TEST_PRIVILEGED=1:\n{text}"
    );
    assert!(
        text.contains("FLEXIO_TEST_PRIVILEGED=1 forbids skipping"),
        "{text}"
    );
    let (passed, text) = ask("required", false);
    assert!(passed, "{text}");
    assert!(
        text.contains("skipped: child_asks_for_a_tool: curl is not installed"),
        "{text}"
    );
}

#[test]
fn a_missing_optional_peer_skips_even_under_privileged() {
    let (passed, text) = ask("optional", true);
    assert!(passed, "{text}");
    assert!(
        text.contains("skipped: child_asks_for_a_tool: lftp"),
        "{text}"
    );
    assert!(text.contains("found: false"), "{text}");
}

#[test]
#[should_panic(expected = "not a tool .ci/run installs")]
fn requiring_a_tool_ci_does_not_install_is_a_mistake() {
    flexio_testkit::require_tool("no-such-ci-tool");
}

#[test]
fn every_required_tool_comes_from_a_package_ci_installs_and_is_never_hidden() {
    let ci = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci");
    let run = std::fs::read_to_string(ci.join("run")).unwrap();
    let install = run
        .split("apt-get install")
        .nth(1)
        .and_then(|rest| rest.split(">/dev/null").next())
        .expect("an apt-get install line in .ci/run");
    let packages: Vec<&str> = install.split_whitespace().filter(|w| *w != "\\").collect();
    let without = std::fs::read_to_string(ci.join("without-peers")).unwrap();
    let hidden = without
        .lines()
        .find_map(|line| line.strip_prefix("peers=("))
        .expect("a peers=( line in .ci/without-peers");
    let hidden: Vec<&str> = hidden.trim_end_matches(')').split_whitespace().collect();
    for (tool, package) in flexio_testkit::CI_TOOLS {
        assert!(
            packages.contains(&package),
            "{tool}: .ci/run installs no {package} ({packages:?})"
        );
        assert!(
            !hidden.contains(&tool),
            "{tool}: .ci/without-peers hides it, so it cannot be required"
        );
    }
}
