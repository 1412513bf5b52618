//! `surge run` through the real binary: outputs, determinism across thread counts, the tutorial
//! input, overwrite refusal.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{SURGE, outputs, surge_with_threads as surge};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "surge failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn tiny_scene_writes_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let scene = root().join("scenes/tiny.json");
    let o = surge(dir.path(), &["-q", "run", scene.to_str().unwrap()], None);
    ok(&o);
    assert!(
        o.stderr.is_empty(),
        "-q prints nothing: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Default output folder: out/<name>/.
    let out = dir.path().join("out/tiny");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("scene.json")).unwrap()).unwrap();
    let last = s["time"]["frames"].as_u64().unwrap() as u32;
    assert_eq!(s["solver"]["flip_ratio"], 0.95, "defaults are filled in");
    let stats = surge::output::stats::read(&out.join("stats.jsonl")).unwrap();
    assert_eq!(stats.len(), last as usize + 1);
    let mut count = None;
    for f in 0..=last {
        let name = format!("frame_{f:04}");
        let frame = surge::output::frame::read(&out.join(format!("particles/{name}.bin"))).unwrap();
        assert_eq!(frame.frame, f);
        assert_eq!(frame.time, f as f64 / 30.0);
        assert!(out.join(format!("meshes/{name}.ply")).is_file());
        assert!(out.join(format!("previews/{name}.png")).is_file());
        let n = *count.get_or_insert(frame.particles.len());
        assert_eq!(frame.particles.len(), n, "particle count is constant");
        let line = &stats[f as usize];
        // stats.jsonl is assembled from the per-frame files, line for line.
        let own = std::fs::read_to_string(out.join(format!("stats/{name}.json"))).unwrap();
        assert_eq!(
            &serde_json::from_str::<serde_json::Value>(&own).unwrap(),
            line
        );
        assert_eq!(line["frame"], f);
        assert_eq!(line["particles"], n);
        for key in ["time", "substeps", "pressure_iterations_max", "max_speed"] {
            assert!(line.get(key).is_some(), "stats lack {key}");
        }
        for key in ["mesh", "preview", "io", "simulate"] {
            assert!(
                line["seconds"].get(key).is_some(),
                "stats lack seconds.{key}"
            );
        }
    }
    assert!(
        !out.join(format!("particles/frame_{:04}.bin", last + 1))
            .exists()
    );
    // Frame 0 is the initial state: the seeded scene.
    let loaded = surge::scene::load(&root().join("scenes/tiny.json")).unwrap();
    let f0 = surge::output::frame::read(&out.join("particles/frame_0000.bin")).unwrap();
    assert_eq!(f0.particles, loaded.particles);
    // No temporary files are left behind.
    assert!(
        outputs(&out)
            .keys()
            .all(|k| !k.to_string_lossy().contains(".tmp"))
    );
}

/// Byte-identical outputs for 1, 2 and 3 threads, at a size where every parallel loop splits:
/// the default dam break (246,016 particles, far above the particle loops' `with_min_len(4096)`,
/// the cell sort's 8,192 and the reductions' `MIN_TASK = 32768`; 102 x 34 x 51 = 176,868 cells)
/// for 2 frames, comparing every output file (particles, meshes, previews, stats less their
/// timings, checkpoints, scene).
#[test]
fn identical_bytes_with_one_two_and_three_threads() {
    let dir = tempfile::tempdir().unwrap();
    for t in ["1", "2", "3"] {
        ok(&surge(
            dir.path(),
            &["-q", "run", "--frames", "2", "-o", t],
            Some(t),
        ));
    }
    let one = outputs(&dir.path().join("1"));
    let f2 = surge::output::frame::read(&dir.path().join("1/particles/frame_0002.bin")).unwrap();
    assert_eq!(f2.particles.len(), 246_016);
    // particles, meshes, previews: 3 frames each; stats/: 3; checkpoints; scene, stats.jsonl.
    assert!(one.len() >= 3 * 4 + 3, "{} files", one.len());
    for t in ["2", "3"] {
        let other = outputs(&dir.path().join(t));
        assert_eq!(
            one.keys().collect::<Vec<_>>(),
            other.keys().collect::<Vec<_>>(),
            "file lists of 1 and {t} threads"
        );
        for (k, v) in &one {
            assert!(
                v == &other[k],
                "{} differs between 1 and {t} threads",
                k.display()
            );
        }
    }
}

#[test]
fn tutorial_input_writes_part_frames_like_the_tutorial() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tut");
    let o = Command::new(SURGE)
        .current_dir(root())
        .args(["-q", "run", "inputs/fluid.json", "--frames", "2", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    ok(&o);
    // Frame 0 is the initial state, written exactly as the tutorial's input file.
    let input = std::fs::read_to_string(root().join("inputs/particles.in")).unwrap();
    assert_eq!(
        std::fs::read_to_string(out.join("fluid.000.part")).unwrap(),
        input
    );
    for f in 1..=2u32 {
        let text = std::fs::read_to_string(out.join(format!("fluid.{f:03}.part"))).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("33389"));
        let bin =
            surge::output::frame::read(&out.join(format!("particles/frame_{f:04}.bin"))).unwrap();
        assert_eq!(bin.particles.len(), 33389);
        assert!((bin.time - f as f64 * 30.0 * 0.001111112).abs() < 1e-12);
        for (i, l) in lines.enumerate() {
            let words: Vec<&str> = l.split(' ').collect();
            assert_eq!(words.len(), 6, "line {}: {l}", i + 2);
            let values = bin
                .particles
                .position(i)
                .into_iter()
                .chain(bin.particles.velocity(i));
            for (w, v) in words.iter().zip(values) {
                // Each number is C's %g of the f32 value (widened to double).
                assert_eq!(
                    *w,
                    surge::output::part::format_g(v as f64),
                    "line {}",
                    i + 2
                );
                let back: f32 = w.parse().unwrap();
                assert!((back - v).abs() <= 1e-5 * v.abs().max(1e-30));
            }
        }
        assert!(text.ends_with('\n'));
    }
    assert!(!out.join("fluid.003.part").exists());
    assert!(out.join("stats.jsonl").is_file() && out.join("meshes").is_dir());
}

#[test]
fn refuses_a_non_empty_output_folder_unless_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let scene = root().join("scenes/tiny.json");
    let scene = scene.to_str().unwrap();
    let out = dir.path().join("o");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let o = surge(
        dir.path(),
        &["-q", "run", scene, "-o", "o", "--frames", "2"],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not empty") && err.contains("--overwrite"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        1,
        "nothing written"
    );
    // --overwrite writes the run, replaces an earlier run's outputs, keeps other files.
    ok(&surge(
        dir.path(),
        &[
            "-q",
            "run",
            scene,
            "-o",
            "o",
            "--overwrite",
            "--frames",
            "3",
        ],
        None,
    ));
    assert!(out.join("particles/frame_0003.bin").is_file());
    ok(&surge(
        dir.path(),
        &[
            "-q",
            "run",
            scene,
            "-o",
            "o",
            "--overwrite",
            "--frames",
            "2",
        ],
        None,
    ));
    assert!(out.join("particles/frame_0002.bin").is_file());
    assert!(
        !out.join("particles/frame_0003.bin").exists(),
        "old frames removed"
    );
    assert_eq!(
        surge::output::stats::read(&out.join("stats.jsonl"))
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        std::fs::read_to_string(out.join("notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn output_path_that_cannot_be_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), "x").unwrap();
    let scene = root().join("scenes/tiny.json");
    let o = surge(
        dir.path(),
        &["-q", "run", scene.to_str().unwrap(), "-o", "file/sub"],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("file/sub") && err.contains("fix:"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("file")).unwrap(),
        "x"
    );
}

#[test]
fn verbose_prints_per_frame_figures() {
    let dir = tempfile::tempdir().unwrap();
    // tiny.json at 50 fps: one substep a frame (at its 30 fps the substep bound
    // `solver.surface_wave_step`, 0.32 sqrt(h / |g|) = 0.023 s, makes two).
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("scenes/tiny.json")).unwrap())
            .unwrap();
    v["time"]["fps"] = 50.into();
    let scene = dir.path().join("tiny50.json");
    std::fs::write(&scene, v.to_string()).unwrap();
    let o = surge(
        dir.path(),
        &[
            "-v",
            "run",
            scene.to_str().unwrap(),
            "-o",
            "o",
            "--frames",
            "2",
        ],
        None,
    );
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("frame 1:") && err.contains("frame 2:"),
        "{err}"
    );
    assert!(
        err.contains("substep") && err.contains("pressure iterations"),
        "{err}"
    );
    // One substep a frame: "1 substep", never "1 substeps".
    assert!(err.contains(", 1 substep, pressure"), "{err}");
    assert!(!err.contains(" 1 substeps"), "{err}");
}

#[test]
fn clap_rejects_zero_frames() {
    let dir = tempfile::tempdir().unwrap();
    let o = surge(dir.path(), &["run", "x.json", "--frames", "0"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(!dir.path().join("out").exists());
}

#[test]
fn tutorial_input_found_from_another_working_directory() {
    // `particles` is relative to the working directory in the tutorial; from elsewhere it is
    // found relative to the json's folder's parents.
    let dir = tempfile::tempdir().unwrap();
    let json = root().join("inputs/fluid_incremental1.json");
    let o = surge(
        dir.path(),
        &[
            "-q",
            "run",
            json.to_str().unwrap(),
            "--frames",
            "1",
            "-o",
            "o",
        ],
        None,
    );
    ok(&o);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("o/fluid.000.part")).unwrap(),
        std::fs::read_to_string(root().join("inputs/test_particles.in")).unwrap()
    );
}

#[test]
fn default_scene_runs_without_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let o = surge(dir.path(), &["-q", "run", "--frames", "1"], None);
    ok(&o);
    let out = dir.path().join("out/dam_break");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("scene.json")).unwrap()).unwrap();
    assert_eq!(s["name"], "dam_break");
    assert_eq!(s["time"]["frames"], 1);
    let f1 = surge::output::frame::read(&out.join("particles/frame_0001.bin")).unwrap();
    // The README's figure for the default scene: its column fills 31 x 32 x 31 cells, 8
    // particles each.
    assert_eq!(f1.particles.len(), 246_016);
    // Running again refuses to overwrite.
    let o = surge(dir.path(), &["-q", "run", "--frames", "1"], None);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn a_source_reaching_outside_the_domain_is_noted_not_refused() {
    let dir = tempfile::tempdir().unwrap();
    let domain = r#""domain": {"lower": [0, 0, 0], "cell_size": 0.1, "resolution": [6, 6, 6]}"#;
    // Up to the wall (min at the domain's corner): the usual way to fill a tank, no note.
    std::fs::write(
        dir.path().join("wall.json"),
        format!(
            r#"{{{domain}, "sources": [{{"type": "box", "min": [0, 0, 0], "max": [0.3, 0.3, 0.3]}}], "time": {{"frames": 1}}}}"#
        ),
    )
    .unwrap();
    // A ball half outside the tank: noted, and the run goes on.
    std::fs::write(
        dir.path().join("out.json"),
        format!(
            r#"{{{domain}, "sources": [{{"type": "sphere", "center": [0.55, 0.3, 0.3], "radius": 0.2}}], "time": {{"frames": 1}}}}"#
        ),
    )
    .unwrap();
    let o = surge(dir.path(), &["run", "wall.json", "-o", "a"], None);
    ok(&o);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("note:"));
    let o = surge(dir.path(), &["run", "out.json", "-o", "b"], None);
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("note: out.json: sources[0] reaches outside the domain")
            && err.contains("along x"),
        "{err}"
    );
    let o = surge(dir.path(), &["-q", "run", "out.json", "-o", "c"], None);
    ok(&o);
    assert!(o.stderr.is_empty());
}
