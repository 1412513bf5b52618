//! The ghost-fluid free surface (`solver.free_surface = "ghost_fluid"`, `sim::ghost_fluid`)
//! next to obstacles (issue 19): liquid at rest around a box that pierces the surface and in
//! a spherical container. The surface is read from the cells' fill fractions `rho / rho_rest`;
//! next to an obstacle `rho_rest` must take off the obstacle's share of the density kernel
//! (`sim::rest_share`), or the liquid against the obstacle reads as a shallow film: its cells
//! are labelled air for the projection and `p = 0` is put too close, which stirs the tank.
//! Coarse grids keep each test to about a second.

mod common;
use common::physics::load_json as load;

use common::physics::{min_distance, rms_speed};
use surge::scene::LoadedScene;
use surge::sim::Simulation;
use surge::sim::mac_grid::CellLabel;

/// What the ghost fluid made of the cells within a cell of an obstacle (signed distance of the
/// centre below one cell) holding liquid and wholly under the surface at `top` (m): how many
/// of those whose centre is more than a quarter cell under it are labelled air (liquid there
/// fills the kernel's open part at least to 1 - 0.75^2 / 2 = 0.72 of the rest density, well
/// above the label's threshold of 1/2), and the smallest fill fraction of the fluid ones
/// outside the solid whose centre is more than a cell under it (where the liquid fills the
/// whole open kernel: 1 at rest density); and how many cells were examined for each.
fn cells_at_obstacle(l: &LoadedScene, sim: &Simulation, top: f64) -> (usize, f32, [usize; 2]) {
    let (n, labels, fill) = sim.ghost_surface().expect("ghost fluid");
    let d = &l.scene.domain;
    let h = d.cell_size;
    let mut held = vec![false; labels.len()];
    let p = sim.particles();
    for i in 0..p.len() {
        let x = p.position(i);
        let c: [usize; 3] = std::array::from_fn(|a| ((x[a] as f64 - d.lower[a]) / h) as usize);
        held[c[0] + n[0] * (c[1] + n[1] * c[2])] = true;
    }
    let (mut air, mut min_fill, mut seen) = (0, f32::MAX, [0, 0]);
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                let c = i + n[0] * (j + n[1] * k);
                let q: [f64; 3] =
                    std::array::from_fn(|a| d.lower[a] + ([i, j, k][a] as f64 + 0.5) * h);
                if !held[c] || q[2] > top - 0.25 * h {
                    continue;
                }
                let solids = &l.scene.built_obstacles.solids;
                let sd = solids
                    .iter()
                    .map(|s| s.signed_distance(q, 0.0))
                    .fold(f64::INFINITY, f64::min);
                if sd >= h {
                    continue;
                }
                seen[0] += 1;
                if labels[c] == CellLabel::Empty {
                    air += 1;
                }
                if labels[c] == CellLabel::Fluid && sd > 0.0 && q[2] < top - h {
                    seen[1] += 1;
                    min_fill = min_fill.min(fill[c]);
                }
            }
        }
    }
    (air, min_fill, seen)
}

/// Runs 60 frames (2 s) of `json` with the ghost fluid, checking after every frame that no
/// liquid cell at the obstacle is labelled air and that those a cell under the surface read
/// at least half full (the threshold of the label: without the obstacle's share they read
/// 0.36); returns the rms particle speed of every frame (m/s).
fn at_rest(json: &str, top: f64) -> Vec<f64> {
    let l = load(json);
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    let mut rms_at = Vec::new();
    let mut worst = (0, f32::MAX);
    for f in 0..60 {
        sim.advance_frame();
        let p = sim.particles();
        rms_at.push(rms_speed(p));
        let (air, min_fill, seen) = cells_at_obstacle(&l, &sim, top);
        // Something to check: dozens of liquid cells along the obstacle (a few are enough to
        // fail on; none would pass any scene).
        assert!(
            seen[0] >= 20 && seen[1] >= 10,
            "frame {f}: only {seen:?} cells at the obstacle examined"
        );
        worst = (worst.0.max(air), worst.1.min(min_fill));
        assert!(
            air == 0,
            "frame {f}: {air} liquid cells at the obstacle labelled air"
        );
        assert!(
            min_fill >= 0.5,
            "frame {f}: fill {min_fill} a cell under the surface"
        );
    }
    eprintln!(
        "rms speed {:.2e} m/s after one frame, largest {:.2e}, {:.2e} at 2 s; at the obstacle: at most {} cells labelled air, smallest fill {:.3}",
        rms_at[0],
        rms_at.iter().copied().fold(0.0, f64::max),
        rms_at[59],
        worst.0,
        worst.1
    );
    rms_at
}

/// A tank half full around a box that pierces the surface (16 cells of 2 cm, the liquid's top
/// at z = 0.15 m, 13 cm above the floor's wall layer; the box 8 cm square, centred at x = y =
/// 0.15 m), "at rest" with the ghost fluid. Reference:
/// hydrostatic rest. As in `ghost_fluid_tank_settles` (`tests/physics_ghost_fluid.rs`, the
/// same kind of tank without the box), the ghost-fluid surface follows the jittered particles,
/// whose bumps drive currents that settle slowly, so the bound is that test's: rms speed below
/// 2.5e-3 m/s at the end (here 2 s rather than 3). With the box's share taken off the fill
/// fraction: 1.5e-3 m/s at 2 s; without it the liquid cells along the box read as a film (8
/// to 26 of them labelled air) and the rms speed is 4.3e-3 m/s at 2 s. That test's other
/// bound, below 1e-2 m/s at every frame, is not held here: the first frames peak at 1.06e-2
/// m/s (frame 2; 1.6e-2 without the share), against 4.2e-3 on average over the first second
/// without the box (issue 19, open).
#[test]
fn ghost_fluid_tank_around_a_box_settles() {
    let rms = at_rest(
        r#"{"domain": {"lower": [0, 0, 0], "cell_size": 0.02, "resolution": [16, 16, 16]},
            "obstacles": [{"type": "box", "min": [0.11, 0.11, 0.0], "max": [0.19, 0.19, 0.3]}],
            "sources": [{"type": "box", "min": [0, 0, 0], "max": [0.3, 0.3, 0.15]}],
            "solver": {"free_surface": "ghost_fluid"},
            "time": {"fps": 30, "frames": 60}}"#,
        0.15,
    );
    assert!(rms[59] < 2.5e-3, "rms speed at 2 s {:e} m/s", rms[59]);
}

/// The half-full sphere container of `tests/obstacles.rs` (20 cells of 2.5 cm, radius 20 cm)
/// with the ghost fluid: every liquid cell along the curved wall stays liquid and reads at
/// least half full (without the sphere's share: 16 cells labelled air at the first frame,
/// fill 0.36). Its speed is reported, not bounded: the currents along the curved wall take
/// longer to settle than in the box tank (rms 3.3e-3 m/s at 2 s; 6.5e-3 without the share).
#[test]
fn ghost_fluid_sphere_container_keeps_its_wall_cells_liquid() {
    at_rest(
        r#"{"domain": {"lower": [-0.25, -0.25, -0.25], "cell_size": 0.025, "resolution": [20, 20, 20]},
            "obstacles": [{"type": "sphere", "center": [0, 0, 0], "radius": 0.2, "liquid": "inside"}],
            "sources": [{"type": "box", "min": [-0.25, -0.25, -0.25], "max": [0.25, 0.25, 0.0]}],
            "solver": {"free_surface": "ghost_fluid"},
            "time": {"fps": 30, "frames": 60}}"#,
        0.0,
    );
}

/// A moving obstacle with the ghost fluid: the paddle of `tests/obstacles.rs` swept through the
/// tank at 0.33 m/s (its kernel share recomputed every substep, at the fluid cells and their
/// neighbours, and reused by the density correction at the same time). 1 and 3 threads give
/// the same bytes (the share is a per-cell function of the pose), no particle is inside the
/// paddle at any frame's time (1e-6 m: f32 rounding), and after 1 s the liquid moves with it
/// (mean x velocity above a tenth of the paddle's speed, as that test asks).
#[test]
fn ghost_fluid_paddle_is_deterministic_and_never_entered() {
    let l = load(
        r#"{"domain": {"lower": [0, 0, 0], "cell_size": 0.025, "resolution": [33, 13, 17]},
            "obstacles": [{"type": "box", "min": [-0.02, -0.2, -0.05], "max": [0.02, 0.2, 0.35],
              "keyframes": [{"time": 0, "translate": [0.15, 0.15, 0.05]},
                            {"time": 1.5, "translate": [0.65, 0.15, 0.05]}]}],
            "sources": [{"type": "box", "min": [0, 0, 0], "max": [0.8, 0.3, 0.15]}],
            "solver": {"free_surface": "ghost_fluid"},
            "time": {"fps": 30, "frames": 30}}"#,
    );
    let go = |threads: usize| {
        common::in_pool(threads, || {
            let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
            for f in 1..=30u32 {
                sim.advance_frame();
                let (d, i) = min_distance(&l, &sim, l.scene.frame_time(f));
                assert!(
                    d >= -1e-6,
                    "frame {f}: particle {i} is {d} m inside the paddle"
                );
            }
            sim.particles().clone()
        })
    };
    let one = go(1);
    let three = go(3);
    assert!(
        one.pos == three.pos && one.vel == three.vel,
        "1 vs 3 threads differ"
    );
    let mean_u = one.vel[0].iter().map(|&u| u as f64).sum::<f64>() / one.len() as f64;
    eprintln!("ghost fluid paddle: mean x velocity {mean_u} m/s after 1 s");
    assert!(mean_u > 0.033, "mean x velocity {mean_u} m/s");
}

/// The dam break around a box and a cylinder of `tests/obstacles.rs` (`scenes/pillar.json` at
/// a quarter of its resolution) with the ghost fluid beside the staircase: with either surface
/// no particle has negative distance to an obstacle at any frame (1e-6 m: f32 rounding near
/// 1 m) and the front reaches past the box (x > 1 m; otherwise the check says nothing). The
/// fronts at 0.1 s and 0.2 s (before they reach the far wall) are printed for comparison, not
/// bounded.
#[test]
fn ghost_fluid_dam_break_around_obstacles_never_enters_them() {
    for fs in ["staircase", "ghost_fluid"] {
        let l = load(&format!(
            r#"{{"domain": {{"lower": [0, 0, 0], "cell_size": 0.05, "resolution": [26, 9, 13]}},
            "obstacles": [
              {{"type": "cylinder", "start": [0.8, 0.2, 0.0], "end": [0.8, 0.2, 0.5], "radius": 0.06}},
              {{"type": "box", "min": [-0.05, -0.05, 0.0], "max": [0.05, 0.05, 0.12],
               "transform": {{"translate": [1.0, 0.3, 0.0], "rotate": [0, 0, 45]}}}}],
            "sources": [{{"type": "box", "min": [0, 0, 0], "max": [0.4, 0.425, 0.4]}}],
            "solver": {{"free_surface": "{fs}"}},
            "time": {{"fps": 30, "frames": 45}}}}"#
        ));
        let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
        let mut fronts = Vec::new();
        for f in 1..=45u32 {
            sim.advance_frame();
            let (d, i) = min_distance(&l, &sim, l.scene.frame_time(f));
            assert!(d >= -1e-6, "{fs}, frame {f}: particle {i} is {d} m inside");
            let p = sim.particles();
            fronts.push(p.pos[0].iter().copied().fold(f32::MIN, f32::max));
        }
        eprintln!(
            "{fs}: front {:.3} m at 0.1 s, {:.3} m at 0.2 s",
            fronts[2], fronts[5]
        );
        let reached = fronts.iter().copied().fold(f32::MIN, f32::max);
        assert!(reached > 1.0, "{fs}: front only reached x = {reached}");
    }
}
