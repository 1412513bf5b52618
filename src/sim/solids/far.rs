//! Far from a moving solid, the cell-centre and node grids hold a bound, not its distance.
//!
//! A moving solid's distance was evaluated at every cell centre and grid node at every
//! substep: for a sphere of 10 cm in a 2 x 0.5 x 1.2 m tank at 2 cm cells (300,000 points), 23
//! of the substep's 82 ms on one thread. What reads those grids far from every solid only
//! compares them with a few cells: the solid labels, face fractions and friction faces take
//! their sign, the density kernel's share and the thin-wall sealing gate on at most
//! [`super::split::MOVING_FAR_CELLS`] cells plus the push-out distance (3.6 cells), and the
//! containment skips a particle on a lower bound of its distance (`hold.rs`: visiting it gives
//! the same bytes). So where a point lies at least [`EXACT_CELLS`] cells outside the world box
//! of a moving solid that keeps the liquid outside, the solid's grid value is
//! `max(gap_x, gap_yz, far)` ([`fill_near`]): at most the distance to that box and so to the
//! shape (which lies in the box), at least the cells every gate compares with, and positive (a
//! mesh's own value there is its band's clamp, also a lower bound). Every decision taken from
//! the grids is the one the exact values give, so the frames keep their bytes;
//! `static_and_moving_solids_give_the_bits_of_evaluating_every_solid` in `split/tests.rs`
//! checks the decisions against exact grids. By rows, only a row's points within `far` of the
//! box are evaluated, against a posed shape's rotation and distance (or a mesh's trilinear
//! sample) at every point before. A container (liquid inside) and the static solids are
//! evaluated everywhere, as before.
//!
//! The wall velocities ([`super::SolidState::wall_velocities`]) use the same boxes: beside
//! static solids, a face that some solid covers (a corner node or a neighbouring cell centre
//! below 0, that solid within about 1.2 cells of the face) and that lies at least
//! [`EXACT_CELLS`] cells from every moving solid's box is a static solid's, whose wall does not
//! move (the search over the solids would find the same).
//!
//! The containment (`hold.rs`) uses them too: a particle is left as it is where every solid's
//! computed distance at its new position is at least `max(move, push-out)`, and a solid's is
//! where its box is farther than that plus the solid's [`box_slack`] (0 for an exact
//! distance; for a mesh, whose value is a trilinear sample of node distances clamped at its
//! band, `sqrt(3)` grid spacings, and only while the band is at least that far). The same
//! answer as evaluating the solid, so the same bytes; what it saves is a moving mesh's grid
//! sample at every particle at every containment (a moving mesh's distance is not exact, so
//! the cell distances cannot skip on it, see `hold.rs`).
//!
//! With several moving solids, the nearest solid of a covered face (wall velocities, friction
//! faces) is searched among those whose box is within `far` ([`Posed::nearest_near`]), and the
//! density kernel's share samples count a solid whose box proves it past the push-out distance
//! plus a cell as that value ([`Posed::min_distance_capped`]): the same answers, fewer
//! evaluations.

use super::super::mac_grid::GridDims;
use super::Posed;
use crate::geometry::solid::{Liquid, Shape, Solid};
use crate::geometry::transform::Pose;
use rayon::prelude::*;
use std::cmp::Ordering;

/// How far outside a moving solid's world box (cells) its grid values stay exact: above every
/// distance the grids are compared with (see the module docs).
pub const EXACT_CELLS: f64 = 4.0;

/// A world-space box, `(lower, upper)` corners.
pub type WorldBox = ([f64; 3], [f64; 3]);

/// Each solid's world box and its [`box_slack`] (`None` where they may not decide).
pub type Boxes<'a> = (&'a [Option<WorldBox>], &'a [Option<(f64, f64)>]);

/// The world box of `solid` at `pose` where the far bound applies (a moving solid keeping the
/// liquid outside), else `None`.
pub fn far_box(solid: &Solid, pose: &Pose) -> Option<WorldBox> {
    (solid.is_animated() && solid.liquid() == Liquid::Outside).then(|| solid.bounds_at(pose))
}

/// How a solid's computed distance ([`crate::geometry::solid::PosedSolid::signed_distance`])
/// compares with the distance `g` from a point outside the solid's world box
/// ([`Solid::bounds_at`]) to that box: at least `min(g - slack, cap)` for the returned
/// `(slack, cap)`. An exact distance ([`Solid::distance_is_exact`]) is at least `g` (the shape
/// lies in its box): `(0, inf)`. A mesh's is the trilinear interpolant of node values that are
/// the exact distance clamped at the band, the nodes of a sample's grid cell within `sqrt(3)`
/// spacings of it (outside the grid, the value at the nearest grid point plus the distance to
/// it): `(sqrt(3) spacing, band)`. `None` for a sphere or cylinder scaled per axis (a bound that
/// can fall below the box's distance).
pub fn box_slack(solid: &Solid) -> Option<(f64, f64)> {
    match solid.shape() {
        Shape::Mesh(m) => Some((3f64.sqrt() * m.sdf.grid.spacing, m.sdf.band)),
        _ => solid.distance_is_exact().then_some((0.0, f64::INFINITY)),
    }
}

/// Whether solid `i`'s box and slack in `boxes` prove its computed distance at `p` at least
/// `v`: its band at least `v` and the box at least `v + slack + tol` from `p` (`tol`, m, for
/// rounding).
#[inline]
pub(super) fn box_proves(
    (boxes, slacks): Boxes<'_>,
    i: usize,
    p: [f64; 3],
    v: f64,
    tol: f64,
) -> bool {
    match (&boxes[i], slacks[i]) {
        (Some(b), Some((slack, cap))) => cap >= v && gap2(b, p) >= (v + slack + tol).powi(2),
        _ => false,
    }
}

/// The squared distance from `p` to box `b` (0 inside it).
#[inline]
fn gap2((lo, hi): &WorldBox, p: [f64; 3]) -> f64 {
    let gap = [0, 1, 2].map(|a| (lo[a] - p[a]).max(p[a] - hi[a]).max(0.0));
    gap[0] * gap[0] + gap[1] * gap[1] + gap[2] * gap[2]
}

/// Whether the boxes prove every solid of `set` at least `far / 2` from `p` ([`box_proves`]):
/// farther than the solid behind a covered face, which is within about 1.2 cells of it (see
/// [`Posed::nearest_near`]; `far` is 4 cells).
pub(super) fn beyond(boxes: Boxes<'_>, set: &[usize], p: [f64; 3], far: f64) -> bool {
    (set.iter()).all(|&i| box_proves(boxes, i, p, 0.5 * far, 0.0))
}

/// The density kernel's open share (`rest_share::sample_share`) compares the solids' distance
/// with the push-out distance `eps`, and a block of samples' centre with it plus at most 0.87
/// cell (two samples per axis); a solid whose computed distance is at least `eps` plus a cell
/// gives the same verdicts as that value, so [`Posed::min_distance_capped`] caps it there.
pub const SHARE_CAP_CELLS: f64 = 1.0;

impl Posed<'_> {
    /// [`Posed::min_distance`] over `set`, except that a solid whose box proves its computed
    /// distance at least `cap` (the box at least `cap + slack` from `p`, its band at least
    /// `cap`: [`box_slack`]) gives `cap` without being evaluated: every comparison with a
    /// value below `cap` comes out the same (the kernel share's, [`SHARE_CAP_CELLS`]).
    #[inline]
    pub(super) fn min_distance_capped(
        &self,
        set: impl IntoIterator<Item = usize>,
        p: [f64; 3],
        boxes: Boxes<'_>,
        cap: f64,
    ) -> f64 {
        (set.into_iter())
            .map(|i| match box_proves(boxes, i, p, cap, 0.0) {
                true => cap,
                false => self.get(i).signed_distance(p),
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// [`super::nearest`]'s solid at a face some solid covers (a corner node or a neighbouring
    /// cell centre of the grids below 0), without evaluating the solids whose box and slack
    /// prove them at least `far / 2` (2 cells) from `p` ([`box_proves`]): the solid behind the
    /// negative grid value is at most about 1.2 cells from `p` (its computed distance changes
    /// by at most `sqrt(3)` per unit, and the node or centre is within 0.71 cell), so the
    /// nearest, and the first of the nearest, is among the evaluated ones. All skipped (not a
    /// covered face): every solid is evaluated. One solid: it, unevaluated.
    pub(super) fn nearest_near(&self, p: [f64; 3], boxes: Boxes<'_>, far: f64) -> usize {
        if self.solids.len() == 1 {
            return 0; // the nearest without evaluating it
        }
        let mut best = (f64::INFINITY, 0);
        let mut any = false;
        for i in 0..self.solids.len() {
            if box_proves(boxes, i, p, 0.5 * far, 0.0) {
                continue;
            }
            any = true;
            let d = self.get(i).distance_and_normal(p).0;
            if d < best.0 {
                best = (d, i);
            }
        }
        if any {
            best.1
        } else {
            super::nearest(self, p).2
        }
    }

    /// Whether every solid of `set` has its computed distance
    /// ([`crate::geometry::solid::PosedSolid::signed_distance`]) at `p` at least `far` (not
    /// below it: a NaN is skipped, as [`Posed::min_distance`]'s minimum skips it), so the
    /// same answer as `min_distance(set, p) >= far`. A solid with a box in `boxes` and a
    /// `(slack, cap)` in `slacks` ([`box_slack`]) is not evaluated where the box alone
    /// proves it: `cap >= far` and the box at least `far + slack + tol` from `p` (`tol`, m,
    /// for rounding).
    #[inline]
    pub(super) fn clear_of(
        &self,
        set: impl IntoIterator<Item = usize>,
        p: [f64; 3],
        boxes: Boxes<'_>,
        far: f64,
        tol: f64,
    ) -> bool {
        set.into_iter().all(|i| {
            // Not below `far`: a NaN passes, as the minimum skips it.
            box_proves(boxes, i, p, far, tol)
                || self.get(i).signed_distance(p).partial_cmp(&far) != Some(Ordering::Less)
        })
    }
}

/// Fills `out`, a grid of points (rows of `n[0]`, `n` per axis, spaced `h` from `lo` plus `off`
/// cells, as `split::each_point`), with the minimum of `base` (the static solids' kept values;
/// infinity without) and each solid of `set`'s banded distance
/// ([`crate::geometry::solid::PosedSolid::signed_distance_banded`]), except that where a
/// solid's box in `boxes` is at least `far` (m) from the point it gives the bound
/// `max(gap_x, gap_yz, far)` instead: the point's distance from the box along x and in the
/// (y, z) plane, each at most the distance to the box and so to the shape, and `far`, which the
/// box's distance is at least (see the module docs). By rows: a row's `(y, z)` gap is found
/// once, and only the points of the row within `far` of the box are evaluated.
pub(super) fn fill_near(
    out: &mut [f32],
    n: [usize; 3],
    (lo, h, off): ([f64; 3], f64, f64),
    posed: &Posed<'_>,
    set: impl IntoIterator<Item = usize> + Clone + Sync,
    (boxes, far): (&[Option<WorldBox>], f64),
    base: Option<&[f32]>,
) {
    let n0 = n[0];
    out.par_chunks_mut(n0).enumerate().for_each(|(row, out)| {
        let (j, k) = (row % n[1], row / n[1]);
        let (y, z) = (lo[1] + (j as f64 + off) * h, lo[2] + (k as f64 + off) * h);
        let x = |i: usize| lo[0] + (i as f64 + off) * h;
        match base {
            Some(b) => out.copy_from_slice(&b[row * n0..(row + 1) * n0]),
            None => out.fill(f32::INFINITY),
        }
        for s in set.clone() {
            let solid = posed.get(s);
            let Some((bl, bh)) = &boxes[s] else {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = o.min(solid.signed_distance_banded([x(i), y, z]) as f32);
                }
                continue;
            };
            let gy = (bl[1] - y).max(y - bh[1]).max(0.0);
            let gz = (bl[2] - z).max(z - bh[2]).max(0.0);
            let gyz2 = gy * gy + gz * gz;
            let gyz = gyz2.sqrt();
            let far_from = |x: f64| {
                let gx = (bl[0] - x).max(x - bh[0]).max(0.0);
                (gx * gx + gyz2 >= far * far).then(|| gx.max(gyz).max(far))
            };
            // The points within `far` of the box lie in `near` (by their x; widened by a point
            // each way for rounding, and each tested).
            let near = if gyz2 < far * far {
                let r = (far * far - gyz2).sqrt();
                let at = |xw: f64| ((xw - lo[0]) / h - off).clamp(-1.0, n0 as f64 + 1.0);
                let i0 = (at(bl[0] - r).floor() - 1.0).max(0.0) as usize;
                let i1 = ((at(bh[0] + r).ceil() + 2.0).max(0.0) as usize).min(n0);
                i0.min(i1)..i1
            } else {
                0..0
            };
            for (i, o) in out.iter_mut().enumerate() {
                let v = if near.contains(&i) {
                    far_from(x(i)).unwrap_or_else(|| solid.signed_distance_banded([x(i), y, z]))
                } else {
                    let gx = (bl[0] - x(i)).max(x(i) - bh[0]).max(0.0);
                    gx.max(gyz).max(far)
                };
                *o = o.min(v as f32);
            }
        }
    });
}

/// The distance at every cell centre and grid node over every solid, as [`fill_near`] gives it
/// (a bound far from a moving one: `near`, its boxes and distance).
pub(super) fn all_distances(
    d: &GridDims,
    posed: &Posed<'_>,
    (boxes, far): (&[Option<WorldBox>], f64),
    cell_phi: &mut [f32],
    node_phi: &mut [f32],
) {
    let (h, lo) = (d.h as f64, d.lower.map(|x| x as f64));
    let nn = d.n.map(|m| m + 1);
    let (all, near) = (0..posed.solids.len(), (boxes, far));
    fill_near(cell_phi, d.n, (lo, h, 0.5), posed, all.clone(), near, None);
    fill_near(node_phi, nn, (lo, h, 0.0), posed, all, near, None);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::mesh_io::test_meshes::cuboid;
    use crate::geometry::solid::{MeshShape, Shape};
    use crate::geometry::transform::{Keyframe, Motion};
    use std::sync::Arc;

    /// The far bound is a lower bound of a moving, turned and scaled solid's distance: the
    /// distance to its world box never exceeds the distance to the shape (a box scaled per axis,
    /// a uniformly scaled sphere and cylinder, whose distances are exact, and a cuboid mesh,
    /// measured against the same cuboid as an analytic box), and inside the box (or nearer than
    /// `far`) the solid's own value is kept. Fails if the box did not turn with the pose (the
    /// body frame's box moved only), or did not take the scale.
    #[test]
    fn the_far_bound_never_exceeds_the_distance() {
        let key = |time, translate, rotate_deg| Keyframe {
            time,
            translate,
            rotate_deg,
        };
        let motion = || {
            let (a, b) = ([30.0, 50.0, 70.0], [-40.0, 10.0, 120.0]);
            Motion::keyframed(vec![
                key(0.0, [0.3, 0.2, 0.1], a),
                key(1.0, [0.5, 0.1, 0.3], b),
            ])
            .unwrap()
        };
        let (lo, hi) = ([-0.1, -0.05, -0.02], [0.1, 0.05, 0.02]);
        let cube = MeshShape::build(&cuboid(lo, hi), [1.0; 3], 0.01, 3.0).unwrap();
        let (sphere, cylinder) = (
            Shape::Sphere {
                centre: [0.02, 0.0, 0.01],
                radius: 0.05,
            },
            Shape::Cylinder {
                a: [0.0, 0.0, -0.05],
                b: [0.0, 0.03, 0.08],
                radius: 0.03,
            },
        );
        let boxed = Shape::Box { min: lo, max: hi };
        let solid = |shape, scale| Solid::new(shape, scale, motion(), Liquid::Outside).unwrap();
        let cases = [
            (solid(boxed.clone(), [1.5, 0.7, 1.2]), None),
            (solid(sphere, [1.5; 3]), None),
            (solid(cylinder, [2.0; 3]), None),
            (
                solid(Shape::Mesh(Arc::new(cube)), [1.0; 3]),
                Some(solid(boxed, [1.0; 3])),
            ),
        ];
        let far = 0.03;
        for (k, (solid, exact)) in cases.iter().enumerate() {
            let (mut bounded, mut kept) = (0, 0);
            for t in [0.0, 0.3, 0.8] {
                let pose = solid.pose(t);
                let poses = [(pose, solid.motion().velocity(t))];
                let posed = Posed {
                    solids: std::slice::from_ref(solid),
                    poses: &poses,
                };
                let boxes = [far_box(solid, &pose)];
                assert!(boxes[0].is_some(), "case {k}: a moving solid has a box");
                let reference = exact.as_ref().unwrap_or(solid).at(t);
                let (m, h) = ([40usize; 3], 0.02);
                let lo = [pose.translate.x, pose.translate.y, pose.translate.z].map(|c| c - 0.4);
                let mut out = vec![0.0f32; m[0] * m[1] * m[2]];
                fill_near(&mut out, m, (lo, h, 0.5), &posed, [0], (&boxes, far), None);
                for (c, &got) in out.iter().enumerate() {
                    let ijk = [c % m[0], (c / m[0]) % m[1], c / (m[0] * m[1])];
                    let p: [f64; 3] = std::array::from_fn(|a| lo[a] + (ijk[a] as f64 + 0.5) * h);
                    let own = posed.get(0).signed_distance_banded(p) as f32;
                    if got.to_bits() == own.to_bits() {
                        kept += 1;
                        continue;
                    }
                    let want = reference.distance_and_normal(p).0 as f32;
                    assert!(
                        got >= far as f32,
                        "case {k}, t {t}, {p:?}: {got} nearer than {far}"
                    );
                    assert!(got <= want, "case {k}, t {t}, {p:?}: {got} > {want}");
                    bounded += 1;
                }
            }
            assert!(
                bounded > 100_000 && kept > 3000,
                "case {k}: {bounded} bounds, {kept} kept"
            );
        }
    }
}
