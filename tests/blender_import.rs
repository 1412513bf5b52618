//! Real-Blender test of `scripts/blender_import.py` (bpy 4.5 from the venv that
//! `scripts/setup_python.sh` makes; `scripts/test.sh` passes it as SURGE_PYTHON). Skipped when
//! the venv is missing, except with CI=true, where that fails the test.

use std::path::Path;
use std::process::Command;
use surge::output::RunLayout;

mod common;
use common::venv_python;

/// A falling ball over 6 frames; frame 3 has no liquid (an empty PLY).
fn make_sequence(root: &Path) -> usize {
    let s: surge::scene::Scene = serde_json::from_str(
        r#"{"domain": {"lower": [0, 0, 0], "cell_size": 0.05, "resolution": [12, 12, 16]},
            "sources": [{"type": "sphere", "center": [0.3, 0.3, 0.5], "radius": 0.15, "velocity": [0.5, 0, 0]}],
            "time": {"fps": 30, "frames": 5}}"#,
    )
    .unwrap();
    common::write_run(root, &s, 5, 3);
    let o = Command::new(env!("CARGO_BIN_EXE_surge"))
        .args(["mesh", root.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    6
}

#[test]
fn blender_imports_the_sequence_as_one_animated_object() {
    let Some(py) = venv_python() else { return };
    let d = tempfile::tempdir().unwrap();
    let n = make_sequence(d.path());
    let layout = RunLayout::new(d.path());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = Command::new("timeout")
        .arg("300")
        .arg(&py)
        .arg(root.join("tests/blender_check.py"))
        .arg(root.join("scripts/blender_import.py"))
        .arg(layout.meshes_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "blender check failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(doc["start"], 0);
    assert_eq!(doc["end"], (n - 1) as u64);
    let frames = doc["frames"].as_array().unwrap();
    assert_eq!(frames.len(), n);
    let mut prev: Option<(String, f64)> = None;
    for (f, rec) in frames.iter().enumerate() {
        let bytes = std::fs::read(layout.mesh(f as u32)).unwrap();
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
        assert_eq!(
            rec["objects"], 1,
            "one object for the whole sequence: {rec}"
        );
        if f == 3 {
            assert_eq!((nv, nf), (0, 0));
            continue;
        }
        assert!(nv > 100, "frame {f}: {nv} vertices");
        assert_eq!(rec["all_smooth"], true, "{rec}");
        assert_eq!(
            rec["velocity"],
            serde_json::json!(["FLOAT_VECTOR", "POINT"]),
            "{rec}"
        );
        assert!(rec["velocity_max_error"].as_f64().unwrap() < 1e-6, "{rec}");
        assert!(
            rec["normal_min_dot"].as_f64().unwrap() > 0.99,
            "custom normals not applied: {rec}"
        );
        let cur = (
            rec["mesh"].as_str().unwrap().to_string(),
            rec["co_sum"].as_f64().unwrap(),
        );
        if let Some(p) = &prev {
            assert_ne!(p.0, cur.0, "frame {f}: mesh datablock did not change");
            assert_ne!(p.1, cur.1, "frame {f}: vertex positions did not change");
        }
        prev = Some(cur);
    }

    // The UI operator, with frame offset 10: Blender frame 10 shows PLY frame 0.
    let (nv0, nf0) =
        surge::output::ply::header_counts(&std::fs::read(layout.mesh(0)).unwrap()).unwrap();
    assert_eq!(
        doc["ui_object_counts_at_frame_10"],
        serde_json::json!([nv0, nf0]),
        "{doc}"
    );

    // Headless entry point: `python scripts/blender_import.py -- OUT/meshes --save file.blend`.
    let blend = d.path().join("shot.blend");
    let o = Command::new("timeout")
        .arg("300")
        .arg(&py)
        .arg(root.join("scripts/blender_import.py"))
        .arg("--")
        .arg(layout.meshes_dir())
        .arg("--save")
        .arg(&blend)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("imported"));
    assert!(blend.exists());
}
