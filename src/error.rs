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
            at: (!field.is_empty()).then(|| format!("field `{field}`")),
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
        self.at = (!field.is_empty()).then(|| format!("field `{field}`"));
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

