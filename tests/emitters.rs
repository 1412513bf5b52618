//! Emitters, sinks, open domain faces and `limits.max_particles` (issue 12), through the binary:
//! flow rate, a tank that empties through an open face, exact resume in the middle of emission
//! and thread-count independence, the particle cap, and one test per bad input.

mod common;

use common::inputs::{expect_failure, native};
use common::{outputs, surge, surge_with_threads};
use std::path::Path;
use std::process::Output;
use surge::output::frame;

fn ok(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "surge failed ({:?}): {err}", o.status);
    err
}

fn stats(out: &Path) -> Vec<serde_json::Value> {
    surge::output::stats::read(&out.join("stats.jsonl")).unwrap()
}

/// A 1.2 x 0.4 x 0.5 m channel (5 cm cells) open at x_max, fed by a box emitter of
/// 0.3 x 0.25 m cross-section moving at 1 m/s along x; `extra` adds keys.
fn channel(extra: &str) -> String {
    format!(
        r#"{{
    "domain": {{ "lower": [0, 0, 0], "cell_size": 0.05, "resolution": [24, 8, 10],
                "boundaries": {{ "x_max": "open" }} }},
    "sources": [],
    "emitters": [ {{ "type": "box", "min": [0.05, 0.05, 0.05], "max": [0.2, 0.35, 0.3],
                    "velocity": [1.0, 0, 0] }} ],
    "output": {{ "meshes": false, "previews": false, "checkpoint_every": 2 }},
    {extra}
}}"#
    )
}

/// Particles added per second x particle volume = v x A within 2% once the flow is established,
/// the emitter region stays full, and the outflow through the open face balances the inflow.
#[test]
fn flow_rate_of_a_box_emitter_into_an_open_channel() {
    let dir = tempfile::tempdir().unwrap();
    let scene = channel(r#""time": { "fps": 30, "frames": 60 }, "solver": { "min_substeps": 3 }"#);
    std::fs::write(dir.path().join("c.json"), scene).unwrap();
    ok(&surge(dir.path(), &["-q", "run", "c.json", "-o", "out"]));
    let lines = stats(&dir.path().join("out"));
    let vp = 0.025f64.powi(3);
    let (v, area) = (1.0, 0.3 * 0.25);
    // Established: from frame 10 (0.33 s) on.
    let steady = &lines[10..];
    let added: u64 = steady
        .iter()
        .map(|l| l["emission"]["added"][0].as_u64().unwrap())
        .sum();
    let seconds = steady.len() as f64 / 30.0;
    let rate = added as f64 * vp / seconds;
    assert!(
        (rate / (v * area) - 1.0).abs() < 0.02,
        "flow {rate} m^3/s, v x A = {}",
        v * area
    );
    // The outflow catches up: over the last second the open face removed within 15% of what
    // came in, and the count changed by less than 10%.
    let last = &lines[30..];
    let removed: u64 = last
        .iter()
        .map(|l| l["emission"]["removed_open"].as_u64().unwrap())
        .sum();
    let added_last: u64 = last
        .iter()
        .map(|l| l["emission"]["added"][0].as_u64().unwrap())
        .sum();
    assert!(
        (removed as f64 / added_last as f64 - 1.0).abs() < 0.15,
        "removed {removed}, added {added_last}"
    );
    let count = |l: &serde_json::Value| l["particles"].as_u64().unwrap() as f64;
    let (at_1s, at_2s) = (count(&lines[30]), count(&lines[60]));
    assert!(
        (at_2s / at_1s - 1.0).abs() < 0.10,
        "the count went from {at_1s} at 1 s to {at_2s} at 2 s"
    );
    // The emitter's region is full: its 0.15 x 0.3 x 0.25 m hold about V / vp particles.
    let f = frame::read(&dir.path().join("out/particles/frame_0060.bin")).unwrap();
    let p = &f.particles;
    let inside = (0..p.len())
        .filter(|&i| {
            let q = p.position(i);
            q[0] > 0.05 && q[0] < 0.2 && q[1] > 0.05 && q[1] < 0.35 && q[2] > 0.05 && q[2] < 0.3
        })
        .count();
    let expected = 0.15 * 0.3 * 0.25 / vp;
    assert!(
        (inside as f64 / expected - 1.0).abs() < 0.1,
        "{inside} particles in the emitter, {expected} expected"
    );
}

/// A dam break in a tank on a slope (gravity tilted towards x_max) whose x_max face is open:
/// every particle has left by twice the ballistic estimate, and no written frame has a particle
/// beyond the open face's bound.
#[test]
fn dam_break_through_an_open_face_empties_the_tank() {
    let dir = tempfile::tempdir().unwrap();
    let (gx, length) = (4.9, 0.9);
    let estimate = (2.0f64 * length / gx).sqrt();
    let frames = (2.0 * estimate * 30.0).ceil() as u32;
    let scene = format!(
        r#"{{
    "domain": {{ "lower": [0, 0, 0], "cell_size": 0.05, "resolution": [20, 6, 10],
                "boundaries": {{ "x_max": "open" }} }},
    "gravity": [{gx}, 0, -8.5],
    "sources": [ {{ "type": "box", "min": [0, 0, 0], "max": [0.3, 0.3, 0.3] }} ],
    "time": {{ "fps": 30, "frames": {frames} }},
    "output": {{ "meshes": false, "previews": false }}
}}"#
    );
    std::fs::write(dir.path().join("d.json"), scene).unwrap();
    ok(&surge(dir.path(), &["-q", "run", "d.json", "-o", "out"]));
    let lines = stats(&dir.path().join("out"));
    assert_eq!(lines[0]["particles"], 800);
    let last = lines.last().unwrap();
    assert_eq!(last["particles"], 0, "after {} s: {last}", 2.0 * estimate);
    let removed: u64 = lines
        .iter()
        .filter_map(|l| l["emission"]["removed_open"].as_u64())
        .sum();
    assert_eq!(removed, 800);
    // The liquid region ends at 0.95 m.
    for f in 0..=frames {
        let pf = frame::read(&dir.path().join(format!("out/particles/frame_{f:04}.bin"))).unwrap();
        let p = &pf.particles;
        for i in 0..p.len() {
            assert!(
                p.position(i)[0] < 0.95,
                "frame {f}: particle {i} at {:?}",
                p.position(i)
            );
        }
    }
}

/// An emitter active from 0.1 to 0.3 s and a sink: 1 and 2 threads give byte-identical outputs,
/// and a run stopped at frame 5 (in the middle of emission) and resumed equals both.
#[test]
fn resume_in_the_middle_of_emission_and_threads_are_identical() {
    let dir = tempfile::tempdir().unwrap();
    let scene = r#"{
    "domain": { "lower": [0, 0, 0], "cell_size": 0.05, "resolution": [12, 8, 10],
                "boundaries": { "z_min": "open" } },
    "sources": [ { "type": "box", "min": [0, 0, 0.1], "max": [0.2, 0.4, 0.2] } ],
    "emitters": [ { "type": "sphere", "center": [0.3, 0.2, 0.35], "radius": 0.08,
                    "velocity": [0.5, 0, -1], "start": 0.1, "end": 0.3 } ],
    "sinks": [ { "type": "box", "min": [0.45, 0.0, 0.0], "max": [0.6, 0.4, 0.2] } ],
    "time": { "fps": 30, "frames": 12 },
    "output": { "checkpoint_every": 5, "previews": true, "meshes": true }
}"#;
    std::fs::write(dir.path().join("e.json"), scene).unwrap();
    let run = |name: &str, threads: &str, frames: &str| {
        ok(&surge_with_threads(
            dir.path(),
            &["-q", "run", "e.json", "-o", name, "--frames", frames],
            Some(threads),
        ))
    };
    run("one", "1", "12");
    run("two", "2", "12");
    run("part", "2", "5");
    ok(&surge(
        dir.path(),
        &["-q", "resume", "part", "--frames", "12"],
    ));
    let lines = stats(&dir.path().join("one"));
    let added: u64 = lines
        .iter()
        .filter_map(|l| l["emission"]["added"][0].as_u64())
        .sum();
    assert!(added > 100, "the emitter added {added}");
    let counts: Vec<u64> = lines
        .iter()
        .map(|l| l["particles"].as_u64().unwrap())
        .collect();
    assert!(counts.windows(2).any(|w| w[0] != w[1]), "{counts:?}");
    for other in ["two", "part"] {
        // The resumed run's scene.json differs in nothing; its checkpoints may differ in set.
        let (a, b) = (dir.path().join("one"), dir.path().join(other));
        common::assert_same_outputs(&a, &b, &["checkpoints"], other);
    }
}

/// Emission stops at `limits.max_particles`, the run warns once and completes.
#[test]
fn max_particles_caps_emission_with_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let scene =
        channel(r#""time": { "fps": 30, "frames": 20 }, "limits": { "max_particles": 1500 }"#);
    std::fs::write(dir.path().join("c.json"), scene).unwrap();
    let err = ok(&surge(dir.path(), &["run", "c.json", "-o", "out"]));
    assert_eq!(err.matches("limits.max_particles").count(), 1, "{err}");
    let lines = stats(&dir.path().join("out"));
    let max = lines.iter().map(|l| l["particles"].as_u64().unwrap()).max();
    assert_eq!(max, Some(1500), "the cap is reached and never passed");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l["particle_cap_reached"] == true)
            .count(),
        1
    );
    assert!(lines.iter().any(|l| l["emission"]["capped"] == true));
}

fn with_emitter(emitter: &str) -> String {
    native(&format!(r#""sources": [], "emitters": [{emitter}]"#))
}

#[test]
fn bad_emitter_outside_the_domain() {
    expect_failure(
        "s.json",
        &with_emitter(r#"{"type": "box", "min": [2, 2, 2], "max": [3, 3, 3]}"#),
        &[],
        &["`emitters[0]`", "outside the domain"],
    );
}

#[test]
fn bad_emitter_zero_size() {
    expect_failure(
        "s.json",
        &with_emitter(r#"{"type": "box", "min": [0.1, 0.1, 0.1], "max": [0.3, 0.1, 0.3]}"#),
        &[],
        &["`emitters[0].max[1]`", "zero size"],
    );
    expect_failure(
        "s.json",
        &with_emitter(r#"{"type": "sphere", "center": [0.3, 0.3, 0.3], "radius": 0}"#),
        &[],
        &["`emitters[0].radius`"],
    );
}

#[test]
fn bad_emitter_nan_velocity() {
    expect_failure(
        "s.json",
        &with_emitter(
            r#"{"type": "box", "min": [0.1, 0.1, 0.1], "max": [0.3, 0.3, 0.3], "velocity": [0, NaN, 0]}"#,
        ),
        &[],
        &["NaN", "finite"],
    );
}

#[test]
fn bad_emitter_start_after_end() {
    expect_failure(
        "s.json",
        &with_emitter(
            r#"{"type": "box", "min": [0.1, 0.1, 0.1], "max": [0.3, 0.3, 0.3], "start": 2, "end": 1}"#,
        ),
        &[],
        &["`emitters[0].end`", "before start"],
    );
}

#[test]
fn bad_emitter_missing_shape_key() {
    expect_failure(
        "s.json",
        &with_emitter(r#"{"type": "sphere", "center": [0.3, 0.3, 0.3]}"#),
        &[],
        &["emitters[0]", "`radius`"],
    );
}

#[test]
fn bad_sink_outside_the_domain() {
    expect_failure(
        "s.json",
        &native(&format!(
            r#""sources": [{}], "sinks": [{{"type": "sphere", "center": [5, 5, 5], "radius": 0.1}}]"#,
            common::inputs::BOX
        )),
        &[],
        &["`sinks[0]`", "outside the domain"],
    );
}

#[test]
fn bad_boundary_name() {
    let text = format!(
        r#"{{"domain": {{"lower": [0, 0, 0], "cell_size": 0.1, "resolution": [6, 6, 6], "boundaries": {{"x_top": "open"}}}}, "sources": [{}]}}"#,
        common::inputs::BOX
    );
    expect_failure("s.json", &text, &[], &["x_top", "x_min"]);
    let text = format!(
        r#"{{"domain": {{"lower": [0, 0, 0], "cell_size": 0.1, "resolution": [6, 6, 6], "boundaries": {{"x_max": "opened"}}}}, "sources": [{}]}}"#,
        common::inputs::BOX
    );
    expect_failure("s.json", &text, &[], &["opened", "open"]);
}

#[test]
fn bad_max_particles() {
    expect_failure(
        "s.json",
        &native(&format!(
            r#""sources": [{}], "limits": {{"max_particles": 0}}"#,
            common::inputs::BOX
        )),
        &[],
        &["`limits.max_particles`"],
    );
}

/// An emitter faster than the CFL limit at the smallest substep runs, with a warning that
/// gives the number: 2000 m/s over the shortest substep, a 30 fps frame cut into the
/// `max_substeps` 64 (1 / 1920 s), is 1.042 m, 10.42 of the 0.1 m cells.
#[test]
fn emitter_velocity_beyond_cfl_warns_with_the_number() {
    let dir = tempfile::tempdir().unwrap();
    let text = native(
        r#""sources": [], "emitters": [{"type": "box", "min": [0.1, 0.1, 0.1], "max": [0.3, 0.3, 0.3], "velocity": [0, 0, -2000]}], "time": {"frames": 1}, "output": {"meshes": false, "previews": false}"#,
    );
    std::fs::write(dir.path().join("s.json"), text).unwrap();
    let o = surge(dir.path(), &["run", "s.json", "-o", "out"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("emitters[0].velocity: 2000.0000 m/s moves 10.42 cells"),
        "{err}"
    );
}

/// A shipped scene's JSON (comment lines dropped), to derive reduced versions from.
fn shipped(name: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenes")
        .join(name);
    let text = std::fs::read_to_string(path).unwrap();
    let clean: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    serde_json::from_str(&clean).unwrap()
}

/// Steady state of `scenes/river.json` as shipped (full resolution, ~72k particles, about 10 s
/// of CPU without meshes and previews): the particle count at 10 s is within 5% of the count
/// at 5 s (inflow balances outflow; the issue's criterion), no particle is outside the liquid
/// region or inside a rock (signed distance >= -1e-6 m: f32 rounding of positions near 1 m).
#[test]
fn river_reaches_a_steady_particle_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = shipped("river.json");
    s["time"]["frames"] = 300.into();
    s["output"] = serde_json::json!({"meshes": false, "previews": false, "checkpoint_every": 0});
    std::fs::write(dir.path().join("r.json"), s.to_string()).unwrap();
    ok(&surge(dir.path(), &["-q", "run", "r.json", "-o", "out"]));
    let lines = stats(&dir.path().join("out"));
    let n = |f: usize| lines[f]["particles"].as_f64().unwrap();
    assert!(n(150) > 10000.0, "{}", n(150));
    assert!(
        (n(300) / n(150) - 1.0).abs() < 0.05,
        "{} particles at 5 s, {} at 10 s",
        n(150),
        n(300)
    );
    let pf = frame::read(&dir.path().join("out/particles/frame_0300.bin")).unwrap();
    let p = &pf.particles;
    let loaded = surge::scene::load(&dir.path().join("r.json")).unwrap();
    let rocks = &loaded.scene.built_obstacles.solids;
    assert_eq!(rocks.len(), 3);
    for i in 0..p.len() {
        let q = p.position(i);
        assert!(
            q.iter().all(|x| x.is_finite())
                && (0..3).all(|a| q[a] > 0.025 && q[a] < [1.975, 0.575, 0.475][a]),
            "particle {i} at {q:?}"
        );
        for (k, rock) in rocks.iter().enumerate() {
            let d = rock.signed_distance(q.map(|x| x as f64), 10.0);
            assert!(d >= -1e-6, "particle {i} at {q:?} is {d} m inside rock {k}");
        }
    }
}

/// `scenes/tap.json` runs its first frames with meshes and previews of a growing particle
/// count, and `surge mesh` / `surge preview` re-make them from the varying-count frames.
#[test]
fn tap_runs_and_remeshes_with_a_varying_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = shipped("tap.json");
    s["time"]["frames"] = 4.into();
    let glass = Path::new(env!("CARGO_MANIFEST_DIR")).join("inputs/glass.obj");
    s["obstacles"][0]["path"] = glass.to_str().unwrap().into();
    std::fs::write(dir.path().join("t.json"), s.to_string()).unwrap();
    ok(&surge(dir.path(), &["-q", "run", "t.json", "-o", "out"]));
    let lines = stats(&dir.path().join("out"));
    let counts: Vec<u64> = lines
        .iter()
        .map(|l| l["particles"].as_u64().unwrap())
        .collect();
    assert_eq!(counts[0], 0);
    assert!(counts.windows(2).all(|w| w[1] > w[0]), "{counts:?}");
    let before = outputs(&dir.path().join("out"));
    ok(&surge(dir.path(), &["-q", "mesh", "out"]));
    ok(&surge(dir.path(), &["-q", "preview", "out"]));
    let after = outputs(&dir.path().join("out"));
    for (k, v) in &before {
        if k.starts_with("meshes") || k.starts_with("previews") {
            assert!(after[k] == *v, "{} re-made differently", k.display());
        }
    }
}

/// Previews outline emitters and sinks faintly: the image of a scene with an emitter and a sink
/// differs from the same scene without them only by light changes (an outline at 0.3 opacity,
/// fainter than the domain's edges at 0.75).
#[test]
fn previews_outline_emitters_and_sinks_faintly() {
    let text = r#"{
    "domain": { "lower": [0, 0, 0], "cell_size": 0.05, "resolution": [24, 8, 10] },
    "sources": [ { "type": "box", "min": [0, 0, 0], "max": [0.3, 0.3, 0.2] } ],
    "emitters": [ { "type": "box", "min": [0.1, 0.1, 0.25], "max": [0.3, 0.3, 0.4] } ],
    "sinks": [ { "type": "sphere", "center": [1.0, 0.2, 0.1], "radius": 0.08 } ]
}"#;
    let loaded = surge::scene::load_str(text, Path::new("p.json"), Path::new(".")).unwrap();
    let with = surge::render::render_scene(&loaded.particles, &loaded.scene).unwrap();
    let mut bare = loaded.scene.clone();
    bare.emitters.clear();
    bare.sinks.clear();
    let without = surge::render::render_scene(&loaded.particles, &bare).unwrap();
    let diff: Vec<i32> = with
        .rgb
        .iter()
        .zip(&without.rgb)
        .map(|(a, b)| *a as i32 - *b as i32)
        .collect();
    let changed = diff.iter().filter(|d| **d != 0).count();
    assert!(changed > 300, "{changed} channel values changed");
    let darkest = diff.iter().copied().min().unwrap();
    assert!(
        darkest < -20 && darkest > -150,
        "outline darkens by {darkest}"
    );
}

/// An emitter region far larger than the domain (a box reaching a million metres out, a
/// turned one as large) is clipped to the grid: its scratch and its lattice walk stay the
/// domain's size (found by fuzzing the scene file: before, the emitter's lattice was sized by
/// its whole region, and such a box aborted with "capacity overflow" or a failed 36 GB
/// allocation). The clipped box emits exactly the particles of a box that ends just past the
/// grid (the lattice is the domain's, so the same points fall inside the grid), and the run's
/// peak memory stays under the hostile-input bound.
#[test]
fn emitter_far_larger_than_the_domain_is_clipped_to_it() {
    use common::measured::{MAX_RSS_KB, run_measured};
    let dir = tempfile::tempdir().unwrap();
    let scene = |min_x: &str, extra: &str| {
        channel(&format!(r#""time": {{ "fps": 30, "frames": 6 }}{extra}"#)).replace(
            r#""min": [0.05, 0.05, 0.05]"#,
            &format!(r#""min": [{min_x}, 0.05, 0.05]"#),
        )
    };
    std::fs::write(dir.path().join("near.json"), scene("-0.1", "")).unwrap();
    std::fs::write(dir.path().join("far.json"), scene("-1e6", "")).unwrap();
    // A 2 km cube turned 30 degrees about z and 10 about x, covering the whole domain.
    let turned = channel(r#""time": { "fps": 30, "frames": 3 }"#).replace(
        r#""min": [0.05, 0.05, 0.05], "max": [0.2, 0.35, 0.3]"#,
        r#""min": [-1000, -1000, -1000], "max": [1000, 1000, 1000],
           "transform": { "rotate": [10, 0, 30] }"#,
    );
    std::fs::write(dir.path().join("turned.json"), turned).unwrap();
    ok(&surge(
        dir.path(),
        &["-q", "run", "near.json", "-o", "near"],
    ));
    for (scene, out) in [("far.json", "far"), ("turned.json", "turned")] {
        let o = run_measured(dir.path(), &["-q", "run", scene, "-o", out], &[]);
        eprintln!(
            "{scene}: exit {:?}, {:.2} s, peak RSS {:.1} MB",
            o.code,
            o.seconds,
            o.max_rss_kb as f64 / 1024.0
        );
        assert_eq!((o.code, o.signal), (Some(0), None), "{scene}: {}", o.stderr);
        assert!(
            o.max_rss_kb < MAX_RSS_KB,
            "{scene}: peak RSS {} kB",
            o.max_rss_kb
        );
    }
    let (near, far) = (dir.path().join("near"), dir.path().join("far"));
    for f in 0..=6 {
        let name = format!("particles/frame_{f:04}.bin");
        let (a, b) = (
            std::fs::read(near.join(&name)),
            std::fs::read(far.join(&name)),
        );
        assert!(a.unwrap() == b.unwrap(), "{name} differs");
    }
    let added: u64 = (stats(&far).iter())
        .filter_map(|l| l["emission"]["added"][0].as_u64())
        .sum();
    assert!(added > 1000, "the clipped emitter added {added}");
    // The turned cube fills the domain's liquid region at its first substep: 8 particles in
    // each of its 22 x 6 x 8 cells, less those its jitter or the walls' margin leave out
    // (measured 8,390 of 8,448, 99.3%; 98% required).
    let turned = stats(&dir.path().join("turned"));
    let filled = turned[1]["particles"].as_u64().unwrap();
    eprintln!("the turned cube filled {filled} of the region's 8 x 22 x 6 x 8 = 8448 places");
    assert!(
        filled as f64 > 0.98 * (8 * 22 * 6 * 8) as f64,
        "the turned cube filled {filled} particles"
    );
}

/// An emitter keyframed absurdly far away (1e30 m along y in 0.05 s, so it leaves the domain
/// in its first substep at 2e31 m/s) runs to the end: its lattice range is empty, not an
/// overflow. Found by fuzzing the scene file: the range's `i64` arithmetic overflowed, a slice
/// index panicked inside the stepper's worker scope, and the run hung (deaf to SIGTERM).
#[test]
fn emitter_keyframed_far_away_neither_panics_nor_hangs() {
    use common::measured::runs_to_the_end;
    let dir = tempfile::tempdir().unwrap();
    let scene = r#"{
    "domain": { "lower": [-0.2, -0.2, 0.0], "cell_size": 0.025, "resolution": [18, 18, 16] },
    "sources": [ { "type": "box", "min": [-0.2, -0.2, 0.0], "max": [0.0, 0.0, 0.15] } ],
    "emitters": [ { "type": "cylinder", "from": [0, 0, 0.3], "to": [0, 0, 0.32], "radius": 0.02,
                    "velocity": [0, 0, -0.6],
                    "keyframes": [ { "time": 0, "translate": [0, 0, 0] },
                                   { "time": 0.05, "translate": [0.05, 1e30, 0],
                                     "rotate": [0, 30, 90] } ] } ],
    "time": { "fps": 30, "frames": 3 },
    "output": { "meshes": false, "previews": false }
}"#;
    assert!(scene.contains("1e30"));
    runs_to_the_end(dir.path(), ("far.json", scene), 3);
}
