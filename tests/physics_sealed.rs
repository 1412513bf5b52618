//! Liquid that touches no air: a closed tank filled to the brim.
//!
//! In a sealed piece of liquid the volume cannot change, so the density correction's
//! Poisson problem (`sim::density`) has a solution only once the piece's mean over-density is
//! taken off (`sim::pressure::pockets`, `make_all_compatible`). Session 30 found, with
//! `scripts/fuzz_motion.py`, that it was not: the solve chased the impossible mean, threw
//! particles by hundreds of metres into the domain's corners, and the crowding thinned them
//! there.

mod common;

use common::physics::*;
use surge::scene::{PressurePreconditioner, Source};
use surge::sim::Simulation;

/// A closed tank (18 x 10 x 12 cells inside the wall layer) filled to the brim with liquid at
/// rest stays at rest with every particle, with either preconditioner. The exact solution is
/// u = 0 with a hydrostatic pressure; the density correction may only even out the seeding
/// jitter inside the tank. Before the fix the first substep's correction moved particles by
/// up to 542 m, and 17,280 particles became 269 within 6 frames. Bounds: no particle removed
/// (the crowding thins none), none faster than 1e-4 m/s (the rest tank's bound of
/// `tank_at_rest_stays_still`, measured 4.4e-8 m/s) and none farther than a quarter cell from
/// where it was seeded after 1 s: the correction evens out the seeding's jitter, which puts a
/// particle up to 0.2 cell off its lattice point (`sim::seeding`), so it may move about that
/// far (measured 3.7 mm = 0.19 cell with the multigrid), and no farther.
#[test]
fn a_tank_filled_to_the_brim_stays_still_with_every_particle() {
    for pc in [
        PressurePreconditioner::Multigrid,
        PressurePreconditioner::Mic0,
    ] {
        let h = 0.02;
        let mut s = scene([0.0; 3], h, [20, 12, 14], 30.0, 30);
        s.solver.pressure_preconditioner = pc;
        let p0 = seeded(
            &mut s,
            vec![Source::Box {
                min: [0.0; 3],
                max: [20.0 * h, 12.0 * h, 14.0 * h],
                velocity: [0.0; 3],
            }],
        );
        let n0 = p0.len();
        assert_eq!(n0, 18 * 10 * 12 * 8, "{pc:?}: the tank is full");
        let mut sim = Simulation::new(&s, p0.clone(), 0).unwrap();
        run(&mut sim, s.time.frames, |sim, r| {
            assert_eq!(r.crowded_removed, 0, "{pc:?}, frame {}", sim.frame());
            let v = max_speed(sim.particles());
            assert!(
                v < 1e-4,
                "{pc:?}, frame {}: max speed {v:e} m/s",
                sim.frame()
            );
        });
        let p = sim.particles();
        assert_eq!(p.len(), n0, "{pc:?}");
        let moved = (0..n0)
            .map(|i| {
                let (a, b) = (p.position(i), p0.position(i));
                (0..3)
                    .map(|k| ((a[k] - b[k]) as f64).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .fold(0.0f64, f64::max);
        eprintln!("{pc:?}: farthest particle moved {moved:.2e} m in 1 s");
        assert!(moved < 0.25 * h, "{pc:?}: a particle moved {moved} m");
    }
}

/// An emitter overlapping an obstacle in a closed tank filled to the brim (`scripts/fuzz_motion.py
/// --brim --mix` seed 51, session 35): the emitter set its velocity on the obstacle's wall
/// faces too, which the projection takes as a prescribed flux, so liquid sealed from the air
/// was given an inflow it could not take. The solve of the emitter's first substep ran to the
/// cap of 1,000 iterations (residual 6e3), particles reached 5e4 m/s and the crowding thinned
/// 96% of them. Now the obstacle's wall faces keep the solid's velocity: every solve within
/// 100 iterations (the tank alone takes about 14 at its first substep), no particle faster
/// than 3 m/s (the emitter's 1 m/s pushing into a full tank), and at least 90% of the
/// particles kept (the emitter's own over-filling is thinned).
#[test]
fn an_emitter_overlapping_an_obstacle_in_a_sealed_tank_converges() {
    let l = load_json(
        r#"{
    "domain": { "lower": [0, 0, 0], "cell_size": 0.02, "resolution": [20, 12, 14] },
    "obstacles": [ { "type": "box", "min": [0.14, 0.06, 0.06], "max": [0.24, 0.18, 0.16] } ],
    "sources": [ { "type": "box", "min": [0, 0, 0], "max": [0.4, 0.24, 0.28] } ],
    "emitters": [ { "type": "box", "min": [0.2, 0.08, 0.1], "max": [0.3, 0.16, 0.2],
                    "velocity": [1, 0, 0.5], "start": 0.02, "end": 0.15 } ],
    "time": { "fps": 30, "frames": 6 }
}"#,
    );
    let n0 = l.particles.len();
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    for f in 1..=6 {
        let r = sim.advance_frame();
        let (it, v) = (r.pressure_iterations_max, max_speed(sim.particles()));
        eprintln!("frame {f}: {it} iterations at most, fastest {v:.3} m/s");
        assert!(it < 100, "frame {f}: a solve took {it} iterations");
        assert!(v < 3.0, "frame {f}: a particle at {v} m/s");
    }
    let kept = sim.particles().len() as f64 / n0 as f64;
    assert!(kept >= 0.9, "{:.1}% of the particles kept", 100.0 * kept);
}
