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
    /// A half-sweep of a colour (`from_zero` or not).
    Colour(usize, bool),
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

/// The stages of `rb_sweeps`' wavefront (`sweeps.rs`): the prolongation, `2 sweeps`
/// half-sweeps (colour `first + h` mod 2, the first `from_zero`), the residual, as `extra`
/// asks.
#[derive(Clone, Copy)]
pub(in super::super) struct Stages<'a> {
    extra: Extra<'a>,
    first: usize,
    from_zero: bool,
    pre: usize,
    pub(in super::super) count: usize,
}

impl<'a> Stages<'a> {
    pub(in super::super) fn new(
        sweeps: usize,
        first: usize,
        from_zero: bool,
        extra: Extra<'a>,
    ) -> Self {
        let pre = matches!(extra, Extra::Prolong(_)) as usize;
        let count = 2 * sweeps + pre + matches!(extra, Extra::Residual) as usize;
        Self {
            extra,
            first,
            from_zero,
            pre,
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
            ),
        }
    }
}
