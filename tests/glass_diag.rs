//! Temporary diagnostic: particle density vs distance to the glass wall.
use std::path::Path;
use surge::scene::{LoadedScene, load_str};
use surge::sim::{Particles, Simulation};

fn scene(json: &str) -> LoadedScene {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    load_str(json, &dir.join("test.json"), &dir).expect("scene loads")
}

fn profile(p: &Particles, h: f64, what: &str) {
    // side wall: particles with z in [0.015, 0.035] (well above base 0.01, below surface)
    let nb = 24usize;
    let bw = 0.25 * h; // bin width in distance from inner wall r = 0.07
    let mut side = vec![0usize; nb];
    let (z0, z1) = (0.015, 0.035);
    let mut base = vec![0usize; nb];
    for i in 0..p.len() {
        let q = p.position(i).map(|c| c as f64);
        let r = (q[0] * q[0] + q[1] * q[1]).sqrt();
        if q[2] >= z0 && q[2] < z1 {
            let d = 0.07 - r;
            if d >= 0.0 {
                let b = (d / bw) as usize;
                if b < nb {
                    side[b] += 1;
                }
            }
        }
        if r < 0.05 {
            let d = q[2] - 0.01;
            if d >= 0.0 {
                let b = (d / bw) as usize;
                if b < nb {
                    base[b] += 1;
                }
            }
        }
    }
    let rest = 8.0 / (h * h * h);
    let mut fine = vec![0usize; 10];
    for i in 0..p.len() {
        let q = p.position(i).map(|c| c as f64);
        let r = (q[0] * q[0] + q[1] * q[1]).sqrt();
        if q[2] >= z0 && q[2] < z1 {
            let d = (0.07 - r) / h;
            if (0.0..0.25).contains(&d) {
                fine[(d / 0.025) as usize] += 1;
            }
        }
    }
    eprintln!(" fine counts (0.025h bins) {fine:?}");
    let mut s = format!("{what}\n side (dist/h: rho/rest):");
    for b in 0..nb {
        let (ra, rb) = (0.07 - (b + 1) as f64 * bw, 0.07 - b as f64 * bw);
        let vol = std::f64::consts::PI * (rb * rb - ra * ra) * (z1 - z0);
        s += &format!(" {:.2}:{:.2}", b as f64 * 0.25, side[b] as f64 / vol / rest);
    }
    s += "\n base (dist/h: rho/rest):";
    for b in 0..nb {
        let vol = std::f64::consts::PI * 0.05 * 0.05 * bw;
        s += &format!(" {:.2}:{:.2}", b as f64 * 0.25, base[b] as f64 / vol / rest);
    }
    eprintln!("{s}");
}

#[test]
#[ignore]
fn glass_density_profile() {
    let frames: u32 = std::env::var("FRAMES").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let every: u32 = std::env::var("EVERY").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let corr = std::env::var("NOCORR").is_err();
    let vel = std::env::var("VEL").unwrap_or("[0.6, 0.25, 0.0]".into());
    let l = scene(&format!(
        r#"{{"domain": {{"lower": [-0.1, -0.1, -0.0125], "cell_size": 0.0125, "resolution": [16, 16, 16]}},
            "obstacles": [{{"type": "mesh", "path": "../inputs/glass.obj"}}],
            "sources": [{{"type": "box", "min": [-0.05, -0.045, 0.015], "max": [0.03, 0.045, 0.1],
                         "velocity": {vel}}}],
            "time": {{"fps": 30, "frames": {frames}}}}}"#
    ));
    let h = l.scene.domain.cell_size;
    let glass = &l.scene.built_obstacles.solids[0];
    let volume = |p: &Particles, t: f64| {
        let sd = |q: [f64; 3]| glass.distance_and_normal(q, t);
        surge::surface::reconstruct_with_solids(
            p,
            &l.scene.surface,
            &l.scene.domain,
            Some(&sd as surge::surface::obstacles::SolidDistance<'_>),
        )
        .volume()
    };
    let v0 = volume(&l.particles, 0.0);
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    sim.set_density_correction(corr);
    let mut worst = 0.0f64;
    let mut drift = vec![(0.0f64, 0usize); 12];
    for f in 1..=frames {
        let before = sim.particles().clone();
        sim.advance_frame();
        let after = sim.particles();
        for i in 0..after.len() {
            let q0 = before.position(i).map(|c| c as f64);
            let q1 = after.position(i).map(|c| c as f64);
            if q0[2] < 0.015 || q0[2] > 0.045 { continue; }
            let r0 = (q0[0] * q0[0] + q0[1] * q0[1]).sqrt();
            let r1 = (q1[0] * q1[0] + q1[1] * q1[1]).sqrt();
            let d = (0.07 - r0) / h;
            if d >= 0.0 && d < 3.0 {
                let b = (d / 0.25) as usize;
                drift[b].0 += (r1 - r0) / h;
                drift[b].1 += 1;
            }
        }
        if f % every == 0 {
            let v = volume(sim.particles(), l.scene.frame_time(f));
            worst = worst.max(((v - v0) / v0).abs());
            profile(sim.particles(), h, &format!("frame {f}: volume {:+.4}", (v - v0) / v0));
        }
    }
    eprintln!("worst {worst:.4}");
    let s: Vec<String> = drift.iter().enumerate().map(|(b, (s, n))| format!("{:.2}:{:+.4}({})", b as f64 * 0.25, s / (*n).max(1) as f64, n)).collect();
    eprintln!("mean outward radial move per frame (cells) by start distance: {}", s.join(" "));
}
