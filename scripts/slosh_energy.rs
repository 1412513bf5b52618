//! Whether sloshing water settles (README, "Substeps"): `cargo bench --bench slosh_energy`.
//!
//! Water in a 20 cm box (or, with `CYL=1`, in an analytic cylinder container of radius 7 cm),
//! seeded below the plane `z = 6 cm + 0.15 x` and released, run for 500 frames' worth of time
//! (16.7 s) at `FPS` frames per second (default 30) on a grid of `H` m cells (default 0.0125),
//! with the scene's `solver` section set to `SOLVER` (JSON members, e.g.
//! `SOLVER='"surface_wave_step": 0'` for one substep per frame at rest). Printed: kinetic and
//! potential energy per unit mass every 50 frames' time, and the largest kinetic energy over
//! the second half (the slosh starts with about 0.003 J/kg of potential energy; settled water
//! reaches 1e-6 J/kg or less), the substeps per frame and the wall time.
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
    println!(
        "RESULT h={h} fps={fps} cyl={cyl} solver='{solver}' late max ke {late:.2e} J/kg, substeps/frame {:.2}, {:.1} s",
        subs as f64 / frames as f64,
        t.elapsed().as_secs_f64()
    );
}
