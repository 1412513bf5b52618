//! Helpers of the bad-input tests (`tests/inputs*.rs`): a previous run's folder to leave
//! untouched, and the shared check of an error's exit status, message shape and side effects.

use super::{snapshot, surge};
use std::path::{Path, PathBuf};

/// A folder that looks like a previous run's output.
pub fn previous_run(dir: &Path) -> PathBuf {
    let out = dir.join("out");
    std::fs::create_dir_all(out.join("particles")).unwrap();
    std::fs::write(out.join("scene.json"), "{\"previous\": true}\n").unwrap();
    std::fs::write(out.join("stats.jsonl"), "{\"frame\":0}\n").unwrap();
    std::fs::write(out.join("particles/frame_0000.bin"), b"old frame").unwrap();
    std::fs::write(out.join("fluid.000.part"), "1\n0 0 0 0 0 0\n").unwrap();
    out
}

pub const DOMAIN: &str =
    r#""domain": {"lower": [0, 0, 0], "cell_size": 0.1, "resolution": [6, 6, 6]}"#;
pub const BOX: &str = r#"{"type": "box", "min": [0.1, 0.1, 0.1], "max": [0.3, 0.3, 0.3]}"#;

/// Runs `surge run FILE -o out --overwrite` on a scene `file_name` with `text` (plus `extra`
/// files) and checks failure, message fragments and the untouched output folder.
pub fn expect_failure(
    file_name: &str,
    text: &str,
    extra: &[(&str, &str)],
    wanted: &[&str],
) -> String {
    expect_failure_bytes(file_name, text.as_bytes(), extra, wanted)
}

/// [`expect_failure`] for a scene given as raw bytes. Besides the `wanted` fragments, every
/// message must have the shape the README promises: exit status 1, no panic, a first line
/// `error: FILE: ...` naming the file at fault (the scene or one of the `extra` files) and what
/// in it (a backquoted field, a line number, or the file's own problem), then a `fix:` line with
/// a concrete instruction; and the existing output folder must be byte-identical afterwards,
/// although `--overwrite` was given.
pub fn expect_failure_bytes(
    file_name: &str,
    text: &[u8],
    extra: &[(&str, &str)],
    wanted: &[&str],
) -> String {
    let dir = tempfile::tempdir().unwrap();
    if !text.is_empty() {
        std::fs::write(dir.path().join(file_name), text).unwrap();
    }
    for (name, content) in extra {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let out = previous_run(dir.path());
    let before = snapshot(&out);
    let o = surge(
        dir.path(),
        &["run", file_name, "-o", "out", "--overwrite", "-q"],
    );
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "exit code; stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let first = err.lines().next().unwrap_or("");
    let files: Vec<&str> = std::iter::once(file_name)
        .chain(extra.iter().map(|(n, _)| *n))
        .collect();
    assert!(
        first.starts_with("error: ") && files.iter().any(|f| first.contains(f)),
        "the first line names none of the files {files:?}: {err}"
    );
    // What in the file: a backquoted field (`domain.cell_size`), a line (`line 4`), or one of
    // the problems of the file as a whole.
    let line_no = first
        .match_indices("line ")
        .any(|(i, _)| first[i + 5..].starts_with(|c: char| c.is_ascii_digit()));
    let whole_file = [
        "the file is empty",
        "UTF-16",
        "not UTF-8",
        "cannot read",
        "GB of memory",
    ];
    assert!(
        first.contains('`') || line_no || whole_file.iter().any(|w| first.contains(w)),
        "the first line names no field or line: {err}"
    );
    let fix = err
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("fix: "))
        .unwrap_or_else(|| panic!("no `fix:` line in: {err}"));
    assert!(
        fix.split_whitespace().count() >= 3,
        "fix too short to act on: {err}"
    );
    for w in wanted {
        assert!(err.contains(w), "`{w}` missing from: {err}");
    }
    assert_eq!(snapshot(&out), before, "the output folder was touched");
    err
}

pub fn native(body: &str) -> String {
    format!("{{{DOMAIN}, {body}}}")
}
