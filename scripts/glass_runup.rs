//! How high the shipped glass's water runs up the wall (issue 19, `scenes/glass.json`):
//! `cargo bench --bench glass_runup`.
//!
//! The scene's 9 x 9 x 3 cm box of water standing on the base of `inputs/glass.obj`
//! (inner radius 7 cm, rim at 15 cm), on a grid of `H` m cells (default the scene's 0.005),
//! for `FRAMES` frames (default 30) at `FPS` (default 30), with the scene's `solver` section
//! set to `SOLVER` (JSON members, e.g. `SOLVER='"cfl": 1'`), `EULER=1` for a full kick every
//! substep (symplectic Euler) instead of the leapfrog's, `NOCORR=1` without the density
//! correction, `BOX=half,zmin,zmax` another block (m). Printed per frame: the energy per unit mass `mean(|v|^2 / 2 + g z)` less the
//! start's (J/kg; the liquid only loses energy, so a positive value is a gain), the highest
//! particle, how many particles are above 10 and 12 cm, the largest speed and the substeps.
use std::path::Path;
use surge::scene::load_str;
use surge::sim::{Particles, Simulation};

fn env<T: std::str::FromStr>(k: &str, d: T) -> T {
    std::env::var(k)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(d)
}

fn main() {
    let h: f64 = env("H", 0.005);
    let fps: u32 = env("FPS", 30);
    let frames: u32 = env("FRAMES", 30);
    let solver = std::env::var("SOLVER").unwrap_or_default();
    let n = (0.2 / h).round() as u32;
    let nz = (0.22 / h).round() as u32;
    // OBST: the glass mesh (default), `cylinder` (an analytic cylinder of the glass's inner
    // radius standing on its base) or `box` (the domain's own walls, a 14 cm square tank).
    let obst = std::env::var("OBST").unwrap_or_default();
    let (lower, n, obstacles) = match obst.as_str() {
        "box" => (-0.07 - h, (0.14 / h).round() as u32 + 2, String::new()),
        "cylinder" => (
            -0.1,
            n,
            r#""obstacles": [{"type": "cylinder", "start": [0, 0, 0.01], "end": [0, 0, 0.5], "radius": 0.07, "liquid": "inside"}],"#
                .to_string(),
        ),
        _ => (
            -0.1,
            n,
            r#""obstacles": [{"type": "mesh", "path": "../inputs/glass.obj", "liquid": "outside"}],"#
                .to_string(),
        ),
    };
    let zlow = if obst.is_empty() { -0.005 } else { 0.01 - h };
    // BOX=half,zmin,zmax: the block's half width and its bottom and top, m (default the scene's).
    let bx: Vec<f64> = std::env::var("BOX")
        .unwrap_or_else(|_| "0.045,0.0105,0.0405".into())
        .split(',')
        .map(|s| s.parse().expect("BOX: half,zmin,zmax"))
        .collect();
    let (half, zmin, zmax) = (bx[0], bx[1], bx[2]);
    let json = format!(
        r#"{{"domain": {{"lower": [{lower}, {lower}, {zlow}], "cell_size": {h}, "resolution": [{n}, {n}, {nz}]}},
            {obstacles}
            "sources": [{{"type": "box", "min": [-{half}, -{half}, {zmin}], "max": [{half}, {half}, {zmax}]}}],
            "seed": 1, "solver": {{{solver}}},
            "time": {{"fps": {fps}, "frames": {frames}}}}}"#
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let l = load_str(&json, &dir.join("glass.json"), &dir).expect("scene loads");
    let g = 9.81f64;
    let energy = |p: &Particles| {
        let mut e = 0.0f64;
        for i in 0..p.len() {
            let v = p.velocity(i).map(|c| c as f64);
            e += 0.5 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) + g * p.position(i)[2] as f64;
        }
        e / p.len() as f64
    };
    let e0 = energy(&l.particles);
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    if std::env::var("EULER").is_ok() {
        sim.set_kick_rule(surge::sim::KickRule::SymplecticEuler);
    }
    sim.set_density_correction(std::env::var("NOCORR").is_err());
    let (mut top, mut top_frame, mut emax) = (0.0f32, 0, f64::MIN);
    let t = std::time::Instant::now();
    // The particles above 10 cm at the previous frame with their mean vertical velocity.
    let mut sheet: Vec<usize> = Vec::new();
    let mut w_prev = 0.0f64;
    let mean_w = |p: &Particles, s: &[usize]| {
        s.iter().map(|&i| p.velocity(i)[2] as f64).sum::<f64>() / s.len().max(1) as f64
    };
    for f in 1..=frames {
        let r = sim.advance_frame();
        let p = sim.particles();
        // A removal from a crowded cell reorders the particles: the sheet is then not followed.
        if r.crowded_removed > 0 {
            sheet.clear();
        }
        if !sheet.is_empty() {
            let w = mean_w(p, &sheet);
            let rr = sheet
                .iter()
                .map(|&i| {
                    let q = p.position(i);
                    (q[0] as f64).hypot(q[1] as f64)
                })
                .sum::<f64>()
                / sheet.len() as f64;
            println!(
                "  the {} particles above 10 cm at frame {}: mean w {w_prev:+.3} -> {w:+.3} m/s, \
                 acceleration {:+.2} m/s^2 (free fall -9.81), mean radius now {:.2} cm",
                sheet.len(),
                f - 1,
                (w - w_prev) * fps as f64,
                100.0 * rr
            );
        }
        sheet = (0..p.len()).filter(|&i| p.position(i)[2] > 0.10).collect();
        w_prev = mean_w(p, &sheet);
        let e = energy(p) - e0;
        let z = |i: usize| p.position(i)[2];
        let zmax = (0..p.len()).map(z).fold(f32::MIN, f32::max);
        let above = |c: f32| (0..p.len()).filter(|&i| z(i) > c).count();
        if zmax > top {
            (top, top_frame) = (zmax, f);
        }
        emax = emax.max(e);
        println!(
            "frame {f:3}: dE {e:+.4} J/kg, top {:.2} cm, above 10 cm {:5}, above 12 cm {:5}, \
             max speed {:.2} m/s, substeps {}",
            100.0 * zmax,
            above(0.10),
            above(0.12),
            r.max_speed,
            r.substeps
        );
    }
    println!(
        "RESULT box={half},{zmin},{zmax} obst='{obst}' h={h} fps={fps} euler={} nocorr={} solver='{solver}' particles {}: top {:.2} cm \
         at frame {top_frame}, largest dE {emax:+.4} J/kg, {:.0} s",
        std::env::var("EULER").is_ok(),
        std::env::var("NOCORR").is_ok(),
        sim.particles().len(),
        100.0 * top,
        t.elapsed().as_secs_f64()
    );
}
