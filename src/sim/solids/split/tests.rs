//! The static and moving solids' split (`split.rs`) and the far bound (`far.rs`) against
//! evaluating every solid exactly.

use super::super::tests::closed_grid;
use super::super::*;
use crate::geometry::solid::{Liquid, Shape};
use crate::geometry::transform::{Motion, Pose};

/// Static and moving obstacles together (`split.rs`): the distances at the cell centres and
/// grid nodes and the kernel's open share must be those of evaluating every solid at every
/// substep, bit for bit, at times where the moving solids are far from the static ones, touch
/// them and pass through them. The solids: a static icosphere mesh and a static box, a moving
/// icosphere mesh and a moving sphere crossing the domain. Fails if the split's bound
/// ([`MOVING_FAR_CELLS`]) let a cell near a moving solid take the static share (0 cells
/// instead of 3.5 differ here), or if the cached static distances were stale; and the wall
/// velocities those of the same solids without the split (the nearest solid's velocity at
/// every face the solids cover), faces deep inside the static mesh included. Far from the
/// moving solids the grids hold a bound (`far.rs`), positive where it differs, and what they
/// decide is that of exact grids, with and without the split: the face fractions, the shares,
/// the containment's bytes (the reference evaluates every particle) and the wall velocities
/// (the reference searches every solid). Fails with the bound at 0.5 cell (the fractions), the
/// wall velocities' far skip at 0 cells, the several-solid search's pruning at 0 cells, or the
/// kernel share's cap below the push-out distance (each tried).
#[test]
fn static_and_moving_solids_give_the_bits_of_evaluating_every_solid() {
    use super::MOVING_FAR_CELLS;
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
    // split, every grid value exact and every particle evaluated (no far bound, `far.rs`).
    let mut twin = SolidState::new(obstacles.clone(), &d);
    twin.split = None;
    twin.far_cells = f64::INFINITY;
    twin.slacks.fill(None);
    // Without the split, with the far bound: a shot whose every solid moves.
    let mut lone = SolidState::new(obstacles, &d);
    lone.split = None;
    let mut bounded = 0;
    let kinds: [Vec<FaceKind>; 3] = std::array::from_fn(|a| vec![FaceKind::Wall; d.faces(a)]);
    let (mut moving_faces, mut deep_faces, mut pushed, mut inner_faces) = (0, 0, 0, 0);
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
        st.remember(&d, &held, (t, t + 0.01), None);
        twin.remember(&d, &sp, (t, t + 0.01), None);
        lone.remember(&d, &alone, (t, t + 0.01), None);
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
        let (mut twin_vel, mut lone_vel) = (vel.clone(), vel.clone());
        let zero: [Vec<f32>; 3] = std::array::from_fn(|a| vec![0.0; d.faces(a)]);
        // Every face free first (the faces inside the solids beside the liquid get the
        // moving solids' normal velocity), then every face a wall face.
        let free: [Vec<FaceKind>; 3] = std::array::from_fn(|a| vec![FaceKind::Free; d.faces(a)]);
        for (s, v) in [
            (&mut st, &mut vel),
            (&mut twin, &mut twin_vel),
            (&mut lone, &mut lone_vel),
        ] {
            s.wall_velocities(&d, (t, t), &labels, &free, &zero, v);
        }
        for a in 0..3 {
            let differ = |x: &[f32], y: &[f32]| (x.iter().zip(y)).position(|(p, q)| p != q);
            let f = differ(&st.inner_vel[a], &twin.inner_vel[a]);
            assert_eq!(f, None, "t {t}: inner velocity of face {f:?} on axis {a}");
            let f = differ(&lone.inner_vel[a], &twin.inner_vel[a]);
            assert_eq!(
                f, None,
                "t {t}: lone: inner velocity of face {f:?} on axis {a}"
            );
            inner_faces += st.inner_vel[a].iter().filter(|&&v| v != 0.0).count();
        }
        st.wall_velocities(&d, (t, t), &labels, &kinds, &zero, &mut vel);
        twin.wall_velocities(&d, (t, t), &labels, &kinds, &zero, &mut twin_vel);
        lone.wall_velocities(&d, (t, t), &labels, &kinds, &zero, &mut lone_vel);
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
            let f = differ(&lone_vel[a], &twin_vel[a]);
            assert_eq!(
                f, None,
                "t {t}: lone: wall velocity of face {f:?} on axis {a}"
            );
            let f = differ(&lone.face_vel[a], &twin.face_vel[a]);
            assert_eq!(
                f, None,
                "t {t}: lone: solid velocity of face {f:?} on axis {a}"
            );
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
        let mut check = |[got, alone, exact]: [f32; 3], want: f32, what: &str| {
            for got in [got, alone] {
                if got.to_bits() != want.to_bits() {
                    assert!(got > 0.0 && want > 0.0, "t {t}: {what}: {got} for {want}");
                    bounded += 1;
                }
            }
            assert_eq!(exact.to_bits(), want.to_bits(), "t {t}: exact {what}");
        };
        let nn = d.n.map(|m| m + 1);
        for v in 0..st.node_phi.len() {
            let ijk = [v % nn[0], (v / nn[0]) % nn[1], v / (nn[0] * nn[1])];
            let want = at(ijk.map(|x| x as f64 * h), true) as f32;
            let got = [&st, &lone, &twin].map(|s| s.node_phi[v]);
            check(got, want, &format!("node {ijk:?}"));
        }
        for (c, &want) in cell_phi.iter().enumerate() {
            let got = [&st, &lone, &twin].map(|s| s.cell_phi[c]);
            check(got, want, &format!("cell {c}"));
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
    assert!(
        inner_faces > 100,
        "{inner_faces} faces inside a moving solid"
    );
}
