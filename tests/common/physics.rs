//! Helpers of the physics tests (`tests/physics*.rs`): scenes built in code, seeding, and a
//! frame loop that checks conservation and converged pressure solves after every frame.

use surge::scene::{Domain, LoadedScene, Scene, SolverSettings, Source, TimeSettings};
use surge::sim::{FrameReport, Particles, SimSettings, Simulation};

pub const G: f64 = surge::scene::STANDARD_GRAVITY;

/// A scene from its JSON text, as `surge` would load a `scenes/test.json` holding it (relative
/// paths resolve in `scenes/`); panics if it does not load.
pub fn load_json(json: &str) -> LoadedScene {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    surge::scene::load_str(json, &dir.join("test.json"), &dir).expect("scene loads")
}

/// A scene with `resolution` cells of `h` from `lower`, gravity -z, default solver.
pub fn scene(lower: [f64; 3], h: f64, resolution: [u32; 3], fps: f64, frames: u32) -> Scene {
    Scene {
        emitters: Vec::new(),
        sinks: Vec::new(),
        limits: Default::default(),
        name: "test".into(),
        domain: Domain {
            lower,
            cell_size: h,
            resolution,
            boundaries: Default::default(),
            friction: Default::default(),
        },
        gravity: [0.0, 0.0, -G],
        density: 1000.0,
        sources: vec![],
        seed: 7,
        time: TimeSettings { fps, frames },
        solver: SolverSettings::default(),
        surface: Default::default(),
        render: Default::default(),
        output: Default::default(),
        obstacles: Vec::new(),
        built_obstacles: Default::default(),
    }
}

/// Seeds `sources` into `scene` (jittered 2x2x2 per cell).
pub fn seeded(scene: &mut Scene, sources: Vec<Source>) -> Particles {
    scene.sources = sources;
    surge::sources::seed_particles(scene, &[])
}

/// Count, finiteness, and every particle strictly inside the inner (non-wall) box.
pub fn check_conservation(scene: &SimSettings, p: &Particles, n0: usize, when: &str) {
    assert_eq!(p.len(), n0, "{when}: particle count changed");
    let d = &scene.domain;
    for i in 0..p.len() {
        let x = p.position(i);
        let v = p.velocity(i);
        assert!(
            x.iter().chain(v.iter()).all(|c| c.is_finite()),
            "{when}: particle {i} not finite: {x:?} {v:?}"
        );
        for a in 0..3 {
            let lo = d.lower[a] + d.cell_size;
            let hi = d.lower[a] + (d.resolution[a] - 1) as f64 * d.cell_size;
            assert!(
                (x[a] as f64) > lo && (x[a] as f64) < hi,
                "{when}: particle {i} at {x:?} is outside the inner box (axis {a}: {lo}..{hi})"
            );
        }
    }
}

pub fn mean_position(p: &Particles) -> [f64; 3] {
    let n = p.len() as f64;
    std::array::from_fn(|a| p.pos[a].iter().map(|&x| x as f64).sum::<f64>() / n)
}

pub fn min_z(p: &Particles) -> f64 {
    p.pos[2].iter().fold(f64::INFINITY, |m, &z| m.min(z as f64))
}

pub fn max_speed(p: &Particles) -> f64 {
    p.max_speed() as f64
}

/// Root-mean-square particle speed, m/s (a tank at rest: how far from rest the liquid is).
pub fn rms_speed(p: &Particles) -> f64 {
    let sum: f64 = (0..p.len())
        .map(|i| {
            let v = p.velocity(i);
            (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) as f64
        })
        .sum();
    (sum / p.len() as f64).sqrt()
}

/// Runs `frames` frames, checking conservation after each (the count falls exactly by the
/// particles the frame reports removed from crowded cells, `solver.max_particles_per_cell`);
/// returns per-frame reports.
pub fn run(sim: &mut Simulation, frames: u32, mut each: impl FnMut(&Simulation, &FrameReport)) {
    let mut n0 = sim.particles().len();
    for _ in 0..frames {
        let r = sim.advance_frame();
        let when = format!("frame {}", sim.frame());
        n0 -= r.crowded_removed as usize;
        check_conservation(sim.settings(), sim.particles(), n0, &when);
        // Every substep's pressure solve converged: residual within the tolerance, reached
        // before the iteration cap (a solve that stops at the cap has not converged).
        let solver = &sim.settings().solver;
        for (k, sr) in r.substep_reports.iter().enumerate() {
            assert!(
                sr.pressure_residual <= solver.pressure_tolerance
                    && sr.pressure_iterations < solver.pressure_max_iterations,
                "{when}, substep {k}: pressure solve did not converge: {sr:?}"
            );
        }
        assert!(
            r.pressure_residual_max <= solver.pressure_tolerance
                && r.pressure_iterations_max < solver.pressure_max_iterations,
            "{when}: pressure solve did not converge: {r:?}"
        );
        each(sim, &r);
    }
}

/// Martin & Moyce (1952) dam break: a column `a` wide and `n^2 a = 2a` high against the back
/// wall of a tank, quasi-2D (4 cells deep, free-slip front and back walls).
pub fn dam_break_scene(h: f64, fps: f64, frames: u32) -> Scene {
    let a = 0.1;
    let (nx, ny, nz) = ((0.6 / h).round() as u32, 4, (0.25 / h).round() as u32);
    let _ = a;
    scene([0.0, 0.0, 0.0], h, [nx + 2, ny + 2, nz + 2], fps, frames)
}

pub fn dam_break_particles(s: &mut Scene, h: f64) -> Particles {
    let a = 0.1;
    let depth = 4.0 * h;
    seeded(
        s,
        vec![Source::Box {
            min: [h, h, h],
            max: [h + a, h + depth, h + 2.0 * a],
            velocity: [0.0; 3],
        }],
    )
}

/// Smallest signed distance to any obstacle over all particles at time `t` (m), and the index.
pub fn min_distance(l: &LoadedScene, sim: &Simulation, t: f64) -> (f64, usize) {
    let p = sim.particles();
    let solids = &l.scene.built_obstacles.solids;
    let mut best = (f64::INFINITY, 0);
    for i in 0..p.len() {
        let q = p.position(i).map(|c| c as f64);
        let d = solids
            .iter()
            .map(|s| s.signed_distance(q, t))
            .fold(f64::INFINITY, f64::min);
        if d < best.0 {
            best = (d, i);
        }
    }
    best
}

/// The highest particle of each column of cells `(floor((x - x_shift) / cell), floor(y /
/// cell))`: a free surface read column by column (`x_shift` follows a container moving in x).
pub fn column_tops(
    p: &Particles,
    cell: f64,
    x_shift: f64,
) -> std::collections::BTreeMap<(i64, i64), f64> {
    let mut tops = std::collections::BTreeMap::new();
    for i in 0..p.len() {
        let [x, y, z] = p.position(i);
        let key = (
            ((x as f64 - x_shift) / cell).floor() as i64,
            (y as f64 / cell).floor() as i64,
        );
        let e = tops.entry(key).or_insert(f64::MIN);
        *e = e.max(z as f64);
    }
    tops
}

/// A ball of radius 6 cm falling from 0.7 m for five 1/30 s frames at a fixed 1/900 s step,
/// far above the floor, with the volume correction off (`free_fall_follows_parabola` in
/// `tests/physics.rs` says why) and `configure` applied to the scene: every frame, its centre
/// must follow the parabola `z0 - g t^2 / 2` (exact for the fixed-step leapfrog) within 0.1 mm
/// (that test's bound and reason) and stay within 1 mm of its start across. Shared by the
/// options' versions of that test (APIC, the ghost fluid).
#[allow(dead_code)]
pub fn ball_falls_on_the_parabola(configure: impl FnOnce(&mut Scene)) {
    let h = 0.02;
    let mut s = scene([-0.15, -0.15, -0.1], h, [15, 15, 50], 30.0, 5);
    let dt = 1.0 / 900.0;
    s.solver.fixed_dt = Some(dt);
    s.solver.volume_correction = 0.0;
    configure(&mut s);
    let p = seeded(
        &mut s,
        vec![Source::Sphere {
            center: [0.0, 0.0, 0.7],
            radius: 0.06,
            velocity: [0.0; 3],
        }],
    );
    let c0 = mean_position(&p);
    let mut sim = Simulation::new(&s, p, 0).unwrap();
    let mut checked = 0;
    run(&mut sim, s.time.frames, |sim, _| {
        let n = (sim.frame() * s.steps_per_frame()) as f64;
        let c = mean_position(sim.particles());
        let expect = c0[2] - G * dt * dt * n * n / 2.0;
        assert!(
            (c[2] - expect).abs() < 1e-4,
            "frame {}: centre z = {:.6}, free fall gives {expect:.6}",
            sim.frame(),
            c[2]
        );
        assert!((c[0] - c0[0]).abs() < 1e-3 && (c[1] - c0[1]).abs() < 1e-3);
        checked += 1;
    });
    assert_eq!(checked, 5);
}
