//! The one interface between the conjugate-gradient loop ([`super::cg`]) and a preconditioner
//! `M ~ A`: [`Preconditioner`]. MIC(0) ([`super::mic0`]), a multigrid V-cycle
//! ([`super::multigrid`]) and none ([`Identity`], plain CG as in the tutorial's C++) implement
//! it; a further preconditioner is one new file that implements the trait and one variant of
//! [`super::Preconditioning`] (the choice and its dispatch live in [`super`], so each
//! preconditioner file imports only this trait).
//!
//! Layer 2 (sim::pressure). Contract: every method is deterministic for any thread count, and
//! allocates nothing after `setup` has seen the largest system (buffers are sized when the
//! solver is created).

use super::super::mac_grid::CellLabel;
use super::super::reduce;
use super::system::System;
use rayon::prelude::*;

/// A preconditioner for the pressure system.
pub trait Preconditioner: Send + Sync {
    /// Prepares for a newly assembled system (once per projection, before its solves);
    /// `labels` are the grid's cell labels the system was assembled from, `open` the solids'
    /// open face fractions it was weighted with (`sys.fractional`), if any.
    fn setup(&mut self, sys: &System, labels: &[CellLabel], open: Option<&[Vec<f32>; 3]>);

    /// Called at the start of every solve with the vector length `nf + 1`.
    fn begin_solve(&mut self, _n1: usize) {}

    /// `z = M^-1 r` on the `nf + 1` entries (the dummy row stays 0); returns `z . r`.
    /// `partials` is scratch for [`reduce::dot`].
    fn apply(&mut self, sys: &System, r: &[f64], z: &mut [f64], partials: &mut [f64]) -> f64;

    /// One CG step and the next application: `q += alpha s`, `r -= alpha z` (`z` holds `A s`
    /// on entry), then `z = M^-1 r`; returns `(z . r, max |r|)`. An implementation may leave
    /// `q` (and `z`) to [`Self::next_direction`] and [`Self::end_solve`], which then do it. When `max |r| <= stop_at`
    /// the solve ends, and an implementation may skip the application (the first value is then
    /// unused). The default does the update in one pass and then [`Self::apply`]; an
    /// implementation may fuse the two (MIC(0) does).
    #[allow(clippy::too_many_arguments)]
    fn step_and_apply(
        &mut self,
        sys: &System,
        alpha: f64,
        q: &mut [f64],
        s: &[f64],
        r: &mut [f64],
        z: &mut [f64],
        partials: &mut [f64],
        stop_at: f64,
    ) -> (f64, f64) {
        // q += alpha s, r -= alpha z, and max |r| in the same pass (max is exact in any order).
        let rmax = q
            .par_iter_mut()
            .zip(s.par_iter())
            .zip(r.par_iter_mut().zip(z.par_iter()))
            .with_min_len(reduce::MIN_TASK)
            .map(|((q, s), (r, z))| {
                *q += alpha * s;
                *r -= alpha * z;
                r.abs()
            })
            .reduce(|| 0.0, f64::max);
        if rmax <= stop_at {
            return (0.0, rmax);
        }
        (self.apply(sys, r, z, partials), rmax)
    }

    /// The next search direction after a step that did not end the solve: `s = z + beta s`
    /// on the `nf + 1` entries, `z` holding `M^-1 r` from [`Self::step_and_apply`]. An
    /// implementation whose step leaves `q` alone adds `alpha s` to `q` here, before `s`
    /// changes (the multigrid does, reading `M^-1 r` where its cycle left it: one pass over
    /// `s` per iteration fewer); the default's step has updated `q`.
    #[allow(clippy::too_many_arguments)]
    fn next_direction(
        &mut self,
        _sys: &System,
        _alpha: f64,
        beta: f64,
        _q: &mut [f64],
        s: &mut [f64],
        z: &[f64],
    ) {
        s.par_iter_mut()
            .zip(z.par_iter())
            .with_min_len(reduce::MIN_TASK)
            .for_each(|(s, z)| *s = z + beta * *s);
    }

    /// The solve ends after a step of size `alpha` along `s`: an implementation whose step
    /// leaves `q` alone adds `alpha s` to it here (the default's step has).
    fn end_solve(&mut self, _sys: &System, _alpha: f64, _q: &mut [f64], _s: &[f64]) {}
}

/// No preconditioning: `z = r` (plain CG).
pub struct Identity;

impl Preconditioner for Identity {
    fn setup(&mut self, _sys: &System, _labels: &[CellLabel], _open: Option<&[Vec<f32>; 3]>) {}

    fn apply(&mut self, sys: &System, r: &[f64], z: &mut [f64], partials: &mut [f64]) -> f64 {
        let nf = sys.nf;
        z[..nf]
            .par_iter_mut()
            .zip(r[..nf].par_iter())
            .with_min_len(reduce::MIN_TASK)
            .for_each(|(z, r)| *z = *r);
        reduce::dot(z, r, partials)
    }
}
