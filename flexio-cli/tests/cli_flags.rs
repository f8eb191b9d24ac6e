//! One flag name per meaning across commands, and `--via` lists that
//! match what each command takes: copy every mechanism, get those that
//! move socket → file, serve those its workers drive.

use crate::common;

use flexio::{EndpointKind, MechanismName};

/// The help text of `--via` in `flexio COMMAND --help`.
fn via_help(command: &str) -> String {
    let output = common::flexio().args([command, "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&output.stdout).into_owned();
    let start = help
        .find("--via")
        .unwrap_or_else(|| panic!("{command}: no --via"));
    let rest = &help[start..];
    // Up to the next option.
    let end = rest[1..].find("\n  -").map_or(rest.len(), |end| end + 1);
    rest[..end].to_string()
}

/// The mechanism names a text lists, as whole words.
fn listed(text: &str) -> Vec<MechanismName> {
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .collect();
    MechanismName::CONCRETE
        .into_iter()
        .chain([MechanismName::Auto])
        .filter(|m| words.contains(&m.as_str()))
        .collect()
}

fn with_auto(mut names: Vec<MechanismName>) -> Vec<MechanismName> {
    names.push(MechanismName::Auto);
    names
}

#[test]
fn each_via_help_lists_what_the_command_takes() {
    let every = with_auto(MechanismName::CONCRETE.to_vec());
    assert_eq!(listed(&via_help("copy")), every, "{}", via_help("copy"));
    let socket_to_file = MechanismName::serving(EndpointKind::Tcp, EndpointKind::File);
    // get names the three it refuses, to say why: its list is the rest.
    let get = via_help("get");
    let (takes, refuses) = get.split_once('(').unwrap();
    assert_eq!(listed(takes), with_auto(socket_to_file.clone()), "{get}");
    for name in listed(refuses) {
        assert!(!socket_to_file.contains(&name), "{name}");
    }
    let mut serve = listed(&via_help("serve"));
    serve.sort();
    let mut bodies = with_auto(flexio_net::server::BODY_MECHANISMS.to_vec());
    bodies.sort();
    assert_eq!(serve, bodies, "{}", via_help("serve"));
}

#[test]
fn get_refuses_a_mechanism_that_cannot_write_a_socket_to_a_file() {
    let refused: Vec<_> = MechanismName::CONCRETE
        .into_iter()
        .filter(|m| !MechanismName::serving(EndpointKind::Tcp, EndpointKind::File).contains(m))
        .collect();
    assert!(!refused.is_empty());
    for name in refused {
        let output = common::flexio()
            .args([
                "get",
                "http://127.0.0.1:9/x",
                "/nonexistent/x",
                "--via",
                name.as_str(),
            ])
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{name}: {}",
            common::stderr(&output)
        );
        assert!(
            common::stderr(&output).contains("cannot move a socket's bytes to a file"),
            "{name}: {}",
            common::stderr(&output)
        );
    }
}

#[test]
fn get_and_put_both_take_piece_size_and_put_still_takes_piece() {
    for command in ["get", "put"] {
        let output = common::flexio().args([command, "--help"]).output().unwrap();
        let help = String::from_utf8_lossy(&output.stdout);
        assert!(help.contains("--piece-size <"), "{command}:\n{help}");
        assert!(!help.contains("--piece <"), "{command}:\n{help}");
    }
    // The old name still parses: the run fails on the missing file (1),
    // not on its arguments (2).
    for flag in ["--piece", "--piece-size"] {
        let output = common::flexio()
            .args(["put", flag, "1M", "--token-file", "/nonexistent/token"])
            .args(["/nonexistent/file", "http://127.0.0.1:9/"])
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(1),
            "{flag}: {}",
            common::stderr(&output)
        );
    }
}

#[test]
fn the_streams_defaults_say_why_they_differ() {
    let output = common::flexio().args(["put", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("One by default"), "{help}");
    assert!(help.contains("[default: 1]"), "{help}");
    let output = common::flexio().args(["get", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("Four by default"), "{help}");
}
