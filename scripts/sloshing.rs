//! Small-amplitude sloshing: a standing wave in a quasi-2D tank (shared by
//! `scripts/validate_physics.rs` and `tests/physics_sloshing.rs`).
//!
//! The tank is `L` long (x), four cells deep in y (free-slip walls: quasi-2D) and holds water
//! `L / 2` deep. The first mode has wavelength `2 L` (`k = pi / L`), and linear theory (Airy;
//! e.g. Lamb, *Hydrodynamics*, sec. 227) gives `omega^2 = g k tanh(k depth)`. The wave starts
//! from a flat surface with the mode's potential-flow velocity at its largest,
//! `u = -A omega sin(k x) cosh(k (z - z_b)) / sinh(k depth)`,
//! `w = A omega cos(k x) sinh(k (z - z_b)) / sinh(k depth)`, so that the surface then follows
//! `eta = A cos(k x) sin(omega t)`; with APIC the particles also get that field's gradient as
//! their affine matrices. `A = L / 40` (`k A = 0.079`, small enough for linear theory to hold
//! within about `(k A)^2`, 0.6%, and a third of a cell at the coarsest grid).
//!
//! Measured: the liquid's centre of mass along x, which the mode moves by
//! `-(2 / pi^2) (A / depth) L sin(omega t)` and nothing else (no other mode is excited at
//! first order). The period is twice the mean time between successive zero crossings of
//! `x_cm - x_cm(0)` (linear interpolation between frames), the amplitude loss per period from
//! the extremes of successive half-cycles (parabola through the largest sample and its
//! neighbours).

use surge::scene::{Domain, STANDARD_GRAVITY, Scene, SolverSettings, Source, TimeSettings};
use surge::sim::{Particles, Simulation, Transfer};

/// What one run measured.
#[derive(Debug, Clone, Copy)]
pub struct Sloshing {
    /// Period from linear theory, s.
    pub theory: f64,
    /// Measured period, s.
    pub period: f64,
    /// Amplitude lost per period, as a fraction.
    pub loss_per_period: f64,
    /// Zero crossings seen.
    pub crossings: usize,
}

impl Sloshing {
    /// Relative period error.
    pub fn period_error(&self) -> f64 {
        self.period / self.theory - 1.0
    }
}

/// The tank of `cells_per_wavelength` cells per wavelength (`L = 1` m), sampled `per_period`
/// times a period for `periods` periods.
pub fn tank(
    cells_per_wavelength: u32,
    solver: SolverSettings,
    per_period: f64,
    periods: f64,
    seed: u64,
) -> (Scene, Particles, f64) {
    let transfer = solver.transfer;
    let len = 1.0;
    let cells = cells_per_wavelength / 2;
    let h = len / cells as f64;
    let depth = 0.5 * len;
    let dcells = cells / 2;
    let air = (cells / 4).max(4);
    let g = STANDARD_GRAVITY;
    let k = std::f64::consts::PI / len;
    let omega = (g * k * (k * depth).tanh()).sqrt();
    let period = 2.0 * std::f64::consts::PI / omega;
    let fps = per_period / period;
    let s = Scene {
        name: "sloshing".into(),
        domain: Domain {
            lower: [0.0; 3],
            cell_size: h,
            resolution: [cells + 2, 4 + 2, dcells + air + 2],
            boundaries: Default::default(),
            friction: Default::default(),
        },
        gravity: [0.0, 0.0, -g],
        density: 1000.0,
        sources: vec![Source::Box {
            min: [h, h, h],
            max: [h + len, 5.0 * h, h + depth],
            velocity: [0.0; 3],
        }],
        seed,
        time: TimeSettings {
            fps,
            frames: (per_period * periods).ceil() as u32,
        },
        solver,
        surface: Default::default(),
        render: Default::default(),
        output: Default::default(),
        emitters: Vec::new(),
        sinks: Vec::new(),
        limits: Default::default(),
        obstacles: Vec::new(),
        built_obstacles: Default::default(),
    };
    // Diagnostics (`scripts/slosh_loss.rs`): `SLOSHING_PPC_SPACING=r` seeds on a grid `r`
    // times finer (`8 r^3` particles per cell; the density correction and the thinning then
    // see an over-dense liquid, so switch them off), `SLOSHING_AMP=f` scales the amplitude.
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<f64>().ok());
    let mut fine = s.clone();
    if let Some(r) = env("SLOSHING_PPC_SPACING") {
        fine.domain.cell_size = h / r;
        fine.domain.resolution = s.domain.resolution.map(|n| (n as f64 * r).ceil() as u32);
    }
    let mut p = surge::sources::seed_particles(&fine, &[]);
    // `SLOSHING_JITTER=f` scales each particle's offset from its seeding lattice site (0: a
    // regular lattice).
    if let Some(f) = env("SLOSHING_JITTER") {
        let sub = 0.5 * fine.domain.cell_size;
        for a in 0..3 {
            for x in p.pos[a].iter_mut() {
                let c = ((*x as f64 / sub).floor() + 0.5) * sub;
                *x = (c + f * (*x as f64 - c)) as f32;
            }
        }
    }
    let amp = len / 40.0 * env("SLOSHING_AMP").unwrap_or(1.0);
    let (x0, zb) = (h, h);
    let sh = (k * depth).sinh();
    if transfer == Transfer::Apic {
        p.affine = std::array::from_fn(|_| vec![0.0; p.len()]);
    }
    for i in 0..p.len() {
        let x = p.pos[0][i] as f64 - x0;
        let z = p.pos[2][i] as f64 - zb;
        let (sn, cs) = (k * x).sin_cos();
        let (chz, shz) = ((k * z).cosh() / sh, (k * z).sinh() / sh);
        let a = amp * omega;
        p.vel[0][i] = (-a * sn * chz) as f32;
        p.vel[2][i] = (a * cs * shz) as f32;
        if transfer == Transfer::Apic {
            // d u/dx, d u/dz, d w/dx, d w/dz (affine[3 a + b]).
            p.affine[0][i] = (-a * k * cs * chz) as f32;
            p.affine[2][i] = (-a * k * sn * shz) as f32;
            p.affine[6][i] = (-a * k * sn * shz) as f32;
            p.affine[8][i] = (a * k * cs * chz) as f32;
        }
    }
    (s, p, period)
}

pub fn centre_x(p: &Particles) -> f64 {
    p.pos[0].iter().map(|&x| x as f64).sum::<f64>() / p.len() as f64
}

/// Runs the tank with `solver` settings and measures its period and amplitude loss, with the
/// particles' jitter seed `SLOSHING_SEED` (default 5; another seed jitters them differently,
/// for the measure's scatter).
pub fn run(cells_per_wavelength: u32, solver: SolverSettings, periods: f64) -> Sloshing {
    let seed = std::env::var("SLOSHING_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    run_seeded(cells_per_wavelength, solver, periods, seed)
}

/// [`run`] with the jitter seed given.
pub fn run_seeded(
    cells_per_wavelength: u32,
    solver: SolverSettings,
    periods: f64,
    seed: u64,
) -> Sloshing {
    let per_period = 40.0;
    let (s, p, theory) = tank(cells_per_wavelength, solver, per_period, periods, seed);
    let mut sim = Simulation::new(&s, p, 0).expect("sloshing scene");
    if std::env::var("SLOSHING_EULER").is_ok() {
        sim.set_kick_rule(surge::sim::KickRule::SymplecticEuler);
    }
    let x0 = centre_x(sim.particles());
    let mut samples = vec![(0.0, 0.0)];
    for _ in 0..s.time.frames {
        sim.advance_frame();
        samples.push((s.frame_time(sim.frame()), centre_x(sim.particles()) - x0));
    }
    if std::env::var("SLOSHING_SAMPLES").is_ok() {
        for (t, x) in &samples {
            eprintln!("{t:.4} {x:+.6}");
        }
    }
    analyse(theory, &samples)
}

/// Period and amplitude loss per period of a signal `(t, x)` that starts at `x = 0` and
/// oscillates about it (the centre-of-mass excursion of [`run_seeded`]).
pub fn analyse(theory: f64, samples: &[(f64, f64)]) -> Sloshing {
    // Zero crossings (after the start, which is one).
    let mut zeros = vec![0.0];
    for w in samples.windows(2) {
        let ((t0, a), (t1, b)) = (w[0], w[1]);
        if t0 > 0.0 && (a < 0.0) != (b < 0.0) && a != b {
            zeros.push(t0 + (t1 - t0) * a / (a - b));
        }
    }
    let n = zeros.len();
    let period = if n >= 2 {
        2.0 * (zeros[n - 1] - zeros[0]) / (n - 1) as f64
    } else {
        f64::NAN
    };
    // Extremes of each half cycle between zero crossings.
    let mut peaks = Vec::new();
    for w in zeros.windows(2) {
        let inside: Vec<usize> = (0..samples.len())
            .filter(|&i| samples[i].0 > w[0] && samples[i].0 < w[1])
            .collect();
        let Some(&m) = inside
            .iter()
            .max_by(|&&i, &&j| samples[i].1.abs().total_cmp(&samples[j].1.abs()))
        else {
            continue;
        };
        if m == 0 || m + 1 >= samples.len() {
            continue;
        }
        peaks.push(parabolic_peak(
            samples[m - 1].1.abs(),
            samples[m].1.abs(),
            samples[m + 1].1.abs(),
        ));
    }
    let loss_per_period = if peaks.len() >= 2 {
        let halves = (peaks.len() - 1) as f64;
        1.0 - (peaks[peaks.len() - 1] / peaks[0]).powf(2.0 / halves)
    } else {
        f64::NAN
    };
    Sloshing {
        theory,
        period,
        loss_per_period,
        crossings: n - 1,
    }
}

/// The extreme of the parabola through three equally spaced samples `ym`, `y0`, `yp` (the
/// middle one the largest): a peak between samples.
pub fn parabolic_peak(ym: f64, y0: f64, yp: f64) -> f64 {
    let den = ym - 2.0 * y0 + yp;
    let off = if den != 0.0 {
        0.5 * (ym - yp) / den
    } else {
        0.0
    };
    y0 - 0.25 * (ym - yp) * off
}
