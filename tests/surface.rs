//! Surface stage invariants: closed manifold meshes, volume, flat pools, determinism, walls.

use surge::mesh::TriMesh;
use surge::scene::Scene;
use surge::sim::{Particles, Simulation};
use surge::surface::{Method, SurfaceSettings, reconstruct};

fn scene(json: &str) -> Scene {
    serde_json::from_str(json).expect("test scene parses")
}

fn ball_scene() -> Scene {
    scene(
        r#"{"domain": {"lower": [0, 0, 0], "cell_size": 0.05, "resolution": [24, 24, 24]},
            "sources": [{"type": "sphere", "center": [0.6, 0.6, 0.6], "radius": 0.3}]}"#,
    )
}

fn pool_scene() -> Scene {
    scene(
        r#"{"domain": {"lower": [0, 0, 0], "cell_size": 0.05, "resolution": [16, 12, 16]},
            "sources": [{"type": "box", "min": [0, 0, 0], "max": [1, 1, 0.3]}]}"#,
    )
}

fn seed(s: &Scene) -> Particles {
    surge::sources::seed_particles(s, &[])
}

fn assert_closed(m: &TriMesh, what: &str) {
    let t = m.topology();
    assert!(t.is_closed_manifold(), "{what}: {t:?}");
    assert_eq!(t.unused_vertices, 0, "{what}: {t:?}");
    for n in &m.normals {
        let l = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
        assert!((l - 1.0).abs() < 1e-3, "{what}: normal {n:?} not unit");
    }
}

fn particle_volume(s: &Scene, p: &Particles) -> f64 {
    p.len() as f64 * s.domain.particle_spacing().powi(3)
}

#[test]
fn ball_is_one_closed_mesh_with_the_particles_volume() {
    let s = ball_scene();
    let p = seed(&s);
    {
        let method = Method::ZhuBridson;
        for smoothing in [0, 4] {
            let set = SurfaceSettings {
                method,
                smoothing_iterations: smoothing,
                ..Default::default()
            };
            let m = reconstruct(&p, &set, &s.domain);
            assert_closed(&m, &format!("{method} smoothing {smoothing}"));
            assert_eq!(m.topology().components, 1);
            let v = m.volume();
            let v0 = particle_volume(&s, &p);
            let err = (v - v0) / v0;
            eprintln!(
                "ball {method} smoothing {smoothing}: {} particles, {} triangles, volume error {:+.2}%",
                p.len(),
                m.triangles.len(),
                100.0 * err
            );
            // The README's calibration figure, -1.2% (the volume-restoring shift and the exact
            // restore after smoothing make it the same with and without smoothing): checked to
            // its printed digit.
            assert!(
                (err + 0.012).abs() <= 0.0005,
                "volume {v} vs particles' {v0}: {:+.2}% (README: -1.2%)",
                100.0 * err
            );
        }
    }
}

/// Heights of the vertices of the free surface (upward normals, away from the walls).
fn top_heights(m: &TriMesh, s: &Scene) -> Vec<f64> {
    let lo = s.domain.lower;
    let up = s.domain.upper();
    let h = s.domain.cell_size;
    (0..m.positions.len())
        .filter(|&i| {
            let p = m.positions[i];
            m.normals[i][2] > 0.5
                && (0..2).all(|a| p[a] as f64 > lo[a] + 2.0 * h && (p[a] as f64) < up[a] - 2.0 * h)
        })
        .map(|i| m.positions[i][2] as f64)
        .collect()
}

#[test]
fn resting_pool_is_flat_at_its_fill_height() {
    let s = pool_scene();
    // Seeded, then simulated to rest (1 s): the particles of a pool at rest, not a jittered box.
    let mut sim = Simulation::new(&s, seed(&s), 0).unwrap();
    for _ in 0..30 {
        sim.advance_frame();
    }
    let p = sim.particles().clone();
    assert!(
        p.max_speed() < 1e-3,
        "pool not at rest: {} m/s",
        p.max_speed()
    );
    let fill = 0.3;
    for smoothing in [0, 4] {
        // `zhu_bridson` (the default until session 5): the README's calibration figures are
        // its; `anisotropic`'s flat pool is `a_settled_pool_is_flat` in surface_features.rs.
        let set = SurfaceSettings {
            method: Method::ZhuBridson,
            smoothing_iterations: smoothing,
            ..Default::default()
        };
        let m = reconstruct(&p, &set, &s.domain);
        assert_closed(&m, "pool");
        let z = top_heights(&m, &s);
        // The free surface away from the walls (0.6 m x 0.4 m) at mesh spacing 0.025 m has
        // about 24 x 16 vertices.
        assert!(z.len() > 300, "{} top vertices", z.len());
        let mean = z.iter().sum::<f64>() / z.len() as f64;
        let rms = (z.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / z.len() as f64).sqrt();
        let worst = z.iter().map(|v| (v - fill).abs()).fold(0.0, f64::max);
        eprintln!(
            "pool smoothing {smoothing}: mean top {mean:.5} (fill {fill}), rms {rms:.5}, worst {worst:.5}, volume {:.5} vs particles {:.5}",
            m.volume(),
            particle_volume(&s, &p)
        );
        assert!(
            worst < 0.25 * s.domain.cell_size,
            "top deviates {worst} m from the fill height"
        );
        if smoothing == 4 {
            // The README's figures for `zhu_bridson`'s defaults: the top within 0.5 mm of the fill
            // height on average, RMS under 2 mm, worst under 7.5 mm (measured 0.07, 1.84,
            // 6.95 mm): a tenth of a 0.05 m cell, the level set's particle-scale bumps.
            assert!((mean - fill).abs() < 5e-4, "mean top {mean} vs fill {fill}");
            assert!(rms < 2e-3, "RMS {rms}");
            assert!(worst < 7.5e-3, "worst {worst}");
        }
    }
}

#[test]
fn spheres_method_gives_closed_meshes() {
    let s = ball_scene();
    let p = seed(&s);
    let set = SurfaceSettings {
        method: Method::Spheres,
        ..Default::default()
    };
    let m = reconstruct(&p, &set, &s.domain);
    assert_closed(&m, "spheres");
    let err = (m.volume() - particle_volume(&s, &p)) / particle_volume(&s, &p);
    eprintln!(
        "spheres ball: volume error {:+.2}%, {:?}",
        100.0 * err,
        m.topology()
    );
    // README: "about 6% more volume on a seeded ball" (measured +6.22%): the union of spheres
    // of radius h/2 around particles h/2 apart overlaps less than the Zhu-Bridson blend.
    assert!(
        (0.055..0.065).contains(&err),
        "spheres volume error {:+.2}% (README: about +6%)",
        100.0 * err
    );
}

/// Liquid touching the walls is capped flat on the wall planes (the inner box of the domain).
#[test]
fn pool_is_capped_on_the_walls() {
    let s = pool_scene();
    let p = seed(&s);
    let m = reconstruct(&p, &SurfaceSettings::default(), &s.domain);
    let h = s.domain.cell_size;
    let up = s.domain.upper();
    for a in 0..3 {
        let lo = m
            .positions
            .iter()
            .map(|p| p[a] as f64)
            .fold(f64::MAX, f64::min);
        assert!(
            (lo - (s.domain.lower[a] + h)).abs() < 1e-3 * h,
            "axis {a}: lowest vertex {lo}"
        );
        if a < 2 {
            let hi = m
                .positions
                .iter()
                .map(|p| p[a] as f64)
                .fold(f64::MIN, f64::max);
            assert!(
                (hi - (up[a] - h)).abs() < 1e-3 * h,
                "axis {a}: highest vertex {hi}"
            );
        }
    }
    // Cap normals point into the wall.
    let floor: Vec<_> = (0..m.positions.len())
        .filter(|&i| (m.positions[i][2] as f64 - h).abs() < 1e-3 * h)
        .collect();
    assert!(!floor.is_empty());
    assert!(floor.iter().all(|&i| m.normals[i][2] < -0.5));
}

fn dam_break_scene() -> Scene {
    scene(
        r#"{"domain": {"lower": [0, 0, 0], "cell_size": 0.05, "resolution": [24, 10, 16]},
            "sources": [{"type": "box", "min": [0, 0, 0], "max": [0.4, 0.5, 0.5]}],
            "time": {"fps": 30, "frames": 12}}"#,
    )
}

/// Every frame of a short dam break meshes to a closed, edge-manifold surface. Written against
/// the `Simulation` API, so it exercises whichever stepper is in place.
#[test]
fn every_mesh_of_a_short_dam_break_is_closed() {
    let s = dam_break_scene();
    let mut sim = Simulation::new(&s, seed(&s), 0).unwrap();
    let set = SurfaceSettings::default();
    for f in 0..=s.time.frames {
        if f > 0 {
            sim.advance_frame();
        }
        let m = reconstruct(sim.particles(), &set, &s.domain);
        assert_closed(&m, &format!("dam break frame {f}"));
        let v = m.volume();
        // Not just a non-negative volume (an empty mesh has that): the mesh holds the liquid. The
        // particles keep their volume within 1% (tests/physics_dam_break.rs); the mesh loses what
        // the README says it may, sheets thinner than a mesh cell and lone droplets, which here is
        // the thinning front of a 0.05 m-cell dam break: measured 2.5% at frame 0 growing to 7.8%
        // at frame 12, so a mesh missing a tenth of the liquid fails.
        let ratio = v / particle_volume(&s, sim.particles());
        assert!(
            ratio > 0.9 && ratio < 1.01,
            "frame {f}: mesh volume / particles' = {ratio:.4}"
        );
        if f == 0 {
            let v0 = particle_volume(&s, sim.particles());
            assert!((v - v0).abs() < 0.05 * v0, "frame 0: volume {v} vs {v0}");
        }
    }
}

/// Same bytes for 1 and 2 threads (vertex and triangle order included).
#[test]
fn output_is_identical_for_any_thread_count() {
    let s = dam_break_scene();
    let mut sim = Simulation::new(&s, seed(&s), 0).unwrap();
    for _ in 0..3 {
        sim.advance_frame();
    }
    let frame = surge::output::frame::ParticleFrame {
        frame: 3,
        time: s.frame_time(3),
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
    assert!(one.len() > 1000);
    assert_eq!(one, run(2));
    assert_eq!(one, run(3));
}

#[test]
fn no_particles_give_an_empty_mesh_and_bad_settings_are_named() {
    let s = ball_scene();
    let m = reconstruct(
        &Particles::default(),
        &SurfaceSettings::default(),
        &s.domain,
    );
    assert!(m.positions.is_empty() && m.triangles.is_empty());
    let bad = SurfaceSettings {
        cell_size_factor: -1.0,
        ..Default::default()
    };
    let e = bad.validate().unwrap_err().to_string();
    assert!(e.contains("surface.cell_size_factor"), "{e}");
    let e = serde_json::from_str::<SurfaceSettings>(r#"{"methd": "spheres"}"#).unwrap_err();
    assert!(e.to_string().contains("methd"), "{e}");
    let e = serde_json::from_str::<SurfaceSettings>(r#"{"method": "marching"}"#).unwrap_err();
    assert!(e.to_string().contains("zhu_bridson"), "{e}");
}

/// Cross-check of the marching cubes against the `isosurface` crate on an analytic sphere.
#[test]
fn marching_cubes_agrees_with_the_isosurface_crate() {
    use isosurface::{MarchingCubes, distance::Signed, extractor::IndexedVertices, math::Vec3};
    use isosurface::{sampler::Sampler, source::ScalarSource};
    let (c, r) = (0.5f32, 0.3f32);
    let sdf =
        |x: f32, y: f32, z: f32| ((x - c).powi(2) + (y - c).powi(2) + (z - c).powi(2)).sqrt() - r;
    // Ours: allocate blocks with a seeded ball, then overwrite phi with the analytic field.
    let s = scene(
        r#"{"domain": {"lower": [-0.03125, -0.03125, -0.03125], "cell_size": 0.0625, "resolution": [18, 18, 18]},
            "sources": [{"type": "sphere", "center": [0.5, 0.5, 0.5], "radius": 0.32}]}"#,
    );
    let p = seed(&s);
    let n = 32; // grid spacing 1/32, as isosurface's 32^3 sampling of the unit cube
    let params = surge::surface::level_set::Params {
        kind: surge::surface::level_set::Kind::ZhuBridson,
        cell: 1.0 / n as f64,
        radius: 0.02,
        kernel_radius: 0.05,
        region_lo: [-1.0; 3],
        region_hi: [2.0; 3],
    };
    let mut ls = surge::surface::level_set::build(&p.pos, &p.vel, &params);
    use surge::surface::sparse_grid::{B, BP};
    for (slot, &dense) in ls.grid.blocks.clone().iter().enumerate() {
        let bc = ls.grid.coords(dense);
        for k in 0..BP {
            let l = [k % B, (k / B) % B, k / (B * B)];
            let w: [f32; 3] = std::array::from_fn(|a| {
                ((ls.grid.origin[a] + bc[a] * B as i64 + l[a] as i64) as f64 / n as f64) as f32
            });
            ls.phi[slot * BP + k] = sdf(w[0], w[1], w[2]);
        }
    }
    let ours = surge::surface::marching_cubes::extract(&ls);
    assert_closed(&ours, "analytic sphere");
    struct Ball;
    impl ScalarSource for Ball {
        fn sample_scalar(&self, p: Vec3) -> Signed {
            Signed(((p.x - 0.5).powi(2) + (p.y - 0.5).powi(2) + (p.z - 0.5).powi(2)).sqrt() - 0.3)
        }
    }
    let (mut v, mut idx) = (vec![], vec![]);
    MarchingCubes::<Signed>::new(n).extract(
        &Sampler::new(&Ball),
        &mut IndexedVertices::new(&mut v, &mut idx),
    );
    let theirs = TriMesh {
        positions: v.chunks(3).map(|c| [c[0], c[1], c[2]]).collect(),
        triangles: idx.chunks(3).map(|t| [t[0], t[1], t[2]]).collect(),
        ..Default::default()
    };
    let exact = 4.0 / 3.0 * std::f64::consts::PI * (r as f64).powi(3);
    let (vo, vt) = (ours.volume(), theirs.volume().abs());
    eprintln!(
        "analytic sphere: ours {} tris volume {vo:.6}, isosurface {} tris volume {vt:.6}, exact {exact:.6}",
        ours.triangles.len(),
        theirs.triangles.len()
    );
    assert!(
        (vo - vt).abs() < 0.01 * exact,
        "ours {vo} vs isosurface {vt}"
    );
    assert!((vo - exact).abs() < 0.02 * exact);
    let ratio = ours.triangles.len() as f64 / theirs.triangles.len() as f64;
    assert!(
        (0.9..1.1).contains(&ratio),
        "triangle counts differ: {ratio}"
    );
}

/// `zhu_bridson`'s default smoothing (one level-set blur pass, 4 Taubin iterations) makes a
/// seeded ball rounder and smoother while keeping its volume. The method is named: the blur is
/// `zhu_bridson`'s (`anisotropic` has none), and so are the README's calibration figures.
#[test]
fn smoothing_reduces_roughness_and_keeps_the_volume() {
    let s = ball_scene();
    let p = seed(&s);
    let measure = |set: SurfaceSettings| {
        let m = reconstruct(&p, &set, &s.domain);
        assert_closed(&m, "smoothed ball");
        let rad: Vec<f64> = m
            .positions
            .iter()
            .map(|q| {
                (0..3)
                    .map(|a| (q[a] as f64 - 0.6).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .collect();
        let mean = rad.iter().sum::<f64>() / rad.len() as f64;
        let rms = (rad.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / rad.len() as f64).sqrt();
        (m.volume(), rms, m.rms_dihedral_angle())
    };
    // The seeded ball is at rest, so the calm-water flattening would flatten its top cap: it is
    // off here, this test is the blur's and Taubin's (the flattening has its own tests in
    // tests/surface_features.rs).
    let base = SurfaceSettings {
        method: Method::ZhuBridson,
        calm_flattening: 0,
        ..Default::default()
    };
    let raw = SurfaceSettings {
        level_set_blur: 0,
        smoothing_iterations: 0,
        ..base.clone()
    };
    let taubin_only = SurfaceSettings {
        level_set_blur: 0,
        ..base.clone()
    };
    let (v0, r0, a0) = measure(raw);
    let (vt, rt, at) = measure(taubin_only);
    let (v1, r1, a1) = measure(base);
    let vp = particle_volume(&s, &p);
    eprintln!(
        "raw / taubin 4 / blur 1 + taubin 4: volume error {:+.2}% / {:+.2}% / {:+.2}%, radius rms {:.2} / {:.2} / {:.2} mm, dihedral rms {:.2} / {:.2} / {:.2} deg",
        100.0 * (v0 - vp) / vp,
        100.0 * (vt - vp) / vp,
        100.0 * (v1 - vp) / vp,
        1e3 * r0,
        1e3 * rt,
        1e3 * r1,
        a0.to_degrees(),
        at.to_degrees(),
        a1.to_degrees()
    );
    assert!(
        (vt - v0).abs() < 0.002 * v0,
        "Taubin with volume restore changed the volume"
    );
    assert!(rt < 0.95 * r0 && at < 0.8 * a0);
    assert!((v1 - vp).abs() < 0.03 * vp);
    assert!(r1 < 0.8 * r0, "radius rms {r1} vs raw {r0}");
    assert!(a1 < 0.6 * a0, "dihedral rms {a1} vs raw {a0}");
    // The README's calibration figures, each to its printed digit (the surface stage is
    // deterministic: a change of method must come with new figures): raw level set +1.1%;
    // RMS radius error 4.16 -> 3.59 -> 2.57 mm; RMS dihedral angle 11.8 -> 8.0 -> 4.8 degrees.
    let close = |got: f64, stated: f64, digit: f64, what: &str| {
        assert!(
            (got - stated).abs() <= 0.5 * digit + 1e-9,
            "{what}: {got} vs the README's {stated}"
        );
    };
    close(100.0 * (v0 - vp) / vp, 1.1, 0.1, "raw volume error, %");
    for (got, stated) in [(r0, 4.16), (rt, 3.59), (r1, 2.57)] {
        close(1e3 * got, stated, 0.01, "RMS radius error, mm");
    }
    for (got, stated) in [(a0, 11.8), (at, 8.0), (a1, 4.8)] {
        close(got.to_degrees(), stated, 0.1, "RMS dihedral angle, degrees");
    }
}

/// Vertex velocities are kernel-weighted particle velocities: a ball moving as a whole gives
/// every vertex that velocity, and a linear velocity field is reproduced to first order. Both
/// averaging methods; with `anisotropic` a stretched kernel can end between an inside point
/// and its outside neighbour, which has no velocity (the vertex must take the inside one's,
/// not mix in a zero: 1.4866 instead of 1.5 before that was handled).
#[test]
fn vertex_velocities_follow_the_particles() {
    let s = ball_scene();
    let mut p = seed(&s);
    for i in 0..p.len() {
        p.vel[0][i] = 1.5;
        p.vel[1][i] = -0.25;
        p.vel[2][i] = 2.0 * (p.pos[2][i] - 0.6);
    }
    for method in [Method::ZhuBridson, Method::Anisotropic] {
        let set = SurfaceSettings {
            method,
            ..Default::default()
        };
        let m = reconstruct(&p, &set, &s.domain);
        assert!(!m.velocities.is_empty());
        for (v, x) in m.velocities.iter().zip(&m.positions) {
            // A uniform velocity is any weighted average's: f32 rounding only.
            assert!(
                (v[0] - 1.5).abs() < 1e-4 && (v[1] + 0.25).abs() < 1e-4,
                "{method}: {v:?}"
            );
            // Linear in z: the kernel average sits a little inside the surface, so allow a cell.
            assert!(
                (v[2] - 2.0 * (x[2] - 0.6)).abs() < 2.0 * 0.05,
                "{method}: {v:?} at {x:?}"
            );
        }
    }
}

/// The wall caps of deep water carry the liquid's velocity: a pool seeded moving at 0.5 m/s along
/// x, meshed with `anisotropic`, whose floor cap runs through blocks deep inside the liquid that
/// are set without a splat. Every floor vertex in the strip 0.35 < x < 0.45 m (the pool's middle,
/// well over a reach from the x walls) must have vx = 0.5 (mirrors across the floor keep vx; f32
/// rounding only); they had 0 when deep blocks carried no velocity (45% of the wall-cap vertices of
/// the 1M dam break's frame 20).
#[test]
fn wall_caps_carry_the_liquid_velocity() {
    let s = pool_scene();
    let mut p = seed(&s);
    p.vel[0].iter_mut().for_each(|v| *v = 0.5);
    let set = SurfaceSettings {
        method: Method::Anisotropic,
        ..Default::default()
    };
    let m = reconstruct(&p, &set, &s.domain);
    let floor = s.domain.cell_size as f32;
    let mut n = 0;
    for (v, x) in m.velocities.iter().zip(&m.positions) {
        if (x[2] - floor).abs() < 1e-4 && x[0] > 0.35 && x[0] < 0.45 {
            n += 1;
            assert!((v[0] - 0.5).abs() < 1e-4, "{v:?} at {x:?}");
        }
    }
    assert!(n > 20, "{n} floor vertices");
}
