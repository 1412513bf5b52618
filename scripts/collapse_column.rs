//! The quasi-2D collapsing column shared by `scripts/validate_physics.rs` (full resolution,
//! prints measured against reference) and `tests/physics_framerate.rs` (reduced form): a column
//! `a` wide and `2a` high (Martin & Moyce 1952, n^2 = 2) against the back wall of a tank `6a`
//! long, 4 cells deep between free-slip front and back walls, released from rest.
//!
//! Measured as Martin & Moyce did: the surge front `Z = x / a` (x from the back wall to the
//! leading edge) and the residual height `H = z / a` of the liquid at the back wall, against
//! `T = t sqrt(2 g / a)` (front, their Table 2) and `tau = t sqrt(g / a)` (height, Table 6).
//! The leading edge / top is the farthest particle plus a quarter cell (half a particle
//! spacing), as in `tests/physics.rs`.

#![allow(dead_code)]

use surge::scene::{Domain, STANDARD_GRAVITY, Scene, SolverSettings, Source, TimeSettings};
use surge::sim::{Particles, Simulation};

/// Martin & Moyce (1952) Table 2, n^2 = 2: front Z against T = t sqrt(2 g / a) (as in
/// `tests/physics.rs`).
pub const MM_FRONT_T: [f64; 15] = [
    0.41, 0.84, 1.19, 1.43, 1.63, 1.83, 1.98, 2.20, 2.32, 2.51, 2.65, 2.83, 2.98, 3.11, 3.33,
];
pub const MM_FRONT_Z: [f64; 15] = [
    1.11, 1.22, 1.44, 1.67, 1.89, 2.11, 2.33, 2.56, 2.78, 3.00, 3.22, 3.44, 3.67, 3.89, 4.11,
];
/// Martin & Moyce (1952) Table 6, n^2 = 2 (the 2.25 in column): residual height at the back
/// wall `H* = z / (n^2 a)` against `tau = t sqrt(g / a)`, as reproduced (with Table 2) in public
/// validation scripts (e.g. Ocellaris' dam-break plotting script). `H*` = 1 at rest.
pub const MM_HEIGHT_TAU: [f64; 17] = [
    0.56, 0.77, 0.93, 1.08, 1.28, 1.46, 1.66, 1.84, 2.00, 2.21, 2.45, 2.70, 3.06, 3.44, 4.20, 5.25,
    7.40,
];
pub const MM_HEIGHT_H: [f64; 17] = [
    0.94, 0.89, 0.83, 0.78, 0.72, 0.67, 0.61, 0.56, 0.50, 0.44, 0.39, 0.33, 0.28, 0.22, 0.17, 0.11,
    0.06,
];

/// Linear interpolation in a table (clamped at its ends).
pub fn interp(xs: &[f64], ys: &[f64], x: f64) -> f64 {
    if x <= xs[0] {
        return ys[0];
    }
    for k in 1..xs.len() {
        if x <= xs[k] {
            let f = (x - xs[k - 1]) / (xs[k] - xs[k - 1]);
            return ys[k - 1] + f * (ys[k] - ys[k - 1]);
        }
    }
    ys[ys.len() - 1]
}

/// The column scene: `cells` cells across the column of width `a` (m), `fps`, `frames`.
pub fn column(a: f64, cells: u32, fps: f64, frames: u32) -> (Scene, Particles) {
    let h = a / cells as f64;
    let n = [6 * cells + 2, 4 + 2, 2 * cells + cells / 4 + 2];
    let mut s = Scene {
        name: "column".into(),
        domain: Domain {
            lower: [0.0; 3],
            cell_size: h,
            resolution: n,
            boundaries: Default::default(),
            friction: Default::default(),
        },
        gravity: [0.0, 0.0, -STANDARD_GRAVITY],
        density: 1000.0,
        sources: vec![Source::Box {
            min: [h, h, h],
            max: [h + a, 5.0 * h, h + 2.0 * a],
            velocity: [0.0; 3],
        }],
        seed: 3,
        time: TimeSettings { fps, frames },
        solver: SolverSettings::default(),
        surface: Default::default(),
        render: Default::default(),
        output: Default::default(),
        emitters: Vec::new(),
        sinks: Vec::new(),
        limits: Default::default(),
        obstacles: Vec::new(),
        built_obstacles: Default::default(),
    };
    let p = surge::sources::seed_particles(&s, &[]);
    s.time.frames = frames;
    (s, p)
}

/// Adds a gate to column scene `s` (column width `a`, m) that holds the column at the start
/// and is lifted straight up at `speed` (m/s) from t = 0, to model a release that is not
/// instantaneous: a free-slip box two cells thick against the column's open face, across the
/// tank's depth, lifted until its lower edge is `3 a` above the floor (a keyframed obstacle).
pub fn with_gate(s: &mut Scene, a: f64, speed: f64) {
    let h = s.domain.cell_size;
    let lift = 3.0 * a;
    let gate = serde_json::json!({
        "type": "box", "min": [0.0, -1.0, 0.0], "max": [2.0 * h, 1.0, 2.5 * a],
        "keyframes": [
            {"time": 0.0, "translate": [h + a, 0.0, 0.0]},
            {"time": lift / speed, "translate": [h + a, 0.0, lift]},
            {"time": lift / speed + 100.0, "translate": [h + a, 0.0, lift]}]
    });
    s.obstacles = vec![serde_json::from_value(gate).expect("the gate's obstacle entry")];
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/column.json");
    surge::scene::build_obstacles(s, &here).expect("the gate builds");
}

/// (front `Z = x / a`, residual height `H* = z / (2 a)`) of the particles of column scene `s`.
pub fn measure(s: &Scene, a: f64, p: &Particles) -> (f64, f64) {
    let h = s.domain.cell_size;
    let back = h;
    let floor = h;
    let mut xmax = f64::MIN;
    let mut zmax = f64::MIN;
    for i in 0..p.len() {
        let x = p.pos[0][i] as f64;
        let z = p.pos[2][i] as f64;
        xmax = xmax.max(x);
        if x < back + h {
            zmax = zmax.max(z);
        }
    }
    (
        (xmax + 0.25 * h - back) / a,
        (zmax + 0.25 * h - floor).max(0.0) / (2.0 * a),
    )
}

/// Runs the column to `t_end` s and returns `(t, Z, H)` at every multiple of `every` s
/// (which must fall on frames).
pub fn run(s: &Scene, p: Particles, a: f64, every: f64, t_end: f64) -> Vec<(f64, f64, f64)> {
    let mut sim = Simulation::new(s, p, 0).expect("column scene");
    let mut out = Vec::new();
    let (z0, h0) = measure(s, a, sim.particles());
    out.push((0.0, z0, h0));
    let mut next = every;
    while next <= t_end + 1e-9 {
        sim.advance_frame();
        let t = s.frame_time(sim.frame());
        if (t - next).abs() < 1e-6 {
            let (z, h) = measure(s, a, sim.particles());
            out.push((t, z, h));
            next += every;
        } else if t > next {
            panic!("frame times {t} do not fall on multiples of {every}");
        }
    }
    out
}
