//! Real-Blender tests of `scripts/blender_export.py` (bpy 4.5 from the venv; see
//! `tests/blender_import.rs`): a shot laid out in Blender (`tests/blender_scene.py build`)
//! becomes a surge scene that surge runs, with the liquid where it was in Blender; obstacles,
//! emitters and sinks land where Blender has them; a bad property is an error naming the object
//! and the property.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use surge::output::RunLayout;

mod common;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn py(python: &Path, args: &[&std::ffi::OsStr]) -> Output {
    Command::new("timeout")
        .arg("300")
        .arg(python)
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "failed ({}):\n{out}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Builds the Blender shot (and its bad variants) in `dir`.
fn build(python: &Path, dir: &Path) {
    ok(&py(
        python,
        &[
            repo("tests/blender_scene.py").as_os_str(),
            "build".as_ref(),
            dir.as_os_str(),
        ],
    ));
}

fn export(python: &Path, blend: &Path, scene: &Path, only_supported: bool) -> Output {
    let script = repo("scripts/blender_export.py");
    let mut args: Vec<&std::ffi::OsStr> = vec![
        script.as_os_str(),
        "--".as_ref(),
        scene.as_os_str(),
        "--blend".as_ref(),
        blend.as_os_str(),
    ];
    if only_supported {
        args.push("--only-supported".as_ref());
    }
    py(python, &args)
}

fn v3(v: &serde_json::Value) -> [f64; 3] {
    let a = v.as_array().unwrap_or_else(|| panic!("not a vector: {v}"));
    [0, 1, 2].map(|i| a[i].as_f64().unwrap())
}

fn close(a: [f64; 3], b: [f64; 3], tol: f64) -> bool {
    (0..3).all(|i| (a[i] - b[i]).abs() <= tol)
}

#[test]
fn blender_shot_exports_to_a_scene_surge_runs() {
    let Some(python) = common::venv_python() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    build(&python, d.path());
    let blend = d.path().join("shot.blend");

    // The full scene: every tagged object, in the agreed schema. The shot (tests/blender_scene.py)
    // was laid out with unapplied transforms; these are the world-space numbers it describes.
    let full = d.path().join("full/shot.json");
    ok(&export(&python, &blend, &full, false));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&full).unwrap()).unwrap();
    let dom = &doc["domain"];
    assert_eq!(v3(&dom["lower"]), [0.0, 0.0, 0.0], "{dom}");
    assert_eq!(dom["cell_size"], 0.05);
    // Size 1 x 0.6 x 0.8 m in 0.05 m cells, wall layer included.
    assert_eq!(dom["resolution"], serde_json::json!([20, 12, 16]));
    assert_eq!(doc["time"], serde_json::json!({"fps": 24.0, "frames": 10}));
    let sources = doc["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 2, "{doc}");
    let ball = &sources[0]; // objects in name order: Ball, Water
    assert_eq!(ball["type"], "sphere", "{ball}");
    assert!(close(v3(&ball["center"]), [0.75, 0.3, 0.3], 1e-6), "{ball}");
    assert!(
        (ball["radius"].as_f64().unwrap() - 0.12).abs() < 1e-6,
        "{ball}"
    );
    let water = &sources[1];
    assert_eq!(water["type"], "box", "{water}");
    assert!(close(v3(&water["min"]), [0.1, 0.1, 0.05], 1e-6), "{water}");
    assert!(close(v3(&water["max"]), [0.4, 0.5, 0.45], 1e-6), "{water}");
    assert_eq!(v3(&water["velocity"]), [0.2, 0.0, 0.0]);

    let obstacles = doc["obstacles"].as_array().unwrap();
    assert_eq!(obstacles.len(), 2, "{doc}");
    // Paddle: keyframed linearly from x = 0.2 (frame 1) to 0.6 (frame 11), z rotation 0 -> 90.
    let paddle = &obstacles[0];
    assert_eq!(paddle["type"], "mesh");
    assert_eq!(paddle["path"], "Paddle.ply");
    assert_eq!(paddle["liquid"], "outside");
    let keys = paddle["keyframes"].as_array().unwrap();
    assert_eq!(keys.len(), 11, "one keyframe per frame");
    for (f, k) in keys.iter().enumerate() {
        assert_eq!(k["frame"], f);
        let x = 0.2 + 0.04 * f as f64;
        assert!(close(v3(&k["translate"]), [x, 0.3, 0.6], 1e-5), "{k}");
        assert!(
            close(v3(&k["rotate"]), [0.0, 0.0, 9.0 * f as f64], 1e-4),
            "{k}"
        );
    }
    let rock = &obstacles[1];
    assert_eq!(
        rock["type"], "mesh",
        "a cone is neither a box nor a sphere: {rock}"
    );
    assert!(rock.get("keyframes").is_none(), "static: {rock}");
    for o in obstacles {
        let ply = full.with_file_name(o["path"].as_str().unwrap());
        let head = std::fs::read(&ply).unwrap();
        assert!(head.starts_with(b"ply\nformat binary_little_endian 1.0\n"));
    }
    let tap = &doc["emitters"][0];
    assert_eq!(tap["type"], "sphere", "{tap}");
    assert!(close(v3(&tap["center"]), [0.5, 0.3, 0.7], 1e-6), "{tap}");
    assert_eq!(v3(&tap["velocity"]), [0.0, 0.0, -1.0]);
    // Blender frames 3 and 8 at 24 fps, counted from the start frame 1.
    assert!(
        (tap["start"].as_f64().unwrap() - 2.0 / 24.0).abs() < 1e-6,
        "{tap}"
    );
    assert!(
        (tap["end"].as_f64().unwrap() - 7.0 / 24.0).abs() < 1e-6,
        "{tap}"
    );
    let drain = &doc["sinks"][0];
    assert_eq!(drain["type"], "box", "{drain}");
    assert!(
        close(v3(&drain["min"]), [0.85, 0.25, 0.05], 1e-6),
        "{drain}"
    );

    // Blender's own evaluated vertices, frame by frame, against the exported entries (mesh
    // files moved by their keyframes). Single floats: 1e-5 m is 100 times their rounding.
    let report: serde_json::Value = serde_json::from_str(
        ok(&py(
            &python,
            &[
                repo("tests/blender_scene.py").as_os_str(),
                "verify".as_ref(),
                full.as_os_str(),
                blend.as_os_str(),
            ],
        ))
        .lines()
        .last()
        .unwrap(),
    )
    .unwrap();
    for (name, frames) in [("Paddle", 11), ("Rock", 1), ("Tap", 1), ("Drain", 1)] {
        let r = &report[name];
        assert_eq!(r["frames"], frames, "{report}");
        assert!(r["max_error"].as_f64().unwrap() < 1e-5, "{name}: {report}");
    }

    // The version this surge reads: domain and liquid only; surge runs it.
    let supported = d.path().join("shot.json");
    let o = export(&python, &blend, &supported, true);
    ok(&o);
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("left out obstacles (2), emitters (1), sinks (1)")
    );
    let sdoc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&supported).unwrap()).unwrap();
    for key in ["obstacles", "emitters", "sinks"] {
        assert!(sdoc.get(key).is_none(), "--only-supported wrote {key}");
    }
    assert_eq!(sdoc["sources"], doc["sources"]);
    let out = d.path().join("out");
    let o = common::surge(
        d.path(),
        &[
            "run",
            supported.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--frames",
            "1",
            "-q",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Frame 0 is the seeded liquid: every particle inside the Blender box or ball (within a
    // particle spacing, half a cell), and each filled as its volume says: particles sit
    // 2 x 2 x 2 per cell, one per 0.025^3 m^3. The box is cell-aligned, so 2% is only jitter
    // at its faces; the ball is 4.8 spacings across and its surface samples are jittered, so
    // 5% (measured: 3072 of 3072 and 460 of 463).
    let frame = surge::output::frame::read(&RunLayout::new(&out).particles(0)).unwrap();
    let p = &frame.particles;
    let spacing = 0.025;
    let (lo, hi) = ([0.1, 0.1, 0.05], [0.4, 0.5, 0.45]);
    let (c, r) = ([0.75, 0.3, 0.3], 0.12);
    let (mut in_box, mut in_ball) = (0usize, 0usize);
    for i in 0..p.len() {
        let x = p.position(i).map(f64::from);
        // Each region carries its Blender object's `velocity` property.
        if (0..3).all(|a| x[a] >= lo[a] - spacing && x[a] <= hi[a] + spacing) {
            in_box += 1;
            assert_eq!(p.velocity(i), [0.2, 0.0, 0.0], "particle {i} at {x:?}");
        } else if (0..3).map(|a| (x[a] - c[a]).powi(2)).sum::<f64>().sqrt() <= r + spacing {
            in_ball += 1;
            assert_eq!(p.velocity(i), [0.0; 3], "particle {i} at {x:?}");
        } else {
            panic!("particle {i} at {x:?} is in neither Blender liquid");
        }
    }
    let cell = spacing * spacing * spacing;
    let want_box = 0.3 * 0.4 * 0.4 / cell;
    let want_ball = 4.0 / 3.0 * std::f64::consts::PI * r * r * r / cell;
    eprintln!(
        "particles: box {in_box} (volume {want_box:.0}), ball {in_ball} (volume {want_ball:.0})"
    );
    assert!(
        (in_box as f64 / want_box - 1.0).abs() < 0.02,
        "{in_box} particles in the box, volume says {want_box}"
    );
    assert!(
        (in_ball as f64 / want_ball - 1.0).abs() < 0.05,
        "{in_ball} particles in the ball, volume says {want_ball}"
    );
}

#[test]
fn bad_blender_properties_are_errors_naming_object_and_property() {
    let Some(python) = common::venv_python() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    build(&python, d.path());
    for (file, object, words) in [
        (
            "bad_cell_size",
            "Domain",
            "property 'cell_size': must be a number, got 'abc'",
        ),
        (
            "bad_velocity",
            "Water",
            "property 'velocity': must be 3 numbers",
        ),
        ("bad_liquid", "Rock", "property 'liquid': must be 'inside'"),
        ("bad_surge", "Drain", "property 'surge': must be one of"),
        (
            "bad_rotated",
            "Water",
            "must be an axis-aligned box or a sphere",
        ),
    ] {
        let scene = d.path().join(format!("{file}.json"));
        let o = export(
            &python,
            &d.path().join(format!("{file}.blend")),
            &scene,
            false,
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{file}: exported anyway");
        assert!(err.contains(&format!("object '{object}'")), "{file}: {err}");
        assert!(err.contains(words), "{file}: {err}");
        assert!(!err.contains("Traceback"), "{file}: {err}");
        assert!(!scene.exists(), "{file}: a scene was written");
    }
}
