//! Unit tests of the particle push-out near domain walls, and of the containment's visit of
//! only the cells near a solid.

use super::*;
use crate::geometry::solid::{Liquid, Shape};
use crate::geometry::transform::{Motion, Pose};

/// A particle that ended inside a cylinder lying on the floor, in the wedge between the two
/// (the cylinder's gradient there points mostly into the floor): the push-out must leave it
/// outside the cylinder and inside the domain. Reference: the cylinder's exact distance.
/// Without the slide along the wall, the clamp to the floor puts it back about 0.5 mm inside.
#[test]
fn push_out_in_a_wedge_slides_along_the_wall() {
    let d = GridDims {
        n: [20, 8, 10],
        h: 0.05,
        lower: [0.0; 3],
        open: [[false; 2]; 3],
    };
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
    st.remember(&d, &sp, None);
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

/// The containment restricted to the cells near a solid (static obstacle, a bound on the move,
/// see `hold.rs`) gives the same bytes as the pass over every particle. A lattice of
/// particles filling a box around a sphere, each moved by up to `step` (0.6 cells, in a
/// direction that varies per particle): many end inside the sphere or within the push-out
/// distance and are changed, most are far from it. Fails if the bound skipped a cell whose
/// particles the full pass changes, or if the cell ranges of the sort were misread.
#[test]
fn containment_near_cells_only_matches_the_full_pass() {
    let d = GridDims {
        n: [16, 16, 16],
        h: 0.05,
        lower: [0.0; 3],
        open: [[false; 2]; 3],
    };
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
    let run = |bounds: Option<(f64, f64)>| {
        let mut st = SolidState::new(Obstacles::new(vec![ball.clone()], "t".into()), &d);
        let mut sp = SortedParticles::default();
        sp.load(&p, d.cells());
        sp.sort(&d);
        let mut labels = vec![CellLabel::Empty; d.cells()];
        st.label_solid_cells(&d, 0.0, &mut labels);
        st.remember(&d, &sp, bounds);
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
        st.hold(&d, 0.0, &mut sp, true);
        (sp.pos.clone(), sp.vel.clone())
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
