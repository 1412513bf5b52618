//! Sealed pockets: liquid that touches no air, shut in by walls and obstacles.
//!
//! On a connected piece of the liquid that touches no air the pressure equation is a pure
//! Neumann problem: `A` is singular there (a constant pressure is its null space), and `A q = b`
//! has a solution only when `b` sums to zero over the piece: the sum of a piece's flux
//! divergences is the flux through its boundary, the solid faces'. Closed faces and the
//! domain's walls pass nothing, but a wall face partly inside a solid passes the liquid's
//! velocity in its open part (static solids too since session 38, whose wall faces keep the
//! liquid's velocity along the wall, `solids::wall_faces`), and a moving solid that squeezes
//! or widens a sealed pocket gives a net flux, the rate at which the pocket's volume changes,
//! and then no pressure can make the
//! liquid there divergence-free: CG chases the impossible part, and the velocities it leaves
//! grow without bound (with the nearly closed faces of moving solids closed,
//! `solids::MOVING_MIN_OPEN`, four violent test scenes of two or three tumbling solids all
//! ended in NaN within three frames without this, none with it). As for an enclosed domain
//! (Bridson 2015, ch. 5, the compatibility condition), the mean of `b` over each such piece is
//! taken off, which leaves the nearest solvable system: the pocket's liquid compresses or
//! expands uniformly at the rate the solid forces on it, and the rest of the projection is
//! exact.
//!
//! Only a piece that an obstacle touches can have a net inflow, so only the pieces holding
//! a row with a face the solids cover (a row weight below 1 and a solid velocity on the
//! face, or a wall face only partly inside the solids, whose flux is the liquid's velocity
//! in its open part: `system::flux_divergence`) are corrected. They are first looked for by
//! walks from those rows across faces with an open fraction above zero, each given up at the first row beside air (a cell labelled
//! `Empty` across an open face): where the liquid has air near its moving obstacles that is a
//! few rows. Walks that would visit more than an eighth of the rows (the whole liquid sealed in
//! a tank filled to the brim) give way to a union-find over every row. On one core of this
//! machine (a temporary timing test, three calls each): 3.7-5.3 ms for 735,000 rows of liquid
//! under air with a moving wall along one side, 30-40 ms for 950,000 rows sealed to the brim;
//! the union-find alone took 20-27 ms for the first, the walks alone 80-100 ms for the second.
//! Both correct the same pieces and sum each one's rows in row order: the same bits either
//! way.
//!
//! The density correction's solve ([`super::super::density`]) needs the same for every
//! sealed piece, whatever shut it in: its right-hand side is each cell's over-density, whose
//! mean over a pocket no displacement inside it can remove ([`Pockets::make_all_compatible`];
//! there the pieces come from the runs of rows, `system/pieces.rs`, or, where a closed face
//! separates two fluid rows, from the walks above started at the rows that can hold a sealed
//! piece). Everything but the flags of the rows and the runs' labelling (parallel passes) is
//! serial, in row order, so the result does not depend on the thread count; the buffers keep
//! their capacity from one substep to the next.

use super::super::mac_grid::{CellLabel, GridDims};
use super::system::System;
use super::system::pieces::Pieces;
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

/// Scratch of [`Pockets::make_compatible`] and [`Pockets::make_all_compatible`].
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
    /// The pieces by runs of rows ([`Self::make_all_compatible`]).
    pieces: Pieces,
    /// Whether [`Self::make_all_compatible`] takes the union-find over rows even where the
    /// runs would do (tests set it, to compare the two).
    pub(super) rows_only: bool,
}

impl Pockets {
    /// Scratch for a grid of `cells` cells, reserved (not resident) for every cell being
    /// fluid, so that the density correction's search allocates in no substep (the walks'
    /// buffers, used only with moving solids, grow as they need).
    pub fn new(cells: usize) -> Self {
        Self {
            flags: Vec::with_capacity(cells),
            state: Vec::new(),
            stack: Vec::new(),
            sealed: Vec::new(),
            ends: Vec::new(),
            parent: Vec::with_capacity(cells),
            sum: Vec::with_capacity(cells),
            size: Vec::with_capacity(cells),
            root_flags: Vec::with_capacity(cells),
            walk_budget: None,
            pieces: Pieces::with_capacity(cells),
            rows_only: false,
        }
    }

    /// [`Self::flags`] of every row: [`START`] where `start(row)`, [`BESIDE_AIR`] where a
    /// face with an open fraction above zero (any face without weights) leads to a cell
    /// labelled `Empty`.
    fn mark(
        &mut self,
        d: &GridDims,
        sys: &System,
        labels: &[CellLabel],
        start: impl Fn(usize) -> bool + Sync,
    ) {
        let nf = sys.nf;
        self.flags.resize(nf, 0);
        self.flags[..nf]
            .par_iter_mut()
            .enumerate()
            .with_min_len(super::SETUP_ROWS)
            .for_each(|(r, flag)| {
                let air = beside_air(d, sys, labels, r);
                *flag = if start(r) { START } else { 0 } | if air { BESIDE_AIR } else { 0 };
            });
    }

    /// The density correction's right-hand side made solvable: takes off `b` its mean over
    /// every connected piece of the rows that touches no air (joined across faces with an open
    /// fraction above zero), whatever shut it in, and returns how many pieces it changed.
    ///
    /// Unlike the projection's (a sealed piece's sum is the flux through its wall faces, and
    /// only the pieces obstacles touch are corrected), the correction's right-hand side is
    /// each cell's over-density, and a pocket filled above or below the seeding density on average has a
    /// mean no displacement inside it can remove: the pocket's volume cannot change. Without
    /// this the solve chased that mean (session 30: a tank filled to the brim moved particles
    /// by up to 542 m in its first substep, and 17,280 particles became 269 as the crowding
    /// thinned the corners they were thrown into). Taking it off spreads the pocket's liquid
    /// evenly and keeps its volume.
    ///
    /// The pieces come from the runs of rows ([`Pieces`], parallel). Where a face with no open
    /// fraction separates two fluid rows (an obstacle thinner than a cell, a face a moving
    /// solid nearly covers) a piece of the labels may hold several of the matrix: then the
    /// walks of [`Self::make_compatible`] find the sealed ones (or, past their budget, the
    /// union-find over rows), from the rows of the sealed pieces of the labels and the rows
    /// beside such a face. Every way sums each piece's rows in row order (the same bits,
    /// checked by a test).
    pub fn make_all_compatible(
        &mut self,
        d: &GridDims,
        sys: &System,
        labels: &[CellLabel],
        b: &mut [f64],
    ) -> usize {
        let nf = sys.nf;
        if nf == 0 {
            return 0;
        }
        if self.rows_only {
            self.mark(d, sys, labels, |_| true);
            return self.union_find(sys, b);
        }
        let split = sys.fractional
            && (0..nf)
                .into_par_iter()
                .with_min_len(super::SETUP_ROWS)
                .any(|r| shut_from_fluid(sys, r));
        let pc = &mut self.pieces;
        pc.label(sys);
        let nr = pc.starts.len();
        // Per root: whether any of its runs' rows is beside air, looked for run by run until
        // one is (in row order a piece soon meets a run beside air, unless it is sealed).
        let airy = &mut self.root_flags;
        airy.clear();
        airy.resize(nr, 0);
        for i in 0..nr {
            let root = pc.parent[i] as usize;
            if airy[root] == 0
                && (pc.starts[i] as usize..pc.end(i, nf)).any(|r| beside_air(d, sys, labels, r))
            {
                airy[root] = BESIDE_AIR;
            }
        }
        if split {
            // A piece of the labels may hold several of the matrix. A sealed one of those lies
            // in a sealed piece of the labels or has a row with a closed face to another
            // fluid row (the face that parts it from the rest): the walks start from both.
            self.mark(d, sys, labels, |r| shut_from_fluid(sys, r));
            let pc = &self.pieces;
            for i in 0..nr {
                if self.root_flags[pc.parent[i] as usize] == 0 {
                    for f in &mut self.flags[pc.starts[i] as usize..pc.end(i, nf)] {
                        *f |= START;
                    }
                }
            }
            return self.correct_from_starts(sys, b);
        }
        if (0..nr).all(|i| pc.parent[i] as usize != i || airy[i] != 0) {
            return 0;
        }
        // The sealed pieces' sums in row order, then their means taken off.
        let (sum, size) = (&mut self.sum, &mut self.size);
        sum.clear();
        sum.resize(nr, 0.0);
        size.clear();
        size.resize(nr, 0);
        for i in 0..nr {
            let root = pc.parent[i] as usize;
            if airy[root] == 0 {
                let rows = pc.starts[i] as usize..pc.end(i, nf);
                size[root] += rows.len() as u32;
                for &br in &b[rows] {
                    sum[root] += br;
                }
            }
        }
        let mut changed = 0;
        for i in 0..nr {
            let root = pc.parent[i] as usize;
            if airy[root] == 0 {
                changed += (root == i) as usize;
                let mean = sum[root] / size[root] as f64;
                for br in &mut b[pc.starts[i] as usize..pc.end(i, nf)] {
                    *br -= mean;
                }
            }
        }
        changed
    }

    /// Takes off `b` (one entry per row of `sys`, whose rows carry face weights) its mean over
    /// every connected piece of the rows that touches no air (no face with an open fraction
    /// above zero to a cell labelled `Empty`) and has a face through which the moving solids
    /// can give it a net flux, and returns how many pieces it changed. Such a face has a
    /// weight below 1 and either a nonzero `solid_vel` or, as a wall face (weight 0) with a
    /// geometric open fraction `o` above 0, the flux `o u` of the liquid's velocity `u` (`vel`)
    /// in its open part (`system::flux_divergence`): where `o` is below 1 (session 34: a glass
    /// keyframed to stand still after tumbling, its solid velocities all zero, left a sealed
    /// piece of 1,285 rows whose right-hand side summed to 87 through such faces, and the solve
    /// ran to its cap), or where `o` is 1 and `u` is not 0 (a wall face beside a cell labelled
    /// solid by a wall thinner than half a cell; the domain's walls, whose faces keep 0, give
    /// no flux).
    pub fn make_compatible(
        &mut self,
        d: &GridDims,
        sys: &System,
        labels: &[CellLabel],
        [open, solid_vel, vel]: [&[Vec<f32>; 3]; 3],
        b: &mut [f64],
    ) -> usize {
        self.mark(d, sys, labels, |r| {
            let (ijk, w) = (sys.ijk_of[r], &sys.w[r]);
            (0..6).any(|k| {
                let a = k / 2;
                let m = d.face_n(a);
                let mut f = ijk.map(|x| x as usize);
                f[a] += k % 2;
                let f = f[0] + m[0] * (f[1] + m[1] * f[2]);
                let o = open[a][f];
                let wall_flux = w[k] == 0.0 && o > 0.0 && (o < 1.0 || vel[a][f] != 0.0);
                w[k] < 1.0 && (solid_vel[a][f] != 0.0 || wall_flux)
            })
        });
        self.correct_from_starts(sys, b)
    }

    /// After [`Self::mark`]: takes off `b` its mean over every piece without air that holds a
    /// row flagged [`START`], found by the walks from those rows or, past their budget, by the
    /// union-find; returns how many pieces it changed.
    fn correct_from_starts(&mut self, sys: &System, b: &mut [f64]) -> usize {
        let nf = sys.nf;
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
                if m < nf && (!sys.fractional || sys.w[r][k] > 0.0) {
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

/// Whether row `r` of `sys` (with face weights) has a closed face to another fluid row.
#[inline]
fn shut_from_fluid(sys: &System, r: usize) -> bool {
    (0..6).any(|k| sys.w[r][k] <= 0.0 && (sys.nb[r][k] as usize) < sys.nf)
}

/// Whether row `r` of `sys` has a face with an open fraction above zero (any face without
/// weights) to a cell labelled `Empty`.
#[inline]
fn beside_air(d: &GridDims, sys: &System, labels: &[CellLabel], r: usize) -> bool {
    let (c, n0, plane) = (sys.cell_of[r] as usize, d.n[0], d.n[0] * d.n[1]);
    let cells = [c - 1, c + 1, c - n0, c + n0, c - plane, c + plane];
    (0..6).any(|k| labels[cells[k]] == CellLabel::Empty && (!sys.fractional || sys.w[r][k] > 0.0))
}

#[cfg(test)]
mod tests;
