//! Sealed pockets: liquid that touches no air, shut in by walls and obstacles.
//!
//! On a connected piece of the liquid that touches no air the pressure equation is a pure
//! Neumann problem: `A` is singular there (a constant pressure is its null space), and `A q = b`
//! has a solution only when `b` sums to zero over the piece. With static solids it does: the
//! sum of a piece's flux divergences is the flux through its boundary, the solid faces', which
//! is zero (up to rounding). A moving solid that squeezes or widens a sealed pocket gives a net
//! flux, the rate at which the pocket's volume changes, and then no pressure can make the
//! liquid there divergence-free: CG chases the impossible part, and the velocities it leaves
//! grow without bound (with the nearly closed faces of moving solids closed,
//! `solids::MOVING_MIN_OPEN`, four violent test scenes of two or three tumbling solids all
//! ended in NaN within three frames without this, none with it). As for an enclosed domain
//! (Bridson 2015, ch. 5, the compatibility condition), the mean of `b` over each such piece is
//! taken off, which leaves the nearest solvable system: the pocket's liquid compresses or
//! expands uniformly at the rate the solid forces on it, and the rest of the projection is
//! exact.
//!
//! The pieces are found by a union-find over the rows (neighbours joined across faces with
//! an open fraction above zero), serial and in row order, so the result does not depend on the
//! thread count; the buffers keep their capacity from one substep to the next.

use super::super::mac_grid::{CellLabel, GridDims};
use super::system::System;

/// Scratch of [`Pockets::make_compatible`].
#[derive(Default)]
pub struct Pockets {
    parent: Vec<u32>,
    sum: Vec<f64>,
    size: Vec<u32>,
    air: Vec<bool>,
}

impl Pockets {
    /// Takes off `b` (one entry per row of `sys`) its mean over every connected piece of the
    /// rows that touches no air (no face with an open fraction above zero to a cell labelled
    /// `Empty`), and returns how many pieces it changed.
    pub fn make_compatible(
        &mut self,
        d: &GridDims,
        sys: &System,
        labels: &[CellLabel],
        b: &mut [f64],
    ) -> usize {
        let nf = sys.nf;
        let (n0, plane) = (d.n[0], d.n[0] * d.n[1]);
        let open = |r: usize, k: usize| !sys.fractional || sys.w[r][k] > 0.0;
        let parent = &mut self.parent;
        parent.clear();
        parent.extend(0..nf as u32);
        fn find(parent: &mut [u32], mut r: usize) -> usize {
            while parent[r] as usize != r {
                let up = parent[parent[r] as usize];
                parent[r] = up;
                r = up as usize;
            }
            r
        }
        for r in 0..nf {
            for k in [1, 3, 5] {
                let m = sys.nb[r][k] as usize;
                if m < nf && open(r, k) {
                    let (a, c) = (find(parent, r), find(parent, m));
                    // The smaller row the root: the same pieces and roots in any order.
                    let (lo, hi) = (a.min(c), a.max(c));
                    parent[hi] = lo as u32;
                }
            }
        }
        self.sum.clear();
        self.sum.resize(nf, 0.0);
        self.size.clear();
        self.size.resize(nf, 0);
        self.air.clear();
        self.air.resize(nf, false);
        for (r, &br) in b[..nf].iter().enumerate() {
            let root = find(parent, r);
            let c = sys.cell_of[r] as usize;
            let cells = [c - 1, c + 1, c - n0, c + n0, c - plane, c + plane];
            if (0..6).any(|k| labels[cells[k]] == CellLabel::Empty && open(r, k)) {
                self.air[root] = true;
            }
            self.sum[root] += br;
            self.size[root] += 1;
        }
        let mut changed = 0;
        for (r, br) in b[..nf].iter_mut().enumerate() {
            let root = find(parent, r);
            if self.air[root] {
                continue;
            }
            if root == r {
                changed += 1;
            }
            *br -= self.sum[root] / self.size[root] as f64;
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::super::PressureSolver;
    use crate::sim::forces::classify_faces;
    use crate::sim::mac_grid::{CellLabel, FaceKind, GridDims, SolidFaces};
    use crate::sim::settings::PressurePreconditioner;

    /// A box full of liquid (no air) whose wall pushes in on a patch of four faces at 1 m/s (a
    /// piston, given as the moving solid's face velocity): no pressure can keep that liquid
    /// divergence-free. With the mean of the right-hand side taken off, both preconditioners'
    /// CG meets its tolerance and leaves every cell the same divergence, the inflow shared out
    /// (a uniform compression, the nearest solvable answer), with no velocity above the
    /// piston's. Without it, CG runs to its cap (here 200 iterations) at a residual far above
    /// the tolerance.
    #[test]
    fn a_squeezed_sealed_pocket_compresses_uniformly() {
        let n = [10, 8, 9];
        let d = GridDims {
            n,
            h: 0.1,
            lower: [0.0; 3],
            open: [[false; 2]; 3],
        };
        let labels: Vec<CellLabel> = (0..d.cells())
            .map(|c| {
                let ijk = [c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1])];
                let wall = (0..3).any(|a| ijk[a] == 0 || ijk[a] + 1 == n[a]);
                if wall {
                    CellLabel::Solid
                } else {
                    CellLabel::Fluid
                }
            })
            .collect();
        let mut kinds: [Vec<FaceKind>; 3] =
            std::array::from_fn(|a| vec![FaceKind::Free; d.faces(a)]);
        classify_faces(&d, &labels, &mut kinds);
        let open: [Vec<f32>; 3] = std::array::from_fn(|a| vec![1.0; d.faces(a)]);
        let mut solid_vel: [Vec<f32>; 3] = std::array::from_fn(|a| vec![0.0; d.faces(a)]);
        let mut vel = solid_vel.clone();
        let m = d.face_n(0);
        for (j, k) in [(3, 3), (3, 4), (4, 3), (4, 4)] {
            let f = 1 + m[0] * (j + m[1] * k);
            assert_eq!(kinds[0][f], FaceKind::Wall);
            vel[0][f] = 1.0;
            solid_vel[0][f] = 1.0;
        }
        let cells = (n[0] - 2) * (n[1] - 2) * (n[2] - 2);
        let want = -4.0 / cells as f64;
        for pre in [
            PressurePreconditioner::Mic0,
            PressurePreconditioner::Multigrid,
        ] {
            let mut s = PressureSolver::new(d.cells());
            s.set_preconditioning(pre, n);
            let mut v = vel.clone();
            let faces = SolidFaces {
                open: &open,
                velocity: Some(&solid_vel),
            };
            let st = s.project(
                &d,
                &labels,
                &kinds,
                &mut v,
                1e-8,
                200,
                0.01,
                false,
                Some(faces),
            );
            assert!(
                st.residual <= 1e-8,
                "{pre:?}: {} iterations, residual {:e}",
                st.iterations,
                st.residual
            );
            let mut worst = 0.0f64;
            for c in (0..d.cells()).filter(|&c| labels[c] == CellLabel::Fluid) {
                let ijk = [c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1])];
                let div: f64 = (0..3)
                    .map(|a| {
                        let m = d.face_n(a);
                        let lo = ijk[0] + m[0] * (ijk[1] + m[1] * ijk[2]);
                        let step = [1, m[0], m[0] * m[1]][a];
                        v[a][lo + step] as f64 - v[a][lo] as f64
                    })
                    .sum();
                worst = worst.max((div - want).abs());
            }
            assert!(
                worst < 1e-5,
                "{pre:?}: divergence off the uniform {want} by {worst}"
            );
            let fastest = v.iter().flatten().fold(0.0f32, |m, x| m.max(x.abs()));
            assert!(fastest <= 1.0 + 1e-5, "{pre:?}: {fastest} m/s");
        }
    }
}
