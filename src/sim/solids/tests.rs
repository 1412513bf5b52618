//! Unit tests of the particle push-out near domain walls.

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
    st.remember(&sp);
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
