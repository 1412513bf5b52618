//! The glass holds (issue 11): liquid sloshing in the drinking glass of `inputs/glass.obj`
//! (outer radius 8 cm, wall 1 cm, base 1 cm, rim at 15 cm, open at the top) never leaves it,
//! keeps its particle count and its mesh volume; and the shipped
//! `scenes/glass.json` at full resolution holds its water for the whole shot.

mod common;
use common::physics::load_json as scene;
use std::path::Path;
use surge::scene::{LoadedScene, load};
use surge::sim::{Particles, Simulation};
use surge::surface::{Method, SurfaceSettings};

/// Inner radius and rim height of the glass, m.
const INNER: f64 = 0.07;
const RIM: f64 = 0.15;

/// Checks the issue's containment at time `t`: no particle inside the glass's solid beyond
/// `f32` rounding (1e-6 m; the push-out keeps particles a tenth of a cell *outside* it, so any
/// negative distance is already a failure of the push-out, as `tests/obstacles.rs` checks the
/// same glass; the bound was a tenth of a cell, a leak, until session 41), and no particle
/// outside the inner radius below the rim (a tenth of a cell allowed for the mesh distance's
/// trilinear sampling).
fn check_inside(l: &LoadedScene, p: &Particles, t: f64, what: &str) {
    let h = l.scene.domain.cell_size;
    let glass = &l.scene.built_obstacles.solids[0];
    for i in 0..p.len() {
        let q = p.position(i).map(|c| c as f64);
        let d = glass.signed_distance(q, t);
        assert!(
            d >= -1e-6,
            "{what}: particle {i} at {q:?} is {d} m inside the glass wall"
        );
        let r = (q[0] * q[0] + q[1] * q[1]).sqrt();
        assert!(
            q[2] >= RIM || (r <= INNER + 0.1 * h && q[2] > 0.01 - 0.1 * h),
            "{what}: particle {i} at r = {r}, z = {} left the glass",
            q[2]
        );
    }
}

/// The 1.25 cm grid of the glass tests (16^3 cells: the 1 cm wall is thinner than a cell) at
/// the default step; `sources` is spliced in. On this grid the CFL number alone would allow one
/// 1/30 s substep per frame at rest (gravity moves the liquid 0.87 cells in it), and at that
/// step sloshing water never settled: over frames 251-500 of the sloshing test's water its
/// kinetic energy still reached 6.7e-4 J/kg (0.003 J/kg of potential energy at the start) and
/// the thrown block splashed over the rim. The default `solver.surface_wave_step` (substeps of
/// at most 0.32 sqrt(h / |g|), three per frame here; two at 0.47, the default until session 8)
/// is what lets it settle (README, "Substeps").
/// Advances `sim` by frame `f` and checks what every glass test checks at every frame: no
/// particle outside the glass's inside region, and the count `n0` kept but for the particles
/// the frame reports removed from crowded cells (`solver.max_particles_per_cell`; `n0` follows
/// them). Returns the frame's largest particle speed.
fn advance_contained(l: &LoadedScene, sim: &mut Simulation, f: u32, n0: &mut usize) -> f32 {
    let rep = sim.advance_frame();
    *n0 -= rep.crowded_removed as usize;
    check_inside(
        l,
        sim.particles(),
        l.scene.frame_time(f),
        &format!("frame {f}"),
    );
    assert_eq!(sim.particles().len(), *n0, "frame {f}");
    rep.max_speed
}

fn glass_scene(sources: &str, frames: u32) -> LoadedScene {
    scene(&format!(
        r#"{{"domain": {{"lower": [-0.1, -0.1, -0.0125], "cell_size": 0.0125, "resolution": [16, 16, 16]}},
            "obstacles": [{{"type": "mesh", "path": "../inputs/glass.obj"}}],
            "sources": [{sources}],
            "time": {{"fps": 30, "frames": {frames}}}}}"#
    ))
}

/// The liquid mesh's enclosed volume at time `t`, with `method`, meshed with the glass.
fn mesh_volume(l: &LoadedScene, p: &Particles, t: f64, method: Method) -> f64 {
    let glass = &l.scene.built_obstacles.solids[0];
    let sd = |q: [f64; 3]| glass.distance_and_normal(q, t);
    let settings = SurfaceSettings {
        method,
        ..l.scene.surface.clone()
    };
    surge::surface::reconstruct_with_solids(
        p,
        &settings,
        &l.scene.domain,
        Some(&sd as surge::surface::obstacles::SolidDistance<'_>),
    )
    .volume()
}

/// The issue's test: 500 frames (16.7 s) of water sloshing in the thin glass. The water starts
/// in the glass: seeded (8 particles per cell) in the glass's inside below the tilted plane
/// `z = 6 cm + 0.15 x` (the surface 2.1 cm higher at one side of the glass than at the
/// other), at rest; released, it sloshes from side to side (up to 0.15 m/s) and settles over
/// the first seconds. Reference: the glass's geometry and mass conservation. At every frame
/// every particle is inside (see [`check_inside`]) and the count is constant; every 10 frames
/// the liquid mesh's volume is within 2% of the first frame's, with the default surface method
/// and with `anisotropic`.
///
/// The first frame is the seeded water in the glass: the same liquid in the same glass, met by
/// the same clip, so a volume change is a change of the liquid (a leak, water packed denser) or
/// of the surface stage's reading of it. (The thrown block of
/// [`thrown_block_stays_in_the_glass`] is no reference: meshed in the air, its particle radius
/// pads all six faces, 4.8% over its particles' volume, where the liquid in the glass is
/// clipped at the glass.) Why 2% (the issue's figure): a leak through the wall, liquid packed
/// at the wall or a mesh that floats off the glass moves it by far more: faces left open to the
/// air outside the glass (`sim::thin_walls`) cost 5-9% within 150 frames of water at rest,
/// mirrored particles beyond the thin wall (`surface::obstacles`) added 3% (Zhu-Bridson) and
/// 44% (anisotropic) to every frame. Measured: worst 1.48% (Zhu-Bridson) and 1.90%
/// (anisotropic) below the first frame (session 39; 1.22% and 1.62% before session 38's free
/// slip on static walls, 1.55% and 1.66% in session 7) with the leapfrog kicks (1.80% and 1.97% with symplectic
/// Euler kicks; 1.96% and 1.92% before session 7's mirrors across the simulation's wall and
/// pocket fill): the margin is small. The
/// particles keep their volume (their mean height, less what the start's tilt adds to it, is
/// unchanged to 0.1%); the mesh loses it at the top: after the slosh the half-spacing slab
/// under the top one holds 1.15 times the seeding density (the same in a plain box and an
/// analytic cylinder), which the density correction, over-density only at the surface where a
/// cell's kernel reaches into air, leaves alone. The same water settled and then pushed
/// sideways at 0.3 m/s ends 2.28% (Zhu-Bridson) and 1.27% (anisotropic) below the pushed
/// frame with the leapfrog kicks (1.45% and 1.20% with symplectic Euler kicks). Figures:
/// `cargo bench --bench glass_volume`.
#[test]
fn glass_holds_500_frames_of_sloshing() {
    let l = glass_scene(
        r#"{"type": "box", "min": [-0.07, -0.07, 0.01], "max": [0.07, 0.07, 0.08]}"#,
        500,
    );
    let seeded = &l.particles;
    let mut p0 = Particles::default();
    for i in 0..seeded.len() {
        let [x, y, z] = seeded.position(i).map(|c| c as f64);
        if (x * x + y * y).sqrt() < INNER && z < 0.06 + 0.15 * x {
            p0.push(seeded.position(i), seeded.velocity(i));
        }
    }
    let mut n0 = p0.len();
    let start = n0;
    assert!(n0 > 2000, "{n0}");
    let methods = [Method::ZhuBridson, Method::Anisotropic];
    let v0 = methods.map(|m| mesh_volume(&l, &p0, 0.0, m));
    let mut sim = Simulation::new(&l.scene, p0, 0).unwrap();
    let mut fastest = 0.0f32;
    let mut worst = [0.0f64; 2];
    for f in 1..=500u32 {
        fastest = fastest.max(advance_contained(&l, &mut sim, f, &mut n0));
        let t = l.scene.frame_time(f);
        if f % 10 == 0 {
            for (k, m) in methods.iter().enumerate() {
                let v = mesh_volume(&l, sim.particles(), t, *m);
                let change = (v - v0[k]) / v0[k];
                worst[k] = worst[k].max(change.abs());
                if f % 50 == 0 {
                    eprintln!(
                        "frame {f}: {m} mesh volume {v:.6e} ({change:+.4} against the first frame)"
                    );
                }
                assert!(
                    change.abs() <= 0.02,
                    "frame {f}: the {m} mesh volume {v} is {change:+.4} of the first frame's {}",
                    v0[k]
                );
            }
        }
    }
    eprintln!(
        "worst mesh volume change: {:.4} ({}), {:.4} ({}); fastest particle {fastest} m/s",
        worst[0], methods[0], worst[1], methods[1]
    );
    // It did slosh (otherwise the volume and the containment say little; water seeded at rest
    // and level stays below 1e-6 m/s).
    assert!(fastest > 0.1, "fastest particle {fastest} m/s");
    // The issue's "particle count constant": every frame's count is checked against what it
    // reports removed from crowded cells (`advance_contained`), and here none may be: a glass
    // that crowded its particles past `solver.max_particles_per_cell` would be losing water.
    assert_eq!(
        n0,
        start,
        "{} particles removed from crowded cells",
        start - n0
    );
}

/// A block thrown sideways into the glass (0.65 m/s, from 0.5-1.5 cm above the base) sloshes
/// up the wall and back for 500 frames (16.7 s): at every frame every particle is inside (see
/// [`check_inside`]) and the count is constant. Reference: the glass's geometry. Two causes of
/// a real loss of the liquid's volume that this scene showed, measured and fixed: (1) a cell
/// whose centre is in the wall was fluid (it held particles on the inner side) with a face
/// open to the air outside the glass, so the projection saw a free surface at the wall and
/// pumped the liquid onto it (a shell at 4x the seeding density, the mesh 29-55% below;
/// `sim::thin_walls`); (2) the open slivers of cells in the corner between base and wall
/// collected particles (24 in one) without ever reading over-dense (`sim::rest_share`).
#[test]
fn thrown_block_stays_in_the_glass() {
    let l = glass_scene(
        r#"{"type": "box", "min": [-0.05, -0.045, 0.015], "max": [0.03, 0.045, 0.1],
            "velocity": [0.6, 0.25, 0.0]}"#,
        500,
    );
    let mut n0 = l.particles.len();
    assert!(n0 > 1000, "{n0}");
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    let mut fastest = 0.0f32;
    for f in 1..=500u32 {
        fastest = fastest.max(advance_contained(&l, &mut sim, f, &mut n0));
    }
    assert_eq!(
        n0,
        l.particles.len(),
        "{} particles removed from crowded cells",
        l.particles.len() - n0
    );
    // It did slosh (otherwise the containment says little): the thrown liquid moved fast.
    assert!(fastest > 0.3, "fastest particle {fastest} m/s");
}

/// The shipped scene `scenes/glass.json` (5 mm cells: the wall is two cells, the base two)
/// at full resolution: a 9 x 9 x 3 cm block standing on the base collapses into the round
/// glass and stays inside for the whole shot: no particle through the wall or over the rim.
/// (The block was first 9.6 x 9.6 x 9 cm: its collapse threw a sheet over the rim
/// and down the outside of the glass from frame 9. Then 9 x 9 x 5.5 cm dropped 5 mm: its
/// inviscid sheet ran up the wall to 15.3-17.1 cm at 5 mm cells depending on the integrator
/// and substeps, and spilled with the leapfrog kicks. The 3 cm block's run-up is 6.2-8.7 cm
/// across integrators, CFL and APIC and 11.1 cm at 2.5 mm cells, `cargo bench --bench
/// glass_runup`: the test fails on a leak or a spill, not on the sheet's chaotic tip.)
#[test]
fn shipped_glass_scene_holds_at_full_resolution() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/glass.json");
    let l = load(&path).expect("scenes/glass.json loads");
    let mut n0 = l.particles.len();
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    let frames = l.scene.time.frames;
    for f in 1..=frames {
        advance_contained(&l, &mut sim, f, &mut n0);
    }
    eprintln!(
        "{} of {} particles removed from crowded cells",
        l.particles.len() - n0,
        l.particles.len()
    );
}

/// The shipped `scenes/tap.json`: a tap fills the glass for 4 s, then the water settles for
/// 1 s. Once the pour has stopped (frame 120) nothing adds or removes water but the thinning
/// of crowded cells, so the particle count at 5 s must stay within 0.25% of the count at 4 s:
/// 0.25% of the 1.7 litres poured is a level 0.3 mm lower in the 7 cm glass, a sixteenth of
/// a cell. Reference: conservation of mass (a closed glass at rest keeps its water). Until
/// session 41 the thinning removed the excess of cells crowded against the wall and the base
/// (the swirl after the pour presses particles onto the push-out distance faster than the
/// density correction spreads them): -1.18% (109,093 to 107,804). Now the excess moves to an
/// emptier liquid cell within two cells (`sim::crowding`): -0.06% (110,041 to 109,973).
/// Also checks containment at every frame, as the other glass tests.
#[test]
fn tap_fills_the_glass_and_it_keeps_its_water() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/tap.json");
    let l = load(&path).expect("scenes/tap.json loads");
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    let (poured, frames) = (120, l.scene.time.frames);
    let stop = l.scene.frame_time(poured);
    assert!(
        l.scene
            .emitters
            .iter()
            .all(|e| e.end.is_some_and(|t| t <= stop))
    );
    let (mut at_pour, mut n0) = (0, 0);
    for f in 1..=frames {
        if f <= poured {
            sim.advance_frame();
            check_inside(
                &l,
                sim.particles(),
                l.scene.frame_time(f),
                &format!("frame {f}"),
            );
            n0 = sim.particles().len();
            at_pour = n0;
        } else {
            advance_contained(&l, &mut sim, f, &mut n0);
        }
    }
    let end = sim.particles().len();
    let change = end as f64 / at_pour as f64 - 1.0;
    eprintln!(
        "tap: {at_pour} particles at 4 s, {end} at 5 s ({:+.3}%)",
        100.0 * change
    );
    assert!(
        change.abs() <= 0.0025,
        "the settling glass went from {at_pour} to {end} particles ({:+.3}%)",
        100.0 * change
    );
}

/// The liquid mesh meets the glass (the gap of issue 11): after the coarse glass has settled
/// (the liquid pooled on the base, 1.5 s), the surface stage given the glass's signed distance
/// (`surface::obstacles`: particles mirrored across the simulation's wall, clip, enclosed
/// pockets filled, snap) puts the liquid's bottom face on the base. Reference: water at rest
/// in a container fills it down to the base (hydrostatics: no air under settled liquid).
/// Measured: the distance to the glass of every downward-facing mesh vertex over the middle of
/// the base (radius under 5.5 cm, well off the side wall; within a simulation cell of the
/// base). Tolerance: a quarter of a surface cell (1.6 mm): the snap leaves a vertex on the
/// zero set of the glass's distance up to its sampling (two Newton steps); a quarter cell is
/// well under the gap without the obstacle, which the last check requires to be larger (there
/// the same vertices stand off by about the particle radius: 2.0 mm and more measured).
/// `zhu_bridson`, named: the figures and the stand-off without the clip are its (see
/// [`anisotropic_mesh_touches_the_glass_base`] for the default method).
#[test]
fn liquid_mesh_touches_the_glass_base() {
    let (with, without, cell_s) = glass_base_distances(Method::ZhuBridson, &[45]).remove(0);
    let worst = with.iter().fold(0.0f64, |a, d| a.max(d.abs()));
    let gap_without = without.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(with.len() > 50, "{} vertices on the base", with.len());
    assert!(
        worst <= 0.25 * cell_s,
        "a bottom vertex is {worst} m off the base"
    );
    assert!(
        !without.is_empty(),
        "without the clip the mesh has no bottom vertex near the base: nothing to compare"
    );
    assert!(
        gap_without > 0.25 * cell_s,
        "without the clip the mesh already touched the base ({gap_without} m)"
    );
}

/// [`liquid_mesh_touches_the_glass_base`]'s contact check (same reference and tolerance) with
/// the default `anisotropic` method, at every frame from 30 to 60 of the settling water
/// (without the clip its bottom already comes within 0.64 mm of the base, so that part does
/// not apply). It failed before session 7: one bottom vertex of 414 stood 6.25 mm (one surface
/// cell) above the base at frame 45, 7.1, 9.6 and 8.9 mm at frames 30, 40 and 60, over spots
/// where the particles leave a void: the simulation rests its particles on the faces of the
/// cells it labels solid, 2.5 mm above this base, and a bottom cell holding 3-5 particles
/// instead of 8 leaves its lowest ones 9 mm above the base; mirrored across the glass's own
/// surface, a particle and its image were then 18 mm apart, more than the kernels bridge.
/// Mirrored across the simulation's wall instead (images 5 mm closer) the bottom met the base
/// at frames 35 and 44-60 but still missed it by 10.2 and 9.6 mm at frames 30 and 40; the
/// pocket fill alone left 6.3-9.6 mm at frames 30, 40, 45, 46 and 60; with both, those four
/// frames met it. Session 27 checked every frame: frames 52, 53, 56 and 58 still missed by
/// 6.4-6.6 mm (and 54-60 by 6.3-6.8 mm with the multigrid's smoother over-relaxed by 1.45
/// instead of 1.3: the void moves with the trajectory), over a void whose air ran along the
/// side wall to the free surface, so the pocket fill left it; the interior fill
/// (`surface::obstacles::fill_interior`: air in a simulation cell whose neighbours all hold
/// particles or are solid, and in the sliver under it) meets the base at every frame.
#[test]
fn anisotropic_mesh_touches_the_glass_base() {
    let frames: Vec<u32> = (30..=60).collect();
    for (frame, (with, _, cell_s)) in frames
        .iter()
        .zip(glass_base_distances(Method::Anisotropic, &frames))
    {
        let worst = with.iter().fold(0.0f64, |a, d| a.max(d.abs()));
        assert!(
            with.len() > 50,
            "frame {frame}: {} vertices on the base",
            with.len()
        );
        assert!(
            worst <= 0.25 * cell_s,
            "frame {frame}: a bottom vertex is {worst} m off the base"
        );
    }
}

/// The settled glass of [`liquid_mesh_touches_the_glass_base`] meshed with `method` at each
/// of `frames` (increasing; one simulation), with and without the glass's distance: the
/// signed distances to the glass of the downward-facing vertices over the middle of the base,
/// and the surface cell.
fn glass_base_distances(method: Method, frames: &[u32]) -> Vec<(Vec<f64>, Vec<f64>, f64)> {
    let l = scene(
        r#"{"domain": {"lower": [-0.1, -0.1, -0.0125], "cell_size": 0.0125, "resolution": [16, 16, 16]},
            "obstacles": [{"type": "mesh", "path": "../inputs/glass.obj"}],
            "sources": [{"type": "box", "min": [-0.045, -0.045, 0.03], "max": [0.045, 0.045, 0.1]}],
            "time": {"fps": 30, "frames": 60}}"#,
    );
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    let mut done = 0;
    let mut out = Vec::new();
    for &frame in frames {
        while done < frame {
            sim.advance_frame();
            done += 1;
        }
        let t = l.scene.frame_time(frame);
        let glass = &l.scene.built_obstacles.solids[0];
        let sd = |p: [f64; 3]| glass.distance_and_normal(p, t);
        let h = l.scene.domain.cell_size;
        let settings = SurfaceSettings {
            method,
            ..l.scene.surface.clone()
        };
        let cell_s = settings.level_set_params(&l.scene.domain).cell;
        let bottom = |with: bool| -> Vec<f64> {
            let m = surge::surface::reconstruct_with_solids(
                sim.particles(),
                &settings,
                &l.scene.domain,
                with.then_some(&sd as surge::surface::obstacles::SolidDistance<'_>),
            );
            m.positions
                .iter()
                .zip(&m.normals)
                .map(|(v, n)| (v.map(|c| c as f64), n[2]))
                .filter(|(v, nz)| {
                    (v[0] * v[0] + v[1] * v[1]).sqrt() < 0.055 && v[2] < 0.01 + h && *nz < -0.7
                })
                .map(|(v, _)| glass.signed_distance(v, t))
                .collect()
        };
        let with = bottom(true);
        let without = bottom(false);
        let worst = with.iter().fold(0.0f64, |a, d| a.max(d.abs()));
        let gap_without = without.iter().copied().fold(f64::INFINITY, f64::min);
        eprintln!(
            "{method}, frame {frame}: bottom vertices: {} with the glass, worst |distance| {worst:.5} m (surface cell {cell_s} m); without: {} vertices, nearest {gap_without:.5} m",
            with.len(),
            without.len()
        );
        out.push((with, without, cell_s));
    }
    out
}

/// The other side of [`anisotropic_mesh_touches_the_glass_base`]: the contact comes from the
/// liquid being there, not from the surface stage pulling everything near the glass onto it.
/// A ball of 61 particles (radius 1.5 cm, the seeding lattice of 6.25 mm) hangs in the coarse
/// glass with its lowest particles 1.5 simulation cells (18.75 mm) above the base: the air
/// under it is open to the air around it, so the pocket fill must leave it, and its images
/// (mirrored across the simulation's wall 2.5 mm above the base) are too far to bridge the
/// gap. Reference: the same particles meshed without the glass. The lowest vertex with the
/// glass must stand where it stands without it, to a quarter surface cell (the tolerance of
/// the contact tests; the glass changes nothing near the ball's bottom), and more than two
/// surface cells above the base. Measured: 23.9 mm both ways (13.9 mm above the base); with
/// every pocket filled whether or not it reaches open air, -3.2 mm (the test fails).
#[test]
fn a_ball_above_the_glass_base_is_not_pulled_onto_it() {
    let l = glass_scene(
        r#"{"type": "box", "min": [-0.045, -0.045, 0.03], "max": [0.045, 0.045, 0.1]}"#,
        1,
    );
    let s = 0.00625f32;
    let (radius, lowest) = (0.015f32, 0.01 + 0.01875f32);
    let mut ball = Particles::with_capacity(200);
    for i in -3..=3 {
        for j in -3..=3 {
            for k in 0..=6 {
                let p = [i as f32 * s, j as f32 * s, k as f32 * s - radius];
                if (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt() <= radius + 1e-6 {
                    ball.push([p[0], p[1], p[2] + radius + lowest], [0.0; 3]);
                }
            }
        }
    }
    let zmin = (0..ball.len())
        .map(|i| ball.position(i)[2])
        .fold(f32::INFINITY, f32::min);
    assert!((zmin - lowest).abs() < 0.001, "lowest particle at {zmin} m");
    let glass = &l.scene.built_obstacles.solids[0];
    let sd = |p: [f64; 3]| glass.distance_and_normal(p, 0.0);
    let settings = l.scene.surface.clone();
    let cell_s = settings.level_set_params(&l.scene.domain).cell;
    let lowest_vertex = |with: bool| -> f64 {
        let m = surge::surface::reconstruct_with_solids(
            &ball,
            &settings,
            &l.scene.domain,
            with.then_some(&sd as surge::surface::obstacles::SolidDistance<'_>),
        );
        assert!(!m.positions.is_empty());
        m.positions
            .iter()
            .map(|v| v[2] as f64)
            .fold(f64::INFINITY, f64::min)
    };
    let (with, without) = (lowest_vertex(true), lowest_vertex(false));
    eprintln!(
        "{} particles, lowest at {zmin} m; lowest vertex {with:.5} m with the glass, {without:.5} m without (base at 0.01 m)",
        ball.len()
    );
    assert!(
        (with - without).abs() <= 0.25 * cell_s,
        "lowest vertex {with} m with the glass, {without} m without"
    );
    assert!(with > 0.01 + 2.0 * cell_s, "lowest vertex {with} m");
}
