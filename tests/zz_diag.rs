use std::path::Path;
use surge::scene::load_str;
use surge::sim::Simulation;
use surge::surface::{Method, SurfaceSettings};

#[test]
fn diag() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let l = load_str(
        r#"{"domain": {"lower": [-0.1, -0.1, -0.0125], "cell_size": 0.0125, "resolution": [16, 16, 16]},
            "obstacles": [{"type": "mesh", "path": "../inputs/glass.obj"}],
            "sources": [{"type": "box", "min": [-0.045, -0.045, 0.03], "max": [0.045, 0.045, 0.1]}],
            "time": {"fps": 30, "frames": 45}}"#,
        &dir.join("test.json"),
        &dir,
    )
    .unwrap();
    let frames: Vec<u32> = std::env::var("DIAG_FRAMES").map(|s| s.split(',').map(|x| x.parse().unwrap()).collect()).unwrap_or(vec![45]);
    let method = if std::env::var("DIAG_ZB").is_ok() { Method::ZhuBridson } else { Method::Anisotropic };
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    let mut f = 0;
    let h = l.scene.domain.cell_size;
    for &target in &frames {
        while f < target {
            sim.advance_frame();
            f += 1;
        }
        let t = l.scene.frame_time(f);
        let glass = &l.scene.built_obstacles.solids[0];
        let sd = |p: [f64; 3]| glass.distance_and_normal(p, t);
        let settings = SurfaceSettings { method, ..l.scene.surface.clone() };
        let p = settings.level_set_params(&l.scene.domain);
        let m = surge::surface::reconstruct_with_solids(sim.particles(), &settings, &l.scene.domain, Some(&sd as surge::surface::obstacles::SolidDistance<'_>));
        let mut worst = (0.0f64, [0.0f64; 3]);
        let mut n = 0;
        for (v, nn) in m.positions.iter().zip(&m.normals) {
            let v = v.map(|c| c as f64);
            if (v[0] * v[0] + v[1] * v[1]).sqrt() < 0.055 && v[2] < 0.01 + h && nn[2] < -0.7 {
                n += 1;
                let d = glass.signed_distance(v, t).abs();
                if d > worst.0 { worst = (d, v); }
            }
        }
        let ps = sim.particles();
        let zmin = (0..ps.len()).map(|i| ps.position(i)[2]).fold(f32::INFINITY, f32::min);
        eprintln!("frame {f}: {n} bottom vertices, worst {:.5} at {:?}; lowest particle z {zmin}; r {} R {} cell {} reach {}", worst.0, worst.1, p.radius, p.kernel_radius, p.cell, p.reach());
        let mut counts = std::collections::BTreeMap::new();
        for i in 0..ps.len() { let q = ps.position(i); let c = [((q[0] as f64 + 0.1) / h).floor() as i64, ((q[1] as f64 + 0.1) / h).floor() as i64, ((q[2] as f64 + 0.0125) / h).floor() as i64]; *counts.entry(c).or_insert(0usize) += 1; }
        for layer in 2..6 { let mut hist = [0usize; 20]; for cx in 0..16 { for cy in 0..16 { let x = -0.1 + (cx as f64 + 0.5) * h; let y = -0.1 + (cy as f64 + 0.5) * h; if (x*x+y*y).sqrt() > 0.055 { continue; } let n = *counts.get(&[cx, cy, layer]).unwrap_or(&0); hist[n.min(19)] += 1; } } eprintln!("  layer {layer} counts hist {:?}", hist); }
        if std::env::var("DIAG_DETAIL").is_err() { continue; }
        let w = worst.1;
        let mut near: Vec<[f32; 3]> = (0..ps.len()).map(|i| ps.position(i)).filter(|q| ((q[0] as f64 - w[0]).powi(2) + (q[1] as f64 - w[1]).powi(2)).sqrt() < 0.0125 && (q[2] as f64) < 0.04).collect();
        near.sort_by(|a, b| a[2].partial_cmp(&b[2]).unwrap());
        for q in &near { eprintln!("  particle {:?} dxy {:.4} {:.4}", q, q[0] as f64 - w[0], q[1] as f64 - w[1]); }
        let mir = surge::surface::obstacles::with_mirrors(ps, p.reach(), surge::surface::obstacles::SimCells { lower: l.scene.domain.lower, h }, &sd).unwrap();
        let mut ls = surge::surface::level_set_of(&mir, &settings, &l.scene.domain);
        let g0 = [(w[0] / p.cell).round() as i64, (w[1] / p.cell).round() as i64];
        for gz in 0..5 { eprintln!("  lattice z {:.5}: phi {:.5}", gz as f64 * p.cell, ls.phi_at([g0[0], g0[1], gz])); }
        let mut cl = surge::surface::obstacles::clip(&mut ls, &p, &sd, h);
        for gz in 1..5 { eprintln!("  plane z {}:", gz as f64 * p.cell); for gy in (g0[1]-4)..=(g0[1]+4) { let row: String = ((g0[0]-4)..=(g0[0]+4)).map(|gx| match ls.locate([gx, gy, gz]) { None => 'N', Some(j) => ['L','S','P','O'][cl[j] as usize] }).collect(); eprintln!("    {row}"); } }
        let nf = surge::surface::obstacles::fill_pockets(&mut ls, &mut cl, &p, &sd); eprintln!("  filled {nf}");
        for gz in 0..5 { eprintln!("  clipped z {:.5}: phi {:.5}", gz as f64 * p.cell, ls.phi_at([g0[0], g0[1], gz])); }
    }
}
