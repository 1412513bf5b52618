//! A moving obstacle against an analytic answer: a box lowered into a tank raises the water by
//! the volume it displaces (Archimedes' displacement; mass conservation with the solid's volume
//! excluded from the liquid's). A leak into the solid, liquid compressed where the solid
//! pushes it, or particles lost to the thinning of crowded cells would all leave the level
//! short of the prediction.
//!
//! The solid that displaces the liquid is the box grown by the push-out distance
//! (`PUSHOUT_CELLS`, a tenth of a cell: the stepper keeps every particle that far from every
//! solid, and the volume correction's rest density near a solid counts only the kernel's part
//! beyond it, `sim::rest_share`), so the level rises by that skin's volume too: 3.6 mm more
//! than the bare box's 56.3 mm here. The test predicts with the grown box and prints both.

mod common;

use common::physics::{column_tops, load_json, run};
use surge::geometry::solid::PUSHOUT_CELLS;
use surge::scene::LoadedScene;
use surge::sim::Simulation;

/// Cell size, tank side, initial depth, plunger side and its bottom's final height, m.
const H: f64 = 0.01;
const SIDE: f64 = 0.2;
const DEPTH: f64 = 0.15;
const BOX: f64 = 0.12;
const BOTTOM: f64 = 0.05;
/// The plunger comes down from above the water over `LOWER` s and then stands; the level is
/// read over the last `AVERAGE` frames of `FRAMES` at 30 fps.
const LOWER: f64 = 1.2;
const FRAMES: u32 = 75;
const AVERAGE: u32 = 15;

fn scene() -> LoadedScene {
    let (c, half) = (SIDE / 2.0, BOX / 2.0);
    let json = format!(
        r#"{{
    "domain": {{ "lower": [{l}, {l}, {l}], "cell_size": {H}, "resolution": [22, 22, 32] }},
    "obstacles": [ {{ "type": "box", "min": [{m}, {m}, -0.1], "max": [{half}, {half}, 0.1],
        "keyframes": [ {{ "time": 0, "translate": [{c}, {c}, {z0}] }},
                       {{ "time": {LOWER}, "translate": [{c}, {c}, {z1}] }} ] }} ],
    "sources": [ {{ "type": "box", "min": [0, 0, 0], "max": [{SIDE}, {SIDE}, {DEPTH}] }} ],
    "time": {{ "fps": 30, "frames": {FRAMES} }}
}}"#,
        l = -H,
        m = -half,
        z0 = DEPTH + 0.02 + 0.1,
        z1 = BOTTOM + 0.1,
    );
    load_json(&json)
}

/// The highest particle of each column of cells `(i, j)` in the gap between the plunger and
/// the tank's walls (at least a cell from the plunger's footprint).
fn gap_tops(p: &surge::sim::Particles) -> std::collections::BTreeMap<(i64, i64), f64> {
    let n = (SIDE / H).round() as i64;
    let gap = ((SIDE - BOX) / 2.0 / H).round() as i64 - 1;
    let in_gap = |k: i64| k < gap || k >= n - gap;
    let mut tops = column_tops(p, H, 0.0);
    tops.retain(|&(i, j), _| in_gap(i) || in_gap(j));
    tops
}

/// The 12 x 12 cm plunger comes down at 0.1 m/s from 2 cm above the water of a 20 x 20 cm tank
/// 15 cm deep (1 cm cells, 48,000 particles) until its bottom stands 5 cm above the floor, then
/// stands for 1.3 s. Prediction: the liquid's volume `V` (particles times their seeded volume,
/// which the volume correction holds) around the plunger's submerged part gives the level
/// `(V - a z_b) / (A - a)` (`A` the tank's area, `a` the plunger's, `z_b` its bottom), with
/// the plunger grown by the push-out distance `e` (`a = (side + 2 e)^2`, bottom `z_b - e`; see
/// the module docs): 59.9 mm above the start (56.3 mm for the bare box). Measured: the mean rise of the highest particle in every column of the
/// gap around the plunger (each column against itself at the start, which takes out the
/// seeding's half-spacing jitter), averaged over the last half second (the plunge's waves
/// still slosh). Tolerance: 1.5 mm, 0.15 cell: five times the spread of the window's readings
/// (0.3 mm, the slosh left), and 0.6% of the liquid's volume spread over the gap, so the
/// volume must be kept through the plunge a little better than the dam break's 1% (no splash
/// here). Measured: 60.33 mm against 59.85 (session 40; 59.68 when written, 59.84 before session
/// 33's wall faces). It fails with the moving box's face velocities
/// left out of the projection (a temporary change: the level reads 5.3 mm high) and without
/// the volume correction (2.1 mm low: the plunge compresses the liquid by 0.9%); the bare
/// box's prediction is 3.6 mm below the grown one's. The containment alone switched off
/// moves the level by 0.3 mm (the projection's wall velocities keep the liquid out of a
/// plunger this slow). No more than 1% of the particles may be thinned away.
#[test]
fn lowered_box_raises_the_level_by_its_displaced_volume() {
    let l = scene();
    let s = &l.scene;
    let start = gap_tops(&l.particles);
    let n0 = l.particles.len();
    let vp = (H / 2.0).powi(3);
    let mut sim = Simulation::new(s, l.particles.clone(), 0).unwrap();
    let (mut rises, mut predicted, mut bare) = (Vec::new(), Vec::new(), Vec::new());
    let e = PUSHOUT_CELLS as f64 * H;
    // The level over a plunger of side `side` and bottom `z_b` for the liquid volume `v`.
    let level = |v: f64, side: f64, z_b: f64| {
        let (area, a) = (SIDE * SIDE, side * side);
        (v - a * z_b) / (area - a) - n0 as f64 * vp / area
    };
    run(&mut sim, FRAMES, |sim, _| {
        if sim.frame() <= FRAMES - AVERAGE {
            return;
        }
        let tops = gap_tops(sim.particles());
        let (sum, k) = start.iter().fold((0.0, 0), |(s, k), (c, z0)| {
            (
                s + tops.get(c).expect("gap column holds liquid") - z0,
                k + 1,
            )
        });
        rises.push(sum / k as f64);
        let v = sim.particles().len() as f64 * vp;
        predicted.push(level(v, BOX + 2.0 * e, BOTTOM - e));
        bare.push(level(v, BOX, BOTTOM));
    });
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (rise, expected) = (mean(&rises), mean(&predicted));
    let kept = sim.particles().len() as f64 / n0 as f64;
    eprintln!(
        "level rise {:.2} mm, displaced volume predicts {:.2} mm ({:+.2}%; the bare box {:.2} mm); {} of {n0} particles kept; per frame {:?}",
        1e3 * rise,
        1e3 * expected,
        100.0 * (rise / expected - 1.0),
        1e3 * mean(&bare),
        sim.particles().len(),
        rises
            .iter()
            .map(|r| (1e4 * r).round() / 10.0)
            .collect::<Vec<_>>()
    );
    assert!(
        kept >= 0.99,
        "only {:.2}% of the particles kept",
        100.0 * kept
    );
    assert!(
        (rise - expected).abs() <= 0.15 * H,
        "level rose {:.2} mm, the displaced volume gives {:.2} mm (band {:.1} mm)",
        1e3 * rise,
        1e3 * expected,
        150.0 * H
    );
}
