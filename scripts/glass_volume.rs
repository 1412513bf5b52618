//! Where the sloshing glass's liquid volume goes (issue 11): `cargo bench --bench glass_volume`.
//!
//! The water of `tests/obstacles_glass.rs::glass_holds_500_frames_of_sloshing` (seeded in the
//! glass of `inputs/glass.obj` below the plane `z = 6 cm + 0.15 x`, 1.25 cm cells, released)
//! run for 500 frames in variants, each printed as one line:
//!
//! - the liquid mesh's volume against the first frame's, with `zhu_bridson` and `anisotropic`
//!   (every 10 frames: range, and the last);
//! - the particles' own volume, independent of the mesh: `2 (mean z - base)` is the height of
//!   a column of uniform density, so its change is the particles' volume change once the
//!   surface is level again (the last frame; printed beside what the first frame's tilt alone
//!   accounts for);
//! - the particle density (per particle volume `s^3`) in the top two half-spacing slabs of the
//!   water more than 1.5 cm from the wall at the last frame (1.0 = as seeded);
//! - the largest kinetic energy per unit mass over the last 250 frames (the sloshing starts
//!   with 0.003 J/kg of potential energy) and the particles that left the glass.
//!
//! Variants: the default step (the test's; two substeps per frame at rest on this grid, set by
//! `solver.surface_wave_step`); one 1/30 s substep per frame (`surface_wave_step: 0`, what the
//! CFL number alone allows at rest), with and without the density correction; the default
//! step without the density correction; the test's water settled for 60 frames then given 0.3
//! m/s sideways (reference: the kicked frame); and, at both steps, the same water in an
//! analytic cylinder container (`liquid: "inside"`, thick walls) and in a plain box of the
//! domain's size (no obstacle; tilt along the box).

use std::path::Path;
use surge::scene::{LoadedScene, load_str};
use surge::sim::{Particles, Simulation};
use surge::surface::{Method, SurfaceSettings};

const INNER: f64 = 0.07;
const BASE: f64 = 0.01;
const RIM: f64 = 0.15;

struct Variant {
    name: &'static str,
    obstacle: &'static str,
    solver: &'static str,
    kick: bool,
}

fn load(v: &Variant) -> LoadedScene {
    let obstacles = if v.obstacle.is_empty() {
        String::new()
    } else {
        format!(r#""obstacles": [{}],"#, v.obstacle)
    };
    let json = format!(
        r#"{{"domain": {{"lower": [-0.1, -0.1, -0.0125], "cell_size": 0.0125, "resolution": [16, 16, 16]}},
            {obstacles}
            "sources": [{{"type": "box", "min": {}, "max": {}}}],
            "solver": {{{}}},
            "time": {{"fps": 30, "frames": 500}}}}"#,
        if v.obstacle.is_empty() {
            "[-0.1, -0.1, -0.0125]"
        } else {
            // The test's source (its particles, jitter included).
            "[-0.07, -0.07, 0.01]"
        },
        if v.obstacle.is_empty() {
            "[0.1, 0.1, 0.08]"
        } else {
            "[0.07, 0.07, 0.08]"
        },
        v.solver
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    load_str(&json, &dir.join("bench.json"), &dir).expect("scene loads")
}

fn mesh_volume(l: &LoadedScene, p: &Particles, t: f64, method: Method) -> f64 {
    let settings = SurfaceSettings {
        method,
        ..l.scene.surface.clone()
    };
    let solid = l.scene.built_obstacles.solids.first();
    let sd = |q: [f64; 3]| solid.unwrap().distance_and_normal(q, t);
    surge::surface::reconstruct_with_solids(
        p,
        &settings,
        &l.scene.domain,
        solid.map(|_| &sd as surge::surface::obstacles::SolidDistance<'_>),
    )
    .volume()
}

fn mean_z(p: &Particles) -> f64 {
    (0..p.len()).map(|i| p.position(i)[2] as f64).sum::<f64>() / p.len() as f64
}

fn energy(p: &Particles) -> f64 {
    let n = p.len();
    (0..n)
        .map(|i| {
            let v = p.velocity(i);
            0.5 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) as f64
        })
        .sum::<f64>()
        / n as f64
}

/// Density of the top two half-spacing slabs (of water at radius under 5.5 cm), relative to
/// one particle per `s^3`, counted from the highest slab holding more than a fifth of it.
fn top_slabs(p: &Particles, s: f64, base: f64) -> [f64; 2] {
    let rr = 0.055;
    let mut slab = [0u32; 16];
    for i in 0..p.len() {
        let x = p.position(i).map(|c| c as f64);
        if (x[0] * x[0] + x[1] * x[1]).sqrt() < rr && x[2] > base {
            let b = ((x[2] - base) / s) as usize;
            if b < slab.len() {
                slab[b] += 1;
            }
        }
    }
    let per = std::f64::consts::PI * rr * rr / (s * s);
    let rel: Vec<f64> = slab.iter().map(|&c| c as f64 / per).collect();
    let top = rel.iter().rposition(|&r| r > 0.2).unwrap_or(1).max(1);
    [rel[top - 1], rel[top]]
}

fn run(v: &Variant) {
    let l = load(v);
    let h = l.scene.domain.cell_size;
    let s = 0.5 * h;
    let in_box = v.obstacle.is_empty();
    let base = if in_box { 0.0 } else { BASE };
    let mut p0 = Particles::default();
    for i in 0..l.particles.len() {
        let [x, y, z] = l.particles.position(i).map(|c| c as f64);
        let inside = in_box || (x * x + y * y).sqrt() < INNER;
        if inside && z < 0.06 + 0.15 * x {
            p0.push(l.particles.position(i), l.particles.velocity(i));
        }
    }
    if v.kick {
        let mut sim = Simulation::new(&l.scene, p0, 0).unwrap();
        for _ in 0..60 {
            sim.advance_frame();
        }
        let q = sim.particles();
        p0 = Particles::default();
        for i in 0..q.len() {
            let u = q.velocity(i);
            p0.push(q.position(i), [u[0] + 0.3, u[1], u[2]]);
        }
    }
    let methods = [Method::ZhuBridson, Method::Anisotropic];
    let v0 = methods.map(|m| mesh_volume(&l, &p0, 0.0, m));
    let z0 = mean_z(&p0);
    let glass = !in_box && v.obstacle.contains("mesh");
    let mut sim = Simulation::new(&l.scene, p0, 0).unwrap();
    let mut range = [[f64::INFINITY, f64::NEG_INFINITY]; 2];
    let mut last = [0.0; 2];
    let (mut late_energy, mut out) = (0.0f64, false);
    for f in 1..=500u32 {
        sim.advance_frame();
        let p = sim.particles();
        if f > 250 {
            late_energy = late_energy.max(energy(p));
        }
        if glass {
            for i in 0..p.len() {
                let [x, y, z] = p.position(i).map(|c| c as f64);
                if z < RIM && (x * x + y * y).sqrt() > INNER + 0.1 * h {
                    out = true;
                }
            }
        }
        if f % 10 == 0 {
            let t = l.scene.frame_time(f);
            for (k, m) in methods.iter().enumerate() {
                let c = mesh_volume(&l, p, t, *m) / v0[k] - 1.0;
                range[k] = [range[k][0].min(c), range[k][1].max(c)];
                last[k] = c;
            }
        }
    }
    let p = sim.particles();
    let column = (mean_z(p) - base) / (z0 - base) - 1.0;
    // What the first frame's tilt alone adds to its mean height (uniform density, plane
    // surface `H + 0.15 x`): `0.15^2 <x^2> / H^2`, `<x^2>` over the disc or across the box.
    let x2 = if in_box {
        0.175f64.powi(2) / 12.0
    } else {
        INNER * INNER / 4.0
    };
    let level = 2.0 * (z0 - base);
    let tilt = if v.kick {
        0.0
    } else {
        0.15f64.powi(2) * x2 / (level * level)
    };
    let top = top_slabs(p, s, base);
    println!(
        "{}: mesh against the first frame zhu_bridson {:+.4}..{:+.4} (last {:+.4}), anisotropic {:+.4}..{:+.4} (last {:+.4}); particles' column height {column:+.4} (the start's tilt alone: {:+.4}); top slabs {:.2}, {:.2} of the seeding density; largest kinetic energy over frames 251-500 {:.2e} J/kg; {}",
        v.name,
        range[0][0],
        range[0][1],
        last[0],
        range[1][0],
        range[1][1],
        last[1],
        -tilt,
        top[0],
        top[1],
        late_energy,
        if glass {
            format!("a particle outside the glass below the rim: {out}")
        } else {
            "no glass".to_string()
        }
    );
}

fn main() {
    let glass = r#"{"type": "mesh", "path": "../inputs/glass.obj"}"#;
    let cylinder = r#"{"type": "cylinder", "start": [0, 0, 0.01], "end": [0, 0, 0.5], "radius": 0.07, "liquid": "inside"}"#;
    let one = r#""surface_wave_step": 0"#;
    let v = |name, obstacle, solver, kick| Variant {
        name,
        obstacle,
        solver,
        kick,
    };
    for v in [
        v("glass, default step (the test)", glass, "", false),
        v(
            "glass, one 1/30 s substep per frame (surface_wave_step 0)",
            glass,
            one,
            false,
        ),
        v(
            "glass, one substep per frame, no density correction",
            glass,
            r#""surface_wave_step": 0, "volume_correction": 0"#,
            false,
        ),
        v(
            "glass, default step, no density correction",
            glass,
            r#""volume_correction": 0"#,
            false,
        ),
        v(
            "glass, default step, settled 60 frames then 0.3 m/s sideways",
            glass,
            "",
            true,
        ),
        v("cylinder container, default step", cylinder, "", false),
        v(
            "cylinder container, one substep per frame",
            cylinder,
            one,
            false,
        ),
        v("plain box, default step", "", "", false),
        v("plain box, one substep per frame", "", one, false),
    ] {
        run(&v);
    }
}
