//! Whether sloshing water settles (README, "Substeps"): `cargo bench --bench slosh_energy`.
//!
//! Water in a 20 cm box (or, with `CYL=1`, in an analytic cylinder container of radius 7 cm),
//! seeded below the plane `z = 6 cm + 0.15 x` and released, run for 500 frames' worth of time
//! (16.7 s) at `FPS` frames per second (default 30) on a grid of `H` m cells (default 0.0125),
//! with the scene's `solver` section set to `SOLVER` (JSON members, e.g.
//! `SOLVER='"surface_wave_step": 0'` for one substep per frame at rest). Printed: kinetic and
//! potential energy per unit mass every 50 frames' time, and the largest kinetic energy over
//! the second half (the slosh starts with about 0.003 J/kg of potential energy; settled water
//! reaches 1e-6 J/kg or less), the substeps per frame and the wall time; and at the last frame
//! the share of the kinetic energy in the surface layer (within a cell of each cell column's
//! highest particle) and the correlation of that layer's vertical velocity between columns side
//! by side (+1 for a long wave, -1 for a checkerboard).
use std::path::Path;
use surge::scene::load_str;
use surge::sim::{Particles, Simulation};

fn main() {
    let solver = std::env::var("SOLVER").unwrap_or_default();
    let cyl = std::env::var("CYL").is_ok();
    let fps: u32 = std::env::var("FPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let frames: u32 = 500 * fps / 30;
    let obst = if cyl {
        r#""obstacles": [{"type": "cylinder", "start": [0, 0, 0.01], "end": [0, 0, 0.5], "radius": 0.07, "liquid": "inside"}],"#
    } else {
        ""
    };
    let (lo, hi) = if cyl {
        ("[-0.07, -0.07, 0.01]", "[0.07, 0.07, 0.08]")
    } else {
        ("[-0.1, -0.1, -0.1]", "[0.1, 0.1, 0.08]")
    };
    let h: f64 = std::env::var("H")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0125);
    let res = (0.2 / h).round() as u32;
    let json = format!(
        r#"{{"domain": {{"lower": [-0.1, -0.1, -{h}], "cell_size": {h}, "resolution": [{res}, {res}, {res}]}},
            {obst}
            "sources": [{{"type": "box", "min": {lo}, "max": {hi}}}],
            "solver": {{{solver}}},
            "time": {{"fps": {fps}, "frames": {frames}}}}}"#
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let l = load_str(&json, &dir.join("bench.json"), &dir).expect("scene loads");
    let mut p0 = Particles::default();
    for i in 0..l.particles.len() {
        let [x, y, z] = l.particles.position(i).map(|c| c as f64);
        let inside = !cyl || (x * x + y * y).sqrt() < 0.07;
        if inside && z < 0.06 + 0.15 * x {
            p0.push(l.particles.position(i), l.particles.velocity(i));
        }
    }
    let n = p0.len() as f64;
    let stats = |p: &Particles| {
        let (mut ke, mut z) = (0.0f64, 0.0f64);
        for i in 0..p.len() {
            let v = p.velocity(i);
            ke += 0.5 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) as f64;
            z += p.position(i)[2] as f64;
        }
        (ke / n, z / n)
    };
    let (_, z0) = stats(&p0);
    let mut sim = Simulation::new(&l.scene, p0, 0).unwrap();
    let (mut late, mut subs) = (0.0f64, 0u32);
    let t = std::time::Instant::now();
    for f in 1..=frames {
        let r = sim.advance_frame();
        subs += r.substeps;
        let (ke, z) = stats(sim.particles());
        if f > frames / 2 {
            late = late.max(ke);
        }
        if f % (50 * fps / 30) == 0 {
            println!(
                "frame {f}: ke {ke:.2e} J/kg, pe {:+.2e} J/kg, substeps {}",
                9.81 * (z - z0),
                r.substeps
            );
        }
    }
    // Where the last frame's kinetic energy is: the particles within one cell of their
    // cell column's highest particle (the surface layer) against the rest.
    let p = sim.particles();
    let nc = res as usize;
    let col = |i: usize| {
        let x = p.position(i);
        let c = |a: usize| ((x[a] as f64 + 0.1) / h) as usize;
        (c(0) + nc * c(1)).min(nc * nc - 1)
    };
    let mut top = vec![f32::MIN; nc * nc];
    for i in 0..p.len() {
        top[col(i)] = top[col(i)].max(p.position(i)[2]);
    }
    let (mut e_top, mut n_top, mut e_all) = (0.0f64, 0usize, 0.0f64);
    for i in 0..p.len() {
        let v = p.velocity(i);
        let e = 0.5 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) as f64;
        e_all += e;
        if ((top[col(i)] - p.position(i)[2]) as f64) < h {
            e_top += e;
            n_top += 1;
        }
    }
    // Vertical velocity of the surface layer per cell column, and its correlation between
    // columns side by side: near -1 for a grid-scale (checkerboard) wave, near +1 for a long one.
    let mut w = vec![(0.0f64, 0u32); nc * nc];
    for i in 0..p.len() {
        if ((top[col(i)] - p.position(i)[2]) as f64) < h {
            w[col(i)].0 += p.velocity(i)[2] as f64;
            w[col(i)].1 += 1;
        }
    }
    let mean = |c: usize| (w[c].1 > 0).then(|| w[c].0 / w[c].1 as f64);
    let (mut sab, mut saa) = (0.0f64, 0.0f64);
    for c in 0..nc * (nc - 1) {
        for d in [1, nc] {
            if let (Some(a), Some(b)) = (mean(c), mean(c + d)) {
                sab += a * b;
                saa += 0.5 * (a * a + b * b);
            }
        }
    }
    println!(
        "last frame: neighbouring columns' surface vertical velocity correlation {:+.2}",
        sab / saa.max(1e-30)
    );
    println!(
        "last frame: the surface layer ({:.0}% of the particles) holds {:.0}% of the kinetic energy",
        100.0 * n_top as f64 / p.len() as f64,
        100.0 * e_top / e_all.max(1e-30)
    );
    println!(
        "RESULT h={h} fps={fps} cyl={cyl} solver='{solver}' late max ke {late:.2e} J/kg, substeps/frame {:.2}, {:.1} s",
        subs as f64 / frames as f64,
        t.elapsed().as_secs_f64()
    );
}
