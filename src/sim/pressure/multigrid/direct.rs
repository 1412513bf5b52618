//! The multigrid cycle's coarse solve: an exact `L D L^T` factorisation of one small coarse
//! level's operator, computed once per set-up, in place of the smoothing on that level and of
//! every level below it.
//!
//! The W-cycle visits level `l` `2^l` times per application, and a coarse level's sweeps are
//! short serial loops (too little work to share between threads): on the 1M-particle dam break
//! the levels of 210, 24 and 2 unknowns below the third coarsening took 7% of a cycle's time at
//! 1 thread (their 8 + 16 + 16 visits), all of it serial. A direct solve on the 210-unknown
//! level costs two triangular solves over a few thousand stored entries per visit, and it is
//! visited half as often (the cycle's repeats stop above the level that is solved exactly: a
//! second exact solve of the same coarse problem adds nothing). This is the usual multigrid
//! practice of an exact coarse-grid solve (Trottenberg, Oosterlee and Schüller, *Multigrid*,
//! 2001, sec. 2.4; McAdams et al. 2010 smooth their coarsest level instead, which is what the
//! cycle still does where no level qualifies).
//!
//! The unknowns (fluid cells with a non-zero diagonal) are numbered in the level's natural
//! order (x fastest); in that order a row couples to rows at most one plane of unknowns back,
//! so the factor is stored as an **envelope** (skyline): row `i` keeps columns
//! `first_i .. i`, `first_i` its lowest coupled row, and the factorisation fills only inside
//! the envelope (George and Liu, *Computer Solution of Large Sparse Positive Definite Systems*,
//! 1981, ch. 4). A level is solved directly only if its unknowns, its envelope and the
//! factorisation's operations fit fixed budgets ([`MAX_UNKNOWNS`], [`MAX_ENTRIES`], and at most
//! [`FLOPS_PER_FINE_ROW`] operations per unknown of the finest level, so that the set-up stays
//! a small part of a solve); the storage is allocated once, at the budgets.
//!
//! A liquid region of the level that touches no air is a singular, compatible Neumann block:
//! its last pivot is zero up to rounding (with face weights only once the diagonal is their
//! exact sum, [`diagonal`]: the level's `f32` sum left it about `1e-6` of the diagonal). A
//! pivot below [`NULL_PIVOT`] times its diagonal entry is taken as exactly zero (its row of
//! `L` too, the Schur complement being positive semi-definite): the solve then applies
//! `L^-T D^+ L^-1`, still a symmetric positive semi-definite map, so the cycle stays symmetric
//! as CG needs. Everything is `f64` and serial
//! in a fixed order: the result does not depend on the thread count.

use super::level::{FLUID, Level};

/// Most unknowns of a directly solved level.
pub(super) const MAX_UNKNOWNS: usize = 512;

/// Most stored entries of the factor's envelope (8 bytes each).
pub(super) const MAX_ENTRIES: usize = 32 * 1024;

/// Most multiply-adds of the factorisation per unknown of the finest level.
pub(super) const FLOPS_PER_FINE_ROW: usize = 4;

/// A pivot at most this times its row's diagonal entry is a null direction (see the module
/// docs): far below the smallest genuine pivot of a level of at most [`MAX_UNKNOWNS`]
/// unknowns with a Dirichlet cell (about `1 / MAX_UNKNOWNS` of the diagonal), far above the
/// rounding of a singular block's last pivot (about `1e-16` times the diagonal per row).
const NULL_PIVOT: f64 = 1e-9;

/// The factor of one level's operator, and the vectors of its solve.
pub(super) struct Direct {
    /// Level index solved (`None`: no level qualified at the last set-up).
    pub level: Option<usize>,
    /// Unknowns.
    n: usize,
    /// Per unknown: its natural cell index (increasing) and its index stored by colour.
    cell: Vec<u32>,
    split: Vec<u32>,
    /// Per unknown `i`: the first column of its envelope row and where the row's entries
    /// (columns `first[i] .. i`) start in `l`.
    first: Vec<u32>,
    start: Vec<u32>,
    /// The strictly lower part of `L` (unit diagonal), row by row.
    l: Vec<f64>,
    /// `1 / D` (0 for a null pivot).
    dinv: Vec<f64>,
    /// The right-hand side and solution of a solve.
    x: Vec<f64>,
}

impl Direct {
    /// The storage for the budgets.
    pub fn new() -> Self {
        Self {
            level: None,
            n: 0,
            cell: vec![0; MAX_UNKNOWNS],
            split: vec![0; MAX_UNKNOWNS],
            first: vec![0; MAX_UNKNOWNS],
            start: vec![0; MAX_UNKNOWNS + 1],
            l: vec![0.0; MAX_ENTRIES],
            dinv: vec![0.0; MAX_UNKNOWNS],
            x: vec![0.0; MAX_UNKNOWNS],
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        4 * (self.cell.len() + self.split.len() + self.first.len() + self.start.len())
            + 8 * (self.l.len() + self.dinv.len() + self.x.len())
    }

    /// Unknowns of the level solved (0 if none).
    pub fn unknowns(&self) -> usize {
        if self.level.is_some() { self.n } else { 0 }
    }

    /// Null pivots of the factor (one per closed liquid region of the level).
    #[cfg(test)]
    pub fn null_pivots(&self) -> usize {
        self.dinv[..self.n].iter().filter(|&&d| d == 0.0).count()
    }

    /// Tries to factor level `lv` (index `index`) within the budgets, `fine_rows` the
    /// unknowns of the finest level; returns whether it did (then [`Self::level`] is
    /// `Some(index)`).
    pub fn factor(&mut self, lv: &Level, index: usize, fine_rows: usize) -> bool {
        self.level = None;
        if !self.number(lv) {
            return false;
        }
        let n = self.n;
        // The envelope: the lowest coupled row of each row (the neighbours below along x, y
        // and z, when unknowns), and the operations of the factorisation.
        let st = lv.strides();
        let mut entries = 0usize;
        let mut flops = 0usize;
        for i in 0..n {
            let c = self.cell[i] as usize;
            let mut f = i;
            for s in st {
                if let Some(m) = self.find(c - s) {
                    f = f.min(m);
                }
            }
            self.first[i] = f as u32;
            self.start[i] = entries as u32;
            entries += i - f;
            flops += (i - f) * (i - f + 1) / 2;
            if entries > MAX_ENTRIES {
                return false;
            }
        }
        self.start[n] = entries as u32;
        if flops > FLOPS_PER_FINE_ROW * fine_rows.max(1) {
            return false;
        }
        // Up-looking L D L^T, row by row: for j = first_i .. i in order,
        // t_j = A_ij - sum_k t_k L_jk (k from the later of the two rows' first columns to j;
        // t_k = L_ik D_k), L_ij = t_j / D_j, and D_i = A_ii - sum_j L_ij t_j.
        for i in 0..n {
            let (fi, si) = (self.first[i] as usize, self.start[i] as usize);
            let c = self.cell[i] as usize;
            let lower = [0, 1, 2].map(|a| self.find(c - st[a]).map(|m| (m, face_weight(lv, a, c))));
            let t = &mut self.x[fi..i];
            t.fill(0.0);
            for (m, w) in lower.into_iter().flatten() {
                t[m - fi] = -w;
            }
            let (done, row) = self.l.split_at_mut(si);
            let row = &mut row[..i - fi];
            let mut d = diagonal(lv, self.split[i] as usize, c);
            let a_ii = d;
            for j in fi..i {
                let (fj, sj) = (self.first[j] as usize, self.start[j] as usize);
                let k0 = fi.max(fj);
                let lj = &done[sj + (k0 - fj)..sj + (j - fj)];
                let mut tj = t[j - fi];
                for (tk, ljk) in t[k0 - fi..j - fi].iter().zip(lj) {
                    tj -= tk * ljk;
                }
                t[j - fi] = tj;
                let lij = tj * self.dinv[j];
                row[j - fi] = lij;
                d -= lij * tj;
            }
            self.dinv[i] = if d > NULL_PIVOT * a_ii { 1.0 / d } else { 0.0 };
        }
        self.level = Some(index);
        true
    }

    /// Numbers the unknowns of `lv` (fluid cells with a non-zero diagonal) in natural order;
    /// false if there are more than [`MAX_UNKNOWNS`].
    fn number(&mut self, lv: &Level) -> bool {
        let (nx, ny) = (lv.n[0], lv.n[1]);
        let mut n = 0;
        for (row, &[lo, hi]) in lv.spans.iter().enumerate() {
            let (j, k) = (row % ny, row / ny);
            for i in lo as usize..hi as usize {
                let c = nx * row + i;
                let x = lv.split(i, j, k);
                if lv.label[c] == FLUID && lv.diag[x] != 0.0 {
                    if n == MAX_UNKNOWNS {
                        return false;
                    }
                    self.cell[n] = c as u32;
                    self.split[n] = x as u32;
                    n += 1;
                }
            }
        }
        self.n = n;
        true
    }

    /// The unknown of natural cell `c`, if any (bisection: the cells increase).
    fn find(&self, c: usize) -> Option<usize> {
        let cells = &self.cell[..self.n];
        cells.binary_search(&(c as u32)).ok()
    }

    /// `u = A^-1 b` on the factored level (`u` at its unknowns; the other cells keep their 0).
    pub fn solve(&mut self, lv: &mut Level) {
        let u = lv.u.as_mut_ptr();
        // SAFETY: `u` is the level's own `u`, borrowed mutably here.
        unsafe { self.solve_into(lv, u) }
    }

    /// [`Self::solve`] writing the level's `u` through `u` (the team's, `team.rs`).
    ///
    /// # Safety
    /// `u` is `lv.u`'s buffer, and nothing else reads or writes it meanwhile.
    pub unsafe fn solve_into(&mut self, lv: &Level, u: *mut f32) {
        let n = self.n;
        let x = &mut self.x[..n];
        for (x, &s) in x.iter_mut().zip(&self.split[..n]) {
            *x = lv.b[s as usize] as f64;
        }
        // L y = b (row by row), then y /= D, then L^T x = y (column by column, backwards).
        for i in 0..n {
            let (fi, si) = (self.first[i] as usize, self.start[i] as usize);
            let row = &self.l[si..si + (i - fi)];
            // Four partial sums (lanes of 4 entries, then the remainder), added in a fixed
            // order: the dot product runs at the adds' throughput rather than their latency.
            let (xs, mut acc) = (&x[fi..i], [0.0f64; 4]);
            let (rc, xc) = (row.chunks_exact(4), xs.chunks_exact(4));
            let (rr, xr) = (rc.remainder(), xc.remainder());
            for (l4, x4) in rc.zip(xc) {
                for t in 0..4 {
                    acc[t] += l4[t] * x4[t];
                }
            }
            for (t, (l, x)) in rr.iter().zip(xr).enumerate() {
                acc[t] += l * x;
            }
            x[i] -= (acc[0] + acc[1]) + (acc[2] + acc[3]);
        }
        for (x, d) in x.iter_mut().zip(&self.dinv[..n]) {
            *x *= d;
        }
        for i in (0..n).rev() {
            let (fi, si) = (self.first[i] as usize, self.start[i] as usize);
            let row = &self.l[si..si + (i - fi)];
            let xi = x[i];
            for (lij, xj) in row.iter().zip(&mut x[fi..i]) {
                *xj -= lij * xi;
            }
        }
        let len = lv.u.len();
        for (x, &s) in x.iter().zip(&self.split[..n]) {
            assert!((s as usize) < len);
            // SAFETY: in bounds (asserted); the caller's.
            unsafe { *u.add(s as usize) = *x as f32 };
        }
    }
}

/// The diagonal of cell `c` (stored by colour at `x`) in `f64`: with face weights, the level's
/// `f32` diagonal with its sum of the six weights replaced by their exact sum. The `f32` sum
/// rounds, so a region that touches no air had rows summing to a few `f32` ulps instead of
/// zero: its last pivot came out about `1e-6` of the diagonal, above [`NULL_PIVOT`], and its
/// inverse magnified the region's constant a million times in the cycle (session 30: a closed
/// tank filled to the brim around a static obstacle, every solve at its cap of 1,000 CG
/// iterations). With the exact sum the rows sum to zero up to `f64` rounding. Anything the
/// diagonal holds beyond the weights (the ghost-fluid air terms) is kept.
fn diagonal(lv: &Level, x: usize, c: usize) -> f64 {
    let stored = lv.diag[x] as f64;
    if lv.unit {
        return stored;
    }
    let st = lv.strides();
    let w = |a: usize, c: usize| lv.w[a][c];
    // The level's own sum, in its order (`diagonal.rs`), and the exact one.
    let rounded = w(0, c) + w(0, c + st[0]) + w(1, c) + w(1, c + st[1]) + w(2, c) + w(2, c + st[2]);
    let exact: f64 = (0..3)
        .map(|a| w(a, c) as f64 + w(a, c + st[a]) as f64)
        .sum();
    stored - rounded as f64 + exact
}

/// The weight of the lower face of natural cell `c` along axis `a` (1 on a level with unit
/// weights, whose open faces all weigh 1).
fn face_weight(lv: &Level, a: usize, c: usize) -> f64 {
    if lv.unit { 1.0 } else { lv.w[a][c] as f64 }
}
