//! One level of the multigrid hierarchy: its grid, the per-cell labels and face weights that
//! define its operator, and the vectors of a V-cycle, all `f32` and allocated once.
//!
//! Layout: cells `(i, j, k)` at `i + nx (j + ny k)` as on the simulation grid; the outermost
//! layer of every level is solid, so a fluid cell's six neighbours always exist. Each cell keeps
//! the weight of its *lower* face along each axis (`w[a][c]`, the face between `c - e_a` and
//! `c`); the upper face of `c` is the lower face of `c + e_a`. A weight is 0 where either side is
//! solid (a Neumann wall: the face drops out of the diagonal and the coupling), so the operator
//! of every level is, on a fluid cell,
//!
//! `(A u)_c = sum_f w_f (u_c - u_nb(f))`, with `u = 0` in air (Dirichlet) and solid cells,
//!
//! which on the finest level with unit weights is exactly the matrix of [`super::super::pressure`].
//! Per solve the levels are re-labelled ([`Level::setup_finest`], [`Level::setup_coarse`]);
//! each row of cells `(j, k)` keeps the span `[lo, hi)` of its fluid cells, and every loop of
//! the V-cycle visits only those spans, so the work follows the liquid, not the box.

use super::super::mac_grid::CellLabel;
use super::SyncPtr;
use rayon::prelude::*;

pub(super) const AIR: u8 = CellLabel::Empty as u8;
pub(super) const FLUID: u8 = CellLabel::Fluid as u8;
pub(super) const SOLID: u8 = CellLabel::Solid as u8;

/// Cells per rayon task of the per-solve set-up passes.
const SETUP_CELLS: usize = 8192;

pub(super) struct Level {
    /// Cells per axis.
    pub n: [usize; 3],
    /// Solution (correction) of this level.
    pub u: Vec<f32>,
    /// Right-hand side (on the finest level the scattered residual of CG).
    pub b: Vec<f32>,
    /// Residual `b - A u` after pre-smoothing.
    pub r: Vec<f32>,
    /// `1 / diag` on fluid cells with a non-zero diagonal, 0 elsewhere (the smoother's mask).
    pub invd: Vec<f32>,
    /// Weight of each cell's lower face along x, y, z (0 where either side is solid).
    pub w: [Vec<f32>; 3],
    /// `AIR`, `FLUID` or `SOLID` per cell.
    pub label: Vec<u8>,
    /// Per row `j + ny k`: `[lo, hi)` of its fluid cells along x (`lo == hi`: none).
    pub spans: Vec<[u32; 2]>,
}

impl Level {
    pub fn new(n: [usize; 3]) -> Self {
        let cells = n[0] * n[1] * n[2];
        let z = || vec![0.0f32; cells];
        Self {
            n,
            u: z(),
            b: z(),
            r: z(),
            invd: z(),
            w: [z(), z(), z()],
            label: vec![SOLID; cells],
            spans: vec![[0, 0]; n[1] * n[2]],
        }
    }

    pub fn cells(&self) -> usize {
        self.n[0] * self.n[1] * self.n[2]
    }

    /// Strides of the three axes.
    #[inline(always)]
    pub fn strides(&self) -> [usize; 3] {
        [1, self.n[0], self.n[0] * self.n[1]]
    }

    /// Rows per rayon task for a per-row loop of this level.
    pub fn rows_per_task(&self, cells: usize) -> usize {
        (cells / self.n[0]).max(1)
    }

    /// Labels and face weights of the finest level from the simulation's labels and the
    /// optional per-face weights (`weights[a]` on component `a`'s face grid, `n + e_a` nodes);
    /// then the diagonal, the spans, and zeroed vectors.
    pub fn setup_finest(&mut self, labels: &[CellLabel], weights: Option<&[Vec<f32>; 3]>) {
        let n = self.n;
        assert_eq!(labels.len(), self.cells());
        let per = self.rows_per_task(SETUP_CELLS);
        let lp = SyncPtr(self.label.as_mut_ptr());
        let wp: [SyncPtr<f32>; 3] = std::array::from_fn(|a| SyncPtr(self.w[a].as_mut_ptr()));
        let st = self.strides();
        if let Some(w) = weights {
            for a in 0..3 {
                let mut m = n;
                m[a] += 1;
                assert_eq!(w[a].len(), m[0] * m[1] * m[2], "face weights of axis {a}");
            }
        }
        (0..n[1] * n[2])
            .into_par_iter()
            .with_min_len(per)
            .for_each(|row| {
                let (j, k) = (row % n[1], row / n[1]);
                for i in 0..n[0] {
                    let c = i + n[0] * row;
                    let ijk = [i, j, k];
                    // The outermost layer is solid whatever the labels say (a fluid cell's six
                    // neighbours must exist).
                    let border = (0..3).any(|a| ijk[a] == 0 || ijk[a] + 1 == n[a]);
                    let solid = border || labels[c] == CellLabel::Solid;
                    // SAFETY: this task alone writes the cells of row `row`.
                    unsafe {
                        *lp.get(c) = if border { SOLID } else { labels[c] as u8 };
                        for a in 0..3 {
                            // The lower neighbour is in the solid border when ijk[a] == 1.
                            let open =
                                ijk[a] > 1 && !solid && labels[c - st[a]] != CellLabel::Solid;
                            let wf = match (open, weights) {
                                (false, _) => 0.0,
                                (true, None) => 1.0,
                                (true, Some(w)) => {
                                    let mut m = n;
                                    m[a] += 1;
                                    w[a][i + m[0] * (j + m[1] * k)].clamp(0.0, 1.0)
                                }
                            };
                            *wp[a].get(c) = wf;
                        }
                    }
                }
            });
        self.finish_setup();
    }

    /// Labels and face weights of this (coarse) level from the finer level `f`: coarse cell
    /// `I` covers fine cells `2I - 1` and `2I` along each axis (so the coarse wall layer covers
    /// the fine one); it is air if any child is air (McAdams et al. 2010, sec. 4: the Dirichlet
    /// boundary is kept where the liquid's surface is), else fluid if any child is fluid, else
    /// solid. A coarse face's weight is the mean of the four fine faces it covers (0 where
    /// either coarse side is solid).
    pub fn setup_coarse(&mut self, f: &Level) {
        let n = self.n;
        let fs = f.strides();
        let per = self.rows_per_task(SETUP_CELLS / 8);
        let lp = SyncPtr(self.label.as_mut_ptr());
        // Labels first (the weights need the neighbours' labels).
        (0..n[1] * n[2])
            .into_par_iter()
            .with_min_len(per)
            .for_each(|row| {
                let (j, k) = (row % n[1], row / n[1]);
                for i in 0..n[0] {
                    let (mut any_air, mut any_fluid) = (false, false);
                    for dk in 0..2 {
                        for dj in 0..2 {
                            for di in 0..2 {
                                let fi = [2 * i + di, 2 * j + dj, 2 * k + dk];
                                // Fine index 2I - 1 + d; out of the fine grid counts as solid.
                                if fi.iter().zip(&f.n).any(|(&x, &m)| x == 0 || x > m) {
                                    continue;
                                }
                                let fc =
                                    (fi[0] - 1) + f.n[0] * ((fi[1] - 1) + f.n[1] * (fi[2] - 1));
                                match f.label[fc] {
                                    AIR => any_air = true,
                                    FLUID => any_fluid = true,
                                    _ => {}
                                }
                            }
                        }
                    }
                    let on_border = i == 0
                        || j == 0
                        || k == 0
                        || i + 1 == n[0]
                        || j + 1 == n[1]
                        || k + 1 == n[2];
                    let l = if on_border {
                        SOLID
                    } else if any_air {
                        AIR
                    } else if any_fluid {
                        FLUID
                    } else {
                        SOLID
                    };
                    // SAFETY: this task alone writes the cells of row `row`.
                    unsafe { *lp.get(i + n[0] * row) = l };
                }
            });
        let st = self.strides();
        let label = &self.label;
        let wp: [SyncPtr<f32>; 3] = std::array::from_fn(|a| SyncPtr(self.w[a].as_mut_ptr()));
        (0..n[1] * n[2])
            .into_par_iter()
            .with_min_len(per)
            .for_each(|row| {
                let (j, k) = (row % n[1], row / n[1]);
                for i in 0..n[0] {
                    let c = i + n[0] * row;
                    let ijk = [i, j, k];
                    for a in 0..3 {
                        let open = ijk[a] > 0 && label[c] != SOLID && label[c - st[a]] != SOLID;
                        let mut wf = 0.0f32;
                        if open {
                            // The fine cells 2I - 1 along `a` (their lower faces lie on this
                            // coarse face), 2J - 1 + d across.
                            let (b1, b2) = ((a + 1) % 3, (a + 2) % 3);
                            let mut sum = 0.0f32;
                            for d2 in 0..2 {
                                for d1 in 0..2 {
                                    let mut fi = [0usize; 3];
                                    fi[a] = 2 * ijk[a] - 1;
                                    fi[b1] = 2 * ijk[b1] - 1 + d1;
                                    fi[b2] = 2 * ijk[b2] - 1 + d2;
                                    if fi.iter().zip(&f.n).all(|(&x, &m)| x < m) {
                                        sum += f.w[a][fi[0] + fs[1] * fi[1] + fs[2] * fi[2]];
                                    }
                                }
                            }
                            wf = 0.25 * sum;
                        }
                        // SAFETY: this task alone writes the cells of row `row`.
                        unsafe { *wp[a].get(c) = wf };
                    }
                }
            });
        self.finish_setup();
    }

    /// The inverse diagonal, the fluid spans, and zeroed `u`, `b`, `r` (cells that are not
    /// fluid must hold 0 in all three: the loops visit only the spans).
    fn finish_setup(&mut self) {
        let n = self.n;
        let st = self.strides();
        let per = self.rows_per_task(SETUP_CELLS);
        let (label, w) = (&self.label, &self.w);
        let cells = n[0];
        self.invd
            .par_chunks_mut(cells)
            .zip(self.spans.par_iter_mut())
            .zip(self.u.par_chunks_mut(cells))
            .zip(
                self.b
                    .par_chunks_mut(cells)
                    .zip(self.r.par_chunks_mut(cells)),
            )
            .with_min_len(per)
            .enumerate()
            .for_each(|(row, (((inv, span), u), (b, r)))| {
                u.fill(0.0);
                b.fill(0.0);
                r.fill(0.0);
                let (mut lo, mut hi) = (u32::MAX, 0u32);
                for i in 0..n[0] {
                    let c = i + n[0] * row;
                    inv[i] = 0.0;
                    if label[c] != FLUID {
                        continue;
                    }
                    let d = w[0][c]
                        + w[0][c + st[0]]
                        + w[1][c]
                        + w[1][c + st[1]]
                        + w[2][c]
                        + w[2][c + st[2]];
                    if d > 0.0 {
                        inv[i] = 1.0 / d;
                        lo = lo.min(i as u32);
                        hi = i as u32 + 1;
                    }
                }
                *span = if hi > 0 { [lo, hi] } else { [0, 0] };
            });
    }

    /// Fluid cells with a non-zero diagonal (the unknowns of this level).
    pub fn unknowns(&self) -> usize {
        self.invd.par_iter().filter(|&&x| x != 0.0).count()
    }
}
