//! The one error type for bad input: [`InputError`], with the file, the place in it (a JSON
//! path or a line), the problem and the fix as separate fields.
//!
//! Layer 0: imports nothing of surge. Every stage's setting errors convert into it (the stage
//! knows the problem and the fix; the scene reader adds the file and the JSON path), and the
//! command line prints its fields (`error: FILE: WHERE: PROBLEM`, then `  fix: FIX` last) without
//! parsing any text back. Problems outside input files (a busy output folder, too little
//! memory) use [`InputError::plain`], which has no file.

use std::path::{Path, PathBuf};

/// A bad input: which file, where in it, what is wrong, and how to fix it.
///
/// Displayed as `FILE: field `a.b`: PROBLEM` then `  fix: FIX` on a second line.
#[derive(Debug, Clone, PartialEq)]
pub struct InputError {
    /// The file at fault.
    pub file: PathBuf,
    /// Where in it: `field `domain.cell_size`` or `line 12`; none for the whole file.
    pub at: Option<String>,
    /// What is wrong.
    pub problem: String,
    /// What to do about it.
    pub fix: String,
}

impl InputError {
    /// The first line: `FILE: WHERE: PROBLEM` (the file and the place only where known).
    pub fn headline(&self) -> String {
        let mut s = String::new();
        if !self.file.as_os_str().is_empty() {
            s.push_str(&format!("{}: ", self.file.display()));
        }
        if let Some(at) = &self.at {
            s.push_str(&format!("{at}: "));
        }
        s.push_str(&self.problem);
        s
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}\n  fix: {}", self.headline(), self.fix)
    }
}

impl std::error::Error for InputError {}

impl InputError {
    /// An error about the field at JSON path `field` (e.g. `domain.cell_size`, `sources[1]`).
    pub fn field(
        file: &Path,
        field: &str,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            file: file.to_path_buf(),
            at: (!field.is_empty()).then(|| format!("field `{}`", quote(field))),
            problem: problem.into(),
            fix: fix.into(),
        }
    }
    /// An error about line `line` (1-based) of a text file.
    pub fn line(
        file: &Path,
        line: usize,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            file: file.to_path_buf(),
            at: Some(format!("line {line}")),
            problem: problem.into(),
            fix: fix.into(),
        }
    }
    /// A problem that belongs to no input file (an output folder, the machine): no file, no
    /// place, only the problem and its fix.
    pub fn plain(problem: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            file: PathBuf::new(),
            at: None,
            problem: problem.into(),
            fix: fix.into(),
        }
    }
    /// The same problem, said to be in `file` at JSON path `field` (a stage's setting error
    /// placed in the scene file by the scene reader).
    pub fn placed(mut self, file: &Path, field: &str) -> Self {
        self.file = file.to_path_buf();
        self.at = (!field.is_empty()).then(|| format!("field `{}`", quote(field)));
        self
    }
    /// The same error, in `file` (a stage's check names the field; the scene reader the file).
    pub fn in_file(mut self, file: &Path) -> Self {
        self.file = file.to_path_buf();
        self
    }
    /// An error about the whole file.
    pub fn file(file: &Path, problem: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            at: None,
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

/// A number as a person writes it: plain for everyday magnitudes, `1e-30` style beyond them
/// (Rust's `{}` would print thirty zeros).
pub fn show(x: f64) -> String {
    let a = x.abs();
    if x != 0.0 && a.is_finite() && !(1e-4..1e7).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// A problem outside any input file as an error, with its fix as a separate field
/// ([`InputError::plain`]).
pub fn fail(problem: impl std::fmt::Display, fix: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(InputError::plain(problem.to_string(), fix.to_string()))
}

/// Field checks shared by every settings type. Each returns an error naming the field (JSON
/// path) with no file; the scene reader places it in its file ([`InputError::in_file`]).
pub mod check {
    use super::{InputError, show};
    use std::path::Path;

    /// An error about the field at JSON path `field`, file still unknown.
    pub fn err(field: &str, problem: impl Into<String>, fix: impl Into<String>) -> InputError {
        InputError::field(Path::new(""), field, problem, fix)
    }

    /// Every component finite.
    pub fn finite3(field: &str, v: &[f64; 3], fix: &str) -> Result<(), InputError> {
        for (a, x) in v.iter().enumerate() {
            if !x.is_finite() {
                return Err(err(
                    &format!("{field}[{a}]"),
                    format!("not a finite number: {x}"),
                    fix,
                ));
            }
        }
        Ok(())
    }

    /// A finite number > 0.
    pub fn positive(field: &str, v: f64, fix: &str) -> Result<(), InputError> {
        if v.is_finite() && v > 0.0 {
            Ok(())
        } else {
            Err(err(
                field,
                format!("must be a finite number > 0, got {}", show(v)),
                fix,
            ))
        }
    }

    /// Every component at most `limit` in size (`unit` names it in the message).
    pub fn bounded(
        field: &str,
        v: &[f64; 3],
        limit: f64,
        unit: &str,
        fix: &str,
    ) -> Result<(), InputError> {
        match v.iter().position(|x| x.abs() > limit) {
            Some(a) => Err(err(
                &format!("{field}[{a}]"),
                format!(
                    "{} {unit} is beyond what a liquid simulation can take (at most {} {unit} per component)",
                    show(v[a]),
                    show(limit)
                ),
                fix,
            )),
            None => Ok(()),
        }
    }
}

/// At most this many characters of an offending input line or value are quoted in a message.
pub const MAX_QUOTE_CHARS: usize = 80;

/// `text` for quoting in a message: at most [`MAX_QUOTE_CHARS`] characters (cut at a character
/// boundary, then `...`), with control characters (a NUL byte, escape codes)
/// shown escaped, so that a hostile line can neither flood the terminal nor exhaust memory.
pub fn quote(text: &str) -> String {
    let mut out = String::new();
    let mut shown = 0;
    for c in text.chars() {
        if shown >= MAX_QUOTE_CHARS {
            out.push_str("...");
            break;
        }
        if c.is_control() {
            let e: String = c.escape_default().collect();
            shown += e.chars().count();
            out.push_str(&e);
        } else {
            shown += 1;
            out.push(c);
        }
    }
    out
}

/// `msg` with every backquoted part cut by [`quote`] (a deserialiser quotes keys and values
/// whole, however long).
pub fn shorten_quoted(msg: &str) -> String {
    msg.split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                quote(part)
            } else {
                part.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("`")
}

/// Plain words for Rust's type names in a deserialiser's message ("expected f64" becomes
/// "expected a number", "u32" "a whole number from 0 to 4294967295").
pub fn plain_types(msg: &str) -> String {
    let mut out = msg.to_string();
    for (ty, words) in [
        ("f64", "a number".to_string()),
        ("f32", "a number".to_string()),
        ("u8", format!("a whole number from 0 to {}", u8::MAX)),
        ("u16", format!("a whole number from 0 to {}", u16::MAX)),
        ("u32", format!("a whole number from 0 to {}", u32::MAX)),
        ("u64", format!("a whole number from 0 to {}", u64::MAX)),
        ("usize", format!("a whole number from 0 to {}", usize::MAX)),
        ("i32", "a whole number".to_string()),
        ("i64", "a whole number".to_string()),
    ] {
        let mut res = String::new();
        let mut rest = out.as_str();
        while let Some(i) = rest.find(ty) {
            let before = rest[..i].chars().last();
            let after = rest[i + ty.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            res.push_str(&rest[..i]);
            if word(before) || word(after) {
                res.push_str(ty);
            } else {
                res.push_str(&words);
            }
            rest = &rest[i + ty.len()..];
        }
        res.push_str(rest);
        out = res;
    }
    out
}

/// `n` and the noun, singular or plural: `1 entry`, `2 entries`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_bounded_and_escaped() {
        let long = "x".repeat(5000);
        let q = quote(&long);
        assert_eq!(q, format!("{}...", "x".repeat(80)));
        assert!(quote(&"\0".repeat(1000)).len() < 100);
        assert_eq!(quote("a\0b"), "a\\u{0}b");
        assert_eq!(quote("plain"), "plain");
    }

    #[test]
    fn type_names_become_words() {
        assert_eq!(
            plain_types("invalid type: string \"a\", expected f64"),
            "invalid type: string \"a\", expected a number"
        );
        assert_eq!(
            plain_types("invalid value: integer `-1`, expected u32"),
            "invalid value: integer `-1`, expected a whole number from 0 to 4294967295"
        );
        assert_eq!(plain_types("field u32x"), "field u32x");
        assert_eq!(count(1, "entry", "entries"), "1 entry");
        assert_eq!(count(3, "entry", "entries"), "3 entries");
    }
}
