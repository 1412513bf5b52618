//! Real-Blender tests of `scripts/blender_export.py` (bpy 4.5 from the venv; see
//! `tests/blender_import.rs`): a shot laid out in Blender (`tests/blender_scene.py build`)
//! becomes a surge scene that surge runs (obstacles, emitters and sinks included), with the
//! liquid, the obstacles (as surge simulated them, frame by frame) and the emitted liquid where
//! Blender has them; a bad property is an error naming the object and the property.

use std::path::{Path, PathBuf};
use std::process::Output;
use surge::output::RunLayout;

mod common;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn py(python: &Path, args: &[&std::ffi::OsStr]) -> Output {
    common::python(python, None, args)
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

fn export(python: &Path, blend: &Path, scene: &Path, liquid_only: bool) -> Output {
    let script = repo("scripts/blender_export.py");
    let mut args: Vec<&std::ffi::OsStr> = vec![
        script.as_os_str(),
        "--".as_ref(),
        scene.as_os_str(),
        "--blend".as_ref(),
        blend.as_os_str(),
    ];
    if liquid_only {
        args.push("--liquid-only".as_ref());
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
    assert_eq!(rock["friction"], 0.5, "{rock}");
    assert!(
        paddle.get("friction").is_none(),
        "no property, free slip: {paddle}"
    );
    // `friction_z_min` = 'no_slip' on the domain: the floor alone.
    assert_eq!(
        dom["friction"],
        serde_json::json!({"x_min": 0.0, "x_max": 0.0, "y_min": 0.0, "y_max": 0.0,
                           "z_min": 1.0, "z_max": 0.0}),
        "{dom}"
    );
    for o in obstacles {
        let ply = full.with_file_name(o["path"].as_str().unwrap());
        let head = std::fs::read(&ply).unwrap();
        assert!(head.starts_with(b"ply\nformat binary_little_endian 1.0\n"));
    }
    // Blender's gravity off is zero gravity; an ico sphere is a sphere (its box is not a cube);
    // a cylinder as tall as it is wide, its vertices at one distance from its centre too, is not.
    let ico = d.path().join("ico/shot.json");
    ok(&export(
        &python,
        &d.path().join("ico_no_gravity.blend"),
        &ico,
        false,
    ));
    let idoc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&ico).unwrap()).unwrap();
    assert_eq!(v3(&idoc["gravity"]), [0.0, 0.0, 0.0], "{idoc}");
    let iball = &idoc["sources"][0];
    assert_eq!(iball["type"], "sphere", "{iball}");
    assert!(
        close(v3(&iball["center"]), [0.75, 0.3, 0.3], 1e-6),
        "{iball}"
    );
    assert!(
        (iball["radius"].as_f64().unwrap() - 0.12).abs() < 1e-6,
        "{iball}"
    );
    let can = &idoc["obstacles"][0];
    assert_eq!(can["type"], "mesh", "a cylinder is no sphere: {can}");
    assert_eq!(can["path"], "Can.ply", "{can}");
    assert_eq!(v3(&doc["gravity"]), [0.0, 0.0, -9.81], "gravity on: {doc}");
    // Emitters in name order: Inlet (a cube: a box), Tap (a UV sphere: a sphere).
    let inlet = &doc["emitters"][0];
    assert_eq!(inlet["type"], "box", "{inlet}");
    assert!(
        close(v3(&inlet["min"]), [0.86, 0.41, 0.56], 1e-6),
        "{inlet}"
    );
    assert!(
        close(v3(&inlet["max"]), [0.94, 0.49, 0.64], 1e-6),
        "{inlet}"
    );
    assert_eq!(v3(&inlet["velocity"]), [-0.5, 0.0, 0.0]);
    assert_eq!(inlet["start"], 0.0, "no `start`: from the first frame");
    let tap = &doc["emitters"][1];
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
    for (name, frames) in [
        ("Paddle", 11),
        ("Rock", 1),
        ("Inlet", 1),
        ("Tap", 1),
        ("Drain", 1),
    ] {
        let r = &report[name];
        assert_eq!(r["frames"], frames, "{report}");
        assert!(r["max_error"].as_f64().unwrap() < 1e-5, "{name}: {report}");
    }

    // A mesh-shaped emitter (a cone) is written as a mesh file with the keys obstacles use.
    let mesh_scene = d.path().join("mesh_emitter/shot.json");
    ok(&export(
        &python,
        &d.path().join("mesh_emitter.blend"),
        &mesh_scene,
        false,
    ));
    let mdoc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&mesh_scene).unwrap()).unwrap();
    let cone = &mdoc["emitters"][1];
    assert_eq!(cone["type"], "mesh", "{cone}");
    assert_eq!(cone["path"], "Tap.ply", "{cone}");
    assert_eq!(v3(&cone["velocity"]), [0.0, 0.0, -1.0]);
    assert!(cone.get("keyframes").is_none(), "{cone}");
    assert!(mesh_scene.with_file_name("Tap.ply").is_file());
    assert_eq!(
        mdoc["emitters"][0], doc["emitters"][0],
        "the Inlet is unchanged"
    );
    // ... with a keyframed sink (the Drain slides 0.1 m in x over the shot).
    let keys = mdoc["sinks"][0]["keyframes"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", mdoc["sinks"]));
    let x = |k: &serde_json::Value| k["translate"][0].as_f64().unwrap();
    let (first, last) = (keys.first().unwrap(), keys.last().unwrap());
    assert!(
        ((x(last) - x(first)).abs() - 0.1).abs() < 1e-6,
        "the Drain's keys: {}",
        mdoc["sinks"]
    );
    // surge runs it: the cone emits from frame 3 (t = 2/24 s) at 1 m/s downwards, so every
    // particle added by frame 4 (creation order: after frame 0's) lies under the cone, within
    // its 0.05 m radius plus a particle spacing in x and y.
    let mout = d.path().join("mesh_out");
    let o = common::surge(
        d.path(),
        &[
            "run",
            mesh_scene.to_str().unwrap(),
            "-o",
            mout.to_str().unwrap(),
            "--frames",
            "4",
            "-q",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let layout = RunLayout::new(&mout);
    let first = surge::output::frame::read(&layout.particles(0)).unwrap();
    let last = surge::output::frame::read(&layout.particles(4)).unwrap();
    let (n0, n4) = (first.particles.len(), last.particles.len());
    assert!(n4 > n0, "the mesh emitter added nothing ({n0} -> {n4})");
    // The Inlet's liquid (0.08 m cube at (0.9, 0.45, 0.6), -0.5 m/s in x) stays within
    // 0.15 m of its centre in x (it moves 0.083 m in these 4 frames at 24 fps) and 0.1 m in
    // y; anything else would be emitted elsewhere.
    let mut near_tap = 0;
    for i in n0..n4 {
        let x = last.particles.position(i).map(f64::from);
        let r = ((x[0] - 0.5).powi(2) + (x[1] - 0.3).powi(2)).sqrt();
        if r <= 0.05 + 0.025 && x[2] > 0.45 && x[2] < 0.8 {
            near_tap += 1;
        } else {
            assert!(
                (x[0] - 0.9).abs() < 0.15 && (x[1] - 0.45).abs() < 0.1,
                "particle {i} at {x:?} is neither under the cone nor at the Inlet"
            );
        }
    }
    eprintln!("mesh emitter: {n0} -> {n4} particles, {near_tap} under the cone");
    assert!(near_tap > 0, "no emitted particle under the cone");

    // `--liquid-only`: the sources alone, the rest left out and said so.
    let liquid = d.path().join("liquid.json");
    let o = export(&python, &blend, &liquid, true);
    ok(&o);
    // Nor are their mesh files written.
    let plys: Vec<_> = std::fs::read_dir(liquid.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "ply"))
        .map(|e| e.file_name())
        .collect();
    assert!(plys.is_empty(), "--liquid-only wrote {plys:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("left out obstacles (2), emitters (2), sinks (1)")
    );
    let ldoc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&liquid).unwrap()).unwrap();
    for key in ["obstacles", "emitters", "sinks"] {
        assert!(ldoc.get(key).is_none(), "--liquid-only wrote {key}");
    }
    assert_eq!(ldoc["sources"], doc["sources"]);

    // surge runs the whole exported scene: obstacles (a keyframed mesh and a static one),
    // emitters and a sink.
    let out = d.path().join("out");
    let frames = 4;
    let o = common::surge(
        d.path(),
        &[
            "run",
            full.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--frames",
            &frames.to_string(),
            "-q",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The obstacles surge simulated against (OUT/obstacles/frame_N.ply, both meshes moved by
    // their poses at frame N) against Blender's own world vertices at Blender frame 1 + N:
    // every vertex of each within 1e-5 m of one of the other (single floats; the paddle moves
    // 0.04 m and turns 9 degrees a frame, so a frame off would miss by centimetres).
    let report: serde_json::Value = serde_json::from_str(
        ok(&py(
            &python,
            &[
                repo("tests/blender_scene.py").as_os_str(),
                "obstacles".as_ref(),
                out.as_os_str(),
                blend.as_os_str(),
                frames.to_string().as_ref(),
            ],
        ))
        .lines()
        .last()
        .unwrap(),
    )
    .unwrap();
    eprintln!("obstacles against Blender: {report}");
    for n in 0..=frames {
        let r = &report[n.to_string()];
        assert!(r["vertices"].as_u64().unwrap() > 0, "frame {n}: {report}");
        assert!(
            r["max_error"].as_f64().unwrap() < 1e-5,
            "frame {n}: the obstacles are not where Blender has them: {report}"
        );
    }
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
    // The emitters add liquid where Blender has them. By frame 1 (1/24 s) only the Inlet has
    // started (the Tap starts at Blender frame 3): particles are kept in creation order, so
    // every particle past frame 0's count is the Inlet's, inside its box grown by how far
    // liquid can move in 1/24 s (0.5 m/s, plus g t^2 / 2: 0.03 m; 0.05 allows for the FLIP
    // velocity update).
    let n0 = p.len();
    let f1 = surge::output::frame::read(&RunLayout::new(&out).particles(1)).unwrap();
    let q = &f1.particles;
    assert!(
        q.len() > n0,
        "the Inlet added nothing: {} -> {}",
        n0,
        q.len()
    );
    let (ilo, ihi) = ([0.86, 0.41, 0.56], [0.94, 0.49, 0.64]);
    for i in n0..q.len() {
        let x = q.position(i).map(f64::from);
        assert!(
            (0..3).all(|a| x[a] >= ilo[a] - 0.05 && x[a] <= ihi[a] + 0.05),
            "particle {i} at {x:?} is not near the Inlet"
        );
    }
    let last = surge::output::frame::read(&RunLayout::new(&out).particles(frames)).unwrap();
    let lines = surge::output::stats::read(&out.join("stats.jsonl")).unwrap();
    let sunk: u64 = (lines.iter())
        .filter_map(|l| l["emission"]["removed_sinks"][0].as_u64())
        .sum();
    eprintln!(
        "particles: frame 0 {n0}, frame 1 {}, frame {frames} {}; the Drain took {sunk}",
        q.len(),
        last.particles.len()
    );
    // The sink acts: the Ball (reaching x = 0.87 m) lands on the Drain's box (from x = 0.85 m,
    // z 0.05-0.15 m) by frame 4 (a 0.13 m fall, 0.16 s; 3 particles taken, session 41).
    assert!(sunk > 0, "the Drain took nothing in {frames} frames");
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
        (
            "bad_start",
            "Tap",
            "property 'start': must be a number, got 'soon'",
        ),
        (
            "bad_friction",
            "Domain",
            "property 'friction_z_min': must be 0 (free slip) to 1 (no slip), 'slip' or 'no_slip'",
        ),
        (
            "bad_obstacle_friction",
            "Rock",
            "property 'friction': must be 0 (free slip) to 1 (no slip), got 1.5",
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
