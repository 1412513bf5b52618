//! Reductions whose result does not depend on the thread count.
//!
//! Floating-point addition is not associative, so a sum split across however many threads
//! rayon happens to use would change in the last bits with the thread count. Here every sum is
//! cut into fixed chunks of [`CHUNK`] elements (a constant, not a function of the pool), each
//! chunk summed in f64 over [`LANES`] lanes ([`Lanes`]: element `i` of the chunk into lane
//! `i % 4`, each lane in order, then `(l0 + l1) + (l2 + l3)`), and the chunk partials summed
//! left to right. Maxima are exact in any order and use rayon's reduction directly.
//!
//! Why lanes: one running sum is a chain of dependent additions, each waiting for the last
//! (about 4 cycles on this project's machines), which bounded the CG loop's dot products
//! far below memory bandwidth (session 21: the 8M dam break's `A s` with `s . A s` took 1.95
//! ms an iteration for 24 MB, 12 GB/s against the triad's 30-39); four independent chains fill
//! one vector register and the order is still fixed by the element's place in its chunk.

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

/// Independent running sums per chunk ([`Lanes`]).
pub const LANES: usize = 4;
const _: () = assert!(
    LANES == 4 && CHUNK.is_multiple_of(LANES),
    "Lanes::sum adds four lanes"
);

/// The running sums of one chunk: element `i` of the chunk (counted from the chunk's start,
/// a multiple of [`CHUNK`], so a row's lane is `row % LANES` too) goes to lane `i % LANES`.
#[derive(Clone, Copy, Default)]
pub struct Lanes(pub [f64; LANES]);

impl Lanes {
    /// Adds `x` as element `i` of the chunk.
    #[inline(always)]
    pub fn add(&mut self, i: usize, x: f64) {
        self.0[i % LANES] += x;
    }

    /// The chunk's sum: `(l0 + l1) + (l2 + l3)`.
    #[inline(always)]
    pub fn sum(self) -> f64 {
        let l = self.0;
        (l[0] + l[1]) + (l[2] + l[3])
    }
}

/// `sum_i x_i y_i` over one chunk, by [`Lanes`] (whole groups of four vectorised).
#[inline(always)]
pub fn dot_chunk(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &y[..n]);
    let mut l = Lanes::default();
    let (x4, y4) = (x.chunks_exact(LANES), y.chunks_exact(LANES));
    let (xr, yr) = (x4.remainder(), y4.remainder());
    for (a, b) in x4.zip(y4) {
        for k in 0..LANES {
            l.0[k] += a[k] * b[k];
        }
    }
    for (k, (a, b)) in xr.iter().zip(yr).enumerate() {
        l.0[k] += a * b;
    }
    l.sum()
}

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
        .for_each(|((x, y), p)| *p = dot_chunk(x, y));
    partials.iter().sum()
}

/// `max_i |a_i|`.
pub fn max_abs(a: &[f64]) -> f64 {
    a.par_iter()
        .with_min_len(MIN_TASK)
        .map(|x| x.abs())
        .reduce(|| 0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `dot` is the lanes' sum written out (entry `i` of chunk `c` into lane `i % 4`, each lane
    /// in order, `(l0 + l1) + (l2 + l3)`, the chunks left to right), bit for bit, on lengths
    /// with a partial last chunk and a partial last group of four, and on 1 and 3 threads.
    #[test]
    fn dot_is_the_lanes_sum_on_any_pool() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        for n in [1, 3, 4, 4097, 3 * CHUNK + 6, 5 * CHUNK] {
            let a: Vec<f64> = (0..n).map(|_| next()).collect();
            let b: Vec<f64> = (0..n).map(|_| next() * 1e3).collect();
            let mut want = 0.0;
            for c in 0..n.div_ceil(CHUNK) {
                let mut lane = [0.0f64; 4];
                for i in c * CHUNK..((c + 1) * CHUNK).min(n) {
                    lane[(i - c * CHUNK) % 4] += a[i] * b[i];
                }
                want += (lane[0] + lane[1]) + (lane[2] + lane[3]);
            }
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut partials = vec![0.0; partials_len(n)];
                let got = pool.install(|| dot(&a, &b, &mut partials));
                assert_eq!(got.to_bits(), want.to_bits(), "n {n}, {threads} threads");
            }
        }
    }
}
