//! The red-black Gauss-Seidel smoother of the V-cycle, as a wavefront over z-planes that runs
//! all the half-sweeps of one smoothing in one pass over the level (temporal blocking), and
//! optionally the residual after the pre-smoothing or the prolongation before the
//! post-smoothing in the same pass (one pass over the finest grid's planes fewer each). Every
//! stored value has the bits of the plain loops one after the other (`half_sweep`,
//! `kernels::residual`, `kernels::prolong_add`), whatever the thread count.
//!
//! The levels store `u`, `b` and the diagonals by colour (`level.rs`), so a half-sweep runs
//! over its colour's compact rows in whole vector chunks with every lane a cell it updates
//! (with the natural layout half of the lanes were computed and discarded); the residual is
//! computed and stored per colour (the restriction reads a row's even and odd cells as its
//! two colours' compact rows); the prolongation sums the coarse rows' two colours into a
//! natural line and adds it to the fine row's two colours. With AVX2 the unit-weight loops
//! use its intrinsics (no fused multiply-adds: the plain loops' operations and bits).

use super::SyncPtr;
use super::level::{LANES, Level, has_avx2};
use super::segments::{Seg, Segments};
use super::taps::coarse_taps;
use reach::Nb;
#[cfg(test)]
pub(super) use stages::relaxation;
pub(super) use stages::{Extra, Stage, Stages, liquid_planes};

/// Where a segment's neighbour rows are (`layout.rs`): [`Nb`].
mod reach;

/// The stages of a wavefront ([`Stages`]).
mod stages;

/// Fine compact cells per block of the prolongation's line buffer, and that buffer.
const LINE: usize = 128;
pub(super) type ProlongLine = [f32; LINE + 4 + 2 * LANES];

/// What a Gauss-Seidel half-sweep reads and writes of one level.
pub(super) struct Sweep<'a> {
    pub(super) n: [usize; 3],
    /// The colour offset (`lay.half`, `layout.rs`).
    half: usize,
    up: SyncPtr<f32>,
    /// The residual's output (`r`, by colour).
    rp: SyncPtr<f32>,
    b: &'a [f32],
    invd: &'a [f32],
    diag: &'a [f32],
    /// The open-face counts, read in place of `invd` and `diag` where `int` ([`Level::count`]).
    count: &'a [u8],
    int: bool,
    w: &'a [Vec<f32>; 3],
    unit: bool,
    /// Per row, whether its loops may read no weights ([`Level::unit_rows`]).
    unit_rows: &'a [bool],
    pub(super) spans: &'a [[u32; 2]],
    /// The spans cut at their long gaps, which the loops visit, with where their rows and
    /// neighbour rows are stored (`segments.rs`, `layout.rs`).
    seg: &'a Segments,
    /// The CPU has AVX2 ([`Self::stage`]).
    pub(super) avx2: bool,
}

impl<'a> Sweep<'a> {
    pub(super) fn new(lv: &'a mut Level) -> Self {
        let (u, r) = (lv.u.as_mut_ptr(), lv.r.as_mut_ptr());
        Self::shared(lv, u, r)
    }

    /// The sweep of `lv` writing its `u` and `r` through `u` and `r` (taken from its vectors
    /// while the level was borrowed mutably: the team's, `team.rs`).
    pub(super) fn shared(lv: &'a Level, u: *mut f32, r: *mut f32) -> Self {
        Self {
            n: lv.n,
            half: lv.lay.half,
            up: SyncPtr(u),
            rp: SyncPtr(r),
            b: &lv.b,
            invd: &lv.invd,
            diag: &lv.diag,
            count: &lv.count,
            int: lv.int_diag,
            w: &lv.w,
            unit: lv.unit,
            unit_rows: &lv.unit_rows,
            spans: &lv.spans,
            seg: &lv.seg,
            avx2: has_avx2(),
        }
    }

    /// Where colour `c`'s entries begin (colour 1 at `half`).
    #[inline(always)]
    fn base(&self, c: usize) -> usize {
        if c == 0 { 0 } else { self.half }
    }

    /// `sum_f w_f u_nb(f)` for the `L` cells from compact `m` of the neighbour rows `nb`
    /// (natural index of the first `nat`, the others every other cell), in the order of the
    /// natural-layout loops: `(x- + x+) + (y- + y+) + (z- + z+)`, each term weighted unless
    /// `unit` (the level's or the row's, [`Self::unit_row`]).
    ///
    /// # Safety
    /// The cells are in a row of the level's interior (not the border layer) and `m0 + L`
    /// lies within the compact row; nothing writes the other colour meanwhile.
    #[inline(always)]
    unsafe fn sums<const L: usize>(
        &self,
        nb: &Nb,
        m: usize,
        nat: usize,
        unit: bool,
        out: &mut [f32; L],
    ) {
        let (ny, nx) = (self.n[1], self.n[0]);
        let u = self.up.0 as *const f32;
        // SAFETY: the caller's: the neighbours' compact entries are in the arrays.
        unsafe {
            let sl = |o: usize, l: usize| std::slice::from_raw_parts(u.add(o + m), l);
            let (ux, ym, yp, zm, zp) = (
                sl(nb.x, L + 1),
                sl(nb.ym, L),
                sl(nb.yp, L),
                sl(nb.zm, L),
                sl(nb.zp, L),
            );
            if unit {
                for i in 0..L {
                    out[i] = (ux[i] + ux[i + 1]) + (ym[i] + yp[i]) + (zm[i] + zp[i]);
                }
            } else {
                // Natural-layout weights at cell 2i + e (stride 2); the arrays have spare
                // entries past the grid ([`Level::new`]).
                let w = |a: usize, o: usize| *self.w[a].get_unchecked(o);
                let st2 = nx * ny;
                for i in 0..L {
                    let c = nat + 2 * i;
                    out[i] = (w(0, c) * ux[i] + w(0, c + 1) * ux[i + 1])
                        + (w(1, c) * ym[i] + w(1, c + nx) * yp[i])
                        + (w(2, c) * zm[i] + w(2, c + st2) * zp[i]);
                }
            }
        }
    }

    /// Whether the loops over row `row` may read no weights: the level's are all 1, or every
    /// face between two of its fluid cells and their neighbours has weight 1 (the others
    /// multiply a `u` of 0; [`Level::unit_rows`]): the same sums, bit for bit.
    #[inline(always)]
    fn unit_row(&self, row: usize) -> bool {
        self.unit || self.unit_rows[row]
    }

    /// The weights for [`avx`]'s loops from natural cell `nat` (`None` with unit weights).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn avx_weights(&self, nat: usize, unit: bool) -> Option<avx::Weights> {
        (!unit).then(|| avx::Weights {
            w: [0, 1, 2].map(|a| self.w[a].as_ptr()),
            nx: self.n[0],
            st2: self.n[0] * self.n[1],
            nat,
        })
    }

    /// The cells of colour `colour` in the span of row `row` (`j`, `k`), [`LANES`] compact
    /// cells at a time (every lane a cell of this colour); the compact range covers the span
    /// and may reach up to `LANES` cells past it, cells whose inverse diagonal is 0 (they get
    /// `0 * (..)`, a zero as they hold). Each stored value has the bits of the natural-layout
    /// loop (same operations in the same order).
    ///
    /// # Safety
    /// No other task writes this row's cells of `colour`, nor any cell of the other colour in
    /// the six neighbouring rows' reach, while this runs.
    #[inline(always)]
    pub(super) unsafe fn row<const AVX: bool>(
        &self,
        row: usize,
        j: usize,
        k: usize,
        colour: usize,
        from_zero: bool,
        omega: f32,
    ) {
        for s in self.seg.of(row) {
            // SAFETY: the caller's.
            unsafe { self.row_span::<AVX>(s, j, k, colour, from_zero, omega) };
        }
    }

    /// [`Self::row`] on one segment `s` (`segments.rs`) of row `(j, k)`.
    ///
    /// # Safety
    /// As [`Self::row`].
    #[inline(always)]
    unsafe fn row_span<const AVX: bool>(
        &self,
        s: &Seg,
        j: usize,
        k: usize,
        colour: usize,
        from_zero: bool,
        omega: f32,
    ) {
        let (row, st, [lo, hi]) = (s.row as usize, &s.st(), s.span.map(|x| x as usize));
        let e = (colour + j + k) & 1;
        let own = self.base(colour) + st[0];
        let nb = self.nb(1 - colour, st, e);
        let (mut m0, m1) = (lo >> 1, (hi + 1) >> 1);
        let nat = self.n[0] * row + e;
        let unit = self.unit_row(row);
        #[cfg(target_arch = "x86_64")]
        if AVX {
            // Three loops, so that the unit-weight ones are compiled without the weights and
            // the counts' one without the inverse diagonal.
            let inv = avx::Diag {
                f: self.invd.as_ptr(),
                n: self.count.as_ptr(),
            };
            // A macro rather than a closure: the chunk's intrinsics are inlined into this
            // function, which the AVX2 caller compiles with the feature (a closure is an item
            // of its own, without it).
            macro_rules! chunk {
                ($int:literal, $w:expr) => {
                    // SAFETY: as below; the CPU has AVX2 (`AVX`); the counts are as long as
                    // `invd`.
                    unsafe {
                        avx::sweep_chunk::<$int>(
                            self.up.0,
                            self.b,
                            inv,
                            own + m0,
                            &nb,
                            m0,
                            from_zero,
                            $w,
                            omega,
                        )
                    }
                };
            }
            if self.int {
                while m0 < m1 {
                    chunk!(true, None);
                    m0 += LANES;
                }
            } else if unit {
                while m0 < m1 {
                    chunk!(false, None);
                    m0 += LANES;
                }
            } else {
                while m0 < m1 {
                    chunk!(false, self.avx_weights(nat + 2 * m0, false));
                    m0 += LANES;
                }
            }
            return;
        }
        while m0 < m1 {
            let c = own + m0;
            let mut s = [0.0f32; LANES];
            // SAFETY: the chunk ends at most LANES - 1 cells past the span's compact end,
            // inside the row's padding ([`super::level::PAD`]); the caller's for the rest.
            unsafe {
                if !from_zero {
                    self.sums(&nb, m0, nat + 2 * m0, unit, &mut s);
                }
                let b = std::slice::from_raw_parts(self.b.as_ptr().add(c), LANES);
                let inv = std::slice::from_raw_parts(self.invd.as_ptr().add(c), LANES);
                let out = std::slice::from_raw_parts_mut(self.up.get(c), LANES);
                for t in 0..LANES {
                    let g = inv[t] * (b[t] + s[t]);
                    out[t] = if omega == 1.0 {
                        g
                    } else {
                        out[t] + omega * (g - out[t])
                    };
                }
            }
            m0 += LANES;
        }
    }

    /// `r = b - A u` on the span of row `row` (0 on its cells that are not fluid, and on the
    /// cells next to the span that the compact chunks cover): the same operations in the same
    /// order as `kernels::residual`, computed per colour on compact chunks and stored
    /// by colour, as `u` is.
    ///
    /// # Safety
    /// No other task writes `u` in this row's or its four neighbour rows' reach, nor this
    /// row's `r`, while this runs.
    #[inline(always)]
    pub(super) unsafe fn residual_row<const AVX: bool>(&self, row: usize, j: usize, k: usize) {
        for s in self.seg.of(row) {
            // SAFETY: the caller's.
            unsafe { self.residual_span::<AVX>(s, j, k) };
        }
    }

    /// [`Self::residual_row`] on one segment `s` (`segments.rs`) of row `(j, k)`.
    ///
    /// # Safety
    /// As [`Self::residual_row`].
    #[inline(always)]
    unsafe fn residual_span<const AVX: bool>(&self, s: &Seg, j: usize, k: usize) {
        let (row, st, [lo, hi]) = (s.row as usize, &s.st(), s.span.map(|x| x as usize));
        let (mut m0, m1) = (lo >> 1, (hi + 1) >> 1);
        let base = self.n[0] * row;
        let unit = self.unit_row(row);
        // Compact row starts of the row's even and odd natural cells.
        let q = (j + k) & 1;
        let c = [q, 1 - q].map(|c| self.base(c) + st[0]);
        // Parity e's cells (colour c[e]) have their neighbours in colour c[1 - e]'s rows.
        let nb = [self.nb(1 - q, st, 0), self.nb(q, st, 1)];
        while m0 < m1 {
            #[cfg(target_arch = "x86_64")]
            if AVX {
                // SAFETY: as below; the CPU has AVX2 (`AVX`).
                unsafe {
                    let (u, c, rp) = (self.up.0, c.map(|c| c + m0), self.rp.0);
                    let dg = avx::Diag {
                        f: self.diag.as_ptr(),
                        n: self.count.as_ptr(),
                    };
                    if self.int {
                        avx::residual_chunk::<true>(u, self.b, dg, c, &nb, m0, rp, None);
                    } else {
                        let w = self.avx_weights(base + 2 * m0, unit);
                        avx::residual_chunk::<false>(u, self.b, dg, c, &nb, m0, rp, w);
                    }
                }
                m0 += LANES;
                continue;
            }
            for (e, &own) in c.iter().enumerate() {
                let own = own + m0;
                let mut s = [0.0f32; LANES];
                // SAFETY: as in [`Self::row`]; the chunk of `r` is this task's alone.
                unsafe {
                    self.sums(&nb[e], m0, base + 2 * m0 + e, unit, &mut s);
                    let sl = |p: &[f32]| std::slice::from_raw_parts(p.as_ptr().add(own), LANES);
                    let (bb, dg) = (sl(self.b), sl(self.diag));
                    let uc = std::slice::from_raw_parts(self.up.0.add(own) as *const f32, LANES);
                    let res = std::slice::from_raw_parts_mut(self.rp.get(own), LANES);
                    for t in 0..LANES {
                        // Computed on every cell, then selected (0 where the diagonal is 0).
                        let x = bb[t] - dg[t] * uc[t] + s[t];
                        res[t] = if dg[t] != 0.0 { x } else { 0.0 };
                    }
                }
            }
            m0 += LANES;
        }
    }

    /// `u += P coarse.u` on the fluid cells of row `row` (`j`, `k`): the coarse cells around
    /// the row (natural `x`, four coarse rows, y and z weights) are first summed into a line
    /// buffer, then fine cell `2m` gets `3/4 L[m] + 1/4 L[m + 1]` and `2m + 1` gets
    /// `3/4 L[m + 1] + 1/4 L[m]` (cell-centred trilinear interpolation), added where the
    /// inverse diagonal is not 0: the operations of `kernels::prolong_add`.
    ///
    /// # Safety
    /// No other task writes this row's `u` meanwhile.
    #[inline(always)]
    pub(super) unsafe fn prolong_row<const AVX: bool>(
        &self,
        coarse: &Level,
        row: usize,
        j: usize,
        k: usize,
        line: &mut ProlongLine,
    ) {
        for (s, pro) in self.seg.with_coarse(row..row + 1) {
            // SAFETY: the caller's.
            unsafe { self.prolong_span::<AVX>(coarse, (s, pro), j, k, line) };
        }
    }

    /// [`Self::prolong_row`] on one segment `s` (`segments.rs`) of row `(j, k)`, `pro` its
    /// coarse rows' starts.
    ///
    /// # Safety
    /// As [`Self::prolong_row`].
    #[inline(always)]
    unsafe fn prolong_span<const AVX: bool>(
        &self,
        coarse: &Level,
        (s, pro): (&Seg, &[usize; 4]),
        j: usize,
        k: usize,
        line: &mut ProlongLine,
    ) {
        let (st, [lo, hi]) = (&s.st(), s.span.map(|x| x as usize));
        let (jj, wj) = coarse_taps(j);
        let (kk, wk) = coarse_taps(k);
        // Each coarse row's starts of the colour of its even cells and of the other colour,
        // once per row rather than per block of the line.
        // The coarse rows' virtual starts in the range that holds every coarse cell the
        // segment reads (`segments.rs`, `layout.rs`), of each colour.
        let ch = coarse.lay.half;
        let crow = |s: usize, j: usize, k: usize| {
            let p = (j + k) & 1;
            [p * ch + s, (1 - p) * ch + s]
        };
        let rows = [
            (crow(pro[0], jj[0], kk[0]), wj[0] * wk[0]),
            (crow(pro[1], jj[1], kk[0]), wj[1] * wk[0]),
            (crow(pro[2], jj[0], kk[1]), wj[0] * wk[1]),
            (crow(pro[3], jj[1], kk[1]), wj[1] * wk[1]),
        ];
        let cu = &coarse.u;
        // Colour q's fine cells are the even ones (2m), the other colour's the odd ones.
        let q = (j + k) & 1;
        let (ev, od) = (self.base(q) + st[0], self.base(1 - q) + st[0]);
        let (mut m0, m1) = (lo >> 1, (hi + 1) >> 1);
        while m0 < m1 {
            let mb = (m0 + LINE).min(m1);
            // Coarse natural x = xa ..= mb (at least), in pairs (xa even): line[x - xa].
            let xa = m0 & !1;
            let pairs = (mb - xa + 2).div_ceil(2);
            line[..2 * pairs.next_multiple_of(LANES)].fill(0.0);
            for &([a, b], wr) in &rows {
                // Coarse natural x at compact x / 2 of colour (x + parity) % 2.
                let (a, b) = (a + xa / 2, b + xa / 2);
                #[cfg(target_arch = "x86_64")]
                if AVX {
                    for p in (0..pairs).step_by(LANES) {
                        // SAFETY: the CPU has AVX2; the coarse arrays have a spare row at
                        // their end, and the line room for whole chunks.
                        unsafe {
                            avx::line_pairs(&mut line[2 * p..], &cu[a + p..], &cu[b + p..], wr)
                        };
                    }
                    continue;
                }
                for p in 0..pairs {
                    line[2 * p] += wr * cu[a + p];
                    line[2 * p + 1] += wr * cu[b + p];
                }
            }
            let off = m0 - xa;
            let line = &line[off..];
            // SAFETY: compact cells m0 .. mb of this row's two colours, this task's alone.
            unsafe {
                let u = |o: usize| std::slice::from_raw_parts_mut(self.up.get(o + m0), mb - m0);
                let (ue, uo) = (u(ev), u(od));
                // Slices of the exact length (no bounds tests: the loops vectorise).
                let (l0, l1) = (&line[..mb - m0], &line[1..mb - m0 + 1]);
                // The fluid cells: a non-zero count, or inverse diagonal.
                if self.int {
                    let (ie, io) = (&self.count[ev + m0..ev + mb], &self.count[od + m0..od + mb]);
                    add_line(ue, ie, (l0, l1));
                    add_line(uo, io, (l1, l0));
                } else {
                    let (ie, io) = (&self.invd[ev + m0..ev + mb], &self.invd[od + m0..od + mb]);
                    add_line(ue, ie, (l0, l1));
                    add_line(uo, io, (l1, l0));
                }
            }
            m0 = mb;
        }
    }

    /// One stage of a wavefront on z-plane `k`: [`Self::stage_plain`], compiled for AVX2 when
    /// the CPU has it (no fused multiply-adds either way: the same bits).
    ///
    /// # Safety
    /// As [`Self::stage_plain`].
    #[inline(always)]
    pub(super) unsafe fn stage(&self, stage: Stage, k: usize) {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: the CPU has AVX2 (checked in `new`); the caller's for the rest.
            return unsafe { self.stage_avx2(stage, k) };
        }
        // SAFETY: the caller's.
        unsafe { self.stage_plain::<false>(stage, k) }
    }

    /// [`Self::stage_plain`] with AVX2 enabled.
    ///
    /// # Safety
    /// As [`Self::stage_plain`], and the CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn stage_avx2(&self, stage: Stage, k: usize) {
        // SAFETY: the caller's.
        unsafe { self.stage_plain::<true>(stage, k) }
    }

    /// One stage of a wavefront on z-plane `k`.
    ///
    /// # Safety
    /// As [`Self::row`] / [`Self::residual_row`] for the whole plane; a prolongation writes
    /// the plane's `u` and reads only the coarse level.
    #[inline(always)]
    unsafe fn stage_plain<const AVX: bool>(&self, stage: Stage, k: usize) {
        let ny = self.n[1];
        match stage {
            // SAFETY: the caller's.
            Stage::Colour(c, z, w) => unsafe { self.plane::<AVX>(k, c, z, w) },
            // The plane's segments, one loop (`segments.rs`).
            Stage::Residual => {
                for s in self.seg.rows(ny * k..ny * (k + 1)) {
                    // SAFETY: the caller's.
                    unsafe { self.residual_span::<AVX>(s, s.row as usize - ny * k, k) };
                }
            }
            Stage::Prolong(coarse) => {
                // The line buffer, once per plane (each segment fills what it reads).
                let mut line = [0.0f32; LINE + 4 + 2 * LANES];
                for (s, pro) in self.seg.with_coarse(ny * k..ny * (k + 1)) {
                    let j = s.row as usize - ny * k;
                    // SAFETY: the caller's: this row of `u` is this task's alone.
                    unsafe { self.prolong_span::<AVX>(coarse, (s, pro), j, k, &mut line) };
                }
            }
        }
    }

    /// Every row of z-plane `k`.
    ///
    /// # Safety
    /// As [`Self::row`], for the whole plane.
    #[inline(always)]
    unsafe fn plane<const AVX: bool>(&self, k: usize, colour: usize, zero: bool, omega: f32) {
        let ny = self.n[1];
        for s in self.seg.rows(ny * k..ny * (k + 1)) {
            let j = s.row as usize - ny * k;
            // SAFETY: the caller's.
            unsafe { self.row_span::<AVX>(s, j, k, colour, zero, omega) };
        }
    }
}

/// `u += 0.75 near + 0.25 far` on the cells whose `mask` entry is not 0 (the prolongation's
/// last step, one colour of a row: `near`, `far` the line's entries at and next to each).
#[inline(always)]
fn add_line<T: Copy + Default + PartialEq>(
    u: &mut [f32],
    mask: &[T],
    (near, far): (&[f32], &[f32]),
) {
    for (((u, &i), &a), &b) in u.iter_mut().zip(mask).zip(near).zip(far) {
        let s = *u + (0.75 * a + 0.25 * b);
        *u = if i != T::default() { s } else { *u };
    }
}

/// One Gauss-Seidel half-sweep over the cells of colour `colour` (`(i + j + k) % 2`):
/// `u_c = (b_c + sum_f w_f u_nb) / diag_c` (0 on non-fluid cells), row after row, or with
/// `omega` other than 1 `u_c += omega (that - u_c)`; `from_zero`: the other colour taken as
/// 0. The reference for `rb_sweeps` (`sweeps.rs`).
#[cfg(test)]
pub(super) fn half_sweep(lv: &mut Level, colour: usize, from_zero: bool, omega: f32) {
    let (ny, rows) = (lv.n[1], lv.spans.len());
    let sw = Sweep::new(lv);
    for row in 0..rows {
        // SAFETY: one row at a time.
        unsafe {
            let k = row / ny;
            sw.row::<false>(row, row % ny, k, colour, from_zero, omega)
        }
    }
}

/// AVX2 chunks of the unit-weight loops (the same bits as the plain loops).
#[cfg(target_arch = "x86_64")]
mod avx;
