//! Static and moving obstacles in one shot (a glass and a stirrer, a tank's mesh rocks and a
//! paddle): the static solids' part of the per-substep solid state is computed once, only the
//! moving solids' part at every substep.
//!
//! Without the split, one moving obstacle made every obstacle count as moving: the distance at
//! every cell centre and grid node, and the density kernel's open share of every cell near any
//! solid (`S^3 = 512` exact distance samples a cell, [`super::super::rest_share`]), were
//! re-evaluated for every solid at every substep. With a triangle-mesh glass and a small moving
//! sphere in it (the glass scene, 5 mm cells) that made a substep 9.6 times as long as with the
//! sphere still (84 against 8.8 ms; the density correction's share 69 against 3.8 ms).
//!
//! - **Distances.** The grids' distance is the minimum over the solids, so it is the minimum of
//!   the static solids' (evaluated at the first substep and kept) and the moving ones' (every
//!   substep): the same values bit for bit (a minimum is exact in any grouping; far from a
//!   moving solid its part is a bound, [`super::far`], with or without the split).
//! - **Kernel share.** A cell's share samples `open(x) = [min over solids phi(x) >= eps]` over
//!   its kernel's support (within `sqrt(3) h` of its centre). Where the moving solids' distance
//!   at the centre is at least [`MOVING_FAR_CELLS`] cells plus `eps`, every sample is at least
//!   `eps` from them, so `open(x)` is the static solids' alone: the cell's share is the static
//!   share, computed the first time the cell needs it and kept (the same bits as sampling every
//!   solid). The bound holds for every shape's distance function: the analytic shapes' are
//!   1-Lipschitz (scaled spheres and cylinders too: the unscaled distance times the smallest
//!   scale), a mesh's is the trilinear interpolant of a 1-Lipschitz grid function (its gradient
//!   at most `sqrt(3)`, so at most `3 h` over `sqrt(3) h`); the other cells near a moving solid
//!   sample every solid, as before.

use super::super::mac_grid::GridDims;
use super::super::rest_share::{ShareCells, kernel_gate, sample_share};
use super::Posed;
use super::far::{Boxes, WorldBox, fill_near};
use crate::geometry::solid::Liquid;
use rayon::prelude::*;

/// How far (cells, beyond the push-out distance) the moving solids must be from a cell's centre
/// for its kernel share to be the static solids' alone (see the module's notes: at most `3 h`
/// of change over the kernel's support for any shape, plus a half cell to spare).
pub const MOVING_FAR_CELLS: f64 = 3.5;

/// The static solids' cached part of the solid state, and the moving solids' cell-centre
/// distance of the last update (allocated only when a shot has both kinds).
pub struct Split {
    /// Indices of the static solids and of the moving ones.
    pub statics: Vec<usize>,
    pub moving: Vec<usize>,
    /// The static solids' distance at every cell centre and grid node (see `ready`).
    static_cell: Vec<f32>,
    static_node: Vec<f32>,
    ready: bool,
    /// The moving solids' distance at every cell centre, at the last [`Split::update`].
    moving_cell: Vec<f32>,
    /// The kernel's open share of the static solids alone per cell (NaN: not computed yet).
    static_share: Vec<f32>,
}

/// Fills `out` (one row of `n[0]` values per row `(j, k)`, `n` points per axis spaced `h` from
/// `lo` plus `off` cells) with `f(point, index)`.
pub(super) fn each_point(
    out: &mut [f32],
    n: [usize; 3],
    (lo, h, off): ([f64; 3], f64, f64),
    f: impl Fn([f64; 3], usize) -> f32 + Sync,
) {
    out.par_chunks_mut(n[0]).enumerate().for_each(|(row, out)| {
        let (j, k) = (row % n[1], row / n[1]);
        for (i, o) in out.iter_mut().enumerate() {
            let p = [
                lo[0] + (i as f64 + off) * h,
                lo[1] + (j as f64 + off) * h,
                lo[2] + (k as f64 + off) * h,
            ];
            *o = f(p, i + n[0] * row);
        }
    });
}

impl Split {
    /// The static solids' distance at every cell centre (once the first update computed it:
    /// valid at every time) and the moving solids' indices.
    pub fn static_cells(&self) -> Option<(&[f32], &[usize])> {
        self.ready
            .then_some((&self.static_cell[..], &self.moving[..]))
    }

    /// The moving solid nearest world point `p` if no static solid is nearer, as
    /// [`super::nearest`] decides (the first solid of the least distance in index order), or
    /// `None` where a static solid is (static solids do not move: their velocity is 0). The
    /// static solids are only evaluated as far as the decision needs: a point deeper inside a
    /// static mesh than its band is at most 0 from it (a BVH query otherwise, for every face the
    /// mesh covers at every substep), so it is nearer than any moving solid that `p` lies
    /// outside of.
    pub fn moving_nearest(&self, posed: &Posed<'_>, p: [f64; 3]) -> Option<usize> {
        let (mut dm, mut im) = (f64::INFINITY, usize::MAX);
        for &i in &self.moving {
            let d = posed.get(i).distance_and_normal(p).0;
            if d < dm {
                (dm, im) = (d, i);
            }
        }
        let beats = |s: usize, d: f64| d < dm || (d == dm && s < im);
        let static_nearer = self.statics.iter().any(|&s| {
            let solid = posed.get(s);
            match solid.distance_unless_deep(p) {
                Some(d) => beats(s, d),
                None => match posed.solids[s].liquid() {
                    Liquid::Outside if dm > 0.0 => true,
                    Liquid::Inside if dm < 0.0 => false,
                    _ => beats(s, solid.distance_and_normal(p).0),
                },
            }
        });
        (!static_nearer).then_some(im)
    }

    /// The split of `animated` (per solid), if it has both static and moving solids.
    pub fn new(animated: &[bool], d: &GridDims) -> Option<Self> {
        let (moving, statics): (Vec<usize>, Vec<usize>) =
            (0..animated.len()).partition(|&i| animated[i]);
        if moving.is_empty() || statics.is_empty() {
            return None;
        }
        let cells = d.cells();
        let nodes: usize = d.n.iter().map(|&m| m + 1).product();
        Some(Self {
            statics,
            moving,
            static_cell: vec![f32::INFINITY; cells],
            static_node: vec![f32::INFINITY; nodes],
            ready: false,
            moving_cell: vec![f32::INFINITY; cells],
            static_share: vec![f32::NAN; cells],
        })
    }

    /// The distance at every cell centre (`cell_phi`) and grid node (`node_phi`) over all the
    /// solids posed in `posed`: the static solids' kept from the first call, the moving ones'
    /// evaluated now (and their cell-centre distances kept for [`Self::share`]).
    pub fn update(
        &mut self,
        d: &GridDims,
        posed: &Posed<'_>,
        (boxes, far): (&[Option<WorldBox>], f64),
        cell_phi: &mut [f32],
        node_phi: &mut [f32],
    ) {
        let (h, lo) = (d.h as f64, d.lower.map(|x| x as f64));
        let nn = d.n.map(|m| m + 1);
        if !self.ready {
            let statics = &self.statics[..];
            each_point(&mut self.static_cell, d.n, (lo, h, 0.5), |p, _| {
                posed.min_banded(statics.iter().copied(), p) as f32
            });
            each_point(&mut self.static_node, nn, (lo, h, 0.0), |p, _| {
                posed.min_banded(statics.iter().copied(), p) as f32
            });
            self.ready = true;
        }
        let (moving, near) = (self.moving.iter().copied(), (boxes, far));
        let mc = &mut self.moving_cell;
        fill_near(mc, d.n, (lo, h, 0.5), posed, moving.clone(), near, None);
        let (sc, mc) = (&self.static_cell, &self.moving_cell);
        cell_phi
            .par_iter_mut()
            .enumerate()
            .with_min_len(4096)
            .for_each(|(c, o)| *o = sc[c].min(mc[c]));
        let sn = Some(&self.static_node[..]);
        fill_near(node_phi, nn, (lo, h, 0.0), posed, moving, near, sn);
    }

    /// The kernel's open share (`rest_share::kernel_open_share` with `samples` per axis, not
    /// lazy) of the cells `only` names, from the cell-centre distances `cell_phi` of the last
    /// [`Self::update`]: the static share (cached) where the moving solids are far, every
    /// solid sampled elsewhere.
    pub fn share(
        &mut self,
        d: &GridDims,
        posed: &Posed<'_>,
        (boxes, cap): (Boxes<'_>, f64),
        samples: usize,
        (cell_phi, only): (&[f32], ShareCells<'_>),
        share: &mut [f32],
    ) {
        let n = d.n;
        let h = d.h as f64;
        let far = MOVING_FAR_CELLS * h + crate::geometry::solid::PUSHOUT_CELLS as f64 * h;
        let statics = &self.statics[..];
        let phi_static = |p: [f64; 3]| posed.min_distance(statics.iter().copied(), p);
        let all = 0..posed.solids.len();
        let phi_all = |p: [f64; 3]| posed.min_distance_capped(all.clone(), p, boxes, cap);
        let exact_static = posed.exact(statics.iter().copied());
        let exact_all = exact_static && posed.exact(self.moving.iter().copied());
        let moving_cell = &self.moving_cell;
        share
            .par_chunks_mut(n[0])
            .zip(self.static_share.par_chunks_mut(n[0]))
            .enumerate()
            .for_each(|(row, (out, cached))| {
                let (j, k) = (row % n[1], row / n[1]);
                for (i, (o, st)) in out.iter_mut().zip(cached.iter_mut()).enumerate() {
                    let c = i + n[0] * row;
                    if !kernel_gate(d, only, c, cell_phi[c]) {
                        *o = 1.0;
                        continue;
                    }
                    *o = if moving_cell[c] as f64 >= far {
                        if st.is_nan() {
                            *st = sample_share(d, &phi_static, samples, exact_static, [i, j, k]);
                        }
                        *st
                    } else {
                        sample_share(d, &phi_all, samples, exact_all, [i, j, k])
                    };
                }
            });
    }
}

#[cfg(test)]
mod tests;
