//! The grid transfers' stencils along one axis: the restriction's fine taps of a coarse cell
//! and the prolongation's coarse taps of a fine cell (coarse cell `I` covers fine cells
//! `2I - 1` and `2I`, `level.rs`). Used by the transfers (`kernels.rs`, `wavefront.rs`) and by
//! the set-up that keeps where they read (`segments.rs`).

/// Per-axis fine cells `2I - 2, 2I - 1, 2I, 2I + 1` of coarse cell `I`'s restriction stencil
/// (weights 1, 3, 3, 1 over 4), the last clamped to the fine grid: it is then a wall cell, whose
/// residual is 0.
#[inline(always)]
pub(super) fn fine_taps(ci: usize, m: usize) -> [usize; 4] {
    [2 * ci - 2, 2 * ci - 1, 2 * ci, (2 * ci + 1).min(m - 1)]
}

/// The weights of [`fine_taps`]' cells (1, 3, 3, 1 over 4).
pub(super) const TAP: [f32; 4] = [0.25, 0.75, 0.75, 0.25];

/// Per-axis coarse neighbours and weights of fine cell `i`: its parent `(i + 1) / 2` (weight
/// 3/4) and the coarse cell on its side (1/4).
#[inline(always)]
pub(super) fn coarse_taps(i: usize) -> ([usize; 2], [f32; 2]) {
    let p = i.div_ceil(2);
    let q = if i % 2 == 1 { p - 1 } else { p + 1 };
    ([p, q], [0.75, 0.25])
}

/// Fine pairs (an even and an odd cell) a restriction sums at once, all 16 fine rows together
/// (`kernels::restrict_segment`): its reads run up to this many pairs past a block.
pub(super) const PAIRS: usize = 8;
