//! No liquid on the far side of a thin wall (session 39, `surface::obstacles::drop_films`):
//! the water in the shipped glass is meshed inside the glass only.

use surge::surface::Method;
use surge::surface::SurfaceSettings;

/// The shipped `scenes/glass.json` (a block of water dropped into the glass of `inputs/glass.obj`:
/// inner radius 7 cm, wall 1 cm, base 1 cm, rim at 15 cm; 5 mm cells), meshed with the glass at
/// frames 4, 8, 12 and 24 with each surface method. Reference: every particle is inside the glass
/// (checked first: radius under 7 cm), so the liquid's surface is too: no mesh vertex lies in the
/// wall or beyond it below the rim, nor in the base or under it (z under 1 cm). Tolerance: 2 mm
/// into the 10 mm wall or base (the snap puts contact vertices on the inner surface to within a
/// small fraction of a surface cell). Until session 39 a particle's kernel (its reach 3 cm with the
/// default `anisotropic` method, 3 times the wall) put liquid on the outside of the wall, which the
/// clip at the glass's surface leaves alone (it is outside the solid) and the snap then laid onto
/// the outer surface: with the default method 528 vertices in or beyond the wall at frame 4 (583 at
/// frame 24, at 8 cm from the axis), flecks of water on the glass's outside in a render
/// (`scripts/blender_import.py`).
#[test]
fn no_liquid_mesh_outside_the_glass() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/glass.json");
    let l = surge::scene::load(&path).expect("scenes/glass.json");
    let mut sim = surge::sim::Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    let glass = &l.scene.built_obstacles.solids[0];
    let radius = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1]).sqrt();
    let mut done = 0;
    for frame in [4u32, 8, 12, 24] {
        while done < frame {
            sim.advance_frame();
            done += 1;
        }
        let p = sim.particles();
        for i in 0..p.len() {
            let r = radius(p.position(i).map(|c| c as f64));
            assert!(r < 0.07, "frame {frame}: particle {i} at radius {r} m");
        }
        let t = l.scene.frame_time(frame);
        let sd = |q: [f64; 3]| glass.distance_and_normal(q, t);
        for method in [Method::Anisotropic, Method::ZhuBridson, Method::Spheres] {
            let settings = SurfaceSettings {
                method,
                ..l.scene.surface.clone()
            };
            let m = surge::surface::reconstruct_with_solids(
                p,
                &settings,
                &l.scene.domain,
                Some(&sd as surge::surface::obstacles::SolidDistance<'_>),
            );
            assert!(m.positions.len() > 1000, "{method}, frame {frame}: no mesh");
            let outside: Vec<[f64; 3]> = (m.positions.iter())
                .map(|v| v.map(|c| c as f64))
                .filter(|&v| (radius(v) > 0.072 && v[2] < 0.15) || v[2] < 0.01 - 0.002)
                .collect();
            eprintln!(
                "{method}, frame {frame}: {} vertices, {} in or beyond the wall",
                m.positions.len(),
                outside.len()
            );
            assert!(
                outside.is_empty(),
                "{method}, frame {frame}: {} vertices in or beyond the wall, e.g. {:?}",
                outside.len(),
                outside[0]
            );
        }
    }
}
