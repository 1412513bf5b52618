//! What a wavefront of the smoother runs (`wavefront.rs`, `sweeps.rs`): its stages, and the
//! z-planes that hold liquid.

use super::super::level::Level;

/// What a wavefront does besides the half-sweeps.
#[derive(Clone, Copy)]
pub(in super::super) enum Extra<'a> {
    /// Nothing.
    None,
    /// The residual `r = b - A u` after the last half-sweep.
    Residual,
    /// `u += P coarse.u` before the first half-sweep.
    Prolong(&'a Level),
}

/// One stage of a wavefront.
#[derive(Clone, Copy)]
pub(in super::super) enum Stage<'a> {
    /// A half-sweep of a colour (`from_zero` or not), over-relaxed by the factor (1: plain
    /// Gauss-Seidel; [`relaxation`]).
    Colour(usize, bool, f32),
    Residual,
    Prolong(&'a Level),
}

/// The z-planes `[k0, k1)` from the first to the last holding liquid (`None`: no liquid).
pub(in super::super) fn liquid_planes(lv: &Level) -> Option<(usize, usize)> {
    let (ny, nz) = (lv.n[1], lv.n[2]);
    let has = |k: usize| (0..ny).any(|j| lv.spans[j + ny * k][0] < lv.spans[j + ny * k][1]);
    let k0 = (0..nz).find(|&k| has(k))?;
    Some((k0, (0..nz).rev().find(|&k| has(k)).map_or(k0, |k| k + 1)))
}

/// The over-relaxation of half-sweep `q` of a smoothing of `halves` half-sweeps whose first
/// colour is `first` (0: red first, the smoothing before the coarse correction; 1: black first,
/// the one after): `omega` but on the first two half-sweeps of a red-first smoothing and the
/// last two of a black-first one, which are plain (1). A smoothing from zero starts with both
/// colours' values stale or zero, which a relaxed update would mix in; and the black-first
/// smoothing runs the red-first one's half-sweeps in reverse order with the same factors, so
/// that it is its adjoint and the cycle stays symmetric (each half-sweep, relaxed or not, is
/// self-adjoint in the energy inner product).
pub(in super::super) fn relaxation(first: usize, q: usize, halves: usize, omega: f32) -> f32 {
    let plain = if first == 0 { q < 2 } else { q + 2 >= halves };
    if plain { 1.0 } else { omega }
}

/// The stages of `rb_sweeps`' wavefront (`sweeps.rs`): the prolongation, `2 sweeps`
/// half-sweeps (colour `first + h` mod 2, the first `from_zero`, over-relaxed as
/// [`relaxation`] says), the residual, as `extra` asks.
#[derive(Clone, Copy)]
pub(in super::super) struct Stages<'a> {
    extra: Extra<'a>,
    first: usize,
    from_zero: bool,
    pre: usize,
    /// The half-sweeps, `2 sweeps`.
    halves: usize,
    /// The smoother's over-relaxation ([`relaxation`]).
    omega: f32,
    pub(in super::super) count: usize,
}

impl<'a> Stages<'a> {
    pub(in super::super) fn new(
        sweeps: usize,
        first: usize,
        from_zero: bool,
        extra: Extra<'a>,
        omega: f32,
    ) -> Self {
        let pre = matches!(extra, Extra::Prolong(_)) as usize;
        let count = 2 * sweeps + pre + matches!(extra, Extra::Residual) as usize;
        Self {
            extra,
            first,
            from_zero,
            pre,
            halves: 2 * sweeps,
            omega,
            count,
        }
    }

    /// Stage `h`.
    pub(in super::super) fn at(&self, h: usize) -> Stage<'a> {
        match self.extra {
            Extra::Prolong(c) if h == 0 => Stage::Prolong(c),
            Extra::Residual if h + 1 == self.count => Stage::Residual,
            _ => Stage::Colour(
                (self.first + h - self.pre) % 2,
                self.from_zero && h == self.pre,
                relaxation(self.first, h - self.pre, self.halves, self.omega),
            ),
        }
    }
}
