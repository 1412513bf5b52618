//! The conjugate-gradient loop (Bridson 2015, fig. 5.5; Shewchuk 1994, "An introduction to the
//! conjugate gradient method without the agonizing pain") on the assembled [`System`](super::system::System), with any
//! [`super::preconditioner::Preconditioner`]: stops when `max|r| <= tol * max|b|` or after the
//! iteration cap. Vectors and dot products are f64 (the default tolerance, 1e-6, is close to
//! f32's resolution); dot products use fixed chunks ([`reduce`]), so results are
//! thread-independent.
//!
//! Layer 2 (sim::pressure).

use super::super::reduce;
use super::{PressureSolver, SolveStats};
use rayon::prelude::*;

impl PressureSolver {
    /// (Bridson fig. 5.5.)
    /// Preconditioned CG on `A q = b`, with `b` in `r` on entry (written there by the caller,
    /// `bmax = max |b|`), from `q = 0` or (`warm`) from the `q` already set.
    ///
    /// Every vector pass is needed: `z` and `s` are written whole before they are read (the
    /// first application writes the search direction directly), so neither is cleared, and a
    /// warm start forms `r = b - A q` and its maximum in one pass.
    pub(super) fn solve(&mut self, bmax: f64, tol: f64, max_iter: u32, warm: bool) -> SolveStats {
        let sys = &self.sys;
        let nf = sys.nf;
        let n1 = nf + 1;
        let precon = self.preconditioner.get();
        precon.begin_solve(n1);
        // The dummy row holds 0 in every vector (the products read it).
        for v in [&mut self.z, &mut self.s, &mut self.r, &mut self.q] {
            v[nf] = 0.0;
        }
        if !warm {
            self.q[..nf]
                .par_iter_mut()
                .with_min_len(reduce::MIN_TASK)
                .for_each(|x| *x = 0.0);
        }
        let mut stats = SolveStats {
            unknowns: nf as u32,
            rhs_max: bmax,
            ..Default::default()
        };
        if bmax == 0.0 {
            return stats;
        }
        let (q, r, z, s) = (
            &mut self.q[..n1],
            &mut self.r[..n1],
            &mut self.z[..n1],
            &mut self.s[..n1],
        );
        let partials = &mut self.partials;
        let mut rmax = bmax;
        if warm {
            // r = b - A q0.
            rmax = sys.residual(q, r);
            if rmax <= tol * bmax {
                stats.residual = rmax / bmax;
                return stats;
            }
        }
        // The first search direction is the preconditioned residual itself.
        let mut sigma = precon.apply(sys, r, s, partials);
        while stats.iterations < max_iter {
            let zs = sys.mul_dot(s, z, partials);
            if zs == 0.0 {
                break;
            }
            let alpha = sigma / zs;
            stats.iterations += 1;
            let (sigma_new, m) =
                precon.step_and_apply(sys, alpha, q, s, r, z, partials, tol * bmax);
            rmax = m;
            if rmax <= tol * bmax || stats.iterations >= max_iter {
                precon.end_solve(sys, alpha, q, s);
                break;
            }
            let beta = sigma_new / sigma;
            precon.next_direction(sys, alpha, beta, q, s, z);
            sigma = sigma_new;
        }
        stats.residual = rmax / bmax;
        stats
    }
}
