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
//! Up is apart (session 36). A retreating wall uncovers a whole column of cells along it at
//! once, from the floor up to the liquid's surface, and the column's top cell touches the air
//! above the liquid: with every face alike the column was connected to air, stayed air, and
//! the liquid's top cell beside it saw air at its own level, a horizontal pressure drop as
//! steep as the hydrostatic one, which drew the surface towards the wall (water carried at
//! 0.5 m/s in a container, `tests/obstacles_carried.rs`: 0.136 m/s relative to it, the
//! surface 11.6 mm off). With gravity, the face against it ([`SolidState::set_gravity`]) does
//! not connect a candidate to air (a candidate whose only air is above it lies at the liquid's
//! surface level, as full as the liquid beside it), and the searches follow only the faces
//! across gravity, so each cell's own level decides: an empty cell beside liquid and a moving
//! solid becomes fluid unless air lies beside it at its level (a gap wider than the reach,
//! where the liquid has fallen away from the solid, stays air). The same container: 0.024 m/s,
//! the surface 3.5 mm off; the rest was the faces inside the walls (session 37,
//! `wall_faces.rs`: now 1.8e-7 m/s, 1.3 mm). Without gravity every face counts, as before.
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
        // The face against gravity: air above a candidate does not open it, and the searches
        // do not follow the vertical axis (see the module docs).
        let up = self.up;
        let vertical = up.map(|k| k / 2);
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
                    for (q, (b, through)) in nbs(c).into_iter().enumerate() {
                        if !through {
                            continue;
                        }
                        if lab[b] == CellLabel::Fluid {
                            *mk |= BY_FLUID;
                        } else if Some(q) != up && lab[b] == CellLabel::Empty && !candidate(b) {
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
        spread(queue, mark, OPEN, &nbs, vertical);
        // The liquid's seeds the first search did not reach.
        fill.retain(|&c| mark[c as usize] & OPEN == 0);
        for &c in fill.iter() {
            mark[c as usize] |= FILL;
        }
        spread(fill, mark, FILL, &nbs, vertical);
        for &c in fill.iter() {
            labels[c as usize] = CellLabel::Fluid;
        }
    }
}

/// Breadth-first search from the cells in `list` (already marked `flag`): every candidate
/// reached through open faces (not along axis `skip`, where given) and not yet marked
/// [`OPEN`] or [`FILL`] is marked `flag` and appended, so `list` ends holding the whole set.
fn spread(
    list: &mut Vec<u32>,
    mark: &mut [u8],
    flag: u8,
    nbs: &impl Fn(usize) -> [(usize, bool); 6],
    skip: Option<usize>,
) {
    let mut head = 0;
    while head < list.len() {
        let c = list[head] as usize;
        head += 1;
        for (q, (b, through)) in nbs(c).into_iter().enumerate() {
            if Some(q / 2) == skip {
                continue;
            }
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
    /// `i = 5`, centres 0.07 m out of it, are the only ones within reach; the water fills
    /// `i, k = 1..=5`, `j = 1..=6`), the domain's wall layer solid, with the cells `empty` made
    /// empty by hand, labelled with `gravity` (none: `SolidState::set_gravity` not called).
    fn label_beside_wall(
        gravity: Option<[f64; 3]>,
        empty: &[[usize; 3]],
    ) -> (Vec<CellLabel>, impl Fn([usize; 3]) -> usize) {
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
        if let Some(g) = gravity {
            st.set_gravity(g);
        }
        let n = d.n;
        let at = move |[i, j, k]: [usize; 3]| i + n[0] * (j + n[1] * k);
        let mut labels: Vec<CellLabel> = (0..d.cells())
            .map(|c| {
                let ijk = [c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1])];
                let wall = (0..3).any(|a| ijk[a] == 0 || ijk[a] + 1 == n[a]);
                let water = (1..=5).contains(&ijk[0])
                    && (1..=6).contains(&ijk[1])
                    && (1..=5).contains(&ijk[2]);
                match (wall, water) {
                    (true, _) => CellLabel::Solid,
                    (false, true) => CellLabel::Fluid,
                    _ => CellLabel::Empty,
                }
            })
            .collect();
        for &c in empty {
            labels[at(c)] = CellLabel::Empty;
        }
        st.label_solid_cells(&d, 0.0, &mut labels);
        // The wall's cells are solid, the water's untouched.
        assert_eq!(labels[at([6, 2, 2])], CellLabel::Solid);
        assert_eq!(labels[at([3, 5, 4])], CellLabel::Fluid);
        (labels, at)
    }

    /// Without gravity: a one-cell pocket and a two-cell one against the wall, shut in by
    /// water and wall, must become fluid; a column of empty cells up the wall that reaches the
    /// air above the water, and an empty cell in the open water 0.37 m from the wall, must stay
    /// air. Before session 34 every one of them stayed air.
    #[test]
    fn pockets_shut_in_by_a_moving_wall_become_fluid() {
        let one = [[5, 2, 2]];
        let two = [[5, 6, 2], [5, 6, 3]];
        let chimney: Vec<[usize; 3]> = (1..=5).map(|k| [5, 4, k]).collect();
        let open_water = [2, 4, 3];
        let empty: Vec<[usize; 3]> = [&one[..], &two, &chimney, &[open_water]].concat();
        let (labels, at) = label_beside_wall(None, &empty);
        for &c in one.iter().chain(&two) {
            assert_eq!(
                labels[at(c)],
                CellLabel::Fluid,
                "pocket cell {c:?} left air"
            );
        }
        for &c in chimney.iter().chain([&open_water]) {
            assert_eq!(
                labels[at(c)],
                CellLabel::Empty,
                "cell {c:?} open to the air became fluid"
            );
        }
    }

    /// With gravity along -z (session 36): the column of empty cells up the wall (a retreating
    /// wall uncovers one from the floor to the surface at once) becomes fluid, its top cell
    /// touching air only above; a gap two cells wide up the wall (the liquid fallen away from
    /// it, its outer cells beyond reach) and the empty cell in the open water stay air.
    #[test]
    fn a_column_up_a_moving_wall_below_the_surface_becomes_fluid() {
        let chimney: Vec<[usize; 3]> = (1..=5).map(|k| [5, 4, k]).collect();
        let gap: Vec<[usize; 3]> = (1..=5).flat_map(|k| [[4, 2, k], [5, 2, k]]).collect();
        let open_water = [2, 4, 3];
        let empty: Vec<[usize; 3]> = [&chimney[..], &gap, &[open_water]].concat();
        let (labels, at) = label_beside_wall(Some([0.0, 0.0, -9.8]), &empty);
        for &c in &chimney {
            assert_eq!(
                labels[at(c)],
                CellLabel::Fluid,
                "column cell {c:?} left air"
            );
        }
        for &c in gap.iter().chain([&open_water]) {
            assert_eq!(labels[at(c)], CellLabel::Empty, "cell {c:?} became fluid");
        }
    }
}
