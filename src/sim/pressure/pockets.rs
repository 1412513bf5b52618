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
//! Only a piece that a moving solid touches can have a net inflow, so only the pieces holding
//! a row with a face the moving solids cover (a row weight below 1 and a solid velocity on the
//! face) are corrected. They are first looked for by walks from those rows across faces with
//! an open fraction above zero, each given up at the first row beside air (a cell labelled
//! `Empty` across an open face): where the liquid has air near its moving obstacles that is a
//! few rows. Walks that would visit more than an eighth of the rows (the whole liquid sealed in
//! a tank filled to the brim) give way to a union-find over every row. On one core of this
//! machine (a temporary timing test, three calls each): 3.7-5.3 ms for 735,000 rows of liquid
//! under air with a moving wall along one side, 30-40 ms for 950,000 rows sealed to the brim;
//! the union-find alone took 20-27 ms for the first, the walks alone 80-100 ms for the second.
//! Both correct the same pieces and sum each one's rows in row order: the same bits either
//! way. Everything but the flags of the rows (a parallel pass) is
//! serial, in row order, so the result does not depend on the thread count; the buffers keep
//! their capacity from one substep to the next.

use super::super::mac_grid::{CellLabel, GridDims};
use super::system::System;
use rayon::prelude::*;

/// A row's flags ([`Pockets::flags`]): a face a moving solid covers; an open face to air.
const START: u8 = 1;
const BESIDE_AIR: u8 = 2;

/// A walk's marks of the rows ([`Pockets::state`]): not reached, reached by the walk under
/// way, in a piece with air, in a sealed piece.
const NEW: u8 = 0;
const SEEN: u8 = 1;
const AIRY: u8 = 2;
const SEALED: u8 = 3;

/// Scratch of [`Pockets::make_compatible`].
#[derive(Default)]
pub struct Pockets {
    flags: Vec<u8>,
    state: Vec<u8>,
    stack: Vec<u32>,
    /// The sealed pieces' rows (each piece sorted), and where each piece ends in it.
    sealed: Vec<u32>,
    ends: Vec<usize>,
    parent: Vec<u32>,
    sum: Vec<f64>,
    size: Vec<u32>,
    /// Per root of the union-find: [`START`] and [`BESIDE_AIR`] of any of its rows.
    root_flags: Vec<u8>,
    /// Budget of the walks, in rows: `None` for an eighth of the rows (tests set it).
    pub(super) walk_budget: Option<usize>,
}

impl Pockets {
    /// Takes off `b` (one entry per row of `sys`, whose rows carry face weights) its mean over
    /// every connected piece of the rows that touches no air (no face with an open fraction
    /// above zero to a cell labelled `Empty`) and has a face the moving solids cover (a weight
    /// below 1 and a nonzero `solid_vel`), and returns how many pieces it changed.
    pub fn make_compatible(
        &mut self,
        d: &GridDims,
        sys: &System,
        labels: &[CellLabel],
        solid_vel: &[Vec<f32>; 3],
        b: &mut [f64],
    ) -> usize {
        let nf = sys.nf;
        let (n0, plane) = (d.n[0], d.n[0] * d.n[1]);
        self.flags.resize(nf, 0);
        self.flags[..nf]
            .par_iter_mut()
            .zip(sys.ijk_of[..nf].par_iter().zip(sys.w[..nf].par_iter()))
            .zip(sys.cell_of[..nf].par_iter())
            .with_min_len(super::SETUP_ROWS)
            .for_each(|((flag, (ijk, w)), &c)| {
                let start = (0..6).any(|k| {
                    let a = k / 2;
                    let m = d.face_n(a);
                    let mut f = ijk.map(|x| x as usize);
                    f[a] += k % 2;
                    w[k] < 1.0 && solid_vel[a][f[0] + m[0] * (f[1] + m[1] * f[2])] != 0.0
                });
                let c = c as usize;
                let cells = [c - 1, c + 1, c - n0, c + n0, c - plane, c + plane];
                let air = (0..6).any(|k| labels[cells[k]] == CellLabel::Empty && w[k] > 0.0);
                *flag = if start { START } else { 0 } | if air { BESIDE_AIR } else { 0 };
            });
        if !self.flags[..nf].iter().any(|&f| f & START != 0) {
            return 0;
        }
        let budget = self.walk_budget.unwrap_or(nf / 8);
        if self.walks(sys, budget) {
            let mut at = 0;
            for &end in &self.ends {
                let piece = &self.sealed[at..end];
                let mean = piece.iter().map(|&r| b[r as usize]).sum::<f64>() / piece.len() as f64;
                for &r in piece {
                    b[r as usize] -= mean;
                }
                at = end;
            }
            self.ends.len()
        } else {
            self.union_find(sys, b)
        }
    }

    /// The walks from the rows flagged [`START`]: whether they found every sealed piece within
    /// `budget` rows in all (then [`Self::sealed`] and [`Self::ends`] hold them).
    fn walks(&mut self, sys: &System, budget: usize) -> bool {
        let nf = sys.nf;
        let (state, stack, flags) = (&mut self.state, &mut self.stack, &self.flags);
        state.clear();
        state.resize(nf, NEW);
        self.sealed.clear();
        self.ends.clear();
        let mut walked = 0;
        for r0 in 0..nf {
            if flags[r0] & START == 0 || state[r0] != NEW {
                continue;
            }
            let first = self.sealed.len();
            stack.clear();
            stack.push(r0 as u32);
            self.sealed.push(r0 as u32);
            state[r0] = SEEN;
            let mut airy = false;
            'walk: while let Some(r) = stack.pop() {
                let r = r as usize;
                if flags[r] & BESIDE_AIR != 0 {
                    airy = true;
                    break;
                }
                for k in 0..6 {
                    let m = sys.nb[r][k] as usize;
                    if m >= nf || sys.w[r][k] <= 0.0 {
                        continue;
                    }
                    match state[m] {
                        NEW => {
                            state[m] = SEEN;
                            stack.push(m as u32);
                            self.sealed.push(m as u32);
                            if walked + (self.sealed.len() - first) > budget {
                                return false;
                            }
                        }
                        AIRY => {
                            airy = true;
                            break 'walk;
                        }
                        _ => {}
                    }
                }
            }
            walked += self.sealed.len() - first;
            let piece = &mut self.sealed[first..];
            let mark = if airy { AIRY } else { SEALED };
            for &r in piece.iter() {
                state[r as usize] = mark;
            }
            if airy {
                self.sealed.truncate(first);
            } else {
                piece.sort_unstable();
                self.ends.push(self.sealed.len());
            }
        }
        true
    }

    /// The same pieces by a union-find over every row (neighbours joined across open faces),
    /// corrected: how many.
    fn union_find(&mut self, sys: &System, b: &mut [f64]) -> usize {
        let nf = sys.nf;
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
                if m < nf && sys.w[r][k] > 0.0 {
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
        self.root_flags.clear();
        self.root_flags.resize(nf, 0);
        for (r, &br) in b[..nf].iter().enumerate() {
            let root = find(parent, r);
            self.root_flags[root] |= self.flags[r];
            self.sum[root] += br;
            self.size[root] += 1;
        }
        let mut changed = 0;
        for (r, br) in b[..nf].iter_mut().enumerate() {
            let root = find(parent, r);
            if self.root_flags[root] != START {
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

    /// A grid of `n` cells of 0.1 m whose outer layer is solid and every other cell `inner`'s
    /// label at its `[i, j, k]`.
    fn walled_box(
        n: [usize; 3],
        inner: impl Fn([usize; 3]) -> CellLabel,
    ) -> (GridDims, Vec<CellLabel>) {
        let d = GridDims {
            n,
            h: 0.1,
            lower: [0.0; 3],
            open: [[false; 2]; 3],
        };
        let labels = (0..d.cells())
            .map(|c| {
                let ijk = [c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1])];
                let wall = (0..3).any(|a| ijk[a] == 0 || ijk[a] + 1 == n[a]);
                if wall { CellLabel::Solid } else { inner(ijk) }
            })
            .collect();
        (d, labels)
    }

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
        let (d, labels) = walled_box(n, |_| CellLabel::Fluid);
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
        let mut runs = Vec::new();
        for (pre, budget) in [
            (PressurePreconditioner::Mic0, None),
            (PressurePreconditioner::Multigrid, None),
            (PressurePreconditioner::Multigrid, Some(usize::MAX)),
        ] {
            let mut s = PressureSolver::new(d.cells());
            s.set_preconditioning(pre, n);
            s.pockets.walk_budget = budget;
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
            runs.push(v);
        }
        // The walks (no budget) and the union-find (an eighth of 336 rows: over budget) take
        // the same mean off: the same bits.
        assert!(runs[1] == runs[2], "walks and union-find differ");
    }

    /// The walks from the rows a moving solid touches and the union-find over every row find
    /// and correct the same pieces, with the same bits: a box cut by two solid planes into a
    /// sealed piece a moving solid touches (corrected), a sealed piece it does not (left), and
    /// a piece with air that it touches (left), with an uneven right-hand side; budgets from
    /// none (union-find at once) to unlimited.
    #[test]
    fn walks_and_union_find_correct_the_same_pieces() {
        use crate::sim::pressure::system::System;
        let n = [14, 9, 8];
        let (d, labels) = walled_box(n, |ijk| {
            if ijk[0] == 4 || ijk[0] == 9 {
                CellLabel::Solid
            } else if ijk[0] > 9 && ijk[2] >= 5 {
                CellLabel::Empty
            } else {
                CellLabel::Fluid
            }
        });
        let mut sys = System::new(d.cells());
        sys.build(&d, &labels);
        let open: [Vec<f32>; 3] = std::array::from_fn(|a| vec![1.0; d.faces(a)]);
        sys.build_weights(&d, &labels, &open);
        // The moving solid: the x-faces of the wall layer at x = 0 (the first piece) and of
        // the plane x = 9 facing the third piece.
        let mut sv: [Vec<f32>; 3] = std::array::from_fn(|a| vec![0.0; d.faces(a)]);
        let m = d.face_n(0);
        for k in 1..n[2] - 1 {
            for j in 1..n[1] - 1 {
                sv[0][1 + m[0] * (j + m[1] * k)] = 0.7;
                sv[0][10 + m[0] * (j + m[1] * k)] = -0.4;
            }
        }
        // Magnitudes over six decades: a sum in another order has other bits.
        let b0: Vec<f64> = (0..sys.nf)
            .map(|r| ((r as f64 * 0.618034).fract() - 0.5) * 10f64.powi((r % 7) as i32 - 3))
            .collect();
        let mut results = Vec::new();
        for budget in [Some(0), Some(50), None, Some(usize::MAX)] {
            let mut p = super::Pockets {
                walk_budget: budget,
                ..Default::default()
            };
            let mut b = b0.clone();
            let changed = p.make_compatible(&d, &sys, &labels, &sv, &mut b);
            assert_eq!(changed, 1, "budget {budget:?}");
            results.push(b);
        }
        assert!(results.iter().all(|b| *b == results[0]));
        // The first piece (x 1..4) sums to zero now; the others are untouched.
        let (mut sum, mut rows) = (0.0, 0);
        for r in 0..sys.nf {
            let x = sys.ijk_of[r][0];
            if x < 4 {
                sum += results[0][r];
                rows += 1;
            } else {
                assert_eq!(results[0][r], b0[r], "row {r} at x = {x} changed");
            }
        }
        assert!(rows > 0 && sum.abs() < 1e-9, "{rows} rows sum to {sum}");
    }
}
