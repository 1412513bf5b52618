//! Unit tests of the particle push-out near domain walls, and of the containment's visit of
//! only the cells near a solid.

use super::*;
use crate::geometry::solid::{Liquid, Shape};
use crate::geometry::transform::{Motion, Pose};

/// A grid of `n` cells of `h` m from the origin, every face a wall.
fn closed_grid(n: [usize; 3], h: f32) -> GridDims {
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
    st.remember(&d, &sp, 0.0, None);
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
/// no cell distances to skip on), each particle moved by just under `step` in a direction
/// that varies from particle to particle, and held at `hold` (`bounds`: as
/// [`SolidState::remember`]'s); the positions and velocities after.
fn move_and_hold(
    d: &GridDims,
    solids: &[Solid],
    p: &crate::particles::Particles,
    (label, hold): (Option<f64>, f64),
    bounds: Option<(f64, f64)>,
    step: f64,
) -> Held {
    let mut st = SolidState::new(Obstacles::new(solids.to_vec(), "t".into()), d);
    let mut sp = SortedParticles::default();
    sp.load(p, d.cells());
    sp.sort(d);
    if let Some(t) = label {
        let mut labels = vec![CellLabel::Empty; d.cells()];
        st.label_solid_cells(d, t, &mut labels);
    }
    st.remember(d, &sp, hold, bounds);
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
            (Some(0.0), 0.0),
            bounds,
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
/// never labels the cells, so it has no distances to skip on. Fails if the shift were not taken
/// off (a zero drift: particles the moving box reaches are skipped) or taken off too little
/// (the turn's part left out: the spinning box's particles).
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
    ] {
        let run = |label: bool, bounds| {
            let times = (label.then_some(t0), t1);
            move_and_hold(&d, &solids, &p, times, bounds, step)
        };
        let all = run(false, None);
        let changed = (0..all.0[0].len())
            .filter(|&s| (0..3).any(|a| all.1[a][s] != [0.1, -0.2, 0.3][a]))
            .count();
        assert!(changed > 500, "only {changed} particles were held");
        for (what, got) in [
            ("each particle's cell", run(true, None)),
            ("the near cells", run(true, Some((0.0, step)))),
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

/// Static and moving obstacles together (`split.rs`): the distances at the cell centres and
/// grid nodes and the kernel's open share must be those of evaluating every solid at every
/// substep, bit for bit, at times where the moving solids are far from the static ones, touch
/// them and pass through them. The solids: a static icosphere mesh and a static box, a moving
/// icosphere mesh and a moving sphere crossing the domain. Fails if the split's bound
/// ([`split::MOVING_FAR_CELLS`]) let a cell near a moving solid take the static share (0 cells
/// instead of 3.5 differ here), or if the cached static distances were stale; and the wall
/// velocities those of the same solids without the split (the nearest solid's velocity at
/// every face the solids cover), faces deep inside the static mesh included. Far from the
/// moving solids the grids hold a bound (`far.rs`): the exact value below its distance, a
/// value between it and the exact one beyond, the same shares, and the containment the bytes of
/// exact grids (with and without the split); fails if the bound reached nearer than the
/// gates (the shares differ with `EXACT_CELLS` 0.5) or were not a lower bound.
#[test]
fn static_and_moving_solids_give_the_bits_of_evaluating_every_solid() {
    use super::split::MOVING_FAR_CELLS;
    use crate::geometry::mesh_io::test_meshes::icosphere;
    use crate::geometry::solid::MeshShape;
    use crate::geometry::transform::Keyframe;
    use crate::sim::rest_share::{ShareCells, kernel_open_share};
    use std::sync::Arc;
    let d = closed_grid([24, 14, 16], 0.04);
    let h = d.h as f64;
    let keys = |from: [f64; 3], to: [f64; 3]| {
        let key = |time: f64, translate| Keyframe {
            time,
            translate,
            rotate_deg: [0.0, 0.0, 40.0 * time],
        };
        Motion::keyframed(vec![key(0.0, from), key(1.0, to)]).unwrap()
    };
    let at_rest = |translate: [f64; 3]| {
        Motion::Static(Pose {
            translate: translate.into(),
            rotation: Pose::identity().rotation,
        })
    };
    // A band of one cell: most of a mesh's inside is deeper than it (the wall velocities'
    // test without a BVH query there).
    let mesh = |r: f64| {
        let m = MeshShape::build(&icosphere([0.0; 3], 1.0, 3), [r; 3], h, 1.0).unwrap();
        Shape::Mesh(Arc::new(m))
    };
    let solid = |shape, motion| Solid::new(shape, [1.0; 3], motion, Liquid::Outside).unwrap();
    let solids = vec![
        solid(mesh(0.12), keys([0.2, 0.28, 0.3], [0.8, 0.28, 0.3])),
        solid(mesh(0.15), at_rest([0.45, 0.28, 0.3])),
        solid(
            Shape::Box {
                min: [0.6, 0.1, 0.0],
                max: [0.75, 0.45, 0.25],
            },
            at_rest([0.0; 3]),
        ),
        solid(
            Shape::Sphere {
                centre: [0.0; 3],
                radius: 0.07,
            },
            keys([0.8, 0.3, 0.4], [0.15, 0.25, 0.2]),
        ),
    ];
    let obstacles = Obstacles::new(solids.clone(), "t".into());
    let mut st = SolidState::new(obstacles.clone(), &d);
    assert!(st.split.is_some(), "two static and two moving solids");
    // The wall velocities' and the containment's reference: the same solids without the
    // split, and every grid value exact (no far bound, `far.rs`).
    let mut twin = SolidState::new(obstacles.clone(), &d);
    twin.split = None;
    twin.far_cells = f64::INFINITY;
    // Without the split, with the far bound: a shot whose every solid moves.
    let mut lone = SolidState::new(obstacles, &d);
    lone.split = None;
    let mut bounded = 0;
    let kinds: [Vec<FaceKind>; 3] = std::array::from_fn(|a| vec![FaceKind::Wall; d.faces(a)]);
    let (mut moving_faces, mut deep_faces, mut pushed) = (0, 0, 0);
    // Every interior cell labelled fluid: every cell near a solid has its share computed.
    let labels: Vec<CellLabel> = (0..d.cells())
        .map(|c| {
            let (i, j, k) = (c % 24, (c / 24) % 14, c / (24 * 14));
            let inner = i > 0 && j > 0 && k > 0 && i < 23 && j < 13 && k < 15;
            if inner {
                CellLabel::Fluid
            } else {
                CellLabel::Solid
            }
        })
        .collect();
    let (mut near, mut moving_near) = (0, 0);
    for t in [0.0, 0.25, 0.5, 0.55, 0.75, 1.0] {
        let mut l = labels.clone();
        st.label_solid_cells(&d, t, &mut l);
        let share = st.kernel_share(&d, t, &labels).unwrap().to_vec();
        // The particle containment: a jittered lattice (three particles a cell), each moved by
        // up to 0.6 cells, held by both; the same positions and velocities.
        let lattice = || {
            let mut sp = SortedParticles::default();
            for c in 0..3 * d.cells() {
                let r = crate::sim::emit::hash(&[c as u64, t.to_bits()]);
                let u = |k: u32| ((r >> (16 * k)) & 0xffff) as f32 / 65536.0;
                let cell = c / 3;
                let ijk = [cell % 24, (cell / 24) % 14, cell / (24 * 14)];
                let p = std::array::from_fn(|a| (ijk[a] as f32 + u(a as u32)) * d.h);
                sp.push(p, [u(3) - 0.5, 0.25, -0.5], c as u32);
            }
            sp
        };
        let shake = |sp: &mut SortedParticles| {
            for (k, x) in sp.pos.iter_mut().enumerate() {
                for (i, x) in x.iter_mut().enumerate() {
                    let r = crate::sim::emit::hash(&[i as u64, k as u64, 7]);
                    *x += (((r & 0xffff) as f32 / 65536.0) - 0.5) * 1.2 * d.h;
                }
            }
        };
        lone.label_solid_cells(&d, t, &mut labels.clone());
        let (mut held, mut sp, mut alone) = (lattice(), lattice(), lattice());
        st.remember(&d, &held, t + 0.01, None);
        twin.remember(&d, &sp, t + 0.01, None);
        lone.remember(&d, &alone, t + 0.01, None);
        shake(&mut held);
        shake(&mut sp);
        shake(&mut alone);
        st.hold(&d, t + 0.01, &mut held, true);
        twin.hold(&d, t + 0.01, &mut sp, true);
        lone.hold(&d, t + 0.01, &mut alone, true);
        let mut free = lattice();
        shake(&mut free);
        pushed += (0..free.len())
            .filter(|&i| free.pos[0][i] != sp.pos[0][i])
            .count();
        for a in 0..3 {
            let same =
                |x: &[f32], y: &[f32]| x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
            assert!(
                same(&held.pos[a], &sp.pos[a]),
                "t {t}: held positions, axis {a}"
            );
            assert!(
                same(&held.vel[a], &sp.vel[a]),
                "t {t}: held velocities, axis {a}"
            );
            assert!(same(&alone.pos[a], &sp.pos[a]), "t {t}: lone, axis {a}");
            assert!(same(&alone.vel[a], &sp.vel[a]), "t {t}: lone, axis {a}");
        }
        twin.label_solid_cells(&d, t, &mut labels.clone());
        let mut vel: [Vec<f32>; 3] = std::array::from_fn(|a| vec![7.0; d.faces(a)]);
        let mut twin_vel = vel.clone();
        st.wall_velocities(&d, t, &kinds, &mut vel);
        twin.wall_velocities(&d, t, &kinds, &mut twin_vel);
        for a in 0..3 {
            let differ = |x: &[f32], y: &[f32]| {
                x.iter()
                    .zip(y)
                    .position(|(p, q)| p.to_bits() != q.to_bits())
            };
            let f = differ(&vel[a], &twin_vel[a]);
            assert_eq!(f, None, "t {t}: wall velocity of face {f:?} on axis {a}");
            let f = differ(&st.face_vel[a], &twin.face_vel[a]);
            assert_eq!(f, None, "t {t}: solid velocity of face {f:?} on axis {a}");
            moving_faces += st.face_vel[a].iter().filter(|&&v| v != 0.0).count();
            let m = d.face_n(a);
            deep_faces += (0..d.faces(a))
                .filter(|&f| twin.face_vel[a][f] == 0.0 && vel[a][f] == 0.0)
                .filter(|&f| {
                    let ijk = [f % m[0], (f / m[0]) % m[1], f / (m[0] * m[1])];
                    let p: [f64; 3] = std::array::from_fn(|b| {
                        (ijk[b] as f64 + if b == a { 0.0 } else { 0.5 }) * h
                    });
                    solids[1].at(t).distance_unless_deep(p).is_none()
                })
                .count();
        }
        // The reference: every solid evaluated at `t`.
        let posed: Vec<PosedSolid<'_>> = solids.iter().map(|s| s.at(t)).collect();
        let at = |p: [f64; 3], banded: bool| {
            (posed.iter())
                .map(|s| {
                    if banded {
                        s.signed_distance_banded(p)
                    } else {
                        s.distance_and_normal(p).0
                    }
                })
                .fold(f64::INFINITY, f64::min)
        };
        let mut cell_phi = vec![0.0f32; d.cells()];
        for (c, o) in cell_phi.iter_mut().enumerate() {
            let ijk = [c % 24, (c / 24) % 14, c / (24 * 14)];
            *o = at(ijk.map(|x| (x as f64 + 0.5) * h), true) as f32;
        }
        // The grids, with and without the split: every solid's value, or where a moving
        // solid's box is far, its bound instead (`far.rs`; a lower bound of its distance,
        // tested there), only ever on the liquid's side; what they decide is checked below.
        let mut check = |got: f32, want: f32, what: &str| {
            if got.to_bits() != want.to_bits() {
                assert!(got > 0.0 && want > 0.0, "t {t}: {what}: {got} for {want}");
                bounded += 1;
            }
        };
        let nn = d.n.map(|m| m + 1);
        for v in 0..st.node_phi.len() {
            let ijk = [v % nn[0], (v / nn[0]) % nn[1], v / (nn[0] * nn[1])];
            let want = at(ijk.map(|x| x as f64 * h), true) as f32;
            check(st.node_phi[v], want, &format!("node {ijk:?}"));
            check(lone.node_phi[v], want, &format!("lone node {ijk:?}"));
            assert_eq!(
                twin.node_phi[v].to_bits(),
                want.to_bits(),
                "t {t}: exact node {ijk:?}"
            );
        }
        for (c, &want) in cell_phi.iter().enumerate() {
            check(st.cell_phi[c], want, &format!("cell {c}"));
            check(lone.cell_phi[c], want, &format!("lone cell {c}"));
            assert_eq!(
                twin.cell_phi[c].to_bits(),
                want.to_bits(),
                "t {t}: exact cell {c}"
            );
        }
        // What the grids decide: the face fractions (and so the closed faces) are those of
        // exact grids.
        for a in 0..3 {
            let open = |s: &SolidState| s.fractions.open[a].iter().map(|x| x.to_bits()).collect();
            let exact: Vec<u32> = open(&twin);
            assert!(
                open(&st) == exact && open(&lone) == exact,
                "t {t}: fractions {a}"
            );
        }
        let mut want = vec![0.0f32; d.cells()];
        let phi = |p: [f64; 3]| at(p, false);
        let only = ShareCells::Fluid(&labels);
        kernel_open_share(&d, &cell_phi, &phi, (8, false), only, false, &mut want);
        for (c, (&got, &want)) in share.iter().zip(&want).enumerate() {
            assert_eq!(got.to_bits(), want.to_bits(), "t {t}: share of cell {c}");
        }
        let lone_share = lone.kernel_share(&d, t, &labels).unwrap();
        for (c, (&got, &want)) in lone_share.iter().zip(&want).enumerate() {
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "t {t}: lone share of cell {c}"
            );
        }
        near += want.iter().filter(|&&s| s < 1.0).count();
        // Cells with a share below 1 within reach of a moving solid: the ones the bound keeps
        // sampling every solid.
        moving_near += (0..d.cells())
            .filter(|&c| want[c] < 1.0)
            .filter(|&c| {
                let ijk = [c % 24, (c / 24) % 14, c / (24 * 14)];
                let p = ijk.map(|x| (x as f64 + 0.5) * h);
                [0, 3]
                    .iter()
                    .any(|&s| posed[s].distance_and_normal(p).0 < (MOVING_FAR_CELLS + 0.5) * h)
            })
            .count();
    }
    assert!(
        near > 200 && moving_near > 50,
        "{near} cells near a solid, {moving_near} near a moving one"
    );
    assert!(pushed > 100, "the containment moved {pushed} particles");
    assert!(
        bounded > 1000,
        "{bounded} grid values far from the moving solids"
    );
    assert!(
        moving_faces > 100 && deep_faces > 100,
        "{moving_faces} faces take a moving solid's velocity, {deep_faces} lie deep in the mesh"
    );
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
