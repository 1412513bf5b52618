//! Running a wavefront of the smoother's stages (`wavefront.rs`: the stages, `Sweep`) on the
//! threads as `slabs.rs` plans it: on the rayon pool ([`rb_sweeps`], [`run`]), or one slab,
//! boundary or serial stretch at a time for the team (`team.rs`). The temporal blocking and
//! its slabs are this project's; McAdams, Sifakis and Teran (2010) run each smoothing pass as
//! a parallel loop over the grid.

use super::level::Level;
use super::slabs::{Plan, group_size, plan_spans, slab_plan, stage_groups};
use super::wavefront::{Extra, Stage, Stages, Sweep, liquid_planes};
use rayon::prelude::*;

/// `sweeps` whole red-black Gauss-Seidel sweeps, colour `first` then the other, in one pass
/// over the level (`from_zero`: the first half-sweep starts from `u = 0`), after the
/// prolongation or followed by the residual (`extra`). The half-sweeps are stages (colour
/// `first + h` mod 2), the prolongation a stage before them, the residual one after; stage `h`
/// on plane `p` needs stage `h - 1` on planes `p - 1 ..= p + 1` and must come before stage
/// `h + 1` there, so a wavefront does, at step `t`, stage `h` on plane `t - h` for every `h` in
/// order: each plane is read from memory about once for all the stages, rather than once per
/// stage (temporal blocking).
///
/// In parallel over slabs of at least `2 (stages + 1)` planes: first each slab `[ka, kb)`
/// runs the wavefront on the planes whose dependencies lie inside it (stage `h` on its planes
/// `ka + 1 + h ..= kb - 1 - h`, a trapezoid that leaves the slab's first plane alone, so that
/// no two slabs touch a common plane: a slab reads planes `ka ..= kb` and writes
/// `ka + 1 .. kb`), then, in parallel over the slab boundaries `B`, the stages left near each
/// (stage `h` on planes `B - h ..= B + h`), in the wavefront's order. Each half-sweep reads
/// only the other colour, so every cell gets exactly what the stages one after the other give
/// (`wavefront::half_sweep`, `kernels::residual`,
/// `kernels::prolong_add`), whatever the slabs: the bits do not depend on the thread
/// count. Too few planes for a slab per
/// thread, or one slab with most of the liquid: groups of stages, each such a wavefront
/// ([`stage_groups`]), or stage by stage.
pub(super) fn rb_sweeps(
    lv: &mut Level,
    sweeps: usize,
    first: usize,
    from_zero: bool,
    extra: Extra,
    omega: f32,
) {
    let Some((k0, k1)) = liquid_planes(lv) else {
        return;
    };
    if sweeps == 0 {
        return;
    }
    let st = Stages::new(sweeps, first, from_zero, extra, omega);
    let (stage, stages) = (|h| st.at(h), st.count);
    let threads = rayon::current_num_threads();
    let (plan, starts) = slab_plan(lv, k0, k1, stages, threads);
    // Decided once per set-up for each (stages, threads): the spans do not change meanwhile.
    let groups = lv.groups_memo(stages, threads, |lv| {
        stage_groups(lv.n, &lv.spans, (k0, k1), stages, threads, plan)
    });
    let sw = Sweep::new(lv);
    let Some(groups) = groups else {
        run(&sw, &stage, (0, stages), (k0, k1), plan, &starts);
        return;
    };
    let mut h0 = 0;
    for g in 0..groups {
        let size = group_size(stages, groups, g);
        let (plan, starts) = plan_spans(sw.n, sw.spans, k0, k1, size, threads);
        run(&sw, &stage, (h0, size), (k0, k1), plan, &starts);
        h0 += size;
    }
}

/// Stages `h0 .. h0 + count` of a wavefront over planes `k0 .. k1` with the plan `plan`
/// (`starts`: its slabs' first planes; [`slab_plan`]), on the rayon pool.
pub(super) fn run<'a>(
    sw: &Sweep,
    stage: &(impl Fn(usize) -> Stage<'a> + Sync),
    (h0, stages): (usize, usize),
    (k0, k1): (usize, usize),
    plan: Plan,
    starts: &[u32],
) {
    let stage = |h: usize| stage(h0 + h);
    // SAFETY (all the `stage` calls, and the team's, `team.rs`): in the first pass slab
    // `[ka, kb)` writes planes `ka + 1 .. kb` only and reads `ka ..= kb` (a prolongation also
    // reads the coarse level, which nothing writes here): no other slab writes a plane it
    // reads. In the second pass boundary `B` writes planes `B - (stages - 1) ..= B + stages -
    // 1` and reads one more each side: disjoint from the other boundaries', as slabs are at
    // least `2 stages + 2` planes. The order of the stages makes each read see the value the
    // stages one after the other would (and each group of stages runs after the whole of the
    // one before it).
    let slabs = match plan {
        Plan::Serial => return unsafe { serial(sw, &stage, stages, (k0, k1)) },
        Plan::Stagewise(min_planes) => {
            // Each stage reads only what the stage before it wrote: one parallel loop per
            // stage over the planes gives the bits of the stages one after the other.
            for h in 0..stages {
                (k0..k1)
                    .into_par_iter()
                    .with_min_len(min_planes)
                    .for_each(|p| unsafe { sw.stage(stage(h), p) });
            }
            return;
        }
        Plan::Slabs(slabs) => slabs,
    };
    let start = |s: usize| starts[s] as usize;
    (0..slabs)
        .into_par_iter()
        .for_each(|s| unsafe { trapezoid(sw, &stage, stages, (start(s), start(s + 1))) });
    (0..=slabs)
        .into_par_iter()
        .for_each(|s| unsafe { boundary(sw, &stage, stages, start(s), (k0, k1)) });
}

/// The wavefront of `stages` stages over planes `k0 .. k1`, on this thread.
///
/// # Safety
/// Nothing else reads or writes the planes' reach meanwhile.
pub(super) unsafe fn serial<'a>(
    sw: &Sweep,
    stage: &impl Fn(usize) -> Stage<'a>,
    stages: usize,
    (k0, k1): (usize, usize),
) {
    // SAFETY: the caller's; one stage at a time in the wavefront's order.
    unsafe { walk(sw, stage, stages, (k0, k1), |_, p| (k0..k1).contains(&p)) }
}

/// The wavefront's order over steps `t` in `t0 .. t1 + stages`: at step `t`, stage `h` on
/// plane `t - h` for every `h` in order, where `keep(h, p)`.
///
/// # Safety
/// As the callers' ([`serial`], [`trapezoid`]).
#[inline(always)]
unsafe fn walk<'a>(
    sw: &Sweep,
    stage: &impl Fn(usize) -> Stage<'a>,
    stages: usize,
    (t0, t1): (usize, usize),
    keep: impl Fn(usize, usize) -> bool,
) {
    for t in t0..t1 + stages {
        for h in 0..stages.min(t + 1) {
            let p = t - h;
            if keep(h, p) {
                // SAFETY: the caller's.
                unsafe { sw.stage(stage(h), p) };
            }
        }
    }
}

/// The first pass of slab `[ka, kb)`: stage `h` on planes `ka + 1 + h ..= kb - 1 - h`.
///
/// # Safety
/// As [`run`]'s first pass: no other task writes planes `ka ..= kb` meanwhile, nor reads
/// `ka + 1 .. kb`.
pub(super) unsafe fn trapezoid<'a>(
    sw: &Sweep,
    stage: &impl Fn(usize) -> Stage<'a>,
    stages: usize,
    (ka, kb): (usize, usize),
) {
    // SAFETY: the caller's.
    unsafe { walk(sw, stage, stages, (ka, kb), |h, p| p > ka + h && p + h < kb) }
}

/// The second pass at slab boundary `b`: stage `h` on planes `b - h ..= b + h` (within
/// `k0 .. k1`), in the wavefront's order (step `t` runs stage `h` on plane `t - h`: each
/// stage's planes below and at it ran at the steps before, those above earlier in the step),
/// so that a plane's stages run at consecutive steps while it is still in cache, rather than
/// stage by stage over the whole triangle (0.3-25% less time per cycle, median about 3%, on 2
/// threads of the 2-core machine in six alternating pairs, `mg_cycle`, session 15).
///
/// # Safety
/// As [`run`]'s second pass: the first pass is done on both sides, and no other task writes
/// or reads these planes' reach meanwhile.
pub(super) unsafe fn boundary<'a>(
    sw: &Sweep,
    stage: &impl Fn(usize) -> Stage<'a>,
    stages: usize,
    b: usize,
    (k0, k1): (usize, usize),
) {
    let t0 = b.saturating_sub(stages - 1).max(k0);
    let keep = |h: usize, p: usize| p + h >= b && p <= b + h && p >= k0 && p < k1;
    // SAFETY: the caller's.
    unsafe { walk(sw, stage, stages, (t0, (b + stages).min(k1)), keep) }
}
