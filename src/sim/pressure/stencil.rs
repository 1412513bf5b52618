//! The CG's matrix-vector product on the staircase system (no obstacle weights, no ghost-fluid
//! air terms: the default) from a compact stencil: per row the four `y` and `z` neighbour rows
//! and one byte holding the diagonal (the count of non-solid neighbours) and whether each `x`
//! neighbour is fluid ([`System::yz`], [`System::code`]). Rows are numbered in lexicographic
//! cell order (x fastest), so a fluid `-x` neighbour is row `r - 1` and a fluid `+x` one row
//! `r + 1`: the product reads 17 bytes of matrix per row instead of 32 (`nb` and `diag`), the
//! `-x` value from a register (the previous row's), and no index for either `x` neighbour.
//!
//! The sums are those of [`System::mul_dot`]'s general loop in the same order,
//! `diag s_r - (s_-x + s_+x + s_-y + s_+y + s_-z + s_+z)` with a non-fluid neighbour
//! contributing the dummy row's `+0.0`, and the dot product in fixed chunks of
//! [`reduce::CHUNK`] rows: the bits are the same, for any thread count.
//!
//! Layer 2 (sim::pressure).

use super::super::reduce;
use super::system::System;
use rayon::prelude::*;

/// `out = A s` on the fluid rows and `out . s` (chunks of [`reduce::CHUNK`], as
/// [`reduce::dot`] sums them) for a system without weights or air terms. `s` and `out` have
/// `nf + 1` entries, the dummy row of `s` holding `+0.0`.
pub fn apply_a_dot(sys: &System, s: &[f64], out: &mut [f64], partials: &mut [f64]) -> f64 {
    debug_assert!(!sys.fractional && !sys.has_air);
    let nf = sys.nf;
    let s = &s[..nf + 1];
    let (yz, code) = (&sys.yz[..nf], &sys.code[..nf]);
    out[..nf + 1]
        .par_chunks_mut(reduce::CHUNK)
        .zip(partials.par_iter_mut())
        .with_min_len(reduce::MIN_ROWS.div_ceil(reduce::CHUNK))
        .enumerate()
        .for_each(|(ci, (oc, p))| {
            let r0 = ci * reduce::CHUNK;
            let rows = (nf - r0.min(nf)).min(oc.len());
            let (o_rows, o_dummy) = oc.split_at_mut(rows);
            let range = r0..r0 + rows;
            let mut acc = 0.0;
            // `s` of the row before (the `-x` neighbour when that is fluid).
            let mut prev = if r0 > 0 { s[r0 - 1] } else { 0.0 };
            for (l, (o, (m, &c))) in o_rows
                .iter_mut()
                .zip(yz[range.clone()].iter().zip(&code[range]))
                .enumerate()
            {
                let r = r0 + l;
                let sr = s[r];
                let xm = if c & 8 != 0 { prev } else { 0.0 };
                // `r + 1 <= nf`: in bounds.
                let xp = if c & 16 != 0 { s[r + 1] } else { 0.0 };
                // SAFETY: `yz`'s entries are rows or the dummy (at most `nf`, as `System::nb`'s)
                // and `s` has `nf + 1` entries.
                let g = |k: usize| unsafe { *s.get_unchecked(m[k] as usize) };
                *o = (c & 7) as f64 * sr - (xm + xp + g(0) + g(1) + g(2) + g(3));
                acc += *o * sr;
                prev = sr;
            }
            // The dummy row (s = 0 there), as the general loop adds it.
            for (o, sr) in o_dummy.iter().zip(&s[r0 + rows..]) {
                acc += *o * sr;
            }
            *p = acc;
        });
    partials.iter().sum()
}
