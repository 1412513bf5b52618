//! Real-Blender tests of `scripts/blender_import.py` (bpy 4.5 from the venv that
//! `scripts/setup_python.sh` makes; `scripts/test.sh` passes it as SURGE_PYTHON): the Geometry
//! Nodes mesh sequence must play, keep its material, export to Alembic and render in a .blend
//! reopened by a new process with scripts disabled. Skipped when the venv is missing, except
//! with CI=true, where that fails the test.

use std::path::{Path, PathBuf};
use std::process::Command;
use surge::output::RunLayout;

mod common;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `python ARGS` (at most 300 s) in `cwd`; returns stdout, failing with stderr otherwise.
fn run_py(py: &Path, cwd: &Path, args: &[&std::ffi::OsStr]) -> String {
    let o = common::python(py, Some(cwd), args);
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "python {args:?} failed ({}):\n{stdout}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

fn last_json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| {
        panic!("no JSON on the last line ({e}):\n{stdout}");
    })
}

/// A run folder `root/run`: a falling ball over frames 0..=5, frame 3 with no liquid (an
/// empty PLY), meshed by `surge mesh`.
fn make_run(root: &Path) -> PathBuf {
    let run = root.join("run");
    let s: surge::scene::Scene = serde_json::from_str(
        r#"{"domain": {"lower": [0, 0, 0], "cell_size": 0.05, "resolution": [12, 12, 16]},
            "sources": [{"type": "sphere", "center": [0.3, 0.3, 0.5], "radius": 0.15, "velocity": [0.5, 0, 0]}],
            "time": {"fps": 24, "frames": 5}}"#,
    )
    .unwrap();
    common::write_run(&run, &s, 5, 3);
    let o = Command::new(env!("CARGO_BIN_EXE_surge"))
        .args(["mesh", run.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    run
}

/// A hand-made `obstacles/` sequence: a 0.1 m cube whose lower corner is at x = 0.1 + 0.02 f.
fn write_obstacles(run: &Path) {
    let dir = run.join("obstacles");
    std::fs::create_dir_all(&dir).unwrap();
    for f in 0..=5u32 {
        let mut b = b"ply\nformat binary_little_endian 1.0\nelement vertex 8\n\
            property float x\nproperty float y\nproperty float z\nelement face 12\n\
            property list uchar uint vertex_indices\nend_header\n"
            .to_vec();
        let x0 = 0.1 + 0.02 * f as f32;
        for k in 0..8u32 {
            for (axis, lo) in [(0, x0), (1, 0.2f32), (2, 0.05f32)] {
                let c = lo + if k >> axis & 1 == 1 { 0.1 } else { 0.0 };
                b.extend_from_slice(&c.to_le_bytes());
            }
        }
        let quads = [
            [0, 2, 3, 1],
            [4, 5, 7, 6],
            [0, 1, 5, 4],
            [2, 6, 7, 3],
            [0, 4, 6, 2],
            [1, 3, 7, 5],
        ];
        for q in quads {
            for t in [[q[0], q[1], q[2]], [q[0], q[2], q[3]]] {
                b.push(3);
                for i in t {
                    b.extend_from_slice(&(i as u32).to_le_bytes());
                }
            }
        }
        std::fs::write(dir.join(format!("frame_{f:04}.ply")), b).unwrap();
    }
}

#[test]
fn saved_blend_plays_renders_and_exports_without_scripts() {
    let Some(py) = common::venv_python() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let run = make_run(d.path());
    write_obstacles(&run);

    // Import and save beside the run folder: `python blender_import.py -- RUN --save ...`.
    let blend = d.path().join("shot.blend");
    let out = run_py(
        &py,
        d.path(),
        &[
            root().join("scripts/blender_import.py").as_os_str(),
            "--".as_ref(),
            run.as_os_str(),
            "--save".as_ref(),
            blend.as_os_str(),
        ],
    );
    assert!(out.contains("imported"), "{out}");
    assert!(blend.is_file());

    // Move the project folder: the relative path must still find the meshes.
    let moved = d.path().join("moved");
    std::fs::create_dir(&moved).unwrap();
    std::fs::rename(&run, moved.join("run")).unwrap();
    std::fs::rename(&blend, moved.join("shot.blend")).unwrap();
    let work = d.path().join("work");
    std::fs::create_dir(&work).unwrap();

    // Reopen in a new process with scripts disabled, from another working directory.
    let doc = last_json(&run_py(
        &py,
        &work,
        &[
            root().join("tests/blender_check.py").as_os_str(),
            "reopen".as_ref(),
            moved.join("shot.blend").as_os_str(),
            work.as_os_str(),
        ],
    ));
    assert_eq!(doc["handlers"], 0, "no frame-change handler: {doc}");
    assert_eq!(doc["texts"], 0, "no script in the .blend: {doc}");
    assert_eq!(doc["modifier_types"], serde_json::json!(["NODES"]));
    assert_eq!(doc["inputs"]["Folder"], "//run/meshes/", "{doc}");
    assert_eq!(doc["obstacle_inputs"]["Folder"], "//run/obstacles/");
    assert_eq!(doc["fps"], 24.0, "fps from scene.json");
    assert_eq!(doc["range"], serde_json::json!([0, 5]));
    assert_eq!(doc["camera"], "surge_camera");
    assert_eq!(doc["motion_blur"], true);
    let objects: Vec<&str> = doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    for default in ["Cube", "Camera", "Light"] {
        assert!(
            !objects.contains(&default),
            "{default} left in: {objects:?}"
        );
    }

    let moved_layout = RunLayout::new(moved.join("run"));
    let frames = doc["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 6);
    let mut prev_sum = None;
    for (f, rec) in frames.iter().enumerate() {
        let bytes = std::fs::read(moved_layout.mesh(f as u32)).unwrap();
        let (nv, nf) = surge::output::ply::header_counts(&bytes).unwrap();
        assert_eq!(
            rec["vertices"].as_u64().unwrap() as usize,
            nv,
            "frame {f}: {rec}"
        );
        assert_eq!(
            rec["faces"].as_u64().unwrap() as usize,
            nf,
            "frame {f}: {rec}"
        );
        // The cube moves 0.02 m in x per frame.
        assert_eq!(rec["obstacle_vertices"], 8, "frame {f}: {rec}");
        let x = rec["obstacle_min"][0].as_f64().unwrap();
        assert!(
            (x - (0.1 + 0.02 * f as f64)).abs() < 1e-6,
            "frame {f}: {rec}"
        );
        if f == 3 {
            assert_eq!((nv, nf), (0, 0), "the empty frame");
            continue;
        }
        assert!(nv > 100, "frame {f}: {nv} vertices");
        assert_eq!(
            rec["materials"],
            serde_json::json!(["artist glass"]),
            "frame {f}: the swapped material must hold: {rec}"
        );
        assert_eq!(
            rec["velocity"],
            serde_json::json!(["FLOAT_VECTOR", "POINT"]),
            "{rec}"
        );
        assert_eq!(rec["leftover_attributes"], serde_json::json!([]), "{rec}");
        // Same f32 values as the file (bit-identical, read by plyfile).
        assert_eq!(rec["position_max_error"], 0.0, "{rec}");
        assert_eq!(rec["velocity_max_error"], 0.0, "{rec}");
        assert_eq!(rec["any_sharp"], false, "smooth shading: {rec}");
        assert!(
            rec["normal_min_dot"].as_f64().unwrap() > 0.999,
            "the PLY normals must be the shading normals: {rec}"
        );
        let sum = rec["co_sum"].as_f64().unwrap();
        assert_ne!(prev_sum, Some(sum), "frame {f}: positions did not change");
        prev_sum = Some(sum);
    }

    // Alembic and USD round trips: per-frame geometry that changes across frames. (The sum of
    // coordinates, 1e-3 relative: both formats store single floats, the order may differ.)
    for kind in ["abc", "usd"] {
        assert_eq!(doc[format!("{kind}_objects")], 1, "{doc}");
        let got = doc[format!("{kind}_frames")].as_array().unwrap();
        let mut sums = Vec::new();
        for (f, (a, rec)) in got.iter().zip(frames).enumerate() {
            assert_eq!(
                a["vertices"], rec["vertices"],
                "{kind} frame {f}: {a} vs {rec}"
            );
            if f != 3 {
                let s = a["co_sum"].as_f64().unwrap();
                let want = rec["co_sum"].as_f64().unwrap();
                assert!(
                    (s - want).abs() < 1e-3 * want.abs().max(1.0),
                    "{kind} frame {f}: {a} vs {rec}"
                );
                sums.push(s);
            }
        }
        sums.dedup();
        assert_eq!(
            sums.len(),
            5,
            "{kind} geometry must change every frame: {got:?}"
        );
    }

    // Cycles render of frame 2 (96x54, 4 samples, CPU): the liquid is in view and its pixels
    // differ from the render without it. The liquid covers roughly half its bounding box;
    // without the liquid the renders are identical (Cycles' sampling is seeded), so 0.15 is
    // far from both outcomes.
    let r = &doc["render"];
    eprintln!("render: {r}");
    let bb: Vec<f64> = r["bbox_view"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!(
        bb.iter().all(|&v| (0.0..=1.0).contains(&v)),
        "liquid not framed by the camera: {r}"
    );
    assert!(r["inside_pixels"].as_u64().unwrap() >= 50, "{r}");
    assert!(
        r["inside_changed"].as_f64().unwrap() > 0.15,
        "the water does not show in the render: {r}"
    );
    assert!(work.join("render_with.png").is_file());
}

#[test]
fn import_survives_unrelated_blender_arguments() {
    let Some(py) = common::venv_python() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let run = make_run(d.path());
    // As Blender's Text Editor runs it (__main__) while Blender was started with `-- ...`
    // arguments meant for something else: nothing is parsed, nothing exits.
    let doc = last_json(&run_py(
        &py,
        d.path(),
        &[
            root().join("tests/blender_check.py").as_os_str(),
            "unrelated".as_ref(),
            root().join("scripts/blender_import.py").as_os_str(),
            run.as_os_str(),
            "--".as_ref(),
            "--frobnicate".as_ref(),
            "7".as_ref(),
            "not_a_run".as_ref(),
        ],
    ));
    assert_eq!(doc["imported_by_argv"], false, "{doc}");
    assert_eq!(doc["object"], "surge_liquid");
    // keep_scene: the startup file's objects stay, no camera or light is added.
    assert_eq!(
        doc["kept_scene"],
        serde_json::json!(["Camera", "Cube", "Light", "surge_liquid"]),
        "{doc}"
    );
    let (nv, _) =
        surge::output::ply::header_counts(&std::fs::read(RunLayout::new(&run).mesh(1)).unwrap())
            .unwrap();
    assert_eq!(doc["vertices_at_1"].as_u64().unwrap() as usize, nv, "{doc}");
    // The File > Import operator adds a second sequence (no camera or light: keep scene).
    let (nv0, _) =
        surge::output::ply::header_counts(&std::fs::read(RunLayout::new(&run).mesh(0)).unwrap())
            .unwrap();
    assert_eq!(doc["operator"], serde_json::json!(["FINISHED"]), "{doc}");
    assert_eq!(
        doc["operator_objects"],
        serde_json::json!(["surge_liquid.001"]),
        "{doc}"
    );
    assert_eq!(
        doc["operator_vertices_at_10"].as_u64().unwrap() as usize,
        nv0,
        "{doc}"
    );

    // The command line itself: a bad argument is a usage error naming it, not a traceback.
    let script = root().join("scripts/blender_import.py");
    let o = common::python(
        &py,
        None,
        &[
            script.as_os_str(),
            "--".as_ref(),
            run.as_os_str(),
            "--render".as_ref(),
            "x".as_ref(),
            "out.png".as_ref(),
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("FRAME must be a whole number"), "{err}");
    assert!(!err.contains("Traceback"), "{err}");
    let nowhere = d.path().join("nowhere");
    let o = common::python(
        &py,
        None,
        &[script.as_os_str(), "--".as_ref(), nowhere.as_os_str()],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("nowhere: no such folder"), "{err}");
}

#[test]
fn run_hint_gives_the_blender_command_with_absolute_paths() {
    let d = tempfile::tempdir().unwrap();
    let scene = root().join("scenes/tiny.json");
    let o = common::surge(
        d.path(),
        &[
            "run",
            scene.to_str().unwrap(),
            "-o",
            "rel_out",
            "--frames",
            "1",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("into Blender"))
        .unwrap_or_else(|| panic!("no Blender hint:\n{err}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let after = |w: &str| words[words.iter().position(|x| *x == w).unwrap() + 1];
    let script = Path::new(after("-P"));
    assert!(script.is_absolute() && script.is_file(), "{line}");
    assert!(script.ends_with("scripts/blender_import.py"), "{line}");
    let run = Path::new(after("--"));
    assert!(run.is_absolute(), "{line}");
    assert_eq!(
        run,
        d.path().canonicalize().unwrap().join("rel_out"),
        "{line}"
    );
}

/// Runs `surge run` on a small scene with one box obstacle (`keyframes`: its JSON, or empty
/// for a static box) for frames 0..=3, imports it with `--save`, and reports each frame as
/// `tests/blender_check.py lined_up` sees it in the reopened .blend.
fn import_obstacle_run(py: &Path, dir: &Path, keyframes: &str) -> serde_json::Value {
    let scene = dir.join("scene.json");
    std::fs::write(
        &scene,
        format!(
            r#"{{"domain": {{"lower": [0, 0, 0], "cell_size": 0.05, "resolution": [12, 12, 16]}},
                "sources": [{{"type": "sphere", "center": [0.3, 0.3, 0.45], "radius": 0.12}}],
                "obstacles": [{{"type": "box", "min": [0.1, 0.1, 0.05], "max": [0.3, 0.25, 0.15]{keyframes}}}],
                "time": {{"fps": 24, "frames": 3}}}}"#
        ),
    )
    .unwrap();
    let run = dir.join("run");
    let o = common::surge(
        dir,
        &[
            "run",
            scene.to_str().unwrap(),
            "-o",
            run.to_str().unwrap(),
            "-q",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let blend = dir.join("shot.blend");
    // `--render FRAME PNG` from the command line too (Cycles, tiny: 64 x 36, 2 samples).
    let png = dir.join("frame2.png");
    let out = run_py(
        py,
        dir,
        &[
            root().join("scripts/blender_import.py").as_os_str(),
            "--".as_ref(),
            run.as_os_str(),
            "--save".as_ref(),
            blend.as_os_str(),
            "--render".as_ref(),
            "2".as_ref(),
            png.as_os_str(),
            "--samples".as_ref(),
            "2".as_ref(),
            "--resolution".as_ref(),
            "64".as_ref(),
            "36".as_ref(),
        ],
    );
    assert!(out.contains("rendered frame 2"), "{out}");
    let head = std::fs::read(&png).unwrap();
    assert_eq!(&head[1..4], b"PNG");
    let be32 = |i: usize| u32::from_be_bytes(head[i..i + 4].try_into().unwrap());
    assert_eq!((be32(16), be32(20)), (64, 36), "the PNG's size (IHDR)");
    last_json(&run_py(
        py,
        dir,
        &[
            root().join("tests/blender_check.py").as_os_str(),
            "lined_up".as_ref(),
            blend.as_os_str(),
            run.as_os_str(),
            "3".as_ref(),
        ],
    ))
}

#[test]
fn obstacles_line_up_with_the_liquid_in_every_frame() {
    let Some(py) = common::venv_python() else {
        return;
    };
    for (case, keys, static_) in [
        ("static", "", true),
        (
            "moving",
            r#", "keyframes": [{"frame": 0, "translate": [0, 0, 0]}, {"frame": 3, "translate": [0.3, 0.1, 0]}]"#,
            false,
        ),
    ] {
        let d = tempfile::tempdir().unwrap();
        let doc = import_obstacle_run(&py, d.path(), keys);
        eprintln!("{case}: {doc}");
        // A static obstacle is a plain mesh stored in the .blend (no modifier, no file read at
        // render time); a moving one is a second Geometry Nodes sequence.
        let want: &[&str] = if static_ { &[] } else { &["NODES"] };
        assert_eq!(doc["obstacle_modifiers"], serde_json::json!(want), "{case}");
        assert_eq!(
            doc["obstacle_materials"],
            serde_json::json!(["surge obstacle"]),
            "{case}"
        );
        let frames = doc["frames"].as_array().unwrap();
        assert_eq!(frames.len(), 4);
        let mut xs = Vec::new();
        for (f, rec) in frames.iter().enumerate() {
            // The liquid and the obstacle at Blender frame f are that frame's PLYs, exactly
            // (world space, single floats as written).
            assert!(
                rec["liquid_vertices"].as_u64().unwrap() > 100,
                "{case} {f}: {rec}"
            );
            assert_eq!(
                rec["liquid_vertices"], rec["liquid_ply"],
                "{case} {f}: {rec}"
            );
            assert_eq!(rec["liquid_error"], 0.0, "{case} {f}: {rec}");
            assert_eq!(rec["obstacle_vertices"], 8, "{case} {f}: {rec}");
            assert_eq!(rec["obstacle_error"], 0.0, "{case} {f}: {rec}");
            xs.push(rec["obstacle_min"][0].as_f64().unwrap());
        }
        // The moving box travels 0.1 m in x a frame (linear keyframes); the static one stays.
        for (f, x) in xs.iter().enumerate() {
            let want = 0.1 + if static_ { 0.0 } else { 0.1 * f as f64 };
            assert!(
                (x - want).abs() < 1e-6,
                "{case} frame {f}: x {x}, want {want}"
            );
        }
    }
}

#[test]
fn keep_scene_adds_into_the_open_blend() {
    let Some(py) = common::venv_python() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let run = make_run(d.path());
    let blend = d.path().join("kept.blend");
    run_py(
        &py,
        d.path(),
        &[
            root().join("scripts/blender_import.py").as_os_str(),
            "--".as_ref(),
            run.as_os_str(),
            "--keep-scene".as_ref(),
            "--save".as_ref(),
            blend.as_os_str(),
        ],
    );
    let doc = last_json(&run_py(
        &py,
        d.path(),
        &[
            root().join("tests/blender_check.py").as_os_str(),
            "objects".as_ref(),
            blend.as_os_str(),
        ],
    ));
    // The start-up scene's objects, camera and engine stay; only the sequence is added.
    assert_eq!(
        doc["objects"],
        serde_json::json!(["Camera", "Cube", "Light", "surge_liquid"]),
        "{doc}"
    );
    assert_eq!(doc["camera"], "Camera", "{doc}");
    assert_ne!(
        doc["engine"], "CYCLES",
        "--keep-scene changed the render engine: {doc}"
    );
}
