//! Bad input through the real binary: every case exits non-zero with a message naming the file,
//! the field (or line) and the fix, and leaves an existing output folder exactly as it was, even
//! with `--overwrite` (everything is validated before anything is written).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{SURGE, snapshot, surge};

/// A folder that looks like a previous run's output.
fn previous_run(dir: &Path) -> PathBuf {
    let out = dir.join("out");
    std::fs::create_dir_all(out.join("particles")).unwrap();
    std::fs::write(out.join("scene.json"), "{\"previous\": true}\n").unwrap();
    std::fs::write(out.join("stats.jsonl"), "{\"frame\":0}\n").unwrap();
    std::fs::write(out.join("particles/frame_0000.bin"), b"old frame").unwrap();
    std::fs::write(out.join("fluid.000.part"), "1\n0 0 0 0 0 0\n").unwrap();
    out
}

const DOMAIN: &str = r#""domain": {"lower": [0, 0, 0], "cell_size": 0.1, "resolution": [6, 6, 6]}"#;
const BOX: &str = r#"{"type": "box", "min": [0.1, 0.1, 0.1], "max": [0.3, 0.3, 0.3]}"#;

/// Runs `surge run FILE -o out --overwrite` on a scene `file_name` with `text` (plus `extra`
/// files) and checks failure, message fragments and the untouched output folder.
fn expect_failure(file_name: &str, text: &str, extra: &[(&str, &str)], wanted: &[&str]) -> String {
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
    assert!(err.contains("fix:"), "no fix in: {err}");
    for w in wanted {
        assert!(err.contains(w), "`{w}` missing from: {err}");
    }
    assert_eq!(snapshot(&out), before, "the output folder was touched");
    err
}

fn native(body: &str) -> String {
    format!("{{{DOMAIN}, {body}}}")
}

#[test]
fn missing_scene_file() {
    expect_failure("nope.json", "", &[], &["nope.json", "No such file"]);
}

#[test]
fn empty_binary_and_utf16_scene_files() {
    expect_failure("s.json", " \n", &[], &["s.json", "the file is empty"]);
    expect_failure("s.json", "\u{0}\u{1}\u{2}", &[], &["s.json", "JSON syntax"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("u.json"), b"\xff\xfe{\x00}\x00").unwrap();
    std::fs::write(dir.path().join("b.json"), b"{\"a\": \"\xc3\x28\"}").unwrap();
    for (name, wanted) in [("u.json", "UTF-16"), ("b.json", "not UTF-8")] {
        let o = surge(dir.path(), &["run", name, "-o", "out"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(wanted) && err.contains("fix: save"), "{err}");
        assert!(!dir.path().join("out").exists());
    }
}

#[test]
fn a_folder_given_as_the_scene() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("run/particles")).unwrap();
    std::fs::write(d.join("run/scene.json"), "{}").unwrap();
    std::fs::create_dir_all(d.join("shot")).unwrap();
    std::fs::write(d.join("shot/pool.json"), "{}").unwrap();
    std::fs::create_dir_all(d.join("empty")).unwrap();
    for (arg, wanted) in [
        ("run", "surge resume run"),
        ("shot", "shot/pool.json"),
        ("empty", "is a folder, not a scene file"),
    ] {
        let o = surge(d, &["run", arg, "-o", "out"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(wanted) && err.contains("fix:"), "{arg}: {err}");
        assert!(!d.join("out").exists());
    }
}

#[test]
fn json_syntax_error_names_line_and_column() {
    let text = format!("{{\n  {DOMAIN},\n  \"sources\": [{BOX}],,\n}}\n");
    expect_failure(
        "s.json",
        &text,
        &[],
        &["s.json", "line 3, column", "syntax"],
    );
}

#[test]
fn unknown_key_lists_valid_keys() {
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"solver\": {{\"flip_ration\": 0.9}}"
        )),
        &[],
        &[
            "`solver.flip_ration`",
            "unknown field",
            "`flip_ratio`",
            "`cfl`",
        ],
    );
}

#[test]
fn unknown_key_in_a_source() {
    expect_failure(
        "s.json",
        &native(
            r#""sources": [{"type": "box", "min": [0.1,0.1,0.1], "max": [0.3,0.3,0.3], "radius": 1}]"#,
        ),
        &[],
        &["`sources[0].radius`", "unknown field `radius`", "`min`"],
    );
}

#[test]
fn wrong_type_inside_a_source_names_the_key() {
    // serde reads a tagged enum through a buffer; the error must still name the key, and keep
    // the position in the file.
    expect_failure(
        "s.json",
        &native(&format!(
            r#""sources": [{BOX}, {{"type": "sphere", "center": [0.3, 0.3, 0.3], "radius": "0.1"}}]"#
        )),
        &[],
        &["`sources[1].radius`", "expected f64", "at line 1 column"],
    );
    expect_failure(
        "s.json",
        &native(r#""sources": [{"type": "box", "min": [0.1, "a", 0.1], "max": [0.3, 0.3, 0.3]}]"#),
        &[],
        &["`sources[0].min[1]`", "expected f64"],
    );
    expect_failure(
        "s.json",
        &native(r#""sources": [{"type": "box", "min": [0.1, 0.1], "max": [0.3, 0.3, 0.3]}]"#),
        &[],
        &["`sources[0].min`", "invalid length 2", "[x, y, z]"],
    );
}

#[test]
fn source_without_a_type() {
    expect_failure(
        "s.json",
        &native(r#""sources": [{"min": [0.1, 0.1, 0.1], "max": [0.3, 0.3, 0.3]}]"#),
        &[],
        &[
            "`sources[0]`",
            "no `type` key",
            "`box`, `sphere` or `particle_file`",
        ],
    );
    expect_failure(
        "s.json",
        &native(r#""sources": [3]"#),
        &[],
        &["`sources[0]`", "expected a source object"],
    );
}

#[test]
fn wrong_type() {
    expect_failure(
        "s.json",
        r#"{"domain": {"lower": [0,0,0], "cell_size": "0.1", "resolution": [6,6,6]}, "sources": []}"#,
        &[],
        &["`domain.cell_size`", "invalid type", "expected f64"],
    );
}

#[test]
fn unknown_source_type() {
    expect_failure(
        "s.json",
        &native(r#""sources": [{"type": "cube"}]"#),
        &[],
        &["sources[0]", "cube", "`box`, `sphere`, `particle_file`"],
    );
}

#[test]
fn negative_cell_size() {
    expect_failure(
        "s.json",
        &format!(
            r#"{{"domain": {{"lower": [0,0,0], "cell_size": -0.1, "resolution": [6,6,6]}}, "sources": [{BOX}]}}"#
        ),
        &[],
        &["`domain.cell_size`", "-0.1", "> 0"],
    );
}

#[test]
fn zero_resolution() {
    expect_failure(
        "s.json",
        &format!(
            r#"{{"domain": {{"lower": [0,0,0], "cell_size": 0.1, "resolution": [6,0,6]}}, "sources": [{BOX}]}}"#
        ),
        &[],
        &["`domain.resolution[1]`", "at least 3"],
    );
}

#[test]
fn zero_radius() {
    expect_failure(
        "s.json",
        &native(r#""sources": [{"type": "sphere", "center": [0.3,0.3,0.3], "radius": 0}]"#),
        &[],
        &["`sources[0].radius`", "> 0"],
    );
}

#[test]
fn inverted_box() {
    expect_failure(
        "s.json",
        &native(r#""sources": [{"type": "box", "min": [0.3,0.1,0.1], "max": [0.1,0.3,0.3]}]"#),
        &[],
        &["`sources[0].max[0]`", "empty"],
    );
}

#[test]
fn zero_fps() {
    expect_failure(
        "s.json",
        &native(&format!("\"sources\": [{BOX}], \"time\": {{\"fps\": 0}}")),
        &[],
        &["`time.fps`", "> 0"],
    );
}

#[test]
fn zero_frames() {
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"time\": {{\"frames\": 0}}"
        )),
        &[],
        &["`time.frames`", "at least 1"],
    );
}

#[test]
fn negative_frames() {
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"time\": {{\"frames\": -3}}"
        )),
        &[],
        &["`time.frames`", "-3"],
    );
}

#[test]
fn zero_cfl() {
    expect_failure(
        "s.json",
        &native(&format!("\"sources\": [{BOX}], \"solver\": {{\"cfl\": 0}}")),
        &[],
        &["`solver.cfl`", "> 0"],
    );
}

#[test]
fn negative_tolerance() {
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"solver\": {{\"pressure_tolerance\": -1e-6}}"
        )),
        &[],
        &["`solver.pressure_tolerance`", "(0, 1)"],
    );
}

/// An unknown pressure preconditioner names the field and the two valid values.
#[test]
fn unknown_pressure_preconditioner() {
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"solver\": {{\"pressure_preconditioner\": \"amg\"}}"
        )),
        &[],
        &["solver.pressure_preconditioner", "mic0", "multigrid"],
    );
}

#[test]
fn flip_ratio_outside_unit_interval() {
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"solver\": {{\"flip_ratio\": 1.5}}"
        )),
        &[],
        &["`solver.flip_ratio`", "[0, 1]", "1.5"],
    );
}

#[test]
fn no_sources() {
    expect_failure(
        "s.json",
        &native("\"sources\": []"),
        &[],
        &["`sources`", "no fluid sources"],
    );
}

#[test]
fn source_outside_the_domain() {
    expect_failure(
        "s.json",
        &native(r#""sources": [{"type": "box", "min": [2,2,2], "max": [3,3,3]}]"#),
        &[],
        &["`sources[0]`", "outside the domain"],
    );
}

#[test]
fn source_that_seeds_nothing() {
    expect_failure(
        "s.json",
        &native(r#""sources": [{"type": "sphere", "center": [0.3,0.3,0.3], "radius": 0.001}]"#),
        &[],
        &["`sources[0]`", "seeds no particles"],
    );
}

#[test]
fn nan_literal_in_json() {
    let text =
        format!("{{\n  {DOMAIN},\n  \"sources\": [{BOX}],\n  \"gravity\": [0, 0, NaN]\n}}\n");
    expect_failure(
        "s.json",
        &text,
        &[],
        &["line 4", "`gravity`", "NaN", "finite"],
    );
}

#[test]
fn infinite_number_in_json() {
    let text = format!("{{\n  {DOMAIN},\n  \"sources\": [{BOX}],\n  \"density\": 1e999\n}}\n");
    expect_failure(
        "s.json",
        &text,
        &[],
        &["line 4", "`density`", "out of range", "finite"],
    );
}

#[test]
fn bad_part_pattern() {
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"output\": {{\"part_pattern\": \"frame.part\"}}"
        )),
        &[],
        &["`output.part_pattern`", "%d"],
    );
}

#[test]
fn bad_surface_setting() {
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"surface\": {{\"kernel_radius_factor\": 20}}"
        )),
        &[],
        &["field `surface`", "kernel_radius_factor", "20"],
    );
}

#[test]
fn bad_render_setting() {
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"render\": {{\"width\": 0}}"
        )),
        &[],
        &["field `render`", "width"],
    );
}

#[test]
fn typo_sized_numbers_are_refused_before_they_overflow_the_simulation() {
    // Each of these once ran to the end writing NaN particles, or aborted allocating memory.
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"gravity\": [0, 0, -9.8e30]"
        )),
        &[],
        &["`gravity[2]`", "-9.8e30", "at most 10000"],
    );
    expect_failure(
        "s.json",
        &native(
            r#""sources": [{"type": "sphere", "center": [0.3, 0.3, 0.3], "radius": 0.1, "velocity": [1e30, 0, 0]}]"#,
        ),
        &[],
        &["`sources[0].velocity[0]`", "1e30"],
    );
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"solver\": {{\"fixed_dt\": 1e-12}}"
        )),
        &[],
        &["`solver.fixed_dt`", "1e-12", "steps per frame"],
    );
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"solver\": {{\"max_substeps\": 4000000000}}"
        )),
        &[],
        &["`solver.max_substeps`", "10000"],
    );
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"time\": {{\"fps\": 1e-300}}"
        )),
        &[],
        &["`time.fps`", "1e-300"],
    );
    expect_failure(
        "s.json",
        &format!(
            r#"{{"domain": {{"lower": [0, 0, 0], "cell_size": 1e-30, "resolution": [6, 6, 6]}}, "sources": [{BOX}]}}"#
        ),
        &[],
        // float_roundtrip: the message shows the number as written.
        &["`domain.cell_size`", "1e-30 m", "smallest cell"],
    );
}

#[test]
fn scene_larger_than_the_machine_is_refused_before_writing() {
    // 1e9 cells need about 60 GB (more than any test machine here); without the check the
    // allocation would abort the process mid-run.
    // Only where the check can refuse: Linux with less memory than the scene needs (a bigger
    // machine would start the 60 GB run).
    let total_kb: f64 = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            let l = t.lines().find(|l| l.starts_with("MemTotal:"))?.to_string();
            l.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(f64::INFINITY);
    if total_kb > 50.0 * 1024.0 * 1024.0 {
        eprintln!("skipped: this machine has more memory than the test scene needs");
        return;
    }
    expect_failure(
        "s.json",
        &format!(
            r#"{{"domain": {{"lower": [0, 0, 0], "cell_size": 0.01, "resolution": [1000, 1000, 1000]}}, "sources": [{BOX}]}}"#
        ),
        &[],
        &[
            "s.json",
            "GB of memory",
            "this machine has",
            "domain.resolution",
        ],
    );
}

#[test]
fn domain_far_from_the_origin_is_refused() {
    // Georeferenced coordinates: f32 positions cannot resolve a 5 cm cell 100 km out.
    expect_failure(
        "s.json",
        r#"{"domain": {"lower": [100000, 0, 0], "cell_size": 0.05, "resolution": [10, 8, 10]},
            "sources": [{"type": "box", "min": [100000.1, 0.1, 0.1], "max": [100000.3, 0.3, 0.3]}]}"#,
        &[],
        &["`domain.lower`", "f32", "near the origin"],
    );
}

// ---- particle files (tutorial input and native particle_file sources) ----

fn tutorial(particles: &str) -> String {
    format!(
        r#"{{"dt": 0.01, "total_time": 0.1, "res": [6, 6, 6], "h": 0.1, "lc": [0, 0, 0], "particles": "{particles}"}}"#
    )
}

#[test]
fn particle_file_missing() {
    expect_failure(
        "fluid.json",
        &tutorial("nothere.in"),
        &[],
        &["fluid.json", "`particles`", "nothere.in", "not found"],
    );
}

#[test]
fn particles_outside_the_domain() {
    expect_failure(
        "fluid.json",
        &tutorial("p.in"),
        &[(
            "p.in",
            "4\n0.2 0.2 0.2 0 0 0\n0.3 0.3 0.3 0 0 0\n0.3 5 0.3 0 0 0\n0.05 0.3 0.3 0 0 0\n",
        )],
        &["p.in", "line 4", "2 of 4 particles", "outside"],
    );
}

#[test]
fn nan_in_particle_file() {
    expect_failure(
        "fluid.json",
        &tutorial("p.in"),
        &[("p.in", "2\n0.2 0.2 0.2 0 0 0\n0.3 nan 0.3 0 0 0\n")],
        &["p.in", "line 3", "`nan`", "finite"],
    );
}

#[test]
fn infinity_in_particle_file() {
    expect_failure(
        "fluid.json",
        &tutorial("p.in"),
        &[("p.in", "2\n0.2 0.2 0.2 0 -inf 0\n0.3 0.3 0.3 0 0 0\n")],
        &["p.in", "line 2", "`-inf`", "finite"],
    );
}

#[test]
fn absurd_velocity_in_particle_file() {
    expect_failure(
        "fluid.json",
        &tutorial("p.in"),
        &[("p.in", "2\n0.2 0.2 0.2 0 0 0\n0.3 0.3 0.3 0 2e9 0\n")],
        &["p.in", "line 3", "velocity", "columns"],
    );
}

#[test]
fn tutorial_errors_found_by_the_scene_check_name_the_tutorial_keys() {
    expect_failure(
        "fluid.json",
        r#"{"dt": 0.01, "total_time": 0.1, "res": [6, 6, 6], "h": 1e-9, "lc": [0, 0, 0], "particles": "p.in"}"#,
        &[("p.in", "1\n0.2 0.2 0.2 0 0 0\n")],
        &["field `h`", "1e-9"],
    );
    expect_failure(
        "fluid.json",
        r#"{"dt": 1e-9, "total_time": 0.1, "res": [6, 6, 6], "h": 0.1, "lc": [0, 0, 0], "particles": "p.in"}"#,
        &[("p.in", "1\n0.2 0.2 0.2 0 0 0\n")],
        &["field `dt`", "steps per 1/30 s frame"],
    );
}

#[test]
fn count_line_disagrees_with_lines() {
    expect_failure(
        "fluid.json",
        &tutorial("p.in"),
        &[("p.in", "3\n0.2 0.2 0.2 0 0 0\n0.3 0.3 0.3 0 0 0\n")],
        &["p.in", "line 1", "says 3 particles but 2"],
    );
}

#[test]
fn malformed_particle_line() {
    expect_failure(
        "fluid.json",
        &tutorial("p.in"),
        &[("p.in", "2\n0.2 0.2 0.2 0 0 0\n0.3 0.3 0.3 0 0\n")],
        &["p.in", "line 3", "expected 6 numbers"],
    );
}

#[test]
fn particle_file_source_in_native_scene_checks_lines() {
    expect_failure(
        "s.json",
        &native(r#""sources": [{"type": "particle_file", "path": "p.in"}]"#),
        &[("p.in", "1\n0.2 0.2 x 0 0 0\n")],
        &["p.in", "line 2", "`x` is not a number"],
    );
}

#[test]
fn tutorial_flip_ratio_named_by_its_key() {
    let text =
        r#"{"res": [6, 6, 6], "h": 0.1, "lc": [0, 0, 0], "particles": "p.in", "flipRatio": -0.5}"#;
    expect_failure(
        "fluid.json",
        text,
        &[("p.in", "1\n0.2 0.2 0.2 0 0 0\n")],
        &["`flipRatio`", "[0, 1]"],
    );
}

#[test]
fn tutorial_unknown_key() {
    let text =
        r#"{"res": [6, 6, 6], "h": 0.1, "lc": [0, 0, 0], "particles": "p.in", "flipratio": 0.5}"#;
    expect_failure(
        "fluid.json",
        text,
        &[("p.in", "1\n0.2 0.2 0.2 0 0 0\n")],
        &["`flipratio`", "unknown field", "`flipRatio`"],
    );
}

// ---- inputs that must load ----

#[test]
fn tutorial_comments_defaults_and_json_relative_path() {
    // `//` comment lines as the tutorial's reader accepts them; missing keys take the tutorial's
    // defaults; the particle path is found relative to the json's folder when the working
    // directory does not have it.
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("case");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        sub.join("fluid.json"),
        "{\n    //\"h\" : 0.5,\n    \"res\" : [6, 6, 6],\n    \"h\" : 0.1,\n    \"lc\" : [0, 0, 0],\n    \"dt\" : 0.01,\n    \"total_time\" : 0.1,\n    \"particles\" : \"p.in\"\n}\n",
    )
    .unwrap();
    std::fs::write(
        sub.join("p.in"),
        "2\n0.2 0.2 0.2 0 0 0\n0.3 0.3 0.3 1 0 0\n",
    )
    .unwrap();
    let o = surge(dir.path(), &["-q", "run", "case/fluid.json", "-o", "o"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let scene: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("o/scene.json")).unwrap())
            .unwrap();
    assert_eq!(scene["solver"]["flip_ratio"], 0.95);
    assert_eq!(scene["solver"]["fixed_dt"], 0.01);
    assert_eq!(scene["output"]["part_pattern"], "output.%04d.txt");
    assert_eq!(scene["domain"]["cell_size"], 0.1);
    assert_eq!(scene["gravity"][2], -9.80665);
    // 0.1 s at dt 0.01: 10 steps, frames every round(1/(30*0.01)) = 3 steps: frames 0..=3.
    assert_eq!(scene["time"]["frames"], 3);
    for f in 0..=3 {
        assert!(
            dir.path().join(format!("o/output.{f:04}.txt")).is_file(),
            "frame {f}"
        );
    }
    assert!(!dir.path().join("o/output.0004.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("o/output.0000.txt")).unwrap(),
        "2\n0.2 0.2 0.2 0 0 0\n0.3 0.3 0.3 1 0 0\n"
    );
}

#[test]
fn shipped_tutorial_file_resolves_like_the_tutorial() {
    // The shipped fluid.json (total_time 5.0) writes frames 000..149 like the tutorial; check
    // the resolved scene without simulating all of it.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let o = Command::new(SURGE)
        .current_dir(root)
        .args([
            "-q",
            "run",
            "inputs/fluid_incremental1.json",
            "--frames",
            "1",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let scene: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("scene.json")).unwrap()).unwrap();
    assert_eq!(scene["solver"]["flip_ratio"], 1.0);
    assert_eq!(
        scene["domain"]["lower"][0], -0.125,
        "the commented-out lc is skipped"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("fluid.000.part")).unwrap(),
        std::fs::read_to_string(root.join("inputs/test_particles.in")).unwrap()
    );
    assert_eq!(surge::scene::tutorial_last_frame(5.0, 0.001111112), 149);
}

#[test]
fn shipped_scenes_load() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in ["dam_break", "drop_into_pool", "tiny"] {
        let loaded = surge::scene::load(&root.join(format!("scenes/{name}.json")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(loaded.scene.name, name);
        assert!(loaded.particles.len() > 100, "{name}");
    }
}

/// xorshift64: a fixed sequence, so a failure replays.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Mutates `text` with up to two substitutions or deletions and at most one insertion, drawing
/// bytes from JSON's and numbers' alphabets.
fn mutate(text: &str, state: &mut u64) -> Vec<u8> {
    const ALPHABET: &[u8] = b"0123456789-+.eE,:[]{}\" naNfItrul/\n";
    let mut bytes = text.as_bytes().to_vec();
    let edits = 1 + next(state) % 3;
    for e in 0..edits {
        if bytes.is_empty() {
            break;
        }
        let at = (next(state) % bytes.len() as u64) as usize;
        let c = ALPHABET[(next(state) % ALPHABET.len() as u64) as usize];
        match (e, next(state) % 3) {
            (0, 0) => bytes.insert(at, c),
            (_, 1) => {
                bytes.remove(at);
            }
            _ => bytes[at] = c,
        }
    }
    bytes
}

#[test]
fn mutated_scenes_and_particle_files_never_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scene = std::fs::read_to_string(root.join("scenes/tiny.json")).unwrap();
    let tutorial = std::fs::read_to_string(root.join("inputs/fluid.json")).unwrap();
    let particles = "3\n0.2 0.2 0.2 0 0 0\n0.3 0.3 0.3 1 0 -1.5e-3\n0.25 0.2 0.3 0 0 0\n";
    let mut state = 0x2545f4914f6cdd1d_u64;
    let (mut ok, mut err) = (0, 0);
    for i in 0..4000 {
        let (base, is_particles) = match i % 3 {
            0 => (scene.as_str(), false),
            1 => (tutorial.as_str(), false),
            _ => (particles, true),
        };
        let Ok(text) = String::from_utf8(mutate(base, &mut state)) else {
            continue;
        };
        let result = std::panic::catch_unwind(|| {
            if is_particles {
                surge::sources::parse_particle_text(&text, Path::new("m.in")).map(|_| ())
            } else {
                surge::scene::load_str(&text, Path::new("m.json"), root).map(|_| ())
            }
        });
        match result {
            Ok(Ok(())) => ok += 1,
            Ok(Err(e)) => {
                let msg = e.to_string();
                assert!(msg.contains(": ") && msg.contains("fix:"), "{msg}");
                err += 1;
            }
            Err(_) => panic!("panic on input:\n{text}"),
        }
    }
    assert!(ok > 100 && err > 1000, "{ok} loaded, {err} refused");
}

#[test]
fn surface_grid_too_fine_for_the_domain() {
    // Below the fixed lower bound.
    expect_failure(
        "s.json",
        &native(&format!(
            r#""sources": [{BOX}], "surface": {{"cell_size_factor": 0.001}}"#
        )),
        &[],
        &["s.json", "surface.cell_size_factor is 0.001", "fix:"],
    );
    // Above the bound, but a 400^3 domain would need ~2e10 sampling points: refused before
    // frame 0 (it used to abort with a failed allocation) with the smallest factor that fits.
    let text = r#"{"domain": {"lower": [0, 0, 0], "cell_size": 0.01, "resolution": [400, 400, 400]},
        "sources": [{"type": "box", "min": [0.1, 0.1, 0.1], "max": [0.2, 0.2, 0.2]}],
        "surface": {"cell_size_factor": 0.06}}"#;
    expect_failure(
        "s.json",
        text,
        &[],
        &["surface.cell_size_factor is 0.06", "points", "at least 0."],
    );
}
