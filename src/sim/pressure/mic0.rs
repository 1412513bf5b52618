//! MIC(0): the modified incomplete Cholesky preconditioner of Bridson, *Fluid Simulation for
//! Computer Graphics* (2nd ed., 2015), fig. 5.7, with `tau = 0.97` and safety `sigma = 0.25`,
//! applied block-Jacobi style on up to [`BLOCKS`] slabs of whole z-planes of at least
//! [`BLOCK_ROWS`] unknowns each (so large systems run their triangular solves in parallel; the
//! couplings between slabs are left to CG; small systems are one block, plain MIC(0)). Each
//! block's triangular solves run in lexicographic order and the blocks depend on the fluid
//! cells only, so results are thread-independent.
//!
//! Layer 2 (sim::pressure): one implementation of [`Preconditioner`].

use super::super::mac_grid::CellLabel;
use super::super::sync_ptr::SyncPtr;
use super::preconditioner::Preconditioner;
use super::system::{System, is_cut};
use rayon::prelude::*;

const TAU: f64 = 0.97;
const SIGMA: f64 = 0.25;
/// Independent blocks of the MIC(0) preconditioner (a constant, so results do not depend on
/// the thread count).
pub const BLOCKS: usize = 8;
/// Fewest rows per preconditioner block.
pub const BLOCK_ROWS: usize = 64 * 1024;

/// Runs `f(b, &mut out[b])` for every preconditioner block `b` of `blocks` (row bounds),
/// in parallel when more than one block holds rows; a system that is one block runs on this
/// thread, without a hand-off to the pool (same result either way).
fn for_each_block<T: Send>(
    blocks: &[u32; BLOCKS + 1],
    out: &mut [T; BLOCKS],
    f: impl Fn(usize, &mut T) + Sync,
) {
    let used = (0..BLOCKS).filter(|&b| blocks[b] < blocks[b + 1]).count();
    if used <= 1 {
        out.iter_mut().enumerate().for_each(|(b, o)| f(b, o));
    } else {
        out.par_iter_mut().enumerate().for_each(|(b, o)| f(b, o));
    }
}

/// The forward sweep of MIC(0) over rows `s..e` of one block, shared by
/// [`Mic0::apply`](Preconditioner::apply) and the fused CG step: `tmp_i = p2_i (r_i + sum
/// tmp_nb)` over the lower neighbours in the block, with `r_i = rhs(i)` (called once per row,
/// in order, just before the row is used: the fused step updates the row there).
///
/// The x neighbour is usually the row just computed: it is taken from a register (`prev`)
/// rather than reloaded from memory and added last, so the sweep's serial dependency chain is
/// one add and one multiply per row.
///
/// # Safety
/// Rows `s..e` of `tmp` belong to the calling block only, every neighbour index in `nb[s..e]`
/// is a valid row, and `tmp` holds 0 at the dummy row.
///
/// `W`: the rows carry face weights `w` (Batty 2007), which multiply the neighbours' values
/// (the off-diagonals are `-w`), read only for the rows marked in `cut` (the others' weights
/// are 1); without, neither is read.
///
/// With weights the rows go in runs of one word of `cut` (64 rows): a run without a cut row
/// takes the unweighted loop (the same operations as testing each row), the running `prev`
/// carried from run to run.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn forward_sweep<const W: bool>(
    s: usize,
    e: usize,
    nb: &[[u32; 6]],
    w: &[[f32; 6]],
    cut: &[u64],
    p2: &[f64],
    tp: SyncPtr<f64>,
    mut rhs: impl FnMut(usize) -> f64,
) {
    if !W {
        // SAFETY: the caller's.
        unsafe { forward_rows::<false>(s, e, s, e, 0.0, nb, w, cut, p2, tp, &mut rhs) };
        return;
    }
    let (mut prev, mut i) = (0.0f64, s);
    while i < e {
        let j = ((i & !63) + 64).min(e);
        // SAFETY: the caller's.
        prev = unsafe {
            if cut[i >> 6] == 0 {
                forward_rows::<false>(s, e, i, j, prev, nb, w, cut, p2, tp, &mut rhs)
            } else {
                forward_rows::<true>(s, e, i, j, prev, nb, w, cut, p2, tp, &mut rhs)
            }
        };
        i = j;
    }
}

/// Rows `i0..i1` of [`forward_sweep`]'s block `s..e`, from the value `prev` of row `i0 - 1`;
/// returns row `i1 - 1`'s.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn forward_rows<const W: bool>(
    s: usize,
    e: usize,
    i0: usize,
    i1: usize,
    mut prev: f64,
    nb: &[[u32; 6]],
    w: &[[f32; 6]],
    cut: &[u64],
    p2: &[f64],
    tp: SyncPtr<f64>,
    rhs: &mut impl FnMut(usize) -> f64,
) -> f64 {
    for i in i0..i1 {
        let ri = rhs(i);
        let [xm, _, ym, _, zm, _] = nb[i];
        // Only the cut rows read their weights (the others' are 1, see `System::cut`).
        let cw = W && is_cut(cut, i);
        let wt = |k: usize| if cw { w[i][k] as f64 } else { 1.0 };
        // SAFETY: the caller's; x and y neighbours share the plane, hence the block.
        unsafe {
            let xv = if xm as usize + 1 == i {
                prev
            } else {
                *tp.get(xm as usize)
            };
            let (xv, yv) = if cw {
                (wt(0) * xv, wt(2) * *tp.get(ym as usize))
            } else {
                (xv, *tp.get(ym as usize))
            };
            let mut t = ri + yv;
            if (zm as usize) >= s && (zm as usize) < e {
                t += if cw {
                    wt(4) * *tp.get(zm as usize)
                } else {
                    *tp.get(zm as usize)
                };
            }
            prev = (t + xv) * p2[i];
            *tp.get(i) = prev;
        }
    }
    prev
}

/// The backward sweep of MIC(0) over rows `s..e` of one block: `z = tmp + precon^2 (U z)`,
/// shared by [`Mic0::apply`](Preconditioner::apply) and the fused CG step; returns `z . r` over
/// the block, summed from the last row to the first.
///
/// # Safety
/// Rows `s..e` of `tmp`, `z` and `r` belong to the calling block only, and every neighbour
/// index in `nb[s..e]` is a valid row.
///
/// With weights, runs of 64 rows as in [`forward_sweep`] (from the last run to the first).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn backward_sweep<const W: bool>(
    s: usize,
    e: usize,
    nb: &[[u32; 6]],
    w: &[[f32; 6]],
    cut: &[u64],
    p2: &[f64],
    tp: SyncPtr<f64>,
    zp_: SyncPtr<f64>,
    r: *const f64,
) -> f64 {
    if !W {
        // SAFETY: the caller's.
        return unsafe {
            backward_rows::<false>(e, s, e, (0.0, 0.0), nb, w, cut, p2, tp, zp_, r).1
        };
    }
    let (mut acc, mut j) = ((0.0f64, 0.0f64), e);
    while j > s {
        let i = ((j - 1) & !63).max(s);
        // SAFETY: the caller's.
        acc = unsafe {
            if cut[i >> 6] == 0 {
                backward_rows::<false>(e, i, j, acc, nb, w, cut, p2, tp, zp_, r)
            } else {
                backward_rows::<true>(e, i, j, acc, nb, w, cut, p2, tp, zp_, r)
            }
        };
        j = i;
    }
    acc.1
}

/// Rows `i1 - 1` down to `i0` of [`backward_sweep`]'s block (ending at `e`), from `(prev, dot)` after
/// row `i1`; returns them after row `i0`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn backward_rows<const W: bool>(
    e: usize,
    i0: usize,
    i1: usize,
    (mut prev, mut dot): (f64, f64),
    nb: &[[u32; 6]],
    w: &[[f32; 6]],
    cut: &[u64],
    p2: &[f64],
    tp: SyncPtr<f64>,
    zp_: SyncPtr<f64>,
    r: *const f64,
) -> (f64, f64) {
    unsafe {
        for i in (i0..i1).rev() {
            let [_, xp, _, yp, _, zp] = nb[i];
            let cw = W && is_cut(cut, i);
            let xv = if xp as usize == i + 1 && i + 1 < e {
                prev
            } else {
                *zp_.get(xp as usize)
            };
            let (xv, mut acc) = if cw {
                let wi = w[i];
                (wi[1] as f64 * xv, wi[3] as f64 * *zp_.get(yp as usize))
            } else {
                (xv, *zp_.get(yp as usize))
            };
            if (zp as usize) < e {
                acc += if cw {
                    w[i][5] as f64 * *zp_.get(zp as usize)
                } else {
                    *zp_.get(zp as usize)
                };
            }
            let zi = *tp.get(i) + p2[i] * (acc + xv);
            prev = zi;
            *zp_.get(i) = zi;
            dot += zi * *r.add(i);
        }
    }
    (prev, dot)
}

/// The MIC(0) preconditioner and its buffers.
pub struct Mic0 {
    /// `precon^2 = 1 / e` per row (+ dummy).
    precon: Vec<f64>,
    /// The forward sweep's `w = p2 t` per row (+ dummy, 0).
    tmp: Vec<f64>,
    /// First row of each block, then `nf`.
    blocks: [u32; BLOCKS + 1],
    /// Fewest rows per block (default [`BLOCK_ROWS`]; tests lower it).
    pub block_rows: usize,
}

impl Mic0 {
    /// Buffers for a grid of `cells` cells (every cell fluid at most).
    pub fn new(cells: usize) -> Self {
        Self {
            precon: vec![0.0; cells + 1],
            tmp: vec![0.0; cells + 1],
            blocks: [0; BLOCKS + 1],
            block_rows: BLOCK_ROWS,
        }
    }

    /// Splits the rows into up to [`BLOCKS`] contiguous blocks of whole z-planes, about equal
    /// in rows and at least [`BLOCK_ROWS`] rows each (fewer, larger blocks converge faster).
    fn build_blocks(&mut self, sys: &System) {
        let nf = sys.nf as u32;
        let starts = &sys.plane_rows;
        let used = (nf as usize / self.block_rows.max(1)).clamp(1, BLOCKS);
        self.blocks[0] = 0;
        let mut k = 0;
        for b in 1..BLOCKS {
            let target = (b.min(used) as u64 * nf as u64 / used as u64) as u32;
            while k + 1 < starts.len() && starts[k] < target {
                k += 1;
            }
            self.blocks[b] = starts[k].max(self.blocks[b - 1]);
        }
        self.blocks[BLOCKS] = nf;
    }

    /// MIC(0) preconditioner values (Bridson fig. 5.7), in row (lexicographic) order within
    /// each block; couplings between blocks are dropped (block-Jacobi MIC(0)). Stores the
    /// square of Bridson's `precon`, `1 / e`, which is all the solves need.
    fn build_precon(&mut self, sys: &System) {
        self.build_blocks(sys);
        let nf = sys.nf;
        let (nb, dg, blocks) = (&sys.nb, &sys.diag, &self.blocks);
        let pc = SyncPtr(self.precon.as_mut_ptr());
        for_each_block(blocks, &mut [(); BLOCKS], |b, _| {
            let (s, e) = (blocks[b] as usize, blocks[b + 1] as usize);
            let inb = |r: u32| (r as usize) >= s && (r as usize) < e;
            let fl = |r: u32| inb(r) as u32 as f64;
            // SAFETY: this task reads and writes only rows s..e of `precon` (neighbours outside
            // the block are skipped), disjoint from every other block's rows.
            let get = |r: u32| {
                if inb(r) {
                    unsafe { *pc.get(r as usize) }
                } else {
                    0.0
                }
            };
            for r in s..e {
                let [xm, _, ym, _, zm, _] = nb[r];
                // Stored values are precon^2 = 1 / e (see `Mic0::apply`).
                let (pi2, pj2, pk2) = (get(xm), get(ym), get(zm));
                let diag = dg[r];
                if sys.fractional {
                    // Bridson fig. 5.7 with general coefficients: A(r, nb) = -w.
                    let w = &sys.w;
                    let a = |k: usize, m: u32| w[r][k] as f64 * fl(m);
                    let (ax, ay, az) = (a(0, xm), a(2, ym), a(4, zm));
                    let mut e_ = diag - ax * ax * pi2 - ay * ay * pj2 - az * az * pk2;
                    let plus = |m: u32, k1: usize, k2: usize| {
                        if inb(m) {
                            let (q, wq) = (nb[m as usize], w[m as usize]);
                            wq[k1] as f64 * fl(q[k1]) + wq[k2] as f64 * fl(q[k2])
                        } else {
                            0.0
                        }
                    };
                    e_ -= TAU
                        * (ax * pi2 * plus(xm, 3, 5)
                            + ay * pj2 * plus(ym, 1, 5)
                            + az * pk2 * plus(zm, 1, 3));
                    if e_ < SIGMA * diag {
                        e_ = diag;
                    }
                    unsafe { *pc.get(r) = 1.0 / e_ };
                    continue;
                }
                let mut e_ = diag - pi2 - pj2 - pk2;
                // A_plus products: the -x neighbour's +y and +z neighbours being fluid (and in
                // the block), etc.
                let ex = if inb(xm) {
                    let q = nb[xm as usize];
                    fl(q[3]) + fl(q[5])
                } else {
                    0.0
                };
                let ey = if inb(ym) {
                    let q = nb[ym as usize];
                    fl(q[1]) + fl(q[5])
                } else {
                    0.0
                };
                let ez = if inb(zm) {
                    let q = nb[zm as usize];
                    fl(q[1]) + fl(q[3])
                } else {
                    0.0
                };
                e_ -= TAU * (pi2 * ex + pj2 * ey + pk2 * ez);
                if e_ < SIGMA * diag {
                    e_ = diag;
                }
                unsafe { *pc.get(r) = 1.0 / e_ };
            }
        });
        self.precon[nf] = 0.0;
    }
}

impl Preconditioner for Mic0 {
    fn setup(&mut self, sys: &System, _labels: &[CellLabel], _open: Option<&[Vec<f32>; 3]>) {
        let n1 = sys.nf + 1;
        for v in [&mut self.precon, &mut self.tmp] {
            if v.len() < n1 {
                v.resize(n1, 0.0);
            }
            v[sys.nf] = 0.0;
        }
        self.build_precon(sys);
    }

    // No `begin_solve`: the forward sweep writes every row of `tmp` before any row reads it
    // (a row reads its lower neighbours in its own block, and the dummy row, which holds 0),
    // so `tmp` needs no clearing between solves.

    /// `z = M^-1 r`; returns `z . r`, summed in the same pass (per block in row order, the
    /// blocks in order: thread-independent).
    fn apply(&mut self, sys: &System, r: &[f64], z: &mut [f64], _partials: &mut [f64]) -> f64 {
        let (blocks, nb, p2) = (&self.blocks, &sys.nb, &self.precon);
        let tmp = &mut self.tmp;
        let (tp, zp_) = (SyncPtr(tmp.as_mut_ptr()), SyncPtr(z.as_mut_ptr()));
        let mut sums = [0.0f64; BLOCKS];
        // Bridson's fig. 5.7 with `p` his `precon` and `p2 = p^2` (what is stored):
        // forward `t_i = r_i + sum_{j<i} p_j q_j`, `q_i = p_i t_i`; backward
        // `z_i = p_i (q_i + p_i sum_{j>i} z_j)`. With `w_i = p_i q_i = p2_i t_i` kept in
        // `tmp`: forward `w_i = p2_i (r_i + sum_{j<i} w_j)`, backward
        // `z_i = w_i + p2_i sum_{j>i} z_j`: one multiply-add per row.
        for_each_block(blocks, &mut sums, |b, sum| {
            let (s, e) = (blocks[b] as usize, blocks[b + 1] as usize);
            // SAFETY: rows s..e of `tmp` and `z` belong to this block only; neighbours outside
            // it are skipped; the dummy row `nf` is only read (it holds 0).
            unsafe {
                if sys.fractional {
                    forward_sweep::<true>(s, e, nb, &sys.w, &sys.cut, p2, tp, |i| r[i]);
                    *sum =
                        backward_sweep::<true>(s, e, nb, &sys.w, &sys.cut, p2, tp, zp_, r.as_ptr());
                } else {
                    forward_sweep::<false>(s, e, nb, &[], &[], p2, tp, |i| r[i]);
                    *sum = backward_sweep::<false>(s, e, nb, &[], &[], p2, tp, zp_, r.as_ptr());
                }
            }
        });
        sums.iter().sum()
    }

    /// One CG step fused with the next preconditioner application: `q += alpha s`,
    /// `r -= alpha z` (`z` holds `A s` on entry), `z = M^-1 r`; returns `(z . r, max |r|)`.
    /// The update of row `i` is done in the forward sweep just before the row is used, saving a
    /// pass over four vectors; the operations and their order per row are those of the
    /// separate passes, so the bits are the same. (The last application is wasted.)
    #[allow(clippy::too_many_arguments)]
    fn step_and_apply(
        &mut self,
        sys: &System,
        alpha: f64,
        q: &mut [f64],
        s: &[f64],
        r: &mut [f64],
        z: &mut [f64],
        _partials: &mut [f64],
        _stop_at: f64,
    ) -> (f64, f64) {
        let (blocks, nb, p2) = (&self.blocks, &sys.nb, &self.precon);
        let tmp = &mut self.tmp;
        let (tp, zp_) = (SyncPtr(tmp.as_mut_ptr()), SyncPtr(z.as_mut_ptr()));
        let (qp, rp) = (SyncPtr(q.as_mut_ptr()), SyncPtr(r.as_mut_ptr()));
        let mut sums = [(0.0f64, 0.0f64); BLOCKS];
        for_each_block(blocks, &mut sums, |b, out| {
            let (st, e) = (blocks[b] as usize, blocks[b + 1] as usize);
            // SAFETY: as in `Mic0::apply`; rows st..e of `q`, `r`, `tmp` and `z` belong to this
            // block only, and `z` (holding `A s`) is read at row i before the backward sweep
            // overwrites it.
            let mut rmax = 0.0f64;
            // SAFETY: as below; row i belongs to this block.
            let update = |i: usize| unsafe {
                *qp.get(i) += alpha * s[i];
                let ri = *rp.get(i) - alpha * *zp_.get(i);
                *rp.get(i) = ri;
                ri
            };
            unsafe {
                if sys.fractional {
                    let (w, cut) = (&sys.w, &sys.cut);
                    forward_sweep::<true>(st, e, nb, w, cut, p2, tp, |i| {
                        let ri = update(i);
                        rmax = rmax.max(ri.abs());
                        ri
                    });
                    *out = (
                        backward_sweep::<true>(st, e, nb, w, cut, p2, tp, zp_, rp.0),
                        rmax,
                    );
                } else {
                    forward_sweep::<false>(st, e, nb, &[], &[], p2, tp, |i| {
                        let ri = update(i);
                        rmax = rmax.max(ri.abs());
                        ri
                    });
                    *out = (
                        backward_sweep::<false>(st, e, nb, &[], &[], p2, tp, zp_, rp.0),
                        rmax,
                    );
                }
            }
        });
        let dot = sums.iter().map(|x| x.0).sum();
        let rmax = sums.iter().map(|x| x.1).fold(0.0, f64::max);
        (dot, rmax)
    }
}
