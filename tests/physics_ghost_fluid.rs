//! The ghost-fluid free surface (`solver.free_surface = "ghost_fluid"`): rest, a falling
//! ball, determinism across threads and exact resume, the dam-break volume (the sloshing
//! period: `tests/physics_sloshing.rs`).

mod common;
use common::physics::*;
use surge::scene::Source;
use surge::sim::settings::FreeSurface;
use surge::sim::{Particles, Simulation};

/// A tank half full "at rest" with the ghost-fluid surface. Unlike the staircase surface
/// (`tank_at_rest_stays_still` in `tests/physics.rs`: below 1e-4 m/s, since every top cell
/// holds p = 0 at the same height), the ghost-fluid surface follows the particles, and
/// jittered particles make a bumpy surface (bumps of a fraction of the 10 mm spacing), whose
/// hydrostatic pressure differences drive currents that settle only slowly: measured here, the
/// rms particle speed is 5.2e-3 m/s after the first frame, 4.8e-3 on average over the first
/// second, 1.4e-3 over the third, 1.3e-3 at 3 s (the largest single particle 0.05-0.13 m/s at
/// first, 7e-3 at 3 s). That is a known deviation of the option (README). The test holds what
/// is measured, with margins: the rms speed stays below 1e-2 m/s, is below 2.5e-3 m/s at 3 s,
/// and its mean over the third second is under half that over the first (measured 0.30: the
/// currents decay rather than grow; a wrong sign of the ghost term or a face update that does
/// not match the matrix makes them grow to g dt within frames). Session 9, with the surface
/// read from the cells' fill fractions (`sim::ghost_fluid`; smoother than the particle level
/// set it replaced, whose bumps followed single particles): 4.15e-3 m/s after one frame,
/// 4.21e-3 over the first second, 6.13e-4 over the third, 6.28e-4 at 3 s (ratio 0.15; the same
/// in session 41). Bounds since session 41, from these figures with margins of about a half and
/// below the particle level set's (so a return to it fails): under 1e-3 m/s at 3 s (was 2.5e-3)
/// and the third second's mean under a quarter of the first's (was a half).
#[test]
fn ghost_fluid_tank_settles() {
    let h = 0.02;
    let mut s = scene([0.0, 0.0, 0.0], h, [12, 12, 16], 30.0, 90);
    s.solver.free_surface = FreeSurface::GhostFluid;
    let p = seeded(
        &mut s,
        vec![Source::Box {
            min: [h, h, h],
            max: [11.0 * h, 11.0 * h, 8.0 * h],
            velocity: [0.0; 3],
        }],
    );
    let mut sim = Simulation::new(&s, p, 0).unwrap();
    let mut rms_at = Vec::new();
    run(&mut sim, s.time.frames, |sim, _| {
        let p = sim.particles();
        let rms = rms_speed(p);
        assert!(rms < 1e-2, "frame {}: rms speed {rms:e} m/s", sim.frame());
        rms_at.push(rms);
    });
    let mean = |r: &[f64]| r.iter().sum::<f64>() / r.len() as f64;
    let (first, last) = (mean(&rms_at[..30]), mean(&rms_at[60..]));
    let three = rms_at[89];
    eprintln!(
        "ghost fluid tank: rms speed {:.2e} m/s after one frame, mean {first:.2e} over the first second, {last:.2e} over the third, {three:.2e} at 3 s",
        rms_at[0]
    );
    assert!(three < 1e-3, "rms speed at 3 s {three:e} m/s");
    assert!(
        last < 0.25 * first,
        "mean rms speed {first:e} in the first second, {last:e} in the third"
    );
}

/// A ball in free fall with the ghost-fluid surface: all of it is surface, and in free fall the
/// pressure is zero, so the ghost terms must leave the fall alone: the centre follows the parabola
/// `z0 - g t^2 / 2` (exact for the fixed-step leapfrog) within 0.1 mm (`free_fall_follows_parabola`
/// in `tests/physics.rs` says why that bound), five frames far above the floor.
#[test]
fn ghost_fluid_free_fall_follows_parabola() {
    ball_falls_on_the_parabola(|s| s.solver.free_surface = FreeSurface::GhostFluid);
}

fn bytes(p: &Particles) -> Vec<u8> {
    p.pos
        .iter()
        .chain(p.vel.iter())
        .flat_map(|v| v.iter().flat_map(|x| x.to_le_bytes()))
        .collect()
}

/// 1, 2 and 3 threads give the same bytes with the ghost-fluid surface (the fill fractions come
/// from the density splat, summed in a fixed order; the air terms are per row), a resume from frame
/// 4 continues them exactly, and the result differs from the staircase surface's (the option acts).
#[test]
fn ghost_fluid_deterministic_across_threads_and_resume() {
    let h = 0.02;
    let mut s = dam_break_scene(h, 30.0, 8);
    s.solver.free_surface = FreeSurface::GhostFluid;
    let p0 = dam_break_particles(&mut s, h);
    // The last substep's length of the state at `from` > 0 (state beside the particles).
    let resume_dt = std::cell::Cell::new(0.0);
    let go = |s: &surge::scene::Scene, threads: usize, p: Particles, from: u32, to: u32| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let last = resume_dt.get();
        let (p, last) = pool.install(|| {
            let mut sim = Simulation::new(s, p, from).unwrap();
            if from > 0 {
                sim = sim.with_last_substep(last).unwrap();
            }
            sim.set_preconditioner_block_rows(64);
            while sim.frame() < to {
                sim.advance_frame();
            }
            (sim.particles().clone(), sim.last_substep())
        });
        resume_dt.set(last);
        p
    };
    let one = go(&s, 1, p0.clone(), 0, 8);
    assert!(
        bytes(&one) == bytes(&go(&s, 2, p0.clone(), 0, 8)),
        "1 vs 2 threads differ"
    );
    assert!(
        bytes(&one) == bytes(&go(&s, 3, p0.clone(), 0, 8)),
        "1 vs 3 threads differ"
    );
    let mid = go(&s, 2, p0.clone(), 0, 4);
    // resume_dt now holds frame 4's last substep.
    assert!(
        bytes(&one) == bytes(&go(&s, 2, mid, 4, 8)),
        "resume from frame 4 differs"
    );
    let mut st = s.clone();
    st.solver.free_surface = FreeSurface::Staircase;
    assert!(
        bytes(&one) != bytes(&go(&st, 2, p0, 0, 8)),
        "ghost fluid changed nothing"
    );
}

/// The multigrid preconditioner with the ghost-fluid surface: its finest level carries the
/// rows' air terms (`1 / theta - 1`, up to 999), so CG converges about as fast as with the
/// staircase. Without them (the multigrid's operator the staircase's) the 1M-particle dam
/// break took 131 CG iterations per solve against 10.3 (`BENCH_SKIP_TUTORIAL=1
/// BENCH_COMPARE_TRANSFERS=1 BENCH_DAM_FRAMES=8 cargo bench --bench bench_stepper`), and this
/// small dam break (20 cells across the column, 8 frames) 46.5 against 9.2 (measured with the
/// call disabled); with them 9.3. Bound: the mean iterations per solve at most 1.5 times the
/// staircase's plus 2.
#[test]
fn ghost_fluid_pressure_converges_like_the_staircase() {
    // 20 cells across the column: enough multigrid levels for the coarse ones to matter.
    let h = 0.005;
    let mean_iterations = |surface: FreeSurface| {
        let mut s = dam_break_scene(h, 30.0, 8);
        s.solver.free_surface = surface;
        let p = dam_break_particles(&mut s, h);
        let mut sim = Simulation::new(&s, p, 0).unwrap();
        let (mut its, mut solves) = (0u64, 0u64);
        run(&mut sim, s.time.frames, |_, r| {
            its += r.pressure_iterations_total as u64;
            solves += r.substeps as u64;
        });
        its as f64 / solves as f64
    };
    let staircase = mean_iterations(FreeSurface::Staircase);
    let ghost = mean_iterations(FreeSurface::GhostFluid);
    eprintln!("mean CG iterations per solve: staircase {staircase:.1}, ghost fluid {ghost:.1}");
    assert!(
        ghost <= 1.5 * staircase + 2.0,
        "ghost fluid {ghost:.1} vs staircase {staircase:.1} iterations per solve"
    );
}
