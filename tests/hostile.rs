//! Hostile input (issue 16): endless and huge files, deep nesting, NUL bytes, long names and
//! absurd numbers. Every case must end within a few seconds with exit status 1, a clear bounded
//! message (`error: FILE ...` then a `fix:` line, no panic, no abort), and a peak memory (the
//! child's `ru_maxrss`, read with `wait4`) under 200 MB. The figures are printed per case
//! (`cargo test --release --test hostile -- --nocapture`).

use std::path::Path;

mod common;
use common::measured::{BOX, MAX_RSS_KB, native, run_measured};

/// Runs `surge run SCENE -o out -q` in `dir` and checks the hostile-input promises; `wanted`
/// fragments must appear in the message. Returns the message.
fn expect_clean_refusal(case: &str, dir: &Path, scene: &str, wanted: &[&str]) -> String {
    let o = run_measured(dir, &["run", scene, "-o", "out", "-q"], &[]);
    let err = &o.stderr;
    eprintln!(
        "{case}: exit {:?}, {:.2} s, peak RSS {:.1} MB, {} bytes of message",
        o.code,
        o.seconds,
        o.max_rss_kb as f64 / 1024.0,
        err.len()
    );
    assert_eq!(
        o.signal, None,
        "{case}: killed by signal (an abort?): {err}"
    );
    assert_eq!(o.code, Some(1), "{case}: exit status; stderr: {err}");
    assert!(!err.contains("panicked"), "{case}: {err}");
    assert!(
        o.max_rss_kb < MAX_RSS_KB,
        "{case}: peak RSS {} kB is over {MAX_RSS_KB} kB",
        o.max_rss_kb
    );
    assert!(err.starts_with("error: "), "{case}: {err}");
    assert!(
        err.len() < 1500,
        "{case}: message of {} bytes: {err}",
        err.len()
    );
    assert!(
        err.lines().all(|l| l.chars().count() < 500),
        "{case}: a message line is too long: {err}"
    );
    assert!(!err.contains('\0'), "{case}: a NUL byte was printed");
    let fix = err
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("fix: "))
        .unwrap_or_else(|| panic!("{case}: no `fix:` line: {err}"));
    assert!(fix.split_whitespace().count() >= 3, "{case}: {err}");
    for w in wanted {
        assert!(err.contains(w), "{case}: `{w}` missing from: {err}");
    }
    assert!(
        !dir.join("out").exists(),
        "{case}: the output folder was created for a refused scene"
    );
    err.clone()
}

fn tutorial(particles: &str, extra: &str) -> String {
    format!(
        r#"{{"dt": 0.01, "total_time": 0.1, "res": [6, 6, 6], "h": 0.1, "lc": [0, 0, 0], "particles": "{particles}"{extra}}}"#
    )
}

#[test]
fn endless_and_huge_scene_files() {
    let dir = tempfile::tempdir().unwrap();
    for dev in ["/dev/zero", "/dev/urandom"] {
        if Path::new(dev).exists() {
            expect_clean_refusal(dev, dir.path(), dev, &[dev, "4 MB", "does not end"]);
        } else {
            common::skip("endless_and_huge_scene_files", &format!("{dev} is absent"));
        }
    }
    // A 2 GB sparse file (all zero bytes, takes no disk space).
    let sparse = dir.path().join("big.json");
    let f = std::fs::File::create(&sparse).unwrap();
    f.set_len(2 << 30).unwrap();
    drop(f);
    expect_clean_refusal(
        "2 GB sparse scene",
        dir.path(),
        "big.json",
        &["big.json", "2048.0 MB"],
    );
    std::fs::remove_file(&sparse).unwrap();
    // Just over the cap: a JSON object padded with spaces.
    let mut text = vec![b' '; (4 << 20) + 1];
    text[0] = b'{';
    *text.last_mut().unwrap() = b'}';
    std::fs::write(dir.path().join("padded.json"), &text).unwrap();
    expect_clean_refusal("4 MB + 1 byte scene", dir.path(), "padded.json", &["4 MB"]);
}

#[test]
fn endless_and_huge_particle_files() {
    let dir = tempfile::tempdir().unwrap();
    for dev in ["/dev/zero", "/dev/urandom"] {
        if Path::new(dev).exists() {
            std::fs::write(dir.path().join("fluid.json"), tutorial(dev, "")).unwrap();
            expect_clean_refusal(
                &format!("particles {dev}"),
                dir.path(),
                "fluid.json",
                &[dev, "`particles`", "not a regular file"],
            );
        } else {
            common::skip(
                "endless_and_huge_particle_files",
                &format!("{dev} is absent"),
            );
        }
    }
    let sparse = dir.path().join("big.in");
    let f = std::fs::File::create(&sparse).unwrap();
    f.set_len(2 << 30).unwrap();
    drop(f);
    std::fs::write(
        dir.path().join("scene.json"),
        native(r#""sources": [{"type": "particle_file", "path": "big.in"}]"#),
    )
    .unwrap();
    // 2 GB hold at least 21 million particle lines: a machine with under ~6 GB of memory
    // refuses it by its size; others read its first line, which is too long.
    let err = expect_clean_refusal(
        "2 GB sparse particle file",
        dir.path(),
        "scene.json",
        &["big.in"],
    );
    if !err.contains("refused without reading it") {
        for w in ["line 1", "longer than 1024 bytes"] {
            assert!(err.contains(w), "`{w}` missing from: {err}");
        }
        assert!(err.contains("\\u{0}"), "NUL bytes are shown escaped: {err}");
    } else {
        // Refused by its size: the message gives the size and the count it implies at the
        // estimate of 100 bytes a particle line (2^31 / 100).
        let lines = format!("at least {} particles", (2u64 << 30) / 100);
        for w in ["2.0 GB", lines.as_str()] {
            assert!(err.contains(w), "`{w}` missing from: {err}");
        }
    }
    std::fs::remove_file(&sparse).unwrap();
    // 64 GB: at least 687 million particle lines, more than any machine's budget (at most
    // 2^28 particles): refused from the file's size alone, before a byte is read.
    let f = std::fs::File::create(&sparse).unwrap();
    if f.set_len(64 << 30).is_ok() {
        drop(f);
        // At the estimate of 100 bytes a particle line: 2^36 / 100 particles.
        let lines = format!("at least {} particles", (64u64 << 30) / 100);
        let err = expect_clean_refusal(
            "64 GB sparse particle file",
            dir.path(),
            "scene.json",
            &["big.in", "64.0 GB", &lines, "refused without reading it"],
        );
        assert!(!err.contains("line 1"), "read before refusing: {err}");
    } else {
        common::skip(
            "hostile 64 GB sparse file",
            "the filesystem refuses a 64 GB sparse file",
        );
    }
    std::fs::remove_file(&sparse).unwrap();
    // A count line far beyond memory: refused from that line, before reading any particle.
    let mut text = String::from("1000000000000\n");
    for _ in 0..1000 {
        text.push_str("0.2 0.2 0.2 0 0 0\n");
    }
    std::fs::write(dir.path().join("many.in"), text).unwrap();
    std::fs::write(dir.path().join("fluid.json"), tutorial("many.in", "")).unwrap();
    expect_clean_refusal(
        "count 1e12",
        dir.path(),
        "fluid.json",
        &["many.in", "line 1", "more than surge handles"],
    );
    // A 5,000-character particle line (within the line cap): quoted to 80 characters.
    let long = format!("1\n0.2 0.2 0.2 0 0 0 {}\n", "7".repeat(5000));
    std::fs::write(dir.path().join("long.in"), long).unwrap();
    std::fs::write(dir.path().join("fluid.json"), tutorial("long.in", "")).unwrap();
    expect_clean_refusal(
        "long particle line",
        dir.path(),
        "fluid.json",
        &["long.in", "line 2", "7777..."],
    );
    // More particle lines than the count line says: refused at the first extra line.
    std::fs::write(
        dir.path().join("extra.in"),
        "1\n0.2 0.2 0.2 0 0 0\n0.2 0.2 0.2 0 0 0\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("fluid.json"), tutorial("extra.in", "")).unwrap();
    expect_clean_refusal(
        "extra lines",
        dir.path(),
        "fluid.json",
        &["extra.in", "more particle lines follow"],
    );
}

#[test]
fn deep_nesting_and_nul_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    std::fs::write(dir.path().join("deep.json"), deep).unwrap();
    expect_clean_refusal(
        "deep nesting",
        dir.path(),
        "deep.json",
        &["deep.json", "nested more than 128"],
    );
    let deep_obj = "{\"a\":".repeat(50_000) + "1" + &"}".repeat(50_000);
    std::fs::write(dir.path().join("deep2.json"), deep_obj).unwrap();
    expect_clean_refusal(
        "deep objects",
        dir.path(),
        "deep2.json",
        &["deep2.json", "nested more than 128"],
    );
    let nul = native(&format!(r#""sources": [{BOX}], "name": "a{}b""#, "\0"));
    std::fs::write(dir.path().join("nul.json"), nul).unwrap();
    expect_clean_refusal(
        "raw NUL byte",
        dir.path(),
        "nul.json",
        &["nul.json", "line 1"],
    );
    let escaped = native(&format!(r#""sources": [{BOX}], "name": "a\u0000b""#));
    std::fs::write(dir.path().join("nul2.json"), escaped).unwrap();
    expect_clean_refusal(
        "escaped NUL in name",
        dir.path(),
        "nul2.json",
        &["`name`", "control characters"],
    );
    std::fs::write(dir.path().join("zeros.json"), vec![0u8; 4096]).unwrap();
    expect_clean_refusal("4 kB of NULs", dir.path(), "zeros.json", &["zeros.json"]);
}

#[test]
fn long_names() {
    let dir = tempfile::tempdir().unwrap();
    let name = "n".repeat(5000);
    let scene = native(&format!(r#""sources": [{BOX}], "name": "{name}""#));
    std::fs::write(dir.path().join("long.json"), scene).unwrap();
    let err = expect_clean_refusal(
        "5000-character name",
        dir.path(),
        "long.json",
        &["`name`", "too long", "at most 100"],
    );
    assert!(
        !err.contains(&"n".repeat(81)),
        "more than 80 characters quoted: {err}"
    );
    let part = native(&format!(
        r#""sources": [{BOX}], "output": {{"part_pattern": "{}%d"}}"#,
        "p".repeat(5000)
    ));
    std::fs::write(dir.path().join("pattern.json"), part).unwrap();
    let err = expect_clean_refusal(
        "5000-character part pattern",
        dir.path(),
        "pattern.json",
        &["`output.part_pattern`"],
    );
    assert!(
        !err.contains(&"p".repeat(81)),
        "more than 80 characters quoted: {err}"
    );
    let unknown = native(&format!(r#""sources": [{BOX}], "{}": 1"#, "k".repeat(5000)));
    std::fs::write(dir.path().join("key.json"), unknown).unwrap();
    let err = expect_clean_refusal(
        "5000-character key",
        dir.path(),
        "key.json",
        &["key.json", "unknown field"],
    );
    assert!(
        !err.contains(&"k".repeat(81)),
        "more than 80 characters quoted: {err}"
    );
}

#[test]
fn giant_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, String, &[&str]); 5] = [
        (
            "frames u32::MAX",
            native(&format!(
                r#""sources": [{BOX}], "time": {{"frames": {}}}"#,
                u32::MAX
            )),
            &["`time.frames`", "100000"],
        ),
        (
            "frames 2^64",
            native(&format!(
                r#""sources": [{BOX}], "time": {{"frames": 18446744073709551616}}"#
            )),
            &["`time.frames`", "a whole number from 0 to 4294967295"],
        ),
        (
            "cfl 1e300",
            native(&format!(
                r#""sources": [{BOX}], "solver": {{"cfl": 1e300}}"#
            )),
            &["`solver.cfl`", "1e300", "100"],
        ),
        (
            "tutorial total_time 1e6",
            tutorial("p.in", r#", "total_time": 1e6"#).replace(r#""total_time": 0.1, "#, ""),
            &["`total_time`", "100000"],
        ),
        (
            "fps as a string",
            native(&format!(r#""sources": [{BOX}], "time": {{"fps": "30"}}"#)),
            &["`time.fps`", "expected a number"],
        ),
    ];
    std::fs::write(dir.path().join("p.in"), "1\n0.2 0.2 0.2 0 0 0\n").unwrap();
    for (case, text, wanted) in cases {
        std::fs::write(dir.path().join("s.json"), &text).unwrap();
        let err = expect_clean_refusal(case, dir.path(), "s.json", wanted);
        assert!(
            !err.contains("u32") && !err.contains("f64"),
            "{case}: {err}"
        );
    }
    // The command line's --frames has the same limit (a usage error, exit 2).
    let o = run_measured(
        dir.path(),
        &["run", "--frames", "4294967295", "-o", "out"],
        &[],
    );
    assert_eq!(o.code, Some(2), "{}", o.stderr);
}
