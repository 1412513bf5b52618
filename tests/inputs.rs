//! Bad input through the real binary: every case exits non-zero with a message naming the file,
//! the field (or line) and the fix, and leaves an existing output folder exactly as it was, even
//! with `--overwrite` (everything is validated before anything is written). Scene files here;
//! particle files, the tutorial's input and inputs that must load: `tests/inputs_files.rs`.

mod common;
use common::inputs::*;
use common::surge;

#[test]
fn missing_scene_file() {
    expect_failure("nope.json", "", &[], &["nope.json", "No such file"]);
}

#[test]
fn empty_binary_and_utf16_scene_files() {
    expect_failure("s.json", " \n", &[], &["s.json", "the file is empty"]);
    expect_failure("s.json", "\u{0}\u{1}\u{2}", &[], &["s.json", "JSON syntax"]);
    expect_failure_bytes(
        "u.json",
        b"\xff\xfe{\x00}\x00",
        &[],
        &["u.json", "UTF-16", "fix: save"],
    );
    expect_failure_bytes(
        "b.json",
        b"{\"a\": \"\xc3\x28\"}",
        &[],
        &["b.json", "not UTF-8", "fix: save"],
    );
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
        &[
            "`sources[1].radius`",
            "expected a number",
            "at line 1 column",
        ],
    );
    expect_failure(
        "s.json",
        &native(r#""sources": [{"type": "box", "min": [0.1, "a", 0.1], "max": [0.3, 0.3, 0.3]}]"#),
        &[],
        &["`sources[0].min[1]`", "expected a number"],
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
        &["`domain.cell_size`", "invalid type", "expected a number"],
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

/// An unknown transfer or free surface names the field and the valid values.
#[test]
fn unknown_transfer_and_free_surface() {
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"solver\": {{\"transfer\": \"mpm\"}}"
        )),
        &[],
        &["solver.transfer", "flip", "apic"],
    );
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"solver\": {{\"free_surface\": \"ghost\"}}"
        )),
        &[],
        &["solver.free_surface", "staircase", "ghost_fluid"],
    );
}

#[test]
fn volume_correction_outside_unit_interval() {
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"solver\": {{\"volume_correction\": 2}}"
        )),
        &[],
        &["`solver.volume_correction`", "[0, 1]"],
    );
}

#[test]
fn negative_volume_correction_interval() {
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"solver\": {{\"volume_correction_interval\": -0.1}}"
        )),
        &[],
        &["`solver.volume_correction_interval`", ">= 0"],
    );
}

/// `solver.max_particles_per_cell` at or below the seeding density (8) would thin evenly
/// seeded liquid; a negative or fractional count is not a count.
#[test]
fn max_particles_per_cell_not_above_seeding_density() {
    expect_failure(
        "s.json",
        &native(&format!(
            "\"sources\": [{BOX}], \"solver\": {{\"max_particles_per_cell\": 8}}"
        )),
        &[],
        &[
            "`solver.max_particles_per_cell`",
            "seeding density",
            "0 to switch",
        ],
    );
    for bad in ["-1", "20.5"] {
        expect_failure(
            "s.json",
            &native(&format!(
                "\"sources\": [{BOX}], \"solver\": {{\"max_particles_per_cell\": {bad}}}"
            )),
            &[],
            &["max_particles_per_cell"],
        );
    }
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
    // `surge run` estimates 64 bytes per grid cell (src/cli/run.rs) and refuses a scene that
    // needs more than MemTotal; without the check the allocation would abort the process
    // mid-run. The scene is sized from this machine's memory: a cube of cells needing about
    // 1.5 x MemTotal (on the project's 24,683,656 kB machine: 840^3 cells, 35.3 GiB).
    // Scene validation caps a domain at 2^30 cells (about 69 GB of need), so on a machine with
    // more than ~46 GB the refusal cannot be reached with cells alone and the test skips,
    // visibly (common::skip), even in CI: it cannot run there.
    let total_kb: Option<f64> = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        let l = t.lines().find(|l| l.starts_with("MemTotal:"))?.to_string();
        l.split_whitespace().nth(1)?.parse().ok()
    });
    let Some(total_kb) = total_kb else {
        common::skip(
            "scene_larger_than_the_machine_is_refused_before_writing",
            "no /proc/meminfo: surge has no memory figure to refuse by on this OS",
        );
        return;
    };
    let cells = 1.5 * total_kb * 1024.0 / 64.0;
    let n = cells.cbrt().ceil() as u64;
    if n * n * n > 1 << 30 {
        common::skip(
            "scene_larger_than_the_machine_is_refused_before_writing",
            &format!(
                "this machine has {:.0} GB: a scene needing more has over 2^30 cells, which \
                 validation refuses first",
                total_kb / 1024.0 / 1024.0
            ),
        );
        return;
    }
    let err = expect_failure(
        "s.json",
        &format!(
            r#"{{"domain": {{"lower": [0, 0, 0], "cell_size": 0.01, "resolution": [{n}, {n}, {n}]}}, "sources": [{BOX}]}}"#
        ),
        &[],
        &[
            "s.json",
            "GB of memory",
            "this machine has",
            "domain.resolution",
        ],
    );
    // The figures are the estimate's: need = 64 B x cells + 256 B x particles (the box seeds
    // 20^3 cells x 8), and the machine's total.
    let gb = |b: f64| b / (1u64 << 30) as f64;
    let need = format!(
        "{:.1} GB of memory",
        gb((n * n * n) as f64 * 64.0 + 64_000.0 * 256.0)
    );
    let has = format!("this machine has {:.1} GB", gb(total_kb * 1024.0));
    assert!(
        err.contains(&need) && err.contains(&has),
        "{need} / {has}: {err}"
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
