//! How a wavefront of `rb_sweeps` (`sweeps.rs`) is spread over the threads: slabs of
//! z-planes balanced by the work of their first pass on the liquid they hold, or stage by
//! stage when a level is too shallow for a slab per thread, or groups of stages (each a wavefront of its own) when a slab of all
//! the stages would be too thick to share the liquid out (a thin layer of it at the bottom of
//! the tank: [`stage_groups`]). The plan never changes a bit of the result (McAdams, Sifakis
//! and Teran 2010 parallelise each smoothing pass over the grid; the temporal blocking of the
//! wavefront is this project's).

use super::level::Level;

/// Cells per rayon task (at least) of the wavefront's slabs.
const TASK_CELLS: usize = 16 * 1024;

/// Most slabs of a wavefront ([`slab_plan`]).
pub(super) const MAX_SLABS: usize = 64;

/// How `rb_sweeps` (`sweeps.rs`) spreads a wavefront over the threads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Plan {
    /// One wavefront over all the planes, on this thread.
    Serial,
    /// Stage by stage, each stage one parallel loop over the planes (tasks of at least this
    /// many planes): every stage is a pass over the level, but all the threads work.
    Stagewise(usize),
    /// This many slabs of planes, each a wavefront of its own, then their boundaries.
    Slabs(usize),
}

/// The plan of a wavefront of `stages` stages over planes `k0..k1` of `lv` on `threads`
/// threads, and the slabs' first planes (`starts[0] = k0`, `starts[slabs] = k1`).
///
/// A slab needs at least `2 stages + 2` planes (and [`TASK_CELLS`] cells), which caps the
/// slabs of a shallow level; the slabs are cut by the work of their first pass (their fluid
/// cells plus a row's cost, per stage, without the corners the boundaries' pass does:
/// [`Cuts`]), not the planes, since the liquid fills some planes more than others (a dam
/// break's lower planes hold the spread water). Their number is a multiple of the thread
/// count where possible (3 slabs on 2 threads leave one thread idle half the time), up to 4
/// per thread.
/// With fewer possible slabs than threads the stages run one after the other, each over all
/// the planes in parallel. None of this changes a bit of the result (see `rb_sweeps` (`sweeps.rs`)).
pub(super) fn slab_plan(
    lv: &Level,
    k0: usize,
    k1: usize,
    stages: usize,
    threads: usize,
) -> (Plan, [u32; MAX_SLABS + 1]) {
    plan_spans(lv.n, &lv.spans, k0, k1, stages, threads)
}

/// The number of groups of consecutive stages (sizes as even as possible) that a wavefront
/// of `stages` stages runs one after the other, each a slab wavefront of its own ([`plan_spans`]
/// of its size), or `None` for one wavefront of all the stages with `plan` (the plan of all
/// of them, [`slab_plan`]). Each group reads only what the groups before it wrote, so the bits
/// are those of the stages one after the other.
///
/// - [`Plan::Stagewise`] (too few planes for a slab of all the stages per thread): the fewest
///   groups whose every group has a slab per thread, if groups of at least 2 stages allow that:
///   a pass over the level and two hand-offs per group instead of one pass and one hand-off per
///   stage (on the 1M dam break's second level, 26 planes of liquid on 2 threads: seven stages
///   in groups of 4 and 3).
/// - [`Plan::Slabs`] whose costliest slab is more than a thread's share (the liquid in a few
///   planes: a slab needs `2 stages + 2` of them, so one slab may hold most of it): the number
///   of groups with the least estimated time, `sum over groups of size * max(costliest slab,
///   total / threads)`, plus a stage's share per group after the first (its extra pass and
///   hand-off); the second level of the 1M dam break after 20 frames has 79% of its liquid in
///   its first slab of 16 planes: groups of 4 and 3 stages have slabs of 10 planes, the
///   costliest with about half of it.
pub(super) fn stage_groups(
    n: [usize; 3],
    spans: &[[u32; 2]],
    (k0, k1): (usize, usize),
    stages: usize,
    threads: usize,
    plan: Plan,
) -> Option<usize> {
    let plan_of = |g: usize| plan_spans(n, spans, k0, k1, g, threads);
    match plan {
        Plan::Stagewise(_) => {
            let fits = |g: usize| matches!(plan_of(g).0, Plan::Slabs(_));
            let g = (2..stages).rev().find(|&g| fits(g))?;
            Some(stages.div_ceil(g))
        }
        Plan::Slabs(_) => {
            // Estimated time of `groups` groups (None: a group without a slab per thread).
            let estimate = |groups: usize| -> Option<u64> {
                let mut t = 0;
                for g in 0..groups {
                    let size = group_size(stages, groups, g);
                    let (p, starts) = plan_of(size);
                    let Plan::Slabs(slabs) = p else {
                        return None;
                    };
                    let (most, total) = slab_costs(n, spans, &starts[..=slabs]);
                    let share = total / threads as u64;
                    t += size as u64 * most.max(share) + if g > 0 { share } else { 0 };
                }
                Some(t)
            };
            let one = estimate(1)?;
            let (best, t) = (2..=stages / 2)
                .filter_map(|g| estimate(g).map(|t| (g, t)))
                .min_by_key(|&(_, t)| t)?;
            (t < one).then_some(best)
        }
        Plan::Serial => None,
    }
}

/// Stages in group `g` of `groups` groups of consecutive stages, sizes as even as possible (the
/// first `stages % groups` groups one more).
pub(super) fn group_size(stages: usize, groups: usize, g: usize) -> usize {
    stages / groups + (g < stages % groups) as usize
}

/// The costliest slab's cost and the total cost of the slabs starting at `starts` (the last
/// entry: the end of the last slab), as [`plan_spans`] counts them.
fn slab_costs(n: [usize; 3], spans: &[[u32; 2]], starts: &[u32]) -> (u64, u64) {
    let mut most = 0;
    let mut total = 0;
    for w in starts.windows(2) {
        let c: u64 = (w[0] as usize..w[1] as usize)
            .map(|k| plane_cost(n, spans, k, Cut::DEFAULT.row_cost))
            .sum();
        most = most.max(c);
        total += c;
    }
    (most, total)
}

/// Cost of plane `k`: its fluid cells and `row_cost` cells' worth per row visited.
fn plane_cost(n: [usize; 3], spans: &[[u32; 2]], k: usize, row_cost: u64) -> u64 {
    let ny = n[1];
    (0..ny)
        .map(|j| {
            let [a, b] = spans[j + ny * k];
            if a < b { (b - a) as u64 + row_cost } else { 0 }
        })
        .sum()
}

/// [`slab_plan`] from the level's dimensions and row spans.
pub(super) fn plan_spans(
    n: [usize; 3],
    spans: &[[u32; 2]],
    k0: usize,
    k1: usize,
    stages: usize,
    threads: usize,
) -> (Plan, [u32; MAX_SLABS + 1]) {
    plan_cuts(n, spans, (k0, k1), stages, threads, Cut::DEFAULT)
}

/// How [`plan_cuts`] cuts the slabs (benchmark knobs: `TeamKnobs::liquid_cuts`,
/// `TeamKnobs::slabs_per_thread`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Cut {
    /// Where the liquid falls evenly (the cut before session 15), not by the first pass.
    pub by_liquid: bool,
    /// Most slabs per thread.
    pub per_thread: usize,
    /// A row's cost in cells, on top of its span's ([`plane_cost`]).
    pub row_cost: u64,
}

impl Cut {
    pub const DEFAULT: Cut = Cut {
        by_liquid: false,
        per_thread: 4,
        row_cost: 8,
    };
}

/// [`plan_spans`] with the cut `cut`.
pub(super) fn plan_cuts(
    n: [usize; 3],
    spans: &[[u32; 2]],
    (k0, k1): (usize, usize),
    stages: usize,
    threads: usize,
    cut: Cut,
) -> (Plan, [u32; MAX_SLABS + 1]) {
    let mut starts = [0u32; MAX_SLABS + 1];
    let (planes, plane_cells) = (k1 - k0, n[0] * n[1]);
    let min_per = (2 * stages + 2).max(TASK_CELLS.div_ceil(plane_cells));
    let possible = (planes / min_per).min(MAX_SLABS);
    if threads < 2 || planes < 2 {
        return (Plan::Serial, starts);
    }
    if possible < threads.min(MAX_SLABS) {
        let min_planes = TASK_CELLS.div_ceil(plane_cells).max(1);
        return if planes >= 2 * min_planes {
            (Plan::Stagewise(min_planes), starts)
        } else {
            (Plan::Serial, starts)
        };
    }
    let most = (cut.per_thread.max(1) * threads).min(MAX_SLABS);
    let slabs = if possible >= most {
        most
    } else {
        possible - possible % threads
    };
    starts[0] = k0 as u32;
    starts[slabs] = k1 as u32;
    let cost = |k: usize| plane_cost(n, spans, k, cut.row_cost);
    if planes > MAX_PLANES || cut.by_liquid {
        // Too deep for the costs' buffer: cut where the liquid falls evenly.
        let total: u64 = (k0..k1).map(cost).sum();
        let (mut k, mut acc) = (k0, 0u64);
        for s in 1..slabs {
            let target = total * s as u64 / slabs as u64;
            let lo = starts[s - 1] as usize + min_per;
            let hi = k1 - (slabs - s) * min_per;
            while k < hi && (k < lo || acc < target) {
                acc += cost(k);
                k += 1;
            }
            starts[s] = k as u32;
        }
        return (Plan::Slabs(slabs), starts);
    }
    let mut pc = [0u64; MAX_PLANES];
    for (k, c) in (k0..k1).zip(pc.iter_mut()) {
        *c = cost(k);
    }
    let cuts = Cuts {
        pc: &pc[..planes],
        stages,
        min_per,
        slabs,
    };
    // The least bound on the costliest slab that the greedy cut meets (it meets every bound
    // above it: a slab's cost grows with its planes), by bisection.
    let (mut lo, mut hi) = (0u64, cuts.trapezoid(0, planes));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if cuts.greedy(mid, &mut starts) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let met = cuts.greedy(hi, &mut starts);
    debug_assert!(met);
    for s in &mut starts[..=slabs] {
        *s += k0 as u32;
    }
    (Plan::Slabs(slabs), starts)
}

/// Most planes of liquid whose slabs [`plan_spans`] cuts by their trapezoids' costs ([`Cuts`]).
const MAX_PLANES: usize = 1024;

/// The cut of planes `0 .. pc.len()` (costs `pc`, [`plane_cost`]) into `slabs` slabs of at
/// least `min_per` planes for a wavefront of `stages` stages, by the work of the first pass
/// (`sweeps::trapezoid`): slab `[a, b)` runs stage `h` on planes `a + 1 + h ..= b - 1 - h`, so
/// plane `p` costs `pc[p]` times `min(stages, p - a, b - p)`. Cutting where the liquid falls
/// evenly instead leaves the slab whose cut-off corners lie in the sparse planes with more
/// work (a dam break's upper slab: the lower one's lower corner is the dense floor's).
struct Cuts<'a> {
    pc: &'a [u64],
    stages: usize,
    min_per: usize,
    slabs: usize,
}

impl Cuts<'_> {
    /// The first pass's work on slab `[a, b)`.
    fn trapezoid(&self, a: usize, b: usize) -> u64 {
        (a + 1..b)
            .map(|p| self.pc[p] * self.stages.min(p - a).min(b - p) as u64)
            .sum()
    }

    /// Cuts slab after slab as thick as `bound` allows (at least `min_per` planes, leaving
    /// enough for the slabs after it) into `starts` (relative to plane 0); whether every slab
    /// costs at most `bound`.
    fn greedy(&self, bound: u64, starts: &mut [u32]) -> bool {
        let (planes, st) = (self.pc.len(), self.stages);
        let mut a = 0;
        starts[0] = 0;
        for (s, start) in starts[..self.slabs].iter_mut().enumerate().skip(1) {
            let (lo, hi) = (a + self.min_per, planes - (self.slabs - s) * self.min_per);
            let mut b = lo;
            let mut work = self.trapezoid(a, b);
            if work > bound {
                return false;
            }
            while b < hi {
                // One plane more: the planes within `stages` of the top gain a stage each
                // where the top is their nearer side.
                let gain: u64 = (b.saturating_sub(st - 1).max(a + 1)..=b)
                    .filter(|&p| b + 1 - p <= p - a)
                    .map(|p| self.pc[p])
                    .sum();
                if work + gain > bound {
                    break;
                }
                work += gain;
                b += 1;
            }
            *start = b as u32;
            a = b;
        }
        starts[self.slabs] = planes as u32;
        self.trapezoid(a, planes) <= bound
    }
}
