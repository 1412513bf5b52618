//! The conjugate-gradient loop (Bridson 2015, fig. 5.5; Shewchuk 1994, "An introduction to the
//! conjugate gradient method without the agonizing pain") on the assembled [`System`], with any
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
    /// Preconditioned CG on `A q = rhs`, from `q = 0` or (`warm`) from the `q` already set.
    pub(super) fn solve(&mut self, tol: f64, max_iter: u32, warm: bool) -> SolveStats {
        let sys = &self.sys;
        let nf = sys.nf;
        let n1 = nf + 1;
        let precon = self.preconditioner.get();
        precon.begin_solve(n1);
        for v in [&mut self.z, &mut self.s] {
            v[..n1]
                .par_iter_mut()
                .with_min_len(reduce::MIN_TASK)
                .for_each(|x| *x = 0.0);
        }
        if !warm {
            self.q[..n1]
                .par_iter_mut()
                .with_min_len(reduce::MIN_TASK)
                .for_each(|x| *x = 0.0);
        }
        self.q[nf] = 0.0;
        let mut stats = SolveStats {
            unknowns: nf as u32,
            ..Default::default()
        };
        let bmax = reduce::max_abs(&self.rhs[..nf]);
        stats.rhs_max = bmax;
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
        r.copy_from_slice(&self.rhs[..n1]);
        let mut rmax = bmax;
        if warm {
            // r = b - A q0.
            sys.mul(q, z);
            r[..nf]
                .par_iter_mut()
                .zip(z[..nf].par_iter())
                .with_min_len(reduce::MIN_TASK)
                .for_each(|(r, z)| *r -= z);
            z[..nf]
                .par_iter_mut()
                .with_min_len(reduce::MIN_TASK)
                .for_each(|x| *x = 0.0);
            rmax = reduce::max_abs(&r[..nf]);
            if rmax <= tol * bmax {
                stats.residual = rmax / bmax;
                return stats;
            }
        }
        let mut sigma = precon.apply(sys, r, z, partials);
        s.copy_from_slice(z);
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
            if rmax <= tol * bmax {
                break;
            }
            let beta = sigma_new / sigma;
            s.par_iter_mut()
                .zip(z.par_iter())
                .with_min_len(reduce::MIN_TASK)
                .for_each(|(s, z)| *s = z + beta * *s);
            sigma = sigma_new;
        }
        stats.residual = rmax / bmax;
        stats
    }
}
