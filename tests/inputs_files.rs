//! Bad particle files and tutorial inputs through the real binary (checked as in
//! `tests/inputs.rs`), the inputs that must load, and random mutations that must never panic.

use std::path::Path;
use std::process::Command;

mod common;
use common::inputs::*;
use common::{SURGE, surge};

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
    // The file's own total time and step, resolved: frames 0..=149.
    let loaded = surge::scene::load(&root.join("inputs/fluid_incremental1.json")).unwrap();
    assert_eq!(loaded.scene.time.frames, 149);
}

#[test]
fn shipped_scenes_load() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // README: the dam break has 246,016 particles, tiny "a few hundred". The pool of
    // drop_into_pool fills its box's 48 x 48 x 9 cells inside the wall layer, 8 particles
    // each (165,888), and its ball of radius 0.12 m holds 4/3 pi 0.12^3 / (0.01 m)^3 = 7,238
    // particles of (1 cm)^3 on average: within 2% (the jittered lattice's count in a ball of
    // about 24 spacings across).
    let ball = 4.0 / 3.0 * std::f64::consts::PI * 0.12f64.powi(3) / 0.01f64.powi(3);
    let pool = 48 * 48 * 9 * 8;
    for (name, least, most) in [
        ("dam_break", 246_016, 246_016),
        (
            "drop_into_pool",
            pool + (0.98 * ball) as usize,
            pool + (1.02 * ball) as usize,
        ),
        ("tiny", 100, 999),
    ] {
        let loaded = surge::scene::load(&root.join(format!("scenes/{name}.json")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(loaded.scene.name, name);
        let n = loaded.particles.len();
        assert!((least..=most).contains(&n), "{name}: {n} particles");
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
