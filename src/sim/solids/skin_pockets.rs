//! Air pockets a moving solid leaves behind: empty cells beside it, shut in by liquid and solid.
//!
//! A cell is fluid when it holds a particle, and particles are kept [`super::PUSHOUT_CELLS`]
//! cells out of every solid. When a moving solid uncovers a cell (the retreating wall of a
//! carried container), its centre leaves the solid before any particle has moved in; and a
//! cell whose centre lies in the push-out skin can lose its last particle (beside a cylinder
//! spinning in place). Either is labelled empty, air at `p = 0`, while liquid and solid shut
//! it in: the projection then puts a free surface inside the liquid and draws the liquid into
//! it. Measured (session 34, 1.25 cm cells): water carried at 0.5 m/s in a container whose
//! floor's top lies 0.4 of a cell above a cell face reached 1.57 m/s relative to it at the
//! corners of floor and walls, where such a cell opened every few substeps; beside the
//! spinning cylinder of session 33, bursts of tens of particles up to 0.57 m/s, each at one
//! such cell.
//!
//! The fix labels those pockets fluid: the empty cells whose centre is within one cell of a
//! solid ([`REACH_CELLS`]), connected through faces with an open fraction above zero to the
//! liquid, and connected to no other empty cell except through such cells (a pocket of
//! several cells along an edge counts as a whole). An empty cell next to real air (the surface
//! above the water, the air outside a container) stays air, and so does every pocket cell
//! connected to it. A pocket labelled fluid holds no particle: the projection solves its
//! pressure (its faces keep their open fractions), the extrapolation treats it as any fluid
//! cell, and the density correction as any fluid cell (an interior one, its faces all open
//! and its neighbours fluid, draws particles into it; one beside a solid, with a closed or
//! partly closed face, is corrected only where over-dense, which it never is).
//!
//! The liquid-labelling rule of Batty's reference code and of the FLIP Fluids engine (every
//! empty cell that the solids partly cover counts as liquid) was tried in session 33 and broke
//! the liquid at rest in static containers (the glass lost 27% of its mesh volume); this rule
//! changes only what a pocket shut in by liquid and solid does, and only with moving solids
//! (a static solid never uncovers a cell).
//!
//! Determinism: the candidates are marked per cell in parallel; the pockets that touch air are
//! found by one breadth-first search from the candidates next to air, then the pockets to
//! fill by another from the remaining candidates next to liquid; each search's result (a set
//! of cells) does not depend on its visiting order. No allocation after the first substeps
//! (the queues keep their capacity). Shots with moving solids only: a parallel pass over
//! the cells and a serial scan of one byte per cell per substep.

use super::SolidState;
use crate::sim::mac_grid::{CellLabel, GridDims};
use rayon::prelude::*;

/// How near a solid (cell centre to surface, in cells) an empty cell may be to count as a
/// pocket. One cell: a cell uncovered in one substep has its centre at most the solid's move
/// in that substep out of the solid, which the substep's CFL bound keeps near a cell in the
/// scenes measured (0.46 cells per substep for the carried container); half a cell relabelled
/// the same cells there.
pub const REACH_CELLS: f32 = 1.0;

/// Bits of a cell's mark: an empty cell within reach of a solid (a candidate)...
const CANDIDATE: u8 = 1;
/// ... next to an empty cell that is no candidate (air) ...
const BY_AIR: u8 = 2;
/// ... next to a fluid cell ...
const BY_FLUID: u8 = 4;
/// ... connected to air through candidates (stays air) ...
const OPEN: u8 = 8;
/// ... or shut in and connected to the liquid (becomes fluid).
const FILL: u8 = 16;

impl SolidState {
    /// Labels the air pockets the moving solids shut in fluid (see the module docs). `labels`
    /// after [`Self::label_solid_cells`]'s solid labelling at the same time.
    pub(super) fn fill_skin_pockets(&mut self, d: &GridDims, labels: &mut [CellLabel]) {
        let n = d.n;
        let (sy, sz) = (n[0], n[0] * n[1]);
        let reach = REACH_CELLS * d.h;
        let (mark, phi, open) = (&mut self.pocket_mark, &self.cell_phi, &self.fractions.open);
        let lab: &[CellLabel] = labels;
        let m = [0, 1, 2].map(|a| d.face_n(a));
        // Cell `c`'s six neighbours `[-x, +x, -y, +y, -z, +z]`, each with whether the face
        // between them is open (some of it outside the solids; `c` an inner cell).
        let nbs = |c: usize| {
            let (i, j, k) = (c % n[0], (c / n[0]) % n[1], c / sz);
            let face = |a: usize, up: usize| {
                let ijk = [
                    i + (a == 0) as usize * up,
                    j + (a == 1) as usize * up,
                    k + (a == 2) as usize * up,
                ];
                open[a][ijk[0] + m[a][0] * (ijk[1] + m[a][1] * ijk[2])] > 0.0
            };
            [
                (c - 1, face(0, 0)),
                (c + 1, face(0, 1)),
                (c - sy, face(1, 0)),
                (c + sy, face(1, 1)),
                (c - sz, face(2, 0)),
                (c + sz, face(2, 1)),
            ]
        };
        // Cheap tests first: most cells are not empty or far from every solid.
        let candidate = |c: usize| {
            if lab[c] != CellLabel::Empty || !(0.0..reach).contains(&phi[c]) {
                return false;
            }
            let (i, j, k) = (c % n[0], (c / n[0]) % n[1], c / sz);
            i > 0 && j > 0 && k > 0 && i + 1 < n[0] && j + 1 < n[1] && k + 1 < n[2]
        };
        let beside_liquid: usize = mark
            .par_iter_mut()
            .enumerate()
            .with_min_len(4096)
            .map(|(c, mk)| {
                *mk = 0;
                if candidate(c) {
                    *mk = CANDIDATE;
                    for (b, through) in nbs(c) {
                        if !through {
                            continue;
                        }
                        if lab[b] == CellLabel::Fluid {
                            *mk |= BY_FLUID;
                        } else if lab[b] == CellLabel::Empty && !candidate(b) {
                            *mk |= BY_AIR;
                        }
                    }
                }
                (*mk & BY_FLUID != 0) as usize
            })
            .sum();
        if beside_liquid == 0 {
            return;
        }
        // The candidates connected to air, then those connected to the liquid but not to air:
        // each a breadth-first search over candidates, through open faces, from its seeds. The
        // second one's queue ends up holding exactly the cells to relabel.
        let (queue, fill) = (&mut self.pocket_queue, &mut self.pocket_fill);
        queue.clear();
        fill.clear();
        for (c, mk) in mark.iter_mut().enumerate() {
            if *mk & BY_AIR != 0 {
                *mk |= OPEN;
                queue.push(c as u32);
            } else if *mk & BY_FLUID != 0 {
                fill.push(c as u32);
            }
        }
        spread(queue, mark, OPEN, &nbs);
        // The liquid's seeds the first search did not reach.
        fill.retain(|&c| mark[c as usize] & OPEN == 0);
        for &c in fill.iter() {
            mark[c as usize] |= FILL;
        }
        spread(fill, mark, FILL, &nbs);
        for &c in fill.iter() {
            labels[c as usize] = CellLabel::Fluid;
        }
    }
}

/// Breadth-first search from the cells in `list` (already marked `flag`): every candidate
/// reached through open faces and not yet marked [`OPEN`] or [`FILL`] is marked `flag` and
/// appended, so `list` ends holding the whole set.
fn spread(
    list: &mut Vec<u32>,
    mark: &mut [u8],
    flag: u8,
    nbs: &impl Fn(usize) -> [(usize, bool); 6],
) {
    let mut head = 0;
    while head < list.len() {
        let c = list[head] as usize;
        head += 1;
        for (b, through) in nbs(c) {
            if through && mark[b] & CANDIDATE != 0 && mark[b] & (OPEN | FILL) == 0 {
                mark[b] |= flag;
                list.push(b as u32);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::closed_grid;
    use super::super::{Obstacles, SolidState};
    use crate::geometry::solid::{Liquid, Shape, Solid};
    use crate::geometry::transform::{Keyframe, Motion};
    use crate::sim::mac_grid::CellLabel;

    /// Water against a keyframed wall (its face at x = 0.62 m, 0.1 m cells: the cells
    /// `i = 5`, centres 0.07 m out of it, are the only ones within reach), with empty cells
    /// placed by hand: a one-cell pocket and a two-cell one against the wall, shut in by water
    /// and wall, must become fluid; a column of empty cells up the wall that reaches the air
    /// above the water, and an empty cell in the open water 0.17 m from the wall, must stay
    /// air. Before session 34 every one of them stayed air.
    #[test]
    fn pockets_shut_in_by_a_moving_wall_become_fluid() {
        let d = closed_grid([10, 8, 9], 0.1);
        let key = |time: f64| Keyframe {
            time,
            translate: [0.0; 3],
            rotate_deg: [0.0; 3],
        };
        let wall = Solid::new(
            Shape::Box {
                min: [0.62, -1.0, -1.0],
                max: [2.0, 2.0, 2.0],
            },
            [1.0; 3],
            Motion::keyframed(vec![key(0.0), key(1.0)]).unwrap(),
            Liquid::Outside,
        )
        .unwrap();
        let mut st = SolidState::new(Obstacles::new(vec![wall], "t".into()), &d);
        let n = d.n;
        let at = |i: usize, j: usize, k: usize| i + n[0] * (j + n[1] * k);
        // The domain's wall layer solid, as the stepper labels it.
        let mut labels: Vec<CellLabel> = (0..d.cells())
            .map(|c| {
                let ijk = [c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1])];
                let wall = (0..3).any(|a| ijk[a] == 0 || ijk[a] + 1 == n[a]);
                [CellLabel::Empty, CellLabel::Solid][wall as usize]
            })
            .collect();
        for k in 1..=5 {
            for j in 1..=6 {
                for i in 1..=5 {
                    labels[at(i, j, k)] = CellLabel::Fluid;
                }
            }
        }
        let one = [at(5, 2, 2)];
        let two = [at(5, 6, 2), at(5, 6, 3)];
        let chimney: Vec<usize> = (1..=5).map(|k| at(5, 4, k)).collect();
        let open_water = at(2, 4, 3);
        for &c in one.iter().chain(&two).chain(&chimney) {
            labels[c] = CellLabel::Empty;
        }
        labels[open_water] = CellLabel::Empty;
        st.label_solid_cells(&d, 0.0, &mut labels);
        for c in one.iter().chain(&two) {
            assert_eq!(labels[*c], CellLabel::Fluid, "pocket cell {c} left air");
        }
        for c in chimney.iter().chain([&open_water]) {
            assert_eq!(
                labels[*c],
                CellLabel::Empty,
                "cell {c} open to the air became fluid"
            );
        }
        // The wall's cells are solid, the water's untouched.
        assert_eq!(labels[at(6, 2, 2)], CellLabel::Solid);
        assert_eq!(labels[at(4, 2, 2)], CellLabel::Fluid);
    }
}
