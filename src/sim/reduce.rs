//! Reductions whose result does not depend on the thread count.
//!
//! Floating-point addition is not associative, so a sum split across however many threads
//! rayon happens to use would change in the last bits with the thread count. Here every sum is
//! cut into fixed chunks of [`CHUNK`] elements (a constant, not a function of the pool), each
//! chunk summed left to right in f64, and the chunk partials summed left to right. Maxima are
//! exact in any order and use rayon's reduction directly.

use rayon::prelude::*;

/// Elements per chunk of a deterministic sum.
pub const CHUNK: usize = 4096;

/// Fewest elements per rayon task of a streaming vector operation (an axpy, a dot product):
/// below this a hand-off to another thread costs more than the work. Task sizes never change
/// results (sums are cut into [`CHUNK`]s whatever the tasks).
pub const MIN_TASK: usize = 32 * 1024;

/// Fewest rows per rayon task of a per-row loop over the pressure system (a matrix-vector
/// product, building the rows).
pub const MIN_ROWS: usize = 8 * 1024;

/// Number of partial sums a vector of `n` elements needs.
pub fn partials_len(n: usize) -> usize {
    n.div_ceil(CHUNK)
}

/// `sum_i a_i b_i` in a fixed order; `partials` has [`partials_len`] entries.
pub fn dot(a: &[f64], b: &[f64], partials: &mut [f64]) -> f64 {
    a.par_chunks(CHUNK)
        .zip(b.par_chunks(CHUNK))
        .zip(partials.par_iter_mut())
        .with_min_len(MIN_TASK / CHUNK)
        .for_each(|((x, y), p)| {
            let mut s = 0.0;
            for (u, v) in x.iter().zip(y) {
                s += u * v;
            }
            *p = s;
        });
    partials.iter().sum()
}

/// `max_i |a_i|`.
pub fn max_abs(a: &[f64]) -> f64 {
    a.par_iter()
        .with_min_len(MIN_TASK)
        .map(|x| x.abs())
        .reduce(|| 0.0, f64::max)
}
