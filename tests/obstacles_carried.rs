//! Galilean invariance with a moving obstacle: water carried in an open box container moving at
//! a constant velocity, the water given that velocity from the start, must stay at rest
//! relative to the container, as it does in the container standing still (`settles_flat` in
//! `tests/obstacles.rs`: max speed below 1e-3 m/s, surface within a quarter cell).
//!
//! KNOWN DEVIATION (README, "Known deviations", session 32): it does not. Carried at 0.5 m/s
//! on 1.25 cm cells the water's speed relative to the container reaches 0.13 m/s near its walls
//! and the surface moves by 11 mm (0.9 cell). Until session 32 it was 0.90 m/s and 21 mm: a
//! solid keyframed from `t = 0` stood still in the first substep's boundary condition while
//! its pose moved (`Motion::segment`), which stopped the water against the walls; that is
//! fixed. What is left is not understood yet: the largest disturbances sit at the container's
//! bottom corners and on its floor (at 0.625 cm cells single particles there reach 1.1 m/s,
//! the rms 0.03 m/s), growing as the walls cross the grid's faces. The test is ignored rather
//! than widened; `scripts/test.sh` lists it.

mod common;

use common::physics::column_tops;

use std::path::Path;
use surge::scene::{LoadedScene, load_str};
use surge::sim::Simulation;

/// Cell size, the container's outer side, wall thickness and water depth, m; carriage speed,
/// m/s.
const H: f64 = 0.0125;
const SIDE: f64 = 0.16;
const WALL: f64 = 0.02;
const DEPTH: f64 = 0.06;
const SPEED: f64 = 0.5;

/// A floor and four walls (five keyframed boxes) moving along x at [`SPEED`] for 1 s, and the
/// water filling the container to [`DEPTH`] at that velocity.
fn scene() -> LoadedScene {
    let (o, i) = (SIDE / 2.0, SIDE / 2.0 - WALL);
    let parts = [
        ([-o, -o, 0.0], [o, o, WALL]),
        ([-o, -o, 0.0], [-i, o, 0.15]),
        ([i, -o, 0.0], [o, o, 0.15]),
        ([-o, -o, 0.0], [o, -i, 0.15]),
        ([-o, i, 0.0], [o, o, 0.15]),
    ];
    let (x0, y0) = (0.15, 0.1);
    let keys = format!(
        r#"[ {{ "time": 0, "translate": [{x0}, {y0}, 0] }}, {{ "time": 1, "translate": [{x1}, {y0}, 0] }} ]"#,
        x1 = x0 + SPEED
    );
    let obstacles: Vec<String> = parts
        .iter()
        .map(|(lo, hi)| {
            format!(r#"{{ "type": "box", "min": {lo:?}, "max": {hi:?}, "keyframes": {keys} }}"#)
        })
        .collect();
    let json = format!(
        r#"{{
    "domain": {{ "lower": [{l}, {l}, {l}], "cell_size": {H}, "resolution": [66, 18, 18] }},
    "obstacles": [ {obstacles} ],
    "sources": [ {{ "type": "box", "min": [{a}, {b}, {WALL}], "max": [{c}, {d}, {top}],
                   "velocity": [{SPEED}, 0, 0] }} ],
    "time": {{ "fps": 30, "frames": 30 }}
}}"#,
        l = -H,
        obstacles = obstacles.join(", "),
        a = x0 - i,
        b = y0 - i,
        c = x0 + i,
        d = y0 + i,
        top = WALL + DEPTH,
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    load_str(&json, &dir.join("test.json"), &dir).expect("scene loads")
}

/// Over 1 s of carriage: the water's largest speed relative to the container below 1e-2 m/s
/// (ten times the standing container's bound: the walls cross the grid, which a standing
/// container's do not) and every column's surface, in the container's frame, within a
/// quarter cell of where it started (the standing container's bound).
#[test]
#[ignore = "known deviation: water carried in a container moving at 0.5 m/s moves relative to it (0.13 m/s near its walls and floor, the surface by 0.9 cell); see README, Known deviations"]
fn water_carried_in_a_moving_container_stays_at_rest_in_it() {
    let l = scene();
    let start = column_tops(&l.particles, H, 0.0);
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    let (mut worst_speed, mut worst_surface) = (0.0f64, 0.0f64);
    for f in 1..=30u32 {
        sim.advance_frame();
        let p = sim.particles();
        for i in 0..p.len() {
            let [vx, vy, vz] = p.velocity(i);
            let rel =
                ((vx as f64 - SPEED).powi(2) + (vy as f64).powi(2) + (vz as f64).powi(2)).sqrt();
            worst_speed = worst_speed.max(rel);
        }
        let now = column_tops(p, H, SPEED * f as f64 / 30.0);
        for (c, z0) in &start {
            if let Some(z) = now.get(c) {
                worst_surface = worst_surface.max((z - z0).abs());
            }
        }
    }
    eprintln!(
        "largest speed relative to the container {worst_speed:.4} m/s, surface moved by up to {:.1} mm",
        1e3 * worst_surface
    );
    assert!(worst_speed < 1e-2, "relative speed {worst_speed} m/s");
    assert!(worst_surface <= 0.25 * H, "surface moved {worst_surface} m");
}

/// The disturbance left (see the module docs) without a container: water at rest on a plate
/// that slides under it at 0.5 m/s (a free-slip floor: it should drag nothing), the plate's
/// top 2 cm up, mid-cell on 1.25 cm cells, and spanning the domain at every moment. The water
/// must stay at rest: its largest speed below 1e-2 m/s, as on the plate standing still (0 m/s)
/// or with its top on a cell face (0 m/s, measured by hand). Measured: 0.9 m/s at most, 0.06-0.12
/// m/s rms. Part of the cause: the cells the plate partly covers and holds no particle in are
/// labelled solid, and the faces between them and their liquid neighbours along the sliding
/// get the plate's whole velocity component as a wall's normal velocity, which drives liquid
/// through them. Two changes to those faces were tried in session 32 and dropped (README,
/// Known deviations): neither cured the plate, and both made the carried container worse.
#[test]
#[ignore = "known deviation: water at rest on a floor plate sliding under it at 0.5 m/s (top mid-cell) moves (0.9 m/s at most); see README, Known deviations"]
fn water_on_a_sliding_floor_stays_at_rest() {
    let json = format!(
        r#"{{
    "domain": {{ "lower": [{l}, {l}, {l}], "cell_size": {H}, "resolution": [66, 18, 18] }},
    "obstacles": [ {{ "type": "box", "min": [-1.0, -0.05, -0.05], "max": [0.9, 0.25, 0.02],
        "keyframes": [ {{ "time": 0, "translate": [0, 0, 0] }},
                       {{ "time": 1, "translate": [0.5, 0, 0] }} ] }} ],
    "sources": [ {{ "type": "box", "min": [0, 0, 0.02], "max": [0.8, 0.2, 0.08] }} ],
    "time": {{ "fps": 30, "frames": 30 }}
}}"#,
        l = -H
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let l = load_str(&json, &dir.join("test.json"), &dir).expect("scene loads");
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    let mut worst = 0.0f32;
    for _ in 0..30 {
        worst = worst.max(sim.advance_frame().max_speed as f32);
    }
    eprintln!("largest speed {worst:.4} m/s");
    assert!(
        worst < 1e-2,
        "water on the sliding plate moves at {worst} m/s"
    );
}
