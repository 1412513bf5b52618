//! Wall and obstacle friction (issues 11 and 19): a layer of liquid sliding along a floor keeps
//! its speed over a free-slip floor and is held at the floor over a no-slip one.
//!
//! Reference: with free slip nothing acts on the layer along x (gravity and the floor's
//! pressure are vertical), so its mean velocity stays the initial 1 m/s (FLIP keeps it up to
//! a few percent of numerical dissipation); with no slip the tangential velocity at the floor
//! is the floor's, zero, so the liquid next to it slows down. The tests compare the particles
//! in the lowest half cell of liquid (whose velocity is interpolated from the first layer of
//! tangential faces, the layer the no-slip condition sets) after 0.2 s.

use std::path::Path;
use surge::scene::{LoadedScene, load_str};
use surge::sim::Simulation;

fn load(json: &str) -> LoadedScene {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    load_str(json, &dir.join("test.json"), &dir).expect("scene loads")
}

/// Mean x velocity after 6 frames (0.2 s) of the particles below `z_low` and of all of them.
fn slide(json: &str, z_low: f32) -> (f64, f64) {
    let l = load(json);
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    for _ in 0..6 {
        sim.advance_frame();
    }
    let p = sim.particles();
    let (mut low, mut nl, mut all) = (0.0f64, 0usize, 0.0f64);
    for i in 0..p.len() {
        let u = p.velocity(i)[0] as f64;
        all += u;
        if p.position(i)[2] < z_low {
            low += u;
            nl += 1;
        }
    }
    assert!(nl > 50, "{nl} particles near the floor");
    (low / nl as f64, all / p.len() as f64)
}

fn layer(friction: &str, obstacle: &str) -> String {
    format!(
        r#"{{"domain": {{"lower": [0, 0, 0], "cell_size": 0.025, "resolution": [48, 6, 10]{friction}}},
            "obstacles": [{obstacle}],
            "sources": [{{"type": "box", "min": [0.05, 0.0, 0.0], "max": [0.5, 0.15, 0.125],
                         "velocity": [1.0, 0.0, 0.0]}}],
            "time": {{"fps": 30, "frames": 6}}}}"#
    )
}

/// Domain walls: `domain.friction` 0 (free slip) against 1 (no slip). Tolerances: free slip
/// keeps at least 90% of the speed near the floor (FLIP's dissipation over 0.2 s is a few
/// percent); no slip holds the lowest half cell below half of the free-slip speed there (the
/// first tangential faces are set to zero every substep; particles in the half cell above the
/// floor interpolate between them and the next layer).
#[test]
fn no_slip_domain_floor_slows_the_layer_along_it() {
    // The floor's wall layer is z < 0.025; the liquid's lowest half cell is z < 0.0375.
    let (free_low, free_all) = slide(&layer("", ""), 0.0375);
    let (stick_low, stick_all) = slide(&layer(r#", "friction": 1.0"#, ""), 0.0375);
    eprintln!(
        "domain floor: free slip {free_low:.3} m/s near it ({free_all:.3} overall), no slip {stick_low:.3} ({stick_all:.3})"
    );
    assert!(free_low > 0.9, "free slip slowed the layer to {free_low}");
    assert!(
        stick_low < 0.5 * free_low,
        "no slip near the floor {stick_low} vs free slip {free_low}"
    );
    assert!(stick_all < free_all, "{stick_all} vs {free_all}");
}

/// The same with an obstacle as the floor: a box slab 0.05 m thick, the layer resting on it,
/// `friction` 1 on the obstacle (the domain walls stay free slip) against the default 0.
#[test]
fn no_slip_obstacle_slows_the_layer_along_it() {
    let slab = |f: &str| {
        format!(r#"{{"type": "box", "min": [-0.1, -0.1, -0.1], "max": [1.3, 0.3, 0.075]{f}}}"#)
    };
    let json = |f: &str| {
        layer("", &slab(f))
            .replace(r#""min": [0.05, 0.0, 0.0]"#, r#""min": [0.05, 0.0, 0.08]"#)
            .replace(r#""max": [0.5, 0.15, 0.125]"#, r#""max": [0.5, 0.15, 0.2]"#)
    };
    // Slab top z = 0.075; the liquid's lowest half cell above it is z < 0.0875 + a push-out.
    let (free_low, free_all) = slide(&json(""), 0.09);
    let (stick_low, stick_all) = slide(&json(r#", "friction": 1"#), 0.09);
    eprintln!(
        "obstacle floor: free slip {free_low:.3} m/s near it ({free_all:.3} overall), no slip {stick_low:.3} ({stick_all:.3})"
    );
    assert!(free_low > 0.9, "free slip slowed the layer to {free_low}");
    assert!(
        stick_low < 0.5 * free_low,
        "no slip near the obstacle {stick_low} vs free slip {free_low}"
    );
    assert!(stick_all < free_all, "{stick_all} vs {free_all}");
}

/// A friction outside [0, 1] is a clear error naming the field.
#[test]
fn friction_out_of_range_is_an_error() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    for (json, field) in [
        (layer(r#", "friction": 1.5"#, ""), "domain.friction"),
        (
            layer(
                "",
                r#"{"type": "sphere", "center": [0.5, 0.1, 0.1], "radius": 0.05, "friction": -1}"#,
            ),
            "obstacles[0].friction",
        ),
    ] {
        let e = load_str(&json, &dir.join("test.json"), &dir)
            .expect_err("rejected")
            .to_string();
        assert!(e.contains(field), "{e}");
        assert!(e.contains("between 0 and 1"), "{e}");
    }
}
