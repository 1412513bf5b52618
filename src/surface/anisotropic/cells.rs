//! The anisotropic method's neighbour search (Yu & Turk 2013 need each particle's neighbours
//! within the kernel radius): uniform cells over the finite particles, filled by a stable
//! counting sort (parallel, [`counting_sort`]), with the positions copied in cell order so that the particles of a cell row
//! are one contiguous slice of each coordinate array.

use super::super::sparse_grid::{Points, counting_sort, gather3};
use rayon::prelude::*;

/// Uniform cells of size `r` over the finite particles (stable counting sort), with the
/// particles' positions copied in cell order so that a cell row is one contiguous slice.
pub(super) struct Cells {
    pub(super) lo: [f32; 3],
    pub(super) inv: f32,
    pub(super) dims: [usize; 3],
    pub(super) start: Vec<u32>,
    pub(super) order: Vec<u32>,
    /// Positions in cell order (`order[k]`'s at `sorted[a][k]`).
    pub(super) sorted: [Vec<f32>; 3],
}

impl Cells {
    pub(super) fn new(pos: Points, r: f32) -> Self {
        let n = pos.len();
        let finite = |i: usize| (0..3).all(|a| pos.get(a, i).is_finite());
        // Bounds of the finite particles (min and max: any order gives the same bits).
        let (lo, hi) = (0..n)
            .into_par_iter()
            .with_min_len(1 << 14)
            .filter(|&i| finite(i))
            .fold(
                || ([f32::MAX; 3], [f32::MIN; 3]),
                |(mut lo, mut hi), i| {
                    for a in 0..3 {
                        lo[a] = lo[a].min(pos.get(a, i));
                        hi[a] = hi[a].max(pos.get(a, i));
                    }
                    (lo, hi)
                },
            )
            .reduce(
                || ([f32::MAX; 3], [f32::MIN; 3]),
                |a, b| {
                    (
                        std::array::from_fn(|k| a.0[k].min(b.0[k])),
                        std::array::from_fn(|k| a.1[k].max(b.1[k])),
                    )
                },
            );
        let inv = 1.0 / r;
        let dims: [usize; 3] = std::array::from_fn(|a| {
            if lo[a] > hi[a] {
                1
            } else {
                ((hi[a] - lo[a]) * inv) as usize + 1
            }
        });
        let mut this = Self {
            lo,
            inv,
            dims,
            start: Vec::new(),
            order: Vec::new(),
            sorted: Default::default(),
        };
        let keys: Vec<u32> = (0..n)
            .into_par_iter()
            .map(|i| {
                if finite(i) {
                    this.key(pos.at(i)) as u32
                } else {
                    u32::MAX
                }
            })
            .collect();
        let (start, order) = counting_sort(&keys, dims[0] * dims[1] * dims[2]);
        drop(keys);
        this.start = start;
        this.order = order;
        this.sorted = gather3(&this.order, |i| pos.at(i));
        this
    }

    #[inline(always)]
    pub(super) fn coord(&self, x: [f32; 3]) -> [usize; 3] {
        // Through i32 (one instruction; `as usize` from f32 takes several): the same values,
        // as the clamp below `dims < 2^31` follows (NaN: 0 either way).
        // The clamp at 0 as one compare and select (`f32::max` also orders NaN and the zeros:
        // several instructions; here NaN and -0 give 0 either way).
        let c = |a: usize| {
            let v = (x[a] - self.lo[a]) * self.inv;
            ((if v > 0.0 { v } else { 0.0 }) as i32 as usize).min(self.dims[a] - 1)
        };
        [c(0), c(1), c(2)]
    }

    pub(super) fn key(&self, x: [f32; 3]) -> usize {
        let c = self.coord(x);
        c[0] + self.dims[0] * (c[1] + self.dims[1] * c[2])
    }

    /// The ranges (in cell order) of the 9 contiguous rows of sorted positions that hold the
    /// particles of the 27 cells around `x`, the centre row first; empty past the edges.
    ///
    /// A loop, not `array::map` with a closure: called from the AVX2-compiled kernel code,
    /// `map` was not inlined there (a call per row through core's `try_map`, 9% of `surge
    /// mesh`'s instructions on frame 20 of the 1M dam break, callgrind).
    #[inline(always)]
    pub(super) fn rows_near(&self, x: [f32; 3]) -> [std::ops::Range<usize>; 9] {
        const ORDER: [(usize, usize); 9] = [
            (1, 1),
            (0, 1),
            (2, 1),
            (1, 0),
            (1, 2),
            (0, 0),
            (2, 0),
            (0, 2),
            (2, 2),
        ];
        let c = self.coord(x);
        let x0 = c[0].saturating_sub(1);
        let x1 = (c[0] + 1).min(self.dims[0] - 1);
        let mut out = [const { 0..0 }; 9];
        let [nx, ny, nz] = self.dims;
        for (o, &(dy, dz)) in out.iter_mut().zip(ORDER.iter()) {
            // Rows past the grid's edges stay empty: `y - 1` and `z - 1` (wrapping below 0)
            // within the grid, one test for both.
            let (y, z) = ((c[1] + dy).wrapping_sub(1), (c[2] + dz).wrapping_sub(1));
            if (y >= ny) | (z >= nz) {
                continue;
            }
            let row = nx * (y + ny * z);
            debug_assert!(row + x1 + 1 < self.start.len());
            // SAFETY: `x0 <= x1 < nx`, `y < ny`, `z < nz`, so `row + x1 + 1 <= nx ny nz`, and
            // `start` has `nx ny nz + 1` entries (the counting sort's bucket starts and end).
            *o = unsafe {
                *self.start.get_unchecked(row + x0) as usize
                    ..*self.start.get_unchecked(row + x1 + 1) as usize
            };
        }
        out
    }

    /// The sorted positions of a row range.
    #[inline(always)]
    pub(super) fn row(&self, r: std::ops::Range<usize>) -> [&[f32]; 3] {
        std::array::from_fn(|a| &self.sorted[a][r.clone()])
    }
}

/// Whether at least `n` particles lie within `sqrt(r2)` of `x` (stops counting there), among
/// the rows `rows` ([`Cells::rows_near`] of `x`). In AVX2 intrinsics where `AVX2` (the caller
/// runs with AVX2 enabled): the same operations per candidate, so the same count.
#[inline(always)]
pub(super) fn has_neighbours<const AVX2: bool>(
    cells: &Cells,
    rows: &[std::ops::Range<usize>; 9],
    x: [f32; 3],
    r2: f32,
    n: usize,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if AVX2 {
        // SAFETY: `AVX2` is only set by callers compiled for and running on AVX2.
        return unsafe { has_neighbours_avx2(cells, rows, x, r2, n) };
    }
    let mut count = 0;
    for r in rows.iter().cloned() {
        let [rx, ry, rz] = cells.row(r);
        count += rx
            .iter()
            .zip(ry)
            .zip(rz)
            .map(|((&px, &py), &pz)| within(px, py, pz, x, r2) as u32)
            .sum::<u32>() as usize;
        if count >= n {
            return true;
        }
    }
    false
}

/// Whether the candidate `(px, py, pz)` lies within `sqrt(r2)` of `x`.
#[inline(always)]
fn within(px: f32, py: f32, pz: f32, x: [f32; 3], r2: f32) -> bool {
    let d = [px - x[0], py - x[1], pz - x[2]];
    d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < r2
}

/// [`has_neighbours`] eight candidates at a time: the scalar loop above ran one candidate per
/// iteration. A row's last candidates (fewer than eight) are one more chunk whose lanes past
/// the row are masked off (they read the next row's, in bounds), one at a time only at the
/// arrays' very end. The distance is the same expression, lane by lane (no fused
/// multiply-add), so the count is the same.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn has_neighbours_avx2(
    cells: &Cells,
    rows: &[std::ops::Range<usize>; 9],
    x: [f32; 3],
    r2: f32,
    n: usize,
) -> bool {
    use std::arch::x86_64::*;
    let xv = [
        _mm256_set1_ps(x[0]),
        _mm256_set1_ps(x[1]),
        _mm256_set1_ps(x[2]),
    ];
    let r2v = _mm256_set1_ps(r2);
    let [sx, sy, sz] = &cells.sorted;
    let total = sx.len().min(sy.len()).min(sz.len());
    // The lanes within `sqrt(r2)` of the 8 candidates from `j` on, as bits.
    let chunk = |j: usize| -> u32 {
        debug_assert!(j + 8 <= total);
        // SAFETY: `j + 8 <= total` (checked by every caller), the length of each array:
        // unaligned loads of 8 f32 in bounds.
        let (px, py, pz) = unsafe {
            (
                _mm256_loadu_ps(sx.as_ptr().add(j)),
                _mm256_loadu_ps(sy.as_ptr().add(j)),
                _mm256_loadu_ps(sz.as_ptr().add(j)),
            )
        };
        let dx = _mm256_sub_ps(px, xv[0]);
        let dy = _mm256_sub_ps(py, xv[1]);
        let dz = _mm256_sub_ps(pz, xv[2]);
        let d2 = _mm256_add_ps(
            _mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)),
            _mm256_mul_ps(dz, dz),
        );
        _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(d2, r2v)) as u32
    };
    let mut count = 0usize;
    for r in rows.iter().cloned() {
        let mut j = r.start;
        let mut c = 0u32;
        while j + 8 <= r.end {
            c += chunk(j).count_ones();
            j += 8;
        }
        if j < r.end {
            if j + 8 <= total {
                c += (chunk(j) & ((1u32 << (r.end - j)) - 1)).count_ones();
            } else {
                for k in j..r.end {
                    c += within(sx[k], sy[k], sz[k], x, r2) as u32;
                }
            }
        }
        count += c as usize;
        if count >= n {
            return true;
        }
    }
    false
}
