//! Physics tests of the PIC/FLIP stepper: free fall, rest, projection, the tutorial input,
//! determinism and exact resume (the dam-break volume and front: `tests/physics_dam_break.rs`).
//!
//! Every scene is built in code (small grids so that the whole file runs in well under a minute
//! with `cargo test --release` on 2 cores). Every test also checks conservation: particle count
//! constant, no NaN, no particle outside the domain or inside the wall layer.

mod common;
use common::physics::*;
use surge::scene::{PressurePreconditioner, Scene, Source};
use surge::sim::{Particles, Simulation};

// ---------------------------------------------------------------------------------------------

/// A ball of liquid in a tall box falls as a rigid body until it nears the floor. Fixed dt (the
/// tutorial's mode) of 1/900 s, 30 steps a frame: for a uniform velocity field the stepper's update
/// (gravity on the grid, then the particles move by the new velocity, the first kick half a step:
/// leapfrog) is exact for a constant acceleration: the parabola `z_n = z0 - g (n dt)^2 / 2`
/// (symplectic Euler, a full first kick, gave `z0 - g dt^2 n (n + 1) / 2`, off by `g t dt / 2`, 1.6
/// mm at t = 0.3 s). Every frame's centre must match it within 0.1 mm: f32 positions near 0.7 m
/// round to 0.06 um (the volume correction is off: see below); a ball that does not fall, or falls
/// with another g or dt, misses by millimetres from frame 1 on. Every frame until the ball's bottom
/// is within two cells of the floor is checked, and their number must be the one free fall
/// predicts. No sideways drift: mean horizontal velocity below 0.1 mm/s and centre within 1 mm.
#[test]
fn free_fall_follows_parabola() {
    let h = 0.02;
    let mut s = scene([-0.15, -0.15, -0.1], h, [15, 15, 50], 30.0, 12);
    let dt = 1.0 / 900.0;
    s.solver.fixed_dt = Some(dt);
    // The integrator alone: the volume correction (a position change every substep, tested by
    // the volume tests) spreads a freshly seeded ball's over-dense surface cells and moves its
    // centre by about 0.1 mm over two frames.
    s.solver.volume_correction = 0.0;
    assert_eq!(s.steps_per_frame(), 30);
    let r = 0.06;
    let z0 = 0.7;
    let p = seeded(
        &mut s,
        vec![Source::Sphere {
            center: [0.0, 0.0, z0],
            radius: r,
            velocity: [0.0; 3],
        }],
    );
    let n0 = p.len();
    // 2 x 2 x 2 per cell of 0.02 m: one particle per (0.01 m)^3 of the ball's 905 cm^3.
    let expected = 4.0 / 3.0 * std::f64::consts::PI * r.powi(3) / 0.01f64.powi(3);
    assert!(
        (n0 as f64 / expected - 1.0).abs() < 0.1,
        "ball seeded {n0} particles, its volume holds {expected:.0}"
    );
    let c0 = mean_position(&p);
    let bottom0 = p.pos[2].iter().fold(f64::INFINITY, |m, &z| m.min(z as f64));
    let floor = s.domain.lower[2] + h;
    let mut sim = Simulation::new(&s, p, 0).unwrap();
    let mut checked = 0u32;
    let mut worst = 0.0f64;
    run(&mut sim, s.time.frames, |sim, _| {
        let p = sim.particles();
        if min_z(p) < floor + 2.0 * h {
            return;
        }
        let n = (sim.frame() * s.steps_per_frame()) as f64;
        let c = mean_position(p);
        let expect = c0[2] - G * dt * dt * n * n / 2.0;
        worst = worst.max((c[2] - expect).abs());
        assert!(
            (c[2] - expect).abs() < 1e-4,
            "frame {}: centre z = {:.6}, free fall gives {expect:.6} (off by {:.3} mm)",
            sim.frame(),
            c[2],
            1e3 * (c[2] - expect).abs()
        );
        assert!(
            (c[0] - c0[0]).abs() < 1e-3 && (c[1] - c0[1]).abs() < 1e-3,
            "frame {}: sideways drift {c0:?} -> {c:?}",
            sim.frame()
        );
        let m = p.len() as f64;
        let vx = p.vel[0].iter().map(|&v| v as f64).sum::<f64>() / m;
        let vy = p.vel[1].iter().map(|&v| v as f64).sum::<f64>() / m;
        assert!(
            vx.abs() < 1e-4 && vy.abs() < 1e-4,
            "frame {}: sideways velocity ({vx}, {vy})",
            sim.frame()
        );
        assert_eq!(
            checked + 1,
            sim.frame(),
            "a frame in free fall after one near the floor"
        );
        checked += 1;
    });
    // Frames whose free fall keeps the ball's lowest particle two cells above the floor.
    let predicted = (1..=s.time.frames)
        .take_while(|&f| {
            let n = (f * s.steps_per_frame()) as f64;
            bottom0 - G * dt * dt * n * n / 2.0 >= floor + 2.0 * h
        })
        .count() as u32;
    eprintln!(
        "free fall: {checked} frames checked (predicted {predicted}), worst {:.4} mm",
        1e3 * worst
    );
    assert_eq!(checked, predicted, "frames in free fall");
}

/// A tank half full of liquid at rest stays at rest (hydrostatic balance: the exact solution
/// is u = 0, p = rho g depth). Checked every frame for 1 s (CFL-adaptive substeps): the largest
/// particle speed stays below 1e-4 m/s. Why that figure: the seeded particles are jittered, so
/// the first projection and density correction settle them by a fraction of a millimetre; a
/// pressure solve that left a residual of its tolerance (1e-6) against gravity's g dt = 0.33 m/s
/// kick per 1/30 s would leave about 3e-7 m/s, while a wrong hydrostatic balance (a missing
/// wall condition, gravity applied twice, the free surface held at the wrong pressure) moves
/// the water at g dt, thousands of times more. The surface height (mean of the columns' top
/// particles) moves less than a quarter cell.
#[test]
fn tank_at_rest_stays_still() {
    let h = 0.02;
    let mut s = scene([0.0, 0.0, 0.0], h, [12, 12, 16], 30.0, 30);
    let depth = 7.0 * h;
    let p = seeded(
        &mut s,
        vec![Source::Box {
            min: [h, h, h],
            max: [11.0 * h, 11.0 * h, h + depth],
            velocity: [0.0; 3],
        }],
    );
    let n0 = p.len();
    assert_eq!(n0, 10 * 10 * 7 * 8);
    let surf0 = surface_height(&s, &p);
    let mut sim = Simulation::new(&s, p, 0).unwrap();
    let mut worst = 0.0f64;
    run(&mut sim, s.time.frames, |sim, r| {
        let vmax = max_speed(sim.particles());
        worst = worst.max(vmax);
        assert_eq!(r.max_speed as f64, vmax, "report's max speed");
        assert!(vmax < 1e-4, "frame {}: max speed {vmax:e} m/s", sim.frame());
    });
    let p = sim.particles();
    let surf1 = surface_height(&s, p);
    eprintln!("rest: max speed over 1 s {worst:.2e} m/s, surface {surf0:.5} -> {surf1:.5} m");
    assert!(
        (surf1 - surf0).abs() < 0.25 * h,
        "surface moved from {surf0} to {surf1} (more than a quarter cell)"
    );
}

/// Mean over the inner (x, y) columns of the highest particle's z.
fn surface_height(s: &Scene, p: &Particles) -> f64 {
    let d = &s.domain;
    let (nx, ny) = (d.resolution[0] as usize, d.resolution[1] as usize);
    let mut top = vec![f64::NEG_INFINITY; nx * ny];
    for i in 0..p.len() {
        let x = p.position(i);
        let ci = ((x[0] as f64 - d.lower[0]) / d.cell_size) as usize;
        let cj = ((x[1] as f64 - d.lower[1]) / d.cell_size) as usize;
        let t = &mut top[ci + nx * cj];
        *t = t.max(x[2] as f64);
    }
    let cols: Vec<f64> = top.into_iter().filter(|t| t.is_finite()).collect();
    cols.iter().sum::<f64>() / cols.len() as f64
}

/// A counter-based hash to [-1, 1) (SplitMix64 finaliser): test noise with no RNG state.
fn noise(i: u64) -> f64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49d0_4f5d_3a4b);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

/// The projection alone, measured independently of the solver's own code. The liquid is a
/// dam-break L (a column on a pool) in a walled tank, with air above; the face velocities are a
/// smooth swirl plus noise (up to about 1.5 m/s) and a gravity kick, so the system has real
/// divergence to remove. After `PressureSolver::project` the test computes each fluid cell's
/// `sum_a (u_a+ - u_a-)` (divergence times h, m/s) itself from the face arrays and requires
/// `max |div h| <= tol * max |div h before| + 8 eps_f32 * u_max`: the solver's stopping rule
/// (max-norm residual relative to the right-hand side) plus the rounding of storing the six
/// face velocities in f32 (half an ulp of `u_max` each, 3 eps in all; 8 for margin), with
/// `u_max` the largest face speed measured after the solve. Also: the solve converged (residual
/// within tolerance, iterations below the cap), its `rhs_max` is the divergence the test
/// measured before, the wall faces still have zero normal velocity, only fluid faces changed,
/// and the system was not trivial (before, the divergence was 100 times what is allowed after).
#[test]
fn projection_leaves_fluid_divergence_free() {
    use surge::sim::mac_grid::{CellLabel, FaceKind, GridDims};
    use surge::sim::pressure::PressureSolver;
    let d = GridDims {
        n: [34, 8, 22],
        h: 0.01,
        lower: [0.0; 3],
        open: [[false; 2]; 3],
    };
    let n = d.n;
    let mut labels = vec![CellLabel::Empty; d.cells()];
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                let wall =
                    i == 0 || j == 0 || k == 0 || i + 1 == n[0] || j + 1 == n[1] || k + 1 == n[2];
                let liquid = (i <= 10 && k <= 16) || k <= 4;
                labels[d.cell(i, j, k)] = if wall {
                    CellLabel::Solid
                } else if liquid {
                    CellLabel::Fluid
                } else {
                    CellLabel::Empty
                };
            }
        }
    }
    let mut kinds: [Vec<FaceKind>; 3] = std::array::from_fn(|a| vec![FaceKind::Free; d.faces(a)]);
    surge::sim::forces::classify_faces(&d, &labels, &mut kinds);
    let dt = 1.0f32 / 300.0;
    // Face (a, i, j, k) sits at lower + h * ([i, j, k] + 0.5 - 0.5 e_a).
    let field = |a: usize, f: usize| -> f32 {
        let m = d.face_n(a);
        let (i, j, k) = (f % m[0], (f / m[0]) % m[1], f / (m[0] * m[1]));
        let x = [i as f64, j as f64, k as f64].map(|c| c * d.h as f64);
        let swirl = match a {
            0 => (7.0 * x[2]).sin() * (5.0 * x[0]).cos(),
            1 => 0.3 * (9.0 * x[0]).sin(),
            _ => -(7.0 * x[0]).cos() * (5.0 * x[2]).sin(),
        };
        let gravity = if a == 2 { -G * dt as f64 } else { 0.0 };
        (swirl + 0.5 * noise((a * 1_000_000 + f) as u64) + gravity) as f32
    };
    let div_h = |vel: &[Vec<f32>; 3], i: usize, j: usize, k: usize| -> f64 {
        let mut s = 0.0;
        for (a, v) in vel.iter().enumerate() {
            let m = d.face_n(a);
            let at = |ii: usize, jj: usize, kk: usize| v[ii + m[0] * (jj + m[1] * kk)] as f64;
            let e = [(a == 0) as usize, (a == 1) as usize, (a == 2) as usize];
            s += at(i + e[0], j + e[1], k + e[2]) - at(i, j, k);
        }
        s
    };
    let fluid_cells: Vec<[usize; 3]> = (0..d.cells())
        .filter(|&c| labels[c] == CellLabel::Fluid)
        .map(|c| [c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1])])
        .collect();
    // Both preconditioners (the same CG loop and stopping rule).
    for (tol, pc) in [1e-3, 1e-5].into_iter().flat_map(|t| {
        [
            (t, PressurePreconditioner::Mic0),
            (t, PressurePreconditioner::Multigrid),
        ]
    }) {
        let mut vel: [Vec<f32>; 3] = std::array::from_fn(|a| {
            (0..d.faces(a))
                .map(|f| {
                    if kinds[a][f] == FaceKind::Wall {
                        0.0
                    } else {
                        field(a, f)
                    }
                })
                .collect()
        });
        let before = vel.clone();
        let rhs_max = fluid_cells
            .iter()
            .map(|&[i, j, k]| div_h(&vel, i, j, k).abs())
            .fold(0.0, f64::max);
        let mut solver = PressureSolver::new(d.cells());
        solver.set_preconditioning(pc, d.n);
        let cap = 1000;
        let stats = solver.project(&d, &labels, &kinds, &mut vel, tol, cap, dt, false, None);
        assert!(
            stats.residual <= tol && stats.iterations < cap,
            "tol {tol} {pc:?}: not converged: {stats:?}"
        );
        assert_eq!(stats.unknowns as usize, fluid_cells.len());
        assert!(
            (stats.rhs_max - rhs_max).abs() <= 1e-9 * rhs_max,
            "solver's rhs_max {} vs measured {rhs_max}",
            stats.rhs_max
        );
        let umax = vel
            .iter()
            .flatten()
            .fold(0.0f64, |m, &u| m.max((u as f64).abs()));
        let allowed = tol * rhs_max + 8.0 * f32::EPSILON as f64 * umax;
        let worst = fluid_cells
            .iter()
            .map(|&[i, j, k]| div_h(&vel, i, j, k).abs())
            .fold(0.0, f64::max);
        eprintln!(
            "tol {tol}: max |div h| {rhs_max:.3e} -> {worst:.3e} m/s (allowed {allowed:.3e}, u_max {umax:.2} m/s, {} iterations)",
            stats.iterations
        );
        assert!(
            worst <= allowed,
            "tol {tol}: max |div h| = {worst:e} > {allowed:e} (before {rhs_max:e}, {} its)",
            stats.iterations
        );
        assert!(rhs_max > 100.0 * allowed, "trivial system: {rhs_max:e}");
        for a in 0..3 {
            for f in 0..d.faces(a) {
                match kinds[a][f] {
                    FaceKind::Wall => assert_eq!(vel[a][f], 0.0, "wall face {a}/{f} moved"),
                    FaceKind::Free => {
                        assert_eq!(vel[a][f], before[a][f], "free face {a}/{f} changed")
                    }
                    FaceKind::Fluid => {}
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------

/// Reads the tutorial's particle file with surge's own reader (line 1 N, then `x y z vx vy vz`).
fn read_tutorial_particles(path: &str) -> Particles {
    let text = std::fs::read_to_string(path).unwrap();
    surge::sources::parse_particle_text(&text, std::path::Path::new(path)).unwrap()
}

/// The tutorial scene (`inputs/fluid.json`), built by hand.
fn tutorial_scene(frames: u32) -> Scene {
    let mut s = scene([-0.125, -0.25, -0.125], 0.01, [25, 50, 25], 30.0, frames);
    s.solver.fixed_dt = Some(0.001111112);
    s.solver.flip_ratio = 0.95;
    s
}

/// The tutorial input runs 0.5 s (15 frames of 30 steps): the ball falls freely until it reaches
/// the floor (inner floor z = -0.115), then spreads on it; the count stays 33,389.
#[test]
fn tutorial_ball_falls_and_lands() {
    let s = tutorial_scene(15);
    assert_eq!(s.steps_per_frame(), 30);
    let p = read_tutorial_particles(concat!(env!("CARGO_MANIFEST_DIR"), "/inputs/particles.in"));
    assert_eq!(p.len(), 33_389);
    let c0 = mean_position(&p);
    let dt = 0.001111112;
    let floor = -0.115;
    let mut sim = Simulation::new(&s, p, 0).unwrap();
    let mut zs = vec![c0[2]];
    run(&mut sim, 15, |sim, r| {
        assert_eq!(r.substeps, 30);
        zs.push(mean_position(sim.particles())[2]);
        let c = mean_position(sim.particles());
        assert!(c[0].abs() < 2e-3 && c[1].abs() < 2e-3, "drift: {c:?}");
    });
    // Frame 1 (t = 1/30 s): the ball's bottom is still a cell above the floor, so it is in free
    // fall. The stepper's leapfrog (a half first kick) gives the parabola z0 - g t^2 / 2
    // exactly for a uniform velocity field; check it within 1% of the fall, and closer than
    // symplectic Euler's z0 - g dt^2 n (n + 1) / 2 (g t dt / 2 = 0.18 mm lower) would be.
    let n = 30.0;
    let t = n * dt;
    let parabola = c0[2] - 0.5 * G * t * t;
    assert!(
        (zs[1] - parabola).abs() < 0.01 * (c0[2] - parabola),
        "frame 1: centre z {} vs free fall {parabola}",
        zs[1]
    );
    assert!((zs[1] - parabola).abs() < 0.5 * G * t * dt);
    // Then it lands: the centre keeps going down and ends within 6 cm of the floor, every
    // particle above it.
    for w in zs.windows(2).take(6) {
        assert!(w[1] < w[0], "centre rose while falling: {zs:?}");
    }
    assert!(
        zs[15] - floor < 0.06,
        "centre at 0.5 s: {} ({zs:?})",
        zs[15]
    );
    assert!(min_z(sim.particles()) > floor);
}

// ---------------------------------------------------------------------------------------------

fn bytes(p: &Particles) -> Vec<u8> {
    p.pos
        .iter()
        .chain(p.vel.iter())
        .flat_map(|v| v.iter().flat_map(|x| x.to_le_bytes()))
        .collect()
}

/// Resuming from the particles of frame k gives the same bytes as the uninterrupted run, and
/// with small preconditioner blocks (so that the block-parallel MIC(0) solves split here) 1, 2
/// and 3 threads agree. This scene (1,600 particles) is below the particle loops' parallel
/// thresholds; `tests/cli.rs` compares thread counts on the full default dam break, where every
/// loop splits.
#[test]
fn deterministic_across_threads_and_resume() {
    deterministic_with(PressurePreconditioner::Mic0);
}

/// The same with the multigrid preconditioner (its sweeps run slabs of planes in parallel).
#[test]
fn deterministic_across_threads_and_resume_multigrid() {
    deterministic_with(PressurePreconditioner::Multigrid);
}

/// The same with crowded cells thinned in most substeps (`solver.max_particles_per_cell` 9,
/// the lowest allowed, far below the default 24, so that this small, uncrowded scene is
/// thinned: 3 particles taken at 12): which particles leave, and where the moved ones land
/// (in this small, well-filled tank nearly all find room: the removals may be none), is the
/// same for any thread count and after a resume.
#[test]
fn deterministic_across_threads_and_resume_with_thinning() {
    let (removed, moved) = deterministic_with_bound(PressurePreconditioner::Mic0, Some(9));
    eprintln!("{removed} particles removed, {moved} moved");
    assert!(
        moved > 100,
        "expected crowded cells to be thinned into emptier ones, {moved} moved"
    );
}

fn deterministic_with(pc: PressurePreconditioner) {
    deterministic_with_bound(pc, None);
}

/// Returns the particles removed from crowded cells in the 8 frames, and those moved.
fn deterministic_with_bound(pc: PressurePreconditioner, max_per_cell: Option<u32>) -> (u64, u64) {
    let h = 0.02;
    let mut s = dam_break_scene(h, 30.0, 8);
    s.solver.pressure_preconditioner = pc;
    if let Some(m) = max_per_cell {
        s.solver.max_particles_per_cell = m;
    }
    let p0 = dam_break_particles(&mut s, h);
    // (particles, last substep length): the state a checkpoint holds.
    let go = |threads: usize, (p, last): (Particles, f64), from: u32, to: u32| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut sim = Simulation::new(&s, p, from)
                .unwrap()
                .with_last_substep(last)
                .unwrap();
            // Small preconditioner blocks, so the parallel block solves run here too.
            sim.set_preconditioner_block_rows(64);
            let (mut substeps, mut removed) = (0, (0, 0));
            while sim.frame() < to {
                let r = sim.advance_frame();
                substeps += r.substeps;
                removed.0 += r.crowded_removed;
                removed.1 += r.crowded_moved;
            }
            (
                (sim.particles().clone(), sim.last_substep()),
                substeps,
                removed,
            )
        })
    };
    let start = (p0.clone(), 0.0);
    let ((one, _), n1, removed) = go(1, start.clone(), 0, 8);
    let ((two, _), _, _) = go(2, start.clone(), 0, 8);
    let ((three, _), _, _) = go(3, start.clone(), 0, 8);
    assert!(n1 > 8, "expected several substeps per frame, got {n1}");
    assert_ne!(bytes(&one), bytes(&p0), "nothing moved");
    assert!(bytes(&one) == bytes(&two), "1 vs 2 threads differ");
    assert!(bytes(&one) == bytes(&three), "1 vs 3 threads differ");
    let (mid, _, _) = go(2, start, 0, 4);
    assert!(mid.1 > 0.0, "the last substep's length is recorded");
    let ((resumed, _), _, _) = go(2, mid.clone(), 4, 8);
    assert!(
        bytes(&one) == bytes(&resumed),
        "resume from frame 4 differs"
    );
    removed
}

/// A particle with a NaN coordinate is refused with an error naming it, not simulated.
#[test]
fn non_finite_particle_is_an_error() {
    let mut s = scene([0.0; 3], 0.1, [5, 5, 5], 30.0, 1);
    let mut p = seeded(
        &mut s,
        vec![Source::Box {
            min: [0.1; 3],
            max: [0.2; 3],
            velocity: [0.0; 3],
        }],
    );
    assert!(Simulation::new(&s, p.clone(), 0).is_ok());
    p.vel[2][3] = f32::NAN;
    let err = Simulation::new(&s, p, 0)
        .err()
        .expect("NaN accepted")
        .to_string();
    assert!(err.contains("particle 3"), "{err}");
}

/// CFL-adaptive substeps end each frame exactly at its time (the substep lengths sum to the
/// frame's length), stay within the substep limits, and get shorter as the liquid speeds up
/// (with the gravity-wave bound `solver.surface_wave_step` off, which on this 2 cm grid at
/// 24 fps would otherwise set two substeps per frame from the start: checked last, every
/// substep at most 0.47 sqrt(h / |g|) = 0.0212 s, to rounding).
#[test]
fn adaptive_substeps_cover_each_frame_exactly() {
    let h = 0.02;
    // The uncapped run's counts: the cap of 1 must bind somewhere for its check to mean
    // anything.
    let mut uncapped: Vec<u32> = vec![];
    for (max_substeps, wave) in [(64, 0.0), (1, 0.0), (64, 0.47)] {
        let mut s = dam_break_scene(h, 24.0, 10);
        s.solver.max_substeps = max_substeps;
        s.solver.surface_wave_step = wave;
        let p = dam_break_particles(&mut s, h);
        let mut sim = Simulation::new(&s, p, 0).unwrap();
        let mut counts = vec![];
        run(&mut sim, s.time.frames, |sim, r| {
            let k = sim.frame();
            let len = s.frame_time(k) - s.frame_time(k - 1);
            let sum: f64 = r.substep_reports.iter().map(|x| x.dt as f32 as f64).sum();
            assert_eq!(r.substep_reports.len() as u32, r.substeps);
            assert!(r.substeps <= max_substeps, "{r:?}");
            assert!(
                (sum - len).abs() < 1e-6 * len,
                "frame {k}: substeps sum to {sum}, frame is {len}"
            );
            counts.push(r.substeps);
            if wave > 0.0 {
                let bound = wave * (h / 9.80665f64).sqrt();
                for x in &r.substep_reports {
                    assert!(x.dt <= bound * (1.0 + 1e-6), "{x:?} over {bound} s");
                }
            }
        });
        if wave > 0.0 {
            assert!(counts.iter().all(|&n| n >= 2), "{counts:?}");
        } else if max_substeps == 64 {
            assert!(
                counts.last() > counts.first(),
                "substeps did not grow as the column collapsed: {counts:?}"
            );
            uncapped = counts;
        } else {
            // The cap binds: the collapsing column wants 2 substeps a frame from frame 3 on
            // (the run with 64 above grows from 1 to 2), and every frame takes just 1 (each
            // frame's count is at most the cap, checked above).
            assert!(
                uncapped.iter().any(|&n| n >= 2),
                "the uncapped run never took 2 substeps, so the cap of 1 never bound: {uncapped:?}"
            );
            assert!(
                counts.iter().all(|&n| n == 1),
                "cap of 1 exceeded: {counts:?}"
            );
        }
    }
}

/// Degenerate inputs run without panicking: no particles at all (no speed), and a single fast
/// particle (54.8 m/s: its first substep is the CFL rule's, and the frame takes more than
/// one substep; the cap of 64 is far from reached).
#[test]
fn empty_and_single_particle_scenes_run() {
    let s = scene([0.0; 3], 0.1, [6, 6, 6], 30.0, 3);
    let mut sim = Simulation::new(&s, Particles::default(), 0).unwrap();
    run(&mut sim, 3, |_, r| assert_eq!(r.max_speed, 0.0));
    let mut p = Particles::default();
    p.push([0.3, 0.3, 0.3], [50.0, -20.0, 10.0]);
    let mut sim = Simulation::new(&s, p, 0).unwrap();
    // The first substep follows the CFL rule: the longest dt with (u + |g| dt) dt <= cfl h for
    // the particle's speed u = |(50, -20, 10)| (5.47 ms, far below the frame's 33 ms), the
    // frame then cut into equal substeps no longer than that (7 of 4.76 ms).
    let u = (50.0f64 * 50.0 + 20.0 * 20.0 + 10.0 * 10.0).sqrt();
    let reach = s.solver.cfl * s.domain.cell_size;
    let dt_rule = 2.0 * reach / (u + (u * u + 4.0 * G * reach).sqrt());
    let dt_cfl = (1.0 / 30.0) / ((1.0 / 30.0) / dt_rule).ceil();
    assert!(dt_cfl <= dt_rule && dt_cfl > 0.8 * dt_rule);
    let mut first = true;
    run(&mut sim, 3, |_, r| {
        if std::mem::take(&mut first) {
            let dt0 = r.substep_reports[0].dt;
            assert!(
                (dt0 / dt_cfl - 1.0).abs() < 1e-6,
                "first substep {dt0} s, CFL rule {dt_cfl} s"
            );
            assert!(r.substeps >= 2, "{r:?}");
        }
    });
}
