//! Unit tests of the particle push-out near domain walls, and of the containment's visit of
//! only the cells near a solid.

use super::*;
use crate::geometry::solid::{Liquid, Shape};
use crate::geometry::transform::{Motion, Pose};
use rand_chacha::rand_core::{Rng, SeedableRng};

/// A grid of `n` cells of `h` m from the origin, every face a wall.
pub(super) fn closed_grid(n: [usize; 3], h: f32) -> GridDims {
    GridDims {
        n,
        h,
        lower: [0.0; 3],
        open: [[false; 2]; 3],
    }
}

/// A particle that ended inside a cylinder lying on the floor, in the wedge between the two
/// (the cylinder's gradient there points mostly into the floor): the push-out must leave it
/// outside the cylinder and inside the domain. Reference: the cylinder's exact distance.
/// Without the slide along the wall, the clamp to the floor puts it back about 0.5 mm inside.
#[test]
fn push_out_in_a_wedge_slides_along_the_wall() {
    let d = closed_grid([20, 8, 10], 0.05);
    // Liquid floor z = 0.05 (plus the wall margin); axis 8 cm above it, radius 8 cm.
    let cyl = Solid::new(
        Shape::Cylinder {
            a: [0.5, 0.0, 0.13],
            b: [0.5, 0.4, 0.13],
            radius: 0.08,
        },
        [1.0; 3],
        Motion::Static(Pose::identity()),
        Liquid::Outside,
    )
    .unwrap();
    let mut st = SolidState::new(Obstacles::new(vec![cyl.clone()], "t".into()), &d);
    let mut sp = SortedParticles::default();
    // 2 mm from the contact line and 3 mm above the floor: 3 mm into the cylinder.
    let start = [0.502f32, 0.2, 0.053];
    sp.push(start, [0.0; 3], 0);
    st.remember(&d, &sp, (0.0, 0.0), None);
    let inside = cyl.signed_distance(start.map(|c| c as f64), 0.0);
    assert!(inside < 0.0, "the start must be in the cylinder: {inside}");
    st.hold(&d, 0.0, &mut sp, true);
    let q = [sp.pos[0][0], sp.pos[1][0], sp.pos[2][0]];
    let dist = cyl.signed_distance(q.map(|c| c as f64), 0.0);
    let (lo, hi) = d.interior_bounds(crate::sim::advect::WALL_MARGIN * d.h);
    assert!(
        (0..3).all(|a| q[a] >= lo[a] && q[a] <= hi[a]),
        "{q:?} left the domain"
    );
    assert!(
        dist >= -1e-6,
        "{q:?} is {dist} m inside the cylinder (start {inside})"
    );
}

/// Positions and velocities, by axis.
type Held = ([Vec<f32>; 3], [Vec<f32>; 3]);

/// The containment tests' run: `p` sorted into the grid, the cells labelled at `label` (none:
/// no cell distances to skip on), each particle moved from time `from` by just under `step` in
/// a direction that varies from particle to particle, and held at `hold` (`bounds`: as
/// [`SolidState::remember`]'s; `boxes`: whether the moving solids' world boxes may decide a
/// particle, `far.rs`); the positions and velocities after.
fn move_and_hold(
    d: &GridDims,
    solids: &[Solid],
    p: &crate::particles::Particles,
    (label, (from, hold)): (Option<f64>, (f64, f64)),
    (bounds, boxes): (Option<(f64, f64)>, bool),
    step: f64,
) -> Held {
    let mut st = SolidState::new(Obstacles::new(solids.to_vec(), "t".into()), d);
    if !boxes {
        st.slacks.fill(None);
    }
    let mut sp = SortedParticles::default();
    sp.load(p, d.cells());
    sp.sort(d);
    if let Some(t) = label {
        let mut labels = vec![CellLabel::Empty; d.cells()];
        st.label_solid_cells(d, t, &mut labels);
    }
    st.remember(d, &sp, (from, hold), bounds);
    for s in 0..sp.len() {
        let a = 0.7 * s as f32;
        let dir = [
            a.cos() * (0.3 * a).sin(),
            a.sin() * (0.3 * a).sin(),
            (0.3 * a).cos(),
        ];
        for (ax, c) in dir.iter().enumerate() {
            sp.pos[ax][s] += step as f32 * 0.999 * c;
        }
    }
    st.hold(d, hold, &mut sp, true);
    (sp.pos.clone(), sp.vel.clone())
}

/// The containment restricted to the cells near a solid (static obstacle, a bound on the move,
/// see `hold.rs`) gives the same bytes as the pass over every particle. A lattice of
/// particles filling a box around a sphere, each moved by up to `step` (0.6 cells, in a
/// direction that varies per particle): many end inside the sphere or within the push-out
/// distance and are changed, most are far from it. Fails if the bound skipped a cell whose
/// particles the full pass changes, or if the cell ranges of the sort were misread.
#[test]
fn containment_near_cells_only_matches_the_full_pass() {
    let d = closed_grid([16, 16, 16], 0.05);
    let ball = Solid::new(
        Shape::Sphere {
            centre: [0.4, 0.4, 0.4],
            radius: 0.2,
        },
        [1.0; 3],
        Motion::Static(Pose::identity()),
        Liquid::Outside,
    )
    .unwrap();
    let mut p = crate::particles::Particles::default();
    let m = 44;
    for k in 0..m {
        for j in 0..m {
            for i in 0..m {
                let x = [i, j, k].map(|c| 0.06 + 0.68 * c as f32 / (m - 1) as f32);
                p.push(x, [0.1, -0.2, 0.3]);
            }
        }
    }
    let step = 0.6 * d.h as f64;
    let run = |bounds| {
        move_and_hold(
            &d,
            std::slice::from_ref(&ball),
            &p,
            (Some(0.0), (0.0, 0.0)),
            (bounds, true),
            step,
        )
    };
    let all = run(None);
    let near = run(Some((0.0, step)));
    let changed = (0..all.0[0].len())
        .filter(|&s| (0..3).any(|a| all.1[a][s] != [0.1, -0.2, 0.3][a]))
        .count();
    assert!(changed > 100, "only {changed} particles were held");
    for a in 0..3 {
        assert!(all.0[a] == near.0[a], "positions differ on axis {a}");
        assert!(all.1[a] == near.1[a], "velocities differ on axis {a}");
    }
}

/// The containment beside moving obstacles, whose cell distances are those of the substep's
/// start while it runs at the substep's end (`hold.rs`: the distances lowered by the solids'
/// largest shift between the two times), gives the same bytes as evaluating every particle
/// against every solid. A lattice of particles filling the domain, each moved by up to 0.6
/// cells, held at the end of a 0.05 s substep whose start labelled the cells; the solids: a box
/// turning at 90 degrees and moving at 1 m/s, a uniformly scaled sphere, then the same with a
/// static cylinder (the split of `split.rs`), then a spherical container (liquid inside)
/// sliding and turning, and a box spinning in place at 340 degrees a second. The reference
/// never labels the cells, so it has no distances to skip on, and does not let the solids'
/// world boxes decide (`far.rs`); a tumbling icosphere mesh is the last case. Fails if the
/// shift were not taken off (a zero drift: particles the moving box reaches are skipped) or
/// taken off too little (the turn's part left out: the spinning box's particles). (The boxes'
/// use gives the same bytes with the mesh's slack set to 0 here: its sampled distance stays
/// above the box's distance on this convex mesh; the slack is the proof's margin for meshes
/// with hollows, `far::box_slack`.)
#[test]
fn containment_beside_moving_solids_matches_evaluating_every_particle() {
    use crate::geometry::transform::Keyframe;
    let d = closed_grid([20, 16, 16], 0.05);
    let key = |time: f64, translate: [f64; 3], turn: f64| Keyframe {
        time,
        translate,
        rotate_deg: [0.0, 0.3 * turn, turn],
    };
    let moving = |from: [f64; 3], to: [f64; 3], turn: f64| {
        Motion::keyframed(vec![key(0.0, from, 0.0), key(1.0, to, turn)]).unwrap()
    };
    let solid = |shape, scale, motion, liquid| Solid::new(shape, scale, motion, liquid).unwrap();
    let paddle = solid(
        Shape::Box {
            min: [-0.05, -0.2, -0.25],
            max: [0.05, 0.2, 0.25],
        },
        [1.0, 1.2, 1.0],
        moving([0.3, 0.4, 0.4], [1.3, 0.4, 0.4], 90.0),
        Liquid::Outside,
    );
    let ball = solid(
        Shape::Sphere {
            centre: [0.05, 0.0, 0.0],
            radius: 0.08,
        },
        [1.5; 3],
        moving([0.7, 0.5, 0.2], [0.2, 0.3, 0.6], 40.0),
        Liquid::Outside,
    );
    let post = solid(
        Shape::Cylinder {
            a: [0.75, 0.2, 0.0],
            b: [0.75, 0.2, 0.8],
            radius: 0.06,
        },
        [1.0; 3],
        Motion::Static(Pose::identity()),
        Liquid::Outside,
    );
    let tank = solid(
        Shape::Sphere {
            centre: [0.0; 3],
            radius: 0.42,
        },
        [1.0; 3],
        moving([0.5, 0.4, 0.4], [0.9, 0.3, 0.5], 60.0),
        Liquid::Inside,
    );
    let spinner = solid(
        Shape::Box {
            min: [-0.04, -0.25, -0.2],
            max: [0.04, 0.25, 0.2],
        },
        [1.0; 3],
        Motion::keyframed(vec![
            key(0.0, [0.5, 0.4, 0.4], 0.0),
            Keyframe {
                time: 0.5,
                translate: [0.5, 0.4, 0.4],
                rotate_deg: [0.0, 0.0, 170.0],
            },
        ])
        .unwrap(),
        Liquid::Outside,
    );
    // A mesh (an icosphere) tumbling through, its distance grid at half the cells with a band
    // of three cells, as a scene's mesh obstacle is built: its world box decides particles.
    let mesh = {
        use crate::geometry::mesh_io::test_meshes::icosphere;
        use crate::geometry::solid::MeshShape;
        let m = MeshShape::build(&icosphere([0.0; 3], 1.0, 3), [0.15; 3], 0.025, 6.0).unwrap();
        let shape = Shape::Mesh(std::sync::Arc::new(m));
        let motion = moving([0.4, 0.3, 0.4], [0.6, 0.5, 0.3], 120.0);
        solid(shape, [0.15; 3], motion, Liquid::Outside)
    };
    let mut p = crate::particles::Particles::default();
    let m = [48, 38, 38];
    for k in 0..m[2] {
        for j in 0..m[1] {
            for i in 0..m[0] {
                let x = [i, j, k].map(|c| 0.06 + 0.03 * c as f32 / 1.47);
                p.push(x, [0.1, -0.2, 0.3]);
            }
        }
    }
    let (t0, t1) = (0.2, 0.25);
    let step = 0.6 * d.h as f64;
    for solids in [
        vec![paddle.clone(), ball.clone()],
        vec![paddle.clone(), post, ball],
        vec![tank, paddle],
        vec![spinner],
        vec![mesh],
    ] {
        let run = |label: bool, bounds, boxes| {
            let times = (label.then_some(t0), (t0, t1));
            move_and_hold(&d, &solids, &p, times, (bounds, boxes), step)
        };
        // The reference: every particle evaluated against every solid.
        let all = run(false, None, false);
        let changed = (0..all.0[0].len())
            .filter(|&s| (0..3).any(|a| all.1[a][s] != [0.1, -0.2, 0.3][a]))
            .count();
        assert!(changed > 500, "only {changed} particles were held");
        for (what, got) in [
            ("the solids' boxes", run(false, None, true)),
            ("each particle's cell", run(true, None, true)),
            ("the near cells", run(true, Some((0.0, step)), true)),
        ] {
            for a in 0..3 {
                let differ = (0..all.0[a].len())
                    .filter(|&s| all.0[a][s] != got.0[a][s] || all.1[a][s] != got.1[a][s])
                    .count();
                assert!(
                    differ == 0,
                    "skipping by {what}: {differ} particles differ on axis {a}"
                );
            }
        }
    }
}

/// A box moving at 1 m/s (1 cell per 0.05 s substep) from x = 0.3 m at t = 0, as a solid of
/// the containment tests below, `thick` m across in x.
fn plate(thick: f64) -> Solid {
    use crate::geometry::transform::Keyframe;
    let key = |time: f64, x: f64| Keyframe {
        time,
        translate: [x, 0.4, 0.4],
        rotate_deg: [0.0; 3],
    };
    let motion = Motion::keyframed(vec![key(0.0, 0.3), key(1.0, 1.3)]).unwrap();
    let (a, b) = ([-0.5 * thick, -0.3, -0.3], [0.5 * thick, 0.3, 0.3]);
    Solid::new(
        Shape::Box { min: a, max: b },
        [1.0; 3],
        motion,
        Liquid::Outside,
    )
    .unwrap()
}

/// The path check of a moving solid starts from the particle's start carried with the solid
/// (`hold.rs`): a particle just ahead of a face advancing a whole cell in the substep, moving
/// with it and down by a cell, slides down the face. Checked against the solids at the
/// substep's end along the particle's own path, its start lay in the solid by then and it was
/// held at its start, never moving down (the droplet of `scenes/paddle.json`, session 34).
#[test]
fn a_particle_moving_down_an_advancing_face_slides_down_it() {
    let d = closed_grid([20, 16, 16], 0.05);
    let paddle = plate(0.1);
    let mut st = SolidState::new(Obstacles::new(vec![paddle.clone()], "t".into()), &d);
    let mut sp = SortedParticles::default();
    // The face at x = 0.55 m at t = 0.2 s, 0.6 m at 0.25 s; the particle 2.5 mm ahead of it.
    sp.push([0.5525, 0.4, 0.4], [1.0, 0.0, -1.0], 0);
    st.remember(&d, &sp, (0.2, 0.25), None);
    sp.pos[0][0] += 0.05;
    sp.pos[2][0] -= 0.05;
    st.hold(&d, 0.25, &mut sp, true);
    let q = [sp.pos[0][0], sp.pos[1][0], sp.pos[2][0]];
    let gap = paddle.signed_distance(q.map(|c| c as f64), 0.25);
    assert!(
        q[2] < 0.36,
        "held at height {} (start 0.4, moved to 0.35)",
        q[2]
    );
    assert!(gap >= 0.0, "{q:?} is {gap} m inside the paddle");
    assert_eq!(
        [sp.vel[0][0], sp.vel[2][0]],
        [1.0, -1.0],
        "velocity changed"
    );
}

/// A plate 1.6 cm thick moving a whole 5 cm cell in the substep sweeps the particles 1.5 cm
/// ahead of it along (they stand still; at the substep's end the plate lies beyond them, 1.9
/// cm from them): their path carried with the plate crosses it. The same with the cells
/// near the plate only (their bound widened by the plate's shift) and with the cells' and the
/// world boxes' bounds on the distance: fails if a bound skipped them (a path carried with a
/// solid is up to the solid's shift longer than the particle's own move).
#[test]
fn a_thin_plate_moving_a_cell_a_substep_sweeps_the_particles_ahead() {
    let d = closed_grid([20, 16, 16], 0.05);
    let solids = [plate(0.016)];
    let mut p = crate::particles::Particles::default();
    for k in 0..10 {
        for j in 0..10 {
            p.push(
                [0.523, 0.25 + 0.03 * j as f32, 0.25 + 0.03 * k as f32],
                [0.0; 3],
            );
        }
    }
    for (label, bounds, boxes) in [
        (None, None, false),
        (None, None, true),
        (Some(0.2), None, true),
        (Some(0.2), Some((0.0, 0.0)), true),
    ] {
        let times = (label, (0.2, 0.25));
        let (pos, _) = move_and_hold(&d, &solids, &p, times, (bounds, boxes), 0.0);
        let behind = pos[0].iter().filter(|&&x| x < 0.558).count();
        assert!(
            behind == 0,
            "{behind} of 100 particles left behind the plate (label {label:?}, bounds \
             {bounds:?}, boxes {boxes})"
        );
    }
}

/// The kernel share's blocked sampling (`rest_share::sample_share` with exact distances: one
/// evaluation at a block's centre decides its eight samples when the centre is farther than
/// the block's half diagonal from the push-out level) gives the bits of evaluating every
/// sample, in every cell within a cell and a half of the solids: a box turned about two axes
/// and scaled per axis, a uniformly scaled sphere, a cylinder, a spherical container (liquid
/// inside), and their minimum. It must also evaluate fewer points (the blocks are used). Fails
/// if the blocks' radius were too small (a block decided open or closed across the level).
#[test]
fn blocked_share_sampling_gives_the_bits_of_every_sample() {
    use crate::sim::rest_share::sample_share;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let d = closed_grid([18, 16, 14], 0.05);
    let at = |translate: [f64; 3], rotate: [f64; 3]| {
        Motion::Static(Pose {
            translate: translate.into(),
            rotation: crate::geometry::transform::euler_xyz_degrees(rotate),
        })
    };
    let solid = |shape, scale, motion, liquid| Solid::new(shape, scale, motion, liquid).unwrap();
    let cube = Shape::Box {
        min: [-0.1, -0.15, -0.12],
        max: [0.1, 0.15, 0.12],
    };
    let ball = Shape::Sphere {
        centre: [0.02, 0.0, 0.0],
        radius: 0.1,
    };
    let pipe = Shape::Cylinder {
        a: [0.0, 0.0, -0.2],
        b: [0.0, 0.1, 0.25],
        radius: 0.07,
    };
    let out = Liquid::Outside;
    let sets = [
        vec![solid(
            cube,
            [1.3, 0.9, 1.1],
            at([0.3, 0.4, 0.3], [25.0, 0.0, 33.0]),
            out,
        )],
        vec![solid(
            ball.clone(),
            [1.7; 3],
            at([0.6, 0.35, 0.35], [0.0; 3]),
            out,
        )],
        vec![solid(
            pipe,
            [1.0; 3],
            at([0.5, 0.4, 0.3], [10.0, 20.0, 0.0]),
            out,
        )],
        vec![solid(
            ball,
            [3.2; 3],
            at([0.45, 0.4, 0.35], [0.0; 3]),
            Liquid::Inside,
        )],
    ];
    let all: Vec<Solid> = sets.iter().flatten().cloned().collect();
    let (mut cells, mut blocked, mut plain) = (0, 0, 0);
    for solids in sets.iter().chain([&all]) {
        assert!(solids.iter().all(|s| s.distance_is_exact()));
        let calls = AtomicUsize::new(0);
        let phi = |p: [f64; 3]| {
            calls.fetch_add(1, Ordering::Relaxed);
            solids
                .iter()
                .map(|s| s.signed_distance(p, 0.0))
                .fold(f64::INFINITY, f64::min)
        };
        for c in 0..d.cells() {
            let ijk = [c % 18, (c / 18) % 16, c / (18 * 16)];
            let centre = ijk.map(|x| (x as f64 + 0.5) * d.h as f64);
            if phi(centre).abs() > 1.5 * d.h as f64 {
                continue;
            }
            cells += 1;
            let before = calls.load(Ordering::Relaxed);
            let fast = sample_share(&d, &phi, 8, true, ijk);
            let mid = calls.load(Ordering::Relaxed);
            let slow = sample_share(&d, &phi, 8, false, ijk);
            blocked += mid - before;
            plain += calls.load(Ordering::Relaxed) - mid;
            assert_eq!(
                fast.to_bits(),
                slow.to_bits(),
                "cell {ijk:?}: {fast} against {slow}"
            );
        }
    }
    assert!(cells > 1000, "only {cells} cells near the solids");
    assert!(
        2 * blocked < plain,
        "the blocks saved little: {blocked} evaluations against {plain}"
    );
}

/// [`hold::first_hit`] skips the samples a sample's distance clears where every solid's distance is
/// exact (sphere tracing): it must give the uniform sampling's answer, the same first sample in
/// solid and the same sample before it, to the bit. Paths of 0.5 to 40 cells start near a rotated
/// box and a cylinder on a 1 cm grid, half of them aimed at a solid, near the origin and a
/// kilometre from it; the reference samples every point. Fails when the skip reaches one sample
/// further (tried).
#[test]
fn path_check_skipping_matches_every_sample() {
    // Near the origin and a kilometre from it, where the f32 samples round coarsely.
    for o in [[0.0; 3], [1000.0, -500.0, 250.0]] {
        skipping_matches_every_sample(o);
    }
}

fn skipping_matches_every_sample(o: [f64; 3]) {
    let cyl = Solid::new(
        Shape::Cylinder {
            a: [o[0] + 0.3, o[1] + 0.1, o[2]],
            b: [o[0] + 0.3, o[1] + 0.1, o[2] + 0.5],
            radius: 0.06,
        },
        [1.0; 3],
        Motion::Static(Pose::identity()),
        Liquid::Outside,
    )
    .unwrap();
    let block = Solid::new(
        Shape::Box {
            min: [-0.05, -0.05, 0.0],
            max: [0.05, 0.05, 0.12],
        },
        [1.0; 3],
        Motion::Static(Pose::new([o[0] + 0.55, o[1] + 0.3, o[2]], [0.0, 0.0, 45.0])),
        Liquid::Outside,
    )
    .unwrap();
    let d = closed_grid([80, 40, 40], 0.01);
    let mut st = SolidState::new(Obstacles::new(vec![cyl, block], "t".into()), &d);
    st.set_poses(0.0);
    let posed = Posed {
        solids: &st.obstacles.solids[..],
        poses: &st.poses,
    };
    assert!(posed.exact(0..2), "box and cylinder have exact distances");
    let step = PATH_STEP_CELLS * d.h;
    // The uniform sampling `first_hit` replaces.
    let every = |(from, to): ([f32; 3], [f32; 3])| {
        let dist = [0, 1, 2].map(|a| to[a] - from[a]);
        let len = dist.iter().map(|x| x * x).sum::<f32>().sqrt();
        if len <= step {
            return None;
        }
        let steps = ((len / step).ceil() as u32).min(256);
        let mut last = from.map(|c| c as f64);
        for s in 1..=steps {
            let f = s as f32 / steps as f32;
            let q = [0, 1, 2].map(|a| (from[a] + f * dist[a]) as f64);
            if posed.min_distance(0..2, q) < 0.0 {
                return Some((f, last));
            }
            last = q;
        }
        None
    };
    // The project's seeded generator (as the seeding's jitter), uniform in [0, 1).
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12345);
    let mut rnd = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let (mut hits, mut skipped) = (0, 0);
    for k in 0..20_000 {
        let centre = if k % 2 == 0 {
            [o[0] + 0.3, o[1] + 0.1]
        } else {
            [o[0] + 0.55, o[1] + 0.3]
        };
        let from = [
            centre[0] + 0.2 * (rnd() - 0.5),
            centre[1] + 0.2 * (rnd() - 0.5),
            o[2] + 0.02 + 0.2 * rnd(),
        ];
        let len = 0.005 + 0.4 * rnd() * rnd();
        let aim = [
            centre[0] - from[0],
            centre[1] - from[1],
            0.1 * (rnd() - 0.5),
        ];
        let dir = if k % 4 < 2 {
            aim
        } else {
            [rnd() - 0.5, rnd() - 0.5, rnd() - 0.5]
        };
        let n = dir.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-9);
        let to = [0, 1, 2].map(|a| (from[a] + len * dir[a] / n) as f32);
        let from = from.map(|c| c as f32);
        let want = every((from, to));
        let got = hold::first_hit(&posed, 0..2, (from, to), step);
        assert_eq!(got, want, "offset {o:?}, path {k}: {from:?} -> {to:?}");
        hits += want.is_some() as u32;
        skipped += (len > 4.0 * step as f64) as u32;
    }
    assert!(
        hits > 2_000 && skipped > 5_000,
        "{hits} hits, {skipped} long paths"
    );
}
