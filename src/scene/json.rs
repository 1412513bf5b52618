//! JSON reading shared by both scene formats: `//` comment lines, syntax errors that name the
//! line and key (with a word for NaN and infinity, which JSON lacks), and typed reads whose
//! errors name the JSON path (`serde_path_to_error`) with a fix for each kind of mistake.
//!
//! Layer 4 (scene): imports error only.

use crate::error::InputError;
use std::path::Path;

/// Reads at most `cap` bytes of `path`; a longer file (or an endless one: `/dev/zero`) is an
/// error of kind `FileTooLarge` (see [`too_large`]) after reading only `cap + 1` bytes.
pub fn read_capped(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        let size = std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map_or("it does not end".to_string(), |m| {
                format!("{:.1} MB", m.len() as f64 / (1u64 << 20) as f64)
            });
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("larger than {cap} bytes: {size}"),
        ));
    }
    Ok(bytes)
}

/// The size description of [`read_capped`]'s too-large error.
pub fn too_large(e: &std::io::Error) -> Option<String> {
    (e.kind() == std::io::ErrorKind::FileTooLarge).then(|| {
        let m = e.to_string();
        m.split_once(": ").map_or(m.clone(), |(_, s)| s.to_string())
    })
}

/// Blanks lines whose first non-blank characters are `//` (the tutorial's reader skips them),
/// keeping line numbers.
pub fn strip_comment_lines(text: &str) -> String {
    // A UTF-8 byte order mark (some Windows editors write one) is not JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("//") {
            if line.ends_with('\n') {
                out.push('\n');
            }
        } else {
            out.push_str(line);
        }
    }
    out
}

/// A JSON syntax error, with a special word for `NaN` and `Infinity`, which JSON lacks.
pub fn json_syntax_error(file: &Path, text: &str, e: serde_json::Error) -> InputError {
    let (line, col) = (e.line(), e.column());
    let line_text = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
    let lower = line_text.to_ascii_lowercase();
    let has_word = |w: &str| {
        lower.match_indices(w).any(|(i, _)| {
            let before = lower[..i].chars().last();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '"')
        })
    };
    if has_word("nan") || has_word("inf") {
        let key = last_key_before(text, line, col);
        return InputError {
            file: file.to_path_buf(),
            at: Some(match key {
                Some(k) => format!("line {line}, key `{k}`"),
                None => format!("line {line}"),
            }),
            problem: format!(
                "`{}` is not a number: JSON has no NaN or infinity, and surge needs every number finite",
                crate::error::quote(line_text.trim())
            ),
            fix: "write a finite number".into(),
        };
    }
    let msg = e.to_string();
    let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
    if msg.contains("recursion limit") {
        return InputError {
            file: file.to_path_buf(),
            at: Some(format!("line {line}, column {col}")),
            problem: "the JSON is nested more than 128 levels deep; a scene is nested at most 4"
                .into(),
            fix: "give a scene file: one object of sections (README.md's scene reference)".into(),
        };
    }
    if msg.contains("out of range") {
        let key = last_key_before(text, line, col);
        return InputError {
            file: file.to_path_buf(),
            at: Some(match key {
                Some(k) => format!("line {line}, column {col}, key `{k}`"),
                None => format!("line {line}, column {col}"),
            }),
            problem: "a number is out of range: beyond 1.8e308 it would be infinite, and surge needs every number finite".into(),
            fix: "write a finite number".into(),
        };
    }
    InputError {
        file: file.to_path_buf(),
        at: Some(format!("line {line}, column {col}")),
        problem: format!("JSON syntax error: {msg}"),
        fix: "fix the JSON there (a missing comma, quote or bracket is the usual cause; `//` comments must be on their own line)".into(),
    }
}

/// The last `"key":` before 1-based `line`, `col` (the key a value at that position belongs to).
fn last_key_before(text: &str, line: usize, col: usize) -> Option<String> {
    let offset: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>()
        + col.saturating_sub(1);
    let mut head = text.get(..offset.min(text.len()))?;
    while let Some(colon) = head.rfind(':') {
        let before = head[..colon].trim_end();
        if let Some(inner) = before.strip_suffix('"')
            && let Some(open) = inner.rfind('"')
        {
            return Some(inner[open + 1..].to_string());
        }
        head = &head[..colon];
    }
    None
}

/// Deserialises `text` as `T`, turning errors into [`InputError`]s naming the JSON path.
pub fn typed<T: serde::de::DeserializeOwned>(text: &str, file: &Path) -> Result<T, InputError> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        serde_error(file, &path, e.into_inner().to_string())
    })
}

/// A deserialisation error `msg` at JSON path `path`, with the fix for its kind.
pub fn serde_error(file: &Path, path: &str, msg: String) -> InputError {
    let msg = crate::error::shorten_quoted(&crate::error::plain_types(&msg));
    {
        let fix = if msg.starts_with("unknown field") {
            "remove the key or correct its spelling (the valid keys are listed above)"
        } else if msg.starts_with("missing field") {
            "add the field; README.md's scene reference lists every field with its units"
        } else if msg.starts_with("invalid type") {
            "give the value the type named above (numbers without quotes, vectors as [x, y, z])"
        } else if msg.starts_with("unknown variant") {
            "use one of the values listed above"
        } else if msg.starts_with("invalid length") {
            "vectors have exactly three entries: [x, y, z]"
        } else if msg.contains("out of range") {
            "write a finite number in range (JSON numbers beyond 1.8e308 would be infinite)"
        } else if msg.starts_with("invalid value") {
            "give a value in the range named above"
        } else {
            "see README.md's scene reference"
        };
        InputError::field(file, path, msg, fix)
    }
}
