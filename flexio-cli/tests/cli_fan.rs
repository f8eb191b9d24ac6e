//! The command line stays a fan: `main.rs` dispatches to one module per
//! command under `src/commands/`, no command names another command (or an
//! item of `main.rs`), and every clap value parser is written once, in
//! `src/values.rs`. Checked on the real source, and on planted trees that
//! must fail.

use std::path::{Path, PathBuf};

use flexio_testkit::architecture::paths_named;

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The module path of `file` under `src` (`commands/copy/mod.rs` is
/// `commands::copy`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let mut path: Vec<String> = file
        .strip_prefix(src)
        .unwrap()
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = path.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && !(path.is_empty() && stem == "main") {
        path.push(stem.to_string());
    }
    path
}

/// The crate's top-level modules: what `crate::NAME` may name besides an
/// item of `main.rs`.
fn top_modules(src: &Path) -> Vec<String> {
    std::fs::read_dir(src)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir() || path.extension().is_some_and(|e| e == "rs"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|name| name != "main")
        .collect()
}

/// Every path a file under `src/commands/COMMAND` names in another
/// command, in `commands` itself, or in `main.rs`: `FILE names PATH`.
fn cross_command_imports(src: &Path) -> Vec<String> {
    let top = top_modules(src);
    let mut found = Vec::new();
    for file in rust_files(&src.join("commands")) {
        let module = module_of(src, &file);
        let text = std::fs::read_to_string(&file).unwrap();
        let (_, named) = paths_named(&text, &module);
        for name in named {
            let (from, path) = (&name.from, &name.path);
            let other_command = match (from.get(1), path.first(), path.get(1)) {
                (Some(ours), Some(first), Some(theirs)) if first == "commands" => ours != theirs,
                // `commands` alone, reached to get at a sibling.
                (Some(_), Some(first), None) => first == "commands",
                _ => false,
            };
            let main_item = path.first().is_some_and(|first| !top.contains(first));
            if from.len() > 1 && (other_command || main_item) {
                let file = file.strip_prefix(src).unwrap().display();
                found.push(format!("{file} names {}", path.join("::")));
            }
        }
    }
    found
}

/// A value parser found in the source: where, its name, its body.
struct Parser {
    file: String,
    name: String,
    free: bool,
    body: String,
}

/// Every function of the shape clap takes as a value parser,
/// `fn NAME(IDENT: &str) -> Result<T, String>`, in every file under `src`.
fn value_parsers(src: &Path) -> Vec<Parser> {
    let mut parsers = Vec::new();
    for file in rust_files(src) {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut at = 0;
        while let Some(found) = text[at..].find("fn ") {
            let start = at + found;
            at = start + 3;
            let Some(open) = text[start..].find('{').map(|o| start + o) else {
                break;
            };
            let signature: String = text[start..open]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let Some((name, rest)) = signature[3..].split_once('(') else {
                continue;
            };
            let Some((parameters, returns)) = rest.split_once(')') else {
                continue;
            };
            let one_str = parameters.ends_with(": &str") && !parameters.contains(',');
            let returns = returns.trim();
            let to_string_error = returns.starts_with("-> ")
                && returns.contains("Result<")
                && returns.ends_with(", String>");
            if !(one_str && to_string_error) {
                continue;
            }
            let line_start = text[..start].rfind('\n').map_or(0, |n| n + 1);
            let close = closing_brace(&text, open);
            parsers.push(Parser {
                file: file.strip_prefix(src).unwrap().display().to_string(),
                name: name.trim().to_string(),
                free: !text[line_start..start].starts_with(' '),
                body: text[open..close]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
            });
        }
    }
    parsers
}

/// Where the block opened at `open` closes.
fn closing_brace(text: &str, open: usize) -> usize {
    let mut depth = 0;
    for (at, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + at + 1;
                }
            }
            _ => {}
        }
    }
    text.len()
}

/// Value parsers written outside `values.rs` as free functions, and any
/// two parsers anywhere with the same body.
fn parsers_defined_twice(src: &Path) -> Vec<String> {
    let parsers = value_parsers(src);
    let mut found = Vec::new();
    for parser in &parsers {
        if parser.free && parser.file != "values.rs" {
            found.push(format!(
                "{}: value parser {} outside values.rs",
                parser.file, parser.name
            ));
        }
    }
    for (i, a) in parsers.iter().enumerate() {
        for b in &parsers[i + 1..] {
            if a.body == b.body {
                found.push(format!(
                    "{}: {} and {}: {} are the same parser",
                    a.file, a.name, b.file, b.name
                ));
            }
        }
    }
    found
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn write(root: &Path, file: &str, text: &str) {
    let path = root.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn no_command_imports_another() {
    let found = cross_command_imports(&src());
    assert!(
        found.is_empty(),
        "commands that import each other:\n{}",
        found.join("\n")
    );
}

#[test]
fn each_value_parser_is_defined_once_in_values() {
    let parsers = value_parsers(&src());
    let in_values = parsers.iter().filter(|p| p.file == "values.rs").count();
    eprintln!("{} value parsers, {in_values} in values.rs", parsers.len());
    assert!(in_values >= 10, "the scan finds the parsers");
    let found = parsers_defined_twice(&src());
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn planted_cross_command_imports_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    write(
        src,
        "main.rs",
        "mod commands;\nmod output;\npub struct Cli;\n",
    );
    write(src, "output.rs", "pub fn print_stdout() {}\n");
    write(
        src,
        "commands/mod.rs",
        "pub mod copy;\npub mod get;\npub mod put;\n",
    );
    write(
        src,
        "commands/put.rs",
        "use crate::output::print_stdout;\npub fn read_token() {}\n",
    );
    write(
        src,
        "commands/copy/mod.rs",
        "mod tree;\nuse self::tree::x;\n",
    );
    write(
        src,
        "commands/copy/tree.rs",
        "use super::super::get::{a, b};\n",
    );
    write(
        src,
        "commands/get.rs",
        "use crate::commands::put::read_token;\n/// As [`crate::Cli`].\nfn f() { super::put::g() }\n",
    );
    let found = cross_command_imports(src);
    assert_eq!(
        found,
        [
            "commands/copy/tree.rs names commands::get::a",
            "commands/copy/tree.rs names commands::get::b",
            "commands/get.rs names commands::put::read_token",
            "commands/get.rs names Cli",
            "commands/get.rs names commands::put::g",
        ],
        "{found:#?}"
    );
}

#[test]
fn a_planted_parser_written_twice_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let size = "(text: &str) -> Result<u64, String> {\n    flexio::parse_size(text).map_err(|e| e.to_string())\n}\n";
    write(src, "values.rs", &format!("pub(crate) fn size{size}"));
    write(src, "commands/get.rs", &format!("fn size{size}"));
    write(
        src,
        "commands/bench/mod.rs",
        &format!(
            "impl Arg {{\n    fn parse{}}}\n",
            size.replace('\n', "\n    ")
        ),
    );
    write(
        src,
        "commands/plan.rs",
        "fn helper(text: &str) -> usize { text.len() }\n",
    );
    let found = parsers_defined_twice(src);
    assert!(
        found
            .iter()
            .any(|f| f == "commands/get.rs: value parser size outside values.rs"),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.contains("commands/bench/mod.rs: parse and values.rs: size")),
        "{found:#?}"
    );
    assert_eq!(found.len(), 4, "{found:#?}");
}
