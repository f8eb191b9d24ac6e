//! Reading the module paths a Rust file names, without a Rust parser: a
//! small lexer that drops string literals and plain comments but keeps
//! doc comments (an intra-doc link is an edge rustdoc follows), and a
//! reader of `crate::`, `super::` and `self::` paths, use groups included,
//! each resolved against the module it is written in (inline `mod NAME {`
//! blocks included).

use std::collections::BTreeSet;

/// One token of the source, as far as paths are concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Other,
    /// The end of a line (paths in doc comments do not run past it).
    Line,
}

/// The tokens of `source`.
fn lex(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let next = chars.get(at + 1).copied();
        if c == '/' && next == Some('/') {
            let doc = matches!(chars.get(at + 2), Some('/') | Some('!'))
                && chars.get(at + 3) != Some(&'/');
            let end = chars[at..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(chars.len(), |n| at + n);
            if doc {
                let text: String = chars[at + 3..end].iter().collect();
                tokens.extend(lex_text(&text));
            }
            tokens.push(Token::Line);
            at = end;
        } else if c == '/' && next == Some('*') {
            at = skip_block_comment(&chars, at);
        } else if c == '"' {
            at = skip_string(&chars, at + 1);
        } else if (c == 'r' || c == 'b') && starts_raw_or_byte_string(&chars, at) {
            at = skip_prefixed_string(&chars, at);
        } else if c == '\'' {
            at = skip_char_or_lifetime(&chars, at);
            tokens.push(Token::Other);
        } else {
            at = lex_one(&chars, at, &mut tokens);
        }
    }
    tokens
}

/// The tokens of a doc comment's text: identifiers and path punctuation
/// only (quotes and apostrophes there are prose).
fn lex_text(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        at = lex_one(&chars, at, &mut tokens);
    }
    tokens
}

/// Lexes the identifier or punctuation at `at`; returns where the next
/// token starts.
fn lex_one(chars: &[char], at: usize, tokens: &mut Vec<Token>) -> usize {
    let c = chars[at];
    if c.is_alphabetic() || c == '_' {
        let end = chars[at..]
            .iter()
            .position(|c| !(c.is_alphanumeric() || *c == '_'))
            .map_or(chars.len(), |n| at + n);
        tokens.push(Token::Ident(chars[at..end].iter().collect()));
        return end;
    }
    let token = match c {
        ':' if chars.get(at + 1) == Some(&':') => {
            tokens.push(Token::PathSep);
            return at + 2;
        }
        '{' => Token::Open,
        '}' => Token::Close,
        ',' => Token::Comma,
        c if c.is_whitespace() => return at + 1,
        _ => Token::Other,
    };
    tokens.push(token);
    at + 1
}

fn skip_block_comment(chars: &[char], mut at: usize) -> usize {
    let mut depth = 0;
    while at < chars.len() {
        if chars[at] == '/' && chars.get(at + 1) == Some(&'*') {
            depth += 1;
            at += 2;
        } else if chars[at] == '*' && chars.get(at + 1) == Some(&'/') {
            depth -= 1;
            at += 2;
            if depth == 0 {
                return at;
            }
        } else {
            at += 1;
        }
    }
    at
}

/// Past the closing quote of a string whose body starts at `at`.
fn skip_string(chars: &[char], mut at: usize) -> usize {
    while at < chars.len() {
        match chars[at] {
            '\\' => at += 2,
            '"' => return at + 1,
            _ => at += 1,
        }
    }
    at
}

/// Whether `r"`, `r#"`, `b"`, `br"` or `br#"` starts at `at` (and not an
/// identifier that merely ends in r or b).
fn starts_raw_or_byte_string(chars: &[char], at: usize) -> bool {
    if at > 0 && (chars[at - 1].is_alphanumeric() || chars[at - 1] == '_') {
        return false;
    }
    let mut n = at;
    if chars[n] == 'b' {
        n += 1;
    }
    if chars.get(n) == Some(&'r') {
        n += 1;
        while chars.get(n) == Some(&'#') {
            n += 1;
        }
    }
    n > at && chars.get(n) == Some(&'"')
}

fn skip_prefixed_string(chars: &[char], mut at: usize) -> usize {
    if chars[at] == 'b' {
        at += 1;
    }
    if chars[at] != 'r' {
        return skip_string(chars, at + 1);
    }
    at += 1;
    let mut hashes = 0;
    while chars[at] == '#' {
        hashes += 1;
        at += 1;
    }
    at += 1;
    while at < chars.len() {
        if chars[at] == '"' && (1..=hashes).all(|n| chars.get(at + n) == Some(&'#')) {
            return at + 1 + hashes;
        }
        at += 1;
    }
    at
}

/// Past a char literal (`'a'`, `'\n'`) or the apostrophe of a lifetime.
fn skip_char_or_lifetime(chars: &[char], at: usize) -> usize {
    if chars.get(at + 1) == Some(&'\\') {
        let close = chars[at + 2..].iter().position(|&c| c == '\'');
        return close.map_or(chars.len(), |n| at + 2 + n + 1);
    }
    if chars.get(at + 2) == Some(&'\'') {
        return at + 3;
    }
    at + 1
}

/// The first segment of every path in `source` that starts with an
/// identifier other than `crate`, `super` and `self` (`other_crate` in
/// `other_crate::module`): the crates, and the modules, it may name.
pub fn crate_names(source: &str) -> BTreeSet<String> {
    let tokens = lex(source);
    tokens
        .windows(2)
        .enumerate()
        .filter_map(|(at, pair)| match pair {
            [Token::Ident(word), Token::PathSep] if at == 0 || tokens[at - 1] != Token::PathSep => {
                Some(word.clone())
            }
            _ => None,
        })
        .collect()
}

/// A module path named in a file: where it is written (the module, inline
/// modules included) and the absolute path it names (not yet cut to a
/// module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The module the path is written in.
    pub from: Vec<String>,
    /// The absolute path named, from the crate root.
    pub path: Vec<String>,
}

/// The inline modules (`mod NAME { ... }`) of a file whose module is
/// `module`, and the crate-relative paths the file names.
pub fn read(source: &str, module: &[String]) -> (Vec<Vec<String>>, Vec<Named>) {
    let tokens = lex(source);
    let mut inline: Vec<Vec<String>> = Vec::new();
    let mut named = Vec::new();
    // The current module, and the brace depth at which each inline module
    // opened.
    let mut current: Vec<String> = module.to_vec();
    let mut opened: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut at = 0;
    while at < tokens.len() {
        match &tokens[at] {
            Token::Ident(word) if word == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Open)) =
                    (tokens.get(at + 1), tokens.get(at + 2))
                {
                    current.push(name.clone());
                    inline.push(current.clone());
                    depth += 1;
                    opened.push(depth);
                    at += 3;
                    continue;
                }
            }
            Token::Ident(word)
                if matches!(word.as_str(), "crate" | "super" | "self")
                    && (at == 0 || tokens[at - 1] != Token::PathSep) =>
            {
                let (paths, next) = path_tree(&tokens, at, Vec::new());
                for relative in paths {
                    if let Some(path) = resolve(&current, &relative) {
                        named.push(Named {
                            from: current.clone(),
                            path,
                        });
                    }
                }
                at = next.max(at + 1);
                continue;
            }
            Token::Open => depth += 1,
            Token::Close => {
                if opened.last() == Some(&depth) {
                    opened.pop();
                    current.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        at += 1;
    }
    (inline, named)
}

/// The paths of the use tree starting at `at` (`a::b`, `a::{b, c::{d}}`),
/// each after `prefix`; and where the tree ends.
fn path_tree(
    tokens: &[Token],
    mut at: usize,
    mut prefix: Vec<String>,
) -> (Vec<Vec<String>>, usize) {
    let mut paths = Vec::new();
    loop {
        match tokens.get(at) {
            Some(Token::Ident(word)) => {
                if word != "self" || prefix.is_empty() {
                    prefix.push(word.clone());
                }
                at += 1;
            }
            Some(Token::Open) => {
                at += 1;
                loop {
                    let (inner, next) = path_tree(tokens, at, prefix.clone());
                    paths.extend(inner);
                    at = next;
                    match tokens.get(at) {
                        Some(Token::Comma) | Some(Token::Line) => at += 1,
                        Some(Token::Close) => return (paths, at + 1),
                        _ => return (paths, at),
                    }
                    if tokens.get(at) == Some(&Token::Close) {
                        return (paths, at + 1);
                    }
                }
            }
            _ => break,
        }
        if tokens.get(at) == Some(&Token::PathSep) {
            at += 1;
        } else {
            break;
        }
    }
    if !prefix.is_empty() {
        paths.push(prefix);
    }
    (paths, at)
}

/// The absolute path that `relative` (starting with `crate`, `super` or
/// `self`) names when written in module `current`; `None` past the root.
fn resolve(current: &[String], relative: &[String]) -> Option<Vec<String>> {
    let mut segments = relative.iter().peekable();
    let mut path: Vec<String> = match segments.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segments.next();
            Vec::new()
        }
        Some("self") => {
            segments.next();
            current.to_vec()
        }
        _ => current.to_vec(),
    };
    while segments.peek().map(|s| s.as_str()) == Some("super") {
        segments.next();
        path.pop()?;
    }
    path.extend(segments.cloned());
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(source: &str, module: &[&str]) -> Vec<String> {
        let module: Vec<String> = module.iter().map(|s| s.to_string()).collect();
        read(source, &module)
            .1
            .into_iter()
            .map(|n| format!("{}: {}", n.from.join("::"), n.path.join("::")))
            .collect()
    }

    #[test]
    fn super_is_resolved_from_the_module_it_is_written_in() {
        assert_eq!(
            names("use super::super::b::X;", &["seeds", "a", "x"]),
            ["seeds::a::x: seeds::b::X"]
        );
        assert_eq!(
            names("mod tests { use super::Y; }", &["a"]),
            ["a::tests: a::Y"]
        );
        assert!(names("use super::super::X;", &["a"]).is_empty());
    }

    #[test]
    fn use_groups_strings_and_plain_comments() {
        assert_eq!(
            names("use crate::{a::{self, B}, c};", &["m"]),
            ["m: a", "m: a::B", "m: c"]
        );
        assert!(names("let s = \"crate::a\"; // crate::b\n", &["m"]).is_empty());
        assert!(names("let s = r#\"crate::a\"#; /* crate::b */", &["m"]).is_empty());
        assert_eq!(
            names("/// See [`crate::a::X`]. Don't.\n", &["m"]),
            ["m: a::X"]
        );
        assert_eq!(
            names("fn f<'a>(c: char) { let q = '\"'; crate::z::f() }", &[]),
            [": z::f"]
        );
    }
}
