//! Surface fidelity (issue 14): thin sheets, filaments and droplets survive meshing with the
//! anisotropic method, independent of the lattice offset; calm water is flat; the method keeps
//! the stage's invariants (closed, manifold, walls capped, same bytes for any thread count);
//! mesh bodies of a dam break do not flicker between frames (`surface::flicker`).
//!
//! Geometry, not physics: each check compares the mesh with the particles it came from, and the
//! tolerances are the lattice's (a mesh cell `h` equals the particle spacing `s` by default).

use surge::mesh::TriMesh;
use surge::scene::Scene;
use surge::sim::{Particles, Simulation};
use surge::surface::{Method, SurfaceSettings, fidelity, flicker, reconstruct};

fn scene(json: &str) -> Scene {
    serde_json::from_str(json).expect("test scene parses")
}

/// A 1.2 m box of 0.05 m cells: spacing s = 0.025 m = mesh cell.
fn box_scene() -> Scene {
    scene(
        r#"{"domain": {"lower": [0, 0, 0], "cell_size": 0.05, "resolution": [24, 24, 24]},
            "sources": [{"type": "sphere", "center": [0.6, 0.6, 0.6], "radius": 0.3}]}"#,
    )
}

fn settings(method: Method) -> SurfaceSettings {
    SurfaceSettings {
        method,
        ..Default::default()
    }
}

/// Counter-based hash in [-1, 1) (no RNG state).
fn jitter(i: u64, k: u64) -> f32 {
    let mut x = i
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(k.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    x ^= x >> 31;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 29;
    (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

fn unit(v: [f32; 3]) -> [f32; 3] {
    let l = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    v.map(|x| x / l)
}

fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn particles(points: &[[f32; 3]]) -> Particles {
    let mut p = Particles::with_capacity(points.len());
    for &x in points {
        p.push(x, [0.0; 3]);
    }
    p
}

fn closed(m: &TriMesh, what: &str) {
    let t = m.topology();
    assert!(
        t.is_closed_manifold() && t.unused_vertices == 0,
        "{what}: {t:?}"
    );
}

/// Fraction of particles neither inside the mesh nor within `s` of it.
fn uncovered(m: &TriMesh, p: &Particles, s: f64) -> f64 {
    let c = fidelity::coverage(m, &p.pos, s);
    c.iter().filter(|x| !**x).count() as f64 / c.len() as f64
}

/// A one-particle-thick, tilted square sheet (20 x 20 particles at the spacing, jittered by
/// 10% of it) meshes to one closed surface of genus 0 (Euler characteristic 2: a sheet with no
/// hole, closed around its rim) that covers every particle, wherever the lattice falls.
#[test]
fn a_one_particle_sheet_stays_one_sheet_without_holes() {
    let s = box_scene();
    let sp = s.domain.particle_spacing() as f32;
    let n = unit([0.2, 0.3, 0.93]);
    let u = unit(cross(n, [1.0, 0.0, 0.0]));
    let v = cross(n, u);
    for (case, offset) in [(0u64, 0.0f32), (1, 0.37), (2, 0.5)] {
        let mut pts = vec![];
        for i in 0..20 {
            for j in 0..20 {
                let id = case * 1000 + (i * 20 + j) as u64;
                let (a, b) = ((i as f32 - 9.5) * sp, (j as f32 - 9.5) * sp);
                let c = 0.6 + offset * sp;
                pts.push(std::array::from_fn(|k| {
                    c + a * u[k] + b * v[k] + 0.1 * sp * jitter(id, k as u64)
                }));
            }
        }
        let p = particles(&pts);
        let m = reconstruct(&p, &settings(Method::Anisotropic), &s.domain);
        closed(&m, "sheet");
        let (comp, chi) = (m.topology().components, fidelity::euler_characteristic(&m));
        let out = uncovered(&m, &p, sp as f64);
        let zb = reconstruct(&p, &settings(Method::ZhuBridson), &s.domain);
        eprintln!(
            "sheet offset {offset}: anisotropic {comp} components, chi {chi}, uncovered {:.1}%, volume {:.2} N s^3; zhu_bridson {} components, chi {}, uncovered {:.1}%",
            100.0 * out,
            m.volume() / (p.len() as f64 * (sp as f64).powi(3)),
            zb.topology().components,
            fidelity::euler_characteristic(&zb),
            100.0 * uncovered(&zb, &p, sp as f64)
        );
        assert_eq!((comp, chi), (1, 2), "sheet at offset {offset}");
        assert_eq!(out, 0.0, "sheet at offset {offset}: particles left out");
    }
}

/// A jittered line of 30 particles at the spacing, oblique to the lattice, meshes to one
/// filament (one component, genus 0) covering every particle.
#[test]
fn a_line_of_particles_stays_one_filament() {
    let s = box_scene();
    let sp = s.domain.particle_spacing() as f32;
    let d = unit([1.0, 0.4, 0.25]);
    for (case, offset) in [(0u64, 0.0f32), (1, 0.29), (2, 0.5)] {
        let pts: Vec<[f32; 3]> = (0..30)
            .map(|i| {
                let t = (i as f32 - 14.5) * sp;
                std::array::from_fn(|k| {
                    0.6 + offset * sp + t * d[k] + 0.1 * sp * jitter(case * 100 + i, k as u64)
                })
            })
            .collect();
        let p = particles(&pts);
        let m = reconstruct(&p, &settings(Method::Anisotropic), &s.domain);
        closed(&m, "filament");
        let (comp, chi) = (m.topology().components, fidelity::euler_characteristic(&m));
        let out = uncovered(&m, &p, sp as f64);
        eprintln!(
            "filament offset {offset}: {comp} components, chi {chi}, uncovered {:.1}%, volume {:.2} N s^3",
            100.0 * out,
            m.volume() / (p.len() as f64 * (sp as f64).powi(3))
        );
        assert_eq!((comp, chi), (1, 2), "filament at offset {offset}");
        assert_eq!(out, 0.0, "filament at offset {offset}: particles left out");
    }
}

/// One particle, and a cluster of four, moved by sub-cell offsets: always exactly one closed
/// blob containing the particles, whose volume varies by less than a factor 1.5 (the
/// lattice's sampling of a blob one cell across; Zhu-Bridson's blob vanishes at some offsets).
#[test]
fn droplets_are_kept_at_any_lattice_offset() {
    let s = box_scene();
    let sp = s.domain.particle_spacing() as f32;
    let shapes: [&[[f32; 3]]; 2] = [
        &[[0.0; 3]],
        &[
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.5, 0.87, 0.0],
            [0.5, 0.29, 0.82],
        ],
    ];
    for shape in shapes {
        let (mut vmin, mut vmax, mut zb_lost) = (f64::MAX, 0f64, 0);
        for o in 0..16u64 {
            let off: [f32; 3] = std::array::from_fn(|k| 0.5 * (jitter(o, k as u64 + 7) + 1.0));
            let pts: Vec<[f32; 3]> = shape
                .iter()
                .map(|q| std::array::from_fn(|k| 0.6 + (q[k] + off[k]) * sp))
                .collect();
            let p = particles(&pts);
            let m = reconstruct(&p, &settings(Method::Anisotropic), &s.domain);
            closed(&m, "droplet");
            assert_eq!(m.topology().components, 1, "offset {off:?}");
            assert_eq!(
                uncovered(&m, &p, 1e-9),
                0.0,
                "offset {off:?}: a particle is outside"
            );
            let v = m.volume() / (p.len() as f64 * (sp as f64).powi(3));
            vmin = vmin.min(v);
            vmax = vmax.max(v);
            let zb = reconstruct(&p, &settings(Method::ZhuBridson), &s.domain);
            zb_lost += (zb.topology().components == 0) as u32;
        }
        eprintln!(
            "{} particle(s) at 16 offsets: volume {vmin:.2}-{vmax:.2} N s^3 (zhu_bridson lost it at {zb_lost} offsets)",
            shape.len()
        );
        assert!(vmax < 1.5 * vmin, "blob volume {vmin:.2}..{vmax:.2} N s^3");
    }
}

fn pool_scene() -> Scene {
    scene(
        r#"{"domain": {"lower": [0, 0, 0], "cell_size": 0.05, "resolution": [16, 12, 16]},
            "sources": [{"type": "box", "min": [0, 0, 0], "max": [1, 1, 0.3]}],
            "time": {"fps": 30, "frames": 30}}"#,
    )
}

/// A pool simulated for one second (at rest: the physics tests bound its speed) meshes to a
/// flat top: RMS height and mean normal deviation of the upward faces 2 cells from the walls,
/// and the mean deviation of the vertices' normal attribute (what a renderer shades with).
/// Issue 14's target: 0.01 cell and 0.5 degree, for both methods, with the default calm-water
/// flattening (`surface.calm_flattening`, 50 passes; measured: `zhu_bridson` 0.0038 cell, 0.15
/// degree; `anisotropic` 0.0067 cell, 0.23 degree, normal attribute 0.24 degree); without it
/// the same pool is 0.042 cell and 4.1 degrees (checked here too, so the test fails if the
/// flattening stops acting). `anisotropic` needs the calm gate to read the smoothed mesh's
/// normals: its unblurred level set's gradient tilts past 14 degrees on particle-scale bumps
/// (it was 0.012 cell, 1.4 degrees, attribute 4.2 degrees when the gate read the gradient).
#[test]
fn a_settled_pool_is_flat() {
    let s = pool_scene();
    let mut sim = Simulation::new(&s, surge::sources::seed_particles(&s, &[]), 0).unwrap();
    for _ in 0..s.time.frames {
        sim.advance_frame();
    }
    let h = s.domain.cell_size;
    let (lo, hi) = (
        [3.0 * h; 2],
        [s.domain.upper()[0] - 3.0 * h, s.domain.upper()[1] - 3.0 * h],
    );
    let flat = |st: &SurfaceSettings| {
        let m = reconstruct(sim.particles(), st, &s.domain);
        closed(&m, "pool");
        let (rms, ang) = fidelity::flatness(&m, lo, hi);
        let (mut sum, mut count) = (0.0, 0.0);
        for (p, n) in m.positions.iter().zip(&m.normals) {
            let (x, y) = (p[0] as f64, p[1] as f64);
            if x > lo[0] && x < hi[0] && y > lo[1] && y < hi[1] && n[2] > 0.5 {
                sum += (n[2] as f64).min(1.0).acos().to_degrees();
                count += 1.0;
            }
        }
        let attr = sum / count;
        eprintln!(
            "settled pool, {} (calm_flattening {}): RMS height {:.3} mm ({:.4} cell), mean normal deviation {ang:.2} deg (normal attribute {attr:.2} deg)",
            st.method,
            st.calm_flattening,
            1e3 * rms,
            rms / h
        );
        (rms / h, ang, attr)
    };
    let (rms, ang, attr) = flat(&settings(Method::ZhuBridson));
    assert!(
        rms < 0.01 && ang < 0.5 && attr < 0.5,
        "default: RMS {rms} cell, {ang} deg, normal attribute {attr} deg"
    );
    let off = SurfaceSettings {
        calm_flattening: 0,
        ..settings(Method::ZhuBridson)
    };
    let (rms, ang, _) = flat(&off);
    assert!(
        rms > 0.02 && ang > 2.0,
        "without the flattening the pool was already flat ({rms} cell, {ang} deg): the check above proves nothing"
    );
    let (rms, ang, attr) = flat(&settings(Method::Anisotropic));
    assert!(
        rms < 0.01 && ang < 0.5 && attr < 0.5,
        "anisotropic: RMS {rms} cell, {ang} deg, normal attribute {attr} deg"
    );
}

/// The calm-water flattening leaves moving water alone: a ball thrown at 1 m/s (far above
/// `calm_speed`) meshes to the same bytes with and without it.
#[test]
fn moving_water_is_not_flattened() {
    let s = box_scene();
    let mut p = surge::sources::seed_particles(&s, &[]);
    for i in 0..p.len() {
        p.vel[0][i] = 1.0;
    }
    let with = reconstruct(&p, &settings(Method::ZhuBridson), &s.domain);
    let without = reconstruct(
        &p,
        &SurfaceSettings {
            calm_flattening: 0,
            ..settings(Method::ZhuBridson)
        },
        &s.domain,
    );
    assert_eq!(with.positions, without.positions);
    assert_eq!(with.normals, without.normals);
    // At rest the same ball's top is flattened (the gate is the speed, not the shape).
    for i in 0..p.len() {
        p.vel[0][i] = 0.0;
    }
    let still = reconstruct(&p, &settings(Method::ZhuBridson), &s.domain);
    assert_ne!(still.positions, without.positions);
}

/// Closed meshes every frame of a short dam break, walls capped flat, the same bytes for 1, 2
/// and 3 threads, velocities present.
#[test]
fn anisotropic_keeps_the_stage_invariants() {
    let mut s = scene(
        r#"{"domain": {"lower": [0, 0, 0], "cell_size": 0.05, "resolution": [24, 10, 16]},
            "sources": [{"type": "box", "min": [0, 0, 0], "max": [0.4, 0.5, 0.5]}],
            "time": {"fps": 30, "frames": 12}}"#,
    );
    s.surface.method = Method::Anisotropic;
    let mut sim = Simulation::new(&s, surge::sources::seed_particles(&s, &[]), 0).unwrap();
    let h = s.domain.cell_size;
    for f in 0..=s.time.frames {
        if f > 0 {
            sim.advance_frame();
        }
        let m = reconstruct(sim.particles(), &s.surface, &s.domain);
        closed(&m, &format!("frame {f}"));
        assert_eq!(m.velocities.len(), m.positions.len());
        let low = m
            .positions
            .iter()
            .map(|p| p[2] as f64)
            .fold(f64::MAX, f64::min);
        assert!((low - h).abs() < 1e-3 * h, "frame {f}: floor cap at {low}");
        if f == 0 {
            let v0 = sim.particles().len() as f64 * s.domain.particle_spacing().powi(3);
            let v = m.volume();
            eprintln!("frame 0 volume {:.4} of the particles'", v / v0);
            assert!((v - v0).abs() < 0.03 * v0, "frame 0: volume {v} vs {v0}");
        }
    }
    let frame = surge::output::frame::ParticleFrame {
        frame: 12,
        time: s.frame_time(12),
        particles: sim.particles().clone(),
    };
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| surge::run::frame_ply_bytes(&frame, &s).unwrap())
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(3));
}

/// The narrow band (blocks deep inside the liquid are set inside without a splat) leaves no
/// surface inside the liquid and no step where deep and splatted blocks meet: a seeded cube of
/// liquid 32 mesh cells wide, deep enough to hold deep blocks (checked), meshes to one closed
/// surface that encloses its particles' volume `N s^3` within 3% (the ball's calibration
/// tolerance in tests/surface.rs: the level set's own error at the cube's edges and corners)
/// and leaves no particle outside it.
#[test]
fn deep_blocks_leave_one_closed_surface() {
    let s = scene(
        r#"{"domain": {"lower": [0, 0, 0], "cell_size": 0.05, "resolution": [24, 24, 24]},
            "sources": [{"type": "box", "min": [0.2, 0.2, 0.2], "max": [1.0, 1.0, 1.0]}]}"#,
    );
    let p = surge::sources::seed_particles(&s, &[]);
    let set = settings(Method::Anisotropic);
    let ls = surge::surface::level_set_of(&p, &set, &s.domain);
    let r = set.radius(&s.domain) as f32;
    let bp = surge::surface::sparse_grid::BP;
    let deep = ls
        .phi
        .chunks(bp)
        .filter(|c| c.iter().all(|v| *v == -r))
        .count();
    eprintln!("deep blocks {deep} of {}", ls.phi.len() / bp);
    assert!(
        deep > 0,
        "no deep block: the test does not exercise the band"
    );
    let m = reconstruct(&p, &set, &s.domain);
    closed(&m, "cube");
    assert_eq!(m.topology().components, 1);
    let sp = s.domain.particle_spacing();
    let v0 = p.len() as f64 * sp.powi(3);
    let v = m.volume();
    eprintln!("cube volume {:.4} of N s^3", v / v0);
    assert!((v - v0).abs() < 0.03 * v0, "volume {v} vs {v0}");
    assert_eq!(uncovered(&m, &p, sp), 0.0);
}

/// Per particle: its mesh body (`flicker::owners`) and particle group (`fidelity::clusters`,
/// particles closer than the kernel radius, as the fidelity bench groups them).
fn owners_and_groups(
    m: &TriMesh,
    p: &Particles,
    st: &SurfaceSettings,
    s: &Scene,
) -> (Vec<u32>, Vec<u32>) {
    let (body, _) = flicker::bodies(m);
    let own = flicker::owners(m, &body, &p.pos, s.domain.particle_spacing());
    let r = st.kernel_radius_factor * st.radius(&s.domain);
    (own, fidelity::clusters(&p.pos, r).0)
}

fn small_dam_break() -> Scene {
    scene(
        r#"{"domain": {"lower": [0, 0, 0], "cell_size": 0.025, "resolution": [40, 8, 24]},
            "sources": [{"type": "box", "min": [0, 0, 0], "max": [0.3, 0.2, 0.4]}],
            "time": {"fps": 30, "frames": 30}}"#,
    )
}

/// The flicker measure sees a dropped body: a seeded block plus a 3 x 3 x 2-particle droplet
/// in the air above it, the droplet left out of the second frame's mesh (the particles
/// unchanged), counts as one vanished body whose particles still form a group (persisting),
/// and back as one appeared; nothing else changes.
#[test]
fn flicker_counts_a_dropped_droplet() {
    let s = small_dam_break();
    let st = s.surface.clone();
    let sp = s.domain.particle_spacing() as f32;
    let mut p = surge::sources::seed_particles(&s, &[]);
    let block = p.len();
    for i in 0..18 {
        let (x, y, z) = ((i % 3) as f32, ((i / 3) % 3) as f32, (i / 9) as f32);
        p.push([0.7 + x * sp, 0.08 + y * sp, 0.45 + z * sp], [0.0; 3]);
    }
    let mut without = Particles::with_capacity(block);
    for i in 0..block {
        without.push([p.pos[0][i], p.pos[1][i], p.pos[2][i]], [0.0; 3]);
    }
    let (own_a, group_a) = owners_and_groups(&reconstruct(&p, &st, &s.domain), &p, &st, &s);
    let (own_b, group_b) = owners_and_groups(&reconstruct(&without, &st, &s.domain), &p, &st, &s);
    assert_eq!(
        flicker::flicker(&own_a, &group_a, &own_a, &group_a),
        Default::default()
    );
    let f = flicker::flicker(&own_a, &group_a, &own_b, &group_b);
    assert_eq!(
        (f.vanished, f.vanished_persisting, f.appeared),
        (1, 1, 0),
        "{f:?}"
    );
    let f = flicker::flicker(&own_b, &group_b, &own_a, &group_a);
    assert_eq!(
        (f.appeared, f.appeared_persisting, f.vanished),
        (1, 1, 0),
        "{f:?}"
    );
}

/// Issue 14's flicker measure on a small dam break (0.025 m cells, 7,920 particles, 1 s at
/// 30 fps: the front runs up the far wall and throws a sheet and droplets back) meshed with
/// `method`: between consecutive frames, the mesh bodies of more than 4 particles that appear
/// or vanish (reported), those of more than 8 of which more than 8 still form one group in the
/// other frame (returned: the particles are still there, so each is the mesh's flicker), and
/// the most bodies in a frame.
fn dam_break_flicker(method: Method) -> (usize, usize) {
    let mut s = small_dam_break();
    // The measure follows each particle by its index from one frame to the next, which the
    // thinning of crowded cells would reorder (`solver.max_particles_per_cell`; 2 of 7,920
    // removed here with it): off, so every frame holds the same particles in the same order.
    s.solver.max_particles_per_cell = 0;
    let st = SurfaceSettings {
        method,
        ..s.surface.clone()
    };
    let mut sim = Simulation::new(&s, surge::sources::seed_particles(&s, &[]), 0).unwrap();
    let mut prev: Option<(Vec<u32>, Vec<u32>)> = None;
    let (mut small, mut persisting, mut bodies_max) = (0, 0, 0);
    for frame in 0..=s.time.frames {
        if frame > 0 {
            sim.advance_frame();
        }
        let m = reconstruct(sim.particles(), &st, &s.domain);
        bodies_max = bodies_max.max(flicker::bodies(&m).1);
        let now = owners_and_groups(&m, sim.particles(), &st, &s);
        if let Some((own, group)) = prev.take() {
            let f = flicker::flicker(&own, &group, &now.0, &now.1);
            if f != flicker::Flicker::default() {
                eprintln!("frames {} -> {frame}: {f:?}", frame - 1);
            }
            small += f.appeared + f.vanished;
            persisting += f.appeared_persisting + f.vanished_persisting;
        }
        prev = Some(now);
    }
    eprintln!(
        "{method} dam break, {} frame pairs: bodies of > 4 particles appeared or vanished {small} times, of > 8 still grouped {persisting}; up to {bodies_max} bodies a frame",
        s.time.frames
    );
    (persisting, bodies_max)
}

/// Target 0 (no tolerance: any persisting body is the mesh's flicker) with `anisotropic`, the
/// default method (measured: 0, and no body of more than 4 particles appears or vanishes; up to 12
/// bodies a frame in session 41, 16 when written). The dam break must break up (more than one body
/// in some frame) or the test shows nothing.
#[test]
fn anisotropic_dam_break_bodies_do_not_flicker() {
    assert_eq!(Method::default(), Method::Anisotropic, "the default method");
    let (persisting, bodies_max) = dam_break_flicker(Method::Anisotropic);
    assert!(
        bodies_max > 1,
        "the dam break never broke up: the test shows nothing"
    );
    assert_eq!(persisting, 0, "bodies of > 8 particles flickered");
}

/// The same target with the optional `zhu_bridson`: not met (measured: 1, a body of the
/// splash appearing between frames 29 and 30 while its particles stay grouped, session 41;
/// earlier one vanishing between frames 22 and 23; its blur and
/// kernel erode thin sheets), so this is a known deviation of that method (README, Known
/// deviations).
#[test]
#[ignore = "known deviation: zhu_bridson (not the default) drops or adds a splash body of > 8 grouped particles between two frames (1 on this dam break, target 0); the default anisotropic meets it; see README, Known deviations"]
fn zhu_bridson_dam_break_bodies_do_not_flicker() {
    let (persisting, bodies_max) = dam_break_flicker(Method::ZhuBridson);
    assert!(
        bodies_max > 1,
        "the dam break never broke up: the test shows nothing"
    );
    assert_eq!(persisting, 0, "bodies of > 8 particles flickered");
}
