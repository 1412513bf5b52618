//! One level of the multigrid hierarchy: its grid, the per-cell labels and face weights that
//! define its operator, and the vectors of a V-cycle, all `f32` and allocated once.
//!
//! Layout: cells `(i, j, k)` of row `j + ny k`; the outermost layer of every level is solid,
//! so a fluid cell's six neighbours always exist. The labels and the face weights are stored
//! naturally, at `i + nx (j + ny k)` as on the simulation grid; `u`, `b`, the residual `r`,
//! the diagonal and its inverse are stored **by colour** (red-black ordering: colour
//! `(i + j + k) % 2`), each row of each colour compact: cell `(i, j, k)` at
//! `colour * half + rs[row] + i / 2` ([`Level::split`]; where each row sits, `rs[row]`, is the
//! [`Layout`]'s, `layout.rs`: a plane's rows store only the cells its liquid's loops reach,
//! not the window's width). A cell's six neighbours are of the
//! other colour: along y and z at the same compact index in the rows `row +- 1`, `row +- ny`,
//! along x at compact `m - 1 + e` and `m + e` of its own row (`e = i % 2`). A red-black
//! half-sweep thus reads and writes only its colour's cells, in contiguous vector loops with
//! no lanes computed and discarded (with the natural layout half of every vector's lanes were
//! of the other colour). Each compact row has [`PAD`] spare entries past its last cell, so a
//! row's loop runs in whole vector chunks; cells that are not fluid (the padding included)
//! have a zero inverse diagonal and hold 0.
//! Each cell keeps the weight of its *lower* face along each axis (`w[a][c]`, the face
//! between `c - e_a` and `c`); the upper face of `c` is the lower face of `c + e_a`. A weight is
//! 0 where either side is solid (a Neumann wall: the face drops out of the diagonal and the
//! coupling), so the operator of every level is, on a fluid cell,
//!
//! `(A u)_c = sum_f w_f (u_c - u_nb(f))`, with `u = 0` in air (Dirichlet) and solid cells,
//!
//! which on the finest level with unit weights is exactly the matrix of [`super::super`].
//! Per solve the levels are re-labelled ([`Level::setup_finest`], [`Level::setup_coarse`]);
//! each row of cells `(j, k)` keeps the span `[lo, hi)` of its fluid cells, and every loop of
//! the V-cycle visits only those spans, so the work follows the liquid, not the box.

use super::super::super::mac_grid::CellLabel;
use super::layout::Layout;
use super::segments::Segments;
use rayon::prelude::*;

pub(super) const AIR: u8 = CellLabel::Empty as u8;
pub(super) const FLUID: u8 = CellLabel::Fluid as u8;
pub(super) const SOLID: u8 = CellLabel::Solid as u8;

/// Cells per rayon task of the per-solve set-up passes.
pub(super) const SETUP_CELLS: usize = 8192;

pub(super) use super::layout::{LANES, PAD};

/// Entries of one compact row of one colour for rows of `nx` cells (at least `nx / 2 + 1 +
/// PAD`, whole vector chunks).
pub(super) fn row_entries(nx: usize) -> usize {
    (nx / 2 + 1 + PAD).next_multiple_of(LANES)
}

pub(super) struct Level {
    /// Cells per axis.
    pub n: [usize; 3],
    /// Entries of the widest compact row of one colour (`nx / 2 + 1 + PAD` in whole chunks):
    /// the room before the first row and after the last (`layout.rs`).
    pub h: usize,
    /// Where each compact row is stored (`layout.rs`); colour 1 starts at `lay.half`.
    pub(super) lay: Layout,
    /// Solution (correction) of this level (by colour).
    pub u: Vec<f32>,
    /// Right-hand side (on the finest level the scattered residual of CG; by colour).
    pub b: Vec<f32>,
    /// Residual `b - A u` after pre-smoothing (by colour: a row's even and odd cells are its
    /// two colours' compact rows, which the restriction reads as they are).
    pub r: Vec<f32>,
    /// `1 / diag` on fluid cells with a non-zero diagonal, 0 elsewhere, the padding included
    /// (the smoother's mask; by colour).
    pub invd: Vec<f32>,
    /// The diagonal `sum_f w_f` on the same cells, 0 elsewhere (by colour).
    pub diag: Vec<f32>,
    /// With unit weights, each fluid cell's open faces (its diagonal, 0 to 6), 0 elsewhere (by
    /// colour; `diagonal.rs`); not written with fractional weights.
    pub count: Vec<u8>,
    /// `diag` equals `count` on every entry (unit weights and no ghost-fluid terms): the
    /// AVX2 loops then read the counts (`diagonal.rs`).
    pub int_diag: bool,
    /// Every open face has weight 1 (the finest level without fractional weights): the loops
    /// then read no weights, since `u` is 0 on air and solid cells, `sum_f w_f u_nb` is the
    /// plain sum of the six neighbours.
    pub unit: bool,
    /// Weight of each cell's lower face along x, y, z (0 where either side is solid).
    pub w: [Vec<f32>; 3],
    /// Per row `j + ny k`, with fractional weights: every face between a fluid cell of its
    /// span and a fluid neighbour has weight 1, so its loops may read no weights (the others
    /// multiply a `u` of 0; `diagonal.rs`). Away from the obstacles that is most rows: with
    /// them all weighted the cycle took 1.9x as long, with every weight 1 (`MG_FRACTIONAL=1`).
    pub unit_rows: Vec<bool>,
    /// `AIR`, `FLUID` or `SOLID` per cell.
    pub label: Vec<u8>,
    /// Per row `j + ny k`: `[lo, hi)` of its fluid cells along x (`lo == hi`: none).
    pub spans: Vec<[u32; 2]>,
    /// The spans cut at their long gaps: what the cycle's loops visit (`segments.rs`).
    pub(super) seg: Segments,
    /// The wavefronts' groups of stages decided since the last set-up, as `(stages, threads,
    /// groups)` (`groups` 0: one wavefront; `stages` 0: an empty entry): see
    /// [`Self::groups_memo`].
    pub(super) groups: [(u32, u32, u32); 4],
    /// The lengths [`Self::new`] gave the vectors and the weights (`redim.rs`).
    pub(super) alloc: [usize; 2],
}

impl Level {
    pub fn new(n: [usize; 3]) -> Self {
        let cells = n[0] * n[1] * n[2];
        let h = row_entries(n[0]);
        // The widest layout: every row `h` entries, after a margin of `h` (`layout.rs`), and
        // one spare row at the end (the prolongation reads whole chunks of the last rows).
        let len = 2 * (h + h * n[1] * n[2]) + h;
        let zs = || vec![0.0f32; len];
        let zw = || vec![0.0f32; cells + 2 * PAD];
        Self {
            n,
            h,
            lay: Layout::new(n, h),
            u: zs(),
            b: zs(),
            r: zs(),
            invd: zs(),
            diag: zs(),
            count: vec![0; len],
            int_diag: false,
            unit: false,
            // Spare entries past the grid: the red-black loops read the weights of the
            // padding cells of the last rows (times a zero inverse diagonal).
            w: [zw(), zw(), zw()],
            unit_rows: vec![false; n[1] * n[2]],
            label: vec![SOLID; cells],
            spans: vec![[0, 0]; n[1] * n[2]],
            seg: Segments::new(n),
            groups: [(0, 0, 0); 4],
            alloc: [len, cells + 2 * PAD],
        }
    }

    pub fn cells(&self) -> usize {
        self.n[0] * self.n[1] * self.n[2]
    }

    /// Strides of the three axes (natural layout).
    #[inline(always)]
    pub fn strides(&self) -> [usize; 3] {
        [1, self.n[0], self.n[0] * self.n[1]]
    }

    /// Index of cell `(i, j, k)` in the arrays stored by colour.
    #[inline(always)]
    pub fn split(&self, i: usize, j: usize, k: usize) -> usize {
        self.bases(j, k, i)[i & 1] + (i >> 1)
    }

    /// Where the cells of row `(j, k)` in the stored range that holds cell `x` are: cell `i`
    /// of that range at `bases[i % 2] + i / 2` (`layout.rs`).
    #[inline(always)]
    pub fn bases(&self, j: usize, k: usize, x: usize) -> [usize; 2] {
        let row = j + self.n[1] * k;
        let p = (j + k) & 1;
        [self.crow_at(p, row, x), self.crow_at(1 - p, row, x)]
    }

    /// Virtual start of compact row `row` of colour `colour` in the stored range that holds
    /// cell `x` (the range's cell `i` at `+ i / 2`; the row's stored entries begin at
    /// [`Layout::stored`]).
    #[inline(always)]
    pub fn crow_at(&self, colour: usize, row: usize, x: usize) -> usize {
        colour * self.lay.half + self.lay.start(row, x)
    }

    /// Rows per rayon task for a per-row loop of this level.
    pub fn rows_per_task(&self, cells: usize) -> usize {
        (cells / self.n[0]).max(1)
    }

    /// Labels and face weights of the finest level, the window `win` of the simulation's
    /// labels and of the optional per-face weights (`weights[a]` on component `a`'s face grid,
    /// `full + e_a` nodes; this level has `win.n` cells); then the diagonal, the spans, and
    /// zeroed vectors.
    pub fn setup_finest(
        &mut self,
        labels: &[CellLabel],
        weights: Option<&[Vec<f32>; 3]>,
        win: &super::window::Window,
    ) {
        let (n, full, lo) = (self.n, win.full, win.lo);
        assert_eq!(n, win.n);
        assert_eq!(labels.len(), full.iter().product::<usize>());
        if let Some(w) = weights {
            for a in 0..3 {
                let mut m = full;
                m[a] += 1;
                assert_eq!(w[a].len(), m[0] * m[1] * m[2], "face weights of axis {a}");
            }
        }
        self.clear_spans();
        let per = self.rows_per_task(SETUP_CELLS);
        let nx = n[0];
        // Labels, row by row; the outermost layer is solid whatever the labels say (a fluid
        // cell's six neighbours must exist).
        self.label
            .par_chunks_mut(nx)
            .enumerate()
            .with_min_len(per)
            .for_each(|(row, out)| {
                let (j, k) = (row % n[1], row / n[1]);
                if j == 0 || k == 0 || j + 1 == n[1] || k + 1 == n[2] {
                    out.fill(SOLID);
                    return;
                }
                let src = lo[0] + full[0] * (j + lo[1] + full[1] * (k + lo[2]));
                for (o, l) in out.iter_mut().zip(&labels[src..src + nx]) {
                    *o = *l as u8;
                }
                out[0] = SOLID;
                out[nx - 1] = SOLID;
            });
        self.unit = weights.is_none();
        if self.unit {
            // The loops read no weights (see `unit`).
            self.finish_setup(None);
            return;
        }
        let label = &self.label;
        let st = self.strides();
        let cells = self.cells();
        weight_rows(&mut self.w, cells, nx)
            .with_min_len(per)
            .for_each(|(row, (x, (y, z)))| {
                let (j, k) = (row % n[1], row / n[1]);
                let o = nx * row;
                let l = &label[o..o + nx];
                // The rows below along y and z (this row again on the border: its faces there
                // are closed anyway, the cell being solid).
                let ly = &label[o - if j > 0 { st[1] } else { 0 }..][..nx];
                let lz = &label[o - if k > 0 { st[2] } else { 0 }..][..nx];
                let face = |a: usize, i: usize| -> f32 {
                    match weights {
                        None => 1.0,
                        Some(w) => {
                            let mut m = full;
                            m[a] += 1;
                            let (i, j, k) = (i + lo[0], j + lo[1], k + lo[2]);
                            w[a][i + m[0] * (j + m[1] * k)].clamp(0.0, 1.0)
                        }
                    }
                };
                x[0] = 0.0;
                for i in 1..nx {
                    let open = l[i] != SOLID && l[i - 1] != SOLID;
                    x[i] = if open { face(0, i) } else { 0.0 };
                }
                for i in 0..nx {
                    let open = l[i] != SOLID && ly[i] != SOLID && j > 0;
                    y[i] = if open { face(1, i) } else { 0.0 };
                    let open = l[i] != SOLID && lz[i] != SOLID && k > 0;
                    z[i] = if open { face(2, i) } else { 0.0 };
                }
            });
        self.finish_setup(None);
    }

    /// Labels and face weights of this (coarse) level from the finer level `f`: coarse cell
    /// `I` covers fine cells `2I - 1` and `2I` along each axis (so the coarse wall layer covers
    /// the fine one); it is air if any child is air (McAdams et al. 2010, sec. 4: the Dirichlet
    /// boundary is kept where the liquid's surface is), else fluid if any child is fluid, else
    /// solid. A coarse face's weight is the mean of the four fine faces it covers (0 where
    /// either coarse side is solid).
    pub fn setup_coarse(&mut self, f: &Level) {
        let n = self.n;
        let nx = n[0];
        let fnx = f.n[0];
        self.clear_spans();
        let per = self.rows_per_task(SETUP_CELLS / 8);
        // The fine row (2J - 1 + dj, 2K - 1 + dk) of coarse row (J, K), if in the fine grid.
        let fine_row = |j: usize, k: usize, dj: usize, dk: usize| -> Option<usize> {
            let (fj, fk) = (2 * j + dj, 2 * k + dk);
            (fj >= 1 && fk >= 1 && fj <= f.n[1] && fk <= f.n[2])
                .then(|| fnx * ((fj - 1) + f.n[1] * (fk - 1)))
        };
        // Labels first (the weights need the neighbours' labels). An interior coarse row's
        // four fine rows and an interior coarse cell's two fine cells per row (fine x `2i - 1`,
        // `2i`) all lie in the fine grid; the border rows and cells are solid.
        // Bit 0: a fluid child, bit 1: an air child: `2 - x` for the labels' values (AIR 0,
        // FLUID 1, SOLID 2), OR-ed over the four fine rows a line at a time, then over each
        // coarse cell's two fine cells; the label is `2 - min(bits, 2)` (AIR if an air child,
        // else FLUID if a fluid child, else SOLID). Loops the compiler vectorises.
        const _: () = assert!(AIR == 0 && FLUID == 1 && SOLID == 2);
        const BLOCK: usize = 128;
        self.label
            .par_chunks_mut(nx)
            .enumerate()
            .with_min_len(per)
            .for_each(|(row, out)| {
                let (j, k) = (row % n[1], row / n[1]);
                out.fill(SOLID);
                if j == 0 || k == 0 || j + 1 == n[1] || k + 1 == n[2] {
                    return;
                }
                let fl = [(0, 0), (1, 0), (0, 1), (1, 1)].map(|(dj, dk)| {
                    let fr = fine_row(j, k, dj, dk).expect("an interior row's fine rows");
                    &f.label[fr..fr + fnx]
                });
                // Coarse cells i0 .. i1 cover fine cells 2 i0 - 1 .. 2 i1 - 1.
                let mut i0 = 1;
                while i0 < nx - 1 {
                    let i1 = (i0 + BLOCK).min(nx - 1);
                    let (a, b) = (2 * i0 - 1, 2 * i1 - 1);
                    let mut t = [0u8; 2 * BLOCK];
                    let t = &mut t[..b - a];
                    for l in &fl {
                        for (t, &x) in t.iter_mut().zip(&l[a..b]) {
                            *t |= 2 - x;
                        }
                    }
                    for (o, p) in out[i0..i1].iter_mut().zip(t.chunks_exact(2)) {
                        *o = 2 - (p[0] | p[1]).min(2);
                    }
                    i0 = i1;
                }
            });
        // Without fractional weights on the finest level, every level's open faces have weight
        // 1 (McAdams et al.: the coarse operators are the plain Poisson stencil on the coarse
        // labels); otherwise coarse weights are the fine ones averaged.
        self.unit = f.unit;
        if self.unit {
            self.finish_setup(Some(f));
            return;
        }
        let st = self.strides();
        let label = &self.label;
        let cells = self.cells();
        weight_rows(&mut self.w, cells, nx)
            .with_min_len(per)
            .for_each(|(row, (x, (y, z)))| {
                let (j, k) = (row % n[1], row / n[1]);
                x.fill(0.0);
                y.fill(0.0);
                z.fill(0.0);
                let border = j == 0 || k == 0 || j + 1 == n[1] || k + 1 == n[2];
                if border {
                    return;
                }
                let o = nx * row;
                let l = &label[o..o + nx];
                let (ly, lz) = (&label[o - st[1]..][..nx], &label[o - st[2]..][..nx]);
                // x faces: fine x faces at fine x 2I - 1, four fine rows (dj, dk).
                // y faces: fine rows (2J - 1, 2K - 1 + dk), fine x 2I - 1 + di.
                // z faces: fine rows (2J - 1 + dj, 2K - 1), fine x 2I - 1 + di.
                for (dj, dk) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let Some(fr) = fine_row(j, k, dj, dk) else {
                        continue;
                    };
                    let fw = [
                        &f.w[0][fr..fr + fnx],
                        &f.w[1][fr..fr + fnx],
                        &f.w[2][fr..fr + fnx],
                    ];
                    for i in 1..nx - 1 {
                        let (a, b) = (2 * i - 1, 2 * i);
                        let get = |w: &[f32], x: usize| if x < fnx { w[x] } else { 0.0 };
                        x[i] += get(fw[0], a);
                        if dj == 0 {
                            y[i] += get(fw[1], a) + get(fw[1], b);
                        }
                        if dk == 0 {
                            z[i] += get(fw[2], a) + get(fw[2], b);
                        }
                    }
                }
                for i in 0..nx {
                    let c = l[i] != SOLID;
                    x[i] = if c && i > 0 && l[i - 1] != SOLID {
                        0.25 * x[i]
                    } else {
                        0.0
                    };
                    y[i] = if c && ly[i] != SOLID {
                        0.25 * y[i]
                    } else {
                        0.0
                    };
                    z[i] = if c && lz[i] != SOLID {
                        0.25 * z[i]
                    } else {
                        0.0
                    };
                }
            });
        self.finish_setup(Some(f));
    }

    /// The groups of stages of a wavefront of `stages` stages on `threads` threads over this
    /// level's liquid (`super::slabs::stage_groups`, computed by `decide` the first time after
    /// each set-up: it visits every row several times, serially, more than a coarse level's
    /// smoothing costs if repeated at every visit).
    pub fn groups_memo(
        &mut self,
        stages: usize,
        threads: usize,
        decide: impl FnOnce(&Self) -> Option<usize>,
    ) -> Option<usize> {
        let key = (stages as u32, threads as u32);
        if let Some(&(_, _, g)) = self.groups.iter().find(|e| (e.0, e.1) == key) {
            return (g > 0).then_some(g as usize);
        }
        let g = decide(self);
        if let Some(e) = self.groups.iter_mut().find(|e| e.0 == 0) {
            *e = (key.0, key.1, g.unwrap_or(0) as u32);
        }
        g
    }

    /// Zeroes `u`, `b` and `r` on the compact rows that hold a non-empty current span: after
    /// it every cell holds 0 in all three (rows with an empty span are never written), as a
    /// new system needs.
    fn clear_spans(&mut self) {
        let fs = [&mut self.u[..], &mut self.b[..], &mut self.r[..]];
        self.lay.zero(fs, None, &self.seg, true);
    }

    /// Fluid cells with a non-zero diagonal (the unknowns of this level).
    pub fn unknowns(&self) -> usize {
        self.invd.par_iter().filter(|&&x| x != 0.0).count()
    }
}

/// A row number and that row of the three face-weight arrays.
type WeightRow<'a> = (usize, (&'a mut [f32], (&'a mut [f32], &'a mut [f32])));

/// The rows (of `nx` cells, numbered) of the three face-weight arrays' first `cells` entries,
/// in parallel: `(row, (x, (y, z)))`.
fn weight_rows(
    w: &mut [Vec<f32>; 3],
    cells: usize,
    nx: usize,
) -> impl IndexedParallelIterator<Item = WeightRow<'_>> {
    let [w0, w1, w2] = w;
    w0[..cells]
        .par_chunks_mut(nx)
        .zip(
            w1[..cells]
                .par_chunks_mut(nx)
                .zip(w2[..cells].par_chunks_mut(nx)),
        )
        .enumerate()
}

/// Whether the CPU has AVX2 (always false off x86_64).
pub(super) fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}
